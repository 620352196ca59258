//! Offline evaluation of Argo CD ApplicationSet template strings, so the linter can see the
//! Applications a generator would produce without a cluster or the ApplicationSet controller.
//!
//! Argo CD has two modes: fasttemplate substitution (`goTemplate: false`) and Go's
//! `text/template` with the Sprig and Argo CD functions (`goTemplate: true`). Both are
//! re-implemented here in safe Rust. The input comes from untrusted pull requests, so evaluation
//! is bounded in nesting depth, work, value size and output size, and never panics.

use super::budget::{Budget as Work, Exhausted};
use serde_json::{Map, Number, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// A template that Argo CD would reject, or that cannot be evaluated offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub message: String,
    pub kind: ErrorKind,
}

/// Whose limit a template ran into: the reader of a finding must know whether Argo CD fails
/// too, or only this linter could not follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Argo CD fails to render it as well: a parse error, a function Argo CD does not
    /// define, a missing key under `missingkey=error`, a type error, `fail`.
    Invalid,
    /// Valid for Argo CD, but beyond what is evaluated offline.
    Unsupported,
    /// Past a bound of this engine (depth, size, iterations): Argo CD may render it.
    Limit,
    /// The caller's [`Work`] budget ran out.
    Budget(Exhausted),
}

impl TemplateError {
    fn new(message: impl Into<String>) -> Self {
        TemplateError {
            message: message.into(),
            kind: ErrorKind::Invalid,
        }
    }

    fn of_kind(message: impl Into<String>, kind: ErrorKind) -> Self {
        TemplateError {
            message: message.into(),
            kind,
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TemplateError {}

/// fasttemplate mode (goTemplate: false). `params` is the flat map Argo CD builds, e.g.
/// "path" → "apps/foo", "path.basename" → "foo", "path[0]" → "apps", "metadata.labels.env" →
/// "prod". Tags are `{{ ... }}` with surrounding whitespace trimmed inside the braces; a tag
/// naming a known param is replaced by its value, an unknown tag is written back unchanged,
/// including its braces and original inner text (this is what Argo CD does). Never fails.
///
/// Argo CD rejects a string with an unclosed `{{`; here the rest of the text is kept verbatim
/// instead, since this function cannot fail (check [`has_template`] on the result if needed).
pub fn render_fast(text: &str, params: &BTreeMap<String, String>) -> String {
    render_fast_within(text, params, usize::MAX).unwrap_or_default()
}

/// [`render_fast`], refusing (with the limit's message) an output longer than `max` bytes: a
/// short string of tags can name a long value many times.
pub fn render_fast_within(
    text: &str,
    params: &BTreeMap<String, String>,
    max: usize,
) -> Result<String, TemplateError> {
    let too_long = || {
        TemplateError::of_kind(
            format!("template: output exceeds the {max}-byte limit"),
            ErrorKind::Limit,
        )
    };
    // Argo CD only substitutes when some line holds `{{ ... }}`: its guard regex does not
    // cross newlines, so a tag split over lines alone is left untouched.
    if !text.split('\n').any(line_has_tag) {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            break;
        };
        let tag = &after[..close];
        let name = tag.trim();
        if out.len().saturating_add(open).saturating_add(close + 4) > max {
            return Err(too_long());
        }
        out.push_str(&rest[..open]);
        match params.get(name) {
            Some(value) if !name.is_empty() && out.len().saturating_add(value.len()) > max => {
                return Err(too_long());
            }
            Some(value) if !name.is_empty() => out.push_str(value),
            _ => {
                out.push_str("{{");
                out.push_str(tag);
                out.push_str("}}");
            }
        }
        rest = &after[close + 2..];
    }
    if out.len().saturating_add(rest.len()) > max {
        return Err(too_long());
    }
    out.push_str(rest);
    Ok(out)
}

/// The largest output [`render_fast_within`] and [`render_go`] produce for one string.
pub const MAX_FIELD_OUTPUT: usize = MAX_OUTPUT;

fn line_has_tag(line: &str) -> bool {
    line.find("{{")
        .is_some_and(|open| line[open + 2..].contains("}}"))
}

/// goTemplate mode. `data` is the nested parameter object (e.g. {"path": {"path": "apps/foo",
/// "basename": "foo", "segments": ["apps","foo"], ...}, "name": "x", "values": {...}}).
/// `missingkey_error` mirrors goTemplateOptions ["missingkey=error"]: a missing map key is then
/// an error; otherwise Go prints `<no value>` for a missing key.
///
/// Parsing and evaluation are charged to `work`, which the caller shares between every
/// string it renders for one ApplicationSet; once it is spent, every later call fails at once.
pub fn render_go(
    text: &str,
    data: &Value,
    missingkey_error: bool,
    work: &mut Work,
) -> Result<String, TemplateError> {
    let mut budget = Budget::new(std::mem::take(work));
    let result = render_with(text, data, missingkey_error, &mut budget);
    *work = budget.work;
    result.map_err(|mut e| {
        if let Some(why) = work.exhausted() {
            e.kind = ErrorKind::Budget(why);
        }
        e
    })
}

fn render_with(
    text: &str,
    data: &Value,
    missingkey_error: bool,
    budget: &mut Budget,
) -> Result<String, TemplateError> {
    budget
        .charge_bytes(text.len())
        .map_err(|msg| TemplateError::of_kind(format!("template: {msg}"), ErrorKind::Limit))?;
    let nodes = Parser::parse(text)?;
    Exec::new(text, missingkey_error, budget).run(data, &nodes)
}

/// Whether `text` contains anything a template engine would act on (`{{`).
pub fn has_template(text: &str) -> bool {
    text.contains("{{")
}

// -------------------------------------------------------------------------------------------
// Limits. Untrusted templates must not be able to exhaust the stack, the CPU or memory.
// -------------------------------------------------------------------------------------------

/// Nesting cap for parentheses, control structures and values; keeps recursion shallow.
const MAX_DEPTH: usize = 100;
/// Largest rendered output; real ApplicationSet fields are tiny next to this.
const MAX_OUTPUT: usize = 1 << 20;
/// Largest single intermediate value (string or collection), in bytes of content.
const MAX_VALUE_BYTES: usize = 4 << 20;
/// Work is charged to the caller's [`Work`] budget: one step per node, command, call or
/// iteration, plus one per [`super::budget::BYTES_PER_STEP`] bytes copied, so both loops and
/// large copies run out. Iterations are bounded per string as well.
const MAX_RANGE_ITERATIONS: u64 = 100_000;
/// Weight of one value node (roughly its heap cost), so wide collections are not free.
const NODE_WEIGHT: usize = 64;
/// Variables in scope at once; lookups scan them, so they must stay few.
const MAX_VARIABLES: usize = 1000;

fn too_deep() -> String {
    format!("value is nested deeper than {MAX_DEPTH} levels")
}

fn too_large() -> String {
    format!("value exceeds the {MAX_VALUE_BYTES}-byte limit")
}

// -------------------------------------------------------------------------------------------
// Lexer: mirrors text/template/parse/lex.go, including trim markers and comments.
// -------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn to_value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Text(String),
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
    Field(String),
    Var(String),
    Ident(String),
    Bool(bool),
    Nil,
    Number(Num),
    Str(String),
    Eof,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
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

fn line_of(src: &str, offset: usize) -> usize {
    let head = src.as_bytes().get(..offset).unwrap_or(src.as_bytes());
    1 + head.iter().filter(|b| **b == b'\n').count()
}

struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    toks: Vec<Token>,
    trim_next: bool,
}

impl<'s> Lexer<'s> {
    fn lex(src: &'s str) -> Result<Vec<Token>, TemplateError> {
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

    fn push(&mut self, tok: Tok, start: usize, end: usize) {
        self.toks.push(Token { tok, start, end });
    }

    fn run(&mut self) -> Result<(), TemplateError> {
        loop {
            let Some(offset) = self.rest().find("{{") else {
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
        let from = self.pos;
        let mut text = self.src.get(from..to).unwrap_or("");
        if std::mem::take(&mut self.trim_next) {
            text = text.trim_start_matches(is_space_char);
        }
        if trim_right {
            text = text.trim_end_matches(is_space_char);
        }
        if !text.is_empty() {
            self.push(Tok::Text(text.to_string()), from, to);
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

    fn single(&mut self, tok: Tok) {
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
        let tail = self.src.get(from..).unwrap_or("");
        from + tail.find(|c: char| !is_alnum(c)).unwrap_or(tail.len())
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
            WordKind::Var => Tok::Var(text.to_string()),
            WordKind::Field if name.is_empty() => Tok::Dot,
            WordKind::Field => Tok::Field(name.to_string()),
            WordKind::Ident => match name {
                "true" => Tok::Bool(true),
                "false" => Tok::Bool(false),
                "nil" => Tok::Nil,
                _ => Tok::Ident(name.to_string()),
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
        let value = unescape(inner, '"').map_err(|msg| self.error(start, msg))?;
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
        let value = self
            .src
            .get(start + 1..close)
            .unwrap_or("")
            .replace('\r', "");
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
fn parse_go_int(text: &str) -> Option<i64> {
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

// -------------------------------------------------------------------------------------------
// Parser: mirrors text/template/parse/parse.go, including its parse-time checks (undefined
// functions and variables, misplaced `{{break}}`), so errors match what Argo CD reports.
// -------------------------------------------------------------------------------------------

type Span = (usize, usize);

#[derive(Debug)]
enum Node {
    Text(String),
    Action(Pipe),
    If(Box<Control>),
    With(Box<Control>),
    Range(Box<Control>),
    Break,
    Continue,
}

#[derive(Debug)]
struct Control {
    pipe: Pipe,
    list: Vec<Node>,
    else_list: Option<Vec<Node>>,
}

#[derive(Debug)]
struct Pipe {
    decl: Vec<String>,
    is_assign: bool,
    cmds: Vec<Cmd>,
    span: Span,
}

#[derive(Debug)]
struct Cmd {
    args: Vec<Operand>,
    span: Span,
}

#[derive(Debug)]
struct Operand {
    term: Term,
    span: Span,
}

#[derive(Debug)]
enum Term {
    Dot,
    Nil,
    /// Literals are shared, so evaluating one in a loop copies nothing.
    Const(Rc<Value>),
    Field(Vec<String>),
    Var(String, Vec<String>),
    Func(String),
    Pipe(Box<Pipe>),
    Chain(Box<Term>, Vec<String>),
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    If,
    With,
    Range,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::If => "if",
            Kind::With => "with",
            Kind::Range => "range",
        }
    }
}

enum Item {
    Node(Node),
    End,
    Else,
}

enum Stop {
    Eof,
    End,
    Else,
}

const KEYWORDS: &[&str] = &[
    "block", "break", "continue", "define", "else", "end", "if", "range", "template", "with",
];

fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Eof => "EOF".into(),
        Tok::Text(_) => "text".into(),
        Tok::Open => "\"{{\"".into(),
        Tok::Close => "\"}}\"".into(),
        Tok::Space => "space".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::LParen => "\"(\"".into(),
        Tok::RParen => "\")\"".into(),
        Tok::Comma => "\",\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Dot => "\".\"".into(),
        Tok::Field(name) => format!("<.{name}>"),
        Tok::Var(name) => format!("<{name}>"),
        Tok::Ident(name) if is_keyword(name) => format!("<{name}>"),
        Tok::Ident(name) => format!("{name:?}"),
        Tok::Bool(b) => format!("<{b}>"),
        Tok::Nil => "<nil>".into(),
        Tok::Number(_) => "number".into(),
        Tok::Str(s) => format!("{s:?}"),
    }
}

fn starts_operand(tok: &Tok) -> bool {
    match tok {
        Tok::Ident(name) => !is_keyword(name),
        Tok::Bool(_)
        | Tok::Number(_)
        | Tok::Dot
        | Tok::Field(_)
        | Tok::Nil
        | Tok::Str(_)
        | Tok::Var(_)
        | Tok::LParen => true,
        _ => false,
    }
}

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    /// Variables in scope at parse time; Go rejects undefined ones before executing.
    vars: Vec<String>,
    range_depth: usize,
    depth: usize,
    eof: Token,
}

impl<'s> Parser<'s> {
    fn parse(src: &'s str) -> Result<Vec<Node>, TemplateError> {
        let toks = Lexer::lex(src)?;
        let mut parser = Parser {
            src,
            toks,
            pos: 0,
            vars: vec!["$".to_string()],
            range_depth: 0,
            depth: 0,
            eof: Token {
                tok: Tok::Eof,
                start: src.len(),
                end: src.len(),
            },
        };
        let (nodes, stop) = parser.item_list()?;
        match stop {
            Stop::Eof => Ok(nodes),
            Stop::End => Err(parser.error("unexpected {{end}}")),
            Stop::Else => Err(parser.error("unexpected {{else}}")),
        }
    }

    fn cur(&self) -> &Token {
        self.toks.get(self.pos).unwrap_or(&self.eof)
    }

    fn next(&mut self) -> Token {
        let tok = self.cur().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        tok
    }

    fn backup(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn skip_space(&mut self) {
        while self.cur().tok == Tok::Space {
            self.pos += 1;
        }
    }

    fn next_non_space(&mut self) -> Token {
        self.skip_space();
        self.next()
    }

    fn prev_end(&self) -> usize {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or(0, |t| t.end)
    }

    fn error_at(&self, offset: usize, msg: impl fmt::Display) -> TemplateError {
        TemplateError::new(format!("template: :{}: {msg}", line_of(self.src, offset)))
    }

    fn error(&self, msg: impl fmt::Display) -> TemplateError {
        self.error_at(self.cur().start, msg)
    }

    fn unexpected(&self, tok: &Token, context: &str) -> TemplateError {
        self.error_at(
            tok.start,
            format!("unexpected {} in {context}", describe(&tok.tok)),
        )
    }

    fn enter(&mut self) -> Result<(), TemplateError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!("template nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn item_list(&mut self) -> Result<(Vec<Node>, Stop), TemplateError> {
        let mut nodes = Vec::new();
        loop {
            let tok = self.next();
            match tok.tok {
                Tok::Eof => return Ok((nodes, Stop::Eof)),
                Tok::Text(text) => nodes.push(Node::Text(text)),
                Tok::Open => match self.action()? {
                    Item::Node(node) => nodes.push(node),
                    Item::End => return Ok((nodes, Stop::End)),
                    Item::Else => return Ok((nodes, Stop::Else)),
                },
                _ => return Err(self.unexpected(&tok, "input")),
            }
        }
    }

    fn action(&mut self) -> Result<Item, TemplateError> {
        let tok = self.next_non_space();
        if let Tok::Ident(word) = &tok.tok {
            match word.as_str() {
                "if" => return self.control(Kind::If).map(Item::Node),
                "with" => return self.control(Kind::With).map(Item::Node),
                "range" => return self.control(Kind::Range).map(Item::Node),
                "else" => return self.else_action(),
                "end" => return self.expect_close("end").map(|()| Item::End),
                "break" | "continue" => return self.loop_action(word),
                "define" | "template" | "block" => {
                    let msg = format!("{{{{{word}}}}} actions are not supported offline");
                    let mut e = self.error_at(tok.start, msg);
                    e.kind = ErrorKind::Unsupported;
                    return Err(e);
                }
                _ => {}
            }
        }
        self.backup();
        self.pipeline("command")
            .map(|pipe| Item::Node(Node::Action(pipe)))
    }

    fn expect_close(&mut self, context: &str) -> Result<(), TemplateError> {
        let tok = self.next_non_space();
        if tok.tok == Tok::Close {
            Ok(())
        } else {
            Err(self.unexpected(&tok, context))
        }
    }

    /// `{{else if ...}}` leaves the `if` pending, to be parsed as a nested control.
    fn else_action(&mut self) -> Result<Item, TemplateError> {
        self.skip_space();
        if matches!(&self.cur().tok, Tok::Ident(w) if w == "if" || w == "with") {
            return Ok(Item::Else);
        }
        self.expect_close("else").map(|()| Item::Else)
    }

    fn loop_action(&mut self, word: &str) -> Result<Item, TemplateError> {
        self.expect_close(&format!("{{{{{word}}}}}"))?;
        if self.range_depth == 0 {
            return Err(self.error(format!("{{{{{word}}}}} outside {{{{range}}}}")));
        }
        Ok(Item::Node(if word == "break" {
            Node::Break
        } else {
            Node::Continue
        }))
    }

    fn control(&mut self, kind: Kind) -> Result<Node, TemplateError> {
        self.enter()?;
        let scope = self.vars.len();
        let result = self.control_body(kind);
        self.vars.truncate(scope);
        self.depth -= 1;
        result
    }

    fn control_body(&mut self, kind: Kind) -> Result<Node, TemplateError> {
        let pipe = self.pipeline(kind.name())?;
        if kind == Kind::Range {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if kind == Kind::Range {
            self.range_depth -= 1;
        }
        let (list, stop) = listed?;
        let else_list = match stop {
            Stop::Eof => return Err(self.error("unexpected EOF")),
            Stop::End => None,
            Stop::Else => Some(self.else_branch(kind)?),
        };
        let control = Box::new(Control {
            pipe,
            list,
            else_list,
        });
        Ok(match kind {
            Kind::If => Node::If(control),
            Kind::With => Node::With(control),
            Kind::Range => Node::Range(control),
        })
    }

    /// `{{if a}}x{{else if b}}y{{end}}` is `{{if a}}x{{else}}{{if b}}y{{end}}{{end}}`.
    fn else_branch(&mut self, kind: Kind) -> Result<Vec<Node>, TemplateError> {
        let chained = match &self.cur().tok {
            Tok::Ident(w) => (w == "if" && kind == Kind::If) || (w == "with" && kind == Kind::With),
            _ => false,
        };
        if chained {
            self.next();
            return Ok(vec![self.control(kind)?]);
        }
        let (list, stop) = self.item_list()?;
        match stop {
            Stop::End => Ok(list),
            Stop::Eof => Err(self.error("unexpected EOF")),
            Stop::Else => Err(self.error("expected end; found {{else}}")),
        }
    }

    fn pipeline(&mut self, context: &str) -> Result<Pipe, TemplateError> {
        let mut pipe = Pipe {
            decl: Vec::new(),
            is_assign: false,
            cmds: Vec::new(),
            span: (0, 0),
        };
        self.declarations(&mut pipe, context)?;
        loop {
            let tok = self.next_non_space();
            match &tok.tok {
                Tok::Close | Tok::RParen => {
                    if tok.tok == Tok::RParen {
                        self.backup();
                    }
                    self.check_pipeline(&mut pipe, context, &tok)?;
                    return Ok(pipe);
                }
                t if starts_operand(t) => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(&tok, context)),
            }
        }
    }

    fn declare(&mut self, pipe: &mut Pipe, name: String) -> Result<(), TemplateError> {
        if self.vars.len() >= MAX_VARIABLES {
            return Err(self.error(format!("more than {MAX_VARIABLES} variables in scope")));
        }
        pipe.decl.push(name.clone());
        self.vars.push(name);
        Ok(())
    }

    fn declarations(&mut self, pipe: &mut Pipe, context: &str) -> Result<(), TemplateError> {
        loop {
            let save = self.pos;
            self.skip_space();
            let Tok::Var(name) = self.cur().tok.clone() else {
                self.pos = save;
                return Ok(());
            };
            self.next();
            self.skip_space();
            match self.cur().tok {
                Tok::Declare | Tok::Assign => {
                    pipe.is_assign = self.cur().tok == Tok::Assign;
                    self.next();
                    return self.declare(pipe, name);
                }
                Tok::Comma => {
                    self.next();
                    self.declare(pipe, name)?;
                    if context == "range" && pipe.decl.len() < 2 {
                        self.skip_space();
                        if matches!(self.cur().tok, Tok::Var(_) | Tok::Close | Tok::RParen) {
                            continue;
                        }
                        return Err(self.error("range can only initialize variables"));
                    }
                    return Err(self.error(format!("too many declarations in {context}")));
                }
                _ => {
                    self.pos = save;
                    return Ok(());
                }
            }
        }
    }

    fn check_pipeline(
        &self,
        pipe: &mut Pipe,
        context: &str,
        end: &Token,
    ) -> Result<(), TemplateError> {
        let (Some(first), Some(last)) = (pipe.cmds.first(), pipe.cmds.last()) else {
            return Err(self.error_at(end.start, format!("missing value for {context}")));
        };
        pipe.span = (first.span.0, last.span.1);
        for (stage, cmd) in pipe.cmds.iter().enumerate().skip(1) {
            if let Some(op) = cmd.args.first() {
                if matches!(op.term, Term::Const(_) | Term::Dot | Term::Nil) {
                    let msg = format!("non executable command in pipeline stage {}", stage + 1);
                    return Err(self.error_at(op.span.0, msg));
                }
            }
        }
        Ok(())
    }

    fn command(&mut self) -> Result<Cmd, TemplateError> {
        self.skip_space();
        let start = self.cur().start;
        let mut args = Vec::new();
        loop {
            self.skip_space();
            if let Some(op) = self.operand()? {
                args.push(op);
            }
            let tok = self.next();
            match tok.tok {
                Tok::Space => continue,
                Tok::Close | Tok::RParen => self.backup(),
                Tok::Pipe => {}
                _ => return Err(self.unexpected(&tok, "operand")),
            }
            break;
        }
        let end = args.last().map_or(start, |op| op.span.1);
        if args.is_empty() {
            return Err(self.error_at(start, "empty command"));
        }
        Ok(Cmd {
            args,
            span: (start, end),
        })
    }

    fn operand(&mut self) -> Result<Option<Operand>, TemplateError> {
        let start = self.cur().start;
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        while let Tok::Field(name) = &self.cur().tok {
            fields.push(name.clone());
            self.next();
        }
        let term = if fields.is_empty() {
            term
        } else {
            self.chain(term, fields, start)?
        };
        Ok(Some(Operand {
            term,
            span: (start, self.prev_end()),
        }))
    }

    fn chain(&self, term: Term, fields: Vec<String>, start: usize) -> Result<Term, TemplateError> {
        match term {
            Term::Field(mut names) => {
                names.extend(fields);
                Ok(Term::Field(names))
            }
            Term::Var(name, mut names) => {
                names.extend(fields);
                Ok(Term::Var(name, names))
            }
            Term::Func(_) | Term::Pipe(_) | Term::Chain(..) => {
                Ok(Term::Chain(Box::new(term), fields))
            }
            Term::Const(_) | Term::Dot | Term::Nil => {
                let text = self.src.get(start..self.prev_end()).unwrap_or("");
                Err(self.error_at(start, format!("unexpected . after term {text:?}")))
            }
        }
    }

    fn term(&mut self) -> Result<Option<Term>, TemplateError> {
        let tok = self.next_non_space();
        let term = match tok.tok {
            Tok::Ident(name) if is_keyword(&name) => {
                self.backup();
                return Ok(None);
            }
            Tok::Ident(name) => {
                if !is_known_function(&name) {
                    return Err(self.error_at(tok.start, format!("function {name:?} not defined")));
                }
                Term::Func(name)
            }
            Tok::Dot => Term::Dot,
            Tok::Nil => Term::Nil,
            Tok::Var(name) => {
                if !self.vars.contains(&name) {
                    return Err(self.error_at(tok.start, format!("undefined variable {name:?}")));
                }
                Term::Var(name, Vec::new())
            }
            Tok::Field(name) => Term::Field(vec![name]),
            Tok::Bool(b) => Term::Const(Rc::new(Value::Bool(b))),
            Tok::Number(n) => Term::Const(Rc::new(n.to_value())),
            Tok::Str(s) => Term::Const(Rc::new(Value::String(s))),
            Tok::LParen => return self.parenthesized().map(Some),
            _ => {
                self.backup();
                return Ok(None);
            }
        };
        Ok(Some(term))
    }

    fn parenthesized(&mut self) -> Result<Term, TemplateError> {
        self.enter()?;
        let pipe = self.pipeline("parenthesized pipeline");
        self.depth -= 1;
        let pipe = pipe?;
        let tok = self.next();
        if tok.tok != Tok::RParen {
            let msg = format!("unclosed right paren: unexpected {}", describe(&tok.tok));
            return Err(self.error_at(tok.start, msg));
        }
        Ok(Term::Pipe(Box::new(pipe)))
    }
}

// -------------------------------------------------------------------------------------------
// Runtime values. Data is borrowed, never copied, unless a function builds something new.
// -------------------------------------------------------------------------------------------

/// A template value. `Missing` is Go's invalid `reflect.Value`: a missing map key, printed as
/// `<no value>`, which is different from a JSON `null` (Go's nil interface).
#[derive(Clone, Debug)]
enum Val<'a> {
    Missing,
    Ref(&'a Value),
    Own(Rc<Value>),
}

impl<'a> Val<'a> {
    fn new(v: Value) -> Self {
        Val::Own(Rc::new(v))
    }

    fn str(s: impl Into<String>) -> Self {
        Val::new(Value::String(s.into()))
    }

    fn int(i: i64) -> Self {
        Val::new(Value::from(i))
    }

    fn bool(b: bool) -> Self {
        Val::new(Value::Bool(b))
    }

    fn value(&self) -> Option<&Value> {
        match self {
            Val::Missing => None,
            Val::Ref(v) => Some(v),
            Val::Own(v) => Some(v),
        }
    }

    /// The value unless it is nil in Go's eyes (missing or JSON null).
    fn nonnull(&self) -> Option<&Value> {
        self.value().filter(|v| !v.is_null())
    }

    /// Go unwraps interface results after each command, so a nil becomes "no value".
    fn dig(self) -> Self {
        if matches!(self.value(), Some(Value::Null)) {
            Val::Missing
        } else {
            self
        }
    }
}

fn is_true(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

fn truth(v: &Val) -> bool {
    v.value().is_some_and(is_true)
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) => number_type(n),
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn number_type(n: &Number) -> &'static str {
    if n.is_i64() {
        "int"
    } else if n.is_u64() {
        "uint64"
    } else {
        "float64"
    }
}

/// Work counter shared by the executor and the functions: the caller's budget, moved in for
/// one string, and this string's iterations.
struct Budget {
    work: Work,
    iterations: u64,
}

impl Budget {
    fn new(work: Work) -> Budget {
        Budget {
            work,
            iterations: 0,
        }
    }

    fn exhausted(&self, why: Exhausted) -> String {
        match why {
            Exhausted::Unit => format!(
                "evaluation exceeds the budget of {} steps",
                self.work.limit()
            ),
            Exhausted::Run => "evaluation stopped: the run's budget is spent".to_string(),
        }
    }

    fn charge(&mut self, steps: u64) -> Result<(), String> {
        self.work.charge(steps).map_err(|why| self.exhausted(why))
    }

    fn charge_bytes(&mut self, bytes: usize) -> Result<(), String> {
        self.work
            .charge_bytes(bytes)
            .map_err(|why| self.exhausted(why))
    }

    fn iterate(&mut self) -> Result<(), String> {
        self.iterations += 1;
        if self.iterations > MAX_RANGE_ITERATIONS {
            return Err(format!("range exceeds {MAX_RANGE_ITERATIONS} iterations"));
        }
        self.charge(1)
    }
}

/// Size of `v` in weight units, refusing values too large or too deep to copy safely. Runs
/// with an explicit stack, and charges children before visiting them, so it stays bounded.
fn weigh(v: &Value) -> Result<usize, String> {
    let mut total = NODE_WEIGHT;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        match v {
            Value::String(s) => total = total.saturating_add(s.len()),
            Value::Array(items) => {
                total = total.saturating_add(items.len().saturating_mul(NODE_WEIGHT));
                if total <= MAX_VALUE_BYTES {
                    stack.extend(items.iter().map(|item| (item, depth + 1)));
                }
            }
            Value::Object(map) => {
                for key in map.keys() {
                    total = total.saturating_add(NODE_WEIGHT + key.len());
                }
                if total <= MAX_VALUE_BYTES {
                    stack.extend(map.values().map(|item| (item, depth + 1)));
                }
            }
            _ => {}
        }
        if total > MAX_VALUE_BYTES {
            return Err(too_large());
        }
    }
    Ok(total)
}

/// Copies `v` for a new collection, counting it against a running `total` for that collection.
fn own(budget: &mut Budget, v: &Val, total: &mut usize) -> Result<Value, String> {
    let Some(value) = v.value() else {
        return Ok(Value::Null);
    };
    let weight = weigh(value)?;
    *total = total.saturating_add(weight);
    if *total > MAX_VALUE_BYTES {
        return Err(too_large());
    }
    budget.charge_bytes(weight)?;
    Ok(value.clone())
}

fn own_all(budget: &mut Budget, vals: &[Val]) -> Result<Vec<Value>, String> {
    let mut total = 0;
    vals.iter().map(|v| own(budget, v, &mut total)).collect()
}

enum Key<'k> {
    Field(&'k str),
    Index(usize),
}

fn lookup<'v>(v: &'v Value, key: &Key) -> Option<&'v Value> {
    match (v, key) {
        (Value::Object(map), Key::Field(name)) => map.get(*name),
        (Value::Array(items), Key::Index(i)) => items.get(*i),
        _ => None,
    }
}

/// A member of `parent`: borrowed when the parent is data, copied (and paid for) otherwise.
fn child<'a>(budget: &mut Budget, parent: &Val<'a>, key: &Key) -> Result<Option<Val<'a>>, String> {
    match parent {
        Val::Missing => Ok(None),
        Val::Ref(v) => Ok(lookup(v, key).map(Val::Ref)),
        Val::Own(v) => match lookup(v, key) {
            None => Ok(None),
            Some(member) => {
                budget.charge_bytes(weigh(member)?)?;
                Ok(Some(Val::new(member.clone())))
            }
        },
    }
}

// -------------------------------------------------------------------------------------------
// Executor: mirrors text/template/exec.go.
// -------------------------------------------------------------------------------------------

/// An execution error, located at the innermost node that raised it.
struct Fail {
    msg: String,
    span: Option<Span>,
    /// Set where the kind is known; otherwise read from the message in [`locate`].
    kind: Option<ErrorKind>,
}

impl From<String> for Fail {
    fn from(msg: String) -> Self {
        Fail {
            msg,
            span: None,
            kind: None,
        }
    }
}

impl Fail {
    fn unsupported(msg: String, span: Span) -> Fail {
        Fail {
            msg,
            span: Some(span),
            kind: Some(ErrorKind::Unsupported),
        }
    }

