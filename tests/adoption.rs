//! Living with gitops-lint in a real repository: the config file, suppressions in the
//! manifests, and baselines — each checked through the binary, including the awkward cases.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{found, json, run_in};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn lint(dir: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["--format", "json", "--fail-on", "never"];
    args.extend_from_slice(extra);
    args.push(".");
    let out = run_in(dir, &args, LIMIT);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    (out.code, json(&out))
}

fn has(report: &serde_json::Value, rule: &str, file: &str) -> bool {
    found(report).iter().any(|(r, f, _)| r == rule && f == file)
}

/// An Application in the `default` project: `default-project` fires on it.
const DEFAULT_PROJECT_APP: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: NAME, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: a}
";

fn app(name: &str) -> String {
    DEFAULT_PROJECT_APP.replace("NAME", name)
}

#[test]
fn a_config_typo_is_a_usage_error_that_points_into_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.yaml", &app("a"));
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "rules:\n  ignore: [default-projct]\n",
    );
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("unknown rule or category `default-projct`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("did you mean `default-project`?"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(".gitops-lint.yaml:2:12"),
        "{}",
        out.stderr
    );

    write(dir.path(), ".gitops-lint.yaml", "fail_on: error\n");
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("did you mean `fail-on`?"),
        "{}",
        out.stderr
    );

    write(dir.path(), ".gitops-lint.yaml", "exclude: ['docs/[a']\n");
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("is not a valid glob"), "{}", out.stderr);

    // --no-config ignores the broken file.
    let out = run_in(
        dir.path(),
        &["--no-config", "--fail-on", "never", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn config_selects_rules_sets_severity_and_fail_on_but_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "apps/a.yaml", &app("a"));
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "fail-on: error\nrules:\n  severity:\n    default-project: error\n",
    );
    let (_, report) = lint(dir.path(), &[]);
    let f = &report["findings"][0];
    assert_eq!(f["rule"], "default-project");
    assert_eq!(f["severity"], "error");
    // The file's fail-on applies; the flag overrides it.
    assert_eq!(run_in(dir.path(), &["."], LIMIT).code, 1);
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "fail-on: never\nrules:\n  ignore: [access]\n",
    );
    assert_eq!(run_in(dir.path(), &["."], LIMIT).code, 0);
    let (_, report) = lint(dir.path(), &[]);
    assert!(!has(&report, "default-project", "apps/a.yaml"));
    let out = run_in(
        dir.path(),
        &["--no-config", "--fail-on", "warning", "."],
        LIMIT,
    );
    assert_eq!(out.code, 1);
}

#[test]
fn a_per_path_override_disables_a_rule_in_docs_only() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "apps/a.yaml", &app("a"));
    write(dir.path(), "docs/examples/b.yaml", &app("b"));
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "per-path:\n  - paths: ['docs/**']\n    ignore: [default-project]\n",
    );
    let (_, report) = lint(dir.path(), &[]);
    assert!(has(&report, "default-project", "apps/a.yaml"));
    assert!(!has(&report, "default-project", "docs/examples/b.yaml"));
}

#[test]
fn config_command_says_where_each_value_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "# team settings\nargocd-version: '3.2'\nrules:\n  ignore: [default-project]\n",
    );
    let out = run_in(dir.path(), &["config", "."], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("config-command", out.stdout);
}

#[test]
fn comment_directives_suppress_the_node_they_sit_on() {
    let dir = tempfile::tempdir().unwrap();
    // At the end of the line, inside a flow mapping.
    write(
        dir.path(),
        "flow.yaml",
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: flow, namespace: argocd}
spec: {project: default, # gitops-lint: ignore[default-project] sandbox app, reviewed
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD},
  destination: {server: 'https://kubernetes.default.svc', namespace: a}}
