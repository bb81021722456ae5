//! # Queue
//!
//! Queue(\[CAPACITY])
//!
//! Stores packets in a first-in-first-out queue: push input, pull output.
//! You may also use Click's old name `FullNoteQueue`.
//!
//! Ports: 1 input (push); output 0 (pull), and an optional output 1
//! (push) that receives the packets the queue drops.
//!
//! Arguments:
//! - `CAPACITY` (integer, default 1000, at most 16777216, 2^24): the most
//!   packets the queue holds.
//!   A packet arriving at a full queue is dropped (tail drop) and counted;
//!   it leaves on output 1 if that output is connected.
//!
//! Notification (Click's notifiers, see the runtime's `notifier` module):
//! the queue tells the pull tasks downstream (Unqueue, pull Discard, ...)
//! when it goes empty, so they sleep instead of polling it, and wakes them
//! when a packet arrives; and it tells the sources upstream (InfiniteSource,
//! RatedSource, FastUDPSource, ...) when it is full, so they wait until a
//! pull makes room instead of pushing packets it would drop. A source
//! waits while any queue it feeds is full. "Full" keeps room for the
//! bursts already under way: the queue counts as full when the largest
//! burst pushed into it so far would not fit once per waiting source that
//! may run at the same time (one per thread at most; at most half the
//! capacity is kept so), so sources on several threads that push whole
//! bursts never overflow a queue they wait on. Packets are still accepted
//! up to CAPACITY; with one source pushing one packet at a time, full
//! means full, as in Click. Across threads (the pullers on another
//! thread than a source) a wake-up costs both threads cache lines the
//! other wrote last, so there the pullers poll an empty queue for 20 µs
//! before they sleep, and the sources are woken once a quarter of the
//! queue is free again rather than as soon as one burst fits.
//!
//! The queue is a bounded ring with separate producer and consumer cache
//! lines and burst transfers (DPDK rte_ring style). The runtime chooses its
//! modes from the thread plan: when one thread pushes into it and one pulls
//! from it, neither side uses compare-and-swap; a side used by several
//! threads claims slots with one compare-and-swap per burst. The choice is
//! made again, safely, whenever the scheduler moves a task. When its
//! producers and its consumer are one thread, a packet pushed or pulled
//! alone (Click's BURST 1) takes a short path: the ring's plain push or
//! pop, one comparison each for the high-water mark and the notifiers.
//!
//! When the thread plan puts a consumer on another thread than a producer,
//! each producer thread gathers up to 32 packets before publishing them in
//! one ring operation (at once when the ring is nearly full), and publishes
//! what it holds when it runs out of work, within 32 passes over its tasks
//! otherwise, and when it stops. `length` counts gathered packets too.
//! With one consumer, the consumer keeps the high-water mark (the length
//! it finds before each pull), so the producers never read the line the
//! consumer writes as it pulls, except when the ring may be full.
//! The consumer of such a queue asks for the buffer headers of all the
//! packets a pull takes at once (and for their first data lines when an
//! element on its side reads packet data), so that their transfers from
//! the producer's core overlap.
//!
//! Handlers:
//! - `length` (read): packets in the queue.
//! - `highwater_length` (read): the most packets the queue has held.
//! - `drops` (read): packets dropped because the queue was full.
//! - `capacity` (read/write): the capacity. It can be raised up to
//!   `max_capacity` (the larger of 4096 and the configured capacity,
//!   rounded up to a power of two) while the router runs; lowered below
//!   the length, the queue drops its oldest packets beyond the new
//!   capacity (counted in `drops`). As in Click, the `config` handler then
//!   shows the new capacity (`CAPACITY 10`, or `10` in place of a
//!   positional capacity).
//! - `max_capacity` (read).
//! - `reset_counts` (write): resets `drops` and `highwater_length`.
//! - `reset` (write): drops every queued packet (counted in `drops`), from
//!   any thread, while the router runs.
//!
//! Yank (Click's `SimpleQueue::yank`, for elements such as
//! QueueYankTest; `Queue::yank` in Rust): removes the packets that match
//! a predicate, from a handler or timer on any thread; those that stay
//! keep their order and leave before any pushed later. They wait in a
//! front buffer outside the ring (the pull path checks it with the load
//! it already made), and until it empties the ring may take CAPACITY more
//! packets.
//!
//! Hot reconfiguration (`-R`, `hotconfig`): a Queue of the same name in the
//! new configuration takes the old one's packets in order (those beyond a
//! smaller capacity are dropped, counted), its `drops` and its
//! `highwater_length`.
//!
//! Example:
//!
//!     FromDump(in.pcap) -> q :: Queue(200) -> Unqueue -> Discard;
//!     q[1] -> Print(dropped) -> Discard;
//!
//! # FullNoteQueue
//!
//! FullNoteQueue(\[CAPACITY])
//!
//! Click's old name for `Queue`: a first-in-first-out queue with empty and
//! full notifiers. Everything `Queue` says holds (see `paraclick doc
//! Queue`).
//!
//! Example:
//!
//!     InfiniteSource -> FullNoteQueue(100) -> Unqueue -> Discard;

use paraclick_packet::Packet;
use paraclick_runtime::element::{AsQueue, ElementNode};
use paraclick_runtime::ring::{Items, ModeSwitch, Popped, Ring, MAX_CAPACITY};
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, Notifier, PerThread,
    PerThreadCount, QueueElement, StateCx,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Most packets a producer gathers before publishing them to a ring that
/// another thread pulls from. Each publication stores the ring's producer
/// index, a line the consumer on the other core is polling: the store
/// waits for that line, and the producer's later stores wait behind it.
/// Over 64 packets rather than 32 (16 before) that wait costs half as
/// much a packet. With the two cores far apart (a 200 ns hand-over) and
/// the consumer's hold (`Queue::held`) the split pipeline went from
/// 0.96 to 1.01 of one thread (docs/PERFORMANCE.md, "The crossing with
/// the hand-over far: stages of 64 and the hold, kept").
pub const STAGE: usize = 64;

/// Most packets a producer gathers before publishing them to a ring that
/// producers on other threads push into too (less than [`STAGE`]): the
/// room a stage saw is stale as soon as another producer pushes, so the
/// full mark keeps room for a whole stage (at least a burst) from each
/// source (see [`Queue::shared_stage`], [`full_at`]). A stage of 64
/// behind a room seen earlier overflowed Queue(200) fed 32-packet bursts
/// from two threads.
const SHARED_STAGE: usize = 32;

/// How many packets before a stage is full the producer prefetches the
/// lines its publication will write.
const PREFETCH_LEAD: usize = 4;

/// The longest a crossing queue's consumer keeps off an empty ring while
/// its producer is busy (see `Queue::held`).
pub const CROSSING_HOLD_MAX: std::time::Duration = std::time::Duration::from_micros(16);

/// The capacity a queue can be raised to at least (see `capacity`).
const MIN_MAX_CAPACITY: usize = 4096;

/// Empty pulls in a row after which a queue's pullers may sleep (see
/// `Queue::emptied`).
pub const IDLE_PULLS_BEFORE_SLEEP: u32 = 8;

/// How long a puller of a queue whose producer runs on another thread
/// finds it empty before it sleeps (see `Queue::emptied`): longer than a
/// producer takes between two publications, and the odd interrupt; less
/// than its worker spins before it parks ([`paraclick_runtime::sched::PARK_AFTER`]).
pub const CROSSING_POLL: std::time::Duration = std::time::Duration::from_micros(20);

/// What distinguishes the classes of the queue family; everything else is
/// this file's one implementation.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub class: &'static str,
    pub port_count: &'static str,
    pub processing: &'static str,
    pub default_capacity: usize,
    /// Tells pull tasks downstream when it is empty (they sleep).
    pub empty_note: bool,
    /// Tells sources upstream when it is full (they wait).
    pub full_note: bool,
    /// A full queue drops its oldest packet to make room (FrontDropQueue).
    pub front_drop: bool,
    /// Input 1 is last-in-first-out (MixedQueue).
    pub lifo_input: bool,
    /// The empty notifier goes inactive at the first pull that finds the
    /// queue empty (QuickNoteQueue), not after [`IDLE_PULLS_BEFORE_SLEEP`]
    /// or [`CROSSING_POLL`].
    pub quick_note: bool,
}

/// A queue's capacity when its configuration gives none (Click's 1000).
pub const DEFAULT_CAPACITY: usize = 1000;

impl Policy {
    /// Queue, FullNoteQueue, ThreadSafeQueue, QuickNoteQueue.
    pub const fn full(class: &'static str) -> Policy {
        Policy {
            class,
            port_count: "1/1-2",
            processing: "h/lh",
            default_capacity: DEFAULT_CAPACITY,
            empty_note: true,
            full_note: true,
            front_drop: false,
            lifo_input: false,
            quick_note: false,
        }
    }
}

pub struct Queue {
    policy: Policy,
    ring: Ring<Packet>,
    drops: AtomicU64,
    highwater: AtomicUsize,
    /// Whether the consumer may be on another thread than a producer (from
    /// the thread plan): producers then stage packets per thread and
    /// publish up to [`STAGE`] at a time. A consumer polling a ring it
    /// shares with a producer moves the ring's cache lines back and forth;
    /// once per packet that costs the producer more than the rest of the
    /// queue operation, once per batch it does not.
    crossing: AtomicBool,
    /// The queue crosses threads and has one consumer, which keeps the
    /// high-water mark: before each pull it reads the ring's length (both
    /// indices, which it reads anyway), and no length reached by a push
    /// since its last pull can exceed that, for only pushes came in
    /// between. The producers then read the consumer's index line only
    /// when the ring may be full. (The `highwater_length` handler adds
    /// the pushes since the last pull: the length now.)
    hw_by_consumer: AtomicBool,
    /// An element on the consumer side reads packet data (from the
    /// router, see [`QueueElement::set_consumer_reads_data`]): a crossing
    /// pull then prefetches the packets' first data lines too.
    consumer_reads_data: AtomicBool,
    stages: PerThread<Stage>,
    /// Packets staged, per thread (for `length` and the conservation check).
    staged: PerThreadCount,
    empty: Notifier,
    full: Notifier,
    /// The length from which the full notifier goes inactive: the
    /// capacity less room for one more burst from every waiting source
    /// that may run at the same time (at most half the capacity), see
    /// [`full_at`].
    full_at: AtomicUsize,
    /// The length below which a pull wakes the sources waiting for room:
    /// `full_at` on a queue whose producers run on the puller's thread;
    /// lower on a crossing queue (see [`refill_at`]).
    refill_at: AtomicUsize,
    /// The largest batch pushed so far (a source's burst).
    max_burst: AtomicUsize,
    /// Empty pulls in a row since the last that took packets (consumer
    /// side; a heuristic, so relaxed even with several consumers).
    idle_pulls: AtomicU32,
    /// The ring's consumer tail when `idle_pulls` was last counted: a
    /// pull that took packets moved it, so the count starts again without
    /// the pull itself writing anything (see [`Queue::emptied`]).
    idle_tail: AtomicUsize,
    /// 0 when single packets may take the short paths
    /// ([`Queue::push_local`], [`QueueElement::pull_packet`]): as of the
    /// last change of modes, the queue does not cross threads and both
    /// sides of its ring are single (no compare-and-swap), it is not a
    /// MixedQueue or a QuickNoteQueue, and no thread's stage holds packets. Otherwise odd,
    /// with a generation above the low bit that each change of modes
    /// advances, so that a push or pull reopening it after its checks
    /// ([`Queue::open_gate`]) cannot undo a change made meanwhile.
    gate: AtomicU32,
    nthreads: usize,
    /// Output 1 (dropped packets) is connected.
    drop_output: bool,
    /// FrontDropQueue or MixedQueue: pushes take the special path.
    special: bool,
    /// MixedQueue's packets (it does not use the ring: a packet pushed on
    /// its LIFO input into a full queue evicts the FIFO side's newest,
    /// which a ring cannot take back).
    mixed: Mutex<Mixed>,
    /// Packets in `mixed`.
    lifo_len: AtomicUsize,
    /// [`CROSSING_POLL`] in cycles of the clock.
    poll_cycles: u64,
    /// [`CROSSING_HOLD_MAX`] in cycles.
    hold_max: u64,
}

