//! `paraclick align`: Click's click-align. Reads a configuration, works
//! out where packet data lies in memory along every connection, inserts
//! `Align(MODULUS, OFFSET)` elements where an element's need is not met,
//! drops the Aligns that change nothing anyone needs, and adds an
//! `AlignmentInfo` element recording the alignment each element with a
//! need gets. The result is printed flattened, as `paraclick flatten`
//! prints, but with the connections in the order kept (Click's tool
//! lists a connection it adds after those it kept:
//! `paraclick_lang::print_click_listed`).
//!
//! An alignment says that a packet's first data byte lies OFFSET bytes
//! past a MODULUS-byte boundary. What a class needs or gives is its
//! [`ClickAlignment`] (Classifier needs 4, 2; CheckIPHeader needs its IP
//! header, OFFSET bytes in, at 4, 0; FromDevice gives 4, 2; Align gives
//! its arguments), and how it moves the data's start is its
//! [`HeaderChange`] (Strip(N): N bytes on; IPInputCombo: 14 on; Unstrip(N)
//! and EtherEncap: back).
//! A class paraclick does not know gives packets of unknown alignment and
//! may need anything. Where connections join, an input gets the
//! alignment all its packets share (4, 2 and 8, 6 give 4, 2; 4, 0 and
//! 4, 2 give 2, 0). Packets flow from every input of an element to every
//! output (flow codes are not followed): an output gives what the inputs
//! give, moved; an input needs what every output leads to.
//!
//! The steps, in order:
//!
//! 1. An Align fed by an Align: where the first one's alignment already
//!    meets the second's, that connection goes past the second (to its
//!    outputs); otherwise the first one's work is undone, and the second
//!    is fed by the first one's inputs instead. An Align left with no
//!    input goes.
//! 2. A connection into an Align whose packets already have its alignment
//!    goes past it.
//! 3. An Align whose input already has what everything after it needs
//!    goes (its inputs connect to its outputs); an Align before a class
//!    paraclick does not know stays.
//! 4. Where an output's packets lack what the inputs it leads to need, an
//!    Align is put right after it: at the element where the alignment is
//!    lost or never known (a source, an unknown class, a join of
//!    different alignments), not after every element that passes it on.
//!    An output whose destinations need different alignments gets an
//!    Align on each connection that needs one (a destination whose own
//!    need differs from what follows it gets its own need there, and
//!    what follows gets Aligns after it).
//!
//! Steps 1 to 4 repeat until none changes anything (an Align inserted
//! after one of the configuration's makes that one go in the next
//! round). Then:
//!
//! 5. `AlignmentInfo@click_align@N` lists each element with a need, with
//!    the alignment packets reach each of its inputs with; an earlier
//!    AlignmentInfo goes.

use paraclick_lang::{FlatConnection, FlatElement, FlatGraph, Span};
use paraclick_runtime::{ClickAlignment, HeaderChange, Registry};
use std::sync::Arc;

/// `offset` bytes past a `modulus`-byte boundary; modulus 1 says nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Al {
    modulus: u64,
    offset: u64,
}

const UNKNOWN: Al = Al {
    modulus: 1,
    offset: 0,
};

/// The largest modulus a combined need may have; a need beyond it is
/// taken as one no alignment meets.
const MAX_MODULUS: u64 = 1 << 16;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Al {
    fn new(modulus: u64, offset: i64) -> Al {
        let m = modulus.max(1);
        Al {
            modulus: m,
            offset: offset.rem_euclid(m as i64) as u64,
        }
    }

    /// Moved `by` bytes on (the data's start moves `by` bytes later).
    fn shifted(self, by: i64) -> Al {
        Al::new(self.modulus, self.offset as i64 + by)
    }

    /// What packets aligned as `self` and as `o` both have.
    fn join(self, o: Al) -> Al {
        let m = gcd(gcd(self.modulus, o.modulus), self.offset.abs_diff(o.offset));
        Al::new(m, self.offset as i64)
    }

    /// Whether data aligned as `self` is aligned as `w` too.
    fn meets(self, w: Al) -> bool {
        self.modulus.is_multiple_of(w.modulus) && self.offset % w.modulus == w.offset
    }

    /// The alignment that meets both `self` and `o`, if one does.
    fn both(self, o: Al) -> Option<Al> {
        let g = gcd(self.modulus, o.modulus);
        let l = self.modulus / g * o.modulus;
        if l > MAX_MODULUS || self.offset % g != o.offset % g {
            return None;
        }
        (0..l / self.modulus)
            .map(|k| self.offset + k * self.modulus)
            .find(|x| x % o.modulus == o.offset)
            .map(|x| Al::new(l, x as i64))
    }
}

/// What packets at a point have: none (yet), or an alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Have {
    NoPackets,
    At(Al),
}

impl Have {
    fn join(self, o: Have) -> Have {
        match (self, o) {
            (Have::NoPackets, x) | (x, Have::NoPackets) => x,
            (Have::At(a), Have::At(b)) => Have::At(a.join(b)),
        }
    }
}

/// What packets at a point must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Nothing,
    At(Al),
    /// Not known (a class paraclick does not know), or needs no
    /// alignment meets (different needs after one point): no Align there
    /// meets it.
    Unmeetable,
}

