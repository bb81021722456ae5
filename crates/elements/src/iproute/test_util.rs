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
    let olen = options.len().div_ceil(4) * 4;
    let hlen = 20 + olen;
    let mut v = vec![0u8; hlen + payload.len()];
    v[20..20 + options.len()].copy_from_slice(options);
    v[hlen..].copy_from_slice(payload);
    let mut h = Ipv4Header::new_unchecked(&mut v[..]);
    h.set_version(4);
    h.set_header_len(hlen);
    h.set_total_len((hlen + payload.len()) as u16);
    h.set_ident(ident);
    h.set_dont_frag(df);
    h.set_ttl(64);
    h.set_protocol(proto);
    h.set_src_addr(src);
    h.set_dst_addr(dst);
    h.fill_checksum();
    v
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
