//! The span tree: every node of every document keeps the byte range it came from, so a
//! finding can always point at the exact YAML node that causes it.
//!
//! The event parser sits behind [`parse`]; nothing else in the crate names it, so it can be
//! swapped without touching recognition or rules.

mod build;
mod skim;
pub mod typing;

pub use build::{
    parse, parse_pruned, ParseLimits, Prune, ALIAS_NODES, FILE_NODES, MAX_DEPTH, PRUNE_DEPTH,
    RUN_NODES,
};

use std::fmt::Write as _;

/// Index of a file in the [`crate::source::SourceDb`].
pub type FileId = u32;

/// A byte range in one source file. Rendered objects keep the span of the file that set each
/// value, so a span is always a real place the user can open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end.max(start) as u32,
        }
    }

    pub fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The smallest span covering both (same file assumed).
    pub fn to(&self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// How a node is written: a scalar plain, quoted, literal (`|`) or folded (`>`); a collection
/// on indented lines or in flow form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
    /// A collection written on indented lines.
    Block,
    /// A collection written `[a, b]` or `{a: b}`.
    Flow,
}

/// A scalar's text, and its explicit tag (such as `!!str`, as written after resolution of
/// handles) when it has one. The size of its text alone: tags are rare, and every scalar of
/// every tree is one of these.
#[derive(Clone, Debug)]
pub struct Scalar(Repr);

#[derive(Clone, Debug)]
enum Repr {
    /// Short texts (most keys and values) are stored inline, without an allocation.
    Text(compact_str::CompactString),
    Tagged(Box<(compact_str::CompactString, Box<str>)>),
}

impl Scalar {
    pub fn new(text: impl Into<compact_str::CompactString>, tag: Option<&str>) -> Scalar {
        let text = text.into();
        Scalar(match tag {
            None => Repr::Text(text),
            Some(tag) => Repr::Tagged(Box::new((text, tag.into()))),
        })
    }

    pub fn text(&self) -> &str {
        match &self.0 {
            Repr::Text(t) => t,
            Repr::Tagged(t) => &t.0,
        }
    }

    pub fn tag(&self) -> Option<&str> {
        match &self.0 {
            Repr::Text(_) => None,
            Repr::Tagged(t) => Some(&t.1),
        }
    }

    /// Replaces the text, keeping the tag.
    pub fn set_text(&mut self, text: impl Into<compact_str::CompactString>) {
        match &mut self.0 {
            Repr::Text(t) => *t = text.into(),
            Repr::Tagged(t) => t.0 = text.into(),
        }
    }
}

/// A scalar node as its readers see it: its text, how it is written, its tag.
#[derive(Clone, Copy, Debug)]
pub struct ScalarRef<'a> {
    pub text: &'a str,
    pub style: Style,
    pub tag: Option<&'a str>,
}

