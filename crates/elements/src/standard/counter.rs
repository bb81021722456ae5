//! # Counter
//!
//! Counter([keywords])
//!
//! Counts packets and bytes.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Passes packets unchanged from its input to its output, counting them.
//!
//! Handlers:
//! - `count` (read): packets counted.
//! - `byte_count` (read): bytes counted.
//! - `rate` (read): packets per second since the previous read of `rate`.
//! - `bit_rate`, `byte_rate` (read): the same in bits and bytes per second.
//! - `reset`, `reset_counts` (write): resets the counts.
//!
//! Example:
//!
//!     FromDump(in.pcap) -> c :: Counter -> Discard;
//!     // paraclick -h c.count conf.click

use crate::util::{fmt_rate, RateMeter};
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Counter as Cnt, Cx, Element, HandlerCx, HandlerInfo,
};

pub struct Counter {
    packets: Cnt,
    bytes: Cnt,
    rate: RateMeter,
    byte_rate: RateMeter,
}

pub fn spec() -> ClassSpec {
    ClassSpec::new("Counter", "1/1", "a", make)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Box<dyn Element>, String> {
    cx.args().complete()?;
    Ok(Box::new(Counter {
        packets: Cnt::new(cx.nthreads),
        bytes: Cnt::new(cx.nthreads),
        rate: RateMeter::new(),
        byte_rate: RateMeter::new(),
    }))
}

impl Counter {
    #[inline]
    fn count(&self, cx: &Cx<'_>, b: &Batch) {
        self.packets.add(cx.thread(), b.len() as u64);
        self.bytes.add(cx.thread(), b.bytes() as u64);
    }

    pub fn packets(&self) -> u64 {
        self.packets.get()
    }
}

const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("count"),
    HandlerInfo::read("byte_count"),
    HandlerInfo::read("rate"),
    HandlerInfo::read("bit_rate"),
    HandlerInfo::read("byte_rate"),
    HandlerInfo::write("reset"),
    HandlerInfo::write("reset_counts"),
];

impl Element for Counter {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.count(cx, &batch);
        cx.push(0, batch);
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let b = cx.pull(0, max)?;
        self.count(cx, &b);
        Some(b)
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<String> {
        Some(match name {
            "count" => self.packets.get().to_string(),
            "byte_count" => self.bytes.get().to_string(),
            "rate" => fmt_rate(self.rate.rate(self.packets.get())),
            "byte_rate" => fmt_rate(self.byte_rate.rate(self.bytes.get())),
            "bit_rate" => fmt_rate(8.0 * self.byte_rate.rate(self.bytes.get())),
            _ => return None,
        })
    }

    fn write_handler(
        &self,
        name: &str,
        _v: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        match name {
            "reset" | "reset_counts" => {
                self.packets.reset();
                self.bytes.reset();
                self.rate.reset();
                self.byte_rate.reset();
                Some(Ok(()))
            }
            _ => None,
        }
    }
}
