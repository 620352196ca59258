//! bytes → a packed repository (kustomizations, resources, patches) → render → lint.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gitops_lint_fuzz::render_repo(data));
