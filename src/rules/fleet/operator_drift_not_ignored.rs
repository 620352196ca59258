use super::app_name;
use crate::model::Object;
use crate::render::Graph;
use crate::rules::app::{app, App};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};
use foldhash::HashSet;
use std::sync::LazyLock;

rule! {
    id: "operator-drift-not-ignored",
    category: Fleet,
    severity: Warning,
    fix: None,
    summary: "A self-healing app deploys an object an operator also writes (a certificate Secret, a caBundle) with no ignore on it",
    check: Check::Graph(check),
}

/// The operators and what they write, from `rules/operator-drift-not-ignored.yaml`.
const DATA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/rules/operator-drift-not-ignored.yaml"
));

#[derive(Debug)]
pub struct Operator {
    pub name: String,
    pub reference: String,
    pub trigger: Trigger,
    pub writes: Vec<Writes>,
}

#[derive(Debug)]
pub struct Trigger {
    pub group: String,
    pub kind: String,
    /// Globs on `metadata.name`; empty means any name.
    pub names: Vec<String>,
    /// Any one of these annotations makes an object a trigger; empty means none is needed.
    pub annotations: Vec<String>,
}

#[derive(Debug)]
pub struct Writes {
    /// `None`: the trigger object itself.
    pub target: Option<(String, String, Vec<String>)>,
    pub fields: Vec<String>,
    /// The object must not be in Git at all; an ignore is not enough.
    pub remove: bool,
    pub when: Vec<(String, Vec<String>)>,
    pub unless: Vec<(String, Vec<String>)>,
}

/// The table, parsed once. A malformed file leaves it empty; the unit test below fails on it.
pub fn operators() -> &'static [Operator] {
    static TABLE: LazyLock<Vec<Operator>> = LazyLock::new(|| parse(DATA).unwrap_or_default());
    &TABLE
}

/// Parses and validates the operator table.
pub fn parse(text: &str) -> Result<Vec<Operator>, String> {
    let parsed = crate::yaml::parse(0, text, crate::yaml::ParseLimits::default());
    if let Some(p) = parsed.problems.first() {
        return Err(p.message.clone());
    }
    let root = parsed.documents.first().map(|d| &d.root).ok_or("empty")?;
    let list = root
        .get("operators")
        .filter(|l| l.is_seq())
        .ok_or("no `operators` list")?;
    list.items().iter().map(operator).collect()
}

fn text(node: &Node, key: &str, what: &str) -> Result<String, String> {
    node.str_at(key)
        .map(str::to_string)
        .ok_or_else(|| format!("{what}: `{key}` missing or not text"))
}

fn texts(node: &Node, key: &str, what: &str) -> Result<Vec<String>, String> {
    match node.get(key) {
        None => Ok(Vec::new()),
        Some(l) if l.is_seq() => l
            .items()
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{what}: `{key}` holds a non-text item"))
            })
            .collect(),
        Some(_) => Err(format!("{what}: `{key}` is not a list")),
    }
}

fn conditions(node: &Node, key: &str, what: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let Some(m) = node.get(key) else {
        return Ok(Vec::new());
    };
    if !m.is_map() {
        return Err(format!("{what}: `{key}` is not a mapping"));
    }
    m.entries()
        .iter()
        .map(|e| {
            let pointer = e.key.as_str().filter(|p| p.starts_with('/'));
            let pointer =
                pointer.ok_or_else(|| format!("{what}: `{key}` keys are JSON pointers"))?;
            let values = e
                .value
                .items()
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("{what}: `{key}.{pointer}` needs a list of values"))?;
            Ok((pointer.to_string(), values))
        })
        .collect()
}

fn operator(node: &Node) -> Result<Operator, String> {
    let name = text(node, "operator", "an entry")?;
    let what = name.as_str();
    let reference = text(node, "reference", what)?;
    if !reference.starts_with("https://") {
        return Err(format!("{what}: `reference` is not an https URL"));
    }
    let t = node.get("trigger").ok_or(format!("{what}: no `trigger`"))?;
    let trigger = Trigger {
        group: text(t, "group", what)?,
        kind: text(t, "kind", what)?,
        names: texts(t, "names", what)?,
        annotations: texts(t, "annotations", what)?,
    };
    let writes = node
        .get("writes")
        .filter(|w| !w.items().is_empty())
        .ok_or(format!("{what}: no `writes`"))?
        .items()
        .iter()
        .map(|w| writes(w, what))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Operator {
        name,
        reference,
        trigger,
        writes,
    })
}

