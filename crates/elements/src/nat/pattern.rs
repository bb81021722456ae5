// Click's rewrite patterns (`SADDR SPORT DADDR DPORT`, each field `-` or a
// value, source address and port possibly ranges) and input
// specifications (`drop`, `pass`, `keep`, `pattern`, named patterns,
// mapper elements).

use super::flow::FlowId;
use paraclick_runtime::args::{ArgEnv, FromArg};
use std::fmt;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a range is searched for a free value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    /// From a random point (`?`, and address-only ranges by default).
    Random,
    /// From where the previous allocation left off (`#`).
    Sequential,
    /// The packet's own source port first if it is in range, then from a
    /// random point (Click's default for a port range).
    SameFirst,
}

/// An inclusive range of values (addresses or ports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u32,
    pub hi: u32,
}

impl Range {
    pub fn len(&self) -> u64 {
        u64::from(self.hi - self.lo) + 1
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    pub fn contains(&self, v: u32) -> bool {
        self.lo <= v && v <= self.hi
    }
}

/// A rewrite pattern. `None` fields are `-`: left as the packet has them.
#[derive(Debug)]
pub struct Pattern {
    pub saddr: Option<Range>,
    pub sport: Option<Range>,
    pub daddr: Option<u32>,
    pub dport: Option<u16>,
    pub alloc: Alloc,
    /// Whether the pattern was written with two fields (`SADDR DADDR`):
    /// it is printed that way.
    pub two_fields: bool,
    /// Where sequential allocation continues (shared by every thread:
    /// touched only when a flow is created).
    cursor: AtomicU64,
    /// Live flows made with this pattern (the `patterns` handler).
    pub users: AtomicU64,
}

fn strip_suffix(s: &str) -> (&str, Option<Alloc>) {
    if let Some(r) = s.strip_suffix('#') {
        (r, Some(Alloc::Sequential))
    } else if let Some(r) = s.strip_suffix('?') {
        (r, Some(Alloc::Random))
    } else {
        (s, None)
    }
}

fn parse_addr(s: &str, env: &ArgEnv) -> Option<u32> {
    Ipv4Addr::from_arg(s, env).map(u32::from).ok()
}

/// A source address, range `L-H` or prefix `ADDR/LEN`, with an optional
/// allocation suffix; `None` if it is not one.
fn parse_addr_range(s: &str, env: &ArgEnv) -> Option<(Range, Option<Alloc>)> {
    let (s, alloc) = strip_suffix(s);
    if let Some((a, p)) = s.split_once('/') {
        let base = parse_addr(a, env)?;
        let pfx: u32 = p.parse().ok().filter(|&p| p <= 32)?;
        let mask = if pfx == 0 { 0 } else { u32::MAX << (32 - pfx) };
        let net = base & mask;
        let bcast = net | !mask;
        // Leave out the network and broadcast addresses of real subnets.
        let r = if pfx <= 30 {
            Range {
                lo: net + 1,
                hi: bcast - 1,
            }
        } else {
            Range { lo: net, hi: bcast }
        };
        return Some((r, alloc));
    }
    if let Some((a, b)) = s.split_once('-') {
        let (lo, hi) = (parse_addr(a, env)?, parse_addr(b, env)?);
        return (lo <= hi).then_some((Range { lo, hi }, alloc));
    }
    let a = parse_addr(s, env)?;
    Some((Range { lo: a, hi: a }, alloc))
}

fn parse_port(s: &str) -> Option<u32> {
    s.parse::<u16>().ok().map(u32::from)
}

/// A source port or range `L-H`, with an optional allocation suffix.
fn parse_port_range(s: &str) -> Option<(Range, Option<Alloc>)> {
    let (s, alloc) = strip_suffix(s);
    if let Some((a, b)) = s.split_once('-') {
        let (lo, hi) = (parse_port(a)?, parse_port(b)?);
        return (lo <= hi).then_some((Range { lo, hi }, alloc));
    }
    let p = parse_port(s)?;
    Some((Range { lo: p, hi: p }, alloc))
}

impl Pattern {
    /// Parses a pattern's fields: `SADDR SPORT DADDR DPORT`, `SADDR
    /// DADDR`, or `SADDR DADDR SPORT` (an address pair and a source port
    /// range: ICMPPingRewriter's identifiers). Errors are Click's words:
    /// `bad source address`, `bad source port`, `bad destination
    /// address`, `bad destination port`.
    pub fn parse(fields: &[&str], env: &ArgEnv) -> Result<Pattern, String> {
        let (sa, sp, da, dp) = match fields {
            [sa, sp, da, dp] => (*sa, *sp, *da, *dp),
            [sa, da] => (*sa, "-", *da, "-"),
            [sa, da, sp] => (*sa, *sp, *da, "-"),
            _ => return Err("syntax error".into()),
        };
        let mut alloc = None;
        let saddr = if sa == "-" {
            None
        } else {
            let (r, a) = parse_addr_range(sa, env).ok_or("bad source address")?;
            alloc = alloc.or(a);
            Some(r)
        };
        let sport = if sp == "-" {
            None
        } else {
            let (r, a) = parse_port_range(sp).ok_or("bad source port")?;
            alloc = alloc.or(a);
            Some(r)
        };
        let daddr = if da == "-" {
            None
        } else {
            Some(parse_addr(da, env).ok_or("bad destination address")?)
        };
        let dport = if dp == "-" {
            None
        } else {
            Some(parse_port(dp).ok_or("bad destination port")? as u16)
        };
        // Without a suffix a port range prefers the packet's own port; an
        // address range alone is searched from a random point.
        let alloc = alloc.unwrap_or(if sport.is_some_and(|r| r.len() > 1) {
            Alloc::SameFirst
        } else {
            Alloc::Random
        });
        Ok(Pattern {
            saddr,
            sport,
            daddr,
            dport,
            alloc,
            two_fields: fields.len() == 2,
            cursor: AtomicU64::new(0),
            users: AtomicU64::new(0),
        })
    }

