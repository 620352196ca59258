//! Helm charts rendered in-process, as `helm template` renders them for Argo CD (helm
//! v3.17.2: `pkg/action/install.go`, `pkg/engine/engine.go`, `pkg/chartutil`,
//! `pkg/releaseutil`), without running Helm and without the network.
//!
//! The stages follow Helm's: [`chart`] loads the chart and its vendored subcharts, [`values`]
//! reads and coalesces values, [`deps`] decides which subcharts are enabled and imports their
//! values, [`render`] builds each chart's scope and runs every template through the Go
//! template engine of [`crate::render::template`], and [`manifests`] splits the output into
//! documents as Helm's manifest sorter does.

mod app;
mod archive;
mod argo;
pub mod chart;
mod deps;
mod host;
mod manifests;
mod run;
pub mod schema;
pub mod values;

pub(in crate::render) use app::{
    failure_span, not_rendered, render as render_source, render_standalone,
};

pub use chart::{load, Chart, LoadError};
pub use manifests::{Manifest, ManifestKind};
pub use run::{Loaded, Prefilled, Rendered, Renders, RUN_WORK_STEPS};

use crate::render::budget::Budget as Work;
use crate::render::template::{Dialect, TemplateError, TemplateSet};
use serde_json::{json, Value};
use values::Map;

/// The Kubernetes version `.Capabilities` reports unless told otherwise: what helm v3.17.2
/// reports without `--kube-version` (it is built against client-go v0.32).
pub const DEFAULT_KUBE_VERSION: &str = "v1.32.0";

/// Work one chart may take (template steps and bytes copied, as [`Work`] counts them): the
/// largest popular charts take a small fraction of it; a hostile one stops here.
pub const WORK_STEPS: u64 = 50 * crate::render::budget::UNIT_STEPS;

/// How one chart is rendered: what Argo CD passes to `helm template`
/// (argo-cd v3.5.1 `util/helm/cmd.go`, `template`).
#[derive(Debug, Clone)]
pub struct Options {
    /// `--name-template`: the Application's `releaseName`, else its name.
    pub release_name: String,
    /// `--namespace`: the destination namespace.
    pub namespace: String,
    /// `--values`, in order, already read (value files, then `values`/`valuesObject`).
    pub values: Vec<Map>,
    /// `--set` (false) and `--set-string` (true) lines, in order.
    pub set: Vec<(String, bool)>,
    /// `--include-crds`: Argo CD passes it unless `skipCrds`.
    pub include_crds: bool,
    /// `--skip-tests`.
    pub skip_tests: bool,
    /// `--kube-version`, `vMAJOR.MINOR.PATCH`.
    pub kube_version: String,
    /// `--api-versions`, added to the built-in list.
    pub api_versions: Vec<String>,
    /// `--skip-schema-validation`: the Application's `helm.skipSchemaValidation`.
    pub skip_schema_validation: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            release_name: "release-name".into(),
            namespace: "default".into(),
            values: Vec::new(),
            set: Vec::new(),
            include_crds: false,
            skip_tests: false,
            kube_version: DEFAULT_KUBE_VERSION.into(),
            api_versions: Vec::new(),
            skip_schema_validation: false,
        }
    }
}

/// Why a chart did not render, and where when a template says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    /// The template file and its 1-based line and column the error names.
    pub at: Option<(std::path::PathBuf, usize, usize)>,
    /// The values (keys from the top) the failure is about, most telling first: where
    /// `values.schema.json` refuses them.
    pub values: Vec<Vec<String>>,
}

/// Whose failure it is: Helm fails too ([`FailureKind::Invalid`]), or this renderer cannot
/// follow the chart offline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    Invalid,
    /// Helm renders it, but something it calls is not evaluated offline (`toToml`).
    Unsupported,
    /// Past a bound of this renderer: the chart's own work budget, output size, depth.
    Limit,
    /// The run's budget for Helm was spent by the charts before this one.
    Run,
    /// What the chart needs is outside the repository (a dependency Argo CD fetches, a value
    /// file of another repository) or cannot be known offline: noted, never guessed.
    Unknown,
}

