//! `paraclick build`: the program it writes counts what the dynamic
//! router counts, element by element.
//!
//! The program is compiled against the libraries this test run's
//! `paraclick` was linked from (the same target directory and profile).
//!
//! `every_configuration_in_conf_runs_built_as_it_runs_dynamically`
//! builds every configuration in conf/ that runs without devices or
//! privileges, two builds at a time, and compares each with the dynamic
//! router: every Counter's and Queue's counts and `--report drops`, and
//! the pcap files the pcap configurations write.

mod common;

use common::pcap::{ether, read_pcap, udp, write_pcap};
use common::{bin, root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The target directory and cargo profile `paraclick` was built in
/// (`TARGET/PROFILE_DIR/paraclick`).
fn target_and_profile() -> (PathBuf, String) {
    let b = bin();
    let dir = b.parent().expect("paraclick's directory");
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(p) => p.to_string(),
        None => panic!("no profile directory in {}", b.display()),
    };
    (dir.parent().expect("target dir").to_path_buf(), profile)
}

/// `paraclick build CONF -o OUT DEFINES...`, which must succeed.
fn build(conf: &Path, out: &Path, defines: &[&str]) {
    let (target, profile) = target_and_profile();
    let o = Command::new(bin())
        .arg("build")
        .arg(conf)
        .arg("-o")
        .arg(out)
        .args(["--profile", &profile])
        .args(defines)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run paraclick build");
    assert!(
        o.status.success(),
        "paraclick build {}: {:?}\n{}",
        conf.display(),
        o.status,
        text(&o.stderr)
    );
}

fn run(program: &Path, args: &[&str]) -> Output {
    let o = Command::new(program)
        .args(args)
        .output()
        .expect("run the router");
    assert!(
        o.status.success(),
        "{} {args:?}: {:?}\n{}",
        program.display(),
        o.status,
        text(&o.stderr)
    );
    o
}

/// The counts of a run: the handlers' values and the drops report.
fn counts(o: &Output) -> String {
    text(&o.stdout)
}

const FIR_HANDLERS: &[&str] = &[
    "src0.count",
    "src1.count",
    "out0.count",
    "out1.count",
    "tohost.count",
    "other.count",
    "arp_replies.count",
    "q0.drops",
    "q1.drops",
];

/// Runs `conf` in the dynamic router with `dyn_defines`, and the
/// program built for it with `built_defines`: the counts must be equal.
fn compare(
    conf: &Path,
    built: &Path,
    dyn_defines: &[&str],
    built_defines: &[&str],
    handlers: &[&str],
) {
    let mut args: Vec<&str> = Vec::new();
    for h in handlers {
        args.push("-h");
        args.push(h);
    }
    args.extend(["--report", "drops"]);
    let mut dynamic_args = vec![conf.to_str().expect("utf-8 path")];
    dynamic_args.extend(&args);
    dynamic_args.extend(dyn_defines);
    let dynamic = counts(&run(&bin(), &dynamic_args));
    args.extend(built_defines);
    let compiled_run = run(built, &args);
    assert!(
        !text(&compiled_run.stderr).contains("warning"),
        "the built program fell back to the dynamic router:\n{}",
        text(&compiled_run.stderr)
    );
    let compiled = counts(&compiled_run);
    assert!(
        dynamic.contains("out0.count"),
        "no counts printed:\n{dynamic}"
    );
    assert_eq!(
        dynamic,
        compiled,
        "{}: the built program counts differently",
        conf.display()
    );
}

