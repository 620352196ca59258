use super::app_name;
use crate::finding::Severity;
use crate::model::Object;
use crate::render::Graph;
use crate::rules::app::{app, Tri};
use crate::rules::ignored::{app_ignores, autoscaled, namespace_of, scale_target};
use crate::rules::sync_policy::self_heal_ignores_not_respected;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{Node, Span};
use foldhash::HashSet;

rule! {
    id: "hpa-replicas-conflict",
    category: Fleet,
    severity: Error,
    severities: "error (self-healing app) / warning (otherwise) / info (fixed size)",
    fix: None,
    summary: "An autoscaled workload also sets spec.replicas in Git: sync and autoscaler fight over it",
    check: Check::Graph(check),
}

fn int(node: Option<&Node>) -> Option<i64> {
    node?.as_str()?.parse().ok()
}

/// What wrote the `replicas` value that won, for the label and the help.
enum Setter {
    /// A kustomize `replicas:` entry's `count`.
    Entry,
    /// A patch in its own file.
    Patch,
    /// A patch written inline in a kustomization.
    InlinePatch,
    /// The workload's own manifest.
    Manifest,
    /// A Helm value the chart's template printed (values.yaml, a value file, the
    /// Application's `values`).
    HelmValue,
    /// A chart template.
    Template,
}

impl Setter {
    fn of(cx: &Cx, wl: &Object, replicas: &Node) -> Setter {
        let source = cx.sources.get(replicas.span.file);
        if crate::discover::is_chart_template(&cx.sources.get(wl.file).path) {
            return if crate::discover::is_chart_template(&source.path) {
                Setter::Template
            } else {
                Setter::HelmValue
            };
        }
        if replicas.span.file == wl.file {
            return Setter::Manifest;
        }
        if !crate::discover::is_kustomization_file(&source.path) {
            return Setter::Patch;
        }
        // An entry's `count` is the number itself; an inline patch's nodes all point at the
        // whole string.
        let text = source.text.get(replicas.span.range()).unwrap_or("");
        if text.trim().parse::<i64>().is_ok() {
            Setter::Entry
        } else {
            Setter::InlinePatch
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Setter::Entry => "this kustomize `replicas:` entry sets spec.replicas",
            Setter::Patch => "this patch sets spec.replicas",
            Setter::InlinePatch => "this inline patch sets spec.replicas",
            Setter::Manifest => "spec.replicas set here",
            Setter::HelmValue => "this Helm value becomes spec.replicas",
            Setter::Template => "this template sets spec.replicas",
        }
    }

