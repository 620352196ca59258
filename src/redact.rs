//! The run's secret values, and the one function that masks them in any text the run shows.
//!
//! A value held by a `Secret` (or a `secretGenerator`) may also be written elsewhere: in a
//! ConfigMap, a label, a comment, a Helm parameter. Spans mask it only inside its Secret; here
//! every occurrence is found, in source text and in every message, with one automaton over all
//! values.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use std::borrow::Cow;

/// Values shorter than this many bytes are masked in their own Secret only. Short values are
/// mostly flags, ports, user names and names the repository uses for other things too (`true`,
/// `5432`, `admin`, `orders`, `argocd`): masking each everywhere would blank namespaces, object
/// names and ordinary words all over the report. Passwords and tokens are rarely shorter, and
/// a value that short is guessed rather than leaked.
pub const MIN_LEN: usize = 8;

/// The secret values of a run, ready to be found in any text.
#[derive(Debug, Default)]
pub struct Secrets {
    finder: Option<AhoCorasick>,
    count: usize,
}

impl Secrets {
    /// From the values as the repository holds them (decoded): each is looked for whole,
    /// line by line (a snippet shows lines of a key), and base64-encoded (as `data` writes it).
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut patterns: Vec<String> = Vec::new();
        let mut add = |p: &str| {
            if p.len() >= MIN_LEN {
                patterns.push(p.to_string());
            }
        };
        for value in values {
            add(&value);
            add(value.trim());
            if value.contains('\n') {
                for line in value.lines() {
                    add(line.trim());
                }
            }
            if value.len() >= MIN_LEN {
                add(&base64::engine::general_purpose::STANDARD.encode(value.as_bytes()));
            }
        }
        patterns.sort_unstable();
        patterns.dedup();
        let count = patterns.len();
        // Overlapping search needs the standard semantics; the union of every match is masked.
        let finder = (count > 0)
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&patterns)
                    .ok()
            })
            .flatten();
        Secrets { finder, count }
    }

    /// How many distinct texts are looked for.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no value is looked for; credentials are masked by their shape all the same.
    pub fn is_empty(&self) -> bool {
        self.finder.is_none()
    }

    /// `text` with every occurrence of a secret value, and every credential [`credentials`]
    /// recognises by its shape, masked: each character but line breaks becomes as many `*` as
    /// it has bytes, so offsets and line numbers stay valid.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut ranges: Vec<(usize, usize)> = self
            .finder
            .iter()
            .flat_map(|f| f.find_overlapping_iter(text))
            .map(|m| (m.start(), m.end()))
            .collect();
        ranges.extend(credential_ranges(text));
        if ranges.is_empty() {
            return Cow::Borrowed(text);
        }
        // Matches come by where they end; one that starts earlier may cover more than those
        // before it, so the union is taken in order of start.
        ranges.sort_unstable();
        let mut bytes = text.as_bytes().to_vec();
        let mut masked_to = 0;
        for (start, mut end) in ranges {
            let mut start = start.max(masked_to);
            if start >= end {
                continue;
            }
            // Whole characters only: a value may begin or end inside one.
            while start > 0 && !text.is_char_boundary(start) {
                start -= 1;
            }
            while end < text.len() && !text.is_char_boundary(end) {
                end += 1;
            }
            for b in &mut bytes[start..end] {
                if *b != b'\n' && *b != b'\r' {
                    *b = b'*';
                }
            }
            masked_to = end;
        }
        // Every byte of a masked character became ASCII, and the rest are untouched.
        Cow::Owned(String::from_utf8(bytes).unwrap_or_default())
    }

    /// Masks `text` where it is.
    pub fn mask_in_place(&self, text: &mut String) {
        if let Cow::Owned(masked) = self.mask(text) {
            *text = masked;
        }
    }
}

/// Where a credential may start: the texts that begin each shape [`credential_ranges`] knows.
/// Matched with their case, which keeps the search fast: a header's name in the three
/// spellings it is written in.
const CUES: [&str; 13] = [
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "authorization:",
    "Authorization:",
    "AUTHORIZATION:",
    // `x-access-token:` in base64, as `actions/checkout` writes the job's token into
    // `http.extraheader`; and as written in a URL.
    "eC1hY2Nlc3MtdG9rZW46",
    "x-access-token:",
    "eyJ",
    "://",
];

