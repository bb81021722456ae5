//! Outbound ESP sequence numbers for an SA that several threads use.
//!
//! A shared counter hands out *blocks* of [`BLOCK`] consecutive numbers
//! (block `k` is `k * BLOCK .. (k + 1) * BLOCK`; block 0 starts at 1, as
//! sequence number 0 is never sent). Each thread takes numbers from its own
//! block, in a slot on its own cache line, so the shared line is written
//! once per `BLOCK` packets instead of once per packet. RFC 4303 §3.3.3
//! lets the numbers a receiver sees have gaps; they never repeat:
//! - a number is taken from a slot by a compare-and-swap, so two threads
//!   given the same slot index still never take the same number;
//! - blocks come from one atomic counter, each block at most once.
//!
//! A block whose numbers have fallen more than [`SPREAD`] below the newest
//! reserved number (its thread was idle while others went on) is dropped
//! and a fresh one taken: every number sent is within `SPREAD` of the
//! highest number reserved when it is sent, so a receiver's anti-replay
//! window of `SPREAD` or more (plus whatever the path reorders) accepts
//! the packets of all threads. The numbers dropped are gaps.
//!
//! No number above `u32::MAX` (the 32-bit limit of an SA without extended
//! sequence numbers, RFC 4303 §3.3.3) is ever used: `BLOCK` divides 2^32,
//! so the last block ends exactly at the limit, and a number beyond it
//! makes the caller refuse the packet (`SeqOverflow`).
//!
//! Model-checked under loom (`loom_tests`: every interleaving of two or
//! three threads taking numbers across block boundaries, run by
//! `scripts/test.sh`).

use crossbeam_utils::CachePadded;
#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

/// Numbers reserved at a time by one thread.
pub const BLOCK: u64 = 16;
/// How far below the newest reserved number a thread's number may be.
pub const SPREAD: u64 = 32;
/// One past the largest usable number.
const END: u64 = 1 << 32;

pub struct SeqAlloc {
    /// The next block to hand out.
    shared: CachePadded<AtomicU64>,
    /// Per thread: the next number of its block (0, or a multiple of
    /// `BLOCK`: no block).
    slots: Box<[CachePadded<AtomicU64>]>,
}

