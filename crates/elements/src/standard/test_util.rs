//! Helpers for this folder's element tests.

use paraclick_packet::Packet;
use paraclick_runtime::testing::Harness;
use paraclick_runtime::Registry;

/// A registry with this folder's classes (and the test sinks).
pub fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

/// The element under test, its input fed by an `Idle` (so the checker
/// sees input 0 in use; the test pushes into it directly).
pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    Harness::new(&reg(), &format!("{decl}; Idle -> e"), noutputs)
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    try_harness(decl, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
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
