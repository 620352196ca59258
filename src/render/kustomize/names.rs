//! The end of a build: hash suffixes, and references by name that follow renamed objects.

use super::config::{split_path, visit_path, NameRef};
use super::generators::add_hashes;
use super::replacements::Fail;
use super::transformers::pod_spec_path;
use super::Res;
use crate::model::Object;
use crate::yaml::{self, Node, Span};
use foldhash::{HashMap, HashSet};

/// The end of a build: hash suffixes, then the references to renamed objects; then what
/// kustomize's writer drops from every object it prints.
pub(super) fn settle(mut res: Vec<Res>, refs: &[NameRef]) -> (Vec<Object>, Vec<(Span, Fail)>) {
    add_hashes(&mut res);
    fix_references(&mut res, refs);
    let fails = super::vars::resolve(&mut res);
    let objects = res
        .into_iter()
        .map(|mut r| {
            drop_empty_annotations(&mut r.obj);
            r.obj
        })
        .collect();
    (objects, fails)
}

/// `metadata.annotations` that is empty or null is not written: kustomize's output writer
/// clears it (`kyaml/kio/byteio_writer.go` calls `yaml.ClearEmptyAnnotations`,
/// `kyaml/yaml/kfns.go`, kustomize v5.5.0). Labels are written as they are. Only the printed
/// build does this: inside a build an empty map is still there for a patch to add to.
fn drop_empty_annotations(obj: &mut Object) {
    let Some(meta) = obj.root.get_mut("metadata") else {
        return;
    };
    let empty = meta
        .get("annotations")
        .is_some_and(|a| a.is_null() || (a.is_map() && a.entries().is_empty()));
    if empty {
        meta.remove("annotations");
        return;
    }
    // kustomize rewrites every object's annotations as a map of strings while it builds (its
    // own bookkeeping annotations come and go), so `true` or `5` comes out as the text it was
    // written as. Labels are left as they are.
    let Some(entries) = meta.get("annotations").map(Node::entries) else {
        return;
    };
    let typed = |v: &Node| {
        v.as_scalar().is_some_and(|s| {
            yaml::typing::yaml11(s) != yaml::typing::Kind::Str
                || yaml::typing::yaml12(s) != yaml::typing::Kind::Str
        })
    };
    if !entries.iter().any(|e| typed(&e.value)) {
        return;
    }
    if let Some(entries) = meta.get_mut("annotations").and_then(Node::entries_mut) {
        for e in entries.iter_mut() {
            if typed(&e.value) {
                let text = e.value.as_str().unwrap_or_default().to_string();
                e.value = Node::string(text, e.value.span);
            }
        }
    }
}

/// Where one kind of object is referred to by name.
struct RefSpec {
    target: &'static str,
    path: &'static [&'static str],
}

/// References inside a pod spec.
#[rustfmt::skip]
const POD_REFS: &[RefSpec] = &[
    RefSpec { target: "ConfigMap", path: &["volumes", "*", "configMap", "name"] },
    RefSpec { target: "ConfigMap", path: &["volumes", "*", "projected", "sources", "*", "configMap", "name"] },
    RefSpec { target: "Secret", path: &["volumes", "*", "secret", "secretName"] },
    RefSpec { target: "Secret", path: &["volumes", "*", "projected", "sources", "*", "secret", "name"] },
    RefSpec { target: "Secret", path: &["imagePullSecrets", "*", "name"] },
    RefSpec { target: "ServiceAccount", path: &["serviceAccountName"] },
    RefSpec { target: "PersistentVolumeClaim", path: &["volumes", "*", "persistentVolumeClaim", "claimName"] },
];

/// References inside each container and init container.
#[rustfmt::skip]
const CONTAINER_REFS: &[RefSpec] = &[
    RefSpec { target: "ConfigMap", path: &["env", "*", "valueFrom", "configMapKeyRef", "name"] },
    RefSpec { target: "ConfigMap", path: &["envFrom", "*", "configMapRef", "name"] },
    RefSpec { target: "Secret", path: &["env", "*", "valueFrom", "secretKeyRef", "name"] },
    RefSpec { target: "Secret", path: &["envFrom", "*", "secretRef", "name"] },
];

#[rustfmt::skip]
const OBJECT_REFS: &[(&str, RefSpec)] = &[
    ("StatefulSet", RefSpec { target: "Service", path: &["spec", "serviceName"] }),
    ("Ingress", RefSpec { target: "Service", path: &["spec", "rules", "*", "http", "paths", "*", "backend", "service", "name"] }),
    ("Ingress", RefSpec { target: "Service", path: &["spec", "defaultBackend", "service", "name"] }),
    ("Ingress", RefSpec { target: "Secret", path: &["spec", "tls", "*", "secretName"] }),
    ("ServiceAccount", RefSpec { target: "Secret", path: &["secrets", "*", "name"] }),
    ("ServiceAccount", RefSpec { target: "Secret", path: &["imagePullSecrets", "*", "name"] }),
    ("RoleBinding", RefSpec { target: "ServiceAccount", path: &["subjects", "*", "name"] }),
    ("ClusterRoleBinding", RefSpec { target: "ServiceAccount", path: &["subjects", "*", "name"] }),
];

