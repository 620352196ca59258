use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::{typing, Node, ParseLimits};
use std::path::Path;

rule! {
    id: "secret-in-git",
    category: Secrets,
    severity: Error,
    fix: None,
    summary: "A Kubernetes Secret with real values committed to Git",
    check: Check::Object(check),
}

/// A value that holds no credential yet: a template or substitution another tool fills in, an
/// argocd-vault-plugin reference, a SOPS ciphertext, or the filler people write in examples
/// (`changeme`, `your-password-here`, `xxx`, `...`).
fn is_placeholder(v: &str) -> bool {
    let v = v.trim();
    // `change me` reads as `changeme`.
    let lower = v.to_ascii_lowercase().replace(' ', "");
    let wrapped = |open: &str, close: char| v.starts_with(open) && v.ends_with(close);
    v.is_empty()
        || matches!(lower.as_str(), "null" | "~" | "none" | "todo" | "tbd" | "redacted")
        // A field's own name as its value (`password: pass`, `username: password`): filler.
        || matches!(
            lower.as_str(),
            "pass" | "password" | "passwd" | "secret" | "user" | "username" | "token" | "example"
        )
        // `base64 of $user:<token>`: an instruction around a `<placeholder>`.
        || angle_placeholder(v)
        || typing::is_template(v)
        || wrapped("${", '}')
        || wrapped("$(", ')')
        || wrapped("<", '>')
        || wrapped("ENC[", ']')
        || ["changeme", "change-me", "change_me", "replaceme", "replace-me", "replace_me"]
            .iter()
            .any(|w| lower.contains(w))
        || (lower.starts_with("your") && lower.ends_with("here"))
        // `UPDATE_AWS_ACCESS_KEY_ID`, `your-api-token`, `insert_token`: an instruction.
        || ["update_", "replace_", "replace-", "insert_", "insert-", "your_", "your-"]
            .iter()
            .any(|w| lower.starts_with(w))
        // `xxx`, `XXXX-XXXX`, `***`, `...`: masked or elided in an example.
        || (v.chars().all(|c| matches!(c, 'x' | 'X' | '*' | '.' | '-' | '_'))
            && v.chars().any(|c| matches!(c, 'x' | 'X' | '*' | '.')))
}

/// Whether `v` holds a `<name>` placeholder: `<`, then letters, digits, `-`, `_` or spaces,
/// then `>`.
fn angle_placeholder(v: &str) -> bool {
    v.match_indices('<').any(|(i, _)| {
        let rest = &v[i + 1..];
        rest.find('>').is_some_and(|end| {
            end > 0
                && rest[..end]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ' '))
        })
    })
}

/// A URL of a storage scheme (`pvc://`, `s3://`, `gs://`) without a password: where data is,
/// not a credential. An `http(s)` URL may be its own credential (a webhook) and still counts.
fn storage_url(v: &str) -> bool {
    let v = v.trim();
    v.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
            && !scheme.eq_ignore_ascii_case("http")
            && !scheme.eq_ignore_ascii_case("https")
            && !v.contains(char::is_whitespace)
            && !url_with_password(v)
    })
}

/// An absolute path of two parts or more and nothing else (`/var/run/secrets/.../token`):
/// where a credential is mounted, which the program reads at run time.
fn is_file_path(v: &str) -> bool {
    let v = v.trim();
    v.len() > 1
        && v.starts_with('/')
        && v[1..].contains('/')
        && !v.contains(char::is_whitespace)
        && !v.contains("//")
}

/// Only public certificates or an SSH public key: what is handed to every peer anyway.
fn only_certificates(v: &str) -> bool {
    let v = v.trim();
    let ssh_public = ["ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-", "ssh-dss "]
        .iter()
        .any(|p| v.starts_with(p))
        && !v.contains('\n');
    if ssh_public {
        return true;
    }
    v.starts_with("-----BEGIN CERTIFICATE-----")
        && v.ends_with("-----END CERTIFICATE-----")
        && !v.contains("PRIVATE KEY")
}

/// A key that, in a structured value, names a credential: not one that names where it is
/// (`password_file`, `token_url`) or whose it is (`auth_username`).
fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_', '.'], "");
    let about = [
        "file", "path", "ref", "name", "user", "url", "type", "endpoint", "mode",
    ];
    if about.iter().any(|w| k.ends_with(w)) {
        return false;
    }
    secret_key_word(&k)
}

