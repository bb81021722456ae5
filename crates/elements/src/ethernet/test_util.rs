//! The Ethernet elements' tests use the crate's one kit
//! ([`crate::test_kit`]), plus this.

#![allow(dead_code)] // not every test uses every helper

pub use crate::test_kit::*;
use paraclick_packet::Packet;
use std::net::Ipv4Addr;

/// An IP packet with its network header annotation set at offset 0.
pub fn ip_packet(src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) -> Packet {
    let mut p = pkt(&ipv4(src, dst, 17, payload));
    p.set_network_header(0, 20);
    p
}
