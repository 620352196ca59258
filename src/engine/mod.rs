//! The pipeline, in one direction: discover → parse → recognise → render → rules → sorted
//! findings. Reporting is left to the caller.

use crate::baseline::Baseline;
use crate::cache::Cache;
use crate::config::Config;
use crate::context::{self, RepoContext};
use crate::discover::{self, SkipReason, Stamp};
use crate::finding::Finding;
use crate::fix::{Applicability, Edit, Fix};
use crate::model::{FileDocs, Object};
// What `run` and `lint` return, named here too for callers of the engine.
pub use crate::outcome::{Outcome, Summary};
use crate::redact::Secrets;
use crate::render::{self, Graph};
use crate::repo;
use crate::rules::{self, Check, CheckFn, Cx, Rule, Sink, Version};
use crate::scope::Seen;
use crate::source::{self, SourceDb, SourceFile};
use crate::suppress;
use crate::yaml::{self, FileId, ParseLimits, ProblemKind, Span};
use foldhash::HashMap;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

mod check;
mod filter;
mod fix;
mod load;

pub use fix::{fix, plan, Round};
#[cfg(test)]
pub(crate) use load::parse_text;
pub use load::{load, load_memory};

#[derive(Clone, Debug)]
pub struct Options {
    pub paths: Vec<PathBuf>,
    pub discover: discover::Options,
    pub version: Option<Version>,
    pub limits: ParseLimits,
    /// URLs that mean "the linted repository", besides its git remotes.
    pub repo_urls: Vec<String>,
    /// The repository's settings (rules, severities, per-path overrides).
    pub config: Config,
    /// Honour `# gitops-lint: ignore[...]` comments and `gitops-lint.io/ignore` annotations.
    pub suppressions: bool,
    /// Accepted findings: only others are reported.
    pub baseline: Option<Baseline>,
    /// Report only findings caused by these files (or files under these directories):
    /// the rest of `paths` is read for context (pre-commit on changed files).
    pub report_only: Option<Vec<PathBuf>>,
    /// Texts to read instead of the files on disk (the state of the tree while `--fix` works).
    pub overlay: Arc<HashMap<PathBuf, String>>,
    /// Where `--context` runs keep what the first look at each file found (`--cache`).
    pub cache: Option<PathBuf>,
    /// Measure each stage's peak RSS too (`--timings`); other runs do not read `/proc`.
    pub timings: bool,
}

impl Options {
    /// The defaults of a plain `gitops-lint PATHS` run: every limit at its default, no config,
    /// suppressions honoured, everything reported.
    pub fn new(paths: Vec<PathBuf>) -> Options {
        Options {
            paths,
            discover: discover::Options::default(),
            version: None,
            limits: ParseLimits::default(),
            repo_urls: Vec::new(),
            config: Config::default(),
            suppressions: true,
            baseline: None,
            report_only: None,
            overlay: Default::default(),
            cache: None,
            timings: false,
        }
    }
}

/// Files one task reads and parses at most. Files differ a thousandfold in size, and a task
/// is never split once it runs: left to split as it likes, the pool ends a run with one
/// thread working through a long task and the other idle.
const FILES_PER_TASK: usize = 8;

/// Everything the parse stage produced, with the repository it belongs to.
pub struct Loaded {
    pub sources: SourceDb,
    pub docs: Vec<FileDocs>,
    pub findings: Vec<Finding>,
    pub redactions: Vec<Span>,
    pub summary: Summary,
    pub repo: repo::Repo,
    pub clean: Vec<bool>,
}

