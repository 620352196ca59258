//! Rules over the object graph: what an Application renders, and what its parent does to it.

pub mod cascade_delete_risk;
pub mod child_application_namespace_ignored;
pub mod child_break_glass_reverted;
pub mod child_sync_wave_no_health;
pub mod deployment;
pub mod duplicate_application_name;
pub mod hpa_replicas_conflict;
pub mod job_ttl_recreated;
pub mod manual_sync_not_enforced;
pub mod operator_drift_not_ignored;
pub mod parent_sync_disabled;
pub mod shared_resource;

use crate::render::Graph;
use crate::yaml::{Node, Span};

/// Where an absence is reported on an Application: its `syncPolicy` key, else its `spec` key.
pub fn policy_anchor(root: &Node) -> Span {
    let spec = root.entry("spec");
    spec.and_then(|s| s.value.entry("syncPolicy"))
        .map(|e| e.key.span)
        .or(spec.map(|s| s.key.span))
        .unwrap_or(root.span)
}

/// The Application's name for reports.
pub fn app_name(g: &Graph, app: usize) -> String {
    g.app_obj(app)
        .name
        .clone()
        .unwrap_or_else(|| "(unnamed)".into())
}
