//! Functions: CEL's standard ones (cel-spec `doc/langdef.md`, "List of Standard Definitions")
//! and the libraries the Kubernetes API server adds (`k8s.io/apiserver/pkg/cel/library`,
//! Kubernetes v1.33: `lists.go`, `regex.go`, `urls.go`, `ip.go`, `cidr.go`, `quantity.go`;
//! cel-go `ext/strings.go` and `ext/sets.go`). A function that is not here is unsupported.

use std::cmp::Ordering;
// Address values only (`core::net` has no sockets): CEL's ip() and cidr() parse and compare.
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::eval::{
    checked_timestamp, civil_from_days, days_from_civil, err, format_double, format_duration,
    format_timestamp, is_list, len_cost, no_overload, overflow, unsupported, Eval,
};
use super::{EvalError, Value};

/// A value of a library type.
#[derive(Clone, Debug, PartialEq)]
pub enum Ext {
    Url(Box<Url>),
    Ip(IpAddr),
    Cidr(IpAddr, u8),
    Quantity(Quantity),
}

impl Ext {
    pub fn type_name(&self) -> &'static str {
        match self {
            Ext::Url(_) => "kubernetes.URL",
            Ext::Ip(_) => "net.IP",
            Ext::Cidr(..) => "net.CIDR",
            Ext::Quantity(_) => "kubernetes.Quantity",
        }
    }

    pub fn to_text(&self) -> String {
        match self {
            Ext::Url(u) => u.raw.clone(),
            Ext::Ip(ip) => ip.to_string(),
            Ext::Cidr(ip, len) => format!("{ip}/{len}"),
            Ext::Quantity(q) => q.raw.clone(),
        }
    }
}

type R<'a> = Result<Value<'a>, EvalError>;

/// Dispatches a call. Receiver-style (`x.f(y)`) and global (`f(x, y)`) calls of the standard
/// functions that allow both are folded into one argument list.
/// Whether `x` is the zero value of its type (`optional.ofNonZeroValue`).
fn is_zero<'a>(ev: &mut Eval<'_, 'a>, x: &Value<'a>) -> Result<bool, EvalError> {
    Ok(match x.scalar() {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => i == 0,
        Value::Uint(u) => u == 0,
        Value::Double(d) => d == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::Duration(d) => d == 0,
        Value::Timestamp(t) => t == 0,
        Value::Optional(o) => o.is_none(),
        v @ (Value::List(_) | Value::Map(_) | Value::Node(_)) => match size(ev, &v)? {
            Value::Int(n) => n == 0,
            _ => false,
        },
        Value::Type(_) | Value::Ext(_) => false,
    })
}

pub fn call<'a>(
    ev: &mut Eval<'_, 'a>,
    target: Option<Value<'a>>,
    func: &str,
    args: Vec<Value<'a>>,
) -> R<'a> {
    ev.spend(1)?;
    let method = target.is_some();
    let mut all: Vec<Value<'a>> = target.into_iter().chain(args).collect();
    // Collections stay nodes (read lazily); scalars are typed once here.
    for a in &mut all {
        if let Value::Node(n) = a {
            if !n.is_map() && !n.is_seq() {
                *a = a.scalar();
            }
        }
    }
    let refs: Vec<&Value<'a>> = all.iter().collect();
    match (func, method, all.as_slice()) {
        // Optional values (cel-go's optional library, which Kubernetes enables).
        ("optional.of", false, [x]) => Ok(Value::Optional(Some(Box::new(x.clone())))),
        ("optional.none", false, []) => Ok(Value::Optional(None)),
        ("optional.ofNonZeroValue", false, [x]) => Ok(Value::Optional(
            (!is_zero(ev, x)?).then(|| Box::new(x.clone())),
        )),
        ("hasValue", true, [Value::Optional(o)]) => Ok(Value::Bool(o.is_some())),
        ("value", true, [Value::Optional(o)]) => match o {
            Some(v) => Ok((**v).clone()),
            None => Err(EvalError::Error("optional.none() dereference".into())),
        },
        ("orValue", true, [Value::Optional(o), default]) => Ok(match o {
            Some(v) => (**v).clone(),
            None => default.clone(),
        }),
        ("or", true, [Value::Optional(o), Value::Optional(other)]) => {
            Ok(Value::Optional(o.clone().or_else(|| other.clone())))
        }
        ("size", _, [x]) => size(ev, x),
        ("dyn", false, [x]) => Ok(x.clone()),
        ("type", false, [x]) => Ok(Value::Type(x.type_name())),
        ("int", false, [x]) => to_int(x),
        ("uint", false, [x]) => to_uint(x),
        ("double", false, [x]) => to_double(x),
        ("string", false, [x]) => to_string(ev, x),
        ("bool", false, [x]) => to_bool(x),
        ("bytes", false, [x]) => match x {
            Value::Bytes(b) => Ok(Value::Bytes(b.clone())),
            Value::String(s) => {
                ev.charge_output(s.len())?;
                Ok(Value::Bytes(s.as_bytes().to_vec()))
            }
            _ => no_overload(func, &refs),
        },
        ("duration", false, [x]) => match x {
            Value::Duration(d) => Ok(Value::Duration(*d)),
            Value::String(s) => parse_duration(s).map(Value::Duration),
            _ => no_overload(func, &refs),
        },
        ("timestamp", false, [x]) => match x {
            Value::Timestamp(t) => Ok(Value::Timestamp(*t)),
            Value::String(s) => parse_timestamp(s),
            Value::Int(i) => checked_timestamp(i128::from(*i) * 1_000_000_000),
            _ => no_overload(func, &refs),
        },
        ("contains" | "startsWith" | "endsWith", true, [Value::String(s), Value::String(p)]) => {
            ev.spend(len_cost(s.len()))?;
            Ok(Value::Bool(match func {
                "contains" => s.contains(p.as_str()),
                "startsWith" => s.starts_with(p.as_str()),
                _ => s.ends_with(p.as_str()),
            }))
        }
        ("matches", _, [Value::String(s), Value::String(p)]) => {
            let (re, states) = ev.regex(p)?;
            ev.charge_search(s.len(), states)?;
            Ok(Value::Bool(re.is_match(s)))
        }
        (
            "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
            | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            true,
            [Value::Timestamp(t)],
        ) => timestamp_part(func, *t),
        (
            "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
            | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            true,
            [Value::Timestamp(_), _],
        ) => unsupported(format!("function {func} with a time zone")),
        (
            "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            true,
            [Value::Duration(d)],
        ) => Ok(Value::Int(match func {
            "getHours" => d / 3_600_000_000_000,
            "getMinutes" => d / 60_000_000_000,
            "getSeconds" => d / 1_000_000_000,
            _ => d % 1_000_000_000 / 1_000_000,
        })),
        _ => strings_ext(ev, func, method, &all),
    }
}

