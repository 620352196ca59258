//! Output formats. Each is a pure function of the outcome: adding one touches one file.

pub mod concise;
pub mod config;
pub mod github;
pub mod human;
pub mod json;
pub mod junit;
pub mod sarif;
pub mod tree;

use crate::escape::{visible, Guard, Stream};
use crate::finding::Severity;
use crate::outcome::Outcome;
use crate::redact::Secrets;
use crate::text::plural;
use std::io::{self, Write};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions workflow commands: annotations on the pull request diff.
    Github,
    /// One line per finding: `path:line:col: severity[rule] message`.
    Concise,
    /// JUnit XML, for CI systems that show test reports.
    Junit,
}

#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub color: bool,
    pub unicode: bool,
    pub width: usize,
    pub quiet: bool,
    pub verbose: bool,
    pub statistics: bool,
}

pub trait Reporter {
    fn report(&self, outcome: &Outcome, settings: &Settings, out: &mut dyn Write)
        -> io::Result<()>;
}

pub fn reporter(format: Format) -> Box<dyn Reporter> {
    match format {
        Format::Human => Box::new(human::Human),
        Format::Json => Box::new(json::Json),
        Format::Sarif => Box::new(sarif::Sarif),
        Format::Github => Box::new(github::Github),
        Format::Concise => Box::new(concise::Concise),
        Format::Junit => Box::new(junit::Junit),
    }
}

/// What each format's output passes through ([`Guard`]): none for the workflow commands of
/// `github`, which escapes each value itself and whose lines are commands.
pub fn stream(format: Format, color: bool) -> Option<Stream> {
    match format {
        Format::Human | Format::Concise => Some(Stream::Text { color }),
        Format::Json | Format::Sarif => Some(Stream::Json),
        Format::Junit => Some(Stream::Xml),
        Format::Github => None,
    }
}

/// Writes the report in `format`: the reporters escape the repository's text in each value, and
/// [`Guard`] then holds the whole output to the line rules, pieces put together included.
pub fn write(
    format: Format,
    outcome: &Outcome,
    settings: &Settings,
    out: &mut dyn Write,
) -> io::Result<()> {
    let reporter = reporter(format);
    match stream(format, settings.color) {
        Some(stream) => guarded(stream, out, |out| reporter.report(outcome, settings, out)),
        None => reporter.report(outcome, settings, out),
    }
}

/// Runs `render` with its output behind a [`Guard`] for `stream`.
pub fn guarded(
    stream: Stream,
    out: &mut dyn Write,
    render: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut guard = Guard::new(out, stream);
    render(&mut guard)?;
    guard.finish()
}

/// Every text of the outcome that a report, a baseline or a note may print, with the run's
/// secret values masked: done once, before any format renders, because rendering wraps and
/// escapes text (a value split over two lines, or JSON-escaped, would no longer be found), and
/// because masking a rendered report would also mask its structure (a JSON key, a rule id)
/// wherever a value happens to spell it. Source text is masked where it is read for display
/// ([`Outcome::redacted_text`]); file paths are shown as they are.
pub fn mask(outcome: &mut Outcome) {
    use rayon::prelude::*;
    let secrets = std::sync::Arc::clone(&outcome.secrets);
    let mask = |text: &mut String| secrets.mask_in_place(text);
    outcome.findings.par_iter_mut().for_each(|f| {
        mask(&mut f.message);
        f.help.iter_mut().for_each(mask);
        mask(&mut f.primary.message);
        f.secondary.iter_mut().for_each(|l| mask(&mut l.message));
        if let Some(o) = &mut f.object {
            o.name.iter_mut().chain(&mut o.namespace).for_each(mask);
        }
        f.pointer.iter_mut().for_each(mask);
        f.applications.iter_mut().for_each(mask);
        if let Some(fix) = &mut f.fix {
            mask(&mut fix.message);
            fix.edits.iter_mut().for_each(|e| mask(&mut e.content));
        }
    });
    for n in &mut outcome.summary.not_rendered {
        mask(&mut n.message);
    }
    for (_, reason) in &mut outcome.summary.skipped {
        if let crate::discover::SkipReason::Unreadable(why) = reason {
            mask(why);
        }
    }
}

/// Writes what `render` writes to `out`, with the run's secret values masked: for outputs that
/// are plain text for people (the tree, the configuration, a diff), whose every word may be
/// masked. The text is made whole first, so that a value written in pieces is still found.
pub fn write_masked(
    secrets: &Secrets,
    out: &mut dyn Write,
    render: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut buf = Vec::new();
    render(&mut buf)?;
    out.write_all(secrets.mask(&String::from_utf8_lossy(&buf)).as_bytes())
}

/// Where a finding starts and ends: (path, start, end), lines and columns 1-based.
pub fn place(
    outcome: &Outcome,
    span: crate::yaml::Span,
) -> (String, crate::source::LineCol, crate::source::LineCol) {
    (
        outcome.sources.get(span.file).path.display().to_string(),
        outcome.sources.start(span),
        outcome.sources.end(span),
    )
}

