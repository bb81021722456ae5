//! A split written as the user's own file: the text as it is (defines,
//! compounds, comments, names and layout), changed only where the split
//! changes the graph, and a list of those changes for the comment at the
//! top of the output.
//!
//! What is changed, and how:
//! - a connection the split re-points (`a -> b` now through a new Queue
//!   and Unqueue, or a HashSwitch): the new elements are declared inside
//!   it, after its arrow (`a -> par_q :: Queue(1000) -> par_u ::
//!   Unqueue(BURST 32) -> b`); where the new path does not come back to
//!   `b`, the connection is cut there (`a -> NEW; b ...`);
//! - an element whose configuration changes (a Counter's `REPLICAS`, a
//!   shared-out queue capacity, a FromDevice's fanout queue): its
//!   configuration, in place, the arguments as written kept where the
//!   change only adds some;
//! - everything else new (replicas, their queues and connections): a block
//!   at the end of the file, after a comment naming the rewrite, then the
//!   placement's `StaticThreadSched` line. A replica of an element keeps
//!   its class and configuration as written (`WorkPackage($W)`), so the
//!   defines still reach it; an anonymous element the new connections
//!   reach is given its name in place (`WorkPackage@12 :: WorkPackage($W)`).
//!
//! Where that cannot be done, [`rewrite_text`] says why and the caller
//! writes the whole graph flattened instead: a connection or element the
//! split changes is inside a compound's body (shared by every instance),
//! a changed connection is written in a group or with `=>` (`a, b -> c`:
//! text inserted there would change the others too), the configuration
//! has its own StaticThreadSched (which the placement replaces) or
//! requires files (found relative to where it is read). The text is
//! parsed again and must give exactly the rewrite's graph (the same
//! elements, configurations and connections, new names aside); where it
//! does not, the flattened graph is written too.

use super::*;
use paraclick_lang::landmarks::{self, Arrow};
use paraclick_lang::print::protect_vars;

/// A split written as the user's text ([`rewrite_text`]).
#[derive(Clone, Debug)]
pub struct OwnText {
    /// The configuration: the user's text, edited.
    pub text: String,
    /// What was changed, one line each (`line 27: ...`), for the comment
    /// at the top of the output.
    pub changes: Vec<String>,
}

/// Candidate `c` as written out ([`output_text`]).
#[derive(Clone, Debug)]
pub struct Written {
    /// Comment lines for the top of the output: what the rewrite changed
    /// in the user's file, or why it is written flattened.
    pub top: String,
    /// The configuration.
    pub body: String,
    /// `body` is the user's own text: read it with the same defines.
    pub own_text: bool,
}

/// Candidate `c` of the configuration `src` (read with `defines`) for `n`
/// threads, as written out: a placement as the user's text and one line
/// ([`placement_text`]), a split as the smallest change to that text
/// ([`rewrite_text`]); else, and where those cannot be written, the whole
/// graph flattened, its first line saying which rewrite and why. Pinned
/// by the placement unless `handoff` (to the adaptive scheduler).
pub fn output_text(
    src: &Source,
    defines: &[(String, String)],
    gr: &Graph,
    c: &Candidate,
    n: usize,
    handoff: bool,
) -> Written {
    if let Some(body) = placement_text(&src.text, gr, c, n, handoff) {
        return Written {
            top: String::new(),
            body,
            own_text: true,
        };
    }
    let why = {
        match rewrite_text(&src.text, defines, gr, c, n, handoff) {
            Ok(t) => {
                let mut top = format!(
                    "// {} rewritten for -j {n}: {}\n// the file as written, changed only here:\n",
                    src.name, c.name
                );
                for l in &t.changes {
                    let _ = writeln!(top, "//   {l}");
                }
                return Written {
                    top,
                    body: t.text,
                    own_text: true,
                };
            }
            Err(why) => why,
        }
    };
    let unpinned;
    let c = if handoff {
        unpinned = Candidate {
            task_names: vec![None; c.task_names.len()],
            ..c.clone()
        };
        &unpinned
    } else {
        c
    };
    Written {
        top: format!(
            "// {} rewritten for -j {n}: {}; written flattened (defines substituted, \
             compounds expanded, comments left out): {why}\n",
            src.name, c.name
        ),
        body: paraclick_lang::print_flat(&rewrite(gr, c, n)),
        own_text: false,
    }
}

