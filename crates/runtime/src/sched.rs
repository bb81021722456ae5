//! Worker threads, their worklists, and task assignment.
//!
//! Each worker thread runs its own worklist of tasks round-robin, checks its
//! timers, and backs off when a whole pass over its tasks found no work:
//! it spins, then yields, and only once it has found nothing to do for
//! [`SLEEP_AFTER`] does it sleep (short sleeps, bounded by the next timer).
//! A thread pulling from a queue that another thread fills in batches finds
//! it empty between batches; it must not be asleep when the next one comes.
//! There is no shared worklist: the only cross-thread traffic is the queues
//! between elements.

use crate::clock;
use crate::core::Core;
use crate::cx::Cx;
use paraclick_packet::pool;
use rustix::thread::CpuSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How tasks without a `StaticThreadSched` pin are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// Tasks that meet at a queue start on one thread (groups dealt to
    /// threads), then rebalanced from measured cost: a move that makes a
    /// queue cross threads is kept only if the packets through the
    /// queues measured faster after it, and work moves off a worker that
    /// is not getting its core (see [`crate::contention`]).
    Adaptive,
    /// The adaptive scheduler as it was before: round-robin placement at
    /// start, rebalanced from measured cost alone (`--sched spread`).
    Spread,
    /// Round-robin placement, never moved.
    Static,
}

impl std::str::FromStr for SchedPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "adaptive" => Ok(SchedPolicy::Adaptive),
            "spread" | "adaptive-spread" => Ok(SchedPolicy::Spread),
            "static" | "round-robin" | "rr" => Ok(SchedPolicy::Static),
            _ => Err(format!(
                "unknown scheduling policy '{s}' (adaptive, spread, static, round-robin)"
            )),
        }
    }
}

/// A schedulable unit: task `index` of element `elem`.
pub(crate) struct Task {
    pub elem: usize,
    pub index: usize,
    pub thread: AtomicUsize,
    pub pinned: Option<usize>,
    /// Runs, and runs that did work (written only by the running thread).
    pub runs: AtomicU64,
    pub work: AtomicU64,
    /// Cycles spent in the task's runs that did work, estimated from one
    /// run in [`SAMPLE_EVERY`] of its thread's (written only by the
    /// running thread).
    pub cycles: AtomicU64,
    pub migrations: AtomicU64,
    /// Packets the task's element pushed or pulled (profiling only).
    pub packets: AtomicU64,
    /// Asleep until a notifier wakes it (see [`crate::notifier`]); its
    /// worker skips it meanwhile.
    pub asleep: std::sync::atomic::AtomicBool,
    /// Gates (full notifiers downstream) now closed; the task runs only
    /// when none is.
    pub blocked: AtomicUsize,
    /// The element asked for the task to sleep while its upstream queues
    /// are empty, and to wait while a downstream queue is full.
    pub sleep_when_empty: bool,
    pub wait_for_room: bool,
    /// The notifiers it listens to (set once the router is built).
    pub listen: crate::notifier::Listen,
}

/// How long a worker must have found no work before it sleeps. Linux
/// sleeps at least ~50 µs (timer slack) even when asked for less: at
/// millions of packets per second a queue fills in that time, so a worker
/// keeps polling through short gaps in its traffic.
pub const SLEEP_AFTER: Duration = Duration::from_millis(2);

/// How long a worker whose tasks are all asleep (each waits on a notifier,
/// so whatever gives it work unparks it) spins before it parks. It does
/// not yield meanwhile: on a machine with more runnable threads than
/// cores, `yield_now` hands the core to another process for a whole
/// time slice (milliseconds), during which a crossing queue fills and its
/// source waits; a parked worker is runnable again as soon as it is
/// unparked. Gaps shorter than this (a producer on another core
/// publishing every few microseconds) cost no system call on either side.
pub const PARK_AFTER: Duration = Duration::from_micros(50);

/// One task run in this many is timed with the cycle counter (two reads
/// of it, each some tens of cycles: at 17 they were about 2% of a BURST 1
/// path; at 61 a task running a million times a second still gives
/// sixteen thousand samples a second).
/// Odd, so that the sample does not fall on the same phase of work that
/// recurs every power-of-two runs (a queue publishing every 16 packets);
/// prime, so that the one count of a thread's runs it is taken from
/// moves over the tasks of a pass in turn (see `Pass::run_in`).
pub const SAMPLE_EVERY: u64 = 61;

/// A busy worker runs the flushes its tasks deferred (a crossing queue's
/// stage) every this many passes: a source sending one packet a run
/// fills a stage of a queue's `STAGE` (64) packets in as many passes, so
/// that a stage is published full, not cut at half.
pub const FLUSH_EVERY: u64 = 64;
// The pass tests a flush only on the passes it looks at timers (every 16).
const _: () = assert!(FLUSH_EVERY.is_multiple_of(16));

impl Task {
    pub fn new(elem: usize, index: usize) -> Task {
        Task {
            elem,
            index,
            thread: AtomicUsize::new(0),
            pinned: None,
            runs: AtomicU64::new(0),
            work: AtomicU64::new(0),
            cycles: AtomicU64::new(0),
            migrations: AtomicU64::new(0),
            packets: AtomicU64::new(0),
            asleep: std::sync::atomic::AtomicBool::new(false),
            blocked: AtomicUsize::new(0),
            sleep_when_empty: false,
            wait_for_room: false,
            listen: Default::default(),
        }
    }
}

/// Per-element cost samples for `--report costs`: per thread, per element,
/// cycles spent in the element itself (callees excluded) and packets.
/// Cycles, packets (pushed in and pulled out), calls, and the packets
/// pulled out alone, of one element on one thread.
type Cell = (AtomicU64, AtomicU64, AtomicU64, AtomicU64);

pub(crate) struct Profile {
    cells: Box<[Box<[Cell]>]>,
    /// Cycles one measurement itself costs (subtracted per call).
    overhead: u64,
}

impl Profile {
    pub fn new(nthreads: usize, nelems: usize) -> Profile {
        Profile {
            cells: (0..nthreads)
                .map(|_| {
                    (0..nelems)
                        .map(|_| {
                            (
                                AtomicU64::new(0),
                                AtomicU64::new(0),
                                AtomicU64::new(0),
                                AtomicU64::new(0),
                            )
                        })
                        .collect()
                })
                .collect(),
            overhead: Self::calibrate(),
        }
    }

    /// The cycles between two back-to-back cycle-counter reads around an
    /// empty call: the median of many tries.
    fn calibrate() -> u64 {
        let mut v: Vec<u64> = (0..1001)
            .map(|_| {
                let a = clock::cycles();
                std::hint::black_box(());
                clock::cycles().wrapping_sub(a)
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    }

    /// Charges element `elem` one call of `cycles` (measurement overhead
    /// removed here) handling `packets`.
    #[inline]
    pub fn add(&self, thread: usize, elem: usize, cycles: u64, packets: u64) {
        let (c, p, n, _) = &self.cells[thread][elem];
        bump(c, cycles.saturating_sub(self.overhead));
        bump(p, packets);
        bump(n, 1);
    }

    /// Adds packets a source sent from a timer to element `elem`, without
    /// a call.
    #[inline]
    pub fn add_sent(&self, thread: usize, elem: usize, packets: u64) {
        bump(&self.cells[thread][elem].1, packets);
    }

    /// Adds packets to element `elem` without a call (pull results).
    #[inline]
    pub fn add_packets(&self, thread: usize, elem: usize, packets: u64) {
        let cell = &self.cells[thread][elem];
        bump(&cell.1, packets);
        bump(&cell.3, packets);
    }

    /// Cycles, packets, and the packets pulled out, of `elem` summed over
    /// threads.
    fn total(&self, elem: usize) -> (u64, u64, u64) {
        self.cells.iter().fold((0, 0, 0), |(c, p, o), t| {
            (
                c + t[elem].0.load(Ordering::Relaxed),
                p + t[elem].1.load(Ordering::Relaxed),
                o + t[elem].3.load(Ordering::Relaxed),
            )
        })
    }
}

#[inline]
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// Pinned tasks go to their thread; the rest are dealt round-robin.
pub(crate) fn initial_assignment(core: &Core) {
    let n = core.nthreads;
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut next = 0;
    for (id, t) in core.tasks.iter().enumerate() {
        let th = match t.pinned {
            Some(p) => p % n,
            None => {
                let th = next % n;
                next += 1;
                th
            }
        };
        t.thread.store(th, Ordering::Relaxed);
        lists[th].push(id);
    }
    for (th, l) in lists.into_iter().enumerate() {
        core.threads[th].set_worklist(l);
    }
}

/// The adaptive scheduler's start (once the plan is built): each group
/// of unpinned tasks that meet at a queue on one thread, that of a pinned
/// task they meet at a queue if any
/// ([`crate::contention::start_placement`]), so that no queue crosses
/// threads unless a measured split (or a pin) makes it. Other policies keep
/// [`initial_assignment`]'s round-robin.
pub(crate) fn start_placement(core: &Core) {
    if core.policy != SchedPolicy::Adaptive || core.nthreads < 2 {
        return;
    }
    let pinned: Vec<Option<usize>> = core.tasks.iter().map(|t| t.pinned).collect();
    let pairs = core.plan.affine_pairs(&|t| pinned[t].is_none());
    let anchors = core.plan.affine_pairs(&|_| true);
    let assign =
        crate::contention::start_placement(pinned.len(), &pinned, &pairs, &anchors, core.nthreads);
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); core.nthreads];
    for (id, (t, &th)) in core.tasks.iter().zip(&assign).enumerate() {
        t.thread.store(th, Ordering::Relaxed);
        lists[th].push(id);
    }
    for (th, l) in lists.into_iter().enumerate() {
        core.threads[th].set_worklist(l);
    }
}

/// The stack of a worker thread (and of the simulated-time thread, which
/// runs elements too). Elements call each other along push and pull
/// paths, a few hundred bytes to a few KiB of stack a hop, and `check`
/// refuses paths of more than [`paraclick_lang::check::MAX_CHAIN`]
/// elements: 16 KiB a hop at that length. Reserved, not touched, beyond
/// what is used.
pub(crate) const WORKER_STACK: usize = 16 << 20;

pub(crate) fn run_workers(core: &Core) {
    core.workers_done.store(0, Ordering::Release);
    for ts in core.threads.iter() {
        ts.quiet.store(0, Ordering::Release);
    }
    if !core.running.load(Ordering::Acquire) {
        core.workers_done.store(core.nthreads, Ordering::Release);
        crate::core::run_handover(core);
        return;
    }
    // Registers the process for the notifiers' heavy fence now rather
    // than in a producer's first publication.
    let _ = crate::notifier::light_wakes();
    let c0 = clock::cycles();
    if core.clock.is_simulated() {
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("paraclick-sim".into())
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || sim_driver(core))
                .expect("spawn the simulated-time thread");
            core.start_gate.wait();
        });
        core.run_cycles
            .fetch_add(clock::cycles().wrapping_sub(c0), Ordering::Relaxed);
        return;
    }
    std::thread::scope(|s| {
        for t in 0..core.nthreads {
            std::thread::Builder::new()
                .name(format!("paraclick-{t}"))
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || worker(core, t))
                .expect("spawn worker thread");
        }
        core.start_gate.wait();
        if core.policy != SchedPolicy::Static
            && core.nthreads > 1
            && core.tasks.iter().filter(|t| t.pinned.is_none()).count() > 0
        {
            balancer(core);
        }
    });
    core.run_cycles
        .fetch_add(clock::cycles().wrapping_sub(c0), Ordering::Relaxed);
}

/// How often the adaptive scheduler looks at the measured loads.
const BALANCE_INTERVAL: Duration = Duration::from_millis(50);
/// A new assignment must cut the busiest thread's load by this fraction to
/// be adopted (hysteresis: tasks do not bounce on noise).
pub const HYSTERESIS: f64 = 0.15;

