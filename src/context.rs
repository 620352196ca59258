//! Facts about the repository as a whole that single-object rules need: whether an
//! `argocd-cm` in the repository adds system-level ignoreDifferences, and what it says about
//! syncing other revisions.

use crate::model::Object;
use crate::yaml::{FileId, Span};

#[derive(Debug, Default)]
pub struct RepoContext {
    /// `resource.customizations.ignoreDifferences.*` keys of argocd-cm ConfigMaps.
    pub system_ignores: Vec<Span>,
    /// The same keys with their values, for rules that ask what is ignored.
    pub system_ignore_values: Vec<(String, String)>,
    /// The same customizations read as Argo CD reads them: kind, paths and managers.
    pub ignores: Vec<crate::rules::ignored::Ignore>,
    /// argocd-cm files that set `application.sync.requireOverridePrivilegeForRevisionSync`
    /// true (Argo CD 3.3+): syncing another revision than the target then needs `override`.
    pub revision_sync_needs_override: Vec<FileId>,
    /// Files that define the AppProject `default` themselves: Argo CD creates it wide open
    /// only when it does not exist, and a repository may restrict it.
    pub default_projects: Vec<FileId>,
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
        if obj.is_argocd("AppProject") && obj.name.as_deref() == Some("default") {
            cx.default_projects.push(obj.file);
        }
        if obj.is("", "ConfigMap") && obj.name.as_deref() == Some("argocd-cm") {
            if let Some(data) = obj.root.get("data") {
                cx.ignores
                    .extend(crate::rules::ignored::system_ignores(data));
                // Read as the sync call reads it (`util/settings/settings.go`,
                // `RequireOverridePrivilegeForRevisionSync`): Go's `strconv.ParseBool`.
                if matches!(
                    data.str_at("application.sync.requireOverridePrivilegeForRevisionSync"),
                    Some("1" | "t" | "T" | "true" | "TRUE" | "True")
                ) {
                    cx.revision_sync_needs_override.push(obj.file);
                }
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
