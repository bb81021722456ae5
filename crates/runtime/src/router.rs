//! Router instantiation and the router's shared core.
//!
//! `Router::build` takes configuration text through every stage: parse and
//! flatten (paraclick-lang), check classes, port counts and push/pull,
//! check requirements, configure every element (AddressInfo and other
//! early-phase classes first), connect ports into direct peer references,
//! initialize, and assign tasks to threads. Every error from a stage is
//! reported, located, before anything runs.

use crate::args::ArgEnv;
use crate::cx::Cx;
pub use crate::cx::InitCx;
use crate::element::{FusedAction, Node};
use crate::handler::HandlerCx;
use crate::registry::{ConfigCx, Registry};
use crate::sched::{self, SchedPolicy, Task};
use crate::timer::{TimerQueue, MAX_TIMERS};
use crossbeam_utils::CachePadded;
use paraclick_lang::check::{check_graph, ClassSpec as LangSpec, PortKind};
use paraclick_lang::{
    parse_config_with, Diagnostic, FilePolicy, FlatGraph, ParseOptions, Source, Span,
};
use paraclick_packet::Batch;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Where a connection leads: the element and port at the other end, and a
/// direct pointer to that element, so a hop is one load and one call.
#[derive(Clone, Copy)]
pub(crate) struct Peer {
    to: Option<NonNull<dyn Node>>,
    /// The peer's action loop if it is a per-packet element
    /// ([`crate::Action`]), which [`Cx::push`] runs in its own loop
    /// instead of calling the peer's `push` (set at build time; never
    /// when profiling, which needs every hop).
    fused: Option<NonNull<dyn FusedAction>>,
    /// The peer's own output peers (its `Ports::outputs`), so a fused hop
    /// goes on to the next without indexing the router's port table.
    next: NonNull<[Peer]>,
    pub elem: u32,
    pub port: u32,
    /// Whether `fused` also takes whole batches (an [`crate::Action`]'s
    /// loop); an element that only routes single packets takes its
    /// batches through its own `push`, as an unfused hop.
    batches: bool,
}

// SAFETY: `to` points at an element owned (through an `Arc`) by the same
// `Core` that holds this `Peer`; elements are `Send + Sync`, so sharing a
// pointer to one across threads is as safe as sharing the `Arc`.
unsafe impl Send for Peer {}
// SAFETY: as above.
unsafe impl Sync for Peer {}

impl Peer {
    const UNCONNECTED: Peer = Peer {
        to: None,
        fused: None,
        next: NonNull::slice_from_raw_parts(NonNull::dangling(), 0),
        elem: u32::MAX,
        port: 0,
        batches: false,
    };

