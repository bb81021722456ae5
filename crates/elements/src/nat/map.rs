// The NAT flow table's concurrent map: flow key -> value (the table's
// entry; the map is generic over it, so it knows nothing of the table), with
// lock-free reads, and a batched lookup whose cache misses overlap.
//
// Layout. The map is split into SHARDS by the key hash's top bits; each
// shard is an array of 64-byte buckets (a power of two of them), each
// bucket seven slots and an overflow count. A slot holds a pointer to an
// entry (key and value: 48 bytes with the NAT table's `V`) with a 16-bit
// signature of the key's hash in its unused top bits, so a lookup reads
// one bucket line, compares signatures, and follows only the pointer
// whose signature matches (a false match costs one more line, 1 in 65,536
// per occupied slot). A key lives in its home bucket (hash's low bits) or,
// when that is full, in the first bucket after it with a free slot; each
// bucket from the home to the one before the key's counts it in its
// overflow count, so a lookup goes on to the next bucket only while that
// count is not zero (no tombstones, nothing ever moves).
//
// Concurrency. Readers take no lock: a slot and an overflow count are one
// atomic word each, read with acquire (a `seize` protected load for
// slots). Writers (insert, remove, growth) take their shard's mutex, so
// the two threads of a router rarely meet (64 shards). An insert bumps the
// overflow counts it passes before it publishes the slot (release); a
// remove clears the slot, then lowers the counts. A reader racing a writer
// may miss an entry being inserted or see one being removed (as with any
// concurrent map; the caller creates under the shard lock, which finds
// the other thread's entry); an entry inserted before the reader started
// (happens-before, e.g. the packet that created the reverse mapping on
// another thread) is always found. Growth (x2 at 3/4 full) builds a new
// bucket array from the entries (pointers: entries do not move), publishes
// it, and retires the old array; readers still in the old one see a frozen
// but complete copy. Removed entries and old arrays are freed by `seize`
// once no guard that could have read them is active.
//
// Batched lookup (`get_run`): for a table bigger than the caches, stage 1
// hashes every key and prefetches its bucket, stage 2 reads each bucket,
// compares signatures and prefetches the matching entry (for writing: the
// packet updates its time there), stage 3 compares full keys. A run of 32
// packets thus has up to 32 misses in flight per stage instead of two
// dependent misses per packet. A small table skips the stages.

use super::flow::{FlowHasher, FlowKey};
use crossbeam_utils::CachePadded;
use std::hash::BuildHasher;
use std::sync::atomic::Ordering;
pub use sync::Guard;
use sync::{AtomicPtr, AtomicUsize, Collector, Mutex, MutexGuard};

/// The atomics, locks and reclamation the map uses: std's and `seize`'s
/// normally; under loom (`RUSTFLAGS="--cfg loom"`, see `loom_tests`)
/// loom's atomics and mutexes, and a collector that frees retired objects
/// only when the map is dropped (seize's per-thread state is not loom's).
mod sync {
    #[cfg(loom)]
    pub(super) use loom::sync::atomic::{AtomicPtr, AtomicUsize};
    #[cfg(loom)]
    pub(super) use loom::sync::{Mutex, MutexGuard};
    #[cfg(not(loom))]
    pub(super) use seize::Collector;
    #[cfg(not(loom))]
    pub(super) use std::sync::atomic::{AtomicPtr, AtomicUsize};
    #[cfg(not(loom))]
    pub(super) use std::sync::{Mutex, MutexGuard};

    /// A guard for a run of lookups: entries found stay valid while it
    /// lives.
    #[cfg(not(loom))]
    pub type Guard<'a> = seize::LocalGuard<'a>;

