//! Graph checks, as Click's router does them before it configures elements:
//! unknown classes, port counts, push/pull resolution, and port usage.
//!
//! - **Port counts.** A class's port count string (`"1/1"`, `"1/1-2"`,
//!   `"-/="`, `"1-/=+"`, `"0/1"`, `"2"`) gives the allowed input and output
//!   ranges; `=` means as many outputs as inputs, each `+` one more. An
//!   element gets 1 + its highest connected port, clamped into the range.
//!   A connection to a port beyond the range is an error (`'c' :: Counter
//!   has no output 1`), and so is every port below the count that has no
//!   connection (`'t' :: Tee output 1 unused`).
//! - **Processing.** Codes `h` (push), `l` (pull) and `a` (agnostic) per
//!   port, input and output sections separated by `/`, the last code of a
//!   section repeating (`"a/ah"`, `"h/l"`, `"a"`). Agnostic ports take the
//!   kind of what they are connected to; inside an element, agnostic inputs
//!   and outputs that packets can flow between (the flow code; by default
//!   all of them) take the same kind. Agnostic ports left undecided are push.
//! - **Errors**: push output to pull input and vice versa, an agnostic
//!   element that ends up both push and pull, a push output or a pull input
//!   with more than one connection, unused ports. All are reported at once.
//! - **Chain length.** A push hands each packet on by calling the next
//!   element, which calls the next, and a pull calls upstream likewise:
//!   a chain of elements is a chain of nested calls on a worker's stack.
//!   A push path or a pull path of more than [`MAX_CHAIN`] elements is an
//!   error (a cycle counts as all its elements), found on a graph
//!   otherwise correct: split the chain with a Queue.

use std::collections::{BTreeSet, HashSet};

use crate::span::{Diagnostic, Span};
use crate::FlatGraph;

/// What the checker needs to know about an element class: Click's port
/// count and processing strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSpec {
    pub port_count: String,
    pub processing: String,
}

impl ClassSpec {
    pub fn new(port_count: impl Into<String>, processing: impl Into<String>) -> Self {
        ClassSpec {
            port_count: port_count.into(),
            processing: processing.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    Push,
    Pull,
}

/// The most elements a push path, or a pull path, may have: elements call
/// each other along a path, so its length is a depth of nested calls on a
/// worker thread's stack (the runtime gives its workers a stack large
/// enough for this many hops of any element, with a margin).
pub const MAX_CHAIN: usize = 1000;

/// Resolved kind of every port, per element, in element order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckedGraph {
    pub inputs: Vec<Vec<PortKind>>,
    pub outputs: Vec<Vec<PortKind>>,
}

/// An inclusive range of port counts; `hi == usize::MAX` means unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub lo: usize,
    pub hi: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputCount {
    Range(PortRange),
    /// `=`, `=+`, ...: as many outputs as inputs, plus this many.
    SameAsInputs(usize),
}

/// A parsed port count string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortCount {
    pub inputs: PortRange,
    pub outputs: OutputCount,
}

fn parse_range(s: &str) -> Option<(PortRange, &str)> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let (lo, mut rest) = if s.is_empty() || s.starts_with('-') {
        (0, s)
    } else {
        let n = digits(s);
        if n == 0 {
            return None;
        }
        (s[..n].parse().ok()?, &s[n..])
    };
    let hi = if let Some(r) = rest.strip_prefix('-') {
        let n = digits(r);
        rest = &r[n..];
        if n == 0 {
            usize::MAX
        } else {
            r[..n].parse().ok()?
        }
    } else {
        lo
    };
    if hi < lo {
        return None;
    }
    Some((PortRange { lo, hi }, rest))
}

