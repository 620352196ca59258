use super::app_name;
use crate::finding::Severity;
use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Node;
use foldhash::HashSet;

rule! {
    id: "hpa-replicas-conflict",
    category: Fleet,
    severity: Error,
    summary: "An autoscaled workload also sets spec.replicas in Git: sync and autoscaler fight over it",
    check: Check::Graph(check),
}

/// The autoscaler's target, when the unit is an HPA or a KEDA ScaledObject.
fn target(obj: &crate::model::Object) -> Option<(&str, &Node)> {
    let is_hpa = obj.kind == "HorizontalPodAutoscaler" && obj.group() == "autoscaling";
    let is_keda = obj.kind == "ScaledObject" && obj.group() == "keda.sh";
    if !is_hpa && !is_keda {
        return None;
    }
    let r = obj.root.path(&["spec", "scaleTargetRef"])?;
    let kind = r.str_at("kind").or(is_keda.then_some("Deployment"))?;
    Some((kind, r.get("name")?))
}

fn scalable_group(kind: &str) -> Option<&'static str> {
    match kind {
        "Deployment" | "StatefulSet" => Some("apps"),
        "Rollout" => Some("argoproj.io"),
        _ => None,
    }
}

fn int(node: Option<&Node>) -> Option<i64> {
    node?.as_str()?.parse().ok()
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
        let dest_ns = view
            .as_ref()
            .and_then(|v| v.spec.path(&["destination", "namespace"]))
            .and_then(Node::as_str)
            .map(str::to_string);
        let ns = |u: usize| g.units[u].obj.namespace.clone().or_else(|| dest_ns.clone());
        for &h in &units {
            let hpa = &g.units[h].obj;
            let Some((kind, name_node)) = target(hpa) else {
                continue;
            };
            let Some(group) = scalable_group(kind) else {
                continue;
            };
            let Some(name) = name_node.as_str() else {
                continue;
            };
            for &w in &units {
                let wl = &g.units[w].obj;
                if wl.kind != kind
                    || wl.group() != group
                    || wl.name.as_deref() != Some(name)
                    || ns(w) != ns(h)
                {
                    continue;
                }
                let Some(replicas) = wl.root.path(&["spec", "replicas"]).filter(|r| !r.is_null())
                else {
                    continue;
                };
                let respected = view.as_ref().is_some_and(|v| {
                    let ignored = v.ignores(group, kind, Some(name), &["/spec/replicas"])
                        || cx
                            .repo
                            .system_ignores_pointer(&format!("{group}_{kind}"), "/spec/replicas");
                    ignored && v.has_option("RespectIgnoreDifferences=true").is_yes()
                });
                if respected || !seen.insert((replicas.span, name_node.span, a)) {
                    continue;
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
                let pinned =
                    int(Some(replicas)).is_some_and(|r| int(min) == Some(r) && int(max) == Some(r));
                let (severity, why) = if pinned {
                    (
                        Severity::Info,
                        "the autoscaler's min and max equal it, so nothing moves today".to_string(),
                    )
                } else if self_heals {
                    (
                        Severity::Error,
                        format!(
                            "Application {} self-heals, so every scale-up is reset within seconds",
                            app_name(g, a.unwrap_or(0))
                        ),
                    )
                } else if let Some(a) = a {
                    (
                        Severity::Warning,
                        format!(
                            "every sync of Application {} resets the count the autoscaler chose",
                            app_name(g, a)
                        ),
                    )
                } else {
                    (
                        Severity::Warning,
                        "every apply resets the count the autoscaler chose".to_string(),
                    )
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
                    .on(w)
                    .label("replicas set in Git")
                    .also(name_node.span, "autoscaler target")
                    .help(format!("remove spec.replicas from the {kind}, or ignore `/spec/replicas` for group `{group}`, kind `{kind}` in the Application together with `RespectIgnoreDifferences=true`"));
                if let Some(a) = a {
                    f.applications = vec![app_name(g, a)];
                }
            }
        }
    }
}
