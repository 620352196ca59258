use crate::model::Object;
use crate::rules::sync_options::annotation_tokens;
use crate::rules::{rule, Cx, Sink, Version};
use crate::text::did_you_mean;
use crate::yaml::typing;

rule! {
    id: "hook-invalid",
    category: SyncPolicy,
    severity: Error,
    fix: None,
    summary: "An argocd.argoproj.io/hook or hook-delete-policy value Argo CD does not know: the hook never runs or is never cleaned up",
    check: Check::Object(check),
}

const HOOK: &str = "argocd.argoproj.io/hook";
const DELETE_POLICY: &str = "argocd.argoproj.io/hook-delete-policy";
const HELM_HOOK: &str = "helm.sh/hook";

/// The hook types gitops-engine reads during a sync, matched exactly (`common.NewHookType`).
const SYNC_HOOKS: &[&str] = &["PreSync", "Sync", "Skip", "PostSync", "SyncFail"];

/// The hooks the application controller runs when an Application is deleted
/// (`controller/hook.go`), with the first release that knows each.
const DELETE_HOOKS: &[(&str, Version)] = &[
    ("PostDelete", Version::new(2, 10)),
    ("PreDelete", Version::new(3, 3)),
];

/// Every hook type some release reads, for "did you mean".
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
/// There is no `Never`: any other value is dropped.
const DELETE_POLICIES: &[&str] = &["HookSucceeded", "HookFailed", "BeforeHookCreation"];

/// Whether `version` reads the hook type `text`.
fn known(text: &str, version: Version) -> bool {
    SYNC_HOOKS.contains(&text) || since(text).is_some_and(|s| version >= s)
}

/// The release that introduced a delete hook type.
fn since(text: &str) -> Option<Version> {
    DELETE_HOOKS
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, v)| *v)
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let version = cx.version_or_oldest();
    let hooks = annotation_tokens(cx, obj, HOOK);
    let any_known_hook = hooks.iter().any(|(t, ..)| known(t, version));
    // With no Argo CD hook type it knows, gitops-engine falls back to the Helm hook types
    // (`hook.Types`).
    let helm_hook = obj.annotation(HELM_HOOK).is_some();
    for (text, span, _) in &hooks {
        if known(text, version) || typing::is_template(text) {
            continue;
        }
        // An object with the annotation is a hook whatever its value; with no type Argo CD
        // knows, it belongs to no phase and is neither applied nor run.
        let effect = if any_known_hook {
            "Argo CD skips this hook type"
        } else if helm_hook {
            "Argo CD ignores it and takes the hook types of `helm.sh/hook` instead"
        } else {
            "the object is treated as a hook of no phase, so it is never applied"
        };
        if let Some(since) = since(text) {
            let assumed = if cx.version.is_some() {
                ""
            } else {
                " (assumed: no --argocd-version given)"
            };
            let effect = if any_known_hook || helm_hook {
                effect
            } else {
                "the object is a hook of no phase: it is never applied, and nothing runs when the Application is deleted"
            };
            out.report(
                *span,
                format!("`{text}` hooks exist from Argo CD {since} on; the target is {version}{assumed}: {effect}"),
            )
            .label("hook type unknown to this version")
            .help(format!("upgrade to {since}+, or pass --argocd-version if you already run it"));
            continue;
        }
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
            .report(span, format!("`{text}` is not an Argo CD hook delete policy: it is ignored, and without another policy the hook is deleted before it is next created (`BeforeHookCreation`)"))
            .label("unknown delete policy");
        match did_you_mean(text, DELETE_POLICIES.iter().copied()) {
            Some(known) => finding.help(format!("write `{known}` (delete policies are case-sensitive; `hook-succeeded` and the like are Helm's spellings, read only from `helm.sh/hook-delete-policy`)")),
            None if text == "Never" => finding.help("Argo CD has no policy that keeps a hook for good: without one, it is kept until the next sync replaces it (`BeforeHookCreation`); remove the annotation or choose one of `HookSucceeded`, `HookFailed`, `BeforeHookCreation`"),
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
