use crate::fix::{Fix, NewValue};
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};

rule! {
    id: "appset-missingkey-not-error",
    category: Schema,
    severity: Info,
    fix: Unsafe,
    summary: "An ApplicationSet with goTemplate but no missingkey option: a missing parameter renders as \"<no value>\"",
    check: Check::Object(check),
}

const OPTION: &str = "missingkey=error";

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("ApplicationSet") {
        return;
    }
    let Some(spec) = obj.spec().filter(|s| s.is_map()) else {
        return;
    };
    let Some(go) = spec.entry("goTemplate") else {
        return;
    };
    if go.value.as_scalar().and_then(typing::as_bool) != Some(true) {
        return;
    }
    let options = spec.get("goTemplateOptions");
    // Any written missingkey option is a choice (`default`, `zero`, `invalid` are Go's others).
    let chosen = options.map(Node::items).unwrap_or(&[]).iter().any(|o| {
        o.as_str()
            .is_none_or(|s| s.trim_start().starts_with("missingkey=") || typing::is_template(s))
    });
    if chosen || options.is_some_and(|o| !o.is_seq() && !o.is_null()) {
        return;
    }
    // Without a single `{{` in the ApplicationSet, no key is ever looked up.
    if !has_template(spec) {
        return;
    }
    let f = out.report(
        go.value.span,
        "goTemplate without `missingkey=error`: a parameter a generator does not provide renders as the text \"<no value>\" instead of failing",
    );
    f.label("missing keys render as \"<no value>\"")
        .help(format!(
            "add `goTemplateOptions: [\"{OPTION}\"]` to the ApplicationSet spec, as Argo CD's documentation recommends; a parameter set without the key then stops the ApplicationSet with an error instead of generating an Application with \"<no value>\" in it"
        ));
    if let Some(o) = options.filter(|o| o.is_seq()) {
        f.also(o.span, "no missingkey option here");
    }
    let edit = match options {
        Some(o) if o.is_seq() => cx.editor().append_item(o, OPTION),
        Some(_) => None,
        None => cx
            .editor()
            .insert_entry(spec, "goTemplateOptions", NewValue::List(&[OPTION])),
    };
    f.fix(Fix::unsafe_(
        format!("add `{OPTION}` to goTemplateOptions"),
        edit,
    ));
}

fn has_template(node: &Node) -> bool {
    if let Some(s) = node.as_str() {
        return typing::is_template(s);
    }
    node.entries()
        .iter()
        .any(|e| e.key.as_str().is_some_and(typing::is_template) || has_template(&e.value))
        || node.items().iter().any(has_template)
}
