//! `--simtime`: Click's simulated time. The clock starts at 1000000000 s
//! and jumps to the next timer or paced packet whenever nothing has work,
//! so rate- and timer-driven configurations run as fast as the CPU allows
//! and print the same output on every run.

mod common;
use common::paraclick;
use std::time::Instant;

/// Runs `conf` with `--simtime` and returns its standard error (Print's
/// output) followed by its standard output (Script's), and the wall-clock
/// seconds it took.
fn run_sim(conf: &str) -> (String, f64) {
    let t0 = Instant::now();
    let out = paraclick(&["--simtime", "-e", conf]);
    let wall = t0.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    (text, wall)
}

/// The timestamps (in microseconds) of Print lines `LABEL: SEC.USEC: ...`.
fn stamps(out: &str, label: &str) -> Vec<i64> {
    out.lines()
        .filter_map(|l| l.strip_prefix(&format!("{label}: ")))
        .map(|l| {
            let ts = l.split(':').next().unwrap();
            let (s, f) = ts.split_once('.').unwrap();
            s.parse::<i64>().unwrap() * 1_000_000 + f.parse::<i64>().unwrap()
        })
        .collect()
}

#[test]
fn rated_source_runs_in_simulated_time_identically_twice() {
    let conf = "RatedSource(RATE 10, LIMIT 50, STOP true)
                  -> Print(x, TIMESTAMP true, MAXLENGTH 4) -> Discard;";
    let (a, wall_a) = run_sim(conf);
    let (b, wall_b) = run_sim(conf);
    assert_eq!(a, b, "two --simtime runs differ");
    let ts = stamps(&a, "x");
    assert_eq!(ts.len(), 50, "{a}");
    assert_eq!(
        ts[0],
        1_000_000_000 * 1_000_000,
        "starts at Click's fixed point"
    );
    for w in ts.windows(2) {
        assert_eq!(w[1] - w[0], 100_000, "exactly 1/RATE apart: {a}");
    }
    let simulated = (ts[49] - ts[0]) as f64 / 1e6;
    println!(
        "simulated {simulated:.1} s in {wall_a:.3} s and {wall_b:.3} s of wall time (ratio {:.3})",
        wall_a.max(wall_b) / simulated
    );
}

#[test]
fn timers_and_script_waits_jump_in_simulated_time() {
    // 10 simulated seconds of a 0.5 s TimedSource, ended by a Script wait.
    let conf = "TimedSource(0.5, \"hello\") -> c :: Counter -> Print(t, TIMESTAMP true) -> Discard;
                Script(wait 10s, print \"end $(now) $(c.count)\", stop);";
    let (a, wall) = run_sim(conf);
    let (b, _) = run_sim(conf);
    assert_eq!(a, b, "two --simtime runs differ");
    let ts = stamps(&a, "t");
    assert!(ts.len() >= 19, "{a}");
    for w in ts.windows(2) {
        assert_eq!(w[1] - w[0], 500_000, "{a}");
    }
    assert!(
        a.contains("end 1000000010.000000"),
        "Script's $(now) reads the simulated clock: {a}"
    );
    println!("10 simulated seconds in {wall:.3} s of wall time");
}

#[test]
fn real_time_is_the_default() {
    let out = paraclick(&[
        "-e",
        "InfiniteSource(LIMIT 1, STOP true) -> Print(x, TIMESTAMP true) -> Discard;",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Real timestamps are far past 2001 (the simulated start).
    assert!(!err.contains("x: 1000000000."), "{err}");
}