/// MixedQueue's two sides. The queue, head first, is `lifo` newest first,
/// then `fifo` oldest first.
#[derive(Default)]
struct Mixed {
    /// Packets pushed on input 1, oldest at the front.
    lifo: std::collections::VecDeque<Packet>,
    /// Packets pushed on input 0, oldest at the front.
    fifo: std::collections::VecDeque<Packet>,
}

impl Mixed {
    fn len(&self) -> usize {
        self.lifo.len() + self.fifo.len()
    }
}

#[derive(Default)]
struct Stage {
    pkts: Vec<Packet>,
    /// A flush of this stage is pending with the thread ([`Cx::defer_flush`]).
    deferred: bool,
    /// The lines the next publication writes were prefetched.
    prefetched: bool,
    /// Publish when the stage holds this many packets (see
    /// [`Queue::stage_limit`]; 0 until the first packet).
    limit: usize,
    /// Where the next publication will write in the ring (for the
    /// prefetch; a hint).
    next: usize,
    /// Consumer side of a crossing queue: when this thread's pulls began
    /// to find it empty (cycles; 0: the last pull took packets), see
    /// [`Queue::emptied`]. Here, on the consumer thread's own line, rather
    /// than beside `idle_pulls`, which shares a line with what the
    /// producer reads on every push. Kept only while the queue crosses: a
    /// value left from before a task move ends the first poll after the
    /// queue crosses again early, once.
    empty_since: u64,
    /// Consumer side of a crossing queue: how long it keeps off the ring
    /// after finding it empty (cycles; 0: it looks again at once), and
    /// until when it does now (see [`Queue::held`]).
    hold: u64,
    hold_until: u64,
    /// The last look found the ring empty.
    empty_look: bool,
    /// When the last pull that found packets after an empty look looked
    /// (cycles).
    last_take: u64,
}

pub fn spec() -> ClassSpec {
    spec_for(Policy::full("Queue"))
}

pub fn full_note_spec() -> ClassSpec {
    spec_for(Policy::full("FullNoteQueue"))
}

/// The class of the family with policy `p`.
pub fn spec_for(p: Policy) -> ClassSpec {
    ClassSpec::node(p.class, p.port_count, p.processing, move |cx| {
        make(cx, p).map(|q| Box::new(ElementNode(q, AsQueue)) as _)
    })
    .metadata_only()
    .shared("a queue: one FIFO for all flows")
    .kind(paraclick_runtime::Kind::Queue)
    .drop_reasons(REASONS)
}

/// Why a queue drops a packet (its `drop_reasons`): it had no room (a
/// FrontDropQueue drops its oldest packets for that reason).
pub(crate) const REASONS: &[&str] = &["full"];
pub(crate) const FULL: u8 = 0;

fn make(cx: &mut ConfigCx<'_>, policy: Policy) -> Result<Queue, String> {
    let mut a = cx.args();
    let cap = a
        .read_p::<usize>("CAPACITY")
        .unwrap_or(policy.default_capacity);
    a.complete()?;
    check_capacity(cap)?;
    let single = cx.nthreads == 1;
    let ring = Ring::try_with_room(cap, cap.max(MIN_MAX_CAPACITY), !single, !single)?;
    let mut q = Queue::with_ring(policy, ring, cx.nthreads);
    q.drop_output = cx.noutputs > 1;
    Ok(q)
}

/// A queue capacity from a configuration: at least 1, at most the ring's
/// maximum ([`MAX_CAPACITY`], 2^24 packets), or a clear error (a capacity
/// of 10^10 aborted the process allocating its ring; one of 2^64-1
/// overflowed the rounding to a power of two).
pub fn check_capacity(cap: usize) -> Result<(), String> {
    if cap == 0 {
        return Err("CAPACITY must be at least 1".into());
    }
    if cap > MAX_CAPACITY {
        return Err(format!(
            "CAPACITY {cap} is more than the maximum, {MAX_CAPACITY}"
        ));
    }
    Ok(())
}

/// The length at which a queue of `capacity` counts as full for its full
/// notifier: from there, one more `burst` from each of `sources` waiting
/// sources running at once might not fit (a source checks for room once
/// per burst). At most half the capacity is kept free; the capacity
/// itself without a full notifier.
fn full_at(policy: Policy, capacity: usize, burst: usize, sources: usize) -> usize {
    if !policy.full_note {
        return capacity;
    }
    capacity - (burst * sources.max(1) - 1).min(capacity / 2)
}

/// The length below which a pull from a queue full at `full_at` (of
/// `capacity`) wakes the sources waiting for room: on a crossing queue,
/// once a quarter of the capacity is free again (at most half of
/// `full_at` down, at least 1), so that a source pushes a run of packets
/// per wake-up. A wake-up on another thread is a few lines that thread
/// wrote last, taken back one after the other by each side; woken as soon
/// as one burst fitted, a source faster than its consumer was woken and
/// stopped again for every pull. The consumer still has three quarters of
/// a queue to take meanwhile. Without crossing, `full_at` (Click's).
fn refill_at(full_at: usize, capacity: usize, crossing: bool) -> usize {
    if !crossing {
        return full_at;
    }
    full_at.saturating_sub(capacity / 4).max(full_at / 2).max(1)
}

impl Queue {
    pub fn new(
        capacity: usize,
        multi_producer: bool,
        multi_consumer: bool,
        nthreads: usize,
    ) -> Queue {
        Self::with_policy(
            Policy::full("Queue"),
            capacity,
            multi_producer,
            multi_consumer,
            nthreads,
        )
    }

    pub fn with_policy(
        policy: Policy,
        capacity: usize,
        multi_producer: bool,
        multi_consumer: bool,
        nthreads: usize,
    ) -> Queue {
        let ring = Ring::with_room(
            capacity,
            capacity.max(MIN_MAX_CAPACITY),
            multi_producer,
            multi_consumer,
        );
        Self::with_ring(policy, ring, nthreads)
    }

    fn with_ring(policy: Policy, ring: Ring<Packet>, nthreads: usize) -> Queue {
        let capacity = ring.capacity();
        Queue {
            policy,
            ring,
            drops: AtomicU64::new(0),
            highwater: AtomicUsize::new(0),
            crossing: AtomicBool::new(false),
            hw_by_consumer: AtomicBool::new(false),
            consumer_reads_data: AtomicBool::new(false),
            stages: PerThread::new(nthreads, |_| Stage::default()),
            staged: PerThreadCount::new(nthreads),
            empty: Notifier::new(),
            full: Notifier::new(),
            full_at: AtomicUsize::new(capacity),
            refill_at: AtomicUsize::new(capacity),
            max_burst: AtomicUsize::new(1),
            idle_pulls: AtomicU32::new(0),
            idle_tail: AtomicUsize::new(0),
            gate: AtomicU32::new(1),
            nthreads,
            drop_output: false,
            special: policy.front_drop || policy.lifo_input,
            mixed: Mutex::new(Mixed::default()),
            lifo_len: AtomicUsize::new(0),
            hold_max: (CROSSING_HOLD_MAX.as_secs_f64()
                * paraclick_runtime::clock::rough_cycles_per_second()) as u64,
            poll_cycles: (CROSSING_POLL.as_secs_f64()
                * paraclick_runtime::clock::rough_cycles_per_second())
                as u64,
        }
    }

