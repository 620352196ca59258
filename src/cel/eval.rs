//! The tree-walking evaluator. Every node visited costs a unit, every comprehension step
//! another, and work proportional to a length (concatenation, comparison, search) costs by
//! that length, so an evaluation stops at the same point on every machine.

use std::cmp::Ordering;

use super::parse::{BinOp, Expr, Lit, Macro};
use super::{ext, node_entries, node_get, Bindings, Budget, EvalError, Value};

/// Bytes of string or bytes work that cost one unit.
const BYTES_PER_UNIT: usize = 16;

/// Regular expressions compiled by one evaluation, reused across iterations.
const REGEX_CACHE: usize = 16;

/// Largest compiled regular expression, in the `regex` crate's own measure.
const REGEX_SIZE: usize = 1 << 18;

/// What compiling a regular expression costs, beyond its length: compiling up to
/// [`REGEX_SIZE`] takes far longer than any other step, and a loop must not repeat it cheaply.
const REGEX_COMPILE_COST: u64 = 5_000;

/// What each state of a compiled automaton costs on top: a pattern at [`REGEX_SIZE`] has
/// about 1,300 and takes about a millisecond to compile.
const REGEX_STATE_COST: u64 = 4;

pub(super) fn err<T>(m: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Error(m.into()))
}

pub(super) fn unsupported<T>(m: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Unsupported(m.into()))
}

pub(super) fn no_overload<T>(func: &str, args: &[&Value<'_>]) -> Result<T, EvalError> {
    let types: Vec<String> = args.iter().map(|a| a.type_name()).collect();
    err(format!("no such overload: {func}({})", types.join(", ")))
}

/// A key looked up in a mapping node is a scan of its entries.
fn lookup_cost(entries: usize) -> u64 {
    (entries / 32) as u64
}

pub(super) fn len_cost(len: usize) -> u64 {
    (len / BYTES_PER_UNIT) as u64 + 1
}

/// Longest string or bytes value an evaluation may make. A whole evaluation's budget pays for
/// about this much; the cap holds whatever budget a caller gives.
pub(super) const MAX_VALUE_BYTES: usize = 16 << 20;

/// The cost of a copy of `v`, walked no further than `limit`: every element and entry of a
/// list or map built by the expression is copied with it (a node of the input is shared, not
/// copied). Past `limit` the walk stops, so pricing a copy never costs more than it would.
pub(super) fn weight(v: &Value<'_>, limit: u64) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(match v {
            Value::String(s) => len_cost(s.len()),
            Value::Bytes(b) => len_cost(b.len()),
            Value::List(l) => {
                stack.extend(l);
                l.len() as u64
            }
            Value::Map(m) => {
                stack.extend(m.iter().flat_map(|(k, v)| [k, v]));
                m.len() as u64
            }
            Value::Optional(Some(inner)) => {
                stack.push(inner);
                1
            }
            _ => 0,
        });
        if total > limit {
            break;
        }
    }
    total
}

pub struct Eval<'b, 'a> {
    globals: &'b Bindings<'a>,
    locals: Vec<(String, Value<'a>)>,
    pub(super) budget: &'b mut Budget,
    regexes: Vec<(String, regex::Regex, usize)>,
}

impl<'b, 'a> Eval<'b, 'a> {
    pub fn new(globals: &'b Bindings<'a>, budget: &'b mut Budget) -> Self {
        Eval {
            globals,
            locals: Vec::new(),
            budget,
            regexes: Vec::new(),
        }
    }

    pub fn run(&mut self, e: &Expr) -> Result<Value<'a>, EvalError> {
        self.eval(e)
    }

    pub(super) fn spend(&mut self, units: u64) -> Result<(), EvalError> {
        self.budget.spend(units)
    }

    /// Pays for a copy of `v` before it is made: a variable read in a loop, or a list a
    /// comprehension goes over, is copied whole, nested lists and maps included.
    pub(super) fn charge_copy(&mut self, v: &Value<'_>) -> Result<(), EvalError> {
        let cost = weight(v, self.budget.remaining);
        self.spend(cost)
    }

    /// Pays for a string or bytes value of `bytes` before it is built, and refuses one past
    /// [`MAX_VALUE_BYTES`]: what a function produces can be far larger than its inputs
    /// (`s.replace('', t)`, `join`), so it is priced from the inputs' sizes first.
    pub(super) fn charge_output(&mut self, bytes: usize) -> Result<(), EvalError> {
        if bytes > MAX_VALUE_BYTES {
            return Err(EvalError::Budget);
        }
        self.spend(len_cost(bytes))
    }

