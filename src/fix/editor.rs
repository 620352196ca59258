//! Text edits on YAML, located by node spans and written in the style of their surroundings.
//!
//! Every operation first checks that the node it edits really is that text in the file: a
//! rendered object is assembled from several files (a base, an overlay patch, an
//! ApplicationSet template), and a container whose entries came from different files has no
//! single place to edit. Then no edit is offered.

use super::Edit;
use crate::source::SourceDb;
use crate::yaml::typing;
use crate::yaml::{Entry, Node, Span, Style, Value};

/// A value to write into a new entry.
#[derive(Clone, Debug)]
pub enum NewValue<'a> {
    Scalar(&'a str),
    /// A list of strings, written as a block list in block context, `[a, b]` in flow context.
    List(&'a [&'a str]),
    /// Written exactly so: `true`, `3`.
    Raw(&'a str),
}

pub struct Editor<'a> {
    sources: &'a SourceDb,
}

impl<'a> Editor<'a> {
    pub fn new(sources: &'a SourceDb) -> Editor<'a> {
        Editor { sources }
    }

    fn text(&self, span: Span) -> &'a str {
        &self.sources.get(span.file).text
    }

    /// Whether the scalar's text at its span is what the node says, so editing the span edits
    /// this value (not a template it was rendered from, not a field that generated it).
    fn scalar_in_place(&self, node: &Node) -> bool {
        let Some(s) = node.as_scalar() else {
            return false;
        };
        let text = self.text(node.span);
        let Some(src) = text.get(node.span.range()) else {
            return false;
        };
        if node.span.start == node.span.end {
            // `key:` with nothing after the colon: the parser places the empty value at it.
            return node.is_null() && empty_at(text, node.span).is_some();
        }
        match s.style {
            Style::Plain => src == s.text,
            Style::SingleQuoted => src == format!("'{}'", s.text.replace('\'', "''")),
            Style::DoubleQuoted => {
                src.len() >= 2
                    && src.starts_with('"')
                    && src.ends_with('"')
                    && (&src[1..src.len() - 1] == s.text || src.contains('\\'))
            }
            Style::Literal | Style::Folded | Style::Block | Style::Flow => false,
        }
    }

    /// Whether a collection is one piece of one file: its children lie inside it, in order,
    /// and its keys read as written. A mapping merged from a base and a patch fails this.
    fn in_place(&self, node: &Node) -> bool {
        let file = node.span.file;
        let mut at = node.span.start;
        let mut fits = |n: &Node| {
            let ok = n.span.file == file
                && n.span.start >= at
                && n.span.end <= node.span.end
                && n.span.start >= node.span.start;
            at = n.span.end;
            ok
        };
        match &node.value {
            Value::Map { entries, .. } => entries
                .iter()
                .all(|e| fits(&e.key) && fits(&e.value) && self.scalar_in_place(&e.key)),
            // A scalar item must read as written: an item substituted from a template, or
            // parsed from a rendered `templatePatch` string, is not this text.
            Value::Seq { items, .. } => items
                .iter()
                .all(|i| fits(i) && (i.as_scalar().is_none() || self.scalar_in_place(i))),
            Value::Scalar(_) => false,
        }
    }

    /// Replaces a scalar's text, in the same quoting style when the new text allows it.
    pub fn replace_scalar(&self, node: &Node, new: &str) -> Option<Edit> {
        if !self.scalar_in_place(node) {
            return None;
        }
        let s = node.as_scalar()?;
        let content = styled(new, s.style, flow_context(self.text(node.span), node.span))?;
        Some(self.scalar_edit(node, content))
    }

    /// Renames a mapping key, keeping its quoting.
    pub fn rename_key(&self, map: &Node, key: &Node, new: &str) -> Option<Edit> {
        if !self.in_place(map) || map.get(new).is_some() {
            return None;
        }
        self.replace_scalar(key, new)
    }

    /// Appends a string to a list, matching the quoting of its last item and the list's
    /// indentation (block) or spacing (flow).
    pub fn append_item(&self, seq: &Node, value: &str) -> Option<Edit> {
        self.append(seq, value, false)
    }

