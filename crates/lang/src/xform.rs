//! Click's pattern optimizer (`click-xform`, `paraclick xform`): replaces
//! every fragment of a flat configuration that matches a pattern with the
//! pattern's replacement, until no pattern matches.
//!
//! A pattern file holds pairs of compound classes, `X` (the pattern) and
//! `X_Replacement`. [`read_patterns`] expands each class's body on its own,
//! with its `$variables` left as text; [`transform`] applies the patterns
//! to a [`FlatGraph`]. A pattern matches a set S of elements when (Click's
//! click-xform(1), "formal definition of matching"): its elements map one
//! to one onto S with equal classes; the configurations match argument by
//! argument, a `$variable` standing for text (the same text at every
//! use); every connection of the pattern's body is in the configuration;
//! and every connection of the configuration that touches S is one of the
//! pattern's, or comes into S where a pattern input port leads (from one
//! place to every element that input port reaches), or leaves S where a
//! pattern output port is fed (to one place, from every element that feeds
//! the port). As in Click's tool, every port connection of the pattern
//! must be used: a fragment with a port left unconnected is not matched,
//! and a pattern with a port that only passes through it matches nothing.
//! A fragment whose elements all came from the same pattern's
//! replacements is not matched by that pattern again. After each
//! replacement the patterns are tried again from the first.
//!
//! The replacement's elements take the connections of the ports, with the
//! pattern's variables substituted in their configurations. An element
//! named as one of the pattern's keeps the name of the element that one
//! matched; the others are called `X@N/name` (the Nth replacement by `X`).
//!
//! The output's order is Click's tool's, as observed running it (black
//! box): the new elements reuse the places the removed elements left,
//! the last freed first; the pattern's first elements (all but its last
//! three, in the pattern's order) are freed before the replacement is
//! made, the others after it, in the order of their places; with no free
//! place an element goes at the end. The connections keep their order,
//! the new ones last: the replacement's own, then those through its ports
//! in the order of the connections they replace. (Click's tool sometimes
//! leaves a freed place unused, so for some configurations the order of
//! the declarations differs from its; the graph is the same.)

use crate::args::split_args;
use crate::{
    top_level_classes, Diagnostic, FlatConnection, FlatElement, FlatGraph, ParseOptions, Source,
    Span,
};
use std::collections::{HashMap, HashSet};

/// Names the pattern bodies are expanded under (not valid in the patterns).
const IN: &str = "__xform_input";
const OUT: &str = "__xform_output";
const BODY: &str = "__xform_body";

/// One expanded compound body: its elements (local names) and how they
/// connect to each other and to the body's ports.
#[derive(Clone, Debug)]
struct Body {
    elems: Vec<FlatElement>,
    /// Connections between elements: (from, port, to, port).
    conns: Vec<(usize, usize, usize, usize)>,
    /// `input [i] -> [port] elem`: (i, elem, port).
    ins: Vec<(usize, usize, usize)>,
    /// `elem [port] -> [o] output`: (elem, port, o).
    outs: Vec<(usize, usize, usize)>,
    /// `input [i] -> [o] output`.
    through: Vec<(usize, usize)>,
}

/// A pattern and its replacement, read by [`read_patterns`].
#[derive(Clone, Debug)]
pub struct Pattern {
    pub name: String,
    pat: Body,
    rep: Body,
}

impl Pattern {
    /// The same pattern applied backwards (click-xform's `--reverse`):
    /// the replacement's text is looked for and the pattern's put back.
    pub fn reversed(&self) -> Pattern {
        Pattern {
            name: self.name.clone(),
            pat: self.rep.clone(),
            rep: self.pat.clone(),
        }
    }
}