    /// Number of distinct (source address, source port) choices.
    pub fn choices(&self) -> u64 {
        self.saddr.map_or(1, |r| r.len()) * self.sport.map_or(1, |r| r.len())
    }

    /// The `k`-th choice applied to `orig`.
    #[inline]
    fn choice(&self, orig: FlowId, k: u64) -> FlowId {
        let np = self.sport.map_or(1, |r| r.len());
        let mut f = orig;
        if let Some(r) = self.saddr {
            f.saddr = r.lo + (k / np) as u32;
        }
        if let Some(r) = self.sport {
            f.sport = (r.lo + (k % np) as u32) as u16;
        }
        if let Some(a) = self.daddr {
            f.daddr = a;
        }
        if let Some(p) = self.dport {
            f.dport = p;
        }
        f
    }

    /// Candidate rewritten flows for `orig`, in the order this pattern's
    /// allocation tries them, at most `limit` of them. `draw(n)` is a
    /// random choice in 0..n; it is called only when the allocation needs
    /// it, as Click's rewriters draw: for a random start, once the
    /// packet's own port (if preferred) is found taken.
    pub fn candidates<'a>(
        &'a self,
        orig: FlowId,
        draw: &'a mut dyn FnMut(u64) -> u64,
        limit: u64,
    ) -> Candidates<'a> {
        let n = self.choices();
        let mut first = None;
        let start = match self.alloc {
            Alloc::Random => None,
            Alloc::Sequential => Some(self.cursor.fetch_add(1, Ordering::Relaxed) % n),
            Alloc::SameFirst => {
                // The packet's own source port first (with its own address
                // if that is in range too, else a random one of the range).
                if let Some(pr) = self.sport.filter(|r| r.contains(u32::from(orig.sport))) {
                    let na = self.saddr.map_or(1, |r| r.len());
                    let ai = match self.saddr {
                        Some(r) if r.contains(orig.saddr) => u64::from(orig.saddr - r.lo),
                        _ if na > 1 => draw(na),
                        _ => 0,
                    };
                    first = Some(ai * pr.len() + u64::from(orig.sport as u32 - pr.lo));
                }
                None
            }
        };
        Candidates {
            p: self,
            orig,
            first,
            start,
            draw,
            k: 0,
            n: n.min(limit),
            total: n,
        }
    }

    /// Where sequential allocation goes next, after a success at `k`.
    pub fn advance(&self, k: u64) {
        if self.alloc == Alloc::Sequential {
            self.cursor.store(k + 1, Ordering::Relaxed);
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As Click prints patterns: ranges as L-H, no allocation suffix, a
        // source port range covering every port as `-`, and a pattern
        // written as `SADDR DADDR` in that form.
        let addr = |a: u32| Ipv4Addr::from(a).to_string();
        let sa = match self.saddr {
            None => "-".to_string(),
            Some(r) if r.lo == r.hi => addr(r.lo),
            Some(r) => format!("{}-{}", addr(r.lo), addr(r.hi)),
        };
        let da = self.daddr.map_or("-".to_string(), addr);
        if self.two_fields {
            return write!(f, "{sa} {da}");
        }
        let sp = match self.sport {
            None => "-".to_string(),
            Some(r) if r.lo == 0 && r.hi == 65535 => "-".to_string(),
            Some(r) if r.lo == r.hi => r.lo.to_string(),
            Some(r) => format!("{}-{}", r.lo, r.hi),
        };
        let dp = self.dport.map_or("-".to_string(), |p| p.to_string());
        write!(f, "{sa} {sp} {da} {dp}")
    }
}

