//! Words for people: counts with their noun, and the nearest spelling of a mistyped name. Every
//! stage may use these; they know nothing of the linter.

/// `1 file`, `2 files`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Levenshtein distance over characters, for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    strsim::levenshtein(a, b)
}

/// The closest candidate: an exact case-insensitive match, or one within a small edit distance.
pub fn did_you_mean<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    closest(word, candidates).map(|(c, _)| c)
}

/// The closest candidate when no other is as close: the only spelling a fix may pick.
pub fn only_match<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    closest(word, candidates).and_then(|(c, unique)| unique.then_some(c))
}

/// The first closest candidate, and whether it is the only one at that distance.
fn closest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<(&'c str, bool)> {
    // Case, `-` and `_` are the usual slips; compare without them.
    let want = folded_name(word);
    let mut best: Option<(usize, &str, bool)> = None;
    for c in candidates {
        let d = edit_distance(&want, &folded_name(c));
        let limit = (c.len().max(word.len()) / 4).clamp(1, 3);
        match best {
            _ if d > limit => {}
            Some((bd, _, _)) if d > bd => {}
            Some((bd, bc, _)) if d == bd => best = Some((bd, bc, false)),
            _ => best = Some((d, c, true)),
        }
    }
    best.map(|(_, c, unique)| (c, unique))
}

/// A name without the slips [`did_you_mean`] forgives first: ASCII case, `-` and `_`.
pub fn folded_name(s: &str) -> String {
    s.to_ascii_lowercase().replace(['_', '-'], "")
}

/// The length `s` has once the first `limit` matches of `old` (every one when `None`) are
/// replaced by `new`, as Go's `strings.Replace` and `str::replacen` make it (an empty `old`
/// matches before each character and at the end), counted without building it: a replacement
/// can be far larger than its inputs, so its size is checked or paid for first.
pub fn replaced_len(s: &str, old: &str, new: &str, limit: Option<usize>) -> usize {
    let found = if old.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(old).count()
    };
    let count = limit.map_or(found, |n| found.min(n));
    (s.len() - count * old.len()).saturating_add(count.saturating_mul(new.len()))
}

#[cfg(test)]
mod tests {
    use super::replaced_len;

    #[test]
    fn replaced_len_is_the_length_of_the_replacement() {
        for (s, old, new, limit) in [
            ("abcabc", "b", "xyz", None),
            ("abcabc", "b", "", Some(1)),
            ("héllo", "", "--", None),
            ("héllo", "", "--", Some(2)),
            ("aaaa", "aa", "b", None),
            ("", "", "x", None),
            ("abc", "z", "x", Some(0)),
        ] {
            let built = match limit {
                Some(n) => s.replacen(old, new, n),
                None => s.replace(old, new),
            };
            assert_eq!(
                replaced_len(s, old, new, limit),
                built.len(),
                "{s:?} {old:?} {new:?}"
            );
        }
    }
}
