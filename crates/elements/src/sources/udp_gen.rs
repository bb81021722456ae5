//! The engine behind FastUDPSource and FastUDPFlows: Ethernet/IPv4/UDP
//! frames built once at configure time, flows that differ only in their
//! UDP ports, and per packet nothing but a copy of the template and an
//! 8-byte UDP header patch (ports and a checksum updated incrementally
//! when the ports change, not per packet).

use super::gen::{nonnegative_rate, set_active, Limit, Pacer, MAX_BURST};
use crate::util::fmt_rate;
use paraclick_packet::wire::{
    ethertype, ip_proto, EtherAddr, EthernetFrame, EthernetRepr, Ipv4Header, Ipv4Repr, UdpHeader,
    UdpRepr,
};
use paraclick_packet::Packet;
use paraclick_runtime::{Batch, Cx, Element, Handler, InitCx, PerThread, PerThreadCount};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Offset of the IPv4 header in the frame.
pub const IP_OFF: usize = 14;
/// Offset of the UDP header in the frame.
pub const UDP_OFF: usize = 34;
/// Smallest frame (Ethernet's minimum without FCS).
pub const MIN_LEN: usize = 60;
/// Largest frame: an IPv4 datagram of 65535 bytes behind the Ethernet header.
pub const MAX_LEN: usize = 65535 + IP_OFF;
/// TTL of the generated packets.
pub const TTL: u8 = 64;

/// What the frames look like.
#[derive(Clone, Copy, Debug)]
pub struct FrameSpec {
    /// Frame length including the Ethernet header (clamped to 60..).
    pub len: usize,
    pub src_eth: EtherAddr,
    pub dst_eth: EtherAddr,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    /// Whether UDP checksums are computed (otherwise they are 0: none).
    pub checksum: bool,
}