",
    );
    // On the line above, without a reason.
    write(
        dir.path(),
        "above.yaml",
        &app("above").replace(
            "  project: default",
            "  # gitops-lint: ignore[default-project]\n  project: default",
        ),
    );
    // A directive for a rule that does not fire there.
    write(
        dir.path(),
        "stale.yaml",
        &app("stale").replace(
            "  project: default",
            "  project: default # gitops-lint: ignore[secret-in-git] old exception",
        ),
    );
    let (_, report) = lint(dir.path(), &[]);
    let f = found(&report);
    assert!(!has(&report, "default-project", "flow.yaml"), "{f:?}");
    assert!(!has(&report, "default-project", "above.yaml"), "{f:?}");
    assert!(
        has(&report, "suppression-without-reason", "above.yaml"),
        "{f:?}"
    );
    assert!(has(&report, "default-project", "stale.yaml"), "{f:?}");
    assert!(has(&report, "unused-suppression", "stale.yaml"), "{f:?}");
    assert_eq!(report["summary"]["suppressed"], 2);
    // --no-suppressions shows everything and says nothing about the directives.
    let (_, all) = lint(dir.path(), &["--no-suppressions"]);
    assert!(has(&all, "default-project", "flow.yaml"));
    assert!(!has(&all, "unused-suppression", "stale.yaml"));
}

/// argocd-rbac-cm with `BLOCK` as its policy.csv header, and five broad grants.
const RBAC_CM: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: argocd}
data:
  policy.default: role:readonly
  policy.csv: BLOCK
    p, role:a, applications, override, */*, allow
    # gitops-lint: ignore[rbac-override-broad] break-glass role, on-call only

    # granted in PLAT-7
    p, role:b, applications, override, */*, allow
    p, role:c, applications, override, */*, allow
    # gitops-lint: ignore[rbac-override-broad]
    p, role:d, applications, override, */*, allow
    # gitops-lint: ignore[rbac-override-broad] role:e only syncs
    p, role:e, applications, sync, */*, allow
    p, role:f, applications, override, */*, allow # gitops-lint: ignore[rbac-override-broad] x
";

#[test]
fn a_directive_line_in_the_rbac_policy_covers_the_next_policy_line() {
    for (name, block, crlf) in [
        ("literal.yaml", "|", false),
        ("strip.yaml", "|-", false),
        ("keep-crlf.yaml", "|+", true),
        ("indicator-crlf.yaml", "|2 # policy", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let text = RBAC_CM.replace("BLOCK", block);
        let text = if crlf {
            text.replace('\n', "\r\n")
        } else {
            text
        };
        write(dir.path(), name, &text);
        let (_, report) = lint(dir.path(), &[]);
        let mut lines: Vec<(String, u64)> = found(&report)
            .into_iter()
            .map(|(rule, _, line)| (rule, line))
            .collect();
        lines.sort();
        let want = [
            // role:a, role:c (the directive above role:b covers it alone).
            ("rbac-override-broad", 7),
            ("rbac-override-broad", 12),
            ("suppression-without-reason", 13),
            ("unused-suppression", 15),
            ("unused-suppression", 17),
        ]
        .map(|(r, l)| (r.to_string(), l));
        assert_eq!(lines, want, "{name}: {report:#}");
        assert_eq!(report["summary"]["suppressed"], 2, "{name}");
        // The directive's finding points at it, the trailing one at its `#`.
        let at = |line: u64| {
            report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["start"]["line"] == line && f["rule"] != "rbac-override-broad")
                .map(|f| f["start"]["column"].as_u64().unwrap())
        };
        assert_eq!(at(13), Some(5), "{name}");
        assert_eq!(at(17), Some(51), "{name}");
        // Without suppressions, every grant but the one the trailing comment changed is reported.
        let (_, all) = lint(dir.path(), &["--no-suppressions"]);
        let broad = found(&all)
            .into_iter()
            .filter(|(r, _, _)| r == "rbac-override-broad")
            .count();
        assert_eq!(broad, 4, "{name}: {all:#}");
    }
}

/// A base Secret and Application shared by an overlay whose patch carries the exception.
fn kustomize_repo(dir: &Path, patch_directive: &str, annotation: &str) {
    write(
        dir,
        ".gitops-lint.yaml",
        "repo-urls: ['https://example.com/r.git']\n",
    );
    write(
        dir,
        "base/kustomization.yaml",
        "resources:\n  - app.yaml\n  - secret.yaml\n",
    );
    write(dir, "base/app.yaml", &app("svc"));
    write(
        dir,
        "base/secret.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n{annotation}data:\n  password: cGc0LWRiLXN1bW1lcg==\n"
        ),
    );
    write(
        dir,
        "overlay/kustomization.yaml",
        "resources:\n  - ../base\npatches:\n  - path: project.yaml\n",
    );
    write(
        dir,
        "overlay/project.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: svc\nspec:\n  project: default{patch_directive}\n"
        ),
    );
}

