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
use crate::rules::{Check, Cx, GraphFn, Rule, Sink, Version, RULES};
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

/// What one file yields before anything cross-file happens.
struct FileResult {
    source: SourceFile,
    docs: FileDocs,
    problems: Vec<Finding>,
    redactions: Vec<Span>,
    skip: Option<SkipReason>,
    /// What parsing the file cost, against the run's budget ([`ParseLimits::run_nodes`]).
    nodes: usize,
}

fn problem_finding(
    kind: ProblemKind,
    span: Span,
    message: String,
    related: Option<(Span, String)>,
    help: &str,
) -> Finding {
    let rule = match kind {
        ProblemKind::InvalidYaml => &crate::rules::schema::invalid_yaml::RULE,
        ProblemKind::DuplicateKey => &crate::rules::schema::duplicate_key::RULE,
    };
    let mut f = Finding::new(rule, span, message);
    if let Some((span, text)) = related {
        f.also(span, text);
    }
    f.help(help);
    f
}

const UNQUOTED_TEMPLATE: &str = "a value holding a template (`{{ }}`) is YAML only when quoted: \
     `name: '{{.path.basename}}-app'`. ApplicationSet templates are applied as written, so \
     kubectl and Argo CD reject this file";

/// Whether a top-level `apiVersion:` line names an Argo CD API group: the file is meant to be
/// applied, not rendered by some other tool first.
fn names_argo_api(text: &str) -> bool {
    text.lines().any(|line| {
        line.strip_prefix("apiVersion:").is_some_and(|v| {
            v.trim_start()
                .trim_start_matches(['"', '\''])
                .starts_with("argoproj.io/")
        })
    })
}

/// Reads and parses one file; `stamp` is what discovery measured of it, if anything.
fn process_file(id: FileId, path: PathBuf, stamp: Option<Stamp>, opts: &Options) -> FileResult {
    match read_file(&path, stamp, opts) {
        Ok(bytes) => slimmed(process_bytes(id, path, bytes, opts.limits), opts.limits),
        Err(reason) => skipped(path, reason),
    }
}

/// `r` without what only kustomize reads ([`FileDocs::slim`]), once nothing else will look.
fn slimmed(mut r: FileResult, limits: ParseLimits) -> FileResult {
    r.docs.slim(limits);
    r
}

fn read_file(
    path: &std::path::Path,
    stamp: Option<Stamp>,
    opts: &Options,
) -> Result<Vec<u8>, SkipReason> {
    match opts.overlay.get(path) {
        Some(text) => Ok(text.clone().into_bytes()),
        None => read_capped(path, stamp.map(|s| s.size()), opts.discover.max_file_size),
    }
}

/// Files one task reads and parses at most. Files differ a thousandfold in size, and a task
/// is never split once it runs: left to split as it likes, the pool ends a run with one
/// thread working through a long task and the other idle.
const FILES_PER_TASK: usize = 8;

/// A file's turn under the run's node budget: parsed, or waiting for the ordered pass because
/// the budget looked spent when its task came.
// Nearly every file is `Done`: boxing it would cost an allocation per file to save space in the
// rare `Waiting`.
#[allow(clippy::large_enum_variant)]
enum Turn {
    Done(FileResult),
    Waiting(FileId, PathBuf, Option<Stamp>),
}

/// The run's node budget ([`ParseLimits::run_nodes`]), spent in path order whatever the threads
/// do. Files are parsed in parallel, and a task takes no new file once the files parsed so far
/// have spent the budget, so at most one tree per thread is parsed past it. [`RunBudget::settle`]
/// then walks the files in path order, parses those that waited, and keeps files while the total
/// stays within the budget: which files are kept depends on the files alone.
struct RunBudget {
    limit: usize,
    spent: std::sync::atomic::AtomicUsize,
}

impl RunBudget {
    fn new(limits: ParseLimits) -> RunBudget {
        RunBudget {
            limit: limits.run_nodes,
            spent: Default::default(),
        }
    }

    fn is_spent(&self) -> bool {
        self.spent.load(std::sync::atomic::Ordering::Relaxed) >= self.limit
    }

    fn charge(&self, r: &FileResult) {
        self.spent
            .fetch_add(r.nodes, std::sync::atomic::Ordering::Relaxed);
    }