    fn eval(&mut self, e: &Expr) -> Result<Value<'a>, EvalError> {
        self.spend(1)?;
        match e {
            Expr::Lit(l) => Ok(match l {
                Lit::Null => Value::Null,
                Lit::Bool(b) => Value::Bool(*b),
                Lit::Int(i) => Value::Int(*i),
                Lit::Uint(u) => Value::Uint(*u),
                Lit::Double(d) => Value::Double(*d),
                Lit::String(s) => {
                    self.spend(len_cost(s.len()))?;
                    Value::String(s.clone())
                }
                Lit::Bytes(b) => {
                    self.spend(len_cost(b.len()))?;
                    Value::Bytes(b.clone())
                }
            }),
            Expr::Ident(name) => self.ident(name),
            Expr::Select {
                operand,
                field,
                test,
                optional,
            } => {
                if let Expr::Ident(name) = &**operand {
                    let local = self.locals.iter().any(|(n, _)| n == name);
                    if let Some(e) = self.globals.failure(name, field).filter(|_| !local) {
                        return if *test {
                            Ok(Value::Bool(true))
                        } else {
                            Err(e.clone())
                        };
                    }
                }
                let v = self.eval(operand)?;
                // Past an optional selection, the rest of the chain is optional too.
                match v {
                    Value::Optional(None) if !*test => Ok(Value::Optional(None)),
                    Value::Optional(Some(inner)) if !*test => self.optional_select(*inner, field),
                    v if *optional => self.optional_select(v, field),
                    v => self.select(&v, field, *test),
                }
            }
            Expr::Index(operand, index, optional) => {
                let v = self.eval(operand)?;
                let i = self.eval(index)?;
                match v {
                    Value::Optional(None) => Ok(Value::Optional(None)),
                    Value::Optional(Some(inner)) => self.optional_index(*inner, i),
                    v if *optional => self.optional_index(v, i),
                    v => self.index(&v, i),
                }
            }
            Expr::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.eval(item)?);
                }
                Ok(Value::List(out))
            }
            Expr::Map(entries) => {
                let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let k = self.eval(k)?.scalar();
                    if !matches!(
                        k,
                        Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::String(_)
                    ) {
                        return err(format!("unsupported key type: {}", k.type_name()));
                    }
                    for (seen, _) in &out {
                        if self.equals(seen, &k)? {
                            return err(format!("Failed with repeated key: {}", k.to_text()));
                        }
                    }
                    let v = self.eval(v)?;
                    out.push((k, v));
                }
                Ok(Value::Map(out))
            }
            Expr::Not(x) => match self.eval(x)?.scalar() {
                Value::Bool(b) => Ok(Value::Bool(!b)),
                v => no_overload("!_", &[&v]),
            },
            Expr::Neg(x) => match self.eval(x)?.scalar() {
                Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
                Value::Double(d) => Ok(Value::Double(-d)),
                Value::Duration(d) => d.checked_neg().map(Value::Duration).ok_or_else(overflow),
                v => no_overload("-_", &[&v]),
            },
            Expr::And(l, r) => self.logic(l, r, false),
            Expr::Or(l, r) => self.logic(l, r, true),
            Expr::Cond(c, a, b) => match self.eval(c)?.scalar() {
                Value::Bool(true) => self.eval(a),
                Value::Bool(false) => self.eval(b),
                v => no_overload("_?_:_", &[&v]),
            },
            Expr::Binary(op, l, r) => {
                let l = self.eval(l)?;
                let r = self.eval(r)?;
                self.binary(*op, l, r)
            }
            Expr::Comprehension {
                kind,
                range,
                var,
                filter,
                body,
            } => self.comprehension(*kind, range, var, filter.as_deref(), body),
            Expr::Call { target, func, args } => {
                let target = match target {
                    Some(t) => Some(self.eval(t)?),
                    None => None,
                };
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.call(target, func, vals)
            }
            Expr::Unsupported(what) => unsupported(what.clone()),
        }
    }

    fn ident(&mut self, name: &str) -> Result<Value<'a>, EvalError> {
        let found = self
            .locals
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .or_else(|| self.globals.get(name));
        if let Some(v) = found {
            // Priced before it is copied: a large list bound once may be read in a loop.
            self.budget.spend(weight(v, self.budget.remaining))?;
            return Ok(v.clone());
        }
        match name {
            "int" | "uint" | "double" | "bool" | "string" | "bytes" | "list" | "map"
            | "null_type" | "type" => Ok(Value::Type(name.to_string())),
            "authorizer" => unsupported("authorizer"),
            _ => err(format!("undeclared reference to '{name}'")),
        }
    }

    /// Reading a scalar of the input costs its length: the value is typed and copied each
    /// time an expression reads it, so a large one read in a loop must spend the budget.
    fn charge_read(&mut self, v: &Value<'a>) -> Result<(), EvalError> {
        if let Value::Node(n) = v {
            if let Some(s) = n.as_scalar() {
                self.spend(len_cost(s.text.len()))?;
            }
        }
        Ok(())
    }

    fn select(&mut self, v: &Value<'a>, field: &str, test: bool) -> Result<Value<'a>, EvalError> {
        let found = self.select_inner(v, field, test)?;
        self.charge_read(&found)?;
        Ok(found)
    }

    fn select_inner(
        &mut self,
        v: &Value<'a>,
        field: &str,
        test: bool,
    ) -> Result<Value<'a>, EvalError> {
        let found = match v {
            Value::Node(n) if n.is_map() => {
                self.spend(lookup_cost(n.entries().len()))?;
                node_get(n, field).map(Value::Node)
            }
            Value::Map(entries) => {
                let mut hit = None;
                for (k, val) in entries {
                    if matches!(k, Value::String(s) if s == field) {
                        hit = Some(val.clone());
                        break;
                    }
                }
                hit
            }
            Value::Null if !test => return err(format!("no such key: {field}")),
            _ => {
                let f = if test { "has" } else { "_._" };
                return no_overload(f, &[v]);
            }
        };
        if test {
            return Ok(Value::Bool(found.is_some()));
        }
        found.ok_or_else(|| EvalError::Error(format!("no such key: {field}")))
    }

    /// `v.?field`: the field as an optional, empty where `v` has no such field.
    fn optional_select(&mut self, v: Value<'a>, field: &str) -> Result<Value<'a>, EvalError> {
        let present = self.select(&v, field, true)?;
        if matches!(present, Value::Bool(true)) {
            let found = self.select(&v, field, false)?;
            Ok(Value::Optional(Some(Box::new(found))))
        } else {
            Ok(Value::Optional(None))
        }
    }

    /// `v[?i]`: the element or entry as an optional, empty where there is none.
    fn optional_index(&mut self, v: Value<'a>, i: Value<'a>) -> Result<Value<'a>, EvalError> {
        match self.index(&v, i) {
            Ok(found) => Ok(Value::Optional(Some(Box::new(found)))),
            Err(EvalError::Error(m))
                if m.starts_with("no such key") || m.starts_with("index out of range") =>
            {
                Ok(Value::Optional(None))
            }
            Err(e) => Err(e),
        }
    }

    fn index(&mut self, v: &Value<'a>, i: Value<'a>) -> Result<Value<'a>, EvalError> {
        let found = self.index_inner(v, i)?;
        self.charge_read(&found)?;
        Ok(found)
    }

    fn index_inner(&mut self, v: &Value<'a>, i: Value<'a>) -> Result<Value<'a>, EvalError> {
        let i = i.scalar();
        match v {
            Value::Node(n) if n.is_seq() => {
                let at = list_index(&i, n.items().len())?;
                Ok(n.items().get(at).map_or(Value::Null, Value::Node))
            }
            Value::List(items) => {
                let at = list_index(&i, items.len())?;
                Ok(items.get(at).cloned().unwrap_or(Value::Null))
            }
            Value::Node(n) if n.is_map() => match &i {
                Value::String(k) => self
                    .spend(lookup_cost(n.entries().len()))
                    .map(|()| node_get(n, k))?
                    .map(Value::Node)
                    .ok_or_else(|| EvalError::Error(format!("no such key: {k}"))),
                _ => err(format!("no such key: {}", key_text(&i))),
            },
            Value::Map(entries) => {
                for (k, val) in entries {
                    if self.equals(k, &i)? {
                        return Ok(val.clone());
                    }
                }
                err(format!("no such key: {}", key_text(&i)))
            }
            _ => no_overload("_[_]", &[v, &i]),
        }
    }

    /// `&&` (`or` false) and `||` (`or` true): the side that decides wins over an error on
    /// the other, in either order (cel-spec, "Logical operators").
    fn logic(&mut self, l: &Expr, r: &Expr, or: bool) -> Result<Value<'a>, EvalError> {
        let lv = self.eval(l).map(|v| v.scalar());
        if let Ok(Value::Bool(b)) = lv {
            if b == or {
                return Ok(Value::Bool(b));
            }
        }
        if matches!(lv, Err(EvalError::Budget)) {
            return Err(EvalError::Budget);
        }
        let rv = self.eval(r).map(|v| v.scalar());
        match rv {
            Ok(Value::Bool(b)) if b == or => return Ok(Value::Bool(b)),
            Err(EvalError::Budget) => return Err(EvalError::Budget),
            _ => {}
        }
        let name = if or { "_||_" } else { "_&&_" };
        match (lv, rv) {
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!or)),
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(a), Ok(b)) => no_overload(name, &[&a, &b]),
        }
    }

    fn items(&mut self, v: &Value<'a>) -> Result<Vec<Value<'a>>, EvalError> {
        if matches!(v, Value::List(_) | Value::Map(_)) {
            self.charge_copy(v)?;
        }
        let out: Vec<Value<'a>> = match v {
            // Paid whole above: the elements may be lists and maps themselves.
            Value::List(items) => return Ok(items.clone()),
            Value::Map(entries) => return Ok(entries.iter().map(|(k, _)| k.clone()).collect()),
            Value::Node(n) if n.is_seq() => n.items().iter().map(Value::Node).collect(),
            Value::Node(n) if n.is_map() => node_entries(n)
                .map(|(k, _)| Value::String(k.to_string()))
                .collect(),
            _ => return no_overload("comprehension", &[v]),
        };
        self.spend(out.len() as u64)?;
        for item in &out {
            match item {
                Value::String(k) => self.spend(len_cost(k.len()))?,
                other => self.charge_read(other)?,
            }
        }
        Ok(out)
    }

    fn comprehension(
        &mut self,
        kind: Macro,
        range: &Expr,
        var: &str,
        filter: Option<&Expr>,
        body: &Expr,
    ) -> Result<Value<'a>, EvalError> {
        let range = self.eval(range)?;
        let items = self.items(&range)?;
        let mut out = Vec::new();
        let mut count = 0u64;
        let mut pending: Option<EvalError> = None;
        for item in items {
            self.spend(1)?;
            // Moved in and out of the variable, not copied: an element may be large.
            self.locals.push((var.to_string(), item));
            let step = (|| -> Result<Option<Value<'a>>, EvalError> {
                if let Some(f) = filter {
                    match self.eval(f)?.scalar() {
                        Value::Bool(true) => {}
                        Value::Bool(false) => return Ok(None),
                        v => return no_overload("map", &[&v]),
                    }
                }
                self.eval(body).map(Some)
            })();
            let item = self.locals.pop().map_or(Value::Null, |(_, v)| v);
            match kind {
                Macro::All | Macro::Exists => {
                    let decided = kind == Macro::Exists;
                    match step.map(|v| v.map(|v| v.scalar())) {
                        Ok(Some(Value::Bool(b))) if b == decided => return Ok(Value::Bool(b)),
                        Ok(Some(Value::Bool(_))) => {}
                        Err(EvalError::Budget) => return Err(EvalError::Budget),
                        Err(e) => {
                            pending.get_or_insert(e);
                        }
                        Ok(other) => {
                            let other = other.unwrap_or(Value::Null);
                            pending.get_or_insert(EvalError::Error(format!(
                                "no such overload: {}(bool expected, got {})",
                                if decided { "exists" } else { "all" },
                                other.type_name()
                            )));
                        }
                    }
                }
                Macro::ExistsOne => match step?.map(|v| v.scalar()) {
                    Some(Value::Bool(true)) => count += 1,
                    Some(Value::Bool(false)) => {}
                    other => {
                        let other = other.unwrap_or(Value::Null);
                        return no_overload("exists_one", &[&other]);
                    }
                },
                Macro::Map => {
                    if let Some(v) = step? {
                        out.push(v);
                    }
                }
                Macro::Filter => match step?.map(|v| v.scalar()) {
                    Some(Value::Bool(true)) => out.push(item),
                    Some(Value::Bool(false)) => {}
                    other => {
                        let other = other.unwrap_or(Value::Null);
                        return no_overload("filter", &[&other]);
                    }
                },
            }
        }
        match kind {
            Macro::All | Macro::Exists => match pending {
                Some(e) => Err(e),
                None => Ok(Value::Bool(kind == Macro::All)),
            },
            Macro::ExistsOne => Ok(Value::Bool(count == 1)),
            Macro::Map | Macro::Filter => Ok(Value::List(out)),
        }
    }

    pub(super) fn equals(&mut self, a: &Value<'a>, b: &Value<'a>) -> Result<bool, EvalError> {
        self.spend(1)?;
        let (a, b) = (a.scalar(), b.scalar());
        if let Some(o) = numeric_cmp(&a, &b) {
            return Ok(o == Some(Ordering::Equal));
        }
        Ok(match (&a, &b) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::String(x), Value::String(y)) => {
                self.spend(len_cost(x.len().min(y.len())))?;
                x == y
            }
            (Value::Bytes(x), Value::Bytes(y)) => {
                self.spend(len_cost(x.len().min(y.len())))?;
                x == y
            }
            (Value::Type(x), Value::Type(y)) => x == y,
            (Value::Duration(x), Value::Duration(y)) => x == y,
            (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
            (Value::Ext(x), Value::Ext(y)) => x == y,
            (Value::Optional(x), Value::Optional(y)) => match (x, y) {
                (None, None) => true,
                (Some(x), Some(y)) => self.equals(x, y)?,
                _ => false,
            },
            _ if is_list(&a) && is_list(&b) => {
                let (x, y) = (self.items(&a)?, self.items(&b)?);
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (p, q) in x.iter().zip(&y) {
                    if !self.equals(p, q)? {
                        return Ok(false);
                    }
                }
                true
            }
            _ if is_map(&a) && is_map(&b) => {
                let keys = self.items(&a)?;
                if keys.len() != self.items(&b)?.len() {
                    return Ok(false);
                }
                for k in keys {
                    let va = self.index(&a, k.clone())?;
                    let vb = match self.index(&b, k) {
                        Ok(v) => v,
                        Err(EvalError::Error(_)) => return Ok(false),
                        Err(e) => return Err(e),
                    };
                    if !self.equals(&va, &vb)? {
                        return Ok(false);
                    }
                }
                true
            }
            _ => false,
        })
    }

    fn compare(
        &mut self,
        op: &str,
        a: &Value<'a>,
        b: &Value<'a>,
    ) -> Result<Option<Ordering>, EvalError> {
        let (a, b) = (a.scalar(), b.scalar());
        if let Some(o) = numeric_cmp(&a, &b) {
            return Ok(o);
        }
        Ok(Some(match (&a, &b) {
            (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
            (Value::String(x), Value::String(y)) => {
                self.spend(len_cost(x.len().min(y.len())))?;
                x.cmp(y)
            }
            (Value::Bytes(x), Value::Bytes(y)) => {
                self.spend(len_cost(x.len().min(y.len())))?;
                x.cmp(y)
            }
            (Value::Duration(x), Value::Duration(y)) => x.cmp(y),
            (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
            _ => return no_overload(op, &[&a, &b]),
        }))
    }

    fn binary(&mut self, op: BinOp, l: Value<'a>, r: Value<'a>) -> Result<Value<'a>, EvalError> {
        match op {
            BinOp::Eq => return self.equals(&l, &r).map(Value::Bool),
            BinOp::Ne => return self.equals(&l, &r).map(|b| Value::Bool(!b)),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let name = match op {
                    BinOp::Lt => "_<_",
                    BinOp::Le => "_<=_",
                    BinOp::Gt => "_>_",
                    _ => "_>=_",
                };
                let o = self.compare(name, &l, &r)?;
                return Ok(Value::Bool(match (op, o) {
                    (_, None) => false,
                    (BinOp::Lt, Some(o)) => o == Ordering::Less,
                    (BinOp::Le, Some(o)) => o != Ordering::Greater,
                    (BinOp::Gt, Some(o)) => o == Ordering::Greater,
                    (_, Some(o)) => o != Ordering::Less,
                }));
            }
            BinOp::In => {
                if is_map(&r) {
                    return match self.index(&r, l) {
                        Ok(_) => Ok(Value::Bool(true)),
                        Err(EvalError::Error(_)) => Ok(Value::Bool(false)),
                        Err(e) => Err(e),
                    };
                }
                if !is_list(&r) {
                    return no_overload("@in", &[&l, &r]);
                }
                for item in self.items(&r)? {
                    if self.equals(&l, &item)? {
                        return Ok(Value::Bool(true));
                    }
                }
                return Ok(Value::Bool(false));
            }
            _ => {}
        }
        let (l, r) = (l.scalar(), r.scalar());
        let name = match op {
            BinOp::Add => "_+_",
            BinOp::Sub => "_-_",
            BinOp::Mul => "_*_",
            BinOp::Div => "_/_",
            _ => "_%_",
        };
        Ok(match (op, &l, &r) {
            (_, Value::Int(a), Value::Int(b)) => Value::Int(int_op(op, *a, *b)?),
            (_, Value::Uint(a), Value::Uint(b)) => Value::Uint(uint_op(op, *a, *b)?),
            (BinOp::Rem, Value::Double(_), Value::Double(_)) => {
                return no_overload(name, &[&l, &r])
            }
            (_, Value::Double(a), Value::Double(b)) => Value::Double(match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                _ => a / b,
            }),
            (BinOp::Add, Value::String(a), Value::String(b)) => {
                self.charge_output(a.len() + b.len())?;
                Value::String(format!("{a}{b}"))
            }
            (BinOp::Add, Value::Bytes(a), Value::Bytes(b)) => {
                self.charge_output(a.len() + b.len())?;
                let mut out = a.clone();
                out.extend_from_slice(b);
                Value::Bytes(out)
            }
            (BinOp::Add, _, _) if is_list(&l) && is_list(&r) => {
                let mut out = self.items(&l)?;
                out.extend(self.items(&r)?);
                Value::List(out)
            }
            (BinOp::Add, Value::Duration(a), Value::Duration(b)) => {
                Value::Duration(a.checked_add(*b).ok_or_else(overflow)?)
            }
            (BinOp::Sub, Value::Duration(a), Value::Duration(b)) => {
                Value::Duration(a.checked_sub(*b).ok_or_else(overflow)?)
            }
            (BinOp::Add, Value::Timestamp(t), Value::Duration(d))
            | (BinOp::Add, Value::Duration(d), Value::Timestamp(t)) => {
                timestamp(t + i128::from(*d))?
            }
            (BinOp::Sub, Value::Timestamp(t), Value::Duration(d)) => timestamp(t - i128::from(*d))?,
            (BinOp::Sub, Value::Timestamp(a), Value::Timestamp(b)) => {
                Value::Duration(i64::try_from(a - b).map_err(|_| overflow())?)
            }
            _ => return no_overload(name, &[&l, &r]),
        })
    }

    /// A pattern compiled (once per evaluation), with the number of states of its automaton,
    /// which [`Eval::charge_search`] prices matching by.
    pub(super) fn regex(&mut self, pattern: &str) -> Result<(regex::Regex, usize), EvalError> {
        if let Some((_, re, states)) = self.regexes.iter().find(|(p, _, _)| p == pattern) {
            return Ok((re.clone(), *states));
        }
        self.spend(REGEX_COMPILE_COST + len_cost(pattern.len()) * 4)?;
        let (re, states) = crate::goregex::compile_sized(pattern, REGEX_SIZE)
            .map_err(|e| EvalError::Error(format!("invalid regular expression: {e}")))?;
        // Compiling takes time in proportion to the automaton built.
        self.spend(states as u64 * REGEX_STATE_COST)?;
        if self.regexes.len() >= REGEX_CACHE {
            self.regexes.remove(0);
        }
        self.regexes.push((pattern.to_string(), re.clone(), states));
        Ok((re, states))
    }

    /// Pays for one search of `bytes` of text with a pattern of `states`: priced for the
    /// engines that advance every state at every byte, which the matcher falls back on
    /// whenever its lazy DFA gives up, whatever the text.
    pub(super) fn charge_search(&mut self, bytes: usize, states: usize) -> Result<(), EvalError> {
        self.spend(len_cost(crate::goregex::work(bytes, states)))
    }

    fn call(
        &mut self,
        target: Option<Value<'a>>,
        func: &str,
        args: Vec<Value<'a>>,
    ) -> Result<Value<'a>, EvalError> {
        ext::call(self, target, func, args)
    }
}

