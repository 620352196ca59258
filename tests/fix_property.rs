//! `--fix` on generated Applications written in every formatting style we can think of:
//! indentation widths, indented and indentless lists, block and flow collections, comments,
//! quoting, CRLF, missing final newlines, several documents per file. For each file the fixed
//! text must parse to the same data except the intended nodes, keep every comment and line
//! ending, be stable under a second `--fix`, and lint with nothing left to fix.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::gen::file;
use common::rng::Rng;
use common::run_in;
use gitops_lint::yaml::{self, ParseLimits};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const FILES: usize = 200;

fn docs(text: &str) -> Vec<Value> {
    let parsed = yaml::parse(0, text, ParseLimits::default());
    assert!(parsed.problems.is_empty(), "{:?}\n{text}", parsed.problems);
    parsed
        .documents
        .iter()
        .map(|d| yaml::to_json(&d.root))
        .collect()
}

fn comments(text: &str) -> Vec<String> {
    yaml::parse(0, text, ParseLimits::default())
        .comments
        .into_iter()
        .map(|c| c.text)
        .collect()
}

const ADDED: [&str; 2] = ["PruneLast=true", "RespectIgnoreDifferences=true"];

/// Checks one document: everything equal but the nodes the fixes own.
fn same_but_intended(before: &Value, after: &Value, unsafe_fixes: bool) -> Result<(), String> {
    let policy = |v: &Value| v["spec"]["syncPolicy"].clone();
    let options = |v: &Value| -> Vec<String> {
        policy(v)["syncOptions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| i.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    // What sync-option-invalid's fix makes of the existing items: respelt, and dropped when
    // the right spelling is there already.
    let written = options(before);
    let right = written.iter().any(|o| o == "PruneLast=true");
    let ob: Vec<String> = written
        .iter()
        .filter(|o| !(right && *o == "prunelast=true"))
        .map(|o| o.replace("prunelast=true", "PruneLast=true"))
        .collect();
    let oa = options(after);
    if !oa.starts_with(&ob) {
        return Err(format!("existing sync options changed: {ob:?} -> {oa:?}"));
    }
    let extra = &oa[ob.len()..];
    if extra.iter().any(|o| !ADDED.contains(&o.as_str())) || extra.len() > 2 {
        return Err(format!("unexpected sync options added: {extra:?}"));
    }
    if !policy(after)["automated"]["selfheal"].is_null() {
        return Err("`selfheal` was not respelt".into());
    }
    for flag in ["prune", "selfHeal"] {
        let written = &policy(before)["automated"];
        let b = if flag == "selfHeal" && written[flag].is_null() {
            &written["selfheal"]
        } else {
            &written[flag]
        };
        let a = &policy(after)["automated"][flag];
        let changed = a != b;
        if changed && (!unsafe_fixes || *a != Value::Bool(true)) {
            return Err(format!("automated.{flag}: {b} -> {a}"));
        }
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(p) = v["spec"]["syncPolicy"].as_object_mut() {
            p.remove("syncOptions");
            if let Some(a) = p.get_mut("automated").and_then(Value::as_object_mut) {
                a.remove("prune");
                a.remove("selfHeal");
                a.remove("selfheal");
            }
        }
        v
    };
    if strip(before) != strip(after) {
        return Err(format!(
            "data outside the fixed nodes changed:\n{}\n->\n{}",
            strip(before),
            strip(after)
        ));
    }
    Ok(())
}

fn fix_and_check(unsafe_fixes: bool, seed: u64) {
    let mut rng = Rng(seed);
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let mut before: BTreeMap<String, String> = BTreeMap::new();
    for i in 0..FILES {
        let name = format!("app-{i:03}.yaml");
        let text = file(&mut rng, i);
        std::fs::write(repo.join(&name), &text).unwrap();
        before.insert(name, text);
    }
    let mut args = vec!["repo", "--fix", "--no-config"];
    if unsafe_fixes {
        args.push("--unsafe-fixes");
    }
    let first = run_in(work.path(), &args, LIMIT);
    assert_ne!(first.code, 2, "{}", first.stderr);
    assert!(
        !first.stderr.contains("unreadable") && !first.stderr.contains("did not settle"),
        "{}",
        first.stderr
    );
    let read = |dir: &Path| -> BTreeMap<String, String> {
        before
            .keys()
            .map(|n| (n.clone(), std::fs::read_to_string(dir.join(n)).unwrap()))
            .collect()
    };
    let after = read(&repo);
    let mut failures = Vec::new();
    let mut changed = 0;
    for (name, old) in &before {
        let new = &after[name];
        if old != new {
            changed += 1;
        }
        let (db, da) = (docs(old), docs(new));
        if db.len() != da.len() {
            failures.push(format!("{name}: document count changed"));
            continue;
        }
        for (i, (b, a)) in db.iter().zip(&da).enumerate() {
            if let Err(e) = same_but_intended(b, a, unsafe_fixes) {
                failures.push(format!(
                    "{name} document {i}: {e}\n--- before\n{old}\n--- after\n{new}"
                ));
            }
        }
        // Every comment stays, except one on the line of a removed duplicate item.
        let mut lost = comments(old);
        for c in comments(new) {
            match lost.iter().position(|l| *l == c) {
                Some(i) => {
                    lost.remove(i);
                }
                None => failures.push(format!("{name}: a comment appeared: {c}")),
            }
        }
        let removable = old.contains("prunelast=true") && old.contains("PruneLast=true");
        if lost.iter().any(|c| !(removable && c.trim() == "item")) {
            failures.push(format!("{name}: comments lost: {lost:?}\n{new}"));
        }
        if old.contains("\r\n") && new.replace("\r\n", "").contains('\n') {
            failures.push(format!("{name}: a bare LF in a CRLF file\n{new:?}"));
        }
        if old.ends_with('\n') != new.ends_with('\n') {
            failures.push(format!("{name}: final newline changed"));
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed}:\n{}",
        failures.join("\n\n")
    );
    // Safe fixes only respell what is written; unsafe ones also add options and flags.
    let expected = if unsafe_fixes { FILES / 3 } else { FILES / 5 };
    assert!(
        changed > expected,
        "only {changed} of {FILES} files needed a fix"
    );
    if let Some(dir) = std::env::var_os("KEEP_FIX_CASES") {
        let dir = Path::new(&dir).join(format!("{seed:x}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, old) in &before {
            std::fs::write(dir.join(format!("{name}.before")), old).unwrap();
            std::fs::write(dir.join(format!("{name}.after")), &after[name]).unwrap();
        }
    }

    let second = run_in(work.path(), &args, LIMIT);
    assert!(
        second.stderr.contains("fixed 0 findings in 0 files"),
        "{}",
        second.stderr
    );
    assert_eq!(read(&repo), after, "a second --fix changed files");

    let report = common::lint_json(work.path(), "repo", &[]);
    if let Some(left) = common::still_fixable(&report, unsafe_fixes) {
        panic!("seed {seed}: still fixable after --fix: {left}");
    }
}

#[test]
fn safe_fixes_on_generated_applications() {
    fix_and_check(false, 0x5eed_0001);
}

#[test]
fn unsafe_fixes_on_generated_applications() {
    fix_and_check(true, 0x5eed_0002);
}
