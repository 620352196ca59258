//! `values.schema.json` validation as `helm template` does it (helm v3.17.2
//! `pkg/chartutil/jsonschema.go`), with the keyword semantics, error texts and error order of
//! the library Helm uses, github.com/xeipuuv/gojsonschema v1.2.0 (`validation.go`,
//! `schema.go`, `locales.go`, `errors.go`).
//!
//! Only what is followed exactly may refuse values: remote `$ref`s, `format`, `$id`-relative
//! references, unknown keywords and schemas that library would reject while loading them are
//! accepted. Where the library iterates a Go map (properties, pattern properties, dependencies)
//! its order is random; here it is the order of the maps as read.

use crate::render::budget::{Budget as Work, Exhausted};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Schemas nested in one evaluation: deeper is a `$ref` loop (the library overflows its stack).
const MAX_DEPTH: usize = 200;
/// Work one schema evaluation is counted as: about what a template action costs, so that a
/// chart's budget bounds a schema that branches without end in time as well.
const STEP: u64 = 100;
/// Distinct patterns compiled for one schema.
const MAX_PATTERNS: usize = 2_000;

/// Why validation stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The work budget ran out.
    Budget(Exhausted),
    /// A schema this does not follow exactly (`$ref` loops, remote or unresolvable `$ref`s,
    /// a schema that is not one): nothing is refused.
    Unsure,
}

/// Values a chart's schemas refuse: helm's message, and the keys (from the top chart's values)
/// of the value each error is about, in the message's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub message: String,
    pub paths: Vec<Vec<String>>,
}

/// `ValidateAgainstSchema`: the chart's own schema on its values, then each enabled subchart's on
/// `values[name]`, in order. `None` when nothing is refused.
pub fn validate_chart(
    chart: &super::Chart,
    values: &Value,
    work: &mut Work,
) -> Result<Option<Refused>, Exhausted> {
    let mut out = String::new();
    let mut paths = Vec::new();
    chart_errors(chart, values, work, &mut out, &mut paths, &mut Vec::new())?;
    if out.is_empty() {
        Ok(None)
    } else {
        Ok(Some(Refused {
            message: format!(
                "values don't meet the specifications of the schema(s) in the following chart(s):\n{out}"
            ),
            paths,
        }))
    }
}

fn chart_errors(
    chart: &super::Chart,
    values: &Value,
    work: &mut Work,
    out: &mut String,
    paths: &mut Vec<Vec<String>>,
    prefix: &mut Vec<String>,
) -> Result<(), Exhausted> {
    if prefix.len() > 32 {
        return Ok(());
    }
    if let Some(raw) = &chart.schema {
        if let Ok(schema) = serde_json::from_slice::<Value>(raw) {
            match validate(&schema, values, work) {
                Ok(errors) if !errors.is_empty() => {
                    out.push_str(&chart.name);
                    out.push_str(":\n");
                    for e in errors {
                        out.push_str("- ");
                        out.push_str(&e.to_string());
                        out.push('\n');
                        paths.push(prefix.iter().chain(&e.path).cloned().collect());
                    }
                }
                Ok(_) | Err(Stop::Unsure) => {}
                Err(Stop::Budget(e)) => return Err(e),
            }
        }
    }
    for sub in &chart.subcharts {
        // Helm asserts the subchart's values are a map; coalescing makes them one.
        if let Some(v @ Value::Object(_)) = values.get(&sub.name) {
            prefix.push(sub.name.clone());
            let r = chart_errors(sub, v, work, out, paths, prefix);
            prefix.pop();
            r?;
        }
    }
    Ok(())
}

/// One error as gojsonschema reports it: where (keys below the validated value) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: Vec<String>,
    pub text: String,
}

impl std::fmt::Display for SchemaError {
    /// `ResultErrorFields.String`: `FIELD: DESCRIPTION`, the field `(root)` at the top.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "(root): {}", self.text)
        } else {
            write!(f, "{}: {}", self.path.join("."), self.text)
        }
    }
}

/// Validates `doc` against `schema`: the errors gojsonschema finds, in its order.
pub fn validate(schema: &Value, doc: &Value, work: &mut Work) -> Result<Vec<SchemaError>, Stop> {
    let draft = match schema.get("$schema").and_then(Value::as_str) {
        Some(s) => match s.trim_end_matches('#') {
            "http://json-schema.org/draft-04/schema" => 4,
            "http://json-schema.org/draft-06/schema" => 6,
            "http://json-schema.org/draft-07/schema" => 7,
            _ => HYBRID,
        },
        None => HYBRID,
    };
    let mut v = Validator {
        root: schema,
        nested_ids: nested_id(schema, 0, &mut 0),
        draft,
        work,
        patterns: HashMap::new(),
    };
    let mut result = Outcome::default();
    let mut ctx = vec!["(root)".to_string()];
    v.recursive(schema, doc, &mut result, &mut ctx, 0)?;
    Ok(result.errors)
}

/// The library's `Hybrid` draft: keywords of drafts 4, 6 and 7 alike.
const HYBRID: u32 = u32::MAX;

#[derive(Default)]
struct Outcome {
    errors: Vec<SchemaError>,
    /// How close the value came to matching: what `anyOf`/`oneOf` report the best of.
    score: i64,
}

