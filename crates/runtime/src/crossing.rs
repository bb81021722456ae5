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

use crate::core::Core;
use crate::ring::{Consumer, ModeSwitch};
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

#[cfg(test)]
mod tests {
    use crate::element::{Element, QueueElement};
    use crate::registry::{ClassSpec, Registry};
    use crate::ring::ModeSwitch;
    use crate::{BuildOptions, Cx, InitCx, Router};
    use paraclick_packet::{Batch, Packet};
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// A source with a task: sends [`SENT`] packets, one a run; the first
    /// run may hold (spin until `release`) after pushing, when `hold` is
    /// set.
    #[derive(Default)]
    struct Src {
        sent: AtomicU64,
        hold: AtomicBool,
        inside: AtomicBool,
        release: AtomicBool,
    }
    const SENT: u64 = 5;

    impl Element for Src {
        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            ix.add_task();
            Ok(())
        }
        fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
            if self.sent.load(Ordering::Relaxed) >= SENT {
                return false;
            }
            self.sent.fetch_add(1, Ordering::Relaxed);
            cx.push(0, Batch::one(Packet::new(60).unwrap()));
            if self.hold.swap(false, Ordering::AcqRel) {
                self.inside.store(true, Ordering::Release);
                while !self.release.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            }
            true
        }
    }

    /// A queue that records every change of its ring modes, and, while
    /// crossing, stages what is pushed until its flush publishes it.
    #[derive(Default)]
    struct StagingQ {
        modes: Mutex<Vec<(bool, bool, bool)>>,
        crossing: AtomicBool,
        staged: Mutex<Vec<Packet>>,
        ready: Mutex<Vec<Packet>>,
        published: AtomicUsize,
        /// Per flush that published something: the epoch its thread had
        /// acknowledged then.
        flush_epochs: Mutex<Vec<u64>>,
    }

    impl Element for StagingQ {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
            if self.crossing.load(Ordering::Acquire) {
                let mut s = self.staged.lock().unwrap();
                if s.is_empty() {
                    cx.defer_flush();
                }
                s.extend(batch.drain());
            } else {
                let n = batch.len();
                self.ready.lock().unwrap().extend(batch.drain());
                self.published.fetch_add(n, Ordering::AcqRel);
            }
        }
        fn pull(&self, _cx: &mut Cx<'_>, _port: usize, _max: usize) -> Option<Batch> {
            let v: Vec<Packet> = std::mem::take(&mut *self.ready.lock().unwrap());
            (!v.is_empty()).then(|| Batch::from(v))
        }
        fn flush(&self, cx: &mut Cx<'_>) {
            let v: Vec<Packet> = std::mem::take(&mut *self.staged.lock().unwrap());
            if !v.is_empty() {
                let seen = cx.core.threads[cx.thread]
                    .seen_epoch
                    .load(Ordering::Acquire);
                self.flush_epochs.lock().unwrap().push(seen);
            }
            self.published.fetch_add(v.len(), Ordering::AcqRel);
            self.ready.lock().unwrap().extend(v);
        }
    }

    impl QueueElement for StagingQ {
        fn set_ring_modes(&self, _s: &ModeSwitch, mp: bool, mc: bool, crossing: bool) {
            self.modes.lock().unwrap().push((mp, mc, crossing));
            self.crossing.store(crossing, Ordering::Release);
        }
    }

    /// A puller with a task, into output 0.
    struct Pull;
    impl Element for Pull {
        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            ix.add_task();
            Ok(())
        }
        fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
            match cx.pull(0, 32) {
                Some(b) => {
                    cx.push(0, b);
                    true
                }
                None => false,
            }
        }
    }

    fn router(conf: &str, threads: usize) -> Router {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::element(
            "Src",
            "0/1",
            "h",
            |_| Ok(Src::default()),
        ));
        reg.register(ClassSpec::queue("SQ", "1/1", "h/l", |_| {
            Ok(StagingQ::default())
        }));
        reg.register(ClassSpec::element("Pull", "1/1", "l/h", |_| Ok(Pull)));
        let src = paraclick_lang::Source::new("<t>", conf);
        let opts = BuildOptions {
            threads,
            pin: false,
            ..BuildOptions::default()
        };
        Router::build(&src, &reg, &opts).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn place(r: &Router, name: &str, thread: usize) {
        r.move_task(name, 0, thread).unwrap();
        let on = r
            .task_threads()
            .into_iter()
            .find(|t| t.0 == name)
            .unwrap()
            .2;
        assert_eq!(on, thread, "{name} moved");
    }

    /// Stops the router when the thread that holds it ends, even by a
    /// failed assertion (or the run would never return).
    /// Releases a held run too.
    struct StopOnDrop<'a>(&'a Router, &'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.1.store(true, Ordering::Release);
            self.0.stop();
        }
    }

    fn calls(r: &Router) -> Vec<(bool, bool, bool)> {
        std::mem::take(&mut *r.element::<StagingQ>("q").unwrap().modes.lock().unwrap())
    }

    #[test]
    fn a_move_upgrades_the_rings_before_the_barrier_and_downgrades_after() {
        let r = router(
            "a :: Src -> q :: SQ -> p :: Pull -> TestSink; b :: Src -> q;",
            2,
        );
        place(&r, "a", 0);
        place(&r, "p", 0);
        place(&r, "b", 1);
        let c = calls(&r);
        assert_eq!(c.last(), Some(&(true, false, true)), "two producer threads");
        let epoch = r.core.sync_epoch.load(Ordering::Acquire);
        // b joins a and p: the queue ends single-producer and not crossing,
        // but only after the barrier; before it, nothing is taken away.
        place(&r, "b", 0);
        assert!(
            r.core.sync_epoch.load(Ordering::Acquire) > epoch,
            "a barrier ran"
        );
        let c = calls(&r);
        assert_eq!(
            c,
            vec![(true, false, true), (false, false, false)],
            "upgrade-only before the barrier, exact after"
        );
        // p leaves: the consumer side gains a thread, crossing at once.
        place(&r, "p", 1);
        let c = calls(&r);
        assert_eq!(c, vec![(false, false, true), (false, false, true)]);
        assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
        assert_eq!(r.ring_modes(), vec![("q".to_string(), false, false)]);
        // A move to the thread a task is on already changes nothing.
        place(&r, "p", 1);
        assert!(calls(&r).is_empty());
    }

    #[test]
    fn staged_packets_are_published_when_the_producer_goes_idle() {
        let r = router("a :: Src -> q :: SQ -> p :: Pull -> k :: TestSink;", 2);
        place(&r, "a", 0);
        place(&r, "p", 1);
        let q = r.element::<StagingQ>("q").unwrap();
        assert!(q.crossing.load(Ordering::Acquire));
        let k = r.element::<crate::testing::TestSink>("k").unwrap();
        let got = AtomicUsize::new(0);
        // The source sends five packets and then has nothing to do: its
        // worker, idle, publishes what it staged while still running.
        crate::testing::run_until(&r, |_| {
            got.fetch_add(k.take().len(), Ordering::Relaxed);
            got.load(Ordering::Relaxed) == SENT as usize
        });
        assert_eq!(q.published.load(Ordering::Acquire), SENT as usize);
    }

    #[test]
    fn a_barrier_waits_for_a_run_in_progress_and_its_staged_packets() {
        let r = router("a :: Src -> q :: SQ -> p :: Pull -> TestSink;", 2);
        place(&r, "a", 0);
        place(&r, "p", 1);
        let src = r.element::<Src>("a").unwrap();
        let q = r.element::<StagingQ>("q").unwrap();
        src.hold.store(true, Ordering::Release);
        let done = AtomicBool::new(false);
        let published_at_return = AtomicUsize::new(usize::MAX);
        let barrier_epoch = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _stop = StopOnDrop(&r, &src.release);
                while !src.inside.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                // The source's run has pushed one packet (staged, the queue
                // crosses) and is still going.
                assert_eq!(q.published.load(Ordering::Acquire), 0);
                let epoch = r.core.sync_epoch.load(Ordering::Acquire);
                s.spawn(|| {
                    super::barrier(&r.core);
                    published_at_return
                        .store(q.published.load(Ordering::Acquire), Ordering::Release);
                    done.store(true, Ordering::Release);
                });
                while r.core.sync_epoch.load(Ordering::Acquire) == epoch {
                    std::thread::yield_now();
                }
                // The barrier began; it must not return while the run goes
                // on. (A bound only on how long we look: a barrier that
                // does not wait returns at once.)
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_millis(200) {
                    assert!(
                        !done.load(Ordering::Acquire),
                        "the barrier returned during a task run"
                    );
                    std::thread::yield_now();
                }
                src.release.store(true, Ordering::Release);
                barrier_epoch.store(epoch + 1, Ordering::Release);
                while !done.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
            });
            r.run();
        });
        assert!(done.load(Ordering::Acquire));
        assert!(
            published_at_return.load(Ordering::Acquire) >= 1,
            "the barrier returned before the staged packet was published"
        );
        // The flush that published it ran before its thread acknowledged
        // the barrier's epoch.
        let e = barrier_epoch.load(Ordering::Acquire);
        let flushes = q.flush_epochs.lock().unwrap().clone();
        assert!(!flushes.is_empty());
        assert!(
            flushes[0] < e,
            "staged under epoch {}, published after acknowledging {e}: {flushes:?}",
            e - 1
        );
    }
}
