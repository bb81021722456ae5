//! # CPUQueue
//!
//! CPUQueue(\[CAPACITY])
//!
//! Stores packets in first-in-first-out queues, one per thread.
//!
//! Ports: 1 input (push), 1 or more outputs (pull). Processing: push to
//! pull.
//!
//! Each worker thread has its own queue: a packet pushed on thread T goes
//! into thread T's queue, or is dropped (counted) if that queue already
//! holds CAPACITY packets. A pull takes packets from the queues in turn:
//! each pull takes from the next thread's queue that has packets (up to a
//! burst from that one queue), starting after the queue the previous pull
//! took from. Packets from one thread leave in the order they came;
//! packets from different threads interleave.
//!
//! The queues' ring modes (single or multi producer and consumer) come from
//! the thread plan, as a Queue's.
//!
//! Notification: CPUQueue has an empty notifier, as Click's queues: when a
//! pull finds every thread's queue empty it goes inactive, so pull tasks
//! downstream (Unqueue, ...) sleep instead of polling, and the next push
//! on any thread wakes them (the push fences before reading the signal
//! when the pusher and the puller may be on different threads; the pull
//! fences before re-checking the queues). It has no full notifier: sources
//! upstream are not paused when a thread's queue fills.
//!
//! Arguments:
//! - `CAPACITY` (integer, default 128, at most 16777216): each thread's
//!   queue's capacity.
//!
//! Handlers:
//! - `capacity` (read): CAPACITY.
//! - `drops` (read): packets dropped because their thread's queue was
//!   full.
//! - `length` (read, paraclick's): packets in all the queues.
//!
//! Hot reconfiguration (`-R`, `hotconfig`): a CPUQueue of the same name
//! takes the old one's packets (each thread's into the same thread's
//! queue, if it has as many threads; what does not fit is dropped,
//! counted) and its drop count.
//!
//! Example:
//!
//!     FromDevice(eth0, QUEUE 0) -> q :: CPUQueue(256);
//!     FromDevice(eth0, QUEUE 1) -> q;
//!     q -> ToDevice(eth1);

use paraclick_runtime::prelude::*;
use paraclick_runtime::ring::{ModeSwitch, Ring};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

