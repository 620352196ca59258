//! The glob dialects Argo CD and its tools match with, each named for what it follows:
//!
//! - [`gobwas`]: Argo CD's `util/glob` (gobwas/glob): ignoreDifferences and diff customization
//!   groups and kinds (`util/argo/diff/ignore.go`, `util/argo/normalizers/diff_normalizer.go`),
//!   a directory source's `include`/`exclude` (`reposerver/repository/repository.go`), AppProject
//!   source repositories and destinations (`app_project_types.go`), RBAC objects;
//! - [`path`]: Go's `path.Match`/`filepath.Match`: AppProject resource lists and the git
//!   directory generator;
//! - [`files`]: doublestar-style path globs (`**` across folders) for the git files generator
//!   and value-file globs, matched with `globset`.
//!
//! Patterns that do not compile match nothing, as in Argo CD (it logs and moves on).

/// Whether a written value is a pattern rather than a literal for [`gobwas`].
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// A glob as Argo CD's `util/glob` compiles it (gobwas/glob): `*` stops at a separator, `**`
/// does not, `?`, `[a-z]`, `[!a]`, `{a,b}` and `\` escapes. A pattern that does not compile
/// matches nothing, as there.
pub fn gobwas(pattern: &str, text: &str, separator: Option<char>) -> bool {
    if let Some(answer) = plain_match(pattern, text, separator) {
        return answer;
    }
    match parse(pattern, Dialect::Gobwas) {
        Some(alternatives) => alternatives
            .iter()
            .any(|tokens| run(tokens, text, separator)),
        None => false,
    }
}

/// Go's `path.Match`/`filepath.Match`, which AppProject resource lists use for group, kind
/// and name and the git directory generator for paths: `*`
/// and `?` stop at `/`, classes negate with `^`; a malformed pattern matches nothing.
pub fn path(pattern: &str, text: &str) -> bool {
    PathPattern::new(pattern).matches(text)
}

/// A [`path`] pattern compiled once, for lists checked against many paths (`.helmignore`).
pub struct PathPattern {
    pattern: String,
    /// `None` for a pattern [`plain_match`] answers; an empty list for one that does not
    /// compile.
    alternatives: Option<Vec<Vec<Token>>>,
}

impl PathPattern {
    pub fn new(pattern: &str) -> PathPattern {
        let alternatives = plain_match(pattern, "", Some('/'))
            .is_none()
            .then(|| parse(pattern, Dialect::Filepath).unwrap_or_default());
        PathPattern {
            pattern: pattern.to_string(),
            alternatives,
        }
    }

    pub fn matches(&self, text: &str) -> bool {
        match &self.alternatives {
            None => plain_match(&self.pattern, text, Some('/')).unwrap_or(false),
            Some(alternatives) => alternatives.iter().any(|t| run(t, text, Some('/'))),
        }
    }
}

/// The answer for the patterns most lists hold, a literal or a lone `*`, without compiling
/// them: projects are checked for every Application and every kind it renders.
fn plain_match(pattern: &str, text: &str, separator: Option<char>) -> Option<bool> {
    if pattern == "*" {
        return Some(separator.is_none_or(|s| !text.contains(s)));
    }
    if pattern.contains(['*', '?', '[', ']', '{', '}', '\\', '^']) {
        return None;
    }
    Some(pattern == text)
}

#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    Gobwas,
    Filepath,
}

#[derive(Clone, Debug)]
enum Token {
    Lit(char),
    /// `*`: any run of non-separators.
    Any,
    /// `**`: any run at all.
    Super,
    Single,
    Class(bool, Vec<(char, char)>),
}

/// Alternatives (`{a,b}`) are expanded into separate token lists; past this many a pattern is
/// treated as not compiling rather than risk a blow-up.
const MAX_ALTERNATIVES: usize = 256;

fn parse(pattern: &str, dialect: Dialect) -> Option<Vec<Vec<Token>>> {
    let chars: Vec<char> = pattern.chars().collect();
    let (alts, rest) = parse_seq(&chars, dialect, false)?;
    rest.is_empty().then_some(alts)
}

