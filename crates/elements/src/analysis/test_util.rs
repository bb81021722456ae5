//! Helpers for the analysis elements' tests.

#![allow(dead_code)]

pub use crate::test_kit::{marked, pkt, tags, Ip};
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::testing::Harness;
use paraclick_runtime::Registry;

pub fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    crate::standard::register(&mut r);
    crate::sched::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    Harness::new(&reg(), &format!("{decl}; Idle -> e"), noutputs)
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    try_harness(decl, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

/// A one-byte packet `tag` with timestamp `ts` seconds.
pub fn at(tag: u8, ts: f64) -> Packet {
    let mut p = pkt(&[tag]);
    p.set_timestamp(Timestamp((ts * 1e9).round() as i64));
    p
}
