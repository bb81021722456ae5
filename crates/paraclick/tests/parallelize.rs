//! Semantics of `paraclick parallelize` (issue 18): for the IP router
//! (conf/iprouter-pcap.click), the NAT (conf/nat-pcap.click) and the VPN
//! (conf/vpn-pcap.click), every candidate the tool considers at 2 and 4
//! threads, run on a pcap trace, gives the original's outputs: the same
//! packets per output, each flow's in its original order. Packets carry
//! their flow's number and sequence in their payload ("FLOW nnnn SEQ
//! nnnn"), which is how they are told apart after rewriting.
//!
//! Where an element with state shared across flows is kept whole, flows
//! may reach it in another interleaving, and what it assigns by arrival
//! order changes, not the meaning: the NAT's public ports (each flow must
//! still have one port of its own: checked) and the ESP sequence numbers
//! and ciphertext (the tunnel's output is decrypted by paraclick and the
//! inner packets compared).

mod common;

use common::pcap::{csum, ether, read_pcap, udp, write_pcap};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Packets per flow (from the payload), in order; packets without a
/// flow mark under u32::MAX. `norm` blanks what may legally differ.
fn by_flow(pkts: &[Vec<u8>], norm: &dyn Fn(&mut Vec<u8>)) -> BTreeMap<u32, Vec<Vec<u8>>> {
    let mut m: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for p in pkts {
        let flow = p
            .windows(5)
            .position(|w| w == b"FLOW ")
            .and_then(|i| std::str::from_utf8(&p[i + 5..i + 9]).ok()?.parse().ok())
            .unwrap_or(u32::MAX);
        let mut q = p.clone();
        norm(&mut q);
        m.entry(flow).or_default().push(q);
    }
    m
}

