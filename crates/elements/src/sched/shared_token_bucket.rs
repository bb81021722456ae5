//! # SharedTokenBucket
//!
//! SharedTokenBucket(NAME, RATE, BURST, [keywords STRATEGY])
//!
//! Defines a token bucket shared by the output tasks of several threads
//! (coordinated output processing, "Forwarding path architectures for
//! multicore software routers", PRESTO 2010, section 6.2).
//!
//! The bucket is a small structure behind a lock (the paper's lock). It
//! fills at RATE tokens per second, from the time elapsed since it was last
//! touched, up to BURST tokens, and starts full. Each packet sent by a
//! \[CoordinatedUnqueue] that names this element costs one token; packets are
//! sent *after* the lock is released. Other elements refer to the bucket
//! by this element's name. The bucket runs on the router's clock, from
//! the router's start: under `--simtime` it fills in simulated time.
//!
//! Ports: none. Processing: none.
//!
//! Arguments:
//! - `NAME` (string): a label for the bucket (shown by the `name` handler;
//!   elements find the bucket by element name).
//! - `RATE` (real, packets per second, > 0): the long-term rate.
//! - `BURST` (integer, >= 1): bucket depth, the largest burst.
//! - `STRATEGY` (`one` or `min`, default `min`): how tokens are acquired.
//!   `one`: one token per lock acquisition, so every packet takes the lock
//!   once ("1-token"). `min`: one acquisition grants min(tokens, packets
//!   waiting) ("min(N,Q)").
//!
//! Handlers:
//! - `acquisitions` (read): lock acquisitions.
//! - `granted` (read): tokens granted (packets allowed through).
//! - `contended` (read): acquisitions that found the lock held (try_lock
//!   failures) and had to wait.
//! - `tokens` (read): whole tokens in the bucket now.
//! - `rate` (read/write): tokens per second.
//! - `burst` (read), `strategy` (read), `name` (read).
//!
//! Example:
//!
//!     tb :: SharedTokenBucket(out0, 1000000, 100, STRATEGY min);
//!     q0 -> CoordinatedUnqueue(tb) -> ToDevice(eth0, QUEUE 0);
//!     q1 -> CoordinatedUnqueue(tb) -> ToDevice(eth0, QUEUE 1);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, InitCx};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Instant;

/// How a bucket hands out tokens per lock acquisition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One token per acquisition ("1-token").
    One,
    /// min(tokens, packets wanted) per acquisition ("min(N,Q)").
    Min,
}

impl Strategy {
    fn parse(s: &str) -> Result<Strategy, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "one" | "1" | "1-token" => Ok(Strategy::One),
            "min" => Ok(Strategy::Min),
            o => Err(format!("STRATEGY must be 'one' or 'min', not '{o}'")),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Strategy::One => "one",
            Strategy::Min => "min",
        }
    }
}

/// The bucket arithmetic, a pure function of the times it is given.
#[derive(Clone, Debug)]
pub struct BucketState {
    pub tokens: f64,
    pub last: Instant,
    pub rate: f64,
    pub burst: f64,
}

impl BucketState {
    /// A full bucket at time `now`.
    pub fn new(rate: f64, burst: u64, now: Instant) -> BucketState {
        BucketState {
            tokens: burst as f64,
            last: now,
            rate,
            burst: burst as f64,
        }
    }

    /// Adds the tokens earned since the last refill, capped at the depth.
    /// Time never runs backwards here: an earlier `now` adds nothing.
    pub fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        if dt > 0.0 {
            self.tokens = (self.tokens + self.rate * dt).min(self.burst);
            self.last = now;
        }
    }

    /// Refills to `now`, then grants tokens for up to `want` packets
    /// following `strategy`; returns how many were granted.
    pub fn acquire_at(&mut self, now: Instant, want: usize, strategy: Strategy) -> usize {
        self.refill(now);
        let whole = self.tokens.floor().max(0.0) as usize;
        let n = match strategy {
            Strategy::One => whole.min(want).min(1),
            Strategy::Min => whole.min(want),
        };
        self.tokens -= n as f64;
        n
    }
}

/// The shared bucket: state behind the lock, plus statistics.
pub struct Bucket {
    state: Mutex<BucketState>,
    pub strategy: Strategy,
    acquisitions: AtomicU64,
    granted: AtomicU64,
    contended: AtomicU64,
}

impl Bucket {
    pub fn new(rate: f64, burst: u64, strategy: Strategy) -> Bucket {
        Bucket {
            state: Mutex::new(BucketState::new(rate, burst, Instant::now())),
            strategy,
            acquisitions: AtomicU64::new(0),
            granted: AtomicU64::new(0),
            contended: AtomicU64::new(0),
        }
    }