#[test]
fn built_programs_count_as_the_dynamic_router() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // conf/fake-iprouter.click: the main path, at BURST 1.
    let fir = root().join("conf/fake-iprouter.click");
    let fir_bin = dir.path().join("fir");
    build(&fir, &fir_bin, &["N=20000"]);
    // The program's defines are the build's, overridable.
    compare(&fir, &fir_bin, &["N=20000"], &[], FIR_HANDLERS);
    compare(&fir, &fir_bin, &["N=3000"], &["N=3000"], FIR_HANDLERS);

    // Every branch off the main path: ICMP errors back into the routing
    // table, drops with reasons, ARP, PaintTee's copies.
    let branches = root().join("crates/paraclick/tests/build/branches.click");
    let br_bin = dir.path().join("branches");
    build(&branches, &br_bin, &[]);
    let mut handlers = FIR_HANDLERS.to_vec();
    handlers.extend(["src2.count", "src3.count", "src4.count", "src5.count"]);
    compare(&branches, &br_bin, &[], &[], &handlers);
}

#[test]
fn a_built_program_runs_only_its_configuration() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = dir.path().join("small.click");
    std::fs::write(
        &conf,
        "InfiniteSource(LIMIT 5, STOP true) -> Strip(14) -> c :: Counter -> Discard;\n",
    )
    .unwrap();
    let program = dir.path().join("small");
    build(&conf, &program, &[]);
    // Its own file, or none, runs.
    let o = run(&program, &["-h", "c.count"]);
    assert_eq!(text(&o.stdout).trim(), "5");
    let o = run(&program, &[conf.to_str().unwrap(), "-h", "c.count"]);
    assert_eq!(text(&o.stdout).trim(), "5");
    // Another configuration is refused, clearly.
    let other = dir.path().join("other.click");
    std::fs::write(&other, "InfiniteSource(LIMIT 5, STOP true) -> Discard;\n").unwrap();
    let o = Command::new(&program).arg(&other).output().unwrap();
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("not the configuration this program was built from"),
        "{err}"
    );
    // A configuration error is reported as paraclick reports it.
    let bad = dir.path().join("bad.click");
    std::fs::write(&bad, "InfiniteSource -> NoSuchElement;\n").unwrap();
    let (target, profile) = target_and_profile();
    let o = Command::new(bin())
        .arg("build")
        .arg(&bad)
        .args(["-o", dir.path().join("bad").to_str().unwrap()])
        .args(["--profile", &profile])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("NoSuchElement"),
        "{}",
        text(&o.stderr)
    );
}

/// How a configuration's counts compare between the two runs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Counts {
    /// A LIMIT, a STOP or the end of its input ends the run: equal.
    Equal,
    /// A time (a Script's `wait`, or a Script polling a count) or
    /// threads racing end the run: each handler's count zero in both
    /// runs or in neither.
    Timed,
}

/// One configuration of conf/ the suite builds.
struct Suite {
    name: &'static str,
    defines: &'static [&'static str],
    counts: Counts,
    /// Whether the builder compiles any of its elements (a configuration
    /// of which it compiles nothing runs as `paraclick` runs it, and must
    /// be listed so here).
    compiles: bool,
    /// Handlers to read besides every Counter's `count` and Queue's
    /// `drops`.
    handlers: &'static [&'static str],
    /// Input pcaps to write (define, contents) and the defines naming
    /// the output pcaps to compare.
    inputs: &'static [(&'static str, Input)],
    outputs: &'static [&'static str],
}

/// Input traces the suite writes.
#[derive(Clone, Copy)]
enum Input {
    /// Ethernet, UDP from 1.0.0.x to 2.0.0.2 (and ARP-free).
    Eth1To2,
    /// Ethernet, UDP from 2.0.0.x to 1.0.0.2.
    Eth2To1,
    /// Raw IP, UDP from 10.0.0.x to 198.51.100.7.
    IpPrivate,
    /// Ethernet, UDP from 10.1.0.x to 10.2.0.1 with three DSCP values.
    EthSite,
    /// No packets.
    Empty,
}

