//! The repository's own policies, end to end through the binary: the example policies fire
//! exactly where their fixtures mark, a mistake in a policy file is a config error at its
//! place, a policy is a rule like the built-in ones (selection, severity, suppressions,
//! baselines, every output format, `--context`, `rules`, `explain`), and a hostile condition
//! stops at its budget.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{found, json, marks, root, run, run_in};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|_| panic!("missing folder {}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

/// The example policies, by id.
fn examples() -> Vec<(String, PathBuf)> {
    sorted_dir(&root().join("examples/policies"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| (p.file_stem().unwrap().to_str().unwrap().to_string(), p))
        .collect()
}

#[test]
fn example_policies_fire_exactly_where_their_fixtures_mark() {
    let mut failures = Vec::new();
    let examples = examples();
    assert!(examples.len() >= 5, "examples/policies holds the examples");
    for (id, _) in &examples {
        let cases = sorted_dir(&root().join("fixtures/policies").join(id));
        let name = |p: &PathBuf| p.file_name().unwrap().to_str().unwrap().to_string();
        if !cases.iter().any(|c| name(c).starts_with("fires"))
            || !cases.iter().any(|c| name(c).starts_with("ok"))
        {
            failures.push(format!("{id}: needs fires-* and ok-* cases"));
        }
        for case in cases.iter().filter(|c| c.is_dir()) {
            let rel = case.strip_prefix(root()).unwrap().display().to_string();
            let out = run(&["--format", "json", "--fail-on", "never", &rel]);
            assert_eq!(out.code, 0, "{rel}: {}", out.stderr);
            let mut at: Vec<(String, usize)> = found(&json(&out))
                .into_iter()
                .filter(|(r, _, _)| r == id)
                .map(|(_, f, l)| {
                    let f = f.strip_prefix(&rel).unwrap_or(&f);
                    (f.trim_start_matches('/').to_string(), l as usize)
                })
                .collect();
            at.sort();
            let want = marks(case, id);
            if at != want {
                failures.push(format!(
                    "{rel}: {id} reported at {at:?}, expected at {want:?}"
                ));
            }
            if name(case).starts_with("fires") && want.is_empty() {
                failures.push(format!("{rel}: a fires case marks where it fires"));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn example_policies_follow_their_json_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/gitops-lint-policy.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the policy schema compiles");
    for (id, path) in examples() {
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = gitops_lint::yaml::parse(0, &text, Default::default());
        let doc = gitops_lint::yaml::to_json(&parsed.documents[0].root);
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{id}: {errors:?}");
        assert_eq!(doc["id"], id.as_str(), "a policy file is named for its id");
    }
}

const APP: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: NAME
  namespace: argocd
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: v1.0.0}
  destination: {server: 'https://kubernetes.default.svc', namespace: NS}
";

fn app(name: &str, ns: &str) -> String {
    APP.replace("NAME", name).replace("NS", ns)
}

const OWNER: &str = "id: app-owner
severity: warning
summary: Applications name their owner
message: \"Application `{{ object.metadata.name }}` in {{ object.spec.destination.namespace }} has no owner annotation\"
help: add metadata.annotations.owner
match:
  kind: Application
  namespace: argocd
condition: '!has(object.metadata.annotations) || !(\"owner\" in object.metadata.annotations)'
at: metadata.name
";

/// A repository with one policy and two Applications that break it.
fn owner_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(dir.path(), ".gitops-lint/policies/owner.yaml", OWNER);
    write(dir.path(), "apps/a.yaml", &app("a", "team-a"));
    write(dir.path(), "apps/b.yaml", &app("b", "team-b"));
    dir
}

fn lint(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--format", "json", "--fail-on", "never"];
    args.extend_from_slice(extra);
    args.push(".");
    let out = run_in(dir, &args, LIMIT);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    json(&out)
}

fn of(report: &serde_json::Value, rule: &str) -> Vec<serde_json::Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .cloned()
        .collect()
}

#[test]
fn a_policy_reports_with_its_message_help_and_place() {
    let dir = owner_repo();
    let report = lint(dir.path(), &[]);
    let mine = of(&report, "app-owner");
    assert_eq!(mine.len(), 2, "{report:#}");
    let a = &mine[0];
    assert_eq!(a["file"], "apps/a.yaml");
    assert_eq!(
        a["message"],
        "Application `a` in team-a has no owner annotation"
    );
    assert_eq!(a["help"], "add metadata.annotations.owner");
    assert_eq!(a["severity"], "warning");
    // `at: metadata.name` points at the name's value.
    assert_eq!(
        (a["start"]["line"].as_u64(), a["start"]["column"].as_u64()),
        (Some(4), Some(9))
    );
    assert_eq!(a["pointer"], "/metadata/name");
}

#[test]
fn a_policy_is_selected_overridden_suppressed_and_baselined_like_a_rule() {
    let dir = owner_repo();
    let count = |extra: &[&str]| of(&lint(dir.path(), extra), "app-owner").len();
    assert_eq!(count(&["--ignore", "app-owner"]), 0);
    assert_eq!(count(&["--ignore", "custom"]), 0);
    assert_eq!(count(&["--select", "app-owner"]), 2);
    let only = lint(dir.path(), &["--select", "app-owner"]);
    assert!(
        found(&only).iter().all(|(r, _, _)| r == "app-owner"),
        "{only:#}"
    );
    // A typo in a policy id on the command line is a usage error with a suggestion.
    let out = run_in(dir.path(), &["--select", "app-ownr", "."], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("did you mean `app-owner`?"),
        "{}",
        out.stderr
    );

    write(
        dir.path(),
        ".gitops-lint.yaml",
        "rules:\n  severity:\n    app-owner: error\n",
    );
    let report = lint(dir.path(), &[]);
    assert!(of(&report, "app-owner")
        .iter()
        .all(|f| f["severity"] == "error"));
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 1, "an error finding of a policy fails the run");

    write(
        dir.path(),
        "apps/a.yaml",
        &app("a", "team-a").replace(
            "  name: a\n",
            "  name: a # gitops-lint: ignore[app-owner] owned by the platform team\n",
        ),
    );
    let report = lint(dir.path(), &[]);
    let left: Vec<_> = of(&report, "app-owner")
        .iter()
        .map(|f| f["file"].clone())
        .collect();
    assert_eq!(left, ["apps/b.yaml"], "{report:#}");

    let out = run_in(dir.path(), &["--write-baseline", "base.yaml", "."], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(std::fs::read_to_string(dir.path().join("base.yaml"))
        .unwrap()
        .contains("app-owner"));
    assert_eq!(
        of(&lint(dir.path(), &["--baseline", "base.yaml"]), "app-owner").len(),
        0
    );
}

#[test]
fn a_policy_appears_in_every_output_format() {
    let dir = owner_repo();
    let out = |format: &str| {
        let o = run_in(
            dir.path(),
            &["--format", format, "--fail-on", "never", "."],
            LIMIT,
        );
        assert_eq!(o.code, 0, "{format}: {}", o.stderr);
        o.stdout
    };
    let sarif: serde_json::Value = serde_json::from_str(&out("sarif")).unwrap();
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let index = rules
        .iter()
        .position(|r| r["id"] == "app-owner")
        .expect("the policy is a SARIF rule");
    assert_eq!(
        rules[index]["shortDescription"]["text"],
        "Applications name their owner"
    );
    let result = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "app-owner")
        .unwrap();
    assert_eq!(result["ruleIndex"], index);
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        4
    );
    for (format, needle) in [
        ("human", "app-owner"),
        ("concise", "apps/a.yaml:4:9: warning[app-owner]"),
        ("github", "app-owner"),
        ("junit", "app-owner"),
    ] {
        let text = out(format);
        assert!(text.contains(needle), "{format}: {text}");
    }
}

