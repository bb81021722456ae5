//! # AggregateFilter
//!
//! AggregateFilter(ACTION_1 AGGREGATES, ..., ACTION_N AGGREGATES)
//!
//! Filters packets based on their aggregate annotation.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Each argument is a filter: an ACTION followed by AGGREGATES. A packet
//! is tested against the filters in order and handled as the first filter
//! whose AGGREGATES hold its aggregate annotation says. A packet that
//! matches no filter is dropped (reason `no filter matched`).
//!
//! An ACTION is an output port number; `allow`, which is output 0; or
//! `drop` or `deny`, which drop the packet (reason `denied`). A port
//! number must be that of an output the configuration has.
//!
//! AGGREGATES is a space-separated list of aggregate values (unsigned
//! 32-bit integers) and ranges (`0-98`, both ends included). The words
//! `all` and `-` stand for every aggregate.
//!
//! AggregateFilter warns about a filter that matches no packets and about
//! components of AGGREGATES an earlier filter already covers (they are
//! ignored).
//!
//! Handlers: none.
//!
//! Example: drop two aggregates of AggregateIPFlows's output.
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true)
//!         -> AggregateIPFlows(ICMP true)
//!         -> AggregateFilter(drop 1093 3500, allow all)
//!         -> ...

use super::aggregate;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

/// Why AggregateFilter drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["denied", "no filter matched"];
const DENIED: u8 = 0;
const NO_MATCH: u8 = 1;

/// What a filter does with the packets it matches: an output, or `None`
/// to drop them.
type Act = Option<u16>;

pub struct AggregateFilter {
    /// Disjoint ranges `(low, high, action)`, sorted, both ends included.
    ranges: Vec<(u32, u32, Act)>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregateFilter", "1/-", "h", make)
        .stateless()
        .metadata_only()
        .drop_reasons(REASONS)
}

/// Parses one AGGREGATES component: `N`, `A-B`, `all` or `-`.
fn component(w: &str) -> Option<(u32, u32)> {
    if w == "all" || w == "-" {
        return Some((0, u32::MAX));
    }
    let num = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    match w.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            (a <= b).then_some((a, b))
        }
        None => num(w).map(|v| (v, v)),
    }
}

