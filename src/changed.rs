//! The files of a git working tree that differ from a revision, for `--changed-since REF`.
//!
//! Everything happens in-process with gitoxide (`gix`): no `git` program is run and the
//! network is never touched. The revision is resolved to a commit, the blobs of its tree
//! below the linted root are listed, and each file of the working tree is hashed as a git blob
//! and compared with them.
//!
//! What counts as changed is what `git diff REV` (tracked files) plus `git status`'s untracked
//! files would name, limited to regular files below the root:
//!
//! - a file whose content differs from the revision's blob at the same path, or that is a
//!   regular file now and was a symlink or submodule then;
//! - a file missing from the revision (added, committed since or not), untracked ones
//!   included, unless `.gitignore`, `.git/info/exclude` or the global excludes file ignores it
//!   and the index does not track it;
//! - deleted files are not listed; symlinks are never listed (they are not followed), nor are
//!   files inside nested repositories or submodules;
//! - a change of mode alone (the executable bit) is not a change of content and is not listed.
//!
//! # Limitations
//!
//! - The working tree file is hashed as it is on disk. Git's conversions between the
//!   repository and the working tree (`core.autocrlf`/`text`/`eol` line endings, `ident`,
//!   `filter` drivers such as Git LFS, `working-tree-encoding`) are not applied, so such a
//!   file has a different blob id and is reported as changed even when git would call it clean.
//!   That errs on the safe side: a file is linted too often, never silently skipped.
//! - Files larger than [`MAX_HASHED_SIZE`] are not read; they are reported as changed.
//! - Unreadable files are reported as changed, so the lint itself reports them.
//! - `.gitattributes`, sparse checkouts and the index's stat cache are not consulted.
//! - Only SHA-1 repositories are supported (gix is built with its `sha1` feature only).

use foldhash::{HashMap, HashSet};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::ObjectId;
use rayon::prelude::*;

/// Files larger than this are not hashed but reported as changed.
pub const MAX_HASHED_SIZE: u64 = 50 * 1024 * 1024;

const SHALLOW_HINT: &str = "the history may not be fetched: in a shallow clone (actions/checkout \
     fetches one commit by default) fetch it all with `fetch-depth: 0`, or fetch the revision first";

/// Files under `root` whose content differs from revision `rev` (a branch, tag, commit or any
/// rev-parse expression such as `origin/main` or `HEAD~1`): modified and added files of the
/// working tree, relative paths joined onto `root` as written (e.g. root "." → "apps/x.yaml",
/// root "repo" → "repo/apps/x.yaml"). Deleted files are not listed. Untracked files count as
/// added. Files ignored by .gitignore are not listed.
///
/// The result is sorted and free of duplicates. See the module documentation for what counts
/// as a change and for the limitations (line-ending conversions and filters are not applied).
pub fn changed_since(root: &Path, rev: &str) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(root).map_err(|e| format!("{}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: not a directory", root.display()));
    }
    let repo = gix::discover(root).map_err(|e| {
        format!(
            "--changed-since needs a git repository, but {} is not inside one: {}",
            root.display(),
            describe(&e)
        )
    })?;
    let workdir = repo.workdir().ok_or_else(|| {
        format!(
            "{}: the repository at {} is bare, it has no working tree to compare",
            root.display(),
            repo.git_dir().display()
        )
    })?;
    let prefix = prefix_in_workdir(root, workdir)?;

    let base = base_entries(&repo, rev, prefix.as_bstr())?;
    let hash_kind = repo.object_hash();

    // Every regular file git would look at: those the walk finds (not ignored), plus the
    // tracked ones the walk skipped because an ignore rule matches them (git still diffs them).
    let mut candidates: BTreeSet<BString> = walk(root)?;
    let mut tracked: HashSet<BString> = base.keys().cloned().collect();
    tracked.extend(index_paths(&repo, prefix.as_bstr()));
    for rel in tracked {
        if !candidates.contains(&rel) && is_regular_file(&root.join(to_path(rel.as_bstr()))) {
            candidates.insert(rel);
        }
    }

    let mut changed: Vec<PathBuf> = candidates
        .into_par_iter()
        .filter(|rel| {
            let path = root.join(to_path(rel.as_bstr()));
            match base.get(rel) {
                Some(Base::Blob(id)) => blob_id(&path, hash_kind).as_ref() != Some(id),
                // Added, or a symlink/submodule that became a regular file.
                Some(Base::Other) | None => true,
            }
        })
        .map(|rel| clean(&root.join(to_path(rel.as_bstr()))))
        .collect();
    changed.sort();
    changed.dedup();
    Ok(changed)
}

