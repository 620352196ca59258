//! Suppressions written in the manifests: `# gitops-lint: ignore[rule] reason` comments and
//! the `gitops-lint.io/ignore` annotation. Each one must say why, and each one must still
//! suppress something; otherwise it is reported itself.

use crate::finding::{Finding, Severity};
use crate::render::{FileDocs, Graph, Unit};
use crate::rules;
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

/// A rule, category or `all` as written, with the rule ids it stands for.
#[derive(Debug)]
struct Word {
    text: String,
    ids: Vec<&'static str>,
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
        self.words.iter().any(|w| w.ids.contains(&rule))
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
fn expand(word: &str) -> Result<Vec<&'static str>, rules::Unknown> {
    // `*` is an early spelling of `all` that manifests may still carry.
    rules::select(if word == "*" { "all" } else { word })
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

/// The comments of a file that speak to gitops-lint, kept by the parse stage (misspelt ones
/// too, so they can be reported).
pub fn is_directive(comment: &Comment) -> bool {
    let t = comment.text.trim_start();
    t.strip_prefix("gitops-lint")
        .is_some_and(|rest| rest.starts_with(':') || rest.starts_with(' ') && rest.contains('['))
}

fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, offset: usize) -> usize {
    text[offset..].find('\n').map_or(text.len(), |i| offset + i)
}

/// The outermost node starting in `[from, to)`: an entry (key to end of value) or an item.
fn node_on_line(node: &Node, from: usize, to: usize) -> Option<(usize, usize)> {
    let starts = |s: Span| (from..to).contains(&(s.start as usize));
    match &node.value {
        Value::Map { entries, .. } => entries.iter().find_map(|e| {
            if starts(e.key.span) {
                Some((
                    e.key.span.start as usize,
                    e.value.span.end.max(e.key.span.end) as usize,
                ))
            } else {
                node_on_line(&e.value, from, to)
            }
        }),
        Value::Seq { items, .. } => items.iter().find_map(|i| {
            if starts(i.span) {
                Some((i.span.start as usize, i.span.end as usize))
            } else {
                node_on_line(i, from, to)
            }
        }),
        Value::Scalar(_) => None,
    }
}

/// The range a directive at `comment` covers: the node on its line when it trails content,
/// else the node on the next line that holds content.
fn range_of(comment: Span, text: &str, roots: &[&Node]) -> Span {
    let c = comment.start as usize;
    let start = line_start(text, c);
    let trailing = !text[start..c].trim().is_empty();
    let mut line = if trailing {
        start
    } else {
        line_end(text, c).saturating_add(1).min(text.len())
    };
    if !trailing {
        // Skip blank and comment lines to the line the directive is about.
        while line < text.len() {
            let end = line_end(text, line);
            let content = text[line..end].trim();
            if !content.is_empty() && !content.starts_with('#') {
                break;
            }
            line = end + 1;
        }
    }
    let line = line.min(text.len());
    let end = line_end(text, line);
    let found = roots.iter().find_map(|r| {
        if (line..end.max(line + 1)).contains(&(r.span.start as usize)) && !trailing {
            return Some((r.span.start as usize, r.span.end as usize));
        }
        node_on_line(r, line, end.max(line + 1))
    });
    let (s, e) = found.unwrap_or((line, end));
    Span::new(comment.file, s, e.max(end))
}

pub struct Outcome {
    pub kept: Vec<Finding>,
    /// Findings about the suppressions themselves.
    pub own: Vec<Finding>,
    pub suppressed: usize,
}

fn finding(rule: &'static str, span: Span, message: String, help: &str) -> Finding {
    let severity = rules::find(rule).map_or(Severity::Warning, |r| r.severity);
    let mut f = Finding::new(rule, severity, span, message);
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
        for c in &d.directives {
            let Some(p) = parse_directive(&c.text) else {
                own.push(finding(
                    "unused-suppression",
                    c.span,
                    "this `gitops-lint:` comment is not a directive: write `gitops-lint: ignore[rule-id] reason` or `ignore-file[rule-id] reason`".into(),
                    "fix the syntax or remove the comment",
                ));
                continue;
            };
            for word in &p.unknown {
                own.push(finding(
                    "unused-suppression",
                    c.span,
                    unknown_word(word),
                    "`gitops-lint rules` lists rule ids and categories",
                ));
            }
            if p.words.is_empty() && p.unknown.is_empty() {
                own.push(finding(
                    "unused-suppression",
                    c.span,
                    "this directive names no rule: it suppresses nothing".into(),
                    "name the rules in the brackets: `ignore[rule-id] reason`",
                ));
            }
            let scope = if p.file_wide {
                Scope::File(id as FileId)
            } else {
                Scope::Range(range_of(c.span, text, &roots))
            };
            list.push(Suppression {
                at: c.span,
                words: p.words,
                reason: p.reason,
                scope: Some(scope),
                used: Default::default(),
            });
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
                    "unused-suppression",
                    node.span,
                    unknown_word(&word),
                    "`gitops-lint rules` lists rule ids and categories",
                ));
            }
            if words.is_empty() && text.trim().is_empty() {
                own.push(finding(
                    "unused-suppression",
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

    let mut kept = Vec::with_capacity(findings.len());
    let mut suppressed = 0;
    for f in findings {
        let p = f.primary.span;
        // Every suppression that covers the finding is credited, the nested and the outer.
        let mut hit = false;
        for s in list.iter_mut().filter(|s| s.covers(f.rule)) {
            let by_comment = match s.scope {
                Some(Scope::File(file)) => file == p.file,
                Some(Scope::Range(r)) => {
                    r.file == p.file && r.start <= p.start && p.start < r.end.max(r.start + 1)
                }
                None => false,
            };
            if by_comment {
                s.used.insert(f.rule);
                hit = true;
            }
        }
        if let Some(&i) = f.unit.and_then(|u| unit_suppressions.get(&u)) {
            if list[i].covers(f.rule) {
                list[i].used.insert(f.rule);
                hit = true;
            }
        }
        if hit {
            suppressed += 1;
        } else {
            kept.push(f);
        }
    }
    for s in &list {
        if !s.reason {
            own.push(finding(
                "suppression-without-reason",
                s.at,
                "this suppression does not say why: reviewers cannot tell a deliberate exception from a shortcut".into(),
                "add the reason after the rule list (`ignore[rule] reason`), or an `gitops-lint.io/ignore-reason` annotation",
            ));
        }
        // Each word that hid nothing is stale, unless the configuration turned its rules off.
        let stale: Vec<&str> = s
            .words
            .iter()
            .filter(|w| !w.ids.iter().any(|id| s.used.contains(id)))
            .filter(|w| w.ids.iter().any(|id| enabled(id)))
            .map(|w| w.text.as_str())
            .collect();
        if !stale.is_empty() {
            own.push(finding(
                "unused-suppression",
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
        let ids: Vec<&str> = p.words.iter().flat_map(|w| w.ids.clone()).collect();
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
