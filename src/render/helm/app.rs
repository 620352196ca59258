//! An Application's local Helm source rendered into the graph: its value files read from the
//! linted files, the chart loaded and rendered, and every document made an object that points
//! into the files it came from.

use super::values::{to_value, Map};
use super::{argo, chart, FailureKind, Manifest, ManifestKind, ValueAt, WORK_STEPS};
use crate::model::Object;
use crate::render::budget::Budget as Work;
use crate::render::graph::{push_built, Graph, ValueFile};
use crate::render::{Files, Problem, ProblemKind};
use crate::yaml::{FileId, Node, ParseLimits, ProblemKind::InvalidYaml, Span};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Renders the chart in `dir` for `app`'s `source`; the units made, or why nothing was.
/// `at` is where the Application names the source: a failure no template locates is
/// reported there.
pub(in crate::render) fn render(
    g: &mut Graph,
    app: &Object,
    source: &Node,
    dir: &Path,
    value_files: Vec<ValueFile>,
    files: &Files,
    at: Span,
) -> Result<Vec<usize>, String> {
    let mut values: Vec<Map> = Vec::new();
    let mut inputs: Vec<PathBuf> = Vec::new();
    // Where values are written, the highest precedence first: what a printed value points at.
    let mut written: Vec<Node> = Vec::new();
    for v in value_files {
        let (path, _) = match v {
            ValueFile::Unknown(why) => return Err(why),
            ValueFile::File(path, span) => (path, span),
        };
        let id = files
            .file(&path)
            .ok_or_else(|| format!("value file `{}` is not read", path.display()))?;
        let parsed = crate::yaml::parse(id, &files.sources.get(id).text, ParseLimits::default());
        if let Some(p) = parsed.problems.iter().find(|p| p.kind == InvalidYaml) {
            return Err(format!("value file `{}`: {}", path.display(), p.message));
        }
        let root = parsed.documents.into_iter().next().map(|d| d.root);
        match root.as_ref().map(to_value) {
            Some(Value::Object(m)) => values.push(m),
            Some(Value::Null) | None => {}
            Some(_) => return Err(format!("value file `{}` is not a mapping", path.display())),
        }
        written.extend(root);
        inputs.push(path);
    }
    written.reverse();
    if let Some(helm) = source.get("helm") {
        // Inline values come after the files; `parameters` are named, not written as a tree.
        if let Some(inline) = helm.get("valuesObject").or(helm.get("values")) {
            written.insert(0, inline.clone());
        }
    }
    let spec = app.spec();
    let namespace = spec
        .and_then(|s| s.get("destination"))
        .and_then(|d| d.str_at("namespace"))
        .unwrap_or("");
    let name = app.name.as_deref().unwrap_or("");
    let opts = argo::options(source, name, namespace, values)?;
    let root = files.root_of(dir);
    let chart = chart::load(dir, &root).map_err(|e| e.0)?;
    let provenance = Provenance {
        files,
        written,
        defaults: std::cell::RefCell::new(Vec::new()),
        fallback: app.root.span,
    };
    let Some(objects) = render_chart(g, &chart, &opts, &provenance, Some(at))? else {
        return Ok(Vec::new());
    };
    chart.paths(&mut inputs);
    inputs.sort();
    inputs.dedup();
    Ok(push_built(g, objects, Arc::from(inputs)))
}

