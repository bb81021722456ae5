// The mapper elements' shared engine: a list of patterns, each with its
// forward and reply outputs, and a rule choosing one for a new flow.

use super::flow::FlowId;
use super::pattern::Pattern;
use paraclick_runtime::{ConfigCx, Element};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub type Choice = (Arc<Pattern>, usize, usize);

pub enum Rule {
    /// The next pattern in turn.
    RoundRobin(AtomicUsize),
    /// Consistent hashing of the source address: ring points (hash,
    /// pattern index), sorted.
    SourceHash(Vec<(u64, usize)>, u64),
}

pub struct MapperCore {
    patterns: Vec<Choice>,
    rule: Rule,
}

impl MapperCore {
    pub fn patterns(&self) -> &[Choice] {
        &self.patterns
    }

    /// The pattern for a new flow.
    pub fn choose(&self, id: FlowId) -> &Choice {
        let i = match &self.rule {
            Rule::RoundRobin(n) => n.fetch_add(1, Ordering::Relaxed) % self.patterns.len(),
            Rule::SourceHash(ring, seed) => {
                let h = mix(u64::from(id.saddr), *seed);
                let at = ring.partition_point(|(x, _)| *x < h);
                ring[at % ring.len()].1
            }
        };
        &self.patterns[i]
    }
}

fn mix(x: u64, seed: u64) -> u64 {
    let m = u128::from(x ^ seed) * 0x9E37_79B9_7F4A_7C15u128;
    let y = (m as u64) ^ ((m >> 64) as u64);
    let m = u128::from(y) * 0xD6E8_FEB8_6659_FD93u128;
    (m as u64) ^ ((m >> 64) as u64)
}

/// The element type of both mapper classes (one type, so rewriters find
/// either by name).
pub struct Mapper {
    core: Arc<MapperCore>,
}

impl Mapper {
    pub fn core(&self) -> Arc<MapperCore> {
        self.core.clone()
    }
}

impl Element for Mapper {}

fn parse_pattern(s: &str, cx: &ConfigCx<'_>) -> Result<Choice, String> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let (fields, outs) = match w.len() {
        6 => (&w[..4], &w[4..]),
        4 => (&w[..2], &w[2..]),
        _ => {
            return Err(format!(
                "bad pattern '{s}' (SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT)"
            ))
        }
    };
    let p = Pattern::parse(fields, cx.env)?;
    let o = |x: &str| {
        x.parse::<usize>()
            .map_err(|_| format!("bad output port '{x}' in '{s}'"))
    };
    Ok((Arc::new(p), o(outs[0])?, o(outs[1])?))
}

pub fn make_round_robin(cx: &mut ConfigCx<'_>) -> Result<Mapper, String> {
    let texts = cx.args().rest_all();
    if texts.is_empty() {
        return Err("at least one pattern required".into());
    }
    let patterns = texts
        .iter()
        .map(|t| parse_pattern(t, cx))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Mapper {
        core: Arc::new(MapperCore {
            patterns,
            rule: Rule::RoundRobin(AtomicUsize::new(0)),
        }),
    })
}

fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

pub fn make_source_hash(cx: &mut ConfigCx<'_>) -> Result<Mapper, String> {
    let texts = cx.args().rest_all();
    let Some((first, rest)) = texts.split_first() else {
        return Err("missing NNODES SEED".into());
    };
    let w: Vec<&str> = first.split_whitespace().collect();
    let (nnodes, seed) = match w.as_slice() {
        [n, s] => (
            n.parse::<usize>()
                .ok()
                .filter(|&n| n > 0 && n <= 4096)
                .ok_or_else(|| format!("bad NNODES '{n}'"))?,
            parse_seed(s).ok_or_else(|| format!("bad SEED '{s}'"))?,
        ),
        _ => {
            return Err(format!(
                "first argument must be 'NNODES SEED', not '{first}'"
            ))
        }
    };
    if rest.is_empty() {
        return Err("at least one pattern required".into());
    }
    let patterns = rest
        .iter()
        .map(|t| parse_pattern(t, cx))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ring = Vec::new();
    for i in 0..patterns.len() {
        for v in 0..nnodes {
            ring.push((mix((i as u64) << 32 | v as u64, seed ^ 0x5151), i));
        }
    }
    ring.sort_unstable();
    Ok(Mapper {
        core: Arc::new(MapperCore {
            patterns,
            rule: Rule::SourceHash(ring, seed),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::args::ArgEnv;
    use std::net::Ipv4Addr;

    fn core(rule: Rule, n: usize) -> MapperCore {
        let patterns = (0..n)
            .map(|i| {
                let a = format!("1.0.0.{}", i + 1);
                (
                    Arc::new(Pattern::parse(&[&a, "-", "-", "-"], &ArgEnv::default()).unwrap()),
                    0,
                    1,
                )
            })
            .collect();
        MapperCore { patterns, rule }
    }

    fn fid(a: u32) -> FlowId {
        FlowId::new(Ipv4Addr::from(a), 1, Ipv4Addr::new(2, 0, 0, 2), 80)
    }

    #[test]
    fn seeds_decimal_or_hex() {
        assert_eq!(parse_seed("7"), Some(7));
        assert_eq!(parse_seed("0xbadbeef"), Some(0xbadbeef));
        assert_eq!(parse_seed("x"), None);
    }

    #[test]
    fn round_robin_takes_turns() {
        let c = core(Rule::RoundRobin(AtomicUsize::new(0)), 3);
        let picks: Vec<u32> = (0..6)
            .map(|_| c.choose(fid(1)).0.saddr.unwrap().lo & 0xff)
            .collect();
        assert_eq!(picks, vec![1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn source_hash_is_stable_and_spreads() {
        let mut ring = Vec::new();
        for i in 0..4usize {
            for v in 0..32usize {
                ring.push((mix((i as u64) << 32 | v as u64, 7 ^ 0x5151), i));
            }
        }
        ring.sort_unstable();
        let c = core(Rule::SourceHash(ring, 7), 4);
        let mut counts = [0usize; 4];
        for a in 0..4000u32 {
            let x = c.choose(fid(0x0a00_0000 + a)).0.saddr.unwrap().lo & 0xff;
            let y = c.choose(fid(0x0a00_0000 + a)).0.saddr.unwrap().lo & 0xff;
            assert_eq!(x, y, "same source, same pattern");
            counts[(x - 1) as usize] += 1;
        }
        assert!(counts.iter().all(|&n| n > 400), "{counts:?}");
    }
}
