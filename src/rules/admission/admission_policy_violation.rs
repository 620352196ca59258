use crate::cel::{Bindings, Budget, EvalError, Program, Value, DEFAULT_BUDGET};
use crate::finding::Severity;
use crate::model::Object;
use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::ignored::namespace_of;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{Node, Span};
use foldhash::HashSet;

rule! {
    id: "admission-policy-violation",
    category: Admission,
    severity: Error,
    severities: "error (binding action Deny) / warning (Warn) / info (Audit, or a validation not evaluated offline)",
    fix: None,
    summary: "A rendered object fails a ValidatingAdmissionPolicy of the repository: the API server will reject (or warn about) it at sync",
    check: Check::Graph(check),
}

const GROUP: &str = "admissionregistration.k8s.io";

/// The repository of each unit, as an index: policies, bindings and params apply to the
/// objects of their own repository only (two repositories linted together never meet).
fn unit_repos(cx: &Cx, g: &Graph) -> Vec<usize> {
    let mut repos = crate::rules::project::Repos::new(cx.sources, cx.graph);
    let mut ids: Vec<std::path::PathBuf> = Vec::new();
    g.units
        .iter()
        .map(|u| {
            let root = repos.of(u.obj.file);
            match ids.iter().position(|r| *r == root) {
                Some(i) => i,
                None => {
                    ids.push(root);
                    ids.len() - 1
                }
            }
        })
        .collect()
}

/// Policies and bindings are read from every object of the repository, as written or
/// rendered, once per name and repository (cluster-scoped: one name, one object).
fn admission_objects<'g>(g: &'g Graph, repos: &[usize], kind: &str) -> Vec<(usize, &'g Object)> {
    let mut seen = HashSet::default();
    g.units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.obj.is(GROUP, kind) && matches!(u.obj.version(), "v1" | "v1beta1"))
        .map(|(i, u)| (repos[i], &*u.obj))
        .filter(|(r, o)| seen.insert((*r, o.name.clone().unwrap_or_default())))
        .collect()
}

struct Compiled {
    node: Span,
    name: String,
    program: Result<Program, String>,
    /// What the expression reads of the object, worked out once per policy rather than per
    /// object: the one path it reads, if only one ([`anchor`]), whether it reads beyond
    /// `metadata`, and whether it reads `variables` ([`maybe_defaulted`]).
    object_path: Option<Vec<String>>,
    beyond_metadata: bool,
    reads_variables: bool,
}

impl Compiled {
    fn new(node: Span, name: &str, text: &str) -> Compiled {
        let program = Program::compile(text).map_err(|e| e.to_string());
        let prog = program.as_ref().ok();
        Compiled {
            node,
            name: name.to_string(),
            object_path: prog.and_then(|p| p.only_path("object")),
            beyond_metadata: prog.is_none_or(|p| p.reads_beyond("object", &["metadata"])),
            reads_variables: prog.is_none_or(|p| p.reads_beyond("variables", &[])),
            program,
        }
    }
}

fn compile_list(list: Option<&Node>, field: &str) -> Vec<Compiled> {
    list.map(Node::items)
        .unwrap_or(&[])
        .iter()
        .filter_map(|item| {
            let expr = item.get(field)?;
            let name = item.str_at("name").unwrap_or_default();
            Some(Compiled::new(expr.span, name, expr.as_str()?))
        })
        .collect()
}

struct Validation {
    expr: Compiled,
    message: Option<String>,
    message_expr: Option<Program>,
}

struct Policy<'g> {
    obj: &'g Object,
    spec: &'g Node,
    fail_open: bool,
    param_kind: Option<(String, String)>,
    variables: Vec<Compiled>,
    /// Whether a variable reads the object beyond its `metadata`.
    variables_beyond: bool,
    conditions: Vec<Compiled>,
    validations: Vec<Validation>,
}

