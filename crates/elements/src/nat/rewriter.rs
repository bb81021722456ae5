// The engine behind every rewriter class (IPRewriter, TCPRewriter,
// UDPRewriter, IPAddrRewriter, IPAddrPairRewriter, ICMPPingRewriter): one
// Rust type, so ICMPRewriter can find any of them by name.

use super::flow::{ip_offset, packet_flow, rewrite, FlowId, PacketFlow, ICMP, TCP, UDP};
use super::ip_rewriter_patterns::IPRewriterPatterns;
use super::mapper::{Mapper, MapperCore};
use super::pattern::{parse_spec, Pattern, SpecText};
use super::table::{ms_of, Failure, FlowSet, FlowTable, Guard, KeyKind, Timeouts};
use crate::standard::paint::AnnoByte;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{
    ConfigCx, Cx, DynHandler, Element, Handler, HandlerCx, InitCx, PerThreadCount, StateCx, Verdict,
};
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, RwLock};
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
            // UDPRewriter rewrites TCP too (Click's documentation says so).
            Class::Udp => &[UDP, TCP],
            Class::Ping => &[ICMP],
            Class::Addr | Class::Pair => &[],
        }
    }
}

/// The router's time in milliseconds (its clock, real or simulated).
#[inline]
pub(crate) fn clock_ms(cx: &Cx<'_>) -> u64 {
    ms_of(cx.timestamp())
}

/// [`clock_ms`] for handlers.
pub(crate) fn handler_ms(hx: &HandlerCx<'_>) -> u64 {
    ms_of(hx.timestamp())
}

/// A rewriter's specifications and table, for another element (see
/// [`Rewriter::map_handle`]).
#[derive(Clone)]
pub struct MapHandle {
    specs: Arc<OnceLock<Vec<RwLock<Spec>>>>,
    pub table: Arc<FlowTable>,
    pub class: Class,
    pub ninputs: usize,
}

impl MapHandle {
    /// Whether the rewriter has a live mapping for flow `id`.
    pub fn has_mapping(&self, proto: u8, id: FlowId, now: u64) -> bool {
        let g = self.table.guard();
        self.table.lookup(proto, id, now, &g).is_some()
    }

    /// A mapping for flow `id` (protocol `proto`) as if a packet of it
    /// had arrived on input `input` (FTPPortMapper's data connections):
    /// the rewritten flow, or None if no mapping is made. An existing
    /// mapping is used as it is.
    pub fn map_as_input(&self, input: usize, proto: u8, id: FlowId, now: u64) -> Option<FlowId> {
        let g = self.table.guard();
        if let Some(r) = self.table.lookup(proto, id, now, &g) {
            return Some(id.with(r.to(), r.mask()));
        }
        let spec = self.specs.get()?.get(input)?.read().ok()?.clone();
        let (pat, f, r) = match &spec {
            Spec::Drop | Spec::Pass(_) => return None,
            Spec::Keep(f, r) => (None, *f, *r),
            Spec::Pattern(p, f, r) => (Some(p), *f, *r),
            Spec::Mapper(m) => {
                let (p, f, r) = m.choose(id);
                (Some(p), *f, *r)
            }
        };
        let (e, _) = self
            .table
            .create_from(input, 0, proto, id, pat, f, r, &mut draw, now, &g)
            .ok()?;
        Some(id.with(e.to(), e.mask()))
    }
}

/// A random choice among `n` for a pattern's allocation, from the shared
/// generator as Click's rewriters draw it (`click_random(0, n - 1)`).
fn draw(n: u64) -> u64 {
    match u32::try_from(n - 1) {
        Ok(top) => u64::from(crate::util::random_range(0, top)),
        // Beyond Click's patterns (address and port ranges together).
        Err(_) => {
            let hi = u64::from(crate::util::random_range(0, u32::MAX));
            ((hi << 32) | u64::from(crate::util::random_range(0, u32::MAX))) % n
        }
    }
}

type Known = (Vec<(String, Arc<Pattern>)>, Vec<(String, Arc<MapperCore>)>);

