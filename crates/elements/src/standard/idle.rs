//! # Idle
//!
//! Idle
//!
//! Has zero or more agnostic inputs and outputs. Never pushes a packet to
//! any output or pulls a packet from any input. Packets pushed into it are
//! dropped (counted). Used to terminate unused ports. It has an empty
//! notifier that is never active: a puller whose inputs all lead to Idle
//! sleeps.
//!
//! Ports: any number of inputs and outputs. Processing: agnostic, each
//! port on its own (no packet flows from an input to an output, Click's
//! flow code `x/y`): `Idle` can take pushes and be pulled from at once.
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
//! Like Idle, but does not provide notification (a puller of a
//! SimpleIdle keeps polling it): pushed packets are dropped (counted),
//! pulls return nothing.
//!
//! Ports: any number of inputs and outputs. Processing: agnostic, each
//! port on its own, as Idle's.

use paraclick_runtime::element::QueueElement;
use paraclick_runtime::notifier::Notifier;
use paraclick_runtime::ring::ModeSwitch;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element};

pub struct Idle {
    /// Never active.
    empty: Notifier,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["idle"];

pub fn spec() -> ClassSpec {
    ClassSpec::notifying("Idle", "-/-", "a", make)
        .flow_code("x/y")
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

/// SimpleIdle: Idle without the notifier.
pub fn simple_spec() -> ClassSpec {
    ClassSpec::element("SimpleIdle", "-/-", "a", make)
        .flow_code("x/y")
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Idle, String> {
    cx.args().complete()?;
    Ok(Idle {
        empty: Notifier::inactive(),
    })
}

impl QueueElement for Idle {
    fn set_ring_modes(&self, _: &ModeSwitch, _: bool, _: bool, _: bool) {}

    fn empty_notifier(&self) -> Option<&Notifier> {
        Some(&self.empty)
    }
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

    #[test]
    fn idle_takes_pushes_and_is_pulled_at_once() {
        // Click's tools/lexer-04: b is pushed into (from a) and pulled
        // from (by p and q). Nothing flows through an Idle (flow code
        // x/y), so its inputs and outputs need not agree.
        for class in ["Idle", "SimpleIdle"] {
            let conf = format!(
                "a, c :: Idle; b :: {class}; p, q :: PullNull; \
                 a, a[1] -> b -> p, q; p -> [0]c, [1]c; q -> [2]c;"
            );
            let r = paraclick_runtime::Router::from_str(&conf, &reg(), 1);
            assert!(r.is_ok(), "{class}: {:?}", r.err());
        }
        // An element packets flow through still may not mix them.
        let e = paraclick_runtime::Router::from_str(
            "Idle -> q :: Queue -> Unqueue -> b :: Counter -> PullNull -> Idle;",
            &reg(),
            1,
        )
        .err()
        .expect("a Counter pushed into and pulled from is refused");
        assert!(format!("{e:?}").contains("mixed context"), "{e:?}");
    }
}
