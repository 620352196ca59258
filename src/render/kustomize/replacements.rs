//! `replacements:`: values copied from one object's field into fields of others, the last of
//! kustomize's built-in transformers (`api/filters/replacement/replacement.go`, field paths as
//! `kyaml/yaml/match.go` `PathMatcher` and `kyaml/yaml/fns.go` `PathGetter` walk them,
//! kustomize v5.5.0).

use super::patches::{matches_selector, meta_map, parse_selector, refresh_identity};
use super::{problem, Kustomizer, Res};
use crate::render::Note;
use crate::yaml::{self, typing, Node, Span, Style};
use std::path::Path;

/// Longest field path followed, and most list items created by one path: input is hostile.
const MAX_PARTS: usize = 64;

/// The tag of a scalar leaf a target path made: it has no type of its own yet, so the text
/// copied into it is typed as written.
const CREATED: &str = "!gitops-lint/created";

/// Why a replacement was not applied.
pub(super) enum Fail {
    /// kustomize fails the build, with this message.
    Error(String),
    /// What kustomize makes of it is not known here: the output is not guessed.
    Unknown(String),
}

impl Kustomizer<'_> {
    pub(super) fn replacements(&mut self, dir: &Path, k: &Node, res: &mut [Res]) {
        let Some(list) = k.get("replacements").filter(|n| !n.is_null()) else {
            return;
        };
        let mut all: Vec<Node> = Vec::new();
        for item in list.items() {
            let Some(path) = item.get("path").filter(|p| !p.is_null()) else {
                all.push(item.clone());
                continue;
            };
            if item.get("source").is_some() || item.get("targets").is_some() {
                self.fail(
                    "replacements",
                    item.span,
                    Fail::Error("cannot specify both path and inline replacement".into()),
                );
                return;
            }
            // The file holds one replacement or a list of them; only its first document is
            // read (`plugin/builtin/replacementtransformer`, `Config`, kustomize v5.5.0).
            let first = self.patch_docs(dir, path, false).into_iter().next();
            match first {
                Some(doc) if doc.is_seq() => all.extend(doc.items().iter().cloned()),
                Some(doc) if doc.is_map() => all.push(doc),
                _ => {
                    self.fail(
                        "replacements",
                        path.span,
                        Fail::Error("unsupported replacement type in the replacement file".into()),
                    );
                    return;
                }
            }
        }
        for r in &all {
            if let Err(f) = apply(r, res) {
                self.fail("replacements", r.span, f);
                return;
            }
        }
    }

    /// A replacement that cannot be applied: a build error, unless objects that are not
    /// rendered could have changed the outcome; a note when its result is unknown here.
    pub(super) fn fail(&mut self, field: &str, span: Span, f: Fail) {
        match f {
            Fail::Error(why) if !self.opaque => {
                let message =
                    self.in_context(format!("`{field}`: {why}: kustomize fails the build"));
                self.problems
                    .push(problem(span, message, "fix what it names"));
            }
            Fail::Error(why) | Fail::Unknown(why) => {
                self.notes.push(Note {
                    span,
                    message: format!("`{field}` not rendered: {why}"),
                });
                self.opaque = true;
            }
        }
    }
}

fn text(n: Option<&Node>) -> &str {
    n.and_then(Node::as_str).unwrap_or("")
}

/// Whether an object is selected by a kustomize `ResId` (group, version, kind, name,
/// namespace; an empty field matches all), by its current identity or an earlier one
/// (`kyaml/resid/resid.go`, `IsSelectedBy`; `api/internal/utils/makeResIds.go`).
fn selected(r: &Res, sel: &Node) -> bool {
    let o = &r.obj;
    let want = |key: &str, have: &str| {
        let w = text(sel.get(key));
        w.is_empty() || w == have
    };
    if !want("group", o.group()) || !want("version", o.version()) || !want("kind", &o.kind) {
        return false;
    }
    let name = text(sel.get("name"));
    if !name.is_empty() && !r.named(name) {
        return false;
    }
    let ns = text(sel.get("namespace"));
    let same_ns = |have: Option<&str>| {
        let have = have.unwrap_or("");
        have == ns || (have.is_empty() && ns == "default") || (ns.is_empty() && have == "default")
    };
    ns.is_empty() || same_ns(o.namespace.as_deref()) || same_ns(r.orig_ns.as_deref())
}

