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
//! Hot reconfiguration (`-R`, `hotconfig`): a Counter of the same name in
//! the new configuration continues the old one's counts.
//!
//! Example:
//!
//!     FromDump(in.pcap) -> c :: Counter -> Discard;
//!     // paraclick -h c.count conf.click

use crate::util::{fmt_rate, RateMeter};
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Counter as Cnt, Cx, Handler, StateCx, Verdict,
};

pub struct Counter {
    packets: Cnt,
    bytes: Cnt,
    rate: RateMeter,
    byte_rate: RateMeter,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Counter", "1/1", "a", make)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Counter, String> {
    cx.args().complete()?;
    Ok(Counter {
        packets: Cnt::new(cx.nthreads),
        bytes: Cnt::new(cx.nthreads),
        rate: RateMeter::new(),
        byte_rate: RateMeter::new(),
    })
}

impl Counter {
    pub fn packets(&self) -> u64 {
        self.packets.get()
    }

    fn reset(&self) {
        self.packets.reset();
        self.bytes.reset();
        self.rate.reset();
        self.byte_rate.reset();
    }
}

impl Action for Counter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.packets.get().to_string()),
        Handler::read("byte_count", |e, _| e.bytes.get().to_string()),
        Handler::read("rate", |e, _| fmt_rate(e.rate.rate(e.packets.get()))),
        Handler::read("bit_rate", |e, _| {
            fmt_rate(8.0 * e.byte_rate.rate(e.bytes.get()))
        }),
        Handler::read("byte_rate", |e, _| {
            fmt_rate(e.byte_rate.rate(e.bytes.get()))
        }),
        Handler::write("reset", |e, _, _| {
            e.reset();
            Ok(())
        }),
        Handler::write("reset_counts", |e, _, _| {
            e.reset();
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.packets.add(cx.thread(), 1);
        self.bytes.add(cx.thread(), p.len() as u64);
        Verdict::Out(0)
    }

    fn take_state(&self, old: &Self, _sx: &mut StateCx<'_>) {
        // Neither router runs: slot 0 has no other writer now.
        self.packets.add(0, old.packets.get());
        self.bytes.add(0, old.bytes.get());
    }
}
