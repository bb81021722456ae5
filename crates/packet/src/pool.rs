//! Per-thread buffer pools.
//!
//! Each thread that allocates packets owns a pool: a LIFO free list of
//! buffers (recently freed buffers are still warm in cache) that grows
//! lazily up to a configured capacity and never beyond it, so memory is
//! bounded by `threads × capacity × buffer size` however many packets pass.
//!
//! A buffer remembers its home pool. Freed on its home thread it goes
//! straight back on the free list. Freed on another thread it is staged in
//! that thread's per-home staging vector and handed home in batches of
//! [`REMOTE_BATCH`] under one short lock, as SMP Click §4.4 prescribes;
//! the home thread takes all returned buffers at once when its free list
//! runs dry. When a pool's thread exits, its free buffers are released and
//! buffers that come home later are simply deallocated.

// The free lists hold `Box<Inner>` on purpose: a box *is* a packet's buffer
// handle, so moving one between a list and a `Packet` moves one pointer.
#![allow(clippy::vec_box)]

use crate::anno::Anno;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes of storage in a standard pooled buffer.
pub const BUFFER_SIZE: usize = 2048;
/// Headroom left in front of a new packet's data (room for encapsulation).
pub const HEADROOM: usize = 128;
/// How many buffers freed on a foreign thread travel home together.
pub const REMOTE_BATCH: usize = 32;
/// Default number of buffers a thread's pool may hold (in use plus free).
pub const DEFAULT_CAPACITY: usize = 8192;

static DEFAULT_CAP: AtomicUsize = AtomicUsize::new(DEFAULT_CAPACITY);

/// Sets the capacity of pools created from now on (threads that have not
/// allocated a packet yet).
pub fn set_default_capacity(n: usize) {
    DEFAULT_CAP.store(n.max(1), Ordering::Relaxed);
}

pub fn default_capacity() -> usize {
    DEFAULT_CAP.load(Ordering::Relaxed)
}

/// The storage behind a [`crate::Packet`].
pub(crate) struct Inner {
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// Absolute header positions in `buf`, or -1.
    pub(crate) mac: i32,
    pub(crate) net: i32,
    pub(crate) trans: i32,
    pub(crate) home: u32,
    /// The packet tracer's mark (see [`crate::Packet::trace`]): beside
    /// `home`, which freeing reads anyway, so that freeing an unmarked
    /// buffer pays one more test of a line already loaded.
    pub(crate) trace: u32,
    pub(crate) anno: Anno,
    pub(crate) buf: Box<[u8]>,
}

impl Inner {
    fn new(home: u32, size: usize) -> Box<Inner> {
        Box::new(Inner {
            start: 0,
            end: 0,
            mac: -1,
            net: -1,
            trans: -1,
            home,
            trace: 0,
            anno: Anno::new(),
            buf: vec![0u8; size].into_boxed_slice(),
        })
    }
}

/// The part of a pool other threads can reach.
struct Shared {
    returns: Mutex<Vec<Box<Inner>>>,
    pending: AtomicBool,
    alive: AtomicBool,
    /// Published statistics (updated by [`publish_stats`] and at thread exit).
    created: AtomicUsize,
    free: AtomicUsize,
}

struct Staged {
    home: u32,
    shared: Arc<Shared>,
    bufs: Vec<Box<Inner>>,
}

struct Local {
    /// Count the packets freed while unwinding ([`count_unwound`]).
    count_unwound: bool,
    /// Recycled batch storage (see [`crate::Batch`]): kept with the pool so
    /// dropping a batch frees its packets and its storage in one visit.
    vecs: Vec<crate::batch::BatchVec>,
    id: u32,
    shared: Option<Arc<Shared>>,
    free: Vec<Box<Inner>>,
    /// How many buffers at the bottom of `free` came home from other
    /// threads (their metadata was last touched there).
    remote: usize,
    created: usize,
    cap: usize,
    staged: Vec<Staged>,
    failures: u64,
}

static REGISTRY: Mutex<Vec<Arc<Shared>>> = Mutex::new(Vec::new());

fn registry_get(id: u32) -> Option<Arc<Shared>> {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.get(id as usize - 1).cloned()
}

