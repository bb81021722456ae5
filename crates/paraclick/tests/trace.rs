//! Why was this packet dropped: every class that drops declares why; each
//! drop reason of the IP router, NAT and queue elements is produced by a
//! packet and seen in the `drops` listing and in a trace; a trace through
//! conf/fake-iprouter.click at -j 2 follows a packet across a queue
//! between threads; `paraclick ctl drops` and `trace`. (IPsec's reasons:
//! `crates/elements/src/ipsec/click_style_tests.rs`.)

mod common;

use common::*;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::Router;
use std::collections::BTreeMap;
use std::path::Path;

fn test_router(conf: &str) -> Router {
    let reg = paraclick_runtime::testing::with_test_classes(&registry());
    Router::from_str(conf, &reg, 1).unwrap_or_else(|d| panic!("{d:?}"))
}

/// An IPv4 packet (no options) with a correct checksum, then `f` applied.
fn ip(src: [u8; 4], dst: [u8; 4], ttl: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, ttl, proto, 0, 0];
    h[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    fix(&mut h);
    h.extend_from_slice(payload);
    h
}

fn fix(h: &mut [u8]) {
    h[10] = 0;
    h[11] = 0;
    let c = paraclick_packet::wire::checksum::checksum(&h[..20]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut u = vec![0; 12];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&12u16.to_be_bytes());
    u
}

fn batch(ps: &[Vec<u8>]) -> Batch {
    Batch::from(
        ps.iter()
            .map(|d| Packet::from_slice(d).unwrap())
            .collect::<Vec<_>>(),
    )
}

/// The `drops` listing as (element, reason) -> count.
fn drops(r: &Router) -> BTreeMap<(String, String), u64> {
    r.read_handler("drops")
        .unwrap()
        .lines()
        .filter(|l| *l != "no drops")
        .map(|l| {
            let mut w = l.split_whitespace();
            let n = w.next().unwrap().parse().unwrap();
            let e = w.next().unwrap().to_string();
            ((e, w.collect::<Vec<_>>().join(" ")), n)
        })
        .collect()
}

/// Each traced packet's lines (cycle counts cut off), by trace number.
fn traces(r: &Router) -> BTreeMap<u32, Vec<String>> {
    let mut out: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut cur = 0;
    for l in r.read_handler("trace").unwrap().lines() {
        if let Some(n) = l.strip_prefix("trace ").and_then(|x| x.strip_suffix(':')) {
            cur = n.parse().unwrap();
            continue;
        }
        let l = match l.split_once(" cycles  ") {
            Some((_, rest)) => rest.to_string(),
            None => l.trim().to_string(),
        };
        out.entry(cur).or_default().push(l);
    }
    out
}

/// The last line of each trace that says where the packet died.
fn deaths(r: &Router) -> Vec<String> {
    traces(r)
        .values()
        .map(|t| {
            t.iter()
                .rev()
                .find(|l| l.contains("dropped by") || l.contains("queued"))
                .map(|l| {
                    l.split_once("  ")
                        .map_or(l.as_str(), |x| x.1)
                        .trim()
                        .to_string()
                })
                .unwrap_or_else(|| format!("no death in {t:?}"))
        })
        .collect()
}

