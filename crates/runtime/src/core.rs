//! The router's shared core: what every part of a running router reaches
//! (`Core`: the elements' slots and wiring, the tasks, the threads' shared
//! state, the clock, the plan), apart from how a router is built
//! ([`crate::router`]) so that the parts (contexts, crossings, the
//! scheduler, handlers, notifiers, hot swaps) import it, not the builder.

use crate::args::ArgEnv;
use crate::element::{FusedAction, Node};
use crate::handler::HandlerCx;
use crate::sched::{SchedPolicy, Task};
use crate::timer::{TimerQueue, MAX_TIMERS};
use crossbeam_utils::CachePadded;
use paraclick_lang::check::PortKind;
use paraclick_lang::Span;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where a connection leads: the element and port at the other end, and a
/// direct pointer to that element, so a hop is one load and one call.
///
/// 64 bytes, so that indexing a table of them is a shift: the input port
/// is a `u16` (the language allows ports up to
/// 65,535, `MAX_PORT` in the language crate) to make room for the
/// compiled entry.
pub(crate) struct Peer {
    to: Option<NonNull<dyn Node>>,
    /// The peer's action loop if it is a per-packet element
    /// ([`crate::Action`]), which [`Cx::push`] runs in its own loop
    /// instead of calling the peer's `push` (set at build time; never
    /// when profiling, which needs every hop).
    fused: Option<NonNull<dyn FusedAction>>,
    /// The peer's own output peers (its `Ports::outputs`), so a fused hop
    /// goes on to the next without indexing the router's port table.
    pub(crate) next: NonNull<[Peer]>,
    /// The peer's compiled one-packet entry ([`crate::compiled`]), if one
    /// was installed at its input 0 (null otherwise): set before the
    /// router runs, read by the one-packet path once per push.
    compiled: AtomicPtr<Box<dyn crate::compiled::CompiledPush>>,
    pub elem: u32,
    pub port: u16,
    /// Whether `fused` also takes whole batches (an [`crate::Action`]'s
    /// loop); an element that only routes single packets takes its
    /// batches through its own `push`, as an unfused hop.
    batches: bool,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Peer>() == 64);

// SAFETY: `to` points at an element owned (through an `Arc`) by the same
// `Core` that holds this `Peer`; elements are `Send + Sync`, so sharing a
// pointer to one across threads is as safe as sharing the `Arc`. `next`
// points at an output table of that `Core`, and `compiled` at an entry
// the `Core` owns (`Core::compiled`), `Send + Sync` too.
unsafe impl Send for Peer {}
// SAFETY: as above.
unsafe impl Sync for Peer {}

impl Clone for Peer {
    fn clone(&self) -> Peer {
        Peer {
            to: self.to,
            fused: self.fused,
            next: self.next,
            compiled: AtomicPtr::new(self.compiled.load(Ordering::Relaxed)),
            elem: self.elem,
            port: self.port,
            batches: self.batches,
        }
    }
}

impl Peer {
    pub(crate) fn unconnected() -> Peer {
        Peer {
            to: None,
            fused: None,
            next: NonNull::slice_from_raw_parts(NonNull::dangling(), 0),
            compiled: AtomicPtr::new(std::ptr::null_mut()),
            elem: u32::MAX,
            port: 0,
            batches: false,
        }
    }