/// A key for an error message: a collection (which no map key can be) by its type, so that
/// an error in a loop never prints a large value again and again.
fn key_text(v: &Value<'_>) -> String {
    if is_list(v) || is_map(v) {
        v.type_name()
    } else {
        let t = v.to_text();
        match t.char_indices().nth(256) {
            Some((i, _)) => format!("{}…", &t[..i]),
            None => t,
        }
    }
}

pub(super) fn overflow() -> EvalError {
    EvalError::Error("integer overflow".into())
}

fn timestamp<'a>(nanos: i128) -> Result<Value<'a>, EvalError> {
    // cel-go's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
    const MIN: i128 = -62_135_596_800 * 1_000_000_000;
    const MAX: i128 = 253_402_300_800 * 1_000_000_000 - 1;
    if !(MIN..=MAX).contains(&nanos) {
        return err("timestamp out of range");
    }
    Ok(Value::Timestamp(nanos))
}

pub(super) fn checked_timestamp<'a>(nanos: i128) -> Result<Value<'a>, EvalError> {
    timestamp(nanos)
}

fn int_op(op: BinOp, a: i64, b: i64) -> Result<i64, EvalError> {
    match op {
        BinOp::Add => a.checked_add(b).ok_or_else(overflow),
        BinOp::Sub => a.checked_sub(b).ok_or_else(overflow),
        BinOp::Mul => a.checked_mul(b).ok_or_else(overflow),
        BinOp::Div if b == 0 => err("division by zero"),
        BinOp::Div => a.checked_div(b).ok_or_else(overflow),
        _ if b == 0 => err("modulus by zero"),
        _ => a.checked_rem(b).ok_or_else(overflow),
    }
}

