use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node};

rule! {
    id: "secret-in-git",
    category: Secrets,
    severity: Error,
    summary: "A Kubernetes Secret with real values committed to Git",
    check: Check::Object(check),
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
    if matches!(obj.kind.as_str(), "Kustomization" | "Component") {
        generators(obj, out);
        return;
    }
    // A generated Secret is reported at its generator's items, not again here.
    if obj.generated || !obj.is("", "Secret") || obj.root.get("sops").is_some_and(|s| s.is_map()) {
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

/// `secretGenerator` entries whose values are committed next to the kustomization.
fn generators(obj: &Object, out: &mut Sink) {
    for g in obj
        .root
        .get("secretGenerator")
        .map(Node::items)
        .unwrap_or(&[])
    {
        let name = g.str_at("name").unwrap_or("(unnamed)");
        let env = g.get("env").filter(|e| e.as_str().is_some());
        let lists =
            ["literals", "files", "envs"].map(|k| (k, g.get(k).map(Node::items).unwrap_or(&[])));
        let items = lists
            .iter()
            .flat_map(|(k, items)| items.iter().map(move |i| (*k, i)))
            .chain(env.map(|e| ("envs", e)));
        for (source, item) in items {
            let Some(text) = item.as_str() else { continue };
            let what = match source {
                "literals" => format!("the literal `{}`", text.split('=').next().unwrap_or(text)),
                _ => format!("the file `{text}`"),
            };
            out.report(item.span, format!("secretGenerator `{name}` builds a Secret from {what}, committed to Git: anyone who can read the repository can read it"))
                .label("secret value in Git (not shown)")
                .help("generate the Secret in the cluster from a secret manager with an ExternalSecret, or encrypt the source with SOPS (ksops)");
        }
    }
}
