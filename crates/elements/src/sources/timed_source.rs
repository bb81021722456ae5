//! # TimedSource
//!
//! TimedSource([INTERVAL, DATA, keywords LIMIT, STOP, ACTIVE, HEADROOM, END_CALL])
//!
//! Periodically generates a packet.
//!
//! Creates packets consisting of DATA and pushes one out its single output
//! about once every INTERVAL, from a timer (it owns no task).
//!
//! Ports: no inputs, 1 output. Processing: push.
//!
//! Arguments:
//! - `INTERVAL` (time, default 0.5 s): time between packets; the first
//!   packet goes out one INTERVAL after the router starts.
//! - `DATA` (string, default 64 bytes of text): packet contents.
//! - `LIMIT` (integer, at most 2^48-1, default -1): stop sending after LIMIT packets;
//!   negative means no limit.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `HEADROOM` (integer, default the pool's, at most 65535): headroom of
//!   the packets.
//! - `END_CALL` (write handler and value): called after LIMIT packets
//!   (END_CALL and STOP are mutually exclusive).
//!
//! Packets' timestamps are set to the time they are made.
//!
//! Drop reasons: `no buffer`: its thread's packet pool stayed empty for
//! a second (packets held or leaked downstream); until then it waits for
//! buffers and loses nothing.
//!
//! Handlers:
//! - `data` (read/write): the DATA.
//! - `interval` (read/write): the INTERVAL in seconds; a new interval
//!   applies from the next packet on.
//! - `count` (read): packets generated.
//! - `reset` (write): resets the count, so LIMIT more packets go out.
//! - `active` (read/write), `limit` (read/write).
//!
//! Example:
//!
//!     TimedSource(INTERVAL 0.333) -> Print(ping) -> Discard;

