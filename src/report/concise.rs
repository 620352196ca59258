//! One line per finding, for grep, editors and logs: `path:line:col: severity[rule] message`.

use super::{place, Reporter, Settings};
use crate::engine::Outcome;
use std::io::{self, Write};

pub struct Concise;

impl Reporter for Concise {
    fn report(
        &self,
        outcome: &Outcome,
        _settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        for f in &outcome.findings {
            let (path, start, _) = place(outcome, f.primary.span);
            writeln!(
                out,
                "{path}:{}:{}: {}[{}] {}",
                start.line, start.column, f.severity, f.rule, f.message
            )?;
        }
        Ok(())
    }
}
