//! From rendered template files to the documents `helm template` prints: helm v3.17.2
//! `pkg/releaseutil/manifest.go` (`SplitManifests`), `manifest_sorter.go` (hooks),
//! `pkg/action/action.go` (`renderResources`, CRDs) and `cmd/helm/template.go` (tests).

use super::chart::Chart;
use super::Traced;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::LazyLock;

/// One document of the output, with the file it came from as Helm names it
/// (`podinfo/templates/deployment.yaml`, `podinfo/crds/crd.yaml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub source: String,
    /// The file on disk.
    pub path: PathBuf,
    pub text: String,
    pub kind: ManifestKind,
    /// Where the text comes from, stretch by stretch, in order; empty for a CRD file, which
    /// is printed as written.
    pub traced: Vec<Traced>,
}

/// What one template file rendered to, with where each stretch came from.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub name: String,
    pub path: PathBuf,
    pub out: String,
    pub traced: Vec<Traced>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    /// A file of a `crds/` folder, printed as written with `--include-crds`.
    Crd,
    Resource,
    /// Annotated `helm.sh/hook`: printed after the resources; Argo CD maps the hook.
    Hook,
}

/// The hook events Helm knows; a document naming another is dropped.
const EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// The CRD files of the chart and its enabled subcharts (`Chart.CRDObjects`), whole.
pub fn crds(chart: &Chart) -> Vec<Manifest> {
    let mut out = Vec::new();
    crds_of(chart, &chart.name, &mut out, 0);
    out
}

fn crds_of(c: &Chart, full: &str, out: &mut Vec<Manifest>, depth: usize) {
    if depth > 64 {
        return;
    }
    for (name, data) in &c.files {
        let manifest = [".yaml", ".yml", ".json"]
            .iter()
            .any(|x| name.to_ascii_lowercase().ends_with(x));
        if name.starts_with("crds/") && manifest {
            out.push(Manifest {
                source: format!("{full}/{name}"),
                path: c.dir.join(name),
                // Printed with a line break after it, as `helm template` prints it.
                text: text_of(data) + "\n",
                kind: ManifestKind::Crd,
                traced: Vec::new(),
            });
        }
    }
    for sub in &c.subcharts {
        crds_of(sub, &format!("{full}/charts/{}", sub.name), out, depth + 1);
    }
}

/// A file's bytes as text, as Go's `string(bytes)` prints them. The check for valid UTF-8
/// alone runs first: CRD files are the bulk of a large chart, and always valid.
fn text_of(data: &[u8]) -> String {
    match std::str::from_utf8(data) {
        Ok(text) => text.to_string(),
        Err(_) => String::from_utf8_lossy(data).into_owned(),
    }
}

// Go's `\s` is ASCII whitespace only.
static SEPARATOR: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*").ok());

/// `SplitManifests`: documents separated by `---` wherever it starts a line, trimmed, each
/// with its offset in `content`.
fn split_at(content: &str) -> Vec<(usize, &str)> {
    let start = content.len() - content.trim_start().len();
    let trimmed = content.trim();
    let Some(sep) = SEPARATOR.as_ref() else {
        return vec![(start, trimmed)];
    };
    let mut out = Vec::new();
    let mut from = 0;
    let mut push = |a: usize, b: usize| {
        let piece = &trimmed[a..b];
        let lead = piece.len() - piece.trim_start().len();
        let doc = piece.trim();
        if !doc.is_empty() {
            out.push((start + a + lead, doc));
        }
    };
    for m in sep.find_iter(trimmed) {
        push(from, m.start());
        from = m.end();
    }
    push(from, trimmed.len());
    out
}

/// The stretches of `traced` that make up `len` bytes from `at`, counted from `at`.
fn rebase(traced: &[Traced], at: usize, len: usize) -> Vec<Traced> {
    let first = traced.partition_point(|t| t.out <= at).saturating_sub(1);
    traced
        .get(first..)
        .unwrap_or_default()
        .iter()
        .take_while(|t| t.out < at + len)
        .map(|t| {
            let mut t = t.clone();
            if t.out < at {
                if t.copied {
                    t.src.0 = (t.src.0 + (at - t.out)).min(t.src.1);
                }
                t.out = 0;
            } else {
                t.out -= at;
            }
            t
        })
        .collect()
}

/// What Helm reads of a document to sort it (releaseutil's `SimpleHead`: apiVersion, kind,
/// metadata), after checking that all of it is YAML. The bodies of the large top-level keys
/// are checked but not built: a chart's CRDs reach megabytes.
fn read_head(doc: &str) -> Result<Value, String> {
    const BODIES: &[&[&str]] = &[
        &["spec"],
        &["data"],
        &["stringData"],
        &["binaryData"],
        &["rules"],
        &["webhooks"],
        &["items"],
        &["status"],
    ];
    let skip = |_: &[crate::yaml::Entry], _: usize| true;
    let prune = crate::yaml::Prune {
        paths: BODIES,
        skip: &skip,
    };
    super::values::first_document(crate::yaml::parse_pruned(
        0,
        doc,
        crate::yaml::ParseLimits::default(),
        prune,
    ))
}

/// `SortManifests` and the printing of `helm template`: resources in install order, then
/// hooks (test hooks only without `skip_tests`). `files` are sorted by name. Rendering
/// places each file as it comes ([`place`]) and orders them at the end ([`order`]).
#[cfg(test)]
fn sort(files: Vec<Rendered>, skip_tests: bool) -> Result<Vec<Manifest>, String> {
    order(files.into_iter().map(|f| place(f, skip_tests)))
}

