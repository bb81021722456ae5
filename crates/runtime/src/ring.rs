//! A bounded ring in the manner of DPDK's `rte_ring`: producer and consumer
//! head/tail indices on separate cache lines, bulk transfers (one index
//! update per burst, not per item), and per-side modes: single-producer /
//! single-consumer sides update their head with a plain store, multi sides
//! with a compare-and-swap. The mode of each side can be changed while the
//! ring is in use only by the owner of the thread plan, at a point where no
//! operation on that side is in flight (see `set_modes`).
//!
//! Who may use a side is a matter of types, not convention:
//! - pushing takes a [`Producer`] and popping a [`Consumer`], which only a
//!   worker's [`crate::Cx`] hands out (every thread whose data path
//!   reaches a queue is counted by the thread plan) or the runtime's
//!   audited path for an extra consumer
//!   ([`crate::HandlerCx::as_extra_consumer`], which switches the ring to
//!   multi-consumer and waits for in-flight operations first). A handler
//!   has no `Cx`, so it cannot pop a single-consumer ring from another
//!   thread behind the consumer's back;
//! - changing modes takes a [`ModeSwitch`], which only the crossing
//!   protocol (crates/runtime/src/crossing.rs) creates.

use crossbeam_utils::CachePadded;
use sync::{AtomicBool, AtomicUsize, Ordering, Slot};

/// The atomics, slot cells and spin hints the ring uses: std's normally,
/// loom's when model checking (`RUSTFLAGS="--cfg loom"`, see `loom_tests`).
/// Without loom everything here is a zero-cost newtype or re-export.
mod sync {
    #[cfg(loom)]
    pub(super) use loom::sync::atomic::{AtomicBool, AtomicUsize};
    pub(super) use std::sync::atomic::Ordering;
    #[cfg(not(loom))]
    pub(super) use std::sync::atomic::{AtomicBool, AtomicUsize};

    use std::mem::MaybeUninit;

    #[cfg(loom)]
    use loom::cell::UnsafeCell;
    #[cfg(not(loom))]
    use std::cell::UnsafeCell;

    /// One ring slot: possibly uninitialized storage for an item.
    pub(super) struct Slot<T>(UnsafeCell<MaybeUninit<T>>);

    impl<T> Slot<T> {
        pub(super) fn new() -> Slot<T> {
            Slot(UnsafeCell::new(MaybeUninit::uninit()))
        }

        /// Stores `item` (overwriting without dropping).
        ///
        /// # Safety
        /// The caller is the slot's only accessor for the duration.
        #[inline(always)]
        pub(super) unsafe fn write(&self, item: T) {
            #[cfg(not(loom))]
            // SAFETY: exclusive access, by the caller's contract.
            unsafe {
                (*self.0.get()).write(item);
            }
            #[cfg(loom)]
            // SAFETY: as above; loom checks the exclusivity.
            self.0.with_mut(|p| unsafe {
                (*p).write(item);
            });
        }

        /// Moves the item out, leaving the slot logically uninitialized.
        ///
        /// # Safety
        /// The slot holds an item and the caller is its only accessor.
        #[inline(always)]
        pub(super) unsafe fn read(&self) -> T {
            #[cfg(not(loom))]
            // SAFETY: initialized and exclusive, by the caller's contract.
            unsafe {
                (*self.0.get()).assume_init_read()
            }
            #[cfg(loom)]
            // SAFETY: as above. Moving out is a write as far as exclusivity
            // goes, so loom checks it as one (`with_mut`): two consumers
            // taking the same slot is then a reported race, not a silent
            // duplicate.
            self.0.with_mut(|p| unsafe { (*p).assume_init_read() })
        }
    }

    // Busy-wait hints. Under loom both yield, which is what lets the model
    // checker explore a spin: it then runs other threads and does not hand
    // the spinning thread a value it already saw before yielding.
    #[cfg(loom)]
    pub(super) use loom::{hint::spin_loop, thread::yield_now};
    #[cfg(not(loom))]
    pub(super) use std::{hint::spin_loop, thread::yield_now};
}

struct HeadTail {
    head: AtomicUsize,
    tail: AtomicUsize,
    multi: AtomicBool,
    /// This side's last reading of the *other* side's tail. Tails only
    /// grow, so a stale value under-estimates free slots (producer) or
    /// available items (consumer): safe, and re-read only when it says
    /// full or empty. It keeps the other side's cache line from moving on
    /// every operation.
    other_tail: AtomicUsize,
}

impl HeadTail {
    fn new(multi: bool) -> HeadTail {
        HeadTail {
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            multi: AtomicBool::new(multi),
            other_tail: AtomicUsize::new(0),
        }
    }
}

/// A growable buffer a ring can take items from and put items into (`Vec`,
/// or a batch's storage).
pub trait Items<T> {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn push(&mut self, item: T);
    fn reserve(&mut self, n: usize);
    /// Removes the last item.
    fn pop(&mut self) -> Option<T>;
    /// Removes the first `k` items, handing each to `f` in order.
    fn take_front(&mut self, k: usize, f: impl FnMut(T));
}

impl<T> Items<T> for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn push(&mut self, item: T) {
        Vec::push(self, item)
    }
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n)
    }
    fn pop(&mut self) -> Option<T> {
        Vec::pop(self)
    }
    fn take_front(&mut self, k: usize, f: impl FnMut(T)) {
        self.drain(..k).for_each(f)
    }
}

/// A single item (for [`Ring::push`] and [`Ring::pop`]: no allocation).
/// Holds at most one: a burst into it must ask for at most one.
impl<T> Items<T> for Option<T> {
    #[inline]
    fn len(&self) -> usize {
        self.is_some() as usize
    }
    #[inline]
    fn push(&mut self, item: T) {
        debug_assert!(self.is_none(), "an Option holds one item");
        *self = Some(item);
    }
    #[inline]
    fn reserve(&mut self, n: usize) {
        debug_assert!(n <= 1, "an Option holds one item");
    }
    #[inline]
    fn pop(&mut self) -> Option<T> {
        self.take()
    }
    #[inline]
    fn take_front(&mut self, k: usize, mut f: impl FnMut(T)) {
        if k > 0 {
            if let Some(x) = self.take() {
                f(x)
            }
        }
    }
}

