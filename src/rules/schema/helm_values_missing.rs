use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "helm-values-missing",
    category: Schema,
    severity: Error,
    summary: "A Helm valueFiles entry (local or $ref/...) that does not exist in the repository",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::ValuesMissing, "no such file");
}
