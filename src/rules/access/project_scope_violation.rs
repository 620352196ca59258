use crate::render::{app_sources, Graph};
use crate::rules::app::Tri;
use crate::rules::fleet::app_name;
use crate::rules::project::{
    destination_permitted, key_span, kind_permitted, known, project_of, source_permitted, Cluster,
    ClusterRegistry, Projects, Repos, Scopes,
};
use crate::rules::{rule, Cx, Sink, Version};
use crate::yaml::{typing, Node, Span};
use foldhash::HashMap;

rule! {
    id: "project-scope-violation",
    category: Access,
    severity: Error,
    fix: None,
    summary: "An application's repository, destination or rendered kinds are not allowed by its AppProject",
    check: Check::Graph(check),
}

/// Findings already made, by place and message: the same line rendered by several
/// Applications is one finding that names them all.
type Made = HashMap<(Span, String), usize>;

struct Report<'a> {
    span: Span,
    message: String,
    label: &'a str,
    also: Option<(Span, String)>,
    help: String,
    unit: usize,
}

fn emit(g: &Graph, out: &mut Sink, made: &mut Made, app: String, r: Report) {
    if let Some(&i) = made.get(&(r.span, r.message.clone())) {
        let apps = &mut out.findings[i].applications;
        if !apps.contains(&app) {
            apps.push(app);
            apps.sort();
        }
        return;
    }
    made.insert((r.span, r.message.clone()), out.findings.len());
    let f = out.report(r.span, r.message);
    f.about(r.unit, &g.units[r.unit].obj)
        .label(r.label)
        .help(r.help);
    if let Some((span, text)) = r.also {
        f.also(span, text);
    }
    f.applications = vec![app];
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut repos = Repos::new(cx.sources, cx.graph);
    let projects = Projects::collect(g, &mut repos);
    if projects.repos_with_projects.is_empty() {
        return;
    }
    let registry = ClusterRegistry::collect(g);
    let scopes = Scopes::collect(g);
    let mut made = Made::default();
    // The cluster lists narrow by `name` from 3.3 on.
    let named = cx.version_or_oldest() >= Version::new(3, 3);
    for a in 0..g.apps.len() {
        let obj = g.app_obj(a);
        let Some(spec) = obj.spec() else { continue };
        let Some((pname, _)) = project_of(obj) else {
            continue;
        };
        let repo = repos.of(obj.file);
        let Some(project) = projects.unique(&repo, pname) else {
            continue;
        };
        let Some(pspec) = project.spec().filter(|s| s.is_map()) else {
            continue;
        };
        let unit = g.apps[a].unit;
        let name = app_name(g, a);
        let anchor = |key: &str| key_span(pspec, key).unwrap_or(project.root.span);

        for source in app_sources(spec) {
            let Some(url_node) = source.get("repoURL") else {
                continue;
            };
            let Some(url) = known(Some(url_node)) else {
                continue;
            };
            let (allowed, excluded_by) = source_permitted(pspec, url);
            if allowed {
                continue;
            }
            let (why, also) = match excluded_by {
                Some(item) => (
                    format!(
                        "`{}` in its sourceRepos excludes it",
                        item.as_str().unwrap_or("")
                    ),
                    (item.span, "excluded here".to_string()),
                ),
                None => (
                    "no sourceRepos entry matches it".to_string(),
                    (
                        anchor("sourceRepos"),
                        format!("project `{pname}` allows these"),
                    ),
                ),
            };
            emit(g, out, &mut made, name.clone(), Report {
                span: url_node.span,
                message: format!("repository `{url}` is not permitted by project `{pname}`: {why}, so Argo CD refuses to sync the application"),
                label: "repository not permitted",
                also: Some(also),
                help: format!("add the repository to project `{pname}`'s sourceRepos, or move the application to a project that allows it"),
                unit,
            });
        }

        let Some(dest) = spec.get("destination").filter(|d| d.is_map()) else {
            continue;
        };
        let Some(cluster) = Cluster::of_destination(dest, &registry) else {
            continue;
        };
        let ns_node = dest.get("namespace");
        let dest_ns = match ns_node {
            None => "",
            Some(n) if n.is_null() => "",
            Some(n) => match known(Some(n)) {
                Some(ns) => ns,
                None => continue,
            },
        };
        let cluster_node = dest
            .get("server")
            .filter(|s| !s.is_null())
            .or(dest.get("name"))
            .map_or(dest.span, |n| n.span);
        let where_ = |ns: &str| {
            let c = cluster
                .name
                .as_deref()
                .or(cluster.server.as_deref())
                .unwrap_or("");
            if ns.is_empty() {
                format!("cluster `{c}` with no namespace")
            } else {
                format!("namespace `{ns}` of cluster `{c}`")
            }
        };
        let deny_note = |excluded: Option<&Node>| match excluded {
            Some(item) => (item.span, "excluded by this entry".to_string()),
            None => (
                anchor("destinations"),
                format!("project `{pname}` allows these"),
            ),
        };
        let (dest_ok, excluded, cluster_listed) =
            destination_permitted(pspec, &registry, &cluster, dest_ns);
        if dest_ok == Tri::No {
            // The namespace is at fault when the project lists the cluster, or when a `!`
            // namespace denies it.
            let ns_denied = excluded
                .and_then(|e| e.str_at("namespace"))
                .is_some_and(|p| p.starts_with('!'));
            let span = match ns_node.filter(|_| !dest_ns.is_empty()) {
                Some(n) if cluster_listed || ns_denied => n.span,
                _ => cluster_node,
            };
            emit(g, out, &mut made, name.clone(), Report {
                span,
                message: format!("destination {} is not permitted by project `{pname}`, so Argo CD refuses to sync the application", where_(dest_ns)),
                label: "destination not permitted",
                also: Some(deny_note(excluded)),
                help: format!("add the destination to project `{pname}`'s destinations, or deploy where the project allows"),
                unit,
            });
        }

        let mut namespaces = HashMap::default();
        for &u in &g.apps[a].rendered {
            if u == unit {
                continue;
            }
            let o = &g.units[u].obj;
            let Some(kind_node) = o.root.get("kind") else {
                continue;
            };
            let group = o.group();
            let cluster_scoped = scopes.cluster_scoped(o);
            let oname = o.name.as_deref().filter(|n| !typing::is_template(n));
            if let Err((list, entry)) =
                kind_permitted(pspec, group, &o.kind, oname, cluster_scoped, named)
            {
                let gk = if group.is_empty() {
                    format!("{} (core group)", o.kind)
                } else {
                    format!("{}.{group}", o.kind)
                };
                let written_empty = pspec
                    .get(list)
                    .is_some_and(|l| l.is_seq() && l.items().is_empty());
                let (why, also) = if list.ends_with("Whitelist") {
                    (
                        if written_empty && !cluster_scoped {
                            format!("its {list} is written empty (`[]`), which allows no namespaced kind, unlike an absent one")
                        } else if named
                            && kind_permitted(pspec, group, &o.kind, oname, cluster_scoped, false)
                                .map_or_else(|(l, _)| l != list, |_| true)
                        {
                            format!(
                                "its {list} allows {gk} only under other names than `{}`",
                                oname.unwrap_or_default()
                            )
                        } else {
                            format!("{gk} is not in its {list}")
                        },
                        (
                            entry.map_or(project.root.span, |e| e.span),
                            format!("project `{pname}` allows only these"),
                        ),
                    )
                } else {
                    (
                        format!("its {list} denies {gk}"),
                        (
                            entry.map_or(project.root.span, |e| e.span),
                            "denied here".to_string(),
                        ),
                    )
                };
                emit(g, out, &mut made, name.clone(), Report {
                    span: kind_node.span,
                    message: format!("{} is not permitted by project `{pname}`: {why}, so Argo CD fails the whole sync before applying anything", o.display()),
                    label: "kind not permitted",
                    also: Some(also),
                    help: format!("allow {gk} in project `{pname}` (`{{group: '{group}', kind: {}}}`), or deploy this object from a project that allows it", o.kind),
                    unit: u,
                });
                continue;
            }
            let Some(ns_obj) = o.root.path(&["metadata", "namespace"]) else {
                continue;
            };
            let Some(ns) = known(Some(ns_obj)) else {
                continue;
            };
            if cluster_scoped || ns.is_empty() || ns == dest_ns {
                continue;
            }
            // The objects of one app mostly share a namespace: each is judged once.
            let (ok, excluded, _) = *namespaces
                .entry(ns)
                .or_insert_with(|| destination_permitted(pspec, &registry, &cluster, ns));
            if ok == Tri::No {
                emit(g, out, &mut made, name.clone(), Report {
                    span: ns_obj.span,
                    message: format!("{} goes to {}, which project `{pname}` does not permit, so Argo CD fails the whole sync before applying anything", o.display(), where_(ns)),
                    label: "namespace not permitted",
                    also: Some(deny_note(excluded)),
                    help: format!("add the namespace to project `{pname}`'s destinations, or leave the namespace to the Application's destination"),
                    unit: u,
                });
            }
        }
    }
}
