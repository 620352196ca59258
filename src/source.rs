//! The text of every linted file, and the mapping from byte offsets to lines and columns.

use crate::yaml::{FileId, Span};
use std::path::PathBuf;
use std::sync::OnceLock;

#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user should see it: relative to the working directory when possible.
    pub path: PathBuf,
    /// The decoded text. A leading BOM is kept so that byte offsets match the file on disk.
    pub text: String,
    line_starts: OnceLock<Vec<u32>>,
    /// Every [`MARK_STRIDE`] bytes: `(offset, characters before it)`, so a column on a very
    /// long line is counted from a nearby mark, not from the start of the line.
    marks: OnceLock<Vec<(u32, u32)>>,
}

/// Bytes between two marks: a column costs at most this much counting, however long its line
/// (a file of one 8 MB line with thousands of findings would otherwise take minutes).
const MARK_STRIDE: usize = 4096;

/// A line and column, both 1-based; the column counts Unicode scalar values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub column: u32,
}

impl SourceFile {
    pub fn new(path: PathBuf, text: String) -> SourceFile {
        SourceFile {
            path,
            text,
            line_starts: OnceLock::new(),
            marks: OnceLock::new(),
        }
    }

    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0u32];
            starts.extend(
                self.text
                    .bytes()
                    .enumerate()
                    .filter(|(_, b)| *b == b'\n')
                    .map(|(i, _)| i as u32 + 1),
            );
            starts
        })
    }

    fn marks(&self) -> &[(u32, u32)] {
        self.marks.get_or_init(|| {
            let mut marks = vec![(0u32, 0u32)];
            let (mut at, mut chars) = (0usize, 0u32);
            while at + MARK_STRIDE < self.text.len() {
                let mut next = at + MARK_STRIDE;
                while !self.text.is_char_boundary(next) {
                    next += 1;
                }
                chars += count_chars(&self.text[at..next]);
                marks.push((next as u32, chars));
                at = next;
            }
            marks
        })
    }

    /// Characters (a BOM not counted) before a char boundary.
    fn chars_before(&self, offset: usize) -> u32 {
        let marks = self.marks();
        let (at, chars) = marks[marks.partition_point(|&(o, _)| o as usize <= offset) - 1];
        chars + count_chars(&self.text[at as usize..offset])
    }

    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let starts = self.line_starts();
        let line = starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let start = starts[line] as usize;
        let mut end = offset as usize;
        while end > start && !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self.chars_before(end) - self.chars_before(start) + 1;
        LineCol {
            line: line as u32 + 1,
            column,
        }
    }
}

fn count_chars(text: &str) -> u32 {
    text.chars().filter(|&c| c != '\u{feff}').count() as u32
}

/// All files read in one run, indexed by [`FileId`].
#[derive(Debug, Default)]
pub struct SourceDb {
    files: Vec<SourceFile>,
}

impl From<Vec<SourceFile>> for SourceDb {
    /// The files in [`FileId`] order.
    fn from(files: Vec<SourceFile>) -> SourceDb {
        SourceDb { files }
    }
}

impl SourceDb {
    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        (self.files.len() - 1) as FileId
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id as usize]
    }

    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    pub fn start(&self, span: Span) -> LineCol {
        self.get(span.file).line_col(span.start)
    }

    pub fn end(&self, span: Span) -> LineCol {
        self.get(span.file).line_col(span.end)
    }
}

/// Why bytes could not be read as YAML text.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub message: String,
    /// Where the problem is, in the text that is kept for display.
    pub offset: usize,
    pub help: &'static str,
}

/// Decodes a file's bytes as Argo CD's repository server reads a manifest: UTF-8, or UTF-16 when
/// a byte-order mark says so (v3.5.1 `reposerver/repository/repository.go`
/// `getObjsFromYAMLOrJSON` opens files with `utfutil.OpenFile(path, utfutil.UTF8)`, which
/// follows a BOM). Invalid UTF-8 is reported rather than guessed; the returned text is always
/// displayable. A UTF-16 file's text keeps its BOM as U+FEFF, so columns skip it as they do in
/// a UTF-8 file; its byte offsets are those of the decoded text.
pub fn decode(bytes: Vec<u8>) -> (String, Option<DecodeError>) {
    let utf16 = match bytes.get(..2) {
        Some([0xFF, 0xFE]) => Some(u16::from_le_bytes as fn([u8; 2]) -> u16),
        Some([0xFE, 0xFF]) => Some(u16::from_be_bytes as fn([u8; 2]) -> u16),
        _ => None,
    };
    if let Some(unit) = utf16 {
        // An unpaired surrogate or a trailing odd byte becomes U+FFFD, as Go's decoder does.
        let units = bytes.chunks(2).map(|c| match c {
            [a, b] => unit([*a, *b]),
            _ => 0xFFFD,
        });
        let text: String = char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect();
        return checked(text);
    }
    match String::from_utf8(bytes) {
        Ok(text) => checked(text),
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            (
                text,
                Some(DecodeError {
                    message: format!(
                        "invalid UTF-8 at byte {offset}; Kubernetes and Argo CD read YAML as UTF-8"
                    ),
                    offset,
                    help: "save the file as UTF-8: nothing in it was checked",
                }),
            )
        }
    }
}

