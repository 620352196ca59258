//! The render stage: builds, offline, the object graph Argo CD would see. Kustomizations are
//! built the way kustomize builds them, Application sources are resolved against the linted
//! repository, ApplicationSets are expanded, and parents are linked to the Applications they
//! render. Nothing here is fetched or executed, and nothing here reports: problems are
//! recorded on the graph and rules decide what to say about them.

mod appset;
pub mod budget;
mod graph;
pub mod helm;
mod kustomize;
pub use kustomize::MAX_NESTING;
mod merge;
mod pathspec;
pub mod template;

pub use graph::{app_sources, build, AppNode, Graph, SourceInfo, SourceKind, Unit, ValueGlob};

use crate::model::{FileDocs, Object};
use crate::source::SourceDb;
use crate::yaml::{FileId, ParseLimits, Span};
use foldhash::{HashMap, HashSet};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A file's documents as written: those the parse stage kept, or parsed again.
pub enum Whole<'a> {
    Kept(&'a FileDocs),
    Parsed(Box<FileDocs>),
}

impl Whole<'_> {
    /// The file's objects to own: copies of those kept, or those parsed again, moved.
    pub fn into_objects(self) -> Vec<Object> {
        match self {
            Whole::Kept(d) => d.objects.iter().map(|o| Object::clone(o)).collect(),
            Whole::Parsed(d) => d.objects.into_iter().map(Arc::unwrap_or_clone).collect(),
        }
    }
}

impl std::ops::Deref for Whole<'_> {
    type Target = FileDocs;

    fn deref(&self) -> &FileDocs {
        match self {
            Whole::Kept(d) => d,
            Whole::Parsed(d) => d,
        }
    }
}

/// Something the render stage could not do, for a rule to report.
#[derive(Clone, Debug)]
pub struct Problem {
    pub kind: ProblemKind,
    pub span: Span,
    pub message: String,
    pub help: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// A kustomization that kustomize would refuse to build.
    Kustomize,
    /// A local source path or generator path that does not exist.
    SourceMissing,
    /// A Helm value file, local or `$ref/...`, that does not exist.
    ValuesMissing,
    /// An ApplicationSet template Argo CD cannot render, or one past the work budget.
    Template,
    /// A local Helm chart that `helm template` refuses to render with the Application's
    /// values.
    Helm,
    /// A local Helm chart past a bound of the renderer (its own or the run's): not rendered.
    HelmLimit,
    /// A local Helm chart that calls what is not evaluated offline: not rendered.
    HelmUnsupported,
}

/// Something deliberately not rendered (remote, Helm, plugins): said once, never guessed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Note {
    pub span: Span,
    pub message: String,
}

pub use crate::paths::normalize;

/// The documents of YAML written inside a string (an inline patch, a `templatePatch`). Their
/// nodes all point at the string, the finest place the source offers.
fn parse_inline(text: &str, span: Span) -> Result<Vec<crate::yaml::Node>, String> {
    let parsed = crate::yaml::parse(span.file, text, ParseLimits::default());
    if let Some(p) = parsed.problems.first() {
        return Err(p.message.clone());
    }
    Ok(parsed
        .documents
        .into_iter()
        .map(|mut d| {
            respan(&mut d.root, span);
            d.root
        })
        .filter(|n| !n.is_null())
        .collect())
}

fn respan(node: &mut crate::yaml::Node, span: Span) {
    respan_with(node, &mut |_| span);
}

/// Gives every node of the tree the span `to` makes of its own.
fn respan_with(node: &mut crate::yaml::Node, to: &mut dyn FnMut(Span) -> Span) {
    use crate::yaml::Value;
    node.span = to(node.span);
    match &mut node.value {
        Value::Map { entries, .. } => {
            for e in entries.make_mut() {
                respan_with(&mut e.key, to);
                respan_with(&mut e.value, to);
            }
        }
        Value::Seq { items, .. } => items.make_mut().iter_mut().for_each(|i| respan_with(i, to)),
        Value::Scalar(_) => {}
    }
}

