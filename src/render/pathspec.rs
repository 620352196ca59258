//! Git's pathspecs, as `git ls-files -- <pattern>` reads them: how Argo CD's git files
//! generator lists files by default (`util/git/client.go`, `LsFiles`, v3.5.1, without
//! `--enable-new-git-file-globbing`).
//!
//! A pathspec without magic matches a path that equals it or lies below it (`apps` lists
//! every file under `apps/`), and otherwise as a wildcard pattern matched without
//! `WM_PATHNAME` (git `dir.c`, `git_fnmatch`): `*` and `**` match any run of characters, `/`
//! included; `?` matches any one character, `/` included; `[...]` is a class (`!` or `^`
//! negates, `a-z` ranges, `[:alpha:]` and the other POSIX names); `\` makes the next
//! character literal. There are no braces. A malformed class matches nothing.

/// Whether `git ls-files -- <pattern>`, run at the repository root, lists `path` (relative to
/// the root, written with `/`).
pub fn matches(pattern: &str, path: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    // A pathspec matches its own path and, as a leading directory, everything below it,
    // before it is read as a pattern.
    if let Some(rest) = path.strip_prefix(pattern) {
        if rest.is_empty() || pattern.ends_with('/') || rest.starts_with('/') {
            return true;
        }
    }
    if !pattern.contains(['*', '?', '[', '\\']) {
        return false;
    }
    match parse(pattern) {
        Some(tokens) => run(&tokens, path),
        None => false,
    }
}

#[derive(Debug)]
enum Token {
    Lit(char),
    /// `*` or `**`: any run of characters, `/` included.
    Any,
    /// `?`: any one character.
    One,
    Class {
        negated: bool,
        items: Vec<Item>,
    },
}

#[derive(Debug)]
enum Item {
    Range(char, char),
    Posix(fn(char) -> bool),
}

fn parse(pattern: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                // A trailing backslash matches nothing: there is no character to compare.
                out.push(Token::Lit(*chars.get(i + 1)?));
                i += 2;
            }
            '*' => {
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                out.push(Token::Any);
            }
            '?' => {
                out.push(Token::One);
                i += 1;
            }
            '[' => {
                let (token, next) = class(&chars, i + 1)?;
                out.push(token);
                i = next;
            }
            c => {
                out.push(Token::Lit(c));
                i += 1;
            }
        }
    }
    Some(out)
}

/// The class that starts after the `[` at `chars[start - 1]`, and the position after it.
fn class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    let first = i;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && i > first {
            return Some((Token::Class { negated, items }, i + 1));
        }
        if c == '[' && chars.get(i + 1) == Some(&':') {
            // A POSIX name runs to the first `]`, which must follow a `:`; otherwise the `[`
            // is an ordinary member.
            let close = i + 2 + chars[i + 2..].iter().position(|&c| c == ']')?;
            if close > i + 2 && chars[close - 1] == ':' {
                let name: String = chars[i + 2..close - 1].iter().collect();
                items.push(Item::Posix(posix(&name)?));
                i = close + 1;
                continue;
            }
        }
        let lo = if c == '\\' {
            i += 1;
            *chars.get(i)?
        } else {
            c
        };
        i += 1;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&h| h != ']') {
            let mut hi = chars[i + 1];
            i += 2;
            if hi == '\\' {
                hi = *chars.get(i)?;
                i += 1;
            }
            items.push(Item::Range(lo, hi));
        } else {
            items.push(Item::Range(lo, lo));
        }
    }
}

fn posix(name: &str) -> Option<fn(char) -> bool> {
    Some(match name {
        "alnum" => |c: char| c.is_ascii_alphanumeric(),
        "alpha" => |c: char| c.is_ascii_alphabetic(),
        "blank" => |c: char| c == ' ' || c == '\t',
        "cntrl" => |c: char| c.is_ascii_control(),
        "digit" => |c: char| c.is_ascii_digit(),
        "graph" => |c: char| c.is_ascii_graphic(),
        "lower" => |c: char| c.is_ascii_lowercase(),
        "print" => |c: char| c.is_ascii_graphic() || c == ' ',
        "punct" => |c: char| c.is_ascii_punctuation(),
        "space" => |c: char| c.is_ascii_whitespace() || c == '\x0b',
        "upper" => |c: char| c.is_ascii_uppercase(),
        "xdigit" => |c: char| c.is_ascii_hexdigit(),
        _ => return None,
    })
}

