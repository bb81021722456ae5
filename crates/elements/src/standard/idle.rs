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

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element};

pub struct Idle;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["idle"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("Idle", "-/-", "a", make)
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
