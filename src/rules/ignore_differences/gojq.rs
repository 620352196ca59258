//! What Argo CD's jq (github.com/itchyny/gojq v0.12.19, pinned by argo-cd v3.5.1's go.mod)
//! does with a `jqPathExpressions` item: `gojq.Parse("del(<item>)")`, then `gojq.Compile`
//! without options (`util/argo/normalizers/diff_normalizer.go`).
//!
//! The syntax is read with jaq's parser, whose grammar is close to gojq's; the names are then
//! resolved the way gojq's compiler does (`compiler.go`): functions by name and argument count
//! in the enclosing definitions, then gojq's builtins (`builtin.jq`, and the native functions
//! of `func.go`); variables and labels in the enclosing bindings. Where the two grammars
//! differ, the check errs on the side of silence: jaq-only syntax that gojq rejects is not
//! reported unless listed below, and gojq-only syntax (`?//`) is not checked at all.
//!
//! Parsing is bounded: an expression longer than [`MAX_LEN`] or with more than [`MAX_NESTING`]
//! constructs that can nest is not checked, so a hostile item can neither exhaust the stack of
//! the recursive parser nor take long.

use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::load::{lex, parse, span, Lexer, Parser};
use jaq_core::path::Part;

/// Longest expression checked, in bytes.
pub const MAX_LEN: usize = 4096;
/// Most constructs that can nest (brackets, `|`, prefix keywords, unary minus) checked.
pub const MAX_NESTING: usize = 128;

/// Why gojq rejects an expression.
#[derive(Debug, PartialEq, Eq)]
pub enum JqError {
    /// `gojq.Parse` fails: what was expected, and the byte offset in the expression.
    Syntax { expected: String, at: usize },
    /// `gojq.Compile` fails, with gojq's own message (`function not defined: selct/1`).
    Compile(String),
}

/// Why Argo CD cannot use `expr` as a `jqPathExpressions` item, if it cannot.
pub fn check(expr: &str) -> Option<JqError> {
    if !checkable(expr) {
        return None;
    }
    const OPEN: &str = "del(";
    let code = format!("{OPEN}{expr})");
    let to_expr = |offset: usize| offset.saturating_sub(OPEN.len()).min(expr.len());
    let tokens = match Lexer::new(code.as_str()).lex() {
        Ok(tokens) => tokens,
        Err(_) if jaq_only_rejects(expr) => return None,
        Err(errors) => {
            let (expected, found) = errors.into_iter().next()?;
            return Some(JqError::Syntax {
                expected: lex_expected(&expected),
                at: to_expr(span(&code, found).start),
            });
        }
    };
    let term = match Parser::new(&tokens).parse(|p| p.term()) {
        Ok(term) => term,
        Err(_) if jaq_only_rejects(expr) => return None,
        Err(errors) => {
            let (expected, found) = errors.into_iter().next()?;
            let at = found.map_or(code.len(), |t| span(&code, t.as_str()).start);
            return Some(JqError::Syntax {
                expected: parse_expected(&expected),
                at: to_expr(at),
            });
        }
    };
    let mut scope = Scope::default();
    scope.walk(&term, 0).err().map(JqError::Compile)
}

/// Whether the expression is small enough, and written in syntax both grammars share.
fn checkable(expr: &str) -> bool {
    if expr.len() > MAX_LEN || expr.contains("?//") {
        return false;
    }
    // Every construct that makes the parser (or the walk below) go one level deeper costs one;
    // brackets inside string literals are counted too, which only overestimates.
    let mut nesting = expr
        .bytes()
        .filter(|b| matches!(b, b'(' | b'[' | b'{' | b'|' | b'-' | b','))
        .count();
    nesting += expr
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            matches!(
                *w,
                "if" | "elif" | "try" | "reduce" | "foreach" | "def" | "label" | "as"
            )
        })
        .count();
    nesting <= MAX_NESTING
}

