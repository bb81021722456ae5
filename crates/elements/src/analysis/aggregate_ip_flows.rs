//! # AggregateIPFlows
//!
//! AggregateIPFlows([keywords TCP_TIMEOUT, TCP_DONE_TIMEOUT, UDP_TIMEOUT, FRAGMENT_TIMEOUT, REAP, ICMP, FRAGMENTS])
//!
//! Sets the aggregate annotation based on flow.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Follows TCP and UDP flows, setting the aggregate annotation of every
//! passing packet (which needs its IP header annotation) to a flow number,
//! and its paint annotation to a direction. Non-TCP/UDP packets and short
//! packets go to output 1, or are dropped if it is not connected.
//!
//! Flows are told apart by addresses and ports (and protocol). Replies get
//! the same flow number with a different paint: the first packet of a
//! flow gets paint 0, packets the other way paint 1 (ICMP errors 2 and 3).
//! Flow numbers count up from 1. A flow dies after a timeout of packet
//! time (timestamps), after which a packet with its addresses and ports
//! starts a new flow with a new number. UDP, active TCP and completed TCP
//! flows (FIN seen both ways) have separate timeouts.
//!
//! With FRAGMENTS true, a second or later fragment gets the annotations of
//! its datagram's first fragment (same addresses, protocol and IP ID),
//! when that first fragment came earlier and less than FRAGMENT_TIMEOUT
//! ago. Other fragments, and all later fragments with FRAGMENTS false,
//! go to output 1. (Click also holds later fragments back until their
//! first fragment arrives, which reorders packets; paraclick never holds
//! packets, so such fragments go to output 1.)
//!
//! Keywords:
//! - `TCP_TIMEOUT` (time, default 24 hours): for active TCP flows.
//! - `TCP_DONE_TIMEOUT` (time, default 30 seconds): for completed TCP
//!   flows.
//! - `UDP_TIMEOUT` (time, default 1 minute).
//! - `FRAGMENT_TIMEOUT` (time, default 30 seconds).
//! - `REAP` (time, default 20 minutes): how often (in packet time) dead
//!   flows are collected.
//! - `ICMP` (boolean, default false): give ICMP errors about a known flow
//!   that flow's number, and paint 2 plus the paint of the packet they
//!   quote.
//! - `FRAGMENTS` (boolean, default true): see above.
//!
//! Click's TRACEINFO and SOURCE keywords (an XML flow log) are not
//! supported; giving them is an error.
//!
//! Handlers:
//! - `clear` (write): forget every flow; later packets get new numbers.
//! - `nflows` (read): flows currently known.
//!
//! Example:
//!
//!     FromDump(tracefile.dump, STOP true, FORCE_IP true)
//!         -> af :: AggregateIPFlows -> AggregateCounter -> Discard;

use super::{ip_header, set_aggregate};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

/// A datagram's fragments: (source, destination, protocol, IP ID).
type FragKey = (u32, u32, u8, u16);

/// (protocol, lower endpoint, higher endpoint): both directions share it.
type Key = (u8, (u32, u16), (u32, u16));

struct Flow {
    agg: u32,
    /// The endpoint that sent the flow's first packet.
    first_src: (u32, u16),
    last: i64,
    /// FIN seen from the first sender / from the other side.
    fin: [bool; 2],
}

struct State {
    flows: HashMap<Key, Flow>,
    /// (src, dst, proto, id) of first fragments -> (aggregate, paint, time).
    frags: HashMap<FragKey, (u32, u8, i64)>,
    next: u32,
    last_reap: i64,
}

pub struct AggregateIPFlows {
    tcp_timeout: i64,
    tcp_done_timeout: i64,
    udp_timeout: i64,
    frag_timeout: i64,
    reap: i64,
    icmp: bool,
    fragments: bool,
    st: Mutex<State>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregateIPFlows", "1/1-2", "a/ah", make)
        .shared("one flow table, numbering aggregates, for all flows")
}

fn ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateIPFlows, String> {
    let mut a = cx.args();
    let tcp: Option<Duration> = a.read("TCP_TIMEOUT");
    let done: Option<Duration> = a.read("TCP_DONE_TIMEOUT");
    let udp: Option<Duration> = a.read("UDP_TIMEOUT");
    let frag: Option<Duration> = a.read("FRAGMENT_TIMEOUT");
    let reap: Option<Duration> = a.read("REAP");
    let icmp = a.read("ICMP").unwrap_or(false);
    let fragments = a.read("FRAGMENTS").unwrap_or(true);
    let traceinfo: Option<String> = a.read("TRACEINFO");
    let source: Option<String> = a.read("SOURCE");
    a.complete()?;
    if traceinfo.is_some() || source.is_some() {
        return Err("TRACEINFO and SOURCE are not supported".into());
    }
    Ok(AggregateIPFlows {
        tcp_timeout: tcp.map_or(24 * 3600 * 1_000_000_000, ns),
        tcp_done_timeout: done.map_or(30_000_000_000, ns),
        udp_timeout: udp.map_or(60_000_000_000, ns),
        frag_timeout: frag.map_or(30_000_000_000, ns),
        reap: reap.map_or(20 * 60 * 1_000_000_000, ns),
        icmp,
        fragments,
        st: Mutex::new(State {
            flows: HashMap::new(),
            frags: HashMap::new(),
            next: 1,
            last_reap: i64::MIN,
        }),
    })
}

