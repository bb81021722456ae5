//! The multicore runtime: ring modes from the thread plan, task migration
//! while packets flow, adaptive rebalancing, per-flow order on 1-8 threads.
//!
//! Every test here runs threads against the clock or a rate: each holds
//! `one_at_a_time()` so that two never share the machine's cores.

mod common;
use common::*;
use paraclick_packet::Packet;
use paraclick_runtime::testing::TestSink;
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount, Registry, Router,
};
use std::sync::atomic::{AtomicU64, Ordering};

fn modes(r: &Router) -> Vec<(String, bool, bool)> {
    r.ring_modes()
}

#[test]
fn rings_are_single_sided_when_one_thread_pushes_and_one_pulls() {
    let _g = one_at_a_time();
    let conf =
        "src :: InfiniteSource(LIMIT 1000, STOP true) -> q :: Queue -> uq :: Unqueue -> Discard;
                StaticThreadSched(src 0, uq 1);";
    let r = router(conf, 2);
    assert_eq!(modes(&r), vec![("q".to_string(), false, false)]);
    assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
    run_with_timeout(&r, 20);
    assert_eq!(read_u64(&r, "src.count"), 1000);
}

#[test]
fn rings_take_cas_on_the_side_several_threads_use() {
    let _g = one_at_a_time();
    let conf = "DriverManager(pause, pause);
                a :: InfiniteSource(LIMIT 1000, STOP true) -> q :: Queue;
                b :: InfiniteSource(LIMIT 1000, STOP true) -> q;
                q -> uq :: Unqueue -> Discard;
                StaticThreadSched(a 0, b 1, uq 1);";
    let r = router(conf, 2);
    assert_eq!(modes(&r), vec![("q".to_string(), true, false)]);
    // All on one thread: single on both sides.
    let r1 = router(conf, 1);
    assert_eq!(modes(&r1), vec![("q".to_string(), false, false)]);
}

#[test]
fn moving_tasks_rechooses_ring_modes() {
    let _g = one_at_a_time();
    let conf = "DriverManager(pause, pause);
                a :: InfiniteSource(LIMIT 1000, STOP true) -> q :: Queue;
                b :: InfiniteSource(LIMIT 1000, STOP true) -> q;
                q -> uq :: Unqueue -> Discard;";
    let r = router(conf, 2);
    r.move_task("a", 0, 0).unwrap();
    r.move_task("b", 0, 0).unwrap();
    r.move_task("uq", 0, 1).unwrap();
    assert_eq!(modes(&r), vec![("q".to_string(), false, false)]);
    assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
    r.move_task("uq", 0, 0).unwrap();
    assert!(r.crossing_queues().is_empty(), "all on thread 0");
    r.move_task("uq", 0, 1).unwrap();
    r.move_task("b", 0, 1).unwrap();
    assert_eq!(modes(&r), vec![("q".to_string(), true, false)]);
    r.move_task("b", 0, 0).unwrap();
    assert_eq!(modes(&r), vec![("q".to_string(), false, false)]);
}

/// Runs `conf` (which must stop by itself) and checks that the five
/// packets `src` sends all reached `c` through queue `q` while it ran.
fn staged_packets_arrive(conf: &str) {
    let r = router(conf, 2);
    run_with_timeout(&r, 20);
    assert_eq!(read_u64(&r, "src.count"), 5);
    // Staged packets left at the end would be put in the queue when the
    // producer thread exits: the consumer must have had them before.
    assert_eq!(read_u64(&r, "q.length"), 0, "packets left staged");
    assert_eq!(read_u64(&r, "c.count"), 5);
}

#[test]
fn a_producer_publishes_what_it_staged_when_it_goes_idle() {
    let _g = one_at_a_time();
    // The consumer is on another thread, so the source's thread gathers
    // packets before publishing them; after five packets it has nothing
    // else to do and must publish them then, not at the end of the run.
    staged_packets_arrive(
        "src :: InfiniteSource(LIMIT 5, STOP false) -> q :: Queue -> uq :: Unqueue -> c :: Counter -> Discard;
         StaticThreadSched(src 0, uq 1);
         DriverManager(wait 300ms, stop);",
    );
}

