use super::app_name;
use crate::model::Object;
use crate::pattern::glob_match;
use crate::render::Graph;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};
use std::collections::BTreeSet;

rule! {
    id: "child-application-namespace-ignored",
    category: Fleet,
    severity: Warning,
    fix: None,
    summary: "A child Application without metadata.namespace lands in its parent's destination namespace, where the controller does not look",
    check: Check::Graph(check),
}

/// The namespace Argo CD's own objects live in: AppProjects are only read from the control
/// plane's namespace, and so are its ConfigMaps.
fn control_plane_namespaces(g: &Graph) -> BTreeSet<String> {
    g.units
        .iter()
        .filter(|u| {
            let o = &u.obj;
            o.is_argocd("AppProject")
                || (o.is("", "ConfigMap")
                    && matches!(
                        o.name.as_deref(),
                        Some("argocd-cm" | "argocd-cmd-params-cm" | "argocd-rbac-cm")
                    ))
        })
        .filter_map(|u| u.obj.namespace.clone())
        .filter(|ns| !typing::is_template(ns))
        .collect()
}

/// What the repository says about Applications in other namespaces: the patterns of
/// `application.namespaces` in argocd-cmd-params-cm and every AppProject's
/// `sourceNamespaces`. `None` when it is configured somewhere not read here (a Helm values
/// file, a container argument): then nothing is certain.
fn allowed_patterns(cx: &Cx, g: &Graph) -> Option<Vec<String>> {
    let mut patterns = Vec::new();
    let mut read = BTreeSet::new();
    for u in &g.units {
        let o = &u.obj;
        if o.is("", "ConfigMap") && o.name.as_deref() == Some("argocd-cmd-params-cm") {
            read.insert(o.file);
            if let Some(v) = o.root.path(&["data", "application.namespaces"]) {
                let text = v.as_str()?;
                patterns.extend(
                    text.split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(String::from),
                );
            }
        }
        if o.is_argocd("AppProject") {
            let items = o
                .root
                .path(&["spec", "sourceNamespaces"])
                .map(Node::items)
                .unwrap_or(&[]);
            for i in items {
                patterns.push(i.as_str()?.to_string());
            }
        }
    }
    let elsewhere = cx.sources.files().iter().enumerate().any(|(i, f)| {
        let read_here = read.iter().any(|&id| id as usize == i);
        f.text.contains("--application-namespaces")
            || (!read_here
                && (f.text.contains("application.namespaces:")
                    || f.text.contains("application.namespaces\":")))
    });
    (!elsewhere).then_some(patterns)
}

fn allowed(patterns: &[String], ns: &str) -> bool {
    patterns.iter().any(|p| {
        typing::is_template(p)
            // A regular expression (`/.../`) is not evaluated: taken as a match.
            || (p.len() > 1 && p.starts_with('/') && p.ends_with('/'))
            || glob_match(p, ns, None)
    })
}

/// The in-cluster destination: the cluster Argo CD itself runs in.
fn in_cluster(dest: &Node) -> bool {
    let server = dest.str_at("server").filter(|s| !s.is_empty());
    let name = dest.str_at("name").filter(|s| !s.is_empty());
    match (server, name) {
        (Some(s), None) => s.trim_end_matches('/') == "https://kubernetes.default.svc",
        (None, Some(n)) => n == "in-cluster",
        _ => false,
    }
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let planes = control_plane_namespaces(g);
    let mut patterns = None;
    for a in 0..g.apps.len() {
        let parent = g.app_obj(a);
        let Some(dest) = parent.root.path(&["spec", "destination"]) else {
            continue;
        };
        let Some(ns_node) = dest.get("namespace") else {
            continue;
        };
        let Some(dest_ns) = ns_node.as_str().filter(|s| !s.is_empty()) else {
            continue;
        };
        if typing::is_template(dest_ns) || !in_cluster(dest) {
            continue;
        }
        // The control plane's namespace: the parent's own, which the controller reads it
        // from, or the one namespace Argo CD's objects in the repository share.
        let plane = match (&parent.namespace, planes.len()) {
            (Some(ns), _) if typing::is_template(ns) => continue,
            (Some(ns), 0) => ns.clone(),
            // A parent outside the namespace of Argo CD's objects: Applications in other
            // namespaces are enabled for this instance, so the child may be too.
            (Some(ns), _) if !planes.contains(ns) => continue,
            (Some(ns), _) => ns.clone(),
            (None, 1) => planes.iter().next().cloned().unwrap_or_default(),
            (None, _) => continue,
        };
        if dest_ns == plane || planes.contains(dest_ns) {
            continue;
        }
        let children: Vec<usize> = g
            .children(a)
            .filter(|&u| {
                let o = &g.units[u].obj;
                o.is_argocd("Application") && o.namespace.is_none()
            })
            .collect();
        if children.is_empty() {
            continue;
        }
        let patterns = patterns.get_or_insert_with(|| allowed_patterns(cx, g));
        let Some(patterns) = patterns.as_ref() else {
            return;
        };
        if allowed(patterns, dest_ns) {
            continue;
        }
        for u in children {
            report(g, a, u, dest_ns, &plane, ns_node, out);
        }
    }
}

fn report(
    g: &Graph,
    a: usize,
    u: usize,
    dest_ns: &str,
    plane: &str,
    ns_node: &Node,
    out: &mut Sink,
) {
    let child: &Object = &g.units[u].obj;
    let span = child
        .root
        .entry("metadata")
        .map_or(child.root.span, |e| e.key.span);
    let f = out.report(
        span,
        format!(
            "{} has no metadata.namespace, so its parent, Application {}, creates it in its destination namespace `{dest_ns}`; the application controller only reconciles Applications in `{plane}` (unless `application.namespaces` enables `{dest_ns}`), so this child is never synced",
            child.display(),
            app_name(g, a)
        ),
    );
    f.about(u, child)
        .label(format!("no namespace: created in `{dest_ns}`"))
        .also(ns_node.span, "the parent's destination namespace")
        .help(format!(
            "set `metadata.namespace: {plane}` on the child Application (or `namespace: {plane}` in the kustomization that renders it)"
        ));
    f.applications = vec![app_name(g, a)];
}
