//! Reads the collections a pruned parse skips line by line, much faster than the parser's events,
//! and hands the parser a copy of the text in which each one is cut down to its first line's
//! `-` and key and its last statement, with [`Shift`]s to map the parser's offsets back. The
//! parser still sees where the collection starts and ends, so its span, style and every other
//! node come out as they would from the whole text.
//!
//! Only a plain subset of YAML is read this way: block mappings and sequences, plain and quoted
//! scalars (on one line or several), block scalars, one-line flow collections of plain scalars,
//! in ASCII without tabs or control characters. Anything else (a comment, an anchor, an alias, a
//! tag, a duplicate key, an indentation the parser might take otherwise) leaves the collection to
//! the parser's events. The builder checks that each shortened collection is one it prunes, and
//! parses the file from its own text if not, or if any problem turns up.

/// A collection read here: where the parser starts its node, its path in
/// [`super::Prune::paths`], and the nodes the parser would have built for it, itself included.
#[derive(Debug)]
pub(super) struct Skimmed {
    pub start: usize,
    pub path: usize,
    pub nodes: usize,
}

/// Bytes cut out of the parser's input: an offset past `at` in the input is `by` bytes
/// further in the text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shift {
    pub at: usize,
    pub by: usize,
}

/// The offset in the text of `offset` in the input that `shifts` were cut from.
pub(super) fn unshift(shifts: &[Shift], offset: usize) -> usize {
    offset
        + shifts
            .iter()
            .take_while(|s| offset > s.at)
            .map(|s| s.by)
            .sum::<usize>()
}

/// Shorter collections are left to the parser: shortening them would save nothing.
const WORTH: usize = 512;

/// The parser's input, the collections shortened in it and where it was cut, or `None` when
/// nothing was.
pub(super) fn skim(
    text: &str,
    paths: &[&[&str]],
    max_depth: usize,
) -> Option<(String, Vec<Skimmed>, Vec<Shift>)> {
    let mut found = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let Some(last) = path.last() else { continue };
        // Most files do not hold the last key at all: one search says so.
        if memchr::memmem::find(text.as_bytes(), last.as_bytes()).is_none() {
            continue;
        }
        find(text.as_bytes(), i, path, max_depth, &mut found);
    }
    if found.is_empty() {
        return None;
    }
    found.sort_by_key(|(_, cut)| cut.0);
    let mut input = String::with_capacity(text.len());
    let (mut skims, mut shifts) = (Vec::new(), Vec::new());
    let (mut from, mut removed) = (0, 0);
    for (skimmed, (a, b)) in found {
        // Two paths whose collections overlap: the first is enough.
        if a < from {
            continue;
        }
        // Both ends are at ASCII bytes the reader checked: `:` or `-`, and a line break.
        input.push_str(&text[from..a]);
        shifts.push(Shift {
            at: a - removed,
            by: b - a,
        });
        removed += b - a;
        from = b;
        skims.push(skimmed);
    }
    input.push_str(&text[from..]);
    Some((input, skims, shifts))
}

struct Line<'t> {
    /// Offset of the line's first byte.
    at: usize,
    /// The line without its break (`\n` or `\r\n`).
    text: &'t [u8],
    /// Its leading spaces.
    ind: usize,
}

impl<'t> Line<'t> {
    /// The line after its indent.
    fn rest(&self) -> &'t [u8] {
        &self.text[self.ind..]
    }
    /// `---` or `...` at the start of a line: a document starts or ends.
    fn marker(&self) -> bool {
        let t = self.text;
        t.len() >= 3
            && (&t[..3] == b"---" || &t[..3] == b"...")
            && t.get(3).is_none_or(|&b| b == b' ' || b == b'\t')
    }
}

fn lines(text: &[u8]) -> impl Iterator<Item = Line<'_>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
        let mut line = &text[at..end];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        let ind = line.iter().take_while(|&&b| b == b' ').count();
        let out = Line {
            at,
            text: line,
            ind,
        };
        at = end + 1;
        Some(out)
    })
}

