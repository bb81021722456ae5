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
