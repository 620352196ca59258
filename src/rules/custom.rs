//! A policy of the repository's own, compiled, and its check: it goes over the objects it
//! matches in order and reports where its CEL condition holds. The loader (`crate::policy`)
//! builds it from the policy file.

use crate::cel::{Bindings, Budget, EvalError, Program, Value, DEFAULT_BUDGET};
use crate::finding::Severity;
use crate::render::Graph;
use crate::rules::{Cx, Sink};
use crate::yaml::{Node, Span};
use std::path::PathBuf;

/// Cost units one policy may spend over a whole run; each evaluation has
/// [`DEFAULT_BUDGET`] of it at most. Past it the objects left are not evaluated.
pub const RUN_BUDGET: u64 = 20_000_000;

/// Cost units all the policies of a run may spend together: many policies share it, so
/// that their number does not multiply the time a run may take.
pub const ALL_POLICIES_BUDGET: u64 = 200_000_000;

/// What each of the repository's `n` policies may spend in a run: [`RUN_BUDGET`], or an
/// equal share of [`ALL_POLICIES_BUDGET`] when there are many. Known before any runs, so what
/// each covers does not depend on the order or the threads they run on. A trusted config's
/// policies are not counted: each has [`RUN_BUDGET`] of its own (see [`Policy::run_budget`]).
pub fn budget_per_policy(n: usize) -> u64 {
    RUN_BUDGET.min(ALL_POLICIES_BUDGET / n.max(1) as u64)
}

/// Longest message kept (an interpolated value may be any size).
const MAX_MESSAGE: usize = 1024;

/// Which objects a policy looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Objects {
    /// Objects no Application of the repository deploys: Argo CD's own objects as written,
    /// and any manifest read as a file.
    Written,
    /// Objects an Application deploys, as it renders them.
    Rendered,
    #[default]
    Both,
}

/// A compiled policy.
#[derive(Debug)]
pub struct Policy {
    pub id: &'static str,
    /// The file it is written in, and its document's text: the same policy read twice is
    /// one rule.
    pub file: PathBuf,
    pub(crate) text: String,
    /// The policy's `doc`: a link or text.
    pub(crate) link: Option<String>,
    pub(crate) api_versions: Vec<String>,
    pub(crate) kinds: Vec<String>,
    pub(crate) names: Vec<String>,
    pub(crate) namespaces: Vec<String>,
    pub(crate) labels: Option<Node>,
    pub(crate) annotations: Option<Node>,
    pub(crate) objects: Objects,
    pub(crate) paths: Vec<globset::GlobMatcher>,
    pub(crate) condition: Program,
    /// The path of the object the condition reads, when it reads one only.
    pub(crate) condition_path: Option<Vec<String>>,
    /// Whether the condition reads what depends on the Application that deploys the object
    /// (`application`, `objectNamespace`).
    pub(crate) reads_application: bool,
    pub(crate) at: Option<At>,
    pub(crate) message: Vec<Piece>,
    pub(crate) help: Option<String>,
    /// Read from a trusted config (`--trusted-config`, `--trusted-config-rev`): its budget is
    /// its own, and where it cannot be evaluated the run fails.
    pub trusted: bool,
}

#[derive(Debug)]
pub(crate) enum At {
    /// Member names (or list indices) under the object.
    Path(Vec<String>),
    Expr(Program),
}

#[derive(Debug)]
pub(crate) enum Piece {
    Text(String),
    Expr(Program),
}

/// The variables of one evaluation: the object, the Application that deploys it (null for
/// an object no Application deploys) and the namespace it lands in (`objectNamespace`, null
/// when none; `namespace` is a reserved word of CEL).
fn bind<'a>(obj: &'a Node, app: Option<&'a Node>, namespace: Option<&str>) -> Bindings<'a> {
    let mut b = Bindings::new();
    b.node("object", obj);
    b.set("application", app.map_or(Value::Null, Value::Node));
    b.set(
        "objectNamespace",
        namespace.map_or(Value::Null, |n| Value::String(n.to_string())),
    );
    b
}

