//! # RatedSource
//!
//! RatedSource([DATA, RATE, LIMIT, ACTIVE, keywords LENGTH, DATASIZE, BANDWIDTH, HEADROOM, STOP, END_CALL])
//!
//! Generates packets at a specified rate.
//!
//! Creates packets consisting of DATA and emits at most LIMIT of them at
//! RATE packets per second, evenly spaced. A source that falls behind
//! (its thread was busy) catches up on up to 20 ms of missed packets;
//! longer stalls are forgiven rather than followed by a burst.
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits the packets that are due (at most 32 per run;
//! Click sends one per run) and reports no work when none is, so the
//! thread can idle; in pull context a pull returns only packets that are
//! due, up to the number requested.
//!
//! CPU follows the rate: between packets its thread sleeps until the next
//! is due, and while it is inactive, has sent LIMIT packets or has RATE 0
//! until a handler is written (unless `--busy-poll`). Above 1,000 packets
//! a second, packets go out in bursts, one each millisecond holding the
//! packets due in it (at most 512: above 512,000 a second, a burst each
//! 512 packets): a packet leaves up to 1 ms after its evenly spaced
//! time (the latency cost), the average rate is kept (after T seconds,
//! RATE x T packets within one burst), and the thread wakes at most 1,000
//! times a second, or once per 512 packets, rather than once a packet. `--busy-poll` spaces packets
//! exactly, at a core's CPU.
//!
//! Arguments:
//! - `DATA` (string, default 64 bytes of text): packet contents.
//! - `RATE` (real, default 10): packets per second; 0 sends nothing.
//! - `LIMIT` (integer, at most 2^48-1, default -1): total packets to send; negative means
//!   no limit.
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `LENGTH` / `DATASIZE` (integer, at most 65549): cut or zero-pad DATA
//!   to this length.
//! - `BANDWIDTH` (bandwidth, e.g. `10Mbps`): sets RATE to this bandwidth
//!   divided by the packet length (instead of RATE).
//! - `HEADROOM` (integer, default the pool's, at most 65535): headroom of
//!   the packets.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//! - `END_CALL` (write handler and value): called after LIMIT packets
//!   (END_CALL and STOP are mutually exclusive).
//!
//! Packets' timestamps are set to the time they are made.
//!
//! Hot reconfiguration (`-R`): a RatedSource of the same name takes the old
//! one's count, the packets it sent against LIMIT, and its schedule.
//!
//! Drop reasons: `no buffer`: its thread's packet pool stayed empty for
//! a second (packets held or leaked downstream); until then it waits for
//! buffers and loses nothing.
//!
//! Handlers:
//! - `count` (read): packets generated.
//! - `reset` (write): resets the count, so LIMIT more packets go out.
//! - `rate` (read/write): the RATE.
//! - `active` (read/write): whether the source sends; reactivating does
//!   not release packets missed while inactive.
//! - `limit` (read/write): the LIMIT.
//! - `data` (read/write), `length` / `datasize` (read/write): the DATA and
//!   LENGTH (-1: DATA as given).
//!
//! Example:
//!
//!     RatedSource(\<0800>, 10, 1000) -> Queue -> ...

use super::gen::{
    data_batch, nonnegative_rate, parse_end_call, set_active, Limit, Pacer, MAX_BURST,
};
use super::Contents;
use crate::util::fmt_rate;
use paraclick_runtime::args::{Bandwidth, Bytes};
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, Element, HandlerCx, InitCx, Kind, PerThreadCount,
};
use paraclick_runtime::{Handler, StateCx};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Instant;

