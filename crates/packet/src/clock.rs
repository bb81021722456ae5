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

/// Cycles per second of [`cycles`], measured once (about 20 ms).
pub fn cycles_per_second() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        let t0 = Instant::now();
        let c0 = cycles();
        std::thread::sleep(Duration::from_millis(20));
        let c1 = cycles();
        let dt = t0.elapsed().as_secs_f64();
        (c1.wrapping_sub(c0)) as f64 / dt
    })
}

/// Whether the TSC ticks at a constant rate in every power state (so
/// wall time can be derived from it).
fn invariant_tsc() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| s.contains(" constant_tsc") && s.contains(" nonstop_tsc"))
            .unwrap_or(false)
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

fn anchor() -> Option<&'static Anchor> {
    static A: OnceLock<Option<Anchor>> = OnceLock::new();
    A.get_or_init(|| {
        if !invariant_tsc() {
            return None;
        }
        let hz = cycles_per_second();
        let (c, w) = (cycles(), system_ns());
        Some(Anchor {
            cycles: c,
            wall_ns: w,
            ns_per_cycle_q32: (1e9 / hz * 4_294_967_296.0) as u64,
        })
    })
    .as_ref()
}

/// Prepares [`wall_ns`] (calibrates the cycle counter once, ~20 ms), so
/// the first packet does not pay for it.
pub fn init() {
    let _ = anchor();
}

/// Wall-clock time in nanoseconds since the Unix epoch: from the cycle
/// counter where it is invariant, else from the system clock.
#[inline]
pub fn wall_ns() -> i64 {
    match anchor() {
        Some(a) => {
            let dc = cycles().wrapping_sub(a.cycles) as u128;
            a.wall_ns + ((dc * a.ns_per_cycle_q32 as u128) >> 32) as i64
        }
        None => system_ns(),
    }
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
    fn cycles_advance_and_calibrate() {
        let a = super::cycles();
        let hz = super::cycles_per_second();
        let b = super::cycles();
        assert!(b > a);
        assert!(hz > 1e6, "implausible cycle rate {hz}");
    }
}
