//! JSON output: one document, versioned by `schema_version`.

use super::{Reporter, Settings};
use crate::finding::{ObjectRef, Severity};
use crate::outcome::Outcome;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Position {
    line: u32,
    column: u32,
    offset: u32,
}

#[derive(Serialize)]
struct Location {
    file: String,
    start: Position,
    end: Position,
}

#[derive(Serialize)]
struct JsonLabel {
    message: String,
    #[serde(flatten)]
    location: Location,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    rule: &'a str,
    severity: Severity,
    message: &'a str,
    help: Option<&'a str>,
    #[serde(flatten)]
    location: Location,
    object: Option<&'a ObjectRef>,
    pointer: Option<&'a str>,
    labels: Vec<JsonLabel>,
    /// The Application the finding belongs to (the first, when several render the object).
    application: Option<&'a str>,
    applications: &'a [String],
    /// Rendered objects that share this finding.
    occurrences: usize,
    /// Stable identity of the finding (rule, file, object, pointer), as baselines use it.
    fingerprint: String,
    /// The edits `--fix` would make (with `--unsafe-fixes` when unsafe).
    fix: Option<JsonFix<'a>>,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    applicability: crate::fix::Applicability,
    message: &'a str,
    edits: Vec<JsonEdit<'a>>,
}

#[derive(Serialize)]
struct JsonEdit<'a> {
    #[serde(flatten)]
    location: Location,
    /// The text that replaces the range (an empty range inserts it).
    content: &'a str,
}

#[derive(Serialize)]
struct Skipped {
    path: String,
    reason: &'static str,
    detail: String,
}

#[derive(Serialize)]
struct Summary {
    files_scanned: usize,
    files_skipped: Vec<Skipped>,
    objects_by_kind: BTreeMap<String, usize>,
    findings_by_severity: BTreeMap<&'static str, usize>,
    /// Things seen but deliberately not rendered (remote bases, Helm charts, plugins).
    not_rendered: Vec<NotRendered>,
    applications: usize,
    /// Findings hidden by suppression comments or annotations.
    suppressed: usize,
    /// Findings accepted by the baseline, and baseline entries that no longer occur.
    baselined: usize,
    baseline_stale: usize,
}

#[derive(Serialize)]
struct NotRendered {
    message: String,
    #[serde(flatten)]
    location: Location,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Report<'a> {
    schema_version: u32,
    tool: Tool,
    findings: Vec<JsonFinding<'a>>,
    summary: Summary,
    /// Findings per rule, with `--statistics` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    statistics: Option<Vec<super::RuleStatistics>>,
}

pub struct Json;

fn location(outcome: &Outcome, span: crate::yaml::Span) -> Location {
    let (s, e) = (outcome.sources.start(span), outcome.sources.end(span));
    Location {
        file: outcome.sources.get(span.file).path.display().to_string(),
        start: Position {
            line: s.line,
            column: s.column,
            offset: span.start,
        },
        end: Position {
            line: e.line,
            column: e.column,
            offset: span.end,
        },
    }
}

impl Reporter for Json {
    fn report(
        &self,
        outcome: &Outcome,
        settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let findings = outcome
            .findings
            .iter()
            .map(|f| JsonFinding {
                rule: f.rule.id,
                severity: f.severity,
                message: &f.message,
                help: f.help.as_deref(),
                location: location(outcome, f.primary.span),
                object: f.object.as_ref(),
                pointer: f.pointer.as_deref(),
                application: f.applications.first().map(String::as_str),
                applications: &f.applications,
                occurrences: f.occurrences,
                fingerprint: crate::baseline::Fingerprint::of(
                    f,
                    &outcome.sources,
                    &outcome.graph,
                    &outcome.secrets,
                )
                .digest(),
                fix: f.fix.as_ref().map(|fix| JsonFix {
                    applicability: fix.applicability,
                    message: &fix.message,
                    edits: fix
                        .edits
                        .iter()
                        .map(|e| JsonEdit {
                            location: location(outcome, e.span),
                            content: &e.content,
                        })
                        .collect(),
                }),
                labels: f
                    .secondary
                    .iter()
                    .map(|l| JsonLabel {
                        message: l.message.clone(),
                        location: location(outcome, l.span),
                    })
                    .collect(),
            })
            .collect();
        let s = &outcome.summary;
        let mut by_severity = BTreeMap::new();
        for sev in [Severity::Error, Severity::Warning, Severity::Info] {
            by_severity.insert(sev.as_str(), outcome.count(sev));
        }
        let report = Report {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "gitops-lint",
                version: env!("CARGO_PKG_VERSION"),
            },
            findings,
            summary: Summary {
                files_scanned: s.files_scanned,
                files_skipped: s
                    .skipped
                    .iter()
                    .map(|(p, r)| Skipped {
                        path: p.display().to_string(),
                        reason: r.code(),
                        detail: r.to_string(),
                    })
                    .collect(),
                objects_by_kind: s.objects_by_kind.clone(),
                findings_by_severity: by_severity,
                not_rendered: s
                    .not_rendered
                    .iter()
                    .map(|n| NotRendered {
                        message: n.message.clone(),
                        location: location(outcome, n.span),
                    })
                    .collect(),
                applications: outcome.graph.apps.len(),
                suppressed: s.suppressed,
                baselined: s.baselined,
                baseline_stale: outcome.stale.len(),
            },
            statistics: settings.statistics.then(|| super::statistics(outcome)),
        };
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)
    }
}
