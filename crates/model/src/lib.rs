//! A performance model of a router in the manner of Crowley & Baer, "A
//! Modeling Framework for Network Processor Systems" (NP-1, 2002):
//!
//! - the work of one packet is split into *stages* (the paper's phases IM,
//!   PP and MI; for a multicore paraclick run, one stage per thread), each
//!   with a latency per packet and a degree of parallelism (the number of
//!   devices doing that stage's work side by side);
//! - stages use shared *channels* (buses, memory, the inter-core
//!   interconnect) for some nanoseconds per packet;
//! - evaluation follows section 2.7 of the paper: each stage's maximum
//!   rate assuming no contention; the lowest of them is offered to every
//!   stage; the load on every shared channel at that rate; a channel is
//!   over-subscribed when its utilisation reaches its saturation point
//!   (80% for the paper's buses), in which case every user of the channel
//!   is slowed down equally (arbitration cycles) until it no longer is. The
//!   result is the maximum loss-free forwarding rate (MLFFR).
//!
//! [`pc`] describes the paper's own PC systems from TOML files; [`app`]
//! and [`machine`] describe a paraclick configuration and this machine;
//! [`design`] holds the statistics of 2^k factorial designs.

pub mod app;
pub mod design;
pub mod machine;
pub mod pc;

use std::fmt::Write as _;

/// A shared resource that stages occupy for some time per packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Channel {
    pub name: String,
    /// Utilisation at which the channel counts as over-subscribed (0.8).
    pub saturation: f64,
    /// One bus cycle in ns: arbitration is counted in these (0 if the
    /// channel has no cycles, e.g. a core-to-core interconnect).
    pub cycle_ns: f64,
}

/// One pipeline stage of a packet's path.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub name: String,
    /// What executes it (a CPU, a bus, a thread), for the bottleneck line.
    pub device: String,
    /// Time one device spends on one packet, in ns.
    pub latency_ns: f64,
    /// Devices doing this stage in parallel (CPUs of an SMP).
    pub parallel: f64,
    /// Per channel (indices into [`Model::channels`]): ns of channel time
    /// per packet.
    pub uses_ns: Vec<f64>,
    /// Per channel: bus transactions per packet (users arbitrate per
    /// transaction when the channel is congested).
    pub transactions: Vec<f64>,
}

impl Stage {
    pub fn new(name: &str, device: &str, latency_ns: f64, parallel: f64, nch: usize) -> Stage {
        Stage {
            name: name.into(),
            device: device.into(),
            latency_ns,
            parallel,
            uses_ns: vec![0.0; nch],
            transactions: vec![0.0; nch],
        }
    }

    /// Maximum packets per second of this stage alone, without contention.
    pub fn max_rate(&self) -> f64 {
        if self.latency_ns <= 0.0 {
            f64::INFINITY
        } else {
            self.parallel * 1e9 / self.latency_ns
        }
    }
}

/// A model ready to evaluate: channels and the stages that use them.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub title: String,
    pub channels: Vec<Channel>,
    pub stages: Vec<Stage>,
}

/// What limits the MLFFR.
#[derive(Clone, Debug, PartialEq)]
pub enum Limit {
    /// The slowest stage (index into the stages).
    Stage(usize),
    /// An over-subscribed shared channel (index into the channels).
    Channel(usize),
    /// Nothing: the model has no stage with work.
    Unbounded,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Per stage: maximum rate in packets/s, without contention.
    pub stage_rates: Vec<f64>,
    /// The lowest stage rate and its stage.
    pub min_rate: f64,
    pub slowest: Option<usize>,
    /// Per stage, per channel: utilisation at `min_rate`.
    pub util: Vec<Vec<f64>>,
    /// Per channel: total utilisation at `min_rate`.
    pub total_util: Vec<f64>,
    /// The maximum loss-free forwarding rate, packets/s.
    pub mlffr: f64,
    pub limit: Limit,
    /// For a congested channel: arbitration cycles per transaction that
    /// every user must add for the channel to stay below saturation.
    pub arbitration_cycles: Option<f64>,
    /// Latency of a packet through all stages at no load, ns.
    pub latency_ns: f64,
}

