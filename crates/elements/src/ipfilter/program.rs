//! Compiles parsed patterns into a flat decision program and runs it.
//!
//! Each instruction tests one field of the IP, transport or MAC header: it
//! loads 1-4 bytes at a fixed offset (big-endian), shifts and masks them,
//! and checks that the result lies in `[lo, hi]` (or outside it, when
//! negated); then it continues at its `yes` or `no` target. A target is
//! either a later instruction or an outcome (an output port, or drop).
//! Boolean structure becomes control flow (`a and b`: a's yes goes to b;
//! `not a` swaps a's targets), so each packet follows one path of at most
//! `len` tests; nothing is allocated or formatted per packet.
//!
//! A test whose bytes lie beyond the end of the packet is false. Transport
//! tests (ports, TCP flags and window, ICMP type, `transp[..]`) are false
//! on non-first fragments; the transport header starts at the IP header
//! length (IHL field) of the packet itself, so IP options are handled.
//!
//! A transport test is preceded by an explicit first-fragment test, as in
//! Click, so that the optimizer can answer that question once per path.
//! The packet path then skips such a test where the transport test after
//! it answers it anyway (its failure on a later fragment leads to the
//! same place); the listings still show it, as Click's do.
//! Ranges are clamped to their field and written as masked values where
//! they are one (`normalize`).
//!
//! After compiling, jumps are threaded over path facts (`thread_jumps`:
//! a test that earlier tests on every path to it decide is skipped, on
//! any field and across masks), tests of one word that together are one
//! test are merged (`merge_words`), unreachable instructions are dropped
//! and the rest renumbered so that every jump goes forward. None of this
//! changes a verdict (a randomized test compares the program with and
//! without it, and with an interpreter of the patterns).

use super::lang::{Expr, IpField, Op, PortProto, Prim, Rel, Sd};
use paraclick_packet::Packet;
use paraclick_runtime::Verdict;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The header a test's offset counts from, as the listings name it.
fn region_name(t: &Test) -> &'static str {
    if t.mac {
        "mac"
    } else if t.transp {
        "transp"
    } else {
        "ip"
    }
}

/// What a rule does with the packets its pattern matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Out(usize),
    Drop,
}

/// One field test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Test {
    /// Relative to the transport header (else the IP header).
    transp: bool,
    /// Relative to the MAC (Ethernet) header (never with `transp`).
    mac: bool,
    width: u8,
    shift: u8,
    off: u16,
    mask: u32,
    lo: u32,
    hi: u32,
    neg: bool,
    /// 0, or for two merged `& mask != 0` tests (value 0, negated), the
    /// width of the first part: the test is "first part's bits nonzero
    /// or second part's bits nonzero", and a part whose bytes are missing
    /// counts as not holding, as it did before the merge.
    split: u8,
}

/// An instruction as the packet path runs it: one big-endian 4-byte load
/// at `off` (from the IP or transport header), `>> rshift`, `& mask`,
/// and a single unsigned compare for the range test. 32 bytes, so that
/// finding the next instruction is a shift, not a multiply.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Insn {
    off: u16,
    width: u8,
    /// Which header `off` counts from: an index into the run's bases
    /// (IP, transport, MAC).
    region: u8,
    rshift: u8,
    neg: bool,
    /// Nonzero for a merged pair of "field & mask != 0" tests (see
    /// [`Test::split`]): when the packet ends inside the word, the bytes
    /// of whole parts present are read and the rest count as zero.
    split: u8,
    mask: u32,
    lo: u32,
    /// `hi - lo`: the value is in range iff `v - lo <= span` (wrapping).
    span: u32,
    yes: u32,
    no: u32,
}

impl Insn {
    fn new(t: &Test, yes: u32, no: u32) -> Insn {
        // An empty range never holds; a full negated range neither (both
        // still need their bytes), and only the latter is one compare.
        let (lo, hi, neg) = if t.lo > t.hi {
            (0, u32::MAX, !t.neg)
        } else {
            (t.lo, t.hi, t.neg)
        };
        Insn {
            off: t.off,
            width: t.width,
            region: if t.mac { 2 } else { u8::from(t.transp) },
            rshift: 8 * (4 - t.width) + t.shift,
            neg,
            split: t.split,
            mask: t.mask,
            lo,
            span: hi - lo,
            yes,
            no,
        }
    }

    #[inline(always)]
    fn eval<const MAC: bool>(&self, ip: &[u8], bases: &[usize; 3]) -> bool {
        let base = if MAC {
            match self.region {
                0 => bases[0],
                1 => bases[1],
                _ => bases[2],
            }
        } else if self.region == 1 {
            bases[1]
        } else {
            0
        };
        let s = base + self.off as usize;
        let x = match ip.get(s..s + 4) {
            Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            None => {
                let width = self.width as usize;
                // Near the end of the packet: the field's bytes only; of a
                // merged pair, the parts wholly present (the rest is zero,
                // which such a test reads as "part does not hold").
                let avail = ip.len().saturating_sub(s);
                let keep = if avail >= width {
                    width
                } else if self.split != 0 && avail >= self.split as usize {
                    self.split as usize
                } else if self.split != 0 {
                    0
                } else {
                    return false;
                };
                let mut w = [0u8; 4];
                if keep > 0 {
                    w[..keep].copy_from_slice(&ip[s..s + keep]);
                }
                u32::from_be_bytes(w)
            }
        };
        let v = (x >> self.rshift) & self.mask;
        (v.wrapping_sub(self.lo) <= self.span) != self.neg
    }
}

impl Test {
    /// The values for which the test holds (given its bytes are present),
    /// as at most two disjoint intervals.
    fn set(&self) -> Vec<(u32, u32)> {
        let (lo, hi) = (self.lo, self.hi);
        if !self.neg {
            if lo > hi {
                vec![]
            } else {
                vec![(lo, hi)]
            }
        } else if lo > hi {
            vec![(0, u32::MAX)]
        } else {
            let mut v = Vec::new();
            if lo > 0 {
                v.push((0, lo - 1));
            }
            if hi < u32::MAX {
                v.push((hi + 1, u32::MAX));
            }
            v
        }
    }

    /// The two tests read the same bytes the same way (their masks and
    /// values may differ).
    fn same_bytes(&self, o: &Test) -> bool {
        self.transp == o.transp
            && self.mac == o.mac
            && self.off == o.off
            && self.width == o.width
            && self.shift == o.shift
            && self.split == 0
            && o.split == 0
    }

