//! Parser: tokens to a syntax tree. Names are not resolved here; that is
//! `resolve`'s job, so that element names, classes and parameters are looked
//! up in one place.
//!
//! Grammar (after Click's `click(5)`):
//!
//! ```text
//! stmts       ::= { stmt [';'] }
//! stmt        ::= connection | 'elementclass' IDENT class
//!               | 'require' CONFIG | 'define' CONFIG | 'provide' CONFIG
//! connection  ::= elements { arrow elements }       arrow ::= '->' | '=>'
//! elements    ::= element { ',' element }
//! element     ::= [ports] elementref [ports]        ports ::= '[' [N {',' N}] ']'
//! elementref  ::= IDENT | IDENT '::' class [CONFIG] | IDENT CONFIG | compound [CONFIG]
//! class       ::= IDENT | compound
//! compound    ::= '{' alt { '||' alt } [ '||' '...' ] '}'
//! alt         ::= [ formal {',' formal} '|' ] stmts  formal ::= [IDENT] VAR
//! ```
//!
//! Inside a compound, a connection may leave out its first element (meaning
//! `input`) or its last (meaning `output`), as in `{ [1] -> Counter -> [1] }`.

use std::rc::Rc;

use crate::lexer::{Tok, Token};
use crate::span::{Diagnostic, LineIndex};

/// Byte range in the source.
pub(crate) type Range = (usize, usize);

#[derive(Debug)]
pub(crate) enum Stmt {
    Conn(Conn),
    ElementClass {
        name: String,
        name_range: Range,
        class: ClassExpr,
    },
    Require(Cfg),
    Define(Cfg),
}

#[derive(Debug)]
pub(crate) struct Conn {
    /// Element groups; `groups.len() == arrows.len() + 1`.
    pub groups: Vec<Group>,
    pub arrows: Vec<(ArrowKind, Range)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArrowKind {
    Single,
    Multi,
}

#[derive(Debug, Default)]
pub(crate) struct Group {
    /// Empty only inside compounds, at the ends of a connection.
    pub elems: Vec<Elem>,
}

#[derive(Debug)]
pub(crate) struct Elem {
    pub in_ports: Option<Ports>,
    pub r: ElemRef,
    pub out_ports: Option<Ports>,
    pub range: Range,
}

#[derive(Debug, Clone)]
pub(crate) struct Ports {
    pub ports: Vec<usize>,
    pub range: Range,
}

#[derive(Debug)]
pub(crate) enum ElemRef {
    /// A bare identifier: an element if one has that name, else an anonymous
    /// element of that class.
    Bare { name: String, range: Range },
    /// `name :: class(config)`.
    Decl {
        name: String,
        name_range: Range,
        class: ClassExpr,
        config: Option<Cfg>,
    },
    /// `class(config)` or `{ compound }(config)`.
    Anon {
        class: ClassExpr,
        config: Option<Cfg>,
    },
    /// Only ports: the implicit `input`/`output` of a compound.
    Implicit,
    /// An element group `( statements )`: its statements belong to the
    /// enclosing scope; inside, `input`, `output` and ports without an
    /// element at a connection's ends are the group's own ports.
    Group(Vec<Stmt>),
}

#[derive(Debug, Clone)]
pub(crate) enum ClassExpr {
    Name(String, Range),
    Compound(Rc<CompoundAst>),
}

impl ClassExpr {
    pub(crate) fn range(&self) -> Range {
        match self {
            ClassExpr::Name(_, r) => *r,
            ClassExpr::Compound(c) => c.range,
        }
    }
}

#[derive(Debug)]
pub(crate) struct CompoundAst {
    pub alts: Vec<AltAst>,
    /// Ends with `|| ...`: extend the previous definition of the class.
    pub extends: bool,
    pub range: Range,
}

#[derive(Debug)]
pub(crate) struct AltAst {
    pub formals: Vec<FormalAst>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone)]
pub(crate) struct FormalAst {
    pub keyword: Option<String>,
    pub var: String,
    pub range: Range,
}

/// A configuration string: raw text and its byte offset in the source.
#[derive(Debug, Clone)]
pub(crate) struct Cfg {
    pub text: String,
    pub start: usize,
    /// Range of the whole `(...)` or statement.
    pub range: Range,
}

