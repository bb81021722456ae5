//! Router instantiation and the router's shared core.
//!
//! `Router::build` takes configuration text through every stage: parse and
//! flatten (paraclick-lang), check classes, port counts and push/pull,
//! check requirements, configure every element (AddressInfo and other
//! early-phase classes first), connect ports into direct peer references,
//! initialize, and assign tasks to threads. Every error from a stage is
//! reported, located, before anything runs.

use crate::args::ArgEnv;
use crate::core::{Core, Peer, Ports, Slot, ThreadShared};
pub use crate::cx::InitCx;
use crate::cx::{Cx, HandlerCx};
use crate::element::Node;
use crate::registry::{ConfigCx, Registry};
use crate::sched::{self, SchedPolicy, Task};
use crossbeam_utils::CachePadded;
use paraclick_lang::check::{check_graph_with_flow, ClassSpec as LangSpec, PortKind};
use paraclick_lang::{
    parse_config_with, Diagnostic, FilePolicy, FlatGraph, ParseOptions, Source, Span,
};
use paraclick_packet::Batch;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
/// Per element: whether two of its push outputs reach one element through
/// push connections (a queue ends a path: what it holds is pulled later).
/// Batches such an element splits must go on in runs of arrival order:
/// one packet at a time, as Click runs, the paths meet in arrival order,
/// and a stateful element there (a rewriter's two directions, a trace
/// writer, a queue) sees the same sequence. Elements whose outputs never
/// meet again keep whole per-output batches.
pub(crate) fn ordered_splits(
    graph: &FlatGraph,
    checked: &paraclick_lang::check::CheckedGraph,
) -> Vec<bool> {
    let n = graph.elements.len();
    // Push successors, with the output port each leaves by.
    let mut next: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for c in &graph.connections {
        if checked.outputs[c.from].get(c.from_port) == Some(&PortKind::Push) {
            next[c.from].push((c.from_port, c.to));
        }
    }
    let mut seen_from = vec![usize::MAX; n];
    let mut seen_by = vec![usize::MAX; n];
    let mut stack = Vec::new();
    (0..n)
        .map(|i| {
            let mut ports: Vec<usize> = next[i].iter().map(|&(p, _)| p).collect();
            ports.sort_unstable();
            ports.dedup();
            if ports.len() < 2 {
                return false;
            }
            // Marks what each output reaches; a mark left by another
            // output of `i` is a meeting point.
            for &(port, to) in &next[i] {
                stack.clear();
                stack.push(to);
                while let Some(e) = stack.pop() {
                    if seen_by[e] == i {
                        if seen_from[e] != port {
                            return true;
                        }
                        continue;
                    }
                    seen_by[e] = i;
                    seen_from[e] = port;
                    if e != i {
                        stack.extend(next[e].iter().map(|&(_, t)| t));
                    }
                }
            }
            false
        })
        .collect()
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
    /// Let a batch split by an element whose outputs meet again further
    /// on go down each output whole (`--relaxed-order`): fewer, larger
    /// batches, but packets of one path may overtake another's where the
    /// paths meet. By default such splits keep arrival order.
    pub relaxed_order: bool,
    /// Fault domains: element-name prefixes (`s1` for `s1/...`) whose
    /// elements' panics stop their domain only (see [`crate::fault`]).
    /// Empty: none, a panic ends the worker.
    pub fault_domains: Vec<String>,
    /// CPU shares of fault domains (`(domain, share)`, share in (0, 1]):
    /// the threads running tasks of such domains schedule them so that,
    /// under contention, each gets its share of the thread's cycles (see
    /// [`crate::share`]). Empty: plain round robin.
    pub cpu_shares: Vec<(String, f64)>,
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
            relaxed_order: false,
            fault_domains: Vec::new(),
            cpu_shares: Vec::new(),
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

    /// [`Router::from_graph`] for a hot swap replacing `old`: its elements
    /// may take over `old`'s control sockets
    /// ([`InitCx::take_over_server`]). The hot swap parses the text itself,
    /// to tell the language's errors from the build's, as Click does.
    pub fn from_graph_replacing(
        graph: FlatGraph,
        src: &Source,
        reg: &Registry,
        opts: &BuildOptions,
        old: &Router,
    ) -> Result<Router, Vec<Diagnostic>> {
        paraclick_packet::clock::init();
        Self::from_graph_offering(
            graph,
            src,
            reg,
            opts,
            crate::control::server_keys(&old.core),
            old.core.clock.now_ns(),
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
        let flow = |name: &str| reg.get(name).map(|c| c.flow_code.to_string());
        let checked = check_graph_with_flow(graph, &lookup, &flow, &names);
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
        Self::from_graph_offering(graph, src, reg, opts, Vec::new(), 0)
    }

    /// [`Router::from_graph`], offering the elements the servers of a
    /// router being replaced (their keys); under simulated time the clock
    /// starts at `sim_start` (the replaced router's time: time goes on
    /// across a swap, as in Click, so tables' ages and timeouts do).
    fn from_graph_offering(
        graph: FlatGraph,
        src: &Source,
        reg: &Registry,
        opts: &BuildOptions,
        offered: Vec<(String, String)>,
        sim_start: u64,
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
        let (mut slots, mut ports, names) = Self::connect(&graph, &checked, made, opts.profile);
        for (slot, fe) in slots.iter_mut().zip(&graph.elements) {
            slot.reads_data = reg.get(&fe.class).is_none_or(|c| c.reads_data);
        }
        if !opts.relaxed_order {
            let ordered = ordered_splits(&graph, &checked);
            for ((p, o), slot) in ports.iter_mut().zip(ordered).zip(slots.iter()) {
                p.ordered = o;
                p.one_by_one = o && slot.element.fused().is_none();
            }
        }
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
                let c = crate::time::RouterClock::simulated();
                c.advance_to(sim_start);
                c
            } else {
                crate::time::RouterClock::real()
            },
            policy: opts.policy,
            pin: opts.pin,
            exclusive: Mutex::new(()),
            source: src.text.as_str().into(),
            plan: crate::plan::Plan::default(),
            sync_epoch: AtomicU64::new(0),
            handler_writes: AtomicU64::new(0),
            migrating: Mutex::new(()),
            balancer: Mutex::new(None),
            balance_interval_ns: AtomicU64::new(0),
            run_cycles: AtomicU64::new(0),
            profile: opts
                .profile
                .then(|| crate::sched::Profile::new(nthreads, n)),
            arg_env,
            handler_drops: (0..n).map(|_| AtomicU64::new(0)).collect(),
            tap: crate::capture::Tap::new(),
            reasons,
            tracer: crate::trace::Tracer::new(nthreads, reg.packet_filter()),
            info: crate::control::RouterInfo::new(&graph, reg),
            workers_started: std::sync::atomic::AtomicUsize::new(0),
            started_ns: AtomicU64::new(0),
            start_gate: crate::core::Gate::new(true),
            workers_done: std::sync::atomic::AtomicUsize::new(0),
            handover: Mutex::new(None),
            hot: Mutex::new(std::sync::Weak::new()),
            domains: crate::fault::Domains::new(
                &opts.fault_domains,
                &opts.cpu_shares,
                graph.elements.iter().map(|e| e.name.as_str()),
            ),
            compiled: Mutex::new(Vec::new()),
            compiled_at: (0..n)
                .map(|_| std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            compiled_tasks: std::sync::OnceLock::new(),
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
            env.scope = fe
                .name
                .rfind('/')
                .map_or("", |i| &fe.name[..=i])
                .to_string();
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
        env.scope.clear();
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
        // Shared, so that a typed handle on an element
        // ([`crate::compiled::ElemRef`]) can keep it alive.
        let made: Vec<Arc<dyn Node>> = made.into_iter().map(Arc::from).collect();
        let n = made.len();
        let mut outputs: Vec<Vec<Peer>> = (0..n)
            .map(|i| vec![Peer::unconnected(); checked.outputs[i].len()])
            .collect();
        let mut inputs: Vec<Vec<Peer>> = (0..n)
            .map(|i| vec![Peer::unconnected(); checked.inputs[i].len()])
            .collect();
        for c in &graph.connections {
            if checked.outputs[c.from].get(c.from_port) == Some(&PortKind::Push) {
                outputs[c.from][c.from_port] = Peer::new(&*made[c.to], c.to, c.to_port, !profile);
            } else {
                inputs[c.to][c.to_port] = Peer::new(&*made[c.from], c.from, c.from_port, false);
            }
        }
        // Moving the `Arc`s into the slots does not move the elements the
        // peers point at.
        let mut slots = Vec::with_capacity(n);
        let mut ports = Vec::with_capacity(n);
        let mut names = HashMap::new();
        for (i, (fe, e)) in graph.elements.iter().zip(made).enumerate() {
            names.insert(fe.name.clone(), i);
            slots.push(Slot {
                element: crate::core::SlotNode::new(e),
                name: fe.name.clone(),
                class: fe.class.clone(),
                config: fe.config.clone(),
                live_config: std::sync::Mutex::new(None),
                span: fe.span.clone(),
                input_kinds: checked.inputs[i].clone(),
                output_kinds: checked.outputs[i].clone(),
                timer_gens: Default::default(),
                tasks: Vec::new(),
                modes: std::sync::atomic::AtomicU8::new(3),
                reads_data: true,
            });
            ports.push(Ports {
                outputs: std::mem::take(&mut outputs[i]).into_boxed_slice(),
                inputs: std::mem::take(&mut inputs[i]).into_boxed_slice(),
                ordered: false,
                one_by_one: false,
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
        for (elem, task, thread) in prefs {
            for &t in &core.slots[elem].tasks {
                if task.is_none_or(|k| k == tasks[t].index) {
                    tasks[t].pinned = Some(thread % nthreads);
                }
            }
        }
        core.tasks = tasks.into_boxed_slice();
        sched::initial_assignment(&core);
        core.plan = crate::plan::Plan::build(&core);
        sched::start_placement(&core);
        crate::notifier::connect(&mut core);
        crate::crossing::apply_ring_modes(&core, false);
        for q in &core.plan.queues {
            let reads = crate::plan::consumer_reads_data(&core, q.elem);
            core.slots[q.elem].element.set_consumer_reads_data(reads);
        }
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
        // A capture ends with the run, its file complete.
        crate::capture::stop_and_join(core);
    }

    /// Nanoseconds since the router was built, on its clock (simulated
    /// time under `--simtime`).
    pub fn now_ns(&self) -> u64 {
        self.core.clock.now_ns()
    }

    /// The failures of its fault domains so far (see [`crate::fault`]).
    pub fn faults(&self) -> Vec<crate::fault::Fault> {
        self.core
            .domains
            .as_ref()
            .map_or_else(Vec::new, |d| d.faults())
    }

    /// Per fault domain: the cycles the share scheduler charged it so far
    /// (every run of its tasks and timers on a thread that schedules by
    /// CPU shares; 0 for a domain without a share). See [`crate::share`].
    pub fn domain_cycles(&self) -> Vec<(String, u64)> {
        self.core
            .domains
            .as_ref()
            .map_or_else(Vec::new, |d| d.charged())
    }

    /// Whether fault domain `name` failed (`None`: no such domain).
    pub fn domain_failed(&self, name: &str) -> Option<bool> {
        self.core.domains.as_ref()?.domain_failed(name)
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

    /// How often the adaptive scheduler rebalances tasks across threads:
    /// its default, or what a BalancedThreadSched asked for.
    pub fn balance_interval(&self) -> std::time::Duration {
        crate::sched::balance_interval(&self.core)
    }

    pub fn element_names(&self) -> Vec<&str> {
        self.core.slots.iter().map(|s| s.name.as_str()).collect()
    }

    /// Runs `f` with a handler context for the element named `name` (as
    /// its handlers get: to call an element's own operations, such as a
    /// queue's yank, from a test or a tool); None if there is no such
    /// element.
    pub fn with_handler_cx<R>(&self, name: &str, f: impl FnOnce(HandlerCx<'_>) -> R) -> Option<R> {
        let i = *self.core.names.get(name)?;
        Some(f(HandlerCx {
            core: &self.core,
            elem: i,
        }))
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
        self.as_element(name, |cx, core, i| {
            if core.ports[i].one_by_one {
                // As a hop delivers it (see `Ports::one_by_one`).
                cx.push_one_by_one(&*core.slots[i].element, port, batch);
            } else {
                core.slots[i].element.push(cx, port, batch);
            }
        })
    }

    /// Sends `batch` out of output `port` of element `name` on the calling
    /// thread, as thread 0, as if the element had sent it (tests and tools;
    /// not while the router runs). From a source, the packets enter the
    /// router: the packet tracer marks them as it marks a source's.
    pub fn send_from(&self, name: &str, port: usize, batch: Batch) -> Result<(), String> {
        self.as_element(name, |cx, _, _| cx.push(port, batch))
    }

    /// Pulls from output `port` of element `name` on the calling thread, as
    /// thread 0 (tests and tools; not while the router runs).
    pub fn pull_from(&self, name: &str, port: usize, max: usize) -> Result<Option<Batch>, String> {
        self.as_element(name, |cx, core, i| {
            core.slots[i].element.pull(cx, port, max)
        })
    }

    /// Runs `f` on the calling thread as thread 0 with element `name`
    /// running (its index given), then flushes what it deferred: the one
    /// way in for [`Router::push_into`], [`Router::send_from`] and
    /// [`Router::pull_from`]. Refused while the router runs.
    fn as_element<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Cx<'_>, &Core, usize) -> T,
    ) -> Result<T, String> {
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
        let out = f(&mut cx, core, i);
        cx.flush_deferred();
        Ok(out)
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

    /// Times the workers yielded their cores with tasks awake but none
    /// with work (see `sched`'s idle loop).
    pub fn yields(&self) -> u64 {
        self.core
            .threads
            .iter()
            .map(|t| t.yields.load(Ordering::Relaxed))
            .sum()
    }

    /// Times a notifier woke a task of worker `thread` (a push into an
    /// empty queue its puller slept on, room in a full queue its source
    /// waited on); 0 for a thread the router does not have.
    pub fn task_wakes(&self, thread: usize) -> u64 {
        self.core
            .threads
            .get(thread)
            .map_or(0, |t| t.wakes.load(Ordering::Relaxed))
    }

    /// Whether a worker is parked now waiting for a handler write (a task
    /// of it said [`crate::Cx::wake_when_written`]), and the times a
    /// handler write has unparked one so.
    pub fn write_waits(&self) -> (bool, u64) {
        let waiting = self
            .core
            .threads
            .iter()
            .any(|t| t.until_written.load(Ordering::SeqCst) && t.parked.load(Ordering::SeqCst));
        let wakes = self
            .core
            .threads
            .iter()
            .map(|t| t.write_wakes.load(Ordering::Relaxed));
        (waiting, wakes.sum())
    }

    /// Times the workers waited in `poll(2)` on their devices'
    /// descriptors ([`crate::Cx::wake_when_readable`]), and times such a
    /// wait ended because a descriptor became readable.
    pub fn fd_waits(&self) -> (u64, u64) {
        self.core.threads.iter().fold((0, 0), |(w, k), t| {
            (
                w + t.fd_waits.load(Ordering::Relaxed),
                k + t.fd_wakes.load(Ordering::Relaxed),
            )
        })
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
    /// Whether an element on the consumer side of queue `name` (what
    /// pulls from it, and what that pushes to, up to the next queue)
    /// reads packet data ([`crate::ClassSpec::reads_data`]): a consumer
    /// on another thread then prefetches the data of the packets it takes
    /// (see [`crate::QueueElement::set_consumer_reads_data`]). `None` if
    /// `name` is not a queue.
    pub fn consumer_reads_data(&self, name: &str) -> Option<bool> {
        let e = *self.core.names.get(name)?;
        self.core
            .plan
            .queues
            .iter()
            .any(|q| q.elem == e)
            .then(|| crate::plan::consumer_reads_data(&self.core, e))
    }

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

#[cfg(test)]
mod tests {
    //! The build's phases (configure in phase order, connect, initialize
    //! in declaration order), their errors, and stopping.

    use crate::registry::{ClassSpec, ConfigCx, Registry};
    use crate::testing::{assert_err, ErrorText, WATCHDOG};
    use crate::{BuildOptions, Cx, DriverElement, Element, HandlerCx, InitCx, Router};
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicU64, Ordering};

    thread_local! {
        /// What the elements built on this thread did, in order.
        static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    fn log(s: String) {
        LOG.with(|l| l.borrow_mut().push(s));
    }

    fn take_log() -> Vec<String> {
        LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
    }

    /// Logs its configuration and initialization; its configuration
    /// `bad config` fails the first, `bad init` the second. It has a task
    /// that counts its runs.
    struct Step {
        name: String,
        fail_init: bool,
        runs: AtomicU64,
    }

    fn make_step(cx: &mut ConfigCx<'_>) -> Result<Step, String> {
        log(format!("configure {}", cx.name));
        if cx.config == "bad config" {
            return Err(format!("{} refuses its configuration", cx.name));
        }
        Ok(Step {
            name: cx.name.to_string(),
            fail_init: cx.config == "bad init",
            runs: AtomicU64::new(0),
        })
    }

    impl Element for Step {
        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            log(format!("initialize {}", self.name));
            if self.fail_init {
                return Err(format!("{} cannot start", self.name));
            }
            ix.add_task();
            Ok(())
        }

        fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
            if self.runs.fetch_add(1, Ordering::Relaxed) + 1 == 1000 && self.name == "stopper" {
                cx.request_stop();
            }
            true
        }
    }

    /// A driver: counts the stop requests it is told of, and stops the
    /// router at the second.
    struct Driver {
        told: AtomicU64,
    }

    impl Element for Driver {}

    impl DriverElement for Driver {
        fn stop_requested(&self, hx: &HandlerCx<'_>) {
            if self.told.fetch_add(1, Ordering::Relaxed) + 1 == 2 {
                hx.stop_now();
            }
        }
    }

    fn reg() -> Registry {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::element("Step", "0/0", "h", make_step));
        // Configured before the others, wherever it is declared (as
        // AddressInfo is).
        reg.register(ClassSpec::element("EarlyStep", "0/0", "h", make_step).phase(-1));
        reg.register(ClassSpec::driver("Driver", "0/0", "h", |_| {
            Ok(Driver {
                told: AtomicU64::new(0),
            })
        }));
        reg
    }

    fn build(conf: &str) -> Result<Router, String> {
        take_log();
        let src = paraclick_lang::Source::new("t.click", conf);
        Router::build(&src, &reg(), &BuildOptions::default()).map_err(|d| d.error_text())
    }

    fn build_err(conf: &str) -> String {
        match build(conf) {
            Ok(_) => panic!("built: {conf}"),
            Err(e) => e,
        }
    }

    #[test]
    fn configure_goes_by_phase_then_initialize_by_declaration() {
        build("a :: Step; b :: Step; e :: EarlyStep; c :: Step;").unwrap();
        assert_eq!(
            take_log(),
            [
                "configure e",
                "configure a",
                "configure b",
                "configure c",
                "initialize a",
                "initialize b",
                "initialize e",
                "initialize c",
            ]
        );
    }

    #[test]
    fn every_configuration_error_is_reported_located_and_nothing_initialized() {
        let e = build_err("a :: Step(bad config);\nb :: Step;\nc :: Step(bad config);");
        assert!(
            e.contains("t.click:1:") && e.contains("a :: Step: a refuses its configuration"),
            "{e}"
        );
        assert!(
            e.contains("t.click:3:") && e.contains("c :: Step: c refuses its configuration"),
            "{e}"
        );
        assert_eq!(e.matches("refuses").count(), 2, "{e}");
        assert!(
            take_log().iter().all(|l| l.starts_with("configure")),
            "a configuration error stops the build before initialize"
        );
    }

    #[test]
    fn an_unknown_class_does_not_hide_the_known_elements_errors() {
        let e = build_err("a :: Nope;\nb :: Step(bad config);");
        assert!(e.contains("Nope"), "{e}");
        assert!(
            e.contains("t.click:2:") && e.contains("b refuses its configuration"),
            "{e}"
        );
        assert!(!take_log().iter().any(|l| l.starts_with("initialize")));
    }

    #[test]
    fn every_initialize_error_is_reported_located() {
        let e = build_err("a :: Step(bad init);\nb :: Step;\nc :: Step(bad init);");
        assert!(
            e.contains("t.click:1:") && e.contains("a :: Step: a cannot start"),
            "{e}"
        );
        assert!(
            e.contains("t.click:3:") && e.contains("c :: Step: c cannot start"),
            "{e}"
        );
        // Every element was initialized: one failure does not stop the
        // others' checks.
        assert_eq!(
            take_log()
                .iter()
                .filter(|l| l.starts_with("initialize"))
                .count(),
            3
        );
    }

    #[test]
    fn one_driver_at_most() {
        assert_err(
            build("d1 :: Driver;\nd2 :: Driver;"),
            "t.click:2:7: d2 :: Driver: only one driver element allowed",
        );
        build("d1 :: Driver;").unwrap();
    }

    /// Runs `r` on another thread, returning when it stops (panics after
    /// the watchdog).
    fn run_bounded(r: &Router) {
        let t0 = std::time::Instant::now();
        std::thread::scope(|s| {
            let h = s.spawn(|| r.run());
            while !h.is_finished() {
                if t0.elapsed() > WATCHDOG {
                    r.stop();
                    panic!("the router did not stop");
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
    }

    #[test]
    fn a_stop_request_without_a_driver_stops_the_router() {
        let r = build("stopper :: Step;").unwrap();
        run_bounded(&r);
        assert!(!r.is_running());
        let s = r.element::<Step>("stopper").unwrap();
        assert!(s.runs.load(Ordering::Relaxed) >= 1000);
        assert_eq!(r.core.stop_requests.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_driver_decides_what_a_stop_request_means() {
        let r = build("d :: Driver; x :: Step;").unwrap();
        let d = r.element::<Driver>("d").unwrap();
        r.core.request_stop();
        assert!(r.is_running(), "the driver did not stop it yet");
        assert_eq!(d.told.load(Ordering::Relaxed), 1);
        r.core.request_stop();
        assert!(!r.is_running());
        assert_eq!(d.told.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_router_stopped_before_it_runs_runs_nothing() {
        let r = build("x :: Step;").unwrap();
        r.stopper().stop();
        run_bounded(&r);
        assert_eq!(r.task_runs("x"), Some(0));
    }

    #[test]
    fn stop_from_another_thread_ends_the_run() {
        let r = build("x :: Step;").unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                // Once the task has run, it is running: stop it.
                let t0 = std::time::Instant::now();
                while r.task_runs("x").unwrap() == 0 && t0.elapsed() < WATCHDOG {
                    std::thread::yield_now();
                }
                r.stop();
            });
            run_bounded(&r);
        });
        assert!(r.task_runs("x").unwrap() > 0);
        assert!(!r.is_running());
    }
}
