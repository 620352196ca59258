//! Sprig's remaining string functions: Masterminds/goutils v1.1.1 (`abbrev`, `initials`,
//! `swapcase`, `untitle`, `wrap`) and huandu/xstrings v1.5.0 (`snakecase`, `kebabcase`,
//! `camelcase`), `splitn`, `plural`, and the random ones, made deterministic.
//!
//! A lint must give the same answer twice, so nothing here is random: `randAlphaNum 5` and
//! friends cycle through their alphabet (`abcde`), `randInt` is its lower bound, `randBytes`
//! encodes zeros, `uuidv4` is `00000000-0000-4000-8000-000000000000`, and `shuffle` keeps its
//! input. Lengths and shapes are Helm's, so what depends on them still checks.

use super::{arity, check_size, int_arg, str_arg};
use crate::render::template::value::Val;
use crate::render::template::NODE_WEIGHT;
use serde_json::{Map, Value};

pub(super) fn call_text<'a>(name: &str, args: &[Val<'a>]) -> Result<Option<Val<'a>>, String> {
    let val = match name {
        "splitn" => {
            arity(args, 3)?;
            let (sep, n, s) = (str_arg(args, 0)?, int_arg(args, 1)?, str_arg(args, 2)?);
            let parts = go_splitn(s, sep, n);
            check_size(s.len() + parts.len().saturating_mul(NODE_WEIGHT * 2))?;
            let map: Map<String, Value> = parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| (format!("_{i}"), Value::String(part.to_string())))
                .collect();
            Val::new(Value::Object(map))
        }
        "abbrev" => {
            arity(args, 2)?;
            let (width, s) = (int_arg(args, 0)?, str_arg(args, 1)?);
            Val::str(if width < 4 {
                s.to_string()
            } else {
                abbreviate(s, 0, width).unwrap_or_default()
            })
        }
        "abbrevboth" => {
            arity(args, 3)?;
            let (left, right, s) = (int_arg(args, 0)?, int_arg(args, 1)?, str_arg(args, 2)?);
            Val::str(if right < 4 || (left > 0 && right < 7) {
                s.to_string()
            } else {
                abbreviate(s, left, right).unwrap_or_default()
            })
        }
        "initials" => {
            arity(args, 1)?;
            Val::str(initials(str_arg(args, 0)?))
        }
        "untitle" => {
            arity(args, 1)?;
            Val::str(untitle(str_arg(args, 0)?))
        }
        "swapcase" => {
            arity(args, 1)?;
            Val::str(swapcase(str_arg(args, 0)?))
        }
        "snakecase" | "kebabcase" => {
            arity(args, 1)?;
            let connector = if name == "snakecase" { '_' } else { '-' };
            Val::str(to_lower_case(str_arg(args, 0)?, connector))
        }
        "camelcase" => {
            arity(args, 1)?;
            Val::str(to_pascal_case(str_arg(args, 0)?))
        }
        "wrap" => {
            arity(args, 2)?;
            let (width, s) = (int_arg(args, 0)?, str_arg(args, 1)?);
            Val::str(wrap(s, width, "\n", false)?)
        }
        "wrapWith" => {
            arity(args, 3)?;
            let (width, sep, s) = (int_arg(args, 0)?, str_arg(args, 1)?, str_arg(args, 2)?);
            Val::str(wrap(s, width, sep, true)?)
        }
        "plural" => {
            arity(args, 3)?;
            let (one, many) = (str_arg(args, 0)?, str_arg(args, 1)?);
            Val::str(if int_arg(args, 2)? == 1 { one } else { many })
        }
        "shuffle" => {
            arity(args, 1)?;
            Val::str(str_arg(args, 0)?)
        }
        "randAlphaNum" | "randAlpha" | "randNumeric" | "randAscii" => {
            arity(args, 1)?;
            let alphabet: Vec<char> = match name {
                "randAlphaNum" => ('a'..='z').chain('A'..='Z').chain('0'..='9').collect(),
                "randAlpha" => ('a'..='z').chain('A'..='Z').collect(),
                "randNumeric" => ('0'..='9').collect(),
                _ => (' '..='~').collect(),
            };
            let count = usize::try_from(int_arg(args, 0)?).unwrap_or(0);
            check_size(count)?;
            Val::str(alphabet.iter().cycle().take(count).collect::<String>())
        }
        "randInt" => {
            arity(args, 2)?;
            let (min, max) = (int_arg(args, 0)?, int_arg(args, 1)?);
            if max <= min {
                return Err("invalid argument to Intn".to_string());
            }
            Val::int(min)
        }
        "randBytes" => {
            arity(args, 1)?;
            let count = usize::try_from(int_arg(args, 0)?)
                .map_err(|_| "runtime error: makeslice: len out of range".to_string())?;
            check_size(count.saturating_mul(2))?;
            use base64::Engine;
            Val::str(base64::engine::general_purpose::STANDARD.encode(vec![0u8; count]))
        }
        "uuidv4" => {
            arity(args, 0)?;
            Val::str("00000000-0000-4000-8000-000000000000")
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

/// Go's `strings.SplitN`: `n < 0` is every piece, 0 none, otherwise at most `n`.
fn go_splitn<'s>(s: &'s str, sep: &str, n: i64) -> Vec<&'s str> {
    if n == 0 {
        return Vec::new();
    }
    let max = usize::try_from(n).unwrap_or(usize::MAX);
    if sep.is_empty() {
        let chars: Vec<(usize, char)> = s.char_indices().collect();
        let mut out: Vec<&str> = Vec::new();
        for (k, (i, c)) in chars.iter().enumerate() {
            if k + 1 == max {
                out.push(s.get(*i..).unwrap_or(""));
                return out;
            }
            out.push(s.get(*i..*i + c.len_utf8()).unwrap_or(""));
        }
        return out;
    }
    s.splitn(max, sep).collect()
}

