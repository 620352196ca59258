use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::project::{known, Cluster, ClusterRegistry, Repos};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Span;
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::path::PathBuf;

rule! {
    id: "duplicate-application-name",
    category: Fleet,
    severity: Error,
    summary: "Two Applications with one name in one namespace: one silently replaces the other",
    check: Check::Graph(check),
}

/// One definition of an Application: a written name, or one generated copy (an
/// ApplicationSet that generates a name twice is a duplicate within one definition).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Def {
    Written(Span),
    Generated(usize),
}

/// Each definition of one name in one place, with its unit and name node.
type Defs = BTreeMap<Def, (usize, Span)>;

/// Where an object lands: the cluster that receives it and its namespace there.
type Place = (String, String);

struct Places<'g> {
    g: &'g Graph,
    registry: ClusterRegistry,
    /// The kustomization root that built a unit; objects applied by hand from different roots
    /// (or different files) are taken to go to different clusters.
    root_of: HashMap<usize, &'g PathBuf>,
}

impl Places<'_> {
    /// Every place `unit` lands, its own namespace first, else that of the Application that
    /// renders it. Empty when a destination is templated or the namespace is not known.
    fn of(&self, unit: usize, own_ns: Option<&str>) -> Vec<Place> {
        let g = self.g;
        let me = g.app_of_unit.get(&unit).copied();
        let parents: Vec<usize> = g.units[unit]
            .apps
            .iter()
            .copied()
            .filter(|&p| Some(p) != me)
            .collect();
        if parents.is_empty() {
            // Applied by hand without a namespace: it lands wherever the one applying it
            // points, which is not known.
            let Some(ns) = own_ns else {
                return Vec::new();
            };
            // Files applied by hand may go to different Argo CD instances (a folder per
            // cluster is common); only one file, or one kustomization root, is applied at once.
            let from = match self.root_of.get(&unit) {
                Some(root) => format!("built from {}", root.display()),
                None => format!("applied from file {}", g.units[unit].obj.file),
            };
            return vec![(from, ns.into())];
        }
        let mut out = Vec::new();
        for p in parents {
            let Some(dest) = g.app_obj(p).root.path(&["spec", "destination"]) else {
                continue;
            };
            let Some(cluster) = Cluster::of_destination(dest, &self.registry) else {
                continue;
            };
            let ns = match own_ns {
                Some(ns) => ns,
                None => match dest.get("namespace") {
                    Some(n) if !n.is_null() => match known(Some(n)) {
                        Some(ns) => ns,
                        None => continue,
                    },
                    _ => "",
                },
            };
            out.push((cluster.key(), ns.to_string()));
        }
        out
    }
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut repos = Repos::new(cx.sources);
    let places = Places {
        g,
        registry: ClusterRegistry::collect(g),
        root_of: g
            .roots
            .iter()
            .flat_map(|(dir, units)| units.iter().map(move |&u| (u, dir)))
            .collect(),
    };
    let mut groups: BTreeMap<(PathBuf, Place, String), Defs> = BTreeMap::new();
    for a in 0..g.apps.len() {
        let unit = g.apps[a].unit;
        let obj = &g.units[unit].obj;
        // A spec without any source is a patch to be merged into an Application, not one.
        if app(cx, obj).is_none_or(|v| v.partial) {
            continue;
        }
        let Some(name_node) = obj.root.path(&["metadata", "name"]) else {
            continue;
        };
        let Some(name) = known(Some(name_node)) else {
            continue;
        };
        let ns_of = |o: &crate::model::Object| {
            o.root
                .path(&["metadata", "namespace"])
                .map(|n| known(Some(n)).map(str::to_string))
        };
        // Generated Applications are created in their ApplicationSet's namespace.
        let (def, landing) = match g.apps[a].generated_by {
            Some(set) => match ns_of(&g.units[set].obj) {
                Some(None) => continue,
                ns => (
                    Def::Generated(unit),
                    places.of(set, ns.flatten().as_deref()),
                ),
            },
            None => match ns_of(obj) {
                Some(None) => continue,
                ns => (
                    Def::Written(name_node.span),
                    places.of(unit, ns.flatten().as_deref()),
                ),
            },
        };
        let repo = repos.of(obj.file);
        for place in landing {
            groups
                .entry((repo.clone(), place, name.to_string()))
                .or_default()
                .entry(def)
                .or_insert((unit, name_node.span));
        }
    }
    let mut seen = HashSet::default();
    for ((_, (_, ns), name), defs) in groups {
        if defs.len() < 2 {
            continue;
        }
        let spans: Vec<(usize, Span)> = defs.values().copied().collect();
        let distinct: HashSet<Span> = spans.iter().map(|&(_, s)| s).collect();
        let ns_text = if ns.is_empty() {
            "the same namespace".to_string()
        } else {
            format!("namespace `{ns}`")
        };
        for (i, &(unit, span)) in spans.iter().enumerate() {
            if !seen.insert(span) {
                continue;
            }
            let other = spans
                .iter()
                .enumerate()
                .find(|&(j, &(_, s))| j != i && s != span)
                .map(|(_, &(_, s))| s);
            let message = match other {
                Some(_) => format!("Application `{name}` is defined {} times for {ns_text} of one cluster: the last one applied replaces the others, whose settings are silently lost", distinct.len()),
                None => format!("Application `{name}` is generated {} times for {ns_text} of one cluster: only one of them exists, and which one is not defined", spans.len()),
            };
            let f = out.report(span, message);
            f.on(unit)
                .label("duplicate Application name")
                .help("give each Application a unique name (include the environment or cluster), or deploy them to different namespaces");
            if let Some(other) = other {
                f.also(other, "same name here");
            }
        }
    }
}
