//! bytes → one template string → goTemplate (both missingkey modes) and fasttemplate.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gitops_lint_fuzz::render_template(data));
