//! # Classifier
//!
//! Classifier(PATTERN1, ..., PATTERNN)
//!
//! Classifies packets by contents.
//!
//! Ports: 1 input, N outputs (one per pattern). Processing: push.
//!
//! Each packet goes out the output of the first pattern it matches;
//! packets matching no pattern are dropped (counted). Order patterns from
//! the most specific to the least.
//!
//! A pattern is a space-separated list of clauses, all of which must hold.
//! A clause is `OFFSET/VALUE` or `OFFSET/VALUE%MASK`: OFFSET is a decimal
//! byte offset from the start of the packet data, VALUE an even number of
//! hex digits (the number of digits gives the length), MASK (optional) as
//! many hex digits; only the bits set in MASK are compared. A `?` digit in
//! VALUE matches any nibble. A clause preceded by `!` must NOT hold. The
//! pattern `-` matches every packet.
//!
//! A clause about bytes beyond the end of a packet does not hold (so a
//! negated one does). Patterns are compiled at configuration time into
//! aligned 32-bit (offset, mask, value) words, and those into a decision
//! tree that tests each word at most once per packet and skips the words
//! earlier answers decide (`12/0806 20/0001, 12/0806 20/0002, 12/0800, -`
//! reads the word at offset 12 once); nothing is allocated per packet. A
//! configuration whose tree would be too large (over 4096 nodes) keeps
//! trying the patterns' words in order. A pattern that can never match
//! (`12/0806 12/0800`) draws a warning at configuration time.
//!
//! Handlers:
//! - `program` (read): the decision tree in Click's format: numbered
//!   steps `N  OFFSET/VALUE%MASK  yes->T  no->T` (aligned 32-bit words
//!   in hex; T is `step N`, `[OUTPUT]` or `[X]` for drop; jumps go
//!   forward), or `all->[OUTPUT]` when there is nothing to test, then
//!   `safe length L` (one past the last byte any test reads) and
//!   `alignment offset 0`. A node that checks a pattern's negated clauses
//!   prints as one step per word. The steps are paraclick's tree, not
//!   Click's optimiser's: the same outcome for every packet, but the
//!   steps, their order and their number may differ from Click's (Click
//!   tests clauses in the order written; paraclick a pattern's positive
//!   clauses first). Without a tree (over 4096 nodes), the patterns'
//!   words in turn.
//! - `patterns` (read): the compiled patterns, one per line, as
//!   `OFFSET/VALUE%MASK` words (offsets aligned to 4 bytes), negated
//!   clauses as `!(...)`, and the shortest packet each pattern can match.
//!
//! Example:
//!
//!     Classifier(12/0806 20/0001,   // ARP requests
//!                12/0806 20/0002,   // ARP replies
//!                12/0800,           // IP
//!                -);                // the rest

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write as _;

mod tree;

/// Largest offset a clause may name.
const MAX_OFFSET: usize = 65535;

/// One aligned 32-bit comparison: the packet's bytes `off..off+4` (zero
/// past the end), big-endian, masked with `mask`, must equal `value`; and
/// the packet must be at least `need` bytes long. `value` has no bits
/// outside `mask`, `mask` is not zero, and `need` is one past the last
/// masked byte, so `off < need <= off + 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word {
    off: u32,
    need: u32,
    mask: u32,
    value: u32,
}

impl Word {
    #[inline]
    fn matches(&self, d: &[u8]) -> bool {
        match d.get(self.off as usize..).and_then(<[u8]>::first_chunk) {
            // All four bytes are there, so the `need` ones are.
            Some(&b) => u32::from_be_bytes(b) & self.mask == self.value,
            None => self.matches_tail(d),
        }
    }

    /// [`Word::matches`] for a word that runs past the end of `d`.
    #[cold]
    #[inline(never)]
    fn matches_tail(&self, d: &[u8]) -> bool {
        if d.len() < self.need as usize {
            return false;
        }
        // The masked bytes are there; the others read as zero.
        let mut b = [0u8; 4];
        let tail = &d[(self.off as usize).min(d.len())..];
        let n = tail.len().min(4);
        b[..n].copy_from_slice(&tail[..n]);
        u32::from_be_bytes(b) & self.mask == self.value
    }
}

/// A compiled pattern: `words[pos]` must all match, and for no group in
/// `groups[negs]` may all of its words match.
#[derive(Clone, Debug)]
struct Rule {
    pos: (u32, u32),
    negs: (u32, u32),
    never: bool,
}

/// A node of the graph Click's listing prints.
#[derive(Clone, Copy, Debug)]
struct LNode {
    test: LTest,
    yes: LRef,
    no: LRef,
}

