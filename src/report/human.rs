//! Human output: a miette diagnostic per finding, then a one-line summary.

use super::{plural, Reporter, Settings};
use crate::escape::{visible, visible_lines};
use crate::finding::{Finding, Severity};
use crate::outcome::Outcome;
use foldhash::HashMap;
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, NamedSource, SourceCode, SourceSpan, SpanContents,
};
use rayon::prelude::*;
use std::fmt;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

pub struct Human;

struct Diag<'a> {
    finding: &'a Finding,
    source: NamedSource<Windowed>,
    /// miette's own help footer; the report leaves it empty and writes [`Footer`] instead.
    help: Option<String>,
    /// The labels' texts as shown (the primary one first, then the others in this file):
    /// the finding's own, or broken into lines by [`wrap_labels`].
    labels: Vec<String>,
}

impl<'a> Diag<'a> {
    fn new(finding: &'a Finding, source: NamedSource<Windowed>) -> Diag<'a> {
        let file = finding.primary.span.file;
        let labels = std::iter::once(&finding.primary)
            .chain(finding.secondary.iter().filter(|l| l.span.file == file))
            .map(|l| visible_lines(&l.message).into_owned())
            .collect();
        Diag {
            finding,
            source,
            help: None,
            labels,
        }
    }
}

/// The narrowest a wrapped label gets, however far right its span puts it.
const MIN_LABEL_WIDTH: usize = 20;

/// The labels broken into lines that fit `width`, or `None` when they all fit already.
///
/// miette writes each label on one line after the snippet's gutter and the marker under its
/// span, however long, but a label of several lines one under the other from the same column.
/// Where that column is depends on the line numbers, the gutter and the span's place in its
/// line: it is read from the diagnostic as first rendered (`rendered`), as the column where
/// the label's text starts on its row.
fn wrap_labels(rendered: &str, labels: &[String], width: usize) -> Option<Vec<String>> {
    if rendered
        .lines()
        .all(|l| textwrap::core::display_width(l) <= width)
    {
        return None;
    }
    let plain = strip_ansi(rendered);
    // A row under a source line starts with the gutter's break mark; a source line with its
    // line number.
    let rows: Vec<&str> = plain
        .lines()
        .filter(|l| l.trim_start().starts_with(['·', ':']))
        .collect();
    let mut changed = false;
    let wrapped = labels
        .iter()
        .map(|label| {
            if label.is_empty() || label.contains('\n') {
                return label.clone();
            }
            let own = textwrap::core::display_width(label);
            let start = rows
                .iter()
                .filter_map(|row| row.strip_suffix(label.as_str()))
                .filter(|before| before.ends_with(' '))
                .map(textwrap::core::display_width)
                .max();
            match start {
                Some(column) if column + own > width => {
                    let room = width.saturating_sub(column).max(MIN_LABEL_WIDTH);
                    let lines = textwrap::wrap(label, textwrap::Options::new(room));
                    changed |= lines.len() > 1;
                    lines.join("\n")
                }
                _ => label.clone(),
            }
        })
        .collect();
    changed.then_some(wrapped)
}

/// `text` without its color codes (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The help footer miette writes under a diagnostic (`  help: ` and the help text, wrapped to
/// the width), made here so that each help line is wrapped once per report: help texts repeat
/// across findings (one per rule, then short notes), and Unicode line breaking of them was a
/// third of the report's cost. The text is what miette's own footer gives, byte for byte.
struct Footer {
    indent: String,
    width: usize,
    /// Wrapped rows by source line, and whether it is the text's first line: the only thing
    /// besides the line that its wrapping depends on.
    rows: Mutex<HashMap<(String, bool), Arc<str>>>,
}

impl Footer {
    fn new(theme: &GraphicalTheme, termwidth: usize) -> Footer {
        Footer {
            indent: theme.styles.help.style("  help: ").to_string(),
            width: termwidth.saturating_sub(2),
            rows: Mutex::default(),
        }
    }

    /// miette's options for the footer.
    fn options(&self) -> textwrap::Options<'_> {
        textwrap::Options::new(self.width)
            .initial_indent(&self.indent)
            .subsequent_indent("        ")
            .break_words(true)
    }

    /// The footer for `help`, as miette writes it before its final line end.
    fn render(&self, help: &str) -> String {
        // A later line is wrapped as if a first line came before it; that stand-in must take
        // exactly one row (it does at any width a terminal has).
        if textwrap::wrap("x", self.options()).len() != 1 {
            return textwrap::fill(help, self.options());
        }
        let mut out = String::new();
        for (i, line) in help.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&self.rows(line, i == 0));
        }
        out
    }

    fn rows(&self, line: &str, first: bool) -> Arc<str> {
        let key = (line.to_string(), first);
        let known = self.lock().get(&key).cloned();
        known.unwrap_or_else(|| {
            let rows: Arc<str> = if first {
                textwrap::fill(line, self.options()).into()
            } else {
                textwrap::wrap(&format!("x\n{line}"), self.options())[1..]
                    .join("\n")
                    .into()
            };
            self.lock().insert(key, rows.clone());
            rows
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, bool), Arc<str>>> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }
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
        f.write_str(&visible_lines(&self.finding.message))
    }
}

