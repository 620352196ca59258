//! The rule docs have one source, `rules/<id>.md`: `gitops-lint explain` prints it as is, and
//! the index `docs/rules.md` is generated from it and from `gitops-lint rules --format json`.
//! The table at the top of each doc (category, severity, fix) is generated from the rule's
//! declaration, which is what the code does.
//!
//! Regenerate the index and the tables with `UPDATE_DOCS=1 cargo test --test docs`.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{doc, doc_table, root, run};
use gitops_lint::rules::{Rule, RULES};

fn updating() -> bool {
    std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1")
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
         `UPDATE_DOCS=1 cargo test --test docs`; do not edit by hand. -->\n\n",
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
    assert!(
        stale.is_empty(),
        "\n{}\nRegenerate the tables with: UPDATE_DOCS=1 cargo test --test docs",
        stale.join("\n")
    );
}

#[test]
fn rule_index_is_current() {
    let expected = index();
    let path = root().join(INDEX);
    if updating() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    if actual != expected {
        let line = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(actual.lines().count().min(expected.lines().count()))
            + 1;
        panic!(
            "{INDEX} does not match the rules and their docs (first difference at line {line}).\n\
             Regenerate it with: UPDATE_DOCS=1 cargo test --test docs"
        );
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
