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
    /// From a random point (Click's default).
    Random,
    /// From where the previous allocation left off (`#`).
    Sequential,
    /// The packet's own value first if it is in range, else random (`?`).
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
        (r, Some(Alloc::SameFirst))
    } else {
        (s, None)
    }
}

fn parse_addr(s: &str, env: &ArgEnv) -> Result<u32, String> {
    Ipv4Addr::from_arg(s, env).map(u32::from)
}

fn parse_addr_range(s: &str, env: &ArgEnv) -> Result<(Range, Option<Alloc>), String> {
    let (s, alloc) = strip_suffix(s);
    if let Some((a, p)) = s.split_once('/') {
        let base = parse_addr(a, env)?;
        let pfx: u32 = p
            .parse()
            .ok()
            .filter(|&p| p <= 32)
            .ok_or_else(|| format!("bad address prefix '{s}'"))?;
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
        return Ok((r, alloc));
    }
    if let Some((a, b)) = s.split_once('-') {
        let (lo, hi) = (parse_addr(a, env)?, parse_addr(b, env)?);
        if lo > hi {
            return Err(format!("bad address range '{s}': low above high"));
        }
        return Ok((Range { lo, hi }, alloc));
    }
    let a = parse_addr(s, env)?;
    Ok((Range { lo: a, hi: a }, alloc))
}

fn parse_port(s: &str) -> Result<u32, String> {
    s.parse::<u16>()
        .map(u32::from)
        .map_err(|_| format!("bad port '{s}'"))
}

fn parse_port_range(s: &str) -> Result<(Range, Option<Alloc>), String> {
    let (s, alloc) = strip_suffix(s);
    if let Some((a, b)) = s.split_once('-') {
        let (lo, hi) = (parse_port(a)?, parse_port(b)?);
        if lo > hi {
            return Err(format!("bad port range '{s}': low above high"));
        }
        return Ok((Range { lo, hi }, alloc));
    }
    let p = parse_port(s)?;
    Ok((Range { lo: p, hi: p }, alloc))
}