impl PortCount {
    /// Parses Click's port count syntax; `None` if malformed.
    pub fn parse(s: &str) -> Option<PortCount> {
        let (inputs, rest) = parse_range(s)?;
        let out_s = if rest.is_empty() {
            s
        } else {
            rest.strip_prefix('/')?
        };
        let outputs = if let Some(plus) = out_s.strip_prefix('=') {
            if !plus.bytes().all(|c| c == b'+') {
                return None;
            }
            OutputCount::SameAsInputs(plus.len())
        } else {
            let (r, rest) = parse_range(out_s)?;
            if !rest.is_empty() {
                return None;
            }
            OutputCount::Range(r)
        };
        Some(PortCount { inputs, outputs })
    }

    /// Port counts for an element whose connections use `used_in` inputs
    /// and `used_out` outputs (1 + highest port), clamped into range.
    pub fn resolve(&self, used_in: usize, used_out: usize) -> (usize, usize) {
        let nin = used_in.clamp(self.inputs.lo, self.inputs.hi);
        let nout = match self.outputs {
            OutputCount::SameAsInputs(k) => nin + k,
            OutputCount::Range(r) => used_out.clamp(r.lo, r.hi),
        };
        (nin, nout)
    }
}

/// A port's processing code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Processing {
    Push,
    Pull,
    Agnostic,
}

/// A parsed processing string: per-port codes, the last one repeating.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessingSpec {
    pub inputs: Vec<Processing>,
    pub outputs: Vec<Processing>,
}

impl ProcessingSpec {
    /// Parses Click's processing syntax (`"a/ah"`, `"h/l"`, `"a"`).
    pub fn parse(s: &str) -> Option<ProcessingSpec> {
        fn codes(s: &str) -> Option<Vec<Processing>> {
            s.chars()
                .map(|c| match c {
                    'h' | 'H' => Some(Processing::Push),
                    'l' | 'L' => Some(Processing::Pull),
                    'a' | 'A' => Some(Processing::Agnostic),
                    _ => None,
                })
                .collect()
        }
        let (i, o) = s.split_once('/').unwrap_or((s, s));
        let mut inputs = codes(i)?;
        if inputs.is_empty() {
            inputs.push(Processing::Agnostic);
        }
        let mut outputs = codes(o)?;
        if outputs.is_empty() {
            // as in Click, an empty section continues the previous code
            outputs.push(*inputs.last().unwrap_or(&Processing::Agnostic));
        }
        Some(ProcessingSpec { inputs, outputs })
    }

    pub fn input(&self, port: usize) -> Processing {
        *self
            .inputs
            .get(port)
            .or(self.inputs.last())
            .unwrap_or(&Processing::Agnostic)
    }

    pub fn output(&self, port: usize) -> Processing {
        *self
            .outputs
            .get(port)
            .or(self.outputs.last())
            .unwrap_or(&Processing::Agnostic)
    }
}

/// One port code of a flow code: a set of letters and a `#` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Code {
    letters: u128,
    hash: Hash,
}

/// Which port numbers a code's `#` matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hash {
    None,
    Own,
    AllButOwn,
    All,
}

/// A parsed flow code (`"x/x"`, `"xy/x"`, `"#/#"`, `"#/[^#]"`): which
/// inputs packets can travel to which outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowCode {
    inputs: Vec<Code>,
    outputs: Vec<Code>,
}