    pub(crate) fn new(to: &(dyn Node + 'static), elem: usize, port: usize, fuse: bool) -> Peer {
        // A fused hop ignores the input port: only input 0 fuses (every
        // Action has one input; an element routing single packets is
        // fused on its first input only).
        let fused = if fuse && port == 0 { to.fused() } else { None };
        Peer {
            to: Some(NonNull::from(to)),
            batches: fused.is_some_and(|f| f.fuses_batches()),
            fused: fused.map(NonNull::from),
            next: NonNull::slice_from_raw_parts(NonNull::dangling(), 0),
            compiled: AtomicPtr::new(std::ptr::null_mut()),
            elem: elem as u32,
            // At most MAX_PORT (the parser's limit) fits.
            port: u16::try_from(port).unwrap_or(u16::MAX),
        }
    }

    /// The peer element's output peers (empty for an unconnected peer).
    #[inline]
    pub fn next(&self) -> &[Peer] {
        // SAFETY: `next` is the empty slice or points at the boxed output
        // table of the peer in the same `Core` (set once in
        // `Router::connect`, never changed), which lives as long as this
        // `Peer`.
        unsafe { self.next.as_ref() }
    }

    /// The element at the other end.
    #[inline]
    pub fn element(&self) -> Option<&dyn Node> {
        // SAFETY: the pointer comes from an `Arc` held in `Core::slots` for
        // as long as the `Core` (and so this `Peer`) exists, and elements
        // are only ever shared immutably.
        self.to.map(|p| unsafe { p.as_ref() })
    }

    /// The element's fused action loop, if the hop is fused.
    #[inline]
    pub fn fused(&self) -> Option<&dyn FusedAction> {
        // SAFETY: points into the same element as `to` (see above).
        self.fused.map(|p| unsafe { p.as_ref() })
    }

    /// The fused loop for a batch hop ([`Peer::fused`] if it takes
    /// batches).
    #[inline]
    pub fn fused_batch(&self) -> Option<&dyn FusedAction> {
        if self.batches {
            self.fused()
        } else {
            None
        }
    }

    /// The compiled one-packet entry installed at the peer's input 0.
    #[inline(always)]
    pub fn compiled(&self) -> Option<&dyn crate::compiled::CompiledPush> {
        // Relaxed: entries are stored before the router runs, and the
        // workers that read them are started (a synchronization) after.
        let p = self.compiled.load(Ordering::Relaxed);
        // SAFETY: non-null only when set by `Core::set_compiled` to an
        // entry boxed in `Core::compiled`, which is never removed while
        // the `Core` (and so this `Peer`) exists.
        unsafe { p.as_ref() }.map(|b| &**b)
    }

    /// Whether the peer has a compiled entry (see [`Peer::compiled`]).
    #[inline(always)]
    pub fn has_compiled(&self) -> bool {
        !self.compiled.load(Ordering::Relaxed).is_null()
    }

    /// Points the peer at a compiled entry (see [`Peer::compiled`]).
    pub(crate) fn set_compiled(&self, entry: *mut Box<dyn crate::compiled::CompiledPush>) {
        self.compiled.store(entry, Ordering::Release);
    }
}

/// The hot part of an element's wiring, kept apart from the rest of its
/// slot so the packet path touches one small record per hop.
pub(crate) struct Ports {
    /// Per output port: the input it pushes into (push outputs only).
    pub outputs: Box<[Peer]>,
    /// Per input port: the output it pulls from (pull inputs only).
    pub inputs: Box<[Peer]>,
    /// Two of the element's push outputs lead (through push hops) to one
    /// element: a batch it splits goes on in runs of arrival order, so
    /// what meets again downstream meets in the order Click's one packet
    /// at a time gives ([`crate::router::ordered_splits`]).
    pub ordered: bool,
    /// `ordered`, and the element splits batches in its own `push` (not
    /// an action's `Splitter`, nor a route table that keeps the order
    /// itself): batches reach it one packet at a time, as in Click.
    pub one_by_one: bool,
}

/// An element as a slot holds it: shared (an [`crate::ElemRef`] keeps it
/// alive), with the address of the element itself kept beside, so that
/// reaching it is one load as from a `Box` (an `Arc<dyn Node>`'s deref
/// computes the offset of the value from the type's alignment, a few
/// instructions at every task run).
pub(crate) struct SlotNode {
    pub arc: Arc<dyn Node>,
    ptr: NonNull<dyn Node>,
}

// SAFETY: `ptr` points into `arc`'s allocation; `dyn Node` is `Send +
// Sync`, so sharing or sending the pointer is as safe as the `Arc`.
unsafe impl Send for SlotNode {}
// SAFETY: as above.
unsafe impl Sync for SlotNode {}

impl SlotNode {
    pub fn new(arc: Arc<dyn Node>) -> SlotNode {
        let ptr = NonNull::from(&*arc);
        SlotNode { arc, ptr }
    }
}

impl std::ops::Deref for SlotNode {
    type Target = dyn Node;
    #[inline(always)]
    fn deref(&self) -> &(dyn Node + 'static) {
        // SAFETY: `ptr` points at the element inside `arc`, alive as long
        // as `self`, and elements are only ever shared immutably.
        unsafe { self.ptr.as_ref() }
    }
}

pub(crate) struct Slot {
    pub element: SlotNode,
    pub name: String,
    pub class: String,
    pub config: String,
    /// The configuration as write handlers that reconfigure the element
    /// left it (`config` handler; see [`crate::HandlerCx::set_config_arg`]),
    /// `None` while it is `config`.
    pub live_config: std::sync::Mutex<Option<String>>,
    pub span: Span,
    pub input_kinds: Vec<PortKind>,
    pub output_kinds: Vec<PortKind>,
    pub timer_gens: [AtomicU64; MAX_TIMERS],
    pub tasks: Vec<usize>,
    /// Ring modes last given to the element (bit 0: multi-producer, bit 1:
    /// multi-consumer, bit 2: crossing), for reports and upgrade-only
    /// changes.
    pub modes: std::sync::atomic::AtomicU8,
    /// The element's class reads packet data
    /// ([`crate::ClassSpec::reads_data`]).
    pub reads_data: bool,
}

impl Slot {
    pub fn ring_modes(&self) -> (bool, bool) {
        let m = self.modes.load(Ordering::Acquire);
        (m & 1 != 0, m & 2 != 0)
    }

