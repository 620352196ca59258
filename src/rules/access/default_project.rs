use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "default-project",
    category: Access,
    severity: Warning,
    summary: "An application in the `default` project, which allows any repository, cluster and kind",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    let Some(project) = app.spec.get("project") else {
        return;
    };
    if project.as_str() == Some("default") {
        out.report(project.span, format!("{} uses the `default` project: nothing restricts which repositories, clusters, namespaces or kinds it may deploy", app.kind_name()))
            .label("unrestricted project")
            .help("create an AppProject for the team with its sourceRepos, destinations and allowed kinds, and use it here");
    }
}
