//! # Queue
//!
//! Queue([CAPACITY])
//!
//! Stores packets in a first-in-first-out queue: push input, pull output.
//!
//! Ports: 1 input (push), 1 output (pull).
//!
//! Arguments:
//! - `CAPACITY` (integer, default 1000): the most packets the queue holds.
//!   A packet arriving at a full queue is dropped (tail drop) and counted.
//!
//! The queue is a bounded ring with separate producer and consumer cache
//! lines and burst transfers (DPDK rte_ring style). The runtime chooses its
//! modes from the thread plan: when one thread pushes into it and one pulls
//! from it, neither side uses compare-and-swap; a side used by several
//! threads claims slots with one compare-and-swap per burst. The choice is
//! made again, safely, whenever the scheduler moves a task.
//!
//! When the thread plan puts a consumer on another thread than a producer,
//! each producer thread gathers up to 16 packets before publishing them in
//! one ring operation (at once when the ring is nearly full), and publishes
//! what it holds when it runs out of work, within 16 passes over its tasks
//! otherwise, and when it stops. `length` counts gathered packets too.
//!
//! Handlers:
//! - `length` (read): packets in the queue.
//! - `highwater_length` (read): the most packets the queue has held.
//! - `drops` (read): packets dropped because the queue was full.
//! - `capacity` (read): the capacity.
//! - `reset_counts` (write): resets `drops` and `highwater_length`.
//! - `reset` (write): drops every queued packet (counted in `drops`).
//!
//! Hot reconfiguration (`-R`, `hotconfig`): a Queue of the same name in the
//! new configuration takes the old one's packets in order (those beyond a
//! smaller capacity are dropped, counted), its `drops` and its
//! `highwater_length`.
//!
//! Example:
//!
//!     FromDump(in.pcap) -> q :: Queue(200) -> Unqueue -> Discard;

use paraclick_packet::Packet;
use paraclick_runtime::ring::{Items, ModeSwitch, Producer, Ring};
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Counter, Cx, Element, Handler, PerThread, StateCx,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Most packets a producer gathers before publishing them to a ring that
/// another thread pulls from.
pub const STAGE: usize = 16;

pub struct Queue {
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
    stages: PerThread<Stage>,
    /// Packets staged, per thread (for `length` and the conservation check).
    staged: Counter,
}

#[derive(Default)]
struct Stage {
    pkts: Vec<Packet>,
    /// A flush of this stage is pending with the thread ([`Cx::defer_flush`]).
    deferred: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Queue", "1/1", "h/l", make)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Queue, String> {
    let mut a = cx.args();
    let cap = a.read_p::<usize>("CAPACITY").unwrap_or(1000);
    a.complete()?;
    if cap == 0 {
        return Err("CAPACITY must be at least 1".into());
    }
    let single = cx.nthreads == 1;
    Ok(Queue::new(cap, !single, !single, cx.nthreads))
}

impl Queue {
    pub fn new(
        capacity: usize,
        multi_producer: bool,
        multi_consumer: bool,
        nthreads: usize,
    ) -> Queue {
        Queue {
            ring: Ring::with_modes(capacity, multi_producer, multi_consumer),
            drops: AtomicU64::new(0),
            highwater: AtomicUsize::new(0),
            crossing: AtomicBool::new(false),
            stages: PerThread::new(nthreads, |_| Stage::default()),
            staged: Counter::new(nthreads),
        }
    }

