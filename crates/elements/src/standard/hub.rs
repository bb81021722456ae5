//! # Hub
//!
//! Hub()
//!
//! Duplicates packets like a hub.
//!
//! Ports: any number of inputs, the same number of outputs. Processing:
//! push.
//!
//! Sends a copy of each packet received on input N out every output
//! except output N, as an Ethernet hub repeats a frame on every port but
//! the one it came in on (Hub does not look at the packets). With one
//! input and one output, packets have nowhere to go and are dropped
//! (counted). Copies are deep; a copy that cannot be made because the
//! packet pool is exhausted is counted in `drops`.
//!
//! Handlers:
//! - `drops` (read): copies that could not be made.
//!
//! Example:
//!
//!     h :: Hub;
//!     FromDevice(a) -> [0]h[0] -> ToDevice(a);
//!     FromDevice(b) -> [1]h[1] -> ToDevice(b);
//!     FromDevice(c) -> [2]h[2] -> ToDevice(c);

use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, PerThreadCount};

pub struct Hub {
    noutputs: usize,
    clone_failures: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no other port"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("Hub", "-/=", "h", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Hub, String> {
    cx.args().complete()?;
    Ok(Hub {
        noutputs: cx.noutputs,
        clone_failures: PerThreadCount::new(cx.nthreads),
    })
}

impl Element for Hub {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("drops", |e, _| {
        e.clone_failures.get().to_string()
    })];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        let outs: Vec<usize> = (0..self.noutputs).filter(|&o| o != port).collect();
        let Some((&last, rest)) = outs.split_last() else {
            return cx.drop_batch_for(0, batch);
        };
        for &o in rest {
            let mut c = Batch::new();
            for p in batch.iter() {
                match p.clone_packet() {
                    Some(q) => c.push(q),
                    None => self.clone_failures.inc(cx.thread()),
                }
            }
            if !c.is_empty() {
                cx.push(o, c);
            }
        }
        cx.push(last, batch);
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::Harness;

    #[test]
    fn repeats_on_every_other_port() {
        let h = Harness::new(&reg(), "Hub; Idle -> [0]e; Idle -> [1]e; Idle -> [2]e", 3).unwrap();
        h.push(1, vec![pkt(&[7, 1]), pkt(&[8])]);
        assert_eq!(tags(&h.output(0)), [7, 8]);
        assert!(h.output(1).is_empty());
        assert_eq!(tags(&h.output(2)), [7, 8]);
        h.push(0, vec![pkt(&[9])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.output(1)[0].data(), &[9]);
        assert_eq!(h.output(2)[0].data(), &[9]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn single_port_drops_and_port_counts_must_match() {
        let h = harness("Hub", 1);
        h.push(0, vec![pkt(&[1])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("Hub", 2),
            "'e' :: Hub has no output 1 (Hub has as many outputs as inputs: 1 with 1 input)",
        );
        assert_err(
            try_harness("Hub(1)", 1),
            "e :: Hub: too many arguments ('1')",
        );
    }
}
