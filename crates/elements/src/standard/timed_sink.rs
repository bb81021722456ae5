//! # TimedSink
//!
//! TimedSink(\[INTERVAL])
//!
//! Periodically pulls and drops a packet.
//!
//! Ports: 1 input, no outputs. Processing: pull.
//!
//! Pulls one packet from its input every INTERVAL (a time, default 0.5
//! seconds) and discards it. Discarded packets are the router's output (a
//! sink), not drops.
//!
//! Arguments:
//! - `INTERVAL` (time, default 500 ms): how often to pull.
//!
//! Handlers:
//! - `interval` (read/write): the INTERVAL, in seconds.
//! - `count` (read): packets pulled and discarded.
//!
//! Example:
//!
//!     InfiniteSource -> Queue -> TimedSink(0.1);

use crate::util::fmt_rate;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub struct TimedSink {
    interval_ns: AtomicU64,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("TimedSink", "1/0", "l", make)
        .dead_code(paraclick_runtime::DeadCode::PullSink)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimedSink, String> {
    let mut a = cx.args();
    let iv = a
        .read_p::<Duration>("INTERVAL")
        .unwrap_or(Duration::from_millis(500));
    a.complete()?;
    Ok(TimedSink {
        interval_ns: AtomicU64::new(ns(iv)),
        count: PerThreadCount::new(cx.nthreads),
    })
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

impl TimedSink {
    fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns.load(Ordering::Relaxed))
    }
}

impl Element for TimedSink {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "interval",
            |e, _| fmt_rate(e.interval().as_secs_f64()),
            |e, v, hx| {
                e.interval_ns.store(ns(hx.arg(v)?), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("count", |e, _| e.count.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.schedule_after(0, self.interval());
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if let Some(b) = cx.pull(0, 1) {
            self.count.add(cx.thread(), b.len() as u64);
        }
        cx.schedule_after(0, self.interval());
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::Harness;

    #[test]
    fn pulls_one_packet_per_interval() {
        // 110 simulated ms: pulls at 20, 40, 60, 80 and 100 ms.
        let h = Harness::simulated(
            &reg(),
            "TimedSink(20ms); Idle -> q :: Queue(100) -> e; Script(wait 110ms, stop)",
            0,
            0,
        )
        .unwrap();
        let ps: Vec<_> = (0..10u8).map(|i| pkt(&[i])).collect();
        h.router.push_into("q", 0, ps.into()).unwrap();
        paraclick_runtime::testing::run(&h.router);
        let n: u64 = h.read("count").unwrap().parse().unwrap();
        // One packet per interval, not the whole queue.
        assert_eq!(n, 5);
        assert_eq!(h.router.total_queued(), 10 - n as usize);
        assert_eq!(h.read("interval").unwrap(), "0.02");
        h.write("interval", "1").unwrap();
        assert_eq!(h.read("interval").unwrap(), "1");
        assert_err(
            h.write("interval", "soon"),
            "e.interval: expected time in seconds",
        );
    }

    #[test]
    fn bad_config() {
        let r = reg();
        assert_err(
            Harness::new(&r, "TimedSink(never); Idle -> q :: Queue -> e", 0),
            "e :: TimedSink: INTERVAL: expected time in seconds",
        );
        assert!(Harness::new(&r, "TimedSink; Idle -> q :: Queue -> e", 0).is_ok());
        // A push input is a processing error.
        assert_err(Harness::new(&r, "TimedSink", 0), "push output 0 of 'TestSource@2' (TestSource, <config>:3:1) connected to pull input 0 of 'e' (TimedSink, <config>:1:6)");
    }
}