/// References kustomize follows besides those of pod specs and [`OBJECT_REFS`], as
/// `(target kind, referrer kind, field spec path)`
/// (`api/internal/konfig/builtinpluginconsts/namereference.go`, kustomize v5.5.0). A field that
/// holds a list names one object with each item; a mapping names one with its `name`.
#[rustfmt::skip]
const MORE_REFS: &[(&str, &str, &str)] = &[
    ("ConfigMap", "Role", "rules/resourceNames"),
    ("ConfigMap", "ClusterRole", "rules/resourceNames"),
    ("ConfigMap", "Node", "spec/configSource/configMap"),
    ("ConfigMap", "Ingress", "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap"),
    ("Secret", "Role", "rules/resourceNames"),
    ("Secret", "ClusterRole", "rules/resourceNames"),
    ("Secret", "Ingress", "metadata/annotations/ingress.kubernetes.io\\/auth-secret"),
    ("Secret", "Ingress", "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret"),
    ("Secret", "Ingress", "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret"),
    ("Secret", "StorageClass", "parameters/secretName"),
    ("Secret", "StorageClass", "parameters/adminSecretName"),
    ("Secret", "StorageClass", "parameters/userSecretName"),
    ("Secret", "StorageClass", "parameters/secretRef"),
    ("Secret", "PersistentVolume", "spec/azureFile/secretName"),
    ("Service", "Ingress", "spec/rules/http/paths/backend/serviceName"),
    ("Service", "Ingress", "spec/backend/serviceName"),
    ("Service", "APIService", "spec/service/name"),
    ("Service", "ValidatingWebhookConfiguration", "webhooks/clientConfig/service"),
    ("Service", "MutatingWebhookConfiguration", "webhooks/clientConfig/service"),
    ("PersistentVolume", "PersistentVolumeClaim", "spec/volumeName"),
    ("PersistentVolume", "ClusterRole", "rules/resourceNames"),
    ("StorageClass", "PersistentVolume", "spec/storageClassName"),
    ("StorageClass", "PersistentVolumeClaim", "spec/storageClassName"),
    ("StorageClass", "StatefulSet", "spec/volumeClaimTemplates/spec/storageClassName"),
    ("PriorityClass", "Pod", "spec/priorityClassName"),
    ("PriorityClass", "StatefulSet", "spec/template/spec/priorityClassName"),
    ("PriorityClass", "Deployment", "spec/template/spec/priorityClassName"),
    ("PriorityClass", "ReplicationController", "spec/template/spec/priorityClassName"),
    ("PriorityClass", "Job", "spec/template/spec/priorityClassName"),
    ("PriorityClass", "DaemonSet", "spec/template/spec/priorityClassName"),
    ("PriorityClass", "CronJob", "spec/jobTemplate/spec/template/spec/priorityClassName"),
    ("IngressClass", "Ingress", "spec/ingressClassName"),
    ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "spec/policyName"),
];

