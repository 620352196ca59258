use super::schema_of;
use crate::fix::{Editor, Fix};
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::schema::{walk, Ty, Visitor};
use crate::yaml::typing::{self, Kind};
use crate::yaml::Node;

rule! {
    id: "ambiguous-boolean",
    category: Schema,
    severity: Warning,
    fix: Safe,
    summary: "A value the cluster (YAML 1.1) types differently from what it looks like: `yes`, `on`, `\"true\"`, `1.10`",
    check: Check::Object(check),
}

struct Ambiguous<'a> {
    out: &'a mut Sink,
    ed: Editor<'a>,
}

impl Visitor for Ambiguous<'_> {
    fn scalar(&mut self, node: &Node, ty: &Ty, pointer: &str) {
        let Some(s) = node.as_scalar() else { return };
        if typing::is_template(s.text) {
            return;
        }
        let field = pointer.rsplit('/').next().unwrap_or("");
        let (v11, v12) = (typing::yaml11(s), typing::yaml12(s));
        match ty {
            Ty::Bool => {
                if let Kind::Bool(b) = v11 {
                    if v11 != v12 {
                        self.out
                            .report(node.span, format!("`{}` is the boolean {b} to the cluster (YAML 1.1) but a string to YAML 1.2 tools", s.text))
                            .label(format!("read as {b}"))
                            .help(format!("write `{field}: {b}`"))
                            // What the cluster reads already: nothing changes but the spelling.
                            .fix(Fix::safe(format!("write `{b}`"), self.ed.replace_raw(node, &b.to_string())));
                    }
                } else if v11 == Kind::Str && typing::looks_boolean(s.text) {
                    self.out
                        .report(node.span, format!("`{field}` is a quoted string, not a boolean: the API server rejects it or the field is lost"))
                        .label("a string")
                        .help(format!("write `{field}: {}` without quotes", s.text.to_ascii_lowercase()))
                        .fix(meant(s.text).and_then(|b| {
                            Fix::unsafe_(format!("write `{b}` without quotes"), self.ed.replace_raw(node, &b.to_string()))
                        }));
                }
            }
            Ty::String => {
                let became = match v11 {
                    Kind::Bool(b) => format!("the boolean {b}"),
                    Kind::Float | Kind::Int => "a number".to_string(),
                    _ => return,
                };
                let shown = if matches!(v11, Kind::Float) {
                    s.text
                        .parse::<f64>()
                        .map(|f| format!(" ({f})"))
                        .unwrap_or_default()
                } else {
                    String::new()
                };
                self.out
                    .report(
                        node.span,
                        format!(
                            "`{}` is {became}{shown} to the cluster, not the string `{}`",
                            s.text, s.text
                        ),
                    )
                    .label("not a string")
                    .help(format!("quote it: `{field}: \"{}\"`", s.text))
                    // The value the cluster receives changes, from what it parsed to what is written.
                    .fix(serde_json::to_string(s.text).ok().and_then(|quoted| {
                        Fix::unsafe_(
                            format!("quote it: `{quoted}`"),
                            self.ed.replace_raw(node, &quoted),
                        )
                    }));
            }
            _ => {}
        }
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
        &mut Ambiguous {
            out,
            ed: cx.editor(),
        },
    );
}

/// The boolean a quoted boolean-looking string means.
fn meant(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "y" | "on" => Some(true),
        "false" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}
