//! The fields of an AppProject sync window as Argo CD reads them (`SyncWindow.active` in
//! `pkg/apis/application/v1alpha1/types.go`): `schedule` with robfig/cron v3 and exactly the
//! five standard fields (`cron.NewParser(Minute | Hour | Dom | Month | Dow)`, no descriptors),
//! `duration` with Go's `time.ParseDuration`, `timeZone` with Go's `time.LoadLocation`.

/// robfig/cron's mark for a field written `*` or `?` (with no step above 1).
const STAR: u64 = 1 << 63;

/// A parsed schedule: one bit per allowed value of each field, as robfig/cron keeps it.
#[derive(Debug, PartialEq, Eq)]
pub struct Schedule {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// Parses a schedule as Argo CD's parser does; the error says why it does not parse.
pub fn parse_schedule(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // robfig/cron cuts the zone at the first space; without one it slices out of bounds
        // and panics.
        let Some(space) = spec.find(' ') else {
            return Err("a `TZ=` prefix needs the schedule after it".into());
        };
        let eq = spec.find('=').unwrap_or(0);
        let name = spec.get(eq + 1..space).unwrap_or("");
        if !load_location(name) {
            return Err(format!("provided bad location {name}"));
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return Err(format!("parser does not accept descriptors: {spec}"));
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    Ok(Schedule {
        minute: field(fields[0], &MINUTES)?,
        hour: field(fields[1], &HOURS)?,
        dom: field(fields[2], &DOM)?,
        month: field(fields[3], &MONTHS)?,
        dow: field(fields[4], &DOW)?,
    })
}

/// A field: ranges separated by commas, empty ones skipped.
fn field(text: &str, r: &Bounds) -> Result<u64, String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .try_fold(0, |bits, expr| Ok(bits | range(expr, r)?))
}

/// `*`, `?`, `n` or `n-m`, each with an optional `/step`.
fn range(expr: &str, r: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end, mut extra);
    if low_high[0] == "*" || low_high[0] == "?" {
        // What follows a `-` after a star is never read.
        (start, end, extra) = (r.min, r.max, STAR);
    } else {
        start = int_or_name(low_high[0], r)?;
        end = match low_high.len() {
            1 => start,
            2 => int_or_name(low_high[1], r)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = non_negative(range_and_step[1])?;
            // `n/step` means `n-max/step`.
            if single {
                end = r.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            r.min
        ));
    }
    if end > r.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            r.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    let bits = (start..=end)
        .step_by(step as usize)
        .fold(0u64, |b, i| b | 1 << i);
    Ok(bits | extra)
}

fn int_or_name(text: &str, r: &Bounds) -> Result<u64, String> {
    let lower = text.to_lowercase();
    match r.names.iter().find(|(n, _)| *n == lower) {
        Some((_, v)) => Ok(*v),
        None => non_negative(text),
    }
}

/// Go's `strconv.Atoi`, then refused below zero.
fn non_negative(text: &str) -> Result<u64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let parsed = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<i64>().ok())
        .flatten();
    match parsed {
        Some(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {text}")),
        Some(n) => Ok(n as u64),
        None => Err(format!("failed to parse int from {text}")),
    }
}

impl Schedule {
    /// Why robfig/cron finds no start for this schedule, when it finds none: it then returns
    /// the zero time, which Argo CD's `nextWindow.Before(now)` takes for an active window.
    pub fn never_fires(&self) -> Option<&'static str> {
        const DAYS: [u64; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let bits = |b: u64| b & !STAR;
        if bits(self.minute) == 0 || bits(self.hour) == 0 || bits(self.month) == 0 {
            return Some("a field selects no value");
        }
        let dom = bits(self.dom);
        let dow = bits(self.dow);
        let a_date = (1..=12u64)
            .filter(|m| self.month & 1 << m != 0)
            .any(|m| (1..=DAYS[m as usize - 1]).any(|d| dom & 1 << d != 0));
        // With a star in either day field, both must match; otherwise either may.
        let fires = if self.dom & STAR != 0 || self.dow & STAR != 0 {
            dow != 0 && a_date
        } else {
            dow != 0 || a_date
        };
        (!fires).then_some("no month it names has the day of the month it names")
    }
}

/// A duration as Go's `time.ParseDuration` reads it, in nanoseconds.
pub fn parse_duration(text: &str) -> Result<i128, String> {
    const LIMIT: u128 = 1 << 63;
    let invalid = || format!("time: invalid duration \"{text}\"");
    let (neg, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let b = s.as_bytes()[0];
        if !(b == b'.' || b.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut whole: u128 = 0;
        for d in s[..int_len].bytes() {
            whole = whole * 10 + u128::from(d - b'0');
            if whole > LIMIT {
                return Err(invalid());
            }
        }
        s = &s[int_len..];
        let (mut frac, mut scale, mut frac_len) = (0u128, 1f64, 0);
        if let Some(rest) = s.strip_prefix('.') {
            frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            for d in rest[..frac_len].bytes() {
                // Precision stops where Go's does; the digits are still consumed.
                if frac <= (LIMIT - 1) / 10 {
                    frac = frac * 10 + u128::from(d - b'0');
                    scale *= 10.0;
                }
            }
            s = &rest[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .take_while(|b| !(*b == b'.' || b.is_ascii_digit()))
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration \"{text}\""));
        }
        let unit_text = &s[..unit_len];
        s = &s[unit_len..];
        let unit: u128 = match unit_text {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit \"{unit_text}\" in duration \"{text}\""
                ))
            }
        };
        let mut v = whole
            .checked_mul(unit)
            .filter(|v| *v <= LIMIT)
            .ok_or_else(invalid)?;
        if frac > 0 {
            v += (frac as f64 * (unit as f64 / scale)) as u128;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        total += v;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        return Ok(-(total as i128));
    }
    if total > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(total as i128)
}