impl<T> Items<T> for thin_vec::ThinVec<T> {
    fn len(&self) -> usize {
        thin_vec::ThinVec::len(self)
    }
    fn push(&mut self, item: T) {
        thin_vec::ThinVec::push(self, item)
    }
    #[inline]
    fn reserve(&mut self, n: usize) {
        // Usually there is room (a recycled batch): no call.
        if self.capacity() - thin_vec::ThinVec::len(self) < n {
            thin_vec::ThinVec::reserve(self, n)
        }
    }
    fn pop(&mut self) -> Option<T> {
        thin_vec::ThinVec::pop(self)
    }
    fn take_front(&mut self, k: usize, f: impl FnMut(T)) {
        self.drain(..k).for_each(f)
    }
}

/// What [`Ring::try_pop_single`] found.
pub enum Popped<T> {
    /// An item, and whether the ring looked empty after it (a hint, as
    /// [`Ring::drained_hint`]).
    One(T, bool),
    /// Nothing to pop.
    Empty,
    /// The consumer side is multi: use [`Ring::pop_burst`].
    Multi,
}

/// Permission to push into rings: see the module documentation.
pub struct Producer<'a>(std::marker::PhantomData<&'a ()>);

/// Permission to pop from rings: see the module documentation.
pub struct Consumer<'a>(std::marker::PhantomData<&'a ()>);

/// Permission to change a ring's modes: only the crossing protocol has
/// it.
pub struct ModeSwitch(());

impl Producer<'_> {
    pub(crate) fn new() -> Self {
        Producer(std::marker::PhantomData)
    }
}

impl Consumer<'_> {
    pub(crate) fn new() -> Self {
        Consumer(std::marker::PhantomData)
    }
}

impl ModeSwitch {
    pub(crate) fn new() -> Self {
        ModeSwitch(())
    }
}

pub struct Ring<T> {
    prod: CachePadded<HeadTail>,
    cons: CachePadded<HeadTail>,
    /// The most items the ring holds: at most the slot count, changed by
    /// [`Ring::set_capacity`] (std's atomic even under loom: the models
    /// never change it).
    capacity: std::sync::atomic::AtomicUsize,
    mask: usize,
    slots: Box<[Slot<T>]>,
}

// SAFETY: a slot is written by exactly one producer between its claim (head
// CAS/store) and its publication (tail store, Release), and read by exactly
// one consumer between its claim and release; the Acquire loads of the other
// side's tail order those accesses. Items move between threads, so `T: Send`.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above; the ring owns its items.
unsafe impl<T: Send> Send for Ring<T> {}

fn wait_for(tail: &AtomicUsize, value: usize) {
    let mut spins = 0u32;
    while tail.load(Ordering::Acquire) != value {
        spins += 1;
        if spins < 64 {
            sync::spin_loop();
        } else {
            // The thread ahead of us was preempted (more threads than
            // cores): let it run.
            sync::yield_now();
        }
    }
}

/// The most slots a ring has: 2^24 (16,777,216). A packet queue of that
/// many packets holds seconds of traffic at line rate; larger requests are
/// refused by [`Ring::try_with_room`] (and clamped by the infallible
/// constructors) rather than overflowing the rounding to a power of two or
/// aborting the process on a failed allocation.
pub const MAX_CAPACITY: usize = 1 << 24;

impl<T> Ring<T> {
    /// A ring holding at most `capacity` items; both sides multi-threaded.
    /// A capacity beyond [`MAX_CAPACITY`] is clamped to it.
    pub fn new(capacity: usize) -> Ring<T> {
        Self::with_modes(capacity, true, true)
    }

    pub fn with_modes(capacity: usize, multi_producer: bool, multi_consumer: bool) -> Ring<T> {
        Self::with_room(capacity, capacity, multi_producer, multi_consumer)
    }

    /// A ring holding `capacity` items now and able to hold up to
    /// `max_capacity` (rounded up to a power of two) after
    /// [`Ring::set_capacity`]. Both are clamped to [`MAX_CAPACITY`]. A
    /// failed allocation aborts, as a `Vec`'s does: a capacity that comes
    /// from a configuration goes through [`Ring::try_with_room`] instead.
    pub fn with_room(
        capacity: usize,
        max_capacity: usize,
        multi_producer: bool,
        multi_consumer: bool,
    ) -> Ring<T> {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let size = capacity
            .max(max_capacity.min(MAX_CAPACITY))
            .next_power_of_two();
        Self::with_slots(
            capacity,
            (0..size).map(|_| Slot::new()).collect(),
            multi_producer,
            multi_consumer,
        )
    }

    fn with_slots(
        capacity: usize,
        slots: Box<[Slot<T>]>,
        multi_producer: bool,
        multi_consumer: bool,
    ) -> Ring<T> {
        Ring {
            prod: CachePadded::new(HeadTail::new(multi_producer)),
            cons: CachePadded::new(HeadTail::new(multi_consumer)),
            capacity: std::sync::atomic::AtomicUsize::new(capacity),
            mask: slots.len() - 1,
            slots,
        }
    }

