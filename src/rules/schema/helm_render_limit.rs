use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "helm-render-limit",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A local Helm chart past a bound of the offline renderer, or of the run's budget for Helm: nothing it deploys is checked",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::HelmLimit, "where the renderer stopped");
}