/// The names Go's `time.LoadLocation` finds in the tz database.
pub fn zones() -> impl Iterator<Item = &'static str> {
    include_str!("tz_names.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
}

/// Whether Go's `time.LoadLocation` loads `name`: `UTC`, `Local`, the empty name, or a file
/// of the tz database (its `posix/` and `right/` copies too).
pub fn load_location(name: &str) -> bool {
    if matches!(name, "" | "UTC" | "Local") {
        return true;
    }
    if name.contains("..") || name.starts_with(['/', '\\']) {
        return false;
    }
    let name = name
        .strip_prefix("posix/")
        .or_else(|| name.strip_prefix("right/"))
        .unwrap_or(name);
    matches!(name, "localtime" | "posixrules") || zones().any(|z| z == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_as_robfig_cron_parses_them() {
        for ok in [
            "0 22 * * *",
            "*/15 * * * *",
            "0 0 * * 1-5",
            "0 0 * * MON-FRI",
            "0 0 * * sun",
            "30 2 1,15 * ?",
            "0 9 * jan-mar *",
            "5/10 * * * *",
            "0 0 * * +1",
            "0 0 * * *-3",
            "1,,2 * * * *",
            "0 0 */1 * *",
            "CRON_TZ=Europe/Berlin 0 22 * * *",
            "TZ=UTC 0 22 * * *",
            "0\t22  *\n* *",
        ] {
            assert!(parse_schedule(ok).is_ok(), "{ok}: {:?}", parse_schedule(ok));
        }
        for bad in [
            "",
            "@daily",
            "@every 1h",
            "0 0 22 * * *",
            "0 22 * *",
            "60 * * * *",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "0 0 * * 7",
            "0 0 * * 1-7",
            "0 0 * * Monday",
            "0 0 * * 5-1",
            "*/0 * * * *",
            "1-2-3 * * * *",
            "1/2/3 * * * *",
            "-1 * * * *",
            "a * * * *",
            "0 0 L * *",
            "0 0 ? * 1#2",
            "CRON_TZ=Mars/Olympus 0 22 * * *",
            "TZ=UTC",
        ] {
            assert!(parse_schedule(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn impossible_dates_never_fire() {
        let never = |s: &str| parse_schedule(s).unwrap().never_fires();
        assert!(never("0 0 30 2 *").is_some());
        assert!(never("0 0 31 4,6,9,11 *").is_some());
        assert!(never("0 0 30 2 ?").is_some());
        assert!(never(", * * * *").is_some());
        assert!(never("0 0 29 2 *").is_none());
        assert!(never("0 0 31 * *").is_none());
        // Neither day field has a star: either one may match, and weekdays always come.
        assert!(never("0 0 30 2 1").is_none());
        assert!(never("0 22 * * *").is_none());
        assert!(never("0 0 * * 1-5").is_none());
    }

    #[test]
    fn durations_parse_as_go_parses_them() {
        let h = 3_600_000_000_000i128;
        assert_eq!(parse_duration("1h"), Ok(h));
        assert_eq!(parse_duration("2h30m"), Ok(2 * h + h / 2));
        assert_eq!(parse_duration("1.5h"), Ok(h + h / 2));
        assert_eq!(parse_duration(".5h"), Ok(h / 2));
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("-1h"), Ok(-h));
        assert_eq!(parse_duration("+90m"), Ok(h + h / 2));
        assert_eq!(parse_duration("1µs"), Ok(1_000));
        assert_eq!(parse_duration("0s"), Ok(0));
        for bad in [
            "",
            "1d",
            "24",
            "1 h",
            "1h ",
            " 1h",
            "1hr",
            "30min",
            "h",
            ".h",
            "1.h5",
            "-",
            "1e3s",
            "1H",
            "9999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad} parsed");
        }
        assert_eq!(parse_duration("1.h"), Ok(h));
        assert_eq!(
            parse_duration("1d"),
            Err("time: unknown unit \"d\" in duration \"1d\"".into())
        );
        assert_eq!(
            parse_duration("24"),
            Err("time: missing unit in duration \"24\"".into())
        );
    }

    #[test]
    fn zones_load_as_go_loads_them() {
        for ok in [
            "",
            "UTC",
            "Local",
            "Europe/Berlin",
            "America/New_York",
            "Etc/GMT+5",
            "US/Eastern",
            "CET",
            "GMT",
            "Asia/Kolkata",
            "posix/Europe/Berlin",
        ] {
            assert!(load_location(ok), "{ok}");
        }
        for bad in [
            "europe/berlin",
            "Europe/Berlin ",
            "CEST",
            "PST",
            "UTC+2",
            "Eastern Standard Time",
            "Europe",
            "../etc/passwd",
            "/usr/share/zoneinfo/UTC",
            "utc",
        ] {
            assert!(!load_location(bad), "{bad}");
        }
    }
}
