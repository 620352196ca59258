//! Facts about the repository as a whole that single-object rules need: whether an
//! `argocd-cm` in the repository adds system-level ignoreDifferences.

use crate::model::Object;
use crate::yaml::Span;

#[derive(Debug, Default)]
pub struct RepoContext {
    /// `resource.customizations.ignoreDifferences.*` keys of argocd-cm ConfigMaps.
    pub system_ignores: Vec<Span>,
    /// The same keys with their values, for rules that ask what is ignored.
    pub system_ignore_values: Vec<(String, String)>,
    /// The same customizations read as Argo CD reads them: kind, paths and managers.
    pub ignores: Vec<crate::rules::ignored::Ignore>,
}

impl RepoContext {
    /// Whether argocd-cm ignores `pointer` for `group_kind` (`apps_Deployment`, or `all`).
    pub fn system_ignores_pointer(&self, group_kind: &str, pointer: &str) -> bool {
        let jq = pointer.replace('/', ".");
        self.system_ignore_values.iter().any(|(k, v)| {
            let target = k.strip_prefix("resource.customizations.ignoreDifferences.");
            let applies = target.is_some_and(|t| t == group_kind || t == "all")
                || (k == "resource.customizations"
                    && v.contains(group_kind.replace('_', "/").as_str()));
            applies && (v.contains(pointer) || v.contains(&jq))
        })
    }
}

pub fn build(objects: &[&Object]) -> RepoContext {
    let mut cx = RepoContext::default();
    for obj in objects {
        if obj.is("", "ConfigMap") && obj.name.as_deref() == Some("argocd-cm") {
            if let Some(data) = obj.root.get("data") {
                cx.ignores
                    .extend(crate::rules::ignored::system_ignores(data));
                for e in data.entries() {
                    let key = e.key.as_str().unwrap_or("");
                    let system = key.starts_with("resource.customizations.ignoreDifferences.")
                        || (key == "resource.customizations"
                            && e.value
                                .as_str()
                                .is_some_and(|v| v.contains("ignoreDifferences")));
                    if system {
                        cx.system_ignores.push(e.key.span);
                        cx.system_ignore_values.push((
                            key.to_string(),
                            e.value.as_str().unwrap_or_default().to_string(),
                        ));
                    }
                }
            }
        }
    }
    cx
}
