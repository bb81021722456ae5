// The flow table shared by every thread: a concurrent hash map with
// lock-free reads and batched, prefetching lookups (`map`), holding both
// directions of each flow, with timeouts, a capacity bound and allocation
// of unused rewritten flows.

use super::flow::{FlowId, FlowKey, PacketFlow, ADDR_DST, ADDR_PAIR, ADDR_SRC, TCP, UDP};
use super::map::FlowMap;
pub use super::map::Guard;
use super::pattern::Pattern;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// What a table's keys look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Five-tuple (IPRewriter, TCPRewriter, UDPRewriter, ICMPPingRewriter).
    Ports,
    /// Source address forward, destination address back (IPAddrRewriter).
    Addr,
    /// Address pair (IPAddrPairRewriter).
    Pair,
}

/// Flow state bits.
const DATA_FWD: u8 = 1;
const DATA_REV: u8 = 2;
const FIN_FWD: u8 = 4;
const FIN_REV: u8 = 8;
const RST: u8 = 16;
/// A count of the flow's first packets (both directions), in two bits:
/// `MANY` once it reaches three (a UDP flow then streams, if packets went
/// both ways).
const CNT1: u8 = 32;
const MANY: u8 = 96;

/// Timeouts in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub tcp: u64,
    pub tcp_done: u64,
    pub tcp_nodata: u64,
    pub udp: u64,
    pub udp_streaming: u64,
    pub other: u64,
    /// How long after its last packet a TCP, a UDP and any other flow is
    /// kept even when the table is full (Click's TCP_GUARANTEE,
    /// UDP_GUARANTEE, GUARANTEE).
    pub guarantee: [u64; 3],
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            tcp: 24 * 3600 * 1000,
            tcp_done: 240 * 1000,
            tcp_nodata: 300 * 1000,
            udp: 300 * 1000,
            udp_streaming: 300 * 1000,
            other: 300 * 1000,
            guarantee: [5000; 3],
        }
    }
}

impl Timeouts {
    fn guarantee_of(&self, proto: u8) -> u64 {
        match proto {
            TCP => self.guarantee[0],
            UDP => self.guarantee[1],
            _ => self.guarantee[2],
        }
    }
}

/// One flow: both directions.
pub struct Flow {
    pub proto: u8,
    /// Keys of the forward (0) and reverse (1) directions.
    pub key: [FlowKey; 2],
    /// What each direction's packets become (fields per `mask`).
    pub to: [FlowId; 2],
    pub mask: [u8; 2],
    pub out: [u16; 2],
    /// The input whose specification made the flow.
    pub input: u16,
    /// The pattern that made it (its `users` count includes this flow).
    pattern: Option<Arc<Pattern>>,
    /// The annotation value reply packets get (REPLY_ANNO): the first
    /// packet's.
    pub reply_anno: u8,
    /// TCP sequence number changes (FTPPortMapper's), per direction.
    seq: OnceLock<Box<Mutex<[SeqDeltas; 2]>>>,
    /// What the flow's packets showed so far (DATA_*, FIN_*, RST bits).
    /// The times of its last packets are in its two table entries (see
    /// [`FlowRef`]), so that a packet writes only the entry it looked up.
    state: AtomicU8,
}

impl Flow {
    pub fn timeout(&self, t: &Timeouts) -> u64 {
        let s = self.state.load(Ordering::Relaxed);
        match self.proto {
            TCP => {
                if s & RST != 0 || s & (FIN_FWD | FIN_REV) == FIN_FWD | FIN_REV {
                    t.tcp_done
                } else if s & (DATA_FWD | DATA_REV) == DATA_FWD | DATA_REV {
                    t.tcp
                } else {
                    t.tcp_nodata
                }
            }
            UDP => {
                if s & (DATA_FWD | DATA_REV) == DATA_FWD | DATA_REV && s & MANY == MANY {
                    t.udp_streaming
                } else {
                    t.udp
                }
            }
            _ => t.other,
        }
    }

    /// Whether the flow, last seen at `last` (ms), has expired at `now`.
    pub fn expired_since(&self, last: u64, now: u64, t: &Timeouts) -> bool {
        now.saturating_sub(last) > self.timeout(t)
    }

    /// A TCP connection with data seen both ways, not closed.
    pub fn established(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        self.proto == TCP && s & (DATA_FWD | DATA_REV) == DATA_FWD | DATA_REV && !self.done()
    }

    /// Whether the flow, last seen at `last`, is guaranteed a place at
    /// `now`: within its guarantee after its last packet; with a TCP
    /// guarantee of 0, an established TCP connection always (as Click).
    pub fn guaranteed(&self, last: u64, now: u64, t: &Timeouts) -> bool {
        let g = t.guarantee_of(self.proto);
        now.saturating_sub(last) < g || (g == 0 && self.established())
    }

    pub fn done(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & RST != 0 || s & (FIN_FWD | FIN_REV) == FIN_FWD | FIN_REV
    }

    /// Whether the flow's two directions share one key (a flow rewritten
    /// to its own reverse): only the reply entry is in the table.
    pub fn self_reverse(&self) -> bool {
        self.key[0] == self.key[1]
    }

