//! Differential test of our offline kustomize renderer against the real `kubectl kustomize`.
//!
//! Every directory under `fixtures/kustomize/` is one case. Its top-level `kustomization.yaml`
//! is rendered, unless a `RENDER` file names a subdirectory (e.g. `overlay`) to render instead.
//! Both renderers must produce the same multiset of objects. Lists inside an object are compared
//! in order, since kustomize keeps list order.
//!
//! Without kubectl (neither on `PATH` nor at `/usr/bin/kubectl`) the test is ignored, with the
//! reason (see `build.rs`). `KUSTOMIZE_DIFF_CASE=<name>` runs one case only. kubectl only ever
//! reads the local fixture files; a proxy that cannot be reached is set so that nothing could
//! leave the machine. A case whose kustomization has `helmCharts` is built with
//! `--enable-helm --helm-command HELM` (helm on `PATH` or in `~/.local/bin`, as
//! `tests/helm_diff.rs` finds it); without helm such a case is skipped, with the reason.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::objects::{compact, compare, parse_stream};
use common::{root, run_command, run_in};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CASES_DIR: &str = "fixtures/kustomize";
const LIMIT: Duration = Duration::from_secs(60);

struct Case {
    name: String,
    /// The directory rendered, relative to the repository root.
    dir: String,
}

fn cases() -> Vec<Case> {
    let base = root().join(CASES_DIR);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&base).expect("fixtures/kustomize exists") {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let dir = match std::fs::read_to_string(entry.path().join("RENDER")) {
            Ok(sub) => format!("{CASES_DIR}/{name}/{}", sub.trim()),
            Err(_) => format!("{CASES_DIR}/{name}"),
        };
        out.push(Case { name, dir });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn find_kubectl() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .map(|dir| dir.join("kubectl"))
        .chain(std::iter::once(PathBuf::from("/usr/bin/kubectl")))
        .find(|p| p.is_file())
}

/// Whether the case's kustomization inflates Helm charts.
fn uses_helm(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("kustomization.yaml"))
        .is_ok_and(|t| t.lines().any(|l| l.starts_with("helmCharts:")))
}

/// `kubectl kustomize DIR`, killed after [`LIMIT`].
fn kubectl_kustomize(kubectl: &Path, dir: &Path) -> Result<String, String> {
    let mut cmd = Command::new(kubectl);
    cmd.arg("kustomize").arg(dir);
    if uses_helm(dir) {
        let helm = common::find_helm()
            .ok_or("the case inflates a Helm chart and helm is not installed")?;
        cmd.arg("--enable-helm").arg("--helm-command").arg(helm);
    }
    cmd.current_dir(root())
        // Rendering reads local files only; make sure nothing could reach a network anyway.
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .env("https_proxy", "http://127.0.0.1:9")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy");
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_command(cmd, "kubectl kustomize", LIMIT)
    }))
    .map_err(|_| format!("kubectl kustomize did not finish within {LIMIT:?}"))?;
    if run.code == 0 {
        Ok(run.stdout)
    } else {
        Err(format!(
            "kubectl kustomize failed ({}):\n{}",
            run.code, run.stderr
        ))
    }
}

/// `gitops-lint render DIR`: a JSON array of the rendered objects on stdout, exit code 0.
fn render_ours(dir: &str) -> Result<Vec<Value>, String> {
    let args = ["render", dir];
    let run = std::panic::catch_unwind(|| run_in(&root(), &args, LIMIT))
        .map_err(|_| format!("gitops-lint render {dir} did not finish within {LIMIT:?}"))?;
    if run.code != 0 {
        return Err(format!(
            "gitops-lint render exited with {}:\n{}",
            run.code,
            run.stderr.trim_end()
        ));
    }
    match serde_json::from_str::<Value>(&run.stdout) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(other) => Err(format!(
            "gitops-lint render printed JSON that is not an array: {}",
            compact(&other)
        )),
        Err(e) => Err(format!(
            "gitops-lint render printed invalid JSON ({e}):\n{}",
            run.stdout
        )),
    }
}

