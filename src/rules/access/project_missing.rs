use crate::render::Graph;
use crate::rules::app::app;
use crate::rules::project::{known, Projects, Repos};
use crate::rules::{did_you_mean, rule, Cx, Sink};
use foldhash::HashSet;

rule! {
    id: "project-missing",
    category: Access,
    severity: Error,
    summary: "An application names an AppProject the repository does not define (while it defines others)",
    check: Check::Graph(check),
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    let mut repos = Repos::new(cx.sources);
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
        let Some(name) = known(node) else { continue };
        let node = node.expect("known");
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
        let names = projects.names_in(&repo);
        let help = match did_you_mean(name, names.iter().copied()) {
            Some(close) => format!(
                "did you mean `{close}`? Otherwise add the AppProject `{name}` to the repository"
            ),
            None => format!(
                "add the AppProject `{name}` next to the others ({}), or use one of them",
                names.join(", ")
            ),
        };
        out.report(
            node.span,
            format!(
                "{} uses project `{name}`, which this repository does not define: Argo CD refuses to sync it until the project exists",
                view.kind_name()
            ),
        )
        .on(u)
        .label("no such AppProject here")
        .help(help);
    }
}
