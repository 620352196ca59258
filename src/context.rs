//! Facts about the repository as a whole that single-object rules need: which files are
//! kustomize patches (their Applications are partial), and whether an `argocd-cm` in the
//! repository adds system-level ignoreDifferences.

use crate::model::Object;
use crate::source::SourceDb;
use crate::yaml::{FileId, Node, Span};
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Default)]
pub struct RepoContext {
    /// Files that a kustomization uses as a patch.
    pub patch_files: HashSet<FileId>,
    /// `resource.customizations.ignoreDifferences.*` keys of argocd-cm ConfigMaps.
    pub system_ignores: Vec<Span>,
}

/// Resolves `a/b/../c` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

pub fn build(objects: &[Object], sources: &SourceDb) -> RepoContext {
    let mut cx = RepoContext::default();
    let by_path: HashMap<PathBuf, FileId> = sources
        .files()
        .iter()
        .enumerate()
        .map(|(i, f)| (normalize(&f.path), i as FileId))
        .collect();
    for obj in objects {
        if obj.kind == "Kustomization" {
            let dir = sources.get(obj.file).path.parent().unwrap_or(Path::new(""));
            for patch in patch_paths(&obj.root) {
                if let Some(id) = by_path.get(&normalize(&dir.join(patch))) {
                    cx.patch_files.insert(*id);
                }
            }
        }
        if obj.is("", "ConfigMap") && obj.name.as_deref() == Some("argocd-cm") {
            if let Some(data) = obj.root.get("data") {
                for e in data.entries() {
                    let key = e.key.as_str().unwrap_or("");
                    let system = key.starts_with("resource.customizations.ignoreDifferences.")
                        || (key == "resource.customizations"
                            && e.value
                                .as_str()
                                .is_some_and(|v| v.contains("ignoreDifferences")));
                    if system {
                        cx.system_ignores.push(e.key.span);
                    }
                }
            }
        }
    }
    cx
}

fn patch_paths(k: &Node) -> Vec<&str> {
    let mut out = Vec::new();
    for key in ["patches", "patchesStrategicMerge", "patchesJson6902"] {
        for item in k.get(key).map(Node::items).unwrap_or(&[]) {
            if let Some(p) = item.as_str() {
                // patchesStrategicMerge items may be inline patches rather than paths.
                if !p.contains('\n') {
                    out.push(p);
                }
            } else if let Some(p) = item.str_at("path") {
                out.push(p);
            }
        }
    }
    out
}
