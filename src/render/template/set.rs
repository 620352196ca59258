//! Template sets: several files parsed into one namespace of named templates, as
//! text/template's `Template` holds them and Helm's engine (helm v3.17 `pkg/engine/engine.go`)
//! builds one for a chart and its subcharts.

use super::exec::{Exec, MissingKey, Piece};
use super::parser::{is_empty_tree, Node, Parser};
use super::value::Budget;
use super::{ErrorKind, TemplateError, Work};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

/// Which function table a set parses and executes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Argo CD's ApplicationSet templates: Go builtins, Sprig without `env` and `expandenv`,
    /// and Argo CD's own functions; a missing key prints `<no value>`.
    ArgoCd,
    /// Helm charts: Go builtins, Sprig without `env` and `expandenv`, and Helm's own
    /// functions (`include`, `tpl`, `required`, `toYaml`, `lookup`, ...). Executes with
    /// `missingkey=zero` and deletes `<no value>` from what a file renders, as Helm does.
    Helm,
}

/// Go values with methods, which plain JSON cannot carry: Helm's `.Files`,
/// `.Capabilities.APIVersions`, `.Chart.IsRoot`. A JSON object holding the key [`HOST_KEY`]
/// is such a value; `.X` on it, when it has no key `X`, calls [`Host::call`] with the
/// command's arguments (`.Files.Get "a.txt"`, `(.Files.Glob "x/*").AsConfig`). Being plain
/// JSON, it survives variables, `dict`, `set`, `include` and `tpl` unchanged.
pub trait Host {
    /// Calls `method` on `receiver`, the JSON object carrying [`HOST_KEY`], with the
    /// evaluated arguments (a missing value is `null`). `Err(msg)` becomes a template error
    /// `error calling METHOD: msg`.
    fn call(
        &self,
        receiver: &Map<String, Value>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, String>;
}

/// The key that marks a JSON object as a host object (see [`Host`]). No YAML or JSON key a
/// template can name starts with a NUL character.
pub const HOST_KEY: &str = "\u{0}host";

/// One named template: a file's own text, or a `define`/`block` body.
#[derive(Debug)]
pub(super) struct Tmpl {
    /// The name it executes under (`executing "NAME"` in errors).
    pub(super) name: String,
    /// The file it was parsed from, which locations in errors name.
    pub(super) parse_name: Rc<str>,
    /// The whole text of that file: node spans are offsets into it.
    pub(super) src: Rc<str>,
    pub(super) nodes: Vec<Node>,
}

pub(super) type Defs = BTreeMap<String, Rc<Tmpl>>;

/// The name of the template Helm's engine creates first and binds `include` and `tpl` to
/// (engine.go `template.New("gotpl")`): text given to `tpl` is parsed under it.
pub(super) const ROOT_NAME: &str = "gotpl";

/// text/template's `associate`: a new template replaces one of the same name, unless the new
/// one is empty and the old one is not.
pub(super) fn associate(defs: &mut Defs, tmpl: Tmpl) {
    if let Some(old) = defs.get(&tmpl.name) {
        if is_empty_tree(&tmpl.nodes) && !is_empty_tree(&old.nodes) {
            return;
        }
    }
    defs.insert(tmpl.name.clone(), Rc::new(tmpl));
}

/// Parses `text` as the file `name` into `defs`: its `define`s first, then its own tree,
/// which a `define` of the file's own name does not survive (Go would refuse both if
/// non-empty: `multiple definition of template`).
pub(super) fn parse_into(
    defs: &mut Defs,
    dialect: Dialect,
    name: &str,
    text: &str,
) -> Result<(), TemplateError> {
    let parsed = Parser::parse_in(text, dialect, true).map_err(|e| named_parse_error(e, name))?;
    if parsed
        .defines
        .iter()
        .any(|(n, body)| n == name && !is_empty_tree(body))
        && !is_empty_tree(&parsed.root)
    {
        let msg = format!("template: {name}:1: template: multiple definition of template {name:?}");
        return Err(TemplateError::new(msg));
    }
    let parse_name: Rc<str> = Rc::from(name);
    let src: Rc<str> = Rc::from(text);
    let tmpl = |name: String, nodes: Vec<Node>| Tmpl {
        name,
        parse_name: Rc::clone(&parse_name),
        src: Rc::clone(&src),
        nodes,
    };
    for (def_name, body) in parsed.defines {
        associate(defs, tmpl(def_name, body));
    }
    associate(defs, tmpl(name.to_string(), parsed.root));
    Ok(())
}

/// Parse errors name the file, as Go's `template: NAME:LINE: msg` does.
pub(super) fn named_parse_error(mut e: TemplateError, name: &str) -> TemplateError {
    if let Some(rest) = e.message.strip_prefix("template: :") {
        e.message = format!("template: {name}:{rest}");
    }
    e
}

/// Files and the templates they define, executed by name.
///
/// Helm adds a chart's files (its own and its subcharts', every file under `templates/`
/// including `_helpers.tpl`) in one order, and a later definition of a name replaces an
/// earlier one: see [`helm_parse_order`].
pub struct TemplateSet {
    dialect: Dialect,
    defs: Rc<Defs>,
}

/// Sorts file names into the order Helm parses them in (engine.go `sortTemplates`): more
/// `/` first, then names with as many `/` in descending byte order. Since later definitions
/// win, the chart's own `define`s override its subcharts', and among files at one depth the
/// first by name wins.
pub fn helm_parse_order(names: &mut [String]) {
    names.sort_by(|a, b| {
        let (ca, cb) = (a.matches('/').count(), b.matches('/').count());
        cb.cmp(&ca).then_with(|| b.cmp(a))
    });
}

impl TemplateSet {
    /// An empty set with the functions of `dialect`.
    pub fn new(dialect: Dialect) -> Self {
        TemplateSet {
            dialect,
            defs: Rc::new(Defs::new()),
        }
    }

