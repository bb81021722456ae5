//! The application model of a paraclick configuration and its mapping
//! onto this machine's cores.
//!
//! Application: the configuration's tasks (a source's push path, a
//! ToDevice's pull path) with their cycles per packet from a short
//! single-thread run, and for every queue the packets each producer task
//! puts into it and each consumer task takes out (path frequencies).
//! Mapping: a thread per task. Each thread is one stage of the model. At
//! the profile's mix of sources, the packets of every flow pass all
//! threads, so the thread with the most work per packet sets the rate
//! ([`App::model`]); sources that offer no rate (InfiniteSource-fed, as the
//! harness measures them) are not held to that mix: each thread's sources
//! run as fast as that thread allows ([`App::free_running`]). A packet
//! crossing from one thread to another through a queue costs each end its
//! measured crossing time ([`crate::machine::Machine::hop_ends_ns`]).

use crate::machine::{LineTerm, Machine};
use crate::{Channel, Model, Stage};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppTask {
    pub name: String,
    /// Cycles of the task's runs per packet entering the router (cycle
    /// counter ticks), scheduler overhead included.
    pub cycles_per_packet: f64,
    /// A source of packets (an element without inputs).
    pub entry: bool,
    /// Packets its runs handle per packet entering the router, in the
    /// single-thread timing run (for an entry task: its share of the
    /// entering packets). 0: unknown.
    pub packets: f64,
    /// For a task that pulls from queues: its cost per packet when those
    /// queues' producers run on other threads, relative to its cost on
    /// one thread (0: unknown, taken as 1). Across threads a puller finds
    /// the packets a producer published together (a stage) and takes them
    /// in one run, so its per-run costs (the scheduler's, the pull's, each
    /// hop's) are shared by more packets than on one thread, where it
    /// runs once per packet a BURST 1 source sends.
    pub crossing_factor: f64,
    /// Of `cycles_per_packet`: the worker loop's own cycles between task
    /// runs in the timing run (its pass over the thread's tasks, timers,
    /// the stop flag), charged per run with work there, where
    /// `pass_mates` tasks shared each pass. On a thread with fewer tasks
    /// a pass is shared by fewer runs ([`App::thread_origin_ns`]). 0: none.
    pub pass_cycles_per_packet: f64,
    /// Tasks on the timing run's thread (0: unknown, no correction).
    pub pass_mates: f64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppQueue {
    pub name: String,
    /// Per producer task (index into tasks): packets it enqueues per
    /// packet entering the router.
    pub producers: Vec<(usize, f64)>,
    /// Per consumer task: packets it dequeues per entering packet.
    pub consumers: Vec<(usize, f64)>,
    /// Packets the consumers take per run with work (their batch size),
    /// which sets the cost of a crossing ([`Machine::hop_ns`]); 0: unknown
    /// (taken as 1).
    pub batch: f64,
    /// How this queue's crossing grows with the core-to-core line time
    /// at each end, (producer, consumer): ns per crossing packet per ns
    /// of line time, i.e. the line transfers per packet its ends wait
    /// for, from what the elements on each side touch of a packet that
    /// crossed (a consumer that reads the packet's data waits for more
    /// lines than one that reads only its metadata). Replaces the
    /// calibration chain's growth ([`crate::machine::HopPoint::growth`])
    /// for this queue where measured, adds to it where estimated; the
    /// default: the calibration's.
    pub line_growth: LineTerm,
}

impl AppQueue {
    /// Whether some packets of this queue go from a producer on one
    /// thread to a consumer on another under `assign`.
    pub fn crosses(&self, assign: &[usize], nthreads: usize) -> bool {
        let th = |i: usize| assign.get(i).copied().unwrap_or(0) % nthreads.max(1);
        self.producers
            .iter()
            .any(|p| self.consumers.iter().any(|c| th(p.0) != th(c.0)))
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct App {
    pub name: String,
    pub tasks: Vec<AppTask>,
    pub queues: Vec<AppQueue>,
    /// Mean size of the packets entering, bytes.
    pub packet_bytes: f64,
    /// Cycle counter rate the cycles were counted at, GHz.
    pub tsc_ghz: f64,
    /// Share of a core the timing run's thread got (CPU time over wall
    /// time; 1.0 on an idle machine).
    pub core_share: f64,
    /// The sources offer no rate (InfiniteSource-fed, as `bench --mlffr`
    /// measures them at saturation): each runs as fast as its thread lets
    /// it, so sources on different threads are not held to the profile's
    /// mix. False: a fixed mix (RatedSources, all offered the same rate).
    pub free_sources: bool,
}

/// The rate of a configuration whose sources run freely
/// ([`App::free_running`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FreeRun {
    /// Per thread that runs sources: packets per second entering through
    /// its sources.
    pub group_rates: Vec<(usize, f64)>,
    /// Per thread: the share of its core the rates need (1.0: saturated).
    pub loads: Vec<f64>,
    /// The sum of the group rates, packets/s.
    pub mlffr: f64,
    /// How it was found.
    pub how: &'static str,
}

/// What-if questions about the machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WhatIf {
    /// Core clock in GHz (default: the cycle counter's rate; costs in
    /// cycles are kept, so time scales inversely).
    pub clock_ghz: Option<f64>,
    /// Mean packet size (memory traffic only: task costs are taken as
    /// independent of size, as the paper's header processing is).
    pub packet_bytes: Option<f64>,
    /// Per thread: the share of a core it gets now, relative to the share
    /// the single-thread timing run had (empty: all 1.0). On a machine
    /// shared with other work a thread is that much slower.
    pub core_share: Vec<f64>,
    /// The core-to-core cache-line time (ns per one-way transfer) the
    /// run meets, where it differs from the calibration's
    /// ([`Machine::line_transfer_ns`]): the cross-core part of the
    /// queue hop scales with it ([`Machine::hop_ends_at`]). None: the
    /// calibration's.
    pub line_ns: Option<f64>,
}

/// A device path's measured costs (issue 42's device terms): what
/// receiving a packet through FromDevice (reading the ring or the AF_XDP
/// socket, the copy into a packet, its annotations) and sending one
/// through ToDevice (the send, with the kernel's delivery on the peer)
/// cost the thread that does it, ns, beyond what the same chain costs
/// with InfiniteSource and Discard in the devices' places; and where the
/// receive rings overflow before the thread saturates. Measured as the
/// queue hop is: chains run on the runtime itself, their time per packet
/// less the device-less chain's (scripts/device-terms.sh).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTerm {
    /// `AF_PACKET` or `AF_XDP` (shown in the model's table).
    pub method: String,
    pub rx_ns: f64,
    pub tx_ns: f64,
    /// The wake-up term: the highest rate (packets/s entering the
    /// router) at which the receive path alone, a FromDevice task per
    /// receive queue feeding Discard, loses nothing, on the threads and
    /// CPUs the router uses. A thread that sleeps when its rings are
    /// empty starts reading them a wake-up latency L after a packet
    /// arrives (longer when the CPU is shared), and a ring of R frames
    /// overflows once rate x L > R, however little CPU each packet
    /// needs: this rate is R / L as the receive path meets it. A router
    /// loses no later than its own receive path, so its loss-free rate
    /// is the lower of this and its saturated rate
    /// ([`DeviceTerm::loss_free`]). None: not measured (the saturated
    /// rate alone).
    pub ring_pps: Option<f64>,
}

impl DeviceTerm {
    /// The loss-free rate of a device router whose saturated rate (the
    /// model's, with this term's per-packet costs) is `saturated`.
    pub fn loss_free(&self, saturated: f64) -> f64 {
        match self.ring_pps {
            Some(cap) => saturated.min(cap),
            None => saturated,
        }
    }
}

/// The CPUs a device router shares with other work on its machine (issue
/// 42: on the veth test bed at -j 2 the packet generator runs on the
/// router's two CPUs). The router's threads cost `thread_ns` CPU ns each
/// per packet (the model's stages on a core of their own); the other work
/// costs `other_ns` CPU ns per packet the router forwards (the generator's
/// send, and the receive it sets off in softirq on its CPU); a router
/// thread gets at most `thread_share` of its core while the other work
/// wants the core too (1: the router runs first, as with real-time
/// priority; under a fair scheduler next to a spinning generator, the
/// share the router was measured to get). A router thread that waits in
/// `poll(2)` when its ring is empty also spends `wake_ns` CPU ns per
/// wake-up beyond its packets (the spin before it sleeps, the sleep and
/// the wake-up): on the CPUs it shares with the generator that is spent
/// once per batch the generator hands it, `wake_packets` packets, so it
/// adds `wake_ns / wake_packets` to the router's CPU per packet. The
/// loss-free rate is where the demand of both meets the CPUs
/// ([`SharedCpus::solve`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SharedCpus {
    /// CPUs the router's threads and the other work share, in all.
    pub cpus: f64,
    /// CPU ns the other work spends per packet the router forwards.
    pub other_ns: f64,
    /// The most of a core each router thread gets (0-1].
    pub thread_share: f64,
    /// CPU ns a router thread spends per wake-up beyond its packets (0:
    /// no term).
    pub wake_ns: f64,
    /// Packets a router thread takes per wake-up when the CPUs are full
    /// (0: no term).
    pub wake_packets: f64,
}