#[test]
fn each_ip_router_and_queue_drop_reason_shows_in_drops_and_in_a_trace() {
    let r = test_router(
        "src :: TestSource
           -> c :: CheckIPHeader(INTERFACES 10.0.0.1/8)
           -> rt :: RadixIPLookup(10.0.0.0/8 0)
           -> dt :: DecIPTTL
           -> q :: Queue(1)
           -> Discard;",
    );
    let (a, b) = ([10, 0, 0, 2], [10, 0, 0, 3]);
    let good = ip(a, b, 64, 17, &udp(1, 2));
    let mut bad_version = good.clone();
    bad_version[0] = 0x55;
    let mut bad_length = good.clone();
    bad_length[2..4].copy_from_slice(&400u16.to_be_bytes());
    fix(&mut bad_length);
    let mut bad_checksum = good.clone();
    bad_checksum[10] ^= 0xff;
    let bad_source = ip([10, 255, 255, 255], b, 64, 17, &udp(1, 2));
    let no_route = ip(a, [192, 168, 1, 1], 64, 17, &udp(1, 2));
    let expired = ip(a, b, 1, 17, &udp(1, 2));
    r.write_handler("trace_add", "100").unwrap();
    let all = [
        good.clone(),
        good,
        bad_version,
        bad_length,
        bad_checksum,
        bad_source,
        no_route,
        expired,
    ];
    r.send_from("src", 0, batch(&all)).unwrap();
    let want = [
        ("q", "full"),
        ("c", "bad IP version"),
        ("c", "bad IP length"),
        ("c", "bad IP checksum"),
        ("c", "bad source address"),
        ("rt", "no route"),
        ("dt", "expired"),
    ];
    let got = drops(&r);
    for (e, reason) in want {
        assert_eq!(
            got.get(&(e.to_string(), reason.to_string())),
            Some(&1),
            "{e} {reason}: {got:?}"
        );
    }
    assert_eq!(got.len(), want.len(), "{got:?}");
    assert_eq!(
        deaths(&r),
        [
            "still queued in q (or taken since)",
            "dropped by q :: Queue: full",
            "dropped by c :: CheckIPHeader: bad IP version",
            "dropped by c :: CheckIPHeader: bad IP length",
            "dropped by c :: CheckIPHeader: bad IP checksum",
            "dropped by c :: CheckIPHeader: bad source address",
            "dropped by rt :: RadixIPLookup: no route",
            "dropped by dt :: DecIPTTL: expired",
        ]
        .map(|d| d.to_string())
    );
    // The whole path of the first, with the header decode where DecIPTTL
    // changed the TTL.
    let t = &traces(&r)[&1];
    let hops: Vec<&str> = t.iter().map(|l| l.as_str()).collect();
    assert_eq!(hops[0], "thread 0  entered at src :: TestSource");
    assert!(
        hops[1].contains("ip 10.0.0.2 > 10.0.0.3 ttl 64"),
        "{hops:?}"
    );
    assert_eq!(
        &hops[2..6],
        [
            "thread 0  src[0] -> [0]c :: CheckIPHeader",
            "thread 0  c[0] -> [0]rt :: RadixIPLookup",
            "thread 0  rt[0] -> [0]dt :: DecIPTTL",
            "thread 0  dt[0] -> [0]q :: Queue  queued",
        ]
    );
    assert!(hops[6].contains("ttl 63"), "{hops:?}");
    assert_eq!(hops[7], "still queued in q (or taken since)");
}

#[test]
fn the_nat_drop_reasons_show_in_drops_and_in_a_trace() {
    let r = test_router(
        "src :: TestSource;
         rw :: IPRewriter(pattern 192.0.2.1 1024-1025 - - 0 1, drop);
         src[0] -> MarkIPHeader -> [0]rw; src[1] -> MarkIPHeader -> [1]rw;
         rw[0] -> out :: TestSink; rw[1] -> back :: TestSink;",
    );
    r.write_handler("trace_add", "100").unwrap();
    let flow = |sport| ip([10, 0, 0, 2], [198, 51, 100, 1], 64, 17, &udp(sport, 53));
    // Three flows for two ports; a reply nobody asked for; not UDP/TCP.
    r.send_from("src", 0, batch(&[flow(1), flow(2), flow(3)]))
        .unwrap();
    r.send_from(
        "src",
        1,
        batch(&[ip([198, 51, 100, 1], [192, 0, 2, 1], 64, 17, &udp(53, 999))]),
    )
    .unwrap();
    let got = drops(&r);
    assert_eq!(
        got.get(&("rw".into(), "ports exhausted".into())),
        Some(&1),
        "{got:?}"
    );
    assert_eq!(
        got.get(&("rw".into(), "no mapping".into())),
        Some(&1),
        "{got:?}"
    );
    let d = deaths(&r);
    assert!(
        d.contains(&"dropped by rw :: IPRewriter: ports exhausted".to_string()),
        "{d:?}"
    );
    assert!(
        d.contains(&"dropped by rw :: IPRewriter: no mapping".to_string()),
        "{d:?}"
    );
    // A rewritten packet's trace shows the new source after rw.
    let t = &traces(&r)[&1];
    assert!(
        t.iter().any(|l| l.contains("ip 192.0.2.1 > 198.51.100.1")),
        "{t:?}"
    );
}

#[test]
fn a_filter_chooses_the_packets_to_trace() {
    let r = test_router("src :: TestSource -> c :: CheckIPHeader -> s :: TestSink;");
    r.write_handler("trace_add", "1 udp && dst port 53")
        .unwrap();
    let p = |dport| ip([10, 0, 0, 2], [10, 0, 0, 3], 64, 17, &udp(7, dport));
    r.send_from("src", 0, batch(&[p(80), p(53), p(53)]))
        .unwrap();
    let marks: Vec<u32> = r
        .element::<paraclick_runtime::testing::TestSink>("s")
        .unwrap()
        .take()
        .iter()
        .map(|p| p.trace())
        .collect();
    assert_eq!(marks, [0, 1, 0], "the first match only");
    // Bad filters are errors naming the problem, never panics.
    for bad in [
        "1 udp &&",
        "1 dst port 99999",
        "1 ((((",
        "1 src host nosuchname",
    ] {
        let e = r.write_handler("trace_add", bad).unwrap_err();
        assert!(e.contains("trace add: filter"), "{bad}: {e}");
    }
}

