//! Lexer: mirrors text/template/parse/lex.go, including trim markers and comments.

use super::{ErrorKind, TemplateError};
use serde_json::{Number, Value};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(super) fn to_value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok<'s> {
    // Borrowed from the source: a parser backs up over tokens and copies the ones it reads.
    Text(&'s str),
    Open,
    Close,
    Space,
    Pipe,
    LParen,
    RParen,
    Comma,
    Declare,
    Assign,
    Dot,
    Field(&'s str),
    Var(&'s str),
    Ident(&'s str),
    Bool(bool),
    Nil,
    Number(Num),
    Str(std::borrow::Cow<'s, str>),
    Eof,
}

#[derive(Debug, Clone)]
pub(super) struct Token<'s> {
    pub(super) tok: Tok<'s>,
    pub(super) start: usize,
    pub(super) end: usize,
}

#[derive(Clone, Copy)]
enum WordKind {
    Var,
    Field,
    Ident,
}

fn is_space_char(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// `{{- ` trims the text before the action; the dash must be followed by a space.
fn has_left_trim(after_open: &str) -> bool {
    let mut chars = after_open.chars();
    chars.next() == Some('-') && chars.next().is_some_and(is_space_char)
}

/// Length of the closing delimiter at the start of `rest`: `}}`, or ` -}}` which also trims.
fn close_len(rest: &str) -> Option<usize> {
    if rest.starts_with("}}") {
        return Some(2);
    }
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if is_space_char(c) && chars.as_str().starts_with("-}}") => Some(4),
        _ => None,
    }
}

fn describe_char(c: char) -> String {
    format!("U+{:04X} '{c}'", u32::from(c))
}

pub(super) fn line_of(src: &str, offset: usize) -> usize {
    let head = src.as_bytes().get(..offset).unwrap_or(src.as_bytes());
    1 + head.iter().filter(|b| **b == b'\n').count()
}

pub(super) struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    toks: Vec<Token<'s>>,
    trim_next: bool,
}

impl<'s> Lexer<'s> {
    pub(super) fn lex(src: &'s str) -> Result<Vec<Token<'s>>, TemplateError> {
        let mut lexer = Lexer {
            src,
            pos: 0,
            toks: Vec::new(),
            trim_next: false,
        };
        lexer.run()?;
        Ok(lexer.toks)
    }

    fn rest(&self) -> &'s str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn error(&self, offset: usize, msg: impl fmt::Display) -> TemplateError {
        TemplateError::new(format!("template: :{}: {msg}", line_of(self.src, offset)))
    }

    fn push(&mut self, tok: Tok<'s>, start: usize, end: usize) {
        self.toks.push(Token { tok, start, end });
    }

    fn run(&mut self) -> Result<(), TemplateError> {
        loop {
            let Some(offset) = memchr::memmem::find(self.rest().as_bytes(), b"{{") else {
                self.text(self.src.len(), false);
                self.push(Tok::Eof, self.src.len(), self.src.len());
                return Ok(());
            };
            let open = self.pos + offset;
            let left_trim = has_left_trim(self.src.get(open + 2..).unwrap_or(""));
            self.text(open, left_trim);
            let body = open + if left_trim { 4 } else { 2 };
            if self.src.get(body..).unwrap_or("").starts_with("/*") {
                self.comment(open, body)?;
            } else {
                self.push(Tok::Open, open, open + 2);
                self.pos = body;
                self.action()?;
            }
        }
    }

    fn text(&mut self, to: usize, trim_right: bool) {
        let whole = self.src.get(self.pos..to).unwrap_or("");
        let mut start = 0;
        if std::mem::take(&mut self.trim_next) {
            start = whole.len() - whole.trim_start_matches(is_space_char).len();
        }
        let mut text = &whole[start..];
        if trim_right {
            text = text.trim_end_matches(is_space_char);
        }
        if !text.is_empty() {
            // The token starts where its kept text does, so that rendered output can be traced
            // back to it byte for byte.
            let from = self.pos + start;
            let end = from + text.len();
            self.push(Tok::Text(text), from, end);
        }
        self.pos = to;
    }

    /// Comments produce no token, but their trim markers still apply.
    fn comment(&mut self, open: usize, body: usize) -> Result<(), TemplateError> {
        let inner = body + 2;
        let Some(offset) = self.src.get(inner..).and_then(|s| s.find("*/")) else {
            return Err(self.error(open, "unclosed comment"));
        };
        let after = inner + offset + 2;
        match close_len(self.src.get(after..).unwrap_or("")) {
            Some(len) => {
                self.trim_next = len == 4;
                self.pos = after + len;
                Ok(())
            }
            None => Err(self.error(open, "comment ends before closing delimiter")),
        }
    }

    fn action(&mut self) -> Result<(), TemplateError> {
        let mut parens = 0usize;
        loop {
            let rest = self.rest();
            let Some(c) = rest.chars().next() else {
                return Err(self.error(self.pos, "unclosed action"));
            };
            if let Some(len) = close_len(rest) {
                if parens > 0 {
                    return Err(self.error(self.pos, "unclosed left paren"));
                }
                self.trim_next = len == 4;
                self.push(Tok::Close, self.pos, self.pos + len);
                self.pos += len;
                return Ok(());
            }
            match c {
                c if is_space_char(c) => self.spaces(),
                '|' => self.single(Tok::Pipe),
                '(' => {
                    parens += 1;
                    self.single(Tok::LParen);
                }
                ')' => {
                    if parens == 0 {
                        return Err(self.error(self.pos, "unexpected right paren"));
                    }
                    parens -= 1;
                    self.single(Tok::RParen);
                }
                ',' => self.single(Tok::Comma),
                '=' => self.single(Tok::Assign),
                ':' => self.declare()?,
                '"' => self.quoted()?,
                '`' => self.raw_quoted()?,
                '\'' => self.char_constant()?,
                '$' => self.word(1, WordKind::Var)?,
                '.' if !rest.as_bytes().get(1).is_some_and(u8::is_ascii_digit) => {
                    self.word(1, WordKind::Field)?;
                }
                '.' | '+' | '-' | '0'..='9' => self.number()?,
                c if is_alnum(c) => self.word(0, WordKind::Ident)?,
                c => {
                    let msg = format!("unrecognized character in action: {}", describe_char(c));
                    return Err(self.error(self.pos, msg));
                }
            }
        }
    }

    fn single(&mut self, tok: Tok<'s>) {
        self.push(tok, self.pos, self.pos + 1);
        self.pos += 1;
    }

    /// A run of spaces, stopping before the space that belongs to a ` -}}` marker.
    fn spaces(&mut self) {
        let start = self.pos;
        while let Some(c) = self.rest().chars().next() {
            if !is_space_char(c) || (self.pos > start && close_len(self.rest()) == Some(4)) {
                break;
            }
            self.pos += c.len_utf8();
        }
        self.push(Tok::Space, start, self.pos);
    }

    fn declare(&mut self) -> Result<(), TemplateError> {
        if !self.rest().starts_with(":=") {
            return Err(self.error(self.pos, "expected :="));
        }
        self.push(Tok::Declare, self.pos, self.pos + 2);
        self.pos += 2;
        Ok(())
    }

    fn scan_alnum(&self, from: usize) -> usize {
        // Names are ASCII but for the odd one: bytes first, characters from the first
        // non-ASCII byte on.
        let bytes = self.src.as_bytes();
        let mut i = from;
        while let Some(&b) = bytes.get(i) {
            if b.is_ascii_alphanumeric() || b == b'_' {
                i += 1;
            } else if b.is_ascii() {
                return i;
            } else {
                let tail = self.src.get(i..).unwrap_or("");
                return i + tail.find(|c: char| !is_alnum(c)).unwrap_or(tail.len());
            }
        }
        i
    }

    /// Words must end where an operator, space or delimiter begins (`.a-b` is an error in Go).
    fn at_terminator(&self, pos: usize) -> bool {
        let tail = self.src.get(pos..).unwrap_or("");
        match tail.chars().next() {
            None => true,
            Some(c) => is_space_char(c) || ".,|:()".contains(c) || tail.starts_with("}}"),
        }
    }

    fn word(&mut self, prefix: usize, kind: WordKind) -> Result<(), TemplateError> {
        let start = self.pos;
        let name_start = start + prefix;
        let end = self.scan_alnum(name_start);
        if !self.at_terminator(end) {
            let c = self
                .src
                .get(end..)
                .and_then(|t| t.chars().next())
                .unwrap_or(' ');
            return Err(self.error(end, format!("bad character {}", describe_char(c))));
        }
        let text = self.src.get(start..end).unwrap_or("");
        let name = self.src.get(name_start..end).unwrap_or("");
        let tok = match kind {
            WordKind::Var => Tok::Var(text),
            WordKind::Field if name.is_empty() => Tok::Dot,
            WordKind::Field => Tok::Field(name),
            WordKind::Ident => match name {
                "true" => Tok::Bool(true),
                "false" => Tok::Bool(false),
                "nil" => Tok::Nil,
                _ => Tok::Ident(name),
            },
        };
        self.push(tok, start, end);
        self.pos = end;
        Ok(())
    }

    fn number(&mut self) -> Result<(), TemplateError> {
        let start = self.pos;
        let mut end = scan_number(self.src.as_bytes(), start);
        if let Some(c) = self.src.get(end..).and_then(|t| t.chars().next()) {
            if is_alnum(c) {
                end += c.len_utf8();
                let text = self.src.get(start..end).unwrap_or("");
                return Err(self.error(start, format!("bad number syntax: {text:?}")));
            }
        }
        let text = self.src.get(start..end).unwrap_or("");
        let num = parse_number(text).map_err(|msg| {
            // A number token holds no spaces: only parse_number's own words end this way.
            let gap = msg.ends_with(" is not supported offline");
            let mut e = self.error(start, msg);
            if gap {
                e.kind = ErrorKind::Unsupported;
            }
            e
        })?;
        self.push(Tok::Number(num), start, end);
        self.pos = end;
        Ok(())
    }

    /// Finds the closing `quote`, honouring backslash escapes; returns its byte offset.
    fn scan_quoted(&self, quote: u8, what: &str) -> Result<usize, TemplateError> {
        let bytes = self.src.as_bytes();
        let mut i = self.pos + 1;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => {
                    return Err(self.error(self.pos, format!("unterminated {what}")))
                }
                Some(b'\\') if matches!(bytes.get(i + 1), None | Some(b'\n')) => {
                    return Err(self.error(self.pos, format!("unterminated {what}")));
                }
                Some(b'\\') => i += 2,
                Some(b) if *b == quote => return Ok(i),
                Some(_) => i += 1,
            }
        }
    }

    fn quoted(&mut self) -> Result<(), TemplateError> {
        let start = self.pos;
        let close = self.scan_quoted(b'"', "quoted string")?;
        let inner = self.src.get(start + 1..close).unwrap_or("");
        let value = if inner.contains('\\') {
            let value = unescape(inner, '"').map_err(|msg| self.error(start, msg))?;
            std::borrow::Cow::Owned(value)
        } else {
            std::borrow::Cow::Borrowed(inner)
        };
        self.push(Tok::Str(value), start, close + 1);
        self.pos = close + 1;
        Ok(())
    }

    fn raw_quoted(&mut self) -> Result<(), TemplateError> {
        let start = self.pos;
        let Some(offset) = self.src.get(start + 1..).and_then(|t| t.find('`')) else {
            return Err(self.error(start, "unterminated raw quoted string"));
        };
        let close = start + 1 + offset;
        // Go's strconv.Unquote drops carriage returns from raw strings.
        let raw = self.src.get(start + 1..close).unwrap_or("");
        let value = if raw.contains('\r') {
            std::borrow::Cow::Owned(raw.replace('\r', ""))
        } else {
            std::borrow::Cow::Borrowed(raw)
        };
        self.push(Tok::Str(value), start, close + 1);
        self.pos = close + 1;
        Ok(())
    }

    /// `'a'` is an integer constant (the rune's code point), as in Go.
    fn char_constant(&mut self) -> Result<(), TemplateError> {
        let start = self.pos;
        let close = self.scan_quoted(b'\'', "character constant")?;
        let inner = self.src.get(start + 1..close).unwrap_or("");
        let decoded = unescape(inner, '\'').map_err(|msg| self.error(start, msg))?;
        let mut chars = decoded.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(self.error(start, format!("malformed character constant: '{inner}'")));
        };
        self.push(
            Tok::Number(Num::Int(i64::from(u32::from(c)))),
            start,
            close + 1,
        );
        self.pos = close + 1;
        Ok(())
    }
}

