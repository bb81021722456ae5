//! Empty and full notifiers (Click's `NotifierSignal`): tasks that sleep
//! while they have nothing to do and are woken by the event that gives
//! them work. One module owns the protocol.
//!
//! - A queue owns an *empty notifier* (its signal is active while the
//!   queue may hold packets) and a *full notifier* (active while it has
//!   room). It sets a signal inactive when it sees the condition (a pull
//!   found it empty, a push filled it) and wakes the signal when the
//!   condition ends (a push into an empty queue, a pull from a full one).
//! - A pull task that asked for it ([`crate::InitCx::sleep_when_empty`])
//!   listens to the empty notifiers found walking upstream from it along
//!   pull connections. After a run that did no work, if every one of
//!   those signals is inactive, it goes to sleep: its worker skips it
//!   until a notifier wakes it. If the walk reaches an element that makes
//!   packets by itself (no pull input and no empty notifier, or an element
//!   that says its pull output is not a pass-through, see
//!   [`crate::Element::pull_passes_signal`]), the task never sleeps.
//! - A source task that asked for it ([`crate::InitCx::wait_for_room`])
//!   listens to the full notifiers found walking downstream along push
//!   connections, and runs only while every one of them is active: a
//!   source waits while any queue it feeds is full. (Click runs a source
//!   while any downstream queue has room and never pauses one that can
//!   reach a sink without a queue; paraclick pauses it at the first full
//!   queue, so a pipeline whose drain keeps up on average never drops at
//!   its queue. A source with no full notifier downstream never waits.)
//! - A worker whose tasks are all asleep parks after the usual spin and
//!   yield phase, until a wake, a timer, a task added, a plan change or
//!   the router's stop unparks it.
//!
//! No lost wake-up. Both races are Dekker pairs closed by sequentially
//! consistent fences: the side going to sleep stores its flag, fences,
//! and re-reads the other side's state; the waking side changes the
//! state, fences, and reads the flag. One of the two sees the other.
//! - Queue and sleeper: a puller's task sets `asleep`, fences, reads the
//!   signals; a producer publishes into the ring, fences, reads the
//!   signal (the queue's own sleep stores the signal, fences, and re-reads
//!   the ring). The producer's fence is only needed when the queue is
//!   crossing threads; otherwise producer and listener run on one thread
//!   and see each other's stores in program order.
//! - Task and worker: a worker stores `parked`, fences, looks at its
//!   tasks' `asleep` flags (and the timers, the epoch, `running`) and
//!   parks; a waker clears `asleep`, fences, and unparks the worker if it
//!   reads `parked`. An unpark that comes before the park is kept by the
//!   thread's park token, so the park returns at once.

use crate::cx::Cx;
use crate::handler::HandlerCx;
use crate::router::Core;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// One notifier signal, shared by the element that owns it and the
/// runtime (which wakes the listening tasks).
pub struct Notifier {
    sig: Arc<Signal>,
}

pub(crate) struct Signal {
    active: CachePadded<AtomicBool>,
    /// The listening tasks, fixed once the router is built.
    listeners: OnceLock<Box<[usize]>>,
    /// Listeners are gated by this signal (a full notifier): each counts
    /// its inactive gates in `Task::blocked`.
    gates: std::sync::atomic::AtomicBool,
}

impl Default for Notifier {
    fn default() -> Self {
        Notifier::new()
    }
}

impl Notifier {
    /// A notifier, initially active.
    pub fn new() -> Notifier {
        Notifier {
            sig: Arc::new(Signal {
                active: CachePadded::new(AtomicBool::new(true)),
                listeners: OnceLock::new(),
                gates: AtomicBool::new(false),
            }),
        }
    }

    /// Whether the signal is active.
    #[inline]
    pub fn active(&self) -> bool {
        self.sig.active.load(Ordering::Relaxed)
    }

    /// A hint before a wake that may come soon from another thread than
    /// the listeners': asks for the signal's cache line for writing.
    #[inline]
    pub fn prefetch(&self) {
        paraclick_packet::pool::prefetch_write(&*self.sig.active);
    }

    /// Whether some task listens to this notifier.
    pub fn has_listeners(&self) -> bool {
        self.sig.listeners.get().is_some_and(|l| !l.is_empty())
    }

    /// How many tasks listen to this notifier (0 until the router is
    /// built).
    pub fn listener_count(&self) -> usize {
        self.sig.listeners.get().map_or(0, |l| l.len())
    }