fn uint_op(op: BinOp, a: u64, b: u64) -> Result<u64, EvalError> {
    let overflow = || EvalError::Error("unsigned integer overflow".into());
    match op {
        BinOp::Add => a.checked_add(b).ok_or_else(overflow),
        BinOp::Sub => a.checked_sub(b).ok_or_else(overflow),
        BinOp::Mul => a.checked_mul(b).ok_or_else(overflow),
        BinOp::Div if b == 0 => err("division by zero"),
        BinOp::Div => Ok(a / b),
        _ if b == 0 => err("modulus by zero"),
        _ => Ok(a % b),
    }
}

pub(super) fn is_list(v: &Value<'_>) -> bool {
    match v {
        Value::List(_) => true,
        Value::Node(n) => n.is_seq(),
        _ => false,
    }
}

pub(super) fn is_map(v: &Value<'_>) -> bool {
    match v {
        Value::Map(_) => true,
        Value::Node(n) => n.is_map(),
        _ => false,
    }
}

fn list_index(i: &Value<'_>, len: usize) -> Result<usize, EvalError> {
    let at: i128 = match i {
        Value::Int(i) => i128::from(*i),
        Value::Uint(u) => i128::from(*u),
        Value::Double(d) if d.fract() == 0.0 && d.abs() < 9.0e15 => *d as i128,
        _ => return no_overload("_[_]", &[&Value::List(Vec::new()), i]),
    };
    if at < 0 || at >= len as i128 {
        return err(format!("index out of range: {at}"));
    }
    Ok(at as usize)
}

