//! ApplicationSet expansion: the generators that can be evaluated against the repository
//! (list, git directories and files, matrix and merge of those) produce parameter sets, and
//! each set is substituted into the template. Generators that need a cluster or an API leave
//! one Application with its parameters unresolved, so the template is still analysed.

use super::budget::{Budget, RUN_STEPS};
use super::template::{self, ErrorKind, TemplateError};
use super::{Files, Note, Problem, ProblemKind};
use crate::glob::path as path_match;
use crate::model::Object;
use crate::repo::{normalize_url, Repo};
use crate::yaml::{self, typing, Node, ParseLimits, Span, Style, Value};
use foldhash::HashMap;
use serde_json::{Map, Value as J};
use std::collections::BTreeMap;

/// More generated Applications than this from one ApplicationSet are not analysed.
const MAX_APPS: usize = 1000;

/// One parameter set, in goTemplate's nested form.
type Params = Map<String, J>;

enum Gen {
    Sets(Vec<Params>),
    /// Needs a cluster or an API: values unknown.
    Unknown,
}

/// The budget ran out; where the work was when it did.
struct Stopped(Span);

type Step<T> = Result<T, Stopped>;

/// What the render stage learns from one ApplicationSet.
#[derive(Default)]
pub struct Expansion {
    pub apps: Vec<Object>,
    pub problems: Vec<Problem>,
    pub notes: Vec<Note>,
}

/// Expands `appset`, charging all its work (generators, every templated field of every
/// parameter set, `templatePatch`) to `budget`. Past the budget, the expansion stops with one
/// problem where it stopped, and the template is analysed once, as written.
pub fn expand(appset: &Object, files: &Files, repo: &Repo, budget: &mut Budget) -> Expansion {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let apps = expand_into(appset, files, repo, budget, &mut problems, &mut notes);
    Expansion {
        apps,
        problems,
        notes,
    }
}

fn expand_into(
    appset: &Object,
    files: &Files,
    repo: &Repo,
    budget: &mut Budget,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Note>,
) -> Vec<Object> {
    let Some(spec) = appset.spec() else {
        return Vec::new();
    };
    let Some(template) = spec.get("template").filter(|t| t.is_map()) else {
        return Vec::new();
    };
    let go = spec
        .get("goTemplate")
        .and_then(Node::as_scalar)
        .and_then(typing::as_bool)
        .unwrap_or(false);
    let missing_error = spec
        .get("goTemplateOptions")
        .map(Node::items)
        .unwrap_or(&[])
        .iter()
        .any(|o| o.as_str() == Some("missingkey=error"));
    let mut cx = Cx {
        files,
        repo,
        problems,
        appset_file: appset.file,
        budget,
    };
    let mut sets: Vec<Params> = Vec::new();
    let mut unknown = false;
    let mut generated = || -> Step<()> {
        for g in spec.get("generators").map(Node::items).unwrap_or(&[]) {
            match cx.generator(g, 0)? {
                Gen::Sets(s) => sets.extend(s),
                Gen::Unknown => unknown = true,
            }
        }
        Ok(())
    };
    if let Err(Stopped(at)) = generated() {
        cx.over_budget(at);
        return vec![application(appset, template.clone())];
    }
    let patch = spec.get("templatePatch").filter(|p| p.as_str().is_some());
    let mut out = Vec::new();
    if unknown {
        // Lint the template once, with its parameters left as written.
        out.push(application(appset, template.clone()));
    }
    let total = sets.len().min(MAX_APPS);
    let walk = count_nodes(template);
    let mut failed = Failures::default();
    let rendered = || -> Step<()> {
        for params in sets.into_iter().take(MAX_APPS) {
            let mut t = template.clone();
            // One parameter set serves every templated field: built once, not once per field.
            let flat = (!go).then(|| flatten(&params));
            let keys = flat.as_ref().map_or(params.len(), BTreeMap::len);
            cx.charge(walk.saturating_add(keys), template.span)?;
            let data = J::Object(params);
            let mut stopped = None;
            substitute(&mut t, &mut |scalar: &Node, text: &str| {
                if stopped.is_some() {
                    return None;
                }
                let result = match &flat {
                    None => template::render_go(text, &data, missing_error, cx.budget),
                    Some(flat) => match cx.budget.charge_bytes(text.len()) {
                        Err(_) => Err(TemplateError {
                            message: String::new(),
                            kind: ErrorKind::Limit,
                        }),
                        // The output is paid for after the fact: one bounded field's worth.
                        Ok(()) => {
                            template::render_fast_within(text, flat, template::MAX_FIELD_OUTPUT)
                                .and_then(|new| match cx.budget.charge_bytes(new.len()) {
                                    Ok(()) => Ok(new),
                                    Err(_) => Err(TemplateError {
                                        message: String::new(),
                                        kind: ErrorKind::Limit,
                                    }),
                                })
                        }
                    },
                };
                match result {
                    Ok(new) => Some(new),
                    Err(e) => {
                        if cx.budget.exhausted().is_some() {
                            stopped = Some(scalar.span);
                        } else {
                            failed.add(scalar, e);
                        }
                        None
                    }
                }
            });
            if let Some(at) = stopped {
                return Err(Stopped(at));
            }
            let mut app = application(appset, t);
            if let (true, Some(patch)) = (go, patch) {
                apply_template_patch(&mut app, patch, &data, missing_error, &mut cx, &mut failed)?;
            }
            out.push(app);
        }
        Ok(())
    };
    if let Err(Stopped(at)) = rendered() {
        cx.over_budget(at);
        return vec![application(appset, template.clone())];
    }
    failed.report(total, files, cx.problems, notes);
    out
}

