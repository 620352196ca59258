//! `--context FILE` must report what a full run of the repository reports about FILE: every
//! finding whose primary location is in FILE, and nothing a full run would not report. Checked
//! for every manifest of every repository-shaped fixture (the example and fleet repositories,
//! and each multi-file rule fixture), so that narrowing what is parsed never changes a verdict.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::run_in;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Findings a `--context` run cannot see yet, by fixture case and rule: two Applications that
/// deploy the same object from separate copies of it. Judging that takes every Application's
/// render, which a context run on one of the copies does not read.
const KNOWN_GAPS: &[(&str, &str)] = &[("shared-resource/fires-two-copies-once", "shared-resource")];

fn repositories() -> Vec<PathBuf> {
    let root = common::root().join("fixtures");
    let mut repos = vec![root.join("example-repo"), root.join("fleet-repo")];
    for rule in std::fs::read_dir(root.join("rules")).unwrap() {
        let rule = rule.unwrap().path();
        for case in std::fs::read_dir(&rule).unwrap() {
            let case = case.unwrap().path();
            if case.is_dir() {
                repos.push(case);
            }
        }
    }
    repos.sort();
    repos
}

fn manifests(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            manifests(&p, out);
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(p);
        }
    }
}

/// A finding by its rule, severity and place. (Its message names the first of the objects
/// that share it: a run that reads fewer overlays of a base may name another.)
fn key(f: &Value) -> String {
    format!(
        "{} {} {}:{}:{}",
        f["rule"], f["severity"], f["file"], f["start"]["line"], f["start"]["column"]
    )
}

fn lint(dir: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--format", "json", "--fail-on", "never"];
    all.extend_from_slice(args);
    let run = run_in(dir, &all, LIMIT);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    common::json(&run)["findings"].as_array().unwrap().clone()
}

#[test]
fn context_runs_report_what_full_runs_report_about_the_file() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for repo in repositories() {
        // Paths as the linter writes them: relative to the repository, run from inside it.
        let full: Vec<Value> = lint(&repo, &["."]);
        let full_keys: BTreeSet<String> = full.iter().map(key).collect();
        let mut files = Vec::new();
        manifests(&repo, &mut files);
        for file in files {
            let rel = file
                .strip_prefix(&repo)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let narrowed = lint(&repo, &["--context", &rel]);
            checked += 1;
            let got: BTreeSet<String> = narrowed.iter().map(key).collect();
            for k in got.difference(&full_keys) {
                failures.push(format!(
                    "{}: --context {rel} reports what a full run does not: {k}",
                    repo.display()
                ));
            }
            for f in full.iter().filter(|f| f["file"] == rel.as_str()) {
                let gap = KNOWN_GAPS
                    .iter()
                    .any(|(case, rule)| repo.ends_with(case) && f["rule"] == *rule);
                if !got.contains(&key(f)) && !gap {
                    failures.push(format!(
                        "{}: --context {rel} misses {}",
                        repo.display(),
                        key(f)
                    ));
                }
            }
        }
    }
    assert!(checked > 200, "only {checked} files checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// With `--cache`, a context run reports exactly what it reports without: on a cold cache, on a
/// warm one, and right after an edit that makes another Application render the changed file
/// (an entry that outlived its file would leave that Application out).
#[test]
fn cached_context_runs_report_what_uncached_runs_report() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    common::copy_tree(&common::root().join("fixtures/fleet-repo"), &repo);
    let cache = work.path().join("cache");
    let flag = format!("--cache-dir={}", cache.display());
    let changed = "services/worker/overlays/prod/kustomization.yaml";
    // Only files left alone for a few seconds are stored.
    std::thread::sleep(Duration::from_millis(3200));
    let plain = lint(&repo, &["--context", changed]);
    assert!(
        !plain.is_empty(),
        "the fixture should have findings in {changed}"
    );
    assert_eq!(lint(&repo, &[&flag, "--context", changed]), plain, "cold");
    let stored: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(stored.len(), 1, "one cache file per repository and build");
    assert_eq!(lint(&repo, &[&flag, "--context", changed]), plain, "warm");

    let app = repo.join("apps/prod/web.yaml");
    let text = std::fs::read_to_string(&app).unwrap();
    let edited = text.replace(
        "path: services/web/overlays/prod",
        "path: services/worker/overlays/prod",
    );
    assert_ne!(edited, text);
    std::fs::write(&app, edited).unwrap();
    let after = lint(&repo, &["--context", changed]);
    assert_ne!(after, plain, "the edit should change what is reported");
    assert_eq!(
        lint(&repo, &[&flag, "--context", changed]),
        after,
        "after the edit"
    );
    assert_eq!(
        lint(&repo, &[&flag, "--context", changed]),
        after,
        "warm again"
    );

    // `--cache` alone, before the changed files as the pre-commit hook writes it, keeps the
    // cache under $XDG_CACHE_HOME.
    let xdg = work.path().join("xdg");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gitops-lint"));
    cmd.args([
        "--format",
        "json",
        "--fail-on",
        "never",
        "--context",
        "--cache",
    ])
    .arg(changed)
    .current_dir(&repo)
    .env("XDG_CACHE_HOME", &xdg);
    let run = common::run_command(cmd, "gitops-lint --cache", LIMIT);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(common::json(&run)["findings"].as_array().unwrap(), &after);
    let stored: Vec<_> = std::fs::read_dir(xdg.join("gitops-lint"))
        .unwrap()
        .collect();
    assert_eq!(stored.len(), 1, "the bare flag's cache file");
}