/// `path` relative to `root`, both normal and given as bytes, written with `/`: what
/// generator patterns are matched against. A path outside `root` is written whole.
pub(crate) fn relative(root: &[u8], path: &[u8]) -> String {
    let rest = if crate::paths::starts_with_normal(path, root) {
        let rest = &path[root.len()..];
        match rest.strip_prefix(b"/") {
            Some(inner) if !root.is_empty() => inner,
            _ => rest,
        }
    } else {
        path
    };
    String::from_utf8_lossy(rest).replace('\\', "/")
}

/// The byte comparisons on paths here hold for paths in normal form only; every path that
/// reaches them is one, and tests check it.
pub(crate) fn debug_assert_normal(path: &Path) {
    debug_assert_eq!(
        normalize(path).as_os_str(),
        path.as_os_str(),
        "not in normal form"
    );
}

/// Most references name a file or directory below the kustomization's own (`dir`, inside
/// `root`, both in normal form): with no part that starts with `.` and no repeated or
/// trailing separator, that is the two joined, which [`by_components`] would give too.
fn joined(root: &Path, dir: &Path, written: &str) -> Option<PathBuf> {
    let w = Path::new(written);
    let below =
        crate::paths::starts_with_normal(crate::paths::bytes(dir), crate::paths::bytes(root));
    (below && !written.is_empty() && !written.starts_with('/') && crate::paths::is_plain(w))
        .then(|| dir.join(w))
}

/// `written` (relative) resolved against `dir` part by part, refusing what climbs out of
/// `root`.
fn by_components(root: &Path, dir: &Path, written: &Path) -> Result<PathBuf, PathError> {
    let rel = dir.strip_prefix(root).unwrap_or(Path::new(""));
    let mut parts: Vec<Component> = rel.components().collect();
    for c in written.components() {
        match c {
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(PathError::Escapes);
                }
            }
            Component::CurDir => {}
            Component::Normal(_) => parts.push(c),
            _ => return Err(PathError::Absolute),
        }
    }
    let mut out = root.to_path_buf();
    out.extend(parts);
    Ok(out)
}

/// Builds one kustomization directory on its own: what `kustomize build dir` prints.
pub fn build_kustomization(
    sources: &SourceDb,
    docs: &[FileDocs],
    root: &Path,
    dir: &Path,
) -> (Vec<Object>, Vec<Problem>) {
    let files = Files::new(sources, docs, &[root.to_path_buf()]);
    let helm = kustomize::prefill_helm(&files, &mut helm::Renders::default());
    let mut kz = kustomize::Kustomizer::new(&files).with_helm(helm);
    let objects = kz.build(&normalize(dir));
    (objects, kz.problems)
}

/// The linted files, indexed by path, with the repository root everything resolves against.
pub struct Files<'a> {
    pub sources: &'a SourceDb,
    pub docs: &'a [FileDocs],
    /// Normalised repository roots; every path below is normalised the same way.
    roots: Vec<PathBuf>,
    /// By [`crate::paths::key`]: hashing a `Path` walks its components, and kustomize looks
    /// up every path it resolves, several names for each directory.
    by_path: HashMap<Box<[u8]>, FileId>,
    /// Files by the directory that holds them, in path order of the directories.
    by_dir: Vec<(PathBuf, Vec<FileId>)>,
    /// Each directory's kustomization file, by the directory's [`crate::paths::key`]: looked
    /// up for every directory kustomize and the Applications name, which would otherwise
    /// join and look up each of the file names in turn.
    kustomizations: HashMap<Box<[u8]>, FileId>,
    /// Each file's normalised path, by id.
    paths: Vec<PathBuf>,
    /// Whether every path allows the byte comparison of [`crate::paths::cmp_plain`].
    plain: bool,
    /// [`Files::dirs_below`] by root, made once: every git generator of every ApplicationSet
    /// asks for it.
    below: std::sync::Mutex<HashMap<PathBuf, Arc<BTreeSet<String>>>>,
}

