//! Slices on one substrate, end to end in simulated time: handlers read
//! by prefix, bandwidth held to the provisioned rate, a failing slice
//! stopped while the others forward, slices added and removed without a
//! packet of another lost, and bad changes refused with everything left
//! running.

use paraclick_runtime::control::{session_over_bytes, Backend, ControlConfig};
use paraclick_runtime::{BuildOptions, ClassSpec, Cx, Element, Registry};
use paraclick_substrate::Substrate;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Pushes packets on, and panics at its `after`th packet (a bug in an
/// element, made to happen).
struct Boom {
    after: u64,
    seen: AtomicU64,
}

impl Element for Boom {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, b: paraclick_runtime::Batch) {
        let n = self.seen.fetch_add(b.len() as u64, Ordering::Relaxed) + b.len() as u64;
        if n >= self.after {
            panic!("Boom: made to fail after {} packets", self.after);
        }
        cx.push(0, b);
    }
}

fn registry() -> Arc<Registry> {
    let mut reg = paraclick_elements::registry();
    reg.register(ClassSpec::element("Boom", "1/1", "h", |cx| {
        let mut a = cx.args();
        let after = a.read_mp::<u64>("AFTER");
        a.complete()?;
        Ok(Boom {
            after,
            seen: AtomicU64::new(0),
        })
    }));
    Arc::new(reg)
}

/// A 100-byte frame tagged with VLAN `vid`.
fn frame(vid: u16) -> String {
    let mut b = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00];
    b.extend_from_slice(&vid.to_be_bytes());
    b.extend_from_slice(&[0x08, 0x00]);
    b.resize(100, 0x55);
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("\\<{}>", hex.join(""))
}

/// A slice that forwards what it receives on metalink `m` back out of it.
fn reflector(m: &str, extra: &str) -> String {
    format!("FromDevice({m}) -> c :: Counter {extra}-> q :: Queue(100) -> ToDevice({m});")
}

/// Two interfaces; slice `a` (VLAN 10 on p0, 50 kBps, offered `a_pps`
/// 100-byte frames a second), slice `b` (VLAN 20 on p1, 100 kBps,
/// offered 10000 frames a second: 10x its rate), `b`'s source stopping
/// the run after `secs`.
fn two_slices(a_pps: u32, secs: u32, b_extra: &str) -> String {
    format!(
        r#"
cores = 1
[interface.p0]
rate = "1MBps"
input = 'RatedSource(DATA "{fa}", RATE {a_pps})'
output = "Discard"
[interface.p1]
rate = "1MBps"
input = 'RatedSource(DATA "{fb}", RATE 10000, LIMIT {lim}, STOP true)'
output = "Discard"

[slice.a]
text = "{ta}"
[slice.a.metalink.m]
interface = "p0"
vlan = 10
rate = "50kBps"

[slice.b]
text = "{tb}"
[slice.b.metalink.m]
interface = "p1"
vlan = 20
rate = "100kBps"
"#,
        fa = frame(10),
        fb = frame(20),
        lim = 10000 * secs,
        ta = reflector("m", ""),
        tb = reflector("m", b_extra),
    )
}

fn simopts() -> BuildOptions {
    BuildOptions {
        simtime: true,
        pin: false,
        ..BuildOptions::default()
    }
}