/// The schemes of an `Authorization` header whose credentials follow them.
const SCHEMES: [&str; 6] = ["basic", "bearer", "token", "digest", "negotiate", "ntlm"];

fn cues() -> &'static AhoCorasick {
    static CUE: std::sync::OnceLock<AhoCorasick> = std::sync::OnceLock::new();
    CUE.get_or_init(|| {
        // Leftmost-first keeps the automaton's prefilter, which standard matching gives up:
        // fifteen times faster over a repository's text. Cues do not overlap.
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(CUES)
            .unwrap_or_else(|_| unreachable!("fixed, valid patterns"))
    })
}

/// The credentials `text` holds that are known by their shape, whoever wrote them: GitHub
/// tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), the value of an
/// `Authorization` header (`AUTHORIZATION: basic ...`, as `actions/checkout` keeps the job's
/// token in `.git/config`), the base64 of `x-access-token:...`, JSON Web Tokens, and the
/// password of a URL (`https://user:password@host`). One pass of a small automaton over the
/// text finds where one may start; only there is the text looked at further.
pub fn credentials(text: &str) -> impl Iterator<Item = &str> {
    credential_ranges(text).map(|(s, e)| &text[s..e])
}

fn credential_ranges(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = text.as_bytes();
    cues()
        .find_iter(text)
        .filter_map(move |m| shape(b, CUES[m.pattern().as_usize()], m.start(), m.end()))
        // Whole characters only, as for values.
        .filter(|(s, e)| text.is_char_boundary(*s) && text.is_char_boundary(*e))
}

fn run(b: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    from + b[from..].iter().take_while(|c| ok(**c)).count()
}

fn token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn base64url_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// The range to mask for the credential `cue` begins at `start..end`, when what follows has
/// its shape; look-alikes (`ghp_example`, a word after `authorization:`) are left alone.
fn shape(b: &[u8], cue: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    // Begun inside a longer word, it is not a token's start.
    let in_word = start > 0 && token_byte(b[start - 1]);
    match cue {
        "ghp_" | "gho_" | "ghu_" | "ghs_" | "ghr_" | "github_pat_" => {
            let stop = run(b, end, token_byte);
            let body = &b[end..stop];
            // Issued tokens are base62: long, with digits and capitals. A snake_case name
            // that happens to start the same way has neither.
            let issued = body.len() >= 20
                && body.iter().any(u8::is_ascii_digit)
                && body.iter().any(u8::is_ascii_uppercase);
            (!in_word && issued).then_some((start, stop))
        }
        "authorization:" | "Authorization:" | "AUTHORIZATION:" => {
            let blank = |c: u8| c == b' ' || c == b'\t';
            let mut at = run(b, end, blank);
            let word = run(b, at, |c| c.is_ascii_alphabetic());
            let scheme = std::str::from_utf8(&b[at..word]).ok()?;
            let known = SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme));
            if known && word < b.len() && blank(b[word]) {
                at = run(b, word, blank);
            }
            let stop = run(b, at, |c| {
                c.is_ascii_graphic()
                    && !matches!(c, b'"' | b'\'' | b'\\' | b'<' | b'>' | b',' | b';')
            });
            // A credential after a scheme, or a long one without: not a word of prose.
            let long_enough = if known && at > word { 4 } else { 16 };
            (stop - at >= long_enough).then_some((at, stop))
        }
        "eC1hY2Nlc3MtdG9rZW46" => {
            let stop = run(b, end, |c| {
                c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')
            });
            (stop > end).then_some((start, stop))
        }
        "x-access-token:" => {
            let stop = run(b, end, |c| {
                c.is_ascii_graphic() && !matches!(c, b'@' | b'/' | b'"' | b'\'' | b'\\')
            });
            (stop > end).then_some((end, stop))
        }
        "eyJ" => {
            // header.payload.signature, the first two base64url JSON objects.
            if in_word {
                return None;
            }
            let head = run(b, end, base64url_byte);
            if head - start < 10 || b.get(head) != Some(&b'.') || !b[head + 1..].starts_with(b"eyJ")
            {
                return None;
            }
            let body = run(b, head + 1, base64url_byte);
            if body - head - 1 < 10 || b.get(body) != Some(&b'.') {
                return None;
            }
            Some((start, run(b, body + 1, base64url_byte)))
        }
        "://" => {
            // scheme://user:password@host: the password, up to the `@` that ends the user part.
            let authority = run(b, end, |c| {
                c.is_ascii_graphic()
                    && !matches!(
                        c,
                        b'/' | b'?' | b'#' | b'@' | b'"' | b'\'' | b'\\' | b'<' | b'>'
                    )
            });
            if b.get(authority) != Some(&b'@') {
                return None;
            }
            let colon = b[end..authority].iter().position(|c| *c == b':')?;
            let from = end + colon + 1;
            (authority > from).then_some((from, authority))
        }
        _ => None,
    }
}

