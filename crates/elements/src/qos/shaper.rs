//! # Shaper
//!
//! Shaper(RATE)
//!
//! Shapes traffic to a maximum rate (packets per second).
//!
//! A pull element that lets at most RATE packets per second through: each
//! pull on output 0 returns only as many packets as the rate allows at
//! that moment (possibly none). It depends on the timing of its pulls: if
//! it is pulled only sporadically it emits only sporadically; pulled
//! often, it emits RATE packets per second with low burstiness (a token
//! bucket 2 ms deep, at least one packet).
//!
//! A pull on output 0 that the rate turns away tells the pulling task
//! when the next packet will be allowed: an Unqueue (or device) pulling
//! through a Shaper sleeps until then instead of polling, so CPU follows
//! the shaped rate (under `--simtime`, the clock moves there). At RATE 0
//! it sleeps until a handler write.
//!
//! Pulls on the optional output 1 return packets that do not meet the
//! shaping condition at the time of the pull: when the rate allows a
//! packet, output 1 returns nothing; otherwise it pulls from the input
//! without shaping. Output 1 can sample in pull context.
//!
//! Ports: 1 input, 1-2 outputs. Processing: pull.
//!
//! Arguments:
//! - `RATE` (real, packets per second, >= 0).
//!
//! Handlers:
//! - `rate` (read/write): the RATE.
//! - `reset` (write): starts the token bucket again, full, at the
//!   router's moment (simulated time included).
//!
//! Example:
//!
//!     ... -> Queue -> Shaper(10)
//!       => ( [0] -> Print -> [0]; [1] -> [1] ) => RoundRobinSched -> ...

use super::rate::{check_rate, TokenBucket, Tokens, Unit};
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};
use std::time::Duration;

/// Depth of a Shaper's bucket, in time: small, for low burstiness.
pub const SHAPER_BURST: Duration = Duration::from_millis(2);

/// Shaper and BandwidthShaper: a pull element over a token bucket.
pub struct Shaper {
    bucket: TokenBucket,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Shaper", "1/1-2", "l", make_packets)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make_packets(cx: &mut ConfigCx<'_>) -> Result<Shaper, String> {
    make(cx, Unit::Packets)
}

pub(crate) fn make(cx: &mut ConfigCx<'_>, unit: Unit) -> Result<Shaper, String> {
    let mut a = cx.args();
    let rate = unit.read_rate(&mut a);
    a.complete()?;
    let rate = check_rate(rate)?;
    Ok(Shaper {
        bucket: TokenBucket::new(unit, rate, Some(SHAPER_BURST), None),
    })
}

impl Shaper {
    /// Up to `max` packets that the rate allows now.
    fn shaped(&self, cx: &mut Cx<'_>, max: usize) -> Option<Batch> {
        let now = cx.now();
        match self.bucket.unit {
            Unit::Packets => {
                let k = self.bucket.with(|s| s.whole(now)).min(max);
                if k == 0 {
                    self.hint(cx, now, 1.0);
                    return None;
                }
                let b = cx.pull(0, k)?;
                let n = b.len() as f64;
                self.bucket.with(|s| s.tokens -= n);
                Some(b).filter(|b| !b.is_empty())
            }
            Unit::Bytes => {
                // Sizes are known only after the pull: take one packet at
                // a time while the bucket is not in debt.
                let mut out: Option<Batch> = None;
                for _ in 0..max {
                    if !self.bucket.with(|s| s.ready(now, f64::MIN_POSITIVE)) {
                        if out.is_none() {
                            self.hint(cx, now, f64::MIN_POSITIVE);
                        }
                        break;
                    }
                    let Some(b) = cx.pull(0, 1) else { break };
                    let cost: f64 = b.as_slice().iter().map(|p| Unit::Bytes.cost(p)).sum();
                    if b.is_empty() {
                        break;
                    }
                    self.bucket.with(|s| s.tokens -= cost);
                    crate::sched::prio_sched::gather(&mut out, b);
                }
                out
            }
        }
    }
}