    /// The condition (empty, full) was seen: makes the signal inactive,
    /// then re-checks with `still()` after a fence; if the condition has
    /// already ended (a producer on another thread published meanwhile),
    /// the signal is woken again.
    #[inline]
    pub fn sleep(&self, cx: &Cx<'_>, still: impl FnOnce() -> bool) {
        if self.sig.active.load(Ordering::Relaxed) {
            self.sig.deactivate(cx.core);
            fence(Ordering::SeqCst);
            if !still() {
                self.sig.wake(cx.core);
            }
        }
    }

    /// The condition ended on a path where every listener runs on the
    /// calling thread (the queue is not crossing): wakes listeners if the
    /// signal was inactive. One relaxed load when it is active.
    #[inline]
    pub fn wake_local(&self, cx: &Cx<'_>) {
        if !self.sig.active.load(Ordering::Relaxed) {
            self.sig.wake(cx.core);
        }
    }

    /// The condition ended on a path another thread may be listening to
    /// (a crossing queue): fences first, then wakes listeners if the
    /// signal was inactive.
    #[inline]
    pub fn wake(&self, cx: &Cx<'_>) {
        fence(Ordering::SeqCst);
        if !self.sig.active.load(Ordering::Relaxed) {
            self.sig.wake(cx.core);
        }
    }

    /// The condition may have ended: wakes listeners if the signal was
    /// inactive and `ready()` says so (read only then). Fenced first when
    /// a listener may be on another thread (`crossing`), as
    /// [`Notifier::wake`].
    #[inline]
    pub fn wake_if(&self, cx: &Cx<'_>, crossing: bool, ready: impl FnOnce() -> bool) {
        if crossing {
            fence(Ordering::SeqCst);
        }
        if !self.sig.active.load(Ordering::Relaxed) && ready() {
            self.sig.wake(cx.core);
        }
    }

    /// [`Notifier::wake`] from a handler (any thread).
    pub fn wake_from_handler(&self, hx: &HandlerCx<'_>) {
        fence(Ordering::SeqCst);
        if !self.sig.active.load(Ordering::Relaxed) {
            self.sig.wake(hx.core);
        }
    }
}

impl Signal {
    fn listeners(&self) -> &[usize] {
        self.listeners.get().map(|l| &l[..]).unwrap_or(&[])
    }

