use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "external-secret-never-refreshes",
    category: Secrets,
    severity: Warning,
    fix: None,
    summary: "An ExternalSecret with refreshInterval 0 under periodic refresh: fetched once, never rotated",
    check: Check::Object(check),
}

/// `0`, `0s`, `0m0s`, `0h0m0s`: a Go duration of zero.
fn is_zero_duration(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty()
        && v.chars().all(|c| matches!(c, '0' | 'h' | 'm' | 's' | '.'))
        && v.starts_with('0')
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if !(obj.group() == "external-secrets.io" && obj.kind == "ExternalSecret") {
        return;
    }
    let Some(spec) = obj.spec() else { return };
    let Some(interval) = spec.get("refreshInterval") else {
        return;
    };
    if !interval.as_str().is_some_and(is_zero_duration) {
        return;
    }
    if spec
        .str_at("refreshPolicy")
        .is_some_and(|p| p != "Periodic")
    {
        return;
    }
    out.report(interval.span, "refreshInterval 0 fetches the secret once and never again: a rotated secret never reaches the cluster")
        .label("never refreshes")
        .help("set an interval such as `refreshInterval: 1h`, or say so explicitly with `refreshPolicy: CreatedOnce`");
}