use super::gen::{data_batch, parse_end_call, Limit};
use crate::util::fmt_rate;
use paraclick_runtime::args::Bytes;
use paraclick_runtime::{
    ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, InitCx, Kind, PerThreadCount,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Duration;

const TIMER: usize = 0;

pub struct TimedSource {
    /// Its thread's pool dry: wait, then drop as `no buffer`.
    dry: super::gen::DryPool,
    data: RwLock<Vec<u8>>,
    /// INTERVAL in nanoseconds.
    interval_ns: AtomicU64,
    limit: Limit,
    active: AtomicBool,
    headroom: Option<usize>,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("TimedSource", "0/1", "h", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .drop_reasons(super::gen::POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimedSource, String> {
    let mut a = cx.args();
    let interval = a
        .read_p::<Duration>("INTERVAL")
        .unwrap_or(Duration::from_millis(500));
    let data = a.read_p::<Bytes>("DATA").map(|b| b.0);
    let limit = a.read::<i64>("LIMIT").unwrap_or(-1);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let headroom = super::check_headroom(a.read::<usize>("HEADROOM"));
    let end_call = a.read::<String>("END_CALL");
    a.complete()?;
    let headroom = headroom?;
    if stop && end_call.is_some() {
        return Err("END_CALL and STOP are mutually exclusive".into());
    }
    Ok(TimedSource {
        dry: super::gen::DryPool::default(),
        data: RwLock::new(data.unwrap_or_else(|| super::DEFAULT_DATA.to_vec())),
        interval_ns: AtomicU64::new(duration_ns(interval)),
        limit: Limit::new(limit, stop, end_call.map(parse_end_call))?,
        active: AtomicBool::new(active),
        headroom,
        count: PerThreadCount::new(cx.nthreads),
    })
}

fn duration_ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

impl TimedSource {
    fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns.load(Ordering::Relaxed))
    }

    /// Whether the timer should be running.
    /// A source that may send again restarts its timer (replacing a
    /// pending one, so it never runs twice).
    fn restart(&self, hx: &HandlerCx<'_>) {
        if self.wants_timer() {
            hx.schedule_after(TIMER, self.interval());
        }
    }

    fn wants_timer(&self) -> bool {
        self.active.load(Ordering::Relaxed) && !self.limit.exhausted()
    }
}

impl crate::control::quit_watcher::Finishes for TimedSource {
    fn finished(&self) -> bool {
        self.limit.finished()
    }
}

impl Element for TimedSource {
    /// Whether its LIMIT is reached, to QuitWatcher.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, TimedSource, dyn crate::control::quit_watcher::Finishes => |e| e)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "data",
            |e, _| {
                let d = e.data.read().unwrap_or_else(|e| e.into_inner());
                String::from_utf8_lossy(&d).into_owned()
            },
            |e, v, hx| {
                *e.data.write().unwrap_or_else(|e| e.into_inner()) = hx.arg::<Bytes>(v)?.0;
                Ok(())
            },
        ),
        Handler::rw(
            "interval",
            |e, _| fmt_rate(e.interval().as_secs_f64()),
            |e, v, hx| {
                e.interval_ns
                    .store(duration_ns(hx.arg(v)?), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset", |e, _, hx| {
            e.count.reset();
            e.limit.reset();
            e.restart(hx);
            Ok(())
        }),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                e.restart(hx);
                Ok(())
            },
        ),
        Handler::rw(
            "limit",
            |e, _| e.limit.get().to_string(),
            |e, v, hx| {
                e.limit.set(hx.arg(v)?)?;
                e.restart(hx);
                Ok(())
            },
        ),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.wants_timer() {
            ix.schedule_after(TIMER, self.interval());
        }
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if !self.active.load(Ordering::Relaxed) {
            return; // reactivation reschedules
        }
        if self.limit.claim(1) == 1 {
            let b = {
                let data = self.data.read().unwrap_or_else(|e| e.into_inner());
                data_batch(&data, 1, self.headroom, Some(cx.timestamp()))
            };
            if b.is_empty() && !self.dry.short(cx, 1, 0) {
                self.limit.unclaim(1);
            }
            self.count.add(cx.thread(), b.len() as u64);
            if !b.is_empty() {
                cx.push(0, b);
            }
        }
        if self.limit.exhausted() {
            self.limit.finish(cx);
        } else {
            cx.schedule_after(TIMER, self.interval());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{sim_ns, source as harness, try_source as try_harness, MS};
    use paraclick_runtime::testing::{assert_err, run, Harness};

    #[test]
    fn handlers_and_defaults() {
        let h = harness("TimedSource", 1);
        assert_eq!(h.read("interval").unwrap(), "0.5");
        assert_eq!(h.read("limit").unwrap(), "-1");
        assert_eq!(h.read("count").unwrap(), "0");
        h.write("interval", "10ms").unwrap();
        assert_eq!(h.read("interval").unwrap(), "0.01");
        assert_err(
            h.write("interval", "soon"),
            "e.interval: expected time in seconds",
        );
        h.write("data", "hello").unwrap();
        assert_eq!(h.read("data").unwrap(), "hello");
        assert_err(
            try_harness("TimedSource(never)", 1),
            "e :: TimedSource: INTERVAL: expected time in seconds",
        );
        assert_err(
            try_harness("TimedSource(1, x, STOP true, END_CALL a.b)", 1),
            "e :: TimedSource: END_CALL and STOP are mutually exclusive",
        );
    }

    /// The source in simulated time: the run moves the clock from timer
    /// to timer, and packets carry the router's time.
    fn sim(decl: &str) -> Harness {
        Harness::simulated(&crate::test_kit::reg(), decl, 0, 1).unwrap()
    }

    /// Packets go out a timer interval apart; LIMIT and STOP end the run.
    #[test]
    fn limit_and_stop() {
        let h = sim("TimedSource(0.01, \\<0102>, LIMIT 5, STOP true)");
        run(&h.router);
        let out = h.output(0);
        assert!(out.iter().all(|p| p.data() == [1, 2]));
        // The first one INTERVAL after the start, then one per INTERVAL,
        // stamped when made.
        assert_eq!(sim_ns(&out), [10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS]);
        assert_eq!(h.read("count").unwrap(), "5");
    }

    #[test]
    fn inactive_sends_nothing() {
        let h = sim("TimedSource(0.001, ACTIVE false); Script(wait 50ms, stop)");
        run(&h.router);
        assert!(h.output(0).is_empty());
        assert_eq!(h.read("count").unwrap(), "0");
    }

    /// Activating an inactive source from a handler starts its timer.
    #[test]
    fn activation_starts_the_timer() {
        let h = sim("TimedSource(0.005, ACTIVE false, LIMIT 2, STOP true); \
             Script(wait 30ms, write e.active true)");
        run(&h.router);
        // Nothing in the 30 ms it was inactive; then one INTERVAL apart.
        assert_eq!(sim_ns(&h.output(0)), [35 * MS, 40 * MS]);
        assert_eq!(h.read("count").unwrap(), "2");
    }
}
