use super::{app_name, policy_anchor};
use crate::render::Graph;
use crate::rules::app::{app, Tri};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "parent-sync-disabled",
    category: Fleet,
    severity: Warning,
    fix: None,
    summary: "An app-of-apps parent without auto-sync: new, changed and removed children stop flowing",
    check: Check::Graph(check),
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    for a in 0..g.apps.len() {
        let Some(children) = g.children(a).collect::<Vec<_>>().first().copied() else {
            continue;
        };
        let obj = g.app_obj(a);
        let Some(view) = app(cx, obj) else { continue };
        if view.auto_sync(cx) != Tri::No {
            continue;
        }
        let enabled_false = view
            .automated()
            .and_then(|au| au.entry("enabled"))
            .filter(|e| e.value.as_scalar().and_then(crate::yaml::typing::as_bool) == Some(false));
        let span = enabled_false
            .map(|e| e.value.span)
            .or_else(|| view.automated_key())
            .unwrap_or_else(|| policy_anchor(&obj.root));
        let child = g.units[children].obj.display();
        let which = match g.children(a).count() {
            1 => format!("a child, {child},"),
            n => format!("{n} children, among them {child},"),
        };
        let f = out.report(
            span,
            format!(
                "Application {} renders {which} but does not auto-sync: new children, spec changes and removals wait until someone syncs it by hand",
                app_name(g, a)
            ),
        );
        f.on(g.apps[a].unit)
            .label("auto-sync is off for this parent")
            .help("turn on `automated` (with `prune: true`) on the parent; pause a single child with a sync window or `automated.enabled: false` on the child instead");
        f.applications = vec![app_name(g, a)];
    }
}