#[test]
fn a_busy_producer_publishes_what_it_staged_within_a_few_passes() {
    let _g = one_at_a_time();
    // Here the source's thread never runs out of work (another source
    // keeps it busy), so publication must not wait for idleness either.
    staged_packets_arrive(
        "src :: InfiniteSource(LIMIT 5, STOP false) -> q :: Queue -> uq :: Unqueue -> c :: Counter -> Discard;
         busy :: InfiniteSource(STOP false) -> Discard;
         StaticThreadSched(src 0, busy 0, uq 1);
         DriverManager(wait 300ms, stop);",
    );
}

#[test]
fn a_crossing_queue_smaller_than_a_stage_keeps_the_first_packets_and_counts_the_rest() {
    let _g = one_at_a_time();
    // A BURST 1 source on thread 0 stages its packets for a queue of 4
    // that nobody pulls (the Unqueue is inactive, on thread 1), so the
    // stage's limit comes from a ring with little or no room: the first 4
    // packets are queued, the other 6 dropped and counted, none lost.
    let conf = "src :: InfiniteSource(LIMIT 10, BURST 1, STOP false) -> q :: SimpleQueue(4)
                  -> uq :: Unqueue(ACTIVE false) -> Discard;
                StaticThreadSched(src 0, uq 1);
                DriverManager(wait 200ms, stop);";
    let r = router(conf, 2);
    assert_eq!(r.crossing_queues(), vec!["q".to_string()]);
    run_with_timeout(&r, 20);
    assert_eq!(read_u64(&r, "src.count"), 10);
    assert_eq!(read_u64(&r, "q.length"), 4);
    assert_eq!(read_u64(&r, "q.drops"), 6);
    assert_eq!(r.total_queued() as u64 + r.total_drops(), 10);
}

/// Runs `r` while a mover calls `mv(i)` for i = 0, 1, ... every
/// millisecond, sending its traffic in `rounds` rounds of `round` packets:
/// the sources `srcs` (STOP false, each with a LIMIT) send a round, and
/// the next starts (their `reset`) once `out.count` has every packet of
/// the rounds so far and a task has moved since the last round began.
///
/// So no more than a round's packets are out at once. With a round
/// smaller than one thread's packet pool (8,192) and than the queues,
/// however little CPU a consumer gets, no source waits for buffers or
/// room, and a single drop is a lost packet. (Sent all at once, the
/// packets were held back by the pools, not the queues, and a consumer
/// starved for a second on a loaded machine made the sources drop what
/// they could not make, counted as `no buffer`: 1 failure in 300 runs at
/// load 32.) Each wait is bounded by a generous 60 s: a lost packet never
/// arrives.
fn run_rounds_while_moving(
    r: &Router,
    srcs: &[&str],
    round: u64,
    rounds: u64,
    mv: impl Fn(usize) + Sync,
) {
    let done = std::sync::atomic::AtomicBool::new(false);
    let moves = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0usize;
            while !done.load(Ordering::Relaxed) {
                mv(i);
                moves.fetch_add(1, Ordering::Relaxed);
                i += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        s.spawn(|| {
            let wait = |what: &str, until: &dyn Fn() -> bool| {
                let t0 = std::time::Instant::now();
                while !until() {
                    if t0.elapsed() > std::time::Duration::from_secs(60) {
                        done.store(true, Ordering::Relaxed);
                        r.stop();
                        panic!("waited 60 s for {what}:\n{}", r.thread_report());
                    }
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            };
            for k in 1..=rounds {
                wait(&format!("round {k}'s packets"), &|| {
                    read_u64(r, "out.count") >= k * round
                });
                if k == rounds {
                    break;
                }
                let m = moves.load(Ordering::Relaxed);
                wait("a move", &|| moves.load(Ordering::Relaxed) > m);
                for src in srcs {
                    r.write_handler(&format!("{src}.reset"), "").unwrap();
                }
            }
            done.store(true, Ordering::Relaxed);
            r.stop();
        });
        run_with_timeout(r, 600);
    });
}