impl FlowCode {
    pub fn parse(s: &str) -> Option<FlowCode> {
        fn codes(s: &str) -> Option<Vec<Code>> {
            let mut out = Vec::new();
            let mut chars = s.chars();
            while let Some(c) = chars.next() {
                let code = match c {
                    '#' => Code {
                        letters: 0,
                        hash: Hash::Own,
                    },
                    c if c.is_ascii_alphabetic() => Code {
                        letters: 1u128 << (c as u32),
                        hash: Hash::None,
                    },
                    '[' => {
                        let mut code = Code {
                            letters: 0,
                            hash: Hash::None,
                        };
                        let mut negated = false;
                        let mut first = true;
                        loop {
                            match chars.next()? {
                                ']' => break,
                                '^' if first => negated = true,
                                '#' => code.hash = Hash::Own,
                                c if c.is_ascii_alphabetic() => code.letters |= 1u128 << (c as u32),
                                _ => return None,
                            }
                            first = false;
                        }
                        if negated {
                            code.letters = !code.letters;
                            code.hash = match code.hash {
                                Hash::Own => Hash::AllButOwn,
                                _ => Hash::All,
                            };
                        }
                        code
                    }
                    _ => return None,
                };
                out.push(code);
            }
            if out.is_empty() {
                None
            } else {
                Some(out)
            }
        }
        let (i, o) = s.split_once('/').unwrap_or((s, s));
        Some(FlowCode {
            inputs: codes(i)?,
            outputs: codes(o)?,
        })
    }

    /// Can packets arriving on `input` leave on `output`?
    pub fn flows(&self, input: usize, output: usize) -> bool {
        let pick = |v: &[Code], p: usize| *v.get(p).or(v.last()).expect("nonempty");
        let a = pick(&self.inputs, input);
        let b = pick(&self.outputs, output);
        if a.letters & b.letters != 0 {
            return true;
        }
        use Hash::*;
        match (a.hash, b.hash) {
            (None, _) | (_, None) => false,
            (Own, Own) => input == output,
            (Own, AllButOwn) | (AllButOwn, Own) => input != output,
            _ => true,
        }
    }
}

/// Per-element facts the checks use.
struct Info {
    known: bool,
    nin: usize,
    nout: usize,
    pc: Option<PortCount>,
    proc: Option<ProcessingSpec>,
    flow: Option<FlowCode>,
}

/// Checks a flat graph. `lookup` gives the spec of a class (`None`:
/// unknown class); `known_classes` are the names offered as suggestions for
/// unknown ones. Every agnostic element uses the default flow code `x/x`.
pub fn check_graph(
    g: &FlatGraph,
    lookup: &dyn Fn(&str) -> Option<ClassSpec>,
    known_classes: &[&str],
) -> Result<CheckedGraph, Vec<Diagnostic>> {
    check_graph_with_flow(g, lookup, &|_| None, known_classes)
}

/// [`check_graph`], with `flow_code` giving a class's flow code where it is
/// not the default `x/x`.
pub fn check_graph_with_flow(
    g: &FlatGraph,
    lookup: &dyn Fn(&str) -> Option<ClassSpec>,
    flow_code: &dyn Fn(&str) -> Option<String>,
    known_classes: &[&str],
) -> Result<CheckedGraph, Vec<Diagnostic>> {
    let (checked, errs) = check_partial(g, lookup, flow_code, known_classes);
    if errs.is_empty() {
        Ok(checked)
    } else {
        Err(errs)
    }
}

/// [`check_graph`], giving the port counts and kinds it resolved even
/// where it found errors, beside them: an element of a known class has
/// the port counts its class allows and the kinds its class gives (its
/// agnostic ports what its connections gave them), so that it can still
/// be configured to report its argument errors with the graph's; an
/// element of an unknown class has the ports its connections use.
pub fn check_graph_partial(
    g: &FlatGraph,
    lookup: &dyn Fn(&str) -> Option<ClassSpec>,
    known_classes: &[&str],
) -> (CheckedGraph, Vec<Diagnostic>) {
    check_partial(g, lookup, &|_| None, known_classes)
}

