//! The packet tracer: why a packet went where it went.
//!
//! `trace add N [FILTER]` (the `trace_add` global write handler) marks
//! the next N packets that enter the router, from any source or device
//! (an element without inputs), or the next N of them that match FILTER,
//! an IPFilter/tcpdump expression evaluated where they enter. A marked
//! packet carries its trace number in its annotations
//! ([`paraclick_packet::Packet::trace`]), so the mark goes with it
//! through queues, across threads, into both copies of a clone and
//! through encapsulation. `trace` (the `trace` global read handler) prints
//! each traced packet's path: every hop it took (from element and output
//! port to element and input port), on which thread, cycles since it
//! entered, what became of it (queued, pulled, dropped and why, left
//! through a device), and a one-line decode of its headers when it
//! entered and after each element that changed them. `trace_clear`
//! forgets them and stops tracing.
//!
//! Cost: while no trace was asked for, the data path pays one test of a
//! flag of its own thread's context per push or pull call (per batch, not
//! per packet per element; the flag is refreshed at the top of the
//! worker's loop when the router's sync epoch moved, which the tracer's
//! handlers move). While tracing, batches that hold a marked packet go on
//! one packet at a time (in order), and only marked packets write records.
//! A trace turns itself off (`Tracer::settle`) once its N marks are
//! taken and no marked packet is alive any more (the packet crate counts
//! them, [`paraclick_packet::packet::marked_packets`]: a mark, a copy of a
//! marked packet, a marked packet freed), so that afterwards no packet
//! pays for it; its records stay until `trace_clear`.
//!
//! Records are written by the thread that handles the packet, without a
//! lock, into its own bounded ring ([`RING_RECORDS`] records); a full ring
//! counts what it lost, and `trace` says so. Reading moves the records
//! into one store of at most [`MAX_STORED`] records (also counted when
//! full). Everything a client controls is bounded: N by [`MAX_TRACE`], a
//! filter by [`MAX_FILTER_LEN`] bytes.

use crate::args::ArgEnv;
use crate::core::Core;
use crate::ring::{Consumer, Producer, Ring};
use paraclick_lang::check::PortKind;
use paraclick_packet::Packet;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The most packets one `trace add` marks.
pub const MAX_TRACE: u32 = 10_000;
/// The longest filter `trace add` takes, in bytes.
pub const MAX_FILTER_LEN: usize = 4096;
/// Records each thread's ring holds until `trace` reads them.
pub const RING_RECORDS: usize = 4096;
/// Records kept for `trace` once read.
pub const MAX_STORED: usize = 1 << 16;
/// Bytes of a packet's data a record keeps (for the header decode).
const SNAP: usize = 64;

/// A compiled filter: whether a packet entering the router is to be
/// traced.
pub type PacketFilter = Arc<dyn Fn(&Packet) -> bool + Send + Sync>;

/// Compiles a filter expression (the element library registers IPFilter's
/// language through [`crate::Registry::set_packet_filter`]).
pub type FilterCompiler = fn(&str, &ArgEnv) -> Result<PacketFilter, String>;

/// What a record says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The packet entered the router at element `elem`.
    Entry { elem: u32 },
    /// The packet went from output `out` of `from` to input `inp` of `to`
    /// (pushed, or pulled when `pull`).
    Hop {
        from: u32,
        out: u16,
        to: u32,
        inp: u16,
        pull: bool,
    },
    /// Element `elem` dropped it, for its class's reason `reason`
    /// ([`NO_REASON`]: none named).
    Drop { elem: u32, reason: u16 },
}

/// A drop that named no reason.
pub(crate) const NO_REASON: u16 = u16::MAX;
/// A drop by an unconnected output.
pub(crate) const UNCONNECTED: u16 = u16::MAX - 1;

/// One record: an event of trace `id`, with the packet as it was then.
#[derive(Clone)]
pub(crate) struct Record {
    id: u32,
    seq: u64,
    tsc: u64,
    thread: u16,
    ev: Event,
    len: u32,
    /// The packet's MAC and network header offsets from its data start
    /// (-1: none).
    mac: i16,
    net: i16,
    snap_len: u8,
    snap: [u8; SNAP],
}

