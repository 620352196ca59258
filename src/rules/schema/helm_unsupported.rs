use crate::render::{Graph, ProblemKind};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "helm-unsupported",
    category: Schema,
    severity: Warning,
    fix: None,
    summary: "A local Helm chart that Helm renders but gitops-lint cannot offline (`toToml`, a value file glob): nothing it deploys is checked",
    check: Check::Graph(check),
}

fn check(_cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(
        g,
        out,
        ProblemKind::HelmUnsupported,
        "what is not evaluated offline",
    );
}
