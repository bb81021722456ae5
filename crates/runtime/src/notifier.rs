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
//!   packets by itself (no pull input and no empty notifier), the task
//!   never sleeps.
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
//!   tasks' `asleep` flags and its count of wakes (and the timers, the
//!   epoch, `running`) and parks; a waker clears `asleep`, counts the
//!   wake, fences, and unparks the worker if it reads `parked`. (The count
//!   is what a worker napping for a task's time sees change when that
//!   task, awake, is woken: it was read before the pass.) An unpark that comes before the park is kept by the
//!   thread's park token, so the park returns at once.
//! - Asymmetric: a queue crossing threads publishes often and its puller
//!   goes to sleep seldom (it polls a while first), so the puller makes
//!   the fence for both ([`Notifier::sleep_heavy`], `membarrier(2)`: a
//!   fence on every running thread of the process) and the producer's
//!   publication has none ([`Notifier::wake_unfenced`]). Where the system
//!   refuses `membarrier`, both sides fence.
//!
//! No early wake-up of a gate. A consumer that made room decides to wake
//! a full notifier on a check of the ring it made earlier; meanwhile the
//! producer may have woken the signal itself (its own re-check saw the
//! room), filled the ring and put the signal to sleep again. The signal
//! is a generation count (even: active), and a checked wake is a
//! compare-and-swap from the generation read before the check, so a wake
//! on a stale check fails and looks again: a source is never let run into
//! a ring that is full.

use crate::core::Core;
use crate::cx::Cx;
use crate::handler::HandlerCx;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// One notifier signal, shared by the element that owns it and the
/// runtime (which wakes the listening tasks).
pub struct Notifier {
    sig: Arc<Signal>,
}

/// The signals upstream of one input of a relay; `None`: a path reaches
/// an element that makes packets itself.
type Upstream = Option<Box<[Arc<Signal>]>>;

pub(crate) struct Signal {
    /// A generation count: even while the signal is active, odd while it
    /// is inactive; every transition adds one. A waker that checked the
    /// condition at generation `g` can make the signal active only if it
    /// is still `g` (a compare-and-swap): a waker that decided on a room
    /// check made before the producer woke the signal itself, filled the
    /// queue again and made it inactive again cannot reopen it on its old
    /// check (a lost race of that kind let a source push into a full
    /// queue of capacity 2 about once in 30 runs of the ping-pong test).
    state: CachePadded<AtomicU32>,
    /// The listening tasks, fixed once the router is built.
    listeners: OnceLock<Box<[usize]>>,
    /// Listeners are gated by this signal (a full notifier): each counts
    /// its inactive gates in `Task::blocked`.
    gates: std::sync::atomic::AtomicBool,
    /// Which listener an opening gate wakes first ([`Signal::unblock`]):
    /// it moves on by one at every opening.
    turn: AtomicU32,
    /// A relay ([`Notifier::relay`]) stands for the signals upstream of its
    /// element's inputs: per input port, the signals found there (`None`:
    /// a path reaches an element that makes packets itself), fixed once
    /// the router is built.
    relay: bool,
    inputs: OnceLock<Box<[Upstream]>>,
    /// Relays woken whenever this signal is (those with it upstream).
    dependents: OnceLock<Box<[Arc<Signal>]>>,
}

impl Default for Notifier {
    fn default() -> Self {
        Notifier::new()
    }
}

impl Notifier {
    /// A notifier, initially active.
    pub fn new() -> Notifier {
        Notifier::with(true, false)
    }

    /// A notifier that is never active unless woken: an element that never
    /// has packets (Idle) gives one, so that pullers of it sleep.
    pub fn inactive() -> Notifier {
        Notifier::with(false, false)
    }

    /// An empty notifier for an element that passes on what its inputs
    /// have (PullSwitch): whenever a signal upstream of one of its inputs
    /// wakes, this one wakes too; the element makes it inactive itself
    /// ([`Notifier::sleep`]) when the input it uses is dormant
    /// ([`Notifier::upstream_active`]). Starts active or not as `active`.
    pub fn relay(active: bool) -> Notifier {
        Notifier::with(active, true)
    }

    fn with(active: bool, relay: bool) -> Notifier {
        Notifier {
            sig: Arc::new(Signal {
                state: CachePadded::new(AtomicU32::new(u32::from(!active))),
                listeners: OnceLock::new(),
                gates: AtomicBool::new(false),
                turn: AtomicU32::new(0),
                relay,
                inputs: OnceLock::new(),
                dependents: OnceLock::new(),
            }),
        }
    }

