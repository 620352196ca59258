//! Offline kustomize builds. The order of operations follows kustomize v5: resources, then
//! components, then generators, then the built-in transformers in their fixed order; hash
//! suffixes and name references are settled once, at the top of a build.

use super::{merge, Files, Linked, Note, Problem, ProblemKind, Unread};
use crate::kinds;
use crate::model::Object;
use crate::yaml::{self, FileId, Node, Span};
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

/// A resource as it moves through a build: the object, and its identity before any prefix,
/// suffix or hash, which references and patches are matched against.
#[derive(Clone, Debug)]
pub struct Res {
    pub obj: Object,
    pub orig_name: Option<String>,
    /// Every name the object had before its current one, for references written at any level.
    pub old_names: Vec<String>,
    /// Made by a generator whose name still needs its content hash.
    pub hash: bool,
}

impl Res {
    fn new(obj: Object) -> Res {
        Res {
            orig_name: obj.name.clone(),
            old_names: Vec::new(),
            obj,
            hash: false,
        }
    }

    /// Patches and `replicas` may name an object by any name it has had.
    fn named(&self, name: &str) -> bool {
        self.obj.name.as_deref() == Some(name)
            || self.orig_name.as_deref() == Some(name)
            || self.old_names.iter().any(|n| n == name)
    }

    fn set_name(&mut self, name: String, span: Span) {
        if let Some(old) = self.obj.name.take() {
            if old != name {
                self.old_names.push(old);
            }
        }
        let meta = self.obj.root.map_at("metadata", span);
        meta.set("name", Node::string(name.clone(), span), span);
        self.obj.name = Some(name);
    }
}

/// A directory's resources, whether anything in its build was not rendered, and the files the
/// build read.
type Accumulated = (Rc<Vec<Res>>, bool, Rc<[PathBuf]>);

pub struct Kustomizer<'f> {
    files: &'f Files<'f>,
    /// Each directory's resources, and whether anything in its build was not rendered.
    cache: HashMap<PathBuf, Accumulated>,
    stack: Vec<PathBuf>,
    /// The kustomizations being built (not the components they include), innermost last: a
    /// component's problem that depends on what it is applied to names the build it failed in.
    builds: Vec<PathBuf>,
    pub problems: Vec<Problem>,
    pub notes: Vec<Note>,
    /// Every file some kustomization read. Only ever asked about, never listed: a hash set,
    /// as every builder's are merged into one on a single thread.
    pub consumed: HashSet<FileId>,
    /// `namespace:` fields seen, to tell a subject namespace kustomize set from one written.
    ns_spans: HashSet<Span>,
    /// Whether the build under way met [`MAX_NESTING`]: what it makes then depends on the depth
    /// it was asked from, so it must not be cached for another caller.
    cut: bool,
    /// Whether the build under way has inputs that are not rendered (Helm charts, remote
    /// resources, plugins, files outside the linted paths), anywhere in its resources and
    /// components: objects they would add or rename are unknown, so a patch that finds no
    /// target there is not judged.
    opaque: bool,
    /// The files the build under way read or looked for (kustomizations, resources, patches,
    /// generator inputs), in the order met: what a change must touch to change its objects.
    inputs: Vec<PathBuf>,
}

/// How deep kustomizations (resources, bases and components) may include one another. kustomize
/// itself has no limit; the walk is recursive, and a chain of a few thousand directories would
/// overflow a thread's stack. Real repositories stay within a dozen levels. Past the cap the
/// build is reported as an error, not a note, so that nothing can be hidden from the linter below
/// it without the run failing.
pub const MAX_NESTING: usize = 100;

/// A builder's problems, notes and reads, without its (thread-bound) cache.
pub struct Found {
    problems: Vec<Problem>,
    notes: Vec<Note>,
    consumed: HashSet<FileId>,
    ns_spans: HashSet<Span>,
}

/// Kustomization fields that name things gitops-lint never runs, and whether what they do may
/// add objects or change their identity (kind, name, namespace), which patches are matched by.
const NOT_RENDERED: [(&str, &str, bool); 8] = [
    ("helmCharts", "Helm charts are not inflated offline", true),
    (
        "helmChartInflationGenerator",
        "Helm charts are not inflated offline",
        true,
    ),
    ("generators", "generator plugins are never executed", true),
    (
        "transformers",
        "transformer plugins are never executed",
        true,
    ),
    ("validators", "validator plugins are never executed", false),
    ("replacements", "replacements are not applied yet", true),
    ("vars", "vars are not substituted", true),
    ("openapi", "custom OpenAPI schemas are not read", false),
];

fn is_remote(s: &str) -> bool {
    s.contains("://")
        || s.starts_with("git@")
        || s.starts_with("git::")
        || s.contains("?ref=")
        || s.contains("?version=")
        || ["github.com/", "gitlab.com/", "bitbucket.org/"]
            .iter()
            .any(|h| s.starts_with(h))
}

fn problem(span: Span, message: impl Into<String>, help: &str) -> Problem {
    Problem {
        kind: ProblemKind::Kustomize,
        span,
        message: message.into(),
        help: help.into(),
    }
}

/// Built-in kinds get their schema's list merge keys; everything else is merged schema-less.
fn is_builtin(obj: &Object) -> bool {
    !obj.group().contains('.') || obj.group().ends_with(".k8s.io")
}

/// Where the pod spec of a workload lives.
fn pod_spec_path(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => &["spec", "template", "spec"],
        "CronJob" => &["spec", "jobTemplate", "spec", "template", "spec"],
        "Pod" => &["spec"],
        _ => return None,
    })
}

/// Template metadata paths that labels and annotations reach.
fn template_meta_paths(kind: &str) -> &'static [&'static [&'static str]] {
    match kind {
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => &[&["spec", "template", "metadata"]],
        "CronJob" => &[
            &["spec", "jobTemplate", "metadata"],
            &["spec", "jobTemplate", "spec", "template", "metadata"],
        ],
        _ => &[],
    }
}