    /// Packets in the queue: in the ring and staged by producers.
    pub fn len(&self) -> usize {
        (self.ring.len() + self.staged.get() as usize + self.lifo_len.load(Ordering::Relaxed))
            .min(self.capacity().max(self.ring.len()))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Moves what fits of `items` into the ring, keeping the high-water
    /// mark and the full notifier; returns how many did not fit.
    #[inline]
    fn enqueue(&self, cx: &mut Cx<'_>, items: &mut impl Items<Packet>) -> usize {
        if self.special {
            return self.enqueue_special(cx, items);
        }
        self.enqueue_plain(cx, items)
    }

    /// FrontDropQueue and MixedQueue: make room, or leave room for the
    /// LIFO side, then enqueue.
    #[cold]
    #[inline(never)]
    fn enqueue_special(&self, cx: &mut Cx<'_>, items: &mut impl Items<Packet>) -> usize {
        if self.policy.front_drop {
            self.make_room(cx, items.len());
            // A batch larger than the queue: its own oldest packets go too,
            // after those that were queued, so the newest stay.
            let cap = self.capacity();
            if items.len() > cap {
                let mut front = Batch::new();
                items.take_front(items.len() - cap, |p| front.push(p));
                self.dropped(cx, front);
            }
        }
        self.enqueue_plain(cx, items)
    }

    #[inline]
    fn enqueue_plain(&self, cx: &mut Cx<'_>, items: &mut impl Items<Packet>) -> usize {
        self.ring.push_burst(&cx.producer(), items);
        if !self.crossing.load(Ordering::Relaxed) {
            self.note_length_local(cx);
            return items.len();
        }
        // The high-water mark without reading the consumer's cache line on
        // every push: the producer-side bound can only overstate the
        // length, so the exact length is read only when it might be a new
        // maximum (unless the consumer keeps the mark) or the ring might
        // be full.
        let hw = self.highwater.load(Ordering::Relaxed);
        let ub = self.ring.len_upper_bound();
        let full_at = self.full_at.load(Ordering::Relaxed);
        if (ub > hw && !self.hw_by_consumer.load(Ordering::Relaxed)) || ub >= full_at {
            let len = self.ring.len_fresh();
            if len > hw {
                self.highwater.fetch_max(len, Ordering::Relaxed);
            }
            if self.policy.full_note && len >= full_at {
                self.filled(cx);
            }
        }
        items.len()
    }

    /// The high-water mark and full check after a push into a queue that
    /// does not cross threads: its consumer runs on this thread, so the
    /// exact length costs no other core's cache line, and is cheaper than
    /// the producer-side bound and its refresh (a queue fed one packet per
    /// run would refresh on every push).
    #[inline]
    fn note_length_local(&self, cx: &mut Cx<'_>) {
        let len = self.ring.len();
        if len > self.highwater.load(Ordering::Relaxed) {
            self.highwater.fetch_max(len, Ordering::Relaxed);
        }
        if self.policy.full_note && len >= self.full_at.load(Ordering::Relaxed) {
            self.filled(cx);
        }
    }

    /// The ring is full (up to the reserve): sources waiting for room
    /// stop (the full notifier goes inactive) unless pulls made room for a
    /// run of pushes meanwhile.
    ///
    /// The re-check asks what a pull asks before it wakes them, a length
    /// below the refill mark ([`refill_at`]), not below the full mark: on
    /// a crossing queue, a pull landing between this push and the re-check
    /// woke the source for one more packet, which filled the ring again,
    /// and so on. Each round costs a deactivation and a wake-up, lines the
    /// consumer reads on every pull; with the two cores' transfers slow,
    /// most rounds lost that race (a source faster than its consumer woken
    /// 3,727 times for 20,000 packets, where a run of room is 16). Left
    /// inactive between the two marks, the sources are still woken: the
    /// queue holds packets, so its consumer pulls on, and the pull that
    /// takes it below the refill mark sees the signal inactive (its pop
    /// and this deactivation are a Dekker pair, each fenced before the
    /// other's read) and wakes them.
    #[cold]
    #[inline(never)]
    fn filled(&self, cx: &Cx<'_>) {
        self.full.sleep(cx, || !self.refilled());
    }

    /// Whether pulls have made room for a run of a waiting source's
    /// pushes (the length is below the refill mark), for the producer
    /// side (refreshes its cached consumer tail).
    fn refilled(&self) -> bool {
        self.ring.len_fresh() < self.refill_at.load(Ordering::Relaxed)
    }

    /// Whether a waiting source's burst fits (below the full mark), for
    /// the consumer side and handlers: reads both
    /// tails and writes nothing. (`len_fresh` stores into the producer's
    /// cache line: called by a consumer on another thread, it took that
    /// line from the producer, whose next push then missed.)
    fn has_room_seen_by_consumer(&self) -> bool {
        self.ring.len() < self.full_at.load(Ordering::Relaxed)
    }

    /// Recomputes the full mark after a change of capacity, of modes or
    /// of the largest burst.
    fn set_full_at(&self) {
        // The waiting sources are the full notifier's listeners, fixed
        // when the router is built (before the ring modes are set).
        let sources = self.full.listener_count().min(self.nthreads);
        let crossing = self.crossing.load(Ordering::Relaxed);
        let burst = self.max_burst.load(Ordering::Relaxed);
        // Producers on several threads, one of them staging: each source
        // may add a whole stage the others did not see.
        let unit = if crossing && self.ring.modes().0 {
            Self::shared_stage(burst)
        } else {
            burst
        };
        let m = full_at(self.policy, self.capacity(), unit, sources);
        self.full_at.store(m, Ordering::Relaxed);
        self.refill_at
            .store(refill_at(m, self.capacity(), crossing), Ordering::Relaxed);
    }

    /// A larger burst than before arrives: the full mark keeps room for
    /// it from now on.
    #[cold]
    #[inline(never)]
    fn learn_burst(&self, n: usize) {
        if self.policy.full_note {
            self.max_burst.fetch_max(n, Ordering::Relaxed);
            self.set_full_at();
        }
    }

    /// A pull found the queue empty. Pull tasks may sleep (the empty
    /// notifier goes inactive, unless a push came meanwhile) after a few
    /// empty pulls in a row: [`IDLE_PULLS_BEFORE_SLEEP`] on a queue whose
    /// producers run on the puller's thread, where the delay keeps a
    /// puller that empties the queue on every run (a BURST 1 source
    /// feeding a puller on its own thread) from paying a sleep here and a
    /// wake-up in the next push, with their fences, once per packet. On a
    /// crossing queue, once the pulls have found it empty for
    /// [`CROSSING_POLL`]: a puller that slept at every empty pull cost
    /// the producer a wake-up per published stage, lines the puller's
    /// thread wrote last (the signal, the task's sleep flag, its worker's
    /// count of wakes) each taken back with a locked instruction, one
    /// after the other; and a count of pulls (64) ended sooner than a
    /// BURST 1 producer's next publication where a pass is short.
    #[inline]
    fn emptied(&self, cx: &mut Cx<'_>) {
        if !self.empty.active() {
            return;
        }
        if self.policy.quick_note {
            return self.sleep_empty(cx);
        }
        if self.crossing.load(Ordering::Relaxed) {
            let now = paraclick_runtime::clock::cycles().max(1);
            let poll = self.poll_cycles;
            let s = self.stages.get(cx);
            if s.empty_since == 0 {
                s.empty_since = now;
                return;
            }
            if now.wrapping_sub(s.empty_since) < poll {
                return;
            }
            s.empty_since = 0;
            return self.sleep_empty(cx);
        }
        // A pull that took packets since the last count moved the tail:
        // the count starts again (the short pull path writes nothing).
        let tail = self.ring.popped();
        let n = if self.idle_tail.load(Ordering::Relaxed) != tail {
            self.idle_tail.store(tail, Ordering::Relaxed);
            1
        } else {
            self.idle_pulls.load(Ordering::Relaxed) + 1
        };
        if n < IDLE_PULLS_BEFORE_SLEEP {
            self.idle_pulls.store(n, Ordering::Relaxed);
            return;
        }
        self.idle_pulls.store(0, Ordering::Relaxed);
        self.sleep_empty(cx);
    }

    /// A pull took packets: the count of empty pulls starts again (on a
    /// crossing queue, the time it has been found empty; a queue that
    /// does not cross pays no look at this thread's stage).
    #[inline]
    fn not_empty(&self, cx: &mut Cx<'_>) {
        if self.idle_pulls.load(Ordering::Relaxed) != 0 {
            self.idle_pulls.store(0, Ordering::Relaxed);
        }
        if self.crossing.load(Ordering::Relaxed) {
            let s = self.stages.get(cx);
            if s.empty_since != 0 {
                s.empty_since = 0;
            }
        }
    }

    /// QuickNoteQueue: a pull took what looked like the last packets, so
    /// its pullers may sleep now (the notifier checks the queue is still
    /// empty), rather than at the next pull that finds it empty.
    #[cold]
    #[inline(never)]
    fn quick_emptied(&self, cx: &Cx<'_>) {
        if self.empty.active() {
            self.sleep_empty(cx);
        }
    }

    #[cold]
    #[inline(never)]
    fn sleep_empty(&self, cx: &Cx<'_>) {
        // Both tails read, not `len_fresh`: the consumer must not write the
        // producer's cache line (see `has_room_seen_by_consumer`).
        let still = || self.ring.is_empty() && self.lifo_len.load(Ordering::SeqCst) == 0;
        if self.crossing.load(Ordering::Relaxed) {
            // The producer's publication does not fence (see `pushed`).
            self.empty.sleep_heavy(cx, still);
        } else {
            self.empty.sleep(cx, still);
        }
    }

    /// After packets left the ring: wakes sources that waited for room.
    /// The mirror of [`Queue::pushed`]: when a producer may be on another
    /// thread, the pop must be fenced before the signal is read, or the
    /// producer's "still full?" re-check and this read can both see the
    /// old values (a source asleep on an empty queue).
    #[inline]
    fn pulled(&self, cx: &Cx<'_>) {
        if self.policy.full_note {
            let crossing = self.crossing.load(Ordering::Relaxed);
            self.full.wake_if(cx, crossing, || {
                self.ring.len() < self.refill_at.load(Ordering::Relaxed)
            });
        }
    }

    /// MixedQueue's pull: the LIFO side first, newest first, then the
    /// FIFO side, oldest first.
    #[cold]
    #[inline(never)]
    fn pull_lifo(&self, cx: &mut Cx<'_>, max: usize) -> Option<Batch> {
        let mut b = Batch::new();
        {
            let mut m = self.mixed.lock().unwrap_or_else(|e| e.into_inner());
            while b.len() < max {
                let Some(p) = m.lifo.pop_back().or_else(|| m.fifo.pop_front()) else {
                    break;
                };
                b.push(p);
            }
            self.lifo_len.store(m.len(), Ordering::Relaxed);
        }
        if b.is_empty() {
            if !self.policy.lifo_input {
                // A yank's packets were pulled meanwhile: the ring's next.
                return self.pull_ring(cx, max);
            }
            self.emptied(cx);
            return None;
        }
        self.not_empty(cx);
        self.pulled(cx);
        if self.policy.quick_note {
            self.quick_emptied(cx);
        }
        Some(b)
    }

    /// A crossing queue's consumer keeps off the ring for a while after
    /// finding it empty, while the producer is busy: each look takes the
    /// line of the producer's index, which the producer then waits for at
    /// its next publication (about 200 ns when the two cores are far
    /// apart), and a consumer polling every 100 ns took it before every
    /// publication. Whether it is held now.
    #[inline]
    fn held(&self, cx: &mut Cx<'_>) -> bool {
        let s = self.stages.get(cx);
        if s.hold_until == 0 {
            return false;
        }
        if paraclick_runtime::clock::cycles() < s.hold_until {
            let until = s.hold_until;
            cx.holding_until(until);
            return true;
        }
        s.hold_until = 0;
        false
    }

    /// A crossing look found the ring empty: the hold starts.
    #[inline]
    fn looked_empty(&self, cx: &mut Cx<'_>) {
        let s = self.stages.get(cx);
        s.empty_look = true;
        if s.hold != 0 {
            let until = paraclick_runtime::clock::cycles() + s.hold;
            s.hold_until = until;
            cx.holding_until(until);
        }
    }

    /// A crossing pull found `len` packets. After an empty look, the hold
    /// that follows the next one is the time the producer takes for half
    /// the ring at the rate measured since the last such look (the
    /// packets found over the time between the two), at most
    /// [`CROSSING_HOLD_MAX`]; none when fewer than half a stage came (a
    /// producer this slow gains nothing from it, and its packets would
    /// wait). A producer held up by a full ring meanwhile lowers the rate
    /// and so the next hold; the ring holds about half its capacity more
    /// for it. Should a burst fill the ring during a hold, its source
    /// waits on the full notifier and loses nothing, for a stage is never
    /// published into less room than it holds (see
    /// [`Queue::stage_limit`]; before that rule, a hold behind a BURST 32
    /// source made Queue(1000) drop 24 of 20,000 packets).
    #[inline]
    fn took(&self, cx: &mut Cx<'_>, len: usize) {
        let cap = self.capacity() as u64;
        let max = self.hold_max;
        let s = self.stages.get(cx);
        if !s.empty_look {
            return;
        }
        s.empty_look = false;
        let now = paraclick_runtime::clock::cycles();
        let since = now.wrapping_sub(s.last_take);
        s.last_take = now;
        s.hold = if len >= STAGE / 2 && since < 64 * max {
            (since.saturating_mul(cap / 2) / len as u64).min(max)
        } else {
            0
        };
    }

    /// The ring part of a pull.
    #[inline]
    fn pull_ring(&self, cx: &mut Cx<'_>, max: usize) -> Option<Batch> {
        let crossing = self.crossing.load(Ordering::Relaxed);
        if crossing && self.held(cx) {
            return None;
        }
        // An empty queue (a puller polling) costs two loads, no batch.
        let len = self.ring.len();
        if len == 0 {
            if crossing {
                self.looked_empty(cx);
            }
            if self.policy.empty_note {
                self.emptied(cx);
            }
            return None;
        }
        let mut b = Batch::new();
        if self.ring.pop_burst(&cx.consumer(), b.vec_mut(), max) == 0 {
            if self.policy.empty_note {
                self.emptied(cx);
            }
            return None;
        }
        self.not_empty(cx);
        self.pulled(cx);
        if crossing {
            self.note_length_pulled(len);
            self.took(cx, len);
            self.prefetch_taken(&b);
        }
        if self.policy.quick_note && b.len() >= len {
            self.quick_emptied(cx);
        }
        Some(b)
    }

    /// A pull found `len` packets in the ring before taking some: a new
    /// high-water mark, if the consumer keeps it (see `hw_by_consumer`).
    #[inline]
    fn note_length_pulled(&self, len: usize) {
        if self.hw_by_consumer.load(Ordering::Relaxed)
            && len > self.highwater.load(Ordering::Relaxed)
        {
            self.highwater.fetch_max(len, Ordering::Relaxed);
        }
    }

    /// A pull on a crossing queue took `b`: the producer's core wrote
    /// their buffer headers (and data) last, so each line the consumer
    /// reads is a transfer from that core. Asking for all of them at once
    /// overlaps those transfers instead of waiting for each as the
    /// consumer reaches the packet: the buffer headers first, then, when
    /// an element on the consumer side reads data, each packet's first
    /// data line (its address is in the header, which is on its way by
    /// then).
    #[inline]
    fn prefetch_taken(&self, b: &Batch) {
        for p in b.iter() {
            p.prefetch_meta();
        }
        if self.consumer_reads_data.load(Ordering::Relaxed) {
            for p in b.iter() {
                p.prefetch_data();
            }
        }
    }

    /// FrontDropQueue: drops the oldest packets so that `n` more fit.
    /// The producer pops as an extra consumer: its ring's consumer side is
    /// multi whenever producers and consumers are not one thread (see
    /// `set_ring_modes`).
    fn make_room(&self, cx: &mut Cx<'_>, n: usize) {
        let cap = self.capacity();
        let len = self.ring.len_fresh();
        if len + n <= cap {
            return;
        }
        let excess = (len + n - cap).min(len);
        let mut old = Batch::new();
        self.ring.pop_burst(&cx.consumer(), old.vec_mut(), excess);
        self.dropped(cx, old);
    }

    /// Counts `b` as dropped and sends it to output 1 or drops it.
    fn dropped(&self, cx: &mut Cx<'_>, b: Batch) {
        if b.is_empty() {
            return;
        }
        self.drops.fetch_add(b.len() as u64, Ordering::Relaxed);
        if self.drop_output {
            cx.push(1, b);
        } else {
            cx.drop_batch_for(FULL, b);
        }
    }

    /// After packets went into the ring: wakes pull tasks that slept on
    /// the queue being empty.
    #[inline]
    fn pushed(&self, cx: &mut Cx<'_>, crossing: bool) {
        if self.policy.empty_note {
            if crossing {
                // Paired with the puller's heavy fence as it goes to
                // sleep (`sleep_empty`), which comes seldom: a crossing
                // queue's puller polls a while first.
                self.empty.wake_unfenced(cx);
            } else {
                self.empty.wake_local(cx);
            }
        }
    }

    /// Before a push that does not stage: packets this thread staged
    /// while the queue still crossed threads go into the ring first. A
    /// task move that puts the producer and the consumer on one thread
    /// turns crossing off while the producer's thread runs; its stage is
    /// published at its next flush, and a push in between would otherwise
    /// overtake it (a flow's packets out of order).
    #[inline]
    fn publish_left_behind(&self, cx: &mut Cx<'_>) {
        if !self.stages.get(cx).pkts.is_empty() {
            self.publish(cx);
        }
    }

    /// Publishes this thread's staged packets; what does not fit is
    /// dropped, counted.
    fn publish(&self, cx: &mut Cx<'_>) {
        let t = cx.thread();
        let stage = self.stages.get(cx);
        stage.prefetched = false;
        let mut pkts = std::mem::take(&mut stage.pkts);
        let n = pkts.len();
        let left = self.enqueue(cx, &mut pkts);
        self.staged.sub(t, n as u64);
        self.pushed(cx, true);
        if left > 0 {
            let b: Batch = pkts.drain(..).collect();
            self.dropped(cx, b);
        }
        let limit = self.stage_limit();
        let next = self.ring.push_position(&cx.producer());
        let stage = self.stages.get(cx);
        stage.pkts = pkts;
        stage.limit = limit;
        stage.next = next;
    }

    /// Gathers `batch` in this thread's stage, publishing when the stage
    /// is full or the ring may be close to full (so drops happen when they
    /// would without staging); otherwise the thread publishes it soon (see
    /// [`Cx::defer_flush`]).
    fn stage(&self, cx: &mut Cx<'_>, mut batch: Batch) {
        let t = cx.thread();
        let n = batch.len();
        let s = self.stages.get(cx);
        s.pkts.extend(batch.drain());
        self.staged.add(t, n as u64);
        self.staged_more(cx);
    }

    /// [`Queue::stage`] for one packet (Click's BURST 1): no batch is
    /// made and dropped around it, which cost a BURST 1 producer more
    /// than the rest of its crossing push.
    ///
    /// Most packets only join the stage: a flush is pending already, the
    /// stage is below its limit and not yet at the prefetch point. That
    /// case is decided on the one look at the stage the push needs anyway.
    #[inline]
    fn stage_one(&self, cx: &mut Cx<'_>, p: Packet) {
        self.staged.add(cx.thread(), 1);
        let s = self.stages.get(cx);
        s.pkts.push(p);
        let len = s.pkts.len();
        if s.deferred && len < s.limit && (len + PREFETCH_LEAD < STAGE || s.prefetched) {
            return;
        }
        self.staged_more(cx);
    }

    /// How many packets a stage may gather before it is published: at
    /// most [`STAGE`], less when the ring has less room. Read from the
    /// ring's producer line, so computed when a publication has just
    /// written that line, and again only when a stage reaches a limit
    /// below [`STAGE`]: a stage that looked at the ring on every packet
    /// missed in cache once per publication, as the consumer on another
    /// core had read the line since.
    ///
    /// A stage below its limit takes one more push, which may be a whole
    /// burst: the limit leaves room for the largest burst seen, so that
    /// a stage is never published into less room than it holds. (Cut at
    /// the room alone, a stage of bursts of 7 into Queue(100) reached 28
    /// with a room of 23.) A source that waits on the full notifier then
    /// loses nothing, whatever its burst; near full, each push is
    /// published at once, and the full mark is checked after each.
    fn stage_limit(&self) -> usize {
        let cap = self.capacity();
        let burst = self.max_burst.load(Ordering::Relaxed);
        let reserve = burst.saturating_sub(1);
        let most = self.stage_most(burst);
        let mut room = cap.saturating_sub(self.ring.len_upper_bound());
        if room < most + reserve {
            // The bound lags the consumer: look at the ring itself.
            room = cap.saturating_sub(self.ring.len_fresh());
        }
        most.min(room.saturating_sub(reserve))
    }

    /// The most a stage gathers: [`STAGE`], or on a ring other threads
    /// push into too [`Queue::shared_stage`].
    #[inline]
    fn stage_most(&self, burst: usize) -> usize {
        if self.ring.modes().0 {
            Self::shared_stage(burst)
        } else {
            STAGE
        }
    }

    /// The most a stage gathers on a ring several threads push into:
    /// [`SHARED_STAGE`] or one burst if larger; and the most it can hold
    /// when published, whole bursts until it reaches that (what the full
    /// mark keeps room for, per source).
    fn shared_stage(burst: usize) -> usize {
        let burst = burst.max(1);
        burst * SHARED_STAGE.max(burst).div_ceil(burst)
    }

    /// Packets were added to this thread's stage: publishes it if it is
    /// full or the ring may be close to full, else makes sure a flush is
    /// pending.
    #[inline]
    fn staged_more(&self, cx: &mut Cx<'_>) {
        let s = self.stages.get(cx);
        let len = s.pkts.len();
        let mut full = len >= s.limit;
        if full && len < STAGE && len < self.stage_most(self.max_burst.load(Ordering::Relaxed)) {
            // The limit was set when the ring had little room (or not at
            // all yet): look again.
            let limit = self.stage_limit();
            let s = self.stages.get(cx);
            s.limit = limit;
            full = len >= limit;
        }
        let s = self.stages.get(cx);
        let defer = !full && !s.deferred;
        s.deferred |= defer;
        if !full && len + PREFETCH_LEAD >= STAGE && !s.prefetched {
            // A few packets before the publication (the consumer has
            // drained the last one by now): take back the lines it will
            // write (ring index, slots, the empty notifier's flag), so
            // that it and the fence after it do not wait for them.
            s.prefetched = true;
            let from = s.next;
            self.ring.prefetch_push(&cx.producer(), from, STAGE);
            self.empty.prefetch();
        }
        if full {
            self.publish(cx);
        } else if defer {
            cx.defer_flush();
        }
    }

    /// [`Element::push_packet`] when the short path is closed, or the
    /// ring had no room for it: everything the short path leaves out
    /// (staging, the LIFO side, front drops, drops, a multi-producer
    /// ring), and the reopening of the short path.
    #[cold]
    #[inline(never)]
    fn push_packet_general(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        if self.special || port != 0 {
            return self.push(cx, port, Batch::one(p));
        }
        if self.crossing.load(Ordering::Relaxed) {
            return self.stage_one(cx, p);
        }
        self.publish_left_behind(cx);
        self.open_gate();
        let mut item = Some(p);
        self.enqueue_plain(cx, &mut item);
        self.pushed(cx, false);
        if let Some(p) = item {
            self.drops.fetch_add(1, Ordering::Relaxed);
            if self.drop_output {
                cx.push_packet(1, p);
            } else {
                cx.drop_packet_for(FULL, p);
            }
        }
    }

    /// One packet into a queue whose producers and consumer run on this
    /// thread (the push gate is open): the ring's single-producer push,
    /// then the high-water mark, the full notifier and the empty
    /// notifier as [`Queue::enqueue_plain`] and [`Queue::pushed`] keep
    /// them, each checked with one comparison; anything more goes to a
    /// function of its own, called last (so the short path needs no
    /// stack frame). A full ring or a multi-producer side falls back to
    /// the general path, which drops or takes the compare-and-swap.
    #[inline(always)]
    fn push_local(&self, cx: &mut Cx<'_>, p: Packet) {
        // SAFETY: the gate is open, so the producer side was single when
        // it opened and has not changed since as far as this thread can
        // see: `set_ring_modes` closes it after every change, and a new
        // producer starts only after this thread saw that (the crossing
        // protocol's barrier), as for the ring's own mode flag.
        let pushed = unsafe { self.ring.push_single_unchecked(&cx.producer(), p) };
        let len = match pushed {
            Ok(len) => len,
            Err(p) => return self.push_packet_general(cx, 0, p),
        };
        // Without a full notifier `full_at` is the capacity: a push that
        // reaches it only takes the longer path, which checks the policy.
        if len > self.highwater.load(Ordering::Relaxed)
            || len >= self.full_at.load(Ordering::Relaxed)
        {
            return self.pushed_local_note(cx, len);
        }
        // A queue without an empty notifier never makes it inactive (only
        // `sleep_empty` does, on the policy's word): no policy check.
        if !self.empty.active() {
            self.pushed_local_wake(cx);
        }
    }

    /// [`Queue::push_local`] found the empty notifier inactive: pull
    /// tasks asleep on the queue run again.
    #[cold]
    #[inline(never)]
    fn pushed_local_wake(&self, cx: &mut Cx<'_>) {
        self.pushed(cx, false);
    }

    /// [`Queue::push_local`] reached a new high-water mark or the full
    /// mark.
    #[cold]
    #[inline(never)]
    fn pushed_local_note(&self, cx: &mut Cx<'_>, len: usize) {
        if len > self.highwater.load(Ordering::Relaxed) {
            self.highwater.fetch_max(len, Ordering::Relaxed);
        }
        if self.policy.full_note && len >= self.full_at.load(Ordering::Relaxed) {
            self.filled(cx);
        }
        self.pushed(cx, false);
    }

    /// Opens the short paths if they may be (see `gate`): the queue is
    /// not crossing, its ring's sides are single, it is not a MixedQueue,
    /// and no stage holds packets (one left from when it crossed would be
    /// overtaken). Called on the general paths, after this thread's stage
    /// was published. The gate opens only from the value read before
    /// those checks (Acquire: the modes `set_ring_modes` stored before
    /// that value are seen): a change of modes meanwhile closed it with
    /// another value.
    #[inline]
    fn open_gate(&self) {
        let g = self.gate.load(Ordering::Acquire);
        if g != 0
            && !self.policy.lifo_input
            && !self.policy.quick_note
            && !self.crossing.load(Ordering::Relaxed)
            && self.ring.modes() == (false, false)
            && self.staged.get() == 0
        {
            let _ = self
                .gate
                .compare_exchange(g, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Closes the short push path (a change of modes), with a new
    /// generation.
    fn close_gate(&self) {
        let _ = self
            .gate
            .fetch_update(Ordering::Release, Ordering::Relaxed, |g| {
                Some(((g >> 1).wrapping_add(1) << 1) | 1)
            });
    }

    /// [`QueueElement::pull_packet`] when the short path does not apply:
    /// packets outside the ring (MixedQueue's, a yank's), a crossing
    /// queue, a multi-consumer ring.
    #[cold]
    #[inline(never)]
    fn pull_packet_general(&self, cx: &mut Cx<'_>, port: usize) -> Option<Packet> {
        if self.lifo_len.load(Ordering::Relaxed) > 0 {
            return self.pull(cx, port, 1).and_then(|mut b| b.pop());
        }
        let crossing = self.crossing.load(Ordering::Relaxed);
        if crossing && self.held(cx) {
            return None;
        }
        self.open_gate();
        let c = cx.consumer();
        let len = if self.hw_by_consumer.load(Ordering::Relaxed) {
            self.ring.len()
        } else {
            0
        };
        match self.ring.pop(&c) {
            Some(p) => {
                self.note_length_pulled(len);
                let drained = self.ring.drained_hint(&c);
                if crossing {
                    self.took(cx, len);
                }
                self.not_empty(cx);
                self.pulled(cx);
                cx.note_drained(drained);
                if drained && self.policy.quick_note {
                    self.quick_emptied(cx);
                }
                Some(p)
            }
            None => {
                if crossing {
                    self.looked_empty(cx);
                }
                self.pulled_nothing(cx)
            }
        }
    }

    /// A pull found the queue empty.
    #[cold]
    #[inline(never)]
    fn pulled_nothing(&self, cx: &mut Cx<'_>) -> Option<Packet> {
        if self.policy.empty_note {
            self.emptied(cx);
        }
        None
    }

    /// [`Queue::pull_local`] took `p` with the full notifier inactive:
    /// sources waiting for room may run again.
    #[cold]
    #[inline(never)]
    fn pulled_local_wake(&self, cx: &mut Cx<'_>, p: Packet) -> Option<Packet> {
        self.pulled(cx);
        Some(p)
    }

    /// MixedQueue's pushes. Input 0 appends to the tail; a full queue
    /// drops the packet. Input 1 puts the packet at the head; a full queue
    /// first drops the packet at its tail (the FIFO side's newest, else the
    /// LIFO side's oldest), as Click's MixedQueue does. O(1) per packet.
    fn push_mixed(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        let cap = self.capacity();
        let mut m = self.mixed.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Batch::new();
        for p in batch {
            let full = m.len() >= cap;
            if port == 0 {
                if full {
                    out.push(p);
                } else {
                    m.fifo.push_back(p);
                }
                continue;
            }
            if full {
                match m.fifo.pop_back().or_else(|| m.lifo.pop_front()) {
                    Some(tail) => out.push(tail),
                    None => {
                        // Capacity 0: nothing to make room with.
                        out.push(p);
                        continue;
                    }
                }
            }
            m.lifo.push_back(p);
        }
        let len = m.len();
        self.lifo_len.store(len, Ordering::Relaxed);
        drop(m);
        self.highwater.fetch_max(len, Ordering::Relaxed);
        self.dropped(cx, out);
        if self.policy.empty_note {
            // Fenced: the puller, crossing or not, may sleep either way.
            self.empty.wake(cx);
        }
    }

    pub fn ring(&self) -> &Ring<Packet> {
        &self.ring
    }

    /// Removes from the queue the packets for which `matches` is true, at
    /// most `limit` of them, starting at the head, and returns them in
    /// queue order (Click's `SimpleQueue::yank`; with `limit` 1, its
    /// `yank1`). The packets that stay keep their order and stay ahead of
    /// those pushed meanwhile. `hx` is a handler context for this queue
    /// ([`HandlerCx::on`]); safe from any thread while the router runs.
    ///
    /// The kept packets move out of the ring into the queue's front
    /// buffer (MixedQueue's storage), which pulls empty first: the pull
    /// path's cost is unchanged, one relaxed load that was there already.
    /// While a yank runs, pulls wait for it on the buffer's lock.
    pub fn yank(
        &self,
        hx: &HandlerCx<'_>,
        limit: usize,
        matches: impl FnMut(&Packet) -> bool,
    ) -> Vec<Packet> {
        self.with_front(hx, |front| {
            let mut matches = matches;
            let mut yanked = Vec::new();
            let mut kept = std::collections::VecDeque::with_capacity(front.len());
            for p in front.drain(..) {
                if yanked.len() < limit && matches(&p) {
                    yanked.push(p);
                } else {
                    kept.push_back(p);
                }
            }
            *front = kept;
            yanked
        })
    }

    /// Appends `packets` at the queue's tail from a handler or timer on
    /// any thread (`hx` as for [`Queue::yank`]); those beyond the
    /// capacity are returned, not queued.
    pub fn enqueue_from_handler(&self, hx: &HandlerCx<'_>, packets: Vec<Packet>) -> Vec<Packet> {
        let cap = self.capacity();
        let mut packets = packets.into_iter();
        let left: Vec<Packet> = self.with_front(hx, |front| {
            while front.len() < cap {
                match packets.next() {
                    Some(p) => front.push_back(p),
                    None => break,
                }
            }
            packets.collect()
        });
        // Pullers asleep on the empty queue run again.
        if self.policy.empty_note {
            self.empty.wake_from_handler_if(hx, || !self.is_empty());
        }
        left
    }

    /// Runs `f` on the whole queue, head first, as one deque: the ring's
    /// packets (taken as an extra consumer) after those already outside
    /// it. Pulls wait meanwhile (`lifo_len` is non-zero, so they take the
    /// buffer's lock).
    fn with_front<R>(
        &self,
        hx: &HandlerCx<'_>,
        f: impl FnOnce(&mut std::collections::VecDeque<Packet>) -> R,
    ) -> R {
        let mut m = self.mixed.lock().unwrap_or_else(|e| e.into_inner());
        self.lifo_len.store(m.len() + 1, Ordering::SeqCst);
        let m = &mut *m;
        // One deque, head first: the LIFO side newest first, then the rest.
        let mut front: std::collections::VecDeque<Packet> = m.lifo.drain(..).rev().collect();
        front.extend(m.fifo.drain(..));
        let ring = hx.as_extra_consumer(|c| {
            let mut v = Vec::new();
            while self.ring.pop_burst(c, &mut v, 256) > 0 {}
            v
        });
        front.extend(ring);
        let r = f(&mut front);
        m.fifo = front;
        self.lifo_len.store(m.len(), Ordering::SeqCst);
        if self.policy.full_note {
            self.full
                .wake_from_handler_if(hx, || self.has_room_seen_by_consumer());
        }
        r
    }

    /// Drains every queued packet (ring and LIFO side) as an extra
    /// consumer, from any thread; wakes sources waiting for room.
    fn drain_all(&self, hx: &HandlerCx<'_>) -> Vec<Packet> {
        let mut v = hx.as_extra_consumer(|c| {
            let mut v = Vec::new();
            while self.ring.pop_burst(c, &mut v, 256) > 0 {}
            v
        });
        let mut m = self.mixed.lock().unwrap_or_else(|e| e.into_inner());
        v.extend(m.lifo.drain(..).rev());
        v.extend(m.fifo.drain(..));
        self.lifo_len.store(0, Ordering::Relaxed);
        drop(m);
        if self.policy.full_note {
            self.full
                .wake_from_handler_if(hx, || self.has_room_seen_by_consumer());
        }
        v
    }
}

impl Element for Queue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("length", |e, _| e.len().to_string()),
        Handler::read("highwater_length", |e, _| {
            // Pushes since the consumer's last pull (see `hw_by_consumer`)
            // only made the queue longer: its length now covers them.
            e.highwater
                .load(Ordering::Relaxed)
                .max(e.ring.len())
                .to_string()
        }),
        Handler::read("drops", |e, _| e.drops.load(Ordering::Relaxed).to_string()),
        Handler::rw(
            "capacity",
            |e, _| e.capacity().to_string(),
            |e, v, hx| {
                let c: usize = hx.arg(v)?;
                let before = e.ring.len();
                e.ring.set_capacity(c)?;
                e.set_full_at();
                // Below the length: the oldest packets beyond the new
                // capacity are dropped (counted).
                let over = before.saturating_sub(c);
                if over > 0 {
                    let v = hx.as_extra_consumer(|cons| {
                        let mut v = Vec::new();
                        while v.len() < over {
                            let want = over - v.len();
                            if e.ring.pop_burst(cons, &mut v, want) == 0 {
                                break;
                            }
                        }
                        v
                    });
                    e.drops.fetch_add(v.len() as u64, Ordering::Relaxed);
                    hx.count_drops(v.len() as u64);
                }
                hx.set_config_arg(Some(0), "CAPACITY", v);
                // Room may have appeared: sources waiting for it run again.
                if e.policy.full_note {
                    e.full
                        .wake_from_handler_if(hx, || e.has_room_seen_by_consumer());
                }
                Ok(())
            },
        ),
        Handler::read("max_capacity", |e, _| e.ring.max_capacity().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.drops.store(0, Ordering::Relaxed);
            e.highwater.store(e.ring.len(), Ordering::Relaxed);
            Ok(())
        }),
        Handler::write("reset", |e, _, hx| {
            // A handler may run on any thread: it drains as an extra
            // consumer through the runtime's audited path, never behind the
            // planned consumer's back.
            let v = e.drain_all(hx);
            e.drops.fetch_add(v.len() as u64, Ordering::Relaxed);
            hx.count_drops(v.len() as u64);
            Ok(())
        }),
    ];

    #[inline]
    fn push(&self, cx: &mut Cx<'_>, port: usize, mut batch: Batch) {
        // The burst a source pushes at once (before staging gathers the
        // thread's packets): the full mark keeps room for it.
        if batch.len() > self.max_burst.load(Ordering::Relaxed) {
            self.learn_burst(batch.len());
        }
        if self.policy.lifo_input {
            return self.push_mixed(cx, port, batch);
        }
        // Staging gathers small batches; a batch as large as a stage goes
        // straight in (unless packets staged earlier must go first).
        let crossing = self.crossing.load(Ordering::Relaxed);
        if crossing {
            if batch.len() < STAGE || !self.stages.get(cx).pkts.is_empty() {
                return self.stage(cx, batch);
            }
        } else {
            self.publish_left_behind(cx);
            self.open_gate();
        }
        let left = self.enqueue(cx, batch.vec_mut());
        self.pushed(cx, crossing);
        if left > 0 {
            self.dropped(cx, batch);
        }
    }

    /// One packet (Click's BURST 1): no batch on the plain path nor when
    /// staging; the LIFO side and front drops go through
    /// [`Element::push`]. A queue whose producer and consumer share one
    /// thread takes `Queue::push_local` first.
    #[inline]
    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        if port == 0 && self.gate.load(Ordering::Relaxed) == 0 {
            return self.push_local(cx, p);
        }
        self.push_packet_general(cx, port, p)
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        // Packets outside the ring go first: MixedQueue's, or those a yank
        // kept (see `Queue::yank`). The same one load as before yanks.
        if self.lifo_len.load(Ordering::Relaxed) > 0 {
            return self.pull_lifo(cx, max);
        }
        self.pull_ring(cx, max)
    }

