//! Sprig's date functions (`date.go` of Sprig v3.3.0), made deterministic.
//!
//! A lint must give the same answer twice, so "now" is the fixed instant [`NOW_UNIX`],
//! 2024-01-01T00:00:00Z, and the local time zone is UTC (as in most containers). Values carry
//! no Go types here, so a `time.Time` is the text Go prints for one,
//! `2024-01-01 00:00:00 +0000 UTC`: it prints the same, and the date functions read it back.
//! An integer stands for Unix seconds (Go accepts `int` and `int64` there); any other value
//! means "now", as in Sprig. Zones other than UTC need the zone database and are refused.

use super::{arity, nth, str_arg};
use crate::render::template::value::Val;
use serde_json::Value;

/// The instant `now` returns: 2024-01-01T00:00:00Z.
pub(super) const NOW_UNIX: i64 = 1_704_067_200;

const NANOS: i128 = 1_000_000_000;
const STRING_LAYOUT: &str = "2006-01-02 15:04:05.999999999 -0700 MST";

/// An instant: seconds and nanoseconds since the Unix epoch, in UTC.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Instant {
    secs: i64,
    nanos: u32,
}

impl Instant {
    fn unix(secs: i64) -> Instant {
        Instant { secs, nanos: 0 }
    }

    fn total_nanos(self) -> i128 {
        i128::from(self.secs) * NANOS + i128::from(self.nanos)
    }

    fn from_nanos(n: i128) -> Option<Instant> {
        Some(Instant {
            secs: i64::try_from(n.div_euclid(NANOS)).ok()?,
            nanos: u32::try_from(n.rem_euclid(NANOS)).ok()?,
        })
    }
}