/// One line per thing deliberately not rendered (remote bases, Helm charts, plugins).
pub fn write_not_rendered(outcome: &Outcome, out: &mut dyn Write) -> io::Result<()> {
    for n in &outcome.summary.not_rendered {
        let at = outcome.sources.start(n.span);
        writeln!(
            out,
            "note: {}:{}:{}: {}",
            visible(&outcome.sources.get(n.span.file).path.display().to_string()),
            at.line,
            at.column,
            visible(&n.message)
        )?;
    }
    Ok(())
}

/// How many reported findings `--fix` would cure, and how many more `--unsafe-fixes` would.
pub fn fixable(outcome: &Outcome) -> (usize, usize) {
    let mut counts = (0, 0);
    for fix in outcome.findings.iter().filter_map(|f| f.fix.as_ref()) {
        match fix.applicability {
            crate::fix::Applicability::Safe => counts.0 += 1,
            crate::fix::Applicability::Unsafe => counts.1 += 1,
        }
    }
    counts
}

/// One rule's share of the reported findings, for `--statistics`: every format shows these
/// rows, so they are counted here once.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RuleStatistics {
    pub rule: &'static str,
    pub count: usize,
    /// The severities the rule's findings were reported at (after the config's overrides),
    /// most severe first, each with its count; severities no finding has are left out.
    #[serde(serialize_with = "severity_counts")]
    pub severities: Vec<(Severity, usize)>,
    /// Findings that `--fix` cures, and those that need `--unsafe-fixes` as well.
    pub fixable: usize,
    pub fixable_unsafe: usize,
}

/// `[(error, 2), (info, 1)]` as `{"error": 2, "info": 1}`, in that order.
fn severity_counts<S: serde::Serializer>(
    counts: &[(Severity, usize)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(counts.len()))?;
    for (severity, n) in counts {
        map.serialize_entry(severity.as_str(), n)?;
    }
    map.end()
}

/// The reported findings counted by rule: most findings first, then by rule id.
pub fn statistics(outcome: &Outcome) -> Vec<RuleStatistics> {
    let mut by_rule: std::collections::BTreeMap<&'static str, RuleStatistics> =
        std::collections::BTreeMap::new();
    for f in &outcome.findings {
        let row = by_rule.entry(f.rule.id).or_insert_with(|| RuleStatistics {
            rule: f.rule.id,
            count: 0,
            severities: Vec::new(),
            fixable: 0,
            fixable_unsafe: 0,
        });
        row.count += 1;
        match row.severities.iter_mut().find(|(s, _)| *s == f.severity) {
            Some((_, n)) => *n += 1,
            None => row.severities.push((f.severity, 1)),
        }
        match f.fix.as_ref().map(|fix| fix.applicability) {
            Some(crate::fix::Applicability::Safe) => row.fixable += 1,
            Some(crate::fix::Applicability::Unsafe) => row.fixable_unsafe += 1,
            None => {}
        }
    }
    let mut rows: Vec<RuleStatistics> = by_rule.into_values().collect();
    for row in &mut rows {
        row.severities
            .sort_by_key(|&(severity, _)| std::cmp::Reverse(severity));
    }
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.rule.cmp(b.rule)));
    rows
}

/// `2 errors`, `1 warning`, `3 info`.
pub fn severity_count(severity: Severity, n: usize) -> String {
    match severity {
        Severity::Error => plural(n, "error", "errors"),
        Severity::Warning => plural(n, "warning", "warnings"),
        Severity::Info => format!("{n} info"),
    }
}

/// What the statistics table is titled in the text formats.
pub const STATISTICS_HEADING: &str = "Findings by rule";

/// The statistics as a table for people: a header, then a row per rule with its count, the
/// severities it was reported at (with a count each when there are several) and, when any
/// finding has a fix, how many `--fix` cures. Nothing when there are no findings.
pub fn write_statistics(rows: &[RuleStatistics], out: &mut dyn Write) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let severity = match r.severities.as_slice() {
                [(one, _)] => one.to_string(),
                many => many
                    .iter()
                    .map(|&(s, n)| severity_count(s, n))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let fixable = match (r.fixable, r.fixable_unsafe) {
                (0, 0) => String::new(),
                (n, 0) => format!("{n} with --fix"),
                (0, u) => format!("{u} with --fix --unsafe-fixes"),
                (n, u) => format!("{n} with --fix, {u} more with --unsafe-fixes"),
            };
            [r.count.to_string(), r.rule.to_string(), severity, fixable]
        })
        .collect();
    let mut header = ["findings", "rule", "severity", "fixable"];
    if cells.iter().all(|c| c[3].is_empty()) {
        header[3] = "";
    }
    let width = |i: usize| {
        cells
            .iter()
            .map(|c| c[i].len())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (count, rule, severity) = (width(0), width(1), width(2));
    let line = |c: [&str; 4]| {
        let text = format!(
            "{:>count$}  {:<rule$}  {:<severity$}  {}",
            c[0], c[1], c[2], c[3]
        );
        text.trim_end().to_string()
    };
    writeln!(out, "{}", line(header))?;
    for c in &cells {
        writeln!(out, "{}", line([&c[0], &c[1], &c[2], &c[3]]))?;
    }
    Ok(())
}
