//! The rate arithmetic shared by the shaping and metering elements: one
//! token bucket (the [`BucketState`] of SharedTokenBucket, here with
//! fractional depths and costs in packets or bytes) and one moving-average
//! rate estimator. Both are pure functions of the times they are given, so
//! tests drive them with made-up instants.

use crate::sched::shared_token_bucket::BucketState;
use paraclick_packet::Packet;
use paraclick_runtime::args::Bandwidth;
use paraclick_runtime::Args;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a rate counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Packets,
    Bytes,
}

impl Unit {
    /// A packet's cost: 1, or its length plus its extra-length annotation.
    #[inline]
    pub fn cost(self, p: &Packet) -> f64 {
        match self {
            Unit::Packets => 1.0,
            Unit::Bytes => (p.len() as u64 + p.anno().extra_length as u64) as f64,
        }
    }

    /// Reads a RATE argument: packets per second (a number) or a
    /// bandwidth (`1Mbps`, `125kBps`, a bare number is bytes/s).
    pub fn read_rate(self, a: &mut Args<'_>) -> f64 {
        match self {
            Unit::Packets => a.read_mp::<f64>("RATE"),
            Unit::Bytes => a.read_mp::<Bandwidth>("RATE").0,
        }
    }

    /// Parses a rate written to a `rate` handler.
    pub fn parse_rate(self, v: &str, hx: &paraclick_runtime::HandlerCx<'_>) -> Result<f64, String> {
        let r = match self {
            Unit::Packets => hx.arg::<f64>(v)?,
            Unit::Bytes => hx.arg::<Bandwidth>(v)?.0,
        };
        check_rate(r)
    }

    /// A rate as the `rate` handler prints it.
    pub fn show(self, r: f64) -> String {
        match self {
            Unit::Packets => crate::util::fmt_rate(r),
            Unit::Bytes => format!("{}Bps", crate::util::fmt_rate(r)),
        }
    }
}

/// Rejects negative, NaN and infinite rates.
pub fn check_rate(r: f64) -> Result<f64, String> {
    if r.is_finite() && r >= 0.0 {
        Ok(r)
    } else {
        Err(format!("RATE must be a nonnegative number, not {r}"))
    }
}

/// Click's default token bucket depth: 20 ms worth of tokens.
pub const DEFAULT_BURST: Duration = Duration::from_millis(20);

/// Reads the BURST_DURATION / BURST_SIZE (packets) or BURST_BYTES (bytes)
/// keywords; `None` for the default depth.
pub fn read_burst(unit: Unit, a: &mut Args<'_>) -> (Option<Duration>, Option<f64>) {
    let dur = a.read::<Duration>("BURST_DURATION");
    let size = match unit {
        Unit::Packets => a.read::<u64>("BURST_SIZE"),
        Unit::Bytes => a.read::<u64>("BURST_BYTES"),
    };
    if dur.is_some() && size.is_some() {
        a.error("BURST_DURATION and BURST_SIZE/BURST_BYTES are mutually exclusive");
    }
    (dur, size.map(|s| s as f64))
}

/// The bucket depth for `rate`: an explicit size, else `dur` (default 20
/// ms) worth of tokens; never below one token, so a packet can always
/// eventually pass.
pub fn depth(rate: f64, dur: Option<Duration>, size: Option<f64>) -> f64 {
    size.unwrap_or_else(|| rate * dur.unwrap_or(DEFAULT_BURST).as_secs_f64())
        .max(1.0)
}

/// The bucket operations the elements need, on SharedTokenBucket's state.
pub trait Tokens {
    /// A full bucket of fractional depth.
    fn full(rate: f64, depth: f64, now: Instant) -> Self;
    /// Refills to `now`; then whether `need` tokens (at most the depth)
    /// are there. Costs larger than the depth pass when the bucket is
    /// full, and leave it in debt, so the long-term rate holds for any
    /// packet size.
    fn ready(&mut self, now: Instant, need: f64) -> bool;
    /// Takes `cost` tokens if [`Tokens::ready`] for it.
    fn take(&mut self, now: Instant, cost: f64) -> bool;
    /// Whole tokens in the bucket (after a refill to `now`).
    fn whole(&mut self, now: Instant) -> usize;
}

