//! Sprig's string functions.

use super::argo::{sanitize_name, slugify};
use super::flow::call_flow;
use super::{arity, check_size, int_arg, nth, str2_bool, str2_fn, str_arg, str_fn};
use crate::render::template::format::{go_quote, strval, write_v, Out};
use crate::render::template::value::{Budget, Val};
use crate::render::template::{MAX_VALUE_BYTES, NODE_WEIGHT};
use serde_json::Value;

pub(super) fn call_strings<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
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

/// Go's `unicode.ToLower` is a one-to-one mapping; take the first char of Rust's.
pub(super) fn go_lower_char(c: char) -> char {
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
    check_size(crate::text::replaced_len(s, old, new, None))?;
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

pub(super) fn string_list<'a>(items: Vec<String>) -> Val<'a> {
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

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn strings_functions() {
        check(&[
            ("{{ title \"hello wide-world\" }}", Ok("Hello Wide-World")),
            (
                "{{ trunc -3 \"abcdef\" }} {{ trunc 10 \"ab\" }} {{ trunc 1 \"é\" }}|",
                Ok("def ab |"),
            ),
            (
                "{{ substr 1 3 \"abcdef\" }} {{ substr 2 99 \"abcdef\" }}",
                Ok("bc cdef"),
            ),
            ("{{ substr 4 2 \"abcdef\" }}", Err("slice bounds out of range")),
            (
                "{{ trim \"  x \" }}{{ trimAll \"$\" \"$5$\" }}{{ trimPrefix \"a\" \"ab\" }}{{ trimSuffix \"b\" \"ab\" }}",
                Ok("x5ba"),
            ),
            (
                "{{ replace \"-\" \"_\" \"a-b-c\" }} {{ repeat 3 \"ab\" }}",
                Ok("a_b_c ababab"),
            ),
            (
                "{{ contains \"pp\" \"apps\" }} {{ hasPrefix \"ap\" \"apps\" }} {{ hasSuffix \"x\" \"apps\" }}",
                Ok("true true false"),
            ),
            (
                "{{ squote .env }} {{ quote .nope \"a\" 1 }} {{ cat \"a\" .nope 2 }}",
                Ok("'prod' \"a\" \"1\" a 2"),
            ),
            (
                "{{ indent 2 \"a\\nb\" }}|{{ nindent 2 \"c\" }}",
                Ok("  a\n  b|\n  c"),
            ),
            (
                "{{ splitList \"/\" .path.path | join \"-\" }} {{ (split \"/\" .path.path)._1 }}",
                Ok("apps-foo foo"),
            ),
            (
                "{{ join \",\" (list 1 \"a\" true) }} {{ toString 5 }} {{ toStrings (list 1 2) }}",
                Ok("1,a,true 5 [1 2]"),
            ),
            ("{{ upper \"straße\" }} {{ lower \"ÀB\" }}", Ok("STRAßE àb")),
        ]);
    }
}