fn globs_match(patterns: &[String], value: Option<&str>) -> bool {
    patterns.is_empty()
        || value.is_some_and(|v| patterns.iter().any(|p| crate::glob::gobwas(p, v, None)))
}

/// The namespace an object lands in: its own, or for a namespaced object that Application
/// `app` deploys without one, the Application's destination namespace (where Argo CD
/// creates it).
fn namespace_in(g: &Graph, unit: usize, app: Option<usize>) -> Option<String> {
    let obj = &g.units[unit].obj;
    if let Some(ns) = &obj.namespace {
        return Some(ns.clone());
    }
    if crate::kinds::is_cluster_scoped(&obj.kind) {
        return None;
    }
    g.app_obj(app?)
        .root
        .path(&["spec", "destination", "namespace"])
        .and_then(Node::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// What an evaluation costs the run at least: binding the variables and matching the object
/// take time the expression's own cost does not count, and thousands of policies whose
/// condition is `false` must not evaluate without end.
const EVAL_FLOOR: u64 = 10;

/// What the run may still spend on this policy.
struct Pool(u64);

impl Pool {
    fn eval<'a>(&mut self, prog: &Program, b: &Bindings<'a>) -> Result<Value<'a>, EvalError> {
        let limit = self.0.min(DEFAULT_BUDGET);
        let mut budget = Budget::new(limit);
        let r = prog.eval(b, &mut budget);
        self.0 -= (limit - budget.remaining).max(EVAL_FLOOR.min(limit));
        r
    }
}

impl Policy {
    /// What this policy may spend in the run, when the repository's policies each have
    /// `shared` ([`budget_per_policy`]). A trusted policy has [`RUN_BUDGET`] whatever the
    /// repository holds: a pull request that adds policies must not shrink it.
    pub fn run_budget(&self, shared: u64) -> u64 {
        if self.trusted {
            RUN_BUDGET
        } else {
            shared
        }
    }

