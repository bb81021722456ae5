//! `paraclick bench`: forwarding rate and cycles per packet of standard
//! configurations (or any given one), measured in one run so figures can
//! be compared with each other. Prints figures; asserts nothing.

use paraclick_lang::Source;
use paraclick_runtime::clock;
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::Registry;
pub use paraclick_tune::bench::{cpu_scaling, run_case, Case, Figures};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

pub fn builtin_cases(packets: u64) -> Vec<Case> {
    let n = packets.to_string();
    let src = |name: &str, text: &str| Source {
        name: name.into(),
        text: text.into(),
    };
    let def = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let infinite = include_str!("../../../conf/infinite-discard.click");
    let queue = include_str!("../../../conf/queue-unqueue.click");
    let fake = include_str!("../../../conf/fake-iprouter.click");
    vec![
        Case {
            name: "InfiniteSource -> Discard (BURST 1, no timestamps)".into(),
            source: src("conf/infinite-discard.click", infinite),
            defines: def(&[("N", &n), ("BURST", "1"), ("TS", "false")]),
            count: vec!["c.count".into()],
        },
        Case {
            name: "InfiniteSource -> Discard (BURST 1, timestamps)".into(),
            source: src("conf/infinite-discard.click", infinite),
            defines: def(&[("N", &n), ("BURST", "1"), ("TS", "true")]),
            count: vec!["c.count".into()],
        },
        Case {
            name: "InfiniteSource -> Discard (BURST 32, no timestamps)".into(),
            source: src("conf/infinite-discard.click", infinite),
            defines: def(&[("N", &n), ("BURST", "32"), ("TS", "false")]),
            count: vec!["c.count".into()],
        },
        Case {
            name: "InfiniteSource -> Queue -> Unqueue -> Discard (BURST 1)".into(),
            source: src("conf/queue-unqueue.click", queue),
            defines: def(&[("N", &n), ("BURST", "1"), ("TS", "false")]),
            count: vec!["c.count".into()],
        },
        Case {
            name: "fake-iprouter (Click's layout, BURST 1)".into(),
            source: src("conf/fake-iprouter.click", fake),
            defines: def(&[("N", &n)]),
            count: vec!["out0.count".into(), "out1.count".into()],
        },
    ]
}