    /// What `self`'s `outcome` says about `o`, if they read the same bytes:
    /// `Some(true)` if `o` must hold, `Some(false)` if it cannot.
    ///
    /// A test that held says its bytes are there and its value is in its
    /// set; one that failed says the bytes are missing or the value is
    /// not in its set. With equal masks the sets are compared; with other
    /// masks, an equality that pins some bits decides a test on fewer
    /// bits (`src == 10.0.0.0` decides `src & 8.0.0.0 == 8.0.0.0`) or
    /// contradicts one that pins some of them otherwise.
    fn decide(&self, outcome: bool, o: &Test) -> Option<bool> {
        if o.transp && !outcome && *self == first_fragment_test() {
            // A later fragment (or a packet too short to say) has no
            // transport header to test.
            return Some(false);
        }
        if !self.same_bytes(o) {
            return None;
        }
        if self.mask == o.mask {
            return self.implies(outcome, o);
        }
        if self.lo != self.hi {
            return None;
        }
        let present = outcome;
        // The value under our mask: equal to `val`, or (eq false) not.
        let eq = outcome != self.neg;
        let (eq, val) = if !eq && self.mask.is_power_of_two() {
            (true, self.lo ^ self.mask)
        } else {
            (eq, self.lo)
        };
        let o_point = o.lo == o.hi;
        if eq {
            let m = self.mask;
            let holds = if o.mask & !m == 0 {
                let x = val & o.mask;
                (o.lo <= x && x <= o.hi) != o.neg
            } else if o_point && (val & m & o.mask) != (o.lo & m & o.mask) {
                o.neg
            } else {
                return None;
            };
            if holds {
                present.then_some(true)
            } else {
                Some(false)
            }
        } else if o_point && !o.neg && self.mask & !o.mask == 0 && o.lo & self.mask == val {
            // `o` would pin our bits to the value they do not have.
            Some(false)
        } else {
            None
        }
    }

    /// What `self`'s `outcome` says about `o` (a test on the same field).
    fn implies(&self, outcome: bool, o: &Test) -> Option<bool> {
        let a = self.set();
        let b = o.set();
        if outcome {
            // Bytes present and value in a.
            if subset(&a, &b) {
                return Some(true);
            }
            if disjoint(&a, &b) {
                return Some(false);
            }
        } else if subset(&b, &a) {
            // Bytes missing, or value outside a, so outside b.
            return Some(false);
        }
        None
    }
}

fn subset(a: &[(u32, u32)], b: &[(u32, u32)]) -> bool {
    a.iter()
        .all(|&(l, h)| b.iter().any(|&(bl, bh)| bl <= l && h <= bh))
}

fn disjoint(a: &[(u32, u32)], b: &[(u32, u32)]) -> bool {
    a.iter()
        .all(|&(l, h)| b.iter().all(|&(bl, bh)| h < bl || bh < l))
}

/// The transport header offset of a packet that has none (non-first
/// fragment, or too short): beyond any packet, so transport tests fail
/// their bounds check, yet far from overflowing when offsets are added.
const NO_TRANSPORT: usize = usize::MAX / 2;

/// The transport header's offset in `ip` (the bytes from the IP header
/// on): only first fragments have one; `NO_TRANSPORT` otherwise.
#[inline(always)]
fn transport_offset(ip: &[u8]) -> usize {
    match ip.get(..8) {
        Some(h) if (u16::from_be_bytes([h[6], h[7]]) & 0x1fff) == 0 => usize::from(h[0] & 0x0f) * 4,
        _ => NO_TRANSPORT,
    }
}

/// Targets at or above this are outcomes.
const OUTCOME: u32 = 1 << 31;
/// The outcome "drop".
const DROP: u32 = u32::MAX;
/// The outcome of a rule whose action is `drop` (IPFilter's `deny`):
/// [`Program::run`] says `Verdict::DropFor(0)`, where a packet that
/// matched no rule gets `Verdict::Drop`.
const DENY: u32 = u32::MAX - 1;

/// An instruction under construction.
#[derive(Clone, Copy, Debug)]
struct Node {
    test: Test,
    yes: u32,
    no: u32,
}

/// A compiled IPClassifier/IPFilter.
#[derive(Clone, Debug)]
pub struct Program {
    insns: Box<[Insn]>,
    /// The tests as compiled, for the listing.
    tests: Box<[Test]>,
    /// Their (yes, no) targets as listed (the packet path's may skip a
    /// folded first-fragment test).
    targets: Box<[(u32, u32)]>,
    /// The first instruction as listed ...
    start: u32,
    /// ... and as run (a first-fragment test folded, see `build`).
    run_start: u32,
    unmatchable: Vec<usize>,
    /// Some test reads the MAC header.
    mac: bool,
}

/// A boolean formula over field tests (a primitive, lowered).
enum L {
    /// Known at compile time.
    K(bool),
    T(Test),
    And(Box<L>, Box<L>),
    Or(Box<L>, Box<L>),
}

fn and(a: L, b: L) -> L {
    L::And(Box::new(a), Box::new(b))
}

fn or(a: L, b: L) -> L {
    L::Or(Box::new(a), Box::new(b))
}

fn full(width: u8) -> u32 {
    if width >= 4 {
        u32::MAX
    } else {
        (1u32 << (8 * u32::from(width))) - 1
    }
}

/// A test of the field `(bytes >> shift) & fmask` against `rel`.
fn field(transp: bool, off: u16, width: u8, shift: u8, fmask: u32, rel: &Rel) -> Test {
    let (lo, hi, neg) = match rel.op {
        Op::Eq => (rel.a, rel.a, false),
        Op::Ne => (rel.a, rel.a, true),
        Op::Lt => match rel.a.checked_sub(1) {
            Some(h) => (0, h, false),
            None => (1, 0, false),
        },
        Op::Le => (0, rel.a, false),
        Op::Gt => match rel.a.checked_add(1) {
            Some(l) => (l, u32::MAX, false),
            None => (1, 0, false),
        },
        Op::Ge => (rel.a, u32::MAX, false),
        Op::In => (rel.a, rel.b, false),
        Op::NotIn => (rel.a, rel.b, true),
        Op::Nonzero => (1, u32::MAX, false),
    };
    normalize(Test {
        transp,
        mac: false,
        width,
        shift,
        off,
        mask: fmask & rel.mask.unwrap_or(u32::MAX),
        lo,
        hi,
        neg,
        split: 0,
    })
}

