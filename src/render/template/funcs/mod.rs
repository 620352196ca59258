//! Functions: Go builtins, the Sprig functions ApplicationSets use, and Argo CD's own.
//!
//! [`call_func`] hands a name down the families in turn (builtins, strings, flow, collections,
//! encoding, math), each passing on what it does not define; the argument helpers they share
//! are here.

mod argo;
mod builtins;
mod collections;
mod encoding;
mod flow;
mod helm;
mod math;
mod paths;
mod strings;

pub(super) use builtins::call_func;
pub(super) use helm::{call_helm, is_helm_func, known_in, HELM_UNSUPPORTED};
pub(super) use math::cast_int;

use super::value::{go_type, Val};
use super::{too_large, MAX_VALUE_BYTES};
use serde_json::{Map, Number, Value};

/// Functions evaluated here; parsing accepts these and [`UNSUPPORTED`].
pub(super) const IMPLEMENTED: &[&str] = &[
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
pub(super) const UNSUPPORTED: &[&str] = &[
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

pub(super) fn is_known_function(name: &str) -> bool {
    IMPLEMENTED.contains(&name) || UNSUPPORTED.contains(&name)
}

pub(super) fn nth<'v, 'a>(args: &'v [Val<'a>], i: usize) -> Result<&'v Val<'a>, String> {
    args.get(i)
        .ok_or_else(|| format!("missing argument {}", i + 1))
}

pub(super) fn arity(args: &[Val], want: usize) -> Result<(), String> {
    if args.len() == want {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args: want {want} got {}",
            args.len()
        ))
    }
}

pub(super) fn min_arity(args: &[Val], want: usize) -> Result<(), String> {
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

pub(super) fn str_arg<'v>(args: &'v [Val], i: usize) -> Result<&'v str, String> {
    match nth(args, i)?.value() {
        Some(Value::String(s)) => Ok(s),
        other => Err(wrong_type("string", other)),
    }
}

/// Integers, including integral floats (Go would want an exact `int`; this is more lenient).
pub(super) fn number_to_int(n: &Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    })
}

pub(super) fn int_arg(args: &[Val], i: usize) -> Result<i64, String> {
    match nth(args, i)?.value() {
        Some(Value::Number(n)) => {
            number_to_int(n).ok_or_else(|| wrong_type("int", Some(&Value::Number(n.clone()))))
        }
        other => Err(wrong_type("int", other)),
    }
}

pub(super) fn bool_arg(args: &[Val], i: usize) -> Result<bool, String> {
    match nth(args, i)?.value() {
        Some(Value::Bool(b)) => Ok(*b),
        other => Err(wrong_type("bool", other)),
    }
}

/// A `map[string]interface{}` parameter; nil is allowed, as in Go.
pub(super) fn map_arg<'v>(
    args: &'v [Val],
    i: usize,
) -> Result<Option<&'v Map<String, Value>>, String> {
    match nth(args, i)?.nonnull() {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        other => Err(wrong_type("map[string]interface {}", other)),
    }
}

pub(super) fn str_fn<'a>(args: &[Val], f: impl FnOnce(&str) -> String) -> Result<Val<'a>, String> {
    arity(args, 1)?;
    Ok(Val::str(f(str_arg(args, 0)?)))
}

pub(super) fn str2_fn<'a>(
    args: &[Val],
    f: impl FnOnce(&str, &str) -> String,
) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    Ok(Val::str(f(str_arg(args, 0)?, str_arg(args, 1)?)))
}

pub(super) fn str2_bool<'a>(
    args: &[Val],
    f: impl FnOnce(&str, &str) -> bool,
) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    Ok(Val::bool(f(str_arg(args, 0)?, str_arg(args, 1)?)))
}

pub(super) fn check_size(bytes: usize) -> Result<(), String> {
    if bytes > MAX_VALUE_BYTES {
        Err(too_large())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{call_func, IMPLEMENTED};
    use crate::render::budget::Budget as Work;
    use crate::render::template::testing::check;
    use crate::render::template::value::Budget;

    #[test]
    fn unknown_and_unsupported_functions() {
        check(&[
            ("{{ nope .name }}", Err("function \"nope\" not defined")),
            // Never called: Argo CD parses it fine, so do we.
            (
                "{{ if false }}{{ regexMatch \"a\" \"b\" }}{{ end }}ok",
                Ok("ok"),
            ),
            (
                "{{ regexMatch \"a\" .name }}",
                Err("function \"regexMatch\" is not supported offline"),
            ),
            ("{{ env \"HOME\" }}", Err("not defined")),
            ("{{ define \"x\" }}{{ end }}", Err("not supported offline")),
        ]);
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
}