pub fn run_suite(
    cases: &[Case],
    reg: &Registry,
    threads: usize,
    policy: SchedPolicy,
    repeat: usize,
) -> bool {
    let hz = clock::cycles_per_second();
    println!(
        "paraclick bench: {threads} thread(s), {repeat} run(s) each, median shown; cycle counter {:.3} GHz",
        hz / 1e9
    );
    println!(
        "{:<58} {:>11} {:>9} {:>10} {:>9}",
        "configuration", "packets", "Mpps", "cyc/pkt", "peak MB"
    );
    let mut ok = true;
    for case in cases {
        let mut rates = Vec::new();
        let mut cpp = Vec::new();
        let mut rss = Vec::new();
        let mut packets = 0;
        let mut err = None;
        for _ in 0..repeat.max(1) {
            match run_case(case, reg, threads, policy) {
                Ok(f) => {
                    packets = f.packets;
                    rates.push(f.mpps());
                    cpp.push(f.cycles_per_packet(threads));
                    if let Some(r) = f.peak_rss_kb {
                        rss.push(r as f64 / 1024.0);
                    }
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        match err {
            Some(e) => {
                ok = false;
                println!("{:<58} error: {e}", case.name);
            }
            None => println!(
                "{:<58} {:>11} {:>9.2} {:>10.1} {:>9.1}",
                case.name,
                packets,
                median(rates),
                median(cpp),
                median(rss)
            ),
        }
    }
    ok
}

/// One multicore measurement: a case run on `threads` threads with an
/// optional extra configuration line (e.g. a StaticThreadSched).
#[derive(Clone)]
pub struct McCase {
    pub label: &'static str,
    pub case: Case,
    pub threads: usize,
    pub policy: SchedPolicy,
    /// Index of the row this one is compared with (None: it is a baseline).
    pub baseline: Option<usize>,
}

fn with_extra(c: &Case, extra: &str, defines: &[(&str, &str)]) -> Case {
    let mut d = c.defines.clone();
    for (k, v) in defines {
        d.retain(|(x, _)| x != k);
        d.push((k.to_string(), v.to_string()));
    }
    Case {
        name: c.name.clone(),
        source: Source {
            name: c.source.name.clone(),
            text: format!("{}\n{}\n", c.source.text, extra),
        },
        defines: d,
        count: c.count.clone(),
    }
}

/// The multicore suite of the multicore issue: fake-iprouter on 1 and 2
/// threads (pipeline split, adaptive), two independent router copies, a
/// compute-heavy flow split, and a packet crossing threads through a queue.
pub fn multicore_cases(packets: u64) -> Vec<McCase> {
    let n = packets.to_string();
    let src = |name: &str, text: &str| Source {
        name: name.into(),
        text: text.into(),
    };
    let fake = Case {
        name: "fake-iprouter".into(),
        source: src(
            "conf/fake-iprouter.click",
            include_str!("../../../conf/fake-iprouter.click"),
        ),
        defines: vec![("N".into(), n.clone())],
        count: vec!["out0.count".into(), "out1.count".into()],
    };
    let copies = Case {
        name: "fake-iprouter x2".into(),
        source: src(
            "conf/fake-iprouter-x2.click",
            include_str!("../../../conf/fake-iprouter-x2.click"),
        ),
        defines: vec![("N".into(), (packets / 2).to_string())],
        count: ["a/out0", "a/out1", "b/out0", "b/out1"]
            .iter()
            .map(|c| format!("{c}.count"))
            .collect(),
    };
    let split = Case {
        name: "flow split".into(),
        source: src(
            "conf/flow-split.click",
            include_str!("../../../conf/flow-split.click"),
        ),
        defines: vec![("N".into(), (packets / 20).max(1000).to_string())],
        count: vec!["c0.count".into(), "c1.count".into()],
    };
    let queue = Case {
        name: "queue".into(),
        source: src(
            "conf/queue-unqueue.click",
            include_str!("../../../conf/queue-unqueue.click"),
        ),
        defines: vec![("N".into(), n.clone()), ("BURST".into(), "32".into())],
        count: vec!["c.count".into()],
    };
    use SchedPolicy::*;
    vec![
        McCase {
            label: "fake-iprouter, 1 thread",
            case: with_extra(&fake, "", &[]),
            threads: 1,
            policy: Static,
            baseline: None,
        },
        McCase {
            label: "fake-iprouter, 2 threads, pipeline split (sources | drains)",
            case: with_extra(&fake, "StaticThreadSched(src0 0, src1 0, d0 1, d1 1);", &[]),
            threads: 2,
            policy: Static,
            baseline: Some(0),
        },
        McCase {
            label: "fake-iprouter, 2 threads, round-robin placement",
            case: with_extra(&fake, "", &[]),
            threads: 2,
            policy: Static,
            baseline: Some(0),
        },
        McCase {
            label: "fake-iprouter, 2 threads, adaptive",
            case: with_extra(&fake, "", &[]),
            threads: 2,
            policy: Adaptive,
            baseline: Some(0),
        },
        McCase {
            label: "two router copies, 1 thread",
            case: with_extra(&copies, "", &[]),
            threads: 1,
            policy: Static,
            baseline: None,
        },
        McCase {
            label: "two router copies, 2 threads (one each)",
            case: with_extra(&copies, "", &[]),
            threads: 2,
            policy: Static,
            baseline: Some(4),
        },
        McCase {
            label: "flow split WorkPackage(20), 1 thread",
            case: with_extra(&split, "", &[]),
            threads: 1,
            policy: Static,
            baseline: None,
        },
        McCase {
            label: "flow split WorkPackage(20), 2 threads, adaptive",
            case: with_extra(&split, "", &[]),
            threads: 2,
            policy: Adaptive,
            baseline: Some(6),
        },
        McCase {
            label: "flow split WorkPackage(20), 2 threads, replica each",
            case: with_extra(&split, "StaticThreadSched(src 0, u0 0, u1 1);", &[]),
            threads: 2,
            policy: Static,
            baseline: Some(6),
        },
        McCase {
            label: "queue, BURST 32, source and puller on one thread",
            case: with_extra(&queue, "StaticThreadSched(src 0, uq 0);", &[]),
            threads: 2,
            policy: Static,
            baseline: None,
        },
        McCase {
            label: "queue, BURST 32, puller on the other thread",
            case: with_extra(&queue, "StaticThreadSched(src 0, uq 1);", &[]),
            threads: 2,
            policy: Static,
            baseline: Some(9),
        },
        McCase {
            label: "queue, BURST 1, source and puller on one thread",
            case: with_extra(&queue, "StaticThreadSched(src 0, uq 0);", &[("BURST", "1")]),
            threads: 2,
            policy: Static,
            baseline: None,
        },
        McCase {
            label: "queue, BURST 1, puller on the other thread",
            case: with_extra(&queue, "StaticThreadSched(src 0, uq 1);", &[("BURST", "1")]),
            threads: 2,
            policy: Static,
            baseline: Some(11),
        },
    ]
}

/// The NAT suite: conf/nat-bench.click (two FastUDPFlows generators
/// into one IPRewriter) with 1,000, 50,000 and 1,000,000 concurrent flows,
/// both generators on one thread, then one per thread (ratio: the
/// scaling); `flows` chooses other flow counts. Each generator sends at
/// least 10 packets per flow, so mapping creation is at most a tenth of
/// the packets.
pub fn nat_cases(packets: u64, flows: &[u64]) -> Vec<McCase> {
    let src = Source {
        name: "conf/nat-bench.click".into(),
        text: include_str!("../../../conf/nat-bench.click").into(),
    };
    // Control: the same generators, Strip and Counter without the
    // rewriter, measured in the same run (what the machine gives).
    let control = Source {
        name: "conf/nat-bench.click (no IPRewriter)".into(),
        text: src
            .text
            .replace("-> [0]rw;", "-> c;")
            .replace("rw[0] -> c :: Counter -> Discard;", "")
            .replace("rw[1] -> Discard;", "")
            .replace(
                "rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1, CAPACITY $CAPACITY);",
                "c :: Counter -> Discard;",
            ),
    };
    let mut v = Vec::new();
    for threads in [1usize, 2] {
        v.push(McCase {
            label: if threads == 1 {
                "control: generators only, 1 thread"
            } else {
                "control: generators only, 2 threads"
            },
            case: Case {
                name: "control".into(),
                source: control.clone(),
                defines: vec![
                    ("N".into(), (packets / 2).to_string()),
                    ("FLOWS".into(), "500".into()),
                    ("T1".into(), (threads - 1).to_string()),
                ],
                count: vec!["c.count".into()],
            },
            threads,
            policy: SchedPolicy::Static,
            baseline: if threads == 1 { None } else { Some(0) },
        });
    }
    let flows: &[u64] = if flows.is_empty() {
        &[1_000, 50_000, 1_000_000]
    } else {
        flows
    };
    for &flows in flows {
        let per_src = flows / 2;
        let n = (packets / 2).max(per_src * 10);
        for threads in [1usize, 2] {
            let label: &'static str = Box::leak(
                format!(
                    "IPRewriter, {flows} flows, {threads} thread{}",
                    if threads == 1 { "" } else { "s" }
                )
                .into_boxed_str(),
            );
            let base = v.len();
            v.push(McCase {
                label,
                case: Case {
                    name: label.into(),
                    source: src.clone(),
                    defines: vec![
                        ("N".into(), n.to_string()),
                        ("FLOWS".into(), per_src.to_string()),
                        ("T1".into(), (threads - 1).to_string()),
                    ],
                    count: vec!["c.count".into()],
                },
                threads,
                policy: SchedPolicy::Static,
                baseline: if threads == 1 { None } else { Some(base - 1) },
            });
        }
    }
    v
}

/// Figures of one NAT row in one round: the whole run and a run of the
/// first pass alone (each flow's first packet, which creates its mapping).
struct NatRound {
    full: Figures,
    fill: Figures,
}

impl NatRound {
    /// Packets after each flow's first one: lookups at the full number of
    /// concurrent flows.
    fn steady_packets(&self) -> f64 {
        self.full.packets.saturating_sub(self.fill.packets).max(1) as f64
    }
    fn steady_mpps(&self) -> f64 {
        self.steady_packets() / (self.full.seconds - self.fill.seconds).max(1e-9) / 1e6
    }
    /// CPU cycles per steady packet (the full run's CPU time minus the
    /// first pass's, over the packets after the first pass).
    fn steady_cpu_cpp(&self) -> f64 {
        (self.full.cpu_seconds - self.fill.cpu_seconds) * self.full.hz() / self.steady_packets()
    }
    /// CPU cycles per flow created (the first pass alone).
    fn create_cpu_cycles(&self) -> f64 {
        self.fill.cpu_cycles_per_packet()
    }
}

/// The NAT suite's runner: the generators-only control rows as in the
/// multicore suite, then, per flow count and thread count, the whole run
/// and its steady state. The steady state leaves out each flow's first
/// packet: every round also runs the first pass alone (N = the flows per
/// generator), and the steady figures are the full run's minus that
/// run's (time, CPU time, packets), so they are the cost of lookups with
/// all the flows in the table. Rows pair up: a one-thread row, then its
/// two-thread row, whose ratios are per-round ratios to it.
pub fn run_nat(cases: &[McCase], reg: &Registry, repeat: usize) -> bool {
    let (control, nat): (Vec<_>, Vec<_>) = cases.iter().partition(|c| c.case.name == "control");
    let mut ok = true;
    if !control.is_empty() {
        let control: Vec<McCase> = control.into_iter().cloned().collect();
        ok &= run_multicore(&control, reg, repeat);
    }
    println!(
        "IPRewriter: whole run, then steady state (each flow's first packet left out: the full run minus a run of the first pass alone); create c/flow: CPU cycles per flow of that first pass"
    );
    println!(
        "{:<40} {:>7} {:>6} {:>8} {:>6} | {:>7} {:>6} {:>8} {:>6} | {:>9}",
        "configuration",
        "Mpps",
        "ratio",
        "cpu c/p",
        "cpu x",
        "Mpps",
        "ratio",
        "cpu c/p",
        "cpu x",
        "create c/f"
    );
    let mut i = 0;
    while i < nat.len() {
        let group: Vec<&McCase> = nat[i..].iter().take(2).copied().collect();
        i += group.len();
        let mut runs: Vec<Vec<NatRound>> = group.iter().map(|_| Vec::new()).collect();
        let mut error = None;
        'rounds: for _ in 0..repeat.max(1) {
            for (g, c) in group.iter().enumerate() {
                let mut fill = c.case.clone();
                let per_src = fill
                    .defines
                    .iter()
                    .find(|(k, _)| k == "FLOWS")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                fill.defines.retain(|(k, _)| k != "N");
                fill.defines.push(("N".into(), per_src));
                let r = run_case(&fill, reg, c.threads, c.policy).and_then(|fill| {
                    Ok(NatRound {
                        full: run_case(&c.case, reg, c.threads, c.policy)?,
                        fill,
                    })
                });
                match r {
                    Ok(r) => runs[g].push(r),
                    Err(e) => {
                        error = Some(format!("{}: {e}", c.label));
                        break 'rounds;
                    }
                }
            }
        }
        if let Some(e) = error {
            ok = false;
            println!("error: {e}");
            continue;
        }
        for (g, c) in group.iter().enumerate() {
            let m = |f: &dyn Fn(&NatRound) -> f64| median(runs[g].iter().map(f).collect());
            let (threads, base_threads) = (c.threads, group[0].threads);
            let ratio = |f: &dyn Fn(&NatRound, &NatRound) -> f64| {
                if g == 0 {
                    "base".to_string()
                } else {
                    let v: Vec<f64> = runs[g].iter().zip(&runs[0]).map(|(x, b)| f(x, b)).collect();
                    format!("{:.2}x", median(v))
                }
            };
            println!(
                "{:<40} {:>7.2} {:>6} {:>8.1} {:>6} | {:>7.2} {:>6} {:>8.1} {:>6} | {:>9.0}",
                c.label,
                m(&|r| r.full.mpps()),
                ratio(&|x, b| x.full.mpps() / b.full.mpps()),
                m(&|r| r.full.cpu_cycles_per_packet()),
                ratio(&|x, b| cpu_scaling(
                    threads,
                    x.full.cpu_cycles_per_packet(),
                    base_threads,
                    b.full.cpu_cycles_per_packet()
                )),
                m(&|r| r.steady_mpps()),
                ratio(&|x, b| x.steady_mpps() / b.steady_mpps()),
                m(&|r| r.steady_cpu_cpp()),
                ratio(&|x, b| cpu_scaling(
                    threads,
                    x.steady_cpu_cpp(),
                    base_threads,
                    b.steady_cpu_cpp()
                )),
                m(&|r| r.create_cpu_cycles()),
            );
        }
    }
    ok
}

pub fn run_multicore(cases: &[McCase], reg: &Registry, repeat: usize) -> bool {
    println!(
        "paraclick bench --suite multicore: {} round(s), median shown; ratio = median over rounds of Mpps / Mpps of the baseline row above it in the same round",
        repeat
    );
    println!(
        "cpu c/p: CPU time per packet in cycles (all threads; time spent waiting for a core left out, time spent polling while idle counted); cpu ratio: the ratio those imply (threads / cpu c/p, against the baseline's): what the machine would give without other programs when every thread is busy all along, as in the nat suite, less when threads poll idle"
    );
    println!(
        "{:<62} {:>9} {:>7} {:>7} {:>10} {:>8} {:>9}",
        "configuration", "Mpps", "ratio", "loss %", "cyc/pkt", "cpu c/p", "cpu ratio"
    );
    let mut ok = true;
    let mut i = 0;
    while i < cases.len() {
        // A baseline row and the rows measured against it run round by
        // round (the baseline, then each row), so that each ratio compares
        // runs made seconds apart: a shared machine's speed drifts more
        // than that over a whole suite.
        let mut group = vec![i];
        while group.len() + i < cases.len() && cases[i + group.len()].baseline == Some(i) {
            group.push(i + group.len());
        }
        let mut runs: Vec<Vec<Option<Figures>>> = group.iter().map(|_| Vec::new()).collect();
        let mut errors: Vec<Option<String>> = vec![None; group.len()];
        for _ in 0..repeat.max(1) {
            for (g, &k) in group.iter().enumerate() {
                let c = &cases[k];
                if errors[g].is_some() {
                    runs[g].push(None);
                    continue;
                }
                match run_case(&c.case, reg, c.threads, c.policy) {
                    Ok(f) => runs[g].push(Some(f)),
                    Err(e) => {
                        errors[g] = Some(e);
                        runs[g].push(None);
                    }
                }
            }
        }
        for (g, &k) in group.iter().enumerate() {
            let c = &cases[k];
            if let Some(e) = &errors[g] {
                ok = false;
                println!("{:<62} error: {e}", c.label);
                continue;
            }
            let figs: Vec<&Figures> = runs[g].iter().flatten().collect();
            let rate = median(figs.iter().map(|f| f.mpps()).collect());
            let loss = median(
                figs.iter()
                    .map(|f| 100.0 * f.drops as f64 / (f.packets + f.drops).max(1) as f64)
                    .collect(),
            );
            let cpp = median(
                figs.iter()
                    .map(|f| f.cycles_per_packet(c.threads))
                    .collect(),
            );
            let cpu_cpp = median(figs.iter().map(|f| f.cpu_cycles_per_packet()).collect());
            let base_threads = cases[group[0]].threads;
            let ratio_of = |per: &dyn Fn(&Figures, &Figures) -> f64| {
                if g == 0 {
                    return "base".to_string();
                }
                let per_round: Vec<f64> = runs[g]
                    .iter()
                    .zip(&runs[0])
                    .filter_map(|(x, b)| Some(per(x.as_ref()?, b.as_ref()?)))
                    .collect();
                if per_round.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.2}x", median(per_round))
                }
            };
            let ratio = ratio_of(&|x, b| x.mpps() / b.mpps());
            let cpu_ratio = ratio_of(&|x, b| {
                cpu_scaling(
                    c.threads,
                    x.cpu_cycles_per_packet(),
                    base_threads,
                    b.cpu_cycles_per_packet(),
                )
            });
            println!(
                "{:<62} {:>9.3} {:>7} {:>7.2} {:>10.1} {:>8.1} {:>9}",
                c.label, rate, ratio, loss, cpp, cpu_cpp, cpu_ratio
            );
        }
        i += group.len();
    }
    ok
}