#[test]
fn clones_and_encapsulated_packets_stay_traced() {
    let r = test_router(
        "src :: TestSource -> t :: Tee(2);
         t[0] -> a :: TestSink;
         t[1] -> e :: UDPIPEncap(192.0.2.1, 1234, 198.51.100.1, 4321) -> b :: TestSink;",
    );
    r.write_handler("trace_add", "1").unwrap();
    let p = ip([10, 0, 0, 2], [10, 0, 0, 3], 64, 17, &udp(7, 53));
    r.send_from("src", 0, batch(&[p.clone(), p])).unwrap();
    let marks = |n: &str| {
        r.element::<paraclick_runtime::testing::TestSink>(n)
            .unwrap()
            .take()
            .iter()
            .map(|p| p.trace())
            .collect::<Vec<_>>()
    };
    assert_eq!(marks("a"), [1, 0], "the first packet's copy");
    assert_eq!(marks("b"), [1, 0], "and the encapsulated original");
    let t = &traces(&r)[&1];
    let t: Vec<&str> = t.iter().map(|l| l.as_str()).collect();
    assert_eq!(t[2], "thread 0  src[0] -> [0]t :: Tee", "{t:?}");
    assert_eq!(t[3], "thread 0  t[0] -> [0]a :: TestSink", "{t:?}");
    assert_eq!(
        t[4], "thread 0  t[1] -> [0]e :: UDPIPEncap  (another copy)",
        "{t:?}"
    );
    assert_eq!(t[5], "thread 0  e[0] -> [0]b :: TestSink", "{t:?}");
    assert!(
        t[6].contains("ip 192.0.2.1 > 198.51.100.1") && t[6].contains("1234 > 4321"),
        "the new headers after the encapsulation: {t:?}"
    );
}

#[test]
fn an_icmp_error_about_a_traced_packet_is_traced_on_its_way() {
    let r = test_router(
        "src :: TestSource
           -> dt :: DecIPTTL
           -> ok :: TestSink;
         dt[1] -> ie :: ICMPError(192.0.2.1, timeexceeded)
           -> fix :: FixIPSrc(192.0.2.9)
           -> errs :: TestSink;
         ie6 :: ICMP6Error(2001:db8::1, timeexceeded) -> errs6 :: TestSink;
         src6 :: TestSource -> ie6;",
    );
    r.write_handler("trace_add", "1").unwrap();
    let mut p = Packet::from_slice(&ip([10, 0, 0, 2], [10, 0, 0, 3], 1, 17, &udp(7, 53))).unwrap();
    p.set_network_header(0, 20);
    r.send_from("src", 0, Batch::from(vec![p])).unwrap();
    let marks = r
        .element::<paraclick_runtime::testing::TestSink>("errs")
        .unwrap()
        .take()
        .iter()
        .map(|p| p.trace())
        .collect::<Vec<_>>();
    assert_eq!(marks, [1], "the error carries the trace mark");
    let t = &traces(&r)[&1];
    let t: Vec<&str> = t.iter().map(|l| l.as_str()).collect();
    let at = |want: &str| {
        t.iter()
            .position(|l| l.contains(want))
            .unwrap_or_else(|| panic!("no '{want}' in {t:?}"))
    };
    // The expired packet into ICMPError, then the error's own path on.
    let a = at("dt[1] -> [0]ie :: ICMPError");
    let b = at("ie[0] -> [0]fix :: FixIPSrc");
    let c = at("fix[0] -> [0]errs :: TestSink");
    assert!(a < b && b < c, "{t:?}");
    assert!(
        t[b + 1..].iter().any(|l| l.contains("proto icmp")),
        "the error's headers: {t:?}"
    );
    // ICMP6Error alike.
    r.write_handler("trace_add", "1").unwrap();
    let mut h = vec![0x60, 0, 0, 0, 0, 8, 17, 1];
    h.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    h.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
    h.extend_from_slice(&udp(7, 53)[..8]);
    let mut p6 = Packet::from_slice(&h).unwrap();
    p6.set_network_header(0, 40);
    r.send_from("src6", 0, Batch::from(vec![p6])).unwrap();
    let marks6 = r
        .element::<paraclick_runtime::testing::TestSink>("errs6")
        .unwrap()
        .take()
        .iter()
        .map(|p| p.trace())
        .collect::<Vec<_>>();
    assert_eq!(marks6, [2], "the ICMPv6 error carries the trace mark");
    let t = &traces(&r)[&2];
    assert!(
        t.iter()
            .any(|l| l.contains("ie6[0] -> [0]errs6 :: TestSink")),
        "{t:?}"
    );
}

