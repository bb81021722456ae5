//! # AverageCounter
//!
//! AverageCounter(\[IGNORE])
//!
//! Measures historical packet count and rate.
//!
//! Passes packets unchanged from its input to its output, keeping the
//! packet count and the packet rate as a strict average: the rate covers
//! only the time between the first and the most recent packet.
//!
//! IGNORE (default 0): if greater than 0, packets in the first IGNORE
//! seconds (after the first packet) are not counted, and the rate is
//! measured from the end of that period.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Handlers:
//! - `count` (read): packets counted since the last reset.
//! - `byte_count` (read): bytes counted since the last reset.
//! - `rate` (read): packets per second (strict average).
//! - `byte_rate` (read): bytes per second.
//! - `bit_rate` (read): bits per second.
//! - `time` (read): seconds between the first counted packet and the last.
//! - `reset` (write): resets the counts and the rates to zero.
//!
//! Example:
//!
//!     ... -> ac :: AverageCounter -> Discard;
//!     // later: ac.rate, ac.bit_rate

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// No packet seen yet.
const NONE: u64 = u64::MAX;

pub struct AverageCounter {
    ignore: Duration,
    /// Time origin of the nanosecond stamps below.
    epoch: Instant,
    /// Nanoseconds (since `epoch`) of the first packet, or NONE.
    first: AtomicU64,
    /// Of the latest counted packet.
    last: AtomicU64,
    count: PerThreadCount,
    bytes: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AverageCounter", "1/1", "a", make)
        .shared("its rate is measured over all flows (summed replicas are not written)")
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AverageCounter, String> {
    let mut a = cx.args();
    let ignore = a.read_p::<Duration>("IGNORE").unwrap_or(Duration::ZERO);
    a.complete()?;
    Ok(AverageCounter {
        ignore,
        epoch: Instant::now(),
        first: AtomicU64::new(NONE),
        last: AtomicU64::new(0),
        count: PerThreadCount::new(cx.nthreads),
        bytes: PerThreadCount::new(cx.nthreads),
    })
}

impl AverageCounter {
    /// Counts a packet of `len` bytes arriving at `now` on `thread`.
    fn record(&self, thread: usize, now: Instant, len: u64) {
        let t = now.saturating_duration_since(self.epoch).as_nanos() as u64;
        let first = match self
            .first
            .compare_exchange(NONE, t, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => t,
            Err(f) => f,
        };
        if t < first.saturating_add(self.ignore.as_nanos() as u64) {
            return;
        }
        self.count.add(thread, 1);
        self.bytes.add(thread, len);
        self.last.fetch_max(t, Ordering::Relaxed);
    }

    /// Seconds covered: from the first packet (plus IGNORE) to the last.
    fn time(&self) -> f64 {
        let first = self.first.load(Ordering::Relaxed);
        if first == NONE {
            return 0.0;
        }
        let start = first.saturating_add(self.ignore.as_nanos() as u64);
        let last = self.last.load(Ordering::Relaxed);
        last.saturating_sub(start) as f64 / 1e9
    }

    /// `amount` per second over [`Self::time`], 0 before two packets.
    fn per_second(&self, amount: u64) -> f64 {
        let t = self.time();
        if t > 0.0 {
            amount as f64 / t
        } else {
            0.0
        }
    }

    fn reset(&self) {
        self.count.reset();
        self.bytes.reset();
        self.first.store(NONE, Ordering::Relaxed);
        self.last.store(0, Ordering::Relaxed);
    }
}

/// A rate with at most three decimals.
fn show(r: f64) -> String {
    crate::util::fmt_rate((r * 1000.0).round() / 1000.0)
}

impl Action for AverageCounter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("byte_count", |e, _| e.bytes.get().to_string()),
        Handler::read("rate", |e, _| show(e.per_second(e.count.get()))),
        Handler::read("byte_rate", |e, _| show(e.per_second(e.bytes.get()))),
        Handler::read("bit_rate", |e, _| show(8.0 * e.per_second(e.bytes.get()))),
        Handler::read("time", |e, _| format!("{:.6}", e.time())),
        Handler::write("reset", |e, _, _| {
            e.reset();
            Ok(())
        }),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.record(cx.thread(), cx.now(), p.len() as u64);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf};
    use super::*;
    use crate::test_kit::{fill, pkts};

    #[test]
    fn strict_average_between_first_and_last() {
        let r = conf("Idle -> a :: AverageCounter -> Discard;");
        let a = r.element::<AverageCounter>("a").unwrap();
        let t0 = a.epoch + Duration::from_secs(1);
        // 101 packets of 100 bytes, 10 ms apart: 1 s from first to last.
        for k in 0..101 {
            a.record(0, t0 + Duration::from_millis(10 * k), 100);
        }
        assert_eq!(r.read_handler("a.count").unwrap(), "101");
        assert_eq!(r.read_handler("a.byte_count").unwrap(), "10100");
        assert_eq!(r.read_handler("a.rate").unwrap(), "101");
        assert_eq!(r.read_handler("a.byte_rate").unwrap(), "10100");
        assert_eq!(r.read_handler("a.bit_rate").unwrap(), "80800");
        assert_eq!(r.read_handler("a.time").unwrap(), "1.000000");
        r.write_handler("a.reset", "").unwrap();
        assert_eq!(r.read_handler("a.count").unwrap(), "0");
        assert_eq!(r.read_handler("a.rate").unwrap(), "0");
        // Packets pushed through count too.
        fill(&r, "a", pkts(3, 60));
        assert_eq!(r.read_handler("a.count").unwrap(), "3");
        assert_eq!(r.read_handler("a.byte_count").unwrap(), "180");
    }

    #[test]
    fn ignore_skips_the_first_seconds() {
        let r = conf("Idle -> a :: AverageCounter(0.5) -> Discard;");
        let a = r.element::<AverageCounter>("a").unwrap();
        let t0 = a.epoch + Duration::from_secs(1);
        // Every 10 ms for 1.5 s: those before 0.5 s are not counted; the
        // rest span 1 s.
        for k in 0..=150 {
            a.record(0, t0 + Duration::from_millis(10 * k), 10);
        }
        assert_eq!(r.read_handler("a.count").unwrap(), "101");
        assert_eq!(r.read_handler("a.rate").unwrap(), "101");
        assert!(bad("Idle -> AverageCounter(soon) -> Discard;"));
    }
}
