//! bytes → an ApplicationSet whose generators multiply → expand → lint.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gitops_lint_fuzz::expand_appset(data));
