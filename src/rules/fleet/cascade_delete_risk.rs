use super::app_name;
use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};

rule! {
    id: "cascade-delete-risk",
    category: Fleet,
    severity: Info,
    fix: None,
    summary: "Removing a child's file (or an ApplicationSet) deletes its workloads with it",
    check: Check::Graph(check),
}

const FINALIZERS: [&str; 2] = [
    "resources-finalizer.argocd.argoproj.io",
    "resources-finalizer.argocd.argoproj.io/background",
];

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut seen = foldhash::HashSet::default();
    for a in 0..g.apps.len() {
        let Some(parent) = app(cx, g.app_obj(a)) else {
            continue;
        };
        if !parent.auto_sync(cx).is_yes() || !parent.flag("prune").is_yes() {
            continue;
        }
        for u in g.children(a) {
            let obj = &g.units[u].obj;
            if !obj.is_argocd("Application") || !seen.insert(u) {
                continue;
            }
            let finalizers = obj
                .root
                .path(&["metadata", "finalizers"])
                .map(Node::items)
                .unwrap_or(&[]);
            for item in finalizers {
                if !item.as_str().is_some_and(|f| FINALIZERS.contains(&f)) {
                    continue;
                }
                let f = out.report(
                    item.span,
                    format!(
                        "{} carries the resources finalizer and its parent, Application {}, prunes: deleting or renaming the child's file deletes every workload it deployed",
                        obj.display(),
                        app_name(g, a)
                    ),
                );
                f.about(u, obj)
                    .label("cascade delete on prune")
                    .help("drop the finalizer (deleting the child then orphans its workloads), or protect the child with the `argocd.argoproj.io/sync-options: Prune=confirm` annotation");
                f.applications = vec![app_name(g, a)];
            }
        }
    }
    for (set, unit) in g.units.iter().enumerate() {
        if !unit.lint || !unit.obj.is_argocd("ApplicationSet") {
            continue;
        }
        let root = &unit.obj.root;
        let Some(spec) = root.entry("spec") else {
            continue;
        };
        let policy = spec.value.entry("syncPolicy");
        let preserve = policy.and_then(|p| p.value.entry("preserveResourcesOnDeletion"));
        let value = preserve.map(|e| e.value.as_scalar().and_then(typing::as_bool));
        let span = match value {
            Some(Some(true)) => continue,
            // A templated or odd value is not guessed.
            Some(None) => continue,
            Some(Some(false)) => preserve.map(|e| e.value.span),
            None => policy.map(|p| p.key.span).or(Some(spec.key.span)),
        };
        let Some(span) = span else { continue };
        out.report(
            span,
            format!(
                "{} does not preserve resources on deletion: deleting it (or a generator losing an element) deletes the generated Applications and all their workloads",
                unit.obj.display()
            ),
        )
        .about(set, &unit.obj)
        .label("preserveResourcesOnDeletion is not true")
        .help("set `spec.syncPolicy.preserveResourcesOnDeletion: true`");
    }
}