impl<'a> ScalarRef<'a> {
    /// A plain scalar without a tag: `text` as a reader would type it unquoted.
    pub fn plain(text: &'a str) -> ScalarRef<'a> {
        ScalarRef {
            text,
            style: Style::Plain,
            tag: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub key: Node,
    pub value: Node,
}

/// The entry for `key` among a mapping's `entries`. When a key is duplicated the last one
/// wins, as in the JSON object that `sigs.k8s.io/yaml` hands to the API server.
pub fn entry_in<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Entry> {
    entries.iter().rev().find(|e| e.key.as_str() == Some(key))
}

/// A string value among a mapping's `entries`, unless it is empty, null or not a scalar.
pub fn str_in<'a>(entries: &'a [Entry], key: &str) -> Option<&'a str> {
    entry_in(entries, key)
        .map(|e| &e.value)
        .filter(|n| !n.is_null())
        .and_then(Node::as_str)
}

/// A collection's children, shared by the copies of a tree until one of them changes them
/// (a mutating method of [`ecow::EcoVec`] copies a shared vector, or what it keeps of it,
/// first): kustomize renders each overlay from a copy of its base, and most of a copy is never
/// touched.
pub type Shared<T> = ecow::EcoVec<T>;

#[derive(Clone, Debug)]
pub enum Value {
    Scalar(Scalar),
    Seq { items: Shared<Node> },
    Map { entries: Shared<Entry> },
}

#[derive(Clone, Debug)]
pub struct Node {
    pub span: Span,
    /// How the node is written. It sits here rather than in [`Scalar`] or [`Value`] because
    /// here it fills room the alignment leaves anyway: a node is 40 bytes, and a tree is
    /// mostly nodes.
    pub style: Style,
    pub value: Value,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Node>() == 40);

/// One YAML document of a file.
#[derive(Debug)]
pub struct Document {
    /// Zero-based position of the document in its file.
    pub index: usize,
    pub root: Node,
}

#[derive(Clone, Debug)]
pub struct Comment {
    pub span: Span,
    pub text: String,
}

/// What the parse stage could not turn into a clean tree.
#[derive(Clone, Debug)]
pub struct ParseProblem {
    pub kind: ProblemKind,
    pub span: Span,
    pub message: String,
    /// A related place, e.g. the first occurrence of a duplicated key.
    pub related: Option<(Span, String)>,
    /// What the user can do about it.
    pub help: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    InvalidYaml,
    DuplicateKey,
}

#[derive(Debug, Default)]
pub struct ParsedFile {
    pub documents: Vec<Document>,
    pub problems: Vec<ParseProblem>,
    pub comments: Vec<Comment>,
    /// Set by [`parse_pruned`] when it left a collection unbuilt: the limits it parsed with,
    /// to parse the text again whole.
    pub pruned: Option<ParseLimits>,
    /// What parsing cost, in the nodes [`ParseLimits::file_nodes`] counts.
    pub nodes: usize,
}

impl Node {
    pub fn as_scalar(&self) -> Option<ScalarRef<'_>> {
        match &self.value {
            Value::Scalar(s) => Some(ScalarRef {
                text: s.text(),
                style: self.style,
                tag: s.tag(),
            }),
            _ => None,
        }
    }

    /// The text of a scalar node, whatever its type.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar(s) => Some(s.text()),
            _ => None,
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map { entries, .. } => entries,
            _ => &[],
        }
    }

    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq { items, .. } => items,
            _ => &[],
        }
    }

    pub fn is_map(&self) -> bool {
        matches!(self.value, Value::Map { .. })
    }

    pub fn is_seq(&self) -> bool {
        matches!(self.value, Value::Seq { .. })
    }

    /// A collection written `[a, b]` or `{a: b}`.
    pub fn is_flow(&self) -> bool {
        self.style == Style::Flow
    }

    /// A null as the cluster reads it: `~`, `null`, or nothing at all.
    pub fn is_null(&self) -> bool {
        self.as_scalar().is_some_and(typing::is_null)
    }

    /// Where each line of a literal block scalar (`|`, with any chomping or indentation
    /// indicator) is in `text`, the file the node was read from: the byte range of the line's
    /// text without the whitespace around it, for each line that has any. `None` when the
    /// node is not a literal scalar, or its lines cannot be read back from `text` (a value
    /// set elsewhere than its span).
    pub fn literal_lines(&self, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
        if self.style != Style::Literal {
            return None;
        }
        let value = self.as_str()?;
        // The span starts at the first line that is not empty (after its indentation): the
        // empty lines before it, and the header (`|2-`) above them, are not in it.
        let start = self.span.start as usize;
        let mut at = text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
        let mut out = Vec::new();
        for line in value.split('\n').skip_while(|l| l.is_empty()) {
            let want = line.trim();
            if at > text.len() {
                // Only the empty lines a `|+` keeps can run past the end of the file.
                if want.is_empty() {
                    break;
                }
                return None;
            }
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let written = &text[at..end];
            if !want.is_empty() {
                // The indentation, and a `\r` before the line break, are not the value's.
                if written.trim() != want {
                    return None;
                }
                let from = at + (written.len() - written.trim_start().len());
                out.push(from..from + want.len());
            }
            at = end + 1;
        }
        Some(out)
    }

    /// The entry for `key` ([`entry_in`]).
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        entry_in(self.entries(), key)
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// Follows a path of mapping keys.
    pub fn path(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().try_fold(self, |node, key| node.get(key))
    }

    /// A string value, unless it is empty, null or not a scalar.
    pub fn str_at(&self, key: &str) -> Option<&str> {
        str_in(self.entries(), key)
    }

    /// The mapping in this subtree that has the key written at `key`.
    pub fn map_holding(&self, key: Span) -> Option<&Node> {
        match &self.value {
            Value::Scalar(_) => None,
            Value::Seq { items, .. } => items.iter().find_map(|i| i.map_holding(key)),
            Value::Map { entries, .. } => {
                if entries.iter().any(|e| e.key.span == key) {
                    return Some(self);
                }
                entries.iter().find_map(|e| e.value.map_holding(key))
            }
        }
    }

    /// Number of nodes in this subtree, itself included.
    pub fn size(&self) -> usize {
        match &self.value {
            Value::Scalar(_) => 1,
            Value::Seq { items, .. } => 1 + items.iter().map(Node::size).sum::<usize>(),
            Value::Map { entries, .. } => {
                1 + entries
                    .iter()
                    .map(|e| e.key.size() + e.value.size())
                    .sum::<usize>()
            }
        }
    }

    /// The RFC 6901 pointer of the node whose span is `target`, searched below `self`.
    /// A mapping key is reported as the pointer of its entry.
    pub fn pointer_to(&self, target: Span) -> Option<String> {
        let mut out = String::new();
        if self.find_pointer(target, &mut out) {
            Some(out)
        } else {
            None
        }
    }

    fn find_pointer(&self, target: Span, out: &mut String) -> bool {
        if self.span == target && !matches!(self.value, Value::Map { .. } | Value::Seq { .. }) {
            return true;
        }
        let len = out.len();
        match &self.value {
            Value::Scalar(_) => {}
            Value::Seq { items, .. } => {
                for (i, item) in items.iter().enumerate() {
                    let _ = write!(out, "/{i}");
                    if item.find_pointer(target, out) {
                        return true;
                    }
                    out.truncate(len);
                }
            }
            Value::Map { entries, .. } => {
                for e in entries.iter() {
                    push_pointer_token(out, e.key.as_str().unwrap_or(""));
                    if e.key.span == target || e.value.find_pointer(target, out) {
                        return true;
                    }
                    out.truncate(len);
                }
            }
        }
        // Collections match last, so that a child sharing the start of its parent wins.
        self.span == target
    }
}

