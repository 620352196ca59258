//! An Application's local Helm source rendered into the graph: its value files read from the
//! linted files, the chart loaded and rendered, and every document made an object that points
//! into the files it came from.

use super::values::{to_value, Map};
use super::{argo, Failure, FailureKind, Loaded, Manifest, ManifestKind, Renders, ValueAt};
use crate::model::Object;
use crate::render::graph::{push_built, Graph, ValueFile};
use crate::render::{Files, Linked, Note, Problem, ProblemKind, Unread};
use crate::yaml::{FileId, Node, ParseLimits, ProblemKind::InvalidYaml, Span};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Renders the chart in `dir` for `app`'s `source`; the units made. `at` is where the
/// Application names the source: a failure no template locates is reported there. A failure
/// the repository can cause is a problem; `Err` says why the chart was not rendered when
/// nothing in the repository decides it (a value file of another repository, a dependency
/// Argo CD fetches), to be noted.
#[allow(clippy::too_many_arguments)]
pub(in crate::render) fn render(
    g: &mut Graph,
    renders: &mut Renders,
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
        let (path, span) = match v {
            ValueFile::Unknown(why) => return Err(why),
            ValueFile::Unsupported(why, span) => {
                let f = Failure::of_kind(FailureKind::Unsupported, why);
                return report(g, &f, span, None).map(|()| Vec::new());
            }
            ValueFile::File(path, span) => (path, span),
        };
        match value_file(files, &path) {
            Ok((map, root)) => {
                values.push(map);
                written.extend(root);
                inputs.push(path);
            }
            Err(f) => return report(g, &f, span, None).map(|()| Vec::new()),
        }
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
    let opts = match argo::options(source, name, namespace, values) {
        Ok(o) => o,
        Err(f) => return report(g, &f, at, Some(&f.message)).map(|()| Vec::new()),
    };
    let root = files.root_of(dir);
    let chart = match renders.load(dir, &root) {
        Ok(c) => c,
        Err(e) => {
            let f = Failure::of_kind(e.kind, e.message);
            return report(g, &f, at, None).map(|()| Vec::new());
        }
    };
    let provenance = Provenance {
        files,
        written,
        defaults: std::cell::RefCell::new(Vec::new()),
        fallback: app.root.span,
    };
    let Some(objects) = render_chart(g, renders, &chart, &opts, &provenance, Some(at))? else {
        return Ok(Vec::new());
    };
    chart.chart.paths(&mut inputs);
    inputs.sort();
    inputs.dedup();
    Ok(push_built(g, objects, Arc::from(inputs)))
}

/// The values of the file at `path`, with its tree when it is a linted file (what a printed
/// value points at). A file the lint leaves out (ignored, excluded) is read all the same, as
/// Argo CD reads it, so that leaving it out of the lint does not leave the chart out; a link
/// is followed only inside the repository.
fn value_file(files: &Files, path: &Path) -> Result<(Map, Option<Node>), Failure> {
    let shown = path.display();
    let text = match files.file(path) {
        Some(id) => {
            let parsed = crate::yaml::parse(id, &files.sources.get(id).text, ParseLimits::default());
            // The file's own `invalid-yaml` finding says why.
            if let Some(p) = parsed.problems.iter().find(|p| p.kind == InvalidYaml) {
                let why = format!("value file `{shown}`: {}", p.message);
                return Err(Failure::of_kind(FailureKind::Unknown, why));
            }
            let root = parsed.documents.into_iter().next().map(|d| d.root);
            return match root.as_ref().map(to_value) {
                Some(Value::Object(m)) => Ok((m, root)),
                Some(Value::Null) | None => Ok((Map::new(), root)),
                Some(_) => Err(Failure::of_kind(
                    FailureKind::Invalid,
                    format!("value file `{shown}` is not a mapping"),
                )),
            };
        }
        None => match files.follow(path) {
            Linked::Inside(real) => files.read_extra(&real),
            Linked::Outside => return Err(Failure::of_kind(
                FailureKind::Invalid,
                format!("value file `{shown}` is a symbolic link that leads outside the repository: Argo CD refuses such a repository, and gitops-lint does not follow it"),
            )),
            Linked::Missing => Err(Unread::Missing),
        },
    };
    match text {
        Ok(text) => match super::values::read_yaml(&text) {
            Ok(Value::Object(m)) => Ok((m, None)),
            Ok(Value::Null) => Ok((Map::new(), None)),
            Ok(_) => Err(Failure::of_kind(
                FailureKind::Invalid,
                format!("value file `{shown}` is not a mapping"),
            )),
            Err(e) => Err(Failure::of_kind(
                FailureKind::Invalid,
                format!("value file `{shown}`: {e}"),
            )),
        },
        Err(Unread::Skipped(why)) => Err(Failure::of_kind(
            FailureKind::Limit,
            format!("value file `{shown}` is not read: {why}"),
        )),
        Err(_) => Err(Failure::of_kind(
            FailureKind::Unknown,
            format!("value file `{shown}` is not read"),
        )),
    }
}

