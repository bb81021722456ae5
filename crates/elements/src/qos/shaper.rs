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
}
