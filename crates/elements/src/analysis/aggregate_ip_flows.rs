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
//! which carries the ports. In push, a later fragment that arrives before
//! its first fragment is held until the first fragment arrives (it then
//! gets the first fragment's annotations and leaves on output 0), or
//! until FRAGMENT_TIMEOUT of packet time has passed (then it leaves on
//! output 1). Holding reorders packets, but never those between one pair
//! of addresses: while a fragment is held, later packets between the same
//! two addresses wait behind it and leave in the order they came. (Flow
//! numbers are still given in arrival order.) In pull, nothing is held: a
//! later fragment whose first fragment has not passed goes to output 1,
//! as do all later fragments with FRAGMENTS false.
//!
//! Real Click holds such fragments too, but (seen black box) releases
//! them only when a held fragment times out or on `clear`; paraclick
//! releases them as soon as their first fragment arrives, in the same
//! order.
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
//!   Held packets are let go: fragments still waiting for their first
//!   fragment on output 1, the packets behind them on output 0.
//! - `nflows` (read): flows currently known.
//!
//! Example:
//!
//!     FromDump(tracefile.dump, STOP true, FORCE_IP true)
//!         -> af :: AggregateIPFlows -> AggregateCounter -> Discard;

use super::{ip_header, set_aggregate};
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

/// A datagram's fragments: (source, destination, protocol, IP ID).
type FragKey = (u32, u32, u8, u16);

/// (protocol, lower endpoint, higher endpoint): both directions share it.
type Key = (u8, (u32, u16), (u32, u16));

/// Two addresses, lower first: the packets between them leave in order.
type Pair = (u32, u32);

/// A packet held back: a later fragment waiting for its first fragment
/// (`wait`), or a packet between the same addresses queued behind one.
struct Held {
    p: Packet,
    wait: Option<FragKey>,
    /// Arrival, in packet time.
    t: i64,
}

/// Where a packet goes.
enum Fate {
    /// Output 0, annotated.
    Out0,
    Out1,
    /// A later fragment whose first fragment has not come yet.
    Wait(FragKey),
}

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
    /// Packets held back, per address pair, in arrival order; the first
    /// of each queue is a waiting fragment.
    held: HashMap<Pair, VecDeque<Held>>,
    /// (arrival, pair) of each fragment that had to wait, oldest first.
    waits: VecDeque<(i64, Pair)>,
    nheld: usize,
    /// Packets let go by `clear`, for the timer to emit: (packet, port).
    released: Vec<(Packet, usize)>,
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
    ClassSpec::element("AggregateIPFlows", "1/1-2", "a/ah", make)
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
            held: HashMap::new(),
            waits: VecDeque::new(),
            nheld: 0,
            released: Vec::new(),
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

impl AggregateIPFlows {
    /// Annotates `p` and says where it goes; `hold`: a later fragment
    /// whose first fragment is unknown may wait (push) rather than go to
    /// output 1 (pull).
    fn classify(&self, st: &mut State, p: &mut Packet, hold: bool) -> (Fate, Pair) {
        let now = p.timestamp().0;
        let Some(ip) = ip_header(p) else {
            return (Fate::Out1, (0, 0));
        };
        let hl = usize::from(ip[0] & 15) * 4;
        let proto = ip[9];
        let (src, dst) = (addr(ip, 12), addr(ip, 16));
        let pair = (src.min(dst), src.max(dst));
        let frag = u16::from_be_bytes([ip[6], ip[7]]);
        let (mf, fragoff) = (frag & 0x2000 != 0, frag & 0x1fff);
        let id = port(ip, 4);
        let result = if proto == TCP || proto == UDP {
            if fragoff != 0 {
                if !self.fragments {
                    None
                } else {
                    let k = (src, dst, proto, id);
                    let known = st
                        .frags
                        .get(&k)
                        .filter(|v| now.saturating_sub(v.2) <= self.frag_timeout)
                        .map(|v| (v.0, v.1));
                    if known.is_none() && hold {
                        return (Fate::Wait(k), pair);
                    }
                    known
                }
            } else {
                let t = ip
                    .get(hl..)
                    .filter(|t| hl >= 20 && t.len() >= if proto == TCP { 14 } else { 4 });
                t.map(|t| {
                    let fin = proto == TCP && t[13] & 1 != 0;
                    let r = self.flow(st, proto, (src, port(t, 0)), (dst, port(t, 2)), now, fin);
                    if mf && self.fragments {
                        st.frags.insert((src, dst, proto, id), (r.0, r.1, now));
                    }
                    r
                })
            }
        } else if proto == ICMP && self.icmp && fragoff == 0 {
            ip.get(hl..).and_then(|icmp| self.icmp_error(st, icmp))
        } else {
            None
        };
        match result {
            Some((agg, paint)) => {
                set_aggregate(p, agg);
                p.anno_mut().paint = paint;
                (Fate::Out0, pair)
            }
            None => (Fate::Out1, pair),
        }
    }

