use super::schema_of;
use crate::fix::Fix;
use crate::model::Object;
use crate::rules::sync_policy::automated_misuse::FLAGS;
use crate::rules::{rule, Cx, Sink};
use crate::schema::{walk, Def, Visitor};
use crate::text::{did_you_mean, only_match};
use crate::yaml::{typing, Entry, Node};

rule! {
    id: "unknown-field",
    category: Schema,
    severity: Error,
    fix: Unsafe,
    summary: "A key the Argo CD CRD does not define: the API server drops it silently",
    check: Check::Object(check),
}

struct Unknown<'a, 'b> {
    out: &'a mut Sink,
    kind: &'b str,
    root: &'b Node,
    cx: &'b Cx<'b>,
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
        let known = || def.fields.iter().map(|(k, _)| k.as_str());
        if let (Some(s), Some(map)) = (
            only_match(key, known()),
            self.root.map_holding(entry.key.span),
        ) {
            f.fix(Fix::unsafe_(
                format!("rename `{key}` to `{s}`"),
                self.cx.editor().rename_key(map, &entry.key, s),
            ));
        }
        match did_you_mean(key, known()) {
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

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
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
            root: &obj.root,
            cx,
        },
    );
}