impl Record {
    fn new(id: u32, seq: u64, thread: usize, ev: Event, p: &Packet) -> Record {
        let d = p.data();
        let n = d.len().min(SNAP);
        let mut snap = [0; SNAP];
        snap[..n].copy_from_slice(&d[..n]);
        let off = |o: Option<isize>| o.and_then(|o| i16::try_from(o).ok()).unwrap_or(-1);
        Record {
            id,
            seq,
            tsc: crate::clock::cycles(),
            thread: thread as u16,
            ev,
            len: d.len() as u32,
            mac: off(p.mac_header_offset()),
            net: off(p.network_header_offset()),
            snap_len: n as u8,
            snap,
        }
    }

    fn headers_differ(&self, o: &Record) -> bool {
        self.len != o.len
            || self.mac != o.mac
            || self.net != o.net
            || self.snap[..self.snap_len as usize] != o.snap[..o.snap_len as usize]
    }
}

/// The router's tracer (one per [`Core`]).
pub(crate) struct Tracer {
    /// Tracing is in effect: workers copy it into their `Cx` every pass.
    pub on: AtomicBool,
    /// Packets still to mark.
    remaining: AtomicU32,
    /// The last trace number given.
    last_id: AtomicU32,
    /// Numbers up to this one are from before the last `trace_clear`.
    floor: AtomicU32,
    seq: AtomicU64,
    filter: Mutex<Option<PacketFilter>>,
    /// Changes with the filter, so a worker knows when to fetch it.
    pub filter_gen: AtomicU64,
    rings: OnceLock<Box<[Ring<Record>]>>,
    lost: Box<[AtomicU64]>,
    store: Mutex<Store>,
    compiler: Option<FilterCompiler>,
    /// Threads between taking a mark and setting it on their packet (so
    /// that [`Tracer::idle`] cannot miss a packet being marked).
    claiming: AtomicU32,
    /// Held by `trace add` while it turns tracing on, so that
    /// [`Tracer::settle`] cannot turn it off meanwhile.
    pub(crate) ctl: Mutex<()>,
}

#[derive(Default)]
struct Store {
    records: Vec<Record>,
    lost: u64,
}

impl Tracer {
    pub(crate) fn new(nthreads: usize, compiler: Option<FilterCompiler>) -> Tracer {
        Tracer {
            on: AtomicBool::new(false),
            remaining: AtomicU32::new(0),
            last_id: AtomicU32::new(0),
            floor: AtomicU32::new(0),
            seq: AtomicU64::new(0),
            filter: Mutex::new(None),
            filter_gen: AtomicU64::new(0),
            rings: OnceLock::new(),
            lost: (0..nthreads).map(|_| AtomicU64::new(0)).collect(),
            store: Mutex::new(Store::default()),
            compiler,
            claiming: AtomicU32::new(0),
            ctl: Mutex::new(()),
        }
    }

    /// Whether the trace can record nothing more: no marks left to take,
    /// none being taken, no marked packet alive in this process (the count
    /// is the process's: another router's marked packets keep this one on,
    /// which costs time, never a record).
    #[inline]
    pub(crate) fn idle(&self) -> bool {
        self.remaining.load(Ordering::SeqCst) == 0
            && self.claiming.load(Ordering::SeqCst) == 0
            && paraclick_packet::packet::marked_packets() <= 0
    }

