//! Per-thread timer queues.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Timers one element may use (indices `0..MAX_TIMERS`).
pub const MAX_TIMERS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TimerEntry {
    pub when_ns: u64,
    pub seq: u64,
    pub elem: usize,
    pub timer: usize,
    pub gen: u64,
}

/// A thread's timers: a heap under a lock that is only taken when a timer
/// is due or being scheduled, and the earliest deadline in an atomic the
/// thread checks cheaply.
pub(crate) struct TimerQueue {
    heap: Mutex<BinaryHeap<Reverse<TimerEntry>>>,
    next_ns: AtomicU64,
    seq: AtomicU64,
}

impl TimerQueue {
    pub fn new() -> TimerQueue {
        TimerQueue {
            heap: Mutex::new(BinaryHeap::new()),
            next_ns: AtomicU64::new(u64::MAX),
            seq: AtomicU64::new(0),
        }
    }

    pub fn schedule(&self, when_ns: u64, elem: usize, timer: usize, gen: u64) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut h = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        h.push(Reverse(TimerEntry {
            when_ns,
            seq,
            elem,
            timer,
            gen,
        }));
        if let Some(Reverse(top)) = h.peek() {
            self.next_ns.store(top.when_ns, Ordering::Release);
        }
    }

    #[inline]
    pub fn next_deadline(&self) -> u64 {
        self.next_ns.load(Ordering::Acquire)
    }

    /// Removes and returns the entries due at `now_ns`.
    pub fn take_due(&self, now_ns: u64, out: &mut Vec<TimerEntry>) {
        let mut h = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(Reverse(top)) = h.peek() {
            if top.when_ns > now_ns {
                break;
            }
            let Some(Reverse(e)) = h.pop() else { break };
            out.push(e);
        }
        let next = h.peek().map(|Reverse(t)| t.when_ns).unwrap_or(u64::MAX);
        self.next_ns.store(next, Ordering::Release);
    }
}
