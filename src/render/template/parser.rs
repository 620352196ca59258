//! Parser: mirrors text/template/parse/parse.go, including its parse-time checks (undefined
//! functions and variables, misplaced `{{break}}`), so errors match what Argo CD and Helm
//! report.

use super::funcs::known_in;
use super::lexer::{line_of, Lexer, Tok, Token};
use super::set::Dialect;
use super::{ErrorKind, TemplateError, MAX_DEPTH, MAX_VARIABLES};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

pub(super) type Span = (usize, usize);

#[derive(Debug)]
pub(super) enum Node {
    /// Text copied to the output, and its offset in the source.
    Text(String, usize),
    Action(Pipe),
    If(Box<Control>),
    With(Box<Control>),
    Range(Box<Control>),
    Break,
    Continue,
    /// `{{template "name" pipeline}}`, and what a `{{block}}` leaves in place.
    Template(Box<TemplateCall>),
}

#[derive(Debug)]
pub(super) struct TemplateCall {
    pub(super) name: String,
    pub(super) pipe: Option<Pipe>,
    /// The name's string token, where Go places the node.
    pub(super) span: Span,
}

/// One parse: the text's own tree and the `define`s (and `block`s) it holds, in the order
/// text/template's tree set keeps them (see `Parser::add_define`).
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) root: Vec<Node>,
    pub(super) defines: Vec<(String, Vec<Node>)>,
}

/// Go's `parse.IsEmptyTree`: nothing but blank text (comments never reach the tree here).
pub(super) fn is_empty_tree(nodes: &[Node]) -> bool {
    nodes
        .iter()
        .all(|n| matches!(n, Node::Text(t, _) if t.trim().is_empty()))
}

#[derive(Debug)]
pub(super) struct Control {
    pub(super) pipe: Pipe,
    pub(super) list: Vec<Node>,
    pub(super) else_list: Option<Vec<Node>>,
}

#[derive(Debug)]
pub(super) struct Pipe {
    pub(super) decl: Vec<String>,
    pub(super) is_assign: bool,
    pub(super) cmds: Vec<Cmd>,
    pub(super) span: Span,
}

#[derive(Debug)]
pub(super) struct Cmd {
    pub(super) args: Vec<Operand>,
    pub(super) span: Span,
}

#[derive(Debug)]
pub(super) struct Operand {
    pub(super) term: Term,
    pub(super) span: Span,
    /// Where Go places the node: for `.a.b.c` or `$x.a`, at the first field after the term
    /// (parse.go `operand` builds the node at its chain's position).
    pub(super) at: usize,
}

#[derive(Debug)]
pub(super) enum Term {
    Dot,
    Nil,
    /// Literals are shared, so evaluating one in a loop copies nothing.
    Const(Arc<Value>),
    Field(Vec<String>),
    Var(String, Vec<String>),
    Func(String),
    Pipe(Box<Pipe>),
    Chain(Box<Term>, Vec<String>),
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    If,
    With,
    Range,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::If => "if",
            Kind::With => "with",
            Kind::Range => "range",
        }
    }
}

enum Item {
    Node(Node),
    End,
    Else,
}

enum Stop {
    Eof,
    End,
    Else,
}

const KEYWORDS: &[&str] = &[
    "block", "break", "continue", "define", "else", "end", "if", "range", "template", "with",
];

fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Eof => "EOF".into(),
        Tok::Text(_) => "text".into(),
        Tok::Open => "\"{{\"".into(),
        Tok::Close => "\"}}\"".into(),
        Tok::Space => "space".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::LParen => "\"(\"".into(),
        Tok::RParen => "\")\"".into(),
        Tok::Comma => "\",\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Dot => "\".\"".into(),
        Tok::Field(name) => format!("<.{name}>"),
        Tok::Var(name) => format!("<{name}>"),
        Tok::Ident(name) if is_keyword(name) => format!("<{name}>"),
        Tok::Ident(name) => format!("{name:?}"),
        Tok::Bool(b) => format!("<{b}>"),
        Tok::Nil => "<nil>".into(),
        Tok::Number(_) => "number".into(),
        Tok::Str(s) => format!("{s:?}"),
    }
}

