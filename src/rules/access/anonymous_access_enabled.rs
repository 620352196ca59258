use super::rbac_data;
use crate::finding::Severity;
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "anonymous-access-enabled",
    category: Access,
    severity: Warning,
    fix: None,
    summary: "users.anonymous.enabled: \"true\" gives everyone who reaches Argo CD, without logging in, the policy.default role",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is("", "ConfigMap") || obj.name.as_deref() != Some("argocd-cm") {
        return;
    }
    let Some(enabled) = obj.root.path(&["data", "users.anonymous.enabled"]) else {
        return;
    };
    // `util/settings/settings.go` compares the value with "true", nothing else.
    if enabled.as_str() != Some("true") {
        return;
    }
    // The argocd-rbac-cm ConfigMaps of the repository that may sit beside this one.
    let same_ns = |o: &Object| match (&o.namespace, &obj.namespace) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    let mut defaults = Vec::new();
    let mut rbac_found = false;
    for unit in &cx.graph.units {
        let o = &unit.obj;
        if !same_ns(o) {
            continue;
        }
        if let Some(data) = rbac_data(o) {
            rbac_found = true;
            if let Some(d) = data.get("policy.default") {
                defaults.push(d);
            }
        } else if o.is("", "ConfigMap") && o.name.as_deref() == Some("argocd-rbac-cm") {
            rbac_found = true;
        }
    }
    let role = |n: &crate::yaml::Node| n.as_str().map(str::trim).unwrap_or("").to_string();
    let admin = defaults.iter().find(|d| role(d) == "role:admin");
    let granted = defaults.iter().find(|d| !role(d).is_empty());
    let help = "remove `users.anonymous.enabled` (or set it to \"false\") and give people access through SSO or local accounts; a public read-only instance is the one place it belongs";
    if let Some(d) = admin {
        out.report(enabled.span, "anonymous access is on and policy.default is role:admin: anyone who can reach the Argo CD API or UI, without logging in, can sync, delete and edit every application and project")
            .severity(Severity::Error)
            .label("no login needed")
            .also(d.span, "every anonymous user gets this role")
            .help(help);
    } else if let Some(d) = granted {
        let r = role(d);
        let what = if r == "role:readonly" {
            "can read every application, its live manifests and pod logs, and the projects, clusters and repositories"
        } else {
            "get everything that role grants"
        };
        out.report(enabled.span, format!("anonymous access is on: anyone who can reach the Argo CD API or UI, without logging in, gets policy.default `{r}` and {what}"))
            .label("no login needed")
            .also(d.span, "every anonymous user gets this role")
            .help(help);
    } else if rbac_found {
        out.report(enabled.span, "anonymous access is on, but argocd-rbac-cm sets no policy.default, so anonymous users get no permissions today; a default role added later goes to everyone who can reach Argo CD, logged in or not")
            .severity(Severity::Info)
            .label("no login needed")
            .help(help);
    } else {
        out.report(enabled.span, "anonymous access is on: anyone who can reach the Argo CD API or UI, without logging in, gets whatever role argocd-rbac-cm's policy.default grants")
            .label("no login needed")
            .help(help);
    }
}
