use super::gojq::{self, JqError};
use super::{path_items, Origin};
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "ignore-differences-invalid-jq",
    category: IgnoreDifferences,
    severity: Error,
    fix: None,
    summary: "A jqPathExpressions entry Argo CD's jq (gojq) cannot parse or compile: the comparison it belongs to fails",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    for item in path_items(cx, obj, "jqPathExpressions") {
        let Some(err) = gojq::check(&item.text) else {
            continue;
        };
        let (what, label) = match &err {
            JqError::Syntax { expected, at } => {
                let place = if *at < item.text.len() {
                    format!(" at column {} (`{}`)", at + 1, excerpt(&item.text[*at..]))
                } else {
                    " at its end".to_string()
                };
                (
                    format!("does not parse in gojq, Argo CD's jq (expected {expected}{place})"),
                    "does not parse",
                )
            }
            JqError::Compile(m) => (
                format!("does not compile in gojq, Argo CD's jq ({m})"),
                "does not compile",
            ),
        };
        let effect = match item.origin {
            Origin::Application => "Argo CD cannot build the application's diff normalizer, so its comparison fails with a ComparisonError, and a ComparisonError blocks every sync of the application",
            Origin::ApplicationSet => "the ApplicationSet controller cannot normalize the Applications it generates, so it fails to update them",
            Origin::SystemIgnoreDifferences => "every application of this Argo CD instance builds its diff normalizer with this expression, whatever kinds it deploys: all their comparisons fail with a ComparisonError, which blocks their syncs",
            Origin::SystemIgnoreResourceUpdates => "the controller cannot hash any resource to skip its updates (\"Failed to generate manifest hash\"), so ignoreResourceUpdates stops working for every resource",
        };
        out.report(
            item.span,
            format!("`{}` {what}: {effect}", item.text),
        )
        .label(label)
        .help("fix the expression (gojq accepts what jq 1.7 does, without `input`, `debug` or modules); use `jsonPointers` for a plain path such as `/spec/replicas`");
    }
}

fn excerpt(rest: &str) -> String {
    let mut s: String = rest.chars().take(12).collect();
    if s.len() < rest.len() {
        s.push('…');
    }
    s
}
