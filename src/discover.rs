//! Finds the files to lint: `.gitignore`-aware walk, include/exclude globs, size cap, and the
//! Helm chart templates that are not manifests.

use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// Files larger than this are skipped unless `--max-file-size` says otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 8 * 1024 * 1024;
/// Files one run reads at most; past it, the rest (in path order) are skipped.
pub const MAX_FILES: usize = 200_000;
/// Bytes one run reads at most, all files together; past it, the rest (in path order) are
/// skipped. Parsed trees take ten to twenty times the text, so this keeps a run within a few
/// gigabytes of memory.
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Clone, Debug)]
pub struct Options {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub max_file_size: u64,
    /// The run's ceilings: [`MAX_FILES`] and [`MAX_TOTAL_BYTES`] unless a test needs less.
    pub max_files: usize,
    pub max_total_bytes: u64,
    /// Honour `.gitignore` and `.ignore` files found in the tree. Under a trusted config they
    /// are not: the change under review writes them, and Argo CD deploys what Git holds
    /// whatever they say.
    pub ignore_files: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_files: MAX_FILES,
            max_total_bytes: MAX_TOTAL_BYTES,
            ignore_files: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    TooLarge {
        size: u64,
        limit: u64,
    },
    HelmTemplate,
    /// Outside a chart's `templates/`, a file that only a template engine could make YAML of
    /// (an unquoted `{{ }}` breaks it) and that is no Argo CD object.
    Template,
    Unreadable(String),
    NotAFile,
    /// Past the run's ceiling on files or bytes.
    RunLimit {
        files: usize,
        bytes: u64,
    },
    /// Past the run's budget of nodes parsed ([`crate::yaml::ParseLimits::run_nodes`]).
    RunNodes {
        nodes: usize,
    },
    /// A policy file whose policies, and those of the files after it, were not loaded: the
    /// config reached its ceiling on policies.
    PolicyLimit {
        policies: usize,
    },
    /// Not needed to understand the changed files of a `--context` run.
    OutOfScope,
    /// Below a hidden folder or hidden itself, not YAML, and no Argo CD object: a tool's
    /// settings (`.devcontainer/devcontainer.json` with comments, say), which Argo CD would
    /// fail on too if an Application deployed it.
    Hidden,
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::TooLarge { size, limit } => {
                write!(
                    f,
                    "file is {size} bytes, over the {limit}-byte limit (--max-file-size)"
                )
            }
            SkipReason::HelmTemplate => {
                write!(
                    f,
                    "a Helm chart's template: not a manifest, rendered with its chart where an Application deploys it"
                )
            }
            SkipReason::Template => write!(
                f,
                "not YAML until a template engine renders its {{{{ }}}} (not a chart's template, \
                 not an Argo CD object); not checked"
            ),
            SkipReason::Unreadable(e) => write!(f, "cannot be read: {e}"),
            SkipReason::NotAFile => write!(f, "not a regular file"),
            SkipReason::RunLimit { files, bytes } => write!(
                f,
                "past the run's ceiling of {files} files or {bytes} bytes read in all"
            ),
            SkipReason::RunNodes { nodes } => write!(
                f,
                "past the run's budget of {nodes} YAML nodes parsed in all"
            ),
            SkipReason::PolicyLimit { policies } => write!(
                f,
                "past the ceiling of {policies} policies a repository may load: the policies from \
                 here on, in path order, were not loaded"
            ),
            SkipReason::OutOfScope => write!(f, "not needed for the changed files"),
            SkipReason::Hidden => write!(
                f,
                "a hidden file that is not YAML and names no Argo CD API (a tool's settings); not checked"
            ),
        }
    }
}

impl SkipReason {
    /// Every code [`SkipReason::code`] gives: names no policy may take as its id, since
    /// SARIF and JSON readers meet both.
    pub const CODES: [&'static str; 8] = [
        "too-large",
        "helm-template",
        "template",
        "unreadable",
        "not-a-file",
        "run-limit",
        "out-of-scope",
        "hidden",
    ];

    /// A short stable code for machine-readable output.
    pub fn code(&self) -> &'static str {
        match self {
            SkipReason::TooLarge { .. } => "too-large",
            SkipReason::HelmTemplate => "helm-template",
            SkipReason::Template => "template",
            SkipReason::Unreadable(_) => "unreadable",
            SkipReason::NotAFile => "not-a-file",
            SkipReason::RunLimit { .. }
            | SkipReason::RunNodes { .. }
            | SkipReason::PolicyLimit { .. } => "run-limit",
            SkipReason::OutOfScope => "out-of-scope",
            SkipReason::Hidden => "hidden",
        }
    }
}