#[derive(Clone, Copy, Debug)]
enum LTest {
    Word(Word),
    /// None of the negated groups (a range of `Program::groups`) matches.
    NoGroup((u32, u32)),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LRef {
    Node(usize),
    Out(usize),
    Drop,
}

/// The compiled patterns of a Classifier.
#[derive(Clone, Debug, Default)]
pub struct Program {
    words: Vec<Word>,
    /// Ranges into `words`, one per negated clause.
    groups: Vec<(u32, u32)>,
    rules: Vec<Rule>,
    /// The patterns as a decision tree (`None`: too large; scan them).
    tree: Option<tree::Tree>,
}

/// One clause's bytes, gathered into aligned words: word index → (mask,
/// value, bytes needed).
type WordMap = BTreeMap<u32, (u32, u32, u32)>;

fn hex_digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Parses one `[!]OFFSET/VALUE[%MASK]` clause into its words; returns
/// whether it is negated.
fn parse_clause(s: &str) -> Result<(bool, WordMap), String> {
    let (neg, body) = match s.strip_prefix('!') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let err = |m: &str| format!("bad clause '{s}': {m}");
    let (off, rest) = body
        .split_once('/')
        .ok_or_else(|| err("expected OFFSET/VALUE"))?;
    if off.is_empty() || !off.bytes().all(|c| c.is_ascii_digit()) {
        return Err(err("OFFSET must be a decimal number"));
    }
    let off: usize = off.parse().map_err(|_| err("OFFSET too large"))?;
    let (value, mask) = match rest.split_once('%') {
        Some((v, m)) => (v, Some(m)),
        None => (rest, None),
    };
    let v = value.as_bytes();
    if v.is_empty() || v.len() % 2 != 0 {
        return Err(err("VALUE must have an even number of hex digits"));
    }
    if let Some(m) = mask {
        if m.len() != v.len() {
            return Err(err("MASK must have as many digits as VALUE"));
        }
    }
    let nbytes = v.len() / 2;
    if off + nbytes > MAX_OFFSET {
        return Err(err("OFFSET too large"));
    }
    let mut words = WordMap::new();
    for i in 0..nbytes {
        let mut val = 0u8;
        let mut msk = 0u8;
        for (k, &c) in v[2 * i..2 * i + 2].iter().enumerate() {
            let shift = 4 * (1 - k);
            if c == b'?' {
                continue;
            }
            let d = hex_digit(c).ok_or_else(|| err("VALUE must be hex digits or '?'"))?;
            val |= d << shift;
            msk |= 0xf << shift;
        }
        if let Some(m) = mask {
            let m = m.as_bytes();
            let hi = hex_digit(m[2 * i]).ok_or_else(|| err("MASK must be hex digits"))?;
            let lo = hex_digit(m[2 * i + 1]).ok_or_else(|| err("MASK must be hex digits"))?;
            msk &= (hi << 4) | lo;
        }
        if msk == 0 {
            continue; // a byte nobody cares about constrains nothing
        }
        let pos = off + i;
        let shift = 8 * (3 - (pos % 4)) as u32;
        let e = words.entry((pos / 4) as u32).or_insert((0, 0, 0));
        e.0 |= (msk as u32) << shift;
        e.1 |= ((val & msk) as u32) << shift;
        e.2 = e.2.max(pos as u32 + 1);
    }
    Ok((neg, words))
}

/// Merges `b` into `a` (both must hold); false if they contradict.
fn merge(a: &mut WordMap, b: &WordMap) -> bool {
    let mut ok = true;
    for (&w, &(m, v, n)) in b {
        let e = a.entry(w).or_insert((0, 0, 0));
        if (e.1 ^ v) & e.0 & m != 0 {
            ok = false;
        }
        e.0 |= m;
        e.1 |= v;
        e.2 = e.2.max(n);
    }
    ok
}

impl Program {
    /// Compiles Click Classifier patterns.
    pub fn compile<S: AsRef<str>>(patterns: &[S]) -> Result<Program, String> {
        let mut prog = Program::compile_linear(patterns)?;
        prog.tree = tree::Tree::build(&prog, tree::MAX_NODES);
        Ok(prog)
    }

