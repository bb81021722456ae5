//! The crossing protocol: how queues between threads stay correct while
//! tasks move. One module owns it.
//!
//! - A queue's ring modes (single or multi producer, single or multi
//!   consumer) and whether it is *crossing* (producers and consumers not
//!   all one thread) come from the thread plan ([`crate::plan`]) and are
//!   given to the queue only here ([`apply_ring_modes`]).
//! - A producer thread of a crossing queue stages packets and asks for a
//!   flush ([`crate::Cx::defer_flush`]); the worker flushes when idle,
//!   every 16 passes, when it stops, and before it acknowledges an epoch
//!   ([`barrier`]).
//! - Moving a task ([`move_task`]): the task leaves its old worklist,
//!   rings that gain a producer or consumer switch to compare-and-swap
//!   first (upgrade only), every live worker passes the top of its loop
//!   (no run that began under the old plan is still going, and what it
//!   staged is published), the task joins its new worklist, and rings left
//!   with one producer or consumer drop the CAS.

use crate::ring::{Consumer, ModeSwitch};
use crate::router::Core;
use std::cell::Cell;
use std::sync::atomic::Ordering;

thread_local! {
    /// The router core (its address) and worker index of the calling
    /// thread, if it is a worker.
    static WORKER: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// Marks the calling thread as worker `t` of `core` while it lives.
pub(crate) struct WorkerMark;

impl WorkerMark {
    pub(crate) fn new(core: &Core, t: usize) -> WorkerMark {
        WORKER.with(|w| w.set(Some((core as *const Core as usize, t))));
        WorkerMark
    }
}

impl Drop for WorkerMark {
    fn drop(&mut self) {
        WORKER.with(|w| w.set(None));
    }
}

/// The calling thread's worker index in `core`, if it is one of its
/// workers.
fn current_worker(core: &Core) -> Option<usize> {
    WORKER
        .with(|w| w.get())
        .and_then(|(c, t)| (c == core as *const Core as usize).then_some(t))
}

/// Applies the ring modes of the current plan to every queue. With
/// `upgrade_only`, a side only goes from single to multi (safe before new
/// users start) and crossing only turns on; otherwise modes are set
/// exactly (safe only when no operation under the old modes is in flight:
/// at build time, or after a [`barrier`]).
pub(crate) fn apply_ring_modes(core: &Core, upgrade_only: bool) {
    for (e, mp, mc, crossing) in core.plan.ring_modes(core) {
        let slot = &core.slots[e];
        let (mp, mc, crossing) = if upgrade_only {
            let (cur_p, cur_c) = slot.ring_modes();
            (mp || cur_p, mc || cur_c, crossing || slot.crossing())
        } else {
            (mp, mc, crossing)
        };
        slot.element
            .set_ring_modes(&ModeSwitch::new(), mp, mc, crossing);
        slot.set_modes_seen(mp, mc, crossing);
    }
}

/// Returns once every running worker has passed the top of its loop after
/// this call began: no task run or timer that started before is still in
/// progress, and each worker has flushed what it staged.
///
/// Called on a worker thread (a handler written by a Script, say), it does
/// not wait for that thread itself, which is inside a task run but not in
/// a ring operation.
pub(crate) fn barrier(core: &Core) {
    let e = core.sync_epoch.fetch_add(1, Ordering::AcqRel) + 1;
    let me = current_worker(core);
    if me.is_some() && core.clock.is_simulated() {
        // Simulated time: one OS thread runs every logical thread, and the
        // others are between passes, each having published what it staged
        // (see `sched::sim_driver`); none is in a ring operation.
        return;
    }
    for (t, ts) in core.threads.iter().enumerate() {
        if Some(t) == me {
            continue;
        }
        let mut spins = 0u32;
        while ts.seen_epoch.load(Ordering::Acquire) < e && ts.alive.load(Ordering::Acquire) {
            // A worker parked with all its tasks asleep must come round.
            crate::notifier::unpark_worker(core, t);
            spins += 1;
            if spins < 100 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }
}

/// Moves task `t` to thread `to`, safely while the router runs (see the
/// module documentation).
pub(crate) fn move_task(core: &Core, t: usize, to: usize) {
    let _g = core.migrating.lock().unwrap_or_else(|e| e.into_inner());
    let to = to % core.nthreads;
    let task = &core.tasks[t];
    let from = task.thread.load(Ordering::Acquire);
    if from == to {
        return;
    }
    core.threads[from].remove_task(t);
    task.thread.store(to, Ordering::Release);
    apply_ring_modes(core, true);
    barrier(core);
    core.threads[to].add_task(t);
    // On its new thread the task runs once before it may sleep again.
    task.asleep.store(false, Ordering::SeqCst);
    crate::notifier::unpark_worker(core, to);
    task.migrations.fetch_add(1, Ordering::Relaxed);
    apply_ring_modes(core, false);
}

/// Runs `f` as an extra consumer of queue `elem`'s ring (a handler that
/// drains a queue), from any thread, while the router runs or not.
///
/// Running, the ring's consumer side goes to compare-and-swap first, every
/// worker passes the top of its loop (no single-consumer pop that began
/// before is still going), `f` pops, and the plan's exact modes come back
/// (only the planned consumers are left). Not running, nothing else can
/// pop: `f` runs at once. Task moves wait meanwhile.
pub(crate) fn as_extra_consumer<R>(
    core: &Core,
    elem: usize,
    f: impl FnOnce(&Consumer<'_>) -> R,
) -> R {
    let _g = core.migrating.lock().unwrap_or_else(|e| e.into_inner());
    // Router::run holds `exclusive` for the whole run.
    let stopped = core.exclusive.try_lock();
    if stopped.is_ok() {
        return f(&Consumer::new());
    }
    let slot = &core.slots[elem];
    let (mp, mc) = slot.ring_modes();
    if !mc {
        let crossing = slot.crossing();
        slot.element
            .set_ring_modes(&ModeSwitch::new(), mp, true, crossing);
        slot.set_modes_seen(mp, true, crossing);
        barrier(core);
    }
    let r = f(&Consumer::new());
    apply_ring_modes(core, false);
    r
}