/// A document of the output with what orders it.
pub struct Placed {
    /// For a hook, its weight; `None` for a resource.
    hook: Option<i64>,
    rank: usize,
    manifest: Manifest,
}

/// The documents of one rendered file, each with its place in the output, or the error
/// that stops `helm template`. Files are placed independently of each other, so that this
/// can run beside the rendering of the next ones.
pub fn place(file: Rendered, skip_tests: bool) -> Result<Vec<Placed>, String> {
    let (path, disk, content) = (&file.name, &file.path, &file.out);
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut out = Vec::new();
    if base.starts_with('_') || content.trim().is_empty() {
        return Ok(out);
    }
    for (at, doc) in split_at(content) {
        let traced = rebase(&file.traced, at, doc.len());
        // `helm template` prints each document with a line break after it: a block
        // scalar that ends the document keeps its own.
        let doc = doc.to_string() + "\n";
        let head = read_head(&doc).map_err(|e| format!("YAML parse error on {path}: {e}"))?;
        let annotations = head
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object);
        let rank = rank(head.get("kind").and_then(Value::as_str).unwrap_or(""));
        let manifest = |kind| Manifest {
            source: path.clone(),
            path: disk.clone(),
            text: doc,
            kind,
            traced,
        };
        let Some(hook) = annotations.and_then(|a| a.get("helm.sh/hook")) else {
            out.push(Placed {
                hook: None,
                rank,
                manifest: manifest(ManifestKind::Resource),
            });
            continue;
        };
        let events: Vec<String> = hook
            .as_str()
            .unwrap_or("")
            .split(',')
            .map(|e| e.trim().to_ascii_lowercase())
            .collect();
        if !events.iter().all(|e| EVENTS.contains(&e.as_str())) {
            continue;
        }
        let test = events.iter().any(|e| e == "test" || e == "test-success");
        if skip_tests && test {
            continue;
        }
        let weight = annotations
            .and_then(|a| a.get("helm.sh/hook-weight"))
            .and_then(Value::as_str)
            .and_then(|w| w.parse::<i64>().ok())
            .unwrap_or(0);
        out.push(Placed {
            hook: Some(weight),
            rank,
            manifest: manifest(ManifestKind::Hook),
        });
    }
    Ok(out)
}

/// The output of files placed by [`place`], given in the order of their names: the first
/// error among them, or the documents in order.
pub fn order(
    files: impl IntoIterator<Item = Result<Vec<Placed>, String>>,
) -> Result<Vec<Manifest>, String> {
    let mut generic = Vec::new();
    let mut hooks = Vec::new();
    for placed in files {
        for p in placed? {
            match p.hook {
                None => generic.push(p),
                Some(_) => hooks.push(p),
            }
        }
    }
    // sortManifestsByKind: stable, by the install order of kinds, unknown kinds last.
    generic.sort_by_key(|p| p.rank);
    hooks.sort_by_key(|p| (p.hook, p.rank));
    Ok(generic
        .into_iter()
        .chain(hooks)
        .map(|p| p.manifest)
        .collect())
}

/// `InstallOrder` of `pkg/releaseutil/kind_sorter.go`.
fn rank(kind: &str) -> usize {
    const ORDER: &[&str] = &[
        "PriorityClass",
        "Namespace",
        "NetworkPolicy",
        "ResourceQuota",
        "LimitRange",
        "PodSecurityPolicy",
        "PodDisruptionBudget",
        "ServiceAccount",
        "Secret",
        "SecretList",
        "ConfigMap",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleList",
        "ClusterRoleBinding",
        "ClusterRoleBindingList",
        "Role",
        "RoleList",
        "RoleBinding",
        "RoleBindingList",
        "Service",
        "DaemonSet",
        "Pod",
        "ReplicationController",
        "ReplicaSet",
        "Deployment",
        "HorizontalPodAutoscaler",
        "StatefulSet",
        "Job",
        "CronJob",
        "IngressClass",
        "Ingress",
        "APIService",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ];
    ORDER.iter().position(|k| *k == kind).unwrap_or(ORDER.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_where_helm_splits_them() {
        let split = |text: &str| -> Vec<String> {
            split_at(text)
                .into_iter()
                .map(|(_, d)| d.to_string())
                .collect()
        };
        assert_eq!(split("a: 1\n---\nb: 2\n"), vec!["a: 1", "b: 2"]);
        assert_eq!(split("---\na: 1\n  \n---  \n\n"), vec!["a: 1"]);
        assert_eq!(split("x: |\n  y\n---z: 1"), vec!["x: |\n  y", "z: 1"]);
        assert!(split("   \n").is_empty());
        let text = "\n a: 1\n---\n  b: 2\n";
        for (at, doc) in split_at(text) {
            assert_eq!(&text[at..at + doc.len()], doc);
        }
    }

    #[test]
    fn unknown_hooks_are_dropped_and_tests_skipped_on_request() {
        let hook =
            |h: &str| format!("kind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: {h}\n");
        let file = |name: &str, out: String| Rendered {
            name: name.to_string(),
            path: PathBuf::new(),
            out,
            traced: Vec::new(),
        };
        let files = vec![
            file("c/templates/a.yaml", hook("test")),
            file("c/templates/b.yaml", hook("made-up")),
            file("c/templates/c.yaml", "kind: Service\n".to_string()),
            file("c/templates/_p.tpl", "kind: Secret\n".to_string()),
        ];
        let all = sort(files.clone(), false).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].kind, ManifestKind::Hook);
        assert_eq!(sort(files, true).unwrap().len(), 1);
    }
}
