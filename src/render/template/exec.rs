//! Executor: mirrors text/template/exec.go, with Helm's `include` and `tpl` (helm v3.17
//! `pkg/engine/engine.go`), which need the template set.

use super::format::{go_quote, strval, write_v, Out};
use super::funcs::{
    arity, call_func, call_helm, is_helm_func, nth, random_stand_in, str_arg, HELM_UNSUPPORTED,
    IMPLEMENTED, UNSUPPORTED,
};
use super::parser::{Cmd, Control, Node, Operand, Parser, Pipe, Span, TemplateCall, Term};
use super::set::{associate, named_parse_error, Defs, Dialect, Host, Tmpl, HOST_KEY, ROOT_NAME};
use super::value::{child, go_type, shared, truth, weigh, Budget, Key, PathKey, Val};
use super::{
    too_deep, too_large, ErrorKind, TemplateError, MAX_HELM_OUTPUT, MAX_OUTPUT,
    MAX_RANGE_ITERATIONS, MAX_VALUE_BYTES, NODE_WEIGHT,
};
use serde_json::{Map, Value};
use std::rc::Rc;

/// Templates executing inside one another at once (`template`, `include`, `tpl`). Go allows
/// 100000 and Helm 1000 nested `include`s of one name; each level costs native stack here.
const MAX_CALL_DEPTH: usize = 100;
/// Nesting of lists and pipelines across all the templates executing at once: what bounds
/// the stack, since each template may nest controls and parentheses as deep as parsing lets.
/// An unoptimized build spends up to 5 KiB of stack per level, so this stays within half of
/// a 2 MiB thread stack; real charts nest a few dozen levels.
const MAX_EXEC_DEPTH: usize = 250;
/// Longest template text quoted in a `tpl` error; Go quotes it whole.
const MAX_QUOTED: usize = 4096;

/// Sprig functions that change the map given as their first argument.
const MUTATES: &[&str] = &[
    "set",
    "unset",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
];

/// Functions that store or pass on their arguments rather than read them.
const KEEPS_HOST: &[&str] = &[
    "dict",
    "list",
    "tuple",
    "set",
    "append",
    "push",
    "prepend",
    "default",
    "ternary",
    "coalesce",
    "include",
    "tpl",
    "deepCopy",
    "mustDeepCopy",
];

/// Go's `missingkey` option: what `.x` gives on a map without the key `x`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum MissingKey {
    /// The default: an invalid value, printed `<no value>`; a field of it is invalid too.
    Invalid,
    /// `missingkey=zero`: the map's zero element, a nil interface, whose fields are errors.
    Zero,
    /// `missingkey=error`.
    Error,
}

/// An execution error, located at the innermost node that raised it.
struct Fail {
    msg: String,
    span: Option<Span>,
    /// Set where the kind is known; otherwise read from the message in [`locate`].
    kind: Option<ErrorKind>,
    /// Already located in the template that raised it: `msg` is the whole message.
    done: bool,
    /// Where Go places the node, when not at the start of `span`.
    pos: Option<usize>,
}

impl From<String> for Fail {
    fn from(msg: String) -> Self {
        Fail {
            msg,
            span: None,
            kind: None,
            done: false,
            pos: None,
        }
    }
}

impl Fail {
    fn unsupported(msg: String, span: Span) -> Fail {
        Fail {
            msg,
            span: Some(span),
            kind: Some(ErrorKind::Unsupported),
            done: false,
            pos: None,
        }
    }

    fn limit(msg: String, span: Span) -> Fail {
        Fail {
            msg,
            span: Some(span),
            kind: Some(ErrorKind::Limit),
            done: false,
            pos: None,
        }
    }

    /// A function's failure that wraps an error located elsewhere, keeping its kind.
    fn wrapping(msg: String, inner: &TemplateError, span: Span) -> Fail {
        Fail {
            msg,
            span: Some(span),
            kind: Some(inner.kind),
            done: false,
            pos: None,
        }
    }

    /// Places an error raised for a field chain where Go places its node; an error already
    /// located inside (an argument's) keeps its place.
    fn placed(mut self, at: usize) -> Fail {
        if self.pos.is_none() && self.span.is_some_and(|(start, _)| start <= at) {
            self.pos = Some(at);
        }
        self
    }

    fn at_span(mut self, span: Span) -> Fail {
        self.span.get_or_insert(span);
        self
    }
}

