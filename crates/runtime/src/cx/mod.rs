//! The contexts an element's calls receive, one module each but this
//! one's:
//!
//! - [`ConfigCx`] (`config.rs`): the class's constructor.
//! - [`InitCx`] (`init.rs`): `initialize`.
//! - [`Cx`] (here): every data-path call (push, pull, tasks, timers,
//!   flush), one per worker thread.
//! - [`HandlerCx`] (`handler.rs`): handler reads and writes, on any
//!   thread.
//! - [`StateCx`] (`state.rs`): `take_state` in a hot reconfiguration.

mod config;
mod handler;
mod init;
mod state;
#[cfg(test)]
mod tests;

pub(crate) use config::set_landmark;
pub use config::ConfigCx;
pub use handler::HandlerCx;
pub use init::InitCx;
pub use state::StateCx;

use crate::core::Core;
use crate::element::Hop;
use paraclick_packet::{Batch, Packet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A worker thread's context: which thread this is, which element is
/// running, and the way out of it (push to an output, pull from an input,
/// drop, timers, stop). Exactly one exists per thread index at a time.
pub struct Cx<'r> {
    pub(crate) core: &'r Core,
    pub(crate) thread: usize,
    pub(crate) current: usize,
    /// Profiling: cycles spent in callees of the running element.
    pub(crate) child: u64,
    /// Profiling: the task being run, while its element is the running one.
    pub(crate) task: Option<usize>,
    /// Profiling: the running task has pulled: its first hop is a pull,
    /// whose packets are its count, so what it then pushes on is not
    /// counted again (an Unqueue's packets were counted twice, once
    /// pulled and once pushed, doubling the consumer batch the model
    /// reads the queue hop at).
    pub(crate) pulled: bool,
    /// Profiling: the source (an element without inputs) whose timer is
    /// running, while it is the running one: charged the packets of its
    /// first hop, as a task is.
    pub(crate) sender: Option<usize>,
    /// Elements that asked to be flushed ([`Cx::defer_flush`]).
    deferred: Vec<usize>,
    /// The earliest time (ns since the epoch) a task without work said it
    /// will have some ([`Cx::wake_at`]) during the current pass.
    pub(crate) wake_ns: u64,
    /// Until when (cycles) a task that found no work keeps off on purpose
    /// ([`Cx::holding_until`]); a time in the past: none.
    pub(crate) hold_until: u64,
    /// How many elements gave a [`Cx::wake_at`] during the current pass
    /// (one in a row counted once), and the last to give one: a worker
    /// whose every runnable task said when it will have work may sleep
    /// until then (see `crate::sched`).
    pub(crate) wake_hints: usize,
    pub(crate) wake_hint_elem: usize,
    /// How many tasks the worker's current pass skipped asleep (see
    /// `crate::sched`).
    pub(crate) asleep: usize,
    /// The descriptors tasks without work said they will have some on
    /// ([`Cx::wake_when_readable`]) during the current pass: valid only
    /// while `wake_hints > 0` (the pass's first hint empties it, so a
    /// pass pays nothing for it).
    pub(crate) wake_fds: Vec<std::os::fd::RawFd>,
    /// A task of the current pass will have no work until a handler is
    /// written ([`Cx::wake_when_written`]): valid only while
    /// `wake_hints > 0`, as `wake_fds`.
    pub(crate) wake_written: bool,
    /// Set by the queue a [`Cx::pull_packet`] took its packet from when it
    /// saw itself empty afterwards ([`Cx::upstream_drained`]).
    drained: bool,
    /// Tracing is in effect ([`crate::trace`]): a copy of the tracer's
    /// flag, refreshed at the top of the worker's loop when the sync
    /// epoch moved (the tracer's handlers move it), so the data path
    /// tests a field of its own context once per push or pull.
    pub(crate) tracing: bool,
    /// Tracing is on and packets may still be marked: set with `tracing`,
    /// cleared by this thread when it finds the marks all taken, so that
    /// afterwards an unmarked packet takes the plain path (see
    /// [`Cx::forward`]).
    marking: bool,
    /// A live capture is on ([`crate::capture`]): copied like `tracing`.
    tapping: bool,
    /// `tracing || tapping`: the one flag the data path tests, so that
    /// nobody looking costs one predictable branch per call.
    observing: bool,
    /// The trace filter this thread uses, and the tracer's filter
    /// generation it was fetched at.
    trace_filter: (u64, Option<crate::trace::PacketFilter>),
}

