//! Hot reconfiguration: Click's `-R` and `hotconfig` handler.
//!
//! Writing a configuration to `hotconfig` ([`Hot::hotconfig`]) builds and
//! initializes a new router while the old one runs; any error leaves the
//! old one running and goes back to the writer, located. Otherwise the
//! swap is short:
//!
//! 1. the old router's workers are told to stop; each finishes its pass,
//!    publishes what it staged and exits (a safe point: no packet is between
//!    two elements);
//! 2. every element of the new router whose name and class match an old
//!    element takes that element's state ([`crate::Element::take_state`]:
//!    queued packets, counts, tables), and the router's per-element drop
//!    counts carry over, so conservation holds across swaps;
//! 3. the new router's workers start.
//!
//! The pause, from the stop request until every new worker is in its loop,
//! is measured for each swap ([`Hot::pauses`], the `hotswaps` handler, and
//! a line on stderr). The old router is dropped after the new one runs, off
//! the data path.

use crate::control::{Backend, CsError, RouterHandle};
use crate::ring::{Consumer, Producer};
use crate::router::{BuildOptions, Core, Router};
use crate::Registry;
use paraclick_lang::{render, Source, SourceSet};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What [`crate::Element::take_state`] can do: pop the old element's
/// rings, push into the new element's, count packets it had to drop.
///
/// Both routers are quiet while it exists: the old one's workers have
/// exited and the new one's have not started (the swap holds both routers'
/// run locks), so the capabilities it hands out cannot race with a worker.
pub struct StateCx<'a> {
    pub(crate) new: &'a Core,
    pub(crate) new_elem: usize,
    pub(crate) old_threads: usize,
    pub(crate) same_config: bool,
}

impl StateCx<'_> {
    /// The right to pop the old element's rings.
    pub fn consumer(&self) -> Consumer<'_> {
        Consumer::new()
    }

    /// The right to push into this (the new) element's rings.
    pub fn producer(&self) -> Producer<'_> {
        Producer::new()
    }

    /// Counts `n` packets the element could not take (they did not fit) as
    /// its drops.
    pub fn count_drops(&self, n: u64) {
        self.new.handler_drops[self.new_elem].fetch_add(n, Ordering::Relaxed);
    }

    /// Whether the element's configuration string is the same in both
    /// routers. A table the configuration states (routes) is the old
    /// element's, changes made through handlers included, only if so;
    /// otherwise the new configuration says what the table is.
    pub fn same_config(&self) -> bool {
        self.same_config
    }

    /// Worker threads of the new router.
    pub fn nthreads(&self) -> usize {
        self.new.nthreads
    }

    /// Worker threads of the old router.
    pub fn old_nthreads(&self) -> usize {
        self.old_threads
    }
}

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
            let d: u64 = oc
                .threads
                .iter()
                .map(|t| t.drops[j].load(Ordering::Relaxed))
                .sum::<u64>()
                + oc.handler_drops[j].load(Ordering::Relaxed);
            nc.handler_drops[i].fetch_add(d, Ordering::Relaxed);
        }
        for (j, s) in oc.slots.iter().enumerate() {
            if !matched[j] {
                rep.discarded += s.element.queued() as u64;
            }
        }
        Ok(rep)
    }

    /// When every worker of the current run had entered its loop.
    pub fn workers_started_at(&self) -> Option<Instant> {
        let ns = self.core.started_ns.load(Ordering::Acquire);
        (ns != 0).then(|| self.core.clock.epoch() + Duration::from_nanos(ns - 1))
    }
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

/// What the running thread tells the writer once the state moved: the
/// old router, when its run returned, when the state was taken, and what
/// was taken.
type Swapped = (Arc<Router>, Instant, Instant, TakeReport);

struct Pending {
    router: Router,
    done: mpsc::Sender<Result<Swapped, String>>,
}

#[derive(Default)]
struct State {
    pending: Option<Pending>,
    exiting: bool,
}

