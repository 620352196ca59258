use crate::fix::Fix;
use crate::model::Object;
use crate::rules::app::{app, Tri};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "self-heal-ignores-not-respected",
    category: SyncPolicy,
    severity: Error,
    summary: "Self-heal re-applies fields that ignoreDifferences hides, unless RespectIgnoreDifferences=true is set",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if app.partial || !app.auto_sync(cx).is_yes() || !app.flag("selfHeal").is_yes() {
        return;
    }
    if app.has_option("RespectIgnoreDifferences=true") != Tri::No {
        return;
    }
    // Ignores that only name `/status` change nothing on sync: Git never sets status.
    let own = app
        .spec
        .entry("ignoreDifferences")
        .filter(|e| e.value.items().iter().any(touches_desired_state));
    let system = cx.repo.system_ignores.first();
    let f = match (own, system) {
        (Some(entry), _) => {
            let replicas = app.ignore_differences().iter().any(|i| {
                i.get("jsonPointers").is_some_and(|p| {
                    p.items()
                        .iter()
                        .any(|p| p.as_str() == Some("/spec/replicas"))
                })
            });
            let why = if replicas {
                "every sync, self-heal included, resets /spec/replicas to Git's value: the HPA's scaling is undone"
            } else {
                "every sync, self-heal included, re-applies Git's values of these ignored fields"
            };
            let f = out.report(
                app.options_anchor(),
                format!(
                    "{} self-heals but does not respect its ignoreDifferences",
                    app.kind_name()
                ),
            );
            f.label("RespectIgnoreDifferences=true is missing here")
                .also(entry.key.span, why);
            f
        }
        (None, Some(span)) => {
            let f = out.report(
                app.options_anchor(),
                format!(
                    "{} self-heals but does not respect the system-level ignoreDifferences in argocd-cm",
                    app.kind_name()
                ),
            );
            f.label("RespectIgnoreDifferences=true is missing here")
                .also(*span, "system-level ignores apply to every Application");
            f
        }
        (None, None) => return,
    };
    f.help("add `RespectIgnoreDifferences=true` to spec.syncPolicy.syncOptions, so that syncs keep the live values of ignored fields")
        .fix(Fix::safe(
            "add `RespectIgnoreDifferences=true` to syncOptions",
            app.add_option(cx, "RespectIgnoreDifferences=true"),
        ));
}

/// Whether an ignore entry covers a field Git can set: anything but `status` (or an entry
/// that ignores by field manager, which can be any field).
fn touches_desired_state(entry: &crate::yaml::Node) -> bool {
    let listed = |key| {
        entry
            .get(key)
            .map(crate::yaml::Node::items)
            .unwrap_or(&[])
            .iter()
            .filter_map(crate::yaml::Node::as_str)
            .map(str::trim)
            .collect::<Vec<_>>()
    };
    let status = |p: &str, sep: char| {
        p == format!("{sep}status") || p.starts_with(&format!("{sep}status{sep}"))
    };
    let pointers = listed("jsonPointers");
    let jq = listed("jqPathExpressions");
    let managers = entry
        .get("managedFieldsManagers")
        .is_some_and(|m| !m.items().is_empty());
    managers || pointers.iter().any(|p| !status(p, '/')) || jq.iter().any(|p| !status(p, '.'))
}
