use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::text::did_you_mean;
use crate::yaml::{typing, Node};

rule! {
    id: "ref-source-unused",
    category: Schema,
    severity: Warning,
    fix: None,
    summary: "A multi-source entry with `ref:` that no source's valueFiles reads as `$ref/...`",
    check: Check::Object(check),
}

/// The strings Argo CD reads `$ref/...` from: Helm `valueFiles` and `fileParameters` paths.
/// `None` when a list is templated or malformed, so a use cannot be ruled out.
fn ref_candidates(source: &Node) -> Option<Vec<&Node>> {
    let Some(helm) = source.get("helm").filter(|h| !h.is_null()) else {
        return Some(Vec::new());
    };
    if !helm.is_map() {
        return None;
    }
    let mut out = Vec::new();
    if let Some(files) = helm.get("valueFiles").filter(|f| !f.is_null()) {
        if !files.is_seq() {
            return None;
        }
        out.extend(files.items());
    }
    if let Some(params) = helm.get("fileParameters").filter(|f| !f.is_null()) {
        if !params.is_seq() {
            return None;
        }
        out.extend(params.items().iter().filter_map(|p| p.get("path")));
    }
    Some(out)
}

/// The ref name a value file starts with: `values` for `$values/envs/prod.yaml`.
fn ref_name(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('$')?;
    Some(rest.split_once('/').map_or(rest, |(name, _)| name))
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    // A templatePatch may add the value files that read the ref.
    if app.partial {
        return;
    }
    let Some(sources) = app.spec.get("sources").filter(|s| !s.items().is_empty()) else {
        return;
    };
    let mut used: Vec<&Node> = Vec::new();
    for s in sources.items() {
        match ref_candidates(s) {
            Some(c) => used.extend(c),
            None => return,
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for item in &used {
        match item.as_str() {
            // A templated item may expand to any `$ref/...`.
            Some(t) if typing::is_template(t) => return,
            Some(t) => names.extend(ref_name(t)),
            None => return,
        }
    }
    for s in sources.items() {
        let Some(r) = s.get("ref") else { continue };
        let Some(name) = r
            .as_str()
            .filter(|n| !n.is_empty() && !typing::is_template(n))
        else {
            continue;
        };
        if names.contains(&name) {
            continue;
        }
        let renders = s.get("path").is_some_and(|p| !p.is_null()) || s.get("chart").is_some();
        let f = out.report(
            r.span,
            format!("`ref: {name}` is read by no value file: nothing in `sources` starts with `${name}/`"),
        );
        f.label("unused ref");
        // A `$ref` that names no source is read as a plain path; the likely slip is here.
        let slip = used.iter().find(|item| {
            item.as_str()
                .and_then(ref_name)
                .is_some_and(|n| n != name && did_you_mean(n, [name]).is_some())
        });
        if let Some(item) = slip {
            f.also(
                item.span,
                format!("did you mean `${name}`? This value file names no source"),
            );
        }
        f.help(if renders {
            format!("refer to it as `${name}/<path>` in another source's `helm.valueFiles`, or drop `ref: {name}`")
        } else {
            format!("refer to it as `${name}/<path>` in another source's `helm.valueFiles`, or remove the source: Argo CD fetches it on every refresh for nothing")
        });
    }
}