impl<'f> Kustomizer<'f> {
    pub fn new(files: &'f Files<'f>) -> Kustomizer<'f> {
        Kustomizer {
            files,
            cache: HashMap::default(),
            stack: Vec::new(),
            builds: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            consumed: HashSet::default(),
            ns_spans: HashSet::default(),
            cut: false,
            opaque: false,
            inputs: Vec::new(),
        }
    }

    /// What this builder learnt besides objects, to hand to another thread's builder.
    pub fn finish(self) -> Found {
        Found {
            problems: self.problems,
            notes: self.notes,
            consumed: self.consumed,
            ns_spans: self.ns_spans,
        }
    }

    /// Takes over what another builder found (run on other roots): its problems, notes, the
    /// files it read. A problem found by both (a base they share) is kept once, in order.
    pub fn absorb(&mut self, other: Found) {
        for p in other.problems {
            let seen = self
                .problems
                .iter()
                .any(|q| q.span == p.span && q.kind == p.kind && q.message == p.message);
            if !seen {
                self.problems.push(p);
            }
        }
        self.notes.extend(other.notes);
        self.consumed.extend(other.consumed);
        self.ns_spans.extend(other.ns_spans);
    }

    /// The files the last build read or looked for, each once, sorted.
    pub fn inputs(&self) -> Arc<[PathBuf]> {
        let mut inputs = self.inputs.clone();
        inputs.sort();
        inputs.dedup();
        inputs.into()
    }

    fn read_file(&mut self, id: FileId) {
        self.consumed.insert(id);
        self.inputs.push(self.files.path(id).to_path_buf());
    }

    /// Builds the kustomization in `dir` completely: what `kustomize build dir` prints.
    pub fn build(&mut self, dir: &Path) -> Vec<Object> {
        self.opaque = false;
        self.inputs.clear();
        let Some(res) = self.accumulate(dir).map(|r| (*r).clone()) else {
            return Vec::new();
        };
        settle(res)
    }

    /// [`Kustomizer::build`] for a root: a directory no kustomization includes, built once.
    /// Nothing will ask this builder for its resources again, so they are neither cached nor
    /// copied out of the cache.
    pub fn build_root(&mut self, dir: &Path) -> Vec<Object> {
        self.opaque = false;
        self.inputs.clear();
        self.compute(dir).map(settle).unwrap_or_default()
    }

    /// What an Application's `source.kustomize` makes of the kustomization in `dir`: Argo CD
    /// applies those fields as one more layer on top (namePrefix, images, replicas, patches and
    /// the rest), so findings on them point at the Application.
    pub fn build_with(&mut self, dir: &Path, overrides: &Node) -> Vec<Object> {
        self.opaque = false;
        self.inputs.clear();
        let Some(mut res) = self.accumulate(dir).map(|r| (*r).clone()) else {
            return Vec::new();
        };
        let mut layer = overrides.clone();
        // Argo CD writes images as `name=newName:tag` strings; kustomize wants mappings.
        if let Some(images) = layer.get_mut("images").and_then(Node::items_mut) {
            for item in images.iter_mut() {
                if let Some(text) = item.as_str().map(str::to_string) {
                    *item = image_override(&text, item.span);
                }
            }
        }
        layer.remove("resources");
        layer.remove("bases");
        layer.remove("version");
        self.stack.push(dir.to_path_buf());
        self.builds.push(dir.to_path_buf());
        self.apply(dir, &layer, &mut res);
        fix_references(&mut res);
        self.builds.pop();
        self.stack.pop();
        settle(res)
    }

    /// The resources of `dir` with its own generators and transformers applied, but before
    /// hashes and references: what a parent kustomization sees.
    fn accumulate(&mut self, dir: &Path) -> Option<Rc<Vec<Res>>> {
        if let Some((done, opaque, inputs)) = self.cache.get(dir) {
            self.opaque |= *opaque;
            self.inputs.extend(inputs.iter().cloned());
            return Some(done.clone());
        }
        let outer = std::mem::take(&mut self.cut);
        let outer_opaque = std::mem::take(&mut self.opaque);
        let outer_inputs = std::mem::take(&mut self.inputs);
        let res = self.compute(dir).map(Rc::new);
        let cut = self.cut;
        self.cut |= outer;
        let opaque = self.opaque;
        self.opaque |= outer_opaque;
        let inputs: Rc<[PathBuf]> = std::mem::replace(&mut self.inputs, outer_inputs).into();
        self.inputs.extend(inputs.iter().cloned());
        let res = res?;
        if !cut {
            self.cache
                .insert(dir.to_path_buf(), (res.clone(), opaque, inputs));
        }
        Some(res)
    }

    /// [`Kustomizer::accumulate`] without the cache.
    fn compute(&mut self, dir: &Path) -> Option<Vec<Res>> {
        let kfile = self.files.kustomization(dir)?;
        self.read_file(kfile);
        let k = self.files.whole(kfile).objects.first()?.root.clone();
        self.stack.push(dir.to_path_buf());
        self.builds.push(dir.to_path_buf());
        let mut res = Vec::new();
        self.apply(dir, &k, &mut res);
        // References are settled at each level, while only this level's objects are in view:
        // two overlays of one base each keep their own.
        fix_references(&mut res);
        self.builds.pop();
        self.stack.pop();
        Some(res)
    }

    /// Applies one kustomization (or component) to `res`.
    fn apply(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        for (field, why, opaque) in NOT_RENDERED {
            if let Some(e) = k.entry(field) {
                if !e.value.is_null() {
                    self.notes.push(Note {
                        span: e.key.span,
                        message: format!("`{field}` not rendered: {why}"),
                    });
                    self.opaque |= opaque;
                }
            }
        }
        for field in ["resources", "bases"] {
            for item in k.get(field).map(Node::items).unwrap_or(&[]) {
                self.load(dir, item, res);
            }
        }
        for item in k.get("components").map(Node::items).unwrap_or(&[]) {
            self.component(dir, item, res);
        }
        self.generate(dir, k, res);
        self.transform(dir, k, res);
    }

    /// Resolves a path written in a kustomization, recording why it cannot be followed.
    fn resolve(&mut self, dir: &Path, item: &Node) -> Option<(String, PathBuf)> {
        let Some(written) = item.as_str().filter(|_| !item.is_null()) else {
            self.problems.push(problem(
                item.span,
                "expected a path, found a mapping or list",
                "write the path as a string",
            ));
            return None;
        };
        if is_remote(written) {
            self.opaque = true;
            self.notes.push(Note {
                span: item.span,
                message: format!(
                    "remote resource `{written}` not rendered: gitops-lint never fetches"
                ),
            });
            return None;
        }
        match self.files.resolve(dir, written) {
            Ok(p) => Some((written.to_string(), p)),
            Err(e) => {
                self.problems.push(problem(
                    item.span,
                    e.message(written),
                    "keep kustomizations inside the repository; kustomize refuses such paths too",
                ));
                None
            }
        }
    }

    /// Where `path` (resolved from `written`) leads: kustomize follows symbolic links
    /// (`filepath.EvalSymlinks`), so a link whose target is inside the repository stands for
    /// that target, found by its own path among the linted files. A link leading out of the
    /// repository is refused, as Argo CD refuses a repository holding one; its target is never
    /// read. What is neither in the index nor reached through a link is returned as it is, for
    /// [`Kustomizer::missing`] to explain.
    fn through_links(&mut self, path: PathBuf, written: &str, item: &Node) -> Option<PathBuf> {
        if self.files.file(&path).is_some() || self.files.kustomization(&path).is_some() {
            return Some(path);
        }
        match self.files.follow(&path) {
            Linked::Inside(real) => Some(real),
            Linked::Missing => Some(path),
            Linked::Outside => {
                self.problems.push(problem(
                    item.span,
                    format!("`{written}` is a symbolic link (or goes through one) that leads outside the repository: Argo CD refuses such a repository, and gitops-lint does not follow it"),
                    "point the link at a path inside the repository, or copy what it names into it",
                ));
                None
            }
        }
    }

    /// Files (not kustomization directories) must sit under the kustomization's own directory
    /// once symbolic links are resolved on both (`path` and `dir` here are): kustomize's
    /// default load restrictor refuses anything else.
    fn restricted(&mut self, dir: &Path, path: &Path, written: &str, item: &Node) -> bool {
        // Both in normal form, as every path here is.
        super::debug_assert_normal(dir);
        super::debug_assert_normal(path);
        if crate::paths::starts_with_normal(crate::paths::bytes(path), crate::paths::bytes(dir)) {
            return false;
        }
        // A directory reached through a link named on the command line keeps the link's name,
        // while kustomize confirms its root with its links resolved (`ConfirmedDir`).
        if let Linked::Inside(real) = self.files.follow(dir) {
            if real != dir
                && crate::paths::starts_with_normal(
                    crate::paths::bytes(path),
                    crate::paths::bytes(&real),
                )
            {
                return false;
            }
        }
        // Only on this rare path: whether the written path was a link to the file.
        let linked = self.files.resolve(dir, written).is_ok_and(|p| p != path);
        let how = if linked {
            let root = self.files.root_of(path);
            let rel = super::relative(crate::paths::bytes(&root), crate::paths::bytes(path));
            format!(" (a symbolic link to `{rel}`)")
        } else {
            String::new()
        };
        self.problems.push(problem(
            item.span,
            format!("`{written}` is a file outside this kustomization's directory{how}: kustomize refuses to load it"),
            "move the file under the kustomization, or reference the directory holding it as a kustomization",
        ));
        true
    }

    fn load(&mut self, dir: &Path, item: &Node, res: &mut Vec<Res>) {
        let Some((written, path)) = self.resolve(dir, item) else {
            return;
        };
        let Some(path) = self.through_links(path, &written, item) else {
            return;
        };
        if let Some(id) = self.files.file(&path) {
            if self.restricted(dir, &path, &written, item) {
                return;
            }
            self.read_file(id);
            res.extend(
                self.files
                    .whole(id)
                    .into_objects()
                    .into_iter()
                    .map(Res::new),
            );
            return;
        }
        if self.files.kustomization(&path).is_some() {
            if self.stack.contains(&path) {
                self.problems.push(problem(
                    item.span,
                    format!("`{written}` closes a cycle: it includes this kustomization again"),
                    "remove the reference that makes the kustomizations include each other",
                ));
                return;
            }
            if self.too_deep(&written, item) {
                return;
            }
            if let Some(sub) = self.accumulate(&path) {
                res.extend(sub.iter().cloned());
            }
            return;
        }
        self.missing(&path, &written, item);
    }

    /// A problem that depends on what it is applied to: raised inside a component, which many
    /// kustomizations may include, it names the build it failed in.
    fn in_context(&self, message: String) -> String {
        match (self.stack.last(), self.builds.last()) {
            (Some(at), Some(build)) if at != build => {
                let root = self.files.root_of(build);
                let rel = super::relative(crate::paths::bytes(&root), crate::paths::bytes(build));
                let rel = if rel.is_empty() { ".".into() } else { rel };
                format!("{message} (in the build of `{rel}`, which includes this component)")
            }
            _ => message,
        }
    }

    /// Whether including `written` would nest kustomizations past [`MAX_NESTING`]; if so, says
    /// so at the entry.
    fn too_deep(&mut self, written: &str, item: &Node) -> bool {
        if self.stack.len() < MAX_NESTING {
            return false;
        }
        self.cut = true;
        self.problems.push(problem(
            item.span,
            format!("`{written}` nests kustomizations more than {MAX_NESTING} levels deep: gitops-lint does not render past that depth, so nothing below it is checked"),
            "flatten the chain of kustomizations; no repository needs this many levels",
        ));
        true
    }

    fn missing(&mut self, path: &Path, written: &str, item: &Node) {
        // A file added there later changes the build.
        self.inputs.push(path.to_path_buf());
        // A link that resolved was followed before this; one still here leads nowhere.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            self.problems.push(problem(
                item.span,
                format!("`{written}` is a symbolic link that leads nowhere: its target does not exist, or the links loop"),
                "point the link at an existing file or directory, or reference the real one",
            ));
            return;
        }
        if self.files.exists(path) {
            let has_kustomization = crate::discover::KUSTOMIZATION_FILES
                .iter()
                .any(|n| path.join(n).is_file());
            // What is there but not among the linted files is not rendered: whatever it holds
            // is unknown to the patches of this build.
            self.opaque |= !path.is_dir() || has_kustomization;
            if path.is_dir() && has_kustomization {
                self.notes.push(Note {
                    span: item.span,
                    message: format!("`{written}` not rendered: it is outside the linted paths (lint the repository, or use --context)"),
                });
            } else if path.is_dir() {
                self.problems.push(problem(
                    item.span,
                    format!("`{written}` is a directory without a kustomization.yaml"),
                    "add a kustomization.yaml listing its resources, or list the files themselves",
                ));
            } else {
                self.notes.push(Note {
                    span: item.span,
                    message: format!(
                        "`{written}` not rendered: the file is not among the linted files"
                    ),
                });
            }
            return;
        }
        // A kustomization beside a Chart.yaml is the config management plugin pattern of Argo
        // CD's own examples (`helm template . > all.yaml && kustomize build`): the file it
        // lists is written by the plugin before kustomize runs.
        let chart = self
            .stack
            .last()
            .is_some_and(|d| self.files.exists(&d.join("Chart.yaml")));
        if chart {
            self.opaque = true;
            self.notes.push(Note {
                span: item.span,
                message: format!("`{written}` not rendered: it is not in the repository, and beside a Chart.yaml a config management plugin likely writes it (helm template) before kustomize runs"),
            });
            return;
        }
        self.problems.push(problem(
            item.span,
            format!("`{written}` does not exist"),
            "fix the path; kustomize fails the whole build, so the application never syncs",
        ));
    }

    fn component(&mut self, dir: &Path, item: &Node, res: &mut Vec<Res>) {
        let Some((written, path)) = self.resolve(dir, item) else {
            return;
        };
        let Some(path) = self.through_links(path, &written, item) else {
            return;
        };
        let Some(kfile) = self.files.kustomization(&path) else {
            self.missing(&path, &written, item);
            return;
        };
        if self.stack.contains(&path) {
            self.problems.push(problem(
                item.span,
                format!("`{written}` closes a cycle: it includes this kustomization again"),
                "remove the reference that makes the kustomizations include each other",
            ));
            return;
        }
        if self.too_deep(&written, item) {
            return;
        }
        self.read_file(kfile);
        let Some(k) = self
            .files
            .whole(kfile)
            .objects
            .first()
            .map(|o| o.root.clone())
        else {
            return;
        };
        self.stack.push(path.clone());
        self.apply(&path, &k, res);
        self.stack.pop();
    }

    /// The documents of a patch: a file's, or an inline string's (its nodes then point at the
    /// inline string as a whole).
    fn patch_docs(&mut self, dir: &Path, node: &Node, inline: bool) -> Vec<Node> {
        if inline {
            return match super::parse_inline(node.as_str().unwrap_or_default(), node.span) {
                Ok(docs) => docs,
                Err(why) => {
                    self.problems.push(problem(
                        node.span,
                        format!("the inline patch is not valid YAML: {why}"),
                        "fix the patch text",
                    ));
                    Vec::new()
                }
            };
        }
        let Some((written, path)) = self.resolve(dir, node) else {
            return Vec::new();
        };
        let Some(path) = self.through_links(path, &written, node) else {
            return Vec::new();
        };
        let Some(id) = self.files.file(&path) else {
            self.missing(&path, &written, node);
            return Vec::new();
        };
        if self.restricted(dir, &path, &written, node) {
            return Vec::new();
        }
        self.read_file(id);
        let docs = self.files.whole(id);
        let mut all: Vec<(usize, Option<usize>, &Node)> = docs
            .objects
            .iter()
            .map(|o| (o.doc, o.list_item, &o.root))
            .chain(docs.loose.iter().map(|d| (d.index, None, &d.root)))
            .collect();
        all.sort_by_key(|(d, l, _)| (*d, *l));
        all.into_iter()
            .map(|(_, _, n)| n.clone())
            .filter(|n| !n.is_null())
            .collect()
    }

    fn transform(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        for item in k
            .get("patchesStrategicMerge")
            .map(Node::items)
            .unwrap_or(&[])
        {
            let inline = item
                .as_str()
                .is_some_and(|s| s.contains('\n') || s.contains(": "));
            for patch in self.patch_docs(dir, item, inline) {
                self.smp_by_identity(patch, item.span, res);
            }
        }
        for item in k.get("patches").map(Node::items).unwrap_or(&[]) {
            self.patch(dir, item, res);
        }
        if let Some(ns) = k.get("namespace").filter(|n| !n.is_null()) {
            if let Some(name) = ns.as_str() {
                set_namespace(res, name, ns.span, &mut self.ns_spans);
            }
        }
        let prefix = k.get("namePrefix").filter(|n| !n.is_null());
        let suffix = k.get("nameSuffix").filter(|n| !n.is_null());
        if prefix.is_some() || suffix.is_some() {
            let p = prefix.and_then(Node::as_str).unwrap_or("");
            let s = suffix.and_then(Node::as_str).unwrap_or("");
            let span = prefix.or(suffix).map_or(k.span, |n| n.span);
            for r in res.iter_mut() {
                if !renames_skip(&r.obj) {
                    if let Some(name) = r.obj.name.clone() {
                        r.set_name(format!("{p}{name}{s}"), span);
                    }
                }
            }
        }
        if let Some(labels) = k.get("commonLabels").filter(|n| n.is_map()) {
            add_labels(res, labels, true, true);
        }
        for l in k.get("labels").map(Node::items).unwrap_or(&[]) {
            if let Some(pairs) = l.get("pairs").filter(|n| n.is_map()) {
                let flag = |key| {
                    l.get(key)
                        .and_then(Node::as_scalar)
                        .and_then(yaml::typing::as_bool)
                        .unwrap_or(false)
                };
                let selectors = flag("includeSelectors");
                add_labels(res, pairs, selectors, selectors || flag("includeTemplates"));
            }
        }
        if let Some(annotations) = k.get("commonAnnotations").filter(|n| n.is_map()) {
            for r in res.iter_mut() {
                let kind = r.obj.kind.clone();
                let span = annotations.span;
                merge_pairs(
                    r.obj
                        .root
                        .map_at("metadata", span)
                        .map_at("annotations", span),
                    annotations,
                );
                for path in template_meta_paths(&kind) {
                    if let Some(meta) = ensure_path(&mut r.obj.root, path, span) {
                        merge_pairs(meta.map_at("annotations", span), annotations);
                    }
                }
            }
        }
        for item in k.get("patchesJson6902").map(Node::items).unwrap_or(&[]) {
            let docs = match (item.get("path"), item.get("patch")) {
                (Some(p), _) => self.patch_docs(dir, p, false),
                (None, Some(p)) => self.patch_docs(dir, p, true),
                _ => Vec::new(),
            };
            let target = item.get("target");
            for ops in docs {
                self.json6902(target, &ops, item.span, res);
            }
        }
        for r in k.get("replicas").map(Node::items).unwrap_or(&[]) {
            let (Some(name), Some(count)) = (r.str_at("name"), r.get("count")) else {
                continue;
            };
            for x in res.iter_mut() {
                let scalable = matches!(
                    x.obj.kind.as_str(),
                    "Deployment" | "ReplicaSet" | "StatefulSet" | "ReplicationController"
                );
                if scalable && x.named(name) {
                    x.obj.root.map_at("spec", count.span).set(
                        "replicas",
                        count.clone(),
                        count.span,
                    );
                }
            }
        }
        for image in k.get("images").map(Node::items).unwrap_or(&[]) {
            for r in res.iter_mut() {
                set_images(&mut r.obj.root, image);
            }
        }
    }

    /// A strategic merge patch without a target applies to the object it names.
    fn smp_by_identity(&mut self, mut patch: Node, item: Span, res: &mut Vec<Res>) {
        let kind = patch.str_at("kind");
        let name = patch.path(&["metadata", "name"]).and_then(Node::as_str);
        let ns = patch
            .path(&["metadata", "namespace"])
            .and_then(Node::as_str);
        let (Some(kind), Some(name)) = (kind, name) else {
            self.problems.push(problem(
                item,
                "a strategic merge patch without `target` needs `kind` and `metadata.name`",
                "name the object to patch, or give the patch a `target`",
            ));
            return;
        };
        let hits: Vec<usize> = res
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.obj.kind == kind
                    && r.named(name)
                    && ns.is_none_or(|ns| {
                        r.obj.namespace.as_deref().unwrap_or("default") == ns
                            || r.obj.namespace.is_none()
                    })
            })
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            // Not rendered inputs may hold the object: kustomize may well find it.
            if !self.opaque {
                let message = self.in_context(format!(
                    "the patch for {kind} `{name}` matches no resource of this kustomization: kustomize fails the build"
                ));
                self.problems.push(problem(
                    item,
                    message,
                    "check the kind and name against the resources (before any namePrefix), or remove the patch",
                ));
            }
            return;
        }
        if let Some(meta) = patch.get_mut("metadata") {
            // The name identifies the target; it is not a value to merge.
            meta.remove("name");
            meta.remove("namespace");
        }
        apply_smp(res, &hits, &patch);
    }

    fn patch(&mut self, dir: &Path, item: &Node, res: &mut Vec<Res>) {
        // kustomize v5 rejects a bare path under `patches` and fails the whole build; the
        // patch is still applied here so the rest of the analysis sees what was meant.
        let docs = if let Some(text) = item.as_str() {
            self.problems.push(problem(
                item.span,
                format!("`patches` entries are mappings: kustomize rejects the bare path `{text}` and fails the build"),
                "write `- path: FILE` (or move the file under `patchesStrategicMerge`)",
            ));
            self.patch_docs(dir, item, false)
        } else {
            match (item.get("path"), item.get("patch")) {
                (Some(p), _) => self.patch_docs(dir, p, false),
                (None, Some(p)) => self.patch_docs(dir, p, true),
                _ => {
                    self.problems.push(problem(
                        item.span,
                        "the patch has neither `path` nor `patch`",
                        "give the patch file's `path` or the inline `patch`",
                    ));
                    return;
                }
            }
        };
        let target = item.get("target").filter(|t| t.is_map());
        for doc in docs {
            if doc.is_seq() {
                self.json6902(target, &doc, item.span, res);
                continue;
            }
            let Some(target) = target else {
                self.smp_by_identity(doc, item.span, res);
                continue;
            };
            let hits = match select(res, target) {
                Ok(h) => h,
                Err(msg) => {
                    self.problems
                        .push(problem(item.span, msg, "fix the target selector"));
                    continue;
                }
            };
            // A selector that selects nothing makes the patch a no-op for kustomize
            // (`resWrangler.Select` returns no resources and no error): the build succeeds.
            if hits.is_empty() {
                continue;
            }
            if merge::is_delete(&doc) {
                delete(res, &hits);
                continue;
            }
            // A targeted patch applies whatever name it carries.
            let mut doc = doc;
            if let Some(meta) = doc.get_mut("metadata") {
                meta.remove("name");
                meta.remove("namespace");
            }
            doc.remove("kind");
            doc.remove("apiVersion");
            apply_smp(res, &hits, &doc);
        }
    }

    fn json6902(&mut self, target: Option<&Node>, ops: &Node, item: Span, res: &mut [Res]) {
        let Some(target) = target else {
            self.problems.push(problem(
                item,
                "a JSON 6902 patch needs a `target`",
                "add a target with at least `kind` and `name`",
            ));
            return;
        };
        let hits = match select(res, target) {
            Ok(h) => h,
            Err(msg) => {
                self.problems
                    .push(problem(item, msg, "fix the target selector"));
                return;
            }
        };
        // As for a targeted strategic merge patch, nothing selected is a no-op.
        for i in hits {
            // kustomize keeps build annotations on every object until the end of a build, so a patch
            // always finds `metadata.annotations` (adding a key to it works on an object
            // written without any); an empty one it did not need is dropped again.
            let span = res[i].obj.root.span;
            let made = res[i]
                .obj
                .root
                .path(&["metadata", "annotations"])
                .is_none_or(|a| !a.is_map());
            if made {
                res[i]
                    .obj
                    .root
                    .map_at("metadata", span)
                    .map_at("annotations", span);
            }
            let patched = merge::json_patch(&mut res[i].obj.root, ops);
            if made {
                if let Some(meta) = res[i].obj.root.get_mut("metadata") {
                    if meta
                        .get("annotations")
                        .is_some_and(|a| a.is_map() && a.entries().is_empty())
                    {
                        meta.remove("annotations");
                    }
                }
            }
            if let Err(e) = patched {
                let message = self.in_context(e.message);
                self.problems
                    .push(problem(e.span, message, "fix the patch operation"));
                return;
            }
            refresh_identity(&mut res[i].obj);
        }
    }

    fn generate(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        let options = k.get("generatorOptions");
        for (field, kind) in [
            ("configMapGenerator", "ConfigMap"),
            ("secretGenerator", "Secret"),
        ] {
            for g in k.get(field).map(Node::items).unwrap_or(&[]) {
                self.generator(dir, g, kind, options, res);
            }
        }
    }

    fn generator(
        &mut self,
        dir: &Path,
        g: &Node,
        kind: &str,
        options: Option<&Node>,
        res: &mut Vec<Res>,
    ) {
        let Some(name) = g.get("name").filter(|n| n.as_str().is_some()) else {
            self.problems.push(problem(
                g.span,
                format!("a {kind} generator needs a `name`"),
                "name the generated object",
            ));
            return;
        };
        let data = self.generator_data(dir, g, kind == "Secret");
        let behavior = g.str_at("behavior").unwrap_or("create");
        let ns = g.str_at("namespace");
        let name_text = name.as_str().unwrap_or_default().to_string();
        if behavior == "merge" || behavior == "replace" {
            let found = res.iter_mut().find(|r| {
                r.obj.kind == kind
                    && r.named(&name_text)
                    && ns.is_none_or(|ns| r.obj.namespace.as_deref() == Some(ns))
            });
            let Some(target) = found else {
                // The object may come from what is not rendered.
                if !self.opaque {
                    let message = self.in_context(format!(
                        "`behavior: {behavior}` but no {kind} `{name_text}` comes from the resources: kustomize fails the build"
                    ));
                    self.problems.push(problem(
                        g.span,
                        message,
                        "use `behavior: create`, or generate the base object first",
                    ));
                }
                return;
            };
            let root = &mut target.obj.root;
            if behavior == "replace" {
                root.remove("data");
            }
            let map = root.map_at("data", data.span);
            for e in data.entries() {
                map.set(
                    e.key.as_str().unwrap_or_default(),
                    e.value.clone(),
                    e.key.span,
                );
            }
            apply_generator_meta(root, options, g);
            return;
        }
        let mut root = Node::empty_map(g.span);
        root.set("apiVersion", Node::string("v1", g.span), g.span);
        root.set("kind", Node::string(kind, g.span), g.span);
        let meta = root.map_at("metadata", g.span);
        meta.set("name", name.clone(), name.span);
        if let Some(ns) = g.get("namespace").filter(|n| !n.is_null()) {
            meta.set("namespace", ns.clone(), ns.span);
        }
        if kind == "Secret" {
            let t = g
                .get("type")
                .filter(|n| !n.is_null())
                .cloned()
                .unwrap_or_else(|| Node::string("Opaque", g.span));
            root.set("type", t, g.span);
        }
        // A generated Secret always carries `data`, a ConfigMap only when it has some.
        if !data.entries().is_empty() || kind == "Secret" {
            root.set("data", data, g.span);
        }
        let immutable = [options, g.get("options")].into_iter().flatten().any(|o| {
            o.get("immutable")
                .and_then(Node::as_scalar)
                .and_then(yaml::typing::as_bool)
                == Some(true)
        });
        if immutable {
            root.set(
                "immutable",
                Node::scalar("true", yaml::Style::Plain, g.span),
                g.span,
            );
        }
        apply_generator_meta(&mut root, options, g);
        // The generator's own option wins over the kustomization's.
        let disabled = [g.get("options"), options]
            .into_iter()
            .flatten()
            .find_map(|o| {
                o.get("disableNameSuffixHash")
                    .and_then(Node::as_scalar)
                    .and_then(yaml::typing::as_bool)
            })
            .unwrap_or(false);
        let obj = Object {
            file: g.span.file,
            doc: 0,
            list_item: None,
            api_version: "v1".into(),
            kind: kind.into(),
            name: Some(name_text),
            namespace: ns.map(str::to_string),
            root,
            generated: true,
        };
        let mut r = Res::new(obj);
        r.hash = !disabled;
        res.push(r);
    }

    /// `data` of a generated object: literals, files and env files, in kustomize's key order.
    fn generator_data(&mut self, dir: &Path, g: &Node, secret: bool) -> Node {
        let mut pairs: BTreeMap<String, (String, Span, Span)> = BTreeMap::new();
        for item in g.get("literals").map(Node::items).unwrap_or(&[]) {
            let Some(text) = item.as_str() else { continue };
            let Some((k, v)) = text.split_once('=') else {
                self.problems.push(problem(
                    item.span,
                    format!("literal `{}` is not KEY=VALUE", key_only(text)),
                    "write the literal as KEY=VALUE",
                ));
                continue;
            };
            let v = unquote(v);
            let value_span = self.value_span(item, k.len() + 1);
            pairs.insert(k.trim().to_string(), (v.to_string(), item.span, value_span));
        }
        for item in g.get("files").map(Node::items).unwrap_or(&[]) {
            let Some(text) = item.as_str() else { continue };
            let (key, file) = match text.split_once('=') {
                Some((k, f)) => (k.to_string(), f),
                None => (
                    Path::new(text)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or(text)
                        .to_string(),
                    text,
                ),
            };
            let Some(content) = self.read(dir, item, file) else {
                continue;
            };
            pairs.insert(key, (content, item.span, item.span));
        }
        let envs: Vec<&Node> = g
            .get("envs")
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .chain(g.get("env").filter(|n| n.as_str().is_some()))
            .collect();
        for item in envs {
            let Some(file) = item.as_str() else { continue };
            let Some(content) = self.read(dir, item, file) else {
                continue;
            };
            for line in content.lines() {
                let line = line.trim_start();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if let Some((k, v)) = line.split_once('=') {
                    pairs.insert(k.trim().to_string(), (v.to_string(), item.span, item.span));
                }
            }
        }
        // The keys are distinct and in order already: the mapping is made at its size, where a
        // `set` per key would search the keys before it each time.
        let mut entries = yaml::Shared::with_capacity(pairs.len());
        for (k, (v, key_span, value_span)) in pairs {
            let text = if secret { base64_encode(&v) } else { v };
            // kustomize folds long base64 values into 70-character lines.
            let text = if secret && text.len() > 70 {
                let mut folded = String::with_capacity(text.len() + text.len() / 70 + 1);
                for chunk in text.as_bytes().chunks(70) {
                    folded.push_str(std::str::from_utf8(chunk).unwrap_or_default());
                    folded.push('\n');
                }
                folded
            } else {
                text
            };
            entries.push(yaml::Entry {
                key: Node::string(k, key_span),
                value: Node::string(text, value_span),
            });
        }
        Node::new(g.span, yaml::Value::Map { entries })
    }

    /// The span of a literal's value inside its item, when the source shows it verbatim.
    fn value_span(&self, item: &Node, offset: usize) -> Span {
        let text = item.as_str().unwrap_or_default();
        if self.files.text(item.span) == text {
            Span::new(
                item.span.file,
                item.span.start as usize + offset,
                item.span.end as usize,
            )
        } else {
            item.span
        }
    }

    fn read(&mut self, dir: &Path, item: &Node, file: &str) -> Option<String> {
        // kustomize's file loader fetches an http(s) URL (`FileLoader.Load`); gitops-lint
        // never does.
        if is_remote(file) {
            self.notes.push(Note {
                span: item.span,
                message: format!("remote file `{file}` not rendered: gitops-lint never fetches"),
            });
            return None;
        }
        let path = match self.files.resolve(dir, file) {
            Ok(p) => p,
            Err(e) => {
                self.problems.push(problem(
                    item.span,
                    e.message(file),
                    "keep generator files inside the kustomization",
                ));
                return None;
            }
        };
        // Read by its own path once links are resolved, so that a link never leads a read out
        // of the repository.
        let path = self.through_links(path, file, item)?;
        if self.restricted(dir, &path, file, item) {
            return None;
        }
        self.inputs.push(path.clone());
        let why = match self.files.read_extra(&path) {
            Ok(text) => return Some(text),
            Err(Unread::Skipped(why)) => {
                self.notes.push(Note {
                    span: item.span,
                    message: format!("`{file}` not rendered: {why}"),
                });
                return None;
            }
            Err(Unread::Missing) => "no such file in the repository",
            Err(Unread::NotAFile) => "not a regular file",
        };
        self.problems.push(problem(
            item.span,
            format!("`{file}` cannot be read: {why}"),
            "fix the path",
        ));
        None
    }
}