#[derive(Clone)]
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
    /// Each input's specification (a `patternN` write replaces one).
    specs: Arc<OnceLock<Vec<RwLock<Spec>>>>,
    pub(crate) table: Arc<FlowTable>,
    /// MAPPING_CAPACITY as an element name: share that rewriter's
    /// capacity (its flow set).
    capacity_from: Option<String>,
    /// REPLY_ANNO: the annotation set on reply packets to the value the
    /// flow's first packet had.
    reply_anno: Option<AnnoByte>,
    /// Neither TCPRewriter, UDPRewriter nor REPLY_ANNO: nothing beyond the
    /// common translation per packet.
    plain: bool,
    /// The router's named patterns and this rewriter's mappers (for
    /// `patternN` writes).
    known: OnceLock<Known>,
    dst_anno: bool,
    reap: Duration,
    noutputs: usize,
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
        if class == Class::Udp {
            // UDPRewriter's TIMEOUT is its flows' (TCP's too).
            t.udp = v;
            t.udp_streaming = v;
        } else {
            t.tcp = v;
            t.tcp_nodata = v;
            t.udp = v;
            t.udp_streaming = v;
        }
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
    if let Some(v) = dur(&mut a, "STREAMING_TIMEOUT") {
        t.udp_streaming = v;
    }
    if let Some(v) = dur(&mut a, "GUARANTEE") {
        t.guarantee = [v; 3];
    }
    if let Some(v) = dur(&mut a, "TCP_GUARANTEE") {
        t.guarantee[0] = v;
    }
    if let Some(v) = dur(&mut a, "UDP_GUARANTEE") {
        t.guarantee[1] = v;
    }
    let reap = dur(&mut a, "REAP_INTERVAL").unwrap_or(15 * 60 * 1000);
    let mut cap = a.read::<usize>("CAPACITY");
    let mut capacity_from = None;
    if let Some(c) = a.read::<String>("MAPPING_CAPACITY") {
        match c.trim().parse::<usize>() {
            Ok(n) => cap = Some(n),
            Err(_)
                if !c.trim().is_empty()
                    && !c.trim().starts_with(|ch: char| ch.is_ascii_digit()) =>
            {
                capacity_from = Some(c.trim().to_string())
            }
            Err(_) => a.error(format!(
                "MAPPING_CAPACITY: expected unsigned integer or rewriter name, not '{c}'"
            )),
        }
    }
    let dst_anno = a.read::<bool>("DST_ANNO").unwrap_or(true);
    let reply_anno = a.read::<AnnoByte>("REPLY_ANNO");
    let texts = a.rest_all();
    a.complete()?;
    if texts.is_empty() {
        return Err("at least one input specification required".into());
    }
    if texts.len() != ninputs {
        return Err(format!(
            "need {ninputs} arguments, one per input port ({} input specifications given)",
            texts.len()
        ));
    }
    let mut specs = Vec::new();
    let mut perr = Vec::new();
    for (i, s) in texts.iter().enumerate() {
        match parse_spec(s, noutputs.max(1), cx.env) {
            Ok(sp) => specs.push((s.clone(), sp)),
            Err(e) => perr.push(format!("input spec {i}: {e}")),
        }
    }
    if !perr.is_empty() {
        return Err(perr.join("\n"));
    }
    let capacity = cap.unwrap_or(1 << 21);
    let n = nthreads.max(1);
    Ok(Rewriter {
        class,
        texts: specs,
        specs: Arc::new(OnceLock::new()),
        table: Arc::new(FlowTable::with_keys(
            class.kind(),
            class == Class::Udp,
            capacity,
            t,
        )),
        capacity_from,
        plain: reply_anno.is_none() && !matches!(class, Class::Tcp | Class::Udp),
        reply_anno,
        known: OnceLock::new(),
        dst_anno,
        reap: Duration::from_millis(reap.max(1)),
        noutputs,
        bad: PerThreadCount::new(n),
    })
}

impl Rewriter {
    pub fn class(&self) -> Class {
        self.class
    }

