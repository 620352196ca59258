//! Which repository is being linted: its root, and the URLs Argo CD would use for it.

use std::path::{Path, PathBuf};

pub const CONFIG_FILES: [&str; 2] = [".gitops-lint.yaml", ".gitops-lint.yml"];

/// The repositories the linted paths belong to (usually one).
#[derive(Clone, Debug, Default)]
pub struct Repo {
    /// Each root as the user would write it (relative when they gave a relative path).
    pub roots: Vec<PathBuf>,
    /// Normalised URLs that mean "this repository".
    pub urls: Vec<String>,
    /// What marked the roots, and so whether a folder below one can be a repository of its own.
    pub markers: Markers,
}

/// What marks a repository's root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Markers {
    /// The nearest folder up with a config file or `.git`: one tree may hold several
    /// repositories (examples, fixtures), each with its own config.
    #[default]
    ConfigOrGit,
    /// The git top level only, under a trusted config: a config file the change under review
    /// plants in a subfolder must not move the root that the trusted globs (`per-path`, a
    /// policy's `match.paths`) are relative to, split the repository in two, or hide its git
    /// remotes. Without any `.git` above, the nearest config or `.git` as before.
    GitTop,
}

impl Markers {
    /// The markers of a run: [`Markers::GitTop`] when a trusted config is in force.
    pub fn trusted(trusted: bool) -> Markers {
        if trusted {
            Markers::GitTop
        } else {
            Markers::ConfigOrGit
        }
    }
}

impl Repo {
    /// `path` relative to the root that holds it, for display.
    pub fn relative(&self, path: &Path) -> String {
        let rel = self
            .roots
            .iter()
            .map(|r| crate::paths::normalize(r))
            .filter(|r| path.starts_with(r))
            .max_by_key(|r| r.components().count())
            .and_then(|r| path.strip_prefix(r).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf());
        match rel.display().to_string() {
            s if s.is_empty() => ".".to_string(),
            s => s,
        }
    }
}

/// `https://GitHub.com/org/repo.git/`, `git@github.com:org/repo` and `ssh://git@github.com/org/repo`
/// are one repository to Argo CD; this is the form they are compared in.
pub fn normalize_url(url: &str) -> String {
    let mut u = url.trim().to_string();
    for scheme in ["https://", "http://", "ssh://", "git://", "git+ssh://"] {
        if let Some(rest) = u.strip_prefix(scheme) {
            u = rest.to_string();
            break;
        }
    }
    // user@host:org/repo (scp-like) and user@host/org/repo
    if let Some(at) = u.find('@') {
        if !u[..at].contains('/') {
            u = u[at + 1..].to_string();
        }
    }
    if let Some(colon) = u.find(':') {
        let (host, rest) = u.split_at(colon);
        let rest = &rest[1..];
        // host:port/org or host:org
        let rest = match rest.split_once('/') {
            Some((port, tail)) if port.chars().all(|c| c.is_ascii_digit()) => tail,
            _ => rest,
        };
        u = format!("{host}/{rest}");
    }
    let u = u.trim_end_matches('/');
    let u = u.strip_suffix(".git").unwrap_or(u);
    match u.split_once('/') {
        Some((host, path)) => format!("{}/{path}", host.to_ascii_lowercase()),
        None => u.to_ascii_lowercase(),
    }
}

/// The nearest directory at or above `start` that `markers` make a root, written relative to
/// `start` the way the user wrote it. Without one, `start` itself (or its directory, for a
/// file).
pub fn find_root(start: &Path, markers: Markers) -> PathBuf {
    let base = crate::paths::dir_of(start);
    let Ok(abs) = base.canonicalize() else {
        return base;
    };
    let walk = |is: &dyn Fn(&Path) -> bool| {
        let mut written = base.clone();
        for dir in abs.ancestors() {
            if is(dir) {
                return Some(written);
            }
            written = written.join("..");
        }
        None
    };
    let found = match markers {
        Markers::GitTop => walk(&is_git_top).or_else(|| walk(&is_root)),
        Markers::ConfigOrGit => walk(&is_root),
    };
    found.unwrap_or(base)
}

/// Whether `dir` is the top level of a git working tree: it holds a `.git` folder, or a `.git`
/// file of a linked worktree. A submodule's `.git` file (its git directory under the enclosing
/// repository's `modules/`) is not one: a change can add a submodule, and its folder is still
/// part of the repository being checked.
fn is_git_top(dir: &Path) -> bool {
    let dot_git = dir.join(".git");
    let Ok(meta) = std::fs::metadata(&dot_git) else {
        return false;
    };
    if meta.is_dir() {
        return true;
    }
    // `gitdir: <path>`, a line; anything longer is not a git file.
    if !meta.is_file() || meta.len() > 4096 {
        return false;
    }
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return false;
    };
    let Some(target) = text.trim().strip_prefix("gitdir:") else {
        return false;
    };
    !Path::new(target.trim())
        .components()
        .any(|c| c.as_os_str() == "modules")
}

/// Whether `dir` is a repository root: it holds a config file or `.git`.
pub fn is_root(dir: &Path) -> bool {
    CONFIG_FILES.iter().any(|f| dir.join(f).is_file()) || dir.join(".git").exists()
}

/// The nearest repository root at or above a file, found by walking the path as written (no
/// file system lookups beyond the markers); the empty path when none is found. Under
/// [`Markers::GitTop`] no folder below a root is a repository of its own: the deepest of the
/// run's roots that holds the file.
pub fn root_of_file(
    file: &Path,
    repo: &Repo,
    cache: &mut foldhash::HashMap<PathBuf, PathBuf>,
) -> PathBuf {
    let Some(dir) = file.parent() else {
        return PathBuf::new();
    };
    if let Some(r) = cache.get(dir) {
        return r.clone();
    }
    if repo.markers == Markers::GitTop {
        let roots: Vec<PathBuf> = repo
            .roots
            .iter()
            .map(|r| crate::paths::normalize(r))
            .collect();
        let found = crate::paths::deepest_normal_root(&roots, &crate::paths::normalize(dir))
            .map(Path::to_path_buf)
            .unwrap_or_default();
        cache.insert(dir.to_path_buf(), found.clone());
        return found;
    }
    let mut walked = Vec::new();
    let mut found = PathBuf::new();
    for d in dir.ancestors() {
        if let Some(r) = cache.get(d) {
            found = r.clone();
            break;
        }
        walked.push(d.to_path_buf());
        let probe = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        if is_root(probe) {
            found = d.to_path_buf();
            break;
        }
    }
    for d in walked {
        cache.insert(d, found.clone());
    }
    found
}

/// Remote URLs from `.git/config` under `root`.
pub fn git_remotes(root: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(root.join(".git").join("config")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut in_remote = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_remote = line.starts_with("[remote ");
            continue;
        }
        if in_remote {
            if let Some((k, v)) = line.split_once('=') {
                if k.trim() == "url" {
                    out.push(v.trim().to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize_url;

    #[test]
    fn spellings_of_one_repository_agree() {
        let want = "github.com/example/fleet";
        for url in [
            "https://github.com/example/fleet.git",
            "https://GitHub.com/example/fleet/",
            "git@github.com:example/fleet.git",
            "ssh://git@github.com/example/fleet",
            "ssh://git@github.com:22/example/fleet.git",
            "http://github.com/example/fleet",
        ] {
            assert_eq!(normalize_url(url), want, "{url}");
        }
        assert_ne!(normalize_url("https://github.com/example/other.git"), want);
    }
}
