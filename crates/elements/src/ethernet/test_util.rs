//! Helpers for this folder's element tests: packet builders on the wire
//! module and a registry with this folder's classes.

use paraclick_packet::wire::{
    ethertype, ArpPacket, ArpRepr, EtherAddr, EthernetFrame, EthernetRepr, Ipv4Header, Ipv4Repr,
};
use paraclick_packet::Packet;
use paraclick_runtime::testing::Harness;
use paraclick_runtime::{Registry, Router};
use std::net::Ipv4Addr;

/// A registry with this folder's classes, the standard ones and the test
/// sinks.
pub fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    crate::standard::register(&mut r);
    crate::sources::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

/// The element under test (`e`) with `ninputs` inputs fed by
/// `TestSource`s (the test pushes into them directly) and `noutputs`
/// outputs into `TestSink`s `o0`, `o1`, ...; extra configuration may
/// follow `decl` after a `;`.
pub fn try_harness_io(decl: &str, ninputs: usize, noutputs: usize) -> Result<Harness, String> {
    let mut conf = format!("e :: {decl};\n");
    for i in 0..ninputs {
        conf.push_str(&format!("TestSource -> [{i}]e;\n"));
    }
    for i in 0..noutputs {
        conf.push_str(&format!("e[{i}] -> o{i} :: TestSink;\n"));
    }
    let router = Router::from_str(&conf, &reg(), 1).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    Ok(Harness { router })
}

pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    try_harness_io(decl, 1, noutputs)
}

pub fn harness_io(decl: &str, ninputs: usize, noutputs: usize) -> Harness {
    try_harness_io(decl, ninputs, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    harness_io(decl, 1, noutputs)
}

pub fn pkt(data: &[u8]) -> Packet {
    Packet::from_slice(data).expect("packet")
}

pub fn eth(s: &str) -> EtherAddr {
    s.parse().expect("ether address")
}

pub fn ip(s: &str) -> Ipv4Addr {
    s.parse().expect("ip address")
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

/// An option-less IPv4 datagram with `payload` (protocol 17 unless given).
pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; 20 + payload.len()];
    Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: proto,
        payload_len: payload.len(),
        ttl: 64,
        tos: 0,
        ident: 0x1234,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Header::new_unchecked(&mut v[..]));
    v[20..].copy_from_slice(payload);
    v
}

/// An IP packet with its network header annotation set at offset 0.
pub fn ip_packet(src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) -> Packet {
    let mut p = pkt(&ipv4(src, dst, 17, payload));
    p.set_network_header(0, 20);
    p
}
