//! The system model of the machine paraclick runs on: its cores and their
//! clock (from the cycle counter), the cost of moving a packet's cache
//! lines from one core to another (micro-benchmarks on two pinned
//! threads), and memory bandwidth. Calibrated once and cached in
//! `~/.cache/paraclick/system.toml`.

use paraclick_packet::clock;
use rustix::time::{clock_gettime, ClockId};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// CPU model (from /proc/cpuinfo) and CPUs available to this process.
    pub cpu: String,
    pub cores: usize,
    /// Cycle counter frequency, GHz: the unit of every profiled cost.
    pub tsc_ghz: f64,
    /// One cache line from one core to another and back, halved (ns).
    pub line_transfer_ns: f64,
    /// A 128-byte packet through a single-producer single-consumer ring
    /// with its buffer returned: per packet, both ends on one thread (ns).
    pub local_ring_ns: f64,
    /// The same with producer and consumer on two cores: per packet,
    /// pipelined (ns).
    pub cross_ring_ns: f64,
    /// What crossing adds to each end per packet: cross - local / 2 (ns).
    pub crossing_ns: f64,
    /// Memory copy bandwidth, GB/s (bytes read + bytes written).
    pub memory_gbs: f64,
    /// Per-packet cost of the kernel's packet interfaces; absent when
    /// unmeasured (device element costs then come from the profile only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub af_packet_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap_ns: Option<f64>,
    /// Unix time of the calibration.
    pub calibrated_at: u64,
    /// The runtime's own cross-thread Queue hop (issue 15's crossing
    /// term), per consumer batch size: what one packet crossing from a
    /// producer thread to a consumer thread through a `Queue` adds to each
    /// end, ns, measured by running `InfiniteSource -> Queue -> Unqueue`
    /// on one and on two threads (`paraclick model --recalibrate`). It
    /// includes what the synthetic ring above does not: the ring's staging
    /// and cache-line transfers, the consumer's polls of an empty queue,
    /// buffers going home, and packets lost while one side is off its
    /// core. Empty: not measured (then [`Machine::crossing_ns`] is used).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_hop: Vec<HopPoint>,
}

/// One point of the measured queue-hop cost curve.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HopPoint {
    /// Packets the consumer takes per run (Unqueue BURST).
    pub batch: f64,
    /// ns added to each end per crossing packet (the older, single
    /// figure: what the slower end pays).
    pub ns: f64,
    /// What each end pays where it is measured apart: the producer (the
    /// buffers coming back from the other core, the ring's tail) and the
    /// consumer (the packet's lines, the ring's head); absent: `ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_ns: Option<f64>,
    /// How each end's figure grows with the core-to-core line time: ns
    /// per crossing packet per ns of line time above the line time the
    /// figures were measured at, (producer, consumer). Measured when the
    /// calibration met the machine in two states (the slow state's hop
    /// less the fast one's, over the difference of their line times);
    /// absent: [`LINES_PER_PACKET`] for both ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_line: Option<(f64, f64)>,
    /// The core-to-core line time (ns) while the figures were measured:
    /// the state they belong to. Absent (an older cache): the
    /// calibration's `line_transfer_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_ns: Option<f64>,
}

/// The default growth of a hop end with the line time ([`HopPoint::per_line`]
/// where the calibration saw one state only): ns per crossing packet per
/// ns of line time, i.e. the line transfers per packet that are not
/// hidden behind each other. Measured on this 2-core VM (2026-11-24
/// 22:09 UTC, `paraclick model --recalibrate`): at BURST 32 both ends'
/// hop grew by 28-30 ns from a 24 ns to a 190 ns line, 0.17-0.18 per
/// packet: a packet's two or three lines (metadata, data, the buffer
/// going home) fetched a few at a time, plus the ring's lines per batch.
/// The whole fast-state hop does not scale (0.4-3.3 lines' worth at 24
/// ns): most of it is the ring's and the scheduler's instructions.
pub const LINES_PER_PACKET: f64 = 0.17;

/// Lines of packet data a crossing packet's consumer waits for when an
/// element after the crossing reads the packet's data (beyond its buffer
/// header and annotations, which the calibration chain's Counters and
/// Discard read): [`LineTerm::consumer_data`] where the configuration's
/// own figure was not measured. From replicated-qos on this VM
/// (2026-11-25 00:16-00:56 UTC, lines of 167-194 ns, the profile's
/// crossing runs): its consumer (IPClassifier, WorkPackage over the
/// whole 128-byte packet) waited 0.8-1.6 lines per crossing packet, the
/// medians of two series of profiles 1.0 and 1.4, against the
/// calibration chain's 0.17: about one line more, its two data lines
/// fetched partly in parallel.
pub const DATA_LINES_PER_PACKET: f64 = 1.0;

/// A crossing queue's own growth with the line time
/// ([`crate::app::AppQueue::line_growth`]), from the configuration's
/// profile: ns per crossing packet per ns of line time at each end.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LineTerm {
    /// Measured for this configuration (the profile's crossing run in
    /// either line state): lines per crossing packet its source waits for
    /// (buffers that come back from the other core with lines read
    /// there); what exceeds the calibration chain's growth is charged as
    /// whole lines ([`LineTerm::producer_lines`]).
    pub producer: Option<f64>,
    /// Measured at the consumer's end: lines per crossing packet the
    /// elements after its puller wait for (the crossing run leaves the
    /// queues and the puller's own element out: the chain's growth stands
    /// for those), charged as whole lines ([`LineTerm::consumer_lines`]).
    pub consumer: Option<f64>,
    /// Estimated where not measured: data lines the consumer's elements
    /// read beyond what the calibration chain's do, charged as whole
    /// lines ([`DATA_LINES_PER_PACKET`] when an element after the
    /// crossing reads packet data, else 0).
    pub consumer_data: f64,
    /// How far the measured figures disagree, lines per crossing packet:
    /// their median absolute deviation from their median over the
    /// crossing runs and profiles they come from, the wider end; None
    /// where fewer than two were measured (or none). Not used by the
    /// prediction: `paraclick parallelize` doubts a split's new queue by
    /// it rather than by a whole line once it is measured.
    pub spread: Option<f64>,
}