    fn at_span(mut self, span: Span) -> Fail {
        self.span.get_or_insert(span);
        self
    }
}

/// Whether `msg` is one of this engine's own bounds, possibly raised inside a function. Only
/// exact messages count: `fail` prints what the template says, after its own prefix.
fn is_limit(msg: &str) -> bool {
    let inner = msg
        .strip_prefix("error calling ")
        .and_then(|rest| rest.split_once(": "))
        .filter(|(name, _)| {
            *name != "fail" && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
        .map_or(msg, |(_, inner)| inner);
    inner == too_deep()
        || inner == too_large()
        || inner == format!("output exceeds the {MAX_OUTPUT}-byte limit")
        || inner == format!("range exceeds {MAX_RANGE_ITERATIONS} iterations")
        || inner
            .strip_prefix("text exceeds the ")
            .and_then(|r| r.strip_suffix("-byte limit"))
            .is_some_and(|n| n.parse::<usize>().is_ok())
}

type Res<T> = Result<T, Fail>;

trait At<T> {
    fn at(self, span: Span) -> Res<T>;
}

impl<T> At<T> for Result<T, String> {
    fn at(self, span: Span) -> Res<T> {
        self.map_err(|msg| Fail {
            msg,
            span: Some(span),
            kind: None,
        })
    }
}

impl<T> At<T> for Res<T> {
    fn at(self, span: Span) -> Res<T> {
        self.map_err(|mut fail| {
            fail.span.get_or_insert(span);
            fail
        })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Flow {
    Next,
    Break,
    Continue,
}

fn snippet(src: &str, span: Span) -> String {
    let text: String = src
        .get(span.0..span.1)
        .unwrap_or("")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

fn locate(src: &str, fail: Fail) -> TemplateError {
    let kind = fail.kind.unwrap_or(if is_limit(&fail.msg) {
        ErrorKind::Limit
    } else {
        ErrorKind::Invalid
    });
    let Some((start, end)) = fail.span else {
        return TemplateError::of_kind(format!("template: {}", fail.msg), kind);
    };
    let head = src.get(..start).unwrap_or(src);
    let line = 1 + head.matches('\n').count();
    let col = head.rfind('\n').map_or(start, |nl| start - nl - 1);
    let context = snippet(src, (start, end));
    TemplateError::of_kind(
        format!(
            "template: :{line}:{col}: executing at <{context}>: {}",
            fail.msg
        ),
        kind,
    )
}

struct Exec<'a, 's, 'b> {
    src: &'s str,
    missingkey_error: bool,
    vars: Vec<(String, Val<'a>)>,
    out: String,
    budget: &'b mut Budget,
}

impl<'a, 's, 'b> Exec<'a, 's, 'b> {
    fn new(src: &'s str, missingkey_error: bool, budget: &'b mut Budget) -> Self {
        Exec {
            src,
            missingkey_error,
            vars: Vec::new(),
            out: String::new(),
            budget,
        }
    }

    fn run(mut self, data: &'a Value, nodes: &[Node]) -> Result<String, TemplateError> {
        let dot = if data.is_null() {
            Val::Missing
        } else {
            Val::Ref(data)
        };
        self.vars.push(("$".to_string(), dot.clone()));
        match self.walk(&dot, nodes) {
            Ok(_) => Ok(self.out),
            Err(fail) => Err(locate(self.src, fail)),
        }
    }

    fn write(&mut self, text: &str) -> Result<(), String> {
        if self.out.len().saturating_add(text.len()) > MAX_OUTPUT {
            return Err(format!("output exceeds the {MAX_OUTPUT}-byte limit"));
        }
        // Output is paid for too: printing one large value in many places copies it each time.
        let copied = text.len() / super::budget::BYTES_PER_STEP;
        self.budget
            .charge(u64::try_from(copied).unwrap_or(u64::MAX))?;
        self.out.push_str(text);
        Ok(())
    }

    fn walk(&mut self, dot: &Val<'a>, nodes: &[Node]) -> Res<Flow> {
        for node in nodes {
            self.budget.charge(1)?;
            let flow = match node {
                Node::Text(text) => {
                    self.write(text)?;
                    Flow::Next
                }
                Node::Action(pipe) => {
                    let value = self.pipeline(dot, pipe)?;
                    if pipe.decl.is_empty() {
                        self.print(&value).at(pipe.span)?;
                    }
                    Flow::Next
                }
                Node::If(control) => self.if_or_with(dot, control, false)?,
                Node::With(control) => self.if_or_with(dot, control, true)?,
                Node::Range(control) => self.range(dot, control)?,
                Node::Break => Flow::Break,
                Node::Continue => Flow::Continue,
            };
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    fn print(&mut self, value: &Val<'a>) -> Result<(), String> {
        match value.value() {
            None => self.write("<no value>"),
            Some(Value::String(s)) => self.write(s),
            Some(v) => {
                let mut out = Out::new(MAX_OUTPUT.saturating_sub(self.out.len()));
                write_v(&mut out, v, 0)
                    .map_err(|_| format!("output exceeds the {MAX_OUTPUT}-byte limit"))?;
                self.write(&out.buf)
            }
        }
    }

    fn if_or_with(&mut self, dot: &Val<'a>, control: &Control, with: bool) -> Res<Flow> {
        let scope = self.vars.len();
        let value = self.pipeline(dot, &control.pipe)?;
        let flow = if truth(&value) {
            let inner = if with { value } else { dot.clone() };
            self.walk(&inner, &control.list)?
        } else if let Some(else_list) = &control.else_list {
            self.walk(dot, else_list)?
        } else {
            Flow::Next
        };
        self.vars.truncate(scope);
        Ok(flow)
    }

    fn range(&mut self, dot: &Val<'a>, control: &Control) -> Res<Flow> {
        let scope = self.vars.len();
        let value = self.pipeline(dot, &control.pipe)?;
        let mark = self.vars.len();
        let flow = self
            .range_over(dot, control, &value, mark)
            .at(control.pipe.span)?;
        self.vars.truncate(scope);
        Ok(flow)
    }

    fn range_over(
        &mut self,
        dot: &Val<'a>,
        control: &Control,
        value: &Val<'a>,
        mark: usize,
    ) -> Res<Flow> {
        let ran = match value.value() {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) => self.range_list(control, value, items.len(), mark)?,
            Some(Value::Object(map)) => self.range_map(control, value, map, mark)?,
            Some(Value::Number(n)) if n.as_i64().is_some() => {
                self.range_count(control, n.as_i64().unwrap_or(0), mark)?
            }
            Some(other) => {
                let shown = strval(Some(other))?;
                return Err(format!("range can't iterate over {shown}").into());
            }
        };
        match &control.else_list {
            Some(else_list) if !ran => self.walk(dot, else_list),
            _ => Ok(Flow::Next),
        }
    }

    /// Returns whether the body ran at all (else the `{{else}}` branch runs).
    fn range_list(
        &mut self,
        control: &Control,
        list: &Val<'a>,
        len: usize,
        mark: usize,
    ) -> Res<bool> {
        for i in 0..len {
            let elem = child(self.budget, list, &Key::Index(i))?.unwrap_or(Val::Missing);
            let index = Val::int(i64::try_from(i).unwrap_or(i64::MAX));
            if self.iteration(control, mark, index, elem)? {
                break;
            }
        }
        Ok(len > 0)
    }

    fn range_map(
        &mut self,
        control: &Control,
        value: &Val<'a>,
        map: &Map<String, Value>,
        mark: usize,
    ) -> Res<bool> {
        // Go ranges over maps in sorted key order.
        self.budget
            .charge_bytes(map.len().saturating_mul(NODE_WEIGHT))?;
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for key in &keys {
            let elem = child(self.budget, value, &Key::Field(key))?.unwrap_or(Val::Missing);
            if self.iteration(control, mark, Val::str(key.as_str()), elem)? {
                break;
            }
        }
        Ok(!keys.is_empty())
    }

    /// Go 1.22+ ranges over an integer: 0, 1, ..., n-1.
    fn range_count(&mut self, control: &Control, count: i64, mark: usize) -> Res<bool> {
        for i in 0..count {
            if self.iteration(control, mark, Val::int(i), Val::int(i))? {
                break;
            }
        }
        Ok(count > 0)
    }

    /// One pass of a range body; returns true when `{{break}}` ends the loop.
    fn iteration(
        &mut self,
        control: &Control,
        mark: usize,
        key: Val<'a>,
        elem: Val<'a>,
    ) -> Res<bool> {
        self.budget.iterate()?;
        let len = self.vars.len();
        let decls = control.pipe.decl.len();
        if decls >= 1 {
            if let Some(slot) = len.checked_sub(1).and_then(|i| self.vars.get_mut(i)) {
                slot.1 = elem.clone();
            }
        }
        if decls >= 2 {
            if let Some(slot) = len.checked_sub(2).and_then(|i| self.vars.get_mut(i)) {
                slot.1 = key;
            }
        }
        let flow = self.walk(&elem, &control.list)?;
        self.vars.truncate(mark);
        Ok(flow == Flow::Break)
    }

    fn pipeline(&mut self, dot: &Val<'a>, pipe: &Pipe) -> Res<Val<'a>> {
        let mut value: Option<Val<'a>> = None;
        for cmd in &pipe.cmds {
            let result = self.command(dot, cmd, value.take())?;
            value = Some(result.dig());
        }
        let value = value.unwrap_or(Val::Missing);
        for name in &pipe.decl {
            if pipe.is_assign {
                self.assign(name, value.clone()).at(pipe.span)?;
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    /// `fin` is the previous pipeline stage's value, passed as the last argument.
    fn command(&mut self, dot: &Val<'a>, cmd: &Cmd, fin: Option<Val<'a>>) -> Res<Val<'a>> {
        self.budget.charge(1)?;
        let Some((first, rest)) = cmd.args.split_first() else {
            return Err(Fail::from("empty command".to_string()));
        };
        let has_args = !rest.is_empty() || fin.is_some();
        match &first.term {
            Term::Func(name) => self.call(dot, name, rest, fin, cmd.span),
            Term::Field(names) => self.fields(dot.clone(), names, has_args).at(first.span),
            Term::Var(name, names) if !names.is_empty() => {
                let base = self.var(name).at(first.span)?;
                self.fields(base, names, has_args).at(first.span)
            }
            Term::Chain(head, names) => {
                let base = self.eval_arg(dot, head, first.span)?;
                self.fields(base, names, has_args).at(first.span)
            }
            Term::Nil => Err("nil is not a command".to_string()).at(first.span),
            term => {
                if has_args {
                    let shown = snippet(self.src, first.span);
                    return Err(format!("can't give argument to non-function {shown}"))
                        .at(first.span);
                }
                self.eval_arg(dot, term, first.span)
            }
        }
    }

    /// Evaluates an operand used as an argument.
    fn eval_arg(&mut self, dot: &Val<'a>, term: &Term, span: Span) -> Res<Val<'a>> {
        self.budget.charge(1)?;
        match term {
            Term::Dot => Ok(dot.clone()),
            Term::Nil => Ok(Val::new(Value::Null)),
            Term::Const(value) => Ok(Val::Own(Rc::clone(value))),
            Term::Field(names) => self.fields(dot.clone(), names, false).at(span),
            Term::Var(name, names) => {
                let base = self.var(name).at(span)?;
                self.fields(base, names, false).at(span)
            }
            Term::Func(name) => self.call(dot, name, &[], None, span),
            Term::Pipe(pipe) => self.pipeline(dot, pipe),
            Term::Chain(head, names) => {
                let base = self.eval_arg(dot, head, span)?;
                self.fields(base, names, false).at(span)
            }
        }
    }

    fn fields(
        &mut self,
        mut receiver: Val<'a>,
        names: &[String],
        has_args: bool,
    ) -> Result<Val<'a>, String> {
        self.budget
            .charge(u64::try_from(names.len()).unwrap_or(u64::MAX))?;
        for (i, name) in names.iter().enumerate() {
            let last = i + 1 == names.len();
            receiver = self.field(&receiver, name, last && has_args)?;
        }
        Ok(receiver)
    }

    fn field(&mut self, receiver: &Val<'a>, name: &str, has_args: bool) -> Result<Val<'a>, String> {
        match receiver.value() {
            None if self.missingkey_error => Err(format!("nil data; no entry for key {name:?}")),
            None => Ok(Val::Missing),
            Some(Value::Null) => Err(format!("nil pointer evaluating interface {{}}.{name}")),
            Some(Value::Object(map)) => {
                if has_args {
                    return Err(format!("{name} is not a method but has arguments"));
                }
                if map.contains_key(name) {
                    Ok(child(self.budget, receiver, &Key::Field(name))?.unwrap_or(Val::Missing))
                } else if self.missingkey_error {
                    Err(format!("map has no entry for key {name:?}"))
                } else {
                    Ok(Val::Missing)
                }
            }
            Some(other) => Err(format!(
                "can't evaluate field {name} in type {}",
                go_type(other)
            )),
        }
    }

    fn var(&mut self, name: &str) -> Result<Val<'a>, String> {
        let found = self.vars.iter().rev().position(|(n, _)| n == name);
        // Lookups scan the scope, so deep scopes cost more.
        let scanned = found.unwrap_or(self.vars.len());
        self.budget.charge_bytes(scanned.saturating_mul(8))?;
        found
            .and_then(|back| self.vars.iter().rev().nth(back))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("undefined variable: {name}"))
    }

    fn assign(&mut self, name: &str, value: Val<'a>) -> Result<(), String> {
        match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
            Some(slot) => {
                slot.1 = value;
                Ok(())
            }
            None => Err(format!("undefined variable: {name}")),
        }
    }

    fn call(
        &mut self,
        dot: &Val<'a>,
        name: &str,
        params: &[Operand],
        fin: Option<Val<'a>>,
        span: Span,
    ) -> Res<Val<'a>> {
        self.budget.charge(1)?;
        if name == "and" || name == "or" {
            return self.and_or(dot, name == "or", params, fin).at(span);
        }
        if UNSUPPORTED.contains(&name) {
            return Err(Fail::unsupported(
                format!("function {name:?} is not supported offline"),
                span,
            ));
        }
        let mut args = Vec::with_capacity(params.len() + 1);
        for param in params {
            args.push(self.eval_arg(dot, &param.term, param.span)?);
        }
        args.extend(fin);
        // Functions scan their string arguments (`contains`, `eq`, `sha256sum`, ...).
        for arg in &args {
            if let Some(Value::String(s)) = arg.value() {
                self.budget.charge_bytes(s.len()).at(span)?;
            }
        }
        let result = call_func(name, &args, self.budget).map_err(|msg| {
            let msg = format!("error calling {name}: {msg}");
            // Only names Argo CD defines get this far: one not implemented is this engine's gap.
            if IMPLEMENTED.contains(&name) {
                Fail::from(msg).at_span(span)
            } else {
                Fail::unsupported(msg, span)
            }
        })?;
        if let Val::Own(value) = &result {
            let weight = weigh(value).at(span)?;
            self.budget.charge_bytes(weight).at(span)?;
        }
        Ok(result)
    }

    /// `and` and `or` short-circuit and return one of their operands, as in Go.
    fn and_or(
        &mut self,
        dot: &Val<'a>,
        is_or: bool,
        params: &[Operand],
        fin: Option<Val<'a>>,
    ) -> Res<Val<'a>> {
        if params.is_empty() && fin.is_none() {
            return Err(Fail::from(
                "wrong number of args: want at least 1 got 0".to_string(),
            ));
        }
        let mut last = Val::Missing;
        for param in params {
            let value = self.eval_arg(dot, &param.term, param.span)?;
            if truth(&value) == is_or {
                return Ok(value);
            }
            last = value;
        }
        Ok(fin.unwrap_or(last))
    }
}

// -------------------------------------------------------------------------------------------
// Formatting: Go's fmt `%v`, printf, strconv.Quote, encoding/json and a small YAML emitter.
// -------------------------------------------------------------------------------------------

/// A string builder that refuses to grow past its limit.
struct Out {
    buf: String,
    limit: usize,
}

impl Out {
    fn new(limit: usize) -> Self {
        Out {
            buf: String::new(),
            limit,
        }
    }

    fn push(&mut self, s: &str) -> Result<(), String> {
        if self.buf.len().saturating_add(s.len()) > self.limit {
            return Err(format!("text exceeds the {}-byte limit", self.limit));
        }
        self.buf.push_str(s);
        Ok(())
    }

    fn indent(&mut self, width: usize) -> Result<(), String> {
        for _ in 0..width {
            self.push(" ")?;
        }
        Ok(())
    }
}

fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Go's `%v`: `map[k:v]` with sorted keys, `[a b]`, unquoted strings, `<nil>`.
fn write_v(out: &mut Out, v: &Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    match v {
        Value::Null => out.push("<nil>"),
        Value::Bool(b) => out.push(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push(&format_number(n)),
        Value::String(s) => out.push(s),
        Value::Array(items) => {
            out.push("[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(" ")?;
                }
                write_v(out, item, depth + 1)?;
            }
            out.push("]")
        }
        Value::Object(map) => {
            out.push("map[")?;
            for (i, (key, item)) in sorted_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(" ")?;
                }
                out.push(key)?;
                out.push(":")?;
                write_v(out, item, depth + 1)?;
            }
            out.push("]")
        }
    }
}

/// Sprig's `strval`: strings as they are, everything else as `%v`, nil as `<nil>`.
fn strval(v: Option<&Value>) -> Result<String, String> {
    match v {
        None => Ok("<nil>".to_string()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => {
            let mut out = Out::new(MAX_VALUE_BYTES);
            write_v(&mut out, v, 0)?;
            Ok(out.buf)
        }
    }
}

fn format_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_float(n.as_f64().unwrap_or(0.0))
    }
}

/// Shortest round-trip digits and decimal exponent of `|f|` (`1234.5` → "12345", 3).
fn float_digits(f: f64) -> (String, i32) {
    let formatted = format!("{:e}", f.abs());
    let (mantissa, exponent) = formatted.split_once('e').unwrap_or((&formatted, "0"));
    let digits = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse().unwrap_or(0))
}

fn exponent_form(digits: &str, exp: i32, min_exp_digits: usize) -> String {
    let (head, tail) = digits.split_at(digits.len().min(1));
    let sign = if exp < 0 { '-' } else { '+' };
    let dot = if tail.is_empty() { "" } else { "." };
    format!(
        "{head}{dot}{tail}e{sign}{:0min_exp_digits$}",
        exp.unsigned_abs()
    )
}

fn fixed_form(digits: &str, exp: i32) -> String {
    match usize::try_from(exp) {
        Ok(e) if digits.len() > e + 1 => {
            let (int, frac) = digits.split_at(e + 1);
            format!("{int}.{frac}")
        }
        Ok(e) => format!("{digits}{}", "0".repeat(e + 1 - digits.len())),
        Err(_) => {
            let zeros = usize::try_from(-i64::from(exp) - 1).unwrap_or(0);
            format!("0.{}{digits}", "0".repeat(zeros))
        }
    }
}

/// Go's `%v` for float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): 1e+06, 123456, 1.5.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (digits, exp) = float_digits(f);
    let body = if !(-4..6).contains(&exp) {
        exponent_form(&digits, exp, 2)
    } else {
        fixed_form(&digits, exp)
    };
    if f < 0.0 {
        format!("-{body}")
    } else {
        body
    }
}

/// encoding/json's float format: fixed unless tiny or huge, then `1e+21` / `1e-7`.
fn json_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (digits, exp) = float_digits(f);
    let abs = f.abs();
    let body = if !(1e-6..1e21).contains(&abs) {
        exponent_form(&digits, exp, if exp < 0 { 1 } else { 2 })
    } else {
        fixed_form(&digits, exp)
    };
    if f < 0.0 {
        format!("-{body}")
    } else {
        body
    }
}