/// Adds `[lo, hi]` for `act` where no earlier range covers it. Returns
/// whether any part was new.
fn insert(ranges: &mut Vec<(u32, u32, Act)>, lo: u32, hi: u32, act: Act) -> bool {
    // The gaps of [lo, hi] between the ranges already there.
    let mut gaps = Vec::new();
    let mut at = u64::from(lo);
    for &(a, b, _) in ranges.iter() {
        if u64::from(b) < at || a > hi {
            continue;
        }
        if u64::from(a) > at {
            gaps.push((at as u32, a - 1));
        }
        at = u64::from(b) + 1;
        if at > u64::from(hi) {
            break;
        }
    }
    if at <= u64::from(hi) {
        gaps.push((at as u32, hi));
    }
    let any = !gaps.is_empty();
    ranges.extend(gaps.into_iter().map(|(a, b)| (a, b, act)));
    ranges.sort_unstable_by_key(|r| r.0);
    any
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateFilter, String> {
    let mut a = cx.args();
    let filters = a.rest_all();
    a.complete()?;
    let mut ranges = Vec::new();
    for (i, f) in filters.iter().enumerate() {
        let f = f.trim();
        let mut words = f.split_whitespace();
        let act_word = words.next().unwrap_or("");
        let act: Act = match act_word {
            "allow" => Some(0),
            "drop" | "deny" => None,
            w => match w.parse::<u16>() {
                Ok(n) if usize::from(n) < cx.noutputs => Some(n),
                Ok(n) => {
                    return Err(format!(
                        "filter {i}: output {n} out of range ({} outputs)",
                        cx.noutputs
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "filter {i}: unknown action '{w}' (expected 'allow', 'drop', 'deny' or an output number)"
                    ))
                }
            },
        };
        let comps: Vec<&str> = words.collect();
        if comps.is_empty() {
            return Err(format!("filter {i}: missing AGGREGATES after '{act_word}'"));
        }
        let mut matched = false;
        for w in comps {
            let (lo, hi) = component(w).ok_or_else(|| {
                format!("filter {i}: expected an aggregate, a range A-B, 'all' or '-', not '{w}'")
            })?;
            if insert(&mut ranges, lo, hi, act) {
                matched = true;
            } else {
                cx.warn(&format!(
                    "filter {i}: '{w}' ignored: an earlier filter matches it"
                ));
            }
        }
        if !matched {
            cx.warn(&format!("filter {i} ('{f}') matches no packets"));
        }
    }
    Ok(AggregateFilter { ranges })
}

impl AggregateFilter {
    /// The action for aggregate `v`, `None` if no filter matches.
    #[inline]
    fn lookup(&self, v: u32) -> Option<Act> {
        let i = self.ranges.partition_point(|r| r.0 <= v);
        let r = self.ranges.get(i.checked_sub(1)?)?;
        (v <= r.1).then_some(r.2)
    }
}

impl Action for AggregateFilter {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.lookup(aggregate(p)) {
            Some(Some(port)) => Verdict::Out(usize::from(port)),
            Some(None) => Verdict::DropFor(DENIED),
            None => Verdict::DropFor(NO_MATCH),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{aggregate, set_aggregate};
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn agg(v: u32) -> Packet {
        let mut p = pkt(&[0; 20]);
        set_aggregate(&mut p, v);
        p
    }

    #[test]
    fn first_matching_filter_decides() {
        let h = harness("AggregateFilter(drop 5, 1 3-10 20, allow 0-4 100-200)", 2);
        h.push(
            0,
            [0, 3, 5, 7, 10, 11, 20, 150, 201, u32::MAX].map(agg).into(),
        );
        let o0: Vec<u32> = h.output(0).iter().map(aggregate).collect();
        let o1: Vec<u32> = h.output(1).iter().map(aggregate).collect();
        assert_eq!(o0, [0, 150]);
        // 3 matched filter 1 before filter 2's 0-4; 5 was dropped first.
        assert_eq!(o1, [3, 7, 10, 20]);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "denied 1\nno filter matched 3\n"
        );
    }

    #[test]
    fn all_and_dash_match_everything() {
        for decl in [
            "AggregateFilter(deny 0, allow all)",
            "AggregateFilter(drop 0, 0 -)",
        ] {
            let h = harness(decl, 1);
            h.push(0, [0, 1, u32::MAX].map(agg).into());
            let o: Vec<u32> = h.output(0).iter().map(aggregate).collect();
            assert_eq!(o, [1, u32::MAX], "{decl}");
        }
    }

    #[test]
    fn bad_filters_are_errors() {
        for (decl, want) in [
            (
                "AggregateFilter(2 1)",
                "filter 0: output 2 out of range (2 outputs)",
            ),
            (
                "AggregateFilter(allow)",
                "filter 0: missing AGGREGATES after 'allow'",
            ),
            ("AggregateFilter(allow 5-3)", "not '5-3'"),
            ("AggregateFilter(allow x)", "not 'x'"),
            ("AggregateFilter(allow 4294967296)", "not '4294967296'"),
            ("AggregateFilter(pass 1)", "unknown action 'pass'"),
        ] {
            assert_err(try_harness(decl, 2), want);
        }
    }

    #[test]
    fn ranges_fill_only_the_gaps() {
        let mut r = Vec::new();
        assert!(super::insert(&mut r, 10, 20, Some(0)));
        assert!(super::insert(&mut r, 0, 30, Some(1)));
        assert!(!super::insert(&mut r, 12, 18, None));
        assert!(super::insert(&mut r, 0, u32::MAX, None));
        assert_eq!(
            r,
            [
                (0, 9, Some(1)),
                (10, 20, Some(0)),
                (21, 30, Some(1)),
                (31, u32::MAX, None)
            ]
        );
    }
}
