//! Narrowing a run to what a few changed files need. With `--context`, only the changed files
//! are reported, but they are understood in their repository: the kustomizations that include
//! them (and those kustomizations' other inputs) and every Application that could render
//! them. Everything else is not parsed, so a one-file change does not cost a whole-repository
//! lint. The choice is made on paths and a cheap text check, before the parse stage.

use crate::model::is_kustomization_file;
use crate::render::normalize;
use crate::yaml::{self, Node, ParseLimits};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
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

/// What the first look at a file found.
enum Seen {
    Kustomization(PathBuf, Vec<PathBuf>),
    Application,
    Other,
}

/// Which of `files` to parse so that findings caused by `changed` are found as in a full run.
pub fn wanted(files: &[PathBuf], changed: &[PathBuf], limits: ParseLimits) -> Vec<bool> {
    let paths: Vec<PathBuf> = files.iter().map(|p| normalize(p)).collect();
    let changed: Vec<PathBuf> = changed.iter().map(|p| normalize(p)).collect();
    let is_changed = |p: &Path| changed.iter().any(|c| p.starts_with(c));
    // Every file is read once, in parallel: kustomizations for what they reference,
    // everything else for a cheap text check.
    let seen: Vec<Seen> = files
        .par_iter()
        .zip(&paths)
        .map(|(file, path)| {
            let Ok(bytes) = std::fs::read(file) else {
                return Seen::Other;
            };
            let text = String::from_utf8_lossy(&bytes);
            if is_kustomization_file(path) {
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                let parsed = yaml::parse(0, &text, limits);
                let refs = parsed
                    .documents
                    .first()
                    .map(|d| references(&dir, &d.root))
                    .unwrap_or_default();
                Seen::Kustomization(dir, refs)
            } else if text.contains("argoproj.io/") && text.contains("Application") {
                Seen::Application
            } else {
                Seen::Other
            }
        })
        .collect();
    let mut want = vec![false; files.len()];
    // Kustomization directory → what it references.
    let mut kustomizations: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    let mut changed_kustomizations = BTreeSet::new();
    for (i, (path, seen)) in paths.iter().zip(seen).enumerate() {
        if is_changed(path) {
            want[i] = true;
        }
        match seen {
            Seen::Kustomization(dir, refs) => {
                want[i] = true;
                if is_changed(path) {
                    changed_kustomizations.insert(dir.clone());
                }
                kustomizations.insert(dir, refs);
            }
            // Applications and ApplicationSets: any of them may be a parent.
            Seen::Application => want[i] = true,
            Seen::Other => {}
        }
    }
    // Kustomizations that hold or include a changed file, then those that include them
    // (overlays), then what all of those include (bases and components).
    let mut related: BTreeSet<PathBuf> = kustomizations
        .iter()
        .filter(|(dir, refs)| {
            changed_kustomizations.contains(*dir)
                || is_changed(dir)
                || refs.iter().any(|r| is_changed(r))
        })
        .map(|(dir, _)| dir.clone())
        .collect();
    loop {
        let before = related.len();
        for (dir, refs) in &kustomizations {
            if refs.iter().any(|r| related.contains(r)) {
                related.insert(dir.clone());
            }
        }
        if related.len() == before {
            break;
        }
    }
    let mut stack: Vec<PathBuf> = related.iter().cloned().collect();
    while let Some(dir) = stack.pop() {
        for r in kustomizations.get(&dir).into_iter().flatten() {
            if kustomizations.contains_key(r) && related.insert(r.clone()) {
                stack.push(r.clone());
            }
        }
    }
    let inputs: BTreeSet<&PathBuf> = related
        .iter()
        .flat_map(|d| kustomizations.get(d).into_iter().flatten())
        .collect();
    for (i, path) in paths.iter().enumerate() {
        let in_related_dir = path.parent().is_some_and(|d| related.contains(d));
        if inputs.contains(path) || in_related_dir {
            want[i] = true;
        }
    }
    want
}