    /// Packets in the queue: in the ring and staged by producers.
    pub fn len(&self) -> usize {
        (self.ring.len() + self.staged.get() as usize).min(self.ring.capacity())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves what fits of `items` into the ring, keeping the high-water
    /// mark; returns how many did not fit.
    #[inline]
    fn enqueue(&self, p: &Producer<'_>, items: &mut impl Items<Packet>) -> usize {
        self.ring.push_burst(p, items);
        // The high-water mark without reading the consumer's cache line on
        // every push: the producer-side bound can only overstate the
        // length, so the exact length is read only when it might be a new
        // maximum.
        let hw = self.highwater.load(Ordering::Relaxed);
        if self.ring.len_upper_bound() > hw {
            let len = self.ring.len_fresh();
            if len > hw {
                self.highwater.fetch_max(len, Ordering::Relaxed);
            }
        }
        items.len()
    }

    /// Publishes this thread's staged packets; what does not fit is
    /// dropped, counted.
    fn publish(&self, cx: &mut Cx<'_>) {
        let t = cx.thread();
        let mut pkts = std::mem::take(&mut self.stages.get(cx).pkts);
        let n = pkts.len();
        let left = self.enqueue(&cx.producer(), &mut pkts);
        self.staged.sub(t, n as u64);
        if left > 0 {
            self.drops.fetch_add(left as u64, Ordering::Relaxed);
            for p in pkts.drain(..) {
                cx.drop_packet(p);
            }
        }
        self.stages.get(cx).pkts = pkts;
    }

    /// Gathers `batch` in this thread's stage, publishing when the stage
    /// is full or the ring may be close to full (so drops happen when they
    /// would without staging); otherwise the thread publishes it soon (see
    /// [`Cx::defer_flush`]).
    fn stage(&self, cx: &mut Cx<'_>, mut batch: Batch) {
        let t = cx.thread();
        let n = batch.len();
        let cap = self.ring.capacity();
        let mut room = cap - self.ring.len_upper_bound();
        if room < STAGE {
            // The bound lags the consumer: look at the ring itself.
            room = cap - self.ring.len_fresh();
        }
        let s = self.stages.get(cx);
        s.pkts.extend(batch.drain());
        let full = s.pkts.len() >= STAGE.min(room);
        let defer = !full && !s.deferred;
        s.deferred |= defer;
        self.staged.add(t, n as u64);
        if full {
            self.publish(cx);
        } else if defer {
            cx.defer_flush();
        }
    }

    pub fn ring(&self) -> &Ring<Packet> {
        &self.ring
    }
}

impl Element for Queue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("length", |e, _| e.len().to_string()),
        Handler::read("highwater_length", |e, _| {
            e.highwater.load(Ordering::Relaxed).to_string()
        }),
        Handler::read("drops", |e, _| e.drops.load(Ordering::Relaxed).to_string()),
        Handler::read("capacity", |e, _| e.ring.capacity().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.drops.store(0, Ordering::Relaxed);
            e.highwater.store(e.ring.len(), Ordering::Relaxed);
            Ok(())
        }),
        Handler::write("reset", |e, _, hx| {
            // A handler may run on any thread: it drains as an extra
            // consumer through the runtime's audited path, never behind the
            // planned consumer's back.
            let v = hx.as_extra_consumer(|c| {
                let mut v = Vec::new();
                while e.ring.pop_burst(c, &mut v, 256) > 0 {}
                v
            });
            e.drops.fetch_add(v.len() as u64, Ordering::Relaxed);
            hx.count_drops(v.len() as u64);
            Ok(())
        }),
    ];

    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        // Staging gathers small batches; a batch as large as a stage goes
        // straight in (unless packets staged earlier must go first).
        if self.crossing.load(Ordering::Relaxed)
            && (batch.len() < STAGE || !self.stages.get(cx).pkts.is_empty())
        {
            return self.stage(cx, batch);
        }
        if self.enqueue(&cx.producer(), batch.vec_mut()) > 0 {
            self.drops.fetch_add(batch.len() as u64, Ordering::Relaxed);
            cx.drop_batch(batch);
        }
    }

    #[inline]
    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        if self.crossing.load(Ordering::Relaxed) {
            return self.push(cx, port, Batch::one(p));
        }
        let mut item = Some(p);
        self.enqueue(&cx.producer(), &mut item);
        if let Some(p) = item {
            self.drops.fetch_add(1, Ordering::Relaxed);
            cx.drop_packet(p);
        }
    }

    #[inline]
    fn pull_packet(&self, cx: &mut Cx<'_>, _port: usize) -> Option<Packet> {
        self.ring.pop(&cx.consumer())
    }

    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        // An empty queue (a puller polling) costs two loads, no batch.
        if self.ring.is_empty() {
            return None;
        }
        let mut b = Batch::new();
        if self.ring.pop_burst(&cx.consumer(), b.vec_mut(), max) == 0 {
            return None;
        }
        Some(b)
    }

    fn queued(&self) -> usize {
        self.ring.len() + self.staged.get() as usize
    }

    fn set_ring_modes(
        &self,
        switch: &ModeSwitch,
        multi_producer: bool,
        multi_consumer: bool,
        crossing: bool,
    ) {
        self.ring.set_modes(switch, multi_producer, multi_consumer);
        self.crossing.store(crossing, Ordering::Relaxed);
    }

    /// Hot reconfiguration: the old queue's packets, in order (what does
    /// not fit a smaller capacity is dropped, counted), its drops and its
    /// high-water mark.
    fn take_state(&self, old: &Self, sx: &mut StateCx<'_>) {
        let mut v = Vec::new();
        while old.ring.pop_burst(&sx.consumer(), &mut v, 256) > 0 {}
        let left = self.enqueue(&sx.producer(), &mut v);
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

#[cfg(test)]
mod highwater_tests {
    use paraclick_packet::{Batch, Packet};
    use paraclick_runtime::Router;

    fn batch(n: usize) -> Batch {
        (0..n).map(|_| Packet::new(60).unwrap()).collect()
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