impl Tokens for BucketState {
    fn full(rate: f64, depth: f64, now: Instant) -> BucketState {
        BucketState {
            tokens: depth,
            last: now,
            rate,
            burst: depth,
        }
    }

    #[inline]
    fn ready(&mut self, now: Instant, need: f64) -> bool {
        self.refill(now);
        self.tokens >= need.min(self.burst)
    }

    #[inline]
    fn take(&mut self, now: Instant, cost: f64) -> bool {
        if self.ready(now, cost) {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }

    fn whole(&mut self, now: Instant) -> usize {
        self.refill(now);
        self.tokens.floor().max(0.0) as usize
    }
}

/// One element's bucket, its rate and depth settings, behind a lock
/// (elements take `&self` and may run on several threads).
pub struct TokenBucket {
    pub unit: Unit,
    state: Mutex<BucketState>,
    /// BURST_DURATION / BURST_SIZE as configured, to recompute the depth
    /// when the rate changes.
    burst_dur: Option<Duration>,
    burst_size: Option<f64>,
}

impl TokenBucket {
    pub fn new(unit: Unit, rate: f64, dur: Option<Duration>, size: Option<f64>) -> TokenBucket {
        TokenBucket {
            unit,
            state: Mutex::new(BucketState::full(
                rate,
                depth(rate, dur, size),
                Instant::now(),
            )),
            burst_dur: dur,
            burst_size: size,
        }
    }