    /// The direction `dir`'s sequence number changes, locked (made empty
    /// on first use).
    pub fn seq_deltas(&self) -> std::sync::MutexGuard<'_, [SeqDeltas; 2]> {
        self.seq
            .get_or_init(|| Box::new(Mutex::new(Default::default())))
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Sequence number changes of one direction of a TCP flow: from each
/// point on (a sequence number as the sender sent it), the amount added.
/// A point a sequence number has passed by more than [`SEQ_HORIZON`]
/// becomes the base: packets that old no longer arrive.
#[derive(Default, Debug)]
pub struct SeqDeltas {
    base: i32,
    /// (point, delta from there on), points in sequence order.
    points: Vec<(u32, i32)>,
}

/// How far past a change point a sequence number must be for the point
/// to be forgotten: the largest TCP window (RFC 7323's 2^30).
pub const SEQ_HORIZON: u32 = 1 << 30;

#[inline]
fn seq_geq(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

impl SeqDeltas {
    /// The delta for sequence number `seq` as sent.
    pub fn delta(&self, seq: u32) -> i32 {
        self.points
            .iter()
            .rev()
            .find(|(p, _)| seq_geq(seq, *p))
            .map_or(self.base, |(_, d)| *d)
    }

    /// Maps a sequence number as sent; forgets points it is far past.
    pub fn map_seq(&mut self, seq: u32) -> u32 {
        if let Some(i) = self
            .points
            .iter()
            .rposition(|(p, _)| seq_geq(seq, p.wrapping_add(SEQ_HORIZON)))
        {
            self.base = self.points[i].1;
            self.points.drain(..=i);
        }
        seq.wrapping_add(self.delta(seq) as u32)
    }

    /// Maps an acknowledgement number (of this direction's data, as the
    /// receiver saw it, rewritten) back to the sender's numbering.
    pub fn map_ack(&self, ack: u32) -> u32 {
        let d = self
            .points
            .iter()
            .rev()
            .find(|(p, d)| seq_geq(ack, p.wrapping_add(*d as u32)))
            .map_or(self.base, |(_, d)| *d);
        ack.wrapping_sub(d as u32)
    }

    /// From `point` (a sequence number as sent) on, `change` more bytes
    /// (negative: fewer). A point before the last one is a retransmission
    /// of a change already made, and changes nothing.
    pub fn add(&mut self, point: u32, change: i32) {
        if self
            .points
            .last()
            .is_some_and(|(p, _)| !seq_geq(point, p.wrapping_add(1)))
        {
            return;
        }
        let d = self.delta(point).wrapping_add(change);
        self.points.push((point, d));
    }

    pub fn is_empty(&self) -> bool {
        self.base == 0 && self.points.is_empty()
    }
}

/// Bits of [`FlowRef::seen`] below the time.
const SEEN_BITS: u32 = 7;
const SEEN_MASK: u64 = (1 << SEEN_BITS) - 1;

/// A table entry: a flow and the direction this key is, with that
/// direction's rewrite copied in (so rewriting needs no second load), and
/// the time of this direction's last packet. A packet reads and writes
/// only its entry: the flow itself (shared by both directions, and by
/// the threads that handle them) is written when a packet shows a state
/// bit this direction has not set before, and read when the entry's own
/// time is older than the flow's shortest timeout could allow.
pub struct FlowRef {
    pub flow: Arc<Flow>,
    /// This direction's last packet time (ms) above [`SEEN_BITS`], and
    /// below it the state bits this direction has already set in the flow.
    seen: AtomicU64,
    to: FlowId,
    mask: u8,
    pub dir: u8,
    out: u8,
    /// [`F_SEQ`]: the flow has sequence number changes.
    flags: AtomicU8,
}

/// [`FlowRef`] flag: the flow's TCP sequence numbers change
/// ([`Flow::seq_deltas`]).
const F_SEQ: u8 = 1;

impl Clone for FlowRef {
    fn clone(&self) -> FlowRef {
        FlowRef {
            flow: self.flow.clone(),
            seen: AtomicU64::new(self.seen.load(Ordering::Relaxed)),
            to: self.to,
            mask: self.mask,
            dir: self.dir,
            out: self.out,
            flags: AtomicU8::new(self.flags.load(Ordering::Relaxed)),
        }
    }
}

impl FlowRef {
    fn new(flow: &Arc<Flow>, dir: u8, now: u64) -> FlowRef {
        let d = dir as usize;
        FlowRef {
            flow: flow.clone(),
            seen: AtomicU64::new(now << SEEN_BITS),
            to: flow.to[d],
            mask: flow.mask[d],
            dir,
            out: flow.out[d] as u8,
            flags: AtomicU8::new(0),
        }
    }

    /// The time of this direction's last packet (ms).
    #[inline]
    pub fn last(&self) -> u64 {
        self.seen.load(Ordering::Relaxed) >> SEEN_BITS
    }

    /// Marks a packet seen in this direction at `now` (ms).
    #[inline]
    pub fn touch(&self, now: u64, tcp_flags: u8, has_data: bool) {
        let fwd = self.dir == 0;
        let mut bits = 0;
        if has_data {
            bits |= if fwd { DATA_FWD } else { DATA_REV };
        }
        if tcp_flags & 1 != 0 {
            bits |= if fwd { FIN_FWD } else { FIN_REV };
        }
        if tcp_flags & 4 != 0 {
            bits |= RST;
        }
        let v = self.seen.load(Ordering::Relaxed);
        let have = (v & SEEN_MASK) as u8;
        if have & MANY != MANY {
            // One of the flow's first packets: counted (up to three).
            let step = |x: u8| if x & MANY == MANY { x } else { x + CNT1 };
            let old = self
                .flow
                .state
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
                    Some(step(x) | bits)
                })
                .unwrap_or_else(|x| x);
            if step(old) & MANY == MANY {
                bits |= MANY;
            }
        } else if bits & !have != 0 {
            self.flow.state.fetch_or(bits, Ordering::Relaxed);
        }
        // Two threads with packets of this direction may race here: the
        // time stays one of theirs, and bits lost only cost a later packet
        // the flow's state write again.
        let nv = now << SEEN_BITS | u64::from(have | bits);
        if nv != v {
            self.seen.store(nv, Ordering::Relaxed);
        }
    }
    #[inline]
    pub fn to(&self) -> FlowId {
        self.to
    }
    #[inline]
    pub fn mask(&self) -> u8 {
        self.mask
    }
    #[inline]
    pub fn out(&self) -> usize {
        self.out as usize
    }
    /// Whether the flow's TCP sequence numbers change (see
    /// [`Flow::seq_deltas`]).
    #[inline]
    pub fn has_seq(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & F_SEQ != 0
    }
}

/// What one or more rewriters' tables share: a count of their flows and
/// a capacity (MAPPING_CAPACITY naming another rewriter shares its set).
pub struct FlowSet {
    nflows: AtomicUsize,
    capacity: AtomicUsize,
    /// The tables sharing the set (for eviction).
    members: Mutex<Vec<Weak<FlowTable>>>,
}

impl FlowSet {
    pub fn new(capacity: usize) -> Arc<FlowSet> {
        Arc::new(FlowSet {
            nflows: AtomicUsize::new(0),
            capacity: AtomicUsize::new(capacity),
            members: Mutex::new(Vec::new()),
        })
    }

