//! Recognition: which documents are Kubernetes objects, and what they are.

use crate::yaml::{Comment, Document, FileId, Node, ParseLimits, Span, Value};
use std::path::Path;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Object {
    pub file: FileId,
    /// Position of the document in its file (0-based).
    pub doc: usize,
    /// Position inside a `kind: List`, when the object came from one.
    pub list_item: Option<usize>,
    pub api_version: String,
    pub kind: String,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub root: Node,
    /// Made by the render stage (a kustomize generator, an ApplicationSet) rather than
    /// written as a document.
    pub generated: bool,
}

impl Object {
    /// The API group: `argoproj.io` for `argoproj.io/v1alpha1`, empty for core `v1`.
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    pub fn version(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or(self.api_version.as_str(), |(_, v)| v)
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.kind == kind && self.group() == group
    }

    pub fn is_argocd(&self, kind: &str) -> bool {
        self.is("argoproj.io", kind)
    }

    pub fn spec(&self) -> Option<&Node> {
        self.root.get("spec")
    }

    /// `metadata.annotations[key]`.
    pub fn annotation(&self, key: &str) -> Option<&Node> {
        self.root.path(&["metadata", "annotations", key])
    }

    /// A short human identity: `Application argocd/checkout`.
    pub fn display(&self) -> String {
        match (&self.namespace, &self.name) {
            (Some(ns), Some(n)) => format!("{} {ns}/{n}", self.kind),
            (None, Some(n)) => format!("{} {n}", self.kind),
            _ => self.kind.clone(),
        }
    }

    /// The byte ranges whose text must never be shown: the values of a Secret.
    pub fn secret_value_spans(&self) -> Vec<Span> {
        if matches!(self.kind.as_str(), "Kustomization" | "Component") {
            return self.generator_literal_spans();
        }
        if self.group() == "external-secrets.io"
            && matches!(self.kind.as_str(), "SecretStore" | "ClusterSecretStore")
        {
            return self.fake_provider_spans();
        }
        if !self.is("", "Secret") {
            return Vec::new();
        }
        ["data", "stringData"]
            .iter()
            .filter_map(|k| self.root.get(k))
            .flat_map(|data| data.entries().iter().map(|e| e.value.span))
            .collect()
    }

    /// The secret values themselves, as the cluster would read them, for masking wherever
    /// else they are written: a Secret's `stringData`, its `data` decoded (and as written), a
    /// `secretGenerator`'s literals, a `fake` provider's values. A generator's files and env
    /// files are read by the renderer: their values come with the Secret it generates.
    pub fn secret_values(&self) -> Vec<String> {
        let scalars = |n: &Node| -> Vec<String> {
            n.entries()
                .iter()
                .filter_map(|e| e.value.as_str().map(str::to_string))
                .collect()
        };
        if matches!(self.kind.as_str(), "Kustomization" | "Component") {
            let generators = self.root.get("secretGenerator").map(Node::items);
            return generators
                .unwrap_or(&[])
                .iter()
                .flat_map(|g| g.get("literals").map(Node::items).unwrap_or(&[]))
                .filter_map(|item| item.as_str()?.split_once('='))
                .map(|(_, v)| {
                    let v = v.trim();
                    let quoted = v.len() >= 2
                        && ['"', '\'']
                            .iter()
                            .any(|q| v.starts_with(*q) && v.ends_with(*q));
                    if quoted { &v[1..v.len() - 1] } else { v }.to_string()
                })
                .collect();
        }
        if self.group() == "external-secrets.io"
            && matches!(self.kind.as_str(), "SecretStore" | "ClusterSecretStore")
        {
            let items = self.root.path(&["spec", "provider", "fake", "data"]);
            return items
                .map(Node::items)
                .unwrap_or(&[])
                .iter()
                .flat_map(|item| {
                    let value = item.get("value").and_then(Node::as_str).map(str::to_string);
                    let map = item.get("valueMap").map(scalars).unwrap_or_default();
                    value.into_iter().chain(map)
                })
                .collect();
        }
        if !self.is("", "Secret") {
            return Vec::new();
        }
        // Argo CD's declarative repository and cluster Secrets also name what they are for:
        // a repository URL, a cluster's server and name. Those are written again, as they
        // should be, in every Application that deploys there, and are no credential (a URL
        // with a user part still counts as one).
        let argocd = self
            .root
            .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
            .is_some();
        let scalars = |n: &Node| -> Vec<String> {
            n.entries()
                .iter()
                .filter(|e| {
                    let public = e
                        .key
                        .as_str()
                        .is_some_and(|k| ARGOCD_TARGET_KEYS.contains(&k));
                    let userinfo = e.value.as_str().is_some_and(|v| {
                        v.split_once("://").is_some_and(|(_, rest)| {
                            rest.split('/').next().is_some_and(|h| h.contains('@'))
                        })
                    });
                    !(argocd && public && !userinfo)
                })
                .filter_map(|e| e.value.as_str().map(str::to_string))
                .collect()
        };
        let mut out = self.root.get("stringData").map(scalars).unwrap_or_default();
        for written in self.root.get("data").map(scalars).unwrap_or_default() {
            out.extend(crate::redact::decode_data(&written));
            out.push(written);
        }
        out
    }
}

