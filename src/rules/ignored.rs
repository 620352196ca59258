//! What an Application's ignores hide of the objects Git renders for it. `ignoreDifferences`
//! only changes the comparison: a sync applies what Git renders, ignored fields included,
//! unless `RespectIgnoreDifferences=true` copies their live values into it first
//! (`controller/sync.go`, `normalizeTargetResources`, Argo CD v3.5.1). A field the ignore
//! hides is overwritten by a sync only when Git sets it; one Git leaves out has nothing to
//! reset.
//!
//! Ignores come from the Application (`spec.ignoreDifferences`) and from argocd-cm
//! (`resource.customizations.ignoreDifferences.<group_kind>`, `...all`, or the older
//! `resource.customizations` block), which Argo CD merges per object
//! (`util/argo/diff/ignore.go`, `util/argo/normalizers/diff_normalizer.go`).

use crate::model::Object;
use crate::render::Graph;
use crate::rules::app::App;
use crate::yaml::{typing, Node, Span};

/// The field manager of the HorizontalPodAutoscaler controller (KEDA scales through an HPA
/// too): what it owns of a workload is `spec.replicas`.
pub const AUTOSCALER_MANAGER: &str = "kube-controller-manager";

/// One ignore as Argo CD reads it.
#[derive(Clone, Debug)]
pub struct Ignore {
    /// Globs, as `util/glob` matches them; an omitted group is the core group.
    pub group: String,
    pub kind: String,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// `jsonPointers` and `jqPathExpressions` items, with where each is written.
    pub paths: Vec<IgnoredPath>,
    pub managers: Vec<(String, Span)>,
    /// Whether it comes from argocd-cm, where it applies to every Application.
    pub system: bool,
}

#[derive(Clone, Debug)]
pub struct IgnoredPath {
    pub text: String,
    pub jq: bool,
    pub span: Span,
}

/// A field an ignore hides that Git sets on a rendered object.
#[derive(Clone, Debug)]
pub struct Hidden {
    /// The rendered object (graph unit).
    pub unit: usize,
    /// The path as the ignore writes it (a pointer or a jq path), or `/spec/replicas` for
    /// the autoscaler's manager.
    pub path: String,
    /// The field manager the ignore names, when that is how it hides the field.
    pub manager: Option<String>,
    /// Where Git sets the field: the value, or the key of a collection.
    pub set_at: Span,
    /// The value node itself.
    pub value: Span,
    /// Where the ignore is written (the item, or the argocd-cm key).
    pub by: Span,
    pub system: bool,
    /// The autoscaler's `scaleTargetRef.name`, when the field is the replicas it scales.
    pub scaler: Option<Span>,
}

/// The ignores of an Application (or ApplicationSet template) spec. Entries with a templated
/// group, kind, name or namespace are left out: what they match is not known.
pub fn app_ignores(app: &App) -> Vec<Ignore> {
    app.ignore_differences()
        .iter()
        .filter(|e| e.is_map())
        .filter_map(|e| {
            let text = |k: &str| e.get(k).filter(|n| !n.is_null()).and_then(Node::as_str);
            let fields = [text("group"), text("kind"), text("name"), text("namespace")];
            if fields.iter().flatten().any(|t| typing::is_template(t)) {
                return None;
            }
            let [group, kind, name, namespace] = fields;
            let items = |key: &str| -> Vec<(String, Span)> {
                e.get(key)
                    .map(Node::items)
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(|n| Some((n.as_str()?.trim().to_string(), n.span)))
                    .filter(|(t, _)| !t.is_empty() && !typing::is_template(t))
                    .collect()
            };
            Some(Ignore {
                group: group.unwrap_or("").to_string(),
                kind: kind.unwrap_or("").to_string(),
                name: name.filter(|n| !n.is_empty()).map(str::to_string),
                namespace: namespace.filter(|n| !n.is_empty()).map(str::to_string),
                paths: paths(items("jsonPointers"), items("jqPathExpressions")),
                managers: items("managedFieldsManagers"),
                system: false,
            })
        })
        .collect()
}

fn paths(pointers: Vec<(String, Span)>, jq: Vec<(String, Span)>) -> Vec<IgnoredPath> {
    let p = pointers.into_iter().map(|(text, span)| IgnoredPath {
        text,
        jq: false,
        span,
    });
    let j = jq.into_iter().map(|(text, span)| IgnoredPath {
        text,
        jq: true,
        span,
    });
    p.chain(j).collect()
}

