//! Suppressions written in the manifests: `# gitops-lint: ignore[rule] reason` comments and
//! the `gitops-lint.io/ignore` annotation. Each one must say why, and each one must still
//! suppress something; otherwise it is reported itself.

use crate::finding::Finding;
use crate::model::speaks_to_us;
use crate::model::FileDocs;
use crate::render::{Graph, Unit};
use crate::rules::schema::{suppression_without_reason, unused_suppression};
use crate::rules::{self, Rule};
use crate::source::SourceDb;
use crate::yaml::{Comment, FileId, Node, Span, Value};
use foldhash::HashMap;
use rayon::prelude::*;

pub const ANNOTATION: &str = "gitops-lint.io/ignore";
pub const REASON_ANNOTATION: &str = "gitops-lint.io/ignore-reason";

/// Where a comment directive applies.
#[derive(Clone, Copy, Debug)]
enum Scope {
    File(FileId),
    Range(Span),
}

/// A rule, category or `all` as written, with the rule ids it stands for (sorted, and
/// shared by every word that names the same rules).
#[derive(Debug)]
struct Word {
    text: String,
    ids: std::sync::Arc<[&'static str]>,
}

#[derive(Debug)]
struct Suppression {
    /// The comment or annotation that says it.
    at: Span,
    words: Vec<Word>,
    reason: bool,
    scope: Option<Scope>,
    /// Rule ids this suppression hid at least one finding of.
    used: foldhash::HashSet<&'static str>,
}

impl Suppression {
    fn covers(&self, rule: &str) -> bool {
        self.words
            .iter()
            .any(|w| w.ids.binary_search(&rule).is_ok())
    }
}

/// What a directive comment says, before it is placed.
struct Parsed {
    file_wide: bool,
    words: Vec<Word>,
    unknown: Vec<String>,
    reason: bool,
}

/// Rule ids named by a word: a rule, a category, or `all`.
fn expand(word: &str) -> Result<std::sync::Arc<[&'static str]>, rules::Unknown> {
    // `*` is an early spelling of `all` that manifests may still carry.
    rules::select_shared(if word == "*" { "all" } else { word })
}

fn parse_list(list: &str) -> (Vec<Word>, Vec<String>) {
    let mut words = Vec::new();
    let mut unknown = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match expand(word) {
            Ok(ids) => words.push(Word {
                text: word.to_string(),
                ids,
            }),
            Err(_) => unknown.push(word.to_string()),
        }
    }
    (words, unknown)
}

/// "not a rule or category", with the nearest rule or category.
fn unknown_word(word: &str) -> String {
    match expand(word).err().and_then(|u| u.nearest) {
        Some(s) => format!(
            "`{word}` is not a rule or category (did you mean `{s}`?): it suppresses nothing"
        ),
        None => format!("`{word}` is not a rule or category: it suppresses nothing"),
    }
}

/// `gitops-lint: ignore[a, b] reason` or `gitops-lint: ignore-file[a] reason`.
fn parse_directive(comment: &str) -> Option<Parsed> {
    let rest = comment.trim().strip_prefix("gitops-lint:")?.trim_start();
    let (file_wide, rest) = if let Some(r) = rest.strip_prefix("ignore-file") {
        (true, r)
    } else {
        (false, rest.strip_prefix("ignore")?)
    };
    let rest = rest.strip_prefix('[')?;
    let (list, reason) = rest.split_once(']')?;
    let (words, unknown) = parse_list(list);
    Some(Parsed {
        file_wide,
        words,
        unknown,
        reason: !reason
            .trim()
            .trim_start_matches(['-', ':'])
            .trim()
            .is_empty(),
    })
}

fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, offset: usize) -> usize {
    text[offset..].find('\n').map_or(text.len(), |i| offset + i)
}

/// A node a directive can be about: a document's root, an entry (key to end of value) or an
/// item.
struct Target {
    start: u32,
    end: u32,
    /// Its place in the search order: roots in turn, each before its entries and items, which
    /// come in document order, each before what it holds (a pre-order walk).
    order: u32,
    /// A document's root: only a directive on a line of its own is about it.
    root: bool,
}

/// Every node a directive of one file can be about, by where it starts: a file with many
/// directives looks each one up here, rather than walking its documents once per directive.
struct Targets(Vec<Target>);

