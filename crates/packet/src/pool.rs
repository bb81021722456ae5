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
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes of storage in a standard pooled buffer.
pub const BUFFER_SIZE: usize = 2048;
/// Headroom left in front of a new packet's data (room for encapsulation).
pub const HEADROOM: usize = 128;
/// How many buffers freed on a foreign thread travel home together.
pub const REMOTE_BATCH: usize = 32;
/// How many returned buffers a pool whose free list ran dry takes back at
/// once, at least: with fewer waiting it makes new buffers (up to its
/// capacity). Taking them back costs the home thread a lock and the lines
/// the freeing thread wrote (the lock's, the vector's) whatever their
/// number; a pool that took each batch of 32 as it came paid that every
/// 32 packets on a producer whose packets all die on another thread.
pub const MIN_RETURNS: usize = 128;
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

/// The storage behind a [`crate::Packet`]: two cache lines, the first
/// with what every element and the free path read (the offsets, the
/// home pool, the storage), the second the annotations. Aligned to its
/// lines: unaligned, as a plain allocation of 128 bytes, it lay across
/// three lines, two of them shared with the buffer headers next to it,
/// so a consumer on another core freeing one packet took a line back
/// from the producer filling the next.
///
/// In a packet, `start <= end <= buf.len()` always holds: whatever sets
/// `start` or `end` keeps it (sizes are checked where a packet is made,
/// moves of the data's ends are clamped or checked), and the packet's
/// data accessors rely on it to skip their bounds checks.
#[repr(C, align(64))]
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
    pub(crate) buf: Buf,
    /// The owner of an external buffer ([`EXTERNAL`] home), to which it
    /// returns when its packet is freed; `None` for a pooled buffer.
    pub(crate) owner: Option<Arc<dyn BufferOwner>>,
    pub(crate) anno: Anno,
}

/// The `home` of a buffer that belongs to no pool but to a
/// [`BufferOwner`] (no pool has this id).
pub(crate) const EXTERNAL: u32 = u32::MAX;

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
            buf: Buf::owned(vec![0u8; size].into_boxed_slice()),
            owner: None,
        })
    }
}

/// A packet's storage: a heap slice (pooled buffers, released by
/// `Inner`'s drop), or memory a [`BufferOwner`] lent (an AF_XDP UMEM
/// frame; `Inner::owner` is set). Dereferences to the bytes, as the
/// `Box<[u8]>` it replaces did, at the same cost and size.
pub(crate) struct Buf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a `Buf` is the only handle to its bytes (an owned slice, or an
// external region its owner lends to one buffer at a time), so it may
// move to and be read from other threads as a `Box<[u8]>` may.
unsafe impl Send for Buf {}
// SAFETY: as above; `&Buf` gives only shared access to the bytes.
unsafe impl Sync for Buf {}

impl Buf {
    fn owned(b: Box<[u8]>) -> Buf {
        let len = b.len();
        let ptr = NonNull::new(Box::into_raw(b).cast::<u8>()).expect("Box pointers are not null");
        Buf { ptr, len }
    }
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialized bytes that live as
        // long as this `Buf` (an owned slice, or external memory its
        // owner keeps mapped while any buffer of it exists).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for Buf {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.owner.is_none() {
            // SAFETY: without an owner the buffer was made by
            // `Buf::owned` from a `Box<[u8]>` of `len` bytes (external
            // ones always have an owner); released once, here.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.buf.ptr.as_ptr(),
                    self.buf.len,
                ))
            });
        }
    }
}

/// The owner of external packet buffers: memory that is not the pools'
/// (the frames of an AF_XDP UMEM), lent to packets one buffer at a time.
/// A packet made of an [`ExtBuffer`] is used as any other; when it is
/// freed its buffer comes back to the owner through [`release`], in
/// batches of up to [`REMOTE_BATCH`] per freeing thread (and whatever a
/// thread holds when it goes idle, [`flush_remote`]), from any thread.
///
/// [`release`]: BufferOwner::release
pub trait BufferOwner: Send + Sync {
    /// Takes back the buffers of freed packets: must take every one out
    /// of `bufs` (those left are dropped, and their memory lost to the
    /// owner). Called on the thread that freed them, which must not free
    /// or allocate packets in the call.
    fn release(&self, bufs: &mut Vec<ExtBuffer>);
}

/// An external buffer ([`BufferOwner`]) not in a packet: the handle its
/// owner keeps while the memory is its own (or the kernel's), and turns
/// into a packet with [`ExtBuffer::into_packet`] without copying. Dropping
/// it loses the buffer (its memory is not freed: it is the owner's).
pub struct ExtBuffer(pub(crate) Box<Inner>);

