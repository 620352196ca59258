//! A chart archive (`charts/NAME-VERSION.tgz`, a gzip'd tar) read into memory as Helm reads it
//! (helm v3.17.2 `pkg/chart/loader/archive.go`, `LoadArchiveFiles`): every entry below the
//! archive's top folder, with Helm's checks on names. Nothing is written to disk, a link entry
//! is an empty file (Go's tar reader gives no data for one), and `.helmignore` does not apply:
//! `helm package` applied it when the archive was made.

use std::io::Read;

/// A reader that fails past a number of bytes: what bounds the work a compressed archive can
/// ask for, whatever its headers declare.
pub(super) struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells a stream that ends exactly at the bound from one past it.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(TOO_LARGE)),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

const TOO_LARGE: &str = "the archive unpacks to more bytes than a chart may hold";

/// Why an archive was refused: Helm refuses it too, or it is past a chart's bounds.
#[derive(Debug)]
pub(super) enum Refused {
    Invalid(String),
    Limit(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Invalid(m) | Refused::Limit(m) => f.write_str(m),
        }
    }
}

impl From<std::io::Error> for Refused {
    fn from(e: std::io::Error) -> Refused {
        let message = e.to_string();
        if message == TOO_LARGE {
            Refused::Limit(message)
        } else {
            Refused::Invalid(message)
        }
    }
}

impl From<String> for Refused {
    fn from(message: String) -> Refused {
        Refused::Invalid(message)
    }
}

/// Tar type flags whose entries Go's tar reader gives no data for (`isHeaderOnlyType`).
const HEADER_ONLY: &[u8] = b"12345";

/// The files of a chart: name relative to the chart with `/`, bytes.
pub(super) type FileList = Vec<(String, Vec<u8>)>;

/// The files of a chart archive, by name below its top folder, in archive order, and the
/// bytes unpacked. `max_bytes` bounds the unpacked stream (headers included); `max_files`
/// the entries.
pub(super) fn files(
    data: &[u8],
    max_bytes: u64,
    max_files: usize,
) -> Result<(FileList, u64), Refused> {
    let mut capped = Capped {
        inner: flate2::read::MultiGzDecoder::new(data),
        left: max_bytes,
    };
    let mut archive = tar::Archive::new(&mut capped);
    let entries = archive.entries()?;
    let mut out: FileList = Vec::new();
    let mut count = 0usize;
    for entry in entries {
        let mut entry = entry?;
        count += 1;
        if count > max_files {
            return Err(Refused::Limit(format!(
                "the archive holds more than {max_files} entries; not rendered"
            )));
        }
        let header = entry.header();
        let flag = header.entry_type().as_byte();
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        // Go reads a `/`-ended name of a pre-POSIX archive as a folder, and so does its
        // `FileInfo().IsDir()` a folder mode.
        let mode = header.mode().unwrap_or(0);
        let is_dir =
            flag == b'5' || (flag == 0 && raw_name.ends_with('/')) || mode & 0o170000 == 0o040000;
        if is_dir || flag == b'g' || flag == b'x' {
            continue;
        }
        let name = entry_name(&raw_name)?;
        let mut bytes = Vec::new();
        if !HEADER_ONLY.contains(&flag) {
            entry.read_to_end(&mut bytes)?;
        }
        if bytes.starts_with(b"\xEF\xBB\xBF") {
            bytes.drain(..3);
        }
        out.push((name, bytes));
    }
    if out.is_empty() {
        return Err("no files in chart archive".to_string().into());
    }
    Ok((out, max_bytes - capped.left))
}

/// The name of an entry below the archive's top folder, refused as Helm refuses it.
fn entry_name(raw: &str) -> Result<String, String> {
    let delimiter = if raw.contains('\\') { '\\' } else { '/' };
    let mut parts = raw.split(delimiter);
    let top = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    let joined = rest.join("/");
    if joined.starts_with('/') {
        return Err("chart illegally contains absolute paths".to_string());
    }
    let n = clean(&joined);
    if n == "." {
        return Err(format!(
            "chart illegally contains content outside the base directory: {raw:?}"
        ));
    }
    if n.starts_with("..") {
        return Err("chart illegally references parent directory".to_string());
    }
    let b = n.as_bytes();
    if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
        return Err("chart contains illegally named files".to_string());
    }
    if top == "Chart.yaml" {
        return Err("chart yaml not in base directory".to_string());
    }
    Ok(n)
}

