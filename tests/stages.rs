//! The pipeline reads in one direction: each module of `src/` belongs to one stage, and its
//! code (tests aside) names only modules of its own stage or an earlier one. A new module must
//! be placed here before it builds.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Stages in pipeline order, with their modules. Keep the README's Architecture section in step.
const STAGES: &[(&str, &[&str])] = &[
    // Knows nothing of the linter: paths, words, Argo CD's pattern dialects, Go's regular
    // expressions, secret masking, escaping for each output, well-known kinds.
    (
        "util",
        &[
            "paths", "glob", "goregex", "text", "redact", "kinds", "escape",
        ],
    ),
    // Which files to read, the repositories they belong to, what changed since a revision.
    ("discover", &["discover", "repo", "changed"]),
    // YAML with spans, and the files' texts.
    ("parse", &["yaml", "source"]),
    // Which documents are objects, and the fields Argo CD's resources know.
    ("model", &["model", "schema"]),
    // CEL expressions evaluated on nodes with their spans.
    ("cel", &["cel"]),
    // Kustomize, sources, ApplicationSets, the object graph; what a change needs rendered.
    ("render", &["render", "scope"]),
    // Rules and what decides what they report: suppressions, baselines, reach, fixes.
    (
        "analyse",
        &[
            "finding", "fix", "context", "rules", "suppress", "reach", "baseline", "outcome",
        ],
    ),
    // The repository's settings, checked against the rule registry, and the policies of its
    // own they load into it.
    ("config", &["config", "policy"]),
    // Runs the stages above, applies fixes, keeps the `--context` cache.
    ("engine", &["engine", "cache"]),
    ("report", &["report"]),
    ("cli", &["cli", "main"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn stage_of(module: &str) -> Option<usize> {
    STAGES.iter().position(|(_, ms)| ms.contains(&module))
}

/// The top-level module a file of `src/` belongs to.
fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_str()
        .unwrap();
    first.trim_end_matches(".rs").to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file with comments, string and character literals blanked, so that only
/// what the compiler resolves is searched.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let word = |j: usize| j > 0 && (b[j - 1].is_ascii_alphanumeric() || b[j - 1] == b'_');
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if !word(i) && raw_string_hashes(&b[i..]).is_some() {
            let (open, hashes) = raw_string_hashes(&b[i..]).unwrap();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            i += open;
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && char_literal_len(&b[i..]).is_some() {
            i += char_literal_len(&b[i..]).unwrap();
            out.push_str("' '");
        } else {
            let len = text[i..].chars().next().unwrap().len_utf8();
            out.push_str(&text[i..i + len]);
            i += len;
        }
    }
    out
}

/// `r"`, `r#"`, `br##"`...: the length of the opening and its number of `#`.
fn raw_string_hashes(b: &[u8]) -> Option<(usize, usize)> {
    let start = if b.starts_with(b"br") {
        2
    } else if b.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
    (b.get(start + hashes) == Some(&b'"')).then_some((start + hashes + 1, hashes))
}

/// `'a'`, `'\n'`, `'\u{1F600}'`, `'é'`, but not a lifetime.
fn char_literal_len(b: &[u8]) -> Option<usize> {
    if b.get(1) == Some(&b'\\') {
        let end = b[2..].iter().position(|&c| c == b'\'')?;
        return Some(end + 3);
    }
    let text = std::str::from_utf8(&b[1..b.len().min(6)])
        .unwrap_or_else(|e| std::str::from_utf8(&b[1..1 + e.valid_up_to()]).unwrap());
    let c = text.chars().next()?;
    (b.get(1 + c.len_utf8()) == Some(&b'\'')).then_some(c.len_utf8() + 2)
}

/// The code without the items marked `#[cfg(test)]`.
fn without_tests(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let semi = item.find(';');
        let brace = item.find('{');
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => s + 1,
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = item.len();
                for (i, c) in item[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(s), None) => s + 1,
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The top-level modules a piece of code names through `crate::` (or `$crate::`, or the
/// library's name from the binary), groups `crate::{a, b::c}` included.
fn named_modules(code: &str, root: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find(root) {
        let start = from + at;
        from = start + root.len();
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue;
        }
        let rest = code[from..].trim_start();
        let Some(rest) = rest.strip_prefix("::") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start => {
                        item_start = false;
                        out.push(ident(&group[i..]));
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every `module -> module` a file's code names, with the file.
fn edges() -> Vec<(String, String, PathBuf)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let from = module_of(&file);
        if from == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = without_tests(&code_only(&text));
        let root = if from == "main" {
            "gitops_lint"
        } else {
            "crate"
        };
        for to in named_modules(&code, root) {
            if to != from {
                out.push((from.clone(), to, file.clone()));
            }
        }
    }
    out
}

#[test]
fn every_module_has_a_stage() {
    let mut unplaced = Vec::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        let module = if path.is_dir() {
            name.to_string()
        } else if let Some(m) = name.strip_suffix(".rs") {
            m.to_string()
        } else {
            continue;
        };
        if module != "lib" && stage_of(&module).is_none() {
            unplaced.push(module);
        }
    }
    unplaced.sort();
    assert!(
        unplaced.is_empty(),
        "modules with no stage in tests/stages.rs: {unplaced:?}"
    );
    let mut seen = BTreeMap::new();
    for (stage, modules) in STAGES {
        for m in *modules {
            assert!(seen.insert(*m, *stage).is_none(), "`{m}` is in two stages");
            let exists = src().join(format!("{m}.rs")).is_file() || src().join(m).is_dir();
            assert!(exists, "`{m}` ({stage}) is not a module of src/");
        }
    }
}

#[test]
fn no_stage_reaches_back() {
    let mut back = Vec::new();
    for (from, to, file) in edges() {
        let (Some(f), Some(t)) = (stage_of(&from), stage_of(&to)) else {
            // A name that is not a module (a macro exported at the crate root, say) or a module
            // with no stage, which `every_module_has_a_stage` reports.
            continue;
        };
        if t > f {
            back.push(format!(
                "{}: {from} ({}) uses {to} ({})",
                file.strip_prefix(src()).unwrap().display(),
                STAGES[f].0,
                STAGES[t].0
            ));
        }
    }
    back.dedup();
    assert!(
        back.is_empty(),
        "stages reaching back:\n{}",
        back.join("\n")
    );
}

#[test]
fn the_check_sees_what_it_must() {
    let code = code_only(
        "use crate::{a, b::{c, d}};\n// crate::e\nlet s = \"crate::f\"; let c = '{';\n\
         fn g() { crate::h::i() }\n#[cfg(test)]\nmod tests { use crate::j; }\n\
         #[cfg(test)]\nuse crate::k;\nlet r = r#\"crate::l\"#; $crate::m::X;",
    );
    let code = without_tests(&code);
    assert_eq!(named_modules(&code, "crate"), ["a", "b", "h", "m"]);
}