/// Building and editing trees, for the render stage. A node made here takes the span of the
/// thing that caused it (the kustomization field, the template scalar), so it still points at
/// a real place in the repository.
impl Node {
    /// A plain scalar, or a collection in block form.
    pub fn new(span: Span, value: Value) -> Node {
        let style = match value {
            Value::Scalar(_) => Style::Plain,
            Value::Seq { .. } | Value::Map { .. } => Style::Block,
        };
        Node { span, style, value }
    }

    /// A scalar without a tag, written in `style`.
    pub fn scalar(text: impl Into<compact_str::CompactString>, style: Style, span: Span) -> Node {
        Node {
            span,
            style,
            value: Value::Scalar(Scalar::new(text, None)),
        }
    }

    /// A string scalar, quoted when plain text would read as another type.
    pub fn string(text: impl Into<String>, span: Span) -> Node {
        let text = text.into();
        let reads_as_text =
            typing::plain_is_str(&text) && timestamp11(ScalarRef::plain(&text)).is_none();
        let style = if reads_as_text {
            Style::Plain
        } else {
            Style::DoubleQuoted
        };
        Node::scalar(text, style, span)
    }

    pub fn empty_map(span: Span) -> Node {
        Node::new(
            span,
            Value::Map {
                entries: Shared::default(),
            },
        )
    }

    pub fn empty_seq(span: Span) -> Node {
        Node::new(
            span,
            Value::Seq {
                items: Shared::default(),
            },
        )
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        // Found before the entries are made this tree's own: a miss at this level copies
        // nothing.
        let at = self.entry_index(key)?;
        Some(&mut self.entries_mut()?[at].value)
    }

    /// Where the entry for `key` (the last duplicate) sits among a mapping's entries.
    pub fn entry_index(&self, key: &str) -> Option<usize> {
        self.entries()
            .iter()
            .rposition(|e| e.key.as_str() == Some(key))
    }

    pub fn path_mut(&mut self, keys: &[&str]) -> Option<&mut Node> {
        keys.iter().try_fold(self, |node, key| node.get_mut(key))
    }

