//! Every file that is generated from the code, and the checks that it is current:
//!
//! - the table at the top of each rule doc `rules/<id>.md` (category, severity, fix), from the
//!   rule's declaration, which is what the code does; `gitops-lint explain` prints the doc as is;
//! - the index `docs/rules.md`, from `gitops-lint rules --format json` and the docs;
//! - the README's rule table;
//! - the config's JSON Schema, `schema/gitops-lint.schema.json`, and the policy files',
//!   `schema/gitops-lint-policy.schema.json`;
//! - the known-field table `src/argocd-crds.txt`, from Argo CD's CRDs (`../shared/crds`, or the
//!   directory `GITOPS_LINT_CRDS` names; without them that test is ignored, with the reason).
//!
//! A stale file fails its test. Regenerate them all with
//! `UPDATE_GENERATED=1 cargo test --test generated`.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{doc, doc_table, root, run};
use gitops_lint::rules::{Rule, RULES};

fn updating() -> bool {
    std::env::var_os("UPDATE_GENERATED").is_some_and(|v| v == "1")
}

const REGENERATE: &str = "Regenerate with: UPDATE_GENERATED=1 cargo test --test generated";

/// `path` (from the repository root) holds `fresh`, or is rewritten to when updating.
fn current(path: &str, fresh: &str) {
    let file = root().join(path);
    if updating() {
        std::fs::write(&file, fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()))
            + 1;
        panic!("{path} is stale (first difference at line {line}). {REGENERATE}");
    }
}

const INDEX: &str = "docs/rules.md";

/// One rule as `gitops-lint rules --format json` lists it.
struct Listed {
    id: String,
    category: String,
    severity: String,
    fix: String,
    summary: String,
}

fn listed() -> Vec<Listed> {
    let out = run(&["rules", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let field = |r: &serde_json::Value, k: &str| r[k].as_str().unwrap().to_string();
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| Listed {
            id: field(r, "id"),
            category: field(r, "category"),
            severity: field(r, "severity"),
            fix: field(r, "fix"),
            summary: field(r, "summary"),
        })
        .collect()
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The index: a table per category, in the order `gitops-lint rules` lists them.
fn index() -> String {
    let rules = listed();
    let mut categories: Vec<&str> = Vec::new();
    for r in &rules {
        if !categories.contains(&r.category.as_str()) {
            categories.push(&r.category);
        }
    }
    let mut out = String::new();
    out.push_str("# Rules\n\n");
    out.push_str(
        "<!-- Generated from `gitops-lint rules` and rules/*.md by \
         `UPDATE_GENERATED=1 cargo test --test generated`; do not edit by hand. -->\n\n",
    );
    out.push_str(&format!(
        "gitops-lint has {} rules in {} categories. Each links to its page, which \
         `gitops-lint explain <rule>` also prints. The fix column says whether an automatic fix \
         exists and whether it is safe to apply without review.\n",
        rules.len(),
        categories.len()
    ));
    for category in &categories {
        out.push_str(&format!("\n## {category}\n\n"));
        out.push_str("| rule | category | default severity | fix | summary |\n");
        out.push_str("|---|---|---|---|---|\n");
        for r in rules.iter().filter(|r| &r.category == category) {
            out.push_str(&format!(
                "| [`{id}`](../rules/{id}.md) | {category} | {} | {} | {} |\n",
                r.severity,
                r.fix,
                cell(&r.summary),
                id = r.id,
            ));
        }
    }
    out
}

/// The row of a rule's doc table, as its declaration says.
fn table_row(r: &Rule) -> String {
    format!(
        "| {} | {} | {} |",
        r.category.as_str(),
        cell(r.severity_text()),
        r.fix.as_str()
    )
}

#[test]
fn doc_tables_match_the_declarations() {
    let mut stale = Vec::new();
    for r in RULES {
        let doc = doc(r.id);
        let row = doc_table(r.id, &doc).unwrap_or_else(|e| panic!("{e}"));
        let expected = table_row(r);
        if doc[row.clone()] == expected {
            continue;
        }
        if updating() {
            let updated = format!("{}{expected}{}", &doc[..row.start], &doc[row.end..]);
            std::fs::write(root().join("rules").join(format!("{}.md", r.id)), updated).unwrap();
        } else {
            stale.push(format!(
                "rules/{}.md: `{}`, the declaration says `{expected}`",
                r.id, &doc[row]
            ));
        }
    }
    assert!(stale.is_empty(), "\n{}\n{REGENERATE}", stale.join("\n"));
}

#[test]
fn rule_index_is_current() {
    std::fs::create_dir_all(root().join("docs")).unwrap();
    current(INDEX, &index());
}

fn rule_table() -> String {
    let mut t = String::from(
        "| rule | category | severity | fix | what it catches |\n|---|---|---|---|---|\n",
    );
    for r in RULES {
        t.push_str(&format!(
            "| [`{}`](rules/{}.md) | {} | {} | {} | {} |\n",
            r.id,
            r.id,
            r.category.as_str(),
            r.severity,
            r.fix.as_str(),
            cell(r.summary)
        ));
    }
    t
}

#[test]
fn readme_rule_table_is_current() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (start, end) = ("<!-- rules:start -->\n", "<!-- rules:end -->");
    let a = readme.find(start).expect("README has a rules:start marker") + start.len();
    let b = readme.find(end).expect("README has a rules:end marker");
    current(
        "README.md",
        &format!("{}{}{}", &readme[..a], rule_table(), &readme[b..]),
    );
}

#[test]
fn the_json_schema_matches_the_code() {
    let out = run(&["config", "--schema"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    current("schema/gitops-lint.schema.json", &out.stdout);
    // Every rule id is offered to editors.
    for r in RULES {
        assert!(
            out.stdout.contains(&format!("\"{}\"", r.id)),
            "{} missing from the schema",
            r.id
        );
    }
}

#[test]
fn the_policy_json_schema_matches_the_code() {
    let out = run(&["config", "--policy-schema"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    current("schema/gitops-lint-policy.schema.json", &out.stdout);
}

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
    let dir = std::env::var_os("GITOPS_LINT_CRDS")
        .map(|d| root().join(d))
        .unwrap_or_else(|| root().join("../shared/crds"));
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
    current("src/argocd-crds.txt", &generated);
    let parsed = gitops_lint::schema::parse_table(&generated).expect("table parses");
    for kind in ["Application", "ApplicationSet", "AppProject"] {
        assert!(parsed.root(kind).is_some(), "{kind} missing");
    }
}

#[test]
fn explain_prints_the_rule_doc_verbatim() {
    let rules = listed();
    assert!(!rules.is_empty());
    for r in &rules {
        let out = run(&["explain", &r.id]);
        assert_eq!(out.code, 0, "explain {}: {}", r.id, out.stderr);
        assert!(
            out.stdout == doc(&r.id),
            "`gitops-lint explain {id}` differs from rules/{id}.md",
            id = r.id
        );
    }
}

#[test]
fn every_doc_belongs_to_a_rule() {
    let ids: Vec<String> = listed().into_iter().map(|r| r.id).collect();
    let mut orphans = Vec::new();
    for entry in std::fs::read_dir(root().join("rules")).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "md") && !ids.iter().any(|i| i == stem) {
            orphans.push(path.display().to_string());
        }
    }
    assert!(orphans.is_empty(), "docs without a rule: {orphans:?}");
}
