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
    run_sim_j(conf, 1)
}

/// [`run_sim`] with `-j threads`.
fn run_sim_j(conf: &str, threads: usize) -> (String, f64) {
    let t0 = Instant::now();
    let j = threads.to_string();
    let out = paraclick(&["--simtime", "-j", &j, "-e", conf]);
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
    assert!(
        wall_a.max(wall_b) < simulated / 2.0,
        "{simulated} simulated seconds took {wall_a:.1} s and {wall_b:.1} s"
    );
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
    // Every half second from 0.5 s to 10 s: the tick due at the stop's
    // instant still runs (Script's count, printed first, has 19).
    assert_eq!(ts.len(), 20, "{a}");
    assert_eq!(ts[0], 1_000_000_000 * 1_000_000 + 500_000, "{a}");
    for w in ts.windows(2) {
        assert_eq!(w[1] - w[0], 500_000, "{a}");
    }
    assert!(a.contains("end 1000000010.000000 19\n"), "{a}");
    // The point of simulated time: 10 s pass in much less. (One side
    // bounded, generously: a loaded machine is slower, never faster.)
    assert!(wall < 5.0, "10 simulated seconds took {wall:.1} s");
    println!("10 simulated seconds in {wall:.3} s of wall time");
}

#[test]
fn at_one_instant_the_timers_run_before_the_tasks_woken_for_it() {
    // A RatedUnqueue moving one packet a millisecond wakes for 10 ms, the
    // instant the Script's wait ends: as in Click, the timer (the Script
    // reading the count) runs first, so it sees the packets of 0..9 ms,
    // and the one of 10 ms follows.
    let conf = "InfiniteSource -> Queue(10) -> RatedUnqueue(1000, BURST_SIZE 1)
                  -> c :: Counter -> Discard;
                Script(wait 10ms, print \"$(c.count)\", wait 5ms, print \"$(c.count)\", stop);";
    let (a, _) = run_sim(conf);
    assert_eq!(a, "10\n15\n");
}

#[test]
fn a_delay_shaper_releases_its_packet_at_the_moment_it_is_due() {
    // The held packet's due moment is an event of its own: it leaves at
    // 50 ms, not at the next timer (the Script's, at 100 ms).
    let conf = "InfiniteSource(LIMIT 1, STOP false) -> q :: Queue -> DelayShaper(50ms)
                  -> Print(d, TIMESTAMP true) -> Discard;
                Script(wait 100ms, stop);";
    let (a, _) = run_sim(conf);
    assert_eq!(
        stamps(&a, "d"),
        vec![1_000_000_000 * 1_000_000 + 50_000],
        "{a}"
    );
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

#[test]
fn several_threads_run_identically_twice() {
    // Two paced sources pinned to different threads emit at the same
    // simulated instants into one queue drained by a third task: with one
    // OS thread per logical thread the order of each instant's two packets
    // was a race (four runs gave four different outputs at -j 2 and -j 4).
    // Simulated time now runs every logical thread on one OS thread in a
    // fixed order, so the output is the same byte for byte.
    let conf = r#"a :: RatedSource(\<aa>, RATE 1000, LIMIT 200, STOP false) -> q :: Queue(1000);
                  b :: RatedSource(\<bb>, RATE 1000, LIMIT 200, STOP false) -> q;
                  c :: RatedSource(\<cc>, RATE 300, LIMIT 60, STOP false) -> q;
                  q -> u :: Unqueue(BURST 4) -> Print(x, TIMESTAMP true, MAXLENGTH 1) -> n :: Counter -> Discard;
                  StaticThreadSched(a 0, b 1, c 2, u 3);
                  Script(wait 0.3s, print "end $(now) $(n.count) $(q.drops)", stop);"#;
    for threads in [2, 4] {
        let (a, _) = run_sim_j(conf, threads);
        let (b, wall) = run_sim_j(conf, threads);
        assert_eq!(a, b, "-j {threads}: two --simtime runs differ");
        assert!(a.contains("end 1000000000.300000 460 0"), "{a}");
        let lines: Vec<&str> = a.lines().filter(|l| l.starts_with("x: ")).collect();
        assert_eq!(lines.len(), 460);
        // Each source's packets at its own pace, in simulated time.
        for (tag, gap) in [("aa", 1_000), ("bb", 1_000), ("cc", 3_333)] {
            let ts: Vec<i64> = stamps(
                &lines
                    .iter()
                    .filter(|l| l.ends_with(tag))
                    .map(|l| format!("{l}\n"))
                    .collect::<String>(),
                "x",
            );
            assert!(ts.len() >= 60, "{tag}: {}", ts.len());
            for w in ts.windows(2) {
                assert!(
                    (w[1] - w[0] - gap).abs() <= 1,
                    "-j {threads}: {tag} {} us apart",
                    w[1] - w[0]
                );
            }
        }
        println!("-j {threads}: 0.3 simulated seconds in {wall:.3} s of wall time");
    }
}

#[test]
fn simulated_threads_keep_their_own_thread_index() {
    // CPUQueue puts a packet in the queue of the thread that pushes it.
    // Under --simtime -j 2 the two sources, pinned to threads 0 and 1, run
    // on one OS thread but as threads 0 and 1: their packets land in two
    // queues, which a BURST 1 Unqueue then takes in turn.
    let conf = r#"s0 :: InfiniteSource(\<aa>, LIMIT 6, BURST 1, STOP false) -> q :: CPUQueue(100);
                  s1 :: InfiniteSource(\<bb>, LIMIT 4, BURST 1, STOP false) -> q;
                  q -> u :: Unqueue(1, ACTIVE false) -> Print(y, MAXLENGTH 1) -> Discard;
                  StaticThreadSched(s0 0, s1 1, u 0);
                  Script(wait 1s, write u.active true, wait 1s, stop);"#;
    let (a, _) = run_sim_j(conf, 2);
    let tags: Vec<&str> = a
        .lines()
        .filter_map(|l| l.strip_prefix("y:    1 | "))
        .collect();
    assert_eq!(
        tags,
        ["aa", "bb", "aa", "bb", "aa", "bb", "aa", "bb", "aa", "aa"],
        "{a}"
    );
}

fn sim_router(conf: &str, threads: usize) -> paraclick_runtime::Router {
    let opts = paraclick_runtime::BuildOptions {
        threads,
        simtime: true,
        pin: false,
        ..Default::default()
    };
    let src = paraclick_lang::Source::new("test", conf);
    paraclick_runtime::Router::build(&src, &common::registry(), &opts)
        .unwrap_or_else(|d| panic!("{}", d[0].message))
}

#[test]
fn plan_changes_under_simulated_threads() {
    // A queue's reset from a Script (a barrier called inside the one OS
    // thread: it must not wait for the other logical threads, which are
    // between passes) ... The reset at 0.2 s runs before the sources'
    // packets of 0.2 s (timers first at an instant): it drops the 400 of
    // 0..0.2 s and the 600 later ones are counted.
    let r = sim_router(
        "a :: RatedSource(RATE 1000, LIMIT 500, STOP false) -> q :: Queue(1000);
         b :: RatedSource(RATE 1000, LIMIT 500, STOP false) -> q;
         q -> u :: Unqueue(ACTIVE false) -> c :: Counter -> Discard;
         StaticThreadSched(a 0, b 1, u 1);
         Script(wait 0.2s, write q.reset, write u.active true, wait 0.5s, stop);",
        2,
    );
    common::run_with_timeout(&r, 30);
    assert_eq!(common::read_u64(&r, "c.count"), 600);
    assert_eq!(r.total_drops(), 400);
    assert_eq!(common::read_u64(&r, "q.length"), 0);

    // ... and task moves from another OS thread while it runs (a barrier
    // waiting for every logical thread to come round).
    let r = sim_router(
        "s :: InfiniteSource(LENGTH 60, BURST 4) -> q :: Queue(64) -> u :: Unqueue -> c :: Counter -> Discard;
         StaticThreadSched(s 0, u 1);",
        2,
    );
    std::thread::scope(|sc| {
        sc.spawn(|| common::run_with_timeout(&r, 30));
        let mut last = 0;
        for th in [0, 1, 0, 1] {
            std::thread::sleep(std::time::Duration::from_millis(30));
            r.move_task("u", 0, th).unwrap();
            let n = common::read_u64(&r, "c.count");
            assert!(n > last, "packets keep flowing ({n})");
            last = n;
        }
        r.stop();
    });
    let sent = common::read_u64(&r, "s.count");
    let got = common::read_u64(&r, "c.count");
    let queued = common::read_u64(&r, "q.length");
    assert_eq!(sent, got + queued + r.total_drops(), "conservation");
}
