//! Filtering: the configuration's verdict on each finding, and the settled, sorted list.

use super::*;

/// The configuration's verdict on each finding, then the suppressions written in the files.
pub(super) fn configured(
    findings: Vec<Finding>,
    opts: &Options,
    sources: &SourceDb,
    docs: &[FileDocs],
    graph: &Graph,
    summary: &mut Summary,
) -> Vec<Finding> {
    // The configuration decides first, so that a suppression of a rule it turned off is not
    // mistaken for a stale one.
    let mut findings: Vec<Finding> = findings
        .into_iter()
        .filter_map(|f| configure(f, &opts.config, sources))
        .collect();
    if opts.suppressions {
        let enabled = |rule: &str| opts.config.enabled(rule);
        let s = suppress::apply(findings, sources, docs, graph, &enabled);
        summary.suppressed = s.suppressed;
        findings = s.kept;
        findings.extend(
            s.own
                .into_iter()
                .filter_map(|f| configure(f, &opts.config, sources)),
        );
    }
    findings
}

/// What the run reports: in a narrowed run, what the changed paths cause; settled and
/// sorted; less what the baseline accepts. Also the baseline entries that no longer occur.
pub(super) fn reported(
    findings: Vec<Finding>,
    opts: &Options,
    sources: &SourceDb,
    graph: &Graph,
    secrets: &Secrets,
    summary: &mut Summary,
) -> (Vec<Finding>, Baseline) {
    let mut findings = findings;
    if let Some(only) = &opts.report_only {
        let reach = crate::reach::Reach::new(graph, sources, only);
        findings.retain(|f| reach.covers(f, sources));
    }
    let mut findings = settle(findings);
    let mut stale = Baseline::default();
    if let Some(baseline) = &opts.baseline {
        let (kept, accepted, mut left) = baseline.filter(findings, sources, graph, secrets);
        findings = kept;
        summary.baselined = accepted;
        // Entries about files outside the reported ones are not known to be fixed.
        if let Some(only) = &opts.report_only {
            let only: Vec<String> = only
                .iter()
                .map(|p| graph.repo.relative(&crate::paths::normalize(p)))
                .collect();
            left.entries.retain(|fp, _| {
                only.iter()
                    .any(|o| o == "." || fp.file.starts_with(o.as_str()))
            });
        }
        stale = left;
    }
    (findings, stale)
}

/// A fix is only offered where `--fix` would make it: in a file that parsed cleanly, inside
/// the linted paths.
pub(super) fn offer_fixes(
    findings: &mut [Finding],
    opts: &Options,
    sources: &SourceDb,
    clean: &[bool],
) {
    // In a run narrowed to some paths, fixes stay in them, though findings elsewhere that the
    // paths cause are reported.
    let linted = crate::fix::apply::Linted::new(opts.report_only.as_deref().unwrap_or(&opts.paths));
    let mut fixed: Vec<FileId> = findings
        .iter()
        .filter_map(|f| f.fix.as_ref().map(crate::fix::Fix::file))
        .collect();
    fixed.sort_unstable();
    fixed.dedup();
    // Each file is resolved on disk, symlinks and all: hundreds of system calls, spread over
    // the threads.
    let editable: HashMap<FileId, bool> = fixed
        .into_par_iter()
        .with_max_len(FILES_PER_TASK)
        .map(|file| {
            let ok = crate::fix::apply::editable(sources, clean, &linted, file);
            (file, ok)
        })
        .collect();
    for f in findings.iter_mut() {
        if f.fix.as_ref().is_some_and(|x| !editable[&x.file()]) {
            f.fix = None;
        }
    }
}

/// The config's verdict on a finding: dropped, or kept with its severity.
fn configure(mut f: Finding, config: &Config, sources: &SourceDb) -> Option<Finding> {
    f.severity = config.verdict(
        f.rule.id,
        f.severity,
        &sources.get(f.primary.span.file).path,
    )?;
    Some(f)
}

/// Sorts findings and folds together the copies that rendered objects sharing one source line
/// produce, keeping count of them.
fn settle(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for f in findings {
        if let Some(last) = out.last_mut().filter(|l| l.same(&f)) {
            last.occurrences += f.occurrences;
            last.applications.extend(f.applications);
            last.applications.sort();
            last.applications.dedup();
            continue;
        }
        out.push(f);
    }
    out
}