fn writes(w: &Node, what: &str) -> Result<Writes, String> {
    let own = w
        .get("self")
        .and_then(Node::as_scalar)
        .and_then(typing::as_bool)
        == Some(true);
    let target = if own {
        if w.get("kind").is_some() || w.get("names").is_some() {
            return Err(format!("{what}: `self` writes name no other object"));
        }
        None
    } else {
        let names = texts(w, "names", what)?;
        if names.is_empty() {
            return Err(format!("{what}: `writes` needs `names` or `self: true`"));
        }
        for n in &names {
            template_fields(n).ok_or(format!("{what}: bad name template `{n}`"))?;
        }
        Some((
            w.str_at("group").unwrap_or("").to_string(),
            text(w, "kind", what)?,
            names,
        ))
    };
    let fields = texts(w, "fields", what)?;
    if fields.is_empty() || fields.iter().any(|f| !f.starts_with('/')) {
        return Err(format!("{what}: `fields` must be JSON pointers"));
    }
    let remove = match w.str_at("fix") {
        Some("remove") => true,
        Some("ignore") => false,
        _ => return Err(format!("{what}: `fix` is `ignore` or `remove`")),
    };
    Ok(Writes {
        target,
        fields,
        remove,
        when: conditions(w, "when", what)?,
        unless: conditions(w, "unless", what)?,
    })
}

/// The `{...}` placeholders of a name template, each a list of alternative paths; `None`
/// when the template is malformed.
fn template_fields(template: &str) -> Option<Vec<Vec<Vec<&str>>>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')? + open;
        let alternatives = rest[open + 1..close]
            .split('|')
            .map(|alt| {
                let path = alt.trim().strip_prefix('.')?;
                let keys: Vec<&str> = path.split('.').collect();
                keys.iter().all(|k| !k.is_empty()).then_some(keys)
            })
            .collect::<Option<Vec<_>>>()?;
        out.push(alternatives);
        rest = &rest[close + 1..];
    }
    (!rest.contains('}')).then_some(out)
}

/// The name a template gives for this trigger; `None` when a field is missing or templated.
fn render_name(template: &str, trigger: &Node) -> Option<String> {
    let fields = template_fields(template)?;
    let mut out = String::new();
    let mut rest = template;
    for alternatives in fields {
        let open = rest.find('{')?;
        let close = rest.find('}')?;
        out.push_str(&rest[..open]);
        let value = alternatives.iter().find_map(|keys| {
            trigger
                .path(keys)
                .and_then(Node::as_str)
                .filter(|v| !v.is_empty())
        })?;
        if typing::is_template(value) {
            return None;
        }
        out.push_str(value);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The node at a JSON pointer, `*` matching every list item.
fn nodes_at<'n>(node: &'n Node, pointer: &str) -> Vec<&'n Node> {
    let mut here = vec![node];
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        here = here
            .into_iter()
            .flat_map(|n| -> Vec<&Node> {
                if token == "*" {
                    n.items().iter().collect()
                } else if n.is_seq() {
                    token
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| n.items().get(i))
                        .into_iter()
                        .collect()
                } else {
                    n.get(&token).into_iter().collect()
                }
            })
            .collect();
    }
    here.into_iter().filter(|n| !n.is_null()).collect()
}

/// Whether the trigger's fields hold one of the values (`*`: any value).
fn holds(trigger: &Node, pointer: &str, values: &[String]) -> Option<bool> {
    let found = nodes_at(trigger, pointer);
    let Some(node) = found.first() else {
        return Some(false);
    };
    let text = node.as_str().unwrap_or("");
    if typing::is_template(text) {
        return None;
    }
    Some(values.iter().any(|v| v == "*" || v == text))
}