fn size<'a>(ev: &mut Eval<'_, 'a>, x: &Value<'a>) -> R<'a> {
    Ok(Value::Int(match x {
        Value::String(s) => {
            ev.spend(len_cost(s.len()))?;
            s.chars().count() as i64
        }
        Value::Bytes(b) => b.len() as i64,
        Value::List(l) => l.len() as i64,
        Value::Map(m) => m.len() as i64,
        Value::Node(n) if n.is_seq() => n.items().len() as i64,
        Value::Node(n) if n.is_map() => {
            ev.spend(n.entries().len() as u64 / 16)?;
            super::node_entries(n).count() as i64
        }
        _ => return no_overload("size", &[x]),
    }))
}

fn to_int<'a>(x: &Value<'a>) -> R<'a> {
    match x {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::Uint(u) => i64::try_from(*u).map(Value::Int).map_err(|_| overflow()),
        // cel-go refuses doubles at or beyond ±2^63 and NaN.
        Value::Double(d)
            if d.is_finite() && *d > -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18 =>
        {
            Ok(Value::Int(d.trunc() as i64))
        }
        Value::Double(_) => err("integer overflow"),
        Value::String(s) => s
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| EvalError::Error(format!("cannot convert {s:?} to int"))),
        Value::Duration(d) => Ok(Value::Int(*d)),
        Value::Timestamp(t) => Ok(Value::Int(t.div_euclid(1_000_000_000) as i64)),
        _ => no_overload("int", &[x]),
    }
}

fn to_uint<'a>(x: &Value<'a>) -> R<'a> {
    match x {
        Value::Uint(u) => Ok(Value::Uint(*u)),
        Value::Int(i) => u64::try_from(*i)
            .map(Value::Uint)
            .map_err(|_| EvalError::Error("unsigned integer overflow".into())),
        Value::Double(d) if d.is_finite() && *d > -1.0 && *d < 1.844_674_407_370_955_2e19 => {
            Ok(Value::Uint(d.trunc() as u64))
        }
        Value::Double(_) => err("unsigned integer overflow"),
        Value::String(s) => s
            .parse::<u64>()
            .map(Value::Uint)
            .map_err(|_| EvalError::Error(format!("cannot convert {s:?} to uint"))),
        _ => no_overload("uint", &[x]),
    }
}

fn to_double<'a>(x: &Value<'a>) -> R<'a> {
    match x {
        Value::Double(d) => Ok(Value::Double(*d)),
        Value::Int(i) => Ok(Value::Double(*i as f64)),
        Value::Uint(u) => Ok(Value::Double(*u as f64)),
        Value::String(s) => {
            // Go's strconv.ParseFloat spellings of the specials.
            let t = s.to_ascii_lowercase();
            let t = t.trim_start_matches(['+', '-']);
            if t.contains("inf") && !matches!(t, "inf" | "infinity") {
                return err(format!("cannot convert {s:?} to double"));
            }
            s.parse::<f64>()
                .map(Value::Double)
                .map_err(|_| EvalError::Error(format!("cannot convert {s:?} to double")))
        }
        _ => no_overload("double", &[x]),
    }
}

fn to_string<'a>(ev: &mut Eval<'_, 'a>, x: &Value<'a>) -> R<'a> {
    Ok(Value::String(match x {
        Value::String(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Bool(b) => b.to_string(),
        Value::Bytes(b) => {
            ev.spend(len_cost(b.len()))?;
            String::from_utf8(b.clone())
                .map_err(|_| EvalError::Error("invalid UTF-8 in bytes".into()))?
        }
        Value::Duration(d) => format_duration(*d),
        Value::Timestamp(t) => format_timestamp(*t),
        Value::Ext(e @ (Ext::Ip(_) | Ext::Cidr(..))) => e.to_text(),
        _ => return no_overload("string", &[x]),
    }))
}

fn to_bool<'a>(x: &Value<'a>) -> R<'a> {
    match x {
        Value::Bool(b) => Ok(Value::Bool(*b)),
        // cel-go's string-to-bool conversion: strconv.ParseBool's spellings.
        Value::String(s) => match s.as_str() {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
            _ => err(format!(
                "type conversion error from 'string' to 'bool': {s:?}"
            )),
        },
        _ => no_overload("bool", &[x]),
    }
}

/// Go's `time.ParseDuration`: `1h30m`, `-1.5s`, `300ms`, `2us`; the bare `0` is allowed.
fn parse_duration(s: &str) -> Result<i64, EvalError> {
    let bad = || EvalError::Error(format!("invalid duration {s:?}"));
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() || num == "." {
            return Err(bad());
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        let mut part = whole.checked_mul(scale).ok_or_else(bad)?;
        let mut div = 1i128;
        for c in frac.chars().take(18) {
            div *= 10;
            part += i128::from(c.to_digit(10).unwrap_or(0)) * scale / div;
        }
        total = total.checked_add(part).ok_or_else(bad)?;
        if total > i128::from(i64::MAX) {
            return Err(bad());
        }
        rest = tail;
    }
    let total = if neg { -total } else { total };
    i64::try_from(total).map_err(|_| bad())
}

