//! Lexer for the Click language.
//!
//! Tokens: identifiers (letters, digits, `_`, `@`, and `/` inside a name),
//! parameters `$name`, the punctuation `-> => :: ; , ( ) [ ] { } | || ...`,
//! the keywords `elementclass require define provide connectiontunnel`, and
//! configuration strings. A `(` that follows an identifier, a `}` or one of
//! the keywords `require`/`define`/`provide` starts a configuration string,
//! which runs to the matching `)`; quotes and comments inside it do not count
//! for balancing, and its text is kept verbatim.

use crate::span::{Diagnostic, LineIndex};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident(String),
    Var(String),
    Arrow,
    DArrow,
    ColonColon,
    Semi,
    Comma,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Bar,
    BarBar,
    Ellipsis,
    /// Raw configuration text and the byte offset where it starts.
    Config(String, usize),
    KwElementclass,
    KwRequire,
    KwDefine,
    KwProvide,
    KwConnectiontunnel,
    Eof,
}

impl Tok {
    /// How the token is named in error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Var(s) => format!("'${s}'"),
            Tok::Arrow => "'->'".into(),
            Tok::DArrow => "'=>'".into(),
            Tok::ColonColon => "'::'".into(),
            Tok::Semi => "';'".into(),
            Tok::Comma => "','".into(),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::Bar => "'|'".into(),
            Tok::BarBar => "'||'".into(),
            Tok::Ellipsis => "'...'".into(),
            Tok::Config(..) => "configuration string".into(),
            Tok::KwElementclass => "'elementclass'".into(),
            Tok::KwRequire => "'require'".into(),
            Tok::KwDefine => "'define'".into(),
            Tok::KwProvide => "'provide'".into(),
            Tok::KwConnectiontunnel => "'connectiontunnel'".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

pub(crate) fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'@'
}

