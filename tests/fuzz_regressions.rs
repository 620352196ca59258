//! Inputs the fuzzers once broke the linter with, replayed through the fuzz harness itself
//! (fuzz/src/lib.rs): each must now lint without a panic, quickly, with every span in place and
//! every output format well formed. Files are named `<target>-<what>`: `lint_file-*` holds one
//! file's bytes, `render_repo-*` a packed repository (`@@ path` lines start each file),
//! `render_template-*` one template string, `cel_eval-*` one CEL expression. The
//! `*-corpus-*` ones are inputs the fuzzers kept as new coverage, not crashes: they keep the
//! harness compiling and running in CI.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::time::{Duration, Instant};

/// Far above what any of these takes; a regression to the old blow-up shows as a failure here
/// rather than as a CI job that never ends. The slowest spends an ApplicationSet's whole work
/// budget, about 3 s in a debug build on an idle machine.
const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn fuzz_reproducers_lint_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no reproducers in {}", dir.display());
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&case).unwrap();
        let started = Instant::now();
        if name.starts_with("lint_file-") {
            harness::lint_file(&data);
        } else if name.starts_with("render_repo-") {
            harness::render_repo(&data);
        } else if name.starts_with("expand_appset-") {
            harness::expand_appset(&data);
        } else if name.starts_with("render_template-") {
            harness::render_template(&data);
        } else if name.starts_with("cel_eval-") {
            harness::cel_eval(&data);
        } else {
            panic!("{name}: a reproducer's name starts with its fuzz target");
        }
        assert!(
            started.elapsed() < LIMIT,
            "{name} took {:?}",
            started.elapsed()
        );
    }
}