/// Renders a chart that no Application deploys but that holds Argo CD objects (an app-of-apps
/// chart installed by hand, `argocd app create --path`): with its own defaults, as
/// `helm template` renders it, keeping only the `argoproj.io` objects, so that the
/// Applications it writes take part in the graph. The values it is really installed with
/// are not known: a failure Helm shares is a note, never a finding, and its workloads are not
/// linted; a bound of the renderer or a function it cannot evaluate is a finding, as
/// anywhere.
pub(in crate::render) fn render_standalone(
    g: &mut Graph,
    renders: &mut Renders,
    dir: &Path,
    files: &Files,
) -> Result<Vec<usize>, String> {
    let root = files.root_of(dir);
    let fallback = files
        .file(&dir.join("Chart.yaml"))
        .map(|id| Span::new(id, 0, 0))
        .ok_or("Chart.yaml is not read")?;
    let chart = match renders.load(dir, &root) {
        Ok(c) => c,
        Err(e) if e.kind == FailureKind::Invalid => return Err(e.message),
        Err(e) => {
            let f = Failure::of_kind(e.kind, e.message);
            return report(g, &f, fallback, None).map(|()| Vec::new());
        }
    };
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
    let objects = render_chart(g, renders, &chart, &opts, &provenance, None)?.unwrap_or_default();
    let objects: Vec<Object> = objects
        .into_iter()
        .filter(|o| o.group() == "argoproj.io")
        .collect();
    let mut inputs = Vec::new();
    chart.chart.paths(&mut inputs);
    inputs.sort();
    inputs.dedup();
    Ok(push_built(g, objects, Arc::from(inputs)))
}

/// The objects `chart` renders to with `opts`. A failure is a problem at the template line
/// it names, else at the value it is about, else at `report` (where the chart is deployed)
/// and then `None`; `Err` says why nothing was rendered when that is only noted: Helm's own
/// failure on a chart's defaults (`report` is `None`), or what is not known offline.
fn render_chart(
    g: &mut Graph,
    renders: &mut Renders,
    chart: &Loaded,
    opts: &super::Options,
    provenance: &Provenance,
    report: Option<Span>,
) -> Result<Option<Vec<Object>>, String> {
    let files = provenance.files;
    let manifests = match renders.render(chart, opts) {
        Ok(m) => m,
        Err(f) if f.kind == FailureKind::Invalid && report.is_none() => {
            return Err(format!(
                "`helm template` fails with the chart's defaults: {}",
                f.message
            ))
        }
        Err(f) => {
            let at = report.unwrap_or(provenance.fallback);
            let span = failure_span(files, &f)
                .or_else(|| written_value(&provenance.written, &f.values))
                .unwrap_or(at);
            self::report(g, &f, span, None)?;
            return Ok(None);
        }
    };
    if let Some(missing) = super::unvendored(&chart.chart) {
        g.notes.push(Note {
            span: report.unwrap_or(provenance.fallback),
            message: format!(
                "Helm chart rendered without what it does not vendor: {}",
                missing.message
            ),
        });
    }
    let mut objects = Vec::new();
    for m in manifests.iter() {
        match objects_of(m, provenance, &chart.chart.dir) {
            Ok(found) => objects.extend(found),
            Err(why) => {
                let span = provenance
                    .file(&m.path)
                    .map_or(report.unwrap_or(provenance.fallback), |id| {
                        Span::new(id, 0, 0)
                    });
                let f = Failure::of_kind(
                    FailureKind::Limit,
                    format!("a document {} renders is not read: {why}", m.source),
                );
                g.problems.extend(not_rendered(&f, span));
            }
        }
    }
    Ok(Some(objects))
}