    /// Compiles the patterns without building the tree.
    fn compile_linear<S: AsRef<str>>(patterns: &[S]) -> Result<Program, String> {
        let mut prog = Program::default();
        for (i, pat) in patterns.iter().enumerate() {
            let pat = pat.as_ref().trim();
            if pat.is_empty() {
                return Err(format!("pattern {i} is empty"));
            }
            let mut pos = WordMap::new();
            let mut negs = Vec::new();
            let mut never = false;
            if pat != "-" {
                for clause in pat.split_ascii_whitespace() {
                    let (neg, words) =
                        parse_clause(clause).map_err(|e| format!("pattern {i}: {e}"))?;
                    if neg {
                        negs.push(words);
                    } else if !merge(&mut pos, &words) {
                        never = true;
                    }
                }
            }
            let push_words = |prog: &mut Program, m: &WordMap| {
                let start = prog.words.len() as u32;
                prog.words
                    .extend(m.iter().map(|(&w, &(mask, value, need))| Word {
                        off: w * 4,
                        need,
                        mask,
                        value,
                    }));
                (start, prog.words.len() as u32)
            };
            let pos_range = push_words(&mut prog, &pos);
            let g0 = prog.groups.len() as u32;
            for n in &negs {
                let r = push_words(&mut prog, n);
                prog.groups.push(r);
            }
            // A negated clause that always holds (nothing to compare)
            // makes the pattern unmatchable.
            if negs.iter().any(|n| n.is_empty()) {
                never = true;
            }
            prog.rules.push(Rule {
                pos: pos_range,
                negs: (g0, prog.groups.len() as u32),
                never,
            });
        }
        Ok(prog)
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Patterns that can never match.
    pub fn unmatchable(&self) -> impl Iterator<Item = usize> + '_ {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.never)
            .map(|(i, _)| i)
    }

    #[inline]
    fn all(&self, (a, b): (u32, u32), d: &[u8]) -> bool {
        self.words[a as usize..b as usize]
            .iter()
            .all(|w| w.matches(d))
    }

    /// Whether `d` matches all words of one of the negated groups `(a, b)`
    /// (a range of `groups`). Out of line: it keeps the tree's loop small.
    #[inline(never)]
    fn any_group(&self, (a, b): (u32, u32), d: &[u8]) -> bool {
        self.groups[a as usize..b as usize]
            .iter()
            .any(|&g| self.all(g, d))
    }

    /// The index of the first pattern `d` matches.
    #[inline]
    pub fn classify(&self, d: &[u8]) -> Option<usize> {
        match &self.tree {
            Some(t) => t.classify(self, d),
            None => self.classify_linear(d),
        }
    }

