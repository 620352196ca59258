use crate::fix::Fix;
use crate::model::Object;
use crate::render::Graph;
use crate::rules::app::{app, App, Tri};
use crate::rules::ignored::{self, app_ignores, Hidden};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Span;

rule! {
    id: "self-heal-ignores-not-respected",
    category: SyncPolicy,
    severity: Error,
    fix: Unsafe,
    summary: "A self-healing app ignores a field Git sets without RespectIgnoreDifferences=true: every sync writes Git's value back",
    check: Check::Object(check),
}

const RESPECT: &str = "RespectIgnoreDifferences=true";

/// Labels about hidden fields one finding shows at most.
const SHOWN: usize = 3;

/// The spec this rule reads: auto-sync with self-heal, and no `RespectIgnoreDifferences=true`
/// (nor a templated item that may be it).
fn applies(cx: &Cx, view: &App) -> bool {
    !view.partial
        && view.auto_sync(cx).is_yes()
        && view.flag("selfHeal").is_yes()
        && view.has_option(RESPECT) == Tri::No
}

/// Whether this rule speaks for Application `a` about the fields its ignores hide: it runs,
/// and the spec it reads there (the Application's, or its ApplicationSet's template) self-heals
/// without respecting ignores. Other rules leave those fields to it.
pub fn owns(cx: &Cx, g: &Graph, a: usize) -> bool {
    if !cx.runs(RULE.id) {
        return false;
    }
    let obj = match g.apps[a].generated_by {
        Some(set) => &*g.units[set].obj,
        None => g.app_obj(a),
    };
    app(cx, obj).is_some_and(|v| applies(cx, &v))
}

/// The graph's Applications for this object: the Application itself, or those an
/// ApplicationSet generated.
fn apps_of(g: &Graph, obj: &Object) -> Vec<usize> {
    if obj.is_argocd("ApplicationSet") {
        (0..g.units.len())
            .filter(|&u| std::ptr::eq(&*g.units[u].obj, obj))
            .flat_map(|u| g.generated(u))
            .collect()
    } else {
        (0..g.apps.len())
            .filter(|&a| std::ptr::eq(g.app_obj(a), obj))
            .collect()
    }
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(view) = app(cx, obj) else { return };
    if !applies(cx, &view) {
        return;
    }
    let g = cx.graph;
    // What each Application deploys, as rendered: an ignore on a field Git leaves out has
    // nothing to reset, and an app that is not rendered here is not guessed.
    let mut found: Option<(usize, Vec<Hidden>)> = None;
    for a in apps_of(g, obj) {
        let Some(av) = app(cx, g.app_obj(a)) else {
            continue;
        };
        let hidden = ignored::hidden(g, a, &av, &app_ignores(&av), &cx.repo.ignores);
        if hidden.is_empty() {
            continue;
        }
        if found.is_none() {
            found = Some((a, hidden));
        }
    }
    let Some((a, hidden)) = found else { return };
    let first = &hidden[0];
    let target = &g.units[first.unit].obj;
    let more = match hidden.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more ignored field Git sets)".to_string(),
        n => format!(" (and {n} more ignored fields Git sets)"),
    };
    // A template's message names no generated Application: which ones are rendered depends
    // on what a run reads (a `--context` run renders only those a change reaches), and the
    // finding must read the same either way. The labels name the fields and objects.
    let message = if view.template {
        format!(
            "{} ignores fields that Git sets in the Applications it generates, without RespectIgnoreDifferences=true",
            view.kind_name()
        )
    } else {
        format!(
            "{} ignores `{}`{} of {}, which Git sets, without RespectIgnoreDifferences=true{more}",
            view.kind_name(),
            first.path,
            via(first),
            target.display(),
        )
    };
    let f = out.report(
        view.options_anchor(),
        format!(
            "{message}: the next sync that applies it (a new commit, a manual sync, a retry) writes Git's value back; an ignored difference alone never triggers self-heal"
        ),
    );
    f.label("RespectIgnoreDifferences=true is missing here");
    let mut labelled: Vec<Span> = Vec::new();
    for h in hidden.iter().take(SHOWN) {
        let obj = &g.units[h.unit].obj;
        let by = if h.system {
            format!(
                "argocd-cm ignores `{}`{} on every Application's {}",
                h.path,
                via(h),
                obj.kind
            )
        } else {
            format!("`{}`{} ignored here", h.path, via(h))
        };
        let labels = [
            Some((h.by, by)),
            Some((
                h.set_at,
                if view.template {
                    let name = g.app_obj(a).name.as_deref().unwrap_or("(unnamed)");
                    format!(
                        "Git sets it on {} here, for the generated Application {name}",
                        obj.display()
                    )
                } else {
                    format!("Git sets it on {} here", obj.display())
                },
            )),
            h.scaler
                .map(|s| (s, "the autoscaler that scales it".to_string())),
        ];
        for (span, text) in labels.into_iter().flatten() {
            if !labelled.contains(&span) {
                labelled.push(span);
                f.also(span, text);
            }
        }
    }
    f.help("add `RespectIgnoreDifferences=true` to spec.syncPolicy.syncOptions, so that syncs keep the live value of every field the app ignores (argocd-cm's ignores included), or stop setting the field in Git")
        .fix(Fix::unsafe_(
            "add `RespectIgnoreDifferences=true` to syncOptions",
            view.add_option(cx, RESPECT),
        ));
}

/// How a manager's ignore reaches the field: ` (kube-controller-manager's field)`.
fn via(h: &Hidden) -> String {
    h.manager
        .as_deref()
        .map(|m| format!(" ({m}'s field)"))
        .unwrap_or_default()
}
