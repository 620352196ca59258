//! The built-in transformers, in kustomize's fixed order: patches, namespace, name prefix and
//! suffix, labels, annotations, JSON 6902 patches, replicas, images.

use super::scope::certainly_cluster_scoped;
use super::{Kustomizer, Res};
use crate::model::Object;
use crate::yaml::{self, Node, Span};
use foldhash::HashSet;
use std::path::Path;

/// Where the pod spec of a workload lives.
pub(super) fn pod_spec_path(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => &["spec", "template", "spec"],
        "CronJob" => &["spec", "jobTemplate", "spec", "template", "spec"],
        "Pod" => &["spec"],
        _ => return None,
    })
}

/// Template metadata paths that labels and annotations reach.
fn template_meta_paths(kind: &str) -> &'static [&'static [&'static str]] {
    match kind {
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => &[&["spec", "template", "metadata"]],
        "CronJob" => &[
            &["spec", "jobTemplate", "metadata"],
            &["spec", "jobTemplate", "spec", "template", "metadata"],
        ],
        _ => &[],
    }
}

impl Kustomizer<'_> {
    pub(super) fn transform(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        for item in k
            .get("patchesStrategicMerge")
            .map(Node::items)
            .unwrap_or(&[])
        {
            let inline = item
                .as_str()
                .is_some_and(|s| s.contains('\n') || s.contains(": "));
            for patch in self.patch_docs(dir, item, inline) {
                self.smp_by_identity(patch, item.span, res);
            }
        }
        for item in k.get("patches").map(Node::items).unwrap_or(&[]) {
            self.patch(dir, item, res);
        }
        if let Some(ns) = k.get("namespace").filter(|n| !n.is_null()) {
            if let Some(name) = ns.as_str() {
                set_namespace(res, name, ns.span, &mut self.ns_spans);
            }
        }
        let prefix = k.get("namePrefix").filter(|n| !n.is_null());
        let suffix = k.get("nameSuffix").filter(|n| !n.is_null());
        if prefix.is_some() || suffix.is_some() {
            let p = prefix.and_then(Node::as_str).unwrap_or("");
            let s = suffix.and_then(Node::as_str).unwrap_or("");
            let span = prefix.or(suffix).map_or(k.span, |n| n.span);
            for r in res.iter_mut() {
                if !renames_skip(&r.obj) {
                    if let Some(name) = r.obj.name.clone() {
                        r.set_name(format!("{p}{name}{s}"), span);
                    }
                }
            }
        }
        if let Some(labels) = k.get("commonLabels").filter(|n| n.is_map()) {
            add_labels(res, labels, true, true);
        }
        for l in k.get("labels").map(Node::items).unwrap_or(&[]) {
            if let Some(pairs) = l.get("pairs").filter(|n| n.is_map()) {
                let flag = |key| {
                    l.get(key)
                        .and_then(Node::as_scalar)
                        .and_then(yaml::typing::as_bool)
                        .unwrap_or(false)
                };
                let selectors = flag("includeSelectors");
                add_labels(res, pairs, selectors, selectors || flag("includeTemplates"));
            }
        }
        if let Some(annotations) = k.get("commonAnnotations").filter(|n| n.is_map()) {
            for r in res.iter_mut() {
                let kind = r.obj.kind.clone();
                let span = annotations.span;
                merge_pairs(
                    r.obj
                        .root
                        .map_at("metadata", span)
                        .map_at("annotations", span),
                    annotations,
                );
                for path in template_meta_paths(&kind) {
                    if let Some(meta) = ensure_path(&mut r.obj.root, path, span) {
                        merge_pairs(meta.map_at("annotations", span), annotations);
                    }
                }
            }
        }
        for item in k.get("patchesJson6902").map(Node::items).unwrap_or(&[]) {
            let docs = match (item.get("path"), item.get("patch")) {
                (Some(p), _) => self.patch_docs(dir, p, false),
                (None, Some(p)) => self.patch_docs(dir, p, true),
                _ => Vec::new(),
            };
            let target = item.get("target");
            for ops in docs {
                self.json6902(target, &ops, item.span, res);
            }
        }
        for r in k.get("replicas").map(Node::items).unwrap_or(&[]) {
            let (Some(name), Some(count)) = (r.str_at("name"), r.get("count")) else {
                continue;
            };
            for x in res.iter_mut() {
                let scalable = matches!(
                    x.obj.kind.as_str(),
                    "Deployment" | "ReplicaSet" | "StatefulSet" | "ReplicationController"
                );
                if scalable && x.named(name) {
                    x.obj.root.map_at("spec", count.span).set(
                        "replicas",
                        count.clone(),
                        count.span,
                    );
                }
            }
        }
        for image in k.get("images").map(Node::items).unwrap_or(&[]) {
            for r in res.iter_mut() {
                set_images(&mut r.obj.root, image);
            }
        }
        self.replacements(dir, k, res);
    }
}

