use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{Entry, Node};

rule! {
    id: "secret-store-static-credentials",
    category: Secrets,
    severity: Warning,
    fix: None,
    summary: "A SecretStore that authenticates with long-lived static keys where its provider offers a workload identity",
    check: Check::Object(check),
}

/// The static-key block a provider is configured with, and the identity the same provider
/// offers instead (ESO v2.9.0, `apis/externalsecrets/v1/secretstore_*_types.go`). Providers
/// whose spec offers only a token or key (1Password Connect, Bitwarden, GitLab, Chef, DVLS,
/// Password Depot, Previder, Cloud.ru) have nothing better to suggest, and Doppler's service
/// token is what ESO's own Doppler guide recommends: none of them is reported.
fn static_key<'a>(provider: &str, spec: &'a Node) -> Option<(&'a Entry, &'static str)> {
    let auth_secret_ref = || spec.get("auth").and_then(|a| a.entry("secretRef"));
    match provider {
        "aws" => auth_secret_ref().map(|e| (e, "drop `auth` to use the controller's pod identity (IRSA or EKS Pod Identity), or use `auth.jwt.serviceAccountRef`, and scope the store with `role`")),
        "gcpsm" => auth_secret_ref().map(|e| (e, "use `auth.workloadIdentity` or `auth.workloadIdentityFederation`, or drop `auth` to use the controller's own GKE identity")),
        "ibm" => auth_secret_ref().map(|e| (e, "use `auth.containerAuth` with an IAM trusted profile")),
        "volcengine" => auth_secret_ref().map(|e| (e, "drop `auth` to use the controller's IRSA identity")),
        // The user principal is used only when principalType does not choose another one.
        "oracle" => {
            let principal = spec.str_at("principalType").unwrap_or("");
            matches!(principal, "" | "UserPrincipal")
                .then(auth_secret_ref)
                .flatten()
                .map(|e| (e, "set `principalType: Workload` with `serviceAccountRef`, or `InstancePrincipal`, and drop `auth`"))
        }
        // authSecretRef holds a client secret only under ServicePrincipal, the default; under
        // WorkloadIdentity or ManagedIdentity it may carry a client or tenant id, no secret.
        "azurekv" => {
            let auth_type = spec.str_at("authType").unwrap_or("ServicePrincipal");
            (auth_type == "ServicePrincipal")
                .then(|| spec.entry("authSecretRef"))
                .flatten()
                .map(|e| (e, "set `authType: WorkloadIdentity` with `serviceAccountRef` (or `ManagedIdentity`) and drop the client secret"))
        }
        _ => None,
    }
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
        if let Some((key, instead)) = static_key(name, &p.value) {
            out.report(key.key.span, format!("the {name} provider authenticates with static keys stored in a Secret, where it offers a workload identity: the keys are long-lived, copied around, and rarely rotated"))
                .label("static credentials")
                .help(instead);
        }
    }
}
