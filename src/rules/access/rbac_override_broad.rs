use super::rbac_data;
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Node;

rule! {
    id: "rbac-override-broad",
    category: Access,
    severity: Error,
    summary: "An RBAC policy that lets non-admins sync arbitrary local manifests (override) instead of Git",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if let Some(data) = rbac_data(obj) {
        let default_role = data.str_at("policy.default").map(str::trim);
        for e in data.entries() {
            let key = e.key.as_str().unwrap_or("");
            if key == "policy.csv" || (key.starts_with("policy.") && key.ends_with(".csv")) {
                check_policy(cx, out, &e.value, default_role);
            }
        }
    }
    if obj.is_argocd("AppProject") {
        for role in obj
            .root
            .path(&["spec", "roles"])
            .map(Node::items)
            .unwrap_or(&[])
        {
            for policy in role.get("policies").map(Node::items).unwrap_or(&[]) {
                check_policy(cx, out, policy, None);
            }
        }
    }
}

fn check_policy(cx: &Cx, out: &mut Sink, node: &Node, default_role: Option<&str>) {
    let Some(text) = node.as_str() else { return };
    let mut from = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let span = cx.span_in(node, line, from);
        from = (span.end.saturating_sub(node.span.start)) as usize;
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [kind, subject, resource, action, object, rest @ ..] = fields.as_slice() else {
            continue;
        };
        if *kind != "p"
            || !matches!(*resource, "applications" | "*")
            || !matches!(*action, "override" | "*")
        {
            continue;
        }
        let effect = rest.first().copied().unwrap_or("allow");
        if effect != "allow" {
            continue;
        }
        // role:admin has override on everything built in; granting it again changes nothing.
        if *subject == "role:admin" && Some(*subject) != default_role {
            continue;
        }
        let who = if Some(*subject) == default_role {
            format!("`{subject}` is the policy.default role, so every user")
        } else {
            format!("`{subject}`")
        };
        let scope = if object.starts_with("*/") || *object == "*" {
            "every project's applications"
        } else {
            "applications"
        };
        out.report(span, format!("{who} may `{action}` {scope} (`{object}`): override syncs local manifests in place of Git, so a change can bypass review"))
            .label("override granted")
            .help("grant `sync` instead; keep `override` (and `*`) for role:admin, with Git as the only write path");
    }
}