/// The process's peak resident set so far, in KiB, on systems with `/proc`, when `--timings`
/// asks for it.
fn peak_rss(opts: &Options) -> Option<u64> {
    if !opts.timings {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The secret values of the files `opts` names, for a command that prints something other
/// than a report: read, parsed and rendered, not linted.
pub fn secrets(opts: &Options) -> Result<Secrets, String> {
    let loaded = load(opts)?;
    let graph = render::build(&loaded.sources, &loaded.docs, loaded.repo);
    Ok(secret_values(&loaded.sources, &loaded.docs, &graph))
}

pub fn run(opts: &Options) -> Result<Outcome, String> {
    let started = Instant::now();
    let loaded = load(opts)?;
    Ok(lint(opts, loaded, started))
}

/// Everything after loading: render, rules, suppressions, baseline, settling.
pub fn lint(opts: &Options, loaded: Loaded, started: Instant) -> Outcome {
    let Loaded {
        sources,
        docs,
        mut findings,
        mut redactions,
        mut summary,
        repo,
        clean,
    } = loaded;
    let rendering = Instant::now();
    let graph = render::build(&sources, &docs, repo);
    summary
        .phases
        .push(("render", rendering.elapsed(), peak_rss(opts)));
    let checking = Instant::now();
    redactions.extend(
        graph
            .units
            .iter()
            .filter(|u| u.obj.generated)
            .flat_map(|u| u.obj.secret_value_spans()),
    );
    let secrets = Arc::new(secret_values(&sources, &docs, &graph));

    let file_objects: Vec<&Object> = docs
        .iter()
        .flat_map(|d| d.objects.iter().map(|o| &**o))
        .collect();
    let repo_cx: RepoContext = context::build(&file_objects);
    let rule_enabled = |rule: &str| opts.config.enabled(rule);
    let cx = Cx {
        version: opts.version,
        repo: &repo_cx,
        sources: &sources,
        graph: &graph,
        enabled: &rule_enabled,
    };
    findings.extend(check::check(&cx, &graph));
    let findings = filter::configured(findings, opts, &sources, &docs, &graph, &mut summary);
    summary
        .phases
        .push(("rules", checking.elapsed(), peak_rss(opts)));
    let settling = Instant::now();
    let (mut findings, stale) =
        filter::reported(findings, opts, &sources, &graph, &secrets, &mut summary);
    filter::offer_fixes(&mut findings, opts, &sources, &clean);
    summary.not_rendered = graph.notes.clone();
    summary
        .phases
        .push(("settle, filter", settling.elapsed(), peak_rss(opts)));
    summary.elapsed = started.elapsed();
    Outcome {
        rules: opts.config.available(),
        sources,
        findings,
        summary,
        redactions,
        secrets,
        graph,
        stale,
        clean,
        docs,
    }
}

/// Every secret value of the run: those the files hold, those of the Secrets kustomize
/// generates (which carry what their generators read from files and env files), and the
/// credentials the files hold that are known by their shape (a token in an `Authorization`
/// header, anywhere), so that their other spellings (base64, decoded) are masked too. In any
/// other text, rendered or read, such credentials are masked by their shape alone.
fn secret_values(sources: &SourceDb, docs: &[FileDocs], graph: &Graph) -> Secrets {
    let from_files = docs
        .par_iter()
        .flat_map_iter(|d| d.objects.iter().flat_map(|o| o.secret_values()));
    let generated = graph
        .units
        .par_iter()
        .filter(|u| u.obj.generated)
        .flat_map_iter(|u| u.obj.secret_values());
    let shaped = sources
        .files()
        .par_iter()
        .flat_map_iter(|f| crate::redact::learned(&f.text));
    Secrets::new(
        from_files
            .chain(generated)
            .chain(shaped)
            .collect::<Vec<String>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ceilings_cut_a_run_short() {
        let mut s = Summary::default();
        s.skipped
            .push(("chart.yaml".into(), SkipReason::HelmTemplate));
        s.skipped.push(("fifo.yaml".into(), SkipReason::NotAFile));
        assert_eq!(s.cut_short(), 0);
        s.skipped.push((
            "big.yaml".into(),
            SkipReason::TooLarge { size: 9, limit: 8 },
        ));
        s.skipped
            .push(("y.yaml".into(), SkipReason::RunNodes { nodes: 1 }));
        s.skipped
            .push(("z.yaml".into(), SkipReason::RunLimit { files: 1, bytes: 1 }));
        assert_eq!(s.cut_short(), 3);
    }
}
