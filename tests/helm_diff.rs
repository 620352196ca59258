//! Differential test of the in-process Helm renderer against the real `helm template`.
//!
//! The cases are the rows of a `matrix.tsv` (columns: chart folder, values file or `-`, extra
//! flags or `-`, expected exit code, object count, whether two runs agree): the project's own
//! `fixtures/helm/matrix.tsv`, and the chart corpus's (`../shared/charts/matrix.tsv`, or the
//! folder `GITOPS_LINT_CHARTS` names) when it is there. Each case runs
//! `helm template rel CHART [-f VALUES] FLAGS` in the matrix's folder and
//! `gitops-lint render CHART --release-name rel [--values VALUES] FLAGS`; the outputs must hold the
//! same objects, or both must fail. Where helm itself differs between two runs (random
//! passwords, generated certificates), the paths that differ are left out of the comparison.
//!
//! `tests/data/helm-known-differences.txt` lists the cases that do not agree yet, each with its
//! cause: a listed case that now agrees fails the test too, so the list only shrinks.
//!
//! Without helm (on PATH or in `~/.local/bin`; `scripts/install-helm.sh` installs it) the test is
//! ignored with the reason. `HELM_DIFF_CASE=<chart>` runs the cases of one chart only.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::objects::{compare, identity, json_diff, parse_stream};
use common::{root, run_command, run_in};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const KNOWN: &str = "tests/data/helm-known-differences.txt";

struct Case {
    /// Folder the chart path and values path are relative to.
    base: PathBuf,
    chart: String,
    values: Option<String>,
    flags: Vec<String>,
    fails: bool,
}

impl Case {
    fn name(&self) -> String {
        let mut n = self.chart.clone();
        if let Some(v) = &self.values {
            n.push(' ');
            n.push_str(v);
        }
        for f in &self.flags {
            n.push(' ');
            n.push_str(f);
        }
        n
    }
}

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("GITOPS_LINT_CHARTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/charts"));
    dir.join("matrix.tsv").is_file().then_some(dir)
}

fn read_matrix(base: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(base.join("matrix.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert!(cols.len() >= 4, "matrix row with too few columns: {line}");
            Case {
                base: base.to_path_buf(),
                chart: cols[0].to_string(),
                values: (cols[1] != "-").then(|| format!("{}/{}", cols[0], cols[1])),
                flags: if cols[2] == "-" {
                    Vec::new()
                } else {
                    cols[2].split_whitespace().map(str::to_string).collect()
                },
                fails: cols[3] != "0",
            }
        })
        .collect()
}

fn helm(helm: &Path, case: &Case) -> Result<String, String> {
    let mut cmd = Command::new(helm);
    cmd.args(["template", "rel", &case.chart]);
    if let Some(v) = &case.values {
        cmd.args(["-f", v]);
    }
    let home = tempfile::tempdir().unwrap();
    cmd.args(&case.flags)
        .current_dir(&case.base)
        // Rendering reads local files only; nothing could reach a network anyway.
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("XDG_DATA_HOME", home.path())
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9");
    let run = run_command(cmd, "helm template", LIMIT);
    if run.code == 0 {
        Ok(run.stdout)
    } else {
        Err(run.stderr)
    }
}