#[derive(Debug, Default)]
pub struct Discovered {
    /// Files to read, sorted by path.
    pub files: Vec<PathBuf>,
    /// Each file's stamp, where the system gives one: what `--cache` checks entries against.
    pub stamps: Vec<Option<Stamp>>,
    pub skipped: Vec<(PathBuf, SkipReason)>,
}

/// What the walk finds, with each file's size for the run's ceiling.
#[derive(Debug, Default)]
struct Found {
    files: Vec<(PathBuf, u64, Option<Stamp>)>,
    skipped: Vec<(PathBuf, SkipReason)>,
    /// Regular files the walk found, to look at once it is done ([`consider`]).
    pending: Vec<PathBuf>,
}

/// A file to read, with its size and stamp, or one skipped and why.
type Considered = Result<(PathBuf, u64, Option<Stamp>), (PathBuf, SkipReason)>;

impl Found {
    fn add(&mut self, c: Considered) {
        match c {
            Ok(file) => self.files.push(file),
            Err(skip) => self.skipped.push(skip),
        }
    }
}

/// Files one task of the post-walk look at files takes: small, so that the threads end
/// together.
const FILES_PER_STAT_TASK: usize = 32;

pub struct Filter {
    include: Option<(GlobSet, GlobSet)>,
    exclude: (GlobSet, GlobSet),
}

/// Globs without a `/` match a file name anywhere; globs with one match the path below the root.
fn build_globs(globs: &[String]) -> Result<(GlobSet, GlobSet), String> {
    let mut names = GlobSetBuilder::new();
    let mut paths = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g.trim_start_matches("./"))
            .map_err(|e| format!("invalid glob `{g}`: {e}"))?;
        if g.contains('/') {
            paths.add(glob);
        } else {
            names.add(glob);
        }
    }
    let built = |b: GlobSetBuilder| b.build().map_err(|e| e.to_string());
    Ok((built(names)?, built(paths)?))
}

impl Filter {
    pub fn new(opts: &Options) -> Result<Filter, String> {
        Ok(Filter {
            include: if opts.include.is_empty() {
                None
            } else {
                Some(build_globs(&opts.include)?)
            },
            exclude: build_globs(&opts.exclude)?,
        })
    }

    fn matches(set: &(GlobSet, GlobSet), rel: &Path) -> bool {
        rel.file_name().is_some_and(|n| set.0.is_match(n)) || set.1.is_match(rel)
    }

    /// No include or exclude glob: every file is accepted, and its relative path is not needed.
    fn accepts_all(&self) -> bool {
        self.include.is_none() && self.exclude.0.is_empty() && self.exclude.1.is_empty()
    }

    fn accepts(&self, rel: &Path) -> bool {
        if Filter::matches(&self.exclude, rel) {
            return false;
        }
        self.include
            .as_ref()
            .is_none_or(|inc| Filter::matches(inc, rel))
    }
}

fn is_manifest_name(path: &Path) -> bool {
    matches!(
        crate::paths::extension(path),
        Some(b"yaml" | b"yml" | b"json")
    ) || is_kustomization_file(path)
}

/// Which directories are Helm charts, each asked of the file system once per run: a chart
/// holds many templates.
#[derive(Default)]
struct Charts(std::sync::Mutex<foldhash::HashMap<PathBuf, bool>>);

impl Charts {
    fn is_chart(&self, dir: &Path) -> bool {
        let known = self.lock().get(dir).copied();
        known.unwrap_or_else(|| {
            let chart = dir.join("Chart.yaml").is_file();
            self.lock().insert(dir.to_path_buf(), chart);
            chart
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, foldhash::HashMap<PathBuf, bool>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A file inside a chart's `templates/` folder: Go templates, not manifests.
    fn holds_template(&self, path: &Path) -> bool {
        // Most paths have no `templates` component at all; walking the ancestors of every file
        // costs more than this look at the bytes.
        static TEMPLATES: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"templates"));
        if TEMPLATES.find(crate::paths::bytes(path)).is_none() {
            return false;
        }
        path.ancestors().skip(1).any(|dir| {
            dir.file_name().is_some_and(|n| n == "templates")
                && dir.parent().is_some_and(|chart| self.is_chart(chart))
        })
    }
}

/// The folders of `files` that are Helm charts (they hold a `Chart.yaml` among `files`).
pub fn chart_dirs(files: &[PathBuf]) -> foldhash::HashSet<&Path> {
    files
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "Chart.yaml"))
        .filter_map(|p| p.parent())
        .collect()
}

/// The chart folder of `charts` ([`chart_dirs`]) that `path` is in, the nearest if nested;
/// for `Chart.yaml` itself its own folder.
pub fn chart_of<'c>(charts: &foldhash::HashSet<&'c Path>, path: &Path) -> Option<&'c Path> {
    if charts.is_empty() {
        return None;
    }
    path.ancestors()
        .skip(1)
        .take(64)
        .find_map(|dir| charts.get(dir).copied())
}