    /// Lets go of the packets at the front of `pair`'s queue that no
    /// longer wait: fragments whose first fragment has come (annotated
    /// now) and the packets behind them, up to the next waiting fragment.
    fn release(&self, st: &mut State, pair: Pair, now: i64, out: &mut Batch) {
        let State {
            held, frags, nheld, ..
        } = st;
        let Some(q) = held.get_mut(&pair) else {
            return;
        };
        while let Some(h) = q.front_mut() {
            if let Some(k) = h.wait {
                let Some(&(agg, paint, _)) = frags
                    .get(&k)
                    .filter(|v| now.saturating_sub(v.2) <= self.frag_timeout)
                else {
                    break;
                };
                set_aggregate(&mut h.p, agg);
                h.p.anno_mut().paint = paint;
            }
            let Some(h) = q.pop_front() else { break };
            *nheld -= 1;
            out.push(h.p);
        }
        if q.is_empty() {
            held.remove(&pair);
        }
    }

    /// Fragments that waited longer than FRAGMENT_TIMEOUT go to output 1,
    /// and the packets behind them on.
    fn expire(&self, st: &mut State, now: i64, out: &mut [Batch; 2]) {
        while let Some(&(t, pair)) = st.waits.front() {
            if now.saturating_sub(t) <= self.frag_timeout {
                break;
            }
            st.waits.pop_front();
            if let Some(q) = st.held.get_mut(&pair) {
                while q.front().is_some_and(|h| {
                    h.wait.is_some() && now.saturating_sub(h.t) > self.frag_timeout
                }) {
                    if let Some(h) = q.pop_front() {
                        st.nheld -= 1;
                        out[1].push(h.p);
                    }
                }
            }
            self.release(st, pair, now, &mut out[0]);
        }
    }

    /// Both outputs' packets for `batch`; `hold` as for [`Self::classify`].
    fn process(&self, mut batch: Batch, hold: bool) -> [Batch; 2] {
        let mut out = [Batch::new(), Batch::new()];
        let mut st = self.lock();
        for mut p in batch.drain() {
            let now = p.timestamp().0;
            self.reap(&mut st, now);
            if st.nheld > 0 {
                self.expire(&mut st, now, &mut out);
            }
            let (fate, pair) = self.classify(&mut st, &mut p, hold);
            let wait = match fate {
                Fate::Out1 => {
                    out[1].push(p);
                    continue;
                }
                Fate::Out0 if st.nheld == 0 || !st.held.contains_key(&pair) => {
                    out[0].push(p);
                    continue;
                }
                Fate::Out0 => None,
                Fate::Wait(k) => {
                    st.waits.push_back((now, pair));
                    Some(k)
                }
            };
            st.held
                .entry(pair)
                .or_default()
                .push_back(Held { p, wait, t: now });
            st.nheld += 1;
            self.release(&mut st, pair, now, &mut out[0]);
        }
        out
    }
}

