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

/// The nearest directory at or above `start` that holds a config file or `.git`, written
/// relative to `start` the way the user wrote it. Without one, `start` itself (or its
/// directory, for a file).
pub fn find_root(start: &Path) -> PathBuf {
    let base = crate::paths::dir_of(start);
    let Ok(abs) = base.canonicalize() else {
        return base;
    };
    let mut written = base.clone();
    for dir in abs.ancestors() {
        if is_root(dir) {
            return written;
        }
        written = written.join("..");
    }
    base
}

/// Whether `dir` is a repository root: it holds a config file or `.git`.
pub fn is_root(dir: &Path) -> bool {
    CONFIG_FILES.iter().any(|f| dir.join(f).is_file()) || dir.join(".git").exists()
}

/// The nearest repository root at or above a file, found by walking the path as written (no
/// file system lookups beyond the markers); the empty path when none is found.
pub fn root_of_file(file: &Path, cache: &mut foldhash::HashMap<PathBuf, PathBuf>) -> PathBuf {
    let Some(dir) = file.parent() else {
        return PathBuf::new();
    };
    if let Some(r) = cache.get(dir) {
        return r.clone();
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
