//! # ARPQuerier
//!
//! ARPQuerier(IP, ETH, keywords TABLE, CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY, TIMEOUT, POLL_TIMEOUT, BROADCAST, BROADCAST_POLL)
//! ARPQuerier(NAME, keywords ...)
//!
//! Encapsulates IP packets in Ethernet headers found via ARP.
//!
//! Ports: 2 inputs, 1 or 2 outputs. Processing: push.
//!
//! Handles most of the ARP protocol. IP is this host's IP address and ETH
//! its Ethernet address; in the one-argument form NAME is an AddressInfo
//! name standing for both.
//!
//! Packets arriving on input 0 are IP packets (the data starts at the IP
//! header). Their next hop is the destination IP annotation, or the IP
//! header's destination when the annotation is 0.0.0.0. If the next hop's
//! Ethernet address is known, the packet is wrapped in an Ethernet header
//! (type 0x0800, source ETH) and sent to output 0. Otherwise the packet is
//! saved and an ARP query is broadcast. When an ARP reply arrives on input
//! 1 (Ethernet header included), the mapping is recorded and the saved
//! packets are sent. ARP queries go to output 1 if there are two outputs,
//! to output 0 otherwise.
//!
//! Packets for 0.0.0.0 are dropped. Packets for 255.255.255.255 and for the
//! BROADCAST address go to FF-FF-FF-FF-FF-FF without a query; multicast IP
//! addresses go to 01-00-5E-xx-yy-zz, where xx-yy-zz are the lower 23 bits
//! of the address (RFC 1112).
//!
//! A query is sent only when a packet arrives for an address that is not
//! known: at most 10 a second for any address, and one every 2 seconds
//! after 10 went unanswered (packets arriving in between wait without a
//! query). Entries become invalid TIMEOUT after their last reply (the
//! `table` handler shows them with 0); packets arriving for an invalid
//! entry wait and ask again, and keep the entry from being removed. The
//! element's timer removes invalid entries every TIMEOUT (whole seconds)
//! plus one second, as Click's ARPTable; the packets still waiting in them
//! are dropped. A known entry older than POLL_TIMEOUT is refreshed:
//! packets still go out, each after a poll (an ARP query sent unicast to
//! the known address, or broadcast with BROADCAST_POLL) when one is
//! allowed. Generated queries carry the VLAN TCI annotation and the
//! timestamp of the packet that caused them, as Click's do. Packets on input 1 are
//! consumed: valid replies are counted by `responses`; like invalid ones,
//! they count as the router's drops for this element (the `drops` handler
//! counts IP packets only).
//!
//! Keyword arguments:
//! - `TABLE` (element name): an ARPTable holding this element's ARP state
//!   (entries and saved packets), shared with every ARPQuerier naming it:
//!   a reply heard by one lets all send to that address, and the one that
//!   hears it sends the packets any of them saved for it. CAPACITY,
//!   ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY and TIMEOUT are then the
//!   ARPTable's (these keywords are ignored here), and `table`, `count`,
//!   `length`, `insert`, `delete` and `clear` act on the shared table. By
//!   default the element has a table of its own. Naming anything but an
//!   ARPTable is an error.
//! - `CAPACITY` (unsigned, default 2048): the most saved packets overall;
//!   0 means unlimited. A packet that would pass it drops the saved
//!   packets of the oldest entries (least recently answered or created,
//!   first) until half of CAPACITY remain, itself included.
//! - `ENTRY_CAPACITY` (unsigned, default 0 = unlimited): the most ARP
//!   entries; the oldest entry makes room for a new one.
//! - `ENTRY_PACKET_CAPACITY` (unsigned, default 0 = unlimited): the most
//!   saved packets per entry; a packet for a full entry is dropped (and
//!   sends no query).
//! - `TIMEOUT` (time, default 5 minutes): entry lifetime; 0 means forever.
//! - `POLL_TIMEOUT` (time, default 1 minute): age after which an entry is
//!   polled; 0 means never poll.
//! - `BROADCAST` (IP address): the local broadcast address; defaults to
//!   the one of IP's prefix when IP is given with one (`1.0.0.1/8` or an
//!   AddressInfo name).
//! - `BROADCAST_POLL` (boolean, default false): send polls broadcast.
//!
//! Handlers:
//! - `table` (read): one entry per line, least recently updated first:
//!   IP address, 1 if the entry is valid (0 if not), Ethernet address
//!   (FF-FF-FF-FF-FF-FF while unknown), and the time since the entry was
//!   last updated.
//! - `stats` (read): `N packets killed` and `N ARP queries sent`.
//! - `queries`, `responses`, `drops` (read): queries sent, replies
//!   received, IP packets dropped.
//! - `count` (read): entries in the table; `length` (read): saved packets.
//! - `ipaddr` (read/write): the source IP address of queries.
//! - `broadcast` (read): the broadcast IP address.
//! - `insert` (write): adds an entry, `IP ETH`; saved packets for IP are
//!   sent by the element's timer, at once.
//! - `delete` (write): deletes the entry for an IP address.
//! - `clear` (write): deletes every entry. Packets saved in deleted
//!   entries are dropped (counted) by the element's timer.
//!
//! Threads: the table is shared by all threads. Packets whose address is
//! known take no lock: each thread reads an immutable snapshot of the
//! known entries, refreshed (one short lock) only after the table
//! changed, and rate-limits polls with atomics. Packets that must wait,
//! replies, the timer and the handlers take the table's mutex, briefly.
//!
//! Hot reconfiguration (`-R`): an ARPQuerier of the same name takes the old
//! one's table (entries keep their ages, waiting packets keep waiting) and
//! counts; a table shared through TABLE moves with its ARPTable.
//!
//! Example:
//!
//!     c :: Classifier(12/0806 20/0002, 12/0800, ...);
//!     a :: ARPQuerier(18.26.4.24, 00:00:C0:AE:67:EF);
//!     c[0] -> [1]a;
//!     c[1] -> Strip(14) -> CheckIPHeader -> ... -> [0]a;
//!     a -> Queue -> ToDevice(eth0);

