//! Runtime values. Data is borrowed, never copied, unless a function builds something new.

use super::{too_deep, too_large, MAX_DEPTH, MAX_RANGE_ITERATIONS, MAX_VALUE_BYTES, NODE_WEIGHT};
use crate::render::budget::{Budget as Work, Exhausted};
use serde_json::{Number, Value};
use std::rc::Rc;

/// A template value. `Missing` is Go's invalid `reflect.Value`: a missing map key, printed as
/// `<no value>`, which is different from a JSON `null` (Go's nil interface).
#[derive(Clone, Debug)]
pub(super) enum Val<'a> {
    Missing,
    Ref(&'a Value),
    Own(Rc<Value>),
    /// A member of a value a template built, found by its path from that value. Go shares a
    /// map's members; reading `.context.Values` out of `dict "context" $` copies nothing.
    Part(Rc<Value>, Rc<[PathKey]>),
    /// A literal of the template text, shared with the parsed tree (which files are parsed
    /// into on several threads).
    Lit(std::sync::Arc<Value>),
}

/// One step of a [`Val::Part`] path.
#[derive(Clone, Debug)]
pub(super) enum PathKey {
    Field(Box<str>),
    Index(usize),
}

impl PathKey {
    fn of(key: &Key) -> PathKey {
        match key {
            Key::Field(name) => PathKey::Field((*name).into()),
            Key::Index(i) => PathKey::Index(*i),
        }
    }

    fn key(&self) -> Key<'_> {
        match self {
            PathKey::Field(name) => Key::Field(name),
            PathKey::Index(i) => Key::Index(*i),
        }
    }
}

/// The member `key` of the built value `root` reached by `path`, shared with it.
pub(super) fn part<'a>(root: &Rc<Value>, path: &[PathKey], key: &Key) -> Val<'a> {
    let mut steps = Vec::with_capacity(path.len() + 1);
    steps.extend_from_slice(path);
    steps.push(PathKey::of(key));
    Val::Part(Rc::clone(root), steps.into())
}

impl<'a> Val<'a> {
    pub(super) fn new(v: Value) -> Self {
        Val::Own(Rc::new(v))
    }

    pub(super) fn str(s: impl Into<String>) -> Self {
        Val::new(Value::String(s.into()))
    }

    pub(super) fn int(i: i64) -> Self {
        Val::new(Value::from(i))
    }

    pub(super) fn bool(b: bool) -> Self {
        Val::new(Value::Bool(b))
    }

    pub(super) fn value(&self) -> Option<&Value> {
        match self {
            Val::Missing => None,
            Val::Ref(v) => Some(v),
            Val::Own(v) => Some(v),
            Val::Lit(v) => Some(v),
            Val::Part(root, path) => path
                .iter()
                .try_fold(&**root, |v, step| lookup(v, &step.key())),
        }
    }

    /// The value unless it is nil in Go's eyes (missing or JSON null).
    pub(super) fn nonnull(&self) -> Option<&Value> {
        self.value().filter(|v| !v.is_null())
    }

    /// Go unwraps interface results after each command, so a nil becomes "no value".
    pub(super) fn dig(self) -> Self {
        if matches!(self.value(), Some(Value::Null)) {
            Val::Missing
        } else {
            self
        }
    }
}

pub(super) fn is_true(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

pub(super) fn truth(v: &Val) -> bool {
    v.value().is_some_and(is_true)
}

pub(super) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) => number_type(n),
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

pub(super) fn number_type(n: &Number) -> &'static str {
    if n.is_i64() {
        "int"
    } else if n.is_u64() {
        "uint64"
    } else {
        "float64"
    }
}

/// Work counter shared by the executor and the functions: the caller's budget, moved in for
/// one string, and this string's iterations.
pub(super) struct Budget {
    pub(super) work: Work,
    iterations: u64,
}

impl Budget {
    pub(super) fn new(work: Work) -> Budget {
        Budget {
            work,
            iterations: 0,
        }
    }

    fn exhausted(&self, why: Exhausted) -> String {
        match why {
            Exhausted::Unit => format!(
                "evaluation exceeds the budget of {} steps",
                self.work.limit()
            ),
            Exhausted::Run => "evaluation stopped: the run's budget is spent".to_string(),
        }
    }

    pub(super) fn charge(&mut self, steps: u64) -> Result<(), String> {
        self.work.charge(steps).map_err(|why| self.exhausted(why))
    }

    pub(super) fn charge_bytes(&mut self, bytes: usize) -> Result<(), String> {
        self.work
            .charge_bytes(bytes)
            .map_err(|why| self.exhausted(why))
    }

    pub(super) fn iterate(&mut self) -> Result<(), String> {
        self.iterations += 1;
        if self.iterations > MAX_RANGE_ITERATIONS {
            return Err(format!("range exceeds {MAX_RANGE_ITERATIONS} iterations"));
        }
        self.charge(1)
    }
}