impl Failure {
    pub(crate) fn of_kind(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            at: None,
            values: Vec::new(),
        }
    }

    fn invalid(message: impl Into<String>) -> Failure {
        Failure::of_kind(FailureKind::Invalid, message)
    }

    /// A template error, located in the file it names (`template: NAME:LINE:COL: ...`).
    fn from_template(e: TemplateError, paths: &[(String, std::path::PathBuf)]) -> Failure {
        use crate::render::template::ErrorKind;
        let kind = match e.kind {
            ErrorKind::Invalid => FailureKind::Invalid,
            ErrorKind::Unsupported => FailureKind::Unsupported,
            ErrorKind::Limit | ErrorKind::Budget(_) => FailureKind::Limit,
        };
        let at = e.message.strip_prefix("template: ").and_then(|rest| {
            let mut parts = rest.splitn(4, ':');
            let name = parts.next()?;
            let line: usize = parts.next()?.trim().parse().ok()?;
            let col: usize = parts
                .next()
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(1);
            let path = paths.iter().find(|(n, _)| n == name)?.1.clone();
            Some((path, line, col))
        });
        // Helm marks the messages of `fail` and `required` (engine.go `warnWrap`).
        let message = match (
            e.message.find("HELM_ERR_START"),
            e.message.find("HELM_ERR_END"),
        ) {
            (Some(a), Some(b)) if a < b => e.message[a + "HELM_ERR_START".len()..b].to_string(),
            _ => e.message,
        };
        Failure {
            kind,
            message,
            at,
            values: Vec::new(),
        }
    }
}

/// Where a stretch of a rendered document comes from: a template's text copied as it is, or
/// what one of its actions printed ([`crate::render::template::Piece`], with files named on
/// disk and printed values named by where they are in the values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced {
    /// Where the stretch starts in the document's text.
    pub out: usize,
    /// The template file, and the byte range there: the text's own, or the action's.
    pub file: std::path::PathBuf,
    pub src: (usize, usize),
    /// Copied text: document byte `out + k` is byte `src.0 + k` of `file`.
    pub copied: bool,
    /// In the document's own template file ([`Manifest::path`]): the node that was running,
    /// for a stretch another file (a `_helpers.tpl`) wrote.
    pub top: (usize, usize),
    /// The value an action printed as it is, when it printed one.
    pub value: Option<ValueAt>,
}

/// A value of the chart's values, by its keys from the top (`["frontend", "replicaCount"]`),
/// with the chart whose scope printed it and how many keys lead from the top to that scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueAt {
    pub path: Vec<String>,
    pub chart: std::path::PathBuf,
    pub scope: usize,
}

/// Addresses of the scalars under `v`, with their keys: what a printed value is matched to.
fn leaves(v: &Value, path: &mut Vec<String>, out: &mut foldhash::HashMap<usize, Vec<String>>) {
    if out.len() > 200_000 || path.len() > 64 {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                path.push(k.clone());
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.push(i.to_string());
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => {
            out.insert(v as *const Value as usize, path.clone());
        }
    }
}

/// Renders `chart` as `helm template` would, with `opts`.
pub fn render(chart: &Chart, opts: &Options, work: &mut Work) -> Result<Vec<Manifest>, Failure> {
    // `helm template` refuses a chart whose dependencies are not all in charts/
    // (cmd/helm/install.go).
    if let Some(missing) = unvendored(chart) {
        return Err(missing);
    }
    render_vendored(chart, opts, work)
}

