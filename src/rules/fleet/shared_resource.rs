use super::app_name;
use crate::render::Graph;
use crate::rules::project::{known, Cluster, ClusterRegistry, Repos, Scopes};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Span;
use foldhash::{HashMap, HashSet};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

rule! {
    id: "shared-resource",
    category: Fleet,
    severity: Error,
    summary: "Two Applications render the same object into the same cluster: they fight over it on every sync",
    check: Check::Graph(check),
}

/// An object as the cluster knows it: repository, cluster, group, kind, namespace, name.
type Identity<'g> = (&'g Path, &'g str, &'g str, &'g str, &'g str, &'g str);

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut repos = Repos::new(cx.sources);
    let registry = ClusterRegistry::collect(g);
    let scopes = Scopes::collect(g);
    // Where each Application deploys: repository, cluster, destination namespace.
    let mut places: Vec<Option<(PathBuf, String, &str)>> = Vec::with_capacity(g.apps.len());
    for a in 0..g.apps.len() {
        let obj = g.app_obj(a);
        let place = obj.root.path(&["spec", "destination"]).and_then(|dest| {
            let cluster = Cluster::of_destination(dest, &registry)?;
            let dest_ns = match dest.get("namespace") {
                Some(n) if !n.is_null() => known(Some(n))?,
                _ => "",
            };
            Some((repos.of(obj.file), cluster.key(), dest_ns))
        });
        places.push(place);
    }
    // One entry per rendered object, nearly: sized once rather than rehashed as it grows.
    let rendered = g.apps.iter().map(|a| a.rendered.len()).sum();
    let mut owners: HashMap<Identity, Vec<(usize, usize)>> =
        HashMap::with_capacity_and_hasher(rendered, Default::default());
    for (a, place) in places.iter().enumerate() {
        let Some((repo, cluster, dest_ns)) = place else {
            continue;
        };
        let me = g.apps[a].unit;
        for &u in &g.apps[a].rendered {
            let o = &g.units[u].obj;
            if u == me {
                continue;
            }
            let Some(name) = known(o.root.path(&["metadata", "name"])) else {
                continue;
            };
            let ns = if scopes.cluster_scoped(o) {
                ""
            } else {
                match o.root.path(&["metadata", "namespace"]) {
                    Some(n) => match known(Some(n)) {
                        Some(ns) => ns,
                        None => continue,
                    },
                    None => dest_ns,
                }
            };
            owners
                .entry((repo, cluster, o.group(), &o.kind, ns, name))
                .or_default()
                .push((a, u));
        }
    }
    // Only objects with more than one owner matter; they are reported in identity order.
    let mut shared: Vec<(Identity, Vec<(usize, usize)>)> = owners
        .into_iter()
        .filter(|(_, renders)| renders.iter().any(|&(a, _)| a != renders[0].0))
        .collect();
    shared.sort_by(|x, y| x.0.cmp(&y.0));
    let mut seen = HashSet::default();
    for ((_, _, _, _, ns, _), renders) in &shared {
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
        let place = if ns.is_empty() {
            "cluster".to_string()
        } else {
            format!("cluster and namespace (`{ns}`)")
        };
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
