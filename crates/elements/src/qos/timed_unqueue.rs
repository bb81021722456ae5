//! # TimedUnqueue
//!
//! TimedUnqueue(INTERVAL [, BURST])
//!
//! Pull-to-push converter on a timer.
//!
//! Every INTERVAL, pulls at most BURST packets (default 1) from its input
//! and pushes them out its output. With BURST 1 and packets arriving
//! slower than one per INTERVAL, it adds little delay; otherwise packets
//! may wait INTERVAL/2 on average, since it looks for packets only once
//! per INTERVAL. There is usually a Queue upstream.
//!
//! Ports: 1 input (pull), 1 output (push). It owns a timer.
//!
//! Arguments:
//! - `INTERVAL` (time, > 0).
//! - `BURST` (integer, 1 to 65536, default 1).
//!
//! Handlers:
//! - `interval` (read/write), `burst` (read/write).
//! - `count` (read): packets moved.
//!
//! Example:
//!
//!     ... -> Queue -> TimedUnqueue(1, 10) -> ...   // 10 packets a second

use super::delay_shaper::show_delay;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

pub struct TimedUnqueue {
    interval_ns: AtomicU64,
    burst: AtomicUsize,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("TimedUnqueue", "1/1", "l/h", make)
        .shared("a rate or schedule shared by all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimedUnqueue, String> {
    make_with_burst(cx, 1)
}

/// TimedUnqueue's configuration with a BURST default (Burster's is 8).
pub(crate) fn make_with_burst(
    cx: &mut ConfigCx<'_>,
    default_burst: usize,
) -> Result<TimedUnqueue, String> {
    let mut a = cx.args();
    let interval = a.read_mp::<Duration>("INTERVAL");
    let burst = a.read_p::<usize>("BURST").unwrap_or(default_burst);
    a.complete()?;
    if interval.is_zero() {
        return Err("INTERVAL must be positive".into());
    }
    crate::util::check_burst(burst)?;
    Ok(TimedUnqueue {
        interval_ns: AtomicU64::new(interval.as_nanos() as u64),
        burst: AtomicUsize::new(burst),
        count: PerThreadCount::new(cx.nthreads),
    })
}

impl TimedUnqueue {
    fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns.load(Ordering::Relaxed))
    }
}

impl Element for TimedUnqueue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "interval",
            |e, _| show_delay(e.interval_ns.load(Ordering::Relaxed)),
            |e, v, hx| {
                let d: Duration = hx.arg(v)?;
                if d.is_zero() {
                    return Err("INTERVAL must be positive".into());
                }
                e.interval_ns.store(d.as_nanos() as u64, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "burst",
            |e, _| e.burst.load(Ordering::Relaxed).to_string(),
            |e, v, hx| crate::util::write_burst(&e.burst, v, hx),
        ),
        Handler::read("count", |e, _| e.count.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.schedule_after(0, self.interval());
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        cx.schedule_after(0, self.interval());
        if let Some(b) = cx.pull(0, self.burst.load(Ordering::Relaxed)) {
            if !b.is_empty() {
                self.count.add(cx.thread(), b.len() as u64);
                cx.push(0, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf, run_for};
    use crate::test_kit::{fill, pkts};
    use paraclick_runtime::testing::TestSink;

    #[test]
    fn moves_burst_packets_per_interval() {
        let r = conf("Idle -> q :: Queue(1000) -> u :: TimedUnqueue(0.05, 3) -> o :: TestSink;");
        fill(&r, "q", pkts(500, 60));
        let secs = run_for(&r, 300);
        let n = r.element::<TestSink>("o").unwrap().len() as f64;
        // At most 3 per 50 ms; a loaded machine may fire fewer timers.
        assert!(n <= (secs / 0.05).floor() * 3.0, "{n} in {secs} s");
        assert!(n >= 6.0, "{n} in {secs} s");
        assert_eq!(n as usize % 3, 0);
        assert_eq!(r.read_handler("u.burst").unwrap(), "3");
        assert_eq!(r.read_handler("u.interval").unwrap(), "0.050000");
        assert!(bad("Idle -> Queue -> TimedUnqueue(0) -> Discard;"));
        assert!(bad("Idle -> Queue -> TimedUnqueue(1, 0) -> Discard;"));
    }
}
