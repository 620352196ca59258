//! Helm's own functions (helm v3.17 `pkg/engine/funcs.go` and `engine.go`), and which names
//! each dialect defines. `include` and `tpl` need the template set, so the executor runs them.

use super::{arity, is_known_function, nth, str_arg};
use crate::render::template::set::Dialect;
use crate::render::template::value::{Budget, Val};
use crate::render::template::MAX_DEPTH;
use serde_json::{Map, Value};

/// What Helm adds to Sprig (funcs.go `funcMap` and `initFunMap`), and Sprig's own names it
/// replaces (`fail`, `getHostByName`).
const HELM_FUNCS: &[&str] = &[
    "include",
    "tpl",
    "required",
    "lookup",
    "toToml",
    "fromToml",
    "toYaml",
    "toYamlPretty",
    "fromYaml",
    "fromYamlArray",
    "toJson",
    "fromJson",
    "fromJsonArray",
    "fail",
    "getHostByName",
];

/// Helm functions that parse but are not evaluated offline.
pub(in crate::render::template) const HELM_UNSUPPORTED: &[&str] =
    &["toToml", "fromToml", "toYamlPretty"];

/// Sprig's functions whose output is random in Helm (keys, certificates, salted hashes): each
/// `helm template` prints different text, so no text is more right than another, and a fixed
/// stand-in keeps the chart rendered and checked rather than refusing it.
pub(in crate::render::template) fn random_stand_in<'a>(name: &str) -> Option<Val<'a>> {
    const KEY: &str =
        "-----BEGIN RSA PRIVATE KEY-----\ngenerated-by-helm\n-----END RSA PRIVATE KEY-----\n";
    const CERT: &str =
        "-----BEGIN CERTIFICATE-----\ngenerated-by-helm\n-----END CERTIFICATE-----\n";
    Some(match name {
        "genCA"
        | "genCAWithKey"
        | "genSelfSignedCert"
        | "genSelfSignedCertWithKey"
        | "genSignedCert"
        | "genSignedCertWithKey" => {
            let mut pair = Map::new();
            pair.insert("Cert".into(), Value::String(CERT.into()));
            pair.insert("Key".into(), Value::String(KEY.into()));
            Val::new(Value::Object(pair))
        }
        "genPrivateKey" => Val::str(KEY),
        "bcrypt" | "htpasswd" | "encryptAES" => Val::str("generated-by-helm"),
        _ => return None,
    })
}

/// Argo CD's own functions, which Helm does not have; Helm also drops Sprig's `env` and
/// `expandenv`, as Argo CD does.
const ARGO_ONLY: &[&str] = &["normalize", "slugify"];

/// Whether `name` is a function of `dialect`: parsing rejects every other name, as Go does.
pub(in crate::render::template) fn known_in(dialect: Dialect, name: &str) -> bool {
    match dialect {
        Dialect::ArgoCd => is_known_function(name),
        Dialect::Helm => {
            HELM_FUNCS.contains(&name)
                || (is_known_function(name) && !ARGO_ONLY.contains(&name) && name != "tpl")
        }
    }
}

/// Whether the executor has to handle `name` through [`call_helm`] in `dialect`.
pub(in crate::render::template) fn is_helm_func(dialect: Dialect, name: &str) -> bool {
    dialect == Dialect::Helm && HELM_FUNCS.contains(&name)
}

/// engine.go `warnWrap`: Helm marks the messages of `required` and `fail` so that its error
/// cleanup (`cleanupExecError`) can show them alone.
fn warn_wrap(msg: &str) -> String {
    format!("HELM_ERR_START{msg}HELM_ERR_END")
}

/// A Helm function other than `include` and `tpl`; `None` for names Helm takes from Sprig
/// unchanged (`toYaml`, `toJson`: Sprig's versions here write the same text).
pub(in crate::render::template) fn call_helm<'a>(
    name: &str,
    args: &[Val<'a>],
    _budget: &mut Budget,
) -> Option<Result<Val<'a>, String>> {
    let result = match name {
        "required" => required(args),
        "fail" => arity(args, 1).and_then(|()| Err(warn_wrap(str_arg(args, 0)?))),
        // `helm template` has no cluster: funcs.go's placeholder returns an empty map.
        "lookup" => (0..4)
            .try_for_each(|i| str_arg(args, i).map(drop))
            .and_then(|()| arity(args, 4))
            .map(|()| Val::new(Value::Object(Map::new()))),
        // engine.go: without EnableDNS the function answers "".
        "getHostByName" => arity(args, 1)
            .and_then(|()| str_arg(args, 0))
            .map(|_| Val::str("")),
        "fromJson" => one_str(args).map(|s| Val::new(from_json(s, false))),
        "fromJsonArray" => one_str(args).map(|s| Val::new(from_json(s, true))),
        "fromYaml" => one_str(args).map(|s| Val::new(from_yaml(s, false))),
        "fromYamlArray" => one_str(args).map(|s| Val::new(from_yaml(s, true))),
        _ => return None,
    };
    Some(result)
}

fn one_str<'v>(args: &'v [Val]) -> Result<&'v str, String> {
    arity(args, 1)?;
    str_arg(args, 0)
}

/// engine.go: nil, or an empty string, fails with the message; anything else passes through.
fn required<'a>(args: &[Val<'a>]) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    let warn = str_arg(args, 0)?;
    let val = nth(args, 1)?;
    match val.nonnull() {
        None => Err(warn_wrap(warn)),
        Some(Value::String(s)) if s.is_empty() => Err(warn_wrap(warn)),
        Some(_) => Ok(val.clone()),
    }
}

