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

    pub fn is_empty(&self) -> bool {
        self.finder.is_none()
    }

    /// `text` with every occurrence of a secret value masked: each character but line breaks
    /// becomes as many `*` as it has bytes, so offsets and line numbers stay valid.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(finder) = &self.finder else {
            return Cow::Borrowed(text);
        };
        let mut ranges: Vec<(usize, usize)> = finder
            .find_overlapping_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect();
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
}
