pub mod anonymous_access_enabled;
pub mod default_project;
pub mod project_missing;
pub mod project_scope_violation;
pub mod project_too_open;
pub mod rbac_default_admin;
pub mod rbac_override_broad;

use crate::model::Object;
use crate::yaml::Node;

/// The argocd-rbac-cm ConfigMap's data, when `obj` is one.
pub fn rbac_data(obj: &Object) -> Option<&Node> {
    if obj.is("", "ConfigMap") && obj.name.as_deref() == Some("argocd-rbac-cm") {
        obj.root.get("data")
    } else {
        None
    }
}

/// Whether a key of argocd-rbac-cm's data holds policy CSV: `policy.csv`, or a
/// `policy.<name>.csv` key, which Argo CD reads with it.
pub fn is_policy_key(key: &str) -> bool {
    key == "policy.csv" || (key.starts_with("policy.") && key.ends_with(".csv"))
}