/// `nginx=registry/nginx:1.27`, `nginx:1.27` or `nginx@sha256:...` as a kustomize `images` entry.
fn image_override(text: &str, span: Span) -> Node {
    let (name, target) = text.split_once('=').unwrap_or(("", text));
    let (reference, digest) = match target.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (target, None),
    };
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    let (new_name, tag) = match reference[slash..].find(':') {
        Some(i) => (&reference[..slash + i], Some(&reference[slash + i + 1..])),
        None => (reference, None),
    };
    let mut m = Node::empty_map(span);
    let name = if name.is_empty() { new_name } else { name };
    m.set("name", Node::string(name, span), span);
    if new_name != name {
        m.set("newName", Node::string(new_name, span), span);
    }
    if let Some(t) = tag {
        m.set("newTag", Node::string(t, span), span);
    }
    if let Some(d) = digest {
        m.set("digest", Node::string(d, span), span);
    }
    m
}

fn key_only(literal: &str) -> &str {
    literal.split('=').next().unwrap_or("")
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

fn apply_generator_meta(root: &mut Node, options: Option<&Node>, g: &Node) {
    for o in [options, g.get("options")].into_iter().flatten() {
        for (field, key) in [("labels", "labels"), ("annotations", "annotations")] {
            if let Some(pairs) = o.get(field).filter(|n| n.is_map()) {
                merge_pairs(
                    root.map_at("metadata", g.span).map_at(key, pairs.span),
                    pairs,
                );
            }
        }
    }
}

fn merge_pairs(dst: &mut Node, pairs: &Node) {
    for e in pairs.entries() {
        if let Some(k) = e.key.as_str() {
            let v = match e.value.as_str() {
                // Label values are strings even when written as numbers or booleans.
                Some(s) => Node::string(s, e.value.span),
                None => e.value.clone(),
            };
            dst.set(k, v, e.key.span);
        }
    }
}

fn ensure_path<'n>(root: &'n mut Node, path: &[&str], span: Span) -> Option<&'n mut Node> {
    // Only where the object already has the parent structure: a workload's template.
    let (last, init) = path.split_last()?;
    let parent = root.path_mut(init)?;
    Some(parent.map_at(last, span))
}

