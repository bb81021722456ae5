//! # AggregateIPAddrPair
//!
//! AggregateIPAddrPair([keywords TIMEOUT, REAP])
//!
//! Sets the aggregate annotation based on the IP source/destination
//! address pair.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Sets the aggregate annotation of every passing packet (which needs its
//! IP header annotation) to a number for its address pair. Packets with
//! the same source and destination get the same number, and so do their
//! replies (source and destination swapped). The paint annotation says
//! the direction: 0 for the direction of the pair's first packet, 1 for
//! the other. Numbers count up from 1; different pairs get different
//! numbers. Packets without an IPv4 header go to output 1, or are dropped
//! (reason `no IP header`) if it is not connected.
//!
//! Keywords:
//! - `TIMEOUT` (time, default none): an address pair not seen for this
//!   long (in packet time: timestamps) is forgotten; when it occurs again
//!   it gets a new number. Without TIMEOUT pairs never expire.
//! - `REAP` (time, default 20 minutes): how often, in packet time,
//!   expired pairs are collected.
//!
//! Handlers:
//! - `clear` (write): forget every pair; later packets get new numbers.
//! - `npairs` (read): address pairs known now (a paraclick addition).
//!
//! Click's AggregateIPAddrPair also notifies AggregateListeners of new
//! and deleted aggregates; paraclick has no such listeners.
//!
//! Example:
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true)
//!         -> AggregateIPAddrPair -> ac :: AggregateCounter -> Discard;

use super::{ip_header, set_aggregate};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Why AggregateIPAddrPair drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["no IP header"];
const NO_IP: u8 = 0;

struct Pair {
    agg: u32,
    /// The source of the pair's first packet.
    first_src: u32,
    last: i64,
}

struct State {
    /// (lower address, higher address) -> the pair.
    pairs: HashMap<(u32, u32), Pair>,
    next: u32,
    last_reap: Option<i64>,
}

pub struct AggregateIPAddrPair {
    timeout: Option<i64>,
    reap: i64,
    second: bool,
    st: Mutex<State>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregateIPAddrPair", "1/1-2", "a/ah", make)
        .shared("one table numbering address pairs for all flows")
        .metadata_only()
        .drop_reasons(REASONS)
}

fn ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateIPAddrPair, String> {
    let mut a = cx.args();
    let timeout = a.read::<Duration>("TIMEOUT");
    let reap = a.read::<Duration>("REAP");
    a.complete()?;
    Ok(AggregateIPAddrPair {
        timeout: timeout.filter(|d| !d.is_zero()).map(ns),
        reap: reap.map_or(20 * 60 * 1_000_000_000, ns),
        second: cx.noutputs > 1,
        st: Mutex::new(State {
            pairs: HashMap::new(),
            next: 1,
            last_reap: None,
        }),
    })
}

impl AggregateIPAddrPair {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// (aggregate, paint) of a packet from `src` to `dst` at `now`.
    fn pair(&self, src: u32, dst: u32, now: i64) -> (u32, u8) {
        let mut st = self.lock();
        if let Some(t) = self.timeout {
            let due = st
                .last_reap
                .is_none_or(|r| now.saturating_sub(r) >= self.reap);
            if due {
                st.last_reap = Some(now);
                st.pairs.retain(|_, p| now.saturating_sub(p.last) <= t);
            }
        }
        let key = (src.min(dst), src.max(dst));
        let alive = st
            .pairs
            .get(&key)
            .is_some_and(|p| self.timeout.is_none_or(|t| now.saturating_sub(p.last) <= t));
        if !alive {
            let agg = st.next;
            st.next = st.next.wrapping_add(1).max(1);
            st.pairs.insert(
                key,
                Pair {
                    agg,
                    first_src: src,
                    last: now,
                },
            );
        }
        let p = st.pairs.get_mut(&key).expect("pair just ensured");
        p.last = p.last.max(now);
        (p.agg, u8::from(p.first_src != src))
    }
}

impl Action for AggregateIPAddrPair {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("clear", |e, _, _| {
            let mut st = e.lock();
            st.pairs.clear();
            st.last_reap = None;
            Ok(())
        }),
        Handler::read("npairs", |e, _| e.lock().pairs.len().to_string()),
    ];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(ip) = ip_header(p) else {
            return if self.second {
                Verdict::Out(1)
            } else {
                Verdict::DropFor(NO_IP)
            };
        };
        let at = |i: usize| u32::from_be_bytes([ip[i], ip[i + 1], ip[i + 2], ip[i + 3]]);
        let (src, dst) = (at(12), at(16));
        let (agg, paint) = self.pair(src, dst, p.timestamp().0);
        set_aggregate(p, agg);
        p.anno_mut().paint = paint;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::aggregate;
    use crate::test_kit::*;
    use paraclick_packet::{Packet, Timestamp};

    fn ipp(s: &str, d: &str, sec: i64) -> Packet {
        let mut p = marked(&Ip::new(s, d, 17).udp(1, 2, b"x").bytes());
        p.set_timestamp(Timestamp::from_parts(sec, 0));
        p
    }

    fn annos(ps: &[Packet]) -> Vec<(u32, u8)> {
        ps.iter().map(|p| (aggregate(p), p.anno().paint)).collect()
    }

    #[test]
    fn numbers_pairs_and_paints_directions() {
        let h = harness("AggregateIPAddrPair", 2);
        h.push(
            0,
            vec![
                ipp("2.0.0.2", "1.0.0.1", 1),
                ipp("1.0.0.1", "2.0.0.2", 2),
                ipp("1.0.0.1", "3.0.0.3", 3),
                ipp("2.0.0.2", "1.0.0.1", 4),
                pkt(&[0; 40]),
            ],
        );
        assert_eq!(annos(&h.output(0)), [(1, 0), (1, 1), (2, 0), (1, 0)]);
        assert_eq!(h.output(1).len(), 1);
        assert_eq!(h.read("npairs").unwrap(), "2");
        h.write("clear", "").unwrap();
        h.push(0, vec![ipp("1.0.0.1", "2.0.0.2", 5)]);
        assert_eq!(annos(&h.output(0)), [(3, 0)]);
    }

    #[test]
    fn timeout_gives_a_new_number() {
        let h = harness("AggregateIPAddrPair(TIMEOUT 10, REAP 1)", 1);
        h.push(
            0,
            vec![
                ipp("1.0.0.1", "2.0.0.2", 100),
                ipp("2.0.0.2", "1.0.0.1", 110),
                ipp("2.0.0.2", "1.0.0.1", 121),
                pkt(&[0; 40]),
            ],
        );
        assert_eq!(annos(&h.output(0)), [(1, 0), (1, 1), (2, 0)]);
        assert_eq!(h.read("drop_reasons").unwrap(), "no IP header 1\n");
        assert_eq!(h.read("npairs").unwrap(), "1");
    }
}
