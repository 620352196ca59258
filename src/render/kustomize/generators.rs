//! configMapGenerator and secretGenerator, and the content hash their names get at the end of
//! a build.

use super::transformers::merge_pairs;
use super::{is_remote, problem, Kustomizer, Res};
use crate::model::Object;
use crate::render::{self, Note, Unread};
use crate::yaml::{self, Node, Span};
use std::collections::BTreeMap;
use std::path::Path;

impl Kustomizer<'_> {
    pub(super) fn generate(&mut self, dir: &Path, k: &Node, res: &mut Vec<Res>) {
        let options = k.get("generatorOptions");
        for (field, kind) in [
            ("configMapGenerator", "ConfigMap"),
            ("secretGenerator", "Secret"),
        ] {
            for g in k.get(field).map(Node::items).unwrap_or(&[]) {
                self.generator(dir, g, kind, options, res);
            }
        }
    }

    fn generator(
        &mut self,
        dir: &Path,
        g: &Node,
        kind: &str,
        options: Option<&Node>,
        res: &mut Vec<Res>,
    ) {
        let Some(name) = g.get("name").filter(|n| n.as_str().is_some()) else {
            self.problems.push(problem(
                g.span,
                format!("a {kind} generator needs a `name`"),
                "name the generated object",
            ));
            return;
        };
        let (data, binary) = self.generator_data(dir, g, kind == "Secret");
        let behavior = g.str_at("behavior").unwrap_or("create");
        let ns = g.str_at("namespace");
        let name_text = name.as_str().unwrap_or_default().to_string();
        if behavior == "merge" || behavior == "replace" {
            let found = res.iter_mut().find(|r| {
                r.obj.kind == kind
                    && r.named(&name_text)
                    && ns.is_none_or(|ns| r.obj.namespace.as_deref() == Some(ns))
            });
            let Some(target) = found else {
                // The object may come from what is not rendered.
                if !self.opaque {
                    let message = self.in_context(format!(
                        "`behavior: {behavior}` but no {kind} `{name_text}` comes from the resources: kustomize fails the build"
                    ));
                    self.problems.push(problem(
                        g.span,
                        message,
                        "use `behavior: create`, or generate the base object first",
                    ));
                }
                return;
            };
            let root = &mut target.obj.root;
            if behavior == "replace" {
                root.remove("data");
                root.remove("binaryData");
            }
            for (field, pairs) in [("data", &data), ("binaryData", &binary)] {
                if pairs.entries().is_empty() {
                    continue;
                }
                let map = root.map_at(field, pairs.span);
                for e in pairs.entries() {
                    map.set(
                        e.key.as_str().unwrap_or_default(),
                        e.value.clone(),
                        e.key.span,
                    );
                }
            }
            apply_generator_meta(root, options, g);
            return;
        }
        let mut root = Node::empty_map(g.span);
        root.set("apiVersion", Node::string("v1", g.span), g.span);
        root.set("kind", Node::string(kind, g.span), g.span);
        let meta = root.map_at("metadata", g.span);
        meta.set("name", name.clone(), name.span);
        if let Some(ns) = g.get("namespace").filter(|n| !n.is_null()) {
            meta.set("namespace", ns.clone(), ns.span);
        }
        if kind == "Secret" {
            let t = g
                .get("type")
                .filter(|n| !n.is_null())
                .cloned()
                .unwrap_or_else(|| Node::string("Opaque", g.span));
            root.set("type", t, g.span);
        }
        // A generated Secret always carries `data`, a ConfigMap only when it has some.
        if !data.entries().is_empty() || kind == "Secret" {
            root.set("data", data, g.span);
        }
        if !binary.entries().is_empty() {
            root.set("binaryData", binary, g.span);
        }
        let immutable = [options, g.get("options")].into_iter().flatten().any(|o| {
            o.get("immutable")
                .and_then(Node::as_scalar)
                .and_then(yaml::typing::as_bool)
                == Some(true)
        });
        if immutable {
            root.set(
                "immutable",
                Node::scalar("true", yaml::Style::Plain, g.span),
                g.span,
            );
        }
        apply_generator_meta(&mut root, options, g);
        // The generator's own option wins over the kustomization's.
        let disabled = [g.get("options"), options]
            .into_iter()
            .flatten()
            .find_map(|o| {
                o.get("disableNameSuffixHash")
                    .and_then(Node::as_scalar)
                    .and_then(yaml::typing::as_bool)
            })
            .unwrap_or(false);
        let obj = Object {
            file: g.span.file,
            doc: 0,
            list_item: None,
            api_version: "v1".into(),
            kind: kind.into(),
            name: Some(name_text),
            namespace: ns.map(str::to_string),
            root,
            generated: true,
        };
        let mut r = Res::new(obj);
        r.hash = !disabled;
        res.push(r);
    }

    /// `data` and `binaryData` of a generated object: literals, files and env files, in
    /// kustomize's key order. A ConfigMap value that is not UTF-8 goes to `binaryData` as
    /// base64; a Secret's values are all base64 in `data` (`kyaml/yaml/datamap.go`,
    /// `makeConfigMapValueRNode`, `makeSecretValueRNode`, kustomize v5.5.0).
    fn generator_data(&mut self, dir: &Path, g: &Node, secret: bool) -> (Node, Node) {
        let mut pairs: BTreeMap<String, (Vec<u8>, Span, Span)> = BTreeMap::new();
        for item in g.get("literals").map(Node::items).unwrap_or(&[]) {
            let Some(text) = item.as_str() else { continue };
            let Some((k, v)) = text.split_once('=') else {
                self.problems.push(problem(
                    item.span,
                    format!("literal `{}` is not KEY=VALUE", key_only(text)),
                    "write the literal as KEY=VALUE",
                ));
                continue;
            };
            let v = unquote(v);
            let value_span = self.value_span(item, k.len() + 1);
            pairs.insert(k.trim().to_string(), (v.into(), item.span, value_span));
        }
        for item in g.get("files").map(Node::items).unwrap_or(&[]) {
            let Some(text) = item.as_str() else { continue };
            let (key, file) = match text.split_once('=') {
                Some((k, f)) => (k.to_string(), f),
                None => (
                    Path::new(text)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or(text)
                        .to_string(),
                    text,
                ),
            };
            let Some(content) = self.read_bytes(dir, item, file) else {
                continue;
            };
            pairs.insert(key, (content, item.span, item.span));
        }
        let envs: Vec<&Node> = g
            .get("envs")
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .chain(g.get("env").filter(|n| n.as_str().is_some()))
            .collect();
        for item in envs {
            let Some(file) = item.as_str() else { continue };
            let Some(content) = self.read(dir, item, file) else {
                continue;
            };
            // A line without `=` is a key whose value is empty; a byte order mark before the
            // first line is dropped (`api/kv/kv.go`, `keyValuesFromLine`, kustomize v5.5.0).
            let content = content.strip_prefix('\u{feff}').unwrap_or(&content);
            for line in content.lines() {
                let line = line.trim_start();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = line.split_once('=').unwrap_or((line, ""));
                pairs.insert(k.trim().to_string(), (v.into(), item.span, item.span));
            }
        }
        // The keys are distinct and in order already: the mapping is made at its size, where a
        // `set` per key would search the keys before it each time.
        let mut entries = yaml::Shared::with_capacity(pairs.len());
        let mut binary = yaml::Shared::default();
        for (k, (v, key_span, value_span)) in pairs {
            let (text, to) = match String::from_utf8(v) {
                Ok(text) if !secret => (text, &mut entries),
                Ok(text) => (base64_encode(text.as_bytes()), &mut entries),
                Err(e) if secret => (base64_encode(e.as_bytes()), &mut entries),
                Err(e) => (base64_encode(e.as_bytes()), &mut binary),
            };
            to.push(yaml::Entry {
                key: Node::string(k, key_span),
                value: Node::string(text, value_span),
            });
        }
        (
            Node::new(g.span, yaml::Value::Map { entries }),
            Node::new(g.span, yaml::Value::Map { entries: binary }),
        )
    }

    /// The span of a literal's value inside its item, when the source shows it verbatim.
    fn value_span(&self, item: &Node, offset: usize) -> Span {
        let text = item.as_str().unwrap_or_default();
        if self.files.text(item.span) == text {
            Span::new(
                item.span.file,
                item.span.start as usize + offset,
                item.span.end as usize,
            )
        } else {
            item.span
        }
    }

    /// A generator file read as text (an env file): kustomize refuses one that is not UTF-8.
    fn read(&mut self, dir: &Path, item: &Node, file: &str) -> Option<String> {
        let bytes = self.read_bytes(dir, item, file)?;
        match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(_) => {
                self.notes.push(Note {
                    span: item.span,
                    message: format!("`{file}` not rendered: not UTF-8 text"),
                });
                None
            }
        }
    }

    fn read_bytes(&mut self, dir: &Path, item: &Node, file: &str) -> Option<Vec<u8>> {
        // kustomize's file loader fetches an http(s) URL (`FileLoader.Load`); gitops-lint
        // never does.
        if is_remote(file) {
            self.notes.push(Note {
                span: item.span,
                message: format!("remote file `{file}` not rendered: gitops-lint never fetches"),
            });
            return None;
        }
        let path = match self.files.resolve(dir, file) {
            Ok(p) => p,
            Err(e) => {
                self.problems.push(problem(
                    item.span,
                    e.message(file),
                    "keep generator files inside the kustomization",
                ));
                return None;
            }
        };
        // Read by its own path once links are resolved, so that a link never leads a read out
        // of the repository.
        let path = self.through_links(path, file, item)?;
        if self.restricted(dir, &path, file, item) {
            return None;
        }
        self.inputs.push(path.clone());
        let why = match self.files.read_extra_bytes(&path) {
            Ok(text) => return Some(text),
            Err(Unread::Skipped(why)) => {
                self.notes.push(Note {
                    span: item.span,
                    message: format!("`{file}` not rendered: {why}"),
                });
                return None;
            }
            Err(Unread::Missing) => "no such file in the repository",
            Err(Unread::NotAFile) => "not a regular file",
        };
        self.problems.push(problem(
            item.span,
            format!("`{file}` cannot be read: {why}"),
            "fix the path",
        ));
        None
    }
}