/// Numbers of any of the three types compared by value (`1 == 1u == 1.0`, cel-spec
/// "Numeric values"): `None` when either is not a number, `Some(None)` when NaN is involved.
pub(super) fn numeric_cmp(a: &Value<'_>, b: &Value<'_>) -> Option<Option<Ordering>> {
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Uint(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Uint(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Double(x), Value::Int(y)) => cmp_double_int(*x, i128::from(*y)),
        (Value::Double(x), Value::Uint(y)) => cmp_double_int(*x, i128::from(*y)),
        (Value::Int(x), Value::Double(y)) => {
            cmp_double_int(*y, i128::from(*x)).map(Ordering::reverse)
        }
        (Value::Uint(x), Value::Double(y)) => {
            cmp_double_int(*y, i128::from(*x)).map(Ordering::reverse)
        }
        _ => return None,
    })
}

fn cmp_double_int(d: f64, i: i128) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d >= 1.8e19 {
        return Some(Ordering::Greater);
    }
    if d <= -1.0e19 {
        return Some(Ordering::Less);
    }
    let whole = d.trunc() as i128;
    Some(match whole.cmp(&i) {
        Ordering::Equal => d.fract().partial_cmp(&0.0).unwrap_or(Ordering::Equal),
        o => o,
    })
}

