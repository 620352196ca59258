//! The Go values with methods that Helm hands templates: `.Files` (helm v3.17.2
//! `pkg/engine/files.go`) and `.Capabilities.APIVersions` (`pkg/chartutil/capabilities.go`).
//! In the template data they are objects holding [`HOST_KEY`]: `files:N` for chart N's files
//! (with `names` when a `Glob` narrowed them), `apis` for the API versions.

use super::chart::Chart;
use super::Options;
use crate::render::template::{Host, HOST_KEY};
use base64::Engine as _;
use serde_json::{Map, Value};

/// The group/versions `helm template` reports by default: those client-go v0.32 registers, as
/// helm v3.17.2 prints them.
const API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1alpha1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

pub struct Files<'c> {
    charts: Vec<&'c [(String, Vec<u8>)]>,
    apis: Vec<String>,
}

impl<'c> Files<'c> {
    pub fn new(charts: &[(&'c Chart, String, Vec<String>)], opts: &Options) -> Files<'c> {
        let mut apis: Vec<String> = API_VERSIONS.iter().map(|s| s.to_string()).collect();
        apis.extend(opts.api_versions.iter().cloned());
        Files {
            charts: charts.iter().map(|(c, _, _)| c.files.as_slice()).collect(),
            apis,
        }
    }

    /// The files a receiver stands for: its chart's, or the names a `Glob` kept.
    fn of(&self, receiver: &Map<String, Value>) -> Option<Vec<&'c (String, Vec<u8>)>> {
        let tag = receiver.get(HOST_KEY)?.as_str()?;
        let index: usize = tag.strip_prefix("files:")?.parse().ok()?;
        let all = self.charts.get(index)?;
        Some(match receiver.get("names") {
            Some(Value::Array(names)) => all
                .iter()
                .filter(|(n, _)| names.iter().any(|x| x.as_str() == Some(n)))
                .collect(),
            _ => all.iter().collect(),
        })
    }
}

fn arg<'a>(args: &'a [Value], method: &str) -> Result<&'a str, String> {
    match args {
        [Value::String(s)] => Ok(s),
        [other] => Err(format!(
            "wrong type for value; expected string; got {}",
            kind(other)
        )),
        _ => Err(format!(
            "wrong number of args for {method}: want 1 got {}",
            args.len()
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn no_args(args: &[Value], method: &str) -> Result<(), String> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args for {method}: want 0 got {}",
            args.len()
        ))
    }
}

impl Host for Files<'_> {
    fn plain(&self, receiver: &Map<String, Value>) -> Option<Value> {
        if receiver.get(HOST_KEY).and_then(Value::as_str) == Some("apis") {
            return Some(Value::Array(
                self.apis.iter().map(|a| Value::String(a.clone())).collect(),
            ));
        }
        // Files is a map[string][]byte; its bytes stand as text, which is what every
        // function a chart passes them to (`toString`, `b64enc`, `trim`) reads.
        let files = self.of(receiver)?;
        Some(Value::Object(
            files
                .iter()
                .map(|(n, d)| {
                    (
                        n.clone(),
                        Value::String(crate::render::template::go_string(d)),
                    )
                })
                .collect(),
        ))
    }

    fn call(
        &self,
        receiver: &Map<String, Value>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, String> {
        if receiver.get(HOST_KEY).and_then(Value::as_str) == Some("apis") {
            return match method {
                "Has" => {
                    let want = arg(args, method)?;
                    Ok(Value::Bool(self.apis.iter().any(|a| a == want)))
                }
                _ => Err(format!(
                    "can't evaluate field {method} in type chartutil.VersionSet"
                )),
            };
        }
        let Some(files) = self.of(receiver) else {
            return Err(format!("can't evaluate field {method}"));
        };
        let text = crate::render::template::go_string;
        match method {
            "Get" | "GetBytes" => {
                let name = arg(args, method)?;
                Ok(Value::String(
                    files
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, d)| text(d))
                        .unwrap_or_default(),
                ))
            }
            "Glob" => {
                let pattern = arg(args, method)?;
                let names: Vec<Value> = files
                    .iter()
                    .filter(|(n, _)| crate::glob::gobwas(pattern, n, Some('/')))
                    .map(|(n, _)| Value::String(n.clone()))
                    .collect();
                let mut out = receiver.clone();
                out.insert("names".into(), Value::Array(names));
                Ok(Value::Object(out))
            }
            "Lines" => {
                let name = arg(args, method)?;
                let Some((_, d)) = files.iter().find(|(n, _)| n == name) else {
                    return Ok(Value::Array(Vec::new()));
                };
                let s = text(d);
                let s = s.strip_suffix('\n').unwrap_or(&s);
                Ok(Value::Array(
                    s.split('\n')
                        .map(|l| Value::String(l.to_string()))
                        .collect(),
                ))
            }
            "AsConfig" | "AsSecrets" => {
                no_args(args, method)?;
                let mut m = Map::new();
                for (n, d) in &files {
                    let base = n.rsplit('/').next().unwrap_or(n).to_string();
                    let v = if method == "AsConfig" {
                        text(d)
                    } else {
                        base64::engine::general_purpose::STANDARD.encode(d)
                    };
                    m.insert(base, Value::String(v));
                }
                crate::render::template::helm_to_yaml(&Value::Object(m)).map(Value::String)
            }
            _ => Err(format!(
                "can't evaluate field {method} in type engine.files"
            )),
        }
    }
}
