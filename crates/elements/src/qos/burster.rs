//! # Burster
//!
//! Burster(INTERVAL [, BURST])
//!
//! Pull-to-push converter.
//!
//! Burster is a variant of TimedUnqueue with a default BURST of 8 rather
//! than 1: every INTERVAL, it pulls at most BURST packets from its input
//! and pushes them out its output.
//!
//! Ports: 1 input (pull), 1 output (push). It owns a timer.
//!
//! Arguments:
//! - `INTERVAL` (time, > 0).
//! - `BURST` (integer, >= 1, default 8).
//!
//! Handlers:
//! - `interval` (read/write), `burst` (read/write).
//! - `count` (read): packets moved.
//!
//! Example:
//!
//!     ... -> Queue -> Burster(0.1) -> ...   // up to 80 packets a second

use super::timed_unqueue::{make_with_burst, TimedUnqueue};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::element("Burster", "1/1", "l/h", make)
        .shared("a rate or schedule shared by all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimedUnqueue, String> {
    make_with_burst(cx, 8)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf};
    use crate::test_kit::{build_simtime, fill, handler, pkts, reg, run, sink_ms};

    #[test]
    fn moves_eight_packets_per_interval_by_default() {
        // Simulated time: the timer fires at 50, 100 and 150 ms (the
        // Script stops the run at 175 ms), and each time 8 packets leave,
        // stamped with that moment.
        let r = build_simtime(
            &reg(),
            "Idle -> q :: Queue(1000) -> u :: Burster(0.05) -> SetTimestamp -> o :: TestSink;
             Script(wait 175ms, stop);",
        );
        fill(&r, "q", pkts(500, 60));
        run(&r);
        let want: Vec<i64> = (1..=3).flat_map(|k| [50 * k; 8]).collect();
        assert_eq!(sink_ms(&r, "o"), want, "8 packets every 50 ms");
        assert_eq!(handler(&r, "u.burst"), "8");
        assert_eq!(handler(&r, "u.interval"), "0.050000");
        assert_eq!(handler(&r, "u.count"), "24");
    }

    #[test]
    fn burst_argument_and_bad_config() {
        let r = conf("Idle -> q :: Queue(1000) -> u :: Burster(0.05, 2) -> o :: TestSink;");
        assert_eq!(r.read_handler("u.burst").unwrap(), "2");
        assert!(bad("Idle -> Queue -> Burster -> Discard;"));
        assert!(bad("Idle -> Queue -> Burster(0) -> Discard;"));
        assert!(bad("Idle -> Queue -> Burster(1, 0) -> Discard;"));
    }
}