/// RFC 3339, as cel-go's `timestamp(string)` reads it (`time.RFC3339`).
fn parse_timestamp<'a>(s: &str) -> R<'a> {
    let bad = || EvalError::Error(format!("invalid timestamp {s:?}"));
    let b = s.as_bytes();
    if b.len() < 20 {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Result<i64, EvalError> {
        let t = s.get(r).ok_or_else(bad)?;
        if !t.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse().map_err(|_| bad())
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let (y, mo, d, h, mi, sec) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo)
        || d < 1
        || d > days_in_month(y, mo as u32)
        || h > 23
        || mi > 59
        || sec > 59
    {
        return Err(bad());
    }
    let mut pos = 19;
    let mut nanos: i128 = 0;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        if pos == start || pos - start > 9 {
            return Err(bad());
        }
        let f = &s[start..pos];
        nanos = i128::from(num(start..pos)?) * 10i128.pow(9 - f.len() as u32);
    }
    let offset: i64 = match &s[pos..] {
        "Z" | "z" => 0,
        tz if tz.len() == 6
            && matches!(tz.as_bytes()[0], b'+' | b'-')
            && tz.as_bytes()[3] == b':' =>
        {
            let oh = num(pos + 1..pos + 3)?;
            let om = num(pos + 4..pos + 6)?;
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let o = oh * 3600 + om * 60;
            if tz.starts_with('-') {
                -o
            } else {
                o
            }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset;
    checked_timestamp(i128::from(secs) * 1_000_000_000 + nanos)
}

fn days_in_month(y: i64, m: u32) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// The parts of a timestamp in UTC, zero-based where cel-spec says so (month, day of year,
/// `getDate` is one-based, `getDayOfMonth` zero-based).
fn timestamp_part<'a>(func: &str, t: i128) -> R<'a> {
    let secs = t.div_euclid(1_000_000_000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    Ok(Value::Int(match func {
        "getFullYear" => y,
        "getMonth" => i64::from(m) - 1,
        "getDate" => i64::from(d),
        "getDayOfMonth" => i64::from(d) - 1,
        // 1970-01-01 was a Thursday; Sunday is 0.
        "getDayOfWeek" => (days + 4).rem_euclid(7),
        "getDayOfYear" => days - days_from_civil(y, 1, 1),
        "getHours" => rem / 3600,
        "getMinutes" => rem % 3600 / 60,
        "getSeconds" => rem % 60,
        _ => (t.rem_euclid(1_000_000_000) / 1_000_000) as i64,
    }))
}

/// Code-point index → byte offset in `s`, for `0..=len`.
fn byte_at(s: &str, cp: i64) -> Option<usize> {
    if cp < 0 {
        return None;
    }
    let cp = cp as usize;
    if cp == 0 {
        return Some(0);
    }
    let mut it = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()));
    it.nth(cp)
}

fn cp_index(s: &str, byte: usize) -> i64 {
    s[..byte].chars().count() as i64
}

fn strings_ext<'a>(ev: &mut Eval<'_, 'a>, func: &str, method: bool, all: &[Value<'a>]) -> R<'a> {
    let refs: Vec<&Value<'a>> = all.iter().collect();
    if let (true, Some(Value::String(s))) = (method, all.first()) {
        ev.spend(len_cost(s.len()))?;
        let args = &all[1..];
        let oob = |i: i64| EvalError::Error(format!("index out of range: {i}"));
        match (func, args) {
            ("charAt", [Value::Int(i)]) => {
                let len = s.chars().count() as i64;
                if *i < 0 || *i > len {
                    return Err(oob(*i));
                }
                return Ok(Value::String(
                    s.chars()
                        .nth(*i as usize)
                        .map(String::from)
                        .unwrap_or_default(),
                ));
            }
            ("indexOf", [Value::String(sub)]) => {
                return Ok(Value::Int(
                    s.find(sub.as_str()).map_or(-1, |b| cp_index(s, b)),
                ));
            }
            ("indexOf", [Value::String(sub), Value::Int(off)]) => {
                let start = byte_at(s, *off).ok_or_else(|| oob(*off))?;
                return Ok(Value::Int(
                    s[start..]
                        .find(sub.as_str())
                        .map_or(-1, |b| cp_index(s, start + b)),
                ));
            }
            ("lastIndexOf", [Value::String(sub)]) => {
                return Ok(Value::Int(
                    s.rfind(sub.as_str()).map_or(-1, |b| cp_index(s, b)),
                ));
            }
            ("lastIndexOf", [Value::String(sub), Value::Int(off)]) => {
                let start = byte_at(s, *off).ok_or_else(|| oob(*off))?;
                // The match may begin at `off` and run past it.
                let end = (start + sub.len()).min(s.len());
                let end = (end..=s.len())
                    .find(|e| s.is_char_boundary(*e))
                    .unwrap_or(s.len());
                return Ok(Value::Int(
                    s[..end].rfind(sub.as_str()).map_or(-1, |b| cp_index(s, b)),
                ));
            }
            ("lowerAscii", []) => return Ok(Value::String(s.to_ascii_lowercase())),
            ("upperAscii", []) => return Ok(Value::String(s.to_ascii_uppercase())),
            ("replace", [Value::String(old), Value::String(new)]) => {
                return replace(ev, s, old, new, -1);
            }
            ("replace", [Value::String(old), Value::String(new), Value::Int(n)]) => {
                return replace(ev, s, old, new, *n);
            }
            ("split", [Value::String(sep)]) => return split(ev, s, sep, -1),
            ("split", [Value::String(sep), Value::Int(n)]) => return split(ev, s, sep, *n),
            ("substring", [Value::Int(a)]) => {
                let b = byte_at(s, *a).ok_or_else(|| oob(*a))?;
                return Ok(Value::String(s[b..].to_string()));
            }
            ("substring", [Value::Int(a), Value::Int(z)]) => {
                if a > z {
                    return err(format!("invalid substring range. start: {a}, end: {z}"));
                }
                let ba = byte_at(s, *a).ok_or_else(|| oob(*a))?;
                let bz = byte_at(s, *z).ok_or_else(|| oob(*z))?;
                return Ok(Value::String(s[ba..bz].to_string()));
            }
            ("trim", []) => return Ok(Value::String(s.trim().to_string())),
            ("find", [Value::String(p)]) => {
                let (re, states) = ev.regex(p)?;
                ev.charge_search(s.len(), states)?;
                return Ok(Value::String(
                    re.find(s)
                        .map(|m| m.as_str().to_string())
                        .unwrap_or_default(),
                ));
            }
            ("findAll", [Value::String(p)]) => return find_all(ev, s, p, -1),
            ("findAll", [Value::String(p), Value::Int(n)]) => return find_all(ev, s, p, *n),
            _ => {}
        }
    }
    if let (true, Some(first)) = (method, all.first()) {
        if is_list(first) {
            return lists_ext(ev, func, first, &all[1..]);
        }
    }
    match (func, method, all) {
        ("sets.contains" | "sets.equivalent" | "sets.intersects", false, [a, b])
            if is_list(a) && is_list(b) =>
        {
            sets(ev, func, a, b)
        }
        ("url" | "isURL", false, [Value::String(s)]) => {
            // Read twice (as Go's ParseRequestURI, then without its fragment), unescaped each.
            ev.spend(len_cost(s.len()) * 4)?;
            let parsed = Url::parse(s);
            if func == "isURL" {
                return Ok(Value::Bool(parsed.is_ok()));
            }
            parsed.map(|u| Value::Ext(Ext::Url(Box::new(u))))
        }
        ("ip" | "isIP", false, [Value::String(s)]) => {
            let parsed = parse_ip(s);
            if func == "isIP" {
                return Ok(Value::Bool(parsed.is_ok()));
            }
            parsed.map(|ip| Value::Ext(Ext::Ip(ip)))
        }
        ("cidr" | "isCIDR", false, [Value::String(s)]) => {
            let parsed = parse_cidr(s);
            if func == "isCIDR" {
                return Ok(Value::Bool(parsed.is_ok()));
            }
            parsed.map(|(ip, len)| Value::Ext(Ext::Cidr(ip, len)))
        }
        ("quantity" | "isQuantity", false, [Value::String(s)]) => {
            let parsed = Quantity::parse(s);
            if func == "isQuantity" {
                return Ok(Value::Bool(parsed.is_ok()));
            }
            parsed.map(|q| Value::Ext(Ext::Quantity(q)))
        }
        ("getQuery", true, [Value::Ext(Ext::Url(u))]) => {
            // One entry or value per `&`-separated pair: paid for before they are made.
            let pairs = u.raw_query.bytes().filter(|&b| b == b'&').count() + 1;
            ev.spend(len_cost(u.raw_query.len()) + pairs as u64)?;
            Ok(u.query())
        }
        (_, true, [Value::Ext(e), rest @ ..]) => {
            if let Ext::Url(u) = e {
                // A part is copied out, the path decoded and escaped again byte by byte.
                ev.spend(len_cost(u.raw.len()) * 4)?;
            }
            ext_method(func, e, rest)
        }
        (
            "size" | "contains" | "startsWith" | "endsWith" | "matches" | "int" | "uint" | "double"
            | "string" | "bool" | "bytes" | "type" | "dyn" | "duration" | "timestamp" | "charAt"
            | "indexOf" | "lastIndexOf" | "lowerAscii" | "upperAscii" | "replace" | "split"
            | "substring" | "trim" | "join" | "find" | "findAll" | "isSorted" | "sum" | "min"
            | "max" | "sets.contains" | "sets.equivalent" | "sets.intersects" | "url" | "isURL"
            | "ip" | "isIP" | "cidr" | "isCIDR" | "quantity" | "isQuantity",
            _,
            _,
        ) => no_overload(func, &refs),
        _ => unsupported(format!("function {func}")),
    }
}