/// Template errors by the templated scalar that raised them, in the order first met: one
/// report per field, however many parameter sets hit it.
#[derive(Default)]
struct Failures {
    by_span: HashMap<Span, usize>,
    list: Vec<(Span, Style, TemplateError, usize)>,
}

impl Failures {
    fn add(&mut self, scalar: &Node, e: TemplateError) {
        match self.by_span.get(&scalar.span) {
            Some(&i) => self.list[i].3 += 1,
            None => {
                self.by_span.insert(scalar.span, self.list.len());
                self.list.push((scalar.span, scalar.style, e, 1));
            }
        }
    }

    fn report(
        self,
        total: usize,
        files: &Files,
        problems: &mut Vec<Problem>,
        notes: &mut Vec<Note>,
    ) {
        for (span, style, e, n) in self.list {
            let span = template_line(files, span, style, &e.message);
            let sets = match (n, total) {
                (1, 1) => "its parameter set".to_string(),
                _ if n == total => format!("all {total} parameter sets"),
                _ => format!("{n} of {total} parameter sets"),
            };
            match e.kind {
                ErrorKind::Unsupported => notes.push(Note {
                    span,
                    message: format!("template not analysed for {sets}: {}", e.message),
                }),
                ErrorKind::Invalid => problems.push(Problem {
                    kind: ProblemKind::Template,
                    span,
                    message: format!("Argo CD cannot render this template for {sets}: {}", e.message),
                    help: "the ApplicationSet controller reports RenderTemplateParamsError and generates no Applications; fix the template or the parameters it reads".into(),
                }),
                ErrorKind::Limit | ErrorKind::Budget(_) => problems.push(Problem {
                    kind: ProblemKind::Template,
                    span,
                    message: format!("template not analysed for {sets}, past a bound of this linter: {}", e.message),
                    help: "keep templates small: this bound is far above what real ApplicationSets need".into(),
                }),
            }
        }
    }
}

/// The line of a literal block (`|`, as `templatePatch` usually is) that the error names
/// (`template: :N:`): its lines are the template's, one for one. Other scalars keep their span.
fn template_line(files: &Files, span: Span, style: Style, message: &str) -> Span {
    let line = message
        .strip_prefix("template: :")
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse::<usize>().ok());
    let (Style::Literal, Some(line)) = (style, line) else {
        return span;
    };
    let text = files.text(span);
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let content = l.trim_end_matches(['\n', '\r']);
            let indent = content.len() - content.trim_start().len();
            if content.trim().is_empty() {
                return span;
            }
            let at = span.start as usize + start;
            return Span::new(span.file, at + indent, at + content.len());
        }
        start += l.len();
    }
    span
}

