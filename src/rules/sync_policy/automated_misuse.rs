use crate::fix::{Applicability, Fix, NewValue};
use crate::model::Object;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::text::{did_you_mean, only_match};
use crate::yaml::typing::{self, Kind};
use crate::yaml::Node;

rule! {
    id: "automated-misuse",
    category: SyncPolicy,
    severity: Error,
    fix: Safe,
    summary: "syncPolicy.automated written in a shape Argo CD does not read (scalar, unknown key, misplaced flag)",
    check: Check::Object(check),
}

pub const FLAGS: [&str; 4] = ["prune", "selfHeal", "allowEmpty", "enabled"];

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    let Some(policy) = app.sync_policy() else {
        return;
    };
    if let Some(automated) = policy.get("automated") {
        if !automated.is_null()
            && !automated.is_map()
            && !automated.as_str().is_some_and(typing::is_template)
        {
            out.report(automated.span, "`automated` must be a mapping such as `{prune: true, selfHeal: true}`; a scalar or list is rejected by the API server")
                .label("not a mapping")
                .help("write `automated:` with `prune: true` and `selfHeal: true` under it");
        }
        for e in automated.entries() {
            let Some(key) = e.key.as_str() else { continue };
            if FLAGS.contains(&key) {
                check_value(out, &e.value, key);
                continue;
            }
            if typing::is_template(key) {
                continue;
            }
            let f = out.report(
                e.key.span,
                format!(
                    "`automated.{key}` is not an Argo CD field: the API server drops it silently"
                ),
            );
            f.label("unknown key");
            match did_you_mean(key, FLAGS) {
                Some(s) => f.help(format!("did you mean `{s}`?")),
                None => {
                    f.help("the keys under automated are prune, selfHeal, allowEmpty and enabled")
                }
            };
            if let Some(s) = only_match(key, FLAGS) {
                // `enabled: false` turns auto-sync off, and only on some versions: that
                // respelling changes what Argo CD does, the others make a flag mean what it says.
                let applicability = if s == "enabled" {
                    Applicability::Unsafe
                } else {
                    Applicability::Safe
                };
                f.fix(Fix::new(
                    applicability,
                    format!("rename `{key}` to `{s}`"),
                    [cx.editor().rename_key(automated, &e.key, s)],
                ));
            }
        }
    }
    for (index, e) in policy.entries().iter().enumerate() {
        let Some(key) = e.key.as_str() else { continue };
        if FLAGS.contains(&key) {
            out.report(e.key.span, format!("`{key}` belongs under `syncPolicy.automated`; directly under syncPolicy it is dropped"))
                .label("misplaced")
                .help(format!("move `{key}` into `automated:`"))
                .fix(move_into_automated(cx, policy, index, key));
        }
    }
}

/// Moves a flag written beside `automated` into it. Only into an existing `automated`
/// mapping that lacks the flag: creating `automated` would turn auto-sync on.
fn move_into_automated(cx: &Cx, policy: &Node, index: usize, key: &str) -> Option<Fix> {
    let automated = policy.get("automated").filter(|a| a.is_map())?;
    if automated.get(key).is_some() {
        return None;
    }
    let value = &policy.entries()[index].value;
    value.as_scalar()?;
    let text = &cx.sources.get(value.span.file).text;
    let raw = text
        .get(value.span.range())
        .filter(|r| !r.is_empty() && !r.contains('\n'))?;
    // A comment after the flag moves with it; a flow mapping has no room for one.
    let rest = text[value.span.end as usize..].lines().next().unwrap_or("");
    let comment = rest.trim_end_matches('\r');
    let moved = if comment.trim().starts_with('#') {
        if automated_is_flow(automated) {
            return None;
        }
        format!("{raw}{comment}")
    } else {
        raw.to_string()
    };
    let ed = cx.editor();
    Fix::new(
        Applicability::Unsafe,
        format!("move `{key}` into `automated`"),
        [
            ed.remove_entry(policy, index),
            ed.insert_entry(automated, key, NewValue::Raw(&moved)),
        ],
    )
}

fn automated_is_flow(node: &Node) -> bool {
    node.is_map() && node.is_flow()
}

fn check_value(out: &mut Sink, value: &Node, key: &str) {
    let ok = match value.as_scalar() {
        // Boolean-looking strings are left to ambiguous-boolean, which explains them.
        Some(s) => match typing::yaml11(s) {
            Kind::Bool(_) | Kind::Null => true,
            Kind::Str => typing::is_template(s.text) || typing::looks_boolean(s.text),
            Kind::Int | Kind::Float => false,
        },
        None => false,
    };
    if !ok {
        out.report(
            value.span,
            format!("`automated.{key}` must be true or false"),
        )
        .label("not a boolean")
        .help(format!("write `{key}: true` or `{key}: false`"));
    }
}