fn json_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        json_float(n.as_f64().unwrap_or(0.0))
    }
}

/// Go's `strconv.Quote`. Only control characters count as unprintable here; Go also escapes
/// a few other unprintable code points that have no Rust classification.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_go_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

fn push_go_escaped(out: &mut String, c: char, quote: char) {
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        '\\' => out.push_str("\\\\"),
        c if c == quote => {
            out.push('\\');
            out.push(c);
        }
        c if u32::from(c) < 0x20 || c == '\u{7f}' => {
            out.push_str(&format!("\\x{:02x}", u32::from(c)))
        }
        c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
        c => out.push(c),
    }
}

fn write_json_string(out: &mut Out, s: &str, escape_html: bool) -> Result<(), String> {
    out.push(&go_json_string(s, escape_html))
}

/// A JSON string as Go's `encoding/json` writes it (with `escape_html`, as `json.Marshal`
/// does: `<`, `>` and `&` escaped too).
pub(crate) fn go_json_string(s: &str, escape_html: bool) -> String {
    let mut buf = String::with_capacity(s.len() + 2);
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            '\u{8}' => buf.push_str("\\b"),
            '\u{c}' => buf.push_str("\\f"),
            '<' | '>' | '&' if escape_html => buf.push_str(&format!("\\u{:04x}", u32::from(c))),
            '\u{2028}' | '\u{2029}' => buf.push_str(&format!("\\u{:04x}", u32::from(c))),
            c if u32::from(c) < 0x20 => buf.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => buf.push(c),
        }
    }
    buf.push('"');
    buf
}

