use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::project::{known, Projects, Repos};
use crate::rules::{rule, Cx, Sink};
use crate::text::did_you_mean;
use foldhash::HashSet;

rule! {
    id: "project-missing",
    category: Access,
    severity: Warning,
    fix: None,
    summary: "An application names an AppProject the repository does not define, but one close to it",
    check: Check::Graph(check),
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut repos = Repos::new(cx.sources, cx.graph);
    let projects = Projects::collect(g, &mut repos);
    if projects.repos_with_projects.is_empty() {
        return;
    }
    let mut seen = HashSet::default();
    for (u, unit) in g.units.iter().enumerate() {
        let Some(view) = app(cx, &unit.obj) else {
            continue;
        };
        let node = view.spec.get("project");
        // `known` leaves out templates: an ApplicationSet's `{{...}}` project is only known
        // once generated.
        let (Some(name), Some(node)) = (known(node), node) else {
            continue;
        };
        // `default` is created by the API server when it is missing (argo-cd
        // `server/server.go`, `initializeDefaultProject`), so it exists everywhere.
        if name.is_empty() || name == "default" || !seen.insert(node.span) {
            continue;
        }
        let repo = repos.of(unit.obj.file);
        if !projects.repos_with_projects.contains(&repo)
            || projects
                .by_name
                .contains_key(&(repo.clone(), name.to_string()))
        {
            continue;
        }
        // Projects are often created outside the repository (the argo-cd chart's values, the
        // UI, another repository), and nothing in a repository proves it holds every project
        // of its instance. A name absent here is therefore only reported when it is a near
        // miss of a project the repository does define: a typo, not a project kept elsewhere.
        let names = projects.names_in(&repo);
        let Some(close) = did_you_mean(name, names.iter().copied()) else {
            continue;
        };
        let message = if name.eq_ignore_ascii_case(close) {
            // Object names are lowercase (RFC 1123), so no AppProject can have this name.
            format!(
                "{} uses project `{name}`, but the repository defines `{close}`: AppProject names are lowercase, so no project `{name}` can exist and Argo CD refuses to sync the application",
                view.kind_name()
            )
        } else {
            format!(
                "{} uses project `{name}`, which this repository does not define, but it defines `{close}`: if `{name}` is a typo, Argo CD refuses to sync the application until the project exists",
                view.kind_name()
            )
        };
        out.report(node.span, message)
            .on(u)
            .label("no such AppProject here")
            .help(format!(
                "did you mean `{close}`? If `{name}` is defined outside this repository, suppress this finding here"
            ));
    }
}