    /// `parse(id, path, stamp)` unless the budget is spent.
    fn turn(
        &self,
        id: FileId,
        path: PathBuf,
        stamp: Option<Stamp>,
        parse: impl FnOnce(FileId, PathBuf, Option<Stamp>) -> FileResult,
    ) -> Turn {
        if self.is_spent() {
            return Turn::Waiting(id, path, stamp);
        }
        let r = parse(id, path, stamp);
        self.charge(&r);
        Turn::Done(r)
    }

    fn settle(
        &self,
        turns: Vec<Turn>,
        parse: impl Fn(FileId, PathBuf, Option<Stamp>) -> FileResult,
    ) -> Vec<FileResult> {
        let reason = || SkipReason::RunNodes { nodes: self.limit };
        let mut total = 0usize;
        let mut past = false;
        turns
            .into_iter()
            .map(|turn| {
                let r = match turn {
                    // Nothing parsed, nothing kept: it costs nothing and stays as it is.
                    Turn::Done(r) if r.skip.is_some() => return r,
                    Turn::Waiting(_, path, _) if past => return skipped(path, reason()),
                    Turn::Waiting(id, path, stamp) => parse(id, path, stamp),
                    Turn::Done(r) if past => return skipped(r.source.path, reason()),
                    Turn::Done(r) => r,
                };
                match total.checked_add(r.nodes).filter(|t| *t <= self.limit) {
                    Some(t) => {
                        total = t;
                        r
                    }
                    None => {
                        past = true;
                        skipped(r.source.path, reason())
                    }
                }
            })
            .collect()
    }
}

/// A file named but not parsed.
fn skipped(path: PathBuf, reason: SkipReason) -> FileResult {
    FileResult {
        source: SourceFile::new(path, String::new()),
        docs: FileDocs::default(),
        problems: Vec::new(),
        redactions: Vec::new(),
        skip: Some(reason),
        nodes: 0,
    }
}

/// The files a `--context` run needs, each read once: kustomizations and files that may hold
/// Argo CD objects are parsed on the first pass and their documents tell what else is needed;
/// the other files needed (the changed ones, what the kustomizations include) are read after.
/// With a cache, a file whose first look is cached is not read on the first pass at all.
fn load_in_context(
    files: Vec<PathBuf>,
    stamps: Vec<Option<Stamp>>,
    changed: &[PathBuf],
    opts: &Options,
) -> Vec<FileResult> {
    enum First {
        Parsed(Box<FileResult>),
        Named,
        Cached,
        Failed(SkipReason),
    }
    let cache = opts
        .cache
        .as_deref()
        .map(|dir| Cache::open(dir, &opts.paths, &opts.limits));
    let roots: Vec<PathBuf> = opts
        .paths
        .iter()
        .map(|p| crate::paths::normalize(p))
        .collect();
    let budget = RunBudget::new(opts.limits);
    let looked: Vec<(First, Option<Seen>)> = files
        .par_iter()
        .zip(&stamps)
        .enumerate()
        .with_max_len(FILES_PER_TASK)
        .map(|(i, (path, stamp))| {
            let cached = cache
                .as_ref()
                .filter(|_| !opts.overlay.contains_key(path))
                .and_then(|c| c.get(path, *stamp));
            if let Some(seen) = cached {
                return (First::Cached, Some(seen.clone()));
            }
            match read_file(path, *stamp, opts) {
                Ok(bytes) => match crate::scope::needs_documents(path, &bytes) {
                    None => (First::Named, Some(Seen::Other)),
                    Some(need) => {
                        let r = process_bytes(i as FileId, path.clone(), bytes, opts.limits);
                        // Objects, the items of a `List` among them, then the other documents.
                        let docs: Vec<&yaml::Node> = r
                            .docs
                            .objects
                            .iter()
                            .map(|o| &o.root)
                            .chain(r.docs.loose.iter().map(|d| &d.root))
                            .collect();
                        let seen = crate::scope::first_look(path, need, &docs, &roots);
                        drop(docs);
                        if budget.is_spent() {
                            // The look is kept, the tree is not: read again if needed.
                            return (First::Named, Some(seen));
                        }
                        budget.charge(&r);
                        let r = slimmed(r, opts.limits);
                        (First::Parsed(Box::new(r)), Some(seen))
                    }
                },
                Err(reason) => (First::Failed(reason), None),
            }
        })
        .collect();
    if let Some(cache) = &cache {
        cache.save(
            files
                .iter()
                .zip(&stamps)
                .zip(&looked)
                .filter(|((path, _), _)| !opts.overlay.contains_key(*path))
                .filter_map(|((path, stamp), (first, seen))| {
                    let hit = matches!(first, First::Cached);
                    Some((path.as_path(), *stamp, seen.as_ref()?, hit))
                }),
        );
    }
    let (first, seen): (Vec<First>, Vec<Seen>) = looked
        .into_iter()
        .map(|(f, s)| (f, s.unwrap_or(Seen::Other)))
        .unzip();
    let want = crate::scope::wanted(&files, &seen, changed);
    drop(seen);
    // What the files not needed cost is given back.
    let kept: usize = first
        .iter()
        .zip(&want)
        .filter_map(|(f, &w)| match f {
            First::Parsed(r) if w => Some(r.nodes),
            _ => None,
        })
        .sum();
    budget
        .spent
        .store(kept, std::sync::atomic::Ordering::Relaxed);
    let parse = |id, path, stamp| process_file(id, path, stamp, opts);
    let turns = files
        .into_par_iter()
        .zip(stamps)
        .zip(first)
        .zip(want)
        .enumerate()
        .with_max_len(FILES_PER_TASK)
        .map(|(i, (((path, stamp), first), want))| match (want, first) {
            // Outside what the changed files need: kept as a name only.
            (false, _) => Turn::Done(skipped(path, SkipReason::OutOfScope)),
            (true, First::Parsed(r)) => Turn::Done(*r),
            (true, First::Failed(reason)) => Turn::Done(skipped(path, reason)),
            (true, First::Named | First::Cached) => budget.turn(i as FileId, path, stamp, parse),
        })
        .collect();
    budget.settle(turns, parse)
}