pub struct RatedSource {
    /// Its thread's pool dry: wait, then drop as `no buffer`.
    dry: super::gen::DryPool,
    contents: RwLock<Contents>,
    /// RATE, as f64 bits.
    rate: AtomicU64,
    pacer: Pacer,
    limit: Limit,
    active: AtomicBool,
    headroom: Option<usize>,
    push: bool,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("RatedSource", "0/1", "a", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .rate("rate", false)
        .drop_reasons(super::gen::POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RatedSource, String> {
    let mut a = cx.args();
    let data = a.read_p::<Bytes>("DATA").map(|b| b.0);
    let rate = a.read_p::<f64>("RATE");
    let limit = a.read_p::<i64>("LIMIT").unwrap_or(-1);
    let active = a.read_p::<bool>("ACTIVE").unwrap_or(true);
    let length = match a.read::<i64>("LENGTH") {
        Some(l) => Some(l),
        None => a.read::<i64>("DATASIZE"),
    };
    let bandwidth = a.read::<Bandwidth>("BANDWIDTH");
    let headroom = super::check_headroom(a.read::<usize>("HEADROOM"));
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let end_call = a.read::<String>("END_CALL");
    a.complete()?;
    let headroom = headroom?;
    if stop && end_call.is_some() {
        return Err("END_CALL and STOP are mutually exclusive".into());
    }
    let contents = Contents::new(
        data.unwrap_or_else(|| super::DEFAULT_DATA.to_vec()),
        length.unwrap_or(-1).max(-1),
    )?;
    let rate = match (rate, bandwidth) {
        (Some(_), Some(_)) => return Err("RATE and BANDWIDTH are mutually exclusive".into()),
        (Some(r), None) => r,
        (None, Some(Bandwidth(bw))) => {
            if contents.packet.is_empty() {
                return Err("BANDWIDTH needs a nonempty packet".into());
            }
            bw / contents.packet.len() as f64
        }
        (None, None) => 10.0,
    };
    if rate.is_nan() || rate < 0.0 || !rate.is_finite() {
        return Err(format!("RATE must be a nonnegative number, not {rate}"));
    }
    Ok(RatedSource {
        dry: super::gen::DryPool::default(),
        contents: RwLock::new(contents),
        rate: AtomicU64::new(rate.to_bits()),
        pacer: Pacer::new(rate),
        limit: Limit::new(limit, stop, end_call.map(parse_end_call))?,
        active: AtomicBool::new(active),
        headroom,
        push: cx.output_is_push(0),
        count: PerThreadCount::new(cx.nthreads),
    })
}

impl RatedSource {
    /// Up to `want` packets that are due at `now`.
    /// With none due, it says when the next is (`Cx::wake_at`), or that
    /// only a handler can give it one (inactive, LIMIT sent, RATE 0), so
    /// that its thread sleeps meanwhile.
    fn produce(&self, cx: &mut Cx<'_>, now: Instant, want: usize) -> Option<Batch> {
        if !self.active.load(Ordering::Relaxed) {
            cx.wake_when_written();
            return None;
        }
        if self.limit.exhausted() {
            self.limit.finish(cx);
            cx.wake_when_written();
            return None;
        }
        let due = self.pacer.take(now, want);
        if due == 0 {
            match self.pacer.next_due() {
                Some(t) => cx.wake_at(t),
                None => cx.wake_when_written(),
            }
            return None;
        }
        let n = self.limit.claim(due);
        if n == 0 {
            return None;
        }
        let b = {
            let c = self.contents.read().unwrap_or_else(|e| e.into_inner());
            data_batch(&c.packet, n, self.headroom, Some(cx.timestamp()))
        };
        if b.len() < n && !self.dry.short(cx, n - b.len(), 0) {
            self.limit.unclaim(n - b.len());
        }
        self.count.add(cx.thread(), b.len() as u64);
        (!b.is_empty()).then_some(b)
    }

    fn length_text(&self, _hx: &HandlerCx<'_>) -> String {
        let c = self.contents.read().unwrap_or_else(|e| e.into_inner());
        c.length.to_string()
    }

    fn write_length(&self, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        self.set_contents(None, Some(hx.arg::<i64>(v)?.max(-1)))
    }

    fn set_contents(&self, data: Option<Vec<u8>>, length: Option<i64>) -> Result<(), String> {
        let mut c = self.contents.write().unwrap_or_else(|e| e.into_inner());
        let data = data.unwrap_or_else(|| c.data.clone());
        let length = length.unwrap_or(c.length);
        *c = Contents::new(data, length)?;
        Ok(())
    }
}

impl crate::control::quit_watcher::Finishes for RatedSource {
    fn finished(&self) -> bool {
        self.limit.finished()
    }
}

impl Element for RatedSource {
    /// Whether its LIMIT is reached, to QuitWatcher.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, RatedSource, dyn crate::control::quit_watcher::Finishes => |e| e)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::rw(
            "rate",
            |e, _| fmt_rate(f64::from_bits(e.rate.load(Ordering::Relaxed))),
            |e, v, hx| {
                let r = nonnegative_rate(hx.arg(v)?)?;
                e.rate.store(r.to_bits(), Ordering::Relaxed);
                e.pacer.set_rate(r, hx.now());
                Ok(())
            },
        ),
        Handler::write("reset", |e, _, _| {
            e.count.reset();
            e.limit.reset();
            e.pacer.restart();
            Ok(())
        }),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                set_active(&e.active, &e.pacer, hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "limit",
            |e, _| e.limit.get().to_string(),
            |e, v, hx| {
                e.limit.set(hx.arg(v)?)?;
                Ok(())
            },
        ),
        Handler::rw(
            "data",
            |e, _| {
                let c = e.contents.read().unwrap_or_else(|e| e.into_inner());
                String::from_utf8_lossy(&c.data).into_owned()
            },
            |e, v, hx| e.set_contents(Some(hx.arg::<Bytes>(v)?.0), None),
        ),
        Handler::rw(
            "length",
            RatedSource::length_text,
            RatedSource::write_length,
        ),
        Handler::rw(
            "datasize",
            RatedSource::length_text,
            RatedSource::write_length,
        ),
    ];

    /// Hot reconfiguration: the count, the packets counted against LIMIT,
    /// and the pacing schedule carry over.
    fn take_state(&self, old: &Self, _sx: &mut StateCx<'_>) {
        self.count.add(0, old.count.get());
        self.limit.take_state(&old.limit);
        self.pacer.take_state(&old.pacer);
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.push {
            let t = ix.add_task();
            ix.wait_for_room(t);
        }
        Ok(())
    }

    #[inline]
    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let now = cx.now();
        match self.produce(cx, now, MAX_BURST) {
            Some(b) => {
                cx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let now = cx.now();
        self.produce(cx, now, max.max(1))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{reg, source as harness, try_source as try_harness};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn defaults_and_handlers() {
        let h = harness("RatedSource", 1);
        assert_eq!(h.read("rate").unwrap(), "10");
        assert_eq!(h.read("limit").unwrap(), "-1");
        assert_eq!(h.read("active").unwrap(), "true");
        assert_eq!(h.read("count").unwrap(), "0");
        assert_eq!(h.read("length").unwrap(), "-1");
        h.write("rate", "2500").unwrap();
        assert_eq!(h.read("rate").unwrap(), "2500");
        h.write("rate", "0.5").unwrap();
        assert_eq!(h.read("rate").unwrap(), "0.5");
        assert_err(
            h.write("rate", "-1"),
            "e.rate: expected nonnegative rate, not '-1'",
        );
        assert_err(h.write("rate", "fast"), "e.rate: expected real number");
        h.write("active", "false").unwrap();
        assert_eq!(h.read("active").unwrap(), "false");
        assert_err(
            h.write("active", "maybe"),
            "e.active: expected boolean (true or false)",
        );
        h.write("limit", "7").unwrap();
        assert_eq!(h.read("limit").unwrap(), "7");
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            (
                "RatedSource(RATE -3)",
                "e :: RatedSource: RATE must be a nonnegative number, not -3",
            ),
            (
                "RatedSource(x, abc)",
                "e :: RatedSource: RATE: expected real number",
            ),
            (
                "RatedSource(RATE 10, BANDWIDTH 1Mbps)",
                "e :: RatedSource: RATE and BANDWIDTH are mutually exclusive",
            ),
            (
                "RatedSource(STOP true, END_CALL x.y)",
                "e :: RatedSource: END_CALL and STOP are mutually exclusive",
            ),
            (
                "RatedSource(FOO 1)",
                "e :: RatedSource: unknown keyword FOO",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
        let h = harness("RatedSource(LENGTH 100, BANDWIDTH 8kbps)", 1);
        assert_eq!(h.read("rate").unwrap(), "10");
    }

    fn pull_router(decl: &str) -> Router {
        let conf = format!("e :: {decl}; e -> u :: Unqueue -> o :: TestSink;");
        Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"))
    }

    #[test]
    fn pull_returns_only_due_packets() {
        let r = pull_router("RatedSource(\\<0800aa>, 1, LENGTH 5)");
        let b = r
            .pull_from("e", 0, 32)
            .unwrap()
            .expect("first packet at once");
        assert_eq!(b.len(), 1);
        assert_eq!(b.as_slice()[0].data(), &[0x08, 0x00, 0xaa, 0, 0]);
        assert!(!b.as_slice()[0].timestamp().is_zero());
        // The next one is due a second later.
        assert!(r.pull_from("e", 0, 32).unwrap().is_none());
        assert_eq!(r.read_handler("e.count").unwrap(), "1");
        assert_eq!(r.read_handler("e.data").unwrap(), "\u{8}\0\u{fffd}");
    }

    #[test]
    fn limit_reset_and_inactive() {
        // An unpaceable rate: everything is due at once.
        let r = pull_router("RatedSource(RATE 1e12, LIMIT 5)");
        let b = r.pull_from("e", 0, 3).unwrap().unwrap();
        assert_eq!(b.len(), 3);
        let b = r.pull_from("e", 0, 3).unwrap().unwrap();
        assert_eq!(b.len(), 2);
        assert!(r.pull_from("e", 0, 3).unwrap().is_none());
        assert_eq!(r.read_handler("e.count").unwrap(), "5");
        r.write_handler("e.reset", "").unwrap();
        assert_eq!(r.read_handler("e.count").unwrap(), "0");
        r.write_handler("e.active", "false").unwrap();
        assert!(r.pull_from("e", 0, 3).unwrap().is_none());
        r.write_handler("e.active", "true").unwrap();
        assert_eq!(r.pull_from("e", 0, 8).unwrap().unwrap().len(), 5);
        // RATE 0 sends nothing.
        let r = pull_router("RatedSource(RATE 0)");
        assert!(r.pull_from("e", 0, 3).unwrap().is_none());
    }

    #[test]
    fn data_and_length_handlers() {
        let r = pull_router("RatedSource(ab, RATE 1e12, DATASIZE 4)");
        assert_eq!(r.read_handler("e.datasize").unwrap(), "4");
        let b = r.pull_from("e", 0, 1).unwrap().unwrap();
        assert_eq!(b.as_slice()[0].data(), b"ab\0\0");
        r.write_handler("e.data", "\\<01 02 03>").unwrap();
        r.write_handler("e.length", "-1").unwrap();
        let b = r.pull_from("e", 0, 1).unwrap().unwrap();
        assert_eq!(b.as_slice()[0].data(), &[1, 2, 3]);
        r.write_handler("e.length", "2").unwrap();
        let b = r.pull_from("e", 0, 1).unwrap().unwrap();
        assert_eq!(b.as_slice()[0].data(), &[1, 2]);
    }

    #[test]
    fn headroom() {
        let r = pull_router("RatedSource(RATE 1e12, HEADROOM 300)");
        let b = r.pull_from("e", 0, 1).unwrap().unwrap();
        assert!(b.as_slice()[0].headroom() >= 300);
    }

    /// Push context, end to end: LIMIT packets go out and STOP stops the
    /// router.
    #[test]
    fn push_limit_stop() {
        let h = harness("RatedSource(RATE 1e12, LIMIT 100, STOP true)", 1);
        h.router.run();
        assert_eq!(h.output(0).len(), 100);
        assert_eq!(h.read("count").unwrap(), "100");
    }

    /// Push context at RATE 1000 for 0.3 s of simulated time: exactly one
    /// packet per millisecond, the first at the start, so 300 by the stop
    /// at 0.3 s (Script's timer and the 301st packet fall due together,
    /// and at one instant the timers run first).
    #[test]
    fn push_rate_exact_in_simulated_time() {
        let r = crate::test_kit::build_simtime(
            &reg(),
            "s :: RatedSource(RATE 1000) -> c :: Counter -> Discard; Script(wait 0.3s, stop);",
        );
        crate::test_kit::run(&r);
        let n: u64 = r.read_handler("c.count").unwrap().parse().unwrap();
        assert_eq!(n, 300, "packets in 0.3 s");
        assert_eq!(r.read_handler("s.count").unwrap(), n.to_string());
    }

    /// Simulated time, RATE 1,000,000 for 0.3 s: its packets go in bursts
    /// of a millisecond's worth, so the count is the rate times the time
    /// within one burst, and the task runs about 32 times a burst (32
    /// packets a run) instead of once a packet.
    #[test]
    fn a_fast_source_keeps_its_rate_in_bursts_in_simulated_time() {
        let r = crate::test_kit::build_simtime(
            &reg(),
            "s :: RatedSource(RATE 1000000) -> c :: Counter -> Discard; Script(wait 0.3s, stop);",
        );
        crate::test_kit::run(&r);
        let n: u64 = r.read_handler("c.count").unwrap().parse().unwrap();
        assert!(
            (300_001 - 1_000..=300_001).contains(&n),
            "{n} packets in 0.3 s"
        );
        let runs = r.task_runs("s").unwrap();
        assert!(runs < 20_000, "{runs} task runs for {n} packets");
    }

    /// Real time: an inactive source's thread sleeps until a handler is
    /// written, and the write that activates it wakes it. Over 100 ms its
    /// task runs a few times (each wait ends by itself after 100 ms at
    /// the latest); polling and napping, it ran hundreds of times.
    #[test]
    fn an_inactive_source_sleeps_until_a_handler_write() {
        let r = paraclick_runtime::testing::build(
            &reg(),
            "s :: RatedSource(RATE 1000, ACTIVE false) -> c :: Counter -> Discard;",
        );
        let count = |r: &Router| r.read_handler("c.count").unwrap().parse::<u64>().unwrap();
        let written = std::sync::atomic::AtomicBool::new(false);
        paraclick_runtime::testing::run_until(&r, |r| {
            if !written.load(std::sync::atomic::Ordering::Relaxed) {
                if !r.write_waits().0 {
                    return false;
                }
                let runs = r.task_runs("s").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
                let ran = r.task_runs("s").unwrap() - runs;
                assert!(ran < 30, "the inactive source ran {ran} times in 100 ms");
                assert_eq!(count(r), 0);
                // The write comes while the thread waits (not just as a
                // wait ends by itself), so that it is the write that wakes it.
                while !r.write_waits().0 {
                    std::thread::yield_now();
                }
                r.write_handler("s.active", "true").unwrap();
                written.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            count(r) >= 10
        });
        assert!(r.write_waits().1 >= 1, "the write woke the thread");
    }

    /// Real time: a source faster than its thread's shortest nap (a
    /// packet every 5 µs) naps between bursts (one a millisecond; at
    /// least 20 in 300 ms on a loaded machine), where it polled, and keeps
    /// its average rate (never ahead of it; behind only by stalls of its
    /// thread, generously bounded on a loaded machine).
    #[test]
    fn a_fast_source_naps_between_bursts_and_keeps_its_rate() {
        let r = paraclick_runtime::testing::build(
            &reg(),
            "s :: RatedSource(RATE 200000) -> c :: Counter -> Discard;",
        );
        let t0 = std::time::Instant::now();
        paraclick_runtime::testing::run_until(&r, |_| {
            t0.elapsed() >= std::time::Duration::from_millis(300)
        });
        let secs = t0.elapsed().as_secs_f64();
        let n: f64 = r.read_handler("c.count").unwrap().parse().unwrap();
        let parks = r.parks();
        assert!(parks >= 20, "{parks} naps in {secs:.3} s");
        assert!(
            n <= 200_000.0 * secs + 1.0,
            "{n} packets in {secs:.3} s: ahead"
        );
        assert!(n >= 0.25 * 200_000.0 * 0.3, "{n} packets in {secs:.3} s");
    }

    #[test]
    fn a_hot_swap_carries_the_count_the_limit_and_the_schedule() {
        let old = pull_router("RatedSource(RATE 1e12, LIMIT 5)");
        assert_eq!(old.pull_from("e", 0, 3).unwrap().unwrap().len(), 3);
        let new = pull_router("RatedSource(RATE 1e12, LIMIT 5)");
        new.take_state_from(&old).unwrap();
        assert_eq!(new.read_handler("e.count").unwrap(), "3");
        assert_eq!(new.pull_from("e", 0, 8).unwrap().unwrap().len(), 2);
        assert!(new.pull_from("e", 0, 8).unwrap().is_none(), "limit");
        assert_eq!(new.read_handler("e.count").unwrap(), "5");

        // One packet per 100 s: the first goes at once, the next is not
        // due for 100 s, in the old router or the one that replaces it.
        let old = pull_router("RatedSource(RATE 0.01)");
        assert_eq!(old.pull_from("e", 0, 8).unwrap().unwrap().len(), 1);
        let new = pull_router("RatedSource(RATE 0.01)");
        new.take_state_from(&old).unwrap();
        assert!(
            new.pull_from("e", 0, 8).unwrap().is_none(),
            "the schedule goes on: nothing due"
        );
        // A source that has not sent yet starts at once.
        let fresh = pull_router("RatedSource(RATE 0.01)");
        fresh
            .take_state_from(&pull_router("RatedSource(RATE 0.01)"))
            .unwrap();
        assert_eq!(fresh.pull_from("e", 0, 8).unwrap().unwrap().len(), 1);
    }
}