/// What of `chart` Argo CD renders that the repository holds. Argo CD's repo-server runs
/// `helm dependency build` first, which fetches the dependencies `charts/` lacks: offline
/// they are unknown and nothing is guessed about them, but the chart's own templates and the
/// subcharts it vendors render as they would beside them, so that naming a dependency does not
/// keep the chart from being checked. Where they fail without it, the failure is unknown.
pub fn render_known(
    chart: &Chart,
    opts: &Options,
    work: &mut Work,
) -> Result<Vec<Manifest>, Failure> {
    match (unvendored(chart), render_vendored(chart, opts, work)) {
        (Some(missing), Err(f)) if f.kind == FailureKind::Invalid => Err(Failure {
            kind: FailureKind::Unknown,
            message: format!("{}; without it: {}", missing.message, f.message),
            ..f
        }),
        (_, rendered) => rendered,
    }
}

/// The dependencies of `Chart.yaml` that `charts/` does not hold, as a failure.
pub fn unvendored(chart: &Chart) -> Option<Failure> {
    let missing: Vec<&str> = chart
        .deps
        .iter()
        .filter(|r| !chart.subcharts.iter().any(|c| c.name == r.name))
        .map(|r| r.name.as_str())
        .collect();
    (!missing.is_empty()).then(|| {
        Failure::of_kind(
            FailureKind::Unknown,
            format!(
                "dependency {} not in charts/ (Argo CD fetches it with `helm dependency build`)",
                missing.join(", ")
            ),
        )
    })
}