/// Cuts at a byte count as Go does, moved back to a character boundary.
fn cut(s: &str, mut at: usize) -> &str {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.get(..at).unwrap_or(s)
}

fn tail(s: &str, mut from: usize) -> &str {
    from = from.min(s.len());
    while !s.is_char_boundary(from) {
        from += 1;
    }
    s.get(from..).unwrap_or("")
}

/// goutils `AbbreviateFull`: byte lengths; `None` where goutils reports an error.
fn abbreviate(s: &str, offset: i64, width: i64) -> Option<String> {
    if s.is_empty() {
        return Some(String::new());
    }
    if width < 4 {
        return None;
    }
    let len = i64::try_from(s.len()).ok()?;
    if len <= width {
        return Some(s.to_string());
    }
    let mut offset = offset.min(len);
    if len.saturating_sub(offset) < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return Some(format!("{}...", cut(s, usize::try_from(width - 3).ok()?)));
    }
    if width < 7 {
        return None;
    }
    if offset + width - 3 < len {
        let rest = tail(s, usize::try_from(offset).ok()?);
        return Some(format!("...{}", abbreviate(rest, 0, width - 3)?));
    }
    Some(format!(
        "...{}",
        tail(s, usize::try_from(len - (width - 3)).ok()?)
    ))
}

/// Go's `unicode.IsSpace`.
fn go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (!c.is_ascii() && c.is_whitespace())
}