    fn queued(&self) -> usize {
        self.ring.len() + self.staged.get() as usize + self.lifo_len.load(Ordering::Relaxed)
    }

    /// Hot reconfiguration: the old queue's packets, in order (what does
    /// not fit a smaller capacity is dropped, counted), its drops and its
    /// high-water mark.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        let mut v = Vec::new();
        while old.ring.pop_burst(&sx.consumer(), &mut v, 256) > 0 {}
        if self.policy.lifo_input {
            // MixedQueue to MixedQueue: both sides carry over, in order;
            // what does not fit counts as dropped.
            let mut o = old.mixed.lock().unwrap_or_else(|e| e.into_inner());
            let o = &mut *o;
            let mut m = self.mixed.lock().unwrap_or_else(|e| e.into_inner());
            let cap = self.capacity();
            let from_ring = std::mem::take(&mut v);
            for (to_lifo, p) in (o.lifo.drain(..).rev().map(|p| (true, p)))
                .chain(o.fifo.drain(..).map(|p| (false, p)))
                .chain(from_ring.into_iter().map(|p| (false, p)))
            {
                if m.len() >= cap {
                    v.push(p);
                } else if to_lifo {
                    m.lifo.push_front(p);
                } else {
                    m.fifo.push_back(p);
                }
            }
            self.lifo_len.store(m.len(), Ordering::Relaxed);
        } else {
            // From a MixedQueue: its packets, head first, after the ring's.
            let mut o = old.mixed.lock().unwrap_or_else(|e| e.into_inner());
            let o = &mut *o;
            v.extend(o.lifo.drain(..).rev().chain(o.fifo.drain(..)));
            self.ring.push_burst(&sx.producer(), &mut v);
        }
        let left = v.len();
        if left > 0 {
            self.drops.fetch_add(left as u64, Ordering::Relaxed);
            sx.count_drops(left as u64);
            drop(v);
        }
        self.drops
            .fetch_add(old.drops.load(Ordering::Relaxed), Ordering::Relaxed);
        self.highwater.fetch_max(
            old.highwater
                .load(Ordering::Relaxed)
                .min(self.ring.capacity()),
            Ordering::Relaxed,
        );
    }

    fn flush(&self, cx: &mut Cx<'_>) {
        self.stages.get(cx).deferred = false;
        if !self.stages.get(cx).pkts.is_empty() {
            self.publish(cx);
        }
    }
}