#[test]
fn a_directive_on_a_kustomize_patch_covers_the_rendered_object() {
    let dir = tempfile::tempdir().unwrap();
    kustomize_repo(
        dir.path(),
        " # gitops-lint: ignore[default-project] migration in progress",
        "",
    );
    let (_, report) = lint(dir.path(), &[]);
    let f = found(&report);
    assert!(!f.iter().any(|(r, _, _)| r == "default-project"), "{f:?}");
    assert!(
        !f.iter().any(|(r, _, _)| r == "unused-suppression"),
        "{f:?}"
    );
}

#[test]
fn an_annotation_in_a_base_survives_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let annotation = "  annotations:\n    gitops-lint.io/ignore: secret-in-git\n    gitops-lint.io/ignore-reason: dummy value for the test cluster\n";
    kustomize_repo(dir.path(), "", annotation);
    let (_, report) = lint(dir.path(), &[]);
    let f = found(&report);
    assert!(!f.iter().any(|(r, _, _)| r == "secret-in-git"), "{f:?}");
    assert!(
        !f.iter().any(|(r, _, _)| r.contains("suppression")),
        "{f:?}"
    );
    // Without its reason, the annotation is reported.
    let dir = tempfile::tempdir().unwrap();
    kustomize_repo(
        dir.path(),
        "",
        "  annotations:\n    gitops-lint.io/ignore: secret-in-git\n",
    );
    let (_, report) = lint(dir.path(), &[]);
    assert!(has(
        &report,
        "suppression-without-reason",
        "base/secret.yaml"
    ));
}

