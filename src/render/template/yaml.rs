//! A small YAML emitter for Argo CD's `toYaml`.

use super::format::{json_number, sorted_entries, Out};
use super::lexer::parse_go_int;
use super::{too_deep, MAX_DEPTH, MAX_VALUE_BYTES};
use serde_json::{Map, Value};

/// Argo CD's `toYaml` (sigs.k8s.io/yaml, trailing newline removed), for common shapes: block
/// maps with sorted keys, sequences at their key's indentation, literal blocks for multi-line
/// strings, and quotes wherever a plain scalar could be misread.
pub(super) fn to_yaml(v: Option<&Value>) -> Result<String, String> {
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
        // A block scalar's lines are indented one step past its parent's, and the document
        // root counts as a parent at -1: libyaml's emitter raises a root scalar's indent to 2.
        Value::String(s) if yaml_literal_ok(s) => yaml_literal(out, s, indent.max(2)),
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
