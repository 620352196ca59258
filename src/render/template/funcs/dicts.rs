//! Sprig's remaining list and dict functions (`dict.go`, `list.go`, `defaults.go` of Sprig
//! v3.3.0): `dig`, the merges, `pick`/`omit`/`pluck`, `set`/`unset`, `without`, `slice`,
//! `chunk`, ...
//!
//! Values here are immutable: `set`, `unset` and the merges return the changed dict, as Go
//! does, but the dict passed in is not changed in place as it is in Go.

use super::math::cast_int;
use super::{arity, int_arg, map_arg, min_arity, nth, str_arg};
use crate::render::template::format::sorted_entries;
use crate::render::template::value::{go_type, is_true, own, own_all, weigh, Budget, Val};
use crate::render::template::{too_deep, MAX_DEPTH};
use serde_json::{Map, Value};

pub(super) fn call_dicts<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Option<Val<'a>>, String> {
    let val = match name {
        "dig" => return dig(args).map(Some),
        "merge" | "mustMerge" | "mergeOverwrite" | "mustMergeOverwrite" => {
            min_arity(args, 1)?;
            let overwrite = name.ends_with("Overwrite");
            let mut dst = owned_map(budget, args, 0)?;
            for i in 1..args.len() {
                if let Some(src) = map_arg(args, i)? {
                    budget.charge_bytes(nth(args, i)?.value().map_or(Ok(0), weigh)?)?;
                    merge_into(&mut dst, src, overwrite, 1)?;
                }
            }
            Val::new(Value::Object(dst))
        }
        "deepCopy" | "mustDeepCopy" => {
            arity(args, 1)?;
            let v = nth(args, 0)?;
            if v.nonnull().is_none() {
                return Ok(Some(Val::new(Value::Null)));
            }
            Val::new(own(budget, v, &mut 0)?)
        }
        "pick" | "omit" => {
            min_arity(args, 1)?;
            let mut names = Vec::new();
            for i in 1..args.len() {
                names.push(str_arg(args, i)?);
            }
            let keep = name == "pick";
            let mut out = Map::new();
            let mut total = 0;
            for (k, v) in map_arg(args, 0)?.into_iter().flatten() {
                if names.contains(&k.as_str()) == keep {
                    out.insert(k.clone(), own(budget, &Val::Ref(v), &mut total)?);
                }
            }
            Val::new(Value::Object(out))
        }
        "pluck" => {
            min_arity(args, 1)?;
            let key = str_arg(args, 0)?;
            let mut out = Vec::new();
            let mut total = 0;
            for i in 1..args.len() {
                if let Some(v) = map_arg(args, i)?.and_then(|m| m.get(key)) {
                    out.push(own(budget, &Val::Ref(v), &mut total)?);
                }
            }
            Val::new(Value::Array(out))
        }
        "set" => {
            arity(args, 3)?;
            let key = str_arg(args, 1)?.to_string();
            let mut map = owned_map(budget, args, 0)?;
            map.insert(key, own(budget, nth(args, 2)?, &mut 0)?);
            Val::new(Value::Object(map))
        }
        "unset" => {
            arity(args, 2)?;
            let key = str_arg(args, 1)?;
            let mut map = owned_map(budget, args, 0)?;
            map.remove(key);
            Val::new(Value::Object(map))
        }
        "values" => {
            arity(args, 1)?;
            // Go's map order is random; key order is the reproducible one.
            let mut total = 0;
            let mut out = Vec::new();
            if let Some(map) = map_arg(args, 0)? {
                for (_, v) in sorted_entries(map) {
                    out.push(own(budget, &Val::Ref(v), &mut total)?);
                }
            }
            Val::new(Value::Array(out))
        }
        "without" | "mustWithout" => {
            min_arity(args, 1)?;
            let items = list_of(nth(args, 0)?, "Cannot find without on type")?;
            let omit = own_all(budget, args.get(1..).unwrap_or(&[]))?;
            let mut total = 0;
            let mut out = Vec::new();
            for item in items {
                budget.charge_bytes(omit.len().saturating_mul(4))?;
                if !omit.contains(item) {
                    out.push(own(budget, &Val::Ref(item), &mut total)?);
                }
            }
            Val::new(Value::Array(out))
        }
        "prepend" | "mustPrepend" => {
            arity(args, 2)?;
            let items = list_of(nth(args, 0)?, "Cannot prepend on type")?;
            let mut total = 0;
            let mut out = vec![own(budget, nth(args, 1)?, &mut total)?];
            for item in items {
                out.push(own(budget, &Val::Ref(item), &mut total)?);
            }
            Val::new(Value::Array(out))
        }
        "slice" | "mustSlice" => {
            min_arity(args, 1)?;
            let items = list_of(nth(args, 0)?, "list should be type of slice or array but")?;
            if items.is_empty() {
                return Ok(Some(Val::new(Value::Null)));
            }
            let start = args.get(1).map_or(0, cast_int);
            let end = args
                .get(2)
                .map_or(i64::try_from(items.len()).unwrap_or(i64::MAX), cast_int);
            let range = usize::try_from(start)
                .ok()
                .zip(usize::try_from(end).ok())
                .filter(|(s, e)| s <= e && *e <= items.len())
                .and_then(|(s, e)| items.get(s..e))
                .ok_or_else(|| "reflect: slice index out of range".to_string())?;
            let mut total = 0;
            let mut out = Vec::new();
            for item in range {
                out.push(own(budget, &Val::Ref(item), &mut total)?);
            }
            Val::new(Value::Array(out))
        }
        "chunk" | "mustChunk" => {
            arity(args, 2)?;
            let size = int_arg(args, 0)?;
            let items = list_of(nth(args, 1)?, "Cannot chunk type")?;
            let size = usize::try_from(size)
                .ok()
                .filter(|s| *s > 0 || items.is_empty())
                .ok_or_else(|| "runtime error: makeslice: len out of range".to_string())?;
            let mut total = 0;
            let mut out = Vec::new();
            for chunk in items.chunks(size.max(1)) {
                let mut part = Vec::new();
                for item in chunk {
                    part.push(own(budget, &Val::Ref(item), &mut total)?);
                }
                out.push(Value::Array(part));
            }
            Val::new(Value::Array(out))
        }
        "all" => Val::bool(args.iter().all(|v| v.value().is_some_and(is_true))),
        "any" => Val::bool(args.iter().any(|v| v.value().is_some_and(is_true))),
        "deepEqual" => {
            arity(args, 2)?;
            let (a, b) = (nth(args, 0)?.nonnull(), nth(args, 1)?.nonnull());
            // Comparing recurses: `weigh` refuses what is too deep first.
            budget.charge_bytes(a.map_or(Ok(0), weigh)?)?;
            budget.charge_bytes(b.map_or(Ok(0), weigh)?)?;
            Val::bool(a == b)
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

/// Go's `reflect.Kind` name, as Sprig's list errors print it.
pub(super) fn kind_name(v: Option<&Value>) -> &'static str {
    match v {
        None | Some(Value::Null) => "invalid",
        Some(Value::Array(_)) => "slice",
        Some(Value::Object(_)) => "map",
        Some(other) => go_type(other),
    }
}

/// The items of a list argument; anything else is Sprig's error naming its kind. Go cannot
/// take the kind of nil and fails on a nil pointer instead.
fn list_of<'v>(v: &'v Val, error: &str) -> Result<&'v [Value], String> {
    match v.nonnull() {
        Some(Value::Array(items)) => Ok(items),
        None => Err("runtime error: invalid memory address or nil pointer dereference".to_string()),
        other => Err(format!("{error} {}", kind_name(other))),
    }
}