/// `nginx=registry/nginx:1.27`, `nginx:1.27` or `nginx@sha256:...` as a kustomize `images` entry.
pub(super) fn image_override(text: &str, span: Span) -> Node {
    let (name, target) = text.split_once('=').unwrap_or(("", text));
    let (reference, digest) = match target.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (target, None),
    };
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    let (new_name, tag) = match reference[slash..].find(':') {
        Some(i) => (&reference[..slash + i], Some(&reference[slash + i + 1..])),
        None => (reference, None),
    };
    let mut m = Node::empty_map(span);
    let name = if name.is_empty() { new_name } else { name };
    m.set("name", Node::string(name, span), span);
    if new_name != name {
        m.set("newName", Node::string(new_name, span), span);
    }
    if let Some(t) = tag {
        m.set("newTag", Node::string(t, span), span);
    }
    if let Some(d) = digest {
        m.set("digest", Node::string(d, span), span);
    }
    m
}

pub(super) fn merge_pairs(dst: &mut Node, pairs: &Node) {
    for e in pairs.entries() {
        if let Some(k) = e.key.as_str() {
            let v = match e.value.as_str() {
                // Label values are strings even when written as numbers or booleans.
                Some(s) => Node::string(s, e.value.span),
                None => e.value.clone(),
            };
            dst.set(k, v, e.key.span);
        }
    }
}

fn ensure_path<'n>(root: &'n mut Node, path: &[&str], span: Span) -> Option<&'n mut Node> {
    // Only where the object already has the parent structure: a workload's template.
    let (last, init) = path.split_last()?;
    let parent = root.path_mut(init)?;
    Some(parent.map_at(last, span))
}

fn add_labels(res: &mut [Res], labels: &Node, selectors: bool, templates: bool) {
    for r in res.iter_mut() {
        let kind = r.obj.kind.clone();
        let span = labels.span;
        merge_pairs(
            r.obj.root.map_at("metadata", span).map_at("labels", span),
            labels,
        );
        if templates {
            for path in template_meta_paths(&kind) {
                if let Some(meta) = ensure_path(&mut r.obj.root, path, span) {
                    merge_pairs(meta.map_at("labels", span), labels);
                }
            }
        }
        if !selectors {
            continue;
        }
        let selector: Option<(&[&str], bool)> = match kind.as_str() {
            "Service" | "ReplicationController" => Some((&["spec", "selector"], true)),
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => {
                Some((&["spec", "selector", "matchLabels"], true))
            }
            "Job" => Some((&["spec", "selector", "matchLabels"], false)),
            "PodDisruptionBudget" => Some((&["spec", "selector", "matchLabels"], false)),
            "CronJob" => Some((
                &["spec", "jobTemplate", "spec", "selector", "matchLabels"],
                false,
            )),
            "NetworkPolicy" => Some((&["spec", "podSelector", "matchLabels"], false)),
            _ => None,
        };
        // Selectors inside a pod template and a NetworkPolicy follow, where they exist.
        let pod = pod_spec_path(&kind).unwrap_or(&[]);
        if !pod.is_empty() {
            for affinity in ["podAffinity", "podAntiAffinity"] {
                for (list, term) in [
                    ("requiredDuringSchedulingIgnoredDuringExecution", &[][..]),
                    (
                        "preferredDuringSchedulingIgnoredDuringExecution",
                        &["podAffinityTerm"][..],
                    ),
                ] {
                    let mut path: Vec<&str> = pod.to_vec();
                    path.extend(["affinity", affinity, list, "*"]);
                    path.extend(term);
                    path.extend(["labelSelector", "matchLabels"]);
                    for_each_at(&mut r.obj.root, &path, &mut |m| merge_pairs(m, labels));
                }
            }
        }
        if kind == "StatefulSet" {
            if let Some(templates) = r
                .obj
                .root
                .path_mut(&["spec", "volumeClaimTemplates"])
                .and_then(Node::items_mut)
            {
                for t in templates {
                    merge_pairs(t.map_at("metadata", span).map_at("labels", span), labels);
                }
            }
        }
        if kind == "NetworkPolicy" {
            for path in [
                &[
                    "spec",
                    "ingress",
                    "*",
                    "from",
                    "*",
                    "podSelector",
                    "matchLabels",
                ][..],
                &[
                    "spec",
                    "egress",
                    "*",
                    "to",
                    "*",
                    "podSelector",
                    "matchLabels",
                ][..],
            ] {
                for_each_at(&mut r.obj.root, path, &mut |m| merge_pairs(m, labels));
            }
        }
        if let Some((path, create)) = selector {
            let target = if create {
                ensure_path_all(&mut r.obj.root, path, span)
            } else {
                r.obj.root.path_mut(path)
            };
            if let Some(t) = target {
                merge_pairs(t, labels);
            }
        }
    }
}