#[test]
fn staged_packets_survive_migrations_with_many_producers_on_8_threads() {
    let _g = one_at_a_time();
    // Four BURST 1 sources (so every packet is staged) on 8 threads of a
    // 2-core machine push into one queue; the sources move between threads
    // every millisecond, so queues switch between single- and
    // multi-producer rings and between staging and not while producers
    // hold staged packets. Every packet must arrive exactly once, and
    // every buffer come home. 100 rounds of 8,000 packets (see
    // `run_rounds_while_moving`).
    const ROUNDS: u64 = 100;
    let conf = "s0 :: InfiniteSource(LIMIT 2000, BURST 1, STOP false) -> q :: Queue(100000);
        s1 :: InfiniteSource(LIMIT 2000, BURST 1, STOP false) -> q;
        s2 :: InfiniteSource(LIMIT 2000, BURST 1, STOP false) -> q;
        s3 :: InfiniteSource(LIMIT 2000, BURST 1, STOP false) -> q;
        q -> uq :: Unqueue -> out :: Counter -> Discard;";
    let r = router(conf, 8);
    r.move_task("uq", 0, 7).unwrap();
    let srcs = ["s0", "s1", "s2", "s3"];
    run_rounds_while_moving(&r, &srcs, 8000, ROUNDS, |i| {
        // Sometimes onto the consumer's thread (no longer crossing for
        // that producer), usually elsewhere.
        r.move_task(srcs[i % 4], 0, (i * 5 + 1) % 8).unwrap();
    });
    let out = read_u64(&r, "out.count");
    let queued = read_u64(&r, "q.length");
    let report = r.thread_report();
    let reasons: Vec<_> = r
        .drops()
        .into_iter()
        .map(|(n, d)| (r.drop_reasons(&n), n, d))
        .collect();
    assert_eq!(r.total_drops(), 0, "{reasons:?}\n{report}");
    assert_eq!(out + queued, ROUNDS * 8000, "{report}");
    assert_eq!(
        report.matches(" 0 migrations").count(),
        0,
        "every task moved:\n{report}"
    );
    r.write_handler("q.reset", "").unwrap();
    paraclick_packet::pool::flush_remote();
    assert_eq!(r.pool_outstanding(), 0, "leaked buffers");
}

/// conf/marking-pipeline.click at -j 2 with its last Unqueue inactive, as
/// if its thread got no CPU: q2 fills and drops, as in Click (an Unqueue
/// pushes whether there is room or not), and every packet the source made
/// is delivered, still queued, or a counted drop for a full queue.
#[test]
fn marking_pipeline_counts_what_a_starved_stage_does_not_deliver() {
    let _g = one_at_a_time();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../conf/marking-pipeline.click"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let r = router(&text, 2);
    r.write_handler("u2.active", "false").unwrap();
    run_with_timeout(&r, 60);
    let sent = read_u64(&r, "src.count");
    assert_eq!(sent, 1_000_000);
    let q_drops = read_u64(&r, "q1.drops") + read_u64(&r, "q2.drops");
    let queued = read_u64(&r, "q1.length") + read_u64(&r, "q2.length");
    let out = read_u64(&r, "out.count");
    assert_eq!(out, 0, "u2 pulled nothing");
    assert!(read_u64(&r, "q2.drops") > 0, "q2 filled");
    assert_eq!(r.total_drops(), q_drops, "only the queues dropped");
    for (n, _) in r.drops() {
        let reasons = r.drop_reasons(&n).unwrap();
        assert!(
            reasons.iter().all(|&(why, _)| why == "full"),
            "{n}: {reasons:?}"
        );
    }
    assert_eq!(sent, out + q_drops + queued, "every packet accounted for");
}

