//! What fixes make of each file, and how the result reaches the disk.

use super::{apply_edits, Edit, Fix};
use crate::source::SourceDb;
use crate::yaml::{self, FileId, ParseLimits};
use std::path::{Path, PathBuf};

/// The text of `file` with the given fixes applied.
pub fn rewrite(text: &str, fixes: &[&Fix]) -> String {
    let mut edits: Vec<&Edit> = Vec::new();
    for fix in fixes {
        for e in &fix.edits {
            if !edits.contains(&e) {
                edits.push(e);
            }
        }
    }
    edits.sort_by_key(|e| e.span);
    apply_edits(text, &edits)
}

/// Why a rewritten file is refused: it must parse as cleanly as before, into as many
/// documents. A fix that breaks this is a bug in the fix, never something to write.
pub fn check(before: &str, after: &str) -> Result<(), String> {
    let limits = ParseLimits::default();
    let a = yaml::parse(0, before, limits);
    let b = yaml::parse(0, after, limits);
    if let Some(p) = b.problems.first() {
        return Err(p.message.clone());
    }
    if a.documents.len() != b.documents.len() {
        return Err(format!(
            "the file would have {} documents instead of {}",
            b.documents.len(),
            a.documents.len()
        ));
    }
    Ok(())
}

/// What `--fix` did to one file.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: PathBuf,
    /// The text as first read.
    pub before: String,
    pub after: String,
    /// `before` with its secret values masked: what a diff may show of it.
    pub before_shown: String,
    /// Rule ids of the findings fixed, one per finding.
    pub fixed: Vec<&'static str>,
}

/// What a `--fix` run did.
#[derive(Debug, Default)]
pub struct Fixed {
    pub changes: Vec<Change>,
    /// Fixes that could not be applied, and files that could not be written.
    pub problems: Vec<String>,
}

impl Fixed {
    pub fn count(&self) -> usize {
        self.changes.iter().map(|c| c.fixed.len()).sum()
    }

    /// A unified diff of every change, `a/` and `b/` prefixed as git writes them. `after_shown`
    /// gives a change's new text with its secret values masked: the diff is made of the masked
    /// texts, so that its context lines never carry a Secret's values.
    pub fn diff(&self, after_shown: impl Fn(&Change) -> String) -> String {
        let mut out = String::new();
        for c in &self.changes {
            let path = c.path.to_string_lossy().replace('\\', "/");
            // The header is one line whatever the file name holds.
            let path = crate::escape::visible(&path).into_owned();
            let (old, new) = if c.path.is_absolute() {
                (path.clone(), path)
            } else {
                (format!("a/{path}"), format!("b/{path}"))
            };
            let after = after_shown(c);
            let diff = similar::TextDiff::from_lines(&c.before_shown, &after);
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(&old, &new)
                    .to_string(),
            );
        }
        out
    }

    /// Writes every change; a file that changed on disk since it was read, or that cannot be
    /// written safely, is left alone and reported.
    pub fn write(&mut self) {
        let mut problems = Vec::new();
        self.changes.retain(|c| match write_change(c) {
            Ok(()) => true,
            Err(e) => {
                let path = c.path.display().to_string();
                problems.push(format!("{}: {e}; not fixed", crate::escape::visible(&path)));
                false
            }
        });
        self.problems.extend(problems);
    }
}

fn write_change(c: &Change) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(&c.path).map_err(|e| e.to_string())?;
    if !meta.file_type().is_file() {
        return Err("not a regular file (a symlink?)".into());
    }
    let now = std::fs::read(&c.path).map_err(|e| e.to_string())?;
    if now.starts_with(&[0xFF, 0xFE]) || now.starts_with(&[0xFE, 0xFF]) {
        return Err("the file is UTF-16: fixes are written to UTF-8 files only".into());
    }
    if now != c.before.as_bytes() {
        return Err("the file changed while it was being checked".into());
    }
    atomic_write(&c.path, c.after.as_bytes(), Some(meta.permissions()))
}