fn ours(case: &Case) -> Result<Vec<Value>, String> {
    let mut args = vec![
        "render".to_string(),
        case.chart.clone(),
        "--release-name".into(),
        "rel".into(),
    ];
    if let Some(v) = &case.values {
        args.push("--values".into());
        args.push(v.clone());
    }
    args.extend(case.flags.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_in(&case.base, &args, LIMIT);
    if run.code != 0 {
        return Err(run.stderr);
    }
    match serde_json::from_str::<Value>(&run.stdout) {
        Ok(Value::Array(items)) => Ok(items),
        other => Err(format!(
            "gitops-lint render printed no JSON array: {other:?}"
        )),
    }
}

/// Replaces, in every object, the values at `paths` (JSON pointers) by a marker.
fn mask(objects: &mut [Value], id: &str, paths: &[String]) {
    for obj in objects.iter_mut().filter(|o| identity(o) == id) {
        for p in paths {
            if let Some(v) = obj.pointer_mut(p) {
                *v = Value::String("<differs between helm runs>".into());
            }
        }
    }
}

/// The paths at which two helm runs disagree, by object identity.
fn unstable(a: &[Value], b: &[Value]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for x in a {
        let id = identity(x);
        if let Some(y) = b.iter().find(|y| identity(y) == id) {
            let mut paths = Vec::new();
            json_diff("helm", "", x, y, &mut paths);
            let pointers: Vec<String> = paths
                .iter()
                .filter_map(|p| p.split(':').next().map(str::to_string))
                .collect();
            if !pointers.is_empty() {
                out.push((id, pointers));
            }
        }
    }
    out
}

/// Objects named at random (podinfo's test pods, `randAlphaNum`) have another name in each
/// helm run: their names are masked, in helm's output and in ours for the objects of the same
/// apiVersion, kind and namespace that helm's output does not name. Everything else about them
/// is still compared.
fn mask_random_names(theirs: &mut [Value], again: &[Value], mine: &mut [Value]) {
    let shape = |o: &Value| {
        let mut o = o.clone();
        if let Some(name) = o.pointer_mut("/metadata/name") {
            *name = Value::Null;
        }
        identity(&o)
    };
    let named: Vec<String> = theirs.iter().map(identity).collect();
    let random: Vec<String> = theirs
        .iter()
        .filter(|o| !again.iter().any(|a| identity(a) == identity(o)))
        .map(shape)
        .collect();
    let marker = || Value::String("<random in helm>".into());
    for o in theirs.iter_mut() {
        if !again.iter().any(|a| identity(a) == identity(o)) {
            if let Some(name) = o.pointer_mut("/metadata/name") {
                *name = marker();
            }
        }
    }
    for o in mine.iter_mut() {
        if !named.contains(&identity(o)) && random.contains(&shape(o)) {
            if let Some(name) = o.pointer_mut("/metadata/name") {
                *name = marker();
            }
        }
    }
}

fn check(helm_bin: &Path, case: &Case) -> Result<usize, String> {
    let first = helm(helm_bin, case);
    let mine = ours(case);
    if case.fails {
        return match (first, mine) {
            (Err(_), Err(_)) => Ok(0),
            (Ok(_), _) => Err("  fixture problem: helm was expected to fail".into()),
            (Err(e), Ok(_)) => Err(format!("  helm fails, ours renders; helm said: {e}")),
        };
    }
    let text = first.map_err(|e| format!("  fixture problem: helm failed: {e}"))?;
    let mut theirs = parse_stream(&text).map_err(|e| format!("  {e}"))?;
    let mut mine = mine.map_err(|e| format!("  ours failed: {e}"))?;
    let again = parse_stream(&helm(helm_bin, case).unwrap()).unwrap();
    for (id, paths) in unstable(&theirs, &again) {
        mask(&mut theirs, &id, &paths);
        mask(&mut mine, &id, &paths);
    }
    mask_random_names(&mut theirs, &again, &mut mine);
    let count = theirs.len();
    match compare("helm", theirs, mine) {
        None => Ok(count),
        Some(report) => Err(report),
    }
}

#[test]
#[cfg_attr(
    not(has_helm),
    ignore = "helm is not installed: scripts/install-helm.sh"
)]
fn renderer_matches_helm_template() {
    let helm_bin = common::find_helm();
    common::require_program("helm", helm_bin.is_some(), "run scripts/install-helm.sh");
    let helm_bin = helm_bin.unwrap();
    let mut cases = read_matrix(&root().join("fixtures/helm"));
    match corpus() {
        Some(dir) => cases.extend(read_matrix(&dir)),
        None => eprintln!(
            "NOTE: no chart corpus at ../shared/charts (or GITOPS_LINT_CHARTS): only the project's own charts are compared"
        ),
    }
    if let Ok(only) = std::env::var("HELM_DIFF_CASE") {
        cases.retain(|c| c.chart == only);
        assert!(!cases.is_empty(), "HELM_DIFF_CASE={only} names no chart");
    }
    let known: BTreeSet<String> = std::fs::read_to_string(root().join(KNOWN))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    let (mut agree, mut unexpected, mut fixed) = (0, Vec::new(), Vec::new());
    for case in &cases {
        let name = case.name();
        match check(&helm_bin, case) {
            Ok(n) => {
                agree += 1;
                eprintln!("ok   {name} ({n} objects)");
                if known.contains(&name) {
                    fixed.push(name);
                }
            }
            Err(report) if known.contains(&name) => {
                eprintln!("known {name}\n{report}");
            }
            Err(report) => {
                eprintln!("FAIL {name}\n{report}");
                unexpected.push(name);
            }
        }
    }
    eprintln!(
        "{agree} of {} cases render as helm renders them",
        cases.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} cases differ from helm template (details above): {}",
        unexpected.len(),
        unexpected.join(", ")
    );
    assert!(
        fixed.is_empty(),
        "these cases now agree with helm: remove them from {KNOWN}: {}",
        fixed.join(", ")
    );
}