#[derive(Clone, Copy)]
struct JsonStyle {
    escape_html: bool,
    pretty: bool,
}

fn json_break(out: &mut Out, style: JsonStyle, level: usize) -> Result<(), String> {
    if style.pretty {
        out.push("\n")?;
        out.indent(level * 2)?;
    }
    Ok(())
}

/// encoding/json's output: sorted keys, HTML-safe escapes unless `toRawJson`.
fn write_json(out: &mut Out, v: &Value, style: JsonStyle, level: usize) -> Result<(), String> {
    if level > MAX_DEPTH {
        return Err(too_deep());
    }
    match v {
        Value::Null => out.push("null"),
        Value::Bool(b) => out.push(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push(&json_number(n)),
        Value::String(s) => write_json_string(out, s, style.escape_html),
        Value::Array(items) if items.is_empty() => out.push("[]"),
        Value::Array(items) => {
            out.push("[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(",")?;
                }
                json_break(out, style, level + 1)?;
                write_json(out, item, style, level + 1)?;
            }
            json_break(out, style, level)?;
            out.push("]")
        }
        Value::Object(map) if map.is_empty() => out.push("{}"),
        Value::Object(map) => {
            out.push("{")?;
            for (i, (key, item)) in sorted_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(",")?;
                }
                json_break(out, style, level + 1)?;
                write_json_string(out, key, style.escape_html)?;
                out.push(if style.pretty { ": " } else { ":" })?;
                write_json(out, item, style, level + 1)?;
            }
            json_break(out, style, level)?;
            out.push("}")
        }
    }
}

fn to_json(v: Option<&Value>, style: JsonStyle) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    match v {
        None => out.push("null")?,
        Some(v) => write_json(&mut out, v, style, 0)?,
    }
    Ok(out.buf)
}

/// Argo CD's `toYaml` (sigs.k8s.io/yaml, trailing newline removed), for common shapes: block
/// maps with sorted keys, sequences at their key's indentation, literal blocks for multi-line
/// strings, and quotes wherever a plain scalar could be misread.
fn to_yaml(v: Option<&Value>) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    match v {
        None => out.push("null\n")?,
        Some(v) => yaml_node(&mut out, v, 0, false, 0)?,
    }
    let mut text = out.buf;
    if text.ends_with('\n') {
        text.pop();
    }
    Ok(text)
}

/// Writes a node; with `inline` its first line continues the current one (after `- `).
fn yaml_node(
    out: &mut Out,
    v: &Value,
    indent: usize,
    inline: bool,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    match v {
        Value::Object(map) if !map.is_empty() => yaml_map(out, map, indent, inline, depth),
        Value::Array(items) if !items.is_empty() => yaml_seq(out, items, indent, inline, depth),
        Value::String(s) if yaml_literal_ok(s) => yaml_literal(out, s, indent),
        scalar => {
            out.push(&yaml_scalar(scalar))?;
            out.push("\n")
        }
    }
}

fn yaml_map(
    out: &mut Out,
    map: &Map<String, Value>,
    indent: usize,
    inline: bool,
    depth: usize,
) -> Result<(), String> {
    for (i, (key, value)) in sorted_entries(map).into_iter().enumerate() {
        if i > 0 || !inline {
            out.indent(indent)?;
        }
        out.push(&yaml_string(key))?;
        out.push(":")?;
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push("\n")?;
                yaml_map(out, m, indent + 2, false, depth + 1)?;
            }
            Value::Array(items) if !items.is_empty() => {
                out.push("\n")?;
                yaml_seq(out, items, indent, false, depth + 1)?;
            }
            Value::String(s) if yaml_literal_ok(s) => {
                out.push(" ")?;
                yaml_literal(out, s, indent + 2)?;
            }
            scalar => {
                out.push(" ")?;
                out.push(&yaml_scalar(scalar))?;
                out.push("\n")?;
            }
        }
    }
    Ok(())
}

fn yaml_seq(
    out: &mut Out,
    items: &[Value],
    indent: usize,
    inline: bool,
    depth: usize,
) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline {
            out.indent(indent)?;
        }
        out.push("- ")?;
        yaml_node(out, item, indent + 2, true, depth + 1)?;
    }
    Ok(())
}

/// Multi-line strings become literal blocks unless their indentation would be ambiguous.
fn yaml_literal_ok(s: &str) -> bool {
    s.contains('\n')
        && !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
        && s.split('\n')
            .find(|line| !line.is_empty())
            .is_none_or(|line| !line.starts_with([' ', '\t']))
}

fn yaml_literal(out: &mut Out, s: &str, indent: usize) -> Result<(), String> {
    let body = s.strip_suffix('\n');
    let chomp = match body {
        None => "|-",
        Some(b) if b.ends_with('\n') => "|+",
        Some(_) => "|",
    };
    out.push(chomp)?;
    out.push("\n")?;
    for line in body.unwrap_or(s).split('\n') {
        if !line.is_empty() {
            out.indent(indent)?;
            out.push(line)?;
        }
        out.push("\n")?;
    }
    Ok(())
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => json_number(n),
        Value::String(s) => yaml_string(s),
        Value::Array(_) => "[]".to_string(),
        Value::Object(_) => "{}".to_string(),
    }
}

/// Plain when unambiguous; double quotes when the text would read as another type (as
/// go-yaml does); single quotes when it merely contains YAML indicators.
fn yaml_string(s: &str) -> String {
    if s.chars().any(char::is_control) || yaml_resolves_to_non_string(s) {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    } else if yaml_plain_ok(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn yaml_plain_ok(s: &str) -> bool {
    let (Some(first), Some(last)) = (s.chars().next(), s.chars().last()) else {
        return false;
    };
    !"-?:,[]{}#&*!|>'\"%@`".contains(first)
        && !first.is_whitespace()
        && !last.is_whitespace()
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
}

/// YAML 1.1 scalars that are not strings: null, booleans, numbers, sexagesimals, dates.
fn yaml_resolves_to_non_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
        ".NaN", ".NAN", "<<",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let plain: String = s.chars().filter(|c| *c != '_').collect();
    let unsigned = plain.strip_prefix(['+', '-']).unwrap_or(&plain);
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let sexagesimal = unsigned.contains(':') && unsigned.split(':').all(all_digits);
    let date = unsigned.len() >= 5
        && unsigned
            .as_bytes()
            .get(..4)
            .is_some_and(|y| y.iter().all(u8::is_ascii_digit))
        && unsigned.as_bytes().get(4) == Some(&b'-');
    parse_go_int(&plain).is_some() || is_yaml_float(unsigned) || sexagesimal || date
}

fn is_yaml_float(s: &str) -> bool {
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (s.get(..i).unwrap_or(""), Some(s.get(i + 1..).unwrap_or(""))),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => all_digits(frac),
        Some((int, frac)) => all_digits(int) && (frac.is_empty() || all_digits(frac)),
        None => all_digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| all_digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

// -------------------------------------------------------------------------------------------
// printf: a subset of Go's fmt verbs (%v %s %d %q %t %f %e %g %x %X %o %b %c %T %%) with
// flags, width and precision, and Go's `%!verb(type=value)` markers for mismatches.
// -------------------------------------------------------------------------------------------

#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
    verb: char,
}

type SpecChars<'f> = std::iter::Peekable<std::str::CharIndices<'f>>;

fn go_sprintf(format: &str, args: &[Val]) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    let mut used = 0usize;
    let mut rest = format;
    while let Some(pct) = rest.find('%') {
        out.push(rest.get(..pct).unwrap_or(""))?;
        let (spec, after) = parse_spec(rest.get(pct + 1..).unwrap_or(""), args, &mut used)?;
        rest = after;
        match spec {
            None => out.push("%!(NOVERB)")?,
            Some(spec) if spec.verb == '%' => out.push("%")?,
            Some(spec) => match args.get(used) {
                None => out.push(&format!("%!{}(MISSING)", spec.verb))?,
                Some(arg) => {
                    used += 1;
                    out.push(&format_verb(&spec, arg)?)?;
                }
            },
        }
    }
    out.push(rest)?;
    let extra = args.get(used..).unwrap_or(&[]);
    if !extra.is_empty() {
        out.push("%!(EXTRA ")?;
        for (i, arg) in extra.iter().enumerate() {
            if i > 0 {
                out.push(", ")?;
            }
            match arg.nonnull() {
                None => out.push("<nil>")?,
                Some(v) => {
                    out.push(go_type(v))?;
                    out.push("=")?;
                    write_v(&mut out, v, 0)?;
                }
            }
        }
        out.push(")")?;
    }
    Ok(out.buf)
}

fn parse_spec<'f>(
    s: &'f str,
    args: &[Val],
    used: &mut usize,
) -> Result<(Option<Spec>, &'f str), String> {
    let mut spec = Spec::default();
    let mut chars = s.char_indices().peekable();
    while let Some(&(_, c)) = chars.peek() {
        match c {
            '-' => spec.minus = true,
            '+' => spec.plus = true,
            ' ' => spec.space = true,
            '0' => spec.zero = true,
            '#' => {}
            _ => break,
        }
        chars.next();
    }
    spec.width = spec_number(&mut chars, args, used)?;
    if chars.peek().map(|&(_, c)| c) == Some('.') {
        chars.next();
        spec.prec = Some(spec_number(&mut chars, args, used)?.unwrap_or(0));
    }
    match chars.next() {
        None => Ok((None, "")),
        Some((i, verb)) => {
            spec.verb = verb;
            Ok((Some(spec), s.get(i + verb.len_utf8()..).unwrap_or("")))
        }
    }
}

/// A width or precision: digits, or `*` taking the next argument.
fn spec_number(
    chars: &mut SpecChars<'_>,
    args: &[Val],
    used: &mut usize,
) -> Result<Option<usize>, String> {
    let too_big = || "printf width or precision is too large".to_string();
    if chars.peek().map(|&(_, c)| c) == Some('*') {
        chars.next();
        let value = args.get(*used).map_or(0, cast_int);
        *used += 1;
        let n = usize::try_from(value.unsigned_abs()).map_err(|_| too_big())?;
        return if n > MAX_VALUE_BYTES {
            Err(too_big())
        } else {
            Ok(Some(n))
        };
    }
    let mut n: Option<usize> = None;
    while let Some(digit) = chars.peek().and_then(|&(_, c)| c.to_digit(10)) {
        chars.next();
        let next = n
            .unwrap_or(0)
            .saturating_mul(10)
            .saturating_add(digit as usize);
        if next > MAX_VALUE_BYTES {
            return Err(too_big());
        }
        n = Some(next);
    }
    Ok(n)
}

fn format_verb(spec: &Spec, arg: &Val) -> Result<String, String> {
    let value = arg.nonnull();
    match verb_body(spec, value)? {
        Some(body) => Ok(pad(spec, body)),
        None => match value {
            None => Ok(format!("%!{}(<nil>)", spec.verb)),
            Some(v) => Ok(format!(
                "%!{}({}={})",
                spec.verb,
                go_type(v),
                strval(Some(v))?
            )),
        },
    }
}

fn verb_body(spec: &Spec, value: Option<&Value>) -> Result<Option<String>, String> {
    Ok(match (spec.verb, value) {
        ('v', value) => Some(strval(value)?),
        ('T', value) => Some(value.map_or("<nil>", go_type).to_string()),
        ('s', Some(Value::String(s))) => Some(match spec.prec {
            Some(p) => s.chars().take(p).collect(),
            None => s.clone(),
        }),
        ('s', Some(v @ (Value::Array(_) | Value::Object(_)))) => Some(strval(Some(v))?),
        ('q', Some(Value::String(s))) => Some(go_quote(s)),
        ('x', Some(Value::String(s))) => Some(s.bytes().map(|b| format!("{b:02x}")).collect()),
        ('X', Some(Value::String(s))) => Some(s.bytes().map(|b| format!("{b:02X}")).collect()),
        ('t', Some(Value::Bool(b))) => Some(b.to_string()),
        (_, Some(Value::Number(n))) => number_verb(spec, n),
        _ => None,
    })
}

fn number_verb(spec: &Spec, n: &Number) -> Option<String> {
    if let Some(i) = n.as_i64() {
        return int_verb(spec, i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return int_verb(spec, i128::from(u));
    }
    float_verb(spec, n.as_f64()?)
}

fn int_verb(spec: &Spec, i: i128) -> Option<String> {
    let sign = if i < 0 {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let mag = i.unsigned_abs();
    let digits = match spec.verb {
        'd' => mag.to_string(),
        'x' => format!("{mag:x}"),
        'X' => format!("{mag:X}"),
        'o' => format!("{mag:o}"),
        'b' => format!("{mag:b}"),
        'c' | 'q' => {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{fffd}');
            if spec.verb == 'c' {
                return Some(c.to_string());
            }
            let mut quoted = String::from("'");
            push_go_escaped(&mut quoted, c, '\'');
            quoted.push('\'');
            return Some(quoted);
        }
        _ => return None,
    };
    Some(format!("{sign}{digits}"))
}

fn float_verb(spec: &Spec, f: f64) -> Option<String> {
    let body = match spec.verb {
        'f' | 'F' => format!("{:.*}", spec.prec.unwrap_or(6), f),
        'e' | 'E' => {
            let formatted = format!("{:.*e}", spec.prec.unwrap_or(6), f);
            let (mantissa, exp) = formatted.split_once('e').unwrap_or((&formatted, "0"));
            let exp: i32 = exp.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            let text = format!("{mantissa}e{sign}{:02}", exp.unsigned_abs());
            if spec.verb == 'E' {
                text.to_uppercase()
            } else {
                text
            }
        }
        'g' | 'G' => go_float(f),
        _ => return None,
    };
    Some(if spec.plus && f >= 0.0 {
        format!("+{body}")
    } else {
        body
    })
}

fn pad(spec: &Spec, body: String) -> String {
    let Some(width) = spec.width else {
        return body;
    };
    let len = body.chars().count();
    if len >= width {
        return body;
    }
    let fill = width - len;
    if spec.minus {
        return format!("{body}{}", " ".repeat(fill));
    }
    if spec.zero {
        let sign_len = usize::from(body.starts_with(['-', '+']));
        let (sign, digits) = body.split_at(sign_len);
        return format!("{sign}{}{digits}", "0".repeat(fill));
    }
    format!("{}{body}", " ".repeat(fill))
}

/// `print` adds spaces between operands when neither is a string; `println` always does.
fn go_print(args: &[Val], newline: bool) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    let mut prev_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg.value(), Some(Value::String(_)));
        if i > 0 && (newline || (!is_string && !prev_string)) {
            out.push(" ")?;
        }
        match arg.nonnull() {
            None => out.push("<nil>")?,
            Some(v) => write_v(&mut out, v, 0)?,
        }
        prev_string = is_string;
    }
    if newline {
        out.push("\n")?;
    }
    Ok(out.buf)
}