/// The same test in its simplest form, as Click writes it: the range
/// clamped to the values the masked field can take (`port >= 1024` is
/// 1024-65535, not 1024-2^32-1), and a range that is one aligned block of
/// values, or all values but one, written as a masked equality: `port >=
/// 1024` is `port & 0xfc00 != 0`, `port < 256` is `port & 0xff00 == 0`,
/// a TCP flag is `flags & 0x02 == 0x02`. A negated single-bit equality
/// becomes the plain one of the other value (`flags & 0x10 != 0x10` is
/// `flags & 0x10 == 0`; both need the byte).
fn normalize(mut t: Test) -> Test {
    let m = t.mask;
    if t.lo > t.hi {
        return t;
    }
    t.hi = t.hi.min(m);
    if t.lo > t.hi {
        // No value of the masked field is in range.
        (t.lo, t.hi) = (1, 0);
        return t;
    }
    let (lo, hi) = (t.lo, t.hi);
    let pow2 = |x: u32| x != 0 && x & (x - 1) == 0;
    if lo != hi {
        if lo == 0 && hi < m && pow2(hi.wrapping_add(1)) {
            // [0, 2^k - 1]: no mask bit at or above k.
            (t.mask, t.lo, t.hi) = (m & !hi, 0, 0);
        } else if hi == m && pow2(lo) {
            // [2^k, max]: some mask bit at or above k.
            (t.mask, t.lo, t.hi) = (m & !(lo - 1), 0, 0);
            t.neg = !t.neg;
        } else if m & m.wrapping_add(1) == 0
            && pow2((hi - lo).wrapping_add(1))
            && lo & (hi - lo) == 0
            && hi < m
        {
            // An aligned block of a field of low bits.
            (t.mask, t.hi) = (m & !(hi - lo), lo);
        }
    }
    if t.lo == t.hi && t.neg && pow2(t.mask) && t.lo & !t.mask == 0 {
        t.lo ^= t.mask;
        t.hi = t.lo;
        t.neg = false;
    }
    t
}

/// What the path to a piece of code says about the IP protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proto {
    Unknown,
    Is(u8),
    TcpOrUdp,
}

impl Proto {
    /// Both facts hold. (Contradictory facts mean the code is
    /// unreachable, so either will do.)
    fn and(self, o: Proto) -> Proto {
        match (self, o) {
            (Proto::Unknown, x) | (x, Proto::Unknown) => x,
            (Proto::Is(p), _) | (_, Proto::Is(p)) => Proto::Is(p),
            (Proto::TcpOrUdp, Proto::TcpOrUdp) => Proto::TcpOrUdp,
        }
    }

    /// One of the facts holds.
    fn or(self, o: Proto) -> Proto {
        let tcp_udp = |x: Proto| matches!(x, Proto::Is(6 | 17) | Proto::TcpOrUdp);
        match (self, o) {
            (a, b) if a == b => a,
            (a, b) if tcp_udp(a) && tcp_udp(b) => Proto::TcpOrUdp,
            _ => Proto::Unknown,
        }
    }
}

/// The protocol fact that holds when `e` is true.
fn proto_fact(e: &Expr) -> Proto {
    match e {
        Expr::Prim(p) => match *p {
            Prim::Ip {
                field: IpField::Proto,
                rel:
                    Rel {
                        mask: None,
                        op: Op::Eq,
                        a,
                        ..
                    },
            } => u8::try_from(a).map_or(Proto::Unknown, Proto::Is),
            Prim::Port { proto, .. } => match proto {
                PortProto::Tcp => Proto::Is(6),
                PortProto::Udp => Proto::Is(17),
                PortProto::Any => Proto::TcpOrUdp,
            },
            Prim::TcpOpt(_) | Prim::TcpWin(_) => Proto::Is(6),
            Prim::IcmpType(_) => Proto::Is(1),
            Prim::TranspBytes { proto: Some(p), .. } => Proto::Is(p),
            _ => Proto::Unknown,
        },
        Expr::And(v) => v.iter().fold(Proto::Unknown, |k, x| k.and(proto_fact(x))),
        Expr::Or(v) => v
            .iter()
            .map(proto_fact)
            .reduce(Proto::or)
            .unwrap_or(Proto::Unknown),
        _ => Proto::Unknown,
    }
}

/// The test `ip proto == p`, or its outcome if `known` decides it.
fn proto_is(p: u8, known: Proto) -> L {
    match known {
        Proto::Is(q) => L::K(p == q),
        Proto::TcpOrUdp if p != 6 && p != 17 => L::K(false),
        _ => L::T(field(false, 9, 1, 0, 0xff, &Rel::eq(u32::from(p)))),
    }
}

/// `sd` over the source and destination tests (dualized for negative
/// relations, so that `!=` means "neither" for `src or dst`).
fn pair(sd: Sd, negative: bool, s: Test, d: Test) -> L {
    let sd = if negative { sd.dual() } else { sd };
    match sd {
        Sd::Src => L::T(s),
        Sd::Dst => L::T(d),
        Sd::Or => or(L::T(s), L::T(d)),
        Sd::And => and(L::T(s), L::T(d)),
    }
}

/// (offset, width, shift, mask) of an IP header field.
fn ip_layout(f: IpField) -> (u16, u8, u8, u32) {
    match f {
        IpField::Vers => (0, 1, 4, 0xf),
        IpField::Hl => (0, 1, 0, 0xf),
        IpField::Tos => (1, 1, 0, 0xff),
        IpField::Dscp => (1, 1, 2, 0x3f),
        IpField::Id => (4, 2, 0, 0xffff),
        IpField::Ttl => (8, 1, 0, 0xff),
        IpField::Proto => (9, 1, 0, 0xff),
    }
}

/// `l`, a test of the transport header, preceded by Click's explicit
/// first-fragment test (fragment offset zero). The transport test fails
/// on a later fragment by itself; the explicit test lets the optimizer
/// skip the fragment question once a path has answered it, and gives a
/// later fragment its own way out, as Click's programs do.
fn first_fragment(l: L) -> L {
    and(L::T(first_fragment_test()), l)
}

