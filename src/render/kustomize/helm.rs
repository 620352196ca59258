//! `helmCharts:` with the chart vendored where kustomize looks for it, rendered in-process as
//! kustomize's Helm generator has `helm template` render it (kustomize v5.5.0
//! `api/internal/builtins/HelmChartInflationGenerator.go`, `api/types/helmchartargs.go`
//! `AsHelmArgs`). A chart kustomize would pull first (`helm pull`) is noted as not rendered:
//! gitops-lint never fetches.

use super::{is_remote, problem, Kustomizer, Res};
use crate::render::helm::{self, values::Map, ManifestKind};
use crate::render::{Files, Linked, Note, Unread};
use crate::yaml::{Node, ParseLimits};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `types.HelmDefaultHome`.
const DEFAULT_HOME: &str = "charts";
/// Nesting of `valuesInline` read as values, as Helm's values are bounded.
const MAX_VALUES_DEPTH: usize = 256;

impl Kustomizer<'_> {
    /// Renders each entry of `helmCharts`, after the ConfigMap and Secret generators, as
    /// kustomize runs its built-in generators (`configureBuiltinGenerators`).
    pub(super) fn helm_charts(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        let Some(entry) = k.entry("helmCharts").filter(|e| !e.value.is_null()) else {
            return;
        };
        let home = chart_home(k);
        let mut pulled = false;
        for item in entry.value.items() {
            pulled |= self.helm_chart(dir, item, &home, res) == Local::No;
        }
        // One note for the field, however many charts kustomize would pull.
        if pulled {
            self.opaque = true;
            self.notes.push(Note {
                span: entry.key.span,
                message: "`helmCharts` not rendered: Helm charts are not inflated offline".into(),
            });
        }
    }

    /// What `helm template` is asked for one entry, or, when nothing is (a problem was
    /// recorded, or the chart is not here), whether the chart was found locally.
    fn helm_request(&mut self, dir: &Path, item: &Node, home: &str) -> Result<Request, Local> {
        let text = |key: &str| item.str_at(key).unwrap_or("").to_string();
        let name = text("name");
        if name.is_empty() {
            self.problems.push(problem(
                item.span,
                "a `helmCharts` entry without a `name`: kustomize fails the build (chart name cannot be empty)",
                "name the chart",
            ));
            return Err(Local::Yes);
        }
        let merge = match text("valuesMerge").as_str() {
            "" | "override" => Merge::Override,
            "merge" => Merge::Combine,
            "replace" => Merge::Replace,
            other => {
                self.problems.push(problem(
                    item.span,
                    format!("`valuesMerge: {other}`: kustomize fails the build (valuesMerge must be one of [merge override replace])"),
                    "use `merge`, `override` or `replace`",
                ));
                return Err(Local::Yes);
            }
        };
        let (version, repo) = (text("version"), text("repo"));
        // absChartHome: a versioned chart from a repository has a folder of its own.
        let rel = if !version.is_empty() && !repo.is_empty() {
            format!("{home}/{name}-{version}/{name}")
        } else {
            format!("{home}/{name}")
        };
        let Some(chart_dir) = self.local_chart(dir, &rel) else {
            return Err(Local::No);
        };
        let mut values = Vec::new();
        let inline = item
            .get("valuesInline")
            .filter(|n| n.is_map() && !n.entries().is_empty());
        // Generate: inline values are merged with the values file (or stand alone with
        // `replace`); without them the values file is passed as it is.
        let file_values = if inline.is_some() && merge == Merge::Replace {
            None
        } else {
            let written = text("valuesFile");
            let (path, shown) = if written.is_empty() {
                (chart_dir.join("values.yaml"), format!("{rel}/values.yaml"))
            } else {
                if self.remote_values(item, &written) {
                    return Err(Local::Yes);
                }
                match self.files.resolve(dir, &written) {
                    Ok(p) => (p, written.clone()),
                    Err(e) => {
                        self.problems.push(problem(
                            item.span,
                            e.message(&written),
                            "keep the values file inside the kustomization",
                        ));
                        return Err(Local::Yes);
                    }
                }
            };
            let Some(map) = self.values_file(dir, item, path, &shown) else {
                return Err(Local::Yes);
            };
            Some(map)
        };
        let main = match (inline, file_values) {
            (Some(node), file) => {
                let Some(Value::Object(inline)) = crate::yaml::to_go_json(node, MAX_VALUES_DEPTH)
                else {
                    self.not_rendered(
                        helm::FailureKind::Limit,
                        format!("`valuesInline` nests deeper than {MAX_VALUES_DEPTH} levels"),
                        item.span,
                    );
                    return Err(Local::Yes);
                };
                match (merge, file) {
                    (Merge::Override, Some(mut file)) => {
                        merge2(&inline, &mut file, 0);
                        file
                    }
                    (Merge::Combine, Some(file)) => {
                        let mut out = inline;
                        merge2(&file, &mut out, 0);
                        out
                    }
                    (_, _) => inline,
                }
            }
            (None, file) => file.unwrap_or_default(),
        };
        values.push(main);
        for extra in item
            .get("additionalValuesFiles")
            .map(Node::items)
            .unwrap_or(&[])
        {
            let Some(written) = extra.as_str() else {
                continue;
            };
            if self.remote_values(extra, written) {
                return Err(Local::Yes);
            }
            let path = match self.files.resolve(dir, written) {
                Ok(p) => p,
                Err(e) => {
                    self.problems.push(problem(
                        extra.span,
                        e.message(written),
                        "keep the values file inside the kustomization",
                    ));
                    return Err(Local::Yes);
                }
            };
            let Some(map) = self.values_file(dir, extra, path, written) else {
                return Err(Local::Yes);
            };
            values.push(map);
        }
        let release_name = match self.release_name(item, &name) {
            Ok(n) => n,
            Err(message) => {
                self.problems.push(problem(
                    item.span,
                    message,
                    "set either `releaseName` or `nameTemplate`",
                ));
                return Err(Local::Yes);
            }
        };
        let namespace = Some(text("namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let kube_version = Some(text("kubeVersion"))
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| helm::DEFAULT_KUBE_VERSION.into());
        let api_versions = item
            .get("apiVersions")
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        let opts = helm::Options {
            release_name,
            namespace,
            values,
            set: Vec::new(),
            include_crds: flag(item, "includeCRDs"),
            skip_tests: flag(item, "skipTests"),
            kube_version,
            api_versions,
            // kustomize v5.5 has no option to skip it (api/types/helmchartargs.go).
            skip_schema_validation: false,
        };
        Ok(Request {
            name,
            chart_dir,
            opts,
        })
    }

    /// Renders one chart into `res`; whether it was found locally.
    fn helm_chart(&mut self, dir: &Path, item: &Node, home: &str, res: &mut Vec<Res>) -> Local {
        let Request {
            name,
            chart_dir,
            opts,
        } = match self.helm_request(dir, item, home) {
            Ok(r) => r,
            Err(local) => return local,
        };
        let root = self.files.root_of(&chart_dir);
        // Every entry was rendered before the builds, in a fixed order under the run's budget
        // (`prefill`): an entry it did not meet is past that budget too.
        let unmet = || {
            helm::Failure::of_kind(
                helm::FailureKind::Run,
                "not rendered within the run's budget for Helm",
            )
        };
        let rendered = match self.helm.load(&chart_dir, &root) {
            Some(Ok(chart)) => {
                chart.chart.paths(&mut self.inputs);
                self.helm
                    .rendered(&chart, &opts)
                    .unwrap_or_else(|| Err(unmet()))
            }
            Some(Err(e)) => Err(helm::Failure::of_kind(e.kind, e.message)),
            None => Err(unmet()),
        };
        let manifests = match rendered {
            Ok(m) => m,
            Err(f) if f.kind == helm::FailureKind::Invalid => {
                let message = self.in_context(format!(
                    "`helm template` fails for chart `{name}`, so kustomize fails the build: {}",
                    f.message
                ));
                let span = helm::failure_span(self.files, &f).unwrap_or(item.span);
                self.problems.push(problem(
                    span,
                    message,
                    "fix the chart's values or templates",
                ));
                return Local::Yes;
            }
            Err(f) => {
                self.opaque = true;
                let span = helm::failure_span(self.files, &f).unwrap_or(item.span);
                match helm::not_rendered(&f, span) {
                    Some(p) => self.problems.push(p),
                    None => self.notes.push(Note {
                        span: item.span,
                        message: format!("`helmCharts` `{name}` not rendered: {}", f.message),
                    }),
                }
                return Local::Yes;
            }
        };
        if let Some(Ok(chart)) = self.helm.load(&chart_dir, &root) {
            if let Some(missing) = helm::unvendored(&chart.chart) {
                self.opaque = true;
                self.notes.push(Note {
                    span: item.span,
                    message: format!(
                        "`helmCharts` `{name}` rendered without what it does not vendor: {}",
                        missing.message
                    ),
                });
            }
        }
        let skip_hooks = flag(item, "skipHooks");
        let file = item.span.file;
        for m in manifests.iter() {
            if skip_hooks && m.kind == ManifestKind::Hook {
                continue;
            }
            let parsed = crate::yaml::parse(file, &m.text, ParseLimits::default());
            if let Some(p) = parsed
                .problems
                .iter()
                .find(|p| p.kind == crate::yaml::ProblemKind::InvalidYaml)
            {
                let message = self.in_context(format!(
                    "chart `{name}` renders YAML kustomize cannot read ({}): {}",
                    m.source, p.message
                ));
                self.problems
                    .push(problem(item.span, message, "fix the template"));
                return Local::Yes;
            }
            let mut docs = parsed.documents;
            // The objects point at the entry that made them: their text exists nowhere.
            for d in &mut docs {
                crate::render::respan_with(&mut d.root, &mut |_| item.span);
            }
            let (objects, _) = crate::model::recognise(file, &m.path, docs);
            res.extend(objects.into_iter().map(|mut o| {
                o.generated = true;
                Res::new(o)
            }));
        }
        Local::Yes
    }

    /// The chart folder at `rel` below the kustomization, when it is there as a folder inside
    /// the repository (`chartExistsLocally`).
    fn local_chart(&mut self, dir: &Path, rel: &str) -> Option<PathBuf> {
        let path = self.files.resolve(dir, rel).ok()?;
        self.inputs.push(path.join("Chart.yaml"));
        match self.files.follow(&path) {
            Linked::Inside(real) => std::fs::metadata(&real)
                .is_ok_and(|m| m.is_dir())
                .then_some(real),
            Linked::Outside | Linked::Missing => None,
        }
    }

    /// kustomize's loader fetches a values file given as an http(s) URL; gitops-lint never
    /// does, and the chart is not rendered then.
    fn remote_values(&mut self, item: &Node, written: &str) -> bool {
        if !is_remote(written) {
            return false;
        }
        self.opaque = true;
        self.notes.push(Note {
            span: item.span,
            message: format!(
                "remote values file `{written}` not rendered: gitops-lint never fetches"
            ),
        });
        true
    }

    /// A values file kustomize loads itself (its loader: under the kustomization's folder).
    fn values_file(&mut self, dir: &Path, item: &Node, path: PathBuf, shown: &str) -> Option<Map> {
        let path = self.through_links(path, shown, item)?;
        if self.restricted(dir, &path, shown, item) {
            return None;
        }
        self.inputs.push(path.clone());
        let why = match self.files.read_extra(&path) {
            Ok(text) => match helm::values::read_yaml(&text) {
                Ok(Value::Object(m)) => return Some(m),
                Ok(Value::Null) => return Some(Map::new()),
                Ok(_) => "not a mapping".to_string(),
                Err(e) => e,
            },
            Err(Unread::Skipped(why)) => {
                self.not_rendered(
                    helm::FailureKind::Limit,
                    format!("values file `{shown}` is not read: {why}"),
                    item.span,
                );
                return None;
            }
            Err(Unread::Missing) => "no such file in the repository".into(),
            Err(Unread::NotAFile) => "not a regular file".into(),
        };
        let message = self.in_context(format!(
            "`{shown}` cannot be read as Helm values: {why}; kustomize fails the build"
        ));
        self.problems
            .push(problem(item.span, message, "fix the path"));
        None
    }

    /// An entry the repository keeps from being rendered (past a bound here): a finding at
    /// the entry, never only a note, and what it would add is unknown to the build.
    fn not_rendered(&mut self, kind: helm::FailureKind, message: String, span: crate::yaml::Span) {
        self.opaque = true;
        let f = helm::Failure::of_kind(kind, message);
        self.problems.extend(helm::not_rendered(&f, span));
    }

    /// `helm template`'s release name as kustomize asks for it (`AsHelmArgs`, then helm's
    /// `NameAndChart`): `releaseName`, else `nameTemplate` rendered, else a generated name.
    fn release_name(&mut self, item: &Node, chart: &str) -> Result<String, String> {
        let release = item.str_at("releaseName").unwrap_or("");
        let template = item.str_at("nameTemplate").unwrap_or("");
        if !release.is_empty() {
            if !template.is_empty() {
                return Err("`releaseName` and `nameTemplate` together: helm fails (cannot set --name-template and also specify a name)".into());
            }
            return Ok(release.to_string());
        }
        if !template.is_empty() {
            use crate::render::template::{Dialect, TemplateSet};
            let mut work = crate::render::budget::Budget::new(crate::render::budget::UNIT_STEPS);
            let mut set = TemplateSet::new(Dialect::Helm);
            return set
                .add("name-template", template, &mut work)
                .and_then(|()| set.execute("name-template", &Value::Null, None, &mut work))
                .map_err(|e| format!("`nameTemplate`: helm fails: {e}"));
        }
        // `--generate-name`: the chart's name and the time; a fixed time stands in.
        let base = chart.rsplit('/').next().unwrap_or(chart);
        let base = base
            .split('.')
            .next()
            .filter(|b| !b.is_empty())
            .unwrap_or("chart");
        Ok(format!("{base}-0"))
    }
}