/// Source files that call a dropping API, and whether they declare
/// reasons. A class whose file drops must declare at least one reason.
#[test]
fn every_class_that_drops_declares_why() {
    let reg = registry();
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates/elements/src", "crates/io/src"] {
        walk(&root.join(dir), &mut files);
    }
    let drop_calls = [
        "Verdict::Drop,",
        "Verdict::Drop;",
        "Verdict::Drop\n",
        "Verdict::Drop }",
        "Hop::Drop,",
        "Hop::Drop;",
        "drop_packet(",
        "drop_batch(",
        "count_drops(",
        "DropFor(",
        "drop_packet_for(",
        "drop_batch_for(",
        "count_drops_for(",
    ];
    let mut missing = Vec::new();
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // The code before the tests.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        if !drop_calls.iter().any(|c| code.contains(c)) {
            continue;
        }
        for class in spec_classes(code) {
            let Some(spec) = reg.get(&class) else {
                continue;
            };
            checked += 1;
            if spec.drop_reasons.is_empty() {
                missing.push(format!(
                    "{class} ({})",
                    f.strip_prefix(&root).unwrap_or(&f).display()
                ));
            }
        }
    }
    assert!(checked > 50, "the scan found only {checked} classes");
    assert!(
        missing.is_empty(),
        "classes that drop but declare no reason (ClassSpec::drop_reasons):\n{}",
        missing.join("\n")
    );
}