fn starts_operand(tok: &Tok) -> bool {
    match tok {
        Tok::Ident(name) => !is_keyword(name),
        Tok::Bool(_)
        | Tok::Number(_)
        | Tok::Dot
        | Tok::Field(_)
        | Tok::Nil
        | Tok::Str(_)
        | Tok::Var(_)
        | Tok::LParen => true,
        _ => false,
    }
}

pub(super) struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token<'s>>,
    pos: usize,
    /// Variables in scope at parse time; Go rejects undefined ones before executing.
    vars: Vec<String>,
    range_depth: usize,
    depth: usize,
    eof: Token<'s>,
    dialect: Dialect,
    /// Whether `define`, `template` and `block` are evaluated; the single-string entry point
    /// refuses them as unsupported.
    named: bool,
    /// Inside a `define` or `block` body, where a further `define` is not at top level.
    in_define: bool,
    defines: Vec<(String, Vec<Node>)>,
}

impl<'s> Parser<'s> {
    pub(super) fn parse(src: &'s str) -> Result<Vec<Node>, TemplateError> {
        Parser::parse_in(src, Dialect::ArgoCd, false).map(|parsed| parsed.root)
    }

    /// Parses `src` with the functions of `dialect`; `named` enables `define`, `template`
    /// and `block`.
    pub(super) fn parse_in(
        src: &'s str,
        dialect: Dialect,
        named: bool,
    ) -> Result<Parsed, TemplateError> {
        let toks = Lexer::lex(src)?;
        let mut parser = Parser {
            src,
            toks,
            pos: 0,
            vars: vec!["$".to_string()],
            range_depth: 0,
            depth: 0,
            eof: Token {
                tok: Tok::Eof,
                start: src.len(),
                end: src.len(),
            },
            dialect,
            named,
            in_define: false,
            defines: Vec::new(),
        };
        let (nodes, stop) = parser.item_list()?;
        match stop {
            Stop::Eof => Ok(Parsed {
                root: nodes,
                defines: parser.defines,
            }),
            Stop::End => Err(parser.error("unexpected {{end}}")),
            Stop::Else => Err(parser.error("unexpected {{else}}")),
        }
    }

