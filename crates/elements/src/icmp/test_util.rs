//! The ICMP elements' tests use the crate's one kit ([`crate::test_kit`]),
//! plus this.

#![allow(dead_code)] // not every test uses every helper

pub use crate::test_kit::*;
use paraclick_packet::wire::checksum;

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