/// Finds `path`'s key lines, document by document, and reads the block collection under each.
/// A line that only looks like the key (inside a multi-line quoted scalar, say) is caught by the
/// builder, which never starts a pruned collection where this one was shortened.
fn find(
    text: &[u8],
    index: usize,
    path: &[&str],
    max_depth: usize,
    found: &mut Vec<(Skimmed, (usize, usize))>,
) {
    // The indent of each matched key, and the indent of the keys under the deepest one.
    let mut keys: Vec<usize> = Vec::with_capacity(path.len());
    let mut child: Option<usize> = Some(0);
    let mut all = lines(text).peekable();
    while let Some(line) = all.next() {
        if line.marker() {
            keys.clear();
            child = Some(0);
            continue;
        }
        let (rest, ind) = (line.rest(), line.ind);
        if rest.is_empty() || rest[0] == b'#' {
            continue;
        }
        while keys.last().is_some_and(|&k| ind <= k) {
            child = keys.pop();
        }
        let c = *child.get_or_insert(ind);
        if ind != c || !is_block_key(rest, path[keys.len()]) {
            continue;
        }
        if keys.len() + 1 < path.len() {
            keys.push(ind);
            child = None;
            continue;
        }
        // The value: the lines after the key, read until the collection ends.
        let mut reader = Reader::new(ind, path.len() + 1, max_depth);
        let mut refused = false;
        while let Some(next) = all.peek() {
            if next.marker() {
                break;
            }
            match reader.line(next) {
                Step::Took => {
                    all.next();
                }
                Step::Ended => break,
                Step::Refused => {
                    refused = true;
                    break;
                }
            }
        }
        if let Some((skimmed_nodes, start, blank)) = reader.finish().filter(|_| !refused) {
            found.push((
                Skimmed {
                    start,
                    path: index,
                    nodes: skimmed_nodes,
                },
                blank,
            ));
        }
        // The rest of the document is looked at as before: a second `versions` is the
        // builder's to refuse.
    }
}

/// `key:` and nothing else on the line: a block value follows.
fn is_block_key(rest: &[u8], key: &str) -> bool {
    rest.strip_prefix(key.as_bytes())
        .and_then(|r| r.strip_prefix(b":"))
        .is_some_and(|r| r.iter().all(|&b| b == b' '))
}

/// An open block collection.
struct Open<'t> {
    indent: usize,
    map: bool,
    /// A sequence at its key's indent: it ends at the next line there that is not an item.
    indentless: bool,
    keys: Vec<&'t [u8]>,
}

enum Step {
    Took,
    Ended,
    Refused,
}

/// What is still open from the line before.
enum Pending {
    Nothing,
    /// `key:` with nothing after it, at this indent: a null or a collection follows.
    Key(usize),
    /// `-` with nothing after it.
    Dash(usize),
    /// A plain scalar whose parent is at this indent: more-indented lines continue it.
    Plain(usize),
    /// A block scalar whose parent is at this indent, and its content's indent once known.
    Block(usize, Option<usize>),
    /// A quoted scalar (double-quoted if set) not closed yet, whose parent is at this indent.
    Quoted(usize, bool),
}

