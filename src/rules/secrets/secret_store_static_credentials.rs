use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "secret-store-static-credentials",
    category: Secrets,
    severity: Warning,
    summary: "A SecretStore that authenticates with long-lived static keys instead of a workload identity",
    check: Check::Object(check),
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if obj.group() != "external-secrets.io"
        || !matches!(obj.kind.as_str(), "SecretStore" | "ClusterSecretStore")
    {
        return;
    }
    let Some(provider) = obj.root.path(&["spec", "provider"]) else {
        return;
    };
    for p in provider.entries() {
        let name = p.key.as_str().unwrap_or("");
        let key = p
            .value
            .get("auth")
            .and_then(|a| a.entry("secretRef"))
            .or_else(|| {
                if name == "azurekv" {
                    p.value.entry("authSecretRef")
                } else {
                    None
                }
            });
        if let Some(key) = key {
            out.report(key.key.span, format!("the {name} provider authenticates with static keys stored in a Secret: long-lived, copied around, and rarely rotated"))
                .label("static credentials")
                .help("use the controller's workload identity (IRSA / EKS Pod Identity, GKE or Azure workload identity), or `auth.jwt.serviceAccountRef`, and scope access with a role");
        }
    }
}