    /// Runs `f` on the bucket state.
    #[inline]
    pub fn with<T>(&self, f: impl FnOnce(&mut BucketState) -> T) -> T {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    pub fn rate(&self) -> f64 {
        self.with(|s| s.rate)
    }

    pub fn depth(&self) -> f64 {
        self.with(|s| s.burst)
    }

    /// A `rate` handler's write: `v` in this bucket's unit, set at the
    /// router's moment (`hx.now()`, simulated time included).
    pub fn write_rate(&self, v: &str, hx: &paraclick_runtime::HandlerCx<'_>) -> Result<(), String> {
        let r = self.unit.parse_rate(v, hx)?;
        self.set_rate(hx.now(), r);
        Ok(())
    }

    /// When a pull that found the bucket short (fewer than `need` tokens
    /// at `now`) can next succeed: at least 1 ns on, so that simulated
    /// time always moves; `None` at rate 0 (never).
    pub fn next_ready(&self, now: Instant, need: f64) -> Option<Instant> {
        self.with(|s| {
            if s.rate <= 0.0 {
                return None;
            }
            let short = (need.min(s.burst) - s.tokens).max(0.0);
            let wait = Duration::try_from_secs_f64(short / s.rate).unwrap_or(Duration::MAX);
            now.checked_add(wait.max(Duration::from_nanos(1)))
        })
    }

    /// Starts the bucket again, full, at `now` (a `reset` handler).
    pub fn reset(&self, now: Instant) {
        self.with(|s| {
            s.tokens = s.burst;
            s.last = now;
        })
    }

    /// A new rate (tokens earned so far count at the old one); the depth
    /// follows unless it was given as a size.
    pub fn set_rate(&self, now: Instant, rate: f64) {
        let d = depth(rate, self.burst_dur, self.burst_size);
        self.with(|s| {
            s.refill(now);
            s.rate = rate;
            s.burst = d;
            s.tokens = s.tokens.min(d);
        })
    }
}

/// Length of a [`TickBucket`]'s tick: Click's jiffy at user level.
pub const TICK: Duration = Duration::from_millis(1);

/// Ticks in a second.
const TICKS_PER_SEC: f64 = 1000.0;

/// The most a [`TickBucket`] holds, in fractions of its capacity.
const FULL: u64 = u32::MAX as u64;

/// Click's token bucket arithmetic, which its users' measurements and
/// tests rely on. The bucket holds a whole number of tokens (its
/// capacity) and counts in fractions of that capacity, `2^32 - 1` being
/// full; it refills once per tick of 1 ms, by the rate's share of a tick
/// rounded down to a whole fraction (at least one fraction). The capacity
/// is at least one tick's worth of the rate.
///
/// In packets (RatedUnqueue, RatedSplitter) a token is a packet: the
/// capacity is the burst (at least 1) and a packet needs one token. So
/// RATE 2 with a one-packet bucket passes a packet every 501 ms rather
/// than every 500, and RATE 100 with BURST_SIZE 1 one every 11 ms, as in
/// Click.
///
/// In bytes (BandwidthRatedUnqueue, BandwidthRatedSplitter) a token is a
/// byte, and the bucket keeps a reserve of [`BYTE_RESERVE`] bytes below
/// the burst: its capacity is burst + reserve, a packet may go whenever
/// the bucket holds at least the reserve (the burst part is not in debt),
/// and it then takes its size, the bucket emptying at most to 0. So a
/// packet larger than what is left passes and leaves a debt, repaid before
/// the next may go, of at most the reserve.
///
/// A new bucket is full; a rate change keeps the tokens in it (the
/// capacity follows the rate unless it was given as a size).
pub struct TickBucket {
    state: Mutex<TickState>,
    burst_dur: Option<Duration>,
    burst_size: Option<f64>,
    /// The tokens kept below the burst: 0 in packets, [`BYTE_RESERVE`] in
    /// bytes.
    reserve: u64,
}

/// The reserve of a [`TickBucket`] in bytes: how far a packet larger than
/// the tokens left may take the bucket into debt (128 KiB, as in Click).
pub const BYTE_RESERVE: u64 = 131_072;

struct TickState {
    /// Time of tick 0.
    base: Instant,
    /// The tick the bucket was last refilled at.
    last: u64,
    /// Tokens, in fractions of the capacity (`FULL` is full).
    frac: u64,
    /// Fractions per token (`FULL / capacity`).
    scale: u64,
    /// Fractions added per tick.
    per_tick: u64,
    rate: f64,
    capacity: u64,
    /// Tokens a packet needs in the bucket to go: 1 in packets, the
    /// reserve in bytes.
    need: u64,
}

impl TickState {
    fn new(rate: f64, capacity: u64, need: u64, base: Instant) -> TickState {
        let capacity = capacity.max(1);
        let scale = FULL / capacity;
        TickState {
            base,
            last: 0,
            frac: FULL,
            scale,
            per_tick: per_tick(rate, scale),
            rate,
            capacity,
            need,
        }
    }

    /// Fractions a packet needs in the bucket to go.
    fn need_frac(&self) -> u64 {
        self.need.saturating_mul(self.scale).min(FULL)
    }

    fn tick_of(&self, now: Instant) -> u64 {
        (now.saturating_duration_since(self.base).as_nanos() / TICK.as_nanos()) as u64
    }