impl Targets {
    fn new(roots: &[&Node]) -> Targets {
        let mut out = Vec::new();
        let mut push = |start: u32, end: u32, root: bool| {
            let order = out.len() as u32;
            out.push(Target {
                start,
                end,
                order,
                root,
            });
        };
        // Iterative: nesting is bounded by the parser, but a walk need not rely on it. Work is
        // pushed last first, so that it is met in order, and a target is numbered when met,
        // before what it holds.
        enum Work<'n> {
            Holds(&'n Node),
            Entry(&'n Node, &'n Node),
            Item(&'n Node),
        }
        let mut stack: Vec<Work> = Vec::new();
        for r in roots {
            push(r.span.start, r.span.end, true);
            stack.push(Work::Holds(r));
            while let Some(work) = stack.pop() {
                let node = match work {
                    Work::Holds(n) => n,
                    Work::Entry(k, v) => {
                        push(k.span.start, v.span.end.max(k.span.end), false);
                        v
                    }
                    Work::Item(i) => {
                        push(i.span.start, i.span.end, false);
                        i
                    }
                };
                match &node.value {
                    Value::Map { entries, .. } => {
                        stack.extend(entries.iter().rev().map(|e| Work::Entry(&e.key, &e.value)))
                    }
                    Value::Seq { items, .. } => stack.extend(items.iter().rev().map(Work::Item)),
                    Value::Scalar(_) => {}
                }
            }
        }
        out.sort_by_key(|t| (t.start, t.order));
        Targets(out)
    }

    /// The first node, in the search order, that starts in `[from, to)`.
    fn first(&self, from: usize, to: usize, trailing: bool) -> Option<(usize, usize)> {
        let i = self.0.partition_point(|t| (t.start as usize) < from);
        self.0[i..]
            .iter()
            .take_while(|t| (t.start as usize) < to)
            .filter(|t| !(t.root && trailing))
            .min_by_key(|t| t.order)
            .map(|t| (t.start as usize, t.end as usize))
    }
}

/// The range a directive at `comment` covers: the node on its line when it trails content,
/// else the node on the next line that holds content. `skipped` remembers the last run of
/// blank and comment lines skipped, `(from, to)`: a run of many directive lines is walked once,
/// not once per directive.
fn range_of(
    comment: Span,
    text: &str,
    targets: &Targets,
    skipped: &mut Option<(usize, usize)>,
) -> Span {
    let c = comment.start as usize;
    let start = line_start(text, c);
    let trailing = !text[start..c].trim().is_empty();
    let mut line = if trailing {
        start
    } else {
        line_end(text, c).saturating_add(1).min(text.len())
    };
    if !trailing {
        match *skipped {
            // Every line from `from` to `to` is blank or a comment.
            Some((from, to)) if from <= line && line <= to => line = to,
            _ => {
                let from = line;
                // Skip blank and comment lines to the line the directive is about.
                while line < text.len() {
                    let end = line_end(text, line);
                    let content = text[line..end].trim();
                    if !content.is_empty() && !content.starts_with('#') {
                        break;
                    }
                    line = end + 1;
                }
                *skipped = Some((from, line));
            }
        }
    }
    let line = line.min(text.len());
    let end = line_end(text, line);
    let found = targets.first(line, end.max(line + 1), trailing);
    let (s, e) = found.unwrap_or((line, end));
    Span::new(comment.file, s, e.max(end))
}

/// A suppression for the directive comment `c` in `file`, with the range it covers when it
/// is not file-wide (`None`: nothing), or `None` when it is not a directive; what is wrong
/// with it is reported in `own`.
fn directive(
    c: &Comment,
    file: FileId,
    range: impl FnOnce() -> Option<Span>,
    own: &mut Vec<Finding>,
) -> Option<Suppression> {
    let Some(p) = parse_directive(&c.text) else {
        own.push(finding(
            &unused_suppression::RULE,
            c.span,
            "this `gitops-lint:` comment is not a directive: write `gitops-lint: ignore[rule-id] reason` or `ignore-file[rule-id] reason`".into(),
            "fix the syntax or remove the comment",
        ));
        return None;
    };
    for word in &p.unknown {
        own.push(finding(
            &unused_suppression::RULE,
            c.span,
            unknown_word(word),
            "`gitops-lint rules` lists rule ids and categories",
        ));
    }
    if p.words.is_empty() && p.unknown.is_empty() {
        own.push(finding(
            &unused_suppression::RULE,
            c.span,
            "this directive names no rule: it suppresses nothing".into(),
            "name the rules in the brackets: `ignore[rule-id] reason`",
        ));
    }
    let scope = if p.file_wide {
        Some(Scope::File(file))
    } else {
        range().map(Scope::Range)
    };
    Some(Suppression {
        at: c.span,
        words: p.words,
        reason: p.reason,
        scope,
        used: Default::default(),
    })
}

/// The directives written as lines of argocd-rbac-cm's policy CSV.
#[derive(Default)]
struct PolicyDirectives {
    /// A `# gitops-lint:` line, with the policy line it is about, if one follows.
    own_line: Vec<(Comment, Option<Span>)>,
    /// `# gitops-lint:` comments after a policy line's text.
    trailing: Vec<Span>,
}

/// In argocd-rbac-cm, a line of the policy CSV (`policy.csv`, `policy.<name>.csv`) that
/// starts with `#` is a comment to Argo CD, which skips it (`util/rbac/rbac.go`
/// `loadPolicyLine`), while to YAML it is text of the block scalar. Such a line can hold a
/// directive about the next policy line of the block, past blank and comment lines, as a YAML
/// comment is about the next line. Only literal blocks (`|`) are read: their lines are where
/// they are written. A `#` after a policy line's text is not a comment to Argo CD (its CSV
/// reader keeps it in the line's last field), so a directive there is reported, never read.
fn policy_directives(d: &FileDocs, text: &str) -> PolicyDirectives {
    let mut out = PolicyDirectives::default();
    // A block shared through an anchor is the same text for each object that holds it.
    let mut seen = foldhash::HashSet::default();
    for obj in &d.objects {
        let Some(data) = rules::access::rbac_data(obj) else {
            continue;
        };
        for e in data.entries() {
            if !rules::access::is_policy_key(e.key.as_str().unwrap_or("")) {
                continue;
            }
            let Some(lines) = e.value.literal_lines(text) else {
                continue;
            };
            if !seen.insert(e.value.span) {
                continue;
            }
            let file = e.value.span.file;
            // The policy line after each line, past comment lines: found once, from the end.
            let mut next = vec![None; lines.len()];
            let mut after = None;
            for (i, r) in lines.iter().enumerate().rev() {
                next[i] = after;
                if !text[r.clone()].starts_with('#') {
                    after = Some(i);
                }
            }
            for (i, r) in lines.iter().enumerate() {
                let line = &text[r.clone()];
                let Some(comment) = line.strip_prefix('#') else {
                    if let Some((at, _)) = line
                        .match_indices('#')
                        .find(|&(at, _)| speaks_to_us(&line[at + 1..]))
                    {
                        out.trailing.push(Span::new(file, r.start + at, r.end));
                    }
                    continue;
                };
                if !speaks_to_us(comment) {
                    continue;
                }
                let c = Comment {
                    span: Span::new(file, r.start, r.end),
                    text: comment.to_string(),
                };
                let about = next[i].map(|n| Span::new(file, lines[n].start, lines[n].end));
                out.own_line.push((c, about));
            }
        }
    }
    out
}

/// Whether a comment directive suppresses each finding; every directive that covers a finding
/// is credited with its rule, the nested and the outer. Findings are taken by file and rule, in
/// the order they start, against that file's directives for the rule in the order theirs start:
/// each directive joins once, and leaves once, credited or past, so a file with many findings
/// and many directives costs their number, not their product.
fn comment_hits(findings: &[Finding], list: &mut [Suppression]) -> Vec<bool> {
    let mut hits = vec![false; findings.len()];
    let mut by_file: HashMap<FileId, Vec<usize>> = HashMap::default();
    for (i, s) in list.iter().enumerate() {
        match s.scope {
            Some(Scope::File(file)) => by_file.entry(file).or_default().push(i),
            Some(Scope::Range(r)) => by_file.entry(r.file).or_default().push(i),
            None => {}
        }
    }
    let mut groups: HashMap<(FileId, &'static str), Vec<usize>> = HashMap::default();
    for (i, f) in findings.iter().enumerate() {
        if by_file.contains_key(&f.primary.span.file) {
            groups
                .entry((f.primary.span.file, f.rule.id))
                .or_default()
                .push(i);
        }
    }
    // In a fixed order, so that the credits do not depend on the map's.
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_unstable_by_key(|((file, rule), _)| (*file, *rule));
    for ((file, rule), mut at) in groups {
        let mut file_wide = Vec::new();
        // Each covering directive's range, `[start, end)`, never empty.
        let mut ranges: Vec<(u32, u32, usize)> = Vec::new();
        for &i in &by_file[&file] {
            if !list[i].covers(rule) {
                continue;
            }
            match list[i].scope {
                Some(Scope::File(_)) => file_wide.push(i),
                Some(Scope::Range(r)) => ranges.push((r.start, r.end.max(r.start + 1), i)),
                None => {}
            }
        }
        if !file_wide.is_empty() {
            for &i in &file_wide {
                list[i].used.insert(rule);
            }
            for &f in &at {
                hits[f] = true;
            }
        }
        if ranges.is_empty() {
            continue;
        }
        ranges.sort_unstable();
        at.sort_by_key(|&f| findings[f].primary.span.start);
        let mut next = 0;
        let mut furthest = 0u32;
        // Directives begun and not yet credited, the one that ends first on top.
        let mut open: std::collections::BinaryHeap<std::cmp::Reverse<(u32, usize)>> =
            Default::default();
        for f in at {
            let p = findings[f].primary.span.start;
            while let Some(&(_, end, i)) = ranges.get(next).filter(|r| r.0 <= p) {
                furthest = furthest.max(end);
                open.push(std::cmp::Reverse((end, i)));
                next += 1;
            }
            // Every directive begun here and ending past `p` covers it.
            while open.peek().is_some_and(|r| r.0 .0 <= p) {
                open.pop();
            }
            for std::cmp::Reverse((_, i)) in open.drain() {
                list[i].used.insert(rule);
            }
            if furthest > p {
                hits[f] = true;
            }
        }
    }
    hits
}

pub struct Outcome {
    pub kept: Vec<Finding>,
    /// Findings about the suppressions themselves.
    pub own: Vec<Finding>,
    pub suppressed: usize,
}

fn finding(rule: &'static Rule, span: Span, message: String, help: &str) -> Finding {
    let mut f = Finding::new(rule, span, message);
    f.help(help);
    f
}

/// Drops the findings that a comment directive or an annotation suppresses, and reports
/// directives without a reason and directives that suppress nothing.
/// `enabled` says which rules the configuration runs: a suppression of a rule that is off is
/// not reported as unused.
pub fn apply(
    findings: Vec<Finding>,
    sources: &SourceDb,
    docs: &[FileDocs],
    graph: &Graph,
    enabled: &dyn Fn(&str) -> bool,
) -> Outcome {
    let mut own = Vec::new();
    let mut list: Vec<Suppression> = Vec::new();
    for (id, d) in docs.iter().enumerate() {
        let text = &sources.get(id as FileId).text;
        let roots: Vec<&Node> = d
            .objects
            .iter()
            .map(|o| &o.root)
            .chain(d.loose.iter().map(|l| &l.root))
            .collect();
        let mut targets = None;
        let mut skipped = None;
        for c in &d.directives {
            let range = || {
                let targets = targets.get_or_insert_with(|| Targets::new(&roots));
                Some(range_of(c.span, text, targets, &mut skipped))
            };
            if let Some(s) = directive(c, id as FileId, range, &mut own) {
                list.push(s);
            }
        }
        let policy = policy_directives(d, text);
        for span in policy.trailing {
            own.push(finding(
                &unused_suppression::RULE,
                span,
                "this `gitops-lint:` comment ends a policy line, where Argo CD reads it as part of the line's fields, not as a comment: it suppresses nothing, and it changes the policy (`allow # ...` is not `allow`)".into(),
                "put the directive on a line of its own above the policy line",
            ));
        }
        for (c, about) in policy.own_line {
            if let Some(s) = directive(&c, id as FileId, || about, &mut own) {
                list.push(s);
            }
        }
    }
    // Annotations: one suppression per annotation node, shared by every rendered copy.
    let mut by_annotation: HashMap<Span, usize> = HashMap::default();
    let mut unit_suppressions: HashMap<usize, usize> = HashMap::default();
    // Every rendered object is asked and few answer: the asking is spread over the threads.
    let annotated: Vec<(usize, &Unit, &Node)> = graph
        .units
        .par_iter()
        .enumerate()
        .with_max_len(256)
        .filter_map(|(u, unit)| Some((u, unit, unit.obj.annotation(ANNOTATION)?)))
        .collect();
    for (u, unit, node) in annotated {
        let index = *by_annotation.entry(node.span).or_insert_with(|| {
            let text = node.as_str().filter(|_| !node.is_null()).unwrap_or_default();
            let (words, unknown) = parse_list(text);
            for word in unknown {
                own.push(finding(
                    &unused_suppression::RULE,
                    node.span,
                    unknown_word(&word),
                    "`gitops-lint rules` lists rule ids and categories",
                ));
            }
            if words.is_empty() && text.trim().is_empty() {
                own.push(finding(
                    &unused_suppression::RULE,
                    node.span,
                    format!("`{ANNOTATION}` must be a comma-separated string of rule ids: this one suppresses nothing"),
                    "write the rules as one string, e.g. \"secret-in-git,default-project\"",
                ));
            }
            let reason = unit
                .obj
                .annotation(REASON_ANNOTATION)
                .and_then(Node::as_str)
                .is_some_and(|r| !r.trim().is_empty());
            list.push(Suppression {
                at: node.span,
                words,
                reason,
                scope: None,
                used: Default::default(),
            });
            list.len() - 1
        });
        unit_suppressions.insert(u, index);
    }

    let hits = comment_hits(&findings, &mut list);
    let mut kept = Vec::with_capacity(findings.len());
    let mut suppressed = 0;
    for (f, by_comment) in findings.into_iter().zip(hits) {
        let mut hit = by_comment;
        if let Some(&i) = f.unit.and_then(|u| unit_suppressions.get(&u)) {
            if list[i].covers(f.rule.id) {
                list[i].used.insert(f.rule.id);
                hit = true;
            }
        }
        if hit {
            suppressed += 1;
        } else {
            kept.push(f);
        }
    }
    // Whether any rule a word names runs, once per list of rules: `all` names every rule,
    // and may be written in every comment.
    let mut runs: HashMap<usize, bool> = HashMap::default();
    let mut any_enabled = |ids: &std::sync::Arc<[&'static str]>| {
        *runs
            .entry(std::sync::Arc::as_ptr(ids) as *const () as usize)
            .or_insert_with(|| ids.iter().any(|id| enabled(id)))
    };
    for s in &list {
        if !s.reason {
            own.push(finding(
                &suppression_without_reason::RULE,
                s.at,
                "this suppression does not say why: reviewers cannot tell a deliberate exception from a shortcut".into(),
                "add the reason after the rule list (`ignore[rule] reason`), or an `gitops-lint.io/ignore-reason` annotation",
            ));
        }
        // Each word that hid nothing is stale, unless the configuration turned its rules off.
        let stale: Vec<&str> = s
            .words
            .iter()
            .filter(|w| !s.used.iter().any(|id| w.ids.binary_search(id).is_ok()))
            .filter(|w| any_enabled(&w.ids))
            .map(|w| w.text.as_str())
            .collect();
        if !stale.is_empty() {
            own.push(finding(
                &unused_suppression::RULE,
                s.at,
                format!(
                    "`{}` in this suppression {} nothing here: the finding is gone or never applied to this node",
                    stale.join("`, `"),
                    if stale.len() == 1 { "suppresses" } else { "suppress" }
                ),
                "remove it from the suppression (or remove the suppression)",
            ));
        }
    }
    Outcome {
        kept,
        own,
        suppressed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_read_strictly() {
        let p = parse_directive(" gitops-lint: ignore[default-project, secrets] break-glass app")
            .unwrap();
        assert!(!p.file_wide && p.reason);
        let ids: Vec<&str> = p.words.iter().flat_map(|w| w.ids.to_vec()).collect();
        assert!(ids.contains(&"default-project") && ids.contains(&"secret-in-git"));
        let p = parse_directive("gitops-lint: ignore-file[all]").unwrap();
        assert!(p.file_wide && !p.reason);
        let p = parse_directive("gitops-lint: ignore[defualt-project] typo").unwrap();
        assert_eq!(p.unknown, vec!["defualt-project"]);
        assert_eq!(
            unknown_word("defualt-project"),
            "`defualt-project` is not a rule or category (did you mean `default-project`?): it \
             suppresses nothing"
        );
        let p = parse_directive("gitops-lint: ignore-file[*] generated").unwrap();
        assert_eq!(p.words[0].ids.len(), rules::RULES.len());
        assert!(parse_directive("gitops-lint: please ignore").is_none());
        assert!(parse_directive("just a comment").is_none());
    }
}
