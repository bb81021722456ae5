//! Small pieces several elements share.

use paraclick_runtime::HandlerCx;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

// ---------------------------------------------------------------------
// The random generator every randomized element draws from.
//
// Unseeded (the default), each thread draws from its own fast generator
// (fastrand's), unpredictably seeded. Once a seed is set (RandomSeed), every
// draw comes from one process-wide stream, the one glibc's `random()`
// gives after `srandom(seed)`, which is what Click's userlevel
// `click_random()` returns: a configuration that Click runs with
// `RandomSeed(N)` makes the same choices here. Draws from several threads
// interleave in whatever order the threads reach the stream, so a seeded
// run is reproducible when one thread draws (`-j 1`, or every random
// element on one thread).

/// The largest value [`random`] returns (Click's `CLICK_RAND_MAX`).
pub const RAND_MAX: u32 = 0x7FFF_FFFF;

/// glibc's `random()` stream (its default, TYPE_3 additive feedback
/// generator), written from the published description of the algorithm:
/// 31 words seeded by the 16807 multiplicative generator modulo 2^31 − 1,
/// `x[i] = x[i-31] + x[i-3]` (mod 2^32), the first 310 sums discarded,
/// each output the sum shifted right by one bit.
#[derive(Clone, Debug)]
pub struct GlibcRandom {
    /// The last 31 sums, a ring; `i` is where the oldest (x[i-31]) sits
    /// and the next sum goes.
    x: [u32; 31],
    i: usize,
}

impl GlibcRandom {
    /// The stream `srandom(seed)` starts (seed 0 is taken as 1, as glibc
    /// does).
    pub fn new(seed: u32) -> GlibcRandom {
        let mut x = [0u32; 31];
        // The seed as C's signed word: the multiplicative steps use
        // Schrage's method with truncating division, as the description.
        let mut w = if seed == 0 { 1 } else { seed as i32 };
        x[0] = w as u32;
        for v in x.iter_mut().skip(1) {
            let (hi, lo) = (w / 127_773, w % 127_773);
            w = 16_807 * lo - 2_836 * hi;
            if w < 0 {
                w += 0x7FFF_FFFF;
            }
            *v = w as u32;
        }
        // x[31..34] repeat x[0..3], so the ring already holds them: the
        // first sum is x[34], written over x[3].
        let mut g = GlibcRandom { x, i: 3 };
        for _ in 0..310 {
            g.next_u31();
        }
        g
    }

    /// The next value, 0 to [`RAND_MAX`] (`random()`).
    #[inline]
    pub fn next_u31(&mut self) -> u32 {
        let i = self.i;
        let back3 = if i >= 3 { i - 3 } else { i + 28 };
        let v = self.x[i].wrapping_add(self.x[back3]);
        self.x[i] = v;
        self.i = if i == 30 { 0 } else { i + 1 };
        v >> 1
    }
}

/// Click's mapping of its generator onto `low..=high`
/// (`click_random(low, high)`), given the generator `next` (values 0 to
/// [`RAND_MAX`]): `low` if `low > high`; one bit of a draw for a range of
/// two; otherwise a draw divided by the range's share of 2^31, drawn again
/// while the quotient would fall beyond the range; two draws combined for
/// a range wider than 2^31.
pub fn click_range(low: u32, high: u32, mut next: impl FnMut() -> u32) -> u32 {
    if low > high {
        return low;
    }
    let span = high - low;
    if span > RAND_MAX {
        loop {
            let r = (next() << 17) ^ (next() >> 14);
            if r <= span {
                return low + r;
            }
        }
    }
    if span == 1 {
        return low + ((next() >> 14) & 1);
    }
    let n = span + 1;
    let share = (RAND_MAX + 1) / n;
    let top = share * n;
    loop {
        let r = next();
        if r < top {
            return low + r / share;
        }
    }
}

