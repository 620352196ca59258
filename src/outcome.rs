//! What a run found, as every reporter and the command line read it.

use crate::baseline::Baseline;
use crate::discover::SkipReason;
use crate::finding::{Finding, Severity};
use crate::model::FileDocs;
use crate::redact::Secrets;
use crate::render::{Graph, Note};
use crate::source::SourceDb;
use crate::yaml::{FileId, Span};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Summary {
    pub files_scanned: usize,
    pub objects_by_kind: BTreeMap<String, usize>,
    pub skipped: Vec<(PathBuf, SkipReason)>,
    /// Things seen but deliberately not rendered (remote bases, Helm charts, plugins).
    pub not_rendered: Vec<Note>,
    /// Findings hidden by suppressions, and by the baseline.
    pub suppressed: usize,
    pub baselined: usize,
    pub elapsed: Duration,
    /// Each stage in pipeline order, with its wall time and the peak RSS (KiB) at its end,
    /// where the system says (`--timings`).
    pub phases: Vec<(&'static str, Duration, Option<u64>)>,
    /// What parsing the linted files cost, in the nodes [`crate::yaml::ParseLimits::run_nodes`] bounds.
    pub nodes: usize,
}

impl Summary {
    pub fn objects(&self) -> usize {
        self.objects_by_kind.values().sum()
    }

    /// Files left unread past a ceiling: over the size limit, or past the run's ceilings
    /// (files, bytes, nodes, policies). A pull request could grow a file past the size limit,
    /// or push it past a run ceiling with what comes before it in path order, to keep it from
    /// being checked.
    pub fn cut_short(&self) -> usize {
        self.skipped
            .iter()
            .filter(|(_, r)| {
                matches!(
                    r,
                    SkipReason::RunLimit { .. }
                        | SkipReason::RunNodes { .. }
                        | SkipReason::TooLarge { .. }
                        | SkipReason::PolicyLimit { .. }
                )
            })
            .count()
    }
}

pub struct Outcome {
    pub sources: SourceDb,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// Byte ranges whose text no output may show (Secret values).
    pub redactions: Vec<Span>,
    /// The secret values themselves, to be masked wherever else they occur.
    pub secrets: Arc<Secrets>,
    pub graph: Graph,
    /// Baseline entries that no longer occur.
    pub stale: Baseline,
    /// Per file: read, decoded and parsed without a problem (the files a fix may edit).
    pub clean: Vec<bool>,
    /// What each file held: kept so that the caller decides when (or whether) the trees are
    /// freed.
    pub docs: Vec<FileDocs>,
    /// The rules of the run: the built-in ones and its config's policies (what SARIF lists).
    pub rules: Vec<&'static crate::rules::Rule>,
}

impl Outcome {
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// The text of a file with every redacted range and every secret value masked, byte for
    /// byte, so spans stay valid.
    pub fn redacted_text(&self, file: FileId) -> String {
        let ranges = self
            .redactions
            .iter()
            .filter(|s| s.file == file)
            .map(Span::range);
        crate::redact::redacted_text(&self.sources.get(file).text, ranges, &self.secrets)
    }
}
