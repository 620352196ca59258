//! ApplicationSet expansion: the generators that can be evaluated against the repository
//! (list, git directories and files, matrix and merge of those) produce parameter sets, and
//! each set is substituted into the template. Generators that need a cluster or an API leave
//! one Application with its parameters unresolved, so the template is still analysed.

use super::repo::{normalize_url, Repo};
use super::template;
use super::{Files, Problem, ProblemKind};
use crate::model::Object;
use crate::yaml::{self, typing, Node, ParseLimits, Value};
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

pub fn expand(
    appset: &Object,
    files: &Files,
    repo: &Repo,
    problems: &mut Vec<Problem>,
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
    let cx = Cx {
        files,
        repo,
        problems,
        appset_file: appset.file,
    };
    let mut sets: Vec<Params> = Vec::new();
    let mut unknown = false;
    let mut cx = cx;
    for g in spec.get("generators").map(Node::items).unwrap_or(&[]) {
        match cx.generator(g, 0) {
            Gen::Sets(s) => sets.extend(s),
            Gen::Unknown => unknown = true,
        }
    }
    let patch = spec.get("templatePatch").filter(|p| p.as_str().is_some());
    let mut out = Vec::new();
    if unknown {
        // Lint the template once, with its parameters left as written.
        out.push(application(appset, template.clone()));
    }
    for params in sets.into_iter().take(MAX_APPS) {
        let mut t = template.clone();
        // One parameter set serves every templated field: built once, not once per field.
        let flat = (!go).then(|| flatten(&params));
        let data = J::Object(params);
        substitute(&mut t, &|text| match &flat {
            None => template::render_go(text, &data, missing_error).ok(),
            Some(flat) => Some(template::render_fast(text, flat)),
        });
        let mut app = application(appset, t);
        if let (true, Some(patch)) = (go, patch) {
            apply_template_patch(&mut app, patch, &data, missing_error);
        }
        out.push(app);
    }
    out
}

/// `templatePatch` (goTemplate only): rendered with the same parameters, then merged into the
/// generated Application. A patch that does not render or parse leaves the Application as the
/// template made it.
fn apply_template_patch(app: &mut Object, patch: &Node, data: &J, missing_error: bool) {
    let text = patch.as_str().unwrap_or_default();
    let Ok(rendered) = template::render_go(text, data, missing_error) else {
        return;
    };
    let Ok(docs) = super::parse_inline(&rendered, patch.span) else {
        return;
    };
    for doc in docs.iter().filter(|d| d.is_map()) {
        super::merge::strategic_merge(&mut app.root, doc, false);
    }
    let meta = app.root.get("metadata");
    app.name = meta.and_then(|m| m.str_at("name")).map(str::to_string);
}

