//! GitHub Actions workflow commands: each finding becomes an annotation on the pull request
//! diff. Repository text is made visible first ([`crate::escape::visible`]: its line ends and
//! hidden characters written as escapes), then escaped as the runner requires (`%`, CR, LF; and
//! `:`/`,` in properties), so that the command's own line ends are the only ones it has.
//! With `--statistics`, the table of findings per rule follows in a folded log group.

use super::{place, Reporter, Settings};
use crate::escape::{visible, visible_lines, workflow_data, workflow_property};
use crate::finding::Severity;
use crate::outcome::Outcome;
use std::io::{self, Write};

pub struct Github;

/// The file an annotation is on: its real path, so that the annotation lands on it, unless a
/// control or invisible character or a legacy command (`##[`) in it would reach the log raw
/// (the runner's escapes cannot write them); such a name is shown as [`visible`] writes it.
fn annotated(path: &str) -> std::borrow::Cow<'_, str> {
    if path.chars().any(crate::escape::hidden) || path.contains("##[") {
        visible(path)
    } else {
        path.into()
    }
}

impl Reporter for Github {
    fn report(
        &self,
        outcome: &Outcome,
        settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        for f in &outcome.findings {
            let (path, start, end) = place(outcome, f.primary.span);
            let command = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            let mut message = visible_lines(&f.message).into_owned();
            if let Some(help) = &f.help {
                message.push_str("\nhelp: ");
                message.push_str(&visible_lines(help));
            }
            writeln!(
                out,
                "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
                workflow_property(&annotated(&path)),
                start.line,
                start.column,
                end.line,
                end.column,
                workflow_property(&visible(f.rule.id)),
                workflow_data(&message)
            )?;
        }
        if settings.statistics && !outcome.findings.is_empty() {
            // Plain lines: the runner shows them in the log as they are (only lines that
            // start with `::` are commands), where an annotation each would crowd out the
            // findings' own. The group folds them under one line.
            writeln!(out, "::group::{}", super::STATISTICS_HEADING)?;
            super::write_statistics(&super::statistics(outcome), out)?;
            writeln!(out, "::endgroup::")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_as_the_runner_reads_them() {
        assert_eq!(workflow_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
        assert_eq!(workflow_property("a:b,c"), "a%3Ab%2Cc");
    }
}
