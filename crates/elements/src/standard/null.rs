//! # Null
//!
//! Null
//!
//! Passes packets unchanged from its input to its output.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Example:
//!
//!     src -> Null -> Discard;

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element};

pub struct Null;

pub fn spec() -> ClassSpec {
    ClassSpec::element("Null", "1/1", "a", make)
        .dead_code(paraclick_runtime::DeadCode::Through)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Null, String> {
    cx.args().complete()?;
    Ok(Null)
}

impl Element for Null {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        cx.push(0, batch)
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        cx.pull(0, max)
    }
}
