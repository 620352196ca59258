//! The pre-commit hook (`.pre-commit-hooks.yaml`), installed and run by the real pre-commit.
//!
//! The end-to-end test copies this working tree (without `target/` and `.git/`) into a
//! temporary git repository, so it sees uncommitted changes and does not depend on the current
//! commit, and points a user repository's `.pre-commit-config.yaml` at it. `pre-commit install`
//! then guards `git commit`: the first commit builds the hook with `cargo install` (release, a few
//! minutes; `CARGO_TARGET_DIR` is kept under `target/` so a second local run reuses it) and must
//! be refused for a bad Application, and the fixed file must commit. Without pre-commit the test
//! says SKIPPED, except under CI (`CI` set), where `.ci/run` installs it and a skip would hide
//! the hook.

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

/// False (with a loud message) when pre-commit is missing; under CI that is a failure.
fn require_pre_commit(test: &str) -> bool {
    if pre_commit_available() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "pre-commit is not on PATH under CI: .ci/run installs it"
    );
    eprintln!(
        "SKIPPED: pre-commit not installed, {test} did not run \
         (python3 -m pip install --user 'pre-commit==4.*')"
    );
    false
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

#[test]
fn the_hook_manifest_and_the_readme_snippet() {
    let hooks = manifest();
    let hook = hooks
        .items()
        .iter()
        .find(|h| h.str_at("id") == Some("gitops-lint"))
        .expect("a gitops-lint hook");
    assert_eq!(hook.str_at("language"), Some("rust"));
    assert_eq!(hook.str_at("entry"), Some("gitops-lint --context --cache"));
    assert_eq!(hook.str_at("pass_filenames"), Some("true"));
    // The fixing variant runs the same files through --fix.
    let fixing = hooks
        .items()
        .iter()
        .find(|h| h.str_at("id") == Some("gitops-lint-fix"))
        .expect("a gitops-lint-fix hook");
    assert_eq!(
        fixing.str_at("entry"),
        Some("gitops-lint --context --cache --fix")
    );
    assert_eq!(fixing.str_at("files"), hook.str_at("files"));
    // The files the linter reads as manifests, and no others.
    let files = regex::Regex::new(hook.str_at("files").expect("files")).unwrap();
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

    // The README's config snippet names this hook.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find("## In CI and pre-commit")
        .expect("README has the CI section");
    let snippet = readme[start..]
        .split("```yaml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .find(|b| b.contains("repos:"))
        .expect("a .pre-commit-config.yaml snippet");
    let parsed = yaml::parse(0, snippet, Default::default());
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    let config = &parsed.documents[0].root;
    let repo = &config.get("repos").expect("repos").items()[0];
    assert_eq!(
        repo.str_at("repo"),
        Some("https://github.com/gitops-lint/gitops-lint")
    );
    let ids: Vec<_> = repo
        .get("hooks")
        .expect("hooks")
        .items()
        .iter()
        .filter_map(|h| h.str_at("id"))
        .collect();
    assert_eq!(ids, ["gitops-lint"]);

    if !require_pre_commit("the manifest validation") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("config.yaml");
    std::fs::write(&config_file, snippet).unwrap();
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

#[test]
fn the_hook_refuses_a_bad_commit_and_lets_the_fix_through() {
    if !require_pre_commit("the end-to-end hook test") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let short = Duration::from_secs(120);
    // No core.hooksPath or other global settings from the machine.
    let global = tmp.path().join("gitconfig");
    std::fs::write(&global, "").unwrap();
    let no_global: [(&str, &OsStr); 1] = [("GIT_CONFIG_GLOBAL", global.as_os_str())];
    let git = |dir: &Path, args: &[&str]| ok(run(dir, "git", args, &no_global, short), "git");

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
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: gitops-lint\n",
            hooks.display()
        ),
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "pre-commit config"]);

    let home = tmp.path().join("pre-commit-home");
    let target = root().join("target").join("pre-commit-hook");
    let cache = tmp.path().join("cache");
    let envs: [(&str, &OsStr); 4] = [
        ("PRE_COMMIT_HOME", home.as_os_str()),
        // The hook keeps its cache there rather than in the user's home.
        ("XDG_CACHE_HOME", cache.as_os_str()),
        // `cargo install` builds in a temporary directory unless this is set.
        ("CARGO_TARGET_DIR", target.as_os_str()),
        ("GIT_CONFIG_GLOBAL", global.as_os_str()),
    ];
    ok(
        run(&repo, "pre-commit", &["install"], &envs, short),
        "pre-commit install",
    );

    // A bad Application: the commit is refused and the output names the rule.
    let app = repo.join("apps/guestbook.yaml");
    std::fs::write(&app, BAD_APP).unwrap();
    git(&repo, &["add", "apps/guestbook.yaml"]);
    let build = Duration::from_secs(600);
    let refused = run(&repo, "git", &["commit", "-m", "guestbook"], &envs, build);
    eprintln!(
        "first commit, including the hook's cargo install: {:.1}s",
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
    let count = git(&repo, &["rev-list", "--count", "HEAD"]).text;
    assert_eq!(count.trim(), "1", "no commit was made");

    // The fix commits.
    std::fs::write(
        &app,
        BAD_APP.replace("CreateNamespace=True", "CreateNamespace=true"),
    )
    .unwrap();
    git(&repo, &["add", "apps/guestbook.yaml"]);
    let accepted = run(&repo, "git", &["commit", "-m", "guestbook"], &envs, build);
    eprintln!(
        "second commit, hook installed: {:.1}s",
        accepted.elapsed.as_secs_f64()
    );
    assert_eq!(accepted.code, 0, "{}", accepted.text);
    assert!(accepted.text.contains("Passed"), "{}", accepted.text);
    let count = git(&repo, &["rev-list", "--count", "HEAD"]).text;
    assert_eq!(count.trim(), "2");
}