    /// A relay's view of input `port`: whether a signal upstream of it is
    /// active (true if a path there reaches an element that makes packets
    /// itself, and before the router is built).
    pub fn upstream_active(&self, port: usize) -> bool {
        match self.sig.inputs.get().and_then(|v| v.get(port)) {
            Some(Some(sigs)) => sigs.iter().any(|s| s.active()),
            _ => true,
        }
    }

    /// Whether the signal is active.
    #[inline]
    pub fn active(&self) -> bool {
        self.sig.active()
    }

    /// A hint before a wake that may come soon from another thread than
    /// the listeners': asks for the signal's cache line for writing.
    #[inline]
    pub fn prefetch(&self) {
        paraclick_packet::pool::prefetch_write(&*self.sig.state);
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
        if self.sig.active() {
            if let Some(g) = self.sig.deactivate(cx.core) {
                fence(Ordering::SeqCst);
                if !still() {
                    self.sig.wake_from(cx.core, g);
                }
            }
        }
    }

    /// [`Notifier::sleep`] for a signal whose wakers call
    /// [`Notifier::wake_unfenced`]: between making the signal inactive
    /// and re-checking with `still()`, the fence is made on every thread
    /// of the process at once ([`heavy_fence`]), so that the wakers need
    /// none of their own.
    #[inline]
    pub fn sleep_heavy(&self, cx: &Cx<'_>, still: impl FnOnce() -> bool) {
        if self.sig.active() {
            if let Some(g) = self.sig.deactivate(cx.core) {
                // Without the fence on the wakers' threads, asleep is not
                // safe: the signal stays active and the listeners poll.
                if !heavy_fence() || !still() {
                    self.sig.wake_from(cx.core, g);
                }
            }
        }
    }

    /// [`Notifier::wake`] for a signal whose sleepers call
    /// [`Notifier::sleep_heavy`]: no fence of the caller's own where the
    /// system makes the sleepers' fences reach this thread
    /// ([`light_wakes`]), a fence otherwise. A producer publishing to a
    /// queue drained on another core pays for it at every publication: a
    /// fence waits for the publication's stores, whose lines the polling
    /// consumer has just read.
    #[inline]
    pub fn wake_unfenced(&self, cx: &Cx<'_>) {
        if light_wakes() {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if !self.sig.active() {
            self.sig.wake(cx.core);
        }
    }

    /// The condition ended on a path where every listener runs on the
    /// calling thread (the queue is not crossing): wakes listeners if the
    /// signal was inactive. One relaxed load when it is active.
    #[inline]
    pub fn wake_local(&self, cx: &Cx<'_>) {
        if !self.sig.active() {
            self.sig.wake(cx.core);
        }
    }

    /// The condition ended on a path another thread may be listening to
    /// (a crossing queue): fences first, then wakes listeners if the
    /// signal was inactive.
    #[inline]
    pub fn wake(&self, cx: &Cx<'_>) {
        fence(Ordering::SeqCst);
        if !self.sig.active() {
            self.sig.wake(cx.core);
        }
    }

    /// The condition may have ended: wakes listeners if the signal was
    /// inactive and `ready()` says so (read only then), and the signal
    /// was not woken and made inactive again since `ready()` was read.
    /// Fenced first when a listener may be on another thread
    /// (`crossing`), as [`Notifier::wake`].
    #[inline]
    pub fn wake_if(&self, cx: &Cx<'_>, crossing: bool, ready: impl Fn() -> bool) {
        if crossing {
            fence(Ordering::SeqCst);
        }
        if !self.sig.active() {
            self.sig.wake_checked(cx.core, ready);
        }
    }

    /// [`Notifier::wake_if`] from a handler (any thread).
    pub fn wake_from_handler_if(&self, hx: &HandlerCx<'_>, ready: impl Fn() -> bool) {
        fence(Ordering::SeqCst);
        if !self.sig.active() {
            self.sig.wake_checked(hx.core, ready);
        }
    }
}

/// Whether [`heavy_fence`] makes a fence on every running thread of the
/// process (`membarrier(2)`, private expedited, registered at the first
/// call), so that wakers paired with [`Notifier::sleep_heavy`] may skip
/// theirs. Decided once: false where the system refuses it (an old
/// kernel, a seccomp filter), and every pair then fences on both sides.
pub fn light_wakes() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        use rustix::thread::{membarrier, MembarrierCommand};
        membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
            && membarrier(MembarrierCommand::PrivateExpedited).is_ok()
    })
}

