use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "helm-error",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A local Helm chart that `helm template` refuses to render with the Application's values",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::Helm, "the chart's failure");
}