fn add_labels(res: &mut [Res], labels: &Node, selectors: bool, templates: bool) {
    for r in res.iter_mut() {
        let kind = r.obj.kind.clone();
        let span = labels.span;
        merge_pairs(
            r.obj.root.map_at("metadata", span).map_at("labels", span),
            labels,
        );
        if templates {
            for path in template_meta_paths(&kind) {
                if let Some(meta) = ensure_path(&mut r.obj.root, path, span) {
                    merge_pairs(meta.map_at("labels", span), labels);
                }
            }
        }
        if !selectors {
            continue;
        }
        let selector: Option<(&[&str], bool)> = match kind.as_str() {
            "Service" | "ReplicationController" => Some((&["spec", "selector"], true)),
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => {
                Some((&["spec", "selector", "matchLabels"], true))
            }
            "Job" => Some((&["spec", "selector", "matchLabels"], false)),
            "PodDisruptionBudget" => Some((&["spec", "selector", "matchLabels"], false)),
            "CronJob" => Some((
                &["spec", "jobTemplate", "spec", "selector", "matchLabels"],
                false,
            )),
            "NetworkPolicy" => Some((&["spec", "podSelector", "matchLabels"], false)),
            _ => None,
        };
        // Selectors inside a pod template and a NetworkPolicy follow, where they exist.
        let pod = pod_spec_path(&kind).unwrap_or(&[]);
        if !pod.is_empty() {
            for affinity in ["podAffinity", "podAntiAffinity"] {
                for (list, term) in [
                    ("requiredDuringSchedulingIgnoredDuringExecution", &[][..]),
                    (
                        "preferredDuringSchedulingIgnoredDuringExecution",
                        &["podAffinityTerm"][..],
                    ),
                ] {
                    let mut path: Vec<&str> = pod.to_vec();
                    path.extend(["affinity", affinity, list, "*"]);
                    path.extend(term);
                    path.extend(["labelSelector", "matchLabels"]);
                    for_each_at(&mut r.obj.root, &path, &mut |m| merge_pairs(m, labels));
                }
            }
        }
        if kind == "StatefulSet" {
            if let Some(templates) = r
                .obj
                .root
                .path_mut(&["spec", "volumeClaimTemplates"])
                .and_then(Node::items_mut)
            {
                for t in templates {
                    merge_pairs(t.map_at("metadata", span).map_at("labels", span), labels);
                }
            }
        }
        if kind == "NetworkPolicy" {
            for path in [
                &[
                    "spec",
                    "ingress",
                    "*",
                    "from",
                    "*",
                    "podSelector",
                    "matchLabels",
                ][..],
                &[
                    "spec",
                    "egress",
                    "*",
                    "to",
                    "*",
                    "podSelector",
                    "matchLabels",
                ][..],
            ] {
                for_each_at(&mut r.obj.root, path, &mut |m| merge_pairs(m, labels));
            }
        }
        if let Some((path, create)) = selector {
            let target = if create {
                ensure_path_all(&mut r.obj.root, path, span)
            } else {
                r.obj.root.path_mut(path)
            };
            if let Some(t) = target {
                merge_pairs(t, labels);
            }
        }
    }
}