pub(crate) struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    idx: &'a LineIndex,
    pub errs: Vec<Diagnostic>,
    depth: usize,
}

type PResult<T> = Result<T, ()>;

impl<'a> Parser<'a> {
    pub(crate) fn new(toks: &'a [Token], idx: &'a LineIndex) -> Self {
        Parser {
            toks,
            pos: 0,
            idx,
            errs: Vec::new(),
            depth: 0,
        }
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    fn tok(&self) -> &Token {
        &self.toks[self.pos]
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].end
        }
    }

    fn error_at(&mut self, r: Range, msg: String) {
        self.errs
            .push(Diagnostic::error(Some(self.idx.span(r.0, r.1)), msg));
    }

    /// Reports "expected WHAT, found TOKEN" at the current token; in
    /// Click's form, "syntax error near TOKEN".
    fn expected(&mut self, what: &str) {
        let t = self.tok().clone();
        let found = t.tok.describe();
        let d = Diagnostic::error(
            Some(self.idx.span(t.start, t.end)),
            format!("expected {what}, found {found}"),
        );
        let d = match t.tok {
            Tok::Eof => d,
            _ => d.with_click(None, format!("syntax error near {found}")),
        };
        self.errs.push(d);
    }

    /// Parses a whole file.
    pub(crate) fn parse_file(&mut self) -> Vec<Stmt> {
        self.parse_stmts(false)
    }

    /// Parses statements up to end of file, or inside a compound up to `}`
    /// or `||` (not consumed).
    fn parse_stmts(&mut self, in_compound: bool) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        loop {
            match self.peek() {
                Tok::Eof => break,
                Tok::RBrace | Tok::BarBar if in_compound => break,
                Tok::Semi => {
                    self.bump();
                }
                _ => {
                    let start = self.pos;
                    match self.parse_stmt(in_compound) {
                        Ok(Some(s)) => stmts.push(s),
                        Ok(None) => {}
                        Err(()) => self.recover(in_compound, start),
                    }
                }
            }
        }
        stmts
    }

    /// Skips to the end of the broken statement (which started at token
    /// `start`): past the next `;`, to the `}`/`||` that closes the enclosing
    /// compound, or to a line that starts like a new statement.
    fn recover(&mut self, in_compound: bool, start: usize) {
        let mut depth = 0usize;
        loop {
            if depth == 0 && self.pos > start && self.starts_line() {
                return;
            }
            match self.peek() {
                Tok::Eof => return,
                Tok::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::LBrace => depth += 1,
                Tok::RBrace if depth == 0 && in_compound => return,
                Tok::RBrace if depth == 0 => {}
                Tok::RBrace => depth -= 1,
                Tok::BarBar if depth == 0 && in_compound => return,
                _ => {}
            }
            self.bump();
        }
    }

    /// Is the current token the first of its line, and one that can start
    /// a statement?
    fn starts_line(&self) -> bool {
        let stmt_start = matches!(
            self.peek(),
            Tok::Ident(_) | Tok::KwElementclass | Tok::KwRequire | Tok::KwDefine | Tok::KwProvide
        );
        stmt_start
            && self.pos > 0
            && self.idx.span(self.tok().start, self.tok().start).line
                != self.idx.span(self.prev_end(), self.prev_end()).line
    }

    fn parse_stmt(&mut self, in_compound: bool) -> PResult<Option<Stmt>> {
        match self.peek().clone() {
            Tok::KwElementclass => self.parse_elementclass().map(Some),
            Tok::KwRequire | Tok::KwDefine | Tok::KwProvide => {
                let kw = self.bump();
                let Tok::Config(text, start) = self.peek().clone() else {
                    let what = format!("'(' after {}", kw.tok.describe());
                    self.expected(&what);
                    return Err(());
                };
                let end = self.bump().end;
                let cfg = Cfg {
                    text,
                    start,
                    range: (kw.start, end),
                };
                self.end_of_statement(in_compound)?;
                Ok(match kw.tok {
                    Tok::KwRequire => Some(Stmt::Require(cfg)),
                    Tok::KwDefine => Some(Stmt::Define(cfg)),
                    _ => None,
                })
            }
            Tok::KwConnectiontunnel => {
                let t = self.tok().clone();
                self.error_at(
                    (t.start, t.end),
                    "'connectiontunnel' is not supported".into(),
                );
                Err(())
            }
            Tok::RBrace => {
                let t = self.bump();
                self.error_at((t.start, t.end), "unmatched '}'".into());
                Ok(None)
            }
            _ => {
                let c = self.parse_connection(in_compound)?;
                self.end_of_statement(in_compound)?;
                Ok(Some(Stmt::Conn(c)))
            }
        }
    }

    /// After a statement: the next token must end it or start another one.
    fn end_of_statement(&mut self, in_compound: bool) -> PResult<()> {
        match self.peek() {
            Tok::Semi => {
                self.bump();
                Ok(())
            }
            Tok::Eof
            | Tok::Ident(_)
            | Tok::LBracket
            | Tok::LBrace
            | Tok::LParen
            | Tok::KwElementclass
            | Tok::KwRequire
            | Tok::KwDefine
            | Tok::KwProvide => Ok(()),
            Tok::RBrace | Tok::BarBar if in_compound => Ok(()),
            Tok::Arrow | Tok::DArrow if in_compound => Ok(()),
            _ => {
                self.expected("'->' or ';'");
                Err(())
            }
        }
    }

    fn parse_elementclass(&mut self) -> PResult<Stmt> {
        self.bump();
        let Tok::Ident(name) = self.peek().clone() else {
            self.expected("element class name after 'elementclass'");
            return Err(());
        };
        let nt = self.bump();
        let class = match self.peek().clone() {
            Tok::Ident(c) => {
                let t = self.bump();
                ClassExpr::Name(c, (t.start, t.end))
            }
            Tok::LBrace => ClassExpr::Compound(Rc::new(self.parse_compound()?)),
            _ => {
                let what = format!("'{{' or a class name after 'elementclass {name}'");
                self.expected(&what);
                return Err(());
            }
        };
        Ok(Stmt::ElementClass {
            name,
            name_range: (nt.start, nt.end),
            class,
        })
    }

    fn parse_compound(&mut self) -> PResult<CompoundAst> {
        if self.depth >= MAX_NESTING {
            let t = self.tok().clone();
            self.error_at(
                (t.start, t.end),
                format!("compound elements nested too deeply (at most {MAX_NESTING} levels)"),
            );
            return Err(());
        }
        self.depth += 1;
        let r = self.parse_compound_inner();
        self.depth -= 1;
        r
    }

    fn parse_compound_inner(&mut self) -> PResult<CompoundAst> {
        let open = self.bump(); // '{'
        let mut alts = Vec::new();
        let mut extends = false;
        loop {
            if *self.peek() == Tok::Ellipsis {
                let t = self.bump();
                extends = true;
                if alts.is_empty() {
                    self.error_at(
                        (t.start, t.end),
                        "'...' must follow at least one definition and '||'".into(),
                    );
                }
                if *self.peek() != Tok::RBrace {
                    self.expected("'}' after '...'");
                    return Err(());
                }
                self.bump();
                break;
            }
            let alt = self.parse_alt()?;
            alts.push(alt);
            match self.peek() {
                Tok::BarBar => {
                    self.bump();
                }
                Tok::RBrace => {
                    self.bump();
                    break;
                }
                _ => {
                    // only end of file can get here
                    self.error_at(
                        (open.start, open.end),
                        "unterminated compound element: missing '}'".into(),
                    );
                    return Err(());
                }
            }
        }
        Ok(CompoundAst {
            alts,
            extends,
            range: (open.start, self.prev_end()),
        })
    }

    fn parse_alt(&mut self) -> PResult<AltAst> {
        let mut formals = Vec::new();
        let has_formals = matches!(
            (self.peek(), self.peek_at(1)),
            (Tok::Var(_), _) | (Tok::Bar, _) | (Tok::Ident(_), Tok::Var(_))
        );
        if has_formals {
            loop {
                match self.peek().clone() {
                    Tok::Bar if formals.is_empty() => break,
                    Tok::Var(v) => {
                        let t = self.bump();
                        formals.push(FormalAst {
                            keyword: None,
                            var: v,
                            range: (t.start, t.end),
                        });
                    }
                    Tok::Ident(kw) => {
                        let t = self.bump();
                        let Tok::Var(v) = self.peek().clone() else {
                            let what = format!("parameter after keyword '{kw}'");
                            self.expected(&what);
                            return Err(());
                        };
                        let tv = self.bump();
                        formals.push(FormalAst {
                            keyword: Some(kw),
                            var: v,
                            range: (t.start, tv.end),
                        });
                    }
                    _ => {
                        self.expected("compound parameter ('$name' or 'KEYWORD $name')");
                        return Err(());
                    }
                }
                match self.peek() {
                    Tok::Comma => {
                        self.bump();
                    }
                    Tok::Bar => break,
                    _ => {
                        self.expected("',' or '|' after compound parameter");
                        return Err(());
                    }
                }
            }
            self.bump(); // '|'
        }
        let body = self.parse_stmts(true);
        Ok(AltAst { formals, body })
    }

    fn parse_connection(&mut self, in_compound: bool) -> PResult<Conn> {
        let mut groups = vec![self.parse_group(in_compound)?];
        let mut arrows = Vec::new();
        if groups[0].elems.is_empty()
            && (!in_compound || !matches!(self.peek(), Tok::Arrow | Tok::DArrow))
        {
            self.expected("element");
            return Err(());
        }
        while let Tok::Arrow | Tok::DArrow = self.peek() {
            let t = self.bump();
            let kind = if t.tok == Tok::Arrow {
                ArrowKind::Single
            } else {
                ArrowKind::Multi
            };
            arrows.push((kind, (t.start, t.end)));
            let g = self.parse_group(in_compound)?;
            if g.elems.is_empty() && !in_compound {
                let what = format!("element after {}", t.tok.describe());
                self.expected(&what);
                return Err(());
            }
            groups.push(g);
        }
        // ports without element are only allowed at the ends
        let n = groups.len();
        for (gi, g) in groups.iter().enumerate() {
            for e in &g.elems {
                if matches!(e.r, ElemRef::Implicit) {
                    let at_end = (gi == 0 || gi == n - 1) && g.elems.len() == 1;
                    if !in_compound || !at_end || n == 1 {
                        self.errs.push(Diagnostic::error(
                            Some(self.idx.span(e.range.0, e.range.1)),
                            "port without element",
                        ));
                        return Err(());
                    }
                }
            }
        }
        if n == 1 && groups[0].elems.is_empty() {
            self.expected("element");
            return Err(());
        }
        Ok(Conn { groups, arrows })
    }

    /// Parses `element {, element}`; may return an empty group (inside a
    /// compound, before/after an arrow).
    fn parse_group(&mut self, in_compound: bool) -> PResult<Group> {
        let mut g = Group::default();
        if !self.starts_element() {
            return Ok(g);
        }
        loop {
            let e = self.parse_elem(in_compound)?;
            g.elems.push(e);
            if *self.peek() != Tok::Comma {
                break;
            }
            self.bump();
            if !self.starts_element() {
                self.expected("element after ','");
                return Err(());
            }
        }
        Ok(g)
    }

    fn starts_element(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Ident(_) | Tok::LBracket | Tok::LBrace | Tok::LParen
        )
    }

    /// `( statement; ... )`: an element group's connections, which may
    /// begin and end with bare ports (the group's own).
    fn parse_element_group(&mut self) -> PResult<Vec<Stmt>> {
        if self.depth >= MAX_NESTING {
            let t = self.tok().clone();
            self.error_at(
                (t.start, t.end),
                format!("element groups nested too deeply (at most {MAX_NESTING} levels)"),
            );
            return Err(());
        }
        let open = self.bump(); // '('
        self.depth += 1;
        let mut body = Vec::new();
        let r = loop {
            match self.peek() {
                Tok::RParen => {
                    self.bump();
                    break Ok(());
                }
                Tok::Semi => {
                    self.bump();
                }
                Tok::Eof => {
                    self.error_at(
                        (open.start, open.end),
                        "unterminated element group: missing ')'".into(),
                    );
                    break Err(());
                }
                _ => match self.parse_connection(true) {
                    Ok(c) => {
                        body.push(Stmt::Conn(c));
                        if !matches!(self.peek(), Tok::Semi | Tok::RParen | Tok::Eof)
                            && !self.starts_element()
                        {
                            self.expected("';' or ')' in an element group");
                            break Err(());
                        }
                    }
                    Err(()) => break Err(()),
                },
            }
        };
        self.depth -= 1;
        r.map(|()| body)
    }

    fn parse_elem(&mut self, in_compound: bool) -> PResult<Elem> {
        let start = self.tok().start;
        let in_ports = if *self.peek() == Tok::LBracket {
            Some(self.parse_ports()?)
        } else {
            None
        };
        let r = match self.peek().clone() {
            Tok::Ident(name) => {
                let t = self.bump();
                match self.peek().clone() {
                    Tok::ColonColon => {
                        self.bump();
                        let class = match self.peek().clone() {
                            Tok::Ident(c) => {
                                let ct = self.bump();
                                ClassExpr::Name(c, (ct.start, ct.end))
                            }
                            Tok::LBrace => ClassExpr::Compound(Rc::new(self.parse_compound()?)),
                            _ => {
                                self.expected("element class after '::'");
                                return Err(());
                            }
                        };
                        let config = self.parse_opt_config();
                        ElemRef::Decl {
                            name,
                            name_range: (t.start, t.end),
                            class,
                            config,
                        }
                    }
                    Tok::Config(..) => {
                        let config = self.parse_opt_config();
                        ElemRef::Anon {
                            class: ClassExpr::Name(name, (t.start, t.end)),
                            config,
                        }
                    }
                    _ => ElemRef::Bare {
                        name,
                        range: (t.start, t.end),
                    },
                }
            }
            Tok::LBrace => {
                let c = self.parse_compound()?;
                let config = self.parse_opt_config();
                ElemRef::Anon {
                    class: ClassExpr::Compound(Rc::new(c)),
                    config,
                }
            }
            Tok::LParen => ElemRef::Group(self.parse_element_group()?),
            _ if in_ports.is_some() && in_compound => ElemRef::Implicit,
            _ => {
                self.expected("element name or class");
                return Err(());
            }
        };
        let out_ports = if *self.peek() == Tok::LBracket && !matches!(r, ElemRef::Implicit) {
            Some(self.parse_ports()?)
        } else {
            None
        };
        Ok(Elem {
            in_ports,
            r,
            out_ports,
            range: (start, self.prev_end()),
        })
    }

    fn parse_opt_config(&mut self) -> Option<Cfg> {
        if let Tok::Config(text, start) = self.peek().clone() {
            let t = self.bump();
            Some(Cfg {
                text,
                start,
                range: (t.start, t.end),
            })
        } else {
            None
        }
    }

    fn parse_ports(&mut self) -> PResult<Ports> {
        let open = self.bump(); // '['
        let mut ports = Vec::new();
        if *self.peek() != Tok::RBracket {
            loop {
                let t = self.tok().clone();
                match &t.tok {
                    Tok::Ident(s) if s.bytes().all(|c| c.is_ascii_digit()) => {
                        self.bump();
                        match s.parse::<usize>() {
                            Ok(p) if p <= MAX_PORT => ports.push(p),
                            _ => {
                                self.error_at(
                                    (t.start, t.end),
                                    format!("port number {s} is too large (at most {MAX_PORT})"),
                                );
                                return Err(());
                            }
                        }
                    }
                    Tok::Ident(s) => {
                        self.error_at((t.start, t.end), format!("bad port number '{s}'"));
                        return Err(());
                    }
                    _ => {
                        self.expected("port number");
                        return Err(());
                    }
                }
                match self.peek() {
                    Tok::Comma => {
                        self.bump();
                    }
                    Tok::RBracket => break,
                    _ => {
                        self.expected("']' after port number");
                        return Err(());
                    }
                }
            }
        } else {
            // Click reads '[]' as an expandable port, which paraclick
            // does not have; Click allows one a connection.
            let at = |k: usize| self.toks.get(self.pos + k).map(|t| &t.tok);
            let both = matches!(at(1), Some(Tok::Arrow | Tok::DArrow))
                && at(2) == Some(&Tok::LBracket)
                && at(3) == Some(&Tok::RBracket);
            let mut d = Diagnostic::error(
                Some(self.idx.span(open.start, self.tok().end)),
                "empty port list '[]'",
            );
            if both {
                d = d.with_click(None, "at most one expandable port allowed per connection");
            }
            self.errs.push(d);
            return Err(());
        }
        let close = self.bump();
        Ok(Ports {
            ports,
            range: (open.start, close.end),
        })
    }
}

/// How deeply compounds may nest in the source.
const MAX_NESTING: usize = 100;

/// The largest port number accepted in a configuration.
pub const MAX_PORT: usize = 65535;