    /// The node reached by taking, at each level, the child at that position (an entry's
    /// value in a mapping, an item in a sequence); each collection on the way is made this
    /// tree's own.
    pub fn descend_mut(&mut self, path: &[usize]) -> Option<&mut Node> {
        path.iter()
            .try_fold(self, |node, &at| match &mut node.value {
                Value::Map { entries, .. } if at < entries.len() => {
                    Some(&mut entries.make_mut()[at].value)
                }
                Value::Seq { items, .. } if at < items.len() => Some(&mut items.make_mut()[at]),
                _ => None,
            })
    }

    /// Each child (an entry's value, or an item) with its position as [`Node::descend_mut`]
    /// counts them, and, in a mapping, the text of its key.
    pub fn children(&self) -> impl Iterator<Item = (usize, Option<&str>, &Node)> {
        // A node has entries or items, never both: the positions count the one it has.
        let entries = self.entries().iter().map(|e| (e.key.as_str(), &e.value));
        let items = self.items().iter().map(|i| (None, i));
        entries
            .chain(items)
            .enumerate()
            .map(|(i, (key, child))| (i, key, child))
    }

    /// The node at `keys` below this one (the last duplicate of each), with its path of child
    /// positions as [`Node::descend_mut`] takes it.
    pub fn locate(&self, keys: &[&str]) -> Option<(Vec<usize>, &Node)> {
        let mut at = Vec::with_capacity(keys.len());
        let mut node = self;
        for key in keys {
            let i = node.entry_index(key)?;
            at.push(i);
            node = &node.entries()[i].value;
        }
        Some((at, node))
    }

    /// Writes each node that a read-only pass found, given by its path of child positions
    /// (as [`Node::descend_mut`] takes it): only the collections on those paths are copied
    /// from the trees that share them, where writing while walking would copy every
    /// collection walked through.
    pub fn write_at<T>(
        &mut self,
        found: Vec<(Vec<usize>, T)>,
        mut write: impl FnMut(&mut Node, T),
    ) {
        for (path, x) in found {
            if let Some(node) = self.descend_mut(&path) {
                write(node, x);
            }
        }
    }

    /// A sequence's items, copied first when another tree shares them.
    pub fn items_mut(&mut self) -> Option<&mut [Node]> {
        match &mut self.value {
            Value::Seq { items, .. } => Some(items.make_mut()),
            _ => None,
        }
    }

    /// A sequence's items, to add or remove some: each change copies them first when another
    /// tree shares them.
    pub fn item_list_mut(&mut self) -> Option<&mut Shared<Node>> {
        match &mut self.value {
            Value::Seq { items, .. } => Some(items),
            _ => None,
        }
    }

    /// A mapping's entries, copied first when another tree shares them.
    pub fn entries_mut(&mut self) -> Option<&mut [Entry]> {
        match &mut self.value {
            Value::Map { entries, .. } => Some(entries.make_mut()),
            _ => None,
        }
    }

    /// A mapping's entries, to add or remove some: each change copies them first when another
    /// tree shares them.
    pub fn entry_list_mut(&mut self) -> Option<&mut Shared<Entry>> {
        match &mut self.value {
            Value::Map { entries, .. } => Some(entries),
            _ => None,
        }
    }

    /// Sets `key` in a mapping (the last duplicate, if any), appending it when absent. Does
    /// nothing on a non-mapping.
    pub fn set(&mut self, key: &str, value: Node, key_span: Span) {
        let at = self.entry_index(key);
        let Value::Map { entries, .. } = &mut self.value else {
            return;
        };
        let Some(at) = at else {
            // Rendered trees live to the end of the run: a mapping given a key here (a
            // transformer's `namespace`, a patch's new field) grows by an eighth, not the
            // double a push would give it, and one copied from a shared tree is copied with
            // that room rather than copied and then grown.
            if entries.len() == entries.capacity() || !entries.is_unique() {
                let mut own = Shared::with_capacity(entries.len() + entries.len() / 8 + 1);
                // Moved when this tree held them alone, cloned when it shared them.
                own.extend(std::mem::take(entries));
                *entries = own;
            }
            entries.push(Entry {
                key: Node::string(key, key_span),
                value,
            });
            return;
        };
        entries.make_mut()[at].value = value;
    }

