//! Legacy `vars:`: `$(NAME)` in kustomize's var reference fields becomes a field of the object
//! the var names, read once the whole build is done (`api/internal/accumulator/
//! resaccumulator.go`, `MergeVars`, `ResolveVars`; `api/filters/refvar`; the fields are
//! `api/internal/konfig/builtinpluginconsts/varreference.go`, kustomize v5.5.0).

use super::replacements::{lookup, Fail};
use super::{Kustomizer, Res};
use crate::model::group_of;
use crate::yaml::{typing, Node, Span, Style};
use std::collections::BTreeMap;

/// A var a kustomization declared, on the object it names.
#[derive(Clone, Debug)]
pub struct VarRef {
    pub name: String,
    pub field_path: String,
    pub span: Span,
}

/// Where `$(NAME)` is replaced: `(kind, path)`, any kind when `None`.
const VAR_FIELDS: &[(Option<&str>, &str)] = &[
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/containers/args",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/containers/command",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/containers/env/value",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/containers/volumeMounts/mountPath",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/initContainers/args",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/initContainers/command",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/initContainers/env/value",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/spec/initContainers/volumeMounts/mountPath",
    ),
    (
        Some("CronJob"),
        "spec/jobTemplate/spec/template/volumes/nfs/server",
    ),
    (Some("DaemonSet"), "spec/template/spec/containers/args"),
    (Some("DaemonSet"), "spec/template/spec/containers/command"),
    (Some("DaemonSet"), "spec/template/spec/containers/env/value"),
    (
        Some("DaemonSet"),
        "spec/template/spec/containers/volumeMounts/mountPath",
    ),
    (Some("DaemonSet"), "spec/template/spec/initContainers/args"),
    (
        Some("DaemonSet"),
        "spec/template/spec/initContainers/command",
    ),
    (
        Some("DaemonSet"),
        "spec/template/spec/initContainers/env/value",
    ),
    (
        Some("DaemonSet"),
        "spec/template/spec/initContainers/volumeMounts/mountPath",
    ),
    (Some("DaemonSet"), "spec/template/spec/volumes/nfs/server"),
    (Some("Deployment"), "spec/template/spec/containers/args"),
    (Some("Deployment"), "spec/template/spec/containers/command"),
    (
        Some("Deployment"),
        "spec/template/spec/containers/env/value",
    ),
    (
        Some("Deployment"),
        "spec/template/spec/containers/volumeMounts/mountPath",
    ),
    (Some("Deployment"), "spec/template/spec/initContainers/args"),
    (
        Some("Deployment"),
        "spec/template/spec/initContainers/command",
    ),
    (
        Some("Deployment"),
        "spec/template/spec/initContainers/env/value",
    ),
    (
        Some("Deployment"),
        "spec/template/spec/initContainers/volumeMounts/mountPath",
    ),
    (Some("Deployment"), "spec/template/spec/volumes/nfs/server"),
    (Some("Deployment"), "spec/template/metadata/annotations"),
    (Some("Ingress"), "spec/rules/host"),
    (Some("Ingress"), "spec/tls/hosts"),
    (Some("Ingress"), "spec/tls/secretName"),
    (Some("Job"), "spec/template/spec/containers/args"),
    (Some("Job"), "spec/template/spec/containers/command"),
    (Some("Job"), "spec/template/spec/containers/env/value"),
    (
        Some("Job"),
        "spec/template/spec/containers/volumeMounts/mountPath",
    ),
    (Some("Job"), "spec/template/spec/initContainers/args"),
    (Some("Job"), "spec/template/spec/initContainers/command"),
    (Some("Job"), "spec/template/spec/initContainers/env/value"),
    (
        Some("Job"),
        "spec/template/spec/initContainers/volumeMounts/mountPath",
    ),
    (Some("Job"), "spec/template/spec/volumes/nfs/server"),
    (Some("Pod"), "spec/containers/args"),
    (Some("Pod"), "spec/containers/command"),
    (Some("Pod"), "spec/containers/env/value"),
    (Some("Pod"), "spec/containers/volumeMounts/mountPath"),
    (Some("Pod"), "spec/initContainers/args"),
    (Some("Pod"), "spec/initContainers/command"),
    (Some("Pod"), "spec/initContainers/env/value"),
    (Some("Pod"), "spec/initContainers/volumeMounts/mountPath"),
    (Some("Pod"), "spec/volumes/nfs/server"),
    (Some("ReplicaSet"), "spec/template/spec/containers/args"),
    (Some("ReplicaSet"), "spec/template/spec/containers/command"),
    (
        Some("ReplicaSet"),
        "spec/template/spec/containers/env/value",
    ),
    (
        Some("ReplicaSet"),
        "spec/template/spec/containers/volumeMounts/mountPath",
    ),
    (Some("ReplicaSet"), "spec/template/spec/initContainers/args"),
    (
        Some("ReplicaSet"),
        "spec/template/spec/initContainers/command",
    ),
    (
        Some("ReplicaSet"),
        "spec/template/spec/initContainers/env/value",
    ),
    (
        Some("ReplicaSet"),
        "spec/template/spec/initContainers/volumeMounts/mountPath",
    ),
    (Some("ReplicaSet"), "spec/template/spec/volumes/nfs/server"),
    (Some("Service"), "spec/ports/port"),
    (Some("Service"), "spec/ports/targetPort"),
    (Some("StatefulSet"), "spec/template/spec/containers/args"),
    (Some("StatefulSet"), "spec/template/spec/containers/command"),
    (
        Some("StatefulSet"),
        "spec/template/spec/containers/env/value",
    ),
    (
        Some("StatefulSet"),
        "spec/template/spec/containers/volumeMounts/mountPath",
    ),
    (
        Some("StatefulSet"),
        "spec/template/spec/initContainers/args",
    ),
    (
        Some("StatefulSet"),
        "spec/template/spec/initContainers/command",
    ),
    (
        Some("StatefulSet"),
        "spec/template/spec/initContainers/env/value",
    ),
    (
        Some("StatefulSet"),
        "spec/template/spec/initContainers/volumeMounts/mountPath",
    ),
    (
        Some("StatefulSet"),
        "spec/volumeClaimTemplates/spec/nfs/server",
    ),
    (Some("PersistentVolume"), "spec/nfs/server"),
    (None, "metadata/labels"),
    (None, "metadata/annotations"),
];

