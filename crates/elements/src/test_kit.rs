//! The tests' one kit: the registry, the harness that wires an element
//! between the test and sinks, whole routers built, run and read (from
//! [`paraclick_runtime::testing`]), packet builders on the `wire` module's
//! emitters, and one seeded random generator (on `fastrand`).
//!
//! Element tests use it directly (`use crate::test_kit::*`). Whatever
//! more than one folder could use lives here: the IPv4 and IPv6 builders,
//! ICMP messages, tagged and timestamped packets. A folder keeps a
//! `test_util` only for rigs its own elements alone need (the
//! schedulers' queue-fed router, the QoS pull rig, the IP filter
//! language's compiler); it does not re-export this kit. Other crates'
//! tests (paraclick-io) use it through the `test-kit` feature.

#![allow(dead_code)] // not every test uses every helper

use paraclick_packet::wire::ipv6::upper_layer_checksum;
use paraclick_packet::wire::{
    checksum, ethertype, ip_proto, ArpPacket, ArpRepr, EtherAddr, EthernetFrame, EthernetRepr,
    Ipv4Header,
};
use paraclick_packet::{Batch, Packet, Timestamp};
pub use paraclick_runtime::testing::{
    assert_err, build, build_err, build_simtime, build_with, handler, run, run_until, sink,
    try_build, with_test_classes, Harness, TestSink, TestSource,
};
use paraclick_runtime::{Registry, Router};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// Every element class of this crate, plus the test source and sinks.
pub fn reg() -> Registry {
    with_test_classes(&crate::registry())
}

/// A path quoted for a configuration argument.
pub fn q(p: &Path) -> String {
    format!("\"{}\"", p.display())
}

/// A timestamp from seconds and nanoseconds.
pub fn ts(sec: i64, nsec: u32) -> Timestamp {
    Timestamp::from_parts(sec, nsec)
}

/// A millisecond in nanoseconds.
pub const MS: i64 = 1_000_000;

/// Nanoseconds from the start of simulated time to each packet's
/// timestamp.
pub fn sim_ns(ps: &[Packet]) -> Vec<i64> {
    let start = paraclick_runtime::time::SIM_START_SEC * 1_000_000_000;
    ps.iter().map(|p| p.timestamp().0 - start).collect()
}

/// The packets that reached TestSink `name` (taken), as whole
/// milliseconds from the start of simulated time to their timestamps.
pub fn sink_ms(r: &Router, name: &str) -> Vec<i64> {
    sim_ns(&sink(r, name))
        .into_iter()
        .map(|ns| ns / MS)
        .collect()
}

/// One timing-sensitive router at a time in this test binary: a test that
/// bounds a rate or a time with several threads in real time holds it, so
/// that two such tests never share the machine's cores (the same lock as
/// `one_at_a_time` in paraclick's tests/common). A test that panicked
/// holding it does not poison it.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The element under test (`e :: decl`) with `ninputs` inputs fed by the
/// test and `noutputs` outputs into `TestSink`s `o0`, `o1`, ...; extra
/// configuration may follow `decl` after a `;`.
pub fn try_harness_io(decl: &str, ninputs: usize, noutputs: usize) -> Result<Harness, String> {
    Harness::with_inputs(&reg(), decl, ninputs, noutputs)
}

/// [`try_harness_io`] with one input.
pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    try_harness_io(decl, 1, noutputs)
}