fn policy(obj: &Object) -> Option<Policy<'_>> {
    let spec = obj.root.get("spec").filter(|s| s.is_map())?;
    let param_kind = spec.get("paramKind").map(|p| {
        (
            p.str_at("apiVersion").unwrap_or_default().to_string(),
            p.str_at("kind").unwrap_or_default().to_string(),
        )
    });
    let validations = spec
        .get("validations")
        .map(Node::items)
        .unwrap_or(&[])
        .iter()
        .filter_map(|v| {
            let expr = v.get("expression")?;
            Some(Validation {
                expr: Compiled::new(expr.span, "", expr.as_str()?),
                message: v.str_at("message").map(str::to_string),
                message_expr: v
                    .str_at("messageExpression")
                    .and_then(|m| Program::compile(m).ok()),
            })
        })
        .collect();
    let variables = compile_list(spec.get("variables"), "expression");
    Some(Policy {
        obj,
        spec,
        fail_open: spec.str_at("failurePolicy") == Some("Ignore"),
        param_kind,
        variables_beyond: variables.iter().any(|v| v.beyond_metadata),
        variables,
        conditions: compile_list(spec.get("matchConditions"), "expression"),
        validations,
    })
}

/// The resource name of a kind: lowercase plural, as the API server's discovery names it for
/// the built-in kinds (`Deployment` → `deployments`, `NetworkPolicy` → `networkpolicies`,
/// `Ingress` → `ingresses`).
pub fn resource_of(kind: &str) -> String {
    let k = kind.to_ascii_lowercase();
    if k == "endpoints" {
        return k;
    }
    if let Some(stem) = k.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        return format!("{k}es");
    }
    format!("{k}s")
}

fn strings(node: Option<&Node>) -> Vec<&str> {
    node.map(Node::items)
        .unwrap_or(&[])
        .iter()
        .filter_map(Node::as_str)
        .collect()
}

/// One `NamedRuleWithOperations` against a CREATE of `obj` (k8s.io/apiserver
/// `admission/plugin/webhook/predicates/rules/rules.go`, whose matcher the policy plugin uses).
fn rule_matches(rule: &Node, obj: &Object, namespaced: bool) -> bool {
    let has = |field: &str, want: &str| {
        strings(rule.get(field))
            .iter()
            .any(|v| *v == "*" || *v == want)
    };
    let resource = resource_of(&obj.kind);
    let resources = strings(rule.get("resources"));
    let resource_ok = resources
        .iter()
        .any(|r| *r == "*" || *r == "*/*" || *r == resource);
    let scope_ok = match rule.str_at("scope") {
        Some("Cluster") => !namespaced,
        Some("Namespaced") => namespaced,
        _ => true,
    };
    let names = strings(rule.get("resourceNames"));
    let name_ok = names.is_empty() || obj.name.as_deref().is_some_and(|n| names.contains(&n));
    has("operations", "CREATE")
        && has("apiGroups", obj.group())
        && has("apiVersions", obj.version())
        && resource_ok
        && scope_ok
        && name_ok
}

/// A label selector against a labels mapping: `None` when the selector cannot be read.
pub(crate) fn selector_matches(sel: Option<&Node>, labels: Option<&Node>) -> Option<bool> {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return Some(true);
    };
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Node::as_str);
    for e in sel.get("matchLabels").map(Node::entries).unwrap_or(&[]) {
        let key = e.key.as_str()?;
        if label(key) != Some(e.value.as_str()?) {
            return Some(false);
        }
    }
    for x in sel.get("matchExpressions").map(Node::items).unwrap_or(&[]) {
        let key = x.str_at("key")?;
        let values = strings(x.get("values"));
        let ok = match x.str_at("operator")? {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => return None,
        };
        if !ok {
            return Some(false);
        }
    }
    Some(true)
}

fn is_empty_selector(sel: Option<&Node>) -> bool {
    sel.is_none_or(|s| {
        s.is_null()
            || (s.get("matchLabels").is_none_or(|m| m.entries().is_empty())
                && s.get("matchExpressions")
                    .is_none_or(|m| m.items().is_empty()))
    })
}

enum Match {
    Yes,
    No,
    /// Depends on what the repository does not hold (a namespace's labels).
    Unknown,
}

