//! What the first look at each file found ([`Seen`]), kept between `--context` runs when
//! `--cache` asks for it, so that a pre-commit run reads only the files it needs rather than
//! every file of the repository.
//!
//! An entry is trusted only while the file's stamp (device, inode, size, modification and
//! change times) is what it was when the entry was made. Files changed in the last
//! [`SETTLE_SECS`] seconds are not stored: a write within the same clock tick as the look
//! would leave the stamp as it was. The change time cannot be set back by tools such as
//! `touch`, so a restored modification time does not hide an edit. This trusts the file
//! system's times to follow the local clock to within those seconds: a network or shared
//! folder whose clock lags further, or one that reports fixed times, can hide an edit that
//! keeps the size.
//!
//! The cache lives outside the linted tree (under `$XDG_CACHE_HOME/gitops-lint` by default),
//! one file per combination of linter build, working directory, roots and parse limits. A file
//! that cannot be read or decoded is treated as empty; one that cannot be written is left
//! alone. Neither changes what a run reports. Files no run has written for a month are removed.

use crate::discover::Stamp;
use crate::scope::{Argo, Seen, Source};
use crate::yaml::ParseLimits;
use foldhash::HashMap;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bumped whenever what is stored, or how [`Seen`] is computed, changes meaning.
const FORMAT: u32 = 7;
const MAGIC: &[u8; 8] = b"GLCACHE\0";
/// Seconds a file must have been left alone before its look is stored.
pub const SETTLE_SECS: i64 = 2;
/// Cache files left unwritten this long are removed by the next run that writes one.
const KEEP_DAYS: i64 = 30;
/// A cache file larger than this is not read.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Whether the file was left alone long enough ([`SETTLE_SECS`]) for its look to be stored.
fn settled(stamp: &Stamp, now: i64) -> bool {
    stamp.mtime.0.saturating_add(SETTLE_SECS) < now
        && stamp.ctime.0.saturating_add(SETTLE_SECS) < now
}

/// Where `--cache` keeps its files when no directory is given.
pub fn default_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })
        .map(|d| d.join("gitops-lint"))
}

pub struct Cache {
    file: PathBuf,
    key: String,
    now: i64,
    entries: HashMap<Vec<u8>, (Stamp, Seen)>,
}

impl Cache {
    /// The cache for this run in `dir`, with what an earlier run stored (nothing if there is no
    /// usable file).
    pub fn open(dir: &Path, roots: &[PathBuf], limits: &ParseLimits) -> Cache {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .ok()
            .and_then(|m| Stamp::of(&m));
        let cwd = std::env::current_dir().unwrap_or_default();
        let key = format!(
            "gitops-lint {} cache {FORMAT}\nexe {exe:?}\ncwd {}\nroots {roots:?}\nlimits {limits:?}\n",
            env!("CARGO_PKG_VERSION"),
            cwd.display(),
        );
        let digest = Sha256::digest(key.as_bytes());
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let file = dir.join(format!("{name}.bin"));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let entries = read(&file)
            .and_then(|bytes| decode(&bytes, &key))
            .unwrap_or_default();
        Cache {
            file,
            key,
            now,
            entries,
        }
    }

    /// What the first look at `path` found, if its stamp has not changed since.
    pub fn get(&self, path: &Path, stamp: Option<Stamp>) -> Option<&Seen> {
        let stamp = stamp?;
        self.entries
            .get(crate::paths::bytes(path))
            .filter(|(s, _)| *s == stamp)
            .map(|(_, seen)| seen)
    }