fn walk(d: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The class names a file's specs register: `ClassSpec::KIND("NAME"`.
fn spec_classes(code: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("ClassSpec::") {
        rest = &rest[i + "ClassSpec::".len()..];
        if let Some(open) = rest.find("(\"") {
            if open < 20 {
                let name = &rest[open + 2..];
                if let Some(end) = name.find('"') {
                    v.push(name[..end].to_string());
                }
            }
        }
    }
    v
}

/// A packet through the benchmark router at -j 2, its queue's consumer
/// on the other thread (round-robin placement: src0 and d0 on thread 0,
/// src1 and d1 on thread 1, and src0's packets leave through q1): the
/// trace shows every element in order and the thread change at the queue.
#[test]
fn a_trace_through_fake_iprouter_crosses_threads_in_order() {
    let _g = one_at_a_time();
    let out = paraclick(&[
        "-j",
        "2",
        "--sched",
        "static",
        "conf/fake-iprouter.click",
        "N=50000",
        "--trace",
        "1",
        "--trace-filter",
        "src host 1.0.0.2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split_once(" cycles  ").map(|x| x.1))
        .collect();
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split_once("] -> [").map(|x| x.1))
        .map(|l| l[2..].split(" :: ").next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "c0",
            "Paint@21",
            "ip",
            "CheckIPHeader@19",
            "GetIPAddress@20",
            "rt",
            "p1/DropBroadcasts@1",
            "p1/cp",
            "p1/gio",
            "p1/FixIPSrc@4",
            "p1/dt",
            "p1/fr",
            "p1/EtherEncap@7",
            "q1",
            "out1",
            "d1",
        ],
        "{err}"
    );
    let thread = |l: &str| l.split_whitespace().nth(1).unwrap().to_string();
    let at_queue = lines.iter().position(|l| l.contains("queued")).unwrap();
    assert!(lines[at_queue].contains("[0]q1 :: Queue"), "{err}");
    assert_ne!(
        thread(lines[at_queue]),
        thread(lines[at_queue + 1]),
        "the queue's consumer runs on the other thread:\n{err}"
    );
    assert!(lines[at_queue + 1].ends_with("pulled"), "{err}");
    assert!(lines[0].contains("entered at src0"), "{err}");
}

#[test]
fn ctl_lists_drops_and_runs_a_trace() {
    let _g = one_at_a_time();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace-ctl");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s");
    let s = sock.to_str().unwrap();
    let conf = "src :: InfiniteSource(DATA \\<45000014 00000000 40110000 0a000002 0a000003>, LIMIT 50, BURST 5, ACTIVE false)
                -> c :: CheckIPHeader -> Discard;";
    let mut child = std::process::Command::new(bin())
        .args(["-u", s, "-e", conf])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ctl = |args: &[&str]| {
        let mut a = vec!["ctl", "-u", s];
        a.extend_from_slice(args);
        paraclick(&a)
    };
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let o = ctl(&["drops"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "no drops\n");
    let o = ctl(&["trace", "add", "2", "udp"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ctl(&["trace", "add", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("packet count"));
    ctl(&["write", "src.active", "true"]);
    let mut text = String::new();
    for _ in 0..200 {
        text = String::from_utf8_lossy(&ctl(&["drops"]).stdout).to_string();
        if text.contains("50") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert_eq!(text, "50  c  bad IP checksum\n");
    let t = String::from_utf8_lossy(&ctl(&["trace", "show"]).stdout).to_string();
    assert!(
        t.contains("trace 1:") && t.contains("trace 2:") && !t.contains("trace 3:"),
        "{t}"
    );
    assert!(
        t.contains("dropped by c :: CheckIPHeader: bad IP checksum"),
        "{t}"
    );
    assert!(ctl(&["trace", "clear"]).status.success());
    let t = String::from_utf8_lossy(&ctl(&["trace", "show"]).stdout).to_string();
    assert!(t.starts_with("no traces"), "{t}");
    ctl(&["write", "stop"]);
    child.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trace turns itself off once its marks are taken and no marked packet
/// is alive, and not before: a copy of a traced packet waiting in a queue
/// keeps it on (and is traced when pulled on the other thread) after the
/// original is gone. Read through `trace_status`: the tracer's flag, the
/// marks left, the marked packets alive, and how many workers' data paths
/// still look at packets.
#[test]
fn a_finished_trace_turns_itself_off_but_not_while_a_copy_is_queued() {
    let _g = one_at_a_time();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace-settle");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s");
    let s = sock.to_str().unwrap();
    let conf = "src :: InfiniteSource(LENGTH 60, LIMIT 6, BURST 1, ACTIVE false) -> t :: Tee(2);
                t[0] -> d0 :: Discard;
                t[1] -> q :: Queue(100) -> u :: Unqueue(ACTIVE false) -> d1 :: Discard;
                StaticThreadSched(src 0, u 1);";
    // Killed if the test fails, so no router outlives it.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Kill(
        std::process::Command::new(bin())
            .args(["-j", "2", "-u", s, "-e", conf])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ctl = |args: &[&str]| {
        let mut a = vec!["ctl", "-u", s];
        a.extend_from_slice(args);
        let o = paraclick(&a);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    for _ in 0..400 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    // Waits for an event: a handler reaching a value (a generous bound
    // only against a hang).
    let wait_for = |h: &str, want: &str| {
        let mut got = String::new();
        for _ in 0..2000 {
            got = ctl(&["read", h]);
            if got.trim() == want {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{h} stayed '{}', not '{want}'", got.trim());
    };
    let status = || ctl(&["trace", "status"]);
    assert!(status().starts_with("on false\n"), "{}", status());
    ctl(&["trace", "add", "3"]);
    assert_eq!(
        status(),
        "on true\nmarks_left 3\nmarked_alive 0\nthreads_tracing 2\n",
        "both workers trace once `trace add` returns"
    );
    ctl(&["write", "src.active", "true"]);
    wait_for("d0.count", "6");
    // The three marks are taken and the originals (or the copies) are
    // gone through d0; the other three wait in q, still marked: the
    // trace stays on, and the packets after the marked ones went on.
    assert_eq!(
        status(),
        "on true\nmarks_left 0\nmarked_alive 3\nthreads_tracing 2\n",
        "a queued copy of a traced packet keeps the trace on"
    );
    ctl(&["write", "u.active", "true"]);
    wait_for("d1.count", "6");
    assert_eq!(
        status(),
        "on false\nmarks_left 0\nmarked_alive 0\nthreads_tracing 0\n",
        "once the last traced packet left, no worker looks at packets"
    );
    let t = ctl(&["trace", "show"]);
    for id in 1..=3 {
        let block: String = t
            .split(&format!("trace {id}:\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no trace {id}: {t}"))
            .split("\ntrace ")
            .next()
            .unwrap()
            .to_string();
        assert!(
            block.contains("t[0] -> [0]d0 :: Discard")
                && block.contains("thread 1  q[0] -> [0]u :: Unqueue  pulled")
                && block.contains("thread 1  u[0] -> [0]d1 :: Discard")
                && block.contains("left through d1 :: Discard"),
            "trace {id}: both copies to their end, the queued one pulled on thread 1:\n{t}"
        );
    }
    assert!(!t.contains("trace 4:"), "{t}");
    ctl(&["write", "stop"]);
    child.0.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