/// A double as Go's `%g` writes it with the shortest precision that reads back (cel-go's
/// `string(double)`): `1`, `0.5`, `1e+06`, `1.5e-07`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // strconv.FormatFloat(d, 'g', -1, 64): with the shortest precision the switch to an
    // exponent is decided as for precision 6.
    let eprec = 6;
    if exp < -4 || exp >= eprec {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1;
    let out = if point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else if point as usize >= digits.len() {
        format!("{}{}", digits, "0".repeat(point as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    };
    format!("{sign}{out}")
}

/// cel-go writes a duration in seconds: `5400s`, `1.5s`.
pub fn format_duration(nanos: i64) -> String {
    let secs = nanos / 1_000_000_000;
    let frac = (nanos % 1_000_000_000).unsigned_abs();
    if frac == 0 {
        return format!("{secs}s");
    }
    let sign = if nanos < 0 && secs == 0 { "-" } else { "" };
    let f = format!("{frac:09}");
    format!("{sign}{secs}.{}s", f.trim_end_matches('0'))
}

/// RFC 3339 in UTC, with the fraction only when there is one.
pub fn format_timestamp(nanos: i128) -> String {
    let secs = nanos.div_euclid(1_000_000_000);
    let frac = nanos.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    if frac != 0 {
        let f = format!("{frac:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Howard Hinnant's days-to-civil algorithm (public domain date arithmetic).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Calls `visit` with the member names of each use of the variable `root` in `e`, outermost
/// last (`object.spec.replicas` → `["spec", "replicas"]`), and with `None` for a use that is
/// not a chain of members (a bare `object`, `object['spec']`) or when the expression is too
/// large to look through; `visit` returns whether to go on.
fn uses<'e>(e: &'e Expr, root: &str, mut visit: impl FnMut(Option<Vec<&'e str>>) -> bool) {
    let mut stack = vec![e];
    let mut budget = 100_000u32;
    while let Some(e) = stack.pop() {
        budget = match budget.checked_sub(1) {
            Some(b) => b,
            None => {
                visit(None);
                return;
            }
        };
        if let Expr::Select { .. } = e {
            let mut cur = e;
            let mut chain = Vec::new();
            while let Expr::Select { operand, field, .. } = cur {
                chain.push(field.as_str());
                cur = operand;
            }
            match cur {
                Expr::Ident(name) if name == root => {
                    chain.reverse();
                    if !visit(Some(chain)) {
                        return;
                    }
                }
                other => stack.push(other),
            }
            continue;
        }
        match e {
            Expr::Ident(name) if name == root && !visit(None) => return,
            Expr::Call { target, args, .. } => {
                stack.extend(target.iter().map(|t| &**t));
                stack.extend(args);
            }
            Expr::Index(a, b, _) | Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                stack.extend([&**a, &**b]);
            }
            Expr::Cond(a, b, c) => stack.extend([&**a, &**b, &**c]),
            Expr::Not(a) | Expr::Neg(a) => stack.push(a),
            Expr::List(items) => stack.extend(items),
            Expr::Map(entries) => stack.extend(entries.iter().flat_map(|(k, v)| [k, v])),
            Expr::Comprehension {
                range,
                filter,
                body,
                ..
            } => {
                stack.push(range);
                stack.extend(filter.iter().map(|f| &**f));
                stack.push(body);
            }
            _ => {}
        }
    }
}

/// The one path under `root` the expression reads, when every use of `root` is that path or
/// a part of it (`has(object.spec.replicas) && object.spec.replicas <= 5`); `None` when it
/// reads two different ones, or none.
pub fn only_path(e: &Expr, root: &str) -> Option<Vec<String>> {
    let mut longest: Option<Vec<&str>> = None;
    let mut all: Vec<Vec<&str>> = Vec::new();
    let mut plain = true;
    uses(e, root, |chain| match chain {
        Some(chain) => {
            if longest.as_ref().is_none_or(|l| chain.len() > l.len()) {
                longest = Some(chain.clone());
            }
            all.push(chain);
            true
        }
        None => {
            plain = false;
            false
        }
    });
    let longest = longest.filter(|_| plain)?;
    all.iter()
        .all(|c| longest.starts_with(c))
        .then(|| longest.iter().map(|f| f.to_string()).collect())
}

/// Whether `e` reads the variable `root` other than as `root.<field>…` with `field` among
/// `allowed`: a bare use, an index, a member outside the list, or an expression too large to
/// look through all count as reading beyond.
pub fn reads_beyond(e: &Expr, root: &str, allowed: &[&str]) -> bool {
    let mut beyond = false;
    uses(e, root, |chain| {
        beyond = chain.is_none_or(|c| !c.first().is_some_and(|f| allowed.contains(f)));
        !beyond
    });
    beyond
}
