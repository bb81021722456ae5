//! Calibration of the model's crossing term (issue 15): the cost of one
//! packet's hop through a `Queue` from one thread to another, measured on
//! the runtime itself rather than on a synthetic ring.
//!
//! For each consumer batch size B, `InfiniteSource(BURST B) -> Queue ->
//! Unqueue(BURST B) -> Discard` is profiled on one thread (what the
//! source's and the Unqueue's tasks cost per packet, as for any
//! configuration), then measured (`bench --mlffr`: packets forwarded per
//! second, drops excluded) on two threads with the Unqueue on the second.
//! The hop cost x is what the model must add to each end's per-packet
//! cost for its pipeline (each thread's latency = (task cost + x) / its
//! core share, the slower thread setting the rate) to give the measured
//! rate: x = min over the two threads of (T2 * share - cost), T2 the
//! measured ns per forwarded packet. Rounds alternate one- and
//! two-thread runs; the median x of the rounds is kept, since the shared
//! machine's noise is large.

use crate::mlffr::{self, Settings};
use crate::model_cmd;
use paraclick_lang::Source;
use paraclick_model::machine::{core_shares, HopPoint};
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::Registry;
use std::fmt::Write as _;

pub const BATCHES: [u32; 3] = [1, 8, 32];

fn config(batch: u32, thread: usize) -> Source {
    Source {
        name: format!("<queue hop, BURST {batch}>"),
        text: format!(
            "s :: InfiniteSource(LENGTH 64, BURST {batch});\n\
             s -> q :: Queue(1000) -> u :: Unqueue(BURST {batch}) -> Discard;\n\
             StaticThreadSched(s 0, u {thread});\n"
        ),
    }
}

pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The hop curve, with a line per batch size for the report.
pub fn calibrate(
    reg: &Registry,
    rounds: usize,
    secs: f64,
) -> Result<(Vec<HopPoint>, String), String> {
    let mut pts = Vec::new();
    let mut notes = String::new();
    for &b in &BATCHES {
        let (app, _) = model_cmd::profile_app(&config(b, 0), reg, &[], secs)?;
        let ghz = app.tsc_ghz.max(1e-3);
        let cost: Vec<f64> = app
            .tasks
            .iter()
            .map(|t| t.cycles_per_packet / ghz)
            .collect();
        let (mut xs, mut r1s, mut r2s) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds.max(1) {
            let s1 = Settings {
                threads: 1,
                policy: SchedPolicy::Static,
                warmup: 0.1,
                trial: secs,
                ..Settings::default()
            };
            let r1 = mlffr::mlffr(&config(b, 0), reg, &[], &s1, &|_| {})?.mlffr;
            let shares = core_shares(2, 100);
            let s2 = Settings { threads: 2, ..s1 };
            let r2 = mlffr::mlffr(&config(b, 1), reg, &[], &s2, &|_| {})?.mlffr;
            if r2 <= 0.0 {
                continue;
            }
            let t2 = 1e9 / r2;
            let then = app.core_share.clamp(1e-3, 1.0);
            // Task 0 is the source's (thread 0), task 1 the Unqueue's.
            let x = cost
                .iter()
                .enumerate()
                .map(|(i, c)| t2 * shares.get(i).copied().unwrap_or(1.0) / then - c)
                .fold(f64::INFINITY, f64::min)
                .max(0.0);
            xs.push(x);
            r1s.push(r1);
            r2s.push(r2);
        }
        if xs.is_empty() {
            return Err(format!(
                "queue hop BURST {b}: nothing forwarded on two threads"
            ));
        }
        let x = median(&mut xs);
        let _ = writeln!(
            notes,
            "queue hop BURST {b:>2}: tasks {} ns/packet; median of {} rounds: 1 thread {:.0} pps, 2 threads {:.0} pps; crossing +{:.0} ns per end",
            cost.iter().map(|c| format!("{c:.0}")).collect::<Vec<_>>().join(" + "),
            r1s.len(),
            median(&mut r1s),
            median(&mut r2s),
            x
        );
        pts.push(HopPoint {
            batch: b as f64,
            ns: x,
        });
    }
    Ok((pts, notes))
}