#[test]
fn rules_and_explain_know_the_repositorys_policies() {
    let dir = owner_repo();
    let out = run_in(dir.path(), &["rules"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("app-owner "))
        .unwrap();
    assert!(
        line.contains("custom") && line.contains("warning"),
        "{line}"
    );
    let out = run_in(dir.path(), &["explain", "app-owner"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("# app-owner\n"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("\"owner\" in object.metadata.annotations"),
        "{}",
        out.stdout
    );
    // Elsewhere, the policy is unknown.
    let out = run(&["explain", "app-owner"]);
    assert_eq!(out.code, 2);
}

#[test]
fn a_changed_file_reports_its_policy_findings_in_context_mode() {
    let dir = owner_repo();
    let out = run_in(
        dir.path(),
        &[
            "--format",
            "json",
            "--fail-on",
            "never",
            "--context",
            "apps/b.yaml",
        ],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let files: Vec<String> = found(&json(&out))
        .into_iter()
        .filter(|(r, _, _)| r == "app-owner")
        .map(|(_, f, _)| f)
        .collect();
    assert_eq!(files, ["apps/b.yaml"]);
}

/// Each mistake, the message it gives and the text it points at.
#[test]
fn a_mistake_in_a_policy_file_is_a_config_error_at_its_place() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "id: p\nmessage: m\nconditon: 'true'\n",
            "unknown key `conditon` in a policy",
            "did you mean `condition`?",
        ),
        ("id: p\nmessage: m\n", "a policy needs `condition`", ""),
        (
            "id: p\nmessage: m\ncondition: 'object.spec.replicas >'\n",
            "CEL:",
            "",
        ),
        (
            "id: p\nmessage: m\ncondition: 'true'\nseverity: warn\n",
            "`warn` is not a severity",
            "did you mean `warning`?",
        ),
        (
            "id: p\nmessage: m\ncondition: 'true'\ncategory: secret\n",
            "`secret` is not a category",
            "did you mean `secrets`?",
        ),
        (
            "id: My_Policy\nmessage: m\ncondition: 'true'\n",
            "`My_Policy` is not a policy id",
            "",
        ),
        (
            "id: default-project\nmessage: m\ncondition: 'true'\n",
            "`default-project` is already the id of a built-in rule",
            "",
        ),
        (
            "id: p\nmessage: m\ncondition: 'true'\nmatch:\n  kinds: [Service]\n",
            "unknown key `kinds` in match",
            "did you mean `kind`?",
        ),
        (
            "id: p\nmessage: m\ncondition: 'true'\nmatch:\n  objects: renderd\n",
            "`renderd` is not written, rendered or both",
            "did you mean `rendered`?",
        ),
        (
            "id: p\nmessage: 'x {{ object.metadata.name'\ncondition: 'true'\n",
            "`{{` without its `}}`",
            "",
        ),
        (
            "id: p\nmessage: m\ncondition: 'true'\nmatch:\n  labels:\n    matchExpressions:\n      - {key: a, operator: Exist}\n",
            "`Exist` is not an operator",
            "did you mean `Exists`?",
        ),
    ];
    for (policy, message, help) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
        write(
            dir.path(),
            ".gitops-lint.yaml",
            "policies: [policies/p.yaml]\n",
        );
        write(dir.path(), "policies/p.yaml", policy);
        write(dir.path(), "apps/a.yaml", &app("a", "a"));
        let out = run_in(dir.path(), &["."], LIMIT);
        assert_eq!(out.code, 2, "{policy}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{policy}: {}", out.stdout);
        assert!(out.stderr.contains(message), "{policy}:\n{}", out.stderr);
        assert!(out.stderr.contains(help), "{policy}:\n{}", out.stderr);
        assert!(
            out.stderr.contains("policies/p.yaml:"),
            "{policy}: {}",
            out.stderr
        );
    }
    // The CEL error points into the expression: line 3, at the `>` with nothing after it.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".gitops-lint.yaml", "policies: [p.yaml]\n");
    write(
        dir.path(),
        "p.yaml",
        "id: p\nmessage: m\ncondition: 'object.spec.replicas > )'\n",
    );
    let out = run_in(dir.path(), &["."], LIMIT);
    assert!(out.stderr.contains("p.yaml:3:"), "{}", out.stderr);
    // A pattern that names nothing is a mistake in the config.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "policies: [policy/*.yaml]\n",
    );
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`policy/*.yaml` names no policy file"),
        "{}",
        out.stderr
    );
}

