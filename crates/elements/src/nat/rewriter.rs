// The engine behind every rewriter class (IPRewriter, TCPRewriter,
// UDPRewriter, IPAddrRewriter, IPAddrPairRewriter, ICMPPingRewriter): one
// Rust type, so ICMPRewriter can find any of them by name.

use super::flow::{ip_offset, packet_flow, rewrite, FlowId, PacketFlow, ICMP, TCP, UDP};
use super::ip_rewriter_patterns::IPRewriterPatterns;
use super::mapper::{Mapper, MapperCore};
use super::pattern::{parse_spec, Pattern, SpecText};
use super::table::{ms_of, Failure, FlowTable, Guard, KeyKind, Timeouts};
use crossbeam_utils::CachePadded;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount, StateCx, Verdict};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Ip,
    Tcp,
    Udp,
    Addr,
    Pair,
    Ping,
}

impl Class {
    fn kind(self) -> KeyKind {
        match self {
            Class::Addr => KeyKind::Addr,
            Class::Pair => KeyKind::Pair,
            _ => KeyKind::Ports,
        }
    }
    fn protos(self) -> &'static [u8] {
        match self {
            Class::Ip => &[TCP, UDP],
            Class::Tcp => &[TCP],
            Class::Udp => &[UDP],
            Class::Ping => &[ICMP],
            Class::Addr | Class::Pair => &[],
        }
    }
    fn pattern_fields(self) -> usize {
        match self {
            Class::Addr | Class::Pair => 2,
            _ => 4,
        }
    }
}

pub enum Spec {
    Drop,
    Pass(usize),
    Keep(usize, usize),
    Pattern(Arc<Pattern>, usize, usize),
    Mapper(Arc<MapperCore>),
}

pub struct Rewriter {
    class: Class,
    texts: Vec<(String, SpecText)>,
    specs: OnceLock<Vec<Spec>>,
    pub(crate) table: Arc<FlowTable>,
    dst_anno: bool,
    reap: Duration,
    noutputs: usize,
    /// Per-thread random state for port choice.
    rng: Box<[CachePadded<AtomicU64>]>,
    bad: PerThreadCount,
}

/// Why a rewriter drops a packet (the `drop_reasons` of every rewriter
/// class): not a packet of its protocols, an input whose specification
/// drops packets without a mapping, a full table (CAPACITY), no free
/// rewritten flow.
pub(crate) const REASONS: &[&str] = &["bad packet", "no mapping", "table full", "ports exhausted"];
const BAD_PACKET: u8 = 0;
const NO_MAPPING: u8 = 1;
const TABLE_FULL: u8 = 2;
const PORTS_EXHAUSTED: u8 = 3;

/// Verdict of a dropped packet in a batch's verdict list (no reason);
/// `DROP + 1 + r` for reason `r`. Outputs are below 256.
const DROP: u16 = 0xfe00;

/// A packet's verdict as an entry of a batch's verdict list.
#[inline]
fn code(v: Verdict) -> u16 {
    match v {
        Verdict::Out(o) => o as u16,
        Verdict::Drop => DROP,
        Verdict::DropFor(r) => DROP + 1 + u16::from(r),
    }
}

/// Drops `p`, whose verdict list entry is `v`, for its reason.
#[inline]
fn drop_coded(cx: &mut Cx<'_>, v: u16, p: Packet) {
    match v.checked_sub(DROP + 1) {
        Some(r) => cx.drop_packet_for(r as u8, p),
        None => cx.drop_packet(p),
    }
}

/// Packets looked up together before any is handled (the batched
/// lookup's window: enough misses in flight to cover a DRAM latency).
const RUN: usize = super::map::RUN;

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

