//! The application model of a paraclick configuration and its mapping
//! onto this machine's cores.
//!
//! Application: the configuration's tasks (a source's push path, a
//! ToDevice's pull path) with their cycles per packet from a short
//! single-thread run, and for every queue the packets each producer task
//! puts into it and each consumer task takes out (path frequencies).
//! Mapping: a thread per task. Each thread is one stage of the model: the
//! packets of every flow pass all threads, so the thread with the most work
//! per packet sets the rate. A packet crossing from one thread to another
//! through a queue costs both ends the measured crossing time
//! ([`crate::machine::Machine::crossing_ns`]).

use crate::machine::Machine;
use crate::{Channel, Model, Stage};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppTask {
    pub name: String,
    /// Cycles of the task's runs per packet entering the router (cycle
    /// counter ticks), scheduler overhead included.
    pub cycles_per_packet: f64,
    /// A source of packets (an element without inputs).
    pub entry: bool,
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
}

impl App {
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

    /// Per thread: ns of crossing work per entering packet, each queue's
    /// crossing packets charged at the measured hop cost for its batch.
    pub fn crossing_ns(&self, machine: &Machine, assign: &[usize], nthreads: usize) -> Vec<f64> {
        let mut per_thread = vec![0.0; nthreads.max(1)];
        for q in &self.queues {
            let one = App {
                queues: vec![q.clone()],
                ..App::default()
            };
            let (_, x) = one.crossings(assign, nthreads.max(1));
            let ns = machine.hop_ns(q.batch);
            for (t, n) in x.into_iter().enumerate() {
                per_thread[t] += n * ns;
            }
        }
        per_thread
    }

    /// The model of this application on `nthreads` threads of `machine`
    /// with the given task placement.
    pub fn model(&self, machine: &Machine, assign: &[usize], nthreads: usize, w: &WhatIf) -> Model {
        let nthreads = nthreads.max(1);
        let ghz = w.clock_ghz.unwrap_or(self.tsc_ghz);
        // Cycle counter ticks to ns at the (possibly changed) core clock.
        let tick_ns = 1.0 / self.tsc_ghz * (self.tsc_ghz / ghz);
        let bytes = w.packet_bytes.unwrap_or(self.packet_bytes);
        let channels = vec![Channel {
            name: "Memory".into(),
            saturation: 0.8,
            cycle_ns: 0.0,
        }];
        let cross = self.crossing_ns(machine, assign, nthreads);
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
                    0.0,
                    1.0,
                    1,
                )
            })
            .collect();
        for (i, task) in self.tasks.iter().enumerate() {
            let t = assign.get(i).copied().unwrap_or(0) % nthreads;
            stages[t].latency_ns += task.cycles_per_packet * tick_ns;
        }
        for (t, s) in stages.iter_mut().enumerate() {
            s.latency_ns += cross[t];
            if let Some(&share) = w.core_share.get(t) {
                if share > 0.0 {
                    s.latency_ns /= share;
                }
            }
        }
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

    /// Two sources feeding two queues crosswise (like fake-iprouter: eth0's
    /// packets leave on eth1), each queue drained by its own task.
    fn crosswise() -> App {
        let t = |n: &str, c: f64, e: bool| AppTask {
            name: n.into(),
            cycles_per_packet: c,
            entry: e,
        };
        App {
            name: "x".into(),
            tasks: vec![
                t("src0", 400.0, true),
                t("src1", 400.0, true),
                t("d0", 100.0, false),
                t("d1", 100.0, false),
            ],
            queues: vec![
                AppQueue {
                    name: "q0".into(),
                    producers: vec![(1, 0.5)],
                    consumers: vec![(2, 0.5)],
                    batch: 1.0,
                },
                AppQueue {
                    name: "q1".into(),
                    producers: vec![(0, 0.5)],
                    consumers: vec![(3, 0.5)],
                    batch: 1.0,
                },
            ],
            packet_bytes: 64.0,
            tsc_ghz: 2.0,
            core_share: 1.0,
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
            crate::machine::HopPoint {
                batch: 1.0,
                ns: 80.0,
            },
            crate::machine::HopPoint {
                batch: 32.0,
                ns: 10.0,
            },
        ];
        let m = app.model(&mach, &split, 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 480.0).abs() < 1e-9);
        let mut big = app.clone();
        big.queues.iter_mut().for_each(|q| q.batch = 32.0);
        let m = big.model(&mach, &split, 2, &WhatIf::default());
        assert!((m.stages[0].latency_ns - 410.0).abs() < 1e-9);
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
}
