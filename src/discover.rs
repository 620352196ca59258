//! Finds the files to lint: `.gitignore`-aware walk, include/exclude globs, size cap, and the
//! Helm chart templates that are not manifests.

use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Options {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub max_file_size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    TooLarge {
        size: u64,
        limit: u64,
    },
    HelmTemplate,
    Unreadable(String),
    NotAFile,
    /// Not needed to understand the changed files of a `--context` run.
    OutOfScope,
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
            SkipReason::HelmTemplate => write!(f, "Helm chart template (not rendered)"),
            SkipReason::Unreadable(e) => write!(f, "cannot be read: {e}"),
            SkipReason::NotAFile => write!(f, "not a regular file"),
            SkipReason::OutOfScope => write!(f, "not needed for the changed files"),
        }
    }
}

impl SkipReason {
    /// A short stable code for machine-readable output.
    pub fn code(&self) -> &'static str {
        match self {
            SkipReason::TooLarge { .. } => "too-large",
            SkipReason::HelmTemplate => "helm-template",
            SkipReason::Unreadable(_) => "unreadable",
            SkipReason::NotAFile => "not-a-file",
            SkipReason::OutOfScope => "out-of-scope",
        }
    }
}

#[derive(Debug, Default)]
pub struct Discovered {
    /// Files to read, sorted by path.
    pub files: Vec<PathBuf>,
    pub skipped: Vec<(PathBuf, SkipReason)>,
}

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
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    ) || crate::model::is_kustomization_file(path)
}

/// A file inside a chart's `templates/` folder: Go templates, not manifests.
fn is_helm_template(path: &Path) -> bool {
    path.ancestors().skip(1).any(|dir| {
        dir.file_name().is_some_and(|n| n == "templates")
            && dir
                .parent()
                .is_some_and(|chart| chart.join("Chart.yaml").is_file())
    })
}

fn clean(path: &Path) -> PathBuf {
    path.strip_prefix(".")
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

pub fn discover(roots: &[PathBuf], opts: &Options) -> Result<Discovered, String> {
    let filter = Filter::new(opts)?;
    let mut out = Discovered::default();
    for root in roots {
        let meta = std::fs::metadata(root).map_err(|e| format!("{}: {e}", root.display()))?;
        if meta.is_file() {
            // A file named on the command line is linted whatever its name.
            consider(&mut out, root.clone(), Some(meta.len()), opts);
            continue;
        }
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(true)
            .ignore(true)
            .parents(true)
            .require_git(false)
            .follow_links(false)
            .threads(rayon::current_num_threads())
            .build_parallel();
        // The walk runs on several threads; what it finds is sorted below, so the order does
        // not depend on their timing.
        let found = std::sync::Mutex::new(Discovered::default());
        walker.run(|| {
            let found = &found;
            let filter = &filter;
            Box::new(move |entry| {
                let mut local = Discovered::default();
                visit(entry, root, filter, opts, &mut local);
                if !local.files.is_empty() || !local.skipped.is_empty() {
                    let mut all = found.lock().unwrap_or_else(|e| e.into_inner());
                    all.files.append(&mut local.files);
                    all.skipped.append(&mut local.skipped);
                }
                ignore::WalkState::Continue
            })
        });
        let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
        out.files.append(&mut found.files);
        out.skipped.append(&mut found.skipped);
    }
    crate::paths::sort(&mut out.files);
    out.files.dedup();
    out.skipped.sort();
    out.skipped.dedup();
    Ok(out)
}

/// One entry of the walk: a manifest to read, a file to report as skipped, or nothing.
fn visit(
    entry: Result<ignore::DirEntry, ignore::Error>,
    root: &Path,
    filter: &Filter,
    opts: &Options,
    out: &mut Discovered,
) {
    let entry = match entry {
        Ok(e) => e,
        Err(err) => {
            let path = match &err {
                ignore::Error::WithPath { path, .. } => path.clone(),
                _ => root.to_path_buf(),
            };
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
    let rel = path.strip_prefix(root).unwrap_or(path);
    if !filter.accepts(rel) {
        return;
    }
    if !ft.is_file() {
        // Symlinks are not followed: they could leave the repository or loop.
        if !ft.is_symlink() {
            out.skipped.push((clean(path), SkipReason::NotAFile));
        }
        return;
    }
    // The size is checked when the file is read, on the open file: a stat here would be one
    // more system call per file.
    consider(out, path.to_path_buf(), None, opts);
}

fn consider(out: &mut Discovered, path: PathBuf, size: Option<u64>, opts: &Options) {
    let path = clean(&path);
    if is_helm_template(&path) {
        out.skipped.push((path, SkipReason::HelmTemplate));
    } else if let Some(size) = size.filter(|s| *s > opts.max_file_size) {
        out.skipped.push((
            path,
            SkipReason::TooLarge {
                size,
                limit: opts.max_file_size,
            },
        ));
    } else {
        out.files.push(path);
    }
}