/// Runs paraclick with its line-term cache in a file of this test run's
/// own (the system model stays the user's: calibrating it again would
/// take half a minute per test).
fn run_ok(args: &[&str]) -> String {
    // Under target/tmp (cargo's scratch directory for integration
    // tests), not the system's /tmp, which kept one file per test run.
    let terms = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "paraclick-test-line-terms-{}.json",
        std::process::id()
    ));
    let o = std::process::Command::new(common::bin())
        .args(args)
        .env("PARACLICK_LINE_TERMS", &terms)
        .current_dir(env!("CARGO_MANIFEST_DIR").to_string() + "/../..")
        .output()
        .expect("run paraclick");
    assert!(
        o.status.success(),
        "paraclick {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

struct Case {
    conf: &'static str,
    /// (define name, file) of the inputs, written by `inputs`.
    outs: Vec<&'static str>,
    defines: Vec<(String, String)>,
    /// Handlers the user reads (Counters' counts): every candidate's
    /// must read as the original's.
    counts: Vec<&'static str>,
}

/// The values `-h` printed, in order: `NAME:` then the value.
fn handler_values(out: &str, names: &[&str]) -> Vec<String> {
    // One handler prints its value alone (Click's driver); several print
    // `NAME:` before each value.
    if let [_] = names {
        return vec![out.trim().to_string()];
    }
    names
        .iter()
        .map(|h| {
            let mut lines = out.lines();
            lines.find(|l| *l == format!("{h}:"));
            lines.next().unwrap_or("").trim().to_string()
        })
        .collect()
}

fn defines_for(dir: &Path, ins: &[(&str, &Path)], outs: &[&str]) -> Vec<(String, String)> {
    let mut d: Vec<(String, String)> = ins
        .iter()
        .map(|(k, p)| (k.to_string(), p.display().to_string()))
        .collect();
    for o in outs {
        d.push((
            o.to_string(),
            dir.join(format!("{o}.pcap")).display().to_string(),
        ));
    }
    d
}

/// Runs the original once (1 thread) and every candidate at `threads`,
/// comparing each output per flow after `post` (decryption) and `norm`.
fn check(
    case: &Case,
    work: &Path,
    threads: usize,
    post: &dyn Fn(&Path, &str) -> Vec<Vec<u8>>,
    norm: &dyn Fn(&mut Vec<u8>),
    per_flow_port: bool,
) -> Vec<String> {
    let conf = common::root().join(case.conf).display().to_string();
    let orig = work.join("orig");
    std::fs::create_dir_all(&orig).unwrap();
    let mut args: Vec<String> = vec![conf.clone()];
    for (k, v) in &case.defines {
        args.push(format!("{k}={v}"));
    }
    for o in &case.outs {
        args.push(format!("{o}={}", orig.join(format!("{o}.pcap")).display()));
    }
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let mut with_h = a.clone();
    for h in &case.counts {
        with_h.extend(["-h", h]);
    }
    let counts = handler_values(&run_ok(&with_h), &case.counts);
    let want: Vec<_> = case
        .outs
        .iter()
        .map(|o| by_flow(&post(&orig, o), norm))
        .collect();
    assert!(
        want.iter()
            .map(|w| w.values().map(|v| v.len()).sum::<usize>())
            .sum::<usize>()
            > 0,
        "{}: the original wrote nothing",
        case.conf
    );
    // The candidates, every one from one profile (`--emit-all`): a
    // second run's profile may differ, and with it which combination
    // of splits the model finds worth a row.
    let emit = work.join(format!("j{threads}-emit"));
    std::fs::create_dir_all(&emit).unwrap();
    let table = {
        let j = threads.to_string();
        let mut args: Vec<String> = ["parallelize", "-j", &j, "--duration", "0.1", "--emit-all"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(emit.display().to_string());
        args.push(conf.clone());
        for (kk, v) in &case.defines {
            args.push(format!("{kk}={v}"));
        }
        for o in &case.outs {
            args.push(format!("{o}={}", emit.join(format!("{o}.pcap")).display()));
        }
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        run_ok(&a)
    };
    let ncand = (0..)
        .take_while(|k| emit.join(format!("candidate-{k}.click")).exists())
        .count();
    assert!(ncand >= 2, "{}: too few candidates:\n{table}", case.conf);
    let mut kinds = Vec::new();
    for k in 0..ncand {
        let dir = work.join(format!("j{threads}-c{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        // The candidate, writing its outputs to its own directory.
        let text = std::fs::read_to_string(emit.join(format!("candidate-{k}.click")))
            .unwrap()
            .replace(
                &format!("{}/", emit.display()),
                &format!("{}/", dir.display()),
            );
        let name = text.lines().next().unwrap_or("").to_string();
        // Every rewrite is the user's own text, changed (none of these
        // configurations has a split inside a compound).
        assert!(
            !text.contains("written flattened"),
            "{} candidate {k}: {}",
            case.conf,
            text.lines().nth(1).unwrap_or("")
        );
        // Marked where the rewrite replicated a Counter (its original
        // summing the replicas' counts).
        kinds.push(if text.contains("REPLICAS ") {
            format!("{name} [REPLICAS]")
        } else {
            name.clone()
        });
        let file = dir.join("rewritten.click");
        std::fs::write(&file, &text).unwrap();
        let j = threads.to_string();
        // Read with the defines, as the user's own text (a split's
        // too) needs them; a flattened one has them substituted.
        let mut given: Vec<String> = case
            .defines
            .iter()
            .map(|(kk, v)| format!("{kk}={v}"))
            .collect();
        for o in &case.outs {
            given.push(format!("{o}={}", dir.join(format!("{o}.pcap")).display()));
        }
        let mut run = vec!["-j", &j, file.to_str().unwrap()];
        run.extend(given.iter().map(String::as_str));
        for h in &case.counts {
            run.extend(["-h", h]);
        }
        let got = handler_values(&run_ok(&run), &case.counts);
        assert_eq!(
            got, counts,
            "{} -j {threads} candidate {k} ({name}): {:?}",
            case.conf, case.counts
        );
        for (o, w) in case.outs.iter().zip(&want) {
            let got = by_flow(&post(&dir, o), norm);
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                w.keys().collect::<Vec<_>>(),
                "{} -j {threads} candidate {k} ({name}): flows of {o}",
                case.conf
            );
            for (f, pk) in w {
                assert!(
                    got[f] == *pk,
                    "{} -j {threads} candidate {k} ({name}): flow {f} on {o}: {} packets, want {} (or order differs)",
                    case.conf,
                    got[f].len(),
                    pk.len()
                );
            }
            if per_flow_port {
                // Each flow keeps one public port of its own.
                let raw = by_flow(&post(&dir, o), &|_| {});
                let mut seen = std::collections::HashMap::new();
                for (f, pk) in raw.iter().filter(|(f, _)| **f != u32::MAX) {
                    let ports: std::collections::BTreeSet<_> =
                        pk.iter().map(|p| (p[20], p[21])).collect();
                    assert_eq!(ports.len(), 1, "flow {f} has ports {ports:?}");
                    let port = *ports.iter().next().unwrap();
                    assert!(seen.insert(port, *f).is_none(), "port {port:?} shared");
                }
            }
        }
    }
    // The split rewrites were among those checked.
    assert!(
        kinds.iter().any(|k| k.contains("split")),
        "{}: no split candidate: {kinds:?}\n{table}",
        case.conf
    );
    kinds
}

/// A candidate whose name contains `what` was among those `check` ran.
fn require(kinds: &[String], what: &str) {
    assert!(kinds.iter().any(|k| k.contains(what)), "{what}: {kinds:?}");
}

fn workdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("paraclick-par-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn plain(dir: &Path, o: &str) -> Vec<Vec<u8>> {
    read_pcap(&dir.join(format!("{o}.pcap")))
}

const FLOWS: u32 = 24;
const PER_FLOW: u32 = 40;

#[test]
fn ip_router_rewrites_keep_every_flow() {
    let w = workdir("ip");
    let eth0 = [0, 0, 0xc0, 0xae, 0x67, 0xef];
    let eth1 = [0, 0, 0xc0, 0x4f, 0x71, 0xef];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for s in 0..PER_FLOW {
        for f in 0..FLOWS {
            let h = (f % 6 + 2) as u8;
            a.push(ether(
                eth0,
                [2, 0, 0, 0, 0, 1],
                udp([1, 0, 0, h], [2, 0, 0, 2], 1000 + f as u16, 53, f, s),
            ));
            b.push(ether(
                eth1,
                [2, 0, 0, 0, 0, 2],
                udp([2, 0, 0, h], [1, 0, 0, 2], 2000 + f as u16, 80, 100 + f, s),
            ));
        }
    }
    write_pcap(&w.join("in0.pcap"), 1, &a);
    write_pcap(&w.join("in1.pcap"), 1, &b);
    let case = Case {
        conf: "conf/iprouter-pcap.click",
        outs: vec!["OUT0", "OUT1"],
        counts: vec!["out0.count", "out1.count"],
        defines: defines_for(
            &w,
            &[("IN0", &w.join("in0.pcap")), ("IN1", &w.join("in1.pcap"))],
            &[],
        ),
    };
    for j in [2, 4] {
        let kinds = check(&case, &w, j, &plain, &|_| {}, false);
        // Both interfaces' flow splits at once (a combination) were
        // among the candidates checked.
        require(
            &kinds,
            &format!("flow split after each of src0, src1 into {j}"),
        );
    }
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn nat_rewrites_keep_every_flow_and_its_port() {
    let w = workdir("nat");
    let mut a = Vec::new();
    for s in 0..PER_FLOW {
        for f in 0..FLOWS {
            a.push(udp(
                [10, 0, 0, (f % 5 + 2) as u8],
                [198, 51, 100, 7],
                5000 + f as u16,
                53,
                f,
                s,
            ));
        }
    }
    write_pcap(&w.join("priv.pcap"), 101, &a);
    write_pcap(&w.join("pub.pcap"), 101, &[]);
    let case = Case {
        conf: "conf/nat-pcap.click",
        outs: vec!["PUB_OUT", "PRIV_OUT"],
        counts: vec![],
        defines: defines_for(
            &w,
            &[
                ("PRIV_IN", &w.join("priv.pcap")),
                ("PUB_IN", &w.join("pub.pcap")),
            ],
            &[],
        ),
    };
    // The public source port (assigned in arrival order at the one
    // allocator) and the UDP checksum covering it may differ.
    let norm = |p: &mut Vec<u8>| {
        if p.len() >= 28 {
            p[20] = 0;
            p[21] = 0;
            p[26] = 0;
            p[27] = 0;
        }
    };
    for j in [2, 4] {
        check(&case, &w, j, &plain, &norm, true);
    }
    let _ = std::fs::remove_dir_all(&w);
}

const KEY_OUT: &str = "0x00112233445566778899aabbccddeeff01020304";
const KEY_IN: &str = "0xffeeddccbbaa99887766554433221100a0b0c0d0";

/// The inner packets of an ESP pcap, decrypted by paraclick.
fn decrypt(esp: &Path, spi: &str, key: &str, src: &str, dst: &str, out: &Path) -> Vec<Vec<u8>> {
    let conf = format!(
        "FromDump({}, STOP true) -> Strip(14) -> CheckIPHeader -> IPsecESPTunnelUnencap({spi}, aes128gcm16, {key}, {src}, {dst}) -> ToDump({}, ENCAP IP);",
        esp.display(),
        out.display()
    );
    run_ok(&["-e", &conf]);
    read_pcap(out)
}

#[test]
fn vpn_rewrites_keep_every_flow() {
    let w = workdir("vpn");
    let lan = [2, 0, 0, 0, 0, 1];
    let mut plain_in = Vec::new();
    let mut peer_plain = Vec::new();
    for s in 0..PER_FLOW {
        for f in 0..FLOWS {
            plain_in.push(ether(
                lan,
                [2, 0, 0, 0, 0, 9],
                udp(
                    [10, 0, 0, (f % 5 + 2) as u8],
                    [10, 1, 0, 1],
                    4000 + f as u16,
                    443,
                    f,
                    s,
                ),
            ));
            peer_plain.push(ether(
                lan,
                [2, 0, 0, 0, 0, 9],
                udp(
                    [10, 1, 0, 1],
                    [10, 0, 0, (f % 5 + 2) as u8],
                    443,
                    4000 + f as u16,
                    100 + f,
                    s,
                ),
            ));
        }
    }
    write_pcap(&w.join("plain-in.pcap"), 1, &plain_in);
    write_pcap(&w.join("peer-plain.pcap"), 1, &peer_plain);
    // The peer's ESP packets, made by paraclick as the peer.
    let peer = format!(
        "FromDump({}, STOP true) -> Strip(14) -> CheckIPHeader -> IPsecESPTunnelEncap(0x2002, aes128gcm16, {KEY_IN}, 198.51.100.1, 192.0.2.1) -> EtherEncap(0x0800, 02:00:00:00:00:05, 02:00:00:00:00:01) -> ToDump({});",
        w.join("peer-plain.pcap").display(),
        w.join("esp-in.pcap").display()
    );
    run_ok(&["-e", &peer]);
    let case = Case {
        conf: "conf/vpn-pcap.click",
        outs: vec!["ESP_OUT", "PLAIN_OUT"],
        counts: vec![],
        defines: defines_for(
            &w,
            &[
                ("PLAIN_IN", &w.join("plain-in.pcap")),
                ("ESP_IN", &w.join("esp-in.pcap")),
            ],
            &[],
        ),
    };
    let post = |dir: &Path, o: &str| -> Vec<Vec<u8>> {
        let f = dir.join(format!("{o}.pcap"));
        if o == "ESP_OUT" {
            decrypt(
                &f,
                "0x1001",
                KEY_OUT,
                "192.0.2.1",
                "198.51.100.1",
                &dir.join("esp-out-inner.pcap"),
            )
        } else {
            read_pcap(&f)
        }
    };
    for j in [2, 4] {
        check(&case, &w, j, &post, &|_| {}, false);
    }
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn qos_rewrites_keep_every_flow() {
    // Flows in three DSCP classes (EF, AF11, best effort): whatever the
    // rewrite, each flow keeps all its packets in their order.
    let w = workdir("qos");
    let mut a = Vec::new();
    for s in 0..PER_FLOW {
        for f in 0..FLOWS {
            let mut ip = udp(
                [10, 0, 0, (f % 7 + 2) as u8],
                [10, 1, 0, 9],
                3000 + f as u16,
                4000 + (f % 3) as u16,
                f,
                s,
            );
            let dscp: u8 = [46, 10, 0][(f % 3) as usize];
            ip[1] = dscp << 2;
            ip[10..12].copy_from_slice(&[0, 0]);
            let ck = csum(&ip[..20]);
            ip[10..12].copy_from_slice(&ck.to_be_bytes());
            a.push(ether([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 0, 1], ip));
        }
    }
    write_pcap(&w.join("in.pcap"), 1, &a);
    let case = Case {
        conf: "conf/qos-pcap.click",
        outs: vec!["OUT"],
        // Replicated by the flow split (the inputs' counters) and by the
        // scheduler replication (out): summed under their names.
        counts: vec![
            "ef_in.count",
            "af_in.count",
            "be_in.count",
            "out.count",
            "out.byte_count",
        ],
        defines: defines_for(&w, &[("IN", &w.join("in.pcap"))], &[]),
    };
    for j in [2, 4] {
        let kinds = check(&case, &w, j, &plain, &|_| {}, false);
        // The priority scheduler replicated per flow group (SMP Click's
        // replicated QoS) was among the candidates checked.
        require(&kinds, &format!("scheduler ps replicated into {j}"));
        // Counters were replicated, and their counts read as the
        // original's (checked in `check`).
        assert!(
            kinds.iter().filter(|k| k.contains("[REPLICAS]")).count() >= 2,
            "-j {j}: {kinds:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&w);
}

/// `parallelize -j 4` of a device configuration, its devices named so
/// that no test host has them (the profile cannot run).
fn plan_without_devices(conf: &str) -> String {
    run_ok(&[
        "parallelize",
        "-j",
        "4",
        "--duration",
        "0.1",
        conf,
        "DEV0=paraclick-none0",
        "DEV1=paraclick-none1",
    ])
}

#[test]
fn a_device_configuration_without_its_devices_is_planned_from_its_tasks() {
    // The issue's own example: conf/vpn-gateway-veth.click names devices
    // r0 and r1, which this machine lacks (named so that no test host has
    // them). The profile cannot run, so every element counts 100 cycles;
    // the plan still has the router's four device tasks, places them
    // and considers splits, and the configuration it writes checks.
    let text = plan_without_devices("conf/vpn-gateway-veth.click");
    let table: Vec<&str> = text.lines().filter(|l| l.starts_with("//")).collect();
    assert!(
        table
            .iter()
            .any(|l| l.contains("no profile") && l.contains("paraclick-none0")),
        "{text}"
    );
    let chosen = table.iter().find(|l| l.starts_with("// *")).unwrap();
    for task in ["in0:", "to0:", "in1:", "to1:"] {
        assert!(chosen.contains(task), "{chosen}");
    }
    let pps: f64 = chosen[4..]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(pps > 0.0, "{chosen}");
    // Its ESP SA may not be fed by several threads: neither a flow split
    // nor a device fanout feeds it, and the notes say so.
    for kind in ["flow split", "device fanout"] {
        assert!(
            table
                .iter()
                .any(|l| l.contains(&format!("in0: no {kind}")) && l.contains("ESP")),
            "{kind}: {text}"
        );
        assert!(
            !table.iter().any(|l| l.contains(&format!("{kind} of in0"))
                || l.contains(&format!("{kind} after in0"))),
            "{kind}: {text}"
        );
    }
    let dir = workdir("devices");
    let file = dir.join("vpn-4.click");
    std::fs::write(&file, &text).unwrap();
    run_ok(&["check", file.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_router_on_devices_is_split_by_the_devices_own_receive_queues() {
    // conf/iprouter-veth.click at -j 4 (devices absent, every element
    // counted alike): two FromDevice tasks cannot fill four threads; the
    // plan splits each device into four queues of a PACKET_FANOUT HASH
    // group, each with a replica of its path, replica r on thread r, as
    // conf/iprouter-veth-2q.click does by hand. (tests/netns/run.sh runs
    // the -j 2 plan between real hosts.)
    let text = plan_without_devices("conf/iprouter-veth.click");
    let chosen = text.lines().find(|l| l.starts_with("// *")).unwrap();
    assert!(
        chosen.contains("device fanout of in0, in1 into 4"),
        "{text}"
    );
    // Written as the user's file changed: each FromDevice keeps its
    // arguments as written (`$DEV0`: the device given on the command
    // line) and adds its queue; its copies are written so too.
    for (dev, name) in [("$DEV0", "in0"), ("$DEV1", "in1")] {
        for r in 0..4 {
            let el = if r == 0 {
                name.to_string()
            } else {
                format!("{name}_r{r}")
            };
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{el} :: FromDevice(")))
                .unwrap_or_else(|| panic!("{el}: {text}"));
            assert!(line.contains(&format!("({dev}, BURST $BURST, ")), "{line}");
            let want = if r == 0 {
                format!(
                    "QUEUE 0, N_QUEUES 4, FANOUT HASH, REPLICAS {name}_r1 {name}_r2 {name}_r3);"
                )
            } else {
                format!("QUEUE {r}, N_QUEUES 4, FANOUT HASH)")
            };
            assert!(line.ends_with(&want), "{line}");
        }
    }
    let sched = text
        .lines()
        .find(|l| l.starts_with("par_sched :: StaticThreadSched("))
        .unwrap();
    for pin in [
        "in0 0", "in0_r1 1", "in0_r2 2", "in0_r3 3", "in1 0", "in1_r3 3",
    ] {
        assert!(sched.contains(pin), "{pin}: {sched}");
    }
    // Each replica has its own copy of the stateless input path.
    assert!(
        text.contains("FANOUT HASH)\n    -> hf0_r2 :: HostEtherFilter(if0, "),
        "{text}"
    );
    let dir = workdir("fanout");
    let file = dir.join("iprouter-4.click");
    std::fs::write(&file, &text).unwrap();
    run_ok(&[
        "check",
        file.to_str().unwrap(),
        "DEV0=paraclick-none0",
        "DEV1=paraclick-none1",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_placement_is_written_as_the_users_own_file_and_one_line() {
    // conf/qos-bench.click at -j 2, its placement candidate (#1) picked:
    // the output is the table (comments), the file exactly as written
    // (its define($N ...), comments and names kept), and one
    // StaticThreadSched line, so `bench --mlffr ... N=...` can run it.
    let conf = "conf/qos-bench.click";
    let orig = std::fs::read_to_string(common::root().join(conf)).unwrap();
    let args = ["parallelize", "-j", "2", "--duration", "0.1", "--no-check"];
    let text = run_ok(&[&args[..], &["--candidate", "1", conf]].concat());
    let k = text.find(&orig).unwrap_or_else(|| panic!("{text}"));
    assert!(text[..k].lines().all(|l| l.starts_with("// ")), "{text}");
    assert!(text[..k].contains("// *1 "), "{text}");
    let tail: Vec<&str> = text[k + orig.len()..].lines().collect();
    assert_eq!(tail.len(), 3, "{tail:?}");
    assert_eq!(tail[0], "");
    assert_eq!(tail[1], "// paraclick parallelize -j 2: placement");
    assert!(
        tail[2].starts_with("par_sched :: StaticThreadSched(")
            && tail[2].contains("src ")
            && tail[2].contains("uq "),
        "{tail:?}"
    );
    let dir = workdir("own-text");
    let file = dir.join("qos-2.click");
    std::fs::write(&file, &text).unwrap();
    let file = file.to_str().unwrap();
    // Its define still works: the Script stops at N, not at the file's
    // 200000.
    let out = run_ok(&["-j", "2", file, "N=3000", "-h", "out.count"]);
    let count: u64 = out.lines().next().unwrap().trim().parse().unwrap();
    assert!((3000..200_000).contains(&count), "{out}");
    short_mlffr(file);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A short loss-free rate search of `file` at -j 2 (its Script never
/// stops it: N is huge), which must report an MLFFR.
fn short_mlffr(file: &str) {
    let out = run_ok(&[
        "bench",
        "--mlffr",
        "-j",
        "2",
        "--warmup",
        "0.05",
        "--trial",
        "0.2",
        file,
        "N=1000000000000",
    ]);
    assert!(out.contains("MLFFR"), "{out}");
}

/// The row of `table` (`// [ *]K  PPS  FLOOR  NAME  PLACEMENT`) whose
/// name starts with `what`: its number.
fn row(table: &str, what: &str) -> String {
    table
        .lines()
        .filter_map(|l| l.strip_prefix("// ")?.get(1..))
        .find(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(&format!("  {what}")))
        .unwrap_or_else(|| panic!("no {what}: {table}"))
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// A rewrite written as the user's file: the comment lines above it
/// (what changed, the table), the lines of `orig` it changed, `(line,
/// now)`, and the block it added at the end.
fn own_text_diff(out: &str, orig: &str) -> (String, Vec<(usize, String)>, Vec<String>) {
    let first = orig.lines().next().unwrap();
    let k = out
        .find(&format!("{first}\n"))
        .unwrap_or_else(|| panic!("not the user's text: {out}"));
    let head = out[..k].to_string();
    assert!(head.lines().all(|l| l.starts_with("//")), "{head}");
    let (o, t): (Vec<&str>, Vec<&str>) = (orig.lines().collect(), out[k..].lines().collect());
    assert!(t.len() >= o.len(), "{out}");
    let changed = o
        .iter()
        .zip(&t)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (_, b))| (i + 1, b.to_string()))
        .collect();
    (
        head,
        changed,
        t[o.len()..].iter().map(|l| l.to_string()).collect(),
    )
}

/// The packets `file` (with `defines`) counts at `-j 2`: the values of
/// `handlers`.
fn counts(file: &str, defines: &[&str], handlers: &[&str]) -> Vec<String> {
    let mut args = vec!["-j", "2", file];
    args.extend(defines);
    for h in handlers {
        args.extend(["-h", h]);
    }
    handler_values(&run_ok(&args), handlers)
}

#[test]
fn a_split_is_written_as_the_users_file_changed_where_it_must() {
    // conf/qos-bench.click's splits at -j 2, each written as the file
    // itself (its define, comments, names and layout kept) with the
    // lines the split changes changed and a block at the end: the diff
    // is exactly that. Each rewrite checks, and runs with the defines
    // given on the command line (N=3000: the Script stops there).
    let conf = "conf/qos-bench.click";
    let orig = std::fs::read_to_string(common::root().join(conf)).unwrap();
    let args = ["parallelize", "-j", "2", "--duration", "0.1", "--no-check"];
    let table = run_ok(&[&args[..], &[conf]].concat());
    let dir = workdir("own-split");
    let line = |n: usize| orig.lines().nth(n - 1).unwrap().to_string();
    for what in ["pipeline split", "flow split", "scheduler ps replicated"] {
        let k = row(&table, what);
        let out = run_ok(&[&args[..], &["--candidate", &k, conf]].concat());
        let (head, changed, tail) = own_text_diff(&out, &orig);
        let first = head.lines().next().unwrap();
        assert!(
            first.starts_with(&format!("// {conf} rewritten for -j 2: {what}")),
            "{first}"
        );
        assert_eq!(
            head.lines().nth(1),
            Some("// the file as written, changed only here:")
        );
        assert_eq!(tail[0], "", "{tail:?}");
        assert!(tail[1].starts_with(&format!("// paraclick parallelize -j 2: {what}")));
        assert!(tail
            .last()
            .unwrap()
            .starts_with("par_sched :: StaticThreadSched("));
        match what {
            "pipeline split" => {
                // One connection of src's path, on its line.
                assert_eq!(changed.len(), 1, "{changed:?}");
                let (n, now) = &changed[0];
                let ins = format!(" par_q{k} :: Queue(1000) -> par_u{k} :: Unqueue(BURST 32) ->");
                assert_eq!(now.replacen(&ins, "", 1), line(*n), "{now}");
                assert_eq!(tail.len(), 3, "{tail:?}");
            }
            "flow split" => {
                let want = vec![
                    (18, format!("  -> par_hs{k} :: HashSwitch(26, 12) -> par_q{k}_0 :: Queue(1000) -> par_u{k}_0 :: Unqueue(BURST 32) -> cl :: IPClassifier(dst port < 20000, dst port < 45000, -);")),
                    (19, "cl[0] -> hi_in :: Counter(REPLICAS hi_in_r1) -> hi :: Queue(512);".into()),
                    (20, "cl[1] -> med_in :: Counter(REPLICAS med_in_r1) -> med :: Queue(512);".into()),
                    (21, "cl[2] -> lo_in :: Counter(REPLICAS lo_in_r1) -> lo :: Queue(512);".into()),
                ];
                assert_eq!(changed, want);
                let want = [
                    format!("par_hs{k}[1]"),
                    format!("    -> par_q{k}_1 :: Queue(1000)"),
                    format!("    -> par_u{k}_1 :: Unqueue(BURST 32)"),
                    "    -> cl_r1 :: IPClassifier(dst port < 20000, dst port < 45000, -)".into(),
                    "    -> hi_in_r1 :: Counter".into(),
                    "    -> hi;".into(),
                    "cl_r1[1] -> med_in_r1 :: Counter -> med;".into(),
                    "cl_r1[2] -> lo_in_r1 :: Counter -> lo;".into(),
                ];
                assert_eq!(tail[2..tail.len() - 1], want);
            }
            _ => {
                let want: Vec<(usize, String)> = vec![
                    (19, "cl[0] -> hi_in :: Counter -> par_hs_hi :: HashSwitch(26, 12) -> hi :: Queue(256);".into()),
                    (20, "cl[1] -> med_in :: Counter -> par_hs_med :: HashSwitch(26, 12) -> med :: Queue(256);".into()),
                    (21, "cl[2] -> lo_in :: Counter -> par_hs_lo :: HashSwitch(26, 12) -> lo :: Queue(256);".into()),
                    (28, "vpn[0] -> WorkPackage($W) -> out :: Counter(REPLICAS out_r1) -> Discard;".into()),
                ];
                assert_eq!(changed, want);
                assert!(
                    tail.contains(&"    -> WorkPackage@12_r1 :: WorkPackage($W)".into()),
                    "{tail:?}"
                );
            }
        }
        let file = dir.join(format!("qos-{k}.click"));
        std::fs::write(&file, &out).unwrap();
        let file = file.to_str().unwrap();
        run_ok(&["check", file]);
        let n: u64 = counts(file, &["N=3000"], &["out.count"])[0]
            .parse()
            .unwrap();
        assert!((3000..200_000).contains(&n), "{what}: {n}");
        if what.starts_with("scheduler") {
            short_mlffr(file);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A configuration written for the test below: a source's path with
/// defines, a compound and comments, its packets counted to the last.
const SPLIT_ME: &str = "\
// split-me.click -- written for the parallelize tests: a source's path
// with defines, a compound and comments that a rewrite must keep.
define($N 20000, $LEN 80);

// Strip the Ethernet header, then check the IP header.
elementclass CheckIP {
  input -> Strip(14) -> CheckIPHeader -> output;
}

src :: FastUDPFlows(0, $N, $LEN, 00:00:c0:11:11:11, 1.0.0.2,
                    00:00:c0:ae:67:ef, 2.0.0.2, 16, 50)
  -> all :: Counter                       // every packet
  -> cl :: IPClassifier(dst port < 32768, -);
cl[0] -> low :: Counter -> q :: Queue(1000);
cl[1] -> Paint(7) -> high :: Counter -> q;

q -> uq :: Unqueue -> chk :: CheckIP -> out :: Counter -> Discard;

// Stop once every packet is out (or after about 20 s).
Script(init i 0, label check, wait 1ms, set i $(add $i 1),
       goto check $(and $(lt $(out.count) $N) $(lt $i 20000)), stop);
";

#[test]
fn split_rewrites_keep_a_compound_and_count_every_packet() {
    // SPLIT_ME's pipeline and flow splits at -j 2: the compound and the
    // comments are kept verbatim (only lines of src's statements change),
    // and each rewrite, read with N=900, counts every packet as the
    // original does, per counter. (900: fewer than any queue holds, so
    // none can drop; a source's batch of 32 into a queue with room for
    // fewer drops the rest, as the original does now and then at 5000.)
    let dir = workdir("split-me");
    let conf = dir.join("split-me.click");
    std::fs::write(&conf, SPLIT_ME).unwrap();
    let conf = conf.to_str().unwrap();
    let handlers = ["out.count", "all.count", "low.count", "high.count"];
    let want = counts(conf, &["N=900"], &handlers);
    assert_eq!(want[0], "900", "{want:?}");
    let args = ["parallelize", "-j", "2", "--duration", "0.1", "--no-check"];
    let table = run_ok(&[&args[..], &[conf, "N=1000000000"]].concat());
    for what in ["pipeline split", "flow split"] {
        let k = row(&table, what);
        let out = run_ok(&[&args[..], &["--candidate", &k, conf, "N=1000000000"]].concat());
        let (head, changed, tail) = own_text_diff(&out, SPLIT_ME);
        assert!(
            head.contains(&format!("rewritten for -j 2: {what}")),
            "{head}"
        );
        assert!(
            head.contains("// output: the configuration as written, changed as said above; read it with the defines given here: N=1000000000"),
            "{head}"
        );
        // src's statements are lines 10-15: nothing else changes.
        assert!(!changed.is_empty());
        assert!(
            changed.iter().all(|(n, _)| (10..=15).contains(n)),
            "{what}: {changed:?}"
        );
        assert!(tail.len() >= 3, "{tail:?}");
        let file = dir.join(format!("split-{k}.click"));
        std::fs::write(&file, &out).unwrap();
        let file = file.to_str().unwrap();
        assert_eq!(counts(file, &["N=900"], &handlers), want, "{what}:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