/// The `$name` variables of `text`, in order of first use.
fn variables(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let s = i + 1;
            let mut e = s;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                e += 1;
            }
            if e > s {
                let v = &text[s..e];
                if !out.iter().any(|o| o == v) {
                    out.push(v.to_string());
                }
            }
            i = e;
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the patterns of a pattern file: every compound class `X` defined
/// at its top level with its `X_Replacement`, in the order the patterns
/// are defined. `$variables` need no declaration. Errors: a pattern
/// without a replacement or the reverse, an overloaded or empty pattern,
/// a replacement whose port counts differ from its pattern's or that uses
/// a variable its pattern does not bind, a file with no patterns.
pub fn read_patterns(src: &Source, opts: &ParseOptions) -> Result<Vec<Pattern>, Vec<Diagnostic>> {
    let defines: Vec<(String, String)> = variables(&src.text)
        .into_iter()
        .map(|v| (v.clone(), format!("${v}")))
        .collect();
    let classes = top_level_classes(src, &defines, opts)?;
    let mut errs = Vec::new();
    let err = |span: &Span, msg: String| Diagnostic::error(Some(span.clone()), msg);
    let mut seen: HashMap<&str, &Span> = HashMap::new();
    for c in &classes {
        if let Some(prev) = seen.insert(&c.name, &c.span) {
            errs.push(err(
                &c.span,
                format!(
                    "pattern class '{}' defined more than once (first at {})",
                    c.name,
                    prev.location()
                ),
            ));
        } else if c.definitions > 1 {
            errs.push(err(
                &c.span,
                format!(
                    "pattern class '{}' is overloaded; patterns need one definition",
                    c.name
                ),
            ));
        } else if c.parameters > 0 {
            errs.push(err(
                &c.span,
                format!(
                    "pattern class '{}' takes parameters; a pattern's $variables need no declaration",
                    c.name
                ),
            ));
        }
    }
    let find = |n: &str| classes.iter().find(|c| c.name == n);
    let mut pairs = Vec::new();
    for c in &classes {
        if let Some(base) = c.name.strip_suffix("_Replacement") {
            if find(base).is_none() {
                errs.push(err(
                    &c.span,
                    format!("replacement '{}' has no pattern '{base}'", c.name),
                ));
            }
            continue;
        }
        let rname = format!("{}_Replacement", c.name);
        match find(&rname) {
            None => errs.push(err(
                &c.span,
                format!("pattern '{}' has no replacement: define '{rname}'", c.name),
            )),
            Some(r) if (r.inputs, r.outputs) != (c.inputs, c.outputs) => errs.push(err(
                &r.span,
                format!(
                    "replacement '{rname}' has {} input(s) and {} output(s), but pattern '{}' has {} and {}",
                    r.inputs, r.outputs, c.name, c.inputs, c.outputs
                ),
            )),
            Some(r) => pairs.push((c, r)),
        }
    }
    if classes.is_empty() {
        errs.push(Diagnostic::error(
            None,
            format!(
                "{}: no patterns (pattern files define compound classes X and X_Replacement)",
                src.name
            ),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut out = Vec::new();
    for (p, r) in pairs {
        let pat = expand_body(src, &defines, opts, &p.name, p.inputs, p.outputs)?;
        let rep = expand_body(src, &defines, opts, &r.name, r.inputs, r.outputs)?;
        if pat.elems.is_empty() {
            errs.push(err(
                &p.span,
                format!("pattern '{}' has no elements", p.name),
            ));
            continue;
        }
        let bound: HashSet<String> = pat
            .elems
            .iter()
            .flat_map(|e| variables(&e.config))
            .collect();
        for e in &rep.elems {
            for v in variables(&e.config) {
                if !bound.contains(&v) {
                    errs.push(err(
                        &e.span,
                        format!(
                            "replacement '{}' uses '${v}', which pattern '{}' does not set",
                            r.name, p.name
                        ),
                    ));
                }
            }
        }
        out.push(Pattern {
            name: p.name.clone(),
            pat,
            rep,
        });
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

/// Expands compound `class` alone, its ports tied to marker elements.
fn expand_body(
    src: &Source,
    defines: &[(String, String)],
    opts: &ParseOptions,
    class: &str,
    inputs: usize,
    outputs: usize,
) -> Result<Body, Vec<Diagnostic>> {
    let mut text = src.text.clone();
    text.push_str(&format!(
        "\n{IN} :: XformPort; {OUT} :: XformPort; {BODY} :: {class};"
    ));
    for i in 0..inputs {
        text.push_str(&format!(" {IN} [{i}] -> [{i}] {BODY};"));
    }
    for o in 0..outputs {
        text.push_str(&format!(" {BODY} [{o}] -> [{o}] {OUT};"));
    }
    text.push('\n');
    let g = crate::parse_config_with(&Source::new(&src.name, &text), defines, opts)?;
    let prefix = format!("{BODY}/");
    let mut local = vec![None; g.elements.len()];
    let mut elems = Vec::new();
    let (mut inm, mut outm) = (usize::MAX, usize::MAX);
    for (k, e) in g.elements.iter().enumerate() {
        if let Some(n) = e.name.strip_prefix(&prefix) {
            local[k] = Some(elems.len());
            let mut e = e.clone();
            e.name = n.to_string();
            elems.push(e);
        } else if e.name == IN {
            inm = k;
        } else if e.name == OUT {
            outm = k;
        }
    }
    let mut b = Body {
        elems,
        conns: Vec::new(),
        ins: Vec::new(),
        outs: Vec::new(),
        through: Vec::new(),
    };
    for c in &g.connections {
        match (local[c.from], local[c.to]) {
            (Some(f), Some(t)) => b.conns.push((f, c.from_port, t, c.to_port)),
            (None, Some(t)) if c.from == inm => b.ins.push((c.from_port, t, c.to_port)),
            (Some(f), None) if c.to == outm => b.outs.push((f, c.from_port, c.to_port)),
            (None, None) if c.from == inm && c.to == outm => {
                b.through.push((c.from_port, c.to_port))
            }
            _ => {}
        }
    }
    Ok(b)
}

/// Whether `pat` (with `$variables`) matches `text`, extending `binds`.
fn match_text(pat: &str, text: &str, binds: &mut HashMap<String, String>) -> bool {
    let Some(d) = pat.find('$') else {
        return pat == text;
    };
    let b = pat.as_bytes();
    let mut e = d + 1;
    while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
        e += 1;
    }
    if e == d + 1 {
        // A lone `$` is text.
        return text.get(..=d).is_some_and(|t| t == &pat[..=d])
            && match_text(&pat[d + 1..], &text[d + 1..], binds);
    }
    if !text.starts_with(&pat[..d]) {
        return false;
    }
    let name = &pat[d + 1..e];
    let rest_pat = &pat[e..];
    let rest = &text[d..];
    if let Some(v) = binds.get(name).cloned() {
        return rest.starts_with(v.as_str()) && match_text(rest_pat, &rest[v.len()..], binds);
    }
    // Each split of the rest, longest first when the variable ends the
    // pattern (only one then).
    let cuts: Vec<usize> = rest
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain(std::iter::once(rest.len()))
        .collect();
    for cut in cuts.into_iter().rev() {
        let mut tried = binds.clone();
        tried.insert(name.to_string(), rest[..cut].to_string());
        if match_text(rest_pat, &rest[cut..], &mut tried) {
            *binds = tried;
            return true;
        }
    }
    false
}

/// Whether configuration `pat` matches `actual`: the same number of
/// arguments, each matching (a variable stands for at least one
/// character; the same variable for the same text throughout).
fn match_config(pat: &str, actual: &str, binds: &mut HashMap<String, String>) -> bool {
    let pa = split_args(pat);
    let aa = split_args(actual);
    if pa.len() != aa.len() {
        return false;
    }
    let mut tried = binds.clone();
    for (p, a) in pa.iter().zip(&aa) {
        if !match_text(p, a, &mut tried) {
            return false;
        }
    }
    *binds = tried;
    true
}

/// `config` with the variables of `binds` substituted.
fn substitute(config: &str, binds: &HashMap<String, String>) -> String {
    let b = config.as_bytes();
    let mut out = String::with_capacity(config.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let mut e = i + 1;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                e += 1;
            }
            if let Some(v) = binds.get(&config[i + 1..e]) {
                out.push_str(&config[last..i]);
                out.push_str(v);
                last = e;
            }
            i = e.max(i + 1);
        } else {
            i += 1;
        }
    }
    out.push_str(&config[last..]);
    out
}

type Conn = (usize, usize, usize, usize);

/// A connection into or out of a match: `In(from, port, input i)` comes
/// in through the pattern's input i, `Out(o, to, port)` leaves through
/// its output o.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crossing {
    In(usize, usize, usize),
    Out(usize, usize, usize),
}

/// The configuration being transformed: element slots (a removed
/// element's slot is empty until reused), which pattern made each, the
/// free slots (last freed on top), and the connections: in order, as a
/// set, and by slot (`outs[f]`: `(fp, t, tp)`, `ins[t]`: `(tp, f, fp)`,
/// each in the connections' order). All are kept up to date through a
/// replacement, not rebuilt: a rebuild per replacement made a
/// transformation's time grow with the square of its size.
struct State {
    slots: Vec<Option<(FlatElement, Option<usize>)>>,
    free: Vec<usize>,
    conns: Vec<(Conn, Span)>,
    set: HashSet<Conn>,
    outs: Vec<Vec<(usize, usize, usize)>>,
    ins: Vec<Vec<(usize, usize, usize)>>,
    counters: Vec<usize>,
}

impl State {
    fn live(&self, i: usize) -> Option<&(FlatElement, Option<usize>)> {
        self.slots.get(i).and_then(|s| s.as_ref())
    }

    fn add_conn(&mut self, c: Conn, span: Span) {
        if self.set.insert(c) {
            let (f, fp, t, tp) = c;
            self.outs[f].push((fp, t, tp));
            self.ins[t].push((tp, f, fp));
            self.conns.push((c, span));
        }
    }

    /// Test builds: the set and the per-slot lists are what rebuilding
    /// them from the connections gives, in the same order.
    #[cfg(test)]
    fn check_kept(&self) {
        let mut outs = vec![Vec::new(); self.slots.len()];
        let mut ins = vec![Vec::new(); self.slots.len()];
        for &((f, fp, t, tp), _) in &self.conns {
            outs[f].push((fp, t, tp));
            ins[t].push((tp, f, fp));
        }
        assert_eq!(outs, self.outs);
        assert_eq!(ins, self.ins);
        let set: HashSet<Conn> = self.conns.iter().map(|(c, _)| *c).collect();
        assert_eq!(set, self.set);
        assert_eq!(set.len(), self.conns.len());
    }

    /// Removes every connection to or from a slot of the match `map`
    /// (`inside[s]` says whether slot `s` is one).
    /// Returns the slots outside the match that lost a connection.
    fn remove_conns_of(&mut self, map: &[usize], inside: &[bool]) -> Vec<usize> {
        let mut near = Vec::new();
        let set = &mut self.set;
        self.conns.retain(|&((f, fp, t, tp), _)| {
            let keep = !inside[f] && !inside[t];
            if !keep {
                set.remove(&(f, fp, t, tp));
                near.extend([f, t].into_iter().filter(|&x| !inside[x]));
            }
            keep
        });
        for &s in map {
            self.outs[s].clear();
            self.ins[s].clear();
        }
        near.sort_unstable();
        near.dedup();
        for &s in &near {
            self.outs[s].retain(|&(_, t, _)| !inside[t]);
            self.ins[s].retain(|&(_, f, _)| !inside[f]);
        }
        near
    }

    /// The slots at most `radius` connections (either way) from one of
    /// `from`.
    fn around(&self, from: &[usize], radius: usize) -> Vec<usize> {
        let mut seen: HashSet<usize> = from.iter().copied().collect();
        let mut ring: Vec<usize> = seen.iter().copied().collect();
        for _ in 0..radius {
            let mut next = Vec::new();
            for &x in &ring {
                let outs = self.outs[x].iter().map(|&(_, t, _)| t);
                let ins = self.ins[x].iter().map(|&(_, f, _)| f);
                for y in outs.chain(ins) {
                    if seen.insert(y) {
                        next.push(y);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            ring = next;
        }
        seen.into_iter().collect()
    }

    fn place(&mut self, e: (FlatElement, Option<usize>)) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(e);
                i
            }
            None => {
                self.slots.push(Some(e));
                self.outs.push(Vec::new());
                self.ins.push(Vec::new());
                self.slots.len() - 1
            }
        }
    }
}

/// Finds the first match of `body` (pattern number `pi`): the mapping
/// from its elements to slots, and the variables' values. With `dead`,
/// `dead[s]` says that no match has body element 0 at slot `s`: such slots are
/// skipped, and slots found so are marked (for a connected pattern,
/// whose match from `s` depends only on the slots near `s`; a pattern
/// in pieces is searched whole every time).
fn find_match(
    st: &State,
    body: &Body,
    pi: usize,
    outs: &[Vec<(usize, usize, usize)>],
    ins: &[Vec<(usize, usize, usize)>],
    dead: Option<&mut Vec<bool>>,
) -> Option<(Vec<usize>, HashMap<String, String>)> {
    let n = body.elems.len();
    // Search order: element 0, then the elements connected to those
    // placed, each reached through a connection from or to a placed one.
    let mut order = vec![0usize];
    let mut via: Vec<Option<(bool, usize, usize, usize)>> = vec![None; n];
    let mut placed = vec![false; n];
    placed[0] = true;
    while order.len() < n {
        let mut grew = false;
        for &(f, fp, t, tp) in &body.conns {
            if placed[f] && !placed[t] {
                placed[t] = true;
                via[t] = Some((true, f, fp, tp));
                order.push(t);
                grew = true;
            } else if placed[t] && !placed[f] {
                placed[f] = true;
                via[f] = Some((false, t, tp, fp));
                order.push(f);
                grew = true;
            }
        }
        if !grew {
            let next = (0..n).find(|&k| !placed[k])?;
            placed[next] = true;
            order.push(next);
        }
    }
    let mut map = vec![usize::MAX; n];
    let mut used = HashSet::new();
    let mut binds = HashMap::new();
    let connected = order[1..].iter().all(|&k| via[k].is_some());
    let (Some(dead), true) = (dead, connected) else {
        let found = search(
            st, body, pi, outs, ins, &order, &via, None, 0, &mut map, &mut used, &mut binds,
        );
        return found.then_some((map, binds));
    };
    // The slots in order, as a search from all of them tries them.
    dead.resize(st.slots.len(), false);
    for (s, dead) in dead.iter_mut().enumerate() {
        if *dead {
            continue;
        }
        if search(
            st,
            body,
            pi,
            outs,
            ins,
            &order,
            &via,
            Some(s),
            0,
            &mut map,
            &mut used,
            &mut binds,
        ) {
            return Some((map, binds));
        }
        *dead = true;
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn search(
    st: &State,
    body: &Body,
    pi: usize,
    outs: &[Vec<(usize, usize, usize)>],
    ins: &[Vec<(usize, usize, usize)>],
    order: &[usize],
    via: &[Option<(bool, usize, usize, usize)>],
    start: Option<usize>,
    depth: usize,
    map: &mut Vec<usize>,
    used: &mut HashSet<usize>,
    binds: &mut HashMap<String, String>,
) -> bool {
    if depth == order.len() {
        return verify(st, body, pi, map, outs, ins);
    }
    let k = order[depth];
    let pe = &body.elems[k];
    let cands: Vec<usize> = match via[k] {
        // Reached from placed element `f`'s output `fp` into input `tp`.
        Some((true, f, fp, tp)) => outs[map[f]]
            .iter()
            .filter(|&&(p, _, q)| p == fp && q == tp)
            .map(|&(_, t, _)| t)
            .collect(),
        // Feeds placed element `t`'s input `tp` from output `fp`.
        Some((false, t, tp, fp)) => ins[map[t]]
            .iter()
            .filter(|&&(q, _, p)| q == tp && p == fp)
            .map(|&(_, f, _)| f)
            .collect(),
        None => match start {
            Some(s) if depth == 0 => vec![s],
            _ => (0..st.slots.len()).collect(),
        },
    };
    for c in cands {
        if used.contains(&c) {
            continue;
        }
        let Some((e, _)) = st.live(c) else { continue };
        if e.class != pe.class {
            continue;
        }
        let mut b = binds.clone();
        if !match_config(&pe.config, &e.config, &mut b) {
            continue;
        }
        map[k] = c;
        used.insert(c);
        if search(
            st,
            body,
            pi,
            outs,
            ins,
            order,
            via,
            start,
            depth + 1,
            map,
            used,
            &mut b,
        ) {
            *binds = b;
            return true;
        }
        used.remove(&c);
        map[k] = usize::MAX;
    }
    false
}

/// The input port of the pattern through which configuration connection
/// `from [fp] -> [tp] to` (to in the match, `to` its pattern element) can
/// enter: every element the port reaches must get the same connection.
fn entry_port(st: &State, body: &Body, map: &[usize], (from, fp, to, tp): Conn) -> Option<usize> {
    body.ins
        .iter()
        .filter(|&&(_, q, p)| map[q] == to && p == tp)
        .map(|&(i, _, _)| i)
        .find(|&i| {
            body.ins
                .iter()
                .filter(|&&(j, _, _)| j == i)
                .all(|&(_, q, z)| st.set.contains(&(from, fp, map[q], z)))
        })
}

/// The output port of the pattern through which configuration connection
/// `from [fp] -> [tp] to` (from in the match) can leave.
fn exit_port(st: &State, body: &Body, map: &[usize], (from, fp, to, tp): Conn) -> Option<usize> {
    body.outs
        .iter()
        .filter(|&&(q, p, _)| map[q] == from && p == fp)
        .map(|&(_, _, o)| o)
        .find(|&o| {
            body.outs
                .iter()
                .filter(|&&(_, _, j)| j == o)
                .all(|&(q, z, _)| st.set.contains(&(map[q], z, to, tp)))
        })
}

fn verify(
    st: &State,
    body: &Body,
    pi: usize,
    map: &[usize],
    outs: &[Vec<(usize, usize, usize)>],
    ins: &[Vec<(usize, usize, usize)>],
) -> bool {
    if map
        .iter()
        .all(|&s| st.live(s).is_some_and(|(_, from)| *from == Some(pi)))
    {
        return false;
    }
    if !body
        .conns
        .iter()
        .all(|&(f, fp, t, tp)| st.set.contains(&(map[f], fp, map[t], tp)))
    {
        return false;
    }
    let inv: HashMap<usize, usize> = map.iter().enumerate().map(|(k, &s)| (s, k)).collect();
    // Every port connection of the pattern is used by the configuration
    // (as Click's tool requires: a pattern does not match a fragment
    // with a port left unconnected).
    let used_in = body.ins.iter().all(|&(_, q, y)| {
        ins[map[q]]
            .iter()
            .any(|&(tp, f, _)| tp == y && !inv.contains_key(&f))
    });
    let used_out = body.outs.iter().all(|&(q, z, _)| {
        outs[map[q]]
            .iter()
            .any(|&(fp, t, _)| fp == z && !inv.contains_key(&t))
    });
    // A port that only passes through the pattern (`input [i] -> [o]
    // output`) can never be used: such a pattern matches nothing (as in
    // Click's tool).
    let through_only = body.through.iter().any(|&(i, o)| {
        !body.ins.iter().any(|&(j, _, _)| j == i) || !body.outs.iter().any(|&(_, _, j)| j == o)
    });
    if !used_in || !used_out || through_only {
        return false;
    }
    for (k, &s) in map.iter().enumerate() {
        for &(fp, to, tp) in &outs[s] {
            let ok = match inv.get(&to) {
                Some(&t) => body.conns.contains(&(k, fp, t, tp)),
                None => exit_port(st, body, map, (s, fp, to, tp)).is_some(),
            };
            if !ok {
                return false;
            }
        }
        for &(tp, from, fp) in &ins[s] {
            if !inv.contains_key(&from) && entry_port(st, body, map, (from, fp, s, tp)).is_none() {
                return false;
            }
        }
    }
    true
}

/// Replaces the match `map` of pattern `pi` with its replacement.
/// Returns the slots changed: the match's, those that lost or gained a
/// connection, and the new elements'.
fn replace(
    st: &mut State,
    p: &Pattern,
    pi: usize,
    map: &[usize],
    binds: &HashMap<String, String>,
) -> Vec<usize> {
    // A slot flag, not a hash set: every connection is looked up.
    let mut inside = vec![false; st.slots.len()];
    for &s in map {
        inside[s] = true;
    }
    // The connections through the ports, in order, before anything is
    // removed: Click's tool makes the new ones in that order.
    let mut crossing: Vec<Crossing> = Vec::new();
    for &((f, fp, t, tp), _) in &st.conns {
        let c = match (inside[f], inside[t]) {
            (false, true) => {
                entry_port(st, &p.pat, map, (f, fp, t, tp)).map(|i| Crossing::In(f, fp, i))
            }
            (true, false) => {
                exit_port(st, &p.pat, map, (f, fp, t, tp)).map(|o| Crossing::Out(o, t, tp))
            }
            _ => None,
        };
        if let Some(c) = c {
            if !crossing.contains(&c) {
                crossing.push(c);
            }
        }
    }
    let mut touched = st.remove_conns_of(map, &inside);
    touched.extend_from_slice(map);

    // The name prefix: `X@N`, N the first count no element uses.
    let prefix = loop {
        st.counters[pi] += 1;
        let pre = format!("{}@{}/", p.name, st.counters[pi]);
        if !st
            .slots
            .iter()
            .flatten()
            .any(|(e, _)| e.name.starts_with(&pre))
        {
            break pre;
        }
    };
    let n = p.pat.elems.len();
    let early = n.saturating_sub(3);
    let names: Vec<String> = map
        .iter()
        .map(|&s| st.live(s).map(|(e, _)| e.name.clone()).unwrap_or_default())
        .collect();
    for &s in &map[..early] {
        st.slots[s] = None;
        st.free.push(s);
    }
    let mut new = Vec::with_capacity(p.rep.elems.len());
    for r in &p.rep.elems {
        let name = match p.pat.elems.iter().position(|q| q.name == r.name) {
            Some(k) => names[k].clone(),
            None => format!("{prefix}{}", r.name),
        };
        let e = FlatElement {
            name,
            class: r.class.clone(),
            config: substitute(&r.config, binds),
            span: r.span.clone(),
            anonymous: false,
        };
        new.push(st.place((e, Some(pi))));
    }
    let mut late: Vec<usize> = map[early..].to_vec();
    for &s in &late {
        st.slots[s] = None;
    }
    late.sort_unstable();
    st.free.extend(late);

    let span = |k: usize| p.rep.elems[k].span.clone();
    for &(f, fp, t, tp) in &p.rep.conns {
        st.add_conn((new[f], fp, new[t], tp), span(f));
    }
    for c in &crossing {
        match *c {
            Crossing::In(from, fp, i) => {
                for &(j, r, z) in &p.rep.ins {
                    if j == i {
                        st.add_conn((from, fp, new[r], z), span(r));
                    }
                }
                for &(j, o) in &p.rep.through {
                    for x in &crossing {
                        if let Crossing::Out(o2, to, tp) = *x {
                            if j == i && o2 == o {
                                st.add_conn((from, fp, to, tp), p.pat.elems[0].span.clone());
                            }
                        }
                    }
                }
            }
            Crossing::Out(o, to, tp) => {
                for &(r, z, j) in &p.rep.outs {
                    if j == o {
                        st.add_conn((new[r], z, to, tp), span(r));
                    }
                }
            }
        }
    }
    touched.extend(new);
    touched
}

/// Applies `patterns` to `g` until none matches: after each replacement
/// the patterns are tried again from the first, and the first that
/// matches (at its first match) is applied. Fails when
/// more than `limit` replacements were made (patterns that undo each
/// other never finish). The result lists the elements in Click's order
/// for [`crate::print_click_listed`].
pub fn transform(g: &FlatGraph, patterns: &[Pattern], limit: usize) -> Result<FlatGraph, String> {
    // Click's flattened order: outside compounds first, then each level.
    let mut order: Vec<usize> = (0..g.elements.len()).collect();
    order.sort_by_key(|&i| g.elements[i].name.matches('/').count());
    let mut slot_of = vec![0; g.elements.len()];
    for (k, &i) in order.iter().enumerate() {
        slot_of[i] = k;
    }
    let mut st = State {
        slots: order
            .iter()
            .map(|&i| Some((g.elements[i].clone(), None)))
            .collect(),
        free: Vec::new(),
        conns: Vec::new(),
        set: HashSet::new(),
        outs: vec![Vec::new(); g.elements.len()],
        ins: vec![Vec::new(); g.elements.len()],
        counters: vec![0; patterns.len()],
    };
    for c in &g.connections {
        st.add_conn(
            (slot_of[c.from], c.from_port, slot_of[c.to], c.to_port),
            c.span.clone(),
        );
    }
    let mut made = 0usize;
    // Per pattern, the slots where no match starts (see find_match). A
    // match depends on the slots fewer connections away than the
    // pattern has elements: a replacement makes those near it live.
    let mut dead = vec![Vec::new(); patterns.len()];
    let radius = patterns
        .iter()
        .map(|p| p.pat.elems.len())
        .max()
        .unwrap_or(0);
    'search: loop {
        #[cfg(test)]
        st.check_kept();
        for (pi, p) in patterns.iter().enumerate() {
            let found = find_match(&st, &p.pat, pi, &st.outs, &st.ins, Some(&mut dead[pi]));
            // Test builds: the slots skipped hide no match.
            #[cfg(test)]
            assert_eq!(
                found,
                find_match(&st, &p.pat, pi, &st.outs, &st.ins, None),
                "pattern {pi}"
            );
            if let Some((map, binds)) = found {
                if made == limit {
                    return Err(format!(
                        "gave up after {limit} replacements: the patterns keep matching \
                         (patterns that undo each other never finish)"
                    ));
                }
                made += 1;
                let touched = replace(&mut st, p, pi, &map, &binds);
                for s in st.around(&touched, radius) {
                    for d in &mut dead {
                        if let Some(x) = d.get_mut(s) {
                            *x = false;
                        }
                    }
                }
                continue 'search;
            }
        }
        break;
    }
    let mut index = vec![usize::MAX; st.slots.len()];
    let mut elements = Vec::new();
    for (i, s) in st.slots.iter().enumerate() {
        if let Some((e, _)) = s {
            index[i] = elements.len();
            elements.push(e.clone());
        }
    }
    let connections = st
        .conns
        .iter()
        .map(|&((f, fp, t, tp), ref span)| FlatConnection {
            from: index[f],
            from_port: fp,
            to: index[t],
            to_port: tp,
            span: span.clone(),
        })
        .collect();
    Ok(FlatGraph {
        elements,
        connections,
        requirements: g.requirements.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_config, print_click_listed};

    fn patterns(text: &str) -> Result<Vec<Pattern>, String> {
        read_patterns(&Source::new("pat", text), &ParseOptions::default()).map_err(|d| {
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    fn run(pats: &str, conf: &str) -> String {
        let p = patterns(pats).expect("patterns read");
        let g = parse_config(&Source::new("conf", conf), &[]).expect("configuration parses");
        print_click_listed(&transform(&g, &p, 1000).expect("transform ends"))
    }

    /// Two elements with a variable and a second output port become one.
    const PAIR: &str = "
        elementclass Pair {
          input -> a :: Counter -> s :: Strip($n) -> output;
          s[1] -> [1]output;
        }
        elementclass Pair_Replacement {
          input -> c :: StripCount($n, LENGTH $n) -> output;
          c[1] -> [1]output;
        }";

    #[test]
    fn matches_classes_configurations_and_ports() {
        let out = run(
            PAIR,
            "src :: Idle -> Counter -> st :: Strip(14) -> d :: Discard; st[1] -> e :: Discard;",
        );
        assert_eq!(
            out,
            "src :: Idle;\nd :: Discard;\ne :: Discard;\n\
             Pair@1/c :: StripCount(14, LENGTH 14);\n\n\
             src -> Pair@1/c\n    -> d;\nPair@1/c [1] -> e;\n"
        );
    }

    #[test]
    fn a_variable_binds_the_same_text_everywhere() {
        let pats = "
            elementclass Two { input -> Strip($n) -> Strip($n) -> output; }
            elementclass Two_Replacement { input -> Strip($n) -> output; }";
        let out = run(pats, "Idle -> Strip(2) -> Strip(3) -> Discard;");
        assert!(out.contains("Strip@2 :: Strip(2);") && out.contains("Strip@3 :: Strip(3);"));
        // The replacement's Strip@1 is named as the pattern's Strip@1, so
        // it keeps the name of the element that one matched (as Click's
        // tool does).
        let out = run(pats, "Idle -> Strip(2) -> Strip(2) -> Discard;");
        assert!(out.contains("Strip@2 :: Strip(2);"), "{out}");
        assert!(!out.contains("Strip@3 ::"), "{out}");
        assert!(
            out.contains("Idle@1 -> Strip@2\n    -> Discard@4;"),
            "{out}"
        );
    }

    #[test]
    fn configuration_text_must_match_without_variables() {
        let pats = "
            elementclass Q { input -> Queue -> output; }
            elementclass Q_Replacement { input -> Queue -> Shaper(200) -> output; }";
        let out = run(pats, "Idle -> Queue(5) -> Discard;");
        assert!(!out.contains("Shaper"), "{out}");
    }

    #[test]
    fn extra_connection_into_the_interior_prevents_a_match() {
        let out = run(
            PAIR,
            "src :: Idle -> Counter -> st :: Strip(14) -> d :: Discard; st[1] -> e :: Discard;
             y :: Idle -> st;",
        );
        assert!(!out.contains("Pair@"), "{out}");
        assert!(out.contains("y -> st;"), "{out}");
    }

    #[test]
    fn an_unconnected_pattern_port_prevents_a_match() {
        // Output 1 of the pattern has no connection here (Click's tool
        // does not match such a fragment either).
        let out = run(PAIR, "Idle -> Counter -> Strip(14) -> Discard;");
        assert!(!out.contains("Pair@"), "{out}");
    }

    #[test]
    fn a_port_that_only_passes_through_prevents_a_match() {
        // Real Click's click-xform leaves this configuration alone too.
        let pats = "
            elementclass M { input -> Strip($a) -> Strip($b) -> output; input[1] -> [1]output; }
            elementclass M_Replacement { input -> Strip($b) -> Strip($a) -> output;
                input[1] -> [1]output; }";
        let out = run(pats, "Idle -> Strip(1) -> Strip(2) -> Discard;");
        assert!(
            out.contains("Strip@2 :: Strip(1);\nStrip@3 :: Strip(2);"),
            "{out}"
        );
    }

    #[test]
    fn applies_repeatedly_and_not_twice_to_its_own_output() {
        // The replacement contains the pattern: each Queue is replaced
        // once, as click-xform(1) describes.
        let pats = "
            elementclass Q { input -> Queue -> output; }
            elementclass Q_Replacement { input -> Queue -> Shaper(200) -> output; }";
        let out = run(
            pats,
            "Idle -> q1 :: Queue -> Discard; Idle -> q2 :: Queue -> Discard;",
        );
        assert_eq!(out.matches("Shaper(200)").count(), 2, "{out}");
        assert!(out.contains("-> q1\n    -> Q@1/Shaper@2\n"), "{out}");
        assert!(out.contains("-> q2\n    -> Q@2/Shaper@2\n"), "{out}");
        // One pattern's replacement lets another match.
        let pats = "
            elementclass A { input -> Strip(1) -> output; }
            elementclass A_Replacement { input -> Strip(2) -> output; }
            elementclass B { input -> Strip(2) -> Strip(2) -> output; }
            elementclass B_Replacement { input -> Strip(4) -> output; }";
        let out = run(pats, "Idle -> Strip(1) -> Strip(1) -> Discard;");
        assert!(out.contains("Strip@2 :: Strip(4);"), "{out}");
        assert_eq!(out.matches("Strip(").count(), 1, "{out}");
    }

    #[test]
    fn patterns_that_undo_each_other_stop_with_an_error() {
        let pats = "
            elementclass E1 { input -> Queue -> output; }
            elementclass E1_Replacement { input -> Queue -> output; }
            elementclass E2 { input -> Queue -> output; }
            elementclass E2_Replacement { input -> Queue -> output; }";
        let p = patterns(pats).unwrap();
        let g = parse_config(&Source::new("c", "Idle -> Queue -> Discard;"), &[]).unwrap();
        let e = transform(&g, &p, 50).unwrap_err();
        assert!(e.contains("gave up after 50 replacements"), "{e}");
    }

    #[test]
    fn new_elements_take_freed_places_as_clicks_tool_does() {
        // Real Click's click-xform (black box) on this configuration gives
        // k1 P@1/y k2 P@1/x k3 k4 k5 k6 s d: the first three of the six
        // matched places are freed before the two new elements are made.
        let pats = "
            elementclass P { input -> Strip(1) -> Strip(2) -> Strip(3) -> Strip(4)
                -> Strip(5) -> Strip(6) -> output; }
            elementclass P_Replacement { input -> x :: Shaper(1) -> y :: Shaper(2) -> output; }";
        let conf = "m1 :: Strip(1); k1 :: Idle; m2 :: Strip(2); k2 :: Idle; m3 :: Strip(3);
            k3 :: Idle; m4 :: Strip(4); k4 :: Idle; m5 :: Strip(5); k5 :: Idle; m6 :: Strip(6);
            k6 :: Idle; s :: Idle -> m1 -> m2 -> m3 -> m4 -> m5 -> m6 -> d :: Discard;";
        let out = run(pats, conf);
        let names: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split_once(" :: ").map(|x| x.0))
            .collect();
        assert_eq!(
            names,
            ["k1", "P@1/y", "k2", "P@1/x", "k3", "k4", "k5", "k6", "s", "d"]
        );
    }

    #[test]
    fn bad_pattern_files_give_clear_errors() {
        let e = patterns("elementclass A { input -> Queue -> output; }").unwrap_err();
        assert!(
            e.contains("pattern 'A' has no replacement: define 'A_Replacement'"),
            "{e}"
        );
        let e = patterns("elementclass A_Replacement { input -> Queue -> output; }").unwrap_err();
        assert!(
            e.contains("replacement 'A_Replacement' has no pattern 'A'"),
            "{e}"
        );
        let e = patterns(
            "elementclass A { input -> Queue -> output; }
             elementclass A_Replacement { input -> Queue -> output; Queue -> [1]output; }",
        )
        .unwrap_err();
        assert!(
            e.contains("has 1 input(s) and 2 output(s), but pattern 'A' has 1 and 1"),
            "{e}"
        );
        let e = patterns(
            "elementclass A { input -> Queue -> output; }
             elementclass A_Replacement { input -> Queue($n) -> output; }",
        )
        .unwrap_err();
        assert!(
            e.contains("uses '$n', which pattern 'A' does not set"),
            "{e}"
        );
        let e = patterns("// nothing here\n").unwrap_err();
        assert!(e.contains("no patterns"), "{e}");
        let e = patterns(
            "elementclass A { input -> output; }
             elementclass A_Replacement { input -> output; }",
        )
        .unwrap_err();
        assert!(e.contains("pattern 'A' has no elements"), "{e}");
        let e = patterns(
            "elementclass A { $x | input -> Strip($x) -> output; }
             elementclass A_Replacement { input -> Strip($x) -> output; }",
        )
        .unwrap_err();
        assert!(e.contains("pattern class 'A' takes parameters"), "{e}");
        // The language's own errors come through, located.
        let e = patterns("elementclass A { input -> Queue -> ; }").unwrap_err();
        assert!(!e.is_empty());
    }

    #[test]
    fn variables_match_inside_arguments() {
        let mut b = HashMap::new();
        assert!(match_config("LIMIT $n, $x", "LIMIT 5, a b", &mut b));
        assert_eq!(b["n"], "5");
        assert_eq!(b["x"], "a b");
        assert!(!match_config("LIMIT $n", "BURST 5", &mut HashMap::new()));
        assert!(!match_config("$a, $a", "1, 2", &mut HashMap::new()));
        assert!(!match_config("$a", "", &mut HashMap::new()));
        assert_eq!(substitute("$n, LENGTH $n, $m", &b), "5, LENGTH 5, $m");
    }

    #[test]
    fn a_replacement_makes_a_match_two_connections_away() {
        // D finds nothing at first; B's Counter, two connections from
        // D's first element, makes D match there.
        let pats = "
            elementclass D { input -> Paint(1) -> Tee(2) -> Counter -> output; }
            elementclass D_Replacement { input -> Paint(2) -> output; }
            elementclass B { input -> Strip(2) -> Paint(1) -> output; }
            elementclass B_Replacement { input -> Counter -> output; }";
        let out = run(
            pats,
            "Idle -> Paint(1) -> Tee(2) -> Strip(2) -> Paint(1) -> Discard;",
        );
        assert!(out.contains(":: Paint(2);"), "{out}");
        assert!(!out.contains("Counter"), "{out}");
    }

    #[test]
    fn random_configurations_keep_the_connections_straight() {
        // Replacements that share neighbours, free and reuse slots, and
        // make matches for other patterns (D's two connections from where
        // B makes its Counter): after each, the kept connection lists are
        // checked against a rebuild (check_kept), and each pattern's
        // first match against a search of every slot.
        let pats = patterns(
            "elementclass A { input -> Strip(1) -> output; }
             elementclass A_Replacement { input -> Strip(2) -> Paint(1) -> output; }
             elementclass B { input -> Strip(2) -> Paint(1) -> output; }
             elementclass B_Replacement { input -> Counter -> output; }
             elementclass C { input -> c :: Counter -> Counter -> output; c[1] -> [1]output; }
             elementclass C_Replacement { input -> t :: Tee(2) -> output; t[1] -> [1]output; }
             elementclass D { input -> Paint(1) -> Tee(2) -> Counter -> output; }
             elementclass D_Replacement { input -> Paint(2) -> output; }",
        )
        .expect("patterns read");
        let classes = ["Strip(1)", "Strip(2)", "Paint(1)", "Counter", "Tee(2)"];
        let mut rng = fastrand::Rng::with_seed(36);
        let mut replaced = 0;
        for _ in 0..500 {
            let n = rng.usize(2..14);
            let mut conf = String::new();
            for i in 0..n {
                conf.push_str(&format!(
                    "e{i} :: {};\n",
                    classes[rng.usize(..classes.len())]
                ));
            }
            // Mostly chains, some joins, branches and loops.
            for k in 0..rng.usize(n..2 * n) {
                let f = rng.usize(..n);
                let t = if k < n && rng.usize(..4) > 0 {
                    (f + 1) % n
                } else {
                    rng.usize(..n)
                };
                let port = usize::from(rng.usize(..5) == 0);
                conf.push_str(&format!("e{f} [{port}] -> e{t};\n"));
            }
            let g = parse_config(&Source::new("conf", &conf), &[]).expect("parses");
            let out = transform(&g, &pats, 1000).expect("ends");
            replaced += out.elements.iter().filter(|e| e.name.contains('@')).count();
            // Every connection joins elements that exist.
            for c in &out.connections {
                assert!(c.from < out.elements.len() && c.to < out.elements.len());
            }
        }
        assert!(replaced > 150, "the patterns matched: {replaced}");
    }
}