impl fmt::Display for Diag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&visible_lines(&self.finding.message))
    }
}

impl std::error::Error for Diag<'_> {}

impl Diagnostic for Diag<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(format!(
            "{}[{}]",
            self.finding.severity,
            visible(self.finding.rule.id)
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
            self.labels.first().filter(|m| !m.is_empty()).cloned(),
            span(f.primary.span),
        );
        let others = f
            .secondary
            .iter()
            .filter(|l| l.span.file == f.primary.span.file)
            .zip(self.labels.iter().skip(1))
            .map(move |(l, text)| LabeledSpan::new_with_span(Some(text.clone()), span(l.span)));
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
        let footer = Footer::new(&theme, settings.width);
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
            .map(|file| (file, Arc::new(snippet_text(outcome.redacted_text(file)))))
            .collect();
        let rendered: Vec<String> = outcome
            .findings
            .par_iter()
            .map(|f| render_one(outcome, &handler, &footer, &texts, settings.width, f))
            .collect();
        for r in rendered {
            writeln!(out, "{}", r.trim_end())?;
            writeln!(out)?;
        }
        if settings.verbose {
            super::write_not_rendered(outcome, out)?;
        }
        if settings.statistics && !outcome.findings.is_empty() {
            writeln!(out, "{}:", super::STATISTICS_HEADING)?;
            super::write_statistics(&super::statistics(outcome), out)?;
            writeln!(out)?;
        }
        let s = &outcome.summary;
        if settings.verbose {
            for (path, reason) in &s.skipped {
                let (path, reason) = (path.display().to_string(), reason.to_string());
                writeln!(
                    out,
                    "note: skipped {}: {}",
                    visible(&path),
                    visible(&reason)
                )?;
            }
        } else {
            for (path, reason) in s
                .skipped
                .iter()
                .filter(|(_, r)| !matches!(r, crate::discover::SkipReason::HelmTemplate))
            {
                let (path, reason) = (path.display().to_string(), reason.to_string());
                writeln!(
                    out,
                    "warning: skipped {}: {}",
                    visible(&path),
                    visible(&reason)
                )?;
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
    footer: &Footer,
    texts: &HashMap<u32, Arc<String>>,
    width: usize,
    f: &Finding,
) -> String {
    let file = f.primary.span.file;
    let text = texts[&file].clone();
    let path = visible(&outcome.sources.get(file).path.display().to_string()).into_owned();
    let mut help = f.help.as_deref().map(|h| visible_lines(h).into_owned());
    for l in f.secondary.iter().filter(|l| l.span.file != file) {
        let at = outcome.sources.start(l.span);
        let note = format!(
            "{}:{}:{}: {}",
            visible(&outcome.sources.get(l.span.file).path.display().to_string()),
            at.line,
            at.column,
            visible(&l.message)
        );
        add_line(&mut help, format!("see {note}"));
    }
    if f.occurrences > 1 || !f.applications.is_empty() {
        let shared = format!("{} rendered objects share this line", f.occurrences);
        let note = match f.applications.as_slice() {
            [] => shared,
            apps => {
                let which = format!(
                    "found in {} {}",
                    if apps.len() == 1 {
                        "Application"
                    } else {
                        "Applications"
                    },
                    and_list(apps)
                );
                if f.occurrences > 1 {
                    format!("{which}, where {shared}")
                } else {
                    which
                }
            }
        };
        add_line(&mut help, note);
    }
    if let Some(fix) = &f.fix {
        let how = match fix.applicability {
            crate::fix::Applicability::Safe => "--fix",
            crate::fix::Applicability::Unsafe => "--fix --unsafe-fixes",
        };
        add_line(
            &mut help,
            format!("fix with {how}: {}", visible_lines(&fix.message)),
        );
    }
    // miette writes the help last (this diagnostic has no related ones): the footer is added
    // after its report instead.
    let mut diag = Diag::new(f, NamedSource::new(path, Windowed(text)));
    let mut rendered = String::new();
    let mut written = handler.render_report(&mut rendered, &diag);
    if written.is_ok() {
        if let Some(labels) = wrap_labels(&rendered, &diag.labels, width) {
            diag.labels = labels;
            rendered.clear();
            written = handler.render_report(&mut rendered, &diag);
        }
    }
    let written = written.and_then(|()| {
        help.map_or(Ok(()), |h| {
            use std::fmt::Write as _;
            writeln!(rendered, "{}", footer.render(&h))
        })
    });
    if written.is_err() {
        let at = outcome.sources.start(f.primary.span);
        rendered = format!(
            "{}:{}:{}: {}\n",
            diag.source.name(),
            at.line,
            at.column,
            visible(&f.message)
        );
    }
    rendered
}

/// `a`, `a and b`, `a, b and c`, each shown with [`visible`].
fn and_list(items: &[String]) -> String {
    let items: Vec<_> = items.iter().map(|i| visible(i)).collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A file's text for its snippets: each hidden character but the line ends and tabs replaced by
/// as many bytes of placeholder (`�` for three, `?` otherwise), so that every span still points
/// where it did and no terminal escape or bidirectional override reaches the screen.
fn snippet_text(text: String) -> String {
    let keep = |c: char| matches!(c, '\n' | '\r' | '\t') || !crate::escape::hidden(c);
    if text.chars().all(keep) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c.len_utf8() {
            _ if keep(c) => out.push(c),
            3 => out.push('\u{FFFD}'),
            n => out.extend(std::iter::repeat_n('?', n)),
        }
    }
    out
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
    fn the_footer_is_what_miette_writes() {
        use std::fmt::Write as _;
        let helps = [
            "short",
            "set `spec.syncPolicy.automated.selfHeal: true` and add `RespectIgnoreDifferences=true` to syncOptions so that the ignore holds",
            "first line\nfound in Applications svc-0001-prod and svc-0002-prod\nfix with --fix: write `true`",
            "before an empty line\n\nafter it",
            "a-very-long-hyphenated-identifier-that-does-not-fit-anywhere-at-all-in-a-narrow-terminal and more",
            "ünïcödé wörds, 漢字の説明文、 and emoji 🚀 in a line long enough to be wrapped somewhere along it",
            "trailing spaces   \n   leading spaces",
            "",
        ];
        let themes = [
            GraphicalTheme::unicode(),
            GraphicalTheme::unicode_nocolor(),
            GraphicalTheme::none(),
        ];
        let finding = Finding::new(
            &crate::rules::schema::unused_suppression::RULE,
            crate::yaml::Span::new(0, 0, 1),
            "the message",
        );
        let text = Arc::new("a: 1\nb: 2\n".to_string());
        let diag = |help: Option<&str>| Diag {
            help: help.map(str::to_string),
            ..Diag::new(&finding, NamedSource::new("f.yaml", Windowed(text.clone())))
        };
        for theme in themes {
            for width in [4, 9, 10, 11, 20, 40, 80, 100, 200] {
                let footer = Footer::new(&theme, width);
                let handler = GraphicalReportHandler::new_themed(theme.clone()).with_width(width);
                // Twice: the second time from what the first one kept.
                for help in helps.iter().chain(&helps) {
                    let mut theirs = String::new();
                    handler
                        .render_report(&mut theirs, &diag(Some(help)))
                        .unwrap();
                    let mut ours = String::new();
                    handler.render_report(&mut ours, &diag(None)).unwrap();
                    writeln!(ours, "{}", footer.render(help)).unwrap();
                    assert_eq!(ours, theirs, "width {width}, help {help:?}");
                }
            }
        }
    }

    /// A label too long for the terminal is broken into lines from its own column, in every
    /// theme; one that fits stays on its line.
    #[test]
    fn labels_wrap_to_the_width() {
        let text = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: a\nspec:\n  syncPolicy:\n    automated: {}\n";
        let opts = crate::engine::Options::new(vec!["/r".into()]);
        let loaded = crate::engine::load_memory(
            vec![("/r/app.yaml".into(), text.as_bytes().to_vec())],
            "/r".into(),
            &opts,
        );
        let mut outcome = crate::engine::lint(&opts, loaded, std::time::Instant::now());
        let start = text.find("automated").unwrap();
        let mut finding = Finding::new(
            &crate::rules::schema::unused_suppression::RULE,
            crate::yaml::Span::new(0, start, start + 9),
            "the message",
        );
        let long = "a label with enough words in it to run well past the edge of a narrow terminal";
        finding.primary.message = long.into();
        let at = text.find("name: a").unwrap();
        finding.secondary.push(crate::finding::Label {
            span: crate::yaml::Span::new(0, at, at + 4),
            message: "short".into(),
        });
        outcome.findings = vec![finding];
        for (unicode, color) in [(true, true), (true, false), (false, false)] {
            for width in [50, 60, 80, 200] {
                let settings = Settings {
                    color,
                    unicode,
                    width,
                    quiet: true,
                    ..Settings::default()
                };
                let mut out = Vec::new();
                Human.report(&outcome, &settings, &mut out).unwrap();
                let out = strip_ansi(&String::from_utf8(out).unwrap());
                let rows: Vec<&str> = out
                    .lines()
                    .filter(|l| l.trim_start().starts_with(['·', ':']))
                    .collect();
                for row in &rows {
                    assert!(
                        textwrap::core::display_width(row) <= width,
                        "width {width}: {row:?}\n{out}"
                    );
                }
                // The label's words, in order, over as many rows as it needed: each row's
                // text after the last drawing character, underlines left out.
                let tails: Vec<&str> = rows
                    .iter()
                    .filter_map(|r| r.rsplit_once(['─', '┤', '│', '-', '|']))
                    .map(|(_, tail)| tail.trim())
                    .filter(|t| t.chars().any(char::is_alphabetic) && *t != "short")
                    .collect();
                assert_eq!(tails.join(" "), long, "width {width}\n{out}");
                assert_eq!(tails.len() > 1, width < 100, "width {width}\n{out}");
                assert!(rows.iter().any(|r| r.ends_with(" short")), "{out}");
            }
        }
    }

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
