//! The CEL grammar (cel-spec `doc/langdef.md`, "Syntax") read by precedence climbing. Every
//! node records its depth as it is built, so a tree deeper than [`MAX_DEPTH`] is refused while
//! it is read, whether the nesting comes from parentheses or from a long left-leaning chain
//! (`a.b.c…`, `1+1+1…`): the evaluator and the tree's drop recurse over it.

use super::CompileError;

/// Deepest tree accepted. cel-go refuses a parse past 250 levels of recursion by default
/// (`parser.MaxRecursionDepth`); ours is lower because evaluation runs on worker threads with
/// small stacks, and no policy in practice nests a tenth as deep.
pub const MAX_DEPTH: u32 = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Lit(Lit),
    Ident(String),
    /// `operand.field`; `test` is the `has(operand.field)` form, `optional` the
    /// `operand.?field` one.
    Select {
        operand: Box<Expr>,
        field: String,
        test: bool,
        optional: bool,
    },
    Call {
        target: Option<Box<Expr>>,
        func: String,
        args: Vec<Expr>,
    },
    /// `operand[index]`, or `operand[?index]` when the bool is set.
    Index(Box<Expr>, Box<Expr>, bool),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Comprehension {
        kind: Macro,
        range: Box<Expr>,
        var: String,
        /// `map(x, filter, transform)`: the filter.
        filter: Option<Box<Expr>>,
        body: Box<Expr>,
    },
    /// Syntax that parses but is not evaluated (optional field selection, message
    /// construction): evaluation reports it as unsupported.
    Unsupported(String),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(u64),
    Uint(u64),
    Double(f64),
    Str(String),
    Bytes(Vec<u8>),
    Ident(String),
    Punct(&'static str),
    Eof,
}

const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

fn err(message: impl Into<String>, start: usize, end: usize) -> CompileError {
    CompileError {
        message: message.into(),
        start,
        end: end.max(start),
    }
}

