use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "application-shape",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "An Application Argo CD rejects or misreads: server and name both set, source beside sources, no project or destination",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    if let Some(dest) = app.spec.get("destination") {
        if let (Some(server), Some(name)) = (dest.entry("server"), dest.entry("name")) {
            // Argo CD rejects the pair only when both are non-empty; the UI writes `name: ''`.
            let set = |n: &crate::yaml::Node| !n.is_null() && n.as_str() != Some("");
            if set(&server.value) && set(&name.value) {
                out.report(name.key.span, "destination sets both `server` and `name`: Argo CD rejects the Application")
                    .label("second destination")
                    .also(server.key.span, "server is set here")
                    .help("keep one of them: `name` for a registered cluster name, or `server` for its API URL");
            }
        }
    }
    if let (Some(source), Some(sources)) = (app.spec.entry("source"), app.spec.entry("sources")) {
        if !sources.value.items().is_empty() && !source.value.is_null() {
            out.report(
                source.key.span,
                "`source` is ignored because `sources` is not empty",
            )
            .label("ignored")
            .also(sources.key.span, "sources wins")
            .help("move this source into `sources`, or delete it");
        }
    }
    if app.partial {
        return;
    }
    for key in ["project", "destination"] {
        if app.spec.get(key).is_none_or(|n| n.is_null()) {
            let anchor = app
                .obj
                .root
                .entry("spec")
                .map_or(app.spec.span, |e| e.key.span);
            let anchor = if app.template {
                app.obj
                    .root
                    .path(&["spec", "template"])
                    .and_then(|t| t.entry("spec"))
                    .map_or(anchor, |e| e.key.span)
            } else {
                anchor
            };
            out.report(
                anchor,
                format!(
                    "{} has no `{key}`: the CRD requires it and the API server rejects the object",
                    app.kind_name()
                ),
            )
            .label(format!("`{key}` missing"))
            .help(if key == "project" {
                "set `project:` to the AppProject that scopes this application"
            } else {
                "set `destination:` with `server` (or `name`) and `namespace`"
            });
        }
    }
}