/// The adaptive scheduler, run by the thread that started the router while
/// the workers run: every [`BALANCE_INTERVAL`] it takes each task's sampled
/// cycles over the interval and computes a longest-processing-time-first
/// assignment, moving tasks only when that lowers the busiest thread's load
/// by more than [`HYSTERESIS`].
///
/// Locality rule (beyond SMP Click): tasks connected through a queue (one
/// pushes into it, the other pulls from it) form a group, and a group whose
/// load fits within one thread's fair share (with [`GROUP_SLACK`] to spare:
/// shared caches are worth a little imbalance) is placed as a unit, so a
/// push path and the pull path it feeds share a thread whenever the load
/// allows; groups too heavy for one thread are split into their tasks. Pinned tasks (StaticThreadSched) stay where they are and count
/// against their thread's load.
fn balancer(core: &Core) {
    let mut b = Balancer::new(core);
    *core.balancer.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
    let mut look_at = Instant::now() + b.next_look(core);
    while core.running.load(Ordering::Acquire) {
        // Wait out the interval (shorter while a split is on trial), in
        // quick looks at the workers' cores (adaptive policy), unless the
        // router stops (it unparks us).
        let until = look_at.min(Instant::now() + b.quick_wait(core));
        loop {
            let now = Instant::now();
            if now >= until || !core.running.load(Ordering::Acquire) {
                break;
            }
            std::thread::park_timeout(until - now);
        }
        if !core.running.load(Ordering::Acquire) {
            break;
        }
        if Instant::now() >= look_at || b.quick(core).is_some() {
            if Instant::now() >= look_at {
                b.step(core);
            }
            look_at = Instant::now() + b.next_look(core);
        }
    }
    *core.balancer.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// How often the adaptive scheduler looks at the loads: what
/// [`crate::InitCx::set_balance_interval`] set, or [`BALANCE_INTERVAL`].
pub(crate) fn balance_interval(core: &Core) -> Duration {
    match core.balance_interval_ns.load(Ordering::Relaxed) {
        0 => BALANCE_INTERVAL,
        ns => Duration::from_nanos(ns),
    }
}

/// A reading of the CPUs' busy time: `/proc/stat`'s (busy, total) per
/// CPU, each worker's run ns, and when.
type CpuReading = (Vec<(u64, u64)>, Vec<u64>, Instant);

/// The adaptive scheduler's state between two looks at the loads: each
/// task's sampled cycles at the last look; the workers' shares of their
/// cores and the capacities the last placement used; the packets through
/// the queues at the last look; a split on trial and the back-off after
/// one undone ([`crate::contention`]).
pub(crate) struct Balancer {
    last: Vec<u64>,
    starve: crate::contention::Starvation,
    trials: crate::contention::Trials,
    t0: Instant,
    /// When the workers' schedstat was last read.
    sampled: Option<Instant>,
    /// The CPU each worker is pinned to (none unpinned), and its
    /// `/proc/stat` times, the worker's run ns and the time, at the last
    /// reading; each worker's [`crate::contention::idle_share`].
    cpus: Vec<Option<usize>>,
    cpu_last: Option<CpuReading>,
    idle: Vec<Option<f64>>,
    caps_used: Vec<f64>,
    /// `PARACLICK_SCHED_LOG` set: each placement and each change of the
    /// workers' shares is written to standard error.
    log: bool,
    /// A split was priced out and logged (logged once).
    priced_out: bool,
}

impl Balancer {
    pub(crate) fn new(core: &Core) -> Balancer {
        let mut trials = crate::contention::Trials::new(
            balance_interval(core).as_secs_f64(),
            clock::rough_cycles_per_second(),
        );
        trials.look(&queue_packets(core), 0.0);
        let cpus = (0..core.nthreads)
            .map(|t| {
                let all = allowed_cpus();
                (core.pin && !all.is_empty()).then(|| all[t % all.len()])
            })
            .collect();
        let mut b = Balancer {
            last: vec![0; core.tasks.len()],
            starve: crate::contention::Starvation::new(core.nthreads),
            trials,
            t0: Instant::now(),
            sampled: None,
            cpus,
            cpu_last: None,
            idle: vec![None; core.nthreads],
            caps_used: vec![1.0; core.nthreads],
            log: std::env::var_os("PARACLICK_SCHED_LOG").is_some(),
            priced_out: false,
        };
        if core.policy == SchedPolicy::Adaptive {
            b.sample(core);
        }
        b
    }

    /// Reads the workers' schedstat (and, at most every 40 ms, their CPUs'
    /// busy time) into their shares of their cores, unless read less than
    /// a millisecond ago.
    fn sample(&mut self, core: &Core) {
        use crate::contention as c;
        let now = Instant::now();
        if self
            .sampled
            .is_some_and(|s| now - s < Duration::from_millis(1))
        {
            return;
        }
        self.sampled = Some(now);
        let samples: Vec<Option<(u64, u64)>> = core
            .threads
            .iter()
            .map(|ts| c::read_schedstat(ts.tid.load(Ordering::Relaxed)))
            .collect();
        if self.cpus.iter().any(Option::is_some) {
            let due = self
                .cpu_last
                .as_ref()
                .is_none_or(|(_, _, at)| now - *at >= Duration::from_millis(40));
            if due {
                let times = c::read_cpu_times();
                let runs: Vec<u64> = samples.iter().map(|s| s.map_or(0, |s| s.0)).collect();
                if let Some((t0, r0, at)) = &self.cpu_last {
                    let wall = (now - *at).as_nanos().max(1) as f64;
                    for (w, cpu) in self.cpus.iter().enumerate() {
                        let busy = cpu
                            .and_then(|cpu| c::busy_fraction(*t0.get(cpu)?, *times.get(cpu)?, 4));
                        let own = runs[w].saturating_sub(r0[w]) as f64 / wall;
                        // A window too short to say keeps the last estimate.
                        if let Some(b) = busy {
                            self.idle[w] = Some(c::idle_share(b - own));
                        }
                    }
                }
                self.cpu_last = Some((times, runs, now));
            }
        }
        self.observe(&samples);
    }

    /// One sample of the workers' schedstat (cumulative run and wait ns
    /// each), with the idle workers' shares as last read.
    pub(crate) fn observe(&mut self, samples: &[Option<(u64, u64)>]) {
        let before = self.starve.capacities();
        // A pinned worker whose CPU has not been read over a whole window
        // yet keeps its share while idle: drifting back to a whole core
        // would return work to a CPU another process may still hold
        // (only an unpinned worker, whose CPU is not known, drifts).
        let idle: Vec<Option<f64>> = (0..self.idle.len())
            .map(|w| {
                self.idle[w].or_else(|| {
                    self.cpus
                        .get(w)
                        .copied()
                        .flatten()
                        .map(|_| self.starve.shares()[w])
                })
            })
            .collect();
        self.starve.update(samples, &idle);
        if self.log && self.starve.changed(&before) {
            eprintln!(
                "sched {:8.1} ms: shares of the cores {:?}",
                self.t0.elapsed().as_secs_f64() * 1e3,
                self.starve.capacities()
            );
        }
    }

    /// Sets the idle workers' shares (as read from their CPUs' busy
    /// time), for tests.
    #[cfg(test)]
    pub(crate) fn set_idle(&mut self, idle: &[Option<f64>]) {
        self.idle = idle.to_vec();
    }

    /// How long until the next quick look: [`crate::contention::QUICK_LOOK_NS`]
    /// under the adaptive policy, else never before the next look.
    pub(crate) fn quick_wait(&self, core: &Core) -> Duration {
        if core.policy == SchedPolicy::Adaptive {
            Duration::from_nanos(crate::contention::QUICK_LOOK_NS)
        } else {
            Duration::from_secs(3600)
        }
    }

    /// A quick look between two looks at the loads: the workers' shares
    /// of their cores are sampled, and if a worker became starved or got
    /// its core back since the last placement while another has its
    /// whole core (and no split is on trial), the tasks are placed again
    /// now ([`Balancer::place`]);
    /// returns the moves then made.
    pub(crate) fn quick(&mut self, core: &Core) -> Option<Vec<(usize, usize)>> {
        if core.policy != SchedPolicy::Adaptive {
            return None;
        }
        self.sample(core);
        self.quick_decide(core)
    }

    /// [`Balancer::quick`] on the shares sampled so far.
    pub(crate) fn quick_decide(&mut self, core: &Core) -> Option<Vec<(usize, usize)>> {
        // Only where some worker has its whole core is a quick move a
        // clear gain: when every worker waits (a machine busy all over)
        // the shares are noisy, and the looks at the loads decide.
        let whole = self.starve.capacities().contains(&1.0);
        if self.trials.on_trial() || !whole || !self.starve.changed(&self.caps_used) {
            return None;
        }
        Some(self.place(core))
    }

    /// One look: the workers' shares of their cores are sampled, and the
    /// tasks placed ([`Balancer::place`]).
    pub(crate) fn step(&mut self, core: &Core) -> Vec<(usize, usize)> {
        if core.policy == SchedPolicy::Adaptive {
            self.sample(core);
        }
        self.place(core)
    }

    /// The cycles each task was sampled at since the last placement are
    /// its load; the moves found for them are made (returned, as
    /// `(task, thread)`). With the spread policy, [`rebalance`]'s; with
    /// the adaptive one, [`crate::contention::rebalance_weighted`]'s on
    /// the workers' measured shares of their cores, where a move that
    /// makes a queue cross threads is a trial, undone unless the queues
    /// then carry [`crate::contention::KEEP_MARGIN`] more packets a
    /// second.
    pub(crate) fn place(&mut self, core: &Core) -> Vec<(usize, usize)> {
        let loads: Vec<u64> = core
            .tasks
            .iter()
            .zip(self.last.iter_mut())
            .map(|(t, l)| {
                let c = t.cycles.load(Ordering::Relaxed);
                let d = c.saturating_sub(*l);
                *l = c;
                d
            })
            .collect();
        let current: Vec<usize> = core
            .tasks
            .iter()
            .map(|t| t.thread.load(Ordering::Relaxed))
            .collect();
        let pinned: Vec<Option<usize>> = core.tasks.iter().map(|t| t.pinned).collect();
        let pairs = core.plan.affine_pairs(&|t| pinned[t].is_none());
        let moves = if core.policy == SchedPolicy::Spread {
            rebalance(&loads, &current, &pinned, core.nthreads, &pairs)
        } else {
            self.adaptive_moves(core, &loads, &current, &pinned, &pairs)
        };
        for &(t, th) in &moves {
            crate::crossing::move_task(core, t, th);
        }
        if self.log && !moves.is_empty() {
            eprintln!(
                "sched {:8.1} ms: moved {moves:?} (task, thread) on shares {:?}",
                self.t0.elapsed().as_secs_f64() * 1e3,
                self.caps_used
            );
        }
        moves
    }

    /// How long to wait before the next look: the interval, or a trial's
    /// shorter looks ([`crate::contention::Trials::wait`]).
    pub(crate) fn next_look(&self, core: &Core) -> Duration {
        if core.policy == SchedPolicy::Spread {
            return balance_interval(core);
        }
        Duration::from_secs_f64(self.trials.wait())
    }

    /// The adaptive policy's moves for one look (see [`Balancer::place`]).
    fn adaptive_moves(
        &mut self,
        core: &Core,
        loads: &[u64],
        current: &[usize],
        pinned: &[Option<usize>],
        pairs: &[(usize, usize)],
    ) -> Vec<(usize, usize)> {
        use crate::contention as c;
        let caps = self.starve.capacities();
        self.caps_used = caps.clone();
        let (split, rate) = match self
            .trials
            .look(&queue_packets(core), self.t0.elapsed().as_secs_f64())
        {
            c::Step::Trial(moves) => {
                if self.log && !self.trials.on_trial() {
                    let prices: Vec<String> = (0..core.plan.queues.len())
                        .filter_map(|q| {
                            let p = self.trials.price(q)?;
                            let name = &core.slots[core.plan.queues[q].elem].name;
                            Some(format!("{name} {p:.0}"))
                        })
                        .collect();
                    eprintln!(
                        "sched {:8.1} ms: split {}; cycles a crossing packet cost: {}",
                        self.t0.elapsed().as_secs_f64() * 1e3,
                        if moves.is_empty() { "kept" } else { "undone" },
                        prices.join(", ")
                    );
                }
                return moves;
            }
            c::Step::Free { split, rate } => (split, rate),
        };
        let moves = c::rebalance_weighted(loads, current, pinned, &caps, pairs, split);
        if moves.is_empty() {
            return moves;
        }
        let mut after = current.to_vec();
        for &(t, th) in &moves {
            after[t] = th;
        }
        let queues: Vec<(&[usize], &[usize])> = core
            .plan
            .queues
            .iter()
            .map(|q| (q.push_tasks.as_slice(), q.pull_tasks.as_slice()))
            .collect();
        let crossed: Vec<usize> = (0..queues.len())
            .filter(|&q| c::crosses(queues[q], &after) && !c::crosses(queues[q], current))
            .collect();
        if crossed.is_empty() {
            return moves;
        }
        let packets = &self.trials.last().packets;
        if !c::split_pays(loads, current, &after, &caps, &queues, packets, &|q| {
            self.trials.price(q)
        }) {
            if self.log && !std::mem::replace(&mut self.priced_out, true) {
                eprintln!(
                    "sched {:8.1} ms: not splitting {moves:?}: its gain does not pay for \
                     the queues it would cross (their measured price, or the margin for \
                     queues not tried)",
                    self.t0.elapsed().as_secs_f64() * 1e3
                );
            }
            return Vec::new();
        }
        if rate > 0.0 {
            let undo = moves.iter().map(|&(t, _)| (t, current[t])).collect();
            let all: u64 = packets.iter().sum();
            let predicted = (all > 0).then(|| c::weighted_max(loads, &after, &caps) / all as f64);
            self.trials.start(undo, crossed, predicted);
        }
        moves
    }
}

/// Packets pulled out of each queue so far (the rate through them is
/// what a split of tasks that meet at them is judged by), in the plan's
/// order of queues.
fn queue_packets(core: &Core) -> Vec<u64> {
    core.plan
        .queues
        .iter()
        .map(|q| core.slots[q.elem].element.dequeued().unwrap_or(0))
        .collect()
}

/// The adaptive scheduler's decision for one interval's `loads`, the
/// tasks being on the `current` threads: the tasks to move and where, as
/// `(task, thread)`. A longest-processing-time-first placement
/// ([`lpt_place`], each unit preferring the thread it is on among equally
/// loaded ones, so that tasks that need not move stay) is adopted only if
/// it lowers the busiest thread's load by more than [`HYSTERESIS`];
/// otherwise nothing moves.
pub(crate) fn rebalance(
    loads: &[u64],
    current: &[usize],
    pinned: &[Option<usize>],
    nthreads: usize,
    pairs: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    let plan = lpt_place(loads, pinned, nthreads, pairs, Some(current));
    let max_of = |assign: &[usize]| -> u64 {
        let mut per = vec![0u64; nthreads];
        for (t, &th) in assign.iter().enumerate() {
            per[th % nthreads] += loads[t];
        }
        per.into_iter().max().unwrap_or(0)
    };
    let (cur_max, new_max) = (max_of(current), max_of(&plan));
    if (new_max as f64) >= cur_max as f64 * (1.0 - HYSTERESIS) {
        return Vec::new();
    }
    plan.iter()
        .enumerate()
        .filter(|&(t, &th)| th != current[t])
        .map(|(t, &th)| (t, th))
        .collect()
}

/// A group may exceed a thread's fair share by this fraction and still be
/// placed as a unit.
pub(crate) const GROUP_SLACK: f64 = 0.25;

/// [`lpt_assign_pairs`] with affinity given as a predicate on task pairs
/// (asked of every pair of unpinned tasks).
#[cfg(test)]
pub(crate) fn lpt_assign(
    loads: &[u64],
    pinned: &[Option<usize>],
    nthreads: usize,
    affine: &dyn Fn(usize, usize) -> bool,
) -> Vec<usize> {
    let n = loads.len();
    let mut pairs = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if pinned[a].is_none() && pinned[b].is_none() && affine(a, b) {
                pairs.push((a, b));
            }
        }
    }
    lpt_assign_pairs(loads, pinned, nthreads, &pairs)
}

/// Longest processing time first, with affinity groups placed as units
/// when they fit in a fair share. Returns a thread per task. The groups
/// are the connected parts of `pairs` (unpinned tasks that meet at a
/// queue, [`crate::plan::Plan::affine_pairs`]).
pub(crate) fn lpt_assign_pairs(
    loads: &[u64],
    pinned: &[Option<usize>],
    nthreads: usize,
    pairs: &[(usize, usize)],
) -> Vec<usize> {
    lpt_place(loads, pinned, nthreads, pairs, None)
}

/// [`lpt_assign_pairs`]; given the threads the tasks are on (`current`),
/// a unit goes to the thread its first task is on when that thread is one
/// of the least loaded, rather than to the lowest-numbered of them. The
/// placement of [`crate::contention::place_units`] on threads of whole
/// cores, splitting groups heavier than a fair share.
pub(crate) fn lpt_place(
    loads: &[u64],
    pinned: &[Option<usize>],
    nthreads: usize,
    pairs: &[(usize, usize)],
    current: Option<&[usize]>,
) -> Vec<usize> {
    let caps = vec![1.0; nthreads.max(1)];
    crate::contention::place_units(loads, pinned, &caps, pairs, current.unwrap_or(&[]), true)
}

fn pin_to_cpu(t: usize) {
    let cpus = allowed_cpus();
    if cpus.is_empty() {
        return;
    }
    let cpu = cpus[t % cpus.len()];
    let mut set = CpuSet::new();
    set.set(cpu);
    // The calling thread (no pid). Failure (e.g. a restricted cpuset) is
    // harmless.
    let _ = rustix::thread::sched_setaffinity(None, &set);
}