struct Reader<'t> {
    /// Indent of the key whose value this is.
    key: usize,
    /// Collections open inside the value; the first is the value itself.
    open: Vec<Open<'t>>,
    pending: Pending,
    nodes: usize,
    /// Where the value's first line starts after its indent, and that indent.
    first: Option<(usize, usize)>,
    /// Where the first line's own indicator ends (`-` or `key:`): what is kept of it.
    first_kept: usize,
    /// The line of the last statement (a line starting with `-` or a key).
    last_line: usize,
    /// Where the first token after the first `-` is (or the `-`'s line ends).
    first_token: usize,
    /// The first statement's key, and its column.
    first_key: Option<(usize, &'t [u8])>,
    /// The last statement's indent, whether it is an item, and its key.
    last_key: (usize, bool, Option<&'t [u8]>),
    /// Collections the path and the parser already hold open.
    outer: usize,
    max_depth: usize,
}

impl<'t> Reader<'t> {
    fn new(key: usize, outer: usize, max_depth: usize) -> Reader<'t> {
        Reader {
            key,
            open: Vec::new(),
            pending: Pending::Key(key),
            nodes: 0,
            first: None,
            first_kept: 0,
            last_line: 0,
            first_key: None,
            first_token: 0,
            last_key: (0, false, None),
            outer,
            max_depth,
        }
    }

    fn line(&mut self, line: &Line<'t>) -> Step {
        match self.read(line) {
            // Only ASCII without tabs or control characters: what the parser reads exactly as
            // the checks here assume. The line that ends the value is the parser's.
            Step::Took if !printable_ascii(line.text) => Step::Refused,
            // A line that ends the value here might not for the parser: a tab is blank to it, a
            // lone `\r` a line break.
            Step::Ended
                if line
                    .rest()
                    .first()
                    .is_some_and(|b| !(b'!'..0x7f).contains(b)) =>
            {
                Step::Refused
            }
            step => step,
        }
    }

    fn read(&mut self, line: &Line<'t>) -> Step {
        let (text, ind) = (line.text, line.ind);
        if ind == text.len() {
            return match self.pending {
                // Blank lines ahead of a block scalar's first line may not be longer than its
                // indent: not worth telling apart.
                Pending::Block(_, None) if !text.is_empty() => Step::Refused,
                _ => Step::Took,
            };
        }
        match self.pending {
            Pending::Block(parent, content) => match content {
                Some(c) if ind >= c => return Step::Took,
                None if ind > parent => {
                    self.pending = Pending::Block(parent, Some(ind));
                    return Step::Took;
                }
                _ => self.pending = Pending::Nothing,
            },
            Pending::Quoted(parent, double) => {
                if ind <= parent {
                    return Step::Refused;
                }
                return match quoted(&text[ind..], double) {
                    Some(true) => {
                        self.pending = Pending::Nothing;
                        Step::Took
                    }
                    Some(false) => Step::Took,
                    None => Step::Refused,
                };
            }
            Pending::Plain(parent) if ind > parent => {
                return if plain_continues(line.rest()) {
                    Step::Took
                } else {
                    Step::Refused
                };
            }
            _ => {}
        }
        let rest = line.rest();
        if rest[0] == b'#' {
            return Step::Refused;
        }
        let dash = rest[0] == b'-' && rest.get(1).is_none_or(|&b| b == b' ');
        // A `key:` or `-` with nothing after it: what comes next is its value.
        match std::mem::replace(&mut self.pending, Pending::Nothing) {
            Pending::Key(k) => {
                // A sequence may sit at its key's own indent.
                let indentless = ind == k && dash;
                if ind > k || indentless {
                    if self.open.is_empty() {
                        self.first = Some((line.at + ind, ind));
                    }
                    if !self.push(ind, !dash, indentless) {
                        return Step::Refused;
                    }
                } else if self.open.is_empty() {
                    // `versions:` with no block under it: nothing to skim.
                    return Step::Refused;
                } else {
                    self.nodes += 1;
                }
            }
            Pending::Dash(d) => {
                if ind > d {
                    if !self.push(ind, !dash, false) {
                        return Step::Refused;
                    }
                } else {
                    self.nodes += 1;
                }
            }
            _ => {}
        }
        // Close what this line is left of; an indentless sequence closes at its key's indent.
        while let Some(top) = self.open.last() {
            if top.indent > ind || (top.indentless && top.indent == ind && !dash) {
                let done = self.open.pop().expect("an open collection");
                if !unique(done.keys) {
                    return Step::Refused;
                }
            } else {
                break;
            }
        }
        let Some(top) = self.open.last() else {
            // The value ended here. A line between the key's indent and the value's would be
            // refused by the parser.
            return if ind <= self.key {
                Step::Ended
            } else {
                Step::Refused
            };
        };
        if top.indent != ind || top.map == dash {
            return Step::Refused;
        }
        // What follows the `-` and its spaces, or the key line itself, and the key it starts
        // with (0 if none).
        let (col, body) = if dash {
            let pad = rest[1..].iter().take_while(|&&b| b == b' ').count();
            (ind + 1 + pad, &rest[1 + pad..])
        } else {
            (ind, rest)
        };
        let n = key_len(body);
        if !self.statement(line.at, ind, dash, col, body, &body[..n]) {
            return Step::Refused;
        }
        if !dash {
            return self.entry(col, body, n);
        }
        if body.is_empty() {
            self.pending = Pending::Dash(ind);
            return Step::Took;
        }
        if body[0] == b'-' && body.get(1).is_none_or(|&b| b == b' ') {
            return Step::Refused;
        }
        if n == 0 {
            return self.value(body, ind);
        }
        if !self.push(col, true, false) {
            return Step::Refused;
        }
        self.entry(col, body, n)
    }

    /// Notes where a statement (a line starting with `-` or a key) is, to keep the first and
    /// the last. What is kept of the first is its `-` and, after it, the first key with its
    /// `:`: the parser starts an indentless sequence's node at the first token after its `-`.
    /// `body` is what the line holds at `col`, after its `-` if any, and `key` the key it
    /// starts with (empty if none).
    fn statement(
        &mut self,
        at: usize,
        ind: usize,
        dash: bool,
        col: usize,
        body: &[u8],
        key: &'t [u8],
    ) -> bool {
        if self.first.is_some_and(|(start, _)| start == at + ind) {
            self.first_token = at + col;
            self.first_kept = if !key.is_empty() {
                self.first_key = Some((col, key));
                at + col + key.len() + 1
            } else if body.is_empty() {
                // A `-` alone: the whole line, up to where the parser starts the node.
                at + col
            } else {
                // A scalar as the first item: keeping it would change what follows.
                return false;
            };
        }
        self.last_line = at;
        self.last_key = (ind, dash, (!dash && !key.is_empty()).then_some(key));
        true
    }

    fn push(&mut self, indent: usize, map: bool, indentless: bool) -> bool {
        self.nodes += 1;
        self.open.push(Open {
            indent,
            map,
            indentless,
            keys: Vec::new(),
        });
        // A margin of two for a flow `{}` and the parser's own count.
        self.outer + self.open.len() + 2 < self.max_depth
    }

    /// `key: ...` at `col` (its key `n` bytes long), in the mapping on top.
    fn entry(&mut self, col: usize, rest: &'t [u8], n: usize) -> Step {
        if n == 0 {
            return Step::Refused;
        }
        let key = &rest[..n];
        // Duplicates are looked for when the mapping closes: a schema's `properties` may hold
        // hundreds of keys.
        self.open.last_mut().expect("a mapping").keys.push(key);
        self.nodes += 1;
        let after = &rest[n + 1..];
        let pad = after.iter().take_while(|&&b| b == b' ').count();
        if pad == after.len() {
            self.pending = Pending::Key(col);
            return Step::Took;
        }
        self.value(&after[pad..], col)
    }

    /// A scalar or a one-line flow collection, whose parent is at `parent`.
    fn value(&mut self, v: &[u8], parent: usize) -> Step {
        let v = &v[..v.len() - v.iter().rev().take_while(|&&b| b == b' ').count()];
        self.nodes += 1;
        let ok = match v[0] {
            b'|' | b'>' => {
                let ok = matches!(&v[1..], b"" | b"-" | b"+");
                self.pending = Pending::Block(parent, None);
                ok
            }
            b'\'' | b'"' => {
                let double = v[0] == b'"';
                match quoted(&v[1..], double) {
                    Some(true) => true,
                    Some(false) => {
                        self.pending = Pending::Quoted(parent, double);
                        true
                    }
                    None => false,
                }
            }
            b'{' | b'[' => {
                let depth = self
                    .max_depth
                    .saturating_sub(self.outer + self.open.len() + 3);
                match flow(v, depth) {
                    Some((nodes, len)) if len == v.len() => {
                        self.nodes += nodes - 1;
                        true
                    }
                    _ => false,
                }
            }
            _ => {
                self.pending = Pending::Plain(parent);
                plain_starts(v)
            }
        };
        if ok {
            Step::Took
        } else {
            Step::Refused
        }
    }

    /// The collection's nodes, start, and the range to cut (from the first line's kept part to
    /// the line break before the last statement), if it was read to its end and is
    /// worth shortening.
    fn finish(self) -> Option<(usize, usize, (usize, usize))> {
        if !self.open.into_iter().all(|o| unique(o.keys))
            || matches!(
                self.pending,
                Pending::Key(_) | Pending::Dash(_) | Pending::Quoted(..)
            )
        {
            return None;
        }
        let (first, indent) = self.first?;
        // An indentless sequence's node starts at its first token after the `-`.
        let start = if indent == self.key {
            self.first_token
        } else {
            first
        };
        let (ind, dash, key) = self.last_key;
        let last = self.last_line + ind;
        if last <= self.first_kept || last - start < WORTH {
            return None;
        }
        // What is kept must still parse: the last statement under the first key, beside it
        // (not as a second key of the same name), or as the next item of the sequence.
        if let Some((col, first)) = self.first_key {
            let fits = if ind >= col {
                !(ind == col && key == Some(first))
            } else {
                dash && ind == indent
            };
            if !fits {
                return None;
            }
        }
        Some((self.nodes, start, (self.first_kept, self.last_line - 1)))
    }
}