    fn cur(&self) -> &Token<'s> {
        self.toks.get(self.pos).unwrap_or(&self.eof)
    }

    fn next(&mut self) -> Token<'s> {
        let tok = self.cur().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        tok
    }

    fn backup(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn skip_space(&mut self) {
        while self.cur().tok == Tok::Space {
            self.pos += 1;
        }
    }

    fn next_non_space(&mut self) -> Token<'s> {
        self.skip_space();
        self.next()
    }

    fn prev_end(&self) -> usize {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or(0, |t| t.end)
    }

    fn error_at(&self, offset: usize, msg: impl fmt::Display) -> TemplateError {
        TemplateError::new(format!("template: :{}: {msg}", line_of(self.src, offset)))
    }

    fn error(&self, msg: impl fmt::Display) -> TemplateError {
        self.error_at(self.cur().start, msg)
    }

    fn unexpected(&self, tok: &Token, context: &str) -> TemplateError {
        self.error_at(
            tok.start,
            format!("unexpected {} in {context}", describe(&tok.tok)),
        )
    }

    fn enter(&mut self) -> Result<(), TemplateError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!("template nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn item_list(&mut self) -> Result<(Vec<Node>, Stop), TemplateError> {
        let mut nodes = Vec::new();
        loop {
            let tok = self.next();
            match tok.tok {
                Tok::Eof => return Ok((nodes, Stop::Eof)),
                Tok::Text(text) => nodes.push(Node::Text(text.to_string(), tok.start)),
                Tok::Open if self.at_define() => self.definition()?,
                Tok::Open => match self.action()? {
                    Item::Node(node) => nodes.push(node),
                    Item::End => return Ok((nodes, Stop::End)),
                    Item::Else => return Ok((nodes, Stop::Else)),
                },
                _ => return Err(self.unexpected(&tok, "input")),
            }
        }
    }

    fn action(&mut self) -> Result<Item, TemplateError> {
        let tok = self.next_non_space();
        if let Tok::Ident(word) = &tok.tok {
            match *word {
                "if" => return self.control(Kind::If).map(Item::Node),
                "with" => return self.control(Kind::With).map(Item::Node),
                "range" => return self.control(Kind::Range).map(Item::Node),
                "else" => return self.else_action(),
                "end" => return self.expect_close("end").map(|()| Item::End),
                "break" | "continue" => return self.loop_action(word),
                "template" if self.named => return self.template_action().map(Item::Node),
                "block" if self.named => return self.block_action().map(Item::Node),
                "define" | "template" | "block" if !self.named => {
                    let msg = format!("{{{{{word}}}}} actions are not supported offline");
                    let mut e = self.error_at(tok.start, msg);
                    e.kind = ErrorKind::Unsupported;
                    return Err(e);
                }
                _ => {}
            }
        }
        self.backup();
        self.pipeline("command")
            .map(|pipe| Item::Node(Node::Action(pipe)))
    }

    /// Go reads `{{define}}` only at the top level of a text; elsewhere the keyword is an
    /// unexpected token in a command.
    fn at_define(&self) -> bool {
        if !self.named || self.in_define || self.depth > 0 {
            return false;
        }
        let mut i = self.pos;
        while matches!(self.toks.get(i).map(|t| &t.tok), Some(Tok::Space)) {
            i += 1;
        }
        matches!(self.toks.get(i).map(|t| &t.tok), Some(Tok::Ident(w)) if *w == "define")
    }

    fn template_name(&mut self, context: &str) -> Result<(String, Span), TemplateError> {
        let tok = self.next_non_space();
        match tok.tok {
            Tok::Str(name) => Ok((name.into_owned(), (tok.start, tok.end))),
            _ => Err(self.unexpected(&tok, context)),
        }
    }

    /// `{{define "name"}}body{{end}}`, the `define` keyword not read yet.
    fn definition(&mut self) -> Result<(), TemplateError> {
        self.next_non_space();
        let (name, _) = self.template_name("define clause")?;
        self.expect_close("define clause")?;
        let body = self.tree_body("define clause")?;
        self.add_define(name, body)
    }

    /// A body parsed as a tree of its own: only `$` in scope, outside any range.
    fn tree_body(&mut self, context: &str) -> Result<Vec<Node>, TemplateError> {
        let vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let range_depth = std::mem::take(&mut self.range_depth);
        let in_define = std::mem::replace(&mut self.in_define, true);
        let listed = self.item_list();
        self.vars = vars;
        self.range_depth = range_depth;
        self.in_define = in_define;
        let (body, stop) = listed?;
        match stop {
            Stop::End => Ok(body),
            Stop::Eof => Err(self.error("unexpected EOF")),
            Stop::Else => Err(self.error(format!("unexpected {{{{else}}}} in {context}"))),
        }
    }

    /// parse.go `(*Tree).add`: an empty body never replaces a definition, and two non-empty
    /// ones in one text are an error.
    fn add_define(&mut self, name: String, body: Vec<Node>) -> Result<(), TemplateError> {
        match self.defines.iter_mut().find(|(n, _)| *n == name) {
            None => self.defines.push((name, body)),
            Some((_, old)) if is_empty_tree(old) => *old = body,
            Some(_) if is_empty_tree(&body) => {}
            Some(_) => {
                let at = self.prev_end().saturating_sub(1);
                let msg = format!("template: multiple definition of template {name:?}");
                return Err(self.error_at(at, msg));
            }
        }
        Ok(())
    }

    /// `{{template "name"}}` or `{{template "name" pipeline}}`; variables the pipeline
    /// declares stay in scope, as in Go.
    fn template_action(&mut self) -> Result<Node, TemplateError> {
        let (name, span) = self.template_name("template clause")?;
        self.skip_space();
        let pipe = if self.cur().tok == Tok::Close {
            self.next();
            None
        } else {
            Some(self.pipeline("template clause")?)
        };
        Ok(Node::Template(Box::new(TemplateCall { name, pipe, span })))
    }

    /// `{{block "name" pipeline}}body{{end}}`: defines `name` and executes it in place.
    fn block_action(&mut self) -> Result<Node, TemplateError> {
        let (name, span) = self.template_name("block clause")?;
        let pipe = self.pipeline("block clause")?;
        self.enter()?;
        let body = self.tree_body("block clause");
        self.depth -= 1;
        self.add_define(name.clone(), body?)?;
        Ok(Node::Template(Box::new(TemplateCall {
            name,
            pipe: Some(pipe),
            span,
        })))
    }

    fn expect_close(&mut self, context: &str) -> Result<(), TemplateError> {
        let tok = self.next_non_space();
        if tok.tok == Tok::Close {
            Ok(())
        } else {
            Err(self.unexpected(&tok, context))
        }
    }

    /// `{{else if ...}}` leaves the `if` pending, to be parsed as a nested control.
    fn else_action(&mut self) -> Result<Item, TemplateError> {
        self.skip_space();
        if matches!(&self.cur().tok, Tok::Ident(w) if *w == "if" || *w == "with") {
            return Ok(Item::Else);
        }
        self.expect_close("else").map(|()| Item::Else)
    }

    fn loop_action(&mut self, word: &str) -> Result<Item, TemplateError> {
        self.expect_close(&format!("{{{{{word}}}}}"))?;
        if self.range_depth == 0 {
            return Err(self.error(format!("{{{{{word}}}}} outside {{{{range}}}}")));
        }
        Ok(Item::Node(if word == "break" {
            Node::Break
        } else {
            Node::Continue
        }))
    }

    fn control(&mut self, kind: Kind) -> Result<Node, TemplateError> {
        self.enter()?;
        let scope = self.vars.len();
        let result = self.control_body(kind);
        self.vars.truncate(scope);
        self.depth -= 1;
        result
    }

    fn control_body(&mut self, kind: Kind) -> Result<Node, TemplateError> {
        let pipe = self.pipeline(kind.name())?;
        if kind == Kind::Range {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if kind == Kind::Range {
            self.range_depth -= 1;
        }
        let (list, stop) = listed?;
        let else_list = match stop {
            Stop::Eof => return Err(self.error("unexpected EOF")),
            Stop::End => None,
            Stop::Else => Some(self.else_branch(kind)?),
        };
        let control = Box::new(Control {
            pipe,
            list,
            else_list,
        });
        Ok(match kind {
            Kind::If => Node::If(control),
            Kind::With => Node::With(control),
            Kind::Range => Node::Range(control),
        })
    }

    /// `{{if a}}x{{else if b}}y{{end}}` is `{{if a}}x{{else}}{{if b}}y{{end}}{{end}}`.
    fn else_branch(&mut self, kind: Kind) -> Result<Vec<Node>, TemplateError> {
        let chained = match &self.cur().tok {
            Tok::Ident(w) => {
                (*w == "if" && kind == Kind::If) || (*w == "with" && kind == Kind::With)
            }
            _ => false,
        };
        if chained {
            self.next();
            return Ok(vec![self.control(kind)?]);
        }
        let (list, stop) = self.item_list()?;
        match stop {
            Stop::End => Ok(list),
            Stop::Eof => Err(self.error("unexpected EOF")),
            Stop::Else => Err(self.error("expected end; found {{else}}")),
        }
    }

    fn pipeline(&mut self, context: &str) -> Result<Pipe, TemplateError> {
        let mut pipe = Pipe {
            decl: Vec::new(),
            is_assign: false,
            cmds: Vec::new(),
            span: (0, 0),
        };
        self.declarations(&mut pipe, context)?;
        loop {
            let tok = self.next_non_space();
            match &tok.tok {
                Tok::Close | Tok::RParen => {
                    if tok.tok == Tok::RParen {
                        self.backup();
                    }
                    self.check_pipeline(&mut pipe, context, &tok)?;
                    return Ok(pipe);
                }
                t if starts_operand(t) => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(&tok, context)),
            }
        }
    }

    fn declare(&mut self, pipe: &mut Pipe, name: String) -> Result<(), TemplateError> {
        if self.vars.len() >= MAX_VARIABLES {
            return Err(self.error(format!("more than {MAX_VARIABLES} variables in scope")));
        }
        pipe.decl.push(name.clone());
        self.vars.push(name);
        Ok(())
    }

    fn declarations(&mut self, pipe: &mut Pipe, context: &str) -> Result<(), TemplateError> {
        loop {
            let save = self.pos;
            self.skip_space();
            let Tok::Var(name) = self.cur().tok.clone() else {
                self.pos = save;
                return Ok(());
            };
            self.next();
            self.skip_space();
            match self.cur().tok {
                Tok::Declare | Tok::Assign => {
                    pipe.is_assign = self.cur().tok == Tok::Assign;
                    self.next();
                    return self.declare(pipe, name.to_string());
                }
                Tok::Comma => {
                    self.next();
                    self.declare(pipe, name.to_string())?;
                    if context == "range" && pipe.decl.len() < 2 {
                        self.skip_space();
                        if matches!(self.cur().tok, Tok::Var(_) | Tok::Close | Tok::RParen) {
                            continue;
                        }
                        return Err(self.error("range can only initialize variables"));
                    }
                    return Err(self.error(format!("too many declarations in {context}")));
                }
                _ => {
                    self.pos = save;
                    return Ok(());
                }
            }
        }
    }

    fn check_pipeline(
        &self,
        pipe: &mut Pipe,
        context: &str,
        end: &Token,
    ) -> Result<(), TemplateError> {
        let (Some(first), Some(last)) = (pipe.cmds.first(), pipe.cmds.last()) else {
            return Err(self.error_at(end.start, format!("missing value for {context}")));
        };
        pipe.span = (first.span.0, last.span.1);
        for (stage, cmd) in pipe.cmds.iter().enumerate().skip(1) {
            if let Some(op) = cmd.args.first() {
                if matches!(op.term, Term::Const(_) | Term::Dot | Term::Nil) {
                    let msg = format!("non executable command in pipeline stage {}", stage + 1);
                    return Err(self.error_at(op.span.0, msg));
                }
            }
        }
        Ok(())
    }

    fn command(&mut self) -> Result<Cmd, TemplateError> {
        self.skip_space();
        let start = self.cur().start;
        let mut args = Vec::new();
        loop {
            self.skip_space();
            if let Some(op) = self.operand()? {
                args.push(op);
            }
            let tok = self.next();
            match tok.tok {
                Tok::Space => continue,
                Tok::Close | Tok::RParen => self.backup(),
                Tok::Pipe => {}
                _ => return Err(self.unexpected(&tok, "operand")),
            }
            break;
        }
        let end = args.last().map_or(start, |op| op.span.1);
        if args.is_empty() {
            return Err(self.error_at(start, "empty command"));
        }
        Ok(Cmd {
            args,
            span: (start, end),
        })
    }

    fn operand(&mut self) -> Result<Option<Operand>, TemplateError> {
        let start = self.cur().start;
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        let at = if matches!(self.cur().tok, Tok::Field(_)) {
            self.cur().start
        } else {
            start
        };
        while let Tok::Field(name) = &self.cur().tok {
            fields.push(name.to_string());
            self.next();
        }
        let term = if fields.is_empty() {
            term
        } else {
            self.chain(term, fields, start)?
        };
        Ok(Some(Operand {
            term,
            span: (start, self.prev_end()),
            at,
        }))
    }

    fn chain(&self, term: Term, fields: Vec<String>, start: usize) -> Result<Term, TemplateError> {
        match term {
            Term::Field(mut names) => {
                names.extend(fields);
                Ok(Term::Field(names))
            }
            Term::Var(name, mut names) => {
                names.extend(fields);
                Ok(Term::Var(name, names))
            }
            Term::Func(_) | Term::Pipe(_) | Term::Chain(..) => {
                Ok(Term::Chain(Box::new(term), fields))
            }
            Term::Const(_) | Term::Dot | Term::Nil => {
                let text = self.src.get(start..self.prev_end()).unwrap_or("");
                Err(self.error_at(start, format!("unexpected . after term {text:?}")))
            }
        }
    }

    fn term(&mut self) -> Result<Option<Term>, TemplateError> {
        let tok = self.next_non_space();
        let term = match tok.tok {
            Tok::Ident(name) if is_keyword(name) => {
                self.backup();
                return Ok(None);
            }
            Tok::Ident(name) => {
                if !known_in(self.dialect, name) {
                    return Err(self.error_at(tok.start, format!("function {name:?} not defined")));
                }
                Term::Func(name.to_string())
            }
            Tok::Dot => Term::Dot,
            Tok::Nil => Term::Nil,
            Tok::Var(name) => {
                if !self.vars.iter().any(|v| v == name) {
                    return Err(self.error_at(tok.start, format!("undefined variable {name:?}")));
                }
                Term::Var(name.to_string(), Vec::new())
            }
            Tok::Field(name) => Term::Field(vec![name.to_string()]),
            Tok::Bool(b) => Term::Const(Arc::new(Value::Bool(b))),
            Tok::Number(n) => Term::Const(Arc::new(n.to_value())),
            Tok::Str(s) => Term::Const(Arc::new(Value::String(s.into_owned()))),
            Tok::LParen => return self.parenthesized().map(Some),
            _ => {
                self.backup();
                return Ok(None);
            }
        };
        Ok(Some(term))
    }

    fn parenthesized(&mut self) -> Result<Term, TemplateError> {
        self.enter()?;
        let pipe = self.pipeline("parenthesized pipeline");
        self.depth -= 1;
        let pipe = pipe?;
        let tok = self.next();
        if tok.tok != Tok::RParen {
            let msg = format!("unclosed right paren: unexpected {}", describe(&tok.tok));
            return Err(self.error_at(tok.start, msg));
        }
        Ok(Term::Pipe(Box::new(pipe)))
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::{check, go_err};

    #[test]
    fn syntax_errors() {
        check(&[
            ("{{ .name", Err("unclosed action")),
            ("{{ if .x }}", Err("unexpected EOF")),
            ("{{ end }}", Err("unexpected {{end}}")),
            ("{{ else }}", Err("unexpected {{else}}")),
            ("{{ (.name }}", Err("unclosed left paren")),
            ("{{ .name) }}", Err("unexpected right paren")),
            ("{{ \"open }}", Err("unterminated quoted string")),
            ("{{ .a-b }}", Err("bad character U+002D '-'")),
            ("{{ 1x }}", Err("bad number syntax")),
            ("{{ nil }}", Err("nil is not a command")),
            ("{{ .a | }}{{ | .a }}", Err("unexpected \"|\"")),
        ]);
        assert!(go_err("line1\n{{ @ }}").starts_with("template: :2:"));
    }

    #[test]
    fn variables_and_scoping() {
        check(&[
            ("{{ $n := .name }}{{ $n }}", Ok("MyApp")),
            ("{{ if true }}{{ $v := 1 }}{{ $v }}{{ end }}", Ok("1")),
            (
                "{{ if true }}{{ $v := 1 }}{{ end }}{{ $v }}",
                Err("undefined variable \"$v\""),
            ),
            ("{{ $nope }}", Err("undefined variable")),
            ("{{ $nope = 1 }}", Err("undefined variable: $nope")),
        ]);
    }
}
