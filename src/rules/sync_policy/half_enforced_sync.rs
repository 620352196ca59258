use crate::fix::{Applicability, Fix};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "half-enforced-sync",
    category: SyncPolicy,
    severity: Warning,
    fix: Unsafe,
    summary: "Auto-sync without selfHeal or prune: drift and deleted objects both survive",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if app.partial || !app.auto_sync(cx).is_yes() {
        return;
    }
    if !app.flag("selfHeal").is_no() || !app.flag("prune").is_no() {
        return;
    }
    let Some(span) = app.automated_key() else {
        return;
    };
    out.report(
        span,
        format!("{} auto-syncs new commits only: live drift is never corrected and objects removed from Git are never pruned", app.kind_name()),
    )
    .label("automated without selfHeal or prune")
    .help("set `selfHeal: true` and `prune: true` under automated (or turn auto-sync off explicitly with `enabled: false` on Argo CD 3.2+)")
    .fix(app.set_flags(cx, &["prune", "selfHeal"]).and_then(|edits| {
        Fix::new(Applicability::Unsafe, "set `prune: true` and `selfHeal: true` under automated", edits.into_iter().map(Some))
    }));
}
