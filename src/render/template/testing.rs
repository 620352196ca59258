//! What the tests of every stage share: one data value, and a runner for tables of templates
//! and what they render to.

use super::TemplateError;
use crate::render::budget::Budget as Work;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(super) fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(super) fn data() -> Value {
    json!({
        "path": {
            "path": "apps/foo",
            "basename": "foo",
            "basenameNormalized": "foo",
            "segments": ["apps", "foo"],
        },
        "name": "MyApp",
        "env": "prod",
        "replicas": 3,
        "ratio": 1.5,
        "big": 1000000.0,
        "enabled": true,
        "nothing": null,
        "labels": {"team": "core", "tier": "web"},
        "empty": "",
    })
}

/// One string on its own, with the per-string budget the engine once had.
pub(super) fn render_go(text: &str, data: &Value, missing: bool) -> Result<String, TemplateError> {
    super::render_go(text, data, missing, &mut Work::new(1_000_000))
}

pub(super) fn go(text: &str) -> String {
    match render_go(text, &data(), false) {
        Ok(out) => out,
        Err(e) => panic!("{text:?} failed: {}", e.message),
    }
}

pub(super) fn go_err(text: &str) -> String {
    match render_go(text, &data(), false) {
        Ok(out) => panic!("{text:?} should fail, rendered {out:?}"),
        Err(e) => e.message,
    }
}

/// What a row of a table expects: the whole output, or a part of the error message.
pub(super) type Want = Result<&'static str, &'static str>;

/// Renders every template against [`data`] (missing keys print `<no value>`) and checks it.
pub(super) fn check(rows: &[(&str, Want)]) {
    for (text, want) in rows {
        match want {
            Ok(out) => assert_eq!(go(text), *out, "{text:?}"),
            Err(part) => {
                let msg = go_err(text);
                assert!(
                    msg.contains(part),
                    "{text:?}: {msg:?} does not say {part:?}"
                );
            }
        }
    }
}
