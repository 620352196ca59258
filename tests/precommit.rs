//! The pre-commit hook (`.pre-commit-hooks.yaml`), installed and run by the real pre-commit.
//!
//! The end-to-end test copies this working tree (without `target/` and `.git/`) into a
//! temporary git repository, so it sees uncommitted changes and does not depend on the current
//! commit, and points a user repository's `.pre-commit-config.yaml` at it. `pre-commit install`
//! then guards `git commit`: the first commit builds the hook with `cargo install` (release, a few
//! minutes; `CARGO_TARGET_DIR` is kept under `target/` so a second local run reuses it) and must
//! be refused for a bad Application, and the fixed file must commit. The `-system` hooks run the
//! test build from PATH the same way, with no build. Without pre-commit on PATH the tests that
//! run it are ignored, with the reason (see `build.rs`), except under CI (`CI` set), where
//! `.ci/run` installs it and they fail instead.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use gitops_lint::yaml::{self, Node};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn manifest() -> Node {
    let text = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    let parsed = yaml::parse(0, &text, Default::default());
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    parsed.documents.into_iter().next().unwrap().root
}

fn pre_commit_available() -> bool {
    Command::new("pre-commit")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn require_pre_commit() {
    common::require_program(
        "pre-commit",
        pre_commit_available(),
        "python3 -m pip install --user 'pre-commit==4.*'; .ci/run does",
    );
}

struct Out {
    code: i32,
    /// stdout and stderr together.
    text: String,
    elapsed: Duration,
}

/// Runs a program with a time limit in its own process group, so a timeout also ends what it
/// started (pre-commit, cargo, rustc).
fn run(dir: &Path, program: &str, args: &[&str], envs: &[(&str, &OsStr)], limit: Duration) -> Out {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .envs(envs.iter().copied())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "gitops-lint tests")
        .env("GIT_AUTHOR_EMAIL", "tests@gitops-lint.invalid")
        .env("GIT_COMMITTER_NAME", "gitops-lint tests")
        .env("GIT_COMMITTER_EMAIL", "tests@gitops-lint.invalid");
    let r = common::run_command(cmd, &format!("{program} {args:?}"), limit);
    Out {
        code: r.code,
        text: r.stdout + &r.stderr,
        elapsed: r.elapsed,
    }
}

fn ok(out: Out, what: &str) -> Out {
    assert_eq!(out.code, 0, "{what}:\n{}", out.text);
    out
}

fn copy_tree(from: &Path, to: &Path, top: bool) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if top && (name == "target" || name == ".git") {
            continue;
        }
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name), false);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

const BAD_APP: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps
    targetRevision: HEAD
    path: guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  syncPolicy:
    syncOptions:
      # Options are matched exactly: an error, which fails the hook by default.
      - CreateNamespace=True
";

/// The hooks the manifest serves: the two built from source, and the two that run the
/// `gitops-lint` found on PATH, alike in everything but how they get the binary.
const HOOKS: [(&str, &str, &str); 4] = [
    ("gitops-lint", "rust", "gitops-lint --context --cache"),
    (
        "gitops-lint-fix",
        "rust",
        "gitops-lint --context --cache --fix",
    ),
    (
        "gitops-lint-system",
        "system",
        "gitops-lint --context --cache",
    ),
    (
        "gitops-lint-fix-system",
        "system",
        "gitops-lint --context --cache --fix",
    ),
];

/// The README's `.pre-commit-config.yaml` snippet.
fn readme_snippet() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find("## In CI and pre-commit")
        .expect("README has the CI section");
    readme[start..]
        .split("```yaml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .find(|b| b.contains("repos:"))
        .expect("a .pre-commit-config.yaml snippet")
        .to_string()
}

/// A scalar's text, or a sequence's scalars.
fn plain(node: Option<&Node>) -> Vec<String> {
    let node = node.expect("a value");
    match node.as_str() {
        Some(text) => vec![text.to_string()],
        None => node
            .items()
            .iter()
            .map(|n| n.as_str().expect("a scalar").to_string())
            .collect(),
    }
}