/// A `true` boolean field of an entry (kustomize reads them as Go booleans).
fn flag(item: &Node, key: &str) -> bool {
    matches!(
        item.get(key).and_then(|n| crate::yaml::to_go_json(n, 1)),
        Some(Value::Bool(true))
    )
}

/// `helmGlobals.chartHome`, where kustomize looks for charts.
fn chart_home(k: &Node) -> String {
    k.get("helmGlobals")
        .and_then(|g| g.str_at("chartHome"))
        .filter(|h| !h.is_empty())
        .unwrap_or(DEFAULT_HOME)
        .to_string()
}

/// What one `helmCharts` entry asks `helm template` for.
struct Request {
    name: String,
    chart_dir: PathBuf,
    opts: helm::Options,
}

/// Renders the `helmCharts` entries of every kustomization among the linted files (components
/// included), in file order and then entry order, into `renders`: the run's Helm budget is
/// spent in that order whatever the builds' threads, and each distinct chart and values once.
/// The builds look the renders up in what this returns.
pub fn prefill(files: &Files, renders: &mut helm::Renders) -> Arc<helm::Prefilled> {
    let mut scratch = Kustomizer::new(files);
    let mut requests = Vec::new();
    for (id, d) in files.docs.iter().enumerate() {
        let path = files.path(id as u32);
        if !crate::discover::is_kustomization_file(path) {
            continue;
        }
        let Some(k) = d.objects.first().map(|o| &o.root) else {
            continue;
        };
        let Some(entry) = k.entry("helmCharts").filter(|e| !e.value.is_null()) else {
            continue;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let home = chart_home(k);
        for item in entry.value.items() {
            let Ok(req) = scratch.helm_request(&dir, item, &home) else {
                continue;
            };
            let root = files.root_of(&req.chart_dir);
            if let Ok(chart) = renders.load(&req.chart_dir, &root) {
                requests.push((chart, req.opts));
            }
        }
    }
    renders.prefill(&requests);
    Arc::new(renders.prefilled())
}

/// Whether a chart was found where kustomize looks for it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Local {
    Yes,
    No,
}

/// `valuesMerge`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Merge {
    Override,
    Combine,
    Replace,
}

/// kyaml `merge2.Merge(src, dest)` on values without a schema: mappings merge key by key, a
/// null in `src` removes the key, anything else in `src` replaces (lists included: without a
/// schema none is associative).
fn merge2(src: &Map, dest: &mut Map, depth: usize) {
    for (key, value) in src {
        match (value, dest.get_mut(key)) {
            (Value::Null, _) => {
                dest.remove(key);
            }
            (Value::Object(s), Some(Value::Object(d))) if depth < MAX_VALUES_DEPTH => {
                merge2(s, d, depth + 1);
            }
            (v, _) => {
                dest.insert(key.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge2_overrides_and_deletes() {
        let src: Map = serde_json::from_str(r#"{"a":{"b":1,"c":null},"l":[1],"n":null}"#).unwrap();
        let mut dest: Map =
            serde_json::from_str(r#"{"a":{"b":0,"c":2,"d":3},"l":[0,0],"n":1,"k":5}"#).unwrap();
        merge2(&src, &mut dest, 0);
        assert_eq!(
            Value::Object(dest),
            serde_json::json!({"a":{"b":1,"d":3},"l":[1],"k":5})
        );
    }
}
