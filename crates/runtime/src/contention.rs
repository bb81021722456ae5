//! The adaptive scheduler's two checks beyond load balance (issue 43):
//!
//! - **A worker not getting its core.** Each look, the balancer reads
//!   every worker's `/proc/self/task/TID/schedstat` (nanoseconds run,
//!   nanoseconds waited runnable on a run queue). A worker that waited a
//!   share of its runnable time got only the rest of its core: another
//!   process keeps that core busy. [`Starvation`] turns the samples into
//!   each worker's *share* of its core (smoothed; a worker that asked for
//!   little CPU drifts back to a whole core), and the placement
//!   ([`place_units`]) weighs each thread's load by it, so work moves off a
//!   starved worker, and back once its core is free (or the other worker
//!   starves instead).
//! - **A split that lost.** A move that makes a queue cross between
//!   threads (tasks that meet at a queue put on different threads) pays a
//!   crossing per packet; on this kind of machine that can cost more than
//!   the second core gives (qos-bench: 4.6 Mpps split, 6.9 on one thread).
//!   So such a move is a *trial*: the packets through the router's queues
//!   are counted over a look before it and over a look after it (one look
//!   left to settle), and unless the rate after is [`KEEP_MARGIN`] higher
//!   the move is undone ([`keep_trial`]) and not tried again for a back-off
//!   that doubles each time ([`BACKOFF_FIRST`] to [`BACKOFF_MAX`] looks).
//!   A trial's looks are short ([`TRIAL_SETTLE`] and [`TRIAL_MEASURE`] of a
//!   look), and one starts only while the time spent in trials, this one
//!   included, stays within [`TRIAL_SHARE`] of the run so far: a split
//!   that loses costs a short run at most that share of its time at the
//!   split's rate, so more threads are not slower on a short run either.
//!
//! The functions here are pure (samples in, decisions out) so tests feed
//! them synthetic figures; `sched::Balancer` reads the machine.

/// Below this share of its core a worker counts as starved at all (above
/// it, the difference is noise: a worker woken from a park waits a few
/// microseconds on an idle machine too).
pub const STARVED_BELOW: f64 = 0.85;

/// Runnable time a worker must have had in a look (ns) for its share to
/// be measured; with less, it asked for little CPU and its share drifts
/// back towards a whole core.
pub const MIN_RUNNABLE_NS: u64 = 2_000_000;

/// A split (a move that makes a queue cross threads) is kept only if the
/// packets through the queues per second rose by this fraction.
pub const KEEP_MARGIN: f64 = 0.05;

/// Looks to wait, after a split was undone, before another is tried; the
/// wait doubles with every split undone in a row, up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: u32 = 20;
pub const BACKOFF_MAX: u32 = 320;

/// The look after a split, left to settle (not measured), as a fraction
/// of the balancer's interval (5 ms of the default 50).
pub const TRIAL_SETTLE: f64 = 0.1;

/// The look that measures a split, as a fraction of the interval (15 ms
/// of the default 50).
pub const TRIAL_MEASURE: f64 = 0.3;

/// A split is tried only if the time spent in trials so far and in this
/// one stays within this share of the run so far (at the default
/// interval, the first trial comes at the look at 100 ms).
pub const TRIAL_SHARE: f64 = 0.2;

/// A split that makes a queue cross that no trial has priced yet must
/// cut the busiest thread's load by this much beyond
/// [`crate::sched::HYSTERESIS`]: its crossing costs are not known, and
/// measured here they ran from a few percent of the one-thread cycles a
/// packet (`conf/queue-unqueue.click`) to a half (`conf/qos-bench.click`,
/// whose split promises 16% and loses a third of the rate).
pub const UNTRIED_MARGIN: f64 = 0.15;

/// How often (ns) the balancer samples the workers' schedstat between its
/// looks at the loads: a worker that waited for its core over a couple of
/// these windows is a strong signal, and work moves off it at once rather
/// than at the next look (a 2 s run loses little to a 10 ms reaction; a
/// 100 ms one would cost a short run a third of its time at half speed).
pub const QUICK_LOOK_NS: u64 = 5_000_000;

/// A worker's starved share must differ by this much from the one the
/// placement last used for a quick look to place again.
pub const CAP_CHANGE: f64 = 0.1;

/// Each worker's share of its core, from schedstat samples.
pub struct Starvation {
    last: Vec<Option<(u64, u64)>>,
    share: Vec<f64>,
}

impl Starvation {
    pub fn new(nthreads: usize) -> Starvation {
        Starvation {
            last: vec![None; nthreads],
            share: vec![1.0; nthreads],
        }
    }

    /// One look's samples, per worker its schedstat's cumulative (run ns,
    /// wait ns), `None` where unreadable; `idle`, per worker, the share of
    /// its core it would get if it ran now, from the other load on the CPU
    /// it is pinned to ([`idle_share`]; `None`: not known). Returns each
    /// worker's share of its core (1.0: it got all of it whenever it was
    /// runnable). A worker that was runnable too little to be measured
    /// takes its `idle` figure, or drifts back towards a whole core where
    /// that is not known.
    pub fn update(&mut self, samples: &[Option<(u64, u64)>], idle: &[Option<f64>]) -> &[f64] {
        for (t, s) in samples.iter().enumerate().take(self.share.len()) {
            let unmeasured = idle.get(t).copied().flatten().unwrap_or(1.0);
            let got = match (self.last[t], *s) {
                (Some((r0, w0)), Some((r1, w1))) => {
                    let (run, wait) = (r1.saturating_sub(r0), w1.saturating_sub(w0));
                    if run + wait >= MIN_RUNNABLE_NS {
                        run as f64 / (run + wait) as f64
                    } else {
                        unmeasured
                    }
                }
                _ => unmeasured,
            };
            // Smoothed over about two samples: one slow sample (a burst of
            // another process) moves it halfway.
            self.share[t] = 0.5 * self.share[t] + 0.5 * got;
            self.last[t] = *s;
        }
        &self.share
    }

