//! # RandomSource
//!
//! RandomSource([LENGTH, keywords LIMIT, BURST, ACTIVE, STOP, END_CALL])
//!
//! Generates packets of random bytes as fast as it is scheduled.
//!
//! Like InfiniteSource, but each packet's LENGTH bytes are freshly random.
//! After RandomSeed the bytes are Click's for the same seed: each 4 bytes
//! one draw, little-endian.
//!
//! Ports: no inputs, 1 output. Processing: agnostic.
//!
//! Arguments:
//! - `LENGTH` (integer, default 64, at most 65549): packet length in bytes.
//! - `LIMIT` (integer, at most 2^48-1, default -1): total packets to send; -1 means no limit.
//! - `BURST` (integer, default 1, at most 65536): packets per task run.
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//! - `END_CALL` (write handler and value): called after LIMIT packets.
//!
//! Handlers: `count` (read), `reset` (write), `active`, `limit`, `burst`
//! (read/write), as for InfiniteSource.
//!
//! Example:
//!
//!     RandomSource(60, LIMIT 100, STOP true) -> Discard;

use super::infinite_source::{make_random, InfiniteSource, RandomConfig};
use paraclick_runtime::{ClassSpec, ConfigCx, Kind};

pub fn spec() -> ClassSpec {
    ClassSpec::element("RandomSource", "0/1", "a", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .drop_reasons(super::gen::POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<InfiniteSource, String> {
    let mut a = cx.args();
    let length = a.read_p::<usize>("LENGTH").unwrap_or(64);
    let limit = a.read::<i64>("LIMIT").unwrap_or(-1);
    let burst = a.read::<usize>("BURST").unwrap_or(1);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let end_call = a.read::<String>("END_CALL");
    a.complete()?;
    make_random(
        cx,
        RandomConfig {
            length,
            limit,
            burst,
            active,
            stop,
            end_call,
        },
    )
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{source as harness, try_source as try_harness};
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn lengths_limit_and_random_contents() {
        for burst in [1, 4] {
            let h = harness(
                &format!("RandomSource(40, LIMIT 10, BURST {burst}, STOP true)"),
                1,
            );
            h.router.run();
            let out = h.output(0);
            assert_eq!(out.len(), 10);
            assert!(out.iter().all(|p| p.len() == 40));
            assert_eq!(h.read("count").unwrap(), "10");
            // 40 random bytes: two equal packets have odds 2^-320.
            for i in 1..out.len() {
                assert_ne!(out[i].data(), out[i - 1].data());
            }
            assert!(out.iter().any(|p| p.data().iter().any(|&b| b != 0)));
        }
    }

    #[test]
    fn default_length_and_bad_configs() {
        let h = harness("RandomSource(LIMIT 2, STOP true)", 1);
        h.router.run();
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), 64);
        assert_err(
            try_harness("RandomSource(BURST 0)", 1),
            "e :: RandomSource: BURST must be between 1 and 65536, not 0",
        );
        assert_err(
            try_harness("RandomSource(-3)", 1),
            "e :: RandomSource: LENGTH: expected unsigned integer",
        );
        assert_err(
            try_harness("RandomSource(STOP true, END_CALL x.y)", 1),
            "e :: RandomSource: END_CALL and STOP are mutually exclusive",
        );
    }
}
