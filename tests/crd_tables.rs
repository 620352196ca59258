//! The known-field table is derived from Argo CD's CRDs; this test regenerates it and fails
//! when the committed copy differs. `UPDATE_CRD_TABLES=1` rewrites it. The CRDs live outside
//! the repository (`../shared/crds`, or the directory `GITOPS_LINT_CRDS` names); without them the
//! test is ignored, with the reason (see `build.rs`).
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

use std::path::PathBuf;

const CRDS: [&str; 3] = [
    "argocd-v3.5.1-application-crd.yaml",
    "argocd-v3.5.1-applicationset-crd.yaml",
    "argocd-v3.5.1-appproject-crd.yaml",
];

#[test]
#[cfg_attr(
    not(has_crds),
    ignore = "no CRD directory at ../shared/crds or GITOPS_LINT_CRDS"
)]
fn crd_table_matches_the_crds() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("GITOPS_LINT_CRDS")
        .map(|d| root.join(d))
        .unwrap_or_else(|| root.join("../shared/crds"));
    assert!(
        dir.is_dir(),
        "no CRD directory at {}, though there was one when the tests were built \
         (`touch build.rs` to look again)",
        dir.display()
    );
    let texts: Vec<(String, String)> = CRDS
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).expect("CRD file readable");
            (name.to_string(), text)
        })
        .collect();
    let pairs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let generated = gitops_lint::schema::generate(&pairs).expect("CRDs parse");
    let table = root.join("src/argocd-crds.txt");
    if std::env::var_os("UPDATE_CRD_TABLES").is_some() {
        std::fs::write(&table, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&table).unwrap();
    assert!(
        committed == generated,
        "src/argocd-crds.txt is out of date: run UPDATE_CRD_TABLES=1 cargo test --test crd_tables"
    );
    let parsed = gitops_lint::schema::parse_table(&generated).expect("table parses");
    for kind in ["Application", "ApplicationSet", "AppProject"] {
        assert!(parsed.root(kind).is_some(), "{kind} missing");
    }
}
