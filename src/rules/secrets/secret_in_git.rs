use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "secret-in-git",
    category: Secrets,
    severity: Error,
    summary: "A Kubernetes Secret with real values committed to Git",
    check: Some(check),
}

/// A value another tool fills in: a template, an env substitution, or an argocd-vault-plugin
/// placeholder.
fn is_placeholder(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || typing::is_template(v)
        || (v.starts_with("${") && v.ends_with('}'))
        || (v.starts_with('<') && v.ends_with('>'))
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is("", "Secret") || obj.root.get("sops").is_some_and(|s| s.is_map()) {
        return;
    }
    for key in ["data", "stringData"] {
        let Some(entry) = obj.root.entry(key) else {
            continue;
        };
        let real = entry
            .value
            .entries()
            .iter()
            .filter(|e| !e.value.as_str().is_some_and(is_placeholder))
            .count();
        if real == 0 {
            continue;
        }
        let credential = obj
            .root
            .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
            .and_then(|n| n.as_str());
        let what = match credential {
            Some(t) => format!("an Argo CD {t} credential"),
            None => "a Secret".to_string(),
        };
        out.report(entry.key.span, format!("{} commits {what} with {real} value(s) to Git in `{key}`: anyone who can read the repository can read them", obj.display()))
            .label("secret values in Git (not shown)")
            .help("keep the value in a secret manager and sync it with an ExternalSecret (external-secrets.io/v1), or encrypt the file with SOPS / Sealed Secrets");
    }
}