// -------------------------------------------------------------------------------------------
// Functions: Go builtins, the Sprig functions ApplicationSets use, and Argo CD's own.
// -------------------------------------------------------------------------------------------

/// Functions evaluated here; parsing accepts these and [`UNSUPPORTED`].
const IMPLEMENTED: &[&str] = &[
    // Go builtins.
    "and",
    "or",
    "not",
    "len",
    "index",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "print",
    "printf",
    "println",
    // Sprig: strings.
    "lower",
    "upper",
    "title",
    "trim",
    "nospace",
    "trimAll",
    "trimall",
    "trimPrefix",
    "trimSuffix",
    "contains",
    "hasPrefix",
    "hasSuffix",
    "replace",
    "trunc",
    "substr",
    "repeat",
    "indent",
    "nindent",
    "quote",
    "squote",
    "cat",
    "toString",
    "toStrings",
    "split",
    "splitList",
    "join",
    "sortAlpha",
    // Sprig: defaults and flow.
    "default",
    "empty",
    "coalesce",
    "ternary",
    "fail",
    // Sprig: lists and dicts.
    "list",
    "tuple",
    "dict",
    "get",
    "hasKey",
    "keys",
    "first",
    "mustFirst",
    "last",
    "mustLast",
    "rest",
    "mustRest",
    "initial",
    "mustInitial",
    "has",
    "mustHas",
    "append",
    "mustAppend",
    "push",
    "mustPush",
    "concat",
    "reverse",
    "mustReverse",
    "compact",
    "mustCompact",
    "uniq",
    "mustUniq",
    // Sprig: encodings and paths.
    "toJson",
    "mustToJson",
    "toRawJson",
    "mustToRawJson",
    "toPrettyJson",
    "mustToPrettyJson",
    "fromJson",
    "b64enc",
    "b64dec",
    "sha256sum",
    "base",
    "dir",
    "ext",
    "clean",
    "isAbs",
    // Sprig: math and conversion.
    "add",
    "add1",
    "sub",
    "mul",
    "div",
    "mod",
    "max",
    "biggest",
    "min",
    "atoi",
    "int",
    "int64",
    "float64",
    // Argo CD.
    "normalize",
    "slugify",
    "toYaml",
];

/// Functions Argo CD has that cannot run here (regexes, time, randomness, crypto, ...): they
/// parse, so untaken branches still work, and fail with a clear message when called.
const UNSUPPORTED: &[&str] = &[
    "call",
    "html",
    "js",
    "urlquery",
    "slice",
    "mustSlice",
    "regexMatch",
    "mustRegexMatch",
    "regexFindAll",
    "mustRegexFindAll",
    "regexFind",
    "mustRegexFind",
    "regexReplaceAll",
    "mustRegexReplaceAll",
    "regexReplaceAllLiteral",
    "mustRegexReplaceAllLiteral",
    "regexSplit",
    "mustRegexSplit",
    "regexQuoteMeta",
    "ago",
    "date",
    "date_in_zone",
    "date_modify",
    "dateInZone",
    "dateModify",
    "duration",
    "durationRound",
    "htmlDate",
    "htmlDateInZone",
    "must_date_modify",
    "mustDateModify",
    "mustToDate",
    "now",
    "toDate",
    "unixEpoch",
    "abbrev",
    "abbrevboth",
    "untitle",
    "initials",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randInt",
    "randBytes",
    "swapcase",
    "shuffle",
    "snakecase",
    "camelcase",
    "kebabcase",
    "wrap",
    "wrapWith",
    "plural",
    "sha1sum",
    "sha512sum",
    "adler32sum",
    "seq",
    "toDecimal",
    "splitn",
    "until",
    "untilStep",
    "add1f",
    "addf",
    "subf",
    "divf",
    "mulf",
    "maxf",
    "minf",
    "ceil",
    "floor",
    "round",
    "all",
    "any",
    "mustFromJson",
    "deepCopy",
    "mustDeepCopy",
    "typeOf",
    "typeIs",
    "typeIsLike",
    "kindOf",
    "kindIs",
    "deepEqual",
    "osBase",
    "osClean",
    "osDir",
    "osExt",
    "osIsAbs",
    "b32enc",
    "b32dec",
    "set",
    "unset",
    "pluck",
    "pick",
    "omit",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
    "values",
    "prepend",
    "mustPrepend",
    "without",
    "mustWithout",
    "dig",
    "chunk",
    "mustChunk",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
    "uuidv4",
    "semver",
    "semverCompare",
    "urlParse",
    "urlJoin",
    "fromYaml",
    "fromYamlArray",
    "tpl",
];

fn is_known_function(name: &str) -> bool {
    IMPLEMENTED.contains(&name) || UNSUPPORTED.contains(&name)
}

fn nth<'v, 'a>(args: &'v [Val<'a>], i: usize) -> Result<&'v Val<'a>, String> {
    args.get(i)
        .ok_or_else(|| format!("missing argument {}", i + 1))
}

fn arity(args: &[Val], want: usize) -> Result<(), String> {
    if args.len() == want {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args: want {want} got {}",
            args.len()
        ))
    }
}

fn min_arity(args: &[Val], want: usize) -> Result<(), String> {
    if args.len() >= want {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args: want at least {want} got {}",
            args.len()
        ))
    }
}

fn wrong_type(want: &str, got: Option<&Value>) -> String {
    match got {
        None => format!("invalid value; expected {want}"),
        Some(v) => format!("wrong type for value; expected {want}; got {}", go_type(v)),
    }
}

fn str_arg<'v>(args: &'v [Val], i: usize) -> Result<&'v str, String> {
    match nth(args, i)?.value() {
        Some(Value::String(s)) => Ok(s),
        other => Err(wrong_type("string", other)),
    }
}

/// Integers, including integral floats (Go would want an exact `int`; this is more lenient).
fn number_to_int(n: &Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    })
}

fn int_arg(args: &[Val], i: usize) -> Result<i64, String> {
    match nth(args, i)?.value() {
        Some(Value::Number(n)) => {
            number_to_int(n).ok_or_else(|| wrong_type("int", Some(&Value::Number(n.clone()))))
        }
        other => Err(wrong_type("int", other)),
    }
}

fn bool_arg(args: &[Val], i: usize) -> Result<bool, String> {
    match nth(args, i)?.value() {
        Some(Value::Bool(b)) => Ok(*b),
        other => Err(wrong_type("bool", other)),
    }
}

/// A `map[string]interface{}` parameter; nil is allowed, as in Go.
fn map_arg<'v>(args: &'v [Val], i: usize) -> Result<Option<&'v Map<String, Value>>, String> {
    match nth(args, i)?.nonnull() {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        other => Err(wrong_type("map[string]interface {}", other)),
    }
}

fn str_fn<'a>(args: &[Val], f: impl FnOnce(&str) -> String) -> Result<Val<'a>, String> {
    arity(args, 1)?;
    Ok(Val::str(f(str_arg(args, 0)?)))
}

fn str2_fn<'a>(args: &[Val], f: impl FnOnce(&str, &str) -> String) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    Ok(Val::str(f(str_arg(args, 0)?, str_arg(args, 1)?)))
}

fn str2_bool<'a>(args: &[Val], f: impl FnOnce(&str, &str) -> bool) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    Ok(Val::bool(f(str_arg(args, 0)?, str_arg(args, 1)?)))
}

fn check_size(bytes: usize) -> Result<(), String> {
    if bytes > MAX_VALUE_BYTES {
        Err(too_large())
    } else {
        Ok(())
    }
}

fn call_func<'a>(name: &str, args: &[Val<'a>], budget: &mut Budget) -> Result<Val<'a>, String> {
    match name {
        "not" => {
            arity(args, 1)?;
            Ok(Val::bool(!truth(nth(args, 0)?)))
        }
        "len" => {
            arity(args, 1)?;
            go_len(nth(args, 0)?).map(Val::int)
        }
        "index" => go_index(budget, args),
        "eq" => go_eq(args).map(Val::bool),
        "ne" => {
            arity(args, 2)?;
            go_eq(args).map(|equal| Val::bool(!equal))
        }
        "lt" => compare(args, |lt, _| lt),
        "le" => compare(args, |lt, eq| lt || eq),
        "gt" => compare(args, |lt, eq| !(lt || eq)),
        "ge" => compare(args, |lt, _| !lt),
        "print" => go_print(args, false).map(Val::str),
        "println" => go_print(args, true).map(Val::str),
        "printf" => {
            min_arity(args, 1)?;
            go_sprintf(str_arg(args, 0)?, args.get(1..).unwrap_or(&[])).map(Val::str)
        }
        _ => call_strings(name, args, budget),
    }
}

fn call_strings<'a>(name: &str, args: &[Val<'a>], budget: &mut Budget) -> Result<Val<'a>, String> {
    match name {
        "lower" => str_fn(args, |s| s.chars().map(go_lower_char).collect()),
        "upper" => str_fn(args, |s| s.chars().map(go_upper_char).collect()),
        "title" => str_fn(args, go_title),
        "trim" => str_fn(args, |s| s.trim().to_string()),
        "nospace" => str_fn(args, |s| s.chars().filter(|c| !c.is_whitespace()).collect()),
        "trimAll" | "trimall" => str2_fn(args, |cut, s| {
            s.trim_matches(|c| cut.contains(c)).to_string()
        }),
        "trimPrefix" => str2_fn(args, |p, s| s.strip_prefix(p).unwrap_or(s).to_string()),
        "trimSuffix" => str2_fn(args, |x, s| s.strip_suffix(x).unwrap_or(s).to_string()),
        "contains" => str2_bool(args, |sub, s| s.contains(sub)),
        "hasPrefix" => str2_bool(args, |p, s| s.starts_with(p)),
        "hasSuffix" => str2_bool(args, |x, s| s.ends_with(x)),
        "replace" => {
            arity(args, 3)?;
            replace_all(str_arg(args, 2)?, str_arg(args, 0)?, str_arg(args, 1)?).map(Val::str)
        }
        "trunc" => {
            arity(args, 2)?;
            Ok(Val::str(trunc(int_arg(args, 0)?, str_arg(args, 1)?)))
        }
        "substr" => {
            arity(args, 3)?;
            substr(int_arg(args, 0)?, int_arg(args, 1)?, str_arg(args, 2)?).map(Val::str)
        }
        "repeat" => {
            arity(args, 2)?;
            repeat(str_arg(args, 1)?, int_arg(args, 0)?).map(Val::str)
        }
        "indent" | "nindent" => {
            arity(args, 2)?;
            let text = indent(int_arg(args, 0)?, str_arg(args, 1)?)?;
            Ok(Val::str(if name == "nindent" {
                format!("\n{text}")
            } else {
                text
            }))
        }
        "quote" => quote_each(args, |s| go_quote(&s)).map(Val::str),
        "squote" => quote_each(args, |s| format!("'{s}'")).map(Val::str),
        "cat" => cat(args).map(Val::str),
        "toString" => {
            arity(args, 1)?;
            strval(nth(args, 0)?.nonnull()).map(Val::str)
        }
        "split" | "splitList" => {
            arity(args, 2)?;
            split(str_arg(args, 1)?, str_arg(args, 0)?, name == "split")
        }
        "join" => {
            arity(args, 2)?;
            join(str_arg(args, 0)?, &strslice(nth(args, 1)?)?).map(Val::str)
        }
        "toStrings" => {
            arity(args, 1)?;
            Ok(string_list(strslice(nth(args, 0)?)?))
        }
        "sortAlpha" => {
            arity(args, 1)?;
            let mut items = strslice(nth(args, 0)?)?;
            items.sort();
            Ok(string_list(items))
        }
        "normalize" => str_fn(args, sanitize_name),
        "slugify" => slugify(args).map(Val::str),
        _ => call_flow(name, args, budget),
    }
}

fn call_flow<'a>(name: &str, args: &[Val<'a>], budget: &mut Budget) -> Result<Val<'a>, String> {
    match name {
        "default" => {
            min_arity(args, 1)?;
            match args.get(1) {
                Some(given) if truth(given) => Ok(given.clone()),
                _ => nth(args, 0).cloned(),
            }
        }
        "empty" => {
            arity(args, 1)?;
            Ok(Val::bool(!truth(nth(args, 0)?)))
        }
        "coalesce" => Ok(args
            .iter()
            .find(|v| truth(v))
            .cloned()
            .unwrap_or_else(|| Val::new(Value::Null))),
        "ternary" => {
            arity(args, 3)?;
            nth(args, if bool_arg(args, 2)? { 0 } else { 1 }).cloned()
        }
        "fail" => {
            arity(args, 1)?;
            Err(str_arg(args, 0)?.to_string())
        }
        _ => call_collections(name, args, budget),
    }
}

fn call_collections<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
    match name {
        "list" | "tuple" => Ok(Val::new(Value::Array(own_all(budget, args)?))),
        "dict" => dict(budget, args),
        "get" => get(budget, args),
        "hasKey" => {
            arity(args, 2)?;
            let key = str_arg(args, 1)?;
            Ok(Val::bool(
                map_arg(args, 0)?.is_some_and(|m| m.contains_key(key)),
            ))
        }
        "keys" => keys(args),
        "first" | "mustFirst" | "last" | "mustLast" => first_or_last(budget, args, name),
        "rest" | "mustRest" | "initial" | "mustInitial" | "reverse" | "mustReverse" | "compact"
        | "mustCompact" | "uniq" | "mustUniq" => reshape(budget, args, name),
        "has" | "mustHas" => has(budget, args),
        "append" | "mustAppend" | "push" | "mustPush" => {
            arity(args, 2)?;
            let mut total = 0;
            let mut items = list_items(budget, nth(args, 0)?, name, &mut total)?;
            items.push(own(budget, nth(args, 1)?, &mut total)?);
            Ok(Val::new(Value::Array(items)))
        }
        "concat" => {
            let mut total = 0;
            let mut all = Vec::new();
            for arg in args {
                all.extend(list_items(budget, arg, name, &mut total)?);
            }
            Ok(Val::new(Value::Array(all)))
        }
        _ => call_encoding(name, args, budget),
    }
}

fn get<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    let key = str_arg(args, 1)?;
    match map_arg(args, 0)? {
        Some(map) if map.contains_key(key) => {
            Ok(child(budget, nth(args, 0)?, &Key::Field(key))?.unwrap_or(Val::Missing))
        }
        // Sprig returns "" for a missing key.
        _ => Ok(Val::str("")),
    }
}

fn keys<'a>(args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let mut keys = Vec::new();
    for i in 0..args.len() {
        keys.extend(
            map_arg(args, i)?
                .into_iter()
                .flat_map(|m| m.keys().cloned()),
        );
    }
    // Go returns map keys in random order; sorted is the only reproducible choice.
    keys.sort();
    Ok(string_list(keys))
}

/// List functions that return a reshaped copy of their one list argument.
fn reshape<'a>(budget: &mut Budget, args: &[Val<'a>], name: &str) -> Result<Val<'a>, String> {
    arity(args, 1)?;
    let mut items = list_items(budget, nth(args, 0)?, name, &mut 0)?;
    match name
        .strip_prefix("must")
        .unwrap_or(name)
        .to_ascii_lowercase()
        .as_str()
    {
        "rest" => drop_first(&mut items),
        "initial" => {
            items.pop();
        }
        "reverse" => items.reverse(),
        "compact" => items.retain(is_true),
        _ => items = uniq(budget, items)?,
    }
    Ok(Val::new(Value::Array(items)))
}