    /// Parses one file under its name (e.g. "podinfo/templates/deployment.yaml"). The file
    /// and its `define`s join the set; a later definition of a name replaces an earlier one
    /// (an empty body never replaces a non-empty one), as Go's `AddParseTree` does. For Helm,
    /// add files in [`helm_parse_order`]. Parse errors read `template: NAME:LINE: msg`.
    pub fn add(&mut self, name: &str, text: &str, work: &mut Work) -> Result<(), TemplateError> {
        if let Some(why) = work.exhausted() {
            let msg = "template: evaluation stopped: the budget is spent";
            return Err(TemplateError::of_kind(msg, ErrorKind::Budget(why)));
        }
        let mut budget = Budget::new(std::mem::take(work));
        let charged = budget.charge_bytes(text.len());
        *work = budget.work;
        if let Err(msg) = charged {
            let kind = work.exhausted().map_or(ErrorKind::Limit, ErrorKind::Budget);
            return Err(TemplateError::of_kind(format!("template: {msg}"), kind));
        }
        parse_into(Rc::make_mut(&mut self.defs), self.dialect, name, text)
    }

    /// Whether a file or `define` of this name is in the set.
    pub fn has(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }

    /// Executes a file or defined template by name with `data` as dot; `host` answers
    /// method calls on host objects (see [`Host`]). With [`Dialect::Helm`] a missing map key
    /// is Go's `missingkey=zero` (a nil, so `.a.b` under a missing `a` fails as in Helm) and
    /// `<no value>` is deleted from the output (engine.go `render`). Errors read
    /// `template: FILE:LINE:COL: executing "NAME" at <...>: msg`, Go's wording; Helm's own
    /// rewording of them (`cleanupExecError`) is left to the caller, and `fail` and `required`
    /// messages keep Helm's `HELM_ERR_START`/`HELM_ERR_END` markers for it.
    pub fn execute(
        &self,
        name: &str,
        data: &Value,
        host: Option<&dyn Host>,
        work: &mut Work,
    ) -> Result<String, TemplateError> {
        self.run(name, data, host, work, false).map(|(out, _)| out)
    }

    /// [`TemplateSet::execute`], with where each stretch of the output came from, in output
    /// order (see [`Piece`]).
    pub fn execute_traced(
        &self,
        name: &str,
        data: &Value,
        host: Option<&dyn Host>,
        work: &mut Work,
    ) -> Result<(String, Vec<Piece>), TemplateError> {
        self.run(name, data, host, work, true)
    }

    fn run(
        &self,
        name: &str,
        data: &Value,
        host: Option<&dyn Host>,
        work: &mut Work,
        traced: bool,
    ) -> Result<(String, Vec<Piece>), TemplateError> {
        let Some(tmpl) = self.defs.get(name) else {
            return Err(TemplateError::new(format!(
                "template: no template {} associated with template {}",
                super::format::go_quote(name),
                super::format::go_quote(ROOT_NAME)
            )));
        };
        let missing = match self.dialect {
            Dialect::ArgoCd => MissingKey::Invalid,
            Dialect::Helm => MissingKey::Zero,
        };
        let mut budget = Budget::new(std::mem::take(work));
        let mut exec = Exec::new(
            Rc::clone(tmpl),
            Rc::clone(&self.defs),
            self.dialect,
            missing,
            host,
            &mut budget,
        );
        if traced {
            exec.trace();
        }
        let result = exec.run_traced(data);
        *work = budget.work;
        match result {
            Ok((out, pieces)) if self.dialect == Dialect::Helm => Ok(delete_no_value(out, pieces)),
            Ok(done) => Ok(done),
            Err(mut e) => {
                if let Some(why) = work.exhausted() {
                    e.kind = ErrorKind::Budget(why);
                }
                Err(e)
            }
        }
    }
}

/// Helm deletes `<no value>` from what a file renders (engine.go `render`); the pieces after
/// each deletion move back with it.
fn delete_no_value(out: String, mut pieces: Vec<Piece>) -> (String, Vec<Piece>) {
    const GONE: &str = "<no value>";
    if !out.contains(GONE) {
        return (out, pieces);
    }
    let cuts: Vec<usize> = out.match_indices(GONE).map(|(i, _)| i).collect();
    for p in &mut pieces {
        let before = cuts.partition_point(|&c| c < p.out);
        p.out = p.out.saturating_sub(before * GONE.len());
    }
    (out.replace(GONE, ""), pieces)
}
