//! The schedulers' rig, used by this folder's scheduler tests alone: a
//! scheduler pulling from queues `q0`, `q1`... that the test fills by hand
//! and drains by hand. The rest comes from the crate's one kit
//! ([`crate::test_kit`]).

#![allow(dead_code)] // not every test uses every helper

use crate::test_kit::{pkt, reg, tags};
use paraclick_runtime::Router;

/// `s :: CLASS` pulling from `ninputs` queues `q0`, `q1`... (fed by hand
/// with [`fill`]), drained by hand with [`pull`].
pub fn sched_router(ninputs: usize, class: &str) -> Router {
    let mut conf = format!("s :: {class}; s -> u :: Unqueue -> o :: TestSink;\n");
    for i in 0..ninputs {
        conf.push_str(&format!("Idle -> q{i} :: Queue(100) -> [{i}]s;\n"));
    }
    Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"))
}

/// Puts `n` one-byte packets tagged `tag` into queue `q{q}`.
pub fn fill(r: &Router, q: usize, tag: u8, n: usize) {
    let b = (0..n).map(|_| pkt(&[tag])).collect::<Vec<_>>();
    r.push_into(&format!("q{q}"), 0, b.into()).unwrap();
}

/// Pulls up to `max` packets from the scheduler; their tags in order.
pub fn pull(r: &Router, max: usize) -> Vec<u8> {
    r.pull_from("s", 0, max)
        .unwrap()
        .map(|b| tags(b.as_slice()))
        .unwrap_or_default()
}