/// Parses until the end, or (inside braces) until an unmatched `,` or `}`, which is left in
/// the returned rest.
fn parse_seq(
    mut s: &[char],
    dialect: Dialect,
    in_braces: bool,
) -> Option<(Vec<Vec<Token>>, &[char])> {
    let mut out: Vec<Vec<Token>> = vec![Vec::new()];
    let push = |out: &mut Vec<Vec<Token>>, t: Token| out.iter_mut().for_each(|v| v.push(t.clone()));
    while let Some((&c, rest)) = s.split_first() {
        match c {
            ',' | '}' if in_braces => return Some((out, s)),
            '\\' => {
                let (&e, rest) = rest.split_first()?;
                push(&mut out, Token::Lit(e));
                s = rest;
            }
            '*' => {
                if dialect == Dialect::Gobwas && rest.first() == Some(&'*') {
                    push(&mut out, Token::Super);
                    s = &rest[1..];
                } else {
                    push(&mut out, Token::Any);
                    s = rest;
                }
            }
            '?' => {
                push(&mut out, Token::Single);
                s = rest;
            }
            '[' => {
                let (token, rest) = parse_class(rest, dialect)?;
                push(&mut out, token);
                s = rest;
            }
            '{' if dialect == Dialect::Gobwas => {
                let mut choices: Vec<Vec<Token>> = Vec::new();
                let mut r = rest;
                loop {
                    let (alts, after) = parse_seq(r, dialect, true)?;
                    choices.extend(alts);
                    match after.split_first() {
                        Some((',', more)) => r = more,
                        Some(('}', more)) => {
                            r = more;
                            break;
                        }
                        _ => return None,
                    }
                }
                if out.len() * choices.len() > MAX_ALTERNATIVES {
                    return None;
                }
                out = out
                    .iter()
                    .flat_map(|prefix| {
                        choices.iter().map(move |c| {
                            let mut v = prefix.clone();
                            v.extend(c.iter().cloned());
                            v
                        })
                    })
                    .collect();
                s = r;
            }
            _ => {
                push(&mut out, Token::Lit(c));
                s = rest;
            }
        }
    }
    (!in_braces).then_some((out, s))
}

fn parse_class(mut s: &[char], dialect: Dialect) -> Option<(Token, &[char])> {
    let negator = if dialect == Dialect::Gobwas { '!' } else { '^' };
    let negated = s.first() == Some(&negator);
    if negated {
        s = &s[1..];
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let (&c, rest) = s.split_first()?;
        if c == ']' {
            // An empty class is malformed in both dialects.
            return (!first).then_some((Token::Class(negated, ranges), rest));
        }
        first = false;
        let (lo, rest) = if c == '\\' {
            let (&e, rest) = rest.split_first()?;
            (e, rest)
        } else {
            (c, rest)
        };
        if rest.first() == Some(&'-') && rest.get(1).is_some_and(|&h| h != ']') {
            let hi = rest[1];
            let (hi, rest) = if hi == '\\' {
                (*rest.get(2)?, &rest[3..])
            } else {
                (hi, &rest[2..])
            };
            ranges.push((lo, hi));
            s = rest;
        } else {
            ranges.push((lo, lo));
            s = rest;
        }
    }
}

/// Whether the literals `tokens` starts with are the characters `text` starts with.
fn literal_ends<'t>(
    tokens: impl Iterator<Item = &'t Token>,
    mut text: impl Iterator<Item = &'t char>,
) -> bool {
    tokens
        .map_while(|t| match t {
            Token::Lit(l) => Some(l),
            _ => None,
        })
        .all(|l| text.next() == Some(l))
}