pub fn harness_io(decl: &str, ninputs: usize, noutputs: usize) -> Harness {
    try_harness_io(decl, ninputs, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    harness_io(decl, 1, noutputs)
}

/// A source under test: no inputs, `noutputs` outputs into sinks.
pub fn try_source(decl: &str, noutputs: usize) -> Result<Harness, String> {
    try_harness_io(decl, 0, noutputs)
}

pub fn source(decl: &str, noutputs: usize) -> Harness {
    try_source(decl, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

pub fn pkt(data: &[u8]) -> Packet {
    Packet::from_slice(data).expect("packet")
}

/// A packet whose IP header starts at byte 0 and is marked (as
/// MarkIPHeader would: header length from the IHL field).
pub fn marked(data: &[u8]) -> Packet {
    let mut p = pkt(data);
    let hlen = data.first().map_or(0, |b| usize::from(b & 0x0f) * 4);
    p.set_network_header(0, hlen);
    p
}

/// The first byte of each packet (tests tag packets that way).
pub fn tags(ps: &[Packet]) -> Vec<u8> {
    ps.iter()
        .map(|p| p.data().first().copied().unwrap_or(0))
        .collect()
}

pub fn ip(s: &str) -> Ipv4Addr {
    s.parse().expect("IPv4 address")
}

pub fn a6(s: &str) -> Ipv6Addr {
    s.parse().expect("IPv6 address")
}

pub fn eth(s: &str) -> EtherAddr {
    s.parse().expect("Ethernet address")
}

/// An Ethernet header followed by `payload`.
pub fn ether_frame(dst: EtherAddr, src: EtherAddr, ty: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; 14 + payload.len()];
    let mut f = EthernetFrame::new_unchecked(&mut v[..]);
    EthernetRepr {
        dst_addr: dst,
        src_addr: src,
        ethertype: ty,
    }
    .emit(&mut f);
    v[14..].copy_from_slice(payload);
    v
}

/// An ARP packet (28 bytes, no Ethernet header).
pub fn arp_bytes(r: &ArpRepr) -> Vec<u8> {
    let mut v = vec![0u8; 28];
    r.emit(&mut ArpPacket::new_unchecked(&mut v[..]));
    v
}

/// An Ethernet frame carrying an ARP packet (42 bytes).
pub fn arp_frame(dst: EtherAddr, src: EtherAddr, r: &ArpRepr) -> Vec<u8> {
    ether_frame(dst, src, ethertype::ARP, &arp_bytes(r))
}

/// An option-less IPv4 datagram with `payload` ([`Ip`]'s defaults: TTL
/// 64, ID 0x1234, no flags).
pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Vec<u8> {
    Ip::from_addrs(src, dst, proto).payload(payload).bytes()
}

/// [`ipv4`]'s datagram as a packet, its network header annotation set.
pub fn ip_pkt(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Packet {
    let mut p = pkt(&ipv4(src, dst, proto, payload));
    p.set_network_header(0, 20);
    p
}

/// An IPv4 datagram under construction.
#[derive(Clone, Debug)]
pub struct Ip {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub proto: u8,
    pub ttl: u8,
    pub tos: u8,
    pub id: u16,
    /// Flags and fragment offset, as the 16-bit field.
    pub frag: u16,
    pub options: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Ip {
    pub fn new(src: &str, dst: &str, proto: u8) -> Ip {
        Ip::from_addrs(ip(src), ip(dst), proto)
    }

    pub fn from_addrs(src: Ipv4Addr, dst: Ipv4Addr, proto: u8) -> Ip {
        Ip {
            src,
            dst,
            proto,
            ttl: 64,
            tos: 0,
            id: 0x1234,
            frag: 0,
            options: Vec::new(),
            payload: Vec::new(),
        }
    }

    pub fn ttl(mut self, ttl: u8) -> Ip {
        self.ttl = ttl;
        self
    }

    pub fn tos(mut self, tos: u8) -> Ip {
        self.tos = tos;
        self
    }

    pub fn id(mut self, id: u16) -> Ip {
        self.id = id;
        self
    }

    pub fn frag(mut self, frag: u16) -> Ip {
        self.frag = frag;
        self
    }

    /// Options, padded with EOL bytes to a multiple of 4.
    pub fn options(mut self, o: &[u8]) -> Ip {
        self.options = o.to_vec();
        while !self.options.len().is_multiple_of(4) {
            self.options.push(0);
        }
        self
    }

    pub fn payload(mut self, d: &[u8]) -> Ip {
        self.payload = d.to_vec();
        self
    }

    /// A UDP payload (with a correct checksum for this datagram's
    /// addresses).
    pub fn udp(self, sport: u16, dport: u16, data: &[u8]) -> Ip {
        let seg = udp_segment(self.src, self.dst, sport, dport, data);
        Ip {
            proto: ip_proto::UDP,
            ..self
        }
        .payload(&seg)
    }

    /// A TCP payload (20-byte header, correct checksum).
    pub fn tcp(self, sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, win: u16) -> Ip {
        self.tcp_full(sport, dport, seq, ack, flags, win, &[], &[])
    }

    #[allow(clippy::too_many_arguments)]
    pub fn tcp_full(
        self,
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        win: u16,
        opts: &[u8],
        data: &[u8],
    ) -> Ip {
        let seg = tcp_segment(
            self.src, self.dst, sport, dport, seq, ack, flags, win, opts, data,
        );
        Ip {
            proto: ip_proto::TCP,
            ..self
        }
        .payload(&seg)
    }

    /// An ICMP payload: type, code, the 4 bytes after the checksum, data.
    pub fn icmp(self, ty: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Ip {
        let m = icmp(ty, code, rest, data);
        Ip {
            proto: ip_proto::ICMP,
            ..self
        }
        .payload(&m)
    }

    pub fn hlen(&self) -> usize {
        20 + self.options.len()
    }

    /// The datagram, written through the wire module's IPv4 header view,
    /// with a correct header checksum.
    pub fn bytes(&self) -> Vec<u8> {
        let hlen = self.hlen();
        assert!(hlen <= 60 && hlen.is_multiple_of(4));
        let total = hlen + self.payload.len();
        let mut v = vec![0u8; total];
        {
            let mut h = Ipv4Header::new_unchecked(&mut v[..]);
            h.set_version(4);
            h.set_header_len(hlen);
            h.set_tos(self.tos);
            h.set_total_len(total as u16);
            h.set_ident(self.id);
            h.set_ttl(self.ttl);
            h.set_protocol(self.proto);
            h.set_src_addr(self.src);
            h.set_dst_addr(self.dst);
        }
        v[6..8].copy_from_slice(&self.frag.to_be_bytes());
        v[20..hlen].copy_from_slice(&self.options);
        v[hlen..].copy_from_slice(&self.payload);
        Ipv4Header::new_unchecked(&mut v[..hlen]).fill_checksum();
        v
    }
}

pub fn udp_segment(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let len = 8 + data.len();
    let mut s = Vec::with_capacity(len);
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&(len as u16).to_be_bytes());
    s.extend_from_slice(&[0, 0]);
    s.extend_from_slice(data);
    let c = transport_checksum(src, dst, ip_proto::UDP, &s);
    let c = if c == 0 { 0xffff } else { c };
    s[6..8].copy_from_slice(&c.to_be_bytes());
    s
}

#[allow(clippy::too_many_arguments)]
pub fn tcp_segment(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    win: u16,
    opts: &[u8],
    data: &[u8],
) -> Vec<u8> {
    assert!(opts.len().is_multiple_of(4));
    let hlen = 20 + opts.len();
    let mut s = Vec::new();
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&seq.to_be_bytes());
    s.extend_from_slice(&ack.to_be_bytes());
    s.push(((hlen / 4) as u8) << 4);
    s.push(flags);
    s.extend_from_slice(&win.to_be_bytes());
    s.extend_from_slice(&[0, 0, 0, 0]);
    s.extend_from_slice(opts);
    s.extend_from_slice(data);
    let c = transport_checksum(src, dst, ip_proto::TCP, &s);
    s[16..18].copy_from_slice(&c.to_be_bytes());
    s
}

/// The checksum of a transport segment (its checksum field zero or not:
/// the result is what the field should hold).
pub fn transport_checksum(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, seg: &[u8]) -> u16 {
    let mut v = Vec::new();
    v.extend_from_slice(&src.octets());
    v.extend_from_slice(&dst.octets());
    v.push(0);
    v.push(proto);
    v.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    v.extend_from_slice(seg);
    let at = if proto == ip_proto::TCP {
        12 + 16
    } else {
        12 + 6
    };
    v[at] = 0;
    v[at + 1] = 0;
    checksum::checksum(&v)
}

/// The IP header checksum `h` (a whole header) should carry.
pub fn ip_header_checksum(h: &[u8]) -> u16 {
    let mut v = h.to_vec();
    v[10] = 0;
    v[11] = 0;
    checksum::checksum(&v)
}

/// True if the header at the start of `d` has a correct checksum.
pub fn ip_checksum_ok(d: &[u8]) -> bool {
    let hlen = usize::from(d[0] & 0x0f) * 4;
    checksum::verify(&d[..hlen])
}

/// An ICMP message (checksum filled): type, code, the 4 bytes after the
/// checksum, and a body.
pub fn icmp(ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut v = vec![ty, code, 0, 0];
    v.extend(rest);
    v.extend(body);
    let c = checksum::checksum(&v);
    v[2..4].copy_from_slice(&c.to_be_bytes());
    v
}

/// The bytes of an IPv4 datagram, positionally: header (with `options`,
/// padded to a multiple of 4 with EOL), then `payload`; valid checksum
/// ([`Ip`] with these fields).
pub fn ip_bytes(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    ident: u16,
    df: bool,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    Ip::from_addrs(src, dst, proto)
        .id(ident)
        .frag(if df { 0x4000 } else { 0 })
        .options(options)
        .payload(payload)
        .bytes()
}

/// A packet of `bytes` (an IPv4 datagram) with `mac` bytes of link header
/// in front, the link header (if any) and the network header marked.
pub fn ip_packet(mac: &[u8], bytes: &[u8]) -> Packet {
    let mut all = mac.to_vec();
    all.extend_from_slice(bytes);
    let mut p = pkt(&all);
    let hlen = usize::from(bytes[0] & 0x0f) * 4;
    if !mac.is_empty() {
        p.set_mac_header(0);
    }
    p.set_network_header(mac.len(), hlen);
    p
}

/// A UDP-ish datagram (12 zero bytes) from 1.0.0.1 to `dst`, marked.
pub fn packet_to(dst: &str) -> Packet {
    ip_packet(
        &[],
        &ip_bytes(ip("1.0.0.1"), ip(dst), 17, 1, false, &[], &[0u8; 12]),
    )
}

/// The network-header view of a packet.
pub fn header(p: &Packet) -> Ipv4Header<&[u8]> {
    Ipv4Header::new_checked(p.network_header().expect("network header")).expect("IPv4 header")
}

/// `n` packets of `len` bytes, the first byte of packet k being k.
pub fn pkts(n: usize, len: usize) -> Vec<Packet> {
    (0..n).map(|k| tagged(k as u8, len)).collect()
}

/// A packet of `len` bytes whose first byte is `tag`.
pub fn tagged(tag: u8, len: usize) -> Packet {
    let mut d = vec![0u8; len.max(1)];
    d[0] = tag;
    pkt(&d)
}

/// A one-byte packet `tag` with timestamp `ts` seconds.
pub fn at(tag: u8, ts: f64) -> Packet {
    let mut p = pkt(&[tag]);
    p.set_timestamp(Timestamp((ts * 1e9).round() as i64));
    p
}

/// Pushes `ps` into input 0 of element `elem` (not while `r` runs).
pub fn fill(r: &Router, elem: &str, ps: Vec<Packet>) {
    r.push_into(elem, 0, Batch::from(ps))
        .unwrap_or_else(|e| panic!("{elem}: {e}"));
}

/// An IPv6 datagram under construction.
#[derive(Clone, Debug)]
pub struct Ip6 {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub nh: u8,
    pub hlim: u8,
    pub class: u8,
    pub flow: u32,
    pub payload: Vec<u8>,
}

impl Ip6 {
    pub fn new(src: &str, dst: &str, nh: u8) -> Ip6 {
        Ip6 {
            src: a6(src),
            dst: a6(dst),
            nh,
            hlim: 64,
            class: 0,
            flow: 0,
            payload: Vec::new(),
        }
    }

    pub fn hlim(mut self, h: u8) -> Ip6 {
        self.hlim = h;
        self
    }

    pub fn payload(mut self, d: &[u8]) -> Ip6 {
        self.payload = d.to_vec();
        self
    }

    /// A UDP payload with a correct checksum.
    pub fn udp(mut self, sport: u16, dport: u16, data: &[u8]) -> Ip6 {
        let mut seg = Vec::new();
        seg.extend_from_slice(&sport.to_be_bytes());
        seg.extend_from_slice(&dport.to_be_bytes());
        seg.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        seg.extend_from_slice(&[0, 0]);
        seg.extend_from_slice(data);
        let c = upper_layer_checksum(&self.src, &self.dst, 17, &seg);
        seg[6..8].copy_from_slice(&c.to_be_bytes());
        self.nh = 17;
        self.payload = seg;
        self
    }

    /// An ICMPv6 payload with a correct checksum.
    pub fn icmp6(mut self, ty: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Ip6 {
        let mut m = vec![ty, code, 0, 0];
        m.extend_from_slice(&rest);
        m.extend_from_slice(data);
        let c = upper_layer_checksum(&self.src, &self.dst, 58, &m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        self.nh = 58;
        self.payload = m;
        self
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40 + self.payload.len());
        let w0 = (6u32 << 28) | (u32::from(self.class) << 20) | (self.flow & 0xf_ffff);
        v.extend_from_slice(&w0.to_be_bytes());
        v.extend_from_slice(&(self.payload.len() as u16).to_be_bytes());
        v.push(self.nh);
        v.push(self.hlim);
        v.extend_from_slice(&self.src.octets());
        v.extend_from_slice(&self.dst.octets());
        v.extend_from_slice(&self.payload);
        v
    }

    /// The datagram behind an Ethernet header.
    pub fn ether(&self, dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut v = dst.to_vec();
        v.extend_from_slice(&src);
        v.extend_from_slice(&[0x86, 0xdd]);
        v.extend_from_slice(&self.bytes());
        v
    }
}

/// True if the ICMPv6/UDP/TCP checksum of the datagram verifies.
pub fn upper_checksum_ok(d: &[u8]) -> bool {
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&d[8..24]).expect("IPv6 source"));
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&d[24..40]).expect("IPv6 destination"));
    upper_layer_checksum(&src, &dst, d[6], &d[40..]) == 0
}