    pub fn crossing(&self) -> bool {
        self.modes.load(Ordering::Acquire) & 4 != 0
    }

    pub fn set_modes_seen(&self, mp: bool, mc: bool, crossing: bool) {
        self.modes.store(
            mp as u8 | (mc as u8) << 1 | (crossing as u8) << 2,
            Ordering::Release,
        );
    }
}

/// Per-thread shared state: timers, drop counters, the worklist.
pub(crate) struct ThreadShared {
    pub timers: TimerQueue,
    /// Per element: packets this thread dropped.
    pub drops: crate::drops::Counts,
    /// Per declared drop reason (see [`crate::drops::Reasons`]): packets
    /// this thread dropped for it.
    pub reason_drops: crate::drops::Counts,
    /// Per element: packets this thread dropped because they were sent
    /// to an unconnected output.
    pub unconnected: crate::drops::Counts,
    /// The tasks this thread runs; change it only through
    /// [`ThreadShared::set_worklist`], [`ThreadShared::add_task`] and
    /// [`ThreadShared::remove_task`], which tell the worker (its version).
    worklist: Mutex<Vec<usize>>,
    worklist_version: AtomicU64,
    pub polls: AtomicU64,
    pub idle_polls: AtomicU64,
    /// The packet pool of this worker's last run (0 if none).
    pub pool_id: std::sync::atomic::AtomicU32,
    /// The last synchronization epoch this worker has seen at the top of
    /// its loop (see `Core::barrier`).
    pub seen_epoch: AtomicU64,
    /// Whether this worker's data path looks at packets for the tracer
    /// (its context's flag, published when it changes: `trace_status`).
    pub tracing: AtomicBool,
    /// Cycles spent running tasks (sampled, scaled) and timers.
    pub busy_cycles: AtomicU64,
    /// Whether this worker is inside its loop (the barrier waits only for
    /// workers that are).
    pub alive: AtomicBool,
    /// The worker is parked or about to park (see [`crate::notifier`]);
    /// whoever gives it work unparks it through `handle`.
    pub parked: AtomicBool,
    pub handle: Mutex<Option<std::thread::Thread>>,
    /// The worker is parked in `poll(2)` on its devices' descriptors
    /// (see `sched::wait_readable`), not in `park`: a waker writes
    /// `wakefd` as well. Set before `parked`, cleared after it.
    pub polling: AtomicBool,
    /// An eventfd in the worker's poll set, made by the worker at its
    /// first wait on descriptors: written by [`ThreadShared::unpark_now`]
    /// while `polling`.
    pub wakefd: std::sync::OnceLock<std::os::fd::OwnedFd>,
    /// Times the worker parked (for tests and reports).
    pub parks: AtomicU64,
    /// Times the worker, with tasks awake but none with work for a while,
    /// yielded its core (for tests).
    pub yields: AtomicU64,
    /// Of those, times it waited in `poll(2)` on descriptors its tasks
    /// gave ([`crate::Cx::wake_when_readable`]), and times such a wait
    /// ended because one of them became readable.
    pub fd_waits: AtomicU64,
    pub fd_wakes: AtomicU64,
    /// Whether the worker is napping with nothing staged (a safe point a
    /// hot swap may claim without waking it), see [`crate::hot`].
    pub quiet: std::sync::atomic::AtomicU8,
    /// The worker is parked (or about to park) with a task that waits
    /// for a handler write ([`crate::Cx::wake_when_written`]): a write
    /// to an element's handler unparks it. Set before `parked`, cleared
    /// after it.
    pub until_written: AtomicBool,
    /// Times a notifier woke one of the worker's tasks
    /// ([`crate::notifier`]'s `wake_task`), counted before the waker reads
    /// `parked`. A worker naps only if the count is what it read before
    /// the pass that found no work: a wake of a task that was not asleep
    /// (it gave a time, [`crate::Cx::wake_at`]) changes nothing else the
    /// worker looks at, and a push landing as the worker decided to nap
    /// would otherwise wait for the nap's end.
    pub wakes: AtomicU64,
    /// Times a handler write unparked the worker so (for tests).
    pub write_wakes: AtomicU64,
    /// The worker's kernel thread id (0 until it starts), whose schedstat
    /// the adaptive scheduler reads ([`crate::contention`]).
    pub tid: std::sync::atomic::AtomicI32,
}

impl ThreadShared {
    pub(crate) fn new(nelements: usize, nreasons: usize) -> ThreadShared {
        ThreadShared {
            timers: TimerQueue::new(),
            drops: crate::drops::Counts::new(nelements),
            reason_drops: crate::drops::Counts::new(nreasons),
            unconnected: crate::drops::Counts::new(nelements),
            worklist: Mutex::new(Vec::new()),
            worklist_version: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            idle_polls: AtomicU64::new(0),
            pool_id: std::sync::atomic::AtomicU32::new(0),
            seen_epoch: AtomicU64::new(0),
            tracing: AtomicBool::new(false),
            busy_cycles: AtomicU64::new(0),
            alive: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            handle: Mutex::new(None),
            polling: AtomicBool::new(false),
            wakefd: std::sync::OnceLock::new(),
            parks: AtomicU64::new(0),
            yields: AtomicU64::new(0),
            fd_waits: AtomicU64::new(0),
            fd_wakes: AtomicU64::new(0),
            quiet: std::sync::atomic::AtomicU8::new(0),
            until_written: AtomicBool::new(false),
            wakes: AtomicU64::new(0),
            write_wakes: AtomicU64::new(0),
            tid: std::sync::atomic::AtomicI32::new(0),
        }
    }