/// Calls `f` on every mapping at `path` (`*` stepping into each list item).
fn for_each_at(node: &mut Node, path: &[&str], f: &mut dyn FnMut(&mut Node)) {
    let Some((first, rest)) = path.split_first() else {
        if node.is_map() {
            f(node);
        }
        return;
    };
    if *first == "*" {
        for item in node.items_mut().into_iter().flatten() {
            for_each_at(item, rest, f);
        }
    } else if let Some(child) = node.get_mut(first) {
        for_each_at(child, rest, f);
    }
}

fn ensure_path_all<'n>(root: &'n mut Node, path: &[&str], span: Span) -> Option<&'n mut Node> {
    let mut node = root;
    for key in path {
        node = node.map_at(key, span);
    }
    Some(node)
}

/// Sets the namespace of every namespaced object. A RoleBinding subject follows when it names
/// a ServiceAccount of this build and its namespace is unset, `default`, or one kustomize set.
fn set_namespace(res: &mut [Res], ns: &str, span: Span, ns_spans: &mut HashSet<Span>) {
    ns_spans.insert(span);
    // Each ServiceAccount of the build by every name it has had, with the namespace it was
    // written with ("default" when none).
    let accounts: HashSet<(String, String)> = res
        .iter()
        .filter(|r| r.obj.is("", "ServiceAccount"))
        .flat_map(|r| {
            let ns = r.orig_ns.clone().unwrap_or_else(|| "default".into());
            r.obj
                .name
                .iter()
                .chain(&r.old_names)
                .map(move |n| (n.clone(), ns.clone()))
        })
        .collect();
    for r in res.iter_mut() {
        if matches!(r.obj.kind.as_str(), "RoleBinding" | "ClusterRoleBinding") {
            for s in r
                .obj
                .root
                .get_mut("subjects")
                .and_then(Node::items_mut)
                .into_iter()
                .flatten()
            {
                // kustomize's name reference finds the account a subject names in the
                // namespace the subject gives, and moves the subject with it
                // (`api/filters/nameref/nameref.go`, `setMapping`, kustomize v5.5.0).
                let name = s.str_at("name").unwrap_or("");
                let is_account = s.str_at("kind") == Some("ServiceAccount");
                let (ours, movable) = match s.get("namespace") {
                    None => (accounts.iter().any(|(n, _)| n == name), true),
                    Some(n) if ns_spans.contains(&n.span) => {
                        (accounts.iter().any(|(a, _)| a == name), true)
                    }
                    Some(n) => {
                        let at = n.as_str().unwrap_or("");
                        let at = if at.is_empty() { "default" } else { at };
                        (accounts.contains(&(name.to_string(), at.to_string())), true)
                    }
                };
                let ours = ours && is_account;
                // Any subject named `default` is moved, whatever it is.
                if (ours && movable) || s.str_at("name") == Some("default") {
                    s.set("namespace", Node::string(ns, span), span);
                }
            }
        }
        // kustomize renames a `v1` Namespace object itself to the new namespace, and points
        // an APIService or a CRD's conversion webhook at its Service in it
        // (`api/internal/konfig/builtinpluginconsts/namespace.go`, kustomize v5.5.0).
        if r.obj.kind == "Namespace" && r.obj.api_version == "v1" {
            r.set_name(ns.to_string(), span);
        }
        if r.obj.kind == "APIService" && r.obj.group() == "apiregistration.k8s.io" {
            r.obj.root.map_at("spec", span).map_at("service", span).set(
                "namespace",
                Node::string(ns, span),
                span,
            );
        }
        if r.obj.kind == "CustomResourceDefinition" && r.obj.group() == "apiextensions.k8s.io" {
            let path = ["spec", "conversion", "webhook", "clientConfig", "service"];
            if let Some(service) = r.obj.root.path_mut(&path).filter(|n| n.is_map()) {
                service.set("namespace", Node::string(ns, span), span);
            }
        }
        if certainly_cluster_scoped(&r.obj.api_version, &r.obj.kind) {
            continue;
        }
        r.obj
            .root
            .map_at("metadata", span)
            .set("namespace", Node::string(ns, span), span);
        r.obj.namespace = Some(ns.to_string());
    }
}

