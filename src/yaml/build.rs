//! Builds the span tree from parser events, with budgets that keep hostile input cheap.

use super::skim::{skim, unshift, Shift, Skimmed};
use super::{
    Comment, Document, Entry, FileId, Node, ParseProblem, ParsedFile, ProblemKind, Scalar, Shared,
    Span, Style, Value,
};
use foldhash::{HashMap, HashSet};
use granit_parser::{Event, Marker, Parser, ScalarStyle, StructureStyle};

/// Nodes that alias expansion may copy into one document (see [`ParseLimits::alias_nodes`]).
pub const ALIAS_NODES: usize = 100_000;
/// Nesting of collections (see [`ParseLimits::max_depth`]).
pub const MAX_DEPTH: usize = 200;
/// Nodes one file may cost to parse (see [`ParseLimits::file_nodes`]).
pub const FILE_NODES: usize = 4_000_000;
/// Nodes all the files of one run may cost to parse together (see [`ParseLimits::run_nodes`]).
pub const RUN_NODES: usize = 24_000_000;

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
    /// The run's budget, in the same nodes, for every file together, taken in path order: the
    /// first file that would take the total past it, and every file after it, is skipped
    /// (`run-limit`). Each file is capped, but every parsed tree is kept until the report, so
    /// without it a pull request of many files each just under the per-file budget would need
    /// gigabytes. The trees of a run within it take about 1 GB at most.
    pub run_nodes: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            alias_nodes: ALIAS_NODES,
            max_depth: MAX_DEPTH,
            file_nodes: FILE_NODES,
            run_nodes: RUN_NODES,
        }
    }
}

/// An open collection. Its children so far are the top of [`Builder::items`] or
/// [`Builder::entries`] from `from` on: the stacks grow once per file rather than one vector
/// per collection, and a collection is made at its size when it ends.
enum Frame {
    Seq {
        start: usize,
        flow: bool,
        anchor: usize,
        from: usize,
        /// Nodes in the collection so far, itself included.
        size: usize,
    },
    Map {
        start: usize,
        flow: bool,
        anchor: usize,
        from: usize,
        key: Option<Node>,
        size: usize,
    },
}

/// Subtrees that a caller will never read, left unbuilt by [`parse_pruned`].
#[derive(Clone, Copy)]
pub struct Prune<'a> {
    /// Paths of mapping keys from a document's root (at most [`PRUNE_DEPTH`] keys long).
    pub paths: &'a [&'a [&'a str]],
    /// Whether, in a document whose root mapping holds `root` (so far, or in full), the value
    /// at `paths[i]` is not read.
    pub skip: &'a (dyn Fn(&[Entry], usize) -> bool + Sync),
}

/// The longest path [`Prune`] looks at: it is built on the stack for most keys near the top of
/// every document.
pub const PRUNE_DEPTH: usize = 8;

/// A collection being read but not built: what its node's span and its duplicate keys need.
struct Light {
    flow: bool,
    map: bool,
    /// In a mapping: whether the next child to end is a key.
    at_key: bool,
    /// Where the last item (in a mapping, the last value) ended: a block collection's end.
    last_end: Option<usize>,
    keys: Vec<(Option<compact_str::CompactString>, Span)>,
}

/// The collection being skipped, from its start event to its end.
struct Skip {
    start: usize,
    /// Its index in [`Prune::paths`].
    path: usize,
    /// Its index in [`Builder::skims`] when the parser reads it shortened.
    skim: Option<usize>,
    /// Nodes read, itself included: what building it would have counted.
    size: usize,
    /// Its own collection first, then those open inside it.
    stack: Vec<Light>,
}

/// A pruned collection: where it is, for the check when its document ends.
struct Pruned {
    path: usize,
    start: u32,
}

impl Light {
    fn new(flow: bool, map: bool) -> Light {
        Light {
            flow,
            map,
            at_key: map,
            last_end: None,
            keys: Vec::new(),
        }
    }

