//! `paraclick bench CONFIG --mlffr`: the measured maximum loss-free
//! forwarding rate.
//!
//! - Sources that are `InfiniteSource`s offer no rate: the MLFFR is the
//!   saturation throughput, if the run counts no drops (with drops, the
//!   rate forwarded at saturation is reported, marked as lossy).
//! - Sources whose class has a rate handler
//!   ([`paraclick_runtime::ClassSpec::rate`]: `RatedSource`), and devices
//!   fed by them, get an RFC 2544-style binary search over offered rates:
//!   each trial sets every such source's rate through that handler,
//!   runs a warm-up and then the trial, and passes when the loss is at most
//!   the threshold and the trial was steady (the rates of its two halves
//!   agree).
//!
//! Rates are of packets entering the router (counted by the sources'
//! `count` handlers) unless `--count` handlers name what leaves it.

use paraclick_lang::Source;
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::{BuildOptions, Registry, Router};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Settings {
    pub threads: usize,
    pub policy: SchedPolicy,
    pub warmup: f64,
    pub trial: f64,
    /// Largest loss fraction a passing trial may have.
    pub loss: f64,
    /// Largest relative difference between the two halves' rates.
    pub steady_tol: f64,
    /// Handlers counting packets that left (empty: the sources' counts).
    pub count: Vec<String>,
    /// Search resolution, relative.
    pub resolution: f64,
    /// Upper bound of the search, pps (0: from a saturation run).
    pub max_rate: f64,
    /// Offer rates through every source with a `rate` handler
    /// ([`offers_rate`]), also those configured to run freely: the
    /// loss-free rate of a configuration that drops by design when
    /// saturated (a QoS scheduler's low-priority queue), where the
    /// saturation rate counts what was forwarded with drops.
    pub offer_all: bool,
}

/// The handler through which a source of `class` is given offered rates,
/// if it is: its class's rate handler ([`paraclick_runtime::RateHandler`]),
/// for a class that may run freely (FastUDPFlows) only with `all`.
pub fn offers_rate(reg: &Registry, class: &str, all: bool) -> Option<&'static str> {
    let r = reg.get(class)?.rate?;
    (all || !r.may_run_freely).then_some(r.handler)
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threads: 1,
            policy: SchedPolicy::Adaptive,
            warmup: 0.2,
            trial: 1.0,
            loss: 0.0,
            steady_tol: 0.05,
            count: Vec::new(),
            resolution: 0.01,
            max_rate: 0.0,
            offer_all: false,
        }
    }
}

/// One trial's figures.
#[derive(Clone, Debug, Default)]
pub struct Trial {
    pub offered: Option<f64>,
    /// Packets entering and leaving per second over the measured window.
    pub input_pps: f64,
    pub output_pps: f64,
    /// Rates of the window's two halves (of the counted packets).
    pub halves: (f64, f64),
    pub drops: u64,
    pub sent: u64,
    pub forwarded: u64,
    /// Each worker thread's share of a core over the window: 1 less the
    /// part of it the thread spent runnable but waiting for a CPU (other
    /// processes on the machine). What the model's `core_share` what-if
    /// takes, for a prediction on the CPU the trial actually had.
    pub core_share: Vec<f64>,
}

impl Trial {
    pub fn steady(&self, tol: f64) -> bool {
        let (a, b) = self.halves;
        let m = (a + b) / 2.0;
        m > 0.0 && (a - b).abs() / m <= tol
    }
    /// Why this trial, offered `rate`, does not pass under `s` (more loss
    /// than allowed, unsteady, or the sources fell behind the offered
    /// rate), or None when it passes.
    pub fn fails(&self, s: &Settings, rate: f64) -> Option<String> {
        if self.loss() > s.loss {
            Some(format!(
                "lost {:.3}%, more than {:.3}%",
                self.loss() * 100.0,
                s.loss * 100.0
            ))
        } else if !self.steady(s.steady_tol) {
            Some(format!(
                "not steady: halves at {:.0} and {:.0} pps",
                self.halves.0, self.halves.1
            ))
        } else if self.input_pps < 0.95 * rate {
            Some(format!(
                "the sources fell behind: {:.0} pps entered of {rate:.0} offered",
                self.input_pps
            ))
        } else {
            None
        }
    }
    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        let lost = self.sent.saturating_sub(self.forwarded).max(self.drops);
        lost as f64 / self.sent as f64
    }
}

