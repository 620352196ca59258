use super::app_name;
use crate::kinds::is_cluster_scoped;
use crate::render::Graph;
use crate::rules::project::{cluster_scoped_crds, known, Cluster, ClusterRegistry, Repos};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Span;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

rule! {
    id: "shared-resource",
    category: Fleet,
    severity: Error,
    summary: "Two Applications render the same object into the same cluster: they fight over it on every sync",
    check: Check::Graph(check),
}

/// An object as the cluster knows it: repository, cluster, group, kind, namespace, name.
type Identity = (PathBuf, String, String, String, String, String);

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut repos = Repos::new(cx.sources);
    let registry = ClusterRegistry::collect(g);
    let crds = cluster_scoped_crds(g);
    let mut owners: BTreeMap<Identity, Vec<(usize, usize)>> = BTreeMap::new();
    for a in 0..g.apps.len() {
        let obj = g.app_obj(a);
        let Some(dest) = obj.root.path(&["spec", "destination"]) else {
            continue;
        };
        let Some(cluster) = Cluster::of_destination(dest, &registry) else {
            continue;
        };
        let dest_ns = match dest.get("namespace") {
            Some(n) if !n.is_null() => match known(Some(n)) {
                Some(ns) => ns,
                None => continue,
            },
            _ => "",
        };
        let repo = repos.of(obj.file);
        let me = g.apps[a].unit;
        for &u in &g.apps[a].rendered {
            let o = &g.units[u].obj;
            if u == me {
                continue;
            }
            let Some(name) = known(o.root.path(&["metadata", "name"])) else {
                continue;
            };
            let group = o.group().to_string();
            let cluster_scoped =
                is_cluster_scoped(&o.kind) || crds.contains(&(group.clone(), o.kind.clone()));
            let ns = if cluster_scoped {
                String::new()
            } else {
                match o.root.path(&["metadata", "namespace"]) {
                    Some(n) => match known(Some(n)) {
                        Some(ns) => ns.to_string(),
                        None => continue,
                    },
                    None => dest_ns.to_string(),
                }
            };
            owners
                .entry((
                    repo.clone(),
                    cluster.key(),
                    group,
                    o.kind.clone(),
                    ns,
                    name.to_string(),
                ))
                .or_default()
                .push((a, u));
        }
    }
    let mut seen = HashSet::new();
    for ((_, _, _, _, ns, _), renders) in &owners {
        let place = if ns.is_empty() {
            "cluster".to_string()
        } else {
            format!("cluster and namespace (`{ns}`)")
        };
        let apps: BTreeSet<usize> = renders.iter().map(|&(a, _)| a).collect();
        if apps.len() < 2 {
            continue;
        }
        let names: BTreeSet<String> = apps.iter().map(|&a| app_name(g, a)).collect();
        // Applications of one name are one Application applied twice (to two Argo CD
        // instances, or a duplicate that duplicate-application-name reports).
        if names.len() < 2 {
            continue;
        }
        let names: Vec<String> = names.into_iter().collect();
        let listed = match names.as_slice() {
            [a, b] => format!("`{a}` and `{b}`"),
            _ => names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        for &(_, u) in renders {
            let o = &g.units[u].obj;
            let span: Span = o
                .root
                .path(&["metadata", "name"])
                .map_or(o.root.span, |n| n.span);
            if !seen.insert(span) {
                continue;
            }
            let f = out.report(
                span,
                format!(
                    "{} is deployed by {} Applications ({listed}) to the same {place}: each sync takes it over from the other, Argo CD reports SharedResourceWarning, and pruning or deleting one app removes it from under the other",
                    o.display(),
                    names.len()
                ),
            );
            f.on(u)
                .label("rendered by more than one Application")
                .help("keep the object in one Application only, and set `FailOnSharedResource=true` in the syncOptions so a second owner fails its sync instead of taking the object over");
            for &a in &apps {
                if let Some(src) = g.apps[a].sources.first() {
                    f.also(
                        src.span,
                        format!("rendered by Application {}", app_name(g, a)),
                    );
                }
            }
            f.applications = names.clone();
        }
    }
}
