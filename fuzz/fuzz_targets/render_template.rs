//! bytes → one template string → goTemplate (both missingkey modes) and fasttemplate; and the
//! bytes as two files of a template set (split at the first NUL), in both dialects.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gitops_lint_fuzz::render_template(data));