/// A flow collection on one line, from its opening bracket, at most `depth` deep: the nodes
/// in it (itself included) and the bytes it takes; `None` where it is not plain enough to read
/// here (a quoted scalar, a `:` or `#` in a plain one, a pair in a sequence, an empty entry).
fn flow(v: &[u8], depth: usize) -> Option<(usize, usize)> {
    if depth == 0 {
        return None;
    }
    let map = v[0] == b'{';
    let close = if map { b'}' } else { b']' };
    let spaces = |i: &mut usize| {
        while v.get(*i) == Some(&b' ') {
            *i += 1;
        }
    };
    let (mut i, mut nodes, mut keys) = (1, 1, Vec::new());
    spaces(&mut i);
    if v.get(i) == Some(&close) {
        return Some((nodes, i + 1));
    }
    loop {
        if map {
            let n = key_len(&v[i..]);
            if n == 0 || v.get(i + n + 1) != Some(&b' ') {
                return None;
            }
            keys.push(&v[i..i + n]);
            nodes += 1;
            i += n + 1;
            spaces(&mut i);
        }
        let (n, len) = match v.get(i)? {
            b'[' | b'{' => flow(&v[i..], depth - 1)?,
            _ => {
                let len = v[i..]
                    .iter()
                    .take_while(|&&b| !matches!(b, b',' | b'[' | b']' | b'{' | b'}'))
                    .count();
                let text = &v[i..i + len];
                let plain = text.iter().all(|&b| {
                    b.is_ascii_alphanumeric()
                        || matches!(b, b' ' | b'_' | b'-' | b'.' | b'/' | b'+' | b'=')
                });
                if len == 0 || !plain || INDICATORS.contains(&text[0]) {
                    return None;
                }
                (1, len)
            }
        };
        nodes += n;
        i += len;
        spaces(&mut i);
        match v.get(i)? {
            b',' => {
                i += 1;
                spaces(&mut i);
                // A trailing comma: the parser allows it, not worth telling apart.
                if v.get(i) == Some(&close) {
                    return None;
                }
            }
            &b if b == close => break,
            _ => return None,
        }
    }
    unique(keys).then_some((nodes, i + 1))
}

