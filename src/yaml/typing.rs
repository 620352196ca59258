//! How the cluster types a scalar. Kubernetes and Argo CD decode YAML with `sigs.k8s.io/yaml`
//! (go-yaml v2, YAML 1.1), so plain `yes`, `on` and `y` are booleans there, while a YAML 1.2
//! reader sees strings. This module is the one place where that decision is made.

use super::{ScalarRef, Style};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool(bool),
    Int,
    Float,
    Str,
}

pub fn is_null(s: ScalarRef<'_>) -> bool {
    // `yaml11(s) == Kind::Null` without the number checks: this runs on every lookup.
    s.style == Style::Plain
        && matches!(s.text, "" | "~" | "null" | "Null" | "NULL")
        && !s.tag.is_some_and(|tag| tag.ends_with(":str") || tag == "!")
}

/// Whether `t` can be an integer or a float in either schema: they all start with a digit,
/// a sign, a dot (`.5`, `.inf`) or, in YAML 1.1, an underscore. Most scalars are words.
fn may_be_number(t: &str) -> bool {
    t.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'_'))
}

/// The type `sigs.k8s.io/yaml` (YAML 1.1 resolution) gives the scalar.
pub fn yaml11(s: ScalarRef<'_>) -> Kind {
    if s.style != Style::Plain {
        return Kind::Str;
    }
    if let Some(tag) = s.tag {
        if tag.ends_with(":str") || tag == "!" {
            return Kind::Str;
        }
    }
    let t = s.text;
    match t {
        "" | "~" | "null" | "Null" | "NULL" => Kind::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Kind::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Kind::Bool(false)
        }
        _ if !may_be_number(t) => Kind::Str,
        _ if is_int11(t) => Kind::Int,
        _ if is_float11(t) => Kind::Float,
        _ => Kind::Str,
    }
}

/// The type a YAML 1.2 core-schema reader gives the scalar.
pub fn yaml12(s: ScalarRef<'_>) -> Kind {
    if s.style != Style::Plain {
        return Kind::Str;
    }
    let t = s.text;
    match t {
        "" | "~" | "null" | "Null" | "NULL" => Kind::Null,
        "true" | "True" | "TRUE" => Kind::Bool(true),
        "false" | "False" | "FALSE" => Kind::Bool(false),
        _ if !may_be_number(t) => Kind::Str,
        _ if is_int12(t) => Kind::Int,
        _ if is_float12(t) => Kind::Float,
        _ => Kind::Str,
    }
}

fn strip_sign(t: &str) -> &str {
    t.strip_prefix(['-', '+']).unwrap_or(t)
}

fn all_digits(t: &str, radix: u32) -> bool {
    !t.is_empty() && t.chars().all(|c| c == '_' || c.is_digit(radix)) && !t.starts_with('_')
}

fn is_int11(t: &str) -> bool {
    let u = strip_sign(t);
    if let Some(b) = u.strip_prefix("0b") {
        return all_digits(b, 2);
    }
    if let Some(h) = u.strip_prefix("0x") {
        return all_digits(h, 16);
    }
    all_digits(u, 10)
}

fn is_int12(t: &str) -> bool {
    if let Some(h) = t.strip_prefix("0x") {
        return !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit());
    }
    if let Some(o) = t.strip_prefix("0o") {
        return !o.is_empty() && o.chars().all(|c| c.is_digit(8));
    }
    let u = strip_sign(t);
    !u.is_empty() && u.chars().all(|c| c.is_ascii_digit())
}

fn is_float11(t: &str) -> bool {
    let u = strip_sign(t);
    matches!(u, ".inf" | ".Inf" | ".INF")
        || matches!(t, ".nan" | ".NaN" | ".NAN")
        || decimal(u, true)
}

fn is_float12(t: &str) -> bool {
    let u = strip_sign(t);
    matches!(u, ".inf" | ".Inf" | ".INF")
        || matches!(t, ".nan" | ".NaN" | ".NAN")
        || decimal(u, false)
}

