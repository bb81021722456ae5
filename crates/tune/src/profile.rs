//! `paraclick model`: the performance model of a configuration on this
//! machine (application model from short profiled runs, system model from
//! cached micro-benchmarks, mapping from the thread plan), or of one of the
//! paper's systems (`--system FILE.toml`).

use paraclick_lang::Source;
use paraclick_model::app::{App, AppQueue, AppTask, WhatIf};
use paraclick_model::machine::{LineTerm, Machine, DATA_LINES_PER_PACKET};
use paraclick_model::pc;
use paraclick_runtime::sched::{CostData, SchedPolicy, TaskCost, HYSTERESIS};
use paraclick_runtime::{BuildOptions, Registry, Router};
use std::fmt::Write as _;
use std::time::Duration;

/// A packet-size mix: sizes and weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub sizes: Vec<u32>,
    pub weights: Vec<f64>,
}

impl Traffic {
    pub fn mean(&self) -> f64 {
        let s: f64 = self.weights.iter().sum();
        self.sizes
            .iter()
            .zip(&self.weights)
            .map(|(&b, &w)| b as f64 * w)
            .sum::<f64>()
            / s.max(f64::MIN_POSITIVE)
    }
}

/// `--traffic`: a size ("64"), a mix ("64:7,576:4,1500:1", sizes with
/// weights), or a pcap file (its packets' original lengths).
pub fn parse_traffic(spec: &str) -> Result<Traffic, String> {
    if spec.ends_with(".pcap") || std::path::Path::new(spec).is_file() {
        let data = std::fs::read(spec).map_err(|e| format!("{spec}: {e}"))?;
        return pcap_sizes(&data).map_err(|e| format!("{spec}: {e}"));
    }
    let mut t = Traffic {
        sizes: Vec::new(),
        weights: Vec::new(),
    };
    for part in spec.split(',') {
        let (s, w) = part.split_once(':').unwrap_or((part, "1"));
        let size: u32 = s
            .trim()
            .parse()
            .map_err(|_| format!("--traffic: '{s}' is not a packet size in bytes"))?;
        let weight: f64 = w
            .trim()
            .parse()
            .map_err(|_| format!("--traffic: '{w}' is not a weight"))?;
        if size == 0 || !(weight >= 0.0 && weight.is_finite()) {
            return Err(format!("--traffic: bad size or weight in '{part}'"));
        }
        t.sizes.push(size);
        t.weights.push(weight);
    }
    if t.weights.iter().sum::<f64>() <= 0.0 {
        return Err("--traffic: the weights sum to 0".into());
    }
    Ok(t)
}