/// The CPUs the process may run on, read once, before any worker pins
/// itself: worker `t` goes to the `t`-th of them, so `taskset -c 2,3
/// paraclick -j 2` keeps its workers on CPUs 2 and 3 (pinning by index
/// would move them to 0 and 1, outside what the user allowed).
fn allowed_cpus() -> &'static [usize] {
    static CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    CPUS.get_or_init(|| {
        let Ok(set) = rustix::thread::sched_getaffinity(None) else {
            return Vec::new();
        };
        (0..CpuSet::MAX_CPU)
            .filter(|&cpu| set.is_set(cpu))
            .collect()
    })
}

/// A task of a worklist with its element, resolved once per worklist
/// change, and what the passes since its counts were last added to the
/// task's ([`Pass::publish_counts`]) did not give it: a busy run writes
/// nothing.
struct TaskRef<'r> {
    id: usize,
    task: &'r Task,
    node: &'r dyn crate::Node,
    /// Passes that skipped it (asleep, at a closed gate, out of its
    /// CPU share).
    skips: u64,
    /// Runs without work.
    idle: u64,
}

/// One worker's loop state: its context, its copy of the worklist, and
/// what a pass needs between passes. The real workers have one each; the
/// simulated-time driver has one per logical thread.
struct Pass<'r> {
    t: usize,
    cx: Cx<'r>,
    list: Vec<usize>,
    /// The tasks of `list`, resolved (the task and its element), so a run
    /// costs no index into the router's tables.
    refs: Vec<TaskRef<'r>>,
    version: u64,
    due: Vec<crate::timer::TimerEntry>,
    iter: u64,
    epoch: u64,
    /// Task runs left until the next timed one (see [`SAMPLE_EVERY`]).
    sample_in: u64,
    /// The share scheduler, if the router's domains have CPU shares
    /// ([`crate::share`]).
    shares: Option<crate::share::Shares>,
    /// Passes, and passes without work, not yet added to the thread's
    /// counts ([`Pass::publish_counts`]).
    polls: u64,
    idle_polls: u64,
}

impl<'r> Pass<'r> {
    fn new(core: &'r Core, t: usize) -> Pass<'r> {
        Pass {
            t,
            cx: Cx::new(core, t),
            list: Vec::new(),
            refs: Vec::new(),
            version: u64::MAX,
            due: Vec::new(),
            iter: 0,
            epoch: 0,
            sample_in: SAMPLE_EVERY,
            shares: crate::share::Shares::new(core.domains.as_deref()),
            polls: 0,
            idle_polls: 0,
        }
    }

    /// Adds the runs and passes counted in the pass's own memory to the
    /// shared counts of its tasks and thread (a task's runs are the passes
    /// less those that skipped it; its runs with work, those less its
    /// runs without): when the thread has no work,
    /// every 16 busy passes, before its worklist changes and when it
    /// stops. A busy pass writes no shared line per task run: the tasks
    /// of all threads lie side by side in one array, and a worker walking
    /// its own in order drew the next ones, another thread's, into its
    /// cache (the hardware's prefetch of a stream), so that the other
    /// thread's next count took the line back. Two threads of four
    /// `InfiniteSource -> Discard` each ran one of them at 15-21 Mpps
    /// against 30 in a process of its own.
    fn publish_counts(&mut self, ts: &crate::core::ThreadShared) {
        if self.polls == 0 {
            return;
        }
        for r in self.refs.iter_mut() {
            let runs = self.polls - r.skips;
            if runs != 0 {
                bump(&r.task.runs, runs);
                bump(&r.task.work, runs - r.idle);
            }
            r.skips = 0;
            r.idle = 0;
        }
        bump(&ts.polls, self.polls);
        self.polls = 0;
        if self.idle_polls != 0 {
            bump(&ts.idle_polls, self.idle_polls);
            self.idle_polls = 0;
        }
    }

    /// One pass over the worklist (see [`Pass::run_in`]): by the share
    /// scheduler if the router has CPU shares, else plain round robin.
    /// (The real workers choose once, for their whole loop: the round
    /// robin pays nothing for it.)
    #[inline(always)]
    fn run(&mut self, core: &'r Core) -> Ran {
        if self.shares.is_some() {
            self.run_shared(core)
        } else {
            self.run_in::<false, false>(core)
        }
    }

    #[inline(never)]
    fn run_shared(&mut self, core: &'r Core) -> Ran {
        self.run_in::<true, false>(core)
    }

    /// One pass over the worklist: acknowledges a plan change, runs each
    /// runnable task once, and (when no task had work, or every 16
    /// passes) flushes deferred work and runs the due timers. `SHARED`:
    /// the tasks and timers of domains with CPU shares run as
    /// [`crate::share`] says, each run timed and charged.
    /// `COMPILED`: a plain task run (not timed, not guarded) goes through
    /// the router's compiled task runs ([`crate::CompiledTasks`]), which
    /// must be installed.
    #[inline(always)]
    fn run_in<const SHARED: bool, const COMPILED: bool>(&mut self, core: &'r Core) -> Ran {
        let t = self.t;
        let ts = &core.threads[t];
        let e = core.sync_epoch.load(Ordering::Acquire);
        if e != self.epoch {
            // Turning the tracer or a capture on or off moves the epoch
            // (their handlers wait on the barrier), so the flags are read
            // here only.
            self.cx.refresh_tracing();
            // A plan change waits for this: nothing this thread staged
            // under the old plan may be published under the new one.
            self.cx.flush_deferred();
            self.epoch = e;
            ts.seen_epoch.store(e, Ordering::Release);
        }
        let version = self.version;
        ts.refresh_worklist(&mut self.version, &mut self.list);
        if self.version != version {
            self.publish_counts(ts);
            self.refs.clear();
            self.refs.extend(self.list.iter().map(|&id| TaskRef {
                id,
                task: &core.tasks[id],
                node: &*core.slots[core.tasks[id].elem].element,
                skips: 0,
                idle: 0,
            }));
        }
        let cx = &mut self.cx;
        if SHARED {
            if let Some(sh) = self.shares.as_mut() {
                sh.begin_pass();
            }
        }
        if cx.wake_hints != 0 {
            // Only a pass in which a task said when it will have work
            // ([`Cx::wake_at`], which alone sets these) leaves them set.
            cx.wake_ns = u64::MAX;
            cx.wake_hints = 0;
            cx.wake_hint_elem = usize::MAX;
        }
        let mut work = false;
        // Tasks skipped asleep (each waits on a notifier that unparks
        // this worker): counted where a task is skipped, kept in the
        // context after the loop.
        let mut asleep = 0;
        // Fairness among sources that wait for room: a source skipped
        // because its queue is full changes places with the nearest such
        // source before it in the list, which took the room first.
        // Without it, two sources feeding one queue on one thread met
        // the room in list order every pass, and the second ran 31 times
        // in a second against the first's 426,451.
        let mut skipped = usize::MAX;
        // Read once a pass rather than once a task run: every run is timed
        // when profiling or share-scheduled; fault domains guard each run.
        // A plain run is a count and the call; the others go out of line.
        let timed = SHARED || core.profile.is_some();
        let guarded = core.domains.is_some();
        let special = timed || guarded;
        let mut sample_in = self.sample_in;
        for r in self.refs.iter_mut() {
            let (id, task) = (r.id, r.task);
            if task.asleep.load(Ordering::Relaxed) {
                // A source asleep at its closed gate is skipped for its
                // full queue too (on another thread's wake it may still
                // be asleep when the source before it takes the room).
                if task.wait_for_room {
                    note_first_skipped(id, &mut skipped);
                }
                asleep += 1;
                r.skips += 1;
                continue;
            }
            if SHARED {
                if let (Some(sh), Some(d)) = (self.shares.as_mut(), &core.domains) {
                    if !sh.may_run(d.domain(task.elem)) {
                        r.skips += 1;
                        continue;
                    }
                }
            }
            if task.blocked.load(Ordering::Relaxed) > 0 && !gated_skip(core, id, &mut skipped) {
                r.skips += 1;
                continue;
            }
            cx.current = task.elem;
            // One run in SAMPLE_EVERY of the thread's is timed: a count
            // down in a register, rather than a remainder of the task's
            // runs (ten instructions, two of them multiplies, every run).
            sample_in -= 1;
            let did = if special || sample_in == 0 {
                let sampled = sample_in == 0;
                if sampled {
                    sample_in = SAMPLE_EVERY;
                }
                run_task_timed::<SHARED>(
                    core,
                    t,
                    cx,
                    &mut self.shares,
                    r,
                    timed || sampled,
                    guarded,
                )
            } else if COMPILED {
                match core.compiled_tasks.get() {
                    Some(c) => c.run_task(cx, r.task.index),
                    None => r.node.run_task(cx, r.task.index),
                }
            } else {
                r.node.run_task(cx, r.task.index)
            };
            if did {
                work = true;
            } else {
                r.idle += 1;
                if !task.listen.empty.is_empty() {
                    crate::notifier::after_idle_run(core, id);
                }
            }
        }
        self.sample_in = sample_in;
        cx.asleep = asleep;
        if skipped != usize::MAX {
            let i = self.refs.iter().position(|r| r.id == skipped).unwrap_or(0);
            if let Some(j) = self.refs[..i].iter().rposition(|r| r.task.wait_for_room) {
                self.refs.swap(i, j);
            }
        }
        self.iter = self.iter.wrapping_add(1);
        let mut next = u64::MAX;
        let mut timers = false;
        // Staged work (a crossing queue's stage) is published when the
        // thread runs out of work and otherwise every `FLUSH_EVERY`
        // passes; timers are looked at every 16 (a multiple of 16 is
        // tested first, so a busy pass pays one test for both).
        if !work || self.iter & 15 == 0 {
            if (!work || self.iter.is_multiple_of(FLUSH_EVERY)) && self.cx.has_deferred() {
                self.cx.flush_deferred();
            }
            (timers, next) = self.run_due_timers::<SHARED>(core);
            self.polls += 1;
            if !work {
                self.idle_polls += 1;
            }
            self.publish_counts(ts);
        } else {
            self.polls += 1;
        }
        if SHARED {
            if let Some(sh) = self.shares.as_mut() {
                sh.end_pass();
            }
        }
        let mut hinted = false;
        if !work {
            // Every task that ran said when it will have work (a blocked
            // task skipped at its closed gate did not: no sleep then).
            hinted =
                self.cx.wake_hints > 0 && self.cx.wake_hints + self.cx.asleep >= self.refs.len();
        }
        Ran {
            work,
            timers,
            next,
            hinted,
            asleep: self.cx.asleep,
        }
    }

    /// Runs this thread's timers that are due; whether any ran, and the
    /// next deadline (`u64::MAX` if none). `SHARED`: a timer of a domain
    /// ahead of its CPU share waits, still due, and each run is charged.
    fn run_due_timers<const SHARED: bool>(&mut self, core: &'r Core) -> (bool, u64) {
        let t = self.t;
        let ts = &core.threads[t];
        let cx = &mut self.cx;
        let mut timers = false;
        let mut next = ts.timers.next_deadline();
        if next != u64::MAX {
            let now = core.clock.now_ns();
            if now >= next {
                ts.timers.take_due(now, &mut self.due);
                for e in self.due.drain(..) {
                    let gen = core.slots[e.elem].timer_gens[e.timer].load(Ordering::Acquire);
                    if gen != e.gen {
                        continue; // rescheduled or unscheduled since
                    }
                    let home = core.home_thread(e.elem);
                    if home != t {
                        // The element's tasks moved: its timers follow.
                        core.threads[home]
                            .timers
                            .schedule(e.when_ns, e.elem, e.timer, e.gen);
                        continue;
                    }
                    let mut c0 = 0;
                    if SHARED {
                        if let (Some(sh), Some(d)) = (self.shares.as_mut(), &core.domains) {
                            if !sh.may_run(d.domain(e.elem)) {
                                // Its domain is ahead of its share: the
                                // timer waits, still due.
                                ts.timers.schedule(e.when_ns, e.elem, e.timer, e.gen);
                                continue;
                            }
                        }
                        c0 = clock::cycles();
                    }
                    cx.current = e.elem;
                    match &core.domains {
                        None => cx.outside_task(Some(e.elem), |cx| {
                            core.slots[e.elem].element.run_timer(cx, e.timer)
                        }),
                        Some(d) => crate::fault::guarded(core, d, e.elem, (), || {
                            cx.outside_task(Some(e.elem), |cx| {
                                core.slots[e.elem].element.run_timer(cx, e.timer)
                            })
                        }),
                    }
                    if SHARED {
                        if let (Some(sh), Some(d)) = (self.shares.as_mut(), &core.domains) {
                            let dt = clock::cycles().wrapping_sub(c0);
                            sh.charge(d, d.domain(e.elem), dt, true);
                        }
                    }
                }
                timers = true;
                next = ts.timers.next_deadline();
            }
        }
        (timers, next)
    }
}

/// A task run that is not plain: timed (one run in [`SAMPLE_EVERY`] of
/// the thread's, every run when profiling or share-scheduled; `timed`),
/// guarded by fault domains (`guarded`), or both. Out of line, so that
/// the plain run's loop keeps its registers.
#[inline(never)]
fn run_task_timed<const SHARED: bool>(
    core: &Core,
    t: usize,
    cx: &mut Cx<'_>,
    shares: &mut Option<crate::share::Shares>,
    r: &TaskRef<'_>,
    timed: bool,
    guarded: bool,
) -> bool {
    if !timed {
        return run_task_of(core, guarded, cx, r);
    }
    let (id, task) = (r.id, r.task);
    let ts = &core.threads[t];
    cx.child = 0;
    cx.task = Some(id);
    cx.pulled = false;
    let c0 = clock::cycles();
    let did = run_task_of(core, guarded, cx, r);
    let dt = clock::cycles().wrapping_sub(c0);
    cx.task = None;
    match &core.profile {
        Some(p) => {
            p.add(t, task.elem, dt.saturating_sub(cx.child), 0);
            bump(&task.cycles, dt);
            bump(&ts.busy_cycles, dt);
        }
        // A task's load is its runs that did work; polling an empty queue
        // is what an idle thread does. Each sample stands for the
        // SAMPLE_EVERY runs of the thread's around it, of which this
        // task's share is, on average, its share of the samples.
        None if did => {
            let k = if SHARED { 1 } else { SAMPLE_EVERY };
            bump(&task.cycles, dt * k);
            bump(&ts.busy_cycles, dt * k);
        }
        None => {}
    }
    if SHARED {
        if let (Some(sh), Some(d)) = (shares.as_mut(), &core.domains) {
            sh.charge(d, d.domain(task.elem), dt, did);
        }
    }
    did
}

/// Runs a task: under the router's fault domains if it has any
/// (`guarded`, see [`crate::fault`]); a router without them pays one test
/// of a flag the pass read once.
#[inline(always)]
fn run_task_of(core: &Core, guarded: bool, cx: &mut Cx<'_>, r: &TaskRef<'_>) -> bool {
    if guarded {
        if let Some(d) = &core.domains {
            return run_task_guarded(core, d, cx, r);
        }
    }
    r.node.run_task(cx, r.task.index)
}

#[inline(never)]
fn run_task_guarded(
    core: &Core,
    d: &crate::fault::Domains,
    cx: &mut Cx<'_>,
    r: &TaskRef<'_>,
) -> bool {
    let did = crate::fault::guarded(core, d, r.task.elem, false, || {
        r.node.run_task(cx, r.task.index)
    });
    // A panic may have left the hop being made half done.
    cx.sender = None;
    did
}

/// What one [`Pass::run`] did.
struct Ran {
    /// A task had work.
    work: bool,
    /// Timers ran. Not work: a timer is not traffic. A worker whose only
    /// work is a periodic timer (a Script's `wait 2ms`) would otherwise
    /// never be idle long enough to nap, and spend its idle time in
    /// `yield_now` (seconds of system time a minute after a source
    /// stopped). The worker passes once more without napping, so a task
    /// the timer woke runs at once.
    timers: bool,
    /// The next timer deadline if the timers were looked at
    /// (`u64::MAX` otherwise).
    next: u64,
    /// No task had work, and each one that ran said when it will
    /// ([`Cx::wake_at`], the earliest in `cx.wake_ns`); the others were
    /// asleep.
    hinted: bool,
    /// How many tasks were skipped asleep.
    asleep: usize,
}

/// Notes `id` as the pass's first task that waits for room and was
/// skipped (see the fairness rule in [`Pass::run_in`]). Cold: most tasks
/// skipped asleep are pullers, and the pass loop then pays one test.
#[cold]
#[inline(never)]
fn note_first_skipped(id: usize, skipped: &mut usize) {
    if *skipped == usize::MAX {
        *skipped = id;
    }
}

/// [`crate::notifier::gated`], noting the first task of the pass that
/// its full queue keeps from running in `skipped` (kept out of line: the
/// pass loop pays nothing for it when no source waits).
#[cold]
#[inline(never)]
fn gated_skip(core: &Core, id: usize, skipped: &mut usize) -> bool {
    let open = crate::notifier::gated(core, id);
    if !open && *skipped == usize::MAX {
        *skipped = id;
    }
    open
}

fn worker(core: &Core, t: usize) {
    // For the adaptive scheduler's look at the worker's schedstat.
    core.threads[t].tid.store(
        rustix::thread::gettid().as_raw_nonzero().get(),
        Ordering::Relaxed,
    );
    if core.domains.as_ref().is_some_and(|d| d.has_shares()) {
        worker_in::<true, false>(core, t)
    } else if core.compiled_tasks.get().is_some() && core.profile.is_none() {
        worker_in::<false, true>(core, t)
    } else {
        worker_in::<false, false>(core, t)
    }
}

/// A worker's loop; `SHARED`: its passes schedule by CPU shares
/// ([`crate::share`]); `COMPILED`: its plain task runs go through the
/// router's compiled task runs ([`crate::CompiledTasks`]).
fn worker_in<const SHARED: bool, const COMPILED: bool>(core: &Core, t: usize) {
    if core.pin {
        pin_to_cpu(t);
    }
    if core.domains.is_some() {
        // What a failing domain's task held is counted (crate::fault).
        pool::count_unwound(true);
    }
    let ts = &core.threads[t];
    let _worker = crate::crossing::WorkerMark::new(core, t);
    let mut p = Pass::new(core, t);
    let mut idle: u32 = 0;
    let mut idle_since = 0u64;
    let mut naps: u64 = 0;
    let sleep_after = (SLEEP_AFTER.as_secs_f64() * clock::rough_cycles_per_second()) as u64;
    let park_after = (PARK_AFTER.as_secs_f64() * clock::rough_cycles_per_second()) as u64;
    let fd_wait_after = (FD_WAIT_AFTER.as_secs_f64() * clock::rough_cycles_per_second()) as u64;
    let fd_spin_min = (FD_SPIN_MIN.as_secs_f64() * clock::rough_cycles_per_second()) as u64;
    // How long the worker spins before it waits on its tasks' descriptors
    // (cycles): adapted to the traffic after each wait (`adapt_fd_spin`).
    let mut fd_spin = fd_wait_after;
    let early = HINT_NAP_EARLY.as_nanos() as u64;
    let mut claimed = false;
    // Whether the worker napped for its tasks' times since their last work
    // (see `nap_target`), and the handler writes counted before the pass
    // (valid from the second idle pass on: see `Core::handler_written`).
    let mut napped = false;
    let mut writes_seen = 0u64;
    // The worker's count of task wakes read after the last idle pass, and
    // so before this one (see `ThreadShared::wakes`).
    let mut wakes_seen = 0u64;
    // Sleeps end when asked, not up to the default 50 µs of timer slack
    // later: the nap for a paced source's next packet, for a timer.
    let _ =
        rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(WORKER_TIMER_SLACK_NS));
    // The poll set of a wait on descriptors, kept between waits.
    let mut pollfds: Vec<libc::pollfd> = Vec::new();
    // Ready: a router prepared for a hot swap waits here for the hand-over.
    core.start_gate.wait();
    p.epoch = core.sync_epoch.load(Ordering::Acquire);
    ts.seen_epoch.store(p.epoch, Ordering::Release);
    ts.alive.store(true, Ordering::Release);
    if core.workers_started.fetch_add(1, Ordering::AcqRel) + 1 == core.nthreads {
        core.started_ns
            .store(core.ns_since_epoch(Instant::now()) + 1, Ordering::Release);
    }
    *ts.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
    while core.running.load(Ordering::Relaxed) {
        let Ran {
            work,
            timers,
            next,
            hinted,
            asleep,
        } = p.run_in::<SHARED, COMPILED>(core);
        if work {
            idle = 0;
            naps = 0;
            napped = false;
            continue;
        }
        if timers {
            continue;
        }
        if idle == 0 {
            idle_since = clock::cycles();
        }
        idle = idle.saturating_add(1);
        let writes_before = writes_seen;
        writes_seen = core.handler_writes.load(Ordering::SeqCst);
        let wakes_before = wakes_seen;
        wakes_seen = ts.wakes.load(Ordering::SeqCst);
        let cx = &mut p.cx;
        let all_asleep = || {
            p.list
                .iter()
                .all(|&id| core.tasks[id].asleep.load(Ordering::Relaxed))
        };
        // Every task gave a time (a paced source): the time says when, so
        // no spinning first. (A fast source's next packet is due within
        // the spin: it would never be left to nap.)
        let timed_only = hinted && cx.wake_fds.is_empty() && !cx.wake_written;
        // What a wait must see unchanged since the pass (a write counted
        // before it only from the second idle pass on).
        let seen = Seen {
            epoch: p.epoch,
            version: p.version,
            list: &p.list,
            asleep,
            writes: cx.wake_written.then_some(writes_before),
            wakes: wakes_before,
        };
        // A device's receive said what will give it work.
        let fd_wait = hinted && !busy_poll() && !cx.wake_fds.is_empty();
        // A task holding off on purpose (`Cx::holding_until`) has work
        // within microseconds: spin to then, do not yield. (A time from
        // an earlier pass is in the past: no reset per pass.)
        let holding = idle >= 64 && clock::cycles() < cx.hold_until;
        if (idle < 64 || holding) && !fd_wait && (!timed_only || busy_poll()) {
            std::hint::spin_loop();
        } else if fd_wait {
            // A device's receive (and perhaps a paced source) said what
            // will give it work: after `fd_spin` (at most FD_WAIT_AFTER)
            // without work, wait in poll(2) on the devices' descriptors
            // until one is readable (the kernel wakes this thread as a
            // packet arrives), the earliest time given or a timer; parked
            // meanwhile, so a notifier, a task added, a plan change or the
            // stop wakes it too. Before that, or with a time nearer than
            // `early`, spin. One clock read a pass (two with a time).
            let due = cx.wake_ns.min(next);
            if clock::cycles().wrapping_sub(idle_since) < fd_spin
                || (due != u64::MAX && due <= core.clock.now_ns().saturating_add(early))
            {
                std::hint::spin_loop();
                continue;
            }
            pool::flush_remote();
            let timed = cx.wake_ns != u64::MAX;
            let fds = std::mem::take(&mut cx.wake_fds);
            let pf = &mut pollfds;
            let wait = || wait_readable(core, t, &seen, due, timed, &fds, pf);
            let before = clock::cycles();
            let quiet = crate::core::quiet_nap(ts, &mut p.cx, wait);
            let waited = clock::cycles().wrapping_sub(before);
            fd_spin = adapt_fd_spin(fd_spin, waited, fd_spin_min, fd_wait_after);
            p.cx.wake_fds = fds;
            if !quiet {
                claimed = true;
                break;
            }
        } else if hinted && !busy_poll() {
            // Each task said when its next packet is due (a paced source:
            // RatedSource, RatedUnqueue...) or that only a handler write
            // gives it work (an inactive source): sleep until then instead
            // of polling, so CPU follows the load. Parked: a notifier, a
            // task added, a plan change, a handler write or the stop
            // unparks it. Just short of a time it napped for, it polls.
            let now = core.clock.now_ns();
            let until = nap_target(now, cx.wake_ns, napped).map(|u| u.min(next));
            let Some(until) = until.filter(|&u| u > now) else {
                std::hint::spin_loop();
                continue;
            };
            pool::flush_remote();
            let cap = if cx.wake_ns == u64::MAX {
                PARK_MAX
            } else {
                HINT_NAP_MAX
            };
            let nap = || nap_until(core, t, &seen, until, cap);
            if !crate::core::quiet_nap(ts, cx, nap) {
                claimed = true;
                break;
            }
            napped = true;
        } else if all_asleep() {
            if clock::cycles().wrapping_sub(idle_since) < park_after {
                std::hint::spin_loop();
            } else {
                pool::flush_remote();
                if !crate::core::quiet_nap(ts, cx, || park(core, t, &seen)) {
                    claimed = true;
                    break;
                }
            }
        } else if idle < 128 || clock::cycles().wrapping_sub(idle_since) < sleep_after {
            if idle == 128 {
                pool::flush_remote();
            }
            bump(&ts.yields, 1);
            if !crate::core::quiet_nap(ts, cx, std::thread::yield_now) {
                claimed = true;
                break;
            }
        } else {
            naps += 1;
            let mut sleep = Duration::from_micros((naps * 20).min(1000));
            if next != u64::MAX {
                let now = core.clock.now_ns();
                if next > now && core.clock.jump_to(next) {
                    // Click's `nowait` timewarp: no waiting for timers.
                    continue;
                }
                sleep = sleep.min(core.clock.real_wait(next.saturating_sub(now)));
            }
            // Parked, not asleep: a stop unparks it at once.
            if !sleep.is_zero()
                && !crate::core::quiet_nap(ts, cx, || std::thread::park_timeout(sleep))
            {
                claimed = true;
                break;
            }
        }
    }
    p.cx.flush_deferred();
    p.publish_counts(ts);
    ts.alive.store(false, Ordering::Release);
    // A worker claimed while napping was counted by the claimer.
    if !claimed && core.workers_done.fetch_add(1, Ordering::AcqRel) + 1 == core.nthreads {
        // Every worker has published what it staged: a hot swap's
        // hand-over runs here, without waiting for the threads to exit.
        crate::core::run_handover(core);
    }
    // In a hot swap the new router's workers are starting now: this
    // thread's exit (flushes, its pool's buffers freed) comes after them
    // on a shared CPU.
    std::thread::yield_now();
    pool::flush_remote();
    pool::publish_stats();
    ts.pool_id.store(pool::local_stats().id, Ordering::Release);
}

