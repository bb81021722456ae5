//! The measuring core of `paraclick bench`: one configuration run to its
//! end, with its packets, drops, wall and CPU time, cycles and peak
//! resident set.

use paraclick_lang::Source;
use paraclick_runtime::clock;
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::{BuildOptions, Registry, Router};
use std::time::Instant;

/// One configuration to measure.
#[derive(Clone)]
pub struct Case {
    pub name: String,
    pub source: Source,
    pub defines: Vec<(String, String)>,
    /// Read handlers whose sum is the number of packets handled.
    pub count: Vec<String>,
}

pub struct Figures {
    pub packets: u64,
    pub drops: u64,
    pub seconds: f64,
    pub cycles: u64,
    /// CPU time the process used during the run (every thread, user and
    /// system), seconds: unlike `seconds`, it leaves out the time its
    /// threads waited for a core that other programs had.
    pub cpu_seconds: f64,
    pub peak_rss_kb: Option<u64>,
}

impl Figures {
    pub fn mpps(&self) -> f64 {
        self.packets as f64 / self.seconds / 1e6
    }
    pub fn cycles_per_packet(&self, threads: usize) -> f64 {
        self.cycles as f64 * threads as f64 / self.packets.max(1) as f64
    }

    /// Cycles of CPU time per packet: the CPU seconds at the cycle
    /// counter's rate. Equal at one and two threads means the second
    /// thread does its share at the first one's cost: the scaling a
    /// machine with the two cores to itself would show, if no thread
    /// polls while idle (that time counts as CPU time too).
    pub fn cpu_cycles_per_packet(&self) -> f64 {
        self.cpu_seconds * self.hz() / self.packets.max(1) as f64
    }

    /// The cycle counter's rate over the run.
    pub fn hz(&self) -> f64 {
        self.cycles as f64 / self.seconds.max(1e-9)
    }
}

/// The scaling that CPU cycles per packet imply: a row on `threads`
/// threads at `cpp` against its baseline on `base_threads` at `base_cpp`
/// (equal cycles per packet on twice the threads is 2x).
pub fn cpu_scaling(threads: usize, cpp: f64, base_threads: usize, base_cpp: f64) -> f64 {
    threads as f64 * base_cpp / (base_threads as f64 * cpp)
}

/// CPU time (user and system) of every thread of this process so far.
fn process_cpu_seconds() -> f64 {
    paraclick_model::machine::process_cpu_ns() as f64 / 1e9
}

fn proc_status(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the process's peak resident set (Linux: clear_refs 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

pub fn run_case(
    case: &Case,
    reg: &Registry,
    threads: usize,
    policy: SchedPolicy,
) -> Result<Figures, String> {
    let opts = BuildOptions {
        threads,
        defines: case.defines.clone(),
        policy,
        pin: true,
        ..BuildOptions::default()
    };
    let router = Router::build(&case.source, reg, &opts).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    reset_peak_rss();
    let cpu0 = process_cpu_seconds();
    let t0 = Instant::now();
    let c0 = clock::cycles();
    router.run();
    let c1 = clock::cycles();
    let seconds = t0.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds() - cpu0;
    let mut packets = 0u64;
    for h in &case.count {
        let v = router.read_handler(h)?;
        packets += v
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("{h}: not a count: {v}"))?;
    }
    Ok(Figures {
        packets,
        drops: router.total_drops(),
        seconds,
        cycles: c1.wrapping_sub(c0),
        cpu_seconds,
        peak_rss_kb: proc_status("VmHWM:"),
    })
}