/// The configuration's entry elements (sources, input devices) and their
/// classes.
pub fn entries(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let opts = BuildOptions {
        defines: defines.to_vec(),
        pin: false,
        check_only: true,
        profile: true,
        ..BuildOptions::default()
    };
    let r = Router::build(src, reg, &opts).map_err(join)?;
    let cd = r.cost_data();
    let with_tasks: std::collections::HashSet<&str> =
        cd.tasks.iter().map(|t| t.element.as_str()).collect();
    Ok(cd
        .elements
        .iter()
        .filter(|e| e.ninputs == 0 && with_tasks.contains(e.name.as_str()))
        .map(|e| (e.name.clone(), e.class.clone()))
        .collect())
}

/// Unless the user set N, every run gets enough packets not to end early.
pub fn with_long_run(mut d: Vec<(String, String)>) -> Vec<(String, String)> {
    if !d.iter().any(|(k, _)| k == "N") {
        d.push(("N".into(), "1000000000000".into()));
    }
    d
}

/// A configuration's diagnostics as one message.
pub fn join(d: Vec<paraclick_lang::Diagnostic>) -> String {
    d.iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

fn sum(r: &Router, handlers: &[String]) -> Result<u64, String> {
    let mut n = 0;
    for h in handlers {
        let v = r.read_handler(h)?;
        n += v
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("{h}: not a count: {}", v.trim()))?;
    }
    Ok(n)
}

/// Runs one trial: warm-up, then the window in two halves.
pub fn trial(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    s: &Settings,
    entry: &[(String, String)],
    offered: Option<f64>,
) -> Result<Trial, String> {
    let opts = BuildOptions {
        threads: s.threads,
        defines: defines.to_vec(),
        policy: s.policy,
        pin: true,
        ..BuildOptions::default()
    };
    let r = Router::build(src, reg, &opts).map_err(join)?;
    let sources: Vec<String> = entry.iter().map(|(n, _)| format!("{n}.count")).collect();
    if let Some(rate) = offered {
        let rated: Vec<(&String, &str)> = entry
            .iter()
            .filter_map(|(n, c)| Some((n, offers_rate(reg, c, s.offer_all)?)))
            .collect();
        for (n, h) in &rated {
            r.write_handler(
                &format!("{n}.{h}"),
                &format!("{}", rate / rated.len() as f64),
            )?;
        }
    }
    let out_handlers = if s.count.is_empty() {
        sources.clone()
    } else {
        s.count.clone()
    };
    let r = &r;
    let result = std::thread::scope(|sc| {
        let sampler = sc.spawn(move || -> Result<Trial, String> {
            // Leaving: the --count handlers, or what entered less what
            // was dropped.
            let own = s.count.is_empty();
            let sample = || -> Result<(Instant, u64, u64, u64), String> {
                let d = r.total_drops();
                let i = sum(r, &sources)?;
                let o = if own {
                    i.saturating_sub(d)
                } else {
                    sum(r, &out_handlers)?
                };
                Ok((Instant::now(), i, o, d))
            };
            std::thread::sleep(Duration::from_secs_f64(s.warmup));
            let a = sample()?;
            let delays_a = paraclick_model::machine::worker_run_delays();
            std::thread::sleep(Duration::from_secs_f64(s.trial / 2.0));
            let b = sample()?;
            std::thread::sleep(Duration::from_secs_f64(s.trial / 2.0));
            let still = r.is_running();
            let c = sample()?;
            let delays_c = paraclick_model::machine::worker_run_delays();
            r.stop();
            if !still {
                return Err(format!(
                    "the router stopped before the {:.1} s trial ended: give it more packets (e.g. N=100000000)",
                    s.warmup + s.trial
                ));
            }
            type S = (Instant, u64, u64, u64);
            let dt = |x: &S, y: &S| {
                y.0.duration_since(x.0).as_secs_f64().max(1e-9)
            };
            Ok(Trial {
                offered,
                input_pps: (c.1 - a.1) as f64 / dt(&a, &c),
                output_pps: c.2.saturating_sub(a.2) as f64 / dt(&a, &c),
                halves: (
                    b.2.saturating_sub(a.2) as f64 / dt(&a, &b),
                    c.2.saturating_sub(b.2) as f64 / dt(&b, &c),
                ),
                drops: c.3 - a.3,
                sent: c.1 - a.1,
                forwarded: c.2.saturating_sub(a.2),
                core_share: paraclick_model::machine::worker_core_shares(
                    &delays_a,
                    &delays_c,
                    s.threads,
                    dt(&a, &c) * 1e9,
                ),
            })
        });
        r.run();
        sampler
            .join()
            .unwrap_or_else(|_| Err("sampler failed".into()))
    });
    result
}