pub(super) fn call_time<'a>(name: &str, args: &[Val<'a>]) -> Result<Option<Val<'a>>, String> {
    let val = match name {
        "now" => {
            arity(args, 0)?;
            time_val(Instant::unix(NOW_UNIX))
        }
        "date" | "dateInZone" | "date_in_zone" => {
            let zoned = name != "date";
            arity(args, if zoned { 3 } else { 2 })?;
            let layout = str_arg(args, 0)?;
            if zoned {
                check_zone(str_arg(args, 2)?)?;
            }
            Val::str(format(layout, instant_of(nth(args, 1)?)))
        }
        "htmlDate" | "htmlDateInZone" => {
            let zoned = name != "htmlDate";
            arity(args, if zoned { 2 } else { 1 })?;
            if zoned {
                check_zone(str_arg(args, 1)?)?;
            }
            Val::str(format("2006-01-02", instant_of(nth(args, 0)?)))
        }
        "unixEpoch" => {
            arity(args, 1)?;
            Val::str(time_arg(args, 0)?.secs.to_string())
        }
        "dateModify" | "date_modify" | "mustDateModify" | "must_date_modify" => {
            arity(args, 2)?;
            let t = time_arg(args, 1)?;
            match parse_duration(str_arg(args, 0)?) {
                Ok(d) => time_val(
                    Instant::from_nanos(t.total_nanos() + d)
                        .ok_or_else(|| "time out of range".to_string())?,
                ),
                Err(e) if name.starts_with("must") => return Err(e),
                Err(_) => time_val(t),
            }
        }
        "ago" => {
            arity(args, 1)?;
            let t = instant_of(nth(args, 0)?);
            let since = Instant::unix(NOW_UNIX).total_nanos() - t.total_nanos();
            Val::str(duration_string(round_to_second(since)))
        }
        "duration" => {
            arity(args, 1)?;
            let secs: i64 = match nth(args, 0)?.value() {
                Some(Value::String(s)) => s.parse().unwrap_or(0),
                Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
                _ => 0,
            };
            Val::str(duration_string(i128::from(secs) * NANOS))
        }
        "durationRound" => {
            arity(args, 1)?;
            let d = match nth(args, 0)?.value() {
                Some(Value::String(s)) => match read_time(s) {
                    Some(t) => Instant::unix(NOW_UNIX).total_nanos() - t.total_nanos(),
                    None => parse_duration(s).unwrap_or(0),
                },
                Some(Value::Number(n)) => i128::from(n.as_i64().unwrap_or(0)),
                _ => 0,
            };
            Val::str(duration_round(d))
        }
        "toDate" | "mustToDate" => {
            arity(args, 2)?;
            match parse(str_arg(args, 0)?, str_arg(args, 1)?) {
                Ok(t) => time_val(t),
                Err(e) if name == "mustToDate" => return Err(e),
                // Go's zero time.
                Err(_) => time_val(Instant {
                    secs: -62_135_596_800,
                    nanos: 0,
                }),
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

fn time_val<'a>(t: Instant) -> Val<'a> {
    Val::str(format(STRING_LAYOUT, t))
}

fn read_time(s: &str) -> Option<Instant> {
    parse(STRING_LAYOUT, s).ok()
}

/// A `time.Time` parameter: Go refuses anything else.
fn time_arg(args: &[Val], i: usize) -> Result<Instant, String> {
    let v = nth(args, i)?;
    let got = match v.value() {
        Some(Value::String(s)) => match read_time(s) {
            Some(t) => return Ok(t),
            None => "string",
        },
        Some(other) => crate::render::template::value::go_type(other),
        None => return Err("invalid value; expected time.Time".to_string()),
    };
    Err(format!(
        "wrong type for value; expected time.Time; got {got}"
    ))
}

/// Sprig's `interface{}` date: a time, Unix seconds, or else now.
fn instant_of(v: &Val) -> Instant {
    match v.value() {
        Some(Value::String(s)) => read_time(s).unwrap_or(Instant::unix(NOW_UNIX)),
        Some(Value::Number(n)) => n.as_i64().map_or(Instant::unix(NOW_UNIX), Instant::unix),
        _ => Instant::unix(NOW_UNIX),
    }
}

fn check_zone(zone: &str) -> Result<(), String> {
    if matches!(zone, "" | "UTC" | "Local") {
        Ok(())
    } else {
        Err(format!("time zone {zone:?} is not supported offline"))
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The elements of a Go layout (`time/format.go`'s `nextStdChunk`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Lowerpm,
    TZ,
    /// `Z07:00`-style (`true`) or `-07:00`-style (`false`), with its shape.
    Offset(bool, Shape),
    /// Fractional seconds: the digit count, and whether trailing zeros go (`.999`).
    Frac(usize, bool),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Hours,
    HhMm,
    HhColonMm,
    HhMmSs,
    HhColonMmColonSs,
}

enum Chunk<'l> {
    Lit(&'l str),
    Std(Std),
}

fn chunks(layout: &str) -> Vec<Chunk<'_>> {
    let b = layout.as_bytes();
    let mut out = Vec::new();
    let mut lit_start = 0;
    let mut i = 0;
    while i < b.len() {
        let rest = layout.get(i..).unwrap_or("");
        let found: Option<(Std, usize)> = match b.get(i) {
            Some(b'J') if rest.starts_with("January") => Some((Std::LongMonth, 7)),
            Some(b'J') if rest.starts_with("Jan") => Some((Std::Month, 3)),
            Some(b'M') if rest.starts_with("Monday") => Some((Std::LongWeekDay, 6)),
            Some(b'M') if rest.starts_with("Mon") => Some((Std::WeekDay, 3)),
            Some(b'M') if rest.starts_with("MST") => Some((Std::TZ, 3)),
            Some(b'0') if rest.starts_with("002") => Some((Std::ZeroYearDay, 3)),
            Some(b'0') => match b.get(i + 1) {
                Some(b'1') => Some((Std::ZeroMonth, 2)),
                Some(b'2') => Some((Std::ZeroDay, 2)),
                Some(b'3') => Some((Std::ZeroHour12, 2)),
                Some(b'4') => Some((Std::ZeroMinute, 2)),
                Some(b'5') => Some((Std::ZeroSecond, 2)),
                Some(b'6') => Some((Std::Year, 2)),
                _ => None,
            },
            Some(b'1') if rest.starts_with("15") => Some((Std::Hour, 2)),
            Some(b'1') => Some((Std::NumMonth, 1)),
            Some(b'2') if rest.starts_with("2006") => Some((Std::LongYear, 4)),
            Some(b'2') => Some((Std::Day, 1)),
            Some(b'_') if rest.starts_with("__2") => Some((Std::UnderYearDay, 3)),
            Some(b'_') if rest.starts_with("_2") && !rest.starts_with("_2006") => {
                Some((Std::UnderDay, 2))
            }
            Some(b'3') => Some((Std::Hour12, 1)),
            Some(b'4') => Some((Std::Minute, 1)),
            Some(b'5') => Some((Std::Second, 1)),
            Some(b'P') if rest.starts_with("PM") => Some((Std::PM, 2)),
            Some(b'p') if rest.starts_with("pm") => Some((Std::Lowerpm, 2)),
            Some(c @ (b'-' | b'Z')) => {
                let z = *c == b'Z';
                let body = rest.get(1..).unwrap_or("");
                [
                    ("070000", Shape::HhMmSs),
                    ("07:00:00", Shape::HhColonMmColonSs),
                    ("0700", Shape::HhMm),
                    ("07:00", Shape::HhColonMm),
                    ("07", Shape::Hours),
                ]
                .iter()
                .find(|(p, _)| body.starts_with(p))
                .map(|(p, shape)| (Std::Offset(z, *shape), p.len() + 1))
            }
            Some(b'.' | b',') => {
                let digit = b.get(i + 1).copied();
                if matches!(digit, Some(b'0' | b'9')) {
                    let run = b
                        .get(i + 1..)
                        .unwrap_or(&[])
                        .iter()
                        .take_while(|&&c| Some(c) == digit)
                        .count();
                    let after = b.get(i + 1 + run);
                    if after.is_some_and(u8::is_ascii_digit) {
                        None
                    } else {
                        Some((Std::Frac(run, digit == Some(b'9')), run + 1))
                    }
                } else {
                    None
                }
            }
            _ => None,
        };
        match found {
            Some((std, len)) => {
                if lit_start < i {
                    out.push(Chunk::Lit(layout.get(lit_start..i).unwrap_or("")));
                }
                out.push(Chunk::Std(std));
                i += len;
                lit_start = i;
            }
            None => i += 1,
        }
    }
    if lit_start < b.len() {
        out.push(Chunk::Lit(layout.get(lit_start..).unwrap_or("")));
    }
    out
}

/// Go's `Time.Format` in UTC.
fn format(layout: &str, t: Instant) -> String {
    let days = t.secs.div_euclid(86_400);
    let secs_of_day = t.secs.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    let yday = days - days_from_civil(year, 1, 1) + 1;
    let (hour, minute, second) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    let month_name = MONTHS
        .get(usize::try_from(month - 1).unwrap_or(0))
        .copied()
        .unwrap_or("");
    let day_name = DAYS
        .get(usize::try_from((days + 4).rem_euclid(7)).unwrap_or(0))
        .copied()
        .unwrap_or("");
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    let mut out = String::new();
    for chunk in chunks(layout) {
        let std = match chunk {
            Chunk::Lit(s) => {
                out.push_str(s);
                continue;
            }
            Chunk::Std(std) => std,
        };
        let piece = match std {
            Std::LongMonth => month_name.to_string(),
            Std::Month => month_name.get(..3).unwrap_or("").to_string(),
            Std::NumMonth => month.to_string(),
            Std::ZeroMonth => format!("{month:02}"),
            Std::LongWeekDay => day_name.to_string(),
            Std::WeekDay => day_name.get(..3).unwrap_or("").to_string(),
            Std::Day => day.to_string(),
            Std::UnderDay => format!("{day:>2}"),
            Std::ZeroDay => format!("{day:02}"),
            Std::UnderYearDay => format!("{yday:>3}"),
            Std::ZeroYearDay => format!("{yday:03}"),
            Std::Hour => format!("{hour:02}"),
            Std::Hour12 => hour12.to_string(),
            Std::ZeroHour12 => format!("{hour12:02}"),
            Std::Minute => minute.to_string(),
            Std::ZeroMinute => format!("{minute:02}"),
            Std::Second => second.to_string(),
            Std::ZeroSecond => format!("{second:02}"),
            Std::LongYear => format!("{year:04}"),
            Std::Year => format!("{:02}", year.rem_euclid(100)),
            Std::PM => if hour >= 12 { "PM" } else { "AM" }.to_string(),
            Std::Lowerpm => if hour >= 12 { "pm" } else { "am" }.to_string(),
            Std::TZ => "UTC".to_string(),
            Std::Offset(true, _) => "Z".to_string(),
            Std::Offset(false, shape) => match shape {
                Shape::Hours => "+00",
                Shape::HhMm => "+0000",
                Shape::HhColonMm => "+00:00",
                Shape::HhMmSs => "+000000",
                Shape::HhColonMmColonSs => "+00:00:00",
            }
            .to_string(),
            Std::Frac(digits, trim) => {
                let all = format!("{:09}", t.nanos);
                let mut kept = all.get(..digits.min(9)).unwrap_or("").to_string();
                if trim {
                    kept = kept.trim_end_matches('0').to_string();
                    if kept.is_empty() {
                        continue;
                    }
                }
                format!(".{kept}")
            }
        };
        out.push_str(&piece);
    }
    out
}

/// Go's `time.Parse` for a UTC result; offsets in the text are applied.
fn parse(layout: &str, value: &str) -> Result<Instant, String> {
    let fail = |elem: &str, rest: &str| {
        format!(
            "parsing time {:?} as {:?}: cannot parse {:?} as {:?}",
            value, layout, rest, elem
        )
    };
    let (mut year, mut month, mut day) = (1i64, 1i64, 1i64);
    let (mut hour, mut minute, mut second, mut nanos) = (0i64, 0i64, 0i64, 0u32);
    let (mut pm, mut pm_set, mut offset) = (false, false, 0i64);
    let mut rest = value;
    let number = |rest: &mut &str, min: usize, max: usize, elem: &str| -> Result<i64, String> {
        let digits = rest
            .bytes()
            .take(max)
            .take_while(u8::is_ascii_digit)
            .count();
        if digits < min {
            return Err(fail(elem, rest));
        }
        let n = rest
            .get(..digits)
            .unwrap_or("")
            .parse()
            .map_err(|_| fail(elem, rest))?;
        *rest = rest.get(digits..).unwrap_or("");
        Ok(n)
    };
    for chunk in chunks(layout) {
        match chunk {
            Chunk::Lit(lit) => {
                rest = rest.strip_prefix(lit).ok_or_else(|| fail(lit, rest))?;
            }
            Chunk::Std(std) => match std {
                Std::LongYear => year = number(&mut rest, 4, 4, "2006")?,
                Std::Year => year = 1900 + number(&mut rest, 2, 2, "06")?,
                Std::ZeroMonth => month = number(&mut rest, 2, 2, "01")?,
                Std::NumMonth => month = number(&mut rest, 1, 2, "1")?,
                Std::ZeroDay => day = number(&mut rest, 2, 2, "02")?,
                Std::Day => day = number(&mut rest, 1, 2, "2")?,
                Std::UnderDay => {
                    rest = rest.strip_prefix(' ').unwrap_or(rest);
                    day = number(&mut rest, 1, 2, "_2")?;
                }
                Std::Hour => hour = number(&mut rest, 2, 2, "15")?,
                Std::Hour12 => hour = number(&mut rest, 1, 2, "3")?,
                Std::ZeroHour12 => hour = number(&mut rest, 2, 2, "03")?,
                Std::Minute => minute = number(&mut rest, 1, 2, "4")?,
                Std::ZeroMinute => minute = number(&mut rest, 2, 2, "04")?,
                Std::Second => second = number(&mut rest, 1, 2, "5")?,
                Std::ZeroSecond => second = number(&mut rest, 2, 2, "05")?,
                Std::LongMonth | Std::Month => {
                    let long = std == Std::LongMonth;
                    let found = MONTHS.iter().position(|m| {
                        let name = if long { m } else { m.get(..3).unwrap_or("") };
                        rest.get(..name.len())
                            .is_some_and(|head| head.eq_ignore_ascii_case(name))
                    });
                    let i =
                        found.ok_or_else(|| fail(if long { "January" } else { "Jan" }, rest))?;
                    let len = if long {
                        MONTHS.get(i).map_or(0, |m| m.len())
                    } else {
                        3
                    };
                    month = i64::try_from(i).unwrap_or(0) + 1;
                    rest = rest.get(len..).unwrap_or("");
                }
                Std::LongWeekDay | Std::WeekDay => {
                    let long = std == Std::LongWeekDay;
                    let len = DAYS
                        .iter()
                        .map(|d| if long { d } else { d.get(..3).unwrap_or("") })
                        .find(|name| {
                            rest.get(..name.len())
                                .is_some_and(|head| head.eq_ignore_ascii_case(name))
                        })
                        .map(|name| name.len())
                        .ok_or_else(|| fail(if long { "Monday" } else { "Mon" }, rest))?;
                    rest = rest.get(len..).unwrap_or("");
                }
                Std::PM | Std::Lowerpm => {
                    let head = rest.get(..2).unwrap_or("");
                    pm = head.eq_ignore_ascii_case("PM");
                    if !pm && !head.eq_ignore_ascii_case("AM") {
                        return Err(fail("PM", rest));
                    }
                    pm_set = true;
                    rest = rest.get(2..).unwrap_or("");
                }
                Std::TZ => {
                    let len = rest.bytes().take_while(u8::is_ascii_uppercase).count();
                    if len < 3 {
                        return Err(fail("MST", rest));
                    }
                    rest = rest.get(len..).unwrap_or("");
                }
                Std::Offset(z, shape) => {
                    if z && rest.starts_with('Z') {
                        rest = rest.get(1..).unwrap_or("");
                        continue;
                    }
                    let sign = match rest.as_bytes().first() {
                        Some(b'+') => 1,
                        Some(b'-') => -1,
                        _ => return Err(fail("-07:00", rest)),
                    };
                    rest = rest.get(1..).unwrap_or("");
                    let h = number(&mut rest, 2, 2, "-07")?;
                    let mut m = 0;
                    let mut s = 0;
                    let colon = matches!(shape, Shape::HhColonMm | Shape::HhColonMmColonSs);
                    if shape != Shape::Hours {
                        if colon {
                            rest = rest.strip_prefix(':').ok_or_else(|| fail(":", rest))?;
                        }
                        m = number(&mut rest, 2, 2, "00")?;
                    }
                    if matches!(shape, Shape::HhMmSs | Shape::HhColonMmColonSs) {
                        if colon {
                            rest = rest.strip_prefix(':').ok_or_else(|| fail(":", rest))?;
                        }
                        s = number(&mut rest, 2, 2, "00")?;
                    }
                    offset = sign * (h * 3600 + m * 60 + s);
                }
                Std::Frac(digits, trim) => {
                    let sep = rest.as_bytes().first().copied();
                    if !matches!(sep, Some(b'.' | b',')) {
                        if trim {
                            continue;
                        }
                        return Err(fail(".000", rest));
                    }
                    let after = rest.get(1..).unwrap_or("");
                    let n = after.bytes().take_while(u8::is_ascii_digit).count();
                    if (!trim && n != digits) || n == 0 {
                        return Err(fail(".000", rest));
                    }
                    let frac = after.get(..n.min(9)).unwrap_or("");
                    nanos = format!("{frac:0<9}").parse().unwrap_or(0);
                    rest = after.get(n..).unwrap_or("");
                }
                Std::UnderYearDay | Std::ZeroYearDay => {
                    number(&mut rest, 1, 3, "002")?;
                }
            },
        }
        // Go also reads a fractional second right after seconds when the layout has none.
        if matches!(chunk, Chunk::Std(Std::Second | Std::ZeroSecond)) && rest.starts_with('.') {
            let n = rest
                .get(1..)
                .map_or(0, |a| a.bytes().take_while(u8::is_ascii_digit).count());
            if n > 0 && !layout_has_frac(layout) {
                let frac = rest.get(1..1 + n.min(9)).unwrap_or("");
                nanos = format!("{frac:0<9}").parse().unwrap_or(0);
                rest = rest.get(1 + n..).unwrap_or("");
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!("parsing time {value:?}: extra text: {rest:?}"));
    }
    if pm_set && hour < 12 && pm {
        hour += 12;
    } else if pm_set && hour == 12 && !pm {
        hour = 0;
    }
    let out_of_range = || format!("parsing time {value:?}: day out of range");
    if !(1..=12).contains(&month) {
        return Err(format!("parsing time {value:?}: month out of range"));
    }
    let month_len = match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=month_len).contains(&day) {
        return Err(out_of_range());
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(format!("parsing time {value:?}: hour out of range"));
    }
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Ok(Instant { secs, nanos })
}

fn layout_has_frac(layout: &str) -> bool {
    chunks(layout)
        .iter()
        .any(|c| matches!(c, Chunk::Std(Std::Frac(..))))
}

/// Go's `Duration.String`.
fn duration_string(d: i128) -> String {
    if d == 0 {
        return "0s".to_string();
    }
    let neg = d < 0;
    let u = d.unsigned_abs();
    let frac = |v: u128, prec: u32| -> String {
        let scale = 10u128.pow(prec);
        let (int, fraction) = (v / scale, v % scale);
        if fraction == 0 {
            int.to_string()
        } else {
            let digits = format!("{fraction:0width$}", width = prec as usize);
            format!("{int}.{}", digits.trim_end_matches('0'))
        }
    };
    let body = if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        format!("{}µs", frac(u, 3))
    } else if u < 1_000_000_000 {
        format!("{}ms", frac(u, 6))
    } else {
        let secs_total = u / 1_000_000_000;
        let seconds = frac(u % 60_000_000_000, 9);
        let minutes = secs_total / 60 % 60;
        let hours = secs_total / 3600;
        if hours > 0 {
            format!("{hours}h{minutes}m{seconds}s")
        } else if minutes > 0 {
            format!("{minutes}m{seconds}s")
        } else {
            format!("{seconds}s")
        }
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `Duration.Round(time.Second)`: halves away from zero.
fn round_to_second(d: i128) -> i128 {
    let r = d.rem_euclid(NANOS);
    let down = d - r;
    if d >= 0 {
        if r * 2 >= NANOS {
            down + NANOS
        } else {
            down
        }
    } else if r * 2 > NANOS {
        down + NANOS
    } else {
        down
    }
}

/// Sprig's `durationRound`: the largest whole unit, years of 365 days and months of 30.
fn duration_round(d: i128) -> String {
    let u = d.unsigned_abs();
    let second = 1_000_000_000u128;
    let units = [
        (second * 3600 * 24 * 365, "y"),
        (second * 3600 * 24 * 30, "mo"),
        (second * 3600 * 24, "d"),
        (second * 3600, "h"),
        (second * 60, "m"),
        (second, "s"),
    ];
    for (size, unit) in units {
        if u > size {
            return format!("{}{unit}", u / size);
        }
    }
    "0s".to_string()
}

/// Go's `time.ParseDuration`, in nanoseconds.
fn parse_duration(s: &str) -> Result<i128, String> {
    let invalid = || {
        format!(
            "time: invalid duration {}",
            super::super::format::go_quote(s)
        )
    };
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..).unwrap_or("")),
        Some(b'+') => (false, s.get(1..).unwrap_or("")),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = rest.get(..int_len).unwrap_or("");
        rest = rest.get(int_len..).unwrap_or("");
        let mut frac_part = "";
        if let Some(after) = rest.strip_prefix('.') {
            let n = after.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = after.get(..n).unwrap_or("");
            rest = after.get(n..).unwrap_or("");
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit = rest.get(..unit_len).unwrap_or("");
        rest = rest.get(unit_len..).unwrap_or("");
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS,
            "m" => 60 * NANOS,
            "h" => 3600 * NANOS,
            "" => {
                return Err(format!(
                    "time: missing unit in duration {}",
                    super::super::format::go_quote(s)
                ))
            }
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    super::super::format::go_quote(other),
                    super::super::format::go_quote(s)
                ))
            }
        };
        let int: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = int.checked_mul(scale).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            let digits = frac_part.get(..frac_part.len().min(18)).unwrap_or("");
            let f: i128 = digits.parse().unwrap_or(0);
            let denom = 10i128.pow(u32::try_from(digits.len()).unwrap_or(0));
            value += f * scale / denom;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    Ok(if neg { -total } else { total })
}

