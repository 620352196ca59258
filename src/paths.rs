//! Path helpers every stage shares. A repository holds tens of thousands of paths, and
//! `Path`'s own comparison walks components one by one; these work on the bytes where that
//! gives the same answer.

use std::cmp::Ordering;
use std::path::{Component, Path, PathBuf};

/// The bytes of a path, for the byte-level helpers here and keys elsewhere.
pub fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

/// The directory a path given on the command line stands for: itself, or a file's parent.
/// A bare file name (`root.yaml`, as pre-commit names files at the top) has the empty path as
/// its parent, which cannot be resolved: it stands for the current directory.
pub fn dir_of(start: &Path) -> PathBuf {
    let dir = if start.is_file() {
        start.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        start.to_path_buf()
    };
    if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    }
}

/// The path whose [`bytes`] are `b`, for keys read back from storage.
pub fn from_bytes(b: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(b))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(b).into_owned())
    }
}

/// Whether the byte order of [`cmp_plain`] agrees with `Path`'s component order for `p`: true
/// unless a component is `.` or `..` or empty (a doubled or trailing separator).
pub fn is_plain(p: &Path) -> bool {
    let p = bytes(p);
    // With no trailing separator, every separator has a byte after it.
    p.first() != Some(&b'.')
        && p.last() != Some(&b'/')
        && memchr::memchr_iter(b'/', p).all(|i| !matches!(p.get(i + 1), Some(b'.' | b'/')))
}

/// `Path::file_name`, read off the bytes after the last separator when they are a plain name.
pub fn file_name(p: &Path) -> Option<&[u8]> {
    let b = bytes(p);
    let name = match memchr::memrchr(b'/', b) {
        Some(i) => &b[i + 1..],
        None => b,
    };
    match name {
        // A trailing separator or a `.`/`..` component: `Path` decides.
        b"" | b"." | b".." => p.file_name().map(|n| n.as_encoded_bytes()),
        _ => Some(name),
    }
}

/// `Path::extension`, on bytes.
pub fn extension(p: &Path) -> Option<&[u8]> {
    let name = file_name(p)?;
    match memchr::memrchr(b'.', name) {
        Some(i) if i > 0 => Some(&name[i + 1..]),
        _ => None,
    }
}

/// `Path::cmp` for two paths that are [`is_plain`], computed on bytes. Comparing components in
/// turn is the same as comparing the bytes with the separator ranked below every other byte
/// when no component is `.`, `..` or empty.
pub fn cmp_plain(a: &Path, b: &Path) -> Ordering {
    let (x, y) = (bytes(a), bytes(b));
    let n = x.len().min(y.len());
    let rank = |c: u8| if c == b'/' { 0 } else { c as u16 + 1 };
    // Paths in one repository share long prefixes: skip them a word at a time.
    let mut i = 0;
    while i + 8 <= n && x[i..i + 8] == y[i..i + 8] {
        i += 8;
    }
    match x[i..n].iter().zip(&y[i..n]).position(|(p, q)| p != q) {
        Some(j) => rank(x[i + j]).cmp(&rank(y[i + j])),
        None => x.len().cmp(&y.len()),
    }
}

/// `Path::cmp`: on bytes when the caller knows both paths are [`is_plain`], else as `Path` does.
pub fn cmp_if(plain: bool, a: &Path, b: &Path) -> Ordering {
    if plain {
        cmp_plain(a, b)
    } else {
        a.cmp(b)
    }
}

/// Sorts items by a path in `Path` order (on bytes when every path allows it, checked once
/// per path rather than once per comparison), then drops neighbours whose paths are equal,
/// keeping the spelling that sorts first on bytes (`a/./b` before `a/b`), whatever the thread
/// count.
pub fn sort_dedup_by_path<T: Send + Sync>(items: &mut Vec<T>, path: impl Fn(&T) -> &Path + Sync) {
    let plain = sort_then(items, &path, |_, _| Ordering::Equal);
    // Plain paths are equal exactly when their bytes are; `Path` equality parses components.
    if plain {
        items.dedup_by(|a, b| bytes(path(a)) == bytes(path(b)));
    } else {
        items.dedup_by(|a, b| path(a) == path(b));
    }
}

/// Sorts items in their own order where that order starts with a path (the `Path` order of
/// [`sort_dedup_by_path`] first, the items' own to break ties): for `(PathBuf, reason)` lists.
pub fn sort_by_path_then<T: Ord + Send + Sync>(items: &mut [T], path: impl Fn(&T) -> &Path + Sync) {
    sort_then(items, &path, T::cmp);
}

