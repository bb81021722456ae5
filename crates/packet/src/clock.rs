//! Cheap time: a cycle counter (the TSC on x86-64) for cost sampling and
//! benchmarks, its calibration against wall-clock time, and a wall clock
//! derived from it for packet timestamps (a few cycles instead of a
//! `clock_gettime` per packet).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A cycle counter: the TSC on x86-64 (constant rate on modern CPUs), a
/// nanosecond clock elsewhere.
#[inline]
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` reads the time-stamp counter; it has no memory
        // effects and exists on every x86-64 CPU.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// How long [`cycles`] is measured against the monotonic clock before
/// its rate is trusted.
const CALIBRATION: Duration = Duration::from_millis(20);

/// A measurement of the rate of [`cycles`]: the counter and the monotonic
/// clock read at its start; the rate is their ratio once at least
/// [`CALIBRATION`] has passed. Nothing sleeps for it: the time that passes
/// anyway (a router's set-up, its first packets) is the measurement.
struct Calibration {
    t0: Instant,
    c0: u64,
    hz: OnceLock<f64>,
}

impl Calibration {
    fn new() -> Calibration {
        Calibration {
            t0: Instant::now(),
            c0: cycles(),
            hz: OnceLock::new(),
        }
    }

    /// The rate, if at least [`CALIBRATION`] has passed since the start
    /// (fixed from then on).
    fn rate(&self) -> Option<f64> {
        if let Some(&hz) = self.hz.get() {
            return Some(hz);
        }
        let c = cycles();
        let dt = self.t0.elapsed();
        if dt < CALIBRATION {
            return None;
        }
        Some(
            *self
                .hz
                .get_or_init(|| (c.wrapping_sub(self.c0)) as f64 / dt.as_secs_f64()),
        )
    }

    /// The rate so far: rough while the measurement is young.
    fn rough_rate(&self) -> f64 {
        if let Some(hz) = self.rate() {
            return hz;
        }
        let dt = self.t0.elapsed();
        if dt < Duration::from_micros(100) {
            return NOMINAL_HZ;
        }
        cycles().wrapping_sub(self.c0) as f64 / dt.as_secs_f64()
    }
}

/// What [`rough_cycles_per_second`] says before any measurement.
const NOMINAL_HZ: f64 = if cfg!(target_arch = "x86_64") {
    3e9
} else {
    1e9
};

/// The process's calibration, started by the first call to [`init`] (or
/// to anything needing the rate).
fn calibration() -> &'static Calibration {
    static C: OnceLock<Calibration> = OnceLock::new();
    C.get_or_init(Calibration::new)
}

/// Cycles per second of [`cycles`]: measured over at least 20 ms from
/// [`init`] (or from this call, without one). A call before those 20 ms
/// have passed waits for the rest; [`rough_cycles_per_second`] does not.
pub fn cycles_per_second() -> f64 {
    if !cfg!(target_arch = "x86_64") {
        return 1e9;
    }
    let c = calibration();
    loop {
        if let Some(hz) = c.rate() {
            return hz;
        }
        std::thread::sleep(CALIBRATION.saturating_sub(c.t0.elapsed()));
    }
}

/// [`cycles_per_second`] without waiting: the measurement so far (within
/// a few percent once a millisecond has passed since [`init`]; a nominal
/// rate before a tenth of one). For thresholds that need no precision.
pub fn rough_cycles_per_second() -> f64 {
    if !cfg!(target_arch = "x86_64") {
        return 1e9;
    }
    calibration().rough_rate()
}

/// Whether the TSC ticks at a constant rate in every power state (so
/// wall time can be derived from it).
fn invariant_tsc() -> bool {
    static INVARIANT: OnceLock<bool> = OnceLock::new();
    *INVARIANT.get_or_init(|| {
        cfg!(target_arch = "x86_64")
            && std::fs::read_to_string("/proc/cpuinfo")
                .map(|s| s.contains(" constant_tsc") && s.contains(" nonstop_tsc"))
                .unwrap_or(false)
    })
}

fn system_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

struct Anchor {
    cycles: u64,
    wall_ns: i64,
    /// Nanoseconds per cycle in 32.32 fixed point: an integer multiply
    /// and shift per timestamp instead of a float conversion chain.
    ns_per_cycle_q32: u64,
}

/// Set once the cycle counter's rate is known (and it is invariant).
static ANCHOR: OnceLock<Anchor> = OnceLock::new();

/// Starts measuring the cycle counter's rate for [`wall_ns`], without
/// waiting: until it is known (20 ms on) [`wall_ns`] reads the system
/// clock, then derives wall time from the counter, anchored where it
/// switches (so time runs on without a jump).
pub fn init() {
    let _ = calibration();
    let _ = invariant_tsc();
}

/// Wall-clock time in nanoseconds since the Unix epoch: from the cycle
/// counter where it is invariant (once its rate is measured), else from
/// the system clock.
#[inline]
pub fn wall_ns() -> i64 {
    match ANCHOR.get() {
        Some(a) => from_anchor(a),
        None => wall_ns_uncalibrated(),
    }
}

#[inline]
fn from_anchor(a: &Anchor) -> i64 {
    let dc = cycles().wrapping_sub(a.cycles) as u128;
    a.wall_ns + ((dc * a.ns_per_cycle_q32 as u128) >> 32) as i64
}

/// [`wall_ns`] before the anchor: the system clock, and the anchor set
/// once the rate is known.
#[cold]
fn wall_ns_uncalibrated() -> i64 {
    if !invariant_tsc() {
        return system_ns();
    }
    let Some(hz) = calibration().rate() else {
        return system_ns();
    };
    from_anchor(ANCHOR.get_or_init(|| {
        let (c, w) = (cycles(), system_ns());
        Anchor {
            cycles: c,
            wall_ns: w,
            ns_per_cycle_q32: (1e9 / hz * 4_294_967_296.0) as u64,
        }
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn wall_clock_follows_system_clock() {
        super::init();
        let a = super::wall_ns();
        let s = super::system_ns();
        assert!((a - s).abs() < 50_000_000, "derived {a} vs system {s}");
        let b = super::wall_ns();
        assert!(b >= a);
        // The fixed-point rate still tracks the system clock over time.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let (c, t) = (super::wall_ns(), super::system_ns());
        assert!((c - t).abs() < 50_000_000, "derived {c} vs system {t}");
        assert!(
            c - b >= 25_000_000,
            "30 ms slept, derived clock moved {} ns",
            c - b
        );
    }

    #[test]
    fn calibration_takes_the_time_that_passes_and_never_sleeps() {
        // Started, it has no rate yet: it did not sleep to get one.
        let c = super::Calibration::new();
        assert!(c.rate().is_none(), "a rate at once: the start slept");
        assert!(c.rough_rate() > 1e6);
        // The time that passes is the measurement.
        std::thread::sleep(super::CALIBRATION + std::time::Duration::from_millis(5));
        let hz = c.rate().expect("the window has passed");
        assert!(hz > 1e6, "implausible cycle rate {hz}");
        assert_eq!(c.rate(), Some(hz), "fixed once measured");
        let global = super::cycles_per_second();
        assert!((hz / global - 1.0).abs() < 0.05, "{hz} against {global}");
    }

    #[test]
    fn cycles_advance_and_calibrate() {
        let a = super::cycles();
        let hz = super::cycles_per_second();
        let b = super::cycles();
        assert!(b > a);
        assert!(hz > 1e6, "implausible cycle rate {hz}");
    }
}
