//! `changed::changed_since` against repositories made by the real `git` program.
//!
//! The library never runs `git`; these tests do, to build the repositories. Without `git` on
//! PATH they are ignored, with the reason (see `build.rs`).
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::git;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use gitops_lint::changed::changed_since;

fn require_git() {
    let found = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    common::require_program("git", found, "your system's git package");
}

fn git_stdout(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn init(dir: &Path) {
    git(dir, &["init", "-q"]);
    for (k, v) in [
        ("user.name", "Test"),
        ("user.email", "test@example.com"),
        ("core.autocrlf", "false"),
        ("commit.gpgsign", "false"),
        ("tag.gpgsign", "false"),
    ] {
        git(dir, &["config", k, v]);
    }
}

fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
}

fn rel(paths: &[&str], root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = paths.iter().map(|p| root.join(p)).collect();
    v.sort();
    v
}

/// A repository at `base` and then: committed and uncommitted modifications and additions,
/// a deletion, ignored files, and tracked files that an ignore rule matches.
fn scenario(dir: &Path) {
    init(dir);
    write(dir, ".gitignore", "*.secret\nbuild/\n");
    write(dir, "README.md", "readme\n");
    write(dir, "apps/a.yaml", "kind: A\n");
    write(dir, "apps/b.yaml", "kind: B\n");
    write(dir, "apps/c.yaml", "kind: C\n");
    write(dir, "apps/d.yaml", "kind: D\n");
    write(dir, "apps/same.yaml", "kind: Same\n");
    write(dir, "infra/e.yaml", "kind: E\n");
    write(dir, "infra/deep/f.yaml", "kind: F\n");
    write(dir, "keep.secret", "tracked though ignored\n");
    git(dir, &["add", "-A"]);
    git(dir, &["add", "-f", "keep.secret"]);
    git(dir, &["commit", "-q", "-m", "base"]);
    git(dir, &["tag", "base"]);

    // Committed since base.
    write(dir, "apps/d.yaml", "kind: D\nchanged: true\n");
    write(dir, "apps/new-committed.yaml", "kind: New\n");
    write(dir, "forced.secret", "added with -f\n");
    git(dir, &["add", "-A"]);
    git(dir, &["add", "-f", "forced.secret"]);
    git(dir, &["commit", "-q", "-m", "second"]);

    // Left uncommitted.
    write(dir, "apps/a.yaml", "kind: A\nchanged: true\n");
    write(dir, "apps/untracked.yaml", "kind: Untracked\n");
    write(dir, "infra/staged.yaml", "kind: Staged\n");
    git(dir, &["add", "infra/staged.yaml"]);
    write(dir, ".hidden/h.yaml", "kind: Hidden\n");
    write(dir, "keep.secret", "tracked though ignored, modified\n");
    write(dir, "apps/same.yaml", "kind: Same\n"); // rewritten, same content
    fs::remove_file(dir.join("apps/c.yaml")).unwrap();
    write(dir, "apps/x.secret", "ignored\n");
    write(dir, "build/out.yaml", "ignored\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A mode change alone is not a change of content.
        let b = dir.join("apps/b.yaml");
        fs::set_permissions(&b, fs::Permissions::from_mode(0o755)).unwrap();
        // Symlinks are not followed nor listed.
        std::os::unix::fs::symlink("a.yaml", dir.join("apps/link.yaml")).unwrap();
    }
}

