use crate::fix::{Fix, NewValue};
use crate::glob::is_glob;
use crate::kinds::{groups_of, is_version, DEAD_GROUPS};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};

rule! {
    id: "ignore-differences-never-matches",
    category: IgnoreDifferences,
    severity: Error,
    fix: Safe,
    summary: "An ignoreDifferences entry that can never match (missing group, an apiVersion or a retired group as group, nothing to ignore)",
    check: Check::Object(check),
}

/// Argo CD matches an entry's `group` and `kind` as globs against the group and kind of each
/// object it compares (`util/argo/normalizers/diff_normalizer.go`). A written group is judged
/// only when no object can have it: custom resources reuse kind names (Knative's `Service`,
/// KubeVela's `Application`), so a group that differs from the built-in one is not wrong.
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
        if !templated {
            match group_node {
                Some(g) if !group.is_empty() => check_group(cx, out, g, group, kind),
                _ => check_missing_group(cx, out, entry, kind_node, kind),
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

/// A written, non-empty group: wrong only when no API group can be spelled that way.
fn check_group(cx: &Cx, out: &mut Sink, node: &Node, group: &str, kind: &str) {
    if let Some((head, _)) = group.split_once('/') {
        // An apiVersion (`apps/v1`): API group names never contain `/`.
        let finding = out
            .report(node.span, format!("`{group}` is an apiVersion, not an API group: Argo CD compares `group` with the object's group, which never contains `/`, so this entry never matches"))
            .label("apiVersion, not group");
        if head.is_empty() || is_glob(head) || is_version(head) {
            finding.help("write only the API group, without the version: `apps` for `apps/v1`, `\"\"` for the core `v1`");
        } else {
            finding
                .help(format!("write `group: {head}`"))
                .fix(Fix::safe(
                    format!("write `group: {head}`"),
                    cx.editor().replace_scalar(node, head),
                ));
        }
        return;
    }
    if is_version(group) {
        out.report(node.span, format!("`{group}` is an API version, not an API group, so this entry never matches"))
            .label("version, not group")
            .help("write the group without the version; the core group (apiVersion `v1`) is written `group: \"\"` or left out");
        return;
    }
    if let Some((_, why)) = DEAD_GROUPS.iter().find(|(g, _)| *g == group) {
        let built_in = groups_of(kind)
            .and_then(|g| g.first())
            .filter(|g| !g.is_empty());
        let finding = out
            .report(node.span, format!("no supported Kubernetes release serves the `{group}` API group ({why}; Argo CD 3.5 is tested on 1.33 to 1.36), so this entry never matches"))
            .label("group no longer served");
        match built_in {
            Some(g) => {
                finding
                    .help(format!("write `group: {g}`"))
                    .fix(Fix::unsafe_(
                        format!("write `group: {g}`"),
                        cx.editor().replace_scalar(node, g),
                    ));
            }
            None => {
                finding.help("write the group the kind is served from today");
            }
        }
    }
}

/// A missing or empty group: the entry matches the core group only.
fn check_missing_group(
    cx: &Cx,
    out: &mut Sink,
    entry: &Node,
    kind_node: Option<&Node>,
    kind: &str,
) {
    let Some(kind_node) = kind_node else { return };
    if is_glob(kind) {
        return;
    }
    let Some(groups) = groups_of(kind) else {
        return;
    };
    if groups.contains(&"") {
        return;
    }
    let want = groups
        .iter()
        .map(|g| format!("`{g}`"))
        .collect::<Vec<_>>()
        .join(" or ");
    let written = entry.get("group");
    let span = written
        .filter(|g| !g.is_null())
        .map_or(kind_node.span, |g| g.span);
    let edit = |g: &str| {
        let ed = cx.editor();
        match written {
            // `group: ""`, `group:` and `group: ~` all mean the core group.
            Some(node) => ed.replace_scalar(node, g),
            None => ed.insert_entry(entry, "group", NewValue::Scalar(g)),
        }
    };
    let first = groups[0];
    let fix = match groups {
        // One answer: spelling it out is what the entry already says.
        [only] => Fix::safe(format!("set `group: {only}`"), edit(only)),
        // A kind name custom resources reuse: the built-in group is the likely one, not the
        // only one.
        _ => Fix::unsafe_(format!("set `group: {first}`"), edit(first)),
    };
    out.report(span, format!("without a `group`, the entry matches only the core API group, and no core kind is named {kind} ({kind} is in {want}), so nothing is ignored"))
        .label("never matches")
        .help(format!("set `group: {first}`"))
        .fix(fix);
}
