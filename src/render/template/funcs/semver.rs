//! Sprig's `semver` and `semverCompare`, with the version and constraint rules of
//! Masterminds/semver v3.3.0 (`version.go`, `constraints.go`), the release Sprig v3.3.0 uses.
//! Its regular expressions are RE2 and run here unchanged.

use super::regex::go_regex;
use super::{arity, str_arg};
use crate::render::template::value::Val;
use regex::Regex;
use serde_json::json;
use std::cmp::Ordering;
use std::sync::OnceLock;

const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const SEMVER: &str = r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

/// Longest constraint or version read: real ones are a few dozen bytes.
const MAX_INPUT: usize = 1024;

struct Patterns {
    version: Regex,
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

fn patterns() -> Result<&'static Patterns, String> {
    static CELL: OnceLock<Option<Patterns>> = OnceLock::new();
    CELL.get_or_init(|| {
        Some(Patterns {
            version: go_regex(&format!("^{SEMVER}$")).ok()?,
            constraint: go_regex(&format!(r"^\s*({OPS})\s*({CV})\s*$")).ok()?,
            range: go_regex(&format!(r"\s*({CV})\s+-\s+({CV})\s*")).ok()?,
            find: go_regex(&format!(r"({OPS})\s*({CV})")).ok()?,
            valid: go_regex(&format!(
                r"^(\s*({OPS})\s*({CV})\s*)((?:\s+|,\s*)({OPS})\s*({CV})\s*)*$"
            ))
            .ok()?,
        })
    })
    .as_ref()
    .ok_or_else(|| "semver patterns do not compile".to_string())
}

pub(super) fn call_semver<'a>(name: &str, args: &[Val<'a>]) -> Result<Option<Val<'a>>, String> {
    match name {
        "semver" => {
            arity(args, 1)?;
            let v = Version::parse(str_arg(args, 0)?)?;
            // Go returns a `*semver.Version`; its accessors become keys, so `.Major` works.
            Ok(Some(Val::new(json!({
                "Major": v.major,
                "Minor": v.minor,
                "Patch": v.patch,
                "Prerelease": v.pre,
                "Metadata": v.metadata,
                "Original": v.original,
            }))))
        }
        "semverCompare" => {
            arity(args, 2)?;
            let constraints = parse_constraints(str_arg(args, 0)?)?;
            let version = Version::parse(str_arg(args, 1)?)?;
            Ok(Some(Val::bool(check(&constraints, &version))))
        }
        _ => Ok(None),
    }
}

#[derive(Clone, Debug, Default)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

fn parse_segment(digits: &str) -> Result<u64, String> {
    digits.parse().map_err(|_| {
        format!(
            "Error parsing version segment: strconv.ParseUint: parsing {}: value out of range",
            crate::render::template::format::go_quote(digits)
        )
    })
}

impl Version {
    /// `semver.NewVersion`: lenient about missing minor and patch, and a leading `v`.
    fn parse(text: &str) -> Result<Version, String> {
        let invalid = || "Invalid Semantic Version".to_string();
        if text.len() > MAX_INPUT {
            return Err(invalid());
        }
        let m = patterns()?.version.captures(text).ok_or_else(invalid)?;
        let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
        let number = |i: usize| -> Result<u64, String> {
            match group(i).trim_start_matches('.') {
                "" => Ok(0),
                digits => parse_segment(digits),
            }
        };
        let v = Version {
            major: number(1)?,
            minor: number(2)?,
            patch: number(3)?,
            pre: group(5).to_string(),
            metadata: group(8).to_string(),
            original: text.to_string(),
        };
        if !v.pre.is_empty() {
            validate_prerelease(&v.pre)?;
        }
        if !v.metadata.is_empty() && !v.metadata.split('.').all(allowed) {
            return Err("Invalid Metadata string".to_string());
        }
        Ok(v)
    }

    fn compare(&self, o: &Version) -> Ordering {
        let release = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if release != Ordering::Equal {
            return release;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => compare_prerelease(&self.pre, &o.pre),
        }
    }

    fn lt(&self, o: &Version) -> bool {
        self.compare(o) == Ordering::Less
    }
}

fn allowed(part: &str) -> bool {
    part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn validate_prerelease(pre: &str) -> Result<(), String> {
    for part in pre.split('.') {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            if part.len() > 1 && part.starts_with('0') {
                return Err("Version segment starts with 0".to_string());
            }
        } else if !allowed(part) {
            return Err("Invalid Prerelease string".to_string());
        }
    }
    Ok(())
}