    /// Stores this run's looks, if they differ from what the cache holds. `looks` yields each
    /// file's stamp, its look, and whether that look came from this cache.
    pub fn save<'a>(&self, looks: impl Iterator<Item = (&'a Path, Option<Stamp>, &'a Seen, bool)>) {
        let kept: Vec<(&Path, Stamp, &Seen, bool)> = looks
            .filter_map(|(path, stamp, seen, hit)| {
                let stamp = stamp.filter(|s| hit || settled(s, self.now))?;
                Some((path, stamp, seen, hit))
            })
            .collect();
        // Nothing new and nothing gone: the file already says all this.
        if kept.iter().all(|k| k.3) && kept.len() == self.entries.len() {
            return;
        }
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        put_bytes(&mut out, self.key.as_bytes());
        put_u64(&mut out, kept.len() as u64);
        for (path, stamp, seen, _) in kept {
            put_path(&mut out, path);
            put_stamp(&mut out, &stamp);
            put_seen(&mut out, seen);
        }
        let dir = self.file.parent().unwrap_or(Path::new("."));
        if std::fs::create_dir_all(dir).is_ok() {
            // A cache that cannot be written only costs the next run its speed.
            let _ = crate::fix::apply::atomic_write(&self.file, &out, None);
            self.forget_old(dir);
        }
    }

    /// Removes the cache files no run has written for [`KEEP_DAYS`]: those of earlier builds of
    /// the linter, and of repositories no longer linted.
    fn forget_old(&self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let oldest = self.now.saturating_sub(KEEP_DAYS * 24 * 3600);
        for entry in entries.flatten() {
            let path = entry.path();
            // Only files this cache writes: a hex name, and the cache's own first bytes.
            let named = path.extension().is_some_and(|e| e == "bin")
                && path.file_stem().and_then(|s| s.to_str()).is_some_and(|s| {
                    s.len() == 32
                        && s.bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                });
            let ours = named && starts_with_magic(&path);
            let written = entry
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs() as i64);
            if ours && path != self.file && written.is_some_and(|w| w < oldest) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

fn starts_with_magic(file: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; MAGIC.len()];
    std::fs::File::open(file)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

fn read(file: &Path) -> Option<Vec<u8>> {
    crate::source::read_limited(file, MAX_BYTES).ok()
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_path(out: &mut Vec<u8>, p: &Path) {
    put_bytes(out, crate::paths::bytes(p));
}

fn put_stamp(out: &mut Vec<u8>, s: &Stamp) {
    for v in [s.dev, s.ino, s.size] {
        put_u64(out, v);
    }
    for (secs, nanos) in [s.mtime, s.ctime] {
        put_u64(out, secs as u64);
        put_u64(out, nanos as u64);
    }
}

fn put_seen(out: &mut Vec<u8>, seen: &Seen) {
    match seen {
        Seen::Other => out.push(0),
        Seen::Kustomization(dir, refs) => {
            out.push(1);
            put_path(out, dir);
            put_u64(out, refs.len() as u64);
            for r in refs {
                put_path(out, r);
            }
        }
        Seen::Argo(a) => {
            out.push(2);
            out.push(
                u8::from(a.objects)
                    | u8::from(a.always) << 1
                    | u8::from(a.global) << 2
                    | u8::from(a.params) << 3,
            );
            put_u64(out, a.sources.len() as u64);
            for s in &a.sources {
                put_path(out, &s.dir);
                out.push(u8::from(s.recurse) | u8::from(s.prefix) << 1);
            }
            for globs in [&a.dir_globs, &a.file_globs] {
                put_u64(out, globs.len() as u64);
                for g in globs {
                    put_bytes(out, g.as_bytes());
                }
            }
        }
    }
}

/// Reads what [`Cache::save`] wrote; `None` at the first thing out of place.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    /// A count of items that each take at least `min` bytes: never more than the rest holds,
    /// so a corrupt count cannot make a huge allocation.
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.rest.len() / min.max(1)).then_some(n)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.count(1)?;
        self.take(n)
    }

    fn path(&mut self) -> Option<PathBuf> {
        Some(crate::paths::from_bytes(self.bytes()?))
    }

    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }

    fn stamp(&mut self) -> Option<Stamp> {
        Some(Stamp {
            dev: self.u64()?,
            ino: self.u64()?,
            size: self.u64()?,
            mtime: (self.u64()? as i64, self.u64()? as i64),
            ctime: (self.u64()? as i64, self.u64()? as i64),
        })
    }

    fn seen(&mut self) -> Option<Seen> {
        Some(match self.u8()? {
            0 => Seen::Other,
            1 => {
                let dir = self.path()?;
                let n = self.count(8)?;
                let refs = (0..n).map(|_| self.path()).collect::<Option<_>>()?;
                Seen::Kustomization(dir, refs)
            }
            2 => {
                let flags = self.u8()?;
                let n = self.count(9)?;
                let sources = (0..n)
                    .map(|_| {
                        let dir = self.path()?;
                        let flags = self.u8()?;
                        Some(Source {
                            dir,
                            recurse: flags & 1 != 0,
                            prefix: flags & 2 != 0,
                        })
                    })
                    .collect::<Option<_>>()?;
                let mut globs = || -> Option<Vec<String>> {
                    let n = self.count(8)?;
                    (0..n).map(|_| self.string()).collect()
                };
                let dir_globs = globs()?;
                let file_globs = globs()?;
                Seen::Argo(Argo {
                    sources,
                    dir_globs,
                    file_globs,
                    objects: flags & 1 != 0,
                    always: flags & 2 != 0,
                    global: flags & 4 != 0,
                    params: flags & 8 != 0,
                })
            }
            _ => return None,
        })
    }
}

