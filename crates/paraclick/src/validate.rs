//! `paraclick model --validate`: prints, for each configuration, the rows
//! [`paraclick_tune::validate::validate_config`] measures (the model's
//! prediction against the harness's measured MLFFR, medians of rounds),
//! and a summary of the errors.

use crate::Input;
use paraclick_lang::Source;
use paraclick_model::machine::Machine;
use paraclick_runtime::Registry;
use paraclick_tune::validate::{default_configs, validate_config};
use std::process::ExitCode;

pub fn run(input: &Input, reg: &Registry, machine: &Machine, secs: f64, rounds: usize) -> ExitCode {
    let configs = if input.args.iter().any(|a| !a.contains('=')) {
        input
            .args
            .iter()
            .filter(|a| !a.contains('='))
            .cloned()
            .collect()
    } else {
        default_configs()
    };
    let user_defines: Vec<(String, String)> = input
        .args
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    println!(
        "paraclick model --validate: per round, a profile on 1 thread mapped to 1 and 2 threads against a measurement (bench --mlffr); error: the median of the rounds' errors; {} cores at {:.2} GHz",
        machine.cores, machine.tsc_ghz
    );
    println!(
        "{:<34} {:>3} {:>12} {:>12} {:>8}  bottleneck / notes",
        "configuration", "-j", "model pps", "measured", "error"
    );
    let mut rows = Vec::new();
    for path in &configs {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                println!("{path:<34} error: {e}");
                continue;
            }
        };
        let src = Source {
            name: path.clone(),
            text,
        };
        let got = validate_config(
            path,
            &src,
            reg,
            &user_defines,
            machine,
            secs,
            rounds,
            &mut |line| println!("{line}"),
        );
        for row in got {
            println!(
                "{:<34} {:>3} {:>12.0} {:>12.0} {:>+7.1}%  {} [{}]",
                row.config,
                row.threads,
                row.predicted,
                row.measured,
                row.error() * 100.0,
                row.bottleneck,
                row.note
            );
            rows.push(row);
        }
    }
    if rows.is_empty() {
        eprintln!("paraclick: nothing validated");
        return ExitCode::from(1);
    }
    let abs: Vec<f64> = rows.iter().map(|r| r.error().abs()).collect();
    let within = |x: f64| abs.iter().filter(|&&e| e <= x).count();
    println!(
        "{} predictions: mean |error| {:.1}%, max {:.1}%; within 5%: {}, within 10%: {}",
        rows.len(),
        abs.iter().sum::<f64>() / abs.len() as f64 * 100.0,
        abs.iter().fold(0.0f64, |a, &b| a.max(b)) * 100.0,
        within(0.05),
        within(0.10)
    );
    ExitCode::SUCCESS
}