    fn members(&self) -> Vec<Arc<FlowTable>> {
        let mut m = self.members.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|w| w.strong_count() > 0);
        m.iter().filter_map(Weak::upgrade).collect()
    }

    /// The flow, among the set's tables, that expires first, and its
    /// table; with `guarded` false, only flows past their guarantee.
    fn victim(
        &self,
        now: u64,
        guarded: bool,
        skip: Option<&Arc<Flow>>,
    ) -> Option<(Arc<FlowTable>, Arc<Flow>)> {
        let mut best: Option<(u64, Arc<FlowTable>, Arc<Flow>)> = None;
        for t in self.members() {
            let g = t.map.guard();
            for (_, v) in t.map.iter(&g) {
                if !primary(v) || skip.is_some_and(|s| Arc::ptr_eq(&v.flow, s)) {
                    continue;
                }
                let f = &v.flow;
                let last = t.flow_last(f, &g);
                if !guarded && f.guaranteed(last, now, &t.timeouts) {
                    continue;
                }
                let exp = last.saturating_add(f.timeout(&t.timeouts));
                if best.as_ref().is_none_or(|(e, _, _)| exp < *e) {
                    best = Some((exp, t.clone(), f.clone()));
                }
            }
        }
        best.map(|(_, t, f)| (t, f))
    }

    /// Evicts flows that expire first until the set holds at most
    /// `capacity` (guarantees aside: the capacity was lowered).
    fn shrink(&self, now: u64) {
        while self.nflows.load(Ordering::Relaxed) > self.capacity.load(Ordering::Relaxed) {
            let Some((t, f)) = self.victim(now, true, None) else {
                break;
            };
            let g = t.map.guard();
            t.remove_flow(&f, &g);
        }
    }
}

/// Whether `v` is the entry that stands for its flow in scans: the
/// forward one, or for a flow rewritten to its own reverse the only one.
#[inline]
fn primary(v: &FlowRef) -> bool {
    v.dir == 0 || v.flow.self_reverse()
}

/// Why no mapping was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The table holds CAPACITY live flows.
    Capacity,
    /// Every candidate rewritten flow is in use.
    Exhausted,
}

pub struct FlowTable {
    pub kind: KeyKind,
    /// Keys leave out the protocol (UDPRewriter's quadruples): TCP and
    /// UDP packets are flows alike, with UDP's timeouts.
    quad: bool,
    map: FlowMap<FlowRef>,
    /// This table's own flow set, and the one it shares if any.
    own_set: Arc<FlowSet>,
    shared_set: OnceLock<Arc<FlowSet>>,
    failures: AtomicU64,
    pub timeouts: Timeouts,
    /// The shortest timeout a flow of a TCP, a UDP and any other packet
    /// can have in this table, whatever its state (see [`FlowTable::live`]).
    shortest: [u64; 3],
    /// Last emergency reap (ms), so that a full table is swept at most
    /// once a second.
    last_sweep: Mutex<u64>,
}

/// The milliseconds of a moment of the router's clock (`cx.timestamp()`,
/// the same on the other contexts): flows age in simulated time too.
#[inline]
pub fn ms_of(t: paraclick_packet::Timestamp) -> u64 {
    (t.0 / 1_000_000).max(0) as u64
}

/// The most candidates one allocation tries.
const MAX_TRIES: u64 = 1 << 17;

impl FlowTable {
    pub fn new(kind: KeyKind, capacity: usize, timeouts: Timeouts) -> FlowTable {
        Self::with_keys(kind, false, capacity, timeouts)
    }

    /// A table whose keys leave the protocol out when `quad`
    /// (UDPRewriter's quadruples: TCP and UDP packets are flows alike, with
    /// UDP's timeouts).
    pub fn with_keys(kind: KeyKind, quad: bool, capacity: usize, timeouts: Timeouts) -> FlowTable {
        FlowTable {
            kind,
            quad,
            // Small, growing with the flows (per shard, doubling). Sized
            // up front for CAPACITY, a table holding 50,000 flows would
            // spread them over tens of MiB and miss the caches on every
            // lookup.
            map: FlowMap::new(),
            own_set: FlowSet::new(capacity),
            shared_set: OnceLock::new(),
            failures: AtomicU64::new(0),
            shortest: match kind {
                KeyKind::Ports if quad => [timeouts.udp.min(timeouts.udp_streaming); 3],
                // Address keys: flows of protocol 0, the `other` timeout.
                KeyKind::Ports => [
                    timeouts.tcp.min(timeouts.tcp_done).min(timeouts.tcp_nodata),
                    timeouts.udp.min(timeouts.udp_streaming),
                    timeouts.other,
                ],
                KeyKind::Addr | KeyKind::Pair => [timeouts.other; 3],
            },
            timeouts,
            last_sweep: Mutex::new(0),
        }
    }