/// A pull request's config cannot make the run read a file outside the repository: the
/// error would quote its lines.
#[test]
fn a_policy_outside_the_repository_is_not_read() {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    write(
        top.path(),
        "outside.yaml",
        "id: p\nmessage: m\ncondition: 'true'\nsecret: hunter2\n",
    );
    write(&repo, ".git/HEAD", "ref: refs/heads/main\n");
    write(&repo, "apps/a.yaml", &app("a", "a"));
    let outside = top.path().join("outside.yaml");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, repo.join("link.yaml")).unwrap();
    let absolute = outside.display().to_string();
    for named in [
        "../outside.yaml",
        absolute.as_str(),
        "link.yaml",
        "../*.yaml",
    ] {
        write(
            &repo,
            ".gitops-lint.yaml",
            &format!("policies: ['{named}']\n"),
        );
        let out = run_in(&repo, &["."], LIMIT);
        assert_eq!(out.code, 2, "{named}: {}", out.stderr);
        assert!(!out.stderr.contains("hunter2"), "{named}: {}", out.stderr);
    }
    // Nor does a link in the policy folder lead out of it.
    std::fs::remove_file(repo.join(".gitops-lint.yaml")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, repo.join(".gitops-lint/policies/p.yaml"))
        .or_else(|_| {
            std::fs::create_dir_all(repo.join(".gitops-lint/policies"))?;
            std::os::unix::fs::symlink(&outside, repo.join(".gitops-lint/policies/p.yaml"))
        })
        .unwrap();
    let out = run_in(
        &repo,
        &["--format", "json", "--fail-on", "never", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(found(&json(&out)).iter().all(|(r, _, _)| r != "p"));
}

#[test]
fn a_policy_id_taken_twice_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "policies: [a.yaml, b.yaml]\n",
    );
    write(
        dir.path(),
        "a.yaml",
        "id: p\nmessage: a\ncondition: 'true'\n",
    );
    write(
        dir.path(),
        "b.yaml",
        "id: p\nmessage: b\ncondition: 'false'\n",
    );
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("`p` is already the id of the policy in"),
        "{}",
        out.stderr
    );
}