/// Go's `strings.Replace`, paid for before it is built: an empty `old` inserts `new` at
/// every character, so the result can be `len(s)·len(new)` bytes from short inputs.
fn replace<'a>(ev: &mut Eval<'_, 'a>, s: &str, old: &str, new: &str, n: i64) -> R<'a> {
    let limit = usize::try_from(n).ok();
    ev.charge_output(crate::text::replaced_len(s, old, new, limit))?;
    Ok(Value::String(match limit {
        Some(n) => s.replacen(old, new, n),
        None => s.replace(old, new),
    }))
}

/// Go's `strings.SplitN`: `n == 0` gives no parts, `n < 0` all of them, an empty separator
/// splits after each code point.
fn split<'a>(ev: &mut Eval<'_, 'a>, s: &str, sep: &str, n: i64) -> R<'a> {
    // Every part is a value of its own: their number is paid for before they are made.
    let found = if sep.is_empty() {
        s.chars().count()
    } else {
        s.matches(sep).count() + 1
    };
    let count = usize::try_from(n).map_or(found, |n| found.min(n));
    ev.spend(count as u64)?;
    ev.charge_output(s.len())?;
    let parts: Vec<String> = if n == 0 {
        Vec::new()
    } else if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let limit = if n < 0 {
            chars.len()
        } else {
            (n as usize).min(chars.len())
        };
        let mut out: Vec<String> = chars[..limit.saturating_sub(1)]
            .iter()
            .map(|c| c.to_string())
            .collect();
        if limit > 0 {
            out.push(chars[limit - 1..].iter().collect());
        }
        out
    } else if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    };
    Ok(Value::List(parts.into_iter().map(Value::String).collect()))
}