impl Local {
    const fn new() -> Local {
        Local {
            vecs: Vec::new(),
            id: 0,
            shared: None,
            free: Vec::new(),
            remote: 0,
            created: 0,
            cap: 0,
            staged: Vec::new(),
            failures: 0,
            count_unwound: false,
        }
    }

    fn init(&mut self) {
        if self.shared.is_some() {
            return;
        }
        let shared = Arc::new(Shared {
            returns: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            created: AtomicUsize::new(0),
            free: AtomicUsize::new(0),
        });
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.push(shared.clone());
        self.id = reg.len() as u32;
        self.shared = Some(shared);
        self.cap = default_capacity();
        self.free.reserve(self.cap.min(4096));
    }

    /// Takes back the buffers other threads returned.
    fn drain_returns(&mut self) {
        let Some(shared) = &self.shared else { return };
        if !shared.pending.load(Ordering::Acquire) {
            return;
        }
        let mut r = shared.returns.lock().unwrap_or_else(|e| e.into_inner());
        shared.pending.store(false, Ordering::Release);
        for b in r.drain(..) {
            if b.buf.len() == BUFFER_SIZE {
                self.free.push(b);
            } else {
                self.created -= 1;
            }
        }
        self.remote = self.free.len();
    }

    #[inline]
    fn alloc(&mut self) -> Option<Box<Inner>> {
        if let Some(b) = self.free.pop() {
            // The next buffers out, if they came home from another thread
            // (their metadata lines were last read there): start taking
            // their lines back now, while this packet is processed (the
            // next one) or while the rest of a burst is allocated (one
            // further down).
            let n = self.free.len();
            if n < self.remote + 1 {
                self.remote = n;
                if n > 0 {
                    prefetch_write(&*self.free[n - 1]);
                    if n > PREFETCH_AHEAD {
                        prefetch_write(&*self.free[n - 1 - PREFETCH_AHEAD]);
                    }
                }
            }
            return Some(b);
        }
        self.alloc_slow(BUFFER_SIZE)
    }

    #[cold]
    fn alloc_slow(&mut self, size: usize) -> Option<Box<Inner>> {
        self.init();
        if size == BUFFER_SIZE {
            self.drain_returns();
            if let Some(b) = self.free.pop() {
                return Some(b);
            }
        }
        if self.created < self.cap {
            self.created += 1;
            return Some(Inner::new(self.id, size));
        }
        self.failures += 1;
        None
    }

    #[inline]
    fn free(&mut self, b: Box<Inner>) {
        if b.home == self.id && b.buf.len() == BUFFER_SIZE && b.trace == 0 {
            self.free.push(b);
        } else {
            self.free_slow(b);
        }
    }

    #[cold]
    fn free_slow(&mut self, mut b: Box<Inner>) {
        if b.trace != 0 {
            // A marked packet's end: the tracer counts them alive.
            b.trace = 0;
            crate::packet::marked_gone();
            if b.home == self.id && b.buf.len() == BUFFER_SIZE {
                self.free.push(b);
                return;
            }
        }
        if b.home == self.id {
            // An oversized buffer: release its memory and its place.
            self.created -= 1;
            return;
        }
        let home = b.home;
        let idx = match self.staged.iter().position(|s| s.home == home) {
            Some(i) => i,
            None => match registry_get(home) {
                Some(shared) => {
                    self.staged.push(Staged {
                        home,
                        shared,
                        bufs: Vec::with_capacity(REMOTE_BATCH),
                    });
                    self.staged.len() - 1
                }
                None => return, // unknown home: just deallocate
            },
        };
        let s = &mut self.staged[idx];
        s.bufs.push(b);
        if s.bufs.len() >= REMOTE_BATCH {
            send_home(s);
        }
    }

    fn flush_staged(&mut self) {
        for s in &mut self.staged {
            if !s.bufs.is_empty() {
                send_home(s);
            }
        }
    }

    fn publish(&self) {
        if let Some(shared) = &self.shared {
            shared.created.store(self.created, Ordering::Relaxed);
            shared.free.store(self.free.len(), Ordering::Relaxed);
        }
    }
}

