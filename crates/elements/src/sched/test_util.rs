//! Helpers for this folder's element tests.

use paraclick_packet::Packet;
use paraclick_runtime::Registry;

/// A registry with the schedulers, the sources, the standard elements
/// (Queue, Unqueue) and the test sinks.
pub fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    crate::sources::register(&mut r);
    crate::standard::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

pub fn pkt(data: &[u8]) -> Packet {
    Packet::from_slice(data).expect("packet")
}

/// The first byte of each packet (tests tag packets that way).
pub fn tags(ps: &[Packet]) -> Vec<u8> {
    ps.iter()
        .map(|p| p.data().first().copied().unwrap_or(0))
        .collect()
}