    /// [`Ring::with_room`], or an error if either capacity exceeds
    /// [`MAX_CAPACITY`] or the slots cannot be allocated.
    pub fn try_with_room(
        capacity: usize,
        max_capacity: usize,
        multi_producer: bool,
        multi_consumer: bool,
    ) -> Result<Ring<T>, String> {
        if capacity > MAX_CAPACITY || max_capacity > MAX_CAPACITY {
            return Err(format!(
                "capacity {} is more than the maximum, {MAX_CAPACITY}",
                capacity.max(max_capacity)
            ));
        }
        let capacity = capacity.max(1);
        // At most MAX_CAPACITY, a power of two: no overflow.
        let size = capacity.max(max_capacity).next_power_of_two();
        let mut slots = Vec::new();
        slots.try_reserve_exact(size).map_err(|_| {
            format!(
                "cannot allocate a ring of {size} slots ({} bytes)",
                size.saturating_mul(std::mem::size_of::<Slot<T>>())
            )
        })?;
        slots.extend((0..size).map(|_| Slot::new()));
        Ok(Self::with_slots(
            capacity,
            slots.into_boxed_slice(),
            multi_producer,
            multi_consumer,
        ))
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// The most items the ring can be made to hold.
    pub fn max_capacity(&self) -> usize {
        self.mask + 1
    }

    /// Changes the capacity (at least 1, at most [`Ring::max_capacity`]),
    /// safely while the ring is in use: an operation in flight uses the
    /// old or the new value, and never more slots than exist. Items beyond
    /// a smaller capacity stay until popped; no push succeeds meanwhile.
    pub fn set_capacity(&self, capacity: usize) -> Result<(), String> {
        if capacity == 0 || capacity > self.max_capacity() {
            return Err(format!(
                "capacity must be between 1 and {}",
                self.max_capacity()
            ));
        }
        self.capacity.store(capacity, Ordering::Relaxed);
        Ok(())
    }

    /// Items in the ring (a snapshot).
    pub fn len(&self) -> usize {
        let t = self.prod.tail.load(Ordering::Acquire);
        let h = self.cons.tail.load(Ordering::Acquire);
        t.wrapping_sub(h).min(self.capacity())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items popped so far (wrapping): the consumer's tail, a snapshot.
    pub fn popped(&self) -> usize {
        self.cons.tail.load(Ordering::Relaxed)
    }

    /// For the producer: an upper bound on the length read from its own
    /// cache line only (its tail minus its cached copy of the consumer
    /// tail, which lags). Cheap on the packet path; see [`Ring::len_fresh`].
    #[inline]
    pub fn len_upper_bound(&self) -> usize {
        let t = self.prod.tail.load(Ordering::Relaxed);
        let h = self.prod.other_tail.load(Ordering::Relaxed);
        t.wrapping_sub(h).min(self.capacity())
    }

    /// The exact length, refreshing the producer's cached consumer tail on
    /// the way (so later [`Ring::len_upper_bound`]s are tighter).
    ///
    /// A plain store, not a read-modify-write: a queue fed one packet per
    /// run calls this on every push, and a locked instruction there cost
    /// more than the rest of the push. Another producer may store an older
    /// tail over it; an older cached tail only understates the free room,
    /// which is safe (the push path refreshes it when short of room).
    pub fn len_fresh(&self) -> usize {
        let h = self.cons.tail.load(Ordering::Acquire);
        self.prod.other_tail.store(h, Ordering::Release);
        let t = self.prod.tail.load(Ordering::Acquire);
        t.wrapping_sub(h).min(self.capacity())
    }

    /// For the consumer: whether the ring looked empty to it at its last
    /// pop, read from its own cache line only (its head against its cached
    /// copy of the producer tail, which lags). A hint: items published
    /// since then are not seen.
    #[inline]
    pub fn drained_hint(&self, _: &Consumer<'_>) -> bool {
        let h = self.cons.head.load(Ordering::Relaxed);
        let t = self.cons.other_tail.load(Ordering::Relaxed);
        h == t
    }

    /// Whether each side uses compare-and-swap.
    pub fn modes(&self) -> (bool, bool) {
        (
            self.prod.multi.load(Ordering::Relaxed),
            self.cons.multi.load(Ordering::Relaxed),
        )
    }

    /// Changes the modes. Going to a single side is only safe when at most
    /// one thread will use that side from now on and no operation on it is
    /// in flight; going to multi is always safe once the new users see it.
    /// The crossing protocol, the only holder of a [`ModeSwitch`], makes
    /// sure of both.
    pub fn set_modes(&self, _: &ModeSwitch, multi_producer: bool, multi_consumer: bool) {
        self.prod.multi.store(multi_producer, Ordering::Release);
        self.cons.multi.store(multi_consumer, Ordering::Release);
    }

    /// Moves as many items as fit from the front of `items` into the ring;
    /// returns how many moved (the rest stay in `items`).
    #[inline]
    pub fn push_burst(&self, _: &Producer<'_>, items: &mut impl Items<T>) -> usize {
        self.push_burst_inner(items)
    }

    #[inline]
    fn push_burst_inner(&self, items: &mut impl Items<T>) -> usize {
        let n = items.len();
        if n == 0 {
            return 0;
        }
        let multi = self.prod.multi.load(Ordering::Relaxed);
        let cap = self.capacity();
        let (old, k) = loop {
            let old = self.prod.head.load(Ordering::Relaxed);
            // Acquire on the cached copy too: it was stored (Release) by a
            // producer that acquired it from the consumer's tail, so the
            // consumer's reads of the slots we will overwrite happen before.
            let mut cons_tail = self.prod.other_tail.load(Ordering::Acquire);
            let mut free = cap - old.wrapping_sub(cons_tail).min(cap);
            if free < n {
                cons_tail = self.cons.tail.load(Ordering::Acquire);
                self.prod.other_tail.store(cons_tail, Ordering::Release);
                if multi && old.wrapping_sub(cons_tail) > self.mask + 1 {
                    // `old` is stale: other producers moved the head on and
                    // consumers have since passed it. Not full: read again.
                    sync::spin_loop();
                    continue;
                }
                free = cap - old.wrapping_sub(cons_tail).min(cap);
            }
            let k = n.min(free);
            if k == 0 {
                return 0;
            }
            let new = old.wrapping_add(k);
            if !multi {
                self.prod.head.store(new, Ordering::Relaxed);
                break (old, k);
            }
            if self
                .prod
                .head
                .compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                break (old, k);
            }
        };
        // Slots old..old+k were claimed by the head update above and are
        // free (the consumer tail is past them), so this thread is their
        // only writer until it publishes them below.
        if k == items.len() {
            // All of them (the usual case): taking from the back, filling
            // the slots from the last, is cheaper than draining the front.
            let mut i = k;
            while let Some(item) = items.pop() {
                i -= 1;
                let slot = &self.slots[old.wrapping_add(i) & self.mask];
                // SAFETY: a claimed slot (see above), written once.
                unsafe { slot.write(item) };
            }
        } else {
            let mut i = 0;
            items.take_front(k, |item| {
                let slot = &self.slots[old.wrapping_add(i) & self.mask];
                i += 1;
                // SAFETY: a claimed slot (see above), written once.
                unsafe { slot.write(item) };
            });
        }
        if multi {
            wait_for(&self.prod.tail, old);
        }
        self.prod.tail.store(old.wrapping_add(k), Ordering::Release);
        k
    }

    /// Where the next push will start writing, as far as this producer
    /// knows (exact with a single producer): the position to give
    /// [`Ring::prefetch_push`]. Read it right after a push, while the
    /// producer's line is still in this core's cache.
    #[inline]
    pub fn push_position(&self, _: &Producer<'_>) -> usize {
        self.prod.head.load(Ordering::Relaxed)
    }

    /// A hint for the producer: asks for the cache lines a push of up to
    /// `n` items starting at position `from` (see [`Ring::push_position`])
    /// will write, the producer's index line and those slots, without
    /// waiting. When the consumer runs on another core it read those
    /// lines last; taken back ahead of time, the push does not wait for
    /// them, nor does a fence after it. A wrong `from` (another producer
    /// pushed meanwhile) only prefetches other slots.
    #[inline]
    pub fn prefetch_push(&self, _: &Producer<'_>, from: usize, n: usize) {
        #[cfg(not(loom))]
        {
            use paraclick_packet::pool::prefetch_write;
            prefetch_write(&self.prod.tail);
            let per_line = (64 / std::mem::size_of::<Slot<T>>().max(1)).max(1);
            let n = n.min(self.mask + 1);
            let mut i = 0;
            while i < n {
                prefetch_write(&self.slots[from.wrapping_add(i) & self.mask]);
                i += per_line;
            }
            prefetch_write(&self.slots[from.wrapping_add(n.saturating_sub(1)) & self.mask]);
        }
        #[cfg(loom)]
        let _ = (from, n);
    }

    /// Pushes one item; gives it back if the ring is full.
    #[inline]
    pub fn push(&self, p: &Producer<'_>, item: T) -> Result<(), T> {
        let mut v = Some(item);
        self.push_burst(p, &mut v);
        match v {
            None => Ok(()),
            Some(item) => Err(item),
        }
    }

    /// Moves up to `max` items into `out`; returns how many.
    #[inline]
    pub fn pop_burst(&self, _: &Consumer<'_>, out: &mut impl Items<T>, max: usize) -> usize {
        self.pop_burst_inner(out, max)
    }

    #[inline]
    fn pop_burst_inner(&self, out: &mut impl Items<T>, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let multi = self.cons.multi.load(Ordering::Relaxed);
        let (old, k) = loop {
            // Acquire: another consumer's claim that moved the head here was
            // made on a producer tail at least this far, and the read below
            // must not see an older one (it would take `prod_tail - old`,
            // wrapped, for available items and claim unpublished slots).
            let old = self.cons.head.load(Ordering::Acquire);
            let mut prod_tail = self.cons.other_tail.load(Ordering::Acquire);
            let mut avail = prod_tail.wrapping_sub(old);
            if avail < max || avail > self.mask + 1 {
                prod_tail = self.prod.tail.load(Ordering::Acquire);
                self.cons.other_tail.store(prod_tail, Ordering::Release);
                avail = prod_tail.wrapping_sub(old);
            }
            let k = max.min(avail);
            if k == 0 {
                return 0;
            }
            let new = old.wrapping_add(k);
            if !multi {
                self.cons.head.store(new, Ordering::Relaxed);
                break (old, k);
            }
            if self
                .cons
                .head
                .compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                break (old, k);
            }
        };
        out.reserve(k);
        for i in 0..k {
            let slot = &self.slots[old.wrapping_add(i) & self.mask];
            // SAFETY: slots old..old+k were published by producers (their
            // tail store, Acquire-loaded above, is past them) and claimed by
            // this consumer alone through the head update; each is read once
            // and becomes free when the tail moves past it below.
            out.push(unsafe { slot.read() });
        }
        if multi {
            wait_for(&self.cons.tail, old);
        }
        self.cons.tail.store(old.wrapping_add(k), Ordering::Release);
        k
    }