/// `templatePatch` (goTemplate only): rendered with the same parameters, then merged into the
/// generated Application. A patch that does not render or parse is reported, and leaves the
/// Application as the template made it.
fn apply_template_patch(
    app: &mut Object,
    patch: &Node,
    data: &J,
    missing_error: bool,
    cx: &mut Cx,
    failed: &mut Failures,
) -> Step<()> {
    let text = patch.as_str().unwrap_or_default();
    let rendered = match template::render_go(text, data, missing_error, cx.budget) {
        Ok(r) => r,
        Err(_) if cx.budget.exhausted().is_some() => return Err(Stopped(patch.span)),
        Err(e) => {
            failed.add(patch, e);
            return Ok(());
        }
    };
    cx.charge_bytes(rendered.len(), patch.span)?;
    let docs = match super::parse_inline(&rendered, patch.span) {
        Ok(docs) => docs,
        Err(msg) => {
            let message = format!("templatePatch does not render to YAML: {msg}");
            failed.add(
                patch,
                TemplateError {
                    message,
                    kind: ErrorKind::Invalid,
                },
            );
            return Ok(());
        }
    };
    for doc in docs.iter().filter(|d| d.is_map()) {
        super::merge::strategic_merge(&mut app.root, doc, false);
    }
    let meta = app.root.get("metadata");
    app.name = meta.and_then(|m| m.str_at("name")).map(str::to_string);
    Ok(())
}

struct Cx<'a, 'f> {
    files: &'a Files<'f>,
    repo: &'a Repo,
    problems: &'a mut Vec<Problem>,
    /// Paths in generators are relative to the root of the repository holding the set.
    appset_file: u32,
    budget: &'a mut Budget,
}

fn application(appset: &Object, template: Node) -> Object {
    let span = template.span;
    let mut root = Node::empty_map(span);
    root.set(
        "apiVersion",
        Node::string("argoproj.io/v1alpha1", span),
        span,
    );
    root.set("kind", Node::string("Application", span), span);
    let metadata = template
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| Node::empty_map(span));
    root.set("metadata", metadata, span);
    if let Some(spec) = template.get("spec") {
        root.set("spec", spec.clone(), span);
    }
    let meta = root.get("metadata");
    Object {
        file: appset.file,
        doc: appset.doc,
        list_item: appset.list_item,
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "Application".into(),
        name: meta.and_then(|m| m.str_at("name")).map(str::to_string),
        namespace: meta
            .and_then(|m| m.str_at("namespace"))
            .map(str::to_string)
            .or_else(|| appset.namespace.clone()),
        root,
        generated: true,
    }
}

/// Templating reaches every string scalar; keys, booleans and numbers are left alone. The
/// scalars to change are found first, so that what holds no template stays shared with the
/// ApplicationSet's own tree in every Application it generates.
fn substitute(node: &mut Node, render: &mut dyn FnMut(&Node, &str) -> Option<String>) {
    let mut found = Vec::new();
    find_templates(node, render, &mut Vec::new(), &mut found);
    node.write_at(found, |n, new: String| {
        if let Value::Scalar(s) = &mut n.value {
            s.set_text(new);
        }
    });
}

/// The scalars below `node` whose template renders, each by its path of child positions,
/// with its rendered text.
fn find_templates(
    node: &Node,
    render: &mut dyn FnMut(&Node, &str) -> Option<String>,
    at: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, String)>,
) {
    if let Value::Scalar(s) = &node.value {
        if template::has_template(s.text()) {
            if let Some(new) = render(node, s.text()) {
                out.push((at.clone(), new));
            }
        }
        return;
    }
    for (i, _, child) in node.children() {
        at.push(i);
        find_templates(child, render, at, out);
        at.pop();
    }
}

/// Nodes in `node`'s tree: what walking it once for its templates costs.
fn count_nodes(node: &Node) -> usize {
    1 + node
        .children()
        .map(|(_, _, child)| count_nodes(child))
        .sum::<usize>()
}

