//! The anti-replay window of RFC 4303 §3.4.3 (the bitmap scheme of its
//! Appendix A2 with 32-bit sequence numbers): the highest sequence number
//! accepted so far and a bitmap of which of the `size` numbers at and below
//! it have been seen. Sequence number 0 is never valid (senders start at 1).
//!
//! `check` is the cheap test done before the integrity check (to drop
//! replays without spending a MAC on them); `update` is done only after
//! the packet authenticated, and checks again (another thread may have
//! accepted the same number meanwhile).

/// Largest supported window (bits of the bitmap).
pub const MAX_WINDOW: u32 = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayVerdict {
    Ok,
    /// Already received.
    Duplicate,
    /// Older than the window (or 0).
    TooOld,
}

#[derive(Debug, Clone)]
pub struct ReplayWindow {
    size: u32,
    top: u32,
    /// Bit i: sequence number `top - i` has been received.
    bits: u128,
}

impl ReplayWindow {
    /// A window of `size` packets (1..=128); 0 disables replay protection
    /// (every non-zero number is accepted, as with Linux `replay-window 0`).
    pub fn new(size: u32) -> ReplayWindow {
        ReplayWindow {
            size: size.min(MAX_WINDOW),
            top: 0,
            bits: 0,
        }
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// The highest sequence number accepted so far.
    pub fn top(&self) -> u32 {
        self.top
    }

    pub fn check(&self, seq: u32) -> ReplayVerdict {
        if seq == 0 {
            return ReplayVerdict::TooOld;
        }
        if self.size == 0 || seq > self.top {
            return ReplayVerdict::Ok;
        }
        let diff = self.top - seq;
        if diff >= self.size {
            ReplayVerdict::TooOld
        } else if self.bits & (1u128 << diff) != 0 {
            ReplayVerdict::Duplicate
        } else {
            ReplayVerdict::Ok
        }
    }

    /// Checks `seq` again and, if acceptable, records it.
    pub fn update(&mut self, seq: u32) -> ReplayVerdict {
        let v = self.check(seq);
        if v != ReplayVerdict::Ok || self.size == 0 {
            if v == ReplayVerdict::Ok && seq > self.top {
                self.top = seq;
            }
            return v;
        }
        if seq > self.top {
            let shift = seq - self.top;
            self.bits = if shift >= 128 { 0 } else { self.bits << shift };
            self.bits |= 1;
            self.top = seq;
        } else {
            self.bits |= 1u128 << (self.top - seq);
        }
        if self.size < 128 {
            self.bits &= (1u128 << self.size) - 1;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReplayVerdict::*;

    #[test]
    fn in_order_and_duplicates() {
        let mut w = ReplayWindow::new(64);
        assert_eq!(w.check(0), TooOld);
        for s in 1..=200 {
            assert_eq!(w.update(s), Ok);
            assert_eq!(w.update(s), Duplicate);
        }
        assert_eq!(w.top(), 200);
        assert_eq!(w.check(136), TooOld);
        assert_eq!(w.check(137), Duplicate);
    }

    #[test]
    fn out_of_order_within_window() {
        let mut w = ReplayWindow::new(64);
        assert_eq!(w.update(100), Ok);
        assert_eq!(w.update(37), Ok, "100 - 37 = 63 < 64");
        assert_eq!(w.update(36), TooOld);
        assert_eq!(w.update(99), Ok);
        assert_eq!(w.update(99), Duplicate);
        assert_eq!(w.update(37), Duplicate);
        // A jump beyond the window forgets everything below it.
        assert_eq!(w.update(1000), Ok);
        assert_eq!(w.check(999), Ok);
        assert_eq!(w.check(936), TooOld);
        assert_eq!(w.check(937), Ok);
    }

    #[test]
    fn check_does_not_record() {
        let mut w = ReplayWindow::new(32);
        assert_eq!(w.check(5), Ok);
        assert_eq!(w.check(5), Ok);
        assert_eq!(w.update(5), Ok);
        assert_eq!(w.check(5), Duplicate);
    }

    #[test]
    fn window_128_and_disabled() {
        let mut w = ReplayWindow::new(500);
        assert_eq!(w.size(), 128);
        w.update(300);
        assert_eq!(w.update(173), Ok);
        assert_eq!(w.update(172), TooOld);
        let mut off = ReplayWindow::new(0);
        assert_eq!(off.update(5), Ok);
        assert_eq!(off.update(5), Ok);
        assert_eq!(off.update(1), Ok);
        assert_eq!(off.update(0), TooOld);
    }

    #[test]
    fn matches_a_set_model() {
        // Random arrival orders against a plain set of seen numbers.
        let mut x = 0x1234_5678_9abc_def0u64;
        for size in [32u32, 64, 100, 128] {
            let mut w = ReplayWindow::new(size);
            let mut seen = std::collections::HashSet::new();
            let mut top = 0u32;
            for _ in 0..20000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let s = (top as i64 + (x % 300) as i64 - 200).max(1) as u32;
                let want = if s > top {
                    Ok
                } else if top - s >= size {
                    TooOld
                } else if seen.contains(&s) {
                    Duplicate
                } else {
                    Ok
                };
                assert_eq!(w.update(s), want, "size {size} seq {s} top {top}");
                if want == Ok {
                    seen.insert(s);
                    top = top.max(s);
                }
            }
        }
    }
}