/// Whether `path` is in the `templates/` folder of a chart: Go templates, not manifests.
pub fn is_chart_template(path: &Path) -> bool {
    Charts::default().holds_template(path)
}

fn clean(path: &Path) -> PathBuf {
    let b = crate::paths::bytes(path);
    // Only a path that starts with a dot can start with a `.` component.
    if !b.starts_with(b".") {
        return path.to_path_buf();
    }
    // `./` and a plain rest, as the walk of `.` yields: the rest is what `strip_prefix` gives.
    // A rest that starts with `/` (`.//x`) would read as absolute: `Path` decides those.
    if let Some(rest) = b.strip_prefix(b"./").filter(|r| !r.starts_with(b"/")) {
        let rest = crate::paths::from_bytes(rest);
        if !rest.as_os_str().is_empty() && crate::paths::is_plain(&rest) {
            return rest;
        }
    }
    path.strip_prefix(".")
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

pub fn discover(roots: &[PathBuf], opts: &Options) -> Result<Discovered, String> {
    let filter = Filter::new(opts)?;
    let mut out = Found::default();
    for root in roots {
        let meta = std::fs::metadata(root).map_err(|e| format!("{}: {e}", root.display()))?;
        // A file name may come from the tree itself (a pre-commit hook passes the changed
        // files), and a symlink there can point anywhere: it is not read. A directory named on
        // the command line is the root the user chose, link or not.
        let link = std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink());
        if link && !meta.is_dir() {
            out.skipped.push((clean(root), SkipReason::NotAFile));
            continue;
        }
        if meta.is_file() {
            // A file named on the command line is linted whatever its name.
            out.add(consider(root.clone(), Some(&meta), opts));
            continue;
        }
        // Hidden files and folders are walked: Argo CD reads them in a directory source
        // (`getPotentiallyValidManifests` skips no dot name), so a change could otherwise hide
        // an Application from the linter in `.apps/` or `.app.yaml`.
        let walker = ignore::WalkBuilder::new(root)
            .hidden(false)
            .filter_entry(|entry| !is_own_or_git(entry.file_name()))
            .git_ignore(opts.ignore_files)
            .git_global(false)
            .git_exclude(true)
            .ignore(opts.ignore_files)
            .parents(opts.ignore_files)
            .require_git(false)
            .follow_links(false)
            .threads(rayon::current_num_threads())
            .build_parallel();
        // The walk runs on several threads; what it finds is sorted below, so the order does
        // not depend on their timing.
        let found = std::sync::Mutex::new(Found::default());
        walker.run(|| {
            let found = &found;
            let filter = &filter;
            Box::new(move |entry| {
                let mut local = Found::default();
                visit(entry, root, filter, &mut local);
                if !local.pending.is_empty() || !local.skipped.is_empty() {
                    let mut all = found.lock().unwrap_or_else(|e| e.into_inner());
                    all.pending.append(&mut local.pending);
                    all.skipped.append(&mut local.skipped);
                }
                ignore::WalkState::Continue
            })
        });
        let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
        out.pending.append(&mut found.pending);
        out.skipped.append(&mut found.skipped);
    }
    // Each file's metadata is read after the walk, spread evenly over the threads: during the
    // walk a directory's files all fall to the thread that lists it, and the last large
    // directory kept one thread reading metadata while the others waited.
    let (mut files, mut skipped): (Vec<_>, Vec<_>) = std::mem::take(&mut out.pending)
        .into_par_iter()
        .with_max_len(FILES_PER_STAT_TASK)
        .map(|path| {
            // Not followed: the walk saw a regular file, not a link, at this path. One that
            // became something else since is not read.
            let meta = std::fs::symlink_metadata(&path).ok();
            if meta.as_ref().is_some_and(|m| !m.is_file()) {
                return Err((clean(&path), SkipReason::NotAFile));
            }
            consider(path, meta.as_ref(), opts)
        })
        .partition_map(|c| match c {
            Ok(file) => rayon::iter::Either::Left(file),
            Err(skip) => rayon::iter::Either::Right(skip),
        });
    out.files.append(&mut files);
    out.skipped.append(&mut skipped);
    crate::paths::sort_dedup_by_path(&mut out.files, |(p, _, _)| p);
    // The ceiling is applied in path order, so which files fall past it does not depend on
    // the walk's threads. The sizes only add up, so the files it keeps are the first ones.
    let mut total: u64 = 0;
    let within = out
        .files
        .iter()
        .take(opts.max_files)
        .take_while(|(_, size, _)| {
            total = total.saturating_add(*size);
            total <= opts.max_total_bytes
        })
        .count();
    let past = out.files.split_off(within);
    out.skipped.extend(past.into_iter().map(|(path, _, _)| {
        let reason = SkipReason::RunLimit {
            files: opts.max_files,
            bytes: opts.max_total_bytes,
        };
        (path, reason)
    }));
    let (files, stamps) = out
        .files
        .into_par_iter()
        .map(|(path, _, stamp)| (path, stamp))
        .unzip();
    let mut kept = Discovered {
        files,
        stamps,
        skipped: out.skipped,
    };
    crate::paths::sort_by_path_then(&mut kept.skipped, |(p, _)| p);
    kept.skipped.dedup();
    Ok(kept)
}