/// `matchConstraints` of a policy or `matchResources` of a binding (k8s.io/apiserver
/// `admission/plugin/policy/matching/matching.go`): namespace and object selectors, then
/// the resource rules, minus the excluded ones. A binding without resource rules narrows
/// nothing by resource.
fn resources_match(
    m: &Node,
    obj: &Object,
    namespace: Option<&Node>,
    rules_required: bool,
) -> Match {
    let namespaced = !crate::kinds::is_cluster_scoped(&obj.kind);
    let labels = obj.root.path(&["metadata", "labels"]);
    let ns_sel = m.get("namespaceSelector");
    if obj.kind == "Namespace" && obj.group().is_empty() {
        if selector_matches(ns_sel, labels) != Some(true) {
            return Match::No;
        }
    } else if namespaced && !is_empty_selector(ns_sel) {
        match namespace {
            None => return Match::Unknown,
            Some(ns) => {
                if selector_matches(ns_sel, ns.path(&["metadata", "labels"])) != Some(true) {
                    return Match::No;
                }
            }
        }
    }
    if selector_matches(m.get("objectSelector"), labels) != Some(true) {
        return Match::No;
    }
    let rules = m.get("resourceRules").map(Node::items).unwrap_or(&[]);
    if (rules_required || !rules.is_empty())
        && !rules.iter().any(|r| rule_matches(r, obj, namespaced))
    {
        return Match::No;
    }
    let excluded = m
        .get("excludeResourceRules")
        .map(Node::items)
        .unwrap_or(&[]);
    if excluded.iter().any(|r| rule_matches(r, obj, namespaced)) {
        return Match::No;
    }
    Match::Yes
}

fn severity_of(binding: &Node) -> Severity {
    let actions = strings(binding.path(&["spec", "validationActions"]));
    if actions.contains(&"Deny") {
        Severity::Error
    } else if actions.contains(&"Warn") {
        Severity::Warning
    } else {
        Severity::Info
    }
}

/// `request`, as the API server builds it for a CREATE (admission `AdmissionRequest`).
fn request<'a>(obj: &Object, namespace: Option<&str>) -> Value<'a> {
    let s = |t: &str| Value::String(t.to_string());
    let map =
        |e: Vec<(&str, Value<'a>)>| Value::Map(e.into_iter().map(|(k, v)| (s(k), v)).collect());
    let gvk = map(vec![
        ("group", s(obj.group())),
        ("version", s(obj.version())),
        ("kind", s(&obj.kind)),
    ]);
    let gvr = map(vec![
        ("group", s(obj.group())),
        ("version", s(obj.version())),
        ("resource", s(&resource_of(&obj.kind))),
    ]);
    map(vec![
        ("kind", gvk.clone()),
        ("resource", gvr.clone()),
        ("requestKind", gvk),
        ("requestResource", gvr),
        ("name", s(obj.name.as_deref().unwrap_or_default())),
        ("namespace", s(namespace.unwrap_or_default())),
        ("operation", s("CREATE")),
        ("dryRun", Value::Bool(false)),
    ])
}

/// The node of the object that the expression's `object.…` path selects, as deep as it
/// exists (a collection by its key, a scalar by its value), when the expression reads one
/// path of the object only; else the object's `kind`: an expression over several fields
/// (every container's, the init containers' and the pod's) does not say which one failed.
fn anchor(expr: &Compiled, obj: &Object) -> Span {
    let fallback = obj.root.get("kind").map_or(obj.root.span, |k| k.span);
    match &expr.object_path {
        Some(path) => crate::cel::anchor(&obj.root, path, fallback),
        None => fallback,
    }
}

enum Outcome {
    Pass,
    Fail(Span, String),
    NotEvaluated(Span, String),
}

/// Cost units all the evaluations of one run may spend together: each expression has its own
/// budget too, but a repository of many policies and many objects must not multiply them
/// without bound. What the pool no longer covers is not evaluated.
const RUN_BUDGET: u64 = 20_000_000;

/// Longest message kept from a policy (a `messageExpression` may build any string).
const MAX_MESSAGE: usize = 1024;

struct Pool(std::cell::Cell<u64>);

impl Pool {
    fn eval<'a>(&self, prog: &Program, b: &Bindings<'a>) -> Result<Value<'a>, EvalError> {
        let left = self.0.get();
        let mut budget = Budget::new(left.min(DEFAULT_BUDGET));
        let r = prog.eval(b, &mut budget);
        let spent = left.min(DEFAULT_BUDGET) - budget.remaining;
        self.0.set(left - spent);
        if matches!(r, Err(EvalError::Budget)) && left < DEFAULT_BUDGET {
            // The run's pool ran out, not the expression's own budget.
            return Err(EvalError::Unsupported(
                "the run's evaluation budget is spent".into(),
            ));
        }
        r
    }
}