/// Most list items and keys one var reference walk visits: input is hostile.
const MAX_DEPTH: usize = 64;

impl Kustomizer<'_> {
    /// Ties each var of this kustomization to the one object it names, by any name that
    /// object has had; its value is read at the end of the build.
    pub(super) fn merge_vars(&mut self, k: &Node, res: &mut [Res]) {
        for v in k.get("vars").map(Node::items).unwrap_or(&[]) {
            let Some(name) = v.str_at("name") else {
                self.fail("vars", v.span, Fail::Error("a var needs a `name`".into()));
                continue;
            };
            let objref = v.get("objref");
            let field = |key: &str| objref.and_then(|o| o.str_at(key)).unwrap_or("");
            let (mut group, mut version) = (field("group"), field("version"));
            let api_version = field("apiVersion");
            if !api_version.is_empty() {
                match api_version.split_once('/') {
                    Some((g, ver)) if !ver.contains('/') => (group, version) = (g, ver),
                    None => version = api_version,
                    Some(_) => {}
                }
            }
            let (kind, target, ns) = (field("kind"), field("name"), field("namespace"));
            let field_path = match v.path(&["fieldref", "fieldpath"]).and_then(Node::as_str) {
                None | Some("") => "metadata.name",
                Some(p) => p,
            };
            // The object's group, version and kind must equal the reference's, empty or not
            // (`resid.Gvk.Equals`).
            let hits: Vec<usize> = res
                .iter()
                .enumerate()
                .filter(|(_, r)| {
                    let o = &r.obj;
                    o.kind == kind
                        && group_of(&o.api_version) == group
                        && o.version() == version
                        && r.named(target)
                        && (ns.is_empty() || {
                            let have = o.namespace.as_deref().unwrap_or("default");
                            have == ns || (ns == "default" && have.is_empty())
                        })
                })
                .map(|(i, _)| i)
                .collect();
            match hits[..] {
                [i] => res[i].vars.push(VarRef {
                    name: name.to_string(),
                    field_path: field_path.to_string(),
                    span: v.span,
                }),
                [] => self.fail(
                    "vars",
                    v.span,
                    Fail::Error(format!(
                        "var `{name}` cannot be mapped to a field in the set of known resources"
                    )),
                ),
                _ => self.fail(
                    "vars",
                    v.span,
                    Fail::Error(format!(
                        "found {} resId matches for var `{name}` (unable to disambiguate)",
                        hits.len()
                    )),
                ),
            }
        }
    }
}