fn check_partial(
    g: &FlatGraph,
    lookup: &dyn Fn(&str) -> Option<ClassSpec>,
    flow_code: &dyn Fn(&str) -> Option<String>,
    known_classes: &[&str],
) -> (CheckedGraph, Vec<Diagnostic>) {
    let n = g.elements.len();
    let mut errs = Vec::new();
    let mut bad_specs = HashSet::new();

    // Classes. Suggestions for unknown ones cost a string distance to
    // every known class: made once per class name, for the first
    // MAX_SUGGESTED names (a flood of unknown classes got one each).
    let mut suggested: std::collections::HashMap<&str, Option<&str>> = Default::default();
    let mut info: Vec<Info> = Vec::with_capacity(n);
    for e in &g.elements {
        // An element named after a known class, which Click's lexer
        // refuses (a name used as a class in the text is refused while
        // resolving names; this is the classes the text never used).
        let local = e.name.rsplit('/').next().unwrap_or(&e.name);
        if !e.anonymous && lookup(local).is_some() {
            errs.push(
                Diagnostic::error(
                    Some(e.span.clone()),
                    format!("class '{local}' used as element name"),
                )
                .at_language_stage(),
            );
        }
        let mut inf = Info {
            known: false,
            nin: 0,
            nout: 0,
            pc: None,
            proc: None,
            flow: None,
        };
        match lookup(&e.class) {
            None => {
                let n_suggested = suggested.len();
                let s = *suggested.entry(e.class.as_str()).or_insert_with(|| {
                    if n_suggested < MAX_SUGGESTED {
                        suggest(&e.class, known_classes)
                    } else {
                        None
                    }
                });
                errs.push(unknown_class(e, s));
            }
            Some(spec) => {
                let pc = PortCount::parse(&spec.port_count);
                let proc = ProcessingSpec::parse(&spec.processing);
                let flow = match flow_code(&e.class) {
                    Some(f) => FlowCode::parse(&f).ok_or(f),
                    None => Ok(FlowCode::parse("x/x").expect("valid")),
                };
                let mut ok = true;
                if pc.is_none() && bad_specs.insert((e.class.clone(), 0)) {
                    errs.push(bad_spec(e, "port count", &spec.port_count));
                }
                if proc.is_none() && bad_specs.insert((e.class.clone(), 1)) {
                    errs.push(bad_spec(e, "processing code", &spec.processing));
                }
                if let Err(f) = &flow {
                    if bad_specs.insert((e.class.clone(), 2)) {
                        errs.push(bad_spec(e, "flow code", f));
                    }
                    ok = false;
                }
                if pc.is_some() && proc.is_some() && ok {
                    inf.known = true;
                    inf.pc = pc;
                    inf.proc = proc;
                    inf.flow = flow.ok();
                }
            }
        }
        info.push(inf);
    }

    // Port counts.
    let mut conns = Vec::new(); // indices of well-formed connections
    for (ci, c) in g.connections.iter().enumerate() {
        if c.from >= n || c.to >= n {
            errs.push(Diagnostic::error(
                Some(c.span.clone()),
                format!("connection refers to element {} of {n}", c.from.max(c.to)),
            ));
            continue;
        }
        info[c.from].nout = info[c.from].nout.max(c.from_port + 1);
        info[c.to].nin = info[c.to].nin.max(c.to_port + 1);
        conns.push(ci);
    }
    for inf in info.iter_mut() {
        if let Some(pc) = &inf.pc {
            (inf.nin, inf.nout) = pc.resolve(inf.nin, inf.nout);
        }
    }
    let mut valid = Vec::new();
    let mut seen = HashSet::new();
    // ports of connections rejected here: not reported as unused as well
    let mut excused: HashSet<(usize, bool, usize)> = HashSet::new();
    for &ci in &conns {
        let c = &g.connections[ci];
        let mut ok = true;
        if info[c.from].known && c.from_port >= info[c.from].nout {
            errs.push(range_error(
                g,
                &info,
                c.from,
                "output",
                c.from_port,
                &c.span,
            ));
            ok = false;
        }
        if info[c.to].known && c.to_port >= info[c.to].nin {
            errs.push(range_error(g, &info, c.to, "input", c.to_port, &c.span));
            ok = false;
        }
        if !ok {
            excused.insert((c.from, true, c.from_port));
            excused.insert((c.to, false, c.to_port));
        }
        // repeated connections count once, as in Click
        if ok && seen.insert((c.from, c.from_port, c.to, c.to_port)) {
            valid.push(ci);
        }
    }

    // Push and pull: spread kinds along connections and, inside agnostic
    // elements, along the flow code, until nothing changes.
    let mut ins: Vec<Vec<Processing>> = info
        .iter()
        .map(|i| {
            (0..i.nin)
                .map(|p| i.proc.as_ref().map_or(Processing::Agnostic, |s| s.input(p)))
                .collect()
        })
        .collect();
    let mut outs: Vec<Vec<Processing>> = info
        .iter()
        .map(|i| {
            (0..i.nout)
                .map(|p| {
                    i.proc
                        .as_ref()
                        .map_or(Processing::Agnostic, |s| s.output(p))
                })
                .collect()
        })
        .collect();
    // (element out, port, element in, port, internal?, connection index)
    let mut hookups: Vec<(usize, usize, usize, usize, Option<usize>)> = valid
        .iter()
        .map(|&ci| {
            let c = &g.connections[ci];
            (c.from, c.from_port, c.to, c.to_port, Some(ci))
        })
        .collect();
    for (e, inf) in info.iter().enumerate() {
        let Some(flow) = &inf.flow else { continue };
        for (i, pin) in ins[e].iter().enumerate() {
            if *pin != Processing::Agnostic {
                continue;
            }
            for (o, pout) in outs[e].iter().enumerate() {
                if *pout == Processing::Agnostic && flow.flows(i, o) {
                    hookups.push((e, o, e, i, None));
                }
            }
        }
    }
    // In passes over the hookups, in order, a change visible at once, as
    // Click does; but a pass visits only the hookups an end of which has
    // changed since they were last looked at (the others would do
    // nothing again), so a long chain costs its length, not its square.
    let mut dead = vec![false; hookups.len()];
    let mut out_hooks: Vec<Vec<Vec<usize>>> =
        outs.iter().map(|v| vec![Vec::new(); v.len()]).collect();
    let mut in_hooks: Vec<Vec<Vec<usize>>> =
        ins.iter().map(|v| vec![Vec::new(); v.len()]).collect();
    for (h, &(f, fp, t, tp, _)) in hookups.iter().enumerate() {
        out_hooks[f][fp].push(h);
        in_hooks[t][tp].push(h);
    }
    let mut this_pass: BTreeSet<usize> = (0..hookups.len()).collect();
    let mut next_pass: BTreeSet<usize> = BTreeSet::new();
    loop {
        let Some(h) = this_pass.pop_first() else {
            if next_pass.is_empty() {
                break;
            }
            std::mem::swap(&mut this_pass, &mut next_pass);
            continue;
        };
        if dead[h] {
            continue;
        }
        let (f, fp, t, tp, conn) = hookups[h];
        let pf = outs[f][fp];
        let pt = ins[t][tp];
        let touched = match (pf, pt) {
            (Processing::Agnostic, Processing::Agnostic) => continue,
            (_, Processing::Agnostic) => {
                ins[t][tp] = pf;
                &in_hooks[t][tp]
            }
            (Processing::Agnostic, _) => {
                outs[f][fp] = pt;
                &out_hooks[f][fp]
            }
            _ if pf == pt => continue,
            _ => {
                dead[h] = true;
                errs.push(match conn {
                    Some(ci) => mismatch_error(g, ci, pf),
                    None => mixed_error(g, f, tp, fp, pf),
                });
                continue;
            }
        };
        for &o in touched {
            if o > h {
                this_pass.insert(o);
            } else if o < h {
                next_pass.insert(o);
            }
        }
    }
    let kind = |p: Processing| {
        if p == Processing::Pull {
            PortKind::Pull
        } else {
            PortKind::Push
        }
    };
    let checked = CheckedGraph {
        inputs: ins
            .iter()
            .map(|v| v.iter().map(|&p| kind(p)).collect())
            .collect(),
        outputs: outs
            .iter()
            .map(|v| v.iter().map(|&p| kind(p)).collect())
            .collect(),
    };

    // Port usage.
    let mut used_out: Vec<Vec<Option<usize>>> = info.iter().map(|i| vec![None; i.nout]).collect();
    let mut used_in: Vec<Vec<Option<usize>>> = info.iter().map(|i| vec![None; i.nin]).collect();
    for &ci in &valid {
        let c = &g.connections[ci];
        let prev_out = used_out[c.from][c.from_port];
        let prev_in = used_in[c.to][c.to_port];
        if let (Some(p), true) = (prev_out, info[c.from].known) {
            if checked.outputs[c.from][c.from_port] == PortKind::Push {
                errs.push(reuse_error(
                    g,
                    ci,
                    p,
                    c.from,
                    "push output",
                    c.from_port,
                    "a push output sends each packet to one place; use Tee to send copies",
                ));
            }
        }
        if let (Some(p), true) = (prev_in, info[c.to].known) {
            if checked.inputs[c.to][c.to_port] == PortKind::Pull {
                errs.push(reuse_error(
                    g,
                    ci,
                    p,
                    c.to,
                    "pull input",
                    c.to_port,
                    "a pull input pulls from one place; use a scheduler such as RoundRobinSched to merge",
                ));
            }
        }
        // the first connection keeps the port; a rejected one still counts
        // as using its ports, so they are not also reported unused
        used_out[c.from][c.from_port].get_or_insert(ci);
        used_in[c.to][c.to_port].get_or_insert(ci);
    }
    for (e, inf) in info.iter().enumerate() {
        if !inf.known {
            continue;
        }
        let el = &g.elements[e];
        for (dir, used) in [("input", &used_in[e]), ("output", &used_out[e])] {
            for (p, u) in used.iter().enumerate() {
                if u.is_none() && !excused.contains(&(e, dir == "output", p)) {
                    errs.push(
                        Diagnostic::error(
                            Some(el.span.clone()),
                            format!("'{}' :: {} {dir} {p} unused", el.name, el.class),
                        )
                        .with_click(
                            None,
                            format!("'{} :: {}' {dir} {p} unused", el.name, el.class),
                        ),
                    );
                }
            }
        }
    }

    if errs.is_empty() {
        let conns = || valid.iter().map(|&ci| &g.connections[ci]);
        let push: Vec<(usize, usize)> = conns()
            .filter(|c| checked.outputs[c.from][c.from_port] == PortKind::Push)
            .map(|c| (c.from, c.to))
            .collect();
        // a pull calls upstream: from the puller to what it pulls from
        let pull: Vec<(usize, usize)> = conns()
            .filter(|c| checked.inputs[c.to][c.to_port] == PortKind::Pull)
            .map(|c| (c.to, c.from))
            .collect();
        for (kind, edges) in [("push", push), ("pull", pull)] {
            if let Some(d) = chain_error(g, kind, &edges, MAX_CHAIN) {
                errs.push(d);
            }
        }
    }
    (checked, errs)
}

