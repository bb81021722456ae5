//! Small pieces several elements share.

use paraclick_runtime::HandlerCx;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Click's `rate` handlers without cost on the packet path: the rate is
/// measured between successive reads (the first read measures since the
/// element was created).
pub struct RateMeter {
    last: Mutex<(Instant, u64)>,
}

impl RateMeter {
    pub fn new() -> RateMeter {
        RateMeter {
            last: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Events per second since the previous call, given the running total.
    pub fn rate(&self, total: u64) -> f64 {
        let mut l = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let dt = now.duration_since(l.0).as_secs_f64();
        let r = if dt > 0.0 {
            total.saturating_sub(l.1) as f64 / dt
        } else {
            0.0
        };
        *l = (now, total);
        r
    }

    pub fn reset(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = (Instant::now(), 0);
    }
}

impl Default for RateMeter {
    fn default() -> Self {
        RateMeter::new()
    }
}

/// Writes a burst size (a positive integer) given to a handler.
pub fn write_burst(slot: &AtomicUsize, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
    match hx.arg::<usize>(v)? {
        0 => Err("expected positive integer, not '0'".into()),
        b => {
            slot.store(b, Ordering::Relaxed);
            Ok(())
        }
    }
}

/// Formats a rate the way Click prints doubles (no trailing noise).
pub fn fmt_rate(r: f64) -> String {
    if r == r.trunc() && r.abs() < 1e15 {
        format!("{}", r as i64)
    } else {
        format!("{r:.6}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}