#[test]
fn the_hook_manifest_and_the_readme_snippet() {
    let hooks = manifest();
    let ids: Vec<_> = hooks
        .items()
        .iter()
        .map(|h| h.str_at("id").expect("id"))
        .collect();
    assert_eq!(ids, HOOKS.map(|(id, ..)| id));
    let first = &hooks.items()[0];
    for (hook, (id, language, entry)) in hooks.items().iter().zip(HOOKS) {
        assert_eq!(hook.str_at("language"), Some(language), "{id}");
        assert_eq!(hook.str_at("entry"), Some(entry), "{id}");
        for key in ["files", "types", "pass_filenames", "require_serial"] {
            assert!(hook.get(key).is_some(), "{id}: {key}");
            assert_eq!(
                plain(hook.get(key)),
                plain(first.get(key)),
                "{id}: {key} as the gitops-lint hook's"
            );
        }
    }
    assert_eq!(first.str_at("pass_filenames"), Some("true"));
    // The files the linter reads as manifests, and no others.
    let files = regex::Regex::new(first.str_at("files").expect("files")).unwrap();
    for name in [
        "apps/guestbook.yaml",
        "a.yml",
        "argocd/cm.json",
        "base/kustomization.yaml",
        "overlays/prod/Kustomization",
        "Kustomization",
    ] {
        assert!(files.is_match(name), "{name} is linted");
    }
    for name in [
        "README.md",
        "charts/x/Chart.lock",
        "NotAKustomization",
        "a.yaml.bak",
    ] {
        assert!(!files.is_match(name), "{name} is not linted");
    }

    // The README's config snippet names a hook of this repository, at a release tag.
    let snippet = readme_snippet();
    let parsed = yaml::parse(0, &snippet, Default::default());
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    let config = &parsed.documents[0].root;
    let repo = &config.get("repos").expect("repos").items()[0];
    assert_eq!(
        repo.str_at("repo"),
        Some("https://github.com/gitops-lint/gitops-lint")
    );
    let rev = repo.str_at("rev").expect("rev");
    assert_eq!(rev, format!("v{}", env!("CARGO_PKG_VERSION")));
    let ids: Vec<_> = repo
        .get("hooks")
        .expect("hooks")
        .items()
        .iter()
        .filter_map(|h| h.str_at("id"))
        .collect();
    assert_eq!(ids, ["gitops-lint"]);
    // The other hooks the README offers are this manifest's.
    assert!(
        snippet.contains("# or gitops-lint-system"),
        "the snippet offers the system hook:\n{snippet}"
    );
}

#[test]
#[cfg_attr(not(any(has_pre_commit, ci)), ignore = "pre-commit is not on PATH")]
fn pre_commit_accepts_the_manifest_and_the_readme_snippet() {
    require_pre_commit();
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("config.yaml");
    std::fs::write(&config_file, readme_snippet()).unwrap();
    let limit = Duration::from_secs(60);
    for (command, file) in [
        ("validate-manifest", root().join(".pre-commit-hooks.yaml")),
        ("validate-config", config_file),
    ] {
        let file = file.display().to_string();
        ok(
            run(dir.path(), "pre-commit", &[command, &file], &[], limit),
            command,
        );
    }
}

/// A hook repository made of this working tree and a user repository whose
/// `.pre-commit-config.yaml` uses `hook` from it, with pre-commit installed as its git hook.
struct Setup {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    /// No core.hooksPath or other global settings from the machine.
    global: PathBuf,
}

const SHORT: Duration = Duration::from_secs(120);

impl Setup {
    fn new(hook: &str) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let global = tmp.path().join("gitconfig");
        std::fs::write(&global, "").unwrap();
        let git = |dir: &Path, args: &[&str]| {
            ok(
                run(
                    dir,
                    "git",
                    args,
                    &[("GIT_CONFIG_GLOBAL", global.as_os_str())],
                    SHORT,
                ),
                "git",
            )
        };

        // This working tree as a hook repository.
        let hooks = tmp.path().join("hooks");
        copy_tree(&root(), &hooks, true);
        git(&hooks, &["init", "-q", "-b", "main"]);
        git(&hooks, &["add", "-A"]);
        git(&hooks, &["config", "commit.gpgsign", "false"]);
        git(&hooks, &["commit", "-qm", "hooks"]);
        let rev = git(&hooks, &["rev-parse", "HEAD"]).text.trim().to_string();

        // A user repository that uses it.
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join("apps")).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["config", "commit.gpgsign", "false"]);
        std::fs::write(
            repo.join(".pre-commit-config.yaml"),
            format!(
                "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: {hook}\n",
                hooks.display()
            ),
        )
        .unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "pre-commit config"]);
        let setup = Setup { tmp, repo, global };
        ok(
            setup.run("pre-commit", &["install"], &[], SHORT),
            "pre-commit install",
        );
        setup
    }

    /// Runs a program in the user repository, with pre-commit's and the hook's state kept in
    /// the temporary directory and `extra` added to the environment.
    fn run(&self, program: &str, args: &[&str], extra: &[(&str, &OsStr)], limit: Duration) -> Out {
        let home = self.tmp.path().join("pre-commit-home");
        let cache = self.tmp.path().join("cache");
        let target = root().join("target").join("pre-commit-hook");
        let mut envs: Vec<(&str, &OsStr)> = vec![
            ("PRE_COMMIT_HOME", home.as_os_str()),
            // The hook keeps its cache there rather than in the user's home.
            ("XDG_CACHE_HOME", cache.as_os_str()),
            // `cargo install` builds in a temporary directory unless this is set.
            ("CARGO_TARGET_DIR", target.as_os_str()),
            ("GIT_CONFIG_GLOBAL", self.global.as_os_str()),
        ];
        envs.extend_from_slice(extra);
        run(&self.repo, program, args, &envs, limit)
    }

    fn git(&self, args: &[&str]) -> Out {
        ok(self.run("git", args, &[], SHORT), "git")
    }

    fn commits(&self) -> String {
        self.git(&["rev-list", "--count", "HEAD"])
            .text
            .trim()
            .to_string()
    }
}

