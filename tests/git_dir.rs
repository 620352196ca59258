//! The checkout's git data is not the repository's content. `actions/checkout` keeps the CI
//! job's token in `.git/config` (`http.<url>.extraheader: AUTHORIZATION: basic ...`) and a
//! remote URL may carry one: no reader a repository steers (kustomize generators, Helm
//! `.Files` and value files, policy files, the config file) opens anything in a `.git`
//! folder, a `.git` file or the folder such a file points to, whatever the spelling (case,
//! `./`, `..`, NTFS and HFS+ equivalents, links), and the token is never printed, in any
//! format. A refused path gets the error of a path outside the repository.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use base64::Engine as _;
use common::run_in;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Printed if `.git/config` is read and quoted: no credential shape masks it.
const PLAIN: &str = "plain-canary-4b1d9e";
/// The job's token, as `actions/checkout` writes it in base64 after `x-access-token:`.
const TOKEN: &str = "tokencanary7c3f0a";
/// The token of a remote URL.
const URL_TOKEN: &str = "urlcanary5e6d2b";
/// What the folder a `.git` file points to holds.
const GITDIR: &str = "gitdir-canary-91ac3e";

fn header() -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{TOKEN}"))
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A checkout's git data as `actions/checkout` leaves it, the canaries first (policy messages
/// are cut after 1 KiB), and a second git folder under another name that a `.git` file points
/// to, as a submodule's or a separate git folder's.
fn git_data(d: &Path) {
    write(
        d,
        ".git/config",
        &format!(
            "[user]\n\tname = {PLAIN}\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {}\n[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://x-access-token:{URL_TOKEN}@github.com/acme/gitops\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
            header()
        ),
    );
    write(d, ".git/HEAD", "ref: refs/heads/main\n");
    std::fs::create_dir_all(d.join(".git/objects")).unwrap();
    std::fs::create_dir_all(d.join(".git/refs/heads")).unwrap();
    write(
        d,
        ".git/modules/sub/config",
        &format!("[user]\n\tname = {GITDIR}\n"),
    );
    write(d, "meta/HEAD", "ref: refs/heads/main\n");
    std::fs::create_dir_all(d.join("meta/objects")).unwrap();
    std::fs::create_dir_all(d.join("meta/refs")).unwrap();
    write(d, "meta/config", &format!("[user]\n\tname = {GITDIR}\n"));
    write(d, "sub/.git", "gitdir: ../meta\n");
    write(d, "sub2/.git", "gitdir: ../.git/modules/sub\n");
}

/// A policy that prints every ConfigMap's data: what a hostile repository uses to show what
/// a reader brought in.
fn leaking_policy(d: &Path) {
    write(
        d,
        ".gitops-lint/policies/leak.yaml",
        "id: show-data\nseverity: error\nmessage: \"{{ object.data }}\"\nmatch:\n  kind: ConfigMap\ncondition: \"true\"\n",
    );
}

fn assert_no_canary(what: &str, text: &str) {
    for canary in [PLAIN, TOKEN, URL_TOKEN, GITDIR, &header()] {
        assert!(!text.contains(canary), "{what} shows `{canary}`:\n{text}");
    }
}

/// Every format, with and without `--verbose --statistics`, and to `--output`: nothing shows
/// a canary. Returns the JSON report.
fn every_format(dir: &Path) -> serde_json::Value {
    let out = tempfile::tempdir().unwrap();
    let mut report = None;
    for format in ["human", "json", "sarif", "github", "concise", "junit"] {
        let file = out.path().join(format!("report.{format}"));
        let file_arg = file.to_str().unwrap();
        for extra in [
            &[][..],
            &["--verbose", "--statistics"],
            &["--output", file_arg],
        ] {
            let mut args = vec!["--fail-on", "never", "--format", format, "."];
            args.extend_from_slice(extra);
            let run = run_in(dir, &args, LIMIT);
            assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
            let what = format!("gitops-lint {args:?}");
            assert_no_canary(&format!("stdout of {what}"), &run.stdout);
            assert_no_canary(&format!("stderr of {what}"), &run.stderr);
            if format == "json" && extra.is_empty() {
                report = Some(common::json(&run));
            }
        }
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(!written.is_empty(), "--output {format} wrote nothing");
        assert_no_canary(&format!("--output of --format {format}"), &written);
    }
    for args in [&["graph", "."][..], &["config", "."]] {
        let run = run_in(dir, args, LIMIT);
        assert_no_canary(&format!("gitops-lint {args:?}"), &run.stdout);
        assert_no_canary(&format!("gitops-lint {args:?}"), &run.stderr);
    }
    report.unwrap()
}