/// What a path is once symbolic links are resolved: [`Files::follow`].
#[derive(Debug, PartialEq, Eq)]
pub enum Linked {
    /// The path or its target, inside the repository root (the path itself when no link is
    /// on the way).
    Inside(PathBuf),
    /// A link on the way leads outside the repository root, or the path lies in its git data
    /// ([`crate::paths::in_git_data`]).
    Outside,
    /// Nothing there, or a link that leads nowhere (dangling, or a loop).
    Missing,
}

/// Why [`Files::read_extra`] gave no text.
#[derive(Debug, PartialEq, Eq)]
pub enum Unread {
    /// Nothing there: kustomize fails too.
    Missing,
    /// A directory or another non-file: kustomize's loader wants a file and fails too.
    NotAFile,
    /// There, but not read here (too large, not UTF-8 text, unreadable); kustomize may well
    /// read it (binary data goes to a ConfigMap's `binaryData`).
    Skipped(String),
}

/// Why a path written in the repository cannot be followed.
#[derive(Debug, PartialEq, Eq)]
pub enum PathError {
    Absolute,
    /// Climbs out of the repository root, or names its git data ([`crate::paths::names_git`]).
    Escapes,
}

impl PathError {
    pub fn message(&self, written: &str) -> String {
        match self {
            PathError::Absolute => format!(
                "`{written}` is an absolute path: Argo CD resolves paths inside the repository only"
            ),
            PathError::Escapes => {
                format!("`{written}` leads outside the repository root; it is not followed")
            }
        }
    }
}

/// File ids grouped by directory, directories in path order, each directory's files in id
/// order.
fn by_dir(paths: &[PathBuf], plain: bool) -> Vec<(PathBuf, Vec<FileId>)> {
    let mut ids: Vec<FileId> = (0..paths.len() as FileId).collect();
    // Each parent is found once, not at every comparison of the sort below. Every path is
    // normal, so its parent is the bytes before the last separator, and two directories are
    // the same exactly when their bytes are.
    let parents: Vec<&Path> = paths
        .iter()
        .map(|p| crate::paths::parent_of_normal(p).unwrap_or(Path::new("")))
        .collect();
    let parent = |i: FileId| parents[i as usize];
    // Stable: files of one directory keep their order.
    ids.par_sort_by(|a, b| crate::paths::cmp_if(plain, parent(*a), parent(*b)));
    let mut by_dir: Vec<(PathBuf, Vec<FileId>)> = Vec::new();
    for i in ids {
        match by_dir.last_mut() {
            Some((d, list)) if crate::paths::bytes(d) == crate::paths::bytes(parent(i)) => {
                list.push(i)
            }
            _ => by_dir.push((parent(i).to_path_buf(), vec![i])),
        }
    }
    by_dir
}

/// The kustomization file of each directory that has one, by the directory's path key. Where
/// a directory has several, the first name of [`crate::discover::KUSTOMIZATION_FILES`] wins, as
/// kustomize's own search order has it; of two files at one path, the later id, as in
/// `by_path`.
fn kustomizations(paths: &[PathBuf]) -> HashMap<Box<[u8]>, FileId> {
    let mut best: HashMap<Box<[u8]>, (usize, FileId)> = HashMap::default();
    for (i, p) in paths.iter().enumerate() {
        let Some(rank) = crate::discover::kustomization_rank(p) else {
            continue;
        };
        let dir = crate::paths::parent_of_normal(p).unwrap_or(Path::new(""));
        let this = (rank, i as FileId);
        best.entry(crate::paths::key(dir).into())
            .and_modify(|seen| {
                if rank <= seen.0 {
                    *seen = this;
                }
            })
            .or_insert(this);
    }
    best.into_iter().map(|(dir, (_, id))| (dir, id)).collect()
}