/// Renders a chart that no Application deploys but that holds Argo CD objects (an app-of-apps
/// chart installed by hand, `argocd app create --path`): with its own defaults, as
/// `helm template` renders it, keeping only the `argoproj.io` objects, so that the
/// Applications it writes take part in the graph. The values it is really installed with
/// are not known: a failure is a note, never a finding, and its workloads are not linted.
pub(in crate::render) fn render_standalone(
    g: &mut Graph,
    dir: &Path,
    files: &Files,
) -> Result<Vec<usize>, String> {
    let root = files.root_of(dir);
    let chart = chart::load(dir, &root).map_err(|e| e.0)?;
    let fallback = files
        .file(&dir.join("Chart.yaml"))
        .map(|id| Span::new(id, 0, 0))
        .ok_or("Chart.yaml is not read")?;
    // `helm template DIR` with nothing else given, as Argo CD passes `--include-crds`.
    let opts = super::Options {
        include_crds: true,
        ..super::Options::default()
    };
    let provenance = Provenance {
        files,
        written: Vec::new(),
        defaults: std::cell::RefCell::new(Vec::new()),
        fallback,
    };
    let objects = render_chart(g, &chart, &opts, &provenance, None)?.unwrap_or_default();
    let objects: Vec<Object> = objects
        .into_iter()
        .filter(|o| o.group() == "argoproj.io")
        .collect();
    let mut inputs = Vec::new();
    chart.paths(&mut inputs);
    inputs.sort();
    inputs.dedup();
    Ok(push_built(g, objects, Arc::from(inputs)))
}

/// The objects `chart` renders to with `opts`. A failure Helm shares is a `helm-error`
/// problem when `report` says where the chart is deployed (then `None`), else the reason
/// nothing was rendered.
fn render_chart(
    g: &mut Graph,
    chart: &chart::Chart,
    opts: &super::Options,
    provenance: &Provenance,
    report: Option<Span>,
) -> Result<Option<Vec<Object>>, String> {
    let files = provenance.files;
    let mut work = Work::new(WORK_STEPS);
    let manifests = match super::render(chart, opts, &mut work) {
        Ok(m) => m,
        Err(f) if f.kind == FailureKind::Invalid && report.is_none() => {
            return Err(format!(
                "`helm template` fails with the chart's defaults: {}",
                f.message
            ))
        }
        Err(f) if f.kind == FailureKind::Invalid => {
            let at = report.unwrap_or(provenance.fallback);
            let span =
                f.at.as_ref()
                    .and_then(|(path, line, col)| locate(files, path, *line, *col))
                    .or_else(|| written_value(&provenance.written, &f.values))
                    .unwrap_or(at);
            g.problems.push(Problem {
                kind: ProblemKind::Helm,
                span,
                message: format!(
                    "`helm template` fails for this chart: {}",
                    f.message.trim_end()
                ),
                help: "Argo CD renders nothing for this source and the Application cannot sync; fix the values or the template".into(),
            });
            return Ok(None);
        }
        Err(f) if f.kind == FailureKind::Unsupported => {
            return Err(format!("not evaluated offline: {}", f.message))
        }
        Err(f) => return Err(format!("past a bound of the renderer: {}", f.message)),
    };
    let mut objects = Vec::new();
    for m in manifests {
        objects.extend(objects_of(&m, provenance, &chart.dir));
    }
    Ok(Some(objects))
}

/// Where rendered nodes point: the template text or action that wrote them, or the values
/// line that set a value printed as it is.
struct Provenance<'f> {
    files: &'f Files<'f>,
    /// The Application's values, the highest precedence first.
    written: Vec<Node>,
    /// Charts' `values.yaml`, parsed when first needed.
    defaults: std::cell::RefCell<Vec<(PathBuf, Option<Node>)>>,
    /// Where a node nothing else locates points: the Application.
    fallback: Span,
}

