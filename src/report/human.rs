//! Human output: a miette diagnostic per finding, then a one-line summary.

use super::{plural, redacted_text, Reporter, Settings};
use crate::engine::Outcome;
use crate::finding::{Finding, Severity};
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, NamedSource, SourceCode, SourceSpan, SpanContents,
};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

pub struct Human;

struct Diag<'a> {
    finding: &'a Finding,
    source: NamedSource<Windowed>,
    help: Option<String>,
}

/// A file's text as miette reads it, but with the lines around a span found by looking back
/// from the span: miette's own reader counts lines from the start of the file for every
/// label, which on a large file with many findings costs more than the rest of the run.
/// The result is the same: miette's reader runs on the text from a few lines above the span,
/// and the line numbers are shifted by the lines cut off.
struct Windowed(Arc<String>);

impl SourceCode for Windowed {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let bytes = self.0.as_bytes();
        let start = line_start_above(
            bytes,
            span.offset().min(bytes.len()),
            context_lines_before.saturating_add(2),
        );
        let (cut, rest) = bytes.split_at(start);
        let local = SourceSpan::new((span.offset() - start).into(), span.len());
        let inner = rest.read_span(&local, context_lines_before, context_lines_after)?;
        let lines = count_lines(cut);
        Ok(Box::new(MietteSpanContents::new(
            inner.data(),
            SourceSpan::new((inner.span().offset() + start).into(), inner.span().len()),
            inner.line() + lines,
            inner.column(),
            inner.line_count() + lines,
        )))
    }
}

/// Whether the byte at `i` ends a line the way miette counts them: `\n`, `\r\n`, or a lone `\r`.
fn ends_line(b: &[u8], i: usize) -> bool {
    b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n'))
}

/// The start of the line `lines` lines above the one holding `from` (0 if there are fewer).
fn line_start_above(b: &[u8], from: usize, lines: usize) -> usize {
    let mut seen = 0;
    for i in (0..from).rev() {
        if ends_line(b, i) {
            if seen == lines {
                return i + 1;
            }
            seen += 1;
        }
    }
    0
}

/// Line ends in `b`, counted as miette counts them.
fn count_lines(b: &[u8]) -> usize {
    let lf = memchr::memchr_iter(b'\n', b).count();
    let lone_cr = memchr::memchr_iter(b'\r', b)
        .filter(|&i| b.get(i + 1) != Some(&b'\n'))
        .count();
    lf + lone_cr
}

impl fmt::Debug for Diag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.message)
    }
}

impl fmt::Display for Diag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.message)
    }
}

impl std::error::Error for Diag<'_> {}

impl Diagnostic for Diag<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(format!(
            "{}[{}]",
            self.finding.severity, self.finding.rule
        )))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let f = self.finding;
        let span =
            |s: crate::yaml::Span| SourceSpan::from((s.start as usize, (s.end - s.start) as usize));
        let primary = LabeledSpan::new_primary_with_span(
            Some(f.primary.message.clone()).filter(|m| !m.is_empty()),
            span(f.primary.span),
        );
        let others = f
            .secondary
            .iter()
            .filter(|l| l.span.file == f.primary.span.file)
            .map(move |l| LabeledSpan::new_with_span(Some(l.message.clone()), span(l.span)));
        Some(Box::new(std::iter::once(primary).chain(others)))
    }
}

impl Reporter for Human {
    fn report(
        &self,
        outcome: &Outcome,
        settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let theme = match (settings.unicode, settings.color) {
            (true, true) => GraphicalTheme::unicode(),
            (true, false) => GraphicalTheme::unicode_nocolor(),
            (false, _) => GraphicalTheme::none(),
        };
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(settings.width)
            .with_context_lines(2);
        // Findings are rendered in parallel and written in order: on a large repository the
        // snippets are a good part of the run.
        let files: std::collections::BTreeSet<u32> = outcome
            .findings
            .iter()
            .map(|f| f.primary.span.file)
            .collect();
        let texts: HashMap<u32, Arc<String>> = files
            .into_par_iter()
            .map(|file| (file, Arc::new(redacted_text(outcome, file))))
            .collect();
        let rendered: Vec<String> = outcome
            .findings
            .par_iter()
            .map(|f| render_one(outcome, &handler, &texts, f))
            .collect();
        for r in rendered {
            writeln!(out, "{}", r.trim_end())?;
            writeln!(out)?;
        }
        if settings.verbose {
            super::write_not_rendered(outcome, out)?;
        }
        if settings.statistics {
            let mut by_rule: BTreeMap<&str, (Severity, usize)> = BTreeMap::new();
            for f in &outcome.findings {
                let e = by_rule.entry(f.rule).or_insert((f.severity, 0));
                e.0 = e.0.max(f.severity);
                e.1 += 1;
            }
            let mut rows: Vec<_> = by_rule.into_iter().collect();
            rows.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
            for (rule, (sev, n)) in rows {
                writeln!(out, "{n:>6}  {rule:<40} {sev}")?;
            }
            writeln!(out)?;
        }
        let s = &outcome.summary;
        if settings.verbose {
            for (path, reason) in &s.skipped {
                writeln!(out, "note: skipped {}: {reason}", path.display())?;
            }
        } else {
            for (path, reason) in s
                .skipped
                .iter()
                .filter(|(_, r)| !matches!(r, crate::discover::SkipReason::HelmTemplate))
            {
                writeln!(out, "warning: skipped {}: {reason}", path.display())?;
            }
        }
        if settings.quiet {
            return Ok(());
        }
        let skipped = if s.skipped.is_empty() {
            String::new()
        } else {
            format!(", {} skipped", plural(s.skipped.len(), "file", "files"))
        };
        let mut unrendered = match s.not_rendered.len() {
            0 => String::new(),
            n => format!(", {n} not rendered"),
        };
        if s.suppressed > 0 {
            unrendered.push_str(&format!(", {} suppressed", s.suppressed));
        }
        if s.baselined > 0 {
            unrendered.push_str(&format!(", {} in the baseline", s.baselined));
        }
        writeln!(
            out,
            "Checked {}, {} in {} ms{skipped}{unrendered}: {}, {}, {}.",
            plural(s.files_scanned, "file", "files"),
            plural(s.objects(), "object", "objects"),
            s.elapsed.as_millis(),
            plural(outcome.count(Severity::Error), "error", "errors"),
            plural(outcome.count(Severity::Warning), "warning", "warnings"),
            outcome.count(Severity::Info).to_string() + " info",
        )?;
        let (safe, unsafe_) = super::fixable(outcome);
        match (safe, unsafe_) {
            (0, 0) => {}
            (0, u) => writeln!(out, "{u} fixable with --fix --unsafe-fixes.")?,
            (n, 0) => writeln!(out, "{n} fixable with --fix.")?,
            (n, u) => writeln!(
                out,
                "{n} fixable with --fix ({u} more with --unsafe-fixes)."
            )?,
        }
        if !outcome.stale.is_empty() {
            writeln!(
                out,
                "{} no longer occur: --prune-baseline removes them.",
                plural(outcome.stale.len(), "baseline entry", "baseline entries")
            )?;
        }
        Ok(())
    }
}