/// ASCII without control characters. Folded over every byte rather than stopping early, so
/// that it compiles to vector instructions.
fn printable_ascii(text: &[u8]) -> bool {
    !text
        .iter()
        .fold(false, |bad, b| bad | !(b' '..0x7f).contains(b))
}

/// Whether no key is given twice.
fn unique(mut keys: Vec<&[u8]>) -> bool {
    keys.sort_unstable();
    keys.windows(2).all(|w| w[0] != w[1])
}

/// The length of a plain key followed by `:` and a space or the line's end; 0 if the line
/// does not start so.
fn key_len(rest: &[u8]) -> usize {
    let n = rest
        .iter()
        .take_while(|&&b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b'$')
        })
        .count();
    let first_ok = rest
        .first()
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    // The parser looks no further than 1024 characters for the `:` of a key.
    if n == 0 || !first_ok || n > 1000 {
        return 0;
    }
    match (rest.get(n), rest.get(n + 1)) {
        (Some(b':'), None | Some(b' ')) => n,
        _ => 0,
    }
}

const INDICATORS: &[u8] = b"-?:,[]{}#&*!|>'\"%@`";

/// The first line of a plain scalar: no indicator first (but `-`, `?` or `:` before a
/// non-space), no `: ` or ` #` inside, no `:` at the end.
fn plain_starts(v: &[u8]) -> bool {
    let lead_ok = match v[0] {
        b'-' | b'?' | b':' => v.get(1).is_some_and(|&b| b != b' '),
        b => !INDICATORS.contains(&b),
    };
    lead_ok && plain_inner(v)
}

