//! Go's builtin functions: `not`, `len`, `index`, comparisons and the `print` family.

use super::strings::call_strings;
use super::{arity, min_arity, nth, number_to_int, str_arg};
use crate::render::template::printf::{go_print, go_sprintf};
use crate::render::template::value::{child, go_type, number_type, truth, Budget, Key, Val};
use serde_json::Value;

pub(in crate::render::template) fn call_func<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
    match name {
        "not" => {
            arity(args, 1)?;
            Ok(Val::bool(!truth(nth(args, 0)?)))
        }
        "len" => {
            arity(args, 1)?;
            go_len(nth(args, 0)?).map(Val::int)
        }
        "index" => go_index(budget, args),
        "eq" => go_eq(args).map(Val::bool),
        "ne" => {
            arity(args, 2)?;
            go_eq(args).map(|equal| Val::bool(!equal))
        }
        "lt" => compare(args, |lt, _| lt),
        "le" => compare(args, |lt, eq| lt || eq),
        "gt" => compare(args, |lt, eq| !(lt || eq)),
        "ge" => compare(args, |lt, _| !lt),
        "print" => go_print(args, false).map(Val::str),
        "println" => go_print(args, true).map(Val::str),
        "printf" => {
            min_arity(args, 1)?;
            go_sprintf(str_arg(args, 0)?, args.get(1..).unwrap_or(&[])).map(Val::str)
        }
        _ => call_strings(name, args, budget),
    }
}

fn go_len(v: &Val) -> Result<i64, String> {
    let len = match v.value() {
        Some(Value::String(s)) => s.len(),
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(map)) => map.len(),
        None | Some(Value::Null) => return Err("len of nil pointer".to_string()),
        Some(other) => return Err(format!("len of type {}", go_type(other))),
    };
    Ok(i64::try_from(len).unwrap_or(i64::MAX))
}

fn go_index<'a>(budget: &mut Budget, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let (first, indices) = args
        .split_first()
        .ok_or_else(|| "wrong number of args: want at least 1 got 0".to_string())?;
    if first.nonnull().is_none() {
        return Err("index of untyped nil".to_string());
    }
    let mut item = first.clone();
    for index in indices {
        item = index_once(budget, &item, index)?;
    }
    Ok(item)
}

fn index_once<'a>(budget: &mut Budget, item: &Val<'a>, index: &Val) -> Result<Val<'a>, String> {
    match item.value() {
        None | Some(Value::Null) => Err("index of nil pointer".to_string()),
        Some(Value::Array(items)) => {
            let i = index_position(index, items.len())?;
            Ok(child(budget, item, &Key::Index(i))?.unwrap_or(Val::Missing))
        }
        Some(Value::String(s)) => {
            let i = index_position(index, s.len())?;
            Ok(Val::int(s.as_bytes().get(i).copied().map_or(0, i64::from)))
        }
        Some(Value::Object(map)) => {
            let key = match index.value() {
                Some(Value::String(key)) => key,
                Some(other) => {
                    return Err(format!(
                        "value has type {}; should be string",
                        go_type(other)
                    ))
                }
                None => return Err("value is nil; should be of type string".to_string()),
            };
            if map.contains_key(key) {
                Ok(child(budget, item, &Key::Field(key))?.unwrap_or(Val::Missing))
            } else {
                // The zero value of the map's element type: nil, printed as `<no value>`.
                Ok(Val::new(Value::Null))
            }
        }
        Some(other) => Err(format!("can't index item of type {}", go_type(other))),
    }
}

fn index_position(index: &Val, len: usize) -> Result<usize, String> {
    let n = match index.nonnull() {
        None => return Err("cannot index slice/array with nil".to_string()),
        Some(Value::Number(n)) => number_to_int(n)
            .ok_or_else(|| format!("cannot index slice/array with type {}", number_type(n)))?,
        Some(other) => {
            return Err(format!(
                "cannot index slice/array with type {}",
                go_type(other)
            ))
        }
    };
    usize::try_from(n)
        .ok()
        .filter(|i| *i < len)
        .ok_or_else(|| format!("index out of range: {n}"))
}

