//! Packet builders for the iproute tests.

#![allow(dead_code)] // helpers shared by several test modules

pub use crate::test_kit::*;
use paraclick_packet::wire::Ipv4Header;
use paraclick_packet::Packet;
use std::net::Ipv4Addr;

/// The bytes of an IPv4 datagram: header (with `options`, padded to a
/// multiple of 4 with EOL), then `payload`; valid checksum.
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

/// A packet of `bytes` with `mac` bytes of link header in front and the
/// network header marked after them.
pub fn ip_packet(mac: &[u8], bytes: &[u8]) -> Packet {
    let mut all = mac.to_vec();
    all.extend_from_slice(bytes);
    let mut p = Packet::from_slice(&all).unwrap();
    let hlen = usize::from(bytes[0] & 0x0f) * 4;
    if !mac.is_empty() {
        p.set_mac_header(0);
    }
    p.set_network_header(mac.len(), hlen);
    p
}

/// A simple UDP-ish datagram from 1.0.0.1 to `dst`.
pub fn packet_to(dst: &str) -> Packet {
    ip_packet(
        &[],
        &ip_bytes(ip("1.0.0.1"), ip(dst), 17, 1, false, &[], &[0u8; 12]),
    )
}

/// The network-header view of a packet.
pub fn header(p: &Packet) -> Ipv4Header<&[u8]> {
    Ipv4Header::new_checked(p.network_header().unwrap()).unwrap()
}