/// The bad Application is refused with the rule named; once fixed, it commits.
fn refuses_then_accepts(setup: &Setup, extra: &[(&str, &OsStr)], first_limit: Duration) {
    let app = setup.repo.join("apps/guestbook.yaml");
    std::fs::write(&app, BAD_APP).unwrap();
    setup.git(&["add", "apps/guestbook.yaml"]);
    let refused = setup.run("git", &["commit", "-m", "guestbook"], extra, first_limit);
    eprintln!(
        "first commit, including the hook's installation: {:.1}s",
        refused.elapsed.as_secs_f64()
    );
    assert_ne!(
        refused.code, 0,
        "the commit went through:\n{}",
        refused.text
    );
    for needle in [
        "gitops-lint",
        "Failed",
        "sync-option-invalid",
        "apps/guestbook.yaml",
    ] {
        assert!(refused.text.contains(needle), "{needle}:\n{}", refused.text);
    }
    assert_eq!(setup.commits(), "1", "no commit was made");

    std::fs::write(
        &app,
        BAD_APP.replace("CreateNamespace=True", "CreateNamespace=true"),
    )
    .unwrap();
    setup.git(&["add", "apps/guestbook.yaml"]);
    let accepted = setup.run("git", &["commit", "-m", "guestbook"], extra, SHORT);
    eprintln!(
        "second commit, hook installed: {:.1}s",
        accepted.elapsed.as_secs_f64()
    );
    assert_eq!(accepted.code, 0, "{}", accepted.text);
    assert!(accepted.text.contains("Passed"), "{}", accepted.text);
    assert_eq!(setup.commits(), "2");
}

#[test]
#[cfg_attr(not(any(has_pre_commit, ci)), ignore = "pre-commit is not on PATH")]
fn the_hook_refuses_a_bad_commit_and_lets_the_fix_through() {
    require_pre_commit();
    let setup = Setup::new("gitops-lint");
    refuses_then_accepts(&setup, &[], Duration::from_secs(600));
}

/// A PATH on which `gitops-lint` is the test build.
fn path_with_the_test_build() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_gitops-lint"));
    let mut dirs = vec![bin.parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    std::env::join_paths(dirs).unwrap()
}

/// The system hooks need no Rust: they run the `gitops-lint` on PATH, and say so when there is
/// none.
#[test]
#[cfg_attr(not(any(has_pre_commit, ci)), ignore = "pre-commit is not on PATH")]
fn the_system_hook_runs_the_binary_on_path() {
    require_pre_commit();
    let setup = Setup::new("gitops-lint-system");
    let app = setup.repo.join("apps/guestbook.yaml");
    std::fs::write(&app, BAD_APP).unwrap();
    setup.git(&["add", "apps/guestbook.yaml"]);
    // Every program of PATH but gitops-lint.
    let bare = tempfile::tempdir().unwrap();
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let target = bare.path().join(entry.file_name());
            if entry.file_name() != "gitops-lint" && !target.exists() {
                std::os::unix::fs::symlink(entry.path(), target).ok();
            }
        }
    }
    let missing = setup.run(
        "git",
        &["commit", "-m", "guestbook"],
        &[("PATH", bare.path().as_os_str())],
        SHORT,
    );
    assert_ne!(missing.code, 0, "{}", missing.text);
    assert!(
        missing.text.contains("Executable `gitops-lint` not found"),
        "{}",
        missing.text
    );
    assert_eq!(setup.commits(), "1");

    let path = path_with_the_test_build();
    refuses_then_accepts(&setup, &[("PATH", &path)], SHORT);
}

#[test]
#[cfg_attr(not(any(has_pre_commit, ci)), ignore = "pre-commit is not on PATH")]
fn the_fixing_system_hook_fixes_the_staged_file_and_stops_the_commit() {
    require_pre_commit();
    let setup = Setup::new("gitops-lint-fix-system");
    let path = path_with_the_test_build();
    let app = setup.repo.join("apps/guestbook.yaml");
    std::fs::write(&app, BAD_APP).unwrap();
    setup.git(&["add", "apps/guestbook.yaml"]);
    let stopped = setup.run(
        "git",
        &["commit", "-m", "guestbook"],
        &[("PATH", &path)],
        SHORT,
    );
    assert_ne!(stopped.code, 0, "{}", stopped.text);
    assert!(
        stopped.text.contains("files were modified by this hook"),
        "{}",
        stopped.text
    );
    let fixed = std::fs::read_to_string(&app).unwrap();
    assert_eq!(
        fixed,
        BAD_APP.replace("CreateNamespace=True", "CreateNamespace=true")
    );
    assert_eq!(setup.commits(), "1");
    // The fix, reviewed and staged, commits.
    setup.git(&["add", "apps/guestbook.yaml"]);
    let accepted = setup.run(
        "git",
        &["commit", "-m", "guestbook"],
        &[("PATH", &path)],
        SHORT,
    );
    assert_eq!(accepted.code, 0, "{}", accepted.text);
    assert_eq!(setup.commits(), "2");
}
