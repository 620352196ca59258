use super::schema_of;
use crate::model::Object;
use crate::rules::sync_policy::automated_misuse::FLAGS;
use crate::rules::{did_you_mean, rule, Cx, Sink};
use crate::schema::{walk, Def, Visitor};
use crate::yaml::{typing, Entry};

rule! {
    id: "unknown-field",
    category: Schema,
    severity: Error,
    summary: "A key the Argo CD CRD does not define: the API server drops it silently",
    check: Check::Object(check),
}

struct Unknown<'a, 'b> {
    out: &'a mut Sink,
    kind: &'b str,
}

/// Paths that automated-misuse explains better.
fn left_to_automated_misuse(pointer: &str) -> bool {
    let parent = pointer.rsplit_once('/').map_or("", |(p, _)| p);
    let key = pointer.rsplit('/').next().unwrap_or("");
    parent.ends_with("/syncPolicy/automated")
        || (parent.ends_with("/syncPolicy") && FLAGS.contains(&key))
}

impl Visitor for Unknown<'_, '_> {
    fn unknown_key(&mut self, entry: &Entry, def: &Def, pointer: &str) {
        let Some(key) = entry.key.as_str() else {
            return;
        };
        if typing::is_template(key) || left_to_automated_misuse(pointer) {
            return;
        }
        let f = self.out.report(
            entry.key.span,
            format!(
                "`{key}` is not a field of {} here: the API server drops it without an error",
                self.kind
            ),
        );
        f.label("unknown field");
        match did_you_mean(key, def.fields.iter().map(|(k, _)| k.as_str())) {
            Some(s) => f.help(format!("did you mean `{s}`?")),
            None => f.help(format!(
                "known fields here: {}",
                def.fields
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some((schemas, root)) = schema_of(obj) else {
        return;
    };
    walk(
        schemas,
        &obj.root,
        root,
        &mut Unknown {
            out,
            kind: &obj.kind,
        },
    );
}
