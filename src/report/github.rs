//! GitHub Actions workflow commands: each finding becomes an annotation on the pull request
//! diff. Values are escaped as the runner requires (`%`, CR, LF; and `:`/`,` in properties).
//! With `--statistics`, the table of findings per rule follows in a folded log group.

use super::{place, Reporter, Settings};
use crate::finding::Severity;
use crate::outcome::Outcome;
use std::io::{self, Write};

pub struct Github;

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
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
            let mut message = f.message.clone();
            if let Some(help) = &f.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            writeln!(
                out,
                "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
                escape_property(&path),
                start.line,
                start.column,
                end.line,
                end.column,
                escape_property(f.rule.id),
                escape_data(&message)
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
        assert_eq!(escape_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
