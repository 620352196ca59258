//! printf: a subset of Go's fmt verbs (%v %s %d %q %t %f %e %g %x %X %o %b %c %T %%) with
//! flags, width and precision, and Go's `%!verb(type=value)` markers for mismatches.

use super::format::{go_float, go_quote, push_go_escaped, strval, write_v, Out};
use super::funcs::cast_int;
use super::value::{go_type, Val};
use super::MAX_VALUE_BYTES;
use serde_json::{Number, Value};

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

pub(super) fn go_sprintf(format: &str, args: &[Val]) -> Result<String, String> {
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
pub(super) fn go_print(args: &[Val], newline: bool) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn printf_verbs() {
        check(&[
            ("{{ printf \"%s-%d\" .name .replicas }}", Ok("MyApp-3")),
            (
                "{{ printf \"%q %v %t\" .env .labels .enabled }}",
                Ok("\"prod\" map[team:core tier:web] true"),
            ),
            (
                "{{ printf \"%05d|%-4s|%4s|%.2f|%x\" 42 \"ab\" \"cd\" 3.14159 255 }}",
                Ok("00042|ab  |  cd|3.14|ff"),
            ),
            (
                "{{ printf \"%d %s\" \"x\" }}",
                Ok("%!d(string=x) %!s(MISSING)"),
            ),
            ("{{ printf \"a\" 1 }}", Ok("a%!(EXTRA int=1)")),
            ("{{ printf \"%v %s\" .nope .nope }}", Ok("<nil> %!s(<nil>)")),
            ("{{ printf \"100%%\" }}", Ok("100%")),
            ("{{ printf \"%999999999d\" 1 }}", Err("too large")),
        ]);
    }
}
