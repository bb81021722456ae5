//! # RatedUnqueue
//!
//! RatedUnqueue(RATE, [keywords BURST_DURATION, BURST_SIZE])
//!
//! Pull-to-push converter at a rate in packets per second.
//!
//! Pulls packets at RATE packets per second from its input and pushes them
//! out its output. It is implemented with Click's token bucket: it starts
//! full and holds 20 ms worth of tokens unless BURST_DURATION or
//! BURST_SIZE says otherwise (a whole number of packets, at least one),
//! and refills once a millisecond by the rate's share rounded down to a
//! 2^32-th of the bucket, so rates that do not divide evenly run a little
//! slow, as in Click (RATE 2 with the default bucket moves a packet every
//! 501 ms). Each task run moves at most the whole tokens available, and
//! at most 32 packets. Its task sleeps while the queues upstream are
//! empty, and a push into one wakes it (and its thread).
//!
//! Ports: 1 input (pull), 1 output (push). It owns a task.
//!
//! Arguments:
//! - `RATE` (real, packets per second, >= 0): token bucket fill rate.
//! - `BURST_DURATION` (time): the bucket holds RATE * BURST_DURATION.
//! - `BURST_SIZE` (integer): the bucket holds this many packets.
//!
//! Handlers:
//! - `rate` (read/write): the RATE (the depth follows unless BURST_SIZE
//!   was given).
//! - `count` (read): packets moved.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Queue -> RatedUnqueue(1000) -> ToDevice(eth1);

use super::rate::{check_rate, read_burst, TickBucket, Unit, BYTE_RESERVE};
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};

/// At most this many packets per task run.
const MAX_BURST: usize = 32;

/// RatedUnqueue and BandwidthRatedUnqueue.
pub struct RatedUnqueue {
    bucket: Rated,
    count: PerThreadCount,
}

/// A rate in packets or in bytes (both Click's tick arithmetic, see
/// [`TickBucket`]).
pub(crate) enum Rated {
    Packets(TickBucket),
    Bytes(TickBucket),
}

impl Rated {
    pub(crate) fn new(
        unit: Unit,
        rate: f64,
        dur: Option<std::time::Duration>,
        size: Option<f64>,
    ) -> Rated {
        match unit {
            Unit::Packets => {
                Rated::Packets(TickBucket::new(rate, dur, size, std::time::Instant::now()))
            }
            Unit::Bytes => Rated::Bytes(TickBucket::bytes(
                rate,
                dur,
                size,
                std::time::Instant::now(),
            )),
        }
    }

    /// Full, at the router's start.
    pub(crate) fn start(&self, now: std::time::Instant) {
        match self {
            Rated::Packets(b) | Rated::Bytes(b) => b.start(now),
        }
    }

    pub(crate) fn show_rate(&self) -> String {
        match self {
            Rated::Packets(b) | Rated::Bytes(b) => b.unit().show(b.rate()),
        }
    }