impl QueueElement for Queue {
    /// One packet (a BURST 1 puller): no batch. On a queue that does not
    /// cross threads, with nothing outside the ring, the ring's
    /// single-consumer pop and one look at the full notifier; the rest
    /// (and an empty queue) in functions of their own, called last.
    #[inline]
    fn pull_packet(&self, cx: &mut Cx<'_>, port: usize) -> Option<Packet> {
        if self.lifo_len.load(Ordering::Relaxed) > 0 || self.gate.load(Ordering::Relaxed) != 0 {
            return self.pull_packet_general(cx, port);
        }
        // SAFETY: the gate is open: the consumer side is single as far as
        // this thread can see (see `push_local`; a handler's extra
        // consumer changes the modes first, which closes the gate).
        match unsafe { self.ring.pop_single_unchecked(&cx.consumer()) } {
            Popped::One(p, drained) => {
                // The count of empty pulls starts again by itself (see
                // `emptied`); `not_empty`'s crossing part does not apply.
                // (A QuickNoteQueue never opens the gate: its test for
                // the last packet is on the general path only.)
                cx.note_drained(drained);
                // As for the empty notifier in `push_local`: only a queue
                // with a full notifier ever makes it inactive.
                if !self.full.active() {
                    return self.pulled_local_wake(cx, p);
                }
                Some(p)
            }
            Popped::Empty => self.pulled_nothing(cx),
            Popped::Multi => self.pull_packet_general(cx, port),
        }
    }

