//! Hot reconfiguration: Click's `-R` and `hotconfig` handler.
//!
//! Writing a configuration to `hotconfig` ([`Hot::hotconfig`]) builds and
//! initializes a new router while the old one runs; any error leaves the
//! old one running and goes back to the writer, located. Then, still
//! while the old router runs, the new one is *prepared*: a thread of its
//! own starts it, and its worker threads are created, set up (pinning,
//! per-thread state) and wait at its start gate ([`Gate`]). Only then the
//! swap, the data path's pause:
//!
//! 1. the old router's workers are told to stop; each finishes its pass
//!    and publishes what it staged (a safe point: no packet is between two
//!    elements). A worker napping (yielding, parked, asleep between idle
//!    passes) is at such a point already, having published before it
//!    napped: the swap claims it without waiting for it to wake
//!    (`claim_napping`); it leaves, touching nothing, when it wakes;
//! 2. the last of them to get there (or the swapping thread, if it
//!    claimed the last), on its own thread (no thread has to be woken
//!    for it), makes every element of the new router whose name
//!    and class match an old element take that element's state
//!    ([`crate::Element::take_state`]: queued packets, counts, tables),
//!    carries the router's per-element drop counts over (conservation
//!    holds across swaps), makes the new router the current one and opens
//!    its gate;
//! 3. the new router's workers, already waiting, enter their loops.
//!
//! The pause, from the stop request until every new worker is in its loop,
//! is measured for each swap ([`Hot::timings`], the `hotswaps` handler, and
//! a line on stderr). The old workers exit, and the old router is dropped,
//! after the new one runs, off the data path.
//!
//! Control sockets: a `ControlSocket` element of the new configuration
//! with the same type and address as one of the old configuration takes
//! over its open socket, connections included (see [`Hot::hotconfig`]);
//! every control socket reaches the current router and `hotconfig`.
//!
//! The router's own elements (a Script's or DriverManager's `write
//! hotconfig`, through the global handler) swap too, with `-R`
//! ([`Hot::hotconfig_from_router`]): the writer runs on a worker of the
//! router being replaced, so the write builds and prepares, asks the old
//! router to stop and returns; the hand-over happens once the writer's
//! task has returned, never inside it. Under simulated time the new
//! router's clock goes on from the old one's.

use crate::control::{Backend, CsError, RouterHandle};
pub use crate::core::Gate;
use crate::core::{run_handover, Core, Handover, CLAIMED, NAPPING};
pub use crate::cx::StateCx;
use crate::router::{BuildOptions, Router};
use crate::Registry;
use paraclick_lang::{render, render_click, Source, SourceSet};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// What a swap carried over.
#[derive(Clone, Debug, Default)]
pub struct TakeReport {
    /// Elements of the new router that took an old element's state.
    pub taken: usize,
    /// Packets held by old elements that have no counterpart (name and
    /// class) in the new router; they are freed with the old router.
    pub discarded: u64,
}

impl Router {
    /// Takes the state of `old` (stopped) into this router (built, not yet
    /// run): each element of the same name and class takes its counterpart's
    /// state, and per-element drop counts carry over. Fails if either router
    /// is running.
    pub fn take_state_from(&self, old: &Router) -> Result<TakeReport, String> {
        let (oc, nc) = (&*old.core, &*self.core);
        let _og = oc
            .exclusive
            .try_lock()
            .map_err(|_| "the old router is still running".to_string())?;
        let _ng = nc
            .exclusive
            .try_lock()
            .map_err(|_| "the new router is already running".to_string())?;
        Ok(take_state(nc, oc))
    }

    /// When every worker of the current run had entered its loop.
    pub fn workers_started_at(&self) -> Option<Instant> {
        let ns = self.core.started_ns.load(Ordering::Acquire);
        (ns != 0).then(|| self.core.clock.epoch() + Duration::from_nanos(ns - 1))
    }
}

/// [`Router::take_state_from`] without the locks: both routers must be
/// quiet (see [`StateCx`]).
fn take_state(nc: &Core, oc: &Core) -> TakeReport {
    // Traces go on: the records so far and the request in effect.
    nc.tracer.carry(&oc.tracer, oc, nc);
    {
        let mut rep = TakeReport::default();
        let mut matched = vec![false; oc.slots.len()];
        for (i, slot) in nc.slots.iter().enumerate() {
            let Some(&j) = oc.names.get(&slot.name) else {
                continue;
            };
            let os = &oc.slots[j];
            if os.class != slot.class {
                continue;
            }
            let mut sx = StateCx {
                new: nc,
                new_elem: i,
                old_threads: oc.nthreads,
                same_config: os.config == slot.config,
            };
            if !slot.element.take_state(os.element.as_any(), &mut sx) {
                continue;
            }
            matched[j] = true;
            rep.taken += 1;
            let d = crate::drops::total(oc, j);
            nc.handler_drops[i].fetch_add(d, Ordering::Relaxed);
            crate::drops::carry(nc, i, oc, j);
        }
        for (j, s) in oc.slots.iter().enumerate() {
            if !matched[j] {
                rep.discarded += s.element.queued() as u64;
            }
        }
        rep
    }
}