    /// Removes every entry for `key`, returning the last value.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        self.entry_index(key)?;
        let entries = self.entry_list_mut()?;
        let mut out = None;
        entries.retain(|e| {
            if e.key.as_str() == Some(key) {
                let span = e.value.span;
                out = Some(std::mem::replace(&mut e.value, Node::empty_map(span)));
                false
            } else {
                true
            }
        });
        out
    }

    /// The mapping under `key`, created (or replacing a null or scalar) when needed.
    pub fn map_at(&mut self, key: &str, span: Span) -> &mut Node {
        if !self.is_map() {
            *self = Node::empty_map(span);
        }
        if !self.get(key).is_some_and(Node::is_map) {
            self.set(key, Node::empty_map(span), span);
        }
        self.get_mut(key).expect("a mapping holding `key`")
    }
}

/// Appends `/token` with `~` and `/` escaped as RFC 6901 requires.
pub fn push_pointer_token(out: &mut String, token: &str) {
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// The data a node holds, as JSON, typed the way kustomize prints it: YAML 1.1 numbers (a
/// patched object goes through Go's JSON, which reads `0755` as octal) and YAML 1.2 booleans.
/// Used to print rendered objects and compare them with other renderers.
pub fn to_json(node: &Node) -> serde_json::Value {
    use serde_json::Value as J;
    match node.as_scalar() {
        Some(s) => match typing::yaml11(s) {
            typing::Kind::Null => J::Null,
            // kustomize writes YAML 1.2: `yes` and `on` stay strings in what it prints.
            typing::Kind::Bool(b)
                if matches!(s.text.to_ascii_lowercase().as_str(), "true" | "false") =>
            {
                J::Bool(b)
            }
            typing::Kind::Bool(_) => J::String(s.text.to_string()),
            typing::Kind::Int | typing::Kind::Float => {
                number11(s.text).unwrap_or_else(|| J::String(s.text.to_string()))
            }
            typing::Kind::Str => J::String(timestamp11(s).unwrap_or_else(|| s.text.to_string())),
        },
        None if node.is_seq() => J::Array(node.items().iter().map(to_json).collect()),
        None => {
            let mut map = serde_json::Map::new();
            for e in node.entries() {
                let key = e.key.as_str().unwrap_or_default().to_string();
                map.insert(key, to_json(&e.value));
            }
            J::Object(map)
        }
    }
}

/// The data a node holds as `sigs.k8s.io/yaml` hands it to Go code decoding into
/// `interface{}` (Helm's values, its `fromYaml`): YAML 1.1 scalars (`yes` is true), every number
/// a float64 after the trip through `encoding/json`. `None` past `max_depth` levels.
pub fn to_go_json(node: &Node, max_depth: usize) -> Option<serde_json::Value> {
    go_json_at(node, max_depth, 0)
}

fn go_json_at(node: &Node, max_depth: usize, depth: usize) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    if depth > max_depth {
        return None;
    }
    if let Some(s) = node.as_scalar() {
        return Some(match typing::yaml11(s) {
            typing::Kind::Null => J::Null,
            typing::Kind::Bool(b) => J::Bool(b),
            typing::Kind::Int | typing::Kind::Float => number11(s.text)
                .and_then(|n| n.as_f64())
                .and_then(serde_json::Number::from_f64)
                .map_or_else(|| J::String(s.text.to_string()), J::Number),
            typing::Kind::Str => J::String(s.text.to_string()),
        });
    }
    if node.is_seq() {
        return node
            .items()
            .iter()
            .map(|item| go_json_at(item, max_depth, depth + 1))
            .collect::<Option<_>>()
            .map(J::Array);
    }
    let mut map = serde_json::Map::new();
    for e in node.entries() {
        let key = e.key.as_str().unwrap_or_default().to_string();
        map.insert(key, go_json_at(&e.value, max_depth, depth + 1)?);
    }
    Some(J::Object(map))
}

/// A YAML 1.1 number: `0x1F`, `0755` (octal), `1_000`, `1e3`. Whole floats become integers,
/// as they do after a trip through Go's JSON encoder.
pub fn number11(text: &str) -> Option<serde_json::Value> {
    let t = text.replace('_', "");
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let int = if let Some(h) = digits.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(b) = digits.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else if digits.len() > 1
        && digits.starts_with('0')
        && digits.bytes().all(|c| c.is_ascii_digit())
    {
        i64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse::<i64>().ok()
    };
    if let Some(i) = int {
        return Some(serde_json::Value::from(if neg { -i } else { i }));
    }
    let f: f64 = t.parse().ok()?;
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Some(serde_json::Value::from(f as i64));
    }
    serde_json::Number::from_f64(f).map(serde_json::Value::Number)
}

