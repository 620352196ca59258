//! Sprig's reflection, hashes and base32, Go's `html`/`js`/`urlquery` escapers, the `os*`
//! path functions and `mustFromJson`.

use super::dicts::kind_name;
use super::paths::{path_base, path_clean, path_dir, path_ext};
use super::{arity, str_arg, str_fn};
use crate::render::template::printf::go_print;
use crate::render::template::value::{go_type, Val};
use serde_json::Value;

pub(super) fn call_misc<'a>(name: &str, args: &[Val<'a>]) -> Result<Option<Val<'a>>, String> {
    let type_of = |v: &Val| v.nonnull().map_or("<nil>", go_type);
    let kind_of = |v: &Val| kind_name(v.nonnull());
    let val = match name {
        "typeOf" => {
            arity(args, 1)?;
            Val::str(type_of(nth0(args)?))
        }
        "kindOf" => {
            arity(args, 1)?;
            Val::str(kind_of(nth0(args)?))
        }
        "typeIs" | "typeIsLike" | "kindIs" => {
            arity(args, 2)?;
            let target = str_arg(args, 0)?;
            let v = args.get(1).unwrap_or(&Val::Missing);
            Val::bool(match name {
                "typeIs" => target == type_of(v),
                "kindIs" => target == kind_of(v),
                _ => target == type_of(v) || format!("*{target}") == type_of(v),
            })
        }
        "sha1sum" => str_fn(args, |s| {
            let mut hasher = sha1dc::Hasher::new();
            hasher.update(&crate::render::template::go_bytes(s));
            // A detected collision attack still has the standard digest, which Go prints.
            let digest = match hasher.finalize() {
                Ok(digest) => digest,
                Err(collision) => collision.digest(),
            };
            hex(digest.as_ref())
        })?,
        "sha512sum" => str_fn(args, |s| {
            use sha2::{Digest, Sha512};
            hex(&Sha512::digest(crate::render::template::go_bytes(s)))
        })?,
        "adler32sum" => str_fn(args, |s| {
            adler32(&crate::render::template::go_bytes(s)).to_string()
        })?,
        "b32enc" => str_fn(args, |s| b32_encode(&crate::render::template::go_bytes(s)))?,
        "b32dec" => str_fn(args, |s| match b32_decode(s) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(msg) => msg, // Sprig returns the error text as the result.
        })?,
        "html" => Val::str(html_escape(&eval_args(args)?)),
        "js" => Val::str(js_escape(&eval_args(args)?)),
        "urlquery" => Val::str(query_escape(&eval_args(args)?)),
        // Filepath functions on a Unix system, which is where charts are rendered.
        "osBase" => str_fn(args, path_base)?,
        "osDir" => str_fn(args, path_dir)?,
        "osExt" => str_fn(args, path_ext)?,
        "osClean" => str_fn(args, path_clean)?,
        "osIsAbs" => {
            arity(args, 1)?;
            Val::bool(str_arg(args, 0)?.starts_with('/'))
        }
        "mustFromJson" => {
            arity(args, 1)?;
            let text = str_arg(args, 0)?;
            Val::new(serde_json::from_str(text).map_err(|e| json_error(text, &e))?)
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

fn nth0<'v, 'a>(args: &'v [Val<'a>]) -> Result<&'v Val<'a>, String> {
    super::nth(args, 0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 1950's Adler-32, as `hash/adler32`.
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32 with padding (`base32.StdEncoding`).
fn b32_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(5) * 8);
    for chunk in data.chunks(5) {
        let mut block = [0u8; 5];
        block[..chunk.len()].copy_from_slice(chunk);
        let bits = block.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                let index = usize::try_from((bits >> (35 - i * 5)) & 31).unwrap_or(0);
                out.push(char::from(B32[index]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `base32.StdEncoding.DecodeString`, with Go's message for bad input. Go skips line breaks.
fn b32_decode(s: &str) -> Result<Vec<u8>, String> {
    let bytes: Vec<(usize, u8)> = s
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b != b'\n' && *b != b'\r')
        .collect();
    let corrupt = |at: usize| format!("illegal base32 data at input byte {at}");
    let mut out = Vec::new();
    for (q, quantum) in bytes.chunks(8).enumerate() {
        let mut bits = 0u64;
        let mut count = 0;
        let mut padded = false;
        for (j, &(at, b)) in quantum.iter().enumerate() {
            if b == b'=' {
                // Padding is valid only after 2, 4, 5 or 7 symbols, to the end.
                if !matches!(j, 2 | 4 | 5 | 7) && !padded {
                    return Err(corrupt(at));
                }
                padded = true;
                continue;
            }
            if padded {
                return Err(corrupt(at));
            }
            let value = B32
                .iter()
                .position(|&c| c == b)
                .ok_or_else(|| corrupt(at))?;
            bits = (bits << 5) | u64::try_from(value).unwrap_or(0);
            count += 1;
        }
        if quantum.len() < 8 {
            // Go counts back from the end of the input by the symbols read.
            return Err(corrupt(s.len().saturating_sub(quantum.len())));
        }
        if padded && (q + 1) * 8 < bytes.len() {
            return Err(corrupt(quantum.first().map_or(0, |(at, _)| *at)));
        }
        bits <<= 5 * (8 - count);
        let keep = match count {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        for i in 0..keep {
            out.push(((bits >> (32 - i * 8)) & 0xff) as u8);
        }
    }
    Ok(out)
}

/// text/template's `evalArgs`: one string as it is, anything else through `fmt.Sprint`.
fn eval_args(args: &[Val]) -> Result<String, String> {
    if let [only] = args {
        if let Some(Value::String(s)) = only.value() {
            return Ok(s.clone());
        }
    }
    go_print(args, false)
}

/// text/template's `HTMLEscapeString`.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{fffd}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// text/template's `JSEscapeString`.
fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if c < ' ' => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c if c.is_ascii() => out.push(c),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// `url.QueryEscape`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// encoding/json's message for the common failures.
fn json_error(text: &str, e: &serde_json::Error) -> String {
    if e.is_eof() {
        return "unexpected end of JSON input".to_string();
    }
    let offset = text
        .lines()
        .take(e.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum::<usize>()
        + e.column().saturating_sub(1);
    match text.get(offset..).and_then(|rest| rest.chars().next()) {
        Some(c) => format!(
            "invalid character {} looking for beginning of value",
            crate::render::template::format::go_quote(&c.to_string()).replace('"', "'")
        ),
        None => "unexpected end of JSON input".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{adler32, b32_decode, b32_encode};
    use crate::render::template::testing::check;

    #[test]
    fn reflection_hashes_escapes() {
        check(&[
            (
                "{{ typeOf 1 }} {{ typeOf 1.5 }} {{ typeOf \"a\" }} {{ typeOf .labels }} {{ typeOf .path.segments }} {{ typeOf .nope }} {{ typeOf true }}",
                Ok("int float64 string map[string]interface {} []interface {} <nil> bool"),
            ),
            (
                "{{ kindOf 1 }} {{ kindOf .labels }} {{ kindOf .path.segments }} {{ kindOf .nope }} {{ kindIs \"map\" .labels }} {{ typeIs \"string\" .name }} {{ typeIsLike \"int\" 2 }}",
                Ok("int map slice invalid true true true"),
            ),
            (
                "{{ sha1sum \"abc\" }} {{ adler32sum \"Wikipedia\" }}",
                Ok("a9993e364706816aba3e25717850c26c9cd0d89d 300286872"),
            ),
            (
                "{{ sha512sum \"abc\" }}",
                Ok("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
            ),
            (
                "{{ b32enc \"foobar\" }} {{ b32dec \"MZXW6YTBOI======\" }} {{ b32dec \"M!\" }}",
                Ok("MZXW6YTBOI====== foobar illegal base32 data at input byte 1"),
            ),
            (
                "{{ html \"<a href='x'>&\" }} {{ js \"it's <b>\" }} {{ urlquery \"a b&c=d/é\" }} {{ urlquery 1 2 }}",
                Ok("&lt;a href=&#39;x&#39;&gt;&amp; it\\'s \\u003Cb\\u003E a+b%26c%3Dd%2F%C3%A9 1+2"),
            ),
            (
                "{{ osBase \"a/b.txt\" }} {{ osExt \"a/b.txt\" }} {{ osIsAbs \"/a\" }}",
                Ok("b.txt .txt true"),
            ),
            ("{{ (mustFromJson \"{\\\"a\\\":1}\").a }}", Ok("1")),
            (
                "{{ mustFromJson \"{\" }}",
                Err("error calling mustFromJson: unexpected end of JSON input"),
            ),
            (
                "{{ mustFromJson \"bad\" }}",
                Err("invalid character 'b' looking for beginning of value"),
            ),
        ]);
        assert_eq!(adler32(b""), 1);
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            assert_eq!(
                b32_decode(&b32_encode(text.as_bytes())),
                Ok(text.as_bytes().to_vec())
            );
        }
        assert_eq!(b32_encode(b"f"), "MY======");
    }
}