/// The system-level ignores of an argocd-cm ConfigMap's `data`. Labels point at the key.
pub fn system_ignores(data: &Node) -> Vec<Ignore> {
    let mut out = Vec::new();
    for e in data.entries() {
        let key = e.key.as_str().unwrap_or("");
        let Some(text) = e.value.as_str() else {
            continue;
        };
        if let Some(gk) = key.strip_prefix("resource.customizations.ignoreDifferences.") {
            // `util/settings/settings.go` (convertToOverrideKey): `<group>_<kind>`, `<kind>`,
            // or `all` for every kind.
            let (group, kind, managers) = match gk.split('_').collect::<Vec<_>>()[..] {
                ["all"] => ("*", "*", true),
                [kind] if !kind.is_empty() => ("", kind, false),
                [group, kind] => (group, kind, true),
                _ => continue,
            };
            if let Some(ig) = parsed_ignore(text, group, kind, managers, e.key.span) {
                out.push(ig);
            }
        } else if key == "resource.customizations" {
            // The older block: `<group>/<kind>: {ignoreDifferences: <YAML string>}`.
            let parsed = crate::yaml::parse(0, text, Default::default());
            let Some(doc) = parsed.documents.first() else {
                continue;
            };
            for gk in doc.root.entries() {
                let Some(name) = gk.key.as_str() else {
                    continue;
                };
                let Some(inner) = gk.value.get("ignoreDifferences").and_then(Node::as_str) else {
                    continue;
                };
                let (group, kind) = match name.split_once('/') {
                    Some((g, k)) => (g, k),
                    None => ("", name),
                };
                if let Some(ig) = parsed_ignore(inner, group, kind, true, e.key.span) {
                    out.push(ig);
                }
            }
        }
    }
    out
}

/// One customization's YAML (`jsonPointers`, `jqPathExpressions`, `managedFieldsManagers`).
/// Managers apply only where Argo CD looks them up by `<group>/<kind>` (`HasIgnoreDifference`
/// in `util/argo/diff/ignore.go`): not for a key written as a bare kind.
fn parsed_ignore(text: &str, group: &str, kind: &str, managers: bool, at: Span) -> Option<Ignore> {
    let parsed = crate::yaml::parse(0, text, Default::default());
    let doc = parsed.documents.first()?;
    let items = |key: &str| -> Vec<(String, Span)> {
        doc.root
            .get(key)
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .filter_map(|n| Some((n.as_str()?.trim().to_string(), at)))
            .filter(|(t, _)| !t.is_empty())
            .collect()
    };
    Some(Ignore {
        group: group.to_string(),
        kind: kind.to_string(),
        name: None,
        namespace: None,
        paths: paths(items("jsonPointers"), items("jqPathExpressions")),
        managers: if managers {
            items("managedFieldsManagers")
        } else {
            Vec::new()
        },
        system: true,
    })
}

impl Ignore {
    /// Whether the ignore applies to `obj`, deployed to namespace `ns`.
    pub fn matches(&self, obj: &Object, ns: Option<&str>) -> bool {
        crate::glob::gobwas(&self.group, obj.group(), None)
            && crate::glob::gobwas(&self.kind, &obj.kind, None)
            && self
                .name
                .as_deref()
                .is_none_or(|n| obj.name.as_deref() == Some(n))
            && self.namespace.as_deref().is_none_or(|n| ns == Some(n))
    }

    /// The fields of `obj` this ignore hides that Git sets. `scaled` says whether an
    /// autoscaler scales `obj`, so that its manager owns `spec.replicas`. Paths under
    /// `status` are left out: a sync never writes status.
    pub fn hides<'o>(&self, obj: &'o Object, scaled: bool) -> Vec<Hit<'o>> {
        let mut out = Vec::new();
        for p in &self.paths {
            let nodes = if p.jq {
                if p.text == ".status" || p.text.starts_with(".status.") {
                    continue;
                }
                jq_nodes(&obj.root, &p.text).unwrap_or_default()
            } else {
                if p.text == "/status" || p.text.starts_with("/status/") {
                    continue;
                }
                pointer_node(&obj.root, &p.text).into_iter().collect()
            };
            if let Some(n) = nodes.into_iter().next() {
                out.push(Hit {
                    path: p.text.clone(),
                    manager: None,
                    node: n,
                    by: p.span,
                });
            }
        }
        if scaled {
            let replicas = obj
                .root
                .path(&["spec", "replicas"])
                .filter(|n| !n.is_null());
            let manager = self.managers.iter().find(|(m, _)| m == AUTOSCALER_MANAGER);
            if let (Some(r), Some((m, span))) = (replicas, manager) {
                out.push(Hit {
                    path: "/spec/replicas".into(),
                    manager: Some(m.clone()),
                    node: r,
                    by: *span,
                });
            }
        }
        out
    }
}