/// Simulated time (`--simtime`, see [`crate::time`]): one OS thread runs
/// every logical thread's worklist, a pass of thread 0, then of thread 1,
/// ..., then again, so a run is a fixed sequence of element calls and its
/// output is the same every time, whatever `-j` says. Each logical thread
/// keeps its own context, worklist, timers and per-thread state (a task
/// still sees its own thread index), and publishes what it staged at the
/// end of each of its passes, so between passes no logical thread holds
/// packets back (a plan change's barrier called from inside a pass need
/// not wait for the others, see `crossing::barrier`). When two rounds in a
/// row found no work on any thread, the clock moves to the earliest event
/// of all threads (a timer, or a task's [`Cx::wake_at`]), and the timers
/// due then run, every thread's, before any task. The adaptive
/// scheduler does not run (it would move tasks at moments measured in
/// real time).
fn sim_driver(core: &Core) {
    if core.pin {
        pin_to_cpu(0);
    }
    if core.domains.is_some() {
        pool::count_unwound(true);
    }
    let n = core.nthreads;
    let _worker = crate::crossing::WorkerMark::new(core, 0);
    let mut passes: Vec<Pass<'_>> = (0..n).map(|t| Pass::new(core, t)).collect();
    core.start_gate.wait();
    let epoch = core.sync_epoch.load(Ordering::Acquire);
    for p in passes.iter_mut() {
        let ts = &core.threads[p.t];
        p.epoch = epoch;
        ts.seen_epoch.store(epoch, Ordering::Release);
        ts.alive.store(true, Ordering::Release);
        *ts.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
    }
    core.workers_started.fetch_add(n, Ordering::AcqRel);
    core.started_ns
        .store(core.ns_since_epoch(Instant::now()) + 1, Ordering::Release);
    let mut idle_rounds: u32 = 0;
    'run: while core.running.load(Ordering::Relaxed) {
        let mut work = false;
        let mut next = u64::MAX;
        for p in passes.iter_mut() {
            if !core.running.load(Ordering::Relaxed) {
                break 'run;
            }
            let r = p.run(core);
            if p.cx.has_deferred() {
                p.cx.flush_deferred();
            }
            work |= r.work || r.timers;
            next = next.min(r.next).min(p.cx.wake_ns);
        }
        if work {
            idle_rounds = 0;
            continue;
        }
        idle_rounds = idle_rounds.saturating_add(1);
        if idle_rounds < 2 {
            continue;
        }
        if next != u64::MAX && next > core.clock.now_ns() {
            core.clock.advance_to(next);
            idle_rounds = 0;
            // At a new moment the timers due run before any task, as in
            // Click: a timer and a task's wake at the same instant see
            // the timer's effects first (a Script reading a count at
            // 10 s reads it before a task woken for 10 s adds to it).
            for p in passes.iter_mut() {
                if !core.running.load(Ordering::Relaxed) {
                    break 'run;
                }
                if p.shares.is_some() {
                    p.run_due_timers::<true>(core);
                } else {
                    p.run_due_timers::<false>(core);
                }
                if p.cx.has_deferred() {
                    p.cx.flush_deferred();
                }
            }
        } else if idle_rounds > 64 {
            // Nothing is due: only a handler from outside (a control
            // socket, the stop) can change that.
            std::thread::yield_now();
        }
    }
    for p in passes.iter_mut() {
        p.cx.flush_deferred();
        p.publish_counts(&core.threads[p.t]);
        core.threads[p.t].alive.store(false, Ordering::Release);
    }
    if core.workers_done.fetch_add(n, Ordering::AcqRel) + n == core.nthreads {
        crate::core::run_handover(core);
    }
    // In a hot swap the new router's workers are starting now: this
    // thread's exit (flushes, its pool's buffers freed) comes after them
    // on a shared CPU.
    std::thread::yield_now();
    pool::flush_remote();
    pool::publish_stats();
    let id = pool::local_stats().id;
    for ts in core.threads.iter() {
        ts.pool_id.store(id, Ordering::Release);
    }
}