/// What the run must treat as secret values among the credentials `text` holds: each as
/// written, and what an `Authorization` header's base64 decodes to (`x-access-token:TOKEN`)
/// with the token on its own, so that a copy written another way is found too.
pub fn learned(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for c in credentials(text) {
        out.push(c.to_string());
        if let Some(decoded) = decode_data(c) {
            if let Some((_, token)) = decoded.split_once(':') {
                out.push(token.to_string());
            }
            out.push(decoded);
        }
    }
    out
}

/// A `data` value as Kubernetes decodes it: base64, line breaks and spaces (kustomize folds
/// long values) ignored. `None` when it is not base64 or not text.
pub fn decode_data(written: &str) -> Option<String> {
    let compact: String = written.split_ascii_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(compact.as_bytes()))
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// `text` with each of `ranges` masked and every secret value masked, byte for byte, so spans
/// stay valid.
pub fn redacted_text(
    text: &str,
    ranges: impl IntoIterator<Item = std::ops::Range<usize>>,
    secrets: &Secrets,
) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for range in ranges {
        let Some(slice) = text.get(range.clone()) else {
            continue;
        };
        // Keep line breaks so that line numbers do not move; mask every other character with
        // as many `*` as it has bytes.
        for (i, c) in slice.char_indices() {
            if c != '\n' && c != '\r' {
                for b in &mut bytes[range.start + i..range.start + i + c.len_utf8()] {
                    *b = b'*';
                }
            }
        }
    }
    let mut text = String::from_utf8(bytes).unwrap_or_default();
    secrets.mask_in_place(&mut text);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(values: &[&str]) -> Secrets {
        Secrets::new(values.iter().map(|v| v.to_string()))
    }

    #[test]
    fn every_occurrence_is_masked_and_short_values_are_not() {
        let s = secrets(&["hunter22", "true"]);
        assert_eq!(
            s.mask("a hunter22 b hunter22 true"),
            "a ******** b ******** true"
        );
        assert!(matches!(s.mask("nothing here"), Cow::Borrowed(_)));
        assert!(secrets(&["shorter"]).is_empty());
    }

    #[test]
    fn overlapping_values_mask_their_union() {
        let s = secrets(&["abcdefgh", "fghijklm", "cdefghij"]);
        assert_eq!(s.mask("xabcdefghijklmx"), "x*************x");
    }

    #[test]
    fn base64_and_lines_of_a_value_are_masked() {
        let s = secrets(&["-----BEGIN KEY-----\nsecret-line-one\n-----END KEY-----\n"]);
        assert_eq!(s.mask("# secret-line-one"), "# ***************");
        let s = secrets(&["password1"]);
        assert_eq!(s.mask("v: cGFzc3dvcmQx"), "v: ************");
    }

    #[test]
    fn whole_characters_are_masked_and_line_breaks_kept() {
        let s = secrets(&["ünïcödé", "line-a1\nline-b2"]);
        let masked = s.mask("x ünïcödé y line-a1\nline-b2 z");
        assert_eq!(masked.len(), "x ünïcödé y line-a1\nline-b2 z".len());
        assert!(!masked.contains('ü') && !masked.contains("line"));
        assert_eq!(masked.lines().count(), 2);
    }

    #[test]
    fn data_is_decoded_leniently() {
        assert_eq!(decode_data("aHVu\n dGVyMjI=").as_deref(), Some("hunter22"));
        assert_eq!(decode_data("aHVudGVyMjI").as_deref(), Some("hunter22"));
        assert_eq!(decode_data("not base64!"), None);
    }

    fn masked(text: &str) -> String {
        Secrets::default().mask(text).into_owned()
    }

    #[test]
    fn credentials_are_masked_by_their_shape_without_being_known() {
        let token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        for (text, hidden) in [
            (format!("token {token} here"), token.to_string()),
            ("ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789".into(), "ghp_aBcDeF".into()),
            ("gho_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789".into(), "gho_aBcDeF".into()),
            ("ghu_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789".into(), "ghu_aBcDeF".into()),
            ("ghr_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789".into(), "ghr_aBcDeF".into()),
            ("github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP".into(), "github_pat_11".into()),
            (
                "\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Y2FuYXJ5\n".into(),
                "Y2FuYXJ5".into(),
            ),
            ("Authorization: Bearer abc.def-ghi\n".into(), "abc.def-ghi".into()),
            ("authorization:token Zm9vYmFyYmF6".into(), "Zm9vYmFyYmF6".into()),
            ("AUTHORIZATION: c29tZS1sb25nLWNyZWRlbnRpYWw=".into(), "c29tZS1sb25n".into()),
            ("v: eC1hY2Nlc3MtdG9rZW46Z2hzX3h4eA==".into(), "Z2hzX3h4eA".into()),
            (format!("https://x-access-token:{token}@github.com/o/r"), token.into()),
            ("https://bot:hunter2@git.example.com/o/r.git".into(), "hunter2".into()),
            ("ssh://git:s3cr3t@host/x".into(), "s3cr3t".into()),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end".into(),
                "dozjgNryP4J3".into(),
            ),
        ] {
            let out = masked(&text);
            assert!(!out.contains(&hidden), "{text:?} -> {out:?}");
            assert_eq!(out.len(), text.len(), "{text:?}");
        }
        // What is around a credential stays readable.
        assert_eq!(
            masked("AUTHORIZATION: basic eC1hY2Nlc3M6eA=="),
            "AUTHORIZATION: basic ****************"
        );
        assert_eq!(masked("https://u:pw@h/p"), "https://u:**@h/p");
    }

    #[test]
    fn look_alikes_of_credentials_are_left_alone() {
        for text in [
            "ghp_example",
            "ghs_enable_the_feature_for_everyone_now",
            "see ghp_ABCDEF123 in the docs",
            "myghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "github_pat_short",
            "the authorization: header is required",
            "Authorization: basic",
            "missing authorization: see the docs",
            "eyJhbGciOiJIUzI1NiJ9",
            "eyJhdXRocyI6eyJyZWdpc3RyeSI6e319fQ==",
            "https://github.com/acme/gitops.git",
            "ssh://git@github.com/acme/gitops",
            "git@github.com:acme/gitops.git",
            "http://host:8080/path@x",
            "https://host/path?u=a:b@c",
            "x-access-token",
        ] {
            assert_eq!(masked(text), text, "{text:?}");
        }
    }

    #[test]
    fn credentials_found_in_a_file_are_learned_in_every_spelling() {
        let learned =
            learned("extraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Y2FuYXJ5LXRva2Vu\n");
        assert!(learned.contains(&"canary-token".to_string()), "{learned:?}");
        assert!(learned.contains(&"x-access-token:canary-token".to_string()));
        let s = Secrets::new(learned);
        assert!(!s.mask("a canary-token b").contains("canary-token"));
        assert!(!s.mask("Y2FuYXJ5LXRva2Vu").contains("Y2FuYXJ5LXRva2Vu"));
    }
}
