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

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

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

#[cfg(test)]
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
