//! # IP6NDSolicitor
//!
//! IP6NDSolicitor(IP, ETH [, keywords CAPACITY, TIMEOUT, RETRIES])
//! IP6NDSolicitor(NAME [, keywords ...])
//!
//! Finds next hops' Ethernet addresses with IPv6 neighbour discovery.
//!
//! Ports: 2 inputs, 1 or 2 outputs. Processing: push.
//!
//! IP is this interface's IPv6 address and ETH its Ethernet address (in
//! the one-argument form, an AddressInfo name standing for both). Packets
//! on input 0 are IPv6 packets (the data starts at the IPv6 header). Their
//! next hop is the destination IPv6 annotation, or the header's
//! destination when the annotation is `::`. A multicast next hop goes to
//! its Ethernet multicast address (`33:33` and its low 32 bits, RFC 2464)
//! at once. If the next hop's Ethernet address is known, the packet is
//! wrapped in an Ethernet header (type 0x86DD, source ETH) and sent to
//! output 0. Otherwise it waits (at most CAPACITY packets per next hop;
//! the oldest make room) and a neighbour solicitation (RFC 4861 §7.2.2:
//! from IP to the next hop's solicited-node address, hop limit 255, with
//! a source link-layer address option) goes to output 1, or to output 0
//! with one output.
//!
//! Input 1 takes neighbour discovery messages with their Ethernet header.
//! A valid advertisement (RFC 4861 §7.1.2 checks) records its target's
//! link-layer address (the target link-layer address option, else the
//! frame's source) and sends the packets waiting for it; a valid
//! solicitation from a unicast source records that source's link-layer
//! address option, as RFC 4861 §7.2.3 allows. Other packets on input 1 are
//! dropped (counted).
//!
//! A solicitation is repeated once a second while packets wait; after
//! RETRIES solicitations without an answer the waiting packets are dropped
//! (counted) and the entry forgotten. Known entries expire TIMEOUT after
//! their last confirmation, and are then solicited again when used.
//!
//! Keywords:
//! - `CAPACITY` (unsigned, default 16): packets waiting per next hop.
//! - `TIMEOUT` (time, default 5 minutes): lifetime of a known entry.
//! - `RETRIES` (unsigned, default 3): solicitations before giving up.
//!
//! Handlers:
//! - `table` (read): one entry per line: IPv6 address, 1 if known (0 if
//!   not), Ethernet address (`00-00-00-00-00-00` while unknown), waiting
//!   packets.
//! - `solicitations`, `advertisements` (read): NS sent, valid NA received.
//! - `insert` (write): adds a known entry, `IP6 ETH`.
//! - `clear` (write): forgets every entry (waiting packets are dropped).
//!
//! Threads: every thread forwards to known next hops from its own view of
//! the known entries, without a lock; an advertisement, solicitation,
//! `insert` or `clear` publishes a new view, which each thread takes at its
//! next batch. The table itself (waiting packets, unknown entries) is one
//! mutex, taken for packets whose next hop is not known (or expired).
//!
//! Example:
//!
//!     c :: Classifier(12/86dd 20/3aff 54/88, 12/86dd 20/3aff 54/87, 12/86dd, -);
//!     nds :: IP6NDSolicitor(2001:db8::1, 00:e0:29:05:e5:6f);
//!     c[0] -> [1]nds;
//!     ... -> [0]nds;
//!     nds -> Queue -> ToDevice(eth0);

use super::nd::{build_frame, parse_frame};
use crate::ethernet::ether_encap::encap;
use crate::util::{Published, View};
use paraclick_packet::wire::icmpv6::NdRepr;
use paraclick_packet::wire::ipv6::addr;
use paraclick_packet::wire::{ethertype, EtherAddr};
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::args::{FromArg, Raw};
use paraclick_runtime::{
    ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThread, PerThreadCount,
};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TIMER: usize = 0;
const RETRY: Duration = Duration::from_secs(1);

struct Entry {
    eth: Option<EtherAddr>,
    /// When the address was last confirmed (known) or solicited (unknown).
    when: Instant,
    tries: u32,
    pending: VecDeque<Packet>,
}

