//! What a change reaches, once the repository is rendered: the findings a `--context` or
//! `--changed-since` run reports. A finding is the change's when it is located in a changed
//! file, or when it is about an object the change can alter: one a changed file holds, one a
//! kustomization builds from a changed file (a base, a patch, a generator's input, the
//! kustomization itself), one an Application deploys when that Application is reached (its
//! file changed, its parent's render of it, its ApplicationSet, its AppProject), and the
//! Application that deploys a reached object. A change to settings every Application reads
//! (an `argocd-*` ConfigMap or Secret, a cluster or repository Secret, a CRD that makes a kind
//! cluster-scoped) reaches everything.

use crate::finding::Finding;
use crate::model::Object;
use crate::paths::normalize;
use crate::paths::normalized;
use crate::render::Graph;
use crate::source::SourceDb;
use crate::yaml::FileId;
use foldhash::HashSet;
use std::path::{Path, PathBuf};

pub struct Reach {
    changed: Vec<PathBuf>,
    /// By unit: whether the change can alter the object.
    units: Vec<bool>,
    /// The files of what was reached: a finding the graph does not tie to an object (a
    /// kustomization that no longer builds) is the change's when it is located in one.
    files: HashSet<PathBuf>,
}

/// Settings that every Application and project reads.
fn is_global(obj: &Object) -> bool {
    let argocd_named = obj
        .name
        .as_deref()
        .is_some_and(|n| n.starts_with("argocd-"))
        && matches!(obj.kind.as_str(), "ConfigMap" | "Secret")
        && obj.group().is_empty();
    let argocd_secret = obj
        .root
        .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
        .is_some();
    argocd_named
        || argocd_secret
        || crate::model::declares_cluster_kind(obj.group(), &obj.kind, &obj.root)
}

fn project_of(obj: &Object) -> Option<&str> {
    let spec = if obj.is_argocd("ApplicationSet") {
        obj.root.path(&["spec", "template", "spec"])
    } else {
        obj.spec()
    };
    // Argo CD reads an empty project as `default`.
    Some(
        spec?
            .str_at("project")
            .filter(|p| !p.is_empty())
            .unwrap_or("default"),
    )
}

impl Reach {
    pub fn new(graph: &Graph, sources: &SourceDb, changed: &[PathBuf]) -> Reach {
        let changed: Vec<PathBuf> = changed.iter().map(|p| normalize(p)).collect();
        let is_changed = |p: &Path| {
            let p = normalized(p);
            changed.iter().any(|c| p.starts_with(c))
        };
        let mut in_changed: Vec<Option<bool>> = vec![None; sources.files().len()];
        let mut file_changed = |id: FileId| {
            *in_changed[id as usize].get_or_insert_with(|| is_changed(&sources.get(id).path))
        };
        let held: Vec<bool> = graph
            .units
            .iter()
            .map(|u| file_changed(u.obj.file) || u.inputs.iter().any(|p| is_changed(p)))
            .collect();
        let global = graph
            .units
            .iter()
            .zip(&held)
            .any(|(u, &h)| h && is_global(&u.obj));
        let projects: HashSet<&str> = graph
            .units
            .iter()
            .zip(&held)
            .filter(|(u, &h)| h && u.obj.is_argocd("AppProject"))
            .filter_map(|(u, _)| u.obj.name.as_deref())
            .collect();
        let is_app = |u: usize| {
            let o = &graph.units[u].obj;
            o.is_argocd("Application") || o.is_argocd("ApplicationSet")
        };
        let mut units: Vec<bool> = (0..graph.units.len())
            .map(|u| {
                global
                    || held[u]
                    || (!projects.is_empty()
                        && is_app(u)
                        && project_of(&graph.units[u].obj).is_some_and(|p| projects.contains(p)))
            })
            .collect();
        // Down the app-of-apps tree: what a reached Application or ApplicationSet deploys or
        // generates. Each round goes one level deeper.
        loop {
            let mut grew = false;
            for app in &graph.apps {
                let reached = units[app.unit] || app.generated_by.is_some_and(|s| units[s]);
                if !reached {
                    continue;
                }
                if !units[app.unit] {
                    units[app.unit] = true;
                    grew = true;
                }
                for &r in &app.rendered {
                    if !units[r] {
                        units[r] = true;
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        let mut files: HashSet<PathBuf> = HashSet::default();
        for unit in graph
            .units
            .iter()
            .zip(&units)
            .filter(|(_, r)| **r)
            .map(|(u, _)| u)
        {
            files.insert(normalize(&sources.get(unit.obj.file).path));
            files.extend(unit.inputs.iter().map(|p| normalize(p)));
        }
        // Up one level: an Application's own findings may read the manifests it deploys (an
        // ignore that a rendered field makes matter). Only its own findings: what else it
        // deploys is not reached. Its child Applications do not count: findings on a parent
        // about its children point at them.
        let deployers: Vec<usize> = graph
            .apps
            .iter()
            .filter(|a| {
                a.rendered
                    .iter()
                    .any(|&r| r != a.unit && units[r] && !is_app(r))
            })
            .map(|a| a.unit)
            .collect();
        for u in deployers {
            units[u] = true;
        }
        Reach {
            changed,
            units,
            files,
        }
    }

    /// Whether the finding is the change's. Asked before findings that many objects share are
    /// merged, while each still names its own object.
    pub fn covers(&self, f: &Finding, sources: &SourceDb) -> bool {
        let path = |file: FileId| normalize(&sources.get(file).path);
        let changed = |file: FileId| {
            let p = path(file);
            self.changed.iter().any(|c| p.starts_with(c))
        };
        changed(f.primary.span.file)
            || f.secondary.iter().any(|l| changed(l.span.file))
            || f.unit.is_some_and(|u| self.units[u])
            || (f.unit.is_none() && self.files.contains(&path(f.primary.span.file)))
    }
}