    /// A child ended at `stop`: in a mapping, a key (with its text and span when it is a
    /// scalar) or a value.
    fn child(&mut self, stop: usize, scalar: Option<(&str, Span)>) {
        if self.map && self.at_key {
            // A collection as a key has no text: no duplicate is ever found for it.
            if let Some((text, span)) = scalar {
                self.keys.push((Some(text.into()), span));
            }
            self.at_key = false;
        } else {
            self.last_end = Some(stop);
            self.at_key = self.map;
        }
    }
}

/// Why the pruned parse gives up, for the file to be parsed in full instead.
pub(super) struct Unusual;

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
    /// The items of the open sequences, the innermost last.
    items: Vec<Node>,
    /// The entries of the open mappings, the innermost last.
    entries: Vec<Entry>,
    /// Anchored nodes of the current document with their sizes, for budgeted alias expansion.
    anchors: HashMap<usize, Anchored>,
    alias_budget: usize,
    /// What is left of [`ParseLimits::file_nodes`].
    file_budget: usize,
    out: ParsedFile,
    doc_index: usize,
    prune: Option<Prune<'a>>,
    /// [`Prune::skip`]'s answer for each path in the current document, asked once: a document
    /// that repeats a key must not cost a search of its root per repetition.
    asked: Vec<Option<bool>>,
    /// Set after a key whose value is pruned, until the value's first event: the path's index.
    prune_next: Option<usize>,
    skip: Option<Skip>,
    /// Pruned in the current document, to check when it ends.
    pruned: Vec<Pruned>,
    any_pruned: bool,
    unusual: bool,
    /// Collections the parser reads shortened; each must be one that is pruned.
    skims: &'a [Skimmed],
    skims_met: usize,
}

fn offset(m: &Marker) -> usize {
    m.byte_offset().unwrap_or(0)
}

/// Parses every document of one file. Syntax errors end only the document they occur in.
pub fn parse(file: FileId, text: &str, limits: ParseLimits) -> ParsedFile {
    match build(file, text, Cut::none(text), limits, None) {
        Ok((parsed, _)) => parsed,
        Err(Unusual) => unreachable!("only a pruned parse gives up"),
    }
}

/// [`parse`], except that a non-empty collection `prune` skips is read, and checked, but not
/// built: it reads as an empty collection with its own span and style, and
/// [`ParsedFile::pruned`] is set. The problems and every other node are those [`parse`]
/// gives. Where that could differ (an anchor, an alias or a merge key inside, an error while
/// skipping, a key given twice on the way), the file is parsed in full instead.
///
/// The collections are read line by line where they keep to a plain subset of YAML (see
/// `skim`), and by the parser's events otherwise.
pub fn parse_pruned(file: FileId, text: &str, limits: ParseLimits, prune: Prune) -> ParsedFile {
    let events = || build(file, text, Cut::none(text), limits, Some(prune));
    if let Some((input, skims, shifts)) = skim(text, prune.paths, limits.max_depth) {
        let cut = Cut {
            input: &input,
            skims: &skims,
            shifts: &shifts,
        };
        if let Ok(skimmed) = build(file, text, cut, limits, Some(prune)) {
            // Every test that parses a CRD checks the line reader against the events.
            #[cfg(debug_assertions)]
            {
                let full = events().ok().map(|(p, left)| (format!("{p:?}"), left));
                assert_eq!(
                    Some((format!("{:?}", skimmed.0), skimmed.1)),
                    full,
                    "the line reader and the parser disagree on {text:?}"
                );
            }
            return skimmed.0;
        }
    }
    events().map_or_else(|Unusual| parse(file, text, limits), |(parsed, _)| parsed)
}

/// What the parser reads: `text` itself, or `text` with `skims` cut short at `shifts`.
#[derive(Clone, Copy)]
pub(super) struct Cut<'c> {
    pub input: &'c str,
    pub skims: &'c [Skimmed],
    pub shifts: &'c [Shift],
}

impl Cut<'_> {
    pub fn none(text: &str) -> Cut<'_> {
        Cut {
            input: text,
            skims: &[],
            shifts: &[],
        }
    }
}