    /// One lock acquisition at time `now` (the router's clock): grants up
    /// to `want` tokens (at most one with the `one` strategy).
    pub fn acquire(&self, now: Instant, want: usize) -> usize {
        if want == 0 {
            return 0;
        }
        let mut g = match self.state.try_lock() {
            Ok(g) => g,
            Err(TryLockError::WouldBlock) => {
                self.contended.fetch_add(1, Ordering::Relaxed);
                self.state.lock().unwrap_or_else(|e| e.into_inner())
            }
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
        };
        let n = g.acquire_at(now, want, self.strategy);
        drop(g);
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        if n > 0 {
            self.granted.fetch_add(n as u64, Ordering::Relaxed);
        }
        n
    }

    /// Tokens for up to `want` packets at time `now` by the bucket's
    /// strategy: `one` takes the lock once per packet until a grant fails,
    /// `min` takes it once.
    pub fn acquire_for(&self, now: Instant, want: usize) -> usize {
        match self.strategy {
            Strategy::Min => self.acquire(now, want),
            Strategy::One => {
                let mut got = 0;
                while got < want && self.acquire(now, 1) == 1 {
                    got += 1;
                }
                got
            }
        }
    }

    /// When the bucket will next hold a whole token, seen at `now`: a
    /// waiting sender's wake-up time (simulated time jumps to it).
    pub fn next_token_at(&self, now: Instant) -> Instant {
        self.with_state(|s| {
            s.refill(now);
            let missing = 1.0 - s.tokens;
            if missing <= 0.0 {
                now
            } else {
                s.last.max(now) + std::time::Duration::from_secs_f64(missing / s.rate)
            }
        })
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut BucketState) -> T) -> T {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    pub fn acquisitions(&self) -> u64 {
        self.acquisitions.load(Ordering::Relaxed)
    }
    pub fn granted(&self) -> u64 {
        self.granted.load(Ordering::Relaxed)
    }
    pub fn contended(&self) -> u64 {
        self.contended.load(Ordering::Relaxed)
    }
}

pub struct SharedTokenBucket {
    name: String,
    bucket: Arc<Bucket>,
}

impl SharedTokenBucket {
    /// The shared state, for elements that draw on this bucket.
    pub fn bucket(&self) -> Arc<Bucket> {
        self.bucket.clone()
    }
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("SharedTokenBucket", "0/0", "a", make)
        .shared("a rate or schedule shared by all flows")
}

