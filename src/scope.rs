//! Narrowing a run to what a few changed files need. With `--context`, only the changed files
//! are reported, but they are understood in their repository: the kustomizations that include
//! them (and those kustomizations' other inputs) and every Application that could render
//! them. Everything else is not parsed, so a one-file change does not cost a whole-repository
//! lint. The choice is made on paths and a cheap text check, before the parse stage.

use crate::model::is_kustomization_file;
use crate::render::normalize;
use crate::yaml::{self, Node};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Paths a kustomization names: resources, bases, components, patch files.
fn references(dir: &Path, k: &Node) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut push = |s: &str| {
        if !s.contains("://") && !s.contains('\n') {
            out.push(normalize(&dir.join(s)));
        }
    };
    for field in ["resources", "bases", "components", "patchesStrategicMerge"] {
        for item in k.get(field).map(Node::items).unwrap_or(&[]) {
            if let Some(s) = item.as_str() {
                push(s);
            }
        }
    }
    for field in ["patches", "patchesJson6902"] {
        for item in k.get(field).map(Node::items).unwrap_or(&[]) {
            if let Some(s) = item.as_str().or_else(|| item.str_at("path")) {
                push(s);
            }
        }
    }
    out
}

/// A directory an Application (or an ApplicationSet's git generator) reads, below its root.
struct Source {
    dir: PathBuf,
    recurse: bool,
}

/// What the first look at a file found.
enum Seen {
    Kustomization(PathBuf, Vec<PathBuf>),
    /// An Argo CD object (Application, ApplicationSet, AppProject, an `argocd-*` ConfigMap):
    /// always parsed, as any of them may be a parent or hold repository-wide settings.
    Argo {
        sources: Vec<Source>,
        /// ApplicationSet git generator patterns: directories, and files it reads.
        dir_globs: Vec<globset::GlobMatcher>,
        file_globs: Vec<globset::GlobMatcher>,
    },
    Other,
}

/// The root `path` lies in: the deepest of `roots`.
fn root_of<'r>(roots: &'r [PathBuf], path: &Path) -> &'r Path {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.components().count())
        .map_or(Path::new(""), |r| r.as_path())
}