fn clip(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

struct Target<'g> {
    unit: usize,
    obj: &'g Object,
    namespaced: bool,
    namespace: Option<String>,
    namespace_obj: Option<&'g Node>,
}

/// The members of a mapping node as CEL map entries, as CEL reads the node itself.
fn members(node: &Node) -> Vec<(Value<'_>, Value<'_>)> {
    crate::cel::node_entries(node)
        .map(|(k, v)| (Value::String(k.to_string()), Value::Node(v)))
        .collect()
}

/// Binds what the API server gives a policy for a CREATE of the target. What only the
/// cluster knows fails as not evaluated when read: who makes the request (Argo CD's service
/// account, with groups only the cluster knows), and the Namespace object of a namespaced
/// object when the Application does not render it (it exists: the create needs it).
fn bind<'g>(b: &mut Bindings<'g>, t: &Target<'g>, params: Option<&'g Node>) {
    let root = &t.obj.root;
    let ns = t.namespace.as_deref().filter(|_| t.namespaced);
    // The create handler sets the request's namespace on an object that has none before
    // admission runs (apiserver `rest.EnsureObjectNamespaceMatchesRequestNamespace`).
    if t.namespaced && t.obj.namespace.is_none() && root.is_map() {
        // An empty or null namespace is none; with no destination known it stays unknown,
        // and an expression that reads it is not certain (see `maybe_defaulted`).
        let mut meta = root
            .get("metadata")
            .filter(|m| m.is_map())
            .map(members)
            .unwrap_or_default();
        meta.retain(|(k, _)| !matches!(k, Value::String(k) if k == "namespace"));
        if let Some(ns) = ns {
            meta.push((Value::String("namespace".into()), Value::String(ns.into())));
        }
        let mut top = members(root);
        top.retain(|(k, _)| !matches!(k, Value::String(k) if k == "metadata"));
        top.push((Value::String("metadata".into()), Value::Map(meta)));
        b.set("object", Value::Map(top));
    } else {
        b.node("object", root);
    }
    b.set("oldObject", Value::Null);
    b.set("request", request(t.obj, t.namespace.as_deref()));
    b.fail(
        "request",
        "userInfo",
        EvalError::Unsupported("request.userInfo is known only in the cluster".into()),
    );
    match params {
        Some(n) => b.node("params", n),
        None => b.set("params", Value::Null),
    }
    match t.namespace_obj {
        Some(n) => b.node("namespaceObject", n),
        None => {
            b.set("namespaceObject", Value::Null);
            if ns.is_some() {
                for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
                    b.fail(
                        "namespaceObject",
                        field,
                        EvalError::Unsupported(
                            "namespaceObject: the Namespace is not rendered with the object".into(),
                        ),
                    );
                }
            }
        }
    }
}

/// Whether an expression's `no such key` error may come from a field the object leaves to
/// the API server: before admission it applies the defaults of the kind's schema
/// (`replicas: 1`) and its built-in mutating plugins (a Pod's `serviceAccountName`), which
/// are not known here, and it sets the namespace of the request on a namespaced object
/// that has none (bound when the destination is known). Only an expression (with the
/// variables it may read) that reads nothing of the object but its `metadata` fails for
/// certain.
fn maybe_defaulted(error: &str, expr: &Compiled, p: &Policy, t: &Target) -> bool {
    if !error.starts_with("no such key") {
        return false;
    }
    if error == "no such key: namespace"
        && t.namespaced
        && t.namespace.is_none()
        && t.obj.namespace.is_none()
    {
        return true;
    }
    expr.beyond_metadata || (expr.reads_variables && p.variables_beyond)
}