    fn set_ring_modes(
        &self,
        switch: &ModeSwitch,
        multi_producer: bool,
        multi_consumer: bool,
        crossing: bool,
    ) {
        // FrontDropQueue pops from the push side too: its producers are
        // consumers as well. (MixedQueue keeps its packets off the ring.)
        let extra = self.policy.front_drop;
        let multi_consumer = multi_consumer || (extra && (crossing || multi_producer));
        self.ring.set_modes(switch, multi_producer, multi_consumer);
        self.crossing.store(crossing, Ordering::Relaxed);
        // One consumer sees every length a push reached; several might
        // each miss one another took packets from.
        self.hw_by_consumer.store(
            crossing && !multi_consumer && !self.policy.lifo_input,
            Ordering::Relaxed,
        );
        self.set_full_at();
        // After the stores above (Release): a push that sees the new gate
        // sees them before it may reopen it.
        self.close_gate();
    }

    fn set_consumer_reads_data(&self, reads: bool) {
        self.consumer_reads_data.store(reads, Ordering::Relaxed);
    }

    fn empty_notifier(&self) -> Option<&Notifier> {
        self.policy.empty_note.then_some(&self.empty)
    }

    fn full_notifier(&self) -> Option<&Notifier> {
        self.policy.full_note.then_some(&self.full)
    }

    fn dequeued(&self) -> Option<u64> {
        Some(self.ring.popped() as u64)
    }
}

#[cfg(test)]
mod highwater_tests {
    use paraclick_packet::{Batch, Packet};
    use paraclick_runtime::Router;

    fn batch(n: usize) -> Batch {
        (0..n).map(|_| Packet::new(60).unwrap()).collect()
    }

    /// `s -> q :: Queue(capacity) -> u`, with s and u on two threads (q
    /// crossing) and neither running: the test drives both sides.
    fn crossing_router(capacity: usize) -> Router {
        let mut reg = crate::registry();
        paraclick_runtime::testing::register(&mut reg);
        let r = Router::from_str(
            &format!(
                "s :: InfiniteSource(ACTIVE false) -> q :: Queue({capacity}) \
                 -> u :: Unqueue(ACTIVE false) -> Discard; StaticThreadSched(s 0, u 1)"
            ),
            &reg,
            2,
        )
        .unwrap();
        assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
        r
    }

