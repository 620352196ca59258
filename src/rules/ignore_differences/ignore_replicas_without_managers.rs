use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::Node;

rule! {
    id: "ignore-replicas-without-managers",
    category: IgnoreDifferences,
    severity: Info,
    fix: None,
    summary: "/spec/replicas ignored for everyone, not only for the autoscaler that owns it",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    for entry in app.ignore_differences() {
        if entry
            .get("managedFieldsManagers")
            .is_some_and(|m| !m.items().is_empty())
        {
            continue;
        }
        let pointers = entry.get("jsonPointers").map(Node::items).unwrap_or(&[]);
        if let Some(p) = pointers
            .iter()
            .find(|p| p.as_str() == Some("/spec/replicas"))
        {
            out.report(p.span, "/spec/replicas is ignored whatever changes it: a manual `kubectl scale` is hidden from Argo CD as well as the HPA's scaling")
                .label("ignored for every writer")
                .help("replace the pointer with `managedFieldsManagers: [kube-controller-manager]` (the HPA's field manager) so only the autoscaler's changes are ignored");
        }
    }
}