fn find_all<'a>(ev: &mut Eval<'_, 'a>, s: &str, p: &str, n: i64) -> R<'a> {
    let (re, states) = ev.regex(p)?;
    ev.charge_search(s.len(), states)?;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    // Each match is paid for as it is found (an empty pattern matches at every character),
    // and so is the search for the next one, which may read to the end of the text again.
    let mut out: Vec<Value<'a>> = Vec::new();
    for m in re.find_iter(s).take(limit) {
        ev.spend(len_cost(m.len()))?;
        out.push(Value::String(m.as_str().to_string()));
        if out.len() < limit {
            ev.charge_search(s.len() - m.end(), states)?;
        }
    }
    Ok(Value::List(out))
}

fn lists_ext<'a>(ev: &mut Eval<'_, 'a>, func: &str, list: &Value<'a>, args: &[Value<'a>]) -> R<'a> {
    ev.charge_copy(list)?;
    let items: Vec<Value<'a>> = match list {
        Value::List(l) => l.iter().map(Value::scalar).collect(),
        Value::Node(n) => n.items().iter().map(|i| Value::Node(i).scalar()).collect(),
        _ => Vec::new(),
    };
    ev.spend(items.len() as u64)?;
    let cmp =
        |ev: &mut Eval<'_, 'a>, a: &Value<'a>, b: &Value<'a>| -> Result<Ordering, EvalError> {
            ev.spend(1)?;
            if let Some(o) = super::eval::numeric_cmp(a, b) {
                return o.ok_or_else(|| EvalError::Error("NaN is not comparable".into()));
            }
            match (a, b) {
                (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
                (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
                (Value::Bytes(x), Value::Bytes(y)) => Ok(x.cmp(y)),
                (Value::Duration(x), Value::Duration(y)) => Ok(x.cmp(y)),
                (Value::Timestamp(x), Value::Timestamp(y)) => Ok(x.cmp(y)),
                _ => no_overload(func, &[a, b]),
            }
        };
    match (func, args) {
        ("join", []) | ("join", [Value::String(_)]) => {
            let sep = match args.first() {
                Some(Value::String(s)) => s.as_str(),
                _ => "",
            };
            let mut parts = Vec::with_capacity(items.len());
            for i in &items {
                match i {
                    Value::String(s) => parts.push(s.as_str()),
                    other => return no_overload("join", &[other]),
                }
            }
            // The separator is written between every two parts: a long one over a long list
            // is far larger than either, so the result is paid for before it is built.
            let seps = parts.len().saturating_sub(1).saturating_mul(sep.len());
            let total = parts
                .iter()
                .fold(seps, |acc, p| acc.saturating_add(p.len()));
            ev.charge_output(total)?;
            Ok(Value::String(parts.join(sep)))
        }
        ("isSorted", []) => {
            for w in items.windows(2) {
                if cmp(ev, &w[0], &w[1])? == Ordering::Greater {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        }
        ("sum", []) => {
            let mut acc = Value::Int(0);
            for (k, i) in items.iter().enumerate() {
                acc = match (&acc, i) {
                    (_, x)
                        if k == 0
                            && matches!(
                                x,
                                Value::Int(_)
                                    | Value::Uint(_)
                                    | Value::Double(_)
                                    | Value::Duration(_)
                            ) =>
                    {
                        x.clone()
                    }
                    (Value::Int(a), Value::Int(b)) => {
                        Value::Int(a.checked_add(*b).ok_or_else(overflow)?)
                    }
                    (Value::Uint(a), Value::Uint(b)) => {
                        Value::Uint(a.checked_add(*b).ok_or_else(overflow)?)
                    }
                    (Value::Double(a), Value::Double(b)) => Value::Double(a + b),
                    (Value::Duration(a), Value::Duration(b)) => {
                        Value::Duration(a.checked_add(*b).ok_or_else(overflow)?)
                    }
                    (a, b) => return no_overload("sum", &[a, b]),
                };
            }
            Ok(acc)
        }
        ("min" | "max", []) => {
            let Some(first) = items.first() else {
                return err(format!("{func} called on empty list"));
            };
            let mut best = first.clone();
            for i in &items[1..] {
                let o = cmp(ev, i, &best)?;
                if (func == "min" && o == Ordering::Less)
                    || (func == "max" && o == Ordering::Greater)
                {
                    best = i.clone();
                }
            }
            Ok(best)
        }
        ("indexOf" | "lastIndexOf", [x]) => {
            let x = x.scalar();
            let mut found = -1i64;
            for (k, i) in items.iter().enumerate() {
                if ev.equals(i, &x)? {
                    found = k as i64;
                    if func == "indexOf" {
                        break;
                    }
                }
            }
            Ok(Value::Int(found))
        }
        ("join" | "isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", _) => {
            let mut refs = vec![list];
            refs.extend(args.iter());
            no_overload(func, &refs)
        }
        _ => unsupported(format!("function {func}")),
    }
}

fn sets<'a>(ev: &mut Eval<'_, 'a>, func: &str, a: &Value<'a>, b: &Value<'a>) -> R<'a> {
    let list = |v: &Value<'a>| -> Vec<Value<'a>> {
        match v {
            Value::List(l) => l.clone(),
            Value::Node(n) => n.items().iter().map(Value::Node).collect(),
            _ => Vec::new(),
        }
    };
    ev.charge_copy(a)?;
    ev.charge_copy(b)?;
    let (xs, ys) = (list(a), list(b));
    ev.spend((xs.len() as u64).saturating_mul(ys.len() as u64))?;
    let contains =
        |ev: &mut Eval<'_, 'a>, xs: &[Value<'a>], ys: &[Value<'a>]| -> Result<bool, EvalError> {
            for y in ys {
                let mut hit = false;
                for x in xs {
                    if ev.equals(x, y)? {
                        hit = true;
                        break;
                    }
                }
                if !hit {
                    return Ok(false);
                }
            }
            Ok(true)
        };
    Ok(Value::Bool(match func {
        "sets.contains" => contains(ev, &xs, &ys)?,
        "sets.equivalent" => contains(ev, &xs, &ys)? && contains(ev, &ys, &xs)?,
        _ => {
            let mut any = false;
            'outer: for y in &ys {
                for x in &xs {
                    if ev.equals(x, y)? {
                        any = true;
                        break 'outer;
                    }
                }
            }
            any
        }
    }))
}

fn ext_method<'a>(func: &str, e: &Ext, args: &[Value<'a>]) -> R<'a> {
    match (e, func, args) {
        (Ext::Url(u), "getScheme", []) => Ok(Value::String(u.scheme.clone())),
        (Ext::Url(u), "getHost", []) => Ok(Value::String(u.host.clone())),
        (Ext::Url(u), "getHostname", []) => Ok(Value::String(u.hostname())),
        (Ext::Url(u), "getPort", []) => Ok(Value::String(u.port())),
        (Ext::Url(u), "getEscapedPath", []) => Ok(Value::String(u.escaped_path())),
        (Ext::Url(u), "getQuery", []) => Ok(u.query()),
        (Ext::Ip(ip), "family", []) => Ok(Value::Int(if ip.is_ipv4() { 4 } else { 6 })),
        (Ext::Ip(ip), "isUnspecified", []) => Ok(Value::Bool(ip.is_unspecified())),
        (Ext::Ip(ip), "isLoopback", []) => Ok(Value::Bool(ip.is_loopback())),
        (Ext::Ip(ip), "isLinkLocalMulticast", []) => Ok(Value::Bool(match ip {
            IpAddr::V4(v) => v.octets()[..3] == [224, 0, 0],
            IpAddr::V6(v) => v.segments()[0] & 0xff0f == 0xff02,
        })),
        (Ext::Ip(ip), "isLinkLocalUnicast", []) => Ok(Value::Bool(match ip {
            IpAddr::V4(v) => v.octets()[..2] == [169, 254],
            IpAddr::V6(v) => v.segments()[0] & 0xffc0 == 0xfe80,
        })),
        (Ext::Ip(ip), "isGlobalUnicast", []) => Ok(Value::Bool(is_global_unicast(ip))),
        (Ext::Cidr(ip, _), "ip", []) => Ok(Value::Ext(Ext::Ip(*ip))),
        (Ext::Cidr(_, len), "prefixLength", []) => Ok(Value::Int(i64::from(*len))),
        (Ext::Cidr(ip, len), "masked", []) => Ok(Value::Ext(Ext::Cidr(mask(ip, *len), *len))),
        (Ext::Cidr(net, len), "containsIP", [arg]) => {
            let ip = match arg {
                Value::Ext(Ext::Ip(ip)) => *ip,
                Value::String(s) => parse_ip(s)?,
                _ => return no_overload(func, &[&Value::Ext(e.clone()), arg]),
            };
            Ok(Value::Bool(cidr_contains(net, *len, &ip, bits(&ip))))
        }
        (Ext::Cidr(net, len), "containsCIDR", [arg]) => {
            let (ip, l) = match arg {
                Value::Ext(Ext::Cidr(ip, l)) => (*ip, *l),
                Value::String(s) => parse_cidr(s)?,
                _ => return no_overload(func, &[&Value::Ext(e.clone()), arg]),
            };
            Ok(Value::Bool(l >= *len && cidr_contains(net, *len, &ip, l)))
        }
        (Ext::Quantity(q), _, _) => quantity_method(func, q, args),
        _ => unsupported(format!("function {func} on {}", e.type_name())),
    }
}