fn build(text: &str, allow: bool) -> Arc<Substrate> {
    Substrate::build(
        "t.toml",
        text,
        std::path::Path::new("."),
        registry(),
        &simopts(),
        allow,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn num(sub: &Substrate, h: &str) -> u64 {
    let v = sub
        .router()
        .read_handler(h)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim().parse().unwrap_or_else(|_| panic!("{h}: {v}"))
}

/// Runs the substrate on another thread until it stops (a watchdog
/// fails the test after a minute).
fn run(sub: &Arc<Substrate>) {
    let h = sub.hot().clone();
    let t = std::thread::spawn(move || h.run());
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while !t.is_finished() {
        assert!(
            std::time::Instant::now() < until,
            "the substrate did not stop"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    t.join().unwrap();
}

#[test]
fn a_slice_sending_ten_times_its_rate_gets_its_rate() {
    let sub = build(&two_slices(200, 2, ""), false);
    run(&sub);
    let secs = sub.router().now_ns() as f64 / 1e9;
    assert!((secs - 2.0).abs() < 0.01, "ran {secs} s");
    // b: 100 kBps provisioned, 1 MBps offered.
    let sent = num(&sub, "b/@m/tx.byte_count") as f64;
    let rate = sent / secs;
    assert!(
        (rate - 100e3).abs() <= 0.02 * 100e3,
        "b's rate {rate} Bps, provisioned 100000"
    );
    // Its excess is dropped in its own queue, counted.
    let offered = num(&sub, "b/@m/rx.count");
    let out = num(&sub, "b/@m/tx.count");
    let qdrops = num(&sub, "b/q.drops");
    let held = num(&sub, "b/q.length") + num(&sub, "b/@m/in.length");
    assert!(qdrops > offered * 8 / 10, "{qdrops} of {offered} dropped");
    assert_eq!(offered, out + qdrops + held + num(&sub, "b/@m/in.drops"));
    // a, within its rate, loses nothing.
    assert_eq!(num(&sub, "a/q.drops") + num(&sub, "a/@m/in.drops"), 0);
    assert!(num(&sub, "a/c.count") >= 390, "{}", num(&sub, "a/c.count"));
    let report = sub.report();
    assert!(report.contains("slice b state running"), "{report}");
    assert!(report.contains("metalink m on p1 vlan 20"), "{report}");
}

/// Without the queue manager (a measurement baseline) nothing holds a
/// metalink to its rate: b's flood leaves at the link's rate, through
/// the interface's one shared FIFO.
#[test]
fn without_the_queue_manager_a_slice_is_not_held_to_its_rate() {
    let text = format!("queue_manager = false\n{}", two_slices(200, 2, ""));
    let sub = build(&text, false);
    run(&sub);
    let secs = sub.router().now_ns() as f64 / 1e9;
    let rate = num(&sub, "b/@m/tx.byte_count") as f64 / secs;
    // Offered 1 MBps against 100 kBps provisioned; the link is 1 MBps.
    assert!(rate > 5.0 * 100e3, "b's rate {rate} Bps");
    assert!(sub.router().read_handler("p1/@fifo.length").is_ok());
    assert!(sub.router().read_handler("p1/@sched.config").is_err());
}

#[test]
fn a_slice_whose_element_panics_is_stopped_and_the_others_forward() {
    let sub = build(&two_slices(200, 2, "-> Boom(AFTER 50) "), false);
    run(&sub);
    let r = sub.router();
    let f = r.faults();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].domain, "b");
    assert!(f[0].message.contains("made to fail"), "{f:?}");
    assert_eq!(r.domain_failed("b"), Some(true));
    assert_eq!(r.domain_failed("a"), Some(false));
    // b stopped near its 50th packet; its traffic since waits in, and is
    // dropped at, its ingress queue, counted.
    assert!(num(&sub, "b/c.count") <= 64, "{}", num(&sub, "b/c.count"));
    assert!(num(&sub, "b/@m/in.drops") > 15000);
    // The packets Boom held when it panicked are dropped, counted
    // against the task's element: every packet b's counter saw is sent,
    // queued, dropped by the queue, or one of those.
    let stopped = r
        .drop_reasons("b/FromDevice@1")
        .unwrap()
        .iter()
        .find(|(reason, _)| *reason == "slice stopped")
        .map_or(0, |x| x.1);
    assert!(stopped > 0, "{:?}", r.drop_reasons("b/FromDevice@1"));
    // Per slice, by reason, in `slices` (--report slices, the web view).
    let report = sub.report();
    assert!(
        report.contains(&format!("slice stopped {stopped}"))
            && report.contains("drops_by_reason: "),
        "{report}"
    );
    assert_eq!(
        num(&sub, "b/c.count"),
        num(&sub, "b/@m/tx.count") + num(&sub, "b/q.length") + num(&sub, "b/q.drops") + stopped,
        "b's packets not all accounted for ({stopped} stopped)"
    );
    // a forwarded all the while: 200 a second for 2 s.
    let a = num(&sub, "a/@m/tx.count");
    assert!(a >= 390, "a forwarded {a}");
    assert!(
        sub.report().contains(
            "slice b state failed (a panic in the task of b/FromDevice@1: Boom: made to fail"
        ),
        "{}",
        sub.report()
    );
}

/// Writes handler `h` through a control session (as a peer would) and
/// returns the reply's text.
fn session(b: &dyn Backend, cmds: &str) -> String {
    let (out, _) = session_over_bytes(cmds.as_bytes(), b, &ControlConfig::default());
    String::from_utf8_lossy(&out).into_owned()
}

fn writedata(h: &str, v: &str) -> String {
    format!("WRITEDATA {h} {}\r\n{v}", v.len())
}

const C_SLICE: &str = r#"
[slice.c]
text = "FromDevice(n) -> c :: Counter -> q :: Queue(100) -> ToDevice(n);"
[slice.c.metalink.n]
interface = "p0"
vlan = 30
rate = "10kBps"
"#;

#[test]
fn slices_change_while_the_others_run_and_lose_nothing() {
    // a runs without end; b's source has no STOP: the test stops it.
    let text = two_slices(2000, 1000, "").replace(", STOP true", "");
    let text = text.replace("rate = \"50kBps\"", "rate = \"300kBps\"");
    let sub = build(&text, true);
    let be = sub.backend();
    let h = sub.hot().clone();
    let runner = std::thread::spawn(move || h.run());
    let wait_for = |n: u64| {
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while num(&sub, "a/c.count") < n {
            assert!(std::time::Instant::now() < until);
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    wait_for(500);
    let r = session(&*be, &writedata("slice.add", C_SLICE));
    assert!(r.contains("200 "), "{r}");
    assert!(sub.slices().contains(&"c".to_string()));
    assert!(session(&*be, "READ c/c.count\r\n").contains("200 "));
    wait_for(num(&sub, "a/c.count") + 500);
    // A bad configuration: refused, located, everything left running.
    let r = session(
        &*be,
        &writedata("c.hotconfig", "FromDevice(n) -> Nonesuch -> ToDevice(n);"),
    );
    assert!(
        r.contains("520") && r.contains("c.hotconfig:1:") && r.contains("Nonesuch"),
        "{r}"
    );
    // Too much: p0 is 1 MBps, a has 300 kBps, c 10 kBps.
    let big = C_SLICE
        .replace("[slice.c", "[slice.d")
        .replace("vlan = 30", "vlan = 40")
        .replace("10kBps", "800kBps");
    let r = session(&*be, &writedata("slice.add", &big));
    assert!(r.contains("520") && r.contains("more than its rate"), "{r}");
    let r = session(
        &*be,
        &writedata(
            "c.hotconfig",
            "FromDevice(n) -> c :: Counter -> Null -> q :: Queue(100) -> ToDevice(n);",
        ),
    );
    assert!(r.contains("200 "), "{r}");
    wait_for(num(&sub, "a/c.count") + 500);
    let r = session(&*be, &writedata("slice.remove", "c"));
    assert!(r.contains("200 "), "{r}");
    assert!(!sub.slices().contains(&"c".to_string()));
    wait_for(num(&sub, "a/c.count") + 500);
    sub.hot().stop();
    runner.join().unwrap();
    // Every packet a received is forwarded, held, or dropped, and it
    // dropped none: 2000 frames a second within its 300 kBps.
    let rx = num(&sub, "a/@m/rx.count");
    let tx = num(&sub, "a/@m/tx.count");
    let held = num(&sub, "a/q.length") + num(&sub, "a/@m/in.length") + num(&sub, "a/@m/out.length");
    assert_eq!(
        sub.router()
            .drops()
            .iter()
            .filter(|(n, _)| n.starts_with("a/"))
            .count(),
        0
    );
    assert_eq!(rx, tx + held, "a: rx {rx} tx {tx} held {held}");
    // And the interface's input was all taken: each packet sent reached a
    // slice (a) or was counted as unknown (c's, after its removal).
    let sent = num(&sub, "p0/@in.count");
    assert_eq!(sent, rx + num(&sub, "p0/@unknown.count"), "p0 sent {sent}");
}

#[test]
fn slice_writes_need_minus_r_and_reads_are_refused() {
    let sub = build(&two_slices(200, 1, ""), false);
    let be = sub.backend();
    let r = session(&*be, &writedata("slice.add", C_SLICE));
    assert!(r.contains("530") && r.contains("-R"), "{r}");
    let r = session(&*be, &writedata("a.hotconfig", "Idle;"));
    assert!(r.contains("530"), "{r}");
    let r = session(&*be, &writedata("hotconfig", "Idle;"));
    assert!(r.contains("530") && r.contains("slice by slice"), "{r}");
    let r = session(&*be, "READ slices\r\n");
    assert!(r.contains("slice a state running"), "{r}");
    // A read-only socket refuses the writes before they reach a slice.
    let ro = ControlConfig {
        read_only: true,
        ..ControlConfig::default()
    };
    let (out, _) = session_over_bytes(writedata("slice.remove", "a").as_bytes(), &*be, &ro);
    assert!(String::from_utf8_lossy(&out).contains("530"));
    assert_eq!(sub.slices().len(), 2);
}

#[test]
fn a_device_that_is_no_metalink_is_a_located_error() {
    let text = two_slices(200, 1, "").replacen(
        "ToDevice(m);\"\n[slice.a.metalink",
        "ToDevice(m); FromDevice(eth9) -> Discard;\"\n[slice.a.metalink",
        1,
    );
    let e = Substrate::build(
        "t.toml",
        &text,
        std::path::Path::new("."),
        registry(),
        &simopts(),
        false,
    )
    .err()
    .expect("refused");
    assert!(
        e.contains("slice a:1:") && e.contains("eth9") && e.contains("not one of its metalinks"),
        "{e}"
    );
}

/// Slices sharing the substrate's one thread, each always busy (its own
/// `InfiniteSource` into a `WorkPackage` of its cost, W rounds a packet),
/// with the given CPU shares (`None`: unstated); `limit` bounds a
/// slice's source (then it goes idle).
fn busy_slices(slices: &[(&str, Option<f64>, u32, Option<u64>)]) -> String {
    let mut t = String::from(
        "cores = 1\n[interface.p0]\nrate = \"1MBps\"\ninput = \"InfiniteSource(LIMIT 0)\"\noutput = \"Discard\"\n",
    );
    for (name, share, w, limit) in slices {
        t.push_str(&format!("\n[slice.{name}]\n"));
        if let Some(s) = share {
            t.push_str(&format!("cpu_share = {s}\n"));
        }
        let lim = limit.map_or(String::new(), |l| format!(", LIMIT {l}"));
        t.push_str(&format!(
            "text = \"InfiniteSource(LENGTH 64, BURST 8{lim}) -> WorkPackage({w}) -> c :: Counter -> Discard;\"\n"
        ));
    }
    t
}

/// Runs `text` on one real worker thread for about two seconds of wall
/// time, and returns each slice's share of the cycles the share
/// scheduler charged the slices, the median of 20 looks (every 75 ms from
/// 0.5 s on; each over the cycles charged since the start), and the
/// substrate. The median: the worker is a thread of a shared machine, and
/// a preemption in the middle of a slice's run is charged to that slice
/// (which then waits until the others caught up): a look right after a
/// long one sees it before it is made up for.
fn cpu_split(text: &str) -> (Vec<(String, f64)>, Arc<Substrate>) {
    let opts = BuildOptions {
        pin: false,
        ..BuildOptions::default()
    };
    let sub = Substrate::build(
        "t.toml",
        text,
        std::path::Path::new("."),
        registry(),
        &opts,
        false,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let h = sub.hot().clone();
    let t = std::thread::spawn(move || h.run());
    std::thread::sleep(Duration::from_millis(500));
    let mut looks: Vec<Vec<(String, f64)>> = Vec::new();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(75));
        let c = sub.router().domain_cycles();
        let total: u64 = c.iter().map(|(_, x)| x).sum();
        assert!(total > 0, "nothing charged: {c:?}");
        looks.push(
            c.iter()
                .map(|(n, x)| (n.clone(), *x as f64 / total as f64))
                .collect(),
        );
    }
    sub.router().stop();
    t.join().unwrap();
    let split = looks[0]
        .iter()
        .enumerate()
        .map(|(k, (n, _))| {
            let mut v: Vec<f64> = looks.iter().map(|l| l[k].1).collect();
            v.sort_by(f64::total_cmp);
            (n.clone(), v[v.len() / 2])
        })
        .collect();
    (split, sub)
}

fn within_5pct(split: &[(String, f64)], want: &[(&str, f64)], what: &str) {
    for (n, w) in want {
        let got = split.iter().find(|(x, _)| x == n).map_or(0.0, |s| s.1);
        assert!(
            (got - w).abs() <= 0.05 * w,
            "{what}: slice {n} got {got:.4} of the thread's slice cycles, its share is {w:.4} (all: {split:?})"
        );
    }
}

#[test]
fn slices_sharing_a_core_get_their_cpu_shares_whatever_their_cost() {
    // Per packet, c's work costs about 3000 times a's.
    let text = busy_slices(&[
        ("a", Some(0.5), 1, None),
        ("b", Some(0.3), 100, None),
        ("c", Some(0.2), 3000, None),
    ]);
    let (split, sub) = cpu_split(&text);
    eprintln!("shares 0.5/0.3/0.2 got {split:?}");
    within_5pct(&split, &[("a", 0.5), ("b", 0.3), ("c", 0.2)], "all busy");
    // Each slice ran.
    for s in ["a", "b", "c"] {
        assert!(num(&sub, &format!("{s}/c.count")) > 0, "{s} never ran");
    }
    let report = sub.report();
    assert!(report.contains("cpu_share 0.200 cpu_cycles"), "{report}");
}

#[test]
fn a_slice_idle_leaves_its_cpu_share_to_the_busy_ones_by_their_shares() {
    // c, the cheapest, sends 100 packets and is idle after: a and b share
    // its part in proportion to their own (0.5 : 0.3). Shares unstated
    // are equal parts of the rest: here b's is 1 - 0.5 - 0.2.
    let text = busy_slices(&[
        ("a", Some(0.5), 2000, None),
        ("b", None, 1, None),
        ("c", Some(0.2), 1, Some(100)),
    ]);
    let (split, sub) = cpu_split(&text);
    eprintln!("a 0.5, b 0.3, c 0.2 idle: got {split:?}");
    // Idle, c costs only the polls of its source that find nothing.
    let c = split.iter().find(|(n, _)| n == "c").map_or(1.0, |s| s.1);
    assert!(c < 0.1, "idle c was charged {c}");
    let busy: Vec<(String, f64)> = split
        .iter()
        .filter(|(n, _)| n != "c")
        .map(|(n, x)| (n.clone(), x / (1.0 - c)))
        .collect();
    within_5pct(&busy, &[("a", 0.625), ("b", 0.375)], "c idle");
    assert_eq!(num(&sub, "c/c.count"), 100);
}

#[test]
fn cpu_shares_beyond_the_thread_are_refused() {
    let text = busy_slices(&[("a", Some(0.7), 1, None), ("b", Some(0.4), 1, None)]);
    let e = Substrate::build(
        "t.toml",
        &text,
        std::path::Path::new("."),
        registry(),
        &simopts(),
        false,
    )
    .err()
    .expect("refused");
    assert!(e.contains("cpu_share 1.100 in all; at most 1"), "{e}");
    let text = busy_slices(&[("a", Some(1.0), 1, None), ("b", None, 1, None)]);
    let e = Substrate::build(
        "t.toml",
        &text,
        std::path::Path::new("."),
        registry(),
        &simopts(),
        false,
    )
    .err()
    .expect("refused");
    assert!(e.contains("leaving nothing for b"), "{e}");
}

/// Two work-conserving slices on one 1 MBps link, each sending 100-byte
/// frames at 2 MBps from its own source (both oversubscribed): the link
/// is shared by deficit round robin weighted 1 : 3 (`weight`), within 2%.
#[test]
fn work_conserving_slices_share_the_spare_bandwidth_by_weight() {
    let src = |limit: &str| {
        format!(
            "RatedSource(DATA \"{}\", RATE 20000{limit}) -> q :: Queue(200) -> ToDevice(m);",
            frame(0)
        )
    };
    let text = format!(
        r#"
cores = 1
[interface.p0]
rate = "1MBps"
input = "InfiniteSource(LIMIT 0)"
output = "Discard"

[slice.a]
sharing = "work-conserving"
text = '{ta}'
[slice.a.metalink.m]
interface = "p0"
vlan = 10
rate = "100kBps"

[slice.b]
sharing = "work-conserving"
weight = 3
text = '{tb}'
[slice.b.metalink.m]
interface = "p0"
vlan = 20
rate = "100kBps"
"#,
        ta = src(""),
        tb = src(", LIMIT 40000, STOP true"),
    );
    let sub = build(&text, false);
    run(&sub);
    // What each sent on the link: what left the slice, less what its
    // egress queue (in front of the link's scheduler) dropped or holds;
    // 100-byte frames.
    let sent = |s: &str| {
        (num(&sub, &format!("{s}/@m/tx.count"))
            - num(&sub, &format!("{s}/@m/out.drops"))
            - num(&sub, &format!("{s}/@m/out.length"))) as f64
            * 100.0
    };
    let (a, b) = (sent("a"), sent("b"));
    let secs = sub.router().now_ns() as f64 / 1e9;
    // The link carries its rate (the frames with their 4-byte tags).
    let link = (a + b) * 104.0 / 100.0 / secs;
    assert!((link - 1e6).abs() <= 0.02 * 1e6, "link {link} Bps");
    let share_b = b / (a + b);
    assert!(
        (share_b - 0.75).abs() <= 0.02 * 0.75,
        "b (weight 3) got {share_b:.4} of the link, a (weight 1) the rest"
    );
    // Their excess is dropped in their own (egress) queues.
    assert!(num(&sub, "a/@m/out.drops") > 0 && num(&sub, "b/@m/out.drops") > 0);
}

#[test]
fn a_weight_on_a_strict_slice_is_refused() {
    let text = two_slices(200, 1, "").replace("[slice.b]\n", "[slice.b]\nweight = 2\n");
    let e = Substrate::build(
        "t.toml",
        &text,
        std::path::Path::new("."),
        registry(),
        &simopts(),
        false,
    )
    .err()
    .expect("refused");
    assert!(e.contains("slice b: weight = 2 with sharing strict"), "{e}");
}
