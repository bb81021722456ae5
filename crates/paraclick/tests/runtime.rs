//! End-to-end behaviour of the runtime: runs end when the configuration
//! says, packets are conserved, handlers read back, multiple threads give
//! the same totals.

mod common;
use common::*;
use paraclick_runtime::testing::assert_err;

#[test]
fn source_stop_ends_the_run_with_exact_count() {
    let r = router(
        "InfiniteSource(LENGTH 64, LIMIT 12345, STOP true) -> c :: Counter -> Discard",
        1,
    );
    run_with_timeout(&r, 20);
    assert_eq!(read_u64(&r, "c.count"), 12345);
    assert_eq!(read_u64(&r, "c.byte_count"), 12345 * 64);
}

/// in = out + queued + counted drops, through a small queue: a `Queue`,
/// whose full notifier makes the source wait (nothing may drop), the
/// Unqueue wherever the scheduler starts it (beside the source or on
/// another thread); or a `NotifierQueue`, which has none, so a source
/// pushing bursts of 32 into it while the Unqueue takes 8 per run
/// overflows it. That takes the two on one thread, taking turns: on two,
/// how much overflows depends on how fast each thread runs.
fn conservation(threads: usize, burst: usize, queue: &str) {
    let pins = if queue == "Queue" {
        "src 0"
    } else {
        "src 0, uq 0"
    };
    let conf = format!(
        "src :: InfiniteSource(LENGTH 60, LIMIT 200000, BURST {burst}, STOP true)
           -> q :: {queue}(64) -> uq :: Unqueue(BURST 8) -> out :: Counter -> Discard;
         StaticThreadSched({pins});"
    );
    let r = router(&conf, threads);
    run_with_timeout(&r, 30);
    let sent = read_u64(&r, "src.count");
    let out = read_u64(&r, "out.count");
    let queued = read_u64(&r, "q.length");
    let drops = r.total_drops();
    assert_eq!(sent, 200000);
    assert_eq!(drops, read_u64(&r, "q.drops"), "all drops are the queue's");
    assert_eq!(
        sent,
        out + queued + drops,
        "conservation: sent {sent} = out {out} + queued {queued} + drops {drops}"
    );
    assert_eq!(r.total_queued() as u64, queued);
    if queue == "Queue" {
        assert_eq!(drops, 0, "the source waits for room");
    } else {
        assert!(drops > sent / 2, "the queue overflows: {drops} drops");
    }
}

#[test]
fn conservation_one_thread() {
    conservation(1, 1, "Queue");
    conservation(1, 32, "Queue");
    conservation(1, 32, "NotifierQueue");
}

#[test]
fn conservation_two_threads() {
    conservation(2, 1, "Queue");
    conservation(2, 32, "Queue");
    conservation(2, 32, "NotifierQueue");
}

#[test]
fn conservation_eight_threads() {
    conservation(8, 4, "Queue");
    conservation(8, 32, "NotifierQueue");
}

#[test]
fn several_producers_into_one_queue_conserve_packets() {
    // Four sources on up to four threads push into one queue (the ring's
    // multi-producer mode), one Unqueue drains it.
    for threads in [1, 2, 4] {
        let r = router(
            "DriverManager(pause, pause, pause, pause);
             s0 :: InfiniteSource(LIMIT 50000, BURST 7, STOP true) -> q :: Queue(256);
             s1 :: InfiniteSource(LIMIT 50000, BURST 3, STOP true) -> q;
             s2 :: InfiniteSource(LIMIT 50000, BURST 16, STOP true) -> q;
             s3 :: InfiniteSource(LIMIT 50000, BURST 1, STOP true) -> q;
             q -> Unqueue -> out :: Counter -> Discard;",
            threads,
        );
        run_with_timeout(&r, 60);
        let sent: u64 = (0..4).map(|i| read_u64(&r, &format!("s{i}.count"))).sum();
        assert_eq!(sent, 200000, "{threads} threads");
        let out = read_u64(&r, "out.count");
        let queued = read_u64(&r, "q.length");
        assert_eq!(sent, out + queued + r.total_drops(), "{threads} threads");
    }
}