/// What [`SharedCpus::solve`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedRate {
    /// Packets/s: the highest rate both the router and the other work
    /// keep up with.
    pub rate: f64,
    /// CPU-seconds per second the router's threads use at `rate`, their
    /// wake-ups included.
    pub router_cpus: f64,
    /// CPU ns the router spends per packet on its threads' wake-ups
    /// ([`SharedCpus::wake_ns`] / [`SharedCpus::wake_packets`]).
    pub wake_ns_per_packet: f64,
    /// CPU-seconds per second the other work uses at `rate`.
    pub other_cpus: f64,
    /// What set the rate: "threads" (each router thread at its share of
    /// a core) or "cpus" (the router's and the other work's demand fill
    /// the CPUs).
    pub limit: &'static str,
}

impl SharedCpus {
    /// The CPU ns a router spends per packet on its threads' wake-ups:
    /// `wake_ns` over `wake_packets`, 0 if either is 0.
    pub fn wake_ns_per_packet(&self) -> f64 {
        if self.wake_ns > 0.0 && self.wake_packets > 0.0 {
            self.wake_ns / self.wake_packets
        } else {
            0.0
        }
    }

    /// The rate of a router whose saturated rate on a core per thread is
    /// `saturated` and whose threads spend `thread_ns` CPU ns each per
    /// packet: the lower of `saturated` x `thread_share` (each thread
    /// at the share of a core it gets) and the rate r where
    /// r x (sum of `thread_ns` + the wake-ups' share
    /// ([`SharedCpus::wake_ns_per_packet`]) + `other_ns`) = `cpus` x 1e9
    /// (the router's and the other work's demand fill the CPUs). All are
    /// CPU time, so the answer does not depend on how loaded the machine
    /// was when the terms were measured.
    pub fn solve(&self, saturated: f64, thread_ns: &[f64]) -> SharedRate {
        let wake = self.wake_ns_per_packet();
        let router_ns: f64 = thread_ns.iter().sum::<f64>() + wake;
        let by_threads = saturated.max(0.0) * self.thread_share.clamp(0.0, 1.0);
        let per_packet = router_ns + self.other_ns.max(0.0);
        let by_cpus = if per_packet > 0.0 {
            self.cpus.max(0.0) * 1e9 / per_packet
        } else {
            f64::INFINITY
        };
        let (rate, limit) = if by_cpus < by_threads {
            (by_cpus, "cpus")
        } else {
            (by_threads, "threads")
        };
        SharedRate {
            rate,
            router_cpus: rate * router_ns / 1e9,
            wake_ns_per_packet: wake,
            other_cpus: rate * self.other_ns.max(0.0) / 1e9,
            limit,
        }
    }
}

/// The wake-ups of a device router's threads on cores of their own (issue
/// 42, -j 1: the packet generator on another CPU). A thread that finds
/// its ring empty spins a while, then waits in `poll(2)`; each wait
/// costs it `wake_ns` CPU ns beyond its packets (the spin, the wait and
/// the wake-up). It waits only when it is idle: at a low rate about once
/// per `wake_packets` packets (a TPACKET_V2 ring hands over each frame
/// as it comes, so the bare receive path at 50,000 pps woke every 3-4
/// packets), and not at all once its packets fill the core, where each
/// read returns a full batch. So the wake-ups take only the time the
/// packets leave ([`IdleWakes::wakeups_at`]): they raise the CPU a
/// router spends per packet below saturation, not its saturated rate
/// ([`IdleWakes::saturated`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IdleWakes {
    /// CPU ns a thread spends per wake-up beyond its packets.
    pub wake_ns: f64,
    /// Packets per wake-up at a low rate: at most one wake-up per this
    /// many packets.
    pub wake_packets: f64,
}

impl IdleWakes {
    /// Wake-ups a second of a thread spending `per_packet_ns` CPU ns on
    /// each of `rate` packets a second: one per `wake_packets` packets,
    /// but no more than the time its packets leave of its core holds
    /// (each takes `wake_ns`), so none when the packets fill it.
    pub fn wakeups_at(&self, rate: f64, per_packet_ns: f64) -> f64 {
        if !(self.wake_ns > 0.0 && self.wake_packets > 0.0 && rate > 0.0) {
            return 0.0;
        }
        let idle_ns = (1e9 - rate * per_packet_ns.max(0.0)).max(0.0);
        (rate / self.wake_packets).min(idle_ns / self.wake_ns)
    }

    /// CPU ns per packet at `rate`: its own, and its wake-ups' share.
    pub fn ns_per_packet_at(&self, rate: f64, per_packet_ns: f64) -> f64 {
        if rate > 0.0 {
            per_packet_ns + self.wakeups_at(rate, per_packet_ns) * self.wake_ns / rate
        } else {
            per_packet_ns
        }
    }

    /// The rate at which the thread saturates: where its packets alone
    /// fill the core (1e9 / `per_packet_ns`), the wake-ups having then
    /// no time left.
    pub fn saturated(&self, per_packet_ns: f64) -> f64 {
        if per_packet_ns > 0.0 {
            1e9 / per_packet_ns
        } else {
            f64::INFINITY
        }
    }
}

impl std::str::FromStr for DeviceTerm {
    type Err = String;
    /// `METHOD:RX_NS:TX_NS[:RING_PPS]`, as `AF_PACKET:850:1200` or
    /// `AF_XDP:400:1300:450000`.
    fn from_str(s: &str) -> Result<DeviceTerm, String> {
        let bad = || {
            format!("'{s}': expected METHOD:RX_NS:TX_NS[:RING_PPS] (as AF_PACKET:850:1200 or AF_XDP:400:1300:450000)")
        };
        let f: Vec<&str> = s.split(':').collect();
        if f.len() < 3 || f.len() > 4 || f[0].trim().is_empty() {
            return Err(bad());
        }
        let ns = |v: &str| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        let ring_pps = match f.get(3) {
            None => None,
            Some(v) => Some(ns(v).filter(|x| *x > 0.0).ok_or_else(bad)?),
        };
        match (ns(f[1]), ns(f[2])) {
            (Some(rx_ns), Some(tx_ns)) => Ok(DeviceTerm {
                method: f[0].trim().to_string(),
                rx_ns,
                tx_ns,
                ring_pps,
            }),
            _ => Err(bad()),
        }
    }
}

impl App {
    /// This application with a device's costs: task `i` of `rx` receives
    /// `share` packets from a device per packet entering the router, and
    /// of `tx` sends `share` to one; each is charged the term per such
    /// packet (in cycles at the profile's clock, so it scales with the
    /// core share and the clock as the task's own cost does) and named
    /// with it, so the model's table shows it.
    ///
    /// The terms are CPU time (a thread's time on a CPU, as the hop's is
    /// pure time), while the task costs are wall-clock cycles at the
    /// timing run's share of a core: a term is charged as the cycles it
    /// would have taken at that share, so that any share scales both
    /// alike.
    pub fn with_devices(&self, term: &DeviceTerm, rx: &[(usize, f64)], tx: &[(usize, f64)]) -> App {
        let mut a = self.clone();
        let then = if self.core_share > 0.0 {
            self.core_share.min(1.0)
        } else {
            1.0
        };
        for (list, ns, what) in [(rx, term.rx_ns, "rx"), (tx, term.tx_ns, "tx")] {
            for &(i, share) in list {
                if let Some(t) = a.tasks.get_mut(i) {
                    t.cycles_per_packet += ns * share * self.tsc_ghz / then;
                    t.name = format!("{} + {} {what} {ns:.0} ns", t.name, term.method);
                }
            }
        }
        a
    }