    /// Reports an object the policy could not be evaluated on. For the repository's own
    /// policy that is an `info` finding; for a trusted one an `error`: what a pull request
    /// can make too costly or too odd to evaluate must not pass the check that way.
    fn not_evaluated<'s>(
        &self,
        out: &'s mut Sink,
        at: Span,
        why: &str,
        help: &str,
    ) -> &'s mut crate::finding::Finding {
        let f = if self.trusted {
            out.report(
                at,
                format!(
                    "trusted policy `{}` could not be evaluated on this object: {why}",
                    self.id
                ),
            )
            .help(format!(
                "{help}; a policy of the trusted config that cannot be evaluated fails the run"
            ))
        } else {
            out.report(
                at,
                format!("policy `{}` not evaluated on this object: {why}", self.id),
            )
            .help(help.to_string())
        };
        f.severity = if self.trusted {
            Severity::Error
        } else {
            Severity::Info
        };
        f
    }

    /// The doc SARIF carries (`markdown`: every text of the repository's escaped for Markdown,
    /// its condition in a fence longer than any run of backticks it holds) or `explain` prints
    /// (each text shown with [`crate::escape::visible`]).
    pub(crate) fn doc(&self, summary: &str, markdown: bool) -> String {
        use crate::escape;
        let text = |s: &str| {
            if markdown {
                escape::markdown(s).into_owned()
            } else {
                escape::visible(s).into_owned()
            }
        };
        // Help and the link may span lines: each line on its own.
        let lines = |s: &str| s.split('\n').map(text).collect::<Vec<_>>().join("\n");
        let file = text(&self.file.display().to_string());
        let mut d = format!(
            "# {}\n\n{}\n\nA policy of this repository, defined in {}.\n\n## Matches\n\n",
            self.id,
            lines(summary),
            if markdown { file } else { format!("`{file}`") }
        );
        let objects = match self.objects {
            Objects::Written => {
                "objects as written (no Application of the repository deploys them)"
            }
            Objects::Rendered => "objects as their Applications render them",
            Objects::Both => "objects as written and as their Applications render them",
        };
        d.push_str(&format!("- {objects}\n"));
        for (what, list) in [
            ("apiVersion", &self.api_versions),
            ("kind", &self.kinds),
            ("name", &self.names),
            ("namespace", &self.namespaces),
        ] {
            if !list.is_empty() {
                let list: Vec<String> = list.iter().map(|s| text(s)).collect();
                d.push_str(&format!("- {what}: {}\n", list.join(", ")));
            }
        }
        let condition = self.condition.source().trim();
        let condition = if markdown {
            let longest = condition
                .split(|c| c != '`')
                .map(str::len)
                .max()
                .unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            format!("{fence}cel\n{}\n{fence}", escape::visible_lines(condition))
        } else {
            escape::visible_lines(condition).into_owned()
        };
        d.push_str(&format!("\n## Reports when\n\n{condition}\n"));
        if let Some(h) = &self.help {
            d.push_str(&format!("\n## Fix\n\n{}\n", lines(h)));
        }
        if let Some(l) = &self.link {
            d.push_str(&format!("\n## More\n\n{}\n", lines(l)));
        }
        d
    }

    fn matches(
        &self,
        cx: &Cx,
        g: &Graph,
        unit: usize,
        repos: &mut crate::rules::project::Repos,
    ) -> bool {
        let u = &g.units[unit];
        let obj = &u.obj;
        let deployed = !u.apps.is_empty();
        let objects_ok = match self.objects {
            Objects::Written => !deployed,
            Objects::Rendered => deployed,
            Objects::Both => true,
        };
        if !objects_ok
            || !globs_match(&self.api_versions, Some(&obj.api_version))
            || !globs_match(&self.kinds, Some(&obj.kind))
            || !globs_match(&self.names, obj.name.as_deref())
        {
            return false;
        }
        let meta = obj.root.get("metadata");
        for (sel, field) in [(&self.labels, "labels"), (&self.annotations, "annotations")] {
            if let Some(sel) = sel {
                let values = meta.and_then(|m| m.get(field));
                if crate::rules::admission::selector_matches(Some(sel), values) != Some(true) {
                    return false;
                }
            }
        }
        if !self.paths.is_empty() {
            let path = &cx.sources.get(obj.file).path;
            let root = repos.of(obj.file);
            let rel = path.strip_prefix(&root).unwrap_or(path);
            if !self.paths.iter().any(|m| m.is_match(rel)) {
                return false;
            }
        }
        true
    }

    /// The node a finding points at.
    fn anchor(&self, obj: &Node, b: &Bindings<'_>, pool: &mut Pool) -> Span {
        let fallback = obj.get("kind").map_or(obj.span, |k| k.span);
        match &self.at {
            Some(At::Path(path)) => crate::cel::anchor(obj, path, fallback),
            Some(At::Expr(p)) => match p.only_path("object") {
                Some(path) => crate::cel::anchor(obj, &path, fallback),
                None => pool
                    .eval(p, b)
                    .ok()
                    .and_then(|v| v.span())
                    .unwrap_or(fallback),
            },
            None => match &self.condition_path {
                Some(path) => crate::cel::anchor(obj, path, fallback),
                None => fallback,
            },
        }
    }

    fn message(&self, b: &Bindings<'_>, pool: &mut Pool) -> String {
        let mut s = String::new();
        for piece in &self.message {
            match piece {
                Piece::Text(t) => s.push_str(t),
                Piece::Expr(p) => match pool.eval(p, b) {
                    // A value is written only as far as the message may go.
                    Ok(v) => s.push_str(&v.to_text_within(MAX_MESSAGE + 1)),
                    Err(_) => {
                        s.push_str("{{");
                        s.push_str(p.source());
                        s.push_str("}}");
                    }
                },
            }
            if s.len() > MAX_MESSAGE {
                break;
            }
        }
        // A value read from the repository may hold line breaks or terminal escapes: they are
        // shown escaped, not passed to the terminal or the log.
        let mut out = String::with_capacity(s.len().min(MAX_MESSAGE + 8));
        for c in s.chars() {
            if out.len() >= MAX_MESSAGE {
                out.push('…');
                break;
            }
            // Bidirectional overrides would make a message read other than it is.
            if c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}') {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        out
    }

    /// Evaluates the policy on every unit of `lint` it matches, in order.
    /// `budget`: the cost units this policy may spend in the run ([`budget_per_policy`]).
    pub fn check(&self, cx: &Cx, g: &Graph, lint: &[usize], budget: u64, out: &mut Sink) {
        let mut repos = crate::rules::project::Repos::new(cx.sources, cx.graph);
        let mut pool = Pool(budget);
        let targets: Vec<usize> = lint
            .iter()
            .copied()
            .filter(|&u| self.matches(cx, g, u, &mut repos))
            .collect();
        for (i, &unit) in targets.iter().enumerate() {
            let obj = &g.units[unit].obj;
            let kind_span = obj.root.get("kind").map_or(obj.root.span, |k| k.span);
            if pool.0 == 0 {
                let left = targets.len() - i;
                self.not_evaluated(
                    out,
                    kind_span,
                    &format!(
                        "it spent its evaluation budget for the run ({budget} cost units), and {} more objects it matches are not evaluated either",
                        left - 1
                    ),
                    "make the condition cheaper, or narrow `match` to the objects it is for",
                )
                .about(unit, obj);
                return;
            }
            // Each Application that deploys the object, when which one matters: the
            // condition reads it or the namespace it gives, or `match` names namespaces.
            let per_app = self.reads_application || !self.namespaces.is_empty();
            let apps: Vec<Option<usize>> = match g.units[unit].apps.as_slice() {
                [] => vec![None],
                [first, ..] if !per_app => vec![Some(*first)],
                all => all.iter().copied().map(Some).collect(),
            };
            // The first Application the condition holds for gives the place and the message;
            // the finding names every one it holds for.
            let mut fired: Option<usize> = None;
            let mut fired_for: Vec<String> = Vec::new();
            for app in apps {
                let namespace = namespace_in(g, unit, app);
                if !globs_match(&self.namespaces, namespace.as_deref()) {
                    continue;
                }
                let b = bind(
                    &obj.root,
                    app.map(|a| &g.app_obj(a).root),
                    namespace.as_deref(),
                );
                let result = pool.eval(&self.condition, &b);
                match result.as_ref().map(Value::as_bool) {
                    Ok(Some(true)) => {
                        if let Some(name) = app.and_then(|a| g.app_obj(a).name.clone()) {
                            fired_for.push(name);
                        }
                        if fired.is_none() {
                            let span = self.anchor(&obj.root, &b, &mut pool);
                            let message = self.message(&b, &mut pool);
                            let f = out.report(span, message).about(unit, obj);
                            if let Some(h) = &self.help {
                                f.help(h.clone());
                            }
                            fired = Some(out.findings.len() - 1);
                        }
                        if !per_app {
                            break;
                        }
                    }
                    Ok(Some(false)) => {}
                    Ok(None) => {
                        let v = result.as_ref().map(Value::type_name).unwrap_or_default();
                        self.not_evaluated(
                            out,
                            kind_span,
                            &format!("the condition gave a {v}, not a bool"),
                            "a condition is a CEL expression that is true where the policy reports",
                        )
                        .about(unit, obj);
                        break;
                    }
                    Err(e) => {
                        let help = match e {
                            EvalError::Budget => "the condition ran out of its cost budget: make it cheaper",
                            EvalError::Unsupported(_) => "this CEL feature is not evaluated offline",
                            EvalError::Error(_) => "guard reads of fields an object may lack with has(), e.g. `has(object.spec.x) && object.spec.x.y`",
                        };
                        self.not_evaluated(out, kind_span, &e.to_string(), help)
                            .about(unit, obj);
                        break;
                    }
                }
            }
            if let Some(i) = fired {
                out.findings[i].applications = if per_app {
                    fired_for.sort();
                    fired_for.dedup();
                    fired_for
                } else {
                    g.app_names(unit)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_policies_share_the_run_budget() {
        assert_eq!(budget_per_policy(0), RUN_BUDGET);
        assert_eq!(budget_per_policy(10), RUN_BUDGET);
        assert_eq!(budget_per_policy(40), ALL_POLICIES_BUDGET / 40);
        assert!(budget_per_policy(4000) * 4000 <= ALL_POLICIES_BUDGET);
    }
}