impl<'r> Cx<'r> {
    pub(crate) fn new(core: &'r Core, thread: usize) -> Cx<'r> {
        Cx {
            core,
            thread,
            current: 0,
            child: 0,
            task: None,
            pulled: false,
            sender: None,
            deferred: Vec::new(),
            wake_ns: u64::MAX,
            hold_until: 0,
            wake_hints: 0,
            wake_hint_elem: usize::MAX,
            asleep: 0,
            wake_fds: Vec::new(),
            wake_written: false,
            drained: false,
            tracing: core.tracer.on.load(Ordering::Relaxed),
            marking: core.tracer.on.load(Ordering::Relaxed) && core.tracer.marking(),
            tapping: core.tap.on.load(Ordering::Relaxed),
            observing: core.tracer.on.load(Ordering::Relaxed)
                || core.tap.on.load(Ordering::Relaxed),
            trace_filter: (0, None),
        }
    }

    /// Copies the tracer's flag into this context.
    #[inline]
    pub(crate) fn refresh_tracing(&mut self) {
        self.tracing = self.core.tracer.on.load(Ordering::SeqCst);
        self.marking = self.tracing && self.core.tracer.marking();
        self.tapping = self.core.tap.on.load(Ordering::Relaxed);
        self.observing = self.tracing || self.tapping;
        if let Some(t) = self.core.threads.get(self.thread) {
            t.tracing.store(self.tracing, Ordering::Release);
        }
    }

    /// While tracing, on the way past the tracer with unmarked packets:
    /// once the trace can record nothing more (its marks taken, no marked
    /// packet alive), turns it off, here now and everywhere at the next
    /// top of a worker's loop, so that from then on nothing pays for it.
    #[inline(always)]
    fn settle_tracing(&mut self) {
        if !self.tapping && self.core.tracer.idle() {
            self.settle_tracing_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn settle_tracing_now(&mut self) {
        if self.core.tracer.settle(self.core) {
            self.refresh_tracing();
        }
    }

    /// Asks for the running element's [`Element::flush`] to be called on
    /// this thread soon: when the thread finds no work, within 16 passes
    /// over its worklist, before a change of the thread plan completes, and
    /// when the thread stops. Call it once per thing to flush (say, when a
    /// staging buffer goes from empty to non-empty).
    ///
    /// [`Element::flush`]: crate::Element::flush
    #[inline]
    pub fn defer_flush(&mut self) {
        self.deferred.push(self.current);
    }

    /// Whether some element is waiting for its flush.
    #[inline]
    pub(crate) fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Runs the flushes asked for so far.
    pub(crate) fn flush_deferred(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        let saved = self.current;
        let list = std::mem::take(&mut self.deferred);
        for &e in &list {
            self.current = e;
            self.outside_task(None, |cx| cx.core.slots[e].element.flush(cx));
        }
        // Keep the allocation; flushes asked for during these go first.
        let mut list = list;
        list.clear();
        list.append(&mut self.deferred);
        self.deferred = list;
        self.current = saved;
    }

    /// Runs `f`, work outside any task run (a timer of `elem`, a deferred
    /// flush). While profiling, its cycles count as busy cycles of this
    /// thread, as those of task runs do, and `elem` is charged its own:
    /// the elements `f` calls are charged theirs, and without it their
    /// shares of the busy cycles could pass 100%.
    #[inline]
    pub(crate) fn outside_task<T>(
        &mut self,
        elem: Option<usize>,
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let Some(prof) = &self.core.profile else {
            return f(self);
        };
        let saved_child = self.child;
        self.child = 0;
        // A source's timer: the packets it sends are its own.
        self.sender = elem.filter(|&e| self.core.slots[e].input_kinds.is_empty());
        let t0 = crate::clock::cycles();
        let r = f(self);
        let dt = crate::clock::cycles().wrapping_sub(t0);
        self.sender = None;
        if let Some(e) = elem {
            prof.add(self.thread, e, dt.saturating_sub(self.child), 0);
        }
        if let Some(ts) = self.core.threads.get(self.thread) {
            let b = &ts.busy_cycles;
            b.store(
                b.load(std::sync::atomic::Ordering::Relaxed) + dt,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        self.child = saved_child;
        r
    }

    /// Calls `f` as element `elem` (profiling variant of a hop): charges
    /// the element its own cycles and `packets`, and the caller the total.
    #[cold]
    fn profiled<T>(&mut self, elem: usize, packets: u64, f: impl FnOnce(&mut Self) -> T) -> T {
        let task = self.task.take();
        if let Some(t) = task.filter(|_| !self.pulled) {
            let c = &self.core.tasks[t].packets;
            c.store(
                c.load(std::sync::atomic::Ordering::Relaxed) + packets,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let sender = self.sender.take();
        if let (Some(e), Some(p)) = (sender, &self.core.profile) {
            p.add_sent(self.thread, e, packets);
        }
        let saved_child = self.child;
        self.child = 0;
        let t0 = crate::clock::cycles();
        let r = f(self);
        let dt = crate::clock::cycles().wrapping_sub(t0);
        if let Some(p) = &self.core.profile {
            p.add(self.thread, elem, dt.saturating_sub(self.child), packets);
        }
        self.child = saved_child + dt;
        self.task = task;
        self.sender = sender;
        r
    }

    /// This worker's thread index (`0..nthreads`).
    #[inline]
    pub fn thread(&self) -> usize {
        self.thread
    }

    #[inline]
    pub fn nthreads(&self) -> usize {
        self.core.nthreads
    }

    /// Index of the running element in the router.
    #[inline]
    pub fn element_index(&self) -> usize {
        self.current
    }

    pub fn element_name(&self) -> &str {
        &self.core.slots[self.current].name
    }

    #[inline]
    pub fn noutputs(&self) -> usize {
        self.core.ports[self.current].outputs.len()
    }

    #[inline]
    pub fn ninputs(&self) -> usize {
        self.core.ports[self.current].inputs.len()
    }

    /// Whether the running element's batches must be split in runs of
    /// arrival order: two of its outputs meet again downstream (see
    /// [`crate::BuildOptions::relaxed_order`]). An element that splits
    /// batches by output itself keeps the order when this is true.
    pub fn splits_in_order(&self) -> bool {
        self.core.ports[self.current].ordered
    }

    /// Pushes `batch` out of output `port` of the running element. A port
    /// that does not exist (an optional output left unconnected) drops the
    /// batch, counted.
    ///
    /// Per-packet elements downstream ([`crate::Action`]) run here,
    /// in one loop, while the whole batch keeps going the same way: each hop
    /// costs an action call and a table lookup, not a `push` call level.
    #[inline]
    pub fn push(&mut self, port: usize, batch: Batch) {
        let saved = self.current;
        self.forward(port, batch);
        self.current = saved;
    }

    #[inline]
    fn forward(&mut self, port: usize, batch: Batch) {
        if self.observing {
            return self.forward_observed(port, batch);
        }
        self.forward_plain::<false>(port, batch)
    }

    /// [`Cx::forward`] while a trace or a capture is on. While a trace
    /// is on, a batch goes the traced way only if it may need marking
    /// (this thread still marks) or holds a marked packet: once the N
    /// packets are marked the others pay a test each and the plain path.
    /// (Out of line so that the data path's code is the same whether or
    /// not anyone looks.)
    #[cold]
    #[inline(never)]
    fn forward_observed(&mut self, port: usize, batch: Batch) {
        if self.tapping {
            if self.tracing {
                self.forward_traced(port, batch)
            } else {
                self.forward_plain::<true>(port, batch)
            }
        } else if self.marking || any_marked(batch.iter()) {
            self.forward_traced(port, batch)
        } else {
            self.settle_tracing();
            self.forward_plain::<false>(port, batch)
        }
    }

    /// [`Cx::forward`] past the tracer: with the capture's hook when a
    /// capture is on.
    fn forward_tapped(&mut self, port: usize, batch: Batch) {
        if self.tapping {
            self.forward_plain::<true>(port, batch)
        } else {
            self.forward_plain::<false>(port, batch)
        }
    }

    /// [`Cx::forward`] while tracing: marks packets entering the router,
    /// and sends a batch that holds a marked packet on one packet at a
    /// time, in order, so every hop of a marked one is recorded.
    #[cold]
    #[inline(never)]
    fn forward_traced(&mut self, port: usize, mut batch: Batch) {
        count_traced();
        let cur = self.current;
        if self.marking && self.core.slots[cur].input_kinds.is_empty() {
            for p in batch.iter_mut() {
                self.trace_mark(p);
            }
        }
        if !batch.iter().any(|p| p.trace() != 0) {
            self.settle_tracing();
            return self.forward_tapped(port, batch);
        }
        for p in batch.drain() {
            self.current = cur;
            self.forward_packet_traced(port, p);
        }
    }

    /// Marks `p`, entering the router at the running element, for tracing
    /// if marks are left and it passes the filter.
    fn trace_mark(&mut self, p: &mut Packet) {
        let tr = &self.core.tracer;
        if p.trace() != 0 {
            return;
        }
        if !tr.marking() {
            self.marking = false;
            return;
        }
        let gen = tr.filter_gen.load(Ordering::Acquire);
        if self.trace_filter.0 != gen {
            self.trace_filter = (gen, tr.filter());
        }
        if let Some(f) = &self.trace_filter.1 {
            if !f(p) {
                return;
            }
        }
        match tr.claim_for(p) {
            Some(id) => {
                let ev = crate::trace::Event::Entry {
                    elem: self.current as u32,
                };
                tr.record(self.thread, id, ev, p);
            }
            None => self.marking = false,
        }
    }

    /// Records an event of a marked packet.
    #[inline]
    fn trace_event(&self, ev: crate::trace::Event, p: &Packet) {
        let id = p.trace();
        if id != 0 {
            self.core.tracer.record(self.thread, id, ev, p);
        }
    }

    /// [`Cx::forward_packet`] while tracing, recording each hop of a
    /// marked packet.
    #[cold]
    #[inline(never)]
    fn forward_packet_traced(&mut self, mut port: usize, mut p: Packet) {
        use crate::trace::Event;
        count_traced();
        if self.marking && self.core.slots[self.current].input_kinds.is_empty() {
            self.trace_mark(&mut p);
        }
        if p.trace() == 0 {
            self.settle_tracing();
            return self.forward_packet_tapped(port, p);
        }
        let core = self.core;
        let mut outs: &[crate::core::Peer] = &core.ports[self.current].outputs;
        loop {
            let peer = match outs.get(port) {
                Some(peer) if peer.element().is_some() => peer,
                _ => return self.drop_unconnected_packet(p),
            };
            self.trace_event(
                Event::Hop {
                    from: self.current as u32,
                    out: port as u16,
                    to: peer.elem,
                    inp: peer.port,
                    pull: false,
                },
                &p,
            );
            if let Some(f) = peer.fused() {
                self.current = peer.elem as usize;
                match Hop::from_code(f.run_one(self, &mut p)) {
                    Hop::Out(k) => port = k,
                    hop => return self.fused_exit(hop, peer.element(), 0, p),
                }
                outs = peer.next();
                continue;
            }
            let Some(to) = peer.element() else {
                return self.drop_unconnected_packet(p);
            };
            self.current = peer.elem as usize;
            let q = peer.port as usize;
            if core.profile.is_none() {
                to.push_packet(self, q, p);
            } else {
                self.profiled(self.current, 1, |cx| to.push_packet(cx, q, p));
            }
            return;
        }
    }

    /// Records the pull of `b` from output `out` of `from` into input
    /// `inp` of the running element (marking packets a source gives).
    #[cold]
    #[inline(never)]
    fn trace_pulled(&mut self, from: usize, out: usize, inp: usize, b: &mut [Packet]) {
        count_traced();
        let saved = self.current;
        if self.marking && self.core.slots[from].input_kinds.is_empty() {
            self.current = from;
            for p in b.iter_mut() {
                self.trace_mark(p);
            }
            self.current = saved;
        }
        for p in b.iter() {
            self.trace_event(
                crate::trace::Event::Hop {
                    from: from as u32,
                    out: out as u16,
                    to: saved as u32,
                    inp: inp as u16,
                    pull: true,
                },
                p,
            );
        }
    }

    /// Drops a packet an unconnected output was given (counted as the
    /// running element's, reason [`crate::drops::UNCONNECTED`]).
    #[cold]
    fn drop_unconnected_packet(&mut self, p: Packet) {
        self.count_unconnected(1);
        if self.tracing {
            self.trace_drop(crate::trace::UNCONNECTED, &p);
        }
        drop(p);
    }

    #[cold]
    fn drop_unconnected(&mut self, b: Batch) {
        self.count_unconnected(b.len() as u64);
        if self.tracing {
            for p in b.iter() {
                self.trace_drop(crate::trace::UNCONNECTED, p);
            }
        }
        drop(b);
    }

    fn count_unconnected(&mut self, n: u64) {
        let t = &self.core.threads[self.thread];
        t.drops.add(self.current, n);
        t.unconnected.add(self.current, n);
    }

    /// Records the drop of a marked packet by the running element.
    #[cold]
    #[inline(never)]
    fn trace_drop(&self, reason: u16, p: &Packet) {
        self.trace_event(
            crate::trace::Event::Drop {
                elem: self.current as u32,
                reason,
            },
            p,
        );
    }

    fn forward_plain<const TAP: bool>(&mut self, mut port: usize, mut batch: Batch) {
        let core = self.core;
        if batch.len() == 1 {
            if let Some(p) = batch.pop() {
                drop(batch);
                return self.forward_packet(port, p);
            }
        }
        // A live capture (see crate::capture): only on the observed path.
        let tap = TAP && core.tap.on.load(Ordering::Relaxed);
        let mut outs: &[crate::core::Peer] = &core.ports[self.current].outputs;
        loop {
            let Some(peer) = outs.get(port) else {
                return self.drop_unconnected(batch);
            };
            if tap {
                crate::capture::hop(self, self.current, port, &batch);
            }
            if let Some(f) = peer.fused_batch() {
                self.current = peer.elem as usize;
                match f.run(self, &mut batch) {
                    Some(k) => port = k,
                    None => return,
                }
                outs = peer.next();
                continue;
            }
            let Some(to) = peer.element() else {
                return self.drop_unconnected(batch);
            };
            self.current = peer.elem as usize;
            let p = peer.port as usize;
            if core.ports[self.current].one_by_one {
                // Its outputs meet again and it splits batches itself:
                // one packet at a time keeps arrival order where they meet.
                return self.push_one_by_one(to, p, batch);
            }
            if core.profile.is_none() {
                to.push(self, p, batch);
            } else {
                let n = batch.len() as u64;
                self.profiled(self.current, n, |cx| to.push(cx, p, batch));
            }
            return;
        }
    }

    /// Hands `batch` to element `to` (the running one) a packet at a time.
    #[inline(never)]
    pub(crate) fn push_one_by_one(
        &mut self,
        to: &dyn crate::element::Node,
        port: usize,
        mut batch: Batch,
    ) {
        let elem = self.current;
        for p in batch.drain() {
            self.current = elem;
            if self.core.profile.is_none() {
                to.push_packet(self, port, p);
            } else {
                self.profiled(elem, 1, |cx| to.push_packet(cx, port, p));
            }
        }
    }

    /// Pushes one packet out of output `port` of the running element: the
    /// single-packet path (Click's BURST 1), with no batch at any hop.
    /// Fused hops run the action directly; other elements get
    /// [`crate::Element::push_packet`].
    #[inline]
    pub fn push_packet(&mut self, port: usize, p: Packet) {
        let saved = self.current;
        self.forward_packet(port, p);
        self.current = saved;
    }

    /// Pushes one packet (an alias of [`Cx::push_packet`]).
    #[inline]
    pub fn push_one(&mut self, port: usize, p: Packet) {
        self.push_packet(port, p)
    }

    /// [`Cx::forward`] for one packet.
    #[inline]
    fn forward_packet(&mut self, port: usize, p: Packet) {
        if self.observing {
            return self.forward_packet_observed(port, p);
        }
        self.forward_packet_plain::<false>(port, p)
    }

    /// [`Cx::forward_packet`] while a trace or a capture is on (as
    /// [`Cx::forward_observed`]).
    #[cold]
    #[inline(never)]
    fn forward_packet_observed(&mut self, port: usize, p: Packet) {
        if self.tapping {
            if self.tracing {
                self.forward_packet_traced(port, p)
            } else {
                self.forward_packet_plain::<true>(port, p)
            }
        } else if self.marking || p.trace() != 0 {
            self.forward_packet_traced(port, p)
        } else {
            self.settle_tracing();
            self.forward_packet_plain::<false>(port, p)
        }
    }

    /// [`Cx::forward_packet`] past the tracer.
    fn forward_packet_tapped(&mut self, port: usize, p: Packet) {
        if self.tapping {
            self.forward_packet_plain::<true>(port, p)
        } else {
            self.forward_packet_plain::<false>(port, p)
        }
    }

    fn forward_packet_plain<const TAP: bool>(&mut self, mut port: usize, mut p: Packet) {
        let core = self.core;
        let tap = TAP && core.tap.on.load(Ordering::Relaxed);
        let Some(mut peer) = core.ports[self.current].outputs.get(port) else {
            return self.drop_unconnected_packet(p);
        };
        // An ahead-of-time build's straight line for the rest of the way
        // ([`crate::compiled`]): tested once a push, not a hop, and never
        // on the capture's path (nor the tracer's, which does not come
        // here for a packet it records).
        if !TAP && peer.has_compiled() {
            return self.run_compiled(peer, p);
        }
        loop {
            if tap {
                crate::capture::hop_one(self, self.current, port, &p);
            }
            let Some(f) = peer.fused() else { break };
            self.current = peer.elem as usize;
            // One test of the coded result against the next output table:
            // a port there is the next hop; a drop, a push or a port not
            // connected leaves the loop.
            let code = f.run_one(self, &mut p);
            match peer.next().get(code) {
                Some(next) => {
                    peer = next;
                    port = code;
                }
                None => {
                    return self.fused_exit(Hop::from_code(code), peer.element(), 0, p);
                }
            }
        }
        let Some(to) = peer.element() else {
            return self.drop_unconnected_packet(p);
        };
        self.current = peer.elem as usize;
        let q = peer.port as usize;
        if core.profile.is_none() {
            to.push_packet(self, q, p);
        } else {
            self.profiled(self.current, 1, |cx| to.push_packet(cx, q, p));
        }
    }

    /// Runs the compiled entry of `peer` (which has one) for `p`. Out of
    /// line, so that the one-packet path's test of a peer for an entry is
    /// a compare with memory and a branch (two instructions).
    #[cold]
    #[inline(never)]
    fn run_compiled(&mut self, peer: &crate::core::Peer, p: Packet) {
        self.current = peer.elem as usize;
        match peer.compiled() {
            Some(c) => c.push_packet(self, p),
            None => self.drop_unconnected_packet(p),
        }
    }

    /// The end of a fused hop loop at element `to` (the running one,
    /// entered by input `port`) other than the next hop: a drop, a push
    /// to the element itself (rare: a packet to fragment, say), or an
    /// output not connected.
    #[cold]
    #[inline(never)]
    fn fused_exit(&mut self, hop: Hop, to: Option<&dyn crate::Node>, port: usize, p: Packet) {
        match hop {
            Hop::Out(_) => self.drop_unconnected_packet(p),
            Hop::Drop => self.drop_packet(p),
            Hop::DropFor(r) => self.drop_packet_for(r, p),
            Hop::Push => match to {
                Some(to) => to.push_unrouted(self, port, p),
                None => self.drop_packet(p),
            },
        }
    }

    /// Makes element `elem` the running one: what drops, counters and
    /// costs are charged to, as the dynamic path does entering a hop. For
    /// compiled entries ([`crate::compiled`]), before each element's
    /// action, with an index from [`crate::ElemRef::index`]. One store:
    /// an index that is not an element's is not checked here, and makes
    /// the next charge to the running element panic.
    #[inline(always)]
    pub fn run_as(&mut self, elem: usize) {
        self.current = elem;
    }

    /// The dynamic path after element `elem`'s per-packet hop (an
    /// action's or a routing element's, on input 0) gave `code` (see
    /// [`crate::element::HopCode`]): exactly what the fused loop does
    /// after the hop. An output port goes on to its peer (a compiled
    /// entry there, a fused loop, or the peer's push; an unconnected one
    /// drops, counted); a drop is counted as `elem`'s, with its reason;
    /// [`Hop::Push`] hands the packet to `elem`'s own
    /// [`crate::Element::push_packet`]. An index that is not an
    /// element's drops the packet, counted against the running element.
    pub fn forward_code(&mut self, elem: usize, code: crate::element::HopCode, p: Packet) {
        let Some(ports) = self.core.ports.get(elem) else {
            return self.drop_packet(p);
        };
        self.current = elem;
        if code < ports.outputs.len() {
            return self.forward_packet(code, p);
        }
        let to = &*self.core.slots[elem].element;
        self.fused_exit(Hop::from_code(code), Some(to), 0, p)
    }

    /// One packet into input `port` of element `elem`, as the running
    /// element's push would hand it over: the compiled entry installed
    /// there ([`crate::compiled`]) if any (input 0, nobody observing),
    /// otherwise the element's own one-packet push. For compiled entries
    /// that reach an element they do not compile (a queue, a tee). An
    /// index that is not an element's, or a port it lacks, drops the
    /// packet, counted as sent to an unconnected output.
    pub fn push_packet_into(&mut self, elem: usize, port: usize, p: Packet) {
        let core = self.core;
        let Some(slot) = core.slots.get(elem) else {
            return self.drop_unconnected_packet(p);
        };
        if port >= slot.input_kinds.len() {
            return self.drop_unconnected_packet(p);
        }
        if port == 0 && !self.observing {
            let c = core.compiled_at[elem].load(Ordering::Relaxed);
            // SAFETY: non-null only when set to an entry boxed in
            // `Core::compiled`, which lives as long as the core.
            if let Some(c) = unsafe { c.as_ref() } {
                self.current = elem;
                return c.push_packet(self, p);
            }
        }
        self.current = elem;
        let to = &*slot.element;
        if core.profile.is_none() {
            to.push_packet(self, port, p);
        } else {
            self.profiled(elem, 1, |cx| to.push_packet(cx, port, p));
        }
    }

    /// Runs task `task` of the running element, its own `run_task`: for
    /// compiled task runs ([`crate::CompiledTasks`]) with a task they do
    /// not compile.
    #[inline]
    pub fn run_own_task(&mut self, task: usize) -> bool {
        let core = self.core;
        match core.slots.get(self.current) {
            Some(slot) => slot.element.run_task(self, task),
            None => false,
        }
    }

    /// Makes element `elem` the running one for a pull from it, as the
    /// dynamic pull does entering the hop ([`Cx::upstream_drained`] is
    /// false until the element says otherwise); returns the element that
    /// was running, to give back to [`Cx::run_as`] after the pull. For
    /// compiled pulls ([`crate::compiled`]).
    #[inline(always)]
    pub fn enter_pull(&mut self, elem: usize) -> usize {
        let saved = self.current;
        self.current = elem;
        self.drained = false;
        saved
    }

    /// Whether a tracer or a capture is looking at this thread's packets
    /// (compiled entries are not run then: the dynamic path records
    /// every hop).
    #[inline]
    pub fn observing(&self) -> bool {
        self.observing
    }

    /// Pulls up to `max` packets from input `port` of the running element.
    #[inline(always)]
    pub fn pull(&mut self, port: usize, max: usize) -> Option<Batch> {
        if self.observing {
            return self.pull_observing(port, max);
        }
        self.pull_plain::<false>(port, max)
    }

    /// [`Cx::pull`] while a trace or a capture is on: the traced way only
    /// while marking or for a batch that holds a marked packet.
    #[cold]
    #[inline(never)]
    fn pull_observing(&mut self, port: usize, max: usize) -> Option<Batch> {
        if self.tapping || self.marking {
            return self.pull_observed(port, max);
        }
        let mut b = self.pull_plain::<false>(port, max);
        match &mut b {
            Some(b) if any_marked(b.iter()) => self.trace_pulled_at(port, b.as_mut_slice()),
            _ => self.settle_tracing(),
        }
        b
    }

    /// Records the pull of `b` (holding a marked packet) into input `port`
    /// of the running element.
    #[cold]
    #[inline(never)]
    fn trace_pulled_at(&mut self, port: usize, b: &mut [Packet]) {
        if let Some(peer) = self.core.ports[self.current].inputs.get(port) {
            let (from, out) = (peer.elem as usize, peer.port as usize);
            self.trace_pulled(from, out, port, b);
        }
    }

    /// [`Cx::pull`] while a trace or a capture is on.
    #[cold]
    #[inline(never)]
    fn pull_observed(&mut self, port: usize, max: usize) -> Option<Batch> {
        if self.tracing {
            self.pull_traced(port, max)
        } else {
            self.pull_plain::<true>(port, max)
        }
    }

    #[inline(always)]
    fn pull_plain<const TAP: bool>(&mut self, port: usize, max: usize) -> Option<Batch> {
        let core = self.core;
        let peer = core.ports[self.current].inputs.get(port)?;
        let from = peer.element()?;
        let saved = self.current;
        self.current = peer.elem as usize;
        let b = if core.profile.is_none() {
            from.pull(self, peer.port as usize, max)
        } else {
            self.pull_profiled(from, peer.elem as usize, peer.port as usize, max)
        };
        if TAP && core.tap.on.load(Ordering::Relaxed) {
            if let Some(b) = &b {
                crate::capture::hop(self, peer.elem as usize, peer.port as usize, b);
            }
        }
        self.current = saved;
        b
    }

    /// [`Cx::pull`] while tracing: records the pull of marked packets.
    #[cold]
    #[inline(never)]
    fn pull_traced(&mut self, port: usize, max: usize) -> Option<Batch> {
        let peer = self.core.ports[self.current].inputs.get(port)?;
        let (from, out) = (peer.elem as usize, peer.port as usize);
        let mut b = if self.tapping {
            self.pull_plain::<true>(port, max)
        } else {
            self.pull_plain::<false>(port, max)
        };
        if let Some(b) = &mut b {
            self.trace_pulled(from, out, port, b.as_mut_slice());
        }
        b
    }

    /// Pulls one packet from input `port` of the running element (the
    /// single-packet path: no batch).
    #[inline(always)]
    pub fn pull_packet(&mut self, port: usize) -> Option<Packet> {
        if self.observing {
            return self.pull_packet_observing(port);
        }
        self.pull_packet_plain::<false>(port)
    }

    /// [`Cx::pull_packet`] while a trace or a capture is on (as
    /// [`Cx::pull`]).
    #[cold]
    #[inline(never)]
    fn pull_packet_observing(&mut self, port: usize) -> Option<Packet> {
        if self.tapping || self.marking {
            return self.pull_packet_observed(port);
        }
        let mut p = self.pull_packet_plain::<false>(port);
        match &mut p {
            Some(p) if p.trace() != 0 => self.trace_pulled_at(port, std::slice::from_mut(p)),
            _ => self.settle_tracing(),
        }
        p
    }

    /// [`Cx::pull_packet`] while a trace or a capture is on.
    #[cold]
    #[inline(never)]
    fn pull_packet_observed(&mut self, port: usize) -> Option<Packet> {
        if self.tracing {
            self.pull_packet_traced(port)
        } else {
            self.pull_packet_plain::<true>(port)
        }
    }

    #[inline(always)]
    fn pull_packet_plain<const TAP: bool>(&mut self, port: usize) -> Option<Packet> {
        let core = self.core;
        let peer = core.ports[self.current].inputs.get(port)?;
        let from = peer.element()?;
        let saved = self.current;
        self.current = peer.elem as usize;
        self.drained = false;
        let p = if core.profile.is_none() {
            from.pull_packet(self, peer.port as usize)
        } else {
            self.pull_profiled(from, peer.elem as usize, peer.port as usize, 1)
                .and_then(|mut b| b.pop())
        };
        if TAP && core.tap.on.load(Ordering::Relaxed) {
            if let Some(p) = &p {
                crate::capture::hop_one(self, peer.elem as usize, peer.port as usize, p);
            }
        }
        self.current = saved;
        p
    }

    /// [`Cx::pull_packet`] while tracing.
    #[cold]
    #[inline(never)]
    fn pull_packet_traced(&mut self, port: usize) -> Option<Packet> {
        let peer = self.core.ports[self.current].inputs.get(port)?;
        let (from, out) = (peer.elem as usize, peer.port as usize);
        let mut p = if self.tapping {
            self.pull_packet_plain::<true>(port)
        } else {
            self.pull_packet_plain::<false>(port)
        };
        if let Some(p) = &mut p {
            self.trace_pulled(from, out, port, std::slice::from_mut(p));
        }
        p
    }

    /// After a [`Cx::pull_packet`] that returned a packet: whether the
    /// queue it came from saw itself empty once it was taken (a queue
    /// says so with [`Cx::note_drained`]). A hint for a puller of bursts,
    /// so that behind a source of one packet per run it does not pay for a
    /// second pull that finds nothing. It may be wrong both ways (a
    /// producer on another thread, a scheduler pulling several inputs), so
    /// it is never a reason to sleep: a task that stops early on it still
    /// reports work done and runs again.
    #[inline]
    pub fn upstream_drained(&self) -> bool {
        self.drained
    }

    /// For queues' [`QueueElement::pull_packet`](crate::QueueElement::pull_packet):
    /// records whether the queue looks empty after the packet it returns
    /// (see [`Cx::upstream_drained`]).
    #[inline]
    pub fn note_drained(&mut self, drained: bool) {
        self.drained = drained;
    }

    /// [`Cx::pull`] while profiling: packets are known after the call, so
    /// they are charged then.
    #[cold]
    #[inline(never)]
    fn pull_profiled(
        &mut self,
        from: &dyn crate::Node,
        elem: usize,
        port: usize,
        max: usize,
    ) -> Option<Batch> {
        let core = self.core;
        let task = self.task;
        let b = self.profiled(elem, 0, |cx| from.pull(cx, port, max));
        let n = b.as_ref().map_or(0, |b| b.len() as u64);
        if let Some(prof) = &core.profile {
            prof.add_packets(self.thread, elem, n);
        }
        if let Some(t) = task {
            let c = &core.tasks[t].packets;
            c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
            self.pulled = true;
        }
        b
    }

    /// Permission to push into a ring: this thread's data path reaches the
    /// running element, so the thread plan counts it as a producer (see
    /// [`crate::ring`]).
    #[inline]
    pub fn producer(&self) -> crate::ring::Producer<'_> {
        crate::ring::Producer::new()
    }

    /// Permission to pop from a ring, likewise as a planned consumer.
    #[inline]
    pub fn consumer(&self) -> crate::ring::Consumer<'_> {
        crate::ring::Consumer::new()
    }

    /// Drops a packet, counted against the running element.
    #[inline]
    pub fn drop_packet(&mut self, p: Packet) {
        self.count_drops(1);
        if self.tracing {
            self.trace_drop(crate::trace::NO_REASON, &p);
        }
        drop(p);
    }

    /// Drops a whole batch, counted.
    #[inline]
    pub fn drop_batch(&mut self, b: Batch) {
        self.count_drops(b.len() as u64);
        if self.tracing {
            for p in b.iter() {
                self.trace_drop(crate::trace::NO_REASON, p);
            }
        }
        drop(b);
    }

    /// Counts `n` packets as dropped by the running element, for packets
    /// that are gone without passing through [`Cx::drop_packet`] (e.g. a
    /// copy that could not be made because the pool was exhausted).
    #[inline]
    pub fn count_drops(&mut self, n: u64) {
        self.core.threads[self.thread].drops.add(self.current, n);
    }

    /// Drops a packet for reason `reason`: an index into the running
    /// element's class's [drop reasons](method@crate::ClassSpec::drop_reasons)
    /// (one it does not declare counts as unspecified).
    #[inline]
    pub fn drop_packet_for(&mut self, reason: u8, p: Packet) {
        self.count_drops_for(reason, 1);
        if self.tracing {
            self.trace_drop(u16::from(reason), &p);
        }
        drop(p);
    }

    /// Drops a whole batch for reason `reason` (see
    /// [`Cx::drop_packet_for`]).
    #[inline]
    pub fn drop_batch_for(&mut self, reason: u8, b: Batch) {
        self.count_drops_for(reason, b.len() as u64);
        if self.tracing {
            for p in b.iter() {
                self.trace_drop(u16::from(reason), p);
            }
        }
        drop(b);
    }

    /// [`Cx::count_drops`] for reason `reason` (see
    /// [`Cx::drop_packet_for`]).
    #[inline]
    pub fn count_drops_for(&mut self, reason: u8, n: u64) {
        let core = self.core;
        let t = &core.threads[self.thread];
        t.drops.add(self.current, n);
        if let Some(s) = core.reasons.slot(self.current, reason) {
            t.reason_drops.add(s, n);
        }
    }

    /// Monotonic time from the router's clock (simulated under
    /// `--simtime`: read it here, never from `Instant::now()`).
    #[inline]
    pub fn now(&self) -> Instant {
        self.core.clock.now()
    }

    /// Wall-clock time for packet timestamps, from the router's clock.
    #[inline]
    pub fn timestamp(&self) -> paraclick_packet::Timestamp {
        self.core.clock.timestamp()
    }

    /// Whether the router runs in simulated time.
    pub fn simulated_time(&self) -> bool {
        self.core.clock.is_simulated()
    }

    /// Tells the runtime that the running task found no work because it
    /// keeps off a line another core writes until `cycles` (of
    /// [`crate::clock::cycles`]; a crossing queue's consumer, see the
    /// queue's hold): a worker with nothing else to do spins until then
    /// rather than yielding its core, as it would after some idle passes,
    /// for the work is due within microseconds.
    #[inline]
    pub fn holding_until(&mut self, cycles: u64) {
        if cycles > self.hold_until {
            self.hold_until = cycles;
        }
    }

    /// Tells the runtime that the running task, which found no work, will
    /// have some at `when` (a paced source's next packet). Simulated time
    /// jumps there when nothing else is due sooner; in real time a worker
    /// whose every runnable task said so sleeps until the earliest such
    /// time (unless `--busy-poll`), instead of polling.
    #[inline]
    pub fn wake_at(&mut self, when: Instant) {
        let ns = self.core.clock.ns_of(when);
        if ns < self.wake_ns {
            self.wake_ns = ns;
        }
        self.count_wake_hint();
    }

    /// Tells the runtime that the running task, which found no work, will
    /// have some when `fd` becomes readable (a device's receive ring or
    /// socket). A worker whose every runnable task said when or on what
    /// it will have work ([`Cx::wake_at`], this), the others asleep, waits
    /// in `poll(2)` on those descriptors after a short spin
    /// (`sched::FD_WAIT_AFTER`), until one is readable, the earliest
    /// time given, a timer, or a notifier's wake (unless `--busy-poll`).
    /// A task may give several descriptors in one run. The descriptor
    /// must stay open while the element lives.
    #[inline]
    pub fn wake_when_readable(&mut self, fd: std::os::fd::BorrowedFd<'_>) {
        use std::os::fd::AsRawFd;
        self.count_wake_hint();
        self.wake_fds.push(fd.as_raw_fd());
    }

    /// Tells the runtime that the running task, which found no work, will
    /// have none until one of the router's handlers is written: a source
    /// that is inactive, has sent its LIMIT, or has RATE 0 (its `active`,
    /// `reset`, `limit` or `rate` handler gives it work again). A worker
    /// whose every runnable task said this, or when or on what it will
    /// have work ([`Cx::wake_at`], [`Cx::wake_when_readable`]), the others
    /// asleep, sleeps (unless `--busy-poll`): a write to any element's
    /// handler wakes it, as do a notifier, a task added, a plan change,
    /// a timer and the stop.
    #[inline]
    pub fn wake_when_written(&mut self) {
        self.count_wake_hint();
        self.wake_written = true;
    }

    /// Counts the running element's hint once per pass (one in a row),
    /// the pass's first emptying the descriptor list and the write flag.
    #[inline]
    fn count_wake_hint(&mut self) {
        if self.current != self.wake_hint_elem {
            if self.wake_hints == 0 {
                self.wake_fds.clear();
                self.wake_written = false;
            }
            self.wake_hint_elem = self.current;
            self.wake_hints += 1;
        }
    }

    /// Schedules timer `timer` of the running element to fire after `d`
    /// on this thread, replacing an earlier schedule of the same timer.
    pub fn schedule_after(&mut self, timer: usize, d: Duration) {
        let t = self.core.home_thread(self.current);
        let when = self.core.clock.now() + d;
        self.core.schedule_timer(t, self.current, timer, when);
    }

    pub fn schedule_at(&mut self, timer: usize, when: Instant) {
        let t = self.core.home_thread(self.current);
        self.core.schedule_timer(t, self.current, timer, when);
    }

    pub fn unschedule(&mut self, timer: usize) {
        self.core.unschedule_timer(self.current, timer);
    }

    /// Asks the router to stop (Click's `please_stop_driver`): a driver
    /// element decides what the request means, otherwise the router stops.
    pub fn request_stop(&mut self) {
        self.core.request_stop();
    }

    /// Whether the router is still running.
    #[inline]
    pub fn running(&self) -> bool {
        self.core.running.load(Ordering::Relaxed)
    }

    /// A handler context for the running element (to read or write other
    /// elements' handlers from a task or timer).
    pub fn handler_cx(&self) -> HandlerCx<'r> {
        HandlerCx {
            core: self.core,
            elem: self.current,
        }
    }
}

/// Whether any of these packets is marked for tracing: one load and test
/// a packet.
#[inline(always)]
fn any_marked<'a>(mut ps: impl Iterator<Item = &'a Packet>) -> bool {
    ps.any(|p| p.trace() != 0)
}

#[cfg(test)]
thread_local! {
    /// How many times this thread took the traced path (tests: an
    /// unmarked packet should not, once the marks are taken).
    pub(crate) static TRACED_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline(always)]
fn count_traced() {
    #[cfg(test)]
    TRACED_CALLS.with(|c| c.set(c.get() + 1));
}