    /// [`App::with_devices`] for the device-less twin of a device router
    /// (conf/fake-iprouter.click for conf/iprouter-veth.click): its
    /// sources stand for the FromDevice tasks and receive, and the tasks
    /// draining its queues stand for the ToDevice tasks and send, each in
    /// the share of the packets the profile saw it handle.
    pub fn with_device_twin(&self, term: &DeviceTerm) -> App {
        let entries: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].entry)
            .collect();
        let rx: Vec<(usize, f64)> = entries
            .iter()
            .map(|&i| {
                let p = self.tasks[i].packets;
                (
                    i,
                    if p > 0.0 {
                        p
                    } else {
                        1.0 / entries.len() as f64
                    },
                )
            })
            .collect();
        let mut tx: Vec<(usize, f64)> = Vec::new();
        for q in &self.queues {
            for &(i, share) in &q.consumers {
                match tx.iter_mut().find(|(j, _)| *j == i) {
                    Some((_, s)) => *s += share,
                    None => tx.push((i, share)),
                }
            }
        }
        self.with_devices(term, &rx, &tx)
    }

    /// Packets per entering packet that cross threads through queue `q`
    /// under `assign` (a thread per task), and per thread the crossing
    /// packets it sends or receives.
    pub fn crossings(&self, assign: &[usize], nthreads: usize) -> (f64, Vec<f64>) {
        let mut per_thread = vec![0.0; nthreads];
        let mut total = 0.0;
        for q in &self.queues {
            let out: f64 = q.consumers.iter().map(|c| c.1).sum();
            if out <= 0.0 {
                continue;
            }
            for &(p, n) in &q.producers {
                let tp = assign.get(p).copied().unwrap_or(0) % nthreads;
                for &(c, m) in &q.consumers {
                    let tc = assign.get(c).copied().unwrap_or(0) % nthreads;
                    if tp != tc {
                        let x = n * m / out;
                        total += x;
                        per_thread[tp] += x;
                        per_thread[tc] += x;
                    }
                }
            }
        }
        (total, per_thread)
    }

    /// Per entry task: its share of the packets entering the router (the
    /// timing run's mix); equal shares when the profile did not count them.
    pub fn entry_mix(&self) -> Vec<f64> {
        let n = self.tasks.len();
        let mut mix: Vec<f64> = self
            .tasks
            .iter()
            .map(|t| if t.entry { t.packets.max(0.0) } else { 0.0 })
            .collect();
        let mut s: f64 = mix.iter().sum();
        if s <= 0.0 {
            mix = self
                .tasks
                .iter()
                .map(|t| if t.entry { 1.0 } else { 0.0 })
                .collect();
            s = mix.iter().sum();
        }
        if s <= 0.0 {
            // No entry task known: every task its own origin, equally.
            return vec![1.0 / n.max(1) as f64; n];
        }
        mix.iter().map(|x| x / s).collect()
    }

    /// Per task, per entry task (its origin): the fraction of the task's
    /// packets that entered the router there, following the queues from
    /// producers to consumers. Tasks no flow reaches (timers, queues the
    /// profile saw nothing in) get the entering mix.
    pub fn origins(&self) -> Vec<Vec<f64>> {
        let n = self.tasks.len();
        let mix = self.entry_mix();
        let mut f = vec![vec![0.0; n]; n];
        for (k, t) in self.tasks.iter().enumerate() {
            if t.entry {
                f[k][k] = 1.0;
            }
        }
        // A chain of queues is at most n tasks deep.
        for _ in 0..n {
            let mut acc: Vec<Option<(Vec<f64>, f64)>> = vec![None; n];
            for q in &self.queues {
                let tot: f64 = q.producers.iter().map(|p| p.1.max(0.0)).sum();
                if tot <= 0.0 {
                    continue;
                }
                let mut m = vec![0.0; n];
                for &(p, w) in q.producers.iter().filter(|p| p.0 < n) {
                    for (o, x) in m.iter_mut().enumerate() {
                        *x += w.max(0.0) / tot * f[p][o];
                    }
                }
                for &(c, w) in q.consumers.iter().filter(|c| c.0 < n) {
                    if self.tasks[c].entry {
                        continue;
                    }
                    let w = w.max(0.0) + 1e-12;
                    let e = acc[c].get_or_insert_with(|| (vec![0.0; n], 0.0));
                    for (o, x) in e.0.iter_mut().enumerate() {
                        *x += w * m[o];
                    }
                    e.1 += w;
                }
            }
            let mut next = f.clone();
            for (c, a) in acc.into_iter().enumerate() {
                if let Some((v, w)) = a {
                    next[c] = v.iter().map(|x| x / w).collect();
                }
            }
            if next == f {
                break;
            }
            f = next;
        }
        for row in &mut f {
            if row.iter().sum::<f64>() <= 1e-12 {
                row.clone_from(&mix);
            }
        }
        f
    }

    /// Exactly what [`App::origins`] depends on: the tasks' entry flags
    /// and packets, the queues' producers and consumers.
    fn origins_key(&self) -> Vec<u64> {
        let mut k = Vec::with_capacity(2 * self.tasks.len() + 8 * self.queues.len() + 1);
        k.push(self.tasks.len() as u64);
        for t in &self.tasks {
            k.push(u64::from(t.entry));
            k.push(t.packets.to_bits());
        }
        for q in &self.queues {
            for side in [&q.producers, &q.consumers] {
                k.push(side.len() as u64);
                for &(i, w) in side.iter() {
                    k.push(i as u64);
                    k.push(w.to_bits());
                }
            }
        }
        k
    }

    /// [`App::origins`] as sparse rows (each task's non-zero origins),
    /// remembered (per thread) for the last App asked about: a placement
    /// search predicts one App under thousands of assignments, and the
    /// origins do not depend on the assignment. (Recomputed each time and
    /// walked densely, they were 20% and 38% of `paraclick parallelize`'s
    /// search time over 400 elements, and their allocations 25%.)
    pub fn origins_cached(&self) -> std::rc::Rc<Vec<Vec<(usize, f64)>>> {
        type Last = Option<(Vec<u64>, std::rc::Rc<Vec<Vec<(usize, f64)>>>)>;
        thread_local! {
            static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new(None) };
        }
        let key = self.origins_key();
        LAST.with(|c| {
            if let Some((k, v)) = &*c.borrow() {
                if *k == key {
                    return v.clone();
                }
            }
            let sparse: Vec<Vec<(usize, f64)>> = self
                .origins()
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .enumerate()
                        .filter(|&(_, x)| x != 0.0)
                        .collect()
                })
                .collect();
            let v = std::rc::Rc::new(sparse);
            *c.borrow_mut() = Some((key, v.clone()));
            v
        })
    }

    /// Per task: the share of the packets it pulls from queues that come
    /// from producers on other threads under `assign` (0 for a task that
    /// pulls from no queue).
    pub fn crossed_input(&self, assign: &[usize], nthreads: usize) -> Vec<f64> {
        let nthreads = nthreads.max(1);
        let th = |i: usize| assign.get(i).copied().unwrap_or(0) % nthreads;
        let n = self.tasks.len();
        let (mut crossed, mut all) = (vec![0.0; n], vec![0.0; n]);
        for q in &self.queues {
            let made: f64 = q.producers.iter().map(|p| p.1).sum();
            if made <= 0.0 {
                continue;
            }
            for &(c, mc) in q.consumers.iter().filter(|c| c.0 < n) {
                let other: f64 = q
                    .producers
                    .iter()
                    .filter(|p| th(p.0) != th(c))
                    .map(|p| p.1)
                    .sum();
                crossed[c] += mc * other / made;
                all[c] += mc;
            }
        }
        crossed
            .iter()
            .zip(&all)
            .map(|(&x, &a)| if a > 0.0 { (x / a).min(1.0) } else { 0.0 })
            .collect()
    }

    /// Per thread, per origin (entry task): ns of that thread's time per
    /// packet entering the router (at the timing run's mix) spent on
    /// packets that entered there: task costs split by [`App::origins`],
    /// plus crossing costs, over the thread's core share. A row's sum is
    /// the thread's stage latency in [`App::model`].
    pub fn thread_origin_ns(
        &self,
        machine: &Machine,
        assign: &[usize],
        nthreads: usize,
        w: &WhatIf,
    ) -> Vec<Vec<f64>> {
        let nthreads = nthreads.max(1);
        let n = self.tasks.len();
        let ghz = w.clock_ghz.unwrap_or(self.tsc_ghz);
        let tick_ns = 1.0 / ghz.max(1e-9);
        let f = self.origins_cached();
        let th = |i: usize| assign.get(i).copied().unwrap_or(0) % nthreads;
        let mut ns = vec![vec![0.0; n]; nthreads];
        let crossed = self.crossed_input(assign, nthreads);
        // Threads that run a source: their passes come round once per
        // burst the source sends, and a puller there runs as often, so
        // it takes no bigger batches than on one thread.
        let mut fed = vec![false; nthreads];
        for (k, task) in self.tasks.iter().enumerate() {
            if task.entry {
                fed[th(k)] = true;
            }
        }
        let mut mates = vec![0usize; nthreads];
        for k in 0..n {
            mates[th(k)] += 1;
        }
        for (k, task) in self.tasks.iter().enumerate() {
            // A puller whose producers are on other threads, alone with
            // other pullers on its thread, runs when they publish and
            // takes bigger batches (see `AppTask::crossing_factor`).
            let factor = if task.crossing_factor > 0.0 && !fed[th(k)] {
                1.0 - crossed[k] * (1.0 - task.crossing_factor)
            } else {
                1.0
            };
            // On a thread a source feeds, the worker loop comes round once
            // per burst and its pass is shared by the thread's tasks: by
            // fewer than in the timing run where fewer share the thread
            // (queue-unqueue's source alone on its thread paid the whole
            // pass per packet, which it had shared with the Unqueue).
            // Elsewhere the crossing factor holds a puller's per-run
            // costs as run alone on its thread.
            let pass = if fed[th(k)] && task.pass_mates > 0.0 {
                task.pass_cycles_per_packet * (task.pass_mates / mates[th(k)] as f64 - 1.0)
            } else {
                0.0
            };
            let cycles = (task.cycles_per_packet * factor + pass).max(0.0);
            for &(o, x) in &f[k] {
                ns[th(k)][o] += cycles * tick_ns * x;
            }
        }
        // Crossing: the measured hop is pure time (a core to itself); the
        // task costs are at the timing run's share, so it is scaled to
        // that share as they are.
        let then = if self.core_share > 0.0 {
            self.core_share.min(1.0)
        } else {
            1.0
        };
        for q in &self.queues {
            let out: f64 = q.consumers.iter().map(|c| c.1).sum();
            if out <= 0.0 {
                continue;
            }
            let (hp, hc) = machine.hop_ends_with(q.batch, w.line_ns, &q.line_growth);
            for &(p, np) in q.producers.iter().filter(|p| p.0 < n) {
                for &(c, mc) in q.consumers.iter().filter(|c| c.0 < n) {
                    let (tp, tc) = (th(p), th(c));
                    if tp == tc {
                        continue;
                    }
                    let x = np * mc / out / then;
                    for &(o, fo) in &f[p] {
                        ns[tp][o] += x * hp * fo;
                        ns[tc][o] += x * hc * fo;
                    }
                }
            }
        }
        for (t, row) in ns.iter_mut().enumerate() {
            if let Some(&share) = w.core_share.get(t) {
                if share > 0.0 {
                    row.iter_mut().for_each(|x| *x /= share);
                }
            }
        }
        ns
    }

    /// The forwarding rate when the sources run freely: the sources of a
    /// thread keep the profile's mix among themselves (the scheduler runs
    /// each once per round), but sources on different threads do not: a
    /// thread with sources is busy all the time, so the rate of each
    /// thread's sources solves, for every such thread t,
    /// sum over source threads g of rate_g x (t's ns per packet of g) = 1 s.
    /// If that leaves a thread without sources over-committed (its queues
    /// overflow), or has no non-negative solution, every rate is scaled
    /// down to what the busiest thread allows; the memory channel's
    /// saturation (`mem_ns` per packet, 80%) caps the sum likewise.
    pub fn free_running(
        &self,
        machine: &Machine,
        assign: &[usize],
        nthreads: usize,
        w: &WhatIf,
    ) -> FreeRun {
        let nthreads = nthreads.max(1);
        let n = self.tasks.len();
        let ns = self.thread_origin_ns(machine, assign, nthreads, w);
        let mix = self.entry_mix();
        let th = |i: usize| assign.get(i).copied().unwrap_or(0) % nthreads;
        // Source threads and their groups' share of the mix.
        let mut groups: Vec<(usize, f64)> = Vec::new();
        for o in (0..n).filter(|&o| mix[o] > 0.0) {
            match groups.iter_mut().find(|g| g.0 == th(o)) {
                Some(g) => g.1 += mix[o],
                None => groups.push((th(o), mix[o])),
            }
        }
        groups.sort_by_key(|g| g.0);
        // a[t][g]: ns of thread t per packet entering through group g.
        let a: Vec<Vec<f64>> = (0..nthreads)
            .map(|t| {
                groups
                    .iter()
                    .map(|&(gt, share)| {
                        (0..n)
                            .filter(|&o| mix[o] > 0.0 && th(o) == gt)
                            .map(|o| ns[t][o])
                            .sum::<f64>()
                            / share
                    })
                    .collect()
            })
            .collect();
        let fixed = |groups: &[(usize, f64)]| -> Vec<f64> {
            // The profile's mix: X packets/s in all, X x share per group.
            let worst = (0..nthreads)
                .map(|t| {
                    groups
                        .iter()
                        .enumerate()
                        .map(|(g, &(_, s))| s * a[t][g])
                        .sum::<f64>()
                })
                .fold(0.0f64, f64::max);
            let x = if worst > 0.0 { 1e9 / worst } else { 0.0 };
            groups.iter().map(|g| g.1 * x).collect()
        };
        let square: Vec<Vec<f64>> = groups.iter().map(|&(t, _)| a[t].clone()).collect();
        let (mut rates, mut how) = match solve(&square, &vec![1e9; groups.len()]) {
            Some(r) if r.iter().all(|&x| x >= 0.0 && x.is_finite()) => {
                (r, "sources free: each source thread saturated")
            }
            _ => (fixed(&groups), "sources held to the profile's mix"),
        };
        let load = |rates: &[f64]| -> Vec<f64> {
            (0..nthreads)
                .map(|t| {
                    rates
                        .iter()
                        .enumerate()
                        .map(|(g, r)| r * a[t][g])
                        .sum::<f64>()
                        / 1e9
                })
                .collect()
        };
        let worst = load(&rates).into_iter().fold(0.0f64, f64::max);
        if worst > 1.0 + 1e-9 {
            rates.iter_mut().for_each(|r| *r /= worst);
            how = "sources free, slowed to the busiest thread";
        }
        let bytes = w.packet_bytes.unwrap_or(self.packet_bytes);
        let mem_ns = 2.0 * bytes / machine.memory_gbs.max(1e-9);
        let sum: f64 = rates.iter().sum();
        let mem_util = sum * mem_ns / 1e9;
        if mem_util > 0.8 {
            rates.iter_mut().for_each(|r| *r *= 0.8 / mem_util);
            how = "sources free, memory over-subscribed";
        }
        FreeRun {
            group_rates: groups
                .iter()
                .map(|g| g.0)
                .zip(rates.iter().copied())
                .collect(),
            loads: load(&rates),
            mlffr: rates.iter().sum(),
            how,
        }
    }

    /// The predicted MLFFR: [`App::free_running`] when the sources run
    /// freely, else the fixed-mix pipeline of [`App::model`].
    pub fn predict(&self, machine: &Machine, assign: &[usize], nthreads: usize, w: &WhatIf) -> f64 {
        if self.free_sources {
            self.free_running(machine, assign, nthreads, w).mlffr
        } else {
            self.model(machine, assign, nthreads, w).evaluate().mlffr
        }
    }

    /// The model of this application on `nthreads` threads of `machine`
    /// with the given task placement.
    pub fn model(&self, machine: &Machine, assign: &[usize], nthreads: usize, w: &WhatIf) -> Model {
        let nthreads = nthreads.max(1);
        let ghz = w.clock_ghz.unwrap_or(self.tsc_ghz);
        let bytes = w.packet_bytes.unwrap_or(self.packet_bytes);
        let channels = vec![Channel {
            name: "Memory".into(),
            saturation: 0.8,
            cycle_ns: 0.0,
        }];
        let ns = self.thread_origin_ns(machine, assign, nthreads, w);
        let mut stages: Vec<Stage> = (0..nthreads)
            .map(|t| {
                let names: Vec<&str> = self
                    .tasks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| assign.get(*i).copied().unwrap_or(0) % nthreads == t)
                    .map(|(_, x)| x.name.as_str())
                    .collect();
                Stage::new(
                    &format!("thread {t}"),
                    &if names.is_empty() {
                        "idle".to_string()
                    } else {
                        names.join(", ")
                    },
                    ns[t].iter().sum(),
                    1.0,
                    1,
                )
            })
            .collect();
        // Memory: each packet written once (made or received) and read
        // once (sent), spread over the threads by their share of the work.
        let total: f64 = stages.iter().map(|s| s.latency_ns).sum::<f64>().max(1e-9);
        let mem_ns = 2.0 * bytes / machine.memory_gbs.max(1e-9);
        for s in &mut stages {
            s.uses_ns[0] = mem_ns * s.latency_ns / total;
        }
        Model {
            title: format!(
                "{} on {} thread(s) of {} ({:.2} GHz{})",
                self.name,
                nthreads,
                machine.cpu,
                ghz,
                if w.clock_ghz.is_some() {
                    ", what-if clock"
                } else {
                    ""
                }
            ),
            channels,
            stages,
        }
    }
}

