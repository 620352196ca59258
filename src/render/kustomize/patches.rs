//! Patches: strategic merge (by identity or by target) and JSON 6902, and the target
//! selectors they are matched with.

use super::{problem, Kustomizer, Res};
use crate::model::Object;
use crate::render::{self, merge};
use crate::yaml::{Node, Span};
use std::collections::BTreeMap;
use std::path::Path;

/// Built-in kinds get their schema's list merge keys; everything else is merged schema-less.
fn is_builtin(obj: &Object) -> bool {
    !obj.group().contains('.') || obj.group().ends_with(".k8s.io")
}

impl Kustomizer<'_> {
    /// The documents of a patch: a file's, or an inline string's (its nodes then point at the
    /// inline string as a whole).
    pub(super) fn patch_docs(&mut self, dir: &Path, node: &Node, inline: bool) -> Vec<Node> {
        if inline {
            return match render::parse_inline(node.as_str().unwrap_or_default(), node.span) {
                Ok(docs) => docs,
                Err(why) => {
                    self.problems.push(problem(
                        node.span,
                        format!("the inline patch is not valid YAML: {why}"),
                        "fix the patch text",
                    ));
                    Vec::new()
                }
            };
        }
        let Some((written, path)) = self.resolve(dir, node) else {
            return Vec::new();
        };
        let Some(path) = self.through_links(path, &written, node) else {
            return Vec::new();
        };
        let Some(id) = self.files.file(&path) else {
            self.missing(&path, &written, node);
            return Vec::new();
        };
        if self.restricted(dir, &path, &written, node) {
            return Vec::new();
        }
        self.read_file(id);
        let docs = self.files.whole(id);
        let mut all: Vec<(usize, Option<usize>, &Node)> = docs
            .objects
            .iter()
            .map(|o| (o.doc, o.list_item, &o.root))
            .chain(docs.loose.iter().map(|d| (d.index, None, &d.root)))
            .collect();
        all.sort_by_key(|(d, l, _)| (*d, *l));
        all.into_iter()
            .map(|(_, _, n)| n.clone())
            .filter(|n| !n.is_null())
            .collect()
    }

    /// A strategic merge patch without a target applies to the object it names.
    pub(super) fn smp_by_identity(&mut self, mut patch: Node, item: Span, res: &mut Vec<Res>) {
        let kind = patch.str_at("kind");
        let name = patch.path(&["metadata", "name"]).and_then(Node::as_str);
        let ns = patch
            .path(&["metadata", "namespace"])
            .and_then(Node::as_str);
        let (Some(kind), Some(name)) = (kind, name) else {
            self.problems.push(problem(
                item,
                "a strategic merge patch without `target` needs `kind` and `metadata.name`",
                "name the object to patch, or give the patch a `target`",
            ));
            return;
        };
        let hits: Vec<usize> = res
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.obj.kind == kind
                    && r.named(name)
                    && ns.is_none_or(|ns| {
                        r.obj.namespace.as_deref().unwrap_or("default") == ns
                            || r.obj.namespace.is_none()
                    })
            })
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            // Not rendered inputs may hold the object: kustomize may well find it.
            if !self.opaque {
                let message = self.in_context(format!(
                    "the patch for {kind} `{name}` matches no resource of this kustomization: kustomize fails the build"
                ));
                self.problems.push(problem(
                    item,
                    message,
                    "check the kind and name against the resources (before any namePrefix), or remove the patch",
                ));
            }
            return;
        }
        if let Some(meta) = patch.get_mut("metadata") {
            // The name identifies the target; it is not a value to merge.
            meta.remove("name");
            meta.remove("namespace");
        }
        apply_smp(res, &hits, &patch);
    }

    pub(super) fn patch(&mut self, dir: &Path, item: &Node, res: &mut Vec<Res>) {
        // kustomize v5 rejects a bare path under `patches` and fails the whole build; the
        // patch is still applied here so the rest of the analysis sees what was meant.
        let docs = if let Some(text) = item.as_str() {
            self.problems.push(problem(
                item.span,
                format!("`patches` entries are mappings: kustomize rejects the bare path `{text}` and fails the build"),
                "write `- path: FILE` (or move the file under `patchesStrategicMerge`)",
            ));
            self.patch_docs(dir, item, false)
        } else {
            match (item.get("path"), item.get("patch")) {
                (Some(p), _) => self.patch_docs(dir, p, false),
                (None, Some(p)) => self.patch_docs(dir, p, true),
                _ => {
                    self.problems.push(problem(
                        item.span,
                        "the patch has neither `path` nor `patch`",
                        "give the patch file's `path` or the inline `patch`",
                    ));
                    return;
                }
            }
        };
        let target = item.get("target").filter(|t| t.is_map());
        for doc in docs {
            if doc.is_seq() {
                self.json6902(target, &doc, item.span, res);
                continue;
            }
            let Some(target) = target else {
                self.smp_by_identity(doc, item.span, res);
                continue;
            };
            let hits = match select(res, target) {
                Ok(h) => h,
                Err(msg) => {
                    self.problems
                        .push(problem(item.span, msg, "fix the target selector"));
                    continue;
                }
            };
            // A selector that selects nothing makes the patch a no-op for kustomize
            // (`resWrangler.Select` returns no resources and no error): the build succeeds.
            if hits.is_empty() {
                continue;
            }
            if merge::is_delete(&doc) {
                delete(res, &hits);
                continue;
            }
            // A targeted patch applies whatever name it carries.
            let mut doc = doc;
            if let Some(meta) = doc.get_mut("metadata") {
                meta.remove("name");
                meta.remove("namespace");
            }
            doc.remove("kind");
            doc.remove("apiVersion");
            apply_smp(res, &hits, &doc);
        }
    }

    pub(super) fn json6902(
        &mut self,
        target: Option<&Node>,
        ops: &Node,
        item: Span,
        res: &mut [Res],
    ) {
        let Some(target) = target else {
            self.problems.push(problem(
                item,
                "a JSON 6902 patch needs a `target`",
                "add a target with at least `kind` and `name`",
            ));
            return;
        };
        let hits = match select(res, target) {
            Ok(h) => h,
            Err(msg) => {
                self.problems
                    .push(problem(item, msg, "fix the target selector"));
                return;
            }
        };
        // As for a targeted strategic merge patch, nothing selected is a no-op.
        for i in hits {
            // kustomize keeps build annotations on every object until the end of a build, so a patch
            // always finds `metadata.annotations` (adding a key to it works on an object
            // written without any); an empty one it did not need is dropped again.
            let span = res[i].obj.root.span;
            let made = res[i]
                .obj
                .root
                .path(&["metadata", "annotations"])
                .is_none_or(|a| !a.is_map());
            if made {
                res[i]
                    .obj
                    .root
                    .map_at("metadata", span)
                    .map_at("annotations", span);
            }
            let patched = merge::json_patch(&mut res[i].obj.root, ops);
            if made {
                if let Some(meta) = res[i].obj.root.get_mut("metadata") {
                    if meta
                        .get("annotations")
                        .is_some_and(|a| a.is_map() && a.entries().is_empty())
                    {
                        meta.remove("annotations");
                    }
                }
            }
            if let Err(e) = patched {
                let message = self.in_context(e.message);
                self.problems
                    .push(problem(e.span, message, "fix the patch operation"));
                return;
            }
            refresh_identity(&mut res[i].obj);
        }
    }
}