struct Cx<'a, 'f> {
    files: &'a Files<'f>,
    repo: &'a Repo,
    problems: &'a mut Vec<Problem>,
    /// Paths in generators are relative to the root of the repository holding the set.
    appset_file: u32,
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
fn substitute(node: &mut Node, render: &dyn Fn(&str) -> Option<String>) {
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
    render: &dyn Fn(&str) -> Option<String>,
    at: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, String)>,
) {
    if let Value::Scalar(s) = &node.value {
        if template::has_template(s.text()) {
            if let Some(new) = render(s.text()) {
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
    fn generator(&mut self, g: &Node, depth: usize) -> Gen {
        if let Some(list) = g.get("list") {
            let sets = list
                .get("elements")
                .map(Node::items)
                .unwrap_or(&[])
                .iter()
                .filter_map(|e| match yaml::to_json(e) {
                    J::Object(m) => Some(m),
                    _ => None,
                })
                .collect();
            return Gen::Sets(sets);
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
        Gen::Unknown
    }

    fn children(&mut self, node: &Node, depth: usize) -> Option<Vec<Vec<Params>>> {
        let mut out = Vec::new();
        for g in node.get("generators").map(Node::items).unwrap_or(&[]) {
            match self.generator(g, depth + 1) {
                Gen::Sets(s) => out.push(s),
                Gen::Unknown => return None,
            }
        }
        Some(out)
    }

    fn matrix(&mut self, m: &Node, depth: usize) -> Gen {
        let Some(children) = self.children(m, depth) else {
            return Gen::Unknown;
        };
        let mut acc: Vec<Params> = vec![Map::new()];
        for child in children {
            let mut next = Vec::new();
            for a in &acc {
                for b in &child {
                    if next.len() >= MAX_APPS {
                        break;
                    }
                    let mut p = a.clone();
                    p.extend(b.clone());
                    next.push(p);
                }
            }
            acc = next;
        }
        Gen::Sets(acc)
    }

    fn merge(&mut self, m: &Node, depth: usize) -> Gen {
        let Some(mut children) = self.children(m, depth) else {
            return Gen::Unknown;
        };
        let keys: Vec<&str> = m
            .get("mergeKeys")
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .filter_map(Node::as_str)
            .collect();
        if children.is_empty() {
            return Gen::Sets(Vec::new());
        }
        let mut base = children.remove(0);
        let key_of = |p: &Params| -> Vec<Option<J>> {
            let flat = flatten(p);
            keys.iter()
                .map(|k| flat.get(*k).map(|v| J::String(v.clone())))
                .collect()
        };
        for other in children {
            for o in other {
                let k = key_of(&o);
                for b in base.iter_mut() {
                    if key_of(b) == k {
                        b.extend(o.clone());
                    }
                }
            }
        }
        Gen::Sets(base)
    }

    fn git(&mut self, git: &Node) -> Gen {
        let url = git.str_at("repoURL").unwrap_or("");
        if !self.repo.urls.contains(&normalize_url(url)) {
            return Gen::Unknown;
        }
        let files = self.files;
        let root = files.root_of(files.path(self.appset_file));
        let dirs = files.dirs_below(&root);
        let mut sets = Vec::new();
        if let Some(entries) = git.get("directories") {
            let mut include = Vec::new();
            let mut exclude = Vec::new();
            for e in entries.items() {
                let Some(pattern) = e.get("path").filter(|p| p.as_str().is_some()) else {
                    continue;
                };
                let text = pattern.as_str().unwrap_or("");
                let Some(m) = super::glob(text, true) else {
                    continue;
                };
                let excluded = e
                    .get("exclude")
                    .and_then(Node::as_scalar)
                    .and_then(typing::as_bool)
                    .unwrap_or(false);
                if excluded {
                    exclude.push(m);
                } else {
                    if !dirs.iter().any(|d| m.is_match(d)) {
                        self.missing(pattern, text, "directory");
                    }
                    include.push(m);
                }
            }
            for d in dirs.iter() {
                if include.iter().any(|m| m.is_match(d)) && !exclude.iter().any(|m| m.is_match(d)) {
                    let mut p = Map::new();
                    p.insert("path".into(), path_params(d, None));
                    sets.push(p);
                }
            }
        }
        for e in git.get("files").map(Node::items).unwrap_or(&[]) {
            let Some(pattern) = e.get("path").filter(|p| p.as_str().is_some()) else {
                continue;
            };
            let text = pattern.as_str().unwrap_or("");
            let Some(m) = super::glob(text, true) else {
                continue;
            };
            let mut matched = false;
            for id in files.files_in(&root, true) {
                let path = files.path(id);
                let r = super::relative(crate::paths::bytes(&root), crate::paths::bytes(path));
                if !m.is_match(&r) {
                    continue;
                }
                matched = true;
                let (dir, name) = r.rsplit_once('/').unwrap_or(("", r.as_str()));
                for doc in self.file_params(id) {
                    let mut p = doc;
                    p.insert("path".into(), path_params(dir, Some(name)));
                    sets.push(p);
                }
            }
            if !matched {
                self.missing(pattern, text, "file");
            }
        }
        Gen::Sets(sets)
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

    #[test]
    fn glob_prefixes_name_what_must_exist() {
        assert_eq!(fixed_prefix("apps/*/overlays"), "apps");
        assert_eq!(fixed_prefix("apps/web"), "apps/web");
        assert_eq!(fixed_prefix("*"), "");
    }
}