/// The keys of Argo CD's repository and cluster Secrets that say what the credentials are for,
/// not the credentials (argo-cd `util/db/repository_secrets.go`, `util/db/cluster.go`).
pub const ARGOCD_TARGET_KEYS: &[&str] = &[
    "name",
    "url",
    "server",
    "type",
    "project",
    "namespaces",
    "clusterResources",
    "shard",
];

impl Object {
    /// The External Secrets `fake` provider holds its secret values inline (`data[].value`,
    /// `data[].valueMap`).
    fn fake_provider_spans(&self) -> Vec<Span> {
        let items = self
            .root
            .path(&["spec", "provider", "fake", "data"])
            .map(Node::items)
            .unwrap_or(&[]);
        items
            .iter()
            .flat_map(|item| {
                let value = item.get("value").map(|v| v.span);
                let map = item
                    .get("valueMap")
                    .map(|m| m.entries().iter().map(|e| e.value.span).collect())
                    .unwrap_or_else(Vec::new);
                value.into_iter().chain(map)
            })
            .collect()
    }

    /// The values of a kustomization's `secretGenerator` literals (`KEY=value`): the part
    /// after `=` when the scalar is written on one line, else the whole item.
    fn generator_literal_spans(&self) -> Vec<Span> {
        let mut out = Vec::new();
        for g in self
            .root
            .get("secretGenerator")
            .map(Node::items)
            .unwrap_or(&[])
        {
            for item in g.get("literals").map(Node::items).unwrap_or(&[]) {
                let Some(s) = item.as_scalar() else { continue };
                let quote = match s.style {
                    crate::yaml::Style::Plain => 0,
                    crate::yaml::Style::SingleQuoted | crate::yaml::Style::DoubleQuoted => 1,
                    _ => {
                        out.push(item.span);
                        continue;
                    }
                };
                let single_line =
                    (item.span.end - item.span.start) as usize == s.text.len() + 2 * quote;
                match s.text.find('=') {
                    Some(eq) if single_line => out.push(Span::new(
                        item.span.file,
                        item.span.start as usize + quote + eq + 1,
                        item.span.end as usize - quote,
                    )),
                    _ => out.push(item.span),
                }
            }
        }
        out
    }
}

/// The API group of an `apiVersion`.
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Subtrees that no stage but kustomize reads, by `(group, kind, path)`: rules and the graph
/// never look there, so the parse stage does not build them ([`PRUNE`]) or drops them once the
/// file is recognised ([`Object::slim`]), and kustomize,
/// which may patch anything it renders, parses the file again (`render::Files::whole`). A
/// CRD's `versions` hold its OpenAPI schemas, most of its bytes; Argo CD's own install manifest
/// and the operators' CRD bundles are the largest files in most repositories.
const UNREAD: &[(&str, &str, &[&str])] = &[(
    "apiextensions.k8s.io",
    "CustomResourceDefinition",
    &["spec", "versions"],
)];

