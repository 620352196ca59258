use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "project-too-open",
    category: Access,
    severity: Warning,
    summary: "An AppProject that allows every repository, every destination or every cluster-scoped kind",
    check: Check::Object(check),
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("AppProject") {
        return;
    }
    let Some(spec) = obj.spec() else { return };
    for repo in spec.get("sourceRepos").map(|n| n.items()).unwrap_or(&[]) {
        if repo.as_str() == Some("*") {
            out.report(
                repo.span,
                "sourceRepos `*` lets this project deploy from any repository",
            )
            .label("any repository")
            .help("list the repositories this project deploys from");
        }
    }
    for dest in spec.get("destinations").map(|n| n.items()).unwrap_or(&[]) {
        let cluster = dest.get("server").or_else(|| dest.get("name"));
        let any_cluster = cluster.and_then(|c| c.as_str()) == Some("*");
        let ns = dest.get("namespace");
        if any_cluster && ns.and_then(|n| n.as_str()) == Some("*") {
            out.report(dest.span, "destination `*`/`*` lets this project deploy into every namespace of every cluster, the Argo CD namespace included")
                .label("any cluster, any namespace")
                .help("name the clusters and namespaces this project deploys to");
        }
    }
    for entry in spec
        .get("clusterResourceWhitelist")
        .map(|n| n.items())
        .unwrap_or(&[])
    {
        if entry.str_at("group") == Some("*") && entry.str_at("kind") == Some("*") {
            out.report(entry.span, "clusterResourceWhitelist `*`/`*` lets this project create any cluster-scoped object (ClusterRoles, CRDs, webhooks)")
                .label("every cluster-scoped kind")
                .help("allow only the cluster-scoped kinds the project needs, e.g. `{group: '', kind: Namespace}`");
        }
    }
}