    /// A guard for a run of lookups (one per batch).
    #[inline]
    pub fn guard(&self) -> Guard<'_> {
        self.map.guard()
    }

    /// The flow set this table counts its flows in.
    #[inline]
    pub fn set(&self) -> &Arc<FlowSet> {
        self.shared_set.get().unwrap_or(&self.own_set)
    }
    /// This table's own flow set (what MAPPING_CAPACITY naming its
    /// rewriter shares).
    pub fn own_set(&self) -> &Arc<FlowSet> {
        &self.own_set
    }
    /// Joins flow set `set` (before any flow is made), or its own.
    pub fn join(self: &Arc<Self>, set: Option<Arc<FlowSet>>) {
        if let Some(s) = set {
            if !Arc::ptr_eq(&s, &self.own_set) {
                let _ = self.shared_set.set(s);
            }
        }
        let mut m = self.set().members.lock().unwrap_or_else(|e| e.into_inner());
        m.push(Arc::downgrade(self));
    }
    /// Flows in the set (this table's and those of the rewriters sharing
    /// its capacity).
    pub fn nflows(&self) -> usize {
        self.set().nflows.load(Ordering::Relaxed)
    }
    pub fn capacity(&self) -> usize {
        self.set().capacity.load(Ordering::Relaxed)
    }
    /// Sets the capacity; flows beyond it are evicted, those that expire
    /// first first.
    pub fn set_capacity(&self, c: usize, now: u64) {
        self.set().capacity.store(c, Ordering::Relaxed);
        self.set().shrink(now);
    }
    #[inline]
    fn kp(&self, proto: u8) -> u8 {
        if self.quad {
            UDP
        } else {
            proto
        }
    }
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
    pub fn count_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Finds the live mapping for a packet of flow `id` (protocol `proto`).
    /// An expired mapping found on the way is removed.
    #[inline]
    pub fn lookup<'g>(
        &'g self,
        proto: u8,
        id: FlowId,
        now: u64,
        g: &'g Guard<'_>,
    ) -> Option<&'g FlowRef> {
        let probe = |key: FlowKey| -> Option<&'g FlowRef> {
            let r = self.map.get(&key, g)?;
            self.live(r, proto, now, g).then_some(r)
        };
        // The address rewriter also maps by destination address.
        probe(self.first_key(proto, id)).or_else(|| {
            (self.kind == KeyKind::Addr)
                .then(|| probe(addr_key(ADDR_DST, id.daddr)))
                .flatten()
        })
    }

    /// The key a packet of flow `id` is looked up under first (for the
    /// address rewriter, its source address).
    #[inline]
    fn first_key(&self, proto: u8, id: FlowId) -> FlowKey {
        match self.kind {
            KeyKind::Ports => FlowKey {
                id,
                proto: self.kp(proto),
            },
            KeyKind::Addr => addr_key(ADDR_SRC, id.saddr),
            KeyKind::Pair => pair_key(id.saddr, id.daddr),
        }
    }

    /// The batched lookup's first pass: the entry under the packet flow's
    /// first key (for the address rewriter, the source address), expired
    /// or not, removing nothing. [`FlowTable::live`] then decides.
    #[inline]
    pub fn find<'g>(&'g self, proto: u8, id: FlowId, g: &'g Guard<'_>) -> Option<&'g FlowRef> {
        self.map.get(&self.first_key(proto, id), g)
    }

    /// [`FlowTable::find`] for a run of packet flows (at most
    /// [`super::map::RUN`]; `None`: no flow), into `out`: the run's cache
    /// misses overlap when the table is big.
    #[inline]
    pub fn find_run<'g>(
        &'g self,
        flows: &[Option<PacketFlow>],
        out: &mut [Option<&'g FlowRef>],
        g: &'g Guard<'_>,
    ) {
        let n = flows.len().min(out.len());
        self.map.get_run(
            |i| flows[i].as_ref().map(|f| self.first_key(f.proto, f.id)),
            &mut out[..n],
            g,
        );
    }

    /// Whether the entry `r` (from [`FlowTable::find`], for a packet of
    /// protocol `proto`) is live at `now`; an expired flow is removed.
    /// An entry seen more recently than the shortest timeout a flow of
    /// `proto` can have is live without a look at its flow.
    #[inline(always)]
    pub fn live(&self, r: &FlowRef, proto: u8, now: u64, g: &Guard<'_>) -> bool {
        // (A table without protocols in its keys has UDP's everywhere.)
        let window = match proto {
            TCP => self.shortest[0],
            UDP => self.shortest[1],
            _ => self.shortest[2],
        };
        now.saturating_sub(r.last()) <= window || self.live_slow(r, now, g)
    }

    /// [`FlowTable::live`] when the entry's own time is not enough.
    #[cold]
    #[inline(never)]
    fn live_slow(&self, r: &FlowRef, now: u64, g: &Guard<'_>) -> bool {
        if self.flow_expired(&r.flow, now, g) {
            self.remove_flow(&r.flow, g);
            return false;
        }
        true
    }

    /// The time of `flow`'s last packet, either direction (ms).
    pub fn flow_last(&self, flow: &Arc<Flow>, g: &Guard<'_>) -> u64 {
        flow.key
            .iter()
            .filter_map(|k| self.map.get(k, g))
            .filter(|r| Arc::ptr_eq(&r.flow, flow))
            .map(FlowRef::last)
            .max()
            .unwrap_or(0)
    }

    /// Whether `flow` has expired at `now`.
    pub fn flow_expired(&self, flow: &Arc<Flow>, now: u64, g: &Guard<'_>) -> bool {
        flow.expired_since(self.flow_last(flow, g), now, &self.timeouts)
    }

    /// Removes both directions of `flow` (if still there).
    pub fn remove_flow(&self, flow: &Arc<Flow>, g: &Guard<'_>) {
        let same = |v: &FlowRef| Arc::ptr_eq(&v.flow, flow);
        if self.map.remove_if(&flow.key[0], same, g) {
            self.set().nflows.fetch_sub(1, Ordering::Relaxed);
            if let Some(p) = &flow.pattern {
                p.users.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let _ = self.map.remove_if(&flow.key[1], same, g);
    }

    /// Creates a mapping for the packet flow `(proto, id)` with pattern
    /// `p` (`None`: keep the flow as it is), forward packets going to
    /// `fout` and replies to `rout`. Returns the forward entry (or the
    /// entry another thread created for the same flow meanwhile).
    #[allow(clippy::too_many_arguments)]
    pub fn create<'g>(
        &'g self,
        proto: u8,
        id: FlowId,
        p: Option<&Arc<Pattern>>,
        fout: usize,
        rout: usize,
        draw: &mut dyn FnMut(u64) -> u64,
        now: u64,
        g: &'g Guard<'_>,
    ) -> Result<&'g FlowRef, Failure> {
        self.create_from(0, 0, proto, id, p, fout, rout, draw, now, g)
            .map(|(r, _)| r)
    }

    /// [`FlowTable::create`] for a packet that arrived on input `input`,
    /// whose reply packets get annotation value `anno` (REPLY_ANNO).
    /// Returns the entry and the output for the creating packet (the
    /// forward output: for a flow rewritten to its own reverse, whose one
    /// entry is the reply's, not the entry's).
    ///
    /// The rewritten flow is chosen first (a sequential pattern moves on
    /// even if the flow is then refused); then, if the flow set is full,
    /// its flow that expires first among those past their guarantee is
    /// evicted, or the new flow refused ([`Failure::Capacity`]) if every
    /// flow is guaranteed.
    #[allow(clippy::too_many_arguments)]
    pub fn create_from<'g>(
        &'g self,
        input: usize,
        anno: u8,
        proto: u8,
        id: FlowId,
        p: Option<&Arc<Pattern>>,
        fout: usize,
        rout: usize,
        draw: &mut dyn FnMut(u64) -> u64,
        now: u64,
        g: &'g Guard<'_>,
    ) -> Result<(&'g FlowRef, usize), Failure> {
        let proto = self.kp(proto);
        let (fwd_key, fmask, rmask) = match self.kind {
            KeyKind::Ports => (
                FlowKey { id, proto },
                super::flow::M_ALL,
                super::flow::M_ALL,
            ),
            KeyKind::Addr => (
                addr_key(ADDR_SRC, id.saddr),
                super::flow::M_SA,
                super::flow::M_DA,
            ),
            KeyKind::Pair => (
                pair_key(id.saddr, id.daddr),
                super::flow::M_SA | super::flow::M_DA,
                super::flow::M_SA | super::flow::M_DA,
            ),
        };
        // The pattern's candidates, or without one the flow as it is (one
        // iterator type either way: no allocation per flow).
        let mut cands = p
            .map(|p| p.candidates(id, draw, MAX_TRIES))
            .into_iter()
            .flatten()
            .chain(p.is_none().then_some((id, 0u64)));
        let proto_v = if self.kind == KeyKind::Ports {
            proto
        } else {
            0
        };
        loop {
            let Some((mut new, k)) = cands.next() else {
                self.count_failure();
                return Err(Failure::Exhausted);
            };
            if proto == super::flow::ICMP && self.kind == KeyKind::Ports {
                // Echo identifiers: one value serves as both "ports".
                new.dport = new.sport;
            }
            let rev_key = match self.kind {
                KeyKind::Ports => FlowKey {
                    id: new.reverse(),
                    proto,
                },
                KeyKind::Addr => addr_key(ADDR_DST, new.saddr),
                KeyKind::Pair => pair_key(new.daddr, new.saddr),
            };
            let flow = Arc::new(Flow {
                proto: proto_v,
                key: [fwd_key, rev_key],
                to: [new, id.reverse()],
                mask: [fmask, rmask],
                out: [fout as u16, rout as u16],
                input: input as u16,
                pattern: p.cloned(),
                reply_anno: anno,
                seq: OnceLock::new(),
                state: AtomicU8::new(0),
            });
            // The reverse key first: it is what must be unique (two flows
            // given one public address and port toward one peer could not
            // be told apart on the way back). An expired holder is evicted.
            let mut placed = false;
            for _ in 0..2 {
                match self.map.try_insert(rev_key, FlowRef::new(&flow, 1, now), g) {
                    Ok(_) => {
                        placed = true;
                        break;
                    }
                    Err(cur) => {
                        let old = cur.flow.clone();
                        if self.flow_expired(&old, now, g) {
                            self.remove_flow(&old, g);
                            continue;
                        }
                        break;
                    }
                }
            }
            if !placed {
                continue;
            }
            if let Some(p) = p {
                p.advance(k);
            }
            let unplace = || {
                let _ = self
                    .map
                    .remove_if(&rev_key, |v| Arc::ptr_eq(&v.flow, &flow), g);
            };
            if !self.admit(now, &flow, g) {
                unplace();
                self.count_failure();
                return Err(Failure::Capacity);
            }
            let counted = || {
                self.set().nflows.fetch_add(1, Ordering::Relaxed);
                if let Some(p) = p {
                    p.users.fetch_add(1, Ordering::Relaxed);
                }
            };
            if flow.self_reverse() {
                // Its packets are their own replies: the one key is the
                // reply's; the creating packet still goes forward.
                counted();
                let r = self.map.get(&rev_key, g).ok_or(Failure::Exhausted)?;
                return Ok((r, fout));
            }
            match self.map.try_insert(fwd_key, FlowRef::new(&flow, 0, now), g) {
                Ok(r) => {
                    counted();
                    return Ok((r, r.out()));
                }
                Err(cur) => {
                    // Another thread created this flow meanwhile (or, for the
                    // address rewriters, the key is some flow's reverse).
                    unplace();
                    return Ok((cur, cur.out()));
                }
            }
        }
    }

    /// Whether the flow set has room for one more flow (`new`, being
    /// made): expired flows are swept (at most once a second), then the
    /// flow that expires first among those past their guarantee is
    /// evicted.
    fn admit(&self, now: u64, new: &Arc<Flow>, g: &Guard<'_>) -> bool {
        if self.nflows() < self.capacity() {
            return true;
        }
        self.sweep_if_due(now, g);
        if self.nflows() < self.capacity() {
            return true;
        }
        match self.set().victim(now, false, Some(new)) {
            Some((t, f)) => {
                t.remove_flow(&f, &t.map.guard());
                true
            }
            None => false,
        }
    }

    /// Removes the flows that input `input`'s specification made (it was
    /// replaced).
    pub fn remove_input(&self, input: usize) {
        let g = self.map.guard();
        let mine: Vec<Arc<Flow>> = self
            .map
            .iter(&g)
            .filter(|(_, v)| primary(v) && usize::from(v.flow.input) == input)
            .map(|(_, v)| v.flow.clone())
            .collect();
        for f in &mine {
            self.remove_flow(f, &g);
        }
    }

    /// Adds a sequence number change to the flow whose entry is under
    /// the packet flow `(proto, id)`: in that entry's direction, from
    /// `point` on, `change` more bytes. False if there is no such flow.
    pub fn add_seq_delta(&self, proto: u8, id: FlowId, point: u32, change: i32) -> bool {
        let g = self.map.guard();
        let Some(r) = self.map.get(&self.first_key(proto, id), &g) else {
            return false;
        };
        let flow = r.flow.clone();
        flow.seq_deltas()[usize::from(r.dir)].add(point, change);
        for k in &flow.key {
            if let Some(e) = self.map.get(k, &g) {
                if Arc::ptr_eq(&e.flow, &flow) {
                    e.flags.fetch_or(F_SEQ, Ordering::Relaxed);
                }
            }
        }
        true
    }

    fn sweep_if_due(&self, now: u64, g: &Guard<'_>) {
        let Ok(mut last) = self.last_sweep.try_lock() else {
            return;
        };
        if now.saturating_sub(*last) < 1000 && *last != 0 {
            return;
        }
        *last = now;
        drop(last);
        self.reap(now, g);
    }

    /// Removes every expired flow; returns how many.
    pub fn reap(&self, now: u64, g: &Guard<'_>) -> usize {
        let dead: Vec<Arc<Flow>> = self
            .map
            .iter(g)
            .filter(|(_, v)| primary(v) && self.flow_expired(&v.flow, now, g))
            .map(|(_, v)| v.flow.clone())
            .collect();
        for f in &dead {
            self.remove_flow(f, g);
        }
        dead.len()
    }

    /// Hot reconfiguration: copies `old`'s live mappings (both directions
    /// of each flow) whose outputs exist here (`noutputs`), and its
    /// failure count. Returns how many flows came.
    pub fn adopt(&self, old: &FlowTable, noutputs: usize, now: u64) -> usize {
        let og = old.map.guard();
        let g = self.map.guard();
        let mut n = 0;
        for (k, v) in old.map.iter(&og) {
            let f = &v.flow;
            if old.flow_expired(f, now, &og) || f.out.iter().any(|&o| o as usize >= noutputs.max(1))
            {
                continue;
            }
            if self.map.try_insert(*k, v.clone(), &g).is_ok() && primary(v) {
                n += 1;
            }
        }
        self.set().nflows.fetch_add(n, Ordering::Relaxed);
        self.failures.fetch_add(old.failures(), Ordering::Relaxed);
        n
    }

    /// Removes every flow.
    pub fn clear(&self) {
        let g = self.map.guard();
        let all: Vec<Arc<Flow>> = self
            .map
            .iter(&g)
            .filter(|(_, v)| primary(v))
            .map(|(_, v)| v.flow.clone())
            .collect();
        for f in &all {
            self.remove_flow(f, &g);
        }
    }

    /// Live flows, forward entries, sorted by key for stable output.
    pub fn flows(&self, now: u64) -> Vec<Arc<Flow>> {
        let g = self.map.guard();
        let mut v: Vec<Arc<Flow>> = self
            .map
            .iter(&g)
            .filter(|(_, v)| primary(v) && !self.flow_expired(&v.flow, now, &g))
            .map(|(_, v)| v.flow.clone())
            .collect();
        v.sort_by_key(|f| {
            let k = f.key[0];
            (k.proto, k.id.saddr, k.id.sport, k.id.daddr, k.id.dport)
        });
        v
    }

    /// Map entries (both directions of every flow).
    pub fn entries(&self) -> usize {
        self.map.len()
    }

    /// Click's mapping lines (`tcp_table`, `udp_table`) for live flows of
    /// protocol `proto` (any if `None`): the forward mapping, then the
    /// reply mapping, as `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R]
    /// iINPUT expSECONDS` (the starred output is this direction's).
    /// `with_proto` begins each line with the protocol.
    pub fn format(&self, now: u64, proto: Option<u8>, with_proto: bool) -> String {
        let mut s = String::new();
        let g = self.map.guard();
        for f in self.flows(now) {
            if proto.is_some_and(|p| p != f.proto) {
                continue;
            }
            for dir in 0..2 {
                if dir == 0 && f.self_reverse() {
                    continue;
                }
                let k = f.key[dir];
                let star = if dir == 1 { "*" } else { "" };
                let line = match self.kind {
                    KeyKind::Ports => {
                        // Click's form: outputs with this direction's
                        // starred, the input, seconds to expiry.
                        let outs = if dir == 0 {
                            format!("*{} {}", f.out[0], f.out[1])
                        } else {
                            format!("{} *{}", f.out[0], f.out[1])
                        };
                        let last = self.flow_last(&f, &g);
                        let left = f
                            .timeout(&self.timeouts)
                            .saturating_sub(now.saturating_sub(last));
                        let prefix = if with_proto {
                            format!("{} ", proto_name(f.proto))
                        } else {
                            String::new()
                        };
                        format!(
                            "{prefix}{} => {} [{outs}] i{} exp{}",
                            k.id,
                            f.to[dir],
                            f.input,
                            left.div_ceil(1000)
                        )
                    }
                    KeyKind::Addr => {
                        if dir == 0 {
                            format!(
                                "{} => {} [{}]",
                                Ipv4Addr::from(k.id.saddr),
                                Ipv4Addr::from(f.to[0].saddr),
                                f.out[0]
                            )
                        } else {
                            format!(
                                "{} => {} [*{}]",
                                Ipv4Addr::from(k.id.daddr),
                                Ipv4Addr::from(f.to[1].daddr),
                                f.out[1]
                            )
                        }
                    }
                    KeyKind::Pair => format!(
                        "({}, {}) => ({}, {}) [{star}{}]",
                        Ipv4Addr::from(k.id.saddr),
                        Ipv4Addr::from(k.id.daddr),
                        Ipv4Addr::from(f.to[dir].saddr),
                        Ipv4Addr::from(f.to[dir].daddr),
                        f.out[dir]
                    ),
                };
                s.push_str(&line);
                s.push('\n');
            }
        }
        s
    }
}

