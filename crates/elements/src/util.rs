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

/// The largest BURST of a source (packets made per task run, in one
/// batch allocated up front): a BURST of 10^10 aborted the process
/// allocating that batch.
pub const MAX_BURST: usize = 1 << 16;

/// A source's BURST: 1 to [`MAX_BURST`], or an error.
pub fn check_burst(b: usize) -> Result<usize, String> {
    if b == 0 || b > MAX_BURST {
        return Err(format!("BURST must be between 1 and {MAX_BURST}, not {b}"));
    }
    Ok(b)
}

/// Writes a burst size (1 to [`MAX_BURST`]) given to a handler.
pub fn write_burst(slot: &AtomicUsize, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
    let b = check_burst(hx.arg::<usize>(v)?)?;
    slot.store(b, Ordering::Relaxed);
    Ok(())
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

/// Well-known TCP/UDP service names a port argument accepts when no
/// PortInfo element names the word: the names Click's IP filters know
/// (`ssh` 22, `domain` 53, `www` 80, ...), a fixed table rather than the
/// host's /etc/services, so a configuration means the same everywhere.
pub fn well_known_port(name: &str) -> Option<u16> {
    crate::ipfilter::lang::PORT_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|&(_, p)| u16::try_from(p).ok())
}

/// A TCP or UDP port argument of the element `element`: a number, a name
/// a PortInfo in scope defines for `proto` (`tcp` or `udp`), or a
/// [`well_known_port`] name.
pub fn port_arg(
    s: &str,
    proto: &str,
    element: &str,
    env: &paraclick_runtime::ArgEnv,
) -> Result<u16, String> {
    use paraclick_runtime::FromArg;
    let s = s.trim();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        return u16::from_arg(s, env);
    }
    env.port_name(element, s, proto)
        .or_else(|| well_known_port(s))
        .ok_or_else(|| format!("expected port number or name, not '{s}'"))
}

/// The seed RandomSeed set, and how many times it was set (0: never).
static RANDOM_SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static RANDOM_SEED_GEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// Each thread's generator, and the seed generation it was made for.
    static RNG: std::cell::RefCell<(u64, fastrand::Rng)> =
        std::cell::RefCell::new((0, fastrand::Rng::new()));
}

/// Seeds the random generator of every thread (RandomSeed): each one
/// restarts from `seed` at its next draw. Process-wide, as Click's seed.
pub fn set_random_seed(seed: u64) {
    use std::sync::atomic::Ordering;
    RANDOM_SEED.store(seed, Ordering::Relaxed);
    RANDOM_SEED_GEN.fetch_add(1, Ordering::Release);
}

/// Runs `f` with this thread's random generator, the one the randomized
/// elements draw from: unpredictably seeded, until RandomSeed sets a seed.
/// A draw costs one relaxed atomic load more than fastrand's own.
#[inline]
pub fn with_rng<T>(f: impl FnOnce(&mut fastrand::Rng) -> T) -> T {
    use std::sync::atomic::Ordering;
    let generation = RANDOM_SEED_GEN.load(Ordering::Acquire);
    RNG.with(|r| {
        let mut r = r.borrow_mut();
        if r.0 != generation {
            r.1 = fastrand::Rng::with_seed(RANDOM_SEED.load(Ordering::Relaxed));
            r.0 = generation;
        }
        f(&mut r.1)
    })
}