/// A field an ignore hides on one object.
pub struct Hit<'o> {
    pub path: String,
    pub manager: Option<String>,
    /// The value Git sets.
    pub node: &'o Node,
    /// Where the ignore names it.
    pub by: Span,
}

/// The node an RFC 6901 pointer names, unless it is absent or null: a JSON patch `remove`
/// of an absent path fails, and Argo CD then ignores nothing there.
pub fn pointer_node<'n>(root: &'n Node, pointer: &str) -> Option<&'n Node> {
    let rest = pointer.strip_prefix('/')?;
    let mut here = root;
    for token in rest.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        here = if here.is_seq() {
            here.items().get(token.parse::<usize>().ok()?)?
        } else {
            here.get(&token)?
        };
    }
    (!here.is_null()).then_some(here)
}

/// One step of a jq path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    Each,
    /// `select(<path> == <literal>)`.
    Select(Vec<(Step, bool)>, String),
}

/// The nodes a jq path expression names, for the forms ignores use: `.a.b`, `.a["b"]`,
/// `.a[0]`, `.a[]`, `?`, and `| select(.name == "x")` stages. `None` for anything else, or
/// when jq would fail on this object (Argo CD then ignores nothing with it).
pub fn jq_nodes<'n>(root: &'n Node, expr: &str) -> Option<Vec<&'n Node>> {
    let steps = parse_jq(expr)?;
    let out = eval(vec![Some(root)], &steps)?;
    Some(out.into_iter().flatten().collect())
}

/// jq values as far as paths go: a node, or null (`None`; also an absent key, which jq reads
/// as null).
fn eval<'n>(start: Vec<Option<&'n Node>>, steps: &[(Step, bool)]) -> Option<Vec<Option<&'n Node>>> {
    let mut here = start;
    for (step, optional) in steps {
        let mut next = Vec::new();
        for v in here {
            let n = v.filter(|n| !n.is_null());
            let got: Option<Vec<Option<&Node>>> = match (step, n) {
                (Step::Key(_) | Step::Index(_), None) => Some(vec![None]),
                (Step::Key(k), Some(n)) if n.is_map() => Some(vec![n.get(k)]),
                (Step::Index(i), Some(n)) if n.is_seq() => Some(vec![n.items().get(*i)]),
                (Step::Each, Some(n)) if n.is_seq() => Some(n.items().iter().map(Some).collect()),
                (Step::Each, Some(n)) if n.is_map() => {
                    Some(n.entries().iter().map(|e| Some(&e.value)).collect())
                }
                (Step::Select(path, want), _) => {
                    let vals = eval(vec![n], path)?;
                    let hit = vals
                        .iter()
                        .any(|v| v.and_then(Node::as_str) == Some(want.as_str()));
                    Some(if hit { vec![n] } else { Vec::new() })
                }
                _ => None,
            };
            match got {
                Some(v) => next.extend(v),
                None if *optional => {}
                None => return None,
            }
        }
        here = next;
    }
    Some(here)
}

fn parse_jq(expr: &str) -> Option<Vec<(Step, bool)>> {
    let mut steps = Vec::new();
    for stage in split_pipes(expr)? {
        let stage = stage.trim();
        if let Some(inner) = stage
            .strip_prefix("select")
            .map(str::trim_start)
            .and_then(|s| s.strip_prefix('('))
            .and_then(|s| s.strip_suffix(')'))
        {
            let (path, lit) = inner.split_once("==")?;
            let path = parse_path(path.trim())?;
            let lit = lit.trim();
            let want = match lit.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
                Some(s) if !s.contains(['"', '\\']) => s.to_string(),
                Some(_) => return None,
                None if lit.parse::<f64>().is_ok() || lit == "true" || lit == "false" => {
                    lit.to_string()
                }
                None => return None,
            };
            steps.push((Step::Select(path, want), false));
        } else {
            steps.extend(parse_path(stage)?);
        }
    }
    Some(steps)
}

