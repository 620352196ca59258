use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "kustomize-error",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A kustomization that does not build: missing paths, bad patches, cycles, escapes",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::Kustomize, "the kustomization problem");
}
