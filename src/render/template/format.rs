//! Formatting: Go's fmt `%v`, its float formats and strconv.Quote.

use super::{too_deep, MAX_DEPTH, MAX_VALUE_BYTES};
use serde_json::{Map, Number, Value};

/// A string builder that refuses to grow past its limit.
pub(super) struct Out {
    pub(super) buf: String,
    limit: usize,
}

impl Out {
    pub(super) fn new(limit: usize) -> Self {
        Out {
            buf: String::new(),
            limit,
        }
    }

    pub(super) fn push(&mut self, s: &str) -> Result<(), String> {
        if self.buf.len().saturating_add(s.len()) > self.limit {
            return Err(format!("text exceeds the {}-byte limit", self.limit));
        }
        self.buf.push_str(s);
        Ok(())
    }

    pub(super) fn indent(&mut self, width: usize) -> Result<(), String> {
        for _ in 0..width {
            self.push(" ")?;
        }
        Ok(())
    }
}

pub(super) fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Go's `%v`: `map[k:v]` with sorted keys, `[a b]`, unquoted strings, `<nil>`.
pub(super) fn write_v(out: &mut Out, v: &Value, depth: usize) -> Result<(), String> {
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
pub(super) fn strval(v: Option<&Value>) -> Result<String, String> {
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
pub fn go_float(f: f64) -> String {
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

pub(super) fn json_number(n: &Number) -> String {
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
pub(super) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_go_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

pub(super) fn push_go_escaped(out: &mut String, c: char, quote: char) {
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

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn printing_like_go() {
        check(&[
            (
                "{{ .replicas }} {{ .ratio }} {{ .big }} {{ .enabled }}",
                Ok("3 1.5 1e+06 true"),
            ),
            ("{{ .labels }}", Ok("map[team:core tier:web]")),
            ("{{ .path.segments }}", Ok("[apps foo]")),
            (
                "{{ 0.000001 }} {{ 123456.0 }} {{ 1.0 }} {{ 0x1F }} {{ 'a' }}",
                Ok("1e-06 123456 1 31 97"),
            ),
            (
                "{{ print 1 2 \"a\" \"b\" 3 }}|{{ println \"x\" 1 }}",
                Ok("1 2ab3|x 1\n"),
            ),
            (
                "{{ \"tab\\there\" }} {{ `raw\\n` }}",
                Ok("tab\there raw\\n"),
            ),
        ]);
    }
}
