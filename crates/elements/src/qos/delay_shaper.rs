//! # DelayShaper
//!
//! DelayShaper(DELAY)
//!
//! Shapes traffic to meet delay requirements.
//!
//! Pulls packets from its input and delays each for at least DELAY: a
//! packet with timestamp T is emitted no earlier than T + DELAY. On
//! output, the packet's timestamp is set to the current time. A packet
//! without a timestamp (as in Click, one whose seconds part is zero) is
//! stamped with the time it is pulled, so it is held DELAY. Both input
//! and output are pull (unlike DelayUnqueue): the packet being delayed is
//! held here, at most one at a time, and pulls return nothing until it is
//! due. SetTimestamp can stamp packets beforehand.
//!
//! Ports: 1 input, 1 output. Processing: pull.
//!
//! Arguments:
//! - `DELAY` (time, such as `0.5` or `20ms`).
//!
//! Handlers:
//! - `delay` (read/write): the DELAY.
//!
//! Example:
//!
//!     ... -> SetTimestamp -> Queue -> DelayShaper(20ms) -> ToDevice(eth0);

use paraclick_packet::anno::Timestamp;
use paraclick_packet::Packet;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub struct DelayShaper {
    /// DELAY in nanoseconds.
    delay: AtomicU64,
    held: Mutex<Option<Packet>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("DelayShaper", "1/1", "l", make)
        .shared("a rate or schedule shared by all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<DelayShaper, String> {
    let mut a = cx.args();
    let delay = a.read_mp::<Duration>("DELAY");
    a.complete()?;
    Ok(DelayShaper {
        delay: AtomicU64::new(delay.as_nanos() as u64),
        held: Mutex::new(None),
    })
}

/// Stamps a packet just pulled that has no timestamp with `now`, the time
/// it was pulled: as in Click, a timestamp whose seconds part is zero
/// counts as not set.
pub(crate) fn stamp_if_unset(p: Option<Packet>, now: Timestamp) -> Option<Packet> {
    p.map(|mut p| {
        if p.timestamp().sec() == 0 {
            p.set_timestamp(now);
        }
        p
    })
}

/// When a packet stamped `ts` is due, `delay_ns` later.
pub(crate) fn due(ts: Timestamp, delay_ns: u64) -> Timestamp {
    Timestamp(ts.0.saturating_add(delay_ns as i64))
}

/// Reads and writes a `delay` handler value.
pub(crate) fn show_delay(ns: u64) -> String {
    let d = Duration::from_nanos(ns);
    format!("{}.{:06}", d.as_secs(), d.subsec_micros())
}

impl Element for DelayShaper {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "delay",
        |e, _| show_delay(e.delay.load(Ordering::Relaxed)),
        |e, v, hx| {
            let d: Duration = hx.arg(v)?;
            e.delay.store(d.as_nanos() as u64, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let delay = self.delay.load(Ordering::Relaxed);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Packet> = Vec::new();
        let now = cx.timestamp();
        while out.len() < max.max(1) {
            if held.is_none() {
                let p = cx.pull(0, 1).and_then(|b| b.into_iter().next());
                *held = stamp_if_unset(p, now);
            }
            let Some(p) = held.as_ref() else { break };
            let at = due(p.timestamp(), delay);
            if at > now {
                // The puller is told when to come back: under simulated
                // time the clock stops there rather than passing it.
                let wait = u64::try_from(at.0.saturating_sub(now.0))
                    .unwrap_or(0)
                    .max(1);
                if let Some(t) = cx.now().checked_add(Duration::from_nanos(wait)) {
                    cx.wake_at(t);
                }
                break;
            }
            if let Some(mut p) = held.take() {
                p.set_timestamp(now);
                out.push(p);
            }
        }
        (!out.is_empty()).then(|| Batch::from(out))
    }

    fn queued(&self) -> usize {
        usize::from(self.held.lock().map(|h| h.is_some()).unwrap_or(false))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, router};
    use crate::test_kit::{fill, tagged, tags};
    use paraclick_packet::anno::Timestamp;
    use std::time::Duration;

    #[test]
    fn holds_a_packet_until_its_timestamp_plus_delay() {
        let r = router("Queue(100) -> s :: DelayShaper(1)", 1);
        let now = Timestamp::now();
        let mut old = tagged(1, 60);
        old.set_timestamp(Timestamp(now.0 - 2_000_000_000));
        let mut old2 = tagged(2, 60);
        old2.set_timestamp(Timestamp(now.0 - 1_500_000_000));
        let mut fresh = tagged(3, 60);
        fresh.set_timestamp(now);
        let mut old3 = tagged(4, 60);
        old3.set_timestamp(Timestamp(now.0 - 3_000_000_000));
        fill(&r, "q", vec![old, old2, fresh, old3]);
        let b = r.pull_from("s", 0, 8).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), vec![1, 2]);
        // Output timestamps are the current time.
        assert!(b.as_slice()[0].timestamp() >= now);
        // The fresh packet is held (one second), and blocks the next.
        assert!(r.pull_from("s", 0, 8).unwrap().is_none());
        assert_eq!(r.total_queued(), 2);
        r.write_handler("s.delay", "0").unwrap();
        assert_eq!(r.read_handler("s.delay").unwrap(), "0.000000");
        let b = r.pull_from("s", 0, 8).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), vec![3, 4]);
        r.write_handler("s.delay", "20ms").unwrap();
        assert_eq!(r.read_handler("s.delay").unwrap(), "0.020000");
        assert!(bad("Idle -> Queue -> DelayShaper -> Discard;"));
    }

    #[test]
    fn holds_a_packet_until_due_on_the_routers_clock() {
        // Simulated time: a packet stamped at the start is held 1 ns less
        // than DELAY and released at DELAY, stamped with that moment.
        leaves_10ms_after_sim_start(|start| start);
    }

    #[test]
    fn an_unstamped_packet_is_held_delay_from_its_pull() {
        // Stamped 0.5 s after the epoch: not set, for Click; without the
        // rule it would be long due and leave at once.
        leaves_10ms_after_sim_start(|_| 500_000_000);
    }

    /// A packet stamped `stamp(start)` (simulated time starts at `start`
    /// ns) is held by DelayShaper(10ms) until exactly 10 ms after start,
    /// and leaves stamped then.
    fn leaves_10ms_after_sim_start(stamp: impl Fn(i64) -> i64) {
        let r = paraclick_runtime::testing::build_simtime(
            &crate::test_kit::reg(),
            "Idle -> q :: Queue(100) -> s :: DelayShaper(10ms); s -> Unqueue(ACTIVE false) -> TestSink;",
        );
        let start = paraclick_runtime::time::SIM_START_SEC * 1_000_000_000;
        let mut p = tagged(1, 60);
        p.set_timestamp(Timestamp(stamp(start)));
        fill(&r, "q", vec![p]);
        assert!(r.pull_from("s", 0, 8).unwrap().is_none());
        paraclick_runtime::testing::advance(
            &r,
            Duration::from_millis(10) - Duration::from_nanos(1),
        );
        assert!(r.pull_from("s", 0, 8).unwrap().is_none());
        paraclick_runtime::testing::advance(&r, Duration::from_nanos(1));
        let b = r.pull_from("s", 0, 8).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), vec![1]);
        assert_eq!(b.as_slice()[0].timestamp(), Timestamp(start + 10_000_000));
    }
}
