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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where simulated time starts, in seconds since the Unix epoch (Click's
/// choice too).
pub const SIM_START_SEC: i64 = 1_000_000_000;

/// A router's source of time.
pub struct RouterClock {
    epoch: Instant,
    /// Simulated time: nanoseconds since `epoch`; `None` for real time.
    sim: Option<AtomicU64>,
    /// Real time only: whether a timewarp was ever set ([`RouterClock::set_warp`]);
    /// until then the clock is the system's, read with no lock.
    warped: AtomicBool,
    /// Real time never warped: the system's clock as it is (one flag
    /// for the per-packet [`RouterClock::timestamp`] to test).
    system: AtomicBool,
    warp: Mutex<Warp>,
    /// The system's wall-clock time at `epoch` (timestamps once warped).
    wall_epoch: Timestamp,
}

/// Click's timewarp (the global `timewarp` handler): router time moves
/// `speed` times as fast as real time, from `click_base` (router
/// nanoseconds since the epoch) at `real_base` (real ones); with `jump`
/// (Click's `nowait`) it also skips ahead to the next timer instead of
/// waiting for it.
#[derive(Clone, Copy)]
struct Warp {
    real_base: u64,
    click_base: u64,
    speed: f64,
    jump: bool,
}

impl Warp {
    fn at(&self, real_ns: u64) -> u64 {
        let d = real_ns.saturating_sub(self.real_base) as f64 * self.speed;
        self.click_base.saturating_add(d as u64)
    }
}

/// A timewarp: how fast router time moves against real time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeWarp {
    /// `speed` times real time (1: real time).
    Linear(f64),
    /// Real time's pace, but time jumps to the next timer instead of
    /// waiting for it (Click's `nowait`).
    NoWait,
}

impl RouterClock {
    /// Real time, measured from now.
    pub fn real() -> RouterClock {
        RouterClock::new(None)
    }

    /// Simulated time, standing at its start.
    pub fn simulated() -> RouterClock {
        RouterClock::new(Some(AtomicU64::new(0)))
    }

    fn new(sim: Option<AtomicU64>) -> RouterClock {
        RouterClock {
            epoch: Instant::now(),
            system: AtomicBool::new(sim.is_none()),
            sim,
            warped: AtomicBool::new(false),
            warp: Mutex::new(Warp {
                real_base: 0,
                click_base: 0,
                speed: 1.0,
                jump: false,
            }),
            wall_epoch: Timestamp::now(),
        }
    }

    fn warp(&self) -> Warp {
        *self.warp.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Real time only: router time from now on moves as `w` says (Click's
    /// `Timestamp::warp_set_class`, the global `timewarp` handler). Time
    /// never goes back: the new pace starts from the current router time.
    pub fn set_warp(&self, w: TimeWarp) -> Result<(), String> {
        if self.sim.is_some() {
            return Err("simulated time cannot be warped".into());
        }
        let (speed, jump) = match w {
            TimeWarp::Linear(s) if s > 0.0 && s.is_finite() => (s, false),
            TimeWarp::Linear(_) => return Err("timefactor must be > 0".into()),
            TimeWarp::NoWait => (1.0, true),
        };
        let mut g = self.warp.lock().unwrap_or_else(|e| e.into_inner());
        let real = self.ns_of(Instant::now());
        let click = if self.warped.load(Ordering::Relaxed) {
            g.at(real)
        } else {
            real
        };
        *g = Warp {
            real_base: real,
            click_base: click,
            speed,
            jump,
        };
        self.warped.store(true, Ordering::Release);
        self.system.store(false, Ordering::Release);
        Ok(())
    }

    /// The timewarp in force (`Linear(1.0)` unless one was set).
    pub fn time_warp(&self) -> TimeWarp {
        if !self.warped.load(Ordering::Acquire) {
            return TimeWarp::Linear(1.0);
        }
        let w = self.warp();
        if w.jump {
            TimeWarp::NoWait
        } else {
            TimeWarp::Linear(w.speed)
        }
    }

    /// How long to wait in real time for router time to move by `ns`.
    #[inline]
    pub fn real_wait(&self, ns: u64) -> Duration {
        if !self.warped.load(Ordering::Relaxed) {
            return Duration::from_nanos(ns);
        }
        Duration::from_nanos((ns as f64 / self.warp().speed) as u64)
    }

    /// With Click's `nowait` timewarp, moves router time forward to `ns`
    /// (the next timer) and returns true; otherwise does nothing and
    /// returns false (the caller waits).
    pub fn jump_to(&self, ns: u64) -> bool {
        if !self.warped.load(Ordering::Relaxed) {
            return false;
        }
        let mut g = self.warp.lock().unwrap_or_else(|e| e.into_inner());
        if !g.jump {
            return false;
        }
        let real = self.ns_of(Instant::now());
        let now = g.at(real);
        if ns > now {
            g.click_base = g.click_base.saturating_add(ns - now);
        }
        true
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
            None if self.warped.load(Ordering::Relaxed) => {
                self.epoch + Duration::from_nanos(self.now_ns())
            }
            None => Instant::now(),
            Some(ns) => self.epoch + Duration::from_nanos(ns.load(Ordering::Acquire)),
        }
    }

    /// Nanoseconds since the epoch.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match &self.sim {
            None if self.warped.load(Ordering::Relaxed) => {
                self.warp().at(self.ns_of(Instant::now()))
            }
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
        // Real time, never warped: the system's clock, inline (a source
        // stamps every packet); the other cases out of line.
        if self.system.load(Ordering::Relaxed) {
            return Timestamp::now();
        }
        self.timestamp_other()
    }

    /// [`RouterClock::timestamp`] in simulated or warped time.
    #[inline(never)]
    fn timestamp_other(&self) -> Timestamp {
        match &self.sim {
            None if self.warped.load(Ordering::Relaxed) => {
                let ns = i64::try_from(self.now_ns()).unwrap_or(i64::MAX);
                Timestamp(self.wall_epoch.0.saturating_add(ns))
            }
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
    fn a_timewarp_scales_router_time_from_the_moment_it_is_set() {
        let c = RouterClock::real();
        assert_eq!(c.time_warp(), TimeWarp::Linear(1.0));
        assert!(c.set_warp(TimeWarp::Linear(0.0)).is_err());
        assert!(c.set_warp(TimeWarp::Linear(-1.0)).is_err());
        c.set_warp(TimeWarp::Linear(1000.0)).unwrap();
        assert_eq!(c.time_warp(), TimeWarp::Linear(1000.0));
        let (a, ta) = (c.now_ns(), c.timestamp());
        std::thread::sleep(Duration::from_millis(5));
        let (b, tb) = (c.now_ns(), c.timestamp());
        // At least 5 ms real, so at least 5 s of router time.
        assert!(b - a >= 5_000_000_000, "{}", b - a);
        assert!(tb.0 - ta.0 >= 5_000_000_000);
        assert_eq!(c.real_wait(2_000_000_000), Duration::from_millis(2));
        // Back to real time: no jump back.
        c.set_warp(TimeWarp::Linear(1.0)).unwrap();
        assert!(c.now_ns() >= b);
        assert!(!c.jump_to(u64::MAX / 2));
        c.set_warp(TimeWarp::NoWait).unwrap();
        assert_eq!(c.time_warp(), TimeWarp::NoWait);
        let now = c.now_ns();
        assert!(c.jump_to(now + 3_600_000_000_000));
        assert!(c.now_ns() >= now + 3_600_000_000_000);
        assert!(RouterClock::simulated()
            .set_warp(TimeWarp::Linear(2.0))
            .is_err());
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
