//! # RandomSeed
//!
//! RandomSeed(\[SEED])
//!
//! Sets the random seed.
//!
//! Ports: none.
//!
//! Seeds the random number generator that paraclick's randomized elements
//! draw from (the rewriters' port and address choices, RandomSwitch,
//! RandomSample, RandomBitErrors, SetRandIPAddress, RandomSource,
//! InfiniteSource's random data, RED's drops) with SEED, an unsigned
//! 32-bit integer, so that a run repeats the same choices. The seed is set
//! when RandomSeed is configured, before packets flow.
//!
//! Seeded, the generator is Click's userlevel one: the stream glibc's
//! `random()` gives after `srandom(SEED)`, one stream for the whole
//! process, and each element maps its draws as Click's does, so a
//! configuration makes the choices Click makes with the same seed (for
//! example, `RandomSeed(1)` makes a rewriter's first random pick in
//! 1024-65534 port 55226). The stream is shared by every thread, so a
//! seeded run repeats exactly when one thread draws from it (`-j 1`, or
//! every random element on one thread); with several, the draws
//! interleave as the threads happen to reach it. Without a seed (no
//! RandomSeed, or RandomSeed without SEED) each thread draws from its own
//! fast generator, unpredictably seeded.
//!
//! Handlers:
//! - `seed` (write): reseeds with the value written, or (empty) goes back
//!   to unpredictable draws.
//!
//! Example:
//!
//!     RandomSeed(1);
//!     InfiniteSource(LIMIT 10) -> RandomSwitch -> ...

use paraclick_runtime::prelude::*;

pub struct RandomSeed;

pub fn spec() -> ClassSpec {
    // Configured before the other elements (as Click's), so draws made
    // while configuring (SetRandIPAddress's LIMIT) come from the seed.
    ClassSpec::element("RandomSeed", "0/0", "a", make)
        .phase(-100)
        .shared("the random generator's seed")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RandomSeed, String> {
    let mut a = cx.args();
    let seed = a.read_p::<u32>("SEED");
    a.complete()?;
    crate::util::set_random_seed(seed);
    Ok(RandomSeed)
}

impl Element for RandomSeed {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::write("seed", |_, v, hx| {
        let seed = if v.trim().is_empty() {
            None
        } else {
            Some(hx.arg::<u32>(v)?)
        };
        crate::util::set_random_seed(seed);
        Ok(())
    })];
}

// Tests: crates/elements/tests/seeded.rs (the seeded stream is process-wide,
// so its tests run in a test binary of their own).
