//! JUnit XML: a test case per finding (failed at warning and above) and a passing one per
//! clean file, so CI systems that read test reports show the findings next to the tests.
//! With `--statistics`, the suite's properties count the findings per rule.

use super::{place, Reporter, Settings};
use crate::escape::{visible, xml};
use crate::finding::Severity;
use crate::outcome::Outcome;
use std::collections::BTreeMap;
use std::io::{self, Write};

pub struct Junit;

impl Reporter for Junit {
    fn report(
        &self,
        outcome: &Outcome,
        settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let mut by_file: BTreeMap<String, Vec<&crate::finding::Finding>> = BTreeMap::new();
        for file in outcome.sources.files() {
            by_file.entry(file.path.display().to_string()).or_default();
        }
        for f in &outcome.findings {
            let (path, _, _) = place(outcome, f.primary.span);
            by_file.entry(path).or_default().push(f);
        }
        let failures = outcome
            .findings
            .iter()
            .filter(|f| f.severity >= Severity::Warning)
            .count();
        writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
        let tests: usize = by_file.values().map(|f| f.len().max(1)).sum();
        writeln!(
            out,
            r#"<testsuites name="gitops-lint" tests="{tests}" failures="{failures}">"#
        )?;
        writeln!(
            out,
            r#"  <testsuite name="gitops-lint" tests="{tests}" failures="{failures}" errors="0" skipped="0">"#
        )?;
        if settings.statistics && !outcome.findings.is_empty() {
            // JUnit's place for named values: first in the suite. A property per rule holds
            // its count, and one per severity it was reported at holds that count.
            writeln!(out, "    <properties>")?;
            for row in super::statistics(outcome) {
                let property = |name: &str, value: usize| {
                    format!(r#"      <property name="{}" value="{value}"/>"#, xml(name))
                };
                writeln!(out, "{}", property(row.rule, row.count))?;
                for (severity, n) in &row.severities {
                    writeln!(out, "{}", property(&format!("{}.{severity}", row.rule), *n))?;
                }
            }
            writeln!(out, "    </properties>")?;
        }
        for (path, findings) in &by_file {
            if findings.is_empty() {
                writeln!(
                    out,
                    r#"    <testcase classname="{}" name="clean"/>"#,
                    xml(path)
                )?;
            }
            for f in findings {
                let (_, start, _) = place(outcome, f.primary.span);
                // The file name on the body's first line, whatever it holds.
                let path = visible(path);
                let name = format!("{}:{}:{} {}", path, start.line, start.column, f.rule.id);
                let body = format!(
                    "{path}:{}:{}: {}[{}] {}{}",
                    start.line,
                    start.column,
                    f.severity,
                    f.rule.id,
                    f.message,
                    f.help
                        .as_ref()
                        .map(|h| format!("\nhelp: {h}"))
                        .unwrap_or_default()
                );
                writeln!(
                    out,
                    r#"    <testcase classname="{}" name="{}">"#,
                    xml(&path),
                    xml(&name)
                )?;
                if f.severity >= Severity::Warning {
                    writeln!(
                        out,
                        r#"      <failure type="{}" message="{}">{}</failure>"#,
                        xml(f.rule.id),
                        xml(&f.message),
                        xml(&body)
                    )?;
                } else {
                    writeln!(out, "      <system-out>{}</system-out>", xml(&body))?;
                }
                writeln!(out, "    </testcase>")?;
            }
        }
        writeln!(out, "  </testsuite>")?;
        writeln!(out, "</testsuites>")
    }
}
