//! # RandomSample
//!
//! RandomSample([P, keywords SAMPLE, DROP, ACTIVE])
//!
//! Samples packets with some probability.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Sends each packet to output 0 with probability P. Packets not sampled
//! go out output 1 if it is connected, and are dropped (counted)
//! otherwise. As in Click, P is kept in 28-bit fixed point, and a packet
//! is sampled when a draw's low 28 bits fall below it; after RandomSeed
//! the packets sampled are those Click samples for the same seed.
//!
//! Arguments:
//! - `P` or `SAMPLE` (real number in [0, 1]): the sampling probability.
//! - `DROP` (real number in [0, 1]): the probability of not sampling, 1
//!   − P. Give exactly one of P/SAMPLE and DROP.
//! - `ACTIVE` (boolean, default true): if false, every packet goes to
//!   output 0.
//!
//! Handlers:
//! - `sampling_prob` (read/write): the sampling probability.
//! - `drop_prob` (read/write): 1 − the sampling probability.
//! - `active` (read/write): ACTIVE.
//!
//! Example:
//!
//!     ... -> RandomSample(0.01) -> ToDump(sample.pcap);

use crate::util::fmt_rate;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, HandlerCx, Verdict};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

pub struct RandomSample {
    /// The sampling probability as an f64's bits.
    p: AtomicU64,
    /// The probability in 28-bit fixed point, as Click keeps it: a packet
    /// is sampled when the low 28 bits of a draw are below it.
    fixed: AtomicU32,
    active: AtomicBool,
}

/// Fraction bits of the sampling probability (Click's).
const SHIFT: u32 = 28;
const MASK: u32 = (1 << SHIFT) - 1;

/// `p` in [0, 1] as 28-bit fixed point, rounded to nearest.
fn fixed(p: f64) -> u32 {
    (p * f64::from(1u32 << SHIFT)).round() as u32
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["not sampled"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("RandomSample", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn prob(v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("probability must be between 0 and 1, not {v}"))
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RandomSample, String> {
    let mut a = cx.args();
    let p = a.read_p::<f64>("P");
    let sample = a.read::<f64>("SAMPLE");
    let drop = a.read::<f64>("DROP");
    let active = a.read("ACTIVE").unwrap_or(true);
    let given: Vec<f64> = [p, sample, drop.map(|d| 1.0 - d)]
        .into_iter()
        .flatten()
        .collect();
    if given.len() != 1 {
        a.error("give exactly one of P, SAMPLE and DROP");
    }
    let v = given.first().copied().unwrap_or(1.0);
    if let Err(e) = prob(v) {
        a.error(e);
    }
    a.complete()?;
    Ok(RandomSample {
        p: AtomicU64::new(v.to_bits()),
        fixed: AtomicU32::new(fixed(v)),
        active: AtomicBool::new(active),
    })
}

impl RandomSample {
    fn p(&self) -> f64 {
        f64::from_bits(self.p.load(Ordering::Relaxed))
    }

    fn set(&self, v: &str, hx: &HandlerCx<'_>, drop: bool) -> Result<(), String> {
        let x = prob(hx.arg::<f64>(v)?)?;
        let p = if drop { 1.0 - x } else { x };
        self.p.store(p.to_bits(), Ordering::Relaxed);
        self.fixed.store(fixed(p), Ordering::Relaxed);
        Ok(())
    }
}

impl Action for RandomSample {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "sampling_prob",
            |e, _| fmt_rate(e.p()),
            |e, v, hx| e.set(v, hx, false),
        ),
        Handler::rw(
            "drop_prob",
            |e, _| fmt_rate(1.0 - e.p()),
            |e, v, hx| e.set(v, hx, true),
        ),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
        if !self.active.load(Ordering::Relaxed)
            || (crate::util::random() & MASK) < self.fixed.load(Ordering::Relaxed)
        {
            Verdict::Out(0)
        } else if cx.noutputs() > 1 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn many(n: usize) -> Vec<paraclick_packet::Packet> {
        (0..n).map(|_| pkt(&[1])).collect()
    }

    #[test]
    fn samples_about_p_and_splits_the_rest() {
        let h = harness("RandomSample(0.25)", 2);
        // In rounds, so the packet pool is never exhausted.
        let (mut s, mut r) = (0, 0);
        for _ in 0..40 {
            h.push(0, many(500));
            s += h.output(0).len();
            r += h.output(1).len();
        }
        assert_eq!(s + r, 20000);
        assert!((4400..5600).contains(&s), "{s} sampled");
        assert_eq!(h.drops(), 0);
        h.write("drop_prob", "1").unwrap();
        assert_eq!(h.read("sampling_prob").unwrap(), "0");
        h.push(0, many(100));
        assert!(h.output(0).is_empty());
        h.write("active", "false").unwrap();
        h.push(0, many(10));
        assert_eq!(h.output(0).len(), 10, "inactive: all to output 0");
    }

    #[test]
    fn unsampled_dropped_with_one_output_and_bad_config() {
        let h = harness("RandomSample(DROP 1)", 1);
        h.push(0, many(50));
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 50);
        let h = harness("RandomSample(SAMPLE 1)", 1);
        h.push(0, many(50));
        assert_eq!(h.output(0).len(), 50);
        assert_err(
            h.write("sampling_prob", "1.5"),
            "e.sampling_prob: probability must be between 0 and 1, not 1.5",
        );
        for (bad, want) in [
            (
                "RandomSample",
                "e :: RandomSample: give exactly one of P, SAMPLE and DROP",
            ),
            (
                "RandomSample(2)",
                "e :: RandomSample: probability must be between 0 and 1, not 2",
            ),
            (
                "RandomSample(0.5, DROP 0.5)",
                "e :: RandomSample: give exactly one of P, SAMPLE and DROP",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
