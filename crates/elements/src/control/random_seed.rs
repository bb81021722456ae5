//! # RandomSeed
//!
//! RandomSeed(\[SEED])
//!
//! Sets the random seed.
//!
//! Ports: none.
//!
//! Seeds the random number generator that paraclick's randomized elements
//! draw from (RandomSwitch, RandomSample, RandomBitErrors, InfiniteSource's
//! random data) with SEED, an unsigned integer, so that a run repeats the
//! same choices. The seed is set when RandomSeed is configured, before
//! packets flow, for every thread (each one's generator restarts from
//! SEED); without SEED, with an unpredictable one. Like Click's, the seed
//! is process-wide. The sequence is paraclick's generator's, not the one
//! Click's `random()` gives for the same seed.
//!
//! Handlers:
//! - `seed` (write): reseeds, with the value written, or (empty) with a
//!   fresh unpredictable seed.
//!
//! Example:
//!
//!     RandomSeed(1);
//!     InfiniteSource(LIMIT 10) -> RandomSwitch -> ...

use paraclick_runtime::prelude::*;

pub struct RandomSeed;

pub fn spec() -> ClassSpec {
    ClassSpec::element("RandomSeed", "0/0", "a", make).shared("the random generator's seed")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RandomSeed, String> {
    let mut a = cx.args();
    let seed = a.read_p::<u64>("SEED");
    a.complete()?;
    crate::util::set_random_seed(seed.unwrap_or_else(fresh_seed));
    Ok(RandomSeed)
}

/// An unpredictable seed (the standard library's per-process random
/// hash keys, mixed with the clock).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

impl Element for RandomSeed {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::write("seed", |_, v, hx| {
        let seed = if v.trim().is_empty() {
            fresh_seed()
        } else {
            hx.arg::<u64>(v)?
        };
        crate::util::set_random_seed(seed);
        Ok(())
    })];
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::{build_simtime, run, sink};

    /// The outputs RandomSwitch picks for 64 packets after RandomSeed.
    fn picks(seed: &str) -> Vec<u8> {
        let conf = format!(
            "RandomSeed({seed}); \
             InfiniteSource(DATA \\<00>, LIMIT 64, STOP true) -> r :: RandomSwitch; \
             r[0] -> Paint(0) -> s :: TestSink; r[1] -> Paint(1) -> s; \
             r[2] -> Paint(2) -> s; r[3] -> Paint(3) -> s;"
        );
        let r = build_simtime(&reg(), &conf);
        run(&r);
        sink(&r, "s").iter().map(|p| p.anno().paint).collect()
    }

    /// One test: the seed is process-wide, so tests setting it in
    /// parallel would disturb each other.
    #[test]
    fn a_seed_repeats_the_choices() {
        let a = picks("7");
        assert_eq!(a.len(), 64);
        assert_eq!(picks("7"), a, "the same seed, the same choices");
        assert_ne!(picks("8"), a, "another seed, other choices");

        let h = harness_io("RandomSeed(1)", 0, 0);
        h.write("seed", "99").unwrap();
        h.write("seed", "").unwrap();
        assert!(h.write("seed", "x").is_err());
        assert_err(
            try_harness_io("RandomSeed(-1)", 0, 0),
            "SEED: expected unsigned integer",
        );
    }
}