/// A condition that would take 10^8 steps on each of 300 objects stops at each evaluation's
/// budget, then at the policy's budget for the run, and says so; the run ends in seconds.
#[test]
fn a_hostile_condition_stops_at_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    let ten = "[0,1,2,3,4,5,6,7,8,9]";
    let mut cond = "true".to_string();
    for v in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        cond = format!("{ten}.all({v}, {cond})");
    }
    write(
        dir.path(),
        ".gitops-lint/policies/hostile.yaml",
        &format!("id: hostile\nmessage: m\ncondition: '{cond}'\n"),
    );
    for i in 0..300 {
        write(
            dir.path(),
            &format!("cm/{i:03}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"),
        );
    }
    let started = std::time::Instant::now();
    let report = lint(dir.path(), &["--select", "hostile"]);
    let took = started.elapsed();
    let mine = of(&report, "hostile");
    assert!(mine.iter().all(|f| f["severity"] == "info"), "{report:#}");
    assert!(mine[0]["message"]
        .as_str()
        .unwrap()
        .contains("cost budget exceeded"));
    let last = mine.last().unwrap()["message"].as_str().unwrap();
    assert!(
        last.contains("spent its evaluation budget for the run"),
        "{last}"
    );
    // Each evaluation stops at its budget; the run's budget leaves the rest not evaluated.
    assert!(mine.len() < 40, "{} findings", mine.len());
    assert!(took < Duration::from_secs(30), "{took:?}");
}