impl Provenance<'_> {
    fn file(&self, path: &Path) -> Option<FileId> {
        if path.as_os_str().is_empty() {
            return None;
        }
        self.files.file(path)
    }

    /// The span of a value set where Helm took it from: the Application's values, else the
    /// top chart's `values.yaml`, else the `values.yaml` of the chart whose scope printed it.
    fn value(&self, at: &ValueAt, top: &Path) -> Option<Span> {
        let keys: Vec<&str> = at.path.iter().map(String::as_str).collect();
        if let Some(n) = self.written.iter().find_map(|root| find(root, &keys)) {
            return Some(n.span);
        }
        if let Some(span) = self.default(top, &keys) {
            return Some(span);
        }
        self.default(&at.chart, keys.get(at.scope..)?)
    }

    fn default(&self, chart: &Path, keys: &[&str]) -> Option<Span> {
        let mut cache = self.defaults.borrow_mut();
        if !cache.iter().any(|(d, _)| d == chart) {
            let root = self.file(&chart.join("values.yaml")).and_then(|id| {
                let text = &self.files.sources.get(id).text;
                let parsed = crate::yaml::parse(id, text, ParseLimits::default());
                parsed.documents.into_iter().next().map(|d| d.root)
            });
            cache.push((chart.to_path_buf(), root));
        }
        let (_, root) = cache.iter().find(|(d, _)| d == chart)?;
        find(root.as_ref()?, keys).map(|n| n.span)
    }

    /// Where the stretch of `m` at `start..end` comes from.
    fn span(
        &self,
        m: &Manifest,
        own: Option<FileId>,
        top: &Path,
        start: usize,
        end: usize,
    ) -> Span {
        let i = m.traced.partition_point(|t| t.out <= start);
        let Some(t) = i.checked_sub(1).and_then(|i| m.traced.get(i)) else {
            return own.map_or(self.fallback, |id| Span::new(id, 0, 0));
        };
        if let Some(span) = t.value.as_ref().and_then(|v| self.value(v, top)) {
            return span;
        }
        match self.file(&t.file) {
            Some(id) if t.copied => {
                let from = (t.src.0 + (start - t.out)).min(t.src.1);
                let to = (from + (end - start)).min(t.src.1);
                Span::new(id, from, to)
            }
            Some(id) => Span::new(id, t.src.0, t.src.1),
            None => match own {
                Some(id) => Span::new(id, t.top.0, t.top.1),
                None => self.fallback,
            },
        }
    }
}

/// Where the Application's own values (inline, then its value files) set the first of `paths`
/// they set at all; the top of the values is too vague to point at.
fn written_value(written: &[Node], paths: &[Vec<String>]) -> Option<Span> {
    paths.iter().filter(|p| !p.is_empty()).find_map(|p| {
        let keys: Vec<&str> = p.iter().map(String::as_str).collect();
        written
            .iter()
            .find_map(|root| find(root, &keys))
            .map(|n| n.span)
    })
}

/// The node at `keys` below `root`: mapping keys, or indices of sequences.
fn find<'n>(root: &'n Node, keys: &[&str]) -> Option<&'n Node> {
    let mut at = root;
    for k in keys {
        at = if at.is_seq() {
            at.items().get(k.parse::<usize>().ok()?)?
        } else {
            at.get(k)?
        };
    }
    Some(at)
}

/// The objects of one rendered document. A CRD file is printed as written, so its nodes keep
/// their own places; a template's output points where [`Provenance`] says.
fn objects_of(m: &Manifest, p: &Provenance, top: &Path) -> Vec<Object> {
    let id: Option<FileId> = p.file(&m.path);
    let file = id.unwrap_or(p.fallback.file);
    let parsed = crate::yaml::parse(file, &m.text, ParseLimits::default());
    if parsed.problems.iter().any(|p| p.kind == InvalidYaml) {
        return Vec::new();
    }
    let mut docs = parsed.documents;
    let verbatim = m.kind == ManifestKind::Crd && id.is_some();
    if !verbatim {
        for d in &mut docs {
            crate::render::respan_with(&mut d.root, &mut |s| {
                p.span(m, id, top, s.start as usize, s.end as usize)
            });
        }
    }
    let (mut objects, _) = crate::model::recognise(file, &m.path, docs);
    for o in &mut objects {
        o.generated = true;
    }
    objects
}

/// The span of the character at 1-based `line` and `col` of a linted file.
fn locate(files: &Files, path: &Path, line: usize, col: usize) -> Option<Span> {
    let id = files.file(path)?;
    let text = &files.sources.get(id).text;
    let start = text
        .split_inclusive('\n')
        .take(line.checked_sub(1)?)
        .map(str::len)
        .sum::<usize>();
    let rest = text.get(start..)?;
    let offset = rest
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(rest.len(), |(i, _)| i);
    let end = rest[offset..].find('\n').map_or(rest.len(), |n| offset + n);
    Some(Span::new(id, start + offset, start + end))
}
