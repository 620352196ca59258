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
                let about = lines[i + 1..]
                    .iter()
                    .find(|n| !text[(*n).clone()].starts_with('#'))
                    .map(|n| Span::new(file, n.start, n.end));
                out.own_line.push((c, about));
            }
        }
    }
    out
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
        for c in &d.directives {
            let range = || Some(range_of(c.span, text, &roots));
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

    let mut kept = Vec::with_capacity(findings.len());
    let mut suppressed = 0;
    for f in findings {
        let p = f.primary.span;
        // Every suppression that covers the finding is credited, the nested and the outer.
        let mut hit = false;
        for s in list.iter_mut().filter(|s| s.covers(f.rule.id)) {
            let by_comment = match s.scope {
                Some(Scope::File(file)) => file == p.file,
                Some(Scope::Range(r)) => {
                    r.file == p.file && r.start <= p.start && p.start < r.end.max(r.start + 1)
                }
                None => false,
            };
            if by_comment {
                s.used.insert(f.rule.id);
                hit = true;
            }
        }
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
