use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "application-source-missing",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A local source path or generator path that does not exist",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::SourceMissing, "not in this repository");
}
