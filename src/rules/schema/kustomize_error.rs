use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "kustomize-error",
    category: Schema,
    severity: Error,
    summary: "A kustomization that does not build: missing paths, bad patches, cycles, escapes",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    for p in g
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Kustomize)
    {
        out.report(p.span, p.message.clone())
            .label("the kustomization problem")
            .help(p.help.clone());
    }
}
