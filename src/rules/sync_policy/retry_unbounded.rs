use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "retry-unbounded",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "retry.limit below 0 retries a failing sync forever",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    let Some(limit) = app.sync_policy().and_then(|p| p.path(&["retry", "limit"])) else {
        return;
    };
    let negative = limit
        .as_str()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .is_some_and(|n| n < 0);
    if negative {
        out.report(limit.span, "a negative retry limit retries a failing sync forever, hiding the failure and hammering the cluster")
            .label("unlimited retries")
            .help("set a bounded `limit` (for example 5) with a backoff");
    }
}