    /// Active to inactive; a gate counts itself in each listener's
    /// `blocked` (transitions alternate: `swap` lets one caller make each).
    #[cold]
    fn deactivate(&self, core: &Core) {
        if self.active.swap(false, Ordering::SeqCst) && self.gates.load(Ordering::Relaxed) {
            for &t in self.listeners() {
                core.tasks[t].blocked.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[cold]
    fn wake(&self, core: &Core) {
        if self.active.swap(true, Ordering::SeqCst) {
            return;
        }
        let gates = self.gates.load(Ordering::Relaxed);
        for &t in self.listeners() {
            if gates && core.tasks[t].blocked.fetch_sub(1, Ordering::SeqCst) != 1 {
                continue; // another gate of the task is still closed
            }
            fence(Ordering::SeqCst);
            wake_task(core, t);
        }
    }
}

/// Clears task `t`'s sleep and unparks its worker if parked.
///
/// Called when a signal the task listens to goes from inactive to active,
/// so the task is most likely asleep: one swap, without a plain load
/// first. On another core's task that load missed and then the swap
/// missed again for ownership, two line transfers per wake-up.
pub(crate) fn wake_task(core: &Core, t: usize) {
    let task = &core.tasks[t];
    if task.asleep.swap(false, Ordering::SeqCst) {
        fence(Ordering::SeqCst);
        unpark_worker(core, task.thread.load(Ordering::Acquire));
    }
}

/// Unparks worker `th` if it is parked (or about to park).
pub(crate) fn unpark_worker(core: &Core, th: usize) {
    let ts = &core.threads[th % core.nthreads];
    if ts.parked.load(Ordering::SeqCst) {
        if let Some(h) = &*ts.handle.lock().unwrap_or_else(|e| e.into_inner()) {
            h.unpark();
        }
    }
}

/// Unparks every parked worker (stop, plan change).
pub(crate) fn unpark_all(core: &Core) {
    fence(Ordering::SeqCst);
    for th in 0..core.nthreads {
        unpark_worker(core, th);
    }
}

/// What a task listens to, derived once at build time.
#[derive(Default)]
pub(crate) struct Listen {
    /// Empty notifiers upstream; the task may sleep when all are inactive.
    /// (Full notifiers downstream count their closed state in the task's
    /// `blocked` themselves.)
    pub empty: Box<[Arc<Signal>]>,
}

/// Before a run of a task some of whose gates (full notifiers) are
/// closed (`blocked > 0`): it goes to sleep until the last of them opens,
/// unless that happened meanwhile. Returns whether it may run.
#[cold]
pub(crate) fn gated(core: &Core, t: usize) -> bool {
    let task = &core.tasks[t];
    task.asleep.store(true, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if task.blocked.load(Ordering::SeqCst) == 0 {
        task.asleep.store(false, Ordering::SeqCst);
        return true;
    }
    false
}

/// After a run that did no work: puts a task listening to empty
/// notifiers to sleep if all of them are inactive.
#[inline]
pub(crate) fn after_idle_run(core: &Core, t: usize) {
    let task = &core.tasks[t];
    let none = |l: &[Arc<Signal>]| !l.iter().any(|s| s.active.load(Ordering::Relaxed));
    if task.listen.empty.is_empty() || !none(&task.listen.empty) {
        return;
    }
    task.asleep.store(true, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    if !none(&task.listen.empty) {
        task.asleep.store(false, Ordering::Relaxed);
    }
}

/// Finds every task's notifiers (see the module documentation) and
/// registers the tasks as listeners. Called once, after the tasks exist.
pub(crate) fn connect(core: &mut Core) {
    let n = core.slots.len();
    let mut listeners: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut full_listeners: Vec<Vec<usize>> = vec![Vec::new(); n];
    for t in 0..core.tasks.len() {
        let (elem, wants_empty, wants_full) = {
            let task = &core.tasks[t];
            (task.elem, task.sleep_when_empty, task.wait_for_room)
        };
        let mut empty = Vec::new();
        if wants_empty {
            if let Some(found) = upstream_empty(core, elem) {
                for e in found {
                    listeners[e].push(t);
                    if let Some(nf) = core.slots[e].element.empty_notifier() {
                        empty.push(nf.sig.clone());
                    }
                }
            }
        }
        if wants_full {
            for e in downstream_full(core, elem) {
                full_listeners[e].push(t);
            }
        }
        core.tasks[t].listen = Listen {
            empty: empty.into(),
        };
    }
    for e in 0..n {
        if let Some(nf) = core.slots[e].element.full_notifier() {
            nf.sig.gates.store(true, Ordering::Relaxed);
        }
        if let Some(nf) = core.slots[e].element.empty_notifier() {
            let _ = nf
                .sig
                .listeners
                .set(std::mem::take(&mut listeners[e]).into());
        }
        if let Some(nf) = core.slots[e].element.full_notifier() {
            let _ = nf
                .sig
                .listeners
                .set(std::mem::take(&mut full_listeners[e]).into());
        }
    }
}

/// The elements with empty notifiers upstream of `elem`'s pull inputs, or
/// `None` if some pull path reaches an element that makes packets itself.
fn upstream_empty(core: &Core, elem: usize) -> Option<Vec<usize>> {
    let mut seen = vec![false; core.slots.len()];
    let mut stack: Vec<usize> = inputs(core, elem);
    let mut found = Vec::new();
    seen[elem] = true;
    if stack.is_empty() {
        return None;
    }
    while let Some(e) = stack.pop() {
        if std::mem::replace(&mut seen[e], true) {
            continue;
        }
        let el = &core.slots[e].element;
        if el.empty_notifier().is_some() {
            found.push(e);
            continue;
        }
        let next = inputs(core, e);
        if next.is_empty() || !el.pull_passes_signal() {
            return None;
        }
        stack.extend(next);
    }
    (!found.is_empty()).then_some(found)
}

fn inputs(core: &Core, e: usize) -> Vec<usize> {
    core.ports[e]
        .inputs
        .iter()
        .filter(|p| p.element().is_some())
        .map(|p| p.elem as usize)
        .collect()
}

/// The elements with full notifiers downstream of `elem`'s push outputs.
fn downstream_full(core: &Core, elem: usize) -> Vec<usize> {
    let mut seen = vec![false; core.slots.len()];
    let next = |e: usize| -> Vec<usize> {
        core.ports[e]
            .outputs
            .iter()
            .filter(|p| p.element().is_some())
            .map(|p| p.elem as usize)
            .collect()
    };
    let mut stack = next(elem);
    let mut found = Vec::new();
    seen[elem] = true;
    while let Some(e) = stack.pop() {
        if std::mem::replace(&mut seen[e], true) {
            continue;
        }
        if core.slots[e].element.full_notifier().is_some() {
            found.push(e);
            continue;
        }
        stack.extend(next(e));
    }
    found
}