/// A var's value as kustomize reads it: typed by the field's tag.
#[derive(Clone, Debug)]
enum Val {
    Str(String),
    /// An integer, a float or a boolean, as written.
    Typed(String),
    /// A list or mapping: left as `$(NAME)`.
    Complex,
}

impl Val {
    fn text(&self, name: &str) -> String {
        match self {
            Val::Str(s) | Val::Typed(s) => s.clone(),
            Val::Complex => format!("$({name})"),
        }
    }
}

/// Replaces `$(NAME)` in every var reference field, once hashes and references are final.
/// Does nothing when the build declares no var, as kustomize.
pub(super) fn resolve(res: &mut [Res]) -> Vec<(Span, Fail)> {
    let mut values: BTreeMap<String, Val> = BTreeMap::new();
    let mut fails = Vec::new();
    for r in res.iter() {
        for v in &r.vars {
            let parts = field_parts(&v.field_path);
            let node = lookup(&r.obj.root, &parts).ok().flatten();
            let Some(node) = node else {
                fails.push((
                    v.span,
                    Fail::Error(format!(
                        "field `{}` of var `{}` not found in its object",
                        v.field_path, v.name
                    )),
                ));
                continue;
            };
            let val = match node.as_scalar() {
                None => Val::Complex,
                Some(s) => match typing::yaml12(s) {
                    typing::Kind::Int | typing::Kind::Bool(_) => Val::Typed(s.text.to_string()),
                    typing::Kind::Float => {
                        fails.push((
                            v.span,
                            Fail::Unknown(format!("var `{}` holds a float", v.name)),
                        ));
                        continue;
                    }
                    _ => Val::Str(s.text.to_string()),
                },
            };
            values.insert(v.name.clone(), val);
        }
    }
    if values.is_empty() || !fails.is_empty() {
        return fails;
    }
    for r in res.iter_mut() {
        for (kind, path) in VAR_FIELDS {
            if kind.is_some_and(|k| k != r.obj.kind) {
                continue;
            }
            let parts: Vec<&str> = path.split('/').collect();
            let span = r.obj.root.span;
            if let Err(f) = walk(&mut r.obj.root, &parts, &values, 0) {
                fails.push((span, f));
                return fails;
            }
        }
    }
    fails
}

/// A var's `fieldpath`: `.`-separated, `name[2]` an index into the list `name`
/// (`kyaml/yaml/rnode.go`, `convertSliceIndex`).
fn field_parts(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let split = super::replacements::split_path(path).unwrap_or_default();
    for p in split {
        if let Some(open) = p
            .strip_suffix(']')
            .and_then(|s| s.rfind('[').map(|i| (s, i)))
        {
            let (s, i) = open;
            let idx = &s[i + 1..];
            if !idx.is_empty() && idx.bytes().all(|b| b.is_ascii_digit()) {
                if i > 0 {
                    out.push(s[..i].to_string());
                }
                out.push(idx.to_string());
                continue;
            }
        }
        out.push(p);
    }
    out
}

