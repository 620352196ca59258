//! Every rule has a doc and fixtures; every `fires*` document triggers its rule, no `ok*`
//! document does. The rendered output of each fixture folder is snapshotted.

mod common;

use common::{json, root, run, stable};
use std::path::{Path, PathBuf};

fn rule_ids() -> Vec<String> {
    let out = run(&["rules"]);
    assert_eq!(out.code, 0);
    out.stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

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

fn lines_of(report: &serde_json::Value, rule: &str) -> Vec<usize> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
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
        for file in &fires {
            let out = run(&["--format", "json", "--fail-on", "never", &rel(file)]);
            let lines = lines_of(&json(&out), &id);
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
        for file in &oks {
            let out = run(&["--format", "json", "--fail-on", "never", &rel(file)]);
            let lines = lines_of(&json(&out), &id);
            if !lines.is_empty() {
                failures.push(format!("{} triggers {id} at lines {lines:?}", rel(file)));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn rule_fixture_output_is_stable() {
    for id in rule_ids() {
        let dir = format!("fixtures/rules/{id}");
        let human = run(&["--fail-on", "never", &dir]);
        insta::assert_snapshot!(format!("human-{id}"), stable(&human.stdout));
        let machine = run(&["--format", "json", "--fail-on", "never", &dir]);
        insta::assert_snapshot!(format!("json-{id}"), machine.stdout);
    }
}