#[test]
fn migration_while_packets_flow_conserves_every_packet() {
    let _g = one_at_a_time();
    // Tasks are moved back and forth between threads every millisecond
    // while packets cross queues; nothing may be lost or duplicated.
    // 100 rounds of 6,000 packets (see `run_rounds_while_moving`): the
    // queues and pools have room for any backlog (Unqueue does not wait
    // for room downstream, and a migrating source may overshoot a full
    // queue by a stage, counted), so a single drop is a lost packet.
    const ROUNDS: u64 = 100;
    let conf = "a :: InfiniteSource(LIMIT 3000, BURST 4, STOP false) -> q :: Queue(100000) -> u1 :: Unqueue(BURST 8) -> q2 :: Queue(100000) -> u2 :: Unqueue -> out :: Counter -> Discard;
        b :: InfiniteSource(LIMIT 3000, BURST 1, STOP false) -> q;";
    let r = router(conf, 3);
    let names = ["a", "b", "u1", "u2"];
    run_rounds_while_moving(&r, &["a", "b"], 6000, ROUNDS, |i| {
        r.move_task(names[i % names.len()], 0, (i / names.len()) % 3)
            .unwrap();
    });
    // The last round's counts: every round sent all it could.
    let sent = read_u64(&r, "a.count") + read_u64(&r, "b.count");
    assert_eq!(sent, 6000);
    let out = read_u64(&r, "out.count");
    let queued = read_u64(&r, "q.length") + read_u64(&r, "q2.length");
    let report = r.thread_report();
    let reasons: Vec<_> = r
        .drops()
        .into_iter()
        .map(|(n, d)| (r.drop_reasons(&n), n, d))
        .collect();
    assert_eq!(r.total_drops(), 0, "{reasons:?}\n{report}");
    assert_eq!(ROUNDS * 6000, out + queued, "{report}");
    // Every task line says "N migrations"; the mover must have moved.
    let migrations: u64 = report
        .lines()
        .filter_map(|l| l.split(", ").find_map(|f| f.strip_suffix(" migrations")))
        .map(|n| n.trim().parse::<u64>().unwrap())
        .sum();
    assert!(migrations >= 4, "tasks were moved:\n{report}");
}

#[test]
fn adaptive_scheduler_spreads_a_crowded_thread() {
    let _g = one_at_a_time();
    // Two busy independent pipelines start crowded on thread 0; the
    // adaptive scheduler must move one of them to thread 1.
    let conf = "s :: Script(wait 0.6s, stop);
        a :: InfiniteSource(BURST 8) -> qa :: Queue -> ua :: Unqueue -> Discard;
        b :: InfiniteSource(BURST 8) -> qb :: Queue -> ub :: Unqueue -> Discard;";
    let r = router(conf, 2);
    for n in ["a", "ua", "b", "ub"] {
        r.move_task(n, 0, 0).unwrap();
    }
    run_with_timeout(&r, 30);
    let threads: std::collections::BTreeSet<usize> =
        r.task_threads().into_iter().map(|(_, _, t)| t).collect();
    assert_eq!(
        threads.len(),
        2,
        "tasks spread over both threads:\n{}",
        r.thread_report()
    );
    // Which tasks end up together depends on the measured loads; the
    // grouping rule itself is tested exactly in the scheduler unit tests.
}

/// A source of numbered packets in `flows` flows: payload bytes 0..4 are
/// the flow, 4..12 the sequence number within the flow.
struct SeqSource {
    flows: u32,
    limit: u64,
    next: AtomicU64,
    count: PerThreadCount,
}

impl Element for SeqSource {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("count", |e, _| e.count.get().to_string())];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.add_task();
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _t: usize) -> bool {
        let i = self.next.load(Ordering::Relaxed);
        if i >= self.limit {
            cx.request_stop();
            return false;
        }
        let n = (self.limit - i).min(16);
        let mut b = Batch::new();
        for k in i..i + n {
            let flow = (k % self.flows as u64) as u32;
            let seq = k / self.flows as u64;
            let mut d = vec![0u8; 64];
            d[..4].copy_from_slice(&flow.to_be_bytes());
            d[4..12].copy_from_slice(&seq.to_be_bytes());
            b.push(Packet::from_slice(&d).expect("pool has room"));
        }
        self.next.store(i + n, Ordering::Relaxed);
        self.count.add(cx.thread(), n);
        cx.push(0, b);
        true
    }
}

fn make_seq(cx: &mut ConfigCx<'_>) -> Result<SeqSource, String> {
    let mut a = cx.args();
    let flows = a.read_mp::<u32>("FLOWS");
    let limit = a.read_mp::<u64>("LIMIT");
    a.complete()?;
    Ok(SeqSource {
        flows,
        limit,
        next: AtomicU64::new(0),
        count: PerThreadCount::new(cx.nthreads),
    })
}

