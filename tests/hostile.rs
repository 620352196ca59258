//! Hostile and broken input: every case ends quickly with a diagnostic, and the good file next
//! to it is still linted.

mod common;

use common::{json, run_in};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

/// A file with one known finding, to prove the run went on.
const GOOD: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: good, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: a}
";

fn lint_dir(setup: impl FnOnce(&Path)) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    setup(dir.path());
    let run = run_in(
        dir.path(),
        &["--format", "json", "--fail-on", "never", "."],
        LIMIT,
    );
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = json(&run);
    let good = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "default-project" && f["file"] == "good.yaml");
    assert!(good, "the good file was not linted: {report:#}");
    report
}

fn rules_in(report: &serde_json::Value, file: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == file)
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn billion_laughs_is_refused_quickly() {
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (i, c) in ('b'..='j').enumerate() {
        let prev = (b'a' + i as u8) as char;
        bomb.push_str(&format!(
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    let report = lint_dir(|d| std::fs::write(d.join("bomb.yaml"), &bomb).unwrap());
    assert_eq!(rules_in(&report, "bomb.yaml"), ["invalid-yaml"]);
}

#[test]
fn quadratic_aliases_are_bounded() {
    // Each line refers to the previous one twice: linear text, exponential tree.
    let mut text = String::from("l0: &l0 [x]\n");
    for i in 1..60 {
        text.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
    }
    let report = lint_dir(|d| std::fs::write(d.join("aliases.yaml"), &text).unwrap());
    assert_eq!(rules_in(&report, "aliases.yaml"), ["invalid-yaml"]);
}

#[test]
fn deep_nesting_is_refused() {
    let text = "[".repeat(10_000) + &"]".repeat(10_000);
    let block: String = (0..1_000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect();
    let report = lint_dir(|d| {
        std::fs::write(d.join("flow.yaml"), &text).unwrap();
        std::fs::write(d.join("block.yaml"), &block).unwrap();
    });
    assert_eq!(rules_in(&report, "flow.yaml"), ["invalid-yaml"]);
    assert_eq!(rules_in(&report, "block.yaml"), ["invalid-yaml"]);
}

#[test]
fn encodings_and_binary_files_are_reported() {
    let report = lint_dir(|d| {
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("a: b\n".encode_utf16().flat_map(|u| u.to_le_bytes()))
            .collect();
        std::fs::write(d.join("utf16.yaml"), utf16).unwrap();
        std::fs::write(d.join("latin1.yaml"), b"name: caf\xe9\n").unwrap();
        std::fs::write(d.join("binary.yaml"), b"\x7fELF\x00\x00\x01").unwrap();
        std::fs::write(d.join("bom-crlf.yaml"), "\u{feff}a: b\r\nc: d\r\n").unwrap();
    });
    for file in ["utf16.yaml", "latin1.yaml", "binary.yaml"] {
        assert_eq!(rules_in(&report, file), ["invalid-yaml"], "{file}");
    }
    assert!(rules_in(&report, "bom-crlf.yaml").is_empty());
}

#[test]
fn oversized_files_are_skipped_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    std::fs::write(dir.path().join("big.yaml"), "a: b\n".repeat(1000)).unwrap();
    let run = run_in(
        dir.path(),
        &["--format", "json", "--max-file-size", "1000", "."],
        LIMIT,
    );
    let report = json(&run);
    let skipped = &report["summary"]["files_skipped"];
    assert_eq!(skipped[0]["path"], "big.yaml");
    assert_eq!(skipped[0]["reason"], "too-large");
    assert_eq!(report["summary"]["files_scanned"], 1);
}

#[cfg(unix)]
#[test]
fn symlink_loops_and_fifos_do_not_hang() {
    let report = lint_dir(|d| {
        std::fs::create_dir(d.join("loop")).unwrap();
        std::os::unix::fs::symlink("..", d.join("loop/up")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("escape.yaml")).unwrap();
        let fifo = d.join("pipe.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    });
    assert!(rules_in(&report, "escape.yaml").is_empty());
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(|s| s["path"] == "pipe.yaml"),
        "{skipped:?}"
    );
}

#[test]
fn helm_templates_are_skipped_not_reported() {
    let report = lint_dir(|d| {
        std::fs::create_dir_all(d.join("chart/templates")).unwrap();
        std::fs::write(
            d.join("chart/Chart.yaml"),
            "apiVersion: v2\nname: c\nversion: 0.1.0\n",
        )
        .unwrap();
        std::fs::write(
            d.join("chart/templates/dep.yaml"),
            "{{- if .Values.x }}\na: b\n{{- end }}\n",
        )
        .unwrap();
        std::fs::write(
            d.join("loose-template.yaml"),
            "kind: {{ .Kind }}\n  bad: [\n",
        )
        .unwrap();
    });
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    let reasons: Vec<_> = skipped
        .iter()
        .map(|s| (s["path"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    assert!(
        reasons.contains(&("chart/templates/dep.yaml", "helm-template")),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("loose-template.yaml", "helm-template")),
        "{reasons:?}"
    );
    assert!(rules_in(&report, "loose-template.yaml").is_empty());
}

#[test]
fn a_broken_document_does_not_hide_the_next_one() {
    let report = lint_dir(|d| {
        let text = format!("a: [1\n---\n{GOOD}");
        std::fs::write(d.join("multi.yaml"), text).unwrap();
    });
    assert_eq!(
        rules_in(&report, "multi.yaml"),
        ["invalid-yaml", "default-project"]
    );
}

fn messages(report: &serde_json::Value, rule: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            format!(
                "{}:{} {}",
                f["file"].as_str().unwrap(),
                f["start"]["line"],
                f["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn kustomizations_that_loop_or_leave_the_repository_are_refused() {
    let report = lint_dir(|d| {
        for (dir, next) in [("a", "../b"), ("b", "../c"), ("c", "../a")] {
            std::fs::create_dir(d.join(dir)).unwrap();
            std::fs::write(
                d.join(dir).join("kustomization.yaml"),
                format!("resources:\n  - {next}\n"),
            )
            .unwrap();
        }
        std::fs::create_dir(d.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("out/etc")).unwrap();
        std::fs::write(
            d.join("out/kustomization.yaml"),
            "resources:\n  - etc\n  - ../../../../../../etc/passwd\n  - /etc/hosts\n",
        )
        .unwrap();
    });
    let found = messages(&report, "kustomize-error");
    let has = |file: &str, needle: &str| {
        found
            .iter()
            .any(|m| m.starts_with(file) && m.contains(needle))
    };
    assert!(has("c/kustomization.yaml", "cycle"), "{found:#?}");
    assert!(
        has("out/kustomization.yaml:2", "symbolic link"),
        "{found:#?}"
    );
    assert!(
        has("out/kustomization.yaml:3", "outside the repository"),
        "{found:#?}"
    );
    assert!(
        has("out/kustomization.yaml:4", "absolute path"),
        "{found:#?}"
    );
}
