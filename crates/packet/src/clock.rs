//! Cheap cycle counting (the TSC on x86-64) for cost sampling and
//! benchmarks, and its calibration against wall-clock time.

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

#[cfg(test)]
mod tests {
    #[test]
    fn cycles_advance_and_calibrate() {
        let a = super::cycles();
        let hz = super::cycles_per_second();
        let b = super::cycles();
        assert!(b > a);
        assert!(hz > 1e6, "implausible cycle rate {hz}");
    }
}
