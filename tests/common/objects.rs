//! Rendered objects compared as another renderer (kubectl kustomize, helm template) prints
//! them: as multisets of JSON values, with a readable report of where they differ.

use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Longest single value printed in a path diff before it is cut.
const VALUE_WIDTH: usize = 160;

/// A tool's multi-document YAML output, read with the project's own parser.
pub fn parse_stream(text: &str) -> Result<Vec<Value>, String> {
    use gitops_lint::yaml;
    let parsed = yaml::parse(0, text, yaml::ParseLimits::default());
    // A duplicate key is no error for Go's YAML readers: the last value stands, as here.
    let broken: Vec<_> = parsed
        .problems
        .iter()
        .filter(|p| p.kind == yaml::ProblemKind::InvalidYaml)
        .collect();
    if !broken.is_empty() {
        let mut msg = String::from("cannot parse the output:\n");
        for p in broken {
            let _ = writeln!(msg, "  {} at bytes {:?}", p.message, p.span.range());
        }
        return Err(msg);
    }
    Ok(parsed
        .documents
        .iter()
        .map(|d| yaml::to_json(&d.root))
        .filter(|v| !v.is_null())
        .collect())
}

/// `apiVersion kind namespace/name`, the way a reader finds an object.
pub fn identity(obj: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let meta = &obj["metadata"];
    let ns = s(&meta["namespace"]);
    let name = s(&meta["name"]);
    let at = if ns.is_empty() {
        name
    } else {
        format!("{ns}/{name}")
    };
    format!("{} {} {at}", s(&obj["apiVersion"]), s(&obj["kind"]))
}

pub fn compact(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= VALUE_WIDTH {
        text
    } else {
        let cut: String = text.chars().take(VALUE_WIDTH).collect();
        format!("{cut}…")
    }
}

fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Paths at which two objects differ, as `pointer: kubectl=… ours=…` lines.
pub fn json_diff(label: &str, path: &str, theirs: &Value, ours: &Value, out: &mut Vec<String>) {
    match (theirs, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let sub = format!("{path}/{}", pointer_token(key));
                match (a.get(key.as_str()), b.get(key.as_str())) {
                    (Some(x), Some(y)) => json_diff(label, &sub, x, y, out),
                    (Some(x), None) => out.push(format!("{sub}: only in {label}: {}", compact(x))),
                    (None, Some(y)) => out.push(format!("{sub}: only in ours: {}", compact(y))),
                    (None, None) => unreachable!(),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                json_diff(label, &format!("{path}/{i}"), x, y, out);
            }
            for (i, x) in a.iter().enumerate().skip(b.len()) {
                out.push(format!("{path}/{i}: only in {label}: {}", compact(x)));
            }
            for (i, y) in b.iter().enumerate().skip(a.len()) {
                out.push(format!("{path}/{i}: only in ours: {}", compact(y)));
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!(
            "{}: {label}={} ours={}",
            if path.is_empty() { "/" } else { path },
            compact(a),
            compact(b)
        )),
    }
}

/// Compares two renderings as multisets, `theirs` from the tool named `label`; `None` when
/// they agree, else a report.
pub fn compare(label: &str, theirs: Vec<Value>, ours: Vec<Value>) -> Option<String> {
    let mut only_theirs = theirs;
    let mut only_ours = Vec::new();
    for obj in ours {
        match only_theirs.iter().position(|k| *k == obj) {
            Some(i) => {
                only_theirs.remove(i);
            }
            None => only_ours.push(obj),
        }
    }
    if only_theirs.is_empty() && only_ours.is_empty() {
        return None;
    }

    let mut report = String::new();
    // Same identity on both sides: show where they differ.
    let mut i = 0;
    while i < only_theirs.len() {
        let id = identity(&only_theirs[i]);
        if let Some(j) = only_ours.iter().position(|o| identity(o) == id) {
            let theirs = only_theirs.remove(i);
            let mine = only_ours.remove(j);
            let mut paths = Vec::new();
            json_diff(label, "", &theirs, &mine, &mut paths);
            let _ = writeln!(report, "  differs: {id}");
            for p in paths {
                let _ = writeln!(report, "    {p}");
            }
        } else {
            i += 1;
        }
    }
    for (label, objs) in [(label, &only_theirs), ("ours", &only_ours)] {
        for obj in objs {
            let pretty = serde_json::to_string_pretty(obj).unwrap();
            let _ = writeln!(report, "  only in {label}: {}", identity(obj));
            for line in pretty.lines() {
                let _ = writeln!(report, "    {line}");
            }
        }
    }
    Some(report)
}
