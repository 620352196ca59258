//! The command line as a user meets it: the example repository, exit codes, the rule list,
//! `explain`, determinism across thread counts, and the README staying true.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{found, json, lint_json, root, run, run_in, stable};
use gitops_lint::rules::RULES;
use std::time::Duration;

const EXAMPLE: &str = "fixtures/example-repo";

#[test]
fn example_repository_human_output() {
    let out = run(&[EXAMPLE]);
    assert_eq!(out.code, 1, "findings at warning or above fail by default");
    insta::assert_snapshot!("example-human", stable(&out.stdout));
}

#[test]
fn example_repository_json_output() {
    let out = run(&["--format", "json", EXAMPLE]);
    assert_eq!(out.code, 1);
    let report = json(&out);
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["tool"]["name"], "gitops-lint");
    for f in report["findings"].as_array().unwrap() {
        // Every finding carries a precise location.
        assert!(f["start"]["line"].as_u64().unwrap() >= 1, "{f}");
        assert!(
            f["end"]["offset"].as_u64() >= f["start"]["offset"].as_u64(),
            "{f}"
        );
    }
    insta::assert_snapshot!("example-json", out.stdout);
}

#[test]
fn fail_on_sets_the_exit_code() {
    let dir = "fixtures/rules/hpa-replicas-conflict/fires-pinned-replicas";
    assert_eq!(run(&[dir]).code, 0, "info findings do not fail by default");
    assert_eq!(run(&["--fail-on", "info", dir]).code, 1);
    assert_eq!(run(&["--fail-on", "never", EXAMPLE]).code, 0);
    let ok = "fixtures/rules/allow-empty/ok.yaml";
    assert_eq!(run(&["--fail-on", "error", ok]).code, 0);
}

#[test]
fn usage_errors_exit_2() {
    let out = run(&["--fail-on", "sometimes", EXAMPLE]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("sometimes"), "{}", out.stderr);
    let out = run(&["--argocd-version", "three", EXAMPLE]);
    assert_eq!(out.code, 2);
    let out = run(&["no/such/path"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no/such/path"), "{}", out.stderr);
}

#[test]
fn rules_lists_every_rule() {
    // This repository has a `rules/` folder, so the command needs its option to be run here.
    let out = run(&["rules", "--format", "text"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut lines = out.stdout.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("RULE "), "{header}");
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), RULES.len());
    // Columns line up: each rule's summary starts where the header's SUMMARY does.
    let at = header.find("SUMMARY").unwrap();
    for (row, r) in rows.iter().zip(RULES) {
        let cells: Vec<&str> = row[..at].split_whitespace().collect();
        let expected = [
            r.id,
            r.category.as_str(),
            &r.severity.to_string(),
            r.fix.as_str(),
        ];
        assert_eq!(cells, expected, "{row}");
        assert_eq!(&row[at..], r.summary, "{row}");
    }
    let json = run(&["rules", "--format", "json"]);
    let list: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), RULES.len());
    assert_eq!(list[0]["id"], RULES[0].id);
    assert_eq!(list[0]["fix"], RULES[0].fix.as_str());
}

#[test]
fn a_command_name_that_is_also_a_folder_is_refused_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let limit = std::time::Duration::from_secs(60);
    for name in ["config", "graph", "rules"] {
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        let out = common::run_in(dir.path(), &[name], limit);
        assert_eq!(out.code, 2, "{name}: {}", out.stdout);
        assert!(out.stdout.is_empty(), "{name}: {}", out.stdout);
        assert!(
            out.stderr.contains(&format!("gitops-lint ./{name}")),
            "{}",
            out.stderr
        );
        // Both spellings the message offers work.
        let lint = common::run_in(dir.path(), &["--", name], limit);
        assert_eq!(lint.code, 0, "{}", lint.stderr);
        assert!(lint.stdout.contains("Checked"), "{}", lint.stdout);
    }
    let config = common::run_in(dir.path(), &["config", "."], limit);
    assert_eq!(config.code, 0, "{}", config.stderr);
    let graph = common::run_in(dir.path(), &["graph", "."], limit);
    assert_eq!(graph.code, 0, "{}", graph.stderr);
    let rules = common::run_in(dir.path(), &["rules", "--format", "text"], limit);
    assert_eq!(rules.code, 0, "{}", rules.stderr);
    // Without such a folder the command runs as before.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = common::run_in(elsewhere.path(), &["config"], limit);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn explain_accepts_a_category_and_suggests_one() {
    let out = run(&["explain", "secrets"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Vec<&str> = out
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let members: Vec<&str> = RULES
        .iter()
        .filter(|r| r.category.as_str() == "secrets")
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, members);
    let out = run(&["explain", "secret"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("did you mean `secrets`"),
        "{}",
        out.stderr
    );
}

#[test]
fn explain_prints_the_doc_and_suggests_near_misses() {
    let out = run(&["explain", "self-heal-ignores-not-respected"]);
    assert_eq!(out.code, 0);
    assert!(out
        .stdout
        .starts_with("# self-heal-ignores-not-respected\n"));
    let out = run(&["explain", "self-heal-ignore-not-respected"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("did you mean `self-heal-ignores-not-respected`"),
        "{}",
        out.stderr
    );
}

#[test]
fn timings_go_to_stderr_and_leave_the_report_alone() {
    let plain = run(&["--format", "json", EXAMPLE]);
    let timed = run(&["--format", "json", "--timings", EXAMPLE]);
    assert_eq!(plain.code, timed.code);
    assert_eq!(plain.stdout, timed.stdout);
    let stages = [
        "discover",
        "read, parse, recognise",
        "render",
        "rules",
        "total",
    ];
    for stage in stages {
        let line = timed
            .stderr
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{stage}:")))
            .unwrap_or_else(|| panic!("no {stage} line in {}", timed.stderr));
        assert!(line.contains(" ms"), "{line}");
        if cfg!(target_os = "linux") && stage != "total" {
            assert!(line.contains("peak RSS"), "{line}");
        }
    }
}

#[test]
fn output_does_not_depend_on_thread_count() {
    let one = run(&["--format", "json", "--threads", "1", "fixtures"]);
    let many = run(&["--format", "json", "--threads", "8", "fixtures"]);
    assert!(!one.stdout.is_empty());
    assert_eq!(one.stdout, many.stdout);
}

#[test]
fn secret_values_never_reach_any_output() {
    let dir = "fixtures/rules/secret-in-git";
    let text = std::fs::read_to_string(root().join(dir).join("fires.yaml")).unwrap();
    let human = run(&["--fail-on", "never", dir]).stdout;
    let machine = run(&["--format", "json", "--fail-on", "never", dir]).stdout;
    assert!(human.contains("secret-in-git"));
    let mut values = 0;
    // Values are the entries indented under a `data:` or `stringData:` key.
    let mut data_indent: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if data_indent.is_some_and(|d| indent <= d) {
            data_indent = None;
        }
        if t == "data:" || t == "stringData:" {
            data_indent = Some(indent);
            continue;
        }
        if data_indent.is_none() {
            continue;
        }
        if let Some((_, v)) = t.split_once(": ") {
            let v = v.trim_matches(['"', '\'']);
            if v.len() >= 8 && !v.starts_with('<') && !v.contains("{{") {
                values += 1;
                assert!(!human.contains(v), "human output shows `{v}`");
                assert!(!machine.contains(v), "JSON output shows `{v}`");
            }
        }
    }
    assert!(
        values > 0,
        "the fixture has no secret-looking values to check"
    );
}

#[test]
fn readme_first_commands_work() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let head: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("cargo run --release -- fixtures/example-repo"),
        "{head}"
    );
    assert!(head.contains("cargo test"), "{head}");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("cargo test"),
        ".ci/run must call the README's test command"
    );
}

