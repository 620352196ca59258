//! encoding/json as Sprig's `toJson` family writes it.

use super::format::{json_number, sorted_entries, Out};
use super::{too_deep, MAX_DEPTH, MAX_VALUE_BYTES};
use serde_json::Value;

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
pub(super) struct JsonStyle {
    pub(super) escape_html: bool,
    pub(super) pretty: bool,
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

pub(super) fn to_json(v: Option<&Value>, style: JsonStyle) -> Result<String, String> {
    let mut out = Out::new(MAX_VALUE_BYTES);
    match v {
        None => out.push("null")?,
        Some(v) => write_json(&mut out, v, style, 0)?,
    }
    Ok(out.buf)
}

/// `json.Marshal` of a value: sorted keys, HTML-safe escapes, numbers as float64 prints them;
/// `None` past the size bound.
pub(crate) fn go_json(v: &Value) -> Option<String> {
    to_json(
        Some(v),
        JsonStyle {
            escape_html: true,
            pretty: false,
        },
    )
    .ok()
}