/// Size of `v` in weight units, refusing values too large or too deep to copy safely. Runs
/// with an explicit stack, and charges children before visiting them, so it stays bounded.
pub(super) fn weigh(v: &Value) -> Result<usize, String> {
    let mut total = NODE_WEIGHT;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        match v {
            Value::String(s) => total = total.saturating_add(s.len()),
            Value::Array(items) => {
                total = total.saturating_add(items.len().saturating_mul(NODE_WEIGHT));
                if total <= MAX_VALUE_BYTES {
                    stack.extend(items.iter().map(|item| (item, depth + 1)));
                }
            }
            Value::Object(map) => {
                for key in map.keys() {
                    total = total.saturating_add(NODE_WEIGHT + key.len());
                }
                if total <= MAX_VALUE_BYTES {
                    stack.extend(map.values().map(|item| (item, depth + 1)));
                }
            }
            _ => {}
        }
        if total > MAX_VALUE_BYTES {
            return Err(too_large());
        }
    }
    Ok(total)
}

/// Copies `v` for a new collection, counting it against a running `total` for that collection.
pub(super) fn own(budget: &mut Budget, v: &Val, total: &mut usize) -> Result<Value, String> {
    let Some(value) = v.value() else {
        return Ok(Value::Null);
    };
    let weight = weigh(value)?;
    *total = total.saturating_add(weight);
    if *total > MAX_VALUE_BYTES {
        return Err(too_large());
    }
    budget.charge_bytes(weight)?;
    Ok(value.clone())
}

pub(super) fn own_all(budget: &mut Budget, vals: &[Val]) -> Result<Vec<Value>, String> {
    let mut total = 0;
    vals.iter().map(|v| own(budget, v, &mut total)).collect()
}

pub(super) enum Key<'k> {
    Field(&'k str),
    Index(usize),
}

fn lookup<'v>(v: &'v Value, key: &Key) -> Option<&'v Value> {
    match (v, key) {
        (Value::Object(map), Key::Field(name)) => map.get(*name),
        (Value::Array(items), Key::Index(i)) => items.get(*i),
        _ => None,
    }
}

/// A member of `parent`: borrowed when the parent is data, shared with it otherwise.
pub(super) fn child<'a>(
    budget: &mut Budget,
    parent: &Val<'a>,
    key: &Key,
) -> Result<Option<Val<'a>>, String> {
    match parent {
        Val::Missing => Ok(None),
        Val::Ref(v) => Ok(lookup(v, key).map(|c| shared::current(c).unwrap_or(Val::Ref(c)))),
        Val::Own(v) => Ok(lookup(v, key).map(|_| part(v, &[], key))),
        Val::Lit(v) => Ok(lookup(v, key).map(|c| Val::new(c.clone()))),
        Val::Part(root, path) => {
            let found = parent.value().and_then(|v| lookup(v, key)).is_some();
            budget.charge_bytes(NODE_WEIGHT * path.len())?;
            Ok(found.then(|| part(root, path, key)))
        }
    }
}

/// Go maps are shared: `set .Values.global "k" v` changes the map every later template reads
/// through `.Values.global`. The data a Helm render runs on is borrowed and never written, so
/// a changed map is kept here, by the address of the data map it replaces, while a render
/// that asked for it (see [`shared::Scope`]) runs; a lookup that reaches that map gets the
/// changed one. Only maps reached by looking up members see the change: a value that was
/// taken whole before (`$g := .Values.global`, then `toYaml $g`) keeps the old one.
pub(crate) mod shared {
    use super::Val;
    use serde_json::Value;
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;

    thread_local! {
        static CHANGED: RefCell<Option<HashMap<usize, Rc<Value>>>> = const { RefCell::new(None) };
    }

    /// While it lives, changes to data maps are kept (on this thread). The data must outlive
    /// it and stay where it is, so that an address means the same map throughout.
    pub(crate) struct Scope(());

    impl Scope {
        pub(crate) fn new() -> Scope {
            CHANGED.with(|c| *c.borrow_mut() = Some(HashMap::new()));
            Scope(())
        }
    }

    impl Drop for Scope {
        fn drop(&mut self) {
            CHANGED.with(|c| *c.borrow_mut() = None);
        }
    }

    fn key(v: &Value) -> usize {
        v as *const Value as usize
    }

    /// The changed version of the data map `v`, if there is one.
    pub(super) fn current<'a>(v: &Value) -> Option<Val<'a>> {
        if !v.is_object() {
            return None;
        }
        CHANGED.with(|c| {
            c.borrow()
                .as_ref()
                .and_then(|m| m.get(&key(v)).cloned())
                .map(Val::Own)
        })
    }

    /// Whether changes are kept now.
    pub(in crate::render::template) fn active() -> bool {
        CHANGED.with(|c| c.borrow().is_some())
    }

    /// Records `new` as the current version of the data map `old`.
    pub(in crate::render::template) fn replace(old: &Value, new: Value) {
        CHANGED.with(|c| {
            if let Some(m) = c.borrow_mut().as_mut() {
                m.insert(key(old), Rc::new(new));
            }
        });
    }
}