/// Next hops come from packets' destinations, which remote senders choose:
/// foldhash with a random seed per table keeps them from colliding.
type Ip6Map<V> = HashMap<Ipv6Addr, V, foldhash::fast::RandomState>;

/// The known entries as the packet path sees them: Ethernet address and
/// when it was last confirmed. Immutable once published.
#[derive(Default)]
struct Known {
    map: Ip6Map<(EtherAddr, Instant)>,
}

pub struct IP6NDSolicitor {
    ip: Ipv6Addr,
    eth: EtherAddr,
    capacity: usize,
    timeout: Duration,
    retries: u32,
    table: Mutex<Ip6Map<Entry>>,
    /// The known entries of `table`, republished after each change of
    /// them; each thread forwards from its own view.
    known: Published<Known>,
    views: PerThread<View<Known>>,
    /// Batches (or parts) that needed the table's lock on input 0.
    slow: PerThreadCount,
    solicitations: PerThreadCount,
    advertisements: PerThreadCount,
    /// Entries a handler cleared: their packets, dropped by the timer.
    graveyard: Mutex<Vec<Packet>>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no neighbor answer"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("IP6NDSolicitor", "2/1-2", "h", make)
        .drop_reasons(DROP_REASONS)
        .shared("ND: one neighbour table for all hosts")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IP6NDSolicitor, String> {
    let mut a = cx.args();
    let name = a.read_mp::<Raw>("IP").0;
    let ip = Ipv6Addr::from_arg(&name, cx.env).map_err(|e| format!("IP: {e}"))?;
    let eth = match a.read_p::<EtherAddr>("ETH") {
        Some(e) => e,
        None => EtherAddr::from_arg(&name, cx.env)
            .map_err(|_| "missing mandatory ETH argument".to_string())?,
    };
    let capacity = a.read::<usize>("CAPACITY").unwrap_or(16);
    let timeout = a
        .read::<Duration>("TIMEOUT")
        .unwrap_or(Duration::from_secs(300));
    let retries = a.read::<u32>("RETRIES").unwrap_or(3).max(1);
    a.complete()?;
    let empty = Arc::new(Known::default());
    Ok(IP6NDSolicitor {
        ip,
        eth,
        capacity: capacity.max(1),
        timeout,
        retries,
        table: Mutex::new(Ip6Map::default()),
        known: Published::new(Known::default()),
        views: PerThread::new(cx.nthreads, |_| View::new(empty.clone())),
        slow: PerThreadCount::new(cx.nthreads),
        solicitations: PerThreadCount::new(cx.nthreads),
        advertisements: PerThreadCount::new(cx.nthreads),
        graveyard: Mutex::new(Vec::new()),
    })
}

#[derive(Default)]
struct Out {
    ready: Vec<Packet>,
    queries: Vec<Ipv6Addr>,
    dead: Vec<Packet>,
}

impl IP6NDSolicitor {
    fn next_hop(p: &Packet) -> Ipv6Addr {
        let a = p.anno().dst_ip6();
        if !a.is_unspecified() {
            return a;
        }
        match p.data().get(24..40) {
            Some(b) => Ipv6Addr::from(<[u8; 16]>::try_from(b).unwrap_or([0; 16])),
            None => Ipv6Addr::UNSPECIFIED,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ip6Map<Entry>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an entry confirmed at `when` is still known at `now`.
    #[inline]
    fn live(&self, when: Instant, now: Instant) -> bool {
        self.timeout.is_zero() || now.saturating_duration_since(when) < self.timeout
    }

    /// Publishes the table's known entries to the threads (call with the
    /// table locked, after changing its known entries).
    fn publish(&self, t: &Ip6Map<Entry>) {
        self.known.publish(|_| {
            let mut map = Ip6Map::default();
            map.reserve(t.len());
            for (&ip, e) in t {
                if let Some(eth) = e.eth {
                    map.insert(ip, (eth, e.when));
                }
            }
            Known { map }
        });
    }

    fn solicitation(&self, target: Ipv6Addr) -> Option<Packet> {
        let dst = addr::solicited_node(&target);
        build_frame(
            EtherAddr(addr::multicast_ether(&dst)),
            self.eth,
            self.ip,
            dst,
            &NdRepr::NeighborSolicit {
                target,
                lladdr: Some(self.eth),
            },
        )
    }

    fn emit(&self, cx: &mut Cx<'_>, out: Out) {
        let qport = if cx.noutputs() > 1 { 1 } else { 0 };
        for ip in out.queries {
            if let Some(q) = self.solicitation(ip) {
                self.solicitations.inc(cx.thread());
                cx.push_one(qport, q);
            }
        }
        if !out.ready.is_empty() {
            cx.push(0, Batch::from(out.ready));
        }
        for p in out.dead {
            cx.drop_packet_for(0, p);
        }
    }

    fn push_ip(&self, cx: &mut Cx<'_>, batch: Batch) {
        let mut out = Out::default();
        let mut slow = Vec::new();
        let now = cx.now();
        {
            let known = self.views.get(cx).get(&self.known);
            for mut p in batch {
                let hop = Self::next_hop(&p);
                if hop.is_unspecified() || p.len() < 40 {
                    out.dead.push(p);
                    continue;
                }
                let eth = if addr::is_multicast(&hop) {
                    EtherAddr(addr::multicast_ether(&hop))
                } else {
                    match known.map.get(&hop) {
                        Some(&(eth, when)) if self.live(when, now) => eth,
                        _ => {
                            slow.push((hop, p));
                            continue;
                        }
                    }
                };
                if encap(&mut p, eth, self.eth, ethertype::IPV6) {
                    out.ready.push(p);
                } else {
                    out.dead.push(p);
                }
            }
        }
        if !slow.is_empty() {
            self.slow.inc(cx.thread());
            self.slow_path(now, slow, &mut out);
        }
        self.emit(cx, out);
    }

    /// Packets whose next hop the thread's view does not know (or knows
    /// expired): decided under the table's lock.
    fn slow_path(&self, now: Instant, slow: Vec<(Ipv6Addr, Packet)>, out: &mut Out) {
        let mut t = self.lock();
        let mut republish = false;
        for (hop, mut p) in slow {
            let e = t.entry(hop).or_insert_with(|| Entry {
                eth: None,
                when: now,
                tries: 0,
                pending: VecDeque::new(),
            });
            if let Some(eth) = e.eth {
                if self.live(e.when, now) {
                    // Learned since the view was taken.
                    if encap(&mut p, eth, self.eth, ethertype::IPV6) {
                        out.ready.push(p);
                    } else {
                        out.dead.push(p);
                    }
                    continue;
                }
                // Expired: solicit again.
                e.eth = None;
                e.tries = 0;
                republish = true;
            }
            if e.pending.len() >= self.capacity {
                if let Some(old) = e.pending.pop_front() {
                    out.dead.push(old);
                }
            }
            e.pending.push_back(p);
            if e.tries == 0 {
                e.tries = 1;
                e.when = now;
                out.queries.push(hop);
            }
        }
        if republish {
            self.publish(&t);
        }
    }

    /// Records `ip` at `eth` as confirmed at `now` (the router's clock) in
    /// the locked table `t`; whether it did (the caller publishes).
    fn learn(
        &self,
        t: &mut Ip6Map<Entry>,
        now: Instant,
        (ip, eth): (Ipv6Addr, EtherAddr),
        out: &mut Out,
        create: bool,
    ) -> bool {
        if !create && !t.contains_key(&ip) {
            return false;
        }
        let e = t.entry(ip).or_insert_with(|| Entry {
            eth: None,
            when: now,
            tries: 0,
            pending: VecDeque::new(),
        });
        e.eth = Some(eth);
        e.when = now;
        e.tries = 0;
        for mut p in e.pending.drain(..) {
            if encap(&mut p, eth, self.eth, ethertype::IPV6) {
                out.ready.push(p);
            } else {
                out.dead.push(p);
            }
        }
        true
    }

    fn push_nd(&self, cx: &mut Cx<'_>, batch: Batch) {
        let mut out = Out::default();
        let now = cx.now();
        let mut t = None;
        let mut republish = false;
        for p in batch {
            if let Some(m) = parse_frame(p.data()) {
                match m.repr {
                    NdRepr::NeighborAdvert { target, lladdr, .. } => {
                        self.advertisements.inc(cx.thread());
                        let t = t.get_or_insert_with(|| self.lock());
                        let learned = (target, lladdr.unwrap_or(m.eth_src));
                        republish |= self.learn(t, now, learned, &mut out, true);
                    }
                    NdRepr::NeighborSolicit {
                        lladdr: Some(ll), ..
                    } if !m.src.is_unspecified() => {
                        // Learn only for next hops already in the table
                        // (RFC 4861 §7.2.3 allows creating; keeping the
                        // table to addresses we route to bounds it).
                        let t = t.get_or_insert_with(|| self.lock());
                        republish |= self.learn(t, now, (m.src, ll), &mut out, false);
                    }
                    NdRepr::NeighborSolicit { .. } => {}
                }
            }
            // Input 1's packets are consumed (counted as this element's).
            out.dead.push(p);
        }
        if let Some(t) = t {
            if republish {
                self.publish(&t);
            }
        }
        self.emit(cx, out);
    }

    fn table_text(&self) -> String {
        let t = self.lock();
        let mut v: Vec<_> = t.iter().collect();
        v.sort_by_key(|(ip, _)| **ip);
        let mut s = String::new();
        for (ip, e) in v {
            let _ = writeln!(
                s,
                "{ip} {} {} {}",
                u8::from(e.eth.is_some()),
                e.eth.unwrap_or(EtherAddr::ZERO),
                e.pending.len()
            );
        }
        s
    }
}

impl Element for IP6NDSolicitor {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, _| e.table_text()),
        Handler::read("solicitations", |e, _| e.solicitations.get().to_string()),
        Handler::read("advertisements", |e, _| e.advertisements.get().to_string()),
        Handler::write("insert", |e, v, hx| {
            let mut w = v.split_whitespace();
            let ip: Ipv6Addr = hx.arg(w.next().ok_or("expected 'IP6 ETH'")?)?;
            let eth: EtherAddr = hx.arg(w.next().ok_or("expected 'IP6 ETH'")?)?;
            let now = hx.now();
            let mut t = e.lock();
            let en = t.entry(ip).or_insert_with(|| Entry {
                eth: None,
                when: now,
                tries: 0,
                pending: VecDeque::new(),
            });
            en.eth = Some(eth);
            en.when = now;
            e.publish(&t);
            Ok(())
        }),
        Handler::write("clear", |e, _, _| {
            let mut t = e.lock();
            let mut g = e.graveyard.lock().unwrap_or_else(|e| e.into_inner());
            for (_, mut en) in t.drain() {
                g.extend(en.pending.drain(..));
            }
            e.publish(&t);
            Ok(())
        }),
    ];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        if port == 0 {
            self.push_ip(cx, batch);
        } else {
            self.push_nd(cx, batch);
        }
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.schedule_after(TIMER, RETRY);
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let now = cx.now();
        let mut out = Out::default();
        {
            let mut t = self.lock();
            let mut gone = Vec::new();
            let mut republish = false;
            for (&ip, e) in t.iter_mut() {
                match e.eth {
                    Some(eth) => {
                        // Packets a handler's insert released.
                        for mut p in e.pending.drain(..) {
                            if encap(&mut p, eth, self.eth, ethertype::IPV6) {
                                out.ready.push(p);
                            } else {
                                out.dead.push(p);
                            }
                        }
                        if !self.live(e.when, now) {
                            gone.push(ip);
                            republish = true;
                        }
                    }
                    None if now.duration_since(e.when) >= RETRY => {
                        if e.tries >= self.retries || e.pending.is_empty() {
                            out.dead.extend(e.pending.drain(..));
                            gone.push(ip);
                        } else {
                            e.tries += 1;
                            e.when = now;
                            out.queries.push(ip);
                        }
                    }
                    None => {}
                }
            }
            for ip in gone {
                t.remove(&ip);
            }
            if republish {
                self.publish(&t);
            }
        }
        out.dead.extend(std::mem::take(
            &mut *self.graveyard.lock().unwrap_or_else(|e| e.into_inner()),
        ));
        self.emit(cx, out);
        cx.schedule_after(TIMER, RETRY / 4);
    }