fn write_input(path: &Path, kind: Input) {
    let mut pkts = Vec::new();
    for seq in 0..40u32 {
        for flow in 0..6u32 {
            let h = (flow + 2) as u8;
            let (src, dst, linktype) = match kind {
                Input::Eth1To2 => ([1, 0, 0, h], [2, 0, 0, 2], 1),
                Input::Eth2To1 => ([2, 0, 0, h], [1, 0, 0, 2], 1),
                Input::IpPrivate => ([10, 0, 0, h], [198, 51, 100, 7], 101),
                Input::EthSite => ([10, 1, 0, h], [10, 2, 0, 1], 1),
                Input::Empty => return write_pcap(path, 1, &[]),
            };
            let mut ip = udp(src, dst, 1000 + flow as u16, 53, flow, seq);
            if matches!(kind, Input::EthSite) {
                // DSCP 46, 10 or 0 (the QoS configuration's classes).
                ip[1] = [46 << 2, 10 << 2, 0][flow as usize % 3];
                ip[10] = 0;
                ip[11] = 0;
                let ck = common::pcap::csum(&ip[..20]);
                ip[10..12].copy_from_slice(&ck.to_be_bytes());
            }
            pkts.push(if linktype == 1 {
                let to = if matches!(kind, Input::Eth2To1) {
                    [0, 0, 0xc0, 0x4f, 0x71, 0xef]
                } else {
                    [0, 0, 0xc0, 0xae, 0x67, 0xef]
                };
                ether(to, [2, 0, 0, 0, 0, 1], ip)
            } else {
                ip
            });
        }
    }
    write_pcap(
        path,
        if matches!(kind, Input::IpPrivate) {
            101
        } else {
            1
        },
        &pkts,
    );
}

/// A configuration whose counts are equal, some of it compiled, with
/// no input files.
const fn plain(name: &'static str, defines: &'static [&'static str]) -> Suite {
    Suite {
        name,
        defines,
        counts: Counts::Equal,
        compiles: true,
        handlers: &[],
        inputs: &[],
        outputs: &[],
    }
}

const SUITE: &[Suite] = &[
    // Shared token buckets between threads, stopped after 1 s.
    Suite {
        counts: Counts::Timed,
        ..plain("coordinated-output", &[])
    },
    Suite {
        handlers: &["tohost.count", "other.count", "arp_replies.count"],
        ..plain("fake-iprouter", &["N=3000"])
    },
    plain("fake-iprouter-split", &["N=3000"]),
    plain("fake-iprouter-x2", &["N=2000"]),
    plain("fake-iprouter6", &["N=3000"]),
    plain("firewall-bench", &["N=3000"]),
    plain("firewall-pipeline", &["N=3000"]),
    // Two threads; a Script stops it once the two counts reach N.
    Suite {
        counts: Counts::Timed,
        ..plain("flow-split", &["N=3000"])
    },
    // No packets at all: nothing to compile.
    Suite {
        compiles: false,
        handlers: &["uq.count"],
        ..plain("idle-pull", &["TIME=0.1"])
    },
    Suite {
        compiles: false,
        handlers: &["uq.count"],
        ..plain("idle-script", &["TIME=0.1"])
    },
    // A source straight into a Discard: nothing per packet to compile.
    Suite {
        compiles: false,
        ..plain("infinite-discard", &["N=3000"])
    },
    plain("marking-pipeline", &["N=3000"]),
    plain("nat-bench", &["N=3000"]),
    // A Script polling the count stops these (every 2 ms).
    Suite {
        counts: Counts::Timed,
        ..plain("qos-bench", &["N=3000"])
    },
    plain("queue-unqueue", &["N=3000"]),
    Suite {
        counts: Counts::Timed,
        ..plain("replicated-qos", &["N=3000"])
    },
    plain("vpn-bench", &["N=1000"]),
    Suite {
        inputs: &[("IN0", Input::Eth1To2), ("IN1", Input::Eth2To1)],
        outputs: &["OUT0", "OUT1"],
        ..plain("iprouter-pcap", &[])
    },
    Suite {
        inputs: &[("PRIV_IN", Input::IpPrivate), ("PUB_IN", Input::Empty)],
        outputs: &["PUB_OUT", "PRIV_OUT"],
        ..plain("nat-pcap", &[])
    },
    Suite {
        inputs: &[("IN", Input::EthSite)],
        outputs: &["OUT"],
        ..plain("qos-pcap", &[])
    },
    Suite {
        handlers: &["enc.packets", "enc.bytes", "dec.packets"],
        inputs: &[("PLAIN_IN", Input::EthSite), ("ESP_IN", Input::Empty)],
        outputs: &["ESP_OUT", "PLAIN_OUT"],
        ..plain("vpn-pcap", &[])
    },
    Suite {
        handlers: &["sat.table"],
        inputs: &[("PLAIN_IN", Input::EthSite), ("ESP_IN", Input::Empty)],
        outputs: &["ESP_OUT", "PLAIN_OUT"],
        ..plain("vpn-click-style-pcap", &[])
    },
];

/// The configurations of conf/ the suite does not build, and why.
const NOT_BUILT: &[(&str, &str)] = &[
    (
        "iprouter",
        "its inputs are made with scapy (tests/iprouter.rs)",
    ),
    ("iprouter-combo", "network devices"),
    ("iprouter-dualstack-veth", "network devices"),
    ("iprouter-veth", "network devices"),
    ("iprouter-veth-2q", "network devices"),
    ("iprouter-veth-2q-poll", "network devices"),
    ("iprouter-veth-host", "network devices"),
    ("iprouter6-veth", "network devices"),
    ("iprouter6-veth-2q", "network devices"),
    ("nat-gateway-veth", "network devices"),
    ("qos-veth", "network devices"),
    ("vpn-gateway-veth", "network devices"),
    (
        "rated-queue",
        "a paced source with no end: runs until stopped",
    ),
];

#[test]
fn every_configuration_in_conf_is_in_the_suite_or_says_why_not() {
    let mut listed: Vec<&str> = SUITE.iter().map(|s| s.name).collect();
    listed.extend(NOT_BUILT.iter().map(|n| n.0));
    let mut in_conf: Vec<String> = std::fs::read_dir(root().join("conf"))
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().into_string().ok()?;
            Some(n.strip_suffix(".click")?.to_string())
        })
        .collect();
    in_conf.sort();
    listed.sort();
    assert_eq!(in_conf, listed, "conf/ against SUITE and NOT_BUILT");
}