    /// One item into a single-producer side, reading the consumer's tail
    /// itself rather than this side's cached copy: for a producer on its
    /// consumer's thread (a queue that does not cross threads), where
    /// that line is already in this core's cache. Returns the ring's
    /// length after the push, or gives the item back when the side is
    /// multi-producer or the ring has no room: the caller then takes the
    /// general path ([`Ring::push_burst`]), which handles both.
    #[inline(always)]
    pub fn try_push_single(&self, p: &Producer<'_>, item: T) -> Result<usize, T> {
        if self.prod.multi.load(Ordering::Relaxed) {
            return Err(item);
        }
        // SAFETY: the side was single at the load above, which is what
        // `push_burst` goes by too.
        unsafe { self.push_single_unchecked(p, item) }
    }

    /// [`Ring::try_push_single`] without looking at the mode, for a
    /// caller that keeps its own copy of it (a queue's short path, open
    /// only while the modes it saw were single, closed by every change).
    ///
    /// # Safety
    /// The producer side is single for this call, as [`Ring::push_burst`]
    /// would see it: the latest mode this thread can have seen is single,
    /// and the crossing protocol lets no other producer start before this
    /// thread has passed a point where it sees any later change (see
    /// [`Ring::set_modes`]).
    #[inline(always)]
    pub unsafe fn push_single_unchecked(&self, _: &Producer<'_>, item: T) -> Result<usize, T> {
        let head = self.prod.head.load(Ordering::Relaxed);
        // Acquire: the consumer's reads of the slot reused below happen
        // before (as for the cached copy in `push_burst`).
        let len = head.wrapping_sub(self.cons.tail.load(Ordering::Acquire));
        if len >= self.capacity() {
            return Err(item);
        }
        // SAFETY: the only producer (single side: the crossing protocol
        // lets no other push while it is so) owns the slot at `head`,
        // which the consumer's tail has passed (`len` < capacity <= slot
        // count), until the tail store below publishes it. The index is
        // masked, so in bounds.
        unsafe { self.slots.get_unchecked(head & self.mask).write(item) };
        let new = head.wrapping_add(1);
        self.prod.head.store(new, Ordering::Relaxed);
        self.prod.tail.store(new, Ordering::Release);
        Ok(len + 1)
    }