/// Records why a chart was not rendered: a problem of the rule that owns the cause, or, for
/// what nothing in the repository decides, `Err` with `note` (else the failure's message)
/// for the caller to note.
fn report(g: &mut Graph, f: &Failure, span: Span, note: Option<&str>) -> Result<(), String> {
    match not_rendered(f, span) {
        Some(p) => {
            g.problems.push(p);
            Ok(())
        }
        None => Err(note.unwrap_or(f.message.trim_end()).to_string()),
    }
}

/// The problem a chart left unrendered by `f` is, at `span`; `None` for what nothing in the
/// repository decides ([`FailureKind::Unknown`]), which is only noted.
pub(in crate::render) fn not_rendered(f: &Failure, span: Span) -> Option<Problem> {
    let message = f.message.trim_end();
    let (kind, message, help) = match f.kind {
        FailureKind::Unknown => return None,
        FailureKind::Invalid => (
            ProblemKind::Helm,
            format!("`helm template` fails for this chart: {message}"),
            "Argo CD renders nothing for this source and the Application cannot sync; fix the values or the template",
        ),
        FailureKind::Limit => (
            ProblemKind::HelmLimit,
            format!("this chart is not rendered, so nothing it deploys is checked: {message}"),
            "a chart past a bound of gitops-lint's Helm renderer is not linted at all; keep the template within the bounds (README, Resource limits)",
        ),
        FailureKind::Run => (
            ProblemKind::HelmLimit,
            format!("this chart is not rendered, so nothing it deploys is checked, and the run fails: {message}"),
            "Applications that share a chart and values render it once; lint fewer distinct charts in one run",
        ),
        FailureKind::Unsupported => (
            ProblemKind::HelmUnsupported,
            format!("`helm template` renders this chart, but gitops-lint cannot offline, so nothing it deploys is checked: {message}"),
            "review what this chart deploys by hand; a trusted config can make this an error",
        ),
    };
    Some(Problem {
        kind,
        span,
        message,
        help: help.into(),
    })
}

/// The template line a failure names, when it is a linted file.
pub(in crate::render) fn failure_span(files: &Files, f: &Failure) -> Option<Span> {
    let (path, line, col) = f.at.as_ref()?;
    locate(files, path, *line, *col)
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
/// their own places; a template's output points where [`Provenance`] says. `Err` when the
/// document is past the parser's bounds (nesting, aliases, nodes), with why: Helm has read it
/// already, so it is not invalid, only not read here.
fn objects_of(m: &Manifest, p: &Provenance, top: &Path) -> Result<Vec<Object>, String> {
    let id: Option<FileId> = p.file(&m.path);
    let file = id.unwrap_or(p.fallback.file);
    let parsed = crate::yaml::parse(file, &m.text, ParseLimits::default());
    if let Some(problem) = parsed.problems.iter().find(|p| p.kind == InvalidYaml) {
        return Err(problem.message.clone());
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
    Ok(objects)
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