fn key(proto: u8, a: (u32, u16), b: (u32, u16)) -> Key {
    if a <= b {
        (proto, a, b)
    } else {
        (proto, b, a)
    }
}

fn addr(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

fn port(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

impl AggregateIPFlows {
    fn timeout(&self, k: &Key, f: &Flow) -> i64 {
        if k.0 == UDP {
            self.udp_timeout
        } else if f.fin[0] && f.fin[1] {
            self.tcp_done_timeout
        } else {
            self.tcp_timeout
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reap(&self, st: &mut State, now: i64) {
        if st.last_reap != i64::MIN && now.saturating_sub(st.last_reap) < self.reap {
            return;
        }
        st.last_reap = now;
        let flows = std::mem::take(&mut st.flows);
        st.flows = flows
            .into_iter()
            .filter(|(k, f)| now.saturating_sub(f.last) <= self.timeout(k, f))
            .collect();
        let ft = self.frag_timeout;
        st.frags.retain(|_, v| now.saturating_sub(v.2) <= ft);
    }

    /// The (aggregate, paint) of a TCP/UDP packet sent from `src` to
    /// `dst`, creating or renewing the flow as needed.
    fn flow(
        &self,
        st: &mut State,
        proto: u8,
        src: (u32, u16),
        dst: (u32, u16),
        now: i64,
        fin: bool,
    ) -> (u32, u8) {
        let k = key(proto, src, dst);
        let alive = st
            .flows
            .get(&k)
            .is_some_and(|f| now.saturating_sub(f.last) <= self.timeout(&k, f));
        if !alive {
            let agg = st.next;
            st.next = st.next.wrapping_add(1).max(1);
            st.flows.insert(
                k,
                Flow {
                    agg,
                    first_src: src,
                    last: now,
                    fin: [false; 2],
                },
            );
        }
        let f = st.flows.get_mut(&k).expect("flow just ensured");
        let paint = u8::from(f.first_src != src);
        f.last = f.last.max(now);
        if fin {
            f.fin[usize::from(paint)] = true;
        }
        (f.agg, paint)
    }

    /// For an ICMP error quoting a packet of a known flow: (aggregate, 2 +
    /// the quoted packet's paint).
    fn icmp_error(&self, st: &State, icmp: &[u8]) -> Option<(u32, u8)> {
        let ty = *icmp.first()?;
        if !matches!(ty, 3 | 4 | 5 | 11 | 12) {
            return None;
        }
        let q = icmp.get(8..)?;
        if q.len() < 20 || q[0] >> 4 != 4 {
            return None;
        }
        let hl = usize::from(q[0] & 15) * 4;
        let proto = q[9];
        if (proto != TCP && proto != UDP) || q.len() < hl + 4 {
            return None;
        }
        let src = (addr(q, 12), port(q, hl));
        let dst = (addr(q, 16), port(q, hl + 2));
        let f = st.flows.get(&key(proto, src, dst))?;
        Some((f.agg, 2 + u8::from(f.first_src != src)))
    }
}

impl Action for AggregateIPFlows {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("clear", |e, _, _| {
            let mut st = e.lock();
            st.flows.clear();
            st.frags.clear();
            Ok(())
        }),
        Handler::read("nflows", |e, _| e.lock().flows.len().to_string()),
    ];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let now = p.timestamp().0;
        let Some(ip) = ip_header(p) else {
            return Verdict::Out(1);
        };
        let hl = usize::from(ip[0] & 15) * 4;
        let proto = ip[9];
        let (src, dst) = (addr(ip, 12), addr(ip, 16));
        let frag = u16::from_be_bytes([ip[6], ip[7]]);
        let (mf, fragoff) = (frag & 0x2000 != 0, frag & 0x1fff);
        let id = port(ip, 4);
        let mut st = self.lock();
        self.reap(&mut st, now);
        let result = if proto == TCP || proto == UDP {
            if fragoff != 0 {
                if !self.fragments {
                    None
                } else {
                    st.frags
                        .get(&(src, dst, proto, id))
                        .filter(|v| now.saturating_sub(v.2) <= self.frag_timeout)
                        .map(|v| (v.0, v.1))
                }
            } else {
                let t = ip
                    .get(hl..)
                    .filter(|t| hl >= 20 && t.len() >= if proto == TCP { 14 } else { 4 });
                t.map(|t| {
                    let fin = proto == TCP && t[13] & 1 != 0;
                    let r = self.flow(
                        &mut st,
                        proto,
                        (src, port(t, 0)),
                        (dst, port(t, 2)),
                        now,
                        fin,
                    );
                    if mf && self.fragments {
                        st.frags.insert((src, dst, proto, id), (r.0, r.1, now));
                    }
                    r
                })
            }
        } else if proto == ICMP && self.icmp && fragoff == 0 {
            ip.get(hl..).and_then(|icmp| self.icmp_error(&st, icmp))
        } else {
            None
        };
        drop(st);
        match result {
            Some((agg, paint)) => {
                set_aggregate(p, agg);
                p.anno_mut().paint = paint;
                Verdict::Out(0)
            }
            None => Verdict::Out(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::aggregate;
    use crate::test_kit::*;
    use paraclick_packet::{Packet, Timestamp};
    use paraclick_runtime::testing::assert_err;

    fn udp(s: &str, sp: u16, d: &str, dp: u16, t: f64) -> Packet {
        let mut p = marked(&Ip::new(s, d, 17).udp(sp, dp, b"x").bytes());
        p.set_timestamp(Timestamp((t * 1e9) as i64));
        p
    }

    fn tcp(s: &str, sp: u16, d: &str, dp: u16, flags: u8, t: f64) -> Packet {
        let mut p = marked(&Ip::new(s, d, 6).tcp(sp, dp, 1, 1, flags, 100).bytes());
        p.set_timestamp(Timestamp((t * 1e9) as i64));
        p
    }

    fn annos(ps: &[Packet]) -> Vec<(u32, u8)> {
        ps.iter().map(|p| (aggregate(p), p.anno().paint)).collect()
    }

    #[test]
    fn numbers_flows_and_paints_directions() {
        let h = harness("AggregateIPFlows", 2);
        h.push(
            0,
            vec![
                udp("1.0.0.1", 10, "2.0.0.2", 20, 1.0),
                udp("2.0.0.2", 20, "1.0.0.1", 10, 1.1),
                udp("1.0.0.1", 11, "2.0.0.2", 20, 1.2),
                tcp("1.0.0.1", 10, "2.0.0.2", 20, 2, 1.3),
                udp("1.0.0.1", 10, "2.0.0.2", 20, 1.4),
            ],
        );
        assert_eq!(
            annos(&h.output(0)),
            vec![(1, 0), (1, 1), (2, 0), (3, 0), (1, 0)]
        );
        assert_eq!(h.read("nflows").unwrap(), "3");
        // Not TCP/UDP: output 1.
        let icmp = Ip::new("1.0.0.1", "2.0.0.2", 1)
            .icmp(8, 0, [0; 4], b"")
            .bytes();
        h.push(0, vec![marked(&icmp), pkt(&icmp)]);
        assert_eq!(h.output(1).len(), 2);
        h.write("clear", "").unwrap();
        h.push(0, vec![udp("1.0.0.1", 10, "2.0.0.2", 20, 1.5)]);
        assert_eq!(annos(&h.output(0)), vec![(4, 0)]);
    }

    #[test]
    fn timeouts_start_new_flows() {
        let h = harness("AggregateIPFlows(UDP_TIMEOUT 10, TCP_DONE_TIMEOUT 1)", 2);
        h.push(
            0,
            vec![
                udp("1.0.0.1", 10, "2.0.0.2", 20, 100.0),
                udp("1.0.0.1", 10, "2.0.0.2", 20, 109.0),
                udp("1.0.0.1", 10, "2.0.0.2", 20, 120.0),
                tcp("3.0.0.3", 1, "4.0.0.4", 2, 0x11, 120.0),
                tcp("4.0.0.4", 2, "3.0.0.3", 1, 0x11, 120.5),
                tcp("3.0.0.3", 1, "4.0.0.4", 2, 0x10, 125.0),
            ],
        );
        assert_eq!(
            annos(&h.output(0)),
            vec![(1, 0), (1, 0), (2, 0), (3, 0), (3, 1), (4, 0)]
        );
    }

    #[test]
    fn fragments_and_icmp_errors() {
        let h = harness("AggregateIPFlows(ICMP true)", 2);
        let first = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .id(77)
            .frag(0x2000)
            .udp(5, 6, b"abcdefgh")
            .bytes();
        let later = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .id(77)
            .frag(2)
            .payload(b"ijkl")
            .bytes();
        let orphan = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .id(78)
            .frag(2)
            .payload(b"ijkl")
            .bytes();
        // An ICMP error from 2.0.0.2 quoting the first fragment's header.
        let quoted = &first[..28];
        let err = Ip::new("2.0.0.2", "1.0.0.1", 1)
            .icmp(3, 3, [0; 4], quoted)
            .bytes();
        h.push(
            0,
            vec![
                marked(&first),
                marked(&later),
                marked(&orphan),
                marked(&err),
            ],
        );
        assert_eq!(annos(&h.output(0)), vec![(1, 0), (1, 0), (1, 2)]);
        assert_eq!(h.output(1).len(), 1);
        let h = harness("AggregateIPFlows(FRAGMENTS false)", 2);
        h.push(0, vec![marked(&first), marked(&later)]);
        assert_eq!(h.output(1).len(), 1);
        assert_err(
            try_harness("AggregateIPFlows(TRACEINFO x.xml)", 2),
            "e :: AggregateIPFlows: TRACEINFO and SOURCE are not supported",
        );
    }
}