#[test]
fn handlers_write_and_read() {
    let r = router(
        // A SimpleQueue: no full notifier, so the source does not wait for
        // room that never comes (a Queue would pause it, as Click's does).
        "src :: InfiniteSource(LIMIT 10, STOP true) -> q :: SimpleQueue(5) -> d :: Discard(ACTIVE false)",
        1,
    );
    run_with_timeout(&r, 20);
    assert_eq!(read_u64(&r, "q.length"), 5);
    assert_eq!(read_u64(&r, "q.drops"), 5);
    assert_eq!(read_u64(&r, "q.capacity"), 5);
    assert_eq!(r.read_handler("q.class").unwrap(), "SimpleQueue");
    assert_eq!(r.read_handler("q.config").unwrap(), "5");
    assert_eq!(r.read_handler("d.active").unwrap(), "false");
    r.write_handler("q.reset", "").unwrap();
    assert_eq!(read_u64(&r, "q.length"), 0);
    assert_err(r.read_handler("q.nonesuch"), "no read handler 'q.nonesuch'");
    assert_err(r.read_handler("nobody.count"), "no element named 'nobody'");
    assert_err(
        r.write_handler("q.length", "3"),
        "no write handler 'q.length'",
    );
    let ports = r.read_handler("q.ports").unwrap();
    assert_eq!(ports, "1 input\npush\n1 output\npull\n");
}

#[test]
fn same_totals_on_one_to_eight_threads() {
    // A flow split: two sources, two queues, two Unqueues, per-path counts.
    let conf = "DriverManager(pause, pause);
        a :: InfiniteSource(LIMIT 30000, BURST 4, STOP true) -> qa :: Queue(100000) -> Unqueue -> ca :: Counter -> Discard;
        b :: InfiniteSource(LIMIT 20000, BURST 5, STOP true) -> qb :: Queue(100000) -> Unqueue -> cb :: Counter -> Discard;";
    for threads in [1, 2, 4, 8] {
        let r = router(conf, threads);
        run_with_timeout(&r, 60);
        let (ca, qa) = (read_u64(&r, "ca.count"), read_u64(&r, "qa.length"));
        let (cb, qb) = (read_u64(&r, "cb.count"), read_u64(&r, "qb.length"));
        assert_eq!(ca + qa, 30000, "{threads} threads");
        assert_eq!(cb + qb, 20000, "{threads} threads");
        assert_eq!(r.total_drops(), 0);
    }
}

#[test]
fn pool_buffers_all_come_home() {
    // Packets cross threads through the queue and are freed on the other
    // thread; after the run every buffer is accounted for: those still
    // queued, and none else. Emptying the queue returns them all.
    for threads in [1, 2] {
        let r = router(
            "src :: InfiniteSource(LIMIT 100000, BURST 16, STOP true) -> q :: Queue(1000) -> uq :: Unqueue -> Discard;
             StaticThreadSched(src 0, uq 1);",
            threads,
        );
        run_with_timeout(&r, 30);
        let queued = r.total_queued();
        assert!(r.pool_outstanding() >= queued);
        r.write_handler("q.reset", "").unwrap();
        paraclick_packet::pool::flush_remote();
        assert_eq!(r.pool_outstanding(), 0, "{threads} threads: leaked buffers");
    }
}

#[test]
fn check_opens_no_device_and_writes_no_file() {
    // `paraclick check` looks for errors only: the outputs of an earlier
    // run stay as they are, and no device or tap is opened or created.
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("earlier.pcap");
    let summary = dir.path().join("earlier.txt");
    std::fs::write(&pcap, b"an earlier capture").unwrap();
    std::fs::write(&summary, b"an earlier summary").unwrap();
    let conf = dir.path().join("c.click");
    std::fs::write(
        &conf,
        format!(
            "FromDevice(pcknodev0) -> ToDump({}) ;
             InfiniteSource(LIMIT 1) -> ToIPSummaryDump({}) ;
             InfiniteSource(LIMIT 1) -> Queue -> ToDevice(pcknodev1) ;
             FromHost(pckchk0, 10.99.0.1/24) -> ToHost(pckchk0) ;",
            pcap.display(),
            summary.display()
        ),
    )
    .unwrap();
    let out = paraclick(&["check", conf.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&pcap).unwrap(), b"an earlier capture");
    assert_eq!(std::fs::read(&summary).unwrap(), b"an earlier summary");
    assert!(!std::path::Path::new("/sys/class/net/pckchk0").exists());

    // Errors found while initializing are still reported.
    std::fs::write(&conf, "InfiniteSource(LIMIT 1) -> ToHost(pckchk1) ;").unwrap();
    let out = paraclick(&["check", conf.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no FromHost(pckchk1, ...)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