/// The fragment offset is zero.
fn first_fragment_test() -> Test {
    field(false, 6, 2, 0, 0x1fff, &Rel::eq(0))
}

/// A primitive as field tests, given what is known of the protocol.
fn lower(p: &Prim, known: Proto) -> L {
    match *p {
        Prim::Addr { sd, addr, mask, ne } => {
            let r = Rel {
                mask: None,
                op: if ne { Op::Ne } else { Op::Eq },
                a: addr,
                b: addr,
            };
            let s = field(false, 12, 4, 0, mask, &r);
            let d = field(false, 16, 4, 0, mask, &r);
            pair(sd, ne, s, d)
        }
        Prim::Ip { field: f, rel } => {
            let (off, w, sh, m) = ip_layout(f);
            L::T(field(false, off, w, sh, m, &rel))
        }
        Prim::Frag => L::T(field(false, 6, 2, 0, 0x3fff, &nonzero())),
        Prim::Ect => L::T(field(false, 1, 1, 0, 0x3, &nonzero())),
        Prim::Ce => L::T(field(false, 1, 1, 0, 0x3, &Rel::eq(3))),
        Prim::Port { sd, proto, rel } => {
            let p = match proto {
                PortProto::Tcp => proto_is(6, known),
                PortProto::Udp => proto_is(17, known),
                PortProto::Any if known == Proto::TcpOrUdp => L::K(true),
                PortProto::Any => or(proto_is(6, known), proto_is(17, known)),
            };
            let s = field(true, 0, 2, 0, 0xffff, &rel);
            let d = field(true, 2, 2, 0, 0xffff, &rel);
            and(p, first_fragment(pair(sd, rel.op.is_negative(), s, d)))
        }
        Prim::TcpOpt(flag) => and(
            proto_is(6, known),
            first_fragment(L::T(field(true, 13, 1, 0, u32::from(flag), &nonzero()))),
        ),
        Prim::TcpWin(rel) => and(
            proto_is(6, known),
            first_fragment(L::T(field(true, 14, 2, 0, 0xffff, &rel))),
        ),
        Prim::IcmpType(rel) => and(
            proto_is(1, known),
            first_fragment(L::T(field(true, 0, 1, 0, 0xff, &rel))),
        ),
        Prim::IpBytes { off, len, rel } => L::T(field(false, off, len, 0, full(len), &rel)),
        Prim::Ether { sd, addr, ne } => {
            let s = ether_side(6, &addr, ne);
            let d = ether_side(0, &addr, ne);
            match if ne { sd.dual() } else { sd } {
                Sd::Src => s,
                Sd::Dst => d,
                Sd::Or => or(s, d),
                Sd::And => and(s, d),
            }
        }
        Prim::TranspBytes {
            proto,
            off,
            len,
            rel,
        } => {
            let t = first_fragment(L::T(field(true, off, len, 0, full(len), &rel)));
            match proto {
                Some(p) => and(proto_is(p, known), t),
                None => t,
            }
        }
    }
}

/// Where the MAC header's first byte is in Click's listing numbering
/// (so that the Ethernet addresses' words print as Click's do).
const MAC_LISTING_BASE: u32 = 2;

/// The test that the Ethernet address at `off` in the MAC header is (or,
/// with `ne`, is not) `addr`: one test per part of it within one word
/// of Click's listing.
fn ether_side(off: u16, addr: &[u8; 6], ne: bool) -> L {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < 6 {
        let at = MAC_LISTING_BASE + u32::from(off) + i as u32;
        let n = ((4 - at % 4) as usize).min(6 - i);
        let v = addr[i..i + n]
            .iter()
            .fold(0u32, |x, &b| (x << 8) | u32::from(b));
        parts.push(L::T(Test {
            transp: false,
            mac: true,
            width: n as u8,
            shift: 0,
            off: off + i as u16,
            mask: full(n as u8),
            lo: v,
            hi: v,
            neg: ne,
            split: 0,
        }));
        i += n;
    }
    let join = if ne { or } else { and };
    parts.into_iter().reduce(join).unwrap_or(L::K(!ne))
}

fn nonzero() -> Rel {
    Rel {
        mask: None,
        op: Op::Nonzero,
        a: 0,
        b: 0,
    }
}

/// A built program and the outcomes (as built) some packet reaches.
struct Built {
    program: Program,
    outcomes: Vec<u32>,
}

/// Code under construction: instructions in creation order (every target
/// is an earlier instruction or an outcome), shared when identical.
#[derive(Default)]
struct Builder {
    insns: Vec<Node>,
    seen: HashMap<(Test, u32, u32), u32>,
}

impl Builder {
    fn emit(&mut self, test: Test, yes: u32, no: u32) -> u32 {
        if yes == no {
            return yes;
        }
        if let Some(&i) = self.seen.get(&(test, yes, no)) {
            return i;
        }
        let i = self.insns.len() as u32;
        self.insns.push(Node { test, yes, no });
        self.seen.insert((test, yes, no), i);
        i
    }

    fn lowered(&mut self, l: &L, t: u32, f: u32) -> u32 {
        match l {
            L::K(b) => {
                if *b {
                    t
                } else {
                    f
                }
            }
            L::T(test) => self.emit(*test, t, f),
            L::And(a, b) => {
                let eb = self.lowered(b, t, f);
                self.lowered(a, eb, f)
            }
            L::Or(a, b) => {
                let eb = self.lowered(b, t, f);
                self.lowered(a, t, eb)
            }
        }
    }

    /// Code for `e` that continues at `t` if it holds, else at `f`;
    /// `known` is what every path reaching it says about the protocol.
    fn expr(&mut self, e: &Expr, t: u32, f: u32, known: Proto) -> u32 {
        match e {
            Expr::Const(true) => t,
            Expr::Const(false) => f,
            Expr::Prim(p) => self.lowered(&lower(p, known), t, f),
            Expr::Not(x) => self.expr(x, f, t, known),
            // Chains compile from their last operand back, iteratively.
            // Each operand of an `and` runs only after the earlier ones
            // held, so it knows their protocol facts.
            Expr::And(v) => {
                let mut ks = Vec::with_capacity(v.len());
                let mut k = known;
                for x in v {
                    ks.push(k);
                    k = k.and(proto_fact(x));
                }
                v.iter()
                    .zip(ks)
                    .rev()
                    .fold(t, |next, (x, k)| self.expr(x, next, f, k))
            }
            Expr::Or(v) => v
                .iter()
                .rev()
                .fold(f, |next, x| self.expr(x, t, next, known)),
            Expr::Cond(c, a, b) => {
                let ea = self.expr(a, t, f, known.and(proto_fact(c)));
                let eb = self.expr(b, t, f, known);
                self.expr(c, ea, eb, known)
            }
        }
    }
}