/// Writes through a temporary file in the same directory and a rename, so a reader never
/// sees half a file; the file keeps `permissions` when given.
///
/// The temporary file is created exclusively under a random name, so nothing already in the
/// directory (a symbolic link a pull request planted at a name it guessed, a file left by
/// another run) is followed, written or reused; the rename then replaces `path` itself, never
/// what a link there points to. A relative `path` whose directory is reached through a
/// symbolic link is refused: in CI the working directory is the checkout, whose links the
/// pull request chooses.
pub fn atomic_write(
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> Result<(), String> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Some(link) = linked_dir(dir) {
        return Err(format!(
            "{}: {} is a symbolic link; nothing is written through one",
            path.display(),
            link.display()
        ));
    }
    // The target's name stays readable in the temporary one; the random part is what matters.
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or("file".as_ref()));
    prefix.push(".gitops-lint-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).rand_bytes(12);
    // What a plain create gives (read-write for all, less the umask), not a temporary file's
    // owner-only default: the report or baseline is meant to be read by the rest of the job.
    #[cfg(unix)]
    if permissions.is_none() {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let written = builder.tempfile_in(dir).and_then(|mut tmp| {
        tmp.write_all(bytes)?;
        if let Some(p) = permissions {
            tmp.as_file().set_permissions(p)?;
        }
        tmp.persist(path).map(drop).map_err(|e| e.error)
    });
    written.map_err(|e| format!("{}: {e}", path.display()))
}

/// The first directory on a relative `dir`, walking down from the working directory, that is a
/// symbolic link.
fn linked_dir(dir: &Path) -> Option<PathBuf> {
    if dir.is_absolute() {
        return None;
    }
    let mut at = PathBuf::new();
    for part in dir.components() {
        at.push(part);
        if matches!(part, std::path::Component::Normal(_))
            && std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
        {
            return Some(at);
        }
    }
    None
}

/// Where fixes may write: the linted paths, as written and with symlinks resolved.
pub struct Linted {
    paths: Vec<PathBuf>,
    real: Vec<PathBuf>,
}

impl Linted {
    pub fn new(paths: &[PathBuf]) -> Linted {
        let paths: Vec<PathBuf> = paths.iter().map(|p| crate::paths::normalize(p)).collect();
        // Resolved once: every fixable file is compared with them.
        let real = paths
            .iter()
            .filter_map(|root| {
                let root = if root.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    root
                };
                root.canonicalize().ok()
            })
            .collect();
        Linted { paths, real }
    }
}

/// Whether a fix may edit `file`: parsed cleanly, and inside one of the linted paths.
pub fn editable(sources: &SourceDb, clean: &[bool], linted: &Linted, file: FileId) -> bool {
    if !clean.get(file as usize).copied().unwrap_or(false) {
        return false;
    }
    let path = crate::paths::normalize(&sources.get(file).path);
    if !linted.paths.iter().any(|root| path.starts_with(root)) {
        return false;
    }
    // A symlinked directory inside the tree may lead out of it.
    let Ok(file) = sources.get(file).path.canonicalize() else {
        return false;
    };
    linted.real.iter().any(|r| file.starts_with(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_since_it_was_read_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.yaml");
        std::fs::write(&path, "a: 2\n").unwrap();
        let mut fixed = Fixed {
            changes: vec![Change {
                path: path.clone(),
                before: "a: 1\n".into(),
                after: "a: 3\n".into(),
                before_shown: "a: 1\n".into(),
                fixed: vec!["r"],
            }],
            problems: Vec::new(),
        };
        fixed.write();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a: 2\n");
        assert!(fixed.changes.is_empty());
        assert!(fixed.problems[0].contains("changed while it was being checked"));
    }

    /// The names a writer could use are all taken by links to a file outside the directory:
    /// the pattern of earlier versions for this process, and the one the write uses now.
    #[test]
    fn planted_links_at_temporary_names_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let keys = outside.path().join("authorized_keys");
        std::fs::write(&keys, "ssh-ed25519 AAAA owner\n").unwrap();
        let target = dir.path().join("gitops-lint.sarif");
        let pid = std::process::id();
        let planted = [
            format!(".gitops-lint.sarif.gitops-lint-{pid}"),
            ".gitops-lint.sarif.gitops-lint-".to_string(),
        ];
        for name in &planted {
            std::os::unix::fs::symlink(&keys, dir.path().join(name)).unwrap();
        }
        // And the target itself.
        std::os::unix::fs::symlink(&keys, &target).unwrap();
        atomic_write(&target, b"{}", None).unwrap();
        assert_eq!(
            std::fs::read_to_string(&keys).unwrap(),
            "ssh-ed25519 AAAA owner\n"
        );
        let linked = std::fs::symlink_metadata(&target).unwrap().file_type();
        assert!(linked.is_file(), "the link was replaced, not followed");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
        // Nothing left behind but the planted links and the report.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !planted.contains(n))
            .collect();
        assert_eq!(names, ["gitops-lint.sarif"]);
        // A plain create's mode, not a temporary file's owner-only one.
        use std::os::unix::fs::PermissionsExt;
        let plain = outside.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&target), mode(&plain));
    }

    #[test]
    fn symlinks_are_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.yaml");
        std::fs::write(&target, "a: 1\n").unwrap();
        let link = dir.path().join("link.yaml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut fixed = Fixed {
            changes: vec![Change {
                path: link,
                before: "a: 1\n".into(),
                after: "a: 3\n".into(),
                before_shown: "a: 1\n".into(),
                fixed: vec!["r"],
            }],
            problems: Vec::new(),
        };
        fixed.write();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "a: 1\n");
        assert!(fixed.problems[0].contains("not a regular file"));
    }
}
