use crate::model::Object;
use crate::rules::app::{app, Tri};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "managed-namespace-metadata-ignored",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "managedNamespaceMetadata has no effect without CreateNamespace=true",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    let Some(e) = app
        .sync_policy()
        .and_then(|p| p.entry("managedNamespaceMetadata"))
    else {
        return;
    };
    if e.value.is_null() || app.has_option("CreateNamespace=true") != Tri::No {
        return;
    }
    out.report(e.key.span, "managedNamespaceMetadata is applied only when Argo CD creates the namespace: these labels and annotations are never set")
        .label("ignored without CreateNamespace=true")
        .help("add `CreateNamespace=true` to syncOptions, or remove managedNamespaceMetadata");
}