#[test]
fn graph_prints_the_app_of_apps_tree() {
    let text = run(&["graph", "fixtures/fleet-repo"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    // The ApplicationSet's git generator is expanded and its template substituted.
    assert!(
        text.stdout.contains("Application argocd/web-prod-eu"),
        "{}",
        text.stdout
    );
    insta::assert_snapshot!("fleet-graph", text.stdout);
    let dot = run(&["graph", "--format", "dot", "fixtures/fleet-repo"]);
    assert_eq!(dot.code, 0);
    assert!(dot.stdout.starts_with("digraph gitops {"));
    insta::assert_snapshot!("fleet-graph-dot", dot.stdout);
}

/// A directory source's `include` and `exclude` are matched as the repo server matches them
/// (`util/glob.Match`, gobwas with no separator, on the path relative to the source): `**/`
/// needs a slash before the name, so a file at the top of the source is not excluded by it.
#[test]
fn directory_include_and_exclude_match_as_argo_cd() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".git")).unwrap();
    std::fs::create_dir_all(d.join("app/sub")).unwrap();
    std::fs::write(
        d.join("root.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app, namespace: argocd}\nspec:\n  project: default\n  source:\n    repoURL: https://example.com/repo.git\n    path: app\n    directory:\n      recurse: true\n      exclude: '**/cm.yaml'\n      include: '{*.yaml,*.yml}'\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n",
    )
    .unwrap();
    for (file, kind) in [
        ("app/cm.yaml", "ConfigMap"),
        ("app/sub/cm.yaml", "ConfigMap"),
        ("app/sub/svc.yml", "Service"),
        ("app/sub/notes.json", "Secret"),
    ] {
        std::fs::write(
            d.join(file),
            format!(
                "apiVersion: v1\nkind: {kind}\nmetadata: {{name: x{}}}\n",
                file.len()
            ),
        )
        .unwrap();
    }
    let out = common::run_in(
        d,
        &["graph", ".", "--repo-url", "https://example.com/repo.git"],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("renders 1 ConfigMap and 1 Service"),
        "{}",
        out.stdout
    );
}

#[test]
fn each_linted_path_resolves_against_its_own_repository() {
    let a = "fixtures/rules/hpa-replicas-conflict/fires-overlay-patch";
    let b = "fixtures/rules/kustomize-error/ok-components";
    let out = run(&["--format", "json", "--fail-on", "never", a, b]);
    let report = json(&out);
    let rules: Vec<String> = found(&report).into_iter().map(|(r, ..)| r).collect();
    assert!(
        rules.iter().any(|r| r == "hpa-replicas-conflict"),
        "{rules:?}"
    );
    assert!(!rules.iter().any(|r| r == "kustomize-error"), "{rules:?}");
    assert!(
        !rules.iter().any(|r| r == "application-source-missing"),
        "{rules:?}"
    );
}

#[test]
fn context_mode_understands_a_changed_file_in_its_repository() {
    // The overlay alone cannot show the conflict: its HPA and Application live elsewhere. A
    // file named below its repository's root is judged in its repository, with or without
    // `--context`.
    let file = "fixtures/fleet-repo/services/worker/overlays/prod/kustomization.yaml";
    let named = json(&run(&["--format", "json", "--fail-on", "never", file]));
    let out = run(&["--context", "--format", "json", "--fail-on", "never", file]);
    let report = json(&out);
    assert_eq!(named["findings"], report["findings"]);
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["rule"] == "hpa-replicas-conflict" && f["file"] == file),
        "{report:#}"
    );
    // Only findings caused by the changed file are reported.
    for f in findings {
        assert_eq!(f["file"], file, "{f:#}");
    }
    // Files the change cannot touch are not even parsed.
    let scanned = report["summary"]["files_scanned"].as_u64().unwrap();
    let full = json(&run(&[
        "--format",
        "json",
        "--fail-on",
        "never",
        "fixtures/fleet-repo",
    ]));
    assert!(scanned < full["summary"]["files_scanned"].as_u64().unwrap());
}