/// The stages of a pipeline, split at `|` outside strings and parentheses.
fn split_pipes(expr: &str) -> Option<Vec<&str>> {
    let (mut depth, mut quoted, mut from) = (0i32, false, 0);
    let mut out = Vec::new();
    for (i, c) in expr.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => return None,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            '|' if !quoted && depth == 0 => {
                out.push(&expr[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&expr[from..]);
    (depth == 0 && !quoted).then_some(out)
}

/// `.a.b[0][]?["c"]`: a path from the input, without functions or operators.
fn parse_path(s: &str) -> Option<Vec<(Step, bool)>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut steps: Vec<(Step, bool)> = Vec::new();
    if b.first() != Some(&b'.') {
        return None;
    }
    while i < b.len() {
        let step = match b[i] {
            b'.' => {
                i += 1;
                match b.get(i) {
                    None => break,
                    Some(b'[') => continue,
                    Some(b'"') => {
                        let end = s[i + 1..].find('"')? + i + 1;
                        let key = &s[i + 1..end];
                        i = end + 1;
                        Step::Key(key.to_string())
                    }
                    Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                        let start = i;
                        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                            i += 1;
                        }
                        Step::Key(s[start..i].to_string())
                    }
                    _ => return None,
                }
            }
            b'[' => {
                let end = s[i..].find(']')? + i;
                let inner = s[i + 1..end].trim();
                i = end + 1;
                if inner.is_empty() {
                    Step::Each
                } else if let Some(k) = inner.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
                    Step::Key(k.to_string())
                } else {
                    Step::Index(inner.parse().ok()?)
                }
            }
            b' ' => {
                i += 1;
                continue;
            }
            _ => return None,
        };
        let optional = b.get(i) == Some(&b'?');
        if optional {
            i += 1;
        }
        steps.push((step, optional));
    }
    Some(steps)
}

/// The autoscaler's target, when `obj` is an `autoscaling` HorizontalPodAutoscaler or a
/// `keda.sh` ScaledObject: the kind and the `scaleTargetRef.name` node (a ScaledObject
/// without `kind` targets a Deployment).
pub fn scale_target(obj: &Object) -> Option<(&str, &Node)> {
    let is_hpa = obj.kind == "HorizontalPodAutoscaler" && obj.group() == "autoscaling";
    let is_keda = obj.kind == "ScaledObject" && obj.group() == "keda.sh";
    if !is_hpa && !is_keda {
        return None;
    }
    let r = obj.root.path(&["spec", "scaleTargetRef"])?;
    let kind = r.str_at("kind").or(is_keda.then_some("Deployment"))?;
    Some((kind, r.get("name")?))
}

/// The group of a kind an autoscaler scales through `spec.replicas`.
pub fn scalable_group(kind: &str) -> Option<&'static str> {
    match kind {
        "Deployment" | "StatefulSet" => Some("apps"),
        "Rollout" => Some("argoproj.io"),
        _ => None,
    }
}

/// Pairs `(workload, autoscaler)` among `units`: the autoscaler targets the workload by kind
/// and name, in the same namespace (`ns` gives a unit's).
pub fn autoscaled(
    g: &Graph,
    units: &[usize],
    ns: &dyn Fn(usize) -> Option<String>,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for &h in units {
        let Some((kind, name)) = scale_target(&g.units[h].obj) else {
            continue;
        };
        let (Some(group), Some(name)) = (scalable_group(kind), name.as_str()) else {
            continue;
        };
        for &w in units {
            let wl = &g.units[w].obj;
            if wl.kind == kind
                && wl.group() == group
                && wl.name.as_deref() == Some(name)
                && ns(w) == ns(h)
            {
                out.push((w, h));
            }
        }
    }
    out
}

/// The namespace an Application deploys a rendered object to: its own, else the
/// destination's.
pub fn namespace_of(g: &Graph, unit: usize, view: Option<&App>) -> Option<String> {
    g.units[unit].obj.namespace.clone().or_else(|| {
        view.and_then(|v| v.spec.path(&["destination", "namespace"]))
            .and_then(Node::as_str)
            .map(str::to_string)
    })
}

/// The fields that the app's own ignores and argocd-cm's (`system`) hide and that Git sets,
/// on the objects Application `a` renders (`view` is its spec).
pub fn hidden(g: &Graph, a: usize, view: &App, own: &[Ignore], system: &[Ignore]) -> Vec<Hidden> {
    let me = g.apps[a].unit;
    let units: Vec<usize> = g.apps[a]
        .rendered
        .iter()
        .copied()
        .filter(|&u| u != me)
        .collect();
    let ns = |u: usize| namespace_of(g, u, Some(view));
    let scaled = autoscaled(g, &units, &ns);
    let mut out = Vec::new();
    for &u in &units {
        let obj = &g.units[u].obj;
        let scaler = scaled
            .iter()
            .find(|(w, _)| *w == u)
            .and_then(|&(_, h)| scale_target(&g.units[h].obj))
            .map(|(_, name)| name.span);
        let unit_ns = ns(u);
        let ignores = own.iter().chain(system);
        for ig in ignores.filter(|i| i.matches(obj, unit_ns.as_deref())) {
            for hit in ig.hides(obj, scaler.is_some()) {
                let replicas = obj
                    .root
                    .path(&["spec", "replicas"])
                    .is_some_and(|r| r.span == hit.node.span);
                out.push(Hidden {
                    unit: u,
                    path: hit.path,
                    manager: hit.manager,
                    set_at: set_at(&obj.root, hit.node),
                    value: hit.node.span,
                    by: hit.by,
                    system: ig.system,
                    scaler: scaler.filter(|_| replicas),
                });
            }
        }
    }
    out
}

