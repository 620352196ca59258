use crate::fix::{Applicability, Fix};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "prune-disabled",
    category: SyncPolicy,
    severity: Info,
    fix: Unsafe,
    summary: "Self-healing app without prune: objects deleted from Git stay in the cluster",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if app.partial
        || !app.auto_sync(cx).is_yes()
        || !app.flag("selfHeal").is_yes()
        || !app.flag("prune").is_no()
    {
        return;
    }
    let Some(span) = app.flag_anchor("prune") else {
        return;
    };
    out.report(
        span,
        format!("{} self-heals but never prunes: objects removed from Git keep running, and a change that only needs pruning never syncs", app.kind_name()),
    )
    .label("prune is not true")
    .help("set `prune: true` under automated (protect individual objects with the `argocd.argoproj.io/sync-options: Prune=false` annotation)")
    .fix(app.set_flags(cx, &["prune"]).and_then(|edits| {
        Fix::new(Applicability::Unsafe, "set `prune: true` under automated", edits.into_iter().map(Some))
    }));
}