/// A sequentially consistent fence on the calling thread and, where
/// [`light_wakes`], on every other thread of the process that is running
/// (the kernel interrupts their CPUs; a thread off its CPU passed a full
/// barrier when it left it): the heavy side of an asymmetric Dekker pair.
/// A waker that stored, then loads without a fence of its own, either
/// loaded before this call's fence on its CPU (its store is then visible
/// to this thread's loads after the call) or after it (and sees this
/// thread's store before the call). False if the system failed to make
/// it (registered, the call fails only for want of kernel memory): the
/// caller must then not rely on the other threads' fences.
pub fn heavy_fence() -> bool {
    fence(Ordering::SeqCst);
    if !light_wakes() {
        return true;
    }
    use rustix::thread::{membarrier, MembarrierCommand};
    membarrier(MembarrierCommand::PrivateExpedited).is_ok()
}

impl Signal {
    fn listeners(&self) -> &[usize] {
        self.listeners.get().map(|l| &l[..]).unwrap_or(&[])
    }

    #[inline]
    fn active(&self) -> bool {
        self.state.load(Ordering::Relaxed) & 1 == 0
    }

    /// Active to inactive. Returns the inactive generation this call
    /// made, or `None` if the signal was already inactive. A gate counts
    /// itself in each listener's `blocked` before the transition, so that
    /// the wake that undoes it (which must see the transition first) never
    /// takes the count below zero.
    #[cold]
    fn deactivate(&self, core: &Core) -> Option<u32> {
        let gates = self.gates.load(Ordering::Relaxed);
        if gates {
            for &t in self.listeners() {
                core.tasks[t].blocked.fetch_add(1, Ordering::SeqCst);
            }
        }
        let made = self
            .state
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |g| {
                (g & 1 == 0).then(|| g.wrapping_add(1))
            });
        match made {
            Ok(g) => Some(g.wrapping_add(1)),
            Err(_) => {
                // Already inactive (another producer saw the condition).
                if gates {
                    self.unblock(core);
                }
                None
            }
        }
    }

    /// Inactive to active, whatever the generation.
    #[cold]
    fn wake(&self, core: &Core) {
        self.wake_checked(core, || true);
    }

    /// Inactive to active if the signal is still at inactive generation
    /// `g` (the caller checked the condition after `g` was made).
    #[cold]
    fn wake_from(&self, core: &Core, g: u32) {
        let _ = self.wake_from_inner(core, g);
    }

    /// Inactive to active if `ready()`, read after the generation it
    /// wakes from, holds.
    #[cold]
    fn wake_checked(&self, core: &Core, ready: impl Fn() -> bool) {
        let mut g = self.state.load(Ordering::SeqCst);
        while g & 1 == 1 && ready() {
            match self.wake_from_inner(core, g) {
                Ok(()) => return,
                Err(now) => g = now,
            }
        }
    }

    fn wake_from_inner(&self, core: &Core, g: u32) -> Result<(), u32> {
        self.state
            .compare_exchange(g, g.wrapping_add(1), Ordering::SeqCst, Ordering::SeqCst)?;
        if self.gates.load(Ordering::Relaxed) {
            self.unblock(core);
        } else {
            for &t in self.listeners() {
                fence(Ordering::SeqCst);
                wake_task(core, t);
            }
        }
        // Relays downstream: active again, their listeners woken (a relay
        // already active stops the chain, so a cycle ends).
        if let Some(ds) = self.dependents.get() {
            for d in ds.iter() {
                fence(Ordering::SeqCst);
                if !d.active() {
                    d.wake(core);
                }
            }
        }
        Ok(())
    }

    /// Takes this gate out of each listener's `blocked` count, waking the
    /// listeners whose last closed gate it was.
    ///
    /// Every count first, then the wake-ups, starting at a listener that
    /// moves on by one at each opening. Two sources on one thread feeding
    /// a queue drained on another were counted down and woken one after
    /// the other, always the first listener first: it ran, filled the
    /// room and closed the gate again before the second's count came
    /// down, and the second made 23 thousand packets in a second against
    /// the first's 3.3 million (the two take turns on one thread, where
    /// the pass order alternates them).
    fn unblock(&self, core: &Core) {
        let ls = self.listeners();
        // The opened listeners among the first 64 (a gate with more wakes
        // the rest as their counts come down, in list order).
        let mut open = 0u64;
        for (i, &t) in ls.iter().enumerate() {
            // Not 1: another gate of the task is still closed.
            if core.tasks[t].blocked.fetch_sub(1, Ordering::SeqCst) != 1 {
                continue;
            }
            if i < 64 {
                open |= 1 << i;
            } else {
                fence(Ordering::SeqCst);
                wake_task(core, t);
            }
        }
        if open == 0 {
            return;
        }
        fence(Ordering::SeqCst);
        let n = ls.len().min(64);
        let first = self.turn.fetch_add(1, Ordering::Relaxed) as usize % n;
        for k in 0..n {
            let i = (first + k) % n;
            if open & (1 << i) != 0 {
                wake_task(core, ls[i]);
            }
        }
    }
}

