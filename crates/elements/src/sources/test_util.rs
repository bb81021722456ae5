//! Helpers for this folder's element tests.

use paraclick_runtime::testing::Harness;
use paraclick_runtime::{Registry, Router};

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

/// A source `e` (no inputs) with its outputs connected to `TestSink`s
/// `o0`, `o1`, ... (the runtime's harness would feed `e`'s input).
pub fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    let mut conf = format!("e :: {decl};\n");
    for i in 0..noutputs {
        conf.push_str(&format!("e[{i}] -> o{i} :: TestSink;\n"));
    }
    let router = Router::from_str(&conf, &reg(), 1).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    Ok(Harness { router })
}

pub fn harness(decl: &str, noutputs: usize) -> Harness {
    try_harness(decl, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}