/// Builds the frame of `spec` with UDP ports 0 and 0 and a zero payload:
/// Ethernet, a 20-byte IPv4 header (TTL 64, ID 0) with its checksum, and
/// a UDP header whose checksum is right for ports 0 and 0.
pub fn build_template(spec: &FrameSpec) -> Result<Vec<u8>, String> {
    let len = spec.len.max(MIN_LEN);
    if len > MAX_LEN {
        return Err(format!("LENGTH {len} too large (max {MAX_LEN})"));
    }
    let mut f = vec![0u8; len];
    EthernetRepr {
        src_addr: spec.src_eth,
        dst_addr: spec.dst_eth,
        ethertype: ethertype::IPV4,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let udp_len = len - UDP_OFF;
    Ipv4Repr {
        src_addr: spec.src_ip,
        dst_addr: spec.dst_ip,
        protocol: ip_proto::UDP,
        payload_len: udp_len,
        ttl: TTL,
        tos: 0,
        ident: 0,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Header::new_unchecked(&mut f[IP_OFF..]));
    let mut udp = UdpHeader::new_unchecked(&mut f[UDP_OFF..]);
    UdpRepr {
        src_port: 0,
        dst_port: 0,
        payload_len: udp_len - 8,
    }
    .emit(&mut udp);
    if spec.checksum {
        udp.fill_checksum(spec.src_ip, spec.dst_ip);
    }
    Ok(f)
}

/// The UDP header of flow `(sport, dport)`, derived from the template's
/// (ports 0 and 0) by incremental checksum updates.
pub fn flow_header(template: &[u8], sport: u16, dport: u16) -> [u8; 8] {
    let mut h = [0u8; 8];
    h.copy_from_slice(&template[UDP_OFF..UDP_OFF + 8]);
    let mut v = UdpHeader::new_unchecked(&mut h[..]);
    v.update_src_port(sport);
    v.update_dst_port(dport);
    h
}

fn header_ports(h: &[u8; 8]) -> (u16, u16) {
    (
        u16::from_be_bytes([h[0], h[1]]),
        u16::from_be_bytes([h[2], h[3]]),
    )
}

/// How a flow's ports change once it has sent its FLOWSIZE packets.
/// Writes the TCP header of a flow's `k`th packet (1-based) of `size`
/// into the frame `f`: a SYN first, a FIN (with ACK) last, ACK data
/// segments between; sequence numbers count from 0, each data segment
/// carrying the frame's payload; then the full TCP checksum.
fn write_tcp(f: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, sp: u16, dp: u16, k: u64, size: u64) {
    use paraclick_packet::wire::checksum;
    let seg = &mut f[UDP_OFF..];
    let plen = seg.len().saturating_sub(20) as u64;
    let (flags, seq) = if k == 1 {
        (0x002u16, 0)
    } else if k >= size {
        (0x011, 1 + (size - 2) * plen)
    } else {
        (0x010, 1 + (k - 2) * plen)
    };
    seg[0..2].copy_from_slice(&sp.to_be_bytes());
    seg[2..4].copy_from_slice(&dp.to_be_bytes());
    seg[4..8].copy_from_slice(&(seq as u32).to_be_bytes());
    let ack: u32 = if k == 1 { 0 } else { 1 };
    seg[8..12].copy_from_slice(&ack.to_be_bytes());
    seg[12] = 5 << 4;
    seg[13] = flags as u8;
    seg[14..16].copy_from_slice(&65535u16.to_be_bytes());
    seg[16..20].fill(0);
    let s = checksum::add(
        checksum::pseudo_header_sum(src, dst, ip_proto::TCP, seg.len() as u16),
        checksum::sum(seg),
    );
    seg[16..18].copy_from_slice(&(!s).to_be_bytes());
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortStep {
    /// Both ports go up by one (FastUDPSource's INTERVAL).
    Increment,
    /// Both ports are drawn afresh (FastUDPFlows).
    Random,
}

/// A small deterministic generator (splitmix64) for port numbers.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A port in 1..=65535.
    pub fn port(&mut self) -> u16 {
        (self.next_u64() % 65535) as u16 + 1
    }
}

#[derive(Clone, Debug)]
struct Slot {
    /// The flow's UDP header, ready to copy into a frame.
    hdr: [u8; 8],
    /// Packets sent since the ports last changed.
    sent: u64,
}

/// One thread's flows and where it is in their rotation.
#[derive(Clone, Debug)]
struct Flows {
    next: usize,
    slots: Box<[Slot]>,
    rng: Rng,
}

/// Seed of the port generator; each thread's is derived from it.
const SEED: u64 = 0x5eed_f10e_5eed_f10e;

/// The shared source engine.
pub struct UdpGen {
    /// Its thread's pool dry: wait, then drop as `no buffer`.
    dry: super::gen::DryPool,
    template: Box<[u8]>,
    dst_ip: Ipv4Addr,
    /// FastTCPFlows: the source address for TCP checksums, when TCP.
    tcp_src: Option<Ipv4Addr>,
    flows: PerThread<Flows>,
    /// Packets per flow before its ports change (0: never).
    flowsize: u64,
    step: PortStep,
    /// RATE in packets per second (0: as fast as possible), as f64 bits.
    rate: AtomicU64,
    pacer: Pacer,
    limit: Limit,
    active: AtomicBool,
    push: bool,
    count: PerThreadCount,
    epoch: Instant,
    /// Nanoseconds since `epoch` (+1; 0: unset) of the first packet and of
    /// the LIMITth, for the measured rate.
    first: AtomicU64,
    last: AtomicU64,
}

/// How to make a [`UdpGen`].
pub struct UdpGenConfig {
    pub frame: FrameSpec,
    /// Initial (sport, dport) of each flow.
    pub ports: Vec<(u16, u16)>,
    pub flowsize: u64,
    pub step: PortStep,
    pub rate: f64,
    pub limit: i64,
    pub active: bool,
    pub stop: bool,
    pub push: bool,
    pub nthreads: usize,
    /// FastTCPFlows: TCP segments (SYN, data, FIN per flow) in place of UDP.
    pub tcp: bool,
}

/// Initial ports of FastUDPFlows' flows: drawn from the generator.
pub fn random_ports(n: usize) -> Vec<(u16, u16)> {
    let mut rng = Rng::new(SEED);
    (0..n).map(|_| (rng.port(), rng.port())).collect()
}

impl UdpGen {
    pub fn new(c: UdpGenConfig) -> Result<UdpGen, String> {
        if c.ports.is_empty() {
            return Err("FLOWS must be at least 1".into());
        }
        if c.rate.is_nan() || c.rate < 0.0 || !c.rate.is_finite() {
            return Err(format!("RATE must be a nonnegative number, not {}", c.rate));
        }
        let mut template = build_template(&c.frame)?;
        if c.tcp {
            if c.flowsize < 3 {
                return Err("FLOWSIZE must be at least 3 (a SYN, data and a FIN)".into());
            }
            template[IP_OFF + 9] = ip_proto::TCP;
            Ipv4Header::new_unchecked(&mut template[IP_OFF..]).fill_checksum();
            template[UDP_OFF..].fill(0);
        }
        let slots: Box<[Slot]> = c
            .ports
            .iter()
            .map(|&(s, d)| Slot {
                hdr: flow_header(&template, s, d),
                sent: 0,
            })
            .collect();
        let flows = PerThread::new(c.nthreads, |t| Flows {
            // Threads start their rotations apart and draw different ports.
            next: t % slots.len(),
            slots: slots.clone(),
            rng: Rng::new(SEED ^ (t as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f)),
        });
        let pacer = if c.rate == 0.0 {
            Pacer::unpaced()
        } else {
            Pacer::new(c.rate)
        };
        Ok(UdpGen {
            dry: super::gen::DryPool::default(),
            template: template.into_boxed_slice(),
            dst_ip: c.frame.dst_ip,
            tcp_src: c.tcp.then_some(c.frame.src_ip),
            flows,
            flowsize: c.flowsize,
            step: c.step,
            rate: AtomicU64::new(c.rate.to_bits()),
            pacer,
            limit: Limit::new(c.limit, c.stop, None)?,
            active: AtomicBool::new(c.active),
            push: c.push,
            count: PerThreadCount::new(c.nthreads),
            epoch: Instant::now(),
            first: AtomicU64::new(0),
            last: AtomicU64::new(0),
        })
    }

    /// Makes up to `n` frames on this thread's flows.
    fn make(&self, cx: &mut Cx<'_>, n: usize) -> Batch {
        let mut b = Batch::new();
        let Flows { next, slots, rng } = self.flows.get(cx);
        let nflows = slots.len();
        for _ in 0..n {
            let Some(mut p) = Packet::from_slice(&self.template) else {
                break; // pool exhausted: send fewer now
            };
            let slot = &mut slots[*next];
            *next += 1;
            if *next == nflows {
                *next = 0;
            }
            if slot.sent == self.flowsize && self.flowsize != 0 {
                let (s, d) = match self.step {
                    PortStep::Increment => {
                        let (s, d) = header_ports(&slot.hdr);
                        (s.wrapping_add(1), d.wrapping_add(1))
                    }
                    PortStep::Random => (rng.port(), rng.port()),
                };
                let mut v = UdpHeader::new_unchecked(&mut slot.hdr[..]);
                v.update_src_port(s);
                v.update_dst_port(d);
                slot.sent = 0;
            }
            slot.sent += 1;
            match self.tcp_src {
                None => p.data_mut()[UDP_OFF..UDP_OFF + 8].copy_from_slice(&slot.hdr),
                Some(src) => {
                    let (sp, dp) = header_ports(&slot.hdr);
                    write_tcp(
                        p.data_mut(),
                        src,
                        self.dst_ip,
                        sp,
                        dp,
                        slot.sent,
                        self.flowsize,
                    );
                }
            }
            p.set_mac_header(0);
            p.set_network_header(IP_OFF, UDP_OFF - IP_OFF);
            p.anno_mut().dst_ip = self.dst_ip;
            b.push(p);
        }
        b
    }

    fn produce(&self, cx: &mut Cx<'_>, want: usize) -> Option<Batch> {
        if !self.active.load(Ordering::Relaxed) {
            cx.wake_when_written();
            return None;
        }
        if self.limit.exhausted() {
            self.limit.finish(cx);
            cx.wake_when_written();
            return None;
        }
        let now = (!self.pacer.is_unpaced() || self.limit.is_limited()).then(|| cx.now());
        let due = match now {
            Some(now) => self.pacer.take(now, want),
            None => want,
        };
        if due == 0 {
            match self.pacer.next_due() {
                Some(t) => cx.wake_at(t),
                None => cx.wake_when_written(),
            }
            return None;
        }
        let n = self.limit.claim(due);
        if n == 0 {
            return None;
        }
        let thread = cx.thread();
        let b = self.make(cx, n);
        if b.len() < n && !self.dry.short(cx, n - b.len(), 0) {
            self.limit.unclaim(n - b.len());
        }
        self.count.add(thread, b.len() as u64);
        if let Some(now) = now.filter(|_| self.limit.is_limited()) {
            let ns = now.saturating_duration_since(self.epoch).as_nanos() as u64 + 1;
            let _ = self
                .first
                .compare_exchange(0, ns, Ordering::Relaxed, Ordering::Relaxed);
            if self.limit.exhausted() {
                self.last.store(ns, Ordering::Relaxed);
            }
        }
        (!b.is_empty()).then_some(b)
    }

    fn reset(&self) {
        self.count.reset();
        self.limit.reset();
        self.pacer.restart();
        self.first.store(0, Ordering::Relaxed);
        self.last.store(0, Ordering::Relaxed);
    }

    /// The `rate` handler: the average rate between the first and the
    /// LIMITth packet once LIMIT packets have gone out, RATE before.
    fn rate_text(&self) -> String {
        let (first, last) = (
            self.first.load(Ordering::Relaxed),
            self.last.load(Ordering::Relaxed),
        );
        if last != 0 {
            // As Click, at least one clock tick (here 1 µs) between them.
            let secs = last.saturating_sub(first).max(1000) as f64 / 1e9;
            return format!("{}", (self.count.get() as f64 / secs) as u64);
        }
        fmt_rate(f64::from_bits(self.rate.load(Ordering::Relaxed)))
    }
}

impl Element for UdpGen {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::rw(
            "rate",
            |e, _| e.rate_text(),
            |e, v, hx| {
                let r = nonnegative_rate(hx.arg(v)?)?;
                e.rate.store(r.to_bits(), Ordering::Relaxed);
                if r == 0.0 {
                    e.pacer.set_unpaced();
                } else {
                    e.pacer.set_rate(r, hx.now());
                }
                Ok(())
            },
        ),
        Handler::write("reset", |e, _, _| {
            e.reset();
            Ok(())
        }),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                set_active(&e.active, &e.pacer, hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "limit",
            |e, _| e.limit.get().to_string(),
            |e, v, hx| {
                e.limit.set(hx.arg(v)?)?;
                Ok(())
            },
        ),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.push {
            let t = ix.add_task();
            ix.wait_for_room(t);
        }
        Ok(())
    }

    #[inline]
    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        match self.produce(cx, MAX_BURST) {
            Some(b) => {
                cx.push(0, b);
                true
            }
            None => false,
        }
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        self.produce(cx, max.max(1))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use paraclick_packet::wire::checksum;
    use paraclick_runtime::testing::assert_err;

    fn spec(len: usize, checksum: bool) -> FrameSpec {
        FrameSpec {
            len,
            src_eth: EtherAddr([0, 1, 2, 3, 4, 5]),
            dst_eth: EtherAddr([6, 7, 8, 9, 10, 11]),
            src_ip: Ipv4Addr::new(1, 0, 0, 1),
            dst_ip: Ipv4Addr::new(2, 0, 0, 2),
            checksum,
        }
    }

    /// Checks a whole frame as a receiver would, from scratch.
    pub fn check_frame(f: &[u8], len: usize, sport: u16, dport: u16, cksum: bool) {
        assert_eq!(f.len(), len);
        assert_eq!(&f[0..6], &[6, 7, 8, 9, 10, 11]);
        assert_eq!(&f[6..12], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        let ip = Ipv4Header::new_checked(&f[IP_OFF..]).unwrap();
        ip.validate().unwrap();
        assert_eq!(usize::from(ip.total_len()), len - 14);
        assert_eq!(ip.ttl(), TTL);
        assert_eq!(ip.protocol(), 17);
        assert!(checksum::verify(&f[IP_OFF..UDP_OFF]));
        let udp = UdpHeader::new_checked(&f[UDP_OFF..]).unwrap();
        assert_eq!(udp.src_port(), sport);
        assert_eq!(udp.dst_port(), dport);
        assert_eq!(usize::from(udp.len()), len - UDP_OFF);
        if cksum {
            assert_ne!(udp.checksum(), 0);
            // Full recomputation: pseudo-header + UDP header + payload.
            let s = checksum::add(
                checksum::pseudo_header_sum(ip.src_addr(), ip.dst_addr(), 17, udp.len()),
                checksum::sum(&f[UDP_OFF..]),
            );
            assert_eq!(s, 0xffff, "bad UDP checksum for {sport}->{dport}");
        } else {
            assert_eq!(udp.checksum(), 0);
        }
    }

    #[test]
    fn template_is_a_valid_frame() {
        for len in [10, 60, 61, 100, 1514, 9000] {
            let t = build_template(&spec(len, true)).unwrap();
            check_frame(&t, len.max(60), 0, 0, true);
        }
        let t = build_template(&spec(60, false)).unwrap();
        check_frame(&t, 60, 0, 0, false);
        assert_err(
            build_template(&spec(MAX_LEN + 1, true)),
            "LENGTH 65550 too large (max 65549)",
        );
    }

    /// Incrementally derived headers equal full recomputations, for many
    /// ports (including those whose checksum folds to zero).
    #[test]
    fn flow_headers_match_full_checksums() {
        for len in [60, 61, 333] {
            let t = build_template(&spec(len, true)).unwrap();
            let mut rng = Rng::new(9);
            let mut ports: Vec<(u16, u16)> = (0..2000).map(|_| (rng.port(), rng.port())).collect();
            ports.extend([(0, 0), (65535, 65535), (1, 0), (0xffff, 0)]);
            for (s, d) in ports {
                let mut f = t.clone();
                f[UDP_OFF..UDP_OFF + 8].copy_from_slice(&flow_header(&t, s, d));
                check_frame(&f, len, s, d, true);
            }
            let t = build_template(&spec(len, false)).unwrap();
            let mut f = t.clone();
            f[UDP_OFF..UDP_OFF + 8].copy_from_slice(&flow_header(&t, 7, 9));
            check_frame(&f, len, 7, 9, false);
        }
    }

    #[test]
    fn rng_ports_are_spread_and_nonzero() {
        let mut r = Rng::new(1);
        let ps: Vec<u16> = (0..10_000).map(|_| r.port()).collect();
        assert!(ps.iter().all(|&p| p != 0));
        let distinct: std::collections::HashSet<_> = ps.iter().collect();
        assert!(distinct.len() > 9000);
        assert_eq!(random_ports(3), random_ports(3));
    }
}