/// The sort of the three above: by path, then by `tie`. Says whether every path was plain.
fn sort_then<T: Send + Sync>(
    items: &mut [T],
    path: &(impl Fn(&T) -> &Path + Sync),
    tie: impl Fn(&T, &T) -> Ordering + Sync,
) -> bool {
    use rayon::prelude::*;
    // A repository's file list is sorted while every other thread waits for it.
    let plain = items.par_iter().all(|i| is_plain(path(i)));
    // Unstable, so equal items need an order of their own: the same path spelt two ways
    // (`Path` equality skips `.` components) is told apart by its bytes.
    items.par_sort_unstable_by(|a, b| {
        cmp_if(plain, path(a), path(b))
            .then_with(|| tie(a, b))
            .then_with(|| bytes(path(a)).cmp(bytes(path(b))))
    });
    plain
}

/// The deepest of `roots` that holds `path`, when roots nest.
pub fn deepest_root<'r>(roots: &'r [PathBuf], path: &Path) -> Option<&'r Path> {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.components().count())
        .map(PathBuf::as_path)
}

/// [`deepest_root`] for paths in normal form ([`normalize`]), on bytes: a root holds the
/// path when it begins it and ends where a component ends, and of those the deepest is the
/// longest.
pub fn deepest_normal_root<'r>(roots: &'r [PathBuf], path: &Path) -> Option<&'r Path> {
    let p = bytes(path);
    roots
        .iter()
        .filter(|r| starts_with_normal(p, bytes(r)))
        .max_by_key(|r| r.as_os_str().len())
        .map(PathBuf::as_path)
}

/// Bytes that are equal exactly when the paths are equal as `Path`s (component by component),
/// for maps keyed by path that hash bytes rather than components: a plain path's own, else
/// those of its components joined again.
pub fn key(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    if is_plain(path) {
        std::borrow::Cow::Borrowed(bytes(path))
    } else {
        let joined: PathBuf = path.components().collect();
        std::borrow::Cow::Owned(joined.into_os_string().into_encoded_bytes())
    }
}

/// Resolves `a/b/../c` without touching the file system; leading `..` are kept.
pub fn normalize(path: &Path) -> PathBuf {
    normalized(path).into_owned()
}

/// [`normalize`], borrowing `path` when it is in normal form already: most are.
pub fn normalized(path: &Path) -> std::borrow::Cow<'_, Path> {
    // Most paths are plain, and a plain path is in normal form.
    if is_plain(path) {
        return std::borrow::Cow::Borrowed(path);
    }
    let b = bytes(path);
    let clean = !b.starts_with(b"./")
        && b != b"."
        && !b.windows(2).any(|w| w == b"//")
        && !b
            .split(|&c| c == b'/')
            .skip(1)
            .any(|s| s == b"." || s == b"..")
        && !b.starts_with(b"../")
        && b != b".."
        && (b.len() <= 1 || b.last() != Some(&b'/'));
    if clean {
        return std::borrow::Cow::Borrowed(path);
    }
    std::borrow::Cow::Owned(by_components(path))
}

/// `Path::starts_with` for paths out of [`normalize`], on bytes: a prefix that ends where a
/// component ends.
pub fn starts_with_normal(p: &[u8], prefix: &[u8]) -> bool {
    prefix.is_empty()
        || (p.starts_with(prefix)
            && (p.len() == prefix.len() || p[prefix.len()] == b'/' || prefix.ends_with(b"/")))
}

/// `Path::parent` for paths out of [`normalize`], on bytes.
pub fn parent_normal(p: &[u8]) -> Option<&[u8]> {
    if p.is_empty() || p == b"/" {
        return None;
    }
    Some(match memchr::memrchr(b'/', p) {
        Some(0) => b"/",
        Some(i) => &p[..i],
        None => b"",
    })
}

/// `Path::parent` for a path out of [`normalize`], found on its bytes.
pub fn parent_of_normal(p: &Path) -> Option<&Path> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        parent_normal(bytes(p)).map(|b| Path::new(std::ffi::OsStr::from_bytes(b)))
    }
    #[cfg(not(unix))]
    {
        p.parent()
    }
}

