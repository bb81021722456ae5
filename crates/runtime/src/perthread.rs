//! Per-thread state and counters.
//!
//! Elements are shared by all worker threads, so mutable state must be per
//! thread, atomic or locked. These two types make the per-thread case cheap:
//! no atomic read-modify-write, no lock, each thread's slot on its own cache
//! line.

use crate::cx::Cx;
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// A counter with one slot per worker thread. Adding is a plain load and
/// store on the thread's own cache line (each slot has a single writer, the
/// thread of that index); reading sums the slots.
pub struct PerThreadCount {
    slots: Box<[CachePadded<AtomicU64>]>,
}

impl PerThreadCount {
    pub fn new(nthreads: usize) -> PerThreadCount {
        PerThreadCount {
            slots: (0..nthreads.max(1))
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }

    /// Adds `n` on behalf of thread `thread` (pass `cx.thread()`).
    #[inline]
    pub fn add(&self, thread: usize, n: u64) {
        let s = &self.slots[thread];
        s.store(s.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// Takes `n` off this thread's slot (the total is a wrapping sum, so a
    /// slot may go below zero while another makes up for it).
    #[inline]
    pub fn sub(&self, thread: usize, n: u64) {
        let s = &self.slots[thread];
        s.store(s.load(Ordering::Relaxed).wrapping_sub(n), Ordering::Relaxed);
    }

    #[inline]
    pub fn inc(&self, thread: usize) {
        self.add(thread, 1)
    }

    pub fn get(&self) -> u64 {
        self.slots
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s.load(Ordering::Relaxed)))
    }

    /// Sets every slot to zero (a `reset` handler; increments racing with
    /// it on other threads may survive it, as in Click).
    pub fn reset(&self) {
        for s in self.slots.iter() {
            s.store(0, Ordering::Relaxed);
        }
    }
}

/// Mutable state with one instance per worker thread, reached through the
/// thread's [`Cx`]. Borrowing `&mut Cx` for as long as the state is borrowed
/// is what makes this sound: a thread's `Cx` is unique, so its slot has one
/// user at a time, and the element cannot call out (which needs the `Cx`)
/// while it holds the state.
pub struct PerThread<T> {
    slots: Box<[CachePadded<UnsafeCell<T>>]>,
}

// SAFETY: slot `i` is only ever accessed through `get`, which requires the
// `&mut Cx` of thread `i`; the runtime creates exactly one `Cx` per thread
// index at a time, so no slot is accessed from two threads at once. `T:
// Send` because a slot is created on one thread and used on another.
unsafe impl<T: Send> Sync for PerThread<T> {}

impl<T> PerThread<T> {
    pub fn new(nthreads: usize, mut init: impl FnMut(usize) -> T) -> PerThread<T> {
        PerThread {
            slots: (0..nthreads.max(1))
                .map(|i| CachePadded::new(UnsafeCell::new(init(i))))
                .collect(),
        }
    }

    /// This thread's instance.
    #[inline]
    pub fn get<'a>(&'a self, cx: &'a mut Cx<'_>) -> &'a mut T {
        let cell = &self.slots[cx.thread()];
        // SAFETY: see the `Sync` impl: `cx` is the unique context of thread
        // `cx.thread()`, and it stays mutably borrowed for as long as the
        // returned reference lives, so no other reference to this slot can
        // be created meanwhile.
        unsafe { &mut *cell.get() }
    }

    /// Exclusive access to every instance (when nothing runs).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().map(|c| c.get_mut())
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}
