//! bytes → parse → recognise → lint one file (as a manifest and as a kustomization).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gitops_lint_fuzz::lint_file(data));
