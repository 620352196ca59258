use crate::fix::{Fix, NewValue};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "retry-without-limit",
    category: SyncPolicy,
    severity: Warning,
    fix: Unsafe,
    summary: "A retry block without a limit turns off the 5 retries an automated sync gets by default",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if !app.auto_sync(cx).is_yes() {
        return;
    }
    // A templatePatch may add the limit.
    if app.template && obj.root.path(&["spec", "templatePatch"]).is_some() {
        return;
    }
    let Some(policy) = app.sync_policy() else {
        return;
    };
    let Some(entry) = policy.entry("retry") else {
        return;
    };
    let retry = &entry.value;
    // `retry:` with no value is no retry block at all: the default 5 retries apply.
    if !retry.is_map() {
        return;
    }
    let kind = app.kind_name();
    match retry.entry("limit") {
        None => {
            out.report(entry.key.span, format!("{kind} has a `retry` block without `limit`, which Argo CD reads as 0: a failed automated sync is not retried at all, while leaving `retry` out would retry it 5 times"))
                .label("no limit: no retries")
                .help("set `limit` (5 is what an automated sync gets without a retry block), or remove `retry`")
                .fix(Fix::unsafe_("add `limit: 5`", cx.editor().insert_entry(retry, "limit", NewValue::Raw("5"))));
        }
        Some(e) if e.value.is_null() => {
            out.report(e.key.span, format!("{kind} has `retry.limit` with no value, which Argo CD reads as 0: a failed automated sync is not retried at all, while leaving `retry` out would retry it 5 times"))
                .label("no limit: no retries")
                .help("set `limit` (5 is what an automated sync gets without a retry block), or remove `retry`");
        }
        Some(e) => {
            let Some(text) = e.value.as_str() else { return };
            if typing::is_template(text) || text.trim().parse::<i64>() != Ok(0) {
                return;
            }
            // `limit: 0` alone is an explicit "do not retry"; with a backoff or refresh beside
            // it, the block configures retries that never happen.
            let Some(other) = retry
                .entries()
                .iter()
                .find(|o| o.key.as_str().is_some_and(|k| k != "limit"))
            else {
                return;
            };
            let other_key = other.key.as_str().unwrap_or_default();
            out.report(e.value.span, format!("{kind} sets `retry.limit: 0`, so the `{other_key}` beside it never applies: a failed automated sync is not retried at all"))
                .label("0 retries")
                .also(other.key.span, "never used")
                .help("set a positive `limit` (5 is what an automated sync gets without a retry block), or remove the retry block's other settings if no retries is meant")
                .fix(Fix::unsafe_("set `limit: 5`", cx.editor().replace_raw(&e.value, "5")));
        }
    }
}
