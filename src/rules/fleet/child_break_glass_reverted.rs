use super::app_name;
use crate::fix::{Applicability, Edit, Fix, NewValue};
use crate::render::Graph;
use crate::rules::app::App;
use crate::rules::app::{app, covers};
use crate::rules::sync_policy::self_heal_ignores_not_respected;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Node;

rule! {
    id: "child-break-glass-reverted",
    category: Fleet,
    severity: Warning,
    fix: Unsafe,
    summary: "A self-healing parent (or an ApplicationSet) reverts a child's auto-sync switch within seconds",
    check: Check::Graph(check),
}

const POINTERS: [&str; 2] = ["/spec/syncPolicy", "/spec/syncPolicy/automated"];

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    for a in 0..g.apps.len() {
        let obj = g.app_obj(a);
        let Some(parent) = app(cx, obj) else { continue };
        if !parent.auto_sync(cx).is_yes() || !parent.flag("selfHeal").is_yes() {
            continue;
        }
        let syncing: Vec<usize> = g
            .children(a)
            .filter(|&u| {
                let o = &g.units[u].obj;
                o.is_argocd("Application") && app(cx, o).is_some_and(|c| c.auto_sync(cx).is_yes())
            })
            .collect();
        let Some(&first) = syncing.first() else {
            continue;
        };
        let ignored = parent.ignores("argoproj.io", "Application", None, &POINTERS);
        let protected = ignored && parent.has_option("RespectIgnoreDifferences=true").is_yes();
        if protected {
            continue;
        }
        // With the ignore but without the option, nothing is reverted within seconds: the
        // parent stays Synced, and its next sync writes the children's automated block back.
        // That cause is self-heal-ignores-not-respected's, which reports it on this parent.
        if ignored && self_heal_ignores_not_respected::owns(cx, g, a) {
            continue;
        }
        let Some(span) = parent.flag_anchor("selfHeal") else {
            continue;
        };
        let child = g.units[first].obj.display();
        let which = match syncing.len() {
            1 => format!("an auto-syncing child, {child}"),
            n => format!("{n} auto-syncing children, among them {child}"),
        };
        let f = out.report(
            span,
            format!(
                "Application {} self-heals and renders {which}: turning a child's auto-sync off in an incident is reverted within seconds",
                app_name(g, a),
            ),
        );
        f.about(g.apps[a].unit, obj)
            .label("the parent re-applies every child's syncPolicy")
            .help("on the parent, ignore `/spec/syncPolicy/automated` for `group: argoproj.io, kind: Application` and add `RespectIgnoreDifferences=true` to its syncOptions (the Argo CD cluster-bootstrapping recipe)")
            .fix(protect_children(cx, &parent));
        f.applications = vec![app_name(g, a)];
    }
    for u in 0..g.units.len() {
        let unit = &g.units[u];
        if !unit.lint || !unit.obj.is_argocd("ApplicationSet") {
            continue;
        }
        let Some(template) = app(cx, &unit.obj) else {
            continue;
        };
        let rolling = unit
            .obj
            .root
            .path(&["spec", "strategy", "type"])
            .and_then(Node::as_str)
            == Some("RollingSync");
        if rolling || !template.auto_sync(cx).is_yes() {
            continue;
        }
        let ignored = unit
            .obj
            .root
            .path(&["spec", "ignoreApplicationDifferences"])
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .any(|e| covers(e, &POINTERS));
        if ignored {
            continue;
        }
        let Some(span) = template.automated_key() else {
            continue;
        };
        out.report(
            span,
            format!(
                "{} generates auto-syncing Applications and reverts any change to them: turning one app's auto-sync off in an incident is undone at once",
                unit.obj.display()
            ),
        )
        .about(u, &unit.obj)
        .label("the ApplicationSet owns every generated syncPolicy")
        .help("add `ignoreApplicationDifferences: [{jsonPointers: [/spec/syncPolicy]}]` to the ApplicationSet spec")
        .fix(unit.obj.spec().and_then(|spec| {
            let edit = append_or_create(cx, spec, "ignoreApplicationDifferences", APPSET_IGNORE);
            Fix::unsafe_("add `ignoreApplicationDifferences` for /spec/syncPolicy", edit)
        }));
    }
}

const PARENT_IGNORE: &str =
    "{group: argoproj.io, kind: Application, jsonPointers: [/spec/syncPolicy/automated]}";
const APPSET_IGNORE: &str = "{jsonPointers: [/spec/syncPolicy]}";

/// The recipe on the parent: the ignore, and the option that makes syncs respect it.
fn protect_children(cx: &Cx, parent: &App) -> Option<Fix> {
    let mut edits = Vec::new();
    // The option goes first: when both land after the last line of syncPolicy, the deeper
    // line must come before the new spec key.
    if !parent.has_option("RespectIgnoreDifferences=true").is_yes() {
        edits.push(parent.add_option(cx, "RespectIgnoreDifferences=true"));
    }
    if !parent.ignores("argoproj.io", "Application", None, &POINTERS) {
        edits.push(append_or_create(
            cx,
            parent.spec,
            "ignoreDifferences",
            PARENT_IGNORE,
        ));
    }
    Fix::new(
        Applicability::Unsafe,
        "ignore children's /spec/syncPolicy/automated and respect the ignore",
        edits,
    )
}

/// Appends a flow-mapping item to the list under `key`, or creates the list.
fn append_or_create(cx: &Cx, map: &Node, key: &str, item: &str) -> Option<Edit> {
    let ed = cx.editor();
    match map.get(key) {
        Some(list) if list.is_seq() => ed.append_raw(list, item),
        Some(_) => None,
        None => ed.insert_entry(map, key, NewValue::Raw(&format!("[{item}]"))),
    }
}
