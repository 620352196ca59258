//! Patches as kustomize applies them: strategic merge (kyaml's merge semantics) and RFC 6902
//! JSON patches. Values copied from a patch keep the patch's spans, which is how a finding on
//! a rendered object comes to point at the overlay line that set the value.

use crate::yaml::{Node, Shared, Span, Value};

/// Directive keys of a strategic merge patch.
const PATCH: &str = "$patch";

/// List merge keys of the built-in Kubernetes kinds, by field name. Lists of built-in kinds
/// not named here are replaced by a patch, as their OpenAPI schema says.
fn builtin_merge_key(field: &str, parent: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        "conditions" => "type",
        // A container's ports merge by containerPort, a Service's by port.
        "ports" if parent == "container" => "containerPort",
        "ports" => "port",
        _ => return None,
    })
}

/// Whether a patch asks to delete the whole object or mapping it sits in.
pub fn is_delete(patch: &Node) -> bool {
    patch.str_at(PATCH) == Some("delete")
}

fn without_directives(node: &Node) -> Node {
    let mut out = node.clone();
    // Looked for first: a patch without directives stays shared with the file it came from.
    if has_directive(node) {
        strip(&mut out);
    }
    out
}

/// Whether [`strip`] would change anything: a key that starts with `$` anywhere below.
fn has_directive(node: &Node) -> bool {
    node.children()
        .any(|(_, key, child)| key.is_some_and(|k| k.starts_with('$')) || has_directive(child))
}

fn strip(node: &mut Node) {
    match &mut node.value {
        Value::Map { entries, .. } => {
            entries.retain(|e| !e.key.as_str().is_some_and(|k| k.starts_with('$')));
            for e in entries.make_mut() {
                strip(&mut e.value);
            }
        }
        Value::Seq { items, .. } => {
            items.retain(|i| {
                !(i.is_map() && i.get(PATCH).is_some() && (i.entries().len() == 1 || is_delete(i)))
            });
            for i in items.make_mut() {
                strip(i);
            }
        }
        Value::Scalar(_) => {}
    }
}

/// Whether [`drop_nulls`] would change anything.
fn has_null(node: &Node) -> bool {
    node.entries()
        .iter()
        .any(|e| e.value.is_null() || has_null(&e.value))
}

/// Keys set to null in a patch delete; where there is nothing to delete they vanish.
fn drop_nulls(node: &mut Node) {
    if let Value::Map { entries, .. } = &mut node.value {
        entries.retain(|e| !e.value.is_null());
        for e in entries.make_mut() {
            drop_nulls(&mut e.value);
        }
    }
}

/// Merges `patch` into `dst`. `builtin` selects the built-in kinds' merge keys over the
/// schema-less behaviour.
pub fn strategic_merge(dst: &mut Node, patch: &Node, builtin: bool) {
    merge_map(dst, patch, "", builtin);
    // kustomize drops the object's own labels and annotations when a patch empties them.
    let emptied = |meta: &Node, key: &str| {
        meta.get(key)
            .is_some_and(|m| m.is_map() && m.entries().is_empty())
    };
    let keys = ["labels", "annotations"];
    if !dst
        .get("metadata")
        .is_some_and(|meta| keys.iter().any(|k| emptied(meta, k)))
    {
        return;
    }
    if let Some(meta) = dst.get_mut("metadata") {
        for key in keys {
            if emptied(meta, key) {
                meta.remove(key);
            }
        }
    }
}

