//! Argo CD's own string functions: `normalize` and `slugify`.

use super::strings::go_lower_char;
use super::{bool_arg, int_arg, str_arg};
use crate::render::template::value::Val;

/// Argo CD's `normalize` (`utils.SanitizeName`): lower-case, every character outside
/// `[-a-z0-9.]` becomes `-`, cut to 253 bytes, then `-` and `.` trimmed from both ends.
pub(super) fn sanitize_name(name: &str) -> String {
    let replaced: String = name
        .chars()
        .map(go_lower_char)
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cut = replaced.get(..replaced.len().min(253)).unwrap_or(&replaced);
    cut.trim_matches(['-', '.']).to_string()
}

/// Argo CD's `slugify [maxSize [smartTruncate]] name` (`utils.SlugifyName`): `normalize`,
/// then gosimple/slug with a 50-byte limit cut at a word boundary by default.
pub(super) fn slugify(args: &[Val]) -> Result<String, String> {
    let mut max_len: i64 = 50;
    let mut smart = true;
    let mut name = "";
    let last = args.len().checked_sub(1);
    for i in 0..args.len() {
        if Some(i) == last {
            name = str_arg(args, i)?;
        } else if i == 0 {
            max_len = int_arg(args, i)?;
        } else if i == 1 {
            smart = bool_arg(args, i)?;
        }
    }
    make_slug(&sanitize_name(name), max_len, smart)
}

/// gosimple/slug's `Make` for text that `normalize` already made ASCII and lower-case.
fn make_slug(text: &str, max_len: i64, smart: bool) -> Result<String, String> {
    let mut slug = text.trim();
    let len = i64::try_from(slug.len()).unwrap_or(i64::MAX);
    if !smart && len >= max_len {
        let cut = usize::try_from(max_len)
            .map_err(|_| format!("runtime error: slice bounds out of range [:{max_len}]"))?;
        slug = slug.get(..cut).unwrap_or(slug);
    }
    let mut collapsed = String::with_capacity(slug.len());
    for c in slug.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        if !(c == '-' && collapsed.ends_with('-')) {
            collapsed.push(c);
        }
    }
    let trimmed = collapsed.trim_matches(['-', '_']);
    match usize::try_from(max_len) {
        Ok(max) if smart && max > 0 && trimmed.len() > max => {
            // Cut at the last dash at or before the limit, else at the limit itself.
            let head = trimmed.get(..=max).unwrap_or(trimmed);
            let cut = head.rfind('-').unwrap_or(max);
            Ok(trimmed.get(..cut).unwrap_or(trimmed).to_string())
        }
        _ => Ok(trimmed.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::{check, go};

    #[test]
    fn normalize_and_slugify() {
        check(&[
            ("{{ normalize \"My_App.Name--\" }}", Ok("my-app.name")),
            ("{{ .name | normalize }}", Ok("myapp")),
            ("{{ slugify \"Hello World!\" }}", Ok("hello-world")),
            ("{{ slugify \"a.b..c\" }}", Ok("a-b-c")),
            (
                "{{ slugify \"aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk\" }}",
                Ok("aaaa-bbbb-cccc-dddd-eeee-ffff-gggg-hhhh-iiii-jjjj"),
            ),
            ("{{ slugify 7 \"hello world foo\" }}", Ok("hello")),
            ("{{ slugify 7 false \"hello world foo\" }}", Ok("hello-w")),
        ]);
        // Every character outside `[-a-z0-9.]` becomes a dash, letters with accents too.
        assert_eq!(
            go("{{ normalize \"-.Feature/JIRA-123 Ünïcode.\" }}"),
            "feature-jira-123-ünïcode".replace(['ü', 'ï'], "-")
        );
    }
}