fn selector_matches(r: &Res, sel: &Node) -> Result<bool, Fail> {
    for (key, meta) in [
        ("labelSelector", "labels"),
        ("annotationSelector", "annotations"),
    ] {
        let s = text(sel.get(key));
        if s.is_empty() {
            continue;
        }
        let reqs = parse_selector(s).map_err(Fail::Error)?;
        if !matches_selector(&reqs, &meta_map(&r.obj, meta)) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn apply(r: &Node, res: &mut [Res]) -> Result<(), Fail> {
    let (Some(source), Some(targets)) = (
        r.get("source").filter(|n| !n.is_null()),
        r.get("targets").filter(|n| !n.is_null()),
    ) else {
        return Err(Fail::Error(
            "replacements must specify a source and at least one target".into(),
        ));
    };
    let value = source_value(source, res)?;
    for t in targets.items() {
        let Some(select) = t.get("select").filter(|n| !n.is_null()) else {
            return Err(Fail::Error(
                "target must specify resources to select".into(),
            ));
        };
        let rejects = t.get("reject").map(Node::items).unwrap_or(&[]);
        let default = [Node::string("metadata.name", t.span)];
        let paths = match t.get("fieldPaths").map(Node::items) {
            Some(p) if !p.is_empty() => p,
            _ => &default[..],
        };
        let options = t.get("options");
        for r in res.iter_mut() {
            if !selector_matches(r, select)? {
                continue;
            }
            let mut rejected = false;
            for rej in rejects {
                let by_meta = !text(rej.get("labelSelector")).is_empty()
                    || !text(rej.get("annotationSelector")).is_empty();
                if by_meta && selector_matches(r, rej)? {
                    rejected = true;
                }
                let by_id = ["group", "version", "kind", "name", "namespace"]
                    .iter()
                    .any(|k| !text(rej.get(k)).is_empty());
                if by_id && selected(r, rej) {
                    rejected = true;
                }
            }
            if rejected || !selected(r, select) {
                continue;
            }
            for fp in paths {
                let path = split_path(text(Some(fp)))?;
                copy_to(&mut r.obj.root, &path, &value, options)?;
            }
            refresh_identity(&mut r.obj);
        }
    }
    Ok(())
}

/// The value a replacement copies: its source object's field, refined by its options.
fn source_value(source: &Node, res: &[Res]) -> Result<Node, Fail> {
    let mut found = None;
    for r in res {
        if selected(r, source) {
            if found.is_some() {
                return Err(Fail::Error(
                    "multiple matches for the source selector".into(),
                ));
            }
            found = Some(r);
        }
    }
    let Some(r) = found else {
        return Err(Fail::Error(format!(
            "nothing selected by the source ({} `{}`)",
            text(source.get("kind")),
            text(source.get("name"))
        )));
    };
    let fp = match text(source.get("fieldPath")) {
        "" => "metadata.name",
        fp => fp,
    };
    let path = split_path(fp)?;
    let value = lookup(&r.obj.root, &path)?
        .filter(|n| !is_nil_or_empty(n))
        .ok_or_else(|| {
            Fail::Error(format!(
                "fieldPath `{fp}` is missing for the replacement source"
            ))
        })?;
    let delimiter = text(source.get("options").and_then(|o| o.get("delimiter")));
    if delimiter.is_empty() {
        return Ok(value.clone());
    }
    let Some(s) = value.as_scalar() else {
        return Err(Fail::Error(
            "delimiter option can only be used with scalar nodes".into(),
        ));
    };
    let index = option_index(source.get("options"))?;
    let parts: Vec<&str> = s.text.split(delimiter).collect();
    let part = usize::try_from(index)
        .ok()
        .and_then(|i| parts.get(i))
        .ok_or_else(|| Fail::Error(format!("options.index {index} is out of bounds")))?;
    Ok(retext(value, part))
}

fn option_index(options: Option<&Node>) -> Result<i64, Fail> {
    match options
        .and_then(|o| o.get("index"))
        .and_then(Node::as_scalar)
    {
        None => Ok(0),
        Some(s) => s
            .text
            .parse()
            .map_err(|_| Fail::Error(format!("options.index `{}` is not a number", s.text))),
    }
}

/// A copy of a scalar with another text, of the same type when it was a string.
fn retext(value: &Node, text: &str) -> Node {
    if scalar_kind(value) == typing::Kind::Str {
        let mut n = Node::string(text, value.span);
        if value.style != Style::Plain {
            n.style = value.style;
        }
        n
    } else {
        Node::scalar(text, Style::Plain, value.span)
    }
}

fn scalar_kind(n: &Node) -> typing::Kind {
    match n.as_scalar() {
        Some(s) if s.tag.is_some_and(|t| t.ends_with(":str") || t == "!") => typing::Kind::Str,
        Some(s) => typing::yaml12(s),
        None => typing::Kind::Str,
    }
}

fn is_nil_or_empty(n: &Node) -> bool {
    match &n.value {
        yaml::Value::Scalar(_) => n
            .as_scalar()
            .is_some_and(|s| typing::yaml12(s) == typing::Kind::Null),
        yaml::Value::Seq { items } => items.is_empty(),
        yaml::Value::Map { entries } => entries.is_empty(),
    }
}

/// kustomize's `SmarterPathSplitter`: `.`-separated, `\.` escaping a dot, a bracketed part
/// kept whole (with its brackets when it holds `=`, a list item selector; without them when it
/// is a key holding dots).
pub(super) fn split_path(path: &str) -> Result<Vec<String>, Fail> {
    let mut raw: Vec<String> = path.split('.').map(str::to_string).collect();
    if raw.len() > 1 && raw[0].is_empty() {
        raw.remove(0);
    }
    let mut parts: Vec<String> = Vec::new();
    for p in raw {
        match parts.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push('.');
                last.push_str(&p);
            }
            _ => parts.push(p),
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        let p = &parts[i];
        if p.starts_with('[') && !p.ends_with(']') {
            let mut joined = p.clone();
            while i + 1 < parts.len() {
                i += 1;
                joined.push('.');
                joined.push_str(&parts[i]);
                if parts[i].ends_with(']') {
                    break;
                }
            }
            if joined.contains('=') {
                out.push(joined);
            } else {
                out.push(joined.trim_matches(|c| c == '[' || c == ']').to_string());
            }
        } else {
            out.push(p.clone());
        }
        i += 1;
    }
    if out.len() > MAX_PARTS {
        return Err(Fail::Unknown("field path too long".into()));
    }
    Ok(out)
}

fn is_list_index(p: &str) -> bool {
    p.starts_with('[') && p.ends_with(']')
}

fn split_index(p: &str) -> Result<(&str, &str), Fail> {
    let inner = p.strip_prefix('[').unwrap_or(p);
    let inner = inner.strip_suffix(']').unwrap_or(inner);
    inner.split_once('=').ok_or_else(|| {
        Fail::Error(
            "list path element must contain fieldName=fieldValue for element to match".into(),
        )
    })
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits.
fn atoi(p: &str) -> Option<i64> {
    let digits = p.strip_prefix(['+', '-']).unwrap_or(p);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

/// `PathGetter` without creation: a field, an index, `-` (the last item) or `[key=value]`
/// (the first item whose `key` is exactly `value`).
pub(super) fn lookup<'n>(root: &'n Node, path: &[String]) -> Result<Option<&'n Node>, Fail> {
    let mut node = root;
    for part in path.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let next = if let Some(i) = atoi(part) {
            let i = usize::try_from(i)
                .map_err(|_| Fail::Error(format!("array index {i} cannot be negative")))?;
            node.is_seq().then(|| node.items().get(i)).flatten()
        } else if part == "-" {
            node.items().last()
        } else if part == "*" {
            return Err(Fail::Error(
                "wildcard is not supported in a source fieldPath".into(),
            ));
        } else if is_list_index(part) {
            let (key, value) = split_index(part)?;
            node.items().iter().find(|item| {
                if key.is_empty() {
                    item.as_str() == Some(value)
                } else {
                    item.get(key).and_then(Node::as_str) == Some(value)
                }
            })
        } else {
            node.get(part)
        };
        match next {
            Some(n) => node = n,
            None => return Ok(None),
        }
    }
    Ok(Some(node))
}