impl<'s> Lexer<'s> {
    fn peek_byte(&self, off: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + off).copied()
    }

    fn skip_space(&mut self) {
        loop {
            match self.peek_byte(0) {
                Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c') => self.pos += 1,
                Some(b'/') if self.peek_byte(1) == Some(b'/') => {
                    while let Some(b) = self.peek_byte(0) {
                        if b == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn next(&mut self) -> Result<(Tok, usize, usize), CompileError> {
        self.skip_space();
        let start = self.pos;
        let Some(b) = self.peek_byte(0) else {
            return Ok((Tok::Eof, start, start));
        };
        let tok = match b {
            b'0'..=b'9' => self.number()?,
            b'.' if self.peek_byte(1).is_some_and(|c| c.is_ascii_digit()) => self.number()?,
            b'"' | b'\'' => {
                let s = self.string(false, false)?;
                Tok::Str(bytes_to_string(s, start, self.pos)?)
            }
            b'r' | b'R' | b'b' | b'B' if matches!(self.peek_byte(1), Some(b'"' | b'\'')) => {
                self.pos += 1;
                let raw = matches!(b, b'r' | b'R');
                let s = self.string(raw, !raw)?;
                if raw {
                    Tok::Str(bytes_to_string(s, start, self.pos)?)
                } else {
                    Tok::Bytes(s)
                }
            }
            b'r' | b'R' | b'b' | b'B'
                if matches!(
                    (self.peek_byte(1), self.peek_byte(2)),
                    (Some(b'r' | b'R' | b'b' | b'B'), Some(b'"' | b'\''))
                ) && self.peek_byte(1).map(|c| c.to_ascii_lowercase())
                    != Some(b.to_ascii_lowercase()) =>
            {
                self.pos += 2;
                Tok::Bytes(self.string(true, true)?)
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while self
                    .peek_byte(0)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.pos += 1;
                }
                Tok::Ident(self.src[start..self.pos].to_string())
            }
            _ => {
                const PUNCT: &[&str] = &[
                    "==", "!=", "<=", ">=", "&&", "||", "[?", "+", "-", "*", "/", "%", "<", ">",
                    "!", "?", ":", ".", ",", "[", "]", "(", ")", "{", "}",
                ];
                let rest = &self.src[self.pos..];
                let Some(p) = PUNCT.iter().find(|p| rest.starts_with(**p)) else {
                    let len = rest.chars().next().map_or(1, char::len_utf8);
                    return Err(err(
                        format!("unexpected character {:?}", &rest[..len]),
                        start,
                        start + len,
                    ));
                };
                self.pos += p.len();
                Tok::Punct(p)
            }
        };
        Ok((tok, start, self.pos))
    }

    fn number(&mut self) -> Result<Tok, CompileError> {
        let start = self.pos;
        let bytes = self.src.as_bytes();
        if self.peek_byte(0) == Some(b'0') && matches!(self.peek_byte(1), Some(b'x' | b'X')) {
            self.pos += 2;
            let ds = self.pos;
            while self.peek_byte(0).is_some_and(|c| c.is_ascii_hexdigit()) {
                self.pos += 1;
            }
            let v = u64::from_str_radix(&self.src[ds..self.pos], 16)
                .map_err(|_| err("invalid hexadecimal literal", start, self.pos))?;
            return Ok(self.int_suffix(v));
        }
        while self.peek_byte(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let mut float = false;
        if self.peek_byte(0) == Some(b'.') && self.peek_byte(1).is_some_and(|c| c.is_ascii_digit())
        {
            float = true;
            self.pos += 1;
            while self.peek_byte(0).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        if matches!(self.peek_byte(0), Some(b'e' | b'E')) {
            let mut p = self.pos + 1;
            if matches!(bytes.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if bytes.get(p).is_some_and(u8::is_ascii_digit) {
                float = true;
                self.pos = p;
                while self.peek_byte(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
        }
        let text = &self.src[start..self.pos];
        if float {
            let v: f64 = text
                .parse()
                .map_err(|_| err("invalid double literal", start, self.pos))?;
            return Ok(Tok::Double(v));
        }
        let v: u64 = text
            .parse()
            .map_err(|_| err("integer literal out of range", start, self.pos))?;
        Ok(self.int_suffix(v))
    }

    fn int_suffix(&mut self, v: u64) -> Tok {
        if matches!(self.peek_byte(0), Some(b'u' | b'U')) {
            self.pos += 1;
            Tok::Uint(v)
        } else {
            Tok::Int(v)
        }
    }

    /// A quoted literal from its opening quote; `raw` keeps backslashes, `bytes` lets `\x`
    /// and octal escapes stand for bytes rather than code points.
    fn string(&mut self, raw: bool, bytes: bool) -> Result<Vec<u8>, CompileError> {
        let start = self.pos;
        let q = self.peek_byte(0).unwrap_or(b'"');
        let triple = self.peek_byte(1) == Some(q) && self.peek_byte(2) == Some(q);
        self.pos += if triple { 3 } else { 1 };
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek_byte(0) else {
                return Err(err("unterminated string literal", start, self.pos));
            };
            if c == q && (!triple || (self.peek_byte(1) == Some(q) && self.peek_byte(2) == Some(q)))
            {
                self.pos += if triple { 3 } else { 1 };
                return Ok(out);
            }
            if !triple && (c == b'\n' || c == b'\r') {
                return Err(err("newline in string literal", start, self.pos));
            }
            if c == b'\\' && !raw {
                self.escape(&mut out, bytes)?;
                continue;
            }
            out.push(c);
            self.pos += 1;
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>, bytes: bool) -> Result<(), CompileError> {
        let start = self.pos;
        let Some(c) = self.peek_byte(1) else {
            return Err(err("unterminated escape", start, self.pos + 1));
        };
        self.pos += 2;
        let simple = match c {
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' | b'\'' | b'"' | b'`' | b'?' => Some(c),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            return Ok(());
        }
        let (digits, radix) = match c {
            b'x' | b'X' => (2, 16),
            b'u' => (4, 16),
            b'U' => (8, 16),
            b'0'..=b'3' => {
                self.pos -= 1;
                (3, 8)
            }
            _ => return Err(err("invalid escape sequence", start, self.pos)),
        };
        let end = self.pos + digits;
        let text = self
            .src
            .get(self.pos..end)
            .ok_or_else(|| err("invalid escape sequence", start, self.pos))?;
        let v = u32::from_str_radix(text, radix)
            .map_err(|_| err("invalid escape sequence", start, end))?;
        self.pos = end;
        if bytes && matches!(c, b'x' | b'X' | b'0'..=b'3') {
            out.push(v as u8);
            return Ok(());
        }
        let ch = char::from_u32(v).ok_or_else(|| err("invalid code point", start, end))?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }
}

fn bytes_to_string(b: Vec<u8>, start: usize, end: usize) -> Result<String, CompileError> {
    String::from_utf8(b).map_err(|_| err("string literal is not valid UTF-8", start, end))
}

pub struct Parser<'s> {
    lex: Lexer<'s>,
    tok: Tok,
    start: usize,
    end: usize,
}

/// Parses a whole expression.
pub fn parse(src: &str) -> Result<Expr, CompileError> {
    let mut p = Parser {
        lex: Lexer { src, pos: 0 },
        tok: Tok::Eof,
        start: 0,
        end: 0,
    };
    p.bump()?;
    let (e, _) = p.expr(0)?;
    if p.tok != Tok::Eof {
        return Err(err("unexpected input after the expression", p.start, p.end));
    }
    Ok(e)
}

type Parsed = (Expr, u32);

impl Parser<'_> {
    fn bump(&mut self) -> Result<(), CompileError> {
        let (t, s, e) = self.lex.next()?;
        self.tok = t;
        self.start = s;
        self.end = e;
        Ok(())
    }

    fn is(&self, p: &str) -> bool {
        matches!(&self.tok, Tok::Punct(q) if *q == p)
    }

    fn expect(&mut self, p: &str) -> Result<(), CompileError> {
        if self.is(p) {
            self.bump()
        } else {
            Err(err(format!("expected '{p}'"), self.start, self.end))
        }
    }

    fn node(&self, e: Expr, depth: u32) -> Result<Parsed, CompileError> {
        if depth > MAX_DEPTH {
            return Err(err(
                format!("expression nested deeper than {MAX_DEPTH} levels"),
                self.start,
                self.end,
            ));
        }
        Ok((e, depth))
    }

    /// `depth` is the nesting of the caller, so parentheses count too.
    fn expr(&mut self, depth: u32) -> Result<Parsed, CompileError> {
        if depth > MAX_DEPTH {
            return Err(err(
                format!("expression nested deeper than {MAX_DEPTH} levels"),
                self.start,
                self.end,
            ));
        }
        let (c, dc) = self.logical(depth, true)?;
        if !self.is("?") {
            return Ok((c, dc));
        }
        self.bump()?;
        let (a, da) = self.logical(depth + 1, true)?;
        self.expect(":")?;
        let (b, db) = self.expr(depth + 1)?;
        let d = dc.max(da).max(db) + 1;
        self.node(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)), d)
    }

    /// A chain of `||` (`or`) or `&&` operands, built as a balanced tree as cel-go does, so a
    /// long chain of conditions stays shallow.
    fn logical(&mut self, depth: u32, or: bool) -> Result<Parsed, CompileError> {
        let op = if or { "||" } else { "&&" };
        let mut operands = vec![self.logical_operand(depth, or)?];
        while self.is(op) {
            self.bump()?;
            operands.push(self.logical_operand(depth + 1, or)?);
        }
        self.balance(operands, or)
    }

    fn logical_operand(&mut self, depth: u32, or: bool) -> Result<Parsed, CompileError> {
        if or {
            self.logical(depth, false)
        } else {
            self.binary(depth, 0)
        }
    }

    fn balance(&self, mut operands: Vec<Parsed>, or: bool) -> Result<Parsed, CompileError> {
        // Pairwise rounds: each halves the count, so the depth added is log2 of the length.
        while operands.len() > 1 {
            let mut next = Vec::with_capacity(operands.len().div_ceil(2));
            let mut it = operands.into_iter();
            while let Some((l, dl)) = it.next() {
                match it.next() {
                    Some((r, dr)) => {
                        let (l, r) = (Box::new(l), Box::new(r));
                        let e = if or { Expr::Or(l, r) } else { Expr::And(l, r) };
                        next.push(self.node(e, dl.max(dr) + 1)?);
                    }
                    None => next.push((l, dl)),
                }
            }
            operands = next;
        }
        operands
            .pop()
            .ok_or_else(|| err("expected an expression", self.start, self.end))
    }

    fn binop(&self) -> Option<(BinOp, u8)> {
        let name = match &self.tok {
            Tok::Punct(p) => *p,
            Tok::Ident(i) if i == "in" => "in",
            _ => return None,
        };
        Some(match name {
            "==" => (BinOp::Eq, 0),
            "!=" => (BinOp::Ne, 0),
            "<" => (BinOp::Lt, 0),
            "<=" => (BinOp::Le, 0),
            ">" => (BinOp::Gt, 0),
            ">=" => (BinOp::Ge, 0),
            "in" => (BinOp::In, 0),
            "+" => (BinOp::Add, 1),
            "-" => (BinOp::Sub, 1),
            "*" => (BinOp::Mul, 2),
            "/" => (BinOp::Div, 2),
            "%" => (BinOp::Rem, 2),
            _ => return None,
        })
    }

    /// Precedence climbing over relations (0), addition (1) and multiplication (2), all
    /// left-associative: one frame per level of nesting, whatever the operators.
    fn binary(&mut self, depth: u32, min: u8) -> Result<Parsed, CompileError> {
        let (mut l, mut dl) = self.unary(depth)?;
        while let Some((op, prec)) = self.binop() {
            if prec < min {
                break;
            }
            self.bump()?;
            let (r, dr) = self.binary(depth + 1, prec + 1)?;
            (l, dl) = self.node(Expr::Binary(op, Box::new(l), Box::new(r)), dl.max(dr) + 1)?;
        }
        Ok((l, dl))
    }

    fn unary(&mut self, depth: u32) -> Result<Parsed, CompileError> {
        if depth > MAX_DEPTH {
            return self.node(Expr::Lit(Lit::Null), depth);
        }
        if self.is("!") {
            self.bump()?;
            let (e, d) = self.unary(depth + 1)?;
            return self.node(Expr::Not(Box::new(e)), d + 1);
        }
        if self.is("-") {
            self.bump()?;
            // A negated literal is one literal, so that the smallest int can be written.
            if let Tok::Int(v) = self.tok {
                let n = if v == 1u64 << 63 {
                    i64::MIN
                } else {
                    i64::try_from(v)
                        .map(|v| -v)
                        .map_err(|_| err("integer literal out of range", self.start, self.end))?
                };
                self.bump()?;
                return self.postfix(Expr::Lit(Lit::Int(n)), 1, depth);
            }
            let (e, d) = self.unary(depth + 1)?;
            return self.node(Expr::Neg(Box::new(e)), d + 1);
        }
        let (p, d) = self.primary(depth)?;
        self.postfix(p, d, depth)
    }

    fn ident(&mut self) -> Result<String, CompileError> {
        self.name(false)
    }

    /// An identifier; a reserved word only as a field or method name after `.` (as cel-go,
    /// which checks reserved words on standalone identifiers only: `x.namespace(…)` is
    /// the authorizer library's own method).
    fn name(&mut self, member: bool) -> Result<String, CompileError> {
        match &self.tok {
            Tok::Ident(i) => {
                let i = i.clone();
                if !member && RESERVED.contains(&i.as_str()) {
                    return Err(err(
                        format!("reserved identifier: {i}"),
                        self.start,
                        self.end,
                    ));
                }
                self.bump()?;
                Ok(i)
            }
            _ => Err(err("expected an identifier", self.start, self.end)),
        }
    }

    fn postfix(&mut self, mut e: Expr, mut d: u32, depth: u32) -> Result<Parsed, CompileError> {
        loop {
            if self.is(".") {
                self.bump()?;
                let optional = self.is("?");
                if optional {
                    self.bump()?;
                }
                let name = self.name(true)?;
                if !optional && self.is("(") {
                    self.bump()?;
                    let (args, da) = self.args(")", depth + 1)?;
                    let dd = d.max(da) + 1;
                    (e, d) = self.node(method(e, name, args, self.start, self.end)?, dd)?;
                } else {
                    (e, d) = self.node(
                        Expr::Select {
                            operand: Box::new(e),
                            field: name,
                            test: false,
                            optional,
                        },
                        d + 1,
                    )?;
                }
            } else if self.is("[?") {
                self.bump()?;
                let (i, di) = self.expr(depth + 1)?;
                self.expect("]")?;
                (e, d) = self.node(Expr::Index(Box::new(e), Box::new(i), true), d.max(di) + 1)?;
            } else if self.is("[") {
                self.bump()?;
                let (i, di) = self.expr(depth + 1)?;
                self.expect("]")?;
                (e, d) = self.node(Expr::Index(Box::new(e), Box::new(i), false), d.max(di) + 1)?;
            } else {
                return Ok((e, d));
            }
        }
    }

    fn args(&mut self, close: &str, depth: u32) -> Result<(Vec<Expr>, u32), CompileError> {
        let mut out = Vec::new();
        let mut d = 0;
        if self.is(close) {
            self.bump()?;
            return Ok((out, d));
        }
        loop {
            let (a, da) = self.expr(depth)?;
            out.push(a);
            d = d.max(da);
            if self.is(",") {
                self.bump()?;
                if self.is(close) {
                    self.bump()?;
                    return Ok((out, d));
                }
                continue;
            }
            self.expect(close)?;
            return Ok((out, d));
        }
    }

    fn primary(&mut self, depth: u32) -> Result<Parsed, CompileError> {
        let (s, e) = (self.start, self.end);
        let lit = match &self.tok {
            Tok::Int(v) => Some(Lit::Int(
                i64::try_from(*v).map_err(|_| err("integer literal out of range", s, e))?,
            )),
            Tok::Uint(v) => Some(Lit::Uint(*v)),
            Tok::Double(v) => Some(Lit::Double(*v)),
            Tok::Str(v) => Some(Lit::String(v.clone())),
            Tok::Bytes(v) => Some(Lit::Bytes(v.clone())),
            Tok::Ident(i) if i == "true" => Some(Lit::Bool(true)),
            Tok::Ident(i) if i == "false" => Some(Lit::Bool(false)),
            Tok::Ident(i) if i == "null" => Some(Lit::Null),
            _ => None,
        };
        if let Some(l) = lit {
            self.bump()?;
            return Ok((Expr::Lit(l), 1));
        }
        if self.is("(") {
            self.bump()?;
            let (x, d) = self.expr(depth + 1)?;
            self.expect(")")?;
            return Ok((x, d));
        }
        if self.is("[") {
            self.bump()?;
            let (items, d) = self.args("]", depth + 1)?;
            return self.node(Expr::List(items), d + 1);
        }
        if self.is("{") {
            self.bump()?;
            return self.map_literal(depth + 1);
        }
        if self.is(".") {
            // A leading dot names the root scope: `.a` is `a`.
            self.bump()?;
        }
        if matches!(&self.tok, Tok::Ident(i) if i == "in") {
            return Err(err("unexpected 'in'", s, e));
        }
        let name = self.ident()?;
        if self.is("(") {
            self.bump()?;
            let (args, d) = self.args(")", depth + 1)?;
            if name == "has" {
                return match <[Expr; 1]>::try_from(args) {
                    Ok(
                        [Expr::Select {
                            operand,
                            field,
                            optional: false,
                            ..
                        }],
                    ) => self.node(
                        Expr::Select {
                            operand,
                            field,
                            test: true,
                            optional: false,
                        },
                        d + 1,
                    ),
                    _ => Err(err("invalid argument to has() macro", s, self.end)),
                };
            }
            return self.node(
                Expr::Call {
                    target: None,
                    func: name,
                    args,
                },
                d + 1,
            );
        }
        if self.is("{") {
            return Err(err("message construction is not supported", s, self.end));
        }
        Ok((Expr::Ident(name), 1))
    }

    fn map_literal(&mut self, depth: u32) -> Result<Parsed, CompileError> {
        let mut entries = Vec::new();
        let mut d = 0;
        while !self.is("}") {
            let optional = self.is("?");
            if optional {
                self.bump()?;
            }
            let (k, dk) = self.expr(depth)?;
            self.expect(":")?;
            let (v, dv) = self.expr(depth)?;
            d = d.max(dk).max(dv);
            if optional {
                entries.push((k, Expr::Unsupported("optional map entry `?k: v`".into())));
            } else {
                entries.push((k, v));
            }
            if self.is(",") {
                self.bump()?;
            } else if !self.is("}") {
                return Err(err("expected ',' or '}'", self.start, self.end));
            }
        }
        self.bump()?;
        self.node(Expr::Map(entries), d + 1)
    }
}

/// A receiver call, expanded when it is one of the comprehension macros.
fn method(
    target: Expr,
    name: String,
    mut args: Vec<Expr>,
    s: usize,
    e: usize,
) -> Result<Expr, CompileError> {
    let kind = match (name.as_str(), args.len()) {
        ("all", 2) => Some(Macro::All),
        ("exists", 2) => Some(Macro::Exists),
        ("exists_one", 2) => Some(Macro::ExistsOne),
        ("map", 2 | 3) => Some(Macro::Map),
        ("filter", 2) => Some(Macro::Filter),
        _ => None,
    };
    // Namespaced functions (`sets.contains(a, b)`, `math.greatest(…)`) read as a receiver call
    // on an identifier; cel-go resolves them as one qualified name.
    if let Expr::Ident(ns) = &target {
        if matches!(
            ns.as_str(),
            "sets" | "strings" | "math" | "optional" | "base64" | "lists"
        ) {
            return Ok(Expr::Call {
                target: None,
                func: format!("{ns}.{name}"),
                args,
            });
        }
    }
    let Some(kind) = kind else {
        return Ok(Expr::Call {
            target: Some(Box::new(target)),
            func: name,
            args,
        });
    };
    let body = args.pop().unwrap_or(Expr::Lit(Lit::Null));
    let filter = if args.len() == 2 { args.pop() } else { None };
    let var = match args.pop() {
        Some(Expr::Ident(v)) => v,
        _ => return Err(err("argument must be a simple name", s, e)),
    };
    Ok(Expr::Comprehension {
        kind,
        range: Box::new(target),
        var,
        filter: filter.map(Box::new),
        body: Box::new(body),
    })
}