pub fn make(cx: &mut ConfigCx<'_>, class: Class) -> Result<Rewriter, String> {
    let nthreads = cx.nthreads;
    let noutputs = cx.noutputs;
    let ninputs = cx.ninputs;
    let mut a = cx.args();
    let mut t = Timeouts::default();
    let dur = |a: &mut paraclick_runtime::args::Args<'_>, k: &str| a.read::<Duration>(k).map(ms);
    if let Some(v) = dur(&mut a, "TIMEOUT") {
        t.tcp = v;
        t.tcp_nodata = v;
        t.udp = v;
        t.udp_streaming = v;
        t.other = v;
    }
    if let Some(v) = dur(&mut a, "TCP_TIMEOUT") {
        t.tcp = v;
    }
    if let Some(v) = dur(&mut a, "TCP_DONE_TIMEOUT") {
        t.tcp_done = v;
    }
    if let Some(v) = dur(&mut a, "TCP_NODATA_TIMEOUT") {
        t.tcp_nodata = v;
    }
    if let Some(v) = dur(&mut a, "UDP_TIMEOUT") {
        t.udp = v;
        t.udp_streaming = v;
    }
    if let Some(v) = dur(&mut a, "UDP_STREAMING_TIMEOUT") {
        t.udp_streaming = v;
    }
    // Accepted for compatibility; mappings are never evicted early.
    let _ = dur(&mut a, "TCP_GUARANTEE");
    let _ = dur(&mut a, "UDP_GUARANTEE");
    let _ = dur(&mut a, "GUARANTEE");
    let reap = dur(&mut a, "REAP_INTERVAL").unwrap_or(15 * 60 * 1000);
    let mut cap = a.read::<usize>("CAPACITY");
    if let Some(c) = a.read::<usize>("MAPPING_CAPACITY") {
        cap = Some(c);
    }
    let dst_anno = a.read::<bool>("DST_ANNO").unwrap_or(true);
    let texts = a.rest_all();
    a.complete()?;
    if texts.is_empty() {
        return Err("at least one input specification required".into());
    }
    if texts.len() != ninputs {
        return Err(format!(
            "{} input specifications for {} inputs (one per input)",
            texts.len(),
            ninputs
        ));
    }
    let mut specs = Vec::new();
    let mut perr = Vec::new();
    for (i, s) in texts.iter().enumerate() {
        match parse_spec(s, class.pattern_fields(), noutputs.max(1), cx.env) {
            Ok(sp) => specs.push((s.clone(), sp)),
            Err(e) => perr.push(format!("input spec {i}: {e}")),
        }
    }
    if !perr.is_empty() {
        return Err(perr.join("; "));
    }
    let capacity = cap.unwrap_or(1 << 21);
    let n = nthreads.max(1);
    Ok(Rewriter {
        class,
        texts: specs,
        specs: OnceLock::new(),
        table: Arc::new(FlowTable::new(class.kind(), capacity, t)),
        dst_anno,
        reap: Duration::from_millis(reap.max(1)),
        noutputs,
        rng: (0..n)
            .map(|i| {
                CachePadded::new(AtomicU64::new(
                    0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
                ))
            })
            .collect(),
        bad: PerThreadCount::new(n),
    })
}

fn find_named(ix: &InitCx<'_>, name: &str) -> Option<Arc<Pattern>> {
    (0..ix.element_count()).find_map(|i| {
        ix.element::<IPRewriterPatterns>(i)
            .and_then(|p| p.get(name))
    })
}

impl Rewriter {
    #[inline]
    fn rand(&self, thread: usize) -> u64 {
        let s = &self.rng[thread];
        let mut x = s.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.store(x, Ordering::Relaxed);
        x
    }

    pub fn class(&self) -> Class {
        self.class
    }

