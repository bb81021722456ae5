//! `paraclick model --validate`: for each configuration, in rounds, the
//! model's prediction (the round's own application profile, mapped onto
//! 1 and 2 threads) and the harness's measured MLFFR, with the median of
//! the rounds' errors and the terms of the model behind it.

use crate::mlffr::{self, Settings};
use crate::profile;
use paraclick_lang::Source;
use paraclick_model::app::WhatIf;
use paraclick_model::machine::Machine;
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::Registry;

/// The configurations validated by default: the IP router and the other
/// standard ones, plus any NAT, VPN/IPsec, QoS or firewall configuration
/// in conf/ (the firewalls and marking-pipeline were written after the
/// model, to try it on configurations it was never tuned on).
pub fn default_configs() -> Vec<String> {
    let mut v: Vec<String> = [
        "conf/fake-iprouter.click",
        "conf/infinite-discard.click",
        "conf/queue-unqueue.click",
        "conf/fake-iprouter-x2.click",
        "conf/fake-iprouter6.click",
        // Written after the model (2026-11-27): three tasks, two queues,
        // the placement the adaptive scheduler's.
        "conf/marking-pipeline.click",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Ok(rd) = std::fs::read_dir("conf") {
        let mut extra: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path().display().to_string())
            .filter(|p| {
                let l = p.to_lowercase();
                let stem = l
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(".click")
                    .to_string();
                // Words of the file name: "replicated-qos", "nat44-router".
                let words: Vec<&str> = stem.split(['-', '_', '.']).collect();
                l.ends_with(".click")
                    && words.iter().any(|w| {
                        ["nat", "vpn", "ipsec", "qos", "esp", "firewall"]
                            .iter()
                            .any(|k| w.starts_with(k))
                    })
                    // These need devices (veth pairs in namespaces) or
                    // input files that run dry (nat-pcap, vpn-pcap: their
                    // bench twins nat-bench, vpn-bench are validated).
                    && !l.contains("veth")
                    && !l.contains("pcap")
            })
            .collect();
        extra.sort();
        v.extend(extra);
    }
    v.retain(|p| std::path::Path::new(p).exists());
    v
}

pub struct Row {
    pub config: String,
    pub threads: usize,
    /// Medians over the rounds.
    pub predicted: f64,
    pub measured: f64,
    /// The median of the rounds' relative errors (each round's
    /// prediction against its own measurement).
    pub error: f64,
    pub bottleneck: String,
    pub note: String,
}

impl Row {
    pub fn error(&self) -> f64 {
        self.error
    }
}

/// One round's prediction and measurement.
struct Run {
    predicted: f64,
    measured: f64,
    bottleneck: String,
    note: String,
    /// Each worker's share of a core during the measurement.
    shares: Vec<f64>,
    /// The core-to-core line time just before and just after the
    /// measurement (ns; 2-thread rounds only).
    line: (Option<f64>, Option<f64>),
    /// The prediction at the hop calibration's line time instead.
    at_calibrated_line: Option<f64>,
}

/// Each worker's share of a core, averaged over a measurement's trials.
fn mean_shares(trials: &[mlffr::Trial], threads: usize) -> Vec<f64> {
    let mut v = vec![0.0; threads];
    let mut n = 0usize;
    for t in trials.iter().filter(|t| t.core_share.len() == threads) {
        for (a, b) in v.iter_mut().zip(&t.core_share) {
            *a += b;
        }
        n += 1;
    }
    if n == 0 {
        return vec![1.0; threads];
    }
    v.iter().map(|x| x / n as f64).collect()
}

/// The core-to-core line time each round ran at, as "24/185/24" (ns,
/// the mean of the timings before and after its measurement; "24>185"
/// where the two differ by more than half: the state changed during the
/// round, and the mean was used).
fn line_text(runs: &[Run]) -> String {
    per_round(runs, |r| match r.line {
        (Some(a), Some(b)) if crate::stats::changed_state(a, b) => format!("{a:.0}>{b:.0}"),
        (a, b) => crate::stats::mean_line(&[a, b]).map_or("?".into(), |x| format!("{x:.0}")),
    })
}

/// One figure per round, joined with "/" ("0.99/0.97/1.00").
fn per_round(runs: &[Run], f: impl Fn(&Run) -> String) -> String {
    runs.iter().map(f).collect::<Vec<_>>().join("/")
}

/// A rate in Mpps with two decimals.
fn mpps(x: f64) -> String {
    format!("{:.2}", x / 1e6)
}

/// The lowest worker share of each round, as "0.99/0.97/1.00".
fn share_text(runs: &[Run]) -> String {
    per_round(runs, |r| {
        format!("{:.2}", r.shares.iter().copied().fold(1.0f64, f64::min))
    })
}

/// For 2-thread rows: the line time per round and, where the prediction
/// used another line time than the hop calibration's, the prediction at
/// the calibration's.
fn line_note(runs: &[Run]) -> String {
    let mut s = format!("; line {} ns", line_text(runs));
    if runs.iter().any(|r| r.at_calibrated_line.is_some()) {
        s.push_str("; model at the calibration's line ");
        s.push_str(&per_round(runs, |r| {
            r.at_calibrated_line.map_or("-".into(), mpps)
        }));
        s.push_str(" M");
    }
    s
}