/// Under `--trusted-config-rev`, the trusted config's policies are read from the revision: a
/// pull request that rewrites or deletes one does not change what runs.
#[test]
fn a_trusted_revisions_policies_stand_against_the_working_tree() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    common::git_init(repo);
    write(repo, ".gitops-lint.yaml", "policies: [platform]\n");
    write(repo, "platform/owner.yaml", OWNER);
    write(repo, "apps/a.yaml", &app("a", "team-a"));
    common::git(repo, &["add", "-A"]);
    common::git(repo, &["commit", "-qm", "base"]);
    let trusted = ["--trusted-config-rev", "HEAD"];
    let mine = |extra: &[&str]| of(&lint(repo, extra), "app-owner").len();
    assert_eq!(mine(&trusted), 1);
    // The change under review turns the policy off, then drops it altogether.
    let off: String = OWNER
        .lines()
        .map(|l| {
            if l.starts_with("condition:") {
                "condition: 'false'"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    write(repo, "platform/owner.yaml", &off);
    assert_eq!(
        mine(&[]),
        0,
        "the working tree's version, without a trusted config"
    );
    assert_eq!(mine(&trusted), 1, "the revision's version stands");
    std::fs::remove_dir_all(repo.join("platform")).unwrap();
    write(repo, ".gitops-lint.yaml", "rules:\n  ignore: [app-owner]\n");
    assert_eq!(mine(&trusted), 1, "nor can the config drop or ignore it");
    let out = run_in(repo, &["config", "--trusted-config-rev", "HEAD"], LIMIT);
    assert!(
        out.stdout
            .contains("app-owner (warning, HEAD:platform/owner.yaml)"),
        "{}",
        out.stdout
    );
}

/// A changed manifest that an Application deploys is judged as rendered, with its
/// Application bound, in `--context` mode as in a full run.
#[test]
fn a_changed_rendered_object_is_judged_with_its_application_in_context_mode() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write(
        repo,
        ".gitops-lint.yaml",
        "repo-urls: ['https://example.com/r.git']\n",
    );
    write(
        repo,
        ".gitops-lint/policies/lb.yaml",
        "id: lb-outside-ingress
message: \"{{ object.metadata.name }} is a LoadBalancer in {{ objectNamespace }} (deployed by {{ application.metadata.name }})\"
match: {kind: Service, objects: rendered}
condition: object.?spec.?type.orValue('') == 'LoadBalancer' && objectNamespace != 'ingress'
",
    );
    write(
        repo,
        "apps/web.yaml",
        &app("web", "shop").replace("path: a", "path: services/web"),
    );
    write(
        repo,
        "services/web/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: LoadBalancer\n",
    );
    let full = of(&lint(repo, &[]), "lb-outside-ingress");
    assert_eq!(full.len(), 1);
    assert_eq!(
        full[0]["message"],
        "web is a LoadBalancer in shop (deployed by web)"
    );
    assert_eq!(
        full[0]["start"]["line"], 6,
        "at the one path the condition reads"
    );
    for changed in ["services/web/service.yaml", "apps/web.yaml"] {
        let out = run_in(
            repo,
            &[
                "--format",
                "json",
                "--fail-on",
                "never",
                "--context",
                changed,
            ],
            LIMIT,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(of(&json(&out), "lb-outside-ingress"), full, "{changed}");
    }
}

/// A policy folder that is a link, or below a linked `.gitops-lint`, is refused: its files,
/// outside the repository, are neither read nor quoted.
#[cfg(unix)]
#[test]
fn a_linked_policy_folder_is_refused() {
    for linked in [".gitops-lint/policies", ".gitops-lint"] {
        let top = tempfile::tempdir().unwrap();
        let outside = top.path().join("outside");
        write(&outside, "policies/secret.yaml", "token: hunter2\n");
        write(&outside, "secret.yaml", "token: hunter2\n");
        let repo = top.path().join("repo");
        write(&repo, ".git/HEAD", "ref: refs/heads/main\n");
        write(&repo, "apps/a.yaml", &app("a", "a"));
        let link = repo.join(linked);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let target = if linked == ".gitops-lint" {
            outside.clone()
        } else {
            outside.join("policies")
        };
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let out = run_in(&repo, &["."], LIMIT);
        assert_eq!(out.code, 2, "{linked}: {}", out.stderr);
        assert!(
            out.stderr.contains("leads outside the repository"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("hunter2"), "{linked}: {}", out.stderr);
        let out = run_in(&repo, &["explain", "default-project"], LIMIT);
        assert!(!out.stderr.contains("hunter2"), "{linked}: {}", out.stderr);
    }
}

/// Every mistake of every file of the policy folder is shown in one run.
#[test]
fn every_bad_file_of_the_policy_folder_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(
        dir.path(),
        ".gitops-lint/policies/a.yaml",
        "id: a\nmessage: m\nconditon: 'true'\n",
    );
    write(
        dir.path(),
        ".gitops-lint/policies/b.yaml",
        "id: b\nmessage: m\ncondition: 'true'\nseverity: loud\n",
    );
    let out = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown key `conditon`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("`loud` is not a severity"),
        "{}",
        out.stderr
    );
}

/// Under `--trusted-config FILE`, the repository's own policies still run, and its config
/// may raise the severity of the trusted config's policies.
#[test]
fn a_trusted_config_file_and_the_repositorys_policies_work_together() {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    write(&repo, ".git/HEAD", "ref: refs/heads/main\n");
    write(&repo, ".gitops-lint/policies/owner.yaml", OWNER);
    write(&repo, "apps/a.yaml", &app("a", "team-a"));
    write(top.path(), "trust/cfg.yaml", "policies: [t.yaml]\n");
    write(
        top.path(),
        "trust/t.yaml",
        "id: t1\nmessage: trusted\nmatch: {kind: Application}\ncondition: 'true'\nseverity: info\n",
    );
    let trusted = ["--trusted-config", "../trust/cfg.yaml"];
    let report = lint(&repo, &trusted);
    assert_eq!(of(&report, "app-owner").len(), 1, "{report:#}");
    assert_eq!(of(&report, "t1").len(), 1, "{report:#}");
    write(
        &repo,
        ".gitops-lint.yaml",
        "rules:\n  severity:\n    t1: error\n",
    );
    let report = lint(&repo, &trusted);
    assert_eq!(of(&report, "t1")[0]["severity"], "error", "{report:#}");
}

/// Linting two repositories, each with policies: the run is the first one's config's, and
/// only its policies are rules of the run (SARIF lists them, --select names them).
#[test]
fn another_repositorys_policies_are_not_rules_of_the_run() {
    let top = tempfile::tempdir().unwrap();
    for (name, id) in [("c", "p-c"), ("d", "p-d")] {
        let repo = top.path().join(name);
        write(&repo, ".git/HEAD", "ref: refs/heads/main\n");
        write(
            &repo,
            ".gitops-lint/policies/p.yaml",
            &format!("id: {id}\nmessage: m\nmatch: {{kind: Application}}\ncondition: 'true'\n"),
        );
        write(&repo, "apps/a.yaml", &app("a", "a"));
    }
    let out = run_in(
        top.path(),
        &["c", "d", "--format", "sarif", "--fail-on", "never"],
        LIMIT,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sarif: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"p-c") && !ids.contains(&"p-d"), "{ids:?}");
    let out = run_in(top.path(), &["c", "d", "--select", "p-d"], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

/// A message that interpolates a huge value stays short, and shows line breaks and escapes
/// of the repository's values escaped.
#[test]
fn an_interpolated_message_is_bounded_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(
        dir.path(),
        ".gitops-lint/policies/big.yaml",
        "id: big\nmessage: \"{{ object.metadata.annotations }}\"\nmatch: {kind: ConfigMap}\ncondition: 'true'\n",
    );
    let mut cm = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    a: \"line\\nbreak \\u001b[31mred \\u202eevil\"\n");
    for i in 0..20_000 {
        cm.push_str(&format!("    k{i}: v{i}\n"));
    }
    write(dir.path(), "cm.yaml", &cm);
    let report = lint(dir.path(), &[]);
    let message = of(&report, "big")[0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.len() <= 1030, "{}", message.len());
    assert!(
        message.contains(r"line\nbreak \u{1b}[31mred \u{202e}evil"),
        "{message}"
    );
    assert!(!message.contains(['\u{1b}', '\n', '\u{202e}']));
}