/// What the revision holds at a path.
enum Base {
    /// A regular or executable file with this blob id.
    Blob(ObjectId),
    /// A symlink or a submodule.
    Other,
}

/// Where `root` sits in the working tree, as a `/`-separated path ("" for the top).
fn prefix_in_workdir(root: &Path, workdir: &Path) -> Result<BString, String> {
    let canon = |p: &Path| {
        p.canonicalize()
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let abs_root = canon(root)?;
    let abs_work = canon(workdir)?;
    let rel = abs_root.strip_prefix(&abs_work).map_err(|_| {
        format!(
            "{} is not inside the working tree {} of its repository",
            root.display(),
            workdir.display()
        )
    })?;
    if rel
        .components()
        .next()
        .is_some_and(|c| c.as_os_str() == ".git")
    {
        return Err(format!("{} is inside the .git directory", root.display()));
    }
    Ok(unix_path(rel))
}

/// `rev`'s tree, with errors that say what to do about a shallow clone.
fn revision_tree<'r>(
    repo: &'r gix::Repository,
    rev: &str,
) -> Result<(Revision, gix::Tree<'r>), String> {
    let shallow = repo.is_shallow().unwrap_or(false);
    let id = repo.rev_parse_single(rev).map_err(|e| {
        let hint = if shallow {
            "this is a shallow clone: fetch the history with actions/checkout's `fetch-depth: 0` \
             (or `git fetch --unshallow`)"
                .to_string()
        } else {
            format!("check the name; {SHALLOW_HINT}")
        };
        format!("cannot resolve revision '{rev}': {}; {hint}", describe(&e))
    })?;
    let r = Revision {
        rev: rev.to_string(),
        id: id.detach(),
        shallow,
    };
    let object = id.object().map_err(|e| r.missing("its object", e))?;
    let tree = object
        .peel_to_tree()
        .map_err(|e| r.missing("its tree (is it a commit, tag or tree?)", e))?;
    Ok((r, tree))
}

/// A resolved revision, for messages.
struct Revision {
    rev: String,
    id: ObjectId,
    shallow: bool,
}

impl Revision {
    fn missing(&self, what: &str, e: impl Into<gix::Error>) -> String {
        let e = e.into();
        let hint = if e.is_not_found() || self.shallow {
            format!("; {SHALLOW_HINT}")
        } else {
            String::new()
        };
        format!(
            "revision '{}' ({}): cannot read {what}: {}{hint}",
            self.rev,
            self.id,
            describe(&e)
        )
    }
}

/// The blobs, symlinks and submodules of `rev`'s tree below `prefix`, keyed by their path
/// relative to `prefix`.
fn base_entries(
    repo: &gix::Repository,
    rev: &str,
    prefix: &BStr,
) -> Result<HashMap<BString, Base>, String> {
    let (r, tree) = revision_tree(repo, rev)?;
    let missing = |what: &str, e: gix::Error| r.missing(what, e);
    let tree = if prefix.is_empty() {
        tree
    } else {
        match tree
            .lookup_entry_by_path(to_path(prefix))
            .map_err(|e| missing("its tree", e))?
        {
            Some(entry) if entry.mode().is_tree() => entry
                .object()
                .map_err(|e| missing("a tree", e))?
                .into_tree(),
            // The root did not exist as a directory then: everything in it is added.
            _ => return Ok(HashMap::default()),
        }
    };
    let records = tree
        .traverse()
        .breadthfirst
        .files()
        .map_err(|e| missing("its trees", e))?;
    Ok(records
        .into_iter()
        .filter(|r| !r.mode.is_tree())
        .map(|r| {
            let base = if r.mode.is_blob() {
                Base::Blob(r.oid)
            } else {
                Base::Other
            };
            (r.filepath, base)
        })
        .collect())
}

/// A config file as a revision holds it.
pub struct ConfigAtRevision {
    /// `REV:path/.gitops-lint.yaml`, for messages.
    pub name: String,
    /// Where the file's directory is in the working tree, written as the linted path is.
    pub dir: PathBuf,
    pub text: String,
}

