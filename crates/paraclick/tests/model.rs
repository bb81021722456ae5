//! `paraclick model` and `paraclick bench --mlffr/--design`, end to end,
//! and the runtime's profile as data.

mod common;

use common::{paraclick, router};
use paraclick_runtime::{BuildOptions, Router};
use std::process::Command;

fn last_mlffr(out: &std::process::Output) -> f64 {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or("");
    let n = last
        .strip_prefix("MLFFR ")
        .and_then(|s| s.strip_suffix(" pps"))
        .unwrap_or_else(|| {
            panic!(
                "last line is not 'MLFFR <pps> pps':\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    n.parse().expect("a number of pps")
}

fn within(x: f64, target: f64, tol: f64) -> bool {
    ((x - target) / target).abs() <= tol
}

#[test]
fn system_files_reproduce_the_papers_estimates() {
    let out = paraclick(&["model", "--system", "models/crowley-baer/smp-pc-4.toml"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PCI over-subscribed"), "{text}");
    assert!(text.contains("Phase 2 (PP)"), "{text}");
    assert!(within(last_mlffr(&out), 543e3, 0.10));
    // What-if: the 700 MHz machine at 1 GHz is the paper's 428 kpps.
    let out = paraclick(&[
        "model",
        "--system",
        "models/crowley-baer/uni-pc-700.toml",
        "--clock",
        "1",
    ]);
    assert!(within(last_mlffr(&out), 428e3, 0.10));
    // What-if: 1000-byte packets, 53 kpps.
    let out = paraclick(&[
        "model",
        "--system",
        "models/crowley-baer/uni-pc-700.toml",
        "--traffic",
        "1000",
    ]);
    assert!(within(last_mlffr(&out), 53e3, 0.10));
    let out = paraclick(&["model", "--system", "models/crowley-baer/nope.toml"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.toml"));
}

#[test]
fn cost_data_gives_per_task_and_per_queue_figures() {
    let _g = common::one_at_a_time();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/fake-iprouter.click"),
    )
    .unwrap();
    let src = paraclick_lang::Source {
        name: "fake-iprouter".into(),
        text,
    };
    let opts = BuildOptions {
        threads: 1,
        defines: vec![("N".into(), "20000".into())],
        profile: true,
        pin: false,
        ..BuildOptions::default()
    };
    let r = Router::build(&src, &common::registry(), &opts).unwrap();
    r.run();
    let cd = r.cost_data();
    assert!(cd.profiled);
    let task = |n: &str| cd.tasks.iter().position(|t| t.element == n).unwrap();
    let (s0, s1) = (task("src0"), task("src1"));
    assert_eq!(cd.tasks[s0].packets, 20000);
    assert_eq!(cd.tasks[s1].packets, 20000);
    assert!(cd.tasks[s0].cycles > 0);
    let q1 = cd.elements.iter().find(|e| e.name == "q1").unwrap();
    assert!(q1.is_queue);
    assert!(q1.push_tasks.contains(&s0), "src0's packets reach q1");
    assert_eq!(q1.pull_tasks, vec![task("d1")]);
    // Every packet goes in and comes out: counted twice at the queue.
    assert_eq!(q1.packets, 2 * 20000);
    // A puller's first hop is its pull: each packet it takes counts
    // once, not again when it pushes it on (an Unqueue's count was
    // doubled, and with it the consumer batch the model reads).
    let usrc = paraclick_lang::Source {
        name: "unqueue".into(),
        text: "s :: InfiniteSource(LIMIT 3000, BURST 32, STOP true) -> Queue(1000) \
               -> u :: Unqueue(BURST 32) -> Counter -> Discard;"
            .into(),
    };
    let uopts = BuildOptions {
        defines: vec![],
        ..opts.clone()
    };
    let u = Router::build(&usrc, &common::registry(), &uopts).unwrap();
    u.run();
    let ucd = u.cost_data();
    let ut = ucd.tasks.iter().find(|t| t.element == "u").unwrap();
    assert_eq!(ut.packets, 3000);
    assert!(
        ut.work > 0 && ut.packets / ut.work <= 32,
        "batch {}",
        ut.packets / ut.work
    );
    let src0 = cd.elements.iter().find(|e| e.name == "src0").unwrap();
    assert_eq!(src0.ninputs, 0);
    // Without profiling: tasks only.
    let plain = router("InfiniteSource(LIMIT 10, STOP true) -> Discard;", 1);
    plain.run();
    let cd = plain.cost_data();
    assert!(!cd.profiled && cd.elements.is_empty());
    assert_eq!(cd.tasks.len(), 1);
}

#[test]
fn model_of_a_configuration_ends_with_its_mlffr() {
    let _g = common::one_at_a_time();
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(common::bin())
        .args([
            "model",
            "conf/queue-unqueue.click",
            "N=100000000",
            "--duration",
            "0.2",
            "-j",
            "2",
            "--sched",
            "static",
        ])
        .env("XDG_CACHE_HOME", cache.path())
        .current_dir(env!("CARGO_MANIFEST_DIR").to_string() + "/../..")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The table's arithmetic: each thread's max rate is one packet per
    // its latency, the result is the slowest thread, and the MLFFR is the
    // result's rate.
    let row = |name: &str| -> Vec<(f64, f64)> {
        text.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| {
                // `thread N  LATENCY RATE MEMORY`, `Result LATENCY RATE MEMORY`.
                let f: Vec<&str> = l.split_whitespace().collect();
                let k = if name == "Result" { 1 } else { 2 };
                if f.len() != k + 3 || f[k + 2].parse::<f64>().is_err() {
                    return None;
                }
                Some((f[k].parse().ok()?, f[k + 1].parse().ok()?))
            })
            .collect()
    };
    let threads = row("thread ");
    assert_eq!(threads.len(), 2, "{text}");
    for (lat_ns, kpps) in &threads {
        // The latency is printed in whole ns: the rate lies between one
        // packet per (latency + 0.5) ns and per (latency - 0.5) ns.
        let (lo, hi) = (1e6 / (lat_ns + 0.5), 1e6 / (lat_ns - 0.5).max(0.1));
        assert!(
            *kpps >= lo - 1.0 && *kpps <= hi + 1.0,
            "{lat_ns} ns, {kpps} kpps:\n{text}"
        );
    }
    let result = row("Result")[0].1;
    let slowest = threads.iter().map(|t| t.1).fold(f64::MAX, f64::min);
    assert_eq!(result, slowest, "{text}");
    let mlffr = last_mlffr(&out);
    assert!((mlffr / 1e3 - result).abs() <= 1.0, "{text}");
    // The answer comes first: the rate and the bottleneck; how they were
    // reached after.
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with("conf/queue-unqueue.click on 2 threads: predicted MLFFR ")
            && first.contains(" pps); bottleneck: thread "),
        "first line: {first}\n{text}"
    );
    let mpps: f64 = first
        .split("predicted MLFFR ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no rate in {first}"));
    assert!(
        (mpps * 1e6 - last_mlffr(&out)).abs() <= 1e3,
        "{first}\n{text}"
    );
    // Round-robin puts the source and the puller on two threads: the
    // queue is crossed by every packet.
    assert!(text.contains("1.00 queue crossings per packet"), "{text}");
    assert!(text.contains("thread 1"), "{text}");
    // The calibration was cached.
    assert!(cache.path().join("paraclick/system.toml").exists());
}

/// Checks an RFC 2544 search's printout against the rules of the search
/// and returns its MLFFR: the rate after a trial is higher if the trial
/// passed and lower if it failed; a passing trial shows no drops, no
/// loss, steady halves and the sources keeping up (95% of the offered
/// rate entered); a failing one shows at least one of those broken; the
/// answer is the highest passing rate (0 if none passed). Also whether
/// every trial passed.
fn checked_search(text: &str) -> (f64, bool) {
    struct Row {
        offered: f64,
        input: f64,
        output: f64,
        drops: u64,
        loss_shown: bool,
        steady: bool,
    }
    let rows: Vec<Row> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let offered = f.first()?.parse::<f64>().ok()?;
            (f.len() >= 8).then(|| Row {
                offered,
                input: f[1].parse().unwrap(),
                output: f[2].parse().unwrap(),
                drops: f[5].parse().unwrap(),
                loss_shown: f[6] != "0.000%",
                steady: f[7] == "steady",
            })
        })
        .collect();
    assert!(
        rows.len() >= 6,
        "a binary search's worth of trials:\n{text}"
    );
    let mlffr = text
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("MLFFR "))
        .and_then(|l| l.strip_suffix(" pps"))
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no MLFFR line:\n{text}"));
    let mut best = 0.0f64;
    let mut all_passed = true;
    for (i, r) in rows.iter().enumerate() {
        let looks_passing =
            r.drops == 0 && !r.loss_shown && r.steady && r.input >= 0.95 * r.offered;
        let passed = match rows.get(i + 1) {
            Some(next) => next.offered > r.offered,
            // The last trial: the answer is its rate if it passed.
            None => (mlffr - r.offered).abs() < 1.0,
        };
        if passed {
            assert!(looks_passing, "trial at {} passed:\n{text}", r.offered);
            best = best.max(r.offered);
        } else {
            all_passed = false;
            assert!(
                !looks_passing || r.output < r.input,
                "trial at {} failed with nothing wrong:\n{text}",
                r.offered
            );
        }
    }
    assert!(
        (mlffr - best).abs() < 1.0,
        "MLFFR {mlffr}, best pass {best}:\n{text}"
    );
    (mlffr, all_passed)
}