    /// Turns tracing off if it is on and [`Tracer::idle`], moving the sync
    /// epoch so every worker's data path stops looking at packets when it
    /// next reaches the top of its loop. Whether it did. Called by a
    /// worker that finds only unmarked packets while tracing, and by the
    /// `trace_status` handler.
    ///
    /// Safe without waiting for the workers: once idle, no packet is
    /// marked until a `trace add`, which turns tracing on everywhere
    /// before it lets a mark be taken (it holds `ctl`, so this cannot
    /// interleave).
    #[cold]
    #[inline(never)]
    pub(crate) fn settle(&self, core: &Core) -> bool {
        if !self.on.load(Ordering::SeqCst) {
            return false;
        }
        let Ok(_g) = self.ctl.try_lock() else {
            return false;
        };
        if !self.idle() {
            return false;
        }
        self.on.store(false, Ordering::SeqCst);
        core.sync_epoch.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// `trace_status`: whether tracing is on, marks left, marked packets
    /// alive, and how many workers' data paths look at packets.
    pub(crate) fn status(&self, core: &Core) -> String {
        // Turned off here, or by a worker while another has not been
        // round since (it may be parked): wait until every worker has.
        let settled = self.settle(core);
        let stale = !self.on.load(Ordering::SeqCst)
            && core
                .threads
                .iter()
                .any(|t| t.tracing.load(Ordering::Acquire));
        if settled || stale {
            crate::crossing::barrier(core);
        }
        let threads = core
            .threads
            .iter()
            .filter(|t| t.tracing.load(Ordering::Acquire))
            .count();
        format!(
            "on {}\nmarks_left {}\nmarked_alive {}\nthreads_tracing {threads}\n",
            self.on.load(Ordering::SeqCst),
            self.remaining.load(Ordering::SeqCst),
            paraclick_packet::packet::marked_packets().max(0),
        )
    }

    /// Takes a mark like [`Tracer::claim`] and sets it on `p`, seen as
    /// taking by [`Tracer::idle`] until `p` counts as marked.
    #[inline]
    pub(crate) fn claim_for(&self, p: &mut Packet) -> Option<u32> {
        self.claiming.fetch_add(1, Ordering::SeqCst);
        let id = self.claim();
        if let Some(id) = id {
            p.set_trace(id);
        }
        self.claiming.fetch_sub(1, Ordering::SeqCst);
        id
    }

    /// The filter now in effect.
    pub(crate) fn filter(&self) -> Option<PacketFilter> {
        self.filter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes a mark for a packet entering: its trace number, or `None`
    /// when N packets were marked already.
    #[inline]
    pub(crate) fn claim(&self) -> Option<u32> {
        self.remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1))
            .ok()?;
        Some(self.last_id.fetch_add(1, Ordering::AcqRel) + 1)
    }

    /// Whether packets are still to be marked (cheap: a load).
    #[inline]
    pub(crate) fn marking(&self) -> bool {
        self.remaining.load(Ordering::Relaxed) > 0
    }