/// Whether the conditions let the entry apply; `None` when a value is templated.
fn applies(w: &Writes, trigger: &Node) -> Option<bool> {
    for (pointer, values) in &w.when {
        if !holds(trigger, pointer, values)? {
            return Some(false);
        }
    }
    for (pointer, values) in &w.unless {
        if holds(trigger, pointer, values)? {
            return Some(false);
        }
    }
    Some(true)
}

fn is_trigger(t: &Trigger, obj: &Object) -> bool {
    obj.is(&t.group, &t.kind)
        && (t.names.is_empty()
            || obj
                .name
                .as_deref()
                .is_some_and(|n| t.names.iter().any(|g| crate::glob::gobwas(g, n, None))))
        && (t.annotations.is_empty() || t.annotations.iter().any(|a| obj.annotation(a).is_some()))
}

/// JSON pointer tokens of a jq path such as `.webhooks[]?.clientConfig.caBundle` or
/// `.data["tls.crt"]`; `None` for anything more (filters, pipes), which is not judged.
fn jq_tokens(expr: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = expr.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("[]") {
            out.push("*".to_string());
            rest = r.strip_prefix('?').unwrap_or(r);
        } else if let Some(r) = rest.strip_prefix("[\"") {
            let end = r.find("\"]")?;
            out.push(r[..end].to_string());
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            r[..end].parse::<usize>().ok()?;
            out.push(r[..end].to_string());
            rest = r[end + 1..].strip_prefix('?').unwrap_or(&r[end + 1..]);
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                let key = &r[..end];
                if !key.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return None;
                }
                out.push(key.to_string());
            }
            rest = &r[end..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// Whether an ignored path (tokens) covers an owned field: it names the field or one of its
/// parents. A list index and `*` cover each other: what the operator writes into one item it
/// writes into every item.
fn path_covers(ignored: &[String], field: &[&str]) -> bool {
    ignored.len() <= field.len()
        && ignored
            .iter()
            .zip(field)
            .all(|(i, f)| i == f || ((i == "*" || i.parse::<usize>().is_ok()) && (*f == "*")))
}

/// Argo CD diffs `stringData` as `data`, so an ignore on one covers the other.
fn diffed_as(pointer: &str) -> String {
    pointer.replacen("/stringData", "/data", 1)
}

/// Whether an ignoreDifferences entry of the Application, or argocd-cm, covers the field.
fn ignored(cx: &Cx, view: &App, obj: &Object, field: &str) -> bool {
    let field = diffed_as(field);
    let tokens: Vec<&str> = field.split('/').skip(1).collect();
    let group = obj.group();
    let by_app = view.ignore_differences().iter().any(|e| {
        let name = e.str_at("name");
        let namespace = e.str_at("namespace");
        if !crate::glob::gobwas(e.str_at("group").unwrap_or(""), group, None)
            || !crate::glob::gobwas(e.str_at("kind").unwrap_or(""), &obj.kind, None)
            || name.is_some_and(|n| !n.is_empty() && Some(n) != obj.name.as_deref())
            || namespace
                .is_some_and(|n| !n.is_empty() && obj.namespace.as_deref().is_some_and(|o| o != n))
        {
            return false;
        }
        let listed = |key| e.get(key).map(Node::items).unwrap_or(&[]);
        let by_pointer = listed("jsonPointers")
            .iter()
            .filter_map(Node::as_str)
            .any(|p| {
                let ignored: Vec<String> = diffed_as(p.trim())
                    .split('/')
                    .skip(1)
                    .map(|t| t.replace("~1", "/").replace("~0", "~"))
                    .collect();
                path_covers(&ignored, &tokens)
            });
        // A jq expression this reading does not follow may well cover the field.
        let by_jq = listed("jqPathExpressions")
            .iter()
            .filter_map(Node::as_str)
            .any(|x| jq_tokens(x).is_none_or(|t| path_covers(&t, &tokens)));
        // Managers are named by the operator's deployment; any named manager is taken as it.
        let by_manager = !listed("managedFieldsManagers").is_empty();
        by_pointer || by_jq || by_manager
    });
    let concrete: String = field.replace("/*", "/0");
    by_app
        || cx
            .repo
            .system_ignores_pointer(&format!("{group}_{}", obj.kind), &concrete)
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let table = operators();
    let mut seen = HashSet::default();
    for a in 0..g.apps.len() {
        let Some(view) = app(cx, g.app_obj(a)) else {
            continue;
        };
        if !(view.auto_sync(cx).is_yes() && view.flag("selfHeal").is_yes()) {
            continue;
        }
        let dest_ns = view
            .spec
            .path(&["destination", "namespace"])
            .and_then(Node::as_str)
            .map(str::to_string);
        let units = &g.apps[a].rendered;
        let ns = |o: &Object| o.namespace.clone().or_else(|| dest_ns.clone());
        for &t in units {
            let trigger = &g.units[t].obj;
            for op in table.iter().filter(|op| is_trigger(&op.trigger, trigger)) {
                for w in &op.writes {
                    if applies(w, &trigger.root) != Some(true) {
                        continue;
                    }
                    let targets: Vec<(usize, Option<&Node>)> = match &w.target {
                        None => vec![(t, None)],
                        Some((group, kind, names)) => {
                            let names: Vec<String> = names
                                .iter()
                                .filter_map(|n| render_name(n, &trigger.root))
                                .collect();
                            units
                                .iter()
                                .copied()
                                .filter(|&u| {
                                    let o = &g.units[u].obj;
                                    u != t
                                        && o.is(group, kind)
                                        && o.name.as_ref().is_some_and(|n| names.contains(n))
                                        && (crate::kinds::is_cluster_scoped(kind)
                                            || ns(o) == ns(trigger))
                                })
                                .map(|u| (u, name_source(w, &trigger.root)))
                                .collect()
                        }
                    };
                    for (u, source) in targets {
                        report(cx, g, a, &view, op, w, (t, source), u, &mut seen, out);
                    }
                }
            }
        }
    }
}

/// The trigger field the derived name came from, for a label.
fn name_source<'n>(w: &Writes, trigger: &'n Node) -> Option<&'n Node> {
    let (_, _, names) = w.target.as_ref()?;
    let fields = template_fields(names.first()?)?;
    fields.iter().flatten().find_map(|keys| {
        trigger
            .path(keys)
            .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
    })
}