/// Clears task `t`'s sleep and unparks its worker if parked.
///
/// Called when a signal the task listens to goes from inactive to active,
/// so the task is most likely asleep: one swap, without a plain load
/// first. On another core's task that load missed and then the swap
/// missed again for ownership, two line transfers per wake-up.
///
/// A task awake whose worker is parked anyway is napping until a time
/// its pull path gave ([`Cx::wake_at`]: a Shaper behind a scheduler whose
/// other input was empty): the packets that just arrived should not wait
/// for that time, so its worker is unparked too.
///
/// The worker's `wakes` count goes up before `parked` is read: a worker
/// that looked at its tasks before the wake (the task was awake, so
/// there is no `asleep` flag to see cleared) and marks itself parked after
/// it sees the count changed and does not nap (see
/// [`crate::core::ThreadShared::wakes`]).
pub(crate) fn wake_task(core: &Core, t: usize) {
    let task = &core.tasks[t];
    task.asleep.swap(false, Ordering::SeqCst);
    let ts = &core.threads[task.thread.load(Ordering::Acquire) % core.nthreads];
    ts.wakes.fetch_add(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if ts.parked.load(Ordering::SeqCst) {
        ts.unpark_now();
    }
}

/// Unparks worker `th` if it is parked (or about to park).
pub(crate) fn unpark_worker(core: &Core, th: usize) {
    let ts = &core.threads[th % core.nthreads];
    if ts.parked.load(Ordering::SeqCst) {
        ts.unpark_now();
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
    /// The elements between the task and those notifiers (schedulers such
    /// as DRRSched), and the task's own element (DelayUnqueue,
    /// LinkUnqueue): one that holds packets (`Node::queued`) keeps the
    /// task awake, since no notifier says it has them.
    pub holders: Box<[usize]>,
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
    let none = |l: &[Arc<Signal>]| !l.iter().any(|s| s.active());
    if task.listen.empty.is_empty() || !none(&task.listen.empty) {
        return;
    }
    // A puller that did not pull (a rate's bucket short) leaves what a
    // scheduler holds: asleep, it would strand those packets.
    if task
        .listen
        .holders
        .iter()
        .any(|&h| core.slots[h].element.queued() > 0)
    {
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
        let mut holders = Vec::new();
        if wants_empty {
            holders = upstream_holders(core, elem);
            // The task's own element, if it holds packets back (a delay
            // line whose head is not due): asleep, it would strand them.
            holders.push(elem);
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
            holders: holders.into(),
        };
    }
    connect_relays(core);
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

/// Gives each relay notifier the signals upstream of each of its element's
/// inputs, and makes it a dependent of them.
fn connect_relays(core: &Core) {
    let n = core.slots.len();
    let mut dependents: Vec<Vec<Arc<Signal>>> = vec![Vec::new(); n];
    for e in 0..n {
        let Some(nf) = core.slots[e].element.empty_notifier() else {
            continue;
        };
        if !nf.sig.relay {
            continue;
        }
        let mut per_port = Vec::new();
        for p in core.ports[e].inputs.iter() {
            let start: Vec<usize> = p.element().map(|_| p.elem as usize).into_iter().collect();
            let found = if start.is_empty() {
                Some(Vec::new())
            } else {
                upstream_empty_from(core, e, start)
            };
            per_port.push(found.map(|f| {
                f.into_iter()
                    .filter_map(|u| {
                        let s = core.slots[u].element.empty_notifier()?.sig.clone();
                        dependents[u].push(nf.sig.clone());
                        Some(s)
                    })
                    .collect::<Box<[_]>>()
            }));
        }
        let _ = nf.sig.inputs.set(per_port.into());
    }
    for (e, d) in dependents.into_iter().enumerate() {
        if let Some(nf) = core.slots[e].element.empty_notifier() {
            let _ = nf.sig.dependents.set(d.into());
        }
    }
}

/// The elements with empty notifiers upstream of `elem`'s pull inputs, or
/// `None` if some pull path reaches an element that makes packets itself.
fn upstream_empty(core: &Core, elem: usize) -> Option<Vec<usize>> {
    upstream_empty_from(core, elem, inputs(core, elem))
}

/// [`upstream_empty`] from the elements in `stack` (upstream of `elem`).
fn upstream_empty_from(core: &Core, elem: usize, mut stack: Vec<usize>) -> Option<Vec<usize>> {
    // A set, not a flag per element: one walk per task, and a walk costs
    // what it visits (a configuration of many pipelines made it quadratic).
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    seen.insert(elem);
    if stack.is_empty() {
        return None;
    }
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        let el = &core.slots[e].element;
        if el.empty_notifier().is_some() {
            found.push(e);
            continue;
        }
        let next = inputs(core, e);
        if next.is_empty() {
            return None;
        }
        stack.extend(next);
    }
    (!found.is_empty()).then_some(found)
}

/// The elements without empty notifiers that [`upstream_empty`] walks
/// through from `elem` (`elem` not included).
fn upstream_holders(core: &Core, elem: usize) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    seen.insert(elem);
    let mut stack = inputs(core, elem);
    while let Some(e) = stack.pop() {
        if !seen.insert(e) || core.slots[e].element.empty_notifier().is_some() {
            continue;
        }
        out.push(e);
        stack.extend(inputs(core, e));
    }
    out
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
    let next = |e: usize| -> Vec<usize> {
        core.ports[e]
            .outputs
            .iter()
            .filter(|p| p.element().is_some())
            .map(|p| p.elem as usize)
            .collect()
    };
    downstream_full_from(core, elem, next(elem))
}

/// [`downstream_full`] from the elements in `stack` (downstream of `elem`).
fn downstream_full_from(core: &Core, elem: usize, mut stack: Vec<usize>) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    let next = |e: usize| -> Vec<usize> {
        core.ports[e]
            .outputs
            .iter()
            .filter(|p| p.element().is_some())
            .map(|p| p.elem as usize)
            .collect()
    };
    let mut found = Vec::new();
    seen.insert(elem);
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
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

/// What a listener at one port of an element would hear: Click's
/// notification signal there, for inspection (NotifierDebug's `signal`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignalView {
    /// A path reaches an element that makes packets itself: always active.
    Busy,
    /// No notifier and no source: never active.
    Idle,
    /// The notifiers heard: each as its number (the notifiers of that kind
    /// numbered in the order their elements are declared) and whether it
    /// is active.
    Signals(Vec<(usize, bool)>),
}

