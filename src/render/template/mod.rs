//! Offline evaluation of Argo CD ApplicationSet template strings, so the linter can see the
//! Applications a generator would produce without a cluster or the ApplicationSet controller.
//!
//! Argo CD has two modes: fasttemplate substitution (`goTemplate: false`) and Go's
//! `text/template` with the Sprig and Argo CD functions (`goTemplate: true`). Both are
//! re-implemented here in safe Rust. The input comes from untrusted pull requests, so evaluation
//! is bounded in nesting depth, work, value size and output size, and never panics.
//!
//! Go's output formats (`%v`, printf, `strconv.Quote`, encoding/json, the `toYaml` emitter, the
//! `path` package) are written out here, since what matters is Go's exact text. Base64 and
//! SHA-256 come from the `base64` and `sha2` crates, with Go's error messages on top.
//!
//! The same engine renders Helm charts: a [`TemplateSet`] holds a chart's files and the
//! templates they `define`, and [`Dialect::Helm`] gives Helm's function table (`include`,
//! `tpl`, `required`, ...) and its handling of missing values; Go values with methods
//! (`.Files`, `.Capabilities`) are JSON objects a [`Host`] answers for.
//!
//! The stages follow Go's own packages: `lexer` and `parser` (text/template/parse), `exec`
//! (text/template's executor) over the values of `value`, which also holds the work accounting;
//! `set` holds named templates (text/template's `Template`); `format`, `printf`, `json` and
//! `yaml` write values out; `funcs` holds the function tables and their families.

mod exec;
mod format;
mod funcs;
mod json;
mod lexer;
mod parser;
mod printf;
mod set;
#[cfg(test)]
mod testing;
mod value;
mod yaml;

pub use exec::Piece;
pub use format::go_float;
pub(crate) use funcs::go_regex;
pub(crate) use json::{go_json, go_json_string};
pub use set::{
    helm_exec_error, helm_parse_error, helm_parse_order, Dialect, Host, TemplateSet, HOST_KEY,
};
pub(crate) use value::shared::Scope as SharedMaps;

use crate::render::budget::{Budget as Work, Exhausted};
use exec::Exec;
use parser::Parser;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use value::Budget;

/// A template that Argo CD would reject, or that cannot be evaluated offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub message: String,
    pub kind: ErrorKind,
}

/// Whose limit a template ran into: the reader of a finding must know whether Argo CD fails
/// too, or only this linter could not follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Argo CD fails to render it as well: a parse error, a function Argo CD does not
    /// define, a missing key under `missingkey=error`, a type error, `fail`.
    Invalid,
    /// Valid for Argo CD, but beyond what is evaluated offline.
    Unsupported,
    /// Past a bound of this engine (depth, size, iterations): Argo CD may render it.
    Limit,
    /// The caller's [`Work`] budget ran out.
    Budget(Exhausted),
}

impl TemplateError {
    fn new(message: impl Into<String>) -> Self {
        TemplateError {
            message: message.into(),
            kind: ErrorKind::Invalid,
        }
    }