fn compare_prerelease(v: &str, o: &str) -> Ordering {
    let (sparts, oparts): (Vec<&str>, Vec<&str>) = (v.split('.').collect(), o.split('.').collect());
    for i in 0..sparts.len().max(oparts.len()) {
        let s = sparts.get(i).copied().unwrap_or("");
        let t = oparts.get(i).copied().unwrap_or("");
        let d = compare_pre_part(s, t);
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

/// `comparePrePart`: numbers sort below words; a missing part sorts first.
fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => s.cmp(o),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        // Equal numbers written differently ("01", "1") count as greater, as in Go.
        (Ok(a), Ok(b)) if a > b => Ordering::Greater,
        (Ok(_), Ok(_)) => Ordering::Less,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    TildeOrEqual,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    Tilde,
    Caret,
}

struct Constraint {
    op: Op,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

/// `semver.NewConstraint`: `||` between alternatives, commas or spaces between the parts of
/// one, `a - b` ranges.
fn parse_constraints(text: &str) -> Result<Vec<Vec<Constraint>>, String> {
    if text.len() > MAX_INPUT {
        return Err(format!("improper constraint: {text}"));
    }
    let p = patterns()?;
    let text = rewrite_range(p, text);
    let mut ors = Vec::new();
    for alternative in text.split("||") {
        if !p.valid.is_match(alternative) {
            return Err(format!("improper constraint: {alternative}"));
        }
        let mut found: Vec<&str> = p.find.find_iter(alternative).map(|m| m.as_str()).collect();
        if found.is_empty() {
            found.push(alternative);
        }
        ors.push(
            found
                .into_iter()
                .map(|c| parse_constraint(p, c))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    Ok(ors)
}

fn rewrite_range(p: &Patterns, text: &str) -> String {
    let mut out = text.to_string();
    for m in p.range.captures_iter(text) {
        let (Some(whole), Some(from), Some(to)) = (m.get(0), m.get(1), m.get(11)) else {
            continue;
        };
        let with = format!(">= {}, <= {} ", from.as_str(), to.as_str());
        out = out.replacen(whole.as_str(), &with, 1);
    }
    out
}

fn parse_constraint(p: &Patterns, text: &str) -> Result<Constraint, String> {
    let parser_error = || "constraint Parser Error".to_string();
    if text.is_empty() {
        return Ok(Constraint {
            op: Op::TildeOrEqual,
            con: Version::default(),
            minor_dirty: false,
            patch_dirty: false,
            dirty: true,
        });
    }
    let m = p
        .constraint
        .captures(text)
        .ok_or_else(|| format!("improper constraint: {text}"))?;
    let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
    let op = match group(1) {
        "" | "=" => Op::TildeOrEqual,
        "!=" => Op::NotEqual,
        ">" => Op::Greater,
        "<" => Op::Less,
        ">=" | "=>" => Op::GreaterEqual,
        "<=" | "=<" => Op::LessEqual,
        "~" | "~>" => Op::Tilde,
        _ => Op::Caret,
    };
    let (major, minor, patch, pre) = (group(3), group(4), group(5), group(6));
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let ver = if is_x(major) || major.is_empty() {
        dirty = true;
        format!("0.0.0{pre}")
    } else if is_x(minor.trim_start_matches('.')) || minor.is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{major}.0.0{pre}")
    } else if is_x(patch.trim_start_matches('.')) || patch.is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{major}{minor}.0{pre}")
    } else {
        group(2).to_string()
    };
    let con = Version::parse(&ver).map_err(|_| parser_error())?;
    Ok(Constraint {
        op,
        con,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

fn check(ors: &[Vec<Constraint>], v: &Version) -> bool {
    ors.iter().any(|all| all.iter().all(|c| c.check(v)))
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        let c = &self.con;
        // A prerelease matches only constraints that name a prerelease themselves.
        if v.pre.is_empty() || !c.pre.is_empty() {
            match self.op {
                Op::NotEqual => self.not_equal(v),
                Op::Greater => self.greater(v),
                Op::Less => v.lt(c),
                Op::GreaterEqual => !v.lt(c),
                Op::LessEqual => self.less_equal(v),
                Op::Tilde => self.tilde(v),
                Op::TildeOrEqual if self.dirty => self.tilde(v),
                Op::TildeOrEqual => v.compare(c) == Ordering::Equal,
                Op::Caret => self.caret(v),
            }
        } else {
            false
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if c.minor != v.minor && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if c.patch != v.patch && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                if !v.pre.is_empty() || !c.pre.is_empty() {
                    return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                }
                return false;
            }
        }
        v.compare(c) != Ordering::Equal
    }

    fn greater(&self, v: &Version) -> bool {
        let c = &self.con;
        if !self.dirty {
            return v.compare(c) == Ordering::Greater;
        }
        if v.major != c.major {
            return v.major > c.major;
        }
        if self.minor_dirty {
            return false;
        }
        if self.patch_dirty {
            return v.minor > c.minor;
        }
        v.compare(c) == Ordering::Greater
    }

    fn less_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if !self.dirty {
            return v.compare(c) != Ordering::Greater;
        }
        !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.lt(c) {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.lt(c) {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

#[cfg(test)]
mod tests {
    use super::{check, parse_constraints, Version};
    use crate::render::template::testing::check as render_check;

    fn holds(constraint: &str, version: &str) -> bool {
        let cs = parse_constraints(constraint).unwrap();
        check(&cs, &Version::parse(version).unwrap())
    }

    #[test]
    fn constraints() {
        let table = [
            // The Helm chart idiom: `-0` lets prereleases of newer versions through.
            (">=1.21-0", "v1.28.3-gke.1286000", true),
            (">=1.21-0", "v1.20.15", false),
            (">=1.21-0", "1.21.0", true),
            (">=1.21", "v1.28.3-gke.1286000", false),
            (">=1.21", "v1.28.3", true),
            ("<1.22-0", "v1.21.14-eks-1234", true),
            (">=1.19-0 <1.22-0", "1.22.0-0", false),
            ("~1.2", "1.2.9", true),
            ("~1.2", "1.3.0", false),
            ("~1", "1.9.0", true),
            ("~1.2.3", "1.2.2", false),
            ("^1", "1.99.0", true),
            ("^1", "2.0.0", false),
            ("^0.2.3", "0.2.9", true),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.4", false),
            ("1.2 - 1.4.5", "1.4.5", true),
            ("1.2 - 1.4.5", "1.4.6", false),
            ("<1.0 || >=2.0", "2.1.0", true),
            ("<1.0 || >=2.0", "1.5.0", false),
            (">1.2", "1.2.9", false),
            (">1.2", "1.3.0", true),
            ("<=1.2", "1.2.9", true),
            ("<=1.2", "1.3.0", false),
            ("!=1.2.3", "1.2.4", true),
            ("!=1.2.x", "1.2.4", false),
            ("1.2.x", "1.2.7", true),
            ("*", "4.5.6", true),
            ("=1.2.3", "1.2.3+build", true),
            (">= 1.2, < 2", "1.9.0", true),
            ("1.0.0-alpha.1", "1.0.0-alpha.1", true),
            (">1.0.0-alpha.1", "1.0.0-alpha.beta", true),
            (">1.0.0-beta.11", "1.0.0-beta.2", false),
        ];
        for (constraint, version, want) in table {
            assert_eq!(holds(constraint, version), want, "{constraint} {version}");
        }
    }

    #[test]
    fn template_use_and_errors() {
        render_check(&[
            (
                "{{ semverCompare \">=1.21-0\" \"v1.28.3-gke.1\" }} {{ (semver \"v1.2.3-rc.1+b\").Minor }} {{ (semver \"2\").Prerelease }}|",
                Ok("true 2 |"),
            ),
            (
                "{{ semverCompare \">=1.21-0\" \"one\" }}",
                Err("error calling semverCompare: Invalid Semantic Version"),
            ),
            (
                "{{ semverCompare \"> = 1\" \"1.0.0\" }}",
                Err("error calling semverCompare: improper constraint: > = 1"),
            ),
            (
                "{{ semver \"1.2.3-01\" }}",
                Err("Version segment starts with 0"),
            ),
            (
                "{{ semver \"99999999999999999999\" }}",
                Err("Error parsing version segment: strconv.ParseUint: parsing \"99999999999999999999\": value out of range"),
            ),
            (
                "{{ semverCompare 1 \"1.0.0\" }}",
                Err("wrong type for value; expected string; got int"),
            ),
        ]);
    }
}