impl SignalView {
    /// Click's unparsed form: `busy*`, `idle`, or the signals in words of
    /// 32 by number, `KIND.WORD/MASK:ACTIVE` (hexadecimal bit masks of the
    /// signals heard and of those active), a `*` after an active word,
    /// words joined by `+`.
    pub fn unparse(&self, kind: &str) -> String {
        let sigs = match self {
            SignalView::Busy => return "busy*".into(),
            SignalView::Idle => return "idle".into(),
            SignalView::Signals(v) => v,
        };
        let mut words: std::collections::BTreeMap<usize, (u32, u32)> = Default::default();
        for &(n, on) in sigs {
            let w = words.entry(n / 32).or_default();
            w.0 |= 1 << (n % 32);
            if on {
                w.1 |= 1 << (n % 32);
            }
        }
        let parts: Vec<String> = words
            .iter()
            .map(|(w, (mask, on))| {
                let star = if *on != 0 { "*" } else { "" };
                format!("{kind}.{w}/{mask:x}:{on:x}{star}")
            })
            .collect();
        parts.join("+")
    }
}

/// The empty notifiers upstream of input `port` of `elem`.
pub(crate) fn upstream_view(core: &Core, elem: usize, port: usize) -> SignalView {
    let Some(p) = core.ports[elem].inputs.get(port) else {
        return SignalView::Idle;
    };
    let start: Vec<usize> = p.element().map(|_| p.elem as usize).into_iter().collect();
    if start.is_empty() {
        return SignalView::Idle;
    }
    match upstream_empty_from(core, elem, start) {
        None => SignalView::Busy,
        Some(found) => {
            SignalView::Signals(number(found, |e| core.slots[e].element.empty_notifier()))
        }
    }
}