    /// Each worker's smoothed share of its core.
    pub fn shares(&self) -> &[f64] {
        &self.share
    }

    /// The shares as the placement uses them: 1.0 where a worker is not
    /// starved ([`STARVED_BELOW`]), else its share (at least 0.05).
    pub fn capacities(&self) -> Vec<f64> {
        self.share
            .iter()
            .map(|&s| if s >= STARVED_BELOW { 1.0 } else { s.max(0.05) })
            .collect()
    }

    /// Whether the capacities now differ from `used` (those the placement
    /// last ran with) enough to place again: a worker became starved or
    /// recovered, or its share moved by [`CAP_CHANGE`].
    pub fn changed(&self, used: &[f64]) -> bool {
        self.capacities()
            .iter()
            .zip(used)
            .any(|(&now, &was)| (now == 1.0) != (was == 1.0) || (now - was).abs() >= CAP_CHANGE)
    }
}

/// The share of its core an idle worker would get, given the fraction of
/// its CPU that other processes kept busy over the last window: a process
/// that keeps the CPU busy leaves it half (the kernel shares a CPU evenly
/// between runnable threads); a lighter one leaves it more.
pub fn idle_share(other_busy: f64) -> f64 {
    1.0 - other_busy.clamp(0.0, 1.0) / 2.0
}

/// Each CPU's cumulative (busy, total) time from `/proc/stat` (clock
/// ticks), indexed by CPU number; empty if unreadable.
pub fn read_cpu_times() -> Vec<(u64, u64)> {
    std::fs::read_to_string("/proc/stat")
        .map(|s| parse_cpu_times(&s))
        .unwrap_or_default()
}

/// [`read_cpu_times`] of a `/proc/stat` text: per `cpuN` line, busy is
/// everything but idle and iowait.
pub fn parse_cpu_times(text: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut w = line.split_ascii_whitespace();
        let Some(cpu) = w.next().and_then(|n| n.strip_prefix("cpu")) else {
            continue;
        };
        let Ok(cpu) = cpu.parse::<usize>() else {
            continue;
        };
        let f: Vec<u64> = w.filter_map(|x| x.parse().ok()).collect();
        if f.len() < 4 || cpu > 4096 {
            continue;
        }
        let total: u64 = f.iter().take(8).sum();
        let idle = f[3] + f.get(4).copied().unwrap_or(0);
        if out.len() <= cpu {
            out.resize(cpu + 1, (0, 0));
        }
        out[cpu] = (total - idle, total);
    }
    out
}

/// The fraction of a CPU busy between two [`read_cpu_times`] samples, if
/// the window spans at least `min_ticks` ticks (they are 10 ms: a shorter
/// window says little).
pub fn busy_fraction(before: (u64, u64), after: (u64, u64), min_ticks: u64) -> Option<f64> {
    let busy = after.0.checked_sub(before.0)?;
    let total = after.1.checked_sub(before.1)?;
    (total >= min_ticks.max(1)).then(|| (busy as f64 / total as f64).min(1.0))
}

/// A worker thread's schedstat: nanoseconds run and nanoseconds waited
/// runnable, or `None` (no such file: a kernel without schedstats).
pub fn read_schedstat(tid: i32) -> Option<(u64, u64)> {
    if tid <= 0 {
        return None;
    }
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut w = s.split_ascii_whitespace().map(|x| x.parse::<u64>().ok());
    Some((w.next()??, w.next()??))
}

/// Union-find groups of unpinned tasks joined by `pairs` (tasks that
/// meet at a queue), each sorted, in order of their first task.
pub fn groups(n: usize, pinned: &[Option<usize>], pairs: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut x = x;
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for &(a, b) in pairs {
        if a < n && b < n && pinned[a].is_none() && pinned[b].is_none() {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            parent[ra] = rb;
        }
    }
    let mut by_root: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for t in (0..n).filter(|&t| pinned[t].is_none()) {
        let r = find(&mut parent, t);
        by_root.entry(r).or_default().push(t);
    }
    let mut g: Vec<Vec<usize>> = by_root.into_values().collect();
    g.sort_by_key(|g| g[0]);
    g
}

