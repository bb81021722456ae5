//! End-to-end tests of the RFC 1812 IP router, conf/iprouter.click (what
//! `paraclick make-ip-conf` writes for two interfaces).
//!
//! The input pcaps are built with scapy (tests/iprouter/scenarios.py
//! `genall`, once for all tests); each test runs the router on its
//! scenario's pcaps (in-process, or the paraclick binary with `-h` handler
//! reads), checks the handler values and packet conservation here, and the
//! output pcaps with scapy (`scenarios.py check`). scapy is required:
//! without it the tests fail (`pip install scapy`, as scripts/bootstrap.sh
//! does).

#[path = "../src/make_ip_conf.rs"]
mod make_ip_conf;

mod common;

use make_ip_conf::{example_ifaces, generate, Device};
use paraclick_runtime::{BuildOptions, Router};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn conf_path() -> PathBuf {
    common::root().join("conf/iprouter.click")
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/iprouter/scenarios.py")
}

/// Runs `scenarios.py ARGS... DIR`; panics with its output on failure.
fn scenario_script(args: &[&str], dir: &Path) {
    let out = Command::new("python3")
        .arg(script())
        .args(args)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 (needed with scapy for these tests): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => {}
        Some(3) => panic!(
            "scapy is not installed: these tests need it (pip install scapy, \
             as scripts/bootstrap.sh does)\n{text}"
        ),
        _ => panic!("scenarios.py {} failed:\n{text}", args.join(" ")),
    }
}

/// The directory holding every scenario's input pcaps (`NAME/eth0-in.pcap`,
/// `NAME/eth1-in.pcap`), made once by `scenarios.py genall` and kept in
/// the target directory's scratch space under a name that changes with
/// the scripts.
fn inputs(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let mut h = DefaultHasher::new();
        for f in ["scenarios.py", "net.py"] {
            let p = script().with_file_name(f);
            std::fs::read(&p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .hash(&mut h);
        }
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let dir = tmp.join(format!("iprouter-inputs-{:016x}", h.finish()));
        if !dir.join("done").exists() {
            // Made aside and renamed, so concurrent test runs never see a
            // half-written set.
            let work = tempfile::tempdir_in(&tmp).unwrap();
            scenario_script(&["genall"], work.path());
            std::fs::write(work.path().join("done"), "").unwrap();
            let work = work.keep();
            if std::fs::rename(&work, &dir).is_err() {
                let _ = std::fs::remove_dir_all(&work); // another run won
            }
        }
        dir
    });
    dir.join(name)
}

/// What a run left: handler values, per-element drops, packets queued.
struct Outcome {
    handlers: BTreeMap<String, String>,
    drops: BTreeMap<String, u64>,
    queued: u64,
}

impl Outcome {
    fn u(&self, h: &str) -> u64 {
        let v = self
            .handlers
            .get(h)
            .unwrap_or_else(|| panic!("handler {h} not read"));
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{h} is not a number: {v:?}"))
    }
    fn drop_count(&self, elem: &str) -> u64 {
        self.drops.get(elem).copied().unwrap_or(0)
    }
    fn total_drops(&self) -> u64 {
        self.drops.values().sum()
    }

    /// Every packet read (plus those the router made: ARP queries and
    /// `created` others: redirect copies, extra fragments) left through a
    /// sink, was dropped with a count, or is queued (output Queues,
    /// ARPQuerier waiting lists).
    fn assert_conserved(&self, created: u64) {
        let input = self.u("in0.count") + self.u("in1.count");
        let queries = self.u("arpq0.queries") + self.u("arpq1.queries");
        let sinks = [
            "to0.count",
            "to1.count",
            "tohost.count",
            "other0.count",
            "other1.count",
        ]
        .iter()
        .map(|h| self.u(h))
        .sum::<u64>();
        let drops = self.total_drops();
        assert_eq!(
            input + queries + created,
            sinks + drops + self.queued,
            "conservation: read {input} + ARP queries {queries} + made {created} \
             != sinks {sinks} + drops {drops} + queued {}\ndrops: {:?}\nhandlers: {:#?}",
            self.queued,
            self.drops,
            self.handlers
        );
    }
}

