pub mod ambiguous_boolean;
pub mod application_shape;
pub mod application_source_missing;
pub mod appset_applications_sync_invalid;
pub mod appset_missingkey_not_error;
pub mod appset_template_error;
pub mod appset_template_patch_go_syntax;
pub mod duplicate_key;
pub mod helm_error;
pub mod helm_render_limit;
pub mod helm_unsupported;
pub mod helm_values_missing;
pub mod invalid_yaml;
pub mod kustomize_error;
pub mod ref_source_unused;
pub mod suppression_without_reason;
pub mod unknown_field;
pub mod unused_suppression;

use crate::model::Object;
use crate::render::{Graph, ProblemKind};
use crate::rules::Sink;
use crate::schema::{self, Schemas, Ty};

/// Reports what the render stage recorded of one kind, as it recorded it.
pub fn report_problems(g: &Graph, out: &mut Sink, kind: ProblemKind, label: &str) {
    for p in g.problems.iter().filter(|p| p.kind == kind) {
        out.report(p.span, p.message.clone())
            .label(label)
            .help(p.help.clone());
    }
}

/// The CRD schema of an Argo CD object, when it has one.
pub fn schema_of(obj: &Object) -> Option<(&'static Schemas, &'static Ty)> {
    if obj.group() != "argoproj.io" {
        return None;
    }
    let schemas = schema::argocd();
    Some((schemas, schemas.root(&obj.kind)?))
}