/// The start-up placement of the adaptive scheduler: pinned tasks on
/// their threads, and each group of unpinned tasks that meet at a queue
/// whole on one thread (so no queue crosses threads until a measured
/// split wins). A group that meets a pinned task at a queue (`anchors`:
/// pairs of tasks meeting at a queue, pinned or not) starts on that
/// task's thread (the first such pair's), as Click's unnamed tasks stay
/// with StaticThreadSched's; the other groups are dealt to the thread
/// with the fewest tasks (lowest first). A thread per task of the router.
pub fn start_placement(
    n: usize,
    pinned: &[Option<usize>],
    pairs: &[(usize, usize)],
    anchors: &[(usize, usize)],
    nthreads: usize,
) -> Vec<usize> {
    let nthreads = nthreads.max(1);
    let mut assign = vec![0usize; n];
    let mut count = vec![0usize; nthreads];
    for (t, p) in pinned.iter().enumerate() {
        if let Some(th) = p {
            assign[t] = th % nthreads;
            count[th % nthreads] += 1;
        }
    }
    let pin = |t: usize| pinned.get(t).copied().flatten();
    for g in groups(n, pinned, pairs) {
        let anchor = anchors.iter().find_map(|&(a, b)| {
            match (g.binary_search(&a).is_ok(), g.binary_search(&b).is_ok()) {
                (true, false) => pin(b),
                (false, true) => pin(a),
                _ => None,
            }
        });
        let th = match anchor {
            Some(th) => th % nthreads,
            None => (0..nthreads).min_by_key(|&i| (count[i], i)).unwrap_or(0),
        };
        count[th] += g.len();
        for t in g {
            assign[t] = th;
        }
    }
    assign
}

/// Longest-first placement of `loads` on threads of capacities `caps`
/// (a thread's load counts as load / capacity): pinned tasks stay; each
/// group of tasks that meet at a queue ([`groups`]) is one unit, unless
/// `split` and it weighs more than a fair share by
/// `sched::GROUP_SLACK` (a quarter), when its tasks are units of their own.
/// A unit goes where its thread's weighted load after it is least,
/// preferring the thread its first task is on (`current`), then the
/// lowest.
pub fn place_units(
    loads: &[u64],
    pinned: &[Option<usize>],
    caps: &[f64],
    pairs: &[(usize, usize)],
    current: &[usize],
    split: bool,
) -> Vec<usize> {
    let n = loads.len();
    let nthreads = caps.len().max(1);
    let cap = |i: usize| caps.get(i).copied().unwrap_or(1.0).max(0.05);
    let mut assign = vec![0usize; n];
    let mut per = vec![0.0f64; nthreads];
    for (t, p) in pinned.iter().enumerate() {
        if let Some(th) = p {
            assign[t] = th % nthreads;
            per[th % nthreads] += loads[t] as f64;
        }
    }
    let total: u64 = loads.iter().sum();
    let fair = total as f64 / nthreads as f64;
    // A group's tasks split apart go only to workers with their whole
    // core, where there are any: a split onto a shared CPU pays a
    // crossing a packet for a share the other process decides (a worker
    // estimated at half a core was measured at a quarter once it ran),
    // and a balanced split onto half a core gains nothing even for free.
    let any_whole = (0..nthreads).any(|i| cap(i) >= 1.0);
    let mut units: Vec<(Vec<usize>, bool)> = Vec::new();
    for g in groups(n, pinned, pairs) {
        let load: u64 = g.iter().map(|&t| loads[t]).sum();
        if split && g.len() > 1 && load as f64 > fair * (1.0 + crate::sched::GROUP_SLACK) {
            units.extend(g.into_iter().map(|t| (vec![t], true)));
        } else {
            units.push((g, false));
        }
    }
    let unit_load = |u: &Vec<usize>| u.iter().map(|&t| loads[t]).sum::<u64>();
    units.sort_by(|a, b| {
        unit_load(&b.0)
            .cmp(&unit_load(&a.0))
            .then(a.0[0].cmp(&b.0[0]))
    });
    for (u, from_split) in units {
        let l = unit_load(&u) as f64;
        let here = current.get(u[0]).copied();
        let only_whole = from_split && any_whole;
        let th = (0..nthreads)
            .filter(|&i| !only_whole || cap(i) >= 1.0)
            .min_by(|&x, &y| {
                let (wx, wy) = ((per[x] + l) / cap(x), (per[y] + l) / cap(y));
                wx.total_cmp(&wy)
                    .then((Some(x) != here).cmp(&(Some(y) != here)))
                    .then(x.cmp(&y))
            })
            .unwrap_or(0);
        per[th] += l;
        for t in u {
            assign[t] = th;
        }
    }
    assign
}

/// The busiest thread's load weighted by its capacity, under `assign`.
pub fn weighted_max(loads: &[u64], assign: &[usize], caps: &[f64]) -> f64 {
    let nthreads = caps.len().max(1);
    let mut per = vec![0.0f64; nthreads];
    for (t, &th) in assign.iter().enumerate() {
        per[th % nthreads] += loads[t] as f64;
    }
    per.iter()
        .enumerate()
        .map(|(i, &l)| l / caps.get(i).copied().unwrap_or(1.0).max(0.05))
        .fold(0.0, f64::max)
}

/// The moves (task, thread) [`place_units`] finds, if they lower the
/// capacity-weighted load of the busiest thread by more than
/// [`crate::sched::HYSTERESIS`]; else none.
pub fn rebalance_weighted(
    loads: &[u64],
    current: &[usize],
    pinned: &[Option<usize>],
    caps: &[f64],
    pairs: &[(usize, usize)],
    split: bool,
) -> Vec<(usize, usize)> {
    let plan = place_units(loads, pinned, caps, pairs, current, split);
    let (cur, new) = (
        weighted_max(loads, current, caps),
        weighted_max(loads, &plan, caps),
    );
    if new >= cur * (1.0 - crate::sched::HYSTERESIS) {
        return Vec::new();
    }
    plan.iter()
        .enumerate()
        .filter(|&(t, &th)| th != current[t])
        .map(|(t, &th)| (t, th))
        .collect()
}

