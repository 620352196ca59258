use crate::fix::{Applicability, Fix};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "self-heal-disabled",
    category: SyncPolicy,
    severity: Warning,
    fix: Unsafe,
    summary: "Pruning auto-sync without selfHeal: live edits survive until the next commit",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if app.partial
        || !app.auto_sync(cx).is_yes()
        || !app.flag("prune").is_yes()
        || !app.flag("selfHeal").is_no()
    {
        return;
    }
    let Some(span) = app.flag_anchor("selfHeal") else {
        return;
    };
    out.report(
        span,
        format!("{} prunes but does not self-heal: a live change stays until the next commit is synced", app.kind_name()),
    )
    .label("selfHeal is not true")
    .help("set `selfHeal: true` under automated; for a deliberate live change use a break-glass path (a sync window or a paused app), not a permanently open door")
    .fix(app.set_flags(cx, &["selfHeal"]).and_then(|edits| {
        Fix::new(Applicability::Unsafe, "set `selfHeal: true` under automated", edits.into_iter().map(Some))
    }));
}