    #[cfg(loom)]
    pub struct Guard<'a>(&'a Collector);

    /// Retired objects, freed when the map drops.
    #[cfg(loom)]
    #[derive(Default)]
    pub struct Collector(std::sync::Mutex<Vec<Retired>>);

    /// A retired object and its reclaimer.
    #[cfg(loom)]
    pub struct Retired(*mut (), unsafe fn(*mut (), &Collector));

    // SAFETY: a retired object is only freed, by whichever thread drops
    // the map; the objects (entries, bucket arrays) are Send.
    #[cfg(loom)]
    unsafe impl Send for Retired {}

    #[cfg(loom)]
    impl Collector {
        pub(super) fn new() -> Collector {
            Collector::default()
        }
        pub(super) fn enter(&self) -> Guard<'_> {
            Guard(self)
        }
    }

    #[cfg(loom)]
    impl Drop for Collector {
        fn drop(&mut self) {
            let v = std::mem::take(self.0.get_mut().unwrap_or_else(|e| e.into_inner()));
            for Retired(p, f) in v {
                // SAFETY: retired by `defer_retire`, whose caller promised
                // `f` may free `p` once no thread reads it: the map is
                // being dropped.
                unsafe { f(p, self) };
            }
        }
    }

    /// Loads a slot or table word for reading what it points to.
    #[inline(always)]
    pub(super) fn protect<T>(g: &Guard<'_>, p: &AtomicPtr<T>) -> *mut T {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            g.protect(p, Ordering::Acquire)
        }
        #[cfg(loom)]
        {
            let _ = g;
            p.load(Ordering::Acquire)
        }
    }

    /// Frees `p` with `f` once no guard that could have read it is active.
    ///
    /// # Safety
    /// `p` is unreachable for threads entering from now on, and `f` may
    /// free it then.
    #[inline]
    pub(super) unsafe fn defer_retire<T>(
        g: &Guard<'_>,
        p: *mut T,
        f: unsafe fn(*mut T, &Collector),
    ) {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            // SAFETY: the caller's contract is seize's.
            unsafe { g.defer_retire(p, f) }
        }
        #[cfg(loom)]
        {
            // SAFETY (of the later call): the same function, its pointer
            // argument type erased.
            let f: unsafe fn(*mut (), &Collector) = unsafe { std::mem::transmute(f) };
            g.0 .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Retired(p.cast(), f));
        }
    }

    /// Whether `g` is a guard of collector `c`.
    pub(super) fn guards(g: &Guard<'_>, c: &Collector) -> bool {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            std::ptr::eq(g.collector(), c)
        }
        #[cfg(loom)]
        std::ptr::eq(g.0, c)
    }

    use std::sync::atomic::Ordering;
}

#[cfg(not(loom))]
const SHARD_BITS: u32 = 6;
/// Under loom, few and small shards, so that models reach growth and
/// overflow in few steps.
#[cfg(loom)]
const SHARD_BITS: u32 = 1;
const SHARDS: usize = 1 << SHARD_BITS;
/// Entry slots per bucket (the eighth word is the overflow count).
const SLOTS: usize = 7;
/// Buckets per shard at first.
#[cfg(not(loom))]
const MIN_BUCKETS: usize = 4;
#[cfg(loom)]
const MIN_BUCKETS: usize = 2;
/// Buckets per shard from which batched lookups go in stages: shards grow
/// to 64 buckets past ~5,400 flows (10,800 entries: 700 KiB of entries and
/// 256 KiB of buckets, about the second-level cache measured on). Measured
/// (cycles per packet, papaya's table alike at each size): staging at 8
/// buckets cost ~15 at 1,000 flows, where everything is in the caches;
/// staging only from 512 lost 10% at 30,000 flows.
const PREFETCH_BUCKETS: usize = 64;
/// The most keys one batched lookup takes.
pub const RUN: usize = 32;

/// One table entry: a key and what it maps to (48 bytes, so an ordinary
/// 64-byte allocation: aligned to a line, the allocator's aligned path
/// took ~60% more memory at a million flows). About half of them straddle
/// two lines (the key on one, the time and rewrite on the next). Measured
/// and not kept: per-shard slabs of line-aligned 64-byte slots (reused
/// after seize frees them) halved the steady-state misses callgrind counts
/// at 10,000 flows with a 1 MiB L2 simulated (1.80 -> 0.80 per packet) but
/// not the cycles from 1,000 to 30,000 flows (-j1 medians of 18-22
/// alternated runs, c/p: 10,000 flows 152 -> 156), and at a million flows
/// cost 151 -> 188 (a run's entries no longer lie in creation order, as
/// the benchmark visits them, but spread over 64 shards' blocks).
pub struct Entry<V> {
    pub key: FlowKey,
    pub val: V,
}

#[repr(C, align(64))]
struct Bucket<V> {
    slots: [AtomicPtr<Entry<V>>; SLOTS],
    /// Entries whose home is this bucket or one before it that lie past it.
    over: AtomicUsize,
}

/// A shard's bucket array as readers see it.
struct Buckets<'g, V> {
    mask: usize,
    b: &'g [Bucket<V>],
}

// Copied whatever `V` is (a derive would ask `V: Copy`).
impl<V> Clone for Buckets<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Buckets<'_, V> {}

/// A new array of `n` (a power of two) empty buckets, as a shard's table
/// word: the array's address (64-byte aligned) with log2(n) in its low
/// six bits, so a lookup finds array and size in one load.
fn new_buckets<V>(n: usize) -> *mut Bucket<V> {
    debug_assert!(n.is_power_of_two());
    let b: Box<[Bucket<V>]> = (0..n)
        .map(|_| Bucket {
            slots: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            over: AtomicUsize::new(0),
        })
        .collect();
    (Box::into_raw(b) as *mut Bucket<V>).map_addr(|a| a | n.trailing_zeros() as usize)
}

