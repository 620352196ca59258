use crate::model::Object;
use crate::rules::{rule, Cx, Sink, Version};
use crate::yaml::Node;

rule! {
    id: "project-too-open",
    category: Access,
    severity: Warning,
    fix: None,
    summary: "An AppProject that allows every repository, every destination or every cluster-scoped kind",
    check: Check::Object(check),
}

/// A `!` pattern: Argo CD denies what it matches whatever else allows it, so a list holding one
/// was narrowed on purpose and `*` no longer means everything.
fn denies(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.starts_with('!'))
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("AppProject") {
        return;
    }
    let Some(spec) = obj.spec() else { return };
    let repos = spec.get("sourceRepos").map(Node::items).unwrap_or(&[]);
    if !repos.iter().any(|r| denies(r.as_str())) {
        for repo in repos {
            if repo.as_str() == Some("*") {
                out.report(
                    repo.span,
                    "sourceRepos `*` lets this project deploy from any repository",
                )
                .label("any repository")
                .help("list the repositories this project deploys from");
            }
        }
    }
    let dests = spec.get("destinations").map(Node::items).unwrap_or(&[]);
    let narrowed = dests.iter().any(|d| {
        ["server", "name", "namespace"]
            .iter()
            .any(|k| denies(d.str_at(k)))
    });
    // With permitOnlyProjectScopedClusters a `*` server reaches only the clusters assigned to
    // the project (`IsDestinationPermitted`).
    let scoped_clusters = spec
        .get("permitOnlyProjectScopedClusters")
        .and_then(Node::as_scalar)
        .and_then(crate::yaml::typing::as_bool)
        == Some(true);
    if !narrowed && !scoped_clusters {
        for dest in dests {
            let cluster = dest.get("server").or_else(|| dest.get("name"));
            let any_cluster = cluster.and_then(|c| c.as_str()) == Some("*");
            let ns = dest.get("namespace");
            if any_cluster && ns.and_then(|n| n.as_str()) == Some("*") {
                out.report(dest.span, "destination `*`/`*` lets this project deploy into every namespace of every cluster, the Argo CD namespace included")
                    .label("any cluster, any namespace")
                    .help("name the clusters and namespaces this project deploys to");
            }
        }
    }
    // From 3.3 an entry's `name` narrows it; a blacklist narrows the whole list.
    let named = cx.version_or_oldest() >= Version::new(3, 3);
    let blacklisted = spec
        .get("clusterResourceBlacklist")
        .is_some_and(|b| !b.items().is_empty());
    if blacklisted {
        return;
    }
    for entry in spec
        .get("clusterResourceWhitelist")
        .map(Node::items)
        .unwrap_or(&[])
    {
        let by_name = entry
            .str_at("name")
            .is_some_and(|n| !n.is_empty() && n != "*")
            && named;
        if entry.str_at("group") == Some("*") && entry.str_at("kind") == Some("*") && !by_name {
            out.report(entry.span, "clusterResourceWhitelist `*`/`*` lets this project create any cluster-scoped object (ClusterRoles, CRDs, webhooks)")
                .label("every cluster-scoped kind")
                .help("allow only the cluster-scoped kinds the project needs, e.g. `{group: '', kind: Namespace}`");
        }
    }
}
