//! The QoS tests use the crate's one kit ([`crate::test_kit`]), plus
//! these pull-side helpers.

#![allow(dead_code)] // not every test uses every helper

use paraclick_packet::{Batch, Packet};
use paraclick_runtime::Router;

pub use crate::test_kit::*;

/// `Idle -> q :: CHAIN` with the last element named `s`; each of its
/// `nout` outputs goes to an inactive Unqueue (pull outputs) so the test
/// pulls by hand.
pub fn router(chain: &str, nout: usize) -> Router {
    let mut conf = format!("Idle -> q :: {chain};\n");
    for i in 0..nout {
        conf.push_str(&format!(
            "s[{i}] -> Unqueue(ACTIVE false) -> o{i} :: TestSink;\n"
        ));
    }
    Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{conf}: {d:?}"))
}

/// A router from full configuration text.
pub fn conf(text: &str) -> Router {
    Router::from_str(text, &reg(), 1).unwrap_or_else(|d| panic!("{text}: {d:?}"))
}

/// Whether a configuration is rejected.
pub fn bad(text: &str) -> bool {
    Router::from_str(text, &reg(), 1).is_err()
}

pub fn fill(r: &Router, elem: &str, ps: Vec<Packet>) {
    r.push_into(elem, 0, Batch::from(ps)).unwrap();
}

/// `n` packets of `len` bytes, the first byte of packet k being k.
pub fn pkts(n: usize, len: usize) -> Vec<Packet> {
    (0..n)
        .map(|k| {
            let mut d = vec![0u8; len.max(1)];
            d[0] = k as u8;
            Packet::from_slice(&d).expect("packet")
        })
        .collect()
}

/// A packet of `len` bytes whose first byte is `tag`.
pub fn tagged(tag: u8, len: usize) -> Packet {
    let mut d = vec![0u8; len.max(1)];
    d[0] = tag;
    Packet::from_slice(&d).expect("packet")
}

/// Runs `r` for `ms` milliseconds; returns the seconds it ran.
pub fn run_for(r: &Router, ms: u64) -> f64 {
    let stop = r.stopper();
    let t0 = std::time::Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        stop.stop();
    });
    r.run();
    t0.elapsed().as_secs_f64()
}