/// Text that decoded but holds NUL bytes is binary, not YAML.
fn checked(text: String) -> (String, Option<DecodeError>) {
    match text.find('\0') {
        Some(pos) => (
            text.replace('\0', "\u{fffd}"),
            Some(DecodeError {
                message: "the file contains NUL bytes: it is binary, not YAML".into(),
                offset: pos,
                help: "remove the file, or leave it out with --exclude",
            }),
        ),
        None => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_and_skip_the_bom() {
        let f = SourceFile::new("a".into(), "\u{feff}a: é\nb: c\r\n".into());
        assert_eq!(f.line_col(3), LineCol { line: 1, column: 1 });
        assert_eq!(f.line_col(6), LineCol { line: 1, column: 4 });
        let b = f.text.find('b').unwrap() as u32;
        assert_eq!(f.line_col(b), LineCol { line: 2, column: 1 });
    }

    #[test]
    fn columns_on_long_lines_agree_with_counting() {
        let line = "é ".repeat(3 * MARK_STRIDE) + "x";
        let f = SourceFile::new("a".into(), format!("a\n{line}\nb"));
        for offset in [2, 3, 4, 5000, 8191, 8192, 12_000, f.text.len() - 3] {
            let offset = (0..=offset)
                .rev()
                .find(|&o| f.text.is_char_boundary(o))
                .unwrap();
            let column = f.text[2..offset].chars().count() as u32 + 1;
            let want = LineCol { line: 2, column };
            assert_eq!(f.line_col(offset as u32), want, "at {offset}");
        }
    }

    #[test]
    fn utf16_with_a_bom_is_read_and_bad_bytes_are_reported() {
        assert_eq!(
            decode(vec![0xFF, 0xFE, b'a', 0]),
            ("\u{feff}a".into(), None)
        );
        assert_eq!(
            decode(vec![0xFE, 0xFF, 0, b'a', 0xD8]).0,
            "\u{feff}a\u{fffd}"
        );
        // A lone high surrogate, then `b`.
        assert_eq!(
            decode(vec![0xFF, 0xFE, 0, 0xD8, b'b', 0]).0,
            "\u{feff}\u{fffd}b"
        );
        assert_eq!(decode(vec![0xFF, 0xFE, 0, 0]).1.unwrap().offset, 3);
        let (_, err) = decode(b"a: \xFF\n".to_vec());
        assert_eq!(err.unwrap().offset, 3);
    }
}

/// Why a file's bytes were not read.
#[derive(Debug)]
pub enum ReadError {
    TooLarge { size: u64, limit: u64 },
    Io(std::io::Error),
}

/// Reads a file of at most `limit` bytes. The size is checked on the open file, so a file
/// that is too large is never read, and one read call usually suffices: tens of thousands of
/// files make every system call count.
pub fn read_limited(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_sized(path, limit, None)
}

/// [`read_limited`] for a file whose size was just measured (by the walk that found it), so
/// the open file is not measured again. The size only sets the first read: a file that grew
/// since fills it and is read on to its end, within `limit`. (A read that stops short exactly
/// at the old size is taken as the end, as regular files on local file systems only do there.)
pub fn read_sized(
    path: &std::path::Path,
    limit: u64,
    measured: Option<u64>,
) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let size = match measured {
        Some(size) => size,
        None => file.metadata().map_err(ReadError::Io)?.len(),
    };
    if size > limit {
        return Err(ReadError::TooLarge { size, limit });
    }
    // One byte more than the size tells, in the same call, whether the file ended there.
    let want = size as usize + 1;
    let mut buf = vec![0u8; want];
    let mut got = 0;
    while got < want {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                // All the bytes the file held when measured: no second call to learn that
                // it ends there.
                if got == size as usize {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
    buf.truncate(got);
    if got == want {
        // The file grew since it was measured: read the rest, within the limit.
        let rest = file
            .take(limit.saturating_sub(got as u64) + 1)
            .read_to_end(&mut buf)
            .map_err(ReadError::Io)?;
        let total = (got + rest) as u64;
        if total > limit {
            return Err(ReadError::TooLarge { size: total, limit });
        }
    }
    Ok(buf)
}