/// A short RFC 2544 search under 20 kpps, which any source keeps up with.
const QUICK_SEARCH: [&str; 8] = [
    "--max-rate",
    "20000",
    "--trial",
    "0.3",
    "--warmup",
    "0.05",
    "--steady",
    "0.5",
];

#[test]
fn rfc2544_search_finds_the_offered_ceiling() {
    let _g = common::one_at_a_time();
    // The source keeps up with 20 kpps easily: every trial passes and the
    // search closes in on the upper bound.
    let mut args = vec!["bench", "--mlffr", "conf/rated-queue.click"];
    args.extend(QUICK_SEARCH);
    let out = paraclick(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("RFC 2544"), "{text}");
    // A trial on a busy shared machine can still fail (a stall longer than
    // the source's catch-up): the search then settles lower. Whatever the
    // machine did, the answer must follow from the trials it printed.
    let (m, all_passed) = checked_search(&text);
    assert!(m <= 20000.0, "{text}");
    if all_passed {
        // Within the search's resolution of the bound.
        assert!(m >= 19_800.0, "{text}");
    }
}

#[test]
fn offered_rates_reach_a_fastudpflows_too_when_asked() {
    let _g = common::one_at_a_time();
    // qos-bench drops by design when saturated (a priority scheduler's
    // low queue): its saturation rate is not loss-free. With --offered
    // its FastUDPFlows gets the search's rates, as a RatedSource would.
    let args = |offered: bool| {
        let mut a = vec![
            "bench",
            "--mlffr",
            "conf/qos-bench.click",
            "N=1000000000000",
        ];
        a.extend(QUICK_SEARCH);
        if offered {
            a.push("--offered");
        }
        paraclick(&a)
    };
    let out = args(true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("RFC 2544"), "{text}");
    let (m, _) = checked_search(&text);
    assert!(m <= 20000.0, "{text}");
    let out = args(false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("saturation"), "{text}");
    assert!(last_mlffr(&out) > 20000.0, "{text}");
}