/// `UNREAD` for the parser: its paths, in a document whose root mapping holds the
/// `apiVersion` and `kind` it names, as far as the mapping is known when the path's key is
/// read.
pub const PRUNE: crate::yaml::Prune = crate::yaml::Prune {
    paths: &UNREAD_PATHS,
    skip: &|root, i| {
        let (group, kind, _) = UNREAD[i];
        crate::yaml::str_in(root, "kind") == Some(kind)
            && crate::yaml::str_in(root, "apiVersion").map(group_of) == Some(group)
    },
};

const UNREAD_PATHS: [&[&str]; UNREAD.len()] = {
    let mut paths: [&[&str]; UNREAD.len()] = [&[]; UNREAD.len()];
    let mut i = 0;
    while i < UNREAD.len() {
        assert!(UNREAD[i].2.len() <= crate::yaml::PRUNE_DEPTH);
        paths[i] = UNREAD[i].2;
        i += 1;
    }
    paths
};

/// Whether `root`, an object of `group` and `kind`, is a CRD that makes its kind
/// cluster-scoped: projects' cluster whitelists then apply to that kind.
pub fn declares_cluster_kind(group: &str, kind: &str, root: &Node) -> bool {
    group == "apiextensions.k8s.io"
        && kind == "CustomResourceDefinition"
        && root.path(&["spec", "scope"]).and_then(Node::as_str) == Some("Cluster")
}

impl Object {
    /// Drops the `UNREAD` subtrees, unless a suppression comment (`directives`) sits inside
    /// one, where it could cover a node there. What is dropped reads as an empty collection
    /// with its own span, so anything that points at it still points at the same text.
    /// Returns whether anything was dropped.
    pub fn slim(&mut self, directives: &[crate::yaml::Comment]) -> bool {
        let mut dropped = false;
        for (group, kind, path) in UNREAD {
            if !self.is(group, kind) {
                continue;
            }
            let Some((last, parents)) = path.split_last() else {
                continue;
            };
            let Some(entry) = self
                .root
                .path_mut(parents)
                .and_then(Node::entries_mut)
                .and_then(|e| e.iter_mut().rev().find(|e| e.key.as_str() == Some(last)))
            else {
                continue;
            };
            if entry.value.items().is_empty() && entry.value.entries().is_empty() {
                continue;
            }
            let (from, to) = (entry.key.span.end, entry.value.span.end);
            if directives
                .iter()
                .any(|c| c.span.file == entry.key.span.file && (from..=to).contains(&c.span.start))
            {
                continue;
            }
            // Emptied in place: the style (block or flow) and the span stay.
            match &mut entry.value.value {
                Value::Seq { items, .. } => *items = Default::default(),
                Value::Map { entries, .. } => *entries = Default::default(),
                Value::Scalar(_) => continue,
            }
            dropped = true;
        }
        dropped
    }
}

/// Turns a file's documents into objects. Documents that are not objects are returned apart:
/// kustomize may still read them as patches.
pub fn recognise(
    file: FileId,
    path: &Path,
    documents: Vec<Document>,
) -> (Vec<Object>, Vec<Document>) {
    let kustomization = crate::discover::is_kustomization_file(path);
    let mut out = Vec::new();
    let mut loose = Vec::new();
    for doc in documents {
        if kustomization {
            // kustomize accepts a kustomization without apiVersion/kind.
            out.push(Object {
                file,
                doc: doc.index,
                list_item: None,
                api_version: doc
                    .root
                    .str_at("apiVersion")
                    .unwrap_or("kustomize.config.k8s.io/v1beta1")
                    .to_string(),
                kind: doc
                    .root
                    .str_at("kind")
                    .unwrap_or("Kustomization")
                    .to_string(),
                name: None,
                namespace: None,
                root: doc.root,
                generated: false,
            });
            continue;
        }
        if doc.root.str_at("apiVersion").is_some() && doc.root.str_at("kind").is_some() {
            push_object(&mut out, file, doc.index, None, doc.root);
        } else {
            loose.push(doc);
        }
    }
    (out, loose)
}

