use super::app_name;
use super::deployment::{Deployments, Home};
use crate::render::Graph;
use crate::rules::project::{known, Scopes};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Span;
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;

rule! {
    id: "shared-resource",
    category: Fleet,
    severity: Error,
    fix: None,
    summary: "Two Applications of one Argo CD deploy the same object to the same cluster: they take it over from each other",
    check: Check::Graph(check),
}

/// An object as one Argo CD knows it: the deployment, the cluster that receives it, and its
/// group, kind, namespace and name (gitops-engine's `ResourceKey`, without the version).
type Identity<'g> = (&'g Home, String, &'g str, &'g str, &'g str, &'g str);

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let deployments = Deployments::collect(cx, g);
    let scopes = Scopes::collect(g);
    // One entry per rendered object, nearly: sized once rather than rehashed as it grows.
    let rendered = g.apps.iter().map(|a| a.rendered.len()).sum();
    let mut owners: HashMap<Identity, Vec<(usize, usize)>> =
        HashMap::with_capacity_and_hasher(rendered, Default::default());
    for a in 0..g.apps.len() {
        let me = g.apps[a].unit;
        for home in deployments.homes(a) {
            let Some((cluster, dest_ns)) = deployments.target(a, home) else {
                continue;
            };
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
                    .entry((home, cluster.clone(), o.group(), &o.kind, ns, name))
                    .or_default()
                    .push((a, u));
            }
        }
    }
    // Within one deployment an Application is its name: two Applications of one name there
    // are one object (a duplicate that duplicate-application-name reports).
    let who = |a: usize| g.app_obj(a).name.clone().unwrap_or_else(|| format!("#{a}"));
    let mut shared: Vec<(Identity, Vec<(usize, usize)>)> = owners
        .into_iter()
        .filter(|(_, renders)| {
            let first = who(renders[0].0);
            renders.iter().any(|&(a, _)| who(a) != first)
        })
        .collect();
    shared.sort_by(|x, y| x.0.cmp(&y.0));
    // Each object is reported once, at its first copy, whatever the number of deployments
    // and files that hold it.
    let mut seen = HashSet::default();
    for ((_, _, _, _, ns, _), renders) in &shared {
        // One Application per name, the first met.
        let mut apps: BTreeMap<String, usize> = BTreeMap::new();
        for &(a, _) in renders {
            apps.entry(who(a)).or_insert(a);
        }
        let copies: BTreeMap<Span, usize> = renders
            .iter()
            .map(|&(_, u)| {
                let o = &g.units[u].obj;
                let span = o
                    .root
                    .path(&["metadata", "name"])
                    .map_or(o.root.span, |n| n.span);
                (span, u)
            })
            .collect();
        if copies.keys().any(|s| seen.contains(s)) {
            continue;
        }
        seen.extend(copies.keys().copied());
        let Some((&span, &u)) = copies.iter().next() else {
            continue;
        };
        let names: Vec<String> = apps.values().map(|&a| app_name(g, a)).collect();
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
        let o = &g.units[u].obj;
        let f = out.report(
            span,
            format!(
                "{} is deployed by {} Applications of one Argo CD ({listed}) to the same {place}: each sync marks it as its own, the other then reports it OutOfSync with a SharedResourceWarning and takes it back on its next sync, and deleting or pruning the one that synced it last removes it from under the other",
                o.display(),
                names.len()
            ),
        );
        f.on(u)
            .label("rendered by more than one Application")
            .help("keep the object in one Application only, and set `FailOnSharedResource=true` in the syncOptions so a second owner fails its sync instead of taking the object over");
        for &other in copies.keys().skip(1) {
            f.also(other, "the same object, another copy");
        }
        for (name, &a) in &apps {
            if let Some(src) = g.apps[a].sources.first() {
                f.also(src.span, format!("rendered by Application {name}"));
            }
        }
        f.applications = names;
    }
}