fn apply_smp(res: &mut Vec<Res>, hits: &[usize], patch: &Node) {
    if merge::is_delete(patch) {
        delete(res, hits);
        return;
    }
    for &i in hits {
        let builtin = is_builtin(&res[i].obj);
        merge::strategic_merge(&mut res[i].obj.root, patch, builtin);
        refresh_identity(&mut res[i].obj);
    }
}

fn delete(res: &mut Vec<Res>, hits: &[usize]) {
    let mut i = 0;
    res.retain(|_| {
        let keep = !hits.contains(&i);
        i += 1;
        keep
    });
}

/// A patch may change the name or namespace; the object's identity follows its data.
pub(super) fn refresh_identity(obj: &mut Object) {
    let meta = obj.root.get("metadata");
    obj.name = meta.and_then(|m| m.str_at("name")).map(str::to_string);
    obj.namespace = meta.and_then(|m| m.str_at("namespace")).map(str::to_string);
    if let Some(k) = obj.root.str_at("kind") {
        obj.kind = k.to_string();
    }
    if let Some(v) = obj.root.str_at("apiVersion") {
        obj.api_version = v.to_string();
    }
}

/// The resources a patch `target` selects. Names and namespaces are anchored regular
/// expressions, as in kustomize.
fn select(res: &[Res], target: &Node) -> Result<Vec<usize>, String> {
    let regex = |key: &str| -> Result<Option<regex::Regex>, String> {
        match target.str_at(key) {
            None => Ok(None),
            Some(p) => regex::RegexBuilder::new(&format!("^(?:{p})$"))
                .size_limit(1 << 20)
                .build()
                .map(Some)
                .map_err(|e| format!("target `{key}` is not a valid regular expression: {e}")),
        }
    };
    let name = regex("name")?;
    let namespace = regex("namespace")?;
    let labels = target
        .str_at("labelSelector")
        .map(parse_selector)
        .transpose()?;
    let annotations = target
        .str_at("annotationSelector")
        .map(parse_selector)
        .transpose()?;
    let mut out = Vec::new();
    for (i, r) in res.iter().enumerate() {
        let o = &r.obj;
        if target.str_at("kind").is_some_and(|k| k != o.kind)
            || target.str_at("group").is_some_and(|g| g != o.group())
            || target.str_at("version").is_some_and(|v| v != o.version())
        {
            continue;
        }
        if let Some(re) = &name {
            let current = o.name.as_deref().unwrap_or("");
            let orig = r.orig_name.as_deref().unwrap_or("");
            if !re.is_match(current) && !re.is_match(orig) {
                continue;
            }
        }
        if let Some(re) = &namespace {
            if !re.is_match(o.namespace.as_deref().unwrap_or("")) {
                continue;
            }
        }
        let meta_map = |key: &str| meta_map(o, key);
        if labels
            .as_ref()
            .is_some_and(|s| !matches_selector(s, &meta_map("labels")))
            || annotations
                .as_ref()
                .is_some_and(|s| !matches_selector(s, &meta_map("annotations")))
        {
            continue;
        }
        out.push(i);
    }
    Ok(out)
}