fn accept(bytes: &[u8], i: &mut usize, set: &[u8]) -> bool {
    match bytes.get(*i) {
        Some(b) if set.contains(b) => {
            *i += 1;
            true
        }
        _ => false,
    }
}

fn accept_run(bytes: &[u8], i: &mut usize, set: &[u8]) {
    while accept(bytes, i, set) {}
}

/// Go's lexer number scan: sign, base prefix, digits, fraction, exponent, imaginary suffix.
fn scan_number(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    accept(bytes, &mut i, b"+-");
    let mut digits: &[u8] = b"0123456789_";
    if accept(bytes, &mut i, b"0") {
        if accept(bytes, &mut i, b"xX") {
            digits = b"0123456789abcdefABCDEF_";
        } else if accept(bytes, &mut i, b"oO") {
            digits = b"01234567_";
        } else if accept(bytes, &mut i, b"bB") {
            digits = b"01_";
        }
    }
    accept_run(bytes, &mut i, digits);
    if accept(bytes, &mut i, b".") {
        accept_run(bytes, &mut i, digits);
    }
    if digits.len() == 11 && accept(bytes, &mut i, b"eE") {
        accept(bytes, &mut i, b"+-");
        accept_run(bytes, &mut i, b"0123456789_");
    }
    if digits.len() == 23 && accept(bytes, &mut i, b"pP") {
        accept(bytes, &mut i, b"+-");
        accept_run(bytes, &mut i, b"0123456789_");
    }
    accept(bytes, &mut i, b"i");
    i
}