    /// Appends `raw` (a flow mapping such as `{kind: Application}`) to a list, written as is.
    pub fn append_raw(&self, seq: &Node, raw: &str) -> Option<Edit> {
        self.append(seq, raw, true)
    }

    fn append(&self, seq: &Node, value: &str, raw: bool) -> Option<Edit> {
        let Value::Seq { items } = &seq.value else {
            return None;
        };
        if !self.in_place(seq) {
            return None;
        }
        let text = self.text(seq.span);
        let style = items
            .last()
            .and_then(Node::as_scalar)
            .map_or(Style::Plain, |s| s.style);
        let write = |flow: bool| {
            if raw {
                Some(value.to_string())
            } else {
                styled(value, style, flow)
            }
        };
        if seq.is_flow() {
            let content = write(true)?;
            return match items.last() {
                Some(last) => {
                    let sep = flow_separator(text, items);
                    Some(insert(
                        last.span.file,
                        last.span.end,
                        format!(",{sep}{content}"),
                    ))
                }
                None => {
                    let open = seq.span.start as usize;
                    (text.as_bytes().get(open) == Some(&b'['))
                        .then(|| insert(seq.span.file, seq.span.start + 1, content))
                }
            };
        }
        let last = items.last()?;
        let first = items.first()?;
        let (indent, gap) = dash_prefix(text, first.span.start as usize)?;
        let content = write(false)?;
        Some(line_after(
            text,
            seq.span.file,
            last.span.end,
            indent.len(),
            &format!("{indent}-{gap}{content}"),
        ))
    }

    /// Adds `key: value` at the end of a mapping, indented like its other keys.
    pub fn insert_entry(&self, map: &Node, key: &str, value: NewValue) -> Option<Edit> {
        self.insert_entries(map, &[(key, value)])
    }

    /// Adds entries at the end of a mapping, in one edit.
    pub fn insert_entries(&self, map: &Node, new: &[(&str, NewValue)]) -> Option<Edit> {
        let Value::Map { entries } = &map.value else {
            return None;
        };
        if !self.in_place(map)
            || new.is_empty()
            || new
                .iter()
                .any(|(key, _)| map.get(key).is_some() || !plain_ok(key, true))
        {
            return None;
        }
        let text = self.text(map.span);
        if map.is_flow() {
            let mut written = Vec::new();
            for (key, value) in new {
                let value = match value {
                    NewValue::Scalar(s) => styled(s, Style::Plain, true)?,
                    NewValue::List(items) => flow_list(items)?,
                    NewValue::Raw(r) => r.to_string(),
                };
                written.push(format!("{key}: {value}"));
            }
            let written = written.join(", ");
            return match entries.last() {
                Some(last) => Some(insert(
                    map.span.file,
                    entry_end(last),
                    format!(", {written}"),
                )),
                None => (text.as_bytes().get(map.span.start as usize) == Some(&b'{'))
                    .then(|| insert(map.span.file, map.span.start + 1, written)),
            };
        }
        let first = entries.first()?;
        let last = entries.last()?;
        let indent = key_indent(text, first.key.span.start as usize)?;
        let nl = newline(text);
        let mut lines = Vec::new();
        for (key, value) in new {
            lines.push(match value {
                NewValue::Scalar(s) => {
                    format!("{indent}{key}: {}", styled(s, Style::Plain, false)?)
                }
                NewValue::Raw(r) => format!("{indent}{key}: {r}"),
                NewValue::List(items) => {
                    format!("{indent}{key}:{}", block_items(text, &indent, items)?)
                }
            });
        }
        let end = entry_end(last);
        Some(line_after(
            text,
            map.span.file,
            end,
            indent.len(),
            &lines.join(nl),
        ))
    }

    /// Replaces a scalar by `raw`, written as is whatever the old quoting (`"false"` → `true`).
    pub fn replace_raw(&self, node: &Node, raw: &str) -> Option<Edit> {
        if !self.scalar_in_place(node) {
            return None;
        }
        Some(self.scalar_edit(node, raw.to_string()))
    }

