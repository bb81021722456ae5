//! Source files, spans, diagnostics and their rendering.
//!
//! A [`Span`] names a byte range of one source file together with the
//! 1-based line and column of its start. A [`Diagnostic`] is an error
//! message with an optional span and any number of notes. [`render`] turns
//! diagnostics into the text the user sees:
//!
//! ```text
//! conf/r.click:3:13: unknown element class 'Cuonter'
//!    3 | src -> c :: Cuonter -> Discard;
//!      |             ^^^^^^^
//! conf/r.click:3:13: note: did you mean 'Counter'?
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Whether `c` is shown escaped in diagnostics: C0 controls but tab and
/// newline, DEL, C1 controls, and the bidirectional formatting characters
/// (which reorder what a terminal shows).
fn needs_escape(c: char) -> bool {
    matches!(c, '\0'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(
            c,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn push_escaped(out: &mut String, c: char) {
    if needs_escape(c) {
        if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    } else {
        out.push(c);
    }
}

/// `s` with the characters that would act on a terminal rather than show
/// (escape sequences, carriage returns, C1 controls, bidi overrides)
/// written as `\x1b` or `\u{202e}`. Every diagnostic goes through it
/// when rendered, since messages and excerpts quote configuration text,
/// which may come from a control socket; tabs and newlines stay.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// [`escape`], newlines included (for one line of an excerpt).
fn escape_line(s: &str) -> Cow<'_, str> {
    if !s.contains('\n') {
        return escape(s);
    }
    Cow::Owned(escape(s).replace('\n', "\\x0a"))
}

/// How many columns `c` takes once escaped.
fn escaped_width(c: char) -> usize {
    if !needs_escape(c) {
        1
    } else if (c as u32) < 0x80 {
        4
    } else {
        format!("{:x}", c as u32).len() + 4
    }
}

/// One configuration text and the name it is reported under
/// (a path such as `conf/router.click`, or `<expr>` for `-e`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub text: String,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// A range of bytes in a source file. `line` and `col` (both 1-based) give
/// the position of `start`; `col` counts characters, not bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// `file:line:col`, the prefix of every message about this span.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", escape_line(&self.file), self.line, self.col)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", escape_line(&self.file), self.line, self.col)
    }
}

/// An error, where it happened, and notes that help to fix it.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub span: Option<Span>,
    pub message: String,
    pub notes: Vec<(Option<Span>, String)>,
    /// For [`render_click`], where Click's wording or landmark differs:
    /// the location Click reports (an element's declaration rather than a
    /// connection) and the text, whose notes it does not print. A text of
    /// several lines is a context line and its indented messages
    /// (`While configuring 'rw :: IPRewriter':` / `  bad pattern`).
    pub click: Option<(Option<Span>, String)>,
    /// Found by the language's checks although paraclick finds it while
    /// checking the graph (an unknown class): Click's lexer reports it, so
    /// Click's driver does not add "Router could not be initialized!"
    /// (see [`router_not_initialized`]).
    pub language_stage: bool,
}

/// Whether Click's driver would follow these errors, found while building
/// a router, with "Router could not be initialized!": not when any of them
/// is one Click's lexer reports (then no router was made).
pub fn router_not_initialized(diags: &[Diagnostic]) -> bool {
    !diags.iter().any(|d| d.language_stage)
}

impl Diagnostic {
    pub fn error(span: Option<Span>, msg: impl Into<String>) -> Self {
        Diagnostic {
            span,
            message: msg.into(),
            notes: Vec::new(),
            click: None,
            language_stage: false,
        }
    }

    /// Marks an error Click's lexer reports (see
    /// [`Diagnostic::language_stage`]).
    pub fn at_language_stage(mut self) -> Self {
        self.language_stage = true;
        self
    }

    /// Sets how [`render_click`] shows this error: at `span` (the
    /// diagnostic's own if None), as `text`, without notes.
    pub fn with_click(mut self, span: Option<Span>, text: impl Into<String>) -> Self {
        self.click = Some((span, text.into()));
        self
    }