/// Beyond the line the hop was calibrated at, both ends grow as the
/// calibration chain's do ([`HopPoint::growth`]: the ring's, the queue's
/// and the puller's lines, which the hop holds at its own line); a
/// queue's term adds the lines the chain's hop holds none of, whole.
impl LineTerm {
    /// Lines per crossing packet the producer waits for at any line
    /// time, beyond what the chain's hop holds: the measured figure's
    /// excess over the chain's growth (a source's buffers coming back
    /// with lines the other core read; the chain's consumer reads none).
    pub fn producer_lines(&self, calibrated: f64) -> f64 {
        self.producer.map_or(0.0, |p| (p - calibrated).max(0.0))
    }

    /// This term with `producer` more lines per crossing packet at the
    /// producer end and `consumer` more at the consumer's (`chain`: the
    /// chain's growth at each end, [`Machine::chain_lines`]): what the
    /// rate would be if the term were that far wrong.
    pub fn plus_lines(&self, producer: f64, consumer: f64, chain: (f64, f64)) -> LineTerm {
        LineTerm {
            producer: Some(self.producer.unwrap_or(0.0).max(chain.0) + producer),
            consumer: Some(self.consumer_lines(chain.1) + chain.1 + consumer),
            consumer_data: self.consumer_data,
            spread: self.spread,
        }
    }

    /// Lines per crossing packet the consumer's elements wait for at any
    /// line time beyond what the chain's hop holds (`calibrated`: the
    /// chain's consumer growth, [`Machine::chain_lines`]): the measured
    /// figure's excess over the chain's growth, as the producer's is
    /// (the crossing run on the calibration chain itself measures its
    /// Counters and Discard at 0.16-0.18 lines, nearly all of the chain's
    /// 0.17-0.21: a packet's metadata line and the buffer's remote free
    /// are in both, and were charged twice: marking-pipeline, written
    /// after the model, was predicted 16% low in the slow state,
    /// firewall-pipeline 24% low), else the estimated data lines
    /// ([`LineTerm::consumer_data`], lines the chain's consumer does not
    /// read). Whole lines: a line costs its transfer at any line time,
    /// the calibration's included.
    pub fn consumer_lines(&self, calibrated: f64) -> f64 {
        match self.consumer {
            Some(m) => (m - calibrated).max(0.0),
            None => self.consumer_data.max(0.0),
        }
    }
}

impl HopPoint {
    /// How each end (producer, consumer) grows per ns of line time: the
    /// measured figures, else [`LINES_PER_PACKET`].
    pub fn growth(&self) -> (f64, f64) {
        self.per_line
            .unwrap_or((LINES_PER_PACKET, LINES_PER_PACKET))
    }

    pub fn both(batch: f64, ns: f64) -> HopPoint {
        HopPoint {
            batch,
            ns,
            producer_ns: None,
            consumer_ns: None,
            per_line: None,
            line_ns: None,
        }
    }
}

pub fn cache_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("paraclick").join("system.toml"))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn ncpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

impl Machine {
    /// Crossing cost per end per packet for a queue whose consumer takes
    /// `batch` packets per run: the measured hop curve, interpolated
    /// linearly in log(batch) and held flat beyond its ends; the synthetic
    /// ring's figure when the hop was not measured.
    pub fn hop_ns(&self, batch: f64) -> f64 {
        self.hop_interp(batch, |p| p.ns).unwrap_or(self.crossing_ns)
    }

    /// Crossing cost per crossing packet at the producer's end and at the
    /// consumer's, for a consumer batch of `batch` (as [`Machine::hop_ns`];
    /// each end its own measured figure where there is one).
    pub fn hop_ends_ns(&self, batch: f64) -> (f64, f64) {
        match (
            self.hop_interp(batch, |p| p.producer_ns.unwrap_or(p.ns)),
            self.hop_interp(batch, |p| p.consumer_ns.unwrap_or(p.ns)),
        ) {
            (Some(a), Some(b)) => (a, b),
            _ => (self.crossing_ns, self.crossing_ns),
        }
    }

    /// [`Machine::hop_ends_ns`] for a run that meets a core-to-core line
    /// time of `line_ns` (None: the calibration's state): each end's
    /// figure plus its growth per ns of line time ([`HopPoint::per_line`],
    /// else [`LINES_PER_PACKET`]) times the difference from the line time
    /// the hop was measured at, never below zero; interpolated in
    /// log(batch) as the figures are. Only the hop's cross-core part
    /// moves: the ring's and scheduler's instructions in it do not
    /// depend on the line time, the lines a packet brings do. The ring's
    /// fallback (no hop measured) scales likewise.
    pub fn hop_ends_at(&self, batch: f64, line_ns: Option<f64>) -> (f64, f64) {
        self.hop_ends_with(batch, line_ns, &LineTerm::default())
    }