/// What a failed decode yields: funcs.go puts the message under "Error" in a map, or as the
/// only item of a list.
fn decode_error(msg: String, array: bool) -> Value {
    if array {
        Value::Array(vec![Value::String(msg)])
    } else {
        let mut map = Map::new();
        map.insert("Error".to_string(), Value::String(msg));
        Value::Object(map)
    }
}

/// Go's `json.Unmarshal` into `map[string]interface{}` or `[]interface{}`: every number a
/// float64, `null` an empty result.
fn from_json(text: &str, array: bool) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => into_target(go_numbers(v, 0), array, ""),
        Err(e) => decode_error(json_syntax_message(text, &e), array),
    }
}

/// The decoded value as the Go target type, or the type error's message (after `prefix`).
fn into_target(v: Result<Value, String>, array: bool, prefix: &str) -> Value {
    let v = match v {
        Ok(v) => v,
        Err(msg) => return decode_error(msg, array),
    };
    let kind = match (&v, array) {
        (Value::Null, true) => return Value::Array(Vec::new()),
        (Value::Null, false) => return Value::Object(Map::new()),
        (Value::Array(_), true) | (Value::Object(_), false) => return v,
        (Value::Array(_), false) => "array",
        (Value::Object(_), true) => "object",
        (Value::String(_), _) => "string",
        (Value::Number(_), _) => "number",
        (Value::Bool(_), _) => "bool",
    };
    let target = if array {
        "[]interface {}"
    } else {
        "map[string]interface {}"
    };
    decode_error(
        format!("{prefix}json: cannot unmarshal {kind} into Go value of type {target}"),
        array,
    )
}

/// encoding/json's wording for the common syntax errors; serde_json finds the same place.
fn json_syntax_message(text: &str, e: &serde_json::Error) -> String {
    if e.is_eof() || text.trim().is_empty() {
        return "unexpected end of JSON input".to_string();
    }
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let at = line_start.saturating_add(e.column().saturating_sub(1));
    match text.get(at..).and_then(|rest| rest.chars().next()) {
        Some(c) => format!(
            "invalid character {} looking for beginning of value",
            go_char(c)
        ),
        None => "unexpected end of JSON input".to_string(),
    }
}

/// Go's `quoteChar`: `'x'`, with `\'` and `"\"` for the quotes themselves.
fn go_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c if c.is_control() => format!("{:?}", c),
        c => format!("'{c}'"),
    }
}

/// Numbers as float64, as Go's JSON decoder gives them to an `interface{}`.
fn go_numbers(v: Value, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(crate::render::template::too_deep());
    }
    Ok(match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| go_numbers(item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, item)| go_numbers(item, depth + 1).map(|item| (k, item)))
                .collect::<Result<_, _>>()?,
        ),
        other => other,
    })
}

/// sigs.k8s.io/yaml's `Unmarshal`: the first document read as YAML 1.1 (go-yaml v2), turned
/// into JSON, then decoded as [`from_json`] does. Syntax errors carry this parser's words
/// after sigs.k8s.io/yaml's prefix, not go-yaml's.
fn from_yaml(text: &str, array: bool) -> Value {
    use crate::yaml::{parse, ParseLimits};
    let parsed = parse(0, text, ParseLimits::default());
    if let Some(problem) = parsed.problems.first() {
        let line = 1 + text
            .get(
                ..usize::try_from(problem.span.start)
                    .unwrap_or(usize::MAX)
                    .min(text.len()),
            )
            .map_or(0, |head| head.matches('\n').count());
        let msg = format!(
            "error converting YAML to JSON: yaml: line {line}: {}",
            problem.message
        );
        return decode_error(msg, array);
    }
    let value = match parsed.documents.first() {
        None => Ok(Value::Null),
        Some(doc) => crate::yaml::to_go_json(&doc.root, MAX_DEPTH)
            .ok_or_else(crate::render::template::too_deep),
    };
    into_target(
        value,
        array,
        "error unmarshaling JSON: while decoding JSON: ",
    )
}

#[cfg(test)]
mod tests {
    use super::{from_json, from_yaml};
    use serde_json::json;

    #[test]
    fn decoders_follow_helm() {
        assert_eq!(
            from_json("{\"a\": [1, \"x\"]}", false),
            json!({"a": [1.0, "x"]})
        );
        assert_eq!(from_json("null", false), json!({}));
        assert_eq!(
            from_json("[1]", false),
            json!({"Error": "json: cannot unmarshal array into Go value of type map[string]interface {}"})
        );
        assert_eq!(
            from_json("bad", false),
            json!({"Error": "invalid character 'b' looking for beginning of value"})
        );
        assert_eq!(
            from_json("{", true),
            json!(["unexpected end of JSON input"])
        );
        assert_eq!(from_json("[1, 2]", true), json!([1.0, 2.0]));
        assert_eq!(
            from_yaml("a: 1\nb: yes\nc: [x, 0x10]\nd: ~\n", false),
            json!({"a": 1.0, "b": true, "c": ["x", 16.0], "d": null})
        );
        assert_eq!(from_yaml("", false), json!({}));
        assert_eq!(from_yaml("- a\n- 2\n", true), json!(["a", 2.0]));
        assert_eq!(
            from_yaml("- a\n", false),
            json!({"Error": "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"})
        );
    }
}