/// The array of a table word.
///
/// # Safety
/// `p` came from [`new_buckets`] and its array is alive for `'g`.
#[inline(always)]
unsafe fn buckets<'g, V>(p: *mut Bucket<V>) -> Buckets<'g, V> {
    let n = 1usize << (p.addr() & 63);
    Buckets {
        mask: n - 1,
        // SAFETY: per the contract, `n` buckets at the untagged address.
        b: unsafe { std::slice::from_raw_parts(p.map_addr(|a| a & !63), n) },
    }
}

/// Frees a table word's array (the collector's reclaimer).
///
/// # Safety
/// `p` came from [`new_buckets`], and nothing reads its array any more.
unsafe fn free_buckets<V>(p: *mut Bucket<V>, _: &Collector) {
    let n = 1usize << (p.addr() & 63);
    let b = std::ptr::slice_from_raw_parts_mut(p.map_addr(|a| a & !63), n);
    // SAFETY: per the contract; the array was a `Box<[Bucket<V>]>` of `n`.
    drop(unsafe { Box::from_raw(b) });
}

/// Frees a removed entry (the collector's reclaimer).
///
/// # Safety
/// `e` came from `Box::into_raw`, and nothing reads it any more.
unsafe fn free_entry<V>(e: *mut Entry<V>, _: &Collector) {
    // SAFETY: per the contract.
    drop(unsafe { Box::from_raw(e) });
}

/// A shard's writers' side.
struct Writer {
    /// Entries in the shard (written under `lock`).
    len: AtomicUsize,
    lock: Mutex<()>,
}

pub struct FlowMap<V: Send + Sync> {
    hasher: FlowHasher,
    /// Each shard's table word (see [`new_buckets`]); packed, 8 per line:
    /// written only when a shard grows.
    tables: Box<[AtomicPtr<Bucket<V>>]>,
    writers: Box<[CachePadded<Writer>]>,
    collector: Collector,
}

// Slot words: an entry pointer (8-byte aligned, so bit 0 is free) with,
// when its address fits in 48 bits (always, for user space on x86-64 and
// AArch64 Linux), the signature in bits 48-63 and bit 0 set; otherwise the
// bare pointer, which matches any signature.
#[cfg(not(target_pointer_width = "64"))]
compile_error!("the NAT flow map keeps signatures in pointers' top 16 bits (64-bit targets)");
const ADDR_BITS: u32 = 48;

#[inline(always)]
fn sig(h: u64) -> usize {
    (h >> 32) as usize & 0xffff
}

#[inline(always)]
fn tagged<V>(e: *mut Entry<V>, sig: usize) -> *mut Entry<V> {
    if e.addr() >> ADDR_BITS == 0 {
        return e.map_addr(|a| a | sig << ADDR_BITS | 1);
    }
    e
}

/// Bucket `b`'s slot words and the mask of those whose entry may have
/// signature `sig`, computed without branches (the batched lookup's second
/// stage, on a prefetched bucket). The one-key probe uses [`candidate`]
/// and stops at the first match instead: measured, that was cheaper by
/// 25-40 cycles per packet from 1,000 to 30,000 flows (the predicted
/// branch lets the entry load start before all seven slots are compared).
#[inline(always)]
fn matches<V>(b: &Bucket<V>, sig: usize, g: &Guard<'_>) -> ([*mut Entry<V>; SLOTS], u32) {
    let mut words = [std::ptr::null_mut(); SLOTS];
    let mut m = 0u32;
    let want = sig << ADDR_BITS | 1;
    let keep = usize::MAX << ADDR_BITS | 1;
    for (k, slot) in b.slots.iter().enumerate() {
        let p = sync::protect(g, slot);
        words[k] = p;
        let a = p.addr();
        // Tagged with `sig`, or an untagged (bit 0 clear) entry.
        let hit = ((a & keep) == want) | ((a & 1 == 0) & (a != 0));
        m |= u32::from(hit) << k;
    }
    (words, m)
}

/// The entry of slot word `p` if its signature may be `sig`.
#[inline(always)]
fn candidate<V>(p: *mut Entry<V>, sig: usize) -> Option<*mut Entry<V>> {
    let a = p.addr();
    if a & 1 == 0 {
        return (!p.is_null()).then_some(p);
    }
    (a >> ADDR_BITS == sig).then(|| p.map_addr(|a| a & ((1 << ADDR_BITS) - 2)))
}

