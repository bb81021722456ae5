//! The anti-replay window of RFC 4303 §3.4.3 with 32-bit sequence numbers:
//! the highest sequence number accepted so far and which of the `size`
//! numbers at and below it have been seen. Sequence number 0 is never
//! valid (senders start at 1).
//!
//! Several threads use one window without a lock. The numbers are kept in
//! a ring of [`WORDS`] atomic words, each the bitmap of one aligned run of
//! 32 numbers tagged with the run's index (tag in the high half, bits in
//! the low half). A number is accepted by one compare-and-swap that sets
//! its bit in a word carrying its run's tag, or that replaces an older
//! run's word (whose numbers are all below the window by then) with its
//! own tag and bit. A word's tag only grows and, while it stays, its bits
//! are only set, so a number is accepted at most once whatever the threads
//! do. The highest number is raised afterwards (`fetch_max`, only when
//! higher); a number below the window is refused against it (RFC 4303's
//! "reject below the window"). Ring and highest number are one cache line.
//!
//! `check` is the cheap test done before the integrity check (to drop
//! replays without spending a MAC on them, loads only); `update` is done
//! only after the packet authenticated, and decides (another thread may
//! have accepted the same number meanwhile).
//!
//! The protocol is model-checked under loom (`loom_tests`: every
//! interleaving of two or three threads recording numbers, run by
//! `scripts/test.sh`).

#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

/// Largest supported window (bits of the bitmap).
pub const MAX_WINDOW: u32 = 128;
/// Words in the ring: enough that a word is reused only for numbers at
/// least `MAX_WINDOW` above every number it held (`32 * WORDS - 31 >=
/// MAX_WINDOW`).
pub const WORDS: usize = 7;
const RUN: u32 = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayVerdict {
    Ok,
    /// Already received.
    Duplicate,
    /// Older than the window (or 0).
    TooOld,
}

#[derive(Debug)]
#[repr(align(64))]
pub struct ReplayWindow {
    words: [AtomicU64; WORDS],
    top: AtomicU64,
    size: u32,
}