    /// An element's error as Click words it: under a `While configuring
    /// 'NAME :: CLASS':` (or other `stage`) line at the element.
    pub fn in_element(self, stage: &str, name: &str, class: &str, message: &str) -> Self {
        let text = format!("While {stage} '{name} :: {class}':\n  {message}");
        self.with_click(None, text)
    }

    pub fn with_note(mut self, span: Option<Span>, msg: impl Into<String>) -> Self {
        self.notes.push((span, msg.into()));
        self
    }
}

impl fmt::Display for Diagnostic {
    /// One line, without source excerpt: `file:line:col: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.span {
            Some(s) => write!(f, "{}: {}", s, escape(&self.message)),
            None => write!(f, "paraclick: {}", escape(&self.message)),
        }
    }
}

impl std::error::Error for Diagnostic {}

/// The sources a run has read, kept so diagnostics can quote their lines.
#[derive(Clone, Debug, Default)]
pub struct SourceSet {
    sources: Vec<Source>,
    /// Per source, where its lines start: an excerpt finds its line
    /// without reading the file from the start (an error per line of a
    /// large file made rendering quadratic).
    line_starts: Vec<Vec<usize>>,
}

impl SourceSet {
    pub fn new() -> Self {
        SourceSet::default()
    }

    /// Adds a source; a later source with the same name replaces the earlier.
    pub fn add(&mut self, src: Source) {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(src.text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        if let Some(i) = self.sources.iter().position(|s| s.name == src.name) {
            self.sources[i] = src;
            self.line_starts[i] = starts;
        } else {
            self.sources.push(src);
            self.line_starts.push(starts);
        }
    }

    /// Line `line` (1-based) of source `name`, without its newline.
    fn line(&self, name: &str, line: u32) -> Option<(&Source, &str)> {
        let i = self.sources.iter().position(|s| s.name == name)?;
        let (src, starts) = (&self.sources[i], &self.line_starts[i]);
        let k = (line as usize).checked_sub(1)?;
        let start = *starts.get(k)?;
        let end = starts.get(k + 1).map_or(src.text.len(), |e| e - 1);
        Some((src, src.text.get(start..end)?))
    }

    pub fn get(&self, name: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Source> {
        self.sources.iter()
    }
}

/// Renders diagnostics, each with the source line it points at and a caret
/// line under the span. A diagnostic without span renders as
/// `paraclick: message`.
pub fn render(diags: &[Diagnostic], sources: &SourceSet) -> String {
    let mut out = String::new();
    for d in diags {
        match &d.span {
            Some(span) => {
                out.push_str(&format!("{}: {}\n", span, escape(&d.message)));
                excerpt(&mut out, span, sources);
            }
            None => out.push_str(&format!("paraclick: {}\n", escape(&d.message))),
        }
        for (nspan, note) in &d.notes {
            let note = escape(note);
            match nspan.as_ref().or(d.span.as_ref()) {
                Some(s) => {
                    out.push_str(&format!("{}: note: {}\n", s, note));
                    if let Some(ns) = nspan {
                        if Some(ns) != d.span.as_ref() {
                            excerpt(&mut out, ns, sources);
                        }
                    }
                }
                None => out.push_str(&format!("paraclick: note: {}\n", note)),
            }
        }
    }
    out
}

/// Renders diagnostics the way Click's tools print errors, for programs
/// that compare them: `FILE:LINE: message` (no column, no excerpt); an
/// element's errors under one `FILE:LINE: While configuring 'x :: C':`
/// line, each indented by two spaces; a note with a location as
/// `FILE:LINE: note`, a note without one (a suggestion) left out. A
/// configuration given with `-e` (`<expr>`) is named `config`, as Click
/// names it.
pub fn render_click(diags: &[Diagnostic]) -> String {
    let loc = |s: &Span| {
        let file: &str = if &*s.file == "<expr>" {
            "config"
        } else {
            &s.file
        };
        format!("{}:{}: ", escape_line(file), s.line)
    };
    let mut out = String::new();
    // The context line printed last: the same one is not repeated.
    let mut last_head = String::new();
    for d in diags {
        let (at, text) = match &d.click {
            Some((at, text)) => (at.as_ref().or(d.span.as_ref()), text.as_str()),
            None => (d.span.as_ref(), d.message.as_str()),
        };
        let at = at.map(loc).unwrap_or_default();
        let mut lines = text.lines();
        let first = format!("{at}{}", escape(lines.next().unwrap_or("")));
        let rest: Vec<&str> = lines.collect();
        if rest.is_empty() {
            last_head.clear();
            out.push_str(&first);
            out.push('\n');
        } else {
            if first != last_head {
                out.push_str(&first);
                out.push('\n');
                last_head = first;
            }
            for l in rest {
                out.push_str(&escape(l));
                out.push('\n');
            }
        }
        if d.click.is_none() {
            // Notes that point elsewhere ("previously declared here"); a
            // suggestion at the error's own place is paraclick's.
            for (ns, note) in &d.notes {
                if let Some(ns) = ns.as_ref().filter(|ns| Some(*ns) != d.span.as_ref()) {
                    out.push_str(&format!("{}{}\n", loc(ns), escape(note)));
                    last_head.clear();
                }
            }
        }
    }
    out
}

/// Appends the quoted source line and the caret line for `span`.
fn excerpt(out: &mut String, span: &Span, sources: &SourceSet) {
    let Some((src, line)) = sources.line(&span.file, span.line) else {
        return;
    };
    let line = line.strip_suffix('\r').unwrap_or(line);
    let gutter = span.line.to_string().len().max(4);
    out.push_str(&format!(
        "{:>w$} | {}\n",
        span.line,
        escape_line(line),
        w = gutter
    ));
    let mut pad = String::new();
    let mut chars = line.chars();
    for _ in 1..span.col {
        match chars.next() {
            Some('\t') => pad.push('\t'),
            Some(c) => pad.push_str(&" ".repeat(escaped_width(c))),
            None => break,
        }
    }
    // Underline up to the end of the span or the end of this line, in
    // columns of the escaped line.
    let want = src
        .text
        .get(span.start..span.end.min(src.text.len()))
        .map(|s| s.split('\n').next().unwrap_or("").chars().count())
        .unwrap_or(1);
    let n: usize = chars.take(want.max(1)).map(escaped_width).sum();
    let n = n.max(1);
    out.push_str(&format!(
        "{:>w$} | {}{}\n",
        "",
        pad,
        "^".repeat(n),
        w = gutter
    ));
}

/// Maps byte offsets of one source text to spans (line and column).
#[derive(Clone, Debug)]
pub(crate) struct LineIndex {
    /// One segment per file: a configuration and the libraries it
    /// requires share one offset space, each file at its own base.
    segs: Vec<Segment>,
}

#[derive(Clone, Debug)]
struct Segment {
    base: usize,
    file: Arc<str>,
    text: Arc<str>,
    line_starts: Vec<usize>,
    /// Characters before each block of [`BLOCK`] bytes, so that a column
    /// costs at most a block's count even on a line of megabytes (a
    /// configuration on one line made every span cost the line so far).
    chars_before: Vec<usize>,
    /// Line directives (`# 100 "file.click"`, as `cpp` writes them): from
    /// physical line `.0` on, lines are reported as line `.2` of file `.1`.
    directives: Vec<(usize, Arc<str>, usize)>,
}

/// A C preprocessor line directive: `# LINE ["FILE" ...]` or
/// `#line LINE ["FILE"]`; the line number and the file, if named.
pub(crate) fn line_directive(line: &str) -> Option<(usize, Option<&str>)> {
    let rest = line.strip_prefix('#')?.trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix("line").unwrap_or(rest);
    let rest = rest.trim_start_matches([' ', '\t']);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let n: usize = rest[..digits].parse().ok()?;
    let rest = rest[digits..].trim_start_matches([' ', '\t']);
    let file = rest
        .strip_prefix('"')
        .and_then(|r| r.find('"').map(|e| &r[..e]));
    if file.is_none() && !rest.trim_end().is_empty() {
        return None;
    }
    Some((n, file))
}

const BLOCK: usize = 256;

/// Whether byte `b` begins a character (is not a UTF-8 continuation).
fn starts_char(b: &u8) -> bool {
    b & 0xc0 != 0x80
}

impl Segment {
    fn new(base: usize, file: &str, text: &str) -> Segment {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        let mut chars_before = Vec::with_capacity(text.len() / BLOCK + 1);
        let mut n = 0;
        for block in text.as_bytes().chunks(BLOCK) {
            chars_before.push(n);
            n += block.iter().filter(|b| starts_char(b)).count();
        }
        let file: Arc<str> = Arc::from(file);
        let mut directives = Vec::new();
        let mut cur = file.clone();
        for (k, &ls) in line_starts.iter().enumerate() {
            if text.as_bytes().get(ls) != Some(&b'#') {
                continue;
            }
            let end = line_starts.get(k + 1).map_or(text.len(), |e| e - 1);
            if let Some((n, f)) = line_directive(&text[ls..end]) {
                if let Some(f) = f {
                    cur = Arc::from(f);
                }
                // The directive is physical line k + 1; the next is line n.
                directives.push((k + 2, cur.clone(), n));
            }
        }
        Segment {
            base,
            file,
            text: Arc::from(text),
            line_starts,
            chars_before,
            directives,
        }
    }

    /// Characters in `text[..at]`.
    fn chars_to(&self, at: usize) -> usize {
        let k = at / BLOCK;
        let before = self.chars_before.get(k).copied().unwrap_or(0);
        let start = (k * BLOCK).min(at);
        before
            + self.text.as_bytes()[start..at]
                .iter()
                .filter(|b| starts_char(b))
                .count()
    }
}

impl LineIndex {
    pub(crate) fn new(file: &str, text: &str) -> Self {
        LineIndex {
            segs: vec![Segment::new(0, file, text)],
        }
    }

    /// Adds another file (a library); returns the offset its positions
    /// start at.
    pub(crate) fn add_file(&mut self, file: &str, text: &str) -> usize {
        let last = self.segs.last().map_or(0, |s| s.base + s.text.len() + 1);
        self.segs.push(Segment::new(last, file, text));
        last
    }

    /// The span of `start..end` (offsets in the shared space); its `start`
    /// and `end` are offsets in its own file.
    pub(crate) fn span(&self, start: usize, end: usize) -> Span {
        let i = self
            .segs
            .partition_point(|s| s.base <= start)
            .saturating_sub(1);
        let seg = &self.segs[i];
        let (start, end) = (start - seg.base.min(start), end.saturating_sub(seg.base));
        let start = start.min(seg.text.len());
        let end = end.clamp(start, seg.text.len());
        let line = seg.line_starts.partition_point(|&s| s <= start);
        let ls = seg.line_starts[line - 1];
        let col = seg.chars_to(start) - seg.chars_to(ls) + 1;
        let (file, line) = match seg.directives.partition_point(|d| d.0 <= line) {
            0 => (seg.file.clone(), line),
            k => {
                let (from, f, n) = &seg.directives[k - 1];
                (f.clone(), n + (line - from))
            }
        };
        Span {
            file,
            line: line as u32,
            col: col as u32,
            start,
            end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, text: &str) -> SourceSet {
        let mut s = SourceSet::new();
        s.add(Source::new(name, text));
        s
    }

    #[test]
    fn line_index_positions() {
        let idx = LineIndex::new("f", "ab\ncdé\nx");
        let s = idx.span(0, 1);
        assert_eq!((s.line, s.col), (1, 1));
        let s = idx.span(3, 4);
        assert_eq!((s.line, s.col), (2, 1));
        // 'é' is two bytes but one column
        let s = idx.span(8, 9);
        assert_eq!((s.line, s.col), (3, 1));
        let s = idx.span(7, 8);
        assert_eq!((s.line, s.col), (2, 4));
    }

    #[test]
    fn columns_on_a_long_line_count_characters() {
        let text = format!("{}é{}x", "a".repeat(1000), "ü".repeat(300));
        let idx = LineIndex::new("f", &text);
        let at = text.find('x').unwrap();
        let s = idx.span(at, at + 1);
        assert_eq!((s.line, s.col), (1, 1302));
        let s = idx.span(1000, 1002);
        assert_eq!((s.line, s.col), (1, 1001));
        let text2 = format!("{}\n{}y", "ä".repeat(700), "b".repeat(600));
        let idx = LineIndex::new("g", &text2);
        let at = text2.find('y').unwrap();
        assert_eq!(idx.span(at, at + 1).col, 601);
    }

    #[test]
    fn render_with_excerpt_and_note() {
        let text = "src :: InfiniteSource;\n\nsrc -> c :: Cuonter -> Discard;\n";
        let idx = LineIndex::new("conf/r.click", text);
        let start = text.find("Cuonter").unwrap();
        let span = idx.span(start, start + 7);
        let d = Diagnostic::error(Some(span.clone()), "unknown element class 'Cuonter'")
            .with_note(Some(span), "did you mean 'Counter'?");
        let out = render(&[d], &set("conf/r.click", text));
        assert_eq!(
            out,
            "conf/r.click:3:13: unknown element class 'Cuonter'\n\
             \x20  3 | src -> c :: Cuonter -> Discard;\n\
             \x20    |             ^^^^^^^\n\
             conf/r.click:3:13: note: did you mean 'Counter'?\n"
        );
    }

    #[test]
    fn render_without_span_and_note_elsewhere() {
        let text = "a :: X;\na :: Y;\n";
        let idx = LineIndex::new("r", text);
        let d = Diagnostic::error(Some(idx.span(8, 9)), "redeclaration of element 'a'")
            .with_note(Some(idx.span(0, 1)), "'a' previously declared here");
        let out = render(
            &[d, Diagnostic::error(None, "no configuration")],
            &set("r", text),
        );
        assert_eq!(
            out,
            "r:2:1: redeclaration of element 'a'\n\
             \x20  2 | a :: Y;\n\
             \x20    | ^\n\
             r:1:1: note: 'a' previously declared here\n\
             \x20  1 | a :: X;\n\
             \x20    | ^\n\
             paraclick: no configuration\n"
        );
    }

    #[test]
    fn render_keeps_tabs_for_alignment() {
        let text = "\tx -> Foo;";
        let idx = LineIndex::new("t", text);
        let d = Diagnostic::error(Some(idx.span(6, 9)), "m");
        let out = render(&[d], &set("t", text));
        assert!(out.ends_with("     | \t     ^^^\n"), "{out:?}");
    }

    #[test]
    fn render_escapes_terminal_controls() {
        let text = "a :: Idle\x1b[2J\u{202e};\na -> X(\x1b]0;t\x07\r\u{9b});\n";
        let idx = LineIndex::new("t\x1b", text);
        let at = text.find('[').unwrap();
        let d = Diagnostic::error(Some(idx.span(at, at + 2)), "bad port '\x1b[2J'")
            .with_note(Some(idx.span(20, 24)), "in X(\x1b]0;t\x07\r\u{9b})");
        let out = render(std::slice::from_ref(&d), &set("t\x1b", text));
        for bad in ['\x1b', '\x07', '\r', '\u{9b}', '\u{202e}'] {
            assert!(!out.contains(bad), "{bad:?} in {out:?}");
            assert!(!d.to_string().contains(bad));
        }
        assert!(out.contains("Idle\\x1b[2J\\u{202e};"), "{out}");
        // the caret stays under the span in the escaped line
        assert!(out.contains("\n     |              ^^\n"), "{out}");
        // tabs and plain text are untouched
        assert_eq!(escape("a\tb c"), "a\tb c");
    }

    #[test]
    fn render_unknown_file_has_no_excerpt() {
        let idx = LineIndex::new("other", "abc");
        let d = Diagnostic::error(Some(idx.span(1, 2)), "m");
        assert_eq!(render(&[d], &SourceSet::new()), "other:1:2: m\n");
    }
}