// ---- ip and cidr (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go, v1.33) ----

/// `ip()` accepts what Go's `netip.ParseAddr` does, but not IPv4-mapped IPv6 addresses nor
/// zones (ip.go).
fn parse_ip(s: &str) -> Result<IpAddr, EvalError> {
    if s.contains('%') {
        return err(format!("IP address with zone value is not allowed: {s:?}"));
    }
    let ip: IpAddr = s.parse().map_err(|_| {
        EvalError::Error(format!(
            "IP Address {s:?} parse error during conversion from string"
        ))
    })?;
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return err(format!("IPv4-mapped IPv6 address {s:?} is not allowed"));
        }
    }
    Ok(ip)
}

fn parse_cidr(s: &str) -> Result<(IpAddr, u8), EvalError> {
    let bad = || {
        EvalError::Error(format!(
            "network address parse error during conversion from string: {s:?}"
        ))
    };
    let (addr, len) = s.split_once('/').ok_or_else(bad)?;
    let ip = parse_ip(addr).map_err(|_| bad())?;
    if len.is_empty()
        || len.len() > 3
        || !len.bytes().all(|c| c.is_ascii_digit())
        || (len.len() > 1 && len.starts_with('0'))
    {
        return Err(bad());
    }
    let len: u8 = len.parse().map_err(|_| bad())?;
    if len > bits(&ip) {
        return Err(bad());
    }
    Ok((ip, len))
}

fn bits(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

fn as_u128(ip: &IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u128::from(u32::from(*v)),
        IpAddr::V6(v) => u128::from(*v),
    }
}

fn mask(ip: &IpAddr, len: u8) -> IpAddr {
    let total = bits(ip);
    let keep = if len == 0 {
        0
    } else {
        u128::MAX << (u32::from(total - len.min(total)))
    };
    let v = as_u128(ip) & keep;
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from((v & 0xffff_ffff) as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
    }
}

fn cidr_contains(net: &IpAddr, len: u8, ip: &IpAddr, _ip_len: u8) -> bool {
    net.is_ipv4() == ip.is_ipv4() && mask(net, len) == mask(ip, len)
}

fn is_global_unicast(ip: &IpAddr) -> bool {
    // Go's netip.Addr.IsGlobalUnicast: not unspecified, loopback, multicast, link-local, nor
    // the IPv4 broadcast address.
    match ip {
        IpAddr::V4(v) => {
            !(v.is_unspecified()
                || v.is_loopback()
                || v.is_multicast()
                || v.is_broadcast()
                || v.octets()[..2] == [169, 254])
        }
        IpAddr::V6(v) => {
            !(v.is_unspecified()
                || v.is_loopback()
                || v.is_multicast()
                || v.segments()[0] & 0xffc0 == 0xfe80)
        }
    }
}

