use super::deployment::{Deployments, Home};
use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::project::known;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Span;
use foldhash::HashSet;
use std::collections::BTreeMap;

rule! {
    id: "duplicate-application-name",
    category: Fleet,
    severity: Error,
    fix: None,
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

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let deployments = Deployments::collect(cx, g);
    let mut groups: BTreeMap<(&Home, &str), Defs> = BTreeMap::new();
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
        let def = match g.apps[a].generated_by {
            Some(_) => Def::Generated(unit),
            None => Def::Written(name_node.span),
        };
        for home in deployments.homes(a) {
            // Applied by hand without a namespace: each `kubectl apply` may point elsewhere,
            // so its identity is not known.
            if home.namespace.is_none() {
                continue;
            }
            groups
                .entry((home, name))
                .or_default()
                .entry(def)
                .or_insert((unit, name_node.span));
        }
    }
    let mut seen = HashSet::default();
    for ((home, name), defs) in groups {
        if defs.len() < 2 {
            continue;
        }
        let spans: Vec<(usize, Span)> = defs.values().copied().collect();
        let distinct: HashSet<Span> = spans.iter().map(|&(_, s)| s).collect();
        let ns_text = match home.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => format!("namespace `{ns}`"),
            _ => "the same namespace".to_string(),
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
                Some(_) => format!("Application `{name}` is defined {} times in {ns_text} of one Argo CD: they are one object, the last one applied replaces the others, whose settings are silently lost", distinct.len()),
                None => format!("Application `{name}` is generated {} times in {ns_text} of one Argo CD: the ApplicationSet creates only the first and reports the others as errors (`contains applications with duplicate name`)", spans.len()),
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