#[test]
fn baseline_entries_survive_lines_inserted_above_them() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "apps/a.yaml", &app("a"));
    write(dir.path(), "apps/b.yaml", &app("b"));
    let out = run_in(
        dir.path(),
        &["--write-baseline", "baseline.yaml", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(dir.path().join("baseline.yaml")).unwrap();
    assert!(text.contains("pointer: \"/spec/project\""), "{text}");
    assert!(
        !text.contains("    line:"),
        "baselines carry no line numbers: {text}"
    );

    // Unrelated edits: comments and labels above the finding move it down.
    let moved = app("a").replace(
        "metadata: {name: a, namespace: argocd}",
        "# owned by team a\n# reviewed 2026-11\nmetadata:\n  name: a\n  namespace: argocd\n  labels: {team: a}",
    );
    write(dir.path(), "apps/a.yaml", &moved);
    let out = run_in(
        dir.path(),
        &["--baseline", "baseline.yaml", "--fail-on", "warning", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "accepted findings do not fail: {}", out.stdout);
    assert!(out.stdout.contains("2 in the baseline"), "{}", out.stdout);

    // A new finding still fails; a fixed one is reported as stale, and pruned on request.
    write(dir.path(), "apps/c.yaml", &app("c"));
    write(
        dir.path(),
        "apps/b.yaml",
        &app("b").replace("project: default", "project: team-b"),
    );
    let out = run_in(
        dir.path(),
        &["--baseline", "baseline.yaml", "--fail-on", "warning", "."],
        LIMIT,
    );
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("apps/c.yaml"), "{}", out.stdout);
    assert!(!out.stdout.contains("apps/a.yaml"), "{}", out.stdout);
    assert!(
        out.stdout.contains("1 baseline entry no longer occur"),
        "{}",
        out.stdout
    );
    let out = run_in(
        dir.path(),
        &[
            "--baseline",
            "baseline.yaml",
            "--prune-baseline",
            "--fail-on",
            "never",
            ".",
        ],
        LIMIT,
    );
    assert_eq!(out.code, 0);
    let pruned = std::fs::read_to_string(dir.path().join("baseline.yaml")).unwrap();
    assert!(
        !pruned.contains("apps/b.yaml") && pruned.contains("apps/a.yaml"),
        "{pruned}"
    );
}

#[test]
fn the_config_names_the_baseline_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "apps/a.yaml", &app("a"));
    write(dir.path(), "apps/b.yaml", &app("b"));
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "fail-on: warning\nbaseline: ci/baseline.yaml\n",
    );
    // Named but not there: a usage error at the config's line. --write-baseline still writes
    // where it is asked to.
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("the baseline file ci/baseline.yaml does not exist"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(".gitops-lint.yaml:2:11"),
        "{}",
        out.stderr
    );
    std::fs::create_dir_all(dir.path().join("ci")).unwrap();
    let out = run_in(
        dir.path(),
        &["--write-baseline", "ci/baseline.yaml", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("wrote 2 baseline entries"),
        "{}",
        out.stderr
    );

    // Used without --baseline, from any folder of the repository.
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("2 in the baseline"), "{}", out.stdout);
    let out = run_in(&dir.path().join("apps"), &["--context", "a.yaml"], LIMIT);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("1 in the baseline"), "{}", out.stdout);

    // --baseline wins; --write-baseline records every finding, the config's baseline aside.
    write(dir.path(), "other.yaml", "version: 1\nfindings: []\n");
    let out = run_in(dir.path(), &["--baseline", "other.yaml", "."], LIMIT);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(!out.stdout.contains("in the baseline"), "{}", out.stdout);
    let out = run_in(dir.path(), &["--write-baseline", "again.yaml", "."], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("wrote 2 baseline entries"),
        "{}",
        out.stderr
    );

    // --prune-baseline prunes the config's baseline.
    write(
        dir.path(),
        "apps/b.yaml",
        &app("b").replace("project: default", "project: team-b"),
    );
    let out = run_in(dir.path(), &["--prune-baseline", "."], LIMIT);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let pruned = std::fs::read_to_string(dir.path().join("ci/baseline.yaml")).unwrap();
    assert!(
        !pruned.contains("apps/b.yaml") && pruned.contains("apps/a.yaml"),
        "{pruned}"
    );
    // Without any baseline, --prune-baseline has nothing to prune.
    let out = run_in(dir.path(), &["--no-config", "--prune-baseline", "."], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains("--prune-baseline needs a baseline"),
        "{}",
        out.stderr
    );

    // `gitops-lint config` shows it, resolved from where it is run.
    let out = run_in(&dir.path().join("apps"), &["config"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("baseline: ../ci/baseline.yaml ")
                && l.ends_with("# ../.gitops-lint.yaml:2")),
        "{}",
        out.stdout
    );
    std::fs::remove_file(dir.path().join("ci/baseline.yaml")).unwrap();
    let out = run_in(dir.path(), &["config"], LIMIT);
    assert!(
        out.stdout.contains("baseline: ci/baseline.yaml (missing"),
        "{}",
        out.stdout
    );
    // A missing baseline the command line overrides is not read, so not an error.
    let out = run_in(dir.path(), &["--baseline", "other.yaml", "."], LIMIT);
    assert_eq!(out.code, 1, "{}", out.stderr);

    write(dir.path(), ".gitops-lint.yaml", "baseline: ''\n");
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains("baseline must be the path"),
        "{}",
        out.stderr
    );
}

#[test]
fn under_a_trusted_config_only_its_baseline_is_used() {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    write(&repo, "apps/a.yaml", &app("a"));
    write(&repo, "apps/b.yaml", &app("b"));
    let out = run_in(&repo, &["--write-baseline", "all.yaml", "."], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    write(&repo, "none.yaml", "version: 1\nfindings: []\n");
    // The pull request's config would hide everything; the trusted one, kept outside, names a
    // baseline relative to the repository root, as its per-path globs are.
    write(&repo, ".gitops-lint.yaml", "baseline: all.yaml\n");
    write(
        top.path(),
        "trusted.yaml",
        "fail-on: warning\nbaseline: none.yaml\n",
    );
    let out = run_in(&repo, &["--trusted-config", "../trusted.yaml", "."], LIMIT);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("in the baseline"), "{}", out.stdout);
    let out = run_in(
        &repo,
        &["config", "--trusted-config", "../trusted.yaml", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("baseline: none.yaml") && out.stdout.contains("# ../trusted.yaml:2"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "# clamped: .gitops-lint.yaml:1 names `all.yaml`; under a trusted config only its baseline applies"
        ),
        "{}",
        out.stdout
    );
    // A trusted config without a baseline leaves none.
    write(top.path(), "trusted.yaml", "fail-on: warning\n");
    let out = run_in(&repo, &["--trusted-config", "../trusted.yaml", "."], LIMIT);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
}