/// A router that can be replaced while it runs. [`Hot::run`] runs the
/// current router, and the next after each swap, until one stops for good.
pub struct Hot {
    current: Mutex<Arc<Router>>,
    reg: Arc<Registry>,
    opts: BuildOptions,
    allow: bool,
    state: Mutex<State>,
    /// One hot swap at a time.
    swapping: Mutex<()>,
    timings: Mutex<Vec<SwapTiming>>,
    discarded: std::sync::atomic::AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hot {
    /// `allow`: whether `hotconfig` is writable (`-R`); `opts` build every
    /// new configuration.
    pub fn new(router: Router, reg: Arc<Registry>, opts: BuildOptions, allow: bool) -> Arc<Hot> {
        Arc::new(Hot {
            current: Mutex::new(Arc::new(router)),
            reg,
            opts,
            allow,
            state: Mutex::new(State::default()),
            swapping: Mutex::new(()),
            timings: Mutex::new(Vec::new()),
            discarded: Default::default(),
        })
    }

    /// The router running now.
    pub fn current(&self) -> Arc<Router> {
        lock(&self.current).clone()
    }

    /// Stops the current router for good.
    pub fn stop(&self) {
        lock(&self.state).exiting = true;
        self.current().stop();
    }

    /// Runs routers until one stops without a swap pending.
    pub fn run(&self) {
        loop {
            let old = self.current();
            old.run();
            let t_ret = Instant::now();
            let mut st = lock(&self.state);
            let p = match st.pending.take() {
                Some(p) if !st.exiting => p,
                p => {
                    if let Some(p) = p {
                        let _ = p.done.send(Err("the router was stopped".into()));
                    }
                    st.exiting = true;
                    return;
                }
            };
            drop(st);
            let r = p.router.take_state_from(&old);
            let t_taken = Instant::now();
            match r {
                Ok(rep) => {
                    let new = Arc::new(p.router);
                    *lock(&self.current) = new.clone();
                    let _ = p.done.send(Ok((old, t_ret, t_taken, rep)));
                    // Loop: runs `new`.
                }
                Err(e) => {
                    // Cannot happen with the locks as used; keep the old
                    // router and say why.
                    let _ = p.done.send(Err(e));
                    // The old router stopped: it cannot be restarted.
                    lock(&self.state).exiting = true;
                    return;
                }
            }
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
        let _one = lock(&self.swapping);
        let src = Source {
            name: "hotconfig".into(),
            text: text.to_string(),
        };
        let new = Router::build(&src, &self.reg, &self.opts).map_err(|d| {
            let mut set = SourceSet::default();
            set.add(src.clone());
            CsError::new(520, render(&d, &set).trim_end().to_string())
        })?;
        let (tx, rx) = mpsc::channel();
        let old = self.current();
        let t0 = {
            let mut st = lock(&self.state);
            if st.exiting {
                return Err(CsError::new(540, "hotconfig: the router has stopped"));
            }
            st.pending = Some(Pending {
                router: new,
                done: tx,
            });
            Instant::now()
        };
        old.stop();
        drop(old);
        let (old, t_ret, t_taken, rep) = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => return Err(CsError::new(520, format!("hotconfig: {e}"))),
            Err(_) => return Err(CsError::new(520, "hotconfig: the swap did not happen")),
        };
        let new = self.current();
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
            stop: t_ret.saturating_duration_since(t0),
            take: t_taken.saturating_duration_since(t_ret),
            pause: started.saturating_duration_since(t0),
        };
        lock(&self.timings).push(timing);
        self.discarded.fetch_add(rep.discarded, Ordering::Relaxed);
        eprintln!(
            "paraclick: hotconfig: swapped in {} us (stop {} us, state {} us; {} elements took state{})",
            timing.pause.as_micros(),
            timing.stop.as_micros(),
            timing.take.as_micros(),
            rep.taken,
            if rep.discarded > 0 {
                format!(", {} packets of removed elements discarded", rep.discarded)
            } else {
                String::new()
            }
        );
        // The old router goes away here, off the data path.
        drop(old);
        Ok(timing)
    }

    /// The `hotswaps` handler: swaps done, then the pause of each in
    /// microseconds (one a line, oldest first), and packets discarded with
    /// removed elements.
    fn swaps_report(&self) -> String {
        let t = self.timings();
        let mut s = format!(
            "swaps {}\ndiscarded {}\n",
            t.len(),
            self.discarded.load(Ordering::Relaxed)
        );
        for x in &t {
            s.push_str(&format!(
                "pause_us {:.1} stop_us {:.1} state_us {:.1}\n",
                x.pause.as_secs_f64() * 1e6,
                x.stop.as_secs_f64() * 1e6,
                x.take.as_secs_f64() * 1e6
            ));
        }
        s
    }

    /// The control plane's view: the current router's handlers, plus
    /// `hotconfig` (write) and `hotswaps` (read).
    pub fn backend(self: &Arc<Self>) -> Arc<dyn Backend> {
        Arc::new(HotBackend(self.clone()))
    }
}

struct HotBackend(Arc<Hot>);

impl HotBackend {
    fn handle(&self) -> RouterHandle {
        self.0.current().handle()
    }
}

impl Backend for HotBackend {
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, CsError> {
        match h {
            "hotconfig" => Err(CsError::new(530, "Handler 'hotconfig' is write-only")),
            "hotswaps" => Ok(self.0.swaps_report()),
            _ => self.handle().read(h, param),
        }
    }

    fn write(&self, h: &str, value: &str) -> Result<(), CsError> {
        match h {
            "hotconfig" => self.0.hotconfig(value).map(|_| ()),
            "hotswaps" => Err(CsError::new(530, "Handler 'hotswaps' is read-only")),
            "stop" => {
                lock(&self.0.state).exiting = true;
                self.handle().write(h, value)
            }
            _ => self.handle().write(h, value),
        }
    }

    fn check(&self, h: &str, write: bool) -> Result<(), CsError> {
        match (h, write) {
            ("hotconfig", true) if self.0.allow => Ok(()),
            ("hotconfig", true) => Err(CsError::new(
                530,
                "hotconfig: hot reconfiguration not enabled (run with -R)",
            )),
            ("hotconfig", false) => Err(CsError::new(530, "Handler 'hotconfig' is write-only")),
            ("hotswaps", false) => Ok(()),
            ("hotswaps", true) => Err(CsError::new(530, "Handler 'hotswaps' is read-only")),
            _ => self.handle().check(h, write),
        }
    }

    fn stop(&self) {
        self.0.stop();
    }
}
