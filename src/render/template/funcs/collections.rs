//! Sprig's list and dict functions.

use super::encoding::call_encoding;
use super::strings::string_list;
use super::{arity, map_arg, nth, str_arg};
use crate::render::template::format::strval;
use crate::render::template::value::{
    child, go_type, is_true, own, own_all, weigh, Budget, Key, Val,
};
use serde_json::{Map, Value};

pub(super) fn call_collections<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
    match name {
        "list" | "tuple" => Ok(Val::new(Value::Array(own_all(budget, args)?))),
        "dict" => dict(budget, args),
        "get" => get(budget, args),
        "hasKey" => {
            arity(args, 2)?;
            let key = str_arg(args, 1)?;
            Ok(Val::bool(
                map_arg(args, 0)?.is_some_and(|m| m.contains_key(key)),
            ))
        }
        "keys" => keys(args),
        "first" | "mustFirst" | "last" | "mustLast" => first_or_last(budget, args, name),
        "rest" | "mustRest" | "initial" | "mustInitial" | "reverse" | "mustReverse" | "compact"
        | "mustCompact" | "uniq" | "mustUniq" => reshape(budget, args, name),
        "has" | "mustHas" => has(budget, args),
        "append" | "mustAppend" | "push" | "mustPush" => {
            arity(args, 2)?;
            let mut total = 0;
            let mut items = list_items(budget, nth(args, 0)?, name, &mut total)?;
            items.push(own(budget, nth(args, 1)?, &mut total)?);
            Ok(Val::new(Value::Array(items)))
        }
        "concat" => {
            let mut total = 0;
            let mut all = Vec::new();
            for arg in args {
                all.extend(list_items(budget, arg, name, &mut total)?);
            }
            Ok(Val::new(Value::Array(all)))
        }
        _ => call_encoding(name, args, budget),
    }
}

fn get<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    let key = str_arg(args, 1)?;
    match map_arg(args, 0)? {
        Some(map) if map.contains_key(key) => {
            Ok(child(budget, nth(args, 0)?, &Key::Field(key))?.unwrap_or(Val::Missing))
        }
        // Sprig returns "" for a missing key.
        _ => Ok(Val::str("")),
    }
}

fn keys<'a>(args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let mut keys = Vec::new();
    for i in 0..args.len() {
        keys.extend(
            map_arg(args, i)?
                .into_iter()
                .flat_map(|m| m.keys().cloned()),
        );
    }
    // Go returns map keys in random order; sorted is the only reproducible choice.
    keys.sort();
    Ok(string_list(keys))
}

/// List functions that return a reshaped copy of their one list argument.
fn reshape<'a>(budget: &mut Budget, args: &[Val<'a>], name: &str) -> Result<Val<'a>, String> {
    arity(args, 1)?;
    let mut items = list_items(budget, nth(args, 0)?, name, &mut 0)?;
    match name
        .strip_prefix("must")
        .unwrap_or(name)
        .to_ascii_lowercase()
        .as_str()
    {
        "rest" => drop_first(&mut items),
        "initial" => {
            items.pop();
        }
        "reverse" => items.reverse(),
        "compact" => items.retain(is_true),
        _ => items = uniq(budget, items)?,
    }
    Ok(Val::new(Value::Array(items)))
}

fn uniq(budget: &mut Budget, items: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut unique: Vec<Value> = Vec::new();
    for item in items {
        // Each item is compared with every kept one.
        budget.charge_bytes(unique.len().saturating_mul(4))?;
        if !unique.contains(&item) {
            unique.push(item);
        }
    }
    Ok(unique)
}

fn dict<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let mut map = Map::new();
    let mut total = 0;
    for pair in args.chunks(2) {
        let key = strval(pair.first().and_then(Val::nonnull))?;
        // An odd trailing key maps to "", as in Sprig.
        let value = match pair.get(1) {
            Some(v) => own(budget, v, &mut total)?,
            None => Value::String(String::new()),
        };
        map.insert(key, value);
    }
    Ok(Val::new(Value::Object(map)))
}

/// Copies the items of a list argument, counting them against `total`.
fn list_items(
    budget: &mut Budget,
    list: &Val,
    name: &str,
    total: &mut usize,
) -> Result<Vec<Value>, String> {
    match list.nonnull() {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| own(budget, &Val::Ref(item), total))
            .collect(),
        other => Err(format!(
            "Cannot find {name} on type {}",
            other.map_or("<nil>", go_type)
        )),
    }
}

fn drop_first(items: &mut Vec<Value>) {
    if !items.is_empty() {
        items.remove(0);
    }
}

fn first_or_last<'a>(budget: &mut Budget, args: &[Val<'a>], name: &str) -> Result<Val<'a>, String> {
    arity(args, 1)?;
    let list = nth(args, 0)?;
    match list.nonnull() {
        Some(Value::Array(items)) => {
            let last = name.ends_with("ast");
            let index = if last {
                items.len().checked_sub(1)
            } else {
                Some(0)
            };
            match index.filter(|i| *i < items.len()) {
                Some(i) => Ok(child(budget, list, &Key::Index(i))?.unwrap_or(Val::Missing)),
                None => Ok(Val::new(Value::Null)),
            }
        }
        other => Err(format!(
            "Cannot find {name} on type {}",
            other.map_or("<nil>", go_type)
        )),
    }
}

fn has<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    // `weigh` bounds the depth that the comparisons below recurse into.
    let needle = nth(args, 0)?.nonnull();
    budget.charge_bytes(needle.map_or(Ok(0), weigh)?)?;
    match nth(args, 1)?.nonnull() {
        None => Ok(Val::bool(false)),
        Some(Value::Array(items)) => {
            for item in items {
                budget.charge_bytes(weigh(item)?)?;
                if needle.map_or(item.is_null(), |n| item == n) {
                    return Ok(Val::bool(true));
                }
            }
            Ok(Val::bool(false))
        }
        Some(other) => Err(format!("Cannot find has on type {}", go_type(other))),
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn collections() {
        check(&[
            (
                "{{ $d := dict \"a\" 1 \"b\" (list 2 3) }}{{ $d.b }} {{ get $d \"a\" }} {{ get $d \"z\" }}|",
                Ok("[2 3] 1 |"),
            ),
            (
                "{{ hasKey .labels \"team\" }} {{ keys .labels | join \",\" }} {{ len .labels }}",
                Ok("true team,tier 2"),
            ),
            (
                "{{ first .path.segments }} {{ last .path.segments }} {{ first (list) }}",
                Ok("apps foo <no value>"),
            ),
            (
                "{{ has \"foo\" .path.segments }} {{ append .path.segments \"x\" }} {{ rest (list 1 2 3) }}",
                Ok("true [apps foo x] [2 3]"),
            ),
            (
                "{{ uniq (list 1 1 2) }} {{ compact (list \"\" \"a\") }} {{ reverse (list 1 2) }} {{ sortAlpha (list \"b\" \"a\") }}",
                Ok("[1 2] [a] [2 1] [a b]"),
            ),
            ("{{ first .name }}", Err("Cannot find first on type string")),
        ]);
    }
}
