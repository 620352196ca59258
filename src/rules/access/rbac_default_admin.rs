use super::rbac_data;
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "rbac-default-admin",
    category: Access,
    severity: Error,
    fix: None,
    summary: "policy.default: role:admin makes every authenticated user an Argo CD admin",
    check: Check::Object(check),
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(data) = rbac_data(obj) else { return };
    let Some(default) = data.get("policy.default") else {
        return;
    };
    if default.as_str().map(str::trim) == Some("role:admin") {
        out.report(default.span, "every authenticated user gets role:admin: they can sync local manifests over Git (the `override` action), edit projects and delete applications")
            .label("admin for everyone")
            .help("set `policy.default: role:readonly` (or remove it) and grant admin to named groups with `g, <group>, role:admin`");
    }
}