    /// [`Program::classify`] by trying each pattern in turn.
    fn classify_linear(&self, d: &[u8]) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| !r.never && self.all(r.pos, d) && !self.any_group(r.negs, d))
    }

    /// The program in Click's format (the `program` handler): numbered
    /// steps, each one aligned word test, `OFFSET/VALUE%MASK  yes->T
    /// no->T` with T `step N`, `[OUTPUT]` or `[X]` (drop), every jump
    /// forward; then `safe length` and `alignment offset`. The steps are
    /// the decision tree's nodes (a node checking negated clauses becomes
    /// one step per word of them); without a tree, each pattern's words in
    /// turn.
    pub fn click_listing(&self) -> String {
        let (nodes, start) = match &self.tree {
            Some(t) => t.listing_graph(),
            None => self.linear_graph(),
        };
        // Topological order from the start: depth-first postorder, reversed.
        let mut order = Vec::new();
        let mut seen = vec![false; nodes.len()];
        if let LRef::Node(s) = start {
            let mut stack = vec![(s, false)];
            while let Some((n, done)) = stack.pop() {
                if done {
                    order.push(n);
                    continue;
                }
                if seen[n] {
                    continue;
                }
                seen[n] = true;
                stack.push((n, true));
                // `no` is searched first, so the `yes` side follows the node.
                for t in [nodes[n].yes, nodes[n].no] {
                    if let LRef::Node(m) = t {
                        if !seen[m] {
                            stack.push((m, false));
                        }
                    }
                }
            }
        }
        order.reverse();
        let size = |n: &LNode| match n.test {
            LTest::Word(_) => 1,
            LTest::NoGroup((a, b)) => self.groups[a as usize..b as usize]
                .iter()
                .map(|&(x, y)| (y - x) as usize)
                .sum(),
        };
        let mut first = vec![0usize; nodes.len()];
        let mut nsteps = 0;
        for &n in &order {
            first[n] = nsteps;
            nsteps += size(&nodes[n]);
        }
        let name = |t: LRef| -> String {
            match t {
                LRef::Node(n) => format!("step {}", first[n]),
                LRef::Out(o) => format!("[{o}]"),
                LRef::Drop => "[X]".into(),
            }
        };
        let mut s = String::new();
        let mut k = 0;
        let mut step = |s: &mut String, w: &Word, yes: String, no: String| {
            let _ = writeln!(
                s,
                "{k:2} {:3}/{:08x}%{:08x}  yes->{yes}  no->{no}",
                w.off, w.value, w.mask
            );
            k += 1;
        };
        for &n in &order {
            let node = &nodes[n];
            match node.test {
                LTest::Word(w) => step(&mut s, &w, name(node.yes), name(node.no)),
                LTest::NoGroup((a, b)) => {
                    // Group g matching sends the packet to `no`; failing,
                    // to the next group; past the last, to `yes`.
                    let groups = &self.groups[a as usize..b as usize];
                    let mut at = first[n];
                    for (gi, &(x, y)) in groups.iter().enumerate() {
                        let next = if gi + 1 < groups.len() {
                            format!("step {}", at + (y - x) as usize)
                        } else {
                            name(node.yes)
                        };
                        for (j, w) in self.words[x as usize..y as usize].iter().enumerate() {
                            let yes = if x as usize + j + 1 < y as usize {
                                format!("step {}", at + j + 1)
                            } else {
                                name(node.no)
                            };
                            step(&mut s, w, yes, next.clone());
                        }
                        at += (y - x) as usize;
                    }
                }
            }
        }
        if nsteps == 0 {
            let _ = writeln!(s, "all->{}", name(start));
        }
        let safe = self.words.iter().map(|w| w.need).max().unwrap_or(0);
        let _ = writeln!(s, "safe length {safe}");
        s.push_str("alignment offset 0\n");
        s
    }

    /// The patterns tried in turn, as a graph for [`Program::click_listing`].
    fn linear_graph(&self) -> (Vec<LNode>, LRef) {
        let mut nodes = Vec::new();
        let mut next = LRef::Drop;
        for (i, r) in self.rules.iter().enumerate().rev() {
            if r.never {
                continue;
            }
            let fail = next;
            let mut t = LRef::Out(i);
            if r.negs.0 < r.negs.1 {
                nodes.push(LNode {
                    test: LTest::NoGroup(r.negs),
                    yes: t,
                    no: fail,
                });
                t = LRef::Node(nodes.len() - 1);
            }
            for w in self.words[r.pos.0 as usize..r.pos.1 as usize].iter().rev() {
                nodes.push(LNode {
                    test: LTest::Word(*w),
                    yes: t,
                    no: fail,
                });
                t = LRef::Node(nodes.len() - 1);
            }
            next = t;
        }
        (nodes, next)
    }

    /// paraclick's own listing (the `patterns` handler): one line per pattern.
    pub fn listing(&self) -> String {
        let mut s = String::new();
        let word = |s: &mut String, w: &Word| {
            let _ = write!(s, "{}/{:08x}%{:08x}", w.off, w.value, w.mask);
        };
        for (i, r) in self.rules.iter().enumerate() {
            let _ = write!(s, "{i:2}  ->[{i}] ");
            let mut first = true;
            let mut sep = |s: &mut String| {
                if !first {
                    s.push(' ');
                }
                first = false;
            };
            for w in &self.words[r.pos.0 as usize..r.pos.1 as usize] {
                sep(&mut s);
                word(&mut s, w);
            }
            for &(a, b) in &self.groups[r.negs.0 as usize..r.negs.1 as usize] {
                sep(&mut s);
                s.push_str("!(");
                for (k, w) in self.words[a as usize..b as usize].iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    word(&mut s, w);
                }
                s.push(')');
            }
            if first {
                s.push_str(if r.never { "never" } else { "-" });
            } else if r.never {
                s.push_str("  never");
            }
            let need = self.words[r.pos.0 as usize..r.pos.1 as usize]
                .iter()
                .map(|w| w.need)
                .max()
                .unwrap_or(0);
            let _ = writeln!(s, "  safe length {need}");
        }
        s
    }
}

pub struct Classifier {
    prog: Program,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Classifier", "1/-", "h", make)
        .stateless()
        .drop_reasons(&["no match"])
        .click_alignment(paraclick_runtime::ClickAlignment::Needs {
            modulus: 4,
            offset: 2,
        })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Classifier, String> {
    let patterns = cx.args().rest_all();
    let prog = Program::compile(&patterns)?;
    if cx.noutputs != prog.len() {
        return Err(format!(
            "{} patterns but {} outputs: need one pattern per output port",
            prog.len(),
            cx.noutputs
        ));
    }
    for i in prog.unmatchable() {
        eprintln!(
            "{} :: Classifier: warning: pattern {i} ('{}') can never match",
            cx.name, patterns[i]
        );
    }
    Ok(Classifier { prog })
}

impl Action for Classifier {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("program", |e, _| e.prog.click_listing()),
        Handler::read("patterns", |e, _| e.prog.listing()),
    ];

    // Always inlined into the fused hop that calls it: the call, and
    // the verdict passed back through memory, cost more than the work.
    #[inline(always)]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.prog.classify(p.data()) {
            Some(i) => Verdict::Out(i),
            None => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;

    fn prog(p: &[&str]) -> Program {
        Program::compile(p).unwrap()
    }

