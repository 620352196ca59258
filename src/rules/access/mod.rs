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