/// `(line, message)` of each finding in `file`, and of each note there.
fn said(report: &serde_json::Value, file: &str) -> Vec<(u64, String)> {
    let notes = report["summary"]["not_rendered"]
        .as_array()
        .into_iter()
        .flatten();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .chain(notes)
        .filter(|f| f["file"] == file)
        .map(|f| {
            (
                f["start"]["line"].as_u64().unwrap_or(0),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

const OUTSIDE: &str = "leads outside the repository";

#[test]
fn generators_never_read_git_data() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_data(d);
    leaking_policy(d);
    symlink(".git/config", d.join("config-link")).unwrap();
    symlink(".git", d.join("git-link")).unwrap();
    symlink("sub2", d.join("sub2-link")).unwrap();
    // One generator a line; each spelling leads into git data.
    let spellings = [
        ".git/config",
        "./.git/config",
        ".GIT/config",
        "a/../.git/config",
        ".git/./config",
        ".git./config",
        "GIT~1/config",
        "config-link",
        "git-link/config",
        "sub/.git",
        "meta/config",
        "sub2/.git",
        "sub2-link/.git",
        ".git/modules/sub/config",
    ];
    let mut k = String::from("configMapGenerator:\n");
    for (i, s) in spellings.iter().enumerate() {
        k.push_str(&format!("  - {{name: f{i}, files: ['{s}']}}\n"));
    }
    for (i, s) in spellings.iter().enumerate() {
        k.push_str(&format!("  - {{name: e{i}, envs: ['{s}']}}\n"));
    }
    // kustomize's Helm values files are read the same way.
    let values = [
        "valuesFile: .git/config",
        "valuesFile: ./.GIT/config",
        "additionalValuesFiles: [git-link/config]",
        "additionalValuesFiles: [meta/config]",
    ];
    k.push_str("helmCharts:\n");
    for v in values {
        k.push_str(&format!("  - {{name: c, {v}}}\n"));
    }
    write(
        d,
        "charts/c/Chart.yaml",
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    );
    write(d, "charts/c/values.yaml", "{}\n");
    write(
        d,
        "charts/c/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: values}\ndata:\n  values: {{ toJson .Values | quote }}\n",
    );
    write(d, "kustomization.yaml", &k);
    let report = every_format(d);
    let said = said(&report, "kustomization.yaml");
    let generators = 2 * spellings.len() as u64;
    for line in 2..2 + generators {
        let s = spellings[(line as usize - 2) % spellings.len()];
        assert!(
            said.iter().any(|(l, m)| *l == line && m.contains(OUTSIDE)),
            "`{s}` (line {line}) is not refused as leading outside the repository: {said:#?}"
        );
    }
    for (i, v) in values.iter().enumerate() {
        let line = 3 + generators + i as u64;
        assert!(
            said.iter().any(|(l, m)| *l == line && m.contains(OUTSIDE)),
            "`{v}` (line {line}) is not refused as leading outside the repository: {said:#?}"
        );
    }
}

#[test]
fn helm_charts_never_load_git_data() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_data(d);
    leaking_policy(d);
    let app = |name: &str, path: &str, extra: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {name}, namespace: argocd}}\nspec:\n  project: default\n  source:\n    repoURL: https://github.com/acme/gitops.git\n    targetRevision: HEAD\n    path: {path}\n{extra}  destination: {{server: 'https://kubernetes.default.svc', namespace: {name}}}\n"
        )
    };
    // A chart at the top of the checkout: `.git` is beside its templates.
    write(
        d,
        "Chart.yaml",
        "apiVersion: v2\nname: top\nversion: 0.1.0\n",
    );
    // The charts below have their own Applications.
    write(d, ".helmignore", "chart/\ndirchart/\nignoring/\n");
    write(
        d,
        "templates/files.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: got}\ndata:\n  got: {{ .Files.Get \".git/config\" | quote }}\n  upper: {{ .Files.Get \".GIT/config\" | quote }}\n  gitdir: {{ .Files.Get \"meta/config\" | quote }}\n  module: {{ .Files.Get \".git/modules/sub/config\" | quote }}\n  glob: {{ (.Files.Glob \".git/**\").AsConfig | quote }}\n  meta: {{ (.Files.Glob \"meta/*\").AsConfig | quote }}\n  upglob: {{ (.Files.Glob \".GIT/*\").AsConfig | quote }}\n",
    );
    write(d, "apps/top.yaml", &app("top", ".", ""));
    // A chart whose files are links into the git data.
    write(
        d,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: linked\nversion: 0.1.0\n",
    );
    write(
        d,
        "chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: linked}\ndata:\n{{ (.Files.Glob \"files/**\").AsConfig | indent 2 }}\n",
    );
    std::fs::create_dir_all(d.join("chart/files")).unwrap();
    symlink("../../.git/config", d.join("chart/files/config")).unwrap();
    write(d, "apps/linked.yaml", &app("linked", "chart", ""));
    write(
        d,
        "dirchart/Chart.yaml",
        "apiVersion: v2\nname: dirlinked\nversion: 0.1.0\n",
    );
    write(
        d,
        "dirchart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dirlinked}\ndata:\n{{ (.Files.Glob \"git/**\").AsConfig | indent 2 }}\n",
    );
    symlink("../.git", d.join("dirchart/git")).unwrap();
    write(d, "apps/dirlinked.yaml", &app("dirlinked", "dirchart", ""));
    // Its ignore file a link to the git data.
    write(
        d,
        "ignoring/Chart.yaml",
        "apiVersion: v2\nname: ignoring\nversion: 0.1.0\n",
    );
    write(
        d,
        "ignoring/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ignoring}\n",
    );
    symlink("../.git/config", d.join("ignoring/.helmignore")).unwrap();
    write(d, "apps/ignoring.yaml", &app("ignoring", "ignoring", ""));
    // Value files named into the git data.
    write(
        d,
        "apps/values.yaml",
        &app(
            "values",
            "chart",
            "    helm:\n      valueFiles: ['../.git/config', '/.git/config', '/.Git/config', 'files/../../.git/config']\n",
        ),
    );
    let report = every_format(d);
    // The top chart is rendered, without the git data.
    let got: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "show-data")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        got.iter().any(|m| m.contains("got")),
        "the chart at the top was not rendered: {report:#}"
    );
    for (file, what) in [
        ("apps/linked.yaml", "a chart file linked to .git/config"),
        ("apps/dirlinked.yaml", "a chart folder linked to .git"),
        ("apps/ignoring.yaml", "a .helmignore linked to .git/config"),
    ] {
        let said = said(&report, file);
        assert!(
            said.iter().any(|(_, m)| m.contains(OUTSIDE)),
            "{what} is not refused as leading outside the repository: {said:#?}"
        );
    }
    let said = said(&report, "apps/values.yaml");
    let refused = said.iter().filter(|(_, m)| m.contains(OUTSIDE)).count();
    assert_eq!(refused, 4, "value files into .git: {said:#?}");
}