/// Where a chain written at the end may break its line (before an arrow).
const BREAK: &str = "\u{0} ->";

/// One change to the text: bytes `start..end` replaced by `with`.
struct Edit {
    start: usize,
    end: usize,
    with: String,
}

/// The rewrite of split candidate `c` as the smallest change to `text`,
/// the configuration `gr` was parsed from (with `defines`); with the
/// placement's StaticThreadSched unless `handoff`. Err says why the text
/// cannot carry it (the module's documentation lists the cases).
pub fn rewrite_text(
    text: &str,
    defines: &[(String, String)],
    gr: &Graph,
    c: &Candidate,
    n: usize,
    handoff: bool,
) -> Result<OwnText, String> {
    let a = &gr.g;
    if !a.requirements.is_empty() || text.contains("require(") {
        return Err("it requires files (found relative to where it is read)".into());
    }
    if a.elements.iter().any(|e| e.name == "par_sched") {
        return Err("it has an element named par_sched".into());
    }
    let mut b = a.clone();
    for part in c.rewrite.parts() {
        rewrite_part(&mut b, gr, part, n);
    }
    let marks = landmarks::read(text).map_err(|e| {
        format!(
            "it does not parse on its own: {}",
            e.first().map(|d| d.message.as_str()).unwrap_or("")
        )
    })?;
    let mut w = Writer {
        text,
        a,
        b: &b,
        edits: Vec::new(),
        changes: Vec::new(),
        declared: vec![false; b.elements.len()],
        written: vec![false; b.connections.len()],
        named: HashMap::new(),
    };
    // The configuration's own StaticThreadScheds: the plan's placement
    // (or the adaptive scheduler) places every task instead.
    let gone: HashSet<usize> = (0..a.elements.len())
        .filter(|&x| places_tasks(&a.elements[x].class))
        .collect();
    for &x in &gone {
        w.comment_out(x, &marks.statements, handoff)?;
    }
    // Configurations changed in place.
    for (i, (ea, eb)) in a.elements.iter().zip(&b.elements).enumerate() {
        if ea.config != eb.config {
            w.reconfigure(i)?;
        }
    }
    // Connections re-pointed: in the order written, so that an element
    // is declared before a later connection names it.
    let mut changed: Vec<(usize, &Arrow)> = Vec::new();
    for (i, (ca, cb)) in a.connections.iter().zip(&b.connections).enumerate() {
        if (ca.from, ca.from_port, ca.to, ca.to_port) == (cb.from, cb.from_port, cb.to, cb.to_port)
        {
            continue;
        }
        let what = format!(
            "its connection {} [{}] -> [{}] {}",
            a.elements[ca.from].name, ca.from_port, ca.to_port, a.elements[ca.to].name
        );
        if (ca.from, ca.from_port) != (cb.from, cb.from_port) {
            return Err(format!("{what} changes where it starts"));
        }
        match Arrow::made(&marks.arrows, &ca.span) {
            None => {
                return Err(format!(
                    "{what}, which the split changes, is written inside a compound's body"
                ))
            }
            Some(ar) if !ar.single() => {
                return Err(format!(
                    "{what}, which the split changes, is written in a group or with '=>'"
                ))
            }
            Some(ar) => changed.push((i, ar)),
        }
    }
    changed.sort_by_key(|(_, ar)| ar.range.0);
    for (i, ar) in changed {
        w.splice(i, ar)?;
    }
    // The rest at the end, as chains: from an element declared already,
    // through the new ones each declared where first reached.
    let mut tail = String::new();
    let _ = writeln!(tail, "\n// paraclick parallelize -j {n}: {}", c.name);
    let (na, nca) = (a.elements.len(), a.connections.len());
    let before: Vec<bool> = w.declared.clone();
    loop {
        let ready = (nca..b.connections.len()).find(|&j| {
            let from = b.connections[j].from;
            !w.written[j] && (from < na || w.declared[from])
        });
        let line = match ready {
            Some(j) => {
                let cj = &b.connections[j];
                w.written[j] = true;
                let from = w.reference(cj.from)?;
                let (rest, _, _) = w.follow(cj.to, cj.to_port, None, BREAK)?;
                format!("{from}{}{BREAK}{rest}", port(cj.from_port, "[", "]"))
            }
            // A new element no connection reaches yet (a source's
            // replica): declared, and on along its first connection.
            None => match (na..b.elements.len()).find(|&x| !w.declared[x]) {
                Some(x) => {
                    w.declared[x] = true;
                    let mut line = w.declaration(x);
                    let next = (nca..b.connections.len())
                        .filter(|&j| !w.written[j] && b.connections[j].from == x)
                        .min_by_key(|&j| b.connections[j].from_port);
                    if let Some(j) = next {
                        let cj = &b.connections[j];
                        w.written[j] = true;
                        let (rest, _, _) = w.follow(cj.to, cj.to_port, None, BREAK)?;
                        let _ = write!(line, "{}{BREAK}{rest}", port(cj.from_port, "[", "]"));
                    }
                    line
                }
                None => break,
            },
        };
        // A long chain one element a line, as a user would write it.
        let sep = if line.len() > 100 { "\n    ->" } else { " ->" };
        let _ = writeln!(tail, "{};", line.replace(BREAK, sep));
    }
    let added: Vec<&str> = (na..b.elements.len())
        .filter(|&x| !before[x])
        .map(|x| b.elements[x].name.as_str())
        .collect();
    if !added.is_empty() {
        let more = added.len().saturating_sub(8);
        w.changes.push(format!(
            "at the end: {} element(s) added ({}{}) and their connections",
            added.len(),
            added[..added.len() - more].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    let Writer {
        mut edits, changes, ..
    } = w;
    let mut out = apply(text, &mut edits)?;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&tail);
    // Read again, it must be the rewrite; the tasks' names as read.
    let names = same_as(&out, defines, a, &b, &gone)?;
    let pins: Vec<String> = c
        .task_names
        .iter()
        .zip(&c.assign)
        .filter_map(|(nm, &th)| {
            let nm = nm.as_ref()?;
            Some(format!("{} {}", names.get(nm).unwrap_or(nm), th % n.max(1)))
        })
        .collect();
    let mut changes = changes;
    // By line, those at the end last.
    changes.sort_by_key(|l| {
        l.strip_prefix("line ")
            .and_then(|r| r.split(':').next()?.parse::<usize>().ok())
            .unwrap_or(usize::MAX)
    });
    if !handoff && !pins.is_empty() {
        let _ = writeln!(out, "par_sched :: StaticThreadSched({});", pins.join(", "));
        changes.push("at the end: the placement (par_sched :: StaticThreadSched)".into());
    }
    Ok(OwnText { text: out, changes })
}

/// `[p]` (between `open` and `close`), or nothing for port 0.
fn port(p: usize, open: &str, close: &str) -> String {
    if p == 0 {
        String::new()
    } else {
        format!("{open}{p}{close}")
    }
}

/// The edits of `text`, applied: none may overlap another.
fn apply(text: &str, edits: &mut [Edit]) -> Result<String, String> {
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for e in edits.iter() {
        if e.start < at {
            return Err("two of its changes fall on the same text".into());
        }
        out.push_str(&text[at..e.start]);
        out.push_str(&e.with);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

struct Writer<'a> {
    text: &'a str,
    /// The configuration's graph, and the rewrite's (the same elements
    /// and connections first, its new ones after).
    a: &'a FlatGraph,
    b: &'a FlatGraph,
    edits: Vec<Edit>,
    changes: Vec<String>,
    /// Per element of `b`: declared in the text written so far (new
    /// elements only).
    declared: Vec<bool>,
    /// Per connection of `b`: written.
    written: Vec<bool>,
    /// Anonymous elements of the configuration given a name in place.
    named: HashMap<usize, String>,
}

impl Writer<'_> {
    /// The 1-based line of byte `at` of the text.
    fn line(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].matches('\n').count() + 1
    }

    /// The text of element `x` of the configuration (`Class(config)`),
    /// where it is written at top level.
    fn source(&self, x: usize) -> Option<&str> {
        let e = &self.a.elements[x];
        if e.name.contains('/') {
            return None;
        }
        self.text.get(e.span.start..e.span.end)
    }

    /// `Class(config)` for configuration `config` of an element like
    /// element `x` of the configuration: `x`'s own text where the
    /// configuration is `x`'s, or `x`'s with the arguments `config` adds
    /// after them; None where neither.
    fn like(&self, x: usize, config: &str) -> Option<String> {
        let src = self.source(x)?;
        let own = &self.a.elements[x].config;
        if config == own {
            return Some(src.to_string());
        }
        let more = config.strip_prefix(own.as_str())?;
        if own.trim().is_empty() && !src.contains('(') {
            return Some(format!("{src}({})", protect_vars(config)));
        }
        let more = more.strip_prefix(", ")?;
        let body = src.strip_suffix(')')?;
        Some(format!("{body}, {})", protect_vars(more)))
    }

    /// `Class(config)` of element `x` of the rewrite, as printed.
    fn printed(&self, x: usize) -> String {
        let e = &self.b.elements[x];
        if e.config.is_empty() {
            e.class.clone()
        } else {
            format!("{}({})", e.class, protect_vars(&e.config))
        }
    }

    /// `name :: Class(config)` for new element `x`: a replica (`NAME_rR`
    /// of element NAME, of its class) as its original is written.
    fn declaration(&self, x: usize) -> String {
        let e = &self.b.elements[x];
        let orig = e
            .name
            .rsplit_once("_r")
            .filter(|(_, r)| r.parse::<usize>().is_ok())
            .and_then(|(o, _)| self.a.find(o))
            .filter(|&o| self.a.elements[o].class == e.class);
        let class = orig
            .and_then(|o| self.like(o, &e.config))
            .unwrap_or_else(|| self.printed(x));
        format!("{} :: {class}", e.name)
    }

    /// How the text names element `x` of the rewrite: a new element or
    /// a named one by its name; an anonymous one of the configuration is
    /// given its name in place. Err for one inside a compound.
    fn reference(&mut self, x: usize) -> Result<String, String> {
        let na = self.a.elements.len();
        let e = &self.b.elements[x];
        if x >= na {
            return Ok(e.name.clone());
        }
        if e.name.contains('/') {
            return Err(format!(
                "the split connects to {}, inside a compound (its body is shared by every instance)",
                e.name
            ));
        }
        if !e.anonymous {
            return Ok(e.name.clone());
        }
        if let Some(nm) = self.named.get(&x) {
            return Ok(nm.clone());
        }
        let at = e.span.start;
        self.edits.push(Edit {
            start: at,
            end: at,
            with: format!("{} :: ", e.name),
        });
        self.changes.push(format!(
            "line {}: the anonymous {} named {}, to be connected to below",
            self.line(at),
            e.class,
            e.name
        ));
        self.named.insert(x, e.name.clone());
        Ok(e.name.clone())
    }

    /// The statement that makes element `x` of the configuration (a
    /// StaticThreadSched), commented out: `// ` before each of its lines
    /// where it has them to itself, else inside `/* */`. Err where it
    /// makes other elements too, or is inside a compound.
    fn comment_out(
        &mut self,
        x: usize,
        statements: &[landmarks::Statement],
        handoff: bool,
    ) -> Result<(), String> {
        let e = &self.a.elements[x];
        let no = |why: &str| Err(format!("its {} {} {why}", e.class, e.name));
        if e.name.contains('/') {
            return no("is inside a compound");
        }
        let Some(st) = statements.iter().find(|s| {
            s.range.0 <= e.span.start && e.span.end <= s.range.1 && s.elements == 1 && s.arrows == 0
        }) else {
            return no("is made in a statement with other elements");
        };
        let text = self.text;
        let (s0, s1) = st.range;
        let stmt = &text[s0..s1];
        let line_start = text[..s0].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[s1..].find('\n').map_or(text.len(), |i| s1 + i);
        let after = text[s1..line_end].trim_start();
        let with = if text[line_start..s0].trim().is_empty()
            && (after.is_empty() || after.starts_with("//"))
        {
            format!("// {}", stmt.replace('\n', "\n// "))
        } else if !stmt.contains("*/") {
            format!("/* {stmt} */")
        } else {
            return no("cannot be commented out");
        };
        self.changes.push(format!(
            "line {}: its own {}{} commented out: {}",
            self.line(s0),
            e.class,
            if e.anonymous {
                String::new()
            } else {
                format!(" {}", e.name)
            },
            if handoff {
                "the adaptive scheduler places every task"
            } else {
                "par_sched, at the end, places every task"
            }
        ));
        self.edits.push(Edit {
            start: s0,
            end: s1,
            with,
        });
        Ok(())
    }

    /// Element `x` of the configuration, configured as in the rewrite.
    fn reconfigure(&mut self, x: usize) -> Result<(), String> {
        let e = &self.b.elements[x];
        let Some(src) = self.source(x) else {
            return Err(format!(
                "the split changes the configuration of {}, inside a compound",
                e.name
            ));
        };
        let new = self.like(x, &e.config).unwrap_or_else(|| self.printed(x));
        let span = &self.a.elements[x].span;
        let what = match new.strip_suffix(')').zip(src.strip_suffix(')')) {
            Some((n, o)) if n.starts_with(o) => {
                format!("`{}` added to its arguments", &n[o.len()..])
            }
            _ => format!("now `{new}` (was `{src}`)"),
        };
        self.changes.push(format!(
            "line {}: {}: {what}",
            self.line(span.start),
            e.name
        ));
        self.edits.push(Edit {
            start: span.start,
            end: span.end,
            with: new,
        });
        Ok(())
    }

    /// The text after an arrow into input `inp` of element `x` of the
    /// rewrite: `x` declared where it is new (`name :: Class(config)`),
    /// then on along its first unwritten connection while that leads to
    /// another new element, up to `stop` (an element and input: the
    /// text then ends with an arrow into it) or an element declared
    /// already (named); each arrow written as `arrow`. Whether it
    /// stopped at `stop`, and the elements it passes (`name (Class)`).
    fn follow(
        &mut self,
        mut x: usize,
        mut inp: usize,
        stop: Option<(usize, usize)>,
        arrow: &str,
    ) -> Result<(String, bool, Vec<String>), String> {
        let b = self.b;
        let (na, nca) = (self.a.elements.len(), self.a.connections.len());
        let mut s = String::new();
        let mut passed = Vec::new();
        loop {
            let pin = port(inp, "[", "]");
            if x < na || self.declared[x] {
                let r = self.reference(x)?;
                let _ = write!(s, " {pin}{r}");
                passed.push(r);
                return Ok((s, false, passed));
            }
            let _ = write!(s, " {pin}{}", self.declaration(x));
            passed.push(format!("{} ({})", b.elements[x].name, b.elements[x].class));
            self.declared[x] = true;
            let next = (nca..b.connections.len())
                .filter(|&j| !self.written[j] && b.connections[j].from == x)
                .min_by_key(|&j| b.connections[j].from_port);
            let Some(j) = next else {
                return Ok((s, false, passed));
            };
            let cj = &b.connections[j];
            let out = port(cj.from_port, "[", "]");
            let new = cj.to >= na && !self.declared[cj.to];
            if Some((cj.to, cj.to_port)) == stop {
                self.written[j] = true;
                let _ = write!(s, "{out}{arrow}");
                return Ok((s, true, passed));
            }
            if !new && stop.is_some() {
                return Ok((s, false, passed));
            }
            self.written[j] = true;
            let _ = write!(s, "{out}{arrow}");
            x = cj.to;
            inp = cj.to_port;
        }
    }

    /// Connection `i` of the configuration, written at `ar`, re-pointed
    /// as in the rewrite: the new elements on its way declared after the
    /// arrow, back to where it went (or cut there, where the new path
    /// does not come back).
    fn splice(&mut self, i: usize, ar: &Arrow) -> Result<(), String> {
        let (a, b) = (self.a, self.b);
        let ca = &a.connections[i];
        let cb = &b.connections[i];
        let (s, back, passed) = self.follow(cb.to, cb.to_port, Some((ca.to, ca.to_port)), " ->")?;
        let name = |x: usize| {
            let e = &a.elements[x];
            if e.anonymous {
                e.class.clone()
            } else {
                e.name.clone()
            }
        };
        let was = format!(
            "{}{} -> {}{}",
            name(ca.from),
            port(ca.from_port, "[", "]"),
            port(ca.to_port, "[", "]"),
            name(ca.to)
        );
        let line = self.line(ar.range.0);
        let (end, with, how) = if back {
            (ar.range.1, s, "now passes through")
        } else {
            // Cut: the element after the arrow starts a statement of its
            // own (without its input ports).
            let end = ar.right[0].in_ports.map_or(ar.range.1, |p| p.1);
            (end, format!("{s};"), "now goes to")
        };
        self.changes
            .push(format!("line {line}: `{was}` {how} {}", passed.join(", ")));
        self.edits.push(Edit {
            start: ar.range.1,
            end,
            with,
        });
        Ok(())
    }
}

/// Checks that `text`, read with `defines`, is the rewrite `b` of the
/// configuration `a` (the same elements of the same classes and
/// configurations, the same connections), the configuration's anonymous
/// elements aside, whose names may have changed; those elements' names
/// in `a` and as read, where they differ.
fn same_as(
    text: &str,
    defines: &[(String, String)],
    a: &FlatGraph,
    b: &FlatGraph,
    gone: &HashSet<usize>,
) -> Result<HashMap<String, String>, String> {
    let bad = |why: String| Err(format!("its edited text does not give the rewrite: {why}"));
    let r = match paraclick_lang::parse_config(&Source::new("rewrite", text), defines) {
        Ok(r) => r,
        Err(e) => return bad(e.first().map(|d| d.message.clone()).unwrap_or_default()),
    };
    if r.elements.len() + gone.len() != b.elements.len() {
        return bad(format!(
            "{} elements, not {}",
            r.elements.len(),
            b.elements.len() - gone.len()
        ));
    }
    let na = a.elements.len();
    // Names every element of `b` has in `r`: new ones, named ones and
    // those given a name in place keep theirs; the other anonymous ones
    // of `a` are the anonymous ones of `r`, in order.
    let mut rest = r.elements.iter().filter(|e| e.anonymous);
    let mut name_of: Vec<String> = Vec::with_capacity(b.elements.len());
    let mut renamed = HashMap::new();
    for (i, e) in b.elements.iter().enumerate() {
        if gone.contains(&i) {
            name_of.push(String::new());
            continue;
        }
        if i >= na || !e.anonymous || r.find(&e.name).is_some_and(|k| !r.elements[k].anonymous) {
            name_of.push(e.name.clone());
            continue;
        }
        let Some(got) = rest.next() else {
            return bad(format!("{} is missing", e.name));
        };
        if got.name != e.name {
            renamed.insert(e.name.clone(), got.name.clone());
        }
        name_of.push(got.name.clone());
    }
    for (i, e) in b.elements.iter().enumerate() {
        if gone.contains(&i) {
            continue;
        }
        let Some(k) = r.find(&name_of[i]) else {
            return bad(format!("{} is missing", name_of[i]));
        };
        let g = &r.elements[k];
        if g.class != e.class || g.config != e.config {
            return bad(format!(
                "{} is {}({}), not {}({})",
                g.name, g.class, g.config, e.class, e.config
            ));
        }
    }
    let key =
        |from: &str, fp: usize, to: &str, tp: usize| (from.to_string(), fp, to.to_string(), tp);
    let mut want: Vec<_> = b
        .connections
        .iter()
        .filter(|c| !gone.contains(&c.from) && !gone.contains(&c.to))
        .map(|c| key(&name_of[c.from], c.from_port, &name_of[c.to], c.to_port))
        .collect();
    let mut got: Vec<_> = r
        .connections
        .iter()
        .map(|c| {
            key(
                &r.elements[c.from].name,
                c.from_port,
                &r.elements[c.to].name,
                c.to_port,
            )
        })
        .collect();
    want.sort();
    want.dedup();
    got.sort();
    got.dedup();
    if want != got {
        let missing = want.iter().find(|w| !got.contains(w));
        let extra = got.iter().find(|g| !want.contains(g));
        return bad(format!(
            "connections differ (missing {missing:?}, extra {extra:?})"
        ));
    }
    Ok(renamed)
}