/// One finding as the terminal shows it: the diagnostic with its source snippet.
fn render_one(
    outcome: &Outcome,
    handler: &GraphicalReportHandler,
    texts: &HashMap<u32, Arc<String>>,
    f: &Finding,
) -> String {
    let file = f.primary.span.file;
    let text = texts[&file].clone();
    let path = outcome.sources.get(file).path.display().to_string();
    let mut help = f.help.clone();
    for l in f.secondary.iter().filter(|l| l.span.file != file) {
        let at = outcome.sources.start(l.span);
        let note = format!(
            "{}:{}:{}: {}",
            outcome.sources.get(l.span.file).path.display(),
            at.line,
            at.column,
            l.message
        );
        add_line(&mut help, format!("see {note}"));
    }
    if f.occurrences > 1 || !f.applications.is_empty() {
        let mut context = Vec::new();
        if !f.applications.is_empty() {
            context.push(format!("in {}", f.applications.join(", ")));
        }
        if f.occurrences > 1 {
            context.push(format!(
                "{} rendered objects share this line",
                f.occurrences
            ));
        }
        let note = format!("({})", context.join("; "));
        add_line(&mut help, note);
    }
    if let Some(fix) = &f.fix {
        let how = match fix.applicability {
            crate::fix::Applicability::Safe => "--fix",
            crate::fix::Applicability::Unsafe => "--fix --unsafe-fixes",
        };
        let note = format!("fix: {} (with {how})", fix.message);
        add_line(&mut help, note);
    }
    let diag = Diag {
        finding: f,
        source: NamedSource::new(path, Windowed(text)),
        help,
    };
    let mut rendered = String::new();
    if handler.render_report(&mut rendered, &diag).is_err() {
        let at = outcome.sources.start(f.primary.span);
        rendered = format!(
            "{}:{}:{}: {}\n",
            diag.source.name(),
            at.line,
            at.column,
            f.message
        );
    }
    rendered
}

/// Adds a line under the help text.
fn add_line(help: &mut Option<String>, line: String) {
    *help = Some(match help.take() {
        Some(h) => format!("{h}\n{line}"),
        None => line,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_reads_what_miette_reads() {
        let texts = [
            "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\n",
            "a\r\nbb\r\n\r\nccc\rdd\n\n\r\re\n",
            "\n\n\nx",
            "no newline at all",
            "",
        ];
        for text in texts {
            let ours = Windowed(Arc::new(text.to_string()));
            let theirs = text.as_bytes();
            // Spans never reach past the end of their file (miette's reader panics on those).
            for offset in 0..=text.len() {
                for len in 0..=(text.len() - offset).min(3) {
                    for (before, after) in [(0, 0), (1, 1), (2, 2), (3, 0), (0, 3)] {
                        let span = SourceSpan::new(offset.into(), len);
                        let a = ours.read_span(&span, before, after);
                        let b = theirs.read_span(&span, before, after);
                        let what = format!("{text:?} at {offset}+{len}, {before}/{after}");
                        match (a, b) {
                            (Ok(a), Ok(b)) => {
                                assert_eq!(a.data(), b.data(), "{what}");
                                assert_eq!(a.span(), b.span(), "{what}");
                                assert_eq!(a.line(), b.line(), "{what}");
                                assert_eq!(a.column(), b.column(), "{what}");
                                assert_eq!(a.line_count(), b.line_count(), "{what}");
                            }
                            (Err(_), Err(_)) => {}
                            (a, b) => panic!("{what}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
                        }
                    }
                }
            }
        }
    }
}
