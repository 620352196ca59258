//! Go's regular expressions (RE2 syntax, `regexp`), which Helm templates and CEL both use, on
//! top of the `regex` crate, which shares RE2's linear-time design.
//!
//! Where the two dialects differ, patterns are rewritten before compiling: Go's `\d`, `\w`,
//! `\s` and `\b` are ASCII-only (`\s` without the vertical tab), and a `[` inside a class is a
//! literal in Go, a nested class for the crate. The ASCII `\b` is also what keeps matching
//! on the fast engines: the crate's Unicode word boundary makes its lazy DFA give up on any
//! non-ASCII text.

use regex::{Regex, RegexBuilder};
use regex_automata::nfa::thompson;

/// How deep groups and repetitions may nest.
const NEST_LIMIT: u32 = 250;

/// Compiles a Go pattern, with at most `size_limit` bytes of compiled program and of lazy
/// DFA cache; errors read as Go's `regexp.Compile` ones.
pub fn compile(pattern: &str, size_limit: usize) -> Result<Regex, String> {
    if let Err(e) = regex_syntax::ast::parse::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(&rewrite_class_brackets(pattern))
    {
        // Spans index the rewritten text, which differs only inside classes: fine for messages.
        return Err(syntax_error(pattern, &e));
    }
    RegexBuilder::new(&rewrite(pattern))
        .size_limit(size_limit)
        .dfa_size_limit(size_limit)
        .nest_limit(NEST_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => syntax_error_text("expression too large", pattern),
            _ => syntax_error_text("invalid or unsupported Perl syntax", pattern),
        })
}

/// [`compile`], with the number of states of the pattern's automaton: what matching costs per
/// byte of text when the engine cannot use its DFA (see [`work`]).
pub fn compile_sized(pattern: &str, size_limit: usize) -> Result<(Regex, usize), String> {
    let re = compile(pattern, size_limit)?;
    let states = thompson::Compiler::new()
        .syntax(regex_automata::util::syntax::Config::new().nest_limit(NEST_LIMIT))
        .configure(thompson::Config::new().nfa_size_limit(Some(size_limit)))
        .build(&rewrite(pattern))
        .map_err(|_| syntax_error_text("expression too large", pattern))?
        .states()
        .len();
    Ok((re, states))
}

/// An upper bound on the steps matching `bytes` of text takes with a pattern of `states`
/// (see [`compile`]): the lazy DFA reads each byte once, but may give up on a pattern whose
/// DFA would be large, and the engines it falls back on advance every state at every byte.
pub fn work(bytes: usize, states: usize) -> usize {
    bytes.saturating_mul(states.max(1))
}

/// Go's `regexp` error text: `error parsing regexp: CODE: `EXPR``.
pub fn syntax_error_text(code: &str, expr: &str) -> String {
    format!("error parsing regexp: {code}: `{expr}`")
}

/// Go's `syntax.ErrorCode` text for the crate's parse error, with the part Go quotes.
fn syntax_error(pattern: &str, e: &regex_syntax::ast::Error) -> String {
    use regex_syntax::ast::ErrorKind as K;
    let span = e.span();
    let text = e.pattern();
    let at = |from: usize, to: usize| text.get(from..to).unwrap_or("").to_string();
    let spanned = at(span.start.offset, span.end.offset);
    let (code, expr) = match e.kind() {
        K::GroupUnclosed => ("missing closing )", pattern.to_string()),
        K::GroupUnopened => ("unexpected )", pattern.to_string()),
        K::ClassUnclosed => ("missing closing ]", at(span.start.offset, text.len())),
        K::ClassRangeInvalid => ("invalid character class range", spanned),
        K::RepetitionMissing => ("missing argument to repetition operator", spanned),
        K::RepetitionCountInvalid
        | K::RepetitionCountUnclosed
        | K::RepetitionCountDecimalEmpty
        | K::DecimalInvalid => ("invalid repeat count", spanned),
        K::EscapeUnexpectedEof => ("trailing backslash at end of expression", String::new()),
        K::EscapeUnrecognized
        | K::EscapeHexEmpty
        | K::EscapeHexInvalid
        | K::EscapeHexInvalidDigit
        | K::ClassEscapeInvalid => ("invalid escape sequence", spanned),
        K::GroupNameDuplicate { .. } => ("duplicate capture group name", spanned),
        K::GroupNameEmpty | K::GroupNameInvalid | K::GroupNameUnexpectedEof => {
            ("invalid named capture", spanned)
        }
        K::NestLimitExceeded(_) => ("expression nests too deeply", pattern.to_string()),
        K::UnicodeClassInvalid => ("invalid character class range", spanned),
        _ => ("invalid or unsupported Perl syntax", spanned),
    };
    syntax_error_text(code, &expr)
}

/// Inside a class Go reads `[` as itself, and `&&`, `~~`, `--` as characters; the crate would
/// nest or combine classes.
fn rewrite_class_brackets(pattern: &str) -> String {
    rewrite_with(pattern, false)
}

/// The pattern in the crate's dialect, with Go's meaning.
fn rewrite(pattern: &str) -> String {
    rewrite_with(pattern, true)
}

fn rewrite_with(pattern: &str, classes: bool) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    // Inside a bracketed class; the position right after its `[` or `[^` (where `]` is literal).
    let mut in_class = false;
    let mut class_start = false;
    // Right after `\w`, `\d`, `[:alpha:]`... inside a class: Go (Perl flags) reads a `-` there
    // as a character, since a class cannot start a range; the crate refuses it.
    let mut after_class = false;
    while let Some(c) = chars.next() {
        let at_start = std::mem::take(&mut class_start);
        let follows_class = std::mem::take(&mut after_class);
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let ascii = match next {
                    'd' => Some("[0-9]"),
                    'D' => Some("[^0-9]"),
                    'w' => Some("[0-9A-Za-z_]"),
                    'W' => Some("[^0-9A-Za-z_]"),
                    's' => Some("[\\t\\n\\x0C\\r ]"),
                    'S' => Some("[^\\t\\n\\x0C\\r ]"),
                    'b' if !in_class => Some("(?-u:\\b)"),
                    'B' if !in_class => Some("(?-u:\\B)"),
                    _ => None,
                };
                after_class = in_class && matches!(next, 'd' | 'D' | 'w' | 'W' | 's' | 'S');
                match ascii.filter(|_| classes) {
                    Some(class) => out.push_str(class),
                    None => {
                        out.push('\\');
                        out.push(next);
                    }
                }
            }
            '[' if !in_class => {
                out.push('[');
                in_class = true;
                class_start = true;
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class `[:alpha:]`: copied whole.
                out.push('[');
                for p in chars.by_ref() {
                    out.push(p);
                    if p == ']' {
                        break;
                    }
                }
                after_class = true;
            }
            '[' => out.push_str("\\["),
            ']' if in_class && !at_start => {
                out.push(']');
                in_class = false;
            }
            ']' if in_class => out.push_str("\\]"),
            '-' if follows_class && chars.peek().is_some_and(|&n| n != ']') => {
                out.push_str("\\-");
            }
            '&' | '~' | '-' if in_class && chars.peek() == Some(&c) => {
                chars.next();
                out.push('\\');
                out.push(c);
                if c == '-' {
                    // Go reads `a--` as a range ending at `-`.
                    out.push('-');
                } else {
                    out.push('\\');
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}