/// `field` is the key the mapping sits under (for a list element, the list's key).
fn merge_map(dst: &mut Node, patch: &Node, field: &str, builtin: bool) {
    if patch.str_at(PATCH) == Some("replace") || !dst.is_map() {
        *dst = without_directives(patch);
        return;
    }
    for e in patch.entries() {
        let Some(key) = e.key.as_str() else { continue };
        if let Some(list) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let drop: Vec<&str> = e.value.items().iter().filter_map(Node::as_str).collect();
            if let Some(items) = dst.get_mut(list).and_then(Node::item_list_mut) {
                items.retain(|i| !i.as_str().is_some_and(|s| drop.contains(&s)));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        if e.value.is_null() {
            dst.remove(key);
            continue;
        }
        if e.value.is_map() && is_delete(&e.value) {
            dst.remove(key);
            continue;
        }
        let parent = if matches!(
            field,
            "containers" | "initContainers" | "ephemeralContainers"
        ) {
            "container"
        } else {
            field
        };
        match dst.get_mut(key) {
            Some(existing) if existing.is_map() && e.value.is_map() => {
                merge_map(existing, &e.value, key, builtin);
            }
            Some(existing) if existing.is_seq() && e.value.is_seq() => {
                merge_list(existing, &e.value, key, parent, builtin);
            }
            Some(existing) => *existing = without_directives(&e.value),
            None => {
                let mut v = without_directives(&e.value);
                if has_null(&v) {
                    drop_nulls(&mut v);
                }
                if !(v.is_map() && v.entries().is_empty() && !e.value.entries().is_empty()) {
                    dst.set(key, v, e.key.span);
                }
            }
        }
    }
}

/// Lists of built-in kinds with a merge key are merged element by element: the patch's
/// elements come first, in patch order, then the original elements it did not mention.
/// Every other list, and every list of a custom resource, is replaced by the patch.
fn merge_list(dst: &mut Node, patch: &Node, field: &str, parent: &str, builtin: bool) {
    let patch_items = patch.items();
    let replace = patch_items
        .iter()
        .any(|i| i.is_map() && i.str_at(PATCH) == Some("replace"));
    let key = if replace || !builtin {
        None
    } else {
        builtin_merge_key(field, parent)
    };
    // A replaced list is not copied first: its items are taken only to be merged into.
    let items = key.and_then(|_| dst.item_list_mut());
    let (Some(key), Some(items)) = (key, items) else {
        *dst = without_directives(patch);
        return;
    };
    if key == "containerPort"
        && items
            .iter()
            .chain(patch_items)
            .any(|p| p.get("protocol").is_some())
    {
        merge_ports(items, patch_items, builtin);
        return;
    }
    let id = |n: &Node| n.get(key).and_then(Node::as_str).map(str::to_string);
    let mut original: Vec<Option<Node>> = std::mem::take(items).into_iter().map(Some).collect();
    let mut merged = Vec::new();
    for p in patch_items {
        let Some(pid) = id(p) else {
            if !(p.is_map() && p.get(PATCH).is_some()) {
                merged.push(without_directives(p));
            }
            continue;
        };
        let found = original
            .iter()
            .position(|o| o.as_ref().and_then(id).as_deref() == Some(pid.as_str()));
        let taken = found.and_then(|i| original[i].take());
        if is_delete(p) {
            continue;
        }
        match taken {
            // The list's name tells the element's merge which kind of thing it is in.
            Some(mut o) => {
                merge_map(&mut o, p, field, builtin);
                merged.push(o);
            }
            None => merged.push(without_directives(p)),
        }
    }
    merged.extend(original.into_iter().flatten());
    *items = merged.into();
}

/// Container ports, once any of them names a protocol, are keyed by port and protocol
/// (TCP when unset): a matched port keeps its place, new ports go first, and a patch port
/// without a protocol that meets a written one is dropped, as kustomize does.
fn merge_ports(items: &mut Shared<Node>, patch_items: &[Node], builtin: bool) {
    let key = |n: &Node| {
        (
            n.get("containerPort")
                .and_then(Node::as_str)
                .map(str::to_string),
            n.str_at("protocol").unwrap_or("TCP").to_string(),
        )
    };
    let mut added = Vec::new();
    for p in patch_items {
        match items.iter().position(|o| key(o) == key(p)) {
            Some(_) if is_delete(p) => items.retain(|o| key(o) != key(p)),
            Some(i) if p.get("protocol").is_some() || items[i].get("protocol").is_none() => {
                merge_map(&mut items.make_mut()[i], p, "ports", builtin);
            }
            Some(_) => {}
            None if is_delete(p) => {}
            None => added.push(without_directives(p)),
        }
    }
    added.extend(std::mem::take(items));
    *items = added.into();
}

/// One failed JSON patch operation: where, and why.
#[derive(Debug)]
pub struct PatchError {
    pub span: Span,
    pub message: String,
}

fn parse_pointer(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!(
            "`{path}` is not a JSON pointer: it must start with `/`"
        ));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// Resolves every token but the last, returning the container and the last token.
fn parent<'n>(doc: &'n mut Node, tokens: &[String]) -> Result<(&'n mut Node, String), String> {
    let Some((last, init)) = tokens.split_last() else {
        return Err("the operation needs a path below the document root".into());
    };
    let mut node = doc;
    for t in init {
        node = child(node, t)?;
    }
    Ok((node, last.clone()))
}