/// The measured MLFFR and the trials that found it.
pub struct Outcome {
    pub mlffr: f64,
    pub trials: Vec<Trial>,
    pub method: &'static str,
    pub note: Option<String>,
}

pub fn mlffr(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    s: &Settings,
    progress: &dyn Fn(&Trial),
) -> Result<Outcome, String> {
    let entry = entries(src, reg, defines)?;
    if entry.is_empty() {
        return Err("no sources or input devices: nothing offers packets".into());
    }
    let rated = entry
        .iter()
        .any(|(_, c)| offers_rate(reg, c, s.offer_all).is_some());
    if !rated {
        let t = trial(src, reg, defines, s, &entry, None)?;
        progress(&t);
        let note = if t.drops > 0 {
            Some(format!(
                "{} packets dropped in the window: not loss-free; the rate is what was forwarded",
                t.drops
            ))
        } else if !t.steady(s.steady_tol) {
            Some(format!(
                "not steady: halves at {:.0} and {:.0} pps",
                t.halves.0, t.halves.1
            ))
        } else {
            None
        };
        return Ok(Outcome {
            mlffr: t.output_pps,
            trials: vec![t],
            method: "saturation (InfiniteSource: no offered rate)",
            note,
        });
    }
    // RFC 2544: binary search between a passing and a failing rate.
    let mut trials = Vec::new();
    let mut hi = s.max_rate;
    if hi <= 0.0 {
        // Saturation: offer far more than can be forwarded.
        let t = trial(src, reg, defines, s, &entry, Some(1e9))?;
        progress(&t);
        hi = (t.output_pps * 1.5).max(1000.0);
        trials.push(t);
    }
    let mut lo = 0.0f64;
    for _ in 0..20 {
        if hi - lo <= s.resolution * hi {
            break;
        }
        let rate = (lo + hi) / 2.0;
        let t = trial(src, reg, defines, s, &entry, Some(rate))?;
        progress(&t);
        // Passing: no more loss than allowed, steady, and the sources kept
        // up with the offered rate.
        if t.fails(s, rate).is_none() {
            lo = rate;
        } else {
            hi = rate;
        }
        trials.push(t);
    }
    Ok(Outcome {
        mlffr: lo,
        trials,
        method: "RFC 2544 binary search over offered rates",
        note: (lo == 0.0).then(|| "no offered rate passed".to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which sources get offered rates, and through which handler, is
    /// what their classes declare: a class of the test's own that
    /// declares a rate handler gets them, as RatedSource and FastUDPFlows
    /// do.
    #[test]
    fn sources_are_offered_rates_through_the_handler_their_class_declares() {
        let mut reg = crate::registry();
        for (name, like, handler, free) in [
            ("PacedOfMyOwn", "RatedSource", "speed", false),
            ("FreeOfMyOwn", "FastUDPFlows", "pps", true),
            ("PlainOfMyOwn", "InfiniteSource", "", false),
        ] {
            let mut c = reg.get(like).unwrap().clone();
            c.name = name;
            if !handler.is_empty() {
                c = c.rate(handler, free);
            }
            reg.register(c);
        }
        assert_eq!(offers_rate(&reg, "PacedOfMyOwn", false), Some("speed"));
        assert_eq!(offers_rate(&reg, "PacedOfMyOwn", true), Some("speed"));
        assert_eq!(offers_rate(&reg, "FreeOfMyOwn", false), None);
        assert_eq!(offers_rate(&reg, "FreeOfMyOwn", true), Some("pps"));
        assert_eq!(offers_rate(&reg, "PlainOfMyOwn", true), None);
        // The library's, as before: a RatedSource always, a FastUDPFlows
        // when all are asked for, an InfiniteSource never.
        assert_eq!(offers_rate(&reg, "RatedSource", false), Some("rate"));
        assert_eq!(offers_rate(&reg, "FastUDPFlows", false), None);
        assert_eq!(offers_rate(&reg, "FastUDPFlows", true), Some("rate"));
        assert_eq!(offers_rate(&reg, "InfiniteSource", true), None);
        assert_eq!(offers_rate(&reg, "NoSuchClass", true), None);
    }

    #[test]
    fn steadiness_and_loss() {
        let mut t = Trial {
            halves: (100.0, 104.0),
            sent: 1000,
            forwarded: 990,
            ..Trial::default()
        };
        assert!(t.steady(0.05));
        assert!(!t.steady(0.01));
        assert!((t.loss() - 0.01).abs() < 1e-12);
        t.drops = 50;
        assert!((t.loss() - 0.05).abs() < 1e-12);
        t.halves = (0.0, 0.0);
        assert!(!t.steady(0.5));
    }
}