    fn refill(&mut self, now: Instant) {
        let t = self.tick_of(now);
        if t > self.last {
            let add = u128::from(t - self.last) * u128::from(self.per_tick);
            self.frac = (u128::from(self.frac) + add).min(u128::from(FULL)) as u64;
            self.last = t;
        }
    }
}

/// A rate's share of a tick, in fractions (`scale` a token), rounded down.
fn per_tick(rate: f64, scale: u64) -> u64 {
    // Ticks a second: an exact division, where a rate divides evenly.
    let f = (rate * scale as f64 / TICKS_PER_SEC).floor();
    if f.is_finite() && f > 0.0 {
        (f as u64).min(FULL)
    } else if rate > 0.0 {
        // A rate too small for one fraction a tick still refills.
        1
    } else {
        0
    }
}

/// A [`TickBucket`]'s capacity in whole tokens: the size, else `dur`
/// (default 20 ms) worth of the rate, plus `reserve`; at least 1, and at
/// least one tick's worth of the rate.
fn tick_capacity(rate: f64, dur: Option<Duration>, size: Option<f64>, reserve: u64) -> u64 {
    let d = size.unwrap_or_else(|| rate * dur.unwrap_or(DEFAULT_BURST).as_secs_f64());
    // A hair over, so that 200 * 20 ms is 4 whatever the rounding.
    let c = (d + 1e-9).floor();
    let c = if c.is_finite() && c >= 0.0 {
        c.min(FULL as f64) as u64
    } else {
        0
    };
    let c = c.saturating_add(reserve).clamp(1, FULL);
    let tick = (rate / TICKS_PER_SEC).ceil();
    if tick.is_finite() && tick > c as f64 {
        tick.min(FULL as f64) as u64
    } else {
        c
    }
}

impl TickBucket {
    /// A full bucket of packets; its ticks count from `now` until
    /// [`TickBucket::start`].
    pub fn new(rate: f64, dur: Option<Duration>, size: Option<f64>, now: Instant) -> TickBucket {
        TickBucket::with_reserve(rate, dur, size, 0, now)
    }

    /// A full bucket of bytes, with Click's reserve ([`BYTE_RESERVE`]).
    pub fn bytes(rate: f64, dur: Option<Duration>, size: Option<f64>, now: Instant) -> TickBucket {
        TickBucket::with_reserve(rate, dur, size, BYTE_RESERVE, now)
    }

    fn with_reserve(
        rate: f64,
        dur: Option<Duration>,
        size: Option<f64>,
        reserve: u64,
        now: Instant,
    ) -> TickBucket {
        let cap = tick_capacity(rate, dur, size, reserve);
        TickBucket {
            state: Mutex::new(TickState::new(rate, cap, reserve.max(1), now)),
            burst_dur: dur,
            burst_size: size,
            reserve,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut TickState) -> T) -> T {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    /// Full again, its ticks counting from `now` (the router's start, or
    /// a `reset`).
    pub fn start(&self, now: Instant) {
        self.with(|s| {
            s.base = now;
            s.last = 0;
            s.frac = FULL;
        })
    }

    pub fn rate(&self) -> f64 {
        self.with(|s| s.rate)
    }

    /// The capacity in tokens (the reserve included).
    pub fn capacity(&self) -> u64 {
        self.with(|s| s.capacity)
    }

    /// Whole tokens after a refill to `now`.
    pub fn whole(&self, now: Instant) -> usize {
        self.with(|s| {
            s.refill(now);
            (s.frac / s.scale) as usize
        })
    }

    /// Takes `n` tokens (at most those there).
    pub fn take(&self, n: usize) {
        self.with(|s| s.frac = s.frac.saturating_sub(s.scale.saturating_mul(n as u64)))
    }

    /// Refills to `now`, then takes one token if there is one.
    pub fn take_one(&self, now: Instant) -> bool {
        self.take_if_ready(now, 1)
    }

    /// Refills to `now`; whether a packet may go (the bucket holds one
    /// token, or in bytes the reserve).
    pub fn ready(&self, now: Instant) -> bool {
        self.with(|s| {
            s.refill(now);
            s.frac >= s.need_frac()
        })
    }

    /// Refills to `now`; how many packets surely may go one after the
    /// other, each costing at most `bound` tokens: the first if one may
    /// go ([`TickBucket::ready`]), and one more for every `bound` tokens
    /// beyond what that takes. Charging them one by one would have let
    /// each of them go, so a burst of that many is pulled at once.
    pub fn sure(&self, now: Instant, bound: u64) -> u64 {
        self.with(|s| {
            s.refill(now);
            let need = s.need_frac();
            if s.frac < need {
                return 0;
            }
            let per = s.scale.saturating_mul(bound.max(1));
            1 + (s.frac - need) / per
        })
    }

    /// Takes `n` tokens, emptying the bucket at most to 0.
    pub fn charge(&self, n: u64) {
        self.with(|s| s.frac = s.frac.saturating_sub(s.scale.saturating_mul(n)))
    }

    /// Refills to `now`; if a packet may go, takes `n` tokens (at most
    /// those there) and says so.
    pub fn take_if_ready(&self, now: Instant, n: u64) -> bool {
        self.with(|s| {
            s.refill(now);
            let ok = s.frac >= s.need_frac();
            if ok {
                s.frac = s.frac.saturating_sub(s.scale.saturating_mul(n));
            }
            ok
        })
    }

    /// The tick at which a packet may next go (now if one may); `None`
    /// at rate 0.
    pub fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.with(|s| {
            s.refill(now);
            let need = s.need_frac();
            if s.frac >= need {
                return Some(now);
            }
            if s.per_tick == 0 {
                return None;
            }
            let ticks = (need - s.frac).div_ceil(s.per_tick);
            let at = u32::try_from(s.last.checked_add(ticks)?).ok()?;
            s.base.checked_add(TICK * at)
        })
    }