fn uniq(budget: &mut Budget, items: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut unique: Vec<Value> = Vec::new();
    for item in items {
        // Each item is compared with every kept one.
        budget.charge_bytes(unique.len().saturating_mul(4))?;
        if !unique.contains(&item) {
            unique.push(item);
        }
    }
    Ok(unique)
}

fn call_encoding<'a>(name: &str, args: &[Val<'a>], budget: &mut Budget) -> Result<Val<'a>, String> {
    let json = |escape_html, pretty| -> Result<Val<'a>, String> {
        arity(args, 1)?;
        to_json(
            nth(args, 0)?.nonnull(),
            JsonStyle {
                escape_html,
                pretty,
            },
        )
        .map(Val::str)
    };
    match name {
        "toJson" | "mustToJson" => json(true, false),
        "toRawJson" | "mustToRawJson" => json(false, false),
        "toPrettyJson" | "mustToPrettyJson" => json(true, true),
        "toYaml" => {
            arity(args, 1)?;
            to_yaml(nth(args, 0)?.nonnull()).map(Val::str)
        }
        "fromJson" => {
            arity(args, 1)?;
            // Sprig ignores parse errors and yields nil.
            Ok(Val::new(
                serde_json::from_str(str_arg(args, 0)?).unwrap_or(Value::Null),
            ))
        }
        "b64enc" => str_fn(args, |s| b64_encode(s.as_bytes())),
        "b64dec" => str_fn(args, |s| match b64_decode(s) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(msg) => msg, // Sprig returns the error text as the result.
        }),
        "sha256sum" => str_fn(args, |s| sha256_hex(s.as_bytes())),
        "base" => str_fn(args, path_base),
        "dir" => str_fn(args, path_dir),
        "ext" => str_fn(args, path_ext),
        "clean" => str_fn(args, path_clean),
        "isAbs" => {
            arity(args, 1)?;
            Ok(Val::bool(str_arg(args, 0)?.starts_with('/')))
        }
        _ => call_math(name, args, budget),
    }
}

fn call_math<'a>(name: &str, args: &[Val<'a>], budget: &mut Budget) -> Result<Val<'a>, String> {
    budget.charge(1)?;
    let ints = || args.iter().map(cast_int);
    match name {
        "add" => Ok(Val::int(ints().fold(0, i64::wrapping_add))),
        "add1" => {
            arity(args, 1)?;
            Ok(Val::int(cast_int(nth(args, 0)?).wrapping_add(1)))
        }
        "mul" => {
            min_arity(args, 1)?;
            Ok(Val::int(ints().fold(1, i64::wrapping_mul)))
        }
        "sub" | "div" | "mod" => {
            arity(args, 2)?;
            let (a, b) = (cast_int(nth(args, 0)?), cast_int(nth(args, 1)?));
            if name != "sub" && b == 0 {
                return Err("runtime error: integer divide by zero".to_string());
            }
            Ok(Val::int(match name {
                "sub" => a.wrapping_sub(b),
                "div" => a.wrapping_div(b),
                _ => a.wrapping_rem(b),
            }))
        }
        "max" | "biggest" | "min" => {
            min_arity(args, 1)?;
            let pick = if name == "min" { i64::min } else { i64::max };
            Ok(Val::int(ints().reduce(pick).unwrap_or(0)))
        }
        "atoi" => {
            arity(args, 1)?;
            Ok(Val::int(str_arg(args, 0)?.parse().unwrap_or(0)))
        }
        "int" | "int64" => {
            arity(args, 1)?;
            Ok(Val::int(cast_int(nth(args, 0)?)))
        }
        "float64" => {
            arity(args, 1)?;
            Number::from_f64(cast_float(nth(args, 0)?))
                .map(|n| Val::new(Value::Number(n)))
                .ok_or_else(|| "result is not a finite number".to_string())
        }
        _ => Err(format!("function {name:?} is not supported offline")),
    }
}

fn go_len(v: &Val) -> Result<i64, String> {
    let len = match v.value() {
        Some(Value::String(s)) => s.len(),
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(map)) => map.len(),
        None | Some(Value::Null) => return Err("len of nil pointer".to_string()),
        Some(other) => return Err(format!("len of type {}", go_type(other))),
    };
    Ok(i64::try_from(len).unwrap_or(i64::MAX))
}

fn go_index<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let (first, indices) = args
        .split_first()
        .ok_or_else(|| "wrong number of args: want at least 1 got 0".to_string())?;
    if first.nonnull().is_none() {
        return Err("index of untyped nil".to_string());
    }
    let mut item = first.clone();
    for index in indices {
        item = index_once(budget, &item, index)?;
    }
    Ok(item)
}

fn index_once<'a>(budget: &mut Budget, item: &Val<'a>, index: &Val) -> Result<Val<'a>, String> {
    match item.value() {
        None | Some(Value::Null) => Err("index of nil pointer".to_string()),
        Some(Value::Array(items)) => {
            let i = index_position(index, items.len())?;
            Ok(child(budget, item, &Key::Index(i))?.unwrap_or(Val::Missing))
        }
        Some(Value::String(s)) => {
            let i = index_position(index, s.len())?;
            Ok(Val::int(s.as_bytes().get(i).copied().map_or(0, i64::from)))
        }
        Some(Value::Object(map)) => {
            let key = match index.value() {
                Some(Value::String(key)) => key,
                Some(other) => {
                    return Err(format!(
                        "value has type {}; should be string",
                        go_type(other)
                    ))
                }
                None => return Err("value is nil; should be of type string".to_string()),
            };
            if map.contains_key(key) {
                Ok(child(budget, item, &Key::Field(key))?.unwrap_or(Val::Missing))
            } else {
                // The zero value of the map's element type: nil, printed as `<no value>`.
                Ok(Val::new(Value::Null))
            }
        }
        Some(other) => Err(format!("can't index item of type {}", go_type(other))),
    }
}

fn index_position(index: &Val, len: usize) -> Result<usize, String> {
    let n = match index.nonnull() {
        None => return Err("cannot index slice/array with nil".to_string()),
        Some(Value::Number(n)) => number_to_int(n)
            .ok_or_else(|| format!("cannot index slice/array with type {}", number_type(n)))?,
        Some(other) => {
            return Err(format!(
                "cannot index slice/array with type {}",
                go_type(other)
            ))
        }
    };
    usize::try_from(n)
        .ok()
        .filter(|i| *i < len)
        .ok_or_else(|| format!("index out of range: {n}"))
}

/// The operand kinds Go's comparison functions accept.
#[derive(Clone, Copy)]
enum Basic<'v> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'v str),
}

fn basic(v: &Value) -> Option<Basic<'_>> {
    match v {
        Value::Bool(b) => Some(Basic::Bool(*b)),
        Value::String(s) => Some(Basic::Str(s)),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            Basic::Int(i)
        } else if let Some(u) = n.as_u64() {
            Basic::Uint(u)
        } else {
            Basic::Float(n.as_f64().unwrap_or(0.0))
        }),
        _ => None,
    }
}

fn basic_int(b: Basic) -> Option<i128> {
    match b {
        Basic::Int(i) => Some(i128::from(i)),
        Basic::Uint(u) => Some(i128::from(u)),
        _ => None,
    }
}

const INCOMPATIBLE: &str = "incompatible types for comparison";

/// Go's `eq`: nil equals only nil; signed and unsigned integers compare by value.
fn eq_pair(x: Option<&Value>, y: Option<&Value>) -> Result<bool, String> {
    let (Some(x), Some(y)) = (x, y) else {
        return Ok(x.is_none() && y.is_none());
    };
    let (Some(bx), Some(by)) = (basic(x), basic(y)) else {
        return Err(if basic(x).is_none() && basic(y).is_none() {
            format!("non-comparable types {}, {}", go_type(x), go_type(y))
        } else {
            INCOMPATIBLE.to_string()
        });
    };
    match (bx, by) {
        (Basic::Bool(a), Basic::Bool(b)) => Ok(a == b),
        (Basic::Str(a), Basic::Str(b)) => Ok(a == b),
        (Basic::Float(a), Basic::Float(b)) => Ok(a == b),
        (a, b) => match (basic_int(a), basic_int(b)) {
            (Some(a), Some(b)) => Ok(a == b),
            _ => Err(INCOMPATIBLE.to_string()),
        },
    }
}

fn go_eq(args: &[Val]) -> Result<bool, String> {
    let (first, rest) = args
        .split_first()
        .ok_or_else(|| "wrong number of args: want at least 1 got 0".to_string())?;
    if rest.is_empty() {
        return Err("missing argument for comparison".to_string());
    }
    for other in rest {
        if eq_pair(first.nonnull(), other.nonnull())? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn go_lt(x: &Val, y: &Val) -> Result<bool, String> {
    let invalid = || "invalid type for comparison".to_string();
    let bx = x.nonnull().and_then(basic).ok_or_else(invalid)?;
    let by = y.nonnull().and_then(basic).ok_or_else(invalid)?;
    match (bx, by) {
        (Basic::Bool(_), Basic::Bool(_)) => Err(invalid()),
        (Basic::Str(a), Basic::Str(b)) => Ok(a < b),
        (Basic::Float(a), Basic::Float(b)) => Ok(a < b),
        (a, b) => match (basic_int(a), basic_int(b)) {
            (Some(a), Some(b)) => Ok(a < b),
            _ => Err(INCOMPATIBLE.to_string()),
        },
    }
}

fn compare<'a>(args: &[Val], decide: impl FnOnce(bool, bool) -> bool) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    let (x, y) = (nth(args, 0)?, nth(args, 1)?);
    let lt = go_lt(x, y)?;
    let eq = !lt && eq_pair(x.nonnull(), y.nonnull())?;
    Ok(Val::bool(decide(lt, eq)))
}

/// Go's `unicode.ToLower` is a one-to-one mapping; take the first char of Rust's.
fn go_lower_char(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// Go keeps characters whose upper case is several characters (`ß`).
fn go_upper_char(c: char) -> char {
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `strings.Title`: upper-cases the first letter after each separator.
fn go_title(s: &str) -> String {
    let mut prev = ' ';
    s.chars()
        .map(|c| {
            let out = if is_title_separator(prev) {
                go_upper_char(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect()
}

fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    !c.is_alphanumeric() && c.is_whitespace()
}

fn replace_all(s: &str, old: &str, new: &str) -> Result<String, String> {
    let count = if old.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(old).count()
    };
    check_size(s.len().saturating_add(count.saturating_mul(new.len())))?;
    Ok(s.replace(old, new))
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Sprig's `trunc` counts bytes; cuts are moved to character boundaries so the result stays
/// valid UTF-8 (Go would split the character).
fn trunc(count: i64, s: &str) -> String {
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let kept = if count < 0 && len.saturating_add(count) > 0 {
        let start = usize::try_from(len.saturating_add(count)).unwrap_or(0);
        s.get(ceil_boundary(s, start)..)
    } else if count >= 0 && len > count {
        s.get(..floor_boundary(s, usize::try_from(count).unwrap_or(0)))
    } else {
        Some(s)
    };
    kept.unwrap_or(s).to_string()
}

fn substr(start: i64, end: i64, s: &str) -> Result<String, String> {
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let (from, to) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        (start, len)
    } else {
        (start, end)
    };
    let out_of_range = || format!("runtime error: slice bounds out of range [{from}:{to}]");
    let from = usize::try_from(from).map_err(|_| out_of_range())?;
    let to = usize::try_from(to).map_err(|_| out_of_range())?;
    s.get(from..to).map(str::to_string).ok_or_else(out_of_range)
}

fn repeat(s: &str, count: i64) -> Result<String, String> {
    let count = usize::try_from(count).map_err(|_| "strings: negative Repeat count".to_string())?;
    check_size(s.len().saturating_mul(count))?;
    Ok(s.repeat(count))
}

fn indent(spaces: i64, s: &str) -> Result<String, String> {
    let spaces =
        usize::try_from(spaces).map_err(|_| "strings: negative Repeat count".to_string())?;
    let lines = s.matches('\n').count() + 1;
    check_size(s.len().saturating_add(spaces.saturating_mul(lines)))?;
    let pad = " ".repeat(spaces);
    Ok(format!("{pad}{}", s.replace('\n', &format!("\n{pad}"))))
}

fn quote_each(args: &[Val], quote: impl Fn(String) -> String) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    for (i, v) in args.iter().filter_map(Val::nonnull).enumerate() {
        if i > 0 {
            out.push(" ")?;
        }
        out.push(&quote(strval(Some(v))?))?;
    }
    Ok(out.buf)
}

fn cat(args: &[Val]) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    for (i, v) in args.iter().filter_map(Val::nonnull).enumerate() {
        if i > 0 {
            out.push(" ")?;
        }
        write_v(&mut out, v, 0)?;
    }
    Ok(out.buf)
}

/// Go's `strings.Split`: an empty separator splits into characters.
fn go_split<'s>(s: &'s str, sep: &str) -> Vec<&'s str> {
    if sep.is_empty() {
        s.char_indices()
            .map(|(i, c)| s.get(i..i + c.len_utf8()).unwrap_or(""))
            .collect()
    } else {
        s.split(sep).collect()
    }
}

fn split<'a>(s: &str, sep: &str, as_map: bool) -> Result<Val<'a>, String> {
    let pieces = if sep.is_empty() {
        s.chars().count()
    } else {
        s.matches(sep).count() + 1
    };
    check_size(
        s.len()
            .saturating_add(pieces.saturating_mul(NODE_WEIGHT * 2)),
    )?;
    let parts = go_split(s, sep);
    if !as_map {
        return Ok(string_list(parts.into_iter().map(str::to_string).collect()));
    }
    let map = parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| (format!("_{i}"), Value::String(part.to_string())))
        .collect();
    Ok(Val::new(Value::Object(map)))
}

fn join(sep: &str, items: &[String]) -> Result<String, String> {
    let content: usize = items.iter().map(String::len).sum();
    check_size(content.saturating_add(sep.len().saturating_mul(items.len())))?;
    Ok(items.join(sep))
}

fn string_list<'a>(items: Vec<String>) -> Val<'a> {
    Val::new(Value::Array(items.into_iter().map(Value::String).collect()))
}

/// Sprig's `strslice`: list items as strings (nils dropped), a scalar as a one-item list.
fn strslice(v: &Val) -> Result<Vec<String>, String> {
    match v.nonnull() {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .filter(|item| !item.is_null())
            .map(|item| strval(Some(item)))
            .collect(),
        Some(other) => Ok(vec![strval(Some(other))?]),
    }
}

fn dict<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let mut map = Map::new();
    let mut total = 0;
    for pair in args.chunks(2) {
        let key = strval(pair.first().and_then(Val::nonnull))?;
        // An odd trailing key maps to "", as in Sprig.
        let value = match pair.get(1) {
            Some(v) => own(budget, v, &mut total)?,
            None => Value::String(String::new()),
        };
        map.insert(key, value);
    }
    Ok(Val::new(Value::Object(map)))
}

/// Copies the items of a list argument, counting them against `total`.
fn list_items(
    budget: &mut Budget,
    list: &Val,
    name: &str,
    total: &mut usize,
) -> Result<Vec<Value>, String> {
    match list.nonnull() {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| own(budget, &Val::Ref(item), total))
            .collect(),
        other => Err(format!(
            "Cannot find {name} on type {}",
            other.map_or("<nil>", go_type)
        )),
    }
}

fn drop_first(items: &mut Vec<Value>) {
    if !items.is_empty() {
        items.remove(0);
    }
}

fn first_or_last<'a>(budget: &mut Budget, args: &[Val<'a>], name: &str) -> Result<Val<'a>, String> {
    arity(args, 1)?;
    let list = nth(args, 0)?;
    match list.nonnull() {
        Some(Value::Array(items)) => {
            let last = name.ends_with("ast");
            let index = if last {
                items.len().checked_sub(1)
            } else {
                Some(0)
            };
            match index.filter(|i| *i < items.len()) {
                Some(i) => Ok(child(budget, list, &Key::Index(i))?.unwrap_or(Val::Missing)),
                None => Ok(Val::new(Value::Null)),
            }
        }
        other => Err(format!(
            "Cannot find {name} on type {}",
            other.map_or("<nil>", go_type)
        )),
    }
}