fn child<'n>(node: &'n mut Node, token: &str) -> Result<&'n mut Node, String> {
    match node.value {
        Value::Map { .. } => node
            .get_mut(token)
            .ok_or_else(|| format!("no `{token}` at this path")),
        Value::Seq { ref mut items, .. } => {
            let i: usize = token
                .parse()
                .map_err(|_| format!("`{token}` is not an index into a list"))?;
            let len = items.len();
            if i >= len {
                // Checked before the list is made this tree's own: a miss copies nothing.
                return Err(format!("index {i} is past the end of a list of {len}"));
            }
            Ok(&mut items.make_mut()[i])
        }
        Value::Scalar(_) => Err(format!("cannot descend into `{token}` of a scalar")),
    }
}

fn get(doc: &Node, tokens: &[String]) -> Result<Node, String> {
    let mut node = doc;
    for t in tokens {
        node = match &node.value {
            Value::Map { .. } => node
                .get(t)
                .ok_or_else(|| format!("no `{t}` at this path"))?,
            Value::Seq { items, .. } => t
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i))
                .ok_or_else(|| format!("`{t}` is not an index into this list"))?,
            Value::Scalar(_) => return Err(format!("cannot descend into `{t}` of a scalar")),
        };
    }
    Ok(node.clone())
}

fn add(doc: &mut Node, tokens: &[String], value: Node, key_span: Span) -> Result<(), String> {
    if tokens.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (container, last) = parent(doc, tokens)?;
    match &mut container.value {
        Value::Map { .. } => {
            container.set(&last, value, key_span);
            Ok(())
        }
        Value::Seq { items, .. } => {
            if last == "-" {
                items.push(value);
                return Ok(());
            }
            let i: usize = last
                .parse()
                .map_err(|_| format!("`{last}` is not an index into a list"))?;
            if i > items.len() {
                return Err(format!(
                    "index {i} is past the end of a list of {}",
                    items.len()
                ));
            }
            items.insert(i, value);
            Ok(())
        }
        Value::Scalar(_) => Err(format!("cannot add `{last}` to a scalar")),
    }
}

fn remove(doc: &mut Node, tokens: &[String]) -> Result<Node, String> {
    let (container, last) = parent(doc, tokens)?;
    match &mut container.value {
        Value::Map { .. } => container
            .remove(&last)
            .ok_or_else(|| format!("no `{last}` to remove")),
        Value::Seq { items, .. } => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("`{last}` is not an index into a list"))?;
            if i >= items.len() {
                return Err(format!(
                    "index {i} is past the end of a list of {}",
                    items.len()
                ));
            }
            Ok(items.remove(i))
        }
        Value::Scalar(_) => Err(format!("cannot remove `{last}` from a scalar")),
    }
}

/// Applies a JSON 6902 patch (a list of operations) to `doc`, stopping at the first failing
/// operation, as kustomize does.
pub fn json_patch(doc: &mut Node, ops: &Node) -> Result<(), PatchError> {
    let Some(list) = ops.is_seq().then(|| ops.items()) else {
        return Err(PatchError {
            span: ops.span,
            message: "a JSON 6902 patch must be a list of operations".into(),
        });
    };
    for op in list {
        apply_op(doc, op).map_err(|message| PatchError {
            span: op.span,
            message,
        })?;
    }
    Ok(())
}

