//! Helm's values: read as `sigs.k8s.io/yaml` reads them (YAML 1.1 scalars, then a trip
//! through `encoding/json`, so every number is a float64), merged as `helm template` merges
//! `--values` files and `--set` flags (`pkg/cli/values/options.go`), and coalesced with the
//! charts' defaults (`pkg/chartutil/coalesce.go`), all as of helm v3.17.2.

use crate::yaml::{Node, ParseLimits};
use serde_json::{Number, Value};

pub type Map = serde_json::Map<String, Value>;

/// Deepest value tree accepted; YAML parsing is bounded already, `--set` keys are not.
const MAX_DEPTH: usize = 200;

/// The first document of `text` as Helm's values reader types it.
pub fn read_yaml(text: &str) -> Result<Value, String> {
    first_document(crate::yaml::parse(0, text, ParseLimits::default()))
}

/// The first document of a parse as Helm reads it, or the YAML error that stops Helm.
pub fn first_document(parsed: crate::yaml::ParsedFile) -> Result<Value, String> {
    // A duplicate key is no error for go-yaml v2: the last value stands, as in `to_value`.
    if let Some(p) = parsed
        .problems
        .iter()
        .find(|p| p.kind == crate::yaml::ProblemKind::InvalidYaml)
    {
        return Err(p.message.clone());
    }
    Ok(parsed
        .documents
        .first()
        .map_or(Value::Null, |d| to_value(&d.root)))
}

/// One node as `sigs.k8s.io/yaml` gives it to Helm; the parser bounds the depth already.
pub fn to_value(node: &Node) -> Value {
    crate::yaml::to_go_json(node, usize::MAX).unwrap_or(Value::Null)
}

/// A number as Go's `%v` prints the float64 Helm holds (`3`, `1.5`, `1e+06`).
pub fn go_number(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => crate::render::template::go_float(f),
        _ => n.to_string(),
    }
}

/// `mergeMaps` of `pkg/cli/values/options.go`: `b` over `a`, tables merged key by key.
pub fn merge_maps(a: &mut Map, b: Map) {
    for (k, v) in b {
        match (a.get_mut(&k), v) {
            (Some(Value::Object(old)), Value::Object(new)) => merge_maps(old, new),
            (_, v) => {
                a.insert(k, v);
            }
        }
    }
}

/// `coalesceTablesFullKey`: fills `dst` with what `src` has and it lacks; with `merge`
/// false a null in `dst` deletes the key.
pub fn coalesce_tables(dst: &mut Map, src: &Map, merge: bool) {
    for (key, val) in src {
        match dst.get_mut(key) {
            Some(Value::Null) if !merge => {
                dst.remove(key);
            }
            None => {
                dst.insert(key.clone(), val.clone());
            }
            Some(Value::Object(d)) => {
                if let Value::Object(s) = val {
                    coalesce_tables(d, s, merge);
                }
            }
            Some(_) => {}
        }
    }
}

/// `--set` and `--set-string` (`pkg/strvals`): `a.b=1,c[0]=x,d={e,f}`. Values are typed
/// unless `string` (`1` is an int64, `true` a bool, `null` deletes), `\` escapes.
pub fn parse_set(line: &str, out: &mut Map, string: bool) -> Result<(), String> {
    let mut rest = line;
    while !rest.is_empty() {
        let (key, after) = split_unescaped(rest, &['='][..]);
        let Some(after) = after else {
            return Err(format!("key \"{key}\" has no value"));
        };
        let (value, next) = if after.starts_with('{') && !string {
            match after.find('}') {
                Some(end) => {
                    let items: Vec<Value> = after[1..end]
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| typed(s, string))
                        .collect();
                    let tail = &after[end + 1..];
                    (Value::Array(items), tail.strip_prefix(',').unwrap_or(tail))
                }
                None => return Err(format!("key \"{key}\" has an unclosed list")),
            }
        } else {
            let (v, n) = split_unescaped(after, &[','][..]);
            (typed(&unescape(&v), string), n.unwrap_or(""))
        };
        set_path(out, &key, value, 0)?;
        rest = next;
    }
    Ok(())
}

fn typed(s: &str, string: bool) -> Value {
    if string {
        return Value::String(s.to_string());
    }
    match s {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        // strvals keeps `0`-led digits as strings and parses the rest as int64.
        _ if s.len() > 1 && s.starts_with('0') => Value::String(s.to_string()),
        _ => s
            .parse::<i64>()
            .map_or_else(|_| Value::String(s.to_string()), Value::from),
    }
}

