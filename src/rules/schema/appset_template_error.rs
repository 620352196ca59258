use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "appset-template-error",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "An ApplicationSet template that Argo CD cannot render, or that is too costly to expand",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::Template, "the template problem");
}
