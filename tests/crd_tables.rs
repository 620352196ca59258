//! The known-field table is derived from Argo CD's CRDs; this test regenerates it and fails
//! when the committed copy differs. `UPDATE_CRD_TABLES=1` rewrites it.

use std::path::PathBuf;

const CRDS: [&str; 3] = [
    "argocd-v3.5.1-application-crd.yaml",
    "argocd-v3.5.1-applicationset-crd.yaml",
    "argocd-v3.5.1-appproject-crd.yaml",
];

#[test]
fn crd_table_matches_the_crds() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("GITOPS_LINT_CRDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/crds"));
    if !dir.is_dir() {
        eprintln!(
            "SKIPPED: no CRD directory at {} (set GITOPS_LINT_CRDS); the table was not checked",
            dir.display()
        );
        return;
    }
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
