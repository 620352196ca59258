use crate::finding::Severity;
use crate::fix::Fix;
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink, Version};
use crate::yaml::typing::as_bool;

rule! {
    id: "automated-enabled-ignored",
    category: SyncPolicy,
    severity: Error,
    severities: "error (below 3.1) / warning (unknown or 3.1.x)",
    fix: Unsafe,
    summary: "automated.enabled: false does not turn auto-sync off before Argo CD 3.1 (and is unreliable in 3.1.x)",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    let Some(enabled) = app.automated().and_then(|a| a.get("enabled")) else {
        return;
    };
    if enabled.as_scalar().and_then(as_bool) != Some(false) {
        return;
    }
    let (severity, message) = match cx.version {
        Some(v) if v < Version::new(3, 1) => (
            Severity::Error,
            format!("Argo CD {v} does not know `automated.enabled`: the API server drops it, leaving `automated: {{}}`, and auto-sync stays ON"),
        ),
        Some(v) if v < Version::new(3, 2) => (
            Severity::Warning,
            format!("in Argo CD {v}, `enabled: false` can be lost (argoproj/argo-cd#24171, fixed in 3.2.0): auto-sync may stay on"),
        ),
        Some(_) => return,
        None => (
            Severity::Warning,
            "`automated.enabled: false` turns auto-sync off only on Argo CD 3.2+; before 3.1 the field is dropped and auto-sync stays ON".to_string(),
        ),
    };
    out.report(enabled.span, message)
        .severity(severity)
        .label("auto-sync is meant to be off here")
        .help("on Argo CD before 3.2, remove `automated` entirely to turn auto-sync off; otherwise pass --argocd-version 3.2 (or later) to confirm the field is honoured")
        .fix(remove_automated(cx, &app));
}

/// Removing `automated` is what turns auto-sync off on every version; offered where the
/// field is certainly dropped (before 3.1) or the version is not known.
fn remove_automated(cx: &Cx, app: &crate::rules::app::App) -> Option<Fix> {
    if cx.version.is_some_and(|v| v >= Version::new(3, 1)) {
        return None;
    }
    let policy = app.sync_policy()?;
    let index = policy
        .entries()
        .iter()
        .rposition(|e| e.key.as_str() == Some("automated"))?;
    Fix::unsafe_(
        "remove `automated` to turn auto-sync off",
        cx.editor().remove_entry(policy, index),
    )
}
