//! CEL, the Common Expression Language of Kubernetes admission policies: expressions compiled
//! once and evaluated on YAML nodes, under a cost budget, so that a value an expression returns
//! still knows the span it came from.
//!
//! The evaluator is not written yet: every evaluation reports "not evaluated".

use crate::yaml::{Node, Span};

/// Cost units one evaluation may spend before it stops with [`EvalError::Budget`].
pub const DEFAULT_BUDGET: u64 = 1_000_000;

/// A parsed expression.
#[derive(Clone, Debug)]
pub struct Program {
    source: String,
}

/// Why an expression does not compile, with the byte range of the expression text at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub message: String,
    pub start: usize,
    pub end: usize,
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
}

impl Value<'_> {
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
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
}

/// The variables an expression is evaluated with.
#[derive(Default)]
pub struct Bindings<'a> {
    vars: Vec<(String, Value<'a>)>,
}

impl<'a> Bindings<'a> {
    pub fn new() -> Self {
        Bindings { vars: Vec::new() }
    }

    pub fn set(&mut self, name: &str, value: Value<'a>) {
        self.vars.push((name.to_string(), value));
    }

    pub fn node(&mut self, name: &str, node: &'a Node) {
        self.set(name, Value::Node(node));
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
}

impl Program {
    pub fn compile(source: &str) -> Result<Program, CompileError> {
        Ok(Program {
            source: source.to_string(),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn eval<'a>(
        &self,
        _bindings: &Bindings<'a>,
        _budget: &mut Budget,
    ) -> Result<Value<'a>, EvalError> {
        Err(EvalError::Unsupported("CEL evaluation".to_string()))
    }
}