fn process_bytes(id: FileId, path: PathBuf, bytes: Vec<u8>, limits: ParseLimits) -> FileResult {
    let (text, decode_error) = source::decode(bytes);
    if let Some(err) = decode_error {
        let end = text[err.offset.min(text.len())..]
            .chars()
            .next()
            .map_or(err.offset, |c| err.offset + c.len_utf8());
        let f = problem_finding(
            ProblemKind::InvalidYaml,
            Span::new(id, err.offset, end),
            err.message,
            None,
            err.help,
        );
        return FileResult {
            redactions: crate::model::unparsed_secret_spans(id, &text),
            source: SourceFile::new(path, text),
            docs: FileDocs::default(),
            problems: vec![f],
            skip: None,
            nodes: 0,
        };
    }
    let parsed = parse_text(id, &text, limits);
    let nodes = parsed.nodes;
    let broken = parsed
        .problems
        .iter()
        .any(|p| p.kind == ProblemKind::InvalidYaml);
    let templated = broken && text.contains("{{");
    // An Argo CD object is applied as written, so an unquoted template in it is broken YAML;
    // any other file that a `{{ }}` breaks is input to some template engine, not a manifest.
    let argo = templated && names_argo_api(&text);
    if templated && !argo {
        return FileResult {
            source: SourceFile::new(path, text),
            docs: FileDocs::default(),
            problems: Vec::new(),
            redactions: Vec::new(),
            skip: Some(SkipReason::Template),
            nodes,
        };
    }
    let mut parsed = parsed;
    let problems = std::mem::take(&mut parsed.problems)
        .into_iter()
        .map(|p| {
            let help = match p.kind {
                ProblemKind::InvalidYaml if argo => UNQUOTED_TEMPLATE,
                _ => p.help,
            };
            problem_finding(p.kind, p.span, p.message, p.related, help)
        })
        .collect();
    let docs = FileDocs::new(id, &path, parsed);
    let mut redactions: Vec<_> = docs
        .objects
        .iter()
        .flat_map(|o| o.secret_value_spans())
        .collect();
    if broken {
        redactions.extend(crate::model::unparsed_secret_spans(id, &text));
    }
    FileResult {
        source: SourceFile::new(path, text),
        docs,
        problems,
        redactions,
        skip: None,
        nodes,
    }
}

/// Parses a file for the later stages. What no stage but kustomize reads is not built, unless
/// a suppression comment in the file might be about it: `Object::slim` then decides, with the
/// comments in hand.
pub(crate) fn parse_text(id: FileId, text: &str, limits: ParseLimits) -> yaml::ParsedFile {
    if text.contains("gitops-lint") {
        yaml::parse(id, text, limits)
    } else {
        yaml::parse_pruned(id, text, limits, crate::model::PRUNE)
    }
}