    /// One item from a single-consumer side, reading the producers' tail
    /// itself (see [`Ring::try_push_single`]). [`Popped::Multi`] when the
    /// side is multi-consumer: the caller then takes the general path
    /// ([`Ring::pop_burst`]).
    #[inline(always)]
    pub fn try_pop_single(&self, c: &Consumer<'_>) -> Popped<T> {
        if self.cons.multi.load(Ordering::Relaxed) {
            return Popped::Multi;
        }
        // SAFETY: the side was single at the load above, which is what
        // `pop_burst` goes by too.
        unsafe { self.pop_single_unchecked(c) }
    }

    /// [`Ring::try_pop_single`] without looking at the mode (never
    /// [`Popped::Multi`]); see [`Ring::push_single_unchecked`].
    ///
    /// # Safety
    /// The consumer side is single for this call, as for
    /// [`Ring::push_single_unchecked`]'s producer side.
    #[inline(always)]
    pub unsafe fn pop_single_unchecked(&self, _: &Consumer<'_>) -> Popped<T> {
        let head = self.cons.head.load(Ordering::Relaxed);
        let prod_tail = self.prod.tail.load(Ordering::Acquire);
        if head == prod_tail {
            return Popped::Empty;
        }
        // SAFETY: the only consumer (single side) owns the slot at
        // `head`, published by the producers' tail (Acquire-loaded above,
        // past it), until the tail store below frees it. Masked index.
        let item = unsafe { self.slots.get_unchecked(head & self.mask).read() };
        let new = head.wrapping_add(1);
        self.cons.head.store(new, Ordering::Relaxed);
        self.cons.tail.store(new, Ordering::Release);
        Popped::One(item, new == prod_tail)
    }

