//! Text from the repository made safe for where it is written. A file name, an object name or a
//! policy's message is the pull request author's text: written raw, a line break in it starts a
//! line of their choosing (a CI runner reads `::stop-commands::` or `##[error]` there as a
//! command), a terminal escape repaints the screen, a bidirectional override makes a line read
//! other than it is, and Markdown or HTML in it becomes a live link in a rendered summary.
//!
//! Each target has its own escaping here, and [`Guard`] applies the line rules to a whole
//! output stream, whatever wrote into it. Text that needs nothing is passed on without a copy.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether `c` is never written raw to a terminal or a log: control characters, bidirectional
/// and other invisible formatting characters, and the Unicode line and paragraph separators.
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// Characters a reader of a line may skip when it looks for a command at its start (a
/// culture-aware comparison ignores them): whitespace, hidden characters, variation selectors
/// and combining marks.
fn skippable(c: char) -> bool {
    c.is_whitespace()
        || hidden(c)
        || matches!(
            c,
            '\u{0300}'..='\u{036F}'
                | '\u{1AB0}'..='\u{1AFF}'
                | '\u{1DC0}'..='\u{1DFF}'
                | '\u{20D0}'..='\u{20FF}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FE20}'..='\u{FE2F}'
        )
}

/// Whether ASCII byte `b` can be written as it is in a line of text.
fn plain_byte(b: u8) -> bool {
    (0x20..0x7f).contains(&b)
}

/// The byte offset of the `:` that makes `line` a workflow command (`::name::`) once what a
/// runner trims or ignores is skipped, if it is one.
fn command_colon(line: &str) -> Option<usize> {
    let mut visible = line.char_indices().filter(|&(_, c)| !skippable(c));
    match (visible.next(), visible.next()) {
        (Some((at, ':')), Some((_, ':'))) => Some(at),
        _ => None,
    }
}

/// Whether `text` needs no escaping for a line of a log: printable ASCII that neither starts a
/// workflow command nor holds a legacy one (`##[`, read anywhere in a line).
fn plain_line(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().all(|&b| plain_byte(b))
        && !b.trim_ascii_start().starts_with(b"::")
        && memchr::memmem::find(b, b"##[").is_none()
}

/// [`plain_line`] for text that is not all ASCII (a snippet of a file with comments in another
/// language, the box drawing of a terminal): no hidden character, no command.
fn safe_line(text: &str) -> bool {
    plain_line(text)
        || (!text.chars().any(hidden)
            && command_colon(text).is_none()
            && memchr::memmem::find(text.as_bytes(), b"##[").is_none())
}

/// Writes `c` as `\n`, `\r`, `\t` or `\u{…}`.
fn push_escaped(out: &mut String, c: char) {
    out.extend(c.escape_default());
}

fn escape_text(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    if safe_line(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    // Each line (one only, unless line ends are kept) is checked for a command at its start.
    let mut line_start = 0;
    let mut colon = command_colon(s);
    let mut hashes = 0;
    for (i, c) in s.char_indices() {
        if colon == Some(i - line_start) {
            out.push_str("\\u{3a}");
            continue;
        }
        match c {
            '\n' if keep_newlines => {
                out.push('\n');
                line_start = i + 1;
                colon = command_colon(&s[line_start..]);
            }
            '[' if hashes >= 2 => out.push_str("\\u{5b}"),
            c if hidden(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
        hashes = if c == '#' { hashes + 1 } else { 0 };
    }
    Cow::Owned(out)
}

/// `s` for a terminal or a log, on one line: line ends, control, bidirectional and invisible
/// characters are written as `\n`, `\u{1b}`, `\u{202e}`; a `:` that would start a workflow
/// command (`::x::`) as `\u{3a}` and the `[` of a legacy one (`##[x]`) as `\u{5b}`.
pub fn visible(s: &str) -> Cow<'_, str> {
    escape_text(s, false)
}

/// [`visible`], keeping line feeds: for a message or help text of several lines. No line of it
/// starts a workflow command.
pub fn visible_lines(s: &str) -> Cow<'_, str> {
    escape_text(s, true)
}

/// A workflow command's message (`::error ...::DATA`), as the runner unescapes it: `%`, CR and
/// LF (GitHub's toolkit, `escapeData`).
pub fn workflow_data(s: &str) -> Cow<'_, str> {
    if !s.contains(['%', '\r', '\n']) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A"),
    )
}