    /// The `patterns` handler, in Click's form: one line per input, a
    /// pattern as its fields followed by ` [FLOWS]` while it has live
    /// flows, or `<drop>`, `<nochange>`, `<keep>`, `<mapper>`.
    fn patterns(&self) -> String {
        let mut s = String::new();
        let Some(specs) = self.specs.get() else {
            return s;
        };
        for sp in specs {
            let line = match &*sp.read().unwrap_or_else(|e| e.into_inner()) {
                Spec::Drop => "<drop>".to_string(),
                Spec::Pass(_) => "<nochange>".to_string(),
                Spec::Keep(..) => "<keep>".to_string(),
                Spec::Pattern(p, _, _) => match p.users.load(Ordering::Relaxed) {
                    0 => p.to_string(),
                    n => format!("{p} [{n}]"),
                },
                Spec::Mapper(_) => "<mapper>".to_string(),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s
    }

    /// An input specification made ready to use: names looked up among
    /// the router's IPRewriterPatterns and mappers (`named`, `mappers`),
    /// output ports checked.
    fn resolve(
        &self,
        text: &str,
        sp: &SpecText,
        named: &[(String, Arc<Pattern>)],
        mappers: &[(String, Arc<MapperCore>)],
    ) -> Result<Spec, String> {
        let check = |o: usize| {
            if o >= self.noutputs.max(1) {
                Err("output port out of range".to_string())
            } else {
                Ok(())
            }
        };
        Ok(match sp {
            SpecText::Drop => Spec::Drop,
            SpecText::Pass(o) => Spec::Pass(*o),
            SpecText::Keep(f, r) => Spec::Keep(*f, *r),
            SpecText::Pattern(p, f, r) => Spec::Pattern(p.clone(), *f, *r),
            SpecText::Named(n, f, r) => match named.iter().find(|(m, _)| m == n) {
                Some((_, p)) => Spec::Pattern(p.clone(), *f, *r),
                None => return Err(format!("no such pattern '{n}'")),
            },
            SpecText::Mapper(n) => match mappers.iter().find(|(m, _)| m == n) {
                Some((_, m)) => {
                    for (_, f, r) in m.patterns() {
                        check(*f)?;
                        check(*r)?;
                    }
                    Spec::Mapper(m.clone())
                }
                None => {
                    return Err(format!(
                        "'{text}': unknown specification, and no mapper element named '{n}'"
                    ))
                }
            },
        })
    }

    /// The `tcp_lookup`, `udp_lookup` and `lookup` handlers: the mapping
    /// of flow `SADDR SPORT DADDR DPORT` of protocol `proto` applied, in
    /// the same form, or nothing if there is none.
    fn lookup_text(&self, proto: u8, param: Option<&str>, now: u64) -> Result<String, String> {
        let w: Vec<&str> = param.unwrap_or("").split_whitespace().collect();
        let bad = || "expected 'SADDR SPORT DADDR DPORT'".to_string();
        let [sa, sp, da, dp] = w.as_slice() else {
            return Err(bad());
        };
        let id = FlowId {
            saddr: u32::from(sa.parse::<Ipv4Addr>().map_err(|_| bad())?),
            sport: sp.parse().map_err(|_| bad())?,
            daddr: u32::from(da.parse::<Ipv4Addr>().map_err(|_| bad())?),
            dport: dp.parse().map_err(|_| bad())?,
        };
        let g = self.table.guard();
        Ok(match self.table.lookup(proto, id, now, &g) {
            Some(r) => {
                let n = id.with(r.to(), r.mask());
                format!(
                    "{} {} {} {}",
                    Ipv4Addr::from(n.saddr),
                    n.sport,
                    Ipv4Addr::from(n.daddr),
                    n.dport
                )
            }
            None => String::new(),
        })
    }

    /// The `table` handler: the address rewriters' and TCPRewriter's and
    /// UDPRewriter's mappings as Click prints them (no protocol column);
    /// IPRewriter's with each line's protocol first.
    fn table_text(&self, now: u64) -> String {
        let with_proto = self.class == Class::Ip || self.class == Class::Ping;
        self.table.format(now, None, with_proto)
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
        port: usize,
        p: &mut Packet,
        pf: &PacketFlow,
        pre: Option<&'g super::table::FlowRef>,
        now: u64,
        g: &'g Guard<'_>,
    ) -> Verdict {
        let found = match pre {
            Some(r) if self.table.live(r, pf.proto, now, g) => Some(r),
            _ => self.table.lookup(pf.proto, pf.id, now, g),
        };
        let (r, out, reply) = match found {
            Some(r) => (r, r.out(), r.dir == 1),
            None => match self.create(port, p, pf, now, g) {
                Ok((r, out)) => (r, out, false),
                Err(v) => return v,
            },
        };
        if self.plain {
            r.touch(now, pf.tcp_flags, pf.has_data);
        } else {
            self.touch_extra(r, now, pf);
        }
        let new: FlowId = pf.id.with(r.to(), r.mask());
        rewrite(p.data_mut(), pf, new);
        if self.dst_anno {
            p.anno_mut().dst_ip = Ipv4Addr::from(new.daddr);
        }
        if !self.plain {
            self.rewrite_extra(r, p, pf, reply);
        }
        Verdict::Out(out)
    }

    /// [`FlowRef::touch`] for UDPRewriter, whose flows are datagram flows
    /// whatever the protocol: every packet counts, no TCP states.
    #[inline]
    fn touch_extra(&self, r: &super::table::FlowRef, now: u64, pf: &PacketFlow) {
        if self.class == Class::Udp {
            r.touch(now, 0, true);
        } else {
            r.touch(now, pf.tcp_flags, pf.has_data);
        }
    }

    /// TCPRewriter's sequence number changes and REPLY_ANNO.
    #[inline]
    fn rewrite_extra(
        &self,
        r: &super::table::FlowRef,
        p: &mut Packet,
        pf: &PacketFlow,
        reply: bool,
    ) {
        if self.class == Class::Tcp && r.has_seq() {
            super::flow::rewrite_seq(p.data_mut(), pf, &r.flow, r.dir);
        }
        if let Some(a) = self.reply_anno {
            if reply {
                a.set(p, r.flow.reply_anno);
            }
        }
    }

    /// A new flow's mapping, by input `port`'s specification: the entry
    /// and the output for `p`, or the verdict when none is made.
    #[cold]
    #[inline(never)]
    fn create<'g>(
        &'g self,
        port: usize,
        p: &Packet,
        pf: &PacketFlow,
        now: u64,
        g: &'g Guard<'_>,
    ) -> Result<(&'g super::table::FlowRef, usize), Verdict> {
        let spec = match self.specs.get().and_then(|v| v.get(port)) {
            Some(s) => s.read().unwrap_or_else(|e| e.into_inner()).clone(),
            None => return Err(Verdict::DropFor(NO_MAPPING)),
        };
        let (pat, f, r) = match &spec {
            Spec::Drop => return Err(Verdict::DropFor(NO_MAPPING)),
            Spec::Pass(o) => return Err(Verdict::Out(*o)),
            Spec::Keep(f, r) => (None, *f, *r),
            Spec::Pattern(p, f, r) => (Some(p), *f, *r),
            Spec::Mapper(m) => {
                let (p, f, r) = m.choose(pf.id);
                (Some(p), *f, *r)
            }
        };
        let anno = self.reply_anno.map_or(0, |a| a.get(p));
        self.table
            .create_from(port, anno, pf.proto, pf.id, pat, f, r, &mut draw, now, g)
            .map_err(|e| match e {
                Failure::Capacity => Verdict::DropFor(TABLE_FULL),
                Failure::Exhausted => Verdict::DropFor(PORTS_EXHAUSTED),
            })
    }

    /// What another element (FTPPortMapper) needs to make and read this
    /// rewriter's mappings.
    pub fn map_handle(&self) -> MapHandle {
        MapHandle {
            specs: self.specs.clone(),
            table: self.table.clone(),
            class: self.class,
            ninputs: self.texts.len(),
        }
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
                Some(pf) => self.finish(port, p, pf, pre[i], now, g),
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
            Some(pf) => self.finish(port, p, &pf, None, now, g),
            None => Verdict::DropFor(BAD_PACKET),
        }
    }
}