    /// Writes a record of packet `p` (trace `id`) on thread `thread`.
    pub(crate) fn record(&self, thread: usize, id: u32, ev: Event, p: &Packet) {
        if id <= self.floor.load(Ordering::Relaxed) {
            return;
        }
        let Some(rings) = self.rings.get() else {
            return;
        };
        let Some(ring) = rings.get(thread) else {
            return;
        };
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let r = Record::new(id, seq, thread, ev, p);
        if ring.push(&Producer::new(), r).is_err() {
            self.lost[thread].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `trace add N [FILTER]`: the handler. Turns tracing on, waits until
    /// every worker has seen it, then lets the N marks be taken and waits
    /// again: no packet is marked while a worker still skips the tracer
    /// (a trace that turned itself off, [`Tracer::settle`], or none yet).
    pub(crate) fn add_and_wait(&self, core: &Core, value: &str) -> Result<(), String> {
        let _g = self.ctl.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.add(core.nthreads, &core.arg_env, value)?;
        crate::crossing::barrier(core);
        self.remaining.store(n, Ordering::SeqCst);
        crate::crossing::barrier(core);
        Ok(())
    }

    /// `trace add N [FILTER]` but the marks: tracing on, the filter set;
    /// the number of marks to allow once every worker traces.
    fn add(&self, nthreads: usize, env: &ArgEnv, value: &str) -> Result<u32, String> {
        let value = value.trim();
        let (n, filter) = match value.split_once(char::is_whitespace) {
            Some((n, f)) => (n, f.trim()),
            None => (value, ""),
        };
        let n: u32 = n
            .parse()
            .ok()
            .filter(|&n| (1..=MAX_TRACE).contains(&n))
            .ok_or_else(|| {
                format!(
                    "trace add: expected a packet count from 1 to {MAX_TRACE}, not '{}'",
                    n.escape_debug()
                )
            })?;
        if filter.len() > MAX_FILTER_LEN {
            return Err(format!(
                "trace add: the filter is {} bytes; at most {MAX_FILTER_LEN}",
                filter.len()
            ));
        }
        let f = if filter.is_empty() {
            None
        } else {
            let c = self
                .compiler
                .ok_or("trace add: this router has no filter language")?;
            Some(c(filter, env).map_err(|e| format!("trace add: filter: {e}"))?)
        };
        self.rings.get_or_init(|| {
            (0..nthreads)
                .map(|_| Ring::with_modes(RING_RECORDS, true, true))
                .collect()
        });
        // Marks of an earlier request stop until the new count applies.
        self.remaining.store(0, Ordering::SeqCst);
        *self.filter.lock().unwrap_or_else(|e| e.into_inner()) = f;
        self.filter_gen.fetch_add(1, Ordering::Release);
        self.on.store(true, Ordering::SeqCst);
        Ok(n)
    }

    /// A hot swap: `self` (the new router's tracer, `nc`) takes over the
    /// old router's (`old`, of `oc`): its records, with their elements
    /// found by name in the new router (a record of an element the new
    /// router lacks is counted lost), its trace numbers, and the trace
    /// request in effect (the packets still to mark, the filter).
    pub(crate) fn carry(&self, old: &Tracer, oc: &Core, nc: &Core) {
        let mut ost = old.store.lock().unwrap_or_else(|e| e.into_inner());
        old.drain(&mut ost);
        let map = |e: u32| -> Option<u32> {
            let s = oc.slots.get(e as usize)?;
            nc.names.get(&s.name).map(|&i| i as u32)
        };
        let same_class = |e: u32, n: u32| {
            oc.slots.get(e as usize).map(|s| &s.class) == nc.slots.get(n as usize).map(|s| &s.class)
        };
        let mut st = self.store.lock().unwrap_or_else(|e| e.into_inner());
        st.lost += ost.lost
            + old
                .lost
                .iter()
                .map(|l| l.load(Ordering::Relaxed))
                .sum::<u64>();
        for r in ost.records.drain(..) {
            let ev = match r.ev {
                Event::Entry { elem } => map(elem).map(|elem| Event::Entry { elem }),
                Event::Hop {
                    from,
                    out,
                    to,
                    inp,
                    pull,
                } => match (map(from), map(to)) {
                    (Some(from), Some(to)) => Some(Event::Hop {
                        from,
                        out,
                        to,
                        inp,
                        pull,
                    }),
                    _ => None,
                },
                Event::Drop { elem, reason } => map(elem).map(|n| Event::Drop {
                    elem: n,
                    reason: if same_class(elem, n) || reason >= UNCONNECTED {
                        reason
                    } else {
                        NO_REASON
                    },
                }),
            };
            match ev {
                Some(ev) if st.records.len() < MAX_STORED => st.records.push(Record { ev, ..r }),
                _ => st.lost += 1,
            }
        }
        drop(st);
        self.seq
            .store(old.seq.load(Ordering::Relaxed), Ordering::Relaxed);
        self.last_id
            .store(old.last_id.load(Ordering::Acquire), Ordering::Release);
        self.floor
            .store(old.floor.load(Ordering::Acquire), Ordering::Release);
        if old.rings.get().is_some() {
            self.rings.get_or_init(|| {
                (0..nc.nthreads)
                    .map(|_| Ring::with_modes(RING_RECORDS, true, true))
                    .collect()
            });
        }
        *self.filter.lock().unwrap_or_else(|e| e.into_inner()) = old.filter();
        self.filter_gen.fetch_add(1, Ordering::Release);
        self.remaining
            .store(old.remaining.load(Ordering::Acquire), Ordering::Release);
        self.on
            .store(old.on.load(Ordering::Acquire), Ordering::Release);
    }

    /// `trace clear`: stops tracing and forgets every record.
    pub(crate) fn clear(&self) {
        self.on.store(false, Ordering::Release);
        self.remaining.store(0, Ordering::Release);
        self.floor
            .store(self.last_id.load(Ordering::Acquire), Ordering::Release);
        let mut st = self.store.lock().unwrap_or_else(|e| e.into_inner());
        self.drain(&mut st);
        *st = Store::default();
        for l in self.lost.iter() {
            l.store(0, Ordering::Relaxed);
        }
    }

    fn drain(&self, st: &mut Store) {
        let Some(rings) = self.rings.get() else {
            return;
        };
        let mut buf = Vec::new();
        for r in rings.iter() {
            while r.pop_burst(&Consumer::new(), &mut buf, 256) > 0 {
                for rec in buf.drain(..) {
                    if st.records.len() < MAX_STORED {
                        st.records.push(rec);
                    } else {
                        st.lost += 1;
                    }
                }
            }
        }
    }

    /// The `trace` handler's text.
    pub(crate) fn show(&self, core: &Core) -> String {
        let mut st = self.store.lock().unwrap_or_else(|e| e.into_inner());
        self.drain(&mut st);
        let lost = st.lost
            + self
                .lost
                .iter()
                .map(|l| l.load(Ordering::Relaxed))
                .sum::<u64>();
        let mut out = String::new();
        if lost > 0 {
            let _ = writeln!(
                out,
                "trace buffer overflowed: {lost} records lost (read the traces sooner, or trace fewer packets)"
            );
        }
        let mut by_id: BTreeMap<u32, Vec<&Record>> = BTreeMap::new();
        for r in &st.records {
            by_id.entry(r.id).or_default().push(r);
        }
        if by_id.is_empty() {
            out.push_str(if self.on.load(Ordering::Relaxed) {
                "no packets traced yet\n"
            } else {
                "no traces (trace add N [FILTER] starts one)\n"
            });
        }
        for (id, mut recs) in by_id {
            recs.sort_by_key(|r| r.seq);
            show_one(core, id, &recs, &mut out);
        }
        out
    }
}

fn elem_name(core: &Core, e: u32) -> String {
    match core.slots.get(e as usize) {
        Some(s) => format!("{} :: {}", s.name, s.class),
        None => format!("#{e}"),
    }
}

/// An element that takes pushes and is pulled from: it stores packets.
fn stores(core: &Core, e: u32, inp: u16) -> bool {
    core.slots.get(e as usize).is_some_and(|s| {
        s.input_kinds.get(inp as usize) == Some(&PortKind::Push)
            && !s.output_kinds.is_empty()
            && s.output_kinds.iter().all(|k| *k == PortKind::Pull)
    })
}

fn show_one(core: &Core, id: u32, recs: &[&Record], out: &mut String) {
    let t0 = recs
        .iter()
        .find(|r| matches!(r.ev, Event::Entry { .. }))
        .map_or(recs[0].tsc, |r| r.tsc);
    let _ = writeln!(out, "trace {id}:");
    let mut last: Option<&Record> = None;
    let mut shown: Option<String> = None;
    let mut outs_of: BTreeMap<u32, u32> = BTreeMap::new();
    for r in recs {
        let dt = r.tsc.saturating_sub(t0);
        let _ = write!(out, "  {dt:>10} cycles  thread {:<2} ", r.thread);
        match r.ev {
            Event::Entry { elem } => {
                let _ = write!(out, "entered at {}", elem_name(core, elem));
            }
            Event::Hop {
                from,
                out: o,
                to,
                inp,
                pull,
            } => {
                let fname = core.slots.get(from as usize).map_or("?", |s| &s.name);
                let _ = write!(out, "{fname}[{o}] -> [{inp}]{}", elem_name(core, to));
                let k = outs_of.entry(from).or_default();
                *k += 1;
                if *k > 1 && !pull {
                    out.push_str("  (another copy)");
                }
                if pull {
                    out.push_str("  pulled");
                } else if stores(core, to, inp) {
                    out.push_str("  queued");
                }
            }
            Event::Drop { elem, reason } => {
                let why = match reason {
                    NO_REASON => crate::drops::UNSPECIFIED.to_string(),
                    UNCONNECTED => crate::drops::UNCONNECTED.to_string(),
                    r => core
                        .reasons
                        .names(elem as usize)
                        .get(r as usize)
                        .map_or(crate::drops::UNSPECIFIED.to_string(), |s| s.to_string()),
                };
                let _ = write!(out, "dropped by {}: {why}", elem_name(core, elem));
            }
        }
        out.push('\n');
        // The decode, when the bytes changed and so did what it says (a
        // header annotation set on unchanged bytes is no change).
        let changed = match last {
            None => true,
            Some(l) => r.headers_differ(l) && !matches!(r.ev, Event::Drop { .. }),
        };
        if changed {
            let d = decode(r);
            if shown.as_deref() != Some(d.as_str()) {
                let _ = writeln!(out, "{:>28}{d}", "");
                shown = Some(d);
            }
        }
        last = Some(r);
    }
    // How the path ended, when no record says it.
    if let Some(l) = last {
        if let Event::Hop { to, inp, pull, .. } = l.ev {
            let s = &core.slots[to as usize];
            if !pull && stores(core, to, inp) {
                let _ = writeln!(out, "  still queued in {} (or taken since)", s.name);
            } else if s.output_kinds.is_empty() {
                let _ = writeln!(out, "  left through {}", elem_name(core, to));
            } else {
                let _ = writeln!(out, "  kept or consumed by {}", elem_name(core, to));
            }
        }
    }
}

/// A one-line decode of a record's headers.
fn decode(r: &Record) -> String {
    let d = &r.snap[..r.snap_len as usize];
    let mut s = format!("len {}", r.len);
    let mut ip_at = if r.net >= 0 {
        Some(r.net as usize)
    } else {
        None
    };
    let ether_at = if r.mac >= 0 {
        Some(r.mac as usize)
    } else if ip_at.is_none()
        && !matches!(d.first().map(|b| b >> 4), Some(4 | 6))
        && d.len() >= 14
        && matches!(be16(d, 12), Some(0x0800 | 0x86dd | 0x0806))
    {
        Some(0)
    } else {
        None
    };
    if ip_at.is_none() && ether_at.is_none() && matches!(d.first().map(|b| b >> 4), Some(4 | 6)) {
        // Raw IP without a network header annotation (after a Strip).
        ip_at = Some(0);
    }
    if let Some(m) = ether_at {
        if let Some(e) = d.get(m..m + 14) {
            let ty = u16::from_be_bytes([e[12], e[13]]);
            let _ = write!(
                s,
                " | ether {} > {} type {ty:04x}",
                mac(&e[6..12]),
                mac(&e[..6])
            );
            if ip_at.is_none() && ty != 0x0806 {
                ip_at = Some(m + 14);
            }
            if ty == 0x0806 {
                if let Some(a) = d.get(m + 14..m + 42) {
                    let op = u16::from_be_bytes([a[6], a[7]]);
                    let _ = write!(
                        s,
                        " | arp {} {} > {}",
                        if op == 1 { "who-has" } else { "reply" },
                        ip4(&a[14..18]),
                        ip4(&a[24..28])
                    );
                }
                return s;
            }
        }
    }
    let Some(i) = ip_at else {
        return s;
    };
    let Some(ip) = d.get(i..) else {
        return s;
    };
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => {
            let hl = usize::from(ip[0] & 15) * 4;
            let proto = ip[9];
            let _ = write!(
                s,
                " | ip {} > {} ttl {} len {} proto {}",
                ip4(&ip[12..16]),
                ip4(&ip[16..20]),
                ip[8],
                u16::from_be_bytes([ip[2], ip[3]]),
                proto_name(proto)
            );
            transport(&mut s, proto, ip.get(hl..).unwrap_or(&[]));
        }
        Some(6) if ip.len() >= 40 => {
            let src = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap_or([0; 16]));
            let dst =
                std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap_or([0; 16]));
            let _ = write!(
                s,
                " | ip6 {src} > {dst} hlim {} next {}",
                ip[7],
                proto_name(ip[6])
            );
            transport(&mut s, ip[6], ip.get(40..).unwrap_or(&[]));
        }
        _ => s.push_str(" | not IP"),
    }
    s
}

