//! Builds the span tree from parser events, with budgets that keep hostile input cheap.

use super::{
    Comment, Document, Entry, FileId, Node, ParseProblem, ParsedFile, ProblemKind, Scalar, Span,
    Style, Value,
};
use foldhash::{HashMap, HashSet};
use granit_parser::{Event, Marker, Parser, ScalarStyle, StructureStyle};

/// Nodes that alias expansion may copy into one document (see [`ParseLimits::alias_nodes`]).
pub const ALIAS_NODES: usize = 100_000;
/// Nesting of collections (see [`ParseLimits::max_depth`]).
pub const MAX_DEPTH: usize = 200;
/// Nodes one file may cost to parse (see [`ParseLimits::file_nodes`]).
pub const FILE_NODES: usize = 4_000_000;

/// Budgets for one file.
#[derive(Clone, Copy, Debug)]
pub struct ParseLimits {
    /// Nodes that anchors and aliases may copy in one document; past it the document is
    /// rejected (a billion-laughs file stops here after a few thousand nodes, not after
    /// exhausting memory).
    pub alias_nodes: usize,
    /// Nesting of collections; the parser refuses deeper input before we see it.
    pub max_depth: usize,
    /// The per-file work budget, in nodes built: every scalar and collection the file holds,
    /// plus every node an alias copies, in all its documents together. Past it the file is
    /// abandoned with one diagnostic. (The copy an anchor keeps is never larger than what was
    /// already paid to build its node, so it needs no charge of its own.)
    ///
    /// It is counted in nodes rather than seconds so that whether a file is abandoned depends
    /// on the file alone, never on the speed or the load of the machine: the same repository
    /// gives the same findings in CI and on a laptop. Everything after parsing (recognition,
    /// rendering, rules) does work roughly in proportion to the nodes, so this bounds the
    /// file's time and memory too. Four million nodes take about 300 MB and 2 s to lint in a
    /// release build; a real manifest of the default 8 MiB size limit has a fraction of that.
    pub file_nodes: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            alias_nodes: ALIAS_NODES,
            max_depth: MAX_DEPTH,
            file_nodes: FILE_NODES,
        }
    }
}

enum Frame {
    Seq {
        start: usize,
        flow: bool,
        anchor: usize,
        items: Vec<Node>,
        /// Nodes in the collection so far, itself included.
        size: usize,
    },
    Map {
        start: usize,
        flow: bool,
        anchor: usize,
        entries: Vec<Entry>,
        key: Option<Node>,
        size: usize,
    },
}

/// An anchored node and its size in nodes. A node too big to ever be aliased within the
/// document's budget is not copied at all: only its size is kept, to refuse the alias.
struct Anchored {
    node: Option<Node>,
    size: usize,
}

struct Builder<'a> {
    file: FileId,
    text: &'a str,
    limits: ParseLimits,
    stack: Vec<Frame>,
    /// Anchored nodes of the current document with their sizes, for budgeted alias expansion.
    anchors: HashMap<usize, Anchored>,
    alias_budget: usize,
    /// What is left of [`ParseLimits::file_nodes`].
    file_budget: usize,
    out: ParsedFile,
    doc_index: usize,
}

fn offset(m: &Marker) -> usize {
    m.byte_offset().unwrap_or(0)
}

/// Parses every document of one file. Syntax errors end only the document they occur in.
pub fn parse(file: FileId, text: &str, limits: ParseLimits) -> ParsedFile {
    let mut b = Builder {
        file,
        text,
        limits,
        stack: Vec::new(),
        anchors: HashMap::default(),
        alias_budget: limits.alias_nodes,
        file_budget: limits.file_nodes,
        out: ParsedFile::default(),
        doc_index: 0,
    };
    let mut parser = Parser::new_from_str(text);
    loop {
        match parser.next() {
            None => break,
            Some(Ok((event, span))) => {
                let (start, end) = (offset(&span.start), offset(&span.end));
                if let Err(problem) = b.charge(&event, start, end) {
                    // Nothing of a file that is abandoned is checked, so nothing is kept.
                    b.out.documents.clear();
                    b.out.problems.push(problem);
                    break;
                }
                if let Err(problem) = b.event(event, start, end) {
                    b.out.problems.push(problem);
                    b.abandon_document();
                    match parser.proceed_next_document() {
                        Ok(true) => continue,
                        _ => break,
                    }
                }
            }
            Some(Err(err)) => {
                let at = offset(err.marker()).min(text.len());
                let end = next_char_boundary(text, at);
                b.out.problems.push(ParseProblem {
                    kind: ProblemKind::InvalidYaml,
                    span: Span::new(file, at, end),
                    message: describe_error(&err),
                    related: None,
                    help: SYNTAX_HELP,
                });
                b.abandon_document();
                match parser.proceed_next_document() {
                    Ok(true) => continue,
                    _ => break,
                }
            }
        }
    }
    b.out
}

const SYNTAX_HELP: &str = "fix the syntax: nothing in this document was checked";