/// What a path to an instruction has learnt: tests and their outcomes.
type Facts = Vec<(Test, bool)>;

/// Fact sets kept per instruction before they are merged into one (their
/// common facts); more paths mean less precision, never a wrong answer.
const MAX_PATHS: usize = 4;
/// Facts kept per set (the latest); older ones are forgotten.
const MAX_FACTS: usize = 64;
/// Tests skipped along one chain at most, to bound compile time.
const MAX_CHAIN: usize = 256;

/// The outcome of `t` that `facts` force, if any.
fn decided(facts: &[(Test, bool)], t: &Test) -> Option<bool> {
    facts.iter().rev().find_map(|(f, o)| f.decide(*o, t))
}

/// The facts common to every set.
fn intersect(sets: &[Facts]) -> Facts {
    let mut out = sets[0].clone();
    out.retain(|f| sets[1..].iter().all(|s| s.contains(f)));
    out
}

/// Where a packet that satisfies `facts` goes from `t`: the chain of
/// instructions it passes while their outcomes are forced.
fn follow(insns: &[Node], facts: &[(Test, bool)], mut t: u32) -> Vec<u32> {
    let mut chain = vec![t];
    while t < OUTCOME && chain.len() < MAX_CHAIN {
        let n = &insns[t as usize];
        t = if n.yes == n.no {
            n.yes
        } else {
            match decided(facts, &n.test) {
                Some(true) => n.yes,
                Some(false) => n.no,
                None => break,
            }
        };
        chain.push(t);
    }
    chain
}

/// Path-sensitive jump threading. Every instruction keeps up to
/// MAX_PATHS fact sets such that each path reaching it satisfies one of
/// them. A jump then moves past every test its fact sets force: for each
/// set, the chain of forced tests from the old target; the new target is
/// the furthest instruction (or outcome) on all the chains. So a test
/// that an earlier test on every path implies (`dst port 80` after a
/// failed `dst port 80` elsewhere; `proto 17` after `proto 6` failed and
/// `proto 17` held) is skipped, and a branch that contradicts the path
/// goes straight to where the contradiction leads. A set that
/// contradicts the test itself is a path that cannot take that branch,
/// and is dropped. Instructions are visited after all of their
/// predecessors (jumps go to lower indices).
fn thread_jumps(insns: &mut [Node], start: u32) {
    let n = insns.len();
    let mut paths: Vec<Vec<Facts>> = vec![Vec::new(); n];
    if start < OUTCOME {
        paths[start as usize].push(Vec::new());
    }
    for i in (0..n).rev() {
        let mut sets = std::mem::take(&mut paths[i]);
        if sets.is_empty() {
            continue;
        }
        if sets.len() > MAX_PATHS {
            sets = vec![intersect(&sets)];
        }
        let me = insns[i];
        let mut dead = [false; 2];
        for (k, outcome) in [true, false].into_iter().enumerate() {
            let old = if outcome { me.yes } else { me.no };
            let mut chains = Vec::new();
            let mut exts = Vec::new();
            for set in &sets {
                if decided(set, &me.test) == Some(!outcome) {
                    continue;
                }
                let mut e = set.clone();
                if !e.contains(&(me.test, outcome)) {
                    if e.len() >= MAX_FACTS {
                        e.remove(0);
                    }
                    e.push((me.test, outcome));
                }
                chains.push(follow(insns, &e, old));
                exts.push(e);
            }
            if chains.is_empty() {
                dead[k] = true;
                continue;
            }
            // The furthest point of the first chain that every chain passes.
            let t = *chains[0]
                .iter()
                .rev()
                .find(|t| chains[1..].iter().all(|c| c.contains(t)))
                .unwrap_or(&old);
            if outcome {
                insns[i].yes = t;
            } else {
                insns[i].no = t;
            }
            if t < OUTCOME {
                let to = &mut paths[t as usize];
                to.extend(exts);
                if to.len() > 4 * MAX_PATHS {
                    *to = vec![intersect(to)];
                }
            }
        }
        // A branch no path takes: the test always goes the other way.
        if dead[0] && !dead[1] {
            insns[i].yes = insns[i].no;
        } else if dead[1] && !dead[0] {
            insns[i].no = insns[i].yes;
        }
    }
}

/// The listing word (Click's numbering) a test's bytes lie in, if one.
fn listing_word(t: &Test) -> Option<u32> {
    let base = if t.mac {
        MAC_LISTING_BASE
    } else if t.transp {
        512
    } else {
        256
    };
    let at = base + u32::from(t.off);
    (at % 4 + u32::from(t.width) <= 4).then_some(at & !3)
}

/// `t` as (first byte, width, mask, value) over bytes, if it is an
/// equality (or negated equality) on unshifted bytes.
fn as_point(t: &Test) -> Option<(u16, u8, u32, u32)> {
    (t.lo == t.hi && t.shift == 0 && t.split == 0 && t.lo & !t.mask == 0)
        .then_some((t.off, t.width, t.mask, t.lo))
}

/// Two point tests on one word, as one over the bytes `[off, off+w)`
/// that cover both: (off, width, mask, value, mask overlap agrees).
fn widen(a: (u16, u8, u32, u32), b: (u16, u8, u32, u32)) -> (u16, u8, u32, u32, bool) {
    let off = a.0.min(b.0);
    let end = (a.0 + u16::from(a.1)).max(b.0 + u16::from(b.1));
    let w = (end - off) as u8;
    let place = |(o, wd, m, v): (u16, u8, u32, u32)| {
        let sh = 8 * u32::from(end - (o + u16::from(wd)));
        (m << sh, v << sh)
    };
    let (ma, va) = place(a);
    let (mb, vb) = place(b);
    let both = ma & mb;
    (off, w, ma | mb, va | vb, va & both == vb & both)
}