    fn change_worklist(&self, f: impl FnOnce(&mut Vec<usize>)) {
        f(&mut self.worklist.lock().unwrap_or_else(|e| e.into_inner()));
        self.worklist_version.fetch_add(1, Ordering::AcqRel);
    }

    /// Replaces the worklist.
    pub fn set_worklist(&self, tasks: Vec<usize>) {
        self.change_worklist(|l| *l = tasks);
    }

    pub fn add_task(&self, t: usize) {
        self.change_worklist(|l| l.push(t));
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            self.unpark_now();
        }
    }

    /// Unparks the worker, wherever it waits: in `park`, or in `poll(2)`
    /// on its devices' descriptors (its eventfd is written then).
    pub fn unpark_now(&self) {
        if let Some(h) = &*self.handle.lock().unwrap_or_else(|e| e.into_inner()) {
            h.unpark();
        }
        if self.polling.load(Ordering::SeqCst) {
            if let Some(fd) = self.wakefd.get() {
                // An eventfd adds what is written to its count; a full
                // count (EAGAIN) is readable already.
                let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
            }
        }
    }

    pub fn remove_task(&self, t: usize) {
        self.change_worklist(|l| l.retain(|&x| x != t));
    }

    /// The worklist's version (changes with every change of the list).
    pub fn worklist_version(&self) -> u64 {
        self.worklist_version.load(Ordering::SeqCst)
    }