    fn of_kind(message: impl Into<String>, kind: ErrorKind) -> Self {
        TemplateError {
            message: message.into(),
            kind,
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TemplateError {}

/// fasttemplate mode (goTemplate: false). `params` is the flat map Argo CD builds, e.g.
/// "path" → "apps/foo", "path.basename" → "foo", "path\[0\]" → "apps", "metadata.labels.env" →
/// "prod". Tags are `{{ ... }}` with surrounding whitespace trimmed inside the braces; a tag
/// naming a known param is replaced by its value, an unknown tag is written back unchanged,
/// including its braces and original inner text (this is what Argo CD does). Never fails.
///
/// Argo CD rejects a string with an unclosed `{{`; here the rest of the text is kept verbatim
/// instead, since this function cannot fail (check [`has_template`] on the result if needed).
pub fn render_fast(text: &str, params: &BTreeMap<String, String>) -> String {
    render_fast_within(text, params, usize::MAX).unwrap_or_default()
}

/// [`render_fast`], refusing (with the limit's message) an output longer than `max` bytes: a
/// short string of tags can name a long value many times.
pub fn render_fast_within(
    text: &str,
    params: &BTreeMap<String, String>,
    max: usize,
) -> Result<String, TemplateError> {
    let too_long = || {
        TemplateError::of_kind(
            format!("template: output exceeds the {max}-byte limit"),
            ErrorKind::Limit,
        )
    };
    // Argo CD only substitutes when some line holds `{{ ... }}`: its guard regex does not
    // cross newlines, so a tag split over lines alone is left untouched.
    if !text.split('\n').any(line_has_tag) {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            break;
        };
        let tag = &after[..close];
        let name = tag.trim();
        if out.len().saturating_add(open).saturating_add(close + 4) > max {
            return Err(too_long());
        }
        out.push_str(&rest[..open]);
        match params.get(name) {
            Some(value) if !name.is_empty() && out.len().saturating_add(value.len()) > max => {
                return Err(too_long());
            }
            Some(value) if !name.is_empty() => out.push_str(value),
            _ => {
                out.push_str("{{");
                out.push_str(tag);
                out.push_str("}}");
            }
        }
        rest = &after[close + 2..];
    }
    if out.len().saturating_add(rest.len()) > max {
        return Err(too_long());
    }
    out.push_str(rest);
    Ok(out)
}

/// The largest output [`render_fast_within`] and [`render_go`] produce for one string.
pub const MAX_FIELD_OUTPUT: usize = MAX_OUTPUT;

fn line_has_tag(line: &str) -> bool {
    line.find("{{")
        .is_some_and(|open| line[open + 2..].contains("}}"))
}

/// goTemplate mode. `data` is the nested parameter object (e.g. {"path": {"path": "apps/foo",
/// "basename": "foo", "segments": ["apps","foo"], ...}, "name": "x", "values": {...}}).
/// `missingkey_error` mirrors goTemplateOptions ["missingkey=error"]: a missing map key is then
/// an error; otherwise Go prints `<no value>` for a missing key.
///
/// Parsing and evaluation are charged to `work`, which the caller shares between every
/// string it renders for one ApplicationSet; once it is spent, every later call fails at once.
pub fn render_go(
    text: &str,
    data: &Value,
    missingkey_error: bool,
    work: &mut Work,
) -> Result<String, TemplateError> {
    let mut budget = Budget::new(std::mem::take(work));
    let result = render_with(text, data, missingkey_error, &mut budget);
    *work = budget.work;
    result.map_err(|mut e| {
        if let Some(why) = work.exhausted() {
            e.kind = ErrorKind::Budget(why);
        }
        e
    })
}

fn render_with(
    text: &str,
    data: &Value,
    missingkey_error: bool,
    budget: &mut Budget,
) -> Result<String, TemplateError> {
    budget
        .charge_bytes(text.len())
        .map_err(|msg| TemplateError::of_kind(format!("template: {msg}"), ErrorKind::Limit))?;
    let nodes = Parser::parse(text)?;
    Exec::single(text, nodes, missingkey_error, budget).run(data)
}

/// A Go string holds any bytes; a Rust one only UTF-8. Bytes of a file that are not UTF-8
/// (a `.Files.Get` of a binary file) are carried as the characters U+10FF80..=U+10FFFF, one
/// per byte, which the functions that read a string's bytes (`b64enc`, the checksums) turn
/// back into the bytes themselves.
pub fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for &b in chunk.invalid() {
            out.push(char::from_u32(BYTE_CHARS + u32::from(b)).unwrap_or('\u{FFFD}'));
        }
    }
    out
}