pub fn proto_name(p: u8) -> String {
    match p {
        6 => "TCP".into(),
        17 => "UDP".into(),
        1 => "ICMP".into(),
        n => n.to_string(),
    }
}

#[inline]
fn addr_key(kind: u8, a: u32) -> FlowKey {
    FlowKey {
        id: FlowId {
            saddr: if kind == ADDR_SRC { a } else { 0 },
            daddr: if kind == ADDR_DST { a } else { 0 },
            sport: 0,
            dport: 0,
        },
        proto: kind,
    }
}

#[inline]
fn pair_key(sa: u32, da: u32) -> FlowKey {
    FlowKey {
        id: FlowId {
            saddr: sa,
            daddr: da,
            sport: 0,
            dport: 0,
        },
        proto: ADDR_PAIR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::args::ArgEnv;

    fn a(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn pat(f: &[&str]) -> Arc<Pattern> {
        Arc::new(Pattern::parse(f, &ArgEnv::default()).unwrap())
    }

    fn fid(sp: u16) -> FlowId {
        FlowId::new(a("10.0.0.1"), sp, a("2.0.0.2"), 80)
    }

    #[test]
    fn both_directions_map() {
        let t = FlowTable::new(KeyKind::Ports, 100, Timeouts::default());
        let p = pat(&["1.0.0.1", "1024-2047#", "-", "-"]);
        let g = t.guard();
        let r = t
            .create(TCP, fid(5000), Some(&p), 0, 1, &mut |_| 0, 10, &g)
            .unwrap();
        let to = r.to();
        assert_eq!(to, FlowId::new(a("1.0.0.1"), 1024, a("2.0.0.2"), 80));
        assert_eq!(r.out(), 0);
        let f = t.lookup(TCP, fid(5000), 10, &g).unwrap();
        assert_eq!(f.dir, 0);
        let back = t.lookup(TCP, to.reverse(), 10, &g).unwrap();
        assert_eq!(back.dir, 1);
        assert_eq!(back.to(), fid(5000).reverse());
        assert_eq!(back.out(), 1);
        assert!(t.lookup(UDP, fid(5000), 10, &g).is_none());
        assert_eq!((t.nflows(), t.entries()), (1, 2));
        let s = t.format(10, None, true);
        assert_eq!(
            s,
            "TCP (10.0.0.1, 5000, 2.0.0.2, 80) => (1.0.0.1, 1024, 2.0.0.2, 80) [*0 1] i0 exp300\n\
             TCP (2.0.0.2, 80, 1.0.0.1, 1024) => (2.0.0.2, 80, 10.0.0.1, 5000) [0 *1] i0 exp300\n"
        );
        assert_eq!(p.users.load(Ordering::Relaxed), 1);
        t.clear();
        assert_eq!(p.users.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn ports_unique_until_exhausted_then_counted_failure() {
        let t = FlowTable::new(KeyKind::Ports, 100, Timeouts::default());
        let p = pat(&["1.0.0.1", "1024-1027", "-", "-"]);
        let g = t.guard();
        let mut ports = Vec::new();
        for sp in 0..4 {
            ports.push(
                t.create(
                    UDP,
                    fid(sp),
                    Some(&p),
                    0,
                    1,
                    &mut |n| (sp as u64 * 7) % n,
                    0,
                    &g,
                )
                .unwrap()
                .to()
                .sport,
            );
        }
        ports.sort();
        assert_eq!(ports, vec![1024, 1025, 1026, 1027]);
        assert_eq!(
            t.create(UDP, fid(9), Some(&p), 0, 1, &mut |n| 3 % n, 0, &g)
                .err(),
            Some(Failure::Exhausted)
        );
        assert_eq!(t.failures(), 1);
        // Another destination may reuse a public port (replies differ).
        let other = FlowId::new(a("10.0.0.1"), 9, a("3.0.0.3"), 80);
        assert!(t
            .create(UDP, other, Some(&p), 0, 1, &mut |_| 0, 0, &g)
            .is_ok());
    }

    #[test]
    fn expired_ports_are_reused_and_capacity_bounds() {
        let tm = Timeouts {
            udp: 1000,
            ..Timeouts::default()
        };
        let t = FlowTable::new(KeyKind::Ports, 2, tm);
        let p = pat(&["1.0.0.1", "1024-1024", "-", "-"]);
        let g = t.guard();
        t.create(UDP, fid(1), Some(&p), 0, 1, &mut |_| 0, 0, &g)
            .unwrap();
        assert_eq!(
            t.create(UDP, fid(2), Some(&p), 0, 1, &mut |_| 0, 500, &g)
                .err(),
            Some(Failure::Exhausted)
        );
        // Touching keeps it alive.
        t.lookup(UDP, fid(1), 900, &g).unwrap().touch(900, 0, true);
        assert_eq!(
            t.create(UDP, fid(2), Some(&p), 0, 1, &mut |_| 0, 1500, &g)
                .err(),
            Some(Failure::Exhausted)
        );
        assert!(t.lookup(UDP, fid(1), 1500, &g).is_some());
        // After the timeout the port goes to a new flow.
        let r = t
            .create(UDP, fid(2), Some(&p), 0, 1, &mut |_| 0, 2000, &g)
            .unwrap();
        assert_eq!(r.to().sport, 1024);
        assert!(t.lookup(UDP, fid(1), 2000, &g).is_none());
        // Capacity: two live flows at most.
        let q = pat(&["1.0.0.2", "1-100", "-", "-"]);
        t.create(UDP, fid(3), Some(&q), 0, 1, &mut |_| 0, 2000, &g)
            .unwrap();
        assert_eq!(
            t.create(UDP, fid(4), Some(&q), 0, 1, &mut |_| 0, 2000, &g)
                .err(),
            Some(Failure::Capacity)
        );
        assert_eq!(t.nflows(), 2);
        // A full table of expired flows is swept.
        assert!(t
            .create(UDP, fid(4), Some(&q), 0, 1, &mut |_| 0, 9000, &g)
            .is_ok());
        assert_eq!(t.nflows(), 1);
    }

    #[test]
    fn tcp_timeouts_follow_state() {
        let tm = Timeouts {
            tcp: 100_000,
            tcp_nodata: 10_000,
            tcp_done: 1_000,
            ..Timeouts::default()
        };
        let t = FlowTable::new(KeyKind::Ports, 10, tm);
        let g = t.guard();
        let fwd = t
            .create(TCP, fid(1), None, 0, 0, &mut |_| 0, 0, &g)
            .unwrap();
        let rev = t.find(TCP, fid(1).reverse(), &g).unwrap();
        assert_eq!((fwd.dir, rev.dir), (0, 1));
        let f = fwd.flow.clone();
        let expired = |now| t.flow_expired(&f, now, &g);
        assert!(!expired(9_000) && expired(11_000));
        fwd.touch(0, 0, true);
        rev.touch(0, 0, true);
        assert!(!expired(50_000));
        fwd.touch(0, 1, false);
        assert!(!f.done() && !expired(50_000));
        rev.touch(0, 1, false);
        assert!(f.done() && expired(2_000));
        let f2 = t
            .create(TCP, fid(2), None, 0, 0, &mut |_| 0, 0, &g)
            .unwrap();
        t.find(TCP, fid(2).reverse(), &g)
            .unwrap()
            .touch(0, 4, false);
        assert!(f2.flow.done());
        assert_eq!(t.reap(5_000, &g), 2);
        assert_eq!((t.nflows(), t.entries()), (0, 0));
    }

    #[test]
    fn either_direction_keeps_a_flow_alive() {
        // Each entry holds its own direction's last time: a lookup in the
        // direction not seen for longer than the timeout must still find
        // the flow live while the other direction is recent.
        let tm = Timeouts {
            udp: 1000,
            udp_streaming: 5000,
            ..Timeouts::default()
        };
        let t = FlowTable::new(KeyKind::Ports, 10, tm);
        let g = t.guard();
        t.create(UDP, fid(1), None, 0, 1, &mut |_| 0, 0, &g)
            .unwrap();
        let fwd = t.lookup(UDP, fid(1), 900, &g).unwrap();
        fwd.touch(900, 0, false);
        assert_eq!(fwd.last(), 900);
        // The reply direction was last seen at creation (0).
        let rev = t.lookup(UDP, fid(1).reverse(), 1500, &g).unwrap();
        assert_eq!((rev.dir, rev.last()), (1, 0));
        assert_eq!(t.flow_last(&rev.flow, &g), 900);
        // Past the forward time plus the timeout, it is gone both ways.
        assert!(t.lookup(UDP, fid(1).reverse(), 1901, &g).is_none());
        assert!(t.find(UDP, fid(1), &g).is_none());
        assert_eq!(t.nflows(), 0);
        // Data both ways makes it streaming: the longer timeout applies,
        // though a direction's own time is older than the shorter one.
        t.create(UDP, fid(2), None, 0, 1, &mut |_| 0, 0, &g)
            .unwrap();
        t.lookup(UDP, fid(2), 0, &g).unwrap().touch(0, 0, true);
        // Streaming takes three packets: two so far.
        t.lookup(UDP, fid(2), 0, &g).unwrap().touch(0, 0, true);
        t.lookup(UDP, fid(2).reverse(), 0, &g)
            .unwrap()
            .touch(100, 0, true);
        assert!(t.lookup(UDP, fid(2), 4000, &g).is_some());
        assert!(t.lookup(UDP, fid(2), 5101, &g).is_none());
    }

    #[test]
    fn keep_collision_fails() {
        let t = FlowTable::new(KeyKind::Ports, 10, Timeouts::default());
        let g = t.guard();
        let p = pat(&["2.0.0.2", "80", "-", "-"]);
        // Flow A rewritten to look like B's reply direction.
        let b = FlowId::new(a("9.0.0.9"), 80, a("2.0.0.2"), 80);
        t.create(TCP, b.reverse(), None, 0, 1, &mut |_| 0, 0, &g)
            .unwrap();
        assert_eq!(
            t.create(
                TCP,
                FlowId::new(a("7.0.0.7"), 1, a("9.0.0.9"), 80),
                Some(&p),
                0,
                1,
                &mut |_| 0,
                0,
                &g
            )
            .err(),
            Some(Failure::Exhausted)
        );
    }

    #[test]
    fn address_rewriter_keys() {
        let t = FlowTable::new(KeyKind::Addr, 10, Timeouts::default());
        let g = t.guard();
        let p = pat(&["1.0.0.1-1.0.0.2#", "-"]);
        let r = t
            .create(17, fid(1), Some(&p), 0, 1, &mut |_| 0, 0, &g)
            .unwrap();
        assert_eq!(Ipv4Addr::from(r.to().saddr), a("1.0.0.1"));
        // Any protocol, any port, from the same source: same mapping.
        let any = FlowId::new(a("10.0.0.1"), 7, a("5.5.5.5"), 9);
        assert_eq!(t.lookup(6, any, 0, &g).unwrap().dir, 0);
        let back = FlowId::new(a("5.5.5.5"), 9, a("1.0.0.1"), 7);
        let r = t.lookup(1, back, 0, &g).unwrap();
        assert_eq!((r.dir, Ipv4Addr::from(r.to().daddr)), (1, a("10.0.0.1")));
        let r2 = t
            .create(
                17,
                FlowId::new(a("10.0.0.2"), 1, a("2.0.0.2"), 1),
                Some(&p),
                0,
                1,
                &mut |_| 0,
                0,
                &g,
            )
            .unwrap();
        assert_eq!(Ipv4Addr::from(r2.to().saddr), a("1.0.0.2"));
        assert_eq!(
            t.create(
                17,
                FlowId::new(a("10.0.0.3"), 1, a("2.0.0.2"), 1),
                Some(&p),
                0,
                1,
                &mut |_| 0,
                0,
                &g
            )
            .err(),
            Some(Failure::Exhausted)
        );
        assert_eq!(t.format(0, None, false).lines().count(), 4);
    }

    #[test]
    fn concurrent_creation_never_shares_a_port() {
        let t = Arc::new(FlowTable::new(KeyKind::Ports, 1 << 20, Timeouts::default()));
        let p = pat(&["1.0.0.1", "1024-5023", "-", "-"]);
        let handles: Vec<_> = (0..4u64)
            .map(|th| {
                let t = t.clone();
                let p = p.clone();
                std::thread::spawn(move || {
                    let g = t.guard();
                    let mut got = Vec::new();
                    let mut x = th * 7919 + 1;
                    for i in 0..1000u16 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let id =
                            FlowId::new(a("10.0.0.1"), i + (th as u16) * 1000, a("2.0.0.2"), 80);
                        got.push(
                            t.create(UDP, id, Some(&p), 0, 1, &mut |n| (x >> 16) % n, 0, &g)
                                .unwrap()
                                .to()
                                .sport,
                        );
                    }
                    got
                })
            })
            .collect();
        let mut all: Vec<u16> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort();
        let n = all.len();
        all.dedup();
        assert_eq!(n, 4000);
        assert_eq!(all.len(), 4000, "a public port was handed out twice");
        assert_eq!(
            t.create(UDP, fid(60000), Some(&p), 0, 1, &mut |_| 0, 0, &t.guard())
                .err(),
            Some(Failure::Exhausted)
        );
    }

    /// Two threads create flows while a third checks each reply direction
    /// (created on another thread) and a fourth reaps; each round runs
    /// past the timeout of the one before, so its public ports come back.
    #[test]
    fn concurrent_create_lookup_expire() {
        let tm = Timeouts {
            udp: 1000,
            udp_streaming: 1000,
            ..Timeouts::default()
        };
        let t = FlowTable::new(KeyKind::Ports, 1 << 20, tm);
        let p = pat(&["1.0.0.1", "1024-9999", "-", "-"]);
        for round in 0..4u64 {
            let now = 1 + round * 2000;
            let (tx, rx) = std::sync::mpsc::channel();
            let done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                for th in 0..2u64 {
                    let (tx, t, p) = (tx.clone(), &t, &p);
                    s.spawn(move || {
                        let g = t.guard();
                        let mut x = (round * 2 + th + 1) * 0x9E37_79B9;
                        let dst = if th == 0 { "2.0.0.2" } else { "3.0.0.3" };
                        for i in 0..3000u16 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let id = FlowId::new(a("10.0.0.1"), 1 + i, a(dst), 80);
                            // As the rewriter does: a lookup (which removes
                            // the last round's expired flow), then a create.
                            assert!(t.lookup(UDP, id, now, &g).is_none());
                            let r = t
                                .create(UDP, id, Some(p), 0, 1, &mut |n| x % n, now, &g)
                                .unwrap();
                            tx.send((id, r.to())).unwrap();
                        }
                    });
                }
                drop(tx);
                let (t2, done2) = (&t, &done);
                s.spawn(move || {
                    while !done2.load(Ordering::Relaxed) {
                        let g = t2.guard();
                        t2.reap(now, &g);
                    }
                });
                // Stops the reaper however the checks below end.
                struct Done<'a>(&'a std::sync::atomic::AtomicBool);
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::Relaxed);
                    }
                }
                let _done = Done(&done);
                let g = t.guard();
                let mut seen = std::collections::HashSet::new();
                for (id, to) in rx {
                    let back = t
                        .lookup(UDP, to.reverse(), now, &g)
                        .expect("the reply direction maps on another thread");
                    assert_eq!((back.dir, back.to()), (1, id.reverse()));
                    assert!(
                        seen.insert((to.daddr, to.sport)),
                        "a public port given to two live flows"
                    );
                }
            });
            let g = t.guard();
            t.reap(now, &g);
            assert_eq!((t.nflows(), t.entries()), (6000, 12000), "round {round}");
        }
    }

    #[test]
    fn sequence_number_changes() {
        let mut d = SeqDeltas::default();
        // 12 bytes fewer from 30 on, 12 more fewer from 65 on.
        d.add(30, -12);
        d.add(65, -12);
        assert_eq!(
            [d.map_seq(0), d.map_seq(30), d.map_seq(64), d.map_seq(65)],
            [0, 18, 52, 41]
        );
        // A retransmitted change does nothing.
        d.add(30, -12);
        assert_eq!(d.map_seq(70), 46);
        // Acknowledgements of the rewritten stream map back.
        assert_eq!(
            [d.map_ack(10), d.map_ack(18), d.map_ack(40), d.map_ack(45)],
            [10, 30, 52, 69]
        );
        // Far past a change point, earlier numbers take the last delta.
        assert_eq!(d.map_seq(1_100_000_000), 1_099_999_976);
        assert_eq!(d.map_seq(0), 0u32.wrapping_sub(24));
        assert_eq!(d.map_ack(0), 24);
    }
}
