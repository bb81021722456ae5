//! # AdjustTimestamp
//!
//! AdjustTimestamp(TIME [, keywords FIRST, ALL])
//!
//! Adjusts the time in the packet's timestamp annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Adds TIME (a possibly negative time: `1.5`, `-20ms`, `2hr`) to each
//! packet's timestamp annotation. Zero timestamps are left alone unless
//! ALL is true.
//!
//! Keywords:
//! - `FIRST` (boolean, default false): adjust the packet's "first
//!   timestamp" annotation instead of its timestamp annotation.
//! - `ALL` (boolean, default false): adjust zero timestamps too.
//!
//! Handlers:
//! - `time` (read/write): the TIME argument.
//!
//! Example:
//!
//!     FromDump(f.pcap) -> AdjustTimestamp(-1000000000) -> ToDump(g.pcap)

use super::{fmt_time, Time};
use crate::standard::set_timestamp::{first_timestamp, set_first_timestamp};
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicI64, Ordering};

pub struct AdjustTimestamp {
    time: AtomicI64,
    first: bool,
    all: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AdjustTimestamp", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AdjustTimestamp, String> {
    let mut a = cx.args();
    let time: Time = a.read_mp("TIME");
    let first = a.read("FIRST").unwrap_or(false);
    let all = a.read("ALL").unwrap_or(false);
    a.complete()?;
    Ok(AdjustTimestamp {
        time: AtomicI64::new(time.0),
        first,
        all,
    })
}

impl Action for AdjustTimestamp {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "time",
        |e, _| fmt_time(e.time.load(Ordering::Relaxed)),
        |e, v, hx| {
            let t: Time = hx.arg(v)?;
            e.time.store(t.0, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let d = self.time.load(Ordering::Relaxed);
        let t = if self.first {
            first_timestamp(p)
        } else {
            p.timestamp()
        };
        if self.all || !t.is_zero() {
            let n = Timestamp(t.0.saturating_add(d));
            if self.first {
                set_first_timestamp(p, n);
            } else {
                p.set_timestamp(n);
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::standard::set_timestamp::first_timestamp;
    use crate::test_kit::*;
    use paraclick_packet::Timestamp;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn adds_time_but_not_to_zero_timestamps() {
        let h = harness("AdjustTimestamp(-0.5)", 1);
        h.push(0, vec![at(1, 10.0), at(2, 0.0)]);
        let out = h.output(0);
        assert_eq!(out[0].timestamp(), Timestamp(9_500_000_000));
        assert_eq!(out[1].timestamp(), Timestamp::ZERO);
        assert_eq!(h.read("time").unwrap(), "-0.500000");
        h.write("time", "2s").unwrap();
        h.push(0, vec![at(1, 10.0)]);
        assert_eq!(h.output(0)[0].timestamp(), Timestamp(12_000_000_000));
        assert_err(h.write("time", "soon"), "e.time: expected time");
    }

    #[test]
    fn all_and_first() {
        let h = harness("AdjustTimestamp(1, ALL true)", 1);
        h.push(0, vec![at(2, 0.0)]);
        assert_eq!(h.output(0)[0].timestamp(), Timestamp(1_000_000_000));
        let h = harness("AdjustTimestamp(1ms, FIRST true, ALL true)", 1);
        h.push(0, vec![at(2, 5.0)]);
        let out = h.output(0);
        assert_eq!(out[0].timestamp(), Timestamp(5_000_000_000));
        assert_eq!(first_timestamp(&out[0]), Timestamp(1_000_000));
        assert_err(
            try_harness("AdjustTimestamp", 1),
            "e :: AdjustTimestamp: missing mandatory TIME argument",
        );
    }
}
