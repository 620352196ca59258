//! One line per finding, for grep, editors and logs: `path:line:col: severity[rule] message`.
//! With `--statistics`, the table of findings per rule follows.

use super::{place, Reporter, Settings};
use crate::escape::visible;
use crate::outcome::Outcome;
use std::io::{self, Write};

pub struct Concise;

impl Reporter for Concise {
    fn report(
        &self,
        outcome: &Outcome,
        settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        for f in &outcome.findings {
            let (path, start, _) = place(outcome, f.primary.span);
            // One line per finding, whatever the file name or the message holds.
            writeln!(
                out,
                "{}:{}:{}: {}[{}] {}",
                visible(&path),
                start.line,
                start.column,
                f.severity,
                visible(f.rule.id),
                visible(&f.message)
            )?;
        }
        if settings.statistics && !outcome.findings.is_empty() {
            // A blank line, then the table: no row starts with `path:line:col:`, so tools that
            // read the finding lines pass over it.
            writeln!(out)?;
            writeln!(out, "{}:", super::STATISTICS_HEADING)?;
            super::write_statistics(&super::statistics(outcome), out)?;
        }
        Ok(())
    }
}