/// The error for the longest path along `edges` (element to element, in
/// call order) if it has more than `max` elements; a strongly connected
/// part counts as all of its elements. Iterative throughout: the graph
/// may be a chain of any length.
fn chain_error(
    g: &FlatGraph,
    kind: &str,
    edges: &[(usize, usize)],
    max: usize,
) -> Option<Diagnostic> {
    let n = g.elements.len();
    if edges.is_empty() || n <= max {
        return None;
    }
    let adj = |rev: bool| {
        let mut a: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(f, t) in edges {
            if rev {
                a[t].push(f);
            } else {
                a[f].push(t);
            }
        }
        a
    };
    let fwd = adj(false);
    let back = adj(true);
    // Kosaraju: finishing order on the graph, then components on the
    // reversed graph in reverse finishing order, which finds them in
    // topological order of the condensation (callers first).
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![(s, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (v, i) = *top;
            if let Some(&w) = fwd[v].get(i) {
                top.1 += 1;
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
                stack.pop();
            }
        }
    }
    let mut comp = vec![usize::MAX; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for &s in order.iter().rev() {
        if comp[s] != usize::MAX {
            continue;
        }
        let c = members.len();
        let mut m = vec![s];
        comp[s] = c;
        let mut stack = vec![s];
        while let Some(v) = stack.pop() {
            for &w in &back[v] {
                if comp[w] == usize::MAX {
                    comp[w] = c;
                    m.push(w);
                    stack.push(w);
                }
            }
        }
        members.push(m);
    }
    // Longest path in elements, components in topological order.
    let nc = members.len();
    let mut before = vec![0usize; nc]; // elements on the best path before
    let mut from = vec![usize::MAX; nc]; // the component it comes from
    for c in 0..nc {
        let len = before[c] + members[c].len();
        if len > max {
            // The first component the limit is crossed in: walk back.
            let mut first = c;
            while from[first] != usize::MAX {
                first = from[first];
            }
            let at = members[c][0];
            let start = members[first][0];
            let el = &g.elements[at];
            let cycle = if members[c].len() > 1 {
                format!(" (through a cycle of {} elements)", members[c].len())
            } else {
                String::new()
            };
            return Some(
                Diagnostic::error(
                    Some(el.span.clone()),
                    format!(
                        "{kind} chain too long: '{}' is element {len} of a {kind} path{cycle} (at most {max}); elements call each other along a {kind} path, and so many would overflow a worker's stack",
                        el.name
                    ),
                )
                .with_note(
                    Some(g.elements[start].span.clone()),
                    format!(
                        "the path starts at '{}'; split it with a Queue",
                        g.elements[start].name
                    ),
                ),
            );
        }
        for &v in &members[c] {
            for &w in &fwd[v] {
                let d = comp[w];
                if d != c && len > before[d] {
                    before[d] = len;
                    from[d] = c;
                }
            }
        }
    }
    None
}

/// `'name' (Class, file:line:col)`.
fn describe(g: &FlatGraph, e: usize) -> String {
    let el = &g.elements[e];
    format!("'{}' ({}, {})", el.name, el.class, el.span.location())
}

fn kind_name(p: Processing) -> &'static str {
    match p {
        Processing::Push => "push",
        Processing::Pull => "pull",
        Processing::Agnostic => "agnostic",
    }
}

