use crate::kinds::is_glob;
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};

rule! {
    id: "ignore-differences-wildcard",
    category: IgnoreDifferences,
    severity: Warning,
    summary: "An ignoreDifferences entry that matches every group or kind, or ignores a whole object",
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
        for key in ["group", "kind"] {
            let Some(node) = entry.get(key) else { continue };
            let Some(v) = node.as_str() else { continue };
            if is_glob(v) && !typing::is_template(v) {
                out.report(node.span, format!("`{key}: {v}` is a glob: these ignored fields are hidden on every matching {}", if key == "group" { "API group" } else { "kind" }))
                    .label("matches more than intended")
                    .help(format!("name the exact {key} (for example `group: apps` with `kind: Deployment`), and narrow with `name` where possible"));
            }
        }
        report_whole(
            out,
            entry.get("jsonPointers"),
            &["/", ""],
            "jsonPointer `/` ignores the whole object",
        );
        report_whole(
            out,
            entry.get("jqPathExpressions"),
            &["."],
            "jq expression `.` ignores the whole object",
        );
    }
}

fn report_whole(out: &mut Sink, list: Option<&Node>, whole: &[&str], message: &str) {
    for p in list.map(Node::items).unwrap_or(&[]) {
        if p.as_str().is_some_and(|s| whole.contains(&s.trim())) {
            out.report(
                p.span,
                format!("{message}: Argo CD stops seeing any drift on it"),
            )
            .label("ignores everything")
            .help("list the specific fields another controller owns, such as `/spec/replicas`");
        }
    }
}