    /// The worker's copy of its worklist: refreshed into `list` if it
    /// changed since `version` (which is updated).
    #[inline(always)]
    pub fn refresh_worklist(&self, version: &mut u64, list: &mut Vec<usize>) {
        let v = self.worklist_version.load(Ordering::Acquire);
        if v != *version {
            list.clone_from(&self.worklist.lock().unwrap_or_else(|e| e.into_inner()));
            *version = v;
        }
    }
}

pub(crate) struct Core {
    pub slots: Box<[Slot]>,
    pub ports: Box<[Ports]>,
    pub names: HashMap<String, usize>,
    pub nthreads: usize,
    /// Each task and each thread's shared state on cache lines of its own:
    /// their counters are written on every task run, by the running thread,
    /// and must not share a line with another thread's.
    pub tasks: Box<[CachePadded<Task>]>,
    pub threads: Box<[CachePadded<ThreadShared>]>,
    pub running: AtomicBool,
    pub stop_requests: AtomicU64,
    pub driver: Option<usize>,
    /// The router's clock (real or simulated): the one source of time.
    pub clock: crate::time::RouterClock,
    /// How tasks not pinned by StaticThreadSched are placed (`--sched`).
    pub policy: SchedPolicy,
    pub pin: bool,
    pub exclusive: Mutex<()>,
    pub source: Arc<str>,
    pub plan: crate::plan::Plan,
    /// Synchronization epoch: bumped to make every worker pass the top of
    /// its loop (no task run in progress) before a plan change completes.
    pub sync_epoch: AtomicU64,
    /// Writes to elements' handlers so far: a worker about to wait for
    /// one ([`crate::Cx::wake_when_written`]) compares it with the count
    /// it read before its tasks ran (see [`Core::handler_written`]).
    pub handler_writes: AtomicU64,
    /// Serializes task migrations.
    pub migrating: Mutex<()>,
    /// The adaptive scheduler's thread while it runs, woken when the router
    /// stops (so a run does not last until its next look at the loads).
    pub balancer: Mutex<Option<std::thread::Thread>>,
    /// How often the adaptive scheduler looks at the loads, in
    /// nanoseconds; 0 for its default (a BalancedThreadSched's INTERVAL
    /// sets it: [`crate::InitCx::set_balance_interval`]).
    pub balance_interval_ns: AtomicU64,
    /// Cycles the workers have run (for the threads report's busy share).
    pub run_cycles: AtomicU64,
    /// Per-element cost sampling for `--report costs`.
    pub profile: Option<crate::sched::Profile>,
    /// The named addresses of the configuration, for handler writes that
    /// parse a value ([`HandlerCx::arg`]).
    pub arg_env: ArgEnv,
    /// Per element: packets dropped by its handlers (off the data path).
    pub handler_drops: Box<[AtomicU64]>,
    /// The elements' drop reasons, from their classes.
    pub reasons: crate::drops::Reasons,
    /// The packet tracer ([`crate::trace`]).
    pub tracer: crate::trace::Tracer,
    /// Live capture of a connection (see [`crate::capture`]).
    pub tap: crate::capture::Tap,
    /// What the global handlers report, and control sockets' servers.
    pub info: crate::control::RouterInfo,
    /// Workers that have entered their loop in this run, and when the last
    /// did (ns since `epoch`, plus 1; 0: not yet), for hot swaps' pauses.
    pub workers_started: std::sync::atomic::AtomicUsize,
    pub started_ns: AtomicU64,
    /// Workers wait here before their loop (closed for a router prepared
    /// to take over in a hot swap, see [`crate::hot`]).
    pub start_gate: Gate,
    /// Workers that have left their loop in this run; the last runs
    /// `handover`, if set (a hot swap's hand-over).
    pub workers_done: std::sync::atomic::AtomicUsize,
    pub handover: Mutex<Option<Handover>>,
    /// The hot-swappable router this one runs as (`-R`), for the global
    /// `hotconfig` written by the router's own elements.
    pub(crate) hot: Mutex<std::sync::Weak<crate::hot::Hot>>,
    /// The fault domains ([`crate::fault`]), if the router has any.
    pub domains: Option<Box<crate::fault::Domains>>,
    /// Compiled one-packet entries installed before the run
    /// ([`crate::compiled`]), kept for the core's life: peers point at
    /// them. Per element, the one in effect at its input 0 (null: none).
    pub compiled: Mutex<Vec<Arc<Box<dyn crate::compiled::CompiledPush>>>>,
    pub compiled_at: Box<[AtomicPtr<Box<dyn crate::compiled::CompiledPush>>]>,
    /// Compiled task runs installed before the run
    /// ([`crate::compiled::CompiledTasks`]): the workers run every task
    /// through it (unless profiling, guarded or share-scheduled).
    pub compiled_tasks: std::sync::OnceLock<Box<dyn crate::compiled::CompiledTasks>>,
}