/// Git's own data (never read as a manifest, in any spelling a file system may open as
/// `.git`: [`crate::paths::is_git_name`]) and this tool's config and policies, which are
/// settings, not manifests.
fn is_own_or_git(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    crate::paths::is_git_name(name)
        || name == b".gitops-lint"
        || crate::repo::CONFIG_FILES
            .iter()
            .any(|c| name == c.as_bytes())
}

/// Whether a path has a hidden component (a name that starts with a dot): tool settings live
/// there, and most of them are no manifest.
pub fn is_hidden(path: &Path) -> bool {
    path.components().any(|c| match c {
        std::path::Component::Normal(n) => n.as_encoded_bytes().first() == Some(&b'.'),
        _ => false,
    })
}

/// One entry of the walk: a manifest to look at once the walk is done, a file to report as
/// skipped, or nothing.
fn visit(
    entry: Result<ignore::DirEntry, ignore::Error>,
    root: &Path,
    filter: &Filter,
    out: &mut Found,
) {
    let entry = match entry {
        Ok(e) => e,
        Err(err) => {
            let path = error_path(&err).unwrap_or(root).to_path_buf();
            out.skipped
                .push((clean(&path), SkipReason::Unreadable(err.to_string())));
            return;
        }
    };
    let path = entry.path();
    let Some(ft) = entry.file_type() else {
        return;
    };
    if ft.is_dir() || !is_manifest_name(path) {
        return;
    }
    if !filter.accepts_all() && !filter.accepts(path.strip_prefix(root).unwrap_or(path)) {
        return;
    }
    if !ft.is_file() {
        // Symlinks are not followed: they could leave the repository or loop.
        if !ft.is_symlink() {
            out.skipped.push((clean(path), SkipReason::NotAFile));
        }
        return;
    }
    out.pending.push(path.to_path_buf());
}

/// The path an error of the walk is about, however deep the walk wrapped it.
fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        _ => None,
    }
}

/// A regular file found: read later, or skipped as too large. A chart's templates are read
/// too: rendered objects point into them.
fn consider(path: PathBuf, meta: Option<&std::fs::Metadata>, opts: &Options) -> Considered {
    let path = clean(&path);
    let size = meta.map(|m| m.len());
    if let Some(size) = size.filter(|s| *s > opts.max_file_size) {
        Err((
            path,
            SkipReason::TooLarge {
                size,
                limit: opts.max_file_size,
            },
        ))
    } else {
        Ok((path, size.unwrap_or(0), meta.and_then(Stamp::of)))
    }
}

/// What identifies one version of a file without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) mtime: (i64, i64),
    pub(crate) ctime: (i64, i64),
}

impl Stamp {
    #[cfg(unix)]
    pub fn of(m: &std::fs::Metadata) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Without change times a stamp cannot be trusted, so nothing is cached.
    #[cfg(not(unix))]
    pub fn of(_: &std::fs::Metadata) -> Option<Stamp> {
        None
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

pub fn is_kustomization_file(path: &Path) -> bool {
    kustomization_rank(path).is_some()
}

/// Where the file's name comes in kustomize's search order ([`KUSTOMIZATION_FILES`]), if it
/// is a kustomization file.
pub fn kustomization_rank(path: &Path) -> Option<usize> {
    let name = crate::paths::file_name(path)?;
    KUSTOMIZATION_FILES
        .iter()
        .position(|k| k.as_bytes() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_skip_code_is_listed() {
        let reasons = [
            SkipReason::TooLarge { size: 1, limit: 0 },
            SkipReason::HelmTemplate,
            SkipReason::Template,
            SkipReason::Unreadable(String::new()),
            SkipReason::NotAFile,
            SkipReason::OutOfScope,
        ];
        for r in &reasons {
            assert!(SkipReason::CODES.contains(&r.code()), "{}", r.code());
        }
        assert!(SkipReason::CODES.contains(&"run-limit"));
    }

    #[test]
    fn clean_drops_a_leading_dot_as_path_does() {
        for p in [
            ".",
            "./",
            "./x",
            ".//x",
            ".///x",
            "./a/b.yaml",
            "./a/./b",
            "./.x",
            "x",
            "./../x",
            "..x",
        ] {
            let path = Path::new(p);
            let expected = path.strip_prefix(".").unwrap_or(path);
            assert_eq!(clean(path), expected, "{p:?}");
        }
    }
}