fn push_object(
    out: &mut Vec<Object>,
    file: FileId,
    doc: usize,
    list_item: Option<usize>,
    root: Node,
) {
    let (Some(api_version), Some(kind)) = (root.str_at("apiVersion"), root.str_at("kind")) else {
        return;
    };
    let (api_version, kind) = (api_version.to_string(), kind.to_string());
    if list_item.is_none() && kind.ends_with("List") && root.get("items").is_some_and(Node::is_seq)
    {
        let Value::Map { entries, .. } = root.value else {
            return;
        };
        for entry in entries {
            if entry.key.as_str() == Some("items") {
                if let Value::Seq { items, .. } = entry.value.value {
                    for (i, item) in items.into_iter().enumerate() {
                        push_object(out, file, doc, Some(i), item);
                    }
                }
            }
        }
        return;
    }
    let meta = root.get("metadata");
    let name = meta.and_then(|m| m.str_at("name")).map(str::to_string);
    // An empty or null namespace is none, for the API server and for Argo CD, which gives a
    // namespaced object without one the destination's.
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .filter(|n| !n.is_null())
        .and_then(Node::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    out.push(Object {
        file,
        doc,
        list_item,
        api_version,
        kind,
        name,
        namespace,
        root,
        generated: false,
    });
}

/// What to mask in a file that does not parse, when it may hold secret values (it mentions a
/// Secret or a secretGenerator): no object tells where the values are, so every value on every
/// line is masked, and only keys, list dashes, comments, `apiVersion` and `kind` stay readable.
pub fn unparsed_secret_spans(file: FileId, text: &str) -> Vec<Span> {
    if !text.contains("Secret") && !text.contains("secretGenerator") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let mut start = indent;
        // List dashes, then a `key:`.
        while body[start..].starts_with("- ") {
            start += 2;
            start += body[start..].len() - body[start..].trim_start().len();
        }
        let rest = &body[start..];
        if !rest.starts_with('#') && !rest.is_empty() {
            let value = match rest.find(": ") {
                Some(colon) => {
                    let key = rest[..colon].trim_matches(['"', '\'', ' ']);
                    if matches!(key, "apiVersion" | "kind") {
                        None
                    } else {
                        Some(start + colon + 2)
                    }
                }
                None if rest.ends_with(':') => None,
                None => Some(start),
            };
            if let Some(v) = value.filter(|v| *v < body.len()) {
                out.push(Span::new(file, offset + v, offset + body.len()));
            }
        }
        offset += line.len();
    }
    out
}

/// What the parse stage hands over for one file: its objects, and the documents that are not
/// objects (JSON 6902 patches, for instance), which kustomize may still read.
#[derive(Debug, Default)]
pub struct FileDocs {
    pub objects: Vec<Arc<Object>>,
    pub loose: Vec<Document>,
    /// `# gitops-lint:` comments, for the suppression stage.
    pub directives: Vec<crate::yaml::Comment>,
    /// Set when what only kustomize reads was dropped ([`FileDocs::slim`]): the limits the
    /// text was parsed with, to parse it again whole (`render::Files::whole`).
    pub slimmed: Option<ParseLimits>,
}

impl FileDocs {
    /// What a parsed file holds for the later stages: its objects, the documents that are not
    /// objects, and its suppression comments.
    pub fn new(id: FileId, path: &Path, parsed: crate::yaml::ParsedFile) -> FileDocs {
        // Each collection is held for the whole run, so none keeps spare capacity: collecting
        // in place would keep the buffer of every comment (or of every `Object`) behind what
        // is kept.
        let mut directives: Vec<_> = parsed.comments.into_iter().filter(is_directive).collect();
        directives.shrink_to_fit();
        let (objects, mut loose) = recognise(id, path, parsed.documents);
        loose.shrink_to_fit();
        let mut shared = Vec::with_capacity(objects.len());
        shared.extend(objects.into_iter().map(Arc::new));
        FileDocs {
            objects: shared,
            loose,
            directives,
            slimmed: parsed.pruned,
        }
    }

    /// Drops what no stage but kustomize reads, while the file is the only one in hand: that
    /// is never held for the whole run. That is the documents that are not objects (Helm
    /// values, tool settings; kustomize reads them as patches), unless a suppression comment
    /// may be about them, and [`Object::slim`]'s subtrees.
    pub fn slim(&mut self, limits: ParseLimits) {
        let mut dropped = false;
        if self.directives.is_empty() && !self.loose.is_empty() {
            self.loose = Vec::new();
            dropped = true;
        }
        for obj in &mut self.objects {
            // Not shared yet: the objects were just made.
            if let Some(obj) = Arc::get_mut(obj) {
                dropped |= obj.slim(&self.directives);
            }
        }
        if dropped {
            self.slimmed = Some(limits);
        }
    }
}