fn parse_number(text: &str) -> Result<Num, String> {
    let bad = || format!("bad number syntax: {text:?}");
    if text.ends_with('i') {
        return Err(format!("complex number {text} is not supported offline"));
    }
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..).unwrap_or("")),
        Some(b'+') => (false, text.get(1..).unwrap_or("")),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let hex = lower.starts_with("0x");
    if hex && lower.contains('p') {
        return Err(format!("hexadecimal float {text} is not supported offline"));
    }
    if !hex && (lower.contains('.') || lower.contains('e')) {
        let cleaned: String = body.chars().filter(|c| *c != '_').collect();
        let f: f64 = cleaned.parse().map_err(|_| bad())?;
        if !f.is_finite() {
            return Err(format!("number out of range: {text}"));
        }
        return Ok(Num::Float(if negative { -f } else { f }));
    }
    let magnitude = parse_go_uint(body).ok_or_else(bad)?;
    let value = if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    };
    value
        .map(Num::Int)
        .ok_or_else(|| format!("{text} overflows int"))
}

/// Unsigned integer with Go's base prefixes (`0x`, `0o`, `0b`, leading `0` for octal).
fn parse_go_uint(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (radix, digits) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower.get(1..).unwrap_or(""))
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty()
        || !digits
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let cleaned: String = digits.chars().filter(|c| *c != '_').collect();
    u64::from_str_radix(&cleaned, radix).ok()
}