/// Calls `f` on every mapping at `path` (`*` stepping into each list item).
fn for_each_at(node: &mut Node, path: &[&str], f: &mut dyn FnMut(&mut Node)) {
    let Some((first, rest)) = path.split_first() else {
        if node.is_map() {
            f(node);
        }
        return;
    };
    if *first == "*" {
        for item in node.items_mut().into_iter().flatten() {
            for_each_at(item, rest, f);
        }
    } else if let Some(child) = node.get_mut(first) {
        for_each_at(child, rest, f);
    }
}

fn ensure_path_all<'n>(root: &'n mut Node, path: &[&str], span: Span) -> Option<&'n mut Node> {
    let mut node = root;
    for key in path {
        node = node.map_at(key, span);
    }
    Some(node)
}

/// Kinds kustomize never namespaces. Unknown kinds are assumed namespaced, as kustomize does.
fn cluster_scoped(obj: &Object) -> bool {
    kinds::is_cluster_scoped(&obj.kind)
}

/// Sets the namespace of every namespaced object. A RoleBinding subject follows when it names
/// a ServiceAccount of this build and its namespace is unset, `default`, or one kustomize set.
fn set_namespace(res: &mut [Res], ns: &str, span: Span, ns_spans: &mut HashSet<Span>) {
    ns_spans.insert(span);
    let accounts: HashSet<String> = res
        .iter()
        .filter(|r| r.obj.is("", "ServiceAccount"))
        .flat_map(|r| r.obj.name.iter().chain(&r.old_names).cloned())
        .collect();
    for r in res.iter_mut() {
        if matches!(r.obj.kind.as_str(), "RoleBinding" | "ClusterRoleBinding") {
            for s in r
                .obj
                .root
                .get_mut("subjects")
                .and_then(Node::items_mut)
                .into_iter()
                .flatten()
            {
                let ours = s.str_at("kind") == Some("ServiceAccount")
                    && s.str_at("name").is_some_and(|n| accounts.contains(n));
                let movable = match s.get("namespace") {
                    None => true,
                    Some(n) => n.as_str() == Some("default") || ns_spans.contains(&n.span),
                };
                // Any subject named `default` is moved, whatever it is.
                if (ours && movable) || s.str_at("name") == Some("default") {
                    s.set("namespace", Node::string(ns, span), span);
                }
            }
        }
        if r.obj.kind == "Namespace" {
            // kustomize renames the Namespace object itself to the new namespace.
            r.set_name(ns.to_string(), span);
            continue;
        }
        if cluster_scoped(&r.obj) {
            continue;
        }
        r.obj
            .root
            .map_at("metadata", span)
            .set("namespace", Node::string(ns, span), span);
        r.obj.namespace = Some(ns.to_string());
    }
}