fn next_char_boundary(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(at, |c| at + c.len_utf8())
}

fn describe_error(err: &granit_parser::ScanError) -> String {
    // The parser's own text ends with a position; ours is in the span already.
    let info = err.info();
    let info = info.trim();
    if info.contains("recursion limit") {
        return "nesting deeper than the parser allows (255 levels); the document is skipped"
            .into();
    }
    match info.find(" at char ") {
        Some(i) => info[..i].to_string(),
        None if info.is_empty() => format!("{}", err.kind()),
        None => info.to_string(),
    }
}

impl Builder<'_> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    /// Counts an event against the file's budget before it is acted on.
    fn charge(&mut self, event: &Event<'_>, start: usize, end: usize) -> Result<(), ParseProblem> {
        let cost = match event {
            Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..) => 1,
            // A copy the document's budget refuses is not made, so it costs nothing more.
            Event::Alias(id) => match self.anchors.get(id) {
                Some(a) if a.node.is_some() && a.size <= self.alias_budget => a.size,
                _ => 1,
            },
            _ => 0,
        };
        match self.file_budget.checked_sub(cost) {
            Some(left) => {
                self.file_budget = left;
                Ok(())
            }
            None => Err(self.problem(
                start,
                end,
                format!(
                    "parsing this file takes more than the per-file budget of {} nodes (aliases expanded); the file is skipped",
                    self.limits.file_nodes
                ),
                "split the file, or remove the aliases: nothing in this file was checked",
            )),
        }
    }

    fn abandon_document(&mut self) {
        self.stack.clear();
        self.anchors.clear();
        self.alias_budget = self.limits.alias_nodes;
        self.doc_index += 1;
    }

    fn event(&mut self, event: Event<'_>, start: usize, end: usize) -> Result<(), ParseProblem> {
        match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentStart(..) => {}
            Event::DocumentEnd => {
                self.anchors.clear();
                self.alias_budget = self.limits.alias_nodes;
                self.doc_index += 1;
            }
            Event::Comment(text, _) => self.out.comments.push(Comment {
                span: self.span(start, end),
                text: text.into_owned(),
            }),
            Event::Anchor(..) => {}
            Event::Alias(id) => {
                let Some(Anchored { node, size }) = self.anchors.get(&id) else {
                    return Err(self.problem(
                        start,
                        end,
                        "alias to an unknown anchor".into(),
                        SYNTAX_HELP,
                    ));
                };
                let size = *size;
                let node = match node {
                    Some(node) if size <= self.alias_budget => node.clone(),
                    _ => {
                    return Err(self.problem(
                        start,
                        end,
                        format!(
                            "alias expansion exceeds the budget of {} nodes (an alias bomb?); the document is skipped",
                            self.limits.alias_nodes
                        ),
                        "expand or remove the aliases: nothing in this document was checked",
                    ))
                    }
                };
                self.alias_budget -= size;
                self.push_node(node, size, 0)?;
            }
            Event::UnresolvedAlias(_) => {
                return Err(self.problem(
                    start,
                    end,
                    "alias to an unknown anchor".into(),
                    SYNTAX_HELP,
                ));
            }
            Event::Scalar(text, style, anchor, tag) => {
                let style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    ScalarStyle::Folded => Style::Folded,
                };
                let node = Node {
                    span: self.span(start, end),
                    value: Value::Scalar(Scalar {
                        text: match text {
                            std::borrow::Cow::Borrowed(t) => t.into(),
                            std::borrow::Cow::Owned(t) => t.into(),
                        },
                        style,
                        tag: tag.map(|t| super::Tag::new(&t.to_string())),
                    }),
                };
                self.push_node(node, 1, anchor)?;
            }
            Event::SequenceStart(style, anchor, _) => {
                self.open(start)?;
                self.stack.push(Frame::Seq {
                    start,
                    flow: style == StructureStyle::Flow,
                    anchor,
                    items: Vec::new(),
                    size: 1,
                });
            }
            Event::MappingStart(style, anchor, _) => {
                self.open(start)?;
                self.stack.push(Frame::Map {
                    start,
                    flow: style == StructureStyle::Flow,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                    size: 1,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return Ok(());
                };
                let (node, size, anchor) = match frame {
                    Frame::Seq {
                        start: s,
                        flow,
                        anchor,
                        mut items,
                        size,
                    } => {
                        // Trees live until the end of the run: growth slack would be a
                        // quarter of their memory.
                        items.shrink_to_fit();
                        let stop = if flow {
                            end
                        } else {
                            items.last().map_or(end, |n| n.span.end as usize)
                        };
                        (
                            Node {
                                span: self.span(s, stop),
                                value: Value::Seq { items, flow },
                            },
                            size,
                            anchor,
                        )
                    }
                    Frame::Map {
                        start: s,
                        flow,
                        anchor,
                        entries,
                        size,
                        ..
                    } => {
                        let mut entries = self.finish_map(entries);
                        entries.shrink_to_fit();
                        let stop = if flow {
                            end
                        } else {
                            entries.last().map_or(end, |e| e.value.span.end as usize)
                        };
                        (
                            Node {
                                span: self.span(s, stop),
                                value: Value::Map { entries, flow },
                            },
                            size,
                            anchor,
                        )
                    }
                };
                self.push_node(node, size, anchor)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn problem(
        &self,
        start: usize,
        end: usize,
        message: String,
        help: &'static str,
    ) -> ParseProblem {
        ParseProblem {
            kind: ProblemKind::InvalidYaml,
            span: self.span(start, end),
            message,
            related: None,
            help,
        }
    }

    fn open(&self, start: usize) -> Result<(), ParseProblem> {
        if self.stack.len() >= self.limits.max_depth {
            let end = next_char_boundary(self.text, start.min(self.text.len()));
            return Err(self.problem(
                start,
                end,
                format!(
                    "nesting deeper than {} levels; the document is skipped",
                    self.limits.max_depth
                ),
                "flatten the structure: nothing in this document was checked",
            ));
        }
        Ok(())
    }

    /// Adds a finished node of `size` nodes to its parent, keeping a copy for its anchor.
    fn push_node(&mut self, node: Node, size: usize, anchor: usize) -> Result<(), ParseProblem> {
        if anchor != 0 {
            // The copy is paid from the document's alias budget before it is made; one that
            // could not be paid could never be aliased either, so it is not made.
            let node = (size <= self.alias_budget).then(|| {
                self.alias_budget -= size;
                node.clone()
            });
            self.anchors.insert(anchor, Anchored { node, size });
        }
        match self.stack.last_mut() {
            None => {
                let index = self.doc_index;
                self.out.documents.push(Document { index, root: node });
            }
            Some(Frame::Seq {
                items, size: total, ..
            }) => {
                *total += size;
                items.push(node)
            }
            Some(Frame::Map {
                entries,
                key,
                size: total,
                ..
            }) => match key.take() {
                None => {
                    *total += size;
                    *key = Some(node)
                }
                Some(k) => {
                    *total += size;
                    entries.push(Entry {
                        key: k,
                        value: node,
                    })
                }
            },
        }
        Ok(())
    }

    /// Applies YAML 1.1 merge keys (`<<`), which the cluster's decoder honours, and reports
    /// duplicate keys.
    fn finish_map(&mut self, mut entries: Vec<Entry>) -> Vec<Entry> {
        if entries
            .iter()
            .any(|e| is_merge_key(&e.key) && (e.value.is_map() || e.value.is_seq()))
        {
            let mut own = Vec::with_capacity(entries.len());
            let mut merged: Vec<Entry> = Vec::new();
            for e in entries {
                if is_merge_key(&e.key) {
                    match e.value.value {
                        Value::Map { entries, .. } => merged.extend(entries),
                        Value::Seq { items, .. } => {
                            for item in items {
                                if let Value::Map { entries, .. } = item.value {
                                    merged.extend(entries);
                                }
                            }
                        }
                        Value::Scalar(_) => own.push(Entry {
                            key: e.key,
                            value: e.value,
                        }),
                    }
                } else {
                    own.push(e);
                }
            }
            // A set, not a search of `own` per merged key: a mapping of many keys merged into
            // another of many keys must not cost their product.
            let mut seen: HashSet<Option<compact_str::CompactString>> =
                own.iter().map(|e| e.key.as_str().map(Into::into)).collect();
            for m in merged {
                if seen.insert(m.key.as_str().map(Into::into)) {
                    own.push(m);
                }
            }
            entries = own;
        }
        self.report_duplicates(&entries);
        entries
    }

    fn report_duplicates(&mut self, entries: &[Entry]) {
        if entries.len() < 2 {
            return;
        }
        // Most mappings are small and have no duplicate: comparing their keys pairwise says
        // so without the sorted copy below.
        if entries.len() <= 16 {
            let key = |i: usize| entries[i].key.as_str();
            let clash =
                (1..entries.len()).any(|i| key(i).is_some() && (0..i).any(|j| key(j) == key(i)));
            if !clash {
                return;
            }
        }
        let mut keyed: Vec<(&str, usize)> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.key.as_str().map(|k| (k, i)))
            .collect();
        keyed.sort();
        for pair in keyed.windows(2) {
            let ((k, first), (k2, second)) = (pair[0], pair[1]);
            if k != k2 {
                continue;
            }
            let (a, b) = (&entries[first].key, &entries[second].key);
            // Merged entries keep the span of their source mapping, so only in-place keys count.
            if a.span.file != b.span.file || a.span == b.span {
                continue;
            }
            self.out.problems.push(ParseProblem {
                kind: ProblemKind::DuplicateKey,
                span: b.span,
                message: format!(
                    "duplicate key `{k}`: the cluster keeps only one of the two values"
                ),
                related: Some((a.span, "first defined here".into())),
                help: "keep one of the two keys",
            });
        }
    }
}

fn is_merge_key(key: &Node) -> bool {
    key.as_scalar()
        .is_some_and(|s| s.style == Style::Plain && s.text == "<<")
}
