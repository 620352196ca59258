use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "application-source-missing",
    category: Schema,
    severity: Error,
    summary: "A local source path, $ref value file or generator path that does not exist",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    for p in g
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::SourceMissing)
    {
        out.report(p.span, p.message.clone())
            .label("not in this repository")
            .help(p.help.clone());
    }
}
