use crate::model::Object;
use crate::rules::app::all_uses;
use crate::rules::sync_options::Level;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "risky-sync-option",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "Replace=true, PrunePropagationPolicy=orphan or Validate=false for a whole application",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let uses = all_uses(cx, obj);
    for u in uses {
        let why = match (u.text, u.level) {
            ("Replace=true", Level::App) => "every resource of the application is written whole with kubectl replace (or create) instead of applied: what other controllers and webhooks set on the live objects is wiped at each sync",
            ("PrunePropagationPolicy=orphan", Level::App) => "pruned objects leave their dependents behind: ReplicaSets and Pods of a pruned Deployment keep running",
            ("Validate=false", Level::App) => "schema validation is off for every resource, so typos reach the cluster or are dropped silently",
            _ => continue,
        };
        out.report(u.span, format!("`{}`: {why}", u.text))
            .label("risky option")
            .help("scope it to the few resources that need it with the argocd.argoproj.io/sync-options annotation, or remove it");
    }
}