impl Model {
    /// Evaluates the model as section 2.7 of the paper describes.
    pub fn evaluate(&self) -> Evaluation {
        let nch = self.channels.len();
        let stage_rates: Vec<f64> = self.stages.iter().map(Stage::max_rate).collect();
        let mut min_rate = f64::INFINITY;
        let mut slowest = None;
        for (i, &r) in stage_rates.iter().enumerate() {
            if r < min_rate {
                min_rate = r;
                slowest = Some(i);
            }
        }
        let util: Vec<Vec<f64>> = self
            .stages
            .iter()
            .map(|s| {
                (0..nch)
                    .map(|c| {
                        if min_rate.is_finite() {
                            min_rate * s.uses_ns.get(c).copied().unwrap_or(0.0) / 1e9
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let total_util: Vec<f64> = (0..nch).map(|c| util.iter().map(|u| u[c]).sum()).collect();
        // Over-subscription: all users of a congested channel reduce their
        // offered load in the same proportion (capacity / offered load), so
        // the whole flow drops to the rate at which the channel sits at its
        // saturation point.
        let mut mlffr = min_rate;
        let mut limit = match slowest {
            Some(i) => Limit::Stage(i),
            None => Limit::Unbounded,
        };
        for (c, ch) in self.channels.iter().enumerate() {
            if total_util[c] > ch.saturation && total_util[c] > 0.0 {
                let r = min_rate * ch.saturation / total_util[c];
                if r < mlffr {
                    mlffr = r;
                    limit = Limit::Channel(c);
                }
            }
        }
        let arbitration_cycles = match limit {
            Limit::Channel(c) => self.arbitration_for(c, mlffr),
            _ => None,
        };
        Evaluation {
            latency_ns: self.stages.iter().map(|s| s.latency_ns).sum(),
            stage_rates,
            min_rate,
            slowest,
            util,
            total_util,
            mlffr: if mlffr.is_finite() { mlffr } else { 0.0 },
            limit,
            arbitration_cycles,
        }
    }

    /// The paper resolves contention by adding arbitration cycles to each
    /// user's transactions until the channel is no longer over-subscribed.
    /// Solved directly: the cycles per transaction that bring the stage
    /// that reaches `rate` first (the one with the least slack) down to it.
    fn arbitration_for(&self, c: usize, rate: f64) -> Option<f64> {
        let cyc = self.channels[c].cycle_ns;
        if cyc <= 0.0 || rate <= 0.0 {
            return None;
        }
        self.stages
            .iter()
            .filter(|s| s.transactions[c] > 0.0)
            .map(|s| {
                let needed = s.parallel * 1e9 / rate - s.latency_ns;
                (needed.max(0.0) / (s.transactions[c] * cyc), needed)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(cycles, _)| cycles)
    }

    /// The per-stage table of the paper's Tables 2 and 3, the bottleneck
    /// named, and a last line `MLFFR <pps> pps`.
    pub fn render(&self, ev: &Evaluation) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.title);
        let w = self
            .stages
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let mut head = format!(
            "{:<w$} {:>12} {:>15}",
            "", "Latency (ns)", "Max rate (kpps)"
        );
        for ch in &self.channels {
            let _ = write!(head, " {:>9}", ch.name);
        }
        let _ = writeln!(
            out,
            "{:<w$} {:>12} {:>15}  utilisation @ min rate",
            "", "", ""
        );
        let _ = writeln!(out, "{head}");
        for (i, s) in self.stages.iter().enumerate() {
            let mut line = format!(
                "{:<w$} {:>12.0} {:>15}",
                s.name,
                s.latency_ns,
                fmt_kpps(ev.stage_rates[i])
            );
            for c in 0..self.channels.len() {
                let _ = write!(line, " {:>9.2}", ev.util[i][c]);
            }
            let _ = writeln!(out, "{line}");
        }
        let mut line = format!(
            "{:<w$} {:>12.0} {:>15}",
            "Result",
            ev.latency_ns,
            fmt_kpps(ev.min_rate)
        );
        for c in 0..self.channels.len() {
            let _ = write!(line, " {:>9.2}", ev.total_util[c]);
        }
        let _ = writeln!(out, "{line}");
        let _ = writeln!(
            out,
            "(Max rate of Result is the column minimum; utilisations are sums)"
        );
        match (&ev.limit, ev.slowest) {
            (Limit::Stage(i), _) => {
                let s = &self.stages[*i];
                let _ = writeln!(
                    out,
                    "bottleneck: {} ({}); no shared channel over-subscribed at {} kpps",
                    s.name,
                    s.device,
                    fmt_kpps(ev.mlffr)
                );
            }
            (Limit::Channel(c), slowest) => {
                let ch = &self.channels[*c];
                let _ = writeln!(
                    out,
                    "bottleneck: {} over-subscribed ({:.2} > {:.2}) at the slowest stage's rate of {} kpps{}",
                    ch.name,
                    ev.total_util[*c],
                    ch.saturation,
                    fmt_kpps(ev.min_rate),
                    slowest
                        .map(|i| format!(" ({})", self.stages[i].name))
                        .unwrap_or_default()
                );
                if let Some(a) = ev.arbitration_cycles {
                    let _ = writeln!(
                        out,
                        "  users slowed equally: {a:.1} arbitration cycles per {} transaction bring it to {:.2}",
                        ch.name, ch.saturation
                    );
                }
            }
            (Limit::Unbounded, _) => {
                let _ = writeln!(out, "bottleneck: none (no stage has work)");
            }
        }
        let _ = writeln!(out, "MLFFR {:.0} pps", ev.mlffr);
        out
    }
}

fn fmt_kpps(pps: f64) -> String {
    if pps.is_finite() {
        format!("{:.0}", pps / 1e3)
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_stage(bus_ns: [f64; 2]) -> Model {
        let ch = vec![Channel {
            name: "bus".into(),
            saturation: 0.8,
            cycle_ns: 10.0,
        }];
        let mut a = Stage::new("A", "cpu", 1000.0, 1.0, 1);
        a.uses_ns[0] = bus_ns[0];
        a.transactions[0] = 1.0;
        let mut b = Stage::new("B", "cpu", 500.0, 2.0, 1);
        b.uses_ns[0] = bus_ns[1];
        b.transactions[0] = 1.0;
        Model {
            title: "t".into(),
            channels: ch,
            stages: vec![a, b],
        }
    }

    #[test]
    fn slowest_stage_sets_the_rate_when_no_channel_is_congested() {
        let ev = two_stage([100.0, 100.0]).evaluate();
        assert_eq!(ev.stage_rates, vec![1e6, 4e6]);
        assert_eq!(ev.limit, Limit::Stage(0));
        assert!((ev.total_util[0] - 0.2).abs() < 1e-9);
        assert_eq!(ev.mlffr, 1e6);
    }

    #[test]
    fn congested_channel_scales_everyone_down_to_saturation() {
        // 1 Mpps offered, 1000 ns of bus per packet: utilisation 1.0.
        let m = two_stage([400.0, 600.0]);
        let ev = m.evaluate();
        assert_eq!(ev.limit, Limit::Channel(0));
        assert!((ev.total_util[0] - 1.0).abs() < 1e-9);
        assert!((ev.mlffr - 0.8e6).abs() < 1.0);
        // Stage A must stretch from 1000 to 1250 ns: 25 cycles of 10 ns.
        assert!((ev.arbitration_cycles.unwrap() - 25.0).abs() < 1e-6);
        let text = m.render(&ev);
        assert!(text.ends_with("MLFFR 800000 pps\n"), "{text}");
        assert!(text.contains("bus over-subscribed"));
    }
}