/// Candidates of one allocation (see [`Pattern::candidates`]): the
/// rewritten flow and its index in the pattern's choices.
pub struct Candidates<'a> {
    p: &'a Pattern,
    orig: FlowId,
    first: Option<u64>,
    /// Where the search of the range starts (drawn when first needed).
    start: Option<u64>,
    draw: &'a mut dyn FnMut(u64) -> u64,
    k: u64,
    n: u64,
    total: u64,
}

impl Iterator for Candidates<'_> {
    type Item = (FlowId, u64);
    fn next(&mut self) -> Option<(FlowId, u64)> {
        if let Some(i) = self.first.take() {
            return Some((self.p.choice(self.orig, i), i));
        }
        if self.k >= self.n {
            return None;
        }
        let total = self.total;
        let start = *self.start.get_or_insert_with(|| (self.draw)(total));
        let i = (start + self.k) % total;
        self.k += 1;
        Some((self.p.choice(self.orig, i), i))
    }
}

/// An input specification as written (names resolved at initialization).
#[derive(Debug)]
pub enum SpecText {
    Drop,
    Pass(usize),
    Keep(usize, usize),
    Pattern(std::sync::Arc<Pattern>, usize, usize),
    /// `pattern NAME FOUTPUT ROUTPUT` (or `NAME FOUTPUT ROUTPUT`): a
    /// pattern of an IPRewriterPatterns.
    Named(String, usize, usize),
    /// `ELEMENTNAME`: a mapper element.
    Mapper(String),
}

/// An output port of an input specification; `what` names it in the
/// error (`forward`, `reply`).
fn parse_output(s: &str, noutputs: usize, what: &str) -> Result<usize, String> {
    let o: usize = s.parse().map_err(|_| format!("bad {what} port"))?;
    if o >= noutputs {
        return Err("output port out of range".into());
    }
    Ok(o)
}

fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '@'))
}