/// Merges a test and the next test on the same word of Click's listing
/// into one test, as Click's program does (`syn and not ack` is one test
/// of the flags byte, `flags & 0x12 == 0x02`; `src or dst port >= 1024`
/// is `ports & 0xfc00fc00 != 0`). Each merge keeps every verdict:
/// - `a and b` (a's yes is b, both fail to one place) is one equality
///   over both masks: it needs all the bytes, as the pair did. A single
///   bit test whose bytes the first test already read may be turned
///   around first (`flags & 0x10 == 0x10` failing is `== 0` holding).
/// - `a or b` of two "bits nonzero" tests is one "bits nonzero" test
///   that reads a part whose bytes are missing as zero
///   ([`Test::split`]), as the pair did.
fn merge_words(insns: &mut [Node]) {
    for i in (0..insns.len()).rev() {
        for _ in 0..8 {
            let x = insns[i];
            let Some(px) = as_point(&x.test) else { break };
            let Some(word) = listing_word(&x.test) else {
                break;
            };
            let region = |t: &Test| (t.transp, t.mac);
            if !x.test.neg && x.yes < OUTCOME && x.yes != x.no {
                let y = insns[x.yes as usize];
                let Some(py) = as_point(&y.test) else { break };
                if region(&y.test) != region(&x.test) || listing_word(&y.test) != Some(word) {
                    break;
                }
                // y's bytes were read by x: y's outcome is a value question.
                let covered = y.test.off >= x.test.off
                    && y.test.off + u16::from(y.test.width) <= x.test.off + u16::from(x.test.width);
                let single = py.2.is_power_of_two();
                let (mut vy, mut yes, mut no) = (py.3, y.yes, y.no);
                if y.test.neg {
                    if !(covered && single) {
                        break;
                    }
                    vy ^= py.2;
                }
                if yes == x.no && no != x.no && covered && single {
                    vy ^= py.2;
                    std::mem::swap(&mut yes, &mut no);
                }
                if no != x.no {
                    break;
                }
                let (off, width, mask, value, ok) = widen(px, (py.0, py.1, py.2, vy));
                if !ok {
                    break;
                }
                let t = &mut insns[i].test;
                (t.off, t.width, t.mask, t.lo, t.hi) = (off, width, mask, value, value);
                insns[i].yes = yes;
                continue;
            }
            if x.test.neg && px.3 == 0 && x.no < OUTCOME && x.no != x.yes {
                let y = insns[x.no as usize];
                let Some(py) = as_point(&y.test) else { break };
                if !y.test.neg
                    || py.3 != 0
                    || y.yes != x.yes
                    || region(&y.test) != region(&x.test)
                    || listing_word(&y.test) != Some(word)
                    || y.test.off < x.test.off + u16::from(x.test.width)
                {
                    break;
                }
                let (off, width, mask, _, _) = widen(px, py);
                let t = &mut insns[i].test;
                t.split = x.test.width;
                (t.off, t.width, t.mask) = (off, width, mask);
                insns[i].no = y.no;
                continue;
            }
            break;
        }
    }
}

impl Program {
    /// Compiles rules tried in order; a packet matching none is dropped.
    ///
    /// Built twice: once with an outcome per rule, to find the rules no
    /// packet reaches; then with each rule's action as its outcome, so
    /// that tests whose every way leads to one action (rules with the
    /// same output) disappear: `allow tcp, allow all` is `all->[0]`.
    pub fn compile(rules: &[(Expr, Action)]) -> Program {
        Self::compile_with(rules, true)
    }

    /// The program without the optimizations (jump threading and word
    /// merging), to check that they change no verdict.
    #[doc(hidden)]
    pub fn compile_unoptimized(rules: &[(Expr, Action)]) -> Program {
        Self::compile_with(rules, false)
    }

    fn compile_with(rules: &[(Expr, Action)], optimize: bool) -> Program {
        let per_rule = Self::build(rules, &|i| OUTCOME | i as u32, optimize);
        let mut matched = vec![false; rules.len()];
        for t in per_rule.outcomes {
            if t != DROP {
                matched[(t & !OUTCOME) as usize] = true;
            }
        }
        let mut p = Self::build(
            rules,
            &|i| match rules[i].1 {
                Action::Out(port) => OUTCOME | port as u32,
                Action::Drop => DENY,
            },
            optimize,
        )
        .program;
        p.unmatchable = (0..rules.len()).filter(|&i| !matched[i]).collect();
        p
    }

    /// Builds the program for `rules`, rule `i` leading to outcome
    /// `target(i)`; also the outcomes some packet reaches.
    fn build(rules: &[(Expr, Action)], target: &dyn Fn(usize) -> u32, optimize: bool) -> Built {
        let mut b = Builder::default();
        let mut next = DROP;
        for (i, (e, _)) in rules.iter().enumerate().rev() {
            next = b.expr(e, target(i), next, Proto::Unknown);
        }
        let mut insns = b.insns;
        if optimize {
            thread_jumps(&mut insns, next);
            merge_words(&mut insns);
        }
        // Skip tests whose outcome no longer matters.
        let skip = |insns: &[Node], mut t: u32| {
            while t < OUTCOME && insns[t as usize].yes == insns[t as usize].no {
                t = insns[t as usize].yes;
            }
            t
        };
        for i in 0..insns.len() {
            insns[i].yes = skip(&insns, insns[i].yes);
            insns[i].no = skip(&insns, insns[i].no);
        }
        next = skip(&insns, next);
        // Keep what is reachable, numbered so that jumps go forward:
        // reachable instructions in decreasing creation order.
        let mut reach = vec![false; insns.len()];
        let mut outcomes = Vec::new();
        let mut stack = vec![next];
        while let Some(t) = stack.pop() {
            if t >= OUTCOME {
                if !outcomes.contains(&t) {
                    outcomes.push(t);
                }
                continue;
            }
            if !std::mem::replace(&mut reach[t as usize], true) {
                stack.push(insns[t as usize].yes);
                stack.push(insns[t as usize].no);
            }
        }
        let order: Vec<usize> = (0..insns.len()).rev().filter(|&i| reach[i]).collect();
        let mut newno = vec![0u32; insns.len()];
        for (k, &i) in order.iter().enumerate() {
            newno[i] = k as u32;
        }
        let map = |t: u32| -> u32 {
            if t < OUTCOME {
                newno[t as usize]
            } else {
                t
            }
        };
        // The packet path skips a first-fragment test that the transport
        // test after it answers by itself: that test fails on a later
        // fragment, and its failure leads where the fragment test's would.
        let folded = |t: u32| -> u32 {
            if !optimize || t >= OUTCOME {
                return t;
            }
            let f = &insns[t as usize];
            if f.test != first_fragment_test() || f.yes >= OUTCOME {
                return t;
            }
            let y = &insns[f.yes as usize];
            let later = [(f.test, false)];
            if y.test.transp && follow(&insns, &later, y.no).contains(&f.no) {
                f.yes
            } else {
                t
            }
        };
        let hot: Box<[Insn]> = order
            .iter()
            .map(|&i| {
                let n = &insns[i];
                Insn::new(&n.test, map(folded(n.yes)), map(folded(n.no)))
            })
            .collect();
        let tests: Box<[Test]> = order.iter().map(|&i| insns[i].test).collect();
        let targets: Box<[(u32, u32)]> = order
            .iter()
            .map(|&i| (map(insns[i].yes), map(insns[i].no)))
            .collect();
        Built {
            program: Program {
                insns: hot,
                targets,
                mac: tests.iter().any(|t| t.mac),
                tests,
                start: map(next),
                run_start: map(folded(next)),
                unmatchable: Vec::new(),
            },
            outcomes,
        }
    }

