use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "external-secret-policy-conflict",
    category: Secrets,
    severity: Error,
    fix: None,
    summary: "An ExternalSecret whose target creationPolicy and deletionPolicy form a pair ESO rejects",
    check: Check::Object(check),
}

/// Whether ESO rejects this pair of `target.creationPolicy` and `target.deletionPolicy`.
fn forbidden(creation: &str, deletion: &str) -> bool {
    match deletion {
        "Delete" => matches!(creation, "Merge" | "CreateOrMerge" | "None"),
        "Merge" => creation == "None",
        _ => false,
    }
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if !(obj.group() == "external-secrets.io" && obj.kind == "ExternalSecret") {
        return;
    }
    let Some(target) = obj.spec().and_then(|s| s.get("target")) else {
        return;
    };
    // Absent values take ESO's defaults, Owner and Retain; the forbidden pairs need both
    // written out, so both nodes exist whenever the rule fires.
    let (Some(deletion_node), Some(creation_node)) =
        (target.get("deletionPolicy"), target.get("creationPolicy"))
    else {
        return;
    };
    let (Some(deletion), Some(creation)) = (
        target.str_at("deletionPolicy"),
        target.str_at("creationPolicy"),
    ) else {
        return;
    };
    if typing::is_template(deletion) || typing::is_template(creation) {
        return;
    }
    if !forbidden(creation, deletion) {
        return;
    }
    let why = if deletion == "Delete" {
        "Delete could remove a Secret that ESO did not create"
    } else {
        "with creationPolicy None ESO never writes to the Secret, so there is nothing to merge"
    };
    out.report(
        deletion_node.span,
        format!("deletionPolicy {deletion} cannot be combined with creationPolicy {creation}: ESO rejects the ExternalSecret ({why})"),
    )
    .label(format!("deletionPolicy {deletion}"))
    .also(creation_node.span, format!("creationPolicy {creation}"))
    .help(if deletion == "Delete" {
        "deletionPolicy Delete works with creationPolicy Owner (the default) or Orphan; with Merge or CreateOrMerge use deletionPolicy Merge or Retain"
    } else {
        "deletionPolicy Merge works with creationPolicy Owner, Orphan, Merge or CreateOrMerge; with None use deletionPolicy Retain (the default)"
    });
}
