//! Loading: discover the files, read and parse them (in parallel, under the run's budgets, or
//! only those a narrowed run needs), and find the repository they belong to.

use super::*;

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

/// A chart's template: kept as text, for the objects its chart renders to point into.
fn template(path: PathBuf, bytes: Vec<u8>) -> FileResult {
    let (text, _) = source::decode(bytes);
    FileResult {
        source: SourceFile::new(path, text),
        skip: Some(SkipReason::HelmTemplate),
        ..skipped(PathBuf::new(), SkipReason::HelmTemplate)
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
    // A chart is rendered whole where an Application deploys it: when any of its files is
    // needed (its folder is a source in scope, or a file of it changed), all are read, so
    // that what it renders points where a full run points.
    let charts = crate::discover::chart_dirs(&files);
    let needed: foldhash::HashSet<PathBuf> = files
        .iter()
        .zip(&want)
        .filter(|(_, &w)| w)
        .filter_map(|(p, _)| crate::discover::chart_of(&charts, p))
        .map(std::path::Path::to_path_buf)
        .collect();
    let chart_wanted: Vec<bool> = files
        .iter()
        .map(|p| {
            !needed.is_empty()
                && crate::discover::chart_of(&charts, p).is_some_and(|c| needed.contains(c))
        })
        .collect();
    drop(charts);
    let turns = files
        .into_par_iter()
        .zip(stamps)
        .zip(first)
        .zip(want)
        .zip(chart_wanted)
        .enumerate()
        .with_max_len(FILES_PER_TASK)
        .map(|(i, ((((path, stamp), first), want), chart))| (i, path, stamp, first, want || chart))
        .map(|(i, path, stamp, first, want)| match (want, first) {
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
    if crate::discover::is_chart_template(&path) {
        return template(path, bytes);
    }
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
    // A hidden file that does not parse is a tool's settings unless it names Argo CD's API.
    let not_manifest = if templated && !argo {
        Some(SkipReason::Template)
    } else if broken && crate::discover::is_hidden(&path) && !names_argo_api(&text) {
        Some(SkipReason::Hidden)
    } else {
        None
    };
    if let Some(reason) = not_manifest {
        return FileResult {
            source: SourceFile::new(path, text),
            docs: FileDocs::default(),
            problems: Vec::new(),
            redactions: Vec::new(),
            skip: Some(reason),
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
    if let Some(file) = &opts.config.policies_cut {
        summary.skipped.push((
            file.clone(),
            SkipReason::PolicyLimit {
                policies: crate::policy::MAX_POLICIES,
            },
        ));
    }
    summary
        .phases
        .push(("discover", discovered, discovered_rss));
    summary.phases.push((
        "read, parse, recognise",
        started.elapsed() - discovered,
        peak_rss(opts),
    ));
    let markers = repo::Markers::trusted(opts.config.trusted.is_some());
    let mut roots: Vec<PathBuf> = opts
        .paths
        .iter()
        .map(|p| repo::find_root(p, markers))
        .collect();
    roots.sort();
    roots.dedup();
    let mut urls: Vec<String> = opts.repo_urls.clone();
    for root in &roots {
        urls.extend(repo::git_remotes(root));
    }
    Ok(assemble(results, summary, roots, urls, markers))
}

/// Parses files held in memory as if they had been read from disk under `root`, which is
/// never touched beyond what rendering looks up there (files that are not YAML). The same
/// stages as [`load()`] without discovery: for fuzzing and generated-input tests.
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
        repo::Markers::trusted(opts.config.trusted.is_some()),
    )
}

fn assemble(
    mut results: Vec<FileResult>,
    mut summary: Summary,
    roots: Vec<PathBuf>,
    urls: Vec<String>,
    markers: repo::Markers,
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
        repo: repo::Repo {
            roots,
            urls,
            markers,
        },
        clean,
    }
}