use super::arp_table::{
    dur_ns, poll_allowed, ArpShared, ArpTable, Cache, Effects, Snapshot, TableParams,
    MAX_POLLS_PER_BATCH, NEVER, TIMER,
};
use super::ether_encap::encap;
use crate::util::View;
use paraclick_packet::wire::{
    ethertype, ArpOp, ArpPacket, ArpRepr, EtherAddr, EthernetFrame, Ipv4Prefix,
};
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::args::{ArgEnv, FromArg, Raw};
use paraclick_runtime::{
    ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThread, PerThreadCount, StateCx,
};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub struct ArpQuerier {
    my_ip: AtomicU32,
    my_eth: EtherAddr,
    bcast: Option<u32>,
    query_port: usize,
    poll_timeout: u64,
    broadcast_poll: bool,
    /// `TABLE`: the ARPTable whose state this querier uses.
    table_name: Option<String>,
    /// The table: this element's own, or (TABLE) the ARPTable's, bound at
    /// initialization.
    state: OnceLock<Arc<ArpShared>>,
    cache: PerThread<Cache>,
    queries: PerThreadCount,
    responses: PerThreadCount,
    drops: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ARPQuerier", "2/1-2", "h", make)
        .shared("ARP: one table / answers for all hosts")
        .drop_reasons(REASONS)
        // An Ethernet header in front of IP packets, mixed with ARP
        // queries it makes.
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

/// Why ARPQuerier drops a packet (its `drop_reasons`): no room to save
/// it (CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY), its address
/// never answered (the entry expired), no headroom for the Ethernet
/// header; and on input 1, a reply it has recorded, or a packet that is
/// not a reply.
const REASONS: &[&str] = &[
    "queue full",
    "no ARP answer",
    "no room for Ethernet header",
    "ARP reply consumed",
    "not an ARP reply",
];
const QUEUE_FULL: u8 = 0;
const NO_ANSWER: u8 = 1;
const NO_HEADROOM: u8 = 2;
const REPLY_CONSUMED: u8 = 3;
const NOT_A_REPLY: u8 = 4;

fn make(cx: &mut ConfigCx<'_>) -> Result<ArpQuerier, String> {
    let mut a = cx.args();
    let first = a.read_mp::<Raw>("IP").0;
    let eth = a.read_p::<EtherAddr>("ETH");
    let capacity = a.read::<usize>("CAPACITY").unwrap_or(2048);
    let entry_capacity = a.read::<usize>("ENTRY_CAPACITY").unwrap_or(0);
    let entry_packet_capacity = a.read::<usize>("ENTRY_PACKET_CAPACITY").unwrap_or(0);
    let timeout = a
        .read::<Duration>("TIMEOUT")
        .unwrap_or(Duration::from_secs(300));
    let poll_timeout = a
        .read::<Duration>("POLL_TIMEOUT")
        .unwrap_or(Duration::from_secs(60));
    let bcast = a.read::<Ipv4Addr>("BROADCAST");
    let broadcast_poll = a.read::<bool>("BROADCAST_POLL").unwrap_or(false);
    let table_name = a.read::<Raw>("TABLE").map(|r| r.0);
    a.complete()?;
    let env: &ArgEnv = cx.env;
    let prefix = Ipv4Prefix::from_arg(&first, env).map_err(|e| format!("IP: {e}"))?;
    let my_eth = match eth {
        Some(e) => e,
        None => EtherAddr::from_arg(&first, env)
            .map_err(|_| "missing mandatory ETH argument".to_string())?,
    };
    let bcast = bcast
        .map(u32::from)
        .or_else(|| (prefix.len < 31).then(|| u32::from(prefix.addr) | !prefix.mask_u32()));
    let state = OnceLock::new();
    if table_name.is_none() {
        let _ = state.set(Arc::new(ArpShared::new(TableParams {
            capacity,
            entry_capacity,
            entry_packet_capacity,
            slim_factor: 2,
            timeout,
        })));
    }
    let nthreads = cx.nthreads;
    let empty = Arc::new(Snapshot::default());
    Ok(ArpQuerier {
        my_ip: AtomicU32::new(u32::from(prefix.addr)),
        my_eth,
        bcast,
        query_port: if cx.noutputs >= 2 { 1 } else { 0 },
        poll_timeout: dur_ns(poll_timeout),
        broadcast_poll,
        table_name,
        state,
        cache: PerThread::new(nthreads, |_| Cache {
            view: View::new(empty.clone()),
            polls: [(0, EtherAddr::ZERO, 0, Timestamp::ZERO); MAX_POLLS_PER_BATCH],
        }),
        queries: PerThreadCount::new(nthreads),
        responses: PerThreadCount::new(nthreads),
        drops: PerThreadCount::new(nthreads),
    })
}

/// The next hop of an IP packet: its destination annotation, or the IP
/// header's destination when that is 0.0.0.0.
#[inline]
fn next_hop(p: &Packet) -> u32 {
    let a = u32::from(p.anno().dst_ip);
    if a != 0 {
        return a;
    }
    let h = match p.network_header() {
        Some(h) => h,
        None => p.data(),
    };
    match h.get(16..20) {
        Some(d) if h.len() >= 20 => u32::from_be_bytes([d[0], d[1], d[2], d[3]]),
        _ => 0,
    }
}

/// The Ethernet destination of addresses that need no ARP.
#[inline]
fn special(dst: u32, bcast: Option<u32>) -> Option<EtherAddr> {
    if dst == u32::MAX || Some(dst) == bcast {
        Some(EtherAddr::BROADCAST)
    } else if dst >> 28 == 0xE {
        let b = dst.to_be_bytes();
        Some(EtherAddr([0x01, 0x00, 0x5E, b[1] & 0x7F, b[2], b[3]]))
    } else {
        None
    }
}

impl ArpQuerier {
    /// The table (bound at configuration, or at initialization for TABLE;
    /// nothing runs before that).
    #[inline]
    fn st(&self) -> &ArpShared {
        self.state
            .get()
            .expect("ARPQuerier's table is bound before the router runs")
    }

    /// Whether the table is this element's own (not an ARPTable's).
    fn owns_table(&self) -> bool {
        self.table_name.is_none()
    }

    /// Handles packets the snapshot could not send.
    fn slow_path(&self, cx: &mut Cx<'_>, slow: Batch, now: u64) {
        let st = self.st();
        let mut fx = Effects::default();
        {
            let mut t = st.lock();
            let mut republish = false;
            for mut p in slow {
                let ip = next_hop(&p);
                if ip == 0 {
                    fx.dead.push(p);
                    continue;
                }
                let known = t
                    .map
                    .get(&ip)
                    .filter(|e| e.known && !st.expired(e.live, now))
                    .map(|e| e.eth);
                match known {
                    Some(eth) => {
                        if encap(&mut p, eth, self.my_eth, ethertype::IPV4) {
                            fx.out.push(p);
                        } else {
                            fx.dead.push(p);
                        }
                    }
                    None => republish |= st.save(&mut t, ip, p, now, &mut fx),
                }
            }
            if republish {
                st.publish(&t);
            }
        }
        self.finish(cx, fx);
    }

    /// Sends what a locked section decided.
    fn finish(&self, cx: &mut Cx<'_>, fx: Effects) {
        let th = cx.thread();
        if !fx.out.is_empty() {
            cx.push(0, Batch::from(fx.out));
        }
        if !fx.queries.is_empty() {
            let mut b = Batch::new();
            for &(ip, dst, vlan, stamp) in &fx.queries {
                if let Some(q) = self.make_query(ip, dst, vlan, stamp) {
                    b.push(q);
                }
            }
            self.queries.add(th, b.len() as u64);
            cx.push(self.query_port, b);
        }
        for (dead, reason) in [
            (fx.dead, None),
            (fx.full, Some(QUEUE_FULL)),
            (fx.unanswered, Some(NO_ANSWER)),
        ] {
            if dead.is_empty() {
                continue;
            }
            self.drops.add(th, dead.len() as u64);
            match reason {
                Some(r) => cx.drop_batch_for(r, Batch::from(dead)),
                None => cx.drop_batch(Batch::from(dead)),
            }
        }
    }

    /// An ARP request for `ip`, sent to `dst` (broadcast, or the known
    /// address for a unicast poll), with the timestamp of the packet that
    /// caused it.
    fn make_query(&self, ip: u32, dst: EtherAddr, vlan: u16, stamp: Timestamp) -> Option<Packet> {
        let mut q = Packet::new(42)?;
        let d = q.data_mut();
        let mut f = EthernetFrame::new_unchecked(&mut d[..]);
        f.set_dst_addr(dst);
        f.set_src_addr(self.my_eth);
        f.set_ethertype(ethertype::ARP);
        ArpRepr::request(
            self.my_eth,
            Ipv4Addr::from(self.my_ip.load(Ordering::Relaxed)),
            Ipv4Addr::from(ip),
        )
        .emit(&mut ArpPacket::new_unchecked(&mut d[14..]));
        q.set_mac_header(0);
        q.set_network_header(14, 28);
        q.anno_mut().vlan_tci = vlan;
        q.set_timestamp(stamp);
        Some(q)
    }

    /// Input 0: IP packets.
    fn push_ip(&self, cx: &mut Cx<'_>, mut batch: Batch) {
        let st = self.st();
        let now = st.now(cx.now());
        let mut out = Batch::new();
        let mut slow = Batch::new();
        let mut dead = Batch::new();
        let mut npolls = 0;
        let polls;
        {
            let cache = self.cache.get(cx);
            let snap = cache.view.get(&st.snap);
            for mut p in batch.drain() {
                let ip = next_hop(&p);
                let eth = match special(ip, self.bcast) {
                    Some(eth) => eth,
                    None => match snap.map.get(&ip) {
                        Some(e) if ip != 0 && !st.expired(e.live, now) => {
                            if self.poll_timeout != 0
                                && now >= e.live.saturating_add(self.poll_timeout)
                                && npolls < MAX_POLLS_PER_BATCH
                            {
                                let pt = e.polled.load(Ordering::Relaxed);
                                let n = e.polls.load(Ordering::Relaxed);
                                if poll_allowed(pt, n, now)
                                    && e.polled
                                        .compare_exchange(
                                            pt,
                                            now,
                                            Ordering::Relaxed,
                                            Ordering::Relaxed,
                                        )
                                        .is_ok()
                                {
                                    e.polls.fetch_add(1, Ordering::Relaxed);
                                    let to = if self.broadcast_poll {
                                        EtherAddr::BROADCAST
                                    } else {
                                        e.eth
                                    };
                                    cache.polls[npolls] =
                                        (ip, to, p.anno().vlan_tci, p.timestamp());
                                    npolls += 1;
                                }
                            }
                            e.eth
                        }
                        _ => {
                            slow.push(p);
                            continue;
                        }
                    },
                };
                if encap(&mut p, eth, self.my_eth, ethertype::IPV4) {
                    out.push(p);
                } else {
                    dead.push(p); // no buffer for the header
                }
            }
            polls = cache.polls;
        }
        // A poll goes before the packet that caused it, as Click sends it.
        if npolls > 0 {
            let mut b = Batch::new();
            for &(ip, dst, vlan, stamp) in &polls[..npolls] {
                if let Some(q) = self.make_query(ip, dst, vlan, stamp) {
                    b.push(q);
                }
            }
            self.queries.add(cx.thread(), b.len() as u64);
            cx.push(self.query_port, b);
        }
        if !out.is_empty() {
            cx.push(0, out);
        }
        if !dead.is_empty() {
            self.drops.add(cx.thread(), dead.len() as u64);
            cx.drop_batch_for(NO_HEADROOM, dead);
        }
        if !slow.is_empty() {
            self.slow_path(cx, slow, now);
        }
    }

    /// Input 1: ARP replies.
    fn push_arp(&self, cx: &mut Cx<'_>, mut batch: Batch) {
        let st = self.st();
        let now = st.now(cx.now());
        let mut fx = Effects::default();
        // Every packet of input 1 ends here: replies are consumed once
        // recorded (counted by `responses`), the rest are bad. Both count as
        // the router's drops of this element.
        let mut used = Batch::new();
        let mut bad = Batch::new();
        let mut answered = 0u64;
        {
            let mut t = st.lock();
            let mut republish = false;
            for p in batch.drain() {
                let Some((ip, eth)) = parse_reply(&p) else {
                    bad.push(p);
                    continue;
                };
                used.push(p);
                answered += 1;
                let age = t.newest();
                let (e, _) = st.ensure(&mut t, ip, now, &mut fx.full);
                e.eth = eth;
                e.known = true;
                e.live = now;
                e.age = age;
                e.polled = NEVER;
                e.polls = 0;
                let released: Vec<Packet> = e.pending.drain(..).collect();
                t.pending -= released.len();
                for mut q in released {
                    if encap(&mut q, eth, self.my_eth, ethertype::IPV4) {
                        fx.out.push(q);
                    } else {
                        fx.dead.push(q);
                    }
                }
                republish = true;
            }
            if republish {
                st.publish(&t);
            }
        }
        self.responses.add(cx.thread(), answered);
        cx.drop_batch_for(REPLY_CONSUMED, used);
        cx.drop_batch_for(NOT_A_REPLY, bad);
        self.finish(cx, fx);
    }
}

/// The (IP, Ethernet) mapping an ARP reply frame announces.
fn parse_reply(p: &Packet) -> Option<(u32, EtherAddr)> {
    let d = p.data();
    let f = EthernetFrame::new_checked(d).ok()?;
    if f.ethertype() != ethertype::ARP {
        return None;
    }
    let r = ArpRepr::parse(&ArpPacket::new_checked(f.payload()).ok()?).ok()?;
    let ip = u32::from(r.source_protocol_addr);
    let eth = r.source_hardware_addr;
    (r.operation == ArpOp::Reply && ip != 0 && !eth.is_multicast() && !eth.is_zero())
        .then_some((ip, eth))
}

impl Element for ArpQuerier {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, hx| e.st().table_text(hx)),
        Handler::read("stats", |e, _| {
            format!(
                "{} packets killed\n{} ARP queries sent\n",
                e.drops.get(),
                e.queries.get()
            )
        }),
        Handler::read("queries", |e, _| e.queries.get().to_string()),
        Handler::read("responses", |e, _| e.responses.get().to_string()),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::read("count", |e, _| e.st().count().to_string()),
        Handler::read("length", |e, _| e.st().length().to_string()),
        Handler::rw(
            "ipaddr",
            |e, _| Ipv4Addr::from(e.my_ip.load(Ordering::Relaxed)).to_string(),
            |e, v, hx| {
                e.my_ip
                    .store(u32::from(hx.arg::<Ipv4Addr>(v)?), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("broadcast", |e, _| {
            Ipv4Addr::from(e.bcast.unwrap_or(u32::MAX)).to_string()
        }),
        Handler::write("insert", |e, v, hx| e.st().insert(v, hx)),
        Handler::write("delete", |e, v, hx| {
            e.st().delete(hx.arg(v)?, hx);
            Ok(())
        }),
        Handler::write("clear", |e, _, hx| {
            e.st().clear(hx);
            Ok(())
        }),
    ];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        if port == 0 {
            self.push_ip(cx, batch);
        } else {
            self.push_arp(cx, batch);
        }
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if let Some(n) = &self.table_name {
            let i = ix
                .find(n)
                .ok_or_else(|| format!("TABLE: no element named '{n}'"))?;
            let t = ix.element::<ArpTable>(i).ok_or_else(|| {
                format!("TABLE: '{n}' ({}) is not an ARPTable", ix.element_class(i))
            })?;
            let _ = self.state.set(t.shared().clone());
        }
        let st = self.st();
        st.add_user(ix.element_index());
        ix.schedule_after(TIMER, st.period());
        Ok(())
    }

    /// Removes expired entries (their waiting packets dropped), sends
    /// packets whose entry a handler inserted, drops what handlers
    /// deleted. Queries are sent only when packets arrive, as Click's.
    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let st = self.st();
        let now = st.now(cx.now());
        let mut fx = Effects::default();
        {
            let mut t = st.lock();
            let mut republish = false;
            let mut expired = Vec::new();
            for (&ip, e) in t.map.iter_mut() {
                if st.expired(e.live, now) {
                    expired.push(ip);
                } else if e.known && !e.pending.is_empty() {
                    for mut q in e.pending.drain(..) {
                        if encap(&mut q, e.eth, self.my_eth, ethertype::IPV4) {
                            fx.out.push(q);
                        } else {
                            fx.dead.push(q);
                        }
                    }
                }
            }
            for ip in expired {
                if let Some(e) = ArpShared::remove_entry(&mut t, ip, &mut fx.unanswered) {
                    republish |= e.known;
                }
            }
            t.pending = t.map.values().map(|e| e.pending.len()).sum();
            let grave = std::mem::take(&mut t.graveyard);
            fx.dead.extend(grave);
            if republish {
                st.publish(&t);
            }
        }
        self.finish(cx, fx);
        cx.schedule_after(TIMER, st.period());
    }

    /// Packets saved in this element's own table (an ARPTable counts those
    /// of a shared one, once).
    fn queued(&self) -> usize {
        match self.state.get() {
            Some(st) if self.owns_table() => st.queued(),
            _ => 0,
        }
    }

    /// Hot reconfiguration: the old table (known entries with their ages,
    /// packets waiting for a reply) and the counts. This element's clock
    /// continues the old one's, so entries expire when they would have. A
    /// table shared through TABLE is the ARPTable's to take.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        if let (Some(new), Some(o)) = (self.state.get(), old.state.get()) {
            if self.owns_table() && old.owns_table() {
                new.take_from(o);
            } else if old.owns_table() {
                // The old table is not carried into a shared one: its saved
                // packets are dropped, counted.
                let t = std::mem::take(&mut *o.lock());
                let n = (t.pending + t.graveyard.len()) as u64;
                drop(t);
                self.drops.add(0, n);
                sx.count_drops(n);
            }
        }
        self.queries.add(0, old.queries.get());
        self.responses.add(0, old.responses.get());
        self.drops.add(0, old.drops.get());
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::{ArpRepr, EtherAddr};
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::Harness;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    const MY_IP: &str = "10.0.0.1";
    const MY_ETH: &str = "00:00:c0:ae:67:ef";
    const PEER_IP: &str = "10.0.0.2";
    const PEER_ETH: &str = "00:11:22:33:44:55";

    fn querier(extra: &str, noutputs: usize) -> Harness {
        harness_io(
            &format!("ARPQuerier({MY_IP}, {MY_ETH}{extra})"),
            2,
            noutputs,
        )
    }

    /// An IP packet to `dst` (annotation set), tagged by its payload byte.
    fn to(dst: &str, tag: u8) -> Packet {
        let mut p = ip_pkt(ip("10.0.0.100"), ip("192.168.7.7"), 17, &[tag]);
        p.anno_mut().dst_ip = ip(dst);
        p
    }

    fn encapsulated(dst_eth: &str, dst: &str, tag: u8) -> Vec<u8> {
        let _ = dst;
        ether_frame(
            eth(dst_eth),
            eth(MY_ETH),
            0x0800,
            &ipv4(ip("10.0.0.100"), ip("192.168.7.7"), 17, &[tag]),
        )
    }

    fn query_for(target: &str, dst_eth: EtherAddr) -> Vec<u8> {
        let r = ArpRepr::request(eth(MY_ETH), ip(MY_IP), ip(target));
        arp_frame(dst_eth, eth(MY_ETH), &r)
    }

    fn reply_from(addr: &str, mac: &str) -> Packet {
        let r = ArpRepr::reply(eth(mac), ip(addr), eth(MY_ETH), ip(MY_IP));
        pkt(&arp_frame(eth(MY_ETH), eth(mac), &r))
    }

    fn datas(ps: &[Packet]) -> Vec<Vec<u8>> {
        ps.iter().map(|p| p.data().to_vec()).collect()
    }

    /// [`querier`] in simulated time (the test moves the clock), with
    /// `rest` as extra configuration.
    fn sim_querier(extra: &str, rest: &str) -> Harness {
        Harness::simulated(
            &reg(),
            &format!("ARPQuerier({MY_IP}, {MY_ETH}{extra}); {rest}"),
            2,
            2,
        )
        .unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn full_cycle_query_reply_release() {
        let h = querier("", 2);
        h.push(0, vec![to(PEER_IP, 1)]);
        assert!(h.output(0).is_empty());
        let q = h.output(1);
        assert_eq!(datas(&q), vec![query_for(PEER_IP, EtherAddr::BROADCAST)]);
        assert_eq!(h.read("length").unwrap(), "1");
        assert_eq!(h.read("count").unwrap(), "1");
        assert!(h
            .read("table")
            .unwrap()
            .starts_with("10.0.0.2 0 FF-FF-FF-FF-FF-FF 0."));
        assert_eq!(h.router.total_queued(), 1);

        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        let out = h.output(0);
        assert_eq!(datas(&out), vec![encapsulated(PEER_ETH, PEER_IP, 1)]);
        assert_eq!(out[0].mac_header_offset(), Some(0));
        assert_eq!(h.read("length").unwrap(), "0");
        assert_eq!(h.read("responses").unwrap(), "1");
        assert!(h
            .read("table")
            .unwrap()
            .starts_with("10.0.0.2 1 00-11-22-33-44-55 0."));

        // Known now: straight through, no query.
        h.push(0, vec![to(PEER_IP, 2), to(PEER_IP, 3)]);
        assert_eq!(
            datas(&h.output(0)),
            vec![
                encapsulated(PEER_ETH, PEER_IP, 2),
                encapsulated(PEER_ETH, PEER_IP, 3)
            ]
        );
        assert!(h.output(1).is_empty());
        assert_eq!(h.read("queries").unwrap(), "1");
        assert_eq!(
            h.read("stats").unwrap(),
            "0 packets killed\n1 ARP queries sent\n"
        );
        assert_eq!(h.drops(), 1); // the consumed reply
        assert_eq!(h.read("drop_reasons").unwrap(), "ARP reply consumed 1\n");
        assert_eq!(h.router.total_queued(), 0);
    }

    #[test]
    fn queries_carry_the_timestamp_of_the_packet_that_asked() {
        use paraclick_packet::Timestamp;
        let h = sim_querier("", "");
        let stamped = |dst: &str, n: u8, ts: i64| {
            let mut p = to(dst, n);
            p.set_timestamp(Timestamp(ts));
            p
        };
        h.push(0, vec![stamped(PEER_IP, 1, 10_000_000)]);
        h.push(0, vec![stamped("10.0.0.3", 2, 15_000_000)]);
        let q = h.output(1);
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].timestamp(), Timestamp(10_000_000));
        assert_eq!(q[1].timestamp(), Timestamp(15_000_000));
    }

    #[test]
    fn one_output_carries_queries_too() {
        let h = querier("", 1);
        h.push(0, vec![to(PEER_IP, 1)]);
        assert_eq!(
            datas(&h.output(0)),
            vec![query_for(PEER_IP, EtherAddr::BROADCAST)]
        );
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        assert_eq!(
            datas(&h.output(0)),
            vec![encapsulated(PEER_ETH, PEER_IP, 1)]
        );
    }

    #[test]
    fn queries_are_rate_limited_and_packets_kept_in_order() {
        let h = sim_querier("", "");
        h.push(0, vec![to(PEER_IP, 1), to(PEER_IP, 2)]);
        h.push(0, vec![to(PEER_IP, 3), to("10.0.0.3", 4)]);
        let q = datas(&h.output(1));
        assert_eq!(
            q,
            vec![
                query_for(PEER_IP, EtherAddr::BROADCAST),
                query_for("10.0.0.3", EtherAddr::BROADCAST)
            ]
        );
        assert_eq!(h.read("length").unwrap(), "4");
        // Another query for the same address is allowed 100 ms after the
        // last, not before.
        h.advance(ms(99));
        h.push(0, vec![to(PEER_IP, 5)]);
        assert!(h.output(1).is_empty());
        h.advance(ms(1));
        h.push(0, vec![to(PEER_IP, 6)]);
        assert_eq!(
            datas(&h.output(1)),
            vec![query_for(PEER_IP, EtherAddr::BROADCAST)]
        );
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        let tags: Vec<u8> = h
            .output(0)
            .iter()
            .map(|p| *p.data().last().unwrap())
            .collect();
        assert_eq!(tags, [1, 2, 3, 5, 6]);
        assert_eq!(h.read("length").unwrap(), "1");
    }

    fn tags(ps: &[Packet]) -> Vec<u8> {
        ps.iter().map(|p| *p.data().last().unwrap()).collect()
    }

    #[test]
    fn pending_packets_are_bounded() {
        // CAPACITY 4: the fifth packet drops saved packets, oldest entries
        // first, until 4 - 4/2 = 2 remain with it.
        let h = sim_querier(", CAPACITY 4", "");
        for (dst, t) in [("10.0.0.2", 1), ("10.0.0.3", 2), ("10.0.0.4", 3)] {
            h.push(0, vec![to(dst, t)]);
        }
        h.push(0, vec![to("10.0.0.2", 4)]);
        assert_eq!(h.read("length").unwrap(), "4");
        h.push(0, vec![to("10.0.0.4", 5)]);
        assert_eq!(h.read("length").unwrap(), "2");
        assert_eq!(h.read("drops").unwrap(), "3");
        assert_eq!(h.drops(), 3);
        assert_eq!(h.read("drop_reasons").unwrap(), "queue full 3\n");
        // 10.0.0.2's (1, 4) and 10.0.0.3's (2) went; 10.0.0.4 keeps 3, 5.
        for a in ["10.0.0.2", "10.0.0.3", "10.0.0.4"] {
            h.push(1, vec![reply_from(a, PEER_ETH)]);
        }
        assert_eq!(tags(&h.output(0)), [3, 5]);

        // ENTRY_PACKET_CAPACITY 2: a full entry drops the new packet, and
        // sends no query for it.
        let h = sim_querier(", ENTRY_PACKET_CAPACITY 2", "");
        h.push(0, vec![to(PEER_IP, 1), to(PEER_IP, 2)]);
        assert_eq!(h.output(1).len(), 1);
        h.advance(ms(200));
        h.push(0, vec![to(PEER_IP, 3)]);
        assert!(h.output(1).is_empty(), "no query for a dropped packet");
        h.push(0, vec![to("10.0.0.3", 9)]);
        assert_eq!(h.read("length").unwrap(), "3");
        assert_eq!(h.read("drops").unwrap(), "1");
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        assert_eq!(tags(&h.output(0)), [1, 2]);

        // ENTRY_CAPACITY 2: a third address evicts the oldest entry.
        let h = sim_querier(", ENTRY_CAPACITY 2", "");
        h.push(0, vec![to("10.0.0.2", 1)]);
        h.advance(ms(2));
        h.push(0, vec![to("10.0.0.3", 2)]);
        h.advance(ms(2));
        h.push(0, vec![to("10.0.0.4", 3)]);
        assert_eq!(h.read("count").unwrap(), "2");
        assert_eq!(h.read("length").unwrap(), "2");
        assert!(!h.read("table").unwrap().contains("10.0.0.2 "));
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn special_destinations() {
        let h = harness_io(&format!("ARPQuerier({MY_IP}/24, {MY_ETH})"), 2, 2);
        assert_eq!(h.read("broadcast").unwrap(), "10.0.0.255");
        let mut hdr_dst = ip_pkt(ip("10.0.0.100"), ip("255.255.255.255"), 17, &[4]);
        hdr_dst.anno_mut().dst_ip = Ipv4Addr::UNSPECIFIED;
        let mut zero = ip_pkt(ip("10.0.0.100"), ip("0.0.0.0"), 17, &[5]);
        zero.anno_mut().dst_ip = Ipv4Addr::UNSPECIFIED;
        h.push(
            0,
            vec![
                to("255.255.255.255", 1),
                to("10.0.0.255", 2),
                to("224.129.2.3", 3),
                hdr_dst,
                zero,
            ],
        );
        let out = h.output(0);
        let dsts: Vec<&[u8]> = out.iter().map(|p| &p.data()[..6]).collect();
        assert_eq!(
            dsts,
            vec![
                &[0xff; 6][..],
                &[0xff; 6][..],
                &[0x01, 0x00, 0x5e, 0x01, 0x02, 0x03][..],
                &[0xff; 6][..],
            ]
        );
        assert!(h.output(1).is_empty());
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.drops(), 1);

        // The header's destination is the next hop when the annotation is 0.
        let mut p = ip_pkt(ip("10.0.0.100"), ip(PEER_IP), 17, &[6]);
        p.anno_mut().dst_ip = Ipv4Addr::UNSPECIFIED;
        h.push(0, vec![p]);
        assert_eq!(
            datas(&h.output(1)),
            vec![query_for(PEER_IP, EtherAddr::BROADCAST)]
        );
    }

    #[test]
    fn entries_expire() {
        let h = sim_querier(", TIMEOUT 50ms", "");
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        h.push(0, vec![to(PEER_IP, 1)]);
        assert_eq!(h.output(0).len(), 1);
        // Still known at TIMEOUT...
        h.advance(ms(50));
        h.push(0, vec![to(PEER_IP, 1)]);
        assert_eq!(h.output(0).len(), 1);
        assert!(h.output(1).is_empty());
        // ...expired just after.
        h.advance(Duration::from_nanos(1));
        assert!(h
            .read("table")
            .unwrap()
            .starts_with("10.0.0.2 0 00-11-22-33-44-55"));
        h.push(0, vec![to(PEER_IP, 2)]);
        assert!(h.output(0).is_empty());
        assert_eq!(
            datas(&h.output(1)),
            vec![query_for(PEER_IP, EtherAddr::BROADCAST)]
        );
        assert_eq!(h.read("length").unwrap(), "1");
        h.push(1, vec![reply_from(PEER_IP, "00:11:22:33:44:66")]);
        assert_eq!(
            datas(&h.output(0)),
            vec![encapsulated("00:11:22:33:44:66", PEER_IP, 2)]
        );
    }

    #[test]
    fn queries_only_when_packets_arrive_and_expiry_waits_for_the_timer() {
        // TIMEOUT 300ms: the timer removes invalid entries every 1 s
        // (whole seconds of TIMEOUT, plus one).
        let h = sim_querier(", TIMEOUT 300ms", "Script(wait 950ms, stop)");
        h.push(0, vec![to(PEER_IP, 1), to(PEER_IP, 2)]);
        assert_eq!(h.output(1).len(), 1);
        paraclick_runtime::testing::run(&h.router);
        // Nothing was sent again while no packet arrived, and the invalid
        // entry is kept, with its packets, until the timer's next run.
        assert!(h.output(1).is_empty(), "a query without a packet");
        assert!(h
            .read("table")
            .unwrap()
            .starts_with("10.0.0.2 0 FF-FF-FF-FF-FF-FF"));
        assert_eq!(h.read("length").unwrap(), "2");
        // A packet for it asks again.
        h.push(0, vec![to(PEER_IP, 3)]);
        assert_eq!(h.output(1).len(), 1);

        let h = sim_querier(", TIMEOUT 300ms", "Script(wait 1100ms, stop)");
        h.push(0, vec![to(PEER_IP, 1), to(PEER_IP, 2)]);
        paraclick_runtime::testing::run(&h.router);
        assert_eq!(h.read("count").unwrap(), "0");
        assert_eq!(h.read("length").unwrap(), "0");
        assert_eq!(h.drops(), 2);
        assert_eq!(h.read("drop_reasons").unwrap(), "no ARP answer 2\n");
        assert!(h.output(0).is_empty());
        assert_eq!(
            h.read("stats").unwrap(),
            "2 packets killed\n1 ARP queries sent\n"
        );
    }

    #[test]
    fn ten_queries_a_second_then_one_every_two() {
        let h = sim_querier("", "");
        let mut sent = Vec::new();
        // A packet every 50 ms for 3 s.
        for i in 0..60u64 {
            h.push(0, vec![to(PEER_IP, 1)]);
            if !h.output(1).is_empty() {
                sent.push(i * 50);
            }
            h.advance(ms(50));
        }
        assert_eq!(sent, [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 2900]);
    }

    #[test]
    fn table_lists_entries_oldest_first_and_keeps_expired_addresses() {
        // Invalid entries keep their address; a packet for one moves its
        // age to TIMEOUT ago, before the entries of that age, and a reply
        // makes an entry the newest.
        let h = sim_querier(", TIMEOUT 100ms", "");
        h.write("insert", "10.0.0.1 02:01:00:00:01:0f").unwrap();
        h.write("insert", "10.0.0.2 02:01:00:00:02:0f").unwrap();
        h.push(0, vec![to("10.0.0.3", 3)]);
        assert_eq!(h.output(1).len(), 1);
        h.advance(ms(120));
        h.push(0, vec![to("10.0.0.1", 4)]);
        h.push(0, vec![to("10.0.0.2", 5)]);
        h.push(0, vec![to("10.0.0.3", 6)]);
        assert_eq!(h.output(1).len(), 3);
        h.advance(ms(30));
        h.push(1, vec![reply_from("10.0.0.1", "02:01:00:00:01:0d")]);
        assert_eq!(tags(&h.output(0)), [4]);
        let t = h.read("table").unwrap();
        let rows: Vec<String> = t
            .lines()
            .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            rows,
            [
                "10.0.0.3 0 FF-FF-FF-FF-FF-FF",
                "10.0.0.2 0 02-01-00-00-02-0F",
                "10.0.0.1 1 02-01-00-00-01-0D"
            ],
            "{t}"
        );
    }

    #[test]
    fn a_poll_goes_before_the_packet_that_caused_it() {
        // One output: queries and packets leave in the order sent.
        let h = Harness::simulated(
            &reg(),
            &format!("ARPQuerier({MY_IP}, {MY_ETH}, POLL_TIMEOUT 20ms)"),
            2,
            1,
        )
        .unwrap();
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        h.advance(ms(20));
        h.push(0, vec![to(PEER_IP, 1)]);
        assert_eq!(
            datas(&h.output(0)),
            vec![
                query_for(PEER_IP, eth(PEER_ETH)),
                encapsulated(PEER_ETH, PEER_IP, 1)
            ]
        );
    }

    #[test]
    fn known_entries_are_polled() {
        let h = sim_querier(", POLL_TIMEOUT 20ms", "");
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        h.push(0, vec![to(PEER_IP, 1)]);
        assert!(h.output(1).is_empty());
        h.advance(ms(19));
        h.push(0, vec![to(PEER_IP, 1)]);
        assert!(h.output(1).is_empty(), "polled before POLL_TIMEOUT");
        assert_eq!(h.output(0).len(), 2);
        h.advance(ms(1));
        h.push(0, vec![to(PEER_IP, 2), to(PEER_IP, 3)]);
        h.push(0, vec![to(PEER_IP, 4)]);
        assert_eq!(h.output(0).len(), 3);
        assert_eq!(datas(&h.output(1)), vec![query_for(PEER_IP, eth(PEER_ETH))]);
        // A reply renews the entry: no more polls for POLL_TIMEOUT.
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        h.push(0, vec![to(PEER_IP, 5)]);
        assert!(h.output(1).is_empty());

        let h = sim_querier(", POLL_TIMEOUT 20ms, BROADCAST_POLL true", "");
        h.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        h.advance(ms(20));
        h.push(0, vec![to(PEER_IP, 1)]);
        assert_eq!(
            datas(&h.output(1)),
            vec![query_for(PEER_IP, EtherAddr::BROADCAST)]
        );
    }

    #[test]
    fn handlers_insert_delete_clear() {
        let h = querier("", 2);
        assert_eq!(h.read("ipaddr").unwrap(), MY_IP);
        assert_eq!(h.read("broadcast").unwrap(), "255.255.255.255");
        h.write("insert", &format!("{PEER_IP} {PEER_ETH}")).unwrap();
        assert_err(
            h.write("insert", "10.0.0.9"),
            "e.insert: expected 'IP ETH', not '10.0.0.9'",
        );
        assert_err(
            h.write("insert", "10.0.0.9 ff:ff:ff:ff:ff:ff"),
            "e.insert: bad entry '10.0.0.9 ff:ff:ff:ff:ff:ff'",
        );
        h.push(0, vec![to(PEER_IP, 1)]);
        assert_eq!(
            datas(&h.output(0)),
            vec![encapsulated(PEER_ETH, PEER_IP, 1)]
        );
        h.write("delete", PEER_IP).unwrap();
        h.push(0, vec![to(PEER_IP, 2)]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.output(1).len(), 1);

        // Packets waiting when an entry is inserted leave on the timer.
        h.write("insert", &format!("{PEER_IP} {PEER_ETH}")).unwrap();
        h.write("ipaddr", "10.0.0.77").unwrap();
        h.push(0, vec![to("10.0.0.3", 3)]);
        let q = h.output(1);
        assert_eq!(&q[0].data()[28..32], &[10, 0, 0, 77]);
        h.write("delete", "10.0.0.3").unwrap();
        assert_eq!(h.read("count").unwrap(), "1");
        assert_eq!(h.router.total_queued(), 2); // 2 to send, 3 to drop
                                                // (The sink's packet counts as held until taken.)
        paraclick_runtime::testing::run_until(&h.router, |r| r.total_queued() == 1);
        assert_eq!(
            datas(&h.output(0)),
            vec![encapsulated(PEER_ETH, PEER_IP, 2)]
        );
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.drops(), 1);
        assert_eq!(h.router.total_queued(), 0);
        h.write("clear", "").unwrap();
        assert_eq!(h.read("count").unwrap(), "0");
        assert_eq!(h.read("table").unwrap(), "");
    }

    #[test]
    fn bad_packets_on_input_1_are_dropped() {
        let h = querier("", 2);
        let req = ArpRepr::request(eth(PEER_ETH), ip(PEER_IP), ip(MY_IP));
        let bcast_reply = ArpRepr::reply(
            eth("ff:ff:ff:ff:ff:ff"),
            ip(PEER_IP),
            eth(MY_ETH),
            ip(MY_IP),
        );
        let mut not_eth = arp_frame(
            eth(MY_ETH),
            eth(PEER_ETH),
            &ArpRepr::reply(eth(PEER_ETH), ip(PEER_IP), eth(MY_ETH), ip(MY_IP)),
        );
        not_eth[15] = 6; // hardware type 6
        let good = reply_from(PEER_IP, PEER_ETH);
        h.push(
            1,
            vec![
                pkt(&arp_frame(eth(MY_ETH), eth(PEER_ETH), &req)),
                pkt(&arp_frame(eth(MY_ETH), eth(PEER_ETH), &bcast_reply)),
                pkt(&not_eth),
                pkt(&good.data()[..41]),
                pkt(&ether_frame(eth(MY_ETH), eth(PEER_ETH), 0x0800, &[0; 28])),
                pkt(&[]),
            ],
        );
        assert_eq!(h.drops(), 6);
        assert_eq!(h.read("responses").unwrap(), "0");
        assert_eq!(h.read("count").unwrap(), "0");
    }

    #[test]
    fn one_argument_form_and_bad_configuration() {
        use paraclick_runtime::args::{AddrEntry, ArgEnv, FromArg};
        let mut env = ArgEnv::default();
        env.names.insert(
            "eth0".into(),
            AddrEntry {
                ip: Some(ip("1.0.0.1")),
                prefix_len: Some(8),
                ether: Some(eth("0:1:2:3:4:5")),
                ..Default::default()
            },
        );
        assert_eq!(
            paraclick_packet::wire::Ipv4Prefix::from_arg("eth0", &env)
                .unwrap()
                .to_string(),
            "1.0.0.1/8"
        );
        assert_eq!(
            EtherAddr::from_arg("eth0", &env).unwrap(),
            eth("0:1:2:3:4:5")
        );
        for (bad, want) in [
            (
                "ARPQuerier(10.0.0.1)",
                "e :: ARPQuerier: missing mandatory ETH argument",
            ),
            (
                "ARPQuerier(10.0.0.300, 0:1:2:3:4:5)",
                "e :: ARPQuerier: IP: expected IP prefix, not '10.0.0.300'",
            ),
            (
                "ARPQuerier(10.0.0.1, 0:1:2:3:4)",
                "e :: ARPQuerier: ETH: expected Ethernet address, not '0:1:2:3:4'",
            ),
            (
                "ARPQuerier(10.0.0.1, 0:1:2:3:4:5, TIMEOUT forever)",
                "e :: ARPQuerier: TIMEOUT: expected time in seconds",
            ),
            (
                "ARPQuerier(10.0.0.1, 0:1:2:3:4:5, TABLE t)",
                "e :: ARPQuerier: TABLE: no element named 't'",
            ),
            (
                "ARPQuerier(10.0.0.1, 0:1:2:3:4:5, FOO 1)",
                "e :: ARPQuerier: unknown keyword FOO",
            ),
        ] {
            assert_err(try_harness_io(bad, 2, 1), want);
        }
    }

    const MY_ETH1: &str = "00:00:c0:ae:67:f0";

    /// Two queriers naming one ARPTable `t`: `q0` (MY_IP, MY_ETH) and `q1`
    /// (10.0.1.1, MY_ETH1), outputs into `a0`/`b0` and `a1`/`b1`.
    fn two_queriers(table: &str, threads: usize) -> paraclick_runtime::Router {
        let conf = format!(
            "t :: ARPTable({table});
             q0 :: ARPQuerier({MY_IP}, {MY_ETH}, TABLE t);
             q1 :: ARPQuerier(10.0.1.1, {MY_ETH1}, TABLE t, CAPACITY 1);
             TestSource -> [0]q0; TestSource -> [1]q0;
             TestSource -> [0]q1; TestSource -> [1]q1;
             q0[0] -> a0 :: TestSink; q0[1] -> b0 :: TestSink;
             q1[0] -> a1 :: TestSink; q1[1] -> b1 :: TestSink;"
        );
        paraclick_runtime::Router::from_str(&conf, &reg(), threads)
            .unwrap_or_else(|d| panic!("{}", d[0].message))
    }

    fn sink(r: &paraclick_runtime::Router, name: &str) -> Vec<Packet> {
        r.element::<paraclick_runtime::testing::TestSink>(name)
            .unwrap()
            .take()
    }

    fn send(r: &paraclick_runtime::Router, e: &str, port: usize, ps: Vec<Packet>) {
        r.push_into(e, port, paraclick_packet::Batch::from(ps))
            .unwrap();
    }

    fn encapsulated_from(src_eth: &str, dst_eth: &str, tag: u8) -> Vec<u8> {
        ether_frame(
            eth(dst_eth),
            eth(src_eth),
            0x0800,
            &ipv4(ip("10.0.0.100"), ip("192.168.7.7"), 17, &[tag]),
        )
    }

    #[test]
    fn queriers_naming_one_arptable_share_its_entries() {
        let r = two_queriers("", 1);
        // q0 learns PEER from a reply...
        send(&r, "q0", 0, vec![to(PEER_IP, 1)]);
        assert_eq!(
            datas(&sink(&r, "b0")),
            vec![query_for(PEER_IP, EtherAddr::BROADCAST)]
        );
        send(&r, "q0", 1, vec![reply_from(PEER_IP, PEER_ETH)]);
        assert_eq!(
            datas(&sink(&r, "a0")),
            vec![encapsulated(PEER_ETH, PEER_IP, 1)]
        );
        // ...and q1 sends to PEER without asking, with its own source.
        send(&r, "q1", 0, vec![to(PEER_IP, 2)]);
        assert_eq!(
            datas(&sink(&r, "a1")),
            vec![encapsulated_from(MY_ETH1, PEER_ETH, 2)]
        );
        assert!(sink(&r, "b1").is_empty());
        assert_eq!(r.read_handler("q1.queries").unwrap(), "0");
        // Every view of the table shows the learnt entry.
        for h in ["t.table", "q0.table", "q1.table"] {
            let t = r.read_handler(h).unwrap();
            assert!(t.starts_with("10.0.0.2 1 00-11-22-33-44-55 "), "{h}: {t}");
            assert_eq!(t.lines().count(), 1, "{h}: {t}");
        }
        assert_eq!(r.read_handler("t.count").unwrap(), "1");
        assert_eq!(r.read_handler("q1.count").unwrap(), "1");

        // An entry inserted through the ARPTable serves both queriers.
        r.write_handler("t.insert", "10.0.0.3 00:11:22:33:44:77")
            .unwrap();
        send(&r, "q0", 0, vec![to("10.0.0.3", 3)]);
        send(&r, "q1", 0, vec![to("10.0.0.3", 4)]);
        assert_eq!(
            datas(&sink(&r, "a0")),
            vec![encapsulated("00:11:22:33:44:77", "10.0.0.3", 3)]
        );
        assert_eq!(
            datas(&sink(&r, "a1")),
            vec![encapsulated_from(MY_ETH1, "00:11:22:33:44:77", 4)]
        );
        // A querier's delete is the table's.
        r.write_handler("q1.delete", PEER_IP).unwrap();
        assert!(!r.read_handler("t.table").unwrap().contains("10.0.0.2 "));
        send(&r, "q0", 0, vec![to(PEER_IP, 5)]);
        assert!(sink(&r, "a0").is_empty());
        assert_eq!(sink(&r, "b0").len(), 1);
        assert_eq!(r.total_queued(), 1, "the saved packet is counted once");
        r.write_handler("t.clear", "").unwrap();
        assert_eq!(r.read_handler("q0.count").unwrap(), "0");
    }

    #[test]
    fn saved_packets_leave_through_the_querier_that_hears_the_reply() {
        // TABLE: the querier's own CAPACITY (1 for q1) is ignored, the
        // ARPTable's counts (ENTRY_PACKET_CAPACITY 2 here).
        let r = two_queriers("ENTRY_PACKET_CAPACITY 2", 1);
        send(&r, "q1", 0, vec![to(PEER_IP, 1), to(PEER_IP, 2)]);
        send(&r, "q0", 0, vec![to(PEER_IP, 3)]);
        assert_eq!(r.read_handler("t.length").unwrap(), "2");
        assert_eq!(r.read_handler("q1.length").unwrap(), "2");
        assert_eq!(sink(&r, "b1").len(), 1); // one query (rate limit)
        assert!(sink(&r, "b0").is_empty());
        assert_eq!(r.total_queued(), 2, "saved packets are counted once");
        // The entry is full: packet 3 is dropped.
        assert_eq!(r.total_drops(), 1);
        // q0 hears the reply and sends all of PEER's saved packets.
        send(&r, "q0", 1, vec![reply_from(PEER_IP, PEER_ETH)]);
        assert_eq!(
            datas(&sink(&r, "a0")),
            vec![
                encapsulated(PEER_ETH, PEER_IP, 1),
                encapsulated(PEER_ETH, PEER_IP, 2)
            ]
        );
        assert!(sink(&r, "a1").is_empty());
        assert_eq!(r.total_queued(), 0);
        assert_eq!(r.read_handler("t.length").unwrap(), "0");
    }

    #[test]
    fn arptable_insert_releases_packets_a_querier_saved() {
        let r = two_queriers("", 1);
        send(&r, "q1", 0, vec![to(PEER_IP, 7)]);
        send(&r, "q0", 0, vec![to("10.0.0.9", 8)]);
        assert_eq!(sink(&r, "b1").len(), 1);
        assert_eq!(sink(&r, "b0").len(), 1);
        assert_eq!(r.total_queued(), 2);
        // Inserted through the ARPTable: a querier's timer sends packet 7;
        // deleted through it: a querier's timer drops packet 8.
        r.write_handler("t.insert", &format!("{PEER_IP} {PEER_ETH}"))
            .unwrap();
        r.write_handler("t.delete", "10.0.0.9").unwrap();
        assert_eq!(r.total_queued(), 2, "until a timer runs");
        run_router_for(&r, Duration::from_millis(50));
        let mut out = sink(&r, "a0");
        out.extend(sink(&r, "a1"));
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].data()[..6], &eth(PEER_ETH).0[..]);
        assert_eq!(*out[0].data().last().unwrap(), 7);
        assert_eq!(r.total_queued(), 0);
        assert_eq!(r.total_drops(), 1);
        let killed: u64 = ["q0", "q1"]
            .iter()
            .map(|q| {
                r.read_handler(&format!("{q}.drops"))
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        assert_eq!(killed, 1);
    }

    #[test]
    fn table_must_name_an_arptable() {
        let e = try_harness_io(
            &format!("ARPQuerier({MY_IP}, {MY_ETH}, TABLE c); c :: AddressInfo(x 10.0.0.5)"),
            2,
            1,
        )
        .err()
        .unwrap();
        assert!(
            e.contains("TABLE: 'c' (AddressInfo) is not an ARPTable"),
            "{e}"
        );
        let e = try_harness_io(&format!("ARPQuerier({MY_IP}, {MY_ETH}, TABLE nope)"), 2, 1)
            .err()
            .unwrap();
        assert!(e.contains("TABLE: no element named 'nope'"), "{e}");
    }

    fn run_router_for(r: &paraclick_runtime::Router, d: Duration) {
        let s = r.stopper();
        let t = std::thread::spawn(move || {
            std::thread::sleep(d);
            s.stop();
        });
        r.run();
        t.join().unwrap();
    }

    #[test]
    fn a_hot_swap_carries_its_own_table_its_waiting_packets_and_counts() {
        const OTHER_IP: &str = "10.0.0.3";
        const OTHER_ETH: &str = "00:11:22:33:44:66";
        let old = querier("", 2);
        old.push(0, vec![to(PEER_IP, 1)]);
        old.push(1, vec![reply_from(PEER_IP, PEER_ETH)]);
        assert_eq!(old.output(0).len(), 1);
        old.push(0, vec![to(OTHER_IP, 2)]);
        assert_eq!(old.output(1).len(), 2, "two queries");
        assert_eq!(old.router.total_queued(), 1);

        let new = querier("", 2);
        new.router.take_state_from(&old.router).unwrap();
        assert_eq!(new.read("queries").unwrap(), "2");
        assert_eq!(new.read("responses").unwrap(), "1");
        assert_eq!(new.read("count").unwrap(), "2", "both entries");
        assert_eq!(new.router.total_queued(), 1, "the waiting packet");
        assert_eq!(old.router.total_queued(), 0);
        // The known peer: straight through, no query.
        new.push(0, vec![to(PEER_IP, 3)]);
        assert_eq!(
            datas(&new.output(0)),
            vec![encapsulated(PEER_ETH, PEER_IP, 3)]
        );
        assert!(new.output(1).is_empty());
        // The reply releases the packet the old router was holding.
        new.push(1, vec![reply_from(OTHER_IP, OTHER_ETH)]);
        assert_eq!(
            datas(&new.output(0)),
            vec![encapsulated(OTHER_ETH, OTHER_IP, 2)]
        );
        assert_eq!(new.router.total_queued(), 0);
        assert_eq!(new.read("responses").unwrap(), "2");
    }

    #[test]
    fn hot_swap_moves_a_shared_table_with_its_arptable() {
        let old = two_queriers("", 1);
        old.write_handler("t.insert", &format!("{PEER_IP} {PEER_ETH}"))
            .unwrap();
        send(&old, "q1", 0, vec![to("10.0.0.9", 1)]);
        sink(&old, "b1");
        let new = two_queriers("", 1);
        new.take_state_from(&old).unwrap();
        assert_eq!(new.read_handler("t.count").unwrap(), "2");
        assert_eq!(new.read_handler("q0.count").unwrap(), "2");
        assert_eq!(new.total_queued(), 1);
        assert_eq!(old.total_queued(), 0);
        send(&new, "q0", 1, vec![reply_from("10.0.0.9", PEER_ETH)]);
        assert_eq!(sink(&new, "a0").len(), 1);
        assert_eq!(new.total_queued(), 0);

        // A querier's own table does not go into a shared one: its saved
        // packets are dropped, counted.
        let own = harness_io(&format!("ARPQuerier({MY_IP}, {MY_ETH})"), 2, 2);
        own.push(0, vec![to(PEER_IP, 2)]);
        own.output(1);
        let shared = harness_io(
            &format!("ARPQuerier({MY_IP}, {MY_ETH}, TABLE t); t :: ARPTable"),
            2,
            2,
        );
        shared.router.take_state_from(&own.router).unwrap();
        assert_eq!(own.router.total_queued(), 0);
        assert_eq!(shared.router.total_queued(), 0);
        assert_eq!(shared.router.total_drops(), 1);
        assert_eq!(shared.read("drops").unwrap(), "1");
    }

    #[test]
    fn queriers_on_two_threads_share_an_arptable() {
        use paraclick_runtime::Router;
        let data = ipv4(ip("10.0.0.100"), ip(PEER_IP), 17, &[1, 2, 3, 4]);
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        let conf = format!(
            "t :: ARPTable;
             s0 :: InfiniteSource(DATA \\<{hex}>, LIMIT 3000, BURST 8);
             s1 :: InfiniteSource(DATA \\<{hex}>, LIMIT 3000, BURST 8);
             q0 :: ARPQuerier({MY_IP}, {MY_ETH}, TABLE t);
             q1 :: ARPQuerier(10.0.1.1, {MY_ETH1}, TABLE t);
             StaticThreadSched(s0 0, s1 1);
             s0 -> q0; s1 -> q1; TestSource -> [1]q0; TestSource -> [1]q1;
             q0 -> o :: TestSink; q1 -> o;"
        );
        let r = Router::from_str(&conf, &reg(), 2).unwrap_or_else(|d| panic!("{}", d[0].message));
        r.write_handler("t.insert", &format!("{PEER_IP} {PEER_ETH}"))
            .unwrap();
        // Rewrite the entry (through the table) while both send.
        run_rewriting_peer(&r, "t.insert", 6000);
        let out = sink(&r, "o");
        assert_eq!(out.len(), 6000);
        let (mut from0, mut from1) = (0, 0);
        for p in &out {
            let d = p.data();
            assert!(d[..6] == eth(PEER_ETH).0 || d[..6] == eth("00:11:22:33:44:66").0);
            if d[6..12] == eth(MY_ETH).0 {
                from0 += 1;
            } else {
                assert_eq!(&d[6..12], &eth(MY_ETH1).0[..]);
                from1 += 1;
            }
            assert_eq!(&d[14..], &data[..]);
        }
        assert_eq!((from0, from1), (3000, 3000));
        assert_eq!(r.total_drops(), 0);
        assert_eq!(r.read_handler("q0.queries").unwrap(), "0");
        assert_eq!(r.read_handler("q1.queries").unwrap(), "0");
    }

    /// Runs `r` until its sink `o` holds `n` packets (20 s at most),
    /// writing PEER_IP's entry through `handler`, alternately PEER_ETH and
    /// another address, every 200 us meanwhile.
    fn run_rewriting_peer(r: &paraclick_runtime::Router, handler: &str, n: usize) {
        let stop = r.stopper();
        std::thread::scope(|sc| {
            sc.spawn(|| r.run());
            let sink = r
                .element::<paraclick_runtime::testing::TestSink>("o")
                .unwrap();
            let t0 = std::time::Instant::now();
            let mut flip = false;
            while sink.len() < n && t0.elapsed() < Duration::from_secs(20) {
                let mac = if flip { "00:11:22:33:44:66" } else { PEER_ETH };
                r.write_handler(handler, &format!("{PEER_IP} {mac}"))
                    .unwrap();
                flip = !flip;
                std::thread::sleep(Duration::from_micros(200));
            }
            stop.stop();
        });
    }

    #[test]
    fn threads_share_the_table() {
        use paraclick_runtime::Router;
        let data = ipv4(ip("10.0.0.100"), ip(PEER_IP), 17, &[1, 2, 3, 4]);
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        let conf = format!(
            "s0 :: InfiniteSource(DATA \\<{hex}>, LIMIT 3000, BURST 8);
             s1 :: InfiniteSource(DATA \\<{hex}>, LIMIT 3000, BURST 8);
             e :: ARPQuerier({MY_IP}, {MY_ETH});
             s0 -> e; s1 -> e; TestSource -> [1]e;
             e -> o :: TestSink;"
        );
        let r = Router::from_str(&conf, &reg(), 2).unwrap_or_else(|d| panic!("{}", d[0].message));
        r.write_handler("e.insert", &format!("{PEER_IP} {PEER_ETH}"))
            .unwrap();
        // Rewrite the entry while both threads send through it.
        run_rewriting_peer(&r, "e.insert", 6000);
        let out = r
            .element::<paraclick_runtime::testing::TestSink>("o")
            .unwrap()
            .take();
        assert_eq!(out.len(), 6000);
        let a = encapsulated(PEER_ETH, PEER_IP, 0);
        let b = encapsulated("00:11:22:33:44:66", PEER_IP, 0);
        for p in &out {
            let d = p.data();
            assert!(d[..14] == a[..14] || d[..14] == b[..14]);
            assert_eq!(&d[14..], &data[..]);
        }
        assert_eq!(r.total_drops(), 0);
        assert_eq!(r.read_handler("e.queries").unwrap(), "0");
    }
}
