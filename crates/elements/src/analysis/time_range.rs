//! # TimeRange
//!
//! TimeRange([keyword SIMPLE])
//!
//! Monitors the range of packet timestamps.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Passes packets unchanged, keeping the smallest range that holds all of
//! their timestamps.
//!
//! Keywords:
//! - `SIMPLE` (boolean, default false): packets arrive with increasing
//!   timestamps, so the first timestamp is the earliest and the latest
//!   the last.
//!
//! Handlers:
//! - `first` (read): the earliest timestamp, or `0.000000` before any
//!   packet.
//! - `last` (read): the latest timestamp, or `0.000000`.
//! - `range` (read): first and last, separated by a space.
//! - `interval` (read): last minus first, in seconds.
//! - `reset` (write): clear the range.
//!
//! Example:
//!
//!     FromDump(f.pcap, STOP true) -> tr :: TimeRange -> Discard;
//!     DriverManager(wait, read tr.range)

use super::fmt_time;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicI64, Ordering};

pub struct TimeRange {
    simple: bool,
    first: AtomicI64,
    last: AtomicI64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("TimeRange", "1/1", "a", make)
        .shared("one range of timestamps over all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimeRange, String> {
    let mut a = cx.args();
    let simple = a.read("SIMPLE").unwrap_or(false);
    a.complete()?;
    Ok(TimeRange {
        simple,
        first: AtomicI64::new(i64::MAX),
        last: AtomicI64::new(i64::MIN),
    })
}

impl TimeRange {
    fn bounds(&self) -> (i64, i64) {
        let f = self.first.load(Ordering::Relaxed);
        let l = self.last.load(Ordering::Relaxed);
        if f == i64::MAX {
            (0, 0)
        } else {
            (f, l)
        }
    }
}

impl Action for TimeRange {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("first", |e, _| fmt_time(e.bounds().0)),
        Handler::read("last", |e, _| fmt_time(e.bounds().1)),
        Handler::read("range", |e, _| {
            let (f, l) = e.bounds();
            format!("{} {}", fmt_time(f), fmt_time(l))
        }),
        Handler::read("interval", |e, _| {
            let (f, l) = e.bounds();
            fmt_time(l - f)
        }),
        Handler::write("reset", |e, _, _| {
            e.first.store(i64::MAX, Ordering::Relaxed);
            e.last.store(i64::MIN, Ordering::Relaxed);
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = p.timestamp().0;
        if self.simple {
            if self.first.load(Ordering::Relaxed) == i64::MAX {
                let _ =
                    self.first
                        .compare_exchange(i64::MAX, t, Ordering::Relaxed, Ordering::Relaxed);
            }
            self.last.store(t, Ordering::Relaxed);
        } else {
            self.first.fetch_min(t, Ordering::Relaxed);
            self.last.fetch_max(t, Ordering::Relaxed);
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn keeps_the_range() {
        let h = harness("TimeRange", 1);
        assert_eq!(h.read("range").unwrap(), "0.000000 0.000000");
        h.push(0, vec![at(1, 5.0), at(2, 3.5), at(3, 9.25), at(4, 4.0)]);
        assert_eq!(h.output(0).len(), 4);
        assert_eq!(h.read("first").unwrap(), "3.500000");
        assert_eq!(h.read("last").unwrap(), "9.250000");
        assert_eq!(h.read("range").unwrap(), "3.500000 9.250000");
        assert_eq!(h.read("interval").unwrap(), "5.750000");
        h.write("reset", "").unwrap();
        assert_eq!(h.read("interval").unwrap(), "0.000000");
        let h = harness("TimeRange(SIMPLE true)", 1);
        h.push(0, vec![at(1, 1.0), at(2, 2.0), at(3, 3.0)]);
        assert_eq!(h.read("range").unwrap(), "1.000000 3.000000");
    }
}