fn has<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    // `weigh` bounds the depth that the comparisons below recurse into.
    let needle = nth(args, 0)?.nonnull();
    budget.charge_bytes(needle.map_or(Ok(0), weigh)?)?;
    match nth(args, 1)?.nonnull() {
        None => Ok(Val::bool(false)),
        Some(Value::Array(items)) => {
            for item in items {
                budget.charge_bytes(weigh(item)?)?;
                if needle.map_or(item.is_null(), |n| item == n) {
                    return Ok(Val::bool(true));
                }
            }
            Ok(Val::bool(false))
        }
        Some(other) => Err(format!("Cannot find has on type {}", go_type(other))),
    }
}

/// `cast.ToInt64` as Sprig uses it: lenient, 0 for anything unparsable.
fn cast_int(v: &Val) -> i64 {
    match v.nonnull() {
        Some(Value::Bool(b)) => i64::from(*b),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|u| u as i64))
            .unwrap_or_else(|| n.as_f64().map_or(0, |f| f as i64)),
        Some(Value::String(s)) => parse_go_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// `cast` reads "12.0" as 12 before parsing an integer.
fn trim_zero_decimal(s: &str) -> &str {
    let Some((int, frac)) = s.split_once('.') else {
        return s;
    };
    if !frac.is_empty() && frac.bytes().all(|b| b == b'0') {
        int
    } else {
        s
    }
}