fn parse_rate(r: f64) -> Result<f64, String> {
    if r.is_finite() && r > 0.0 {
        Ok(r)
    } else {
        Err(format!("RATE must be a positive number, not {r}"))
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SharedTokenBucket, String> {
    let mut a = cx.args();
    let name = a.read_mp::<String>("NAME");
    let rate = parse_rate(a.read_mp::<f64>("RATE"))?;
    let burst = a.read_mp::<u64>("BURST");
    let strategy = match a.read::<String>("STRATEGY") {
        Some(s) => Strategy::parse(&s)?,
        None => Strategy::Min,
    };
    a.complete()?;
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    Ok(SharedTokenBucket {
        name,
        bucket: Arc::new(Bucket::new(rate, burst, strategy)),
    })
}

impl Element for SharedTokenBucket {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("acquisitions", |e, _| e.bucket.acquisitions().to_string()),
        Handler::read("granted", |e, _| e.bucket.granted().to_string()),
        Handler::read("contended", |e, _| e.bucket.contended().to_string()),
        Handler::read("tokens", |e, hx| {
            e.bucket
                .with_state(|s| {
                    s.refill(hx.now());
                    s.tokens.floor() as u64
                })
                .to_string()
        }),
        Handler::rw(
            "rate",
            |e, _| e.bucket.with_state(|s| s.rate).to_string(),
            |e, v, hx| {
                let r = parse_rate(hx.arg(v)?)?;
                e.bucket.with_state(|s| {
                    // Tokens earned so far count at the old rate.
                    s.refill(hx.now());
                    s.rate = r;
                });
                Ok(())
            },
        ),
        Handler::read("burst", |e, _| {
            e.bucket.with_state(|s| s.burst as u64).to_string()
        }),
        Handler::read("strategy", |e, _| e.bucket.strategy.name().to_string()),
        Handler::read("name", |e, _| e.name.clone()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // The bucket fills from the router's start on its clock (which is
        // simulated under --simtime), not from when it was configured.
        let now = ix.now();
        self.bucket.with_state(|s| s.last = now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::{Registry, Router};
    use std::time::Duration;

    fn ms(t0: Instant, m: u64) -> Instant {
        t0 + Duration::from_millis(m)
    }

    #[test]
    fn starts_full_and_min_grants_min_of_tokens_and_wanted() {
        let t0 = Instant::now();
        let mut s = BucketState::new(1000.0, 10, t0);
        assert_eq!(s.acquire_at(t0, 4, Strategy::Min), 4);
        assert_eq!(s.acquire_at(t0, 100, Strategy::Min), 6);
        assert_eq!(s.acquire_at(t0, 100, Strategy::Min), 0);
        // 1000/s: 3 ms earns 3 tokens.
        assert_eq!(s.acquire_at(ms(t0, 3), 100, Strategy::Min), 3);
        // Fractions accumulate: 0.5 ms twice is one token.
        let t = ms(t0, 3) + Duration::from_micros(500);
        assert_eq!(s.acquire_at(t, 5, Strategy::Min), 0);
        assert_eq!(s.acquire_at(ms(t0, 4), 5, Strategy::Min), 1);
        assert_eq!(s.acquire_at(ms(t0, 4), 0, Strategy::Min), 0);
    }

    #[test]
    fn one_grants_a_single_token_per_acquisition() {
        let t0 = Instant::now();
        let mut s = BucketState::new(1000.0, 3, t0);
        assert_eq!(s.acquire_at(t0, 10, Strategy::One), 1);
        assert_eq!(s.acquire_at(t0, 10, Strategy::One), 1);
        assert_eq!(s.acquire_at(t0, 10, Strategy::One), 1);
        assert_eq!(s.acquire_at(t0, 10, Strategy::One), 0);
        assert_eq!(s.acquire_at(ms(t0, 1), 0, Strategy::One), 0);
        assert_eq!(s.acquire_at(ms(t0, 1), 10, Strategy::One), 1);
    }

    #[test]
    fn refill_caps_at_burst_and_ignores_time_going_backwards() {
        let t0 = Instant::now();
        let mut s = BucketState::new(1000.0, 10, t0);
        assert_eq!(s.acquire_at(t0, 10, Strategy::Min), 10);
        // An hour later the bucket holds only BURST.
        let later = t0 + Duration::from_secs(3600);
        assert_eq!(s.acquire_at(later, 1000, Strategy::Min), 10);
        // An earlier time adds nothing and does not move `last` back.
        assert_eq!(s.acquire_at(t0, 1000, Strategy::Min), 0);
        assert_eq!(s.last, later);
        assert_eq!(
            s.acquire_at(later + Duration::from_millis(2), 9, Strategy::Min),
            2
        );
    }

    #[test]
    fn bucket_counts_acquisitions_and_grants() {
        let b = Bucket::new(1.0, 5, Strategy::One);
        let t = Instant::now();
        assert_eq!(b.acquire_for(t, 3), 3);
        assert_eq!(b.acquisitions(), 3);
        // Two tokens left: two grants, then one failed acquisition.
        assert_eq!(b.acquire_for(t, 10), 2);
        assert_eq!(b.acquisitions(), 6);
        assert_eq!(b.granted(), 5);
        assert_eq!(b.contended(), 0);
        let m = Bucket::new(1.0, 5, Strategy::Min);
        let t = Instant::now();
        assert_eq!(m.acquire_for(t, 3), 3);
        assert_eq!(m.acquire_for(t, 10), 2);
        assert_eq!(m.acquire_for(t, 10), 0);
        // One token a second: the next is due a second after the bucket
        // was last refilled.
        let due = m.next_token_at(t);
        assert!(due > t && due <= t + Duration::from_secs(1), "{due:?}");
        assert_eq!(m.acquisitions(), 3);
        assert_eq!(m.granted(), 5);
    }

    fn reg() -> Registry {
        let mut r = Registry::new();
        super::super::register(&mut r);
        r
    }

    #[test]
    fn element_config_and_handlers() {
        let conf = "tb :: SharedTokenBucket(out, 500.5, 7, STRATEGY one);";
        let r = Router::from_str(conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(r.read_handler("tb.rate").unwrap(), "500.5");
        assert_eq!(r.read_handler("tb.burst").unwrap(), "7");
        assert_eq!(r.read_handler("tb.tokens").unwrap(), "7");
        assert_eq!(r.read_handler("tb.strategy").unwrap(), "one");
        assert_eq!(r.read_handler("tb.name").unwrap(), "out");
        assert_eq!(r.read_handler("tb.acquisitions").unwrap(), "0");
        r.write_handler("tb.rate", "2000").unwrap();
        assert_eq!(r.read_handler("tb.rate").unwrap(), "2000");
        assert_err(
            r.write_handler("tb.rate", "-1"),
            "tb.rate: RATE must be a positive number, not -1",
        );
        assert_err(
            r.write_handler("tb.rate", "x"),
            "tb.rate: expected real number",
        );
        let conf = "tb :: SharedTokenBucket(out, 10, 7);";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        assert_eq!(r.read_handler("tb.strategy").unwrap(), "min");
        for (bad, want) in [
            ("SharedTokenBucket(out, 0, 7)", "<config>:1:1: SharedTokenBucket@1 :: SharedTokenBucket: RATE must be a positive number, not 0"),
            ("SharedTokenBucket(out, 10, 0)", "<config>:1:1: SharedTokenBucket@1 :: SharedTokenBucket: BURST must be at least 1"),
            ("SharedTokenBucket(out, 10)", "<config>:1:1: SharedTokenBucket@1 :: SharedTokenBucket: missing mandatory BURST argument"),
            ("SharedTokenBucket(out, 10, 5, STRATEGY two)", "<config>:1:1: SharedTokenBucket@1 :: SharedTokenBucket: STRATEGY must be 'one' or 'min', not 'two'"),
        ] {
            assert_err(Router::from_str(bad, &reg(), 1), want);
        }
    }
}