#[cfg(test)]
mod tests {
    #[test]
    fn nat_suite_takes_flow_counts() {
        // Without arguments: 1k, 50k and 1M flows; with them, those counts,
        // each a one-thread row and a two-thread row, the flows split
        // between the two generators, at least 10 packets per flow.
        assert_eq!(super::nat_cases(1000, &[]).len(), 2 + 6);
        let cases = super::nat_cases(1000, &[4000]);
        let rows: Vec<_> = cases.iter().filter(|c| c.case.name != "control").collect();
        assert_eq!(rows.len(), 2);
        for (c, threads) in rows.iter().zip([1, 2]) {
            assert_eq!(c.threads, threads);
            let define = |k: &str| {
                c.case
                    .defines
                    .iter()
                    .find(|(x, _)| x == k)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(define("FLOWS"), Some("2000"));
            assert_eq!(define("N"), Some("20000"));
        }
    }

    #[test]
    fn multicore_rows_follow_their_baseline() {
        // run_multicore runs a baseline and the rows right after it that
        // refer to it round by round; a row anywhere else would be shown
        // as a baseline of its own.
        let cases = super::multicore_cases(1000);
        let mut base = None;
        for (i, c) in cases.iter().enumerate() {
            match c.baseline {
                None => base = Some(i),
                Some(b) => assert_eq!(Some(b), base, "{}", c.label),
            }
        }
    }
}