    /// [`Machine::hop_ends_at`] plus the lines of a particular queue's
    /// crossing that the calibration chain's hop holds none of
    /// ([`crate::app::AppQueue::line_growth`]: what its producer's and its
    /// consumer's elements wait for of a packet that crossed, measured or
    /// estimated per configuration), whole lines at the line time.
    pub fn hop_ends_with(&self, batch: f64, line_ns: Option<f64>, term: &LineTerm) -> (f64, f64) {
        // The lines the chain's hop does not hold, whole at line time `l`.
        let (kp, kc) = self.chain_lines(batch);
        let whole = |l: f64| (term.producer_lines(kp) * l, term.consumer_lines(kc) * l);
        let (a, b, (wp, wc)) = match line_ns.filter(|l| l.is_finite() && *l > 0.0) {
            // At the calibration's own line.
            None => {
                let (a, b) = self.hop_ends_ns(batch);
                let base = self
                    .hop_interp(batch, |p| p.line_ns.unwrap_or(self.line_transfer_ns))
                    .unwrap_or(self.line_transfer_ns);
                (a, b, whole(base))
            }
            Some(l) => {
                // A figure measured at line time `base`, growing by `k` per ns.
                let at = |v: f64, k: f64, base: f64| (v + k * (l - base)).max(0.0);
                let base = |p: &HopPoint| p.line_ns.unwrap_or(self.line_transfer_ns);
                let (a, b) = match (
                    self.hop_interp(batch, |p| {
                        at(p.producer_ns.unwrap_or(p.ns), p.growth().0, base(p))
                    }),
                    self.hop_interp(batch, |p| {
                        at(p.consumer_ns.unwrap_or(p.ns), p.growth().1, base(p))
                    }),
                ) {
                    (Some(a), Some(b)) => (a, b),
                    _ => {
                        let ring = at(self.crossing_ns, LINES_PER_PACKET, self.line_transfer_ns);
                        (ring, ring)
                    }
                };
                (a, b, whole(l))
            }
        };
        (a + wp, b + wc)
    }

    /// Lines per crossing packet the calibration chain's producer and
    /// consumer ends grow by ([`HopPoint::growth`]) at this batch: what a
    /// measured figure is charged beyond ([`LineTerm::producer_lines`],
    /// [`LineTerm::consumer_lines`]).
    pub fn chain_lines(&self, batch: f64) -> (f64, f64) {
        (
            self.hop_interp(batch, |p| p.growth().0)
                .unwrap_or(LINES_PER_PACKET),
            self.hop_interp(batch, |p| p.growth().1)
                .unwrap_or(LINES_PER_PACKET),
        )
    }

    fn hop_interp(&self, batch: f64, val: impl Fn(&HopPoint) -> f64) -> Option<f64> {
        let pts = &self.queue_hop;
        if pts.is_empty() {
            return None;
        }
        let b = batch.max(1.0);
        if b <= pts[0].batch {
            return Some(val(&pts[0]));
        }
        for w in pts.windows(2) {
            if b <= w[1].batch {
                let (x0, x1) = (w[0].batch.ln(), w[1].batch.ln());
                let f = if x1 > x0 {
                    (b.ln() - x0) / (x1 - x0)
                } else {
                    1.0
                };
                return Some(val(&w[0]) + f * (val(&w[1]) - val(&w[0])));
            }
        }
        Some(val(&pts[pts.len() - 1]))
    }