    /// The `patterns` handler, in Click's form.
    fn patterns(&self) -> String {
        let mut s = String::new();
        let specs = self.specs.get();
        for (i, (t, _)) in self.texts.iter().enumerate() {
            let line = match specs.and_then(|v| v.get(i)) {
                Some(Spec::Drop) => "<drop>".to_string(),
                Some(Spec::Pass(_)) => "<pass>".to_string(),
                Some(Spec::Keep(..)) => "<keep>".to_string(),
                Some(Spec::Pattern(p, _, _)) => {
                    format!("{p} [{}]", p.users.load(Ordering::Relaxed))
                }
                Some(Spec::Mapper(_)) | None => format!("<{t}>"),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s
    }

    /// The table this rewriter's mappings live in (for ICMPRewriter).
    pub fn table_arc(&self) -> Arc<FlowTable> {
        self.table.clone()
    }

    /// A packet's flow, or why it is dropped (counted).
    #[inline(always)]
    fn classify(&self, cx: &mut Cx<'_>, p: &Packet) -> Option<PacketFlow> {
        let Some(ip) = ip_offset(p) else {
            self.bad.inc(cx.thread());
            return None;
        };
        let ports = !matches!(self.class, Class::Addr | Class::Pair);
        match packet_flow(p.data(), ip, ports, self.class.protos()) {
            Ok(f) => Some(f),
            Err(_) => {
                self.bad.inc(cx.thread());
                None
            }
        }
    }

    /// The rest of a packet's handling once its flow `pf` is known and
    /// `pre` is what [`FlowTable::find`] gave for it (checked here:
    /// expired, or created by an earlier packet of the batch since).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn finish<'g>(
        &'g self,
        cx: &mut Cx<'_>,
        port: usize,
        p: &mut Packet,
        pf: &PacketFlow,
        pre: Option<&'g super::table::FlowRef>,
        now: u64,
        g: &'g Guard<'_>,
    ) -> Verdict {
        let Some(specs) = self.specs.get() else {
            return Verdict::Drop;
        };
        let found = match pre {
            Some(r) if self.table.live(r, pf.proto, now, g) => Some(r),
            _ => self.table.lookup(pf.proto, pf.id, now, g),
        };
        let r = match found {
            Some(r) => r,
            None => {
                let (pat, f, r) = match specs.get(port) {
                    None | Some(Spec::Drop) => return Verdict::DropFor(NO_MAPPING),
                    Some(Spec::Pass(o)) => return Verdict::Out(*o),
                    Some(Spec::Keep(f, r)) => (None, *f, *r),
                    Some(Spec::Pattern(p, f, r)) => (Some(p), *f, *r),
                    Some(Spec::Mapper(m)) => {
                        let (p, f, r) = m.choose(pf.id);
                        (Some(p), *f, *r)
                    }
                };
                let rand = self.rand(cx.thread());
                match self
                    .table
                    .create_from(port, pf.proto, pf.id, pat, f, r, rand, now, g)
                {
                    Ok(r) => r,
                    Err(Failure::Capacity) => return Verdict::DropFor(TABLE_FULL),
                    Err(Failure::Exhausted) => return Verdict::DropFor(PORTS_EXHAUSTED),
                }
            }
        };
        r.touch(now, pf.tcp_flags, pf.has_data);
        let new: FlowId = pf.id.with(r.to(), r.mask());
        rewrite(p.data_mut(), pf, new);
        if self.dst_anno {
            p.anno_mut().dst_ip = Ipv4Addr::from(new.daddr);
        }
        Verdict::Out(r.out())
    }

    /// Verdicts for `pkts` (at most [`RUN`]): every packet's flow is read
    /// and looked up first (the entry found holds all a packet reads and
    /// writes), then each packet is handled in order.
    #[inline]
    fn handle_run(
        &self,
        cx: &mut Cx<'_>,
        port: usize,
        pkts: &mut [Packet],
        verdicts: &mut [u16],
        now: u64,
        g: &Guard<'_>,
    ) {
        let n = pkts.len();
        let mut pfs: [Option<PacketFlow>; RUN] = [None; RUN];
        let mut pre: [Option<&super::table::FlowRef>; RUN] = [None; RUN];
        for (pf, p) in pfs.iter_mut().zip(pkts.iter()) {
            *pf = self.classify(cx, p);
        }
        self.table.find_run(&pfs[..n], &mut pre[..n], g);
        for (i, p) in pkts.iter_mut().enumerate() {
            let v = match &pfs[i] {
                Some(pf) => self.finish(cx, port, p, pf, pre[i], now, g),
                None => Verdict::DropFor(BAD_PACKET),
            };
            verdicts[i] = code(v);
        }
    }

    /// One packet on its own (a batch of one).
    #[inline]
    fn handle(
        &self,
        cx: &mut Cx<'_>,
        port: usize,
        p: &mut Packet,
        now: u64,
        g: &Guard<'_>,
    ) -> Verdict {
        match self.classify(cx, p) {
            Some(pf) => self.finish(cx, port, p, &pf, None, now, g),
            None => Verdict::DropFor(BAD_PACKET),
        }
    }
}

impl Element for Rewriter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, hx| {
            e.table.format(ms_of(hx.timestamp()), None, true)
        }),
        Handler::read("mappings", |e, hx| {
            e.table.format(ms_of(hx.timestamp()), None, true)
        }),
        Handler::read("tcp_table", |e, hx| {
            e.table.format(ms_of(hx.timestamp()), Some(TCP), false)
        }),
        Handler::read("udp_table", |e, hx| {
            e.table.format(ms_of(hx.timestamp()), Some(UDP), false)
        }),
        Handler::read("nmappings", |e, hx| {
            e.table.flows(ms_of(hx.timestamp())).len().to_string()
        }),
        Handler::read("size", |e, _| e.table.nflows().to_string()),
        Handler::read("capacity", |e: &Rewriter, _| e.table.capacity().to_string()).write_with(
            |e, v, hx| {
                e.table.set_capacity(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::read("mapping_failures", |e, _| e.table.failures().to_string()),
        Handler::read("bad_packets", |e, _| e.bad.get().to_string()),
        Handler::read("patterns", |e, _| e.patterns()),
        Handler::write("clear", |e, _, _| {
            e.table.clear();
            Ok(())
        }),
    ];

    /// Hot reconfiguration: the old element's live mappings (see
    /// [`FlowTable::adopt`]) and its bad-packet count.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        self.table
            .adopt(&old.table, self.noutputs, ms_of(sx.timestamp()));
        self.bad.add(0, old.bad.get());
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let mut out = Vec::new();
        let mut errs = Vec::new();
        let check = |o: usize, errs: &mut Vec<String>| {
            if o >= self.noutputs.max(1) {
                errs.push(format!("output port {o} out of range"));
            }
        };
        for (text, s) in &self.texts {
            out.push(match s {
                SpecText::Drop => Spec::Drop,
                SpecText::Pass(o) => Spec::Pass(*o),
                SpecText::Keep(f, r) => Spec::Keep(*f, *r),
                SpecText::Pattern(p, f, r) => Spec::Pattern(p.clone(), *f, *r),
                SpecText::Named(n, f, r) => match find_named(ix, n) {
                    Some(p) => Spec::Pattern(p, *f, *r),
                    None => {
                        errs.push(format!("'{text}': no pattern named '{n}' (IPRewriterPatterns)"));
                        Spec::Drop
                    }
                },
                SpecText::Mapper(n) => {
                    let m = ix
                        .find(n)
                        .and_then(|i| ix.element::<Mapper>(i))
                        .map(|m| m.core());
                    match m {
                        Some(m) => {
                            for (_, f, r) in m.patterns() {
                                check(*f, &mut errs);
                                check(*r, &mut errs);
                            }
                            Spec::Mapper(m)
                        }
                        None => {
                            errs.push(format!("'{text}': not an input specification, and no mapper element named '{n}'"));
                            Spec::Drop
                        }
                    }
                }
            });
        }
        if !errs.is_empty() {
            return Err(errs.join("; "));
        }
        let _ = self.specs.set(out);
        ix.schedule_after(0, self.reap);
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let g = self.table.guard();
        self.table.reap(ms_of(cx.timestamp()), &g);
        cx.schedule_after(0, self.reap);
    }

    /// One table guard and one clock reading per batch; runs of up to
    /// `RUN` packets are looked up together (see `handle_run`), a lone
    /// packet directly. The batch moves on whole while every packet goes
    /// the same way, and is split by output otherwise.
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, port: usize, mut batch: Batch) {
        let n = batch.len();
        if n == 0 {
            return;
        }
        let mut small = [0u16; 64];
        let mut big = Vec::new();
        let verdicts: &mut [u16] = if n <= small.len() {
            &mut small[..n]
        } else {
            big.resize(n, 0);
            &mut big
        };
        {
            let g = self.table.guard();
            let now = ms_of(cx.timestamp());
            if n == 1 {
                verdicts[0] = code(self.handle(cx, port, &mut batch.as_mut_slice()[0], now, &g));
            } else {
                for (pk, vs) in batch
                    .as_mut_slice()
                    .chunks_mut(RUN)
                    .zip(verdicts.chunks_mut(RUN))
                {
                    self.handle_run(cx, port, pk, vs, now, &g);
                }
            }
        }
        let uniform = verdicts.iter().all(|&v| v == verdicts[0]);
        if uniform {
            match verdicts[0] {
                DROP => cx.drop_batch(batch),
                v if v > DROP => cx.drop_batch_for((v - DROP - 1) as u8, batch),
                o => cx.push(usize::from(o), batch),
            }
            return;
        }
        let mut outs: Vec<Batch> = (0..self.noutputs.max(1)).map(|_| Batch::new()).collect();
        for (p, &v) in batch.drain().zip(verdicts.iter()) {
            match outs.get_mut(usize::from(v)) {
                Some(b) if v < DROP => b.push(p),
                _ => drop_coded(cx, v, p),
            }
        }
        for (o, b) in outs.into_iter().enumerate() {
            if !b.is_empty() {
                cx.push(o, b);
            }
        }
    }
}