fn transport(s: &mut String, proto: u8, t: &[u8]) {
    match proto {
        6 | 17 if t.len() >= 4 => {
            let _ = write!(
                s,
                " {} > {}",
                be16(t, 0).unwrap_or(0),
                be16(t, 2).unwrap_or(0)
            );
            if proto == 6 && t.len() >= 14 {
                let _ = write!(s, " flags {:02x}", t[13]);
            }
        }
        1 | 58 if t.len() >= 2 => {
            let _ = write!(s, " type {} code {}", t[0], t[1]);
        }
        50 if t.len() >= 8 => {
            let _ = write!(
                s,
                " spi {:#x} seq {}",
                u32::from_be_bytes([t[0], t[1], t[2], t[3]]),
                u32::from_be_bytes([t[4], t[5], t[6], t[7]])
            );
        }
        _ => {}
    }
}

fn proto_name(p: u8) -> String {
    paraclick_packet::wire::ip_proto::name(p).map_or_else(|| p.to_string(), str::to_string)
}

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

fn ip4(b: &[u8]) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

fn mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_count_or_a_long_filter_is_an_error_not_a_panic() {
        let t = Tracer::new(1, None);
        let env = ArgEnv::default();
        for bad in ["", "0", "-1", "x", "10001", "99999999999999999999"] {
            let e = t.add(1, &env, bad).unwrap_err();
            assert!(e.contains("packet count"), "{bad}: {e}");
        }
        let long = format!("5 {}", "x".repeat(MAX_FILTER_LEN + 1));
        assert!(t.add(1, &env, &long).unwrap_err().contains("at most"));
        assert!(t
            .add(1, &env, "5 tcp")
            .unwrap_err()
            .contains("no filter language"));
        assert!(!t.on.load(Ordering::Relaxed), "nothing was armed");
        let n = t.add(1, &env, "3").unwrap();
        assert_eq!(t.claim(), None, "no marks before every worker traces");
        t.remaining.store(n, Ordering::SeqCst);
        assert_eq!(
            (t.claim(), t.claim(), t.claim(), t.claim()),
            (Some(1), Some(2), Some(3), None)
        );
    }

    #[test]
    fn a_full_ring_counts_what_it_lost() {
        let t = Tracer::new(1, None);
        let n = t.add(1, &ArgEnv::default(), "1").unwrap();
        t.remaining.store(n, Ordering::SeqCst);
        let p = Packet::from_slice(&[0; 20]).unwrap();
        for _ in 0..RING_RECORDS + 5 {
            t.record(0, 1, Event::Entry { elem: 0 }, &p);
        }
        assert_eq!(t.lost[0].load(Ordering::Relaxed), 5);
    }

    #[test]
    fn decodes_an_ethernet_udp_frame() {
        let mut f = vec![0u8; 42];
        f[..6].copy_from_slice(&[0, 0, 0xc0, 0xae, 0x67, 0xef]);
        f[6..12].copy_from_slice(&[0, 0, 0xc0, 0x11, 0x11, 0x11]);
        f[12..14].copy_from_slice(&[8, 0]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&28u16.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[1, 0, 0, 2]);
        f[30..34].copy_from_slice(&[2, 0, 0, 2]);
        f[34..36].copy_from_slice(&1234u16.to_be_bytes());
        f[36..38].copy_from_slice(&5678u16.to_be_bytes());
        let p = Packet::from_slice(&f).unwrap();
        let r = Record::new(1, 0, 0, Event::Entry { elem: 0 }, &p);
        assert_eq!(
            decode(&r),
            "len 42 | ether 00:00:c0:11:11:11 > 00:00:c0:ae:67:ef type 0800 \
             | ip 1.0.0.2 > 2.0.0.2 ttl 64 len 28 proto udp 1234 > 5678"
        );
    }
}