impl ExtBuffer {
    /// A handle to the `len` bytes at `ptr`, owned by `owner`.
    ///
    /// # Safety
    /// The bytes are valid for reads and writes for as long as `owner`
    /// lives (every handle and packet of them holds it), and nothing
    /// reads or writes them while this handle or a packet made of it
    /// exists, except through it: the owner lends each region to one
    /// handle and touches it again only once the handle comes back.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize, owner: Arc<dyn BufferOwner>) -> ExtBuffer {
        ExtBuffer(Box::new(Inner {
            start: 0,
            end: 0,
            mac: -1,
            net: -1,
            trans: -1,
            home: EXTERNAL,
            trace: 0,
            anno: Anno::new(),
            buf: Buf { ptr, len },
            owner: Some(owner),
        }))
    }

    /// The start of the buffer's memory.
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.0.buf.ptr.as_ptr()
    }

    /// The buffer's size.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.0.buf.len
    }

    /// Its owner.
    pub fn owner(&self) -> &Arc<dyn BufferOwner> {
        self.0
            .owner
            .as_ref()
            .expect("external buffers have an owner")
    }

    /// A packet whose data are bytes `start..start + len` of the buffer
    /// (the bytes before are its headroom), with fresh annotations. No
    /// copy. `None` if the range does not fit the buffer.
    #[inline]
    pub fn into_packet(self, start: usize, len: usize) -> Result<crate::Packet, ExtBuffer> {
        if start
            .checked_add(len)
            .is_none_or(|e| e > self.0.buf.len || e > u32::MAX as usize)
        {
            return Err(self);
        }
        Ok(crate::Packet::from_inner(self.0, start, len))
    }
}