impl Outcome {
    fn add(&mut self, ctx: &[String], text: String) {
        self.errors.push(SchemaError {
            path: ctx.iter().skip(1).cloned().collect(),
            text,
        });
        self.score -= 2;
    }
    fn merge(&mut self, other: Outcome) {
        self.errors.extend(other.errors);
        self.score += other.score;
    }
    fn valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// `ResultErrorFields.Field`: the context without its `(root).` prefix.
fn field(ctx: &[String]) -> String {
    if ctx.len() <= 1 {
        return ctx.first().cloned().unwrap_or_default();
    }
    ctx[1..].join(".")
}

struct Validator<'s, 'w> {
    root: &'s Value,
    /// A schema below the top declares its own `$id`: references inside it resolve against it,
    /// which is not followed here.
    nested_ids: bool,
    draft: u32,
    work: &'w mut Work,
    patterns: HashMap<String, Option<Regex>>,
}

/// The JSON type names the library gives a value.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) => {
            if is_integer(n) {
                "integer"
            } else {
                "number"
            }
        }
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `checkJSONInteger`: a whole number, whatever its notation.
fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

const TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// The `type` keyword as the library reads it; `None` when untyped or not readable.
fn types_of(s: &Map<String, Value>) -> Option<Vec<&str>> {
    let list: Vec<&str> = match s.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(items) => items.iter().map(Value::as_str).collect::<Option<_>>()?,
        _ => return None,
    };
    let known = list.iter().all(|t| TYPES.contains(t));
    let unique = list.iter().enumerate().all(|(i, t)| !list[..i].contains(t));
    (known && unique && !list.is_empty()).then_some(list)
}

/// `jsonSchemaType.String`.
fn types_text(t: &[&str]) -> String {
    if t.len() == 1 {
        t[0].to_string()
    } else {
        format!("[{}]", t.join(","))
    }
}

/// An integer keyword (`minLength`, `maxItems`...), as `mustBeInteger` reads it.
fn int_kw(s: &Map<String, Value>, key: &str) -> Option<i64> {
    s.get(key)?.as_i64().filter(|n| *n >= 0)
}

/// A number as the exact decimal `mantissa × 10^exp` that Go's `big.Rat` holds for its text.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    neg: bool,
    mantissa: u128,
    exp: i32,
}

impl Decimal {
    fn of(n: &serde_json::Number) -> Option<Decimal> {
        if let Some(u) = n.as_u64() {
            return Some(
                Decimal {
                    neg: false,
                    mantissa: u128::from(u),
                    exp: 0,
                }
                .normal(),
            );
        }
        if let Some(i) = n.as_i64() {
            return Some(
                Decimal {
                    neg: i < 0,
                    mantissa: u128::from(i.unsigned_abs()),
                    exp: 0,
                }
                .normal(),
            );
        }
        let f = n.as_f64()?;
        if !f.is_finite() {
            return None;
        }
        // Shortest digits that read back as `f`: what Go prints and the library re-reads.
        let text = format!("{:e}", f.abs());
        let (digits, e) = text.split_once('e')?;
        let e: i32 = e.parse().ok()?;
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let mantissa: u128 = format!("{int}{frac}").parse().ok()?;
        let exp = e - i32::try_from(frac.len()).ok()?;
        Some(
            Decimal {
                neg: f < 0.0,
                mantissa,
                exp,
            }
            .normal(),
        )
    }

    fn normal(mut self) -> Decimal {
        if self.mantissa == 0 {
            self.exp = 0;
            self.neg = false;
            return self;
        }
        while self.mantissa.is_multiple_of(10) {
            self.mantissa /= 10;
            self.exp += 1;
        }
        self
    }

    /// Whether `self / by` is whole; `None` when the numbers are too far apart to tell.
    fn multiple_of(self, by: Decimal) -> Option<bool> {
        if self.mantissa == 0 {
            return Some(true);
        }
        if by.mantissa == 0 {
            return None;
        }
        let e = self.exp.min(by.exp);
        let scale = |d: Decimal| -> Option<u128> {
            let k = u32::try_from(d.exp - e).ok()?;
            d.mantissa.checked_mul(10u128.checked_pow(k)?)
        };
        Some(scale(self)?.is_multiple_of(scale(by)?))
    }

    /// `big.Float` printed with `%v`: shortest digits, `%e` form below 1e-4 or from 1e6 on.
    fn go_text(self) -> String {
        if self.mantissa == 0 {
            return "0".into();
        }
        let digits = self.mantissa.to_string();
        let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
        // value = 0.DIGITS × 10^point
        let point = i64::from(self.exp).saturating_add(n);
        let x = point - 1;
        let body = if !(-4..6).contains(&x) {
            let (first, rest) = digits.split_at(1);
            let mut s = first.to_string();
            if !rest.is_empty() {
                s.push('.');
                s.push_str(rest);
            }
            let sign = if x < 0 { '-' } else { '+' };
            format!("{s}e{sign}{:02}", x.unsigned_abs())
        } else if point <= 0 {
            format!(
                "0.{}{digits}",
                "0".repeat(usize::try_from(-point).unwrap_or(0))
            )
        } else if point >= n {
            format!(
                "{digits}{}",
                "0".repeat(usize::try_from(point - n).unwrap_or(0))
            )
        } else {
            let cut = usize::try_from(point).unwrap_or(0);
            format!("{}.{}", &digits[..cut], &digits[cut..])
        };
        if self.neg {
            format!("-{body}")
        } else {
            body
        }
    }
}

