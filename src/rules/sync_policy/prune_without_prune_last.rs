use crate::fix::Fix;
use crate::model::Object;
use crate::rules::app::{app, Tri};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "prune-without-prune-last",
    category: SyncPolicy,
    severity: Info,
    fix: Unsafe,
    summary: "Pruning app without PruneLast=true: old objects are deleted before new ones are healthy",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if app.partial || !app.auto_sync(cx).is_yes() || !app.flag("prune").is_yes() {
        return;
    }
    if app.has_option("PruneLast=true") != Tri::No {
        return;
    }
    let Some(prune) = app.automated().and_then(|a| a.entry("prune")) else {
        return;
    };
    out.report(
        app.options_anchor(),
        format!("{} prunes without PruneLast=true: deletions run in the same wave as the changes that replace them", app.kind_name()),
    )
    .label("PruneLast=true is missing here")
    .also(prune.key.span, "pruning is on")
    .help("add `PruneLast=true` to spec.syncPolicy.syncOptions so that pruning runs after every other wave is healthy")
    .fix(Fix::unsafe_(
        "add `PruneLast=true` to syncOptions",
        app.add_option(cx, "PruneLast=true"),
    ));
}