/// fasttemplate's flat keys: `values.x`, `metadata.labels.env`, and for the git generator
/// Argo CD's own spelling of the path: `path` (the path itself), `path[n]` (its segments),
/// `path.basename`, `path.filename`.
fn flatten(params: &Params) -> BTreeMap<String, String> {
    fn walk(prefix: &str, v: &J, out: &mut BTreeMap<String, String>) {
        match v {
            J::Object(m) if prefix == "path" && m.contains_key("segments") => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("path", J::String(p)) => {
                            out.insert("path".into(), p.clone());
                        }
                        ("segments", J::Array(items)) => {
                            for (i, s) in items.iter().enumerate() {
                                out.insert(format!("path[{i}]"), s.as_str().unwrap_or("").into());
                            }
                        }
                        _ => walk(&format!("path.{k}"), v, out),
                    }
                }
            }
            J::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            J::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), v, out);
                }
            }
            J::String(s) => {
                out.insert(prefix.to_string(), s.clone());
            }
            J::Null => {
                out.insert(prefix.to_string(), String::new());
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", &J::Object(params.clone()), &mut out);
    out
}

/// Argo CD's `path` parameters for a directory or a file's directory.
fn path_params(dir: &str, file: Option<&str>) -> J {
    let segments: Vec<J> = dir
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| J::String(s.into()))
        .collect();
    let basename = dir.rsplit('/').next().unwrap_or(dir).to_string();
    let normalized: String = basename
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut m = Map::new();
    m.insert("path".into(), J::String(dir.into()));
    m.insert("basename".into(), J::String(basename));
    m.insert("basenameNormalized".into(), J::String(normalized));
    m.insert("segments".into(), J::Array(segments));
    if let Some(f) = file {
        m.insert("filename".into(), J::String(f.into()));
        let stem = f.rsplit_once('.').map_or(f, |(s, _)| s);
        m.insert(
            "filenameNormalized".into(),
            J::String(stem.to_ascii_lowercase()),
        );
    }
    J::Object(m)
}

/// Whether a git generator entry says `exclude: true`.
fn excluded(entry: &Node) -> bool {
    entry
        .get("exclude")
        .and_then(Node::as_scalar)
        .and_then(typing::as_bool)
        .unwrap_or(false)
}

/// The fixed directories before the first glob character: what must exist for the pattern
/// to match anything.
pub(super) fn fixed_prefix(pattern: &str) -> &str {
    let end = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let head = &pattern[..end];
    if end == pattern.len() {
        return head;
    }
    head.rsplit_once('/').map_or("", |(d, _)| d)
}

impl Cx<'_, '_> {
    fn charge(&mut self, steps: usize, at: Span) -> Step<()> {
        let steps = u64::try_from(steps).unwrap_or(u64::MAX);
        self.budget.charge(steps).map_err(|_| Stopped(at))
    }

    fn charge_bytes(&mut self, bytes: usize, at: Span) -> Step<()> {
        self.budget.charge_bytes(bytes).map_err(|_| Stopped(at))
    }

    /// The one problem of an ApplicationSet whose expansion ran out of budget at `at`.
    fn over_budget(&mut self, at: Span) {
        let limit = self.budget.limit();
        // What the run's meter stopped in parallel is discarded by the caller, which renders
        // it again with what the run has left.
        let message = if !self.budget.run_spent() {
            format!(
                "expanding this ApplicationSet takes more than {limit} steps of work: it is not analysed past this point, and its template is linted once, as written"
            )
        } else {
            format!(
                "the ApplicationSets before this one spent the run's budget of {RUN_STEPS} steps: it is not analysed past this point, and its template is linted once, as written"
            )
        };
        self.problems.push(Problem {
            kind: ProblemKind::Template,
            span: at,
            message,
            help: "real ApplicationSets stay far below this bound: look for generators that multiply (matrix, merge) and for heavy templates repeated in many fields".into(),
        });
    }

    fn generator(&mut self, g: &Node, depth: usize) -> Step<Gen> {
        self.charge(1, g.span)?;
        if let Some(list) = g.get("list") {
            let mut sets = Vec::new();
            for e in list.get("elements").map(Node::items).unwrap_or(&[]) {
                let len = e.span.end.saturating_sub(e.span.start) as usize;
                self.charge_bytes(len, e.span)?;
                if let J::Object(m) = yaml::to_json(e) {
                    sets.push(m);
                }
            }
            return Ok(Gen::Sets(sets));
        }
        if let Some(git) = g.get("git") {
            return self.git(git);
        }
        if depth < 2 {
            if let Some(m) = g.get("matrix") {
                return self.matrix(m, depth);
            }
            if let Some(m) = g.get("merge") {
                return self.merge(m, depth);
            }
        }
        Ok(Gen::Unknown)
    }

