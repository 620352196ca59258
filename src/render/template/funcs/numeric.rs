//! Sprig's float math and number sequences (`numeric.go` of Sprig v3.3.0).
//!
//! `addf`, `subf`, `mulf` and `divf` go through shopspring/decimal in Sprig: each operand is
//! the shortest decimal that reads back as its float, the arithmetic is exact (`divf` rounds
//! to 16 decimal places, half away from zero), and the result is read back as a float. That
//! is why `addf 0.1 0.2` is 0.3 there, not 0.30000000000000004; it is reproduced here.

use super::math::cast_float;
use super::{arity, check_size, int_arg, min_arity, nth};
use crate::render::template::format::strval;
use crate::render::template::value::{Budget, Val};
use serde_json::{Number, Value};

/// Longest sequence `until`, `untilStep` and `seq` build.
const MAX_SEQUENCE: i64 = 100_000;

pub(super) fn call_numeric<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Option<Val<'a>>, String> {
    let floats = |from: usize| -> Vec<f64> { args.iter().skip(from).map(cast_float).collect() };
    let val = match name {
        "floor" | "ceil" => {
            arity(args, 1)?;
            let f = cast_float(nth(args, 0)?);
            float(if name == "floor" { f.floor() } else { f.ceil() })?
        }
        "round" => {
            min_arity(args, 2)?;
            if args.len() > 3 {
                return Err(format!(
                    "wrong number of args: want at most 3 got {}",
                    args.len()
                ));
            }
            let places = int_arg(args, 1)?;
            let on = args.get(2).map_or(0.5, cast_float);
            float(round(cast_float(nth(args, 0)?), places, on))?
        }
        "maxf" | "minf" => {
            min_arity(args, 1)?;
            let all = floats(0);
            let pick = if name == "maxf" { go_max } else { go_min };
            float(all.into_iter().reduce(pick).unwrap_or(0.0))?
        }
        "add1f" => {
            arity(args, 1)?;
            float(decimal_op(cast_float(nth(args, 0)?), &[1.0], Op::Add)?)?
        }
        "addf" => float(decimal_op(0.0, &floats(0), Op::Add)?)?,
        "subf" | "mulf" | "divf" => {
            min_arity(args, 1)?;
            let op = match name {
                "subf" => Op::Sub,
                "mulf" => Op::Mul,
                _ => Op::Div,
            };
            float(decimal_op(cast_float(nth(args, 0)?), &floats(1), op)?)?
        }
        "until" => {
            arity(args, 1)?;
            let count = int_arg(args, 0)?;
            sequence(budget, 0, count, if count < 0 { -1 } else { 1 })?
        }
        "untilStep" => {
            arity(args, 3)?;
            let (start, stop, step) = (int_arg(args, 0)?, int_arg(args, 1)?, int_arg(args, 2)?);
            sequence(budget, start, stop, step)?
        }
        "seq" => {
            let mut params = Vec::with_capacity(args.len());
            for i in 0..args.len() {
                params.push(int_arg(args, i)?);
            }
            Val::str(seq(budget, &params)?)
        }
        "toDecimal" => {
            arity(args, 1)?;
            let text = strval(nth(args, 0)?.nonnull())?;
            Val::int(i64::from_str_radix(&text, 8).unwrap_or(0))
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

fn float<'a>(f: f64) -> Result<Val<'a>, String> {
    Number::from_f64(f)
        .map(|n| Val::new(Value::Number(n)))
        .ok_or_else(|| "result is not a finite number".to_string())
}

/// Go's `math.Max`: NaN wins, and +0 beats -0.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b && a == 0.0 {
        if a.is_sign_negative() {
            b
        } else {
            a
        }
    } else {
        a.max(b)
    }
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b && a == 0.0 {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else {
        a.min(b)
    }
}

/// Sprig's `round`: the fraction of `val * 10^places` decides, against `round_on`.
fn round(val: f64, places: i64, round_on: f64) -> f64 {
    let pow = 10f64.powi(i32::try_from(places.clamp(-400, 400)).unwrap_or(0));
    let digit = pow * val;
    let frac = digit.fract();
    let rounded = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    rounded / pow
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal `mantissa * 10^exp`.
#[derive(Clone, Copy)]
struct Decimal {
    mantissa: i128,
    exp: i32,
}

impl Decimal {
    /// shopspring's `NewFromFloat`: the shortest decimal that reads back as `f`.
    fn from_f64(f: f64) -> Option<Decimal> {
        if !f.is_finite() {
            return None;
        }
        let text = format!("{f:e}");
        let (digits, exp) = text.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let mantissa: i128 = format!("{int}{frac}").parse().ok()?;
        let frac_len = i32::try_from(frac.len()).ok()?;
        Some(Decimal {
            mantissa,
            exp: exp - frac_len,
        })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.mantissa, self.exp)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// Both at the smaller exponent, if that fits.
    fn align(self, other: Decimal) -> Option<(i128, i128, i32)> {
        let exp = self.exp.min(other.exp);
        let scale = |d: Decimal| -> Option<i128> {
            let shift = u32::try_from(d.exp - exp).ok()?;
            d.mantissa.checked_mul(10i128.checked_pow(shift)?)
        };
        Some((scale(self)?, scale(other)?, exp))
    }

    fn apply(self, op: Op, other: Decimal) -> Option<Decimal> {
        match op {
            Op::Add | Op::Sub => {
                let (a, b, exp) = self.align(other)?;
                let mantissa = match op {
                    Op::Add => a.checked_add(b)?,
                    _ => a.checked_sub(b)?,
                };
                Some(Decimal { mantissa, exp })
            }
            Op::Mul => Some(Decimal {
                mantissa: self.mantissa.checked_mul(other.mantissa)?,
                exp: self.exp.checked_add(other.exp)?,
            }),
            Op::Div => {
                // The quotient times 10^16, rounded half away from zero.
                let shift = self.exp.checked_sub(other.exp)?.checked_add(16)?;
                let (num, den) = if shift >= 0 {
                    let scale = 10i128.checked_pow(u32::try_from(shift).ok()?)?;
                    (self.mantissa.checked_mul(scale)?, other.mantissa)
                } else {
                    let scale = 10i128.checked_pow(u32::try_from(-shift).ok()?)?;
                    (self.mantissa, other.mantissa.checked_mul(scale)?)
                };
                let (q, r) = (num / den, num % den);
                let away = r.checked_abs()?.checked_mul(2)? >= den.checked_abs()?;
                let mantissa = if away {
                    q.checked_add(if (num < 0) == (den < 0) { 1 } else { -1 })?
                } else {
                    q
                };
                Some(Decimal { mantissa, exp: -16 })
            }
        }
    }
}

fn float_op(a: f64, b: f64, op: Op) -> f64 {
    match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b,
    }
}

/// Sprig's `execDecimalOp`; where the exact decimal would not fit, float arithmetic, which
/// differs from it only in the last digit.
fn decimal_op(first: f64, rest: &[f64], op: Op) -> Result<f64, String> {
    let mut acc = Decimal::from_f64(first);
    let mut fallback = first;
    for &x in rest {
        if matches!(op, Op::Div) && x == 0.0 {
            return Err("decimal division by zero".to_string());
        }
        fallback = match acc {
            Some(d) => d.to_f64(),
            None => fallback,
        };
        acc = acc
            .zip(Decimal::from_f64(x))
            .and_then(|(a, b)| a.apply(op, b));
        fallback = float_op(fallback, x, op);
    }
    Ok(acc.map_or(fallback, Decimal::to_f64))
}

/// Sprig's `untilStep`: stops before `stop`, walking down when `stop < start`.
fn steps(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    let forward = stop >= start;
    if (forward && step <= 0) || (!forward && step >= 0) {
        return Ok(out);
    }
    let mut i = start;
    while if forward { i < stop } else { i > stop } {
        if i64::try_from(out.len()).unwrap_or(i64::MAX) >= MAX_SEQUENCE {
            return Err(format!("sequence exceeds {MAX_SEQUENCE} numbers"));
        }
        out.push(i);
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(out)
}

fn sequence<'a>(budget: &mut Budget, start: i64, stop: i64, step: i64) -> Result<Val<'a>, String> {
    let numbers = steps(start, stop, step)?;
    budget.charge_bytes(numbers.len().saturating_mul(8))?;
    Ok(Val::new(Value::Array(
        numbers.into_iter().map(Value::from).collect(),
    )))
}

/// Sprig's `seq`: `seq end`, `seq start end`, `seq start step end`, as a spaced string.
fn seq(budget: &mut Budget, params: &[i64]) -> Result<String, String> {
    let numbers = match *params {
        [end] => {
            let inc = if end < 1 { -1 } else { 1 };
            steps(1, end.saturating_add(inc), inc)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            steps(start, end.saturating_add(step), step)?
        }
        [start, step, end] => {
            let inc = if end < start { -1 } else { 1 };
            if end < start && step > 0 {
                return Ok(String::new());
            }
            steps(start, end.saturating_add(inc), step)?
        }
        _ => return Ok(String::new()),
    };
    budget.charge_bytes(numbers.len().saturating_mul(8))?;
    let text = numbers
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    check_size(text.len())?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn float_math_and_sequences() {
        check(&[
            (
                "{{ addf 0.1 0.2 }} {{ addf 1 2 \"3.5\" }} {{ subf 1 0.9 }} {{ mulf 1.1 3 }} {{ divf 1 3 }} {{ divf 2 3 }} {{ add1f 1.5 }} {{ addf }}",
                Ok("0.3 6.5 0.1 3.3 0.3333333333333333 0.6666666666666667 2.5 0"),
            ),
            ("{{ divf 1 3000 }}", Ok("0.0003333333333333")),
            ("{{ divf 1 0 }}", Err("decimal division by zero")),
            (
                "{{ maxf 1 2.5 \"3\" }} {{ minf 1 -2.5 }} {{ floor 1.7 }} {{ ceil 1.2 }} {{ floor -1.5 }} {{ ceil \"x\" }}",
                Ok("3 -2.5 1 2 -2 0"),
            ),
            (
                "{{ round 3.14159 2 }} {{ round 2.5 0 }} {{ round 2.4 0 }} {{ round 2.4 0 0.3 }} {{ round 1234.5 -2 }}",
                Ok("3.14 3 2 3 1200"),
            ),
            (
                "{{ until 3 }} {{ until -2 }} {{ untilStep 0 10 4 }} {{ untilStep 5 0 -2 }} {{ untilStep 0 5 -1 }}",
                Ok("[0 1 2] [0 -1] [0 4 8] [5 3 1] []"),
            ),
            (
                "{{ seq 3 }}|{{ seq 0 }}|{{ seq 2 4 }}|{{ seq 4 2 }}|{{ seq 0 2 7 }}|{{ seq 5 1 2 }}|{{ seq 5 -2 0 }}|{{ seq }}",
                Ok("1 2 3|1 0|2 3 4|4 3 2|0 2 4 6||5 3 1|"),
            ),
            (
                "{{ toDecimal \"0777\" }} {{ toDecimal 777 }} {{ toDecimal \"8\" }}",
                Ok("511 511 0"),
            ),
            ("{{ until 1000000 }}", Err("sequence exceeds")),
            // Helm's values are float64: Go truncates them to integers and prints them with %v.
            (
                "{{ int 3.7 }} {{ add .ratio 1 }} {{ toString .big }} {{ .big }} {{ mulf .big 10 }} {{ int64 -2.5 }}",
                Ok("3 2 1e+06 1e+06 1e+07 -2"),
            ),
            (
                "{{ until \"3\" }}",
                Err("wrong type for value; expected int; got string"),
            ),
        ]);
    }

    #[test]
    fn extreme_arguments_do_not_panic() {
        use crate::render::template::testing::{data, render_go};
        let min = i64::MIN;
        let max = i64::MAX;
        for text in [
            format!("{{{{ until {min} }}}}"),
            format!("{{{{ seq {min} {max} }}}}"),
            format!("{{{{ seq {max} {min} {max} }}}}"),
            format!("{{{{ untilStep 0 {max} {max} }}}}"),
            format!("{{{{ untilStep {max} {min} {min} }}}}"),
            format!("{{{{ round 1.5 {min} }}}} {{{{ round 1.5 {max} 2 }}}}"),
            format!("{{{{ date \"2006 Jan _2 .000\" {max} }}}} {{{{ date \"2006\" {min} }}}}"),
            format!("{{{{ ago {min} }}}} {{{{ ago {max} }}}} {{{{ duration {min} }}}}"),
            format!("{{{{ durationRound {min} }}}} {{{{ durationRound \"-9223372036854775808ns\" }}}}"),
            "{{ dateModify \"99999999999h\" now }} {{ now | dateModify \"2562047h\" }}".to_string(),
            "{{ mustToDate \"2006-01-02\" \"9999-12-31\" }} {{ toDate \"06 1 2\" \"99 2 30\" }}".to_string(),
            format!("{{{{ wrap {min} \"a b c\" }}}} {{{{ wrapWith {max} \"x\" \"a b\" }}}}"),
            format!("{{{{ regexSplit \"a\" \"aaa\" {min} }}}} {{{{ regexFindAll \"\" \"ab\" {max} }}}}"),
            format!("{{{{ chunk {max} (list 1) }}}} {{{{ slice (list 1 2) -1 }}}} {{{{ slice (list 1) {max} {min} }}}}"),
            format!("{{{{ abbrevboth {max} {max} \"abc\" }}}} {{{{ abbrev {min} \"abc\" }}}} {{{{ randAlphaNum {min} }}}}"),
            "{{ divf 1e308 1e-308 }} {{ mulf 1e308 10 }} {{ addf 1e308 1e308 }} {{ subf -1e308 1e308 }}".to_string(),
            "{{ divf 5e-324 1e308 }} {{ mulf 1e-300 1e-300 }} {{ toDecimal \"-1000000000000000000000000\" }}".to_string(),
            "{{ semverCompare \"^0.0.0-0 || x.x.x - 99999999999999999999\" \"0.0.0\" }}".to_string(),
            "{{ regexReplaceAll \"(a)\" \"aaa\" \"$99999999999$1${1\" }} {{ b32dec \"========\" }}".to_string(),
            "{{ urlParse \"http://[::1\" }} {{ urlParse \"%\" }}".to_string(),
        ] {
            let _ = render_go(&text, &data(), false);
        }
    }
}