fn check_case(kubectl: &Path, case: &Case) -> Result<usize, String> {
    let expected = kubectl_kustomize(kubectl, &root().join(&case.dir))
        .and_then(|text| parse_stream(&text))
        .map_err(|e| format!("  fixture problem: {e}"))?;
    if expected.is_empty() {
        return Err("  fixture problem: kubectl rendered no objects".into());
    }
    let count = expected.len();
    let ours = render_ours(&case.dir).map_err(|e| format!("  {e}"))?;
    match compare("kubectl", expected, ours) {
        None => Ok(count),
        Some(report) => Err(report),
    }
}

#[test]
#[cfg_attr(
    not(has_kubectl),
    ignore = "kubectl is neither on PATH nor at /usr/bin/kubectl"
)]
fn renderer_matches_kubectl_kustomize() {
    let kubectl = find_kubectl();
    common::require_program("kubectl", kubectl.is_some(), "install kubectl");
    let kubectl = kubectl.unwrap();
    let mut selected = cases();
    assert!(!selected.is_empty(), "no cases under {CASES_DIR}");
    if let Ok(only) = std::env::var("KUSTOMIZE_DIFF_CASE") {
        let names: Vec<String> = selected.iter().map(|c| c.name.clone()).collect();
        selected.retain(|c| c.name == only);
        assert!(
            !selected.is_empty(),
            "KUSTOMIZE_DIFF_CASE={only} names no case; the cases are: {}",
            names.join(", ")
        );
    }

    let mut failures = Vec::new();
    for case in &selected {
        if uses_helm(&root().join(&case.dir)) && common::find_helm().is_none() {
            eprintln!(
                "skip {}: helm is not installed (scripts/install-helm.sh)",
                case.name
            );
            continue;
        }
        match check_case(&kubectl, case) {
            Ok(objects) => eprintln!("ok   {} ({objects} objects)", case.name),
            Err(report) => {
                eprintln!("FAIL {} ({})\n{report}", case.name, case.dir);
                failures.push(case.name.as_str());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} kustomize cases differ from kubectl kustomize (details above): {}",
        failures.len(),
        selected.len(),
        failures.join(", ")
    );
}

/// kustomize refuses a kustomization that sets nothing ("kustomization.yaml is empty"): an
/// empty file, comments only, `apiVersion` and `kind` only, fields left null or empty. Each is
/// a `kustomize-error` at its file, where kubectl fails too; an empty list is something set,
/// and both build it.
#[test]
#[cfg_attr(
    not(has_kubectl),
    ignore = "kubectl is neither on PATH nor at /usr/bin/kubectl"
)]
fn kustomizations_that_set_nothing_are_refused_as_kubectl_refuses_them() {
    let kubectl = find_kubectl();
    common::require_program("kubectl", kubectl.is_some(), "install kubectl");
    let kubectl = kubectl.unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    let cases = [
        ("empty-file", "", true),
        ("comments-only", "# nothing here yet\n---\n", true),
        (
            "type-only",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
            true,
        ),
        ("null-and-empty", "resources:\nnamePrefix: \"\"\n", true),
        ("empty-list", "resources: []\n", false),
    ];
    for (name, text, refused) in cases {
        let dir = work.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("kustomization.yaml"), text).unwrap();
        std::fs::write(
            work.path().join(format!("{name}-app.yaml")),
            format!(
                "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {name}, namespace: argocd}}\nspec:\n  project: default\n  source: {{repoURL: https://example.com/r.git, path: {name}}}\n  destination: {{server: https://kubernetes.default.svc, namespace: x}}\n"
            ),
        )
        .unwrap();
        let kubectl_refuses = kubectl_kustomize(&kubectl, &dir).is_err();
        assert_eq!(kubectl_refuses, refused, "{name}: kubectl");
    }
    let run = run_in(
        work.path(),
        &[
            "--format",
            "json",
            "--fail-on",
            "never",
            "--repo-url",
            "https://example.com/r.git",
            ".",
        ],
        LIMIT,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let refused: BTreeSet<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "kustomize-error")
        .map(|f| f["file"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = cases
        .iter()
        .filter(|c| c.2)
        .map(|c| format!("{}/kustomization.yaml", c.0))
        .collect();
    assert_eq!(refused, expected);
}

/// The README lists each case once, so a reader can find what a case is for.
#[test]
fn readme_lists_every_case() {
    let readme = std::fs::read_to_string(root().join(CASES_DIR).join("README.md"))
        .expect("fixtures/kustomize/README.md exists");
    let missing: Vec<String> = cases()
        .into_iter()
        .map(|c| c.name)
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "fixtures/kustomize/README.md does not list: {}",
        missing.join(", ")
    );
}