// ---- url (k8s.io/apiserver/pkg/cel/library/urls.go, v1.33; Go's url.ParseRequestURI) ----

#[derive(Clone, Debug, PartialEq)]
pub struct Url {
    raw: String,
    scheme: String,
    /// Host with port, as written (`Host` of Go's url.URL).
    host: String,
    path: String,
    raw_query: String,
}

impl Url {
    /// urls.go checks the text with `url.ParseRequestURI` (which keeps a `#fragment` in the
    /// path or query), then takes the parts from `url.Parse` (which splits it off).
    fn parse(s: &str) -> Result<Url, EvalError> {
        Url::parse_request_uri(s)?;
        let without_fragment = s.split_once('#').map_or(s, |(a, _)| a);
        let mut u = Url::parse_request_uri(without_fragment)?;
        u.raw = s.to_string();
        Ok(u)
    }

    fn parse_request_uri(s: &str) -> Result<Url, EvalError> {
        let bad = |why: &str| {
            EvalError::Error(format!(
                "URL parse error during conversion from string: {why}"
            ))
        };
        if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err(bad("invalid control character in URL"));
        }
        let mut rest = s;
        let mut scheme = String::new();
        if let Some(colon) = rest.find(':') {
            let cand = &rest[..colon];
            let valid = cand.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
                && cand
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
            if valid {
                scheme = cand.to_ascii_lowercase();
                rest = &rest[colon + 1..];
            } else if colon == 0 {
                return Err(bad("missing protocol scheme"));
            }
        }
        let (rest, raw_query) = match rest.split_once('?') {
            Some((a, q)) => (a, q.to_string()),
            None => (rest, String::new()),
        };
        if !rest.starts_with('/') {
            if !scheme.is_empty() {
                // An opaque URL such as `mailto:a@b`.
                return Ok(Url {
                    raw: s.into(),
                    scheme,
                    host: String::new(),
                    path: String::new(),
                    raw_query,
                });
            }
            return Err(bad("invalid URI for request"));
        }
        let (host, path) =
            if !scheme.is_empty() && rest.starts_with("//") && !rest.starts_with("///") {
                let auth_end = rest[2..].find('/').map_or(rest.len(), |i| i + 2);
                let authority = &rest[2..auth_end];
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                validate_host(host).map_err(|w| bad(&w))?;
                (host.to_string(), &rest[auth_end..])
            } else {
                (String::new(), rest)
            };
        unescape(path).ok_or_else(|| bad("invalid URL escape"))?;
        Ok(Url {
            raw: s.into(),
            scheme,
            host,
            path: path.to_string(),
            raw_query,
        })
    }

    fn split_host(&self) -> (&str, &str) {
        let h = self.host.as_str();
        if let Some(inner) = h.strip_prefix('[') {
            if let Some((addr, tail)) = inner.split_once(']') {
                return (addr, tail.strip_prefix(':').unwrap_or(""));
            }
        }
        match h.rsplit_once(':') {
            Some((a, p)) => (a, p),
            None => (h, ""),
        }
    }

    fn hostname(&self) -> String {
        self.split_host().0.to_string()
    }

    fn port(&self) -> String {
        self.split_host().1.to_string()
    }

    /// Go's `EscapedPath`: the path as written when it is a valid encoding, else escaped.
    fn escaped_path(&self) -> String {
        let valid = self
            .path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@[]/%".contains(&b));
        if valid {
            return self.path.clone();
        }
        let decoded = unescape(&self.path).unwrap_or_default();
        let mut out = String::new();
        for b in decoded {
            if b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }

    /// Go's `url.ParseQuery`, keeping the pairs it can read. Keys are found by a map, not a
    /// search: a query can hold a hundred thousand of them.
    fn query<'a>(&self) -> Value<'a> {
        let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = Default::default();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let dec =
                |t: &str| unescape(&t.replace('+', " ")).and_then(|b| String::from_utf8(b).ok());
            let (Some(k), Some(v)) = (dec(k), dec(v)) else {
                continue;
            };
            match at.get(&k).and_then(|&i| out.get_mut(i)) {
                Some((_, Value::List(vals))) => vals.push(Value::String(v)),
                _ => {
                    at.insert(k.clone(), out.len());
                    out.push((Value::String(k), Value::List(vec![Value::String(v)])));
                }
            }
        }
        Value::Map(out)
    }
}

fn validate_host(host: &str) -> Result<(), String> {
    if let Some(inner) = host.strip_prefix('[') {
        let Some((_, tail)) = inner.split_once(']') else {
            return Err("missing ']' in host".into());
        };
        if !tail.is_empty() && !valid_port(tail) {
            return Err(format!("invalid port {tail:?} after host"));
        }
        return Ok(());
    }
    if let Some((_, port)) = host.rsplit_once(':') {
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("invalid port \":{port}\" after host"));
        }
    }
    if host
        .bytes()
        .any(|b| !(b.is_ascii_alphanumeric() || b >= 0x80 || b"-_.~!$&'()*+,;=:%<>\"".contains(&b)))
    {
        return Err("invalid character in host name".into());
    }
    Ok(())
}

fn valid_port(p: &str) -> bool {
    p.strip_prefix(':')
        .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
}

fn unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

// ---- quantity (k8s.io/apiserver/pkg/cel/library/quantity.go; apimachinery resource.Quantity) ----

/// A quantity as an exact rational `num / 10^scale`.
#[derive(Clone, Debug)]
pub struct Quantity {
    raw: String,
    num: i128,
    scale: u32,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Some(Ordering::Equal)
    }
}

/// Digits of a quantity are bounded so that every value fits `i128` with room for aligning
/// two of them.
const QUANTITY_DIGITS: usize = 18;