    /// The edit that writes `content` in place of a scalar; an empty value gets it after
    /// its colon, with a space between.
    fn scalar_edit(&self, node: &Node, content: String) -> Edit {
        match empty_at(self.text(node.span), node.span) {
            Some(at) if node.span.start == node.span.end => {
                insert(node.span.file, at, format!(" {content}"))
            }
            _ => Edit {
                span: node.span,
                content,
            },
        }
    }

    /// Replaces `part` of a scalar's text (one token of a comma-separated annotation) by
    /// `new`, when both read the same in the scalar's quoting.
    pub fn replace_within(&self, node: &Node, part: Span, new: &str) -> Option<Edit> {
        let s = node.as_scalar()?;
        let plain_token = new
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "=-_.,/ ".contains(c));
        if !self.scalar_in_place(node)
            || !matches!(
                s.style,
                Style::Plain | Style::SingleQuoted | Style::DoubleQuoted
            )
            || part.file != node.span.file
            || part.start < node.span.start
            || part.end > node.span.end
            || part == node.span && s.style != Style::Plain
            || !plain_token
        {
            return None;
        }
        Some(Edit {
            span: part,
            content: new.to_string(),
        })
    }

    /// Gives an entry whose value is empty (`key:` or `key: ~`) a list value.
    pub fn fill_null(&self, entry_key: &Node, value: &Node, items: &[&str]) -> Option<Edit> {
        if !value.is_null() || !self.scalar_in_place(entry_key) {
            return None;
        }
        let text = self.text(value.span);
        if value.span.start != value.span.end {
            if !self.scalar_in_place(value) {
                return None;
            }
            return Some(Edit {
                span: value.span,
                content: flow_list(items)?,
            });
        }
        if flow_context(text, entry_key.span) {
            return None;
        }
        let indent = key_indent(text, entry_key.span.start as usize)?;
        let content = block_items(text, &indent, items)?;
        // At the end of the key's line, so that a comment after the key stays on it.
        let at = content_end(text, value.span.start as usize);
        Some(insert(value.span.file, at as u32, content))
    }

    /// Removes the scalar item at `index` from a list: its line in a block list, the item and
    /// a comma in a flow list. Not the only item: that would leave the key without a list.
    pub fn remove_item(&self, seq: &Node, index: usize) -> Option<Edit> {
        let Value::Seq { items } = &seq.value else {
            return None;
        };
        if !self.in_place(seq) || items.len() < 2 {
            return None;
        }
        let item = items.get(index)?;
        item.as_scalar()?;
        let text = self.text(seq.span);
        let file = seq.span.file;
        if seq.is_flow() {
            let span = match index.checked_sub(1).and_then(|i| items.get(i)) {
                Some(prev) => Span {
                    file,
                    start: prev.span.end,
                    end: item.span.end,
                },
                None => Span {
                    file,
                    start: item.span.start,
                    end: items[1].span.start,
                },
            };
            return Some(Edit {
                span,
                content: String::new(),
            });
        }
        let start = line_start(text, item.span.start as usize);
        dash_prefix(text, item.span.start as usize)?;
        let end = next_line(text, item.span.end as usize);
        Some(Edit {
            span: Span::new(file, start, end),
            content: String::new(),
        })
    }

    /// Removes the entry at `index` from a mapping, with its comments on the same lines.
    pub fn remove_entry(&self, map: &Node, index: usize) -> Option<Edit> {
        let Value::Map { entries } = &map.value else {
            return None;
        };
        if !self.in_place(map) {
            return None;
        }
        let entry = entries.get(index)?;
        let text = self.text(map.span);
        let file = map.span.file;
        if map.is_flow() {
            let end = entry_end(entry);
            let span = match (
                index.checked_sub(1).and_then(|i| entries.get(i)),
                entries.get(index + 1),
            ) {
                (Some(prev), _) => Span {
                    file,
                    start: entry_end(prev),
                    end,
                },
                (None, Some(next)) => Span {
                    file,
                    start: entry.key.span.start,
                    end: next.key.span.start,
                },
                (None, None) => Span {
                    file,
                    start: entry.key.span.start,
                    end,
                },
            };
            return Some(Edit {
                span,
                content: String::new(),
            });
        }
        let start = entry.key.span.start as usize;
        let line = line_start(text, start);
        if !text[line..start].chars().all(|c| c == ' ') {
            // The first key of a list item (`- key: v`): removing it would take the dash.
            return None;
        }
        let end = next_line(text, entry_end(entry) as usize);
        Some(Edit {
            span: Span::new(file, line, end),
            content: String::new(),
        })
    }
}