    /// Whether no packet can match `e` (a contradiction the compiler
    /// sees), whatever rules come before it.
    pub fn matches_nothing(e: &Expr) -> bool {
        Self::build(&[(e.clone(), Action::Out(0))], &|_| OUTCOME, true)
            .outcomes
            .iter()
            .all(|&t| t != OUTCOME)
    }

    /// Rules no packet can reach (after an earlier catch-all, `false`,
    /// or a contradiction the compiler sees).
    pub fn unmatchable(&self) -> &[usize] {
        &self.unmatchable
    }

    /// Number of instructions.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    /// Runs the program on `ip`, the bytes from the IP header on (MAC
    /// header tests fail).
    #[inline]
    pub fn run(&self, ip: &[u8]) -> Verdict {
        let bases = [0, transport_offset(ip), NO_TRANSPORT];
        if self.mac {
            // MAC tests are there, but no MAC header: they must fail.
            self.exec::<true>(ip, bases)
        } else {
            self.exec::<false>(ip, bases)
        }
    }

    /// Runs the program on `data`, whose IP header starts `ip_off` bytes
    /// in and MAC header `mac_off` bytes in.
    #[inline]
    fn run_at(&self, data: &[u8], ip_off: usize, mac_off: usize) -> Verdict {
        let th = data
            .get(ip_off..)
            .map_or(NO_TRANSPORT, |ip| ip_off + transport_offset(ip));
        self.exec::<true>(data, [ip_off, th, mac_off])
    }

    /// The instruction loop, over `data` with the IP, transport and MAC
    /// header offsets `bases`; without `MAC` (no MAC test in the program)
    /// the IP header is at 0, and choosing a base is one compare.
    #[inline(always)]
    fn exec<const MAC: bool>(&self, data: &[u8], bases: [usize; 3]) -> Verdict {
        let ip = data;
        let mut pc = self.run_start;
        // Two arms that each test for an outcome keep the compiler from
        // turning the choice of the next instruction into a data-dependent
        // load (a select): a predicted branch lets the processor run ahead
        // along the packet's usual path instead of waiting for each test.
        while pc < OUTCOME {
            let Some(i) = self.insns.get(pc as usize) else {
                return Verdict::Drop;
            };
            if i.eval::<MAC>(ip, &bases) {
                pc = i.yes;
                if pc >= OUTCOME {
                    break;
                }
            } else {
                pc = i.no;
                if pc >= OUTCOME {
                    break;
                }
            }
        }
        if pc == DROP {
            Verdict::Drop
        } else if pc == DENY {
            Verdict::DropFor(0)
        } else {
            Verdict::Out((pc & !OUTCOME) as usize)
        }
    }

    /// How many instructions the packet path runs for `ip` (for tests).
    #[doc(hidden)]
    pub fn path_len(&self, ip: &[u8]) -> usize {
        let bases = [0, transport_offset(ip), NO_TRANSPORT];
        let (mut pc, mut n) = (self.run_start, 0);
        while let Some(i) = self.insns.get(pc as usize) {
            n += 1;
            pc = if i.eval::<true>(ip, &bases) {
                i.yes
            } else {
                i.no
            };
        }
        n
    }

    /// Classifies a packet by its IP header (the network header
    /// annotation, or the start of the data if that is not set).
    #[inline]
    pub fn classify(&self, p: &Packet) -> Verdict {
        let ip = if p.has_network_header() {
            p.network_header().unwrap_or(&[])
        } else {
            p.data()
        };
        if self.mac {
            // Ethernet tests read the MAC header annotation's bytes, when
            // it is set and comes before the IP header.
            if let Some(m) = p.mac_header().filter(|m| m.len() >= ip.len()) {
                return self.run_at(m, m.len() - ip.len(), 0);
            }
        }
        self.run(ip)
    }

    /// Classifies a packet as it enters the router (the packet tracer's
    /// filter): by its network header annotation if set; otherwise an
    /// Ethernet frame carrying IPv4 by the IP header after the Ethernet
    /// header (MAC tests read that header), and anything else by the
    /// start of its data.
    pub fn classify_entering(&self, p: &Packet) -> Verdict {
        if p.has_network_header() {
            return self.classify(p);
        }
        let d = p.data();
        if d.len() >= 34 && d[12..14] == [8, 0] && d[0] >> 4 != 4 {
            return self.run_at(d, 14, 0);
        }
        self.run(d)
    }

