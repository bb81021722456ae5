//! The benchmark harness behind `paraclick bench --mlffr`, `--sweep` and
//! `--design 2k`: measured MLFFRs, curves with the model's prediction
//! beside them (CSV, JSON, SVG), and 2^k factorial designs.

use indicatif::{ProgressBar, ProgressStyle};
use paraclick_lang::Source;
use paraclick_model::app::WhatIf;
use paraclick_model::design;
use paraclick_model::machine::Machine;
use paraclick_runtime::Registry;
use paraclick_tune::mlffr::{self, with_long_run, Settings, Trial};
use paraclick_tune::profile;
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

pub struct Request {
    pub configs: Vec<String>,
    pub settings: Settings,
    pub sweep: Option<String>,
    pub out: String,
    pub design: Option<String>,
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("paraclick: {msg}");
    ExitCode::from(1)
}

/// Splits positional arguments into the file and NAME=VALUE defines.
fn file_and_defines(args: &[String]) -> Result<(String, Vec<(String, String)>), String> {
    let mut file = None;
    let mut defines = Vec::new();
    for a in args {
        match a.split_once('=') {
            Some((k, v)) if !k.is_empty() && !k.contains('/') => {
                defines.push((k.trim_start_matches('$').to_string(), v.to_string()))
            }
            _ if file.is_none() => file = Some(a.clone()),
            _ => return Err(format!("unexpected argument '{a}' (one file at a time)")),
        }
    }
    Ok((file.ok_or("give a CONFIG file")?, defines))
}

fn source(path: &str) -> Result<Source, String> {
    Ok(Source {
        name: path.to_string(),
        text: std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
    })
}

fn bar(n: u64, what: &str) -> ProgressBar {
    let b = ProgressBar::new(n);
    if let Ok(s) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} trials, {elapsed}") {
        b.set_style(s.progress_chars("=> "));
    }
    b.set_message(what.to_string());
    b
}