/// An object two Applications deploy is judged once per Application when the policy depends
/// on which: the finding names the ones it holds for.
#[test]
fn a_finding_names_the_applications_the_condition_holds_for() {
    let case = "fixtures/policies/no-loadbalancer-outside-ingress/fires-deployed-twice";
    let out = run(&["--format", "json", "--fail-on", "never", case]);
    let report = json(&out);
    let mine = of(&report, "no-loadbalancer-outside-ingress");
    assert_eq!(mine.len(), 1, "{report:#}");
    assert_eq!(
        mine[0]["applications"],
        serde_json::json!(["edge-payments"])
    );
}

/// Reading a large value costs its size: a condition that reads a megabyte string in a loop
/// stops at its budget instead of copying it millions of times.
#[test]
fn reading_a_large_value_in_a_loop_stops_at_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    let ten = "[0,1,2,3,4,5,6,7,8,9]";
    let mut cond = "object.data.big != 1".to_string();
    for v in ["a", "b", "c", "d", "e", "f"] {
        cond = format!("{ten}.all({v}, {cond})");
    }
    write(
        dir.path(),
        ".gitops-lint/policies/big.yaml",
        &format!("id: big\nmessage: m\nmatch: {{kind: ConfigMap}}\ncondition: '{cond}'\n"),
    );
    let big = "b".repeat(1 << 20);
    for i in 0..4 {
        write(
            dir.path(),
            &format!("cm{i}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata:\n  big: {big}\n"
            ),
        );
    }
    let started = std::time::Instant::now();
    let report = lint(dir.path(), &[]);
    let mine = of(&report, "big");
    assert_eq!(mine.len(), 4, "{report:#}");
    assert!(mine.iter().all(|f| f["message"]
        .as_str()
        .unwrap()
        .contains("cost budget exceeded")));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// Two globs over one folder find every policy (the folder is walked once for both; `.git`