#[test]
fn ci_formats_are_stable() {
    for format in ["concise", "github", "junit"] {
        let out = run(&["--format", format, "--fail-on", "never", EXAMPLE]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        insta::assert_snapshot!(format!("example-{format}"), out.stdout);
    }
    // One run, two reports: the file gets the machine format, the terminal the human one.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.xml");
    let out = run(&[
        "--format",
        "junit",
        "--output",
        file.to_str().unwrap(),
        "--fail-on",
        "never",
        EXAMPLE,
    ]);
    assert!(out.stdout.contains("Checked "), "{}", out.stdout);
    let xml = std::fs::read_to_string(&file).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    common::parse_xml(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
}

#[test]
fn what_only_kustomize_reads_is_whole_where_it_reads_it() {
    // The same CRD twice: alone, where nothing reads its schema, and named by a kustomization
    // that patches the schema.
    let crd = |name: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {name}.acme.io\nspec:\n  group: acme.io\n  names:\n    kind: Widget\n    plural: {name}\n  scope: Cluster\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          description: as shipped\n          properties:\n            spec:\n              type: object\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["crds", "base", "apps"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let write = |p: &str, text: &str| std::fs::write(d.join(p), text).unwrap();
    write("crds/widgets.yaml", &crd("widgets"));
    write("base/gadgets.yaml", &crd("gadgets"));
    write(
        "base/kustomization.yaml",
        "resources: [gadgets.yaml]\npatches:\n  - target: {kind: CustomResourceDefinition}\n    path: schema-patch.yaml\n",
    );
    // A JSON 6902 patch is a document that is not an object: kept only for kustomize too.
    write(
        "base/schema-patch.yaml",
        "- op: replace\n  path: /spec/versions/0/schema/openAPIV3Schema/description\n  value: patched\n",
    );
    // A patch file only an Application's own kustomize layer names, with a CRD in it.
    write(
        "base/gadgets-patch.yaml",
        &crd("gadgets").replace("as shipped", "from the app"),
    );
    write(
        "apps/gadgets.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gadgets\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: https://example.com/fleet.git\n    path: base\n    kustomize:\n      patches:\n        - path: gadgets-patch.yaml\n        - target: {kind: CustomResourceDefinition}\n          patch: |\n            - op: replace\n              path: /spec/versions/0/served\n              value: false\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: gadgets\n",
    );
    let report = lint_json(d, ".", &["--repo-url", "https://example.com/fleet.git"]);
    let rules: Vec<String> = found(&report).into_iter().map(|(r, ..)| r).collect();
    assert!(!rules.iter().any(|r| r == "kustomize-error"), "{report:#}");
    assert_eq!(
        report["summary"]["objects_by_kind"]["CustomResourceDefinition"],
        3
    );
    let run = run_in(d, &["render", "base"], Duration::from_secs(60));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let built = json(&run);
    let schema = &built[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(schema["description"], "patched", "{built:#}");
    assert_eq!(schema["properties"]["spec"]["type"], "object", "{built:#}");
}

/// An Application in the `default` project: `default-project` (a warning) fires on it.
const DEFAULT_PROJECT_APP: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: NAME, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: a}
";

/// A config that tries to switch the linter off: a large file let through, every file
/// excluded, the rule that fires turned off, and a run that never fails.
const LOOSE_CONFIG: &str = "argocd-version: '3.4'
fail-on: never
max-file-size: 100000000
exclude: ['**']
rules:
  ignore: [default-project]
per-path:
  - paths: ['apps/**']
    severity: {default-project: info}
";

const TRUSTED_CONFIG: &str = "fail-on: warning
max-file-size: 2000
rules:
  severity: {default-project: error}
";

/// `top/repo`: an Application that `default-project` reports, a file over the trusted size
/// limit, and the loose config; `top/trusted.yaml` outside it.
fn loose_repository() -> tempfile::TempDir {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    std::fs::create_dir_all(repo.join("apps")).unwrap();
    let app = |name: &str| DEFAULT_PROJECT_APP.replace("NAME", name);
    std::fs::write(repo.join("apps/a.yaml"), app("a")).unwrap();
    let big = format!("{}# {}\n", app("big"), "x".repeat(4000));
    std::fs::write(repo.join("apps/big.yaml"), big).unwrap();
    std::fs::write(repo.join(".gitops-lint.yaml"), LOOSE_CONFIG).unwrap();
    std::fs::write(top.path().join("trusted.yaml"), TRUSTED_CONFIG).unwrap();
    top
}

fn lint_loose(dir: &std::path::Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    args.push(".");
    let out = run_in(dir, &args, Duration::from_secs(60));
    assert!(out.code < 2, "{}", out.stderr);
    (out.code, json(&out))
}

#[test]
fn the_repository_config_cannot_loosen_a_trusted_config() {
    let top = loose_repository();
    let repo = top.path().join("repo");
    // Left to itself, the repository's config silences everything.
    let (code, report) = lint_loose(&repo, &[]);
    assert_eq!(code, 0);
    assert!(found(&report).is_empty(), "{report:#}");
    assert_eq!(report["summary"]["files_scanned"], 0, "{report:#}");

    let (code, report) = lint_loose(&repo, &["--trusted-config", "../trusted.yaml"]);
    assert_eq!(code, 1, "fail-on never does not hold: {report:#}");
    // Files are linted despite `exclude: ['**']`; the rule it turned off (and lowered to info
    // for apps/**) is reported at the trusted severity.
    let findings = report["findings"].as_array().unwrap();
    let a = findings
        .iter()
        .find(|f| f["rule"] == "default-project" && f["file"] == "apps/a.yaml")
        .unwrap_or_else(|| panic!("default-project on apps/a.yaml: {report:#}"));
    assert_eq!(a["severity"], "error");
    // The trusted size limit holds: the big file is skipped, unread.
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["path"] == "apps/big.yaml" && s["reason"] == "too-large"),
        "{report:#}"
    );
    assert!(
        !findings.iter().any(|f| f["file"] == "apps/big.yaml"),
        "{report:#}"
    );
    // Command-line flags still win: they belong to the job, like the trusted config.
    let (code, _) = lint_loose(
        &repo,
        &["--trusted-config", "../trusted.yaml", "--fail-on", "never"],
    );
    assert_eq!(code, 0);
}

#[test]
fn the_repository_config_may_make_a_trusted_config_stricter() {
    let top = loose_repository();
    let repo = top.path().join("repo");
    std::fs::write(
        repo.join(".gitops-lint.yaml"),
        "fail-on: info\nmax-file-size: 1000\n",
    )
    .unwrap();
    std::fs::write(
        top.path().join("trusted.yaml"),
        "fail-on: error\nrules:\n  severity: {default-project: info}\n",
    )
    .unwrap();
    // The stricter fail-on and the lower size limit hold.
    let (code, report) = lint_loose(&repo, &["--trusted-config", "../trusted.yaml"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["findings"][0]["severity"], "info", "{report:#}");
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report:#}");
    assert_eq!(skipped[0]["path"], "apps/big.yaml");
    // A trusted config that turns a rule off does not stop the repository's turning it on.
    std::fs::write(
        repo.join(".gitops-lint.yaml"),
        "fail-on: warning\nrules:\n  severity: {default-project: warning}\n",
    )
    .unwrap();
    std::fs::write(
        top.path().join("trusted.yaml"),
        "rules:\n  ignore: [default-project]\n",
    )
    .unwrap();
    let (code, report) = lint_loose(&repo, &["--trusted-config", "../trusted.yaml"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(found(&report)[0].0, "default-project");
    // A repository config silent about the rule leaves the trusted config's choice alone.
    std::fs::remove_file(repo.join(".gitops-lint.yaml")).unwrap();
    let (code, report) = lint_loose(&repo, &["--trusted-config", "../trusted.yaml"]);
    assert_eq!(code, 0, "{report:#}");
    assert!(found(&report).is_empty(), "{report:#}");
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn a_trusted_config_read_from_a_git_revision() {
    let top = loose_repository();
    let repo = top.path().join("repo");
    common::require_program(
        "git",
        std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_ok(),
        "your system's git package",
    );
    common::git(&repo, &["init", "-q", "-b", "main"]);
    for (k, v) in [
        ("user.name", "Test"),
        ("user.email", "test@example.com"),
        ("commit.gpgsign", "false"),
    ] {
        common::git(&repo, &["config", k, v]);
    }
    // No config at the first commit: the defaults are the floor (the rule stays on, and
    // only errors fail, so its warning is reported without failing the run).
    std::fs::remove_file(repo.join(".gitops-lint.yaml")).unwrap();
    common::git(&repo, &["add", "-A"]);
    common::git(&repo, &["commit", "-q", "-m", "no config"]);
    std::fs::write(repo.join(".gitops-lint.yaml"), LOOSE_CONFIG).unwrap();
    let (code, report) = lint_loose(&repo, &["--trusted-config-rev", "HEAD"]);
    assert_eq!(code, 0, "{report:#}");
    let warning = found(&report)
        .into_iter()
        .any(|(r, f, _)| r == "default-project" && f == "apps/a.yaml");
    assert!(warning, "{report:#}");

    // The base branch's config, then a change that loosens it in the working tree.
    std::fs::write(repo.join(".gitops-lint.yaml"), TRUSTED_CONFIG).unwrap();
    common::git(&repo, &["add", "-A"]);
    common::git(&repo, &["commit", "-q", "-m", "config"]);
    std::fs::write(repo.join(".gitops-lint.yaml"), LOOSE_CONFIG).unwrap();
    let (code, report) = lint_loose(&repo, &["--trusted-config-rev", "main"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["findings"][0]["severity"], "error", "{report:#}");
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    assert_eq!(skipped[0]["path"], "apps/big.yaml", "{report:#}");
    // Linting a folder finds the config the revision holds above it.
    let out = run_in(
        &repo,
        &["--trusted-config-rev", "main", "--format", "json", "apps"],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(json(&out)["findings"][0]["severity"], "error");

    let out = run_in(
        &repo,
        &["--trusted-config-rev", "no-such-branch", "."],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("cannot resolve revision 'no-such-branch'"),
        "{}",
        out.stderr
    );
}

/// A config is checked whole: every mistake is shown at its line in one run, in the order
/// they are written, and nothing is linted.
#[test]
fn every_config_mistake_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join(".gitops-lint.yaml"),
        "fail-on: sometimes\nrules:\n  severity:\n    default-project: loud\n    secret-in-git: info\nexlude: [x]\nper-path:\n  - paths: [\"a/**\"]\n    ignore: [bogus]\n",
    )
    .unwrap();
    let out = run_in(dir.path(), &["."], Duration::from_secs(60));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("invalid configuration (4 mistakes)"),
        "{}",
        out.stderr
    );
    let places: Vec<&str> = [
        ".gitops-lint.yaml:1:10",
        ".gitops-lint.yaml:4:22",
        ".gitops-lint.yaml:6:1",
        ".gitops-lint.yaml:9:14",
    ]
    .into_iter()
    .filter(|p| !out.stderr.contains(p))
    .collect();
    assert!(places.is_empty(), "missing {places:?} in {}", out.stderr);
    let order: Vec<usize> = ["sometimes", "loud", "exlude", "bogus"]
        .iter()
        .map(|w| out.stderr.find(w).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", out.stderr);
}

#[test]
fn a_bad_trusted_config_is_a_usage_error() {
    let top = loose_repository();
    let repo = top.path().join("repo");
    let limit = Duration::from_secs(60);
    let out = run_in(&repo, &["--trusted-config", "../missing.yaml", "."], limit);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("../missing.yaml"), "{}", out.stderr);
    std::fs::write(top.path().join("trusted.yaml"), "fail-on: sometimes\n").unwrap();
    let out = run_in(&repo, &["--trusted-config", "../trusted.yaml", "."], limit);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`sometimes` is not"), "{}", out.stderr);
    let out = run_in(
        &repo,
        &[
            "--trusted-config",
            "../trusted.yaml",
            "--trusted-config-rev",
            "HEAD",
            ".",
        ],
        limit,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    // A trusted config inside the linted tree protects nothing: said, not refused.
    std::fs::write(repo.join("trusted.yaml"), TRUSTED_CONFIG).unwrap();
    let out = run_in(&repo, &["--trusted-config", "trusted.yaml", "."], limit);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("is inside the linted repository"),
        "{}",
        out.stderr
    );
}

#[test]
fn config_command_shows_what_the_trusted_config_clamped() {
    let top = loose_repository();
    let repo = top.path().join("repo");
    let out = run_in(
        &repo,
        &["config", "--trusted-config", "../trusted.yaml", "."],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("config-trusted", out.stdout);
}

/// The rule ids of a run's findings, each once, in order.
fn rules_found(report: &serde_json::Value) -> Vec<String> {
    let mut rules: Vec<String> = found(report).into_iter().map(|(rule, _, _)| rule).collect();
    rules.sort();
    rules.dedup();
    rules
}

/// The example repository linted with `args`, whatever it finds.
fn example_rules(args: &[&str]) -> Vec<String> {
    let mut all = vec!["--format", "json", "--fail-on", "never"];
    all.extend_from_slice(args);
    all.push(EXAMPLE);
    let out = run(&all);
    assert_eq!(out.code, 0, "{}", out.stderr);
    rules_found(&json(&out))
}

fn category_of(id: &str) -> &'static str {
    gitops_lint::rules::find(id).unwrap().category.as_str()
}

#[test]
fn select_runs_only_the_rules_and_categories_named() {
    let everything = example_rules(&[]);
    let fleet = example_rules(&["--select", "fleet"]);
    assert!(!fleet.is_empty());
    assert!(fleet.iter().all(|r| category_of(r) == "fleet"), "{fleet:?}");
    let expected: Vec<String> = everything
        .iter()
        .filter(|r| category_of(r) == "fleet")
        .cloned()
        .collect();
    assert_eq!(fleet, expected);
    // Comma-separated and repeated words add up; a rule id names one rule.
    let both = example_rules(&[
        "--select",
        "fleet,default-project",
        "--select",
        "secret-in-git",
    ]);
    let mut expected = expected;
    expected.extend(["default-project".to_string(), "secret-in-git".to_string()]);
    expected.sort();
    assert_eq!(both, expected);
    assert_eq!(example_rules(&["--select", "all"]), everything);
}

#[test]
fn ignore_drops_rules_and_wins_over_select() {
    let everything = example_rules(&[]);
    assert!(everything.contains(&"default-project".to_string()));
    assert!(everything.contains(&"cascade-delete-risk".to_string()));
    let rest = example_rules(&[
        "--ignore",
        "default-project",
        "--ignore",
        "cascade-delete-risk",
    ]);
    let expected: Vec<String> = everything
        .iter()
        .filter(|r| *r != "default-project" && *r != "cascade-delete-risk")
        .cloned()
        .collect();
    assert_eq!(rest, expected);
    assert_eq!(
        example_rules(&["--select", "fleet", "--ignore", "cascade-delete-risk"]),
        vec!["child-break-glass-reverted"]
    );
}

#[test]
fn command_line_selection_wins_over_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "repo-urls: [https://github.com/example-org/gitops.git]\n\
         rules:\n  select: [fleet, secrets]\n  ignore: [cascade-delete-risk]\n  \
         severity: {secret-in-git: off}\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let with = |args: &[&str]| {
        let mut all = vec!["--config", config];
        all.extend_from_slice(args);
        example_rules(&all)
    };
    let file_alone = with(&[]);
    assert!(file_alone.contains(&"child-break-glass-reverted".to_string()));
    assert!(!file_alone.contains(&"default-project".to_string()));
    assert!(!file_alone.contains(&"cascade-delete-risk".to_string()));
    assert!(!file_alone.contains(&"secret-in-git".to_string()));
    // --extend-select adds to the file's select.
    let extended = with(&["--extend-select", "default-project"]);
    let mut expected = file_alone.clone();
    expected.push("default-project".into());
    expected.sort();
    assert_eq!(extended, expected);
    // A rule the command line names runs though the file ignores it or turns it off.
    assert!(with(&["--extend-select", "cascade-delete-risk"])
        .contains(&"cascade-delete-risk".to_string()));
    assert!(with(&["--extend-select", "secret-in-git"]).contains(&"secret-in-git".to_string()));
    // --select replaces the file's select.
    assert_eq!(
        with(&["--select", "default-project"]),
        vec!["default-project"]
    );
    // --ignore adds to the file's ignore.
    let ignored = with(&["--ignore", "fleet"]);
    assert!(
        ignored.iter().all(|r| category_of(r) == "secrets"),
        "{ignored:?}"
    );
    assert!(!ignored.is_empty());
}

#[test]
fn command_line_selection_wins_over_a_trusted_config() {
    let top = loose_repository();
    let repo = top.path().join("repo");
    // A file over the size limit fails any run: only the selection is looked at here.
    std::fs::remove_file(repo.join("apps/big.yaml")).unwrap();
    let trusted = ["--trusted-config", "../trusted.yaml"];
    let (_, report) = lint_loose(&repo, &trusted);
    assert!(rules_found(&report).contains(&"default-project".to_string()));
    for narrowing in [["--ignore", "access"], ["--select", "secrets"]] {
        let (code, report) = lint_loose(&repo, &[&trusted[..], &narrowing].concat());
        assert_eq!(code, 0, "{narrowing:?}: {report:#}");
        assert!(found(&report).is_empty(), "{narrowing:?}: {report:#}");
    }
}

#[test]
fn an_unknown_rule_on_the_command_line_is_a_usage_error() {
    for option in ["--select", "--extend-select", "--ignore"] {
        let out = run(&[option, "fleet,defualt-project", EXAMPLE]);
        assert_eq!(out.code, 2, "{option}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{option}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("unknown rule or category `defualt-project`"),
            "{option}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("did you mean `default-project`?"),
            "{option}: {}",
            out.stderr
        );
    }
    let out = run(&["--select", "nothing-like-any-rule", EXAMPLE]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`gitops-lint rules` lists rule ids and categories"),
        "{}",
        out.stderr
    );
}

#[test]
fn help_groups_the_options_and_states_the_exit_codes() {
    for flag in ["-h", "--help"] {
        let out = run(&[flag]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let help = &out.stdout;
        // Each heading once, in this order, each with its options below it.
        let sections = [
            ("Selection:", "--select <RULES>"),
            ("Output:", "--format <FORMAT>"),
            ("Fixing:", "--unsafe-fixes"),
            ("Context:", "--changed-since <REF>"),
            ("Baseline:", "--write-baseline <FILE>"),
            ("Files:", "--max-file-size <BYTES>"),
            ("Repository:", "--argocd-version <X.Y>"),
            ("Configuration:", "--trusted-config <FILE>"),
            ("Exit codes:", "  2  usage error"),
            (
                "Examples:",
                "gitops-lint --changed-since origin/main --format sarif",
            ),
        ];
        let mut last = 0;
        for (heading, below) in sections {
            let at = help
                .lines()
                .position(|l| l == heading)
                .unwrap_or_else(|| panic!("{flag}: no `{heading}` heading:\n{help}"));
            assert!(at > last, "{flag}: `{heading}` out of order:\n{help}");
            let section: Vec<&str> = help
                .lines()
                .skip(at + 1)
                .take_while(|l| !l.ends_with(':') || l.starts_with(' '))
                .collect();
            assert!(
                section.iter().any(|l| l.contains(below)),
                "{flag}: `{below}` not under `{heading}`:\n{help}"
            );
            last = at;
        }
        assert!(
            help.contains("  0  no finding at or above --fail-on"),
            "{help}"
        );
        assert!(
            help.contains("  1  a finding at or above --fail-on"),
            "{help}"
        );
    }
}

#[test]
fn config_shows_the_git_remotes_sources_are_matched_against() {
    let dir = tempfile::tempdir().unwrap();
    common::git(dir.path(), &["init", "-q"]);
    common::git(
        dir.path(),
        &[
            "remote",
            "add",
            "origin",
            "https://x-access-token:ghs_secret123@github.com/acme/gitops.git",
        ],
    );
    let out = common::run_in(dir.path(), &["config"], std::time::Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("git-remotes: [https://github.com/acme/gitops.git]"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("ghs_secret123"), "{}", out.stdout);
}

/// `graph` names a multi-source Application's `ref` source for what it is, and, run on a
/// folder below the root, resolves the Applications there against the repository.
#[test]
fn graph_labels_ref_sources_and_reads_a_subfolder_in_its_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let write = |path: &str, text: &str| {
        let path = repo.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        ".gitops-lint.yaml",
        "repo-urls:\n  - https://github.com/acme/gitops.git\n",
    );
    write(
        "apps/web.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  project: default\n  sources:\n    - repoURL: https://github.com/acme/gitops.git\n      path: services/web/overlays/prod\n      targetRevision: main\n    - repoURL: https://github.com/acme/gitops.git\n      targetRevision: main\n      ref: values\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: web\n",
    );
    write(
        "services/web/base/kustomization.yaml",
        "resources:\n  - cm.yaml\n",
    );
    write(
        "services/web/base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
    );
    write(
        "services/web/overlays/prod/kustomization.yaml",
        "resources:\n  - ../../base\n",
    );
    let whole = run_in(repo, &["graph"], Duration::from_secs(60));
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let want = "Application argocd/web  [apps/web.yaml:1]\n    source: services/web/overlays/prod, built with kustomize\n    source: ref `values`, this repository, where the other sources read value files as `$values/...`\n    renders 1 ConfigMap\n";
    assert_eq!(whole.stdout, want);
    let sub = run_in(repo, &["graph", "apps"], Duration::from_secs(60));
    assert_eq!(sub.stdout, want, "graph apps");
    let inside = run_in(&repo.join("apps"), &["graph"], Duration::from_secs(60));
    assert_eq!(
        inside.stdout,
        want.replace("[apps/web.yaml:1]", "[../apps/web.yaml:1]"),
        "cd apps && graph"
    );
    let none = run_in(repo, &["graph", "services"], Duration::from_secs(60));
    assert_eq!(none.stdout, "No Applications found.\n");
}

/// One rule reported at two severities (info where the autoscaler's bounds pin the count,
/// error where self-heal fights it), beside the example repository's findings.
const STATISTICS_PATHS: [&str; 3] = [
    "fixtures/rules/hpa-replicas-conflict/fires-pinned-replicas",
    "fixtures/rules/hpa-replicas-conflict/fires-overlay-patch",
    EXAMPLE,
];

fn with_statistics(format: &str, extra: &[&str]) -> common::Run {
    let mut args = vec!["--statistics", "--format", format, "--fail-on", "never"];
    args.extend_from_slice(extra);
    args.extend(STATISTICS_PATHS);
    let out = run(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// The statistics rows a JSON report's findings call for: per rule, its count, its findings
/// by severity and its fixes by applicability; most findings first, then by rule id.
fn statistics_of(report: &serde_json::Value) -> serde_json::Value {
    use std::collections::BTreeMap;
    let mut rows: BTreeMap<String, (u64, BTreeMap<String, u64>, u64, u64)> = BTreeMap::new();
    for f in report["findings"].as_array().unwrap() {
        let row = rows.entry(f["rule"].as_str().unwrap().into()).or_default();
        row.0 += 1;
        *row.1
            .entry(f["severity"].as_str().unwrap().into())
            .or_default() += 1;
        match f["fix"]["applicability"].as_str() {
            Some("safe") => row.2 += 1,
            Some("unsafe") => row.3 += 1,
            _ => {}
        }
    }
    let mut rows: Vec<_> = rows.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    rows.into_iter()
        .map(|(rule, (count, severities, fixable, fixable_unsafe))| {
            serde_json::json!({
                "rule": rule,
                "count": count,
                "severities": severities,
                "fixable": fixable,
                "fixable_unsafe": fixable_unsafe,
            })
        })
        .collect()
}

#[test]
fn statistics_in_json_count_the_findings_as_reported() {
    let report = json(&with_statistics("json", &[]));
    assert_eq!(report["statistics"], statistics_of(&report), "{report:#}");
    let rows = report["statistics"].as_array().unwrap();
    let hpa = rows
        .iter()
        .find(|r| r["rule"] == "hpa-replicas-conflict")
        .unwrap();
    assert_eq!(
        hpa["severities"],
        serde_json::json!({"error": 1, "info": 1}),
        "{hpa}"
    );
    assert!(rows.iter().any(|r| r["fixable"].as_u64() > Some(0)));
    assert!(rows.iter().any(|r| r["fixable_unsafe"].as_u64() > Some(0)));
    // The config's severity overrides are what the rows show, as the findings do.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "repo-urls: [https://github.com/example-org/gitops.git, https://github.com/example/fleet.git]\nrules:\n  severity:\n    hpa-replicas-conflict: warning\n    secret-in-git: info\n",
    )
    .unwrap();
    let report = json(&with_statistics(
        "json",
        &["--config", config.to_str().unwrap()],
    ));
    assert_eq!(report["statistics"], statistics_of(&report), "{report:#}");
    let severities = |rule: &str| {
        report["statistics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == rule)
            .map(|r| r["severities"].clone())
    };
    assert_eq!(
        severities("hpa-replicas-conflict"),
        Some(serde_json::json!({"warning": 2}))
    );
    assert_eq!(
        severities("secret-in-git"),
        Some(serde_json::json!({"info": 1}))
    );
    // Without --statistics the document is as before.
    let out = run(&["--format", "json", "--fail-on", "never", EXAMPLE]);
    assert!(json(&out).get("statistics").is_none());
}

#[test]
fn statistics_in_the_text_formats() {
    let report = json(&with_statistics("json", &[]));
    let rows = report["statistics"].as_array().unwrap();
    let concise = with_statistics("concise", &[]).stdout;
    // The findings' lines stay as they were; the table follows them.
    let findings = run(&[
        "--format",
        "concise",
        "--fail-on",
        "never",
        STATISTICS_PATHS[0],
        STATISTICS_PATHS[1],
        EXAMPLE,
    ])
    .stdout;
    let table = concise
        .strip_prefix(findings.as_str())
        .unwrap_or_else(|| panic!("{concise}"));
    let table = table
        .strip_prefix("\nFindings by rule:\n")
        .unwrap_or_else(|| panic!("{table}"));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), rows.len() + 1, "{table}");
    // Columns are at least two spaces apart; a cell's own words one.
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    assert_eq!(
        cells(lines[0]),
        ["findings", "rule", "severity", "fixable"],
        "{table}"
    );
    let mut by_rule = std::collections::BTreeMap::new();
    for (line, row) in lines[1..].iter().zip(rows) {
        let cells = cells(line);
        assert_eq!(cells[0], row["count"].to_string(), "{line}");
        assert_eq!(cells[1], row["rule"], "{line}");
        by_rule.insert(cells[1].clone(), cells[2..].to_vec());
    }
    assert_eq!(by_rule["hpa-replicas-conflict"], ["1 error, 1 info"]);
    assert_eq!(by_rule["secret-in-git"], ["error"]);
    assert_eq!(by_rule["automated-misuse"], ["error", "1 with --fix"]);
    assert_eq!(
        by_rule["self-heal-disabled"],
        ["warning", "1 with --fix --unsafe-fixes"]
    );

    // The human report shows the same table before its summary.
    let human = with_statistics("human", &[]).stdout;
    assert!(
        human.contains(&format!("\n\nFindings by rule:\n{table}\n")),
        "{human}"
    );
    assert!(human.contains("\nChecked "), "{human}");

    // GitHub: the annotations as before, then the table in a folded group of plain lines;
    // no line of it reads as a workflow command.
    let github = with_statistics("github", &[]).stdout;
    let (annotations, group) = github
        .split_once("::group::Findings by rule\n")
        .unwrap_or_else(|| panic!("{github}"));
    assert!(annotations.lines().all(|l| l.starts_with("::")));
    assert_eq!(group, format!("{table}::endgroup::\n"));
    assert!(table.lines().all(|l| !l.trim_start().starts_with("::")));

    // No findings, no table.
    let clean = "fixtures/rules/hpa-replicas-conflict/ok-no-replicas";
    for format in ["human", "concise", "github", "junit"] {
        let out = run(&["--statistics", "--format", format, clean]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!out.stdout.contains("Findings by rule"), "{}", out.stdout);
        assert!(!out.stdout.contains("<properties>"), "{}", out.stdout);
    }
}

#[test]
fn statistics_in_junit_are_suite_properties() {
    let report = json(&with_statistics("json", &[]));
    let xml = with_statistics("junit", &[]).stdout;
    let root = common::parse_xml(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    assert_eq!(root.name, "testsuites");
    let suite = &root.children[0];
    assert_eq!(suite.name, "testsuite");
    // JUnit's schema puts the properties first in the suite.
    let properties = &suite.children[0];
    assert_eq!(properties.name, "properties", "{xml}");
    let got: Vec<(&str, &str)> = properties
        .children
        .iter()
        .map(|p| {
            assert_eq!(p.name, "property");
            (p.attribute("name").unwrap(), p.attribute("value").unwrap())
        })
        .collect();
    let mut want = Vec::new();
    for row in report["statistics"].as_array().unwrap() {
        let rule = row["rule"].as_str().unwrap();
        want.push((rule.to_string(), row["count"].to_string()));
        for (severity, n) in row["severities"].as_object().unwrap() {
            want.push((format!("{rule}.{severity}"), n.to_string()));
        }
    }
    // Severities are written most severe first; the JSON map is read back in name order.
    let mut got_sorted: Vec<(String, String)> = got
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    got_sorted.sort();
    want.sort();
    assert_eq!(got_sorted, want, "{xml}");
    let hpa: Vec<&(&str, &str)> = got
        .iter()
        .filter(|(n, _)| n.starts_with("hpa-replicas-conflict"))
        .collect();
    assert_eq!(
        hpa,
        [
            &("hpa-replicas-conflict", "2"),
            &("hpa-replicas-conflict.error", "1"),
            &("hpa-replicas-conflict.info", "1")
        ]
    );
    assert!(suite.children[1..].iter().all(|c| c.name == "testcase"));
    // Without --statistics, no properties.
    let plain = run(&["--format", "junit", "--fail-on", "never", EXAMPLE]).stdout;
    let root = common::parse_xml(&plain).unwrap_or_else(|e| panic!("{e}\n{plain}"));
    assert!(root.children[0]
        .children
        .iter()
        .all(|c| c.name == "testcase"));
}

#[test]
fn the_xml_check_rejects_what_is_not_xml() {
    for bad in [
        "<a><b></a></b>",
        "<a x=1/>",
        "<a>fish & chips</a>",
        "<a/><b/>",
        "<a x=\"1\" x=\"2\"/>",
        "<a>",
        "<a>\u{1}</a>",
    ] {
        assert!(common::parse_xml(bad).is_err(), "{bad}");
    }
    let ok = common::parse_xml(
        "<?xml version=\"1.0\"?>\n<a x='&lt;1&gt;'><!-- c --><b/>t &amp; u</a>\n",
    )
    .unwrap();
    assert_eq!(ok.attribute("x"), Some("<1>"));
    assert_eq!(ok.children.len(), 1);
}

/// `top/repo`, a git repository whose `apps/prod` holds an Application that `default-project`
/// reports and that points at a folder of this repository that does not exist; a trusted
/// config beside it raises `default-project` for `apps/prod/**` and brings a policy scoped to
/// it. The change under review plants an empty config in `apps/`.
fn planted_root_repository() -> tempfile::TempDir {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    std::fs::create_dir_all(repo.join("apps/prod")).unwrap();
    common::git_init(&repo);
    common::git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/example/fleet.git",
        ],
    );
    let app = DEFAULT_PROJECT_APP
        .replace("NAME", "a")
        .replace(
            "https://example.com/r.git",
            "https://github.com/example/fleet.git",
        )
        .replace("path: a,", "path: apps/missing,");
    std::fs::write(repo.join("apps/prod/a.yaml"), app).unwrap();
    std::fs::write(repo.join("apps/.gitops-lint.yaml"), "").unwrap();
    std::fs::write(
        top.path().join("trusted.yaml"),
        "policies: [policies]\nper-path:\n  - paths: ['apps/prod/**']\n    severity: {default-project: error}\n",
    )
    .unwrap();
    std::fs::create_dir_all(top.path().join("policies")).unwrap();
    std::fs::write(
        top.path().join("policies/prod-team.yaml"),
        "id: prod-team-label\nseverity: error\nmessage: prod Applications name their team\n\
         match:\n  kind: Application\n  paths: ['apps/prod/**']\n\
         condition: \"!has(object.metadata.labels)\"\n",
    )
    .unwrap();
    top
}

#[test]
fn a_planted_config_does_not_move_the_root_of_a_trusted_run() {
    let top = planted_root_repository();
    let repo = top.path().join("repo");
    // Ignore files that would hide every file: Argo CD deploys what Git holds whatever they say,
    // and under a trusted config only its excludes hide files.
    std::fs::write(repo.join(".ignore"), "*\n").unwrap();
    std::fs::write(repo.join("apps/.gitignore"), "prod/\n").unwrap();
    // The linted path as the Action's `path` names it, the root, and a changed file.
    for args in [
        vec!["."],
        vec!["apps"],
        vec!["apps/prod"],
        vec!["--context", "apps/prod/a.yaml"],
    ] {
        let mut all = vec!["--format", "json", "--trusted-config", "../trusted.yaml"];
        all.extend_from_slice(&args);
        let out = run_in(&repo, &all, Duration::from_secs(60));
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        let report = json(&out);
        let findings = found(&report);
        let has = |rule: &str, severity: &str| {
            report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["rule"] == rule && f["severity"] == severity)
        };
        // The trusted per-path severity and the policy scoped to `apps/prod/**` still hold,
        // and the git remote still makes the Application's source this repository.
        assert!(has("default-project", "error"), "{args:?}: {findings:?}");
        assert!(has("prod-team-label", "error"), "{args:?}: {findings:?}");
        assert!(
            has("application-source-missing", "error"),
            "{args:?}: {findings:?}"
        );
        for f in report["findings"].as_array().unwrap() {
            assert_eq!(f["file"], "apps/prod/a.yaml", "{args:?}: {f:#}");
        }
    }
}

#[test]
fn a_planted_config_does_not_move_the_root_of_a_run_pinned_to_a_revision() {
    let top = planted_root_repository();
    let repo = top.path().join("repo");
    // The base branch holds the trusted config and its policy at the root; the change under
    // review plants an empty config in `apps/`.
    std::fs::rename(
        top.path().join("trusted.yaml"),
        repo.join(".gitops-lint.yaml"),
    )
    .unwrap();
    std::fs::rename(top.path().join("policies"), repo.join("policies")).unwrap();
    std::fs::rename(
        repo.join("apps/.gitops-lint.yaml"),
        top.path().join("planted.yaml"),
    )
    .unwrap();
    common::git(&repo, &["add", "-A"]);
    common::git(&repo, &["commit", "-qm", "base"]);
    std::fs::rename(
        top.path().join("planted.yaml"),
        repo.join("apps/.gitops-lint.yaml"),
    )
    .unwrap();
    for args in [
        vec!["."],
        vec!["apps"],
        vec!["--context", "apps/prod/a.yaml"],
    ] {
        let mut all = vec!["--format", "json", "--trusted-config-rev", "HEAD"];
        all.extend_from_slice(&args);
        let out = run_in(&repo, &all, Duration::from_secs(60));
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        let report = json(&out);
        let rules: Vec<(String, String)> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap().to_string(),
                    f["severity"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for want in [
            "default-project",
            "prod-team-label",
            "application-source-missing",
        ] {
            assert!(
                rules.contains(&(want.to_string(), "error".to_string())),
                "{args:?}: {want} missing from {rules:?}"
            );
        }
    }
}

/// Argo CD reads hidden files and folders in a directory source (it skips no dot name), so a
/// change cannot hide an Application from the linter behind a dot; hidden tool settings that
/// are no YAML are no finding, and git's data is never walked.
#[test]
fn hidden_files_are_linted_as_argo_cd_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in ["apps/.team", ".devcontainer", ".GIT"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let app = |name: &str| DEFAULT_PROJECT_APP.replace("NAME", name);
    std::fs::write(root.join("apps/.team/hidden.yaml"), app("hidden")).unwrap();
    std::fs::write(root.join("apps/.dot.yaml"), app("dot")).unwrap();
    std::fs::write(
        root.join(".devcontainer/devcontainer.json"),
        "{\n  // a comment\n  \"name\": \"dev\",\n  \"ports\": [3000, }\n",
    )
    .unwrap();
    std::fs::write(root.join(".GIT/config.yaml"), app("git")).unwrap();
    let out = run_in(root, &["--format", "json", "."], Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = json(&out);
    let mut files: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["rule"].as_str().unwrap(),
                f["file"].as_str().unwrap()
            )
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "default-project apps/.dot.yaml",
            "default-project apps/.team/hidden.yaml"
        ]
    );
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["path"] == ".devcontainer/devcontainer.json" && s["reason"] == "hidden"),
        "{report:#}"
    );
}