/// The tests' one random generator: `fastrand`'s, seeded, so every run
/// of a property test sees the same cases; with helpers for addresses and
/// datagrams.
#[derive(Clone, Debug)]
pub struct Rng(pub fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    pub fn next_u32(&mut self) -> u32 {
        self.0.u32(..)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }

    pub fn u8(&mut self) -> u8 {
        self.0.u8(..)
    }

    pub fn u16(&mut self) -> u16 {
        self.0.u16(..)
    }

    pub fn addr(&mut self) -> Ipv4Addr {
        Ipv4Addr::from(self.next_u32())
    }

    pub fn u128(&mut self) -> u128 {
        self.0.u128(..)
    }

    pub fn addr6(&mut self) -> Ipv6Addr {
        Ipv6Addr::from(self.u128())
    }

    /// True one time in `one_in`.
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.0.fill(&mut v);
        v
    }

    /// A random valid datagram: random header fields, options (NOP
    /// padding), protocol TCP, UDP, ICMP or other, and payload.
    pub fn datagram(&mut self) -> Ip {
        let mut d = Ip::new("1.2.3.4", "5.6.7.8", 0);
        d.src = self.addr();
        d.dst = self.addr();
        d.ttl = self.u8();
        d.tos = self.u8();
        d.id = self.u16();
        let nopts = self.below(11) * 4;
        let opts = vec![1u8; nopts];
        let data_len = self.below(64);
        let data = self.bytes(data_len);
        let d = match self.below(4) {
            0 => {
                let (s, t) = (self.u16(), self.u16());
                d.udp(s, t, &data)
            }
            1 => {
                let (s, t, q, a, f, w) = (
                    self.u16(),
                    self.u16(),
                    self.next_u64() as u32,
                    self.next_u64() as u32,
                    self.u8(),
                    self.u16(),
                );
                d.tcp_full(s, t, q, a, f, w, &[], &data)
            }
            2 => d.icmp(8, 0, [0, 1, 0, 2], &data),
            _ => {
                // Any protocol but TCP and UDP (whose payloads are built
                // above with correct checksums).
                let proto = match self.u8() {
                    ip_proto::TCP | ip_proto::UDP => 99,
                    p => p,
                };
                Ip { proto, ..d }.payload(&data)
            }
        };
        d.options(&opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_builder_matches_the_wire_view() {
        let d = Ip::new("1.2.3.4", "5.6.7.8", 17)
            .ttl(9)
            .tos(0x20)
            .id(7)
            .frag(0x2000 | 3)
            .options(&[1, 1, 1])
            .payload(b"xyz")
            .bytes();
        let h = Ipv4Header::new_checked(&d[..]).expect("valid header");
        assert_eq!(h.header_len(), 24);
        assert_eq!(h.total_len(), 27);
        assert_eq!(h.ttl(), 9);
        assert_eq!(h.ident(), 7);
        assert!(h.more_frags() && !h.dont_frag());
        assert_eq!(h.src_addr(), ip("1.2.3.4"));
        assert!(h.verify_checksum());
        assert_eq!(&d[24..], b"xyz");
    }

    #[test]
    fn rng_is_seeded() {
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        assert!(xs.iter().all(|&x| x == b.next_u64()));
        assert_ne!(Rng::new(6).next_u64(), xs[0]);
    }
}
