//! Offline kustomize builds. The order of operations follows kustomize v5: resources, then
//! generators, then components, then the built-in transformers in their fixed order; hash
//! suffixes and name references are settled once, at the top of a build.

use super::{Files, Note, Problem, ProblemKind};
use crate::model::Object;
use crate::yaml::{FileId, Node, Span};
use foldhash::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

mod config;
mod fields;
mod generators;
mod helm;
mod names;
mod patches;
mod replacements;
mod resources;
mod scope;
mod transformers;

pub use helm::prefill as prefill_helm;
mod vars;

use config::NameRef;
use names::{fix_references, settle};
use transformers::image_override;

/// A resource as it moves through a build: the object, and its identity before any prefix,
/// suffix or hash, which references and patches are matched against.
#[derive(Clone, Debug)]
pub struct Res {
    pub obj: Object,
    pub orig_name: Option<String>,
    /// The namespace it was written with, which a RoleBinding subject may name it by.
    pub orig_ns: Option<String>,
    /// Every name the object had before its current one, for references written at any level.
    pub old_names: Vec<String>,
    /// Made by a generator whose name still needs its content hash.
    pub hash: bool,
    /// The vars whose value is one of this object's fields.
    pub vars: Vec<vars::VarRef>,
}

impl Res {
    fn new(obj: Object) -> Res {
        Res {
            orig_name: obj.name.clone(),
            orig_ns: obj.namespace.clone(),
            old_names: Vec::new(),
            obj,
            hash: false,
            vars: Vec::new(),
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
type Accumulated = (Rc<Vec<Res>>, bool, Rc<[PathBuf]>, Rc<[NameRef]>);

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
    /// The name references the build under way adds to kustomize's own through
    /// `configurations:`, its own and those of every kustomization it includes (kustomize
    /// merges an included build's configuration into the including one's).
    refs: Vec<NameRef>,
    /// The run's renders of `helmCharts` entries, made before any build ([`prefill_helm`]).
    helm: std::sync::Arc<crate::render::helm::Prefilled>,
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
/// `helmCharts` is rendered when its chart is vendored (`helm.rs`), noted otherwise.
const NOT_RENDERED: &[(&str, &str, bool)] = &[
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

const EMPTY: &str = "this kustomization sets nothing: kustomize refuses to build it (\"kustomization.yaml is empty\")";
const EMPTY_HELP: &str =
    "list its resources (or components, generators); a folder that holds only manifests needs no kustomization file";

const COMPLEX_KEY: &str = "a mapping key here is itself a mapping or a list: kustomize refuses the kustomization (\"invalid Kustomization: yaml: invalid map key\")";
const COMPLEX_KEY_HELP: &str =
    "quote the key; a `{{ ... }}` placeholder is read as a mapping, so quote a value that holds one";

/// The first mapping key that is not a scalar. kustomize reads the kustomization into Go
/// values through JSON (`sigs.k8s.io/yaml`), where a key must be a string: such a key fails
/// the whole file.
fn complex_key(k: &Node) -> Option<Span> {
    let mut stack = vec![k];
    // Each node is visited once: the walk ends with the tree.
    while let Some(n) = stack.pop() {
        match &n.value {
            crate::yaml::Value::Map { entries } => {
                for e in entries.iter() {
                    if !matches!(e.key.value, crate::yaml::Value::Scalar(_)) {
                        return Some(e.key.span);
                    }
                    stack.push(&e.value);
                }
            }
            crate::yaml::Value::Seq { items } => stack.extend(items.iter()),
            crate::yaml::Value::Scalar(_) => {}
        }
    }
    None
}

/// Whether the text holds nothing but blank lines, comments and document markers.
fn only_comments(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#') || l == "---" || l == "..."
    })
}

/// kustomize compares the kustomization it read with an empty one, its `apiVersion` and
/// `kind` aside (`api/types/kustomization.go`, `CheckEmpty`, called from
/// `api/internal/target/kusttarget.go`, kustomize v5.5.0): a field left null, or a string
/// left empty, reads as unset; an empty list or map does not.
fn is_empty_kustomization(k: &Node) -> bool {
    k.is_null()
        || k.is_map()
            && k.entries().iter().all(|e| {
                matches!(e.key.as_str(), Some("apiVersion" | "kind"))
                    || e.value.is_null()
                    || e.value.as_str() == Some("")
            })
}

fn problem(span: Span, message: impl Into<String>, help: &str) -> Problem {
    Problem {
        kind: ProblemKind::Kustomize,
        span,
        message: message.into(),
        help: help.into(),
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
            refs: Vec::new(),
            helm: Default::default(),
        }
    }

    /// A builder that takes `helmCharts` renders from `helm`.
    pub fn with_helm(self, helm: std::sync::Arc<crate::render::helm::Prefilled>) -> Self {
        Kustomizer { helm, ..self }
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
        self.refs.clear();
        let Some(res) = self.accumulate(dir).map(|r| (*r).clone()) else {
            return Vec::new();
        };
        let (objects, fails) = settle(res, &self.refs);
        self.settled(fails);
        objects
    }

    /// [`Kustomizer::build`] for a root: a directory no kustomization includes, built once.
    /// Nothing will ask this builder for its resources again, so they are neither cached nor
    /// copied out of the cache.
    pub fn build_root(&mut self, dir: &Path) -> Vec<Object> {
        self.opaque = false;
        self.inputs.clear();
        self.refs.clear();
        self.compute(dir)
            .map(|res| {
                let (objects, fails) = settle(res, &self.refs);
                self.settled(fails);
                objects
            })
            .unwrap_or_default()
    }

    /// What an Application's `source.kustomize` makes of the kustomization in `dir`: Argo CD
    /// applies those fields as one more layer on top (namePrefix, images, replicas, patches and
    /// the rest), so findings on them point at the Application.
    pub fn build_with(&mut self, dir: &Path, overrides: &Node) -> Vec<Object> {
        self.opaque = false;
        self.inputs.clear();
        self.refs.clear();
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
        fix_references(&mut res, &self.refs);
        self.builds.pop();
        self.stack.pop();
        let (objects, fails) = settle(res, &self.refs);
        self.settled(fails);
        objects
    }

    /// The resources of `dir` with its own generators and transformers applied, but before
    /// hashes and references: what a parent kustomization sees.
    fn accumulate(&mut self, dir: &Path) -> Option<Rc<Vec<Res>>> {
        if let Some((done, opaque, inputs, refs)) = self.cache.get(dir) {
            let (done, refs) = (done.clone(), refs.clone());
            self.opaque |= *opaque;
            self.inputs.extend(inputs.iter().cloned());
            self.add_refs(&refs);
            return Some(done);
        }
        let outer = std::mem::take(&mut self.cut);
        let outer_opaque = std::mem::take(&mut self.opaque);
        let outer_inputs = std::mem::take(&mut self.inputs);
        let outer_refs = std::mem::take(&mut self.refs);
        let res = self.compute(dir).map(Rc::new);
        let refs: Rc<[NameRef]> = std::mem::replace(&mut self.refs, outer_refs).into();
        self.add_refs(&refs);
        let cut = self.cut;
        self.cut |= outer;
        let opaque = self.opaque;
        self.opaque |= outer_opaque;
        let inputs: Rc<[PathBuf]> = std::mem::replace(&mut self.inputs, outer_inputs).into();
        self.inputs.extend(inputs.iter().cloned());
        let res = res?;
        if !cut {
            self.cache
                .insert(dir.to_path_buf(), (res.clone(), opaque, inputs, refs));
        }
        Some(res)
    }

    /// [`Kustomizer::accumulate`] without the cache.
    fn compute(&mut self, dir: &Path) -> Option<Vec<Res>> {
        let kfile = self.files.kustomization(dir)?;
        self.read_file(kfile);
        let whole = self.files.whole(kfile);
        let root = whole.objects.first().map(|o| o.root.clone());
        let source = self.files.sources.get(kfile);
        // kustomize refuses a kustomization that sets nothing. Without an object, that is a
        // file of comments and separators only; one that does not parse is reported as invalid
        // YAML already, and one a narrowed run did not read (or could not) has no text here
        // either: only a file whose text was read is known to be empty.
        let empty = match &root {
            Some(k) => is_empty_kustomization(k),
            None => {
                (!source.text.is_empty()
                    || std::fs::metadata(&source.path).is_ok_and(|m| m.len() == 0))
                    && whole.loose.iter().all(|d| d.root.is_null())
                    && only_comments(&source.text)
            }
        };
        drop(whole);
        if empty {
            // The kustomization's mapping, or the whole file where there is none.
            let span = match &root {
                Some(k) if !k.is_null() => k.span,
                _ => Span::new(kfile, 0, source.text.len().min(u32::MAX as usize)),
            };
            self.problems.push(problem(span, EMPTY, EMPTY_HELP));
        }
        let k = root.filter(|_| !empty)?;
        if let Some(span) = complex_key(&k) {
            self.problems
                .push(problem(span, COMPLEX_KEY, COMPLEX_KEY_HELP));
            return None;
        }
        self.stack.push(dir.to_path_buf());
        self.builds.push(dir.to_path_buf());
        let mut res = Vec::new();
        self.apply(dir, &k, &mut res);
        // References are settled at each level, while only this level's objects are in view:
        // two overlays of one base each keep their own.
        fix_references(&mut res, &self.refs);
        self.builds.pop();
        self.stack.pop();
        Some(res)
    }

    /// Reports what went wrong substituting vars at the end of a build.
    fn settled(&mut self, fails: Vec<(Span, replacements::Fail)>) {
        for (span, f) in fails {
            self.fail("vars", span, f);
        }
    }

    /// Adds name references to the build under way, each once.
    fn add_refs(&mut self, refs: &[NameRef]) {
        for r in refs {
            if !self.refs.contains(r) {
                self.refs.push(r.clone());
            }
        }
    }

    /// One file of `configurations:`: its name references are followed from here up. The
    /// other sections would change where built-in transformers write; they are not applied,
    /// and saying so beats a silent difference.
    fn configuration(&mut self, dir: &Path, item: &Node) {
        let mut refs = Vec::new();
        for doc in self.patch_docs(dir, item, false) {
            for section in config::name_refs(&doc, &mut refs) {
                self.notes.push(Note {
                    span: item.span,
                    message: format!("`configurations`: `{section}` field specs are not applied"),
                });
                self.opaque = true;
            }
        }
        self.add_refs(&refs);
    }

    /// Applies one kustomization (or component) to `res`.
    fn apply(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        let k = &*fields::canonical(k);
        for &(field, why, opaque) in NOT_RENDERED {
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
        for item in k.get("configurations").map(Node::items).unwrap_or(&[]) {
            self.configuration(dir, item);
        }
        // A kustomization's own generators run before its components, so a component's
        // `behavior: merge` generator finds what they made (`api/internal/target/
        // kusttarget.go`, `accumulateTarget`, kustomize v5.5.0).
        self.generate(dir, k, res);
        self.helm_charts(dir, k, res);
        for item in k.get("components").map(Node::items).unwrap_or(&[]) {
            self.component(dir, item, res);
        }
        self.transform(dir, k, res);
        self.merge_vars(k, res);
    }
}