pub fn main(req: Request) -> ExitCode {
    let reg = paraclick_io::full_registry();
    if let Some(kind) = &req.design {
        if kind != "2k" {
            return fail(&format!("--design: unknown design '{kind}' (2k)"));
        }
        return match req.configs.first() {
            Some(f) => match run_design(f, &reg, &req) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            },
            None => fail("--design 2k FACTORS.toml: give the factors file"),
        };
    }
    let (file, defines) = match file_and_defines(&req.configs) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let src = match source(&file) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let defines = with_long_run(defines);
    let r = match req.sweep.as_deref() {
        Some("threads") => sweep_threads(&src, &reg, &defines, &req),
        Some("sizes") => sweep_sizes(&src, &reg, &defines, &req),
        Some("rates") => sweep_rates(&src, &reg, &defines, &req),
        Some(o) => Err(format!(
            "--sweep: unknown sweep '{o}' (threads, sizes, rates)"
        )),
        None => measure(&src, &reg, &defines, &req.settings),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn print_trial(t: &Trial, s: &Settings) {
    println!(
        "  {:>12} {:>12.0} {:>12.0} {:>12.0} {:>12.0} {:>8} {:>7.3}% {}",
        t.offered
            .map(|o| format!("{o:.0}"))
            .unwrap_or_else(|| "saturation".into()),
        t.input_pps,
        t.output_pps,
        t.halves.0,
        t.halves.1,
        t.drops,
        t.loss() * 100.0,
        if t.steady(s.steady_tol) {
            "steady"
        } else {
            "NOT steady"
        }
    );
}

fn measure(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    s: &Settings,
) -> Result<(), String> {
    println!(
        "paraclick bench --mlffr {}: {} thread(s), warm-up {} s, trials of {} s, loss <= {}, halves within {:.0}%",
        src.name,
        s.threads,
        s.warmup,
        s.trial,
        s.loss,
        s.steady_tol * 100.0
    );
    println!(
        "  {:>12} {:>12} {:>12} {:>12} {:>12} {:>8} {:>8}",
        "offered pps", "in pps", "out pps", "1st half", "2nd half", "drops", "loss"
    );
    let o = mlffr::mlffr(src, reg, defines, s, &|t| print_trial(t, s))?;
    println!("method: {}", o.method);
    if let Some(n) = &o.note {
        println!("note: {n}");
    }
    println!("MLFFR {:.0} pps", o.mlffr);
    Ok(())
}

#[derive(Serialize)]
struct Point {
    x: f64,
    measured_pps: f64,
    model_pps: f64,
    measured_bps: Option<f64>,
    drops: u64,
}

fn write_outputs(
    out: &str,
    title: &str,
    xlabel: &str,
    points: &[Point],
    log_x: bool,
) -> Result<(), String> {
    let mut csv = format!("{xlabel},measured_pps,model_pps,measured_bps,drops\n");
    for p in points {
        csv.push_str(&format!(
            "{},{:.0},{:.0},{},{}\n",
            p.x,
            p.measured_pps,
            p.model_pps,
            p.measured_bps
                .map(|b| format!("{b:.0}"))
                .unwrap_or_default(),
            p.drops
        ));
    }
    std::fs::write(format!("{out}.csv"), csv).map_err(|e| format!("{out}.csv: {e}"))?;
    let json = serde_json::json!({ "title": title, "x": xlabel, "points": points });
    std::fs::write(
        format!("{out}.json"),
        serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{out}.json: {e}"))?;
    plot(&format!("{out}.svg"), title, xlabel, points, log_x)?;
    println!("wrote {out}.csv, {out}.json, {out}.svg");
    Ok(())
}

fn plot(path: &str, title: &str, xlabel: &str, pts: &[Point], _log_x: bool) -> Result<(), String> {
    use plotters::prelude::*;
    let e = |x: &dyn std::fmt::Display| format!("{path}: {x}");
    let xmax = pts.iter().map(|p| p.x).fold(1.0, f64::max) * 1.05;
    let xmin = pts
        .iter()
        .map(|p| p.x)
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    let ymax = pts
        .iter()
        .map(|p| p.measured_pps.max(p.model_pps))
        .fold(1.0, f64::max)
        / 1e3
        * 1.1;
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut ch = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(xmin..xmax, 0f64..ymax)
        .map_err(|x| e(&x))?;
    ch.configure_mesh()
        .x_desc(xlabel)
        .y_desc("kpps")
        .draw()
        .map_err(|x| e(&x))?;
    let meas: Vec<(f64, f64)> = pts.iter().map(|p| (p.x, p.measured_pps / 1e3)).collect();
    let model: Vec<(f64, f64)> = pts.iter().map(|p| (p.x, p.model_pps / 1e3)).collect();
    ch.draw_series(LineSeries::new(meas.clone(), &BLUE))
        .map_err(|x| e(&x))?
        .label("measured")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    ch.draw_series(meas.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
        .map_err(|x| e(&x))?;
    ch.draw_series(LineSeries::new(model, &RED))
        .map_err(|x| e(&x))?
        .label("model")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    ch.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

fn machine() -> Result<Machine, String> {
    Machine::load_or_calibrate(false).map(|(m, _)| m)
}

fn sweep_threads(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    req: &Request,
) -> Result<(), String> {
    let m = machine()?;
    let max = if req.settings.threads > 1 {
        req.settings.threads
    } else {
        m.cores.max(1)
    };
    let (app, _) = profile::profile_app(src, reg, defines, 0.5)?;
    let b = bar(max as u64, "threads");
    let mut pts = Vec::new();
    let mut rows = Vec::new();
    for j in 1..=max {
        let s = Settings {
            threads: j,
            ..req.settings.clone()
        };
        let o = mlffr::mlffr(src, reg, defines, &s, &|_| {})?;
        let pm = profile::config_model(
            src,
            reg,
            defines,
            j,
            s.policy,
            &WhatIf::default(),
            &m,
            0.5,
            Some(&app),
        )?;
        rows.push(format!(
            "{j:>8} {:>12.0} {:>12.0} {:>+7.1}%",
            o.mlffr,
            pm.mlffr,
            (pm.mlffr - o.mlffr) / o.mlffr * 100.0
        ));
        pts.push(Point {
            x: j as f64,
            measured_pps: o.mlffr,
            model_pps: pm.mlffr,
            measured_bps: None,
            drops: o.trials.iter().map(|t| t.drops).sum(),
        });
        b.inc(1);
    }
    b.finish_and_clear();
    println!(
        "{:>8} {:>12} {:>12} {:>8}",
        "threads", "measured", "model", "error"
    );
    for r in rows {
        println!("{r}");
    }
    write_outputs(
        &req.out,
        &format!("{}: MLFFR against threads", src.name),
        "threads",
        &pts,
        false,
    )
}

fn sweep_sizes(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    req: &Request,
) -> Result<(), String> {
    if !src.text.contains("$LENGTH") {
        return Err(format!(
            "{}: a size sweep sets define LENGTH; the configuration does not use $LENGTH",
            src.name
        ));
    }
    let m = machine()?;
    let sizes = [64u32, 128, 256, 512, 1024, 1500];
    let b = bar(sizes.len() as u64, "packet sizes");
    let mut pts = Vec::new();
    println!(
        "{:>8} {:>12} {:>12} {:>10} {:>8}",
        "bytes", "measured", "model", "Mbps", "error"
    );
    for &size in &sizes {
        let mut d = defines.to_vec();
        d.retain(|(k, _)| k != "LENGTH");
        d.push(("LENGTH".into(), size.to_string()));
        let o = mlffr::mlffr(src, reg, &d, &req.settings, &|_| {})?;
        // The application is profiled at each size, as the paper says.
        let pm = profile::config_model(
            src,
            reg,
            &d,
            req.settings.threads,
            req.settings.policy,
            &WhatIf {
                packet_bytes: Some(size as f64),
                ..WhatIf::default()
            },
            &m,
            0.5,
            None,
        )?;
        b.suspend(|| {
            println!(
                "{size:>8} {:>12.0} {:>12.0} {:>10.1} {:>+7.1}%",
                o.mlffr,
                pm.mlffr,
                o.mlffr * size as f64 * 8.0 / 1e6,
                (pm.mlffr - o.mlffr) / o.mlffr * 100.0
            )
        });
        pts.push(Point {
            x: size as f64,
            measured_pps: o.mlffr,
            model_pps: pm.mlffr,
            measured_bps: Some(o.mlffr * size as f64 * 8.0),
            drops: o.trials.iter().map(|t| t.drops).sum(),
        });
        b.inc(1);
    }
    b.finish_and_clear();
    write_outputs(
        &req.out,
        &format!("{}: MLFFR against packet size", src.name),
        "packet bytes",
        &pts,
        false,
    )
}

fn sweep_rates(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    req: &Request,
) -> Result<(), String> {
    let entry = mlffr::entries(src, reg, defines)?;
    // The sources each trial offers rates through (RatedSource's rate).
    if !entry
        .iter()
        .any(|(_, c)| mlffr::offers_rate(reg, c, req.settings.offer_all).is_some())
    {
        return Err(
            "a rate curve needs sources with a rate handler, such as RatedSource \
             (InfiniteSource offers no rate)"
                .into(),
        );
    }
    let m = machine()?;
    let pm = profile::config_model(
        src,
        reg,
        defines,
        req.settings.threads,
        req.settings.policy,
        &WhatIf::default(),
        &m,
        0.5,
        None,
    )?;
    let top = if req.settings.max_rate > 0.0 {
        req.settings.max_rate
    } else {
        pm.mlffr * 1.6
    };
    let n = 12;
    let b = bar(n, "offered rates");
    let mut pts = Vec::new();
    println!(
        "{:>12} {:>12} {:>12} {:>8}",
        "offered", "forwarded", "model", "drops"
    );
    for i in 1..=n {
        let rate = top * i as f64 / n as f64;
        let t = mlffr::trial(src, reg, defines, &req.settings, &entry, Some(rate))?;
        // The model: forwarding follows the offered rate up to the MLFFR
        // and stays there (loss beyond it).
        let model = rate.min(pm.mlffr);
        b.suspend(|| {
            println!(
                "{rate:>12.0} {:>12.0} {model:>12.0} {:>8}",
                t.output_pps, t.drops
            )
        });
        pts.push(Point {
            x: rate / 1e3,
            measured_pps: t.output_pps,
            model_pps: model,
            measured_bps: None,
            drops: t.drops,
        });
        b.inc(1);
    }
    b.finish_and_clear();
    write_outputs(
        &req.out,
        &format!("{}: forwarding rate against input rate", src.name),
        "offered kpps",
        &pts,
        false,
    )
}

#[derive(Deserialize, Serialize, Clone)]
#[serde(deny_unknown_fields)]
struct Factor {
    name: String,
    low: String,
    high: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Factors {
    config: String,
    #[serde(default = "three")]
    replications: usize,
    #[serde(default = "ninety")]
    confidence: f64,
    #[serde(default)]
    defines: std::collections::BTreeMap<String, String>,
    #[serde(rename = "factor")]
    factors: Vec<Factor>,
}

fn three() -> usize {
    3
}
fn ninety() -> f64 {
    0.90
}

/// A 2^k design: every combination of the factors' levels, replicated;
/// the response is the MLFFR in Mpps. Factors named `threads` and `sched`
/// set -j and --sched; any other factor is a define.
fn run_design(path: &str, reg: &Registry, req: &Request) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let f: Factors = toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let k = f.factors.len();
    if !(1..=6).contains(&k) {
        return Err(format!("{path}: between 1 and 6 factors, not {k}"));
    }
    if !(0.5..1.0).contains(&f.confidence) || f.replications == 0 {
        return Err(format!(
            "{path}: confidence in [0.5, 1) and at least one replication"
        ));
    }
    let base = std::path::Path::new(path)
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let cfg = if std::path::Path::new(&f.config).exists() {
        f.config.clone()
    } else {
        base.join(&f.config).display().to_string()
    };
    let src = source(&cfg)?;
    let signs = design::signs(k);
    let runs = signs.len() * f.replications;
    println!(
        "paraclick bench --design 2k {path}: {} on 2^{k} = {} combinations x {} replications, response MLFFR (Mpps)",
        cfg,
        signs.len(),
        f.replications
    );
    let b = bar(runs as u64, "design");
    let mut y = vec![Vec::new(); signs.len()];
    // Replications in rounds, each round through every combination, so
    // drift in the machine's speed is spread over all of them.
    for _ in 0..f.replications {
        for (i, row) in signs.iter().enumerate() {
            let mut s = req.settings.clone();
            let mut d: Vec<(String, String)> = f
                .defines
                .iter()
                .map(|(a, b)| (a.clone(), b.clone()))
                .collect();
            for (fac, &sg) in f.factors.iter().zip(row) {
                let v = if sg > 0 { &fac.high } else { &fac.low };
                match fac.name.as_str() {
                    "threads" => {
                        s.threads = v
                            .parse()
                            .map_err(|_| format!("threads: '{v}' is not a number"))?
                    }
                    "sched" => s.policy = v.parse()?,
                    name => {
                        d.retain(|(x, _)| x != name);
                        d.push((name.to_string(), v.clone()));
                    }
                }
            }
            let d = with_long_run(d);
            let o = mlffr::mlffr(&src, reg, &d, &s, &|_| {})?;
            y[i].push(o.mlffr / 1e6);
            b.inc(1);
        }
    }
    b.finish_and_clear();
    let names: Vec<String> = f.factors.iter().map(|x| x.name.clone()).collect();
    println!(
        "{:<5} {}   responses (Mpps)",
        "run",
        names
            .iter()
            .map(|n| format!("{n:>10}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut csv = format!("run,{},replication,mpps\n", names.join(","));
    for (i, row) in signs.iter().enumerate() {
        let levels: Vec<&str> = f
            .factors
            .iter()
            .zip(row)
            .map(|(fac, &sg)| {
                if sg > 0 {
                    fac.high.as_str()
                } else {
                    fac.low.as_str()
                }
            })
            .collect();
        println!(
            "{:<5} {}   {}",
            i + 1,
            levels
                .iter()
                .map(|l| format!("{l:>10}"))
                .collect::<Vec<_>>()
                .join(" "),
            y[i].iter()
                .map(|v| format!("{v:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        for (r, v) in y[i].iter().enumerate() {
            csv.push_str(&format!("{},{},{},{v}\n", i + 1, levels.join(","), r + 1));
        }
    }
    let a = design::analyse(&names, &y, f.confidence)?;
    print!("{}", a.render("Mpps"));
    std::fs::write(format!("{}.csv", req.out), csv).map_err(|e| e.to_string())?;
    let terms: Vec<serde_json::Value> = a
        .terms
        .iter()
        .map(|t| {
            serde_json::json!({"term": t.name, "effect": t.effect, "fraction": t.fraction,
                "ci": t.ci.map(|(l, h)| vec![l, h])})
        })
        .collect();
    let json = serde_json::json!({"config": cfg, "factors": f.factors, "responses": y,
        "terms": terms, "error_fraction": a.error_fraction, "confidence": a.confidence});
    std::fs::write(
        format!("{}.json", req.out),
        serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    println!("wrote {0}.csv, {0}.json", req.out);
    Ok(())
}