fn send_home(s: &mut Staged) {
    // The lock orders this against the home thread's exit (see `Drop for
    // Local`): either the buffers arrive before it drains its returns, or
    // it is gone and they are released here and uncounted.
    let mut r = s.shared.returns.lock().unwrap_or_else(|e| e.into_inner());
    if !s.shared.alive.load(Ordering::Acquire) {
        s.shared.created.fetch_sub(s.bufs.len(), Ordering::Relaxed);
        s.bufs.clear();
        return;
    }
    r.append(&mut s.bufs);
    s.shared.pending.store(true, Ordering::Release);
}

impl Drop for Local {
    fn drop(&mut self) {
        self.flush_staged();
        let Some(shared) = self.shared.clone() else {
            return;
        };
        let mut r = shared.returns.lock().unwrap_or_else(|e| e.into_inner());
        shared.pending.store(false, Ordering::Release);
        for b in r.drain(..) {
            if b.buf.len() == BUFFER_SIZE {
                self.free.push(b);
            } else {
                self.created -= 1;
            }
        }
        shared.alive.store(false, Ordering::Release);
        // From now on `created` counts the buffers still held by packets
        // elsewhere; they decrement it as they are released.
        shared
            .created
            .store(self.created - self.free.len(), Ordering::Relaxed);
        shared.free.store(0, Ordering::Relaxed);
        drop(r);
        self.free.clear();
    }
}

/// How far down the free list the allocator prefetches besides the next
/// buffer (for bursts).
const PREFETCH_AHEAD: usize = 12;