/// goutils `Initials` reads bytes as characters, so only ASCII comes out whole.
fn initials(s: &str) -> String {
    let mut out = String::new();
    let mut gap = true;
    for b in s.bytes() {
        let c = char::from(b);
        if go_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

fn lower_char(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

fn upper_char(c: char) -> char {
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// goutils `Uncapitalize`: the first letter of each space-separated word in lower case.
fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if go_space(c) {
                next = true;
                c
            } else if std::mem::take(&mut next) {
                lower_char(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils `SwapCase`.
fn swapcase(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_uppercase() {
                lower_char(c)
            } else if c.is_lowercase() {
                upper_char(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils `WrapCustom`, on bytes as Go does; only spaces are break points.
fn wrap(s: &str, width: i64, newline: &str, long_words: bool) -> Result<String, String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = usize::try_from(width.max(1)).unwrap_or(usize::MAX);
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut offset = 0usize;
    while b.len() - offset > width {
        check_size(out.len())?;
        if b.get(offset) == Some(&b' ') {
            offset += 1;
            continue;
        }
        let end = (offset + width + 1).min(b.len());
        let window = b.get(offset..end).unwrap_or(&[]);
        if let Some(space) = window.iter().rposition(|&c| c == b' ') {
            out.extend_from_slice(b.get(offset..offset + space).unwrap_or(&[]));
            out.extend_from_slice(newline.as_bytes());
            offset += space + 1;
        } else if long_words {
            out.extend_from_slice(b.get(offset..offset + width).unwrap_or(&[]));
            out.extend_from_slice(newline.as_bytes());
            offset += width;
        } else {
            let end = offset + width;
            match b
                .get(end..)
                .and_then(|rest| rest.iter().position(|&c| c == b' '))
            {
                None => {
                    out.extend_from_slice(b.get(offset..).unwrap_or(&[]));
                    offset = b.len();
                }
                Some(i) => {
                    out.extend_from_slice(b.get(offset..end + i).unwrap_or(&[]));
                    out.extend_from_slice(newline.as_bytes());
                    offset = end + i + 1;
                }
            }
        }
    }
    out.extend_from_slice(b.get(offset..).unwrap_or(&[]));
    check_size(out.len())?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// xstrings' connectors: `-`, `_` and white space.
fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || go_space(c)
}

/// xstrings' `isAlphabet`: letters, except CJK ideographs.
fn is_alphabet(c: char) -> bool {
    c.is_alphabetic()
        && !matches!(c, '\u{2e80}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' | '\u{20000}'..='\u{3134f}')
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() && !matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~')
        || (!c.is_ascii() && !c.is_alphanumeric() && !c.is_whitespace() && !c.is_control())
}

#[derive(Clone, Copy, PartialEq)]
enum Word {
    /// Nothing left.
    End,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings `nextWord`: one word (a run of one kind) and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut chars = s.char_indices().peekable();
    let Some((_, first)) = chars.next() else {
        return (Word::End, "", "");
    };
    let run = |chars: &mut std::iter::Peekable<std::str::CharIndices>,
               keep: &dyn Fn(char) -> bool| {
        while chars.next_if(|(_, c)| keep(*c)).is_some() {}
        chars.peek().map_or(s.len(), |(i, _)| *i)
    };
    let (kind, end) = if is_connector(first) {
        (Word::Connector, run(&mut chars, &is_connector))
    } else if is_punct(first) {
        (Word::Punct, run(&mut chars, &is_punct))
    } else if first.is_uppercase() {
        match chars.peek().map(|(_, c)| *c) {
            Some(c) if c.is_uppercase() => {
                // A run of capitals; its last one starts the next word if a letter follows.
                let mut last_start = 0;
                while let Some((i, _)) = chars.next_if(|(_, c)| c.is_uppercase()) {
                    last_start = i;
                }
                match chars.peek() {
                    Some((_, c)) if is_alphabet(*c) => (Word::Upper, last_start),
                    Some((i, _)) => (Word::Upper, *i),
                    None => (Word::Upper, s.len()),
                }
            }
            Some(c) if is_alphabet(c) => (
                Word::Upper,
                run(&mut chars, &|c| is_alphabet(c) && !c.is_uppercase()),
            ),
            _ => (Word::Upper, chars.peek().map_or(s.len(), |(i, _)| *i)),
        }
    } else if is_alphabet(first) {
        (
            Word::Alphabet,
            run(&mut chars, &|c| is_alphabet(c) && !c.is_uppercase()),
        )
    } else if first.is_numeric() {
        (Word::Number, run(&mut chars, &|c: char| c.is_numeric()))
    } else {
        (
            Word::Other,
            run(&mut chars, &|c| {
                !(is_connector(c) || is_alphabet(c) || c.is_numeric() || is_punct(c))
            }),
        )
    };
    (kind, s.get(..end).unwrap_or(s), s.get(end..).unwrap_or(""))
}

/// xstrings `toLower`: capitals and connectors of a word in lower case and `connector`.
fn push_lower(out: &mut String, kind: Word, word: &str, connector: char) {
    if kind != Word::Upper && kind != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        out.push(if is_connector(c) {
            connector
        } else if c.is_uppercase() {
            lower_char(c)
        } else {
            c
        });
    }
}

/// xstrings `camelCaseToLowerCase`, behind `snakecase` and `kebabcase`: words in lower case
/// joined by `connector`, a number kept with the word it follows (`bld4_floor_3rd`).
fn to_lower_case(s: &str, connector: char) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let (mut kind, mut word, mut rest) = next_word(s);
    let joins = |k: Word| !matches!(k, Word::End | Word::Punct | Word::Connector);
    while !rest.is_empty() {
        if kind != Word::Connector {
            push_lower(&mut out, kind, word, connector);
        }
        let (prev, last) = (kind, word);
        (kind, word, rest) = next_word(rest);
        match prev {
            Word::Number => {
                while matches!(kind, Word::Alphabet | Word::Number) {
                    push_lower(&mut out, kind, word, connector);
                    (kind, word, rest) = next_word(rest);
                }
                if joins(kind) {
                    out.push(connector);
                }
            }
            Word::Connector => push_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if kind != Word::Number {
                    if !matches!(kind, Word::Connector | Word::Punct) {
                        out.push(connector);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let number = word;
                (kind, word, rest) = next_word(rest);
                if kind != Word::Alphabet {
                    push_lower(&mut out, Word::Number, number, connector);
                    if !matches!(kind, Word::Connector | Word::Punct) {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                push_lower(&mut out, Word::Number, number, connector);
                while matches!(kind, Word::Alphabet | Word::Number) {
                    push_lower(&mut out, kind, word, connector);
                    (kind, word, rest) = next_word(rest);
                }
                if joins(kind) {
                    out.push(connector);
                }
            }
        }
    }
    push_lower(&mut out, kind, word, connector);
    out
}

/// xstrings `ToPascalCase`: a lone connector is dropped and the next letter capitalised, a
/// doubled one kept once; a word in capitals becomes `Golang` (`GOLANG_IS` → `GolangIs`).
fn to_pascal_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut first_upper = false;
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            first_upper = c.is_uppercase();
            r0 = Some(upper_char(c));
            break;
        }
        out.push(c);
    }
    let Some(mut r0) = r0 else {
        return out;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = r0.is_uppercase();
            r0 = upper_char(r0);
        } else {
            if first_upper {
                if r0.is_uppercase() {
                    r0 = lower_char(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[cfg(test)]
mod tests {
    use super::{to_lower_case, to_pascal_case};
    use crate::render::template::testing::check;

    #[test]
    fn case_conversions() {
        // The samples xstrings documents.
        for (input, snake) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("GO-PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
        ] {
            assert_eq!(to_lower_case(input, '_'), snake, "{input}");
            assert_eq!(
                to_lower_case(input, '-'),
                snake.replace('_', "-"),
                "{input}"
            );
        }
        for (input, pascal) in [
            ("some_words", "SomeWords"),
            ("http_server", "HttpServer"),
            ("no_https", "NoHttps"),
            ("_complex__case_", "_Complex_Case_"),
            ("some words", "SomeWords"),
            ("GOLANG_IS_GREAT", "GolangIsGreat"),
            ("x", "X"),
            ("", ""),
        ] {
            assert_eq!(to_pascal_case(input), pascal, "{input}");
        }
    }

    #[test]
    fn string_functions() {
        check(&[
            (
                "{{ $p := splitn \"/\" 2 \"a/b/c\" }}{{ $p._0 }} {{ $p._1 }} {{ splitn \"/\" 0 \"a\" | len }}",
                Ok("a b/c 0"),
            ),
            (
                "{{ abbrev 5 \"hello world\" }} {{ abbrev 3 \"hello\" }} {{ abbrevboth 5 10 \"1234 5678 9123\" }} {{ abbrevboth -9223372036854775808 5 \"abcdefgh\" }}",
                Ok("he... hello ...5678... ab..."),
            ),
            (
                "{{ initials \"First Try\" }} {{ untitle \"Hello World\" }} {{ swapcase \"Hello World\" }}",
                Ok("FT hello world hELLO wORLD"),
            ),
            (
                "{{ snakecase \"FirstName\" }} {{ kebabcase \"FirstName\" }} {{ camelcase \"http_server\" }}",
                Ok("first_name first-name HttpServer"),
            ),
            (
                "{{ wrap 5 \"Hello World\" }}|{{ wrapWith 5 \"\\t\" \"Hello World\" }}|{{ wrapWith 3 \"-\" \"abcdefg\" }}|{{ wrap 3 \"abcdefg hi\" }}",
                Ok("Hello\nWorld|Hello\tWorld|abc-def-g|abcdefg\nhi"),
            ),
            (
                "{{ plural \"one\" \"many\" 1 }} {{ plural \"one\" \"many\" 2 }}",
                Ok("one many"),
            ),
            (
                "{{ randAlphaNum 5 }} {{ randNumeric 12 }} {{ randAlpha 0 }}| {{ randInt 3 9 }} {{ randBytes 3 }} {{ uuidv4 | len }}",
                Ok("abcde 012345678901 | 3 AAAA 36"),
            ),
            ("{{ randInt 3 3 }}", Err("invalid argument to Intn")),
        ]);
    }
}