/// The entry of a non-empty slot word.
#[inline(always)]
fn untag<V>(p: *mut Entry<V>) -> *mut Entry<V> {
    if p.addr() & 1 != 0 {
        return p.map_addr(|a| a & ((1 << ADDR_BITS) - 2));
    }
    p
}

#[inline(always)]
fn prefetch_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache: it reads nothing
    // architecturally and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl<V: Send + Sync> Default for FlowMap<V> {
    fn default() -> Self {
        FlowMap::new()
    }
}

impl<V: Send + Sync> FlowMap<V> {
    pub fn new() -> FlowMap<V> {
        FlowMap {
            #[cfg(not(loom))]
            hasher: FlowHasher::new(),
            #[cfg(loom)]
            hasher: FlowHasher::with_seed(0x1005),
            tables: (0..SHARDS)
                .map(|_| AtomicPtr::new(new_buckets(MIN_BUCKETS)))
                .collect(),
            writers: (0..SHARDS)
                .map(|_| {
                    CachePadded::new(Writer {
                        len: AtomicUsize::new(0),
                        lock: Mutex::new(()),
                    })
                })
                .collect(),
            collector: Collector::new(),
        }
    }

    #[inline]
    pub fn guard(&self) -> Guard<'_> {
        self.collector.enter()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries in the map.
    pub fn len(&self) -> usize {
        self.writers
            .iter()
            .map(|w| w.len.load(Ordering::Relaxed))
            .sum()
    }

    #[inline(always)]
    fn hash(&self, k: &FlowKey) -> u64 {
        self.hasher.hash_one(k)
    }

    #[inline(always)]
    fn shard(h: u64) -> usize {
        (h >> (64 - SHARD_BITS)) as usize
    }