    pub(crate) fn write_rate(
        &self,
        v: &str,
        hx: &paraclick_runtime::HandlerCx<'_>,
    ) -> Result<(), String> {
        match self {
            Rated::Packets(b) | Rated::Bytes(b) => b.write_rate(v, hx),
        }
    }
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("RatedUnqueue", "1/1", "l/h", make_packets)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make_packets(cx: &mut ConfigCx<'_>) -> Result<RatedUnqueue, String> {
    make(cx, Unit::Packets)
}

pub(crate) fn make(cx: &mut ConfigCx<'_>, unit: Unit) -> Result<RatedUnqueue, String> {
    let mut a = cx.args();
    let rate = unit.read_rate(&mut a);
    let (dur, size) = read_burst(unit, &mut a);
    a.complete()?;
    let rate = check_rate(rate)?;
    Ok(RatedUnqueue {
        bucket: Rated::new(unit, rate, dur, size),
        count: PerThreadCount::new(cx.nthreads),
    })
}

/// Pulls what a bucket allows now from input 0 of the running element,
/// at most `max` packets, charging the bucket. A bucket found short says
/// when it will have a token ([`Cx::wake_at`]), so that simulated time
/// moves there rather than past it.
pub(crate) fn pull_rated(bucket: &Rated, cx: &mut Cx<'_>, max: usize) -> Option<Batch> {
    let now = cx.now();
    match bucket {
        Rated::Packets(bucket) => {
            let k = bucket.whole(now).min(max);
            if k == 0 {
                if let Some(t) = bucket.next_ready(now) {
                    cx.wake_at(t);
                }
                return None;
            }
            let b = cx.pull(0, k)?;
            bucket.take(b.len());
            Some(b).filter(|b| !b.is_empty())
        }
        Rated::Bytes(bucket) => {
            // Bursts that the bucket surely allows whole (packets of at
            // most BYTE_RESERVE bytes, the bucket's reserve), one refill
            // and one charge each: a fast metalink moves up to `max`
            // packets with one pull, a slow one a packet at a time.
            let mut out: Option<Batch> = None;
            let mut sent = 0;
            while sent < max {
                let k = (bucket.sure(now, BYTE_RESERVE) as usize).min(max - sent);
                if k == 0 {
                    if let Some(t) = bucket.next_ready(now) {
                        cx.wake_at(t);
                    }
                    break;
                }
                let Some(b) = cx.pull(0, k) else { break };
                let got = b.len();
                if got == 0 {
                    break;
                }
                let cost: u64 = b
                    .as_slice()
                    .iter()
                    .map(|p| Unit::Bytes.cost(p) as u64)
                    .sum();
                bucket.charge(cost);
                sent += got;
                crate::sched::prio_sched::gather(&mut out, b);
                if got < k {
                    // The input ran dry.
                    break;
                }
            }
            out
        }
    }
}

impl Element for RatedUnqueue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "rate",
            |e, _| e.bucket.show_rate(),
            |e, v, hx| e.bucket.write_rate(v, hx),
        ),
        Handler::read("count", |e, _| e.count.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.bucket.start(ix.now());
        // Asleep while the queues upstream are empty (a push wakes it and
        // its worker); short of tokens with packets waiting, it says when
        // to run again (pull_rated).
        let t = ix.add_task();
        ix.sleep_when_empty(t);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let Some(b) = pull_rated(&self.bucket, cx, MAX_BURST) else {
            return false;
        };
        self.count.add(cx.thread(), b.len() as u64);
        cx.push(0, b);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::bad;
    use crate::test_kit::{fill, pkts};
    use paraclick_runtime::testing::TestSink;

    /// `conf` in simulated time, run until its Script stops it.
    fn sim_run(conf: &str, fill_q: Vec<paraclick_packet::Packet>) -> paraclick_runtime::Router {
        let r = paraclick_runtime::testing::build_simtime(&crate::test_kit::reg(), conf);
        fill(&r, "q", fill_q);
        paraclick_runtime::testing::run(&r);
        r
    }

    #[test]
    fn moves_at_the_rate_plus_the_bucket() {
        // Simulated time, 300.5 ms: the full 20-packet bucket at once,
        // then one packet per ms (the element wakes when a token is due).
        let r = sim_run(
            "Idle -> q :: Queue(10000) -> u :: RatedUnqueue(1000) -> o :: TestSink;
             Script(wait 0.3005s, stop);",
            pkts(5000, 60),
        );
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 320);
        assert_eq!(r.read_handler("u.count").unwrap(), "320");
    }

    #[test]
    fn rates_that_do_not_divide_a_tick_run_slow_as_in_click() {
        // Click's bucket arithmetic: RATE 2 moves a packet every 501 ms
        // (20 in 10 s, not 21); RATE 100 with a one-packet bucket every
        // 11 ms (910 in 10 s, not 1001).
        for (u, want) in [
            ("RatedUnqueue(2)", "20"),
            ("RatedUnqueue(100, BURST_SIZE 1)", "910"),
        ] {
            let r = sim_run(
                &format!(
                    "InfiniteSource -> q :: Queue(10) -> u :: {u} -> o :: Counter -> Discard;
                     Script(wait 10s, stop);"
                ),
                Vec::new(),
            );
            assert_eq!(r.read_handler("o.count").unwrap(), want, "{u}");
        }
    }

    #[test]
    fn a_new_rate_counts_from_the_routers_moment() {
        // Simulated time. RatedUnqueue(1000) holds 20 packets (20 ms); a
        // second later the rate becomes 2000 (40 deep): the second passed
        // at the old rate, so the first task run finds the old 20 (the
        // Counter stops the router at them).
        let r = paraclick_runtime::testing::build_simtime(
            &crate::test_kit::reg(),
            "Idle -> q :: Queue(100) -> u :: RatedUnqueue(1000) -> c :: Counter(COUNT_CALL 20 stop) -> TestSink;",
        );
        fill(&r, "q", pkts(100, 60));
        paraclick_runtime::testing::advance(&r, std::time::Duration::from_secs(1));
        r.write_handler("u.rate", "2000").unwrap();
        paraclick_runtime::testing::run(&r);
        assert_eq!(r.read_handler("u.count").unwrap(), "20");
    }

    #[test]
    fn burst_size_and_handlers() {
        // RATE 0: only the full bucket's 7 packets ever go (50 simulated
        // ms).
        let r = sim_run(
            "Idle -> q :: Queue(100) -> u :: RatedUnqueue(0, BURST_SIZE 7) -> o :: TestSink;
             Script(wait 50ms, stop);",
            pkts(50, 60),
        );
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 7);
        assert_eq!(r.read_handler("u.rate").unwrap(), "0");
        r.write_handler("u.rate", "250").unwrap();
        assert_eq!(r.read_handler("u.rate").unwrap(), "250");
        assert!(bad("Idle -> Queue -> RatedUnqueue -> Discard;"));
        assert!(bad("Idle -> Queue -> RatedUnqueue(-1) -> Discard;"));
        assert!(bad(
            "Idle -> Queue -> RatedUnqueue(10, BURST_SIZE 3, BURST_DURATION 1) -> Discard;"
        ));
    }

    #[test]
    fn a_fast_bandwidth_rated_unqueue_pulls_bursts() {
        // 1 GB/s: the bucket allows every burst whole, so each run pulls
        // up to 32 packets at once (it pulled one at a time); a slow one
        // still moves a packet at a time and keeps its rate (above).
        let r = paraclick_runtime::testing::build_simtime(
            &super::super::test_util::reg_with_pull_log(),
            "Idle -> q :: Queue(10000) -> l :: PullLog -> u :: BandwidthRatedUnqueue(1GBps) -> o :: TestSink;
             Script(wait 10ms, stop);",
        );
        fill(&r, "q", pkts(640, 100));
        paraclick_runtime::testing::run(&r);
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 640);
        let pulls: usize = r.read_handler("l.pulls").unwrap().parse().unwrap();
        assert!(pulls <= 40, "{pulls} pulls for 640 packets");
    }

    #[test]
    fn an_unqueue_with_nothing_queued_sleeps_until_a_push() {
        // Real time: a packet every 100 ms, 5 of them. Between them the
        // queue is empty: the task sleeps on its empty notifier and is
        // woken by the next push (it polled: a run every few
        // microseconds, then one every nap, thousands in all).
        for class in ["RatedUnqueue(1000)", "BandwidthRatedUnqueue(1Mbps)"] {
            let r = std::sync::Arc::new(crate::test_kit::build(
                &crate::test_kit::reg(),
                &format!(
                    "RatedSource(RATE 10, LIMIT 5, STOP false) -> q :: Queue(100) -> u :: {class} \
                     -> o :: Counter -> Discard;"
                ),
            ));
            let stop = r.stopper();
            let r2 = r.clone();
            let h = std::thread::spawn(move || r2.run());
            let t0 = std::time::Instant::now();
            while r.read_handler("o.count").unwrap() != "5" && t0.elapsed().as_secs() < 20 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            stop.stop();
            let _ = h.join();
            assert_eq!(r.read_handler("o.count").unwrap(), "5", "{class}");
            let runs = r.task_runs("u").unwrap();
            assert!(runs < 100, "{class}: {runs} runs for 5 packets");
        }
    }

    #[test]
    fn what_a_scheduler_holds_is_not_stranded() {
        // DRR holds q0's 1000-byte packet (it did not fit its first
        // quantum; q1's 100 bytes went), both queues are empty, and the
        // bucket is short for 100 ms after q1's packet: the unqueuer must
        // stay awake for the held packet rather than sleep on the empty
        // queues.
        let r = paraclick_runtime::testing::build_simtime(
            &crate::test_kit::reg(),
            "Idle -> q0 :: Queue(10) -> [0]s :: DRRSched; Idle -> q1 :: Queue(10) -> [1]s;
             s -> u :: BandwidthRatedUnqueue(1000, BURST_BYTES 1) -> o :: TestSink;
             Script(wait 2s, stop);",
        );
        fill(&r, "q0", pkts(1, 1000));
        fill(&r, "q1", pkts(1, 100));
        paraclick_runtime::testing::run(&r);
        let lens: Vec<usize> = r
            .element::<TestSink>("o")
            .unwrap()
            .take()
            .iter()
            .map(|p| p.len())
            .collect();
        assert_eq!(lens, [100, 1000]);
    }

    #[test]
    fn bandwidth_rated_unqueue_counts_bytes() {
        // 100 kB/s, 20 ms bucket = 2000 bytes: 1000-byte packets. Simulated
        // time, 300.5 ms: two from the full bucket, a third as soon as the
        // bucket holds anything (it may go into debt), then one per 10 ms.
        let r = sim_run(
            "Idle -> q :: Queue(10000) -> u :: BandwidthRatedUnqueue(800kbps) -> o :: TestSink;
             Script(wait 0.3005s, stop);",
            pkts(2000, 1000),
        );
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 33);
        assert_eq!(r.read_handler("u.rate").unwrap(), "100000Bps");
        let r = sim_run(
            "Idle -> q :: Queue(100) -> u :: BandwidthRatedUnqueue(0, BURST_BYTES 2500) -> o :: TestSink;
             Script(wait 50ms, stop);",
            pkts(10, 1000),
        );
        // 2500 bytes: two packets fit, the third goes on the remaining
        // 500 and leaves the bucket in debt.
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 3);
    }
}