    /// A new rate at `now`: ticks passed count at the old one, the tokens
    /// in the bucket stay (as far as the new capacity holds them), and the
    /// capacity follows the rate unless it was given as a size.
    pub fn set_rate(&self, now: Instant, rate: f64) {
        let cap = tick_capacity(rate, self.burst_dur, self.burst_size, self.reserve);
        self.with(|s| {
            s.refill(now);
            let scale = FULL / cap;
            let frac = u128::from(s.frac) * u128::from(scale) / u128::from(s.scale);
            s.frac = frac.min(u128::from(FULL)) as u64;
            s.scale = scale;
            s.capacity = cap;
            s.rate = rate;
            s.per_tick = per_tick(rate, scale);
        })
    }

    /// The unit this bucket counts.
    pub fn unit(&self) -> Unit {
        if self.reserve > 0 {
            Unit::Bytes
        } else {
            Unit::Packets
        }
    }

    /// A `rate` handler's write, at the router's moment.
    pub fn write_rate(&self, v: &str, hx: &paraclick_runtime::HandlerCx<'_>) -> Result<(), String> {
        let r = self.unit().parse_rate(v, hx)?;
        self.set_rate(hx.now(), r);
        Ok(())
    }
}

/// A rate estimate: an exponentially weighted moving average of arrivals
/// over time, with time constant `tau`. Each arrival of `amount` adds
/// `amount / tau`, and the estimate decays by `e^(-dt/tau)`, so a steady
/// rate R reads R.
#[derive(Clone, Debug)]
pub struct Ewma {
    avg: f64,
    last: Option<Instant>,
    tau: f64,
}

/// Time constant of Meter's and BandwidthMeter's averages.
pub const METER_TAU: Duration = Duration::from_millis(100);

impl Ewma {
    pub fn new(tau: Duration) -> Ewma {
        Ewma {
            avg: 0.0,
            last: None,
            tau: tau.as_secs_f64(),
        }
    }

    fn decay(&mut self, now: Instant) {
        if let Some(last) = self.last {
            let dt = now.saturating_duration_since(last).as_secs_f64();
            if dt > 0.0 {
                self.avg *= (-dt / self.tau).exp();
                self.last = Some(now);
            }
        } else {
            self.last = Some(now);
        }
    }

    /// Records an arrival of `amount` at `now`; returns the rate at that
    /// moment (the midpoint of the estimate just before and just after the
    /// arrival, which reads a steady rate without bias).
    pub fn update(&mut self, now: Instant, amount: f64) -> f64 {
        self.decay(now);
        let mid = self.avg + amount / (2.0 * self.tau);
        self.avg += amount / self.tau;
        mid
    }

    /// The estimate at `now`, without an arrival.
    pub fn read(&mut self, now: Instant) -> f64 {
        self.decay(now);
        self.avg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, us: u64) -> Instant {
        t0 + Duration::from_micros(us)
    }