    /// Shard `s`'s current bucket array.
    #[inline(always)]
    fn table<'g>(&'g self, s: usize, g: &'g Guard<'_>) -> Buckets<'g, V> {
        self.check(g);
        // SAFETY: a table word always holds an array from `new_buckets`;
        // one replaced by growth is retired through the collector after
        // it is unlinked, so it lives as long as `g`.
        unsafe { buckets(sync::protect(g, &self.tables[s])) }
    }

    /// A guard of another map would not keep this map's entries alive:
    /// the safe API would then hand out freed memory, so this is checked
    /// in release builds too (a pointer compare per lookup).
    #[inline(always)]
    fn check(&self, g: &Guard<'_>) {
        assert!(
            sync::guards(g, &self.collector),
            "a guard of another flow map"
        );
    }

    /// Looks `key` (hash `h`) up from bucket `i` of `t`.
    #[inline(always)]
    fn probe<'g>(
        &'g self,
        t: Buckets<'g, V>,
        mut i: usize,
        h: u64,
        key: &FlowKey,
        g: &'g Guard<'_>,
    ) -> Option<&'g Entry<V>> {
        let s = sig(h);
        loop {
            let b = &t.b[i];
            for slot in &b.slots {
                let p = sync::protect(g, slot);
                if let Some(e) = candidate(p, s) {
                    // SAFETY: a slot holds a live entry or null; a removed
                    // entry is retired through the collector after its
                    // slot is cleared, so it lives as long as `g`.
                    let e = unsafe { &*e };
                    if e.key == *key {
                        return Some(e);
                    }
                }
            }
            if b.over.load(Ordering::Acquire) == 0 {
                return None;
            }
            i = (i + 1) & t.mask;
        }
    }

    /// The entry under `key`.
    #[inline]
    pub fn get<'g>(&'g self, key: &FlowKey, g: &'g Guard<'_>) -> Option<&'g V> {
        let h = self.hash(key);
        let t = self.table(Self::shard(h), g);
        self.probe(t, h as usize & t.mask, h, key, g)
            .map(|e| &e.val)
    }

    /// Whether the table is past the caches (batched lookups prefetch).
    #[inline]
    pub fn big(&self, g: &Guard<'_>) -> bool {
        self.table(0, g).b.len() >= PREFETCH_BUCKETS
    }

    /// Looks up `key(i)` for every `i` below `out.len()` (at most [`RUN`];
    /// `None`: nothing to look up) into `out[i]`: when the table is big,
    /// in three passes that prefetch (see the file's head). The keys come
    /// from a function, called once or twice per key, rather than an
    /// array: building an array of small padded keys cost more than the
    /// lookups at 1,000 flows (stores forwarded to loads of other sizes).
    #[inline]
    pub fn get_run<'g>(
        &'g self,
        key: impl Fn(usize) -> Option<FlowKey>,
        out: &mut [Option<&'g V>],
        g: &'g Guard<'_>,
    ) {
        self.get_run_staged(key, out, self.big(g), g)
    }

    /// [`FlowMap::get_run`], in stages if `staged`.
    #[inline(always)]
    fn get_run_staged<'g>(
        &'g self,
        key: impl Fn(usize) -> Option<FlowKey>,
        out: &mut [Option<&'g V>],
        staged: bool,
        g: &'g Guard<'_>,
    ) {
        let n = out.len().min(RUN);
        if !staged {
            for (i, o) in out[..n].iter_mut().enumerate() {
                *o = key(i).and_then(|k| self.get(&k, g));
            }
            return;
        }
        // Stage 1: hash, find the home bucket, prefetch it.
        let mut hs = [0u64; RUN];
        let mut ts: [Option<Buckets<'g, V>>; RUN] = [None; RUN];
        for i in 0..n {
            if let Some(k) = key(i) {
                let h = self.hash(&k);
                let t = self.table(Self::shard(h), g);
                prefetch_read(&t.b[h as usize & t.mask]);
                hs[i] = h;
                ts[i] = Some(t);
            }
        }
        // Stage 2: the first slot whose signature matches; prefetch its
        // entry. `None` in `ts` after this: settled (no candidate, no
        // overflow: absent).
        let mut cand: [*mut Entry<V>; RUN] = [std::ptr::null_mut(); RUN];
        for i in 0..n {
            let Some(t) = ts[i] else { continue };
            let h = hs[i];
            let b = &t.b[h as usize & t.mask];
            let (words, m) = matches(b, sig(h), g);
            let c = (m != 0).then(|| untag(words[m.trailing_zeros() as usize]));
            match c {
                Some(e) => {
                    paraclick_packet::pool::prefetch_write(
                        // SAFETY: as in `probe`: a slot's entry lives as
                        // long as `g`.
                        unsafe { &*e },
                    );
                    cand[i] = e;
                }
                None if b.over.load(Ordering::Acquire) == 0 => ts[i] = None,
                None => {}
            }
        }
        // Stage 3: compare keys; anything else takes the whole probe.
        for i in 0..n {
            out[i] = None;
            let (Some(t), Some(k)) = (ts[i], key(i)) else {
                continue;
            };
            if !cand[i].is_null() {
                // SAFETY: as in `probe`.
                let e = unsafe { &*cand[i] };
                if e.key == k {
                    out[i] = Some(&e.val);
                    continue;
                }
            }
            let h = hs[i];
            out[i] = self.probe(t, h as usize & t.mask, h, &k, g).map(|e| &e.val);
        }
    }

    #[inline]
    fn lock(&self, s: usize) -> MutexGuard<'_, ()> {
        // A panic under the lock leaves the shard consistent (each step
        // is one store), so a poisoned lock is taken as it is.
        self.writers[s]
            .lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Inserts `key -> val` unless `key` is there: `Ok(new entry)`, or
    /// `Err(the entry there)`.
    pub fn try_insert<'g>(
        &'g self,
        key: FlowKey,
        val: V,
        g: &'g Guard<'_>,
    ) -> Result<&'g V, &'g V> {
        let h = self.hash(&key);
        let s = Self::shard(h);
        let _w = self.lock(s);
        let mut t = self.table(s, g);
        if let Some(e) = self.probe(t, h as usize & t.mask, h, &key, g) {
            return Err(&e.val);
        }
        let w = &self.writers[s];
        let len = w.len.load(Ordering::Relaxed) + 1;
        if len * 4 > t.b.len() * SLOTS * 3 {
            t = self.grow(s, t, g);
        }
        let e = Box::into_raw(Box::new(Entry { key, val }));
        // SAFETY: `t` is the shard's current array and we hold its lock.
        unsafe { place(t, e, h) };
        w.len.store(len, Ordering::Relaxed);
        // SAFETY: just published; removal retires it through the collector,
        // so it lives as long as `g`.
        Ok(unsafe { &(*e).val })
    }

    /// Doubles shard `s`'s array `t` (its lock held); returns the new one.
    fn grow<'g>(&'g self, s: usize, t: Buckets<'g, V>, g: &'g Guard<'_>) -> Buckets<'g, V> {
        let newp = new_buckets(t.b.len() * 2);
        // SAFETY: just made; retired only after a later growth unlinks it,
        // so it lives as long as `g`.
        let new = unsafe { buckets(newp) };
        for b in t.b.iter() {
            for slot in &b.slots {
                let p = slot.load(Ordering::Relaxed);
                if !p.is_null() {
                    let e = untag(p);
                    // SAFETY: `new` is not shared yet; `e` is a live entry
                    // (its removal would need the lock we hold).
                    unsafe { place(new, e, self.hash(&(*e).key)) };
                }
            }
        }
        let old = self.tables[s].swap(newp, Ordering::AcqRel);
        // SAFETY: `old` is unlinked (no thread that enters from now on can
        // reach it) and came from `new_buckets`; its entries now live in
        // `new` and are not owned by it.
        unsafe { sync::defer_retire(g, old, free_buckets) };
        new
    }

    /// Removes the entry under `key` if `pred` holds for it; whether it did.
    pub fn remove_if(&self, key: &FlowKey, pred: impl FnOnce(&V) -> bool, g: &Guard<'_>) -> bool {
        let h = self.hash(key);
        let s = Self::shard(h);
        let _w = self.lock(s);
        let t = self.table(s, g);
        let home = h as usize & t.mask;
        let mut i = home;
        loop {
            let b = &t.b[i];
            for slot in &b.slots {
                let p = slot.load(Ordering::Relaxed);
                if p.is_null() {
                    continue;
                }
                let e = untag(p);
                // SAFETY: live (removal needs the lock we hold).
                let er = unsafe { &*e };
                if er.key != *key {
                    continue;
                }
                if !pred(&er.val) {
                    return false;
                }
                slot.store(std::ptr::null_mut(), Ordering::Release);
                let mut j = home;
                while j != i {
                    let o = &t.b[j].over;
                    o.store(o.load(Ordering::Relaxed) - 1, Ordering::Release);
                    j = (j + 1) & t.mask;
                }
                let w = &self.writers[s];
                w.len
                    .store(w.len.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
                // SAFETY: unlinked from the current array (older arrays
                // were unlinked before and are only read by guards older
                // than this retirement); allocated by `Box::new`.
                unsafe { sync::defer_retire(g, e, free_entry) };
                return true;
            }
            if b.over.load(Ordering::Relaxed) == 0 {
                return false;
            }
            i = (i + 1) & t.mask;
        }
    }

    /// Every entry (a weakly consistent view: entries inserted or removed
    /// meanwhile may or may not be seen).
    pub fn iter<'g>(&'g self, g: &'g Guard<'_>) -> impl Iterator<Item = (&'g FlowKey, &'g V)> {
        (0..SHARDS).flat_map(move |s| {
            self.table(s, g)
                .b
                .iter()
                .flat_map(|b| b.slots.iter())
                .filter_map(move |slot| {
                    let p = sync::protect(g, slot);
                    // SAFETY: as in `probe`.
                    (!p.is_null()).then(|| unsafe { &*untag(p) })
                })
                .map(|e| (&e.key, &e.val))
        })
    }
}