    fn queued(&self) -> usize {
        self.lock().values().map(|e| e.pending.len()).sum::<usize>()
            + self.graveyard.lock().map(|g| g.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::nd::{build_frame, parse_frame};
    use crate::test_kit::*;
    use paraclick_packet::wire::icmpv6::{nd_flags, NdRepr};
    use paraclick_packet::wire::ipv6::addr;
    use paraclick_packet::wire::EtherAddr;
    use paraclick_packet::Packet;
    use std::time::Duration;

    const ME: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const HOST: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn na(target: &str, ll: Option<[u8; 6]>) -> Packet {
        build_frame(
            EtherAddr(ME),
            EtherAddr(HOST),
            a6(target),
            a6("2001:db8::1"),
            &NdRepr::NeighborAdvert {
                flags: nd_flags::SOLICITED,
                target: a6(target),
                lladdr: ll.map(EtherAddr),
            },
        )
        .unwrap()
    }

    fn to(dst: &str, tag: u8) -> Packet {
        pkt(&Ip6::new("2001:db8:9::1", dst, 59).payload(&[tag]).bytes())
    }

    /// The element in simulated time (the test moves the clock), input 1
    /// idle, `nout` outputs.
    fn sim(decl: &str, nout: usize) -> paraclick_runtime::testing::Harness {
        paraclick_runtime::testing::Harness::simulated(
            &reg(),
            &format!("{decl}; Idle -> [1]e"),
            1,
            nout,
        )
        .unwrap()
    }

    #[test]
    fn solicits_waits_learns_releases() {
        let h = harness(
            "IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01); Idle -> [1]e",
            2,
        );
        h.push(0, vec![to("2001:db8::2", 1), to("2001:db8::2", 2)]);
        assert!(h.output(0).is_empty());
        let q = h.output(1);
        assert_eq!(q.len(), 1, "one solicitation for two packets");
        let ns = parse_frame(q[0].data()).unwrap();
        assert_eq!(ns.src, a6("2001:db8::1"));
        assert_eq!(ns.dst, addr::solicited_node(&a6("2001:db8::2")));
        assert_eq!(&q[0].data()[..6], &addr::multicast_ether(&ns.dst));
        assert_eq!(
            ns.repr,
            NdRepr::NeighborSolicit {
                target: a6("2001:db8::2"),
                lladdr: Some(EtherAddr(ME))
            }
        );
        assert!(h
            .read("table")
            .unwrap()
            .starts_with("2001:db8::2 0 00-00-00-00-00-00 2"));
        h.push(1, vec![na("2001:db8::2", Some(HOST))]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(
            &out[0].data()[..14],
            &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd]
        );
        assert_eq!(out[1].data()[54], 2, "in order");
        // Known now: straight through.
        h.push(0, vec![to("2001:db8::2", 3)]);
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.read("advertisements").unwrap(), "1");
        assert_eq!(h.read("solicitations").unwrap(), "1");
    }

    #[test]
    fn annotation_multicast_and_bad_input() {
        let h = harness(
            "IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01); Idle -> [1]e",
            1,
        );
        let mut p = to("3000::1", 1);
        p.anno_mut().set_dst_ip6(a6("fe80::7"));
        h.push(0, vec![p, to("ff02::1:2", 2), pkt(&[1, 2, 3])]);
        let out = h.output(0);
        assert_eq!(
            out.len(),
            2,
            "a solicitation (one output) and the multicast packet"
        );
        let ns = parse_frame(out[0].data()).unwrap();
        assert!(
            matches!(ns.repr, NdRepr::NeighborSolicit { target, .. } if target == a6("fe80::7"))
        );
        assert_eq!(&out[1].data()[..6], &[0x33, 0x33, 0, 1, 0, 2]);
        assert_eq!(h.drops(), 1);
        // Garbage and an NA with a bad checksum on input 1 teach nothing.
        let mut bad = na("fe80::7", Some(HOST)).data().to_vec();
        bad[60] ^= 0xff;
        h.push(1, vec![pkt(&bad), pkt(&[0; 20])]);
        assert!(h.read("table").unwrap().contains("fe80::7 0"));
        // An NA without the option: the frame's source.
        h.push(1, vec![na("fe80::7", None)]);
        assert_eq!(h.output(0).len(), 1);
        assert!(h
            .read("table")
            .unwrap()
            .contains("fe80::7 1 02-00-00-00-00-02"));
    }

    #[test]
    fn gives_up_and_bounds_waiting_packets() {
        // 3.3 simulated seconds: the timer runs at 1 s, then every 250 ms.
        let h = sim(
            "IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01, CAPACITY 2, RETRIES 2); \
             Script(wait 3300ms, stop)",
            2,
        );
        h.push(
            0,
            vec![
                to("2001:db8::2", 1),
                to("2001:db8::2", 2),
                to("2001:db8::2", 3),
            ],
        );
        assert_eq!(h.drops(), 1, "the oldest made room");
        assert!(h.read("table").unwrap().ends_with(" 2\n"));
        paraclick_runtime::testing::run(&h.router);
        // At 0 s and 1 s (RETRY after the first); at 2 s, after RETRIES
        // solicitations, it gave up.
        assert_eq!(h.output(1).len(), 2, "solicited twice");
        assert_eq!(h.drops(), 3, "then gave up");
        assert_eq!(h.read("table").unwrap(), "");
    }

    #[test]
    fn retries_once_a_second_of_the_routers_clock() {
        // Simulated time: RETRY (1 s) and the give-up are measured on the
        // router's clock, so 2.9 simulated seconds (a few real
        // milliseconds) see the solicitations at 0, 1 and 2 s, and 3.1 s
        // the give-up after RETRIES 3.
        let h = sim(
            "IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01); Script(wait 2900ms, stop)",
            2,
        );
        h.push(0, vec![to("2001:db8::2", 1)]);
        paraclick_runtime::testing::run(&h.router);
        assert_eq!(h.read("solicitations").unwrap(), "3");
        assert_eq!(h.output(1).len(), 3);
        assert_eq!(h.drops(), 0, "still waiting");
        let h = sim(
            "IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01); Script(wait 3100ms, stop)",
            2,
        );
        h.push(0, vec![to("2001:db8::2", 1)]);
        paraclick_runtime::testing::run(&h.router);
        assert_eq!(h.read("solicitations").unwrap(), "3");
        assert_eq!(h.drops(), 1, "given up at 3 s");
        assert_eq!(h.read("table").unwrap(), "");
    }

    #[test]
    fn known_entries_expire_timeout_after_confirmation_by_the_routers_clock() {
        // An advertisement and an insert each confirm at the router's
        // moment: still known 1 ns before TIMEOUT has passed since, and
        // solicited again at TIMEOUT.
        for teach in ["advertisement", "insert"] {
            let h = sim(
                "IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01, TIMEOUT 10s)",
                2,
            );
            h.advance(Duration::from_secs(5));
            if teach == "insert" {
                h.write("insert", "2001:db8::2 02:00:00:00:00:02").unwrap();
            } else {
                h.router
                    .push_into("e", 1, vec![na("2001:db8::2", Some(HOST))].into())
                    .unwrap();
            }
            h.advance(Duration::from_secs(10) - Duration::from_nanos(1));
            h.push(0, vec![to("2001:db8::2", 1)]);
            assert_eq!(h.output(0).len(), 1, "{teach}: known until TIMEOUT");
            assert!(h.output(1).is_empty(), "{teach}");
            h.advance(Duration::from_nanos(1));
            h.push(0, vec![to("2001:db8::2", 2)]);
            assert!(h.output(0).is_empty(), "{teach}: expired at TIMEOUT");
            assert_eq!(h.output(1).len(), 1, "{teach}: solicited again");
        }
    }

    #[test]
    fn an_advertisement_heard_on_one_thread_is_used_by_the_others_next_batch() {
        use paraclick_runtime::testing::TestSink;
        // Thread 1's source sends 8 packets to 2001:db8::2 each time it is
        // reset; thread 0's sends one advertisement moving that neighbour
        // when activated.
        let hex = |p: Packet| -> String { p.data().iter().map(|b| format!("{b:02x}")).collect() };
        let conf = format!(
            "s :: InfiniteSource(DATA \\<{}>, LIMIT 8, BURST 8);
             a :: InfiniteSource(DATA \\<{}>, LIMIT 1, ACTIVE false);
             StaticThreadSched(s 1, a 0);
             s -> e :: IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01) -> o :: TestSink;
             a -> [1]e;",
            hex(to("2001:db8::2", 7)),
            hex(na("2001:db8::2", Some([2, 0, 0, 0, 0, 9]))),
        );
        let r = paraclick_runtime::Router::from_str(&conf, &reg(), 2)
            .unwrap_or_else(|d| panic!("{}", d[0].message));
        let nd = r.element::<super::IP6NDSolicitor>("e").unwrap();
        let sink = r.element::<TestSink>("o").unwrap();
        let wait = |what: &str, until: &dyn Fn() -> bool| {
            let t0 = std::time::Instant::now();
            while !until() {
                assert!(t0.elapsed() < Duration::from_secs(20), "never: {what}");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let eight = || -> Vec<[u8; 6]> {
            wait("8 packets", &|| sink.len() >= 8);
            let ps = sink.take();
            ps.iter()
                .map(|p| <[u8; 6]>::try_from(&p.data()[..6]).unwrap())
                .collect()
        };
        r.write_handler("e.insert", "2001:db8::2 02:00:00:00:00:02")
            .unwrap();
        let stop = r.stopper();
        std::thread::scope(|sc| {
            sc.spawn(|| r.run());
            // Stops the router however this ends (a failed assertion too).
            struct StopOnDrop<F: FnMut()>(F);
            impl<F: FnMut()> Drop for StopOnDrop<F> {
                fn drop(&mut self) {
                    (self.0)()
                }
            }
            let _stop = StopOnDrop(|| stop.stop());
            // Thread 1 forwards with its view of the table.
            assert_eq!(eight(), vec![HOST; 8]);
            assert_eq!(nd.slow.get(), 0, "known: no batch took the table's lock");
            // An advertisement heard on thread 0 moves the neighbour.
            r.write_handler("a.active", "true").unwrap();
            wait("the advertisement", &|| {
                r.read_handler("e.advertisements").unwrap() == "1"
            });
            r.write_handler("s.reset", "").unwrap();
            assert_eq!(
                eight(),
                vec![[2, 0, 0, 0, 0, 9]; 8],
                "thread 1's next batch uses the new address"
            );
            assert_eq!(nd.slow.get(), 0, "still without the table's lock");
            // `clear` reaches thread 1's view too: its next batch waits.
            r.write_handler("e.clear", "").unwrap();
            r.write_handler("s.reset", "").unwrap();
            wait("a solicitation", &|| {
                r.read_handler("e.solicitations").unwrap() != "0"
            });
            assert_eq!(nd.slow.get(), 1, "an unknown next hop takes the lock");
            assert!(r.read_handler("e.table").unwrap().ends_with(" 8\n"));
            // (One output: the solicitation leaves through it; nothing else.)
            assert!(sink.take().iter().all(|p| parse_frame(p.data()).is_some()));
        });
    }

    #[test]
    fn handlers_insert_clear_and_config() {
        let h = harness(
            "IP6NDSolicitor(r0); AddressInfo(r0 2001:db8::1/64 02:00:00:00:00:01); Idle -> [1]e",
            1,
        );
        h.write("insert", "2001:db8::5 02:00:00:00:00:05").unwrap();
        h.push(0, vec![to("2001:db8::5", 1)]);
        assert_eq!(
            &h.output(0)[0].data()[..12],
            &[2, 0, 0, 0, 0, 5, 2, 0, 0, 0, 0, 1]
        );
        h.write("clear", "").unwrap();
        assert_eq!(h.read("table").unwrap(), "");
        assert_err(
            h.write("insert", "2001:db8::5"),
            "e.insert: expected 'IP6 ETH'",
        );
        assert_err(
            try_harness("IP6NDSolicitor(2001:db8::1); Idle -> [1]e", 1),
            "e :: IP6NDSolicitor: missing mandatory ETH argument",
        );
        assert_err(
            try_harness("IP6NDSolicitor(1.2.3.4, 1:2:3:4:5:6); Idle -> [1]e", 1),
            "e :: IP6NDSolicitor: IP: expected IPv6 address, not '1.2.3.4'",
        );
    }
}