    /// Writes this calibration to the cache file.
    pub fn save(&self) -> Result<(), String> {
        let Some(p) = cache_path() else {
            return Ok(());
        };
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let text = format!(
            "# paraclick system model of this machine (paraclick model --recalibrate\n\
             # measures it again). Absent af_packet_ns / tap_ns: unmeasured.\n{}",
            toml::to_string(self).map_err(|e| e.to_string())?
        );
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// The cached calibration, if there is one for this machine (None for
    /// another machine's or an older format).
    pub fn cached() -> Option<Machine> {
        let text = std::fs::read_to_string(cache_path()?).ok()?;
        toml::from_str::<Machine>(&text)
            .ok()
            .filter(|m| m.cpu == cpu_model() && m.cores == ncpus())
    }

    /// The cached calibration if it describes this machine, else a new
    /// one (written to the cache). `fresh` forces a new calibration.
    pub fn load_or_calibrate(fresh: bool) -> Result<(Machine, &'static str), String> {
        if !fresh {
            if let Some(m) = Machine::cached() {
                return Ok((m, "cached"));
            }
        }
        let m = Machine::calibrate();
        m.save()?;
        Ok((m, "calibrated now"))
    }

    /// Runs the micro-benchmarks (under a second on an idle machine).
    pub fn calibrate() -> Machine {
        Machine::calibrate_with(50_000, 5)
    }

    /// The micro-benchmarks with `rounds` transfers, best of `tries`.
    /// They pin the thread they run on, so they run on a thread of their
    /// own: a caller pinned to one core would pass that affinity to every
    /// thread it starts later (a router's unpinned workers then all share
    /// core 0, forwarding a hundredth of their rate).
    pub fn calibrate_with(rounds: u64, tries: usize) -> Machine {
        std::thread::spawn(move || Machine::calibrate_here(rounds, tries))
            .join()
            .unwrap_or_else(|_| Machine::calibrate_here(rounds, tries))
    }

    fn calibrate_here(rounds: u64, tries: usize) -> Machine {
        let hz = clock::cycles_per_second();
        let ns = |cyc: f64| cyc / hz * 1e9;
        let cores = ncpus();
        let line = if cores >= 2 {
            best_of(tries, || ping_pong(rounds)) // cycles per one-way transfer
        } else {
            0.0
        };
        let local = best_of(tries, || ring_local(2 * rounds));
        let cross = if cores >= 2 {
            best_of(tries, || ring_cross(2 * rounds))
        } else {
            local
        };
        let memory = (0..3).map(|_| memcpy_gbs()).fold(0.0, f64::max);
        Machine {
            cpu: cpu_model(),
            cores,
            tsc_ghz: hz / 1e9,
            line_transfer_ns: ns(line),
            local_ring_ns: ns(local),
            cross_ring_ns: ns(cross),
            crossing_ns: ns((cross - local / 2.0).max(0.0)),
            memory_gbs: memory,
            af_packet_ns: None,
            tap_ns: None,
            calibrated_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            queue_hop: Vec::new(),
        }
    }
}

/// The core-to-core cache-line time now, ns per one-way transfer: a
/// short ping-pong of one line between two threads pinned to cores 0 and
/// 1 (`rounds` round trips, the cheapest window of
/// `Windows::SIZE` transfers), on threads of its own so that the
/// caller's affinity is untouched. A few milliseconds (20,000 round trips:
/// ~1 ms at 25 ns a transfer, ~7 ms at 180 ns). None on one core.
///
/// On a VM whose two vCPUs the hypervisor moves between physical cores
/// this is not a constant of the machine: the same two cores here
/// exchanged a line in ~24 ns for minutes and in ~180 ns for minutes
/// after, so a prediction for a run that crosses cores measures it
/// next to that run rather than trusting the calibration's snapshot.
pub fn line_ns_now(rounds: u64) -> Option<f64> {
    if ncpus() < 2 {
        return None;
    }
    let rounds = rounds.max(Windows::SIZE);
    let cyc = std::thread::spawn(move || ping_pong(rounds)).join().ok()?;
    let ns = cyc / clock::cycles_per_second() * 1e9;
    (ns.is_finite() && ns > 0.0).then_some(ns)
}

/// Packets per second of the best window of a sampled run: `windows`
/// are (packets forwarded, seconds the run's busiest thread was on its
/// core meanwhile). On a shared machine a thread is now and then off its
/// core; dividing by the time it ran rather than by wall time, and taking
/// the best window, measures the machine rather than its load (a window in
/// which the other end was away forwards less per second run and loses).
/// 0 when no window has time.
pub fn best_window_rate(windows: &[(u64, f64)]) -> f64 {
    windows
        .iter()
        .filter(|w| w.1 > 0.0)
        .map(|w| w.0 as f64 / w.1)
        .fold(0.0, f64::max)
}

/// CPU time of thread `tid` of this process, ns (None if it is gone).
pub fn thread_cpu_ns_of(tid: i32) -> Option<u64> {
    // Linux's per-thread CPU clock id: (~tid << 3) | CPUCLOCK_PERTHREAD
    // (4) | CPUCLOCK_SCHED (2).
    let id = ((!tid) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an id for a thread that
    // no longer exists (or a kernel without the encoding) is an error
    // return, not undefined behaviour.
    let rc = unsafe { libc::clock_gettime(id as libc::clockid_t, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// How long thread `tid` of this process has been runnable but waiting
/// for a CPU so far (the second field of `/proc/self/task/TID/schedstat`,
/// the kernel's run delay), ns: the time other threads and processes took
/// its core. Unlike CPU time over wall time, it does not count a thread
/// that sleeps for want of work as short of a core.
pub fn thread_run_delay_ns(tid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

/// The task ids of this process's threads (none if /proc is unreadable).
fn task_ids() -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// The worker threads of the routers running in this process (the
/// runtime names them `paraclick-T`): (T, task id).
pub fn worker_threads() -> Vec<(usize, i32)> {
    let mut v: Vec<(usize, i32)> = task_ids()
        .into_iter()
        .filter_map(|tid| {
            let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
            let t = comm
                .trim()
                .strip_prefix("paraclick-")?
                .parse::<usize>()
                .ok()?;
            Some((t, tid))
        })
        .collect();
    v.sort_unstable();
    v
}

/// Each worker's share of a core between two snapshots of
/// [`worker_run_delays`] taken `wall_ns` apart: 1 less the part of the
/// time it waited for a CPU, indexed by worker (1.0 for a worker not
/// seen in both).
pub fn worker_core_shares(
    a: &[(usize, i32, u64)],
    b: &[(usize, i32, u64)],
    nthreads: usize,
    wall_ns: f64,
) -> Vec<f64> {
    let mut share = vec![1.0; nthreads];
    for &(t, tid, d1) in b {
        if let Some(&(_, _, d0)) = a.iter().find(|x| x.0 == t && x.1 == tid) {
            if t < nthreads && wall_ns > 0.0 {
                share[t] = (1.0 - d1.saturating_sub(d0) as f64 / wall_ns).clamp(1e-3, 1.0);
            }
        }
    }
    share
}

/// The run delay of every worker thread now: (T, task id, ns).
pub fn worker_run_delays() -> Vec<(usize, i32, u64)> {
    worker_threads()
        .into_iter()
        .filter_map(|(t, tid)| Some((t, tid, thread_run_delay_ns(tid)?)))
        .collect()
}

/// Per thread of this process (task id): its CPU time so far, ns.
pub fn threads_cpu_ns() -> Vec<(i32, u64)> {
    task_ids()
        .into_iter()
        .filter_map(|tid| Some((tid, thread_cpu_ns_of(tid)?)))
        .collect()
}

/// The CPU time the busiest thread had between two [`threads_cpu_ns`]
/// snapshots, seconds.
pub fn busiest_between(a: &[(i32, u64)], b: &[(i32, u64)]) -> f64 {
    b.iter()
        .filter_map(|&(t, y)| {
            a.iter()
                .find(|x| x.0 == t)
                .map(|&(_, x)| y.saturating_sub(x))
        })
        .max()
        .unwrap_or(0) as f64
        / 1e9
}

/// The hop cost at one end of a crossing queue, ns per packet: a chain
/// forwarding `one_pps` on one thread, where that end's task does
/// `end_share` of the work, forwards `two_pps` with the queue crossing to
/// a second thread and that end the slower one; the end's time per packet
/// grew from its share of 1/one_pps to 1/two_pps.
pub fn hop_end_ns(one_pps: f64, end_share: f64, two_pps: f64) -> f64 {
    if one_pps <= 0.0 || two_pps <= 0.0 {
        return 0.0;
    }
    (1e9 / two_pps - end_share.clamp(0.0, 1.0) * 1e9 / one_pps).max(0.0)
}

/// Spins until `ready`, yielding now and then (on a machine with more
/// runnable threads than cores the peer may need this core to run).
#[inline]
fn wait(ready: impl Fn() -> bool) {
    let mut n = 0u32;
    while !ready() {
        n += 1;
        if n.is_multiple_of(256) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The share of a core each of `n` threads pinned to cores 0..n gets
/// while all of them spin for `ms` milliseconds: thread CPU time over wall
/// time. 1.0 on an idle machine; less when other processes share the
/// cores (a shared VM). Not cached: it changes from minute to minute.
pub fn core_shares(n: usize, ms: u64) -> Vec<f64> {
    let handles: Vec<_> = (0..n)
        .map(|i| {
            std::thread::spawn(move || {
                pin(i);
                let t0 = std::time::Instant::now();
                let c0 = thread_cpu_ns();
                let mut x = 0u64;
                while t0.elapsed() < std::time::Duration::from_millis(ms) {
                    for k in 0..1000u64 {
                        x = black_box(x.wrapping_add(k));
                    }
                }
                let cpu = thread_cpu_ns().saturating_sub(c0) as f64;
                (cpu / t0.elapsed().as_nanos().max(1) as f64).min(1.0)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or(1.0))
        .collect()
}

/// CPU time of the whole process so far, ns (user + system).
pub fn process_cpu_ns() -> u64 {
    let ts = clock_gettime(ClockId::ProcessCPUTime);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn thread_cpu_ns() -> u64 {
    let ts = clock_gettime(ClockId::ThreadCPUTime);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn best_of(n: usize, f: impl Fn() -> f64) -> f64 {
    (0..n).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn pin(cpu: usize) {
    let cpu = cpu % ncpus();
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    // This thread (no pid). Failure (a restricted cpuset) only makes the
    // figure less exact.
    let _ = rustix::thread::sched_setaffinity(None, &set);
}

#[repr(align(64))]
struct Line(AtomicU64);

/// Cycles per one-way cache-line transfer: two threads on two cores bounce
/// a counter in one line.
fn ping_pong(rounds: u64) -> f64 {
    let l = Arc::new(Line(AtomicU64::new(0)));
    let l2 = l.clone();
    let peer = std::thread::spawn(move || {
        pin(1);
        for i in 0..rounds {
            wait(|| l2.0.load(Ordering::Acquire) == 2 * i + 1);
            l2.0.store(2 * i + 2, Ordering::Release);
        }
    });
    pin(0);
    // Wait for the peer to be running before timing.
    std::thread::sleep(std::time::Duration::from_millis(2));
    let mut win = Windows::new();
    for i in 0..rounds {
        l.0.store(2 * i + 1, Ordering::Release);
        wait(|| l.0.load(Ordering::Acquire) == 2 * i + 2);
        win.tick(2);
    }
    let _ = peer.join();
    win.best()
}

/// Timing in windows of [`Windows::SIZE`] operations: the cost is the
/// cheapest window's mean. On a machine shared with other processes a
/// thread is now and then descheduled for milliseconds; a mean over the
/// whole run charges that to the hardware (the core-to-core line transfer
/// came out at 1.9 us under load, ten times its idle value), while a
/// window in which both threads ran throughout measures the machine.
struct Windows {
    start: u64,
    ops: u64,
    best: f64,
}

impl Windows {
    const SIZE: u64 = 2000;

    fn new() -> Windows {
        Windows {
            start: clock::cycles(),
            ops: 0,
            best: f64::INFINITY,
        }
    }

    /// `n` more operations done.
    #[inline]
    fn tick(&mut self, n: u64) {
        self.ops += n;
        if self.ops >= Self::SIZE {
            let now = clock::cycles();
            let per = now.wrapping_sub(self.start) as f64 / self.ops as f64;
            self.best = self.best.min(per);
            self.start = now;
            self.ops = 0;
        }
    }

    /// Cycles per operation of the cheapest whole window (of the partial
    /// one if no window completed).
    fn best(&self) -> f64 {
        if self.best.is_finite() {
            self.best
        } else {
            clock::cycles().wrapping_sub(self.start) as f64 / self.ops.max(1) as f64
        }
    }
}

const RING: usize = 256;
const BUFS: usize = 512;

#[repr(align(64))]
struct Buf([AtomicU64; 16]); // two cache lines: a small packet

/// A single-producer single-consumer ring of buffer indices.
struct Ring {
    slots: Box<[AtomicUsize]>,
    head: Line, // consumer position
    tail: Line, // producer position
}

impl Ring {
    fn new() -> Ring {
        Ring {
            slots: (0..RING).map(|_| AtomicUsize::new(0)).collect(),
            head: Line(AtomicU64::new(0)),
            tail: Line(AtomicU64::new(0)),
        }
    }
    fn push(&self, v: usize) -> bool {
        let t = self.tail.0.load(Ordering::Relaxed);
        if t - self.head.0.load(Ordering::Acquire) >= RING as u64 {
            return false;
        }
        self.slots[t as usize % RING].store(v, Ordering::Relaxed);
        self.tail.0.store(t + 1, Ordering::Release);
        true
    }
    fn pop(&self) -> Option<usize> {
        let h = self.head.0.load(Ordering::Relaxed);
        if h == self.tail.0.load(Ordering::Acquire) {
            return None;
        }
        let v = self.slots[h as usize % RING].load(Ordering::Relaxed);
        self.head.0.store(h + 1, Ordering::Release);
        Some(v)
    }
}

struct Rig {
    bufs: Box<[Buf]>,
    fwd: Ring,
    back: Ring,
}

impl Rig {
    fn new() -> Arc<Rig> {
        let rig = Rig {
            bufs: (0..BUFS)
                .map(|_| Buf(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            fwd: Ring::new(),
            back: Ring::new(),
        };
        for i in 0..RING.min(BUFS) {
            rig.back.push(i);
        }
        Arc::new(rig)
    }
    /// Producer step: take a free buffer, write the packet, enqueue it.
    fn produce(&self, seq: u64) -> bool {
        let Some(b) = self.back.pop() else {
            return false;
        };
        for (k, w) in self.bufs[b].0.iter().enumerate() {
            w.store(seq + k as u64, Ordering::Relaxed);
        }
        wait(|| self.fwd.push(b));
        true
    }
    /// Consumer step: dequeue, read the packet, touch its header, free it.
    fn consume(&self) -> Option<u64> {
        let b = self.fwd.pop()?;
        let sum = self.bufs[b]
            .0
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add);
        self.bufs[b].0[0].store(sum, Ordering::Relaxed);
        wait(|| self.back.push(b));
        Some(sum)
    }
}

/// Cycles per packet with producer and consumer on one thread.
fn ring_local(n: u64) -> f64 {
    pin(0);
    let rig = Rig::new();
    let c0 = clock::cycles();
    for i in 0..n {
        rig.produce(i);
        black_box(rig.consume());
    }
    clock::cycles().wrapping_sub(c0) as f64 / n as f64
}

/// Cycles per packet, pipelined, producer and consumer on two cores.
fn ring_cross(n: u64) -> f64 {
    let rig = Rig::new();
    let r2 = rig.clone();
    let consumer = std::thread::spawn(move || {
        pin(1);
        let mut got = 0;
        while got < n {
            if black_box(r2.consume()).is_some() {
                got += 1;
            } else {
                wait(|| {
                    r2.fwd.head.0.load(Ordering::Relaxed) != r2.fwd.tail.0.load(Ordering::Acquire)
                });
            }
        }
    });
    pin(0);
    std::thread::sleep(std::time::Duration::from_millis(2));
    // Windows of packets produced: in steady state the producer runs at
    // the pipeline's rate, so a window's mean is the cost per packet.
    let mut win = Windows::new();
    let mut i = 0;
    while i < n {
        if rig.produce(i) {
            i += 1;
            win.tick(1);
        } else {
            wait(|| {
                rig.back.head.0.load(Ordering::Relaxed) != rig.back.tail.0.load(Ordering::Acquire)
            });
        }
    }
    let _ = consumer.join();
    win.best()
}

/// Bytes read plus written per second by a 64 MB copy, GB/s.
fn memcpy_gbs() -> f64 {
    const N: usize = 64 << 20;
    let src = vec![1u8; N];
    let mut dst = vec![0u8; N];
    dst.copy_from_slice(&src); // fault the pages in
    let t = std::time::Instant::now();
    dst.copy_from_slice(black_box(&src));
    black_box(&dst);
    2.0 * N as f64 / t.elapsed().as_secs_f64() / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_shares_are_fractions() {
        let s = core_shares(2, 20);
        assert_eq!(s.len(), 2);
        assert!(s.iter().all(|&x| x > 0.0 && x <= 1.0), "{s:?}");
    }

    #[test]
    fn worker_shares_from_run_delays() {
        // Worker 0 waited 25 ms of a 100 ms window, worker 1 nothing,
        // worker 2 was not seen twice (a new thread id): 1.0.
        let a = [(0, 10, 1_000_000), (1, 11, 5), (2, 12, 0)];
        let b = [(0, 10, 26_000_000), (1, 11, 5), (2, 13, 90_000_000)];
        let s = worker_core_shares(&a, &b, 3, 100e6);
        assert!((s[0] - 0.75).abs() < 1e-9, "{s:?}");
        assert_eq!(&s[1..], &[1.0, 1.0]);
        // More delay than wall time (a clock step) stays a share.
        let b = [(0, 10, 500_000_000)];
        assert!(worker_core_shares(&a, &b, 1, 100e6)[0] > 0.0);
    }

    #[test]
    fn finds_named_workers_and_their_run_delay() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("paraclick-7".into())
            .spawn(move || {
                // The new thread names itself as it starts: list it only
                // once it runs.
                started_tx.send(()).unwrap();
                let _ = rx.recv();
            })
            .unwrap();
        started.recv().unwrap();
        let found = worker_threads();
        let me = found.iter().find(|w| w.0 == 7).copied();
        let delays = worker_run_delays();
        tx.send(()).unwrap();
        h.join().unwrap();
        let (_, tid) = me.expect("the thread named paraclick-7 is listed");
        assert!(delays.iter().any(|d| d.1 == tid), "{delays:?}");
    }

    #[test]
    fn rings_carry_every_packet_in_order() {
        let rig = Rig::new();
        for i in 0..1000u64 {
            assert!(rig.produce(i));
            let expect: u64 = (0..16).map(|k| i + k).sum();
            assert_eq!(rig.consume(), Some(expect));
        }
        assert_eq!(rig.consume(), None);
    }

    #[test]
    fn calibration_gives_positive_finite_figures_and_round_trips() {
        let m = Machine::calibrate_with(2000, 1);
        assert!(m.tsc_ghz > 0.0 && m.tsc_ghz.is_finite());
        assert!(m.local_ring_ns > 0.0 && m.cross_ring_ns > 0.0);
        assert!(m.memory_gbs > 0.0);
        if m.cores >= 2 {
            assert!(m.line_transfer_ns > 0.0);
        }
        let text = toml::to_string(&m).unwrap();
        assert!(!text.contains("af_packet_ns"), "unmeasured is absent");
        let back: Machine = toml::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn best_window_is_the_most_packets_per_second_run() {
        // 100k packets in 10 ms; 20k in 2 ms (the thread was away 8 ms of
        // the window: per second run, 10 Mpps); 120k in 10 ms.
        let w = [(100_000, 0.01), (20_000, 0.002), (120_000, 0.01)];
        assert!((best_window_rate(&w) - 12e6).abs() < 1e-3);
        assert_eq!(best_window_rate(&[]), 0.0);
        assert_eq!(best_window_rate(&[(5, 0.0)]), 0.0);
    }

    #[test]
    fn busiest_thread_time_between_snapshots() {
        let a = [(1, 1_000_000), (2, 5_000_000)];
        let b = [(1, 4_000_000), (2, 6_000_000), (3, 9_000_000)];
        // Thread 3 is new (no start), thread 1 ran 3 ms.
        assert!((busiest_between(&a, &b) - 0.003).abs() < 1e-12);
        // This thread's own clock through its task id.
        let me = threads_cpu_ns();
        assert!(!me.is_empty());
        // Spin until this thread's CPU time shows 5 ms (however long a
        // loaded machine takes to give it that); a clock that does not
        // move fails at the deadline.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while busiest_between(&me, &threads_cpu_ns()) <= 0.005 {
            assert!(
                std::time::Instant::now() < deadline,
                "no 5 ms of thread CPU time in 60 s"
            );
            for _ in 0..10_000 {
                black_box(0u64);
            }
        }
    }

    #[test]
    fn hop_end_is_the_slower_ends_growth() {
        // 1 thread: 20 Mpps, 50 ns per packet, the producer's task 60% of
        // it (30 ns); 2 threads: 25 Mpps, 40 ns per packet at the producer.
        assert!((hop_end_ns(20e6, 0.6, 25e6) - 10.0).abs() < 1e-9);
        // Faster than its share of one thread: no negative cost.
        assert_eq!(hop_end_ns(20e6, 0.6, 40e6), 0.0);
        assert_eq!(hop_end_ns(0.0, 0.6, 40e6), 0.0);
    }

    #[test]
    fn hop_ends_are_charged_apart_and_default_to_the_single_figure() {
        let mut m = Machine::calibrate_with(200, 1);
        m.crossing_ns = 7.0;
        assert_eq!(m.hop_ends_ns(1.0), (7.0, 7.0));
        m.queue_hop = vec![
            HopPoint {
                batch: 1.0,
                ns: 50.0,
                producer_ns: Some(50.0),
                consumer_ns: Some(20.0),
                per_line: None,
                line_ns: None,
            },
            HopPoint::both(32.0, 10.0),
        ];
        assert_eq!(m.hop_ends_ns(1.0), (50.0, 20.0));
        // Halfway in log(batch) between the two points.
        let (p, c) = m.hop_ends_ns(32f64.sqrt());
        assert!(
            (p - 30.0).abs() < 1e-9 && (c - 15.0).abs() < 1e-9,
            "{p} {c}"
        );
        assert_eq!(m.hop_ns(1.0), 50.0);
        let text = toml::to_string(&m).unwrap();
        let back: Machine = toml::from_str(&text).unwrap();
        assert_eq!(back.queue_hop, m.queue_hop);
    }

    #[test]
    fn hop_curve_interpolates_in_log_batch_and_falls_back_to_the_ring() {
        let mut m = Machine::calibrate_with(200, 1);
        m.crossing_ns = 7.0;
        assert_eq!(m.hop_ns(4.0), 7.0, "unmeasured: the synthetic ring");
        m.queue_hop = vec![
            HopPoint::both(1.0, 100.0),
            HopPoint::both(4.0, 40.0),
            HopPoint::both(32.0, 10.0),
        ];
        assert_eq!(m.hop_ns(0.5), 100.0);
        assert!((m.hop_ns(2.0) - 70.0).abs() < 1e-9, "{}", m.hop_ns(2.0));
        assert_eq!(m.hop_ns(4.0), 40.0);
        assert_eq!(m.hop_ns(1000.0), 10.0);
        let text = toml::to_string(&m).unwrap();
        let back: Machine = toml::from_str(&text).unwrap();
        assert_eq!(back.queue_hop, m.queue_hop);
    }

    #[test]
    fn hop_ends_follow_the_line_time_by_their_growth_per_ns() {
        let mut m = Machine::calibrate_with(200, 1);
        m.line_transfer_ns = 25.0;
        m.crossing_ns = 30.0;
        let k = LINES_PER_PACKET;
        // No hop measured: the ring's figure, grown likewise.
        assert_eq!(m.hop_ends_at(1.0, None), (30.0, 30.0));
        let (p, _) = m.hop_ends_at(1.0, Some(125.0));
        assert!((p - (30.0 + 100.0 * k)).abs() < 1e-9, "{p}");
        m.queue_hop = vec![
            HopPoint {
                batch: 1.0,
                ns: 80.0,
                producer_ns: Some(2.0),
                consumer_ns: Some(80.0),
                per_line: None,
                line_ns: None,
            },
            HopPoint {
                batch: 32.0,
                ns: 12.0,
                producer_ns: Some(12.0),
                consumer_ns: Some(10.0),
                per_line: Some((0.2, 0.1)),
                line_ns: Some(20.0),
            },
        ];
        // None, or the line time each point was measured at: unchanged.
        assert_eq!(m.hop_ends_at(1.0, None), (2.0, 80.0));
        assert_eq!(m.hop_ends_at(32.0, Some(20.0)), (12.0, 10.0));
        // Default growth where unmeasured, from the calibration's line
        // (the point has none of its own).
        let (p, c) = m.hop_ends_at(1.0, Some(185.0));
        assert!((p - (2.0 + 160.0 * k)).abs() < 1e-9, "{p}");
        assert!((c - (80.0 + 160.0 * k)).abs() < 1e-9, "{c}");
        // The measured growth, from the point's own line time.
        let (p, c) = m.hop_ends_at(32.0, Some(180.0));
        assert!((p - (12.0 + 0.2 * 160.0)).abs() < 1e-9, "{p}");
        assert!((c - (10.0 + 0.1 * 160.0)).abs() < 1e-9, "{c}");
        // A faster line than measured lowers a figure, never below zero.
        let (p, _) = m.hop_ends_at(1.0, Some(1.0));
        assert_eq!(p, 0.0);
        // Between the points, in log(batch), as the figures are.
        let (p, _) = m.hop_ends_at(32f64.sqrt(), Some(180.0));
        let lo = 2.0 + 155.0 * k;
        let hi = 12.0 + 0.2 * 160.0;
        assert!((p - (lo + hi) / 2.0).abs() < 1e-9, "{p}");
        let text = toml::to_string(&m).unwrap();
        let back: Machine = toml::from_str(&text).unwrap();
        assert_eq!(back.queue_hop, m.queue_hop);
    }

    #[test]
    fn a_queue_line_term_adds_whole_lines_to_the_calibrated_growth() {
        let mut m = Machine::calibrate_with(200, 1);
        m.line_transfer_ns = 25.0;
        m.crossing_ns = 30.0;
        m.queue_hop = vec![HopPoint {
            batch: 8.0,
            ns: 20.0,
            producer_ns: Some(20.0),
            consumer_ns: Some(10.0),
            per_line: Some((0.2, 0.1)),
            line_ns: Some(25.0),
        }];
        // The default term is the calibration's.
        let none = LineTerm::default();
        for l in [None, Some(25.0), Some(185.0)] {
            assert_eq!(m.hop_ends_with(8.0, l, &none), m.hop_ends_at(8.0, l));
        }
        // Estimated: the consumer's data lines are whole lines on top of
        // the chain's growth, at any line time (the chain's hop, measured
        // at 25 ns, holds none of them).
        let data = LineTerm {
            consumer_data: 1.2,
            ..LineTerm::default()
        };
        let (p, c) = m.hop_ends_with(8.0, Some(185.0), &data);
        assert!((p - (20.0 + 0.2 * 160.0)).abs() < 1e-9, "{p}");
        assert!((c - (10.0 + 0.1 * 160.0 + 1.2 * 185.0)).abs() < 1e-9, "{c}");
        let (p, c) = m.hop_ends_with(8.0, Some(25.0), &data);
        assert!((p - 20.0).abs() < 1e-9 && (c - (10.0 + 1.2 * 25.0)).abs() < 1e-9);
        assert_eq!(m.hop_ends_with(8.0, None, &data), (20.0, 10.0 + 1.2 * 25.0));
        // Measured: the consumer's elements' figure replaces the estimate;
        // each end's figure adds its excess over the chain's growth, whole
        // lines (0.05 is below the chain's producer 0.2, 0.0 below its
        // consumer 0.1: nothing).
        let measured = LineTerm {
            producer: Some(0.05),
            consumer: Some(0.0),
            consumer_data: 1.2,
            spread: None,
        };
        let (p, c) = m.hop_ends_with(8.0, Some(185.0), &measured);
        assert!((p - (20.0 + 0.2 * 160.0)).abs() < 1e-9, "{p}");
        assert!((c - (10.0 + 0.1 * 160.0)).abs() < 1e-9, "{c}");
        let reader = LineTerm {
            producer: Some(0.5),
            consumer: Some(1.0),
            ..measured
        };
        let (p, c) = m.hop_ends_with(8.0, Some(185.0), &reader);
        assert!((p - (20.0 + 0.2 * 160.0 + 0.3 * 185.0)).abs() < 1e-9, "{p}");
        assert!((c - (10.0 + 0.1 * 160.0 + 0.9 * 185.0)).abs() < 1e-9, "{c}");
        // In the fast state, at the calibration's own line, the measured
        // lines still cost their transfer.
        let (p, c) = m.hop_ends_with(8.0, None, &reader);
        assert!((p - (20.0 + 0.3 * 25.0)).abs() < 1e-9 && (c - (10.0 + 0.9 * 25.0)).abs() < 1e-9);
        // The ring's fallback takes the term likewise.
        m.queue_hop.clear();
        let (p, c) = m.hop_ends_with(1.0, Some(125.0), &reader);
        let k = LINES_PER_PACKET;
        assert!(
            (p - (30.0 + k * 100.0 + (0.5 - k) * 125.0)).abs() < 1e-9,
            "{p}"
        );
        assert!(
            (c - (30.0 + k * 100.0 + (1.0 - k) * 125.0)).abs() < 1e-9,
            "{c}"
        );
    }

    #[test]
    fn line_time_now_is_positive_on_two_cores() {
        match line_ns_now(2000) {
            Some(l) => assert!(l > 0.0 && l.is_finite(), "{l}"),
            None => assert!(ncpus() < 2),
        }
    }
}