/// Whether a seed is set: draws then come from [`SEEDED_STREAM`].
static SEEDED: AtomicBool = AtomicBool::new(false);
/// The process-wide seeded stream (None: unseeded).
static SEEDED_STREAM: Mutex<Option<GlibcRandom>> = Mutex::new(None);

/// Seeds the random generator (RandomSeed): from now on every draw, on
/// every thread, comes from the one stream glibc's `random()` gives after
/// `srandom(seed)`, as Click's. `None` goes back to the fast, unpredictably
/// seeded per-thread generators.
pub fn set_random_seed(seed: Option<u32>) {
    let mut s = SEEDED_STREAM.lock().unwrap_or_else(|e| e.into_inner());
    *s = seed.map(GlibcRandom::new);
    SEEDED.store(seed.is_some(), Ordering::Release);
}

/// Whether a seed is set (RandomSeed): draws then come from the one
/// process-wide stream, as Click's.
#[inline]
pub fn is_seeded() -> bool {
    SEEDED.load(Ordering::Relaxed)
}

/// Runs `f` on the seeded stream, or returns None when unseeded.
#[cold]
#[inline(never)]
fn seeded_draw(f: &mut dyn FnMut(&mut GlibcRandom) -> u32) -> Option<u32> {
    let mut s = SEEDED_STREAM.lock().unwrap_or_else(|e| e.into_inner());
    s.as_mut().map(f)
}

/// A random value from 0 to [`RAND_MAX`], as Click's `click_random()`:
/// the seeded stream's next value, or a fast unpredictable one.
#[inline]
pub fn random() -> u32 {
    if SEEDED.load(Ordering::Relaxed) {
        if let Some(v) = seeded_draw(&mut |g| g.next_u31()) {
            return v;
        }
    }
    fastrand::u32(..) >> 1
}

/// A random value from `low` to `high` inclusive (`low` if `low > high`),
/// as Click's `click_random(low, high)`: seeded, Click's mapping of the
/// stream ([`click_range`]); unseeded, uniform.
#[inline]
pub fn random_range(low: u32, high: u32) -> u32 {
    if SEEDED.load(Ordering::Relaxed) {
        if let Some(v) = seeded_draw(&mut |g| click_range(low, high, || g.next_u31())) {
            return v;
        }
    }
    if low > high {
        return low;
    }
    fastrand::u32(low..=high)
}

/// A uniform number in [0, 1): one [`random`] value over 2^31.
#[inline]
pub fn random_unit() -> f64 {
    f64::from(random()) / 2_147_483_648.0
}

/// Fills `buf` with random bytes. Seeded, as Click's RandomSource: each
/// 4 bytes (the last chunk possibly shorter) are one [`random`] value in
/// little-endian order; unseeded, uniform bytes.
pub fn fill_random(buf: &mut [u8]) {
    if SEEDED.load(Ordering::Relaxed) {
        let mut s = SEEDED_STREAM.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = s.as_mut() {
            for c in buf.chunks_mut(4) {
                let v = g.next_u31().to_le_bytes();
                c.copy_from_slice(&v[..c.len()]);
            }
            return;
        }
    }
    fastrand::fill(buf);
}

/// A read-mostly value shared by the threads without a lock on the packet
/// path: writers (handlers, learned addresses) replace it whole with
/// [`Published::publish`], which bumps a generation; each thread keeps a
/// [`View`] (in a `PerThread`) that compares the generation once per batch
/// and takes the lock only when it moved. An update is seen by every
/// thread's next batch. ARPQuerier and IP6NDSolicitor keep their known
/// neighbours this way.
pub struct Published<T> {
    current: Mutex<Arc<T>>,
    gen: AtomicU64,
}

impl<T> Published<T> {
    pub fn new(value: T) -> Published<T> {
        Published {
            current: Mutex::new(Arc::new(value)),
            gen: AtomicU64::new(0),
        }
    }

    /// Replaces the value with `make(old value)`; threads take the new
    /// one at their next [`View::get`]. `make` runs under the lock, so
    /// concurrent publications do not lose each other's carry-over.
    pub fn publish(&self, make: impl FnOnce(&T) -> T) {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let next = Arc::new(make(&cur));
        *cur = next;
        self.gen.fetch_add(1, Ordering::Release);
    }

