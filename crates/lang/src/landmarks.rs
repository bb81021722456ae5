//! Where a configuration's top-level connections are written: what a
//! tool needs to change a user's file in place (insert elements into a
//! connection, cut it) instead of printing the whole graph again.
//!
//! Byte offsets are into the text given. A [`crate::FlatConnection`]'s
//! span runs from the start of the element on the left of its arrow to
//! the end of the element on the right ([`Arrow::made`] finds its arrow).
//! Arrows inside compound (`elementclass`) bodies are not listed: their
//! text is shared by every instance of the compound.
//!
//! ```
//! use paraclick_lang::{landmarks, parse_config, Source};
//!
//! let text = "a :: Idle -> [1] b :: Paint(2); b -> Discard;";
//! let marks = landmarks::arrows(text).unwrap();
//! assert_eq!(marks.len(), 2);
//! let g = parse_config(&Source::new("x", text), &[]).unwrap();
//! let a = landmarks::Arrow::made(&marks, &g.connections[0].span).unwrap();
//! assert_eq!(&text[a.range.0..a.range.1], "->");
//! assert_eq!(&text[a.right[0].range.0..a.right[0].range.1], "[1] b :: Paint(2)");
//! ```

use crate::parser::{ArrowKind, ElemRef, Stmt};
use crate::span::{Diagnostic, LineIndex, Span};

/// A byte range of the text.
pub type Range = (usize, usize);

/// One `->` (or `=>`) of a top-level connection, and the elements on each
/// side of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrow {
    /// The arrow itself.
    pub range: Range,
    /// `=>`: ports paired in order rather than every pair.
    pub multi: bool,
    /// The elements of the group before the arrow (`a, b -> c`: two).
    pub left: Vec<End>,
    /// The elements of the group after it.
    pub right: Vec<End>,
}

/// One element of a connection as written: `[1] name :: Class(config) [2]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    /// The whole element, its ports included.
    pub range: Range,
    /// Its input ports, `[1]`, where written.
    pub in_ports: Option<Range>,
    /// Its output ports, `[2]`, where written.
    pub out_ports: Option<Range>,
}

impl Arrow {
    /// The arrow of `arrows` that made a connection whose span is `span`
    /// (one element before it starts there, one after it ends there).
    pub fn made<'a>(arrows: &'a [Arrow], span: &Span) -> Option<&'a Arrow> {
        arrows.iter().find(|a| {
            a.left.iter().any(|e| e.range.0 == span.start)
                && a.right.iter().any(|e| e.range.1 == span.end)
                && a.range.0 >= span.start
                && a.range.1 <= span.end
        })
    }

    /// Whether the arrow connects one element to one element with `->`:
    /// text inserted after it (`a -> NEW -> b`) changes that connection
    /// alone.
    pub fn single(&self) -> bool {
        !self.multi && self.left.len() == 1 && self.right.len() == 1
    }
}

/// A top-level statement that makes or connects elements (not a
/// `define`, `require` or `elementclass`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// From its first element to its last, and the `;` after it where
    /// only blanks come between.
    pub range: Range,
    /// Its elements (`a :: A -> b, c`: three).
    pub elements: usize,
    /// Its arrows.
    pub arrows: usize,
}

/// The top-level connections of `text` (see [`arrows`]) and its
/// statements, in the order written.
#[derive(Clone, Debug, Default)]
pub struct Landmarks {
    pub arrows: Vec<Arrow>,
    pub statements: Vec<Statement>,
}

/// The arrows of `text`'s top-level connections, in the order written;
/// its parse errors if it has any. Libraries it requires are not read.
pub fn arrows(text: &str) -> Result<Vec<Arrow>, Vec<Diagnostic>> {
    read(text).map(|l| l.arrows)
}

/// `text`'s top-level arrows and statements; its parse errors if it has
/// any. Libraries it requires are not read.
pub fn read(text: &str) -> Result<Landmarks, Vec<Diagnostic>> {
    let idx = LineIndex::new("<text>", text);
    let mut errs = Vec::new();
    let stmts = crate::library::parse_file(&idx, 0, "<text>", text, &mut errs);
    if !errs.is_empty() {
        return Err(errs);
    }
    let mark = |e: &crate::parser::Elem| End {
        range: e.range,
        in_ports: e.in_ports.as_ref().map(|p| p.range),
        out_ports: if matches!(e.r, ElemRef::Implicit) {
            None
        } else {
            e.out_ports.as_ref().map(|p| p.range)
        },
    };
    let mut out = Landmarks::default();
    for s in &stmts {
        let Stmt::Conn(c) = s else { continue };
        let elems = c.groups.iter().flat_map(|g| &g.elems);
        let start = elems.clone().map(|e| e.range.0).min().unwrap_or(0);
        let mut end = elems.clone().map(|e| e.range.1).max().unwrap_or(start);
        let rest = &text[end..];
        let blank = rest.len() - rest.trim_start().len();
        if rest[blank..].starts_with(';') {
            end += blank + 1;
        }
        out.statements.push(Statement {
            range: (start, end),
            elements: elems.count(),
            arrows: c.arrows.len(),
        });
        for (k, (kind, range)) in c.arrows.iter().enumerate() {
            out.arrows.push(Arrow {
                range: *range,
                multi: *kind == ArrowKind::Multi,
                left: c.groups[k].elems.iter().map(mark).collect(),
                right: c.groups[k + 1].elems.iter().map(mark).collect(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_config, Source};

    #[test]
    fn each_connection_finds_its_arrow_and_compound_bodies_are_left_out() {
        let text = "elementclass C { input -> Paint(1) -> output }\n\
                    s :: Idle -> c :: C -> x :: Null, y :: Null;\n\
                    x => [0] d :: Discard; y -> [1]z :: Tee(2)[1] -> d;";
        let marks = arrows(text).unwrap();
        assert_eq!(marks.len(), 5, "{marks:?}");
        let g = parse_config(&Source::new("t", text), &[]).unwrap();
        let find = |from: &str, to: &str| {
            let c = g
                .connections
                .iter()
                .find(|c| g.elements[c.from].name == from && g.elements[c.to].name == to)
                .unwrap();
            Arrow::made(&marks, &c.span)
        };
        // Made inside the compound's body: no top-level arrow. Into the
        // compound: its top-level arrow.
        assert!(find("c/Paint@1", "x").is_none());
        let a = find("s", "c/Paint@1").unwrap();
        assert_eq!(&text[a.right[0].range.0..a.right[0].range.1], "c :: C");
        let a = find("y", "z").unwrap();
        assert!(a.single());
        let r = &a.right[0];
        assert_eq!(&text[r.range.0..r.range.1], "[1]z :: Tee(2)[1]");
        assert_eq!(&text[r.in_ports.unwrap().0..r.in_ports.unwrap().1], "[1]");
        assert_eq!(&text[r.out_ports.unwrap().0..r.out_ports.unwrap().1], "[1]");
        // `=>`: not one connection's alone.
        assert!(!find("x", "d").unwrap().single());
        assert!(arrows("a -> ;").is_err());
        let st = read(text).unwrap().statements;
        assert_eq!(st.len(), 3, "{st:?}");
        assert_eq!(
            &text[st[0].range.0..st[0].range.1],
            "s :: Idle -> c :: C -> x :: Null, y :: Null;"
        );
        assert_eq!((st[0].elements, st[0].arrows), (4, 2));
        assert_eq!(
            &text[st[2].range.0..st[2].range.1],
            "y -> [1]z :: Tee(2)[1] -> d;"
        );
    }
}