#[test]
fn policies_and_the_config_never_read_git_data() {
    for pattern in [
        ".git/config",
        "./.git/config",
        ".GIT/config",
        "a/../.git/config",
        ".git",
        ".git/**",
        "meta/config",
        "sub/.git",
        "git-link/config",
        "config-link",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git_data(d);
        symlink(".git/config", d.join("config-link")).unwrap();
        symlink(".git", d.join("git-link")).unwrap();
        write(
            d,
            ".gitops-lint.yaml",
            &format!("policies: ['{pattern}']\n"),
        );
        for format in ["human", "json", "sarif", "github", "concise", "junit"] {
            let run = run_in(d, &["--format", format, "."], LIMIT);
            let what = format!("policies: [{pattern}], --format {format}");
            assert_eq!(run.code, 2, "{what}: {}{}", run.stdout, run.stderr);
            assert_no_canary(&what, &run.stdout);
            assert_no_canary(&what, &run.stderr);
            // A link named there is refused as a link before where it leads is looked at.
            let refused = run.stderr.contains(OUTSIDE)
                || (pattern == "config-link" && run.stderr.contains("is a link"));
            assert!(
                refused,
                "{what} is not refused as leading outside the repository: {}",
                run.stderr
            );
        }
    }
    // The config itself, found by its name, is a link into the git data.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_data(d);
    symlink(".git/config", d.join(".gitops-lint.yaml")).unwrap();
    for args in [&["."][..], &["config", "."], &["--format", "json", "."]] {
        let run = run_in(d, args, LIMIT);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert_no_canary(&format!("{args:?}"), &run.stdout);
        assert_no_canary(&format!("{args:?}"), &run.stderr);
        assert!(run.stderr.contains(OUTSIDE), "{args:?}: {}", run.stderr);
    }
    // A baseline the repository's config names there.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_data(d);
    write(d, ".gitops-lint.yaml", "baseline: .git/config\n");
    let run = run_in(d, &["."], LIMIT);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert_no_canary("a baseline in .git", &run.stdout);
    assert_no_canary("a baseline in .git", &run.stderr);
    assert!(run.stderr.contains(OUTSIDE), "{}", run.stderr);
}