fn decode(bytes: &[u8], key: &str) -> Option<HashMap<Vec<u8>, (Stamp, Seen)>> {
    let mut r = Reader { rest: bytes };
    if r.take(MAGIC.len())? != MAGIC || r.bytes()? != key.as_bytes() {
        return None;
    }
    let n = r.count(8 + 56 + 1)?;
    // A count is only a hint: a damaged one must not reserve gigabytes.
    let mut entries =
        HashMap::with_capacity_and_hasher(n.min(crate::discover::MAX_FILES), Default::default());
    for _ in 0..n {
        let path = r.bytes()?.to_vec();
        let stamp = r.stamp()?;
        let seen = r.seen()?;
        entries.insert(path, (stamp, seen));
    }
    r.rest.is_empty().then_some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn looks() -> Vec<(PathBuf, Stamp, Seen)> {
        let stamp = |n: u64| Stamp {
            dev: 1,
            ino: n,
            size: 10 * n,
            mtime: (100, 5),
            ctime: (100, 7),
        };
        vec![
            (PathBuf::from("a.yaml"), stamp(1), Seen::Other),
            (
                PathBuf::from("k/kustomization.yaml"),
                stamp(2),
                Seen::Kustomization("k".into(), vec!["base".into(), "k/p.yaml".into()]),
            ),
            (
                PathBuf::from("apps/x.yaml"),
                stamp(3),
                Seen::Argo(Argo {
                    sources: vec![Source {
                        dir: "services/x".into(),
                        recurse: true,
                        prefix: true,
                    }],
                    dir_globs: vec!["services/*".into()],
                    file_globs: vec![],
                    objects: true,
                    always: false,
                    global: true,
                    params: true,
                }),
            ),
        ]
    }

    fn cache(dir: &Path) -> Cache {
        Cache::open(dir, &[PathBuf::from(".")], &ParseLimits::default())
    }

    #[test]
    fn what_is_saved_is_found_while_the_stamp_holds() {
        let dir = tempfile::tempdir().unwrap();
        let looks = looks();
        cache(dir.path()).save(
            looks
                .iter()
                .map(|(p, s, seen)| (p.as_path(), Some(*s), seen, false)),
        );
        let back = cache(dir.path());
        for (path, stamp, seen) in &looks {
            assert_eq!(back.get(path, Some(*stamp)), Some(seen));
            let mut touched = *stamp;
            touched.ctime.1 += 1;
            assert_eq!(back.get(path, Some(touched)), None);
            assert_eq!(back.get(path, None), None);
        }
        assert_eq!(back.get(Path::new("other.yaml"), Some(looks[0].1)), None);
    }

    #[test]
    fn recent_changes_are_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path());
        let mut looks = looks();
        looks[1].1.ctime.0 = c.now - 1;
        c.save(
            looks
                .iter()
                .map(|(p, s, seen)| (p.as_path(), Some(*s), seen, false)),
        );
        let back = cache(dir.path());
        assert!(back.get(&looks[0].0, Some(looks[0].1)).is_some());
        assert!(back.get(&looks[1].0, Some(looks[1].1)).is_none());
    }

    #[test]
    fn old_cache_files_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let month_ago = SystemTime::now() - std::time::Duration::from_secs(31 * 24 * 3600);
        let make = |name: &str, old: bool| {
            let path = dir.path().join(name);
            let file = std::fs::File::create(&path).unwrap();
            if old {
                file.set_modified(month_ago).unwrap();
            }
            path
        };
        let stale = make(&format!("{}.bin", "a".repeat(32)), true);
        std::fs::write(&stale, MAGIC).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(month_ago)
            .unwrap();
        let recent = make(&format!("{}.bin", "b".repeat(32)), false);
        std::fs::write(&recent, MAGIC).unwrap();
        // Old, but not this cache's: another tool's file, hex-named or not.
        let other = make("notes.bin", true);
        let foreign = make(&format!("{}.bin", "c".repeat(32)), true);
        let not_hex = make(&format!("{}.bin", "z".repeat(32)), true);
        let looks = looks();
        cache(dir.path()).save(
            looks
                .iter()
                .map(|(p, s, seen)| (p.as_path(), Some(*s), seen, false)),
        );
        assert!(!stale.exists());
        assert!(recent.exists() && other.exists() && foreign.exists() && not_hex.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
    }

    #[test]
    fn a_damaged_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let looks = looks();
        let c = cache(dir.path());
        c.save(
            looks
                .iter()
                .map(|(p, s, seen)| (p.as_path(), Some(*s), seen, false)),
        );
        let good = std::fs::read(&c.file).unwrap();
        for cut in 0..good.len() {
            assert!(decode(&good[..cut], &c.key).is_none(), "cut at {cut}");
        }
        let mut flipped = good.clone();
        for i in 0..flipped.len() {
            flipped[i] ^= 0xff;
            // Any outcome but a panic or a huge allocation; most flips are refused.
            let _ = decode(&flipped, &c.key);
            flipped[i] ^= 0xff;
        }
        assert!(decode(&good, "another key").is_none());
    }
}