impl SeqAlloc {
    pub fn new(nthreads: usize) -> SeqAlloc {
        SeqAlloc {
            shared: CachePadded::new(AtomicU64::new(0)),
            slots: (0..nthreads.max(1))
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }

    /// A fresh sequence number for thread `thread`, or `None` when the
    /// SA's numbers are used up.
    #[inline]
    pub fn next(&self, thread: usize) -> Option<u64> {
        let slot = &self.slots[thread % self.slots.len()];
        let mut v = slot.load(Ordering::Relaxed);
        loop {
            let newest = self.shared.load(Ordering::Relaxed) * BLOCK;
            if v.is_multiple_of(BLOCK) || v + SPREAD < newest {
                // No block, used up, or stale: reserve a fresh one.
                let k = self.shared.fetch_add(1, Ordering::Relaxed);
                let base = k.saturating_mul(BLOCK).max(1);
                if base >= END {
                    // Keep the counter from growing however long this goes on.
                    self.shared.store(END / BLOCK, Ordering::Relaxed);
                    return None;
                }
                // Whoever else holds this slot index may have moved it on:
                // then this block is a gap and we retry with theirs.
                match slot.compare_exchange(v, base + 1, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Some(base),
                    Err(now) => v = now,
                }
            } else {
                match slot.compare_exchange(v, v + 1, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Some(v),
                    Err(now) => v = now,
                }
            }
        }
    }

    /// The highest number sent so far (0 if none): the largest number any
    /// thread has taken from its block. With one thread it is the number
    /// of packets sent; with several, gaps make it larger.
    pub fn last(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed).saturating_sub(1))
            .max()
            .unwrap_or(0)
            .min(END - 1)
    }

    /// Makes `n` the next number (of the thread with slot 0; the others'
    /// blocks are dropped and they go on above `n`). For tests and for
    /// resuming an SA; not while packets are being sent.
    pub fn set_next(&self, n: u64) {
        for s in self.slots.iter() {
            s.store(0, Ordering::Relaxed);
        }
        let n = n.min(END);
        if n.is_multiple_of(BLOCK) {
            self.shared.store(n / BLOCK, Ordering::Relaxed);
        } else {
            self.slots[0].store(n, Ordering::Relaxed);
            self.shared.store(n / BLOCK + 1, Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_thread_counts_from_one_without_gaps() {
        let a = SeqAlloc::new(2);
        assert_eq!(a.last(), 0);
        for i in 1..=1000 {
            assert_eq!(a.next(0), Some(i));
        }
        assert_eq!(a.last(), 1000);
    }

    #[test]
    fn never_beyond_the_limit() {
        for start in [END - 1, END - BLOCK, END - BLOCK - 3, END] {
            let a = SeqAlloc::new(2);
            a.set_next(start);
            let mut got = vec![];
            for t in [0, 1, 0, 1, 1, 0].iter().cycle().take(200) {
                if let Some(s) = a.next(*t) {
                    got.push(s);
                }
            }
            assert!(got.iter().all(|&s| s < END), "{start}: {got:?}");
            if start < END {
                assert_eq!(got[0], start);
            }
            let n = got.len();
            got.sort_unstable();
            got.dedup();
            assert_eq!(got.len(), n, "a number repeated");
            assert_eq!(a.next(0), None);
            assert_eq!(a.next(1), None);
            assert!(a.last() < END);
        }
    }

    #[test]
    fn an_idle_threads_block_is_not_used_once_stale() {
        let a = SeqAlloc::new(2);
        assert_eq!(a.next(1), Some(1));
        for _ in 0..100 {
            a.next(0).unwrap();
        }
        let s = a.next(1).unwrap();
        assert!(s + SPREAD >= a.last(), "{s} far below {}", a.last());
    }

    #[test]
    fn threads_sharing_one_slot_or_not_never_repeat() {
        let a = std::sync::Arc::new(SeqAlloc::new(2));
        // Threads 0 and 2 share slot 0: the CAS keeps them apart.
        let hs: Vec<_> = (0..3)
            .map(|t| {
                let a = a.clone();
                std::thread::spawn(move || {
                    (0..20000).map(|_| a.next(t).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<u64> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a number repeated");
        assert!(all[0] >= 1);
    }
}

/// Model checks of the allocator under loom: every interleaving of
/// threads taking numbers, with loom's weak-memory outcomes. Run (as
/// `scripts/test.sh` does): `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3
/// CARGO_TARGET_DIR=target/loom cargo test --profile ci -p
/// paraclick-elements --lib ipsec::sa::seq::loom_tests`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Threads `ts` (slot indexes; the last on the model's own thread)
    /// each take `n` numbers from `a`; returns them all, sorted, after
    /// checking none is 0 or beyond the limit.
    fn take(a: &Arc<SeqAlloc>, ts: &[usize], n: usize) -> Vec<u64> {
        let (last, others) = ts.split_last().unwrap();
        let hs: Vec<_> = others
            .iter()
            .map(|&t| {
                let a = a.clone();
                thread::spawn(move || (0..n).filter_map(|_| a.next(t)).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<u64> = (0..n).filter_map(|_| a.next(*last)).collect();
        for h in hs {
            all.extend(h.join().unwrap());
        }
        all.sort_unstable();
        assert!(all.iter().all(|&s| (1..END).contains(&s)), "{all:?}");
        all
    }

    fn assert_distinct(all: &[u64]) {
        assert!(
            all.windows(2).all(|w| w[0] < w[1]),
            "a number repeated: {all:?}"
        );
    }

    /// Two threads with their own slots, both crossing into fresh blocks
    /// (thread 0 ends its block after two numbers, thread 1 starts with
    /// none): every number is taken once, and the blocks they reserve
    /// are distinct.
    #[test]
    fn two_threads_across_block_boundaries_never_repeat() {
        loom::model(|| {
            let a = Arc::new(SeqAlloc::new(2));
            a.set_next(BLOCK - 2);
            let all = take(&a, &[0, 1], 3);
            assert_eq!(all.len(), 6);
            assert_distinct(&all);
            assert!(all.contains(&(BLOCK - 2)) && all.contains(&(BLOCK - 1)));
            // Blocks 1 and 2 went to the two threads, one each.
            assert!(
                all.contains(&BLOCK) && all.contains(&(2 * BLOCK)),
                "{all:?}"
            );
            assert_eq!(a.last(), *all.last().unwrap());
        });
    }

    /// Three threads, two of them on one slot (more threads than slots):
    /// the slot's compare-and-swap keeps them apart, also when one of
    /// them replaces the slot's used-up block.
    #[test]
    fn threads_sharing_a_slot_never_repeat() {
        loom::model(|| {
            let a = Arc::new(SeqAlloc::new(2));
            a.set_next(BLOCK - 1);
            let all = take(&a, &[0, 2, 1], 2);
            assert_eq!(all.len(), 6);
            assert_distinct(&all);
        });
    }

    /// At the end of the 32-bit space, threads racing for the last
    /// numbers get each at most once and nothing beyond: the others are
    /// told `None`.
    #[test]
    fn the_last_numbers_are_taken_once_and_then_none() {
        loom::model(|| {
            let a = Arc::new(SeqAlloc::new(2));
            a.set_next(END - 2);
            let all = take(&a, &[0, 1], 2);
            assert_distinct(&all);
            assert_eq!(all, [END - 2, END - 1]);
            assert_eq!(a.next(0), None);
            assert_eq!(a.next(1), None);
        });
    }
}