/// Validates one configuration (`path` names it in the rows): `rounds`
/// rounds, each a profile on 1 thread mapped onto 1 and 2 threads against
/// a measurement of each (`mlffr`, enough packets that no run ends by
/// itself unless `defines` sets N). Gives a row per thread count that got
/// a round; `problem` gets each failed step as a line, as it happens.
#[allow(clippy::too_many_arguments)]
pub fn validate_config(
    path: &str,
    src: &Source,
    reg: &Registry,
    user_defines: &[(String, String)],
    machine: &Machine,
    secs: f64,
    rounds: usize,
    problem: &mut dyn FnMut(String),
) -> Vec<Row> {
    let src = src.clone();
    let mut rows = Vec::new();
    // Enough packets that no run ends by itself.
    let mut defines = vec![("N".to_string(), "1000000000000".to_string())];
    defines.extend(user_defines.iter().cloned());
    // Each round profiles the configuration, then measures and
    // predicts it on 1 and on 2 threads, so the prediction and the
    // measurement see the same drift of the machine (a profile taken
    // once, while another process had the core, made every round's
    // prediction of nat-bench 38% low); the error is the median of
    // the rounds' errors (of per-round ratios, not a ratio of
    // medians: a round whose line changed state pairs its own
    // prediction with its own measurement).
    let mut got: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    let mut line_term = String::new();
    for _ in 0..rounds {
        let app = match profile::profile_app(&src, reg, &defines, secs) {
            Ok((a, notes)) => {
                // Where the crossing queues' line term came from (the
                // last round's).
                let l = notes.lines().find(|l| l.starts_with("line term:"));
                line_term = l.unwrap_or("").to_string();
                a
            }
            Err(e) => {
                problem(format!("{path:<34} profile: {e}"));
                break;
            }
        };
        for (k, threads) in [1usize, 2].into_iter().enumerate() {
            let s = Settings {
                threads,
                trial: 1.0,
                ..Settings::default()
            };
            // Packets crossing cores meet the line time of the
            // moment, which on a VM is not the calibration's: timed
            // just before and just after the measurement.
            let timed_line = || {
                if threads > 1 {
                    paraclick_model::machine::line_ns_now(crate::stats::LINE_ROUNDS)
                } else {
                    None
                }
            };
            let before = timed_line();
            let meas = match mlffr::mlffr(&src, reg, &defines, &s, &|_| {}) {
                Ok(o) => o,
                Err(e) => {
                    problem(format!("{path:<34} {threads:>3} error: {e}"));
                    continue;
                }
            };
            let line = (before, timed_line());
            // The prediction for the CPU the measurement had: each
            // worker's share of its core over the trials (other
            // processes on a shared machine take some), relative to the
            // timing run's, as `--core-share` would give it.
            let shares = mean_shares(&meas.trials, threads);
            let then = app.core_share.clamp(1e-3, 1.0);
            let had = WhatIf {
                core_share: shares.iter().map(|x| x / then).collect(),
                line_ns: crate::stats::mean_line(&[line.0, line.1]),
                ..WhatIf::default()
            };
            let m = profile::config_model(
                &src,
                reg,
                &defines,
                threads,
                SchedPolicy::Adaptive,
                &had,
                machine,
                secs,
                Some(&app),
            );
            match m {
                Ok(m) => {
                    let bottleneck = m
                        .text
                        .lines()
                        .find(|l| l.starts_with("bottleneck:"))
                        .unwrap_or("")
                        .trim_start_matches("bottleneck: ")
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .to_string();
                    got[k].push(Run {
                        predicted: m.mlffr,
                        measured: meas.mlffr,
                        bottleneck,
                        note: meas.note.unwrap_or_default(),
                        shares,
                        line,
                        at_calibrated_line: m.mlffr_calibrated_line,
                    });
                }
                Err(e) => problem(format!("{path:<34} {threads:>3} error: {e}")),
            }
        }
    }
    for (k, threads) in [1usize, 2].into_iter().enumerate() {
        let runs = &got[k];
        if runs.is_empty() {
            continue;
        }
        let mut p: Vec<f64> = runs.iter().map(|r| r.predicted).collect();
        let mut o: Vec<f64> = runs.iter().map(|r| r.measured).collect();
        let mut e: Vec<f64> = runs
            .iter()
            .map(|r| (r.predicted - r.measured) / r.measured)
            .collect();
        let lossy = runs.iter().filter(|r| r.note.contains("dropped")).count();
        let row = Row {
            config: path.to_string(),
            threads,
            predicted: crate::stats::median(&mut p),
            measured: crate::stats::median(&mut o),
            error: crate::stats::median(&mut e),
            bottleneck: runs[runs.len() / 2].bottleneck.clone(),
            note: format!(
                "median of {}; model {} M; measured {} M; errors {}; core share {}{}{}",
                runs.len(),
                per_round(runs, |r| mpps(r.predicted)),
                per_round(runs, |r| mpps(r.measured)),
                per_round(runs, |r| format!(
                    "{:+.1}%",
                    (r.predicted - r.measured) / r.measured * 100.0
                )),
                share_text(runs),
                if threads > 1 {
                    format!("{}; {line_term}", line_note(runs))
                } else {
                    String::new()
                },
                if lossy > 0 {
                    format!("; {lossy} run(s) with drops")
                } else {
                    String::new()
                }
            ),
        };
        rows.push(row);
    }
    rows
}