/// A folded key (lowercase, no `-`, `_`, `.`) holding a word that names a credential.
fn secret_key_word(k: &str) -> bool {
    [
        "password",
        "passwd",
        "secret",
        "token",
        "credential",
        "auth",
        "apikey",
        "privatekey",
        "keydata",
        "accesskey",
        "clientkey",
        "sshkey",
    ]
    .iter()
    .any(|w| k.contains(w))
        || k == "key"
}

/// What a structured value (a YAML or JSON document in one Secret key) holds.
#[derive(PartialEq)]
enum Blob {
    /// Not a mapping or a list: a plain value.
    Plain,
    /// Credential fields, every one of them empty, a reference or a placeholder.
    OnlyPlaceholders,
    /// No field that names a credential.
    NoSecretFields,
    /// At least one credential field with a value.
    Credential,
}

fn blob(key: &str, text: &str) -> Blob {
    let t = text.trim_start();
    // A key named like a configuration file holds one even on a single line, as a patch
    // often writes it (`value: storeConfiguration=DATABASE`).
    let file = [".properties", ".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| key.ends_with(ext));
    if !(file || text.contains('\n') || t.starts_with('{') || t.starts_with('[')) {
        return Blob::Plain;
    }
    // A private key or a URL with a password is a credential whatever field holds it.
    if text.contains("PRIVATE KEY")
        || text
            .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ','))
            .any(url_with_password)
    {
        return Blob::Credential;
    }
    let (mut secret, mut real) = (0usize, 0usize);
    let mut structured = false;
    let parsed = crate::yaml::parse(0, text, ParseLimits::default());
    if parsed.problems.is_empty() {
        for doc in &parsed.documents {
            if doc.root.is_map() || doc.root.is_seq() {
                structured = true;
            }
            walk(&doc.root, false, &mut secret, &mut real);
        }
    }
    if !structured {
        if let Some(found) = jaas(text) {
            return found;
        }
        // An HTML page (a login page template) holds none; an XML document (a settings file)
        // holds one only in an element or attribute that names one.
        if t.starts_with('<') {
            let head = t[..t.len().min(64)].to_ascii_lowercase();
            if head.starts_with("<!doctype html") || head.starts_with("<html") {
                // A page: its `password` is a form field, not a value.
                return Blob::NoSecretFields;
            }
            let words = text
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '-')
                .filter(|w| !w.is_empty());
            return if words.into_iter().any(secret_key) {
                Blob::Credential
            } else {
                Blob::NoSecretFields
            };
        }
        // `users.properties` (Artemis, Karaf, WildFly's `application-users.properties`):
        // each line is `user=password`, so every value is one.
        let stem = key.rsplit_once('.').map_or(key, |(stem, _)| stem);
        let users_file = stem.to_ascii_lowercase().ends_with("users");
        // A Java properties file: every line a comment or `key=value`.
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
            // `[section]` of an INI file (AWS and rclone credentials files).
            .filter(|l| !(l.starts_with('[') && l.ends_with(']')))
            .collect();
        let pairs: Vec<(&str, &str)> = lines.iter().filter_map(|l| l.split_once('=')).collect();
        if lines.is_empty() {
            // Only comments: a file left for an overlay to fill in.
            return Blob::NoSecretFields;
        }
        if pairs.len() != lines.len() {
            return Blob::Plain;
        }
        structured = true;
        for (k, v) in pairs {
            // `logger.authentication_filter.level` is a level: the last part names the field.
            let field = k.trim().rsplit('.').next().unwrap_or("");
            if users_file || secret_key(field) {
                secret += 1;
                real += usize::from(!is_placeholder(v));
            }
        }
    }
    match (structured, secret, real) {
        (false, _, _) => Blob::Plain,
        (true, _, r) if r > 0 => Blob::Credential,
        (true, 0, _) => Blob::NoSecretFields,
        _ => Blob::OnlyPlaceholders,
    }
}

