pub mod gojq;
pub mod ignore_differences_invalid_jq;
pub mod ignore_differences_invalid_pointer;
pub mod ignore_differences_never_matches;
pub mod ignore_differences_wildcard;
pub mod ignore_replicas_without_managers;

use crate::model::Object;
use crate::rules::app::app;
use crate::rules::Cx;
use crate::yaml::{typing, Node, Span};
use std::borrow::Cow;

/// One `jsonPointers` or `jqPathExpressions` item, wherever Argo CD reads one.
pub struct PathItem<'a> {
    pub text: Cow<'a, str>,
    pub span: Span,
    /// The item's own node; `None` inside an argocd-cm value, which is YAML in a string.
    pub node: Option<&'a Node>,
    pub origin: Origin,
}

/// Which of Argo CD's readers takes the item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Origin {
    /// An Application's (or an ApplicationSet template's) `ignoreDifferences`: the
    /// application controller's comparison.
    Application,
    /// An ApplicationSet's `ignoreApplicationDifferences`: the ApplicationSet controller's
    /// update of the Applications it generates.
    ApplicationSet,
    /// argocd-cm `resource.customizations.ignoreDifferences.*`: every application's comparison.
    SystemIgnoreDifferences,
    /// argocd-cm `resource.customizations.ignoreResourceUpdates.*`: the controller's cache.
    SystemIgnoreResourceUpdates,
}

/// The items under `key` (`jsonPointers` or `jqPathExpressions`) of an Application's (or
/// ApplicationSet template's) `ignoreDifferences`, an ApplicationSet's
/// `ignoreApplicationDifferences`, and argocd-cm's `ignoreDifferences` and
/// `ignoreResourceUpdates` customizations. Templated items are left out.
pub fn path_items<'a>(cx: &Cx, obj: &'a Object, key: &str) -> Vec<PathItem<'a>> {
    let mut entries: Vec<(&'a Node, Origin)> = Vec::new();
    if let Some(app) = app(cx, obj) {
        entries.extend(
            app.ignore_differences()
                .iter()
                .map(|e| (e, Origin::Application)),
        );
    }
    if obj.is_argocd("ApplicationSet") {
        if let Some(list) = obj.root.path(&["spec", "ignoreApplicationDifferences"]) {
            entries.extend(list.items().iter().map(|e| (e, Origin::ApplicationSet)));
        }
    }
    let mut out: Vec<PathItem<'a>> = entries
        .into_iter()
        .flat_map(|(e, origin)| {
            e.get(key)
                .map(Node::items)
                .unwrap_or(&[])
                .iter()
                .map(move |n| (n, origin))
        })
        .filter_map(|(n, origin)| {
            Some(PathItem {
                text: Cow::Borrowed(n.as_str()?),
                span: n.span,
                node: Some(n),
                origin,
            })
        })
        .collect();
    out.extend(argocd_cm_items(cx, obj, key));
    out.retain(|i| !typing::is_template(&i.text));
    out
}

/// Items of argocd-cm's per-kind customizations, whose values are YAML documents in strings.
fn argocd_cm_items<'a>(cx: &Cx, obj: &'a Object, key: &str) -> Vec<PathItem<'a>> {
    let mut out = Vec::new();
    if !obj.is("", "ConfigMap") || obj.name.as_deref() != Some("argocd-cm") {
        return out;
    }
    let Some(data) = obj.root.get("data") else {
        return out;
    };
    for e in data.entries() {
        let name = e.key.as_str().unwrap_or("");
        let rest = name.strip_prefix("resource.customizations.").unwrap_or("");
        let origin = if rest.starts_with("ignoreDifferences.") {
            Origin::SystemIgnoreDifferences
        } else if rest.starts_with("ignoreResourceUpdates.") {
            Origin::SystemIgnoreResourceUpdates
        } else {
            continue;
        };
        let Some(text) = e.value.as_str() else {
            continue;
        };
        let parsed = crate::yaml::parse(e.value.span.file, text, Default::default());
        let Some(doc) = parsed.documents.first() else {
            continue;
        };
        let mut from = 0;
        for item in doc.root.get(key).map(Node::items).unwrap_or(&[]) {
            let Some(t) = item.as_str() else { continue };
            // The parsed spans are offsets into the string, not the file: find the text
            // in the file instead (the whole value when it is escaped beyond recognition).
            let span = cx.span_in(&e.value, t, from);
            if span != e.value.span {
                from = (span.end - e.value.span.start) as usize;
            }
            out.push(PathItem {
                text: Cow::Owned(t.to_string()),
                span,
                node: None,
                origin,
            });
        }
    }
    out
}
