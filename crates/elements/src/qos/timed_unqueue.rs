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
    use super::super::test_util::bad;
    use crate::test_kit::{build_simtime, fill, handler, pkts, reg, run, sink_ms};

    #[test]
    fn moves_burst_packets_per_interval() {
        // Simulated time: the timer fires at 50, 100, ..., 250 ms (the
        // Script stops the run at 275 ms), and each time exactly BURST
        // packets leave, stamped with that moment.
        let r = build_simtime(
            &reg(),
            "Idle -> q :: Queue(1000) -> u :: TimedUnqueue(0.05, 3) -> SetTimestamp -> o :: TestSink;
             Script(wait 275ms, stop);",
        );
        fill(&r, "q", pkts(500, 60));
        run(&r);
        let want: Vec<i64> = (1..=5).flat_map(|k| [50 * k; 3]).collect();
        assert_eq!(sink_ms(&r, "o"), want, "3 packets every 50 ms");
        assert_eq!(handler(&r, "u.count"), "15");
        assert_eq!(handler(&r, "q.length"), "485");
        assert_eq!(handler(&r, "u.burst"), "3");
        assert_eq!(handler(&r, "u.interval"), "0.050000");
        assert!(bad("Idle -> Queue -> TimedUnqueue(0) -> Discard;"));
        assert!(bad("Idle -> Queue -> TimedUnqueue(1, 0) -> Discard;"));
    }
}
