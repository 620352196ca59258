//! Template sets: several files parsed into one namespace of named templates, as
//! text/template's `Template` holds them and Helm's engine (helm v3.17 `pkg/engine/engine.go`)
//! builds one for a chart and its subcharts.

use super::exec::{Exec, MissingKey, Piece};
use super::parser::{is_empty_tree, Node, Parsed, Parser};
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

    /// The Go value behind `receiver` with its methods stripped, as a function, `range`, a
    /// condition or printing sees it (`has "x" .Capabilities.APIVersions` ranges over a
    /// `[]string`; `range $path, $_ := .Files.Glob "*"` over a `map[string][]byte`). `None`
    /// when the host does not know the receiver.
    fn plain(&self, receiver: &Map<String, Value>) -> Option<Value> {
        let _ = receiver;
        None
    }
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

/// A file's parsed tree joins `defs`: its `define`s first, then its own tree, which a `define`
/// of the file's own name does not survive (Go would refuse both if non-empty: `multiple
/// definition of template`).
fn join(defs: &mut Defs, name: &str, text: &str, parsed: Parsed) -> Result<(), TemplateError> {
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
    tpl_cache: super::exec::TplCache,
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

/// Helm's rewording of an error from [`TemplateSet::add`] (engine.go `cleanupParseError`):
/// `parse error at (FILE:LINE): msg`, keeping only the last `: `-separated part.
pub fn helm_parse_error(filename: &str, message: &str) -> String {
    let tokens: Vec<&str> = message.split(": ").collect();
    match (tokens.get(1), tokens.last()) {
        (Some(location), Some(last)) => format!("parse error at ({location}): {last}"),
        _ => format!("parse error in ({filename}): {message}"),
    }
}

/// Helm's rewording of an error from [`TemplateSet::execute`] (engine.go
/// `cleanupExecError`): the message of a `fail` or `required`, however deep in `include`s,
/// as `execution error at (FILE:LINE:COL): msg`; other errors stay as they are.
pub fn helm_exec_error(filename: &str, message: &str) -> String {
    const START: &str = "HELM_ERR_START";
    const END: &str = "HELM_ERR_END";
    // Go returns errors that are not execution errors unchanged.
    if message.starts_with("template: no template ") {
        return message.to_string();
    }
    let mut tokens = message.splitn(3, ": ");
    let (Some(_), Some(location), Some(rest)) = (tokens.next(), tokens.next(), tokens.next())
    else {
        return format!("execution error in ({filename}): {message}");
    };
    // engine.go's `warnRegex` is greedy: from the first start marker to the last end marker.
    let warned = rest.find(START).and_then(|start| {
        let inner = rest.get(start + START.len()..)?;
        inner.rfind(END).and_then(|end| inner.get(..end))
    });
    match warned {
        Some(warn) => format!("execution error at ({location}): {warn}"),
        None => message.to_string(),
    }
}

impl TemplateSet {
    /// An empty set with the functions of `dialect`.
    pub fn new(dialect: Dialect) -> Self {
        TemplateSet {
            dialect,
            defs: Rc::new(Defs::new()),
            tpl_cache: Default::default(),
        }
    }

    /// Parses one file under its name (e.g. "podinfo/templates/deployment.yaml"). The file
    /// and its `define`s join the set; a later definition of a name replaces an earlier one
    /// (an empty body never replaces a non-empty one), as Go's `AddParseTree` does. For Helm,
    /// add files in [`helm_parse_order`]. Parse errors read `template: NAME:LINE: msg`.
    pub fn add(&mut self, name: &str, text: &str, work: &mut Work) -> Result<(), TemplateError> {
        // Charged before parsing, so that a hostile chart's files stop being parsed once the
        // budget is spent.
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
        let parsed =
            Parser::parse_in(text, self.dialect, true).map_err(|e| named_parse_error(e, name))?;
        join(Rc::make_mut(&mut self.defs), name, text, parsed)
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
        )
        .with_tpl_cache(&self.tpl_cache);
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

#[cfg(test)]
mod tests {
    use super::{
        helm_exec_error, helm_parse_error, helm_parse_order, Dialect, Host, TemplateSet, HOST_KEY,
    };
    use crate::render::budget::{Budget as Work, Exhausted};
    use crate::render::template::{ErrorKind, TemplateError};
    use serde_json::{json, Map, Value};

    /// Helm's `.Files` (a few files), `.Capabilities.APIVersions` and `.Chart.IsRoot`.
    struct Chart;

    impl Host for Chart {
        fn call(
            &self,
            receiver: &Map<String, Value>,
            method: &str,
            args: &[Value],
        ) -> Result<Value, String> {
            let files = receiver.get("files").and_then(Value::as_object);
            match (receiver.get(HOST_KEY).and_then(Value::as_str), method, args) {
                (Some("files"), "Get", [Value::String(name)]) => Ok(files
                    .and_then(|f| f.get(name))
                    .cloned()
                    .unwrap_or_else(|| json!(""))),
                (Some("files"), "Glob", [Value::String(prefix)]) => {
                    let prefix = prefix.trim_end_matches('*');
                    let kept: Map<String, Value> = files
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| k.starts_with(prefix))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    Ok(json!({HOST_KEY: "files", "files": kept}))
                }
                (Some("files"), "AsConfig", []) => Ok(Value::String(
                    files
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| {
                            let name = k.rsplit('/').next().unwrap_or(k);
                            format!("{name}: {}", v.as_str().unwrap_or(""))
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                )),
                (Some("versions"), "Has", [Value::String(v)]) => Ok(Value::Bool(
                    receiver["list"].as_array().unwrap().contains(&json!(v)),
                )),
                (Some("chart"), "IsRoot", []) => Ok(json!(true)),
                (_, _, args) => Err(format!("{method} cannot take {} arguments", args.len())),
            }
        }

        fn plain(&self, receiver: &Map<String, Value>) -> Option<Value> {
            match receiver.get(HOST_KEY).and_then(Value::as_str) {
                Some("files") => receiver.get("files").cloned(),
                Some("versions") => receiver.get("list").cloned(),
                _ => None,
            }
        }
    }

    fn values() -> Value {
        json!({
            "Values": {"tier": "web", "empty": "", "list": ["a", "b"]},
            "Release": {"Name": "rel", "Namespace": "ns"},
            "Chart": {HOST_KEY: "chart", "Name": "podinfo"},
            "Files": {HOST_KEY: "files", "files": {"a.txt": "hello", "conf/x.ini": "x=1", "conf/y.ini": "y=2"}},
            "Capabilities": {"APIVersions": {HOST_KEY: "versions", "list": ["v1", "apps/v1"]}},
        })
    }

    const HELPERS: &str = "{{- define \"c.name\" -}}{{ .Chart.Name }}{{- end -}}\n\
        {{- define \"c.labels\" -}}\napp: {{ include \"c.name\" . }}\n\
        tier: {{ .Values.tier | default \"none\" }}\n{{- end -}}\n";

    fn set(dialect: Dialect, files: &[(&str, &str)]) -> TemplateSet {
        let mut set = TemplateSet::new(dialect);
        let mut work = Work::new(1_000_000);
        for (name, text) in files {
            if let Err(e) = set.add(name, text, &mut work) {
                panic!("{name}: {}", e.message);
            }
        }
        set
    }

    /// Renders `main` in a Helm chart that also has the helpers above.
    fn helm(main: &str) -> Result<String, TemplateError> {
        helm_with(&[
            ("c/templates/_helpers.tpl", HELPERS),
            ("c/templates/t.yaml", main),
        ])
    }

    fn helm_with(files: &[(&str, &str)]) -> Result<String, TemplateError> {
        let set = set(Dialect::Helm, files);
        let last = files.last().map_or("", |f| f.0);
        set.execute(last, &values(), Some(&Chart), &mut Work::new(1_000_000))
    }

    fn ok(main: &str) -> String {
        helm(main).unwrap_or_else(|e| panic!("{main:?}: {}", e.message))
    }

    fn err(main: &str) -> TemplateError {
        match helm(main) {
            Ok(out) => panic!("{main:?} rendered {out:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn define_template_block_include() {
        for (main, want) in [
            (
                "metadata:\n  labels:\n    {{- include \"c.labels\" . | nindent 4 }}\n",
                "metadata:\n  labels:\n    app: podinfo\n    tier: web\n",
            ),
            ("{{ include \"c.labels\" . | indent 2 }}", "  app: podinfo\n  tier: web"),
            ("[{{ template \"c.name\" . }}]", "[podinfo]"),
            // A template sees only its dot and `$` (its dot), not the caller's variables.
            (
                "{{ define \"t\" }}({{ . }}{{ $ }}){{ end }}{{ template \"t\" \"x\" }}",
                "(xx)",
            ),
            // No pipeline: dot is nothing, which Helm prints as nothing.
            ("{{ define \"t\" }}({{ . }}){{ end }}{{ template \"t\" }}", "()"),
            // Variables the pipeline declares stay in scope.
            (
                "{{ define \"t\" }}{{ . }}{{ end }}{{ template \"t\" $v := 1 }}{{ $v }}",
                "11",
            ),
            (
                "{{ block \"b\" .Values }}tier={{ .tier }}{{ end }}",
                "tier=web",
            ),
            (
                "{{ $x := include \"c.name\" . }}{{ $x | upper }}",
                "PODINFO",
            ),
            (
                "{{ define \"n\" }}{{ if . }}{{ . }}{{ include \"n\" (sub . 1) }}{{ end }}{{ end }}{{ include \"n\" 3 }}",
                "321",
            ),
        ] {
            assert_eq!(ok(main), want, "{main:?}");
        }
        // The block's body is a define: a file parsed later replaces it.
        let block = ("c/templates/b.yaml", "{{ block \"b\" . }}default{{ end }}");
        let other = ("c/templates/a.yaml", "{{ define \"b\" }}override{{ end }}");
        let s = set(Dialect::Helm, &[block, other]);
        let out = s.execute(
            "c/templates/b.yaml",
            &values(),
            None,
            &mut Work::new(10_000),
        );
        assert_eq!(out.unwrap(), "override");
        let s = set(Dialect::Helm, &[other, block]);
        let out = s.execute(
            "c/templates/b.yaml",
            &values(),
            None,
            &mut Work::new(10_000),
        );
        assert_eq!(out.unwrap(), "default");
        // An empty define never replaces a full one.
        let empty = ("x", "{{ define \"c.name\" }} {{ end }}");
        let main = ("y", "{{ include \"c.name\" . }}");
        let s = set(Dialect::Helm, &[("h", HELPERS), empty, main]);
        let out = s.execute("y", &values(), Some(&Chart), &mut Work::new(10_000));
        assert_eq!(out.unwrap(), "podinfo");
        assert!(s.has("c.labels") && s.has("x") && !s.has("nope"));
    }

    #[test]
    fn tpl_parses_in_a_copy_of_the_set() {
        for (main, want) in [
            ("{{ tpl \"{{ .Values.tier }}-{{ .Release.Name }}\" . }}", "web-rel"),
            ("{{ tpl \"{{ include \\\"c.name\\\" . }}\" . }}", "podinfo"),
            ("{{ tpl \"{{ . }}\" .Values.tier }}", "web"),
            ("{{ tpl \"[{{ .nope }}]\" .Values }}", "[]"),
            (
                "{{ tpl \"{{ define \\\"x\\\" }}X{{ end }}{{ include \\\"x\\\" . }}\" . }}",
                "X",
            ),
            // tpl inside tpl sees the templates the outer text defines.
            (
                "{{ tpl \"{{ define \\\"x\\\" }}X{{ end }}{{ tpl `{{ include \\\"x\\\" . }}` . }}\" . }}",
                "X",
            ),
        ] {
            assert_eq!(ok(main), want, "{main:?}");
        }
        // What tpl defines is gone once it returns.
        let e = err("{{ tpl \"{{ define \\\"x\\\" }}X{{ end }}\" . }}{{ include \"x\" . }}");
        assert!(
            e.message.ends_with(
                "error calling include: template: no template \"x\" associated with template \"gotpl\""
            ),
            "{}",
            e.message
        );
        let e = err("{{ tpl \"{{ .Values.a.b }}\" . }}");
        assert!(
            e.message.starts_with(
                "template: c/templates/t.yaml:1:3: executing \"c/templates/t.yaml\" at <tpl \"{{ .Values.a.b }}\" .>: \
                 error calling tpl: error during tpl function execution for \"{{ .Values.a.b }}\": \
                 template: gotpl:1:10: "
            ),
            "{}",
            e.message
        );
        assert!(e.message.ends_with(
            "executing \"gotpl\" at <.Values.a.b>: nil pointer evaluating interface {}.b"
        ));
        let e = err("{{ tpl \"{{ .x\" . }}");
        assert!(
            e.message.ends_with(
                "error calling tpl: cannot parse template \"{{ .x\": template: gotpl:1: unclosed action"
            ),
            "{}",
            e.message
        );
        assert_eq!(e.kind, ErrorKind::Invalid);
    }

    #[test]
    fn a_changed_data_map_is_seen_by_the_templates_after() {
        let set = set(
            Dialect::Helm,
            &[
                ("c/templates/a.yaml", "{{ $_ := set .Values \"tier\" \"db\" }}{{ $r := .Release }}{{ $_ := set $r \"Name\" \"x\" }}"),
                ("c/templates/b.yaml", "{{ .Values.tier }} {{ .Release.Name }} {{ $.Values.list }}"),
            ],
        );
        let data = values();
        let mut work = Work::new(1_000_000);
        let run =
            |name: &str, work: &mut Work| set.execute(name, &data, Some(&Chart), work).unwrap();
        // Without a scope nothing is shared (ApplicationSet templates, one-off renders).
        run("c/templates/a.yaml", &mut work);
        assert_eq!(run("c/templates/b.yaml", &mut work), "web rel [a b]");
        let scope = crate::render::template::SharedMaps::new();
        run("c/templates/a.yaml", &mut work);
        assert_eq!(run("c/templates/b.yaml", &mut work), "db x [a b]");
        drop(scope);
        assert_eq!(run("c/templates/b.yaml", &mut work), "web rel [a b]");
    }

    #[test]
    fn host_objects_answer_method_calls() {
        for (main, want) in [
            ("{{ .Files.Get \"a.txt\" }}", "hello"),
            ("{{ $.Files.Get \"a.txt\" | upper }}", "HELLO"),
            ("{{ \"a.txt\" | .Files.Get }}", "hello"),
            (
                "data:{{ (.Files.Glob \"conf/*\").AsConfig | nindent 2 }}",
                "data:\n  x.ini: x=1\n  y.ini: y=2",
            ),
            ("{{ .Capabilities.APIVersions.Has \"apps/v1\" }}", "true"),
            (
                "{{ if .Capabilities.APIVersions.Has \"batch/v9\" }}y{{ else }}n{{ end }}",
                "n",
            ),
            (
                "{{ if .Chart.IsRoot }}root{{ end }} {{ .Chart.Name }}",
                "root podinfo",
            ),
            ("{{ $f := .Files }}{{ $f.Get \"a.txt\" }}", "hello"),
            (
                "{{ $d := dict \"f\" .Files }}{{ $d.f.Get \"a.txt\" }}",
                "hello",
            ),
            (
                "{{ define \"g\" }}{{ .Files.Get \"a.txt\" }}{{ end }}{{ include \"g\" . }}",
                "hello",
            ),
            (
                "{{ define \"g\" }}{{ .Get \"a.txt\" }}{{ end }}{{ template \"g\" .Files }}",
                "hello",
            ),
            ("{{ tpl \"{{ .Files.Get \\\"a.txt\\\" }}\" . }}", "hello"),
            // Functions, range, conditions and printing see the plain Go value.
            ("{{ has \"apps/v1\" .Capabilities.APIVersions }}", "true"),
            ("{{ len .Capabilities.APIVersions }}", "2"),
            (
                "{{ range $path, $_ := .Files.Glob \"conf/*\" }}{{ $path }};{{ end }}",
                "conf/x.ini;conf/y.ini;",
            ),
            ("{{ if .Files.Glob \"none/*\" }}y{{ else }}n{{ end }}", "n"),
            ("{{ .Capabilities.APIVersions }}", "[v1 apps/v1]"),
            // ... while a dict keeps the methods.
            (
                "{{ $d := dict \"v\" .Capabilities.APIVersions }}{{ $d.v.Has \"v1\" }}",
                "true",
            ),
        ] {
            assert_eq!(ok(main), want, "{main:?}");
        }
        let e = err("{{ .Files.Get 1 2 }}");
        assert!(
            e.message
                .ends_with("error calling Get: Get cannot take 2 arguments"),
            "{}",
            e.message
        );
        assert_eq!(e.kind, ErrorKind::Invalid);
        // A plain map with arguments is Go's error.
        let e = err("{{ .Release.Name 1 }}");
        assert!(e
            .message
            .ends_with("Name is not a method but has arguments"));
    }

    #[test]
    fn helm_prints_nothing_for_missing_values() {
        for (main, want) in [
            ("a={{ .Values.nope }};", "a=;"),
            (
                "{{ .Values.nope | quote }}|{{ .Values.nope | default \"d\" }}",
                "|d",
            ),
            ("{{ $x := .Values.nope }}{{ $x.deeper }}.", "."),
            ("{{ index .Values \"nope\" }}.", "."),
            ("{{ .Values.empty | required \"e\" | default \"z\" }}", ""),
        ] {
            if main.contains("required") {
                continue;
            }
            assert_eq!(ok(main), want, "{main:?}");
        }
        // missingkey=zero: a field of a missing value is Helm's familiar nil pointer error.
        let e = err("{{ .Values.nope.deeper }}");
        assert!(e.message.starts_with("template: c/templates/t.yaml:1:10: "));
        assert!(e.message.ends_with(
            "executing \"c/templates/t.yaml\" at <.Values.nope.deeper>: nil pointer evaluating interface {}.deeper"
        ), "{}", e.message);
    }

    #[test]
    fn required_fail_and_helm_functions() {
        assert_eq!(ok("{{ required \"need tier\" .Values.tier }}"), "web");
        for (main, wrapped) in [
            (
                "{{ required \"need x\" .Values.x }}",
                "required: HELM_ERR_STARTneed xHELM_ERR_END",
            ),
            (
                "{{ required \"e\" .Values.empty }}",
                "required: HELM_ERR_STARTeHELM_ERR_END",
            ),
            (
                "{{ fail \"boom\" }}",
                "fail: HELM_ERR_STARTboomHELM_ERR_END",
            ),
        ] {
            let e = err(main);
            assert!(
                e.message.ends_with(&format!("error calling {wrapped}")),
                "{}",
                e.message
            );
            assert_eq!(e.kind, ErrorKind::Invalid);
        }
        for (main, want) in [
            ("{{ lookup \"v1\" \"Secret\" \"ns\" \"x\" }}", "map[]"),
            ("{{ (lookup \"v1\" \"Secret\" \"ns\" \"x\").data | default \"none\" }}", "none"),
            ("{{ getHostByName \"example.com\" }}.", "."),
            ("{{ (fromYaml \"a: 1\\nb: [x]\").b }}", "[x]"),
            ("{{ (fromYaml \"a: 1000000\").a }}", "1e+06"),
            ("{{ (fromYaml \"- x\").Error }}", "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"),
            ("{{ fromYamlArray \"- x\\n- 2\" }}", "[x 2]"),
            ("{{ (fromJson \"{\\\"a\\\":1}\").a }}", "1"),
            ("{{ fromJsonArray \"[1,\\\"x\\\"]\" | toJson }}", "[1,\"x\"]"),
            ("{{ .Values.list | toYaml }}", "- a\n- b"),
            ("{{ dict \"k\" .Values.tier | toJson }}", "{\"k\":\"web\"}"),
        ] {
            assert_eq!(ok(main), want, "{main:?}");
        }
        for (main, want) in [
            ("{{ env \"HOME\" }}", "function \"env\" not defined"),
            (
                "{{ expandenv \"$HOME\" }}",
                "function \"expandenv\" not defined",
            ),
            (
                "{{ normalize \"x\" }}",
                "function \"normalize\" not defined",
            ),
            ("{{ mustToYaml . }}", "function \"mustToYaml\" not defined"),
        ] {
            let mut s = TemplateSet::new(Dialect::Helm);
            let e = s
                .add("c/templates/f.yaml", main, &mut Work::new(1000))
                .unwrap_err();
            assert_eq!(e.message, format!("template: c/templates/f.yaml:1: {want}"));
        }
        let e = err("{{ toToml .Values }}");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        // Output Helm makes random has a fixed stand-in: the chart renders.
        let ca = helm("{{ $ca := genCA \"x\" 365 }}{{ $ca.Cert | b64enc | len }}{{ genPrivateKey \"rsa\" | len }}");
        assert!(ca.is_ok(), "{ca:?}");
        // Argo CD has neither `include` nor `required`; it has `normalize`.
        let mut s = TemplateSet::new(Dialect::ArgoCd);
        let e = s
            .add("f", "{{ include \"x\" . }}", &mut Work::new(1000))
            .unwrap_err();
        assert!(e.message.ends_with("function \"include\" not defined"));
        let s = set(Dialect::ArgoCd, &[("f", "{{ define \"n\" }}{{ normalize . }}{{ end }}{{ template \"n\" \"A_b\" }}{{ .nope }}")]);
        let out = s.execute("f", &json!({}), None, &mut Work::new(1000));
        assert_eq!(out.unwrap(), "a-b<no value>");
    }

    #[test]
    fn errors_name_the_file_and_the_template() {
        let mut s = TemplateSet::new(Dialect::Helm);
        let mut work = Work::new(10_000);
        for (text, want) in [
            ("a\n{{ .x", "template: c/t.yaml:2: unclosed action"),
            (
                "{{ define \"a\" }}x{{ end }}{{ define \"a\" }}y{{ end }}",
                "template: c/t.yaml:1: template: multiple definition of template \"a\"",
            ),
            (
                "{{ if true }}{{ define \"x\" }}{{ end }}{{ end }}",
                "template: c/t.yaml:1: unexpected <define> in command",
            ),
            ("{{ define \"x\" }}", "template: c/t.yaml:1: unexpected EOF"),
            (
                "{{ define x }}{{ end }}",
                "template: c/t.yaml:1: unexpected \"x\" in define clause",
            ),
            (
                "{{ template .x }}",
                "template: c/t.yaml:1: unexpected <.x> in template clause",
            ),
            (
                "{{ block \"b\" }}{{ end }}",
                "template: c/t.yaml:1: missing value for block clause",
            ),
            (
                "{{ range . }}{{ block \"b\" . }}{{ break }}{{ end }}{{ end }}",
                "template: c/t.yaml:1: {{break}} outside {{range}}",
            ),
            (
                "{{ $v := 1 }}{{ define \"d\" }}{{ $v }}{{ end }}",
                "template: c/t.yaml:1: undefined variable \"$v\"",
            ),
        ] {
            let e = s.add("c/t.yaml", text, &mut work).unwrap_err();
            assert_eq!(e.message, want, "{text:?}");
        }
        // An empty second definition is no conflict.
        s.add(
            "c/t.yaml",
            "{{ define \"a\" }}x{{ end }}{{ define \"a\" }} {{ end }}",
            &mut work,
        )
        .unwrap();
        let helpers = (
            "c/templates/_helpers.tpl",
            "{{ define \"h\" }}\n  {{ .Values.a.b }}{{ end }}",
        );
        let main = ("c/templates/x.yaml", "{{ include \"h\" . }}");
        let e = helm_with(&[helpers, main]).unwrap_err();
        assert!(
            e.message.starts_with(
                "template: c/templates/x.yaml:1:3: executing \"c/templates/x.yaml\" at <include \"h\" .>: \
                 error calling include: template: c/templates/_helpers.tpl:2:"
            ),
            "{}",
            e.message
        );
        assert!(e
            .message
            .contains(": executing \"h\" at <.Values.a.b>: nil pointer"));
        let main = ("c/templates/x.yaml", "\n{{ template \"nope\" . }}");
        let e = helm_with(&[main]).unwrap_err();
        assert_eq!(
            e.message,
            "template: c/templates/x.yaml:2:12: executing \"c/templates/x.yaml\" at <{{template \"nope\" .}}>: template \"nope\" not defined"
        );
        let s = set(Dialect::Helm, &[main]);
        let e = s
            .execute("c/nope", &values(), None, &mut Work::new(10))
            .unwrap_err();
        assert_eq!(
            e.message,
            "template: no template \"c/nope\" associated with template \"gotpl\""
        );
    }

    #[test]
    fn recursion_and_bombs_are_bounded() {
        let e = err("{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}");
        assert_eq!(e.kind, ErrorKind::Limit);
        assert!(e.message.ends_with(
            "error calling include: rendering template has a nested reference name: r: unable to execute template"
        ), "{}", e.message);
        let e = err("{{ define \"t\" }}{{ template \"t\" . }}{{ end }}{{ template \"t\" . }}");
        assert_eq!(e.kind, ErrorKind::Limit);
        assert!(
            e.message.ends_with("exceeded maximum template depth (100)"),
            "{}",
            e.message
        );
        let e = err("{{ define \"b\" }}{{ tpl \"{{ include \\\"b\\\" . }}\" . }}{{ end }}{{ include \"b\" . }}");
        assert_eq!(e.kind, ErrorKind::Limit, "{}", e.message);
        // Each level includes the next twice: 2^40 calls, stopped by the budget.
        let mut files = String::new();
        for i in 0..40 {
            files.push_str(&format!(
                "{{{{ define \"d{i}\" }}}}{{{{ include \"d{}\" . }}}}{{{{ include \"d{}\" . }}}}{{{{ end }}}}",
                i + 1,
                i + 1
            ));
        }
        files.push_str("{{ define \"d40\" }}x{{ end }}{{ include \"d0\" . }}");
        let e = err(&files);
        assert_eq!(e.kind, ErrorKind::Budget(Exhausted::Unit), "{}", e.message);
        let e = err("{{ define \"w\" }}{{ . }}{{ include \"w\" (print . .) }}{{ end }}{{ include \"w\" \"xxxxxxxx\" }}");
        assert!(
            matches!(e.kind, ErrorKind::Limit | ErrorKind::Budget(_)),
            "{}",
            e.message
        );
        // Deep nesting in every level of a deep recursion stays on a small stack.
        let nest = 95;
        let body = format!(
            "{}{{{{ include \"r\" (add . 1) }}}}{}",
            "{{ if true }}".repeat(nest),
            "{{ end }}".repeat(nest),
        );
        let parens = format!(
            "{{{{ {}include \"p\" .{} }}}}",
            "(".repeat(nest),
            ")".repeat(nest)
        );
        let deep_tpl = format!(
            "{{{{ {}tpl `{{{{ include \"q\" . }}}}` .{} }}}}",
            "(".repeat(nest),
            ")".repeat(nest)
        );
        for main in [
            "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}".to_string(),
            format!("{{{{ define \"r\" }}}}{body}{{{{ end }}}}{{{{ include \"r\" 0 }}}}"),
            format!("{{{{ define \"p\" }}}}{parens}{{{{ end }}}}{{{{ include \"p\" 0 }}}}"),
            format!("{{{{ define \"q\" }}}}{deep_tpl}{{{{ end }}}}{{{{ include \"q\" 0 }}}}"),
        ] {
            let run = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || helm(&main).map_err(|e| e.kind))
                .unwrap()
                .join()
                .unwrap();
            assert_eq!(run, Err(ErrorKind::Limit));
        }
    }

    #[test]
    fn pseudo_random_sets_do_not_panic() {
        let pieces = [
            "{{",
            "}}",
            "{{-",
            "-}}",
            " ",
            ".",
            "$",
            ".Values",
            ".Files",
            ".Files.Get",
            ".Chart.IsRoot",
            "\"a.txt\"",
            "\"x\"",
            "\"c.name\"",
            "define",
            "template",
            "block",
            "include",
            "tpl",
            "required",
            "fail",
            "end",
            "if",
            "range",
            "else",
            "(",
            ")",
            "|",
            "nindent",
            "4",
            "toYaml",
            "fromYaml",
            "fromJson",
            "lookup",
            "$x",
            ":=",
            "`{{ . }}`",
            "`{{`",
            "\n",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..14 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let pick = usize::try_from(seed >> 33).unwrap_or(0) % pieces.len();
                text.push_str(pieces.get(pick).copied().unwrap_or(""));
            }
            for dialect in [Dialect::Helm, Dialect::ArgoCd] {
                let mut s = TemplateSet::new(dialect);
                let mut work = Work::new(100_000);
                let _ = s.add("c/templates/_helpers.tpl", HELPERS, &mut work);
                if s.add("c/templates/t.yaml", &text, &mut work).is_ok() {
                    let _ = s.execute("c/templates/t.yaml", &values(), Some(&Chart), &mut work);
                }
            }
        }
    }

    #[test]
    fn helm_rewords_errors() {
        let nested = "{{ define \"f\" }}\n {{ fail \"deep\" }}{{ end }}\n{{ include \"f\" . }}";
        assert_eq!(
            helm_exec_error("c/templates/t.yaml", &err(nested).message),
            "execution error at (c/templates/t.yaml:3:3): deep"
        );
        let e = err("{{ .Values.a.b }}").message;
        assert_eq!(helm_exec_error("c/templates/t.yaml", &e), e);
        let mut s = TemplateSet::new(Dialect::Helm);
        let e = s
            .add("c/t.yaml", "\n{{ .x", &mut Work::new(100))
            .unwrap_err();
        assert_eq!(
            helm_parse_error("c/t.yaml", &e.message),
            "parse error at (c/t.yaml:2): unclosed action"
        );
    }

    #[test]
    fn helm_order_puts_deep_files_first() {
        let mut names: Vec<String> = [
            "c/templates/b.yaml",
            "c/charts/s/templates/a.yaml",
            "c/templates/a.yaml",
            "c/templates/x/z.yaml",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        helm_parse_order(&mut names);
        assert_eq!(
            names,
            [
                "c/charts/s/templates/a.yaml",
                "c/templates/x/z.yaml",
                "c/templates/b.yaml",
                "c/templates/a.yaml"
            ]
        );
    }
}