fn cast_float(v: &Val) -> f64 {
    match v.nonnull() {
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(Value::String(s)) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Argo CD's `normalize` (`utils.SanitizeName`): lower-case, every character outside
/// `[-a-z0-9.]` becomes `-`, cut to 253 bytes, then `-` and `.` trimmed from both ends.
fn sanitize_name(name: &str) -> String {
    let replaced: String = name
        .chars()
        .map(go_lower_char)
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cut = replaced.get(..replaced.len().min(253)).unwrap_or(&replaced);
    cut.trim_matches(['-', '.']).to_string()
}

/// Argo CD's `slugify [maxSize [smartTruncate]] name` (`utils.SlugifyName`): `normalize`,
/// then gosimple/slug with a 50-byte limit cut at a word boundary by default.
fn slugify(args: &[Val]) -> Result<String, String> {
    let mut max_len: i64 = 50;
    let mut smart = true;
    let mut name = "";
    let last = args.len().checked_sub(1);
    for i in 0..args.len() {
        if Some(i) == last {
            name = str_arg(args, i)?;
        } else if i == 0 {
            max_len = int_arg(args, i)?;
        } else if i == 1 {
            smart = bool_arg(args, i)?;
        }
    }
    make_slug(&sanitize_name(name), max_len, smart)
}

/// gosimple/slug's `Make` for text that `normalize` already made ASCII and lower-case.
fn make_slug(text: &str, max_len: i64, smart: bool) -> Result<String, String> {
    let mut slug = text.trim();
    let len = i64::try_from(slug.len()).unwrap_or(i64::MAX);
    if !smart && len >= max_len {
        let cut = usize::try_from(max_len)
            .map_err(|_| format!("runtime error: slice bounds out of range [:{max_len}]"))?;
        slug = slug.get(..cut).unwrap_or(slug);
    }
    let mut collapsed = String::with_capacity(slug.len());
    for c in slug.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        if !(c == '-' && collapsed.ends_with('-')) {
            collapsed.push(c);
        }
    }
    let trimmed = collapsed.trim_matches(['-', '_']);
    match usize::try_from(max_len) {
        Ok(max) if smart && max > 0 && trimmed.len() > max => {
            // Cut at the last dash at or before the limit, else at the limit itself.
            let head = trimmed.get(..=max).unwrap_or(trimmed);
            let cut = head.rfind('-').unwrap_or(max);
            Ok(trimmed.get(..cut).unwrap_or(trimmed).to_string())
        }
        _ => Ok(trimmed.to_string()),
    }
}

// -------------------------------------------------------------------------------------------
// Encodings and paths, written out here to avoid dependencies.
// -------------------------------------------------------------------------------------------

fn b64_encode(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn b64_decode(s: &str) -> Result<Vec<u8>, String> {
    use base64::DecodeError as E;
    use base64::Engine;
    // Sprig prints Go's message for bad input.
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| {
            let at = match e {
                E::InvalidByte(at, _) | E::InvalidLastSymbol(at, _) => at,
                E::InvalidLength(len) => len,
                E::InvalidPadding => s.len(),
            };
            format!("illegal base64 data at input byte {at}")
        })
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Go's `path.Clean` (slash-separated, lexical).
fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_string();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

fn path_dir(p: &str) -> String {
    let dir = p.rfind('/').and_then(|i| p.get(..=i)).unwrap_or("");
    path_clean(dir)
}

fn path_ext(p: &str) -> String {
    let last = p.rsplit('/').next().unwrap_or(p);
    last.rfind('.')
        .and_then(|i| last.get(i..))
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn data() -> Value {
        json!({
            "path": {
                "path": "apps/foo",
                "basename": "foo",
                "basenameNormalized": "foo",
                "segments": ["apps", "foo"],
            },
            "name": "MyApp",
            "env": "prod",
            "replicas": 3,
            "ratio": 1.5,
            "big": 1000000.0,
            "enabled": true,
            "nothing": null,
            "labels": {"team": "core", "tier": "web"},
            "empty": "",
        })
    }

    /// One string on its own, with the per-string budget the engine once had.
    fn render_go(text: &str, data: &Value, missing: bool) -> Result<String, TemplateError> {
        super::render_go(text, data, missing, &mut Work::new(1_000_000))
    }

    fn go(text: &str) -> String {
        match render_go(text, &data(), false) {
            Ok(out) => out,
            Err(e) => panic!("{text:?} failed: {}", e.message),
        }
    }

    fn go_err(text: &str) -> String {
        match render_go(text, &data(), false) {
            Ok(out) => panic!("{text:?} should fail, rendered {out:?}"),
            Err(e) => e.message,
        }
    }

    #[test]
    fn fast_replaces_known_params() {
        let p = params(&[
            ("path", "apps/foo"),
            ("path.basename", "foo"),
            ("path[0]", "apps"),
        ]);
        assert_eq!(render_fast("{{path.basename}}-{{path[0]}}", &p), "foo-apps");
        assert_eq!(render_fast("x: {{ path }} ", &p), "x: apps/foo ");
        assert_eq!(render_fast("x {{\tpath.basename  }}", &p), "x foo");
    }

    #[test]
    fn fast_writes_back_unknown_and_empty_tags() {
        let p = params(&[("name", "a")]);
        assert_eq!(render_fast("{{ nope }}/{{name}}", &p), "{{ nope }}/a");
        assert_eq!(render_fast("{{}}{{  }}", &p), "{{}}{{  }}");
        assert_eq!(render_fast("{{ .name }}", &p), "{{ .name }}");
    }

    #[test]
    fn fast_edge_cases_follow_argo() {
        let p = params(&[("a", "1"), ("b", "2")]);
        // No line holds a whole tag: Argo CD leaves the text alone.
        assert_eq!(render_fast("{{a\n}}", &p), "{{a\n}}");
        // Once one line does, every tag is substituted, even a multi-line one.
        assert_eq!(render_fast("{{a\n}} {{b}}", &p), "1 2");
        // Unclosed tags keep the rest of the text.
        assert_eq!(render_fast("{{a}} {{b", &p), "1 {{b");
        assert_eq!(render_fast("}}{{", &p), "}}{{");
        assert!(has_template("x {{ y"));
        assert!(!has_template("x { y }"));
    }

    #[test]
    fn go_field_chains_and_index() {
        assert_eq!(go("{{.path.basename}}"), "foo");
        assert_eq!(go("{{ index .path.segments 1 }}"), "foo");
        assert_eq!(go("{{ index . \"path\" \"segments\" 0 }}"), "apps");
        assert_eq!(go("{{ $.labels.team }}"), "core");
        assert_eq!(
            go("{{ (index .path.segments 0) }}/{{ (.labels).tier }}"),
            "apps/web"
        );
        assert!(go_err("{{ index .path.segments 5 }}").contains("index out of range: 5"));
    }

    #[test]
    fn missing_keys_in_both_modes() {
        assert_eq!(
            go("{{ .nope }}|{{ .nope.deeper }}|{{ .nothing }}"),
            "<no value>|<no value>|<no value>"
        );
        assert_eq!(go("{{ index .labels \"nope\" }}"), "<no value>");
        let err = render_go("{{ .nope }}", &data(), true).unwrap_err();
        assert!(
            err.message.contains("map has no entry for key \"nope\""),
            "{}",
            err.message
        );
        assert!(err.message.contains("<.nope>"), "{}", err.message);
        let err = render_go("{{ .path.nope }}", &data(), true).unwrap_err();
        assert!(err.message.contains("map has no entry for key \"nope\""));
        assert_eq!(
            render_go("{{ .path.basename }}", &data(), true).unwrap(),
            "foo"
        );
        assert!(go_err("{{ .nothing.x }}").contains("nil pointer evaluating"));
        assert!(go_err("{{ .name.x }}").contains("can't evaluate field x in type string"));
    }

    #[test]
    fn pipelines() {
        assert_eq!(go("{{ .name | lower | quote }}"), "\"myapp\"");
        assert_eq!(
            go("{{ .path.basename | printf \"%s-%s\" \"app\" | upper }}"),
            "APP-FOO"
        );
        assert_eq!(go("{{ .name | trunc 2 }}"), "My");
        assert!(go_err("{{ .name | \"x\" }}").contains("non executable command"));
        assert!(go_err("{{ .name 1 }}").contains("not a method but has arguments"));
        assert!(go_err("{{ \"a\" \"b\" }}").contains("can't give argument to non-function"));
        assert!(go_err("{{ .nope | lower }}").contains("invalid value; expected string"));
    }

    #[test]
    fn conditionals_and_with() {
        let t = "{{if eq .env \"dev\"}}d{{else if eq .env \"prod\"}}p{{else}}o{{end}}";
        assert_eq!(go(t), "p");
        assert_eq!(
            go("{{if .empty}}y{{else}}n{{end}}{{if .labels}}y{{end}}"),
            "ny"
        );
        assert_eq!(go("{{with .labels}}{{.team}}{{else}}none{{end}}"), "core");
        assert_eq!(go("{{with .nope}}x{{else with .env}}{{.}}{{end}}"), "prod");
        assert_eq!(go("{{ if and .enabled (not .empty) }}on{{ end }}"), "on");
        assert_eq!(
            go("{{ or .empty .nope \"fallback\" }}|{{ and .enabled 0 }}"),
            "fallback|0"
        );
        assert_eq!(
            go("{{ if eq .env \"a\" \"b\" \"prod\" }}multi{{ end }}"),
            "multi"
        );
        assert_eq!(
            go("{{ eq .nope \"x\" }} {{ ne .replicas 2 }} {{ lt 1 2 }} {{ ge \"b\" \"a\" }}"),
            "false true true true"
        );
        assert!(go_err("{{ eq .replicas \"3\" }}").contains("incompatible types"));
        assert!(go_err("{{ lt .nope 1 }}").contains("invalid type for comparison"));
    }

    #[test]
    fn range_with_variables() {
        let t = "{{range $i, $s := .path.segments}}{{$i}}={{$s}};{{end}}";
        assert_eq!(go(t), "0=apps;1=foo;");
        assert_eq!(
            go("{{range $k, $v := .labels}}{{$k}}:{{$v}} {{end}}"),
            "team:core tier:web "
        );
        assert_eq!(go("{{range .path.segments}}[{{.}}]{{end}}"), "[apps][foo]");
        assert_eq!(go("{{range .nope}}x{{else}}empty{{end}}"), "empty");
        assert_eq!(
            go("{{range $i, $s := .path.segments}}{{if $i}}{{break}}{{end}}{{$s}}{{end}}"),
            "apps"
        );
        assert_eq!(
            go("{{range .path.segments}}{{if eq . \"apps\"}}{{continue}}{{end}}{{.}}{{end}}"),
            "foo"
        );
        assert_eq!(go("{{range 3}}{{.}}{{end}}"), "012");
        let scoped = "{{ $x := \"a\" }}{{ range .path.segments }}{{ $x = . }}{{ end }}{{ $x }}";
        assert_eq!(go(scoped), "foo");
        assert!(go_err("{{ range .name }}{{ end }}").contains("range can't iterate over MyApp"));
        assert!(go_err("{{ break }}").contains("{{break}} outside {{range}}"));
    }

    #[test]
    fn template_patch_style_block() {
        let d = json!({"cluster": "prod-eu", "valueFiles": ["a.yaml", "b.yaml"], "auto": true});
        let t = "spec:\n  source:\n    helm:\n      valueFiles:\n      {{- range $f := .valueFiles }}\n        - {{ $f }}\n      {{- end }}\n  {{- if .auto }}\n  syncPolicy:\n    automated: {}\n  {{- end }}\n";
        let want = "spec:\n  source:\n    helm:\n      valueFiles:\n        - a.yaml\n        - b.yaml\n  syncPolicy:\n    automated: {}\n";
        assert_eq!(render_go(t, &d, true).unwrap(), want);
    }

    #[test]
    fn variables_and_scoping() {
        assert_eq!(go("{{ $n := .name }}{{ $n }}"), "MyApp");
        assert_eq!(go("{{ if true }}{{ $v := 1 }}{{ $v }}{{ end }}"), "1");
        assert!(go_err("{{ if true }}{{ $v := 1 }}{{ end }}{{ $v }}")
            .contains("undefined variable \"$v\""));
        assert!(go_err("{{ $nope }}").contains("undefined variable"));
        assert!(go_err("{{ $nope = 1 }}").contains("undefined variable: $nope"));
    }

    #[test]
    fn trim_markers_and_comments() {
        assert_eq!(go("a  {{- .env -}}  b"), "aprodb");
        assert_eq!(go("a \n {{- /* note */ -}} \n b"), "ab");
        assert_eq!(go("a {{/* note */}} b"), "a  b");
        assert_eq!(go("{{-3}}"), "-3");
        assert!(go_err("{{/* open").contains("unclosed comment"));
        assert!(go_err("{{/* x */ }}").contains("comment ends before closing delimiter"));
    }

    #[test]
    fn printing_like_go() {
        assert_eq!(
            go("{{ .replicas }} {{ .ratio }} {{ .big }} {{ .enabled }}"),
            "3 1.5 1e+06 true"
        );
        assert_eq!(go("{{ .labels }}"), "map[team:core tier:web]");
        assert_eq!(go("{{ .path.segments }}"), "[apps foo]");
        assert_eq!(
            go("{{ 0.000001 }} {{ 123456.0 }} {{ 1.0 }} {{ 0x1F }} {{ 'a' }}"),
            "1e-06 123456 1 31 97"
        );
        assert_eq!(
            go("{{ print 1 2 \"a\" \"b\" 3 }}|{{ println \"x\" 1 }}"),
            "1 2ab3|x 1\n"
        );
        assert_eq!(
            go("{{ \"tab\\there\" }} {{ `raw\\n` }}"),
            "tab\there raw\\n"
        );
    }

    #[test]
    fn default_and_friends() {
        assert_eq!(go("{{ .nope | default \"x\" }}"), "x");
        assert_eq!(
            go("{{ default \"x\" .empty }}|{{ default \"x\" .env }}"),
            "x|prod"
        );
        assert_eq!(go("{{ empty .empty }} {{ empty .labels }}"), "true false");
        assert_eq!(go("{{ coalesce .nope .empty .env }}"), "prod");
        assert_eq!(go("{{ ternary \"y\" \"n\" .enabled }}"), "y");
        assert!(go_err("{{ fail \"boom\" }}").contains("error calling fail: boom"));
    }

    #[test]
    fn printf_verbs() {
        assert_eq!(go("{{ printf \"%s-%d\" .name .replicas }}"), "MyApp-3");
        assert_eq!(
            go("{{ printf \"%q %v %t\" .env .labels .enabled }}"),
            "\"prod\" map[team:core tier:web] true"
        );
        assert_eq!(
            go("{{ printf \"%05d|%-4s|%4s|%.2f|%x\" 42 \"ab\" \"cd\" 3.14159 255 }}"),
            "00042|ab  |  cd|3.14|ff"
        );
        assert_eq!(
            go("{{ printf \"%d %s\" \"x\" }}"),
            "%!d(string=x) %!s(MISSING)"
        );
        assert_eq!(go("{{ printf \"a\" 1 }}"), "a%!(EXTRA int=1)");
        assert_eq!(go("{{ printf \"%v %s\" .nope .nope }}"), "<nil> %!s(<nil>)");
        assert_eq!(go("{{ printf \"100%%\" }}"), "100%");
        assert!(go_err("{{ printf \"%999999999d\" 1 }}").contains("too large"));
    }

    #[test]
    fn strings_functions() {
        assert_eq!(go("{{ title \"hello wide-world\" }}"), "Hello Wide-World");
        assert_eq!(
            go("{{ trunc -3 \"abcdef\" }} {{ trunc 10 \"ab\" }} {{ trunc 1 \"é\" }}|"),
            "def ab |"
        );
        assert_eq!(
            go("{{ substr 1 3 \"abcdef\" }} {{ substr 2 99 \"abcdef\" }}"),
            "bc cdef"
        );
        assert!(go_err("{{ substr 4 2 \"abcdef\" }}").contains("slice bounds out of range"));
        assert_eq!(go("{{ trim \"  x \" }}{{ trimAll \"$\" \"$5$\" }}{{ trimPrefix \"a\" \"ab\" }}{{ trimSuffix \"b\" \"ab\" }}"), "x5ba");
        assert_eq!(
            go("{{ replace \"-\" \"_\" \"a-b-c\" }} {{ repeat 3 \"ab\" }}"),
            "a_b_c ababab"
        );
        assert_eq!(go("{{ contains \"pp\" \"apps\" }} {{ hasPrefix \"ap\" \"apps\" }} {{ hasSuffix \"x\" \"apps\" }}"), "true true false");
        assert_eq!(
            go("{{ squote .env }} {{ quote .nope \"a\" 1 }} {{ cat \"a\" .nope 2 }}"),
            "'prod' \"a\" \"1\" a 2"
        );
        assert_eq!(
            go("{{ indent 2 \"a\\nb\" }}|{{ nindent 2 \"c\" }}"),
            "  a\n  b|\n  c"
        );
        assert_eq!(
            go("{{ splitList \"/\" .path.path | join \"-\" }} {{ (split \"/\" .path.path)._1 }}"),
            "apps-foo foo"
        );
        assert_eq!(
            go("{{ join \",\" (list 1 \"a\" true) }} {{ toString 5 }} {{ toStrings (list 1 2) }}"),
            "1,a,true 5 [1 2]"
        );
        assert_eq!(go("{{ upper \"straße\" }} {{ lower \"ÀB\" }}"), "STRAßE àb");
    }

    #[test]
    fn collections() {
        assert_eq!(go("{{ $d := dict \"a\" 1 \"b\" (list 2 3) }}{{ $d.b }} {{ get $d \"a\" }} {{ get $d \"z\" }}|"), "[2 3] 1 |");
        assert_eq!(
            go("{{ hasKey .labels \"team\" }} {{ keys .labels | join \",\" }} {{ len .labels }}"),
            "true team,tier 2"
        );
        assert_eq!(
            go("{{ first .path.segments }} {{ last .path.segments }} {{ first (list) }}"),
            "apps foo <no value>"
        );
        assert_eq!(go("{{ has \"foo\" .path.segments }} {{ append .path.segments \"x\" }} {{ rest (list 1 2 3) }}"), "true [apps foo x] [2 3]");
        assert_eq!(go("{{ uniq (list 1 1 2) }} {{ compact (list \"\" \"a\") }} {{ reverse (list 1 2) }} {{ sortAlpha (list \"b\" \"a\") }}"), "[1 2] [a] [2 1] [a b]");
        assert!(go_err("{{ first .name }}").contains("Cannot find first on type string"));
    }

    #[test]
    fn encodings() {
        assert_eq!(
            go("{{ toJson .labels }}"),
            r#"{"team":"core","tier":"web"}"#
        );
        assert_eq!(
            go("{{ toJson \"<a&b>\" }} {{ toRawJson \"<a>\" }} {{ toJson .big }}"),
            r#""\u003ca\u0026b\u003e" "<a>" 1000000"#
        );
        assert_eq!(
            go("{{ toPrettyJson (dict \"a\" (list 1) \"b\" (dict)) }}"),
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}"
        );
        let yaml = go("{{ toYaml (dict \"name\" \"x\" \"on\" \"yes\" \"list\" (list \"a\" (dict \"k\" 1)) \"text\" \"l1\\nl2\" \"e\" (list)) }}");
        assert_eq!(
            yaml,
            "e: []\nlist:\n- a\n- k: 1\nname: x\n\"on\": \"yes\"\ntext: |-\n  l1\n  l2"
        );
        assert_eq!(
            go("{{ toYaml \"a: b\" }}|{{ toYaml \"123\" }}|{{ toYaml 1.5 }}"),
            "'a: b'|\"123\"|1.5"
        );
        assert_eq!(
            go("{{ b64enc \"hello\" }} {{ b64dec \"aGVsbG8=\" }} {{ b64dec \"%%\" }}"),
            "aGVsbG8= hello illegal base64 data at input byte 0"
        );
        assert_eq!(
            go("{{ sha256sum \"\" }}"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            go("{{ sha256sum \"abc\" }}"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(
            sha256_hex(two_blocks.as_bytes()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        for text in ["", "a", "ab", "abc", "abcd", "\u{e9}t\u{e9}"] {
            assert_eq!(
                b64_decode(&b64_encode(text.as_bytes())),
                Ok(text.as_bytes().to_vec())
            );
        }
        assert_eq!(
            go("{{ (fromJson \"{\\\"a\\\": [1]}\").a }} {{ fromJson \"bad\" }}"),
            "[1] <no value>"
        );
    }

    #[test]
    fn paths() {
        assert_eq!(
            go("{{ base \"a/b/c.yaml\" }} {{ dir \"a/b/c.yaml\" }} {{ ext \"a/b/c.yaml\" }}"),
            "c.yaml a/b .yaml"
        );
        assert_eq!(go("{{ clean \"a//b/../c/.\" }} {{ base \"/\" }} {{ dir \"x\" }} {{ clean \"/../a\" }}"), "a/c / . /a");
    }

    #[test]
    fn math() {
        assert_eq!(go("{{ add 1 2 \"3\" }} {{ sub 5 7 }} {{ mul 2 3 4 }} {{ div 7 2 }} {{ mod 7 2 }} {{ add1 .replicas }}"), "6 -2 24 3 1 4");
        assert_eq!(go("{{ atoi \"42\" }} {{ atoi \"x\" }} {{ int \"12.0\" }} {{ int 3.9 }} {{ max 1 5 3 }} {{ min 4 2 }}"), "42 0 12 3 5 2");
        assert_eq!(
            go("{{ float64 \"1.5\" }} {{ len .name }} {{ len .path.segments }}"),
            "1.5 5 2"
        );
        assert!(go_err("{{ div 1 0 }}").contains("integer divide by zero"));
    }

    #[test]
    fn normalize_and_slugify() {
        assert_eq!(go("{{ normalize \"My_App.Name--\" }}"), "my-app.name");
        assert_eq!(
            go("{{ normalize \"-.Feature/JIRA-123 Ünïcode.\" }}"),
            "feature-jira-123-ünïcode".replace(['ü', 'ï'], "-")
        );
        assert_eq!(go("{{ .name | normalize }}"), "myapp");
        assert_eq!(go("{{ slugify \"Hello World!\" }}"), "hello-world");
        assert_eq!(go("{{ slugify \"a.b..c\" }}"), "a-b-c");
        let long = "{{ slugify \"aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk\" }}";
        assert_eq!(
            go(long),
            "aaaa-bbbb-cccc-dddd-eeee-ffff-gggg-hhhh-iiii-jjjj"
        );
        assert_eq!(go("{{ slugify 7 \"hello world foo\" }}"), "hello");
        assert_eq!(go("{{ slugify 7 false \"hello world foo\" }}"), "hello-w");
    }

    #[test]
    fn unknown_and_unsupported_functions() {
        assert!(go_err("{{ nope .name }}").contains("function \"nope\" not defined"));
        // Never called: Argo CD parses it fine, so do we.
        assert_eq!(
            go("{{ if false }}{{ regexMatch \"a\" \"b\" }}{{ end }}ok"),
            "ok"
        );
        let err = go_err("{{ regexMatch \"a\" .name }}");
        assert!(
            err.contains("function \"regexMatch\" is not supported offline"),
            "{err}"
        );
        assert!(go_err("{{ env \"HOME\" }}").contains("not defined"));
        assert!(go_err("{{ define \"x\" }}{{ end }}").contains("not supported offline"));
        for name in IMPLEMENTED.iter().filter(|n| !matches!(**n, "and" | "or")) {
            let mut budget = Budget::new(Work::new(u64::MAX));
            if let Err(msg) = call_func(name, &[], &mut budget) {
                assert!(
                    !msg.contains("not supported offline"),
                    "{name} is listed but not dispatched"
                );
            }
        }
    }

    #[test]
    fn fasttemplate_output_is_bounded() {
        let mut p = BTreeMap::new();
        p.insert("v".to_string(), "x".repeat(1000));
        let many = "{{v}}".repeat(2000);
        let err = render_fast_within(&many, &p, MAX_FIELD_OUTPUT).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Limit);
        assert_eq!(
            render_fast_within("a{{v}}b", &p, MAX_FIELD_OUTPUT)
                .unwrap()
                .len(),
            1002
        );
    }

    #[test]
    fn errors_say_whose_limit_it_is() {
        let kind = |text: &str| render_go(text, &data(), true).unwrap_err().kind;
        assert_eq!(kind("{{ .nope }}"), ErrorKind::Invalid);
        assert_eq!(kind("{{ nope }}"), ErrorKind::Invalid);
        assert_eq!(kind("{{ .name"), ErrorKind::Invalid);
        assert_eq!(kind("{{ env \"HOME\" }}"), ErrorKind::Invalid);
        assert_eq!(kind("{{ regexMatch \"a\" .name }}"), ErrorKind::Unsupported);
        assert_eq!(kind("{{ define \"x\" }}{{ end }}"), ErrorKind::Unsupported);
        assert_eq!(kind("{{ 1i }}"), ErrorKind::Unsupported);
        assert_eq!(kind("{{ repeat 100000000 \"x\" }}"), ErrorKind::Limit);
        // `fail` says what the template says: it cannot pass for a gap or a bound.
        let spoof = "{{ fail \"function \\\"fail\\\" is not supported offline\" }}";
        assert_eq!(kind(spoof), ErrorKind::Invalid);
        let spoof = format!("{{{{ fail \"{}\" }}}}", too_large());
        assert_eq!(kind(&spoof), ErrorKind::Invalid);
        let mut work = Work::new(100);
        let err = super::render_go("{{ range 1000 }}x{{ end }}", &data(), false, &mut work);
        assert_eq!(err.unwrap_err().kind, ErrorKind::Budget(Exhausted::Unit));
        // Spent is spent: the next string fails at once.
        let err = super::render_go("x", &data(), false, &mut work);
        assert_eq!(err.unwrap_err().kind, ErrorKind::Budget(Exhausted::Unit));
    }

    #[test]
    fn syntax_errors() {
        assert!(go_err("{{ .name").contains("unclosed action"));
        assert!(go_err("{{ if .x }}").contains("unexpected EOF"));
        assert!(go_err("{{ end }}").contains("unexpected {{end}}"));
        assert!(go_err("{{ else }}").contains("unexpected {{else}}"));
        assert!(go_err("{{ (.name }}").contains("unclosed left paren"));
        assert!(go_err("{{ .name) }}").contains("unexpected right paren"));
        assert!(go_err("{{ \"open }}").contains("unterminated quoted string"));
        assert!(go_err("{{ .a-b }}").contains("bad character U+002D '-'"));
        assert!(go_err("{{ 1x }}").contains("bad number syntax"));
        assert!(go_err("{{ nil }}").contains("nil is not a command"));
        assert!(go_err("{{ .a | }}{{ | .a }}").contains("unexpected \"|\""));
        assert!(go_err("line1\n{{ @ }}").starts_with("template: :2:"));
    }

    #[test]
    fn nasty_inputs_do_not_panic() {
        for text in [
            "{{",
            "{{}}",
            "}}{{",
            "{{{{}}}}",
            "{{-}}",
            "{{- -}}",
            "{{ $ }}",
            "{{ . }}",
            "{{(}}",
            "{{)}}",
            "{{ '' }}",
            "{{ '\\",
            "{{ \"\\",
            "{{ `",
            "{{ - }}",
            "{{ 0x }}",
            "{{ 1e999 }}",
            "{{ 99999999999999999999 }}",
            "{{ range $a, $b, $c := . }}{{ end }}",
            "{{ .é }}",
            "{{ \"\\xff\" }}",
            "{{ index \"é\" 1 }}",
        ] {
            let _ = render_go(text, &data(), false);
            let _ = render_go(text, &data(), true);
            let _ = render_fast(text, &BTreeMap::new());
        }
        assert!(go_err("{{}}").contains("missing value for command"));
        let deep = format!("{{{{ {}1{} }}}}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(go_err(&deep).contains("nests deeper than 100"));
        let ok = format!("{{{{ {}1{} }}}}", "(".repeat(50), ")".repeat(50));
        assert_eq!(go(&ok), "1");
        let nested_ifs = "{{ if true }}".repeat(200) + &"{{ end }}".repeat(200);
        assert!(go_err(&nested_ifs).contains("nests deeper"));
    }

    #[test]
    fn work_and_size_are_bounded() {
        let wide = "{{ $l := list (repeat 1000000 \"x\") }}{{ concat $l $l $l $l $l }}";
        assert!(go_err(wide).contains("exceeds the 4194304-byte limit"));
        let ten_k = "(splitList \",\" (repeat 10000 \"a,\"))";
        assert_eq!(go(&format!("{{{{ len {ten_k} }}}}")), "10001");
        let nested =
            format!("{{{{ range {ten_k} }}}}{{{{ range {ten_k} }}}}x{{{{ end }}}}{{{{ end }}}}");
        let err = go_err(&nested);
        assert!(err.contains("exceeds"), "{err}");
        assert!(
            go_err("{{ range 100000000 }}{{ end }}").contains("range exceeds 100000 iterations")
        );
        assert!(go_err("{{ repeat 100000000 \"x\" }}").contains("exceeds"));
        assert!(
            go_err("{{ range 2000 }}{{ repeat 1000 \"x\" }}{{ end }}").contains("output exceeds")
        );
        let doubling = "{{ $s := \"xxxxxxxx\" }}{{ range 40 }}{{ $s = cat $s $s }}{{ end }}";
        assert!(go_err(doubling).contains("exceeds"));
        let lists = "{{ $l := list 1 }}{{ range 200 }}{{ $l = list $l $l }}{{ end }}";
        assert!(go_err(lists).contains("exceeds") || go_err(lists).contains("nested deeper"));
        let deep_list = "{{ $l := list }}{{ range 150 }}{{ $l = list $l }}{{ end }}{{ $l }}";
        assert!(go_err(deep_list).contains("nested deeper"));
    }

    #[test]
    fn pseudo_random_templates_do_not_panic() {
        let pieces = [
            "{{",
            "}}",
            "{{-",
            "-}}",
            " ",
            ".",
            ".path",
            ".segments",
            "$",
            "$x",
            ":=",
            "=",
            "|",
            "(",
            ")",
            "\"s\"",
            "`r`",
            "'c'",
            "1",
            "-2",
            "3.5",
            "if",
            "else",
            "end",
            "range",
            "with",
            "break",
            "index",
            "len",
            "printf",
            "\"%d\"",
            "default",
            "toJson",
            "toYaml",
            "list",
            "dict",
            "split",
            ",",
            "/*",
            "*/",
            "nil",
            "true",
            "and",
            "or",
            "eq",
            "\n",
            "é",
            "{",
            "}",
            "\\",
            "slugify",
            "trunc",
            "b64dec",
            "keys",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..12 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let pick = usize::try_from(seed >> 33).unwrap_or(0) % pieces.len();
                text.push_str(pieces.get(pick).copied().unwrap_or(""));
            }
            let _ = render_go(&text, &data(), seed.is_multiple_of(2));
            let _ = render_fast(&text, &params(&[("path", "x")]));
        }
    }
}