fn owned_map(budget: &mut Budget, args: &[Val], i: usize) -> Result<Map<String, Value>, String> {
    match map_arg(args, i)? {
        Some(map) => {
            budget.charge_bytes(nth(args, i)?.value().map_or(Ok(0), weigh)?)?;
            Ok(map.clone())
        }
        None => Ok(Map::new()),
    }
}

/// Go's "empty value", as mergo tests it before filling a key.
fn is_empty(v: &Value) -> bool {
    !is_true(v)
}

/// `mergo.Merge` / `mergo.MergeWithOverwrite` for `map[string]interface{}` (dario.cat/mergo
/// v1.0.1, `merge.go`): nested maps merge key by key; otherwise the destination keeps a
/// non-empty value, unless overwriting, when the source wins, nil included.
fn merge_into(
    dst: &mut Map<String, Value>,
    src: &Map<String, Value>,
    overwrite: bool,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    for (key, sv) in src {
        if sv.is_null() {
            if overwrite {
                dst.insert(key.clone(), Value::Null);
            }
            continue;
        }
        match (dst.get_mut(key), sv) {
            (Some(Value::Object(dmap)), Value::Object(smap)) if !dmap.is_empty() => {
                merge_into(dmap, smap, overwrite, depth + 1)?;
            }
            (Some(dv), _) if !overwrite && !is_empty(dv) => {}
            _ => {
                dst.insert(key.clone(), sv.clone());
            }
        }
    }
    Ok(())
}

/// `dig "a" "b" default dict`: Go's type assertions fail with these texts.
fn dig<'a>(args: &[Val<'a>]) -> Result<Val<'a>, String> {
    if args.len() < 3 {
        return Err("dig needs at least three arguments".to_string());
    }
    let assertion = |v: Option<&Value>, want: &str| {
        let got = match v {
            None | Some(Value::Null) => "nil",
            Some(other) => go_type(other),
        };
        format!("interface conversion: interface {{}} is {got}, not {want}")
    };
    let (keys, rest) = args.split_at(args.len() - 2);
    let (default, dict) = (nth(rest, 0)?, nth(rest, 1)?);
    let mut names = Vec::with_capacity(keys.len());
    for key in keys {
        match key.value() {
            Some(Value::String(s)) => names.push(s.as_str()),
            other => return Err(assertion(other, "string")),
        }
    }
    let mut current = match dict.value() {
        Some(Value::Object(map)) => map,
        other => return Err(assertion(other, "map[string]interface {}")),
    };
    let Some((last, path)) = names.split_last() else {
        return Ok(default.clone());
    };
    for name in path {
        match current.get(*name) {
            None => return Ok(default.clone()),
            Some(Value::Object(map)) => current = map,
            other => return Err(assertion(other, "map[string]interface {}")),
        }
    }
    match (current.get(*last), dict) {
        (None, _) => Ok(default.clone()),
        // Borrowed when the dict is data; copied out of a computed one.
        (Some(_), Val::Ref(root)) => Ok(follow(root, &names).map_or(Val::Missing, Val::Ref)),
        (Some(found), _) => Ok(Val::new(found.clone())),
    }
}

