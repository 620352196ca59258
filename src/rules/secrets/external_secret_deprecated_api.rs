use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "external-secret-deprecated-api",
    category: Secrets,
    severity: Warning,
    fix: None,
    summary: "External Secrets objects on v1beta1/v1alpha1, which current operators no longer serve",
    check: Check::Object(check),
}

const KINDS: [&str; 4] = [
    "ExternalSecret",
    "ClusterExternalSecret",
    "SecretStore",
    "ClusterSecretStore",
];

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if obj.group() != "external-secrets.io" || !KINDS.contains(&obj.kind.as_str()) {
        return;
    }
    let (version, why) = match obj.version() {
        "v1beta1" => ("v1beta1", "is not served since External Secrets 0.17"),
        "v1alpha1" => ("v1alpha1", "was removed in External Secrets 0.16"),
        _ => return,
    };
    let Some(api) = obj.root.get("apiVersion") else {
        return;
    };
    out.report(api.span, format!("{} on external-secrets.io/{version}: this API {why}, so the sync fails on an up-to-date operator", obj.kind))
        .label("deprecated API version")
        .help("use `apiVersion: external-secrets.io/v1` (same fields for ExternalSecret and SecretStore)");
}