/// Whether a queue, given by the tasks that push into it and those that
/// pull from it, has tasks on more than one thread under `assign`.
pub fn crosses((push, pull): (&[usize], &[usize]), assign: &[usize]) -> bool {
    let mut th = push.iter().chain(pull).map(|&t| assign[t]);
    let first = th.next();
    th.any(|x| Some(x) != first)
}

/// Whether a split is kept: the packets per second through the queues
/// after it (`after`) against before (`before`).
pub fn keep_trial(before: f64, after: f64) -> bool {
    after >= before * (1.0 + KEEP_MARGIN)
}

/// One look's counts: packets pulled out of each queue so far, and the
/// time (s).
#[derive(Clone)]
struct Count {
    queues: Vec<u64>,
    secs: f64,
}

/// What two looks measured: the packets through the queues per second,
/// and the packets through each queue between them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    pub rate: f64,
    pub packets: Vec<u64>,
}

impl Window {
    fn between(from: &Count, to: &Count) -> Window {
        // The counters only grow (wrapping).
        let packets: Vec<u64> = to
            .queues
            .iter()
            .enumerate()
            .map(|(q, &n)| n.wrapping_sub(from.queues.get(q).copied().unwrap_or(0)))
            .collect();
        let all: u64 = packets.iter().sum();
        let dt = to.secs - from.secs;
        Window {
            rate: if dt > 0.0 { all as f64 / dt } else { 0.0 },
            packets,
        }
    }
}

/// The splits on trial, look by look: fed the packets pulled out of each
/// queue so far at each look, it says whether a trial takes the look
/// ([`Step::Trial`]: settling, kept, or the moves that undo it) or the
/// balancer may move tasks ([`Step::Free`]: whether a split may be
/// tried, and what the last look measured, which a trial started now is
/// judged against).
///
/// A trial is kept if the rate through the queues rose by
/// [`KEEP_MARGIN`] ([`keep_trial`]). Each trial also prices the queues it
/// made cross: the wall cycles a packet its rate showed beyond the
/// busiest thread's predicted load, per packet that crossed
/// ([`Trials::price`]), which the balancer charges a later split of the
/// same queues ([`split_pays`]), so a split that lost is not tried again
/// unless the loads have changed enough to pay for it. A price stands
/// until a later trial of the same queue measures it again.
pub struct Trials {
    counted: Option<Count>,
    last: Window,
    trial: Option<Trial>,
    backoff: u32,
    backoff_next: u32,
    /// The balancer's interval (s) and the seconds spent in trials.
    interval: f64,
    spent: f64,
    /// Cycles per crossing packet each queue was measured to cost (by
    /// index; `None` until a trial made it cross).
    prices: Vec<Option<f64>>,
    /// Cycles a second of the clock the loads are counted in.
    hz: f64,
}

struct Trial {
    before: Window,
    /// The busiest thread's cycles per packet the split was predicted
    /// to leave, before any crossing cost.
    predicted: Option<f64>,
    undo: Vec<(usize, usize)>,
    /// The queues the split made cross.
    crossed: Vec<usize>,
    from: Option<Count>,
    /// When it began (the look whose rate it is judged against).
    began: Option<f64>,
}

/// What a look is for (see [`Trials`]).
#[derive(Debug, PartialEq)]
pub enum Step {
    /// A trial takes the look: these moves (none while it settles or
    /// when it is kept; the undoing moves when it lost).
    Trial(Vec<(usize, usize)>),
    /// No trial: the balancer may move tasks, and split a group if
    /// `split`; `rate` is the packets per second over the last look.
    Free { split: bool, rate: f64 },
}

impl Default for Trials {
    /// At the default interval, 50 ms, counting cycles at 1 GHz.
    fn default() -> Trials {
        Trials::new(0.05, 1e9)
    }
}

impl Trials {
    /// For a balancer that looks every `interval` seconds, its loads
    /// counted in cycles of a clock of `hz` a second.
    pub fn new(interval: f64, hz: f64) -> Trials {
        Trials {
            counted: None,
            last: Window::default(),
            trial: None,
            backoff: 0,
            backoff_next: BACKOFF_FIRST,
            interval,
            spent: 0.0,
            prices: Vec::new(),
            hz,
        }
    }

    /// Whether a split is on trial (settling or being measured).
    pub fn on_trial(&self) -> bool {
        self.trial.is_some()
    }

    /// Seconds until the next look: short while a split is on trial
    /// ([`TRIAL_SETTLE`], then [`TRIAL_MEASURE`] of the interval), else
    /// the interval.
    pub fn wait(&self) -> f64 {
        match &self.trial {
            Some(Trial { from: None, .. }) => self.interval * TRIAL_SETTLE,
            Some(_) => self.interval * TRIAL_MEASURE,
            None => self.interval,
        }
    }

    /// What the last look measured since the one before.
    pub fn last(&self) -> &Window {
        &self.last
    }

    /// The cycles per crossing packet a trial measured queue `q` to
    /// cost, if one made it cross.
    pub fn price(&self, q: usize) -> Option<f64> {
        self.prices.get(q).copied().flatten()
    }