/// An object's labels or annotations (`key`), as a selector reads them.
pub(super) fn meta_map(o: &Object, key: &str) -> BTreeMap<String, String> {
    o.root
        .path(&["metadata", key])
        .map(|m| {
            m.entries()
                .iter()
                .filter_map(|e| {
                    Some((
                        e.key.as_str()?.to_string(),
                        e.value.as_str().unwrap_or("").to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Debug)]
pub(super) enum Requirement {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// A Kubernetes label selector: `a=b, c!=d, e in (x,y), f notin (z), g, !h`.
pub(super) fn parse_selector(text: &str) -> Result<Vec<Requirement>, String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    let mut out = Vec::new();
    for p in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let set = |rest: &str| -> Vec<String> {
            rest.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .map(|v| v.trim().to_string())
                .collect()
        };
        let req = if let Some((k, v)) = p.split_once("!=") {
            Requirement::Ne(k.trim().into(), v.trim().into())
        } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
            Requirement::Eq(k.trim().into(), v.trim().into())
        } else if let Some((k, rest)) = p.split_once(" notin ") {
            Requirement::NotIn(k.trim().into(), set(rest))
        } else if let Some((k, rest)) = p.split_once(" in ") {
            Requirement::In(k.trim().into(), set(rest))
        } else if let Some(k) = p.strip_prefix('!') {
            Requirement::Absent(k.trim().into())
        } else if p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        {
            Requirement::Exists(p.into())
        } else {
            return Err(format!("`{p}` is not a label selector requirement"));
        };
        out.push(req);
    }
    Ok(out)
}

pub(super) fn matches_selector(reqs: &[Requirement], labels: &BTreeMap<String, String>) -> bool {
    reqs.iter().all(|r| match r {
        Requirement::Eq(k, v) => labels.get(k) == Some(v),
        Requirement::Ne(k, v) => labels.get(k) != Some(v),
        Requirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
        Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
        Requirement::Exists(k) => labels.contains_key(k),
        Requirement::Absent(k) => !labels.contains_key(k),
    })
}
