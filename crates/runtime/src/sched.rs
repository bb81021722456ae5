//! Worker threads, their worklists, and task assignment.
//!
//! Each worker thread runs its own worklist of tasks round-robin, checks its
//! timers, and backs off (spin, yield, then short sleeps bounded by the next
//! timer) when a whole pass over its tasks found no work. There is no shared
//! worklist: the only cross-thread traffic is the queues between elements.

use crate::cx::Cx;
use crate::router::Core;
use paraclick_packet::pool;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How tasks without a `StaticThreadSched` pin are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// Round-robin placement at start, then rebalanced from measured cost.
    Adaptive,
    /// Round-robin placement, never moved.
    Static,
}

impl std::str::FromStr for SchedPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "adaptive" => Ok(SchedPolicy::Adaptive),
            "static" | "round-robin" | "rr" => Ok(SchedPolicy::Static),
            _ => Err(format!(
                "unknown scheduling policy '{s}' (adaptive, static, round-robin)"
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
}

impl Task {
    pub fn new(elem: usize, index: usize) -> Task {
        Task {
            elem,
            index,
            thread: AtomicUsize::new(0),
            pinned: None,
            runs: AtomicU64::new(0),
            work: AtomicU64::new(0),
        }
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
        *core.threads[th]
            .worklist
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = l;
        core.threads[th]
            .worklist_version
            .fetch_add(1, Ordering::Release);
    }
}

pub(crate) fn run_workers(core: &Core) {
    if !core.running.load(Ordering::Acquire) {
        return;
    }
    std::thread::scope(|s| {
        for t in 0..core.nthreads {
            std::thread::Builder::new()
                .name(format!("paraclick-{t}"))
                .spawn_scoped(s, move || worker(core, t))
                .expect("spawn worker thread");
        }
    });
}

fn pin_to_cpu(t: usize) {
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let cpu = t % ncpu;
    // SAFETY: `set` is a plain bit set on the stack, initialized by
    // CPU_ZERO before use; sched_setaffinity only reads it. Pid 0 means the
    // calling thread. Failure (e.g. a restricted cpuset) is harmless.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn worker(core: &Core, t: usize) {
    if core.pin {
        pin_to_cpu(t);
    }
    let ts = &core.threads[t];
    let mut cx = Cx::new(core, t);
    let mut list: Vec<usize> = Vec::new();
    let mut version = u64::MAX;
    let mut due = Vec::new();
    let mut idle: u32 = 0;
    let mut iter: u64 = 0;
    while core.running.load(Ordering::Relaxed) {
        let v = ts.worklist_version.load(Ordering::Acquire);
        if v != version {
            list.clone_from(&ts.worklist.lock().unwrap_or_else(|e| e.into_inner()));
            version = v;
        }
        let mut work = false;
        for &id in &list {
            let task = &core.tasks[id];
            cx.current = task.elem;
            let did = core.slots[task.elem].element.run_task(&mut cx, task.index);
            bump(&task.runs, 1);
            if did {
                bump(&task.work, 1);
                work = true;
            }
        }
        iter = iter.wrapping_add(1);
        let mut next = u64::MAX;
        if !work || iter & 15 == 0 {
            next = ts.timers.next_deadline();
            if next != u64::MAX {
                let now = core.ns_since_epoch(Instant::now());
                if now >= next {
                    ts.timers.take_due(now, &mut due);
                    for e in due.drain(..) {
                        let gen = core.slots[e.elem].timer_gens[e.timer].load(Ordering::Acquire);
                        if gen != e.gen {
                            continue; // rescheduled or unscheduled since
                        }
                        cx.current = e.elem;
                        core.slots[e.elem].element.run_timer(&mut cx, e.timer);
                    }
                    work = true;
                    next = ts.timers.next_deadline();
                }
            }
        }
        bump(&ts.polls, 1);
        if work {
            idle = 0;
            continue;
        }
        bump(&ts.idle_polls, 1);
        idle = idle.saturating_add(1);
        if idle < 64 {
            std::hint::spin_loop();
        } else if idle < 128 {
            std::thread::yield_now();
        } else {
            if idle == 128 {
                pool::flush_remote();
            }
            let mut sleep = Duration::from_micros(((idle - 127) as u64 * 20).min(1000));
            if next != u64::MAX {
                let now = core.ns_since_epoch(Instant::now());
                sleep = sleep.min(Duration::from_nanos(next.saturating_sub(now)));
            }
            if !sleep.is_zero() {
                std::thread::sleep(sleep);
            }
        }
    }
    pool::flush_remote();
    pool::publish_stats();
    ts.pool_id.store(pool::local_stats().id, Ordering::Release);
}

pub(crate) fn thread_report(core: &Core) -> String {
    let mut out = String::new();
    for (th, ts) in core.threads.iter().enumerate() {
        let polls = ts.polls.load(Ordering::Relaxed);
        let idle = ts.idle_polls.load(Ordering::Relaxed);
        out.push_str(&format!(
            "thread {th}: {polls} polls, {idle} idle ({:.1}%)\n",
            if polls > 0 {
                100.0 * idle as f64 / polls as f64
            } else {
                0.0
            }
        ));
        for t in core.tasks.iter() {
            if t.thread.load(Ordering::Relaxed) == th {
                let runs = t.runs.load(Ordering::Relaxed);
                let work = t.work.load(Ordering::Relaxed);
                out.push_str(&format!(
                    "  {} task {}: {} runs, {} with work{}\n",
                    core.slots[t.elem].name,
                    t.index,
                    runs,
                    work,
                    if t.pinned.is_some() { " (pinned)" } else { "" }
                ));
            }
        }
    }
    out
}