#[test]
fn same_per_flow_output_in_order_on_1_2_4_8_threads() {
    let _g = one_at_a_time();
    // A flow split: HashSwitch on the flow id into two queue/Unqueue
    // stages that may run on different threads, merging into one sink.
    // The sink keeps every packet: give the pools room for all of them.
    paraclick_packet::pool::set_default_capacity(65536);
    let mut reg: Registry = registry();
    reg.register(ClassSpec::element("SeqSource", "0/1", "h", make_seq));
    paraclick_runtime::testing::register(&mut reg);
    let conf = "src :: SeqSource(16, 40000) -> hs :: HashSwitch(0, 4);
        hs[0] -> q0 :: Queue(100000) -> u0 :: Unqueue(BURST 7) -> sink :: TestSink;
        hs[1] -> q1 :: Queue(100000) -> u1 :: Unqueue(BURST 5) -> sink;";
    let mut reference: Option<Vec<Vec<u64>>> = None;
    for threads in [1, 2, 4, 8] {
        let r = Router::from_str(conf, &reg, threads).unwrap();
        run_with_timeout(&r, 60);
        // Drain what is still queued so every packet is compared.
        for u in ["u0", "u1"] {
            r.write_handler(&format!("{u}.active"), "false").unwrap();
        }
        let mut got: Vec<Packet> = r.element::<TestSink>("sink").unwrap().take();
        for q in ["q0", "q1"] {
            while let Some(b) = r.pull_from(q, 0, 1000).unwrap() {
                got.extend(b);
            }
        }
        let mut per_flow: Vec<Vec<u64>> = vec![Vec::new(); 16];
        let mut in_sink_order: Vec<Vec<u64>> = vec![Vec::new(); 16];
        for p in &got {
            let d = p.data();
            let flow = u32::from_be_bytes(d[..4].try_into().unwrap()) as usize;
            let seq = u64::from_be_bytes(d[4..12].try_into().unwrap());
            in_sink_order[flow].push(seq);
            per_flow[flow].push(seq);
        }
        assert_eq!(got.len(), 40000, "{threads} threads");
        for (f, seqs) in in_sink_order.iter().enumerate() {
            assert!(
                seqs.windows(2).all(|w| w[0] < w[1]),
                "flow {f} out of order on {threads} threads"
            );
        }
        match &reference {
            None => reference = Some(per_flow),
            Some(r0) => assert_eq!(&per_flow, r0, "{threads} threads"),
        }
    }
}

/// SMP Click's Figure 16 (conf/replicated-qos.click), overloaded: each
/// replica's puller serves 8,000 packets a second while 15,000 arrive, a
/// third of them high priority. The queues have no full notifier, so the
/// source never waits: what the puller does not take is dropped.
const OVERLOADED_QOS: &str = "
elementclass QoSReplica { $rate |
  input -> cl :: IPClassifier(dst port < 20000, dst port < 45000, -);
  cl[0] -> hi_in :: Counter -> hi :: NotifierQueue(64);
  cl[1] -> med_in :: Counter -> med :: NotifierQueue(64);
  cl[2] -> lo_in :: Counter -> lo :: NotifierQueue(64);
  ps :: SCHED;
  hi -> [0]ps; med -> [1]ps; lo -> [2]ps;
  ps -> uq :: RatedUnqueue($rate) -> out :: Counter -> output;
}
src :: FastUDPFlows(30000, 30000, 64, 00:00:c0:11:11:11, 1.0.0.2,
                    00:00:c0:ae:67:ef, 2.0.0.2, 64, 1000, STOP true)
  -> hs :: HashSwitch(34, 4);
hs[0] -> r0 :: QoSReplica(8000) -> Discard;
hs[1] -> r1 :: QoSReplica(8000) -> Discard;
";

