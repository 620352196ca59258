use super::{is_policy_key, rbac_data};
use crate::model::Object;
use crate::rules::project::Repos;
use crate::rules::{rule, Cx, Sink, Version};
use crate::yaml::{Node, Span};

rule! {
    id: "rbac-override-broad",
    category: Access,
    severity: Error,
    fix: None,
    summary: "An RBAC policy that lets everyone, or anyone on every project, sync arbitrary local manifests (override) instead of Git",
    check: Check::Object(check),
}

/// Reads argocd-rbac-cm only. AppProject role policies are left alone: Argo CD adds them only
/// when it judges a request on that project's applications (`server/rbacpolicy/rbacpolicy.go`
/// `EnforceClaims`), so they never reach other projects, and a project's own role is where the
/// docs put `override`.
fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(data) = rbac_data(obj) else { return };
    let default_role = data.str_at("policy.default").map(str::trim);
    // Only an argocd-cm of the same repository configures the same Argo CD.
    let mut repos = Repos::new(cx.sources, cx.graph);
    let mine = repos.of(obj.file);
    let revisions = cx.version_or_oldest() >= Version::new(3, 3)
        && cx
            .repo
            .revision_sync_needs_override
            .iter()
            .any(|&f| repos.of(f) == mine);
    for e in data.entries() {
        if is_policy_key(e.key.as_str().unwrap_or("")) {
            check_policy(cx, out, &e.value, default_role, revisions);
        }
    }
}

fn check_policy(cx: &Cx, out: &mut Sink, node: &Node, default_role: Option<&str>, revisions: bool) {
    let Some(text) = node.as_str() else { return };
    let file = &cx.sources.get(node.span.file).text;
    // A literal block's lines are where they are written: a finding points at its own line
    // (where a suppression line above it can reach it), not at the first text that reads the
    // same. Other scalars are searched for each line in turn.
    let lines: Vec<(&str, Span)> = match node.literal_lines(file) {
        Some(ranges) => ranges
            .into_iter()
            .map(|r| (&file[r.clone()], Span::new(node.span.file, r.start, r.end)))
            .collect(),
        None => {
            let mut from = 0;
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|line| {
                    let span = cx.span_in(node, line, from);
                    from = (span.end.saturating_sub(node.span.start)) as usize;
                    (line, span)
                })
                .collect()
        }
    };
    for (line, span) in lines {
        // Lines starting with `#` are comments to Argo CD (`util/rbac/rbac.go` `loadPolicyLine`).
        if line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        // Argo CD loads a `p` line only with exactly six fields (`util/rbac/rbac.go`
        // `loadPolicyLine`); any other count makes it refuse the whole policy, so such a line
        // grants nothing.
        let [kind, subject, resource, action, object, effect] = fields.as_slice() else {
            continue;
        };
        if *kind != "p"
            || *effect != "allow"
            || !matches!(*resource, "applications" | "*")
            || !matches!(*action, "override" | "*")
        {
            continue;
        }
        // role:admin has override on everything built in; granting it again changes nothing.
        if *subject == "role:admin" && Some(*subject) != default_role {
            continue;
        }
        let everyone = Some(*subject) == default_role;
        let every_project = object.starts_with("*/") || *object == "*";
        // A grant on one project's applications is what the docs recommend for those who
        // need override; only a grant to everyone or on every project is broad.
        if !everyone && !every_project {
            continue;
        }
        let who = if everyone {
            format!("`{subject}` is the policy.default role, so every user")
        } else {
            format!("`{subject}`")
        };
        let scope = if every_project {
            "every project's applications"
        } else {
            "applications"
        };
        let what = if revisions {
            "override syncs local manifests in place of Git, and (with requireOverridePrivilegeForRevisionSync on) revisions other than the target"
        } else {
            "override syncs local manifests in place of Git"
        };
        let help = if cx.version_or_oldest() < Version::new(3, 3) {
            "grant `sync` instead, and keep `override` (and `*`) for role:admin or a project's own role; before Argo CD 3.3 `sync` alone can still sync any revision"
        } else if revisions {
            "grant `sync` instead, and keep `override` (and `*`) for role:admin or a project's own role"
        } else {
            "grant `sync` instead, and keep `override` (and `*`) for role:admin or a project's own role; `sync` alone can still sync any revision unless argocd-cm sets `application.sync.requireOverridePrivilegeForRevisionSync: \"true\"`"
        };
        out.report(
            span,
            format!(
                "{who} may `{action}` {scope} (`{object}`): {what}, so a change can bypass review"
            ),
        )
        .label("override granted")
        .help(help);
    }
}