/// Whether the tokens match the whole text, by dynamic programming over positions.
fn run(tokens: &[Token], text: &str) -> bool {
    let t: Vec<char> = text.chars().collect();
    // ok[j]: the tokens after the current one match t[j..].
    let mut ok = vec![false; t.len() + 1];
    ok[t.len()] = true;
    for token in tokens.iter().rev() {
        let mut next = vec![false; t.len() + 1];
        for j in (0..=t.len()).rev() {
            let c = t.get(j).copied();
            next[j] = match token {
                Token::Any => ok[j] || (c.is_some() && next[j + 1]),
                Token::One => c.is_some() && ok[j + 1],
                Token::Lit(l) => c == Some(*l) && ok[j + 1],
                Token::Class { negated, items } => {
                    c.is_some_and(|c| {
                        items.iter().any(|item| match item {
                            Item::Range(lo, hi) => *lo <= c && c <= *hi,
                            Item::Posix(f) => f(c),
                        }) != *negated
                    }) && ok[j + 1]
                }
            };
        }
        ok = next;
    }
    ok[0]
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_star_crosses_directories() {
        assert!(matches("apps/*/config.json", "apps/web/config.json"));
        assert!(matches("apps/*/config.json", "apps/eu/web/config.json"));
        assert!(!matches("apps/*/config.json", "apps/config.json"));
        assert!(matches("*.json", "apps/web/config.json"));
        // Without WM_PATHNAME `**/` is a plain run of characters: it needs its slash.
        assert!(matches("apps/**/config.json", "apps/a/b/config.json"));
        assert!(!matches("apps/**/config.json", "apps/config.json"));
        assert!(matches("apps/?eb/config.json", "apps/web/config.json"));
        assert!(matches("a?b", "a/b"));
    }

    #[test]
    fn a_plain_pathspec_names_a_file_or_a_leading_directory() {
        assert!(matches("apps/web/config.json", "apps/web/config.json"));
        assert!(matches("apps/web", "apps/web/config.json"));
        assert!(matches("apps/web/", "apps/web/config.json"));
        assert!(!matches("apps/we", "apps/web/config.json"));
        assert!(!matches("apps/web/config.json", "apps/web/config.json.bak"));
    }

    #[test]
    fn classes_and_escapes() {
        assert!(matches("env/[ps]*/c.yaml", "env/prod/c.yaml"));
        assert!(!matches("env/[!ps]*/c.yaml", "env/prod/c.yaml"));
        assert!(matches("env/[^ps]*/c.yaml", "env/dev/c.yaml"));
        assert!(matches("env/[a-c]/c.yaml", "env/b/c.yaml"));
        assert!(matches("env/[]]/c.yaml", "env/]/c.yaml"));
        assert!(matches("env/[[:digit:]]/c.yaml", "env/7/c.yaml"));
        assert!(matches(r"env/\*/c.yaml", "env/*/c.yaml"));
        assert!(!matches(r"env/\*/c.yaml", "env/x/c.yaml"));
        // Malformed: an open class, an unknown POSIX name, a trailing backslash.
        assert!(!matches("env/[ab/c.yaml", "env/a/c.yaml"));
        assert!(!matches("env/[[:nope:]]/c.yaml", "env/a/c.yaml"));
        assert!(!matches("env/*\\", "env/a\\"));
        // No braces in git.
        assert!(!matches("env/{a,b}/c.yaml", "env/a/c.yaml"));
        assert!(matches("env/{a,b}/c.yaml", "env/{a,b}/c.yaml"));
    }
}