impl Element for AggregateIPFlows {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("clear", |e, _, hx| {
            let mut st = e.lock();
            st.flows.clear();
            st.frags.clear();
            st.waits.clear();
            st.nheld = 0;
            let held = std::mem::take(&mut st.held);
            for q in held.into_values() {
                for h in q {
                    let port = usize::from(h.wait.is_some());
                    st.released.push((h.p, port));
                }
            }
            if !st.released.is_empty() {
                hx.schedule_after(0, std::time::Duration::ZERO);
            }
            Ok(())
        }),
        Handler::read("nflows", |e, _| e.lock().flows.len().to_string()),
    ];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        let [o0, o1] = self.process(batch, true);
        if !o0.is_empty() {
            cx.push(0, o0);
        }
        if !o1.is_empty() {
            cx.push(1, o1);
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let batch = cx.pull(0, max)?;
        let [o0, o1] = self.process(batch, false);
        if !o1.is_empty() {
            cx.push(1, o1);
        }
        (!o0.is_empty()).then_some(o0)
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let released = std::mem::take(&mut self.lock().released);
        let mut out = [Batch::new(), Batch::new()];
        for (p, port) in released {
            out[port].push(p);
        }
        for (port, b) in out.into_iter().enumerate() {
            if !b.is_empty() {
                cx.push(port, b);
            }
        }
    }

    fn queued(&self) -> usize {
        self.lock().nheld
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
        h.push(0, vec![marked(&first), marked(&later), marked(&err)]);
        assert_eq!(annos(&h.output(0)), vec![(1, 0), (1, 0), (1, 2)]);
        // Without a first fragment: held (in push), and so is the later
        // packet between the same addresses.
        h.push(0, vec![marked(&orphan), marked(&err)]);
        assert!(h.output(0).is_empty() && h.output(1).is_empty());
        let h = harness("AggregateIPFlows(FRAGMENTS false)", 2);
        h.push(0, vec![marked(&first), marked(&later)]);
        assert_eq!(h.output(1).len(), 1);
        assert_err(
            try_harness("AggregateIPFlows(TRACEINFO x.xml)", 2),
            "e :: AggregateIPFlows: TRACEINFO and SOURCE are not supported",
        );
    }

    /// A UDP fragment of datagram `id` from `s:sp` to `d:dp`: the first
    /// (MF set, with the ports) or a later one (offset 24 bytes, no
    /// ports), at time `t`.
    fn frag(s: &str, sp: u16, d: &str, dp: u16, id: u16, first: bool, t: f64) -> Packet {
        let ip = Ip::new(s, d, 17).id(id);
        let b = if first {
            ip.frag(0x2000).udp(sp, dp, b"abcdefgh").bytes()
        } else {
            ip.frag(3).payload(b"ijkl").bytes()
        };
        let mut p = marked(&b);
        p.set_timestamp(Timestamp((t * 1e9) as i64));
        p
    }

    /// (aggregate, paint, IP ID, fragment offset) of each packet.
    fn seen(ps: &[Packet]) -> Vec<(u32, u8, u16, u16)> {
        ps.iter()
            .map(|p| {
                let d = p.data();
                let id = u16::from_be_bytes([d[4], d[5]]);
                let off = u16::from_be_bytes([d[6], d[7]]) & 0x1fff;
                (aggregate(p), p.anno().paint, id, off)
            })
            .collect()
    }

    #[test]
    fn later_fragments_wait_for_their_first_fragment() {
        // Click's regression test AggregateIPFlows-01: two datagrams whose
        // later fragments come before their first fragments. They wait,
        // then leave with their datagram's flow, in arrival order.
        let h = harness("AggregateIPFlows", 2);
        let (a, b) = ("18.26.4.44", "10.0.0.4");
        h.push(
            0,
            vec![
                frag(a, 30, b, 40, 1, true, 0.0),
                frag(a, 30, a, 41, 2, true, 0.0),
                frag(b, 40, a, 30, 3, true, 0.0),
                frag(a, 41, a, 30, 4, true, 0.0),
                frag(a, 41, a, 30, 5, false, 0.0),
                frag(a, 30, a, 41, 6, false, 0.0),
            ],
        );
        assert_eq!(
            seen(&h.output(0)),
            vec![(1, 0, 1, 0), (2, 0, 2, 0), (1, 1, 3, 0), (2, 1, 4, 0)]
        );
        h.push(0, vec![frag(a, 41, a, 30, 5, true, 0.0)]);
        assert_eq!(seen(&h.output(0)), vec![(2, 1, 5, 3)]);
        h.push(0, vec![frag(a, 30, a, 41, 6, true, 0.0)]);
        assert_eq!(
            seen(&h.output(0)),
            vec![(2, 0, 6, 3), (2, 1, 5, 0), (2, 0, 6, 0)]
        );
        assert!(h.output(1).is_empty());
    }

    #[test]
    fn fragments_wait_at_most_the_fragment_timeout() {
        let h = harness("AggregateIPFlows", 2);
        h.push(
            0,
            vec![
                frag("1.0.0.1", 10, "2.0.0.2", 20, 7, false, 1.0),
                // A new flow between the same addresses: numbered now,
                // emitted after the fragment before it.
                udp("2.0.0.2", 21, "1.0.0.1", 11, 2.0),
                udp("3.0.0.3", 30, "4.0.0.4", 40, 3.0),
            ],
        );
        assert_eq!(seen(&h.output(0)), vec![(2, 0, 0x1234, 0)]);
        // 30 seconds later the fragment gives up (output 1) and the packet
        // behind it goes.
        h.push(0, vec![udp("3.0.0.3", 30, "4.0.0.4", 40, 31.5)]);
        assert_eq!(
            seen(&h.output(0)),
            vec![(1, 0, 0x1234, 0), (2, 0, 0x1234, 0)]
        );
        assert_eq!(seen(&h.output(1)), vec![(0, 0, 7, 3)]);
    }

    #[test]
    fn clear_lets_held_packets_go() {
        let h = harness("AggregateIPFlows", 2);
        h.push(
            0,
            vec![
                frag("1.0.0.1", 10, "2.0.0.2", 20, 7, false, 1.0),
                udp("2.0.0.2", 21, "1.0.0.1", 11, 2.0),
            ],
        );
        assert!(h.output(0).is_empty());
        h.write("clear", "").unwrap();
        let sunk = |r: &paraclick_runtime::Router, o: &str| {
            r.element::<paraclick_runtime::testing::TestSink>(o)
                .map_or(0, |s| s.len())
        };
        paraclick_runtime::testing::run_until(&h.router, |r| sunk(r, "o0") + sunk(r, "o1") == 2);
        assert_eq!(seen(&h.output(0)), vec![(1, 0, 0x1234, 0)]);
        assert_eq!(seen(&h.output(1)), vec![(0, 0, 7, 3)]);
    }
}