/// Whether `a` and `b` are the same owner.
#[inline]
pub fn same_owner(a: &Arc<dyn BufferOwner>, b: &Arc<dyn BufferOwner>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// The part of a pool other threads can reach.
struct Shared {
    returns: Mutex<Returns>,
    pending: AtomicBool,
    /// Standard buffers in `returns` (set under its lock, a hint outside
    /// it): the home thread takes them only once there are
    /// [`MIN_RETURNS`] (see [`Local::alloc_slow`]).
    returned: AtomicUsize,
    alive: AtomicBool,
    /// Published statistics (updated by [`publish_stats`] and at thread exit).
    created: AtomicUsize,
    free: AtomicUsize,
}

/// What other threads have handed back to a pool, waiting for its thread.
#[derive(Default)]
struct Returns {
    /// Standard buffers, ready for the free list as they are.
    bufs: Vec<Box<Inner>>,
    /// Oversized buffers released by the threads that freed them: the
    /// pool no longer counts them once it takes this.
    gone: usize,
}

struct Staged {
    home: u32,
    shared: Arc<Shared>,
    /// Standard buffers only, so that the home thread takes them without
    /// looking at each (see [`Local::drain_returns`]).
    bufs: Vec<Box<Inner>>,
    /// Oversized buffers of this home released here, not yet reported.
    gone: usize,
}

/// External buffers freed on this thread, waiting to go back to their
/// owner in a batch.
struct ExtStaged {
    owner: Arc<dyn BufferOwner>,
    bufs: Vec<ExtBuffer>,
}

struct Local {
    /// External buffers waiting to go back to their owners.
    ext: Vec<ExtStaged>,
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
            ext: Vec::new(),
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
            returns: Mutex::new(Returns::default()),
            pending: AtomicBool::new(false),
            returned: AtomicUsize::new(0),
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

    /// Takes back the buffers other threads returned. They are all
    /// standard buffers (the freeing threads released oversized ones and
    /// counted them): on an empty free list, where allocation calls this,
    /// the returned vector becomes the free list as it is, without a
    /// visit to each buffer (a load of a line the other core had, per
    /// buffer, before the allocation's prefetch could ask for it).
    fn drain_returns(&mut self) {
        let Some(shared) = &self.shared else { return };
        if !shared.pending.load(Ordering::Acquire) {
            return;
        }
        let mut r = shared.returns.lock().unwrap_or_else(|e| e.into_inner());
        shared.pending.store(false, Ordering::Release);
        shared.returned.store(0, Ordering::Relaxed);
        self.created -= std::mem::take(&mut r.gone);
        if self.free.is_empty() {
            std::mem::swap(&mut self.free, &mut r.bufs);
        } else {
            self.free.append(&mut r.bufs);
        }
        drop(r);
        self.remote = self.free.len();
        // The first buffers out: `alloc` asks for each buffer's lines
        // PREFETCH_AHEAD allocations before it, which these did not have.
        // Asked for together, their transfers overlap.
        let n = self.free.len();
        for i in 1..=n.min(PREFETCH_AHEAD + 1) {
            prefetch_write(&*self.free[n - i]);
        }
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

    /// Pushes up to `n` buffers onto `v` as packets `fill` writes, their
    /// data by `copy`: the buffers `alloc` would give, in its order.
    #[inline(always)]
    fn fill(
        &mut self,
        v: &mut crate::batch::BatchVec,
        n: usize,
        fill: &Fill<'_>,
        copy: impl Fn(&mut [u8]),
    ) {
        let have = self.free.len();
        // Whether `alloc` would prefetch nothing while it pops `n`: none
        // of the buffers it takes, nor the next one out, came home from
        // another thread (with none that did, nothing to prefetch).
        if have >= n && (have - n > self.remote || self.remote == 0) {
            // The top `n` of the free list, in the order `alloc` pops
            // them (the warmest first).
            for b in self.free.drain(have - n..).rev() {
                v.push(fill.packet(b, &copy));
            }
            return;
        }
        for _ in 0..n {
            match self.alloc() {
                Some(b) => v.push(fill.packet(b, &copy)),
                None => break,
            }
        }
    }

    #[cold]
    fn alloc_slow(&mut self, size: usize) -> Option<Box<Inner>> {
        self.init();
        let grow = self.created < self.cap;
        if size == BUFFER_SIZE {
            // Fewer than MIN_RETURNS buffers came home: the pool grows
            // instead (while it may), so that each hand-over, a lock and
            // lines the freeing thread wrote, serves many allocations.
            let few = grow
                && self
                    .shared
                    .as_ref()
                    .is_some_and(|s| s.returned.load(Ordering::Relaxed) < MIN_RETURNS);
            if !few {
                self.drain_returns();
                if let Some(b) = self.free.pop() {
                    return Some(b);
                }
            }
        }
        if grow {
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
        if b.home == EXTERNAL {
            self.free_external(b);
            return;
        }
        if b.home == self.id {
            // An oversized buffer: release its memory and its place.
            self.created -= 1;
            return;
        }
        // Unknown home: just deallocate.
        let Some(s) = self.staged_for(b.home) else {
            return;
        };
        if b.buf.len() == BUFFER_SIZE {
            s.bufs.push(b);
            if s.bufs.len() >= REMOTE_BATCH {
                send_home(s);
            }
        } else {
            // An oversized buffer: released here, reported home with the
            // next batch.
            s.gone += 1;
        }
    }

    /// The staging of buffers for pool `home` (another thread's), made on
    /// first use; `None` if there is no such pool.
    #[inline]
    fn staged_for(&mut self, home: u32) -> Option<&mut Staged> {
        let idx = match self.staged.iter().position(|s| s.home == home) {
            Some(i) => i,
            None => {
                let shared = registry_get(home)?;
                self.staged.push(Staged {
                    home,
                    shared,
                    bufs: Vec::with_capacity(REMOTE_BATCH),
                    gone: 0,
                });
                self.staged.len() - 1
            }
        };
        Some(&mut self.staged[idx])
    }

    /// Stages an external buffer for its owner; a full batch goes back.
    fn free_external(&mut self, b: Box<Inner>) {
        let Some(owner) = b.owner.as_ref() else {
            return;
        };
        let idx = match self.ext.iter().position(|s| same_owner(&s.owner, owner)) {
            Some(i) => i,
            None => {
                self.ext.push(ExtStaged {
                    owner: owner.clone(),
                    bufs: Vec::with_capacity(REMOTE_BATCH),
                });
                self.ext.len() - 1
            }
        };
        let s = &mut self.ext[idx];
        s.bufs.push(ExtBuffer(b));
        if s.bufs.len() >= REMOTE_BATCH {
            s.owner.release(&mut s.bufs);
            s.bufs.clear();
        }
    }

    fn flush_staged(&mut self) {
        for s in &mut self.staged {
            if !s.bufs.is_empty() || s.gone > 0 {
                send_home(s);
            }
        }
        // External buffers go back, and the owners are let go (an owner
        // ends when its last buffer has come back).
        for mut s in self.ext.drain(..) {
            if !s.bufs.is_empty() {
                s.owner.release(&mut s.bufs);
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
    let gone = std::mem::take(&mut s.gone);
    if !s.shared.alive.load(Ordering::Acquire) {
        s.shared
            .created
            .fetch_sub(s.bufs.len() + gone, Ordering::Relaxed);
        s.bufs.clear();
        return;
    }
    r.bufs.append(&mut s.bufs);
    r.gone += gone;
    s.shared.returned.store(r.bufs.len(), Ordering::Relaxed);
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
        shared.returned.store(0, Ordering::Relaxed);
        self.created -= std::mem::take(&mut r.gone);
        self.free.append(&mut r.bufs);
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
        let (first, lines) = line_span(p as usize, std::mem::size_of::<T>());
        // Every line the value touches, once each: a counted walk. (The
        // chained step iterator this replaces cost about 20 instructions
        // a line and prefetched the last line twice; a producer taking
        // back buffers freed on another core pays two of these a packet.)
        for i in 0..lines {
            // SAFETY: prefetchw only hints the cache; it reads and writes
            // nothing architecturally and cannot fault, whatever the
            // address (here, a line holding part of a live value). CPUs
            // without it (before Broadwell) execute it as a no-op.
            unsafe {
                std::arch::asm!(
                    "prefetchw [{}]",
                    in(reg) p.wrapping_add(first.wrapping_add(i * 64)),
                    options(nostack, preserves_flags, readonly)
                );
            }
        }
    }
}

/// Asks for the cache lines of `x` for reading (`prefetcht0`), without
/// waiting. A hint, as [`prefetch_write`]: for lines another core wrote
/// that this one is about to read and not write (a crossing queue's
/// consumer taking a burst of packets).
#[inline(always)]
pub fn prefetch_read<T>(x: &T) {
    let p = x as *const T as *const u8;
    let (first, lines) = line_span(p as usize, std::mem::size_of::<T>());
    for i in 0..lines {
        prefetch_read_line(p.wrapping_add(first.wrapping_add(i * 64)));
    }
}

/// Asks for the cache line holding address `p` for reading, without
/// waiting.
#[inline(always)]
pub fn prefetch_read_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetcht0 only hints the cache; it reads nothing
    // architecturally and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The cache lines (64 bytes) that `size` bytes at address `addr` touch:
/// the offset from `addr` to the start of the first (0 or negative, as a
/// wrapping offset) and how many lines. A zero-sized value counts the
/// line of its address.
#[inline(always)]
fn line_span(addr: usize, size: usize) -> (usize, usize) {
    let start = addr & !63;
    let end = addr.wrapping_add(size.max(1) - 1) & !63;
    (start.wrapping_sub(addr), (end.wrapping_sub(start) >> 6) + 1)
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
    // deallocated, or, external, goes straight back to its owner.
    let mut b = Some(b);
    let _ = LOCAL.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            if let Some(b) = b.take() {
                if l.count_unwound && std::thread::panicking() {
                    note_unwound(1);
                }
                l.free(b);
            }
        }
    });
    if let Some(mut b) = b {
        unpooled(&mut b);
        release_now(b);
    }
}

/// A buffer no pool takes (this thread's is gone or busy), about to be
/// released: the end of a marked packet too.
#[cold]
#[inline(never)]
fn unpooled(b: &mut Inner) {
    if b.trace != 0 {
        b.trace = 0;
        crate::packet::marked_gone();
    }
}

/// An external buffer freed without a pool to stage it in: back to its
/// owner at once (a pooled one is deallocated).
#[cold]
fn release_now(b: Box<Inner>) {
    if b.home == EXTERNAL {
        if let Some(owner) = b.owner.clone() {
            owner.release(&mut vec![ExtBuffer(b)]);
        }
    }
}

/// Up to `n` new packets of `len` bytes after `headroom` bytes (which
/// must fit a standard buffer), in a recycled batch vector, with one visit
/// to the thread's pool. Fewer if the pool runs out.
#[inline]
pub(crate) fn alloc_batch(n: usize, headroom: usize, len: usize) -> crate::batch::BatchVec {
    // The packets' data must lie in their buffers (`Inner`'s invariant).
    assert!(headroom.checked_add(len).is_some_and(|n| n <= BUFFER_SIZE));
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

/// Up to `n` new packets each holding a copy of `data` after `headroom`
/// bytes (which with `data` must fit a standard buffer), timestamped
/// `ts`, with fresh annotations and header offsets otherwise: what
/// [`alloc_batch`] and a pass writing each packet's data and timestamp
/// give, in one pass over the buffers. Fewer if the pool runs out.
#[inline]
pub(crate) fn alloc_batch_copies(
    n: usize,
    headroom: usize,
    data: &[u8],
    ts: crate::Timestamp,
) -> crate::batch::BatchVec {
    // `Fill::packet` checks each buffer's range as it writes it.
    debug_assert!(headroom + data.len() <= BUFFER_SIZE);
    let fresh = || thin_vec::ThinVec::with_capacity(crate::batch::BATCH_CAPACITY.max(n));
    LOCAL
        .try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return fresh();
            };
            let l = &mut *l;
            let mut v = l.vecs.pop().unwrap_or_else(fresh);
            if v.capacity() - v.len() < n {
                v.reserve(n);
            }
            let fill = Fill::new(headroom, data, ts);
            match fill.halves() {
                // 32 to 64 bytes, as a generated packet usually is: two
                // fixed 32-byte moves from values held in registers,
                // instead of a `memcpy` call per packet.
                Some((head, tail)) => {
                    let len = data.len();
                    l.fill(&mut v, n, &fill, |d| {
                        d[..32].copy_from_slice(&head);
                        d[len - 32..].copy_from_slice(&tail);
                    })
                }
                None => l.fill(&mut v, n, &fill, |d| d.copy_from_slice(data)),
            }
            v
        })
        .unwrap_or_default()
}

