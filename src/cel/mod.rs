//! CEL, the Common Expression Language of Kubernetes admission policies: expressions compiled
//! once and evaluated on YAML nodes, under a cost budget, so that a value an expression returns
//! still knows the span it came from.
//!
//! Semantics follow cel-go, which the API server runs: heterogeneous numeric equality, `&&` and
//! `||` that absorb an error on one side when the other decides, errors (not wrapping) on
//! integer overflow. The Kubernetes libraries (strings, lists, sets, regex, url, ip/cidr,
//! quantity) are in [`ext`]. What is not implemented is [`EvalError::Unsupported`], never a
//! guess.
//!
//! Input nodes are read lazily: `object.spec.replicas` walks the tree and returns the replicas
//! node itself, typed the way `sigs.k8s.io/yaml` types it for the API server (YAML 1.1 scalars,
//! as JSON).

mod eval;
mod ext;
mod parse;

use crate::yaml::{typing, Node, Span};

pub use parse::MAX_DEPTH;

/// Cost units one evaluation may spend before it stops with [`EvalError::Budget`].
pub const DEFAULT_BUDGET: u64 = 1_000_000;

/// A parsed expression.
#[derive(Clone, Debug)]
pub struct Program {
    source: String,
    expr: parse::Expr,
}

/// Why an expression does not compile, with the byte range of the expression text at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub message: String,
    pub start: usize,
    pub end: usize,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.start)
    }
}

/// Why an evaluation gave no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// What CEL itself reports: no such key, no matching overload, division by zero…
    Error(String),
    /// The cost budget ran out.
    Budget,
    /// A function or feature this evaluator does not implement: not evaluated, never guessed.
    Unsupported(String),
}

/// Longest error text kept: an error may quote a value (`cannot convert "…" to int`), and
/// a value may be megabytes, which a finding would then print once per object.
const MAX_ERROR: usize = 512;

impl EvalError {
    fn shortened(self) -> EvalError {
        let cut = |mut m: String| {
            if m.len() > MAX_ERROR {
                let mut end = MAX_ERROR;
                while !m.is_char_boundary(end) {
                    end -= 1;
                }
                m.truncate(end);
                m.push('…');
            }
            m
        };
        match self {
            EvalError::Error(m) => EvalError::Error(cut(m)),
            EvalError::Unsupported(m) => EvalError::Unsupported(cut(m)),
            EvalError::Budget => EvalError::Budget,
        }
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Error(m) => f.write_str(m),
            EvalError::Budget => f.write_str("cost budget exceeded"),
            EvalError::Unsupported(m) => write!(f, "not supported: {m}"),
        }
    }
}