/// The regular files a revision's tree holds, by their place in the working tree: what a
/// config read from a revision (`--trusted-config-rev`) reads its policy files from, so that
/// a change under review cannot rewrite them either. Blobs are read when asked for.
pub struct Snapshot {
    repo: gix::Repository,
    rev: String,
    /// The working tree's top, absolute.
    top: PathBuf,
    /// Absolute working-tree path → blob, for the regular files of the tree.
    blobs: std::collections::BTreeMap<PathBuf, ObjectId>,
}

/// Files a snapshot lists at most: past it the rest of the tree is not seen.
const MAX_SNAPSHOT_FILES: usize = 200_000;

impl Snapshot {
    /// The tree of `rev` in the repository that holds `start`.
    pub fn at(start: &Path, rev: &str) -> Result<Snapshot, String> {
        let base = crate::paths::dir_of(start);
        let repo = gix::discover(&base).map_err(|e| {
            format!(
                "{} is not inside a git repository: {}",
                base.display(),
                describe(&e)
            )
        })?;
        let workdir = repo
            .workdir()
            .ok_or_else(|| format!("the repository at {} is bare", repo.git_dir().display()))?;
        // Written as queries will be (absolute, lexically), not resolved through links.
        let top =
            crate::paths::normalize(&std::path::absolute(workdir).map_err(|e| e.to_string())?);
        let blobs = base_entries(&repo, rev, BStr::new(""))?
            .into_iter()
            .filter_map(|(path, base)| match base {
                Base::Blob(id) => Some((top.join(to_path(path.as_bstr())), id)),
                Base::Other => None,
            })
            .take(MAX_SNAPSHOT_FILES)
            .collect();
        Ok(Snapshot {
            repo,
            rev: rev.to_string(),
            top,
            blobs,
        })
    }

    /// `path` (as the working tree writes it) absolute and without `.` or `..`: how the
    /// snapshot knows it. Nothing on disk is looked at.
    pub fn key(&self, path: &Path) -> PathBuf {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        crate::paths::normalize(&abs)
    }

    /// Whether the revision holds a regular file at `path`.
    pub fn is_file(&self, path: &Path) -> bool {
        self.blobs.contains_key(&self.key(path))
    }

    /// The regular files below the directory `dir`, sorted.
    pub fn files_below(&self, dir: &Path) -> Vec<PathBuf> {
        let dir = self.key(dir);
        self.blobs
            .range(dir.clone()..)
            .map(|(p, _)| p)
            .take_while(|p| p.starts_with(&dir))
            .filter(|p| *p != &dir)
            .cloned()
            .collect()
    }

    /// `path` as messages name it: `REV:path/in/the/tree`.
    pub fn name(&self, path: &Path) -> PathBuf {
        let key = self.key(path);
        let rel = key.strip_prefix(&self.top).unwrap_or(&key);
        PathBuf::from(format!("{}:{}", self.rev, rel.display()))
    }

    /// The text of the file at `path`, if it is at most `limit` bytes of UTF-8.
    pub fn read(&self, path: &Path, limit: u64) -> Result<String, String> {
        let id = self
            .blobs
            .get(&self.key(path))
            .ok_or_else(|| "the revision holds no such file".to_string())?;
        let size = self.repo.find_header(*id).map_err(|e| describe(&e))?.size();
        if size > limit {
            return Err(format!(
                "{size} bytes, more than the {limit} a policy file may have"
            ));
        }
        let blob = self.repo.find_object(*id).map_err(|e| describe(&e))?;
        String::from_utf8(blob.data.clone()).map_err(|_| "the file is not UTF-8".to_string())
    }
}

/// Config files larger than this are refused rather than read.
pub const MAX_CONFIG_SIZE: u64 = 1024 * 1024;