/// After a stop request: counts each napping worker of `core` as done
/// (it will leave when it wakes, touching nothing); if that makes every
/// worker done, runs the hand-over on the calling thread.
fn claim_napping(core: &Core) {
    for ts in core.threads.iter() {
        if ts
            .quiet
            .compare_exchange(NAPPING, CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            && core.workers_done.fetch_add(1, Ordering::AcqRel) + 1 == core.nthreads
        {
            run_handover(core);
        }
    }
}

/// Sets `core`'s hand-over, unless its run is over already.
fn set_handover(core: &Core, h: Handover) -> Result<(), Handover> {
    let mut g = lock(&core.handover);
    if g.is_some() || core.workers_done.load(Ordering::Acquire) >= core.nthreads {
        return Err(h);
    }
    *g = Some(h);
    Ok(())
}

/// One swap's timing.
#[derive(Clone, Copy, Debug)]
pub struct SwapTiming {
    /// Stop request to old workers gone.
    pub stop: Duration,
    /// State transfer.
    pub take: Duration,
    /// Stop request to every new worker running: the data path's pause.
    pub pause: Duration,
}

impl SwapTiming {
    /// State taken to every new worker running.
    pub fn start(&self) -> Duration {
        self.pause.saturating_sub(self.stop + self.take)
    }
}

/// What the hand-over tells the writer: when the old workers were all
/// stopped, when the state was taken, and what was taken.
type Swapped = (Instant, Instant, TakeReport);

#[derive(Default)]
struct State {
    /// The router prepared to take over, during a swap.
    pending: Option<Arc<Router>>,
    exiting: bool,
}

/// A swap prepared ([`Hot::prepare`]): the new router waits at its gate,
/// the hand-over is set on the old one and reports on `rx`.
struct Prepared {
    old: Arc<Router>,
    new: Arc<Router>,
    rx: mpsc::Receiver<Swapped>,
}

/// The right to swap (one swap at a time), given back when dropped.
struct SwapSlot<H: std::ops::Deref<Target = Hot>>(H);

impl<H: std::ops::Deref<Target = Hot>> SwapSlot<H> {
    /// Waits until no other swap is under way.
    fn wait(hot: H) -> Self {
        let mut busy = lock(&hot.swapping);
        while *busy {
            busy = hot.swap_free.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy = true;
        drop(busy);
        SwapSlot(hot)
    }

    /// The slot if no other swap is under way.
    fn try_take(hot: H) -> Option<Self> {
        let mut busy = lock(&hot.swapping);
        if *busy {
            return None;
        }
        *busy = true;
        drop(busy);
        Some(SwapSlot(hot))
    }
}

impl<H: std::ops::Deref<Target = Hot>> Drop for SwapSlot<H> {
    fn drop(&mut self) {
        *lock(&self.0.swapping) = false;
        self.0.swap_free.notify_all();
    }
}

/// A router that can be replaced while it runs. [`Hot::run`] runs the
/// current router, and waits for the next after each swap, until one stops
/// for good.
pub struct Hot {
    /// Shared with the hand-over, which makes the new router current.
    current: Arc<Mutex<Arc<Router>>>,
    reg: Arc<Registry>,
    opts: BuildOptions,
    allow: bool,
    state: Mutex<State>,
    /// The threads running the routers swapped in, oldest first.
    runners: Mutex<VecDeque<std::thread::JoinHandle<()>>>,
    /// One hot swap at a time: whether one is under way, and its end.
    swapping: Mutex<bool>,
    swap_free: std::sync::Condvar,
    /// The threads finishing swaps a router's own element asked for.
    finishers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    timings: Mutex<Vec<SwapTiming>>,
    discarded: std::sync::atomic::AtomicU64,
    /// Itself, for the backend of the routers' control sockets.
    me: Weak<Hot>,
    /// Called on each router a swap builds, before it runs (see
    /// [`Hot::set_rebind`]).
    rebind: Mutex<Option<Rebind>>,
}

/// A hook a swap calls on the router it built, before it runs.
pub type Rebind = Box<dyn Fn(&mut Router) + Send + Sync>;

/// The stack of the thread a `hotconfig` is parsed and built on: the
/// front end recurses once per level of compound use (at most
/// [`paraclick_lang::MAX_EXPANSION_DEPTH`], a few KiB each) and element
/// configuration parsers to bounded depths; this is several times what
/// they need (reserved, not touched, beyond what is used).
const BUILD_STACK: usize = 8 << 20;

/// The most errors a `hotconfig` reply lists (a configuration of a
/// million unknown classes has a million).
const MAX_REPLY_ERRORS: usize = 100;

/// Why a new configuration was not built: its errors, and whether they
/// came from building the router (`building`) or from the language.
pub(crate) struct Failed {
    diags: Vec<paraclick_lang::Diagnostic>,
    building: bool,
}

impl Failed {
    fn building(diags: Vec<paraclick_lang::Diagnostic>) -> Failed {
        Failed {
            diags,
            building: true,
        }
    }

    /// The reply's text (the first errors, and a count): in Click's form
    /// under `--errors click` (`FILE:LINE: message`, and after a build's
    /// errors Click's "Router could not be initialized!"), else located
    /// with the lines and carets.
    fn reply(mut self, sources: &SourceSet) -> String {
        let d = &mut self.diags;
        if d.len() > MAX_REPLY_ERRORS {
            let more = d.len() - MAX_REPLY_ERRORS;
            d.truncate(MAX_REPLY_ERRORS);
            d.push(paraclick_lang::Diagnostic::error(
                None,
                format!("{more} more errors not shown"),
            ));
        }
        if crate::registry::click_messages() {
            let mut t = render_click(d);
            if self.building && paraclick_lang::router_not_initialized(d) {
                t.push_str("Router could not be initialized!");
            }
            t.trim_end().to_string()
        } else {
            render(d, sources).trim_end().to_string()
        }
    }
}

/// A configuration written to `hotconfig`, as a source and the set its
/// errors are rendered against: named `config`, as Click names it.
fn hotconfig_source(text: &str) -> (Source, SourceSet) {
    let src = Source {
        name: "config".into(),
        text: text.to_string(),
    };
    let mut set = SourceSet::default();
    set.add(src.clone());
    (src, set)
}

/// Builds the configuration `src` to replace `old`; Click tells the
/// language's errors from the router's, so the stage is kept.
fn build_text(
    src: &Source,
    reg: &Registry,
    opts: &BuildOptions,
    old: &Router,
) -> Result<Router, Failed> {
    let graph = paraclick_lang::parse_config_with(src, &opts.defines, &opts.parse_options())
        .map_err(|diags| Failed {
            diags,
            building: false,
        })?;
    Router::from_graph_replacing(graph, src, reg, opts, old).map_err(Failed::building)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hot {
    /// `allow`: whether `hotconfig` is writable (`-R`); `opts` build every
    /// new configuration.
    ///
    /// The control sockets of the router's elements (`ControlSocket`)
    /// reach the current router and `hotconfig`, as `-p` sockets do.
    pub fn new(router: Router, reg: Arc<Registry>, opts: BuildOptions, allow: bool) -> Arc<Hot> {
        let hot = Arc::new_cyclic(|me| Hot {
            current: Arc::new(Mutex::new(Arc::new(router))),
            reg,
            opts,
            allow,
            state: Mutex::new(State::default()),
            runners: Mutex::new(VecDeque::new()),
            swapping: Mutex::new(false),
            swap_free: std::sync::Condvar::new(),
            finishers: Mutex::new(Vec::new()),
            timings: Mutex::new(Vec::new()),
            discarded: Default::default(),
            me: me.clone(),
            rebind: Mutex::new(None),
        });
        crate::control::set_backends(&hot.current().core, &hot.backend());
        *lock(&hot.current().core.hot) = hot.me.clone();
        hot
    }

    /// The router running now.
    pub fn current(&self) -> Arc<Router> {
        lock(&self.current).clone()
    }

    /// Stops the current router for good (and one being swapped in).
    pub fn stop(&self) {
        let pending = {
            let mut st = lock(&self.state);
            st.exiting = true;
            st.pending.clone()
        };
        self.current().stop();
        if let Some(p) = pending {
            p.stop();
        }
    }

    /// Runs the current router on the calling thread; after a swap, waits
    /// for the routers swapped in (each runs on a thread of its own) until
    /// one stops without a swap pending.
    pub fn run(&self) {
        self.current().run();
        loop {
            let next = lock(&self.runners).pop_front();
            let Some(runner) = next else {
                lock(&self.state).exiting = true;
                // Swaps asked for from inside a router have handed over
                // (or given up) by now; their threads end.
                let finishers = std::mem::take(&mut *lock(&self.finishers));
                for f in finishers {
                    let _ = f.join();
                }
                return;
            };
            if lock(&self.state).exiting {
                // A stop raced with the swap: the router swapped in stops too.
                self.current().stop();
            }
            let _ = runner.join();
        }
    }

    /// The timings of every swap so far.
    pub fn timings(&self) -> Vec<SwapTiming> {
        lock(&self.timings).clone()
    }

    /// Replaces the running configuration with `text` (see the module
    /// documentation). Errors come back located, the old router running.
    pub fn hotconfig(&self, text: &str) -> Result<SwapTiming, CsError> {
        if !self.allow {
            return Err(CsError::new(
                530,
                "hotconfig: hot reconfiguration not enabled (run with -R)",
            ));
        }
        let (src, set) = hotconfig_source(text);
        self.swap_in(&set, |reg, opts, old| build_text(&src, reg, opts, old))
    }

    /// Replaces the running router with one built from `graph`, a graph
    /// the caller composed (a substrate's slices), with `opts`, whatever
    /// `-R` says: the caller decides who may. `src` is what the router's
    /// `config` handler shows; errors are rendered against `sources` (the
    /// files the graph's spans point into). As [`Hot::hotconfig`]
    /// otherwise.
    pub fn hotconfig_graph(
        &self,
        graph: paraclick_lang::FlatGraph,
        src: &Source,
        sources: &SourceSet,
        opts: &BuildOptions,
    ) -> Result<SwapTiming, CsError> {
        self.swap_in(sources, |reg, _, old| {
            Router::from_graph_replacing(graph, src, reg, opts, old).map_err(Failed::building)
        })
    }

    /// The options every new configuration is built with.
    pub fn build_options(&self) -> &BuildOptions {
        &self.opts
    }

    /// Calls `f` on every router a swap builds, after its build and
    /// before it runs: an ahead-of-time build's program installs its
    /// compiled entries there again ([`Router::install_compiled`]) where
    /// the new configuration keeps what they were compiled for (the
    /// elements' names and types, [`Router::element_ref`], and the
    /// connections they follow, [`Router::push_peer`]). Without it, or
    /// where `f` installs nothing, the new router runs dynamically.
    pub fn set_rebind(&self, f: Rebind) {
        *lock(&self.rebind) = Some(f);
    }

    /// The swap of [`Hot::hotconfig`], the new router built by `build`
    /// (on a thread with a large stack) from the registry, the options and
    /// the old router.
    fn swap_in(
        &self,
        sources: &SourceSet,
        build: impl FnOnce(&Registry, &BuildOptions, &Router) -> Result<Router, Failed> + Send,
    ) -> Result<SwapTiming, CsError> {
        let _one = SwapSlot::wait(self);
        let prepared = self.prepare(sources, build)?;
        self.finish(prepared, true)
    }

    /// `hotconfig` written by an element of the running router (a
    /// Script's or DriverManager's `write hotconfig`): the configuration
    /// is built, the new router prepared and the old one asked to stop
    /// before this returns (errors come back located, the old router
    /// running); the hand-over, which waits for the old router's workers
    /// (the writer's among them) to reach a safe point, happens once the
    /// writer has returned, and a thread of its own waits for it. The
    /// rest of the writer's task runs (a script goes on to its next
    /// instruction, as in Click), then the old router stops. One swap at a
    /// time: a write while one is under way is refused, not waited for
    /// (its writer may be what the swap waits for).
    pub fn hotconfig_from_router(&self, text: &str) -> Result<(), CsError> {
        if !self.allow {
            return Err(CsError::new(
                530,
                "hotconfig: hot reconfiguration not enabled (run with -R)",
            ));
        }
        let me = self
            .me
            .upgrade()
            .ok_or_else(|| CsError::new(540, "hotconfig: the router has stopped"))?;
        let slot = SwapSlot::try_take(me.clone())
            .ok_or_else(|| CsError::new(520, "hotconfig: another hot swap is under way"))?;
        let (src, set) = hotconfig_source(text);
        let prepared = self.prepare(&set, |reg, opts, old| build_text(&src, reg, opts, old))?;
        // Asked now, so that the old router does no more (under simulated
        // time its clock does not move on) before the swap: the writer's
        // task returns, and its worker stops.
        let t0 = Self::stop_old(&prepared);
        let finisher = std::thread::Builder::new()
            .name("paraclick-swap".into())
            .spawn(move || {
                let _slot = slot;
                if let Err(e) = me.finish_stopped(prepared, t0, false) {
                    eprintln!("paraclick: {}", e.msg);
                }
            })
            .map_err(|e| CsError::new(520, format!("hotconfig: cannot start a thread: {e}")))?;
        lock(&self.finishers).push(finisher);
        Ok(())
    }

    /// A swap's first half, while the old router runs: builds the new
    /// router, starts it behind its closed gate, and sets the hand-over
    /// on the old router (it runs when the old router's run ends).
    fn prepare(
        &self,
        sources: &SourceSet,
        build: impl FnOnce(&Registry, &BuildOptions, &Router) -> Result<Router, Failed> + Send,
    ) -> Result<Prepared, CsError> {
        let old = self.current();
        // Its control sockets of the same type and address as the old
        // router's take them over (open connections included) below.
        // Built on a thread of its own: the caller may be a control
        // connection's thread, whose stack is small, and a configuration's
        // parse and build recurse (to bounded depths) on the stack.
        let built = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("paraclick-build".into())
                .stack_size(BUILD_STACK)
                .spawn_scoped(s, || build(&self.reg, &self.opts, &old))
                .map(|h| h.join())
        });
        let new = match built {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => {
                return Err(CsError::new(
                    520,
                    "hotconfig: building the configuration panicked (a bug: please report it); the router runs on",
                ))
            }
            Err(e) => {
                return Err(CsError::new(
                    520,
                    format!("hotconfig: cannot start a thread: {e}"),
                ))
            }
        };
        let new = new.map_err(|f| CsError::new(520, f.reply(sources)))?;
        let mut new = new;
        if let Some(f) = &*lock(&self.rebind) {
            f(&mut new);
        }
        let new = Arc::new(new);
        crate::control::set_backends(&new.core, &self.backend());
        *lock(&new.core.hot) = self.me.clone();
        // Prepare, while the old router runs: a thread runs the new one,
        // whose workers get set up and wait at its closed gate.
        let nc = &new.core;
        nc.start_gate.close();
        let runner = {
            let r = new.clone();
            std::thread::Builder::new()
                .name("paraclick-run".into())
                .spawn(move || r.run())
                .map_err(|e| CsError::new(520, format!("hotconfig: cannot start a thread: {e}")))?
        };
        let ready_by = Instant::now() + Duration::from_secs(5);
        // The workers, and the runner (it waits before its balancer).
        while nc.start_gate.waiting() < nc.os_workers() + 1 && Instant::now() < ready_by {
            std::thread::sleep(Duration::from_micros(50));
        }
        // Abandons the prepared router: it stops, its threads end.
        let abandon = |new: &Router| {
            new.stop();
            new.core.start_gate.open();
        };
        {
            let mut st = lock(&self.state);
            if st.exiting {
                drop(st);
                abandon(&new);
                let _ = runner.join();
                return Err(CsError::new(540, "hotconfig: the router has stopped"));
            }
            st.pending = Some(new.clone());
        }
        // Queued before the hand-over can happen, so that `run` waits for
        // it once the old router's run returns.
        lock(&self.runners).push_back(runner);
        let (tx, rx) = mpsc::channel::<Swapped>();
        let hand_over: Handover = {
            let new = new.clone();
            let current = self.current.clone();
            Box::new(move |oc: &Core| {
                let t_quiet = Instant::now();
                let rep = {
                    // No task migration of the old router is half done.
                    let _m = lock(&oc.migrating);
                    take_state(&new.core, oc)
                };
                // Simulated time goes on from where the old router's stood.
                new.core.clock.advance_to(oc.clock.now_ns());
                *lock(&current) = new.clone();
                let t_taken = Instant::now();
                new.core.start_gate.open();
                // A new worker just woken may be queued behind this
                // thread on its CPU; what this thread still does (report,
                // leave, free its buffers) can wait.
                std::thread::yield_now();
                let _ = tx.send((t_quiet, t_taken, rep));
            })
        };
        if set_handover(&old.core, hand_over).is_err() {
            // The old router's run ended by itself meanwhile.
            lock(&self.state).pending = None;
            abandon(&new);
            return Err(CsError::new(540, "hotconfig: the router has stopped"));
        }
        Ok(Prepared { old, new, rx })
    }

    /// A swap's second half: stops the old router (its last worker hands
    /// over) and waits for the new one to run. `report`: a line on stderr
    /// with the timing (a swap a router's own element asked for is
    /// quiet, as in Click; its timing is in `hotswaps` all the same).
    fn finish(&self, p: Prepared, report: bool) -> Result<SwapTiming, CsError> {
        let t0 = Self::stop_old(&p);
        self.finish_stopped(p, t0, report)
    }

    /// Asks the old router to stop (its last worker to stop hands over);
    /// returns when it asked. Called from a worker of the old router too,
    /// which stops once it returns.
    fn stop_old(p: &Prepared) -> Instant {
        let old = &p.old;
        let t0 = Instant::now();
        // Napping old workers are at a safe point: no need to wait for
        // them to wake (if the last is claimed, the hand-over runs here).
        // Claimed before the stop unparks them, which would make them
        // race the claim back to their loop only to leave it.
        old.core.running.store(false, Ordering::SeqCst);
        claim_napping(&old.core);
        old.stop();
        t0
    }

    /// [`Hot::finish`] once [`Hot::stop_old`] asked the old router to
    /// stop, at `t0`.
    fn finish_stopped(
        &self,
        p: Prepared,
        t0: Instant,
        report: bool,
    ) -> Result<SwapTiming, CsError> {
        let Prepared { old, new, rx } = p;
        let swapped = rx.recv_timeout(Duration::from_secs(30));
        lock(&self.state).pending = None;
        let (t_quiet, t_taken, rep) = match swapped {
            Ok(x) => x,
            Err(_) => return Err(CsError::new(520, "hotconfig: the swap did not happen")),
        };
        let give_up = Instant::now() + Duration::from_secs(10);
        let started = loop {
            if let Some(t) = new.workers_started_at() {
                break t;
            }
            if Instant::now() > give_up || !new.is_running() {
                break Instant::now();
            }
            std::thread::sleep(Duration::from_micros(20));
        };
        let timing = SwapTiming {
            stop: t_quiet.saturating_duration_since(t0),
            take: t_taken.saturating_duration_since(t_quiet),
            pause: started.saturating_duration_since(t0),
        };
        lock(&self.timings).push(timing);
        self.discarded.fetch_add(rep.discarded, Ordering::Relaxed);
        if report {
            eprintln!(
            "paraclick: hotconfig: swapped in {} us (stop {} us, state {} us, start {} us; {} elements took state{})",
            timing.pause.as_micros(),
            timing.stop.as_micros(),
            timing.take.as_micros(),
            timing.start().as_micros(),
            rep.taken,
            if rep.discarded > 0 {
                format!(", {} packets of removed elements discarded", rep.discarded)
            } else {
                String::new()
            }
            );
        }
        crate::control::hand_over_servers(&old.core, &new.core);
        // The old router goes away here (or with its runner), off the
        // data path, and its control sockets not taken over with it.
        drop(old);
        Ok(timing)
    }

    /// The `hotswaps` handler: swaps done, packets discarded with removed
    /// elements, then one line per swap (oldest first): its pause and the
    /// pause's parts in microseconds (`pause_us P stop_us S state_us T
    /// start_us U`: old workers stopped or claimed, state taken, new
    /// workers in their loops).
    fn swaps_report(&self) -> String {
        let t = self.timings();
        let mut s = format!(
            "swaps {}\ndiscarded {}\n",
            t.len(),
            self.discarded.load(Ordering::Relaxed)
        );
        for x in &t {
            s.push_str(&format!(
                "pause_us {:.1} stop_us {:.1} state_us {:.1} start_us {:.1}\n",
                x.pause.as_secs_f64() * 1e6,
                x.stop.as_secs_f64() * 1e6,
                x.take.as_secs_f64() * 1e6,
                x.start().as_secs_f64() * 1e6
            ));
        }
        s
    }

    /// The control plane's view: the current router's handlers, plus
    /// `hotconfig` (write) and `hotswaps` (read).
    /// (It does not keep `self` alive.)
    pub fn backend(&self) -> Arc<dyn Backend> {
        Arc::new(HotBackend(self.me.clone()))
    }
}

struct HotBackend(Weak<Hot>);

impl HotBackend {
    fn hot(&self) -> Result<Arc<Hot>, CsError> {
        self.0
            .upgrade()
            .ok_or_else(|| CsError::new(540, "No router installed"))
    }

    fn handle(&self) -> Result<RouterHandle, CsError> {
        Ok(self.hot()?.current().handle())
    }
}

impl Backend for HotBackend {
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, CsError> {
        let hot = self.hot()?;
        match h {
            "hotconfig" => Err(CsError::new(530, "Handler 'hotconfig' is write-only")),
            "hotswaps" => Ok(hot.swaps_report()),
            _ => self.handle()?.read(h, param),
        }
    }

    fn write(&self, h: &str, value: &str) -> Result<(), CsError> {
        let hot = self.hot()?;
        match h {
            "hotconfig" => hot.hotconfig(value).map(|_| ()),
            "hotswaps" => Err(CsError::new(530, "Handler 'hotswaps' is read-only")),
            "stop" => {
                lock(&hot.state).exiting = true;
                self.handle()?.write(h, value)
            }
            _ => self.handle()?.write(h, value),
        }
    }

    fn check(&self, h: &str, write: bool) -> Result<(), CsError> {
        let hot = self.hot()?;
        match (h, write) {
            ("hotconfig", true) if hot.allow => Ok(()),
            ("hotconfig", true) => Err(CsError::new(
                530,
                "hotconfig: hot reconfiguration not enabled (run with -R)",
            )),
            ("hotconfig", false) => Err(CsError::new(530, "Handler 'hotconfig' is write-only")),
            ("hotswaps", false) => Ok(()),
            ("hotswaps", true) => Err(CsError::new(530, "Handler 'hotswaps' is read-only")),
            _ => self.handle()?.check(h, write),
        }
    }

    fn stop(&self) {
        if let Some(hot) = self.0.upgrade() {
            hot.stop();
        }
    }

    fn llrpc(&self, e: &str, cmd: u32, data: &[u8]) -> Result<Vec<u8>, CsError> {
        self.handle()?.llrpc(e, cmd, data)
    }
}

#[cfg(test)]
mod tests {
    //! State taken by name and class, drop counts carried, and `Hot`: a
    //! configuration that fails leaves the old router running; one that
    //! builds takes over with the state.

    use super::Hot;
    use crate::registry::{ClassSpec, Registry};
    use crate::testing::{assert_err, WATCHDOG};
    use crate::{BuildOptions, Cx, Element, Handler, InitCx, Router, StateCx};
    use paraclick_packet::{Batch, Packet};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// Counts the packets pushed into it and drops them; its count
    /// survives a swap. Its task counts its runs (and always has work).
    #[derive(Default)]
    struct Tally {
        n: AtomicU64,
        runs: AtomicU64,
    }

    impl Element for Tally {
        const HANDLERS: &'static [Handler<Self>] = &[Handler::read("count", |e, _| {
            e.n.load(Ordering::Relaxed).to_string()
        })];

        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            ix.add_task();
            Ok(())
        }

        fn push(&self, cx: &mut Cx<'_>, _port: usize, b: Batch) {
            self.n.fetch_add(b.len() as u64, Ordering::Relaxed);
            cx.drop_batch(b);
        }

        fn run_task(&self, _cx: &mut Cx<'_>, _task: usize) -> bool {
            self.runs.fetch_add(1, Ordering::Relaxed);
            // No work: the worker naps between runs.
            false
        }

        fn take_state(&self, old: &Self, _sx: &mut StateCx<'_>) {
            self.n
                .fetch_add(old.n.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn reg() -> Registry {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::element("Tally", "0-1/0", "h", |_| {
            Ok(Tally::default())
        }));
        // The same element type under another class name: not a
        // counterpart of a Tally.
        reg.register(ClassSpec::element("OtherTally", "0-1/0", "h", |_| {
            Ok(Tally::default())
        }));
        reg
    }

    fn opts() -> BuildOptions {
        BuildOptions {
            threads: 1,
            pin: false,
            ..BuildOptions::default()
        }
    }

    fn build(conf: &str) -> Router {
        let src = paraclick_lang::Source::new("t.click", conf);
        Router::build(&src, &reg(), &opts()).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn push(r: &Router, name: &str, n: usize) {
        let b: Vec<Packet> = (0..n).map(|_| Packet::from_slice(&[0]).unwrap()).collect();
        r.push_into(name, 0, b.into()).unwrap();
    }

    fn count(r: &Router, name: &str) -> String {
        r.read_handler(&format!("{name}.count")).unwrap()
    }

    #[test]
    fn state_goes_to_the_element_of_the_same_name_and_class() {
        let old = build("a :: Tally; b :: Tally; gone :: TestSink; TestSource -> gone;");
        push(&old, "a", 1);
        push(&old, "b", 2);
        push(&old, "gone", 3);
        let new = build("a :: Tally; b :: OtherTally; c :: Tally;");
        let rep = new.take_state_from(&old).unwrap();
        assert_eq!(rep.taken, 1, "only a has a counterpart");
        assert_eq!(rep.discarded, 3, "the packets gone held");
        assert_eq!(count(&new, "a"), "1");
        assert_eq!(count(&new, "b"), "0", "another class: nothing taken");
        assert_eq!(count(&new, "c"), "0");
        // Drop counts go with the state: a's only.
        assert_eq!(new.drops(), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn state_is_taken_only_between_quiet_routers() {
        let old = build("a :: Tally;");
        let new = build("a :: Tally;");
        // Runs `r` on another thread and tries the take while it runs:
        // the router stops whatever the take does.
        let while_running = |r: &Router| {
            std::thread::scope(|s| {
                s.spawn(|| r.run());
                let t0 = std::time::Instant::now();
                while r.task_runs("a").unwrap() == 0 && t0.elapsed() < WATCHDOG {
                    std::thread::yield_now();
                }
                let taken = new.take_state_from(&old).map(|_| ());
                r.stop();
                taken
            })
        };
        assert_err(while_running(&old), "the old router is still running");
        assert_err(while_running(&new), "the new router is already running");
        assert!(new.take_state_from(&old).is_ok(), "both stopped");
    }

    /// A `Hot` running `conf` on a thread of its own, with hotconfig
    /// allowed or not; `f` is given it once its router runs.
    fn with_hot(conf: &str, allow: bool, f: impl FnOnce(&Hot) + Send) {
        let hot = Hot::new(build(conf), Arc::new(reg()), opts(), allow);
        std::thread::scope(|s| {
            let h = s.spawn(|| hot.run());
            struct Stop<'a>(&'a Hot);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.stop();
                }
            }
            let _stop = Stop(&hot);
            wait_runs(&hot.current(), "a", 1);
            f(&hot);
            drop(_stop);
            while !h.is_finished() {
                std::thread::yield_now();
            }
        });
    }

    /// Waits until element `name`'s task has run `n` more times.
    fn wait_runs(r: &Router, name: &str, n: u64) {
        let r0 = r.task_runs(name).unwrap();
        let t0 = std::time::Instant::now();
        while r.task_runs(name).unwrap() < r0 + n {
            assert!(t0.elapsed() < WATCHDOG, "{name} does not run");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_configuration_that_fails_leaves_the_old_router_running() {
        with_hot("a :: Tally;", true, |hot| {
            let old = hot.current();
            let e = hot.hotconfig("a :: Tally;\nb :: Nope;").unwrap_err();
            assert_eq!(e.code, 520);
            assert!(
                // Named `config`, as Click names it.
                e.msg.starts_with("config:2:") && e.msg.contains("Nope"),
                "{}",
                e.msg
            );
            assert!(Arc::ptr_eq(&old, &hot.current()), "still the old router");
            assert!(old.is_running());
            wait_runs(&old, "a", 2);
            assert!(hot.timings().is_empty(), "no swap");
        });
    }

    #[test]
    fn a_configuration_that_builds_takes_over_with_the_state() {
        with_hot("a :: Tally;", true, |hot| {
            let old = hot.current();
            // Counted by a handler-less path: the old element's count,
            // set while it runs (a push from outside would race it).
            old.element::<Tally>("a")
                .unwrap()
                .n
                .store(5, Ordering::Relaxed);
            hot.hotconfig("a :: Tally; b :: Tally;").unwrap();
            let new = hot.current();
            assert!(!Arc::ptr_eq(&old, &new));
            assert!(!old.is_running());
            assert_eq!(count(&new, "a"), "5", "a's count carried over");
            assert_eq!(count(&new, "b"), "0");
            wait_runs(&new, "a", 1);
            assert_eq!(hot.timings().len(), 1);
            assert!(hot
                .backend()
                .read("hotswaps", None)
                .unwrap()
                .starts_with("swaps 1\n"));
        });
    }

    #[test]
    fn the_rebind_hook_sees_each_new_router_before_it_runs() {
        struct Nothing;
        impl crate::CompiledPush for Nothing {
            fn push_packet(&self, cx: &mut Cx<'_>, p: Packet) {
                cx.drop_packet(p)
            }
        }
        with_hot("a :: Tally;", true, |hot| {
            let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
            let s2 = seen.clone();
            hot.set_rebind(Box::new(move |r: &mut Router| {
                let installed = r.install_compiled("b", Box::new(Nothing));
                s2.lock().unwrap().push(installed);
            }));
            hot.hotconfig("a :: Tally; TestSource -> b :: Tally;")
                .unwrap();
            assert_eq!(*seen.lock().unwrap(), [Ok(())], "before the run");
            let new = hot.current();
            assert_eq!(new.compiled_elements(), [2]);
        });
    }

    #[test]
    fn hotconfig_needs_permission() {
        with_hot("a :: Tally;", false, |hot| {
            let old = hot.current();
            let e = hot.hotconfig("a :: Tally;").unwrap_err();
            assert_eq!(e.code, 530);
            assert!(e.msg.contains("not enabled"), "{}", e.msg);
            assert!(Arc::ptr_eq(&old, &hot.current()));
        });
    }
}