/// Evaluates the policy on one object with one param; the outcome of each validation.
fn evaluate<'g>(p: &Policy, t: &Target<'g>, params: Option<&'g Node>, pool: &Pool) -> Vec<Outcome> {
    let mut b = Bindings::new();
    bind(&mut b, t, params);
    // Variables are computed in order, each seeing the ones before; one that fails fails
    // only the expressions that read it, as the lazy evaluation of the API server does.
    let mut vars: Vec<(Value, Value)> = Vec::new();
    let mut failed: Vec<(String, EvalError)> = Vec::new();
    for v in &p.variables {
        let r = match &v.program {
            Ok(prog) => {
                let mut vb = Bindings::new();
                bind(&mut vb, t, params);
                vb.set("variables", Value::Map(vars.clone()));
                for (name, e) in &failed {
                    vb.fail("variables", name, e.clone());
                }
                pool.eval(prog, &vb)
            }
            Err(e) => Err(EvalError::Unsupported(format!("does not compile: {e}"))),
        };
        match r {
            Ok(val) => vars.push((Value::String(v.name.clone()), val)),
            Err(e) => failed.push((v.name.clone(), e)),
        }
    }
    b.set("variables", Value::Map(vars));
    for (name, e) in failed {
        b.fail("variables", &name, e);
    }
    let run = |prog: &Program| pool.eval(prog, &b);
    for c in &p.conditions {
        let r = match &c.program {
            Ok(prog) => run(prog),
            Err(e) => {
                return vec![Outcome::NotEvaluated(
                    c.node,
                    format!("does not compile: {e}"),
                )]
            }
        };
        match r.map(|v| v.as_bool()) {
            Ok(Some(true)) => {}
            Ok(Some(false)) => return Vec::new(),
            Ok(None) if p.fail_open => return Vec::new(),
            Err(EvalError::Error(_)) if p.fail_open => return Vec::new(),
            Err(EvalError::Error(e)) if maybe_defaulted(&e, c, p, t) => return Vec::new(),
            Ok(None) => {
                let at = t.obj.root.get("kind").map_or(t.obj.root.span, |k| k.span);
                return vec![Outcome::Fail(
                    at,
                    format!("match condition `{}` is not a bool", c.name),
                )];
            }
            Err(EvalError::Error(e)) => {
                let at = t.obj.root.get("kind").map_or(t.obj.root.span, |k| k.span);
                return vec![Outcome::Fail(
                    at,
                    format!("match condition `{}` failed: {e}", c.name),
                )];
            }
            Err(e) => return vec![Outcome::NotEvaluated(c.node, e.to_string())],
        }
    }
    let mut out = Vec::new();
    for v in &p.validations {
        let prog = match &v.expr.program {
            Ok(prog) => prog,
            Err(e) => {
                out.push(Outcome::NotEvaluated(
                    v.expr.node,
                    format!("does not compile: {e}"),
                ));
                continue;
            }
        };
        let at = anchor(&v.expr, t.obj);
        match run(prog) {
            Ok(val) => match val.as_bool() {
                Some(true) => out.push(Outcome::Pass),
                Some(false) => {
                    let from_expr = v.message_expr.as_ref().and_then(|m| match run(m) {
                        Ok(Value::String(s)) if !s.trim().is_empty() => Some(s),
                        Ok(Value::Node(n)) => n
                            .as_str()
                            .map(str::to_string)
                            .filter(|s| !s.trim().is_empty()),
                        _ => None,
                    });
                    let msg = from_expr
                        .or_else(|| v.message.clone())
                        .unwrap_or_else(|| format!("failed expression: {}", prog.source()));
                    out.push(Outcome::Fail(at, clip(msg)));
                }
                None if p.fail_open => out.push(Outcome::Pass),
                None => out.push(Outcome::Fail(
                    at,
                    format!(
                        "expression returned {}, not a bool: {}",
                        val.type_name(),
                        prog.source()
                    ),
                )),
            },
            Err(EvalError::Error(_)) if p.fail_open => out.push(Outcome::Pass),
            Err(EvalError::Error(e)) if maybe_defaulted(&e, &v.expr, p, t) => {
                out.push(Outcome::Pass)
            }
            Err(EvalError::Error(e)) => out.push(Outcome::Fail(
                at,
                format!(
                    "expression `{}` failed: {e} (failurePolicy Fail)",
                    prog.source()
                ),
            )),
            Err(e) => out.push(Outcome::NotEvaluated(v.expr.node, e.to_string())),
        }
    }
    out
}