pub struct CPUQueue {
    /// One ring per worker thread.
    rings: Box<[Ring<Packet>]>,
    capacity: usize,
    drops: AtomicU64,
    /// The ring the next pull starts from.
    next: AtomicUsize,
    /// Active while some ring may hold packets.
    empty: Notifier,
    /// Whether producers and consumers may be on different threads (from
    /// the thread plan): pushes then fence before waking.
    crossing: AtomicBool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::queue("CPUQueue", "1/1-", "h/l", make)
        .shared("a queue: one FIFO for all flows")
        .metadata_only()
        .drop_reasons(super::queue::REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CPUQueue, String> {
    let mut a = cx.args();
    let capacity = a.read_p::<usize>("CAPACITY").unwrap_or(128);
    a.complete()?;
    super::queue::check_capacity(capacity)?;
    // Until the thread plan says otherwise (set_ring_modes), assume several
    // producers and consumers when there are several threads.
    let multi = cx.nthreads > 1;
    Ok(CPUQueue {
        rings: (0..cx.nthreads.max(1))
            .map(|_| Ring::try_with_room(capacity, capacity, multi, multi))
            .collect::<Result<_, _>>()?,
        capacity,
        drops: AtomicU64::new(0),
        next: AtomicUsize::new(0),
        empty: Notifier::new(),
        crossing: AtomicBool::new(multi),
    })
}

impl CPUQueue {
    /// Packets in every thread's queue.
    pub fn len(&self) -> usize {
        self.rings.iter().map(|r| r.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Packets in thread `t`'s queue.
    pub fn thread_len(&self, t: usize) -> usize {
        self.rings.get(t).map_or(0, |r| r.len())
    }

    /// The calling thread's ring.
    #[inline]
    fn ring_of(&self, cx: &Cx<'_>) -> &Ring<Packet> {
        let t = cx.thread();
        &self.rings[t.min(self.rings.len() - 1)]
    }
}

impl Element for CPUQueue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("capacity", |e, _| e.capacity.to_string()),
        Handler::read("drops", |e, _| e.drops.load(Ordering::Relaxed).to_string()),
        Handler::read("length", |e, _| e.len().to_string()),
    ];

    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        let n = batch.len();
        self.ring_of(cx).push_burst(&cx.producer(), batch.vec_mut());
        let left = batch.len();
        if left < n {
            // Packets went in: wake pull tasks asleep on an empty queue.
            if self.crossing.load(Ordering::Relaxed) {
                self.empty.wake(cx);
            } else {
                self.empty.wake_local(cx);
            }
        }
        if left > 0 {
            self.drops.fetch_add(left as u64, Ordering::Relaxed);
            cx.drop_batch_for(super::queue::FULL, batch);
        }
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let n = self.rings.len();
        let start = self.next.load(Ordering::Relaxed) % n;
        for i in 0..n {
            let k = (start + i) % n;
            let ring = &self.rings[k];
            if ring.is_empty() {
                continue;
            }
            let mut b = Batch::new();
            if ring.pop_burst(&cx.consumer(), b.vec_mut(), max) > 0 {
                self.next.store((k + 1) % n, Ordering::Relaxed);
                return Some(b);
            }
        }
        // Every ring was empty: pull tasks may sleep unless a push on some
        // thread came meanwhile (re-checked after the notifier's fence).
        self.empty
            .sleep(cx, || self.rings.iter().all(|r| r.is_empty()));
        None
    }

    fn queued(&self) -> usize {
        self.len()
    }

    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        let mut left = 0;
        for (i, r) in old.rings.iter().enumerate() {
            let mut v = Vec::new();
            while r.pop_burst(&sx.consumer(), &mut v, 256) > 0 {}
            let mine = &self.rings[i.min(self.rings.len() - 1)];
            mine.push_burst(&sx.producer(), &mut v);
            left += v.len();
        }
        if left > 0 {
            self.drops.fetch_add(left as u64, Ordering::Relaxed);
            sx.count_drops(left as u64);
        }
        self.drops
            .fetch_add(old.drops.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

impl QueueElement for CPUQueue {
    /// Pull tasks downstream sleep on this (and do not look past it).
    fn empty_notifier(&self) -> Option<&Notifier> {
        Some(&self.empty)
    }

    fn set_ring_modes(
        &self,
        switch: &ModeSwitch,
        multi_producer: bool,
        multi_consumer: bool,
        crossing: bool,
    ) {
        // Thread T only pushes into ring T, so each ring has at most the
        // plan's producers; the plan's modes are safe for every ring.
        for r in self.rings.iter() {
            r.set_modes(switch, multi_producer, multi_consumer);
        }
        self.crossing.store(crossing, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::CPUQueue;
    use crate::test_kit::*;
    use paraclick_runtime::testing::TestSink;
    use paraclick_runtime::Router;

    #[test]
    fn one_thread_is_a_fifo_with_capacity() {
        let h = harness("CPUQueue(3) -> u :: Unqueue(ACTIVE false) -> Discard", 0);
        h.push(0, (0..5u8).map(|i| pkt(&[i])).collect());
        assert_eq!(h.read("length").unwrap(), "3");
        assert_eq!(h.read("drops").unwrap(), "2");
        assert_eq!(h.read("capacity").unwrap(), "3");
        assert_eq!(h.drops(), 2);
        let q = h.router.element::<CPUQueue>("e").unwrap();
        assert_eq!(q.thread_len(0), 3);
    }

    #[test]
    fn default_capacity_and_bad_configurations() {
        let h = harness("CPUQueue -> u :: Unqueue(ACTIVE false) -> Discard", 0);
        assert_eq!(h.read("capacity").unwrap(), "128");
        for (bad, want) in [
            ("CPUQueue(0)", "e :: CPUQueue: CAPACITY must be at least 1"),
            (
                "CPUQueue(-1)",
                "e :: CPUQueue: CAPACITY: expected unsigned integer",
            ),
            ("CPUQueue(1, 2)", "e :: CPUQueue: too many arguments ('2')"),
            (
                "CPUQueue(x)",
                "e :: CPUQueue: CAPACITY: expected unsigned integer",
            ),
        ] {
            assert_err(
                try_harness(
                    &format!("{bad} -> u :: Unqueue(ACTIVE false) -> Discard"),
                    0,
                ),
                want,
            );
        }
    }

    /// Two sources on two threads push marked packets; each thread's
    /// packets sit in that thread's queue; then a BURST 1 Unqueue pulls
    /// them round-robin: A, B, A, B, ... with each side in its order.
    #[test]
    fn per_thread_queues_pulled_round_robin() {
        let conf =
            "s0 :: InfiniteSource(\\<aa>, LIMIT 6, BURST 1, STOP false) -> q :: CPUQueue(100); \
                    s1 :: InfiniteSource(\\<bb>, LIMIT 4, BURST 1, STOP false) -> q; \
                    q -> u :: Unqueue(1, ACTIVE false) -> o :: TestSink; \
                    StaticThreadSched(s0 0, s1 1, u 0); \
                    DriverManager(wait 0.3s, write u.active true, wait 0.3s, stop)";
        let router = Router::from_str(conf, &reg(), 2).unwrap();
        router.run();
        let out = router.element::<TestSink>("o").unwrap().take();
        let tags: Vec<u8> = out.iter().map(|p| p.data()[0]).collect();
        assert_eq!(
            tags,
            [0xaa, 0xbb, 0xaa, 0xbb, 0xaa, 0xbb, 0xaa, 0xbb, 0xaa, 0xaa]
        );
        assert_eq!(router.read_handler("q.length").unwrap(), "0");
    }

    #[test]
    fn pushes_go_to_the_pushing_threads_queue() {
        let conf =
            "s0 :: InfiniteSource(\\<aa>, LIMIT 5, BURST 2, STOP false) -> q :: CPUQueue(3); \
                    s1 :: InfiniteSource(\\<bb>, LIMIT 2, BURST 2, STOP false) -> q; \
                    q -> u :: Unqueue(ACTIVE false) -> Discard; \
                    StaticThreadSched(s0 0, s1 1, u 1); \
                    DriverManager(wait 0.3s, stop)";
        let router = Router::from_str(conf, &reg(), 2).unwrap();
        router.run();
        let q = router.element::<CPUQueue>("q").unwrap();
        assert_eq!(q.thread_len(0), 3, "thread 0: 5 pushed, capacity 3");
        assert_eq!(q.thread_len(1), 2);
        assert_eq!(router.read_handler("q.drops").unwrap(), "2");
        assert_eq!(router.total_drops(), 2);
    }

    #[test]
    fn a_hot_swap_carries_the_packets_and_drops() {
        let conf = |cap: usize| format!("CPUQueue({cap}) -> u :: Unqueue(ACTIVE false) -> Discard");
        let old = harness(&conf(5), 0);
        old.push(0, (0..7u8).map(|i| pkt(&[i])).collect());
        assert_eq!(old.read("drops").unwrap(), "2");
        // A smaller queue: what does not fit is dropped, and counted.
        let new = harness(&conf(3), 0);
        new.router.take_state_from(&old.router).unwrap();
        assert_eq!(new.read("length").unwrap(), "3");
        assert_eq!(new.read("drops").unwrap(), "4");
        let b = new.router.pull_from("e", 0, 10).unwrap().unwrap();
        let first: Vec<u8> = b.iter().map(|p| p.data()[0]).collect();
        assert_eq!(first, vec![0, 1, 2], "oldest first, in order");
    }
}
