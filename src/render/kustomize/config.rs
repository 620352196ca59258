//! Field specs: where in an object a transformer looks, as kustomize writes them
//! (`api/types/fieldspec.go`, kustomize v5.5.0), and the `configurations:` files that add name
//! references to kustomize's built-in ones (`api/internal/konfig/builtinpluginconsts/
//! namereference.go`). A path is a `/`-separated list of keys; a list met on the way is
//! walked item by item with the same key; `\/` is a `/` inside a key (an annotation's name).

use crate::yaml::Node;

/// A place where objects of `target` kind are named: `path` inside objects of `referrer`
/// kind (any kind when `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameRef {
    pub target: String,
    pub referrer: Option<String>,
    pub path: Vec<String>,
}

/// Most `nameReference` entries one configuration file may add; a hostile file cannot make
/// every object walk without end.
const MAX_REFS: usize = 1000;
/// Longest field path followed.
const MAX_DEPTH: usize = 64;

/// The segments of a field spec path.
pub fn split_path(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                cur.push('/');
                chars.next();
            }
            '/' => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.retain(|s| !s.is_empty());
    out.truncate(MAX_DEPTH);
    out
}

/// The `nameReference` entries of one configuration file. Other sections (`commonLabels`,
/// `namePrefix`, `images`...) are returned by name, as they are not applied.
pub fn name_refs(doc: &Node, out: &mut Vec<NameRef>) -> Vec<String> {
    let mut ignored = Vec::new();
    for e in doc.entries() {
        let Some(section) = e.key.as_str() else {
            continue;
        };
        if section != "nameReference" {
            if !e.value.is_null() {
                ignored.push(section.to_string());
            }
            continue;
        }
        for target in e.value.items() {
            let Some(kind) = target.str_at("kind") else {
                continue;
            };
            for spec in target.get("fieldSpecs").map(Node::items).unwrap_or(&[]) {
                let Some(path) = spec.str_at("path") else {
                    continue;
                };
                if out.len() >= MAX_REFS {
                    return ignored;
                }
                let r = NameRef {
                    target: kind.to_string(),
                    referrer: spec.str_at("kind").map(str::to_string),
                    path: split_path(path),
                };
                if !r.path.is_empty() && !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    ignored
}

/// Calls `f` with every node at `path` below `node`, and its position (`at` leads to `node`);
/// a list on the way is walked item by item.
pub fn visit_path(
    node: &Node,
    path: &[String],
    at: &mut Vec<usize>,
    f: &mut dyn FnMut(&[usize], &Node),
) {
    if node.is_seq() {
        for (i, item) in node.items().iter().enumerate() {
            at.push(i);
            visit_path(item, path, at, f);
            at.pop();
        }
        return;
    }
    let Some((first, rest)) = path.split_first() else {
        f(at, node);
        return;
    };
    if let Some(i) = node.entry_index(first) {
        at.push(i);
        visit_path(&node.entries()[i].value, rest, at, f);
        at.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::split_path;

    #[test]
    fn escaped_slashes_stay_in_the_key() {
        assert_eq!(
            split_path("metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret"),
            [
                "metadata",
                "annotations",
                "nginx.ingress.kubernetes.io/auth-secret"
            ]
        );
        assert_eq!(
            split_path("spec/valuesFrom/name"),
            ["spec", "valuesFrom", "name"]
        );
    }
}
