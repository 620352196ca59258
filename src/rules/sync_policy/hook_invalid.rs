use crate::model::Object;
use crate::rules::sync_options::annotation_tokens;
use crate::rules::{did_you_mean, rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "hook-invalid",
    category: SyncPolicy,
    severity: Error,
    summary: "An argocd.argoproj.io/hook or hook-delete-policy value Argo CD does not know: the hook never runs or is never cleaned up",
    check: Check::Object(check),
}

const HOOK: &str = "argocd.argoproj.io/hook";
const DELETE_POLICY: &str = "argocd.argoproj.io/hook-delete-policy";

/// The hook types Argo CD reads, matched exactly (gitops-engine `NewHookType`, and the
/// controller's delete hooks).
const HOOKS: &[&str] = &[
    "PreSync",
    "Sync",
    "Skip",
    "PostSync",
    "SyncFail",
    "PreDelete",
    "PostDelete",
];

/// The delete policies Argo CD reads, matched exactly (gitops-engine `NewHookDeletePolicy`).
/// `Never` is recognised by current gitops-engine.
const DELETE_POLICIES: &[&str] = &["HookSucceeded", "HookFailed", "BeforeHookCreation", "Never"];

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let hooks = annotation_tokens(cx, obj, HOOK);
    let any_known_hook = hooks.iter().any(|(t, ..)| HOOKS.contains(t));
    for (text, span, _) in &hooks {
        if HOOKS.contains(text) || typing::is_template(text) {
            continue;
        }
        // An object with the annotation is a hook whatever its value; with no type Argo CD
        // knows, it belongs to no phase and is neither applied nor run.
        let effect = if any_known_hook {
            "Argo CD skips this hook type"
        } else {
            "the object is treated as a hook of no phase, so it is never applied"
        };
        let finding = out
            .report(
                *span,
                format!("`{text}` is not an Argo CD hook type: {effect}"),
            )
            .label("unknown hook type");
        match did_you_mean(text, HOOKS.iter().copied()) {
            Some(known) => finding.help(format!("write `{known}` (hook types are case-sensitive)")),
            None => finding.help(format!("hook types are {}", list(HOOKS))),
        };
    }
    for (text, span, _) in annotation_tokens(cx, obj, DELETE_POLICY) {
        if DELETE_POLICIES.contains(&text) || typing::is_template(text) {
            continue;
        }
        let finding = out
            .report(span, format!("`{text}` is not an Argo CD hook delete policy: it is ignored, and without another policy the hook is only deleted before it is next created"))
            .label("unknown delete policy");
        match did_you_mean(text, DELETE_POLICIES.iter().copied()) {
            Some(known) => finding.help(format!("write `{known}` (delete policies are case-sensitive; `hook-succeeded` and the like are Helm's spellings, read only from `helm.sh/hook-delete-policy`)")),
            None => finding.help(format!("delete policies are {}", list(DELETE_POLICIES))),
        };
    }
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
