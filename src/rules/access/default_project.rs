use crate::model::Object;
use crate::rules::app::app;
use crate::rules::project::Repos;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "default-project",
    category: Access,
    severity: Warning,
    fix: None,
    summary: "An application in the built-in `default` project, which allows any repository, cluster and kind",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    let Some(project) = app.spec.get("project") else {
        return;
    };
    if project.as_str() != Some("default") {
        return;
    }
    // Argo CD creates `default` wide open only when it does not exist; a repository that
    // defines it sets its limits itself (project-too-open judges them).
    if !cx.repo.default_projects.is_empty() {
        let mut repos = Repos::new(cx.sources, cx.graph);
        let mine = repos.of(obj.file);
        if cx
            .repo
            .default_projects
            .iter()
            .any(|&f| repos.of(f) == mine)
        {
            return;
        }
    }
    out.report(project.span, format!("{} uses the `default` project: as Argo CD creates it, nothing restricts which repositories, clusters, namespaces or kinds it may deploy", app.kind_name()))
        .label("unrestricted project")
        .help("create an AppProject for the team with its sourceRepos, destinations and allowed kinds, and use it here");
}