/// Whether the tokens match the whole text, by dynamic programming (no backtracking blow-up).
fn run(tokens: &[Token], text: &str, separator: Option<char>) -> bool {
    let t: Vec<char> = text.chars().collect();
    // Literals at either end fix the characters there: most paths fail on them, without
    // the table below (`.helmignore` rules are tried on every file of a chart).
    if !literal_ends(tokens.iter(), t.iter()) || !literal_ends(tokens.iter().rev(), t.iter().rev())
    {
        return false;
    }
    let is_sep = |c: char| separator == Some(c);
    // ok[j]: tokens[i..] matches t[j..], filled from the last token back.
    let mut ok = vec![false; t.len() + 1];
    ok[t.len()] = true;
    for token in tokens.iter().rev() {
        let mut next = vec![false; t.len() + 1];
        for j in (0..=t.len()).rev() {
            let c = t.get(j).copied();
            next[j] = match token {
                Token::Any => ok[j] || (c.is_some_and(|c| !is_sep(c)) && next[j + 1]),
                Token::Super => ok[j] || (c.is_some() && next[j + 1]),
                Token::Single => c.is_some_and(|c| !is_sep(c)) && ok[j + 1],
                Token::Lit(l) => c == Some(*l) && ok[j + 1],
                Token::Class(neg, ranges) => {
                    c.is_some_and(|c| {
                        ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *neg && !is_sep(c)
                    }) && ok[j + 1]
                }
            };
        }
        ok = next;
    }
    ok[0]
}

/// A doublestar-style path glob: `literal_separator` when `*` must stay within one path
/// segment (generators' paths). `None` when the pattern does not compile.
pub fn files(pattern: &str, literal_separator: bool) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_follow_gobwas() {
        assert!(gobwas(
            "https://github.com/org/*",
            "https://github.com/org/repo",
            Some('/')
        ));
        assert!(!gobwas(
            "https://github.com/org/*",
            "https://github.com/org/a/b",
            Some('/')
        ));
        assert!(gobwas(
            "https://github.com/org/**",
            "https://github.com/org/a/b",
            Some('/')
        ));
        assert!(gobwas("team-*", "team-a", None));
        assert!(gobwas("team-{a,b}", "team-b", None));
        assert!(!gobwas("team-{a,b}", "team-c", None));
        assert!(gobwas("ns-[0-9]", "ns-7", None));
        assert!(gobwas("ns-[!0-9]", "ns-x", None));
        assert!(!gobwas("ns-[!0-9]", "ns-7", None));
        assert!(gobwas("a\\*", "a*", None));
        assert!(!gobwas("a\\*", "ab", None));
        assert!(gobwas("", "", None));
        assert!(!gobwas("", "x", None));
        // Malformed patterns match nothing.
        assert!(!gobwas("team-{a", "team-a", None));
        assert!(!gobwas("ns-[", "ns-[", None));
    }

    #[test]
    fn many_stars_do_not_blow_up() {
        let pattern = "*a".repeat(40);
        let text = "a".repeat(39);
        assert!(!gobwas(&pattern, &text, None));
        let braces = "{a,b}".repeat(20);
        assert!(!gobwas(&braces, "ab", None));
    }

    #[test]
    fn path_match_follows_go() {
        assert!(path("*", "Deployment"));
        assert!(path("", ""));
        assert!(!path("", "apps"));
        assert!(path("*.k8s.io", "networking.k8s.io"));
        assert!(path("[^a]pps", "bpps"));
        assert!(!path("{apps}", "apps"));
        assert!(path("{apps}", "{apps}"));
    }

    #[test]
    fn gobwas_without_separators_crosses_slashes() {
        for (p, t, want) in [
            ("*", "", true),
            ("*", "apps", true),
            ("a*s", "apps", true),
            ("*.k8s.io", "networking.k8s.io", true),
            ("*.k8s.io", "apps", false),
            ("?pps", "apps", true),
            ("?pps", "pps", false),
            ("a*x*s", "apps", false),
            ("app", "apps", false),
            ("*.yaml", "sub/dir/a.yaml", true),
            ("[ab]", "zzz", false),
            ("[ab]pps", "apps", true),
            ("{apps,batch}", "batch", true),
            ("apps/**/x.yaml", "apps/x.yaml", false),
            ("apps/**/x.yaml", "apps/a/b/x.yaml", true),
        ] {
            assert_eq!(gobwas(p, t, None), want, "{p} vs {t}");
        }
    }
}