    /// A queue whose consumer runs on another thread than its producer,
    /// with one consumer: the producer does not look at the length for
    /// the mark (only near full); the consumer notes the length before
    /// each pull and the handler adds the pushes since. (Both sides are
    /// driven here from the test's thread, through the crossing paths.)
    #[test]
    fn a_crossing_queue_with_one_consumer_keeps_the_high_water_mark_exact() {
        let r = crossing_router(100);
        let hw = || r.read_handler("q.highwater_length").unwrap();
        let pull = |n: usize| r.pull_from("q", 0, n).unwrap().map_or(0, |b| b.len());
        // A stage, published as the push returns.
        r.push_into("q", 0, batch(30)).unwrap();
        assert_eq!(hw(), "30", "pushed, not pulled yet");
        assert_eq!(pull(25), 25);
        r.push_into("q", 0, batch(10)).unwrap();
        assert_eq!(hw(), "30", "15 now, 30 seen by the pull");
        r.push_into("q", 0, batch(40)).unwrap();
        assert_eq!(hw(), "55");
        assert_eq!(pull(5), 5);
        assert_eq!(pull(100), 50);
        assert_eq!(hw(), "55", "empty now: the pull saw 55");
        // Near full the producer reads the length itself, and drops.
        r.push_into("q", 0, batch(120)).unwrap();
        assert_eq!(hw(), "100");
        assert_eq!(pull(100), 100);
        assert_eq!(hw(), "100");
        assert_eq!(r.read_handler("q.drops").unwrap(), "20");
    }

    /// A source that waits on the full notifier loses nothing at a
    /// crossing queue, whatever its burst: a stage gathers several bursts
    /// before it is published, and the stage never holds more than the
    /// ring had room for, with room for one more burst. (With a stage
    /// cut at the room alone, bursts of 12 into Queue(100) published 36
    /// packets into a room of 28.) The queue fills to its full mark and
    /// the source stops there, with nothing dropped.
    #[test]
    fn a_crossing_queue_fills_without_dropping_whatever_the_burst() {
        let mut reg = crate::registry();
        paraclick_runtime::testing::register(&mut reg);
        for burst in [1, 5, 7, 12, 20, 24, 31, 33, 45] {
            let r = Router::from_str(
                &format!(
                    "s :: InfiniteSource(BURST {burst}, LIMIT 100000) -> q :: Queue(100) \
                     -> u :: Unqueue(ACTIVE false) -> Discard; StaticThreadSched(s 0, u 1)"
                ),
                &reg,
                2,
            )
            .unwrap();
            assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
            let full_at = 100 - (burst - 1).min(50);
            let len = |r: &Router| {
                r.read_handler("q.length")
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            };
            paraclick_runtime::testing::run_until(&r, |r| len(r) >= full_at);
            assert_eq!(r.read_handler("q.drops").unwrap(), "0", "burst {burst}");
            assert!(len(&r) <= 100, "burst {burst}: {}", len(&r));
        }
    }

    /// A crossing queue's consumer keeps off the ring for a while after
    /// an empty look once its producer has shown itself busy (half a
    /// stage or more between two empty looks), never more than
    /// `CROSSING_HOLD_MAX`, and not at all behind a slow producer.
    #[test]
    fn a_crossing_consumer_holds_off_an_empty_ring_only_behind_a_busy_producer() {
        use std::time::{Duration, Instant};
        let r = crossing_router(200);
        let pull = |n: usize| r.pull_from("q", 0, n).unwrap().map_or(0, |b| b.len());
        let max = super::CROSSING_HOLD_MAX;
        // A slow producer (8 packets between empty looks): never held.
        for _ in 0..20 {
            assert_eq!(pull(64), 0);
            r.push_into("q", 0, batch(8)).unwrap();
            assert_eq!(pull(64), 8, "a slow producer's packets are taken at once");
        }
        // A busy one (a stage between looks, tens of µs apart): after an
        // empty look the packets it publishes wait for the hold's end.
        let past_hold = max + Duration::from_micros(4);
        let mut held = 0;
        for _ in 0..50 {
            assert_eq!(pull(64), 0);
            std::thread::sleep(past_hold);
            r.push_into("q", 0, batch(super::STAGE)).unwrap();
            assert_eq!(pull(64), super::STAGE, "after the hold, a look takes them");
            let looked = Instant::now();
            assert_eq!(pull(64), 0);
            r.push_into("q", 0, batch(super::STAGE)).unwrap();
            let n = pull(64);
            let early = looked.elapsed();
            if n == 0 {
                assert!(early < max, "held {early:?}, beyond the most");
                held += 1;
            }
            std::thread::sleep(past_hold);
            assert_eq!(
                n + pull(64),
                super::STAGE,
                "every packet comes out after the hold"
            );
        }
        assert!(held > 0, "a busy producer's consumer never held off");
    }

    #[test]
    fn highwater_is_exact_though_pushes_do_not_read_the_consumer_side() {
        let mut reg = crate::registry();
        paraclick_runtime::testing::register(&mut reg);
        let r = Router::from_str(
            "TestSource -> q :: Queue(10) -> Discard(ACTIVE false)",
            &reg,
            1,
        )
        .unwrap();
        let hw = || r.read_handler("q.highwater_length").unwrap();
        r.push_into("q", 0, batch(3)).unwrap();
        assert_eq!(hw(), "3");
        assert_eq!(r.pull_from("q", 0, 2).unwrap().unwrap().len(), 2);
        r.push_into("q", 0, batch(1)).unwrap();
        assert_eq!(hw(), "3", "length 2 is no new maximum");
        r.push_into("q", 0, batch(2)).unwrap();
        assert_eq!(hw(), "4");
        r.push_into("q", 0, batch(20)).unwrap();
        assert_eq!(hw(), "10");
        assert_eq!(r.read_handler("q.drops").unwrap(), "14");
    }
}

