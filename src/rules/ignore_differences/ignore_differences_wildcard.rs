use crate::glob::is_glob;
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "ignore-differences-wildcard",
    category: IgnoreDifferences,
    severity: Warning,
    fix: None,
    summary: "An ignoreDifferences entry that matches every kind, or a jq `.` that breaks the normalization of the objects it matches",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    for entry in app.ignore_differences() {
        let has = |k: &str| entry.get(k).is_some_and(|n| !n.items().is_empty());
        // An entry narrowed only by field managers hides only what those managers own.
        if !has("jsonPointers") && !has("jqPathExpressions") {
            continue;
        }
        // A glob group with a named kind is the documented way to catch a kind served from
        // several groups or versions (the app-of-apps recipe uses `group: "*"` with
        // `kind: Application`); a glob kind reaches objects nobody meant. A `name` narrows
        // the entry to objects of that name.
        let named = entry.str_at("name").is_some_and(|n| !n.is_empty());
        if let (Some(node), false) = (entry.get("kind"), named) {
            if let Some(kind) = node
                .as_str()
                .filter(|k| is_glob(k) && !typing::is_template(k))
            {
                let group = entry.str_at("group").unwrap_or("");
                let scope = if group.is_empty() {
                    "of the core API group".to_string()
                } else if is_glob(group) {
                    "of every API group it matches".to_string()
                } else {
                    format!("of the `{group}` API group")
                };
                out.report(node.span, format!("`kind: {kind}` is a glob: these fields are ignored on every kind {scope}, so drift on them goes unseen wherever they occur"))
                    .label("matches every kind")
                    .help("name the exact kind (for example `group: apps` with `kind: Deployment`), or narrow the entry with `name`");
            }
        }
        for p in entry
            .get("jqPathExpressions")
            .map(|n| n.items())
            .unwrap_or(&[])
        {
            if p.as_str().is_some_and(|s| s.trim() == ".") {
                out.report(p.span, "jq `.` does not ignore the whole object: `del(.)` returns null and Argo CD's normalizer fails to decode it (\"Object 'Kind' is missing\"), leaving the object empty; with `RespectIgnoreDifferences=true` every sync fails, with `ServerSideApply=true` the comparison fails, and otherwise the error is only logged")
                    .label("breaks normalization")
                    .help("list the fields another controller owns, such as `.spec.replicas`, or use `managedFieldsManagers`");
            }
        }
    }
}