fn split_unescaped<'s>(s: &'s str, stops: &[char]) -> (String, Option<&'s str>) {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            if let Some((_, n)) = chars.next() {
                out.push('\\');
                out.push(n);
            }
            continue;
        }
        if stops.contains(&c) {
            return (out, Some(&s[i + c.len_utf8()..]));
        }
        out.push(c);
    }
    (out, None)
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Sets a dotted key (`a.b[1].c`, `\.` escaping a dot) in `out`.
fn set_path(out: &mut Map, key: &str, value: Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("key nests too deep".to_string());
    }
    let (head, rest) = split_key(key);
    let (name, index) = match head.find('[') {
        Some(open) if head.ends_with(']') => {
            let i: usize = head[open + 1..head.len() - 1]
                .parse()
                .map_err(|_| format!("invalid index in \"{head}\""))?;
            if i > 65_536 {
                return Err(format!("index of \"{head}\" too large"));
            }
            (unescape(&head[..open]), Some(i))
        }
        _ => (unescape(&head), None),
    };
    let slot = match index {
        None => {
            if rest.is_none() {
                if value.is_null() {
                    out.remove(&name);
                } else {
                    out.insert(name, value);
                }
                return Ok(());
            }
            let entry = out.entry(name).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            entry
        }
        Some(i) => {
            let entry = out.entry(name).or_insert_with(|| Value::Array(Vec::new()));
            if !entry.is_array() {
                *entry = Value::Array(Vec::new());
            }
            let Value::Array(list) = entry else {
                return Ok(());
            };
            while list.len() <= i {
                list.push(Value::Null);
            }
            if rest.is_none() {
                list[i] = value;
                return Ok(());
            }
            if !list[i].is_object() {
                list[i] = Value::Object(Map::new());
            }
            &mut list[i]
        }
    };
    match (slot, rest) {
        (Value::Object(m), Some(rest)) => set_path(m, rest, value, depth + 1),
        _ => Ok(()),
    }
}

fn split_key(key: &str) -> (String, Option<&str>) {
    let mut escaped = false;
    for (i, c) in key.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '.' if !escaped => return (key[..i].to_string(), Some(&key[i + 1..])),
            _ => escaped = false,
        }
    }
    (key.to_string(), None)
}

/// Values nested no deeper than the engine accepts; anything deeper is cut to null.
pub fn bounded(v: &mut Value, depth: usize) {
    match v {
        Value::Object(m) if depth >= MAX_DEPTH => m.clear(),
        Value::Array(l) if depth >= MAX_DEPTH => l.clear(),
        Value::Object(m) => m.values_mut().for_each(|x| bounded(x, depth + 1)),
        Value::Array(l) => l.iter_mut().for_each(|x| bounded(x, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::template::go_float;
    use serde_json::json;

    #[test]
    fn values_are_typed_as_helm_reads_them() {
        let v = read_yaml("a: 3\nb: yes\nc: 0755\nd: 1e6\ne: ~\nf: '3'\ng: 2024-01-02\n").unwrap();
        assert_eq!(v["a"].as_f64(), Some(3.0));
        assert!(v["a"].is_f64());
        assert_eq!(v["b"], json!(true));
        assert_eq!(v["c"].as_f64(), Some(493.0));
        assert_eq!(v["e"], Value::Null);
        assert_eq!(v["f"], json!("3"));
        assert_eq!(v["g"], json!("2024-01-02"));
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(0.00001), "1e-05");
    }

    #[test]
    fn coalescing_follows_helm() {
        let mut user = json!({"a": {"x": 1}, "gone": null})
            .as_object()
            .unwrap()
            .clone();
        let chart = json!({"a": {"x": 2, "y": 3}, "gone": 5, "new": 6});
        coalesce_tables(&mut user, chart.as_object().unwrap(), false);
        assert_eq!(
            Value::Object(user),
            json!({"a": {"x": 1, "y": 3}, "new": 6})
        );
    }

    #[test]
    fn set_flags_parse_as_strvals() {
        let mut m = Map::new();
        parse_set("a.b=1,c[1]=x,d={e,f},s=true,z=007", &mut m, false).unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"a": {"b": 1}, "c": [null, "x"], "d": ["e", "f"], "s": true, "z": "007"})
        );
        let mut m = Map::new();
        parse_set("a\\.b=1\\,2", &mut m, true).unwrap();
        assert_eq!(Value::Object(m), json!({"a.b": "1,2"}));
    }
}