    #[test]
    fn bucket_takes_costs_and_lets_big_packets_through_in_debt() {
        let t0 = Instant::now();
        // 1000 bytes/s, depth 100 bytes.
        let mut b = BucketState::full(1000.0, 100.0, t0);
        assert!(b.take(t0, 60.0));
        assert!(!b.take(t0, 60.0));
        assert!(b.take(t0, 40.0));
        // A 500-byte packet needs a full bucket (100 tokens), then leaves
        // 400 bytes of debt: 400 ms to get back to 0 and 100 more to be
        // full.
        assert!(!b.take(at(t0, 50_000), 500.0));
        assert!(b.take(at(t0, 100_000), 500.0));
        assert!(!b.ready(at(t0, 499_000), 1.0));
        assert!(b.ready(at(t0, 501_000), 1.0));
        assert!(!b.ready(at(t0, 501_000), 100.0));
        assert!(b.ready(at(t0, 600_000), 100.0));
    }

    #[test]
    fn bucket_long_run_rate_is_exact_for_any_packet_size() {
        let t0 = Instant::now();
        // 1 MB/s, 20 ms depth, offered 1500-byte packets every 100 us
        // (15 MB/s): exactly 1 MB/s passes over 10 s, within one packet
        // plus the initial depth.
        let mut b = BucketState::full(1e6, 20_000.0, t0);
        let mut sent = 0.0f64;
        for k in 0..100_000u64 {
            if b.take(at(t0, k * 100), 1500.0) {
                sent += 1500.0;
            }
        }
        assert!((sent - 1e7).abs() <= 20_000.0 + 1500.0, "{sent}");
    }

    #[test]
    fn depth_defaults_to_20ms_and_is_at_least_one() {
        assert_eq!(depth(1000.0, None, None), 20.0);
        assert_eq!(depth(1000.0, Some(Duration::from_millis(100)), None), 100.0);
        assert_eq!(depth(1000.0, None, Some(7.0)), 7.0);
        assert_eq!(depth(10.0, None, None), 1.0);
    }

    #[test]
    fn set_rate_recomputes_depth() {
        let tb = TokenBucket::new(Unit::Packets, 1000.0, None, None);
        assert_eq!(tb.depth(), 20.0);
        tb.set_rate(Instant::now(), 5000.0);
        assert_eq!(tb.rate(), 5000.0);
        assert_eq!(tb.depth(), 100.0);
        let tb = TokenBucket::new(Unit::Packets, 1000.0, None, Some(3.0));
        tb.set_rate(Instant::now(), 5000.0);
        assert_eq!(tb.depth(), 3.0);
    }

    /// When a one-packet-at-a-time puller gets its packets from a
    /// TickBucket over `ms` milliseconds, waking when it says.
    fn tick_passes(b: &TickBucket, t0: Instant, ms: u64) -> Vec<u64> {
        let end = t0 + Duration::from_millis(ms);
        let mut now = t0;
        let mut v = Vec::new();
        while now <= end {
            if b.take_one(now) {
                v.push((now - t0).as_millis() as u64);
                continue;
            }
            match b.next_ready(now) {
                Some(t) => now = t,
                None => break,
            }
        }
        v
    }

    #[test]
    fn tick_bucket_rounds_the_rate_down_per_tick_as_click_does() {
        let t0 = Instant::now();
        // RATE 2, 20 ms of it is less than one packet: a one-packet
        // bucket, refilled by a share of a tick that is a hair under
        // 1/500 of a packet: 501 ms a packet, 20 packets in 10 s.
        let b = TickBucket::new(2.0, None, None, t0);
        assert_eq!(b.capacity(), 1);
        let v = tick_passes(&b, t0, 10_000);
        assert_eq!(&v[..3], &[0, 501, 1002]);
        assert_eq!(v.len(), 20);
        // RATE 100, BURST_SIZE 1: 11 ms a packet.
        let b = TickBucket::new(100.0, None, Some(1.0), t0);
        assert_eq!(tick_passes(&b, t0, 10_000).len(), 910);
        // RATE 2, BURST_SIZE 50: the full bucket, then the rate.
        let b = TickBucket::new(2.0, None, Some(50.0), t0);
        assert_eq!(tick_passes(&b, t0, 10_000).len(), 69);
        // A rate that divides evenly: exact.
        let b = TickBucket::new(1000.0, None, None, t0);
        assert_eq!(b.capacity(), 20);
        assert_eq!(tick_passes(&b, t0, 100).len(), 120);
        assert_eq!(TickBucket::new(200.0, None, None, t0).capacity(), 4);
    }