impl Shaper {
    /// The bucket is short (fewer than `need` tokens at `now`): tells the
    /// puller's task when it will next release a packet, so that its
    /// worker sleeps until then (simulated time moves there) instead of
    /// polling; at RATE 0, only a handler write (`rate`, `reset`) does.
    fn hint(&self, cx: &mut Cx<'_>, now: std::time::Instant, need: f64) {
        match self.bucket.next_ready(now, need) {
            Some(t) => cx.wake_at(t),
            None => cx.wake_when_written(),
        }
    }
}

impl Element for Shaper {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "rate",
            |e, _| e.bucket.unit.show(e.bucket.rate()),
            |e, v, hx| e.bucket.write_rate(v, hx),
        ),
        Handler::write("reset", |e, _, hx| {
            e.bucket.reset(hx.now());
            Ok(())
        }),
    ];

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        let max = max.max(1);
        if port == 0 {
            return self.shaped(cx, max);
        }
        let now = cx.now();
        let need = match self.bucket.unit {
            Unit::Packets => 1.0,
            Unit::Bytes => f64::MIN_POSITIVE,
        };
        if self.bucket.with(|s| s.ready(now, need)) {
            None
        } else {
            cx.pull(0, max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::router;
    use crate::test_kit::{fill, pkts, reg};
    use paraclick_runtime::testing::{advance, assert_err, build_simtime};
    use std::time::Duration;

    #[test]
    fn passes_at_most_the_bucket_now_then_the_rate() {
        // Simulated time. 1000 pkt/s: a 2 ms bucket holds 2 packets.
        let r = build_simtime(
            &reg(),
            "Idle -> q :: Queue(100) -> s :: Shaper(1000); s -> Unqueue(ACTIVE false) -> TestSink;",
        );
        fill(&r, "q", pkts(10, 60));
        let b = r.pull_from("s", 0, 32).unwrap().unwrap();
        assert_eq!(b.len(), 2);
        // Then one packet per ms: none until 1 ms has passed.
        assert!(r.pull_from("s", 0, 32).unwrap().is_none());
        advance(&r, Duration::from_micros(999));
        assert!(r.pull_from("s", 0, 32).unwrap().is_none());
        advance(&r, Duration::from_micros(501));
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 1);
        advance(&r, Duration::from_millis(30));
        let b = r.pull_from("s", 0, 32).unwrap().unwrap();
        assert_eq!(b.len(), 2, "the bucket caps what 30 ms earned");
        assert_eq!(r.read_handler("s.rate").unwrap(), "1000");
        r.write_handler("s.rate", "5").unwrap();
        assert_eq!(r.read_handler("s.rate").unwrap(), "5");
        assert_err(
            r.write_handler("s.rate", "-3"),
            "s.rate: RATE must be a nonnegative number, not -3",
        );
    }

    #[test]
    fn a_new_rate_counts_from_the_routers_moment() {
        // Simulated time. Shaper(1000) holds 2 packets (2 ms); a second
        // later the rate becomes 2000 (4 deep): the second passed at the
        // old rate, so the bucket holds the old 2, and the new rate adds
        // 2.5 in 1.25 ms.
        let r = build_simtime(
            &reg(),
            "Idle -> q :: Queue(100) -> s :: Shaper(1000); s -> Unqueue(ACTIVE false) -> TestSink;",
        );
        fill(&r, "q", pkts(20, 60));
        advance(&r, Duration::from_secs(1));
        r.write_handler("s.rate", "2000").unwrap();
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 2);
        assert!(r.pull_from("s", 0, 32).unwrap().is_none());
        advance(&r, Duration::from_micros(1250));
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 2);
        assert_eq!(r.read_handler("s.rate").unwrap(), "2000");
    }

    #[test]
    fn reset_fills_the_bucket_at_the_routers_moment() {
        // Simulated time. Shaper(1000): 2 packets, then one a ms.
        let r = build_simtime(
            &reg(),
            "Idle -> q :: Queue(100) -> s :: Shaper(1000); s -> Unqueue(ACTIVE false) -> TestSink;",
        );
        fill(&r, "q", pkts(20, 60));
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 2);
        assert!(r.pull_from("s", 0, 32).unwrap().is_none());
        r.write_handler("s.reset", "").unwrap();
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 2);
        // Rate 0 after a reset: the full bucket's one packet, then none.
        r.write_handler("s.rate", "0").unwrap();
        r.write_handler("s.reset", "").unwrap();
        advance(&r, Duration::from_secs(1));
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("s", 0, 32).unwrap().is_none());
    }

    #[test]
    fn output_1_returns_what_the_rate_does_not_allow() {
        let r = router("Queue(100) -> s :: Shaper(0.001)", 2);
        fill(&r, "q", pkts(5, 60));
        // The full bucket holds one packet: output 1 yields nothing.
        assert!(r.pull_from("s", 1, 8).unwrap().is_none());
        assert_eq!(r.pull_from("s", 0, 8).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("s", 0, 8).unwrap().is_none());
        assert_eq!(r.pull_from("s", 1, 8).unwrap().unwrap().len(), 4);
    }

    #[test]
    fn bandwidth_shaper_counts_bytes() {
        // 5 kB/s: a 2 ms bucket is 10 bytes; one 1000-byte packet passes
        // and puts it 990 bytes in debt (198 ms).
        let r = router("Queue(100) -> s :: BandwidthShaper(40kbps)", 1);
        fill(&r, "q", pkts(5, 1000));
        assert_eq!(r.pull_from("s", 0, 32).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("s", 0, 32).unwrap().is_none());
        assert_eq!(r.read_handler("s.rate").unwrap(), "5000Bps");
        r.write_handler("s.rate", "1MBps").unwrap();
        assert_eq!(r.read_handler("s.rate").unwrap(), "1000000Bps");
        assert!(super::super::test_util::bad(
            "Queue -> BandwidthShaper(fast) -> Discard"
        ));
        assert!(super::super::test_util::bad("Queue -> Shaper -> Discard"));
    }

    #[test]
    fn an_unqueue_behind_a_shaper_wakes_at_its_release_times() {
        // Simulated time, 300.5 ms. The Shaper says when its bucket next
        // holds a packet, so the clock moves to each release and the
        // Unqueue takes each packet then: the full bucket (2) at once,
        // then one a ms. Without the hint the clock jumps from the start
        // to the Script's stop: the first bucket only. BandwidthShaper:
        // 1000 B/s, 100-byte packets: one every 100 ms after the first.
        for (shaper, want) in [("Shaper(1000)", 302), ("BandwidthShaper(8kbps)", 4)] {
            let r = build_simtime(
                &reg(),
                &format!(
                    "Idle -> q :: Queue(10000) -> s :: {shaper} -> u :: Unqueue \
                     -> o :: Counter -> Discard; Script(wait 0.3005s, stop);"
                ),
            );
            fill(&r, "q", pkts(5000, 100));
            paraclick_runtime::testing::run(&r);
            let n: u64 = r.read_handler("o.count").unwrap().parse().unwrap();
            assert_eq!(n, want, "{shaper}");
            // A few runs a release (simulated time moves after two idle
            // rounds), not a run a poll.
            let runs = r.task_runs("u").unwrap();
            assert!(
                runs <= 4 * want + 10,
                "{shaper}: {runs} runs for {n} packets"
            );
        }
    }

    #[test]
    fn a_worker_behind_a_shaper_sleeps_between_releases() {
        // Real time: Shaper(200) lets a packet through every 5 ms; over
        // 300 ms the Unqueue's worker should run its task about once a
        // release (it polled: a run every few microseconds, tens of
        // thousands). The bound is generous: 20 runs a packet.
        for shaper in ["Shaper(200)", "BandwidthShaper(160kbps)"] {
            let r = std::sync::Arc::new(crate::test_kit::build(
                &reg(),
                &format!(
                    "Idle -> q :: Queue(10000) -> s :: {shaper} -> u :: Unqueue \
                     -> o :: Counter -> Discard;"
                ),
            ));
            fill(&r, "q", pkts(5000, 100));
            let stop = r.stopper();
            let r2 = r.clone();
            let h = std::thread::spawn(move || r2.run());
            std::thread::sleep(Duration::from_millis(300));
            stop.stop();
            let _ = h.join();
            let n: u64 = r.read_handler("o.count").unwrap().parse().unwrap();
            let runs = r.task_runs("u").unwrap();
            assert!(n >= 2, "{shaper}: {n} packets");
            assert!(
                runs <= 20 * n + 100,
                "{shaper}: {runs} runs for {n} packets"
            );
        }
    }
}