/// The longest a worker parks without being woken (a safety net: every
/// event that gives a parked worker work unparks it).
const PARK_MAX: Duration = Duration::from_millis(100);

/// The longest a worker sleeps on its tasks' [`Cx::wake_at`] at a time (a
/// handler that changes a paced source's rate takes effect within it).
pub const HINT_NAP_MAX: Duration = Duration::from_millis(10);

/// How early a worker wakes for a [`Cx::wake_at`] time, then polls up to
/// it: a sleeping thread wakes some microseconds after its time (its
/// timer slack, [`WORKER_TIMER_SLACK_NS`], and the scheduler's latency),
/// and a paced packet should not be late. Each packet of a slow paced
/// source costs this much polling.
pub const HINT_NAP_EARLY: Duration = Duration::from_micros(10);

static BUSY_POLL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Busy-polling mode (`--busy-poll`), for the whole process: a worker
/// whose tasks all said when they will next have work
/// ([`Cx::wake_at`], a RatedSource between packets) keeps polling instead
/// of sleeping until then. The lowest latency, at a whole core per
/// worker whatever the load.
pub fn set_busy_poll(on: bool) {
    BUSY_POLL.store(on, Ordering::Relaxed);
}

/// Whether busy-polling mode is on (see [`set_busy_poll`]).
pub fn busy_poll() -> bool {
    BUSY_POLL.load(Ordering::Relaxed)
}

/// The timer slack of the workers (`prctl(PR_SET_TIMERSLACK)`, in ns):
/// Linux ends a sleep up to the thread's slack (50 µs by default) after
/// the time asked, to group wake-ups; a worker's sleeps end within this.
pub const WORKER_TIMER_SLACK_NS: u64 = 1_000;

/// The shortest nap for tasks' times after a pass with work
/// ([`nap_target`]): a paced source whose packets are due closer together
/// than this (10% of a loss-free rate of millions a second is a packet
/// every few microseconds) sends what fell due each time its worker
/// wakes, and keeps its average rate, instead of keeping the worker
/// polling. A sleep and wake-up costs a few microseconds of CPU.
pub const PACE_QUANTUM: Duration = Duration::from_micros(100);

/// When a worker whose tasks gave times ([`Cx::wake_at`], the earliest
/// `due_ns`; `u64::MAX`: only handler writes) wakes from a nap it starts
/// at `now_ns`; `None`: it polls (spins) instead. (A timer due sooner
/// ends the nap at its time.)
/// - With work since its last nap (`napped` false): until [`HINT_NAP_EARLY`]
///   before `due_ns`, but at least [`PACE_QUANTUM`] from now: a time
///   nearer than that is met late, with what falls due meanwhile.
/// - Woken for `due_ns` (`napped`): within [`HINT_NAP_EARLY`] of it, it
///   polls up to it; earlier (woken for something else), it naps again
///   until then.
/// - At or past `due_ns`: it polls (the task has work now).
pub fn nap_target(now_ns: u64, due_ns: u64, napped: bool) -> Option<u64> {
    let early = HINT_NAP_EARLY.as_nanos() as u64;
    let quantum = PACE_QUANTUM.as_nanos() as u64;
    if due_ns == u64::MAX {
        return Some(u64::MAX);
    }
    let gap = due_ns.saturating_sub(now_ns);
    if gap == 0 || (napped && gap <= early) {
        return None;
    }
    if napped {
        return Some(due_ns - early);
    }
    Some((due_ns - early.min(gap)).max(now_ns.saturating_add(quantum)))
}

/// What a worker saw in the pass after which it decided to wait: it waits
/// only if none of it changed since. Whatever changes it while the worker
/// waits unparks it.
#[derive(Clone, Copy)]
struct Seen<'a> {
    /// The sync epoch and worklist version of the pass.
    epoch: u64,
    version: u64,
    list: &'a [usize],
    /// How many of its tasks were asleep (a notifier's wake makes fewer).
    asleep: usize,
    /// A task waits for a handler write: the writes counted before the
    /// pass ([`Core::handler_written`]).
    writes: Option<u64>,
    /// The worker's count of task wakes read before the pass
    /// ([`crate::core::ThreadShared::wakes`]): a wake since (a push for a
    /// task that gave a time) keeps it from waiting.
    wakes: u64,
}

impl Seen<'_> {
    /// Marks worker `ts` parked (and waiting for a handler write, if a
    /// task does), fences, and says whether nothing changed since the pass
    /// (see [`crate::notifier`]'s Dekker pairs); [`Seen::unmark`] after.
    fn mark_still(&self, core: &Core, ts: &crate::core::ThreadShared) -> bool {
        if self.writes.is_some() {
            ts.until_written.store(true, Ordering::SeqCst);
        }
        ts.parked.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        core.running.load(Ordering::SeqCst)
            && core.sync_epoch.load(Ordering::SeqCst) == self.epoch
            && ts.worklist_version() == self.version
            && ts.wakes.load(Ordering::SeqCst) == self.wakes
            && self
                .writes
                .is_none_or(|w| core.handler_writes.load(Ordering::SeqCst) == w)
            && self
                .list
                .iter()
                .filter(|&&id| core.tasks[id].asleep.load(Ordering::SeqCst))
                .count()
                >= self.asleep
    }

    fn unmark(ts: &crate::core::ThreadShared) {
        ts.parked.store(false, Ordering::SeqCst);
        ts.until_written.store(false, Ordering::SeqCst);
    }
}

/// Sleeps worker `t` until `until_ns` (`u64::MAX`: none), at most `cap`,
/// unless what it saw (`seen`) changed since the pass; whatever changes it
/// unparks the worker while it sleeps.
#[cold]
fn nap_until(core: &Core, t: usize, seen: &Seen<'_>, until_ns: u64, cap: Duration) {
    let now = core.clock.now_ns();
    if until_ns <= now {
        return;
    }
    let ts = &core.threads[t];
    if seen.mark_still(core, ts) {
        bump(&ts.parks, 1);
        std::thread::park_timeout(Duration::from_nanos(until_ns - now).min(cap));
    }
    Seen::unmark(ts);
}

/// How long a worker whose tasks wait on descriptors
/// ([`Cx::wake_when_readable`]: a device's receive) must have found no
/// work before it waits in `poll(2)` on them. Shorter than
/// [`PARK_AFTER`]: each packet of a trickle is followed by this much
/// spinning, so at a few thousand packets a second it is the larger part
/// of the CPU used; a burst's packets come closer together than this.
pub const FD_WAIT_AFTER: Duration = Duration::from_micros(20);

/// The shortest spin before a wait on descriptors (see [`adapt_fd_spin`]).
pub const FD_SPIN_MIN: Duration = Duration::from_micros(2);

/// The spin before a worker's next wait on its tasks' descriptors, after
/// a wait of `waited` that followed a spin of `spin` (all in the same
/// unit, clock cycles in the worker), between `min` ([`FD_SPIN_MIN`]) and
/// `max` ([`FD_WAIT_AFTER`]). Work that came within `max` of the wait
/// would have been met by the whole spin, which costs less than a sleep
/// and a wake-up: the spin goes back to `max` (packets microseconds
/// apart, a busy device). A wait of twice `max` or more (a trickle,
/// packets a hundred microseconds apart or more) halves it, so that each
/// packet of a trickle costs a short spin rather than FD_WAIT_AFTER of
/// it; a wait between the two leaves it as it is, so that the odd gap in
/// busy traffic does not shorten it.
pub fn adapt_fd_spin(spin: u64, waited: u64, min: u64, max: u64) -> u64 {
    if waited < max {
        max
    } else if waited >= max.saturating_mul(2) {
        (spin / 2).clamp(min, max)
    } else {
        spin.clamp(min, max)
    }
}

/// Worker `t` waits in `poll(2)` on `fds` (its tasks' devices) and its
/// eventfd until one is readable, `due_ns` (less [`HINT_NAP_EARLY`];
/// `u64::MAX`: none), [`HINT_NAP_MAX`] if `timed` (a task gave a time)
/// else [`PARK_MAX`], unless a plan change, a worklist change, the stop
/// or a notifier's wake came since the pass (as [`nap_until`]); those
/// write the eventfd while it waits ([`crate::core::ThreadShared::unpark_now`]).
/// `pollfds` is the poll set's storage, kept between waits.
#[cold]
fn wait_readable(
    core: &Core,
    t: usize,
    seen: &Seen<'_>,
    due_ns: u64,
    timed: bool,
    fds: &[std::os::fd::RawFd],
    pollfds: &mut Vec<libc::pollfd>,
) {
    use std::os::fd::AsRawFd;
    let ts = &core.threads[t];
    let wakefd = match ts.wakefd.get() {
        Some(fd) => fd.as_raw_fd(),
        None => {
            let flags =
                rustix::event::EventfdFlags::NONBLOCK | rustix::event::EventfdFlags::CLOEXEC;
            match rustix::event::eventfd(0, flags) {
                Ok(fd) => ts.wakefd.get_or_init(|| fd).as_raw_fd(),
                // No eventfd (out of descriptors): nap as a paced source
                // does; the devices are polled after it.
                Err(_) => {
                    let until = due_ns.saturating_sub(HINT_NAP_EARLY.as_nanos() as u64);
                    return nap_until(core, t, seen, until, HINT_NAP_MAX);
                }
            }
        }
    };
    let now = core.clock.now_ns();
    let early = HINT_NAP_EARLY.as_nanos() as u64;
    let cap = if timed { HINT_NAP_MAX } else { PARK_MAX };
    let timeout = if due_ns == u64::MAX {
        cap
    } else if due_ns <= now.saturating_add(early) {
        return;
    } else {
        Duration::from_nanos(due_ns - now - early).min(cap)
    };
    pollfds.clear();
    let ev = libc::POLLIN | libc::POLLRDNORM;
    pollfds.extend(fds.iter().map(|&fd| libc::pollfd {
        fd,
        events: ev,
        revents: 0,
    }));
    pollfds.push(libc::pollfd {
        fd: wakefd,
        events: libc::POLLIN,
        revents: 0,
    });
    ts.polling.store(true, Ordering::SeqCst);
    if seen.mark_still(core, ts) {
        bump(&ts.parks, 1);
        bump(&ts.fd_waits, 1);
        let ts_ = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `pollfds` is a live array of `len` pollfd structs the
        // kernel writes `revents` into; the descriptors in it are the
        // eventfd this thread's state owns and those the running
        // elements gave in this pass, open while they live (the router's
        // elements outlive its workers). A closed one would only be
        // reported POLLNVAL.
        let n = unsafe {
            libc::ppoll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                &ts_,
                std::ptr::null(),
            )
        };
        if n > 0 {
            let (devs, wake) = pollfds.split_at(fds.len());
            if wake[0].revents != 0 {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(ts.wakefd.get().expect("made above"), &mut b);
            }
            if devs.iter().any(|p| p.revents & ev != 0) {
                bump(&ts.fd_wakes, 1);
            } else if devs.iter().any(|p| p.revents != 0) {
                // Only errors (a device gone down sets its sockets'
                // error): read and so clear each socket's pending error,
                // which would end every wait at once, and pause a little
                // in case it comes back.
                for p in devs.iter().filter(|p| p.revents & libc::POLLERR != 0) {
                    let mut err: libc::c_int = 0;
                    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                    // SAFETY: reads one int into `err` (of `len` bytes);
                    // the descriptor is open as above (ENOTSOCK if it is
                    // not a socket, ignored).
                    unsafe {
                        libc::getsockopt(
                            p.fd,
                            libc::SOL_SOCKET,
                            libc::SO_ERROR,
                            (&mut err as *mut libc::c_int).cast(),
                            &mut len,
                        )
                    };
                }
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
    }
    Seen::unmark(ts);
    ts.polling.store(false, Ordering::SeqCst);
}

/// Parks worker `t`, whose tasks are all asleep, until a wake, a task
/// added, a plan change, a timer or the stop (see [`crate::notifier`]).
#[cold]
fn park(core: &Core, t: usize, seen: &Seen<'_>) {
    let ts = &core.threads[t];
    // Only while every task is asleep.
    let all = Seen {
        asleep: seen.list.len(),
        writes: None,
        ..*seen
    };
    if all.mark_still(core, ts) {
        let mut timeout = PARK_MAX;
        let next = ts.timers.next_deadline();
        if next != u64::MAX {
            let now = core.clock.now_ns();
            if next > now && core.clock.jump_to(next) {
                // Click's `nowait` timewarp: no waiting for timers.
                timeout = Duration::ZERO;
            }
            timeout = timeout.min(core.clock.real_wait(next.saturating_sub(now)));
        }
        if !timeout.is_zero() {
            bump(&ts.parks, 1);
            std::thread::park_timeout(timeout);
        }
    }
    Seen::unmark(ts);
}

pub(crate) fn thread_report(core: &Core) -> String {
    let mut out = String::new();
    for (th, ts) in core.threads.iter().enumerate() {
        let polls = ts.polls.load(Ordering::Relaxed);
        let idle = ts.idle_polls.load(Ordering::Relaxed);
        let run = core.run_cycles.load(Ordering::Relaxed);
        let busy = ts.busy_cycles.load(Ordering::Relaxed);
        out.push_str(&format!(
            "thread {th}: {polls} polls, {idle} idle ({:.1}%), busy ~{:.0}% of the run\n",
            if polls > 0 {
                100.0 * idle as f64 / polls as f64
            } else {
                0.0
            },
            if run > 0 {
                (100.0 * busy as f64 / run as f64).min(100.0)
            } else {
                0.0
            }
        ));
        for t in core.tasks.iter() {
            if t.thread.load(Ordering::Relaxed) == th {
                let runs = t.runs.load(Ordering::Relaxed);
                let work = t.work.load(Ordering::Relaxed);
                let cyc = t.cycles.load(Ordering::Relaxed);
                out.push_str(&format!(
                    "  {} task {}: {} runs, {} with work, ~{:.0} cycles per run with work, {} migrations{}\n",
                    core.slots[t.elem].name,
                    t.index,
                    runs,
                    work,
                    cyc as f64 / work.max(1) as f64,
                    t.migrations.load(Ordering::Relaxed),
                    if t.pinned.is_some() { " (pinned)" } else { "" }
                ));
            }
        }
    }
    out
}

/// The profile of a run as data (see [`crate::Router::cost_data`]).
#[derive(Clone, Debug, Default)]
pub struct CostData {
    /// Cycle counter frequency, Hz.
    pub hz: f64,
    /// Per-element figures were sampled (`BuildOptions::profile`); without
    /// it `elements` is empty and task cycles are estimated from one run
    /// in [`SAMPLE_EVERY`] (runs with work only), task packets are 0.
    pub profiled: bool,
    /// Worker threads of the run.
    pub threads: usize,
    pub elements: Vec<ElementCost>,
    pub tasks: Vec<TaskCost>,
    /// Per thread: cycles its tasks were busy.
    pub thread_busy_cycles: Vec<u64>,
    /// Cycles the workers ran.
    pub run_cycles: u64,
}

/// One element: cycles spent in the element itself (the elements it
/// calls excluded), packets it received by push or gave by pull (a queue
/// counts each packet twice, in and out), and calls, summed over threads.
#[derive(Clone, Debug, Default)]
pub struct ElementCost {
    pub name: String,
    pub class: String,
    pub cycles: u64,
    pub packets: u64,
    pub calls: u64,
    /// Per thread: (cycles, packets).
    pub per_thread: Vec<(u64, u64)>,
    /// Input and output ports.
    pub ninputs: usize,
    pub noutputs: usize,
    /// Push input and pull output: a queue between tasks.
    pub is_queue: bool,
    /// Tasks whose push path (producers) or pull path (consumers) reach it.
    pub push_tasks: Vec<usize>,
    pub pull_tasks: Vec<usize>,
}

/// One task: total cycles of its runs (callees included) and the packets
/// of its first hop.
#[derive(Clone, Debug, Default)]
pub struct TaskCost {
    pub element: String,
    pub index: usize,
    pub thread: usize,
    pub pinned: Option<usize>,
    pub runs: u64,
    pub work: u64,
    pub cycles: u64,
    pub packets: u64,
}

pub(crate) fn cost_data(core: &Core) -> CostData {
    let plan = &core.plan;
    let elements = core
        .slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| core.profile.as_ref().map(|prof| (i, s, prof)))
        .map(|(i, s, prof)| {
            let per_thread: Vec<(u64, u64)> = prof
                .cells
                .iter()
                .map(|t| {
                    (
                        t[i].0.load(Ordering::Relaxed),
                        t[i].1.load(Ordering::Relaxed),
                    )
                })
                .collect();
            let calls = prof
                .cells
                .iter()
                .map(|t| t[i].2.load(Ordering::Relaxed))
                .sum();
            let on = |sets: &Vec<Vec<usize>>| -> Vec<usize> {
                (0..sets.len())
                    .filter(|&t| sets[t].binary_search(&i).is_ok() && core.tasks[t].elem != i)
                    .collect()
            };
            ElementCost {
                name: s.name.clone(),
                class: s.class.clone(),
                cycles: per_thread.iter().map(|x| x.0).sum(),
                packets: per_thread.iter().map(|x| x.1).sum(),
                calls,
                per_thread,
                ninputs: s.input_kinds.len(),
                noutputs: s.output_kinds.len(),
                is_queue: plan.queues.iter().any(|q| q.elem == i),
                push_tasks: on(&plan.push_sets),
                pull_tasks: on(&plan.pull_sets),
            }
        })
        .collect();
    let tasks = core
        .tasks
        .iter()
        .map(|t| TaskCost {
            element: core.slots[t.elem].name.clone(),
            index: t.index,
            thread: t.thread.load(Ordering::Relaxed),
            pinned: t.pinned,
            runs: t.runs.load(Ordering::Relaxed),
            work: t.work.load(Ordering::Relaxed),
            cycles: t.cycles.load(Ordering::Relaxed),
            packets: t.packets.load(Ordering::Relaxed),
        })
        .collect();
    CostData {
        hz: clock::cycles_per_second(),
        profiled: core.profile.is_some(),
        threads: core.nthreads,
        elements,
        tasks,
        thread_busy_cycles: core
            .threads
            .iter()
            .map(|t| t.busy_cycles.load(Ordering::Relaxed))
            .collect(),
        run_cycles: core.run_cycles.load(Ordering::Relaxed),
    }
}