/// Kinds whose names namePrefix and nameSuffix leave alone.
fn renames_skip(obj: &Object) -> bool {
    (obj.kind == "CustomResourceDefinition" && obj.group() == "apiextensions.k8s.io")
        || obj.is("", "Namespace")
}

fn apply_smp(res: &mut Vec<Res>, hits: &[usize], patch: &Node) {
    if merge::is_delete(patch) {
        delete(res, hits);
        return;
    }
    for &i in hits {
        let builtin = is_builtin(&res[i].obj);
        merge::strategic_merge(&mut res[i].obj.root, patch, builtin);
        refresh_identity(&mut res[i].obj);
    }
}

fn delete(res: &mut Vec<Res>, hits: &[usize]) {
    let mut i = 0;
    res.retain(|_| {
        let keep = !hits.contains(&i);
        i += 1;
        keep
    });
}

/// A patch may change the name or namespace; the object's identity follows its data.
fn refresh_identity(obj: &mut Object) {
    let meta = obj.root.get("metadata");
    obj.name = meta.and_then(|m| m.str_at("name")).map(str::to_string);
    obj.namespace = meta.and_then(|m| m.str_at("namespace")).map(str::to_string);
    if let Some(k) = obj.root.str_at("kind") {
        obj.kind = k.to_string();
    }
    if let Some(v) = obj.root.str_at("apiVersion") {
        obj.api_version = v.to_string();
    }
}