/// The token is masked wherever a repository writes it itself: in a ConfigMap a finding
/// quotes, in a comment a snippet shows.
#[test]
fn credentials_are_masked_wherever_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_data(d);
    leaking_policy(d);
    let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5";
    let ghs = "ghs_C4n4ryT0kenW1thD1g1tsAndCaps0123";
    write(
        d,
        "cm.yaml",
        &format!(
            "# extraheader = AUTHORIZATION: basic {}\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm}}\ndata:\n  header: 'AUTHORIZATION: basic {}'\n  url: https://x-access-token:{URL_TOKEN}@github.com/acme/gitops\n  jwt: {jwt}\n  ghs: {ghs}\n",
            header(),
            header()
        ),
    );
    let report = every_format(d);
    let text = report.to_string();
    for shape in [jwt, ghs] {
        assert!(!text.contains(shape), "{shape} is shown: {text}");
    }
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "show-data" && f["file"] == "cm.yaml"),
        "the policy quoting the values did not run: {report:#}"
    );
    let human = run_in(d, &["--fail-on", "never", "cm.yaml"], LIMIT);
    assert_no_canary("the human snippet", &human.stdout);
}

/// A resolved root for the property below.
fn root_with_git_data() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git_data(&root);
    symlink(".git/config", root.join("config-link")).unwrap();
    symlink(".git", root.join("git-link")).unwrap();
    symlink("meta", root.join("meta-link")).unwrap();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    (dir, root)
}