    fn children(&mut self, node: &Node, depth: usize) -> Step<Option<Vec<Vec<Params>>>> {
        let mut out = Vec::new();
        for g in node.get("generators").map(Node::items).unwrap_or(&[]) {
            match self.generator(g, depth + 1)? {
                Gen::Sets(s) => out.push(s),
                Gen::Unknown => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    fn matrix(&mut self, m: &Node, depth: usize) -> Step<Gen> {
        let Some(children) = self.children(m, depth)? else {
            return Ok(Gen::Unknown);
        };
        let mut acc: Vec<Params> = vec![Map::new()];
        for child in children {
            let mut next = Vec::new();
            'product: for a in &acc {
                for b in &child {
                    if next.len() >= MAX_APPS {
                        break 'product;
                    }
                    self.charge(1 + a.len() + b.len(), m.span)?;
                    let mut p = a.clone();
                    p.extend(b.clone());
                    next.push(p);
                }
            }
            acc = next;
        }
        Ok(Gen::Sets(acc))
    }

    fn merge(&mut self, m: &Node, depth: usize) -> Step<Gen> {
        let Some(mut children) = self.children(m, depth)? else {
            return Ok(Gen::Unknown);
        };
        let keys: Vec<&str> = m
            .get("mergeKeys")
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .filter_map(Node::as_str)
            .collect();
        if children.is_empty() {
            return Ok(Gen::Sets(Vec::new()));
        }
        let mut base = children.remove(0);
        let key_of = |p: &Params| -> Vec<Option<J>> {
            let flat = flatten(p);
            keys.iter()
                .map(|k| flat.get(*k).map(|v| J::String(v.clone())))
                .collect()
        };
        // A base set's keys do not change when a set with the same keys merges into it.
        let mut base_keys = Vec::with_capacity(base.len());
        for b in &base {
            self.charge(1 + b.len(), m.span)?;
            base_keys.push(key_of(b));
        }
        for other in children {
            for o in other {
                self.charge(1 + o.len() + base.len(), m.span)?;
                let k = key_of(&o);
                for (b, bk) in base.iter_mut().zip(&base_keys) {
                    if *bk == k {
                        self.charge(1 + o.len(), m.span)?;
                        b.extend(o.clone());
                    }
                }
            }
        }
        Ok(Gen::Sets(base))
    }

    /// The git generator as `applicationset/generators/git.go` (v3.5.1) runs it: `directories`
    /// when that list is not empty, else `files`. An entry with `exclude: true` removes what
    /// its pattern matches, whichever other entry matched it.
    fn git(&mut self, git: &Node) -> Step<Gen> {
        let url = git.str_at("repoURL").unwrap_or("");
        if !self.repo.urls.contains(&normalize_url(url)) {
            return Ok(Gen::Unknown);
        }
        let listed = |key| git.get(key).filter(|l| !l.items().is_empty());
        if let Some(entries) = listed("directories") {
            return self.git_directories(entries).map(Gen::Sets);
        }
        match listed("files") {
            Some(entries) => self.git_files(entries).map(Gen::Sets),
            None => Ok(Gen::Sets(Vec::new())),
        }
    }

    /// `filterApps`: every directory of the repository (hidden ones left out, as the
    /// repo-server's walk does) that some entry matches and no `exclude` entry matches, both
    /// with Go's `path.Match` (`*`, `?` and classes stop at `/`; `**` is two `*`; no braces). A
    /// malformed pattern matches nothing.
    fn git_directories(&mut self, entries: &Node) -> Step<Vec<Params>> {
        let files = self.files;
        let root = files.root_of(files.path(self.appset_file));
        let dirs = files.dirs_below(&root);
        let mut include = Vec::new();
        let mut exclude = Vec::new();
        for e in entries.items() {
            let Some(pattern) = e.get("path").filter(|p| p.as_str().is_some()) else {
                continue;
            };
            let text = pattern.as_str().unwrap_or("");
            self.charge(1 + dirs.len(), pattern.span)?;
            if excluded(e) {
                exclude.push(text);
            } else {
                if !dirs.iter().any(|d| path_match(text, d)) {
                    self.missing(pattern, text, "directory");
                }
                include.push(text);
            }
        }
        self.charge(
            dirs.len().saturating_mul(1 + entries.items().len()),
            entries.span,
        )?;
        let mut sets = Vec::new();
        for d in dirs.iter() {
            if include.iter().any(|p| path_match(p, d)) && !exclude.iter().any(|p| path_match(p, d))
            {
                let mut p = Map::new();
                p.insert("path".into(), path_params(d, None));
                sets.push(p);
            }
        }
        Ok(sets)
    }

    /// `generateParamsForGitFiles`: the files the `include` entries list, less those the
    /// `exclude` entries list (`exclude` on files is read from Argo CD 3.1). Argo CD lists them
    /// with `git ls-files` by default, where `*` crosses `/` ([`super::pathspec`]), and with
    /// doublestar under `--enable-new-git-file-globbing`, where it does not: a file is taken
    /// when both would take it, and a pattern is reported as matching nothing only when
    /// neither lists a file.
    fn git_files(&mut self, entries: &Node) -> Step<Vec<Params>> {
        let files = self.files;
        let root = files.root_of(files.path(self.appset_file));
        let candidates = files.files_in(&root, true);
        let paths: Vec<String> = candidates
            .iter()
            .map(|&id| {
                super::relative(
                    crate::paths::bytes(&root),
                    crate::paths::bytes(files.path(id)),
                )
            })
            .collect();
        // Per candidate: listed by git ls-files, listed by doublestar, under include and exclude.
        let mut include = vec![(false, false); paths.len()];
        let mut exclude = vec![(false, false); paths.len()];
        for e in entries.items() {
            let Some(pattern) = e.get("path").filter(|p| p.as_str().is_some()) else {
                continue;
            };
            let text = pattern.as_str().unwrap_or("");
            let doublestar = crate::glob::files(text, true);
            self.charge(1 + paths.len(), pattern.span)?;
            let excluding = excluded(e);
            let mut matched = false;
            for (i, path) in paths.iter().enumerate() {
                let git = super::pathspec::matches(text, path);
                let ds = doublestar.as_ref().is_some_and(|m| m.is_match(path));
                matched |= git || ds;
                let slot = if excluding {
                    &mut exclude[i]
                } else {
                    &mut include[i]
                };
                slot.0 |= git;
                slot.1 |= ds;
            }
            if !excluding && !matched {
                self.missing(pattern, text, "file");
            }
        }
        let at = entries.span;
        let mut sets = Vec::new();
        for (i, &id) in candidates.iter().enumerate() {
            let (inc, exc) = (include[i], exclude[i]);
            let by_git = inc.0 && !exc.0;
            let by_doublestar = inc.1 && !exc.1;
            let taken = by_git && by_doublestar;
            if !taken {
                continue;
            }
            let r = &paths[i];
            let (dir, name) = r.rsplit_once('/').unwrap_or(("", r.as_str()));
            self.charge_bytes(files.sources.get(id).text.len(), at)?;
            for doc in self.file_params(id) {
                let mut p = doc;
                p.insert("path".into(), path_params(dir, Some(name)));
                sets.push(p);
            }
        }
        Ok(sets)
    }

    /// The parameters a git files generator reads from one file: its mapping, or each item
    /// of a list.
    fn file_params(&self, id: u32) -> Vec<Params> {
        let text = &self.files.sources.get(id).text;
        let parsed = yaml::parse(id, text, ParseLimits::default());
        let mut out = Vec::new();
        for d in parsed.documents {
            match yaml::to_json(&d.root) {
                J::Object(m) => out.push(m),
                J::Array(items) => out.extend(items.into_iter().filter_map(|i| match i {
                    J::Object(m) => Some(m),
                    _ => None,
                })),
                _ => {}
            }
        }
        out
    }

    fn missing(&mut self, node: &Node, pattern: &str, what: &str) {
        if typing::is_template(pattern) {
            return;
        }
        let prefix = fixed_prefix(pattern);
        let exists = prefix.is_empty() || {
            let root = self.files.root_of(self.files.path(self.appset_file));
            self.files
                .resolve(&root, prefix)
                .is_ok_and(|p| self.files.exists(&p))
        };
        let message = if exists {
            format!("no {what} in this repository matches `{pattern}`: the generator produces no Applications")
        } else {
            format!("`{prefix}` does not exist in this repository: the generator produces no Applications")
        };
        self.problems.push(Problem {
            kind: ProblemKind::SourceMissing,
            span: node.span,
            message,
            help: "fix the path (relative to the repository root); an empty generator also deletes Applications it generated before".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::budget::UNIT_STEPS;

    #[test]
    fn fasttemplate_sees_argo_cds_path_keys() {
        let mut p = Params::new();
        p.insert("path".into(), path_params("apps/web", Some("config.json")));
        p.insert("values".into(), serde_json::json!({"env": "prod"}));
        let flat = flatten(&p);
        assert_eq!(flat["path"], "apps/web");
        assert_eq!(flat["path[1]"], "web");
        assert_eq!(flat["path.basename"], "web");
        assert_eq!(flat["path.filename"], "config.json");
        assert_eq!(flat["values.env"], "prod");
        assert!(!flat.contains_key("path.path"));
        assert_eq!(
            template::render_fast("{{path.basename}}-{{path[0]}} {{path}}", &flat),
            "web-apps apps/web"
        );
    }

    /// The steps `text`'s one ApplicationSet takes to expand, with the problems it raised.
    fn cost(text: &str, limit: u64) -> (u64, Vec<Problem>) {
        use crate::source::{SourceDb, SourceFile};
        use std::path::{Path, PathBuf};
        let path = Path::new("appset.yaml");
        let parsed = yaml::parse(0, text, ParseLimits::default());
        let docs = vec![crate::model::FileDocs::new(0, path, parsed)];
        let sources = SourceDb::from(vec![SourceFile::new(path.into(), text.into())]);
        let files = Files::new(&sources, &docs, &[PathBuf::new()]);
        let mut budget = Budget::new(limit);
        let out = expand(&docs[0].objects[0], &files, &Repo::default(), &mut budget);
        (budget.used(), out.problems)
    }

    #[test]
    fn a_large_real_applicationset_is_far_below_its_budget() {
        let elements: String = (0..500)
            .map(|i| {
                format!(
                    "          - {{name: svc{i}, env: prod, cluster: c{}}}\n",
                    i % 7
                )
            })
            .collect();
        let fields: String = (0..40)
            .map(|i| format!("        k{i}: '{{{{ .name }}}}-{{{{ .env | upper }}}}-{{{{ default \"x\" .cluster }}}}'\n"))
            .collect();
        let text = format!(
            "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: fleet, namespace: argocd}}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
    - list:
        elements:
{elements}  template:
    metadata:
      name: '{{{{ .name }}}}-{{{{ .cluster }}}}'
      labels:
{fields}    spec:
      project: default
      source: {{repoURL: 'https://example.com/r.git', path: 'apps/{{{{ .name }}}}', targetRevision: HEAD}}
      destination: {{name: '{{{{ .cluster }}}}', namespace: '{{{{ .name }}}}'}}
"
        );
        let (used, problems) = cost(&text, UNIT_STEPS);
        assert!(problems.is_empty(), "{problems:?}");
        // 500 Applications of 44 templated fields: 1/20 of the budget at most.
        assert!(used < UNIT_STEPS / 20, "{used} steps");
    }

    #[test]
    fn one_budget_covers_every_field_and_parameter_set() {
        let text = "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s, namespace: argocd}
spec:
  goTemplate: true
  generators:
    - list:
        elements: [{x: a}, {x: b}, {x: c}]
  template:
    metadata:
      name: '{{ .x }}'
      annotations:
        a: '{{ range splitList \",\" (repeat 500 \"a,\") }}{{ sha256sum $.x }}{{ end }}'
        b: '{{ range splitList \",\" (repeat 500 \"a,\") }}{{ sha256sum $.x }}{{ end }}'
";
        let (whole, problems) = cost(text, UNIT_STEPS);
        assert!(problems.is_empty(), "{problems:?}");
        // A budget enough for any one field of one set, but not for all six, stops once.
        let (used, problems) = cost(text, whole / 3);
        assert!(used <= whole / 3 + 64, "{used}");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::Template);
        assert!(
            problems[0].message.contains("more than"),
            "{}",
            problems[0].message
        );
    }

    /// The names of the Applications the first file's ApplicationSet generates, with the
    /// other files as the repository, and the problems raised.
    fn generate(files: &[(&str, &str)]) -> (Vec<String>, Vec<Problem>) {
        use crate::source::{SourceDb, SourceFile};
        use std::path::{Path, PathBuf};
        let docs: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, (path, text))| {
                let parsed = yaml::parse(i as u32, text, ParseLimits::default());
                crate::model::FileDocs::new(i as u32, Path::new(path), parsed)
            })
            .collect();
        let sources = SourceDb::from(
            files
                .iter()
                .map(|(path, text)| SourceFile::new(PathBuf::from(path), (*text).into()))
                .collect::<Vec<_>>(),
        );
        let roots = [PathBuf::new()];
        let db = Files::new(&sources, &docs, &roots);
        let repo = Repo {
            roots: roots.to_vec(),
            urls: vec![normalize_url("https://example.com/r.git")],
            ..Repo::default()
        };
        let mut budget = Budget::new(UNIT_STEPS);
        let out = expand(&docs[0].objects[0], &db, &repo, &mut budget);
        let names = out.apps.iter().filter_map(|a| a.name.clone()).collect();
        (names, out.problems)
    }

    fn git_appset(generator: &str) -> String {
        format!(
            "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: s, namespace: argocd}}
spec:
  goTemplate: true
  generators:
    - git:
        repoURL: https://example.com/r.git
        revision: HEAD
{generator}
  template:
    metadata:
      name: '{{{{ .path.path }}}}'
    spec:
      project: default
      source: {{repoURL: 'https://example.com/r.git', path: '{{{{ .path.path }}}}'}}
      destination: {{name: in-cluster, namespace: x}}
"
        )
    }

    const TREE: [(&str, &str); 5] = [
        ("apps/web/config.yaml", "a: 1\n"),
        ("apps/api/config.yaml", "a: 1\n"),
        ("apps/eu/web/config.yaml", "a: 1\n"),
        ("tenants/a/base/config.yaml", "a: 1\n"),
        ("tenants/a/b/base/config.yaml", "a: 1\n"),
    ];

    fn run_git(generator: &str) -> (Vec<String>, Vec<Problem>) {
        let set = git_appset(generator);
        let mut files = vec![("appset.yaml", set.as_str())];
        files.extend(TREE);
        generate(&files)
    }

    #[test]
    fn git_files_exclude_removes_what_it_lists() {
        let (names, problems) = run_git(
            "        files:
          - path: apps/*/config.yaml
          - path: apps/api/config.yaml
            exclude: true",
        );
        assert!(problems.is_empty(), "{problems:?}");
        // `apps/eu/web` is listed by git ls-files (`*` crosses `/`) but not by doublestar.
        assert_eq!(names, ["apps/web"]);
    }

    #[test]
    fn git_directories_follow_path_match() {
        let (names, _) = run_git(
            "        directories:
          - path: tenants/**/base
          - path: apps/*
          - path: apps/eu
            exclude: true",
        );
        // path.Match: `**` is two `*`, so it spans one directory only.
        assert_eq!(names, ["apps/api", "apps/web", "tenants/a/base"]);
    }

    #[test]
    fn git_directories_win_over_files() {
        let (names, _) = run_git(
            "        directories:
          - path: apps/api
        files:
          - path: apps/web/config.yaml",
        );
        assert_eq!(names, ["apps/api"]);
    }

    #[test]
    fn a_files_pattern_that_one_lister_matches_is_not_missing() {
        // Only git ls-files lists `apps/eu/web/config.yaml` for `apps/eu/*.yaml`.
        let (names, problems) = run_git(
            "        files:
          - path: apps/eu/*.yaml",
        );
        assert!(names.is_empty(), "{names:?}");
        assert!(problems.is_empty(), "{problems:?}");
        let (_, problems) = run_git(
            "        files:
          - path: apps/nowhere/*.yaml",
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn glob_prefixes_name_what_must_exist() {
        assert_eq!(fixed_prefix("apps/*/overlays"), "apps");
        assert_eq!(fixed_prefix("apps/web"), "apps/web");
        assert_eq!(fixed_prefix("*"), "");
    }
}