/// The resources a patch `target` selects. Names and namespaces are anchored regular
/// expressions, as in kustomize.
fn select(res: &[Res], target: &Node) -> Result<Vec<usize>, String> {
    let regex = |key: &str| -> Result<Option<regex::Regex>, String> {
        match target.str_at(key) {
            None => Ok(None),
            Some(p) => regex::RegexBuilder::new(&format!("^(?:{p})$"))
                .size_limit(1 << 20)
                .build()
                .map(Some)
                .map_err(|e| format!("target `{key}` is not a valid regular expression: {e}")),
        }
    };
    let name = regex("name")?;
    let namespace = regex("namespace")?;
    let labels = target
        .str_at("labelSelector")
        .map(parse_selector)
        .transpose()?;
    let annotations = target
        .str_at("annotationSelector")
        .map(parse_selector)
        .transpose()?;
    let mut out = Vec::new();
    for (i, r) in res.iter().enumerate() {
        let o = &r.obj;
        if target.str_at("kind").is_some_and(|k| k != o.kind)
            || target.str_at("group").is_some_and(|g| g != o.group())
            || target.str_at("version").is_some_and(|v| v != o.version())
        {
            continue;
        }
        if let Some(re) = &name {
            let current = o.name.as_deref().unwrap_or("");
            let orig = r.orig_name.as_deref().unwrap_or("");
            if !re.is_match(current) && !re.is_match(orig) {
                continue;
            }
        }
        if let Some(re) = &namespace {
            if !re.is_match(o.namespace.as_deref().unwrap_or("")) {
                continue;
            }
        }
        let meta_map = |key: &str| -> BTreeMap<String, String> {
            o.root
                .path(&["metadata", key])
                .map(|m| {
                    m.entries()
                        .iter()
                        .filter_map(|e| {
                            Some((
                                e.key.as_str()?.to_string(),
                                e.value.as_str().unwrap_or("").to_string(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        if labels
            .as_ref()
            .is_some_and(|s| !matches_selector(s, &meta_map("labels")))
            || annotations
                .as_ref()
                .is_some_and(|s| !matches_selector(s, &meta_map("annotations")))
        {
            continue;
        }
        out.push(i);
    }
    Ok(out)
}

#[derive(Debug)]
enum Requirement {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// A Kubernetes label selector: `a=b, c!=d, e in (x,y), f notin (z), g, !h`.
fn parse_selector(text: &str) -> Result<Vec<Requirement>, String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    let mut out = Vec::new();
    for p in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let set = |rest: &str| -> Vec<String> {
            rest.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .map(|v| v.trim().to_string())
                .collect()
        };
        let req = if let Some((k, v)) = p.split_once("!=") {
            Requirement::Ne(k.trim().into(), v.trim().into())
        } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
            Requirement::Eq(k.trim().into(), v.trim().into())
        } else if let Some((k, rest)) = p.split_once(" notin ") {
            Requirement::NotIn(k.trim().into(), set(rest))
        } else if let Some((k, rest)) = p.split_once(" in ") {
            Requirement::In(k.trim().into(), set(rest))
        } else if let Some(k) = p.strip_prefix('!') {
            Requirement::Absent(k.trim().into())
        } else if p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        {
            Requirement::Exists(p.into())
        } else {
            return Err(format!("`{p}` is not a label selector requirement"));
        };
        out.push(req);
    }
    Ok(out)
}

fn matches_selector(reqs: &[Requirement], labels: &BTreeMap<String, String>) -> bool {
    reqs.iter().all(|r| match r {
        Requirement::Eq(k, v) => labels.get(k) == Some(v),
        Requirement::Ne(k, v) => labels.get(k) != Some(v),
        Requirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
        Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
        Requirement::Exists(k) => labels.contains_key(k),
        Requirement::Absent(k) => !labels.contains_key(k),
    })
}

/// `images:` entries apply to every container and init container, wherever it sits.
fn set_images(node: &mut Node, image: &Node) {
    let Some(name) = image.str_at("name") else {
        return;
    };
    let span = ["digest", "newTag", "newName"]
        .iter()
        .find_map(|k| image.get(k))
        .map_or(image.span, |n| n.span);
    // Found first, then changed: only the branches that lead to a retagged container are
    // made the object's own, the rest stays shared with the base it was rendered from.
    let mut found = Vec::new();
    find_retags(node, name, image, &mut Vec::new(), &mut found);
    node.write_at(found, |c, new| {
        c.set("image", Node::string(new, span), span)
    });
}

/// The containers and init containers below `node` whose image `image` changes, each by its
/// path of child positions, with its new image.
fn find_retags(
    node: &Node,
    name: &str,
    image: &Node,
    at: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, String)>,
) {
    for (i, key, child) in node.children() {
        at.push(i);
        if matches!(key, Some("containers" | "initContainers")) {
            for (j, c) in child.items().iter().enumerate() {
                if let Some(new) = c.str_at("image").and_then(|cur| retag(cur, name, image)) {
                    at.push(j);
                    out.push((at.clone(), new));
                    at.pop();
                }
            }
        } else {
            find_retags(child, name, image, at, out);
        }
        at.pop();
    }
}

fn retag(current: &str, name: &str, image: &Node) -> Option<String> {
    let (base, reference) = match current.find('@') {
        Some(i) => (&current[..i], &current[i..]),
        None => {
            let slash = current.rfind('/').map_or(0, |i| i + 1);
            match current[slash..].find(':') {
                Some(i) => (&current[..slash + i], &current[slash + i..]),
                None => (current, ""),
            }
        }
    };
    if base != name {
        return None;
    }
    let new_name = image.str_at("newName").unwrap_or(base);
    let reference = if let Some(d) = image.str_at("digest") {
        format!("@{d}")
    } else if let Some(t) = image.get("newTag").and_then(Node::as_str) {
        format!(":{t}")
    } else {
        reference.to_string()
    };
    Some(format!("{new_name}{reference}"))
}

/// The end of a build: hash suffixes, then the references to renamed objects.
fn settle(mut res: Vec<Res>) -> Vec<Object> {
    add_hashes(&mut res);
    fix_references(&mut res);
    res.into_iter().map(|r| r.obj).collect()
}

/// Appends kustomize's content hash to generated names.
fn add_hashes(res: &mut [Res]) {
    for r in res.iter_mut().filter(|r| r.hash) {
        let Some(name) = r.obj.name.clone() else {
            continue;
        };
        let h = content_hash(&r.obj);
        let span = r
            .obj
            .root
            .path(&["metadata", "name"])
            .map_or(r.obj.root.span, |n| n.span);
        r.set_name(format!("{name}-{h}"), span);
    }
}

/// kustomize's hash: SHA-256 of a JSON object of kind, data (and binaryData, or a Secret's
/// type), written as Go's encoder writes it; the first ten hex digits, with some letters
/// swapped so the result never reads as a number or a word. kustomize looks the name up
/// under a path that never matches, so the name field is always empty.
fn content_hash(obj: &Object) -> String {
    use sha2::{Digest, Sha256};
    let map = |key: &str| -> Option<String> {
        let d = obj.root.get(key).filter(|d| d.is_map())?;
        let sorted: BTreeMap<&str, &str> = d
            .entries()
            .iter()
            .map(|e| {
                (
                    e.key.as_str().unwrap_or_default(),
                    e.value.as_str().unwrap_or_default(),
                )
            })
            .collect();
        let body: Vec<String> = sorted
            .iter()
            .map(|(k, v)| format!("{}:{}", go_json(k), go_json(v)))
            .collect();
        Some(format!("{{{}}}", body.join(",")))
    };
    let data = map("data").unwrap_or_else(|| go_json(""));
    let json = if obj.kind == "Secret" {
        let string_data = map("stringData")
            .map(|s| format!(",\"stringData\":{s}"))
            .unwrap_or_default();
        let t = obj.root.str_at("type").unwrap_or("");
        format!(
            "{{\"data\":{data},\"kind\":\"Secret\",\"name\":\"\"{string_data},\"type\":{}}}",
            go_json(t)
        )
    } else {
        let binary = map("binaryData")
            .map(|b| format!("\"binaryData\":{b},"))
            .unwrap_or_default();
        format!("{{{binary}\"data\":{data},\"kind\":\"ConfigMap\",\"name\":\"\"}}")
    };
    let digest = Sha256::digest(json.as_bytes());
    digest
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(10)
        .map(|n| match n {
            0 => 'g',
            1 => 'h',
            3 => 'k',
            10 => 'm',
            14 => 't',
            n => char::from_digit(u32::from(n), 16).unwrap_or('x'),
        })
        .collect()
}

fn go_json(s: &str) -> String {
    super::template::go_json_string(s, true)
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

/// Where one kind of object is referred to by name.
struct RefSpec {
    target: &'static str,
    path: &'static [&'static str],
}

/// References inside a pod spec.
#[rustfmt::skip]
const POD_REFS: &[RefSpec] = &[
    RefSpec { target: "ConfigMap", path: &["volumes", "*", "configMap", "name"] },
    RefSpec { target: "ConfigMap", path: &["volumes", "*", "projected", "sources", "*", "configMap", "name"] },
    RefSpec { target: "Secret", path: &["volumes", "*", "secret", "secretName"] },
    RefSpec { target: "Secret", path: &["volumes", "*", "projected", "sources", "*", "secret", "name"] },
    RefSpec { target: "Secret", path: &["imagePullSecrets", "*", "name"] },
    RefSpec { target: "ServiceAccount", path: &["serviceAccountName"] },
    RefSpec { target: "PersistentVolumeClaim", path: &["volumes", "*", "persistentVolumeClaim", "claimName"] },
];

/// References inside each container and init container.
#[rustfmt::skip]
const CONTAINER_REFS: &[RefSpec] = &[
    RefSpec { target: "ConfigMap", path: &["env", "*", "valueFrom", "configMapKeyRef", "name"] },
    RefSpec { target: "ConfigMap", path: &["envFrom", "*", "configMapRef", "name"] },
    RefSpec { target: "Secret", path: &["env", "*", "valueFrom", "secretKeyRef", "name"] },
    RefSpec { target: "Secret", path: &["envFrom", "*", "secretRef", "name"] },
];

#[rustfmt::skip]
const OBJECT_REFS: &[(&str, RefSpec)] = &[
    ("StatefulSet", RefSpec { target: "Service", path: &["spec", "serviceName"] }),
    ("Ingress", RefSpec { target: "Service", path: &["spec", "rules", "*", "http", "paths", "*", "backend", "service", "name"] }),
    ("Ingress", RefSpec { target: "Service", path: &["spec", "defaultBackend", "service", "name"] }),
    ("Ingress", RefSpec { target: "Secret", path: &["spec", "tls", "*", "secretName"] }),
    ("ServiceAccount", RefSpec { target: "Secret", path: &["secrets", "*", "name"] }),
    ("ServiceAccount", RefSpec { target: "Secret", path: &["imagePullSecrets", "*", "name"] }),
    ("RoleBinding", RefSpec { target: "ServiceAccount", path: &["subjects", "*", "name"] }),
    ("ClusterRoleBinding", RefSpec { target: "ServiceAccount", path: &["subjects", "*", "name"] }),
];

/// After prefixes, suffixes and hashes, references by name follow the objects they name.
fn fix_references(res: &mut [Res]) {
    let mut renamed: HashMap<(String, String), String> = HashMap::default();
    for r in res.iter() {
        if let Some(now) = &r.obj.name {
            for old in &r.old_names {
                renamed
                    .entry((r.obj.kind.clone(), old.clone()))
                    .or_insert_with(|| now.clone());
            }
        }
    }
    if renamed.is_empty() {
        return;
    }
    let current: HashSet<(String, String)> = res
        .iter()
        .filter_map(|r| Some((r.obj.kind.clone(), r.obj.name.clone()?)))
        .collect();
    let lookup = |kind: &str, name: &str| {
        let key = (kind.to_string(), name.to_string());
        if current.contains(&key) {
            return None;
        }
        renamed.get(&key).cloned()
    };
    for r in res.iter_mut() {
        // Every reference is looked up before any is written: an object that names nothing
        // renamed stays shared with the base it was rendered from.
        let mut found = Vec::new();
        let root = &r.obj.root;
        let kind = r.obj.kind.as_str();
        if let Some((mut at, pod)) = pod_spec_path(kind).and_then(|path| root.locate(path)) {
            for spec in POD_REFS {
                find_refs(
                    pod,
                    spec.path,
                    &|name| lookup(spec.target, name),
                    &mut at,
                    &mut found,
                );
            }
            for list in ["containers", "initContainers"] {
                let Some(l) = pod.entry_index(list) else {
                    continue;
                };
                for (i, c) in pod.entries()[l].value.items().iter().enumerate() {
                    at.extend([l, i]);
                    for spec in CONTAINER_REFS {
                        let lookup = |name: &str| lookup(spec.target, name);
                        find_refs(c, spec.path, &lookup, &mut at, &mut found);
                    }
                    at.truncate(at.len() - 2);
                }
            }
        }
        for (k, spec) in OBJECT_REFS {
            if *k != kind {
                continue;
            }
            if matches!(kind, "RoleBinding" | "ClusterRoleBinding") {
                let Some(at) = root.entry_index("subjects") else {
                    continue;
                };
                for (i, s) in root.entries()[at].value.items().iter().enumerate() {
                    if s.str_at("kind") == Some("ServiceAccount") {
                        let lookup = |name: &str| lookup("ServiceAccount", name);
                        find_refs(s, &["name"], &lookup, &mut vec![at, i], &mut found);
                    }
                }
            } else {
                find_refs(
                    root,
                    spec.path,
                    &|name| lookup(spec.target, name),
                    &mut Vec::new(),
                    &mut found,
                );
            }
        }
        // References that carry their target's kind.
        let typed: &[(&[&str], &str, &str)] = &[
            (&["spec", "scaleTargetRef"], "name", "Deployment"),
            (&["roleRef"], "name", ""),
        ];
        for (at, field, default_kind) in typed {
            if kind == "HorizontalPodAutoscaler" || kind.ends_with("Binding") {
                if let Some((mut at, node)) = root.locate(at) {
                    let target = node.str_at("kind").unwrap_or(default_kind);
                    let lookup = |name: &str| lookup(target, name);
                    find_refs(node, &[field], &lookup, &mut at, &mut found);
                }
            }
        }
        r.obj.root.write_at(found, |node, new| {
            let span = node.span;
            *node = Node::string(new, span);
        });
    }
}

/// The string scalars at `path` below `node` (`*` for every item of a list) that `new_name`
/// renames, each by its path of child positions (`at` leads to `node`), with its new name.
fn find_refs(
    node: &Node,
    path: &[&str],
    new_name: &dyn Fn(&str) -> Option<String>,
    at: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, String)>,
) {
    let Some((first, rest)) = path.split_first() else {
        if let Some(new) = node.as_str().and_then(new_name) {
            out.push((at.clone(), new));
        }
        return;
    };
    let mut visit = |i: usize, child: &Node| {
        at.push(i);
        find_refs(child, rest, new_name, at, out);
        at.pop();
    };
    if *first == "*" {
        for (i, item) in node.items().iter().enumerate() {
            visit(i, item);
        }
    } else if let Some(i) = node.entry_index(first) {
        visit(i, &node.entries()[i].value);
    }
}
