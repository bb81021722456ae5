//! Helpers for this folder's element tests.

use paraclick_runtime::testing::Harness;
use paraclick_runtime::Registry;

/// A registry with the sources, the schedulers, the standard elements
/// (Unqueue, Queue, Discard) and the test sinks.
pub fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    crate::sched::register(&mut r);
    crate::standard::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    Harness::new(&reg(), decl, noutputs)
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    try_harness(decl, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}
