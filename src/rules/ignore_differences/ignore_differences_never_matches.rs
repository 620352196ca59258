use crate::fix::{Fix, NewValue};
use crate::kinds::{glob_match, groups_of, is_glob};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "ignore-differences-never-matches",
    category: IgnoreDifferences,
    severity: Error,
    summary: "An ignoreDifferences entry that can never match (wrong or missing group, nothing to ignore)",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    for entry in app.ignore_differences() {
        if !entry.is_map() {
            continue;
        }
        let kind_node = entry.get("kind");
        let kind = kind_node.and_then(|k| k.as_str()).unwrap_or("");
        let group_node = entry.get("group").filter(|g| !g.is_null());
        let group = group_node.and_then(|g| g.as_str()).unwrap_or("");
        let templated = typing::is_template(kind) || typing::is_template(group);
        if let (Some(kind_node), Some(groups), false) =
            (kind_node, groups_of(kind), templated || is_glob(kind))
        {
            let matches = groups.iter().any(|g| glob_match(group, g));
            if !matches {
                let want = groups
                    .iter()
                    .map(|g| {
                        if g.is_empty() {
                            "\"\" (core)".to_string()
                        } else {
                            format!("`{g}`")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" or ");
                let (span, message) = match group_node {
                    Some(g) if !group.is_empty() => (g.span, format!("{kind} is not in group `{group}`: this entry never matches, so nothing is ignored")),
                    _ => (kind_node.span, format!("without `group`, the entry matches only core-group kinds; {kind} is in {want}, so nothing is ignored")),
                };
                let fix = match groups {
                    [only] if !only.is_empty() => {
                        let ed = cx.editor();
                        let edit = match entry.get("group") {
                            Some(g) => ed.replace_scalar(g, only),
                            None => ed.insert_entry(entry, "group", NewValue::Scalar(only)),
                        };
                        Fix::safe(format!("set `group: {only}`"), edit)
                    }
                    _ => None,
                };
                out.report(span, message)
                    .label("never matches")
                    .help(format!("set `group: {}`", groups[0]))
                    .fix(fix);
            }
        }
        let has = |k: &str| entry.get(k).is_some_and(|n| !n.items().is_empty());
        if !has("jsonPointers") && !has("jqPathExpressions") && !has("managedFieldsManagers") {
            let span = kind_node.map_or(entry.span, |k| k.span);
            out.report(span, "this entry names no jsonPointers, jqPathExpressions or managedFieldsManagers, so it ignores nothing")
                .label("nothing to ignore")
                .help("add the fields to ignore, e.g. `jsonPointers: [/spec/replicas]`, or remove the entry");
        }
    }
}