impl Want {
    fn both(self, o: Want) -> Want {
        match (self, o) {
            (Want::Nothing, x) | (x, Want::Nothing) => x,
            (Want::At(a), Want::At(b)) => a.both(b).map_or(Want::Unmeetable, Want::At),
            _ => Want::Unmeetable,
        }
    }

    /// The need before an element that moves the data's start `by`
    /// bytes on.
    fn before_shift(self, by: i64) -> Want {
        match self {
            Want::At(a) => Want::At(a.shifted(-by)),
            x => x,
        }
    }
}

fn have_meets(h: Have, w: Want) -> bool {
    match (h, w) {
        (_, Want::Nothing) | (Have::NoPackets, _) => true,
        (_, Want::Unmeetable) => false,
        (Have::At(h), Want::At(w)) => h.meets(w),
    }
}

/// What an element does to alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    /// Passes packets on, the data's start moved this many bytes on.
    Pass(i64),
    /// Gives packets this alignment (a source that says so, an Align).
    Fixed(Al),
    /// Gives packets of unknown alignment.
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Behaviour {
    /// What every input needs.
    need: Option<Al>,
    out: Out,
    /// A class paraclick does not know: it may need anything.
    unknown_class: bool,
    align: bool,
}

/// An integer argument (`14`, `0x0e`).
/// Values beyond 2^31 in magnitude are refused, so that no sum of them
/// overflows.
fn int_arg(s: &str) -> Option<i64> {
    let s = s.trim();
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }?;
    (v.unsigned_abs() <= 1 << 31).then_some(v)
}

/// The OFFSET of a `[OFFSET, keywords OFFSET, ...]` configuration: the
/// keyword, or the first argument if it is not a keyword; 0 if neither.
fn offset_arg(config: &str) -> Result<i64, String> {
    let args = paraclick_lang::args::split_args(config);
    for a in &args {
        if let Some(("OFFSET", v)) = paraclick_lang::args::split_keyword(a) {
            return int_arg(v).ok_or_else(|| format!("OFFSET '{v}' is not an integer"));
        }
    }
    match args.first() {
        Some(a) if paraclick_lang::args::split_keyword(a).is_none() && !a.is_empty() => {
            int_arg(a).ok_or_else(|| format!("OFFSET '{a}' is not an integer"))
        }
        _ => Ok(0),
    }
}

/// Align's MODULUS and OFFSET.
fn align_args(config: &str) -> Result<Al, String> {
    let args = paraclick_lang::args::split_args(config);
    let bad = || format!("'{config}' is not MODULUS, OFFSET (OFFSET below MODULUS)");
    if args.len() != 2 {
        return Err(bad());
    }
    let arg = |s: &str| match paraclick_lang::args::split_keyword(s) {
        Some(("MODULUS" | "OFFSET", v)) => int_arg(v),
        Some(_) => None,
        None => int_arg(s),
    };
    match (arg(&args[0]), arg(&args[1])) {
        (Some(m), Some(o)) if m >= 1 && m as u64 <= MAX_MODULUS && (0..m).contains(&o) => {
            Ok(Al::new(m as u64, o))
        }
        _ => Err(bad()),
    }
}

fn behaviour(reg: &Registry, e: &FlatElement) -> Result<Behaviour, String> {
    let Some(spec) = reg.get(&e.class) else {
        return Ok(Behaviour {
            need: None,
            out: Out::Unknown,
            unknown_class: true,
            align: false,
        });
    };
    let first_int = || {
        paraclick_lang::args::split_args(&e.config)
            .first()
            .and_then(|a| int_arg(a))
            .ok_or_else(|| format!("'{}' does not start with a length", e.config))
    };
    let mut out = match spec.header_change {
        HeaderChange::Keeps => Out::Pass(0),
        HeaderChange::StripsArg => Out::Pass(first_int()?),
        HeaderChange::UnstripsArg => Out::Pass(-first_int()?),
        HeaderChange::Prepends(n) => Out::Pass(-(n as i64)),
        HeaderChange::Strips(n) => Out::Pass(n as i64),
        HeaderChange::Unknown => Out::Unknown,
    };
    let mut need = None;
    let mut align = false;
    match spec.click_alignment {
        ClickAlignment::Passes => {}
        ClickAlignment::Needs { modulus, offset } => {
            need = Some(Al::new(modulus.into(), offset.into()));
        }
        ClickAlignment::NeedsAtOffsetArg { modulus, offset } => {
            let at = offset_arg(&e.config)?;
            need = Some(Al::new(modulus.into(), i64::from(offset) - at));
        }
        ClickAlignment::Makes { modulus, offset } => {
            out = Out::Fixed(Al::new(modulus.into(), offset.into()));
        }
        ClickAlignment::AlignsToArgs => {
            out = Out::Fixed(align_args(&e.config)?);
            align = true;
        }
        ClickAlignment::Unknown => out = Out::Unknown,
    }
    Ok(Behaviour {
        need,
        out,
        unknown_class: false,
        align,
    })
}

/// The graph being aligned: elements (some gone), their behaviours, and
/// connections as (from, output, to, input).
struct Work {
    elements: Vec<FlatElement>,
    beh: Vec<Behaviour>,
    gone: Vec<bool>,
    conns: Vec<(usize, usize, usize, usize)>,
}