/// Solves `a x = b` (Gaussian elimination with partial pivoting); None
/// if `a` is singular.
fn solve(a: &[Vec<f64>], b: &[f64]) -> Option<Vec<f64>> {
    let n = b.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .zip(b)
        .map(|(row, &y)| {
            let mut r = row.clone();
            r.push(y);
            r
        })
        .collect();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() < 1e-12 {
            return None;
        }
        m.swap(c, p);
        let pivot = m[c].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != c {
                let k = row[c] / pivot[c];
                for (x, y) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= k * y;
                }
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine {
            cpu: "test".into(),
            cores: 2,
            tsc_ghz: 2.0,
            line_transfer_ns: 50.0,
            local_ring_ns: 20.0,
            cross_ring_ns: 40.0,
            crossing_ns: 30.0,
            memory_gbs: 10.0,
            af_packet_ns: None,
            tap_ns: None,
            calibrated_at: 0,
            queue_hop: Vec::new(),
        }
    }

    /// Two sources (tasks 0 and 1) and two queue-draining tasks (2 and 3),
    /// with the given names and cycles per packet: queue 0 is drained by
    /// task 2 and queue 1 by task 3; `crossed` feeds queue 0 from source 1
    /// and queue 1 from source 0 (fake-iprouter's eth0 packets leave on
    /// eth1), otherwise each source feeds its own queue.
    fn two_sources(name: &str, tasks: [(&str, f64); 4], crossed: bool) -> App {
        let queue = |q: usize, producer: usize| AppQueue {
            name: format!("q{q}"),
            producers: vec![(producer, 0.5)],
            consumers: vec![(2 + q, 0.5)],
            batch: 1.0,
            line_growth: LineTerm::default(),
        };
        App {
            name: name.into(),
            tasks: tasks
                .iter()
                .enumerate()
                .map(|(i, &(n, c))| AppTask {
                    name: n.into(),
                    cycles_per_packet: c,
                    entry: i < 2,
                    packets: 0.5,
                    crossing_factor: 0.0,
                    pass_cycles_per_packet: 0.0,
                    pass_mates: 0.0,
                })
                .collect(),
            queues: if crossed {
                vec![queue(0, 1), queue(1, 0)]
            } else {
                vec![queue(0, 0), queue(1, 1)]
            },
            packet_bytes: 64.0,
            tsc_ghz: 2.0,
            core_share: 1.0,
            free_sources: true,
        }
    }

    /// Two sources feeding two queues crosswise, each queue drained by its
    /// own task.
    fn crosswise() -> App {
        let t = [
            ("src0", 400.0),
            ("src1", 400.0),
            ("d0", 100.0),
            ("d1", 100.0),
        ];
        two_sources("x", t, true)
    }

    /// A device router's twin on one thread: a source (the FromDevice)
    /// and the task draining its queue (the ToDevice), 100 cycles each
    /// at 2 GHz: 100 ns a packet, 10 Mpps. The device terms add their ns
    /// per packet to the task that pays them, show in the table, and the
    /// rate follows: 400 ns to receive and 500 to send give 1000 ns, 1
    /// Mpps; twice the receive cost, 1400 ns.
    #[test]
    fn device_terms_are_charged_to_the_tasks_that_pay_them_and_shown() {
        let app = App {
            name: "twin".into(),
            tasks: vec![
                AppTask {
                    name: "src".into(),
                    cycles_per_packet: 100.0,
                    entry: true,
                    packets: 1.0,
                    ..AppTask::default()
                },
                AppTask {
                    name: "d".into(),
                    cycles_per_packet: 100.0,
                    packets: 1.0,
                    ..AppTask::default()
                },
            ],
            queues: vec![AppQueue {
                name: "q".into(),
                producers: vec![(0, 1.0)],
                consumers: vec![(1, 1.0)],
                batch: 32.0,
                line_growth: LineTerm::default(),
            }],
            packet_bytes: 64.0,
            tsc_ghz: 2.0,
            core_share: 1.0,
            free_sources: false,
        };
        let m = machine();
        let w = WhatIf::default();
        let rate = |a: &App| a.model(&m, &[0, 0], 1, &w).evaluate().mlffr;
        let base = rate(&app);
        assert!((base - 10e6).abs() < 1e3, "{base}");
        let t: DeviceTerm = "AF_PACKET:400:500".parse().unwrap();
        let dev = app.with_device_twin(&t);
        assert!((rate(&dev) - 1e6).abs() < 1e2, "{}", rate(&dev));
        let model = dev.model(&m, &[0, 0], 1, &w);
        let text = model.render(&model.evaluate());
        assert!(text.contains("src + AF_PACKET rx 400 ns"), "{text}");
        assert!(text.contains("d + AF_PACKET tx 500 ns"), "{text}");
        let slow = app.with_device_twin(&"AF_PACKET:800:500".parse().unwrap());
        assert!((rate(&slow) - 1e9 / 1400.0).abs() < 1e2, "{}", rate(&slow));
        // Two threads, source and drain apart: each thread pays its own
        // end (the hop's crossing added to both), so the slower end, the
        // sender, sets the rate.
        let two = dev.model(&m, &[0, 1], 2, &w).evaluate().mlffr;
        assert!(two > rate(&dev) && two < 1e9 / 550.0, "{two}");
        for bad in [
            "AF_PACKET:1",
            "x:-1:2",
            ":1:2",
            "A:1:2:3:4",
            "A:nan:1",
            "A:1:2:0",
            "A:1:2:x",
            "A:1:2:inf",
        ] {
            assert!(bad.parse::<DeviceTerm>().is_err(), "{bad}");
        }
        let t: DeviceTerm = "AF_XDP:400:1300:450000".parse().unwrap();
        assert_eq!(
            (t.rx_ns, t.tx_ns, t.ring_pps),
            (400.0, 1300.0, Some(450000.0))
        );
        assert_eq!(
            "AF_XDP:400:1300".parse::<DeviceTerm>().unwrap().ring_pps,
            None
        );
    }

    /// Two independent forwarding paths, as conf/iprouter-veth-2q.click's
    /// (each thread receives from its own queue and sends what it
    /// received): half the packets enter through each source.
    fn two_paths() -> App {
        let task = |name: &str, entry: bool| AppTask {
            name: name.into(),
            cycles_per_packet: 100.0,
            entry,
            packets: 0.5,
            ..AppTask::default()
        };
        let queue = |name: &str, p: usize, c: usize| AppQueue {
            name: name.into(),
            producers: vec![(p, 0.5)],
            consumers: vec![(c, 0.5)],
            batch: 32.0,
            line_growth: LineTerm::default(),
        };
        App {
            name: "two paths".into(),
            tasks: vec![
                task("src_a", true),
                task("d_a", false),
                task("src_b", true),
                task("d_b", false),
            ],
            queues: vec![queue("q_a", 0, 1), queue("q_b", 2, 3)],
            packet_bytes: 64.0,
            tsc_ghz: 2.0,
            core_share: 1.0,
            free_sources: false,
        }
    }

    #[test]
    fn device_terms_at_one_and_two_threads_and_the_ring_term() {
        let m = machine();
        let w = WhatIf::default();
        let dev = two_paths().with_device_twin(&"AF_PACKET:400:500".parse().unwrap());
        let rate = |assign: &[usize], n: usize| dev.model(&m, assign, n, &w).evaluate().mlffr;
        // -j 1: 4 x 100 cycles at 2 GHz (200 ns) plus, per packet
        // entering, its receive (400 ns) and its send (500 ns): 1,100 ns.
        let one = rate(&[0, 0, 0, 0], 1);
        assert!((one - 1e9 / 1100.0).abs() < 1e-3, "{one}");
        // -j 2, a path per thread: each thread handles half the packets,
        // 100 + 200 + 250 ns per packet entering: 550 ns, twice the rate.
        let two = rate(&[0, 0, 1, 1], 2);
        assert!((two - 1e9 / 550.0).abs() < 1e-3, "{two}");
        // The wake-up term: without it, or above the saturated rate, the
        // prediction is the saturated rate; below it, the receive rings
        // overflow first and it is the prediction.
        let ring = |s: &str| s.parse::<DeviceTerm>().unwrap();
        assert_eq!(ring("AF_PACKET:400:500").loss_free(two), two);
        assert_eq!(ring("AF_PACKET:400:500:5000000").loss_free(two), two);
        assert_eq!(ring("AF_PACKET:400:500:5000000").loss_free(one), one);
        assert_eq!(ring("AF_PACKET:400:500:1000000").loss_free(two), 1e6);
        assert_eq!(ring("AF_PACKET:400:500:1000000").loss_free(one), one);
        // A longer wake-up latency (a lower ring rate) lowers it.
        assert!(
            ring("AF_PACKET:400:500:800000").loss_free(two)
                < ring("AF_PACKET:400:500:1000000").loss_free(two)
        );
    }

    #[test]
    fn device_terms_are_cpu_time_whatever_share_the_timing_run_had() {
        // The timing run had half a core: its 100-cycle tasks take 50
        // cycles of CPU. On a dedicated core (a share twice the timing
        // run's) a task costs 25 ns, and the terms, CPU time, their own
        // 400 and 500 ns: 4 x 25 + 400 + 500 = 1,000 ns per packet.
        let mut app = two_paths();
        app.core_share = 0.5;
        let dev = app.with_device_twin(&"AF_PACKET:400:500".parse().unwrap());
        let w = WhatIf {
            core_share: vec![2.0],
            ..WhatIf::default()
        };
        let one = dev.model(&machine(), &[0, 0, 0, 0], 1, &w).evaluate().mlffr;
        assert!((one - 1e6).abs() < 1e-3, "{one}");
    }

    /// A device router's threads on a core each (the timing run had
    /// `share` of a core): the saturated rate and each thread's CPU ns
    /// per packet, as `paraclick model --device --dedicated` takes them.
    fn dedicated_threads(share: f64, term: &str, assign: &[usize], n: usize) -> (f64, Vec<f64>) {
        let mut app = two_paths();
        app.core_share = share;
        let dev = app.with_device_twin(&term.parse().unwrap());
        let w = WhatIf {
            core_share: vec![1.0 / share; n],
            ..WhatIf::default()
        };
        let model = dev.model(&machine(), assign, n, &w);
        let ns = model.stages.iter().map(|s| s.latency_ns).collect();
        (model.evaluate().mlffr, ns)
    }

    #[test]
    fn idle_wake_ups_take_only_the_time_the_packets_leave() {
        // -j 1: both paths on one core, 1,100 ns a packet entering (the
        // per-packet receive term in it): saturated 909,091 pps.
        let (sat, ns) = dedicated_threads(1.0, "AF_PACKET:400:500", &[0, 0, 0, 0], 1);
        assert_eq!(ns.len(), 1);
        assert!((ns[0] - 1_100.0).abs() < 1e-9, "{ns:?}");
        // A V2 ring's thread: 20 us a wake-up beyond its packets, one
        // wake-up per 4 packets at a low rate (5,000 ns a packet then).
        let w = IdleWakes {
            wake_ns: 20_000.0,
            wake_packets: 4.0,
        };
        // At saturation the packets fill the core: no wake-ups, the
        // rate the per-packet terms give. Charged per packet they would
        // make it 1e9 / 6,100 = 164 kpps.
        assert!((w.saturated(ns[0]) - sat).abs() < 1e-6, "{sat}");
        assert_eq!(w.wakeups_at(sat, ns[0]), 0.0);
        assert!((w.ns_per_packet_at(sat, ns[0]) - 1_100.0).abs() < 1e-9);
        // At 50,000 pps the traffic sets them: 12,500 a second, 0.25 of
        // the core, 6,100 ns a packet in all.
        assert!((w.wakeups_at(50_000.0, ns[0]) - 12_500.0).abs() < 1e-9);
        assert!((w.ns_per_packet_at(50_000.0, ns[0]) - 6_100.0).abs() < 1e-9);
        // At 800,000 pps the packets take 0.88 of the core: the 0.12 s
        // left hold 6,000 wake-ups (not 200,000): 1,250 ns a packet.
        assert!((w.wakeups_at(800_000.0, ns[0]) - 6_000.0).abs() < 1e-6);
        assert!((w.ns_per_packet_at(800_000.0, ns[0]) - 1_250.0).abs() < 1e-6);
        // Never more than the core: packets and wake-ups at most 1 s a
        // second, at any rate; fewer wake-ups as the rate nears
        // saturation.
        let mut last = f64::INFINITY;
        for r in [600_000.0, 700_000.0, 800_000.0, 900_000.0, sat] {
            let v = w.wakeups_at(r, ns[0]);
            assert!(r * ns[0] + v * w.wake_ns <= 1e9 + 1e-3, "{r}");
            assert!(v < last, "{r}: {v} >= {last}");
            last = v;
        }
        // No term: the per-packet cost alone.
        let none = IdleWakes {
            wake_ns: 0.0,
            wake_packets: 4.0,
        };
        assert_eq!(none.ns_per_packet_at(50_000.0, ns[0]), ns[0]);
    }

    #[test]
    fn shared_cpus_the_rate_where_the_router_and_the_generator_fill_them() {
        // -j 2, a path per thread: each thread 550 ns per packet entering
        // (100 + 200 + 250), 1,100 ns in all; saturated 1.818 Mpps.
        let (sat, ns) = dedicated_threads(1.0, "AF_PACKET:400:500", &[0, 0, 1, 1], 2);
        assert!((sat - 1e9 / 550.0).abs() < 1e-3, "{sat}");
        assert_eq!(ns.len(), 2);
        assert!(ns.iter().all(|x| (x - 550.0).abs() < 1e-9), "{ns:?}");
        // A generator on the same two CPUs spending 900 ns per packet:
        // r x (1,100 + 900) = 2 s: 1 Mpps, the router using 1.1 CPUs and
        // the generator 0.9.
        let gen = SharedCpus {
            cpus: 2.0,
            other_ns: 900.0,
            thread_share: 1.0,
            wake_ns: 0.0,
            wake_packets: 0.0,
        };
        let r = gen.solve(sat, &ns);
        assert!((r.rate - 1e6).abs() < 1e-3, "{r:?}");
        assert_eq!(r.limit, "cpus");
        assert!((r.router_cpus - 1.1).abs() < 1e-9, "{r:?}");
        assert!((r.other_cpus - 0.9).abs() < 1e-9, "{r:?}");
        assert!((r.router_cpus + r.other_cpus - gen.cpus).abs() < 1e-9);
        // A generator with a CPU of its own besides (three in all, as at
        // -j 1 on the test bed) leaves the threads the limit.
        let light = SharedCpus {
            cpus: 3.0,
            other_ns: 100.0,
            thread_share: 1.0,
            wake_ns: 0.0,
            wake_packets: 0.0,
        };
        let r = light.solve(sat, &ns);
        assert_eq!(r.limit, "threads");
        assert!((r.rate - sat).abs() < 1e-3, "{r:?}");
        // Under a fair scheduler next to a spinning generator each
        // thread gets half its core: half the saturated rate, unless the
        // CPUs run out first.
        let fair = SharedCpus {
            thread_share: 0.5,
            ..light.clone()
        };
        let r = fair.solve(sat, &ns);
        assert!((r.rate - sat / 2.0).abs() < 1e-3, "{r:?}");
        assert_eq!(r.limit, "threads");
        // Nothing else on the CPUs, a core per thread: the saturated rate.
        let alone = SharedCpus {
            cpus: 2.0,
            other_ns: 0.0,
            thread_share: 1.0,
            wake_ns: 0.0,
            wake_packets: 0.0,
        };
        assert!((alone.solve(sat, &ns).rate - sat).abs() < 1e-3);
    }

    #[test]
    fn shared_cpus_terms_move_the_prediction_the_right_way() {
        let gen = |other_ns: f64, cpus: f64| SharedCpus {
            cpus,
            other_ns,
            thread_share: 1.0,
            wake_ns: 0.0,
            wake_packets: 0.0,
        };
        let at = |term: &str, g: &SharedCpus| {
            let (sat, ns) = dedicated_threads(1.0, term, &[0, 0, 1, 1], 2);
            g.solve(sat, &ns).rate
        };
        let base = at("AF_PACKET:400:500", &gen(900.0, 2.0));
        // A dearer generator, fewer CPUs, a dearer -j 2 receive or
        // transmit term: each lowers the rate; more CPUs raise it.
        assert!(at("AF_PACKET:400:500", &gen(1200.0, 2.0)) < base);
        assert!(at("AF_PACKET:400:500", &gen(900.0, 1.5)) < base);
        assert!(at("AF_PACKET:600:500", &gen(900.0, 2.0)) < base);
        assert!(at("AF_PACKET:400:700", &gen(900.0, 2.0)) < base);
        assert!(at("AF_PACKET:400:500", &gen(900.0, 3.0)) > base);
    }

    #[test]
    fn shared_cpus_charge_each_wake_up_once_per_batch() {
        // The two-path router of the tests above (1,100 ns a packet over
        // both threads) and a generator of 300 ns a packet on its two
        // CPUs; each thread spends 25,600 ns a wake-up beyond its
        // packets (a 20 us spin, the sleep and the wake-up) and takes
        // 64 packets a wake-up: 400 ns a packet more, so
        // r x (1,100 + 400 + 300) = 2 s: 1,111,111 pps, the router using
        // 1.667 CPUs (its wake-ups 0.444 of them).
        let (sat, ns) = dedicated_threads(1.0, "AF_XDP:400:500", &[0, 0, 1, 1], 2);
        let g = SharedCpus {
            cpus: 2.0,
            other_ns: 300.0,
            thread_share: 1.0,
            wake_ns: 25_600.0,
            wake_packets: 64.0,
        };
        assert!((g.wake_ns_per_packet() - 400.0).abs() < 1e-9);
        let r = g.solve(sat, &ns);
        assert_eq!(r.limit, "cpus");
        assert!((r.rate - 2e9 / 1_800.0).abs() < 1e-3, "{r:?}");
        assert!((r.wake_ns_per_packet - 400.0).abs() < 1e-9, "{r:?}");
        assert!(
            (r.router_cpus - r.rate * 1_500.0 / 1e9).abs() < 1e-9,
            "{r:?}"
        );
        assert!((r.router_cpus + r.other_cpus - 2.0).abs() < 1e-9, "{r:?}");
        // Bigger batches spread the wake-up over more packets: twice the
        // batch, half the share (200 ns), a higher rate.
        let big = SharedCpus {
            wake_packets: 128.0,
            ..g.clone()
        };
        let rb = big.solve(sat, &ns);
        assert!((rb.rate - 2e9 / 1_600.0).abs() < 1e-3, "{rb:?}");
        // Either input 0: no term, the rate of the per-packet sum alone.
        for none in [
            SharedCpus {
                wake_packets: 0.0,
                ..g.clone()
            },
            SharedCpus {
                wake_ns: 0.0,
                ..g.clone()
            },
        ] {
            let r0 = none.solve(sat, &ns);
            assert!((r0.rate - 2e9 / 1_400.0).abs() < 1e-3, "{r0:?}");
            assert_eq!(r0.wake_ns_per_packet, 0.0);
        }
    }

    #[test]
    fn shared_cpus_are_cpu_time_whatever_share_the_timing_run_had() {
        // The same router timed with a whole core, half of one and a
        // fifth: on a core per thread its threads cost the same CPU ns,
        // so the shared rate is the same.
        let g = SharedCpus {
            cpus: 2.0,
            other_ns: 900.0,
            thread_share: 1.0,
            wake_ns: 0.0,
            wake_packets: 0.0,
        };
        let rates: Vec<f64> = [1.0, 0.5, 0.2]
            .iter()
            .map(|&share| {
                // The timing run's cycles are wall cycles at its share.
                let (sat, ns) = {
                    let mut app = two_paths();
                    for t in &mut app.tasks {
                        t.cycles_per_packet /= share;
                    }
                    app.core_share = share;
                    let dev = app.with_device_twin(&"AF_PACKET:400:500".parse().unwrap());
                    let w = WhatIf {
                        core_share: vec![1.0 / share; 2],
                        ..WhatIf::default()
                    };
                    let model = dev.model(&machine(), &[0, 0, 1, 1], 2, &w);
                    let ns: Vec<f64> = model.stages.iter().map(|s| s.latency_ns).collect();
                    (model.evaluate().mlffr, ns)
                };
                g.solve(sat, &ns).rate
            })
            .collect();
        for r in &rates {
            assert!((r - 1e6).abs() < 1e-3, "{rates:?}");
        }
    }

    #[test]
    fn one_thread_is_the_sum_of_the_tasks() {
        let app = crosswise();
        let m = app.model(&machine(), &[0, 0, 0, 0], 1, &WhatIf::default());
        let ev = m.evaluate();
        // 1000 cycles at 2 GHz: 500 ns per packet, 2 Mpps.
        assert!((m.stages[0].latency_ns - 500.0).abs() < 1e-9);
        assert!((ev.mlffr - 2e6).abs() < 1.0);
        assert_eq!(app.crossings(&[0, 0, 0, 0], 1).0, 0.0);
    }

    #[test]
    fn placement_decides_what_crosses() {
        let app = crosswise();
        // Each source with the drain of its own packets: nothing crosses.
        let good = [0, 1, 1, 0];
        assert_eq!(app.crossings(&good, 2).0, 0.0);
        let ev = app
            .model(&machine(), &good, 2, &WhatIf::default())
            .evaluate();
        assert!((ev.mlffr - 4e6).abs() < 1.0, "{}", ev.mlffr);
        // Sources on one thread, drains on the other: every packet crosses
        // and each end pays 30 ns.
        let split = [0, 0, 1, 1];
        let (total, per) = app.crossings(&split, 2);
        assert!((total - 1.0).abs() < 1e-9);
        assert_eq!(per, vec![1.0, 1.0]);
        let m = app.model(&machine(), &split, 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 430.0).abs() < 1e-9);
        assert!((m.stages[1].latency_ns - 130.0).abs() < 1e-9);
        assert!((m.evaluate().mlffr - 1e9 / 430.0).abs() < 1.0);
        // A measured hop curve replaces the ring's figure, by batch size.
        let mut mach = machine();
        mach.queue_hop = vec![
            crate::machine::HopPoint::both(1.0, 80.0),
            crate::machine::HopPoint::both(32.0, 10.0),
        ];
        let m = app.model(&mach, &split, 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 480.0).abs() < 1e-9);
        let mut big = app.clone();
        big.queues.iter_mut().for_each(|q| q.batch = 32.0);
        let m = big.model(&mach, &split, 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 410.0).abs() < 1e-9);
    }

    #[test]
    fn a_pass_shared_by_fewer_tasks_costs_each_more() {
        // Of each task's 400/100 cycles per entering packet, 40 are the
        // worker loop's, charged per run in a timing run of 4 tasks on one
        // thread. On one thread nothing changes; with 2 tasks a thread
        // (each source with its drain) a pass is shared by 2, so each task
        // pays 40 x (4/2 - 1) = 40 more: a thread's 500 cycles (250 ns at
        // 2 GHz) become 580 (290 ns).
        let mut app = crosswise();
        for t in &mut app.tasks {
            t.pass_cycles_per_packet = 40.0;
            t.pass_mates = 4.0;
        }
        let one = app.model(&machine(), &[0, 0, 0, 0], 1, &WhatIf::default());
        assert!((one.stages[0].latency_ns - 500.0).abs() < 1e-9);
        let good = [0, 1, 1, 0];
        let m = app.model(&machine(), &good, 2, &WhatIf::default());
        assert!(
            (m.stages[0].latency_ns - 290.0).abs() < 1e-9,
            "{}",
            m.stages[0].latency_ns
        );
        // Unknown mates: no correction.
        for t in &mut app.tasks {
            t.pass_mates = 0.0;
        }
        let m = app.model(&machine(), &good, 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 250.0).abs() < 1e-9);
    }

    #[test]
    fn what_if_clock_scales_time() {
        let app = crosswise();
        let w = WhatIf {
            clock_ghz: Some(4.0),
            ..WhatIf::default()
        };
        let ev = app.model(&machine(), &[0, 0, 0, 0], 1, &w).evaluate();
        assert!((ev.mlffr - 4e6).abs() < 1.0);
        // Half a core for the second thread: it is twice as slow.
        let w = WhatIf {
            core_share: vec![1.0, 0.5],
            ..WhatIf::default()
        };
        let m = app.model(&machine(), &[0, 1, 1, 0], 2, &w);
        assert!((m.stages[1].latency_ns - 500.0).abs() < 1e-9);
    }

    /// vpn-bench's shape: two independent flows, each a source and the
    /// Unqueue draining its own queue; one flow costs twice the other.
    fn two_flows() -> App {
        let t = [
            ("out_src", 200.0),
            ("in_src", 400.0),
            ("u0", 20.0),
            ("u1", 20.0),
        ];
        two_sources("vpn", t, false)
    }

    #[test]
    fn origins_follow_the_queues() {
        let app = crosswise();
        let f = app.origins();
        // d0 drains q0, fed by src1 only; d1 drains q1, fed by src0.
        assert_eq!(f[2], vec![0.0, 1.0, 0.0, 0.0]);
        assert_eq!(f[3], vec![1.0, 0.0, 0.0, 0.0]);
        assert_eq!(f[0], vec![1.0, 0.0, 0.0, 0.0]);
        // A queue with two producers: its consumer's packets by their shares.
        let mut m = app.clone();
        m.queues[0].producers = vec![(0, 0.1), (1, 0.3)];
        let f = m.origins();
        assert!((f[2][0] - 0.25).abs() < 1e-12 && (f[2][1] - 0.75).abs() < 1e-12);
        // A task no flow reaches gets the entering mix.
        m.queues.clear();
        assert_eq!(m.origins()[2], vec![0.5, 0.5, 0.0, 0.0]);
    }

    #[test]
    fn free_sources_on_their_own_threads_each_run_at_their_threads_rate() {
        let app = two_flows();
        let w = WhatIf::default();
        // Each flow on its own thread: thread 0 spends (200 + 20) cycles
        // per entering packet on out's packets, half of all: 440 cycles =
        // 220 ns per out packet, 4.545 Mpps; in's: 840 cycles, 2.381 Mpps.
        let assign = [0, 1, 0, 1];
        let fr = app.free_running(&machine(), &assign, 2, &w);
        let expect = 1e9 / 220.0 + 1e9 / 420.0;
        assert!((fr.mlffr - expect).abs() < 1.0, "{fr:?}");
        assert!(fr.loads.iter().all(|l| (l - 1.0).abs() < 1e-9), "{fr:?}");
        // The fixed mix (the pipeline) is held to the slower flow: 2 x 2.381.
        let ev = app.model(&machine(), &assign, 2, &w).evaluate();
        assert!((ev.mlffr - 2.0 * 1e9 / 420.0).abs() < 1.0);
        assert_eq!(app.predict(&machine(), &assign, 2, &w), fr.mlffr);
        let mut fixed = app.clone();
        fixed.free_sources = false;
        assert_eq!(fixed.predict(&machine(), &assign, 2, &w), ev.mlffr);
        // One thread, or both sources on one thread: the mix holds and the
        // free-running rate is the pipeline's.
        for (a, n) in [([0, 0, 0, 0], 1), ([0, 0, 1, 1], 2)] {
            let fr = app.free_running(&machine(), &a, n, &w);
            let ev = app.model(&machine(), &a, n, &w).evaluate();
            assert!(
                (fr.mlffr - ev.mlffr).abs() < 1.0,
                "{a:?}: {fr:?} {}",
                ev.mlffr
            );
        }
    }

    #[test]
    fn free_sources_sharing_a_thread_solve_together() {
        // out's drain on in's thread: thread 1 serves both flows, so out's
        // rate takes from in's. Thread 0: 400 cycles = 200 ns per out packet
        // (plus 15 ns crossing); thread 1: 840 cycles = 420 ns per in packet
        // and 40 cycles = 20 ns per out packet (plus 15 ns crossing).
        let app = two_flows();
        let mut mach = machine();
        mach.queue_hop = vec![crate::machine::HopPoint {
            batch: 1.0,
            ns: 99.0,
            producer_ns: Some(15.0),
            consumer_ns: Some(15.0),
            per_line: None,
            line_ns: None,
        }];
        let fr = app.free_running(&mach, &[0, 1, 1, 1], 2, &WhatIf::default());
        let r_out = 1e9 / 215.0;
        let r_in = (1e9 - r_out * 35.0) / 420.0;
        assert!((fr.mlffr - (r_out + r_in)).abs() < 1.0, "{fr:?}");
        assert_eq!(fr.group_rates.len(), 2);
        assert!((fr.group_rates[0].1 - r_out).abs() < 1.0);
        // A drain thread without sources that cannot keep up slows them.
        let mut heavy = app.clone();
        heavy.tasks[2].cycles_per_packet = 2000.0;
        let fr = heavy.free_running(&machine(), &[0, 0, 1, 1], 2, &WhatIf::default());
        assert!(fr.loads.iter().all(|&l| l <= 1.0 + 1e-9), "{fr:?}");
        assert!(fr.loads.iter().any(|&l| (l - 1.0).abs() < 1e-9), "{fr:?}");
    }

    #[test]
    fn crossing_ends_are_charged_where_they_are_paid() {
        let app = crosswise();
        let mut mach = machine();
        mach.queue_hop = vec![crate::machine::HopPoint {
            batch: 1.0,
            ns: 99.0,
            producer_ns: Some(40.0),
            consumer_ns: Some(10.0),
            per_line: None,
            line_ns: None,
        }];
        // Sources on thread 0 (producers), drains on 1 (consumers): every
        // packet crosses once.
        let m = app.model(&mach, &[0, 0, 1, 1], 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 440.0).abs() < 1e-9);
        assert!((m.stages[1].latency_ns - 110.0).abs() < 1e-9);
        // The hop is pure time; the tasks' costs were taken at half a core.
        let mut half = app.clone();
        half.core_share = 0.5;
        let m = half.model(&mach, &[0, 0, 1, 1], 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 480.0).abs() < 1e-9);
    }

    #[test]
    fn a_puller_fed_from_other_threads_alone_on_its_thread_takes_bigger_batches() {
        let mut app = crosswise();
        app.tasks[2].crossing_factor = 0.5;
        app.tasks[3].crossing_factor = 0.5;
        let mach = machine();
        let w = WhatIf::default();
        // Sources on thread 0, drains on 1: every drained packet crossed
        // and the drains' thread runs no source: they cost half.
        assert!(app.queues.iter().all(|q| q.crosses(&[0, 0, 1, 1], 2)));
        assert!(!app.queues.iter().any(|q| q.crosses(&[0, 0, 1, 1], 1)));
        assert_eq!(
            app.crossed_input(&[0, 0, 1, 1], 2),
            vec![0.0, 0.0, 1.0, 1.0]
        );
        let m = app.model(&mach, &[0, 0, 1, 1], 2, &w);
        // Each drain: 100 cycles per entering packet at 2 GHz, 50 ns, half
        // of it; the consumer's end of the (synthetic) crossing on top.
        let hop = mach.crossing_ns;
        assert!((m.stages[1].latency_ns - (100.0 * 0.5 + hop)).abs() < 1e-9);
        // A drain beside a source runs once per the source's burst, as on
        // one thread: full cost (src0 and d1 on thread 0, src1 and d0 on
        // thread 1; crosswise, so every packet still crosses).
        assert_eq!(
            app.crossed_input(&[0, 1, 1, 0], 2),
            vec![0.0, 0.0, 0.0, 0.0]
        );
        let m = app.model(&mach, &[0, 1, 0, 1], 2, &w);
        assert_eq!(
            app.crossed_input(&[0, 1, 0, 1], 2),
            vec![0.0, 0.0, 1.0, 1.0]
        );
        let plain = crosswise().model(&mach, &[0, 1, 0, 1], 2, &w);
        for (a, b) in m.stages.iter().zip(&plain.stages) {
            assert!((a.latency_ns - b.latency_ns).abs() < 1e-9);
        }
        // On one thread nothing crosses: no change.
        let one = app.model(&mach, &[0, 0, 0, 0], 1, &w);
        let plain = crosswise().model(&mach, &[0, 0, 0, 0], 1, &w);
        assert!((one.stages[0].latency_ns - plain.stages[0].latency_ns).abs() < 1e-9);
    }

    #[test]
    fn a_slower_line_slows_plans_that_cross_cores_only() {
        let app = crosswise();
        let mut mach = machine();
        mach.queue_hop = vec![crate::machine::HopPoint {
            batch: 1.0,
            ns: 40.0,
            producer_ns: Some(40.0),
            consumer_ns: Some(10.0),
            per_line: None,
            line_ns: Some(50.0),
        }];
        let at = |l: Option<f64>| WhatIf {
            line_ns: l,
            ..WhatIf::default()
        };
        let k = crate::machine::LINES_PER_PACKET;
        // Sources on thread 0, drains on 1: every packet crosses once.
        let cross = [0, 0, 1, 1];
        // At the calibration's own line time: as without one.
        let same = app.model(&mach, &cross, 2, &at(Some(50.0)));
        let none = app.model(&mach, &cross, 2, &at(None));
        for (a, b) in same.stages.iter().zip(&none.stages) {
            assert!((a.latency_ns - b.latency_ns).abs() < 1e-9);
        }
        assert!((none.stages[0].latency_ns - 440.0).abs() < 1e-9);
        // A line of 200 ns instead of 50: each end's hop grows by k per
        // ns of line time per crossing packet.
        let slow = app.model(&mach, &cross, 2, &at(Some(200.0)));
        assert!((slow.stages[0].latency_ns - (440.0 + k * 150.0)).abs() < 1e-9);
        assert!((slow.stages[1].latency_ns - (110.0 + k * 150.0)).abs() < 1e-9);
        let (p_fast, p_slow) = (
            app.predict(&mach, &cross, 2, &at(None)),
            app.predict(&mach, &cross, 2, &at(Some(200.0))),
        );
        assert!(p_slow < p_fast * 0.99, "{p_slow} vs {p_fast}");
        // A measured growth replaces the default, per end.
        mach.queue_hop[0].per_line = Some((0.5, 0.0));
        let slow = app.model(&mach, &cross, 2, &at(Some(200.0)));
        assert!((slow.stages[0].latency_ns - (440.0 + 75.0)).abs() < 1e-9);
        assert!((slow.stages[1].latency_ns - 110.0).abs() < 1e-9);
        // One thread, or two threads where no packet crosses: unchanged.
        for (assign, n) in [([0, 0, 0, 0], 1), ([0, 1, 1, 0], 2)] {
            let a = app.predict(&mach, &assign, n, &at(None));
            let b = app.predict(&mach, &assign, n, &at(Some(200.0)));
            assert_eq!(a, b, "{assign:?} on {n}");
            assert!(a > 0.0);
        }
    }

    /// Sources on thread 0, heavy drains on thread 1 (the consumers the
    /// bottleneck), every packet crossing once, the hop measured at a
    /// 50 ns line with the default growth.
    fn heavy_drains() -> (App, Machine) {
        let t = [
            ("src0", 100.0),
            ("src1", 100.0),
            ("d0", 300.0),
            ("d1", 300.0),
        ];
        let app = two_sources("drains", t, true);
        let mut mach = machine();
        mach.queue_hop = vec![crate::machine::HopPoint {
            batch: 1.0,
            ns: 20.0,
            producer_ns: Some(20.0),
            consumer_ns: Some(20.0),
            per_line: None,
            line_ns: Some(50.0),
        }];
        (app, mach)
    }

    #[test]
    fn a_consumer_that_reads_data_slows_more_with_a_slower_line() {
        let (meta, mach) = heavy_drains();
        let mut data = meta.clone();
        for q in &mut data.queues {
            q.line_growth.consumer_data = crate::machine::DATA_LINES_PER_PACKET;
        }
        let split = [0, 0, 1, 1];
        let at = |l: f64| WhatIf {
            line_ns: Some(l),
            ..WhatIf::default()
        };
        let k = crate::machine::LINES_PER_PACKET;
        let d = crate::machine::DATA_LINES_PER_PACKET;
        // At the hop's own line time the data reader waits for its data
        // lines (the calibration chain read none): d lines of 50 ns.
        let m = meta.model(&mach, &split, 2, &at(50.0));
        let x = data.model(&mach, &split, 2, &at(50.0));
        assert!((x.stages[1].latency_ns - m.stages[1].latency_ns - d * 50.0).abs() < 1e-9);
        assert!(
            data.predict(&mach, &split, 2, &at(50.0)) < meta.predict(&mach, &split, 2, &at(50.0))
        );
        // 150 ns slower: the metadata consumer's end grows by k per ns,
        // the data reader's by k per ns plus its d lines at 200 ns.
        let m = meta.model(&mach, &split, 2, &at(200.0));
        let x = data.model(&mach, &split, 2, &at(200.0));
        assert!((m.stages[1].latency_ns - (300.0 + 20.0 + k * 150.0)).abs() < 1e-9);
        assert!((x.stages[1].latency_ns - (300.0 + 20.0 + k * 150.0 + d * 200.0)).abs() < 1e-9);
        // Producers are charged the same either way.
        assert_eq!(m.stages[0].latency_ns, x.stages[0].latency_ns);
        let (pm, px) = (
            meta.predict(&mach, &split, 2, &at(200.0)),
            data.predict(&mach, &split, 2, &at(200.0)),
        );
        let pm_fast = meta.predict(&mach, &split, 2, &at(50.0));
        assert!(px < pm && pm < pm_fast, "{px} {pm} {pm_fast}");
        // A measured figure replaces the estimate: a consumer measured at
        // 2 lines per packet waits for what exceeds the chain's own k
        // (which the chain's Counters and Discard wait for, and its growth
        // holds) at 200 ns besides the chain's growth; one measured at 0
        // grows as the chain's metadata-only consumer does.
        let mut measured = data.clone();
        for q in &mut measured.queues {
            q.line_growth.consumer = Some(2.0);
        }
        let y = measured.model(&mach, &split, 2, &at(200.0));
        assert!((y.stages[1].latency_ns - (320.0 + k * 150.0 + (2.0 - k) * 200.0)).abs() < 1e-9);
        for q in &mut measured.queues {
            q.line_growth.consumer = Some(0.0);
        }
        let y = measured.model(&mach, &split, 2, &at(200.0));
        assert!((y.stages[1].latency_ns - (320.0 + k * 150.0)).abs() < 1e-9);
    }

    #[test]
    fn a_line_term_changes_nothing_where_nothing_crosses_cores() {
        let (app, mach) = heavy_drains();
        let mut data = app.clone();
        for q in &mut data.queues {
            q.line_growth = LineTerm {
                producer: Some(2.0),
                consumer: None,
                consumer_data: 3.0,
                spread: None,
            };
        }
        let at = |l: Option<f64>| WhatIf {
            line_ns: l,
            ..WhatIf::default()
        };
        // One thread, or each source with its own packets' drain.
        for (assign, n) in [([0, 0, 0, 0], 1), ([0, 1, 1, 0], 2)] {
            for l in [None, Some(50.0), Some(400.0)] {
                assert_eq!(
                    data.predict(&mach, &assign, n, &at(l)),
                    app.predict(&mach, &assign, n, &at(l)),
                    "{assign:?} at {l:?}"
                );
            }
        }
        // A zero term (a source measured to pay nothing for crossing, a
        // consumer whose elements wait for no line) leaves both ends
        // growing as the chain's do: the ring's lines.
        let mut zero = app.clone();
        for q in &mut zero.queues {
            q.line_growth.producer = Some(0.0);
            q.line_growth.consumer = Some(0.0);
        }
        let split = [0, 0, 1, 1];
        let a = zero.model(&mach, &split, 2, &at(Some(50.0)));
        let b = zero.model(&mach, &split, 2, &at(Some(400.0)));
        let k = crate::machine::LINES_PER_PACKET;
        assert!((b.stages[0].latency_ns - a.stages[0].latency_ns - k * 350.0).abs() < 1e-9);
        assert!((b.stages[1].latency_ns - a.stages[1].latency_ns - k * 350.0).abs() < 1e-9);
        // A source measured at one line per crossing packet pays the
        // excess over the chain's growth as whole lines at any line time.
        let mut returning = zero.clone();
        for q in &mut returning.queues {
            q.line_growth.producer = Some(1.0);
        }
        let r = returning.model(&mach, &split, 2, &at(Some(50.0)));
        assert!((r.stages[0].latency_ns - a.stages[0].latency_ns - (1.0 - k) * 50.0).abs() < 1e-9);
    }
}