/// A JAAS login configuration (`name { module flag option=value ...; };`): a credential only
/// in an option that names one (`connectionPassword`), not in the module names, flags and the
/// options that point at user and role files.
fn jaas(text: &str) -> Option<Blob> {
    if !text.contains("LoginModule") || !text.contains('{') || !text.contains(';') {
        return None;
    }
    let (mut secret, mut real) = (0usize, 0usize);
    for token in text.split(|c: char| c.is_whitespace() || c == ';') {
        let Some((k, v)) = token.split_once('=') else {
            continue;
        };
        let field = k.rsplit('.').next().unwrap_or("");
        let v = v.trim_matches('"');
        // `credentialsInvalidate=true` is a switch, not a credential.
        if secret_key(field) && !matches!(v, "true" | "false") {
            secret += 1;
            real += usize::from(!is_placeholder(v));
        }
    }
    Some(match (secret, real) {
        (_, r) if r > 0 => Blob::Credential,
        (0, _) => Blob::NoSecretFields,
        _ => Blob::OnlyPlaceholders,
    })
}

/// Counts the scalars held by credential keys (directly, or in a list), and those among
/// them with a value. A mapping under such a key (`authorization: {type: Bearer, ...}`) is
/// judged by its own keys.
fn walk(node: &Node, secret_named: bool, secret: &mut usize, real: &mut usize) {
    if let Some(text) = node.as_str() {
        if secret_named {
            *secret += 1;
            if !node.is_null() && !is_placeholder(text) {
                *real += 1;
            }
        }
        return;
    }
    for item in node.items() {
        walk(item, secret_named && !item.is_map(), secret, real);
    }
    for e in node.entries() {
        let named = e.key.as_str().is_some_and(secret_key);
        walk(&e.value, named, secret, real);
    }
}

/// The keys of Argo CD's repository and cluster Secrets that hold no credential besides
/// [`crate::model::ARGOCD_TARGET_KEYS`]: how to use the credentials (argo-cd v3.5.1
/// `util/db/repository_secrets.go`, `util/db/cluster.go`). `url` and `proxy` still count when
/// they carry a password in their user part.
const ARGOCD_NON_CREDENTIAL_KEYS: &[&str] = &[
    "username",
    "enableOCI",
    "enableLfs",
    "insecure",
    "insecureIgnoreHostKey",
    "insecureOCIForceHttp",
    "forceHttpBasicAuth",
    "useAzureWorkloadIdentity",
    "depth",
    "webhookManifestCacheWarmDisabled",
    "githubAppID",
    "githubAppInstallationID",
    "githubAppEnterpriseBaseUrl",
    "tlsClientCertData",
    "proxy",
    "noProxy",
    "azureServicePrincipalClientId",
    "azureServicePrincipalClientID",
    "azureServicePrincipalTenantId",
    "azureServicePrincipalTenantID",
    "azureActiveDirectoryEndpoint",
];

/// `scheme://user:password@host`: a URL that carries a password.
fn url_with_password(v: &str) -> bool {
    v.split_once("://").is_some_and(|(_, rest)| {
        let authority = rest.split('/').next().unwrap_or("");
        authority
            .rsplit_once('@')
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .is_some_and(|(_, password)| !is_placeholder(password))
    })
}