/// Go's `regexp.MatchString`: unanchored.
fn regex(p: &str) -> Result<regex::Regex, Fail> {
    regex::RegexBuilder::new(p)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| Fail::Error(format!("`{p}` is not a valid regular expression: {e}")))
}

/// What a created node is: a list when the next part selects an item, the value's own kind
/// at the end of the path, a mapping otherwise (`getPathPartKind`).
fn created(next: Option<&String>, value: &Node, span: Span) -> Node {
    match next {
        Some(n) if is_list_index(n) || atoi(n).is_some_and(|i| i >= 0) => Node::empty_seq(span),
        Some(_) => Node::empty_map(span),
        None => match value.value {
            yaml::Value::Scalar(_) => Node {
                span,
                style: Style::Plain,
                value: yaml::Value::Scalar(yaml::Scalar::new("", Some(CREATED))),
            },
            yaml::Value::Seq { .. } => Node::empty_seq(span),
            yaml::Value::Map { .. } => Node::empty_map(span),
        },
    }
}

/// `PathMatcher`: every node `path` reaches (`*` every item of a list, `[key=regex]` every item
/// whose `key` matches), created when `create`; `f` runs on each. Returns how many.
fn walk(
    node: &mut Node,
    path: &[String],
    create: bool,
    value: &Node,
    f: &mut dyn FnMut(&mut Node) -> Result<(), Fail>,
) -> Result<usize, Fail> {
    let Some((first, rest)) = path.split_first() else {
        f(node)?;
        return Ok(1);
    };
    let span = node.span;
    if let Some(i) = atoi(first).filter(|i| *i >= 0) {
        let i = usize::try_from(i).unwrap_or(usize::MAX);
        let Some(items) = node.item_list_mut() else {
            return Err(Fail::Error(format!(
                "`{first}` indexes something that is not a list"
            )));
        };
        if items.len() == i && create {
            items.push(created(rest.first(), value, span));
        }
        let len = items.len();
        let Some(item) = node.items_mut().and_then(|items| items.get_mut(i)) else {
            return Err(Fail::Error(format!(
                "index {i} specified but only {len} elements found"
            )));
        };
        return walk(item, rest, create, value, f);
    }
    if is_list_index(first) {
        let (key, pattern) = split_index(first)?;
        let re = regex(pattern)?;
        let Some(items) = node.items_mut() else {
            return Err(Fail::Error(format!(
                "`{first}` selects items of something that is not a list"
            )));
        };
        let mut n = 0;
        for item in items.iter_mut() {
            let hit = if key.is_empty() {
                item.as_str().is_some_and(|s| re.is_match(s.trim()))
            } else {
                item.get(key)
                    .and_then(Node::as_str)
                    .is_some_and(|s| re.is_match(s.trim()))
            };
            if hit {
                n += walk(item, rest, create, value, f)?;
            }
        }
        if n > 0 || !create {
            return Ok(n);
        }
        let made = if key.is_empty() {
            Node::string(pattern, span)
        } else {
            let mut m = Node::empty_map(span);
            m.set(key, Node::string(pattern, span), span);
            m
        };
        if let Some(items) = node.item_list_mut() {
            items.push(made);
        }
        return match node.items_mut().and_then(|items| items.last_mut()) {
            Some(item) => walk(item, rest, create, value, f),
            None => Ok(0),
        };
    }
    if first == "*" {
        let Some(items) = node.items_mut() else {
            return Err(Fail::Error(
                "`*` in a field path must stand for the items of a list".into(),
            ));
        };
        let mut n = 0;
        for item in items.iter_mut() {
            n += walk(item, rest, create, value, f)?;
        }
        return Ok(n);
    }
    if node.get(first).is_none() {
        if !create {
            return Ok(0);
        }
        if !node.is_map() {
            return Err(Fail::Unknown(format!(
                "`{first}` cannot be created in a non-mapping"
            )));
        }
        node.set(first, created(rest.first(), value, span), span);
    }
    match node.get_mut(first) {
        Some(child) => walk(child, rest, create, value, f),
        None => Ok(0),
    }
}