/// The params a binding selects among the repository's objects: `None` when the repository
/// holds no object of the param kind at all (the params live elsewhere: not evaluated).
fn params_of<'g>(
    g: &'g Graph,
    repos: &[usize],
    repo: usize,
    kind: &(String, String),
    binding: &Node,
    ns: Option<&str>,
) -> Option<Vec<&'g Node>> {
    let candidates: Vec<&Object> = g
        .units
        .iter()
        .enumerate()
        .filter(|(i, _)| repos[*i] == repo)
        .map(|(_, u)| &*u.obj)
        .filter(|o| o.api_version == kind.0 && o.kind == kind.1)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let Some(r) = binding.path(&["spec", "paramRef"]) else {
        return Some(Vec::new());
    };
    let want_ns = r.str_at("namespace").or(ns);
    let mut out: Vec<&Node> = Vec::new();
    let mut seen = HashSet::default();
    for o in candidates {
        let ns_ok = match (want_ns, o.namespace.as_deref()) {
            (Some(w), Some(have)) => w == have,
            _ => true,
        };
        let name_ok = match r.str_at("name") {
            Some(n) => o.name.as_deref() == Some(n),
            None => {
                selector_matches(r.get("selector"), o.root.path(&["metadata", "labels"]))
                    == Some(true)
            }
        };
        if ns_ok && name_ok && seen.insert((o.namespace.clone(), o.name.clone())) {
            out.push(&o.root);
        }
    }
    Some(out)
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let repos = unit_repos(cx, g);
    let policies: Vec<(usize, Policy)> = admission_objects(g, &repos, "ValidatingAdmissionPolicy")
        .into_iter()
        .filter_map(|(u, o)| Some((u, policy(o)?)))
        .collect();
    if policies.is_empty() {
        return;
    }
    let bindings = admission_objects(g, &repos, "ValidatingAdmissionPolicyBinding");
    let mut reported = HashSet::default();
    let mut not_evaluated = HashSet::default();
    let pool = Pool(std::cell::Cell::new(RUN_BUDGET));
    // Each Application's rendered objects, then the manifests no Application renders (each
    // in its own repository), so that a repository of plain manifests is checked too.
    let mut scopes: Vec<(Option<usize>, Vec<usize>)> = (0..g.apps.len())
        .map(|a| {
            let me = g.apps[a].unit;
            let units = g.apps[a]
                .rendered
                .iter()
                .copied()
                .filter(|&u| u != me)
                .collect();
            (Some(a), units)
        })
        .collect();
    scopes.push((
        None,
        (0..g.units.len())
            .filter(|&u| g.units[u].apps.is_empty() && g.units[u].lint)
            .filter(|&u| !g.units[u].obj.group().ends_with("argoproj.io"))
            .collect(),
    ));
    for (a, rendered) in scopes {
        let view = a.and_then(|a| app(cx, g.app_obj(a)));
        let app_repo = a.map(|a| repos[g.apps[a].unit]);
        for &u in &rendered {
            let obj = &*g.units[u].obj;
            // The policies and bindings themselves are never validated by policies
            // (k8s.io/apiserver, the validating admission policy plugin's isPolicyResource).
            if obj.group() == "admissionregistration.k8s.io"
                && matches!(
                    obj.kind.as_str(),
                    "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding"
                )
            {
                continue;
            }
            let repo = app_repo.unwrap_or(repos[u]);
            let namespace = namespace_of(g, u, view.as_ref());
            let namespaced = !crate::kinds::is_cluster_scoped(&obj.kind);
            let namespace_obj = namespace.as_deref().filter(|_| namespaced).and_then(|ns| {
                rendered
                    .iter()
                    .filter(|&&n| repos[n] == repo)
                    .map(|&n| &*g.units[n].obj)
                    .find(|o| {
                        o.kind == "Namespace"
                            && o.group().is_empty()
                            && o.name.as_deref() == Some(ns)
                    })
                    .map(|o| &o.root)
            });
            let target = Target {
                unit: u,
                obj,
                namespaced,
                namespace: namespace.clone(),
                namespace_obj,
            };
            for (pi, (prepo, p)) in policies.iter().enumerate() {
                if *prepo != repo {
                    continue;
                }
                let Some(mc) = p.spec.get("matchConstraints") else {
                    continue;
                };
                if !matches!(resources_match(mc, obj, namespace_obj, true), Match::Yes) {
                    continue;
                }
                let pname = p.obj.name.as_deref().unwrap_or_default();
                for (bi, (brepo, b)) in bindings.iter().enumerate() {
                    if *brepo != repo {
                        continue;
                    }
                    if b.root.path(&["spec", "policyName"]).and_then(Node::as_str) != Some(pname) {
                        continue;
                    }
                    if let Some(mr) = b.root.path(&["spec", "matchResources"]) {
                        if !matches!(resources_match(mr, obj, namespace_obj, false), Match::Yes) {
                            continue;
                        }
                    }
                    let bname = b.name.as_deref().unwrap_or_default();
                    let param_sets: Vec<Option<&Node>> = match &p.param_kind {
                        None => vec![None],
                        Some(kind) => {
                            if b.root.path(&["spec", "paramRef"]).is_none() {
                                continue;
                            }
                            match params_of(
                                g,
                                &repos,
                                repo,
                                kind,
                                &b.root,
                                namespace.as_deref().filter(|_| namespaced),
                            ) {
                                None => {
                                    // The params live in the cluster: reported once, as an
                                    // expression that cannot be evaluated is.
                                    let at = b
                                        .root
                                        .get("spec")
                                        .and_then(|s| s.entry("paramRef"))
                                        .map_or(b.root.span, |e| e.key.span);
                                    if not_evaluated.insert(at) {
                                        out.report(at, format!("ValidatingAdmissionPolicy `{pname}` (binding `{bname}`) is not evaluated offline: no object of its param kind {} is in the repository (the params live in the cluster); objects it matches are not checked against it", kind.1))
                                            .severity(Severity::Info);
                                    }
                                    continue;
                                }
                                Some(found) if found.is_empty() => {
                                    let deny = b
                                        .root
                                        .path(&["spec", "paramRef", "parameterNotFoundAction"])
                                        .and_then(Node::as_str)
                                        != Some("Allow");
                                    if deny && reported.insert((u, pi, bi, usize::MAX, usize::MAX))
                                    {
                                        let at =
                                            obj.root.get("kind").map_or(obj.root.span, |k| k.span);
                                        out.report(at, format!("ValidatingAdmissionPolicy `{pname}` (binding `{bname}`) denies this {}: no params of kind {} found and parameterNotFoundAction is Deny", obj.kind, kind.1))
                                            .severity(severity_of(&b.root))
                                            .about(u, obj);
                                    }
                                    continue;
                                }
                                Some(found) => found.into_iter().map(Some).collect(),
                            }
                        }
                    };
                    for (ki, params) in param_sets.into_iter().enumerate() {
                        for (vi, outcome) in
                            evaluate(p, &target, params, &pool).into_iter().enumerate()
                        {
                            match outcome {
                                Outcome::Pass => {}
                                Outcome::Fail(at, msg) => {
                                    if reported.insert((u, pi, bi, ki, vi)) {
                                        out.report(at, format!("ValidatingAdmissionPolicy `{pname}` (binding `{bname}`) denies this {}: {msg}", obj.kind))
                                            .severity(severity_of(&b.root))
                                            .label("the policy's expression reads this")
                                            .about(target.unit, obj);
                                    }
                                }
                                Outcome::NotEvaluated(at, why) => {
                                    if not_evaluated.insert(at) {
                                        out.report(at, format!("ValidatingAdmissionPolicy `{pname}`: this expression is not evaluated offline ({why}); objects it matches are not checked against it"))
                                            .severity(Severity::Info);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::resource_of;

    #[test]
    fn resources_are_lowercase_plurals() {
        for (kind, want) in [
            ("Deployment", "deployments"),
            ("NetworkPolicy", "networkpolicies"),
            ("Ingress", "ingresses"),
            ("Gateway", "gateways"),
            ("Endpoints", "endpoints"),
            ("ConfigMap", "configmaps"),
        ] {
            assert_eq!(resource_of(kind), want);
        }
    }
}
