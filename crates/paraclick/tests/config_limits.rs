//! Configurations and options that once crashed, truncated or blocked:
//! each must be a clear error (or run), never an abort, a panic, a lost
//! file or a hang. Runs the binary, as an operator would.

mod common;

use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `conf` fails with a message containing `want`, both in `check` and in a
/// run, and nothing aborts or panics.
fn rejected(conf: &str, want: &str) {
    for args in [vec!["check", "-e", conf], vec!["--simtime", "-e", conf]] {
        let o = common::paraclick(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: {t}");
        assert!(
            !t.contains("panicked") && !t.contains("memory allocation"),
            "{args:?}: {t}"
        );
    }
}

#[test]
fn huge_queue_capacities_are_errors() {
    // 10^10 aborted allocating 128 GiB; 2^64-1 was accepted and the first
    // packet panicked indexing the ring.
    for class in [
        "Queue",
        "SimpleQueue",
        "ThreadSafeQueue",
        "FrontDropQueue",
        "CPUQueue",
    ] {
        for cap in ["10000000000", "18446744073709551615"] {
            rejected(
                &format!("InfiniteSource(LIMIT 3, STOP true) -> {class}({cap}) -> Discard"),
                "more than the maximum, 16777216",
            );
        }
    }
    rejected(
        "InfiniteSource(LIMIT 3, STOP true) -> q :: MixedQueue(10000000000) -> Discard; \
         Idle -> [1]q",
        "more than the maximum, 16777216",
    );
}

#[test]
fn huge_packet_sizes_are_errors() {
    rejected(
        "InfiniteSource(LENGTH 10000000000, LIMIT 3, STOP true) -> Discard",
        "LENGTH 10000000000 is more than the maximum",
    );
    rejected(
        "RandomSource(10000000000, LIMIT 3, STOP true) -> Discard",
        "LENGTH 10000000000 is more than the maximum",
    );
    rejected(
        "TimedSource(HEADROOM 18446744073709551615, LIMIT 3, STOP true) -> Discard",
        "HEADROOM 18446744073709551615 is more than the maximum",
    );
    // A time too long for a Duration panicked in the argument parser.
    rejected(
        "InfiniteSource(LIMIT 3, STOP true) -> Queue -> DelayUnqueue(18446744073709551615) \
         -> Discard",
        "DELAY",
    );
}

#[test]
fn huge_thread_counts_are_errors() {
    for j in ["10000000000", "18446744073709551615", "0"] {
        let o = common::paraclick(&["--simtime", "-j", j, "-e", "Idle -> Discard"]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "-j {j}: {t}");
        assert!(t.contains("thread count from 1 to 1024"), "-j {j}: {t}");
    }
    // A huge --pool is a cap on lazy growth, not an allocation.
    let o = common::paraclick(&[
        "--simtime",
        "--pool",
        "18446744073709551615",
        "-e",
        "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains('3'));
}