/// Puts entry `e` (hash `h`) in array `t`: in its home bucket or the first
/// after it with a free slot, counting it in the overflow of those passed.
///
/// # Safety
/// The caller holds the lock of `t`'s shard, or `t` is not shared yet; `e`
/// is a live entry not in `t`.
unsafe fn place<V>(t: Buckets<'_, V>, e: *mut Entry<V>, h: u64) {
    let home = h as usize & t.mask;
    let mut i = home;
    loop {
        if let Some(slot) = t.b[i]
            .slots
            .iter()
            .find(|s| s.load(Ordering::Relaxed).is_null())
        {
            let mut j = home;
            while j != i {
                let o = &t.b[j].over;
                o.store(o.load(Ordering::Relaxed) + 1, Ordering::Release);
                j = (j + 1) & t.mask;
            }
            slot.store(tagged(e, sig(h)), Ordering::Release);
            return;
        }
        // Growth keeps the array at most 3/4 full: a free slot exists.
        i = (i + 1) & t.mask;
    }
}

impl<V: Send + Sync> Drop for FlowMap<V> {
    fn drop(&mut self) {
        for t in self.tables.iter_mut() {
            let t = t.load(Ordering::Relaxed);
            // SAFETY: `&mut self`: no guard of this map is active; the
            // current arrays and the entries in them are owned by the map
            // (retired ones are the collector's, freed when it drops).
            let tb = unsafe { buckets(t) };
            for b in tb.b {
                for slot in &b.slots {
                    let p = slot.load(Ordering::Relaxed);
                    if !p.is_null() {
                        // SAFETY: as above; each entry is in one slot.
                        drop(unsafe { Box::from_raw(untag(p)) });
                    }
                }
            }
            // SAFETY: as above; the array is no longer read.
            unsafe { free_buckets(t, &self.collector) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::nat::flow::FlowId;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A value that tells which key it was made for (mod 2^16).
    struct Val(u16);
    impl Val {
        fn out(&self) -> usize {
            usize::from(self.0)
        }
    }

    fn key(n: u32) -> FlowKey {
        FlowKey {
            id: FlowId {
                saddr: 0x0a00_0000 | n >> 16,
                daddr: 0xc633_6407,
                sport: n as u16,
                dport: 53,
            },
            proto: 17,
        }
    }

    /// An entry whose `out` tells which key it was made for (mod 2^16).
    fn val(n: u32) -> Val {
        Val(n as u16)
    }

    #[test]
    fn insert_find_remove_grow() {
        let m = FlowMap::new();
        let g = m.guard();
        for n in 0..20_000 {
            assert!(m.try_insert(key(n), val(n), &g).is_ok());
        }
        // A second insert returns the entry there.
        assert_eq!(
            m.try_insert(key(7), val(9), &g).err().map(|r| r.out()),
            Some(7)
        );
        assert_eq!(m.len(), 20_000);
        for n in 0..20_000 {
            assert_eq!(
                m.get(&key(n), &g).map(|r| r.out()),
                Some(n as usize & 0xffff)
            );
        }
        assert!(m.get(&key(20_000), &g).is_none());
        // Batched, both ways, with keys missing and absent.
        for staged in [false, true] {
            let mut out = [None; RUN];
            let ask = |i: usize| (!i.is_multiple_of(5)).then(|| key(19_990 + i as u32));
            m.get_run_staged(ask, &mut out, staged, &g);
            for (i, o) in out.iter().enumerate() {
                let want = (!i.is_multiple_of(5) && 19_990 + i < 20_000).then_some(19_990 + i);
                assert_eq!(o.map(|r| r.out()), want, "staged {staged}, key {i}");
            }
        }
        // Removing every other key keeps the rest findable (the overflow
        // counts stay right).
        for n in (0..20_000).step_by(2) {
            assert!(!m.remove_if(&key(n), |_| false, &g));
            assert!(m.remove_if(&key(n), |_| true, &g));
        }
        assert!(!m.remove_if(&key(0), |_| true, &g));
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.iter(&g).count(), 10_000);
        for n in 0..20_000 {
            assert_eq!(
                m.get(&key(n), &g).is_some(),
                !n.is_multiple_of(2),
                "key {n}"
            );
        }
        let over: usize = (0..SHARDS)
            .map(|s| {
                m.table(s, &g)
                    .b
                    .iter()
                    .map(|b| b.over.load(Ordering::Relaxed))
                    .sum::<usize>()
            })
            .sum();
        for n in (1..20_000).step_by(2) {
            assert!(m.remove_if(&key(n), |_| true, &g));
        }
        assert!(over > 0, "the test should have overflowing buckets");
        for s in 0..SHARDS {
            for b in m.table(s, &g).b {
                assert_eq!(b.over.load(Ordering::Relaxed), 0);
            }
        }
        assert_eq!(m.len(), 0);
    }

    /// Writers insert and remove (growing shards) while readers look up
    /// keys inserted before they started: those must always be found,
    /// with their own values, through `get` and both kinds of runs.
    #[test]
    fn concurrent_churn_never_loses_a_stable_key() {
        let m = Arc::new(FlowMap::new());
        const STABLE: u32 = 5_000;
        {
            let g = m.guard();
            for n in 0..STABLE {
                assert!(m.try_insert(key(n), val(n), &g).is_ok());
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let m = m.clone();
                std::thread::spawn(move || {
                    let base = 100_000 + w * 200_000;
                    for round in 0..4u32 {
                        let g = m.guard();
                        let lo = base + round * 20_000;
                        for n in lo..lo + 40_000 {
                            assert!(m.try_insert(key(n), val(n), &g).is_ok());
                        }
                        for n in lo..lo + 40_000 {
                            assert!(m.get(&key(n), &g).is_some());
                            assert!(m.remove_if(&key(n), |_| true, &g));
                        }
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2u32)
            .map(|r| {
                let m = m.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut i = r * 17;
                    let mut passes = 0u64;
                    while !stop.load(Ordering::Relaxed) || passes < 3 {
                        let g = m.guard();
                        for _ in 0..100 {
                            i = (i + 7919) % STABLE;
                            let k = key(i);
                            assert_eq!(m.get(&k, &g).map(|v| v.out()), Some(i as usize));
                            for staged in [false, true] {
                                let mut out = [None; RUN];
                                let base = i;
                                m.get_run_staged(
                                    |j| Some(key((base + j as u32) % STABLE)),
                                    &mut out,
                                    staged,
                                    &g,
                                );
                                for (j, o) in out.iter().enumerate() {
                                    let n = (base + j as u32) % STABLE;
                                    assert_eq!(o.map(|v| v.out()), Some(n as usize));
                                }
                            }
                        }
                        passes += 1;
                    }
                    passes
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() >= 3);
        }
        let g = m.guard();
        assert_eq!(m.len(), STABLE as usize);
        assert_eq!(m.iter(&g).count(), STABLE as usize);
    }
}

/// Model checks of the map's protocol under loom: every interleaving of a
/// writer's steps with a reader's, with loom's weak-memory outcomes for
/// each atomic access (reclamation is not modelled: under loom retired
/// objects are freed when the map drops). Run:
/// `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom
/// cargo test --release -p paraclick-elements --lib nat::map::loom_tests`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::nat::flow::FlowId;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    use loom::thread;

    /// A value that tells which key it was made for (mod 2^16).
    struct Val(u16);
    impl Val {
        fn out(&self) -> usize {
            usize::from(self.0)
        }
    }

    fn key(n: u32) -> FlowKey {
        FlowKey {
            id: FlowId {
                saddr: 0x0a00_0001,
                daddr: 0xc633_6407,
                sport: n as u16,
                dport: 53,
            },
            proto: 17,
        }
    }

    /// `n` keys in shard 0 whose home, in `buckets` buckets, is `home`
    /// (any home if `None`).
    fn keys(m: &FlowMap<Val>, n: usize, buckets: usize, home: Option<usize>) -> Vec<FlowKey> {
        (0..)
            .map(key)
            .filter(|k| {
                let h = m.hash(k);
                FlowMap::<Val>::shard(h) == 0
                    && home.is_none_or(|b| h as usize & (buckets - 1) == b)
            })
            .take(n)
            .collect()
    }

    fn out(r: Option<&Val>) -> Option<usize> {
        r.map(|r| r.out())
    }

    /// A key that overflowed into the next bucket stays findable while a
    /// writer frees a slot in its home bucket, fills it and frees it again.
    #[test]
    fn overflowed_key_stays_findable() {
        loom::model(|| {
            let m = Arc::new(FlowMap::new());
            let ks = keys(&m, 9, MIN_BUCKETS, Some(0));
            {
                let g = m.guard();
                for (i, k) in ks[..8].iter().enumerate() {
                    assert!(m.try_insert(*k, Val(i as u16), &g).is_ok());
                }
            }
            let (m2, ks2) = (m.clone(), ks.clone());
            let w = thread::spawn(move || {
                let g = m2.guard();
                assert!(m2.remove_if(&ks2[3], |_| true, &g));
                assert!(m2.try_insert(ks2[8], Val(8), &g).is_ok());
                assert!(m2.remove_if(&ks2[8], |_| true, &g));
            });
            {
                let g = m.guard();
                assert_eq!(out(m.get(&ks[7], &g)), Some(7));
                let r = m.get(&ks[8], &g);
                assert!(r.is_none() || out(r) == Some(8));
                assert_eq!(out(m.get(&ks[0], &g)), Some(0));
            }
            w.join().unwrap();
        });
    }

    /// Lookups during a shard's growth find every key inserted before,
    /// and an entry published before a flag the reader sees.
    #[test]
    fn growth_keeps_keys_and_publication_is_seen() {
        loom::model(|| {
            let m = Arc::new(FlowMap::new());
            // Growth at the 11th entry of 2 buckets (11 x 4 > 2 x 7 x 3).
            let ks = keys(&m, 11, MIN_BUCKETS, None);
            {
                let g = m.guard();
                for (i, k) in ks[..10].iter().enumerate() {
                    assert!(m.try_insert(*k, Val(i as u16), &g).is_ok());
                }
            }
            let flag = Arc::new(AtomicBool::new(false));
            let (m2, ks2, flag2) = (m.clone(), ks.clone(), flag.clone());
            let w = thread::spawn(move || {
                let g = m2.guard();
                assert!(m2.try_insert(ks2[10], Val(10), &g).is_ok());
                flag2.store(true, Ordering::Release);
            });
            {
                let g = m.guard();
                let seen = flag.load(Ordering::Acquire);
                assert_eq!(out(m.get(&ks[9], &g)), Some(9));
                let r = m.get(&ks[10], &g);
                if seen {
                    assert_eq!(out(r), Some(10));
                } else {
                    assert!(r.is_none() || out(r) == Some(10));
                }
                assert_eq!(out(m.get(&ks[0], &g)), Some(0));
            }
            w.join().unwrap();
            let g = m.guard();
            assert_eq!(m.table(0, &g).b.len(), 2 * MIN_BUCKETS);
        });
    }
}
