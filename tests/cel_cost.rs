//! CEL from the linted tree, in the repository's own policies and in its
//! ValidatingAdmissionPolicies, costs what it is charged: an expression that makes a huge
//! value, or a regular expression that drives the matcher onto its slow path, stops at its
//! budget, in bounded time and memory.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{json, run_in, Run};
use std::path::Path;
use std::time::Duration;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `'0123456789'` with `levels` rounds of `.replace('', '0123456789')`: 120, 1,330, 14,640,
/// 161,050 bytes… from a few dozen bytes of expression.
fn replaced(levels: usize) -> String {
    let mut s = "'0123456789'".to_string();
    for _ in 0..levels {
        s.push_str(".replace('', '0123456789')");
    }
    s
}

/// A comprehension nest that copies its variable twice at each of `levels` levels.
fn doubled(seed: &str, levels: usize) -> String {
    let mut body = "true".to_string();
    for i in (1..=levels).rev() {
        body = format!("[[v{p}, v{p}]].all(v{i}, {body})", p = i - 1);
    }
    format!("[{seed}].all(v0, {body})")
}

/// A repository whose Application deploys `objects` (a file each) and whose admission policy
/// (a VAP and its binding) validates them with `validation`.
fn repository(dir: &Path, objects: &[String], validation: &str) {
    write(dir, ".git/HEAD", "ref: refs/heads/main\n");
    write(
        dir,
        ".gitops-lint.yaml",
        "repo-urls:\n  - https://github.com/example/fleet.git\n",
    );
    for (i, o) in objects.iter().enumerate() {
        write(dir, &format!("services/web/o{i:02}.yaml"), o);
    }
    write(
        dir,
        "apps/web.yaml",
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://github.com/example/fleet.git', targetRevision: main, path: services/web}
  destination: {server: 'https://kubernetes.default.svc', namespace: shop}
",
    );
    write(
        dir,
        "policies/vap.yaml",
        &format!(
            "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: costly}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [\"\"]
        apiVersions: [\"v1\"]
        operations: [\"CREATE\", \"UPDATE\"]
        resources: [\"configmaps\"]
  validations:
    - expression: {validation:?}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: costly}}
spec:
  policyName: costly
  validationActions: [Deny]
"
        ),
    );
}

fn lint(dir: &Path) -> (Run, serde_json::Value) {
    let out = run_in(
        dir,
        &["--format", "json", "--fail-on", "never", "."],
        Duration::from_secs(120),
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let report = json(&out);
    (out, report)
}

fn messages(report: &serde_json::Value, rule: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// Peak memory a run with these expressions may reach: what a run of an empty repository
/// takes, and room for the largest value one evaluation may make, several times over.
const MEMORY_KIB: u64 = 400 << 10;

/// Expressions of a few hundred bytes, in policy files and in an admission policy, whose
/// results would be gigabytes (a replacement of every character by a long text, a join
/// with a long separator, copies doubled through comprehension variables): each stops at
/// its budget, and the run stays small and quick.
#[test]
fn growing_values_stop_at_the_budget_in_bounded_memory() {
    let list = format!("{}.split('')", replaced(3));
    let conditions = [
        format!("{}.replace('', {}) != ''", replaced(4), replaced(4)),
        format!("size({list}.join({})) > 0", replaced(4)),
        doubled(&replaced(3), 40),
        format!(
            "object.data.big.replace('', object.data.big) != '' || {}",
            doubled("object.data.big", 40)
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(100_000);
    repository(
        dir.path(),
        &[format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata:\n  big: {big}\n"
        )],
        &doubled(&replaced(3), 40),
    );
    for (i, cond) in conditions.iter().enumerate() {
        write(
            dir.path(),
            &format!(".gitops-lint/policies/p{i}.yaml"),
            &format!(
                "id: grows-{i}\nmessage: m\nmatch: {{kind: ConfigMap}}\ncondition: {cond:?}\n"
            ),
        );
    }
    let (out, report) = lint(dir.path());
    for i in 0..conditions.len() {
        let mine = messages(&report, &format!("grows-{i}"));
        assert!(
            !mine.is_empty() && mine.iter().all(|m| m.contains("cost budget exceeded")),
            "grows-{i}: {mine:?}"
        );
    }
    let vap = messages(&report, "admission-policy-violation");
    assert!(vap.iter().any(|m| m.contains("cost budget")), "{report:#}");
    assert!(
        out.max_rss_kib < MEMORY_KIB,
        "peak memory {} MiB",
        out.max_rss_kib >> 10
    );
    assert!(out.elapsed < Duration::from_secs(60), "{:?}", out.elapsed);
}

/// `len` bytes of `a` and `b` in no pattern, the same on every run.
fn coin_flips(len: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x & 1 == 0 {
                'a'
            } else {
                'b'
            }
        })
        .collect()
}

/// Regular expressions that drive the matcher off its lazy DFA (a word boundary on non-ASCII
/// text, a pattern whose DFA would have millions of states) over large texts, in policy
/// files and an admission policy, on many objects: each search is priced by the work its
/// engine may do, so these stop at their budget and the run takes seconds, not the
/// policies' whole budget in minutes of matching. Word classes and boundaries are RE2's,
/// ASCII: `caf\b` matches `café`, as in the API server.
#[test]
fn regular_expressions_cost_what_the_matcher_does() {
    let dir = tempfile::tempdir().unwrap();
    let accents = "é ".repeat(400_000);
    let flips = coin_flips(1 << 20);
    let objects: Vec<String> = (0..12)
        .map(|i| format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata:\n  word: café\n  text: \"{accents}\"\n  flips: {flips}\n"
        ))
        .collect();
    let costly = [
        "[1, 2, 3, 4, 5, 6, 7, 8].all(i, !object.data.text.matches('\\\\b\\\\w+\\\\b\\\\s\\\\d'))",
        "[1, 2, 3, 4, 5, 6, 7, 8].all(i, !object.data.flips.matches('[ab]*a[ab]{20}c'))",
        "[1, 2, 3, 4, 5, 6, 7, 8].all(i, object.data.text.find('\\\\B\\\\w{3}\\\\B.{4}[0-9]') == '')",
        "[1, 2, 3, 4, 5, 6, 7, 8].all(i, object.data.flips.findAll('a[ab]{20}c').size() == 0)",
    ];
    repository(
        dir.path(),
        &objects,
        "object.data.text.matches('\\\\b\\\\w+\\\\b\\\\s\\\\d') || object.data.flips.matches('[ab]*a[ab]{20}c')",
    );
    for (i, cond) in costly.iter().enumerate() {
        write(
            dir.path(),
            &format!(".gitops-lint/policies/r{i}.yaml"),
            &format!(
                "id: costly-{i}\nmessage: m\nmatch: {{kind: ConfigMap}}\ncondition: {cond:?}\n"
            ),
        );
    }
    write(
        dir.path(),
        ".gitops-lint/policies/word.yaml",
        "id: ascii-boundary\nmessage: m\nmatch: {kind: ConfigMap}\ncondition: \"object.data.word.matches('^caf\\\\\\\\b') && !object.data.word.matches('^caf\\\\\\\\w$') && 'x٣'.matches('^x\\\\\\\\D$')\"\n",
    );
    let (out, report) = lint(dir.path());
    assert!(out.elapsed < Duration::from_secs(30), "{:?}", out.elapsed);
    for i in 0..costly.len() {
        let mine = messages(&report, &format!("costly-{i}"));
        assert!(
            !mine.is_empty() && mine.iter().all(|m| m.contains("not evaluated")),
            "costly-{i}: {mine:?}"
        );
    }
    assert_eq!(messages(&report, "ascii-boundary").len(), 12, "{report:#}");
    let vap = messages(&report, "admission-policy-violation");
    assert!(vap.iter().any(|m| m.contains("cost budget")), "{vap:?}");
}