fn key_only(literal: &str) -> &str {
    literal.split('=').next().unwrap_or("")
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

fn apply_generator_meta(root: &mut Node, options: Option<&Node>, g: &Node) {
    for o in [options, g.get("options")].into_iter().flatten() {
        for (field, key) in [("labels", "labels"), ("annotations", "annotations")] {
            if let Some(pairs) = o.get(field).filter(|n| n.is_map()) {
                merge_pairs(
                    root.map_at("metadata", g.span).map_at(key, pairs.span),
                    pairs,
                );
            }
        }
    }
}

/// Appends kustomize's content hash to generated names.
pub(super) fn add_hashes(res: &mut [Res]) {
    for r in res.iter_mut().filter(|r| r.hash) {
        let Some(name) = r.obj.name.clone() else {
            continue;
        };
        let h = content_hash(&r.obj);
        let span = r
            .obj
            .root
            .path(&["metadata", "name"])
            .map_or(r.obj.root.span, |n| n.span);
        r.set_name(format!("{name}-{h}"), span);
    }
}

/// kustomize's hash: SHA-256 of a JSON object of kind, data (and binaryData, or a Secret's
/// type), written as Go's encoder writes it; the first ten hex digits, with some letters
/// swapped so the result never reads as a number or a word. kustomize looks the name up
/// under a path that never matches, so the name field is always empty.
fn content_hash(obj: &Object) -> String {
    use sha2::{Digest, Sha256};
    let map = |key: &str| -> Option<String> {
        let d = obj.root.get(key).filter(|d| d.is_map())?;
        let sorted: BTreeMap<&str, &str> = d
            .entries()
            .iter()
            .map(|e| {
                (
                    e.key.as_str().unwrap_or_default(),
                    e.value.as_str().unwrap_or_default(),
                )
            })
            .collect();
        let body: Vec<String> = sorted
            .iter()
            .map(|(k, v)| format!("{}:{}", go_json(k), go_json(v)))
            .collect();
        Some(format!("{{{}}}", body.join(",")))
    };
    let data = map("data").unwrap_or_else(|| go_json(""));
    let json = if obj.kind == "Secret" {
        let string_data = map("stringData")
            .map(|s| format!(",\"stringData\":{s}"))
            .unwrap_or_default();
        let t = obj.root.str_at("type").unwrap_or("");
        format!(
            "{{\"data\":{data},\"kind\":\"Secret\",\"name\":\"\"{string_data},\"type\":{}}}",
            go_json(t)
        )
    } else {
        let binary = map("binaryData")
            .map(|b| format!("\"binaryData\":{b},"))
            .unwrap_or_default();
        format!("{{{binary}\"data\":{data},\"kind\":\"ConfigMap\",\"name\":\"\"}}")
    };
    let digest = Sha256::digest(json.as_bytes());
    digest
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(10)
        .map(|n| match n {
            0 => 'g',
            1 => 'h',
            3 => 'k',
            10 => 'm',
            14 => 't',
            n => char::from_digit(u32::from(n), 16).unwrap_or('x'),
        })
        .collect()
}

fn go_json(s: &str) -> String {
    render::template::go_json_string(s, true)
}

/// Base64 folded as kustomize folds it: once the encoding reaches 70 characters, every
/// 70-character line (the last one too) ends in a newline (`kyaml/yaml/datamap.go`,
/// `encodeBase64`, kustomize v5.5.0).
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    if text.len() < 70 {
        return text;
    }
    let mut folded = String::with_capacity(text.len() + text.len() / 70 + 1);
    for chunk in text.as_bytes().chunks(70) {
        folded.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        folded.push('\n');
    }
    folded
}