    fn new(to: &(dyn Node + 'static), elem: usize, port: usize, fuse: bool) -> Peer {
        // A fused hop ignores the input port: only input 0 fuses (every
        // Action has one input; an element routing single packets is
        // fused on its first input only).
        let fused = if fuse && port == 0 { to.fused() } else { None };
        Peer {
            to: Some(NonNull::from(to)),
            batches: fused.is_some_and(|f| f.fuses_batches()),
            fused: fused.map(NonNull::from),
            next: NonNull::slice_from_raw_parts(NonNull::dangling(), 0),
            elem: elem as u32,
            port: port as u32,
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
        // SAFETY: the pointer comes from a `Box` held in `Core::slots` for
        // as long as the `Core` (and so this `Peer`) exists, and elements
        // are only ever shared immutably.
        self.to.map(|p| unsafe { p.as_ref() })
    }

    /// The element's fused action loop, if the hop is fused.
    #[inline]
    pub fn fused(&self) -> Option<&dyn FusedAction> {
        // SAFETY: points into the same boxed element as `to` (see above).
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
}

/// The hot part of an element's wiring, kept apart from the rest of its
/// slot so the packet path touches one small record per hop.
pub(crate) struct Ports {
    /// Per output port: the input it pushes into (push outputs only).
    pub outputs: Box<[Peer]>,
    /// Per input port: the output it pulls from (pull inputs only).
    pub inputs: Box<[Peer]>,
}

pub(crate) struct Slot {
    pub element: Box<dyn Node>,
    pub name: String,
    pub class: String,
    pub config: String,
    pub span: Span,
    pub input_kinds: Vec<PortKind>,
    pub output_kinds: Vec<PortKind>,
    pub timer_gens: [AtomicU64; MAX_TIMERS],
    pub tasks: Vec<usize>,
    /// Ring modes last given to the element (bit 0: multi-producer, bit 1:
    /// multi-consumer, bit 2: crossing), for reports and upgrade-only
    /// changes.
    pub modes: std::sync::atomic::AtomicU8,
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
    /// Cycles spent running tasks (sampled, scaled) and timers.
    pub busy_cycles: AtomicU64,
    /// Whether this worker is inside its loop (the barrier waits only for
    /// workers that are).
    pub alive: AtomicBool,
    /// The worker is parked or about to park (see [`crate::notifier`]);
    /// whoever gives it work unparks it through `handle`.
    pub parked: AtomicBool,
    pub handle: Mutex<Option<std::thread::Thread>>,
    /// Times the worker parked (for tests and reports).
    pub parks: AtomicU64,
    /// Whether the worker is napping with nothing staged (a safe point a
    /// hot swap may claim without waking it), see [`crate::hot`].
    pub quiet: std::sync::atomic::AtomicU8,
}

impl ThreadShared {
    fn new(nelements: usize, nreasons: usize) -> ThreadShared {
        ThreadShared {
            timers: TimerQueue::new(),
            drops: crate::drops::Counts::new(nelements),
            reason_drops: crate::drops::Counts::new(nreasons),
            worklist: Mutex::new(Vec::new()),
            worklist_version: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            idle_polls: AtomicU64::new(0),
            pool_id: std::sync::atomic::AtomicU32::new(0),
            seen_epoch: AtomicU64::new(0),
            busy_cycles: AtomicU64::new(0),
            alive: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            handle: Mutex::new(None),
            parks: AtomicU64::new(0),
            quiet: std::sync::atomic::AtomicU8::new(0),
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
            if let Some(h) = &*self.handle.lock().unwrap_or_else(|e| e.into_inner()) {
                h.unpark();
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
    #[inline]
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
    /// Serializes task migrations.
    pub migrating: Mutex<()>,
    /// The adaptive scheduler's thread while it runs, woken when the router
    /// stops (so a run does not last until its next look at the loads).
    pub balancer: Mutex<Option<std::thread::Thread>>,
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
    /// What the global handlers report, and control sockets' servers.
    pub info: crate::control::RouterInfo,
    /// Workers that have entered their loop in this run, and when the last
    /// did (ns since `epoch`, plus 1; 0: not yet), for hot swaps' pauses.
    pub workers_started: std::sync::atomic::AtomicUsize,
    pub started_ns: AtomicU64,
    /// Workers wait here before their loop (closed for a router prepared
    /// to take over in a hot swap, see [`crate::hot`]).
    pub start_gate: crate::hot::Gate,
    /// Workers that have left their loop in this run; the last runs
    /// `handover`, if set (a hot swap's hand-over).
    pub workers_done: std::sync::atomic::AtomicUsize,
    pub handover: Mutex<Option<crate::hot::Handover>>,
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
            if let Some(h) = &*ts.handle.lock().unwrap_or_else(|e| e.into_inner()) {
                h.unpark();
            }
        }
        if let Some(t) = &*self.balancer.lock().unwrap_or_else(|e| e.into_inner()) {
            t.unpark();
        }
    }
}

/// How to build a router.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Worker threads (`-j`).
    pub threads: usize,
    /// Command-line `NAME=value` overrides of `define($NAME ...)`.
    pub defines: Vec<(String, String)>,
    /// How tasks not pinned by StaticThreadSched are placed (`--sched`).
    pub policy: SchedPolicy,
    /// Pin worker thread `t` to CPU `t % ncpus`.
    pub pin: bool,
    /// Sample cycles per element for `cost_report` (costs a little on
    /// every hop while enabled).
    pub profile: bool,
    /// Build only to find errors (`paraclick check`): elements validate
    /// their configuration in `initialize` but acquire nothing outside the
    /// process (see [`InitCx::checking`]); the router must not be run.
    pub check_only: bool,
    /// Run in simulated time (`--simtime`, see [`crate::time`]).
    pub simtime: bool,
    /// Where `require(library FILE)` looks (Click's CLICKPATH, `-C`);
    /// `None`: the `CLICKPATH` environment variable.
    pub clickpath: Option<String>,
    /// The most elements (compound instances included) and connections
    /// a configuration may expand to (`--max-elements`).
    pub max_elements: usize,
    /// Which files the configuration may read: libraries, and the traces
    /// of elements that ask [`ConfigCx::allowed_file`]. Any, for the
    /// operator's configuration; a `hotconfig`'s are confined (see
    /// [`paraclick_lang::files`]).
    ///
    /// [`ConfigCx::allowed_file`]: crate::ConfigCx::allowed_file
    pub files: FilePolicy,
}

impl BuildOptions {
    /// The options of the language front end.
    pub fn parse_options(&self) -> ParseOptions {
        ParseOptions {
            clickpath: self.clickpath.clone(),
            max_elements: self.max_elements,
            files: self.files.clone(),
        }
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            threads: 1,
            defines: Vec::new(),
            policy: SchedPolicy::Adaptive,
            pin: true,
            profile: false,
            check_only: false,
            simtime: false,
            clickpath: None,
            max_elements: paraclick_lang::DEFAULT_MAX_ELEMENTS,
            files: FilePolicy::Any,
        }
    }
}

/// A configured router, ready to run.
pub struct Router {
    pub(crate) core: Arc<Core>,
}

fn err_at(span: &Span, msg: String) -> Diagnostic {
    Diagnostic::error(Some(span.clone()), msg)
}

impl Router {
    /// Builds a router from configuration text.
    pub fn build(
        src: &Source,
        reg: &Registry,
        opts: &BuildOptions,
    ) -> Result<Router, Vec<Diagnostic>> {
        let popts = opts.parse_options();
        let graph = parse_config_with(src, &opts.defines, &popts)?;
        paraclick_packet::clock::init();
        Self::from_graph(graph, src, reg, opts)
    }

    /// [`Router::build`] for a hot swap replacing `old`: its elements may
    /// take over `old`'s control sockets ([`InitCx::take_over_server`]).
    pub fn build_replacing(
        src: &Source,
        reg: &Registry,
        opts: &BuildOptions,
        old: &Router,
    ) -> Result<Router, Vec<Diagnostic>> {
        let popts = opts.parse_options();
        let graph = parse_config_with(src, &opts.defines, &popts)?;
        paraclick_packet::clock::init();
        Self::from_graph_offering(
            graph,
            src,
            reg,
            opts,
            crate::control::server_keys(&old.core),
        )
    }

    /// Builds from a configuration string (tests, `-e`).
    pub fn from_str(text: &str, reg: &Registry, threads: usize) -> Result<Router, Vec<Diagnostic>> {
        let src = Source {
            name: "<config>".into(),
            text: text.into(),
        };
        let opts = BuildOptions {
            threads,
            pin: false,
            ..BuildOptions::default()
        };
        Self::build(&src, reg, &opts)
    }

    /// Checks a flat graph against the registry: classes, port counts,
    /// push/pull, requirements.
    pub fn check(
        graph: &FlatGraph,
        reg: &Registry,
    ) -> Result<paraclick_lang::check::CheckedGraph, Vec<Diagnostic>> {
        let lookup = |name: &str| {
            reg.get(name).map(|c| LangSpec {
                port_count: c.port_count.to_string(),
                processing: c.processing.to_string(),
            })
        };
        let names = reg.names();
        let mut errs = Vec::new();
        for r in &graph.requirements {
            let req = match r.words.as_slice() {
                [w] => Some(w.as_str()),
                [k, w] if k == "package" || k == "library" => Some(w.as_str()),
                _ => None,
            };
            match req {
                Some(w) if reg.provides(w) => {}
                Some(w) => errs.push(err_at(&r.span, format!("requirement '{w}' not available"))),
                None => errs.push(err_at(
                    &r.span,
                    format!("bad requirement '{}'", r.words.join(" ")),
                )),
            }
        }
        let checked = check_graph(graph, &lookup, &names);
        match checked {
            Ok(c) if errs.is_empty() => Ok(c),
            Ok(_) => Err(errs),
            Err(mut e) => {
                errs.append(&mut e);
                Err(errs)
            }
        }
    }

    /// The port counts and kinds of `graph` with every unknown class read
    /// as an agnostic element with any number of ports, as far as the
    /// graph's other errors let them be resolved (see
    /// [`paraclick_lang::check::check_graph_partial`]).
    fn check_lenient(graph: &FlatGraph, reg: &Registry) -> paraclick_lang::check::CheckedGraph {
        let lookup = |name: &str| {
            Some(match reg.get(name) {
                Some(c) => LangSpec {
                    port_count: c.port_count.to_string(),
                    processing: c.processing.to_string(),
                },
                None => LangSpec {
                    port_count: "-/-".to_string(),
                    processing: "a/a".to_string(),
                },
            })
        };
        paraclick_lang::check::check_graph_partial(graph, &lookup, &reg.names()).0
    }

    /// Builds a router from a flat graph, in phases: check, configure,
    /// connect, initialize, plan. Each phase reports every error it finds.
    pub fn from_graph(
        graph: FlatGraph,
        src: &Source,
        reg: &Registry,
        opts: &BuildOptions,
    ) -> Result<Router, Vec<Diagnostic>> {
        Self::from_graph_offering(graph, src, reg, opts, Vec::new())
    }

    /// [`Router::from_graph`], offering the elements the servers of a
    /// router being replaced (their keys).
    fn from_graph_offering(
        graph: FlatGraph,
        src: &Source,
        reg: &Registry,
        opts: &BuildOptions,
        offered: Vec<String>,
    ) -> Result<Router, Vec<Diagnostic>> {
        let nthreads = opts.threads.max(1);
        let checked = match Self::check(&graph, reg) {
            Ok(c) => c,
            Err(mut errs) => {
                // Report argument errors too: with unknown classes
                // standing in as agnostic any-port elements, and the
                // ports of known ones as their classes allow, the known
                // elements can still be configured (configuration only:
                // nothing is initialized).
                let c = Self::check_lenient(&graph, reg);
                if let Err(mut e) = Self::configure(&graph, &c, reg, nthreads, opts) {
                    errs.append(&mut e);
                }
                return Err(errs);
            }
        };
        let (made, mut arg_env) = Self::configure(&graph, &checked, reg, nthreads, opts)?;
        arg_env.checking = false;
        let (slots, ports, names) = Self::connect(&graph, &checked, made, opts.profile);
        let n = slots.len();
        let reasons = crate::drops::Reasons::new(
            graph
                .elements
                .iter()
                .map(|fe| reg.get(&fe.class).map_or(&[][..], |c| c.drop_reasons)),
        );
        let mut core = Core {
            slots,
            ports,
            names,
            nthreads,
            tasks: Box::new([]),
            threads: (0..nthreads)
                .map(|_| CachePadded::new(ThreadShared::new(n, reasons.len())))
                .collect(),
            running: AtomicBool::new(true),
            stop_requests: AtomicU64::new(0),
            driver: None,
            clock: if opts.simtime {
                crate::time::RouterClock::simulated()
            } else {
                crate::time::RouterClock::real()
            },
            policy: opts.policy,
            pin: opts.pin,
            exclusive: Mutex::new(()),
            source: src.text.as_str().into(),
            plan: crate::plan::Plan::default(),
            sync_epoch: AtomicU64::new(0),
            migrating: Mutex::new(()),
            balancer: Mutex::new(None),
            run_cycles: AtomicU64::new(0),
            profile: opts
                .profile
                .then(|| crate::sched::Profile::new(nthreads, n)),
            arg_env,
            handler_drops: (0..n).map(|_| AtomicU64::new(0)).collect(),
            reasons,
            info: crate::control::RouterInfo::new(&graph, reg),
            workers_started: std::sync::atomic::AtomicUsize::new(0),
            started_ns: AtomicU64::new(0),
            start_gate: crate::hot::Gate::new(true),
            workers_done: std::sync::atomic::AtomicUsize::new(0),
            handover: Mutex::new(None),
        };
        core.info.offer(offered);
        let core = Arc::new(Self::initialize(core, opts.check_only)?);
        crate::control::start_services(&core);
        Ok(Router { core })
    }

    /// Configures every element, early phases first (AddressInfo before
    /// the users of its names).
    #[allow(clippy::type_complexity)]
    fn configure(
        graph: &FlatGraph,
        checked: &paraclick_lang::check::CheckedGraph,
        reg: &Registry,
        nthreads: usize,
        opts: &BuildOptions,
    ) -> Result<(Vec<Box<dyn Node>>, ArgEnv), Vec<Diagnostic>> {
        let n = graph.elements.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| {
            reg.get(&graph.elements[i].class)
                .map(|c| c.phase)
                .unwrap_or(0)
        });
        let mut env = ArgEnv {
            checking: opts.check_only,
            files: opts.files.clone(),
            ..ArgEnv::default()
        };
        let mut made: Vec<Option<Box<dyn Node>>> = (0..n).map(|_| None).collect();
        let mut errs = Vec::new();
        for &i in &order {
            let fe = &graph.elements[i];
            let Some(spec) = reg.get(&fe.class) else {
                continue;
            };
            let file: &str = if &*fe.span.file == "<expr>" {
                "config"
            } else {
                &fe.span.file
            };
            crate::cx::set_landmark(format!("{file}:{}: ", fe.span.line));
            let mut ccx = ConfigCx {
                name: &fe.name,
                class: &fe.class,
                config: &fe.config,
                ninputs: checked.inputs[i].len(),
                noutputs: checked.outputs[i].len(),
                input_kinds: &checked.inputs[i],
                output_kinds: &checked.outputs[i],
                nthreads,
                env: &mut env,
            };
            match (spec.make)(&mut ccx) {
                Ok(e) => made[i] = Some(e),
                // One diagnostic per error (Args::complete gives one a line).
                Err(m) => errs.extend(m.lines().map(|l| {
                    err_at(&fe.span, format!("{} :: {}: {}", fe.name, fe.class, l)).in_element(
                        "configuring",
                        &fe.name,
                        &fe.class,
                        l,
                    )
                })),
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok((made.into_iter().flatten().collect(), env))
    }

    /// Resolves connections into direct peer references (fused where the
    /// peer is a per-packet element and the router is not profiling).
    #[allow(clippy::type_complexity)]
    fn connect(
        graph: &FlatGraph,
        checked: &paraclick_lang::check::CheckedGraph,
        made: Vec<Box<dyn Node>>,
        profile: bool,
    ) -> (Box<[Slot]>, Box<[Ports]>, HashMap<String, usize>) {
        let n = made.len();
        let mut outputs: Vec<Vec<Peer>> = (0..n)
            .map(|i| vec![Peer::UNCONNECTED; checked.outputs[i].len()])
            .collect();
        let mut inputs: Vec<Vec<Peer>> = (0..n)
            .map(|i| vec![Peer::UNCONNECTED; checked.inputs[i].len()])
            .collect();
        for c in &graph.connections {
            if checked.outputs[c.from].get(c.from_port) == Some(&PortKind::Push) {
                outputs[c.from][c.from_port] = Peer::new(&*made[c.to], c.to, c.to_port, !profile);
            } else {
                inputs[c.to][c.to_port] = Peer::new(&*made[c.from], c.from, c.from_port, false);
            }
        }
        // Moving the boxes into the slots does not move the elements the
        // peers point at.
        let mut slots = Vec::with_capacity(n);
        let mut ports = Vec::with_capacity(n);
        let mut names = HashMap::new();
        for (i, (fe, e)) in graph.elements.iter().zip(made).enumerate() {
            names.insert(fe.name.clone(), i);
            slots.push(Slot {
                element: e,
                name: fe.name.clone(),
                class: fe.class.clone(),
                config: fe.config.clone(),
                span: fe.span.clone(),
                input_kinds: checked.inputs[i].clone(),
                output_kinds: checked.outputs[i].clone(),
                timer_gens: Default::default(),
                tasks: Vec::new(),
                modes: std::sync::atomic::AtomicU8::new(3),
            });
            ports.push(Ports {
                outputs: std::mem::take(&mut outputs[i]).into_boxed_slice(),
                inputs: std::mem::take(&mut inputs[i]).into_boxed_slice(),
            });
        }
        // Link each push peer to its element's own outputs. The output
        // tables are boxed, so their addresses stay put from here on.
        let tables: Vec<NonNull<[Peer]>> = ports
            .iter()
            .map(|p: &Ports| NonNull::from(&*p.outputs))
            .collect();
        for p in ports.iter_mut() {
            for peer in p.outputs.iter_mut() {
                if let Some(&t) = tables.get(peer.elem as usize) {
                    peer.next = t;
                }
            }
        }
        (slots.into_boxed_slice(), ports.into_boxed_slice(), names)
    }

    /// Initializes every element, then creates the tasks, the driver, the
    /// thread plan with its ring modes, and the start-up timers.
    fn initialize(mut core: Core, checking: bool) -> Result<Core, Vec<Diagnostic>> {
        let n = core.slots.len();
        let nthreads = core.nthreads;
        let mut errs = Vec::new();
        let mut new_tasks = Vec::new();
        let mut prefs = Vec::new();
        let mut timers = Vec::new();
        for i in 0..n {
            let mut ix = InitCx {
                core: &core,
                elem: i,
                new_tasks: &mut new_tasks,
                prefs: &mut prefs,
                timers: &mut timers,
                ntasks_here: 0,
                checking,
            };
            if let Err(m) = core.slots[i].element.initialize(&mut ix) {
                let s = &core.slots[i];
                errs.push(
                    err_at(&s.span, format!("{} :: {}: {}", s.name, s.class, m)).in_element(
                        "initializing",
                        &s.name,
                        &s.class,
                        &m,
                    ),
                );
            }
        }
        let drivers: Vec<usize> = (0..n)
            .filter(|&i| core.slots[i].element.is_driver())
            .collect();
        if let Some(&d) = drivers.get(1) {
            let s = &core.slots[d];
            errs.push(err_at(
                &s.span,
                format!("{} :: {}: only one driver element allowed", s.name, s.class),
            ));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        core.driver = drivers.first().copied();
        let mut tasks = Vec::new();
        for (elem, idx, empty, full) in new_tasks {
            let id = tasks.len();
            core.slots[elem].tasks.push(id);
            let mut task = Task::new(elem, idx);
            task.sleep_when_empty = empty;
            task.wait_for_room = full;
            tasks.push(CachePadded::new(task));
        }
        for (elem, thread) in prefs {
            for &t in &core.slots[elem].tasks {
                tasks[t].pinned = Some(thread % nthreads);
            }
        }
        core.tasks = tasks.into_boxed_slice();
        sched::initial_assignment(&core);
        core.plan = crate::plan::Plan::build(&core);
        crate::notifier::connect(&mut core);
        crate::crossing::apply_ring_modes(&core, false);
        for (elem, timer, after) in timers {
            let t = core.home_thread(elem);
            core.schedule_timer(t, elem, timer, core.clock.now() + after);
        }
        Ok(core)
    }

    /// Runs until stopped: by a stop request (a source with `STOP true`, a
    /// driver's `stop`), by [`Router::stop`], or by a handler.
    pub fn run(&self) {
        let core = &*self.core;
        let _g = core.exclusive.lock().unwrap_or_else(|e| e.into_inner());
        // Timers scheduled at build time are relative to the start.
        sched::run_workers(core);
    }

    /// A handle that can stop the router from another thread or a signal.
    pub fn stopper(&self) -> Stopper {
        Stopper {
            core: self.core.clone(),
        }
    }

    pub fn stop(&self) {
        self.core.stop_now();
    }

    pub fn is_running(&self) -> bool {
        self.core.running.load(Ordering::Acquire)
    }

    pub fn read_handler(&self, spec: &str) -> Result<String, String> {
        crate::handler::read(&self.core, spec, None)
    }

    /// A handle for the control plane (does not keep the router alive).
    pub fn handle(&self) -> crate::control::RouterHandle {
        crate::control::RouterHandle {
            core: Arc::downgrade(&self.core),
        }
    }

    pub fn write_handler(&self, spec: &str, value: &str) -> Result<(), String> {
        crate::handler::write(&self.core, spec, value, None)
    }

    pub fn nthreads(&self) -> usize {
        self.core.nthreads
    }

    pub fn element_names(&self) -> Vec<&str> {
        self.core.slots.iter().map(|s| s.name.as_str()).collect()
    }

    /// The element named `name`, as its concrete type.
    pub fn element<T: 'static>(&self, name: &str) -> Option<&T> {
        let i = *self.core.names.get(name)?;
        self.core.slots[i].element.as_any().downcast_ref::<T>()
    }

    /// The handlers of element `name`: its own, then the built-in ones.
    pub fn handlers(&self, name: &str) -> Option<Vec<crate::element::HandlerInfo>> {
        let i = *self.core.names.get(name)?;
        Some(crate::handler::list(&self.core, i))
    }

    /// Packets dropped with a count, per element name (nonzero only).
    pub fn drops(&self) -> Vec<(String, u64)> {
        let mut v = Vec::new();
        for (i, s) in self.core.slots.iter().enumerate() {
            let d = crate::drops::total(&self.core, i);
            if d > 0 {
                v.push((s.name.clone(), d));
            }
        }
        v
    }

    /// Element `name`'s drops per reason, nonzero only (what its
    /// `drop_reasons` handler prints): the reasons its class declares, in
    /// their order, then [`crate::drops::UNSPECIFIED`].
    pub fn drop_reasons(&self, name: &str) -> Option<Vec<(&'static str, u64)>> {
        let i = *self.core.names.get(name)?;
        Some(crate::drops::per_reason(&self.core, i))
    }

    pub fn total_drops(&self) -> u64 {
        self.drops().iter().map(|(_, d)| d).sum()
    }

    /// Packets held in queues.
    pub fn total_queued(&self) -> usize {
        self.core.slots.iter().map(|s| s.element.queued()).sum()
    }

    /// Pushes packets into input `port` of element `name` on the calling
    /// thread, as thread 0 (tests and tools; not while the router runs).
    pub fn push_into(&self, name: &str, port: usize, batch: Batch) -> Result<(), String> {
        let core = &*self.core;
        let i = *core
            .names
            .get(name)
            .ok_or_else(|| format!("no element named '{name}'"))?;
        let _g = core
            .exclusive
            .try_lock()
            .map_err(|_| "router is running".to_string())?;
        let mut cx = Cx::new(core, 0);
        cx.current = i;
        core.slots[i].element.push(&mut cx, port, batch);
        cx.flush_deferred();
        Ok(())
    }

    /// Pulls from output `port` of element `name` on the calling thread, as
    /// thread 0 (tests and tools; not while the router runs).
    pub fn pull_from(&self, name: &str, port: usize, max: usize) -> Result<Option<Batch>, String> {
        let core = &*self.core;
        let i = *core
            .names
            .get(name)
            .ok_or_else(|| format!("no element named '{name}'"))?;
        let _g = core
            .exclusive
            .try_lock()
            .map_err(|_| "router is running".to_string())?;
        let mut cx = Cx::new(core, 0);
        cx.current = i;
        let b = core.slots[i].element.pull(&mut cx, port, max);
        cx.flush_deferred();
        Ok(b)
    }

    /// Buffers of the workers' packet pools still held by packets. Exact
    /// once a run has ended (the workers have exited): with the router's
    /// queues emptied and every packet released it must be 0.
    pub fn pool_outstanding(&self) -> usize {
        self.core
            .threads
            .iter()
            .filter_map(|t| paraclick_packet::pool::outstanding(t.pool_id.load(Ordering::Acquire)))
            .sum()
    }

    /// Scheduling report: per thread, its tasks and their statistics.
    /// Runs of element `name`'s tasks so far (each run a worker gave it,
    /// with work or not; a sleeping task is not run), or `None` if there
    /// is no such element.
    pub fn task_runs(&self, name: &str) -> Option<u64> {
        let e = *self.core.names.get(name)?;
        Some(
            self.core.slots[e]
                .tasks
                .iter()
                .map(|&t| self.core.tasks[t].runs.load(Ordering::Relaxed))
                .sum(),
        )
    }

    /// Times the workers parked because all their tasks slept.
    pub fn parks(&self) -> u64 {
        self.core
            .threads
            .iter()
            .map(|t| t.parks.load(Ordering::Relaxed))
            .sum()
    }

    pub fn thread_report(&self) -> String {
        sched::thread_report(&self.core)
    }

    /// Per element and per task cycles per packet (needs
    /// `BuildOptions::profile`).
    pub fn cost_report(&self) -> String {
        sched::cost_report(&self.core)
    }

    /// The cost report's figures as data: per element and per task cycles
    /// and packets, per thread busy cycles (per-element figures and task
    /// packets only with `BuildOptions::profile`).
    pub fn cost_data(&self) -> sched::CostData {
        sched::cost_data(&self.core)
    }

    /// The thread per task that the adaptive scheduler would choose for
    /// the given task loads (cycles, one per task in `task_threads` order):
    /// pinned tasks stay, the rest are placed longest first, tasks that
    /// meet at a queue together when they fit.
    pub fn balanced_assignment(&self, loads: &[u64]) -> Vec<usize> {
        let core = &*self.core;
        let pinned: Vec<Option<usize>> = core.tasks.iter().map(|t| t.pinned).collect();
        let mut l = loads.to_vec();
        l.resize(core.tasks.len(), 0);
        let pairs = core.plan.affine_pairs(&|t| pinned[t].is_none());
        sched::lpt_assign_pairs(&l, &pinned, core.nthreads, &pairs)
    }

    /// Ring modes of each queue: (name, multi-producer, multi-consumer).
    pub fn ring_modes(&self) -> Vec<(String, bool, bool)> {
        self.core
            .plan
            .queues
            .iter()
            .map(|q| {
                let (p, c) = self.core.slots[q.elem].ring_modes();
                (self.core.slots[q.elem].name.clone(), p, c)
            })
            .collect()
    }

    /// Queues whose producers and consumers are not all on one thread under
    /// the current plan (their producers publish packets in batches).
    pub fn crossing_queues(&self) -> Vec<String> {
        self.core
            .plan
            .ring_modes(&self.core)
            .into_iter()
            .filter(|&(_, _, _, crossing)| crossing)
            .map(|(e, ..)| self.core.slots[e].name.clone())
            .collect()
    }

    /// Moves task `index` of element `name` to `thread` (while running or
    /// not), as the adaptive scheduler does.
    pub fn move_task(&self, name: &str, index: usize, thread: usize) -> Result<(), String> {
        let i = *self
            .core
            .names
            .get(name)
            .ok_or_else(|| format!("no element named '{name}'"))?;
        let t = *self.core.slots[i]
            .tasks
            .get(index)
            .ok_or_else(|| format!("'{name}' has no task {index}"))?;
        crate::crossing::move_task(&self.core, t, thread);
        Ok(())
    }

    /// Which thread each task is on: (element name, task index, thread).
    pub fn task_threads(&self) -> Vec<(String, usize, usize)> {
        self.core
            .tasks
            .iter()
            .map(|t| {
                (
                    self.core.slots[t.elem].name.clone(),
                    t.index,
                    t.thread.load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

/// Stops a router from elsewhere (signal handlers, watchdogs).
#[derive(Clone)]
pub struct Stopper {
    core: Arc<Core>,
}

impl Stopper {
    pub fn stop(&self) {
        self.core.stop_now();
    }
}