/// Where an empty value's text would go: just after its key's colon.
fn empty_at(text: &str, span: Span) -> Option<u32> {
    let at = span.start as usize;
    if span.start != span.end {
        return None;
    }
    if text.as_bytes().get(at) == Some(&b':') {
        Some(span.start + 1)
    } else if at > 0 && text.as_bytes().get(at - 1) == Some(&b':') {
        Some(span.start)
    } else {
        None
    }
}

fn insert(file: u32, at: u32, content: String) -> Edit {
    Edit {
        span: Span {
            file,
            start: at,
            end: at,
        },
        content,
    }
}

/// Where an entry's text ends: its value's end, or its key's when the value is empty.
fn entry_end(e: &Entry) -> u32 {
    e.value.span.end.max(e.key.span.end)
}

/// `line` as a new line after the one holding `end`, in the file's line endings. Comment lines
/// indented deeper than `indent` right after it belong to the node before and stay above.
fn line_after(text: &str, file: u32, end: u32, indent: usize, line: &str) -> Edit {
    let nl = newline(text);
    let end = end as usize;
    let mut at = next_line(text, end);
    while at < text.len() {
        let after = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        let next = &text[at..after];
        let body = next.trim_start_matches(' ');
        if !body.starts_with('#') || next.len() - body.len() <= indent {
            break;
        }
        at = after;
    }
    let content = if at == text.len() && !text.ends_with('\n') {
        format!("{nl}{line}")
    } else {
        format!("{line}{nl}")
    };
    insert(file, at as u32, content)
}

/// The start of the line after the one holding `pos` (or the end of the text).
fn next_line(text: &str, pos: usize) -> usize {
    if pos > 0 && text.as_bytes().get(pos - 1) == Some(&b'\n') {
        return pos;
    }
    text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1)
}

fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// The end of the line's content, before any `\r\n` or `\n`.
fn content_end(text: &str, pos: usize) -> usize {
    let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    if end > pos && text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

/// The file's line ending: CRLF when its first line ends so.
fn newline(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// The indentation of a block key, as spaces: `  key` and `  - key` both give the column.
fn key_indent(text: &str, key: usize) -> Option<String> {
    let prefix = &text[line_start(text, key)..key];
    let ok = prefix.chars().all(|c| c == ' ')
        || (prefix.trim_start().starts_with('-')
            && prefix.trim_start()[1..].chars().all(|c| c == ' ')
            && prefix.trim_start().len() > 1);
    ok.then(|| " ".repeat(prefix.chars().count()))
}

/// The lines of a new block list under a key indented by `indent`, each starting with the
/// file's line ending.
fn block_items(text: &str, indent: &str, items: &[&str]) -> Option<String> {
    let pad = format!("{indent}{}", " ".repeat(seq_offset(text)));
    let nl = newline(text);
    items
        .iter()
        .map(|item| Some(format!("{nl}{pad}- {}", styled(item, Style::Plain, false)?)))
        .collect()
}

/// The spaces before and after a block list item's dash.
fn dash_prefix(text: &str, item: usize) -> Option<(String, String)> {
    let prefix = &text[line_start(text, item)..item];
    let (indent, rest) = prefix.split_at(prefix.len() - prefix.trim_start().len());
    let gap = rest.strip_prefix('-')?;
    (!gap.is_empty() && gap.chars().all(|c| c == ' '))
        .then(|| (indent.to_string(), gap.to_string()))
}

/// How far this file indents a block list under its key: the first `key:` line followed by
/// a `- item` line decides; 2 when there is none.
fn seq_offset(text: &str) -> usize {
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let mut prev: Option<&str> = None;
    // The indentation of a key whose block scalar (`|`, `>`) is being skipped: its content is
    // text, not YAML structure.
    let mut scalar: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(at) = scalar {
            if indent_of(line) > at {
                continue;
            }
            scalar = None;
        }
        if let Some(p) = prev {
            if t.starts_with("- ") || t == "-" {
                let (pi, li) = (indent_of(p), indent_of(line));
                if li >= pi {
                    return li - pi;
                }
            }
        }
        let code = t.split(" #").next().unwrap_or(t).trim_end();
        let head = code.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
        if head.ends_with(": |")
            || head.ends_with(": >")
            || head.ends_with("- |")
            || head.ends_with("- >")
        {
            scalar = Some(indent_of(line));
        }
        prev = (code.ends_with(':') && !t.starts_with("- ")).then_some(line);
    }
    2
}

/// The separator between flow items as the list writes it (`, ` or `,`).
fn flow_separator(text: &str, items: &[Node]) -> &'static str {
    match items {
        [a, b, ..] => {
            let between = &text[a.span.end as usize..b.span.start as usize];
            if between.contains(' ') || between.contains('\n') {
                " "
            } else {
                ""
            }
        }
        _ => " ",
    }
}