/// A line continuing a plain scalar: anything but a comment, `: ` or ` #`.
fn plain_continues(v: &[u8]) -> bool {
    v[0] != b'#' && plain_inner(v)
}

fn plain_inner(v: &[u8]) -> bool {
    let v = &v[..v.len() - v.iter().rev().take_while(|&&b| b == b' ').count()];
    !v.ends_with(b":")
        && memchr::memmem::find(v, b": ").is_none()
        && memchr::memmem::find(v, b" #").is_none()
}

/// Reads a line of a quoted scalar (after its opening quote on its first line): whether it
/// closes, with nothing after it but spaces, or goes on to the next line; `None` if it is
/// not plain enough to read here (an escape that may name no character, text after the
/// closing quote).
fn quoted(v: &[u8], double: bool) -> Option<bool> {
    let mut i = 0;
    while i < v.len() {
        match v[i] {
            b'\'' if !double => {
                if v.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                return v[i + 1..].iter().all(|&b| b == b' ').then_some(true);
            }
            b'"' if double => return v[i + 1..].iter().all(|&b| b == b' ').then_some(true),
            b'\\' if double => {
                // `\u` and `\U` may name no character at all: left to the parser.
                let hex = match v.get(i + 1) {
                    // An escaped line break.
                    None => return Some(false),
                    Some(b'0' | b'a' | b'b' | b't' | b'n' | b'v' | b'f' | b'r' | b'e' | b' ')
                    | Some(b'"' | b'/' | b'\\' | b'N' | b'_' | b'L' | b'P') => 0,
                    Some(b'x') => 2,
                    _ => return None,
                };
                let digits = v.get(i + 2..i + 2 + hex)?;
                if !digits.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                i += 2 + hex;
            }
            _ => i += 1,
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::build::{build, Cut};
    use crate::yaml::ParseLimits;

    /// Parses `text` with the line reader and with the parser's events: the same nodes,
    /// problems, comments and budget left, or the line reader stands aside. Returns whether it
    /// read anything.
    fn agree(text: &str, limits: ParseLimits) -> bool {
        let prune = crate::model::PRUNE;
        let events = build(0, text, Cut::none(text), limits, Some(prune))
            .ok()
            .map(|(p, left)| (format!("{p:?}"), left));
        let Some((input, skims, shifts)) = skim(text, prune.paths, limits.max_depth) else {
            return false;
        };
        let cut = Cut {
            input: &input,
            skims: &skims,
            shifts: &shifts,
        };
        let Ok((p, left)) = build(0, text, cut, limits, Some(prune)) else {
            return false;
        };
        assert_eq!(Some((format!("{p:?}"), left)), events, "{text}");
        true
    }

    const HEAD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.org\nspec:\n  group: example.org\n  names:\n    kind: Gadget\n    plural: gadgets\n  scope: Namespaced\n";

    /// Schemas as generators write them: block scalars, an indented sequence, `{}`.
    fn block_style() -> String {
        let mut t = format!("{HEAD}  versions:\n    - name: v1\n      served: true\n      storage: true\n      additionalPrinterColumns:\n        - jsonPath: .status.conditions[?(@.type==\"Ready\")].status\n          name: Ready\n          type: string\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n");
        for i in 0..4 {
            t += &format!("            field{i}:\n              description: |-\n                Field {i} says what the gadget does.\n\n                A second paragraph, with: a colon and # a hash.\n              type: object\n              default: {{}}\n              properties:\n                mode:\n                  type: string\n                  enum:\n                    - Fast\n                    - Slow\n                  pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\n                count:\n                  format: int32\n                  type: integer\n                  minimum: -1\n              x-kubernetes-list-type: map\n              required: [mode, count]\n              x-kubernetes-list-map-keys: [ ]\n              additionalProperties: {{type: object, properties: {{a: {{type: string}}, b: {{items: [x y, z]}}}}}}\n");
        }
        t += "      subresources:\n        status: {}\n";
        t
    }

    /// Older generators: an indentless sequence, multi-line plain and quoted scalars.
    fn folded_style() -> String {
        let mut t = format!("{HEAD}  versions:\n  - name: v1beta1\n    schema:\n      openAPIV3Schema:\n        properties:\n");
        for i in 0..4 {
            t += &format!("          item{i}:\n            description: 'Item {i} of the gadget''s list, wrapped at eighty\n              columns as older generators did: see the \"docs\".'\n            properties:\n              name:\n                description: Name of the thing, which must be unique within\n                  the namespace; `Unknown` is kept.\n                type: string\n              note:\n                description: \"An escaped \\\"quote\\\" and a tab\\t, then a\n                  second line\"\n                type: string\n            required:\n            - name\n            type: object\n");
        }
        t += "    served: true\n    storage: true\n";
        t
    }

    fn tight(file_nodes: usize) -> ParseLimits {
        ParseLimits {
            file_nodes,
            ..ParseLimits::default()
        }
    }

    #[test]
    fn reads_schemas_as_generators_write_them() {
        let block = block_style();
        let folded = folded_style();
        let two = format!("{block}  names2: x\n---\napiVersion: v1\nkind: ConfigMap\ndata:\n  versions: x\n---\n{folded}");
        let crlf = block.replace('\n', "\r\n");
        // A `-` alone on the first line (trailing spaces and all), and nothing after the last.
        let dash = folded.replace("  - name: v1beta1\n", "  -  \n    name: v1beta1\n");
        let unended = folded.trim_end().to_string();
        // (text, whether the line reader reads it, whether the parse leaves schemas out)
        for (text, read, pruned) in [
            (&block, true, true),
            (&folded, true, true),
            (&two, true, true),
            (&crlf, true, true),
            (&dash, true, true),
            (&dash.replace("\n", "\r\n"), true, true),
            (&unended, true, true),
            // Not a CRD: the builder does not prune it, so the file is parsed from its text.
            (
                &block.replace("CustomResourceDefinition", "Gadget"),
                false,
                false,
            ),
            // A problem anywhere: the parser reports it from the whole text.
            (&format!("{block}status: {{a: [}}\n"), false, false),
            (&format!("{block}status: {{a: 1, a: 2}}\n"), false, true),
            // Where the parser reads a line differently: a tab-only line or a lone `\r` does not
            // end the collection, and a key of more than 1024 characters is an error.
            (
                &folded.replace("    served: true\n", "\t\n    served: true\n"),
                false,
                true,
            ),
            (
                &folded.replace("    served: true\n", "\r    served: true\n"),
                false,
                true,
            ),
            (
                &folded.replace(
                    "    served: true\n",
                    &format!("    {}: x\n    served: true\n", "k".repeat(1025)),
                ),
                false,
                false,
            ),
        ] {
            assert_eq!(agree(text, ParseLimits::default()), read, "{text}");
            for n in [40, 150, 400] {
                agree(text, tight(n));
            }
            // And through the public entry point, which checks the same in debug builds.
            let parsed =
                crate::yaml::parse_pruned(0, text, ParseLimits::default(), crate::model::PRUNE);
            assert_eq!(parsed.pruned.is_some(), pruned, "{text}");
        }
    }

    /// Every line of each style, changed in ways the line reader must either read exactly as
    /// the parser does or leave to it.
    #[test]
    fn agrees_with_the_parser_on_every_small_change() {
        let mutations: &[fn(&str) -> String] = &[
            |l| format!(" {l}"),
            |l| l.strip_prefix(' ').unwrap_or(l).to_string(),
            |l| format!("  {l}"),
            |l| format!("{l} # note"),
            |l| format!("{l}: x"),
            |l| format!("{l}:"),
            |l| format!("{l}'"),
            |l| format!("{l}\""),
            |l| format!("{l} \\"),
            |l| l.replacen(": ", ": &a ", 1),
            |l| l.replacen(": ", ": !!str ", 1),
            |l| l.replacen(": ", ": *a", 1),
            |l| l.replacen(": ", ": [", 1),
            |l| l.replacen(": ", ": - ", 1),
            |l| l.replacen(": ", ":", 1),
            |l| l.replacen("- ", "- - ", 1),
            |l| l.replacen("- ", "-", 1),
            |l| format!("\t{l}"),
            |l| format!("{l}\u{e9}"),
            |l| format!("{l}\n{l}"),
            |l| format!("{l}\n   "),
            |l| format!("{l}\n"),
            |l| format!("{l}\n---"),
            |l| format!("{l}\n#"),
            |_| String::new(),
            |l| l[..l.len() / 2].to_string(),
            |l| format!("- {}", l.trim_start()),
            |l| l.replacen(", ", ",, ", 1),
            |l| l.replacen(", ", ",", 1),
            |l| l.replacen("]", ",]", 1),
            |l| l.replacen("[", "[[", 1),
            |l| l.replacen("{type: object", "{type: object, type: x", 1),
            |l| l.replacen("{a:", "{a :", 1),
            |l| l.replacen("{a:", "{-a:", 1),
            |l| l.replacen("x y", "x: y", 1),
            |l| l.replacen("x y", "[x] y", 1),
        ];
        let (mut read, mut left) = (0, 0);
        for base in [block_style(), folded_style()] {
            let lines: Vec<&str> = base.lines().collect();
            for at in 10..lines.len() {
                for m in mutations {
                    let mut changed: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                    changed[at] = m(lines[at]);
                    let text = changed.join("\n") + "\n";
                    if agree(&text, ParseLimits::default()) {
                        read += 1;
                    } else {
                        left += 1;
                    }
                    agree(&text, tight(150));
                }
            }
        }
        // Both ways are taken, many times: the comparison above is not empty.
        assert!(
            read > 1000 && left > 1000,
            "read {read}, left to the parser {left}"
        );
    }
}