/// After prefixes, suffixes and hashes, references by name follow the objects they name:
/// kustomize's own references, and `refs` from `configurations:` files.
pub(super) fn fix_references(res: &mut [Res], refs: &[NameRef]) {
    let mut renamed: HashMap<(String, String), String> = HashMap::default();
    for r in res.iter() {
        if let Some(now) = &r.obj.name {
            for old in &r.old_names {
                renamed
                    .entry((r.obj.kind.clone(), old.clone()))
                    .or_insert_with(|| now.clone());
            }
        }
    }
    // A mapping that names an object (a webhook's `clientConfig.service`) is also given the
    // namespace of the object it names, renamed or not.
    let placed: HashMap<(String, String), String> = res
        .iter()
        .filter_map(|r| {
            let ns = r.obj.namespace.clone()?;
            Some(
                r.obj
                    .name
                    .iter()
                    .chain(&r.old_names)
                    .map(move |n| ((r.obj.kind.clone(), n.clone()), ns.clone()))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .collect();
    if renamed.is_empty() && placed.is_empty() {
        return;
    }
    let current: HashSet<(String, String)> = res
        .iter()
        .filter_map(|r| Some((r.obj.kind.clone(), r.obj.name.clone()?)))
        .collect();
    let lookup = |kind: &str, name: &str| {
        let key = (kind.to_string(), name.to_string());
        if current.contains(&key) {
            return None;
        }
        renamed.get(&key).cloned()
    };
    let more: Vec<NameRef> = MORE_REFS
        .iter()
        .map(|(target, referrer, path)| NameRef {
            target: (*target).to_string(),
            referrer: Some((*referrer).to_string()),
            path: split_path(path),
        })
        .chain(refs.iter().cloned())
        .collect();
    for r in res.iter_mut() {
        // Every reference is looked up before any is written: an object that names nothing
        // renamed stays shared with the base it was rendered from.
        let mut found = Vec::new();
        let mut moved: Vec<(Vec<usize>, String)> = Vec::new();
        let root = &r.obj.root;
        let kind = r.obj.kind.as_str();
        if let Some((mut at, pod)) = pod_spec_path(kind).and_then(|path| root.locate(path)) {
            for spec in POD_REFS {
                find_refs(
                    pod,
                    spec.path,
                    &|name| lookup(spec.target, name),
                    &mut at,
                    &mut found,
                );
            }
            for list in ["containers", "initContainers"] {
                let Some(l) = pod.entry_index(list) else {
                    continue;
                };
                for (i, c) in pod.entries()[l].value.items().iter().enumerate() {
                    at.extend([l, i]);
                    for spec in CONTAINER_REFS {
                        let lookup = |name: &str| lookup(spec.target, name);
                        find_refs(c, spec.path, &lookup, &mut at, &mut found);
                    }
                    at.truncate(at.len() - 2);
                }
            }
        }
        for (k, spec) in OBJECT_REFS {
            if *k != kind {
                continue;
            }
            if matches!(kind, "RoleBinding" | "ClusterRoleBinding") {
                let Some(at) = root.entry_index("subjects") else {
                    continue;
                };
                for (i, s) in root.entries()[at].value.items().iter().enumerate() {
                    // A subject that gives a namespace names the account in it only.
                    let in_ns = match s.str_at("namespace") {
                        None => true,
                        Some(ns) => s.str_at("name").is_some_and(|n| {
                            let found = lookup("ServiceAccount", n).unwrap_or(n.to_string());
                            let ns = if ns.is_empty() { "default" } else { ns };
                            let at = placed.get(&("ServiceAccount".to_string(), found));
                            at.map_or("default", String::as_str) == ns
                        }),
                    };
                    if in_ns && s.str_at("kind") == Some("ServiceAccount") {
                        let lookup = |name: &str| lookup("ServiceAccount", name);
                        find_refs(s, &["name"], &lookup, &mut vec![at, i], &mut found);
                    }
                }
            } else {
                find_refs(
                    root,
                    spec.path,
                    &|name| lookup(spec.target, name),
                    &mut Vec::new(),
                    &mut found,
                );
            }
        }
        // References that carry their target's kind.
        let typed: &[(&[&str], &str, &str)] = &[
            (&["spec", "scaleTargetRef"], "name", "Deployment"),
            (&["roleRef"], "name", ""),
        ];
        for (at, field, default_kind) in typed {
            if kind == "HorizontalPodAutoscaler" || kind.ends_with("Binding") {
                if let Some((mut at, node)) = root.locate(at) {
                    let target = node.str_at("kind").unwrap_or(default_kind);
                    let lookup = |name: &str| lookup(target, name);
                    find_refs(node, &[field], &lookup, &mut at, &mut found);
                }
            }
        }
        for spec in &more {
            if spec.referrer.as_deref().is_some_and(|k| k != kind) {
                continue;
            }
            visit_path(root, &spec.path, &mut Vec::new(), &mut |at, node| {
                if let Some(new) = node.as_str().and_then(|n| lookup(&spec.target, n)) {
                    found.push((at.to_vec(), new));
                } else if let Some(i) = node.entry_index("name") {
                    let name = node.entries()[i].value.as_str().unwrap_or_default();
                    let new = lookup(&spec.target, name);
                    let key = (spec.target.clone(), new.clone().unwrap_or(name.to_string()));
                    if let Some(ns) = placed.get(&key) {
                        moved.push((at.to_vec(), ns.clone()));
                    }
                    if let Some(new) = new {
                        let mut at = at.to_vec();
                        at.push(i);
                        found.push((at, new));
                    }
                }
            });
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found.dedup_by(|a, b| a.0 == b.0);
        r.obj.root.write_at(found, |node, new| {
            let span = node.span;
            *node = Node::string(new, span);
        });
        r.obj.root.write_at(moved, |node, ns| {
            let span = node.span;
            node.set("namespace", Node::string(ns, span), span);
        });
    }
}

/// The string scalars at `path` below `node` (`*` for every item of a list) that `new_name`
/// renames, each by its path of child positions (`at` leads to `node`), with its new name.
fn find_refs(
    node: &Node,
    path: &[&str],
    new_name: &dyn Fn(&str) -> Option<String>,
    at: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, String)>,
) {
    let Some((first, rest)) = path.split_first() else {
        if let Some(new) = node.as_str().and_then(new_name) {
            out.push((at.clone(), new));
        }
        return;
    };
    let mut visit = |i: usize, child: &Node| {
        at.push(i);
        find_refs(child, rest, new_name, at, out);
        at.pop();
    };
    if *first == "*" {
        for (i, item) in node.items().iter().enumerate() {
            visit(i, item);
        }
    } else if let Some(i) = node.entry_index(first) {
        visit(i, &node.entries()[i].value);
    }
}
