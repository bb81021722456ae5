//! # Suppressor
//!
//! Suppressor
//!
//! Passes packets unchanged, optionally dropping some input ports.
//!
//! Has n inputs and n outputs, and passes packets from input i to output i
//! unchanged, unless port i is suppressed (through its `activeI` handler):
//! packets pushed into a suppressed push input are dropped (counted), and
//! pulls on a suppressed pull output return nothing. Every port starts
//! out active.
//!
//! Ports: n inputs, n outputs. Processing: agnostic.
//!
//! Handlers:
//! - `active0` ... `activeN-1` (read/write): whether each port is active
//!   (not suppressed).
//! - `reset` (write): makes every port active.
//!
//! Example:
//!
//!     s :: Suppressor; a -> [0]s[0] -> x; b -> [1]s[1] -> y;
//!     // write s.active1 false to drop b's packets

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, DynHandler, Element, Handler, HandlerCx};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Suppressor {
    active: Vec<AtomicBool>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["suppressed"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("Suppressor", "-/=", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Suppressor, String> {
    cx.args().complete()?;
    let n = cx.ninputs.max(cx.noutputs);
    Ok(Suppressor {
        active: (0..n).map(|_| AtomicBool::new(true)).collect(),
    })
}

impl Suppressor {
    fn is_active(&self, i: usize) -> bool {
        self.active
            .get(i)
            .is_some_and(|a| a.load(Ordering::Relaxed))
    }

    fn port(&self, name: &str) -> Option<usize> {
        name.strip_prefix("active")?
            .parse::<usize>()
            .ok()
            .filter(|&i| i < self.active.len())
    }
}

impl Element for Suppressor {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::write("reset", |e, _, _| {
        for a in &e.active {
            a.store(true, Ordering::Relaxed);
        }
        Ok(())
    })];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        if self.is_active(port) {
            cx.push(port, batch);
        } else {
            cx.drop_batch_for(0, batch);
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        if self.is_active(port) {
            cx.pull(port, max)
        } else {
            None
        }
    }

    fn dynamic_handlers(&self) -> Vec<DynHandler> {
        (0..self.active.len())
            .map(|i| DynHandler {
                name: format!("active{i}"),
                read: true,
                write: true,
                param: false,
            })
            .collect()
    }

    fn read_dynamic(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<Result<String, String>> {
        let i = self.port(name)?;
        Some(Ok(self.is_active(i).to_string()))
    }

    fn write_dynamic(
        &self,
        name: &str,
        value: &str,
        hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        let i = self.port(name)?;
        Some(
            hx.arg::<bool>(value)
                .map(|v| self.active[i].store(v, Ordering::Relaxed)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::conf;
    use crate::test_kit::{fill, tagged, tags};
    use paraclick_packet::Batch;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::TestSink;

    #[test]
    fn suppressed_ports_drop_or_return_nothing() {
        let r = conf(
            "s :: Suppressor; Idle -> [0]s[0] -> o0 :: TestSink; Idle -> [1]s[1] -> o1 :: TestSink;
             p :: Suppressor; Idle -> q :: Queue(10) -> p -> Unqueue(ACTIVE false) -> TestSink;",
        );
        let send = |port: usize, tag: u8| {
            r.push_into("s", port, Batch::from(vec![tagged(tag, 60)]))
                .unwrap()
        };
        send(0, 0);
        send(1, 1);
        assert_eq!(tags(&r.element::<TestSink>("o0").unwrap().take()), vec![0]);
        assert_eq!(tags(&r.element::<TestSink>("o1").unwrap().take()), vec![1]);
        r.write_handler("s.active1", "false").unwrap();
        assert_eq!(r.read_handler("s.active1").unwrap(), "false");
        assert_eq!(r.read_handler("s.active0").unwrap(), "true");
        send(0, 0);
        send(1, 1);
        assert_eq!(r.element::<TestSink>("o0").unwrap().len(), 1);
        assert_eq!(r.element::<TestSink>("o1").unwrap().len(), 0);
        assert_eq!(r.total_drops(), 1);
        r.write_handler("s.reset", "").unwrap();
        assert_eq!(r.read_handler("s.active1").unwrap(), "true");
        assert_err(
            r.write_handler("s.active1", "maybe"),
            "s.active1: expected boolean (true or false)",
        );
        assert_err(r.read_handler("s.active2"), "no read handler 's.active2'");
        // Pull: a suppressed output returns nothing.
        fill(&r, "q", vec![tagged(5, 60)]);
        r.write_handler("p.active0", "false").unwrap();
        assert!(r.pull_from("p", 0, 8).unwrap().is_none());
        r.write_handler("p.active0", "true").unwrap();
        assert_eq!(r.pull_from("p", 0, 8).unwrap().unwrap().len(), 1);
    }
}