impl ReplayWindow {
    /// A window of `size` packets (1..=128); 0 disables replay protection
    /// (every non-zero number is accepted, as with Linux `replay-window 0`).
    pub fn new(size: u32) -> ReplayWindow {
        ReplayWindow {
            words: std::array::from_fn(|_| AtomicU64::new(0)),
            top: AtomicU64::new(0),
            size: size.min(MAX_WINDOW),
        }
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// The highest sequence number accepted so far.
    pub fn top(&self) -> u32 {
        self.top.load(Ordering::Relaxed) as u32
    }

    /// The ring word of `seq`, its run's tag and its bit.
    fn slot(seq: u32) -> (usize, u64, u64) {
        let run = seq / RUN;
        (run as usize % WORDS, u64::from(run), 1u64 << (seq % RUN))
    }

    /// Below the window, or 0.
    fn too_old(&self, seq: u32) -> bool {
        seq == 0
            || (self.size != 0
                && u64::from(seq) + u64::from(self.size) <= self.top.load(Ordering::Acquire))
    }

    fn judge(&self, w: u64, tag: u64, bit: u64) -> Option<ReplayVerdict> {
        let wtag = w >> 32;
        if wtag > tag {
            // The word holds a later run: this one is far below the window.
            Some(ReplayVerdict::TooOld)
        } else if wtag == tag && w & bit != 0 {
            Some(ReplayVerdict::Duplicate)
        } else {
            None
        }
    }

    pub fn check(&self, seq: u32) -> ReplayVerdict {
        if self.too_old(seq) {
            return ReplayVerdict::TooOld;
        }
        if self.size == 0 {
            return ReplayVerdict::Ok;
        }
        let (i, tag, bit) = Self::slot(seq);
        self.judge(self.words[i].load(Ordering::Acquire), tag, bit)
            .unwrap_or(ReplayVerdict::Ok)
    }

    /// Checks `seq` again and, if acceptable, records it: of several
    /// threads recording the same number, exactly one is told `Ok`.
    pub fn update(&self, seq: u32) -> ReplayVerdict {
        if self.too_old(seq) {
            return ReplayVerdict::TooOld;
        }
        if self.size != 0 {
            let (i, tag, bit) = Self::slot(seq);
            let word = &self.words[i];
            let mut w = word.load(Ordering::Acquire);
            loop {
                if let Some(v) = self.judge(w, tag, bit) {
                    return v;
                }
                let new = if w >> 32 == tag {
                    w | bit
                } else {
                    tag << 32 | bit
                };
                match word.compare_exchange_weak(w, new, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => break,
                    Err(now) => w = now,
                }
            }
        }
        if u64::from(seq) > self.top.load(Ordering::Relaxed) {
            self.top.fetch_max(u64::from(seq), Ordering::AcqRel);
        }
        ReplayVerdict::Ok
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use ReplayVerdict::*;

    #[test]
    fn in_order_and_duplicates() {
        let w = ReplayWindow::new(64);
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
        let w = ReplayWindow::new(64);
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
        let w = ReplayWindow::new(32);
        assert_eq!(w.check(5), Ok);
        assert_eq!(w.check(5), Ok);
        assert_eq!(w.update(5), Ok);
        assert_eq!(w.check(5), Duplicate);
    }

    #[test]
    fn window_128_and_disabled() {
        let w = ReplayWindow::new(500);
        assert_eq!(w.size(), 128);
        w.update(300);
        assert_eq!(w.update(173), Ok);
        assert_eq!(w.update(172), TooOld);
        let off = ReplayWindow::new(0);
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
            let w = ReplayWindow::new(size);
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

    #[test]
    fn two_threads_accept_each_number_exactly_once() {
        // Both threads deliver every number of a run of 64 (one forwards,
        // one backwards, overlapping), then meet; the window (128) covers
        // a run, so nothing is too old and each number must be accepted by
        // exactly one of them.
        use std::sync::{Arc, Barrier};
        let w = Arc::new(ReplayWindow::new(128));
        let runs = 3000u32;
        let bar = Arc::new(Barrier::new(2));
        let hs: Vec<_> = (0..2)
            .map(|t| {
                let (w, bar) = (w.clone(), bar.clone());
                std::thread::spawn(move || {
                    let mut ok = vec![];
                    for r in 0..runs {
                        let base = r * 64 + 1;
                        let mut seqs: Vec<u32> = (base..base + 64).collect();
                        if t == 1 {
                            seqs.reverse();
                            seqs.rotate_left(r as usize % 64);
                        }
                        for s in seqs {
                            match w.update(s) {
                                Ok => ok.push(s),
                                Duplicate => {}
                                TooOld => panic!("{s} too old"),
                            }
                        }
                        bar.wait();
                    }
                    ok
                })
            })
            .collect();
        let mut all: Vec<u32> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort_unstable();
        assert_eq!(all, (1..=runs * 64).collect::<Vec<_>>());
        assert_eq!(w.top(), runs * 64);
    }
}

/// Model checks of the window under loom: every interleaving of threads
/// recording numbers, with loom's weak-memory outcomes for each atomic
/// access. Run (as `scripts/test.sh` does):
/// `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom
/// cargo test --profile ci -p paraclick-elements --lib ipsec::replay::loom_tests`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;
    use ReplayVerdict::*;

    /// Runs `seqs[t]` through `update` on thread `t` (the last list on
    /// the model's own thread) and returns, per thread, the numbers it
    /// was told `Ok` for and every verdict.
    fn run(w: &Arc<ReplayWindow>, seqs: &[&'static [u32]]) -> Vec<Vec<(u32, ReplayVerdict)>> {
        let (last, others) = seqs.split_last().unwrap();
        let hs: Vec<_> = others
            .iter()
            .map(|s| {
                let (w, s) = (w.clone(), *s);
                thread::spawn(move || s.iter().map(|&n| (n, w.update(n))).collect::<Vec<_>>())
            })
            .collect();
        let mine: Vec<_> = last.iter().map(|&n| (n, w.update(n))).collect();
        let mut all: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        all.push(mine);
        all
    }

    /// The numbers told `Ok`, sorted.
    fn accepted(v: &[Vec<(u32, ReplayVerdict)>]) -> Vec<u32> {
        let mut ok: Vec<u32> = v
            .iter()
            .flatten()
            .filter(|x| x.1 == Ok)
            .map(|x| x.0)
            .collect();
        ok.sort_unstable();
        ok
    }

    /// Two threads deliver the same numbers, partly in other orders, in
    /// one word (same run): each number is accepted by exactly one of
    /// them, and once they are done every number is a duplicate.
    #[test]
    fn two_threads_same_numbers_each_accepted_once() {
        loom::model(|| {
            let w = Arc::new(ReplayWindow::new(32));
            let v = run(&w, &[&[3, 5], &[5, 3]]);
            assert_eq!(accepted(&v), [3, 5]);
            for n in [3, 5] {
                assert_eq!(w.update(n), Duplicate, "{n} accepted again");
            }
            assert_eq!(w.top(), 5);
        });
    }

    /// Three threads set different bits of one word and one of them
    /// replays its own number: no bit is lost (a lost bit would let a
    /// replay through afterwards), and the replay is refused.
    #[test]
    fn three_threads_distinct_numbers_none_lost() {
        loom::model(|| {
            let w = Arc::new(ReplayWindow::new(32));
            let v = run(&w, &[&[1], &[2, 2], &[4]]);
            assert_eq!(accepted(&v), [1, 2, 4]);
            assert_eq!(v[1][1], (2, Duplicate));
            for n in [1, 2, 4] {
                assert_eq!(w.update(n), Duplicate, "{n} accepted again");
                assert_eq!(w.check(n), Duplicate);
            }
        });
    }

    /// One thread moves the window far on, reusing the ring word of an
    /// older run, while another delivers numbers of that older run: an
    /// old number is accepted at most once (or refused as too old), the
    /// new one exactly once, and nothing below the window gets in
    /// afterwards.
    #[test]
    fn a_reused_word_never_accepts_a_number_twice() {
        loom::model(|| {
            // 3 is in run 0 and 7 * 32 + 3 = 227 in run 7: the same word.
            let w = Arc::new(ReplayWindow::new(32));
            let v = run(&w, &[&[3, 227], &[3, 4]]);
            let ok = accepted(&v);
            let threes = ok.iter().filter(|&&n| n == 3).count();
            assert!(threes <= 1, "3 accepted {threes} times: {v:?}");
            assert!(ok.iter().filter(|&&n| n == 4).count() <= 1);
            assert_eq!(ok.iter().filter(|&&n| n == 227).count(), 1, "{v:?}");
            assert_eq!(w.top(), 227);
            for n in [3, 4] {
                assert_eq!(w.update(n), TooOld);
            }
            assert_eq!(w.update(227), Duplicate);
        });
    }

    /// `check` on one thread while another records: `check` never says
    /// `Duplicate` for a number nobody recorded, and once the recorder's
    /// flag is seen (release/acquire), says it for the recorded one.
    #[test]
    fn check_sees_what_was_recorded_before_a_flag() {
        loom::model(|| {
            use loom::sync::atomic::AtomicBool;
            let w = Arc::new(ReplayWindow::new(32));
            let flag = Arc::new(AtomicBool::new(false));
            let (w2, f2) = (w.clone(), flag.clone());
            let h = thread::spawn(move || {
                assert_eq!(w2.update(9), Ok);
                f2.store(true, Ordering::Release);
            });
            let seen = flag.load(Ordering::Acquire);
            let c = w.check(9);
            if seen {
                assert_eq!(c, Duplicate);
            } else {
                assert!(c == Ok || c == Duplicate);
            }
            assert_eq!(w.check(8), Ok);
            h.join().unwrap();
        });
    }
}