/// Signed integer as Go's `strconv.ParseInt(s, 0, 64)` reads it.
pub(super) fn parse_go_int(text: &str) -> Option<i64> {
    match text.as_bytes().first()? {
        b'-' => 0i64.checked_sub_unsigned(parse_go_uint(text.get(1..)?)?),
        b'+' => i64::try_from(parse_go_uint(text.get(1..)?)?).ok(),
        _ => i64::try_from(parse_go_uint(text)?).ok(),
    }
}

fn hex_digits(chars: &mut std::str::Chars<'_>, count: usize) -> Result<u32, String> {
    let mut value = 0u32;
    for _ in 0..count {
        let digit = chars
            .next()
            .and_then(|c| c.to_digit(16))
            .ok_or_else(|| "invalid syntax in escape sequence".to_string())?;
        value = value * 16 + digit;
    }
    Ok(value)
}

/// Decodes Go escape sequences (`\n`, `\x41`, `\101`, `\u00e9`, ...) in a quoted literal.
fn unescape(inner: &str, quote: char) -> Result<String, String> {
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    let mut buf = [0u8; 4];
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let escape = chars.next().ok_or_else(|| "invalid syntax".to_string())?;
        let byte = match escape {
            'a' => 7,
            'b' => 8,
            'f' => 12,
            'n' => b'\n',
            'r' => b'\r',
            't' => b'\t',
            'v' => 11,
            '\\' => b'\\',
            c if c == quote => quote as u8,
            'x' => hex_digits(&mut chars, 2)? as u8,
            'u' | 'U' => {
                let code = hex_digits(&mut chars, if escape == 'u' { 4 } else { 8 })?;
                let c = char::from_u32(code).ok_or_else(|| "invalid Unicode escape".to_string())?;
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            '0'..='7' => octal_escape(escape, &mut chars)?,
            _ => return Err(format!("invalid escape sequence \\{escape}")),
        };
        out.push(byte);
    }
    String::from_utf8(out).map_err(|_| "string literal is not valid UTF-8".to_string())
}

