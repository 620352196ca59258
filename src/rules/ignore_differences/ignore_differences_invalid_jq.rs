use super::path_items;
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use jaq_core::load::{lex, parse, span, Lexer, Parser};

rule! {
    id: "ignore-differences-invalid-jq",
    category: IgnoreDifferences,
    severity: Error,
    summary: "A jqPathExpressions entry that does not parse as jq: every ignore of the application stops working",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    for item in path_items(cx, obj, "jqPathExpressions") {
        let Some(err) = syntax_error(&item.text) else {
            continue;
        };
        let at = if err.at < item.text.len() {
            format!(
                " at column {} (`{}`)",
                err.at + 1,
                excerpt(&item.text[err.at..])
            )
        } else {
            " at its end".to_string()
        };
        out.report(item.span, format!("`{}` is not a jq expression Argo CD can parse: expected {}{at}", item.text, err.expected))
            .label("does not parse")
            .help("Argo CD fails the comparison of the whole application when one expression does not parse; fix the expression, or use `jsonPointers` for a plain path such as `/spec/replicas`");
    }
}

struct SyntaxError {
    expected: String,
    /// Byte offset in the expression where parsing failed.
    at: usize,
}

/// The first syntax error of an expression, parsed the way Argo CD parses it: wrapped in
/// `del(...)`. Only syntax is checked: jaq and Argo CD's gojq define different functions,
/// so an unknown function name is not an error here.
fn syntax_error(expr: &str) -> Option<SyntaxError> {
    const OPEN: &str = "del(";
    let code = format!("{OPEN}{expr})");
    let to_expr = |offset: usize| offset.saturating_sub(OPEN.len()).min(expr.len());
    let tokens = match Lexer::new(code.as_str()).lex() {
        Ok(tokens) => tokens,
        Err(errors) => {
            let (expected, found) = errors.into_iter().next()?;
            return Some(SyntaxError {
                expected: lex_expected(&expected),
                at: to_expr(span(&code, found).start),
            });
        }
    };
    let errors = Parser::new(&tokens).parse(|p| p.term()).err()?;
    let (expected, found) = errors.into_iter().next()?;
    let at = found.map_or(code.len(), |t| span(&code, t.as_str()).start);
    Some(SyntaxError {
        expected: parse_expected(&expected),
        at: to_expr(at),
    })
}

fn lex_expected(e: &lex::Expect<&str>) -> String {
    match e {
        lex::Expect::Delim(open) => {
            let close = match *open {
                "(" => ")",
                "[" => "]",
                "{" => "}",
                _ => "\"",
            };
            format!("a closing `{close}`")
        }
        lex::Expect::Digit => "a digit".into(),
        lex::Expect::Ident => "a name".into(),
        lex::Expect::Escape => "a string escape such as `\\n`".into(),
        lex::Expect::Unicode => "four hexadecimal digits after `\\u`".into(),
        _ => "a jq token".into(),
    }
}

fn parse_expected(e: &parse::Expect<&str>) -> String {
    match e {
        parse::Expect::Just(s) => format!("`{s}`"),
        // The wrapper closes the expression; anything after its end is extra input.
        parse::Expect::Nothing => "the end of the expression".into(),
        other => format!("a {}", other.as_str()),
    }
}

fn excerpt(rest: &str) -> String {
    let mut s: String = rest.chars().take(12).collect();
    if s.len() < rest.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::syntax_error;

    #[test]
    fn expressions_seen_in_argo_cd_configurations_parse() {
        for ok in [
            ".spec.replicas",
            ".webhooks[]?.clientConfig.caBundle",
            ".spec.template.spec.containers[] | select(.name == \"istio-proxy\")",
            ".metadata.annotations.\"example.com/team\"",
            ".metadata.annotations[\"example.com/team\"]",
            ".spec.template.spec.initContainers[]? | select(.name | startswith(\"vault\"))",
            ".. | select(.nullable?)",
            ".spec.conversion.webhook.clientConfig.caBundle // empty",
            ".metadata.annotations // {} | [keys[] | select(startswith(\"custom.\")) | [\"metadata\", \"annotations\", .]]",
            ".spec.rules[] | select(.host == \"\\(.x)\")",
            ".data | to_entries[] | select(.key | test(\"^tls\\\\.\"))",
            ".a[1:3]",
            "if .a then .b else .c end",
            ".items[] as $i | $i.x",
            "try .a catch .b",
        ]
        {
            assert!(syntax_error(ok).is_none(), "{ok}: {:?}", syntax_error(ok).map(|e| (e.expected, e.at)));
        }
    }

    #[test]
    fn syntax_errors_are_found_with_their_place() {
        let e = syntax_error(".spec.containers[").expect("unclosed bracket");
        assert_eq!(e.expected, "a closing `]`");
        let e = syntax_error(".spec | | .x").expect("double pipe");
        assert_eq!(e.at, 8, "at the second pipe");
        assert!(syntax_error("").is_some(), "del() needs an argument");
        assert!(
            syntax_error(".a ) | (.b").is_none(),
            "Argo CD wraps the text in del(...)"
        );
        assert!(syntax_error("select(.name == \"x\"").is_some());
        assert!(
            syntax_error(".a # comment").is_some(),
            "the comment swallows the closing parenthesis"
        );
        assert!(syntax_error(".spec.\"unterminated").is_some());
        assert!(
            syntax_error("/spec/replicas").is_some(),
            "a JSON pointer is not jq"
        );
    }
}
