//! The router's clock: real time, or simulated time (`--simtime`).
//!
//! Every element reads the time through its context ([`crate::Cx::now`],
//! [`crate::Cx::timestamp`], and the same on `HandlerCx`), so one owner —
//! the router — decides what "now" is.
//!
//! Simulated time follows Click's `--simtime`: the clock starts at a fixed
//! point (Unix time 1000000000 s) and stands still while tasks have work;
//! when no task on any thread has work, the worker loop moves it to the
//! earliest moment something is due — the next timer, or the next time a
//! task said it would have work ([`crate::Cx::wake_at`]). A timer-driven
//! configuration then runs as fast as the CPU allows and prints the same
//! output on every run, with any number of threads.
//!
//! Several threads (`-j N`): with one OS thread per worker the order in
//! which two threads' packets reach a shared queue at one simulated
//! instant was a race, so runs differed. Under simulated time the router
//! therefore runs all N logical threads on one OS thread
//! (`sched::sim_driver`): a pass over thread 0's worklist and due timers,
//! then thread 1's, ..., in a fixed order, until two rounds in a row find
//! no work anywhere; then the clock jumps to the earliest event of all
//! threads. Each logical thread keeps its own context, worklist, timers and
//! per-thread element state (a task sees its own thread index; CPUQueue
//! still fills one queue per thread), and the thread plan, ring modes and
//! notifiers are those of N threads. Each logical thread publishes what it
//! staged at the end of its pass, so a plan change's barrier called from a
//! pass does not wait for the others (`crossing::barrier`). The adaptive
//! scheduler does not run (it moves tasks at moments of real time). The
//! run is a fixed sequence of element calls, deterministic by
//! construction, at the cost of using one core: simulated time is for
//! repeatable outputs, not speed. Handlers called from outside the router
//! (control sockets) still land at moments of real time.

use paraclick_packet::Timestamp;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where simulated time starts, in seconds since the Unix epoch (Click's
/// choice too).
pub const SIM_START_SEC: i64 = 1_000_000_000;

/// A router's source of time.
pub struct RouterClock {
    epoch: Instant,
    /// Simulated time: nanoseconds since `epoch`; `None` for real time.
    sim: Option<AtomicU64>,
}

impl RouterClock {
    /// Real time, measured from now.
    pub fn real() -> RouterClock {
        RouterClock {
            epoch: Instant::now(),
            sim: None,
        }
    }

    /// Simulated time, standing at its start.
    pub fn simulated() -> RouterClock {
        RouterClock {
            epoch: Instant::now(),
            sim: Some(AtomicU64::new(0)),
        }
    }

    pub fn is_simulated(&self) -> bool {
        self.sim.is_some()
    }

    /// The router's start (time 0 of [`RouterClock::now_ns`]).
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Monotonic time. In simulated time an `Instant` that stands still
    /// while work is done (the epoch plus the simulated offset).
    #[inline]
    pub fn now(&self) -> Instant {
        match &self.sim {
            None => Instant::now(),
            Some(ns) => self.epoch + Duration::from_nanos(ns.load(Ordering::Acquire)),
        }
    }

    /// Nanoseconds since the epoch.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match &self.sim {
            None => self.ns_of(Instant::now()),
            Some(ns) => ns.load(Ordering::Acquire),
        }
    }

    /// Nanoseconds from the epoch to `t` (0 for earlier instants,
    /// `u64::MAX` for instants more than 584 years on: a timer that far
    /// ahead is never due, rather than due at once through a wrap).
    #[inline]
    pub fn ns_of(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Wall-clock time for packet timestamps: the system's, or
    /// [`SIM_START_SEC`] plus the simulated offset.
    #[inline]
    pub fn timestamp(&self) -> Timestamp {
        match &self.sim {
            None => Timestamp::now(),
            Some(ns) => {
                // Saturates: timers of 2^32 s taken in turn carry the
                // simulated clock past what an i64 of nanoseconds holds.
                let ns = i64::try_from(ns.load(Ordering::Acquire)).unwrap_or(i64::MAX);
                Timestamp((SIM_START_SEC * 1_000_000_000).saturating_add(ns))
            }
        }
    }

    /// Simulated time only: moves the clock forward to `ns` (never back).
    pub(crate) fn advance_to(&self, ns: u64) {
        if let Some(s) = &self.sim {
            s.fetch_max(ns, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_time_stands_still_until_advanced() {
        let c = RouterClock::simulated();
        let a = c.now();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.now(), a);
        assert_eq!(c.timestamp(), Timestamp::from_parts(SIM_START_SEC, 0));
        c.advance_to(1_500_000_000);
        assert_eq!(c.now_ns(), 1_500_000_000);
        assert_eq!(
            c.timestamp(),
            Timestamp::from_parts(SIM_START_SEC + 1, 500_000_000)
        );
        c.advance_to(10); // never backwards
        assert_eq!(c.now_ns(), 1_500_000_000);
        assert_eq!(c.now() - a, Duration::from_millis(1500));
    }

    #[test]
    fn simulated_time_saturates_instead_of_wrapping() {
        let c = RouterClock::simulated();
        c.advance_to(3 * (1u64 << 32) * 1_000_000_000);
        assert_eq!(c.timestamp(), Timestamp(i64::MAX));
        let far = c.epoch() + Duration::from_secs(600 * 365 * 86_400);
        assert_eq!(c.ns_of(far), u64::MAX);
    }

    #[test]
    fn real_time_moves() {
        let c = RouterClock::real();
        let a = c.now_ns();
        std::thread::sleep(Duration::from_millis(2));
        assert!(c.now_ns() >= a + 1_000_000);
        assert!(!c.is_simulated());
    }
}