const CHANGED_SINCE_BASE: &[&str] = &[
    ".hidden/h.yaml",
    "apps/a.yaml",
    "apps/d.yaml",
    "apps/new-committed.yaml",
    "apps/untracked.yaml",
    "forced.secret",
    "infra/staged.yaml",
    "keep.secret",
];

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn lists_modified_and_added_files_since_a_revision() {
    require_git();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    scenario(dir);

    let got = changed_since(dir, "base").unwrap();
    assert_eq!(got, rel(CHANGED_SINCE_BASE, dir));

    // A rev-parse expression and a commit id name the same revision.
    assert_eq!(changed_since(dir, "HEAD~1").unwrap(), got);
    assert_eq!(changed_since(dir, "base^{commit}").unwrap(), got);

    // Since HEAD, only the uncommitted changes.
    assert_eq!(
        changed_since(dir, "HEAD").unwrap(),
        rel(
            &[
                ".hidden/h.yaml",
                "apps/a.yaml",
                "apps/untracked.yaml",
                "infra/staged.yaml",
                "keep.secret",
            ],
            dir
        )
    );

    // The same from packed objects, stored as deltas.
    git(dir, &["gc", "-q", "--aggressive"]);
    assert_eq!(changed_since(dir, "base").unwrap(), got);
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn a_subdirectory_root_lists_only_its_files_joined_onto_it() {
    require_git();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    scenario(dir);

    let apps = dir.join("apps");
    assert_eq!(
        changed_since(&apps, "base").unwrap(),
        rel(
            &["a.yaml", "d.yaml", "new-committed.yaml", "untracked.yaml"],
            &apps
        )
    );
    let infra = dir.join("infra");
    assert_eq!(
        changed_since(&infra, "base").unwrap(),
        rel(&["staged.yaml"], &infra)
    );
    let deep = dir.join("infra/deep");
    assert_eq!(changed_since(&deep, "base").unwrap(), Vec::<PathBuf>::new());

    // A directory that did not exist at the revision: all of it is added.
    write(dir, "new/dir/g.yaml", "kind: G\n");
    let new = dir.join("new");
    assert_eq!(
        changed_since(&new, "base").unwrap(),
        rel(&["dir/g.yaml"], &new)
    );
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn a_clean_tree_has_no_changes_since_head() {
    require_git();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    scenario(dir);
    commit_all(dir, "everything");
    // Ignored files remain on disk; they are not changes.
    assert!(dir.join("apps/x.secret").exists());
    assert_eq!(changed_since(dir, "HEAD").unwrap(), Vec::<PathBuf>::new());
    assert_eq!(
        changed_since(&dir.join("apps"), "HEAD").unwrap(),
        Vec::<PathBuf>::new()
    );
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn a_relative_root_is_joined_as_written() {
    require_git();
    let cwd = std::env::current_dir().unwrap();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let Ok(relative) = tmp.path().strip_prefix(&cwd) else {
        eprintln!("SKIPPED: the target directory is not below the current directory");
        return;
    };
    let dir = tmp.path();
    init(dir);
    write(dir, "apps/x.yaml", "kind: X\n");
    commit_all(dir, "one");
    write(dir, "apps/x.yaml", "kind: X\nchanged: true\n");
    assert_eq!(
        changed_since(relative, "HEAD").unwrap(),
        vec![relative.join("apps/x.yaml")]
    );
    // `./` in front is dropped, the way discovery writes paths.
    let dotted = Path::new(".").join(relative);
    assert_eq!(
        changed_since(&dotted, "HEAD").unwrap(),
        vec![relative.join("apps/x.yaml")]
    );
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn unknown_revisions_and_missing_repositories_are_errors() {
    require_git();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    scenario(dir);

    let err = changed_since(dir, "no-such-branch").unwrap_err();
    assert!(err.contains("no-such-branch"), "{err}");
    let err = changed_since(dir, "origin/main").unwrap_err();
    assert!(err.contains("origin/main"), "{err}");
    assert!(err.contains("fetch-depth: 0"), "{err}");

    let plain = tempfile::tempdir().unwrap();
    write(plain.path(), "x.yaml", "kind: X\n");
    let err = changed_since(plain.path(), "HEAD").unwrap_err();
    assert!(err.contains("git repository"), "{err}");

    let err = changed_since(&dir.join("no/such/dir"), "HEAD").unwrap_err();
    assert!(err.contains("no/such/dir"), "{err}");
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn a_shallow_clone_missing_the_revision_suggests_fetching_history() {
    require_git();
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    fs::create_dir(&origin).unwrap();
    scenario(&origin);
    commit_all(&origin, "third");

    let url = format!("file://{}", origin.display());
    git(
        tmp.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let shallow = tmp.path().join("shallow");
    assert_eq!(
        changed_since(&shallow, "HEAD").unwrap(),
        Vec::<PathBuf>::new()
    );
    let err = changed_since(&shallow, "HEAD~1").unwrap_err();
    assert!(err.contains("HEAD~1"), "{err}");
    assert!(err.contains("fetch-depth: 0"), "{err}");

    // A pull request's base commit, named by its id, that the clone does not have.
    let base = git_stdout(&origin, &["rev-parse", "base"]);
    let err = changed_since(&shallow, &base).unwrap_err();
    assert!(err.contains(&base), "{err}");
    assert!(err.contains("fetch-depth: 0"), "{err}");
}

#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn nested_repositories_are_not_entered() {
    require_git();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    init(dir);
    write(dir, "apps/x.yaml", "kind: X\n");
    commit_all(dir, "one");
    let nested = dir.join("vendor/other");
    fs::create_dir_all(&nested).unwrap();
    init(&nested);
    write(&nested, "y.yaml", "kind: Y\n");
    write(dir, "vendor/z.yaml", "kind: Z\n");
    assert_eq!(
        changed_since(dir, "HEAD").unwrap(),
        rel(&["vendor/z.yaml"], dir)
    );
}