fn opposite(p: Processing) -> Processing {
    if p == Processing::Push {
        Processing::Pull
    } else {
        Processing::Push
    }
}

fn mismatch_error(g: &FlatGraph, ci: usize, pf: Processing) -> Diagnostic {
    let c = &g.connections[ci];
    let d = Diagnostic::error(
        Some(c.span.clone()),
        format!(
            "{} output {} of {} connected to {} input {} of {}",
            kind_name(pf),
            c.from_port,
            describe(g, c.from),
            kind_name(opposite(pf)),
            c.to_port,
            describe(g, c.to)
        ),
    );
    if pf == Processing::Push {
        d.with_note(None, "put a Queue between them to turn push into pull")
    } else {
        d.with_note(
            None,
            "a pull output must be pulled by a pull input (for example, Unqueue pulls and pushes)",
        )
    }
}

fn mixed_error(
    g: &FlatGraph,
    e: usize,
    inport: usize,
    outport: usize,
    pout: Processing,
) -> Diagnostic {
    Diagnostic::error(
        Some(g.elements[e].span.clone()),
        format!(
            "agnostic {} in mixed context: {} input {inport}, {} output {outport}",
            describe(g, e),
            kind_name(opposite(pout)),
            kind_name(pout)
        ),
    )
    .with_note(
        None,
        "an agnostic element is all push or all pull; put a Queue where push turns into pull",
    )
}