fn apply_op(doc: &mut Node, op: &Node) -> Result<(), String> {
    let name = op.str_at("op").ok_or("the operation has no `op`")?;
    let path = op
        .get("path")
        .and_then(Node::as_str)
        .ok_or("the operation has no `path`")?;
    let tokens = parse_pointer(path)?;
    let value = || {
        op.get("value")
            .cloned()
            .ok_or_else(|| format!("`{name}` needs a `value`"))
    };
    let from = || -> Result<Vec<String>, String> {
        parse_pointer(
            op.str_at("from")
                .ok_or_else(|| format!("`{name}` needs `from`"))?,
        )
    };
    let key_span = op.get("path").map_or(op.span, |n| n.span);
    match name {
        "add" => add(doc, &tokens, value()?, key_span),
        "remove" => remove(doc, &tokens).map(drop),
        "replace" => {
            let v = value()?;
            if tokens.is_empty() {
                *doc = v;
                return Ok(());
            }
            let (container, last) = parent(doc, &tokens)?;
            // The JSON patch library kustomize uses (evanphx/json-patch v4) looks a key up
            // without failing when it is missing, so `replace` on a missing key of an existing
            // mapping sets it, like `add`; a missing list index or parent still fails.
            if container.is_map() && container.get(&last).is_none() {
                container.set(&last, v, key_span);
                return Ok(());
            }
            *child(container, &last)? = v;
            Ok(())
        }
        "move" => {
            let from = from()?;
            let v = remove(doc, &from)?;
            add(doc, &tokens, v, key_span)
        }
        "copy" => {
            let v = get(doc, &from()?)?;
            add(doc, &tokens, v, key_span)
        }
        "test" => {
            let have = get(doc, &tokens)?;
            if crate::yaml::to_json(&have) == crate::yaml::to_json(&value()?) {
                Ok(())
            } else {
                Err(format!(
                    "test failed: `{path}` does not hold the given value"
                ))
            }
        }
        other => Err(format!(
            "`{other}` is not a JSON patch operation (add, remove, replace, move, copy, test)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse, to_json, ParseLimits};

    fn node(text: &str) -> Node {
        parse(0, text, ParseLimits::default())
            .documents
            .remove(0)
            .root
    }

    #[test]
    fn json_patch_operations_follow_rfc_6902() {
        let mut doc = node("a: {b: [1, 2]}\nc: x\n");
        let ops = node(
            "- {op: add, path: /a/b/-, value: 3}\n\
             - {op: replace, path: /c, value: y}\n\
             - {op: copy, from: /c, path: /d}\n\
             - {op: move, from: /d, path: /e~1f}\n\
             - {op: remove, path: /a/b/0}\n\
             - {op: test, path: /c, value: y}\n",
        );
        json_patch(&mut doc, &ops).unwrap();
        assert_eq!(
            to_json(&doc),
            serde_json::json!({"a": {"b": [2, 3]}, "c": "y", "e/f": "y"})
        );
    }

    #[test]
    fn replace_of_a_missing_key_sets_it_as_kustomize_does() {
        let mut doc = node("spec: {a: 1}\n");
        json_patch(&mut doc, &node("- {op: replace, path: /spec/b, value: 2}")).unwrap();
        assert_eq!(to_json(&doc), serde_json::json!({"spec": {"a": 1, "b": 2}}));
        for ops in [
            "- {op: replace, path: /missing/b, value: 2}",
            "- {op: replace, path: /spec/a/0, value: 2}",
        ] {
            assert!(json_patch(&mut doc, &node(ops)).is_err(), "{ops}");
        }
    }

    #[test]
    fn a_failing_operation_names_itself() {
        let mut doc = node("a: 1\n");
        for (ops, want) in [
            ("- {op: frobnicate, path: /a}", "not a JSON patch operation"),
            ("- {op: remove, path: /missing}", "no `missing`"),
            ("- {op: add, path: a, value: 1}", "must start with `/`"),
            ("- {op: test, path: /a, value: 2}", "test failed"),
            ("{op: add}", "must be a list"),
        ] {
            let err = json_patch(&mut doc, &node(ops)).unwrap_err();
            assert!(err.message.contains(want), "{ops}: {}", err.message);
        }
    }

    #[test]
    fn strategic_merge_keys_lists_of_built_in_kinds_only() {
        let base = "spec:\n  containers:\n  - {name: a, image: a:1}\n  - {name: b, image: b:1}\n";
        let patch =
            node("spec:\n  containers:\n  - {name: b, image: b:2}\n  - {name: c, image: c:1}\n");
        let mut builtin = node(base);
        strategic_merge(&mut builtin, &patch, true);
        assert_eq!(
            to_json(&builtin)["spec"]["containers"],
            serde_json::json!([
                {"name": "b", "image": "b:2"},
                {"name": "c", "image": "c:1"},
                {"name": "a", "image": "a:1"}
            ])
        );
        let mut custom = node(base);
        strategic_merge(&mut custom, &patch, false);
        assert_eq!(to_json(&custom)["spec"], to_json(&patch)["spec"]);
    }

    #[test]
    fn directives_delete_and_replace() {
        let mut doc = node("m: {a: 1, b: 2}\nenv:\n- {name: x}\n- {name: y}\nk: v\n");
        let patch =
            node("m: {$patch: replace, c: 3}\nenv:\n- {name: x, $patch: delete}\nk: null\n");
        strategic_merge(&mut doc, &patch, true);
        assert_eq!(
            to_json(&doc),
            serde_json::json!({"m": {"c": 3}, "env": [{"name": "y"}]})
        );
    }
}
