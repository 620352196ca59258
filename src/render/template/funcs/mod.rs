//! Functions: Go builtins, the Sprig functions ApplicationSets use, and Argo CD's own.
//!
//! [`call_func`] hands a name down the families in turn (builtins, strings, flow, collections,
//! encoding, math), each passing on what it does not define; the argument helpers they share
//! are here.

mod argo;
mod builtins;
mod collections;
mod dicts;
mod encoding;
mod flow;
mod helm;
mod math;
mod misc;
mod numeric;
mod paths;
mod regex;
mod semver;
mod strings;
mod text;
mod time;
mod url;

pub(super) use builtins::call_func;
pub(super) use helm::{call_helm, is_helm_func, known_in, random_stand_in, HELM_UNSUPPORTED};
pub(super) use math::cast_int;
pub(crate) use regex::go_regex;

use super::value::{go_type, Val};
use super::{too_large, MAX_VALUE_BYTES};
use serde_json::{Map, Number, Value};

/// Functions evaluated here; parsing accepts these and [`UNSUPPORTED`].
pub(super) static IMPLEMENTED: Names = Names::new(&[
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
    // Sprig: regular expressions and versions.
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
    "semver",
    "semverCompare",
    // Sprig: more lists and dicts.
    "dig",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
    "deepCopy",
    "mustDeepCopy",
    "pick",
    "omit",
    "pluck",
    "set",
    "unset",
    "values",
    "without",
    "mustWithout",
    "prepend",
    "mustPrepend",
    "slice",
    "mustSlice",
    "chunk",
    "mustChunk",
    "all",
    "any",
    "deepEqual",
    "mustFromJson",
    // Sprig: float math and sequences.
    "until",
    "untilStep",
    "seq",
    "toDecimal",
    "floor",
    "ceil",
    "round",
    "addf",
    "add1f",
    "subf",
    "mulf",
    "divf",
    "maxf",
    "minf",
    // Sprig: more strings; the random ones are deterministic (see funcs/text.rs).
    "splitn",
    "abbrev",
    "abbrevboth",
    "initials",
    "untitle",
    "swapcase",
    "snakecase",
    "camelcase",
    "kebabcase",
    "wrap",
    "wrapWith",
    "plural",
    "shuffle",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randInt",
    "randBytes",
    "uuidv4",
    // Sprig: reflection, hashes, escapes, OS paths.
    "typeOf",
    "typeIs",
    "typeIsLike",
    "kindOf",
    "kindIs",
    "sha1sum",
    "sha512sum",
    "adler32sum",
    "b32enc",
    "b32dec",
    "html",
    "js",
    "urlquery",
    "osBase",
    "osClean",
    "osDir",
    "osExt",
    "osIsAbs",
    "urlParse",
    "urlJoin",
    // Sprig: dates, at a fixed "now" (see funcs/time.rs).
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
    // Argo CD.
    "normalize",
    "slugify",
    "toYaml",
]);

/// Functions that are not evaluated offline (time, keys and certificates, bcrypt, network
/// lookups, ...): they parse, so untaken branches still work, and fail with a clear message
/// when called.
pub(super) static UNSUPPORTED: Names = Names::new(&[
    "call",
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
    "fromYaml",
    "fromYamlArray",
    "tpl",
]);

/// Sprig's families beyond the ones Argo CD documents; the last stop of [`call_func`].
fn call_sprig<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut super::value::Budget,
) -> Result<Val<'a>, String> {
    if let Some(v) = regex::call_regex(name, args, budget)? {
        return Ok(v);
    }
    if let Some(v) = semver::call_semver(name, args)? {
        return Ok(v);
    }
    if let Some(v) = dicts::call_dicts(name, args, budget)? {
        return Ok(v);
    }
    if let Some(v) = numeric::call_numeric(name, args, budget)? {
        return Ok(v);
    }
    if let Some(v) = text::call_text(name, args)? {
        return Ok(v);
    }
    if let Some(v) = time::call_time(name, args)? {
        return Ok(v);
    }
    if let Some(v) = url::call_url(name, args)? {
        return Ok(v);
    }
    misc::call_misc(name, args)?
        .ok_or_else(|| format!("function {name:?} is not supported offline"))
}

/// A list of function names, looked up by hash: templates look a name up at every call, and
/// a scan of two hundred names showed in profiles.
pub(super) struct Names {
    pub(super) list: &'static [&'static str],
    set: std::sync::OnceLock<std::collections::HashSet<&'static str>>,
}

impl Names {
    const fn new(list: &'static [&'static str]) -> Self {
        Names {
            list,
            set: std::sync::OnceLock::new(),
        }
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.set
            .get_or_init(|| self.list.iter().copied().collect())
            .contains(name)
    }
}

pub(super) fn is_known_function(name: &str) -> bool {
    IMPLEMENTED.contains(name) || UNSUPPORTED.contains(name)
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
            ("{{ if false }}{{ genCA \"a\" 1 }}{{ end }}ok", Ok("ok")),
            (
                "{{ genCA \"a\" 365 }}",
                Err("function \"genCA\" is not supported offline"),
            ),
            ("{{ env \"HOME\" }}", Err("not defined")),
            ("{{ define \"x\" }}{{ end }}", Err("not supported offline")),
        ]);
        for name in IMPLEMENTED
            .list
            .iter()
            .filter(|n| !matches!(**n, "and" | "or"))
        {
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