    fn remove(&self) -> String {
        match self {
            Setter::Entry => {
                "remove this `replicas:` entry (and `spec.replicas` from any base that sets it too)"
                    .into()
            }
            Setter::Patch => {
                "remove `replicas` from this patch (and from any base that sets it too)".into()
            }
            Setter::InlinePatch => {
                "remove `replicas` from this inline patch (and from any base that sets it too)"
                    .into()
            }
            Setter::Manifest => "remove `spec.replicas` from this manifest".into(),
            Setter::HelmValue | Setter::Template => {
                "have the chart's template leave `spec.replicas` out while the autoscaler is on \
                 (`{{- if not .Values.autoscaling.enabled }}` around it, as most charts do)"
                    .into()
            }
        }
    }
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    // Each Application's rendered objects, then kustomization roots no Application renders.
    let mut scopes: Vec<(Option<usize>, Vec<usize>)> = (0..g.apps.len())
        .map(|a| (Some(a), g.apps[a].rendered.clone()))
        .collect();
    for (_, units) in &g.roots {
        if units.iter().all(|&u| g.units[u].apps.is_empty()) {
            scopes.push((None, units.clone()));
        }
    }
    let mut seen = HashSet::default();
    for (a, units) in scopes {
        let view = a.and_then(|a| app(cx, g.app_obj(a)));
        let ns = |u: usize| namespace_of(g, u, view.as_ref());
        let own = view.as_ref().map(app_ignores).unwrap_or_default();
        for (w, h) in autoscaled(g, &units, &ns) {
            let hpa = &g.units[h].obj;
            let wl = &g.units[w].obj;
            let Some((kind, name_node)) = scale_target(hpa) else {
                continue;
            };
            let name = name_node.as_str().unwrap_or_default();
            let Some(replicas) = wl.root.path(&["spec", "replicas"]).filter(|r| !r.is_null())
            else {
                continue;
            };
            if !seen.insert((replicas.span, name_node.span, a)) {
                continue;
            }
            // The ignore that hides the count, the app's own or argocd-cm's: a JSON pointer,
            // a jq path, or the autoscaler's field manager.
            let ignored: Option<Span> = view.as_ref().and_then(|_| {
                let w_ns = ns(w);
                own.iter()
                    .chain(&cx.repo.ignores)
                    .filter(|i| i.matches(wl, w_ns.as_deref()))
                    .flat_map(|i| i.hides(wl, true))
                    .find(|hit| hit.node.span == replicas.span)
                    .map(|hit| hit.by)
            });
            if let (Some(_), Some(v)) = (ignored, view.as_ref()) {
                // Respected, the setup this rule recommends; or not known.
                if v.has_option("RespectIgnoreDifferences=true") != Tri::No {
                    continue;
                }
                // One cause, one error: self-heal-ignores-not-respected reports this app's
                // unrespected ignore, with the replicas line and the autoscaler as labels.
                if a.is_some_and(|a| self_heal_ignores_not_respected::owns(cx, g, a)) {
                    continue;
                }
            }
            let self_heals = view
                .as_ref()
                .is_some_and(|v| v.auto_sync(cx).is_yes() && v.flag("selfHeal").is_yes());
            let (min, max) = if hpa.kind == "ScaledObject" {
                (
                    hpa.root.path(&["spec", "minReplicaCount"]),
                    hpa.root.path(&["spec", "maxReplicaCount"]),
                )
            } else {
                (
                    hpa.root.path(&["spec", "minReplicas"]),
                    hpa.root.path(&["spec", "maxReplicas"]),
                )
            };
            let count = replicas.as_str().unwrap_or("its count");
            let pinned =
                int(Some(replicas)).is_some_and(|r| int(min) == Some(r) && int(max) == Some(r));
            let app = a.map(|a| app_name(g, a));
            let (severity, why) = match (&app, ignored) {
                _ if pinned => (
                    Severity::Info,
                    "the autoscaler's min and max equal it, so nothing moves today".to_string(),
                ),
                (Some(app), Some(_)) => (
                    Severity::Warning,
                    format!("the ignore on /spec/replicas keeps Application {app} Synced while the autoscaler scales, but without RespectIgnoreDifferences=true the next sync that applies the {kind} (a new commit, a manual sync) writes {count} back"),
                ),
                (Some(app), None) if self_heals => (
                    Severity::Error,
                    format!("each scaling makes Application {app} OutOfSync, and self-heal writes {count} back within seconds"),
                ),
                (Some(app), None) => (
                    Severity::Warning,
                    format!("each scaling shows Application {app} OutOfSync, and its next sync writes {count} back"),
                ),
                (None, _) => (
                    Severity::Warning,
                    "every apply resets the count the autoscaler chose".to_string(),
                ),
            };
            let setter = Setter::of(cx, wl, replicas);
            let group = wl.group();
            let instead = match (&app, ignored) {
                (Some(app), Some(_)) => format!(", or add `RespectIgnoreDifferences=true` to the syncOptions of Application {app} (its syncs then keep the live value of every field the app ignores)"),
                (Some(app), None) => format!(", or add to Application {app} an ignore of `/spec/replicas` (or `managedFieldsManagers: [kube-controller-manager]`) for group `{group}`, kind `{kind}`, name `{name}`, together with `RespectIgnoreDifferences=true`"),
                (None, _) => String::new(),
            };
            let f = out.report(
                replicas.span,
                format!(
                    "{} sets spec.replicas while {} scales it: {why}",
                    wl.display(),
                    hpa.display()
                ),
            );
            f.severity(severity)
                .about(w, wl)
                .label(setter.label())
                .also(name_node.span, "autoscaler target");
            if let Some(by) = ignored {
                f.also(by, "ignored here, but not respected");
            }
            f.help(format!(
                "{} and set the floor with the autoscaler's minimum{instead}",
                setter.remove()
            ));
            if let Some(app) = app {
                f.applications = vec![app];
            }
        }
    }
}
