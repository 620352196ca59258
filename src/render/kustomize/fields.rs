//! The names of a kustomization's fields. kustomize reads the file through Go's JSON decoder
//! (`api/types/kustomization.go`, `Unmarshal`, kustomize v5.5.0), which matches a key to a
//! field without regard to case: `patchesJSON6902` and `CommonLabels` are the fields
//! `patchesJson6902` and `commonLabels`. When two keys name one field, the last wins, as it
//! does for a repeated key.

use crate::yaml::Node;
use std::borrow::Cow;

/// The fields of a Kustomization (and a Component), as kustomize v5.5.0 spells them.
const FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "bases",
    "buildMetadata",
    "commonAnnotations",
    "commonLabels",
    "components",
    "configMapGenerator",
    "configurations",
    "crds",
    "generatorOptions",
    "generators",
    "helmChartInflationGenerator",
    "helmCharts",
    "helmGlobals",
    "imageTags",
    "images",
    "labels",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "openapi",
    "patches",
    "patchesJson6902",
    "patchesStrategicMerge",
    "replacements",
    "replicas",
    "resources",
    "secretGenerator",
    "sortOptions",
    "transformers",
    "validators",
    "vars",
];

/// The kustomization with each top-level key spelled as kustomize's field; borrowed when
/// every key already is.
pub(super) fn canonical(k: &Node) -> Cow<'_, Node> {
    let respell = |key: &Node| {
        let text = key.as_str()?;
        let field = FIELDS.iter().find(|f| f.eq_ignore_ascii_case(text))?;
        (*field != text).then_some(*field)
    };
    if !k.entries().iter().any(|e| respell(&e.key).is_some()) {
        return Cow::Borrowed(k);
    }
    let mut out = k.clone();
    if let Some(entries) = out.entries_mut() {
        for e in entries.iter_mut() {
            if let Some(field) = respell(&e.key) {
                e.key = Node::string(field, e.key.span);
            }
        }
    }
    Cow::Owned(out)
}