/// The comments of a file that speak to gitops-lint, kept by the parse stage (misspelt ones
/// too, so they can be reported).
pub fn is_directive(comment: &Comment) -> bool {
    speaks_to_us(&comment.text)
}

/// Whether the text of a comment (after its `#`) is, or was meant as, a directive.
pub fn speaks_to_us(comment: &str) -> bool {
    let t = comment.trim_start();
    t.strip_prefix("gitops-lint")
        .is_some_and(|rest| rest.starts_with(':') || rest.starts_with(' ') && rest.contains('['))
}

#[cfg(test)]
mod tests {
    use crate::yaml::{self, ParseLimits};
    use std::path::Path;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.acme.io\nspec:\n  group: acme.io\n  names:\n    kind: Widget\n  scope: Cluster\n  versions:\n    - name: v1\n      schema:\n        openAPIV3Schema:\n          type: object\n";

    fn slimmed(text: &str) -> (bool, super::Object, super::Object) {
        let parsed = yaml::parse(0, text, ParseLimits::default());
        let docs = super::FileDocs::new(0, Path::new("crd.yaml"), parsed);
        let whole = (*docs.objects[0]).clone();
        let mut slim = whole.clone();
        let dropped = slim.slim(&docs.directives);
        (dropped, whole, slim)
    }

    #[test]
    fn a_crd_keeps_all_but_its_schemas() {
        let (dropped, whole, slim) = slimmed(CRD);
        assert!(dropped);
        let versions = |o: &super::Object| o.root.path(&["spec", "versions"]).unwrap().clone();
        let (before, after) = (versions(&whole), versions(&slim));
        assert_eq!(before.items().len(), 1);
        assert!(after.is_seq() && after.items().is_empty());
        assert_eq!(before.span, after.span);
        for path in [
            &["spec", "group"][..],
            &["spec", "scope"],
            &["spec", "names", "kind"],
        ] {
            assert_eq!(
                whole.root.path(path).unwrap().as_str(),
                slim.root.path(path).unwrap().as_str()
            );
        }
        assert_eq!(
            slim.root.get("metadata").unwrap().span,
            whole.root.get("metadata").unwrap().span
        );
    }

    #[test]
    fn a_suppression_inside_the_schema_keeps_it() {
        let text = CRD.replace(
            "      schema:",
            "      # gitops-lint: ignore[duplicate-key] generated upstream\n      schema:",
        );
        let (dropped, _, slim) = slimmed(&text);
        assert!(!dropped);
        assert_eq!(
            slim.root.path(&["spec", "versions"]).unwrap().items().len(),
            1
        );
        // One before the key is about the key's line, which stays.
        let text = CRD.replace(
            "  versions:",
            "  # gitops-lint: ignore[duplicate-key] generated upstream\n  versions:",
        );
        assert!(slimmed(&text).0);
    }

    #[test]
    fn a_crd_after_a_broken_document_is_still_pruned() {
        let text = format!("a:\n  b: {{c: [1\n---\n{CRD}");
        let parsed = yaml::parse_pruned(0, &text, ParseLimits::default(), super::PRUNE);
        assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
        assert!(parsed.pruned.is_some());
        let crd = &parsed.documents.last().unwrap().root;
        assert_eq!(crd.str_at("kind"), Some("CustomResourceDefinition"));
        assert!(crd.path(&["spec", "versions"]).unwrap().items().is_empty());
    }

    #[test]
    fn other_kinds_keep_everything() {
        let text = CRD.replace("kind: CustomResourceDefinition", "kind: Widget");
        let (dropped, _, slim) = slimmed(&text);
        assert!(!dropped);
        assert_eq!(
            slim.root.path(&["spec", "versions"]).unwrap().items().len(),
            1
        );
        let text = CRD.replace("apiextensions.k8s.io/v1", "acme.io/v1");
        assert!(!slimmed(&text).0);
    }
}