fn copy_to(
    root: &mut Node,
    path: &[String],
    value: &Node,
    options: Option<&Node>,
) -> Result<(), Fail> {
    let flag = |key: &str| {
        options
            .and_then(|o| o.get(key))
            .and_then(Node::as_scalar)
            .and_then(typing::as_bool)
            .unwrap_or(false)
    };
    let create = flag("create");
    let delimiter = text(options.and_then(|o| o.get("delimiter")));
    let index = option_index(options)?;
    let n = walk(root, path, create, value, &mut |t| {
        set_value(t, value, delimiter, index)
    })?;
    if n == 0 {
        let how = if create { "find or create" } else { "find" };
        return Err(Fail::Error(format!(
            "unable to {how} field \"{}\" in replacement target",
            path.join(".")
        )));
    }
    Ok(())
}

/// `setFieldValue`: a scalar target takes the value's text and keeps its type; any other
/// target becomes a copy of the value.
fn set_value(target: &mut Node, value: &Node, delimiter: &str, index: i64) -> Result<(), Fail> {
    let mut value_text = value.as_scalar().map(|s| s.text.to_string());
    if !delimiter.is_empty() {
        let Some(t) = target.as_scalar() else {
            return Err(Fail::Error(
                "delimiter option can only be used with scalar nodes".into(),
            ));
        };
        let mut parts: Vec<String> = t.text.split(delimiter).map(str::to_string).collect();
        let v = value_text.clone().unwrap_or_default();
        match usize::try_from(index) {
            Err(_) => parts.insert(0, v),
            Ok(i) if i >= parts.len() => parts.push(v),
            Ok(i) => parts[i] = v,
        }
        value_text = Some(parts.join(delimiter));
    }
    let Some(t) = target.as_scalar() else {
        *target = value.clone();
        return Ok(());
    };
    let Some(new) = value_text else {
        return Err(Fail::Unknown(
            "a list or mapping copied into a scalar field".into(),
        ));
    };
    let span = value.span;
    // A leaf just made has no type of its own: the text is typed as written.
    if t.tag == Some(CREATED) {
        *target = if typing::yaml12(yaml::ScalarRef::plain(&new)) == typing::Kind::Str {
            Node::string(new, span)
        } else {
            Node::scalar(new, Style::Plain, span)
        };
        return Ok(());
    }
    let old = scalar_kind(target);
    if old == typing::Kind::Str {
        let style = target.style;
        *target = Node::string(new, span);
        if style != Style::Plain {
            target.style = style;
        }
        return Ok(());
    }
    let now = typing::yaml12(yaml::ScalarRef::plain(&new));
    if std::mem::discriminant(&now) == std::mem::discriminant(&old) {
        *target = Node::scalar(new, Style::Plain, span);
        Ok(())
    } else if now == typing::Kind::Str {
        // The field keeps its type, and the text cannot be read as that type.
        Err(Fail::Error(format!(
            "the value `{new}` replaces a field of another type (\"cannot decode !!str\")"
        )))
    } else {
        Err(Fail::Unknown(format!(
            "the value `{new}` replaces a field of another type"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::split_path;

    fn split(p: &str) -> Vec<String> {
        split_path(p).unwrap_or_default()
    }

    #[test]
    fn bracketed_parts_stay_whole() {
        assert_eq!(
            split("spec.containers.[name=com.foo.app].image"),
            ["spec", "containers", "[name=com.foo.app]", "image"]
        );
        assert_eq!(
            split("metadata.annotations.[example.com/host]"),
            ["metadata", "annotations", "example.com/host"]
        );
        assert_eq!(split("data.a\\.b.c"), ["data", "a.b", "c"]);
        assert_eq!(split(".spec.x"), ["spec", "x"]);
    }
}