mod spellings {
    use super::*;
    use gitops_lint::engine::{self, Options};
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    /// A way to write the git folder (or a folder git takes for its data).
    fn git_folder() -> impl Strategy<Value = String> {
        prop_oneof![
            // Each letter in either case, with what NTFS drops after it.
            (
                proptest::collection::vec(any::<bool>(), 3),
                prop_oneof![
                    Just(""),
                    Just("."),
                    Just(" "),
                    Just(". ."),
                    Just("::$INDEX_ALLOCATION"),
                    Just(":x")
                ],
            )
                .prop_map(|(upper, tail)| {
                    let letters: String = "git"
                        .chars()
                        .zip(upper)
                        .map(|(c, u)| if u { c.to_ascii_uppercase() } else { c })
                        .collect();
                    format!(".{letters}{tail}")
                }),
            // An ignorable code point of HFS+ somewhere in it.
            (
                0usize..5,
                prop_oneof![Just('\u{200c}'), Just('\u{200d}'), Just('\u{feff}')]
            )
                .prop_map(|(at, c)| {
                    let mut s: Vec<char> = ".git".chars().collect();
                    s.insert(at.min(4), c);
                    s.into_iter().collect()
                }),
            Just("GIT~1".to_string()),
            Just("git~1".to_string()),
            Just("git-link".to_string()),
            Just("meta".to_string()),
            Just("meta-link".to_string()),
        ]
    }

    /// A run of parts that leaves where it starts: nothing, `.`, or down and back up.
    fn detour() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("./".to_string()),
            Just(".//".to_string()),
            Just("a/../".to_string()),
            Just("a/b/../../".to_string()),
            Just("a/./b/../../".to_string()),
            Just("nowhere/../".to_string()),
        ]
    }

    /// A path, relative to the repository root, into its git data.
    fn into_git() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (detour(), git_folder(), detour(), prop_oneof![Just("config"), Just("HEAD"), Just("modules/sub/config")])
                .prop_map(|(a, g, b, f)| format!("{a}{g}/{b}{f}")),
            1 => (detour(), prop_oneof![Just("config-link"), Just("sub/.git"), Just("sub2/.git"), Just(".git")])
                .prop_map(|(a, f)| format!("{a}{f}")),
        ]
    }

    fn options(root: &Path) -> Options {
        Options {
            paths: vec![root.to_path_buf()],
            discover: Default::default(),
            version: None,
            limits: Default::default(),
            repo_urls: Vec::new(),
            config: Default::default(),
            suppressions: true,
            baseline: None,
            report_only: None,
            overlay: Default::default(),
            cache: None,
            timings: false,
        }
    }

    proptest! {
        #![proptest_config(Config {
            cases: 256,
            rng_seed: RngSeed::Fixed(0x6769_7464),
            failure_persistence: None,
            ..Config::default()
        })]

        /// However the path into the git data is spelt, a generator's `files` and `envs`
        /// refuse it as leading outside the repository, and nothing it holds is built.
        #[test]
        fn no_spelling_of_a_path_into_git_data_is_read(
            path in into_git(),
            env in any::<bool>(),
            keyed in any::<bool>(),
        ) {
            let (_dir, root) = root_with_git_data();
            let field = if env { "envs" } else { "files" };
            // `files` also takes `key=path`.
            let written = if keyed && !env { format!("key={path}") } else { path.clone() };
            let quoted = written.replace('\'', "''");
            let kustomization = format!("configMapGenerator:\n  - name: g\n    {field}: ['{quoted}']\n");
            let opts = options(&root);
            let loaded = engine::load_memory(
                vec![(root.join("kustomization.yaml"), kustomization.into_bytes())],
                root.clone(),
                &opts,
            );
            let (objects, problems) =
                gitops_lint::render::build_kustomization(&loaded.sources, &loaded.docs, &root, &root);
            let built = format!("{objects:?}{problems:?}");
            for canary in [PLAIN, TOKEN, URL_TOKEN, GITDIR, &header()] {
                prop_assert!(!built.contains(canary), "`{}` read through `{}`", canary, path);
            }
            prop_assert!(
                problems.iter().any(|p| p.message.contains(OUTSIDE)),
                "`{}` is not refused: {:?}", path, problems
            );
        }
    }
}