/// Whether `expr` uses a form gojq reads and jaq's parser does not: a unary `+` (`+1`), a
/// number with a leading or trailing dot (`.5`, `1.`). A syntax error in such an expression
/// may be jaq's alone, so it is not reported.
fn jaq_only_rejects(expr: &str) -> bool {
    let b = expr.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // The last non-blank byte before `i`.
    let before = |i: usize| {
        b[..i]
            .iter()
            .rev()
            .find(|c| !c.is_ascii_whitespace())
            .copied()
    };
    let mut in_string = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'+' if before(i).is_none_or(|p| b"(|,[:;=<>!+-*/%".contains(&p)) => return true,
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit)
                && (i == 0
                    || !(word(b[i - 1]) || matches!(b[i - 1], b']' | b')' | b'"' | b'.'))) =>
            {
                return true
            }
            b'.' if i > 0
                && b[i - 1].is_ascii_digit()
                && !b.get(i + 1).is_some_and(u8::is_ascii_digit) =>
            {
                // `1.` when the digits before it are a number, not the end of a name.
                let start = b[..i]
                    .iter()
                    .rposition(|c| !c.is_ascii_digit())
                    .map_or(0, |p| p + 1);
                if start == 0 || !(word(b[start - 1]) || b[start - 1] == b'.') {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
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

/// gojq v0.12.19's builtins: name and the argument counts it accepts, from `builtin.jq` (the
/// definitions) and the `internalFuncs` table of `func.go` (native functions; `input` is
/// left out: without an input iterator, which Argo CD does not give, compiling it fails).
const BUILTINS: &[(&str, &[usize])] = &[
    // builtin.jq
    ("map", &[1]),
    ("add", &[0, 1]),
    ("map_values", &[1]),
    ("in", &[1]),
    ("not", &[0]),
    ("select", &[1]),
    ("recurse", &[0, 1, 2]),
    ("to_entries", &[0]),
    ("from_entries", &[0]),
    ("with_entries", &[1]),
    ("while", &[2]),
    ("until", &[2]),
    ("repeat", &[1]),
    ("range", &[1, 2, 3]),
    ("min_by", &[1]),
    ("max_by", &[1]),
    ("sort_by", &[1]),
    ("group_by", &[1]),
    ("unique_by", &[1]),
    ("arrays", &[0]),
    ("objects", &[0]),
    ("iterables", &[0]),
    ("booleans", &[0]),
    ("numbers", &[0]),
    ("finites", &[0]),
    ("normals", &[0]),
    ("strings", &[0]),
    ("nulls", &[0]),
    ("values", &[0]),
    ("scalars", &[0]),
    ("combinations", &[0, 1]),
    ("walk", &[1]),
    ("first", &[0, 1]),
    ("last", &[0, 1]),
    ("isempty", &[1]),
    ("all", &[0, 1, 2]),
    ("any", &[0, 1, 2]),
    ("limit", &[2]),
    ("skip", &[2]),
    ("nth", &[1, 2]),
    ("truncate_stream", &[1]),
    ("fromstream", &[1]),
    ("tostream", &[0]),
    ("del", &[1]),
    ("paths", &[0, 1]),
    ("pick", &[1]),
    ("fromdateiso8601", &[0]),
    ("todateiso8601", &[0]),
    ("fromdate", &[0]),
    ("todate", &[0]),
    ("match", &[1, 2]),
    ("test", &[1, 2]),
    ("capture", &[1, 2]),
    ("scan", &[1, 2]),
    ("splits", &[1, 2]),
    ("split", &[1, 2]),
    ("sub", &[2, 3]),
    ("gsub", &[2, 3]),
    ("INDEX", &[1, 2]),
    ("JOIN", &[2, 3, 4]),
    ("IN", &[1, 2]),
    ("_assign", &[2]),
    ("_modify", &[2]),
    ("_last", &[1]),
    // func.go internalFuncs
    ("empty", &[0]),
    ("path", &[1]),
    ("env", &[0]),
    ("builtins", &[0]),
    ("modulemeta", &[0]),
    ("abs", &[0]),
    ("length", &[0]),
    ("utf8bytelength", &[0]),
    ("keys", &[0]),
    ("has", &[1]),
    ("toboolean", &[0]),
    ("tonumber", &[0]),
    ("tostring", &[0]),
    ("type", &[0]),
    ("reverse", &[0]),
    ("contains", &[1]),
    ("inside", &[1]),
    ("indices", &[1]),
    ("index", &[1]),
    ("rindex", &[1]),
    ("startswith", &[1]),
    ("endswith", &[1]),
    ("ltrimstr", &[1]),
    ("rtrimstr", &[1]),
    ("trimstr", &[1]),
    ("ltrim", &[0]),
    ("rtrim", &[0]),
    ("trim", &[0]),
    ("explode", &[0]),
    ("implode", &[0]),
    ("join", &[1]),
    ("ascii_downcase", &[0]),
    ("ascii_upcase", &[0]),
    ("tojson", &[0]),
    ("fromjson", &[0]),
    ("format", &[1]),
    ("_tohtml", &[0]),
    ("_touri", &[0]),
    ("_tourid", &[0]),
    ("_tocsv", &[0]),
    ("_totsv", &[0]),
    ("_tosh", &[0]),
    ("_tobase64", &[0]),
    ("_tobase64d", &[0]),
    ("_index", &[2]),
    ("_slice", &[3]),
    ("_plus", &[0]),
    ("_negate", &[0]),
    ("_add", &[2]),
    ("_subtract", &[2]),
    ("_multiply", &[2]),
    ("_divide", &[2]),
    ("_modulo", &[2]),
    ("_alternative", &[2]),
    ("_equal", &[2]),
    ("_notequal", &[2]),
    ("_greater", &[2]),
    ("_less", &[2]),
    ("_greatereq", &[2]),
    ("_lesseq", &[2]),
    ("flatten", &[0, 1]),
    ("_range", &[3]),
    ("min", &[0]),
    ("_min_by", &[1]),
    ("max", &[0]),
    ("_max_by", &[1]),
    ("sort", &[0]),
    ("_sort_by", &[1]),
    ("_group_by", &[1]),
    ("unique", &[0]),
    ("_unique_by", &[1]),
    ("frexp", &[0]),
    ("modf", &[0]),
    ("atan2", &[2]),
    ("copysign", &[2]),
    ("drem", &[2]),
    ("fdim", &[2]),
    ("fmax", &[2]),
    ("fmin", &[2]),
    ("fmod", &[2]),
    ("hypot", &[2]),
    ("jn", &[2]),
    ("nextafter", &[2]),
    ("nexttoward", &[2]),
    ("remainder", &[2]),
    ("ldexp", &[2]),
    ("scalb", &[2]),
    ("scalbln", &[2]),
    ("yn", &[2]),
    ("pow", &[2]),
    ("fma", &[3]),
    ("infinite", &[0]),
    ("isfinite", &[0]),
    ("isinfinite", &[0]),
    ("nan", &[0]),
    ("isnan", &[0]),
    ("isnormal", &[0]),
    ("setpath", &[2]),
    ("delpaths", &[1]),
    ("getpath", &[1]),
    ("transpose", &[0]),
    ("bsearch", &[1]),
    ("gmtime", &[0]),
    ("localtime", &[0]),
    ("mktime", &[0]),
    ("strftime", &[1]),
    ("strflocaltime", &[1]),
    ("strptime", &[1]),
    ("now", &[0]),
    ("_match", &[3]),
    ("_captures", &[0]),
    ("error", &[0, 1]),
    ("halt", &[0]),
    ("halt_error", &[0, 1]),
];

/// func.go's one-argument math functions (`mathFunc`), all of arity 0.
const MATH0: &[&str] = &[
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "floor",
    "round",
    "nearbyint",
    "rint",
    "ceil",
    "trunc",
    "significand",
    "fabs",
    "sqrt",
    "cbrt",
    "exp",
    "exp10",
    "exp2",
    "expm1",
    "log",
    "log10",
    "log1p",
    "log2",
    "logb",
    "gamma",
    "tgamma",
    "lgamma",
    "erf",
    "erfc",
    "j0",
    "j1",
    "y0",
    "y1",
];

fn builtin(name: &str, arity: usize) -> bool {
    BUILTINS
        .iter()
        .any(|(n, a)| *n == name && a.contains(&arity))
        || arity == 0 && MATH0.contains(&name)
}

/// One name bound where the walk is.
enum Bound<'s> {
    /// A function `name/arity` (a `def`), or a filter parameter (`def f(g): ...`, arity 0).
    Func(&'s str, usize),
    /// A variable, with its `$`.
    Var(&'s str),
    /// A label, with its `$`.
    Label(&'s str),
}

#[derive(Default)]
struct Scope<'s> {
    bound: Vec<Bound<'s>>,
}

impl<'s> Scope<'s> {
    fn has_func(&self, name: &str, arity: usize) -> bool {
        self.bound
            .iter()
            .any(|b| matches!(b, Bound::Func(n, a) if *n == name && *a == arity))
    }

    fn has_var(&self, name: &str) -> bool {
        self.bound
            .iter()
            .any(|b| matches!(b, Bound::Var(n) if *n == name))
    }

    fn has_label(&self, name: &str) -> bool {
        self.bound
            .iter()
            .any(|b| matches!(b, Bound::Label(n) if *n == name))
    }

    /// Walks `t` with what is bound at this point, and restores the bindings afterwards.
    fn nested(&mut self, t: &Term<&'s str>, depth: usize) -> Result<(), String> {
        let mark = self.bound.len();
        let r = self.walk(t, depth + 1);
        self.bound.truncate(mark);
        r
    }

    fn bind_pattern(&mut self, p: &Pattern<&'s str>, depth: usize) -> Result<(), String> {
        let mut stack = vec![p];
        while let Some(p) = stack.pop() {
            match p {
                Pattern::Var(x) => self.bound.push(Bound::Var(x)),
                Pattern::Arr(ps) => stack.extend(ps),
                Pattern::Obj(entries) => {
                    for (key, p) in entries {
                        self.nested(key, depth)?;
                        stack.push(p);
                    }
                }
            }
        }
        Ok(())
    }

    fn call(&mut self, name: &'s str, args: &[Term<&'s str>], depth: usize) -> Result<(), String> {
        for a in args {
            self.nested(a, depth)?;
        }
        let arity = args.len();
        if let Some(format) = name.strip_prefix('@') {
            // `@base64` alone is a term; gojq's grammar gives formats no arguments. An unknown
            // format is an error only when it runs (`format("...")`).
            return if arity == 0 {
                Ok(())
            } else {
                Err(format!("a format such as `@{format}` takes no arguments"))
            };
        }
        if arity == 0 && matches!(name, "null" | "true" | "false") {
            return Ok(());
        }
        if self.has_func(name, arity) || builtin(name, arity) {
            return Ok(());
        }
        Err(match name {
            "input" | "inputs" if arity == 0 => "input(s)/0 is not allowed".to_string(),
            _ => format!("function not defined: {name}/{arity}"),
        })
    }

    fn walk(&mut self, t: &Term<&'s str>, depth: usize) -> Result<(), String> {
        if depth > 4 * MAX_NESTING {
            // Cannot happen for a checked expression; stop rather than recurse further.
            return Ok(());
        }
        match t {
            Term::Id | Term::Recurse | Term::Num(_) => Ok(()),
            Term::Str(_, parts) => {
                for part in parts {
                    if let lex::StrPart::Term(t) = part {
                        self.nested(t, depth)?;
                    }
                }
                Ok(())
            }
            Term::Arr(a) => a.as_deref().map_or(Ok(()), |a| self.nested(a, depth)),
            Term::Obj(entries) => {
                for (k, v) in entries {
                    self.nested(k, depth)?;
                    if let Some(v) = v {
                        self.nested(v, depth)?;
                    }
                }
                Ok(())
            }
            Term::Neg(t) => self.nested(t, depth),
            Term::BinOp(l, op, r) => {
                self.nested(l, depth)?;
                match op {
                    BinaryOp::Pipe(Some(p)) => {
                        let mark = self.bound.len();
                        let result = self
                            .bind_pattern(p, depth)
                            .and_then(|()| self.walk(r, depth + 1));
                        self.bound.truncate(mark);
                        result
                    }
                    _ => self.nested(r, depth),
                }
            }
            Term::Label(x, body) => {
                let mark = self.bound.len();
                self.bound.push(Bound::Label(x));
                let r = self.walk(body, depth + 1);
                self.bound.truncate(mark);
                r
            }
            Term::Break(x) => {
                if self.has_label(x) {
                    Ok(())
                } else {
                    Err(format!("label not defined: {x}"))
                }
            }
            Term::Fold(kind, xs, p, args) => {
                let expected: &[usize] = if *kind == "reduce" { &[2] } else { &[2, 3] };
                if !expected.contains(&args.len()) {
                    return Err(format!(
                        "`{kind}` takes {} in its parentheses",
                        if *kind == "reduce" {
                            "an initial value and an update, separated by `;`"
                        } else {
                            "an initial value, an update and optionally an extraction, separated by `;`"
                        }
                    ));
                }
                self.nested(xs, depth)?;
                let mark = self.bound.len();
                let result = self
                    .bind_pattern(p, depth)
                    .and_then(|()| args.iter().try_for_each(|a| self.nested(a, depth)));
                self.bound.truncate(mark);
                result
            }
            Term::TryCatch(t, c) => {
                self.nested(t, depth)?;
                c.as_deref().map_or(Ok(()), |c| self.nested(c, depth))
            }
            Term::IfThenElse(branches, otherwise) => {
                for (cond, then) in branches {
                    self.nested(cond, depth)?;
                    self.nested(then, depth)?;
                }
                otherwise
                    .as_deref()
                    .map_or(Ok(()), |e| self.nested(e, depth))
            }
            Term::Def(defs, body) => {
                let mark = self.bound.len();
                let result = (|| {
                    for d in defs {
                        if d.name.starts_with('@') {
                            return Err(format!("`{}` is not a function name", d.name));
                        }
                        // Visible in its own body (recursion) and after it.
                        self.bound.push(Bound::Func(d.name, d.args.len()));
                        let inner = self.bound.len();
                        for a in &d.args {
                            // `def f($x)` binds `$x` and the filter `x`; `def f(g)` binds `g`.
                            let name = a.strip_prefix('$').unwrap_or(a);
                            self.bound.push(Bound::Func(name, 0));
                            if a.starts_with('$') {
                                self.bound.push(Bound::Var(a));
                            }
                        }
                        let r = self.walk(&d.body, depth + 1);
                        self.bound.truncate(inner);
                        r?;
                    }
                    self.walk(body, depth + 1)
                })();
                self.bound.truncate(mark);
                result
            }
            Term::Call(name, args) => self.call(name, args, depth),
            Term::Var(x) => {
                if self.has_var(x) || *x == "$ENV" {
                    Ok(())
                } else {
                    Err(format!("variable not defined: {x}"))
                }
            }
            Term::Path(base, path) => {
                self.nested(base, depth)?;
                for (part, _) in &path.0 {
                    match part {
                        Part::Index(i) => self.nested(i, depth)?,
                        Part::Range(from, to) => {
                            for t in [from, to].into_iter().flatten() {
                                self.nested(t, depth)?;
                            }
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{check, JqError};
    use std::time::{Duration, Instant};

    fn compile_error(expr: &str) -> Option<String> {
        match check(expr) {
            Some(JqError::Compile(m)) => Some(m),
            _ => None,
        }
    }

    #[test]
    fn expressions_seen_in_argo_cd_configurations_compile() {
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
            ".items[] as [$a, {b: $c, $d}] | $a, $c, $d",
            "try .a catch .b",
            "reduce .[] as $x (0; . + $x)",
            "foreach .[] as $x (0; . + $x; [$x, .])",
            "label $out | .[] | if . then break $out else . end",
            "def f(g; $x): g | x + $x; f(.a; 1)",
            "def r: if . then r else . end; r",
            ".spec.template.spec.containers[].env[]? | select(.name == \"A\" and (.value | test(\"x\"; \"i\")))",
            ".metadata.labels | with_entries(select(.key | ascii_downcase | contains(\"x\")))",
            ".a | tostring | @base64",
            "@json \"x\\(.a)\"",
            "$ENV.HOME, env.HOME",
            ".spec.x | limit(1; .[]), first(.[]), getpath([\"a\"]), paths, splits(\"a\")",
            ".x | sin, pow(.; 2), fma(1; 2; 3), significand",
            "null, true, false, not",
            ".x | sub(\"a\"; \"b\"; \"g\"), gsub(\"a\"; \"b\"), ltrimstr(\"v\"), trimstr(\"x\")",
        ] {
            assert_eq!(check(ok), None, "{ok}");
        }
    }

    #[test]
    fn syntax_errors_are_found_with_their_place() {
        let Some(JqError::Syntax { expected, .. }) = check(".spec.containers[") else {
            panic!("unclosed bracket");
        };
        assert_eq!(expected, "a closing `]`");
        let Some(JqError::Syntax { at, .. }) = check(".spec | | .x") else {
            panic!("double pipe");
        };
        assert_eq!(at, 8, "at the second pipe");
        assert!(check("").is_some(), "del() needs an argument");
        assert_eq!(
            check(".a ) | (.b"),
            None,
            "Argo CD wraps the text in del(...)"
        );
        assert!(check("select(.name == \"x\"").is_some());
        assert!(
            check(".a # comment").is_some(),
            "the comment swallows the closing parenthesis"
        );
        assert!(check(".spec.\"unterminated").is_some());
        assert!(
            check("/spec/replicas").is_some(),
            "a JSON pointer is not jq"
        );
        assert!(check("reduce .[] as $x (0)").is_some(), "reduce needs two");
        assert!(check("foreach .[] as $x (0; 1; 2; 3)").is_some());
    }

    #[test]
    fn gojq_syntax_jaq_does_not_read_is_not_reported() {
        for ok in [".a + +1", "[.5, 1.] | .[0]", ".[] | +.x", "1.e3"] {
            assert_eq!(check(ok), None, "{ok}");
        }
        // Keywords are field names after a dot in both.
        assert_eq!(check(".end, .and, .if"), None);
        // A dot between a name's digits and a key is a path, not a number.
        assert!(check(".a1. | | .").is_some());
    }

    #[test]
    fn compile_errors_are_what_gojq_reports() {
        assert_eq!(
            compile_error(".spec.containers[] | selct(.name == \"x\")").as_deref(),
            Some("function not defined: selct/1")
        );
        assert_eq!(
            compile_error(".a | select(.b; .c)").as_deref(),
            Some("function not defined: select/2")
        );
        assert_eq!(
            compile_error(".a | map").as_deref(),
            Some("function not defined: map/0")
        );
        assert_eq!(
            compile_error("leaf_paths").as_deref(),
            Some("function not defined: leaf_paths/0"),
            "jq has it, gojq does not"
        );
        assert_eq!(
            compile_error(".a | $x").as_deref(),
            Some("variable not defined: $x")
        );
        assert_eq!(
            compile_error("break $out").as_deref(),
            Some("label not defined: $out")
        );
        assert_eq!(
            compile_error("inputs").as_deref(),
            Some("input(s)/0 is not allowed")
        );
        assert_eq!(
            compile_error(".a as $x | .b | $y").as_deref(),
            Some("variable not defined: $y")
        );
        assert_eq!(
            compile_error("def f(g): g; f").as_deref(),
            Some("function not defined: f/0"),
            "arity counts"
        );
        assert_eq!(
            compile_error("(def f: 1; f), f").as_deref(),
            Some("function not defined: f/0"),
            "a definition is local to its scope"
        );
        assert_eq!(
            compile_error("(.a as $x | $x), $x").as_deref(),
            Some("variable not defined: $x")
        );
        assert_eq!(
            compile_error("debug").as_deref(),
            Some("function not defined: debug/0")
        );
        assert!(compile_error("@base64(1)").is_some());
    }

    #[test]
    fn hostile_input_is_bounded() {
        let started = Instant::now();
        let inputs = [
            "(".repeat(100_000),
            ")".repeat(100_000),
            "[".repeat(50_000) + &"]".repeat(50_000),
            "-".repeat(100_000) + "1",
            ". as $a | ".repeat(20_000) + ".",
            "if . then ".repeat(20_000) + "." + &" end".repeat(20_000),
            "try ".repeat(30_000) + ".",
            "\"\\(".repeat(30_000),
            ".a | ".repeat(30_000) + ".",
            "def f: ".repeat(20_000),
            "\"".repeat(99_999),
            "\u{0}\u{ffff}é\\u".repeat(1_000),
            ".[".repeat(1_000) + &"]".repeat(1_000),
            "(((((((((((((((((((((((((((((((((((((((.)))))))))))))))))))))))))))))))))))))))"
                .into(),
        ];
        for input in &inputs {
            let _ = check(input);
            for cut in [1, 7, 64, 1000] {
                let end = input.len().min(cut);
                if input.is_char_boundary(end) {
                    let _ = check(&input[..end]);
                }
            }
        }
        // Expressions within the bounds but as deep as they allow are checked and answered.
        let deep = "(".repeat(super::MAX_NESTING) + "." + &")".repeat(super::MAX_NESTING);
        assert_eq!(check(&deep), None);
        let pipes = ".a | ".repeat(super::MAX_NESTING) + ".";
        assert_eq!(check(&pipes), None);
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}