/// Alignment everywhere: what each element's outputs give, what each
/// element's inputs need.
struct Flow {
    have: Vec<Have>,
    want: Vec<Want>,
}

impl Work {
    fn inputs_of(&self, e: usize) -> impl Iterator<Item = usize> + '_ {
        self.conns.iter().filter(move |c| c.2 == e).map(|c| c.0)
    }

    fn outputs_of(&self, e: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.conns
            .iter()
            .filter(move |c| c.0 == e)
            .map(|c| (c.2, c.3))
    }

    fn flow(&self) -> Flow {
        let n = self.elements.len();
        // Both fixpoints only move one way through finite steps (a
        // modulus divides on each change of a have, a want only gets
        // stricter up to MAX_MODULUS); the cap is a guard.
        let cap = 64 * (n + 1);
        let mut ins = vec![Vec::new(); n];
        let mut outs = vec![Vec::new(); n];
        for c in &self.conns {
            ins[c.2].push(c.0);
            outs[c.0].push(c.2);
        }
        let mut have = vec![Have::NoPackets; n];
        for _ in 0..cap {
            let mut changed = false;
            for e in 0..n {
                let h = match self.beh[e].out {
                    Out::Fixed(a) => Have::At(a),
                    Out::Unknown => Have::At(UNKNOWN),
                    Out::Pass(by) => {
                        if ins[e].is_empty() {
                            Have::At(UNKNOWN)
                        } else {
                            match ins[e].iter().fold(Have::NoPackets, |h, &f| h.join(have[f])) {
                                Have::At(a) => Have::At(a.shifted(by)),
                                Have::NoPackets => Have::NoPackets,
                            }
                        }
                    }
                };
                if h != have[e] {
                    have[e] = h;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut want = vec![Want::Nothing; n];
        for _ in 0..cap {
            let mut changed = false;
            for e in (0..n).rev() {
                let b = self.beh[e];
                let own = b.need.map_or(Want::Nothing, Want::At);
                let w = if b.unknown_class {
                    Want::Unmeetable
                } else if let Out::Pass(by) = b.out {
                    let after = outs[e].iter().fold(Want::Nothing, |w, &t| w.both(want[t]));
                    own.both(after.before_shift(by))
                } else {
                    own
                };
                if w != want[e] {
                    want[e] = w;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Flow { have, want }
    }

    /// Connects every input of Align `a` to each of its outputs, and
    /// removes it.
    fn bypass(&mut self, a: usize) {
        let ins: Vec<_> = self
            .conns
            .iter()
            .filter(|c| c.2 == a && c.0 != a)
            .map(|c| (c.0, c.1))
            .collect();
        let outs: Vec<_> = self
            .conns
            .iter()
            .filter(|c| c.0 == a && c.2 != a)
            .map(|c| (c.2, c.3))
            .collect();
        self.conns.retain(|c| c.0 != a && c.2 != a);
        for &(f, fp) in &ins {
            for &(t, tp) in &outs {
                self.push_conn((f, fp, t, tp));
            }
        }
        self.gone[a] = true;
    }

    fn push_conn(&mut self, c: (usize, usize, usize, usize)) {
        if !self.conns.contains(&c) {
            self.conns.push(c);
        }
    }

    fn align_of(&self, e: usize) -> Option<Al> {
        match self.beh[e] {
            Behaviour {
                align: true,
                out: Out::Fixed(a),
                ..
            } => Some(a),
            _ => None,
        }
    }

    /// Step 1: no Align feeds an Align (but one feeding itself).
    fn collapse_align_chains(&mut self) {
        let had_inputs: Vec<bool> = (0..self.elements.len())
            .map(|e| self.inputs_of(e).next().is_some())
            .collect();
        // Each round removes one Align-to-Align connection; a cycle of
        // Aligns could add them back, so the rounds are capped.
        let cap = 4 * (self.conns.len() + self.elements.len()) + 16;
        for _ in 0..cap {
            let Some(k) = self.conns.iter().position(|c| {
                c.0 != c.2 && self.align_of(c.0).is_some() && self.align_of(c.2).is_some()
            }) else {
                break;
            };
            let (u, up, a, ap) = self.conns[k];
            let (Some(ua), Some(aa)) = (self.align_of(u), self.align_of(a)) else {
                self.conns.remove(k);
                continue;
            };
            if ua.meets(aa) {
                // Past `a`: the new connections go last, `a`'s last
                // output first (as Click's tool lists them).
                self.conns.remove(k);
                let outs: Vec<_> = self.outputs_of(a).collect();
                for (t, tp) in outs.into_iter().rev() {
                    self.push_conn((u, up, t, tp));
                }
            } else {
                // `u`'s inputs feed `a`, where `u` did.
                let ins: Vec<_> = self
                    .conns
                    .iter()
                    .filter(|c| c.2 == u)
                    .map(|c| (c.0, c.1, a, ap))
                    .collect();
                let ins: Vec<_> = ins
                    .into_iter()
                    .filter(|c| !self.conns.contains(c))
                    .collect();
                self.conns.splice(k..k + 1, ins);
            }
        }
        self.drop_starved_aligns(&had_inputs);
    }

    /// Removes the Aligns that had inputs and have none left.
    fn drop_starved_aligns(&mut self, had_inputs: &[bool]) {
        for (a, &had) in had_inputs.iter().enumerate() {
            if !self.gone[a]
                && self.align_of(a).is_some()
                && had
                && self.inputs_of(a).next().is_none()
            {
                self.conns.retain(|c| c.0 != a);
                self.gone[a] = true;
            }
        }
    }

    /// Step 2: connections whose packets already have the alignment of
    /// the Align they go into go past it.
    fn skip_met_aligns(&mut self) {
        let had_inputs: Vec<bool> = (0..self.elements.len())
            .map(|e| self.inputs_of(e).next().is_some())
            .collect();
        let flow = self.flow();
        let mut k = 0;
        while k < self.conns.len() {
            let (f, fp, a, _) = self.conns[k];
            match self.align_of(a) {
                Some(al) if f != a && have_meets(flow.have[f], Want::At(al)) => {
                    self.conns.remove(k);
                    let outs: Vec<_> = self.outputs_of(a).filter(|&(t, _)| t != a).collect();
                    for (t, tp) in outs.into_iter().rev() {
                        self.push_conn((f, fp, t, tp));
                    }
                }
                _ => k += 1,
            }
        }
        self.drop_starved_aligns(&had_inputs);
    }

    /// Step 3: Aligns whose input already has what follows needs go.
    fn drop_unneeded_aligns(&mut self) {
        loop {
            let flow = self.flow();
            let unneeded = (0..self.elements.len()).find(|&a| {
                if self.gone[a] || self.align_of(a).is_none() {
                    return false;
                }
                let have = self
                    .inputs_of(a)
                    .fold(Have::NoPackets, |h, f| h.join(flow.have[f]));
                let after = self
                    .outputs_of(a)
                    .fold(Want::Nothing, |w, (t, _)| w.both(flow.want[t]));
                self.inputs_of(a).next().is_some() && have_meets(have, after)
            });
            match unneeded {
                Some(a) => self.bypass(a),
                None => break,
            }
        }
    }

    /// Whether an unmet need after element `e` is better met before it:
    /// it passes packets on, has inputs, and its inputs' need is one
    /// alignment.
    fn passes_need_up(&self, flow: &Flow, e: usize, has_inputs: bool) -> bool {
        matches!(self.beh[e].out, Out::Pass(_))
            && !self.beh[e].unknown_class
            && matches!(flow.want[e], Want::At(_))
            && has_inputs
    }

    /// How many elements there are (not counting those gone): new
    /// elements are numbered after them.
    fn live(&self) -> usize {
        self.gone.iter().filter(|g| !**g).count()
    }

    fn new_align(&mut self, al: Al) -> usize {
        let mut n = self.live() + 1;
        let name = loop {
            let name = format!("Align@click_align@{n}");
            if !self.elements.iter().any(|e| e.name == name) {
                break name;
            }
            n += 1;
        };
        self.elements.push(FlatElement {
            name,
            class: "Align".into(),
            config: format!("{}, {}", al.modulus, al.offset),
            span: generated_span(),
            anonymous: true,
        });
        self.beh.push(Behaviour {
            need: None,
            out: Out::Fixed(al),
            unknown_class: false,
            align: true,
        });
        self.gone.push(false);
        self.elements.len() - 1
    }

    /// Step 4: Aligns where needs are not met. Returns whether any was
    /// added.
    fn insert_aligns(&mut self) -> bool {
        let flow = self.flow();
        // (element, output, alignment, connections to move onto it)
        let mut fixes: Vec<(usize, usize, Al, Vec<usize>)> = Vec::new();
        // The connections from each output, in order.
        let mut by_output: std::collections::BTreeMap<(usize, usize), Vec<usize>> =
            std::collections::BTreeMap::new();
        for (k, c) in self.conns.iter().enumerate() {
            by_output.entry((c.0, c.1)).or_default().push(k);
        }
        let has_inputs: Vec<bool> = {
            let mut v = vec![false; self.elements.len()];
            for c in &self.conns {
                v[c.2] = true;
            }
            v
        };
        for ((e, p), on_port) in by_output {
            if self.gone[e] || self.passes_need_up(&flow, e, has_inputs[e]) {
                continue;
            }
            let want = on_port
                .iter()
                .fold(Want::Nothing, |w, &k| w.both(flow.want[self.conns[k].2]));
            if have_meets(flow.have[e], want) {
                continue;
            }
            if let Want::At(al) = want {
                fixes.push((e, p, al, on_port));
                continue;
            }
            // Different needs after this output: one Align per need. A
            // destination whose own need differs from what follows it
            // gets its own need here (what follows gets Aligns after it).
            let mut by_need: Vec<(Al, Vec<usize>)> = Vec::new();
            for k in on_port {
                let t = self.conns[k].2;
                let need = match flow.want[t] {
                    Want::At(al) => Some(al),
                    _ => self.beh[t].need,
                };
                if let Some(al) = need {
                    if !have_meets(flow.have[e], Want::At(al)) {
                        match by_need.iter_mut().find(|(a, _)| *a == al) {
                            Some((_, ks)) => ks.push(k),
                            None => by_need.push((al, vec![k])),
                        }
                    }
                }
            }
            for (al, ks) in by_need {
                fixes.push((e, p, al, ks));
            }
        }
        let any = !fixes.is_empty();
        for (e, p, al, ks) in fixes {
            let a = self.new_align(al);
            for k in ks {
                self.conns[k].0 = a;
                self.conns[k].1 = 0;
            }
            self.conns.push((e, p, a, 0));
        }
        any
    }

    /// Step 5's arguments: `NAME  M O` per element with a need, a pair
    /// per input.
    fn alignment_info(&self) -> Vec<String> {
        let flow = self.flow();
        let mut entries = Vec::new();
        for e in 0..self.elements.len() {
            let Some(need) = self.beh[e].need else {
                continue;
            };
            if self.gone[e] {
                continue;
            }
            let ninputs = self
                .conns
                .iter()
                .filter(|c| c.2 == e)
                .map(|c| c.3 + 1)
                .max()
                .unwrap_or(1);
            let mut s = self.elements[e].name.clone();
            for port in 0..ninputs {
                let have = self
                    .conns
                    .iter()
                    .filter(|c| c.2 == e && c.3 == port)
                    .fold(Have::NoPackets, |h, c| h.join(flow.have[c.0]));
                let al = match have {
                    Have::At(a) if a.meets(need) => a,
                    _ => need,
                };
                s.push_str(&format!("  {} {}", al.modulus, al.offset));
            }
            entries.push(s);
        }
        entries
    }
}

fn generated_span() -> Span {
    Span {
        file: Arc::from("<click-align>"),
        line: 0,
        col: 0,
        start: 0,
        end: 0,
    }
}

/// `g` aligned (steps 1 to 5 above), or the errors of the elements whose
/// arguments the analysis needs and cannot read (an Align's, a Strip's,
/// a CheckIPHeader's OFFSET).
pub(crate) fn align(g: &FlatGraph, reg: &Registry) -> Result<FlatGraph, Vec<String>> {
    let mut elements = Vec::new();
    let mut beh = Vec::new();
    let mut index = vec![usize::MAX; g.elements.len()];
    let mut errors = Vec::new();
    for (i, e) in g.elements.iter().enumerate() {
        if e.class == "AlignmentInfo" {
            continue;
        }
        match behaviour(reg, e) {
            Ok(b) => beh.push(b),
            Err(msg) => {
                errors.push(format!("{} :: {}: {msg}", e.name, e.class));
                continue;
            }
        }
        index[i] = elements.len();
        elements.push(e.clone());
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let conns = g
        .connections
        .iter()
        .filter(|c| index[c.from] != usize::MAX && index[c.to] != usize::MAX)
        .map(|c| (index[c.from], c.from_port, index[c.to], c.to_port))
        .collect();
    let mut w = Work {
        gone: vec![false; elements.len()],
        elements,
        beh,
        conns,
    };
    // One step's change can let an earlier one do more (an inserted
    // Align may follow one of the configuration's, which then goes; an
    // Align gone may leave packets aligned for another), so the steps
    // repeat until none changes anything (on 40000 random graphs with
    // cycles of Aligns, at most three rounds changed something).
    for _ in 0..16 {
        let before = (w.conns.clone(), w.gone.clone());
        w.collapse_align_chains();
        w.skip_met_aligns();
        w.drop_unneeded_aligns();
        let inserted = w.insert_aligns();
        if !inserted && (&w.conns, &w.gone) == (&before.0, &before.1) {
            break;
        }
    }
    let info = w.alignment_info();
    if !info.is_empty() {
        let mut n = w.live() + 1;
        let name = loop {
            let name = format!("AlignmentInfo@click_align@{n}");
            if !w.elements.iter().any(|e| e.name == name) {
                break name;
            }
            n += 1;
        };
        w.elements.push(FlatElement {
            name,
            class: "AlignmentInfo".into(),
            config: info.join(",\n  "),
            span: generated_span(),
            anonymous: true,
        });
        w.gone.push(false);
    }
    let mut out_index = vec![usize::MAX; w.elements.len()];
    let mut out = FlatGraph {
        elements: Vec::new(),
        connections: Vec::new(),
        requirements: g.requirements.clone(),
    };
    for (i, e) in w.elements.iter().enumerate() {
        if !w.gone[i] {
            out_index[i] = out.elements.len();
            out.elements.push(e.clone());
        }
    }
    for &(f, fp, t, tp) in &w.conns {
        if out_index[f] != usize::MAX && out_index[t] != usize::MAX {
            out.connections.push(FlatConnection {
                from: out_index[f],
                from_port: fp,
                to: out_index[t],
                to_port: tp,
                span: generated_span(),
            });
        }
    }
    Ok(out)
}

/// `paraclick align`.
pub(crate) fn run(a: &crate::AlignArgs) -> std::process::ExitCode {
    let g = match crate::read_flat(&a.input, &a.out.errors) {
        Ok(g) => g,
        Err(code) => return code,
    };
    match align(&g, &crate::registry()) {
        Ok(out) => crate::write_output(&a.out.output, &paraclick_lang::print_click_listed(&out)),
        Err(errors) => {
            for e in &errors {
                eprintln!("paraclick align: {e}");
            }
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_lang::{parse_config, Source};

    fn aligned(text: &str) -> Result<FlatGraph, Vec<String>> {
        let g = parse_config(&Source::new("t", text), &[]).expect("parses");
        align(&g, &crate::registry())
    }

    /// The aligned configuration as `paraclick align` prints it, blank
    /// lines left out.
    fn printed(text: &str) -> String {
        let out = aligned(text).unwrap_or_else(|e| panic!("{e:?}"));
        paraclick_lang::print_click_listed(&out)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| format!("{l}\n"))
            .collect()
    }

    fn al(modulus: u64, offset: i64) -> Al {
        Al::new(modulus, offset)
    }

    #[test]
    fn joined_paths_keep_what_they_share() {
        assert_eq!(al(4, 2).join(al(8, 6)), al(4, 2));
        assert_eq!(al(4, 0).join(al(4, 2)), al(2, 0));
        assert_eq!(al(4, 1).join(al(4, 2)), UNKNOWN);
        assert!(al(8, 6).meets(al(4, 2)) && !al(4, 2).meets(al(8, 6)));
        assert_eq!(al(4, 2).both(al(8, 6)), Some(al(8, 6)));
        assert_eq!(al(4, 2).both(al(4, 0)), None);
        assert_eq!(al(4, 0).shifted(-14), al(4, 2));
    }

    #[test]
    fn an_align_goes_right_after_a_source_of_unknown_alignment() {
        // Not after the Counter, which passes the alignment on.
        assert_eq!(
            printed(
                "src :: Whatever -> n :: Counter -> c :: Classifier(12/0800) \
                 -> s :: Strip(14) -> ch :: CheckIPHeader -> d :: Discard"
            ),
            "src :: Whatever;\nn :: Counter;\nc :: Classifier(12/0800);\ns :: Strip(14);\n\
             ch :: CheckIPHeader;\nd :: Discard;\nAlign@click_align@7 :: Align(4, 2);\n\
             AlignmentInfo@click_align@8 :: AlignmentInfo(c  4 2,\n  ch  4 0);\n\
             src -> Align@click_align@7\n    -> n\n    -> c\n    -> s\n    -> ch\n    -> d;\n"
        );
    }

    #[test]
    fn device_frames_strip_and_offsets_need_no_align() {
        // FromDevice gives 4, 2: Classifier's need; Strip(14) makes it
        // CheckIPHeader's 4, 0; an OFFSET 14 asks for 4, 2 instead.
        let head = "fd::FromDevice(eth3, true) -> cl::Classifier(12/0800, -);";
        let tail = "cl[1] -> d1::Discard; chip[0] -> th::ToHost(); chip[1] -> d2::Discard;";
        for (chip, info) in [
            (
                "cl[0] -> st::Strip(14) -> chip::CheckIPHeader();",
                "chip  4 0",
            ),
            ("cl[0] -> chip::CheckIPHeader(14);", "chip  4 2"),
            (
                "cl[0] -> Align(MODULUS 4, OFFSET 2) -> chip::CheckIPHeader2(OFFSET 14);",
                "chip  4 2",
            ),
            // Unstrip(14) undoes Strip(14).
            (
                "cl[0] -> Strip(14) -> Unstrip(14) -> chip::CheckIPHeader(14);",
                "chip  4 2",
            ),
        ] {
            let out = printed(&format!("{head}{chip}{tail}"));
            assert!(!out.contains("Align("), "{out}");
            assert!(
                out.contains(&format!("AlignmentInfo(cl  4 2,\n  {info});")),
                "{out}"
            );
        }
    }

    #[test]
    fn ip_input_combo_strips_the_ethernet_header() {
        // IPInputCombo is Paint, Strip(14), CheckIPHeader, GetIPAddress:
        // FromDevice's 4, 2 leaves it as 4, 0, what CheckIPHeader needs;
        // CheckIPHeader(14) after it needs an Align(4, 0) at the source.
        let out = printed(
            "fd :: FromDevice(eth0) -> ic :: IPInputCombo(1) -> ch :: CheckIPHeader -> d :: Discard",
        );
        assert_eq!(
            out,
            "fd :: FromDevice(eth0);\nic :: IPInputCombo(1);\nch :: CheckIPHeader;\n\
             d :: Discard;\nAlignmentInfo@click_align@5 :: AlignmentInfo(ch  4 0);\n\
             fd -> ic\n    -> ch\n    -> d;\n"
        );
        let out =
            printed("FromDevice(eth0) -> IPInputCombo(1) -> ch :: CheckIPHeader(14) -> Discard");
        assert!(
            out.contains(":: Align(4, 0);") && out.contains("AlignmentInfo(ch  4 2);"),
            "{out}"
        );
    }

    #[test]
    fn an_align_nothing_after_needs_goes_and_a_needed_one_stays() {
        // Unstrip(14) takes 4, 0 back to 4, 2; ToHost needs nothing, so
        // the Align(4, 0) before it goes. a1 makes Strip(1)'s 4, 3 the
        // 4, 2 that CheckIPHeader after Strip(14) needs: it stays.
        let out = printed(
            "fd::FromDevice(eth3, true) -> fst::Strip(1) -> a1::Align(4, 2) -> st::Strip(14) \
             -> chip::CheckIPHeader();\
             chip[0] -> ust::Unstrip(14) -> mip::MarkIPHeader(14) \
             -> ipcl_0::IPClassifier(dst 10.0.0.0/8, -);\
             chip[1] -> d1::Discard;\
             ipcl_0[0] -> a::Align(4, 0) -> th::ToHost(); ipcl_0[1] -> d2::Discard;",
        );
        assert!(out.contains("a1 :: Align(4, 2);"), "{out}");
        assert!(!out.contains("a :: Align"), "{out}");
        assert!(out.contains("    -> ipcl_0\n    -> th;"), "{out}");
        assert!(out.contains("AlignmentInfo(chip  4 0);"), "{out}");
    }

    /// Click's tools/align-03 cases: an Align fed by an Align.
    #[test]
    fn aligns_feeding_aligns() {
        let cases = [
            (
                "x::X -> Align(8, 0) -> Align(4, 2) -> y::Y",
                "x :: X;\nAlign@3 :: Align(4, 2);\ny :: Y;\nx -> Align@3\n    -> y;\n",
            ),
            (
                "x::X -> a1::Align(4, 2) -> a2::Align(8, 0) -> y::Y\na1 -> z::Z; a2 -> w::W",
                "x :: X;\na1 :: Align(4, 2);\na2 :: Align(8, 0);\ny :: Y;\nz :: Z;\nw :: W;\n\
                 x -> a1\n    -> z;\nx -> a2\n    -> y;\na2 -> w;\n",
            ),
            (
                "x::X -> a1::Align(4, 2) -> a2::Align(8, 0) -> y::Y\nz::Z -> a1; w::W -> a2",
                "x :: X;\na2 :: Align(8, 0);\ny :: Y;\nz :: Z;\nw :: W;\n\
                 x -> a2\n    -> y;\nz -> a2;\nw -> a2;\n",
            ),
            (
                "x::X -> a1::Align(8, 2) -> a2::Align(4, 2) -> y::Y",
                "x :: X;\na1 :: Align(8, 2);\ny :: Y;\nx -> a1\n    -> y;\n",
            ),
            (
                "x::X -> a1::Align(8, 2) -> a2::Align(4, 2) -> y::Y\nz::Z -> a2; w::W -> a1",
                "x :: X;\na1 :: Align(8, 2);\na2 :: Align(4, 2);\ny :: Y;\nz :: Z;\nw :: W;\n\
                 x -> a1\n    -> y;\nz -> a2\n    -> y;\nw -> a1;\n",
            ),
            (
                "x::X -> a1::Align(8, 2) -> a2::Align(4, 2) -> y::Y\na1 -> z::Z; a2 -> w::W",
                "x :: X;\na1 :: Align(8, 2);\ny :: Y;\nz :: Z;\nw :: W;\n\
                 x -> a1\n    -> z;\na1 -> w;\na1 -> y;\n",
            ),
            (
                "x::X -> a1::Align(8, 2) -> a2::Align(4, 2) -> y::Y\n\
                 a1 -> z::Z; w::W -> a2; a2 -> v::V",
                "x :: X;\na1 :: Align(8, 2);\na2 :: Align(4, 2);\ny :: Y;\nz :: Z;\nw :: W;\n\
                 v :: V;\nx -> a1\n    -> z;\nw -> a2\n    -> y;\na2 -> v;\na1 -> v;\na1 -> y;\n",
            ),
        ];
        for (conf, want) in cases {
            assert_eq!(printed(conf), want, "{conf}");
        }
    }

    #[test]
    fn packets_already_aligned_go_past_an_align() {
        // fd's packets have the Align's 4, 2; z's may not.
        let out = printed("fd :: FromDevice(x) -> a :: Align(4, 2) -> y :: Y; z :: Z -> a;");
        assert_eq!(
            out,
            "fd :: FromDevice(x);\na :: Align(4, 2);\ny :: Y;\nz :: Z;\n\
             z -> a\n    -> y;\nfd -> y;\n"
        );
    }

    #[test]
    fn a_join_of_different_alignments_is_fixed_on_the_path_that_differs() {
        // fd gives 4, 2 and fd2 -> Strip(2) gives 4, 0: what the Null
        // passes on shares only 2, 0. The Align goes on fd2's path, not
        // after the join.
        let out = printed(
            "fd :: FromDevice(a) -> n :: Null -> c :: Classifier(12/0800) -> Discard;\
             fd2 :: FromDevice(b) -> s :: Strip(2) -> n;",
        );
        assert!(out.contains("fd2 -> Align@click_align@"), "{out}");
        assert!(out.contains(":: Align(4, 0);"), "{out}");
        assert_eq!(out.matches(":: Align(").count(), 1, "{out}");
        assert!(out.contains("AlignmentInfo(c  4 2);"), "{out}");
    }

    #[test]
    fn different_needs_after_one_output_get_an_align_each() {
        // The Tee's inputs cannot be aligned for both its outputs' needs.
        let out = printed(
            "src :: Whatever -> t :: Tee(2); t[0] -> c :: Classifier(12/0800) -> Discard;\
             t[1] -> ch :: CheckIPHeader -> Discard;",
        );
        assert!(
            out.contains(":: Align(4, 2);") && out.contains(":: Align(4, 0);"),
            "{out}"
        );
        assert_eq!(out.matches(":: Align(").count(), 2, "{out}");
        assert!(out.contains("t [1] -> Align@click_align@"), "{out}");
    }

    #[test]
    fn aligning_twice_changes_nothing_more() {
        let conf = "src :: Whatever -> t :: Tee(2); t[0] -> c :: Classifier(12/0800) -> Discard;\
                    t[1] -> ch :: CheckIPHeader -> Discard;";
        let once = printed(conf);
        assert_eq!(printed(&once), once);
    }

    #[test]
    fn the_aligned_configuration_builds() {
        // Align and AlignmentInfo are element classes: paraclick checks
        // (and runs) what `paraclick align` writes.
        let out = aligned(
            "InfiniteSource(LIMIT 5) -> c :: Classifier(12/0800, -) -> Strip(14) \
             -> CheckIPHeader -> Discard; c[1] -> Discard;",
        )
        .unwrap();
        assert!(out.elements.iter().any(|e| e.class == "Align"));
        assert!(out.elements.iter().any(|e| e.class == "AlignmentInfo"));
        let text = paraclick_lang::print_click_listed(&out);
        let g = parse_config(&Source::new("aligned", &text), &[]).expect("reparses");
        if let Err(e) = paraclick_runtime::Router::check(&g, &crate::registry()) {
            panic!("{e:?}\n{text}");
        }
    }

    /// Every need met after aligning, and aligning again changes nothing,
    /// on random graphs of sources, passing, shifting, needing and
    /// aligning elements (cycles and joins included).
    #[test]
    fn random_graphs_get_every_need_met() {
        const KINDS: [(&str, usize); 10] = [
            ("Whatever", 1),
            ("FromDevice(x)", 1),
            ("Counter", 1),
            ("Strip(1)", 1),
            ("Unstrip(2)", 1),
            ("EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)", 1),
            ("Classifier(12/0800, -)", 2),
            ("CheckIPHeader(OFFSET 14)", 1),
            ("Align(4, 0)", 1),
            ("Align(8, 6)", 1),
        ];
        let reg = crate::registry();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        for round in 0..2000 {
            let n = 2 + next(10);
            let kinds: Vec<usize> = (0..n).map(|_| next(KINDS.len())).collect();
            let mut text = String::new();
            for (i, &k) in kinds.iter().enumerate() {
                text.push_str(&format!("e{i} :: {};\n", KINDS[k].0));
            }
            for _ in 0..n + next(n) {
                let (f, t) = (next(n), next(n));
                let fp = next(KINDS[kinds[f]].1);
                // Sources (the first two kinds) take no input.
                if kinds[t] > 1 {
                    text.push_str(&format!("e{f} [{fp}] -> e{t};\n"));
                }
            }
            let g = parse_config(&Source::new("r", &text), &[]).expect("parses");
            let out = align(&g, &reg).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
            let w = Work {
                beh: out
                    .elements
                    .iter()
                    .map(|e| behaviour(&reg, e).unwrap())
                    .collect(),
                gone: vec![false; out.elements.len()],
                elements: out.elements.clone(),
                conns: out
                    .connections
                    .iter()
                    .map(|c| (c.from, c.from_port, c.to, c.to_port))
                    .collect(),
            };
            let flow = w.flow();
            for (e, b) in w.beh.iter().enumerate() {
                if let Some(need) = b.need {
                    let have = w
                        .inputs_of(e)
                        .fold(Have::NoPackets, |h, f| h.join(flow.have[f]));
                    assert!(
                        have_meets(have, Want::At(need)),
                        "round {round}: {} gets {have:?}, needs {need:?}\n{text}\n{}",
                        w.elements[e].name,
                        paraclick_lang::print_click_listed(&out)
                    );
                }
            }
            let again = align(&out, &reg).unwrap();
            assert_eq!(
                paraclick_lang::print_click_listed(&again),
                paraclick_lang::print_click_listed(&out),
                "round {round}\n{text}"
            );
        }
    }

    #[test]
    fn arguments_the_analysis_needs_must_be_readable() {
        for (conf, what) in [
            ("x :: X -> a :: Align(3) -> y :: Y", "a :: Align"),
            ("x :: X -> a :: Align(4, 4) -> y :: Y", "a :: Align"),
            ("x :: X -> a :: Align(4, SIZE 2) -> y :: Y", "a :: Align"),
            ("x :: X -> s :: Strip(many) -> y :: Y", "s :: Strip"),
            // No overflow: lengths beyond 2^31 are refused.
            (
                "x :: X -> s :: Unstrip(-9223372036854775808) -> y :: Y",
                "s :: Unstrip",
            ),
            (
                "x :: X -> s :: CheckIPHeader(OFFSET 9223372036854775807) -> y :: Y",
                "s :: CheckIPHeader",
            ),
            (
                "x :: X -> ch :: CheckIPHeader(OFFSET x) -> y :: Y",
                "ch :: CheckIPHeader: OFFSET 'x' is not an integer",
            ),
        ] {
            match aligned(conf) {
                Err(e) => assert!(e.len() == 1 && e[0].starts_with(what), "{conf}: {e:?}"),
                Ok(_) => panic!("{conf}: accepted"),
            }
        }
    }
}