impl<'a> Files<'a> {
    pub fn new(sources: &'a SourceDb, docs: &'a [FileDocs], roots: &[PathBuf]) -> Files<'a> {
        let paths: Vec<PathBuf> = sources
            .files()
            .par_iter()
            .map(|f| normalize(&f.path))
            .collect();
        let plain = paths.par_iter().all(|p| crate::paths::is_plain(p));
        // The indexes are built side by side: every other thread waits for them.
        let (by_path, (by_dir, kustomizations)) = rayon::join(
            || -> HashMap<Box<[u8]>, FileId> {
                paths
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (crate::paths::key(p).into(), i as FileId))
                    .collect()
            },
            || rayon::join(|| by_dir(&paths, plain), || kustomizations(&paths)),
        );
        Files {
            sources,
            docs,
            roots: roots.iter().map(|r| normalize(r)).collect(),
            by_path,
            by_dir,
            kustomizations,
            paths,
            plain,
            below: Default::default(),
        }
    }

    /// The repository root that holds `path` (in normal form, [`normalize`], as every path
    /// here is): the deepest one, when roots nest.
    pub fn root_of(&self, path: &Path) -> PathBuf {
        self.root_holding(path).to_path_buf()
    }

    /// [`Files::root_of`], borrowed. The roots and `path` are in normal form, as every path
    /// here is ([`normalize`]): a root holds the path when its bytes begin the path's and end
    /// where a component ends, and of those the deepest is the longest.
    fn root_holding(&self, path: &Path) -> &Path {
        debug_assert_normal(path);
        crate::paths::deepest_normal_root(&self.roots, path)
            .or(self.roots.first().map(PathBuf::as_path))
            .unwrap_or(Path::new(""))
    }

    pub fn file(&self, path: &Path) -> Option<FileId> {
        self.by_path.get(&*crate::paths::key(path)).copied()
    }

    pub fn path(&self, id: FileId) -> &Path {
        &self.paths[id as usize]
    }

    pub fn docs(&self, id: FileId) -> &FileDocs {
        &self.docs[id as usize]
    }

    /// The documents of a file as written, what kustomize reads: a file whose objects were
    /// slimmed is parsed again, so that every read through here sees all of it.
    pub fn whole(&self, id: FileId) -> Whole<'_> {
        let docs = self.docs(id);
        match docs.slimmed {
            None => Whole::Kept(docs),
            Some(limits) => {
                let text = &self.sources.get(id).text;
                let parsed = crate::yaml::parse(id, text, limits);
                Whole::Parsed(Box::new(FileDocs::new(id, self.path(id), parsed)))
            }
        }
    }

    /// Files directly in `dir`, or anywhere below it with `recurse`, in path order.
    pub fn files_in(&self, dir: &Path, recurse: bool) -> Vec<FileId> {
        let below = self.dirs_from(dir);
        if !recurse {
            return below
                .first()
                .filter(|(d, _)| d == dir)
                .map(|(_, ids)| ids.clone())
                .unwrap_or_default();
        }
        let mut out: Vec<FileId> = below
            .iter()
            .take_while(|(d, _)| d.starts_with(dir))
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        out.sort_by(|a, b| {
            crate::paths::cmp_if(
                self.plain,
                &self.paths[*a as usize],
                &self.paths[*b as usize],
            )
        });
        out
    }

    /// The directories from `dir` on, in path order: `dir` itself first if it holds files,
    /// then those below it.
    fn dirs_from(&self, dir: &Path) -> &[(PathBuf, Vec<FileId>)] {
        let plain = self.plain && crate::paths::is_plain(dir);
        let at = self
            .by_dir
            .partition_point(|(d, _)| crate::paths::cmp_if(plain, d, dir).is_lt());
        &self.by_dir[at..]
    }

    /// Directories (holding at least one linted file, or any directory on disk) below the root.
    pub fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        self.by_dir.iter().map(|(d, _)| d)
    }

    /// Every directory below `root` that holds a linted file, and their parents below it,
    /// written relative to `root` with `/`: what a git generator matches its patterns against.
    pub fn dirs_below(&self, root: &Path) -> Arc<BTreeSet<String>> {
        let made = |root: &Path| {
            use crate::paths::{bytes, parent_normal, starts_with_normal};
            // Directories and roots here are normal, so prefixes, parents and equality are
            // matters of bytes.
            let root = crate::paths::normalized(root);
            let r = bytes(&root);
            // Sibling directories share their parents: the walk up stops at the first one
            // already seen.
            let mut seen: HashSet<&[u8]> = HashSet::default();
            let mut dirs: BTreeSet<String> = BTreeSet::new();
            for d in self.dirs() {
                let mut up = Some(bytes(d));
                while let Some(a) = up {
                    if !starts_with_normal(a, r) || a == r || !seen.insert(a) {
                        break;
                    }
                    dirs.insert(relative(r, a));
                    up = parent_normal(a);
                }
            }
            Arc::new(dirs)
        };
        let mut below = self.below.lock().unwrap_or_else(|e| e.into_inner());
        below
            .entry(root.to_path_buf())
            .or_insert_with(|| made(root))
            .clone()
    }

    /// `written`, relative to `dir` (a path inside the root, in normal form: [`normalize`]),
    /// refusing absolute paths and paths that climb out of the root.
    pub fn resolve(&self, dir: &Path, written: &str) -> Result<PathBuf, PathError> {
        let w = Path::new(written);
        if w.is_absolute() || written.starts_with('/') {
            return Err(PathError::Absolute);
        }
        let root = self.root_holding(dir);
        let path = match joined(root, dir, written) {
            Some(path) => path,
            None => by_components(root, dir, w)?,
        };
        // The checkout's git data (the job's token in `.git/config`) is not the repository's
        // content: a path into it is refused as one out of the repository is.
        let (p, r) = (crate::paths::bytes(&path), crate::paths::bytes(root));
        let below = if crate::paths::starts_with_normal(p, r) {
            &p[r.len()..]
        } else {
            p
        };
        if crate::paths::names_git(below) {
            return Err(PathError::Escapes);
        }
        Ok(path)
    }

    /// Whether `path` exists on disk as a directory or file, inside the root once symlinks are
    /// resolved. Only metadata is read.
    pub fn exists(&self, path: &Path) -> bool {
        // A directory's descendants sort right after it, so one range step answers.
        let holds_files = self
            .dirs_from(path)
            .first()
            .is_some_and(|(d, _)| d.starts_with(path));
        if self.file(path).is_some() || holds_files {
            return true;
        }
        let on_disk = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        let root = self.root_of(path);
        let root = if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &root
        };
        match (on_disk.canonicalize(), root.canonicalize()) {
            (Ok(p), Ok(r)) => p.starts_with(&r) && !crate::paths::in_git_data(&p, &r),
            _ => false,
        }
    }

    /// Where `path` leads once the symbolic links on its way are resolved, as kustomize's file
    /// system does (`filepath.EvalSymlinks` in `CleanedAbs`): the in-repository path of the
    /// target, written below the same root as every other path here. Only metadata and link
    /// texts are read on the way, never a file's content, so nothing outside the tree is read
    /// even when the target is outside.
    pub fn follow(&self, path: &Path) -> Linked {
        let dot = |p: &Path| {
            if p.as_os_str().is_empty() {
                Path::new(".").to_path_buf()
            } else {
                p.to_path_buf()
            }
        };
        let root = self.root_of(path);
        let Ok(real_root) = dot(&root).canonicalize() else {
            return Linked::Missing;
        };
        let Ok(real) = dot(path).canonicalize() else {
            // Nothing there; but a path below git data is refused for where it points, not
            // reported missing, whatever lies there.
            let inside_git = path
                .ancestors()
                .skip(1)
                .take_while(|a| {
                    a.starts_with(&root) && a.as_os_str().len() > root.as_os_str().len()
                })
                .find_map(|a| a.canonicalize().ok())
                .is_some_and(|a| crate::paths::in_git_data(&a, &real_root));
            return if inside_git {
                Linked::Outside
            } else {
                Linked::Missing
            };
        };
        match real.strip_prefix(&real_root) {
            // Git data is no more the repository's than what lies outside it.
            Ok(_) if crate::paths::in_git_data(&real, &real_root) => Linked::Outside,
            Ok(rel) => Linked::Inside(normalize(&root.join(rel))),
            Err(_) => Linked::Outside,
        }
    }

    /// Reads a small file that is not a manifest (a generator's `files:` entry), inside the
    /// root once symlinks are resolved.
    pub fn read_extra(&self, path: &Path) -> Result<String, Unread> {
        let bytes = self.read_extra_bytes(path)?;
        String::from_utf8(bytes).map_err(|_| Unread::Skipped("not UTF-8 text".into()))
    }

    /// [`Files::read_extra`] as bytes, whatever they hold: a generator keeps content that is
    /// not UTF-8 as base64.
    pub fn read_extra_bytes(&self, path: &Path) -> Result<Vec<u8>, Unread> {
        const LIMIT: u64 = 1 << 20;
        if let Some(id) = self.file(path) {
            return Ok(self.sources.get(id).text.clone().into_bytes());
        }
        if !self.exists(path) {
            return Err(Unread::Missing);
        }
        let meta = std::fs::metadata(path).map_err(|e| Unread::Skipped(e.to_string()))?;
        if !meta.is_file() {
            return Err(Unread::NotAFile);
        }
        if meta.len() > LIMIT {
            return Err(Unread::Skipped(format!(
                "larger than {LIMIT} bytes; not read"
            )));
        }
        std::fs::read(path).map_err(|e| Unread::Skipped(e.to_string()))
    }

    /// The kustomization file of `dir`, if it has one among the linted files.
    pub fn kustomization(&self, dir: &Path) -> Option<FileId> {
        self.kustomizations.get(&*crate::paths::key(dir)).copied()
    }

    pub fn text(&self, span: Span) -> &str {
        self.sources
            .get(span.file)
            .text
            .get(span.range())
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slimming_keeps_documents_a_directive_may_be_about() {
        let docs = |text: &str| {
            let parsed = crate::yaml::parse(0, text, ParseLimits::default());
            let mut d = FileDocs::new(0, Path::new("values.yaml"), parsed);
            d.slim(ParseLimits::default());
            d
        };
        let plain = docs("replicas: 2\n---\n- op: remove\n  path: /spec\n");
        assert!(plain.loose.is_empty());
        assert!(plain.slimmed.is_some());
        let marked = docs("# gitops-lint: ignore[duplicate-key] kept on purpose\nreplicas: 2\n");
        assert_eq!(marked.loose.len(), 1);
        assert!(marked.slimmed.is_none());
        // Objects alone: nothing to drop, nothing to parse again.
        let object = docs("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
        assert_eq!(object.objects.len(), 1);
        assert!(object.slimmed.is_none());
    }

    /// The parse stage skips what slimming would drop; both must give the same file.
    #[test]
    fn pruning_while_parsing_gives_what_slimming_after_gives() {
        let head = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                    metadata:\n  name: ws.acme.io\n";
        let many_keys: String = (0..20)
            .map(|i| format!("      k{}: {i}\n", i % 19))
            .collect();
        let deep = format!("{}{}", "[".repeat(205), "]".repeat(205));
        // (text, whether the parse itself leaves the schemas out)
        let cases: Vec<(String, bool)> = vec![
            (format!("{head}spec:\n  group: acme.io\n  scope: Cluster\n  versions:\n    - name: v1\n      schema:\n        openAPIV3Schema:\n          type: object\n          # about a\n          properties:\n            a: {{type: string}}\n  names: {{kind: W}}\n"), true),
            (format!("{head}spec:\n  versions: [{{name: v1, schema: {{type: object}}}}]  # flow\n"), true),
            (format!("{head}spec:\n  versions:\n    v1: {{a: 1}}\n"), true),
            (format!("{head}spec:\n  versions:\n    - name: v1\n      name: v2\n      schema: {{a: 1, a: 2}}\n"), true),
            (format!("{head}spec:\n  versions:\n    - name: v1\n{many_keys}"), true),
            (format!("{head}spec:\n  versions:\n    - ? [a]\n      : 1\n      ? [a]\n      : 2\n      name: !!str v1\n"), true),
            (format!("--- &root\n{head}spec:\n  versions: [a, b]\nx: *root\n"), false),
            (format!("{head}spec: &s\n  versions: [a, b]\nother: *s\n"), false),
            (format!("{head}spec: &s\n  versions: [a, b]\nstatus: {{<<: *s}}\n"), false),
            (format!("{head}spec: &s {{versions: [a, b]}}\nspec: *s\n"), false),
            (format!("{head}spec:\n  versions: # the schemas\n    - a\n"), true),
            (format!("{head}spec:\n  versions: [a, b]\n---\n{}", "- x\n".repeat(40)), true),
            (format!("{head}{}", "spec: {versions: [a]}\n".repeat(30)), false),
            (format!("{head}spec:\n  versions:\n    - &v {{name: v1}}\n  other: *v\n"), false),
            (format!("{head}x: &a {{k: v}}\nspec:\n  versions:\n    - *a\n"), false),
            (format!("{head}spec:\n  versions:\n    - <<: {{name: v1}}\n      served: true\n"), false),
            ("apiVersion: apiextensions.k8s.io/v1\nspec:\n  versions: [a]\nkind: CustomResourceDefinition\n".into(), false),
            (format!("{head}spec:\n  versions: [a]\nkind: ConfigMap\n"), false),
            (format!("{head}spec:\n  versions: [a]\n  versions: [b]\n"), false),
            (format!("{head}spec:\n  versions: [a]\nspec:\n  scope: Cluster\n"), false),
            (format!("{head}spec:\n  versions:\n    - name: v1\n      bad: [unclosed\n"), false),
            (format!("{head}spec:\n  versions:\n    - name: v1\nstatus: {{a: [}}\n---\n{head}spec:\n  versions: [a]\n"), true),
            (format!("{head}spec:\n  versions: [a]\n---\napiVersion: v1\nkind: ConfigMap\n---\n{head}spec:\n  versions: [b]\n"), true),
            (format!("{head}spec:\n  versions: []\n"), false),
            (format!("{head}spec:\n  versions:\n"), false),
            (format!("{head}spec:\n  versions:\n    # gitops-lint: ignore[duplicate-key]\n    - {{a: 1, a: 2}}\n"), false),
            (format!("{head}spec:\n  versions: {deep}\n"), false),
            (format!("apiVersion: v1\nkind: List\nitems:\n  - {}    spec:\n      versions: [a]\n", head.replace('\n', "\n    ")), false),
        ];
        let view = |parsed: crate::yaml::ParsedFile, limits: ParseLimits| {
            let head = format!("{:?}\n{:?}", parsed.problems, parsed.comments);
            let mut d = FileDocs::new(0, Path::new("crd.yaml"), parsed);
            d.slim(limits);
            format!(
                "{head}\n{:?}\n{:?}\n{:?}\n{}",
                d.objects,
                d.loose,
                d.directives,
                d.slimmed.is_some()
            )
        };
        let tight = |file_nodes| ParseLimits {
            file_nodes,
            ..ParseLimits::default()
        };
        for (text, pruned) in &cases {
            for limits in [ParseLimits::default(), tight(12), tight(24)] {
                let full = view(crate::yaml::parse(0, text, limits), limits);
                let parsed = crate::engine::parse_text(0, text, limits);
                if limits.file_nodes == ParseLimits::default().file_nodes {
                    assert_eq!(parsed.pruned.is_some(), *pruned, "{text}");
                }
                assert_eq!(view(parsed, limits), full, "{text}");
            }
        }
    }

    #[test]
    fn joining_agrees_with_resolving_by_components() {
        let roots = ["", "/", "repo", "/abs/repo"];
        let below = ["", "apps", "apps/web/overlays/prod"];
        let written = [
            "a",
            "a.yaml",
            "base/deploy.yaml",
            "x/y/z",
            "",
            ".",
            "./a",
            "../base",
            "a/../b",
            "a//b",
            "a/",
            ".env",
            "a/.hidden",
        ];
        let mut fast = 0;
        for root in roots {
            for rel in below {
                // Joining an empty part would add a separator: the root itself is the root.
                let dir = if rel.is_empty() {
                    PathBuf::from(root)
                } else {
                    Path::new(root).join(rel)
                };
                for w in written {
                    let slow = by_components(Path::new(root), &dir, Path::new(w)).ok();
                    if let Some(path) = joined(Path::new(root), &dir, w) {
                        fast += 1;
                        assert_eq!(Some(&path), slow.as_ref(), "{w:?} in {dir:?}");
                        // The same bytes, not only an equal `Path`: it is shown and hashed.
                        assert_eq!(path.as_os_str(), slow.unwrap().as_os_str());
                    }
                }
            }
        }
        assert_eq!(fast, 4 * 3 * 4);
        // A directory outside the root is resolved part by part.
        assert!(joined(Path::new("repo"), Path::new("other"), "a").is_none());
    }

    #[test]
    fn the_kustomization_index_agrees_with_looking_up_each_name() {
        let files = [
            "kustomization.yaml",
            "a/kustomization.yml",
            "a/b/Kustomization",
            "a/b/kustomization.yaml",
            "c/kustomization.yml",
            "c/Kustomization",
            "d/deploy.yaml",
            "d/e/kustomization.yaml.bak",
            "../up/kustomization.yaml",
            "/abs/r/kustomization.yaml",
            "/kustomization.yml",
            "f/.hidden/kustomization.yaml",
            // Two spellings of one path: the later id, as the path index keeps.
            "g/kustomization.yaml",
            "g/./kustomization.yaml",
            // The first name of the search order wins over a later spelling of another.
            "h/kustomization.yml",
            "h/kustomization.yaml",
            "h/./kustomization.yml",
            "../kustomization.yaml",
        ];
        let sources = SourceDb::from(
            files
                .iter()
                .map(|f| crate::source::SourceFile::new(PathBuf::from(f), String::new()))
                .collect::<Vec<_>>(),
        );
        let docs: Vec<FileDocs> = files.iter().map(|_| FileDocs::default()).collect();
        let index = Files::new(&sources, &docs, &[PathBuf::new()]);
        let dirs = [
            "",
            ".",
            "/",
            "a",
            "a/",
            "./a",
            "a/b",
            "a//b",
            "a/b/",
            "a/./b",
            "x/../a/b",
            "c",
            "d",
            "d/e",
            "../up",
            "/abs/r",
            "/abs/r/",
            "f/.hidden",
            "g",
            "h",
            "h/.",
            "..",
            "../.",
            "z",
        ];
        let mut found = 0;
        for dir in dirs {
            let dir = Path::new(dir);
            let by_name = crate::discover::KUSTOMIZATION_FILES
                .iter()
                .find_map(|n| index.file(&dir.join(n)));
            assert_eq!(index.kustomization(dir), by_name, "{dir:?}");
            found += usize::from(by_name.is_some());
        }
        assert_eq!(found, 18);
    }

    #[test]
    fn relative_agrees_with_strip_prefix_on_normal_paths() {
        let roots = ["", "/", "a", "/a", "a/b"];
        let paths = ["a", "a/b", "a/b/c", "ab/c", "/a/x", "/x", "x", "a/bc"];
        for root in roots {
            for path in paths {
                let (r, p) = (Path::new(root), Path::new(path));
                let expected = p
                    .strip_prefix(r)
                    .unwrap_or(p)
                    .to_string_lossy()
                    .into_owned();
                assert_eq!(
                    relative(root.as_bytes(), path.as_bytes()),
                    expected,
                    "{path:?} below {root:?}"
                );
            }
        }
    }
}
