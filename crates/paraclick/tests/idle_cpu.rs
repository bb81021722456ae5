//! CPU that follows the load: a worker whose only task is a paced source
//! sleeps between its packets instead of polling, and still sends every
//! packet on time; `--busy-poll` keeps the polling mode.
//!
//! The one test of this file reads the process's CPU time (getrusage), so
//! it must stay the only test in this binary: another test's threads
//! would count in it.

mod common;
use common::*;
use std::time::Instant;

/// User plus system CPU seconds used by this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes one rusage struct, which we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut ru), 0);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn a_paced_source_uses_cpu_in_proportion_to_its_rate() {
    paraclick_runtime::sched::set_busy_poll(false);
    // 2000 packets at 1000 a second: two seconds, a packet every
    // millisecond, so the worker is never idle for long.
    let r = router(
        "RatedSource(RATE 1000, LIMIT 2000, STOP true) -> c :: Counter -> Discard",
        1,
    );
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    run_with_timeout(&r, 30);
    let (cpu, wall) = (cpu_seconds() - cpu0, t0.elapsed().as_secs_f64());
    // Every packet, at the rate asked (not slowed down by the sleeps).
    assert_eq!(read_u64(&r, "c.count"), 2000);
    assert!(
        (1.9..4.0).contains(&wall),
        "2000 packets at RATE 1000 took {wall:.3} s"
    );
    // Polling between packets used a whole core (1.0 of the wall time).
    assert!(
        cpu < 0.3 * wall,
        "{cpu:.3} s of CPU in {wall:.3} s at RATE 1000"
    );

    // --busy-poll: the same packets, by polling.
    let out = paraclick(&[
        "--busy-poll",
        "-e",
        "RatedSource(RATE 1000, LIMIT 300, STOP true) -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("300"), "{text}");
}