/// `1.5`, `.5`, `1.`, `1e3`, `1.5e-3`; YAML 1.1 also allows `_` separators.
fn decimal(u: &str, underscores: bool) -> bool {
    let (mantissa, exp) = match u.find(['e', 'E']) {
        Some(i) => (&u[..i], Some(&u[i + 1..])),
        None => (u, None),
    };
    let digit = |c: char| c.is_ascii_digit() || (underscores && c == '_');
    let mut parts = mantissa.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    let int_ok = int.chars().all(digit);
    let frac_ok = frac.is_none_or(|f| f.chars().all(digit));
    let has_digits = int.chars().any(|c| c.is_ascii_digit())
        || frac.is_some_and(|f| f.chars().any(|c| c.is_ascii_digit()));
    if !(int_ok && frac_ok && has_digits) {
        return false;
    }
    match exp {
        None => frac.is_some(),
        Some(e) => {
            let e = strip_sign(e);
            !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
        }
    }
}

/// A value written as a template (`{{ ... }}`): unknown until rendered, so never guessed.
pub fn is_template(text: &str) -> bool {
    text.contains("{{")
}

/// Text that some YAML reader would take for a boolean, whatever its quoting.
pub fn looks_boolean(text: &str) -> bool {
    matches!(
        text.to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    )
}

/// Whether `text`, written plain, reads as a string both to the cluster (YAML 1.1) and to a
/// YAML 1.2 reader.
pub fn plain_is_str(text: &str) -> bool {
    let s = ScalarRef::plain(text);
    yaml11(s) == Kind::Str && yaml12(s) == Kind::Str
}

/// A boolean as the cluster reads it; `None` for anything else (strings such as `"true"`,
/// templates, numbers).
pub fn as_bool(s: ScalarRef<'_>) -> Option<bool> {
    match yaml11(s) {
        Kind::Bool(b) => Some(b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(t: &str) -> ScalarRef<'_> {
        ScalarRef::plain(t)
    }

    #[test]
    fn numbers_start_where_the_shortcut_expects() {
        for t in [
            "1", "-1", "+1", "0x1F", "0b101", "1_000", "_1.5", ".5", "1.", "1e3", "-.inf", ".NaN",
            "3.14", "0o17",
        ] {
            let k11 = yaml11(plain(t));
            let k12 = yaml12(plain(t));
            assert!(
                matches!(k11, Kind::Int | Kind::Float) || matches!(k12, Kind::Int | Kind::Float),
                "{t}"
            );
        }
        for t in ["a1", "v1.10", "e3", "x0", "inf", "nan", "é1", ":1"] {
            assert_eq!(yaml11(plain(t)), Kind::Str, "{t}");
            assert_eq!(yaml12(plain(t)), Kind::Str, "{t}");
        }
    }

    #[test]
    fn is_null_is_yaml11_null() {
        for text in ["", "~", "null", "Null", "NULL", "nul", "none", "0", "false"] {
            for style in [Style::Plain, Style::SingleQuoted, Style::DoubleQuoted] {
                for tag in [
                    None,
                    Some("tag:yaml.org,2002:str"),
                    Some("!"),
                    Some("!!null"),
                ] {
                    let s = ScalarRef { text, style, tag };
                    assert_eq!(
                        is_null(s),
                        yaml11(s) == Kind::Null,
                        "{text:?} {style:?} {tag:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn yaml11_and_12_disagree_where_the_cluster_surprises() {
        assert_eq!(yaml11(plain("yes")), Kind::Bool(true));
        assert_eq!(yaml12(plain("yes")), Kind::Str);
        assert_eq!(yaml11(plain("off")), Kind::Bool(false));
        assert_eq!(yaml11(plain("1.10")), Kind::Float);
        assert_eq!(yaml11(plain("1_000")), Kind::Int);
        assert_eq!(yaml12(plain("1_000")), Kind::Str);
        assert_eq!(yaml11(plain("v1.10")), Kind::Str);
        assert_eq!(yaml11(plain("1.2.3")), Kind::Str);
        assert_eq!(yaml11(plain("HEAD")), Kind::Str);
        assert_eq!(yaml11(plain("~")), Kind::Null);
        let quoted = ScalarRef {
            style: Style::DoubleQuoted,
            ..plain("true")
        };
        assert_eq!(yaml11(quoted), Kind::Str);
    }
}
