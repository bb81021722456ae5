//! # TimestampAccum
//!
//! TimestampAccum()
//!
//! Collects differences in timestamps.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! For each passing packet, measures the time elapsed since the packet's
//! timestamp annotation, on the router's clock (simulated under
//! `--simtime`), and adds it to a total over all packets. A packet stamped
//! later than now adds a negative time.
//!
//! Handlers:
//! - `count` (read): packets that have passed.
//! - `time` (read): the total elapsed time, in seconds (`SEC.USEC`).
//! - `average_time` (read): the total divided by `count`, in seconds
//!   (`0.000000` before the first packet).
//! - `reset_counts` (write): sets `count` and `time` to zero.
//!
//! Example: the time packets spend in a queue.
//!
//!     ... -> SetTimestamp -> Queue -> Unqueue -> ta :: TimestampAccum -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount};

pub struct TimestampAccum {
    count: PerThreadCount,
    /// The total's whole seconds (wrapping sums of signed values) and its
    /// nanoseconds (each packet's 0..1e9), kept apart so that traces'
    /// epoch-sized differences cannot overflow.
    secs: PerThreadCount,
    nsecs: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("TimestampAccum", "1/1", "a", make)
        .per_flow()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimestampAccum, String> {
    cx.args().complete()?;
    Ok(TimestampAccum {
        count: PerThreadCount::new(cx.nthreads),
        secs: PerThreadCount::new(cx.nthreads),
        nsecs: PerThreadCount::new(cx.nthreads),
    })
}

/// Seconds with six decimals, rounding toward zero, from nanoseconds.
fn seconds(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let m = ns.unsigned_abs();
    format!(
        "{sign}{}.{:06}",
        m / 1_000_000_000,
        m % 1_000_000_000 / 1000
    )
}

impl TimestampAccum {
    fn total_ns(&self) -> i128 {
        i128::from(self.secs.get() as i64) * 1_000_000_000 + i128::from(self.nsecs.get())
    }

    #[inline]
    fn add(&self, t: usize, now: i64, p: &Packet) {
        let d = i128::from(now) - i128::from(p.timestamp().0);
        self.secs.add(t, d.div_euclid(1_000_000_000) as i64 as u64);
        self.nsecs.add(t, d.rem_euclid(1_000_000_000) as u64);
    }
}

impl Action for TimestampAccum {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("time", |e, _| seconds(e.total_ns())),
        Handler::read("average_time", |e, _| {
            let n = e.count.get();
            seconds(if n == 0 {
                0
            } else {
                e.total_ns() / i128::from(n)
            })
        }),
        Handler::write("reset_counts", |e, _, _| {
            e.count.reset();
            e.secs.reset();
            e.nsecs.reset();
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> paraclick_runtime::Verdict {
        let now = cx.timestamp().0;
        let t = cx.thread();
        self.count.inc(t);
        self.add(t, now, p);
        paraclick_runtime::Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::Timestamp;
    use paraclick_runtime::testing::Harness;
    use std::time::Duration;

    fn stamped(ns: i64) -> paraclick_packet::Packet {
        let mut p = pkt(&[0; 20]);
        p.set_timestamp(Timestamp(ns));
        p
    }

    fn secs(s: String) -> i64 {
        Timestamp::parse(&s).unwrap().0
    }

    #[test]
    fn accumulates_elapsed_time_on_the_router_clock() {
        let h = Harness::simulated(&reg(), "TimestampAccum", 1, 1).unwrap();
        assert_eq!(h.read("average_time").unwrap(), "0.000000");
        // Stamped at the epoch: the whole clock reading elapsed.
        h.push(0, vec![stamped(0)]);
        let t0 = secs(h.read("time").unwrap());
        assert!(t0 >= 1_000_000_000 * 1_000_000_000, "{t0}");
        h.advance(Duration::from_secs(2));
        // Stamped at the epoch again, and one stamped 1.5 s after it: the
        // first adds t0 + 2 s, the second t0 + 0.5 s.
        h.push(0, vec![stamped(0), stamped(1_500_000_000)]);
        assert_eq!(h.output(0).len(), 3);
        assert_eq!(h.read("count").unwrap(), "3");
        let want = 3 * t0 + 2_500_000_000;
        // The readings have microseconds: allow for t0's nanoseconds.
        let got = secs(h.read("time").unwrap());
        assert!((got - want).abs() < 3_000, "{got} vs {want}");
        let avg = secs(h.read("average_time").unwrap());
        assert!((avg - want / 3).abs() < 3_000, "{avg} vs {}", want / 3);
        // A packet from the future adds a negative time.
        h.write("reset_counts", "").unwrap();
        assert_eq!(h.read("count").unwrap(), "0");
        assert_eq!(h.read("time").unwrap(), "0.000000");
        h.push(0, vec![stamped(i64::MAX)]);
        assert!(h.read("time").unwrap().starts_with('-'));
        assert_eq!(super::seconds(-1_500_000), "-0.001500");
    }
}
