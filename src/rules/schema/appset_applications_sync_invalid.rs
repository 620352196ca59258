use crate::fix::Fix;
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "appset-applications-sync-invalid",
    category: Schema,
    severity: Error,
    fix: Safe,
    summary: "An ApplicationSet applicationsSync policy outside create-only, create-update, create-delete and sync: the API server rejects it",
    check: Check::Object(check),
}

/// The values of the CRD's enum (`applicationset_types.go`, `ApplicationsSyncPolicy`).
pub const POLICIES: [&str; 4] = ["create-only", "create-update", "create-delete", "sync"];

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("ApplicationSet") {
        return;
    }
    let Some(node) = obj.root.path(&["spec", "syncPolicy", "applicationsSync"]) else {
        return;
    };
    if node.is_null() {
        return;
    }
    let Some(scalar) = node.as_scalar() else {
        out.report(
            node.span,
            "applicationsSync must be one of create-only, create-update, create-delete or sync: the API server rejects the ApplicationSet",
        )
        .label("not a string")
        .help("write one of `create-only`, `create-update`, `create-delete`, `sync`");
        return;
    };
    let text = scalar.text;
    if POLICIES.contains(&text) || typing::is_template(text) {
        return;
    }
    let suggestion = meant(text);
    let f = out.report(
        node.span,
        format!("`{text}` is not an applicationsSync policy: the CRD allows only create-only, create-update, create-delete and sync, so the API server rejects the ApplicationSet"),
    );
    f.label("not an allowed value");
    match suggestion {
        Some(s) => {
            f.help(format!("write `{s}`"));
            f.fix(Fix::safe(
                format!("write `{s}`"),
                cx.editor().replace_scalar(node, s),
            ));
        }
        None => {
            f.help("write one of `create-only` (never update or delete), `create-update` (never delete), `create-delete` (never update) or `sync` (the default: create, update and delete); or remove the key");
        }
    }
}

/// The one policy the text spells another way: other case, `_`, spaces or no separator.
fn meant(text: &str) -> Option<&'static str> {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let t = norm(text);
    if t.is_empty() {
        return None;
    }
    let mut found = POLICIES.iter().filter(|p| norm(p) == t);
    let one = found.next()?;
    found.next().is_none().then_some(*one)
}

#[cfg(test)]
mod tests {
    use super::meant;

    #[test]
    fn spellings() {
        assert_eq!(meant("create_only"), Some("create-only"));
        assert_eq!(meant("CreateUpdate"), Some("create-update"));
        assert_eq!(meant("Sync"), Some("sync"));
        assert_eq!(meant("create-delete "), Some("create-delete"));
        assert_eq!(meant("update-only"), None);
        assert_eq!(meant(""), None);
    }
}