/// Per element and per task cycles per packet and share of each thread's
/// busy time, in the spirit of SMP Click's Table 1 (receive, push path,
/// enqueue, pull, transmit are the elements of the path).
pub(crate) fn cost_report(core: &Core) -> String {
    let Some(prof) = &core.profile else {
        return "cost report: not enabled (build with profile: true / --report costs)\n".into();
    };
    let hz = clock::cycles_per_second();
    let mut out = String::new();
    let busy: u64 = core
        .threads
        .iter()
        .map(|t| t.busy_cycles.load(Ordering::Relaxed))
        .sum::<u64>()
        .max(1);
    out.push_str(&format!(
        "{:<28} {:<18} {:>12} {:>10} {:>8}\n",
        "element", "class", "packets", "cyc/pkt", "share"
    ));
    let queues: Vec<usize> = core.plan.queues.iter().map(|q| q.elem).collect();
    for (i, s) in core.slots.iter().enumerate() {
        let (c, p, pulled) = prof.total(i);
        let p = if queues.contains(&i) {
            // A queue is charged each packet going in and again coming
            // out: it counts the packets that went in.
            p - pulled
        } else if p == 0 {
            // A task's own element (a source, a puller) receives nothing
            // by push: it counts the packets its tasks moved.
            core.tasks
                .iter()
                .filter(|t| t.elem == i)
                .map(|t| t.packets.load(Ordering::Relaxed))
                .sum()
        } else {
            p
        };
        if c == 0 && p == 0 {
            continue;
        }
        let cpp = if p > 0 {
            format!("{:.1}", c as f64 / p as f64)
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "{:<28} {:<18} {:>12} {:>10} {:>7.1}%\n",
            s.name,
            s.class,
            p,
            cpp,
            100.0 * c as f64 / busy as f64
        ));
    }
    out.push_str(&format!(
        "\n{:<28} {:>6} {:>12} {:>12} {:>10} {:>8}\n",
        "task", "thread", "runs", "packets", "cyc/pkt", "share"
    ));
    // A task's share is of every thread's busy cycles, as an element's
    // is: a task that moved between threads ran on more than the one it
    // ends on (its cycles over that thread's alone passed 100%).
    for t in core.tasks.iter() {
        let th = t.thread.load(Ordering::Relaxed);
        let c = t.cycles.load(Ordering::Relaxed);
        let p = t.packets.load(Ordering::Relaxed);
        out.push_str(&format!(
            "{:<28} {:>6} {:>12} {:>12} {:>10} {:>7.1}%\n",
            format!("{}[{}]", core.slots[t.elem].name, t.index),
            th,
            t.runs.load(Ordering::Relaxed),
            p,
            if p > 0 {
                format!("{:.1}", c as f64 / p as f64)
            } else {
                "-".into()
            },
            100.0 * c as f64 / busy as f64
        ));
    }
    out.push_str(&format!(
        "(cycle counter {:.2} GHz; element cycles exclude the elements they call)\n",
        hz / 1e9
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::lpt_assign;

    fn per_thread(loads: &[u64], a: &[usize], n: usize) -> Vec<u64> {
        let mut v = vec![0; n];
        for (t, &th) in a.iter().enumerate() {
            v[th] += loads[t];
        }
        v
    }

    #[test]
    fn lpt_balances_independent_tasks() {
        let loads = [50, 40, 30, 20, 10, 10];
        let a = lpt_assign(&loads, &[None; 6], 2, &|_, _| false);
        let p = per_thread(&loads, &a, 2);
        assert_eq!(p.iter().sum::<u64>(), 160);
        assert_eq!(
            *p.iter().max().unwrap(),
            80,
            "LPT reaches the optimum here: {p:?}"
        );
        // Largest task first on the least loaded thread.
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn pinned_tasks_stay_and_count() {
        let loads = [100, 10, 10];
        let a = lpt_assign(&loads, &[Some(0), None, None], 2, &|_, _| false);
        assert_eq!(a[0], 0);
        assert_eq!(a[1], 1);
        assert_eq!(a[2], 1);
        // Pin numbers wrap modulo the thread count.
        let a = lpt_assign(&[5], &[Some(3)], 2, &|_, _| false);
        assert_eq!(a, vec![1]);
    }

    #[test]
    fn affine_groups_stay_together_when_they_fit() {
        // Tasks 0 and 1 are connected through a queue, as are 2 and 3.
        let affine = |a: usize, b: usize| (a / 2) == (b / 2) && a != b;
        let loads = [30, 20, 30, 20];
        let a = lpt_assign(&loads, &[None; 4], 2, &affine);
        assert_eq!(a[0], a[1], "push path and its pull path share a thread");
        assert_eq!(a[2], a[3]);
        assert_ne!(a[0], a[2]);
    }

    #[test]
    fn groups_slightly_over_a_fair_share_stay_together() {
        let affine = |a: usize, b: usize| (a / 2) == (b / 2) && a != b;
        // Group {0,1} carries 55% of the load: within the slack.
        let loads = [30, 25, 25, 20];
        let a = lpt_assign(&loads, &[None; 4], 2, &affine);
        assert_eq!(a[0], a[1]);
        assert_eq!(a[2], a[3]);
    }

    #[test]
    fn groups_too_heavy_for_one_thread_are_split() {
        // One pipeline carrying all the load: keeping it together would
        // leave the second thread idle.
        let affine = |a: usize, b: usize| a != b;
        let loads = [50, 50];
        let a = lpt_assign(&loads, &[None; 2], 2, &affine);
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn deterministic_for_equal_loads() {
        let loads = [10, 10, 10, 10];
        let a = lpt_assign(&loads, &[None; 4], 2, &|_, _| false);
        let b = lpt_assign(&loads, &[None; 4], 2, &|_, _| false);
        assert_eq!(a, b);
        assert_eq!(per_thread(&loads, &a, 2), vec![20, 20]);
    }

    /// The adaptive scheduler's decision ([`super::rebalance`]) and its
    /// state between looks ([`super::Balancer`]), without running a
    /// router: loads are given, not measured.
    mod balancer {
        use super::super::{rebalance, Balancer, SchedPolicy, HYSTERESIS};
        use crate::registry::{ClassSpec, Registry};
        use crate::{BuildOptions, Element, InitCx, Router};
        use std::sync::atomic::Ordering;

        fn moves(loads: &[u64], current: &[usize], nthreads: usize) -> Vec<(usize, usize)> {
            rebalance(loads, current, &vec![None; loads.len()], nthreads, &[])
        }

        #[test]
        fn a_balanced_load_moves_nothing() {
            assert_eq!(moves(&[10, 10, 10, 10], &[0, 1, 0, 1], 2), vec![]);
            // Unequal but as good as it gets: no reshuffle.
            assert_eq!(moves(&[12, 10, 10, 10], &[0, 1, 0, 1], 2), vec![]);
            assert_eq!(moves(&[0, 0, 0], &[0, 0, 0], 2), vec![], "idle");
        }

        #[test]
        fn the_excess_moves_off_the_busiest_thread() {
            // Everything on thread 0: the heaviest task stays, the next
            // two go to the idle thread (50 and 50).
            assert_eq!(
                moves(&[40, 30, 20, 10], &[0, 0, 0, 0], 2),
                vec![(1, 1), (2, 1)]
            );
            // The same tasks all on thread 1: the mirror image, not a
            // reshuffle onto thread 0's numbering.
            assert_eq!(
                moves(&[40, 30, 20, 10], &[1, 1, 1, 1], 2),
                vec![(1, 0), (2, 0)]
            );
        }

        #[test]
        fn only_the_tasks_that_must_move_do() {
            // Thread 0 carries three tasks of 10, threads 1 and 2 one each:
            // moving one task of thread 0 is enough (busiest 30 -> 20);
            // the others stay where they are.
            let m = moves(&[10, 10, 10, 10, 10], &[1, 2, 0, 0, 0], 3);
            assert_eq!(m, vec![(4, 1)], "one move, off thread 0");
        }

        #[test]
        fn a_cut_within_the_hysteresis_moves_nothing() {
            // Moving task 2 would cut the busiest thread from 58 to 50:
            // 13.8%, under HYSTERESIS.
            const { assert!(HYSTERESIS > 0.138 && HYSTERESIS < 0.161) };
            assert_eq!(moves(&[50, 40, 8], &[0, 1, 0], 2), vec![]);
            // From 62 to 52, 16.1%: it moves.
            assert_eq!(moves(&[50, 40, 12], &[0, 1, 0], 2), vec![(2, 1)]);
        }

        #[test]
        fn pinned_tasks_never_move() {
            let pinned = [Some(0), None, None];
            let m = rebalance(&[100, 60, 50], &[0, 0, 0], &pinned, 2, &[]);
            assert!(m.iter().all(|&(t, _)| t != 0), "{m:?}");
            assert_eq!(m, vec![(1, 1), (2, 1)]);
        }

        #[test]
        fn tasks_meeting_at_a_queue_move_together() {
            // 0 and 1 are a push path and its pull path: they go to the
            // idle thread as a pair, not one each.
            let m = rebalance(&[20, 20, 50, 10], &[0, 0, 0, 0], &[None; 4], 2, &[(0, 1)]);
            assert_eq!(m, vec![(0, 1), (1, 1), (3, 1)]);
            // A pair that stays: the others make room, where without the
            // pair the placement would split it.
            let m = rebalance(&[30, 25, 25, 10], &[0, 0, 0, 0], &[None; 4], 2, &[(0, 1)]);
            assert_eq!(m, vec![(2, 1), (3, 1)]);
            let m = rebalance(&[30, 25, 25, 10], &[0, 0, 0, 0], &[None; 4], 2, &[]);
            assert_eq!(m, vec![(1, 1), (2, 1)]);
        }

        /// A task with work always (its load is set by the test).
        struct Busy;
        impl Element for Busy {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
        }

        /// `conf` built on two unpinned workers under the adaptive policy.
        fn adaptive_router(reg: &Registry, conf: &str) -> Router {
            let opts = BuildOptions {
                threads: 2,
                pin: false,
                policy: SchedPolicy::Adaptive,
                ..BuildOptions::default()
            };
            let src = paraclick_lang::Source::new("<t>", conf);
            Router::build(&src, reg, &opts).unwrap_or_else(|d| panic!("{d:?}"))
        }

        #[test]
        fn each_look_weighs_the_cycles_since_the_last() {
            let mut reg = Registry::new();
            reg.register(ClassSpec::element("Busy", "0/0", "h", |_| Ok(Busy)));
            let r = adaptive_router(&reg, "a :: Busy; b :: Busy; c :: Busy; d :: Busy;");
            let core = &*r.core;
            let task = |n: &str| core.slots[core.names[n]].tasks[0];
            let add = |n: &str, c: u64| core.tasks[task(n)].cycles.fetch_add(c, Ordering::Relaxed);
            let threads = || {
                r.task_threads()
                    .into_iter()
                    .map(|(_, _, t)| t)
                    .collect::<Vec<_>>()
            };
            assert_eq!(threads(), vec![0, 1, 0, 1], "dealt round-robin");
            let mut b = Balancer::new(core);

            // a and c (thread 0) worked, b and d did not: c moves.
            add("a", 300);
            add("c", 100);
            assert_eq!(b.step(core), vec![(task("c"), 1)]);
            assert_eq!(threads(), vec![0, 1, 1, 1]);

            // Nothing ran since: nothing moves.
            assert_eq!(b.step(core), vec![]);

            // Now only b and c work, both on thread 1: one of them moves
            // to thread 0, though a's cycles in all are the most (loads are
            // the last interval's, not the totals).
            add("b", 100);
            add("c", 100);
            assert_eq!(b.step(core), vec![(task("c"), 0)]);
            assert_eq!(threads(), vec![0, 1, 0, 1]);
        }

        /// A task pinned to thread 0 (StaticThreadSched's way).
        struct PinnedBusy;
        impl Element for PinnedBusy {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                let me = ix.element_index();
                ix.prefer_thread(me, 0);
                Ok(())
            }
        }

        /// Worker 0 is reported waiting for most of its core (injected
        /// schedstat samples, one per quick look): within three samples its
        /// unpinned tasks go to worker 1 and its pinned one stays. While
        /// worker 0 runs little and its CPU is still busy with another
        /// process, nothing comes back; once its CPU is free, the work is
        /// shared again.
        #[test]
        fn a_starved_worker_hands_its_tasks_over_and_gets_them_back() {
            let mut reg = Registry::new();
            reg.register(ClassSpec::element("Busy", "0/0", "h", |_| Ok(Busy)));
            reg.register(ClassSpec::element("PinnedBusy", "0/0", "h", |_| {
                Ok(PinnedBusy)
            }));
            let opts = BuildOptions {
                threads: 2,
                pin: false,
                policy: SchedPolicy::Adaptive,
                ..BuildOptions::default()
            };
            let src = paraclick_lang::Source::new("<t>", "p :: PinnedBusy; a :: Busy; b :: Busy;");
            let r = Router::build(&src, &reg, &opts).unwrap_or_else(|d| panic!("{d:?}"));
            let core = &*r.core;
            let task = |n: &str| core.slots[core.names[n]].tasks[0];
            let threads = |names: &[&str]| {
                names
                    .iter()
                    .map(|n| core.tasks[task(n)].thread.load(Ordering::Relaxed))
                    .collect::<Vec<_>>()
            };
            let mut b = Balancer::new(core);
            // Each quick look (5 ms): the tasks' cycles, and each worker's
            // schedstat run and wait ms, cumulative.
            let ms = 1_000_000u64;
            let mut acc = [(0u64, 0u64); 2];
            let mut look = |b: &mut Balancer, per: [(u64, u64); 2], idle: [Option<f64>; 2]| {
                for n in ["a", "b"] {
                    core.tasks[task(n)].cycles.fetch_add(100, Ordering::Relaxed);
                }
                core.tasks[task("p")]
                    .cycles
                    .fetch_add(10, Ordering::Relaxed);
                for (a, (r, w)) in acc.iter_mut().zip(per) {
                    *a = (a.0 + r * ms, a.1 + w * ms);
                }
                b.set_idle(&idle);
                b.observe(&acc.map(Some));
                b.quick_decide(core)
            };
            let free = [Some(1.0), Some(1.0)];
            look(&mut b, [(5, 0), (5, 0)], free);
            // Both cores whole: the work is spread and stays.
            b.step(core);
            let start = threads(&["p", "a", "b"]);
            assert_eq!(start[0], 0, "pinned");
            assert!(
                start[1..].contains(&0) && start[1..].contains(&1),
                "{start:?}"
            );
            assert_eq!(look(&mut b, [(5, 0), (5, 0)], free), None);
            // Both workers wait (a machine busy all over): no quick move.
            assert_eq!(look(&mut b, [(1, 4), (1, 4)], free), None);
            // Worker 0 gets a fifth of its core (another process and more
            // share it).
            let mut samples = 0;
            while threads(&["a", "b"]) != [1, 1] {
                samples += 1;
                assert!(
                    samples <= 3,
                    "still on the starved worker: {:?}",
                    threads(&["p", "a", "b"])
                );
                look(&mut b, [(1, 4), (5, 0)], free);
            }
            assert_eq!(threads(&["p"]), [0], "a pinned task stays");
            // Worker 0 now runs only the pinned task (too little to be
            // measured), and its CPU is still busy: nothing comes back.
            let busy = [Some(crate::contention::idle_share(1.0)), Some(1.0)];
            for _ in 0..20 {
                look(&mut b, [(0, 0), (5, 0)], busy);
                b.step(core);
                assert_eq!(threads(&["p", "a", "b"]), [0, 1, 1]);
            }
            // Its CPU is free again: one of the two comes back.
            let mut samples = 0;
            while threads(&["a", "b"]) == [1, 1] {
                samples += 1;
                assert!(samples <= 3, "not given back");
                look(&mut b, [(0, 0), (5, 0)], free);
            }
            assert_eq!(threads(&["p"]), [0]);
        }

        /// A pinned worker that went idle after being starved keeps its
        /// share until its CPU has been read over a whole window; an unpinned
        /// one (its CPU unknown) drifts back to a whole core.
        #[test]
        fn an_idle_pinned_worker_keeps_its_share_until_its_cpu_is_read() {
            let mut reg = Registry::new();
            reg.register(ClassSpec::element("Busy", "0/0", "h", |_| Ok(Busy)));
            for pin in [true, false] {
                let opts = BuildOptions {
                    threads: 2,
                    pin,
                    policy: SchedPolicy::Adaptive,
                    ..BuildOptions::default()
                };
                let src = paraclick_lang::Source::new("<t>", "a :: Busy; b :: Busy;");
                let r = Router::build(&src, &reg, &opts).unwrap_or_else(|d| panic!("{d:?}"));
                let core = &*r.core;
                let mut b = Balancer::new(core);
                let ms = 1_000_000u64;
                let mut acc = [(0u64, 0u64); 2];
                let mut observe = |b: &mut Balancer, per: [(u64, u64); 2]| {
                    for (a, (r, w)) in acc.iter_mut().zip(per) {
                        *a = (a.0 + r * ms, a.1 + w * ms);
                    }
                    b.set_idle(&[None, None]);
                    b.observe(&acc.map(Some));
                };
                // Worker 0 gets a fifth of its core.
                for _ in 0..4 {
                    observe(&mut b, [(1, 4), (5, 0)]);
                }
                assert!(
                    b.starve.capacities()[0] < 0.5,
                    "{:?}",
                    b.starve.capacities()
                );
                // Then it runs nothing, and no reading of its CPU is in yet.
                for _ in 0..10 {
                    observe(&mut b, [(0, 0), (5, 0)]);
                }
                let cap = b.starve.capacities()[0];
                if pin && core.pin {
                    assert!(cap < 0.5, "pinned: drifted to {cap}");
                } else if !pin {
                    assert_eq!(cap, 1.0, "unpinned: stayed at {cap}");
                }
            }
        }

        /// A task that pushes into its output (the puller is a `Busy`
        /// with an input); a queue whose dequeued count the test sets.
        struct Pusher;
        impl Element for Pusher {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                ix.set_balance_interval(std::time::Duration::from_millis(10));
                Ok(())
            }
        }
        #[derive(Default)]
        struct CountedQ(std::sync::atomic::AtomicU64);
        impl Element for CountedQ {}
        impl crate::QueueElement for CountedQ {
            fn set_ring_modes(&self, _: &crate::ring::ModeSwitch, _: bool, _: bool, _: bool) {}
            fn dequeued(&self) -> Option<u64> {
                Some(self.0.load(Ordering::Relaxed))
            }
        }

        /// A split that lost prices the queue it crossed, and the balancer
        /// charges that price to the next split of it: after the back-off
        /// the same split on the same loads is not tried again, and on
        /// loads where it would pay even at that price, it is.
        ///
        /// The source and the puller meet at queue q, each with 100
        /// cycles a packet; split, the rate through q falls to one packet
        /// every 350 cycles (the price: 250 cycles a crossing packet).
        #[test]
        fn a_split_that_lost_is_priced_and_not_tried_again_at_a_loss() {
            use std::time::{Duration, Instant};
            let mut reg = Registry::new();
            reg.register(ClassSpec::element("Pusher", "0/1", "h", |_| Ok(Pusher)));
            reg.register(ClassSpec::element("Puller", "1/0", "l", |_| Ok(Busy)));
            reg.register(ClassSpec::queue("CountedQ", "1/1", "h/l", |_| {
                Ok(CountedQ::default())
            }));
            let r = adaptive_router(&reg, "a :: Pusher -> q :: CountedQ -> b :: Puller;");
            let core = &*r.core;
            let task = |n: &str| core.slots[core.names[n]].tasks[0];
            let (a, b) = (task("a"), task("b"));
            let threads = || {
                r.task_threads()
                    .into_iter()
                    .map(|(_, _, t)| t)
                    .collect::<Vec<_>>()
            };
            assert_eq!(threads(), vec![0, 0], "a and b start together");
            let q = r.element::<CountedQ>("q").expect("q");
            let hz = crate::clock::rough_cycles_per_second();
            // One window: each task's cycles a packet and the packets
            // through q.
            let feed = |cpp: [u64; 2], n: u64| {
                for (t, c) in [(a, cpp[0]), (b, cpp[1])] {
                    core.tasks[t].cycles.fetch_add(c * n, Ordering::Relaxed);
                }
                q.0.fetch_add(n, Ordering::Relaxed);
            };
            let n = 10_000_000;
            let mut bal = Balancer::new(core);
            // Past the trials' share of the run (a 4 ms trial at the
            // 10 ms interval needs 20 ms).
            std::thread::sleep(Duration::from_millis(60));
            feed([100, 100], n);
            let moved = bal.step(core);
            assert_eq!(moved.len(), 1, "the split is tried: {moved:?}");
            let undo: Vec<(usize, usize)> = moved.iter().map(|&(t, _)| (t, 0)).collect();
            assert_ne!(threads(), vec![0, 0]);
            // Settling: not measured.
            std::thread::sleep(Duration::from_millis(1));
            feed([100, 100], 1000);
            assert_eq!(bal.step(core), vec![]);
            // Measured: one packet every 350 cycles.
            let t = Instant::now();
            std::thread::sleep(Duration::from_millis(3));
            let k = (t.elapsed().as_secs_f64() * hz / 350.0) as u64;
            feed([100, 100], k);
            assert_eq!(bal.step(core), undo, "the split lost and is undone");
            assert_eq!(threads(), vec![0, 0]);
            // The back-off, and the run long enough for another trial.
            for _ in 0..2 * super::super::super::contention::BACKOFF_FIRST {
                assert_eq!(bal.step(core), vec![]);
            }
            std::thread::sleep(Duration::from_millis(60));
            feed([100, 100], n);
            assert_eq!(
                bal.step(core),
                vec![],
                "100 + 250 a packet split, against 200 on one thread"
            );
            feed([10_000, 10_000], n);
            assert_eq!(
                bal.step(core).len(),
                1,
                "10,000 + 250 a packet split, against 20,000 on one thread"
            );
        }
    }

    /// The spin before a wait on descriptors follows the gaps in traffic.
    #[test]
    fn fd_spins_follow_the_gaps() {
        use super::adapt_fd_spin;
        let (min, max) = (2_000, 20_000);
        // A trickle: waits of twice the longest spin or more halve it,
        // down to the shortest.
        let mut s = max;
        for _ in 0..3 {
            s = adapt_fd_spin(s, 1_000_000, min, max);
        }
        assert_eq!(s, 2_500);
        assert_eq!(adapt_fd_spin(s, 2 * max, min, max), min);
        assert_eq!(adapt_fd_spin(min, 1_000_000, min, max), min);
        // Work soon after the wait began: the whole spin again.
        assert_eq!(adapt_fd_spin(min, 5_000, min, max), max);
        assert_eq!(adapt_fd_spin(max, 0, min, max), max);
        // A gap between the two (busy traffic's odd pause) keeps it.
        assert_eq!(adapt_fd_spin(8_000, max, min, max), 8_000);
        assert_eq!(adapt_fd_spin(max, 2 * max - 1, min, max), max);
    }

    /// Where a worker whose tasks gave times naps to.
    #[test]
    fn nap_targets() {
        use super::{nap_target, HINT_NAP_EARLY, PACE_QUANTUM};
        let early = HINT_NAP_EARLY.as_nanos() as u64;
        let q = PACE_QUANTUM.as_nanos() as u64;
        let now = 1_000_000_000u64;
        // A slow source: until just before its time, and once woken
        // there it polls up to it.
        assert_eq!(
            nap_target(now, now + 1_000_000, false),
            Some(now + 1_000_000 - early)
        );
        assert_eq!(nap_target(now, now + early, true), None);
        assert_eq!(nap_target(now, now + early / 2, true), None);
        // Woken early for something else: naps again until then.
        assert_eq!(
            nap_target(now, now + 3 * early, true),
            Some(now + 2 * early)
        );
        // A fast source (packets 3 µs apart): after the work of a wake, a
        // whole quantum, not a nap or a poll per packet.
        assert_eq!(nap_target(now, now + 3_000, false), Some(now + q));
        assert_eq!(nap_target(now, now + q / 2, false), Some(now + q));
        assert_eq!(nap_target(now, now + q + early, false), Some(now + q));
        assert_eq!(
            nap_target(now, now + q + 2 * early, false),
            Some(now + q + early)
        );
        // Due now or past: the task has work, no nap.
        assert_eq!(nap_target(now, now, false), None);
        assert_eq!(nap_target(now, now - 5, false), None);
        assert_eq!(nap_target(now, now - 5, true), None);
        // No time, only handler writes: until woken.
        assert_eq!(nap_target(now, u64::MAX, false), Some(u64::MAX));
        assert_eq!(nap_target(now, u64::MAX, true), Some(u64::MAX));
    }

    mod worker_loop {
        use crate::element::{Element, Handler};
        use crate::registry::{ClassSpec, Registry};
        use crate::{BuildOptions, Cx, InitCx, Router};
        use std::sync::atomic::{AtomicU64, Ordering};

        /// A task that always has work.
        struct Busy;
        impl Element for Busy {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, _cx: &mut Cx<'_>, _task: usize) -> bool {
                true
            }
        }

        /// A task with work for its first `work` runs and none after (it
        /// never sleeps), counting its runs itself.
        struct Countdown {
            calls: AtomicU64,
            work: u64,
        }
        impl Countdown {
            fn new(work: u64) -> Countdown {
                Countdown {
                    calls: AtomicU64::new(0),
                    work,
                }
            }
        }
        impl Element for Countdown {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, _cx: &mut Cx<'_>, _task: usize) -> bool {
                self.calls.fetch_add(1, Ordering::Relaxed) < self.work
            }
        }

        /// A task with work only when some is pending; otherwise it goes
        /// to sleep (as a puller of an empty queue does).
        #[derive(Default)]
        struct Sleeper {
            pending: AtomicU64,
            done: AtomicU64,
        }
        impl Element for Sleeper {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
                if self.pending.load(Ordering::Acquire) > 0 {
                    self.pending.fetch_sub(1, Ordering::AcqRel);
                    self.done.fetch_add(1, Ordering::AcqRel);
                    return true;
                }
                let t = cx.core.slots[cx.current].tasks[0];
                cx.core.tasks[t].asleep.store(true, Ordering::SeqCst);
                false
            }
        }

        /// A device's receive in small: a task reading a socket, with work
        /// when bytes are there; otherwise it says that the socket's
        /// becoming readable will give it some.
        struct Reader {
            rx: std::os::unix::net::UnixStream,
            tx: std::os::unix::net::UnixStream,
            got: AtomicU64,
        }
        impl Element for Reader {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
                use std::io::Read;
                use std::os::fd::AsFd;
                let mut b = [0u8; 64];
                match (&self.rx).read(&mut b) {
                    Ok(n) if n > 0 => {
                        self.got.fetch_add(n as u64, Ordering::AcqRel);
                        true
                    }
                    _ => {
                        cx.wake_when_readable(self.rx.as_fd());
                        false
                    }
                }
            }
        }

        /// An inactive source in small: work only after its `on` handler
        /// is written; until then it says that only a write gives it some.
        #[derive(Default)]
        struct Dormant {
            on: std::sync::atomic::AtomicBool,
            done: AtomicU64,
        }
        impl Element for Dormant {
            const HANDLERS: &'static [Handler<Self>] = &[Handler::write("on", |e, _, _| {
                e.on.store(true, Ordering::SeqCst);
                Ok(())
            })];
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
                if self.on.swap(false, Ordering::SeqCst) {
                    self.done.fetch_add(1, Ordering::AcqRel);
                    return true;
                }
                cx.wake_when_written();
                false
            }
        }

        fn router(conf: &str) -> Router {
            let mut reg = Registry::new();
            reg.register(ClassSpec::element("Dormant", "0/0", "h", |_| {
                Ok(Dormant::default())
            }));
            crate::testing::register(&mut reg);
            reg.register(ClassSpec::element("Reader", "0/0", "h", |_| {
                let (rx, tx) = std::os::unix::net::UnixStream::pair().map_err(|e| e.to_string())?;
                rx.set_nonblocking(true).map_err(|e| e.to_string())?;
                Ok(Reader {
                    rx,
                    tx,
                    got: AtomicU64::new(0),
                })
            }));
            reg.register(ClassSpec::element("Busy", "0/0", "h", |_| Ok(Busy)));
            reg.register(ClassSpec::element("Slow", "0/0", "h", |_| Ok(Slow)));
            reg.register(ClassSpec::element("Holder", "0/0", "h", |_| {
                Ok(Idle { hold: true })
            }));
            reg.register(ClassSpec::element("Idler", "0/0", "h", |_| {
                Ok(Idle { hold: false })
            }));
            reg.register(ClassSpec::element("Sleeper", "0/0", "h", |_| {
                Ok(Sleeper::default())
            }));
            reg.register(ClassSpec::element("Countdown", "0/0", "h", |_| {
                Ok(Countdown::new(1000))
            }));
            reg.register(ClassSpec::element("Counted", "0/0", "h", |_| {
                Ok(Countdown::new(u64::MAX))
            }));
            let src = paraclick_lang::Source::new("<t>", conf);
            let opts = BuildOptions {
                threads: 1,
                pin: false,
                policy: super::super::SchedPolicy::Static,
                ..BuildOptions::default()
            };
            Router::build(&src, &reg, &opts).unwrap_or_else(|d| panic!("{d:?}"))
        }

        /// A task that never has work but is not asleep (a crossing
        /// queue's puller); with `hold`, it says each time that it keeps
        /// off on purpose for the next millisecond ([`Cx::holding_until`]).
        struct Idle {
            hold: bool,
        }
        impl Element for Idle {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
                if self.hold {
                    let ms = crate::clock::rough_cycles_per_second() as u64 / 1000;
                    cx.holding_until(crate::clock::cycles() + ms);
                }
                false
            }
        }

        /// A worker whose task holds off on purpose spins through the
        /// hold rather than yielding its core, as it does after some idle
        /// passes otherwise: a crossing queue's consumer holding off its
        /// ring made its worker call `sched_yield` about 14,000 times in
        /// a split pipeline run of 4 million packets (a quarter of a
        /// second of system time).
        #[test]
        fn a_worker_spins_through_a_hold_and_yields_otherwise() {
            for hold in [false, true] {
                let r = router(if hold { "i :: Holder;" } else { "i :: Idler;" });
                std::thread::scope(|sc| {
                    sc.spawn(|| {
                        let _stop = StopOnDrop(&r);
                        wait_for("some idle passes", &|| r.task_runs("i").unwrap() > 10_000);
                    });
                    r.run();
                });
                if hold {
                    assert_eq!(r.yields(), 0, "a holding worker yielded");
                } else {
                    assert!(r.yields() > 0, "an idle worker never yielded");
                }
            }
        }

        /// A task that always has work and takes a while doing it.
        struct Slow;
        impl Element for Slow {
            fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
                ix.add_task();
                Ok(())
            }
            fn run_task(&self, _cx: &mut Cx<'_>, _task: usize) -> bool {
                let mut x = 1u64;
                for i in 0..200 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
                x != 0
            }
        }

        /// One run in SAMPLE_EVERY of a thread's is timed, whichever task
        /// it falls on: two tasks taking turns both get samples (a period
        /// that divided their turns would time only one of them), and the
        /// slower one is charged more.
        #[test]
        fn both_tasks_taking_turns_are_timed_and_the_slow_one_weighs_more() {
            let r = router("a :: Busy; s :: Slow;");
            let runs = |r: &Router| ["a", "s"].map(|n| r.task_runs(n).unwrap());
            crate::testing::run_until(&r, |r| {
                runs(r).iter().sum::<u64>() >= 40 * super::super::SAMPLE_EVERY
            });
            let cycles = |n: &str| {
                let e = r.core.names[n];
                let t = r.core.slots[e].tasks[0];
                r.core.tasks[t].cycles.load(Ordering::Relaxed)
            };
            let (a, s) = (cycles("a"), cycles("s"));
            assert!(a > 0 && s > a, "cycles: Busy {a}, Slow {s}");
        }

        /// A worker counts its tasks' runs in its own memory and adds them
        /// to the shared counts now and then (`Pass::publish_counts`):
        /// once it has stopped they are exact. A task's runs are the
        /// passes that did not skip it, its runs with work those less
        /// the runs without.
        #[test]
        fn task_counts_are_exact_once_the_worker_stops() {
            let r = router("c :: Countdown; s :: Sleeper;");
            let work = |n: &str| {
                let t = r.core.slots[r.core.names[n]].tasks[0];
                r.core.tasks[t].work.load(Ordering::Relaxed)
            };
            crate::testing::run_until(&r, |r| r.task_runs("c").unwrap() > 5000);
            let polls = r.core.threads[0].polls.load(Ordering::Relaxed);
            let idle = r.core.threads[0].idle_polls.load(Ordering::Relaxed);
            let (c, s) = (r.task_runs("c").unwrap(), r.task_runs("s").unwrap());
            // Countdown is never skipped: a run every pass.
            assert_eq!(c, polls, "Countdown's runs against the passes");
            assert_eq!(work("c"), 1000, "Countdown's runs with work");
            // A pass has work only while Countdown has.
            assert_eq!(polls - idle, 1000, "passes with work");
            // Sleeper ran once, went to sleep, and was skipped after.
            assert_eq!((s, work("s")), (1, 0), "Sleeper's runs, with work");
            // Stopped while busy: the runs of its last passes are added
            // as it stops.
            let r = router("b :: Counted;");
            crate::testing::run_until(&r, |r| r.task_runs("b").unwrap() > 5000);
            let e = r.core.slots[r.core.names["b"]].element.as_any();
            let calls = e.downcast_ref::<Countdown>().expect("a Countdown");
            let calls = calls.calls.load(Ordering::Relaxed);
            assert_eq!(r.task_runs("b"), Some(calls), "a busy task's runs");
        }

        #[test]
        fn busy_tasks_on_one_thread_all_run_and_share_it() {
            let r = router("a :: Busy; b :: Busy; c :: Busy;");
            let runs = |r: &Router| ["a", "b", "c"].map(|n| r.task_runs(n).unwrap());
            crate::testing::run_until(&r, |r| runs(r).iter().sum::<u64>() >= 300_000);
            let n = runs(&r);
            let (lo, hi) = (*n.iter().min().unwrap(), *n.iter().max().unwrap());
            // Round-robin: equal to a run; the bound is generous.
            assert!(lo > 0 && hi <= 2 * lo, "runs {n:?}");
        }

        /// A wake for a task that is awake (it gave a time: a puller
        /// behind a Shaper) landing as its worker decides to nap: the
        /// worker read its count of wakes before the pass, the wake comes
        /// before it marks itself parked (so the waker sees no `parked`
        /// and unparks nothing), and the worker must then not nap, or the
        /// pushed packet waits up to `HINT_NAP_MAX`. Played in that order
        /// on one thread.
        #[test]
        fn a_wake_between_the_pass_and_the_nap_keeps_the_worker_awake() {
            let r = router("d :: Dormant;");
            let core = &*r.core;
            let t = 0;
            assert!(!core.tasks[t].asleep.load(Ordering::SeqCst));
            let th = core.tasks[t].thread.load(Ordering::SeqCst) % core.nthreads;
            let ts = &core.threads[th];
            core.running.store(true, Ordering::SeqCst);
            let seen = |wakes| super::super::Seen {
                epoch: core.sync_epoch.load(Ordering::SeqCst),
                version: ts.worklist_version(),
                list: &[],
                asleep: 0,
                writes: None,
                wakes,
            };
            let before = ts.wakes.load(Ordering::SeqCst);
            // Nothing since the pass: it may nap.
            assert!(seen(before).mark_still(core, ts));
            super::super::Seen::unmark(ts);
            crate::notifier::wake_task(core, t);
            let still = seen(before).mark_still(core, ts);
            super::super::Seen::unmark(ts);
            core.running.store(false, Ordering::SeqCst);
            assert!(!still, "the worker napped through the wake");
        }

        /// Stops the router when dropped, however the test thread ends.
        struct StopOnDrop<'a>(&'a Router);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.stop();
            }
        }

        /// Yields until `f` holds; panics, naming `what`, after the
        /// watchdog.
        fn wait_for(what: &str, f: &dyn Fn() -> bool) {
            let t0 = std::time::Instant::now();
            while !f() {
                if t0.elapsed() > crate::testing::WATCHDOG {
                    panic!("never: {what}");
                }
                std::thread::yield_now();
            }
        }

        /// The worker of a task waiting on a descriptor blocks in poll(2)
        /// on it (not polling the task), and data arriving wakes it: the
        /// wait ends because the descriptor became readable, not at its
        /// timeout. (A waiting worker's timeout is 100 ms: a test thread
        /// held off the CPU that long after seeing the wait start could
        /// write just as it ends, so two of three rounds must see it.)
        #[test]
        fn a_worker_waits_on_its_tasks_descriptors_and_data_wakes_it() {
            let r = router("x :: Reader;");
            let x = r.element::<Reader>("x").unwrap();
            let mut by_readiness = 0;
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    let _stop = StopOnDrop(&r);
                    let wait = wait_for;
                    for round in 1..=3u64 {
                        let (w0, _) = r.fd_waits();
                        wait("a wait on the socket", &|| r.fd_waits().0 > w0);
                        let k0 = r.fd_waits().1;
                        std::io::Write::write_all(&mut &x.tx, &[0]).unwrap();
                        wait("the byte read", &|| x.got.load(Ordering::Acquire) == round);
                        if r.fd_waits().1 > k0 {
                            by_readiness += 1;
                        }
                    }
                });
                r.run();
            });
            assert_eq!(x.got.load(Ordering::Acquire), 3);
            assert!(
                by_readiness >= 2,
                "{by_readiness} of 3 waits ended by the socket's readiness"
            );
        }

        /// A worker whose only task waits for a handler write (an inactive
        /// source) sleeps, not polls, and the write wakes it. Over 100 ms
        /// of wall time its task runs a few times (the pass after each
        /// wait, which ends by itself after 100 ms at the latest): polling
        /// and napping as before ran it hundreds of times. (A write that
        /// comes as a wait ends by itself finds the worker awake, so two of
        /// three rounds must see the write wake it.)
        #[test]
        fn a_worker_waiting_for_a_handler_write_sleeps_and_the_write_wakes_it() {
            let r = router("d :: Dormant;");
            let d = r.element::<Dormant>("d").unwrap();
            let mut by_write = 0;
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    let _stop = StopOnDrop(&r);
                    let wait = wait_for;
                    for round in 1..=3u64 {
                        wait("a wait for a write", &|| r.write_waits().0);
                        let runs = r.task_runs("d").unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        let ran = r.task_runs("d").unwrap() - runs;
                        assert!(ran < 30, "the task ran {ran} times in 100 ms");
                        // The 100 ms may have ended as the worker's own
                        // wait did: write once it waits again.
                        wait("a wait for a write", &|| r.write_waits().0);
                        let k0 = r.write_waits().1;
                        r.write_handler("d.on", "").unwrap();
                        wait("the write's work", &|| {
                            d.done.load(Ordering::Acquire) == round
                        });
                        if r.write_waits().1 > k0 {
                            by_write += 1;
                        }
                    }
                });
                r.run();
            });
            assert_eq!(d.done.load(Ordering::Acquire), 3);
            assert!(by_write >= 2, "{by_write} of 3 waits ended by the write");
        }

        #[test]
        fn a_worker_parks_while_its_tasks_sleep_and_a_wake_runs_them() {
            let r = router("s :: Sleeper;");
            let core = &*r.core;
            let s = r.element::<Sleeper>("s").unwrap();
            let t = core.slots[core.names["s"]].tasks[0];
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    // Stops the router however this thread ends.
                    struct Stop<'a>(&'a Router);
                    impl Drop for Stop<'_> {
                        fn drop(&mut self) {
                            self.0.stop();
                        }
                    }
                    let _stop = Stop(&r);
                    let wait = |what: &str, f: &dyn Fn() -> bool| {
                        let t0 = std::time::Instant::now();
                        while !f() {
                            if t0.elapsed() > crate::testing::WATCHDOG {
                                r.stop();
                                panic!("never: {what}");
                            }
                            std::thread::yield_now();
                        }
                    };
                    for round in 1..=3u64 {
                        let p0 = r.parks();
                        wait("parked", &|| r.parks() > p0);
                        // Parked, and asleep: its task does not run.
                        let runs = r.task_runs("s").unwrap();
                        wait("parked again", &|| r.parks() > p0 + 1);
                        assert_eq!(r.task_runs("s").unwrap(), runs, "an asleep task ran");
                        s.pending.fetch_add(1, Ordering::AcqRel);
                        crate::notifier::wake_task(core, t);
                        wait("woken", &|| s.done.load(Ordering::Acquire) == round);
                    }
                });
                r.run();
            });
            assert_eq!(s.done.load(Ordering::Acquire), 3);
        }
    }
}