fn render_vendored(
    chart: &Chart,
    opts: &Options,
    work: &mut Work,
) -> Result<Vec<Manifest>, Failure> {
    let mut user = Map::new();
    for v in &opts.values {
        values::merge_maps(&mut user, v.clone());
    }
    for (line, string) in &opts.set {
        values::parse_set(line, &mut user, *string)
            .map_err(|e| Failure::invalid(format!("failed parsing --set data: {e}")))?;
    }
    let mut chart = chart.clone();
    deps::process(&mut chart, &user).map_err(Failure::invalid)?;
    let mut top = user;
    deps::coalesce(&chart, &mut top, false).map_err(Failure::invalid)?;
    let mut top = Value::Object(top);
    values::bounded(&mut top, 0);
    // chartutil.ToRenderValuesWithSchemaValidation, on the coalesced values, before anything
    // renders (install.go).
    if !opts.skip_schema_validation {
        match schema::validate_chart(&chart, &top, work) {
            Ok(None) => {}
            Ok(Some(refused)) => {
                return Err(Failure {
                    values: refused.paths,
                    ..Failure::invalid(refused.message)
                })
            }
            Err(_) => {
                return Err(Failure {
                    kind: FailureKind::Limit,
                    ..Failure::invalid("values.schema.json validation takes more work than allowed")
                })
            }
        }
    }
    // action.go renderResources: the chart's `kubeVersion` must accept the cluster's.
    let kube = format!("v{}", opts.kube_version.trim_start_matches('v'));
    if let Some(Value::String(wanted)) = chart.meta.get("KubeVersion") {
        let ok = wanted.is_empty()
            || crate::render::template::semver_matches(wanted, &kube).unwrap_or(false);
        if !ok {
            return Err(Failure::invalid(format!(
                "chart requires kubeVersion: {wanted} which is incompatible with Kubernetes {kube}"
            )));
        }
    }

    let caps = capabilities(opts);
    let release = json!({
        "Name": opts.release_name,
        "Namespace": opts.namespace,
        "Revision": 1,
        "Service": "Helm",
        "IsUpgrade": false,
        "IsInstall": true,
    });
    let mut scopes = Vec::new();
    let mut charts = Vec::new();
    scope(
        &chart,
        &chart.name,
        &[],
        &top,
        &release,
        &caps,
        &mut scopes,
        &mut charts,
    );
    let host = host::Files::new(&charts, opts);
    let prefixes: Vec<Vec<String>> = charts.iter().map(|(_, _, p)| p.clone()).collect();

    let mut names: Vec<(String, usize, &str)> = Vec::new();
    for (index, (c, full, _)) in charts.iter().enumerate() {
        for (name, text) in &c.templates {
            // A library chart lends its partials only (engine.go, isTemplateValid).
            if c.library && !base(name).starts_with('_') {
                continue;
            }
            names.push((format!("{full}/{name}"), index, text));
        }
    }
    // engine.go sortTemplates: deeper paths first, then reverse lexical order, so that a
    // parent's definitions, parsed last, win over its subcharts'.
    names.sort_by(|a, b| {
        let (ca, cb) = (a.0.matches('/').count(), b.0.matches('/').count());
        cb.cmp(&ca).then_with(|| b.0.cmp(&a.0))
    });
    let paths: Vec<(String, std::path::PathBuf)> = names
        .iter()
        .map(|(name, index, _)| {
            let (c, full, _) = &charts[*index];
            let rel = name.get(full.len() + 1..).unwrap_or(name);
            (name.clone(), c.dir.join(rel))
        })
        .collect();
    let mut set = TemplateSet::new(Dialect::Helm);
    // Parsed on this thread: spread over the pool, the trees were slower to build and to
    // free (each freed on another thread than the one that built it) than parsing gained.
    for (name, _, text) in &names {
        set.add(name, text, work)
            .map_err(|e| Failure::from_template(e, &paths))?;
    }
    // Every template of a scope runs on the same data, as in Helm, where they share one
    // `.Values`: a map a template changes (`set .Values.x ...`) is changed for the templates
    // after it (see template::shared). The data stays put meanwhile: `.Template` has its key
    // from the start and only its value is swapped, and the values swapped out are kept, so
    // that no address is reused.
    for data in &mut scopes {
        if let Value::Object(m) = data {
            m.insert("Template".into(), Value::Null);
        }
    }
    let mut printed_by_scope: Vec<Option<foldhash::HashMap<usize, Vec<String>>>> =
        vec![None; scopes.len()];
    let mut retired: Vec<Value> = Vec::new();
    // Two subcharts may share a name, and so their templates' names: the first file of a
    // name is the one a stretch of output is traced to.
    let mut file_of: foldhash::HashMap<&str, &std::path::Path> = Default::default();
    for (n, path) in &paths {
        file_of.entry(n.as_str()).or_insert(path.as_path());
    }
    let placed = std::sync::Mutex::new(Vec::new());
    // Templates run one after the other (they share the data); the output of each is split
    // and read beside the next one's run.
    rayon::in_place_scope(|tasks| -> Result<(), Failure> {
        // The changes are kept on the thread that runs the templates: this one, which runs
        // nothing else until the templates are done.
        let _shared = crate::render::template::SharedMaps::new();
        for (position, (name, index, _)) in names.iter().enumerate() {
            if base(name).starts_with('_') {
                continue;
            }
            let (c, full, _) = &charts[*index];
            let template = json!({"Name": name, "BasePath": format!("{full}/templates")});
            if let Some(slot) = scopes.get_mut(*index).and_then(|d| d.get_mut("Template")) {
                retired.push(std::mem::replace(slot, template));
            }
            let Some(data) = scopes.get(*index) else {
                continue;
            };
            let (out, pieces) = set
                .execute_traced(name, data, Some(&host), work)
                .map_err(|e| Failure::from_template(e, &paths))?;
            // install.go renderResources: NOTES.txt is rendered, never printed.
            if name.ends_with("NOTES.txt") {
                continue;
            }
            let printed = printed_by_scope[*index].get_or_insert_with(|| {
                let mut printed = foldhash::HashMap::default();
                if let Some(v) = data.get("Values") {
                    leaves(v, &mut Vec::new(), &mut printed);
                }
                printed
            });
            let prefix = &prefixes[*index];
            let traced = pieces
                .into_iter()
                .map(|p| Traced {
                    out: p.out,
                    file: file_of
                        .get(&*p.file)
                        .map(|path| path.to_path_buf())
                        .unwrap_or_default(),
                    src: p.src,
                    copied: p.copied,
                    top: p.top,
                    value: p.value.and_then(|a| printed.get(&a)).map(|own| ValueAt {
                        path: prefix.iter().chain(own).cloned().collect(),
                        chart: c.dir.clone(),
                        scope: prefix.len(),
                    }),
                })
                .collect();
            let rel = name.get(full.len() + 1..).unwrap_or(name);
            let file = manifests::Rendered {
                name: name.clone(),
                path: c.dir.join(rel),
                out,
                traced,
            };
            let placed = &placed;
            let skip_tests = opts.skip_tests;
            tasks.spawn(move |_| {
                let done = (
                    file.name.clone(),
                    position,
                    manifests::place(file, skip_tests),
                );
                if let Ok(mut all) = placed.lock() {
                    all.push(done);
                }
            });
        }
        Ok(())
    })?;
    let mut placed = placed.into_inner().unwrap_or_else(|e| e.into_inner());
    // By name, and files of one name in the order they ran, whichever task ended first.
    placed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut out = Vec::new();
    if opts.include_crds {
        out.extend(manifests::crds(&chart));
    }
    out.extend(manifests::order(placed.into_iter().map(|(_, _, p)| p)).map_err(Failure::invalid)?);
    Ok(out)
}

fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// `.Capabilities`: the Kubernetes version asked for and the API versions Helm knows.
fn capabilities(opts: &Options) -> Value {
    let v = opts.kube_version.trim_start_matches('v');
    let mut parts = v.split('.');
    let major = parts.next().unwrap_or("1").to_string();
    let minor = parts.next().unwrap_or("0").to_string();
    let version = format!("v{v}");
    json!({
        "KubeVersion": {
            "Version": version,
            "GitVersion": version,
            "Major": major,
            "Minor": minor,
        },
        "APIVersions": { crate::render::template::HOST_KEY: "apis" },
        "HelmVersion": {
            "Version": "v3.17.2",
            "GitCommit": "cc0bbbd6d6276b83880042c1ecb34087e84d41eb",
            "GitTreeState": "clean",
            "GoVersion": "go1.23.7",
        },
    })
}

/// engine.go recAllTpls: each chart's scope (`.Values` its own table of the parent's), its
/// subcharts' scopes under `.Subcharts`, in the order charts are listed in `charts`.
#[allow(clippy::too_many_arguments)]
fn scope<'c>(
    c: &'c Chart,
    full: &str,
    prefix: &[String],
    parent_values: &Value,
    release: &Value,
    caps: &Value,
    scopes: &mut Vec<Value>,
    charts: &mut Vec<(&'c Chart, String, Vec<String>)>,
) -> Value {
    let root = prefix.is_empty() && charts.is_empty();
    let values = if root {
        parent_values.clone()
    } else {
        match parent_values.get(&c.name) {
            Some(v @ Value::Object(_)) => v.clone(),
            _ => Value::Object(Map::new()),
        }
    };
    let index = charts.len();
    charts.push((c, full.to_string(), prefix.to_vec()));
    scopes.push(Value::Null);
    let mut subcharts = Map::new();
    for sub in &c.subcharts {
        let sub_full = format!("{full}/charts/{}", sub.name);
        let sub_prefix: Vec<String> = prefix.iter().cloned().chain([sub.name.clone()]).collect();
        let s = scope(
            sub,
            &sub_full,
            &sub_prefix,
            &values,
            release,
            caps,
            scopes,
            charts,
        );
        subcharts.insert(sub.name.clone(), s);
    }
    let mut meta = c.meta.clone();
    meta.insert("IsRoot".into(), Value::Bool(root));
    let next = json!({
        "Chart": meta,
        "Files": { crate::render::template::HOST_KEY: format!("files:{index}") },
        "Release": release,
        "Capabilities": caps,
        "Values": values,
        "Subcharts": subcharts,
    });
    scopes[index] = next.clone();
    next
}