fn reuse_error(
    g: &FlatGraph,
    ci: usize,
    first: usize,
    e: usize,
    what: &str,
    port: usize,
    hint: &str,
) -> Diagnostic {
    let msg = format!(
        "illegal reuse of '{} :: {}' {what} {port}",
        g.elements[e].name, g.elements[e].class
    );
    Diagnostic::error(
        Some(g.connections[ci].span.clone()),
        // Click's wording, with both connections located.
        msg.clone(),
    )
    .with_note(
        Some(g.connections[first].span.clone()),
        "first connection here",
    )
    .with_note(None, hint)
    // Click locates it at the element.
    .with_click(Some(g.elements[e].span.clone()), msg)
}

fn range_error(
    g: &FlatGraph,
    info: &[Info],
    e: usize,
    dir: &str,
    port: usize,
    span: &Span,
) -> Diagnostic {
    let el = &g.elements[e];
    let inf = &info[e];
    let pc = inf.pc.expect("known class");
    let why = match (dir, pc.outputs) {
        ("output", OutputCount::SameAsInputs(k)) => {
            let extra = if k == 0 {
                String::new()
            } else {
                format!(" plus {k}")
            };
            format!(
                "{} has as many outputs as inputs{extra}: {} with {} input{}",
                el.class,
                inf.nout,
                inf.nin,
                if inf.nin == 1 { "" } else { "s" }
            )
        }
        _ => {
            let hi = match (dir, pc.outputs) {
                ("input", _) => pc.inputs.hi,
                (_, OutputCount::Range(r)) => r.hi,
                _ => inf.nout,
            };
            if hi == 0 {
                format!("{} has no {dir}s", el.class)
            } else {
                format!(
                    "at most {hi} {dir}{} allowed",
                    if hi == 1 { "" } else { "s" }
                )
            }
        }
    };
    Diagnostic::error(
        Some(span.clone()),
        format!("'{}' :: {} has no {dir} {port} ({why})", el.name, el.class),
    )
    .with_note(
        Some(el.span.clone()),
        format!("'{}' declared here", el.name),
    )
}