/// Runs [`OVERLOADED_QOS`] with `sched` as each replica's scheduler, in
/// simulated time (the rates are exact and every run the same) on
/// `threads` threads, each replica's puller on its own thread when there
/// are two. Per replica: (arrived, dropped) for hi, med, lo.
fn overloaded_qos(sched: &str, threads: usize) -> Vec<[(u64, u64); 3]> {
    let mut text = OVERLOADED_QOS.replace("SCHED", sched);
    if threads > 1 {
        text.push_str("StaticThreadSched(r0/uq 0, r1/uq 1);\n");
    }
    let src = paraclick_lang::Source {
        name: "overloaded-qos".into(),
        text,
    };
    let opts = paraclick_runtime::BuildOptions {
        threads,
        simtime: true,
        pin: false,
        ..Default::default()
    };
    let r = Router::build(&src, &registry(), &opts).unwrap_or_else(|d| {
        panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    run_with_timeout(&r, 60);
    let mut out = Vec::new();
    let mut queued = 0;
    let mut served = 0;
    for rep in ["r0", "r1"] {
        let class = |c: &str| {
            (
                read_u64(&r, &format!("{rep}/{c}_in.count")),
                read_u64(&r, &format!("{rep}/{c}.drops")),
            )
        };
        out.push([class("hi"), class("med"), class("lo")]);
        for q in ["hi", "med", "lo"] {
            queued += read_u64(&r, &format!("{rep}/{q}.length"));
        }
        served += read_u64(&r, &format!("{rep}/out.count"));
    }
    assert_eq!(
        read_u64(&r, "src.count"),
        served + queued + r.total_drops(),
        "{threads} threads: conservation"
    );
    out
}

#[test]
fn replicated_qos_keeps_priority_in_every_replica() {
    let _g = one_at_a_time();
    for threads in [1, 2] {
        let reps = overloaded_qos("PrioSched", threads);
        for (k, [hi, med, lo]) in reps.iter().enumerate() {
            let what = format!("{threads} threads, r{k}: hi {hi:?} med {med:?} lo {lo:?}");
            assert!(hi.0 > 3000 && lo.0 > 3000, "both classes arrive: {what}");
            // The high class fits in the puller's rate: it loses nothing.
            assert_eq!(hi.1, 0, "{what}");
            // The low class gets what is left after med: most of it drops.
            assert!(lo.1 * 2 > lo.0, "{what}");
            // Medium is served before low.
            assert!(med.1 * lo.0 < lo.1 * med.0, "{what}");
        }
        // The same on one thread and two: simulated time.
        assert_eq!(reps, overloaded_qos("PrioSched", threads));
    }
    // What the test tells apart: a fair scheduler in PrioSched's place
    // drops high-priority packets.
    let fair = overloaded_qos("RoundRobinSched", 2);
    assert!(fair.iter().all(|[hi, _, _]| hi.1 > 0), "{fair:?}");
}

#[test]
fn queue_reset_from_another_thread_while_traffic_flows_conserves_every_packet() {
    let _g = one_at_a_time();
    // Issue 11: a Script on one thread writes `q.reset` again and again
    // while the queue's single consumer pulls on another. The reset drains
    // as an extra consumer through the runtime's audited path (the ring
    // goes to compare-and-swap first), so no buffer gets two owners: every
    // packet is delivered, queued or counted as dropped, and no buffer is
    // leaked or freed twice. The consumer is slowed (WorkPackage) so the
    // queue holds packets when the resets come.
    for threads in [2, 4] {
        let conf = "src :: InfiniteSource(LIMIT 300000, BURST 8, STOP true)
                -> q :: Queue(1000000) -> uq :: Unqueue(BURST 2) -> WorkPackage(40)
                -> out :: Counter -> Discard;
            s :: Script(TYPE ACTIVE, label l, write q.reset, wait 0.0002, goto l);
            StaticThreadSched(src 0, uq 1);";
        let conf = if threads == 4 {
            conf.replace(
                "StaticThreadSched(src 0, uq 1)",
                "StaticThreadSched(src 2, uq 3)",
            )
        } else {
            conf.to_string()
        };
        let r = router(&conf, threads);
        assert_eq!(modes(&r), vec![("q".to_string(), false, false)]);
        run_with_timeout(&r, 120);
        let sent = read_u64(&r, "src.count");
        let out = read_u64(&r, "out.count");
        let queued = read_u64(&r, "q.length");
        let reset = read_u64(&r, "q.drops");
        assert_eq!(sent, 300000);
        assert!(reset > 0, "{threads} threads: the resets removed packets");
        assert_eq!(
            r.total_drops(),
            reset,
            "{threads} threads: drops are the resets'"
        );
        assert_eq!(
            out + queued + reset,
            sent,
            "{threads} threads: conservation"
        );
        // The plan's single-sided modes are back after the resets.
        assert_eq!(modes(&r), vec![("q".to_string(), false, false)]);
        r.write_handler("q.reset", "").unwrap();
        paraclick_packet::pool::flush_remote();
        assert_eq!(r.pool_outstanding(), 0, "{threads} threads: leaked buffers");
    }
}

/// The CPUs each `paraclick-N` worker of process `pid` may run on.
fn worker_cpus(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("")
            .trim()
            .to_string();
        // Workers are paraclick-N; other threads (the signal watcher, the
        // web view ...) are not pinned.
        let worker = comm
            .trim()
            .strip_prefix("paraclick-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if worker {
            out.push((comm.trim().to_string(), cpus));
        }
    }
    out.sort();
    out
}

/// Runs `taskset -c CPUS paraclick ARGS` on an endless configuration until
/// its workers exist, and returns their CPU lists.
fn pinned_workers(cpus: &str, args: &[&str], nworkers: usize) -> Vec<(String, String)> {
    // Endless but nearly idle (the workers park between packets), so the
    // test does not take CPUs from the tests running beside it.
    let conf = "TimedSource(INTERVAL 0.05) -> Queue -> Unqueue -> Discard;";
    let mut child = std::process::Command::new("taskset")
        .args(["-c", cpus, env!("CARGO_BIN_EXE_paraclick")])
        .args(args)
        .args(["-e", conf])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("taskset (util-linux) must be installed for this test");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = Vec::new();
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        seen = worker_cpus(child.id());
        // Workers pin themselves as they start: wait until every one
        // shows a list that is no longer the process's whole set, or the
        // run has had time to settle.
        if seen.len() == nworkers {
            std::thread::sleep(std::time::Duration::from_millis(300));
            seen = worker_cpus(child.id());
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

#[test]
fn workers_are_pinned_inside_the_cpus_the_process_may_use() {
    let _g = one_at_a_time();
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if ncpu < 2 {
        // One CPU: every list is that CPU; nothing can go outside it.
        paraclick_runtime::testing::skip("pinning inside an allowed set needs two CPUs");
        return;
    }
    let last = (ncpu - 1).to_string();
    // Allowed only the last CPU: both workers stay on it (pinning by
    // index would put worker 0 on CPU 0, outside the allowed set).
    let w = pinned_workers(&last, &["-j", "2"], 2);
    assert_eq!(w.len(), 2, "{w:?}");
    for (name, cpus) in &w {
        assert_eq!(cpus, &last, "{name} left the allowed CPU: {w:?}");
    }
    // Two allowed CPUs, two workers: one each.
    let both = format!("0,{last}");
    let w = pinned_workers(&both, &["-j", "2"], 2);
    assert_eq!(
        w.iter().map(|(_, c)| c.as_str()).collect::<Vec<_>>(),
        vec!["0", last.as_str()],
        "{w:?}"
    );
    // One worker is left to the kernel unless --pin asks.
    let w = pinned_workers(&both, &["-j", "1"], 1);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_ne!(w[0].1, "0", "a lone worker was pinned: {w:?}");
    let w = pinned_workers(&both, &["-j", "1", "--pin"], 1);
    assert_eq!(w[0].1, "0", "--pin did not pin: {w:?}");
    // More workers than CPUs are left to the kernel too (two pinned to
    // one CPU could not move off it however busy it got), unless --pin
    // asks: then round robin over the allowed CPUs.
    let w = pinned_workers(&both, &["-j", "3"], 3);
    assert_eq!(w.len(), 3, "{w:?}");
    for (name, cpus) in &w {
        assert!(
            cpus != "0" && cpus != &last,
            "{name} was pinned though 3 workers share 2 CPUs: {w:?}"
        );
    }
    let w = pinned_workers(&both, &["-j", "3", "--pin"], 3);
    assert_eq!(
        w.iter().map(|(_, c)| c.as_str()).collect::<Vec<_>>(),
        vec!["0", last.as_str(), "0"],
        "--pin did not pin round robin: {w:?}"
    );
}

/// Where each task of conf/`file` starts at -j `threads` under `policy`,
/// with `extra` appended to the configuration: (element, thread), sorted.
fn start_placement(
    file: &str,
    extra: &str,
    threads: usize,
    policy: paraclick_runtime::sched::SchedPolicy,
) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(root().join("conf").join(file)).expect("read conf");
    let src = paraclick_lang::Source::new(file, format!("{text}\n{extra}"));
    let opts = paraclick_runtime::BuildOptions {
        threads,
        policy,
        ..paraclick_runtime::BuildOptions::default()
    };
    let r = Router::build(&src, &registry(), &opts).unwrap_or_else(|d| panic!("{d:?}"));
    let mut v: Vec<(String, usize)> = r
        .task_threads()
        .into_iter()
        .map(|(n, _, t)| (n, t))
        .collect();
    v.sort();
    v
}

#[test]
fn the_default_start_keeps_tasks_meeting_at_a_queue_on_one_thread() {
    use paraclick_runtime::sched::SchedPolicy::{Adaptive, Spread};
    let pl = |v: &[(&str, usize)]| -> Vec<(String, usize)> {
        v.iter().map(|&(n, t)| (n.to_string(), t)).collect()
    };
    // qos-bench: the source and the puller meet at three queues. At -j 2
    // the default puts them on one thread (each packet crossing threads
    // cost more than the second core gave: 4.6 against 6.9 Mpps), as the
    // planner's best placement does when a line costs what it costs here
    // in its slow state; `--sched spread` keeps the old round-robin start.
    assert_eq!(
        start_placement("qos-bench.click", "", 2, Adaptive),
        pl(&[("src", 0), ("uq", 0)])
    );
    assert_eq!(
        start_placement("qos-bench.click", "", 2, Spread),
        pl(&[("src", 0), ("uq", 1)])
    );
    // A configuration's own StaticThreadSched is respected, and the tasks
    // it leaves free start with a pinned task they meet at a queue.
    assert_eq!(
        start_placement("qos-bench.click", "StaticThreadSched(uq 1);", 2, Adaptive),
        pl(&[("src", 1), ("uq", 1)])
    );
    assert_eq!(
        start_placement(
            "qos-bench.click",
            "StaticThreadSched(uq 1, src 0);",
            2,
            Adaptive
        ),
        pl(&[("src", 0), ("uq", 1)])
    );
    // Two independent paths: one a thread, each whole.
    let r = router(
        "a :: InfiniteSource -> qa :: Queue -> ua :: Unqueue -> Discard;
         b :: InfiniteSource -> qb :: Queue -> ub :: Unqueue -> Discard;",
        2,
    );
    let mut two: Vec<(String, usize)> = r
        .task_threads()
        .into_iter()
        .map(|(n, _, t)| (n, t))
        .collect();
    two.sort();
    assert_eq!(two, pl(&[("a", 0), ("b", 1), ("ua", 0), ("ub", 1)]));
}

/// The two-queue device routers at -j 2, checked (no device opened), over
/// AF_PACKET and AF_XDP: queue i of both interfaces is a task of thread
/// i, so a packet stays on the thread (and, pinned, the CPU) that read
/// it; and the AF_PACKET queues' fanout group deals by receiving CPU
/// (FANOUT CPU), so CPU i's frames go to queue i (the sockets join in
/// queue order). FANOUT HASH, the default, would deal them by flow, half
/// of them to the other CPU's thread.
#[test]
fn two_queue_device_routers_keep_queue_i_on_thread_i() {
    for file in ["iprouter-veth-2q.click", "iprouter6-veth-2q.click"] {
        for method in ["LINUX", "XDP"] {
            let text = std::fs::read_to_string(root().join("conf").join(file)).expect("read conf");
            let src = paraclick_lang::Source::new(file, text);
            let opts = paraclick_runtime::BuildOptions {
                threads: 2,
                check_only: true,
                defines: vec![
                    ("DEV0".into(), "paraclick-none0".into()),
                    ("DEV1".into(), "paraclick-none1".into()),
                    ("METHOD".into(), method.into()),
                    ("PRIORITY".into(), "false".into()),
                ],
                ..paraclick_runtime::BuildOptions::default()
            };
            let r = Router::build(&src, &registry(), &opts).unwrap_or_else(|d| panic!("{d:?}"));
            let mut devices: Vec<(String, usize)> = r
                .task_threads()
                .into_iter()
                .filter(|(n, _, _)| n.starts_with("in"))
                .map(|(n, _, t)| (n, t))
                .collect();
            devices.sort();
            let want: Vec<(String, usize)> =
                [("in0q0", 0), ("in0q1", 1), ("in1q0", 0), ("in1q1", 1)]
                    .iter()
                    .map(|&(n, t)| (n.to_string(), t))
                    .collect();
            assert_eq!(devices, want, "{file} METHOD {method}");
            for q in ["in0q0", "in0q1", "in1q0", "in1q1"] {
                let config = r.read_handler(&format!("{q}.config")).unwrap();
                assert!(config.contains("FANOUT CPU"), "{file} {q}: {config}");
            }
        }
    }
}
