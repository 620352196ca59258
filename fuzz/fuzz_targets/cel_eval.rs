//! bytes → one CEL expression, evaluated on a small Deployment under a small budget.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gitops_lint_fuzz::cel_eval(data));
