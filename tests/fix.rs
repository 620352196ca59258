//! `--fix` on before/after fixture pairs: `fixtures/fix/<case>/before` is copied, fixed with
//! the arguments in `<case>/args` (if any), and must equal `<case>/after` byte for byte. Then
//! a second `--fix` must change nothing, `--diff` must agree, and the fixed tree must lint
//! with no new finding and nothing left that the same flags would fix.
//!
//! `UPDATE_FIXES=1 cargo test --test fix` rewrites the `after` trees from the output; review
//! the diff before committing it.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{copy_tree, run_in};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn cases() -> Vec<PathBuf> {
    let dir = common::root().join("fixtures/fix");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures/fix exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("before").is_dir())
        .collect();
    cases.sort();
    cases
}

/// Every file under `dir`, by relative path, with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn args_of(case: &Path) -> Vec<String> {
    std::fs::read_to_string(case.join("args"))
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// `(rule, file, object)` of every finding, with how many times it occurs.
fn finding_keys(report: &serde_json::Value) -> BTreeMap<(String, String, String), usize> {
    let mut keys = BTreeMap::new();
    for f in report["findings"].as_array().unwrap() {
        let key = (
            f["rule"].as_str().unwrap().to_string(),
            f["file"].as_str().unwrap().to_string(),
            format!("{}/{}", f["object"]["kind"], f["object"]["name"]),
        );
        *keys.entry(key).or_default() += 1;
    }
    keys
}

fn lint_json(dir: &Path, extra: &[String]) -> serde_json::Value {
    // The case's settings (version, repository URLs) decide which rules fire: the re-lint
    // uses them too.
    let settings: Vec<&str> = extra
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--unsafe-fixes")
        .collect();
    common::lint_json(dir, "repo", &settings)
}

