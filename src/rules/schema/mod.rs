pub mod ambiguous_boolean;
pub mod application_shape;
pub mod application_source_missing;
pub mod duplicate_key;
pub mod invalid_yaml;
pub mod kustomize_error;
pub mod suppression_without_reason;
pub mod unknown_field;
pub mod unused_suppression;

use crate::model::Object;
use crate::schema::{self, Schemas, Ty};

/// The CRD schema of an Argo CD object, when it has one.
pub fn schema_of(obj: &Object) -> Option<(&'static Schemas, &'static Ty)> {
    if obj.group() != "argoproj.io" {
        return None;
    }
    let schemas = schema::argocd();
    Some((schemas, schemas.root(&obj.kind)?))
}
