//! The thread plan: which tasks drive which elements, on which threads an
//! element's timers run, and from that, which queues are touched by one
//! producer thread and one consumer thread (so their rings can drop the
//! compare-and-swap), re-derived whenever the scheduler moves a task.
//!
//! A task *drives* the elements its packets reach: along push connections
//! downstream of the task's element (its push path) and along pull
//! connections upstream of it (its pull path). An element's timers run on
//! the thread of the tasks that drive it when they all share one thread,
//! otherwise (or with no driver) on thread 0; so a timer that emits packets
//! runs where the element's other packets are handled.
//!
//! A queue's producer threads are the threads of the tasks whose push path
//! reaches it plus the timer threads of every element upstream of it on
//! push connections; its consumers likewise along pull connections
//! downstream. One of each: single-producer / single-consumer ring. Not all
//! one thread: the queue is crossing, and its producers stage packets to
//! publish them in batches (see the Queue element).

use crate::router::Core;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

/// Derived once at build time from the graph.
#[derive(Default)]
pub(crate) struct Plan {
    /// Per element: the tasks that drive it (including its own).
    pub drivers: Vec<Vec<usize>>,
    /// Per task: the elements on its push path and pull path.
    pub push_sets: Vec<Vec<usize>>,
    pub pull_sets: Vec<Vec<usize>>,
    /// Queue-like elements (a push input and a pull output) and, for each,
    /// the elements upstream on push connections and downstream on pull
    /// connections (the queue itself included in both).
    pub queues: Vec<Queue>,
}

pub(crate) struct Queue {
    pub elem: usize,
    pub up: Vec<usize>,
    pub down: Vec<usize>,
}

fn closure(start: usize, next: &dyn Fn(usize) -> Vec<usize>, n: usize) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut stack = vec![start];
    let mut out = Vec::new();
    seen[start] = true;
    while let Some(e) = stack.pop() {
        out.push(e);
        for x in next(e) {
            if !seen[x] {
                seen[x] = true;
                stack.push(x);
            }
        }
    }
    out.sort_unstable();
    out
}

impl Plan {
    pub fn build(core: &Core) -> Plan {
        let n = core.slots.len();
        // Push edges (from an output to the element it pushes into) and
        // pull edges (from an input to the element it pulls from).
        let push_next = |e: usize| -> Vec<usize> {
            core.ports[e]
                .outputs
                .iter()
                .filter(|p| p.element().is_some())
                .map(|p| p.elem as usize)
                .collect()
        };
        let pull_next = |e: usize| -> Vec<usize> {
            core.ports[e]
                .inputs
                .iter()
                .filter(|p| p.element().is_some())
                .map(|p| p.elem as usize)
                .collect()
        };
        let mut push_prev: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut pull_prev: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in 0..n {
            for x in push_next(e) {
                push_prev[x].push(e);
            }
            for x in pull_next(e) {
                pull_prev[x].push(e);
            }
        }
        let mut plan = Plan {
            drivers: vec![Vec::new(); n],
            ..Plan::default()
        };
        for (t, task) in core.tasks.iter().enumerate() {
            let ps = closure(task.elem, &push_next, n);
            let ls = closure(task.elem, &pull_next, n);
            for &e in ps.iter().chain(ls.iter()) {
                if !plan.drivers[e].contains(&t) {
                    plan.drivers[e].push(t);
                }
            }
            plan.push_sets.push(ps);
            plan.pull_sets.push(ls);
        }
        for e in 0..n {
            let s = &core.slots[e];
            let has_push_in = s.input_kinds.contains(&paraclick_lang::PortKind::Push);
            let has_pull_out = s.output_kinds.contains(&paraclick_lang::PortKind::Pull);
            if has_push_in && has_pull_out {
                plan.queues.push(Queue {
                    elem: e,
                    up: closure(e, &|x| push_prev[x].clone(), n),
                    down: closure(e, &|x| pull_prev[x].clone(), n),
                });
            }
        }
        plan
    }

    /// The thread element `e`'s timers run on, under the current assignment.
    pub fn timer_thread(&self, core: &Core, e: usize) -> usize {
        let mut th = None;
        for &t in self.drivers.get(e).map(|v| v.as_slice()).unwrap_or(&[]) {
            let x = core.tasks[t].thread.load(Ordering::Relaxed);
            match th {
                None => th = Some(x),
                Some(y) if y == x => {}
                Some(_) => return 0,
            }
        }
        th.unwrap_or(0) % core.nthreads
    }

    /// Producer and consumer threads of queue `q` under the current
    /// assignment.
    pub fn queue_threads(&self, core: &Core, q: &Queue) -> (BTreeSet<usize>, BTreeSet<usize>) {
        let mut prod = BTreeSet::new();
        let mut cons = BTreeSet::new();
        for (t, ps) in self.push_sets.iter().enumerate() {
            if ps.binary_search(&q.elem).is_ok() && core.tasks[t].elem != q.elem {
                prod.insert(core.tasks[t].thread.load(Ordering::Relaxed));
            }
        }
        for (t, ls) in self.pull_sets.iter().enumerate() {
            if ls.binary_search(&q.elem).is_ok() && core.tasks[t].elem != q.elem {
                cons.insert(core.tasks[t].thread.load(Ordering::Relaxed));
            }
        }
        for &e in &q.up {
            if e != q.elem {
                prod.insert(self.timer_thread(core, e));
            }
        }
        for &e in &q.down {
            if e != q.elem {
                cons.insert(self.timer_thread(core, e));
            }
        }
        (prod, cons)
    }

    /// Ring modes for every queue under the current assignment:
    /// (element, multi-producer, multi-consumer, crossing), where crossing
    /// means a packet may be pushed on one thread and pulled on another.
    pub fn ring_modes(&self, core: &Core) -> Vec<(usize, bool, bool, bool)> {
        self.queues
            .iter()
            .map(|q| {
                let (p, c) = self.queue_threads(core, q);
                let crossing = p.union(&c).nth(1).is_some();
                (q.elem, p.len() > 1, c.len() > 1, crossing)
            })
            .collect()
    }

    /// Task pairs connected through a queue (one's push path reaches the
    /// queue, the other's pull path does): the affinity the adaptive
    /// scheduler tries to keep on one thread.
    pub fn affine(&self, a: usize, b: usize) -> bool {
        let meets = |x: &[usize], y: &[usize]| {
            self.queues
                .iter()
                .any(|q| x.binary_search(&q.elem).is_ok() && y.binary_search(&q.elem).is_ok())
        };
        meets(&self.push_sets[a], &self.pull_sets[b])
            || meets(&self.push_sets[b], &self.pull_sets[a])
    }
}