/// is not walked), and a link named in the config is refused with the reason.
#[test]
fn policy_globs_find_every_policy_once_and_refuse_links() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..300 {
        write(dir.path(), &format!(".git/objects/{i:03}"), "");
    }
    write(
        dir.path(),
        "pol/p.yaml",
        "id: p1\nmessage: m\ncondition: 'false'\n",
    );
    write(
        dir.path(),
        "pol/q.yaml",
        "id: q1\nmessage: m\ncondition: 'false'\n",
    );
    write(
        dir.path(),
        ".gitops-lint.yaml",
        "policies: ['**/p.yaml', '**/q.yaml']\n",
    );
    let out = run_in(dir.path(), &["rules"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("p1 ") && out.stdout.contains("q1 "),
        "{}",
        out.stdout
    );
    // A link named in the config is refused, and says why.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("pol/p.yaml", dir.path().join("link.yaml")).unwrap();
        write(dir.path(), ".gitops-lint.yaml", "policies: [link.yaml]\n");
        let out = run_in(dir.path(), &["."], LIMIT);
        assert_eq!(out.code, 2);
        assert!(out.stderr.contains("is a link"), "{}", out.stderr);
    }
}

/// Policies load in linear time, and a repository's config loads at most 10,000 of them: 60,000
/// policy files, and files of thousands of policies each, load in seconds, the ones past the
/// ceiling are named, and the run fails since they were not checked.
#[test]
fn policies_past_the_ceiling_are_not_loaded_and_fail_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let policy = |i: usize| format!("id: p-{i}\nmessage: m\ncondition: 'false'\n");
    // Two files of 4,000 policies, then 60,000 files of one.
    for f in 0..2 {
        let docs: Vec<String> = (0..4000).map(|i| policy(f * 4000 + i)).collect();
        write(
            dir.path(),
            &format!(".gitops-lint/policies/a{f}.yaml"),
            &docs.join("---\n"),
        );
    }
    for i in 0..60_000 {
        write(
            dir.path(),
            &format!(".gitops-lint/policies/b{i:05}.yaml"),
            &policy(8000 + i),
        );
    }
    let started = std::time::Instant::now();
    let out = run_in(dir.path(), &["--format", "json", "."], LIMIT);
    let took = started.elapsed();
    assert_eq!(out.code, 1, "stderr: {}", out.stderr);
    let report = json(&out);
    let skipped: Vec<&serde_json::Value> = report["summary"]["files_skipped"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["reason"], "run-limit");
    // 8,000 policies in the two big files, then 2,000 files of one: the 2,001st is the first
    // left unread.
    assert!(
        skipped[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".gitops-lint/policies/b02000.yaml"),
        "{skipped:?}"
    );
    assert!(
        skipped[0]["detail"]
            .as_str()
            .unwrap()
            .contains("10000 policies"),
        "{skipped:?}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    // With `--fail-on never` the run passes, the ceiling still said.
    let out = run_in(
        dir.path(),
        &["--format", "json", "--fail-on", "never", "."],
        LIMIT,
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
}

/// A pull request cannot starve a trusted policy. Thousands of no-op policies of its own used
/// to shrink every policy's share of the run's budget, the trusted one's too, and costly
/// objects before the one that breaks the trusted policy then left that one "not evaluated"
/// (info): the run passed. A trusted policy's budget is its own, and an object it cannot be
/// evaluated on (here one that costs more than an evaluation may) fails the run, naming the
/// policy and why.
#[test]
fn a_pull_request_cannot_starve_a_trusted_policy() {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    write(&repo, ".git/HEAD", "ref: refs/heads/main\n");
    write(top.path(), "trust/cfg.yaml", "policies: [guard.yaml]\n");
    write(
        top.path(),
        "trust/guard.yaml",
        "id: no-bad-key\nseverity: error\nmessage: a bad key\nmatch: {kind: ConfigMap}\n\
         condition: 'has(object.data) && object.data.exists(k, k == \"bad\")'\n",
    );
    let trusted = ["--trusted-config", "../trust/cfg.yaml"];
    let config_map = |name: &str, keys: usize, extra: &str| {
        let mut s = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata:\n");
        for k in 0..keys {
            s.push_str(&format!("  k{k}: v\n"));
        }
        s.push_str(extra);
        s
    };
    // Costly objects first in path order, then the one that breaks the trusted policy.
    for i in 0..20 {
        write(
            &repo,
            &format!("a/filler-{i:02}.yaml"),
            &config_map(&format!("f{i}"), 3000, ""),
        );
    }
    write(&repo, "b/bad.yaml", &config_map("bad", 1, "  bad: yes\n"));
    for i in 0..3000 {
        write(
            &repo,
            &format!(".gitops-lint/policies/noop-{i:04}.yaml"),
            &format!("id: noop-{i}\nmessage: m\nmatch: {{kind: Secret}}\ncondition: 'false'\n"),
        );
    }
    let mut args = vec!["--format", "json"];
    args.extend(trusted);
    args.push(".");
    let out = run_in(&repo, &args, LIMIT);
    let report = json(&out);
    let guard = of(&report, "no-bad-key");
    assert_eq!(guard.len(), 1, "{guard:#?}");
    assert_eq!(guard[0]["file"], "b/bad.yaml");
    assert_eq!(guard[0]["message"], "a bad key");
    assert_eq!(guard[0]["severity"], "error");
    assert_eq!(out.code, 1, "stderr: {}", out.stderr);

    // An object too costly for one evaluation: the trusted policy could not look at it, and
    // the run fails with a finding that says which policy and why.
    std::fs::remove_file(repo.join("b/bad.yaml")).unwrap();
    write(&repo, "c/huge.yaml", &config_map("huge", 250_000, ""));
    let out = run_in(&repo, &args, LIMIT);
    let report = json(&out);
    let guard = of(&report, "no-bad-key");
    assert_eq!(guard.len(), 1, "{guard:#?}");
    assert_eq!(guard[0]["file"], "c/huge.yaml");
    assert_eq!(guard[0]["severity"], "error");
    let message = guard[0]["message"].as_str().unwrap();
    assert!(
        message.contains("trusted policy `no-bad-key`") && message.contains("cost budget exceeded"),
        "{message}"
    );
    assert_eq!(out.code, 1, "stderr: {}", out.stderr);
    // The repository's own policy, under the same conditions, stays an `info`.
    let mut args = vec!["--format", "json", "--fail-on", "never"];
    args.push(".");
    write(
        &repo,
        ".gitops-lint/policies/own.yaml",
        "id: own-bad-key\nmessage: m\nmatch: {kind: ConfigMap}\ncondition: 'has(object.data) && object.data.exists(k, k == \"bad\")'\n",
    );
    let report = json(&run_in(&repo, &args, LIMIT));
    let own = of(&report, "own-bad-key");
    assert!(
        !own.is_empty() && own.iter().all(|f| f["severity"] == "info"),
        "{own:#?}"
    );
}

/// What suppression comments name is looked up, not searched for among the policies: ten
/// thousand policies and thousands of `ignore[...]` comments naming unknown rules or `all`
/// cost what the comments alone do.
#[test]
fn suppression_comments_cost_the_same_with_many_policies() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    for f in 0..4 {
        let docs: Vec<String> = (0..2500)
            .map(|i| {
                format!(
                    "id: p-{}\nmessage: m\nmatch: {{kind: Secret}}\ncondition: 'false'\n",
                    f * 2500 + i
                )
            })
            .collect();
        write(
            dir.path(),
            &format!(".gitops-lint/policies/p{f}.yaml"),
            &docs.join("---\n"),
        );
    }
    let mut comments: Vec<String> = (0..2000)
        .map(|i| format!("# gitops-lint: ignore[zq{i}] r"))
        .collect();
    comments.extend((0..2000).map(|_| "# gitops-lint: ignore[all] r".to_string()));
    write(
        dir.path(),
        "cm.yaml",
        &format!(
            "{}\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n",
            comments.join("\n")
        ),
    );
    let started = std::time::Instant::now();
    let report = lint(dir.path(), &[]);
    let took = started.elapsed();
    assert!(
        of(&report, "unused-suppression").len() + of(&report, "invalid-suppression").len() > 0
            || report["findings"].as_array().unwrap().len() >= 2000,
        "{}",
        report["findings"].as_array().unwrap().len()
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
}
