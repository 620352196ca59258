use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing::as_bool;
use crate::yaml::{Node, Span};

rule! {
    id: "sync-window-no-break-glass",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "An AppProject deny sync window over every application without manualSync: nobody can sync anything while it is active",
    check: Check::Object(check),
}

const SELECTORS: [&str; 3] = ["applications", "namespaces", "clusters"];

/// The `*` item of a selector list, when it has one, and what it matches.
fn star(window: &Node, key: &str) -> Option<(Span, &'static str)> {
    let what = match key {
        "applications" => "matches every application",
        "namespaces" => "matches every namespace",
        _ => "matches every cluster",
    };
    window
        .get(key)?
        .items()
        .iter()
        .find(|i| i.as_str() == Some("*"))
        .map(|i| (i.span, what))
}

/// The `*` that makes the window match every application. Selectors are OR-ed unless
/// `andOperator: true`, in which case every selector the window sets must be `*`.
fn matches_everything(window: &Node) -> Option<(Span, &'static str)> {
    let and = window
        .get("andOperator")
        .and_then(Node::as_scalar)
        .and_then(as_bool)
        == Some(true);
    if !and {
        return SELECTORS.iter().find_map(|k| star(window, k));
    }
    let set: Vec<&str> = SELECTORS
        .iter()
        .copied()
        .filter(|k| window.get(k).is_some_and(|n| !n.items().is_empty()))
        .collect();
    if set.is_empty() || set.iter().any(|k| star(window, k).is_none()) {
        return None;
    }
    star(window, set[0])
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("AppProject") {
        return;
    }
    let Some(spec) = obj.spec() else { return };
    for window in spec.get("syncWindows").map(|n| n.items()).unwrap_or(&[]) {
        let Some(kind_node) = window.get("kind") else {
            continue;
        };
        let Some(kind) = kind_node.as_str() else {
            continue;
        };
        // Other kinds, a misspelt one included, are `sync-window-invalid`'s.
        if kind != "deny" {
            continue;
        }
        let Some((star, what)) = matches_everything(window) else {
            continue;
        };
        let manual = window
            .get("manualSync")
            .and_then(Node::as_scalar)
            .and_then(as_bool);
        if manual == Some(true) {
            continue;
        }
        out.report(
            kind_node.span,
            "this deny window covers every application and blocks manual syncs too: while it is active nobody can sync anything, not even by hand during an incident",
        )
        .label("deny window without break-glass")
        .also(star, what)
        .help("set `manualSync: true` on the window so people can still sync by hand while automated syncs stay blocked, or narrow it to the applications that need it");
    }
}