fn argo(root: &Path, docs: &[&Node]) -> Seen {
    let mut sources = Vec::new();
    let mut dir_globs = Vec::new();
    let mut file_globs = Vec::new();
    let mut add_sources = |spec: Option<&Node>| {
        let Some(spec) = spec else { return };
        let list: Vec<&Node> = match spec.get("sources").filter(|s| !s.items().is_empty()) {
            Some(l) => l.items().iter().collect(),
            None => spec.get("source").into_iter().collect(),
        };
        for src in list {
            let Some(path) = src.str_at("path") else {
                continue;
            };
            if path.contains("{{") {
                continue;
            }
            let recurse = src
                .path(&["directory", "recurse"])
                .and_then(Node::as_scalar)
                .and_then(yaml::typing::as_bool)
                .unwrap_or(false);
            sources.push(Source {
                dir: normalize(&root.join(path)),
                recurse,
            });
        }
    };
    for doc in docs {
        match doc.str_at("kind") {
            Some("Application") => add_sources(doc.get("spec")),
            Some("ApplicationSet") => {
                add_sources(doc.path(&["spec", "template", "spec"]));
                let mut stack: Vec<&Node> = doc.path(&["spec", "generators"]).into_iter().collect();
                while let Some(n) = stack.pop() {
                    if let Some(git) = n.get("git") {
                        for (key, out) in
                            [("directories", &mut dir_globs), ("files", &mut file_globs)]
                        {
                            for e in git.get(key).map(Node::items).unwrap_or(&[]) {
                                let pattern = e.str_at("path").unwrap_or("");
                                let full = normalize(&root.join(pattern));
                                if let Some(m) = crate::render::glob(&full.to_string_lossy(), true)
                                {
                                    out.push(m);
                                }
                            }
                        }
                    }
                    match &n.value {
                        yaml::Value::Map { entries, .. } => {
                            stack.extend(entries.iter().map(|e| &e.value))
                        }
                        yaml::Value::Seq { items, .. } => stack.extend(items.iter()),
                        yaml::Value::Scalar(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
    Seen::Argo {
        sources,
        dir_globs,
        file_globs,
    }
}

/// Whether the first look at a file needs its documents: a kustomization, for what it
/// references, or a file that may hold Argo CD objects, for the directories they read. Every
/// other file is only named.
pub fn needs_documents(path: &Path, bytes: &[u8]) -> bool {
    is_kustomization_file(path)
        || memchr::memmem::find(bytes, b"argoproj.io").is_some()
        || memchr::memmem::find(bytes, b"argocd-").is_some()
}

/// Which of `files` to parse so that findings caused by `changed` are found as in a full run:
/// the changed files; every Argo CD object; the kustomizations that include a changed file
/// (and what they include), that hold Applications, or that a changed Application or
/// ApplicationSet reads; and the plain directories an Application reads where they hold a
/// changed file. Other kustomizations are not built. `documents` holds, for each file that
/// [`needs_documents`], the roots of its documents in order.
pub fn wanted(
    files: &[PathBuf],
    documents: &[Option<Vec<&Node>>],
    changed: &[PathBuf],
    roots: &[PathBuf],
) -> Vec<bool> {
    use crate::paths::{bytes as key, parent_normal, starts_with_normal};
    // Every path here is normalized, so byte equality is path equality and the sets below are
    // keyed by bytes: hashing a `Path` parses its components, for every lookup.
    let paths: Vec<PathBuf> = files.iter().map(|p| normalize(p)).collect();
    let changed: Vec<PathBuf> = changed.iter().map(|p| normalize(p)).collect();
    let roots: Vec<PathBuf> = roots.iter().map(|p| normalize(p)).collect();
    let is_changed = |p: &[u8]| changed.iter().any(|c| starts_with_normal(p, key(c)));
    let seen: Vec<Seen> = paths
        .par_iter()
        .zip(documents)
        .map(|(path, docs)| match docs {
            None => Seen::Other,
            Some(docs) if is_kustomization_file(path) => {
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                let refs = docs
                    .first()
                    .map(|root| references(&dir, root))
                    .unwrap_or_default();
                Seen::Kustomization(dir, refs)
            }
            Some(docs) => argo(root_of(&roots, path), docs),
        })
        .collect();
    let mut want = vec![false; files.len()];
    // Kustomization directory → what it references, and the reverse.
    let mut kustomizations: HashMap<&[u8], &[PathBuf]> = HashMap::new();
    let mut included_by: HashMap<&[u8], Vec<&[u8]>> = HashMap::new();
    let mut argo_files: HashSet<&[u8]> = HashSet::new();
    let mut seeds: HashSet<&[u8]> = HashSet::new();
    // Plain directories to read whole: (dir, recurse).
    let mut dirs: Vec<(&Path, bool)> = Vec::new();
    let mut file_globs = Vec::new();
    let mut dir_globs = Vec::new();
    for (i, (path, seen)) in paths.iter().zip(&seen).enumerate() {
        let mine = is_changed(key(path));
        if mine {
            want[i] = true;
        }
        match seen {
            Seen::Kustomization(dir, refs) => {
                let d = key(dir);
                if mine || is_changed(d) || refs.iter().any(|r| is_changed(key(r))) {
                    seeds.insert(d);
                }
                kustomizations.insert(d, refs);
                for r in refs {
                    included_by.entry(key(r)).or_default().push(d);
                }
            }
            Seen::Argo {
                sources,
                dir_globs: dg,
                file_globs: fg,
            } => {
                want[i] = true;
                argo_files.insert(key(path));
                file_globs.extend(fg.iter().cloned());
                for s in sources {
                    let holds_change = changed.iter().any(|c| {
                        c.starts_with(&s.dir)
                            && (s.recurse || c.parent() == Some(s.dir.as_path()) || *c == s.dir)
                    });
                    if mine || holds_change {
                        seeds.insert(key(&s.dir));
                        dirs.push((&s.dir, s.recurse));
                    }
                }
                if mine {
                    dir_globs.extend(dg.iter().cloned());
                }
            }
            Seen::Other => {}
        }
    }
    // Directories a changed ApplicationSet generates Applications for.
    let mut matched: Vec<&Path> = Vec::new();
    if !dir_globs.is_empty() {
        let parents: HashSet<&Path> = paths.iter().filter_map(|p| p.parent()).collect();
        matched = seen
            .iter()
            .filter_map(|s| match s {
                Seen::Kustomization(dir, _) => Some(dir.as_path()),
                _ => None,
            })
            .chain(parents)
            .filter(|d| {
                dir_globs
                    .iter()
                    .any(|m: &globset::GlobMatcher| m.is_match(d))
            })
            .collect();
        matched.sort();
        matched.dedup();
    }
    for d in matched {
        seeds.insert(key(d));
        dirs.push((d, false));
    }
    // Kustomizations that list Argo CD objects: the app-of-apps containers.
    for (dir, refs) in &kustomizations {
        if refs.iter().any(|r| argo_files.contains(key(r))) {
            seeds.insert(dir);
        }
    }
    // Those kustomizations, then those that include them (overlays), then what all of those
    // include (bases and components).
    let mut related: HashSet<&[u8]> = seeds
        .into_iter()
        .filter(|d| kustomizations.contains_key(d))
        .collect();
    let mut stack: Vec<&[u8]> = related.iter().copied().collect();
    while let Some(dir) = stack.pop() {
        for &up in included_by.get(dir).into_iter().flatten() {
            if related.insert(up) {
                stack.push(up);
            }
        }
    }
    let mut stack: Vec<&[u8]> = related.iter().copied().collect();
    while let Some(dir) = stack.pop() {
        for r in kustomizations.get(dir).copied().unwrap_or_default() {
            let r = key(r);
            if kustomizations.contains_key(r) && related.insert(r) {
                stack.push(r);
            }
        }
    }
    let inputs: HashSet<&[u8]> = related
        .iter()
        .flat_map(|d| kustomizations.get(d).copied().unwrap_or_default())
        .map(|r| key(r))
        .collect();
    for (i, path) in paths.iter().enumerate() {
        let p = key(path);
        let parent = parent_normal(p);
        let in_related_dir = parent.is_some_and(|d| related.contains(d));
        let in_read_dir = dirs.iter().any(|(d, recurse)| {
            parent == Some(key(d)) || (*recurse && starts_with_normal(p, key(d)))
        });
        let generator_input = file_globs.iter().any(|m| m.is_match(path));
        if inputs.contains(p) || in_related_dir || in_read_dir || generator_input {
            want[i] = true;
        }
    }
    want
}
