//! SARIF 2.1.0 output (being written).

use super::{Reporter, Settings};
use crate::engine::Outcome;
use std::io::{self, Write};

pub struct Sarif;

impl Reporter for Sarif {
    fn report(
        &self,
        _outcome: &Outcome,
        _settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        writeln!(out, "{{}}")
    }
}