/// The counted handlers of `conf` (with `defines`): every Counter's
/// `count` and every Queue's `drops`, from `paraclick graph`.
fn counted_handlers(conf: &Path, defines: &[String]) -> Vec<String> {
    let mut args = vec!["graph".to_string(), conf.display().to_string()];
    args.extend(defines.iter().cloned());
    let o = run(&bin(), &args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut hs = Vec::new();
    for line in text(&o.stdout).lines() {
        // n5 [label="a/out0 :: Counter"];
        let Some(label) = line.split("label=\"").nth(1) else {
            continue;
        };
        let label = label.split('"').next().unwrap_or("");
        let Some((name, class)) = label.split_once(" :: ") else {
            continue;
        };
        match class {
            "Counter" => hs.push(format!("{name}.count")),
            "Queue" => hs.push(format!("{name}.drops")),
            _ => {}
        }
    }
    hs
}

/// `paraclick build` of each suite configuration into `dir`, two at a
/// time: its stderr, or the failure.
fn build_all(dir: &Path, jobs: &[(String, PathBuf, Vec<String>)]) -> Vec<Result<String, String>> {
    let (target, profile) = target_and_profile();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![Err("not built".to_string()); jobs.len()]);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, conf, defines)) = jobs.get(i) else {
                    break;
                };
                let o = Command::new(bin())
                    .arg("build")
                    .arg(conf)
                    .arg("-o")
                    .arg(dir.join(name))
                    .args(["--profile", &profile])
                    .arg("--keep")
                    .arg(dir.join(format!("crate-{name}")))
                    // Counts do not depend on the code's layout, and
                    // the order costs each link about 2 s.
                    .arg("--no-code-order")
                    .args(defines)
                    .env("CARGO_TARGET_DIR", &target)
                    .output()
                    .expect("run paraclick build");
                let r = if o.status.success() {
                    Ok(text(&o.stderr))
                } else {
                    Err(format!("{:?}\n{}", o.status, text(&o.stderr)))
                };
                results.lock().unwrap()[i] = r;
            });
        }
    });
    results.into_inner().unwrap()
}