/// Reads at most `limit` bytes: the size seen while discovering may be stale (the file grew),
/// or wrong (files whose size the system does not know), and a read must stay bounded anyway.
fn read_capped(
    path: &std::path::Path,
    measured: Option<u64>,
    limit: u64,
) -> Result<Vec<u8>, SkipReason> {
    source::read_sized(path, limit, measured).map_err(|e| match e {
        source::ReadError::TooLarge { size, limit } => SkipReason::TooLarge { size, limit },
        source::ReadError::Io(e) => SkipReason::Unreadable(e.to_string()),
    })
}

fn run_rules(cx: &Cx, graph: &Graph, unit: usize) -> Vec<Finding> {
    let obj = &graph.units[unit].obj;
    let mut out = Vec::new();
    for rule in RULES.iter().filter(|r| cx.runs(r.id)) {
        let Check::Object(check) = rule.check else {
            continue;
        };
        let mut sink = Sink::new(rule);
        check(cx, obj, &mut sink);
        for mut f in sink.finish() {
            f.about(unit, obj);
            f.applications = graph.app_names(unit);
            out.push(f);
        }
    }
    out
}

fn run_graph_rule(cx: &Cx, graph: &Graph, rule: &'static Rule, check: GraphFn) -> Vec<Finding> {
    let mut sink = Sink::new(rule);
    check(cx, graph, &mut sink);
    sink.finish()
}

/// Units whose per-object rules one task runs: small enough that the last task ends soon
/// after the others.
const UNITS_PER_TASK: usize = 64;

