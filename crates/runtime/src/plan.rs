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

use crate::core::Core;
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
    /// The tasks whose push path reaches the queue, and those whose pull
    /// path does (in task order).
    pub push_tasks: Vec<usize>,
    pub pull_tasks: Vec<usize>,
}

/// Marks of the elements a walk has seen, reused from walk to walk: a
/// walk costs what it visits, not the size of the graph (a configuration
/// of many small pipelines made the plan quadratic in its size).
struct Marks {
    mark: Vec<u32>,
    walk: u32,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            mark: vec![0; n],
            walk: 0,
        }
    }

    /// The elements reachable from `start` along `next`, sorted.
    fn closure(&mut self, start: usize, next: &dyn Fn(usize) -> Vec<usize>) -> Vec<usize> {
        self.walk += 1;
        let w = self.walk;
        let mut stack = vec![start];
        let mut out = Vec::new();
        self.mark[start] = w;
        while let Some(e) = stack.pop() {
            out.push(e);
            for x in next(e) {
                if self.mark[x] != w {
                    self.mark[x] = w;
                    stack.push(x);
                }
            }
        }
        out.sort_unstable();
        out
    }
}

/// Whether an element on the consumer side of queue-like element `q`
/// reads packet data: what pulls from it (transitively) and what those
/// elements push to, up to the next queue-like element.
pub(crate) fn consumer_reads_data(core: &Core, q: usize) -> bool {
    let n = core.slots.len();
    // Who pulls from each element.
    let mut pullers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in 0..n {
        for p in core.ports[e].inputs.iter() {
            if p.element().is_some() {
                pullers[p.elem as usize].push(e);
            }
        }
    }
    let is_queue = |e: usize| {
        let s = &core.slots[e];
        s.input_kinds.contains(&paraclick_lang::PortKind::Push)
            && s.output_kinds.contains(&paraclick_lang::PortKind::Pull)
    };
    let mut seen = vec![false; n];
    seen[q] = true;
    let mut stack = pullers[q].clone();
    while let Some(e) = stack.pop() {
        if std::mem::replace(&mut seen[e], true) {
            continue;
        }
        if core.slots[e].reads_data {
            return true;
        }
        if is_queue(e) {
            continue;
        }
        stack.extend(pullers[e].iter().copied());
        stack.extend(
            core.ports[e]
                .outputs
                .iter()
                .filter(|p| p.element().is_some())
                .map(|p| p.elem as usize),
        );
    }
    false
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
        let mut marks = Marks::new(n);
        for (t, task) in core.tasks.iter().enumerate() {
            let ps = marks.closure(task.elem, &push_next);
            let ls = marks.closure(task.elem, &pull_next);
            for &e in ps.iter().chain(ls.iter()) {
                // tasks come in order: t is last if there already
                if plan.drivers[e].last() != Some(&t) {
                    plan.drivers[e].push(t);
                }
            }
            plan.push_sets.push(ps);
            plan.pull_sets.push(ls);
        }
        // queue index of each queue element
        let mut queue_of = vec![usize::MAX; n];
        for (e, q) in queue_of.iter_mut().enumerate() {
            let s = &core.slots[e];
            let has_push_in = s.input_kinds.contains(&paraclick_lang::PortKind::Push);
            let has_pull_out = s.output_kinds.contains(&paraclick_lang::PortKind::Pull);
            if has_push_in && has_pull_out {
                *q = plan.queues.len();
                plan.queues.push(Queue {
                    elem: e,
                    up: marks.closure(e, &|x| push_prev[x].clone()),
                    down: marks.closure(e, &|x| pull_prev[x].clone()),
                    push_tasks: Vec::new(),
                    pull_tasks: Vec::new(),
                });
            }
        }
        for t in 0..plan.push_sets.len() {
            for &e in &plan.push_sets[t] {
                if let Some(q) = plan.queues.get_mut(queue_of[e]) {
                    q.push_tasks.push(t);
                }
            }
            for &e in &plan.pull_sets[t] {
                if let Some(q) = plan.queues.get_mut(queue_of[e]) {
                    q.pull_tasks.push(t);
                }
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
        for &t in &q.push_tasks {
            if core.tasks[t].elem != q.elem {
                prod.insert(core.tasks[t].thread.load(Ordering::Relaxed));
            }
        }
        for &t in &q.pull_tasks {
            if core.tasks[t].elem != q.elem {
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

    /// The groups [`Plan::affine`] makes of the tasks `free` says may
    /// move, as pairs to join (union-find): through each queue, its free
    /// producer tasks and free consumer tasks when it has both. The same
    /// groups as asking `affine` of every pair, in time linear in the
    /// queues' task lists rather than quadratic in the tasks.
    pub fn affine_pairs(&self, free: &dyn Fn(usize) -> bool) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for q in &self.queues {
            let p: Vec<usize> = q.push_tasks.iter().copied().filter(|&t| free(t)).collect();
            let c: Vec<usize> = q.pull_tasks.iter().copied().filter(|&t| free(t)).collect();
            if let (Some(&first), false) = (p.first(), c.is_empty()) {
                pairs.extend(p.iter().chain(&c).map(|&t| (first, t)));
            }
        }
        pairs
    }

    /// Task pairs connected through a queue (one's push path reaches the
    /// queue, the other's pull path does): the affinity the adaptive
    /// scheduler tries to keep on one thread.
    #[cfg(test)]
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

#[cfg(test)]
mod tests {
    use crate::element::Element;
    use crate::registry::{ClassSpec, Registry};
    use crate::{BuildOptions, Cx, InitCx, Router};
    use paraclick_packet::Batch;

    /// A push source with a task (never sends).
    struct Src;
    impl Element for Src {
        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            ix.add_task();
            Ok(())
        }
    }

    /// Queue-like: a push input and a pull output.
    struct Q;
    impl Element for Q {
        fn push(&self, _cx: &mut Cx<'_>, _port: usize, _batch: Batch) {}
        fn pull(&self, _cx: &mut Cx<'_>, _port: usize, _max: usize) -> Option<Batch> {
            None
        }
    }

    /// A puller with a task (Unqueue-like).
    struct Pull;
    impl Element for Pull {
        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            ix.add_task();
            Ok(())
        }
    }

    fn groups(n: usize, pairs: &[(usize, usize)]) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                x = p[x];
            }
            x
        }
        for &(a, b) in pairs {
            let (ra, rb) = (find(&mut p, a), find(&mut p, b));
            p[ra] = rb;
        }
        // each task's group as its smallest member
        let roots: Vec<usize> = (0..n).map(|t| find(&mut p, t)).collect();
        (0..n)
            .map(|t| (0..n).find(|&u| roots[u] == roots[t]).unwrap_or(t))
            .collect()
    }

    #[test]
    fn affine_pairs_make_the_groups_pairwise_affinity_makes() {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::element("Src", "0/1", "h", |_| Ok(Src)));
        reg.register(ClassSpec::element("Q", "1/1", "h/l", |_| Ok(Q)));
        reg.register(ClassSpec::element("Pull", "1/1", "l/h", |_| Ok(Pull)));
        // two sources into one queue, one puller; a lone pipeline; a
        // queue fed by a source and drained by two pullers through a
        // second queue; a source whose queue nobody pulls.
        let conf = "a :: Src -> q1 :: Q; b :: Src -> q1; q1 -> p1 :: Pull -> TestSink;
            c :: Src -> q2 :: Q -> p2 :: Pull -> TestSink;
            d :: Src -> q3 :: Q -> p3 :: Pull -> q4 :: Q -> p4 :: Pull -> TestSink;
            e :: Src -> TestSink;";
        let src = paraclick_lang::Source::new("<t>", conf);
        let opts = BuildOptions {
            pin: false,
            ..BuildOptions::default()
        };
        let r = Router::build(&src, &reg, &opts).unwrap();
        let plan = &r.core.plan;
        let n = r.core.tasks.len();
        assert_eq!(n, 9);
        for pinned in [vec![false; n], (0..n).map(|t| t % 3 == 0).collect()] {
            let mut brute = Vec::new();
            for a in 0..n {
                for b in a + 1..n {
                    if !pinned[a] && !pinned[b] && plan.affine(a, b) {
                        brute.push((a, b));
                    }
                }
            }
            let fast = plan.affine_pairs(&|t| !pinned[t]);
            assert_eq!(groups(n, &fast), groups(n, &brute), "pinned {pinned:?}");
        }
        // and the groups are not trivial
        let all = groups(n, &plan.affine_pairs(&|_| true));
        assert!(all.iter().enumerate().any(|(t, &g)| g != t));
    }

    /// Two sources a and b into queue q, pulled by p; every placement of
    /// the three tasks on two threads: q is multi-producer when a and b
    /// are on different threads, never multi-consumer (one puller), and
    /// crossing unless all three share a thread. The same modes reach
    /// the queue's slot once the move is done.
    #[test]
    fn ring_modes_follow_every_placement() {
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::element("Src", "0/1", "h", |_| Ok(Src)));
        reg.register(ClassSpec::element("Q", "1/1", "h/l", |_| Ok(Q)));
        reg.register(ClassSpec::element("Pull", "1/1", "l/h", |_| Ok(Pull)));
        let conf = "a :: Src -> q :: Q -> p :: Pull -> TestSink; b :: Src -> q;
            c :: Src -> TestSink;";
        let src = paraclick_lang::Source::new("<t>", conf);
        let opts = BuildOptions {
            threads: 2,
            pin: false,
            ..BuildOptions::default()
        };
        let r = Router::build(&src, &reg, &opts).unwrap();
        let core = &*r.core;
        let q = core.names["q"];
        let queue = core.plan.queues.iter().find(|x| x.elem == q).unwrap();
        assert_eq!(core.plan.queues.len(), 1, "only q is queue-like");
        let task = |n: &str| core.slots[core.names[n]].tasks[0];
        assert_eq!(queue.push_tasks, vec![task("a"), task("b")]);
        assert_eq!(queue.pull_tasks, vec![task("p")]);
        for placement in 0..8 {
            let (ta, tb, tp) = (placement & 1, (placement >> 1) & 1, (placement >> 2) & 1);
            for (n, t) in [("a", ta), ("b", tb), ("p", tp)] {
                r.move_task(n, 0, t).unwrap();
            }
            let want = (q, ta != tb, false, !(ta == tb && tb == tp));
            assert_eq!(
                core.plan.ring_modes(core),
                vec![want],
                "a on {ta}, b on {tb}, p on {tp}"
            );
            assert_eq!(core.slots[q].ring_modes(), (want.1, want.2));
            assert_eq!(core.slots[q].crossing(), want.3);
        }
        // A lone source's pipeline drives only its own elements.
        let c = core.names["c"];
        assert_eq!(core.plan.drivers[c], vec![task("c")]);
        assert_eq!(core.plan.drivers[q], vec![task("a"), task("p"), task("b")]);
    }
}