/// The value of an expression. Values read from the YAML input keep their node.
#[derive(Clone, Debug)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(String),
    List(Vec<Value<'a>>),
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// A node of the input, taken as the value its YAML typing gives it.
    Node(&'a Node),
    Bytes(Vec<u8>),
    /// A type value, by its CEL name (`int`, `list`, `google.protobuf.Duration`…).
    Type(String),
    /// Nanoseconds.
    Duration(i64),
    /// Nanoseconds since the Unix epoch, UTC.
    Timestamp(i128),
    /// A value of a Kubernetes library type (URL, IP, CIDR, quantity).
    Ext(ext::Ext),
    /// An optional value (`object.?spec`, `optional.of(x)`); `None` is `optional.none()`.
    Optional(Option<Box<Value<'a>>>),
}

impl<'a> Value<'a> {
    pub fn as_bool(&self) -> Option<bool> {
        match self.scalar() {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Where the value was read from, when it is a node of the input.
    pub fn span(&self) -> Option<Span> {
        match self {
            Value::Node(n) => Some(n.span),
            _ => None,
        }
    }

    /// A node scalar as the value its typing gives it; anything else unchanged (collections
    /// of nodes stay nodes, read lazily).
    pub(crate) fn scalar(&self) -> Value<'a> {
        match self {
            Value::Node(n) => node_scalar(n).unwrap_or(Value::Node(n)),
            v => v.clone(),
        }
    }

    /// The CEL type name: `int`, `string`, `list`, `map`, `null_type`…
    pub fn type_name(&self) -> String {
        match self {
            Value::Null => "null_type".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Uint(_) => "uint".into(),
            Value::Double(_) => "double".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::List(_) => "list".into(),
            Value::Map(_) => "map".into(),
            Value::Type(_) => "type".into(),
            Value::Duration(_) => "google.protobuf.Duration".into(),
            Value::Timestamp(_) => "google.protobuf.Timestamp".into(),
            Value::Ext(e) => e.type_name().into(),
            Value::Optional(_) => "optional_type".into(),
            Value::Node(n) => match node_scalar(n) {
                Some(v) => v.type_name(),
                None if n.is_seq() => "list".into(),
                None => "map".into(),
            },
        }
    }

    /// The value as CEL's `string()` gives it, for messages; lists and maps (which `string()`
    /// refuses) are written as CEL literals.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        write_text(self, &mut out, 0, true, usize::MAX);
        out
    }

    /// The text, stopped soon after `limit` bytes: a large value is not written out whole
    /// to be cut afterwards.
    pub fn to_text_within(&self, limit: usize) -> String {
        let mut out = String::new();
        write_text(self, &mut out, 0, true, limit);
        if out.len() > limit {
            let mut end = limit;
            while !out.is_char_boundary(end) {
                end -= 1;
            }
            out.truncate(end);
        }
        out
    }
}

/// How far `to_text` descends into nested collections; deeper parts print as `…`.
const TEXT_DEPTH: usize = 32;

fn write_text(v: &Value<'_>, out: &mut String, depth: usize, top: bool, limit: usize) {
    use std::fmt::Write as _;
    if out.len() > limit {
        return;
    }
    if depth > TEXT_DEPTH {
        out.push('…');
        return;
    }
    let v = v.scalar();
    match &v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Uint(u) => {
            let _ = write!(out, "{u}");
            if !top {
                out.push('u');
            }
        }
        Value::Double(d) => out.push_str(&eval::format_double(*d)),
        Value::String(s) if top => out.push_str(s),
        Value::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        Value::Bytes(b) if top => out.push_str(&String::from_utf8_lossy(b)),
        Value::Bytes(b) => {
            let _ = write!(out, "b{:?}", String::from_utf8_lossy(b));
        }
        Value::Type(t) => out.push_str(t),
        Value::Duration(n) => out.push_str(&eval::format_duration(*n)),
        Value::Timestamp(t) => out.push_str(&eval::format_timestamp(*t)),
        Value::Ext(e) => out.push_str(&e.to_text()),
        Value::Optional(None) => out.push_str("optional.none()"),
        Value::Optional(Some(v)) => {
            out.push_str("optional.of(");
            write_text(v, out, depth + 1, false, limit);
            out.push(')');
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() > limit {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_text(item, out, depth + 1, false, limit);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, val)) in entries.iter().enumerate() {
                if out.len() > limit {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_text(k, out, depth + 1, false, limit);
                out.push_str(": ");
                write_text(val, out, depth + 1, false, limit);
            }
            out.push('}');
        }
        Value::Node(n) if n.is_seq() => {
            out.push('[');
            for (i, item) in n.items().iter().enumerate() {
                if out.len() > limit {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_text(&Value::Node(item), out, depth + 1, false, limit);
            }
            out.push(']');
        }
        Value::Node(n) => {
            out.push('{');
            for (i, (k, val)) in node_entries(n).enumerate() {
                if out.len() > limit {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{k:?}: ");
                write_text(&Value::Node(val), out, depth + 1, false, limit);
            }
            out.push('}');
        }
    }
}

/// A scalar node as a value, typed as `sigs.k8s.io/yaml` types it (YAML 1.1, then JSON: a
/// whole float is an integer); `None` for a collection.
fn node_scalar<'a>(n: &'a Node) -> Option<Value<'a>> {
    let s = n.as_scalar()?;
    Some(match typing::yaml11(s) {
        typing::Kind::Null => Value::Null,
        typing::Kind::Bool(b) => Value::Bool(b),
        typing::Kind::Str => Value::String(s.text.to_string()),
        typing::Kind::Int | typing::Kind::Float => match crate::yaml::number11(s.text) {
            Some(serde_json::Value::Number(num)) => match (num.as_i64(), num.as_u64()) {
                (Some(i), _) => Value::Int(i),
                (None, Some(u)) => Value::Uint(u),
                _ => Value::Double(num.as_f64().unwrap_or(f64::NAN)),
            },
            _ => Value::String(s.text.to_string()),
        },
    })
}

/// A mapping node's entries as the API server holds the object: the last of duplicated keys,
/// and no key whose value is null (the server prunes those from typed objects, so `has()` is
/// false and selection fails on them). In the order written; linear in the entries.
pub fn node_entries(n: &Node) -> impl Iterator<Item = (&str, &Node)> {
    let mut seen = foldhash::HashSet::default();
    let mut out: Vec<(&str, &Node)> = n
        .entries()
        .iter()
        .rev()
        .filter_map(|e| Some((e.key.as_str()?, &e.value)))
        .filter(|(k, _)| seen.insert(*k))
        .filter(|(_, v)| !v.is_null())
        .collect();
    out.reverse();
    out.into_iter()
}

/// The node of `root` that `path` (member names, or list indices) selects, as deep as it
/// exists: a collection by its key, a scalar by its value; `fallback` when not even the
/// first step exists. Where a finding about an expression that reads one path points.
pub fn anchor(root: &Node, path: &[String], fallback: Span) -> Span {
    let mut node = root;
    let mut at = fallback;
    for key in path {
        let (next, key_span) = if node.is_seq() {
            match key.parse::<usize>().ok().and_then(|i| node.items().get(i)) {
                Some(n) => (n, None),
                None => break,
            }
        } else {
            match node.entry(key).filter(|e| !e.value.is_null()) {
                Some(e) => (&e.value, Some(e.key.span)),
                None => break,
            }
        };
        node = next;
        at = match key_span {
            Some(k) if node.is_map() || node.is_seq() => k,
            _ => node.span,
        };
    }
    at
}

fn node_get<'a>(n: &'a Node, key: &str) -> Option<&'a Node> {
    crate::yaml::entry_in(n.entries(), key)
        .map(|e| &e.value)
        .filter(|v| !v.is_null())
}