/// [`normalize`] the long way, one component at a time.
fn by_components(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether `name`, one component of a path, names the folder where git keeps a checkout's
/// data (`.git`, which holds the CI job's token) on some file system the checkout may sit on:
/// compared as case-insensitive file systems compare names (macOS, Windows), after what NTFS
/// drops from the end of a name (dots, spaces, a `:stream` suffix) and the code points HFS+
/// ignores, and as the short name Windows gives it (`GIT~1`). Over-matching on a file system
/// that keeps such names apart costs a folder no GitOps repository needs.
pub fn is_git_name(name: &[u8]) -> bool {
    // Every spelling holds the letters g, i, t, ASCII or not.
    if name.len() < 4 || memchr::memchr2(b'g', b'G', name).is_none() {
        return false;
    }
    let kept: Vec<u8>;
    let mut n = name;
    if !n.is_ascii() {
        let Ok(text) = std::str::from_utf8(n) else {
            return false;
        };
        kept = text
            .chars()
            .filter(|c| !hfs_ignored(*c))
            .collect::<String>()
            .into_bytes();
        n = &kept;
    }
    if let Some(colon) = memchr::memchr(b':', n) {
        n = &n[..colon];
    }
    while let [rest @ .., b'.' | b' '] = n {
        n = rest;
    }
    n.eq_ignore_ascii_case(b".git") || n.eq_ignore_ascii_case(b"git~1")
}

/// The code points HFS+ leaves out when it compares names.
fn hfs_ignored(c: char) -> bool {
    matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// Whether a path (its bytes, relative, `..` already resolved) has a component
/// [`is_git_name`] accepts. `\` separates components too: it does on Windows.
pub fn names_git(rel: &[u8]) -> bool {
    rel.split(|b| *b == b'/' || *b == b'\\').any(is_git_name)
}

/// Whether `real`, a path with every link on it resolved, lies below `real_root` (resolved
/// too) in a repository's git data: under a component [`is_git_name`] accepts, or in a folder
/// git would take for its data (`HEAD` beside `objects`, `refs` or `commondir`), which is what
/// a `.git` file (a submodule, a worktree) points to, wherever it sits. Only metadata is read.
/// `real_root` itself is the caller's to choose and is not looked at; a path not below it is
/// not answered here.
pub fn in_git_data(real: &Path, real_root: &Path) -> bool {
    let Ok(rel) = real.strip_prefix(real_root) else {
        return false;
    };
    if names_git(bytes(rel)) {
        return true;
    }
    let mut dir = real_root.to_path_buf();
    rel.components().any(|c| {
        dir.push(c);
        is_git_dir(&dir)
    })
}

/// Whether git would take `dir` for a repository's data: its `HEAD` file, with the object
/// store and refs beside it or (a worktree's) a pointer to them.
pub fn is_git_dir(dir: &Path) -> bool {
    let there = |name: &str| std::fs::symlink_metadata(dir.join(name));
    there("HEAD").is_ok_and(|m| !m.is_dir())
        && ["objects", "refs", "commondir"]
            .iter()
            .any(|n| there(n).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: &[&str] = &[
        "",
        ".",
        "..",
        "a",
        "a/b",
        "a-b",
        "a/b/c",
        "a.b",
        "a/.b",
        "a/./b",
        "a//b",
        "a/b/",
        "/a",
        "/",
        "../a",
        "a/..",
        "a/../b",
        "./a",
        "ab",
        "a b",
        "a/b-c",
        "a/b/c.yaml",
        "a/bc",
        "a0/b",
        "a/B",
        "é/a",
        "a/é",
        "a/b.yaml",
        "a/b/.x",
        "..a/b",
        "a/..b",
        // Longer than a word, sharing prefixes of every length around it.
        "services/svc-0001",
        "services/svc-0001/base",
        "services/svc-0001/base/x.yaml",
        "services/svc-0001-x/a",
        "services/svc-00010/a",
        "services/svc-0001.x/a",
        "services/svc-0001/overlays/prod/kustomization.yaml",
        "services/svc-0001/overlays/prod-eu/kustomization.yaml",
        "services/svc-0001/overlays/prod/kustomization.yml",
        "services/svc-0002",
        "servicesX/svc-0001",
        "service/svc-0001",
    ];

    #[test]
    fn byte_order_agrees_with_path_order_on_plain_paths() {
        let plain: Vec<&Path> = SAMPLES
            .iter()
            .map(Path::new)
            .filter(|p| is_plain(p))
            .collect();
        assert!(plain.len() > SAMPLES.len() / 2, "{plain:?}");
        for a in &plain {
            for b in &plain {
                assert_eq!(cmp_plain(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
        for irregular in ["a/./b", "a//b", "a/b/", "./a", "../a", "a/..", "."] {
            assert!(!is_plain(Path::new(irregular)), "{irregular}");
        }
    }

    #[test]
    fn byte_prefix_and_parent_agree_with_path_on_normal_paths() {
        let normal: Vec<PathBuf> = SAMPLES.iter().map(|s| normalize(Path::new(s))).collect();
        for a in &normal {
            assert_eq!(
                parent_normal(bytes(a)),
                a.parent().map(bytes),
                "parent of {a:?}"
            );
            for b in &normal {
                assert_eq!(
                    starts_with_normal(bytes(a), bytes(b)),
                    a.starts_with(b),
                    "{a:?} starts with {b:?}"
                );
            }
        }
    }

    #[test]
    fn keys_are_equal_exactly_when_paths_are() {
        for a in SAMPLES.iter().map(Path::new) {
            for b in SAMPLES.iter().map(Path::new) {
                assert_eq!(key(a) == key(b), a == b, "{a:?} vs {b:?}");
            }
        }
        assert_eq!(key(Path::new("a//b/./c/")), key(Path::new("a/b/c")));
        let odd = ["//a", "./", "/./a", "//", "./a", ".", "", "/", "a/", "/a"];
        for a in odd.iter().map(Path::new) {
            for b in odd.iter().chain(SAMPLES).map(Path::new) {
                assert_eq!(key(a) == key(b), a == b, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn deepest_root_agrees_on_normal_paths() {
        let normal: Vec<PathBuf> = SAMPLES.iter().map(|s| normalize(Path::new(s))).collect();
        // Every pair and triple of roots, nested or not, against every path.
        for (i, a) in normal.iter().enumerate() {
            for (j, b) in normal.iter().enumerate().skip(i) {
                for c in normal.iter().skip(j) {
                    let roots = [a.clone(), b.clone(), c.clone()];
                    for p in &normal {
                        assert_eq!(
                            deepest_normal_root(&roots, p),
                            deepest_root(&roots, p),
                            "{p:?} in {roots:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn name_and_extension_agree_with_path() {
        let extra = [
            ".yaml",
            "a/.yaml",
            "a/b.",
            "a/kustomization.yaml/",
            "a/b/.",
            "a/b/..",
            "x.tar.gz",
            "a/.b.yml",
        ];
        for s in SAMPLES.iter().chain(&extra) {
            let p = Path::new(s);
            assert_eq!(
                file_name(p),
                p.file_name().map(|n| n.as_encoded_bytes()),
                "{s:?}"
            );
            assert_eq!(
                extension(p),
                p.extension().map(|n| n.as_encoded_bytes()),
                "{s:?}"
            );
        }
    }

    #[test]
    fn sorting_and_dedup_agree_with_path_order_and_equality() {
        for extra in [None, Some("a//b")] {
            let mut items: Vec<&Path> = SAMPLES.iter().chain(SAMPLES).map(Path::new).collect();
            items.extend(extra.map(Path::new));
            let mut expected = items.clone();
            expected.sort();
            expected.dedup();
            sort_dedup_by_path(&mut items, |p| p);
            assert_eq!(items, expected);
        }
    }

    #[test]
    fn normalize_agrees_with_component_walk() {
        for s in SAMPLES {
            let p = Path::new(s);
            assert_eq!(normalize(p), by_components(p), "{s:?}");
        }
    }

    #[test]
    fn every_spelling_of_the_git_folder_is_one() {
        for name in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git. . ",
            ".git::$INDEX_ALLOCATION",
            ".git:stream",
            "GIT~1",
            "git~1",
            ".g\u{200c}it",
            "\u{feff}.git",
            ".gi\u{206f}t",
        ] {
            assert!(is_git_name(name.as_bytes()), "{name:?}");
        }
        for name in [
            "",
            "git",
            ".gitignore",
            ".github",
            "x.git",
            ".git-crypt",
            "git~2",
            ".gitx",
            "..",
            ".",
            "gİt",
            ".gıt",
        ] {
            assert!(!is_git_name(name.as_bytes()), "{name:?}");
        }
        assert!(names_git(b"a/.GIT/config"));
        assert!(names_git(b".git"));
        assert!(names_git(b"a\\.git\\config"));
        assert!(!names_git(b"a/.github/workflows/ci.yaml"));
        assert!(!names_git(b"repo.git/config"));
    }

    #[test]
    fn git_data_is_found_by_name_and_by_shape() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let make = |p: &str| {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        };
        make(".git/config");
        make("meta/HEAD");
        std::fs::create_dir_all(root.join("meta/objects")).unwrap();
        make("apps/HEAD");
        make("apps/web.yaml");
        assert!(in_git_data(&root.join(".git/config"), &root));
        assert!(in_git_data(&root.join(".git"), &root));
        assert!(in_git_data(&root.join("meta/config"), &root));
        assert!(in_git_data(&root.join("meta"), &root));
        assert!(!in_git_data(&root.join("apps/web.yaml"), &root));
        assert!(!in_git_data(&root.join("apps"), &root));
        // The root is the caller's choice; outside it nothing is answered.
        assert!(!in_git_data(&root.join("meta"), &root.join("meta")));
        assert!(!in_git_data(Path::new("/elsewhere/.git"), &root));
    }
}