fn follow<'v>(root: &'v Value, names: &[&str]) -> Option<&'v Value> {
    names.iter().try_fold(root, |v, name| v.get(*name))
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn dict_functions() {
        check(&[
            (
                "{{ dig \"labels\" \"team\" \"none\" . }} {{ dig \"labels\" \"nope\" \"none\" . }} {{ dig \"x\" \"y\" 1 (dict) }}",
                Ok("core none 1"),
            ),
            (
                "{{ dig \"name\" \"x\" \"d\" . }}",
                Err("interface conversion: interface {} is string, not map[string]interface {}"),
            ),
            (
                "{{ dig \"a\" \"d\" .nothing }}",
                Err("interface conversion: interface {} is nil, not map[string]interface {}"),
            ),
            ("{{ dig \"a\" . }}", Err("dig needs at least three arguments")),
            (
                "{{ merge (dict \"a\" 1 \"n\" (dict \"x\" 1)) (dict \"a\" 2 \"b\" 2 \"n\" (dict \"x\" 2 \"y\" 2)) | toJson }}",
                Ok(r#"{"a":1,"b":2,"n":{"x":1,"y":2}}"#),
            ),
            (
                "{{ merge (dict \"a\" \"\" \"b\" false \"c\" 0) (dict \"a\" \"x\" \"b\" true \"c\" 5 \"d\" nil) | toJson }}",
                Ok(r#"{"a":"x","b":true,"c":5}"#),
            ),
            (
                "{{ mergeOverwrite (dict \"a\" 1 \"k\" true \"n\" (dict \"x\" 1 \"z\" 1)) (dict \"a\" 2 \"k\" false \"n\" (dict \"x\" 2)) (dict \"b\" nil) | toJson }}",
                Ok(r#"{"a":2,"b":null,"k":false,"n":{"x":2,"z":1}}"#),
            ),
            (
                "{{ merge .nothing .labels | toJson }} {{ merge \"x\" }}",
                Err("wrong type for value; expected map[string]interface {}; got string"),
            ),
            (
                "{{ pick .labels \"team\" \"zz\" | toJson }} {{ omit .labels \"team\" | toJson }} {{ pluck \"team\" .labels (dict) (dict \"team\" \"x\") }}",
                Ok(r#"{"team":"core"} {"tier":"web"} [core x]"#),
            ),
            (
                "{{ set .labels \"team\" \"ops\" | toJson }} {{ unset .labels \"team\" | toJson }} {{ values .labels }}",
                Ok(r#"{"team":"ops","tier":"web"} {"tier":"web"} [core web]"#),
            ),
            (
                "{{ without (list 1 2 3 2) 2 }} {{ prepend (list 1) 0 }} {{ slice (list 1 2 3 4) 1 3 }} {{ slice (list 1 2 3) 1 }} {{ slice (list) }}",
                Ok("[1 3] [0 1] [2 3] [2 3] <no value>"),
            ),
            ("{{ slice (list 1 2) 1 5 }}", Err("reflect: slice index out of range")),
            (
                "{{ slice \"abc\" 1 }}",
                Err("list should be type of slice or array but string"),
            ),
            ("{{ without .labels 1 }}", Err("Cannot find without on type map")),
            (
                "{{ chunk 2 (list 1 2 3 4 5) }} {{ chunk 3 (list) }} {{ chunk 2 (list 1 2) }}",
                Ok("[[1 2] [3 4] [5]] [] [[1 2]]"),
            ),
            ("{{ chunk 0 (list 1) }}", Err("makeslice: len out of range")),
            (
                "{{ all 1 \"a\" true }} {{ all 1 \"\" }} {{ any 0 \"\" .nothing }} {{ any 0 \"x\" }}",
                Ok("true false false true"),
            ),
            (
                "{{ deepEqual (list 1 (dict \"a\" 1)) (list 1 (dict \"a\" 1)) }} {{ deepEqual 1 1.0 }} {{ deepEqual .nope .nothing }}",
                Ok("true false true"),
            ),
            (
                "{{ $c := deepCopy .labels }}{{ $c.team }} {{ deepCopy .nope }}",
                Ok("core <no value>"),
            ),
        ]);
    }
}
