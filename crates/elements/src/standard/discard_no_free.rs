//! # DiscardNoFree
//!
//! DiscardNoFree
//!
//! Drops all packets it receives, without freeing them in Click.
//!
//! Ports: 1 input, no outputs. Processing: agnostic. In pull context it
//! owns a task that pulls and drops packets.
//!
//! In Click the packets are left for some other owner to free (kernel
//! configurations use it). paraclick packets always have one owner, so
//! DiscardNoFree counts and releases them exactly as Discard does; they
//! are the router's output (a sink), not drops.
//!
//! Handlers:
//! - `count` (read): packets discarded.
//!
//! Example:
//!
//!     ... -> DiscardNoFree;

use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};

pub struct DiscardNoFree {
    count: PerThreadCount,
    pull: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("DiscardNoFree", "1/0", "a", make)
        .dead_code(paraclick_runtime::DeadCode::PullSink)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<DiscardNoFree, String> {
    cx.args().complete()?;
    Ok(DiscardNoFree {
        count: PerThreadCount::new(cx.nthreads),
        pull: cx.input_is_pull(0),
    })
}

impl Element for DiscardNoFree {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("count", |e, _| e.count.get().to_string())];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.count.add(cx.thread(), batch.len() as u64);
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.pull {
            let t = ix.add_task();
            ix.sleep_when_empty(t);
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        match cx.pull(0, 32) {
            Some(b) => {
                self.count.add(cx.thread(), b.len() as u64);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn counts_without_dropping() {
        let h = harness("DiscardNoFree", 0);
        h.push(0, vec![pkt(&[1]), pkt(&[2])]);
        assert_eq!(h.read("count").unwrap(), "2");
        assert_eq!(h.drops(), 0);
        assert_eq!(h.router.pool_outstanding(), 0, "packets released");
        assert_err(
            try_harness("DiscardNoFree(1)", 0),
            "e :: DiscardNoFree: too many arguments ('1')",
        );
    }
}
