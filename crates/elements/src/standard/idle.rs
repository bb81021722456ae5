//! # Idle
//!
//! Idle
//!
//! Has zero or more agnostic inputs and outputs. Never pushes a packet to
//! any output or pulls a packet from any input. Packets pushed into it are
//! dropped (counted). Used to terminate unused ports.
//!
//! Ports: any number of inputs and outputs. Processing: agnostic.
//!
//! Example:
//!
//!     Idle -> Discard;
//!     c :: Classifier(12/0800, -); c[1] -> Idle;
//!
//! # SimpleIdle
//!
//! SimpleIdle
//!
//! Like Idle, but does not provide notification. paraclick's Idle
//! provides none either (a puller of an Idle finds nothing and its
//! scheduler backs off), so SimpleIdle is Idle under Click's other name:
//! pushed packets are dropped (counted), pulls return nothing.
//!
//! Ports: any number of inputs and outputs. Processing: agnostic.

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element};

pub struct Idle;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["idle"];

pub fn spec() -> ClassSpec {
    named("Idle")
}

/// SimpleIdle: Idle under Click's other name.
pub fn simple_spec() -> ClassSpec {
    named("SimpleIdle")
}

fn named(name: &'static str) -> ClassSpec {
    ClassSpec::element(name, "-/-", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Idle, String> {
    cx.args().complete()?;
    Ok(Idle)
}

impl Element for Idle {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        cx.drop_batch_for(0, batch);
    }

    fn pull(&self, _cx: &mut Cx<'_>, _port: usize, _max: usize) -> Option<Batch> {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn drops_what_is_pushed_and_gives_nothing() {
        for class in ["Idle", "SimpleIdle"] {
            let h = harness(class, 1);
            h.push(0, pkts(3, 60));
            assert!(h.output(0).is_empty(), "{class}");
            assert_eq!(h.drops(), 3, "{class}");
            let r = build(
                &reg(),
                &format!("i :: {class}; i -> Unqueue(ACTIVE false) -> TestSink;"),
            );
            assert!(r.pull_from("i", 0, 8).unwrap().is_none(), "{class}");
        }
    }
}
