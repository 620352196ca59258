//! `--fix` on generated Applications written in every formatting style we can think of:
//! indentation widths, indented and indentless lists, block and flow collections, comments,
//! quoting, CRLF, missing final newlines, several documents per file. For each file the fixed
//! text must parse to the same data except the intended nodes, keep every comment and line
//! ending, be stable under a second `--fix`, and lint with nothing left to fix.

mod common;

use common::rng::Rng;
use common::run_in;
use gitops_lint::yaml::{self, ParseLimits};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const FILES: usize = 200;

/// A YAML value to emit: mappings and lists may be written block or flow.
enum G {
    Scalar(String),
    Map(Vec<(String, G)>, bool),
    Seq(Vec<G>, bool),
}

struct Style {
    indent: usize,
    indentless: bool,
    comments: bool,
}

impl G {
    fn flow_text(&self) -> String {
        match self {
            G::Scalar(s) => s.clone(),
            G::Map(entries, _) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.flow_text()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            G::Seq(items, _) => format!(
                "[{}]",
                items
                    .iter()
                    .map(G::flow_text)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn is_block(&self) -> bool {
        match self {
            G::Scalar(_) => false,
            G::Map(e, flow) => !flow && !e.is_empty(),
            G::Seq(i, flow) => !flow && !i.is_empty(),
        }
    }

    /// Writes the entries of a block mapping at `col`; `first` is the prefix of the first
    /// line (`- ` of a list item) when the mapping is a list item.
    fn emit_map(
        entries: &[(String, G)],
        col: usize,
        first: Option<&str>,
        st: &Style,
        rng: &mut Rng,
        out: &mut Vec<String>,
    ) {
        for (i, (k, v)) in entries.iter().enumerate() {
            let lead = match (i, first) {
                (0, Some(p)) => p.to_string(),
                _ => " ".repeat(col),
            };
            if st.comments && i > 0 && rng.chance(15) {
                out.push(format!("{}# about {k}", " ".repeat(col)));
            }
            let comment = |rng: &mut Rng| {
                if st.comments && rng.chance(25) {
                    format!("  # {k} note")
                } else {
                    String::new()
                }
            };
            if v.is_block() {
                let c = comment(rng);
                out.push(format!("{lead}{k}:{c}"));
                v.emit_block(col, st, rng, out);
            } else {
                let c = comment(rng);
                let text = v.flow_text();
                if text.is_empty() {
                    out.push(format!("{lead}{k}:{c}"));
                } else {
                    out.push(format!("{lead}{k}: {text}{c}"));
                }
            }
        }
    }

    /// Writes a block value that belongs to a key at `col`.
    fn emit_block(&self, col: usize, st: &Style, rng: &mut Rng, out: &mut Vec<String>) {
        match self {
            G::Map(entries, _) => G::emit_map(entries, col + st.indent, None, st, rng, out),
            G::Seq(items, _) => {
                let dash = if st.indentless { col } else { col + st.indent };
                for item in items {
                    match item {
                        G::Map(entries, false) if !entries.is_empty() => {
                            let prefix = format!("{}- ", " ".repeat(dash));
                            G::emit_map(entries, dash + 2, Some(&prefix), st, rng, out);
                        }
                        other => {
                            let c = if st.comments && rng.chance(20) {
                                "  # item".to_string()
                            } else {
                                String::new()
                            };
                            out.push(format!("{}- {}{c}", " ".repeat(dash), other.flow_text()));
                        }
                    }
                }
            }
            G::Scalar(_) => {}
        }
    }
}

fn s(text: &str) -> G {
    G::Scalar(text.to_string())
}

fn quoted(rng: &mut Rng, text: &str) -> G {
    match rng.below(3) {
        0 => s(text),
        1 => s(&format!("'{text}'")),
        _ => s(&format!("\"{text}\"")),
    }
}

fn application(rng: &mut Rng, name: &str, flow_policy: bool) -> G {
    let mut automated = Vec::new();
    for flag in ["prune", "selfHeal"] {
        // A slip in the key's case, which automated-misuse's fix respells.
        let key = if flag == "selfHeal" && rng.chance(15) {
            "selfheal"
        } else {
            flag
        };
        match rng.below(4) {
            0 => {}
            1 => automated.push((key.to_string(), s("false"))),
            _ => automated.push((key.to_string(), s("true"))),
        }
    }
    if rng.chance(30) {
        automated.reverse();
    }
    let automated = G::Map(automated, flow_policy || rng.chance(30));
    let options = match rng.below(6) {
        0 => None,
        1 => Some(s("")),
        2 => Some(G::Seq(Vec::new(), true)),
        _ => {
            let n = 1 + rng.below(2);
            let mut items: Vec<G> = ["CreateNamespace=true", "ServerSideApply=true"][..n]
                .iter()
                .map(|t| quoted(rng, t))
                .collect();
            // A misspelt option, sometimes next to the right spelling.
            if rng.chance(20) {
                items.insert(rng.below(items.len() + 1), quoted(rng, "prunelast=true"));
                if rng.chance(40) {
                    items.push(s("PruneLast=true"));
                }
            }
            Some(G::Seq(items, flow_policy || rng.chance(30)))
        }
    };
    let mut policy = vec![("automated".to_string(), automated)];
    if let Some(o) = options {
        // An empty value cannot stand inside a flow mapping.
        if !(flow_policy && matches!(&o, G::Scalar(t) if t.is_empty())) {
            policy.push(("syncOptions".to_string(), o));
        }
    }
    if rng.chance(30) {
        policy.push((
            "retry".to_string(),
            G::Map(vec![("limit".to_string(), s("3"))], flow_policy),
        ));
    }
    if rng.chance(40) {
        policy.reverse();
    }
    let mut spec = vec![
        ("project".to_string(), s("payments")),
        (
            "source".to_string(),
            G::Map(
                vec![
                    ("repoURL".into(), s("https://github.com/acme/gitops.git")),
                    ("targetRevision".into(), s("main")),
                    ("path".into(), s(&format!("apps/{name}"))),
                ],
                false,
            ),
        ),
        (
            "destination".to_string(),
            G::Map(
                vec![
                    ("server".into(), s("https://kubernetes.default.svc")),
                    ("namespace".into(), s(name)),
                ],
                rng.chance(20),
            ),
        ),
    ];
    if rng.chance(60) {
        let entry = G::Map(
            vec![
                ("group".into(), s("apps")),
                ("kind".into(), s("Deployment")),
                (
                    "jsonPointers".into(),
                    G::Seq(vec![s("/spec/replicas")], rng.chance(50)),
                ),
            ],
            rng.chance(30),
        );
        spec.push(("ignoreDifferences".into(), G::Seq(vec![entry], false)));
    }
    let at = rng.below(spec.len() + 1);
    spec.insert(at, ("syncPolicy".into(), G::Map(policy, flow_policy)));
    G::Map(
        vec![
            ("apiVersion".into(), s("argoproj.io/v1alpha1")),
            ("kind".into(), s("Application")),
            (
                "metadata".into(),
                G::Map(
                    vec![("name".into(), s(name)), ("namespace".into(), s("argocd"))],
                    false,
                ),
            ),
            ("spec".into(), G::Map(spec, false)),
        ],
        false,
    )
}

fn file(rng: &mut Rng, index: usize) -> String {
    let st = Style {
        indent: if rng.chance(70) { 2 } else { 4 },
        indentless: rng.chance(50),
        comments: rng.chance(70),
    };
    let mut lines = Vec::new();
    if rng.chance(30) {
        lines.push("# generated case".to_string());
    }
    if rng.chance(20) {
        lines.push("---".to_string());
    }
    let docs = 1 + rng.below(3);
    for d in 0..docs {
        if d > 0 {
            lines.push("---".to_string());
            if st.comments && rng.chance(30) {
                lines.push(format!("# document {d}"));
            }
        }
        let flow = rng.chance(25);
        let app = application(rng, &format!("app-{index}-{d}"), flow);
        if let G::Map(entries, _) = &app {
            G::emit_map(entries, 0, None, &st, rng, &mut lines);
        }
    }
    let nl = if rng.chance(25) { "\r\n" } else { "\n" };
    let mut text = lines.join(nl);
    if rng.chance(80) {
        text.push_str(nl);
    }
    text
}

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
    assert!(
        changed > FILES / 3,
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