/// "N of M elements compiled" from the build's message.
fn compiled_count(msg: &str) -> usize {
    msg.split("paraclick build: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {msg:?}"))
}

#[test]
fn every_configuration_in_conf_runs_built_as_it_runs_dynamically() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    // Each configuration's defines: the suite's, and its pcaps' paths.
    let mut jobs = Vec::new();
    for s in SUITE {
        let mut defines: Vec<String> = s.defines.iter().map(|d| d.to_string()).collect();
        for (def, kind) in s.inputs {
            let p = d.join(format!("{}-{def}.pcap", s.name));
            write_input(&p, *kind);
            defines.push(format!("{def}={}", p.display()));
        }
        for def in s.outputs {
            let p = d.join(format!("{}-{def}.pcap", s.name));
            defines.push(format!("{def}={}", p.display()));
        }
        let conf = root().join(format!("conf/{}.click", s.name));
        jobs.push((s.name.to_string(), conf, defines));
    }
    let built = build_all(d, &jobs);
    let mut failures = Vec::new();
    for ((s, (name, conf, defines)), b) in SUITE.iter().zip(&jobs).zip(built) {
        let msg = match b {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: the build failed: {e}"));
                continue;
            }
        };
        let n = compiled_count(&msg);
        if (n > 0) != s.compiles {
            failures.push(format!(
                "{name}: {msg}(listed as compiling {}: update SUITE)",
                if s.compiles { "some" } else { "nothing" }
            ));
        }
        let mut handlers = counted_handlers(conf, defines);
        handlers.extend(s.handlers.iter().map(|h| h.to_string()));
        let mut args: Vec<String> = Vec::new();
        for h in &handlers {
            args.push("-h".into());
            args.push(h.clone());
        }
        args.extend(["--report".into(), "drops".into()]);
        // The packets written (their times are the run's).
        let outputs = || -> Vec<Vec<Vec<u8>>> {
            s.outputs
                .iter()
                .map(|def| {
                    let p = d.join(format!("{}-{def}.pcap", s.name));
                    let pkts = read_pcap(&p);
                    let _ = std::fs::remove_file(&p);
                    pkts
                })
                .collect()
        };
        let mut dyn_args = vec![conf.display().to_string()];
        dyn_args.extend(args.iter().cloned());
        dyn_args.extend(defines.iter().cloned());
        let dynamic = run(
            &bin(),
            &dyn_args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let dyn_out = outputs();
        let program = d.join(name);
        let compiled = run(
            &program,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let built_out = outputs();
        let err = text(&compiled.stderr);
        if err.contains("warning") {
            failures.push(format!("{name}: the built program fell back:\n{err}"));
        }
        let (a, b) = (counts(&dynamic), counts(&compiled));
        let same = match s.counts {
            Counts::Equal => a == b,
            Counts::Timed => {
                let zeros = |t: &str| -> Vec<bool> {
                    t.lines()
                        .take(handlers.len())
                        .map(|l| l.trim() == "0")
                        .collect()
                };
                zeros(&a) == zeros(&b)
            }
        };
        if !same {
            failures.push(format!(
                "{name}: dynamic\n{a}built\n{b}({:?} counts)",
                s.counts
            ));
        }
        if s.counts == Counts::Equal && !handlers.is_empty() && a.lines().all(|l| l.trim() == "0") {
            // Something must have been counted, or the comparison says
            // little (the idle configurations count nothing by design).
            if s.compiles {
                failures.push(format!("{name}: nothing counted:\n{a}"));
            }
        }
        if !s.outputs.is_empty() && dyn_out.iter().all(|o| o.is_empty()) {
            failures.push(format!("{name}: no packets written"));
        }
        for ((def, x), y) in s.outputs.iter().zip(&dyn_out).zip(&built_out) {
            if x != y {
                let at = x.iter().zip(y).position(|(p, q)| p != q);
                failures.push(format!(
                    "{name}: {def}: the built program wrote {} packets, the dynamic router {} \
                     (first difference at packet {at:?})",
                    y.len(),
                    x.len()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A configuration whose task runs, queue pushes and pulls a built
/// program compiles: sources at BURST 1 (compiled) and BURST 4 (the
/// ordinary run), a Tee pushing twice a run into a queue that overflows,
/// pull chains through actions (one dropping every packet) into pull
/// Discards, one of BURST 2.
const TASKS_CONF: &str = "\
s0 :: InfiniteSource(LENGTH 60, LIMIT 3000, STOP true) -> c0 :: Counter -> t :: Tee(2);
t[0] -> q0 :: Queue(8);
t[1] -> q0;
q0 -> k0 :: Counter -> d0 :: Discard;
s1 :: InfiniteSource(LIMIT 2000, BURST 4) -> q1 :: Queue(50)
    -> Strip(14) -> CheckIPHeader -> k1 :: Counter -> d1 :: Discard(BURST 2);
s2 :: InfiniteSource(LIMIT 500) -> q2 :: Queue -> d2 :: Discard;
";

const TASKS_HANDLERS: &[&str] = &[
    "c0.count", "k0.count", "k1.count", "q0.drops", "q1.drops", "d0.count", "d1.count", "d2.count",
    "s1.count",
];

#[test]
fn built_task_runs_pushes_and_pulls_count_as_the_dynamic_router() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = dir.path().join("tasks.click");
    std::fs::write(&conf, TASKS_CONF).unwrap();
    let program = dir.path().join("tasks");
    let (target, profile) = target_and_profile();
    let o = Command::new(bin())
        .arg("build")
        .arg(&conf)
        .arg("-o")
        .arg(&program)
        .args(["--profile", &profile])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run paraclick build");
    let said = text(&o.stderr);
    assert!(o.status.success(), "{said}");
    // What the program compiled: the six tasks, the pushes into the Tee
    // and the queues, the pulls from the queues and the actions after.
    assert!(
        said.contains("3 pushed into directly, 6 task runs and 7 pulls compiled"),
        "{said}"
    );
    let mut args: Vec<&str> = Vec::new();
    for h in TASKS_HANDLERS {
        args.extend(["-h", h]);
    }
    args.extend(["--report", "drops"]);
    let mut dynamic_args = vec![conf.to_str().expect("utf-8 path")];
    dynamic_args.extend(&args);
    let dynamic = run(&bin(), &dynamic_args);
    let compiled = run(&program, &args);
    assert!(
        !text(&compiled.stderr).contains("warning"),
        "the built program fell back to the dynamic router:\n{}",
        text(&compiled.stderr)
    );
    // The queue overflowed and CheckIPHeader dropped every packet of s1
    // (its default data is no IP packet).
    let counts = text(&dynamic.stdout);
    assert!(counts.contains("k1.count:\n0\n"), "{counts}");
    assert!(counts.contains("s1.count:\n2000\n"), "{counts}");
    assert!(!counts.contains("q0.drops:\n0\n"), "{counts}");
    assert_eq!(
        counts,
        text(&compiled.stdout),
        "the built program counts differently"
    );
    assert_eq!(
        text(&dynamic.stderr),
        text(&compiled.stderr),
        "the built program reports other drops"
    );
    // The dynamic router in the same program (PARACLICK_COMPILED=0).
    let o = Command::new(&program)
        .args(&args)
        .env("PARACLICK_COMPILED", "0")
        .output()
        .expect("run the router");
    assert_eq!(counts, text(&o.stdout));
}