/// A workflow command's property value (`file=VALUE,`): [`workflow_data`] and `:` and `,`
/// (GitHub's toolkit, `escapeProperty`).
pub fn workflow_property(s: &str) -> Cow<'_, str> {
    if !s.contains(['%', '\r', '\n', ':', ',']) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(workflow_data(s).replace(':', "%3A").replace(',', "%2C"))
}

/// `s` as a SARIF plain-text message: [`visible_lines`], and `[` and `]` escaped with a
/// backslash, since viewers read `[text](target)` in a message as a link (SARIF 2.1.0, 3.11.6,
/// embedded links).
pub fn sarif_text(s: &str) -> Cow<'_, str> {
    let s = visible_lines(s);
    if !s.contains(['[', ']']) {
        return s;
    }
    Cow::Owned(s.replace('[', "\\[").replace(']', "\\]"))
}

/// `s` as a YAML double-quoted scalar that reads back as `s`: `"` and `\` escaped, and every
/// character YAML cannot hold raw (C0 and C1 controls, DEL, U+FFFE, U+FFFF) or that is hidden
/// as an escape, so that the file reads as it is and shows in a review as it reads. Plain text
/// is quoted as JSON quotes it.
pub fn yaml_quoted(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {
                let _ = match c as u32 {
                    n @ 0..=0xFFFF => write!(out, "\\u{n:04x}"),
                    n => write!(out, "\\U{n:08x}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether XML 1.0 can hold `c` at all (its `Char` production).
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `s` as XML 1.0 text or an attribute value: markup characters as entities, characters XML
/// cannot hold as U+FFFD, and the rest of [`visible_lines`] (no raw controls, no line a runner
/// reads as a command when the report is printed).
pub fn xml(s: &str) -> Cow<'_, str> {
    let s = visible_lines(s);
    if !s.contains(['&', '<', '>', '"', '\'']) && s.chars().all(xml_char) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if !xml_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` as plain text in Markdown (GitHub Flavored, a table cell included): every ASCII
/// punctuation character as a numeric character reference (`-` only at the start), which Markdown shows as that
/// character and never reads as syntax (no link, image, HTML tag, emphasis, code span, heading,
/// table cell, autolink or mention can start); line ends and hidden characters as in
/// [`visible`].
pub fn markdown(s: &str) -> Cow<'_, str> {
    let s = visible(s);
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b' ' || b >= 0x80)
    {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    let lead = s.len() - s.trim_start_matches(' ').len();
    for (i, c) in s.char_indices() {
        // `-` reads as syntax only where a line starts (a list item, a rule, a heading's
        // underline); a name or a message is full of them elsewhere.
        if c.is_ascii_punctuation() && (c != '-' || i == lead) {
            out.push_str("&#");
            out.push_str(&(c as u32).to_string());
            out.push(';');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` inside a Graphviz DOT quoted string (`"..."`): `"` and `\` escaped, and the rest of
/// [`visible`], so a label stays on its line.
pub fn dot(s: &str) -> Cow<'_, str> {
    let s = visible(s);
    if !s.contains(['"', '\\']) {
        return s;
    }
    Cow::Owned(s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// How [`Guard`] writes what it finds in a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Text for people; `color`: the writer's own color codes (ESC) pass.
    Text { color: bool },
    /// JSON: hidden characters as `\uXXXX` escapes, which can occur only inside strings.
    Json,
    /// XML: hidden characters as character references.
    Xml,
}

/// A writer that no line of can start a workflow command or hold a legacy one, and that writes
/// no hidden character raw: the last line of defence behind the escaping of each text, for
/// text a format put together from several pieces (a file name at the start of a line) and for
/// outputs without a format of their own. Lines are what a runner reads as lines: ended by LF,
/// CR or CR LF. Complete lines are passed on as they are written; an unfinished one is held
/// until its end or [`Guard::finish`].
pub struct Guard<W: Write> {
    inner: W,
    stream: Stream,
    pending: Vec<u8>,
}

impl<W: Write> Guard<W> {
    pub fn new(inner: W, stream: Stream) -> Guard<W> {
        Guard {
            inner,
            stream,
            pending: Vec::new(),
        }
    }

    /// Writes what is held, an unfinished last line included, and flushes.
    pub fn finish(&mut self) -> io::Result<()> {
        self.write_pending()?;
        self.inner.flush()
    }

    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.pending);
        let line = String::from_utf8_lossy(&text);
        self.inner
            .write_all(guard_lines(&line, self.stream).as_bytes())
    }
}

impl<W: Write> Write for Guard<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Complete lines are those before the last LF; a CR before it may still be half of
        // CR LF, but none after it is decided yet.
        match memchr::memrchr(b'\n', buf) {
            None => self.pending.extend_from_slice(buf),
            Some(end) => {
                let (done, rest) = buf.split_at(end + 1);
                if self.pending.is_empty() {
                    let text = String::from_utf8_lossy(done);
                    self.inner
                        .write_all(guard_lines(&text, self.stream).as_bytes())?;
                } else {
                    self.pending.extend_from_slice(done);
                    self.write_pending()?;
                }
                self.pending.extend_from_slice(rest);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Guard<W> {
    fn drop(&mut self) {
        let _ = self.write_pending();
        let _ = self.inner.flush();
    }
}

/// `text`, of whole lines or the last unfinished one, as [`Guard`] writes it.
pub fn guard_lines(text: &str, stream: Stream) -> Cow<'_, str> {
    // The common case, a report of printable ASCII: one pass over the bytes, no copy.
    if text.split('\n').all(safe_line) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while !rest.is_empty() {
        // A line ends at LF, at CR LF, or at a CR alone.
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let ending = match &rest.as_bytes()[end..] {
            [b'\r', b'\n', ..] => 2,
            [] => 0,
            _ => 1,
        };
        guard_line(&rest[..end], stream, &mut out);
        match (stream, &rest[end..end + ending]) {
            // A runner reads a lone CR as a line end; text for people shows it instead, JSON
            // and XML never write one raw outside their markup.
            (Stream::Text { .. }, "\r") => out.push_str("\\r"),
            (_, ending) => out.push_str(ending),
        }
        rest = &rest[end + ending..];
    }
    Cow::Owned(out)
}

fn guard_line(line: &str, stream: Stream, out: &mut String) {
    if safe_line(line) {
        out.push_str(line);
        return;
    }
    let colon = command_colon(line);
    let mut hashes = 0;
    for (i, c) in line.char_indices() {
        match stream {
            Stream::Text { color } => match c {
                ':' if colon == Some(i) => out.push_str("\\u{3a}"),
                '[' if hashes >= 2 => out.push_str("\\u{5b}"),
                '\t' => out.push(c),
                '\u{1b}' if color => out.push(c),
                c if hidden(c) => push_escaped(out, c),
                c => out.push(c),
            },
            // Neither format writes `::` at a line start or a raw control character outside
            // its strings, so only the legacy command and the characters to hide are left.
            Stream::Json => match c {
                '[' if hashes >= 2 => out.push_str("\\u005b"),
                c if hidden(c) && c != '\t' => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            },
            Stream::Xml => match c {
                '[' if hashes >= 2 => out.push_str("&#91;"),
                c if hidden(c) && c != '\t' && xml_char(c) => {
                    out.push_str(&format!("&#x{:x};", c as u32));
                }
                c if !xml_char(c) => out.push('\u{FFFD}'),
                c => out.push(c),
            },
        }
        hashes = if c == '#' { hashes + 1 } else { 0 };
    }
}
