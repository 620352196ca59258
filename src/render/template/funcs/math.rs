//! Sprig's integer math and the lenient conversions (`cast`) it relies on.

use super::{arity, min_arity, nth, str_arg};
use crate::render::template::lexer::parse_go_int;
use crate::render::template::value::{Budget, Val};
use serde_json::{Number, Value};

pub(super) fn call_math<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
    budget.charge(1)?;
    let ints = || args.iter().map(cast_int);
    match name {
        "add" => Ok(Val::int(ints().fold(0, i64::wrapping_add))),
        "add1" => {
            arity(args, 1)?;
            Ok(Val::int(cast_int(nth(args, 0)?).wrapping_add(1)))
        }
        "mul" => {
            min_arity(args, 1)?;
            Ok(Val::int(ints().fold(1, i64::wrapping_mul)))
        }
        "sub" | "div" | "mod" => {
            arity(args, 2)?;
            let (a, b) = (cast_int(nth(args, 0)?), cast_int(nth(args, 1)?));
            if name != "sub" && b == 0 {
                return Err("runtime error: integer divide by zero".to_string());
            }
            Ok(Val::int(match name {
                "sub" => a.wrapping_sub(b),
                "div" => a.wrapping_div(b),
                _ => a.wrapping_rem(b),
            }))
        }
        "max" | "biggest" | "min" => {
            min_arity(args, 1)?;
            let pick = if name == "min" { i64::min } else { i64::max };
            Ok(Val::int(ints().reduce(pick).unwrap_or(0)))
        }
        "atoi" => {
            arity(args, 1)?;
            Ok(Val::int(str_arg(args, 0)?.parse().unwrap_or(0)))
        }
        "int" | "int64" => {
            arity(args, 1)?;
            Ok(Val::int(cast_int(nth(args, 0)?)))
        }
        "float64" => {
            arity(args, 1)?;
            Number::from_f64(cast_float(nth(args, 0)?))
                .map(|n| Val::new(Value::Number(n)))
                .ok_or_else(|| "result is not a finite number".to_string())
        }
        _ => super::call_sprig(name, args, budget),
    }
}

/// `cast.ToInt64` as Sprig uses it: lenient, 0 for anything unparsable.
pub(in crate::render::template) fn cast_int(v: &Val) -> i64 {
    match v.nonnull() {
        Some(Value::Bool(b)) => i64::from(*b),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|u| u as i64))
            .unwrap_or_else(|| n.as_f64().map_or(0, |f| f as i64)),
        Some(Value::String(s)) => parse_go_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// `cast` reads "12.0" as 12 before parsing an integer.
fn trim_zero_decimal(s: &str) -> &str {
    let Some((int, frac)) = s.split_once('.') else {
        return s;
    };
    if !frac.is_empty() && frac.bytes().all(|b| b == b'0') {
        int
    } else {
        s
    }
}

pub(super) fn cast_float(v: &Val) -> f64 {
    match v.nonnull() {
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(Value::String(s)) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn math() {
        check(&[
            (
                "{{ add 1 2 \"3\" }} {{ sub 5 7 }} {{ mul 2 3 4 }} {{ div 7 2 }} {{ mod 7 2 }} {{ add1 .replicas }}",
                Ok("6 -2 24 3 1 4"),
            ),
            (
                "{{ atoi \"42\" }} {{ atoi \"x\" }} {{ int \"12.0\" }} {{ int 3.9 }} {{ max 1 5 3 }} {{ min 4 2 }}",
                Ok("42 0 12 3 5 2"),
            ),
            (
                "{{ float64 \"1.5\" }} {{ len .name }} {{ len .path.segments }}",
                Ok("1.5 5 2"),
            ),
            ("{{ div 1 0 }}", Err("integer divide by zero")),
        ]);
    }
}