fn octal_escape(first: char, chars: &mut std::str::Chars<'_>) -> Result<u8, String> {
    let mut value = first.to_digit(8).unwrap_or(0);
    for _ in 0..2 {
        let digit = chars
            .next()
            .and_then(|c| c.to_digit(8))
            .ok_or_else(|| "invalid octal escape".to_string())?;
        value = value * 8 + digit;
    }
    u8::try_from(value).map_err(|_| "octal escape value > 255".to_string())
}

#[cfg(test)]
mod tests {
    use super::{Lexer, Tok};
    use crate::render::template::testing::check;

    #[test]
    fn a_text_token_spans_the_text_it_keeps() {
        for src in [
            "{{ 1 -}}  ab  {{- 2 }}",
            "x {{- 1 }} \n y \n {{ 2 -}} \n z",
            " a ",
        ] {
            for t in Lexer::lex(src).unwrap() {
                if let Tok::Text(text) = t.tok {
                    assert_eq!(&src[t.start..t.end], text, "{src:?}");
                }
            }
        }
    }

    #[test]
    fn trim_markers_and_comments() {
        check(&[
            ("a  {{- .env -}}  b", Ok("aprodb")),
            ("a \n {{- /* note */ -}} \n b", Ok("ab")),
            ("a {{/* note */}} b", Ok("a  b")),
            ("{{-3}}", Ok("-3")),
            ("{{/* open", Err("unclosed comment")),
            ("{{/* x */ }}", Err("comment ends before closing delimiter")),
        ]);
    }
}