impl Quantity {
    /// `resource.ParseQuantity`: a signed decimal number, then a binary-SI (`Ki`…`Ei`),
    /// decimal-SI (`n u m "" k M G T P E`) or decimal-exponent (`e3`, `E-2`) suffix.
    fn parse(s: &str) -> Result<Quantity, EvalError> {
        let bad = || {
            EvalError::Error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into())
        };
        let (neg, body) = match s.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let num_end = body
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(body.len());
        let (number, suffix) = body.split_at(num_end);
        if number.is_empty() || number.matches('.').count() > 1 || number == "." {
            return Err(bad());
        }
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        let whole = whole.trim_start_matches('0');
        let frac_t = frac.trim_end_matches('0');
        if whole.len() + frac_t.len() > QUANTITY_DIGITS {
            return unsupported("quantity with more than 18 significant digits");
        }
        let digits = format!("{whole}{frac_t}");
        let mut num: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| bad())?
        };
        let mut scale = frac_t.len() as i64;
        let (mul, exp10): (i128, i64) = match suffix {
            "" => (1, 0),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            _ => {
                let e = suffix.strip_prefix(['e', 'E']).ok_or_else(bad)?;
                let ds = e.strip_prefix(['+', '-']).unwrap_or(e);
                if ds.is_empty() || ds.len() > 4 || !ds.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let v: i64 = e.parse().map_err(|_| bad())?;
                (1, v)
            }
        };
        num = num.checked_mul(mul).ok_or_else(bad)?;
        scale -= exp10;
        if scale < 0 {
            let up = u32::try_from(-scale).map_err(|_| bad())?;
            num = 10i128
                .checked_pow(up)
                .and_then(|p| num.checked_mul(p))
                .ok_or_else(|| EvalError::Unsupported("quantity out of range".into()))?;
            scale = 0;
        }
        if scale > 40 {
            return unsupported("quantity out of range");
        }
        Ok(Quantity {
            raw: s.to_string(),
            num: if neg { -num } else { num },
            scale: scale as u32,
        })
    }

    fn aligned(&self, other: &Quantity) -> Option<(i128, i128, u32)> {
        let s = self.scale.max(other.scale);
        let a = 10i128.checked_pow(s - self.scale)?.checked_mul(self.num)?;
        let b = 10i128
            .checked_pow(s - other.scale)?
            .checked_mul(other.num)?;
        Some((a, b, s))
    }

    fn cmp(&self, other: &Quantity) -> Option<Ordering> {
        let (a, b, _) = self.aligned(other)?;
        Some(a.cmp(&b))
    }

    fn from_int(i: i64) -> Quantity {
        Quantity {
            raw: i.to_string(),
            num: i128::from(i),
            scale: 0,
        }
    }

    fn render(num: i128, scale: u32) -> String {
        if scale == 0 {
            return num.to_string();
        }
        // resource.Quantity canonicalises to a decimal-SI suffix; a plain decimal is exact and
        // parses back to the same quantity.
        let neg = num < 0;
        let digits = num.unsigned_abs().to_string();
        let s = scale as usize;
        let (w, f) = if digits.len() > s {
            (
                digits[..digits.len() - s].to_string(),
                digits[digits.len() - s..].to_string(),
            )
        } else {
            (
                "0".to_string(),
                format!("{}{}", "0".repeat(s - digits.len()), digits),
            )
        };
        let f = f.trim_end_matches('0');
        let body = if f.is_empty() { w } else { format!("{w}.{f}") };
        if neg {
            format!("-{body}")
        } else {
            body
        }
    }
}

fn quantity_method<'a>(func: &str, q: &Quantity, args: &[Value<'a>]) -> R<'a> {
    // add and sub also take an int; the comparisons take a quantity only (quantity.go).
    let int_ok = matches!(func, "add" | "sub");
    let other = |v: &Value<'a>| -> Result<Quantity, EvalError> {
        match v {
            Value::Ext(Ext::Quantity(o)) => Ok(o.clone()),
            Value::Int(i) if int_ok => Ok(Quantity::from_int(*i)),
            _ => no_overload(func, &[v]),
        }
    };
    let range = || EvalError::Unsupported("quantity arithmetic out of range".into());
    match (func, args) {
        ("sign", []) => Ok(Value::Int(q.num.signum() as i64)),
        ("isInteger", []) => Ok(Value::Bool(
            q.num % 10i128.checked_pow(q.scale).unwrap_or(i128::MAX) == 0
                && i64::try_from(q.num / 10i128.checked_pow(q.scale).unwrap_or(1)).is_ok(),
        )),
        ("asInteger", []) => {
            let p = 10i128.checked_pow(q.scale).ok_or_else(range)?;
            if q.num % p != 0 {
                return err("cannot convert value to integer");
            }
            i64::try_from(q.num / p)
                .map(Value::Int)
                .map_err(|_| EvalError::Error("cannot convert value to integer".into()))
        }
        ("asApproximateFloat", []) => Ok(Value::Double(q.num as f64 / 10f64.powi(q.scale as i32))),
        ("compareTo", [o]) => {
            let o = other(o)?;
            let c = q.cmp(&o).ok_or_else(range)?;
            Ok(Value::Int(match c {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            }))
        }
        ("isLessThan" | "isGreaterThan", [o]) => {
            let o = other(o)?;
            let c = q.cmp(&o).ok_or_else(range)?;
            Ok(Value::Bool(if func == "isLessThan" {
                c == Ordering::Less
            } else {
                c == Ordering::Greater
            }))
        }
        ("add" | "sub", [o]) => {
            let o = other(o)?;
            let (a, b, s) = q.aligned(&o).ok_or_else(range)?;
            let n = if func == "add" {
                a.checked_add(b)
            } else {
                a.checked_sub(b)
            }
            .ok_or_else(range)?;
            Ok(Value::Ext(Ext::Quantity(Quantity {
                raw: Quantity::render(n, s),
                num: n,
                scale: s,
            })))
        }
        _ => unsupported(format!("function {func} on kubernetes.Quantity")),
    }
}