/// The operand kinds Go's comparison functions accept.
#[derive(Clone, Copy)]
enum Basic<'v> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'v str),
}

fn basic(v: &Value) -> Option<Basic<'_>> {
    match v {
        Value::Bool(b) => Some(Basic::Bool(*b)),
        Value::String(s) => Some(Basic::Str(s)),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            Basic::Int(i)
        } else if let Some(u) = n.as_u64() {
            Basic::Uint(u)
        } else {
            Basic::Float(n.as_f64().unwrap_or(0.0))
        }),
        _ => None,
    }
}

fn basic_int(b: Basic) -> Option<i128> {
    match b {
        Basic::Int(i) => Some(i128::from(i)),
        Basic::Uint(u) => Some(i128::from(u)),
        _ => None,
    }
}

const INCOMPATIBLE: &str = "incompatible types for comparison";

/// Go's `eq`: nil equals only nil; signed and unsigned integers compare by value.
fn eq_pair(x: Option<&Value>, y: Option<&Value>) -> Result<bool, String> {
    let (Some(x), Some(y)) = (x, y) else {
        return Ok(x.is_none() && y.is_none());
    };
    let (Some(bx), Some(by)) = (basic(x), basic(y)) else {
        return Err(if basic(x).is_none() && basic(y).is_none() {
            format!("non-comparable types {}, {}", go_type(x), go_type(y))
        } else {
            INCOMPATIBLE.to_string()
        });
    };
    match (bx, by) {
        (Basic::Bool(a), Basic::Bool(b)) => Ok(a == b),
        (Basic::Str(a), Basic::Str(b)) => Ok(a == b),
        (Basic::Float(a), Basic::Float(b)) => Ok(a == b),
        (a, b) => match (basic_int(a), basic_int(b)) {
            (Some(a), Some(b)) => Ok(a == b),
            _ => Err(INCOMPATIBLE.to_string()),
        },
    }
}

fn go_eq(args: &[Val]) -> Result<bool, String> {
    let (first, rest) = args
        .split_first()
        .ok_or_else(|| "wrong number of args: want at least 1 got 0".to_string())?;
    if rest.is_empty() {
        return Err("missing argument for comparison".to_string());
    }
    for other in rest {
        if eq_pair(first.nonnull(), other.nonnull())? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn go_lt(x: &Val, y: &Val) -> Result<bool, String> {
    let invalid = || "invalid type for comparison".to_string();
    let bx = x.nonnull().and_then(basic).ok_or_else(invalid)?;
    let by = y.nonnull().and_then(basic).ok_or_else(invalid)?;
    match (bx, by) {
        (Basic::Bool(_), Basic::Bool(_)) => Err(invalid()),
        (Basic::Str(a), Basic::Str(b)) => Ok(a < b),
        (Basic::Float(a), Basic::Float(b)) => Ok(a < b),
        (a, b) => match (basic_int(a), basic_int(b)) {
            (Some(a), Some(b)) => Ok(a < b),
            _ => Err(INCOMPATIBLE.to_string()),
        },
    }
}

fn compare<'a>(args: &[Val], decide: impl FnOnce(bool, bool) -> bool) -> Result<Val<'a>, String> {
    arity(args, 2)?;
    let (x, y) = (nth(args, 0)?, nth(args, 1)?);
    let lt = go_lt(x, y)?;
    let eq = !lt && eq_pair(x.nonnull(), y.nonnull())?;
    Ok(Val::bool(decide(lt, eq)))
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn go_field_chains_and_index() {
        check(&[
            ("{{.path.basename}}", Ok("foo")),
            ("{{ index .path.segments 1 }}", Ok("foo")),
            ("{{ index . \"path\" \"segments\" 0 }}", Ok("apps")),
            ("{{ $.labels.team }}", Ok("core")),
            (
                "{{ (index .path.segments 0) }}/{{ (.labels).tier }}",
                Ok("apps/web"),
            ),
            ("{{ index .path.segments 5 }}", Err("index out of range: 5")),
        ]);
    }
}