/// Runs one case; returns the `(rule, applicability)` of every fix its linting offered.
fn check_case(case: &Path) -> Result<Vec<(String, String)>, String> {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let extra = args_of(case);
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    copy_tree(&case.join("before"), &repo);
    let before_report = lint_json(work.path(), &extra);
    let offered: Vec<(String, String)> = before_report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["fix"].is_object())
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["fix"]["applicability"].as_str().unwrap().to_string(),
            )
        })
        .collect();

    let mut args: Vec<&str> = vec!["repo", "--diff", "--no-config"];
    args.extend(extra.iter().map(String::as_str));
    let diff = run_in(work.path(), &args, LIMIT);
    if tree(&repo) != tree(&case.join("before")) {
        return Err(format!("{name}: --diff changed files"));
    }

    args[1] = "--fix";
    let fixed = run_in(work.path(), &args, LIMIT);
    if fixed.code == 2 {
        return Err(format!("{name}: --fix failed: {}", fixed.stderr));
    }
    let got = tree(&repo);
    if std::env::var_os("UPDATE_FIXES").is_some() {
        let after = case.join("after");
        let _ = std::fs::remove_dir_all(&after);
        copy_tree(&repo, &after);
    }
    let want = tree(&case.join("after"));
    if got != want {
        let mut msg = format!("{name}: --fix output differs from after/\n");
        for (rel, bytes) in &got {
            if want.get(rel) != Some(bytes) {
                msg.push_str(&format!(
                    "--- {rel} (got)\n{}\n",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
        return Err(msg);
    }
    let changed = got != tree(&case.join("before"));
    if (diff.code == 1) != changed || diff.stdout.is_empty() == changed {
        return Err(format!(
            "{name}: --diff exit {} and {} bytes of diff, but --fix {} files\n{}",
            diff.code,
            diff.stdout.len(),
            if changed { "changed" } else { "did not change" },
            diff.stdout
        ));
    }

    // Idempotent: nothing left to do.
    let again = run_in(work.path(), &args, LIMIT);
    if tree(&repo) != got {
        return Err(format!(
            "{name}: a second --fix changed files: {}",
            again.stderr
        ));
    }
    args[1] = "--diff";
    let diff2 = run_in(work.path(), &args, LIMIT);
    if diff2.code != 0 || !diff2.stdout.is_empty() {
        return Err(format!("{name}: --diff after --fix: {}", diff2.stdout));
    }

    // Convergent: no new finding, and none left that these flags would fix.
    let after_report = lint_json(work.path(), &extra);
    let before_keys = finding_keys(&before_report);
    for (key, n) in finding_keys(&after_report) {
        if before_keys.get(&key).copied().unwrap_or(0) < n {
            return Err(format!("{name}: new finding after --fix: {key:?}"));
        }
    }
    let unsafe_ok = extra.iter().any(|a| a == "--unsafe-fixes");
    if let Some(left) = common::still_fixable(&after_report, unsafe_ok) {
        return Err(format!("{name}: still fixable after --fix: {left}"));
    }
    Ok(offered)
}

#[test]
fn fix_pairs_apply_exactly_and_converge() {
    let cases = cases();
    let mut failures = Vec::new();
    let mut offered = std::collections::BTreeSet::new();
    for case in &cases {
        match check_case(case) {
            Ok(fixes) => offered.extend(fixes),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The registry says which rules fix and how safely; the fixtures show each of them.
    for r in gitops_lint::rules::RULES {
        let (rule, documented) = (r.id, r.fix.as_str());
        let seen: Vec<&String> = offered
            .iter()
            .filter(|(r, _)| r == rule)
            .map(|(_, a)| a)
            .collect();
        match documented {
            "none" => assert!(
                seen.is_empty(),
                "{rule}: documented without a fix, offers {seen:?}"
            ),
            "unsafe" => assert!(
                !seen.is_empty() && seen.iter().all(|a| *a == "unsafe"),
                "{rule}: documented as unsafe, offers {seen:?} in fixtures/fix"
            ),
            _ => assert!(
                seen.iter().any(|a| *a == "safe"),
                "{rule}: documented as safe, no safe fix in fixtures/fix ({seen:?})"
            ),
        }
    }
    assert!(
        cases.len() >= 20,
        "expected fix fixtures, found {}",
        cases.len()
    );
}

#[test]
fn fixed_files_keep_their_permissions_and_no_temporary_file_is_left() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    copy_tree(
        &common::root().join("fixtures/fix/prune-last-block/before"),
        &repo,
    );
    let file = tree(&repo).keys().next().unwrap().clone();
    let path = repo.join(&file);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let run = run_in(
        work.path(),
        &["repo", "--fix", "--unsafe-fixes", "--no-config"],
        LIMIT,
    );
    assert_ne!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("fixed 1 finding in 1 file"),
        "{}",
        run.stderr
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the fixed file keeps its permissions");
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("gitops-lint"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn without_fix_nothing_is_written_and_fixes_are_announced() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    copy_tree(
        &common::root().join("fixtures/fix/prune-last-block/before"),
        &repo,
    );
    let before = tree(&repo);
    let run = run_in(work.path(), &["repo", "--no-config"], LIMIT);
    assert_eq!(tree(&repo), before);
    assert!(
        run.stdout.contains("1 fixable with --fix --unsafe-fixes."),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("fix with --fix --unsafe-fixes: add `PruneLast=true` to syncOptions"),
        "{}",
        run.stdout
    );
    let bad = run_in(work.path(), &["repo", "--unsafe-fixes"], LIMIT);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("--unsafe-fixes needs --fix or --diff"));
}

#[test]
fn only_files_inside_the_linted_paths_are_written() {
    let work = tempfile::tempdir().unwrap();
    let source = common::root().join("fixtures/fix/prune-last-block/before/apps/payments.yaml");
    let text = std::fs::read_to_string(&source).unwrap();
    let repo = work.path().join("repo");
    std::fs::create_dir_all(repo.join("apps")).unwrap();
    std::fs::write(repo.join("apps/one.yaml"), &text).unwrap();
    std::fs::write(
        repo.join("apps/two.yaml"),
        text.replace("payments-api", "ledger"),
    )
    .unwrap();
    // A file outside the tree, reachable through a symlink inside it.
    std::fs::write(
        work.path().join("outside.yaml"),
        text.replace("payments-api", "x"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../../outside.yaml", repo.join("apps/link.yaml")).unwrap();
    let before = tree(work.path());

    let run = run_in(
        work.path(),
        &[
            "repo/apps/one.yaml",
            "--fix",
            "--unsafe-fixes",
            "--no-config",
        ],
        LIMIT,
    );
    assert_ne!(run.code, 2, "{}", run.stderr);
    let after = tree(work.path());
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(changed, ["repo/apps/one.yaml"], "{}", run.stderr);

    let run = run_in(
        work.path(),
        &["repo", "--fix", "--unsafe-fixes", "--no-config"],
        LIMIT,
    );
    assert_ne!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        tree(work.path())["outside.yaml"],
        before["outside.yaml"],
        "the symlinked file outside the tree is not written"
    );
    assert!(
        run.stderr.contains("fixed 1 finding in 1 file"),
        "{}",
        run.stderr
    );
}