    /// A look at `secs`: `queues`, the packets pulled out of each queue
    /// so far.
    pub fn look(&mut self, queues: &[u64], secs: f64) -> Step {
        let now = Count {
            queues: queues.to_vec(),
            secs,
        };
        self.last = self
            .counted
            .as_ref()
            .map(|from| Window::between(from, &now))
            .unwrap_or_default();
        self.counted = Some(now.clone());
        if let Some(tr) = &mut self.trial {
            let Some(from) = &tr.from else {
                // The look the split was made in is not measured.
                tr.from = Some(now);
                return Step::Trial(Vec::new());
            };
            let (after, from_secs) = (Window::between(from, &now), from.secs);
            let tr = self.trial.take().expect("a trial");
            self.spent += secs - tr.began.unwrap_or(from_secs);
            // The price: what the split cost beyond its prediction, in
            // clock cycles per packet that crossed. Measured as wall time
            // per packet (the rate), it counts the work the crossing
            // added and the time the workers spent waiting on each other.
            let crossing: u64 = tr
                .crossed
                .iter()
                .filter_map(|&q| after.packets.get(q))
                .sum();
            if let (Some(pred), true) = (tr.predicted, crossing > 0 && after.rate > 0.0) {
                let all: u64 = after.packets.iter().sum();
                let price = (self.hz / after.rate - pred).max(0.0) * all as f64 / crossing as f64;
                for &q in &tr.crossed {
                    if self.prices.len() <= q {
                        self.prices.resize(q + 1, None);
                    }
                    self.prices[q] = Some(price);
                }
            }
            if keep_trial(tr.before.rate, after.rate) {
                self.backoff_next = BACKOFF_FIRST;
                return Step::Trial(Vec::new());
            }
            self.backoff = self.backoff_next;
            self.backoff_next = (self.backoff_next * 2).min(BACKOFF_MAX);
            return Step::Trial(tr.undo);
        }
        self.backoff = self.backoff.saturating_sub(1);
        let trial = self.interval * (TRIAL_SETTLE + TRIAL_MEASURE);
        Step::Free {
            split: self.backoff == 0 && self.spent + trial <= TRIAL_SHARE * secs,
            rate: self.last.rate,
        }
    }

    /// A split that makes the queues `crossed` cross was made after a
    /// [`Step::Free`] look, against which it is judged; `undo` moves the
    /// tasks back; `predicted` is the busiest thread's load it was
    /// predicted to leave, in cycles per packet through the queues over
    /// that look (capacity-weighted, no crossing cost), if known.
    pub fn start(
        &mut self,
        undo: Vec<(usize, usize)>,
        crossed: Vec<usize>,
        predicted: Option<f64>,
    ) {
        self.trial = Some(Trial {
            before: self.last.clone(),
            predicted,
            undo,
            crossed,
            from: None,
            began: self.counted.as_ref().map(|c| c.secs),
        });
    }
}

