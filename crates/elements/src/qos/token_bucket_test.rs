//! # TokenBucketTest
//!
//! TokenBucketTest()
//!
//! Runs the token bucket's regression tests when the router initializes.
//!
//! Ports: none.
//!
//! A test element, as in Click's suite: it routes no packets. At
//! initialization it checks the token bucket that the rate elements share
//! (RatedSplitter, RatedUnqueue, Shaper, their bandwidth versions, Meter,
//! SharedTokenBucket), on made-up times: a new bucket is full to its
//! depth; taking tokens empties it; tokens come back at the rate, never
//! beyond the depth, and fractions of a token accumulate; a clock that
//! runs backwards adds nothing; a cost larger than the depth passes when
//! the bucket is full and leaves it in debt until the rate has paid it
//! back; SharedTokenBucket's strategies grant one token or as many as
//! there are. It then prints `All tests pass!` on standard error (in
//! Click's form, under `FILE:LINE: While initializing 'NAME ::
//! TokenBucketTest':`, when standard error is not a terminal), or fails
//! to initialize, naming each failed check. `paraclick check`
//! configures it without running the tests.
//!
//! Example:
//!
//!     TokenBucketTest

use super::rate::Tokens;
use crate::sched::shared_token_bucket::{BucketState, Strategy};
use paraclick_runtime::prelude::*;
use std::time::{Duration, Instant};

pub struct TokenBucketTest;

pub fn spec() -> ClassSpec {
    ClassSpec::element("TokenBucketTest", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TokenBucketTest, String> {
    cx.args().complete()?;
    Ok(TokenBucketTest)
}

/// The failed checks of the bucket arithmetic `B` (none: all pass).
pub(crate) fn failures<B: Tokens>() -> Vec<String> {
    let mut bad = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            bad.push(what.to_string());
        }
    };
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);

    // 10 tokens/s, 5 deep.
    let mut b = B::full(10.0, 5.0, t0);
    check(b.whole(t0) == 5, "a new bucket is full");
    let taken = (0..6).filter(|_| b.take(t0, 1.0)).count();
    check(taken == 5, "a full bucket gives its depth, then nothing");
    check(!b.ready(at(50), 1.0), "half a token is not a token");
    check(b.take(at(150), 1.0), "tokens come back at the rate");
    check(!b.take(at(150), 1.0), "only what was earned");
    check(
        b.whole(at(100_000)) == 5,
        "an idle bucket fills to its depth only",
    );
    let mut c = B::full(10.0, 5.0, at(1000));
    c.take(at(1000), 5.0);
    check(c.whole(at(500)) == 0, "time running backwards adds nothing");
    check(
        c.whole(at(1250)) == 2,
        "...and the bucket goes on from where it was",
    );

    // Fractional rates accumulate.
    let mut f = B::full(2.5, 10.0, t0);
    f.take(t0, 10.0);
    check(
        f.whole(at(1000)) == 2,
        "2.5 tokens/s: 2 whole tokens after 1 s",
    );
    check(f.whole(at(2000)) == 5, "...and 5 after 2 s");

    // A cost above the depth: passes when full, then the bucket owes it.
    let mut d = B::full(10.0, 2.0, t0);
    check(d.take(t0, 5.0), "a large cost passes a full bucket");
    check(
        !d.ready(at(390), 1.0),
        "the debt is paid before the next token",
    );
    check(d.ready(at(410), 1.0), "...and then the next token comes");

    // SharedTokenBucket's strategies.
    let mut s = BucketState::new(100.0, 8, t0);
    check(
        s.acquire_at(t0, 5, Strategy::One) == 1,
        "strategy one grants one",
    );
    check(
        s.acquire_at(t0, 50, Strategy::Min) == 7,
        "strategy min grants the rest",
    );
    check(
        s.acquire_at(t0, 1, Strategy::Min) == 0,
        "an empty bucket grants nothing",
    );
    check(
        s.acquire_at(at(35), 5, Strategy::Min) == 3,
        "100/s for 35 ms: 3 tokens",
    );
    bad
}

impl Element for TokenBucketTest {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if ix.checking() {
            return Ok(());
        }
        let bad = failures::<BucketState>();
        if !bad.is_empty() {
            return Err(format!("token bucket checks failed: {}", bad.join("; ")));
        }
        ix.message("All tests pass!");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::rate::Tokens;
    use super::*;

    #[test]
    fn the_shared_bucket_passes() {
        assert_eq!(failures::<BucketState>(), Vec::<String>::new());
        paraclick_runtime::testing::build(&crate::test_kit::reg(), "TokenBucketTest");
    }

    /// A bucket that forgets its depth when refilling.
    struct Bottomless(BucketState);

    impl Tokens for Bottomless {
        fn full(rate: f64, depth: f64, now: Instant) -> Self {
            Bottomless(BucketState::full(rate, depth, now))
        }
        fn ready(&mut self, now: Instant, need: f64) -> bool {
            let s = &mut self.0;
            s.tokens += s.rate * now.saturating_duration_since(s.last).as_secs_f64();
            s.last = s.last.max(now);
            s.tokens >= need
        }
        fn take(&mut self, now: Instant, cost: f64) -> bool {
            let ok = self.ready(now, cost);
            if ok {
                self.0.tokens -= cost;
            }
            ok
        }
        fn whole(&mut self, now: Instant) -> usize {
            self.ready(now, 0.0);
            self.0.tokens.floor().max(0.0) as usize
        }
    }

    #[test]
    fn a_broken_bucket_fails() {
        let bad = failures::<Bottomless>();
        assert!(
            bad.iter()
                .any(|b| b == "an idle bucket fills to its depth only"),
            "{bad:?}"
        );
    }

    #[test]
    fn takes_no_arguments() {
        paraclick_runtime::testing::assert_err(
            crate::test_kit::try_source("TokenBucketTest(1)", 0),
            "too many arguments",
        );
    }
}