/// Runs tasks `0..n` on the threads of the pool, each thread taking the lowest task no
/// thread has taken yet, and returns the results in task order. Long tasks put first then
/// start first, and short ones at the end fill in around them, which rayon's halving of a
/// range does not promise. The tasks must not use rayon themselves: a thread waiting inside
/// one could take up the queue there, and its own long task would wait under the rest.
fn in_turn<T: Send>(n: usize, task: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = (0..rayon::current_num_threads())
        .into_par_iter()
        .with_max_len(1)
        .flat_map_iter(|_| {
            // A thread that arrives after the queue has run dry takes nothing.
            std::iter::from_fn(|| {
                let i = next.fetch_add(1, Ordering::Relaxed);
                (i < n).then(|| (i, task(i)))
            })
        })
        .collect();
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
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

/// Discovers, reads and parses every file, and finds the repository they belong to.
pub fn load(opts: &Options) -> Result<Loaded, String> {
    let started = Instant::now();
    let found = discover::discover(&opts.paths, &opts.discover)?;
    let discovered = started.elapsed();
    let discovered_rss = peak_rss(opts);
    let results: Vec<FileResult> = match &opts.report_only {
        None => {
            let budget = RunBudget::new(opts.limits);
            let parse = |id, path, stamp| process_file(id, path, stamp, opts);
            let turns = found
                .files
                .into_par_iter()
                .zip(found.stamps)
                .enumerate()
                .with_max_len(FILES_PER_TASK)
                .map(|(i, (path, stamp))| budget.turn(i as FileId, path, stamp, parse))
                .collect();
            budget.settle(turns, parse)
        }
        Some(changed) => load_in_context(found.files, found.stamps, changed, opts),
    };

    let mut summary = Summary {
        skipped: found.skipped,
        ..Summary::default()
    };
    summary
        .phases
        .push(("discover", discovered, discovered_rss));
    summary.phases.push((
        "read, parse, recognise",
        started.elapsed() - discovered,
        peak_rss(opts),
    ));
    let mut roots: Vec<PathBuf> = opts.paths.iter().map(|p| repo::find_root(p)).collect();
    roots.sort();
    roots.dedup();
    let mut urls: Vec<String> = opts.repo_urls.clone();
    for root in &roots {
        urls.extend(repo::git_remotes(root));
    }
    Ok(assemble(results, summary, roots, urls))
}

/// Parses files held in memory as if they had been read from disk under `root`, which is
/// never touched beyond what rendering looks up there (files that are not YAML). The same
/// stages as [`load`] without discovery: for fuzzing and generated-input tests.
pub fn load_memory(files: Vec<(PathBuf, Vec<u8>)>, root: PathBuf, opts: &Options) -> Loaded {
    let turns = files
        .into_iter()
        .enumerate()
        .map(|(i, (path, bytes))| {
            Turn::Done(slimmed(
                process_bytes(i as FileId, path, bytes, opts.limits),
                opts.limits,
            ))
        })
        .collect();
    let results = RunBudget::new(opts.limits).settle(turns, |_, path, _| {
        skipped(path, SkipReason::Unreadable("not in memory".into()))
    });
    assemble(
        results,
        Summary::default(),
        vec![root],
        opts.repo_urls.clone(),
    )
}

fn assemble(
    mut results: Vec<FileResult>,
    mut summary: Summary,
    roots: Vec<PathBuf>,
    urls: Vec<String>,
) -> Loaded {
    // Every other thread waits for this step: what few files have is taken out in order, and
    // what every file has is moved in parallel.
    let clean: Vec<bool> = results
        .par_iter()
        .map(|r| r.skip.is_none() && r.problems.is_empty())
        .collect();
    let mut findings = Vec::new();
    let mut redactions = Vec::new();
    for r in &mut results {
        match r.skip.take() {
            Some(SkipReason::OutOfScope) => {}
            Some(reason) => summary.skipped.push((r.source.path.clone(), reason)),
            None => {
                summary.files_scanned += 1;
                summary.nodes += r.nodes;
            }
        }
        findings.append(&mut r.problems);
        redactions.append(&mut r.redactions);
    }
    let (files, docs): (Vec<SourceFile>, Vec<FileDocs>) =
        results.into_par_iter().map(|r| (r.source, r.docs)).unzip();
    let sources = SourceDb::from(files);
    let kinds = docs
        .par_iter()
        .flat_map_iter(|d| &d.objects)
        .fold(HashMap::<&str, usize>::default, |mut n, obj| {
            *n.entry(obj.kind.as_str()).or_default() += 1;
            n
        })
        .reduce(HashMap::default, |mut a, b| {
            for (kind, n) in b {
                *a.entry(kind).or_default() += n;
            }
            a
        });
    for (kind, n) in kinds {
        *summary.objects_by_kind.entry(kind.to_string()).or_default() += n;
    }
    crate::paths::sort_by_path_then(&mut summary.skipped, |(p, _)| p);

    let mut urls: Vec<String> = urls.iter().map(|u| repo::normalize_url(u)).collect();
    urls.sort();
    urls.dedup();
    Loaded {
        sources,
        docs,
        findings,
        redactions,
        summary,
        repo: repo::Repo { roots, urls },
        clean,
    }
}

/// The secret values of the files `opts` names, for a command that prints something other
/// than a report: read, parsed and rendered, not linted.
pub fn secrets(opts: &Options) -> Result<Secrets, String> {
    let loaded = load(opts)?;
    let graph = render::build(&loaded.sources, &loaded.docs, loaded.repo);
    Ok(secret_values(&loaded.docs, &graph))
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
    let secrets = Arc::new(secret_values(&docs, &graph));

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
    let lint: Vec<usize> = (0..graph.units.len())
        .filter(|&u| graph.units[u].lint)
        .collect();
    // The graph rules, and the per-object rules on every unit in chunks after them, taken in
    // turn by every thread: a few graph rules are long single tasks, and one that a thread
    // took up last would keep it busy after the others had run out of work. All of it is
    // sorted afterwards, so the scheduling does not show.
    let graph_rules: Vec<(&'static Rule, GraphFn)> = RULES
        .iter()
        .filter_map(|&r| match r.check {
            Check::Graph(check) if cx.runs(r.id) => Some((r, check)),
            _ => None,
        })
        .collect();
    let chunks: Vec<&[usize]> = lint.chunks(UNITS_PER_TASK).collect();
    let mut rule_findings = in_turn(graph_rules.len() + chunks.len(), |task| {
        match graph_rules.get(task) {
            Some(&(rule, check)) => run_graph_rule(&cx, &graph, rule, check),
            None => chunks[task - graph_rules.len()]
                .iter()
                .flat_map(|&u| run_rules(&cx, &graph, u))
                .collect(),
        }
    });
    let graph_findings: Vec<Vec<Finding>> = rule_findings.drain(..graph_rules.len()).collect();
    findings.extend(rule_findings.into_iter().flatten());
    findings.extend(graph_findings.into_iter().flatten());
    // The configuration decides first, so that a suppression of a rule it turned off is not
    // mistaken for a stale one.
    let mut findings: Vec<Finding> = findings
        .into_iter()
        .filter_map(|f| configure(f, &opts.config, &sources))
        .collect();
    if opts.suppressions {
        let enabled = |rule: &str| opts.config.enabled(rule);
        let s = suppress::apply(findings, &sources, &docs, &graph, &enabled);
        summary.suppressed = s.suppressed;
        findings = s.kept;
        findings.extend(
            s.own
                .into_iter()
                .filter_map(|f| configure(f, &opts.config, &sources)),
        );
    }
    summary
        .phases
        .push(("rules", checking.elapsed(), peak_rss(opts)));
    let settling = Instant::now();
    if let Some(only) = &opts.report_only {
        let reach = crate::reach::Reach::new(&graph, &sources, only);
        findings.retain(|f| reach.covers(f, &sources));
    }
    let mut findings = settle(findings);
    let mut stale = Baseline::default();
    if let Some(baseline) = &opts.baseline {
        let (kept, accepted, mut left) = baseline.filter(findings, &sources, &graph, &secrets);
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
    // A fix is only offered where `--fix` would make it: in a file that parsed cleanly, inside
    // the linted paths.
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
            let ok = crate::fix::apply::editable(&sources, &clean, &linted, file);
            (file, ok)
        })
        .collect();
    for f in &mut findings {
        if f.fix.as_ref().is_some_and(|x| !editable[&x.file()]) {
            f.fix = None;
        }
    }
    summary.not_rendered = graph.notes.clone();
    summary
        .phases
        .push(("settle, filter", settling.elapsed(), peak_rss(opts)));
    summary.elapsed = started.elapsed();
    Outcome {
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

/// Every secret value of the run: those the files hold, and those of the Secrets kustomize
/// generates (which carry what their generators read from files and env files).
fn secret_values(docs: &[FileDocs], graph: &Graph) -> Secrets {
    let from_files = docs
        .par_iter()
        .flat_map_iter(|d| d.objects.iter().flat_map(|o| o.secret_values()));
    let generated = graph
        .units
        .par_iter()
        .filter(|u| u.obj.generated)
        .flat_map_iter(|u| u.obj.secret_values());
    Secrets::new(from_files.chain(generated).collect::<Vec<String>>())
}

/// How many lint-and-fix rounds `--fix` runs at most. Fixes that meet in one place wait for
/// the next round; a handful of rounds settles every fix we have.
const FIX_ROUNDS: usize = 8;

/// Lints, applies the chosen fixes in memory, and lints again until nothing fixable is left.
/// Returns the outcome of the last lint (what remains) and the changes, not yet written.
pub fn fix(
    opts: &Options,
    unsafe_fixes: bool,
) -> Result<(Outcome, crate::fix::apply::Fixed), String> {
    use crate::fix::apply::{self, Change, Fixed};
    let mut opts = opts.clone();
    let mut overlay: HashMap<PathBuf, String> = HashMap::default();
    let mut changes: BTreeMap<PathBuf, Change> = BTreeMap::new();
    let mut fixed = Fixed::default();
    // Fixes that break their file even alone: reported once, never tried again.
    let mut refused: Vec<(PathBuf, &'static str, String)> = Vec::new();
    let mut round = 0;
    loop {
        opts.overlay = Arc::new(overlay.clone());
        let outcome = run(&opts)?;
        if round == FIX_ROUNDS {
            fixed.problems.push(format!(
                "fixes did not settle after {FIX_ROUNDS} rounds; the rest are left as findings"
            ));
            fixed.changes = changes.into_values().collect();
            return Ok((outcome, fixed));
        }
        let key = |f: &Finding, fix: &crate::fix::Fix| {
            (
                outcome.sources.get(fix.file()).path.clone(),
                f.rule.id,
                format!("{:?} {}", f.object, fix.message),
            )
        };
        // Fixes in files `--fix` may not write were dropped by `run`.
        let editable = |f: &Finding, fix: &crate::fix::Fix| !refused.contains(&key(f, fix));
        let round_plan = plan(&outcome.findings, unsafe_fixes, &editable);
        let mut progressed = false;
        for (file, fixes) in &round_plan.files {
            let source = outcome.sources.get(*file);
            // One at a time, so that a fix that breaks the file does not take the others
            // with it; it waits for the next round, or is refused if it breaks the file alone.
            let mut accepted: Vec<&crate::fix::Fix> = Vec::new();
            let mut cured: Vec<&'static str> = Vec::new();
            let mut after = source.text.clone();
            for (f, fix) in fixes {
                if accepted.iter().any(|a| a.edits == fix.edits) {
                    cured.push(f.rule.id);
                    continue;
                }
                let mut trial = accepted.clone();
                trial.push(fix);
                let text = apply::rewrite(&source.text, &trial);
                match apply::check(&source.text, &text) {
                    Ok(()) => {
                        accepted = trial;
                        cured.push(f.rule.id);
                        after = text;
                    }
                    Err(e) => {
                        if apply::check(&source.text, &apply::rewrite(&source.text, &[fix]))
                            .is_err()
                        {
                            fixed.problems.push(format!(
                                "{}: the {} fix would leave the file unreadable ({e}); not applied",
                                source.path.display(),
                                f.rule.id
                            ));
                            refused.push(key(f, fix));
                        }
                    }
                }
            }
            if after == source.text {
                continue;
            }
            let change = changes
                .entry(source.path.clone())
                .or_insert_with(|| Change {
                    path: source.path.clone(),
                    before: source.text.clone(),
                    after: String::new(),
                    before_shown: outcome.redacted_text(*file),
                    fixed: Vec::new(),
                });
            change.after = after.clone();
            change.fixed.extend(cured);
            overlay.insert(source.path.clone(), after);
            progressed = true;
        }
        if !progressed {
            fixed.changes = changes.into_values().collect();
            return Ok((outcome, fixed));
        }
        round += 1;
    }
}

/// The fixes chosen for one round, per file, with the findings they cure.
pub struct Round<'a> {
    pub files: BTreeMap<FileId, Vec<(&'a Finding, &'a Fix)>>,
}

/// Picks the fixes to apply now. Findings come in report order. A fix waits for the next
/// round, when it is recomputed on the new text, if its edits touch one already picked or if
/// another fix on the same object was picked: two cures of one Application (say, a renamed
/// `selfheal` and a missing `selfHeal`) can each be right alone and wrong together.
pub fn plan<'a>(
    findings: &'a [Finding],
    unsafe_fixes: bool,
    editable: &dyn Fn(&Finding, &Fix) -> bool,
) -> Round<'a> {
    let mut files: BTreeMap<FileId, Vec<(&Finding, &Fix)>> = BTreeMap::new();
    let mut objects: Vec<(FileId, &crate::finding::ObjectRef, &Fix)> = Vec::new();
    // Safe fixes first: a respelt key must win over an unsafe fix that adds the key anew.
    let mut order: Vec<(&Finding, &Fix)> = findings
        .iter()
        .filter_map(|f| Some((f, f.fix.as_ref()?)))
        .filter(|(_, fix)| unsafe_fixes || fix.applicability == Applicability::Safe)
        .collect();
    order.sort_by_key(|(_, fix)| fix.applicability);
    for (f, fix) in order {
        if !editable(f, fix) {
            continue;
        }
        let picked = files.entry(fix.file()).or_default();
        // The same cure found twice (one template, many rendered apps) is applied once.
        if picked.iter().any(|(_, p)| p.edits == fix.edits) {
            picked.push((f, fix));
            continue;
        }
        let clash = picked
            .iter()
            .flat_map(|(_, p)| &p.edits)
            .any(|a| fix.edits.iter().any(|b| touches(a, b)));
        let busy = f.object.as_ref().is_some_and(|o| {
            objects
                .iter()
                .any(|(file, other, _)| *file == fix.file() && *other == o)
        });
        if !clash && !busy {
            picked.push((f, fix));
            if let Some(o) = &f.object {
                objects.push((fix.file(), o, fix));
            }
        }
    }
    Round { files }
}

/// Edits that overlap or meet: their order would be a guess.
fn touches(a: &Edit, b: &Edit) -> bool {
    a.span.start <= b.span.end && b.span.start <= a.span.end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_run_ceilings_cut_a_run_short() {
        let mut s = Summary::default();
        s.skipped.push((
            "big.yaml".into(),
            SkipReason::TooLarge { size: 9, limit: 8 },
        ));
        s.skipped
            .push(("chart.yaml".into(), SkipReason::HelmTemplate));
        assert_eq!(s.cut_short(), 0);
        s.skipped
            .push(("y.yaml".into(), SkipReason::RunNodes { nodes: 1 }));
        s.skipped
            .push(("z.yaml".into(), SkipReason::RunLimit { files: 1, bytes: 1 }));
        assert_eq!(s.cut_short(), 2);
    }
}
