//! PC-based router systems in the terms of Crowley & Baer (their Table 1
//! and Figure 3): a processor, a memory, buses with width, clock, read and
//! write burst sizes and address/data multiplexing, a traffic model of
//! packet sizes, and an application given as instructions, CPI, L2 misses
//! and bus transfers per packet, split into the phases IM, PP and MI.
//!
//! Files are TOML (see models/crowley-baer/); a file may name another with
//! `inherit = "other.toml"` and override some of its values (tables merge
//! key by key, arrays are replaced).

use crate::{Channel, Model, Stage};
use serde::Deserialize;
use std::path::Path;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcSystem {
    pub name: String,
    pub processor: Processor,
    pub memory: Memory,
    #[serde(rename = "bus")]
    pub buses: Vec<Bus>,
    pub traffic: Traffic,
    pub application: Application,
    /// The paper's own figures for this system, printed beside ours.
    #[serde(default)]
    pub paper: Option<PaperFigures>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Processor {
    pub name: String,
    pub clock_mhz: f64,
    /// CPUs; each runs the whole processing phase for the packets of the
    /// devices statically assigned to it.
    #[serde(default = "one")]
    pub count: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub latency_ns: f64,
    /// Cache line (L2) size: the unit moved per L2 miss.
    pub line_bytes: u32,
    /// The bus the memory sits on.
    pub bus: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bus {
    pub name: String,
    pub width_bits: u32,
    pub clock_mhz: f64,
    /// Data beats per address phase, for reads and for writes.
    pub read_burst: u32,
    pub write_burst: u32,
    /// Separate address and data lines: no address cycle per burst.
    pub separate_address: bool,
    /// Wait cycles per burst (target latency), reads and writes.
    #[serde(default)]
    pub read_wait: u32,
    #[serde(default)]
    pub write_wait: u32,
    /// Per-burst overhead is paid for the first this-many bytes of a
    /// transfer only; longer transfers stream (bridge prefetch / write
    /// combining). None: every burst pays.
    #[serde(default)]
    pub burst_overhead_bytes: Option<u32>,
    /// Utilisation at which the bus is over-subscribed.
    #[serde(default = "eighty")]
    pub saturation: f64,
    /// Shown in the utilisation columns and checked for over-subscription.
    #[serde(default = "yes")]
    pub shared: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// Packet sizes in bytes and their weights (normalised).
    pub sizes: Vec<u32>,
    #[serde(default)]
    pub weights: Vec<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Application {
    pub name: String,
    /// Instructions per packet in the processing phase, and their CPI on
    /// this processor.
    pub instructions: f64,
    pub cpi: f64,
    /// L2 misses per packet in the processing phase (polling: DMA
    /// descriptors and buffers are not cached).
    #[serde(default)]
    pub l2_misses: f64,
    /// L2 misses per packet on data shared between CPUs (a Queue fed by
    /// several CPUs), at most one per enqueue; scaled by (N-1)/N, the
    /// chance that the last user of the line was another of N CPUs.
    #[serde(default)]
    pub shared_misses: f64,
    /// Bus transfers per packet.
    #[serde(default, rename = "transfer")]
    pub transfers: Vec<Transfer>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum Phase {
    IM,
    PP,
    MI,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Read,
    Write,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Bytes {
    Fixed(u32),
    /// "packet": the packet's size.
    Named(String),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    pub phase: Phase,
    pub bus: String,
    pub bytes: Bytes,
    pub dir: Dir,
    #[serde(default = "onef")]
    pub count: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperFigures {
    /// The paper's estimate of the MLFFR (kpps).
    pub mlffr_kpps: f64,
    /// The rate measured on the real system, when the paper gives one.
    #[serde(default)]
    pub measured_kpps: Option<f64>,
    /// Per-phase latencies of Table 2 / 3 (IM, PP, MI), when published.
    #[serde(default)]
    pub latency_ns: Option<[f64; 3]>,
}

fn one() -> u32 {
    1
}
fn onef() -> f64 {
    1.0
}
fn eighty() -> f64 {
    0.8
}
fn yes() -> bool {
    true
}

/// Time and transactions of one transfer on a bus.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BusCost {
    pub cycles: f64,
    pub bursts: f64,
    pub ns: f64,
}

impl Bus {
    pub fn cycle_ns(&self) -> f64 {
        1e3 / self.clock_mhz
    }

    /// Cycles to move `bytes` in direction `dir`: per burst an address
    /// cycle (unless address and data lines are separate) and the wait
    /// cycles, plus one cycle per data beat.
    pub fn cost(&self, bytes: u32, dir: Dir) -> BusCost {
        let width = (self.width_bits / 8).max(1);
        let beats = bytes.div_ceil(width);
        let (burst, wait) = match dir {
            Dir::Read => (self.read_burst.max(1), self.read_wait),
            Dir::Write => (self.write_burst.max(1), self.write_wait),
        };
        let overhead_beats = match self.burst_overhead_bytes {
            Some(b) => beats.min(b.div_ceil(width)),
            None => beats,
        };
        let bursts = overhead_beats.div_ceil(burst).max(1);
        let addr = if self.separate_address { 0 } else { 1 };
        let cycles = (bursts * (addr + wait) + beats) as f64;
        BusCost {
            cycles,
            bursts: bursts as f64,
            ns: cycles * self.cycle_ns(),
        }
    }
}

/// Reads a system file, following `inherit` (relative to the file).
pub fn load(path: &Path) -> Result<PcSystem, String> {
    let table = load_table(path, 0)?;
    let text = toml::to_string(&table).map_err(|e| e.to_string())?;
    let sys: PcSystem = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    sys.validate()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(sys)
}

/// Parses a system from TOML text without `inherit`.
pub fn parse(text: &str) -> Result<PcSystem, String> {
    let sys: PcSystem = toml::from_str(text).map_err(|e| e.to_string())?;
    sys.validate()?;
    Ok(sys)
}

fn load_table(path: &Path, depth: usize) -> Result<toml::Table, String> {
    if depth > 8 {
        return Err(format!("{}: inherit nests too deeply", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut t: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match t.remove("inherit") {
        None => Ok(t),
        Some(toml::Value::String(parent)) => {
            let p = path.parent().unwrap_or(Path::new(".")).join(parent);
            let mut base = load_table(&p, depth + 1)?;
            // The paper's figures belong to one system: never inherited.
            base.remove("paper");
            merge(&mut base, t);
            Ok(base)
        }
        Some(_) => Err(format!("{}: inherit must be a file name", path.display())),
    }
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

impl PcSystem {
    fn validate(&self) -> Result<(), String> {
        if self.processor.clock_mhz <= 0.0 || self.processor.count == 0 {
            return Err("processor: clock_mhz and count must be positive".into());
        }
        for b in &self.buses {
            if b.clock_mhz <= 0.0 || b.width_bits < 8 {
                return Err(format!("bus {}: clock and width must be positive", b.name));
            }
        }
        if self.bus(&self.memory.bus).is_none() {
            return Err(format!("memory: no bus named '{}'", self.memory.bus));
        }
        for t in &self.application.transfers {
            if self.bus(&t.bus).is_none() {
                return Err(format!("transfer: no bus named '{}'", t.bus));
            }
            if let Bytes::Named(n) = &t.bytes {
                if n != "packet" {
                    return Err(format!(
                        "transfer: bytes must be a number or \"packet\", not '{n}'"
                    ));
                }
            }
        }
        if self.traffic.sizes.is_empty() {
            return Err("traffic: no packet sizes".into());
        }
        if !self.traffic.weights.is_empty()
            && self.traffic.weights.len() != self.traffic.sizes.len()
        {
            return Err("traffic: one weight per size".into());
        }
        Ok(())
    }

    fn bus(&self, name: &str) -> Option<usize> {
        self.buses.iter().position(|b| b.name == name)
    }

    /// The cost of an L2 miss: memory latency plus one line over the
    /// memory bus.
    pub fn miss_ns(&self) -> f64 {
        let b = &self.buses[self.bus(&self.memory.bus).unwrap_or(0)];
        self.memory.latency_ns + b.cost(self.memory.line_bytes, Dir::Read).ns
    }

    /// What-if: another processor clock.
    pub fn with_clock_mhz(mut self, mhz: f64) -> Self {
        self.processor.clock_mhz = mhz;
        self
    }

    /// What-if: another number of CPUs.
    pub fn with_cpus(mut self, n: u32) -> Self {
        self.processor.count = n.max(1);
        self
    }

    /// What-if: another packet-size mix.
    pub fn with_traffic(mut self, sizes: Vec<u32>, weights: Vec<f64>) -> Self {
        self.traffic = Traffic { sizes, weights };
        self
    }

    /// Builds the three-phase model, averaging over the packet sizes.
    pub fn model(&self) -> Model {
        let shared: Vec<usize> = (0..self.buses.len())
            .filter(|&i| self.buses[i].shared)
            .collect();
        let channels: Vec<Channel> = shared
            .iter()
            .map(|&i| Channel {
                name: self.buses[i].name.clone(),
                saturation: self.buses[i].saturation,
                cycle_ns: self.buses[i].cycle_ns(),
            })
            .collect();
        let nch = channels.len();
        let col = |bus: usize| shared.iter().position(|&s| s == bus);
        let weights: Vec<f64> = if self.traffic.weights.is_empty() {
            vec![1.0; self.traffic.sizes.len()]
        } else {
            self.traffic.weights.clone()
        };
        let wsum: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let cpus = self.processor.count as f64;
        let mut stages = vec![
            Stage::new("Phase 1 (IM)", "input bus transfers", 0.0, 1.0, nch),
            Stage::new(
                "Phase 2 (PP)",
                &format!(
                    "{} x {} {} MHz",
                    self.processor.count, self.processor.name, self.processor.clock_mhz
                ),
                0.0,
                cpus,
                nch,
            ),
            Stage::new("Phase 3 (MI)", "output bus transfers", 0.0, 1.0, nch),
        ];
        let membus = self.bus(&self.memory.bus).unwrap_or(0);
        let line = self.buses[membus].cost(self.memory.line_bytes, Dir::Read);
        let miss = self.miss_ns();
        let app = &self.application;
        let misses = app.l2_misses + app.shared_misses * (cpus - 1.0) / cpus;
        for (&size, &w) in self.traffic.sizes.iter().zip(&weights) {
            let w = w / wsum;
            // Processing: instructions at the CPI, plus L2 misses; a CPU
            // stalls for its own bus transfers (uncached register writes).
            let mut pp =
                app.instructions * app.cpi * 1e3 / self.processor.clock_mhz + misses * miss;
            if let Some(c) = col(membus) {
                stages[1].uses_ns[c] += w * misses * line.ns;
                stages[1].transactions[c] += w * misses * line.bursts;
            }
            // Transfer phases last as long as their slowest bus: the bridge
            // streams a DMA transfer from one bus onto the other.
            let mut phase_max = [0.0f64; 3];
            for t in &app.transfers {
                let bytes = match t.bytes {
                    Bytes::Fixed(b) => b,
                    Bytes::Named(_) => size,
                };
                let b = self.bus(&t.bus).unwrap_or(0);
                let cost = self.buses[b].cost(bytes, t.dir);
                let k = match t.phase {
                    Phase::IM => 0,
                    Phase::PP => 1,
                    Phase::MI => 2,
                };
                if k == 1 {
                    pp += t.count * cost.ns;
                } else {
                    phase_max[k] = phase_max[k].max(t.count * cost.ns);
                }
                if let Some(c) = col(b) {
                    stages[k].uses_ns[c] += w * t.count * cost.ns;
                    stages[k].transactions[c] += w * t.count * cost.bursts;
                }
            }
            stages[0].latency_ns += w * phase_max[0];
            stages[1].latency_ns += w * pp;
            stages[2].latency_ns += w * phase_max[2];
        }
        let sizes: Vec<String> = self.traffic.sizes.iter().map(|s| format!("{s}B")).collect();
        Model {
            title: format!(
                "{}: {} on {} x {} {} MHz, {} packets",
                self.name,
                app.name,
                self.processor.count,
                self.processor.name,
                self.processor.clock_mhz,
                sizes.join("/")
            ),
            channels,
            stages,
        }
    }

    /// Mean packet size of the traffic model, bytes.
    pub fn mean_packet_bytes(&self) -> f64 {
        let w: Vec<f64> = if self.traffic.weights.is_empty() {
            vec![1.0; self.traffic.sizes.len()]
        } else {
            self.traffic.weights.clone()
        };
        let s: f64 = w.iter().sum();
        self.traffic
            .sizes
            .iter()
            .zip(&w)
            .map(|(&b, &x)| b as f64 * x)
            .sum::<f64>()
            / s
    }
}

#[cfg(test)]
mod tests;
