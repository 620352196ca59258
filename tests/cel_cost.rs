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

/// A repository whose Application deploys `objects` and whose admission policy (a VAP and
/// its binding) validates them with `validation`.
fn repository(dir: &Path, objects: &str, validation: &str) {
    write(dir, ".git/HEAD", "ref: refs/heads/main\n");
    write(
        dir,
        ".gitops-lint.yaml",
        "repo-urls:\n  - https://github.com/example/fleet.git\n",
    );
    write(dir, "services/web/objects.yaml", objects);
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
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata:\n  big: {big}\n"),
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