/// Whether one `data` / `stringData` entry holds a credential. `value` is the text as the
/// cluster stores it (`data` decoded).
fn holds_credential(key: &str, value: &str, argocd: bool) -> bool {
    if is_placeholder(value)
        || only_certificates(value)
        || is_file_path(value)
        || storage_url(value)
    {
        return false;
    }
    // `Y2hhbmdlbWU=`: a placeholder written base64-encoded where a plain value was expected.
    if crate::redact::decode_data(value).is_some_and(|d| is_placeholder(&d)) {
        return false;
    }
    if argocd {
        if crate::model::ARGOCD_TARGET_KEYS.contains(&key)
            || ARGOCD_NON_CREDENTIAL_KEYS.contains(&key)
        {
            return matches!(key, "url" | "proxy") && url_with_password(value);
        }
        if key == "config" {
            // A cluster's `config` is JSON; without a token, password or client key it
            // connects with a workload identity, an exec plugin or AWS IAM.
            return !matches!(
                blob(key, value),
                Blob::OnlyPlaceholders | Blob::NoSecretFields
            );
        }
        return true;
    }
    // Where the credential is, whose, and what it opens: a keystore path, a database host or
    // user name, a bucket, its region and endpoint, a version. Such a field is a credential
    // only when it is a URL that carries a password; other URLs still count below, as a webhook
    // URL is often its own credential.
    let k = key.to_ascii_lowercase().replace(['-', '_', '.'], "");
    let about = [
        "path",
        "file",
        "host",
        "port",
        "user",
        "database",
        "name",
        "namespace",
        "region",
        "endpoint",
        "bucket",
        "version",
        "email",
    ];
    if about.iter().any(|w| k.ends_with(w)) && !secret_key_word(&k) {
        return url_with_password(value);
    }
    // A configuration document (YAML, JSON, properties) whose credential fields are all left
    // empty or point elsewhere, or that has none (broker settings, logging levels), holds no
    // credential. Other free text (an htpasswd file) still counts.
    !matches!(
        blob(key, value),
        Blob::OnlyPlaceholders | Blob::NoSecretFields
    )
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if matches!(obj.kind.as_str(), "Kustomization" | "Component") {
        generators(cx, obj, out);
        return;
    }
    // A generated Secret is reported at its generator's items, not again here.
    if obj.generated || !obj.is("", "Secret") || obj.root.get("sops").is_some_and(|s| s.is_map()) {
        return;
    }
    let credential = obj
        .root
        .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
        .and_then(|n| n.as_str());
    for key in ["data", "stringData"] {
        let Some(entry) = obj.root.entry(key) else {
            continue;
        };
        let real: Vec<&crate::yaml::Entry> = entry
            .value
            .entries()
            .iter()
            .filter(|e| {
                let Some(written) = e.value.as_str().filter(|_| !e.value.is_null()) else {
                    // A null holds nothing; a mapping or list is not a valid value and is
                    // left to the schema.
                    return false;
                };
                let decoded = match key {
                    // Not base64 is not a value the API server accepts; read it as written.
                    "data" => {
                        crate::redact::decode_data(written).unwrap_or_else(|| written.to_string())
                    }
                    _ => written.to_string(),
                };
                let name = e.key.as_str().unwrap_or("");
                holds_credential(name, &decoded, credential.is_some())
                    // A placeholder written as is in `data` is not base64 and would be
                    // refused by the API server, but it is no leaked secret either.
                    && !is_placeholder(written)
            })
            .collect();
        let Some(first) = real.first() else { continue };
        let what = match credential {
            Some(t) => format!("an Argo CD {t} credential"),
            None => "a Secret".to_string(),
        };
        let keys = |es: &[&crate::yaml::Entry]| {
            es.iter()
                .map(|e| format!("`{}`", e.key.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (values, them) = match real.len() {
            1 => (format!("a value ({}) in `{key}`", keys(&real)), "it"),
            n => (format!("{n} values ({}) in `{key}`", keys(&real)), "them"),
        };
        // A value set elsewhere (an overlay patch, a replacement's source, a Helm values line)
        // is pointed at where it is written: one secret copied into many objects is one line.
        let at = |e: &crate::yaml::Entry| {
            if e.value.span.file == e.key.span.file {
                e.key.span
            } else {
                e.value.span
            }
        };
        let f = out.report(at(first), format!("{} commits {what} to Git with {values}: anyone who can read the repository can read {them}", obj.display()));
        f.label("secret value in Git (not shown)");
        for e in &real[1..] {
            f.also(at(e), "another secret value in Git");
        }
        f.help("keep the value in a secret manager and sync it with an ExternalSecret (external-secrets.io/v1), or encrypt the file with SOPS / Sealed Secrets");
    }
}

/// `secretGenerator` entries whose values are committed next to the kustomization.
fn generators(cx: &Cx, obj: &Object, out: &mut Sink) {
    let dir = cx
        .sources
        .get(obj.file)
        .path
        .parent()
        .map(Path::to_path_buf);
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
            // `KEY=`, `KEY=changeme`, `DB_USER=payments`: judged as the same key and value
            // would be in a Secret's `stringData`.
            if source == "literals"
                && text.split_once('=').is_some_and(|(key, value)| {
                    !holds_credential(key.trim(), value.trim_matches(['"', '\'']), false)
                })
            {
                continue;
            }
            // A file that is not in the repository is not committed: it is written by CI or
            // kept out by .gitignore (kustomize reports it missing when it renders).
            if source != "literals" {
                let file = text.split_once('=').map_or(text, |(_, f)| f).trim();
                if dir.as_ref().is_some_and(|d| !d.join(file).exists()) {
                    continue;
                }
                // Page templates, styles and images (an OAuth login page kept in a Secret
                // because the API wants one there) are not credentials.
                let ext = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
                if ext.is_some_and(|e| {
                    matches!(
                        e.as_str(),
                        "html" | "htm" | "css" | "svg" | "png" | "jpg" | "jpeg" | "gif" | "ico"
                    )
                }) {
                    continue;
                }
            }
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
