//! # RandomBitErrors
//!
//! RandomBitErrors(P [, KIND, ACTIVE])
//!
//! Changes packet data with some probability.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Changes each bit of each packet with probability P. KIND says how:
//! `flip` (the default) flips bits, `set` sets them to one and `clear`
//! sets them to zero. (With `set` or `clear` a chosen bit may already hold
//! that value, so fewer than P of the bits change.) Bits are chosen
//! independently; the element draws the gaps between chosen bits, so the
//! cost grows with the number of errors, not the packet length. The
//! draws come from the generator RandomSeed seeds, so a seeded run
//! repeats its errors; the errors are not Click's for the same seed (the
//! way bits are chosen differs).
//!
//! RandomBitErrors only changes bits when active. It starts out active
//! unless ACTIVE is false.
//!
//! Arguments:
//! - `P` (real number in [0, 1]): the probability of changing each bit.
//! - `KIND` (`flip`, `set` or `clear`, default `flip`).
//! - `ACTIVE` (boolean, default true).
//!
//! Handlers:
//! - `p_bit_error` (read/write): the P probability.
//! - `error_kind` (read/write): the KIND.
//! - `active` (read/write): whether the element changes bits.
//!
//! Example: a noisy link
//!
//!     ... -> RandomBitErrors(0.0001) -> CheckIPHeader -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, HandlerCx, Verdict};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

const KINDS: [&str; 3] = ["flip", "set", "clear"];

pub struct RandomBitErrors {
    /// The probability as an f64's bits.
    p: AtomicU64,
    kind: AtomicU8,
    active: AtomicBool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("RandomBitErrors", "1/1", "a", make).stateless()
}

fn prob(v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("P: probability must be between 0 and 1, not {v}"))
    }
}

fn kind(s: &str) -> Result<u8, String> {
    KINDS
        .iter()
        .position(|k| *k == s.trim())
        .map(|i| i as u8)
        .ok_or_else(|| format!("KIND: expected flip, set or clear, not '{}'", s.trim()))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RandomBitErrors, String> {
    let mut a = cx.args();
    let p = a.read_mp::<f64>("P");
    let k = a.read_p::<String>("KIND");
    let active = a.read_p::<bool>("ACTIVE").unwrap_or(true);
    a.complete()?;
    let k = match k {
        Some(k) => kind(&k)?,
        None => 0,
    };
    Ok(RandomBitErrors {
        p: AtomicU64::new(prob(p)?.to_bits()),
        kind: AtomicU8::new(k),
        active: AtomicBool::new(active),
    })
}

impl RandomBitErrors {
    fn p(&self) -> f64 {
        f64::from_bits(self.p.load(Ordering::Relaxed))
    }

    fn set_p(&self, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        let p = prob(hx.arg::<f64>(v)?)?;
        self.p.store(p.to_bits(), Ordering::Relaxed);
        Ok(())
    }
}

#[inline]
fn change(d: &mut [u8], bit: usize, kind: u8) {
    let m = 0x80u8 >> (bit % 8);
    let b = &mut d[bit / 8];
    match kind {
        0 => *b ^= m,
        1 => *b |= m,
        _ => *b &= !m,
    }
}

impl Action for RandomBitErrors {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "p_bit_error",
            |e, _| e.p().to_string(),
            |e, v, hx| e.set_p(v, hx),
        ),
        Handler::rw(
            "error_kind",
            |e, _| KINDS[usize::from(e.kind.load(Ordering::Relaxed)).min(2)].to_string(),
            |e, v, _| {
                e.kind.store(kind(v)?, Ordering::Relaxed);
                Ok(())
            },
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
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let prob = self.p();
        if !self.active.load(Ordering::Relaxed) || prob <= 0.0 || p.is_empty() {
            return Verdict::Out(0);
        }
        let kind = self.kind.load(Ordering::Relaxed);
        let d = p.data_mut();
        let nbits = d.len() * 8;
        if prob >= 1.0 {
            for bit in 0..nbits {
                change(d, bit, kind);
            }
            return Verdict::Out(0);
        }
        // Gaps between chosen bits are geometric: floor(ln U / ln(1 - P)).
        let ln_q = (1.0 - prob).ln();
        let gap = || ((1.0 - crate::util::random_unit()).ln() / ln_q) as usize;
        let mut bit = gap();
        while bit < nbits {
            change(d, bit, kind);
            bit = bit.saturating_add(1).saturating_add(gap());
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn ones(ps: &[paraclick_packet::Packet]) -> u32 {
        ps.iter()
            .flat_map(|p| p.data().iter())
            .map(|b| b.count_ones())
            .sum()
    }

    #[test]
    fn certain_and_never() {
        let h = harness("RandomBitErrors(1)", 1);
        h.push(0, vec![pkt(&[0x0f, 0x00, 0xff])]);
        assert_eq!(h.output(0)[0].data(), &[0xf0, 0xff, 0x00]);
        h.write("error_kind", "set").unwrap();
        h.push(0, vec![pkt(&[0x0f, 0x00])]);
        assert_eq!(h.output(0)[0].data(), &[0xff, 0xff]);
        h.write("error_kind", "clear").unwrap();
        assert_eq!(h.read("error_kind").unwrap(), "clear");
        h.push(0, vec![pkt(&[0x0f, 0x01])]);
        assert_eq!(h.output(0)[0].data(), &[0, 0]);

        let h = harness("RandomBitErrors(0)", 1);
        h.push(0, vec![pkt(&[0x5a; 100]), pkt(&[])]);
        assert_eq!(h.output(0)[0].data(), &[0x5a; 100]);
    }

    #[test]
    fn rate_is_about_p() {
        let h = harness("RandomBitErrors(0.5)", 1);
        h.push(0, (0..100).map(|_| pkt(&[0; 100])).collect());
        let n = ones(&h.output(0));
        // 80000 bits, mean 40000, standard deviation about 141.
        assert!((38_500..41_500).contains(&n), "{n} bits flipped");

        h.write("p_bit_error", "0.01").unwrap();
        assert_eq!(h.read("p_bit_error").unwrap(), "0.01");
        h.push(0, (0..100).map(|_| pkt(&[0; 100])).collect());
        let n = ones(&h.output(0));
        // Mean 800, standard deviation about 28.
        assert!((600..1000).contains(&n), "{n} bits flipped");
    }

    #[test]
    fn inactive_and_bad_config() {
        let h = harness("RandomBitErrors(1, flip, false)", 1);
        h.push(0, vec![pkt(&[1, 2, 3])]);
        assert_eq!(h.output(0)[0].data(), &[1, 2, 3]);
        assert_eq!(h.read("active").unwrap(), "false");
        h.write("active", "true").unwrap();
        h.push(0, vec![pkt(&[0])]);
        assert_eq!(h.output(0)[0].data(), &[0xff]);
        assert_err(
            h.write("p_bit_error", "2"),
            "e.p_bit_error: P: probability must be between 0 and 1, not 2",
        );
        assert_err(
            h.write("error_kind", "toggle"),
            "e.error_kind: KIND: expected flip, set or clear, not 'toggle'",
        );
        assert_err(
            try_harness("RandomBitErrors", 1),
            "e :: RandomBitErrors: missing mandatory P argument",
        );
        assert_err(
            try_harness("RandomBitErrors(-0.1)", 1),
            "e :: RandomBitErrors: P: probability must be between 0 and 1, not -0.1",
        );
        assert_err(
            try_harness("RandomBitErrors(0.1, wiggle)", 1),
            "e :: RandomBitErrors: KIND: expected flip, set or clear, not 'wiggle'",
        );
    }
}