fn walk(
    node: &mut Node,
    path: &[&str],
    values: &BTreeMap<String, Val>,
    depth: usize,
) -> Result<(), Fail> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    if let Some((first, rest)) = path.split_first() {
        if let Some(items) = node.items_mut() {
            for item in items.iter_mut() {
                walk(item, path, values, depth + 1)?;
            }
        } else if let Some(child) = node.get_mut(first) {
            walk(child, rest, values, depth + 1)?;
        }
        return Ok(());
    }
    if node.is_map() {
        for e in node.entries_mut().into_iter().flatten() {
            if is_str(&e.value) {
                substitute(&mut e.value, values);
            }
        }
    } else if let Some(items) = node.items_mut() {
        for item in items.iter_mut() {
            if !is_str(item) {
                return Err(Fail::Error(
                    "a list where vars are replaced holds something that is not a string".into(),
                ));
            }
            substitute(item, values);
        }
    } else if is_str(node) {
        substitute(node, values);
    }
    Ok(())
}

fn is_str(n: &Node) -> bool {
    n.as_scalar().is_some_and(|s| {
        s.tag.is_some_and(|t| t.ends_with(":str"))
            || s.tag.is_none() && typing::yaml12(s) == typing::Kind::Str
    })
}

/// `DoReplacements` (`api/filters/refvar/expand.go`): `$(NAME)` of a known var becomes its
/// value (typed when it is the whole text), `$$` becomes `$`, anything else stays.
fn substitute(node: &mut Node, values: &BTreeMap<String, Val>) {
    let Some(input) = node.as_str().map(str::to_string) else {
        return;
    };
    if !input.contains('$') {
        return;
    }
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest.find(')') {
                    Some(close) => {
                        let name = &rest[1..close];
                        let mapped = values.get(name);
                        if input.len() == name.len() + 3 {
                            // The whole text is the reference: the value keeps its type.
                            *node = match mapped {
                                Some(Val::Typed(t)) => {
                                    Node::scalar(t.as_str(), Style::Plain, node.span)
                                }
                                Some(v) => Node::string(v.text(name), node.span),
                                None => Node::string(input.clone(), node.span),
                            };
                            return;
                        }
                        match mapped {
                            Some(v) => out.push_str(&v.text(name)),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        close + 1
                    }
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    // `$` and the next character (a whole one, where Go copies one byte).
                    let c = rest.chars().next().map_or(1, char::len_utf8);
                    out.push('$');
                    out.push_str(&rest[..c]);
                    c
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.push_str(input.get(checkpoint..).unwrap_or(""));
    let span = node.span;
    *node = Node::string(out, span);
}

#[cfg(test)]
mod tests {
    use super::{substitute, Val};
    use crate::yaml::{FileId, Node, Span};
    use std::collections::BTreeMap;

    fn sub(text: &str) -> (String, bool) {
        let mut values = BTreeMap::new();
        values.insert("A".to_string(), Val::Str("x".into()));
        values.insert("N".to_string(), Val::Typed("3".into()));
        let span = Span::new(0 as FileId, 0, 0);
        let mut n = Node::string(text, span);
        substitute(&mut n, &values);
        let typed = n
            .as_scalar()
            .is_some_and(|s| s.style == crate::yaml::Style::Plain)
            && n.as_str() == Some("3");
        (n.as_str().unwrap_or_default().to_string(), typed)
    }

    #[test]
    fn references_escapes_and_leftovers() {
        assert_eq!(sub("$(A)").0, "x");
        assert_eq!(sub("a-$(A)-$(N)").0, "a-x-3");
        assert_eq!(sub("$$(A) $(B) $ $(open").0, "$(A) $(B) $ $(open");
        assert_eq!(sub("é$é$").0, "é$é$");
        assert!(sub("$(N)").1);
    }
}