impl Core {
    pub fn ns_since_epoch(&self, t: Instant) -> u64 {
        self.clock.ns_of(t)
    }

    /// OS threads that run the workers: one per thread, or one for all
    /// of them in simulated time (see `sched::sim_driver`).
    pub fn os_workers(&self) -> usize {
        if self.clock.is_simulated() {
            1
        } else {
            self.nthreads
        }
    }

    /// The thread an element's timers run on (see [`crate::plan`]).
    pub fn home_thread(&self, elem: usize) -> usize {
        self.plan.timer_thread(self, elem)
    }

    pub fn schedule_timer(&self, thread: usize, elem: usize, timer: usize, when: Instant) {
        if timer >= MAX_TIMERS {
            return;
        }
        let gen = self.slots[elem].timer_gens[timer].fetch_add(1, Ordering::AcqRel) + 1;
        self.threads[thread % self.nthreads].timers.schedule(
            self.ns_since_epoch(when),
            elem,
            timer,
            gen,
        );
        // A parked worker learns of the new deadline.
        std::sync::atomic::fence(Ordering::SeqCst);
        crate::notifier::unpark_worker(self, thread);
    }

    /// After a write to an element's handler (which may have given a task
    /// work: an inactive source made active): counts it, and unparks the
    /// workers waiting for one. The count and the worker's `until_written`
    /// and `parked` flags are a Dekker pair (see [`crate::notifier`]): a
    /// worker about to park either sees the count moved or is seen here.
    pub fn handler_written(&self) {
        self.handler_writes.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        for ts in self.threads.iter() {
            if ts.until_written.load(Ordering::SeqCst) && ts.parked.load(Ordering::SeqCst) {
                ts.write_wakes.fetch_add(1, Ordering::Relaxed);
                ts.unpark_now();
            }
        }
    }