/// Used by tests of other families: the text of "now".
#[cfg(test)]
pub(super) fn now_text() -> String {
    format(STRING_LAYOUT, Instant::unix(NOW_UNIX))
}

#[cfg(test)]
mod tests {
    use super::{duration_string, format, now_text, parse, Instant};
    use crate::render::template::testing::check;

    #[test]
    fn formats_and_parses_like_go() {
        assert_eq!(now_text(), "2024-01-01 00:00:00 +0000 UTC");
        // Go's reference time: Mon Jan 2 15:04:05 MST 2006, here in UTC.
        let reference = Instant {
            secs: 1_136_214_245,
            nanos: 120_000_000,
        };
        for (layout, want) in [
            ("2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z"),
            (
                "Mon Jan _2 15:04:05 MST 2006",
                "Mon Jan  2 15:04:05 UTC 2006",
            ),
            (
                "Monday, 02-Jan-06 03:04:05.000 PM -0700",
                "Monday, 02-Jan-06 03:04:05.120 PM +0000",
            ),
            (
                "January 2, 2006 3:4:5.999 pm",
                "January 2, 2006 3:4:5.12 pm",
            ),
            (
                "2006-01-02 15:04:05.999999999 -0700 MST",
                "2006-01-02 15:04:05.12 +0000 UTC",
            ),
            ("002 __2", "002   2"),
        ] {
            assert_eq!(format(layout, reference), want, "{layout}");
        }
        assert_eq!(
            parse("2006-01-02T15:04:05Z07:00", "2006-01-02T08:04:05-07:00"),
            Ok(Instant::unix(1_136_214_245))
        );
        assert_eq!(
            parse(
                "2006-01-02 15:04:05.999999999 -0700 MST",
                "2006-01-02 15:04:05.12 +0000 UTC"
            ),
            Ok(reference)
        );
        for (nanos, want) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_500_000, "1.5ms"),
            (95_000_000_000, "1m35s"),
            (3_600_000_000_000, "1h0m0s"),
            (-90_500_000_000, "-1m30.5s"),
        ] {
            assert_eq!(duration_string(nanos), want);
        }
    }

    #[test]
    fn date_functions() {
        check(&[
            (
                "{{ now }} {{ now | date \"2006-01-02\" }} {{ now | unixEpoch }} {{ date \"15:04\" 0 }} {{ htmlDate 86400 }}",
                Ok("2024-01-01 00:00:00 +0000 UTC 2024-01-01 1704067200 00:00 1970-01-02"),
            ),
            (
                "{{ dateInZone \"2006\" (now) \"UTC\" }} {{ now | dateModify \"-1.5h\" }} {{ now | dateModify \"x\" | unixEpoch }}",
                Ok("2024 2023-12-31 22:30:00 +0000 UTC 1704067200"),
            ),
            (
                "{{ mustDateModify \"x\" now }}",
                Err("time: invalid duration \"x\""),
            ),
            (
                "{{ toDate \"2006-01-02\" \"2023-12-25\" | date \"Jan 2\" }} {{ toDate \"2006\" \"x\" }}",
                Ok("Dec 25 0001-01-01 00:00:00 +0000 UTC"),
            ),
            (
                "{{ mustToDate \"2006-01-02\" \"x\" }}",
                Err("parsing time \"x\" as \"2006-01-02\": cannot parse \"x\" as \"2006\""),
            ),
            (
                "{{ duration \"95\" }} {{ duration 3600 }} {{ durationRound \"2h10m\" }} {{ durationRound \"400h\" }} {{ ago 1704060000 }}",
                Ok("1m35s 1h0m0s 2h 16d 2h0m0s"),
            ),
            ("{{ unixEpoch \"x\" }}", Err("expected time.Time; got string")),
            (
                "{{ dateInZone \"2006\" 0 \"Europe/Paris\" }}",
                Err("time zone \"Europe/Paris\" is not supported offline"),
            ),
        ]);
    }
}