    #[test]
    fn byte_bucket_passes_while_not_in_debt_and_bounds_the_debt() {
        let t0 = Instant::now();
        // 1000 bytes/s, BURST_BYTES 100: a 60-byte packet goes, a second
        // goes on the 40 left (and more than that would), the third waits
        // for the debt to be repaid, at a byte a tick.
        let b = TickBucket::bytes(1000.0, None, Some(100.0), t0);
        assert_eq!(b.unit(), Unit::Bytes);
        assert_eq!(b.capacity(), 100 + BYTE_RESERVE);
        assert!(b.take_if_ready(t0, 60));
        assert!(b.take_if_ready(t0, 60));
        assert!(!b.take_if_ready(t0, 60));
        assert!(!b.ready(t0 + Duration::from_millis(10)));
        assert!(b.ready(t0 + Duration::from_millis(20)));
        // A huge packet empties the bucket: the debt is at most the
        // reserve, repaid in 131.072 s at this rate.
        let b = TickBucket::bytes(1000.0, None, Some(100.0), t0);
        assert!(b.take_if_ready(t0, 10_000_000));
        assert_eq!(
            b.next_ready(t0),
            Some(t0 + Duration::from_millis(BYTE_RESERVE))
        );
        // The packet API is unchanged: one token a packet.
        let p = TickBucket::new(1000.0, None, Some(2.0), t0);
        assert_eq!(p.unit(), Unit::Packets);
        assert!(p.take_one(t0) && p.take_one(t0) && !p.take_one(t0));
    }

    #[test]
    fn tick_bucket_holds_at_least_a_ticks_worth_of_the_rate() {
        // RATE 5000 with BURST_SIZE 1 would refill more than the bucket
        // holds each tick: the capacity grows to 5, so 5 packets a tick
        // go, as in Click (55 in 10 ms, not 11).
        let t0 = Instant::now();
        let b = TickBucket::new(5000.0, None, Some(1.0), t0);
        assert_eq!(b.capacity(), 5);
        assert_eq!(tick_passes(&b, t0, 10).len(), 55);
    }

    #[test]
    fn tick_bucket_rate_changes_keep_the_tokens_and_rate_0_never_refills() {
        let t0 = Instant::now();
        let b = TickBucket::new(1000.0, None, None, t0);
        b.take(15);
        assert_eq!(b.whole(t0), 5);
        b.set_rate(t0, 2000.0);
        assert_eq!(b.capacity(), 40);
        assert_eq!(b.whole(t0), 5);
        // Two tokens a tick now.
        assert_eq!(b.whole(t0 + Duration::from_micros(3500)), 11);
        let z = TickBucket::new(0.0, None, Some(3.0), t0);
        assert_eq!(tick_passes(&z, t0, 1000).len(), 3);
        assert_eq!(z.next_ready(t0), None);
        z.start(t0 + Duration::from_secs(5));
        assert_eq!(z.whole(t0 + Duration::from_secs(5)), 3);
    }

    #[test]
    fn ewma_reads_a_steady_rate_and_decays() {
        let t0 = Instant::now();
        let mut e = Ewma::new(METER_TAU);
        let mut r = 0.0;
        // 1000 arrivals per second for 2 s.
        for k in 0..2000u64 {
            r = e.update(at(t0, k * 1000), 1.0);
        }
        assert!((r - 1000.0).abs() < 5.0, "{r}");
        // One time constant later, e^-1 of it is left.
        let later = e.read(at(t0, 1_999_000 + 100_000));
        assert!((later / 1000.0 - (-1f64).exp()).abs() < 0.01, "{later}");
    }
}