/// Packet-size histogram of a classic pcap file (either byte order).
pub fn pcap_sizes(data: &[u8]) -> Result<Traffic, String> {
    if data.len() < 24 {
        return Err("not a pcap file (too short)".into());
    }
    let magic = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let le = match magic {
        0xa1b2c3d4 | 0xa1b23c4d => true,
        0xd4c3b2a1 | 0x4d3cb2a1 => false,
        _ => return Err("not a pcap file (bad magic number)".into()),
    };
    let u32at = |o: usize| -> u32 {
        let b = [data[o], data[o + 1], data[o + 2], data[o + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let mut hist = std::collections::BTreeMap::<u32, f64>::new();
    let mut off = 24;
    while off + 16 <= data.len() {
        let caplen = u32at(off + 8) as usize;
        let orig = u32at(off + 12);
        off += 16 + caplen;
        if off > data.len() {
            break; // truncated last record
        }
        *hist.entry(orig.max(1)).or_default() += 1.0;
    }
    if hist.is_empty() {
        return Err("no packets".into());
    }
    Ok(Traffic {
        sizes: hist.keys().copied().collect(),
        weights: hist.values().copied().collect(),
    })
}

/// `paraclick model --system FILE`: one of the paper's systems, with the
/// what-ifs applied.
pub fn system_report(
    path: &str,
    clock_ghz: Option<f64>,
    cpus: Option<usize>,
    traffic: Option<&Traffic>,
) -> Result<String, String> {
    let mut s = pc::load(std::path::Path::new(path))?;
    let mut whatif = Vec::new();
    if let Some(g) = clock_ghz {
        s = s.with_clock_mhz(g * 1e3);
        whatif.push(format!("clock {g} GHz"));
    }
    if let Some(n) = cpus {
        s = s.with_cpus(n as u32);
        whatif.push(format!("{n} CPU(s)"));
    }
    if let Some(t) = traffic {
        s = s.with_traffic(t.sizes.clone(), t.weights.clone());
        whatif.push(format!("traffic mean {:.0} B", t.mean()));
    }
    let m = s.model();
    let ev = m.evaluate();
    let mut out = String::new();
    if let (Some(p), true) = (&s.paper, whatif.is_empty()) {
        let _ = write!(
            out,
            "paper: estimate {} kpps (ours {:+.1}% from it){}",
            p.mlffr_kpps,
            (ev.mlffr / 1e3 - p.mlffr_kpps) / p.mlffr_kpps * 100.0,
            p.measured_kpps
                .map(|x| format!(", measured {x} kpps"))
                .unwrap_or_default()
        );
        if let Some(l) = p.latency_ns {
            let _ = write!(
                out,
                "; phase latencies {:.0}/{:.0}/{:.0} ns",
                l[0], l[1], l[2]
            );
        }
        out.push('\n');
    }
    if !whatif.is_empty() {
        let _ = writeln!(out, "what-if: {}", whatif.join(", "));
    }
    let _ = writeln!(
        out,
        "bit rate at the MLFFR: {:.0} Mbps",
        ev.mlffr * s.mean_packet_bytes() * 8.0 / 1e6
    );
    // The MLFFR line stays last.
    let r = m.render(&ev);
    let (body, last) = r.trim_end().rsplit_once('\n').unwrap_or(("", r.trim_end()));
    Ok(format!("{body}\n{out}{last}\n"))
}

pub fn build(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    threads: usize,
    policy: SchedPolicy,
    profile: bool,
    check_only: bool,
) -> Result<Router, String> {
    // Options added on main later take their defaults.
    #[allow(clippy::needless_update)]
    let opts = BuildOptions {
        threads,
        defines: defines.to_vec(),
        policy,
        pin: !check_only && threads <= 2,
        profile,
        check_only,
        ..BuildOptions::default()
    };
    Router::build(src, reg, &opts).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// Runs `r` until it stops by itself or `secs` have passed.
pub fn run_for(r: &Router, secs: f64) {
    run_for_shares(r, secs, 0);
}

/// [`run_for`], returning each of the router's `n` workers' share
/// of its core over the run (1 less the part it waited for a CPU, from
/// the kernel's run delays, the first 20 ms left out while the workers
/// start): a profiled run's cycles are wall-clock cycles, so another
/// process taking the core shows in them.
fn run_for_shares(r: &Router, secs: f64, n: usize) -> Vec<f64> {
    use paraclick_model::machine::{worker_core_shares, worker_run_delays};
    use std::sync::atomic::{AtomicBool, Ordering};
    let stopper = r.stopper();
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    let t = std::thread::spawn(move || {
        let until = std::time::Instant::now() + Duration::from_secs_f64(secs);
        std::thread::sleep(Duration::from_millis(20).min(Duration::from_secs_f64(secs / 4.0)));
        let a = worker_run_delays();
        let t0 = std::time::Instant::now();
        while !d2.load(Ordering::Relaxed) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let b = worker_run_delays();
        let wall = t0.elapsed().as_secs_f64() * 1e9;
        stopper.stop();
        worker_core_shares(&a, &b, n, wall)
    });
    r.run();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    t.join().unwrap_or_else(|_| vec![1.0; n])
}

/// Whether an element of `class` reads (or writes) a packet's data, not
/// only its metadata: its class does not say `metadata_only`
/// ([`paraclick_runtime::ClassSpec::reads_data`]; a class the registry
/// does not know is taken to read data).
pub fn reads_data(reg: &Registry, class: &str) -> bool {
    reg.get(class).is_none_or(|c| c.reads_data)
}

/// What queue `e` counted on thread `t` for one side, its pushes there or
/// its pulls there (`thread_of`: each task's thread): a thread with tasks
/// at both ends counts each packet twice, in and out.
fn one_side(
    e: &paraclick_runtime::sched::ElementCost,
    t: usize,
    thread_of: &dyn Fn(usize) -> usize,
) -> f64 {
    let pk = e.per_thread.get(t).map_or(0, |x| x.1) as f64;
    let on = |ts: &[usize]| ts.iter().any(|&u| thread_of(u) == t);
    if on(&e.push_tasks) && on(&e.pull_tasks) {
        pk / 2.0
    } else {
        pk
    }
}

/// One crossing queue's measured lines per crossing packet: the producer
/// end (None where its producers are not sources) and the consumer end.
pub type EndLines = (Option<f64>, f64);

/// What a crossing's ends touch of a packet that crossed, measured:
/// per queue, (producer, consumer) ns per crossing packet per ns of line
/// time. Run D (two pinned threads, the static placement, every element
/// timed) against run B (one thread, every element timed): each element
/// is charged its extra cycles per packet on its thread in D over B
/// (both corrected for the share of its core the run had: timed cycles
/// are wall-clock cycles). The consumer's end is what the elements of
/// its task after the puller add (they read the lines of packets written
/// on the other core), over the crossing packets it took; the producer's
/// end is what a source's own element adds (it takes buffers that come
/// back from the other core), over the crossing packets its task sent:
/// the rest of a producer's path touches lines its own core has just
/// written, and its figures in D are noise (fake-iprouter's ~15 elements
/// after its sources scattered +-100 cycles each between runs, ~1 line
/// per packet in all, against its measured slowdown of ~0.15 per end).
/// Left out: the queues and the pullers' own elements, whose cycles in D
/// also hold a consumer's empty polls and whose per-run costs fall with
/// its batch (that is `AppTask::crossing_factor`'s part); the elements
/// after a puller run per packet as on one thread, so the batch barely
/// moves them. Each figure is divided by D's line time. Returns per
/// queue the figures (None where D did not cross it; no producer figure
/// where its producers are not sources) and a note per task.
pub fn measured_line_growth(
    fb: &CostData,
    share_b: f64,
    fd: &CostData,
    shares_d: &[f64],
    line_ns: f64,
) -> (Vec<Option<EndLines>>, Vec<String>) {
    let nt = fd.tasks.len();
    let ghz = fd.hz / 1e9;
    let th = |k: usize| fd.tasks[k].thread;
    let share_d = |t: usize| shares_d.get(t).copied().unwrap_or(1.0).clamp(0.05, 1.0);
    let share_b = share_b.clamp(0.05, 1.0);
    let pullers = queue_pullers(fd);
    let per_b = |cyc: u64, pk: u64| (pk > 0).then(|| cyc as f64 * share_b / pk as f64);
    // Per task: extra cycles in D over B of its own (source) element,
    // and of the elements its pulls push through.
    let mut own_extra = vec![0.0; nt];
    let mut source = vec![false; nt];
    let mut path_extra = vec![0.0; nt];
    for (i, e) in fd.elements.iter().enumerate() {
        let Some(b) = fb.elements.get(i) else {
            continue;
        };
        if e.is_queue {
            continue;
        }
        let own: Vec<usize> = (0..nt).filter(|&k| fd.tasks[k].element == e.name).collect();
        if !own.is_empty() {
            if own.iter().any(|k| pullers.contains(k)) {
                continue;
            }
            // A source: its cycles per packet of its task.
            let pk_b: u64 = own
                .iter()
                .map(|&k| fb.tasks.get(k).map_or(0, |x| x.packets))
                .sum();
            let Some(cb) = per_b(b.cycles, pk_b) else {
                continue;
            };
            for (t, &(cyc, _)) in e.per_thread.iter().enumerate() {
                let here: Vec<usize> = own.iter().copied().filter(|&k| th(k) == t).collect();
                let pk_d: u64 = here.iter().map(|&k| fd.tasks[k].packets).sum();
                if pk_d == 0 {
                    continue;
                }
                let x = cyc as f64 * share_d(t) - cb * pk_d as f64;
                for &k in &here {
                    own_extra[k] += x / here.len() as f64;
                    source[k] = true;
                }
            }
            continue;
        }
        let Some(cb) = per_b(b.cycles, b.packets) else {
            continue;
        };
        // The pullers whose paths run through it.
        let tasks: Vec<usize> = e
            .push_tasks
            .iter()
            .chain(&e.pull_tasks)
            .copied()
            .filter(|k| pullers.contains(k))
            .collect();
        for (t, &(cyc, pk)) in e.per_thread.iter().enumerate() {
            let here: Vec<usize> = tasks.iter().copied().filter(|&k| th(k) == t).collect();
            if pk == 0 || here.is_empty() {
                continue;
            }
            let x = cyc as f64 * share_d(t) - cb * pk as f64;
            for &k in &here {
                path_extra[k] += x / here.len() as f64;
            }
        }
    }
    // Packets task `c` took from queue `e`: its thread's pulls, shared
    // by the thread's pullers of `e`.
    let got_by = |e: &paraclick_runtime::sched::ElementCost, c: usize| -> f64 {
        let nc = e.pull_tasks.iter().filter(|&&u| th(u) == th(c)).count();
        one_side(e, th(c), &th) / nc.max(1) as f64
    };
    // Per task: crossing packets it sent and took in D. Each task is
    // charged its part once, however many tasks are at the other end (two
    // sources feeding one crossing queue counted the consumer's packets
    // twice, halving its measured lines), and the producers of one thread
    // share their thread's pushes in proportion to the packets each sent
    // (they need not have taken equal turns at a full queue).
    let (mut sent, mut took) = (vec![0.0; nt], vec![0.0; nt]);
    let mut crossed_q = Vec::new();
    for e in fd.elements.iter().filter(|e| e.is_queue) {
        let crosses = |k: usize, others: &[usize]| others.iter().any(|&u| th(u) != th(k));
        let any = e.push_tasks.iter().any(|&p| crosses(p, &e.pull_tasks));
        for &p in e.push_tasks.iter().filter(|&&p| crosses(p, &e.pull_tasks)) {
            let mates = || e.push_tasks.iter().filter(|&&u| th(u) == th(p));
            let all: u64 = mates().map(|&u| fd.tasks[u].packets).sum();
            let w = if all > 0 {
                fd.tasks[p].packets as f64 / all as f64
            } else {
                1.0 / mates().count().max(1) as f64
            };
            sent[p] += one_side(e, th(p), &th) * w;
        }
        for &c in e.pull_tasks.iter().filter(|&&c| crosses(c, &e.push_tasks)) {
            took[c] += got_by(e, c);
        }
        crossed_q.push(any);
    }
    // A consumer's crossed packets may go on, on its thread, through
    // queues that do not cross to other tasks there (a pipeline split's
    // Unqueue fills a replica's queues, which its puller drains): those
    // tasks handle the crossed packets too, and what they add (a Discard
    // handing buffers home to the other core) is the crossing's. Per
    // task: its crossed input (packets from crossing queues) and, per
    // queue on its thread fed by tasks that handle crossed packets, the
    // packets it took there; its extra goes back to those tasks in
    // proportion.
    let queues: Vec<&paraclick_runtime::sched::ElementCost> =
        fd.elements.iter().filter(|e| e.is_queue).collect();
    let mut fed: Vec<bool> = took.iter().map(|&x| x > 0.0).collect();
    for _ in 0..nt {
        let mut changed = false;
        for e in &queues {
            for &c in &e.pull_tasks {
                if !fed[c]
                    && e.push_tasks
                        .iter()
                        .any(|&p| p != c && th(p) == th(c) && fed[p])
                    && e.push_tasks.iter().all(|&p| th(p) == th(c))
                {
                    fed[c] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Per task: (share of its extra that is its own crossed input's,
    // [(task it goes back to, share)]).
    let mut split: Vec<(f64, Vec<(usize, f64)>)> = vec![(1.0, Vec::new()); nt];
    for (d, sp) in split.iter_mut().enumerate() {
        let mut cross = 0.0;
        let mut local: Vec<(f64, Vec<usize>)> = Vec::new();
        for e in &queues {
            if !e.pull_tasks.contains(&d) {
                continue;
            }
            if e.push_tasks.iter().any(|&p| th(p) != th(d)) {
                cross += got_by(e, d);
            } else {
                let from: Vec<usize> = e
                    .push_tasks
                    .iter()
                    .copied()
                    .filter(|&p| p != d && fed[p])
                    .collect();
                if !from.is_empty() {
                    local.push((got_by(e, d), from));
                }
            }
        }
        let total = cross + local.iter().map(|x| x.0).sum::<f64>();
        if total <= 0.0 || local.is_empty() {
            continue;
        }
        sp.0 = cross / total;
        for (pk, from) in local {
            for p in &from {
                sp.1.push((*p, pk / total / from.len() as f64));
            }
        }
    }
    // Each task's extra with what comes back to it from after it.
    let mut carried = path_extra.clone();
    for _ in 0..nt {
        let mut next = path_extra.clone();
        for (d, sp) in split.iter().enumerate() {
            for &(p, w) in &sp.1 {
                next[p] += carried[d] * w;
            }
        }
        if next == carried {
            break;
        }
        carried = next;
    }
    let path_extra: Vec<f64> = (0..nt).map(|k| carried[k] * split[k].0).collect();
    let lines = |x: f64, n: f64| {
        if n > 0.0 && line_ns > 0.0 {
            (x / ghz / n / line_ns).max(0.0)
        } else {
            0.0
        }
    };
    let mut notes = Vec::new();
    for k in 0..nt {
        for (what, x, n) in [
            ("sending", own_extra[k], sent[k]),
            ("taking", path_extra[k], took[k]),
        ] {
            if n > 0.0 {
                notes.push(format!(
                    "{} {what} {:+.1} ns per crossing packet ({:.2} lines)",
                    fd.tasks[k].element,
                    x / ghz / n,
                    lines(x, n)
                ));
            }
        }
    }
    let mut out = Vec::new();
    for (e, &any) in fd.elements.iter().filter(|e| e.is_queue).zip(&crossed_q) {
        if !any {
            out.push(None);
            continue;
        }
        let mean = |ts: &[usize], f: &dyn Fn(usize) -> Option<f64>| {
            let v: Vec<f64> = ts.iter().filter_map(|&k| f(k)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let p = mean(&e.push_tasks, &|k| {
            (sent[k] > 0.0 && source[k]).then(|| lines(own_extra[k], sent[k]))
        });
        let c = mean(&e.pull_tasks, &|k| {
            (took[k] > 0.0).then(|| lines(path_extra[k], took[k]))
        });
        out.push(Some((p, c.unwrap_or(0.0))));
    }
    (out, notes)
}

/// The tasks that pull from a queue (a task per puller, repeated if it
/// pulls from several queues).
fn queue_pullers(cd: &CostData) -> Vec<usize> {
    cd.elements
        .iter()
        .filter(|e| e.is_queue)
        .flat_map(|e| e.pull_tasks.iter().copied())
        .collect()
}

/// Per queue: whether an element on its consumers' side (the queue's
/// pullers, what they pull through and what they push to) reads the
/// packet's data: its class does not say it touches only metadata
/// ([`reads_data`]).
pub fn consumer_reads_data(cd: &CostData, reg: &Registry) -> Vec<bool> {
    let task_elem = |k: usize| cd.tasks.get(k).map(|t| t.element.as_str());
    cd.elements
        .iter()
        .filter(|e| e.is_queue)
        .map(|q| {
            cd.elements.iter().any(|e| {
                let on_side = e
                    .push_tasks
                    .iter()
                    .chain(&e.pull_tasks)
                    .any(|k| q.pull_tasks.contains(k))
                    || q.pull_tasks
                        .iter()
                        .any(|&k| task_elem(k) == Some(e.name.as_str()));
                on_side && !e.is_queue && reads_data(reg, &e.class)
            })
        })
        .collect()
}

/// Measured line terms of the configurations profiled, kept next to the
/// system model so that later profiles use them too (`line-terms.json`):
/// per configuration (its text and defines), the last
/// [`LINE_CACHE_KEEP`] measurements per queue ([`LineMeasure`]), in
/// either line state (a term is in whole lines, which the fast and the
/// slow state measure alike once each task is charged its own crossing
/// packets: firewall-pipeline's consumer 1.15-1.58 lines at a 25 ns
/// line, 0.96-1.38 at 190 ns; replicated-qos's 0.77-1.18 and
/// 0.91-0.97). The model uses their median per end: one profile's
/// figure (a fast-state run now and then reads twice the others) or
/// one under another process's load is off by up to a factor of two.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct LineCache {
    /// [`LINE_CACHE_VERSION`] of the paraclick that measured them; a
    /// cache of another is dropped.
    #[serde(default)]
    version: u32,
    configs: std::collections::BTreeMap<String, Vec<LineMeasure>>,
}

/// The line cache's version: raised when the crossing run's counting
/// changes what a figure means. 2: puller tasks' packets counted once
/// and crossing packets charged per task once (2026-11-27): the earlier
/// counting read firewall-pipeline's consumer at 0.66 lines instead of
/// 1.24, and a cache that kept such figures would keep them for
/// [`LINE_CACHE_KEEP`] more profiles.
pub const LINE_CACHE_VERSION: u32 = 2;

/// One measurement of a queue's line term.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LineMeasure {
    pub queue: String,
    /// Lines per crossing packet at the producer's end (None where its
    /// producers are not sources).
    pub producer: Option<f64>,
    /// At the consumer's end.
    pub consumer: f64,
    /// The line time it was measured at, ns.
    pub line_ns: f64,
}

/// The line-term cache: `PARACLICK_LINE_TERMS` if set (the tests' own
/// file, so that their profiles stay out of the user's cache), else
/// `line-terms.json` beside the system model.
fn line_cache_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("PARACLICK_LINE_TERMS") {
        return Some(p.into());
    }
    Some(
        paraclick_model::machine::cache_path()?
            .parent()?
            .join("line-terms.json"),
    )
}

fn line_cache_key(src: &Source, defines: &[(String, String)]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    src.text.hash(&mut h);
    let mut d: Vec<&(String, String)> = defines.iter().filter(|d| d.0 != "N").collect();
    d.sort();
    d.hash(&mut h);
    format!("{}:{:016x}", src.name, h.finish())
}

fn line_cache_load() -> LineCache {
    line_cache_path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| line_cache_parse(&t))
        .unwrap_or_default()
}

/// A line cache's text, empty if unreadable or of another version.
fn line_cache_parse(text: &str) -> LineCache {
    serde_json::from_str::<LineCache>(text)
        .ok()
        .filter(|c| c.version == LINE_CACHE_VERSION)
        .unwrap_or_default()
}

/// Short crossing runs (half the profile's run time each) per profile;
/// their median per queue is one measurement.
pub const CROSSING_RUNS: usize = 3;

/// Measurements kept per queue of a configuration.
pub const LINE_CACHE_KEEP: usize = 5;

/// Adds this profile's measurements to the configuration's (the oldest
/// beyond [`LINE_CACHE_KEEP`] per queue dropped) and returns them all.
fn line_cache_store(key: &str, terms: Vec<LineMeasure>) -> Vec<LineMeasure> {
    let mut c = line_cache_load();
    c.version = LINE_CACHE_VERSION;
    let all = c.configs.entry(key.to_string()).or_default();
    for t in terms {
        let n = all.iter().filter(|x| x.queue == t.queue).count();
        if n >= LINE_CACHE_KEEP {
            if let Some(i) = all.iter().position(|x| x.queue == t.queue) {
                all.remove(i);
            }
        }
        all.push(t);
    }
    let out = all.clone();
    let Some(p) = line_cache_path() else {
        return out;
    };
    if let Some(dir) = p.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(t) = serde_json::to_string_pretty(&c) {
        let _ = std::fs::write(p, t);
    }
    out
}

/// Per queue of `kept` measurements: the median producer figure (None
/// where none was measured), the median consumer figure, and how many
/// there are.
pub fn line_medians(kept: &[LineMeasure], queue: &str) -> Option<(Option<f64>, f64, usize)> {
    let mine: Vec<&LineMeasure> = kept.iter().filter(|x| x.queue == queue).collect();
    if mine.is_empty() {
        return None;
    }
    let mut p: Vec<f64> = mine.iter().filter_map(|x| x.producer).collect();
    let mut c: Vec<f64> = mine.iter().map(|x| x.consumer).collect();
    Some((
        (!p.is_empty()).then(|| crate::stats::median(&mut p)),
        crate::stats::median(&mut c),
        mine.len(),
    ))
}

/// How far `queue`'s measured figures disagree (LineTerm::spread):
/// their median absolute deviation from their median over `all` (this
/// profile's crossing runs and the kept measurements), the wider end;
/// None for fewer than two. Robust to the one run in several that reads
/// twice the others (replicated-qos's split consumer: 1.27-1.63 lines,
/// and once 3.00).
pub fn line_spread<'a>(all: impl Iterator<Item = &'a LineMeasure>, queue: &str) -> Option<f64> {
    let mine: Vec<&LineMeasure> = all.filter(|x| x.queue == queue).collect();
    if mine.len() < 2 {
        return None;
    }
    // The median of no figures is 0: a queue without producer figures
    // has no producer spread.
    let mad = |mut v: Vec<f64>| {
        let m = crate::stats::median(&mut v);
        let mut d: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
        crate::stats::median(&mut d)
    };
    let c = mad(mine.iter().map(|x| x.consumer).collect());
    let p = mad(mine.iter().filter_map(|x| x.producer).collect());
    Some(c.max(p))
}

pub fn entry_tasks(cd: &CostData) -> Vec<usize> {
    let by_name: std::collections::HashMap<&str, usize> = cd
        .elements
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), i))
        .collect();
    (0..cd.tasks.len())
        .filter(|&t| {
            by_name
                .get(cd.tasks[t].element.as_str())
                .is_some_and(|&e| cd.elements[e].ninputs == 0)
        })
        .collect()
}

/// A puller's cost per packet with its producers on other threads (run
/// A: a thread per task) relative to its cost on one thread (run B),
/// when it took markedly bigger batches there (see
/// `AppTask::crossing_factor`); 0 (unknown) otherwise. Run A's cost also
/// holds the packets' move between cores, which the model charges apart
/// (the hop), so the factor errs towards no gain.
fn crossing_factor(a: &TaskCost, b: &TaskCost) -> f64 {
    if a.work == 0 || b.work == 0 || a.packets == 0 || b.packets == 0 {
        return 0.0;
    }
    let batch = |t: &TaskCost| t.packets as f64 / t.work as f64;
    let per_packet = |t: &TaskCost| t.cycles as f64 / t.packets as f64;
    if batch(a) < 1.5 * batch(b) || per_packet(b) <= 0.0 {
        return 0.0;
    }
    (per_packet(a) / per_packet(b)).clamp(0.05, 1.0)
}

/// The application model of a configuration from two short runs:
/// one thread per task with per-element sampling (which tasks put packets
/// into which queues), and one thread without it (what each task costs,
/// free of the sampling's own cost).
pub fn profile_app(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    secs: f64,
) -> Result<(App, String), String> {
    let probe = build(src, reg, defines, 1, SchedPolicy::Static, false, true)?;
    let ntasks = probe.task_threads().len();
    if ntasks == 0 {
        return Err("the configuration has no tasks: nothing to model".into());
    }
    drop(probe);
    // Run A: flows. One thread per task (not pinned), static placement.
    let a = build(src, reg, defines, ntasks, SchedPolicy::Static, true, false)?;
    run_for(&a, secs);
    let fa = a.cost_data();
    let entries = entry_tasks(&fa);
    let entry_a: f64 = entries.iter().map(|&t| fa.tasks[t].packets as f64).sum();
    if entry_a <= 0.0 {
        return Err(
            "no packets entered the router during the profile run (sources without traffic?)"
                .into(),
        );
    }
    let ppw: Vec<f64> = fa
        .tasks
        .iter()
        .map(|t| {
            if t.work > 0 {
                t.packets as f64 / t.work as f64
            } else {
                1.0
            }
        })
        .collect();
    let mut queues = Vec::new();
    for e in fa.elements.iter().filter(|e| e.is_queue) {
        // A thread with tasks at both ends of the queue (a configuration
        // whose StaticThreadSched puts them together: run A keeps it)
        // counts each packet in and out ([`one_side`]): ret-c's second
        // queue, its Unqueues on one thread, read 2 packets per entering
        // packet.
        let thread_of = |u: usize| fa.tasks[u].thread;
        let share = |tasks: &[usize]| -> Vec<(usize, f64)> {
            tasks
                .iter()
                .map(|&t| {
                    let th = thread_of(t);
                    let same = tasks.iter().filter(|&&u| thread_of(u) == th).count();
                    let p = one_side(e, th, &thread_of);
                    (t, p / same.max(1) as f64 / entry_a)
                })
                .collect()
        };
        // The consumers' batch: packets per run with work.
        let (pk, wk) = e.pull_tasks.iter().fold((0u64, 0u64), |(p, w), &t| {
            (p + fa.tasks[t].packets, w + fa.tasks[t].work)
        });
        queues.push(AppQueue {
            name: e.name.clone(),
            producers: share(&e.push_tasks),
            consumers: share(&e.pull_tasks),
            batch: if wk > 0 { pk as f64 / wk as f64 } else { 0.0 },
            line_growth: LineTerm::default(),
        });
    }
    let pullers = queue_pullers(&fa);
    drop(a);
    // Run B: what each task costs, relative to the others: one pinned
    // thread with every task run timed.
    let (fb, share_b) = run_b(src, reg, defines, secs)?;
    let key = line_cache_key(src, defines);
    let line_note = line_terms(
        src,
        &key,
        reg,
        defines,
        secs,
        &fb,
        share_b,
        ntasks,
        &mut queues,
        true,
    )?;
    // Run C: the elapsed cycles per packet, without any sampling cost.
    let c = build(src, reg, defines, 1, SchedPolicy::Static, false, false)?;
    let t0 = std::time::Instant::now();
    let cpu0 = paraclick_model::machine::process_cpu_ns();
    run_for(&c, secs);
    let wall = t0.elapsed().as_secs_f64();
    // The worker's share of a core meanwhile (the stopper thread sleeps).
    let share =
        ((paraclick_model::machine::process_cpu_ns() - cpu0) as f64 / 1e9 / wall).clamp(1e-3, 1.0);
    let fc = c.cost_data();
    let entry_c: f64 = entries
        .iter()
        .map(|&t| fc.tasks[t].work as f64 * ppw[t])
        .sum();
    if entry_c <= 0.0 {
        return Err("no packets entered the router during the timing run".into());
    }
    // Per task: its timed cycles in run B plus the scheduler's own work
    // (its loop, idle polls, timers) in proportion to its runs with work,
    // per packet entering; then all scaled so that one thread's total is
    // run C's elapsed cycles per packet.
    let entry_b: f64 = entries.iter().map(|&t| fb.tasks[t].packets as f64).sum();
    if entry_b <= 0.0 {
        return Err("no packets entered the router during the timing run".into());
    }
    let task_cycles: f64 = fb.tasks.iter().map(|t| t.cycles as f64).sum();
    let work: f64 = fb.tasks.iter().map(|t| t.work as f64).sum::<f64>().max(1.0);
    let residual = ((fb.run_cycles as f64 - task_cycles) / work).max(0.0);
    let raw: Vec<f64> = fb
        .tasks
        .iter()
        .map(|t| (t.cycles as f64 + t.work as f64 * residual) / entry_b)
        .collect();
    let elapsed = fc.run_cycles as f64 / entry_c;
    let scale = elapsed / raw.iter().sum::<f64>().max(1e-9);
    let tasks: Vec<AppTask> = fb
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| AppTask {
            name: if t.index > 0 {
                format!("{}[{}]", t.element, t.index)
            } else {
                t.element.clone()
            },
            cycles_per_packet: raw[i] * scale,
            entry: entries.contains(&i),
            packets: t.packets as f64 / entry_b,
            crossing_factor: if pullers.contains(&i) {
                crossing_factor(&fa.tasks[i], t)
            } else {
                0.0
            },
            pass_cycles_per_packet: t.work as f64 * residual / entry_b * scale,
            pass_mates: fb.tasks.len() as f64,
        })
        .collect();
    let mut notes = String::new();
    let _ = writeln!(
        notes,
        "application: {} tasks, {} queues; timing run {:.0} packets in {:.2} s on 1 thread ({:.2} Mpps, {:.2} of a core); profiled run: scheduler {:.0} cycles per task run, all x{:.3} to the unprofiled elapsed",
        tasks.len(),
        queues.len(),
        entry_c,
        wall,
        entry_c / wall / 1e6,
        share,
        residual,
        scale
    );
    let _ = writeln!(notes, "{line_note}");
    Ok((
        App {
            name: src.name.clone(),
            tasks,
            queues,
            packet_bytes: 0.0,
            tsc_ghz: fb.hz / 1e9,
            core_share: share,
            // As `bench --mlffr` measures: sources offered rates (a
            // RatedSource's) get a fixed rate each, any other source runs
            // at saturation.
            free_sources: !entries.iter().any(|&t| {
                fa.elements.iter().any(|e| {
                    e.name == fa.tasks[t].element
                        && crate::mlffr::offers_rate(reg, &e.class, false).is_some()
                })
            }),
        },
        notes,
    ))
}

/// Run B: one pinned thread with every task run timed; its costs and
/// the share of a core it had.
fn run_b(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    secs: f64,
) -> Result<(CostData, f64), String> {
    let b = build(src, reg, defines, 1, SchedPolicy::Static, true, false)?;
    let share = run_for_shares(&b, secs, 1)[0];
    Ok((b.cost_data(), share))
}

/// The line terms of a configuration's queues (what `paraclick
/// parallelize` asks of a candidate that adds queues): with `run`, the
/// one-thread run B and the crossing runs D, with the figures of earlier
/// measurements of this configuration (the line cache), else those
/// alone. Per queue that has a measured
/// term: its name and term; and the note.
pub fn queue_line_terms(
    src: &Source,
    key_text: &str,
    reg: &Registry,
    secs: f64,
    run: bool,
) -> Result<(Vec<(String, LineTerm)>, String), String> {
    let defines: &[(String, String)] = &[];
    let key = line_cache_key(
        &Source {
            name: src.name.clone(),
            text: key_text.to_string(),
        },
        defines,
    );
    let (fb, share_b) = if run {
        run_b(src, reg, defines, secs)?
    } else {
        (
            build(src, reg, defines, 1, SchedPolicy::Static, true, true)?.cost_data(),
            1.0,
        )
    };
    let mut queues: Vec<AppQueue> = fb
        .elements
        .iter()
        .filter(|e| e.is_queue)
        .map(|e| AppQueue {
            name: e.name.clone(),
            ..AppQueue::default()
        })
        .collect();
    let ntasks = fb.tasks.len();
    let note = line_terms(
        src,
        &key,
        reg,
        defines,
        secs,
        &fb,
        share_b,
        ntasks,
        &mut queues,
        run,
    )?;
    Ok((
        queues
            .into_iter()
            .filter(|q| q.line_growth.consumer.is_some())
            .map(|q| (q.name, q.line_growth))
            .collect(),
        note,
    ))
}

/// Each queue's line term ([`LineTerm`]) in `queues` (named as `fb`'s
/// queue elements, in their order), given the one-thread run B (`fb`,
/// at `share_b` of a core): the consumers' estimated data lines from
/// the classes, and the measured figures (run D, when `run`
/// and the line is slow, kept in the configuration's line cache; else
/// the cache's earlier ones) where there are any. Returns the note.
#[allow(clippy::too_many_arguments)]
fn line_terms(
    src: &Source,
    key: &str,
    reg: &Registry,
    defines: &[(String, String)],
    secs: f64,
    fb: &CostData,
    share_b: f64,
    ntasks: usize,
    queues: &mut [AppQueue],
    run: bool,
) -> Result<String, String> {
    // Run D: what crossing cores costs each end in this configuration:
    // two pinned threads, every element timed, the line time taken
    // before and after, in whatever line state the machine is in (until
    // 2026-11-27 only in the slow one, ~180 ns on this VM: a machine
    // whose line is always fast, as most are, never had its own terms);
    // a configuration's figures from earlier profiles are kept and their
    // median used; without any, the estimate from the consumers' element
    // classes.
    let reads = consumer_reads_data(fb, reg);
    for (q, &r) in queues.iter_mut().zip(&reads) {
        q.line_growth.consumer_data = if r { DATA_LINES_PER_PACKET } else { 0.0 };
    }
    let mut line_note = format!(
        "line term: estimated (consumers reading packet data: {})",
        queues
            .iter()
            .zip(&reads)
            .filter(|x| *x.1)
            .map(|x| x.0.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if ntasks >= 2 && !queues.is_empty() && cpus >= 2 {
        let mut kept = line_cache_load()
            .configs
            .get(key)
            .cloned()
            .unwrap_or_default();
        // CROSSING_RUNS short runs, each kept where the line stayed in
        // one state throughout.
        let mut now: Vec<LineMeasure> = Vec::new();
        let mut said = Vec::new();
        let mut why = if run {
            String::new()
        } else {
            "no crossing run now".to_string()
        };
        for _ in 0..if run { CROSSING_RUNS } else { 0 } {
            let l0 = paraclick_model::machine::line_ns_now(crate::stats::LINE_ROUNDS);
            let d = build(src, reg, defines, 2, SchedPolicy::Static, true, false)?;
            let shares_d = run_for_shares(&d, secs / 2.0, 2);
            let fd = d.cost_data();
            drop(d);
            let l1 = paraclick_model::machine::line_ns_now(crate::stats::LINE_ROUNDS);
            match (l0, l1) {
                (Some(a), Some(b)) if !crate::stats::changed_state(a, b) => {
                    let l = (a + b) / 2.0;
                    let (g, notes) = measured_line_growth(fb, share_b, &fd, &shares_d, l);
                    let got: Vec<LineMeasure> = queues
                        .iter()
                        .zip(&g)
                        .filter_map(|(q, g)| {
                            g.map(|(producer, consumer)| LineMeasure {
                                queue: q.name.clone(),
                                producer,
                                consumer,
                                line_ns: l,
                            })
                        })
                        .collect();
                    if got.is_empty() {
                        why = format!("the crossing run at a {l:.0} ns line crossed no queue");
                        break;
                    }
                    said.push(format!(
                        "{l:.0} ns, shares {}: {}",
                        shares_d
                            .iter()
                            .map(|x| format!("{x:.2}"))
                            .collect::<Vec<_>>()
                            .join("/"),
                        notes.join(", ")
                    ));
                    now.extend(got);
                }
                _ => why = "the line time changed under way".to_string(),
            }
        }
        if !now.is_empty() {
            // This profile's runs as one measurement (their median per
            // queue), added to the configuration's.
            let mut one = Vec::new();
            for q in queues.iter() {
                if let Some((producer, consumer, _)) = line_medians(&now, &q.name) {
                    let line_ns = now
                        .iter()
                        .find(|x| x.queue == q.name)
                        .map_or(0.0, |x| x.line_ns);
                    one.push(LineMeasure {
                        queue: q.name.clone(),
                        producer,
                        consumer,
                        line_ns,
                    });
                }
            }
            kept = line_cache_store(key, one);
            why = format!(
                "measured now (one-thread run share {share_b:.2}; {})",
                said.join("; ")
            );
        }
        let mut used = Vec::new();
        for q in queues.iter_mut() {
            if let Some((p, c, n)) = line_medians(&kept, &q.name) {
                q.line_growth.producer = p;
                q.line_growth.consumer = Some(c);
                q.line_growth.spread = line_spread(kept.iter().chain(&now), &q.name);
                used.push(format!(
                    "{} {}/{c:.2} (median of {n}{})",
                    q.name,
                    p.map_or("-".to_string(), |p| format!("{p:.2}")),
                    q.line_growth
                        .spread
                        .map_or(String::new(), |s| format!(", spread {s:.2}"))
                ));
            }
        }
        let lent = lend_producer_terms(queues);
        if !lent.is_empty() {
            used.push(format!(
                "producer lent to {} (same producers, consumers reading data alike)",
                lent.join(", ")
            ));
        }
        if used.is_empty() {
            let _ = write!(line_note, "; not measured: {why}");
        } else {
            line_note = format!(
                "line term: measured, lines per crossing packet (producer/consumer) {}; {why}",
                used.join(", ")
            );
        }
    }
    Ok(line_note)
}

/// A queue the crossing run did not cross (run D places the tasks
/// round-robin: of replicated-qos's two replicas, only one crosses) gets
/// the median measured producer figure of the queues with the same
/// producer tasks whose consumers read packet data as its own do: what
/// a source pays per crossing packet is for buffers that come back with
/// lines the other core read, whichever queue they crossed (as a split's
/// new queue gets, `parallelize::new_queue_term`). Without it the
/// unmeasured replica's crossing was the cheaper one by the measured
/// replica's 0.58 lines, and the search put the unmeasured one across:
/// predicted 5% better, measured 16% worse. Returns the queues lent to.
pub fn lend_producer_terms(queues: &mut [AppQueue]) -> Vec<String> {
    let tasks = |q: &AppQueue| {
        let mut t: Vec<usize> = q.producers.iter().map(|p| p.0).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    let mut lent = Vec::new();
    for i in 0..queues.len() {
        if queues[i].line_growth.producer.is_some() {
            continue;
        }
        let (mine, reads) = (tasks(&queues[i]), queues[i].line_growth.consumer_data > 0.0);
        let mut got: Vec<f64> = queues
            .iter()
            .filter(|q| q.line_growth.consumer.is_some())
            .filter(|q| (q.line_growth.consumer_data > 0.0) == reads && tasks(q) == mine)
            .filter_map(|q| q.line_growth.producer)
            .collect();
        if !got.is_empty() && !mine.is_empty() {
            queues[i].line_growth.producer = Some(crate::stats::median(&mut got));
            lent.push(queues[i].name.clone());
        }
    }
    lent
}

/// Where each task goes on `nthreads` threads under `policy`: pins and
/// round-robin (static), or the adaptive scheduler's placement for the
/// measured loads.
pub fn mapping(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    app: &App,
    nthreads: usize,
    policy: SchedPolicy,
) -> Result<Vec<usize>, String> {
    let r = build(src, reg, defines, nthreads, policy, false, true)?;
    let initial: Vec<usize> = r.task_threads().into_iter().map(|(_, _, th)| th).collect();
    if policy == SchedPolicy::Adaptive && nthreads > 1 {
        // As the adaptive scheduler does: the longest-first placement, but
        // only if it cuts the busiest thread's load by its hysteresis.
        let loads: Vec<u64> = app
            .tasks
            .iter()
            .map(|t| (t.cycles_per_packet * 1e3) as u64)
            .collect();
        let lpt = r.balanced_assignment(&loads);
        let busiest = |a: &[usize]| -> u64 {
            let mut per = vec![0u64; nthreads];
            for (t, &th) in a.iter().enumerate() {
                per[th % nthreads] += loads.get(t).copied().unwrap_or(0);
            }
            per.into_iter().max().unwrap_or(0)
        };
        if (busiest(&lpt) as f64) < busiest(&initial) as f64 * (1.0 - HYSTERESIS) {
            return Ok(lpt);
        }
    }
    Ok(initial)
}

pub struct ConfigModel {
    pub text: String,
    pub mlffr: f64,
    /// Where the prediction used a line time other than the hop
    /// calibration's: the prediction at the calibration's (the line
    /// time's part of the answer is the difference).
    pub mlffr_calibrated_line: Option<f64>,
    /// Each thread's ns per packet entering the router (the model's
    /// stages at the profile's mix of sources, at the core shares the
    /// prediction was made for: CPU ns on a core per thread with
    /// `--dedicated`).
    pub thread_ns: Vec<f64>,
}

/// The whole model of a configuration at `nthreads` threads.
#[allow(clippy::too_many_arguments)]
pub fn config_model(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    nthreads: usize,
    policy: SchedPolicy,
    whatif: &WhatIf,
    machine: &Machine,
    secs: f64,
    app: Option<&App>,
) -> Result<ConfigModel, String> {
    let mut out = String::new();
    let owned;
    let app = match app {
        Some(a) => a,
        None => {
            let (a, notes) = profile_app(src, reg, defines, secs)?;
            out.push_str(&notes);
            owned = a;
            &owned
        }
    };
    let mut app = app.clone();
    if app.packet_bytes == 0.0 {
        app.packet_bytes = 64.0;
    }
    let assign = mapping(src, reg, defines, &app, nthreads, policy)?;
    let mut whatif = whatif.clone();
    let mut share_note = String::new();
    if whatif.core_share.is_empty() && whatif.clock_ghz.is_none() {
        // Each busy thread's share of a core now (all busy threads spinning
        // at once), relative to one thread's: the timing run's situation.
        // Threads without tasks sleep and take nothing.
        let busy: Vec<usize> = (0..nthreads)
            .filter(|t| assign.iter().any(|&a| a % nthreads == *t))
            .collect();
        // Relative to the share the timing run had (measured during it).
        let then = app.core_share.clamp(1e-3, 1.0);
        let n = paraclick_model::machine::core_shares(busy.len(), 100);
        whatif.core_share = vec![1.0; nthreads];
        for (k, &t) in busy.iter().enumerate() {
            whatif.core_share[t] = n[k] / then;
        }
        share_note = format!(
            "; core share: timing run {:.2}, now {} busy thread(s) {}",
            then,
            busy.len(),
            n.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join("/")
        );
    }
    let (crossing, _) = app.crossings(&assign, nthreads);
    let mut line_note = String::new();
    if whatif.line_ns.is_none() && crossing > 0.0 {
        // Packets cross cores: the line time they meet now, not the
        // calibration's (on this VM it moves between ~24 and ~180 ns).
        whatif.line_ns = paraclick_model::machine::line_ns_now(crate::stats::LINE_ROUNDS);
        if let Some(l) = whatif.line_ns {
            line_note = format!(" ({l:.0} ns now)");
        }
    } else if let Some(l) = whatif.line_ns {
        line_note = format!(" ({l:.0} ns used: given)");
    }
    let whatif = &whatif;
    let mlffr_calibrated_line = whatif.line_ns.map(|_| {
        let base = WhatIf {
            line_ns: None,
            ..whatif.clone()
        };
        app.predict(machine, &assign, nthreads, &base)
    });
    let model = app.model(machine, &assign, nthreads, whatif);
    let ev = model.evaluate();
    let thread_ns: Vec<f64> = model.stages.iter().map(|s| s.latency_ns).collect();
    let _ = writeln!(
        out,
        "system: {} cores, cycle counter {:.3} GHz, core-to-core line {:.0} ns{}, ring crossing +{:.0} ns per end, queue hop (producer/consumer end) {}, memory {:.1} GB/s; AF_PACKET {}, tap {}{}",
        machine.cores,
        machine.tsc_ghz,
        machine.line_transfer_ns,
        line_note,
        machine.crossing_ns,
        if machine.queue_hop.is_empty() {
            "unmeasured".to_string()
        } else {
            machine
                .queue_hop
                .iter()
                .map(|h| {
                    let (p, c) = machine.hop_ends_ns(h.batch);
                    let (kp, kc) = h.growth();
                    format!(
                        "+{p:.0}/+{c:.0} ns at BURST {} (line {:.0} ns; +{kp:.2}/+{kc:.2} per ns of line{})",
                        h.batch,
                        h.line_ns.unwrap_or(machine.line_transfer_ns),
                        if h.per_line.is_some() { ", measured" } else { ", default" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        },
        machine.memory_gbs,
        machine
            .af_packet_ns
            .map(|x| format!("{x:.0} ns"))
            .unwrap_or_else(|| "unmeasured".into()),
        machine
            .tap_ns
            .map(|x| format!("{x:.0} ns"))
            .unwrap_or_else(|| "unmeasured".into()),
        share_note
    );
    let _ = writeln!(
        out,
        "mapping: {} thread(s), {} placement; {:.2} queue crossings per packet",
        nthreads,
        if policy == SchedPolicy::Adaptive && nthreads > 1 {
            "adaptive (round-robin unless longest-first cuts the busiest thread by the hysteresis)"
        } else {
            "static (StaticThreadSched pins, round-robin)"
        },
        crossing
    );
    if crossing > 0.0 {
        let _ = writeln!(
            out,
            "crossing queues (consumer batch: hop producer/consumer end at the line time used): {}",
            app.queues
                .iter()
                .filter(|q| q.crosses(&assign, nthreads))
                .map(|q| {
                    let (p, c) = machine.hop_ends_with(q.batch, whatif.line_ns, &q.line_growth);
                    // The chain's growth at this queue's batch (the first
                    // point's, BURST 1's, was shown for every queue).
                    let (kp, kc) = machine.chain_lines(q.batch);
                    format!(
                        "{} (batch {:.1}: +{p:.1}/+{c:.1} ns; +{kp:.2}/+{kc:.2} per ns of line, +{:.2}/+{:.2} whole lines)",
                        q.name,
                        q.batch,
                        q.line_growth.producer_lines(kp),
                        q.line_growth.consumer_lines(kc)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let tick_ns = 1.0 / whatif.clock_ghz.unwrap_or(app.tsc_ghz);
    let _ = writeln!(
        out,
        "{:<28} {:>6} {:>14} {:>10}",
        "task", "thread", "cycles/packet", "ns/packet"
    );
    for (i, t) in app.tasks.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:<28} {:>6} {:>14.1} {:>10.1}",
            t.name,
            assign.get(i).copied().unwrap_or(0),
            t.cycles_per_packet,
            t.cycles_per_packet * tick_ns
        );
    }
    let rendered = model.render(&ev);
    if !app.free_sources {
        out.push_str(&rendered);
        return Ok(ConfigModel {
            text: answer_first(src, nthreads, ev.mlffr, &out),
            mlffr: ev.mlffr,
            mlffr_calibrated_line,
            thread_ns,
        });
    }
    // The table is the pipeline at the profile's mix of sources; sources
    // that offer no rate each run as fast as their own thread allows.
    let fr = app.free_running(machine, &assign, nthreads, whatif);
    let (body, _) = rendered
        .trim_end()
        .rsplit_once('\n')
        .unwrap_or((rendered.trim_end(), ""));
    out.push_str(body);
    out.push('\n');
    let _ = writeln!(
        out,
        "free-running sources ({}): {}; thread loads {}",
        fr.how,
        fr.group_rates
            .iter()
            .map(|(t, r)| format!("thread {t} sources {r:.0} pps"))
            .collect::<Vec<_>>()
            .join(", "),
        fr.loads
            .iter()
            .map(|l| format!("{l:.2}"))
            .collect::<Vec<_>>()
            .join("/")
    );
    let _ = writeln!(out, "MLFFR {:.0} pps", fr.mlffr);
    Ok(ConfigModel {
        text: answer_first(src, nthreads, fr.mlffr, &out),
        mlffr: fr.mlffr,
        mlffr_calibrated_line,
        thread_ns,
    })
}

/// The model's text headed by its answer: the predicted rate and the
/// bottleneck (from `details`' bottleneck line) on the first line, then
/// how they were reached (profile, system figures, mapping, tables).
/// The `MLFFR <pps> pps` line stays last.
fn answer_first(src: &Source, nthreads: usize, mlffr: f64, details: &str) -> String {
    let bottleneck = details
        .lines()
        .find_map(|l| l.strip_prefix("bottleneck: "))
        .map(|b| b.split(';').next().unwrap_or(b).trim())
        .unwrap_or("not found");
    format!(
        "{} on {nthreads} thread{}: predicted MLFFR {:.3} Mpps ({mlffr:.0} pps); bottleneck: {bottleneck}\n\n\
         How (this machine's figures, the configuration's profile, the model's table):\n{details}",
        src.name,
        if nthreads == 1 { "" } else { "s" },
        mlffr / 1e6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn a_queue_whose_ends_the_configuration_pins_to_one_thread_is_counted_once() {
        // Run A keeps the configuration's StaticThreadSched: q2's pusher
        // and puller share thread 1 there, whose count holds each packet
        // in and out (read as 2 packets per entering packet until
        // 2026-11-27: a search that moved them apart charged its crossing
        // twice).
        let src = Source {
            name: "pinned".into(),
            text: "s :: InfiniteSource(LENGTH 64, BURST 32) -> q1 :: Queue(1000); \
                   q1 -> u1 :: Unqueue(BURST 32) -> q2 :: Queue(1000); \
                   q2 -> u2 :: Unqueue(BURST 32) -> Discard; \
                   StaticThreadSched(s 0, u1 1, u2 1);"
                .into(),
        };
        let (app, _) = profile_app(&src, &crate::registry(), &[], 0.1).unwrap();
        for q in &app.queues {
            let p: f64 = q.producers.iter().map(|x| x.1).sum();
            let c: f64 = q.consumers.iter().map(|x| x.1).sum();
            assert!(
                (0.9..1.1).contains(&p) && (0.9..1.1).contains(&c),
                "{}: {p} {c}",
                q.name
            );
        }
        assert_eq!(app.queues.len(), 2);
    }

    #[test]
    fn a_terms_spread_is_its_measurements_median_deviation_and_a_cache_of_another_version_is_dropped(
    ) {
        let m = |queue: &str, producer: Option<f64>, consumer: f64| LineMeasure {
            queue: queue.into(),
            producer,
            consumer,
            line_ns: 25.0,
        };
        let all = [
            m("q", Some(0.30), 1.36),
            m("q", Some(0.34), 1.52),
            m("q", Some(0.33), 1.44),
            // One run in several reads twice the others: not the spread.
            m("q", Some(0.48), 3.00),
            m("q", Some(0.32), 1.35),
            m("other", None, 9.0),
        ];
        // Consumer: median 1.44, deviations 0.08 0.08 0 1.56 0.09.
        let s = line_spread(all.iter(), "q").unwrap();
        assert!((s - 0.08).abs() < 1e-9, "{s}");
        // The wider end counts: a producer spread over a consumer's.
        let wide = [
            m("p", Some(0.1), 1.0),
            m("p", Some(0.9), 1.0),
            m("p", Some(0.5), 1.0),
        ];
        assert!((line_spread(wide.iter(), "p").unwrap() - 0.4).abs() < 1e-9);
        // One measurement: no spread.
        assert_eq!(line_spread(all.iter(), "other"), None);
        assert_eq!(line_spread(all.iter(), "none"), None);

        // The cache: this version's is read, an older one's (no version:
        // the counting before 2026-11-27) is dropped whole.
        let c = LineCache {
            version: LINE_CACHE_VERSION,
            configs: [("k".to_string(), all.to_vec())].into(),
        };
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(line_cache_parse(&text).configs["k"], all.to_vec());
        let old = text.replace(&format!("\"version\":{LINE_CACHE_VERSION},"), "");
        assert_ne!(old, text);
        assert!(line_cache_parse(&old).configs.is_empty());
        assert!(line_cache_parse("not json").configs.is_empty());
    }

    #[test]
    fn an_uncrossed_replica_borrows_the_crossed_ones_producer_figure() {
        let q =
            |name: &str, producers: &[usize], reads: bool, measured: Option<(f64, f64)>| AppQueue {
                name: name.into(),
                producers: producers.iter().map(|&t| (t, 0.5)).collect(),
                consumers: vec![(9, 0.5)],
                batch: 32.0,
                line_growth: LineTerm {
                    producer: measured.map(|m| m.0),
                    consumer: measured.map(|m| m.1),
                    consumer_data: if reads { DATA_LINES_PER_PACKET } else { 0.0 },
                    spread: None,
                },
            };
        let mut qs = vec![
            q("r0/hi", &[0], true, Some((0.75, 1.05))),
            q("r0/lo", &[0], true, Some((0.95, 1.0))),
            q("r1/hi", &[0], true, None),
            // Another producer, or a consumer that reads no data: no loan.
            q("other", &[3], true, None),
            q("meta", &[0], false, None),
        ];
        let lent = lend_producer_terms(&mut qs);
        assert_eq!(lent, vec!["r1/hi".to_string()]);
        assert_eq!(qs[2].line_growth.producer, Some(0.85));
        // Only the producer is lent: the consumer stays estimated.
        assert_eq!(qs[2].line_growth.consumer, None);
        assert_eq!(qs[3].line_growth.producer, None);
        assert_eq!(qs[4].line_growth.producer, None);
    }

    /// queue-unqueue's shape with a WorkPackage after the Unqueue: task
    /// 0 (src) pushes into q, task 1 (uq) pulls it and pushes through c
    /// and w. One-thread run B and two-thread run D (src on thread 0, uq
    /// on 1), 1000 packets each, at 2 GHz; in D the source costs
    /// `src_extra` and w `w_extra` cycles per packet more than in B.
    fn runs(src_extra: u64, w_extra: u64, d_share: f64) -> (CostData, CostData) {
        use paraclick_runtime::sched::ElementCost;
        let el = |name: &str, class: &str, push: Vec<usize>, pull: Vec<usize>| ElementCost {
            name: name.into(),
            class: class.into(),
            is_queue: crate::registry()
                .get(class)
                .is_some_and(|c| c.kind == paraclick_runtime::Kind::Queue),
            push_tasks: push,
            pull_tasks: pull,
            ..ElementCost::default()
        };
        let task = |name: &str, thread: usize| TaskCost {
            element: name.into(),
            thread,
            work: 1000,
            packets: 1000,
            ..TaskCost::default()
        };
        let elements = vec![
            el("src", "InfiniteSource", vec![], vec![]),
            el("q", "Queue", vec![0], vec![1]),
            el("uq", "Unqueue", vec![], vec![]),
            el("c", "Counter", vec![1], vec![]),
            el("w", "WorkPackage", vec![1], vec![]),
        ];
        let mut b = CostData {
            hz: 2e9,
            profiled: true,
            threads: 1,
            elements: elements.clone(),
            tasks: vec![task("src", 0), task("uq", 0)],
            ..CostData::default()
        };
        let one = [
            (50_000, 0),
            (20_000, 2000),
            (8_000, 0),
            (30_000, 1000),
            (100_000, 1000),
        ];
        for (e, &(c, p)) in b.elements.iter_mut().zip(&one) {
            e.per_thread = vec![(c, p)];
            e.cycles = c;
            e.packets = p;
        }
        let mut d = CostData {
            threads: 2,
            elements,
            tasks: vec![task("src", 0), task("uq", 1)],
            ..b.clone()
        };
        // Thread 1's cycles are wall-clock cycles at `d_share` of a core.
        let t1 = |c: u64| (c as f64 / d_share) as u64;
        let two = [
            vec![(50_000 + 1000 * src_extra, 0), (0, 0)],
            vec![(10_000, 1000), (t1(90_000), 1000)],
            vec![(0, 0), (t1(3_000), 0)],
            vec![(0, 0), (t1(30_000), 1000)],
            vec![(0, 0), (t1(100_000 + 1000 * w_extra), 1000)],
        ];
        for (e, pt) in d.elements.iter_mut().zip(two) {
            e.cycles = pt.iter().map(|x| x.0).sum();
            e.packets = pt.iter().map(|x| x.1).sum();
            e.per_thread = pt;
        }
        (b, d)
    }

    #[test]
    fn crossing_run_gives_each_end_its_lines_per_packet() {
        // At a 100 ns line: the source's +10 cycles (5 ns) are 0.05 lines
        // at the producer; w's +200 cycles (100 ns) a line at the
        // consumer; the queue's and the puller's own cycles (empty polls,
        // batch) are left out.
        let (b, d) = runs(10, 200, 1.0);
        let (g, notes) = measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0);
        let (p, c) = g[0].unwrap();
        let p = p.unwrap();
        assert!((p - 0.05).abs() < 1e-9, "{p} {notes:?}");
        assert!((c - 1.0).abs() < 1e-9, "{c} {notes:?}");
        // Thread 1 had half a core: its wall-clock cycles are corrected.
        let (b, d) = runs(10, 200, 0.5);
        let (g, _) = measured_line_growth(&b, 1.0, &d, &[1.0, 0.5], 100.0);
        assert!((g[0].unwrap().1 - 1.0).abs() < 1e-9);
        // Nothing grew: no lines, and a faster element is not a negative
        // figure.
        let (b, d) = runs(0, 0, 1.0);
        assert_eq!(
            measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0).0,
            vec![Some((Some(0.0), 0.0))]
        );
        // The producer's path after its source touches lines its own
        // core wrote: what it adds in D is not the crossing's.
        let (mut b, mut d) = runs(10, 200, 1.0);
        let hs = |pt: Vec<(u64, u64)>| paraclick_runtime::sched::ElementCost {
            name: "hs".into(),
            class: "HashSwitch".into(),
            push_tasks: vec![0],
            cycles: pt.iter().map(|x| x.0).sum(),
            packets: pt.iter().map(|x| x.1).sum(),
            per_thread: pt,
            ..Default::default()
        };
        b.elements.push(hs(vec![(40_000, 1000)]));
        d.elements.push(hs(vec![(140_000, 1000), (0, 0)]));
        let (g, _) = measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0);
        assert!((g[0].unwrap().0.unwrap() - 0.05).abs() < 1e-9);
        // Both tasks on one thread: nothing crossed, nothing measured.
        let (b, mut d) = runs(10, 200, 1.0);
        d.tasks[1].thread = 0;
        assert_eq!(
            measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0).0,
            vec![None]
        );
    }

    #[test]
    fn two_sources_on_one_thread_share_the_crossing_by_what_each_sent() {
        // src (600 packets) and src2 (400) on thread 0 feed q, whose
        // puller is on thread 1: the consumer took 1000 crossing packets
        // (not 1000 per producer) and its w's +200 cycles a packet are a
        // line at a 100 ns line; each source's +10 cycles per packet it
        // sent are 0.05 lines, however unequal their turns.
        let (mut b, mut d) = runs(0, 200, 1.0);
        let src2 = |pt: Vec<(u64, u64)>| paraclick_runtime::sched::ElementCost {
            name: "src2".into(),
            class: "InfiniteSource".into(),
            cycles: pt.iter().map(|x| x.0).sum(),
            per_thread: pt,
            ..Default::default()
        };
        let task2 = |packets: u64| TaskCost {
            element: "src2".into(),
            thread: 0,
            work: 100,
            packets,
            ..TaskCost::default()
        };
        b.elements.push(src2(vec![(20_000, 0)]));
        b.tasks.push(task2(400));
        d.elements.push(src2(vec![(400 * 60, 0), (0, 0)]));
        d.tasks.push(task2(400));
        d.tasks[0].packets = 600;
        d.elements[0].per_thread = vec![(600 * 60, 0), (0, 0)];
        for cd in [&mut b, &mut d] {
            cd.elements[1].push_tasks = vec![0, 2];
        }
        let (g, notes) = measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0);
        let (p, c) = g[0].unwrap();
        assert!((c - 1.0).abs() < 1e-9, "{c} {notes:?}");
        assert!((p.unwrap() - 0.05).abs() < 1e-9, "{p:?} {notes:?}");
        assert!(
            notes.iter().any(|n| n.starts_with("src2 sending +5.0 ns")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_crossing_consumer_includes_the_tasks_after_it_through_local_queues() {
        // After uq (thread 1) a local queue q2 drained by uq2 on the same
        // thread, which pushes into a Discard dd: in D dd costs 100
        // cycles (50 ns) per packet more than in B (it hands buffers home
        // to the other core). At a 100 ns line that is half a line per
        // crossing packet on top of w's whole line.
        use paraclick_runtime::sched::ElementCost;
        let (mut b, mut d) = runs(10, 200, 1.0);
        let el =
            |name: &str, class: &str, push: Vec<usize>, pull: Vec<usize>, pt: Vec<(u64, u64)>| {
                ElementCost {
                    name: name.into(),
                    class: class.into(),
                    is_queue: crate::registry()
                        .get(class)
                        .is_some_and(|c| c.kind == paraclick_runtime::Kind::Queue),
                    push_tasks: push,
                    pull_tasks: pull,
                    cycles: pt.iter().map(|x| x.0).sum(),
                    packets: pt.iter().map(|x| x.1).sum(),
                    per_thread: pt,
                    ..ElementCost::default()
                }
            };
        let task = |thread: usize| TaskCost {
            element: "uq2".into(),
            thread,
            work: 1000,
            packets: 1000,
            ..TaskCost::default()
        };
        b.tasks.push(task(0));
        d.tasks.push(task(1));
        b.elements
            .push(el("q2", "Queue", vec![1], vec![2], vec![(4000, 2000)]));
        b.elements
            .push(el("uq2", "Unqueue", vec![], vec![], vec![(3000, 0)]));
        b.elements
            .push(el("dd", "Discard", vec![2], vec![], vec![(2000, 1000)]));
        d.elements.push(el(
            "q2",
            "Queue",
            vec![1],
            vec![2],
            vec![(0, 0), (4000, 2000)],
        ));
        d.elements.push(el(
            "uq2",
            "Unqueue",
            vec![],
            vec![],
            vec![(0, 0), (3000, 0)],
        ));
        d.elements.push(el(
            "dd",
            "Discard",
            vec![2],
            vec![],
            vec![(0, 0), (102_000, 1000)],
        ));
        let (g, notes) = measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0);
        assert_eq!(g.len(), 2, "{notes:?}");
        let c = g[0].unwrap().1;
        assert!((c - 1.5).abs() < 1e-9, "{c} {notes:?}");
        // q2 does not cross: no term of its own.
        assert_eq!(g[1], None);
        // With uq2 on the other thread, q2 crosses: dd's extra is its own.
        d.tasks[2].thread = 0;
        for e in d.elements.iter_mut().filter(|e| e.name == "q2") {
            e.per_thread = vec![(2000, 1000), (2000, 1000)];
        }
        for e in d.elements.iter_mut().filter(|e| e.name == "dd") {
            e.per_thread = vec![(102_000, 1000), (0, 0)];
        }
        let (g, notes) = measured_line_growth(&b, 1.0, &d, &[1.0, 1.0], 100.0);
        assert!((g[0].unwrap().1 - 1.0).abs() < 1e-9, "{notes:?}");
        assert!((g[1].unwrap().1 - 0.5).abs() < 1e-9, "{notes:?}");
    }

    #[test]
    fn consumers_that_read_packet_data_are_told_from_the_classes() {
        let reg = paraclick_io::full_registry();
        // The classes say it: Counter, Queue and Strip touch metadata
        // only; a classifier reads data, and a Tee copies it.
        for (class, reads) in [
            ("Counter", false),
            ("Queue", false),
            ("SimpleQueue", false),
            ("Strip", false),
            ("PrioSched", false),
            ("IPClassifier", true),
            ("WorkPackage", true),
            ("Tee", true),
        ] {
            assert_eq!(reg.get(class).unwrap().reads_data, reads, "{class}");
        }
        let (mut b, _) = runs(0, 0, 1.0);
        assert_eq!(consumer_reads_data(&b, &reg), vec![true]);
        // Without the WorkPackage: Unqueue, Counter read metadata only.
        b.elements.pop();
        assert_eq!(consumer_reads_data(&b, &reg), vec![false]);
        // A data reader before the queue (the producer's side) does not count.
        b.elements.push(paraclick_runtime::sched::ElementCost {
            name: "cl".into(),
            class: "IPClassifier".into(),
            push_tasks: vec![0],
            ..Default::default()
        });
        assert_eq!(consumer_reads_data(&b, &reg), vec![false]);
    }

    #[test]
    fn traffic_specs() {
        assert_eq!(
            parse_traffic("64").unwrap(),
            Traffic {
                sizes: vec![64],
                weights: vec![1.0]
            }
        );
        let t = parse_traffic("64:3,1500:1").unwrap();
        assert_eq!(t.mean(), (64.0 * 3.0 + 1500.0) / 4.0);
        assert_err(
            parse_traffic("x"),
            "--traffic: 'x' is not a packet size in bytes",
        );
        assert_err(parse_traffic("64:0"), "--traffic: the weights sum to 0");
        assert_err(parse_traffic("0"), "--traffic: bad size or weight in '0'");
    }

    #[test]
    fn pcap_histogram() {
        let mut f = Vec::new();
        f.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
        f.extend_from_slice(&[2, 0, 4, 0]);
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&65535u32.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes());
        for len in [60u32, 60, 1514] {
            f.extend_from_slice(&[0; 8]);
            f.extend_from_slice(&len.to_le_bytes());
            f.extend_from_slice(&len.to_le_bytes());
            f.extend(std::iter::repeat_n(0u8, len as usize));
        }
        let t = pcap_sizes(&f).unwrap();
        assert_eq!(t.sizes, vec![60, 1514]);
        assert_eq!(t.weights, vec![2.0, 1.0]);
        assert_err(pcap_sizes(&f[..10]), "not a pcap file (too short)");
        let mut bad = f.clone();
        bad[0] = 0;
        assert_err(pcap_sizes(&bad), "not a pcap file (bad magic number)");
    }
}