/// The config file that revision `rev` holds for `start`: the first of
/// [`crate::repo::CONFIG_FILES`] in the directory of `start` or the nearest one above it
/// up to the top of the working tree, as `config::find` looks for it on disk. `None` when the
/// revision has none; symlinks and submodules there do not count.
pub fn config_at(start: &Path, rev: &str) -> Result<Option<ConfigAtRevision>, String> {
    let base = crate::paths::dir_of(start);
    let repo = gix::discover(&base).map_err(|e| {
        format!(
            "--trusted-config-rev needs a git repository, but {} is not inside one: {}",
            base.display(),
            describe(&e)
        )
    })?;
    let workdir = repo.workdir().ok_or_else(|| {
        format!(
            "the repository at {} is bare, it has no working tree",
            repo.git_dir().display()
        )
    })?;
    let mut prefix = prefix_in_workdir(&base, workdir)?;
    let (r, tree) = revision_tree(&repo, rev)?;
    let mut written = base.clone();
    loop {
        for name in crate::repo::CONFIG_FILES {
            let rel = if prefix.is_empty() {
                BString::from(name)
            } else {
                let mut p = prefix.clone();
                p.push(b'/');
                p.extend_from_slice(name.as_bytes());
                p
            };
            let found = tree
                .lookup_entry_by_path(to_path(rel.as_bstr()))
                .map_err(|e| r.missing("its tree", e))?;
            let Some(entry) = found.filter(|e| e.mode().is_blob()) else {
                continue;
            };
            let shown = format!("{rev}:{rel}");
            let size = repo
                .find_header(entry.object_id())
                .map_err(|e| r.missing(&rel.to_string(), e))?
                .size();
            if size > MAX_CONFIG_SIZE {
                return Err(format!(
                    "{shown}: {size} bytes, more than a config file may have ({MAX_CONFIG_SIZE})"
                ));
            }
            let blob = entry.object().map_err(|e| r.missing(&rel.to_string(), e))?;
            let text = String::from_utf8(blob.data.clone())
                .map_err(|_| format!("{shown}: the config file is not UTF-8"))?;
            return Ok(Some(ConfigAtRevision {
                name: shown,
                dir: crate::paths::normalize(&written),
                text,
            }));
        }
        if prefix.is_empty() {
            return Ok(None);
        }
        prefix = match prefix.rfind_byte(b'/') {
            Some(i) => prefix[..i].into(),
            None => BString::default(),
        };
        written = written.join("..");
    }
}

/// The regular files the index tracks below `prefix`, relative to it. They matter only for
/// files committed after the revision (or staged) that an ignore rule also matches, so an
/// unreadable index is no reason to fail: the walk finds everything else.
fn index_paths(repo: &gix::Repository, prefix: &BStr) -> Vec<BString> {
    let Ok(index) = repo.index_or_empty() else {
        return Vec::new();
    };
    index
        .entries()
        .iter()
        .filter(|e| e.mode.to_tree_entry_mode().is_some_and(|m| m.is_blob()))
        .filter_map(|e| strip_dir_prefix(e.path(&index), prefix).map(BString::from))
        .collect()
}

/// `path` relative to the directory `prefix` ("" for the top), if it is below it.
fn strip_dir_prefix<'a>(path: &'a BStr, prefix: &BStr) -> Option<&'a BStr> {
    if prefix.is_empty() {
        return Some(path);
    }
    let rest = path.strip_prefix(prefix.as_bytes())?;
    rest.strip_prefix(b"/").map(|r| r.as_bstr())
}

/// The regular files below `root` that git does not ignore, relative to `root`.
fn walk(root: &Path) -> Result<BTreeSet<BString>, String> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            // Git does not descend into nested repositories and submodules.
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir && entry.depth() > 0 && entry.path().join(".git").exists())
        })
        .build();
    let mut files = BTreeSet::new();
    for entry in walker {
        let entry = entry.map_err(|e| format!("walking {}: {e}", root.display()))?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        files.insert(unix_path(rel));
    }
    Ok(files)
}

/// The git blob id of the file's content as it is on disk, or `None` when it cannot be
/// hashed (unreadable, too large): such files count as changed.
fn blob_id(path: &Path, kind: gix::hash::Kind) -> Option<ObjectId> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_HASHED_SIZE {
        return None;
    }
    let data = std::fs::read(path).ok()?;
    gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &data).ok()
}

fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// A relative path with `/` separators, as git's trees write it. (Only a path that is not
/// Unicode on Windows fails to convert; it is written lossily and so counts as added.)
fn unix_path(rel: &Path) -> BString {
    let mut out = BString::default();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        match gix::path::os_str_into_bstr(c.as_os_str()) {
            Ok(bytes) => out.extend_from_slice(bytes),
            Err(_) => out.extend_from_slice(c.as_os_str().to_string_lossy().as_bytes()),
        }
    }
    out
}

/// A `/`-separated relative path as a native one.
fn to_path(rel: &BStr) -> PathBuf {
    match gix::path::from_bstr(rel) {
        Ok(path) => path.into_owned(),
        Err(_) => PathBuf::from(rel.to_str_lossy().into_owned()),
    }
}

/// Written plainly: `apps/x.yaml` rather than `./apps/x.yaml`, as discovery writes paths.
fn clean(path: &Path) -> PathBuf {
    path.strip_prefix(".")
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// A gix error with its causes on one line.
fn describe(e: &gix::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}