/// Go's `path.Clean` for a relative path.
fn clean(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    if out.is_empty() {
        ".".to_string()
    } else {
        out.join("/")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::io::Write;

    /// A gzip'd tar holding `entries` (name, type flag, data), names written as given.
    pub(in crate::render::helm) fn tgz(entries: &[(&str, u8, &[u8])]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, flag, data) in entries {
            let mut h = [0u8; 512];
            h[..name.len()].copy_from_slice(name.as_bytes());
            h[100..107].copy_from_slice(b"0000644");
            h[108..115].copy_from_slice(b"0000000");
            h[116..123].copy_from_slice(b"0000000");
            h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
            h[136..147].copy_from_slice(b"00000000000");
            h[156] = *flag;
            h[257..263].copy_from_slice(b"ustar\0");
            h[263..265].copy_from_slice(b"00");
            h[148..156].copy_from_slice(b"        ");
            let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
            h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
            tar.extend_from_slice(&h);
            tar.extend_from_slice(data);
            tar.resize(tar.len().div_ceil(512) * 512, 0);
        }
        tar.resize(tar.len() + 1024, 0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn entries_below_the_top_folder_are_the_chart() {
        let data = tgz(&[
            ("dep/", b'5', b""),
            ("dep/Chart.yaml", b'0', b"name: dep\n"),
            ("dep/templates/a.yaml", b'0', b"\xEF\xBB\xBFkind: A\n"),
            ("dep/templates/link.yaml", b'2', b""),
        ]);
        let (files, used) = files(&data, 1 << 20, 100).unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["Chart.yaml", "templates/a.yaml", "templates/link.yaml"]
        );
        assert_eq!(files[1].1, b"kind: A\n");
        assert!(files[2].1.is_empty());
        assert!(used > 0);
    }

    #[test]
    fn hostile_archives_fail_cleanly() {
        let parent = tgz(&[("dep/../../etc/passwd", b'0', b"x")]);
        assert_eq!(
            files(&parent, 1 << 20, 100).unwrap_err().to_string(),
            "chart illegally references parent directory"
        );
        let absolute = tgz(&[("dep//etc/passwd", b'0', b"x")]);
        assert_eq!(
            files(&absolute, 1 << 20, 100).unwrap_err().to_string(),
            "chart illegally contains absolute paths"
        );
        let top = tgz(&[("Chart.yaml", b'0', b"name: x\n")]);
        assert!(files(&top, 1 << 20, 100)
            .unwrap_err()
            .to_string()
            .contains("outside the base directory"));
        let drive = tgz(&[("dep\\c:\\x", b'0', b"x")]);
        assert_eq!(
            files(&drive, 1 << 20, 100).unwrap_err().to_string(),
            "chart contains illegally named files"
        );
        // A megabyte of zeros compresses to a kilobyte; the bound stops it unpacking.
        let big = vec![0u8; 1 << 20];
        let bomb = tgz(&[("dep/Chart.yaml", b'0', &big)]);
        assert!(bomb.len() < 8 << 10);
        assert!(matches!(
            files(&bomb, 64 << 10, 100),
            Err(Refused::Limit(m)) if m.contains("more bytes than a chart may hold")
        ));
        let many: Vec<(String, u8, &[u8])> = (0..20)
            .map(|i| (format!("dep/f{i}"), b'0', &b""[..]))
            .collect();
        let many: Vec<(&str, u8, &[u8])> =
            many.iter().map(|(n, f, d)| (n.as_str(), *f, *d)).collect();
        assert!(files(&tgz(&many), 1 << 20, 10)
            .unwrap_err()
            .to_string()
            .contains("more than 10 entries"));
        assert!(files(b"not gzip at all", 1 << 20, 10).is_err());
        assert_eq!(
            files(&tgz(&[("dep/", b'5', b"")]), 1 << 20, 10)
                .unwrap_err()
                .to_string(),
            "no files in chart archive"
        );
    }

    #[test]
    fn clean_is_go_path_clean() {
        assert_eq!(clean("a/./b//c/../d"), "a/b/d");
        assert_eq!(clean(""), ".");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean("../x"), "../x");
    }
}
