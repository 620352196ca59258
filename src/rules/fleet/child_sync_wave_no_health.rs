use super::app_name;
use crate::model::Object;
use crate::render::Graph;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{Node, Span};

rule! {
    id: "child-sync-wave-no-health",
    category: Fleet,
    severity: Warning,
    fix: None,
    summary: "Sync waves across child Applications, but the repository's argocd-cm has no health check for Application: later waves do not wait for a child to be healthy",
    check: Check::Graph(check),
}

const WAVE: &str = "argocd.argoproj.io/sync-wave";
const KEY: &str = "resource.customizations.health.argoproj.io_Application";

/// Whether one argocd-cm's `data` gives `argoproj.io/Application` a health check: the key
/// itself, a wildcard key that may match it (`util/lua/lua.go`, getWildcardHealthOverrideLua),
/// or the older single `resource.customizations` key naming it.
fn defines_health(data: &Node) -> bool {
    data.entries().iter().any(|e| {
        let Some(key) = e.key.as_str() else {
            return true;
        };
        if let Some(target) = key.strip_prefix("resource.customizations.health.") {
            return target == "argoproj.io_Application"
                || target == "Application"
                || target == "all"
                || target.contains(['*', '?', '[', '{']);
        }
        key == "resource.customizations"
            && e.value.as_str().is_none_or(|v| {
                v.contains("health.lua")
                    && (v.contains("argoproj.io/Application") || v.contains('*'))
            })
    })
}

/// An object's sync wave as Argo CD reads it; a missing or unreadable annotation is wave 0.
fn wave(obj: &Object) -> (i64, Option<&Node>) {
    match obj.annotation(WAVE) {
        Some(n) => (
            n.as_str().and_then(|t| t.parse().ok()).unwrap_or(0),
            Some(n),
        ),
        None => (0, None),
    }
}

fn is_hook(obj: &Object) -> bool {
    obj.annotation("argocd.argoproj.io/hook").is_some() || obj.annotation("helm.sh/hook").is_some()
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let cms: Vec<&Object> = g
        .units
        .iter()
        .map(|u| &*u.obj)
        .filter(|o| o.is("", "ConfigMap") && o.name.as_deref() == Some("argocd-cm"))
        .collect();
    // Without an argocd-cm in the repository, its health checks are unknown.
    let Some(cm) = cms.first() else { return };
    if cms
        .iter()
        .any(|o| o.root.get("data").is_some_and(defines_health))
    {
        return;
    }
    // The setting may come from elsewhere: Helm values of the argo-cd chart, a patch.
    if cx.sources.files().iter().any(|f| f.text.contains(KEY)) {
        return;
    }
    let cm_span: Span = cm
        .root
        .entry("data")
        .or_else(|| cm.root.entry("metadata"))
        .map_or(cm.root.span, |e| e.key.span);
    for a in 0..g.apps.len() {
        let me = g.apps[a].unit;
        let rendered: Vec<usize> = g.apps[a]
            .rendered
            .iter()
            .copied()
            .filter(|&u| u != me && !is_hook(&g.units[u].obj))
            .collect();
        let children: Vec<usize> = g
            .children(a)
            .filter(|&u| g.units[u].obj.is_argocd("Application") && !is_hook(&g.units[u].obj))
            .collect();
        let Some(first) = children
            .iter()
            .copied()
            .min_by_key(|&u| wave(&g.units[u].obj).0)
        else {
            continue;
        };
        let (low, low_node) = wave(&g.units[first].obj);
        let later: Vec<usize> = rendered
            .iter()
            .copied()
            .filter(|&u| wave(&g.units[u].obj).0 > low)
            .collect();
        if later.is_empty() {
            continue;
        }
        // Where the order is written: the early child's annotation, else the first
        // annotation of the lowest later wave.
        let next = later
            .iter()
            .copied()
            .filter(|&u| wave(&g.units[u].obj).1.is_some())
            .min_by_key(|&u| wave(&g.units[u].obj).0);
        let (unit, node) = match (low_node, next) {
            (Some(n), _) => (first, n),
            (None, Some(u)) => match wave(&g.units[u].obj).1 {
                Some(n) => (u, n),
                None => continue,
            },
            (None, None) => continue,
        };
        let child = &g.units[first].obj;
        let obj = &g.units[unit].obj;
        let f = out.report(
            node.span,
            format!(
                "{}, in sync wave {low}, comes before {} of Application {} in {}, but argocd-cm defines no health check for argoproj.io/Application: the sync moves on as soon as the child Application is applied, without waiting for it to be synced or healthy",
                child.display(),
                crate::text::plural(later.len(), "object", "objects"),
                app_name(g, a),
                if later.len() == 1 { "a later wave" } else { "later waves" },
            ),
        );
        f.about(unit, obj)
            .label("this wave does not wait for a child Application's health")
            .also(cm_span, "no `resource.customizations.health.argoproj.io_Application` here")
            .help(format!(
                "add the `{KEY}` health check from Argo CD's health documentation to argocd-cm, so that a wave waits until the child Applications before it are Healthy"
            ));
        f.applications = vec![app_name(g, a)];
    }
}