/// What [`alloc_batch_copies`] writes into each buffer.
struct Fill<'a> {
    start: u32,
    end: u32,
    anno: Anno,
    data: &'a [u8],
}

impl<'a> Fill<'a> {
    #[inline(always)]
    fn new(headroom: usize, data: &'a [u8], ts: crate::Timestamp) -> Fill<'a> {
        let mut anno = Anno::new();
        anno.timestamp = ts;
        Fill {
            start: headroom as u32,
            end: (headroom + data.len()) as u32,
            anno,
            data,
        }
    }

    /// The data's first and last 32 bytes, if it is 32 to 64 bytes long.
    #[inline(always)]
    fn halves(&self) -> Option<([u8; 32], [u8; 32])> {
        let d = self.data;
        let n = d.len();
        if !(32..=64).contains(&n) {
            return None;
        }
        Some((d[..32].try_into().ok()?, d[n - 32..].try_into().ok()?))
    }

    /// Buffer `b` as a fresh packet, its data written by `copy`.
    #[inline(always)]
    fn packet(&self, mut b: Box<Inner>, copy: &impl Fn(&mut [u8])) -> crate::Packet {
        copy(&mut b.buf[self.start as usize..self.end as usize]);
        b.start = self.start;
        b.end = self.end;
        b.mac = -1;
        b.net = -1;
        b.trans = -1;
        b.anno = self.anno;
        crate::Packet::from_filled(b)
    }
}

/// Moves the buffers of `v`'s packets to the end of `to`, in order,
/// leaving `v` empty: one copy. Each must be a standard, unmarked buffer
/// (what a free list or a home's staging holds).
#[inline]
fn move_buffers(v: &mut crate::batch::BatchVec, to: &mut Vec<Box<Inner>>) {
    let n = v.len();
    let at = to.len();
    to.reserve(n);
    // SAFETY: `Packet` is `repr(transparent)` over
    // `ManuallyDrop<Box<Inner>>`, itself transparent over `Box<Inner>`, so
    // the `n` packets of `v` are `n` valid `Box<Inner>` values; `reserve`
    // made room for them past `to`'s end, and the two vectors do not
    // overlap. The buffers change owner exactly once: `v`'s length drops
    // to 0 (its packets are not dropped) as `to`'s grows by `n`.
    // (Measured: moving them one by one, or with `extend(drain)`, cost
    // more than the per-packet path.)
    unsafe {
        std::ptr::copy_nonoverlapping(v.as_ptr().cast::<Box<Inner>>(), to.as_mut_ptr().add(at), n);
        v.set_len(0);
        to.set_len(at + n);
    }
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
            // One pass of tests over the batch: if every buffer is a
            // standard, unmarked one of a single pool, the batch goes in
            // one copy onto this thread's free list (a source's batch
            // dropped on its own thread) or onto the staging for its home
            // (a batch that crossed threads, dropped at its sink);
            // otherwise each buffer goes its own way.
            // (A short batch is not worth the copy's call: per packet.)
            let home = match v.first() {
                Some(p) if v.len() >= 2 => p.inner().home,
                _ => 0,
            };
            let one_home = home != 0
                && home != EXTERNAL
                && v.iter().all(|p| {
                    let b = p.inner();
                    b.home == home && b.buf.len() == BUFFER_SIZE && b.trace == 0
                });
            if one_home && home == l.id && v.len() >= 8 {
                move_buffers(&mut v, &mut l.free);
            } else if one_home && home != l.id {
                match l.staged_for(home) {
                    Some(s) => {
                        move_buffers(&mut v, &mut s.bufs);
                        if s.bufs.len() >= REMOTE_BATCH {
                            send_home(s);
                        }
                    }
                    // No such pool: the buffers are deallocated.
                    None => v.clear(),
                }
            } else {
                while let Some(p) = v.pop() {
                    l.free(p.into_inner());
                }
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
        r.bufs.len() + r.gone
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
    fn a_prefetch_covers_each_line_of_the_value_once() {
        for offset in 0..128usize {
            for size in 0..300usize {
                let addr = 0x1000 + offset;
                let (first, n) = line_span(addr, size);
                let lines: Vec<usize> = (0..n)
                    .map(|i| addr.wrapping_add(first).wrapping_add(i * 64))
                    .collect();
                let want: Vec<usize> = (addr >> 6..=(addr + size.max(1) - 1) >> 6)
                    .map(|l| l << 6)
                    .collect();
                assert_eq!(lines, want, "{size} bytes at {addr:#x}");
            }
        }
    }

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

    /// The buffers at the top of this thread's free list, in the order
    /// `alloc` pops them.
    fn next_out(n: usize) -> Vec<usize> {
        LOCAL.with(|l| {
            let l = l.borrow();
            l.free
                .iter()
                .rev()
                .take(n)
                .map(|b| &**b as *const Inner as usize)
                .collect()
        })
    }

    /// Frees `n` buffers whose offsets and annotations a router changed.
    fn free_dirty(n: usize) {
        let dirty: Vec<Packet> = (0..n)
            .map(|i| {
                let mut p = Packet::new(100).unwrap();
                p.set_mac_header(0);
                p.set_network_header(14, 20);
                p.pull(3);
                let a = p.anno_mut();
                a.paint = 9;
                a.seq = 5;
                a.user[3] = 1;
                a.timestamp = crate::Timestamp(i as i64 + 1);
                p
            })
            .collect();
        drop(dirty);
    }

    /// Checks that `b` holds `n` fresh packets of `data` after `headroom`
    /// bytes, stamped `ts`.
    fn check_copies(
        b: &crate::Batch,
        n: usize,
        headroom: usize,
        data: &[u8],
        ts: crate::Timestamp,
    ) {
        assert_eq!(b.len(), n);
        for p in b.iter() {
            assert_eq!(p.data(), data);
            assert_eq!(p.headroom(), headroom);
            assert_eq!(p.timestamp(), ts);
            assert_eq!(p.mac_header_offset(), None);
            assert_eq!(p.network_header_offset(), None);
            assert_eq!(p.transport_header_offset(), None);
            let mut fresh = crate::Anno::new();
            fresh.timestamp = ts;
            assert_eq!(format!("{:?}", p.anno()), format!("{fresh:?}"));
            assert_eq!(p.trace(), 0);
        }
    }

    /// A batch of copies (a source's) is what `Batch::alloc` and a pass
    /// writing each packet's data and timestamp give: the buffers `alloc`
    /// would pop, in its order (the warmest first), the data, headroom and
    /// timestamp written and every other annotation and header offset
    /// fresh, whatever the data's length and wherever the buffers come
    /// from (the free list's top, buffers that came home from another
    /// thread, new ones; fewer at the pool's capacity).
    #[test]
    fn a_batch_of_copies_is_a_batch_allocated_then_written() {
        std::thread::spawn(|| {
            let ts = crate::Timestamp(1_234_567_890);
            for len in [
                0,
                1,
                16,
                31,
                32,
                33,
                60,
                63,
                64,
                65,
                200,
                BUFFER_SIZE - HEADROOM,
            ] {
                let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
                for headroom in [HEADROOM, 40] {
                    // The free list's top, none of it from another thread;
                    // then buffers that came home from another thread: the
                    // allocator's own path, prefetching them.
                    for remote in [false, true] {
                        free_dirty(40);
                        let want = next_out(32);
                        if remote {
                            LOCAL.with(|l| {
                                let mut l = l.borrow_mut();
                                l.remote = l.free.len();
                            });
                        }
                        let b = crate::Batch::alloc_copies(32, headroom, &data, ts);
                        check_copies(&b, 32, headroom, &data, ts);
                        let got: Vec<usize> = b
                            .iter()
                            .map(|p| p.inner() as *const Inner as usize)
                            .collect();
                        assert_eq!(
                            got, want,
                            "len {len}, remote {remote}: the buffers alloc pops, in its order"
                        );
                    }
                }
            }
            // More than the free list holds: new buffers after it.
            let free = local_stats().free;
            let b = crate::Batch::alloc_copies(free + 5, HEADROOM, &[7; 60], ts);
            check_copies(&b, free + 5, HEADROOM, &[7; 60], ts);
            drop(b);
            // Too big for a standard buffer: one large buffer each.
            let big = vec![3u8; BUFFER_SIZE];
            let b = crate::Batch::alloc_copies(2, HEADROOM, &big, ts);
            check_copies(&b, 2, HEADROOM, &big, ts);
        })
        .join()
        .unwrap();
        // At the pool's capacity: as many as there are buffers.
        std::thread::spawn(|| {
            set_default_capacity_for_test(4);
            let held = Packet::new(10).unwrap();
            let ts = crate::Timestamp(5);
            let b = crate::Batch::alloc_copies(8, HEADROOM, &[1; 40], ts);
            check_copies(&b, 3, HEADROOM, &[1; 40], ts);
            drop(held);
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

    /// Makes packets with `make` on a thread of their own (their home
    /// pool's), frees them with `free` on another thread, which then
    /// flushes its remote frees, and returns the home pool's statistics
    /// once they are back, every buffer accounted for.
    fn freed_elsewhere(
        make: impl FnOnce() -> Vec<Packet> + Send + 'static,
        free: impl FnOnce(Vec<Packet>) + Send + 'static,
    ) -> PoolStats {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Packet>>();
        let (back_tx, back_rx) = std::sync::mpsc::channel::<()>();
        let home = std::thread::spawn(move || {
            tx.send(make()).unwrap();
            back_rx.recv().unwrap();
            local_stats()
        });
        let ps = rx.recv().unwrap();
        std::thread::spawn(move || {
            free(ps);
            flush_remote();
        })
        .join()
        .unwrap();
        back_tx.send(()).unwrap();
        let s = home.join().unwrap();
        assert_eq!(outstanding(s.id), Some(0));
        s
    }

    #[test]
    fn remote_frees_come_home_in_batches() {
        let s = freed_elsewhere(
            || {
                let ps: Vec<_> = (0..100)
                    .map(|i| Packet::from_slice(&[i as u8]).unwrap())
                    .collect();
                assert_eq!(local_stats().in_use(), 100);
                ps
            },
            drop,
        );
        assert_eq!(s.in_use(), 0, "all 100 buffers came home");
    }

    #[test]
    fn a_dropped_batch_returns_each_buffer_to_its_own_pool_once() {
        use crate::batch::Batch;
        let home = freed_elsewhere(
            || (0..5).map(|_| Packet::new(60).unwrap()).collect(),
            |foreign| {
                drop(Batch::alloc(32, HEADROOM, 60));
                let s = local_stats();
                assert_eq!((s.created, s.free), (32, 32));
                // Batches of this pool's buffers only: every buffer back on
                // the free list exactly once, so none is ever created anew.
                for _ in 0..100 {
                    let b = Batch::alloc(32, HEADROOM, 60);
                    assert_eq!((b.len(), local_stats().free), (32, 0));
                    drop(b);
                    let s = local_stats();
                    assert_eq!((s.created, s.free), (32, 32));
                }
                // A batch mixing this pool's buffers with another's.
                let mut b = Batch::alloc(10, HEADROOM, 60);
                let mut mixed = Batch::new();
                mixed.append(&mut b);
                for (i, p) in foreign.into_iter().enumerate() {
                    if i % 2 == 0 {
                        mixed.vec_mut().insert(0, p);
                    } else {
                        mixed.push(p);
                    }
                }
                assert_eq!(mixed.len(), 15);
                drop(mixed);
                let s = local_stats();
                assert_eq!(
                    (s.created, s.free),
                    (32, 32),
                    "only this pool's 10 came back here"
                );
            },
        );
        assert_eq!(
            (home.created, home.free),
            (5, 5),
            "the 5 came home once each"
        );
    }

    #[test]
    fn a_batch_dropped_elsewhere_comes_home_whole_and_is_reused() {
        use crate::batch::Batch;
        // 70 buffers in batches of 32, 32 and 6, dropped on a thread that
        // has no pool of its own (a crossing queue's sink): each batch is
        // staged in one copy, and the home thread takes them all back at
        // once, onto its empty free list.
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Packet>>();
        let (back_tx, back_rx) = std::sync::mpsc::channel::<()>();
        let home = std::thread::spawn(move || {
            let ps: Vec<_> = (0..70).map(|_| Packet::new(60).unwrap()).collect();
            let s = local_stats();
            assert_eq!((s.created, s.free), (70, 0));
            tx.send(ps).unwrap();
            back_rx.recv().unwrap();
            let s = local_stats();
            assert_eq!((s.created, s.free), (70, 70), "all came home");
            assert_eq!(outstanding(s.id), Some(0));
            // Allocating them again makes no buffer anew.
            let again: Vec<_> = (0..70).map(|_| Packet::new(60).unwrap()).collect();
            let s = local_stats();
            assert_eq!((s.created, s.free), (70, 0));
            drop(again);
            local_stats()
        });
        let mut ps = rx.recv().unwrap();
        std::thread::spawn(move || {
            let home = ps[0].inner().home;
            for n in [32, 32, 6] {
                let rest = ps.split_off(n);
                drop(Batch::from(std::mem::replace(&mut ps, rest)));
                let staged = LOCAL.with(|l| {
                    let l = l.borrow();
                    let s = l.staged.iter().find(|s| s.home == home);
                    s.map_or(0, |s| s.bufs.len())
                });
                // Two full batches went home as they were dropped; the
                // last waits for the flush.
                assert_eq!(staged, if n == 6 { 6 } else { 0 });
            }
            assert_eq!(local_stats().created, 0, "no pool here");
            flush_remote();
        })
        .join()
        .unwrap();
        back_tx.send(()).unwrap();
        let s = home.join().unwrap();
        assert_eq!((s.created, s.free), (70, 70));
    }

    /// The home thread's free list is empty and some of its buffers came
    /// home: fewer than MIN_RETURNS, it makes a new buffer (they wait);
    /// from MIN_RETURNS on, it takes them all back.
    #[test]
    fn a_pool_takes_returned_buffers_back_in_large_hand_overs() {
        fn created_free() -> (usize, usize) {
            LOCAL.with(|l| {
                let l = l.borrow();
                (l.created, l.free.len())
            })
        }
        fn drop_elsewhere(ps: Vec<Packet>) {
            std::thread::spawn(move || {
                drop(ps);
                flush_remote();
            })
            .join()
            .unwrap();
        }
        std::thread::spawn(|| {
            let few = MIN_RETURNS / 2;
            let ps: Vec<_> = (0..few).map(|_| Packet::new(60).unwrap()).collect();
            assert_eq!(created_free(), (few, 0));
            drop_elsewhere(ps);
            let p = Packet::new(60).unwrap();
            assert_eq!(created_free(), (few + 1, 0), "grew: too few came home");
            drop(p);
            // Now MIN_RETURNS of them away and home again.
            let mut ps: Vec<_> = (0..MIN_RETURNS).map(|_| Packet::new(60).unwrap()).collect();
            let made = created_free().0;
            assert!(made >= MIN_RETURNS, "{made}");
            let keep = ps.split_off(MIN_RETURNS - 1);
            drop_elsewhere(ps);
            drop_elsewhere(keep);
            let p = Packet::new(60).unwrap();
            let (created, free) = created_free();
            assert_eq!(created, made, "no new buffer: the returns were taken");
            assert!(free >= MIN_RETURNS - 1, "{free}");
            drop(p);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn oversized_buffers_freed_elsewhere_are_counted_home() {
        // Large buffers go home too (to be released and uncounted there):
        // the pool's accounting closes.
        let s = freed_elsewhere(
            || {
                let mut ps: Vec<_> = (0..3).map(|_| Packet::new(60).unwrap()).collect();
                ps.extend((0..2).map(|_| Packet::make(HEADROOM, 4 * BUFFER_SIZE, 0).unwrap()));
                assert_eq!(local_stats().in_use(), 5);
                ps
            },
            drop,
        );
        assert_eq!(s.in_use(), 0);
        assert_eq!(s.free, 3, "only the standard buffers are kept");
    }

    /// A test owner of external buffers: `n` regions of 256 bytes, and
    /// the ones returned.
    struct TestOwner {
        mem: Mutex<Vec<u8>>,
        back: Mutex<Vec<ExtBuffer>>,
        batches: AtomicUsize,
    }

    impl BufferOwner for TestOwner {
        fn release(&self, bufs: &mut Vec<ExtBuffer>) {
            self.batches.fetch_add(1, Ordering::Relaxed);
            self.back.lock().unwrap().append(bufs);
        }
    }

    fn test_owner(n: usize) -> (Arc<TestOwner>, Vec<ExtBuffer>) {
        let o = Arc::new(TestOwner {
            mem: Mutex::new(vec![0u8; n * 256]),
            back: Mutex::new(Vec::new()),
            batches: AtomicUsize::new(0),
        });
        let base = o.mem.lock().unwrap().as_mut_ptr();
        let dyn_o: Arc<dyn BufferOwner> = o.clone();
        let bufs = (0..n)
            .map(|i| {
                // SAFETY: region i of the owner's memory, which it keeps
                // (never reallocated) while the handles hold it; each
                // region is lent once.
                unsafe {
                    ExtBuffer::new(NonNull::new(base.add(i * 256)).unwrap(), 256, dyn_o.clone())
                }
            })
            .collect();
        (o, bufs)
    }

    #[test]
    fn external_buffers_become_packets_and_come_back() {
        std::thread::spawn(|| {
            let (o, bufs) = test_owner(100);
            let base = o.mem.lock().unwrap().as_ptr();
            let mut ps: Vec<Packet> = bufs
                .into_iter()
                .enumerate()
                .map(|(i, b)| {
                    let mut p = b.into_packet(64, 60).ok().unwrap();
                    p.data_mut().fill(i as u8);
                    p
                })
                .collect();
            // No copy: the data are in the owner's memory.
            assert_eq!(ps[3].data().as_ptr(), base.wrapping_add(3 * 256 + 64));
            assert_eq!(ps[3].headroom(), 64);
            assert!(ps[3].buffer_owner().is_some());
            // A clone is a pooled copy, correct after the original goes.
            let c = ps[3].clone_packet().unwrap();
            assert!(c.buffer_owner().is_none());
            // Pushing beyond the headroom moves the packet to a pooled
            // buffer and gives the external one back.
            ps[4].push(100).unwrap();
            assert!(ps[4].buffer_owner().is_none());
            assert_eq!(&ps[4].data()[100..], &[4u8; 60]);
            // 50 freed here, 49 on another thread; one kept.
            let kept = ps.pop().unwrap();
            let other: Vec<Packet> = ps.split_off(50);
            drop(ps);
            let b = o.back.lock().unwrap().len();
            // 51 freed here (with the pushed one's): one batch of 32 is
            // back, 19 wait for the next batch or the thread's flush.
            assert_eq!(b, 32, "one batch back");
            std::thread::spawn(move || {
                let mut batch = crate::Batch::new();
                for p in other {
                    batch.push(p);
                }
                drop(batch);
                flush_remote();
            })
            .join()
            .unwrap();
            assert_eq!(o.back.lock().unwrap().len(), 32 + 49);
            flush_remote();
            assert_eq!(o.back.lock().unwrap().len(), 99);
            assert_eq!(c.data(), &[3u8; 60]);
            drop(kept);
            flush_remote();
            let back = std::mem::take(&mut *o.back.lock().unwrap());
            assert_eq!(back.len(), 100, "every buffer came back");
            let mut starts: Vec<usize> = back
                .iter()
                .map(|b| b.as_ptr() as usize - base as usize)
                .collect();
            starts.sort_unstable();
            assert_eq!(starts, (0..100).map(|i| i * 256).collect::<Vec<_>>());
            // Returned handles are packets again.
            let p = back
                .into_iter()
                .next()
                .unwrap()
                .into_packet(0, 256)
                .ok()
                .unwrap();
            assert_eq!(p.len(), 256);
            assert!(p.into_external().is_ok());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_buffer_handle_is_no_bigger_than_before_external_buffers() {
        // The storage handle is a pointer and a length, as the Box<[u8]>
        // it replaced; the owner adds 16 bytes: two cache lines in all.
        assert_eq!(std::mem::size_of::<Buf>(), std::mem::size_of::<Box<[u8]>>());
        assert!(
            std::mem::size_of::<Inner>() <= 128,
            "{}",
            std::mem::size_of::<Inner>()
        );
    }

    #[test]
    fn a_buffer_header_is_two_aligned_lines_with_the_hot_fields_in_the_first() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Inner>(), 64);
        assert_eq!(size_of::<Inner>(), 128);
        // What freeing and length reads: the first line.
        for end in [
            offset_of!(Inner, end) + 4,
            offset_of!(Inner, home) + 4,
            offset_of!(Inner, trace) + 4,
            offset_of!(Inner, buf) + size_of::<Buf>(),
            offset_of!(Inner, owner) + 16,
        ] {
            assert!(end <= 64, "a hot field ends at byte {end}");
        }
        assert_eq!(offset_of!(Inner, anno), 64);
        // And a box of one is aligned (the pool's allocation honours it).
        let b = Inner::new(1, 64);
        assert_eq!(&*b as *const Inner as usize % 64, 0);
    }

    #[test]
    fn external_buffers_outliving_the_pool_go_back() {
        let (o, bufs) = test_owner(2);
        let p = std::thread::spawn(move || {
            let mut v: Vec<Packet> = bufs
                .into_iter()
                .map(|b| b.into_packet(0, 10).ok().unwrap())
                .collect();
            v.pop().unwrap()
        })
        .join()
        .unwrap();
        // The other one went back when the thread's pool ended.
        assert_eq!(o.back.lock().unwrap().len(), 1);
        // A range beyond the buffer is refused.
        let b = std::mem::take(&mut *o.back.lock().unwrap()).pop().unwrap();
        assert!(b.into_packet(200, 57).is_err());
        drop(p);
        flush_remote();
        assert_eq!(o.back.lock().unwrap().len(), 1);
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