/// The full notifiers downstream of output `port` of `elem`.
pub(crate) fn downstream_view(core: &Core, elem: usize, port: usize) -> SignalView {
    let Some(p) = core.ports[elem].outputs.get(port) else {
        return SignalView::Idle;
    };
    let start: Vec<usize> = p.element().map(|_| p.elem as usize).into_iter().collect();
    let found = downstream_full_from(core, elem, start);
    if found.is_empty() {
        // No queue downstream: nothing ever stops the pushes.
        return SignalView::Busy;
    }
    SignalView::Signals(number(found, |e| core.slots[e].element.full_notifier()))
}

/// Each element's notifier (by `get`) as its number among the elements
/// with one, and whether it is active; sorted by number.
fn number<'c>(
    found: Vec<usize>,
    get: impl Fn(usize) -> Option<&'c Notifier>,
) -> Vec<(usize, bool)> {
    let mut v: Vec<(usize, bool)> = found
        .into_iter()
        .filter_map(|e| {
            let n = get(e)?;
            let rank = (0..e).filter(|&x| get(x).is_some()).count();
            Some((rank, n.active()))
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::Notifier;
    use crate::registry::Registry;
    use crate::testing::build;
    use std::cell::Cell;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_wake_decided_on_an_old_check_does_not_reopen_a_signal_that_slept_again() {
        // The race of a full notifier on a crossing queue, played in one
        // thread: the consumer sees the signal inactive and the queue with
        // room; before it wakes the signal, the producer wakes it itself,
        // fills the queue again and makes it inactive again. The
        // consumer's wake must then look again (the queue is full) and
        // leave the signal inactive.
        let r = build(&Registry::new(), "TestSource -> TestSink;");
        let core = &*r.core;
        let n = Notifier::new();
        let sig = &n.sig;
        assert!(n.active());
        let g = sig.deactivate(core).expect("was active");
        assert!(!n.active());
        let full = Cell::new(false);
        let calls = Cell::new(0);
        sig.wake_checked(core, || {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                // The producer, between the consumer's check and its wake.
                sig.wake_from(core, g);
                full.set(true);
                assert!(sig.deactivate(core).is_some());
                return true; // what the consumer saw before
            }
            !full.get()
        });
        assert_eq!(calls.get(), 2, "the wake looked again");
        assert!(!n.active(), "a full queue's signal stays inactive");
        // With room, the same wake opens it; a second wake does nothing.
        full.set(false);
        sig.wake_checked(core, || !full.get());
        assert!(n.active());
        sig.wake_from(core, g);
        assert!(n.active());
        // A self-wake from an old generation does not reopen it either.
        let g2 = sig.deactivate(core).unwrap();
        sig.wake(core);
        assert!(sig.deactivate(core).is_some());
        sig.wake_from(core, g2);
        assert!(!n.active());
    }

    #[test]
    fn a_wake_unparks_the_worker_of_an_awake_task_napping_for_a_time() {
        // A task awake (it pulled through a Shaper that gave a time, and
        // from an empty queue) whose worker parked until that time: a
        // push into the empty queue must unpark the worker, not leave the
        // packet for the nap's end. Played in one thread: the "worker" is
        // this thread, so the unpark leaves a token and the park returns
        // at once instead of after 20 s.
        struct Tasked;
        impl crate::Element for Tasked {
            fn initialize(&self, ix: &mut crate::InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
        }
        let mut reg = Registry::new();
        reg.register(crate::ClassSpec::element("Tasked", "0/0", "h", |_| {
            Ok(Tasked)
        }));
        let r = build(&reg, "Tasked;");
        let core = &*r.core;
        let t = 0;
        assert!(!core.tasks[t].asleep.load(Ordering::SeqCst));
        let th = core.tasks[t].thread.load(Ordering::SeqCst) % core.nthreads;
        let ts = &core.threads[th];
        *ts.handle.lock().unwrap() = Some(std::thread::current());
        // Drain a token left over from anything before.
        std::thread::park_timeout(std::time::Duration::from_millis(1));
        ts.parked.store(true, Ordering::SeqCst);
        super::wake_task(core, t);
        let t0 = std::time::Instant::now();
        std::thread::park_timeout(std::time::Duration::from_secs(20));
        ts.parked.store(false, Ordering::SeqCst);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "the worker stayed parked"
        );
    }
}