/// Whether `msg` is one of this engine's own bounds, possibly raised inside a function. Only
/// exact messages count: `fail` prints what the template says, after its own prefix.
fn is_limit(msg: &str) -> bool {
    let inner = msg
        .strip_prefix("error calling ")
        .and_then(|rest| rest.split_once(": "))
        .filter(|(name, _)| {
            *name != "fail" && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
        .map_or(msg, |(_, inner)| inner);
    inner == too_deep()
        || inner == too_large()
        || [MAX_OUTPUT, MAX_HELM_OUTPUT]
            .iter()
            .any(|max| inner == format!("output exceeds the {max}-byte limit"))
        || inner == format!("range exceeds {MAX_RANGE_ITERATIONS} iterations")
        || inner
            .strip_prefix("text exceeds the ")
            .and_then(|r| r.strip_suffix("-byte limit"))
            .is_some_and(|n| n.parse::<usize>().is_ok())
}

type Res<T> = Result<T, Fail>;

trait At<T> {
    fn at(self, span: Span) -> Res<T>;
}

impl<T> At<T> for Result<T, String> {
    fn at(self, span: Span) -> Res<T> {
        self.map_err(|msg| Fail {
            msg,
            span: Some(span),
            kind: None,
            done: false,
            pos: None,
        })
    }
}

impl<T> At<T> for Res<T> {
    fn at(self, span: Span) -> Res<T> {
        self.map_err(|mut fail| {
            fail.span.get_or_insert(span);
            fail
        })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Flow {
    Next,
    Break,
    Continue,
}

fn snippet(src: &str, span: Span) -> String {
    let text: String = src
        .get(span.0..span.1)
        .unwrap_or("")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

/// Go's `ErrorContext` and `errorf`: `template: FILE:LINE:COL: executing "NAME" at <...>:`.
/// The single-string entry point has no names and keeps its shorter form.
fn locate(tmpl: &Tmpl, fail: Fail) -> TemplateError {
    let kind = fail.kind.unwrap_or(if is_limit(&fail.msg) {
        ErrorKind::Limit
    } else {
        ErrorKind::Invalid
    });
    if fail.done {
        return TemplateError::of_kind(fail.msg, kind);
    }
    let Some((first, end)) = fail.span else {
        if tmpl.name.is_empty() {
            return TemplateError::of_kind(format!("template: {}", fail.msg), kind);
        }
        return TemplateError::of_kind(format!("template: {}: {}", tmpl.name, fail.msg), kind);
    };
    let src = &*tmpl.src;
    let context = snippet(src, (first, end));
    let message = located(tmpl, fail.pos.unwrap_or(first), &context, &fail.msg);
    TemplateError::of_kind(message, kind)
}

/// The message of an error at `start` in `tmpl`, raised by the node Go prints as `context`.
fn located(tmpl: &Tmpl, start: usize, context: &str, msg: &str) -> String {
    let src = &*tmpl.src;
    let head = src.get(..start).unwrap_or(src);
    let line = 1 + head.matches('\n').count();
    let col = head.rfind('\n').map_or(start, |nl| start - nl - 1);
    if tmpl.name.is_empty() && tmpl.parse_name.is_empty() {
        format!("template: :{line}:{col}: executing at <{context}>: {msg}")
    } else {
        format!(
            "template: {}:{line}:{col}: executing {} at <{context}>: {msg}",
            tmpl.parse_name,
            go_quote(&tmpl.name)
        )
    }
}

/// Text for an error message, cut short past [`MAX_QUOTED`] bytes.
fn quoted(text: &str) -> String {
    if text.len() <= MAX_QUOTED {
        return go_quote(text);
    }
    let mut cut = MAX_QUOTED;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", go_quote(text.get(..cut).unwrap_or("")))
}

/// Where a stretch of rendered output comes from: text of a template copied as it is, or
/// what an action printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Where the stretch starts in the output.
    pub out: usize,
    /// The file it comes from (the name it was added to the set under), and the byte range
    /// there: the text's own, or the action's.
    pub file: Rc<str>,
    pub src: (usize, usize),
    /// Copied text: output byte `out + k` is source byte `src.0 + k`.
    pub copied: bool,
    /// An action that printed a scalar of the data as it is: that value's address in the
    /// data, for the caller to tell which value it was.
    pub value: Option<usize>,
    /// The node of the executed file itself that was running: where a stretch written by
    /// another file's template (`{{ template }}`) was called from.
    pub top: (usize, usize),
}

pub(super) struct Exec<'a, 'b> {
    /// The template executing now.
    cur: Rc<Tmpl>,
    /// The templates `template` and `include` can name; `tpl` adds to a copy.
    defs: Rc<Defs>,
    dialect: Dialect,
    missing: MissingKey,
    host: Option<&'b dyn Host>,
    vars: Vec<(String, Val<'a>)>,
    out: String,
    /// Bytes of the outputs set aside while an `include` or `tpl` renders into a fresh one.
    held: usize,
    budget: &'b mut Budget,
    calls: usize,
    depth: usize,
    /// Set by [`Exec::trace`]: the pieces of the output so far.
    pieces: Option<Vec<Piece>>,
    /// Renders into a buffer of their own (`include`, `tpl`) under way: what they write is
    /// not the output, and is not traced.
    capturing: usize,
    /// The node of the executed file running now, see [`Piece::top`].
    top: (usize, usize),
    /// The output bound: [`MAX_OUTPUT`], or [`MAX_HELM_OUTPUT`] for a chart's files.
    max_output: usize,
    /// `tpl` texts without `define`s, parsed: shared by the executions of one set.
    tpl_cache: TplCache,
}

/// Parsed `tpl` texts by their text.
pub(super) type TplCache = Rc<std::cell::RefCell<std::collections::HashMap<Box<str>, Rc<Tmpl>>>>;

/// How many distinct `tpl` texts a set keeps parsed; more are parsed at each call.
const MAX_TPL_CACHE: usize = 4096;

impl<'a, 'b> Exec<'a, 'b> {
    pub(super) fn new(
        cur: Rc<Tmpl>,
        defs: Rc<Defs>,
        dialect: Dialect,
        missing: MissingKey,
        host: Option<&'b dyn Host>,
        budget: &'b mut Budget,
    ) -> Self {
        Exec {
            cur,
            defs,
            dialect,
            missing,
            host,
            vars: Vec::new(),
            out: String::new(),
            held: 0,
            budget,
            calls: 0,
            depth: 0,
            pieces: None,
            capturing: 0,
            top: (0, 0),
            max_output: match dialect {
                Dialect::Helm => MAX_HELM_OUTPUT,
                _ => MAX_OUTPUT,
            },
            tpl_cache: TplCache::default(),
        }
    }

    /// Shares the parsed `tpl` texts of earlier executions.
    pub(super) fn with_tpl_cache(mut self, cache: &TplCache) -> Self {
        self.tpl_cache = Rc::clone(cache);
        self
    }

    /// Records where each stretch of the output comes from.
    pub(super) fn trace(&mut self) {
        self.pieces = Some(Vec::new());
    }

    fn note(&mut self, src: (usize, usize), copied: bool, value: Option<usize>) {
        if self.capturing > 0 {
            return;
        }
        if self.calls == 0 {
            self.top = src;
        }
        let out = self.out.len();
        let file = Rc::clone(&self.cur.parse_name);
        let top = self.top;
        if let Some(pieces) = &mut self.pieces {
            pieces.push(Piece {
                out,
                file,
                src,
                copied,
                value,
                top,
            });
        }
    }

    /// A template that is not part of a set, with no name: the single-string entry point.
    pub(super) fn single(
        src: &str,
        nodes: Vec<Node>,
        missingkey_error: bool,
        budget: &'b mut Budget,
    ) -> Self {
        let tmpl = Tmpl {
            name: String::new(),
            parse_name: Rc::from(""),
            src: Rc::from(src),
            nodes,
        };
        let missing = if missingkey_error {
            MissingKey::Error
        } else {
            MissingKey::Invalid
        };
        let defs = Rc::new(Defs::new());
        Exec::new(Rc::new(tmpl), defs, Dialect::ArgoCd, missing, None, budget)
    }

    pub(super) fn run(self, data: &'a Value) -> Result<String, TemplateError> {
        self.run_traced(data).map(|(out, _)| out)
    }

    /// [`Exec::run`], with the pieces [`Exec::trace`] asked for (none otherwise).
    pub(super) fn run_traced(
        mut self,
        data: &'a Value,
    ) -> Result<(String, Vec<Piece>), TemplateError> {
        let dot = if data.is_null() {
            Val::Missing
        } else {
            Val::Ref(data)
        };
        self.vars.push(("$".to_string(), dot.clone()));
        let tmpl = Rc::clone(&self.cur);
        match self.walk(&dot, &tmpl.nodes) {
            Ok(_) => Ok((self.out, self.pieces.unwrap_or_default())),
            Err(fail) => Err(locate(&self.cur, fail)),
        }
    }

    /// Executes `tmpl` with `dot`, as Go's `walkTemplate` does: no variables but `$`.
    /// Output goes to `self.out`; an error comes back located in `tmpl`.
    fn exec_tmpl(&mut self, tmpl: Rc<Tmpl>, dot: Val<'a>) -> Res<()> {
        self.calls += 1;
        let vars = std::mem::replace(&mut self.vars, vec![("$".to_string(), dot.clone())]);
        let caller = std::mem::replace(&mut self.cur, tmpl);
        let callee = Rc::clone(&self.cur);
        let walked = self.walk(&dot, &callee.nodes);
        let result = walked.map(drop).map_err(|fail| {
            let e = locate(&self.cur, fail);
            Fail {
                msg: e.message,
                span: None,
                kind: Some(e.kind),
                done: true,
                pos: None,
            }
        });
        self.cur = caller;
        self.vars = vars;
        self.calls -= 1;
        result
    }

    /// Renders `tmpl` into a string of its own, for `include` and `tpl`.
    fn exec_to_string(&mut self, tmpl: Rc<Tmpl>, dot: Val<'a>) -> Result<String, TemplateError> {
        let held = std::mem::take(&mut self.out);
        self.held = self.held.saturating_add(held.len());
        self.capturing += 1;
        let result = self.exec_tmpl(tmpl, dot);
        self.capturing -= 1;
        self.held = self.held.saturating_sub(held.len());
        let out = std::mem::replace(&mut self.out, held);
        match result {
            Ok(()) => Ok(out),
            Err(fail) => Err(locate(&self.cur, fail)),
        }
    }

    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_EXEC_DEPTH {
            self.depth -= 1;
            return Err(Fail {
                kind: Some(ErrorKind::Limit),
                ..Fail::from(format!(
                    "templates nest deeper than {MAX_EXEC_DEPTH} levels"
                ))
            });
        }
        Ok(())
    }

    fn write(&mut self, text: &str) -> Result<(), String> {
        if self.out.len().saturating_add(text.len()) > self.max_output {
            return Err(format!("output exceeds the {}-byte limit", self.max_output));
        }
        // What `include` and `tpl` set aside counts too: nested renders each hold a buffer.
        if self
            .held
            .saturating_add(self.out.len())
            .saturating_add(text.len())
            > MAX_VALUE_BYTES
        {
            return Err(too_large());
        }
        // Output is paid for too: printing one large value in many places copies it each time.
        let copied = text.len() / crate::render::budget::BYTES_PER_STEP;
        self.budget
            .charge(u64::try_from(copied).unwrap_or(u64::MAX))?;
        self.out.push_str(text);
        Ok(())
    }

    fn walk(&mut self, dot: &Val<'a>, nodes: &[Node]) -> Res<Flow> {
        self.enter()?;
        let flow = self.walk_list(dot, nodes);
        self.depth -= 1;
        flow
    }

    fn walk_list(&mut self, dot: &Val<'a>, nodes: &[Node]) -> Res<Flow> {
        for node in nodes {
            self.budget.charge(1)?;
            let flow = match node {
                Node::Text(text, at) => {
                    self.note((*at, at + text.len()), true, None);
                    self.write(text)?;
                    Flow::Next
                }
                Node::Action(pipe) => {
                    let value = self.pipeline(dot, pipe)?;
                    if pipe.decl.is_empty() {
                        let scalar = match &value {
                            Val::Ref(v) if !v.is_object() && !v.is_array() => {
                                Some(*v as *const Value as usize)
                            }
                            _ => None,
                        };
                        self.note(pipe.span, false, scalar);
                        self.print(&value).at(pipe.span)?;
                    }
                    Flow::Next
                }
                Node::If(control) => self.if_or_with(dot, control, false)?,
                Node::With(control) => self.if_or_with(dot, control, true)?,
                Node::Range(control) => self.range(dot, control)?,
                Node::Break => Flow::Break,
                Node::Continue => Flow::Continue,
                Node::Template(call) => {
                    if self.calls == 0 && self.capturing == 0 {
                        self.top = call.span;
                    }
                    self.template(dot, call)?;
                    Flow::Next
                }
            };
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    /// Go's `walkTemplate`: variables the pipeline declares stay in the caller's scope.
    fn template(&mut self, dot: &Val<'a>, call: &TemplateCall) -> Res<()> {
        // Go prints the node as `{{template "name" pipeline}}`.
        let node_error = |this: &Self, msg: String, kind: ErrorKind| {
            let pipe = call
                .pipe
                .as_ref()
                .map(|p| format!(" {}", snippet(&this.cur.src, p.span)))
                .unwrap_or_default();
            let context = format!("{{{{template {}{pipe}}}}}", go_quote(&call.name));
            Fail {
                msg: located(&this.cur, call.span.0, &context, &msg),
                span: None,
                kind: Some(kind),
                done: true,
                pos: None,
            }
        };
        let Some(tmpl) = self.defs.get(&call.name).cloned() else {
            let msg = format!("template {} not defined", go_quote(&call.name));
            return Err(node_error(self, msg, ErrorKind::Invalid));
        };
        if self.calls >= MAX_CALL_DEPTH {
            let msg = format!("exceeded maximum template depth ({MAX_CALL_DEPTH})");
            return Err(node_error(self, msg, ErrorKind::Limit));
        }
        let value = match &call.pipe {
            Some(pipe) => self.pipeline(dot, pipe)?,
            None => Val::Missing,
        };
        self.exec_tmpl(tmpl, value)
    }

    /// Helm's `include`: executes a named template and returns what it wrote.
    fn include(&mut self, args: &[Val<'a>], span: Span) -> Res<Val<'a>> {
        let wrap = |msg: String| Fail::from(format!("error calling include: {msg}")).at_span(span);
        arity(args, 2).map_err(wrap)?;
        let name = str_arg(args, 0).map_err(wrap)?.to_string();
        let data = nth(args, 1).map_err(wrap)?.clone();
        let Some(tmpl) = self.defs.get(&name).cloned() else {
            return Err(wrap(format!(
                "template: no template {} associated with template {}",
                go_quote(&name),
                go_quote(ROOT_NAME)
            )));
        };
        if self.calls >= MAX_CALL_DEPTH {
            // Helm's words for a name included inside itself too often (engine.go
            // `includeFun`); Helm allows 1000 levels of one name, this engine fewer of all.
            let msg = format!(
                "error calling include: rendering template has a nested reference name: \
                 {name}: unable to execute template"
            );
            return Err(Fail::limit(msg, span));
        }
        match self.exec_to_string(tmpl, data) {
            Ok(out) => Ok(Val::str(out)),
            Err(e) => {
                let msg = format!("error calling include: {}", e.message);
                Err(Fail::wrapping(msg, &e, span))
            }
        }
    }

    /// Helm's `tpl`: parses the text as a template named "gotpl" in a copy of the set, so
    /// its `define`s are seen only inside it, executes it with the given dot, and deletes
    /// `<no value>` from the result (engine.go `tplFun`).
    fn tpl(&mut self, args: &[Val<'a>], span: Span) -> Res<Val<'a>> {
        let wrap = |msg: String| Fail::from(format!("error calling tpl: {msg}")).at_span(span);
        arity(args, 2).map_err(wrap)?;
        let text = str_arg(args, 0).map_err(wrap)?.to_string();
        let data = nth(args, 1).map_err(wrap)?.clone();
        if self.calls >= MAX_CALL_DEPTH {
            let msg = format!("exceeded maximum template depth ({MAX_CALL_DEPTH})");
            return Err(Fail::limit(format!("error calling tpl: {msg}"), span));
        }
        let cost = self.defs.len().saturating_mul(NODE_WEIGHT);
        self.budget.charge_bytes(cost).at(span)?;
        // Charts call `tpl` on the same few values from every template; a text without
        // `define`s leaves the set as it is, so its tree is parsed once per set and the set
        // is not copied.
        let cached = self.tpl_cache.borrow().get(text.as_str()).cloned();
        let (main, defs) = match cached {
            Some(main) => (main, None),
            None => {
                let parsed = Parser::parse_in(&text, self.dialect, true).map_err(|e| {
                    let e = named_parse_error(e, ROOT_NAME);
                    let msg = format!(
                        "error calling tpl: cannot parse template {}: {}",
                        quoted(&text),
                        e.message
                    );
                    Fail::wrapping(msg, &e, span)
                })?;
                let parse_name: Rc<str> = Rc::from(ROOT_NAME);
                let src: Rc<str> = Rc::from(text.as_str());
                let main = Rc::new(Tmpl {
                    name: ROOT_NAME.to_string(),
                    parse_name: Rc::clone(&parse_name),
                    src: Rc::clone(&src),
                    nodes: parsed.root,
                });
                if parsed.defines.is_empty() {
                    let mut cache = self.tpl_cache.borrow_mut();
                    if cache.len() < MAX_TPL_CACHE {
                        cache.insert(text.clone().into_boxed_str(), Rc::clone(&main));
                    }
                    (main, None)
                } else {
                    let mut defs = (*self.defs).clone();
                    for (name, nodes) in parsed.defines {
                        let tmpl = Tmpl {
                            name,
                            parse_name: Rc::clone(&parse_name),
                            src: Rc::clone(&src),
                            nodes,
                        };
                        associate(&mut defs, tmpl);
                    }
                    (main, Some(Rc::new(defs)))
                }
            }
        };
        let outer = match defs {
            Some(defs) => std::mem::replace(&mut self.defs, defs),
            None => Rc::clone(&self.defs),
        };
        let result = self.exec_to_string(main, data);
        self.defs = outer;
        match result {
            Ok(out) => Ok(Val::str(out.replace("<no value>", ""))),
            Err(e) => {
                let msg = format!(
                    "error calling tpl: error during tpl function execution for {}: {}",
                    quoted(&text),
                    e.message
                );
                Err(Fail::wrapping(msg, &e, span))
            }
        }
    }

    fn print(&mut self, value: &Val<'a>) -> Res<()> {
        let value = self.plain(value.clone())?;
        Ok(self.print_plain(&value)?)
    }

    fn print_plain(&mut self, value: &Val<'a>) -> Result<(), String> {
        match value.value() {
            None => self.write("<no value>"),
            Some(Value::String(s)) => self.write(s),
            Some(v) => {
                let mut out = Out::new(self.max_output.saturating_sub(self.out.len()));
                write_v(&mut out, v, 0)
                    .map_err(|_| format!("output exceeds the {}-byte limit", self.max_output))?;
                self.write(&out.buf)
            }
        }
    }

    fn if_or_with(&mut self, dot: &Val<'a>, control: &Control, with: bool) -> Res<Flow> {
        let scope = self.vars.len();
        let value = self.pipeline(dot, &control.pipe)?;
        let shown = self.plain(value.clone()).at(control.pipe.span)?;
        let flow = if truth(&shown) {
            let inner = if with { value } else { dot.clone() };
            self.walk(&inner, &control.list)?
        } else if let Some(else_list) = &control.else_list {
            self.walk(dot, else_list)?
        } else {
            Flow::Next
        };
        self.vars.truncate(scope);
        Ok(flow)
    }

    fn range(&mut self, dot: &Val<'a>, control: &Control) -> Res<Flow> {
        let scope = self.vars.len();
        let value = self.pipeline(dot, &control.pipe)?;
        let value = self.plain(value).at(control.pipe.span)?;
        let mark = self.vars.len();
        let flow = self
            .range_over(dot, control, &value, mark)
            .at(control.pipe.span)?;
        self.vars.truncate(scope);
        Ok(flow)
    }

    fn range_over(
        &mut self,
        dot: &Val<'a>,
        control: &Control,
        value: &Val<'a>,
        mark: usize,
    ) -> Res<Flow> {
        let ran = match value.value() {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) => self.range_list(control, value, items.len(), mark)?,
            Some(Value::Object(map)) => self.range_map(control, value, map, mark)?,
            Some(Value::Number(n)) if n.as_i64().is_some() => {
                self.range_count(control, n.as_i64().unwrap_or(0), mark)?
            }
            Some(other) => {
                let shown = strval(Some(other))?;
                return Err(format!("range can't iterate over {shown}").into());
            }
        };
        match &control.else_list {
            Some(else_list) if !ran => self.walk(dot, else_list),
            _ => Ok(Flow::Next),
        }
    }

    /// Returns whether the body ran at all (else the `{{else}}` branch runs).
    fn range_list(
        &mut self,
        control: &Control,
        list: &Val<'a>,
        len: usize,
        mark: usize,
    ) -> Res<bool> {
        for i in 0..len {
            let elem = child(self.budget, list, &Key::Index(i))?.unwrap_or(Val::Missing);
            let index = Val::int(i64::try_from(i).unwrap_or(i64::MAX));
            if self.iteration(control, mark, index, elem)? {
                break;
            }
        }
        Ok(len > 0)
    }

    fn range_map(
        &mut self,
        control: &Control,
        value: &Val<'a>,
        map: &Map<String, Value>,
        mark: usize,
    ) -> Res<bool> {
        // Go ranges over maps in sorted key order.
        self.budget
            .charge_bytes(map.len().saturating_mul(NODE_WEIGHT))?;
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for key in &keys {
            let elem = child(self.budget, value, &Key::Field(key))?.unwrap_or(Val::Missing);
            if self.iteration(control, mark, Val::str(key.as_str()), elem)? {
                break;
            }
        }
        Ok(!keys.is_empty())
    }

    /// Go 1.22+ ranges over an integer: 0, 1, ..., n-1.
    fn range_count(&mut self, control: &Control, count: i64, mark: usize) -> Res<bool> {
        for i in 0..count {
            if self.iteration(control, mark, Val::int(i), Val::int(i))? {
                break;
            }
        }
        Ok(count > 0)
    }

    /// One pass of a range body; returns true when `{{break}}` ends the loop.
    fn iteration(
        &mut self,
        control: &Control,
        mark: usize,
        key: Val<'a>,
        elem: Val<'a>,
    ) -> Res<bool> {
        self.budget.iterate()?;
        let len = self.vars.len();
        let decls = control.pipe.decl.len();
        if decls >= 1 {
            if let Some(slot) = len.checked_sub(1).and_then(|i| self.vars.get_mut(i)) {
                slot.1 = elem.clone();
            }
        }
        if decls >= 2 {
            if let Some(slot) = len.checked_sub(2).and_then(|i| self.vars.get_mut(i)) {
                slot.1 = key;
            }
        }
        let flow = self.walk(&elem, &control.list)?;
        self.vars.truncate(mark);
        Ok(flow == Flow::Break)
    }

    fn pipeline(&mut self, dot: &Val<'a>, pipe: &Pipe) -> Res<Val<'a>> {
        self.enter()?;
        let value = self.pipeline_inner(dot, pipe);
        self.depth -= 1;
        value
    }

    fn pipeline_inner(&mut self, dot: &Val<'a>, pipe: &Pipe) -> Res<Val<'a>> {
        let mut value: Option<Val<'a>> = None;
        for cmd in &pipe.cmds {
            let result = self.command(dot, cmd, value.take())?;
            value = Some(result.dig());
        }
        let value = value.unwrap_or(Val::Missing);
        for name in &pipe.decl {
            if pipe.is_assign {
                self.assign(name, value.clone()).at(pipe.span)?;
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    /// `fin` is the previous pipeline stage's value, passed as the last argument.
    fn command(&mut self, dot: &Val<'a>, cmd: &Cmd, fin: Option<Val<'a>>) -> Res<Val<'a>> {
        self.budget.charge(1)?;
        let Some((first, rest)) = cmd.args.split_first() else {
            return Err(Fail::from("empty command".to_string()));
        };
        let has_args = !rest.is_empty() || fin.is_some();
        match &first.term {
            Term::Func(name) => self.call(dot, name, rest, fin, cmd.span),
            Term::Field(names) => self
                .fields(dot, dot.clone(), names, rest, fin, first.span)
                .map_err(|f| f.placed(first.at)),
            Term::Var(name, names) if !names.is_empty() => {
                let base = self.var(name).at(first.span)?;
                self.fields(dot, base, names, rest, fin, first.span)
                    .map_err(|f| f.placed(first.at))
            }
            Term::Chain(head, names) => {
                let base = self.eval_arg(dot, head, first.span, first.span.0)?;
                self.fields(dot, base, names, rest, fin, first.span)
                    .map_err(|f| f.placed(first.at))
            }
            Term::Nil => Err("nil is not a command".to_string()).at(first.span),
            term => {
                if has_args {
                    let shown = snippet(&self.cur.src, first.span);
                    return Err(format!("can't give argument to non-function {shown}"))
                        .at(first.span);
                }
                self.eval_arg(dot, term, first.span, first.at)
            }
        }
    }

    /// Evaluates an operand used as an argument.
    /// `at` is where Go places a field chain's node (see [`Operand::at`]).
    fn eval_arg(&mut self, dot: &Val<'a>, term: &Term, span: Span, at: usize) -> Res<Val<'a>> {
        self.budget.charge(1)?;
        match term {
            Term::Dot => Ok(dot.clone()),
            Term::Nil => Ok(Val::new(Value::Null)),
            Term::Const(value) => Ok(Val::Lit(std::sync::Arc::clone(value))),
            Term::Field(names) => self
                .fields(dot, dot.clone(), names, &[], None, span)
                .map_err(|f| f.placed(at)),
            Term::Var(name, names) => {
                let base = self.var(name).at(span)?;
                self.fields(dot, base, names, &[], None, span)
                    .map_err(|f| f.placed(at))
            }
            Term::Func(name) => self.call(dot, name, &[], None, span),
            Term::Pipe(pipe) => self.pipeline(dot, pipe),
            Term::Chain(head, names) => {
                let base = self.eval_arg(dot, head, span, span.0)?;
                self.fields(dot, base, names, &[], None, span)
                    .map_err(|f| f.placed(at))
            }
        }
    }

    /// A chain of field lookups; the last one gets the command's arguments, which only a
    /// host object's method takes (Go's `evalFieldChain`).
    fn fields(
        &mut self,
        dot: &Val<'a>,
        mut receiver: Val<'a>,
        names: &[String],
        rest: &[Operand],
        mut fin: Option<Val<'a>>,
        span: Span,
    ) -> Res<Val<'a>> {
        self.budget
            .charge(u64::try_from(names.len()).unwrap_or(u64::MAX))
            .at(span)?;
        let has_args = !rest.is_empty() || fin.is_some();
        // A value a template built (`dict "context" $`): walk as far as plain lookups go
        // inside it, and keep where they end as a member shared with it.
        let mut skip = 0;
        let built = match &receiver {
            Val::Own(rc) => Some((Rc::clone(rc), Vec::new())),
            Val::Part(rc, path) => Some((Rc::clone(rc), path.to_vec())),
            _ => None,
        };
        if let Some((root, mut path)) = built {
            let usable = names.len() - usize::from(has_args);
            let mut at: Option<&Value> = receiver.value();
            for name in &names[..usable] {
                match at
                    .and_then(|v| v.as_object())
                    .and_then(|m| m.get(name.as_str()))
                {
                    Some(member) => {
                        at = Some(member);
                        path.push(PathKey::Field(name.as_str().into()));
                        skip += 1;
                    }
                    None => break,
                }
            }
            if skip > 0 {
                self.budget
                    .charge_bytes(NODE_WEIGHT * path.len())
                    .at(span)?;
                receiver = Val::Part(root, path.into());
            }
        }
        for (i, name) in names.iter().enumerate().skip(skip) {
            let last = i + 1 == names.len();
            let next = match self.host_method(&receiver, name) {
                Some(host) => {
                    let mut args = Vec::new();
                    if last {
                        for param in rest {
                            args.push(self.eval_arg(dot, &param.term, param.span, param.at)?);
                        }
                        args.extend(fin.take());
                    }
                    self.host_call(host, &receiver, name, &args).at(span)?
                }
                None => self.field(&receiver, name, last && has_args).at(span)?,
            };
            receiver = next;
        }
        Ok(receiver)
    }

    /// A host object as functions, `range`, conditions and printing see it: its plain Go
    /// value (see [`Host::plain`]). Anything else is returned as it is.
    fn plain(&mut self, value: Val<'a>) -> Res<Val<'a>> {
        let (Some(host), Some(Value::Object(map))) = (self.host, value.value()) else {
            return Ok(value);
        };
        if !map.contains_key(HOST_KEY) {
            return Ok(value);
        }
        match host.plain(map) {
            Some(plain) => {
                // A chart's files can pass the bound on values a template builds (Go shares
                // their bytes; here they are copied): charged as work, not refused.
                let weight = match &plain {
                    Value::Object(map) => map.iter().fold(0usize, |n, (k, v)| {
                        n.saturating_add(k.len())
                            .saturating_add(v.as_str().map_or(NODE_WEIGHT, str::len))
                    }),
                    other => weigh(other)?,
                };
                self.budget.charge_bytes(weight)?;
                Ok(Val::new(plain))
            }
            None => Ok(value),
        }
    }

    /// The host, when `.name` on `receiver` is a method call (see [`Host`]).
    fn host_method(&self, receiver: &Val<'a>, name: &str) -> Option<&'b dyn Host> {
        let host = self.host?;
        match receiver.value() {
            Some(Value::Object(map)) if map.contains_key(HOST_KEY) && !map.contains_key(name) => {
                Some(host)
            }
            _ => None,
        }
    }

    fn host_call(
        &mut self,
        host: &dyn Host,
        receiver: &Val<'a>,
        name: &str,
        args: &[Val<'a>],
    ) -> Result<Val<'a>, String> {
        let Some(Value::Object(map)) = receiver.value() else {
            return Err(format!("can't evaluate field {name}"));
        };
        let mut total = 0usize;
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            values.push(super::value::own(self.budget, arg, &mut total)?);
        }
        let result = host
            .call(map, name, &values)
            .map_err(|msg| format!("error calling {name}: {msg}"))?;
        let weight = weigh(&result)?;
        self.budget.charge_bytes(weight)?;
        Ok(Val::new(result))
    }

    fn field(&mut self, receiver: &Val<'a>, name: &str, has_args: bool) -> Result<Val<'a>, String> {
        let missing_error = self.missing == MissingKey::Error;
        match receiver.value() {
            None if missing_error => Err(format!("nil data; no entry for key {name:?}")),
            None => Ok(Val::Missing),
            Some(Value::Null) => Err(format!("nil pointer evaluating interface {{}}.{name}")),
            Some(Value::Object(map)) => {
                if has_args {
                    return Err(format!("{name} is not a method but has arguments"));
                }
                if map.contains_key(name) {
                    Ok(child(self.budget, receiver, &Key::Field(name))?.unwrap_or(Val::Missing))
                } else {
                    match self.missing {
                        MissingKey::Error => Err(format!("map has no entry for key {name:?}")),
                        MissingKey::Zero => Ok(Val::new(Value::Null)),
                        MissingKey::Invalid => Ok(Val::Missing),
                    }
                }
            }
            Some(other) => Err(format!(
                "can't evaluate field {name} in type {}",
                go_type(other)
            )),
        }
    }

    fn var(&mut self, name: &str) -> Result<Val<'a>, String> {
        let found = self.vars.iter().rev().position(|(n, _)| n == name);
        // Lookups scan the scope, so deep scopes cost more.
        let scanned = found.unwrap_or(self.vars.len());
        self.budget.charge_bytes(scanned.saturating_mul(8))?;
        found
            .and_then(|back| self.vars.iter().rev().nth(back))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("undefined variable: {name}"))
    }

    fn assign(&mut self, name: &str, value: Val<'a>) -> Result<(), String> {
        match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
            Some(slot) => {
                slot.1 = value;
                Ok(())
            }
            None => Err(format!("undefined variable: {name}")),
        }
    }

    fn call(
        &mut self,
        dot: &Val<'a>,
        name: &str,
        params: &[Operand],
        fin: Option<Val<'a>>,
        span: Span,
    ) -> Res<Val<'a>> {
        self.budget.charge(1)?;
        if name == "and" || name == "or" {
            return self.and_or(dot, name == "or", params, fin).at(span);
        }
        let helm = is_helm_func(self.dialect, name);
        if let Some(v) = random_stand_in(name).filter(|_| self.dialect == Dialect::Helm) {
            for param in params {
                self.eval_arg(dot, &param.term, param.span, param.at)?;
            }
            return Ok(v);
        }
        if UNSUPPORTED.contains(name) && !helm || helm && HELM_UNSUPPORTED.contains(&name) {
            return Err(Fail::unsupported(
                format!("function {name:?} is not supported offline"),
                span,
            ));
        }
        let mut args = Vec::with_capacity(params.len() + 1);
        for param in params {
            args.push(self.eval_arg(dot, &param.term, param.span, param.at)?);
        }
        args.extend(fin);
        // Functions that only hold on to a value keep a host object's methods, as a Go
        // value keeps its type through `interface{}`; the others see its plain value.
        if !KEEPS_HOST.contains(&name) {
            for arg in &mut args {
                *arg = self.plain(std::mem::replace(arg, Val::Missing)).at(span)?;
            }
        }
        // Functions scan their string arguments (`contains`, `eq`, `sha256sum`, ...).
        for arg in &args {
            if let Some(Value::String(s)) = arg.value() {
                self.budget.charge_bytes(s.len()).at(span)?;
            }
        }
        if helm && name == "include" {
            return self.include(&args, span);
        }
        if helm && name == "tpl" {
            return self.tpl(&args, span);
        }
        let own = if helm {
            call_helm(name, &args, self.budget)
        } else {
            None
        };
        let called = match own {
            Some(result) => result,
            None => call_func(name, &args, self.budget),
        };
        let result = called.map_err(|msg| {
            let msg = format!("error calling {name}: {msg}");
            // Only names the dialect defines get this far: one not implemented is this
            // engine's gap.
            if IMPLEMENTED.contains(name) || helm {
                Fail::from(msg).at_span(span)
            } else {
                Fail::unsupported(msg, span)
            }
        })?;
        if let Val::Own(value) = &result {
            let weight = weigh(value).at(span)?;
            self.budget.charge_bytes(weight).at(span)?;
        }
        if MUTATES.contains(&name) {
            match params.first().map(|p| &p.term) {
                Some(Term::Var(var, path)) => {
                    let base = self.var(var).at(span)?;
                    self.share_change(base, path, &result).at(span)?;
                    self.write_back(var, path, &result).at(span)?;
                }
                Some(Term::Field(path)) => {
                    self.share_change(dot.clone(), path, &result).at(span)?
                }
                Some(Term::Dot) => self.share_change(dot.clone(), &[], &result).at(span)?,
                _ => {}
            }
        }
        Ok(result)
    }

    /// Keeps a change `set`/`unset`/`merge` made to a map of the data (see
    /// [`super::value::shared`]): the map `path` names below `base`, or, when that map is itself a
    /// copy, the nearest data map above it, rebuilt with the change.
    fn share_change(
        &mut self,
        base: Val<'a>,
        path: &[String],
        changed: &Val<'a>,
    ) -> Result<(), String> {
        let Some(changed) = changed.value().filter(|v| v.is_object()) else {
            return Ok(());
        };
        if !shared::active() {
            return Ok(());
        }
        let mut raws: Vec<Option<&'a Value>> = Vec::with_capacity(path.len() + 1);
        let mut effs: Vec<Val<'a>> = Vec::with_capacity(path.len() + 1);
        match base {
            Val::Ref(r) => {
                raws.push(Some(r));
                effs.push(Val::Ref(r));
            }
            other => {
                raws.push(None);
                effs.push(other);
            }
        }
        for name in path {
            let parent = effs.last().cloned().unwrap_or(Val::Missing);
            let (raw, eff) = match parent {
                Val::Ref(p) => match p.get(name.as_str()) {
                    Some(c) => (
                        Some(c),
                        child(self.budget, &Val::Ref(p), &Key::Field(name))?,
                    ),
                    None => return Ok(()),
                },
                Val::Own(_) | Val::Part(..) | Val::Lit(_) => {
                    (None, child(self.budget, &parent, &Key::Field(name))?)
                }
                Val::Missing => return Ok(()),
            };
            raws.push(raw);
            effs.push(eff.unwrap_or(Val::Missing));
        }
        let mut value = changed.clone();
        for i in (0..raws.len()).rev() {
            if let Some(raw) = raws[i] {
                self.budget.charge_bytes(weigh(&value)?)?;
                shared::replace(raw, value);
                return Ok(());
            }
            let Some(Value::Object(mut parent)) = i
                .checked_sub(1)
                .and_then(|p| effs.get(p))
                .and_then(|v| v.value().cloned())
            else {
                return Ok(());
            };
            parent.insert(path[i - 1].clone(), value);
            value = Value::Object(parent);
        }
        Ok(())
    }

    /// Sprig's `set`, `unset` and `merge` change the Go map they are given, and every holder of
    /// that map sees the change: `$_ := set $labels "k" "v"` adds to `$labels`. Values here
    /// are immutable, so the changed map is stored back where the first argument was read
    /// from when that is a variable or a field of one (the way charts use them); a map reached
    /// some other way (`.`, a map shared by two variables) keeps its old value.
    fn write_back(&mut self, var: &str, path: &[String], changed: &Val<'a>) -> Result<(), String> {
        let Some(changed) = changed.value().filter(|v| v.is_object()) else {
            return Ok(());
        };
        if path.is_empty() {
            return self.assign(var, Val::new(changed.clone()));
        }
        let Some(mut whole) = self.var(var)?.value().cloned() else {
            return Ok(());
        };
        let mut slot = &mut whole;
        for key in path {
            match slot.as_object_mut().and_then(|m| m.get_mut(key.as_str())) {
                Some(next) => slot = next,
                None => return Ok(()),
            }
        }
        *slot = changed.clone();
        let weight = weigh(&whole)?;
        self.budget.charge_bytes(weight)?;
        self.assign(var, Val::new(whole))
    }

    /// `and` and `or` short-circuit and return one of their operands, as in Go.
    fn and_or(
        &mut self,
        dot: &Val<'a>,
        is_or: bool,
        params: &[Operand],
        fin: Option<Val<'a>>,
    ) -> Res<Val<'a>> {
        if params.is_empty() && fin.is_none() {
            return Err(Fail::from(
                "wrong number of args: want at least 1 got 0".to_string(),
            ));
        }
        let mut last = Val::Missing;
        for param in params {
            let value = self.eval_arg(dot, &param.term, param.span, param.at)?;
            if truth(&value) == is_or {
                return Ok(value);
            }
            last = value;
        }
        Ok(fin.unwrap_or(last))
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::{check, data, render_go};
    use serde_json::json;

    #[test]
    fn missing_keys_in_both_modes() {
        check(&[
            (
                "{{ .nope }}|{{ .nope.deeper }}|{{ .nothing }}",
                Ok("<no value>|<no value>|<no value>"),
            ),
            ("{{ index .labels \"nope\" }}", Ok("<no value>")),
            ("{{ .nothing.x }}", Err("nil pointer evaluating")),
            (
                "{{ .name.x }}",
                Err("can't evaluate field x in type string"),
            ),
        ]);
        let err = render_go("{{ .nope }}", &data(), true).unwrap_err();
        assert!(
            err.message.contains("map has no entry for key \"nope\""),
            "{}",
            err.message
        );
        assert!(err.message.contains("<.nope>"), "{}", err.message);
        let err = render_go("{{ .path.nope }}", &data(), true).unwrap_err();
        assert!(err.message.contains("map has no entry for key \"nope\""));
        // Go places a field chain at its second field.
        assert!(err
            .message
            .starts_with("template: :1:8: executing at <.path.nope>"));
        assert_eq!(
            render_go("{{ .path.basename }}", &data(), true).unwrap(),
            "foo"
        );
    }

    #[test]
    fn pipelines() {
        check(&[
            ("{{ .name | lower | quote }}", Ok("\"myapp\"")),
            (
                "{{ .path.basename | printf \"%s-%s\" \"app\" | upper }}",
                Ok("APP-FOO"),
            ),
            ("{{ .name | trunc 2 }}", Ok("My")),
            ("{{ .name | \"x\" }}", Err("non executable command")),
            ("{{ .name 1 }}", Err("not a method but has arguments")),
            (
                "{{ \"a\" \"b\" }}",
                Err("can't give argument to non-function"),
            ),
            ("{{ .nope | lower }}", Err("invalid value; expected string")),
        ]);
    }

    #[test]
    fn set_and_merge_change_the_map_a_variable_holds() {
        check(&[
            (
                "{{ $d := dict \"a\" 1 }}{{ with .name }}{{ $_ := set $d \"b\" . }}{{ end }}{{ $d | toJson }}",
                Ok(r#"{"a":1,"b":"MyApp"}"#),
            ),
            (
                "{{ $d := dict \"in\" (dict) }}{{ $_ := set $d.in \"k\" 2 }}{{ $_ := unset $d \"x\" }}{{ $d | toJson }}",
                Ok(r#"{"in":{"k":2}}"#),
            ),
            (
                "{{ $d := dict \"a\" 1 }}{{ $_ := merge $d (dict \"a\" 2 \"b\" 3) }}{{ $_ := mergeOverwrite $d (dict \"c\" 4) }}{{ $d | toJson }}",
                Ok(r#"{"a":1,"b":3,"c":4}"#),
            ),
        ]);
    }

    #[test]
    fn conditionals_and_with() {
        check(&[
            (
                "{{if eq .env \"dev\"}}d{{else if eq .env \"prod\"}}p{{else}}o{{end}}",
                Ok("p"),
            ),
            (
                "{{if .empty}}y{{else}}n{{end}}{{if .labels}}y{{end}}",
                Ok("ny"),
            ),
            ("{{with .labels}}{{.team}}{{else}}none{{end}}", Ok("core")),
            ("{{with .nope}}x{{else with .env}}{{.}}{{end}}", Ok("prod")),
            ("{{ if and .enabled (not .empty) }}on{{ end }}", Ok("on")),
            (
                "{{ or .empty .nope \"fallback\" }}|{{ and .enabled 0 }}",
                Ok("fallback|0"),
            ),
            (
                "{{ if eq .env \"a\" \"b\" \"prod\" }}multi{{ end }}",
                Ok("multi"),
            ),
            (
                "{{ eq .nope \"x\" }} {{ ne .replicas 2 }} {{ lt 1 2 }} {{ ge \"b\" \"a\" }}",
                Ok("false true true true"),
            ),
            ("{{ eq .replicas \"3\" }}", Err("incompatible types")),
            ("{{ lt .nope 1 }}", Err("invalid type for comparison")),
        ]);
    }

    #[test]
    fn range_with_variables() {
        check(&[
            (
                "{{range $i, $s := .path.segments}}{{$i}}={{$s}};{{end}}",
                Ok("0=apps;1=foo;"),
            ),
            (
                "{{range $k, $v := .labels}}{{$k}}:{{$v}} {{end}}",
                Ok("team:core tier:web "),
            ),
            ("{{range .path.segments}}[{{.}}]{{end}}", Ok("[apps][foo]")),
            ("{{range .nope}}x{{else}}empty{{end}}", Ok("empty")),
            (
                "{{range $i, $s := .path.segments}}{{if $i}}{{break}}{{end}}{{$s}}{{end}}",
                Ok("apps"),
            ),
            (
                "{{range .path.segments}}{{if eq . \"apps\"}}{{continue}}{{end}}{{.}}{{end}}",
                Ok("foo"),
            ),
            ("{{range 3}}{{.}}{{end}}", Ok("012")),
            (
                "{{ $x := \"a\" }}{{ range .path.segments }}{{ $x = . }}{{ end }}{{ $x }}",
                Ok("foo"),
            ),
            (
                "{{ range .name }}{{ end }}",
                Err("range can't iterate over MyApp"),
            ),
            ("{{ break }}", Err("{{break}} outside {{range}}")),
        ]);
    }

    #[test]
    fn template_patch_style_block() {
        let d = json!({"cluster": "prod-eu", "valueFiles": ["a.yaml", "b.yaml"], "auto": true});
        let t = "spec:\n  source:\n    helm:\n      valueFiles:\n      {{- range $f := .valueFiles }}\n        - {{ $f }}\n      {{- end }}\n  {{- if .auto }}\n  syncPolicy:\n    automated: {}\n  {{- end }}\n";
        let want = "spec:\n  source:\n    helm:\n      valueFiles:\n        - a.yaml\n        - b.yaml\n  syncPolicy:\n    automated: {}\n";
        assert_eq!(render_go(t, &d, true).unwrap(), want);
    }
}
