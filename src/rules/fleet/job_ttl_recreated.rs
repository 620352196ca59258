use super::app_name;
use crate::finding::Severity;
use crate::model::Object;
use crate::render::Graph;
use crate::rules::app::{app, Tri};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "job-ttl-recreated",
    category: Fleet,
    severity: Warning,
    fix: None,
    summary: "An auto-synced Job with ttlSecondsAfterFinished: once Kubernetes deletes it, Argo CD creates and runs it again",
    check: Check::Graph(check),
}

/// Argo CD leaves hooks out of the comparison (`controller/state.go`): an
/// `argocd.argoproj.io/hook` annotation of any value, or a Helm hook other than `crd-install`.
fn is_hook(job: &Object) -> bool {
    job.annotation("argocd.argoproj.io/hook").is_some()
        || job
            .annotation("helm.sh/hook")
            .is_some_and(|h| h.as_str().map(str::trim) != Some("crd-install"))
}

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    for (a, node) in g.apps.iter().enumerate() {
        let Some(view) = app(cx, g.app_obj(a)) else {
            continue;
        };
        if !view.auto_sync(cx).is_yes() {
            continue;
        }
        let self_heal = view.flag("selfHeal");
        for &u in &node.rendered {
            let job = &g.units[u].obj;
            if !job.is("batch", "Job") || is_hook(job) {
                continue;
            }
            let Some(ttl) = job
                .root
                .path(&["spec", "ttlSecondsAfterFinished"])
                .filter(|n| !n.is_null())
            else {
                continue;
            };
            if ttl.as_str().is_some_and(typing::is_template) {
                continue;
            }
            let name = app_name(g, a);
            let (severity, what) = match self_heal {
                Tri::Yes => (
                    Severity::Error,
                    format!("Application {name} self-heals, so it creates the Job again (after the self-heal backoff, at most 5 minutes by default) and it runs again, after every TTL, for good"),
                ),
                _ => (
                    Severity::Warning,
                    format!("Application {name} then shows it OutOfSync, and its next automated sync (any new commit) creates the Job again and runs it again"),
                ),
            };
            let f = out.report(
                ttl.span,
                format!(
                    "{} is deleted by Kubernetes once it has finished and its TTL has passed: {what}",
                    job.display()
                ),
            );
            f.severity(severity)
                .about(u, job)
                .label("deleted after this many seconds")
                .help("make it a hook (`argocd.argoproj.io/hook: PostSync` or `PreSync`, which Argo CD does not compare and runs once per sync), or remove `ttlSecondsAfterFinished`");
            if let Some(span) = view.flag_anchor("selfHeal").filter(|_| self_heal.is_yes()) {
                f.also(span, "self-heal recreates missing resources");
            }
            f.applications = vec![name];
        }
    }
}