/// Where a label about a value goes: a scalar's own text, a collection's key.
fn set_at(root: &Node, node: &Node) -> Span {
    if node.as_scalar().is_some() {
        return node.span;
    }
    fn key_of(n: &Node, target: Span) -> Option<Span> {
        n.entries()
            .iter()
            .find_map(|e| {
                if e.value.span == target {
                    Some(e.key.span)
                } else {
                    key_of(&e.value, target)
                }
            })
            .or_else(|| n.items().iter().find_map(|i| key_of(i, target)))
    }
    key_of(root, node.span).unwrap_or(node.span)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        crate::yaml::parse(0, text, Default::default())
            .documents
            .remove(0)
            .root
    }

    #[test]
    fn pointers_find_set_values_only() {
        let r = root("spec:\n  replicas: 3\n  a~b: {c/d: 1}\n  list: [x, y]\n  gone: null\n");
        assert_eq!(
            pointer_node(&r, "/spec/replicas").and_then(Node::as_str),
            Some("3")
        );
        assert!(pointer_node(&r, "/spec/a~0b/c~1d").is_some());
        assert_eq!(
            pointer_node(&r, "/spec/list/1").and_then(Node::as_str),
            Some("y")
        );
        assert!(pointer_node(&r, "/spec/list/2").is_none());
        assert!(pointer_node(&r, "/spec/gone").is_none());
        assert!(pointer_node(&r, "/spec/missing").is_none());
    }

    #[test]
    fn jq_paths_of_the_usual_forms() {
        let r = root(
            "webhooks:\n  - name: a\n    clientConfig: {caBundle: Cg==}\n  - name: b\nspec:\n  containers:\n    - {name: app, image: app:1}\n    - {name: side, image: side:2}\n",
        );
        let texts = |e: &str| {
            jq_nodes(&r, e).map(|v| v.iter().filter_map(|n| n.as_str()).collect::<Vec<_>>())
        };
        assert_eq!(
            texts(".webhooks[]?.clientConfig.caBundle"),
            Some(vec!["Cg=="])
        );
        assert_eq!(
            texts(".spec.containers[] | select(.name == \"side\") | .image"),
            Some(vec!["side:2"])
        );
        assert_eq!(texts(".spec.containers[0].image"), Some(vec!["app:1"]));
        assert_eq!(texts(".spec[\"containers\"][1].name"), Some(vec!["side"]));
        assert_eq!(texts(".spec.replicas"), Some(vec![]));
        // jq fails on iterating a missing list without `?`: Argo CD then ignores nothing.
        assert_eq!(texts(".spec.missing[].x"), None);
        assert_eq!(texts(".spec.missing[]?.x"), Some(vec![]));
        // Functions beyond `select` are not read.
        assert_eq!(texts(".webhooks | map(.name)"), None);
    }

    #[test]
    fn system_keys_name_group_and_kind_as_argo_cd_does() {
        let data = root(
            "resource.customizations.ignoreDifferences.apps_Deployment: |\n  jsonPointers: [/spec/replicas]\n  managedFieldsManagers: [kube-controller-manager]\nresource.customizations.ignoreDifferences.all: |\n  jqPathExpressions: ['.metadata.labels.x']\nresource.customizations.ignoreDifferences.ConfigMap: |\n  jsonPointers: [/data/a]\n  managedFieldsManagers: [m]\n",
        );
        let ig = system_ignores(&data);
        let gk: Vec<_> = ig
            .iter()
            .map(|i| (i.group.as_str(), i.kind.as_str(), i.managers.len()))
            .collect();
        assert_eq!(
            gk,
            vec![
                ("apps", "Deployment", 1),
                ("*", "*", 0),
                ("", "ConfigMap", 0)
            ]
        );
        assert!(ig.iter().all(|i| i.system));
    }
}