    pub fn unschedule_timer(&self, elem: usize, timer: usize) {
        if timer < MAX_TIMERS {
            self.slots[elem].timer_gens[timer].fetch_add(1, Ordering::AcqRel);
        }
    }

    pub fn request_stop(&self) {
        self.stop_requests.fetch_add(1, Ordering::AcqRel);
        match self.driver {
            Some(d) => self.slots[d].element.stop_requested(&HandlerCx {
                core: self,
                elem: d,
            }),
            None => self.stop_now(),
        }
    }

    pub fn stop_now(&self) {
        self.running.store(false, Ordering::Release);
        crate::notifier::unpark_all(self);
        // Napping workers too (they nap in `park_timeout`): a hot swap's
        // pause starts here.
        for ts in self.threads.iter() {
            ts.unpark_now();
        }
        if let Some(t) = &*self.balancer.lock().unwrap_or_else(|e| e.into_inner()) {
            t.unpark();
        }
    }
}

// The hot swap's side in the running router: the start gate and the safe
// points its workers pass ([`crate::hot`] prepares and runs the swap).

/// A router's start gate: its workers, once set up, wait here (parked)
/// before entering their loops. Open for an ordinary run; closed for a
/// router prepared to take over in a hot swap, until the hand-over.
///
/// (Workers spinning at the gate just before the swap, so that opening it
/// wakes no thread, made the pause longer on a 2-core machine shared with
/// other work: median ~110 us against ~55 us parked, the spinners taking
/// the processor from the threads doing the hand-over.)
pub struct Gate {
    open: AtomicBool,
    waiting: AtomicUsize,
    waiters: Mutex<Vec<std::thread::Thread>>,
}

impl Gate {
    pub(crate) fn new(open: bool) -> Gate {
        Gate {
            open: AtomicBool::new(open),
            waiting: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn close(&self) {
        self.open.store(false, Ordering::Release);
    }

    /// Threads that have come to the gate while it was closed.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    pub(crate) fn wait(&self) {
        if self.open.load(Ordering::Acquire) {
            return;
        }
        self.waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(std::thread::current());
        self.waiting.fetch_add(1, Ordering::AcqRel);
        // `open` stores, then unparks every registered thread: a thread
        // registered before is unparked, one after sees it open.
        while !self.open.load(Ordering::Acquire) {
            std::thread::park_timeout(Duration::from_millis(10));
        }
    }

    pub(crate) fn open(&self) {
        self.open.store(true, Ordering::Release);
        for t in self
            .waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            t.unpark();
        }
    }
}

pub(crate) const RUNNING: u8 = 0;
pub(crate) const NAPPING: u8 = 1;
pub(crate) const CLAIMED: u8 = 2;

/// A worker's nap (`nap`: yield, park, sleep) as a safe point: with
/// nothing staged and no element being run, the worker says it is napping;
/// a hot swap that stops the router may claim it (`claim_napping` in [`crate::hot`]) and
/// hand over without waiting for it to wake. Returns false if it was
/// claimed: the worker must then leave without touching any element.
#[inline]
pub(crate) fn quiet_nap(ts: &ThreadShared, cx: &mut crate::Cx<'_>, nap: impl FnOnce()) -> bool {
    if cx.has_deferred() {
        cx.flush_deferred();
    }
    ts.quiet.store(NAPPING, Ordering::SeqCst);
    nap();
    ts.quiet
        .compare_exchange(NAPPING, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// What the last worker of a router to leave its loop runs: a hot swap's
/// hand-over, given the (quiet) old router's core.
pub(crate) type Handover = Box<dyn FnOnce(&Core) + Send>;

/// Runs the hand-over set on `core`, if any (the run has ended: every
/// worker left its loop, or none ran).
pub(crate) fn run_handover(core: &Core) {
    let h = core
        .handover
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(h) = h {
        h(core);
    }
}