/// Asks for the cache lines of `x` in a state this core may write
/// (`prefetchw`), without waiting. A hint: no effect on what the program
/// computes. (Also used by the runtime's rings for lines another core
/// read last.)
#[inline(always)]
pub fn prefetch_write<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let p = x as *const T as *const u8;
        let size = std::mem::size_of::<T>();
        // Every line the value touches, wherever it starts.
        for off in (0..size)
            .step_by(64)
            .chain(std::iter::once(size.saturating_sub(1)))
        {
            // SAFETY: prefetchw only hints the cache; it reads and writes
            // nothing architecturally and cannot fault, whatever the
            // address (here, inside a live allocation). CPUs without it
            // (before Broadwell) execute it as a no-op.
            unsafe {
                std::arch::asm!(
                    "prefetchw [{}]",
                    in(reg) p.wrapping_add(off),
                    options(nostack, preserves_flags, readonly)
                );
            }
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(Local::new()) };
    /// Packets this thread freed while unwinding from a panic, not yet
    /// taken ([`take_unwound`]).
    static UNWOUND: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` packets freed while the thread unwinds from a panic.
#[cold]
#[inline(never)]
fn note_unwound(n: usize) {
    let _ = UNWOUND.try_with(|u| u.set(u.get() + n as u64));
}

/// Whether this thread counts the packets it frees while unwinding from a
/// panic ([`take_unwound`]): set by a thread that runs fault domains
/// (the test costs the others nothing more than a flag).
pub fn count_unwound(on: bool) {
    let _ = LOCAL.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            l.count_unwound = on;
        }
    });
}

/// The packets this thread freed while unwinding from a panic since the
/// last call (a fault domain counts those its failing element held as
/// dropped), and starts counting again from 0.
pub fn take_unwound() -> u64 {
    UNWOUND.try_with(|u| u.replace(0)).unwrap_or(0)
}

#[inline]
pub(crate) fn alloc() -> Option<Box<Inner>> {
    LOCAL.try_with(|l| l.borrow_mut().alloc()).ok().flatten()
}

/// Allocates a buffer of at least `size` bytes (bigger than a standard one).
pub(crate) fn alloc_large(size: usize) -> Option<Box<Inner>> {
    if size <= BUFFER_SIZE {
        return alloc();
    }
    LOCAL
        .try_with(|l| l.borrow_mut().alloc_slow(size))
        .ok()
        .flatten()
}

#[inline]
pub(crate) fn free(b: Box<Inner>) {
    // If this thread's pool is already gone (thread exit), `b` is simply
    // deallocated.
    let mut b = Some(b);
    let _ = LOCAL.try_with(|l| {
        if let (Some(b), Ok(mut l)) = (b.take(), l.try_borrow_mut()) {
            if l.count_unwound && std::thread::panicking() {
                note_unwound(1);
            }
            l.free(b);
        }
    });
    if let Some(b) = b {
        unpooled(&b);
    }
}

/// A buffer no pool takes (this thread's is gone or busy), about to be
/// released: the end of a marked packet too.
#[cold]
#[inline(never)]
fn unpooled(b: &Inner) {
    if b.trace != 0 {
        crate::packet::marked_gone();
    }
}

/// Up to `n` new packets of `len` bytes after `headroom` bytes (which
/// must fit a standard buffer), in a recycled batch vector, with one visit
/// to the thread's pool. Fewer if the pool runs out.
#[inline]
pub(crate) fn alloc_batch(n: usize, headroom: usize, len: usize) -> crate::batch::BatchVec {
    debug_assert!(headroom + len <= BUFFER_SIZE);
    let fresh = || thin_vec::ThinVec::with_capacity(crate::batch::BATCH_CAPACITY.max(n));
    LOCAL
        .try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return fresh();
            };
            let mut v = l.vecs.pop().unwrap_or_else(fresh);
            if v.capacity() - v.len() < n {
                v.reserve(n);
            }
            for _ in 0..n {
                match l.alloc() {
                    Some(b) => v.push(crate::Packet::from_inner(b, headroom, len)),
                    None => break,
                }
            }
            v
        })
        .unwrap_or_default()
}

/// Takes a recycled batch vector, if this thread has one.
#[inline]
pub(crate) fn take_vec() -> Option<crate::batch::BatchVec> {
    LOCAL
        .try_with(|l| l.try_borrow_mut().ok().and_then(|mut l| l.vecs.pop()))
        .ok()
        .flatten()
}

/// Releases the packets of `v` (leaving it empty) and keeps `v` for reuse
/// if `keep` and there is room, with one visit to the thread's pool
/// rather than one per packet. Returns `v` if it was not kept.
#[inline]
pub(crate) fn release_batch(
    mut v: crate::batch::BatchVec,
    keep: bool,
) -> Option<crate::batch::BatchVec> {
    // Without a pool (thread exit) the closure is dropped uncalled and `v`
    // with it: its packets are then released one by one.
    LOCAL
        .try_with(move |l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return Some(v);
            };
            if l.count_unwound && !v.is_empty() && std::thread::panicking() {
                note_unwound(v.len());
            }
            while let Some(p) = v.pop() {
                l.free(p.into_inner());
            }
            if keep && l.vecs.len() < crate::batch::MAX_RECYCLED {
                l.vecs.push(v);
                None
            } else {
                Some(v)
            }
        })
        .unwrap_or(None)
}

/// Hands buffers staged for other threads' pools home now (call when a
/// thread goes idle or stops, so no buffer waits for a batch to fill).
pub fn flush_remote() {
    let _ = LOCAL.try_with(|l| l.borrow_mut().flush_staged());
}

/// Statistics of the calling thread's pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pool id (0 if this thread never allocated).
    pub id: u32,
    /// Buffers that exist (in use, free, or on their way home).
    pub created: usize,
    /// Buffers on the free list.
    pub free: usize,
    /// Allocations refused because the pool was at capacity.
    pub failures: u64,
    pub capacity: usize,
}

impl PoolStats {
    /// Buffers neither free nor returned: held by packets somewhere.
    pub fn in_use(&self) -> usize {
        self.created - self.free
    }
}

/// Statistics of this thread's pool, after taking back returned buffers.
pub fn local_stats() -> PoolStats {
    LOCAL
        .try_with(|l| {
            let mut l = l.borrow_mut();
            l.drain_returns();
            l.publish();
            PoolStats {
                id: l.id,
                created: l.created,
                free: l.free.len(),
                failures: l.failures,
                capacity: l.cap,
            }
        })
        .unwrap_or_default()
}

/// Buffers of pool `id` still held by packets, as last published (exact
/// once the pool's thread has exited: then it is the number of buffers
/// that never came home).
pub fn outstanding(id: u32) -> Option<usize> {
    if id == 0 {
        return None;
    }
    let s = registry_get(id)?;
    let r = s.returns.lock().unwrap_or_else(|e| e.into_inner());
    let created = s.created.load(Ordering::Relaxed);
    let free = s.free.load(Ordering::Relaxed);
    let returned = if s.alive.load(Ordering::Acquire) {
        r.len()
    } else {
        0
    };
    Some(created.saturating_sub(free + returned))
}

/// Publishes this thread's pool statistics for [`outstanding`].
pub fn publish_stats() {
    let _ = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        l.drain_returns();
        l.publish()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Packet;

    #[test]
    fn reuse_is_lifo_and_bounded() {
        std::thread::spawn(|| {
            let p = Packet::from_slice(&[1, 2, 3]).unwrap();
            let before = local_stats();
            drop(p);
            let after = local_stats();
            assert_eq!(after.free, before.free + 1);
            // Allocating again reuses the freed buffer: no new creation.
            let _q = Packet::from_slice(&[4]).unwrap();
            assert_eq!(local_stats().created, after.created);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn capacity_limits_allocation() {
        std::thread::spawn(|| {
            set_default_capacity_for_test(4);
            let ps: Vec<_> = (0..4).map(|_| Packet::new(10).unwrap()).collect();
            assert!(Packet::new(10).is_none());
            assert_eq!(local_stats().failures, 1);
            drop(ps);
            assert!(Packet::new(10).is_some());
        })
        .join()
        .unwrap();
    }

    fn set_default_capacity_for_test(n: usize) {
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            l.init();
            l.cap = n;
        });
    }

    #[test]
    fn remote_frees_come_home_in_batches() {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Packet>>();
        let (back_tx, back_rx) = std::sync::mpsc::channel::<()>();
        let home = std::thread::spawn(move || {
            let ps: Vec<_> = (0..100)
                .map(|i| Packet::from_slice(&[i as u8]).unwrap())
                .collect();
            let id = local_stats().id;
            assert_eq!(local_stats().in_use(), 100);
            tx.send(ps).unwrap();
            back_rx.recv().unwrap();
            let s = local_stats();
            assert_eq!(s.in_use(), 0, "all 100 buffers came home");
            id
        });
        let ps = rx.recv().unwrap();
        std::thread::spawn(move || {
            drop(ps);
            flush_remote();
        })
        .join()
        .unwrap();
        back_tx.send(()).unwrap();
        let id = home.join().unwrap();
        assert_eq!(outstanding(id), Some(0));
    }

    #[test]
    fn oversized_buffers_freed_elsewhere_are_counted_home() {
        // Large buffers go home too (to be released and uncounted there):
        // the pool's accounting closes.
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Packet>>();
        let (back_tx, back_rx) = std::sync::mpsc::channel::<()>();
        let home = std::thread::spawn(move || {
            let mut ps: Vec<_> = (0..3).map(|_| Packet::new(60).unwrap()).collect();
            ps.extend((0..2).map(|_| Packet::make(HEADROOM, 4 * BUFFER_SIZE, 0).unwrap()));
            assert_eq!(local_stats().in_use(), 5);
            let id = local_stats().id;
            tx.send(ps).unwrap();
            back_rx.recv().unwrap();
            let s = local_stats();
            assert_eq!(s.in_use(), 0);
            assert_eq!(s.free, 3, "only the standard buffers are kept");
            id
        });
        let ps = rx.recv().unwrap();
        std::thread::spawn(move || {
            drop(ps);
            flush_remote();
        })
        .join()
        .unwrap();
        back_tx.send(()).unwrap();
        let id = home.join().unwrap();
        assert_eq!(outstanding(id), Some(0));
    }

    #[test]
    fn packets_outliving_their_pool_are_freed() {
        let p = std::thread::spawn(|| Packet::from_slice(&[9; 60]).unwrap())
            .join()
            .unwrap();
        assert_eq!(p.data()[0], 9);
        drop(p);
        flush_remote();
    }
}
