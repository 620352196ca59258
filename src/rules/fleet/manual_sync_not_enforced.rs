use super::{app_name, policy_anchor};
use crate::fix::{Fix, NewValue};
use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink, Version};
use crate::yaml::Node;

rule! {
    id: "manual-sync-not-enforced",
    category: Fleet,
    severity: Info,
    fix: Unsafe,
    summary: "A child turns auto-sync off by omission, which its self-healing parent does not enforce",
    check: Check::Graph(check),
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut seen = foldhash::HashSet::default();
    for a in 0..g.apps.len() {
        let Some(parent) = app(cx, g.app_obj(a)) else {
            continue;
        };
        if !parent.auto_sync(cx).is_yes() || !parent.flag("selfHeal").is_yes() {
            continue;
        }
        for u in g.children(a) {
            let obj = &g.units[u].obj;
            if !obj.is_argocd("Application") || !seen.insert(u) {
                continue;
            }
            let Some(child) = app(cx, obj) else { continue };
            let omitted = match child.sync_policy().and_then(|p| p.get("automated")) {
                None => true,
                Some(n) => n.is_null(),
            };
            if !omitted {
                continue;
            }
            let span = child
                .automated_key()
                .unwrap_or_else(|| policy_anchor(&obj.root));
            let help = if cx.version.is_some_and(|v| v < Version::new(3, 1)) {
                "Argo CD before 3.1 has no way to enforce manual sync from the parent; a deny sync window on the child is the enforceable pause"
            } else {
                "write `automated: {enabled: false}` (Argo CD 3.1 or later) so the parent enforces manual sync"
            };
            let f = out.report(
                span,
                format!(
                    "{} leaves auto-sync off by omitting `automated`; its parent, Application {}, does not enforce that, so anyone can turn auto-sync on in the cluster and it stays on",
                    obj.display(),
                    app_name(g, a)
                ),
            );
            f.on(u)
                .label("auto-sync off by omission")
                .help(help)
                .fix(enforce_manual(cx, &obj.root));
            f.applications = vec![app_name(g, a)];
        }
    }
}

/// Writes `automated: {enabled: false}` into the child. Only for a known 3.1 or later: an
/// older API server drops `enabled` and the empty `automated` turns auto-sync on.
fn enforce_manual(cx: &Cx, root: &Node) -> Option<Fix> {
    if cx.version.is_none_or(|v| v < Version::new(3, 1)) {
        return None;
    }
    let ed = cx.editor();
    let spec = root.get("spec")?;
    const OFF: &str = "{enabled: false}";
    let edit = match spec.get("syncPolicy") {
        None => ed.insert_entry(
            spec,
            "syncPolicy",
            NewValue::Raw(&format!("{{automated: {OFF}}}")),
        ),
        Some(p) if p.is_null() => ed.replace_raw(p, &format!("{{automated: {OFF}}}")),
        Some(p) => match p.get("automated") {
            None => ed.insert_entry(p, "automated", NewValue::Raw(OFF)),
            Some(a) if a.is_null() => ed.replace_raw(a, OFF),
            Some(_) => None,
        },
    };
    Fix::unsafe_("write `automated: {enabled: false}`", edit)
}