    /// The `program` handler's text in Click's format: numbered steps
    /// `N OFFSET/VALUE%MASK  yes->T  no->T`, each an aligned 32-bit word
    /// test, IP header words at offset 256 on and transport header words
    /// at 512 on (Click's numbering); T is `step N`, `[OUTPUT]` or `[X]`
    /// (drop). A range prints as one step per aligned block of it; a
    /// negated test adds `short->yes` (a packet too short for its word
    /// goes the way a matching word does). A field that straddles two
    /// words prints in
    /// paraclick's form (`ip[OFF:WIDTH] in LO-HI`). Then `safe length`
    /// and `alignment offset 0`.
    pub fn click_listing(&self) -> String {
        // Each instruction's steps: (base offset, word value, word mask)
        // tests; `None` for a straddling field.
        struct Steps {
            blocks: Option<Vec<(u32, u32, u32)>>,
        }
        let mut safe = 0u32;
        let steps: Vec<Steps> = self
            .tests
            .iter()
            .map(|t| {
                let base = if t.mac {
                    MAC_LISTING_BASE
                } else if t.transp {
                    512
                } else {
                    256
                };
                let off = u32::from(t.off);
                let w = u32::from(t.width);
                safe = safe.max(base + off + w);
                // Words are aligned in the listing's numbering.
                let b = (base + off) & 3;
                if b + w > 4 {
                    return Steps { blocks: None };
                }
                let sh = 8 * (4 - b - w) + u32::from(t.shift);
                let word = (base + off) & !3;
                let mut blocks = Vec::new();
                if t.lo <= t.hi {
                    let (mut lo, hi, mask) = (u64::from(t.lo), u64::from(t.hi), u64::from(t.mask));
                    while lo <= hi {
                        let mut k = 0;
                        while k < 32
                            && lo % (1u64 << (k + 1)) == 0
                            && lo + (1u64 << (k + 1)) - 1 <= hi
                        {
                            k += 1;
                        }
                        let m = mask & !((1u64 << k) - 1);
                        blocks.push((
                            word,
                            ((lo << sh) & 0xffff_ffff) as u32,
                            ((m << sh) & 0xffff_ffff) as u32,
                        ));
                        lo += 1u64 << k;
                    }
                } else {
                    // Never holds (when the bytes are there).
                    blocks.push((word, 0, 0));
                }
                Steps {
                    blocks: Some(blocks),
                }
            })
            .collect();
        let size = |s: &Steps| s.blocks.as_ref().map_or(1, |b| b.len());
        let mut first = Vec::with_capacity(steps.len());
        let mut n = 0;
        for st in &steps {
            first.push(n);
            n += size(st);
        }
        let target = |t: u32| -> String {
            if t == DROP || t == DENY {
                "[X]".into()
            } else if t >= OUTCOME {
                format!("[{}]", t & !OUTCOME)
            } else {
                format!("step {}", first[t as usize])
            }
        };
        let mut s = String::new();
        if self.start >= OUTCOME {
            let _ = writeln!(s, "all->{}", target(self.start));
        }
        for (k, ((i, t), st)) in self
            .targets
            .iter()
            .zip(self.tests.iter())
            .zip(steps.iter())
            .enumerate()
        {
            let at = first[k];
            let (yes, no) = (target(i.0), target(i.1));
            // The test's outcome when it holds / fails.
            let (hold, fail) = if t.neg {
                (no.clone(), yes.clone())
            } else {
                (yes.clone(), no.clone())
            };
            match &st.blocks {
                None => {
                    let _ = writeln!(
                        s,
                        "{at:2} {}[{}:{}] in {}-{}  yes->{hold}  no->{fail}",
                        region_name(t),
                        t.off,
                        t.width,
                        t.lo,
                        t.hi
                    );
                }
                Some(blocks) if t.lo > t.hi => {
                    let (w, _, _) = blocks[0];
                    // Never holds: both ways fail.
                    let _ = writeln!(s, "{at:2} {w:3}/00000000%00000000  yes->{fail}  no->{fail}");
                }
                Some(blocks) => {
                    for (j, &(w, v, m)) in blocks.iter().enumerate() {
                        let next = if j + 1 < blocks.len() {
                            format!("step {}", at + j + 1)
                        } else {
                            fail.clone()
                        };
                        // A negated test fails when its bytes are missing:
                        // such a packet goes the way a matching word does.
                        let short = if t.neg { "  short->yes" } else { "" };
                        let _ = writeln!(
                            s,
                            "{:2} {w:3}/{v:08x}%{m:08x}  yes->{hold}  no->{next}{short}",
                            at + j
                        );
                    }
                }
            }
        }
        let _ = writeln!(s, "safe length {safe}");
        s.push_str("alignment offset 0\n");
        s
    }

    /// The `tests` handler's text: one line per instruction.
    pub fn listing(&self) -> String {
        let target = |t: u32| -> String {
            if t == DROP || t == DENY {
                "drop".into()
            } else if t >= OUTCOME {
                format!("[{}]", t & !OUTCOME)
            } else {
                format!("step {t}")
            }
        };
        let mut s = String::new();
        let _ = writeln!(s, "start: {}", target(self.start));
        for (k, (i, t)) in self.targets.iter().zip(self.tests.iter()).enumerate() {
            let _ = write!(s, "{k:3}  {}[{}", region_name(t), t.off);
            if t.width > 1 {
                let _ = write!(s, ":{}", t.width);
            }
            s.push(']');
            if t.shift > 0 {
                let _ = write!(s, " >> {}", t.shift);
            }
            // Addresses print as addresses.
            let addr = !t.transp && !t.mac && t.width == 4 && (t.off == 12 || t.off == 16);
            let v = |x: u32| -> String {
                if addr {
                    std::net::Ipv4Addr::from(x).to_string()
                } else {
                    x.to_string()
                }
            };
            if t.mask != full(t.width) >> t.shift {
                if addr {
                    let _ = write!(s, " & {}", v(t.mask));
                } else {
                    let _ = write!(s, " & 0x{:x}", t.mask);
                }
            }
            let (lo, hi) = (v(t.lo), v(t.hi));
            let cond = if t.lo > t.hi {
                if t.neg {
                    "present".into()
                } else {
                    "never".into()
                }
            } else if t.lo == t.hi {
                format!("{} {lo}", if t.neg { "!=" } else { "==" })
            } else if t.hi >= t.mask {
                // Up to the largest value the masked field takes.
                format!("{} {lo}", if t.neg { "<" } else { ">=" })
            } else if t.lo == 0 {
                format!("{} {hi}", if t.neg { ">" } else { "<=" })
            } else {
                format!("{}in {lo}-{hi}", if t.neg { "not " } else { "" })
            };
            let _ = writeln!(s, " {cond}  yes: {}  no: {}", target(i.0), target(i.1));
        }
        s
    }
}