fn bad_spec(e: &crate::FlatElement, what: &str, s: &str) -> Diagnostic {
    Diagnostic::error(
        Some(e.span.clone()),
        format!("element class '{}' has a bad {what} \"{s}\"", e.class),
    )
}

/// How many distinct unknown class names get a suggestion.
const MAX_SUGGESTED: usize = 100;

fn unknown_class(e: &crate::FlatElement, suggestion: Option<&str>) -> Diagnostic {
    // point at the class name at the start of the element's span
    let mut span = e.span.clone();
    span.end = span.end.min(span.start + e.class.len());
    let d = if e.anonymous {
        // A word where an element goes (`-> Word ->`, `Word(args)`), which
        // Click takes for an element name first: neither is declared.
        // Click's words in both forms (its form without the notes).
        let what = format!("undeclared element '{}'", e.class);
        Diagnostic::error(Some(span.clone()), what.clone()).with_click(None, what)
    } else {
        Diagnostic::error(
            Some(span.clone()),
            format!("unknown element class '{}'", e.class),
        )
    }
    .at_language_stage();
    match suggestion {
        Some(s) => d.with_note(Some(span), format!("did you mean '{s}'?")),
        None => d,
    }
}

/// The known class closest to `name`, if it is close enough to be a typo.
pub fn suggest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    // The distance costs the product of the lengths: no class name is
    // this long, so nothing is close enough to suggest.
    if name.len() > 64 {
        return None;
    }
    let lower = name.to_lowercase();
    if let Some(k) = known.iter().find(|k| k.to_lowercase() == lower) {
        return Some(k);
    }
    let limit = ((name.chars().count() + 1) / 3).max(1);
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), *k))
        .filter(|&(d, _)| d <= limit && d < name.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}
