//! Sprig's regular expressions, with Go's `regexp` (RE2) syntax and results (the dialect is
//! [`crate::goregex`]'s). Replacement templates are expanded here, with Go's rules (`$1x`
//! names group `1x`, `$$` is a dollar, a malformed `$` stays as it is).

use super::strings::string_list;
use super::{arity, check_size, int_arg, str_arg};
use crate::render::template::format::go_quote;
use crate::render::template::value::{Budget, Val};
use crate::render::template::NODE_WEIGHT;
use regex::{Captures, Regex};

/// Longest pattern compiled; chart patterns are a few dozen bytes.
const MAX_PATTERN: usize = 4096;
/// Compiled program and lazy-DFA cache sizes: bounded memory for any pattern.
const SIZE_LIMIT: usize = 1 << 20;

pub(super) fn call_regex<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Option<Val<'a>>, String> {
    let must = name.starts_with("must");
    let base = name.strip_prefix("must").unwrap_or(name);
    // The plain forms use `regexp.MustCompile`, whose panic text becomes the error.
    let compile = |pattern: &str| -> Result<Regex, String> {
        go_regex(pattern).map_err(|e| {
            if must {
                e
            } else {
                format!("regexp: Compile({}): {e}", go_backquote(pattern))
            }
        })
    };
    let val = match base {
        "regexMatch" | "RegexMatch" => {
            arity(args, 2)?;
            let (pattern, s) = (str_arg(args, 0)?, str_arg(args, 1)?);
            budget.charge_bytes(s.len())?;
            match go_regex(pattern) {
                Ok(re) => Val::bool(re.is_match(s)),
                // `regexMatch` drops the error and answers false.
                Err(e) if must => return Err(e),
                Err(_) => Val::bool(false),
            }
        }
        "regexFind" | "RegexFind" => {
            arity(args, 2)?;
            let (re, s) = (compile(str_arg(args, 0)?)?, str_arg(args, 1)?);
            budget.charge_bytes(s.len())?;
            Val::str(re.find(s).map_or("", |m| m.as_str()))
        }
        "regexFindAll" | "RegexFindAll" => {
            arity(args, 3)?;
            let (re, s) = (compile(str_arg(args, 0)?)?, str_arg(args, 1)?);
            let n = int_arg(args, 2)?;
            budget.charge_bytes(s.len())?;
            let mut found = Vec::new();
            let mut total = 0usize;
            for m in re.find_iter(s).take(limit(n, s.len())) {
                total = total.saturating_add(m.len() + NODE_WEIGHT);
                check_size(total)?;
                found.push(m.as_str().to_string());
            }
            string_list(found)
        }
        "regexReplaceAll"
        | "RegexReplaceAll"
        | "regexReplaceAllLiteral"
        | "RegexReplaceAllLiteral" => {
            arity(args, 3)?;
            let re = compile(str_arg(args, 0)?)?;
            let (s, repl) = (str_arg(args, 1)?, str_arg(args, 2)?);
            budget.charge_bytes(s.len())?;
            let literal = base.ends_with("Literal");
            Val::str(replace_all(&re, s, repl, literal)?)
        }
        "regexSplit" | "RegexSplit" => {
            arity(args, 3)?;
            let pattern = str_arg(args, 0)?;
            let re = compile(pattern)?;
            let (s, n) = (str_arg(args, 1)?, int_arg(args, 2)?);
            budget.charge_bytes(s.len())?;
            string_list(split(&re, pattern, s, n)?)
        }
        "regexQuoteMeta" => {
            arity(args, 1)?;
            Val::str(quote_meta(str_arg(args, 0)?))
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

/// Go's `n` argument of the `All` functions: negative means every match.
fn limit(n: i64, len: usize) -> usize {
    usize::try_from(n).unwrap_or(len.saturating_add(1))
}

/// Go's `strconv.Quote`, or back quotes when the text allows them (`regexp`'s own `quote`).
fn go_backquote(s: &str) -> String {
    let plain = !s.contains('`') && s.chars().all(|c| c == '\t' || !c.is_control());
    if plain {
        format!("`{s}`")
    } else {
        go_quote(s)
    }
}

/// Compiles a Go (RE2) pattern of a chart; errors read as Go's `regexp.Compile` ones.
pub(crate) fn go_regex(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN {
        return Err(crate::goregex::syntax_error_text(
            "expression too large",
            pattern,
        ));
    }
    crate::goregex::compile(pattern, SIZE_LIMIT)
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Go's `ReplaceAllString` / `ReplaceAllLiteralString`. Matches are the crate's, which skip
/// an empty match right after a previous match, as Go does.
fn replace_all(re: &Regex, s: &str, repl: &str, literal: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut last = 0;
    for caps in re.captures_iter(s) {
        let Some(m) = caps.get(0) else { continue };
        out.push_str(s.get(last..m.start()).unwrap_or(""));
        if literal {
            out.push_str(repl);
        } else {
            expand(re, &caps, repl, &mut out);
        }
        last = m.end();
        check_size(out.len())?;
    }
    out.push_str(s.get(last..).unwrap_or(""));
    check_size(out.len())?;
    Ok(out)
}

/// Go's `Regexp.expand`: `$name` / `${name}`, the longest run of letters, digits and `_`.
fn expand(re: &Regex, caps: &Captures, template: &str, out: &mut String) {
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        out.push_str(rest.get(..dollar).unwrap_or(""));
        rest = rest.get(dollar + 1..).unwrap_or("");
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let Some((name, after)) = extract_name(rest) else {
            out.push('$');
            continue;
        };
        rest = after;
        let group = match group_number(name) {
            Some(i) => caps.get(i),
            None => re
                .capture_names()
                .enumerate()
                .find(|(i, n)| *n == Some(name) && caps.get(*i).is_some())
                .and_then(|(i, _)| caps.get(i)),
        };
        if let Some(m) = group {
            out.push_str(m.as_str());
        }
    }
    out.push_str(rest);
}

/// Go's `extract`: the name after a `$`, and what follows it.
fn extract_name(s: &str) -> Option<(&str, &str)> {
    let (body, brace) = match s.strip_prefix('{') {
        Some(inner) => (inner, true),
        None => (s, false),
    };
    let end = body
        .char_indices()
        .find(|(_, c)| !(c.is_alphabetic() || c.is_numeric() || *c == '_'))
        .map_or(body.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    let name = body.get(..end)?;
    let rest = body.get(end..)?;
    if brace {
        rest.strip_prefix('}').map(|after| (name, after))
    } else {
        Some((name, rest))
    }
}

/// A group number as Go reads one: digits only, no leading zero, below 10^8.
fn group_number(name: &str) -> Option<usize> {
    if !name.bytes().all(|b| b.is_ascii_digit()) || (name.len() > 1 && name.starts_with('0')) {
        return None;
    }
    name.parse::<usize>().ok().filter(|n| *n < 100_000_000)
}

/// Go's `Regexp.Split`, including its quirk: a last piece is added unless the last match
/// used started at the very end.
fn split(re: &Regex, pattern: &str, s: &str, n: i64) -> Result<Vec<String>, String> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if !pattern.is_empty() && s.is_empty() {
        return Ok(vec![String::new()]);
    }
    let mut pieces = Vec::new();
    let (mut beg, mut end) = (0, 0);
    let max = limit(n, s.len());
    for m in re.find_iter(s).take(max) {
        if n > 0 && i64::try_from(pieces.len()).unwrap_or(i64::MAX) == n - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            pieces.push(s.get(beg..end).unwrap_or("").to_string());
        }
        beg = m.end();
        check_size(pieces.len().saturating_mul(NODE_WEIGHT).saturating_add(end))?;
    }
    if end != s.len() {
        pieces.push(s.get(beg..).unwrap_or("").to_string());
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn regex_functions() {
        check(&[
            (
                "{{ regexMatch \"^[a-z]+$\" \"abc\" }} {{ regexMatch \"^\\\\d+$\" \"12a\" }} {{ regexMatch \"(\" \"x\" }}",
                Ok("true false false"),
            ),
            (
                // Go reads `-` after a class escape as a character (redis-ha's host check).
                "{{ regexMatch \"^[\\\\w-\\\\.]+$\" \"a-b.c\" }} {{ regexMatch \"^[\\\\w-\\\\.]+$\" \"a,b\" }} {{ regexMatch \"^[[:alpha:]-]+$\" \"a-b\" }}",
                Ok("true false true"),
            ),
            (
                "{{ mustRegexMatch \"(\" \"x\" }}",
                Err("error calling mustRegexMatch: error parsing regexp: missing closing ): `(`"),
            ),
            (
                "{{ regexFind \"(\" \"x\" }}",
                Err("error calling regexFind: regexp: Compile(`(`): error parsing regexp: missing closing ): `(`"),
            ),
            (
                "{{ regexFind \"[a-z]+\" \"12abc34de\" }}|{{ regexFind \"z\" \"abc\" }}|",
                Ok("abc||"),
            ),
            (
                "{{ regexFindAll \"[0-9]\" \"a1b2c3\" -1 }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" 2 }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" 0 }} {{ regexFindAll \"a*\" \"baaac\" -1 | len }}",
                Ok("[1 2 3] [1 2] [] 3"),
            ),
            (
                "{{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" }} {{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"$1W\" }} {{ regexReplaceAll \"a(?P<x>x*)b\" \"-axb-\" \"[$x$$]\" }}",
                Ok("-W-xxW- --- -[x$]-"),
            ),
            (
                "{{ regexReplaceAllLiteral \"a(x*)b\" \"-ab-axxb-\" \"${1}\" }} {{ regexReplaceAll \"x*\" \"abc\" \"-\" }} {{ regexReplaceAll \"b\" \"abc\" \"$\" }}",
                Ok("-${1}-${1}- -a-b-c- a$c"),
            ),
            (
                "{{ regexSplit \"a\" \"banana\" -1 }} {{ regexSplit \"a\" \"banana\" 2 }} {{ regexSplit \"\" \"abc\" -1 }} {{ regexSplit \"x*\" \"axbc\" -1 }} {{ regexSplit \"a\" \"\" -1 | len }}",
                Ok("[b n n ] [b nana] [a b c] [a b c] 1"),
            ),
            (
                "{{ regexQuoteMeta \"1.2.3+[x]\" }}",
                Ok("1\\.2\\.3\\+\\[x\\]"),
            ),
            // Go's classes are ASCII; a `[` in a class is itself.
            (
                "{{ regexMatch \"^\\\\w+$\" \"é\" }} {{ regexMatch \"^\\\\d$\" \"٣\" }} {{ regexFind \"[[]+\" \"a[[b\" }} {{ regexMatch \"\\\\s\" \"\\v\" }}",
                Ok("false false [[ false"),
            ),
            (
                "{{ regexFindAll \"\\\\bfoo\\\\b\" \"foo éfoo foo\" -1 }}",
                Ok("[foo foo foo]"),
            ),
            (
                "{{ mustRegexFind \"a{2,1}\" \"x\" }}",
                Err("error parsing regexp: invalid repeat count: `{2,1}`"),
            ),
            (
                "{{ mustRegexFind \"[z-a]\" \"x\" }}",
                Err("error parsing regexp: invalid character class range: `z-a`"),
            ),
            (
                "{{ mustRegexFind \"[a\" \"x\" }}",
                Err("error parsing regexp: missing closing ]: `[a`"),
            ),
            (
                "{{ mustRegexFind \"a)\" \"x\" }}",
                Err("error parsing regexp: unexpected ): `a)`"),
            ),
            (
                "{{ regexFindAll \"a\" 1 1 }}",
                Err("wrong type for value; expected string; got int"),
            ),
        ]);
    }
}