/// Handlers every run reads.
fn handler_list() -> Vec<String> {
    let mut v: Vec<String> = [
        "cip.count",
        "cip.drops",
        "cip.drop_details",
        "tohost.count",
        "rt.table",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for i in 0..2 {
        for h in [
            "in{}.count",
            "to{}.count",
            "other{}.count",
            "out{}.length",
            "out{}.drops",
            "arpq{}.queries",
            "arpq{}.responses",
            "arpq{}.length",
            "arpq{}.drops",
            "db{}.drops",
            "dt{}.drops",
            "gio{}.drops",
            "fr{}.fragments",
            "fr{}.drops",
        ] {
            v.push(h.replace("{}", &i.to_string()));
        }
    }
    v
}

/// The defines pointing the router's files to scenario `name`'s inputs
/// and into `dir`, plus `extra`.
fn defines(name: &str, dir: &Path, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let f = |n: &str| dir.join(n).display().to_string();
    let i = |n: &str| inputs(name).join(n).display().to_string();
    let mut d = vec![
        ("IN0".to_string(), i("eth0-in.pcap")),
        ("IN1".to_string(), i("eth1-in.pcap")),
        ("OUT0".to_string(), f("eth0-out.pcap")),
        ("OUT1".to_string(), f("eth1-out.pcap")),
        ("HOST".to_string(), f("host.pcap")),
    ];
    d.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    d
}

/// Runs scenario `name` through conf/iprouter.click in-process on
/// `threads` threads, checks conservation and the outputs (scapy).
fn run(name: &str, extra: &[(&str, &str)], threads: usize, created: u64) -> Outcome {
    let text = std::fs::read_to_string(conf_path()).unwrap();
    run_conf("conf/iprouter.click", &text, name, extra, threads, created)
}

/// Runs scenario `name` through configuration `text`.
fn run_conf(
    conf: &str,
    text: &str,
    name: &str,
    extra: &[(&str, &str)],
    threads: usize,
    created: u64,
) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let src = paraclick_lang::Source {
        name: conf.into(),
        text: text.into(),
    };
    let opts = BuildOptions {
        threads,
        defines: defines(name, dir.path(), extra),
        pin: false,
        ..BuildOptions::default()
    };
    let router = Router::build(&src, &common::registry(), &opts).unwrap_or_else(|d| {
        panic!(
            "{conf}:\n{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    common::run_with_timeout(&router, 20);
    let mut handlers = BTreeMap::new();
    for h in handler_list() {
        let v = router
            .read_handler(&h)
            .unwrap_or_else(|e| panic!("reading {h}: {e}"));
        handlers.insert(h, v);
    }
    let o = Outcome {
        handlers,
        drops: router.drops().into_iter().collect(),
        queued: router.total_queued() as u64,
    };
    assert_eq!(
        router.pool_outstanding() as u64,
        o.queued,
        "packet buffers still held beyond the queued packets (a leak)"
    );
    o.assert_conserved(created);
    drop(router); // flushes the ToDump files
    scenario_script(&["check", name], dir.path());
    o
}

/// Runs scenario `name` with the paraclick binary, reading every handler
/// with `-h` and the drops with `--report drops`; checks conservation and
/// the outputs.
fn run_binary(name: &str, extra: &[(&str, &str)], created: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(common::bin());
    cmd.arg(conf_path())
        .arg("--no-pin")
        .args(["--report", "drops"]);
    for (k, v) in defines(name, dir.path(), extra) {
        cmd.arg(format!("{k}={v}"));
    }
    let hl = handler_list();
    for h in &hl {
        cmd.args(["-h", h]);
    }
    let out = cmd.output().expect("run paraclick");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "paraclick failed:\n{stdout}{stderr}");
    // `-h` output: "NAME:\nVALUE\n", separated by blank lines.
    let mut handlers = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in stdout.lines() {
        if let Some(h) = line.strip_suffix(':').filter(|h| hl.iter().any(|x| x == h)) {
            cur = Some(h.to_string());
            handlers.insert(h.to_string(), String::new());
        } else if let Some(h) = &cur {
            let v = handlers.get_mut(h).unwrap();
            v.push_str(line);
            v.push('\n');
        }
    }
    for h in &hl {
        assert!(handlers.contains_key(h), "no value for {h} in:\n{stdout}");
    }
    let mut drops = BTreeMap::new();
    for line in stderr.lines() {
        if let Some((e, n)) = line.rsplit_once(": ") {
            if let Some(n) = n
                .strip_suffix(" dropped")
                .and_then(|n| n.parse::<u64>().ok())
            {
                drops.insert(e.to_string(), n);
            }
        }
    }
    let mut o = Outcome {
        handlers,
        drops,
        queued: 0,
    };
    o.queued = ["out0.length", "out1.length", "arpq0.length", "arpq1.length"]
        .iter()
        .map(|h| o.u(h))
        .sum();
    o.assert_conserved(created);
    scenario_script(&["check", name], dir.path());
    o
}

/// An empty pcap file (microseconds, Ethernet).
fn empty_pcap() -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h
}

/// conf/iprouter.click is exactly what make-ip-conf writes for the two
/// example interfaces (PARACLICK_BLESS=1 rewrites it).
#[test]
fn conf_file_is_the_generated_one() {
    let want = generate(&example_ifaces(2), Device::Pcap);
    let path = conf_path();
    if std::env::var_os("PARACLICK_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "conf/iprouter.click differs from make-ip-conf's output (rerun with PARACLICK_BLESS=1)"
    );
}

/// `paraclick check` accepts the generated configurations for 2, 3 and 8
/// interfaces (with their input files present).
#[test]
fn paraclick_check_accepts_generated_configs() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_pcap();
    for n in [2, 3, 8] {
        let conf = dir.path().join(format!("r{n}.click"));
        std::fs::write(&conf, generate(&example_ifaces(n), Device::Pcap)).unwrap();
        let mut args = vec!["check".to_string(), conf.display().to_string()];
        for i in 0..n {
            let p = dir.path().join(format!("in{i}.pcap"));
            std::fs::write(&p, &empty).unwrap();
            args.push(format!("IN{i}={}", p.display()));
            args.push(format!(
                "OUT{i}={}",
                dir.path().join(format!("out{i}.pcap")).display()
            ));
        }
        args.push(format!("HOST={}", dir.path().join("host.pcap").display()));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = common::paraclick(&a);
        assert!(
            out.status.success(),
            "{n} interfaces: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(": ok ("));
    }
}

/// Forwarding both ways: TTL decremented, checksum updated, MACs
/// rewritten; a packet waiting for ARP is released by the reply; an
/// unknown next hop gets an ARP query and its packet waits.
#[test]
fn forwards_with_arp() {
    let o = run("forward", &[], 1, 0);
    assert_eq!(o.u("arpq1.queries"), 2, "queries for 2.0.0.2 and 2.0.0.99");
    assert_eq!(o.u("arpq0.queries"), 0, "1.0.0.2's reply came first");
    assert_eq!(o.u("arpq1.length"), 1, "the packet for 2.0.0.99 waits");
    assert_eq!(o.u("arpq0.responses") + o.u("arpq1.responses"), 2);
    assert_eq!(o.u("to1.count"), 5);
    assert_eq!(o.u("to0.count"), 1);
    assert_eq!(o.u("cip.drops"), 0);
}

/// A generated three-interface router forwards the same way between its
/// first two interfaces (the third reads an empty file).
#[test]
fn three_interface_router_forwards() {
    let dir = tempfile::tempdir().unwrap();
    let in2 = dir.path().join("eth2-in.pcap");
    std::fs::write(&in2, empty_pcap()).unwrap();
    let in2 = in2.display().to_string();
    let out2 = dir.path().join("eth2-out.pcap").display().to_string();
    let text = generate(&example_ifaces(3), Device::Pcap);
    let o = run_conf(
        "make-ip-conf (3 interfaces)",
        &text,
        "forward",
        &[("IN2", &in2), ("OUT2", &out2)],
        1,
        0,
    );
    assert_eq!(o.u("to1.count"), 5);
    assert_eq!(o.u("to0.count"), 1);
}

/// The same on two threads (the input files are then read in parallel, so
/// the next hop's ARP reply may come before the packet that needs it).
#[test]
fn forwards_with_arp_on_two_threads() {
    let o = run("forward_mt", &[], 2, 0);
    let q = o.u("arpq1.queries");
    assert!(q == 1 || q == 2, "{q} queries");
    assert_eq!(o.u("to1.count"), q + 3);
    assert_eq!(o.u("to0.count"), 1);
    assert_eq!(o.u("arpq1.length"), 1);
}

/// ARP requests for the router's addresses are answered on their
/// interface; others (another address, eth0's address asked on eth1) are not.
#[test]
fn answers_arp_requests() {
    let o = run("arp_responder", &[], 1, 0);
    assert_eq!(o.u("to0.count"), 1);
    assert_eq!(o.u("to1.count"), 1);
    assert_eq!(o.drop_count("ar0") + o.drop_count("ar1"), 2);
}

/// TTL 1 and 0 get ICMP time exceeded from the incoming interface's
/// address, quoting the packet, except ICMP errors and later fragments;
/// TTL 2 is forwarded with TTL 1; TTL 1 to the router is fine.
#[test]
fn time_exceeded() {
    let o = run("ttl", &[], 1, 0);
    assert_eq!(o.u("dt1.drops"), 5);
    assert_eq!(o.u("to0.count"), 3);
    assert_eq!(o.u("tohost.count"), 1);
}

/// A DF packet bigger than eth1's MTU (576) gets "fragmentation needed"
/// with next-hop MTU 576; one of exactly 576 bytes goes through.
#[test]
fn needfrag_for_df_packets() {
    let o = run("needfrag", &[("MTU1", "576")], 1, 0);
    assert_eq!(o.u("fr1.drops"), 1);
    assert_eq!(o.u("fr1.fragments"), 0);
}

/// Packets bigger than the MTU without DF are fragmented; the fragments
/// reassemble to the original.
#[test]
fn fragments_to_mtu() {
    // 1428 bytes make 3 fragments, 1041 bytes 2, 1240 with options 3: 5
    // more packets.
    let o = run("fragment", &[("MTU1", "576")], 1, 5);
    assert_eq!(o.u("fr1.fragments"), 8);
    assert_eq!(o.u("to1.count"), 8);
}

/// A packet that leaves on the interface it came in on is forwarded and
/// its source gets an ICMP host redirect naming the next hop.
#[test]
fn redirects() {
    let o = run("redirect", &[], 1, 1);
    assert_eq!(o.u("to0.count"), 2);
}

/// Bad IP options get a parameter problem pointing at the bad byte; a good
/// Record Route option gets the outgoing interface's address.
#[test]
fn parameter_problem() {
    let o = run("param_problem", &[], 1, 0);
    assert_eq!(o.u("gio1.drops"), 2);
    assert_eq!(o.u("to1.count"), 3);
}

/// Packets for the router (its addresses, broadcasts, a network address)
/// go to the host output, unchanged; nothing is forwarded.
#[test]
fn packets_for_the_router_go_to_the_host() {
    let o = run("to_router", &[], 1, 0);
    assert_eq!(o.u("tohost.count"), 5);
}

/// make-ip-conf's Linux configuration (its FromDevice/ToDevice replaced by
/// FromDump/ToDump) answers pings to the router's addresses itself and
/// discards the other packets for the router.
#[test]
fn linux_configuration_answers_pings() {
    let mut text = generate(&example_ifaces(2), Device::Linux);
    for i in 0..2 {
        text = text
            .replace(
                &format!("FromDevice(eth{i}, SNIFFER false)"),
                &format!("FromDump($IN{i}, STOP true)"),
            )
            .replace(&format!("ToDevice(eth{i})"), &format!("ToDump($OUT{i})"));
    }
    text.push_str("DriverManager(pause 2, wait 0.1s, stop);\n");
    let o = run_conf("make-ip-conf (Linux)", &text, "ping_linux", &[], 1, 0);
    assert_eq!(o.u("to0.count"), 2);
    assert_eq!(o.u("tohost.count"), 3);
}

/// Bad checksum, version, header length, total length, tiny: dropped and
/// counted per reason by CheckIPHeader (read with the binary's `-h`).
#[test]
fn bad_headers_dropped_and_counted() {
    let o = run_binary("bad_headers", &[], 0);
    assert_eq!(o.u("cip.drops"), 6);
    assert_eq!(o.u("cip.count"), 0);
    let details = &o.handlers["cip.drop_details"];
    for (n, why) in [
        (1, "tiny packet"),
        (1, "bad IP version"),
        (1, "bad IP header length"),
        (2, "bad IP length"),
        (1, "bad IP checksum"),
        (0, "bad source address"),
    ] {
        let line = details
            .lines()
            .find(|l| l.trim_end().ends_with(why))
            .unwrap_or_else(|| panic!("no '{why}' in drop_details:\n{details}"));
        let count: u64 = line.split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(count, n, "{why}: {line}");
    }
    assert_eq!(o.drop_count("cip"), 6);
}

/// Click's bad sources (0.0.0.0, 255.255.255.255, the interfaces'
/// broadcasts) are dropped by CheckIPHeader, link-level
/// broadcasts and multicasts by DropBroadcasts, frames for other hosts by
/// HostEtherFilter; the good packet goes through.
#[test]
fn martians_and_broadcasts_dropped() {
    let o = run_binary("martians", &[], 0);
    let details = &o.handlers["cip.drop_details"];
    let bad_src = details
        .lines()
        .find(|l| l.contains("bad source address"))
        .unwrap();
    assert_eq!(bad_src.split_whitespace().next(), Some("4"), "{details}");
    assert_eq!(o.u("db1.drops"), 2);
    assert_eq!(o.drop_count("hf0"), 1);
    assert_eq!(o.u("to1.count"), 1);
}

/// Every scenario's packets at once on two threads: every packet is
/// accounted for.
#[test]
fn conservation_with_everything() {
    // Extra packets made: 5 fragments beyond the originals, 1 redirect copy.
    let o = run("mixed", &[("MTU1", "576")], 2, 6);
    assert!(o.total_drops() > 0 && o.u("tohost.count") > 0);
}