pub(crate) fn is_var_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `s` with its line directives (`# 100 "file"` lines, which the line
/// index reads) blanked, keeping every offset.
fn without_directives(s: &str) -> String {
    if !s.contains("\n#") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for (k, line) in s.split_inclusive('\n').enumerate() {
        if k > 0 && crate::span::line_directive(line.trim_end_matches('\n')).is_some() {
            out.extend(line.chars().map(|c| if c == '\n' { c } else { ' ' }));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Tokenizes `text`. Errors go to `errs`; the token list always ends in `Eof`.
pub(crate) fn lex(text: &str, idx: &LineIndex, errs: &mut Vec<Diagnostic>) -> Vec<Token> {
    let b = text.as_bytes();
    let mut toks: Vec<Token> = Vec::new();
    let mut i = 0;
    let mut last_bad: Option<usize> = None; // end of the previous unexpected character
    while i < b.len() {
        let c = b[i];
        let start = i;
        // whitespace
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // comments
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match text[i + 2..].find("*/") {
                Some(p) => i = i + 2 + p + 2,
                None => {
                    errs.push(Diagnostic::error(
                        Some(idx.span(i, i + 2)),
                        "unterminated comment: missing '*/'",
                    ));
                    i = b.len();
                }
            }
            continue;
        }
        // '#' at the start of a line: "#!" interpreter lines and line directives
        if c == b'#' && (i == 0 || b[i - 1] == b'\n') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let two = b.get(i + 1).copied();
        let tok = match c {
            b'-' if two == Some(b'>') => {
                i += 2;
                Tok::Arrow
            }
            b'=' if two == Some(b'>') => {
                i += 2;
                Tok::DArrow
            }
            b':' if two == Some(b':') => {
                i += 2;
                Tok::ColonColon
            }
            b'|' if two == Some(b'|') => {
                i += 2;
                Tok::BarBar
            }
            b'|' => {
                i += 1;
                Tok::Bar
            }
            b'.' if two == Some(b'.') && b.get(i + 2) == Some(&b'.') => {
                i += 3;
                Tok::Ellipsis
            }
            b';' => {
                i += 1;
                Tok::Semi
            }
            b',' => {
                i += 1;
                Tok::Comma
            }
            b')' => {
                i += 1;
                Tok::RParen
            }
            b'[' => {
                i += 1;
                Tok::LBracket
            }
            b']' => {
                i += 1;
                Tok::RBracket
            }
            b'{' => {
                i += 1;
                Tok::LBrace
            }
            b'}' => {
                i += 1;
                Tok::RBrace
            }
            b'(' => {
                let config_follows = matches!(
                    toks.last().map(|t| &t.tok),
                    Some(Tok::Ident(_))
                        | Some(Tok::RBrace)
                        | Some(Tok::KwRequire)
                        | Some(Tok::KwDefine)
                        | Some(Tok::KwProvide)
                );
                if config_follows {
                    match scan_config(text, i, idx, errs) {
                        Some(close) => {
                            let content = without_directives(&text[i + 1..close]);
                            let t = Tok::Config(content, i + 1);
                            i = close + 1;
                            t
                        }
                        None => {
                            // error reported; give up on the rest of the file
                            i = b.len();
                            continue;
                        }
                    }
                } else {
                    i += 1;
                    Tok::LParen
                }
            }
            b'$' if two.is_some_and(is_var_byte) => {
                i += 1;
                while i < b.len() && is_var_byte(b[i]) {
                    i += 1;
                }
                Tok::Var(text[start + 1..i].to_string())
            }
            c if is_ident_byte(c) => {
                while i < b.len() {
                    let slash_inside =
                        b[i] == b'/' && b.get(i + 1).is_some_and(|&n| is_ident_byte(n));
                    if is_ident_byte(b[i]) || slash_inside {
                        i += 1;
                    } else {
                        break;
                    }
                }
                match &text[start..i] {
                    "elementclass" => Tok::KwElementclass,
                    "require" => Tok::KwRequire,
                    "define" => Tok::KwDefine,
                    "provide" => Tok::KwProvide,
                    "connectiontunnel" => Tok::KwConnectiontunnel,
                    s => Tok::Ident(s.to_string()),
                }
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                let len = ch.len_utf8();
                if last_bad != Some(i) {
                    let what = match ch {
                        '"' | '\'' => format!(
                            "unexpected {ch}: quoted strings are only allowed inside configuration strings"
                        ),
                        _ => format!("unexpected character '{}'", ch.escape_debug()),
                    };
                    errs.push(Diagnostic::error(Some(idx.span(i, i + len)), what));
                }
                i += len;
                last_bad = Some(i);
                continue;
            }
        };
        toks.push(Token { tok, start, end: i });
    }
    toks.push(Token {
        tok: Tok::Eof,
        start: b.len(),
        end: b.len(),
    });
    toks
}

/// Scans the configuration string whose `(` is at `open`. Returns the index
/// of the matching `)`, or reports an error and returns `None`.
fn scan_config(
    text: &str,
    open: usize,
    idx: &LineIndex,
    errs: &mut Vec<Diagnostic>,
) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 1usize;
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'"' | b'\'' => {
                let q = b[i];
                let qstart = i;
                i += 1;
                while i < b.len() && b[i] != q {
                    if q == b'"' && b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= b.len() {
                    errs.push(
                        Diagnostic::error(
                            Some(idx.span(qstart, qstart + 1)),
                            "unterminated string in configuration",
                        )
                        .with_note(
                            Some(idx.span(open, open + 1)),
                            "configuration string starts here",
                        ),
                    );
                    return None;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => match text[i + 2..].find("*/") {
                Some(p) => {
                    i = i + 2 + p + 2;
                    continue;
                }
                None => {
                    errs.push(Diagnostic::error(
                        Some(idx.span(i, i + 2)),
                        "unterminated comment: missing '*/'",
                    ));
                    return None;
                }
            },
            b'\\' => i += 1,
            _ => {}
        }
        i += 1;
    }
    errs.push(Diagnostic::error(
        Some(idx.span(open, open + 1)),
        "unterminated configuration string: missing ')'",
    ));
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> (Vec<Tok>, Vec<String>) {
        let idx = LineIndex::new("t", text);
        let mut errs = Vec::new();
        let t = lex(text, &idx, &mut errs);
        (
            t.into_iter().map(|t| t.tok).collect(),
            errs.iter().map(|d| d.to_string()).collect(),
        )
    }

    fn id(s: &str) -> Tok {
        Tok::Ident(s.into())
    }

    #[test]
    fn punctuation_and_names() {
        let (t, e) = toks("a/b :: C@1 -> [0] x => y; {$v | } || ... ,");
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(
            t,
            vec![
                id("a/b"),
                Tok::ColonColon,
                id("C@1"),
                Tok::Arrow,
                Tok::LBracket,
                id("0"),
                Tok::RBracket,
                id("x"),
                Tok::DArrow,
                id("y"),
                Tok::Semi,
                Tok::LBrace,
                Tok::Var("v".into()),
                Tok::Bar,
                Tok::RBrace,
                Tok::BarBar,
                Tok::Ellipsis,
                Tok::Comma,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn comments_end_identifiers() {
        let (t, e) = toks("an/identifier/with/slashes//too/many\nb/*c*/d");
        assert!(e.is_empty());
        assert_eq!(
            t,
            vec![id("an/identifier/with/slashes"), id("b"), id("d"), Tok::Eof]
        );
    }

    #[test]
    fn config_strings() {
        let (t, e) = toks("C1(simple string) C2(with (balanced) parens) C3(\")quoted\" paren)");
        assert!(e.is_empty());
        assert_eq!(t[1], Tok::Config("simple string".into(), 3));
        assert_eq!(t[3], Tok::Config("with (balanced) parens".into(), 21));
        assert!(matches!(&t[5], Tok::Config(s, _) if s == "\")quoted\" paren"));
        let (t, _) = toks("C4(// end-of-line comment)\n still going!) C5(/* ) */ and \\) x)");
        assert!(
            matches!(&t[1], Tok::Config(s, _) if s == "// end-of-line comment)\n still going!")
        );
        assert!(matches!(&t[3], Tok::Config(s, _) if s == "/* ) */ and \\) x"));
        let (t, _) = toks("require(package x) define($a 1) {}(1) ( ");
        assert!(matches!(&t[1], Tok::Config(s, _) if s == "package x"));
        assert!(matches!(&t[3], Tok::Config(s, _) if s == "$a 1"));
        assert!(matches!(&t[6], Tok::Config(s, _) if s == "1"));
        assert_eq!(t[7], Tok::LParen);
    }

    #[test]
    fn keywords_and_hash_lines() {
        let (t, e) = toks("#!/usr/bin/click\nelementclass require define provide connectiontunnel");
        assert!(e.is_empty());
        assert_eq!(
            t,
            vec![
                Tok::KwElementclass,
                Tok::KwRequire,
                Tok::KwDefine,
                Tok::KwProvide,
                Tok::KwConnectiontunnel,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn lexical_errors() {
        let (_, e) = toks("a -> b /* never closed");
        assert_eq!(e, vec!["t:1:8: unterminated comment: missing '*/'"]);
        let (_, e) = toks("x :: Foo(1, 2\n-> y;");
        assert_eq!(
            e,
            vec!["t:1:9: unterminated configuration string: missing ')'"]
        );
        let (_, e) = toks("x :: Foo(\"abc) -> y;");
        assert_eq!(e, vec!["t:1:10: unterminated string in configuration"]);
        let (_, e) = toks("x :: Foo('abc) -> y;");
        assert_eq!(e, vec!["t:1:10: unterminated string in configuration"]);
        let (_, e) = toks("x :: Foo(/* ) -> y;");
        assert_eq!(e, vec!["t:1:10: unterminated comment: missing '*/'"]);
        let (t, e) = toks("a %% -> b ~ \"s\"");
        assert_eq!(
            e,
            vec![
                "t:1:3: unexpected character '%'",
                "t:1:11: unexpected character '~'",
                "t:1:13: unexpected \": quoted strings are only allowed inside configuration strings",
                "t:1:15: unexpected \": quoted strings are only allowed inside configuration strings",
            ]
        );
        assert_eq!(t, vec![id("a"), Tok::Arrow, id("b"), id("s"), Tok::Eof]);
    }
}
