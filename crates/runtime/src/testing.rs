//! Helpers for testing elements: a sink that keeps what reaches it, and a
//! harness that wires one element between the test and such sinks.
//!
//! ```ignore
//! let h = Harness::new(&reg, "CheckIPHeader", 2)?;   // e :: CheckIPHeader; e[0] -> o0; e[1] -> o1
//! h.push(0, vec![packet]);
//! assert_eq!(h.output(0).len(), 1);
//! ```

use crate::element::Element;
use crate::registry::{ClassSpec, ConfigCx, Registry};
use crate::{Cx, Router};
use paraclick_packet::{Batch, Packet};
use std::sync::Mutex;

/// A push sink that keeps every packet it receives, in order.
pub struct TestSink {
    packets: Mutex<Vec<Packet>>,
}

impl TestSink {
    /// Takes the packets received so far.
    pub fn take(&self) -> Vec<Packet> {
        std::mem::take(&mut *self.packets.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn len(&self) -> usize {
        self.packets.lock().map(|p| p.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Element for TestSink {
    fn push(&self, _cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        let mut v = self.packets.lock().unwrap_or_else(|e| e.into_inner());
        v.extend(batch.drain());
    }

    fn queued(&self) -> usize {
        self.len()
    }
}

fn make_sink(cx: &mut ConfigCx<'_>) -> Result<TestSink, String> {
    cx.args().complete()?;
    Ok(TestSink {
        packets: Mutex::new(Vec::new()),
    })
}

/// A push source that never sends by itself: it stands at the element's
/// input so the configuration checks, while the test pushes directly.
pub struct TestSource;

impl Element for TestSource {}

fn make_source(cx: &mut ConfigCx<'_>) -> Result<TestSource, String> {
    cx.args().complete()?;
    Ok(TestSource)
}

/// Registers `TestSink` (push input, no outputs) and `TestSource` (no
/// inputs, push outputs, never sends).
pub fn register(reg: &mut Registry) {
    reg.register(ClassSpec::element("TestSink", "1/0", "h", make_sink));
    reg.register(ClassSpec::element("TestSource", "0/-", "h", make_source));
}

/// One element under test, its outputs connected to `TestSink`s `o0`,
/// `o1`, ..., and its input fed by the test.
pub struct Harness {
    pub router: Router,
}

impl Harness {
    /// `decl` is the element's class and arguments (`"Strip(14)"`);
    /// `noutputs` how many of its outputs to connect. Extra configuration
    /// (AddressInfo, ...) can follow after a `;` in `decl`. Input 0 is fed
    /// by the test (unless the extra configuration connects it).
    pub fn new(reg: &Registry, decl: &str, noutputs: usize) -> Result<Harness, String> {
        let fed = !decl.contains("-> e");
        Self::with_inputs(reg, decl, fed as usize, noutputs)
    }

    /// As [`Harness::new`] with `ninputs` inputs fed by the test (0 for a
    /// source).
    pub fn with_inputs(
        reg: &Registry,
        decl: &str,
        ninputs: usize,
        noutputs: usize,
    ) -> Result<Harness, String> {
        let mut reg = reg.clone();
        register(&mut reg);
        let (first, rest) = match decl.split_once(';') {
            Some((a, b)) => (a, b),
            None => (decl, ""),
        };
        let mut conf = format!("e :: {first};\n{rest}\n");
        for i in 0..ninputs {
            conf.push_str(&format!("TestSource -> [{i}]e;\n"));
        }
        for i in 0..noutputs {
            conf.push_str(&format!("e[{i}] -> o{i} :: TestSink;\n"));
        }
        let router = Router::from_str(&conf, &reg, 1).map_err(|d| {
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        Ok(Harness { router })
    }

    /// Pushes packets into input `port` of the element.
    pub fn push(&self, port: usize, packets: Vec<Packet>) {
        self.router
            .push_into("e", port, Batch::from(packets))
            .expect("push into the element under test");
    }

    /// Packets that came out of output `port` so far (taken).
    pub fn output(&self, port: usize) -> Vec<Packet> {
        self.router
            .element::<TestSink>(&format!("o{port}"))
            .map(|s| s.take())
            .unwrap_or_default()
    }

    /// Packets the element dropped (counted).
    pub fn drops(&self) -> u64 {
        self.router.total_drops()
    }

    pub fn read(&self, handler: &str) -> Result<String, String> {
        self.router.read_handler(&format!("e.{handler}"))
    }

    pub fn write(&self, handler: &str, value: &str) -> Result<(), String> {
        self.router.write_handler(&format!("e.{handler}"), value)
    }
}