impl Element for Rewriter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("table", |e, hx| e.table_text(handler_ms(hx))),
        Handler::read("mappings", |e, hx| e.table_text(handler_ms(hx))),
        Handler::read("tcp_table", |e, hx| {
            e.table.format(handler_ms(hx), Some(TCP), false)
        }),
        Handler::read("udp_table", |e, hx| {
            e.table.format(handler_ms(hx), Some(UDP), false)
        }),
        Handler::read_param("tcp_lookup", |e, p, hx| {
            e.lookup_text(TCP, p, handler_ms(hx))
        }),
        Handler::read_param("udp_lookup", |e, p, hx| {
            e.lookup_text(UDP, p, handler_ms(hx))
        }),
        Handler::read_param("lookup", |e, p, hx| {
            let proto = match e.class {
                Class::Ping => ICMP,
                Class::Udp => UDP,
                _ => TCP,
            };
            e.lookup_text(proto, p, handler_ms(hx))
        }),
        Handler::read("nmappings", |e, hx| {
            e.table.flows(handler_ms(hx)).len().to_string()
        }),
        Handler::read("table_size", |e, hx| {
            e.table.flows(handler_ms(hx)).len().to_string()
        }),
        Handler::read("size", |e, _| e.table.nflows().to_string()),
        Handler::read("capacity", |e: &Rewriter, _| e.table.capacity().to_string()).write_with(
            |e, v, hx| {
                let c = v.split_whitespace().next().unwrap_or("");
                e.table.set_capacity(hx.arg(c)?, handler_ms(hx));
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

    /// `pattern0`, `pattern1`, ...: write an input's specification.
    fn dynamic_handlers(&self) -> Vec<DynHandler> {
        (0..self.texts.len())
            .map(|i| DynHandler {
                name: format!("pattern{i}"),
                read: false,
                write: true,
                param: false,
            })
            .collect()
    }

    /// `patternN` (write): replaces input N's specification (any form
    /// the configuration takes); the flows its old one made are removed.
    fn write_dynamic(
        &self,
        name: &str,
        value: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        let i: usize = name.strip_prefix("pattern")?.parse().ok()?;
        let slot = self.specs.get()?.get(i)?;
        Some((|| {
            let env = paraclick_runtime::args::ArgEnv::default();
            let text = parse_spec(value, self.noutputs.max(1), &env)?;
            let (named, mappers) = self.known.get().cloned().unwrap_or_default();
            let spec = self.resolve(value, &text, &named, &mappers)?;
            *slot.write().unwrap_or_else(|e| e.into_inner()) = spec;
            self.table.remove_input(i);
            Ok(())
        })())
    }

    /// Hot reconfiguration: the old element's live mappings (see
    /// [`FlowTable::adopt`]) and its bad-packet count.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        self.table
            .adopt(&old.table, self.noutputs, ms_of(sx.timestamp()));
        self.bad.add(0, old.bad.get());
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // Every named pattern and mapper of the router, for the
        // specifications that name one (now and in `patternN` writes).
        let mut named: Vec<(String, Arc<Pattern>)> = Vec::new();
        let mut mappers: Vec<(String, Arc<MapperCore>)> = Vec::new();
        for i in 0..ix.element_count() {
            if let Some(p) = ix.element::<IPRewriterPatterns>(i) {
                named.extend(p.all());
            }
        }
        for (_, s) in &self.texts {
            if let SpecText::Mapper(n) = s {
                if let Some(m) = ix.find(n).and_then(|i| ix.element::<Mapper>(i)) {
                    mappers.push((n.clone(), m.core()));
                }
            }
        }
        let mut out = Vec::new();
        let mut errs = Vec::new();
        for (i, (text, s)) in self.texts.iter().enumerate() {
            match self.resolve(text, s, &named, &mappers) {
                Ok(sp) => out.push(RwLock::new(sp)),
                Err(e) => errs.push(format!("input spec {i}: {e}")),
            }
        }
        // MAPPING_CAPACITY naming a rewriter: share its flow set (the
        // set of the first rewriter down the chain with a number).
        let mut set: Option<Arc<FlowSet>> = None;
        if let Some(first) = &self.capacity_from {
            let mut name = first.clone();
            for _ in 0..ix.element_count() + 1 {
                let Some(rw) = ix.find(&name).and_then(|i| ix.element::<Rewriter>(i)) else {
                    errs.push(format!(
                        "MAPPING_CAPACITY: '{name}' is not a rewriter element"
                    ));
                    break;
                };
                match &rw.capacity_from {
                    Some(n) if !std::ptr::eq(rw, self) => name = n.clone(),
                    Some(_) => {
                        errs.push("MAPPING_CAPACITY: the rewriters name each other".into());
                        break;
                    }
                    None => {
                        set = Some(rw.table.own_set().clone());
                        break;
                    }
                }
            }
        }
        if !errs.is_empty() {
            return Err(errs.join("\n"));
        }
        self.table.join(set);
        let _ = self.specs.set(out);
        let _ = self.known.set((named, mappers));
        ix.schedule_after(0, self.reap);
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let g = self.table.guard();
        self.table.reap(clock_ms(cx), &g);
        cx.schedule_after(0, self.reap);
    }

    /// One table guard and one clock reading per batch; runs of up to
    /// `RUN` packets are looked up together (see `handle_run`), a lone
    /// packet directly. The batch moves on whole while every packet goes
    /// the same way; otherwise it is cut where the output changes and the
    /// pieces are pushed in arrival order (as Click, one packet at a
    /// time, would send them), drops counted for their reasons.
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
            let now = clock_ms(cx);
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
        self.push_in_order(cx, batch, verdicts);
    }
}

impl Rewriter {
    /// Pushes a batch whose packets go different ways: consecutive packets
    /// to one output as one batch, in arrival order.
    #[cold]
    #[inline(never)]
    fn push_in_order(&self, cx: &mut Cx<'_>, batch: Batch, verdicts: &[u16]) {
        let mut run = Batch::new();
        let mut run_out = u16::MAX;
        for (p, &v) in batch.into_iter().zip(verdicts.iter()) {
            if v >= DROP || usize::from(v) >= self.noutputs.max(1) {
                drop_coded(cx, v, p);
                continue;
            }
            if v != run_out && !run.is_empty() {
                cx.push(usize::from(run_out), std::mem::take(&mut run));
            }
            run_out = v;
            run.push(p);
        }
        if !run.is_empty() {
            cx.push(usize::from(run_out), run);
        }
    }
}