/// Whether the node sits inside a flow collection (inside `[...]` or `{...}` on its line or
/// before): a cheap test on the text before it.
fn flow_context(text: &str, span: Span) -> bool {
    let before = &text[line_start(text, span.start as usize)..span.start as usize];
    before.contains('[') || before.contains('{')
}

fn flow_list(items: &[&str]) -> Option<String> {
    let written: Option<Vec<String>> = items
        .iter()
        .map(|i| styled(i, Style::Plain, true))
        .collect();
    Some(format!("[{}]", written?.join(", ")))
}

/// `value` written as a string scalar in `style`, or double-quoted when plain would change
/// its meaning. Literal and folded scalars are not produced.
fn styled(value: &str, style: Style, flow: bool) -> Option<String> {
    match style {
        Style::Plain if plain_ok(value, flow) => Some(value.to_string()),
        Style::SingleQuoted if !value.contains('\n') => {
            Some(format!("'{}'", value.replace('\'', "''")))
        }
        _ => serde_json::to_string(value).ok(),
    }
}

/// Whether `value` reads back as the same string when written plain.
fn plain_ok(value: &str, flow: bool) -> bool {
    let Some(first) = value.chars().next() else {
        return false;
    };
    typing::plain_is_str(value)
        && !"-?:,[]{}#&*!|>'\"%@`".contains(first)
        && value.trim() == value
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.ends_with(':')
        && !value.contains(['\n', '\t'])
        && !(flow && value.contains([',', '[', ']', '{', '}']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;
    use crate::yaml::{parse, ParseLimits};

    fn db(text: &str) -> (SourceDb, Node) {
        let mut db = SourceDb::default();
        db.add(SourceFile::new("f.yaml".into(), text.to_string()));
        let doc = parse(0, text, ParseLimits::default())
            .documents
            .into_iter()
            .next()
            .unwrap();
        (db, doc.root)
    }

    fn apply(text: &str, edit: Option<Edit>) -> String {
        let edit = edit.expect("an edit");
        super::super::apply_edits(text, &[&edit])
    }

    #[test]
    fn appends_to_block_lists_in_their_style() {
        let text = "p:\n  opts:\n    - \"A=true\"  # a\n    - \"B=true\"\n  other: 1\n";
        let (db, root) = db(text);
        let list = root.path(&["p", "opts"]).unwrap();
        assert_eq!(
            apply(text, Editor::new(&db).append_item(list, "C=true")),
            "p:\n  opts:\n    - \"A=true\"  # a\n    - \"B=true\"\n    - \"C=true\"\n  other: 1\n"
        );
    }

    #[test]
    fn appends_to_flow_lists_and_empty_ones() {
        let text = "p: {opts: [A=true,B=true], e: []}\r\n";
        let (db, root) = db(text);
        let ed = Editor::new(&db);
        assert_eq!(
            apply(
                text,
                ed.append_item(root.path(&["p", "opts"]).unwrap(), "C=true")
            ),
            "p: {opts: [A=true,B=true,C=true], e: []}\r\n"
        );
        assert_eq!(
            apply(
                text,
                ed.append_item(root.path(&["p", "e"]).unwrap(), "C=true")
            ),
            "p: {opts: [A=true,B=true], e: [C=true]}\r\n"
        );
    }

    #[test]
    fn inserts_entries_with_crlf_and_no_final_newline() {
        let text = "spec:\r\n  syncPolicy:\r\n    automated:\r\n      prune: true";
        let (db, root) = db(text);
        let policy = root.path(&["spec", "syncPolicy"]).unwrap();
        assert_eq!(
            apply(
                text,
                Editor::new(&db).insert_entry(policy, "syncOptions", NewValue::List(&["PruneLast=true"]))
            ),
            "spec:\r\n  syncPolicy:\r\n    automated:\r\n      prune: true\r\n    syncOptions:\r\n      - PruneLast=true"
        );
    }

    #[test]
    fn list_indentation_follows_the_file() {
        let text = "a:\n  l:\n    - x\n  m:\n    k: v\n";
        let (db, root) = db(text);
        assert_eq!(
            apply(
                text,
                Editor::new(&db).insert_entry(
                    root.path(&["a", "m"]).unwrap(),
                    "o",
                    NewValue::List(&["z1"])
                )
            ),
            "a:\n  l:\n    - x\n  m:\n    k: v\n    o:\n      - z1\n"
        );
    }

    #[test]
    fn fills_empty_values_and_keeps_comments() {
        let text = "p:\n  opts:   # later\n  q: 1\n";
        let (db, root) = db(text);
        let e = root.get("p").unwrap().entry("opts").unwrap();
        assert_eq!(
            apply(
                text,
                Editor::new(&db).fill_null(&e.key, &e.value, &["A=true"])
            ),
            "p:\n  opts:   # later\n    - A=true\n  q: 1\n"
        );
    }

    #[test]
    fn removes_and_renames_entries() {
        let text = "m:\n  a: 1 # one\n  b:\n    c: 2\n  d: 3\nf: {x: 1, y: 2}\n";
        let (db, root) = db(text);
        let ed = Editor::new(&db);
        let m = root.get("m").unwrap();
        assert_eq!(
            apply(text, ed.remove_entry(m, 1)),
            "m:\n  a: 1 # one\n  d: 3\nf: {x: 1, y: 2}\n"
        );
        let f = root.get("f").unwrap();
        assert_eq!(
            apply(text, ed.remove_entry(f, 1)),
            "m:\n  a: 1 # one\n  b:\n    c: 2\n  d: 3\nf: {x: 1}\n"
        );
        assert_eq!(
            apply(text, ed.remove_entry(f, 0)),
            "m:\n  a: 1 # one\n  b:\n    c: 2\n  d: 3\nf: {y: 2}\n"
        );
        let key = &m.entries()[0].key;
        assert_eq!(
            apply(text, ed.rename_key(m, key, "z")),
            "m:\n  z: 1 # one\n  b:\n    c: 2\n  d: 3\nf: {x: 1, y: 2}\n"
        );
        assert!(
            ed.rename_key(m, key, "d").is_none(),
            "would duplicate a key"
        );
    }

    #[test]
    fn replaces_scalars_in_their_quoting() {
        let text = "a: 'Prune Last=true'\nb: yes\n";
        let (db, root) = db(text);
        let ed = Editor::new(&db);
        assert_eq!(
            apply(
                text,
                ed.replace_scalar(root.get("a").unwrap(), "PruneLast=true")
            ),
            "a: 'PruneLast=true'\nb: yes\n"
        );
        // A plain value that would read as a boolean is quoted.
        assert_eq!(
            apply(text, ed.replace_scalar(root.get("b").unwrap(), "no")),
            "a: 'Prune Last=true'\nb: \"no\"\n"
        );
    }

    #[test]
    fn refuses_nodes_that_are_not_their_text() {
        let text = "a:\n  k: v\n";
        let (db, root) = db(text);
        let mut merged = root.get("a").unwrap().clone();
        // An entry from elsewhere (a patch) makes the mapping ambiguous.
        let other = root.clone();
        if let Some(entries) = merged.entry_list_mut() {
            entries.push(crate::yaml::Entry {
                key: other.entries()[0].key.clone(),
                value: other,
            });
        }
        assert!(Editor::new(&db)
            .insert_entry(&merged, "z", NewValue::Scalar("1"))
            .is_none());
    }
}