/// Whether a split (the tasks on `current` threads moved to `after`)
/// still cuts the busiest thread's load, weighted by `caps`, by
/// [`crate::sched::HYSTERESIS`] once every queue it makes cross is
/// charged its price: `price(q)` cycles per packet (a trial's measure,
/// [`Trials::price`]) times `packets[q]`, the packets through it over the
/// interval `loads` were measured in, on every thread its tasks are on
/// (the cost falls on either end or both; charging both keeps a split
/// that pays at any split of it). A queue not priced yet is charged
/// nothing, but then the cut must be [`UNTRIED_MARGIN`] deeper.
pub fn split_pays(
    loads: &[u64],
    current: &[usize],
    after: &[usize],
    caps: &[f64],
    queues: &[(&[usize], &[usize])],
    packets: &[u64],
    price: &dyn Fn(usize) -> Option<f64>,
) -> bool {
    let nthreads = caps.len().max(1);
    let mut per = vec![0.0f64; nthreads];
    for (t, &th) in after.iter().enumerate() {
        per[th % nthreads] += loads[t] as f64;
    }
    let mut untried = false;
    for (q, &(p, c)) in queues.iter().enumerate() {
        if !crosses((p, c), after) || crosses((p, c), current) {
            continue;
        }
        let Some(price) = price(q) else {
            untried = true;
            continue;
        };
        let cost = price * packets.get(q).copied().unwrap_or(0) as f64;
        let mut on: Vec<usize> = p
            .iter()
            .chain(c.iter())
            .map(|&t| after[t] % nthreads)
            .collect();
        on.sort_unstable();
        on.dedup();
        for th in on {
            per[th] += cost;
        }
    }
    let new = per
        .iter()
        .enumerate()
        .map(|(i, &l)| l / caps.get(i).copied().unwrap_or(1.0).max(0.05))
        .fold(0.0, f64::max);
    let cut = crate::sched::HYSTERESIS + if untried { UNTRIED_MARGIN } else { 0.0 };
    new < weighted_max(loads, current, caps) * (1.0 - cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Cumulative schedstat samples: each look, a worker ran `run` ms
    /// and waited `wait` ms.
    fn look(s: &mut Starvation, acc: &mut [(u64, u64)], per: &[(u64, u64)]) -> Vec<f64> {
        for (a, &(r, w)) in acc.iter_mut().zip(per) {
            a.0 += r * MS;
            a.1 += w * MS;
        }
        let samples: Vec<_> = acc.iter().map(|&x| Some(x)).collect();
        s.update(&samples, &[]);
        s.capacities()
    }

    #[test]
    fn a_worker_that_waits_for_its_core_is_starved_and_recovers() {
        let mut s = Starvation::new(2);
        let mut acc = [(0, 0); 2];
        look(&mut s, &mut acc, &[(0, 0), (0, 0)]);
        // Worker 0 runs 25 ms and waits 25 ms of each 50 ms look.
        let mut caps = Vec::new();
        for _ in 0..4 {
            caps = look(&mut s, &mut acc, &[(25, 25), (0, 0)]);
        }
        assert!((caps[0] - 0.53).abs() < 0.05, "{caps:?}");
        assert_eq!(caps[1], 1.0);
        // Its core is free again: back to a whole core within a few looks.
        for _ in 0..3 {
            caps = look(&mut s, &mut acc, &[(50, 0), (0, 0)]);
        }
        assert_eq!(caps, vec![1.0, 1.0]);
        // A worker that ran almost nothing is not measured as starved.
        for _ in 0..4 {
            caps = look(&mut s, &mut acc, &[(0, 1), (0, 0)]);
        }
        assert_eq!(caps, vec![1.0, 1.0]);
    }

    /// Two tasks meeting at a queue (a source and its puller), both on
    /// thread 0: the moves the balancer makes as worker 0's core is taken
    /// by another process, then freed, then worker 1's is taken.
    #[test]
    fn work_moves_off_a_starved_worker_and_back() {
        let pinned = [None, None];
        let pairs = [(0, 1)];
        let loads = [40 * MS, 40 * MS];
        let mut s = Starvation::new(2);
        let mut acc = [(0, 0); 2];
        let mut at = vec![0usize, 0];
        let mut step = |s: &mut Starvation, acc: &mut [(u64, u64)], per: &[(u64, u64)]| {
            let caps = look(s, acc, per);
            let moves = rebalance_weighted(&loads, &at, &pinned, &caps, &pairs, false);
            for (t, th) in moves {
                at[t] = th;
            }
            at.clone()
        };
        step(&mut s, &mut acc, &[(0, 0), (0, 0)]);
        // Both cores free: the group stays together where it is.
        assert_eq!(step(&mut s, &mut acc, &[(50, 0), (0, 0)]), vec![0, 0]);
        // Worker 0 gets half its core: the group moves whole to 1.
        let mut placed = Vec::new();
        for _ in 0..3 {
            placed = step(&mut s, &mut acc, &[(25, 25), (0, 0)]);
        }
        assert_eq!(placed, vec![1, 1]);
        // Worker 0's core is free again and 1 gets its whole: no bounce.
        for _ in 0..4 {
            placed = step(&mut s, &mut acc, &[(0, 0), (50, 0)]);
        }
        assert_eq!(placed, vec![1, 1]);
        // Now worker 1 is starved: back to 0.
        for _ in 0..3 {
            placed = step(&mut s, &mut acc, &[(0, 0), (25, 25)]);
        }
        assert_eq!(placed, vec![0, 0]);
    }

    /// Independent tasks: the starved worker keeps less than a fair half.
    #[test]
    fn a_starved_worker_keeps_a_share_of_independent_work() {
        let loads = [10 * MS; 4];
        let pinned = [None; 4];
        let caps = [0.3, 1.0];
        let at = rebalance_weighted(&loads, &[0, 1, 0, 1], &pinned, &caps, &[], true);
        let mut now = vec![0usize, 1, 0, 1];
        for (t, th) in at {
            now[t] = th;
        }
        assert_eq!(now.iter().filter(|&&th| th == 0).count(), 1, "{now:?}");
    }

    /// A group heavier than a fair share is split only among workers with
    /// their whole core: with the other worker at 0.6 of its core both
    /// tasks stay together (a split would put the lighter one there,
    /// weighted 100/0.6 against 200); with both whole, it splits.
    #[test]
    fn a_group_splits_only_onto_whole_cores() {
        let loads = [10 * MS, 10 * MS];
        let pinned = [None, None];
        let pairs = [(0, 1)];
        let starved = rebalance_weighted(&loads, &[1, 1], &pinned, &[0.6, 1.0], &pairs, true);
        assert_eq!(starved, Vec::new());
        let whole = rebalance_weighted(&loads, &[1, 1], &pinned, &[1.0, 1.0], &pairs, true);
        assert_eq!(whole.len(), 1, "{whole:?}");
        // Without leave to split, a group goes whole to the least loaded
        // weighted thread, starved or not.
        let to_starved = place_units(
            &[10 * MS, 10 * MS, 30 * MS],
            &[None, None, Some(1)],
            &[0.6, 1.0],
            &pairs,
            &[1, 1, 1],
            true,
        );
        assert_eq!(&to_starved[..2], &[0, 0], "{to_starved:?}");
    }

    #[test]
    fn groups_start_whole_and_pins_are_kept() {
        // 0 -> q -> 1, 2 -> q' -> 3: two groups, one a thread.
        let pairs = [(0, 1), (2, 3)];
        assert_eq!(
            start_placement(4, &[None; 4], &pairs, &[], 2),
            vec![0, 0, 1, 1]
        );
        // One group of everything (fake-iprouter): all on thread 0.
        let all = [(0, 1), (0, 2), (0, 3)];
        assert_eq!(
            start_placement(4, &[None; 4], &all, &[], 2),
            vec![0, 0, 0, 0]
        );
        // Pinned tasks stay; the rest join the emptier thread.
        let pinned = [Some(0), Some(1), None];
        assert_eq!(
            start_placement(3, &pinned, &[(2, 2)], &[], 2),
            vec![0, 1, 0]
        );
        // ... unless they meet a pinned task at a queue: then its thread.
        let anchors = [(1, 2)];
        assert_eq!(
            start_placement(3, &pinned, &[(2, 2)], &anchors, 2),
            vec![0, 1, 1]
        );
        let pinned = [None, Some(1), None, None];
        let anchors = [(0, 2), (2, 1)];
        assert_eq!(
            start_placement(4, &pinned, &[(2, 3)], &anchors, 2),
            vec![0, 1, 1, 1]
        );
    }

    #[test]
    fn splitting_a_group_is_allowed_only_when_asked() {
        let loads = [40 * MS, 40 * MS];
        let caps = [1.0, 1.0];
        assert!(
            rebalance_weighted(&loads, &[0, 0], &[None; 2], &caps, &[(0, 1)], false).is_empty()
        );
        let m = rebalance_weighted(&loads, &[0, 0], &[None; 2], &caps, &[(0, 1)], true);
        assert_eq!(m, vec![(1, 1)]);
        let (p, c) = ([0usize], [1usize]);
        assert!(!crosses((&p, &c), &[0, 0]));
        assert!(crosses((&p, &c), &[0, 1]));
    }

    /// Looks fed with a rate through one queue, every `dt` seconds.
    struct Feed {
        packets: u64,
        t: f64,
    }

    impl Feed {
        fn at(t: f64) -> Feed {
            Feed { packets: 0, t }
        }
        fn look(&mut self, tr: &mut Trials, dt: f64, pps: f64) -> Step {
            self.packets += (pps * dt) as u64;
            self.t += dt;
            tr.look(&[self.packets], self.t)
        }
    }

    /// A split measured slower (6.9 Mpps on one thread, 4.6 split) is
    /// undone and not tried again for the back-off, which doubles; a split
    /// that gains is kept and resets it.
    #[test]
    fn a_split_that_lost_is_undone_and_backed_off() {
        let mut tr = Trials::default();
        // A second into the run: the trials' share of it is not what
        // stops a split here (see the next test).
        let mut f = Feed::at(1.0);
        let mut look = |tr: &mut Trials, pps: f64| f.look(tr, 0.05, pps);
        assert_eq!(
            look(&mut tr, 0.0),
            Step::Free {
                split: true,
                rate: 0.0
            }
        );
        let Step::Free { split: true, rate } = look(&mut tr, 6.9e6) else {
            panic!("free")
        };
        assert!((rate - 6.9e6).abs() < 1e3, "{rate}");
        tr.start(vec![(1, 0)], vec![0], None);
        assert_eq!(look(&mut tr, 5.0e6), Step::Trial(vec![])); // settling
        assert_eq!(look(&mut tr, 4.6e6), Step::Trial(vec![(1, 0)])); // undone
        let mut waited = 0;
        while matches!(look(&mut tr, 6.9e6), Step::Free { split: false, .. }) {
            waited += 1;
        }
        assert_eq!(waited, BACKOFF_FIRST - 1);
        // Lost again: twice the wait.
        tr.start(vec![(1, 0)], vec![0], None);
        look(&mut tr, 4.6e6);
        assert_eq!(look(&mut tr, 4.6e6), Step::Trial(vec![(1, 0)]));
        let mut waited = 0;
        while matches!(look(&mut tr, 6.9e6), Step::Free { split: false, .. }) {
            waited += 1;
        }
        assert_eq!(waited, 2 * BACKOFF_FIRST - 1);
        // A split that gains 20% is kept: no moves, the back-off reset.
        tr.start(vec![(1, 0)], vec![0], None);
        look(&mut tr, 8.0e6);
        assert_eq!(look(&mut tr, 8.3e6), Step::Trial(vec![]));
        assert!(matches!(
            look(&mut tr, 8.3e6),
            Step::Free { split: true, .. }
        ));
        tr.start(vec![(1, 0)], vec![0], None);
        look(&mut tr, 1.0e6);
        look(&mut tr, 1.0e6);
        let mut waited = 0;
        while matches!(look(&mut tr, 8.3e6), Step::Free { split: false, .. }) {
            waited += 1;
        }
        assert_eq!(waited, BACKOFF_FIRST - 1);
    }

    /// A trial prices the queues it made cross: the wall cycles a packet
    /// its rate showed beyond the busiest thread's predicted load, per
    /// packet that crossed. Charged that price, the same split on the
    /// same loads no longer pays; on loads where it still would, it is
    /// allowed; a queue never tried is charged nothing.
    #[test]
    fn a_trial_prices_what_it_crossed_and_the_price_keeps_a_loser_out() {
        // 1 GHz; one thread: a source (55 cycles a packet) and a puller
        // (290) meeting at queue 0; queue 1 carries no traffic.
        let mut tr = Trials::new(0.05, 1e9);
        let mut f = Feed::at(1.0);
        f.look(&mut tr, 0.05, 2.9e6);
        f.look(&mut tr, 0.05, 2.9e6);
        assert_eq!(tr.price(0), None);
        // Predicted: the puller alone, 290 cycles a packet. Measured:
        // 2.5 Mpps, 400 wall cycles a packet: 110 more.
        tr.start(vec![(0, 0)], vec![0], Some(290.0));
        f.look(&mut tr, 0.005, 2.5e6);
        assert_eq!(f.look(&mut tr, 0.015, 2.5e6), Step::Trial(vec![(0, 0)]));
        let price = tr.price(0).expect("priced");
        assert!((price - 110.0).abs() < 1.0, "{price}");
        assert_eq!(tr.price(1), None);

        let queues: [(&[usize], &[usize]); 2] = [(&[0], &[1]), (&[2], &[3])];
        let price_of = |q: usize| tr.price(q);
        // 50 ms at 2.9 Mpps: 145,000 packets, the loads in cycles.
        let n = 145_000u64;
        let loads = [55 * n, 290 * n, 0, 0];
        let current = [0, 0, 0, 0];
        let split = [1, 0, 0, 0];
        let caps = [1.0, 1.0];
        let packets = [n, 0];
        // Unpriced, 345 to 290 is 16%: short of the hysteresis and the
        // margin for an untried queue (qos-bench's split).
        let unpriced = |_: usize| None;
        assert!(!split_pays(
            &loads, &current, &split, &caps, &queues, &packets, &unpriced
        ));
        assert!(!split_pays(
            &loads, &current, &split, &caps, &queues, &packets, &price_of
        ));
        // 200 + 290 to 290, 41%: tried unpriced.
        let heavy = [200 * n, 290 * n, 0, 0];
        assert!(split_pays(
            &heavy,
            &current,
            &[0, 1, 0, 0],
            &caps,
            &queues,
            &packets,
            &unpriced
        ));
        // A heavier source: split, 200 + 110 against 490 on one thread.
        let loads = [200 * n, 290 * n, 0, 0];
        let split = [0, 1, 0, 0];
        assert!(split_pays(
            &loads, &current, &split, &caps, &queues, &packets, &price_of
        ));
        // Queue 1 never crossed: moving its tasks apart costs nothing.
        let loads = [0, 0, 300 * n, 300 * n];
        let packets = [0, n];
        assert!(split_pays(
            &loads,
            &current,
            &[0, 0, 0, 1],
            &caps,
            &queues,
            &packets,
            &price_of
        ));
    }

    /// A trial's looks are short, and splits are tried only while the
    /// trials' time stays within [`TRIAL_SHARE`] of the run: none before
    /// the look at 100 ms, and after a 20 ms trial the next waits until
    /// the run has lasted five times the 40 ms spent with it.
    #[test]
    fn trials_are_short_and_take_a_bounded_share_of_the_run() {
        let mut tr = Trials::new(0.05, 1e9);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(tr.wait(), 0.05));
        let mut f = Feed::at(-0.05);
        assert!(matches!(
            f.look(&mut tr, 0.05, 0.0),
            Step::Free { split: false, .. }
        ));
        assert!(matches!(
            f.look(&mut tr, 0.05, 7.0e6),
            Step::Free { split: false, .. }
        ));
        let Step::Free { split: true, rate } = f.look(&mut tr, 0.05, 7.0e6) else {
            panic!("no split allowed at 100 ms")
        };
        assert!((rate - 7.0e6).abs() < 1.0, "{rate}");
        tr.start(vec![(1, 0)], vec![0], None);
        assert!(near(tr.wait(), 0.005));
        assert_eq!(f.look(&mut tr, 0.005, 4.0e6), Step::Trial(vec![])); // settling
        assert!(near(tr.wait(), 0.015));
        // 8 Mpps over the 15 ms measured: kept.
        assert_eq!(f.look(&mut tr, 0.015, 8.0e6), Step::Trial(vec![]));
        assert!(near(tr.wait(), 0.05));
        // 20 ms spent; another 20 ms trial needs a run of 200 ms.
        assert!(matches!(
            f.look(&mut tr, 0.05, 8.0e6),
            Step::Free { split: false, .. }
        ));
        assert!(matches!(
            f.look(&mut tr, 0.035, 8.0e6),
            Step::Free { split: true, .. }
        ));
    }

    /// An idle worker's share comes from its CPU's other load: a CPU a
    /// busy loop holds gives it half and keeps it starved while it runs
    /// nothing; a free one gives it its whole core back.
    #[test]
    fn an_idle_worker_on_a_busy_cpu_stays_starved() {
        let stat = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 100 5 20 300 7 1 2 0 0 0\n\
                    cpu1 1 0 1 500 0 0 0 0 0 0\nintr 5\n";
        let t = parse_cpu_times(stat);
        assert_eq!(t, vec![(128, 435), (2, 502)]);
        let later = [(t[0].0 + 10, t[0].1 + 10), (t[1].0, t[1].1 + 10)];
        assert_eq!(busy_fraction(t[0], later[0], 4), Some(1.0));
        assert_eq!(busy_fraction(t[1], later[1], 4), Some(0.0));
        assert_eq!(busy_fraction(t[0], (t[0].0 + 1, t[0].1 + 2), 4), None);
        assert_eq!(idle_share(1.0), 0.5);
        assert_eq!(idle_share(0.0), 1.0);
        let mut s = Starvation::new(2);
        let mut acc = [(0, 0); 2];
        let idle = [Some(idle_share(1.0)), Some(1.0)];
        let mut samples = || {
            let x: Vec<_> = acc.iter().map(|&x| Some(x)).collect();
            acc[1].0 += 5 * MS;
            x
        };
        for _ in 0..6 {
            s.update(&samples(), &idle);
        }
        assert!(s.capacities()[0] < 0.6, "{:?}", s.capacities());
        assert_eq!(s.capacities()[1], 1.0);
        assert!(s.changed(&[1.0, 1.0]));
        assert!(!s.changed(&s.capacities()));
        for _ in 0..4 {
            s.update(&samples(), &[Some(1.0), Some(1.0)]);
        }
        assert_eq!(s.capacities(), vec![1.0, 1.0]);
    }

    #[test]
    fn a_split_is_kept_only_when_it_measured_faster() {
        assert!(!keep_trial(6.9e6, 4.6e6));
        assert!(!keep_trial(6.9e6, 7.0e6));
        assert!(keep_trial(6.9e6, 7.4e6));
    }
}
