//! What Argo CD hands `helm template` for an Application's Helm source (argo-cd v3.5.1
//! `reposerver/repository/repository.go` `helmTemplate`, `util/helm/cmd.go` `template`):
//! the release name, the destination namespace, the value files in order, then `values` /
//! `valuesObject` as one more file, then `parameters` (`--set`, `--set-string` with
//! `forceString`), `skipCrds`, `skipTests`, `kubeVersion` and `apiVersions`.

use super::values::{read_yaml, to_value, Map};
use super::{Failure, FailureKind, Options};
use crate::yaml::typing;
use crate::yaml::Node;
use serde_json::Value;

/// The options for `source` of an Application named `app_name` deploying to `namespace`,
/// given the value files already read. `Err` says why the source cannot be rendered offline.
pub fn options(
    source: &Node,
    app_name: &str,
    namespace: &str,
    value_files: Vec<Map>,
) -> Result<Options, Failure> {
    let mut opts = Options {
        release_name: app_name.to_string(),
        namespace: if namespace.is_empty() {
            "default".to_string()
        } else {
            namespace.to_string()
        },
        values: value_files,
        include_crds: true,
        ..Options::default()
    };
    let Some(helm) = source.get("helm").filter(|h| h.is_map()) else {
        return Ok(opts);
    };
    let text = |key: &str| helm.str_at(key).filter(|s| !s.is_empty());
    let flag = |key: &str| {
        helm.get(key)
            .and_then(Node::as_scalar)
            .and_then(typing::as_bool)
            .unwrap_or(false)
    };
    if let Some(name) = text("releaseName") {
        opts.release_name = name.to_string();
    }
    if let Some(ns) = text("namespace") {
        opts.namespace = ns.to_string();
    }
    if let Some(v) = text("kubeVersion") {
        opts.kube_version = v.to_string();
    }
    opts.include_crds = !flag("skipCrds");
    opts.skip_tests = flag("skipTests");
    // repository.go passes `--skip-schema-validation` for it (argo-cd v3.5.1).
    opts.skip_schema_validation = flag("skipSchemaValidation");
    if let Some(list) = helm.get("apiVersions") {
        opts.api_versions = list
            .items()
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect();
    }
    // `valuesObject` wins over `values` (`ValuesYAML` in the Application types).
    let inline = match (helm.get("valuesObject"), helm.get("values")) {
        (Some(obj), _) if obj.is_map() => Some(to_value(obj)),
        (_, Some(v)) => match v.as_str() {
            Some(s) => Some(read_yaml(s).map_err(|e| {
                Failure::of_kind(FailureKind::Invalid, format!("`values` is not YAML: {e}"))
            })?),
            None if v.is_map() => Some(to_value(v)),
            None => None,
        },
        _ => None,
    };
    match inline {
        Some(Value::Object(m)) => opts.values.push(m),
        Some(Value::Null) | None => {}
        Some(_) => {
            return Err(Failure::of_kind(
                FailureKind::Invalid,
                "`values` is not a mapping",
            ))
        }
    }
    // Parameters become two maps, `--set` then `--set-string`, a later name replacing an
    // earlier one; commas are escaped unless the value is a `{...}` list
    // (`cleanSetParameters`).
    let mut set: Vec<(String, String, bool)> = Vec::new();
    for p in helm.get("parameters").map(Node::items).unwrap_or_default() {
        let (Some(name), Some(value)) = (p.str_at("name"), p.get("value")) else {
            continue;
        };
        let value = value
            .as_scalar()
            .map(|s| s.text.to_string())
            .unwrap_or_default();
        let string = p
            .get("forceString")
            .and_then(Node::as_scalar)
            .and_then(typing::as_bool)
            .unwrap_or(false);
        set.retain(|(n, _, s)| !(n == name && *s == string));
        set.push((name.to_string(), value, string));
    }
    for string in [false, true] {
        for (name, value, _) in set.iter().filter(|(_, _, s)| *s == string) {
            let value = if value.starts_with('{') && value.ends_with('}') {
                value.clone()
            } else {
                escape_commas(value)
            };
            opts.set.push((format!("{name}={value}"), string));
        }
    }
    if helm
        .get("fileParameters")
        .is_some_and(|f| !f.items().is_empty())
    {
        return Err(Failure::of_kind(
            FailureKind::Unsupported,
            "`fileParameters` are not read offline",
        ));
    }
    if [&opts.release_name, &opts.namespace, &opts.kube_version]
        .iter()
        .any(|s| typing::is_template(s))
    {
        // Left by an ApplicationSet whose parameters are not known offline.
        return Err(Failure::of_kind(
            FailureKind::Unknown,
            "the release name, namespace or Kubernetes version is templated",
        ));
    }
    Ok(opts)
}

/// `replaceAllWithLookbehind(val, ',', "\\,", '\\')`: commas not already escaped.
fn escape_commas(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut prev = '\0';
    for c in value.chars() {
        if c == ',' && prev != '\\' {
            out.push_str("\\,");
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}