/// A plain YAML 1.1 date (`2024-11-01`) is a timestamp, which Go writes back in full.
fn timestamp11(s: ScalarRef<'_>) -> Option<String> {
    if s.style != Style::Plain || s.tag.is_some() {
        return None;
    }
    let b = s.text.as_bytes();
    let date = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    date.then(|| format!("{}T00:00:00Z", s.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> ParsedFile {
        parse(0, text, ParseLimits::default())
    }

    /// Each line of a literal scalar is found where it is written, whatever the header and
    /// line breaks; a scalar written otherwise has no such lines.
    #[test]
    fn literal_lines_are_where_they_are_written() {
        fn lines(text: &str) -> Option<Vec<&str>> {
            let f = one(text);
            let root = &f.documents[0].root;
            let node = root.get("a").or_else(|| root.path(&["k", "a"])).unwrap();
            let ranges = node.literal_lines(text)?;
            Some(ranges.into_iter().map(|r| &text[r]).collect())
        }
        let want = Some(vec!["p, x", "# c", "p, y"]);
        assert_eq!(lines("a: |\n  p, x\n  # c\n\n  p, y\nb: 1\n"), want);
        assert_eq!(lines("a: |-\r\n  p, x\r\n  # c\r\n\r\n  p, y\r\n"), want);
        assert_eq!(
            lines("a: |+ # header\n\n\n  p, x\n    # c\n  p, y\n\n\n"),
            want
        );
        assert_eq!(lines("a: |4\n      p, x\n    # c\n     \n    p, y\n"), want);
        assert_eq!(
            lines("k:\n  a: |2-\n      \n    p, x\n    # c\n    p, y"),
            want
        );
        assert_eq!(
            lines("a: |\n  # p, x\n  p, x\n"),
            Some(vec!["# p, x", "p, x"])
        );
        assert_eq!(lines("k:\n  a: |2-\n\n    p, x\n    # c\n    p, y"), want);
        assert_eq!(lines("a: \"p, x\\n# c\\np, y\"\n"), None);
        assert_eq!(lines("a: >\n  p, x\n  # c\n"), None);
        assert_eq!(lines("a: |\nb: 1\n"), Some(vec![]));
    }

    #[test]
    fn merge_keys_fill_in_without_overriding() {
        let f = one("base: &b {prune: true, selfHeal: false}\nauto:\n  <<: *b\n  selfHeal: true\n");
        assert!(f.problems.is_empty(), "{:?}", f.problems);
        let auto = f.documents[0].root.get("auto").unwrap();
        assert_eq!(auto.get("prune").and_then(Node::as_str), Some("true"));
        assert_eq!(auto.get("selfHeal").and_then(Node::as_str), Some("true"));
        assert!(auto.get("<<").is_none());
    }

    #[test]
    fn duplicate_keys_point_at_the_second_with_the_first_related() {
        let text = "a: 1\nb: 2\na: 3\n";
        let f = one(text);
        assert_eq!(f.problems.len(), 1);
        let p = &f.problems[0];
        assert_eq!(p.kind, ProblemKind::DuplicateKey);
        assert_eq!(p.span.start, 10);
        assert_eq!(p.related.as_ref().unwrap().0.start, 0);
        // The cluster's decoder keeps the last value.
        assert_eq!(
            f.documents[0].root.get("a").and_then(Node::as_str),
            Some("3")
        );
    }

    #[test]
    fn pointers_escape_and_prefer_the_deepest_node() {
        let text = "metadata:\n  annotations:\n    a/b: x\nlist: [p, q]\n";
        let root = &one(text).documents[0].root;
        let value = root.path(&["metadata", "annotations", "a/b"]).unwrap();
        assert_eq!(
            root.pointer_to(value.span).as_deref(),
            Some("/metadata/annotations/a~1b")
        );
        let q = &root.get("list").unwrap().items()[1];
        assert_eq!(root.pointer_to(q.span).as_deref(), Some("/list/1"));
    }

    #[test]
    fn a_syntax_error_ends_only_its_document() {
        let f = one("a: [1\n---\nb: 2\n");
        assert_eq!(f.problems.len(), 1);
        assert_eq!(f.documents.len(), 1);
        assert_eq!(f.documents[0].index, 1);
    }
}