/// The bytes a string made by [`go_string`] stands for.
pub(crate) fn go_bytes(s: &str) -> std::borrow::Cow<'_, [u8]> {
    if !s.chars().any(|c| u32::from(c) >= BYTE_CHARS + 0x80) {
        return std::borrow::Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match u32::from(c).checked_sub(BYTE_CHARS) {
            Some(b) if b >= 0x80 => out.push(u8::try_from(b).unwrap_or(0)),
            _ => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    std::borrow::Cow::Owned(out)
}

const BYTE_CHARS: u32 = 0x10FF00;

/// Helm's `toYaml` (sigs.k8s.io/yaml, trailing newline removed), for values built outside a
/// template: `.Files.AsConfig` and `.Files.AsSecrets`.
pub fn helm_to_yaml(v: &Value) -> Result<String, String> {
    yaml::to_yaml(Some(v))
}

/// Whether `version` meets the Masterminds semver `constraint`, as Helm's
/// `chartutil.IsCompatibleRange` and Sprig's `semverCompare` decide; `Err` when either does
/// not parse.
pub fn semver_matches(constraint: &str, version: &str) -> Result<bool, String> {
    let data = serde_json::json!({ "c": constraint, "v": version });
    let mut work = Work::new(10_000);
    render_go("{{ semverCompare .c .v }}", &data, true, &mut work)
        .map(|out| out == "true")
        .map_err(|e| e.message)
}

/// Whether `text` contains anything a template engine would act on (`{{`).
pub fn has_template(text: &str) -> bool {
    text.contains("{{")
}

// -------------------------------------------------------------------------------------------
// Limits. Untrusted templates must not be able to exhaust the stack, the CPU or memory.
// -------------------------------------------------------------------------------------------

/// Nesting cap for parentheses, control structures and values; keeps recursion shallow.
const MAX_DEPTH: usize = 100;
/// Largest rendered output; real ApplicationSet fields are tiny next to this.
const MAX_OUTPUT: usize = 1 << 20;
/// Largest file a chart template renders: as large as a whole chart may be (CRDs written out
/// as templates pass a megabyte; argo-cd's ApplicationSet CRD is 1.4 MB). The work budget
/// still bounds what a hostile chart can make.
const MAX_HELM_OUTPUT: usize = 64 << 20;
/// Largest single intermediate value (string or collection), in bytes of content.
const MAX_VALUE_BYTES: usize = 4 << 20;
/// Work is charged to the caller's [`Work`] budget: one step per node, command, call or
/// iteration, plus one per [`crate::render::budget::BYTES_PER_STEP`] bytes copied, so both
/// loops and large copies run out. Iterations are bounded per string as well.
const MAX_RANGE_ITERATIONS: u64 = 100_000;
/// Weight of one value node (roughly its heap cost), so wide collections are not free.
const NODE_WEIGHT: usize = 64;
/// Variables in scope at once; lookups scan them, so they must stay few.
const MAX_VARIABLES: usize = 1000;

fn too_deep() -> String {
    format!("value is nested deeper than {MAX_DEPTH} levels")
}

fn too_large() -> String {
    format!("value exceeds the {MAX_VALUE_BYTES}-byte limit")
}

#[cfg(test)]
mod tests {
    #[test]
    fn strings_carry_the_bytes_of_binary_files() {
        let bytes = [b'a', 0xff, 0x80, b'\n', 0xc3];
        let s = super::go_string(&bytes);
        assert_eq!(&*super::go_bytes(&s), &bytes[..]);
        assert_eq!(&*super::go_bytes("plain é"), "plain é".as_bytes());
    }

    use super::testing::{data, go, go_err, params, render_go};
    use super::{
        has_template, render_fast, render_fast_within, too_large, ErrorKind, Exhausted, Work,
        MAX_FIELD_OUTPUT,
    };
    use std::collections::BTreeMap;

    #[test]
    fn fast_replaces_known_params() {
        let p = params(&[
            ("path", "apps/foo"),
            ("path.basename", "foo"),
            ("path[0]", "apps"),
        ]);
        assert_eq!(render_fast("{{path.basename}}-{{path[0]}}", &p), "foo-apps");
        assert_eq!(render_fast("x: {{ path }} ", &p), "x: apps/foo ");
        assert_eq!(render_fast("x {{\tpath.basename  }}", &p), "x foo");
    }

    #[test]
    fn fast_writes_back_unknown_and_empty_tags() {
        let p = params(&[("name", "a")]);
        assert_eq!(render_fast("{{ nope }}/{{name}}", &p), "{{ nope }}/a");
        assert_eq!(render_fast("{{}}{{  }}", &p), "{{}}{{  }}");
        assert_eq!(render_fast("{{ .name }}", &p), "{{ .name }}");
    }

    #[test]
    fn fast_edge_cases_follow_argo() {
        let p = params(&[("a", "1"), ("b", "2")]);
        // No line holds a whole tag: Argo CD leaves the text alone.
        assert_eq!(render_fast("{{a\n}}", &p), "{{a\n}}");
        // Once one line does, every tag is substituted, even a multi-line one.
        assert_eq!(render_fast("{{a\n}} {{b}}", &p), "1 2");
        // Unclosed tags keep the rest of the text.
        assert_eq!(render_fast("{{a}} {{b", &p), "1 {{b");
        assert_eq!(render_fast("}}{{", &p), "}}{{");
        assert!(has_template("x {{ y"));
        assert!(!has_template("x { y }"));
    }

    #[test]
    fn fasttemplate_output_is_bounded() {
        let mut p = BTreeMap::new();
        p.insert("v".to_string(), "x".repeat(1000));
        let many = "{{v}}".repeat(2000);
        let err = render_fast_within(&many, &p, MAX_FIELD_OUTPUT).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Limit);
        assert_eq!(
            render_fast_within("a{{v}}b", &p, MAX_FIELD_OUTPUT)
                .unwrap()
                .len(),
            1002
        );
    }

    #[test]
    fn errors_say_whose_limit_it_is() {
        let kind = |text: &str| render_go(text, &data(), true).unwrap_err().kind;
        for (text, want) in [
            ("{{ .nope }}", ErrorKind::Invalid),
            ("{{ nope }}", ErrorKind::Invalid),
            ("{{ .name", ErrorKind::Invalid),
            ("{{ env \"HOME\" }}", ErrorKind::Invalid),
            ("{{ genPrivateKey .name }}", ErrorKind::Unsupported),
            ("{{ define \"x\" }}{{ end }}", ErrorKind::Unsupported),
            ("{{ 1i }}", ErrorKind::Unsupported),
            ("{{ repeat 100000000 \"x\" }}", ErrorKind::Limit),
        ] {
            assert_eq!(kind(text), want, "{text:?}");
        }
        // `fail` says what the template says: it cannot pass for a gap or a bound.
        let spoof = "{{ fail \"function \\\"fail\\\" is not supported offline\" }}";
        assert_eq!(kind(spoof), ErrorKind::Invalid);
        let spoof = format!("{{{{ fail \"{}\" }}}}", too_large());
        assert_eq!(kind(&spoof), ErrorKind::Invalid);
        let mut work = Work::new(100);
        let err = super::render_go("{{ range 1000 }}x{{ end }}", &data(), false, &mut work);
        assert_eq!(err.unwrap_err().kind, ErrorKind::Budget(Exhausted::Unit));
        // Spent is spent: the next string fails at once.
        let err = super::render_go("x", &data(), false, &mut work);
        assert_eq!(err.unwrap_err().kind, ErrorKind::Budget(Exhausted::Unit));
    }

    #[test]
    fn nasty_inputs_do_not_panic() {
        for text in [
            "{{",
            "{{}}",
            "}}{{",
            "{{{{}}}}",
            "{{-}}",
            "{{- -}}",
            "{{ $ }}",
            "{{ . }}",
            "{{(}}",
            "{{)}}",
            "{{ '' }}",
            "{{ '\\",
            "{{ \"\\",
            "{{ `",
            "{{ - }}",
            "{{ 0x }}",
            "{{ 1e999 }}",
            "{{ 99999999999999999999 }}",
            "{{ range $a, $b, $c := . }}{{ end }}",
            "{{ .é }}",
            "{{ \"\\xff\" }}",
            "{{ index \"é\" 1 }}",
        ] {
            let _ = render_go(text, &data(), false);
            let _ = render_go(text, &data(), true);
            let _ = render_fast(text, &BTreeMap::new());
        }
        assert!(go_err("{{}}").contains("missing value for command"));
        let deep = format!("{{{{ {}1{} }}}}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(go_err(&deep).contains("nests deeper than 100"));
        let ok = format!("{{{{ {}1{} }}}}", "(".repeat(50), ")".repeat(50));
        assert_eq!(go(&ok), "1");
        let nested_ifs = "{{ if true }}".repeat(200) + &"{{ end }}".repeat(200);
        assert!(go_err(&nested_ifs).contains("nests deeper"));
    }

    #[test]
    fn work_and_size_are_bounded() {
        let wide = "{{ $l := list (repeat 1000000 \"x\") }}{{ concat $l $l $l $l $l }}";
        assert!(go_err(wide).contains("exceeds the 4194304-byte limit"));
        let ten_k = "(splitList \",\" (repeat 10000 \"a,\"))";
        assert_eq!(go(&format!("{{{{ len {ten_k} }}}}")), "10001");
        let nested =
            format!("{{{{ range {ten_k} }}}}{{{{ range {ten_k} }}}}x{{{{ end }}}}{{{{ end }}}}");
        let err = go_err(&nested);
        assert!(err.contains("exceeds"), "{err}");
        assert!(
            go_err("{{ range 100000000 }}{{ end }}").contains("range exceeds 100000 iterations")
        );
        assert!(go_err("{{ repeat 100000000 \"x\" }}").contains("exceeds"));
        assert!(
            go_err("{{ range 2000 }}{{ repeat 1000 \"x\" }}{{ end }}").contains("output exceeds")
        );
        let doubling = "{{ $s := \"xxxxxxxx\" }}{{ range 40 }}{{ $s = cat $s $s }}{{ end }}";
        assert!(go_err(doubling).contains("exceeds"));
        let lists = "{{ $l := list 1 }}{{ range 200 }}{{ $l = list $l $l }}{{ end }}";
        assert!(go_err(lists).contains("exceeds") || go_err(lists).contains("nested deeper"));
        let deep_list = "{{ $l := list }}{{ range 150 }}{{ $l = list $l }}{{ end }}{{ $l }}";
        assert!(go_err(deep_list).contains("nested deeper"));
    }

    #[test]
    fn pseudo_random_templates_do_not_panic() {
        let pieces = [
            "{{",
            "}}",
            "{{-",
            "-}}",
            " ",
            ".",
            ".path",
            ".segments",
            "$",
            "$x",
            ":=",
            "=",
            "|",
            "(",
            ")",
            "\"s\"",
            "`r`",
            "'c'",
            "1",
            "-2",
            "3.5",
            "if",
            "else",
            "end",
            "range",
            "with",
            "break",
            "index",
            "len",
            "printf",
            "\"%d\"",
            "default",
            "toJson",
            "toYaml",
            "list",
            "dict",
            "split",
            ",",
            "/*",
            "*/",
            "nil",
            "true",
            "and",
            "or",
            "eq",
            "\n",
            "é",
            "{",
            "}",
            "\\",
            "slugify",
            "trunc",
            "b64dec",
            "keys",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..12 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let pick = usize::try_from(seed >> 33).unwrap_or(0) % pieces.len();
                text.push_str(pieces.get(pick).copied().unwrap_or(""));
            }
            let _ = render_go(&text, &data(), seed.is_multiple_of(2));
            let _ = render_fast(&text, &params(&[("path", "x")]));
        }
    }
}