    #[inline]
    pub fn pop(&self, c: &Consumer<'_>) -> Option<T> {
        let mut v = None;
        self.pop_burst(c, &mut v, 1);
        v
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        let mut rest = Vec::new();
        // `&mut self`: no other user is left.
        while self.pop_burst_inner(&mut rest, 64) > 0 {
            rest.clear();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_and_capacity() {
        let r = Ring::with_modes(5, false, false);
        let mut v: Vec<u32> = (0..8).collect();
        assert_eq!(r.push_burst(&Producer::new(), &mut v), 5);
        assert_eq!(v, vec![5, 6, 7]);
        assert_eq!(r.len(), 5);
        let mut out = Vec::new();
        assert_eq!(r.pop_burst(&Consumer::new(), &mut out, 3), 3);
        assert_eq!(out, vec![0, 1, 2]);
        assert_eq!(r.push_burst(&Producer::new(), &mut v), 3);
        out.clear();
        assert_eq!(r.pop_burst(&Consumer::new(), &mut out, 100), 5);
        assert_eq!(out, vec![3, 4, 5, 6, 7]);
        assert!(r.is_empty());
        assert_eq!(r.pop(&Consumer::new()), None);
    }

    #[test]
    fn capacities_are_bounded() {
        // usize::MAX rounded up to a power of two overflowed; 10^10 slots
        // aborted on the failed allocation.
        for huge in [usize::MAX, 10_000_000_000, MAX_CAPACITY + 1] {
            let e = Ring::<u8>::try_with_room(huge, huge, false, false)
                .err()
                .unwrap();
            assert!(e.contains("maximum"), "{e}");
            let e = Ring::<u8>::try_with_room(1, huge, false, false)
                .err()
                .unwrap();
            assert!(e.contains("maximum"), "{e}");
        }
        let r = Ring::<u8>::try_with_room(MAX_CAPACITY, MAX_CAPACITY, false, false).unwrap();
        assert_eq!(r.max_capacity(), MAX_CAPACITY);
        // The infallible constructors clamp, and the ring works.
        let r = Ring::<u8>::with_room(usize::MAX, usize::MAX, false, false);
        assert_eq!(
            (r.capacity(), r.max_capacity()),
            (MAX_CAPACITY, MAX_CAPACITY)
        );
        r.push(&Producer::new(), 7).unwrap();
        assert_eq!(r.pop(&Consumer::new()), Some(7));
    }

    #[test]
    fn drop_releases_items() {
        let item = Arc::new(());
        {
            let r = Ring::new(4);
            r.push(&Producer::new(), item.clone()).unwrap();
            r.push(&Producer::new(), item.clone()).unwrap();
            assert_eq!(Arc::strong_count(&item), 3);
        }
        assert_eq!(Arc::strong_count(&item), 1);
    }

    #[test]
    fn many_producers_many_consumers_conserve_items() {
        const P: usize = 4;
        // Under Miri (its data-race detector checks every access of the
        // ring's threads) a smaller run: `cargo +nightly miri test -p
        // paraclick-runtime --lib ring::tests`.
        const N: usize = if cfg!(miri) { 300 } else { 50_000 };
        let r = Arc::new(Ring::<usize>::new(256));
        let total = Arc::new(AtomicUsize::new(0));
        let count = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for p in 0..P {
            let r = r.clone();
            hs.push(std::thread::spawn(move || {
                let mut i = 0;
                while i < N {
                    let mut v: Vec<usize> = (i..(i + 7).min(N)).map(|x| p * N + x).collect();
                    while !v.is_empty() {
                        i += r.push_burst(&Producer::new(), &mut v);
                        std::thread::yield_now();
                    }
                }
            }));
        }
        for _ in 0..2 {
            let (r, total, count) = (r.clone(), total.clone(), count.clone());
            hs.push(std::thread::spawn(move || {
                let mut out = Vec::new();
                // Per-producer order must be preserved per consumer.
                let mut last = [None::<usize>; P];
                while count.load(Ordering::Relaxed) < P * N {
                    out.clear();
                    let k = r.pop_burst(&Consumer::new(), &mut out, 32);
                    for &x in &out {
                        let p = x / N;
                        if let Some(l) = last[p] {
                            assert!(x > l, "order within a producer kept");
                        }
                        last[p] = Some(x);
                        total.fetch_add(x, Ordering::Relaxed);
                    }
                    count.fetch_add(k, Ordering::Relaxed);
                    if k == 0 {
                        std::thread::yield_now();
                    }
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let expect: usize = (0..P * N).sum();
        assert_eq!(count.load(Ordering::Relaxed), P * N);
        assert_eq!(total.load(Ordering::Relaxed), expect);
    }
}

/// Model checks of the ring under loom: every interleaving of small
/// producer/consumer scenarios up to a preemption bound, with the weak-memory
/// outcomes loom models for each atomic access, and loom's race check on
/// every slot access (a push is a write, a pop a move-out, also a write).
///
/// Each thread makes a bounded number of attempts, yielding between them,
/// instead of retrying until done: loom has to explore every way spinning
/// threads can take turns, and two threads spinning on each other's progress
/// make that tree unbounded. After the joins the main thread drains the
/// ring, so conservation is checked on every execution; the scenarios push
/// more items than the ring holds, and `model` asserts that some explored
/// executions pushed them all (indices wrapped, both cached tails were
/// refreshed).
///
/// Run (scripts/test.sh does): `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2
/// cargo test --release -p paraclick-runtime --lib ring::loom_tests`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;
    use std::sync::atomic::AtomicUsize as Count;

    struct Scenario {
        capacity: usize,
        /// One thread per list; lists strictly increasing and disjoint.
        producers: &'static [&'static [u32]],
        consumers: usize,
        /// Items per pop.
        burst: usize,
        /// Push or pop calls per thread.
        attempts: usize,
        /// Explore every interleaving, ignoring `LOOM_MAX_PREEMPTIONS`
        /// (for the models small enough to finish that way).
        unbounded: bool,
    }

    /// Pushes what fits of `items` in at most `attempts` bursts; returns
    /// what is left. A sole producer also checks, after each burst, that
    /// `len_upper_bound` (its own cache line only) is not below an exact
    /// length taken afterwards.
    fn push_some(r: &Ring<u32>, mut items: Vec<u32>, attempts: usize, sole: bool) -> Vec<u32> {
        for _ in 0..attempts {
            r.push_burst(&Producer::new(), &mut items);
            if sole {
                let bound = r.len_upper_bound();
                let exact = r.len_fresh();
                assert!(
                    exact <= bound,
                    "len_fresh {exact} > len_upper_bound {bound}"
                );
            }
            if items.is_empty() {
                break;
            }
            thread::yield_now();
        }
        items
    }

    fn pop_some(r: &Ring<u32>, burst: usize, attempts: usize) -> Vec<u32> {
        let mut out = Vec::new();
        for _ in 0..attempts {
            r.pop_burst(&Consumer::new(), &mut out, burst);
            thread::yield_now();
        }
        out
    }

    impl Scenario {
        /// Producers and consumers run concurrently (the last consumer on
        /// the model's main thread); sides are multi (CAS) exactly when
        /// they have several threads, as the thread plan chooses. Checks,
        /// on every execution: each pushed item popped exactly once (during
        /// the run or by the final drain), nothing popped that was not
        /// pushed, each consumer got each producer's items in that
        /// producer's order, the ring ends empty.
        fn check(self, name: &str) {
            let mut all: Vec<u32> = self.producers.concat();
            all.sort_unstable();
            assert!(all.windows(2).all(|w| w[0] < w[1]), "items distinct");
            assert!(
                all.len() > self.capacity,
                "the scenario should wrap the ring"
            );
            for items in self.producers {
                assert!(items.windows(2).all(|w| w[0] < w[1]), "increasing");
            }
            let runs = std::sync::Arc::new(Count::new(0));
            let wrapped = std::sync::Arc::new(Count::new(0));
            let (runs2, wrapped2) = (runs.clone(), wrapped.clone());
            let Scenario {
                capacity,
                producers,
                consumers,
                burst,
                attempts,
                unbounded,
            } = self;
            let (multi_p, multi_c) = (producers.len() > 1, consumers > 1);

            let mut b = loom::model::Builder::new();
            b.preemption_bound = if unbounded {
                None
            } else {
                b.preemption_bound.or(Some(2))
            };
            let bound = b.preemption_bound;
            let start = std::time::Instant::now();
            b.check(move || {
                runs2.fetch_add(1, Ordering::Relaxed);
                let r = Arc::new(Ring::<u32>::with_modes(capacity, multi_p, multi_c));
                let ps: Vec<_> = producers
                    .iter()
                    .map(|items| {
                        let r = r.clone();
                        thread::spawn(move || push_some(&r, items.to_vec(), attempts, !multi_p))
                    })
                    .collect();
                let cs: Vec<_> = (1..consumers)
                    .map(|_| {
                        let r = r.clone();
                        thread::spawn(move || pop_some(&r, burst, attempts))
                    })
                    .collect();
                let mut got = vec![pop_some(&r, burst, attempts)];
                got.extend(cs.into_iter().map(|c| c.join().unwrap()));
                let mut pushed = Vec::new();
                for (p, items) in ps.into_iter().zip(producers) {
                    let left = p.join().unwrap();
                    // push_burst takes from the front: what is left is a suffix.
                    let n = items.len() - left.len();
                    assert_eq!(&items[n..], &left[..]);
                    pushed.extend_from_slice(&items[..n]);
                }
                for out in &got {
                    for items in producers {
                        let mine: Vec<u32> =
                            out.iter().copied().filter(|x| items.contains(x)).collect();
                        assert!(
                            mine.windows(2).all(|w| w[0] < w[1]),
                            "a consumer got {out:?}: producer {items:?}'s order lost"
                        );
                    }
                }
                let mut rest = Vec::new();
                while r.pop_burst(&Consumer::new(), &mut rest, 64) > 0 {}
                let mut popped: Vec<u32> = got.concat();
                popped.extend_from_slice(&rest);
                popped.sort_unstable();
                pushed.sort_unstable();
                assert_eq!(
                    popped, pushed,
                    "lost or duplicated: got {got:?}, drained {rest:?}"
                );
                assert!(r.is_empty());
                assert_eq!(r.len_fresh(), 0);
                if pushed.len() > capacity {
                    wrapped2.fetch_add(1, Ordering::Relaxed);
                }
            });
            let (runs, wrapped) = (
                runs.load(Ordering::Relaxed),
                wrapped.load(Ordering::Relaxed),
            );
            println!(
                "{name}: {runs} executions, preemption bound {}, {:.1?}; \
                 {wrapped} pushed more than the capacity",
                bound.map_or("none".to_string(), |b| b.to_string()),
                start.elapsed()
            );
            assert!(
                wrapped > 0,
                "{name}: no explored execution wrapped the ring"
            );
        }
    }

    /// Plain stores on both sides; the producer meets a full ring, the
    /// consumer an empty one.
    #[test]
    fn spsc() {
        Scenario {
            capacity: 2,
            producers: &[&[1, 2, 3]],
            consumers: 1,
            burst: 2,
            attempts: 2,
            unbounded: true,
        }
        .check("spsc");
    }

    /// Two producers can hold claims at once, so the later one waits for
    /// the earlier one's publication (`wait_for`).
    #[test]
    fn mpsc() {
        Scenario {
            capacity: 2,
            producers: &[&[10, 11], &[20]],
            consumers: 1,
            burst: 2,
            attempts: 2,
            unbounded: true,
        }
        .check("mpsc");
    }

    /// Capacity 1: a producer can read a head the other producer has since
    /// moved and the consumer has passed (the stale-head retry in
    /// `push_burst`).
    #[test]
    fn mpsc_stale_head() {
        Scenario {
            capacity: 1,
            producers: &[&[10, 11], &[20]],
            consumers: 1,
            burst: 1,
            attempts: 2,
            unbounded: false,
        }
        .check("mpsc_stale_head");
    }

    /// Two consumers: claims by compare-and-swap, the later consumer waits
    /// for the earlier one's release. This is the model that found the
    /// relaxed consumer-head load (see `pop_burst`).
    #[test]
    fn spmc() {
        Scenario {
            capacity: 2,
            producers: &[&[1, 2, 3]],
            consumers: 2,
            burst: 1,
            attempts: 2,
            unbounded: false,
        }
        .check("spmc");
    }

    /// Both sides multi, each thread one attempt.
    #[test]
    fn mpmc() {
        Scenario {
            capacity: 2,
            producers: &[&[10, 11], &[20]],
            consumers: 2,
            burst: 1,
            attempts: 1,
            unbounded: false,
        }
        .check("mpmc");
    }

    /// The crossing protocol's extra consumer (`crossing::as_extra_consumer`,
    /// a handler draining a queue from another thread): the ring is
    /// single-consumer; the planned consumer acknowledges an epoch at the
    /// top of each loop, outside any pop; the handler switches the consumer
    /// side to compare-and-swap, bumps the epoch and waits for the
    /// acknowledgement (the barrier), pops concurrently with the planned
    /// consumer, and switches back to single. Every item is popped exactly
    /// once, in order for each consumer.
    #[test]
    fn extra_consumer_mode_switch() {
        extra_consumer(true, false);
    }

    /// The same with the planned consumer taking one item at a time the
    /// short way (`try_pop_single`, a queue's BURST 1 pull on its
    /// producer's thread), falling back to `pop_burst` once the side is
    /// multi.
    #[test]
    fn extra_consumer_mode_switch_single_item_pops() {
        extra_consumer(true, true);
    }

    /// One item at a time the short way on both sides
    /// (`try_push_single`, `try_pop_single`): each item popped once, in
    /// order, across a full ring and an empty one.
    #[test]
    fn spsc_single_item_ops() {
        let runs = std::sync::Arc::new(Count::new(0));
        let runs2 = runs.clone();
        let b = loom::model::Builder::new();
        b.check(move || {
            runs2.fetch_add(1, Ordering::Relaxed);
            let r = Arc::new(Ring::<u32>::with_modes(2, false, false));
            let p = {
                let r = r.clone();
                thread::spawn(move || {
                    let mut pushed = Vec::new();
                    for i in 1..=3u32 {
                        match r.try_push_single(&Producer::new(), i) {
                            Ok(len) => {
                                assert!((1..=2).contains(&len), "length {len}");
                                pushed.push(i);
                            }
                            Err(back) => {
                                assert_eq!(back, i, "the item comes back");
                                break;
                            }
                        }
                        thread::yield_now();
                    }
                    pushed
                })
            };
            let mut got = Vec::new();
            for _ in 0..3 {
                match r.try_pop_single(&Consumer::new()) {
                    Popped::One(x, _) => got.push(x),
                    Popped::Empty => {}
                    Popped::Multi => panic!("a single side said multi"),
                }
                thread::yield_now();
            }
            let pushed = p.join().unwrap();
            while let Popped::One(x, drained) = r.try_pop_single(&Consumer::new()) {
                got.push(x);
                assert_eq!(drained, r.is_empty(), "the drained hint, alone");
            }
            assert_eq!(got, pushed, "each pushed item once, in order");
            assert!(r.is_empty());
        });
        assert!(
            runs.load(Ordering::Relaxed) > 1,
            "loom explored interleavings"
        );
    }

    /// The same without the barrier: the handler pops as soon as it has
    /// switched the consumer side to compare-and-swap, while the planned
    /// consumer may be inside a single-consumer pop that read the old
    /// mode. Loom finds the interleaving where both write the same slot
    /// (a causality violation on its cell: one buffer, two owners), so the
    /// barrier is needed, not just the mode switch.
    #[test]
    fn extra_consumer_without_the_barrier_fails() {
        let (msg, kept_off) = quiet_panic("Causality violation", || extra_consumer(false, false));
        assert!(
            msg.as_deref()
                .is_some_and(|m| m.contains("Causality violation")),
            "loom found no causality violation without the barrier: {msg:?}"
        );
        assert!(kept_off >= 1, "the expected panic reached the log");
    }

    /// The message of a panic's payload.
    fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    }

    /// Runs `f`, which is meant to panic with a message containing
    /// `expected`, and returns its panic's message (`None`: no panic) and
    /// how many panic messages the filter kept off the log meanwhile.
    /// That panic is kept off the test log (it was a message and a full
    /// stack trace from a model that is meant to fail); any other panic,
    /// of this test or of another running beside it, is reported as usual.
    /// The filter joins the chain of panic hooks once and stays: loom's
    /// coroutines add their own hook to the chain on first use (it hides
    /// their unwinding of finished coroutines), and a hook taken off and
    /// put back would drop it if it came in meanwhile.
    fn quiet_panic(expected: &'static str, f: impl FnOnce()) -> (Option<String>, usize) {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        use std::sync::Mutex;
        static QUIET: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        static ACTIVE: AtomicUsize = AtomicUsize::new(0);
        static KEPT_OFF: AtomicUsize = AtomicUsize::new(0);
        static FILTER: std::sync::Once = std::sync::Once::new();
        FILTER.call_once(|| {
            let next = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if ACTIVE.load(SeqCst) > 0 {
                    let msg = panic_message(info.payload());
                    let quiet = QUIET.lock().map(|q| q.iter().any(|e| msg.contains(e)));
                    if quiet.unwrap_or(false) {
                        KEPT_OFF.fetch_add(1, SeqCst);
                        return;
                    }
                }
                next(info);
            }));
        });
        QUIET.lock().unwrap().push(expected);
        ACTIVE.fetch_add(1, SeqCst);
        let before = KEPT_OFF.load(SeqCst);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let kept_off = KEPT_OFF.load(SeqCst) - before;
        ACTIVE.fetch_sub(1, SeqCst);
        let mut q = QUIET.lock().unwrap();
        if let Some(i) = q.iter().position(|e| *e == expected) {
            q.remove(i);
        }
        (r.err().map(|p| panic_message(&*p)), kept_off)
    }

    fn extra_consumer(barrier: bool, single_item_pops: bool) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = b.preemption_bound.or(Some(2));
        b.check(move || {
            use loom::sync::atomic::AtomicUsize as LAtomic;
            let r = Arc::new(Ring::<u32>::with_modes(2, false, false));
            let epoch = Arc::new(LAtomic::new(0));
            let seen = Arc::new(LAtomic::new(0));
            let alive = Arc::new(AtomicBool::new(true));
            let items = [1u32, 2, 3];
            let p = {
                let r = r.clone();
                thread::spawn(move || push_some(&r, items.to_vec(), 2, true))
            };
            let c = {
                let (r, epoch, seen, alive) =
                    (r.clone(), epoch.clone(), seen.clone(), alive.clone());
                thread::spawn(move || {
                    let mut out = Vec::new();
                    for _ in 0..2 {
                        // The top of the worker loop: no pop in flight.
                        seen.store(epoch.load(Ordering::Acquire), Ordering::Release);
                        if single_item_pops {
                            match r.try_pop_single(&Consumer::new()) {
                                Popped::One(x, _) => out.push(x),
                                Popped::Empty => {}
                                Popped::Multi => {
                                    r.pop_burst(&Consumer::new(), &mut out, 1);
                                }
                            }
                        } else {
                            r.pop_burst(&Consumer::new(), &mut out, 1);
                        }
                        thread::yield_now();
                    }
                    alive.store(false, Ordering::Release);
                    out
                })
            };
            // The handler: upgrade, barrier, pop, restore.
            let sw = ModeSwitch::new();
            r.set_modes(&sw, false, true);
            let e = epoch.fetch_add(1, Ordering::AcqRel) + 1;
            while barrier && seen.load(Ordering::Acquire) < e && alive.load(Ordering::Acquire) {
                thread::yield_now();
            }
            let mut extra = Vec::new();
            r.pop_burst(&Consumer::new(), &mut extra, 2);
            r.set_modes(&sw, false, false);
            let planned = c.join().unwrap();
            let left = p.join().unwrap();
            let pushed = &items[..items.len() - left.len()];
            for got in [&planned, &extra] {
                assert!(got.windows(2).all(|w| w[0] < w[1]), "order lost: {got:?}");
            }
            let mut rest = Vec::new();
            while r.pop_burst(&Consumer::new(), &mut rest, 4) > 0 {}
            let mut all: Vec<u32> = planned.iter().chain(&extra).chain(&rest).copied().collect();
            all.sort_unstable();
            assert_eq!(
                all, pushed,
                "planned {planned:?} extra {extra:?} rest {rest:?}"
            );
        });
    }
}