#[test]
fn saturation_mlffr_and_a_2k_design() {
    let _g = common::one_at_a_time();
    let out = paraclick(&[
        "bench",
        "--mlffr",
        "conf/infinite-discard.click",
        "--trial",
        "0.2",
        "--warmup",
        "0.05",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("saturation"), "{text}");
    assert!(last_mlffr(&out) > 0.0);

    let dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let factors = dir.path().join("f.toml");
    std::fs::write(
        &factors,
        format!(
            "config = \"{}\"\nreplications = 2\n[[factor]]\nname = \"BURST\"\nlow = \"1\"\nhigh = \"32\"\n",
            root.join("conf/infinite-discard.click").display()
        ),
    )
    .unwrap();
    let prefix = dir.path().join("d");
    let out = paraclick(&[
        "bench",
        "--design",
        "2k",
        factors.to_str().unwrap(),
        "--trial",
        "0.1",
        "--warmup",
        "0.02",
        "--out",
        prefix.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("BURST") && text.contains("error (replications)"),
        "{text}"
    );
    let csv = std::fs::read_to_string(dir.path().join("d.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
    assert!(dir.path().join("d.json").exists());
}

#[test]
fn model_of_a_device_twin_charges_the_terms_and_the_ring_caps_it() {
    let _g = common::one_at_a_time();
    let cache = tempfile::tempdir().unwrap();
    let run = |device: &str| {
        let out = Command::new(common::bin())
            .args([
                "model",
                "conf/fake-iprouter.click",
                "BURST=32",
                "--duration",
                "0.2",
                "--device",
                device,
                "--dedicated",
            ])
            .env("XDG_CACHE_HOME", cache.path())
            .current_dir(env!("CARGO_MANIFEST_DIR").to_string() + "/../..")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    // Every packet is received (100 ns) and sent (1,000 ns) besides the
    // twin's own work: at most 1e9 / 1,100 pps.
    let free = run("AF_PACKET:100:1000");
    let saturated = last_mlffr(&free);
    assert!(
        saturated > 1000.0 && saturated < 1e9 / 1100.0,
        "{saturated}"
    );
    // A receive ring that overflows at 1,000 pps is the prediction.
    let capped = run("AF_PACKET:100:1000:1000");
    assert_eq!(last_mlffr(&capped), 1000.0);
    let text = String::from_utf8_lossy(&capped.stdout);
    assert!(
        text.contains("the rings overflow before the threads saturate"),
        "{text}"
    );
}
