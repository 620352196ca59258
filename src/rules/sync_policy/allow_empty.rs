use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "allow-empty",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "allowEmpty: true lets one bad commit prune every resource of the application",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    // Without prune an empty commit deletes nothing: allowEmpty only matters with it.
    if !app.flag("allowEmpty").is_yes() || !app.flag("prune").is_yes() {
        return;
    }
    let Some(e) = app.automated().and_then(|a| a.entry("allowEmpty")) else {
        return;
    };
    // A path that does not exist or a build that fails is a repo-server error, which syncs
    // nothing; only a render that succeeds with no manifests gets past the guard.
    out.report(e.value.span, "with `allowEmpty: true`, a commit after which the source renders no manifests at all (its files moved into a subfolder, a `directory.include` that stops matching, values that switch every template off) prunes every resource of the application")
        .label("empty syncs allowed")
        .help("remove `allowEmpty` (default false) unless this application is meant to be emptied by Git");
}