/// Parses `cut.input` into the nodes of `text`; returns them with what is left of the file's
/// budget.
pub(super) fn build(
    file: FileId,
    text: &str,
    cut: Cut,
    limits: ParseLimits,
    prune: Option<Prune>,
) -> Result<(ParsedFile, usize), Unusual> {
    let mut b = Builder {
        file,
        text,
        limits,
        stack: Vec::new(),
        items: Vec::new(),
        entries: Vec::new(),
        anchors: HashMap::default(),
        alias_budget: limits.alias_nodes,
        file_budget: limits.file_nodes,
        out: ParsedFile::default(),
        doc_index: 0,
        prune,
        asked: vec![None; prune.map_or(0, |p| p.paths.len())],
        prune_next: None,
        skip: None,
        pruned: Vec::new(),
        any_pruned: false,
        unusual: false,
        skims: cut.skims,
        skims_met: 0,
    };
    let mut parser = Parser::new_from_str(cut.input);
    loop {
        match parser.next() {
            None => break,
            Some(Ok((event, span))) => {
                let (start, end) = (
                    unshift(cut.shifts, offset(&span.start)),
                    unshift(cut.shifts, offset(&span.end)),
                );
                if let Err(problem) = b.charge(&event, start, end) {
                    // Nothing of a file that is abandoned is checked, so nothing is kept.
                    b.out.documents.clear();
                    b.any_pruned = false;
                    b.out.problems.push(problem);
                    break;
                }
                if (b.skip.is_some() || b.prune_next.is_some())
                    && b.skip_event(&event, start, end)?
                {
                    continue;
                }
                let built = b.event(event, start, end);
                if b.unusual {
                    return Err(Unusual);
                }
                if let Err(problem) = built {
                    b.out.problems.push(problem);
                    b.abandon_document();
                    match parser.proceed_next_document() {
                        Ok(true) => continue,
                        _ => break,
                    }
                }
            }
            Some(Err(err)) => {
                if b.skip.is_some() {
                    return Err(Unusual);
                }
                let at = unshift(cut.shifts, offset(err.marker())).min(text.len());
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
    if b.skip.is_some() || b.prune_next.is_some() || b.skims_met != cut.skims.len() {
        return Err(Unusual);
    }
    // A problem found in a shortened input (a syntax error, a budget stop) might be found
    // elsewhere in the whole text, or not at all: the file is parsed from its own text.
    if !cut.skims.is_empty() && !b.out.problems.is_empty() {
        return Err(Unusual);
    }
    if b.any_pruned {
        b.out.pruned = Some(limits);
    }
    b.out.nodes = limits.file_nodes - b.file_budget;
    Ok((b.out, b.file_budget))
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

    /// Whether a node ending at `end` runs to the end of a file whose last line, which holds
    /// more than spaces, has no line break.
    fn ends_unterminated(&self, end: usize) -> bool {
        let text = self.text;
        !text.ends_with(['\n', '\r'])
            && text.get(end..).is_some_and(|rest| rest.trim().is_empty())
            && text
                .rsplit(['\n', '\r'])
                .next()
                .is_some_and(|last| !last.trim().is_empty())
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
        self.asked.fill(None);
        self.prune_next = None;
        self.skip = None;
        self.pruned.clear();
        self.stack.clear();
        self.items.clear();
        self.entries.clear();
        self.anchors.clear();
        self.alias_budget = self.limits.alias_nodes;
        self.doc_index += 1;
    }

    fn event(&mut self, event: Event<'_>, start: usize, end: usize) -> Result<(), ParseProblem> {
        match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentStart(..) => {}
            Event::DocumentEnd => {
                self.asked.fill(None);
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
                let mut text: compact_str::CompactString = match text {
                    std::borrow::Cow::Borrowed(t) => t.into(),
                    std::borrow::Cow::Owned(t) => t.into(),
                };
                if matches!(style, Style::Literal | Style::Folded)
                    && text.ends_with('\n')
                    && self.ends_unterminated(end)
                {
                    // A block scalar keeps the line break its last line ends with; a last
                    // line the file ends without has none to keep (YAML 1.2, 8.1.1.2), as
                    // Go's YAML reads it.
                    text.pop();
                }
                let node = Node {
                    span: self.span(start, end),
                    style,
                    value: Value::Scalar(Scalar::new(text, tag.map(|t| t.to_string()).as_deref())),
                };
                self.push_node(node, 1, anchor)?;
            }
            Event::SequenceStart(style, anchor, _) => {
                self.open(start)?;
                self.stack.push(Frame::Seq {
                    start,
                    flow: style == StructureStyle::Flow,
                    anchor,
                    from: self.items.len(),
                    size: 1,
                });
            }
            Event::MappingStart(style, anchor, _) => {
                self.open(start)?;
                self.stack.push(Frame::Map {
                    start,
                    flow: style == StructureStyle::Flow,
                    anchor,
                    from: self.entries.len(),
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
                        from,
                        size,
                    } => {
                        let items: Shared<Node> = self.items.drain(from..).collect();
                        let stop = if flow {
                            end
                        } else {
                            items.last().map_or(end, |n| n.span.end as usize)
                        };
                        (
                            collection(self.span(s, stop), Value::Seq { items }, flow),
                            size,
                            anchor,
                        )
                    }
                    Frame::Map {
                        start: s,
                        flow,
                        anchor,
                        from,
                        size,
                        ..
                    } => {
                        let entries = self.finish_map(from);
                        let stop = if flow {
                            end
                        } else {
                            entries.last().map_or(end, |e| e.value.span.end as usize)
                        };
                        (
                            collection(self.span(s, stop), Value::Map { entries }, flow),
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
            // The copy is paid from the document's alias budget before it is made, at the size
            // its aliases expand to (it shares its collections with the anchored node until
            // one is written); one that could not be paid could never be aliased either, so it
            // is not made.
            let node = (size <= self.alias_budget).then(|| {
                self.alias_budget -= size;
                node.clone()
            });
            self.anchors.insert(anchor, Anchored { node, size });
        }
        match self.stack.last_mut() {
            None => {
                debug_assert!(self.items.is_empty() && self.entries.is_empty());
                if !self.pruned.is_empty() {
                    self.check_pruned(&node);
                }
                let index = self.doc_index;
                self.out.documents.push(Document { index, root: node });
            }
            Some(Frame::Seq { size: total, .. }) => {
                *total += size;
                self.items.push(node)
            }
            Some(Frame::Map {
                key, size: total, ..
            }) => match key.take() {
                None => {
                    *total += size;
                    *key = Some(node);
                    if self.prune.is_some() {
                        self.consider_pruning();
                    }
                }
                Some(k) => {
                    *total += size;
                    self.entries.push(Entry {
                        key: k,
                        value: node,
                    })
                }
            },
        }
        Ok(())
    }

    /// After a key: whether its value is one that [`Prune`] skips. Only along mappings from
    /// the document's root, no deeper than [`PRUNE_DEPTH`] keys.
    fn consider_pruning(&mut self) {
        let Some(prune) = self.prune else {
            return;
        };
        let depth = self.stack.len();
        if depth > PRUNE_DEPTH {
            return;
        }
        let mut path = [""; PRUNE_DEPTH];
        for (at, frame) in path.iter_mut().zip(&self.stack) {
            match frame {
                Frame::Map { key: Some(k), .. } => match k.as_str() {
                    Some(text) => *at = text,
                    None => return,
                },
                _ => return,
            }
        }
        let Some(i) = prune.paths.iter().position(|p| *p == &path[..depth]) else {
            return;
        };
        // The same path again in one document: a key given twice on the way, whose last
        // value is the one read. `parse` would have built the one pruned already.
        if self.pruned.iter().any(|p| p.path == i) {
            self.unusual = true;
            return;
        }
        let Some(&Frame::Map { from, .. }) = self.stack.first() else {
            return;
        };
        // The root's entries run up to those of the first mapping opened inside it.
        let inner = self.stack[1..].iter().find_map(|f| match f {
            Frame::Map { from, .. } => Some(*from),
            Frame::Seq { .. } => None,
        });
        let root = &self.entries[from..inner.unwrap_or(self.entries.len())];
        let skip = *self.asked[i].get_or_insert_with(|| (prune.skip)(root, i));
        if skip {
            self.prune_next = Some(i);
        }
    }

    /// A document with pruned collections ends: each must be what its path reads in the
    /// whole document (the last of duplicated keys), of a document `Prune::skip` still skips
    /// now that all its keys are known. Otherwise [`parse`] would have built it.
    fn check_pruned(&mut self, root: &Node) {
        let prune = self.prune.expect("pruning");
        for p in self.pruned.drain(..) {
            let same = root
                .path(prune.paths[p.path])
                .is_some_and(|n| n.span.start == p.start);
            if !same || !(prune.skip)(root.entries(), p.path) {
                self.unusual = true;
            }
        }
        self.any_pruned = true;
    }

    /// Reads an event while a pruned collection is skipped, or at its first event. Returns
    /// whether it took the event; if not, the event is built as usual.
    fn skip_event(&mut self, event: &Event<'_>, start: usize, end: usize) -> Result<bool, Unusual> {
        if let Some(path) = self.prune_next {
            if matches!(event, Event::Comment(..)) {
                return Ok(false);
            }
            self.prune_next = None;
            let (map, flow, anchor) = match event {
                Event::SequenceStart(style, anchor, _) => {
                    (false, *style == StructureStyle::Flow, *anchor)
                }
                Event::MappingStart(style, anchor, _) => {
                    (true, *style == StructureStyle::Flow, *anchor)
                }
                // A scalar, an alias or an anchored collection is built, as `parse` does.
                _ => return Ok(false),
            };
            // Under an anchor, the collection would be copied into the anchor's aliases as
            // well, where slimming never empties it.
            let anchored = self.stack.iter().any(|f| match f {
                Frame::Seq { anchor, .. } | Frame::Map { anchor, .. } => *anchor != 0,
            });
            if anchor != 0 || anchored || self.open(start).is_err() {
                return Ok(false);
            }
            let skim = self
                .skims
                .iter()
                .position(|s| s.start == start && s.path == path);
            self.skip = Some(Skip {
                start,
                path,
                skim,
                size: 1,
                stack: vec![Light::new(flow, map)],
            });
            return Ok(true);
        }
        let Some(skip) = self.skip.as_mut() else {
            return Ok(false);
        };
        match event {
            Event::Comment(..) => return Ok(false),
            Event::Scalar(text, style, anchor, _) => {
                let top = skip.stack.last().expect("a collection being skipped");
                let merge = top.map && top.at_key && *style == ScalarStyle::Plain && text == "<<";
                if *anchor != 0 || merge {
                    return Err(Unusual);
                }
                skip.size += 1;
                let span = Span::new(self.file, start, end);
                skip.stack
                    .last_mut()
                    .expect("a collection being skipped")
                    .child(end, Some((text.as_ref(), span)));
            }
            Event::SequenceStart(style, anchor, _) | Event::MappingStart(style, anchor, _) => {
                if *anchor != 0 || self.stack.len() + skip.stack.len() >= self.limits.max_depth {
                    return Err(Unusual);
                }
                let map = matches!(event, Event::MappingStart(..));
                skip.size += 1;
                skip.stack
                    .push(Light::new(*style == StructureStyle::Flow, map));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let done = skip.stack.pop().expect("a collection being skipped");
                let stop = if done.flow {
                    end
                } else {
                    done.last_end.unwrap_or(end)
                };
                let ended = match skip.stack.last_mut() {
                    Some(parent) => {
                        parent.child(stop, None);
                        false
                    }
                    None => true,
                };
                if done.map {
                    self.report_duplicates(done.keys.len(), |i| {
                        (done.keys[i].0.as_deref(), done.keys[i].1)
                    });
                }
                if ended {
                    let skip = self.skip.take().expect("a collection being skipped");
                    return self.end_skip(skip, &done, stop).map(|_| true);
                }
            }
            _ => return Err(Unusual),
        }
        Ok(true)
    }

    /// The skipped collection (`own`, the last of its stack) ends: it joins its parent as an
    /// empty one with its span and style.
    fn end_skip(&mut self, mut skip: Skip, own: &Light, stop: usize) -> Result<(), Unusual> {
        if let Some(k) = skip.skim {
            // The parser read a shortened collection: what the whole one costs is charged now.
            let nodes = self.skims[k].nodes;
            let more = nodes.checked_sub(skip.size).ok_or(Unusual)?;
            self.file_budget = self.file_budget.checked_sub(more).ok_or(Unusual)?;
            skip.size = nodes;
            self.skims_met += 1;
        }
        let span = Span::new(self.file, skip.start, stop);
        let value = if own.map {
            Value::Map {
                entries: Shared::default(),
            }
        } else {
            Value::Seq {
                items: Shared::default(),
            }
        };
        // Empty already: nothing was dropped, as `Object::slim` would leave it.
        if skip.size > 1 {
            self.pruned.push(Pruned {
                path: skip.path,
                start: span.start,
            });
        }
        self.push_node(collection(span, value, own.flow), skip.size, 0)
            .map_err(|_| Unusual)
    }

    /// Applies YAML 1.1 merge keys (`<<`), which the cluster's decoder honours, and reports
    /// duplicate keys.
    fn finish_map(&mut self, from: usize) -> Shared<Entry> {
        let mut entries: Shared<Entry> = self.entries.drain(from..).collect();
        if entries
            .iter()
            .any(|e| is_merge_key(&e.key) && (e.value.is_map() || e.value.is_seq()))
        {
            let mut own = Vec::with_capacity(entries.len());
            let mut merged: Vec<Entry> = Vec::new();
            for e in entries {
                if is_merge_key(&e.key) {
                    match e.value.value {
                        // An alias's copy shares its entries with the anchored node.
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
            entries = own.into();
        }
        self.report_duplicates(entries.len(), |i| {
            (entries[i].key.as_str(), entries[i].key.span)
        });
        entries
    }

    /// Reports the keys given twice among a mapping's `n` keys, each its text (none when it
    /// is not a scalar) and span.
    fn report_duplicates<'k>(&mut self, n: usize, key: impl Fn(usize) -> (Option<&'k str>, Span)) {
        if n < 2 {
            return;
        }
        // Most mappings are small and have no duplicate: comparing their keys pairwise says
        // so without the sorted copy below.
        if n <= 16 {
            let text = |i: usize| key(i).0;
            let clash = (1..n).any(|i| text(i).is_some() && (0..i).any(|j| text(j) == text(i)));
            if !clash {
                return;
            }
        }
        let mut keyed: Vec<(&str, usize)> =
            (0..n).filter_map(|i| key(i).0.map(|k| (k, i))).collect();
        keyed.sort();
        for pair in keyed.windows(2) {
            let ((k, first), (k2, second)) = (pair[0], pair[1]);
            if k != k2 {
                continue;
            }
            let (a, b) = (key(first).1, key(second).1);
            // Merged entries keep the span of their source mapping, so only in-place keys count.
            if a.file != b.file || a == b {
                continue;
            }
            self.out.problems.push(ParseProblem {
                kind: ProblemKind::DuplicateKey,
                span: b,
                message: format!(
                    "duplicate key `{k}`: the cluster keeps only one of the two values"
                ),
                related: Some((a, "first defined here".into())),
                help: "keep one of the two keys",
            });
        }
    }
}

fn collection(span: Span, value: Value, flow: bool) -> Node {
    let style = if flow { Style::Flow } else { Style::Block };
    Node { span, style, value }
}

fn is_merge_key(key: &Node) -> bool {
    key.as_scalar()
        .is_some_and(|s| s.style == Style::Plain && s.text == "<<")
}