/// Kinds whose names namePrefix and nameSuffix leave alone.
fn renames_skip(obj: &Object) -> bool {
    (obj.kind == "CustomResourceDefinition" && obj.group() == "apiextensions.k8s.io")
        || obj.is("", "Namespace")
}

/// `images:` entries apply to every container and init container, wherever it sits.
fn set_images(node: &mut Node, image: &Node) {
    let Some(name) = image.str_at("name") else {
        return;
    };
    let span = ["digest", "newTag", "newName"]
        .iter()
        .find_map(|k| image.get(k))
        .map_or(image.span, |n| n.span);
    // Found first, then changed: only the branches that lead to a retagged container are
    // made the object's own, the rest stays shared with the base it was rendered from.
    let mut found = Vec::new();
    find_retags(node, name, image, &mut Vec::new(), &mut found);
    node.write_at(found, |c, new| {
        c.set("image", Node::string(new, span), span)
    });
}

/// The containers and init containers below `node` whose image `image` changes, each by its
/// path of child positions, with its new image.
fn find_retags(
    node: &Node,
    name: &str,
    image: &Node,
    at: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, String)>,
) {
    for (i, key, child) in node.children() {
        at.push(i);
        if matches!(key, Some("containers" | "initContainers")) {
            for (j, c) in child.items().iter().enumerate() {
                if let Some(new) = c.str_at("image").and_then(|cur| retag(cur, name, image)) {
                    at.push(j);
                    out.push((at.clone(), new));
                    at.pop();
                }
            }
        } else {
            find_retags(child, name, image, at, out);
        }
        at.pop();
    }
}

fn retag(current: &str, name: &str, image: &Node) -> Option<String> {
    let (base, reference) = match current.find('@') {
        Some(i) => (&current[..i], &current[i..]),
        None => {
            let slash = current.rfind('/').map_or(0, |i| i + 1);
            match current[slash..].find(':') {
                Some(i) => (&current[..slash + i], &current[slash + i..]),
                None => (current, ""),
            }
        }
    };
    if base != name {
        return None;
    }
    let new_name = image.str_at("newName").unwrap_or(base);
    let reference = if let Some(d) = image.str_at("digest") {
        format!("@{d}")
    } else if let Some(t) = image.get("newTag").and_then(Node::as_str) {
        format!(":{t}")
    } else {
        reference.to_string()
    };
    Some(format!("{new_name}{reference}"))
}
