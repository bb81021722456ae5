//! Calibration of the model's crossing term (issue 15): the cost of one
//! packet's hop through a `Queue` from one thread to another, measured on
//! the runtime itself rather than on a synthetic ring, at each end.
//!
//! For each consumer batch size B, two chains are run:
//! `InfiniteSource(BURST B) -> [32 Counters] -> Queue -> Unqueue(BURST B)
//! -> Discard` (the producer's end the slower one) and the same with the
//! Counters after the Unqueue (the consumer's end the slower one). Each is
//! profiled on one thread (what share of the work each end's task does,
//! as for any configuration), then run on one thread and on two threads
//! (the Unqueue on the second), in rounds alternating the two, its
//! forwarding rate sampled every [`WINDOW_MS`] ms. On a machine shared with
//! other processes a thread is now and then off its core for milliseconds;
//! a rate over a whole run charges that to the hop (the median-of-rounds
//! figure this replaces swung from 16 to 225 ns per end at BURST 1 within
//! minutes), so each window's packets are divided by the CPU time the
//! run's busiest thread (the slower end) had in it, not by wall time, and,
//! as the core-to-core and ring timings do, the cheapest window over all
//! rounds is kept: 1-thread time per packet t1, 2-thread t2. The slower end's hop cost is then t2 - (its share of t1)
//! ([`paraclick_model::machine::hop_end_ns`]): the producer's from the
//! first chain (it pays for the buffers coming back from the other core
//! and the ring's tail), the consumer's from the second (the packet's
//! lines, the ring's head).

use crate::model_cmd;
use paraclick_lang::Source;
use paraclick_model::machine::{
    best_window_rate, busiest_between, hop_end_ns, threads_cpu_ns, HopPoint,
};
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::Registry;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

pub const BATCHES: [u32; 3] = [1, 8, 32];
/// Counters on the heavy side: enough that it is the slower end at every
/// batch with its crossing cost added to the light side.
const HEAVY: usize = 32;
pub const WINDOW_MS: u64 = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    Producer,
    Consumer,
}

fn config(batch: u32, heavy: End, thread: usize) -> Source {
    let chain = "-> Counter ".repeat(HEAVY);
    let (before, after) = match heavy {
        End::Producer => (chain.as_str(), ""),
        End::Consumer => ("", chain.as_str()),
    };
    Source {
        name: format!("<queue hop, BURST {batch}, {heavy:?} heavy>"),
        text: format!(
            "s :: InfiniteSource(LENGTH 64, BURST {batch});\n\
             s {before}-> q :: Queue(1000) -> u :: Unqueue(BURST {batch}) {after}-> Discard;\n\
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

/// Runs `src` on `threads` pinned threads for a warm-up and `secs`,
/// sampling every [`WINDOW_MS`] the packets forwarded (entered less
/// dropped) and every thread's CPU time; returns the windows (packets,
/// seconds the busiest thread ran).
fn sampled_run(
    src: &Source,
    reg: &Registry,
    threads: usize,
    secs: f64,
) -> Result<Vec<(u64, f64)>, String> {
    let r = model_cmd::build(src, reg, &[], threads, SchedPolicy::Static, false, false)?;
    let r = &r;
    std::thread::scope(|sc| {
        let sampler = sc.spawn(move || -> Result<Vec<(u64, f64)>, String> {
            std::thread::sleep(Duration::from_millis(100));
            let t0 = Instant::now();
            let until = Duration::from_secs_f64(secs);
            let sample = || -> Result<(u64, Vec<(i32, u64)>), String> {
                let n = r.read_handler("s.count")?;
                let n: u64 = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("s.count: not a count: {}", n.trim()))?;
                Ok((n.saturating_sub(r.total_drops()), threads_cpu_ns()))
            };
            let mut last = sample()?;
            let mut v = Vec::new();
            while t0.elapsed() < until {
                std::thread::sleep(Duration::from_millis(WINDOW_MS));
                let now = sample()?;
                v.push((
                    now.0.saturating_sub(last.0),
                    busiest_between(&last.1, &now.1),
                ));
                last = now;
            }
            r.stop();
            Ok(v)
        });
        r.run();
        sampler
            .join()
            .unwrap_or_else(|_| Err("sampler failed".into()))
    })
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
        let mut ends = [0.0f64; 2];
        let mut line = Vec::new();
        for (k, end) in [End::Producer, End::Consumer].into_iter().enumerate() {
            let (app, _) = model_cmd::profile_app(&config(b, end, 0), reg, &[], secs)?;
            let total: f64 = app.tasks.iter().map(|t| t.cycles_per_packet).sum();
            let name = if end == End::Producer { "s" } else { "u" };
            let own = app
                .tasks
                .iter()
                .find(|t| t.name == name)
                .map_or(0.0, |t| t.cycles_per_packet);
            let share = if total > 0.0 { own / total } else { 0.5 };
            let (mut r1, mut r2) = (0.0f64, 0.0f64);
            for _ in 0..rounds.max(1) {
                let s1 = sampled_run(&config(b, end, 0), reg, 1, secs)?;
                r1 = r1.max(best_window_rate(&s1));
                let s2 = sampled_run(&config(b, end, 1), reg, 2, secs)?;
                r2 = r2.max(best_window_rate(&s2));
            }
            if r1 <= 0.0 || r2 <= 0.0 {
                return Err(format!(
                    "queue hop BURST {b}: nothing forwarded ({end:?} heavy)"
                ));
            }
            ends[k] = hop_end_ns(r1, share, r2);
            line.push(format!(
                "{} heavy: {:.0}% of 1 thread's work at that end, best {} ms window per second on core: 1 thread {:.0} pps, 2 threads {:.0} pps -> +{:.1} ns",
                if end == End::Producer { "producer" } else { "consumer" },
                share * 100.0,
                WINDOW_MS,
                r1,
                r2,
                ends[k]
            ));
        }
        let _ = writeln!(notes, "queue hop BURST {b:>2}: {}", line.join("; "));
        pts.push(HopPoint {
            batch: b as f64,
            ns: ends[0].max(ends[1]),
            producer_ns: Some(ends[0]),
            consumer_ns: Some(ends[1]),
        });
    }
    Ok((pts, notes))
}