    /// An Ethernet frame of `len` bytes (at least 14) with `ethertype` and
    /// bytes 20..22 (the ARP opcode) set to `op`.
    fn frame(tag: u8, ethertype: u16, op: u16, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        v[0] = tag;
        v[12..14].copy_from_slice(&ethertype.to_be_bytes());
        if len >= 22 {
            v[20..22].copy_from_slice(&op.to_be_bytes());
        }
        v
    }

    #[test]
    fn ip_router_classifier() {
        let h = harness(
            "Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -)",
            4,
        );
        h.push(
            0,
            vec![
                pkt(&frame(1, 0x0806, 1, 42)), // ARP request
                pkt(&frame(2, 0x0806, 2, 42)), // ARP reply
                pkt(&frame(3, 0x0800, 0, 60)), // IP
                pkt(&frame(4, 0x86dd, 0, 60)), // IPv6: other
                pkt(&frame(5, 0x0806, 3, 42)), // ARP, other opcode
                pkt(&frame(6, 0x0806, 1, 21)), // ARP too short for 20/0001
                pkt(&frame(7, 0x0800, 0, 14)), // IP, exactly long enough
                pkt(&[8; 13]),                 // too short for anything
                pkt(&[]),                      // empty
            ],
        );
        assert_eq!(tags(&h.output(0)), vec![1]);
        assert_eq!(tags(&h.output(1)), vec![2]);
        assert_eq!(tags(&h.output(2)), vec![3, 7]);
        assert_eq!(tags(&h.output(3)), vec![4, 5, 6, 8, 0]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn no_match_is_dropped() {
        let h = harness("Classifier(12/0800)", 1);
        h.push(
            0,
            vec![pkt(&frame(1, 0x0800, 0, 20)), pkt(&frame(2, 0x0806, 0, 20))],
        );
        assert_eq!(tags(&h.output(0)), vec![1]);
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drop_reasons").unwrap(), "no match 1\n");
    }

    #[test]
    fn masks_and_wildcards() {
        let p = prog(&["0/45%f0", "0/?6", "1/0f%0f 2/8?", "3/aabb%ff0f"]);
        assert_eq!(p.classify(&[0x47]), Some(0));
        assert_eq!(p.classify(&[0x56]), Some(1));
        assert_eq!(p.classify(&[0x00, 0x3f, 0x81]), Some(2));
        assert_eq!(p.classify(&[0x00, 0x3f, 0x71]), None);
        assert_eq!(p.classify(&[0, 0, 0, 0xaa, 0xcb]), Some(3));
        assert_eq!(p.classify(&[0, 0, 0, 0xaa, 0xbc]), None);
        assert_eq!(p.classify(&[0, 0, 0, 0xab, 0xbb]), None);
    }

    #[test]
    fn values_spanning_words() {
        let p = prog(&["2/0102030405060708090a"]);
        let mut d: Vec<u8> = vec![0xff, 0xff];
        d.extend(1..=10u8);
        assert_eq!(p.classify(&d), Some(0));
        assert_eq!(p.classify(&d[..11]), None, "one byte short");
        d[11] = 0;
        assert_eq!(p.classify(&d), None);
        let p = prog(&["13/aabbcc"]);
        let mut d = vec![0u8; 16];
        d[13..16].copy_from_slice(&[0xaa, 0xbb, 0xcc]);
        assert_eq!(p.classify(&d), Some(0));
        d[15] = 0xcd;
        assert_eq!(p.classify(&d), None);
    }

    #[test]
    fn negation() {
        let p = prog(&["!12/0800", "-"]);
        assert_eq!(p.classify(&frame(0, 0x0800, 0, 20)), Some(1));
        assert_eq!(p.classify(&frame(0, 0x0806, 0, 20)), Some(0));
        assert_eq!(
            p.classify(&[0; 5]),
            Some(0),
            "too short: clause false, negation true"
        );
        // both clauses of a pattern; negated multi-byte clause fails only if
        // every byte matches
        let p = prog(&["12/08?? !13/06"]);
        assert_eq!(p.classify(&frame(0, 0x0800, 0, 20)), Some(0));
        assert_eq!(p.classify(&frame(0, 0x0806, 0, 20)), None);
        assert_eq!(p.classify(&frame(0, 0x0900, 0, 20)), None);
    }

    #[test]
    fn contradictions_and_merges() {
        let p = prog(&["12/0806 12/0800", "12/08 13/06", "12/08?? 12/??00"]);
        assert_eq!(p.unmatchable().collect::<Vec<_>>(), vec![0]);
        assert_eq!(p.classify(&frame(0, 0x0806, 0, 20)), Some(1));
        assert_eq!(p.classify(&frame(0, 0x0800, 0, 20)), Some(2));
        assert_eq!(
            p.words.len(),
            3,
            "each pattern's clauses merge into one word"
        );
    }

    #[test]
    fn dont_care_bytes_need_no_length() {
        let p = prog(&["0/01?? 30/??", "-"]);
        assert_eq!(p.classify(&[1]), Some(0));
        assert_eq!(p.classify(&[2]), Some(1));
    }

    #[test]
    fn parse_errors() {
        for (bad, want) in [
            (
                "12/080",
                "pattern 0: bad clause '12/080': VALUE must have an even number of hex digits",
            ),
            (
                "12/08x0",
                "pattern 0: bad clause '12/08x0': VALUE must be hex digits or '?'",
            ),
            (
                "x/0800",
                "pattern 0: bad clause 'x/0800': OFFSET must be a decimal number",
            ),
            ("12", "pattern 0: bad clause '12': expected OFFSET/VALUE"),
            (
                "12/",
                "pattern 0: bad clause '12/': VALUE must have an even number of hex digits",
            ),
            (
                "/08",
                "pattern 0: bad clause '/08': OFFSET must be a decimal number",
            ),
            (
                "12/0800%ff",
                "pattern 0: bad clause '12/0800%ff': MASK must have as many digits as VALUE",
            ),
            (
                "12/0800%ffzz",
                "pattern 0: bad clause '12/0800%ffzz': MASK must be hex digits",
            ),
            (
                "12/0800%ff??",
                "pattern 0: bad clause '12/0800%ff??': MASK must be hex digits",
            ),
            (
                "70000/00",
                "pattern 0: bad clause '70000/00': OFFSET too large",
            ),
            (
                "-1/00",
                "pattern 0: bad clause '-1/00': OFFSET must be a decimal number",
            ),
            ("!", "pattern 0: bad clause '!': expected OFFSET/VALUE"),
            ("", "pattern 0 is empty"),
        ] {
            assert_err(Program::compile(&[bad]), want);
        }
        assert_err(
            try_harness("Classifier(12/0800, -)", 3),
            "e :: Classifier: 2 patterns but 3 outputs: need one pattern per output port",
        );
        assert_err(
            try_harness("Classifier(12/0800, 12/08zz)", 2),
            "e :: Classifier: pattern 1: bad clause '12/08zz': VALUE must be hex digits or '?'",
        );
    }

    /// The IP router's classifier reads the word at offset 12 once.
    #[test]
    fn ip_router_tree() {
        let p = prog(&["12/0806 20/0001", "12/0806 20/0002", "12/0800", "-"]);
        let t = p.tree.as_ref().expect("a tree");
        assert_eq!(t.len(), 4, "12=0806? 20=0001? 20=0002? 12=0800?");
        let ip = frame(0, 0x0800, 0, 60);
        assert_eq!(p.classify(&ip), Some(2));
        assert_eq!(t.path_len(&p, &ip), 2);
        let arp = frame(0, 0x0806, 2, 60);
        assert_eq!(p.classify(&arp), Some(1));
        assert_eq!(t.path_len(&p, &arp), 3);
        // Only the default: no test at all.
        let p = prog(&["-", "12/0800"]);
        assert_eq!(p.tree.as_ref().unwrap().len(), 0);
        assert_eq!(p.classify(&[]), Some(0));
    }

    /// Over its size limit the tree is not built, and the patterns are
    /// scanned in order.
    #[test]
    fn tree_size_limit() {
        let pats = ["12/0806 20/0001", "12/0806 20/0002", "12/0800", "-"];
        let mut p = Program::compile_linear(&pats).unwrap();
        assert!(tree::Tree::build(&p, 3).is_none());
        assert_eq!(tree::Tree::build(&p, 4).map(|t| t.len()), Some(4));
        p.tree = tree::Tree::build(&p, 3);
        assert_eq!(p.classify(&frame(0, 0x0800, 0, 60)), Some(2));
        assert_eq!(p.classify(&frame(0, 0x0806, 1, 60)), Some(0));
        // Many patterns on distinct words, each combined with a common one:
        // still built, one node per word.
        let pats: Vec<String> = (0..200).map(|i| format!("{}/01 0/02", 4 * i + 4)).collect();
        let p = prog(&pats.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(p.tree.as_ref().is_some_and(|t| t.len() <= 401));
        let mut d = vec![0u8; 1000];
        d[0] = 2;
        d[4 * 150 + 4] = 1;
        assert_eq!(p.classify(&d), Some(150));
    }

    use crate::test_kit::Rng;

    /// A clause as written, for the reference matcher: offset, then
    /// (value, mask) per byte.
    struct RefClause {
        neg: bool,
        off: usize,
        bytes: Vec<(u8, u8)>,
    }

    /// Whether `d` matches a pattern, straight from the documented
    /// semantics: every compared byte lies inside the packet and agrees.
    fn ref_matches(clauses: &[RefClause], d: &[u8]) -> bool {
        clauses.iter().all(|c| {
            let holds =
                c.bytes.iter().enumerate().all(|(i, &(v, m))| {
                    m == 0 || d.get(c.off + i).is_some_and(|&b| b & m == v & m)
                });
            holds != c.neg
        })
    }

    /// A random pattern: the text, and its clauses for the reference
    /// (`None` for `-`). Values come from few bytes, so that patterns
    /// overlap, repeat, contradict and contain each other.
    fn random_pattern(r: &mut Rng) -> (String, Option<Vec<RefClause>>) {
        const BYTES: [u8; 6] = [0x00, 0x08, 0x06, 0x01, 0xff, 0x80];
        const MASKS: [u8; 6] = [0xff, 0xff, 0xf0, 0x0f, 0x00, 0x81];
        if r.chance(8) {
            return ("-".into(), None);
        }
        let mut text = Vec::new();
        let mut clauses = Vec::new();
        for _ in 0..1 + r.below(3) {
            let neg = r.chance(4);
            let off = r.below(24);
            let long = r.chance(4);
            let n = 1 + r.below(if long { 6 } else { 2 });
            let masked = r.chance(2);
            let (mut val, mut msk) = (String::new(), String::new());
            let mut bytes = Vec::new();
            for _ in 0..n {
                let v = BYTES[r.below(BYTES.len())];
                let written = MASKS[r.below(MASKS.len())];
                let mut m = if masked { written } else { 0xff };
                let mut digits = format!("{v:02x}").into_bytes();
                for (k, dg) in digits.iter_mut().enumerate() {
                    if r.chance(10) {
                        *dg = b'?';
                        m &= if k == 0 { 0x0f } else { 0xf0 };
                    }
                }
                val.push_str(std::str::from_utf8(&digits).unwrap());
                if masked {
                    msk.push_str(&format!("{written:02x}"));
                }
                bytes.push((v, m));
            }
            let mut c = format!("{}{off}/{val}", if neg { "!" } else { "" });
            if masked {
                // The `?`s already clear bits; the written mask keeps
                // the random one.
                c.push('%');
                c.push_str(&msk);
            }
            text.push(c);
            clauses.push(RefClause { neg, off, bytes });
        }
        (text.join(" "), Some(clauses))
    }

    /// A random packet; often built to match one of `pats`.
    fn random_packet(r: &mut Rng, pats: &[Option<Vec<RefClause>>]) -> Vec<u8> {
        const BYTES: [u8; 5] = [0x00, 0x08, 0x06, 0x01, 0xff];
        let len = r.below(32);
        let mut d: Vec<u8> = (0..len).map(|_| BYTES[r.below(BYTES.len())]).collect();
        if r.chance(2) {
            if let Some(cl) = &pats[r.below(pats.len())] {
                for c in cl {
                    if c.neg && !r.chance(3) {
                        continue;
                    }
                    for (i, &(v, m)) in c.bytes.iter().enumerate() {
                        let at = c.off + i;
                        if d.len() <= at {
                            d.resize(at + 1, 0);
                        }
                        d[at] = (d[at] & !m) | (v & m);
                    }
                }
            }
            if r.chance(4) {
                let cut = r.below(d.len() + 1);
                d.truncate(cut);
            }
        }
        d
    }

    /// The tree agrees with the linear scan and with the documented
    /// semantics on random patterns and packets.
    #[test]
    fn tree_matches_linear_scan() {
        let mut r = Rng::new(0x9e37_79b9_7f4a_7c15);
        let (mut trees, mut checked) = (0, 0);
        let mut outcomes = [0usize; 3]; // first pattern, a later one, none
        for _ in 0..3000 {
            let n = 1 + r.below(6);
            let (texts, pats): (Vec<String>, Vec<_>) =
                (0..n).map(|_| random_pattern(&mut r)).unzip();
            let p = Program::compile(&texts).unwrap();
            if p.tree.is_some() {
                trees += 1;
            }
            let mut lin = p.clone();
            lin.tree = None;
            for _ in 0..100 {
                let d = random_packet(&mut r, &pats);
                let want = pats
                    .iter()
                    .position(|c| c.as_ref().is_none_or(|c| ref_matches(c, &d)));
                assert_eq!(lin.classify(&d), want, "linear: {texts:?} on {d:02x?}");
                assert_eq!(p.classify(&d), want, "tree: {texts:?} on {d:02x?}");
                outcomes[match want {
                    Some(0) => 0,
                    Some(_) => 1,
                    None => 2,
                }] += 1;
                checked += 1;
            }
        }
        assert_eq!(trees, 3000, "every random program fits in a tree");
        for o in outcomes {
            assert!(o > checked / 10, "outcomes {outcomes:?} too uneven");
        }
    }

    /// Follows a Click-format listing for packet `d`: the output, or None.
    fn run_listing(listing: &str, d: &[u8]) -> Option<usize> {
        let mut steps = Vec::new();
        let mut all = None;
        for l in listing.lines() {
            if let Some(t) = l.strip_prefix("all->") {
                all = Some(t.to_string());
            }
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 4 && w[2].starts_with("yes->") {
                let (off, rest) = w[1].split_once('/').unwrap();
                let (v, m) = rest.split_once('%').unwrap();
                let no = l.split("no->").nth(1).unwrap().to_string();
                let yes = l.split("yes->").nth(1).unwrap().split("  ").next().unwrap();
                steps.push((
                    off.parse::<usize>().unwrap(),
                    u32::from_str_radix(v, 16).unwrap(),
                    u32::from_str_radix(m, 16).unwrap(),
                    yes.to_string(),
                    no,
                ));
            }
        }
        let outcome = |t: &str| -> Result<Option<usize>, usize> {
            if t == "[X]" {
                Ok(None)
            } else if let Some(o) = t.strip_prefix('[') {
                Ok(Some(o.trim_end_matches(']').parse().unwrap()))
            } else {
                Err(t.strip_prefix("step ").unwrap().parse().unwrap())
            }
        };
        if let Some(t) = all {
            return outcome(&t).unwrap();
        }
        let mut at = 0;
        loop {
            let (off, v, m, yes, no) = &steps[at];
            let mut b = [0u8; 4];
            let mut short = false;
            for (i, x) in b.iter_mut().enumerate() {
                let byte_mask = (m >> (24 - 8 * i)) & 0xff;
                match d.get(off + i) {
                    Some(&y) => *x = y,
                    None if byte_mask != 0 => short = true,
                    None => {}
                }
            }
            let holds = !short && u32::from_be_bytes(b) & m == *v;
            match outcome(if holds { yes } else { no }) {
                Ok(o) => return o,
                Err(next) => {
                    assert!(next > at, "jumps go forward");
                    at = next;
                }
            }
        }
    }

    #[test]
    fn click_program_listing() {
        let h = harness("Classifier(12/0806 20/0001, 12/0800, -)", 3);
        let p = h.read("program").unwrap();
        assert!(
            p.starts_with(" 0  12/08060000%ffff0000  yes->step 1  no->"),
            "{p}"
        );
        assert!(p.ends_with("safe length 22\nalignment offset 0\n"), "{p}");
        let h = harness("Classifier(-)", 1);
        assert_eq!(
            h.read("program").unwrap(),
            "all->[0]\nsafe length 0\nalignment offset 0\n"
        );
        let h = harness("Classifier(!12/0800, -)", 2);
        assert_eq!(
            h.read("program").unwrap(),
            " 0  12/08000000%ffff0000  yes->[1]  no->[0]\nsafe length 14\nalignment offset 0\n"
        );
        // The listing classifies as the element does, tree or linear scan.
        let pats = [
            "12/0800 !14/45%f0 !20/0001 30/02",
            "1/01",
            "12/0806 20/0001",
            "!12/0806 !0/00 3/?5",
            "12/0806",
        ];
        let mut p = Program::compile(&pats.map(String::from)).unwrap();
        let mut state = 7u32;
        for pass in 0..2 {
            let listing = p.click_listing();
            for _ in 0..3000 {
                state = state.wrapping_mul(1103515245).wrapping_add(12345);
                let len = (state >> 8) as usize % 40;
                let mut d = vec![0u8; len];
                for (i, x) in d.iter_mut().enumerate() {
                    state = state.wrapping_mul(1103515245).wrapping_add(12345);
                    // Mostly the values the patterns test.
                    *x = match (i, state >> 28) {
                        (12, 0..=9) => 8,
                        (13, 0..=5) => 6,
                        (13, 6..=9) => 0,
                        (14, 0..=7) => 0x45,
                        (21, 0..=7) => 1,
                        (1, 0..=7) => 1,
                        (30, 0..=7) => 2,
                        _ => (state >> 16) as u8,
                    };
                }
                assert_eq!(
                    run_listing(&listing, &d),
                    p.classify(&d),
                    "pass {pass} {d:?}\n{listing}"
                );
            }
            p.tree = None;
        }
    }

    #[test]
    fn program_handler() {
        let h = harness("Classifier(1/01, !12/0800 20/0001%00ff, -)", 3);
        let p = h.read("patterns").unwrap();
        assert_eq!(
            p,
            " 0  ->[0] 0/00010000%00ff0000  safe length 2\n\
             \x201  ->[1] 20/00010000%00ff0000 !(12/08000000%ffff0000)  safe length 22\n\
             \x202  ->[2] -  safe length 0\n"
        );
    }
}