/// Parses one input specification, as Click's rewriters take them:
/// `drop`/`discard`, `pass [OUTPUT]`/`nochange [OUTPUT]`, `keep FOUTPUT
/// ROUTPUT`, `pattern FIELDS FOUTPUT ROUTPUT` (FIELDS as
/// [`Pattern::parse`] takes them, or the NAME of an IPRewriterPatterns
/// pattern), `NAME FOUTPUT ROUTPUT`, or a mapper's element name. Errors
/// are Click's words (`bad source port`, `output port out of range`...).
pub fn parse_spec(s: &str, noutputs: usize, env: &ArgEnv) -> Result<SpecText, String> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let fwd = |x: &str| parse_output(x, noutputs, "forward");
    let rev = |x: &str| parse_output(x, noutputs, "reply");
    match w.as_slice() {
        [] => Err("empty input specification".into()),
        ["drop"] | ["discard"] => Ok(SpecText::Drop),
        ["pass" | "nochange"] => Ok(SpecText::Pass(fwd("0")?)),
        ["pass" | "nochange", o] => Ok(SpecText::Pass(fwd(o)?)),
        ["pass" | "nochange", ..] => Err("syntax error, expected 'nochange [OUTPUT]'".into()),
        ["keep", f, r] => Ok(SpecText::Keep(fwd(f)?, rev(r)?)),
        ["keep", ..] => Err("syntax error, expected 'keep FOUTPUT ROUTPUT'".into()),
        ["pattern", name, f, r] if is_name(name) => {
            Ok(SpecText::Named(name.to_string(), fwd(f)?, rev(r)?))
        }
        ["pattern", rest @ ..] if (4..=6).contains(&rest.len()) => {
            let n = rest.len() - 2;
            let p = Pattern::parse(&rest[..n], env)?;
            Ok(SpecText::Pattern(
                std::sync::Arc::new(p),
                fwd(rest[n])?,
                rev(rest[n + 1])?,
            ))
        }
        ["pattern", ..] => Err("syntax error".into()),
        [name, f, r] if is_name(name) => Ok(SpecText::Named(name.to_string(), fwd(f)?, rev(r)?)),
        [name] if is_name(name) => Ok(SpecText::Mapper(name.to_string())),
        _ => Err("unknown specification".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    fn env() -> ArgEnv {
        ArgEnv::default()
    }

    fn fid() -> FlowId {
        FlowId::new(
            Ipv4Addr::new(10, 0, 0, 5),
            5555,
            Ipv4Addr::new(2, 0, 0, 2),
            80,
        )
    }

    #[test]
    fn parses_fields_ranges_prefixes_and_suffixes() {
        let p = Pattern::parse(&["1.0.0.1", "1024-65535", "-", "-"], &env()).unwrap();
        assert_eq!(
            p.saddr,
            Some(Range {
                lo: 0x0100_0001,
                hi: 0x0100_0001
            })
        );
        assert_eq!(
            p.sport,
            Some(Range {
                lo: 1024,
                hi: 65535
            })
        );
        // A port range without a suffix prefers the packet's own port.
        assert_eq!(p.alloc, Alloc::SameFirst);
        assert_eq!(p.choices(), 64512);
        let p = Pattern::parse(&["1.0.0.0/24", "10-19#", "3.0.0.3", "99"], &env()).unwrap();
        assert_eq!(p.saddr.unwrap().len(), 254);
        assert_eq!(p.alloc, Alloc::Sequential);
        assert_eq!((p.daddr, p.dport), (Some(0x0300_0003), Some(99)));
        // `?`: random; an address range alone: random.
        let p = Pattern::parse(&["-", "5-9?", "-", "-"], &env()).unwrap();
        assert_eq!(p.alloc, Alloc::Random);
        let p = Pattern::parse(&["1.0.0.1-1.0.0.4", "-", "-", "-"], &env()).unwrap();
        assert_eq!(p.alloc, Alloc::Random);
        assert_eq!(p.choices(), 4);
        // Two fields (SADDR DADDR) and three (SADDR DADDR SPORT).
        let p = Pattern::parse(&["1.0.0.1", "3.0.0.3"], &env()).unwrap();
        assert_eq!((p.sport, p.daddr), (None, Some(0x0300_0003)));
        let p = Pattern::parse(&["1.0.0.1", "-", "0-65535#"], &env()).unwrap();
        assert_eq!((p.sport.unwrap().len(), p.daddr), (65536, None));
        // Click's words for each bad field.
        for (bad, want) in [
            (
                &["1.0.0.9-1.0.0.1", "-", "-", "-"][..],
                "bad source address",
            ),
            (&["x", "-", "-", "-"], "bad source address"),
            (&["1.0.0.0/40", "-", "-", "-"], "bad source address"),
            (&["-", "70000", "-", "-"], "bad source port"),
            (&["-", "9-3", "-", "-"], "bad source port"),
            (&["-", "1x", "-", "-"], "bad source port"),
            (&["-", "-", "1.2.3", "-"], "bad destination address"),
            (&["-", "-", "-", "65536"], "bad destination port"),
            (&["-"], "syntax error"),
        ] {
            assert_err(Pattern::parse(bad, &env()), want);
        }
    }

    #[test]
    fn prints_as_click_does() {
        let show = |f: &[&str]| Pattern::parse(f, &env()).unwrap().to_string();
        assert_eq!(show(&["1.0.0.1", "1", "-", "-"]), "1.0.0.1 1 - -");
        assert_eq!(
            show(&["1.0.0.1", "1-65535#", "-", "-"]),
            "1.0.0.1 1-65535 - -"
        );
        assert_eq!(show(&["1.0.0.1", "0-65535", "-", "-"]), "1.0.0.1 - - -");
        assert_eq!(show(&["1.0.0.1/24", "-"]), "1.0.0.1-1.0.0.254 -");
        assert_eq!(show(&["1.0.0.1/8", "-"]), "1.0.0.1-1.255.255.254 -");
        assert_eq!(
            show(&["2.0.0.2", "3.0.0.3", "5-6"]),
            "2.0.0.2 5-6 3.0.0.3 -"
        );
    }

    #[test]
    fn own_port_first_then_random() {
        let p = Pattern::parse(&["1.0.0.1", "1024-65535", "-", "-"], &env()).unwrap();
        let mut d = |n| 99 % n;
        let mut c = p.candidates(fid(), &mut d, 3);
        let (f, _) = c.next().unwrap();
        assert_eq!(
            (f.saddr, f.sport),
            (0x0100_0001, 5555),
            "own port, new address"
        );
        let low = FlowId { sport: 80, ..fid() };
        let firsts: std::collections::HashSet<u16> = (0..20u64)
            .map(|r| {
                p.candidates(low, &mut |n| (r * 7919) % n, 1)
                    .next()
                    .unwrap()
                    .0
                    .sport
            })
            .collect();
        assert!(firsts.len() > 1, "out of range: random, {firsts:?}");
    }

    /// Like Click's, a pattern preferring the packet's own port draws only
    /// once that port is found taken: a choice that finds it free leaves
    /// the generator as it was (so the draws that follow are Click's).
    #[test]
    fn the_own_port_is_tried_before_any_draw() {
        let p = Pattern::parse(&["1.0.0.1", "1024-65535", "-", "-"], &env()).unwrap();
        let draws = std::cell::Cell::new(0);
        let mut draw = |n: u64| {
            draws.set(draws.get() + 1);
            n / 2
        };
        let first = p.candidates(fid(), &mut draw, 5).next().unwrap().0;
        assert_eq!(first.sport, 5555);
        assert_eq!(draws.get(), 0, "the own port needs no draw");
        let c: Vec<u16> = p
            .candidates(fid(), &mut draw, 3)
            .map(|(f, _)| f.sport)
            .collect();
        assert_eq!(c, [5555, 1024 + 32256, 1024 + 32257, 1024 + 32258]);
        assert_eq!(draws.get(), 1, "one draw, once the own port is passed");
        let mut draw = |_| unreachable!("a sequential pattern does not draw");
        let q = Pattern::parse(&["1.0.0.1", "100-103#", "-", "-"], &env()).unwrap();
        assert_eq!(q.candidates(fid(), &mut draw, 4).count(), 4);
    }

    #[test]
    fn sequential_candidates_walk_the_range() {
        let p = Pattern::parse(&["1.0.0.1", "100-103#", "-", "-"], &env()).unwrap();
        let c: Vec<u16> = p
            .candidates(fid(), &mut |_| 0, 10)
            .map(|(f, _)| f.sport)
            .collect();
        assert_eq!(c, vec![100, 101, 102, 103]);
        p.advance(1);
        let c: Vec<u16> = p
            .candidates(fid(), &mut |_| 0, 10)
            .map(|(f, _)| f.sport)
            .collect();
        assert_eq!(c, vec![102, 103, 100, 101]);
        let f = p.candidates(fid(), &mut |_| 0, 1).next().unwrap().0;
        assert_eq!(f.saddr, 0x0100_0001);
        assert_eq!((f.daddr, f.dport), (fid().daddr, 80));
    }

    #[test]
    fn same_first_tries_own_port_then_others() {
        let p = Pattern::parse(&["-", "5000-6000", "-", "-"], &env()).unwrap();
        let c: Vec<u16> = p
            .candidates(fid(), &mut |n| 7 % n, 3)
            .map(|(f, _)| f.sport)
            .collect();
        assert_eq!(c[0], 5555);
        assert_eq!(c.len(), 4);
        let out_of_range = FlowId { sport: 80, ..fid() };
        let c: Vec<u16> = p
            .candidates(out_of_range, &mut |n| 7 % n, 3)
            .map(|(f, _)| f.sport)
            .collect();
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|&x| (5000..=6000).contains(&x)));
    }

    #[test]
    fn random_candidates_cover_the_range_once() {
        let p = Pattern::parse(&["1.0.0.1-1.0.0.2", "10-14?", "-", "-"], &env()).unwrap();
        let mut seen: Vec<(u32, u16)> = p
            .candidates(fid(), &mut |n| 12345 % n, 100)
            .map(|(f, _)| (f.saddr, f.sport))
            .collect();
        assert_eq!(seen.len(), 10);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 10);
    }

    #[test]
    fn input_specs() {
        let e = env();
        assert!(matches!(parse_spec("drop", 2, &e), Ok(SpecText::Drop)));
        assert!(matches!(parse_spec("discard", 2, &e), Ok(SpecText::Drop)));
        assert!(matches!(parse_spec("pass 1", 2, &e), Ok(SpecText::Pass(1))));
        assert!(matches!(parse_spec("pass", 2, &e), Ok(SpecText::Pass(0))));
        assert!(matches!(
            parse_spec("nochange 1", 2, &e),
            Ok(SpecText::Pass(1))
        ));
        assert!(matches!(
            parse_spec("keep 0 1", 2, &e),
            Ok(SpecText::Keep(0, 1))
        ));
        assert!(matches!(
            parse_spec("pattern 1.0.0.1 1024-65535 - - 0 1", 2, &e),
            Ok(SpecText::Pattern(_, 0, 1))
        ));
        assert!(matches!(
            parse_spec("pattern 1.0.0.1 - 0 1", 2, &e),
            Ok(SpecText::Pattern(..))
        ));
        // Three fields: ICMPPingRewriter's identifier range.
        assert!(matches!(
            parse_spec("pattern 2.0.0.2 - 0-65535 0 0", 1, &e),
            Ok(SpecText::Pattern(_, 0, 0))
        ));
        // A named pattern, with or without `pattern`; one output is enough
        // for `0 0`.
        assert!(matches!(
            parse_spec("pattern pat 0 0", 1, &e),
            Ok(SpecText::Named(n, 0, 0)) if n == "pat"
        ));
        assert!(matches!(
            parse_spec("to_world 0 1", 2, &e),
            Ok(SpecText::Named(..))
        ));
        assert!(matches!(parse_spec("rr", 2, &e), Ok(SpecText::Mapper(..))));
        for (bad, want) in [
            ("pass 2", "output port out of range"),
            ("pattern 1.0.0.1 - - - 0 5", "output port out of range"),
            ("pattern 1.0.0.1 - - - x 1", "bad forward port"),
            ("keep 0 y", "bad reply port"),
            ("pattern 1.0.0.1 1x - - 0 1", "bad source port"),
            ("pattern 1.0.0.x - 0 1", "bad source address"),
            ("pattern 1.0.0.1 - - - 0 1 2", "syntax error"),
            ("pass 0 1", "syntax error, expected 'nochange [OUTPUT]'"),
            ("keep 0", "syntax error, expected 'keep FOUTPUT ROUTPUT'"),
            ("", "empty input specification"),
            ("a b c d e", "unknown specification"),
        ] {
            assert_err(parse_spec(bad, 2, &e), want);
        }
    }
}
