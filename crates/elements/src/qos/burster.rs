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
    use super::super::test_util::{bad, conf, run_for};
    use crate::test_kit::{fill, pkts};
    use paraclick_runtime::testing::TestSink;

    #[test]
    fn moves_eight_packets_per_interval_by_default() {
        let r = conf("Idle -> q :: Queue(1000) -> u :: Burster(0.05) -> o :: TestSink;");
        fill(&r, "q", pkts(500, 60));
        let secs = run_for(&r, 300);
        let n = r.element::<TestSink>("o").unwrap().len() as f64;
        // At most 8 per 50 ms; a loaded machine may fire fewer timers.
        assert!(n <= (secs / 0.05).floor() * 8.0, "{n} in {secs} s");
        assert!(n >= 16.0, "{n} in {secs} s");
        assert_eq!(n as usize % 8, 0);
        assert_eq!(r.read_handler("u.burst").unwrap(), "8");
        assert_eq!(r.read_handler("u.interval").unwrap(), "0.050000");
        assert_eq!(r.read_handler("u.count").unwrap(), (n as usize).to_string());
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