/// Whether an object below the top has a string `$id` or `id` (or the schema is too large to
/// tell).
fn nested_id(v: &Value, depth: usize, seen: &mut usize) -> bool {
    *seen += 1;
    if depth > 128 || *seen > 1_000_000 {
        return true;
    }
    match v {
        Value::Object(m) => {
            (depth > 0
                && ["$id", "id"]
                    .iter()
                    .any(|k| m.get(*k).is_some_and(Value::is_string)))
                || m.values().any(|x| nested_id(x, depth + 1, seen))
        }
        Value::Array(items) => items.iter().any(|x| nested_id(x, depth + 1, seen)),
        _ => false,
    }
}

/// Resolves a local reference (`#`, `#/definitions/x`, any JSON pointer in the document).
fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.starts_with('/') {
        return None;
    }
    let mut at = root;
    for raw in pointer[1..].split('/') {
        let token = percent_decode(raw)?.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(m) => m.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl Validator<'_, '_> {
    /// `marshalWithoutNumber`: the value as `json.Marshal` writes it after a float64 round
    /// trip; past the size bound, nothing is refused.
    fn marshal(&mut self, v: &Value) -> Result<String, Stop> {
        let text = crate::render::template::go_json(v).ok_or(Stop::Unsure)?;
        self.work.charge_bytes(text.len()).map_err(Stop::Budget)?;
        Ok(text)
    }

    fn pattern(&mut self, p: &str) -> Result<Option<Regex>, Stop> {
        if let Some(r) = self.patterns.get(p) {
            return Ok(r.clone());
        }
        self.work
            .charge_bytes(p.len().saturating_mul(64))
            .map_err(Stop::Budget)?;
        let r = crate::render::template::go_regex(p).ok();
        if self.patterns.len() < MAX_PATTERNS {
            self.patterns.insert(p.to_string(), r.clone());
        }
        Ok(r)
    }

    fn is_match(&mut self, re: &Regex, text: &str) -> Result<bool, Stop> {
        self.work.charge_bytes(text.len()).map_err(Stop::Budget)?;
        Ok(re.is_match(text))
    }

    /// `subValidateWithContext`: a fresh result.
    fn sub(
        &mut self,
        schema: &Value,
        doc: &Value,
        ctx: &mut Vec<String>,
        depth: usize,
    ) -> Result<Outcome, Stop> {
        let mut r = Outcome::default();
        self.recursive(schema, doc, &mut r, ctx, depth)?;
        Ok(r)
    }

    /// `subValidateWithContext` one key or index down.
    fn sub_at(
        &mut self,
        schema: &Value,
        doc: &Value,
        key: String,
        ctx: &mut Vec<String>,
        depth: usize,
    ) -> Result<Outcome, Stop> {
        ctx.push(key);
        let r = self.sub(schema, doc, ctx, depth);
        ctx.pop();
        r
    }

    /// `validateRecursive`.
    fn recursive(
        &mut self,
        schema: &Value,
        doc: &Value,
        result: &mut Outcome,
        ctx: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unsure);
        }
        self.work.charge(STEP).map_err(Stop::Budget)?;
        let s = match schema {
            Value::Bool(pass) => {
                if !pass {
                    result.add(ctx, "False always fails validation".into());
                }
                return Ok(());
            }
            Value::Object(s) => s,
            // The library refuses the schema while loading it.
            _ => return Err(Stop::Unsure),
        };
        if let Some(r) = s.get("$ref") {
            let target = r
                .as_str()
                .filter(|_| !self.nested_ids)
                .and_then(|r| resolve(self.root, r));
            let Some(target) = target else {
                return Err(Stop::Unsure);
            };
            return self.recursive(target, doc, result, ctx, depth + 1);
        }
        let types = types_of(s);
        let given = type_of(doc);
        if let Some(t) = &types {
            let ok = match doc {
                Value::Number(n) => {
                    t.contains(&"number") || (is_integer(n) && t.contains(&"integer"))
                }
                _ => t.contains(&given),
            };
            if !ok {
                result.add(
                    ctx,
                    format!("Invalid type. Expected: {}, given: {given}", types_text(t)),
                );
                return Ok(());
            }
        }
        self.schema_kw(s, doc, result, ctx, depth)?;
        match doc {
            Value::Null | Value::Bool(_) => self.common(s, doc, result, ctx)?,
            Value::Number(n) => {
                self.number(s, n, result, ctx);
                self.common(s, doc, result, ctx)?;
            }
            Value::String(text) => {
                self.common(s, doc, result, ctx)?;
                self.string(s, text, result, ctx)?;
            }
            Value::Array(items) => {
                self.array(s, items, result, ctx, depth)?;
                self.common(s, doc, result, ctx)?;
            }
            Value::Object(m) => {
                self.object(s, m, result, ctx, depth)?;
                self.common(s, doc, result, ctx)?;
                if let Some(Value::Object(props)) = s.get("properties") {
                    for (k, sub) in props {
                        if let Some(next) = m.get(k) {
                            ctx.push(k.clone());
                            let r = self.recursive(sub, next, result, ctx, depth + 1);
                            ctx.pop();
                            r?;
                        }
                    }
                }
            }
        }
        result.score += 1;
        Ok(())
    }

    /// `validateSchema`: anyOf, oneOf, allOf, not, dependencies, if/then/else.
    fn schema_kw(
        &mut self,
        s: &Map<String, Value>,
        doc: &Value,
        result: &mut Outcome,
        ctx: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), Stop> {
        if let Some(Value::Array(any)) = s.get("anyOf") {
            let mut best: Option<Outcome> = None;
            let mut ok = false;
            for sub in any {
                let r = self.sub(sub, doc, ctx, depth + 1)?;
                if r.valid() {
                    ok = true;
                    break;
                }
                if best.as_ref().is_none_or(|b| r.score > b.score) {
                    best = Some(r);
                }
            }
            if !ok && !any.is_empty() {
                result.add(ctx, "Must validate at least one schema (anyOf)".into());
                if let Some(b) = best {
                    result.merge(b);
                }
            }
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let mut valid = 0;
            let mut best: Option<Outcome> = None;
            for sub in one {
                let r = self.sub(sub, doc, ctx, depth + 1)?;
                if r.valid() {
                    valid += 1;
                } else if valid == 0 && best.as_ref().is_none_or(|b| r.score > b.score) {
                    best = Some(r);
                }
            }
            if valid != 1 && !one.is_empty() {
                result.add(ctx, "Must validate one and only one schema (oneOf)".into());
                if valid == 0 {
                    if let Some(b) = best {
                        result.merge(b);
                    }
                }
            }
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            let mut valid = 0;
            for sub in all {
                let r = self.sub(sub, doc, ctx, depth + 1)?;
                if r.valid() {
                    valid += 1;
                }
                result.merge(r);
            }
            if valid != all.len() {
                result.add(ctx, "Must validate all the schemas (allOf)".into());
            }
        }
        if let Some(not) = s.get("not").filter(|n| n.is_object() || n.is_boolean()) {
            if self.sub(not, doc, ctx, depth + 1)?.valid() {
                result.add(ctx, "Must not validate the schema (not)".into());
            }
        }
        if let (Some(Value::Object(deps)), Value::Object(m)) = (s.get("dependencies"), doc) {
            for key in m.keys() {
                match deps.get(key) {
                    Some(Value::Array(names)) => {
                        for name in names.iter().filter_map(Value::as_str) {
                            if !m.contains_key(name) {
                                result.add(ctx, format!("Has a dependency on {name}"));
                            }
                        }
                    }
                    Some(sub @ (Value::Object(_) | Value::Bool(_))) => {
                        self.recursive(sub, doc, result, ctx, depth + 1)?;
                    }
                    _ => {}
                }
            }
        }
        if self.draft >= 7 {
            let branch = |k: &str| s.get(k).filter(|v| v.is_object() || v.is_boolean());
            if let Some(cond) = branch("if") {
                let matched = self.sub(cond, doc, ctx, depth + 1)?.valid();
                if let (Some(then), true) = (branch("then"), matched) {
                    let r = self.sub(then, doc, ctx, depth + 1)?;
                    if !r.valid() {
                        result.add(ctx, "Must validate \"then\" as \"if\" was valid".into());
                        result.merge(r);
                    }
                }
                if let (Some(other), false) = (branch("else"), matched) {
                    let r = self.sub(other, doc, ctx, depth + 1)?;
                    if !r.valid() {
                        result.add(ctx, "Must validate \"else\" as \"if\" was not valid".into());
                        result.merge(r);
                    }
                }
            }
        }
        result.score += 1;
        Ok(())
    }

    /// `validateCommon`: const and enum.
    fn common(
        &mut self,
        s: &Map<String, Value>,
        doc: &Value,
        result: &mut Outcome,
        ctx: &[String],
    ) -> Result<(), Stop> {
        let check_const = self.draft >= 6 && s.contains_key("const");
        let options = match s.get("enum") {
            Some(Value::Array(o)) if !o.is_empty() => Some(o),
            _ => None,
        };
        if check_const || options.is_some() {
            let mine = self.marshal(doc)?;
            if let (Some(c), true) = (s.get("const"), check_const) {
                let allowed = self.marshal(c)?;
                if mine != allowed {
                    let f = field(ctx);
                    result.add(ctx, format!("{f} does not match: {allowed}"));
                }
            }
            if let Some(options) = options {
                let mut allowed = Vec::with_capacity(options.len());
                for o in options {
                    allowed.push(self.marshal(o)?);
                }
                if !allowed.contains(&mine) {
                    let f = field(ctx);
                    result.add(
                        ctx,
                        format!("{f} must be one of the following: {}", allowed.join(", ")),
                    );
                }
            }
        }
        result.score += 1;
        Ok(())
    }

    /// `validateNumber`: multipleOf, maximum, exclusiveMaximum, minimum, exclusiveMinimum.
    fn number(
        &mut self,
        s: &Map<String, Value>,
        n: &serde_json::Number,
        result: &mut Outcome,
        ctx: &[String],
    ) {
        let num = |k: &str| match s.get(k) {
            Some(Value::Number(x)) => Some(x.clone()),
            _ => None,
        };
        let value = n.as_f64().unwrap_or(0.0);
        if let Some(m) = num("multipleOf") {
            if let (Some(v), Some(by)) = (Decimal::of(n), Decimal::of(&m)) {
                if by.mantissa != 0 && !by.neg && v.multiple_of(by) == Some(false) {
                    result.add(ctx, format!("Must be a multiple of {}", by.go_text()));
                }
            }
        }
        // Draft 4's boolean exclusive bounds turn the bound exclusive; later drafts' are numbers.
        let bound =
            |plain: &str, excl: &str| -> (Option<serde_json::Number>, Option<serde_json::Number>) {
                let mut inclusive = num(plain);
                let mut exclusive = None;
                match s.get(excl) {
                    Some(Value::Bool(true)) if self.draft == 4 || self.draft == HYBRID => {
                        exclusive = inclusive.take();
                    }
                    Some(Value::Number(x)) if self.draft != 4 => exclusive = Some(x.clone()),
                    _ => {}
                }
                (inclusive, exclusive)
            };
        let (max, xmax) = bound("maximum", "exclusiveMaximum");
        let (min, xmin) = bound("minimum", "exclusiveMinimum");
        let text = |x: &serde_json::Number| {
            Decimal::of(x)
                .map(Decimal::go_text)
                .unwrap_or_else(|| x.to_string())
        };
        let f = |x: &serde_json::Number| x.as_f64().unwrap_or(0.0);
        if let Some(m) = max {
            if value > f(&m) {
                result.add(ctx, format!("Must be less than or equal to {}", text(&m)));
            }
        }
        if let Some(m) = xmax {
            if value >= f(&m) {
                result.add(ctx, format!("Must be less than {}", text(&m)));
            }
        }
        if let Some(m) = min {
            if value < f(&m) {
                result.add(
                    ctx,
                    format!("Must be greater than or equal to {}", text(&m)),
                );
            }
        }
        if let Some(m) = xmin {
            if value <= f(&m) {
                result.add(ctx, format!("Must be greater than {}", text(&m)));
            }
        }
        result.score += 1;
    }

    /// `validateString`: minLength, maxLength (in runes), pattern; `format` is not checked.
    fn string(
        &mut self,
        s: &Map<String, Value>,
        text: &str,
        result: &mut Outcome,
        ctx: &[String],
    ) -> Result<(), Stop> {
        let runes = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
        let (min, max) = (int_kw(s, "minLength"), int_kw(s, "maxLength"));
        let sane = !matches!((min, max), (Some(a), Some(b)) if a > b);
        if let (Some(m), true) = (min, sane) {
            if runes < m {
                result.add(
                    ctx,
                    format!("String length must be greater than or equal to {m}"),
                );
            }
        }
        if let (Some(m), true) = (max, sane) {
            if runes > m {
                result.add(
                    ctx,
                    format!("String length must be less than or equal to {m}"),
                );
            }
        }
        if let Some(Value::String(p)) = s.get("pattern") {
            if let Some(re) = self.pattern(p)? {
                if !self.is_match(&re, text)? {
                    result.add(ctx, format!("Does not match pattern '{p}'"));
                }
            }
        }
        result.score += 1;
        Ok(())
    }

    /// `validateArray`: items, additionalItems, minItems, maxItems, uniqueItems, contains.
    fn array(
        &mut self,
        s: &Map<String, Value>,
        items: &[Value],
        result: &mut Outcome,
        ctx: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), Stop> {
        match s.get("items") {
            Some(single @ (Value::Object(_) | Value::Bool(_))) => {
                for (i, item) in items.iter().enumerate() {
                    let r = self.sub_at(single, item, i.to_string(), ctx, depth + 1)?;
                    result.merge(r);
                }
            }
            Some(Value::Array(tuple)) if !tuple.is_empty() => {
                for (i, (sub, item)) in tuple.iter().zip(items).enumerate() {
                    let r = self.sub_at(sub, item, i.to_string(), ctx, depth + 1)?;
                    result.merge(r);
                }
                if tuple.len() < items.len() {
                    match s.get("additionalItems") {
                        Some(Value::Bool(false)) => {
                            result.add(ctx, "No additional items allowed on array".into());
                        }
                        Some(extra @ Value::Object(_)) => {
                            for (i, item) in items.iter().enumerate().skip(tuple.len()) {
                                let r = self.sub_at(extra, item, i.to_string(), ctx, depth + 1)?;
                                result.merge(r);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let n = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(m) = int_kw(s, "minItems") {
            if n < m {
                result.add(ctx, format!("Array must have at least {m} items"));
            }
        }
        if let Some(m) = int_kw(s, "maxItems") {
            if n > m {
                result.add(ctx, format!("Array must have at most {m} items"));
            }
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true)) {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for (j, item) in items.iter().enumerate() {
                let text = self.marshal(item)?;
                if let Some(i) = seen.get(&text) {
                    result.add(ctx, format!("array items[{i},{j}] must be unique"));
                }
                seen.insert(text, j);
            }
        }
        if self.draft >= 6 {
            if let Some(contains) = s.get("contains") {
                let mut ok = false;
                let mut best: Option<Outcome> = None;
                for (i, item) in items.iter().enumerate() {
                    let r = self.sub_at(contains, item, i.to_string(), ctx, depth + 1)?;
                    if r.valid() {
                        ok = true;
                        break;
                    }
                    if best.as_ref().is_none_or(|b| r.score > b.score) {
                        best = Some(r);
                    }
                }
                if !ok {
                    result.add(ctx, "At least one of the items must match".into());
                    if let Some(b) = best {
                        result.merge(b);
                    }
                }
            }
        }
        result.score += 1;
        Ok(())
    }

    /// `validateObject`: minProperties, maxProperties, required, patternProperties,
    /// additionalProperties, propertyNames.
    fn object(
        &mut self,
        s: &Map<String, Value>,
        m: &Map<String, Value>,
        result: &mut Outcome,
        ctx: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), Stop> {
        let n = i64::try_from(m.len()).unwrap_or(i64::MAX);
        let (min, max) = (int_kw(s, "minProperties"), int_kw(s, "maxProperties"));
        let sane = !matches!((min, max), (Some(a), Some(b)) if a > b);
        if let (Some(k), true) = (min, sane) {
            if n < k {
                result.add(ctx, format!("Must have at least {k} properties"));
            }
        }
        if let (Some(k), true) = (max, sane) {
            if n > k {
                result.add(ctx, format!("Must have at most {k} properties"));
            }
        }
        if let Some(Value::Array(required)) = s.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if m.contains_key(name) {
                    result.score += 1;
                } else {
                    result.add(ctx, format!("{name} is required"));
                }
            }
        }
        let props = match s.get("properties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        let patterns = match s.get("patternProperties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        for (key, value) in m {
            let found = props.is_some_and(|p| p.contains_key(key));
            let mut matched = false;
            if let Some(pp) = patterns {
                for (p, sub) in pp {
                    let Some(re) = self.pattern(p)? else {
                        continue;
                    };
                    if self.is_match(&re, key)? {
                        matched = true;
                        let r = self.sub_at(sub, value, key.clone(), ctx, depth + 1)?;
                        result.merge(r);
                    }
                }
            }
            if matched {
                result.score += 1;
            }
            if !found && !matched {
                match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        result.add(ctx, format!("Additional property {key} is not allowed"));
                    }
                    Some(extra @ Value::Object(_)) => {
                        let r = self.sub_at(extra, value, key.clone(), ctx, depth + 1)?;
                        result.merge(r);
                    }
                    _ => {}
                }
            }
        }
        if self.draft >= 6 {
            if let Some(names) = s
                .get("propertyNames")
                .filter(|v| v.is_object() || v.is_boolean())
            {
                for key in m.keys() {
                    let r = self.sub(names, &Value::String(key.clone()), ctx, depth + 1)?;
                    if !r.valid() {
                        result.add(ctx, format!("Property name of \"{key}\" does not match"));
                        result.merge(r);
                    }
                }
            }
        }
        result.score += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn check(schema: Value, doc: Value) -> Vec<String> {
        let mut work = Work::new(1_000_000);
        validate(&schema, &doc, &mut work)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn ok(schema: Value, doc: Value) {
        assert_eq!(check(schema, doc), Vec::<String>::new());
    }

    fn fails(schema: Value, doc: Value, want: &[&str]) {
        assert_eq!(check(schema, doc), want);
    }

    #[test]
    fn types() {
        let s = json!({"properties": {"a": {"type": "integer"}}});
        ok(s.clone(), json!({"a": 3}));
        ok(s.clone(), json!({"a": 3.0}));
        fails(
            s.clone(),
            json!({"a": 3.5}),
            &["a: Invalid type. Expected: integer, given: number"],
        );
        fails(
            s,
            json!({"a": "x"}),
            &["a: Invalid type. Expected: integer, given: string"],
        );
        let s = json!({"properties": {"a": {"type": ["string", "null"]}}});
        ok(s.clone(), json!({"a": null}));
        fails(
            s,
            json!({"a": true}),
            &["a: Invalid type. Expected: [string,null], given: boolean"],
        );
        fails(
            json!({"type": "array"}),
            json!({}),
            &["(root): Invalid type. Expected: array, given: object"],
        );
        ok(json!({"type": "number"}), json!(4));
        // An unknown type name is refused by the library while loading: nothing is refused here.
        ok(json!({"type": "int"}), json!("x"));
    }

    #[test]
    fn enum_and_const() {
        let s = json!({"properties": {"p": {"enum": ["Always", "IfNotPresent", 1, null]}}});
        ok(s.clone(), json!({"p": "Always"}));
        ok(s.clone(), json!({"p": 1.0}));
        fails(
            s,
            json!({"p": "Never"}),
            &[r#"p: p must be one of the following: "Always", "IfNotPresent", 1, null"#],
        );
        let s = json!({"properties": {"c": {"const": {"x": [1, "<"]}}}});
        ok(s.clone(), json!({"c": {"x": [1, "<"]}}));
        fails(
            s,
            json!({"c": 2}),
            &[r#"c: c does not match: {"x":[1,"\u003c"]}"#],
        );
        // Draft 4 has no const.
        ok(
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "const": 1}),
            json!(2),
        );
    }

    #[test]
    fn required_properties_additional() {
        let s = json!({
            "required": ["a"],
            "properties": {"a": {"type": "string"}, "b": {}},
            "additionalProperties": false
        });
        ok(s.clone(), json!({"a": "x", "b": 1}));
        fails(
            s,
            json!({"b": 1, "c": 2}),
            &[
                "(root): a is required",
                "(root): Additional property c is not allowed",
            ],
        );
        fails(
            json!({"required": ["a", "b"]}),
            json!({"a": 1}),
            &["(root): b is required"],
        );
        fails(
            json!({"properties": {"a": {}}, "additionalProperties": false}),
            json!({"a": 1, "z": 2}),
            &["(root): Additional property z is not allowed"],
        );
        fails(
            json!({"properties": {"o": {"additionalProperties": {"type": "string"}}}}),
            json!({"o": {"k": 1}}),
            &["o.k: Invalid type. Expected: string, given: integer"],
        );
    }

    #[test]
    fn pattern_properties() {
        let s = json!({
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": false
        });
        ok(s.clone(), json!({"x-a": "b"}));
        fails(
            s.clone(),
            json!({"x-a": 1}),
            &["x-a: Invalid type. Expected: string, given: integer"],
        );
        fails(
            s,
            json!({"y": "b"}),
            &["(root): Additional property y is not allowed"],
        );
    }

    #[test]
    fn items() {
        let s = json!({"items": {"type": "string"}, "minItems": 1, "maxItems": 2});
        ok(s.clone(), json!(["a"]));
        fails(
            s.clone(),
            json!(["a", 2]),
            &["1: Invalid type. Expected: string, given: integer"],
        );
        fails(
            s.clone(),
            json!([]),
            &["(root): Array must have at least 1 items"],
        );
        fails(
            s,
            json!(["a", "b", "c"]),
            &["(root): Array must have at most 2 items"],
        );
        let t =
            json!({"items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false});
        ok(t.clone(), json!(["a", 1]));
        ok(t.clone(), json!(["a"]));
        fails(
            t,
            json!(["a", 1, 2]),
            &["(root): No additional items allowed on array"],
        );
        let t = json!({"items": [{}], "additionalItems": {"type": "string"}});
        fails(
            t,
            json!([1, "a", 2]),
            &["2: Invalid type. Expected: string, given: integer"],
        );
        ok(json!({"uniqueItems": true}), json!([1, "1", {"a": 1}]));
        fails(
            json!({"uniqueItems": true}),
            json!([1, 2, 1.0]),
            &["(root): array items[0,2] must be unique"],
        );
        fails(
            json!({"contains": {"type": "string"}}),
            json!([1]),
            &[
                "(root): At least one of the items must match",
                "0: Invalid type. Expected: string, given: integer",
            ],
        );
    }

    #[test]
    fn strings() {
        let s = json!({"minLength": 2, "maxLength": 3, "pattern": "^[a-zé]+$"});
        ok(s.clone(), json!("éé"));
        fails(
            s.clone(),
            json!("é"),
            &["(root): String length must be greater than or equal to 2"],
        );
        fails(
            s.clone(),
            json!("abcd"),
            &["(root): String length must be less than or equal to 3"],
        );
        fails(
            s,
            json!("A1"),
            &["(root): Does not match pattern '^[a-zé]+$'"],
        );
        // `format` is not followed.
        ok(json!({"format": "email"}), json!("nope"));
    }

    #[test]
    fn numbers() {
        let s = json!({"minimum": 1, "maximum": 1000000, "multipleOf": 0.5});
        ok(s.clone(), json!(1.5));
        fails(
            s.clone(),
            json!(0),
            &["(root): Must be greater than or equal to 1"],
        );
        fails(
            s.clone(),
            json!(2000000),
            &["(root): Must be less than or equal to 1e+06"],
        );
        fails(s, json!(1.2), &["(root): Must be a multiple of 0.5"]);
        ok(json!({"multipleOf": 0.1}), json!(0.3));
        fails(
            json!({"exclusiveMinimum": 0, "exclusiveMaximum": 10}),
            json!(10),
            &["(root): Must be less than 10"],
        );
        fails(
            json!({"exclusiveMinimum": 0}),
            json!(0),
            &["(root): Must be greater than 0"],
        );
        fails(
            json!({"minimum": 0.25, "exclusiveMinimum": true}),
            json!(0.25),
            &["(root): Must be greater than 0.25"],
        );
        assert_eq!(
            Decimal::of(&serde_json::Number::from_f64(0.0001).unwrap())
                .unwrap()
                .go_text(),
            "0.0001"
        );
        assert_eq!(
            Decimal::of(&serde_json::Number::from_f64(0.00001).unwrap())
                .unwrap()
                .go_text(),
            "1e-05"
        );
        assert_eq!(
            Decimal::of(&serde_json::Number::from(123456))
                .unwrap()
                .go_text(),
            "123456"
        );
        assert_eq!(
            Decimal::of(&serde_json::Number::from(1234567))
                .unwrap()
                .go_text(),
            "1.234567e+06"
        );
    }

    #[test]
    fn object_sizes_and_dependencies() {
        fails(
            json!({"minProperties": 2}),
            json!({"a": 1}),
            &["(root): Must have at least 2 properties"],
        );
        fails(
            json!({"maxProperties": 0}),
            json!({"a": 1}),
            &["(root): Must have at most 0 properties"],
        );
        fails(
            json!({"dependencies": {"a": ["b"]}}),
            json!({"a": 1}),
            &["(root): Has a dependency on b"],
        );
        fails(
            json!({"dependencies": {"a": {"required": ["c"]}}}),
            json!({"a": 1}),
            &["(root): c is required"],
        );
        fails(
            json!({"propertyNames": {"maxLength": 1}}),
            json!({"ab": 1}),
            &[
                "(root): Property name of \"ab\" does not match",
                "(root): String length must be less than or equal to 1",
            ],
        );
    }

    #[test]
    fn combinators() {
        let any = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]});
        ok(any.clone(), json!("a"));
        fails(
            any,
            json!(1),
            &[
                "(root): Must validate at least one schema (anyOf)",
                "(root): Must be greater than or equal to 5",
            ],
        );
        let one = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        fails(
            one.clone(),
            json!(1),
            &["(root): Must validate one and only one schema (oneOf)"],
        );
        ok(one, json!(1.5));
        fails(
            json!({"allOf": [{"type": "integer"}, {"minimum": 3}]}),
            json!(2),
            &[
                "(root): Must be greater than or equal to 3",
                "(root): Must validate all the schemas (allOf)",
            ],
        );
        fails(
            json!({"not": {"type": "string"}}),
            json!("a"),
            &["(root): Must not validate the schema (not)"],
        );
        let cond = json!({
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"required": ["x"]},
            "else": {"required": ["y"]}
        });
        fails(
            cond.clone(),
            json!({"kind": "a"}),
            &[
                "(root): Must validate \"then\" as \"if\" was valid",
                "(root): x is required",
            ],
        );
        fails(
            cond.clone(),
            json!({"kind": "b"}),
            &[
                "(root): Must validate \"else\" as \"if\" was not valid",
                "(root): y is required",
            ],
        );
        ok(cond, json!({"kind": "b", "y": 1}));
        fails(
            json!({"properties": {"a": false}}),
            json!({"a": 1}),
            &["a: False always fails validation"],
        );
    }

    #[test]
    fn references() {
        let s = json!({
            "definitions": {"port": {"type": "integer", "maximum": 65535}},
            "$defs": {"name": {"type": "string"}},
            "properties": {
                "port": {"$ref": "#/definitions/port", "type": "string"},
                "name": {"$ref": "#/$defs/name"},
                "tree": {"$ref": "#"}
            }
        });
        ok(
            s.clone(),
            json!({"port": 80, "name": "n", "tree": {"port": 1}}),
        );
        fails(
            s.clone(),
            json!({"port": 70000}),
            &["port: Must be less than or equal to 65535"],
        );
        fails(
            s,
            json!({"tree": {"name": 1}}),
            &["tree.name: Invalid type. Expected: string, given: integer"],
        );
        // Remote and unresolvable references, and loops, refuse nothing.
        let mut work = Work::new(1_000_000);
        assert_eq!(
            validate(
                &json!({"$ref": "https://example.com/s.json"}),
                &json!(1),
                &mut work
            ),
            Err(Stop::Unsure)
        );
        assert_eq!(
            validate(&json!({"$ref": "#"}), &json!(1), &mut work),
            Err(Stop::Unsure)
        );
    }

    #[test]
    fn hostile_schemas_stop() {
        // Each level tries both branches of the next: 2^60 evaluations unless stopped.
        let mut defs = serde_json::Map::new();
        for i in 0..60 {
            let next = json!({"$ref": format!("#/definitions/d{}", i + 1)});
            defs.insert(format!("d{i}"), json!({"anyOf": [next.clone(), next]}));
        }
        defs.insert("d60".into(), json!({"type": "string"}));
        let s = json!({"definitions": defs, "$ref": "#/definitions/d0"});
        let mut work = Work::new(crate::render::helm::WORK_STEPS);
        let started = std::time::Instant::now();
        assert!(matches!(
            validate(&s, &json!(1), &mut work),
            Err(Stop::Budget(_))
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        // A loop that consumes nothing is not followed.
        let s = json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]});
        let mut work = Work::new(crate::render::helm::WORK_STEPS);
        assert_eq!(validate(&s, &json!(1), &mut work), Err(Stop::Unsure));
    }

    #[test]
    fn budget_stops() {
        let mut work = Work::new(10);
        let s = json!({"items": {"items": {}}});
        let doc = json!([[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 2, 3]]);
        assert!(matches!(
            validate(&s, &doc, &mut work),
            Err(Stop::Budget(_))
        ));
    }
}