#[cfg(test)]
mod tests {
    use super::Queue;
    use paraclick_packet::{Batch, Packet};
    use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, QueueElement, Router};
    use std::cell::{Cell, RefCell};
    use std::sync::Arc;

    fn router(q: &str) -> Router {
        let mut reg = crate::registry();
        paraclick_runtime::testing::register(&mut reg);
        Router::from_str(
            &format!("TestSource -> q :: {q} -> Discard(ACTIVE false)"),
            &reg,
            1,
        )
        .unwrap()
    }

    /// Packets whose first byte is `from..to`.
    fn numbered(from: u8, to: u8) -> Batch {
        (from..to)
            .map(|i| {
                let mut p = Packet::new(60).unwrap();
                p.data_mut()[0] = i;
                p
            })
            .collect()
    }

    fn pull_all(r: &Router) -> Vec<u8> {
        let mut v = Vec::new();
        while let Some(b) = r.pull_from("q", 0, 64).unwrap() {
            v.extend(b.iter().map(|p| p.data()[0]));
        }
        v
    }

    fn h(r: &Router, name: &str) -> String {
        r.read_handler(&format!("q.{name}")).unwrap()
    }

    #[test]
    fn a_full_queue_drops_at_the_tail_and_counts_it() {
        let r = router("Queue(3)");
        r.push_into("q", 0, numbered(0, 5)).unwrap();
        assert_eq!(h(&r, "length"), "3");
        assert_eq!(h(&r, "drops"), "2");
        assert_eq!(r.total_drops(), 2, "counted as the router's drops");
        assert_eq!(pull_all(&r), vec![0, 1, 2], "the oldest, in order");
        assert_eq!(h(&r, "length"), "0");
    }

    #[test]
    fn a_front_drop_queue_drops_the_oldest() {
        let r = router("FrontDropQueue(3)");
        for i in 0..5 {
            r.push_into("q", 0, numbered(i, i + 1)).unwrap();
        }
        assert_eq!(h(&r, "drops"), "2");
        assert_eq!(r.total_drops(), 2);
        assert_eq!(pull_all(&r), vec![2, 3, 4]);
    }

    /// A batch larger than the queue keeps its newest packets: the queued
    /// ones and the batch's oldest are dropped, counted once each.
    #[test]
    fn a_front_drop_queue_keeps_the_newest_of_a_batch_larger_than_it() {
        let r = router("FrontDropQueue(3)");
        r.push_into("q", 0, numbered(0, 2)).unwrap();
        r.push_into("q", 0, numbered(2, 7)).unwrap();
        assert_eq!(h(&r, "drops"), "4");
        assert_eq!(r.total_drops(), 4);
        assert_eq!(h(&r, "length"), "3");
        assert_eq!(pull_all(&r), vec![4, 5, 6]);
    }

    #[test]
    fn reset_drops_what_is_queued_and_counts_it() {
        let r = router("Queue(10)");
        r.push_into("q", 0, numbered(0, 4)).unwrap();
        r.write_handler("q.reset", "").unwrap();
        assert_eq!(h(&r, "length"), "0");
        assert_eq!(h(&r, "drops"), "4");
        assert_eq!(r.total_drops(), 4);
        assert!(pull_all(&r).is_empty());
        r.write_handler("q.reset_counts", "").unwrap();
        assert_eq!(h(&r, "drops"), "0");
    }

    #[test]
    fn the_capacity_handler_changes_where_drops_begin() {
        let r = router("Queue(2)");
        r.write_handler("q.capacity", "4").unwrap();
        assert_eq!(h(&r, "capacity"), "4");
        r.push_into("q", 0, numbered(0, 6)).unwrap();
        assert_eq!(h(&r, "length"), "4");
        assert_eq!(h(&r, "drops"), "2");
        let e = r.write_handler("q.capacity", "many").unwrap_err();
        assert!(e.starts_with("q.capacity: "), "{e}");
        assert_eq!(h(&r, "capacity"), "4", "a bad value changes nothing");
        assert_eq!(h(&r, "config"), "4", "the positional capacity");
    }

    #[test]
    fn a_lower_capacity_drops_the_excess_and_the_config_shows_it() {
        // Click's Queue: writing `capacity` reconfigures the queue.
        let r = router("Queue");
        r.push_into("q", 0, numbered(0, 6)).unwrap();
        r.write_handler("q.capacity", "2").unwrap();
        assert_eq!(h(&r, "length"), "2");
        assert_eq!(h(&r, "drops"), "4");
        assert_eq!(r.total_drops(), 4);
        assert_eq!(h(&r, "config"), "CAPACITY 2");
        // Room again once it is raised: the queue takes packets.
        r.write_handler("q.capacity", "10").unwrap();
        assert_eq!(h(&r, "config"), "CAPACITY 10");
        r.push_into("q", 0, numbered(6, 9)).unwrap();
        assert_eq!(pull_all(&r), vec![4, 5, 6, 7, 8]);
    }

    #[test]
    fn the_notifiers_follow_the_fill() {
        let r = router("Queue(2)");
        let q = r.element::<Queue>("q").unwrap();
        let (empty, full) = (q.empty_notifier().unwrap(), q.full_notifier().unwrap());
        assert!(full.active(), "room");
        r.push_into("q", 0, numbered(0, 2)).unwrap();
        assert!(empty.active(), "holds packets");
        assert!(!full.active(), "full: no room");
        assert_eq!(pull_all(&r), vec![0, 1]);
        assert!(full.active(), "room again");
    }

    thread_local! {
        /// What a `Splice` does between the two parts of a batch.
        static BETWEEN: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
        /// A `Splice` sends the second part one packet at a time.
        static ONE_BY_ONE: Cell<bool> = const { Cell::new(false) };
    }

    /// Pushes the first three packets of a batch on, runs `BETWEEN`, then
    /// pushes the rest.
    struct Splice;

    impl Element for Splice {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
            let rest = batch.split_off(3);
            cx.push(0, batch);
            if let Some(f) = BETWEEN.with(|b| b.borrow_mut().take()) {
                f();
            }
            if ONE_BY_ONE.with(|o| o.get()) {
                for p in rest {
                    cx.push_packet(0, p);
                }
            } else {
                cx.push(0, rest);
            }
        }
    }

    fn make_splice(_: &mut ConfigCx<'_>) -> Result<Splice, String> {
        Ok(Splice)
    }

    #[test]
    fn a_push_after_crossing_ends_does_not_overtake_what_was_staged() {
        // The source's task on thread 0, the puller's on thread 1: the
        // queue crosses threads, so thread 0 stages what it pushes.
        let mut reg = crate::registry();
        reg.register(ClassSpec::element("Splice", "1/1", "h", make_splice));
        let r = Arc::new(
            Router::from_str(
                "src :: InfiniteSource(ACTIVE false) -> sp :: Splice -> q :: Queue(100)
                   -> uq :: Unqueue(ACTIVE false) -> Discard",
                &reg,
                2,
            )
            .unwrap(),
        );
        r.move_task("src", 0, 0).unwrap();
        for one_by_one in [false, true] {
            r.move_task("uq", 0, 1).unwrap();
            assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
            // Between the parts, with three packets staged on thread 0,
            // a task move puts producer and consumer on one thread: the
            // queue no longer crosses, and the second part is pushed
            // straight into the ring (batch or single-packet path).
            let mover = r.clone();
            BETWEEN.with(|b| {
                *b.borrow_mut() = Some(Box::new(move || {
                    let q = mover.element::<Queue>("q").unwrap();
                    assert_eq!((q.ring().len(), q.len()), (0, 3), "three staged");
                    mover.move_task("uq", 0, 0).unwrap();
                    assert!(mover.crossing_queues().is_empty());
                }))
            });
            ONE_BY_ONE.with(|o| o.set(one_by_one));
            r.push_into("sp", 0, numbered(0, 8)).unwrap();
            assert!(BETWEEN.with(|b| b.borrow().is_none()), "the move ran");
            assert_eq!(
                pull_all(&r),
                (0..8).collect::<Vec<u8>>(),
                "arrival order (second part one by one: {one_by_one})"
            );
        }
    }

    thread_local! {
        /// The first bytes of the packets a `PullOne` took.
        static PULLED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    /// Pulls one packet at a time from its input (`Cx::pull_packet`, a
    /// BURST 1 puller's way), as many times as the batch pushed into it
    /// is long; keeps what it took in `PULLED`.
    struct PullOne;

    impl Element for PullOne {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
            for _ in 0..batch.len() {
                if let Some(p) = cx.pull_packet(0) {
                    PULLED.with(|v| v.borrow_mut().push(p.data()[0]));
                }
            }
        }
    }

    fn make_pull_one(_: &mut ConfigCx<'_>) -> Result<PullOne, String> {
        Ok(PullOne)
    }

    /// Pushes a batch on one packet at a time (`Cx::push_packet`, a BURST
    /// 1 source's way).
    struct PushOne;

    impl Element for PushOne {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
            for p in batch {
                cx.push_packet(0, p);
            }
        }
    }

    fn make_push_one(_: &mut ConfigCx<'_>) -> Result<PushOne, String> {
        Ok(PushOne)
    }

    /// `TestSource -> sp :: PushOne -> q :: {q} -> po :: PullOne`, one
    /// thread: the queue's single-packet paths on one thread.
    fn one_by_one_router(q: &str) -> Router {
        let mut reg = crate::registry();
        paraclick_runtime::testing::register(&mut reg);
        reg.register(ClassSpec::element("PushOne", "1/1", "h", make_push_one));
        reg.register(ClassSpec::element("PullOne", "1/0", "l", make_pull_one));
        Router::from_str(
            &format!("TestSource -> sp :: PushOne -> q :: {q} -> po :: PullOne"),
            &reg,
            1,
        )
        .unwrap()
    }

    /// `n` single-packet pulls by `po`; what they took.
    fn pull_one_by_one(r: &Router, n: usize) -> Vec<u8> {
        PULLED.with(|v| v.borrow_mut().clear());
        r.push_into("po", 0, numbered(0, n as u8)).unwrap();
        PULLED.with(|v| std::mem::take(&mut *v.borrow_mut()))
    }

    #[test]
    fn single_packets_keep_order_high_water_drops_and_notifiers() {
        let r = one_by_one_router("Queue(4)");
        let q = r.element::<Queue>("q").unwrap();
        let (empty, full) = (q.empty_notifier().unwrap(), q.full_notifier().unwrap());
        // Six packets one at a time: each of the first four is a new
        // high-water mark, the fourth fills the queue, the last two are
        // dropped at the tail.
        r.push_into("sp", 0, numbered(0, 6)).unwrap();
        assert_eq!(h(&r, "highwater_length"), "4");
        assert_eq!((h(&r, "length"), h(&r, "drops")), ("4".into(), "2".into()));
        assert_eq!(r.total_drops(), 2);
        assert!(!full.active(), "full");
        assert_eq!(pull_one_by_one(&r, 1), vec![0]);
        assert!(full.active(), "room again");
        assert_eq!(pull_one_by_one(&r, 4), vec![1, 2, 3], "then empty");
        // Empty pulls in a row put the puller to sleep; a packet pushed
        // alone wakes it.
        pull_one_by_one(&r, super::IDLE_PULLS_BEFORE_SLEEP as usize);
        assert!(!empty.active(), "asleep on the empty queue");
        r.push_into("sp", 0, numbered(10, 12)).unwrap();
        assert!(empty.active(), "woken by the push");
        assert_eq!(pull_one_by_one(&r, 3), vec![10, 11]);
        assert_eq!(h(&r, "highwater_length"), "4");
    }

    #[test]
    fn a_pull_that_takes_a_packet_starts_the_count_of_empty_pulls_again() {
        let r = one_by_one_router("Queue(4)");
        let q = r.element::<Queue>("q").unwrap();
        let empty = q.empty_notifier().unwrap();
        let below = super::IDLE_PULLS_BEFORE_SLEEP as usize - 1;
        assert!(pull_one_by_one(&r, below).is_empty());
        assert!(empty.active(), "not yet");
        r.push_into("q", 0, numbered(0, 1)).unwrap();
        assert_eq!(pull_one_by_one(&r, 1), vec![0]);
        assert!(pull_one_by_one(&r, below).is_empty());
        assert!(empty.active(), "the count started again at the packet");
        assert!(pull_one_by_one(&r, 1).is_empty());
        assert!(!empty.active(), "so many empty pulls in a row: asleep");
    }

    #[test]
    fn a_quick_note_queue_notifies_empty_as_its_last_packet_leaves() {
        // Click's QuickNoteQueue-01: a QuickNoteQueue's empty signal goes
        // inactive as the last packet leaves; a Queue's waits for a few
        // empty pulls.
        for (class, asleep) in [("QuickNoteQueue(4)", true), ("Queue(4)", false)] {
            let r = one_by_one_router(class);
            let q = r.element::<Queue>("q").unwrap();
            let empty = q.empty_notifier().unwrap();
            r.push_into("sp", 0, numbered(0, 2)).unwrap();
            assert_eq!(pull_one_by_one(&r, 1), vec![0]);
            assert!(empty.active(), "{class}: one packet left");
            // The pull that takes the last packet: a QuickNoteQueue's
            // pullers need not pull again to learn it is empty.
            assert_eq!(pull_one_by_one(&r, 1), vec![1]);
            assert_eq!(!empty.active(), asleep, "{class}: took the last packet");
            assert!(pull_one_by_one(&r, 1).is_empty());
            assert_eq!(!empty.active(), asleep, "{class}: one empty pull");
            r.push_into("sp", 0, numbered(2, 3)).unwrap();
            assert!(empty.active(), "{class}: woken by the push");
        }
    }

    #[test]
    fn a_hot_swap_carries_the_packets_in_order_and_the_drops() {
        let old = router("Queue(10)");
        old.push_into("q", 0, numbered(0, 12)).unwrap();
        assert_eq!(h(&old, "drops"), "2");
        let new = router("Queue(4)");
        new.take_state_from(&old).unwrap();
        // Four fit; six more are dropped, counted on top of the old two.
        assert_eq!(h(&new, "length"), "4");
        assert_eq!(h(&new, "drops"), "8");
        assert_eq!(pull_all(&new), vec![0, 1, 2, 3]);
    }
}

#[cfg(test)]
mod consumer_side_tests {
    use paraclick_runtime::Router;

    /// The router tells each queue whether an element on its consumer
    /// side (what pulls from it, what that pushes to, up to the next
    /// queue) reads packet data: a crossing consumer then prefetches the
    /// packets' data lines, not only their buffer headers.
    #[test]
    fn the_router_says_whether_a_queues_consumer_side_reads_data() {
        let reg = crate::registry();
        let src = "src :: InfiniteSource(LIMIT 1, ACTIVE false)";
        for (graph, want) in [
            // IPFilter reads headers, behind a metadata-only Unqueue.
            (
                "q :: Queue -> Unqueue -> IPFilter(allow all) -> Discard",
                vec![("q", true)],
            ),
            // Counter and Discard read only buffer headers.
            ("q :: Queue -> Counter -> Discard", vec![("q", false)]),
            (
                "q :: Queue -> Unqueue -> Counter -> Discard",
                vec![("q", false)],
            ),
            // A pull Counter between the queue and its puller, and a
            // reader on the second of a Tee's outputs.
            (
                "q :: Queue -> Counter -> Unqueue -> t :: Tee -> Discard;
                 t[1] -> IPFilter(allow all) -> Discard",
                vec![("q", true)],
            ),
            // The walk stops at the next queue: the reader behind q2 is
            // q2's consumer, not q's.
            (
                "q :: Queue -> Unqueue -> q2 :: Queue -> Unqueue
                   -> IPFilter(allow all) -> Discard",
                vec![("q", false), ("q2", true)],
            ),
            // What feeds the queue reads data, its consumer does not.
            (
                "IPFilter(allow all) -> q :: Queue -> Unqueue -> Discard",
                vec![("q", false)],
            ),
        ] {
            let conf = format!("{src} -> {graph};");
            let r = Router::from_str(&conf, &reg, 2).unwrap();
            for (q, reads) in want {
                assert_eq!(r.consumer_reads_data(q), Some(reads), "{q} in {graph}");
            }
            assert_eq!(r.consumer_reads_data("src"), None, "not a queue");
        }
    }
}