impl Pattern {
    /// Parses `SADDR SPORT DADDR DPORT` (`fields.len() == 4`) or, for the
    /// address rewriters, `SADDR DADDR` (`fields.len() == 2`).
    pub fn parse(fields: &[&str], env: &ArgEnv) -> Result<Pattern, String> {
        let (sa, sp, da, dp) = match fields {
            [sa, sp, da, dp] => (*sa, *sp, *da, *dp),
            [sa, da] => (*sa, "-", *da, "-"),
            _ => return Err(format!("bad pattern '{}'", fields.join(" "))),
        };
        let mut alloc = None;
        let saddr = if sa == "-" {
            None
        } else {
            let (r, a) = parse_addr_range(sa, env)?;
            alloc = alloc.or(a);
            Some(r)
        };
        let sport = if sp == "-" {
            None
        } else {
            let (r, a) = parse_port_range(sp)?;
            alloc = alloc.or(a);
            Some(r)
        };
        let daddr = if da == "-" {
            None
        } else {
            Some(parse_addr(da, env)?)
        };
        let dport = if dp == "-" {
            None
        } else {
            Some(parse_port(dp)? as u16)
        };
        Ok(Pattern {
            saddr,
            sport,
            daddr,
            dport,
            alloc: alloc.unwrap_or(Alloc::Random),
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
    /// allocation tries them, at most `limit` of them. `rand` is a random
    /// number from the calling thread.
    pub fn candidates(&self, orig: FlowId, rand: u64, limit: u64) -> Candidates<'_> {
        let n = self.choices();
        let mut first = None;
        let start = match self.alloc {
            Alloc::Random => rand % n,
            Alloc::Sequential => self.cursor.fetch_add(1, Ordering::Relaxed) % n,
            Alloc::SameFirst => {
                let in_a = self.saddr.is_none_or(|r| r.contains(orig.saddr));
                let in_p = self.sport.is_none_or(|r| r.contains(u32::from(orig.sport)));
                if in_a && in_p {
                    let np = self.sport.map_or(1, |r| r.len());
                    let ai = self.saddr.map_or(0, |r| u64::from(orig.saddr - r.lo));
                    let pi = self
                        .sport
                        .map_or(0, |r| u64::from(orig.sport as u32 - r.lo));
                    first = Some(ai * np + pi);
                }
                rand % n
            }
        };
        Candidates {
            p: self,
            orig,
            first,
            start,
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
        // As Click prints patterns: ranges as L-H, no allocation suffix.
        let addr = |a: u32| Ipv4Addr::from(a).to_string();
        let sa = match self.saddr {
            None => "-".to_string(),
            Some(r) if r.lo == r.hi => addr(r.lo),
            Some(r) => format!("{}-{}", addr(r.lo), addr(r.hi)),
        };
        let sp = match self.sport {
            None => "-".to_string(),
            Some(r) if r.lo == r.hi => r.lo.to_string(),
            Some(r) => format!("{}-{}", r.lo, r.hi),
        };
        let da = self.daddr.map_or("-".to_string(), addr);
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
    start: u64,
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
        let i = (self.start + self.k) % self.total;
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
    /// `NAME FOUTPUT ROUTPUT`: a pattern of an IPRewriterPatterns.
    Named(String, usize, usize),
    /// `ELEMENTNAME`: a mapper element.
    Mapper(String),
}

fn parse_output(s: &str, noutputs: usize) -> Result<usize, String> {
    let o: usize = s.parse().map_err(|_| format!("bad output port '{s}'"))?;
    if o >= noutputs {
        return Err(format!(
            "output port {o} out of range (element has {noutputs} outputs)"
        ));
    }
    Ok(o)
}

/// Parses one input specification. `pattern_fields` is 4 for the port
/// rewriters, 2 for the address rewriters.
pub fn parse_spec(
    s: &str,
    pattern_fields: usize,
    noutputs: usize,
    env: &ArgEnv,
) -> Result<SpecText, String> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let out = |x: &str| parse_output(x, noutputs);
    match w.as_slice() {
        [] => Err("empty input specification".into()),
        ["drop"] | ["discard"] => Ok(SpecText::Drop),
        ["pass"] => Ok(SpecText::Pass(out("0")?)),
        ["pass", o] => Ok(SpecText::Pass(out(o)?)),
        ["keep", f, r] => Ok(SpecText::Keep(out(f)?, out(r)?)),
        ["pattern", rest @ ..] => {
            if rest.len() != pattern_fields + 2 {
                return Err(format!(
                    "'{s}': pattern takes {pattern_fields} fields and two output ports"
                ));
            }
            let p = Pattern::parse(&rest[..pattern_fields], env)?;
            Ok(SpecText::Pattern(
                std::sync::Arc::new(p),
                out(rest[pattern_fields])?,
                out(rest[pattern_fields + 1])?,
            ))
        }
        [name, f, r] => Ok(SpecText::Named(name.to_string(), out(f)?, out(r)?)),
        [name] => Ok(SpecText::Mapper(name.to_string())),
        _ => Err(format!("bad input specification '{s}'")),
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
        assert_eq!(p.alloc, Alloc::Random);
        assert_eq!(p.choices(), 64512);
        let p = Pattern::parse(&["1.0.0.0/24", "10-19#", "3.0.0.3", "99"], &env()).unwrap();
        assert_eq!(p.saddr.unwrap().len(), 254);
        assert_eq!(p.alloc, Alloc::Sequential);
        assert_eq!((p.daddr, p.dport), (Some(0x0300_0003), Some(99)));
        let p = Pattern::parse(&["1.0.0.1-1.0.0.4?", "-", "-", "-"], &env()).unwrap();
        assert_eq!(p.alloc, Alloc::SameFirst);
        assert_eq!(p.choices(), 4);
        for (bad, want) in [
            (
                ["1.0.0.9-1.0.0.1", "-", "-", "-"],
                "bad address range '1.0.0.9-1.0.0.1': low above high",
            ),
            (["-", "70000", "-", "-"], "bad port '70000'"),
            (
                ["-", "9-3", "-", "-"],
                "bad port range '9-3': low above high",
            ),
            (["x", "-", "-", "-"], "expected IP address, not 'x'"),
            (
                ["1.0.0.0/40", "-", "-", "-"],
                "bad address prefix '1.0.0.0/40'",
            ),
        ] {
            assert_err(Pattern::parse(&bad, &env()), want);
        }
    }

    #[test]
    fn sequential_candidates_walk_the_range() {
        let p = Pattern::parse(&["1.0.0.1", "100-103#", "-", "-"], &env()).unwrap();
        let c: Vec<u16> = p.candidates(fid(), 0, 10).map(|(f, _)| f.sport).collect();
        assert_eq!(c, vec![100, 101, 102, 103]);
        p.advance(1);
        let c: Vec<u16> = p.candidates(fid(), 0, 10).map(|(f, _)| f.sport).collect();
        assert_eq!(c, vec![102, 103, 100, 101]);
        let f = p.candidates(fid(), 0, 1).next().unwrap().0;
        assert_eq!(f.saddr, 0x0100_0001);
        assert_eq!((f.daddr, f.dport), (fid().daddr, 80));
    }

    #[test]
    fn same_first_tries_own_port_then_others() {
        let p = Pattern::parse(&["-", "5000-6000?", "-", "-"], &env()).unwrap();
        let c: Vec<u16> = p.candidates(fid(), 7, 3).map(|(f, _)| f.sport).collect();
        assert_eq!(c[0], 5555);
        assert_eq!(c.len(), 4);
        let out_of_range = FlowId { sport: 80, ..fid() };
        let c: Vec<u16> = p
            .candidates(out_of_range, 7, 3)
            .map(|(f, _)| f.sport)
            .collect();
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|&x| (5000..=6000).contains(&x)));
    }

    #[test]
    fn random_candidates_cover_the_range_once() {
        let p = Pattern::parse(&["1.0.0.1-1.0.0.2", "10-14", "-", "-"], &env()).unwrap();
        let mut seen: Vec<(u32, u16)> = p
            .candidates(fid(), 12345, 100)
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
        assert!(matches!(parse_spec("drop", 4, 2, &e), Ok(SpecText::Drop)));
        assert!(matches!(
            parse_spec("discard", 4, 2, &e),
            Ok(SpecText::Drop)
        ));
        assert!(matches!(
            parse_spec("pass 1", 4, 2, &e),
            Ok(SpecText::Pass(1))
        ));
        assert!(matches!(
            parse_spec("keep 0 1", 4, 2, &e),
            Ok(SpecText::Keep(0, 1))
        ));
        assert!(matches!(
            parse_spec("pattern 1.0.0.1 1024-65535 - - 0 1", 4, 2, &e),
            Ok(SpecText::Pattern(_, 0, 1))
        ));
        assert!(matches!(
            parse_spec("pattern 1.0.0.1 - 0 1", 2, 2, &e),
            Ok(SpecText::Pattern(..))
        ));
        assert!(matches!(
            parse_spec("to_world 0 1", 4, 2, &e),
            Ok(SpecText::Named(..))
        ));
        assert!(matches!(
            parse_spec("rr", 4, 2, &e),
            Ok(SpecText::Mapper(..))
        ));
        assert!(parse_spec("pass 2", 4, 2, &e)
            .unwrap_err()
            .contains("out of range"));
        assert_err(
            parse_spec("pattern 1.0.0.1 - - 0 1", 4, 2, &e),
            "'pattern 1.0.0.1 - - 0 1': pattern takes 4 fields and two output ports",
        );
        assert_err(
            parse_spec("keep 0", 4, 2, &e),
            "bad input specification 'keep 0'",
        );
        assert_err(parse_spec("", 4, 2, &e), "empty input specification");
        assert_err(
            parse_spec("a b c d e", 4, 2, &e),
            "bad input specification 'a b c d e'",
        );
    }
}