/// The variables an expression is evaluated with.
#[derive(Default)]
pub struct Bindings<'a> {
    vars: Vec<(String, Value<'a>)>,
    /// Fields of a bound map whose value could not be computed: reading one gives its error
    /// (an admission policy's `variables.x`, evaluated ahead but failing only when used).
    failed: Vec<(String, String, EvalError)>,
}

impl<'a> Bindings<'a> {
    pub fn new() -> Self {
        Bindings {
            vars: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Makes `name.field` fail with `error` when an expression reads it.
    pub fn fail(&mut self, name: &str, field: &str, error: EvalError) {
        self.failed
            .push((name.to_string(), field.to_string(), error));
    }

    fn failure(&self, name: &str, field: &str) -> Option<&EvalError> {
        self.failed
            .iter()
            .find(|(n, f, _)| n == name && f == field)
            .map(|(_, _, e)| e)
    }

    /// Binds `name`; a later binding of the same name replaces it.
    pub fn set(&mut self, name: &str, value: Value<'a>) {
        self.vars.retain(|(n, _)| n != name);
        self.vars.push((name.to_string(), value));
    }

    pub fn node(&mut self, name: &str, node: &'a Node) {
        self.set(name, Value::Node(node));
    }

    pub fn get(&self, name: &str) -> Option<&Value<'a>> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// The cost an evaluation may still spend.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub remaining: u64,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget { remaining: limit }
    }

    /// Spends `units`, or fails when they are not left.
    pub fn spend(&mut self, units: u64) -> Result<(), EvalError> {
        match self.remaining.checked_sub(units) {
            Some(r) => {
                self.remaining = r;
                Ok(())
            }
            None => {
                self.remaining = 0;
                Err(EvalError::Budget)
            }
        }
    }
}

impl Program {
    pub fn compile(source: &str) -> Result<Program, CompileError> {
        Ok(Program {
            source: source.to_string(),
            expr: parse::parse(source)?,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The one path under `root` the expression reads, as member names
    /// (`object.spec.replicas <= 5` → `["spec", "replicas"]`; see [`eval::only_path`]): where
    /// a finding about the expression is pointed at.
    pub fn only_path(&self, root: &str) -> Option<Vec<String>> {
        eval::only_path(&self.expr, root)
    }

    /// Whether the expression may read `root` other than through `root.<field>` for a
    /// `field` of `allowed` (see [`eval::reads_beyond`]).
    pub fn reads_beyond(&self, root: &str, allowed: &[&str]) -> bool {
        eval::reads_beyond(&self.expr, root, allowed)
    }

    pub fn eval<'a>(
        &self,
        bindings: &Bindings<'a>,
        budget: &mut Budget,
    ) -> Result<Value<'a>, EvalError> {
        eval::Eval::new(bindings, budget)
            .run(&self.expr)
            .map_err(EvalError::shortened)
    }
}

#[cfg(test)]
mod tests;
