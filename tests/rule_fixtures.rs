//! Every rule has a doc and fixtures; every `fires*` document triggers its rule, no `ok*`
//! document does. A fixture may also be a folder holding a small repository (for rules that
//! look across files): there the lines marked `# expect: <rule>` are exactly the lines the
//! rule reports. The rendered output of each fixture folder, linted with its rule alone, is
//! snapshotted.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{json, marks, root, rule_ids, run, stable};
use std::path::{Path, PathBuf};

fn fixture_files(id: &str, prefix: &str) -> Vec<PathBuf> {
    let dir = root().join("fixtures/rules").join(id);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|_| panic!("missing fixture folder {}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    files.sort();
    files
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap().display().to_string()
}

/// Line ranges (1-based, inclusive) of the documents that hold more than comments, except
/// those marked `# context:`, which only set the scene for the others.
fn documents(text: &str) -> Vec<(usize, usize)> {
    let mut docs = Vec::new();
    let mut start = 1;
    let mut content = false;
    let mut context = false;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if *line == "---" || line.starts_with("--- ") {
            if content && !context {
                docs.push((start, n - 1));
            }
            start = n + 1;
            content = false;
            context = false;
        } else if line.starts_with("# context:") {
            context = true;
        } else if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            content = true;
        }
    }
    if content && !context {
        docs.push((start, lines.len()));
    }
    docs
}

/// `(file relative to the case, line)` of every finding of `rule`.
fn findings_in(report: &serde_json::Value, rule: &str, dir: &Path) -> Vec<(String, usize)> {
    let prefix = rel(dir);
    let mut out: Vec<(String, usize)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            let file = f["file"].as_str().unwrap();
            let file = file
                .strip_prefix(&prefix)
                .unwrap_or(file)
                .trim_start_matches('/')
                .to_string();
            (file, f["start"]["line"].as_u64().unwrap() as usize)
        })
        .collect();
    out.sort();
    out
}

/// Lines of the findings of `rule` in `file`. A file is linted in the folder that holds its
/// rule's fixtures, which is marked as a repository root: what the other files there cause
/// may be reported too, in them.
fn lines_of(report: &serde_json::Value, rule: &str, file: &Path) -> Vec<usize> {
    let file = rel(file);
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule && f["file"] == file.as_str())
        .map(|f| f["start"]["line"].as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn every_rule_has_docs_and_fixtures_that_behave() {
    let mut failures = Vec::new();
    for id in rule_ids() {
        let doc = std::fs::read_to_string(root().join("rules").join(format!("{id}.md")))
            .unwrap_or_default();
        for heading in [
            format!("# {id}\n"),
            "## What it does".into(),
            "## Why is this bad?".into(),
            "## Example".into(),
            "## Use instead".into(),
            "## Fix".into(),
            "## References".into(),
        ] {
            if !doc.contains(&heading) {
                failures.push(format!("rules/{id}.md lacks `{}`", heading.trim()));
            }
        }
        let fires = fixture_files(&id, "fires");
        let oks = fixture_files(&id, "ok");
        if fires.is_empty() || oks.is_empty() {
            failures.push(format!("{id}: needs fires*.yaml and ok*.yaml fixtures"));
        }
        for dir in fires.iter().chain(&oks).filter(|p| p.is_dir()) {
            let out = run(&["--format", "json", "--fail-on", "never", &rel(dir)]);
            let found = findings_in(&json(&out), &id, dir);
            let want = marks(dir, &id);
            if found != want {
                failures.push(format!(
                    "{}: {id} reported at {found:?}, expected at {want:?}",
                    rel(dir)
                ));
            }
        }
        for file in fires.iter().filter(|p| p.is_file()) {
            let out = run(&["--format", "json", "--fail-on", "never", &rel(file)]);
            let lines = lines_of(&json(&out), &id, file);
            let text = std::fs::read(file).unwrap();
            match std::str::from_utf8(&text) {
                Ok(text) if id != "invalid-yaml" => {
                    for (a, b) in documents(text) {
                        if !lines.iter().any(|l| (a..=b).contains(l)) {
                            failures
                                .push(format!("{}: lines {a}-{b} do not trigger {id}", rel(file)));
                        }
                    }
                }
                _ if lines.is_empty() => {
                    failures.push(format!("{} does not trigger {id}", rel(file)))
                }
                _ => {}
            }
        }
        for file in oks.iter().filter(|p| p.is_file()) {
            let out = run(&["--format", "json", "--fail-on", "never", &rel(file)]);
            let lines = lines_of(&json(&out), &id, file);
            if !lines.is_empty() {
                failures.push(format!("{} triggers {id} at lines {lines:?}", rel(file)));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Each rule's fixtures, linted with that rule alone: its snapshot changes only when the rule
/// (or what every rule shares) does. `unused-suppression` judges the other rules'
/// suppressions, and a suppression of a rule that does not run is never called unused: its
/// fixtures run every rule.
#[test]
fn rule_fixture_output_is_stable() {
    for id in rule_ids() {
        let dir = format!("fixtures/rules/{id}");
        let select = if id == "unused-suppression" {
            "all"
        } else {
            id.as_str()
        };
        let human = run(&["--fail-on", "never", "--select", select, &dir]);
        insta::assert_snapshot!(format!("human-{id}"), stable(&human.stdout));
        let json = [
            "--format",
            "json",
            "--fail-on",
            "never",
            "--select",
            select,
            &dir,
        ];
        insta::assert_snapshot!(format!("json-{id}"), run(&json).stdout);
    }
}