#[allow(clippy::too_many_arguments)]
fn report(
    cx: &Cx,
    g: &Graph,
    a: usize,
    view: &App,
    op: &Operator,
    w: &Writes,
    (t, source): (usize, Option<&Node>),
    u: usize,
    seen: &mut HashSet<(crate::yaml::Span, usize)>,
    out: &mut Sink,
) {
    let trigger = &g.units[t].obj;
    let obj = &g.units[u].obj;
    let app = app_name(g, a);
    let (span, message, help) = if w.remove {
        let Some(name) = obj.root.path(&["metadata", "name"]) else {
            return;
        };
        (
            name.span,
            format!(
                "{} creates and owns {} for {}, and Application {app} also deploys it from Git: self-heal and the operator overwrite each other",
                op.name,
                obj.display(),
                trigger.display()
            ),
            format!(
                "remove the {} from Git and let the operator own it (see {})",
                obj.kind, op.reference
            ),
        )
    } else {
        // Only a field Git sets drifts: Argo CD's diff leaves alone what the manifest omits.
        let written: Vec<(&str, &Node)> = w
            .fields
            .iter()
            .flat_map(|f| {
                let mut nodes: Vec<(&str, &Node)> = nodes_at(&obj.root, f)
                    .into_iter()
                    .map(|n| (f.as_str(), n))
                    .collect();
                if f == "/data" {
                    nodes.extend(
                        nodes_at(&obj.root, "/stringData")
                            .into_iter()
                            .map(|n| ("/stringData", n)),
                    );
                }
                nodes
            })
            .collect();
        let uncovered: Vec<&(&str, &Node)> = written
            .iter()
            .filter(|(f, _)| !ignored(cx, view, obj, f))
            .collect();
        let Some((field, node)) = uncovered.first() else {
            return;
        };
        let pointers: Vec<&str> = {
            let mut p: Vec<&str> = uncovered.iter().map(|(f, _)| *f).collect();
            p.dedup();
            p
        };
        let name = obj.name.as_deref().unwrap_or_default();
        let entry = if field.contains('*') {
            format!(
                "jqPathExpressions `{}`",
                pointers
                    .iter()
                    .map(|p| p.replace("/*", "[]?").replace('/', "."))
                    .collect::<Vec<_>>()
                    .join("`, `")
            )
        } else {
            format!("jsonPointers `{}`", pointers.join("`, `"))
        };
        (
            node.span,
            format!(
                "{} writes `{field}` of {} in the cluster, and Application {app} self-heals it back to the value in Git",
                op.name,
                obj.display()
            ),
            format!(
                "add an ignoreDifferences entry (group `{}`, kind `{}`, name `{name}`, {entry}) with `RespectIgnoreDifferences=true`, or stop setting the field in Git (see {})",
                obj.group(),
                obj.kind,
                op.reference
            ),
        )
    };
    if !seen.insert((span, a)) {
        return;
    }
    let f = out.report(span, message);
    f.on(u).label("also written by the operator");
    if t != u {
        let at = source.map_or(trigger.root.span, |n| n.span);
        f.also(
            at,
            format!("{} makes {} write it", trigger.display(), op.name),
        );
    }
    f.help(help);
    f.applications = vec![app];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_table_loads() {
        let table =
            parse(DATA).unwrap_or_else(|e| panic!("rules/operator-drift-not-ignored.yaml: {e}"));
        let names: Vec<&str> = table.iter().map(|o| o.name.as_str()).collect();
        for wanted in [
            "cert-manager",
            "CloudNativePG",
            "External Secrets Operator",
            "Prometheus Operator",
            "Istio sidecar injection",
        ] {
            assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
        }
        assert_eq!(operators().len(), table.len());
    }

    #[test]
    fn malformed_entries_are_refused() {
        for (bad, why) in [
            ("operators: [{operator: x, reference: https://x, trigger: {group: a, kind: B}}]", "no writes"),
            ("operators: [{operator: x, reference: http://x, trigger: {group: a, kind: B}, writes: [{self: true, fields: [/a], fix: ignore}]}]", "not https"),
            ("operators: [{operator: x, reference: https://x, trigger: {group: a, kind: B}, writes: [{self: true, fields: [a], fix: ignore}]}]", "field not a pointer"),
            ("operators: [{operator: x, reference: https://x, trigger: {group: a, kind: B}, writes: [{self: true, fields: [/a], fix: maybe}]}]", "bad fix"),
            ("operators: [{operator: x, reference: https://x, trigger: {group: a, kind: B}, writes: [{kind: Secret, names: ['{.spec'], fields: [/a], fix: ignore}]}]", "bad template"),
            ("operators: [{operator: x, reference: https://x, trigger: {group: a, kind: B}, writes: [{kind: Secret, fields: [/a], fix: ignore}]}]", "no names"),
        ] {
            assert!(parse(bad).is_err(), "accepted: {why}");
        }
    }

    #[test]
    fn names_are_formed_from_the_trigger() {
        let doc = crate::yaml::parse(
            0,
            "metadata: {name: es}\nspec: {target: {name: creds}}\n",
            crate::yaml::ParseLimits::default(),
        );
        let root = &doc.documents[0].root;
        assert_eq!(
            render_name("{.spec.target.name|.metadata.name}", root).as_deref(),
            Some("creds")
        );
        assert_eq!(
            render_name("{.spec.other|.metadata.name}-app", root).as_deref(),
            Some("es-app")
        );
        assert_eq!(render_name("prometheus-{.spec.missing}", root), None);
    }

    #[test]
    fn jq_paths_read_as_pointers() {
        assert_eq!(
            jq_tokens(".webhooks[]?.clientConfig.caBundle"),
            Some(vec![
                "webhooks".into(),
                "*".into(),
                "clientConfig".into(),
                "caBundle".into()
            ])
        );
        assert_eq!(
            jq_tokens(".data[\"tls.crt\"]"),
            Some(vec!["data".into(), "tls.crt".into()])
        );
        assert_eq!(jq_tokens(".a | select(.b)"), None);
        let field = ["webhooks", "*", "clientConfig", "caBundle"];
        assert!(path_covers(&["webhooks".into(), "0".into()], &field));
        assert!(!path_covers(
            &["webhooks".into(), "0".into(), "name".into()],
            &field
        ));
    }
}