    /// The current value (control path: handlers, the timer).
    pub fn current(&self) -> Arc<T> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A thread's view of a [`Published`] value: the value it last took and
/// that value's generation.
pub struct View<T> {
    gen: u64,
    value: Arc<T>,
}

impl<T> View<T> {
    /// A view holding `placeholder` until its first [`View::get`], which
    /// always takes the published value.
    pub fn new(placeholder: Arc<T>) -> View<T> {
        View {
            gen: u64::MAX,
            value: placeholder,
        }
    }

    /// The published value: one atomic load, and the lock only when a
    /// publication happened since this view's last call.
    #[inline]
    pub fn get(&mut self, p: &Published<T>) -> &T {
        // The generation is read before the value: a publication between
        // the two leaves a newer value under an older generation, which
        // the next call takes again (never an older value kept).
        let gen = p.gen.load(Ordering::Acquire);
        if gen != self.gen {
            self.value = p.current();
            self.gen = gen;
        }
        &self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published first values of glibc's `random()` after
    /// `srandom(1)` (also what it gives without a seed).
    #[test]
    fn the_seeded_stream_is_glibcs() {
        let mut g = GlibcRandom::new(1);
        let first: Vec<u32> = (0..6).map(|_| g.next_u31()).collect();
        assert_eq!(
            first,
            [1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335]
        );
        // srandom(0) is srandom(1).
        let mut z = GlibcRandom::new(0);
        assert_eq!(z.next_u31(), 1804289383);
    }

    /// Against the C library itself where it is glibc: seeds across the
    /// whole 32-bit range (those above 2^31 are negative words to the
    /// seeding), 1,000 values each.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_seeded_stream_matches_the_c_library() {
        extern "C" {
            fn srandom(seed: std::ffi::c_uint);
            fn random() -> std::ffi::c_long;
        }
        for seed in [
            0u32,
            1,
            2,
            42,
            127_773,
            0x7FFF_FFFE,
            0x7FFF_FFFF,
            0x8000_0000,
            0xDEAD_BEEF,
            u32::MAX,
        ] {
            let mut g = GlibcRandom::new(seed);
            // SAFETY: srandom and random have no preconditions; only this
            // test uses the C library's generator.
            unsafe { srandom(seed) };
            for k in 0..1000 {
                // SAFETY: as above.
                let c = unsafe { random() } as u32;
                assert_eq!(g.next_u31(), c, "seed {seed}, value {k}");
            }
        }
    }

    /// Click's mapping: the first value of seed 1 over 1024..=65534 is
    /// 1804289383 / (2^31 / 64511 rounded down) + 1024; a quotient beyond
    /// the range is drawn again; a range of two takes bit 14; an empty
    /// range gives its low end without drawing.
    #[test]
    fn clicks_range_mapping() {
        let mut g = GlibcRandom::new(1);
        assert_eq!(click_range(1024, 65534, || g.next_u31()), 55226);
        let mut vals = [RAND_MAX, 5 * 33_288 + 7].into_iter();
        let mut draws = 0;
        let v = click_range(1024, 65534, || {
            draws += 1;
            vals.next().unwrap()
        });
        assert_eq!((v, draws), (1029, 2), "the top value is beyond the range");
        assert_eq!(click_range(7, 8, || 1 << 14), 8);
        assert_eq!(click_range(7, 8, || (1 << 14) - 1), 7);
        assert_eq!(click_range(9, 3, || unreachable!()), 9);
        // One value: a draw, and the low end.
        let mut n = 0;
        assert_eq!(
            click_range(4, 4, || {
                n += 1;
                RAND_MAX
            }),
            4
        );
        assert_eq!(n, 1);
        // Wider than 2^31: two draws combined.
        assert_eq!(click_range(0, u32::MAX, || 1), 1 << 17);
    }
}