/// A vendored chart that kustomize's Helm generator refuses (a `valuesMerge` it does not know,
/// a missing default values file, `releaseName` with `nameTemplate`, a template that fails) is a
/// `kustomize-error` at the kustomization, where kubectl fails too; a chart it would pull is a
/// note, and one it finds renders.
#[test]
#[cfg_attr(
    not(has_kubectl),
    ignore = "kubectl is neither on PATH nor at /usr/bin/kubectl"
)]
fn refused_helm_charts_are_errors_as_kubectl_fails_them() {
    let kubectl = find_kubectl();
    common::require_program("kubectl", kubectl.is_some(), "install kubectl");
    let kubectl = kubectl.unwrap();
    if common::find_helm().is_none() {
        eprintln!("skip: helm is not installed (scripts/install-helm.sh)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    let chart = |dir: &Path, values: bool, template: &str| {
        let c = dir.join("charts/web");
        std::fs::create_dir_all(c.join("templates")).unwrap();
        std::fs::write(
            c.join("Chart.yaml"),
            "apiVersion: v2\nname: web\nversion: 1.0.0\n",
        )
        .unwrap();
        if values {
            std::fs::write(c.join("values.yaml"), "name: web\n").unwrap();
        }
        std::fs::write(c.join("templates/cm.yaml"), template).unwrap();
    };
    let cm =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name | default \"x\" }}\n";
    let cases = [
        (
            "bad-merge",
            "  - {name: web, releaseName: r, valuesMerge: deep}\n",
            true,
            cm,
            true,
        ),
        (
            "no-values",
            "  - {name: web, releaseName: r}\n",
            false,
            cm,
            true,
        ),
        (
            "two-names",
            "  - {name: web, releaseName: r, nameTemplate: n}\n",
            true,
            cm,
            true,
        ),
        (
            "fails",
            "  - {name: web, releaseName: r}\n",
            true,
            "{{ fail \"no\" }}\n",
            true,
        ),
        (
            "renders",
            "  - {name: web, releaseName: r}\n",
            true,
            cm,
            false,
        ),
    ];
    for (name, entry, values, template, refused) in cases {
        let dir = work.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        chart(&dir, values, template);
        std::fs::write(
            dir.join("kustomization.yaml"),
            format!("helmCharts:\n{entry}"),
        )
        .unwrap();
        std::fs::write(
            work.path().join(format!("{name}-app.yaml")),
            format!(
                "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {name}, namespace: argocd}}\nspec:\n  project: default\n  source: {{repoURL: https://example.com/r.git, path: {name}}}\n  destination: {{server: https://kubernetes.default.svc, namespace: x}}\n"
            ),
        )
        .unwrap();
        let kubectl_refuses = kubectl_kustomize(&kubectl, &dir).is_err();
        assert_eq!(kubectl_refuses, refused, "{name}: kubectl");
    }
    let pulled = work.path().join("pulled");
    std::fs::create_dir(&pulled).unwrap();
    std::fs::write(
        pulled.join("kustomization.yaml"),
        "helmCharts:\n  - {name: redis, repo: https://charts.example.com, version: 1.0.0}\n",
    )
    .unwrap();
    let run = run_in(
        work.path(),
        &[
            "--format",
            "json",
            "--fail-on",
            "never",
            "--repo-url",
            "https://example.com/r.git",
            ".",
        ],
        LIMIT,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let refused: BTreeSet<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "kustomize-error")
        .map(|f| f["file"].as_str().unwrap().to_string())
        .collect();
    // A template that fails is reported at its line, as `helm-error` reports it; the other
    // refusals at the entry.
    let expected: BTreeSet<String> = cases
        .iter()
        .filter(|c| c.4)
        .map(|c| match c.0 {
            "fails" => "fails/charts/web/templates/cm.yaml".to_string(),
            name => format!("{name}/kustomization.yaml"),
        })
        .collect();
    assert_eq!(refused, expected, "{report:#}");
    let notes: Vec<&str> = report["summary"]["not_rendered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["file"].as_str().unwrap())
        .collect();
    assert!(notes.contains(&"pulled/kustomization.yaml"), "{notes:?}");
}
