//! What README.md shows and no other test runs, checked by its output's
//! content: `graph`, `doc`, `bench` (the default suite, `-j 2`, the
//! multicore and NAT suites, `--sweep` and its files), `--report costs`,
//! `--pool`, `-f`, the IPv6/IPv4 protocol translators and Socket.

mod common;

use common::ctl::Client;
use common::paraclick;
use common::proc::Proc;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `paraclick ARGS`, which must succeed: its standard output.
fn ok(args: &[&str]) -> String {
    let out = paraclick(args);
    assert!(
        out.status.success(),
        "paraclick {args:?}: {:?}\n{}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A scratch directory under the target's, removed when dropped.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

// ---- graph -------------------------------------------------------------

/// A connection: from element, its output, to element, its input.
type Conn = (String, usize, usize, String);

fn port(s: &str) -> usize {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .unwrap_or_else(|_| panic!("port {s:?}"))
}

/// The elements (`name :: Class`) and connections of `graph`'s DOT, and
/// which connections are dashed (pull).
fn parse_dot(dot: &str) -> (BTreeMap<String, String>, Vec<(Conn, bool)>) {
    let mut ids = BTreeMap::new();
    let mut elements = BTreeMap::new();
    let mut edges = Vec::new();
    for l in dot.lines().map(str::trim) {
        if let Some((id, rest)) = l.split_once(" [label=\"") {
            if id.contains("->") {
                let (from, to) = id.split_once(" -> ").unwrap();
                let (ports, attrs) = rest.split_once('"').unwrap();
                let (op, ip) = ports.split_once(" -> ").unwrap();
                let name = |n: &str| -> String {
                    ids.get(n)
                        .cloned()
                        .unwrap_or_else(|| panic!("edge names undeclared node {n}: {l}"))
                };
                edges.push((
                    (name(from), port(op), port(ip), name(to)),
                    attrs.contains("style=dashed"),
                ));
            } else {
                let label = rest.strip_suffix("\"];").unwrap();
                let (name, class) = label.split_once(" :: ").unwrap();
                ids.insert(id.to_string(), name.to_string());
                assert!(
                    elements
                        .insert(name.to_string(), class.to_string())
                        .is_none(),
                    "{name} drawn twice"
                );
            }
        }
    }
    (elements, edges)
}

/// The elements and connections of the flattened configuration
/// (`paraclick -q -o -`): one declaration a line, connections in Click's
/// chains (`a [1] -> [2] b\n    -> c;`, a chain going on from output 0).
fn parse_flat(flat: &str) -> (BTreeMap<String, String>, Vec<Conn>) {
    let mut elements = BTreeMap::new();
    let mut conns = Vec::new();
    let joined = flat.replace("\n    -> ", " -> ");
    for l in joined.lines() {
        if let Some((name, rest)) = l.split_once(" :: ") {
            let class: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            elements.insert(name.to_string(), class);
        } else if let Some(body) = l.strip_suffix(';').filter(|l| l.contains(" -> ")) {
            let mut hops = body.split(" -> ");
            let first = hops.next().unwrap();
            let (mut from, mut fp) = match first.split_once(" [") {
                Some((e, p)) => (e.to_string(), port(p)),
                None => (first.to_string(), 0),
            };
            for h in hops {
                let (tp, te) = match h.strip_prefix('[') {
                    Some(h) => {
                        let (p, e) = h.split_once("] ").unwrap();
                        (port(p), e)
                    }
                    None => (0, h),
                };
                conns.push((from, fp, tp, te.to_string()));
                (from, fp) = (te.to_string(), 0);
            }
        }
    }
    (elements, conns)
}

#[test]
fn graph_draws_every_element_and_connection_once() {
    // README: `paraclick graph conf/fake-iprouter.click > r.dot`.
    let dot = ok(&["graph", "conf/fake-iprouter.click"]);
    assert!(dot.starts_with("digraph paraclick {\n") && dot.ends_with("}\n"));
    let (drawn, edges) = parse_dot(&dot);
    let flat = ok(&["-q", "-o", "-", "conf/fake-iprouter.click"]);
    let (declared, conns) = parse_flat(&flat);
    // The same elements with the same classes as the configuration.
    assert_eq!(drawn, declared);
    assert!(drawn.len() > 40, "{drawn:?}");
    assert_eq!(drawn.get("rt").map(String::as_str), Some("StaticIPLookup"));
    // Every connection exactly once, with its ports.
    let mut got: Vec<Conn> = edges.iter().map(|e| e.0.clone()).collect();
    let mut want = conns.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{dot}");
    assert_eq!(got.len(), 54, "{dot}");
    for c in [
        ("rt", 1, 0, "p0/DropBroadcasts@1"),
        ("p0/cp", 1, 0, "p0/ICMPError@8"),
    ] {
        let c = (c.0.to_string(), c.1, c.2, c.3.to_string());
        assert!(got.contains(&c), "no edge {c:?} in\n{dot}");
    }
    // Pull connections (out of the queues, onward to the Discards) are
    // dashed; push ones are not.
    for ((from, _, _, to), dashed) in &edges {
        let pull = ["q0", "q1", "out0", "out1"].contains(&from.as_str());
        assert_eq!(*dashed, pull, "{from} -> {to}\n{dot}");
    }
}

// ---- doc ---------------------------------------------------------------

#[test]
fn doc_shows_the_class_asked_for_and_lists_them_all() {
    // README: `paraclick doc Queue`.
    let q = ok(&["doc", "Queue"]);
    assert_eq!(q.lines().next(), Some("Queue([CAPACITY])"), "{q}");
    assert!(q.contains("first-in-first-out"), "{q}");
    let c = ok(&["doc", "Counter"]);
    assert!(c.starts_with("Counter("), "{c}");
    assert_ne!(q, c);
    // A misspelt class: an error that names the class meant, nothing on
    // standard output.
    let out = paraclick(&["doc", "Quue"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        "paraclick: unknown element class 'Quue' (did you mean 'Queue'?)\n"
    );
    // README: `paraclick doc`, every class, one a line with its summary,
    // in order; the README counts about 220.
    let list = ok(&["doc"]);
    let names: Vec<&str> = list
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted, "listed in order, once each");
    assert!((200..400).contains(&names.len()), "{} classes", names.len());
    let line = list
        .lines()
        .find(|l| l.split_whitespace().next() == Some("Queue"))
        .unwrap();
    assert!(
        line.ends_with("Stores packets in a first-in-first-out queue: push input, pull output."),
        "{line}"
    );
    for class in [
        "ProtocolTranslator46",
        "ProtocolTranslator64",
        "Socket",
        "IPRewriter",
    ] {
        assert!(names.contains(&class), "doc lists no {class}");
        let d = ok(&["doc", class]);
        assert!(d.contains(&format!("{class}(")), "doc {class}: {d}");
    }
}

// ---- bench -------------------------------------------------------------

/// The cycle counter's rate in GHz from a header line "...cycle counter
/// 2.596 GHz".
fn ghz(header: &str) -> f64 {
    let i = header.find("cycle counter ").expect("cycle counter") + 14;
    header[i..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A row's figures: its label (all but the last `n` fields) and them.
fn row(l: &str, n: usize) -> (String, Vec<String>) {
    let f: Vec<&str> = l.split_whitespace().collect();
    assert!(f.len() > n, "short row {l:?}");
    let k = f.len() - n;
    (
        f[..k].join(" "),
        f[k..].iter().map(|s| s.to_string()).collect(),
    )
}

fn num(s: &str) -> f64 {
    s.trim_end_matches('x')
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// The standard suite's rows: (label, packets, Mpps, cycles per packet).
fn foundation(out: &str, threads: usize) -> Vec<(String, u64, f64, f64)> {
    let mut lines = out.lines();
    let head = lines.next().unwrap();
    assert!(
        head.starts_with(&format!(
            "paraclick bench: {threads} thread(s), 1 run(s) each"
        )),
        "{out}"
    );
    let hz = ghz(head) * 1e9;
    assert!(hz > 1e8, "{head}");
    assert!(lines.next().unwrap().starts_with("configuration"), "{out}");
    let rows: Vec<_> = lines
        .map(|l| {
            let (label, f) = row(l, 4);
            let (packets, mpps, cpp) = (num(&f[0]) as u64, num(&f[1]), num(&f[2]));
            assert!(mpps > 0.0 && cpp > 0.0 && num(&f[3]) > 0.0, "{l}");
            // Mpps and cycles per packet come from one run's packets, time
            // and cycles: their product is the cycle counter's rate times
            // the threads (the counter runs at that rate over the run;
            // the slack is for the clock and the counter being read one
            // after the other, around a run of a few milliseconds).
            let implied = mpps * 1e6 * cpp / threads as f64;
            assert!(
                (implied / hz - 1.0).abs() < 0.1,
                "{l}: {mpps} Mpps x {cpp} cycles/packet is {implied:.3e} Hz, not the counter's {hz:.3e}\n{out}"
            );
            (label, packets, mpps, cpp)
        })
        .collect();
    assert_eq!(rows.len(), 5, "{out}");
    rows
}

#[test]
fn bench_prints_rates_that_agree_with_its_counts() {
    let _g = common::one_at_a_time();
    // README: `paraclick bench` (here with fewer packets and one run).
    const N: u64 = 200_000;
    for threads in [1usize, 2] {
        let j = threads.to_string();
        let out = ok(&["bench", "-n", &N.to_string(), "-r", "1", "-j", &j]);
        let rows = foundation(&out, threads);
        for (label, packets, _, _) in &rows {
            if label.starts_with("InfiniteSource -> Discard") {
                // Nothing between source and sink: every packet counted.
                assert_eq!(*packets, N, "{label}\n{out}");
            } else if label.starts_with("fake-iprouter") {
                // Two sources of N each; at most what they sent.
                assert!(*packets <= 2 * N && *packets > N, "{label}\n{out}");
                if threads == 1 {
                    assert_eq!(*packets, 2 * N, "{label}\n{out}");
                }
            } else {
                assert!(*packets <= N && *packets > N / 2, "{label}\n{out}");
            }
        }
        assert!(rows[0].0.contains("BURST 1, no timestamps"), "{out}");
        assert!(rows[4].0.starts_with("fake-iprouter"), "{out}");
    }
}

#[test]
fn multicore_bench_ratios_follow_their_rates() {
    let _g = common::one_at_a_time();
    // README: `paraclick bench --suite multicore` (1 vs 2 threads).
    let out = ok(&["bench", "--suite", "multicore", "-n", "100000", "-r", "1"]);
    let rows: Vec<(String, Vec<String>)> = out
        .lines()
        .skip_while(|l| !l.starts_with("configuration"))
        .skip(1)
        .map(|l| row(l, 6))
        .collect();
    assert_eq!(rows.len(), 13, "{out}");
    let mut base: Option<f64> = None;
    let mut compared = 0;
    for (label, f) in &rows {
        let mpps = num(&f[0]);
        let loss = num(&f[2]);
        assert!(mpps > 0.0, "{label}: {out}");
        assert!((0.0..=100.0).contains(&loss), "{label}: {out}");
        assert!(num(&f[3]) > 0.0 && num(&f[4]) > 0.0, "{label}: {out}");
        if f[1] == "base" {
            assert_eq!(f[5], "base", "{label}");
            base = Some(mpps);
            assert!(
                !label.contains("2 threads") || label.starts_with("queue"),
                "{label}"
            );
        } else {
            // One round: the ratio is this row's rate over its baseline's.
            let b = base.expect("a baseline row first");
            let want = mpps / b;
            let got = num(&f[1]);
            assert!(
                (got - want).abs() <= 0.01 + 0.01 * want,
                "{label}: ratio {got}, rates give {want:.3}\n{out}"
            );
            assert!(num(&f[5]) > 0.0, "{label}: {out}");
            compared += 1;
        }
    }
    assert_eq!(compared, 8, "{out}");
    assert!(rows[0].0.starts_with("fake-iprouter, 1 thread"), "{out}");
}

#[test]
fn nat_bench_measures_each_flow_count_on_one_and_two_threads() {
    let _g = common::one_at_a_time();
    // README: `paraclick bench --suite nat -r 1 1000 ...` (fewer packets).
    let out = ok(&[
        "bench", "--suite", "nat", "-n", "40000", "-r", "1", "100", "1000",
    ]);
    let control: Vec<_> = out
        .lines()
        .filter(|l| l.starts_with("control: generators only"))
        .collect();
    assert_eq!(control.len(), 2, "{out}");
    let rows: Vec<(String, Vec<String>)> = out
        .lines()
        .filter(|l| l.starts_with("IPRewriter, "))
        .map(|l| row(&l.replace('|', " "), 9))
        .collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        labels,
        [
            "IPRewriter, 100 flows, 1 thread",
            "IPRewriter, 100 flows, 2 threads",
            "IPRewriter, 1000 flows, 1 thread",
            "IPRewriter, 1000 flows, 2 threads",
        ],
        "{out}"
    );
    for pair in rows.chunks(2) {
        let (one, two) = (&pair[0].1, &pair[1].1);
        assert_eq!((one[1].as_str(), one[5].as_str()), ("base", "base"));
        for (m, r) in [(0, 1), (4, 5)] {
            // Whole run and steady state: the ratio is the rates'.
            let want = num(&two[m]) / num(&one[m]);
            let got = num(&two[r]);
            assert!(num(&one[m]) > 0.0 && num(&two[m]) > 0.0, "{out}");
            assert!(
                (got - want).abs() <= 0.01 + 0.01 * want,
                "ratio {got}, rates give {want:.3}\n{out}"
            );
        }
        for f in [one, two] {
            assert!(num(&f[2]) > 0.0 && num(&f[8]) > 0.0, "{out}");
        }
    }
    // Flow counts below two are refused.
    let out = paraclick(&["bench", "--suite", "nat", "-n", "1000", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--suite nat: arguments are flow counts (at least 2)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn rate_sweep_writes_its_curve_as_csv_json_and_svg() {
    let _g = common::one_at_a_time();
    // README: `bench --mlffr ...; --sweep`; conf/rated-queue.click names
    // `paraclick bench --sweep rates conf/rated-queue.click --out rates`.
    let dir = scratch();
    let prefix = dir.path().join("rates");
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/rated-queue.click");
    let out = ok(&[
        "bench",
        "--sweep",
        "rates",
        conf.to_str().unwrap(),
        "--max-rate",
        "20000",
        "--trial",
        "0.1",
        "--warmup",
        "0.02",
        "--out",
        prefix.to_str().unwrap(),
    ]);
    let p = prefix.display();
    assert!(
        out.contains(&format!("wrote {p}.csv, {p}.json, {p}.svg")),
        "{out}"
    );
    let csv = std::fs::read_to_string(format!("{p}.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("offered kpps,measured_pps,model_pps,measured_bps,drops")
    );
    let csv_rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(csv_rows.len(), 12, "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{p}.json")).unwrap()).unwrap();
    assert_eq!(json["x"], "offered kpps");
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 12, "{json}");
    for (i, (r, pt)) in csv_rows.iter().zip(points).enumerate() {
        // The offered rates step up to --max-rate in twelfths.
        let offered = 20.0 * (i + 1) as f64 / 12.0;
        let x = pt["x"].as_f64().unwrap();
        assert!((x - offered).abs() < 1e-9, "{i}: {x}");
        assert!((num(&r[0]) - offered).abs() < 1e-9, "{r:?}");
        let measured = pt["measured_pps"].as_f64().unwrap();
        let model = pt["model_pps"].as_f64().unwrap();
        // The CSV is the JSON rounded.
        assert_eq!(r[1], format!("{measured:.0}"), "{r:?}");
        assert_eq!(r[2], format!("{model:.0}"), "{r:?}");
        assert_eq!(r[4], pt["drops"].to_string(), "{r:?}");
        // Something was forwarded; the model forwards at most the offer.
        assert!(measured > 0.0, "{r:?}");
        assert!(model > 0.0 && model <= offered * 1e3 + 1e-6, "{r:?}");
    }
    let svg = std::fs::read_to_string(format!("{p}.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{svg}");
    assert!(svg.contains("forwarding rate against input rate"));
    assert!(svg.contains("measured") && svg.contains("model"));
    // One mark per measured point.
    assert_eq!(svg.matches("<circle").count(), 12);
}

// ---- --report costs ----------------------------------------------------

#[test]
fn cost_report_of_the_flow_split_accounts_for_every_packet_and_cycle() {
    let _g = common::one_at_a_time();
    // README: `paraclick -j 2 conf/flow-split.click --report costs`.
    let out = paraclick(&[
        "-j",
        "2",
        "--no-pin",
        "conf/flow-split.click",
        "N=20000",
        "--report",
        "costs",
        "-h",
        "c0.count",
        "-h",
        "c1.count",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (report, handlers) = (text(&out.stderr), text(&out.stdout));
    let count = |h: &str| -> u64 {
        handlers
            .split(&format!("{h}:\n"))
            .nth(1)
            .and_then(|v| v.lines().next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {h} in {handlers}"))
    };
    let (c0, c1) = (count("c0.count"), count("c1.count"));
    assert!(c0 + c1 >= 20_000, "{handlers}");
    // element, class, packets, cyc/pkt, share.
    let el: BTreeMap<String, (u64, f64)> = report
        .lines()
        .skip_while(|l| !l.starts_with("element"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let share = num(f[4].trim_end_matches('%'));
            (f[0].to_string(), (num(f[2]) as u64, share))
        })
        .collect();
    let packets = |n: &str| el.get(n).unwrap_or_else(|| panic!("no {n}:\n{report}")).0;
    // Each packet counted once where it passed: the source's all went to
    // the switch and into the two queues; each path's elements after its
    // queue saw what its counter counted.
    assert_eq!(packets("hs"), packets("src"), "{report}");
    assert_eq!(packets("q0") + packets("q1"), packets("src"), "{report}");
    for (i, c) in [(0, c0), (1, c1)] {
        for e in ["u", "w", "c"] {
            assert_eq!(packets(&format!("{e}{i}")), c, "{report}");
        }
        assert!(packets(&format!("q{i}")) >= c, "{report}");
    }
    // The shares are of the threads' busy cycles: together about all of
    // them (each rounded to a tenth).
    let share: f64 = el.values().map(|e| e.1).sum();
    assert!(
        (90.0..=100.0 + 0.05 * el.len() as f64).contains(&share),
        "element shares sum to {share}%:\n{report}"
    );
    let tasks: Vec<(String, f64)> = report
        .lines()
        .skip_while(|l| !l.starts_with("task"))
        .skip(1)
        .take_while(|l| !l.starts_with('('))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), num(f[5].trim_end_matches('%')))
        })
        .collect();
    let names: BTreeSet<&str> = tasks.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["src[0]", "u0[0]", "u1[0]"]),
        "{report}"
    );
    let share: f64 = tasks.iter().map(|t| t.1).sum();
    assert!(
        (90.0..=100.15).contains(&share),
        "task shares sum to {share}%:\n{report}"
    );
}

// ---- --pool ------------------------------------------------------------

#[test]
fn pool_bounds_the_buffers_a_thread_holds() {
    // README: `--pool BUFFERS` (per-thread packet pool). A source filling
    // a queue nobody drains gets as many buffers as the pool has, and no
    // more; without the option, all it asks for.
    let conf = "src :: InfiniteSource(LIMIT 1000, BURST 8) -> q :: Queue(10000); \
                q -> Idle; Script(wait 1s, stop)";
    let held = |pool: Option<&str>| -> (u64, u64) {
        let mut a = vec!["--simtime", "-e", conf, "-h", "src.count", "-h", "q.length"];
        if let Some(p) = pool {
            a.extend(["--pool", p]);
        }
        let out = ok(&a);
        let v: Vec<u64> = out
            .lines()
            .filter(|l| !l.ends_with(':') && !l.is_empty())
            .map(|l| l.trim().parse().unwrap())
            .collect();
        (v[0], v[1])
    };
    assert_eq!(held(Some("50")), (50, 50));
    assert_eq!(held(Some("300")), (300, 300));
    assert_eq!(held(None), (1000, 1000));
}

// ---- -f ----------------------------------------------------------------

#[test]
fn f_reads_the_configuration_from_a_file_or_standard_input() {
    let dir = scratch();
    let file = dir.path().join("r.click");
    let conf = "define($N 5);\nInfiniteSource(LIMIT $N, STOP true) -> c :: Counter -> Discard;\n";
    std::fs::write(&file, conf).unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(ok(&["-f", f, "-h", "c.count"]), "5\n");
    // With a define overridden, as for a file named without -f.
    assert_eq!(ok(&["-f", f, "N=7", "-h", "c.count"]), "7\n");
    assert_eq!(ok(&["--file", f, "N=3", "-h", "c.count"]), "3\n");
    // "-": standard input.
    let out = common::with_stdin(&["-f", "-", "N=9", "-h", "c.count"], conf);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "9\n");
    // The other subcommands take -f too.
    assert_eq!(ok(&["check", "-f", f]), format!("{f}: ok (3 elements)\n"));
    // A file and -e, or two files: an error.
    let out = paraclick(&["-f", f, "-e", "Idle -> Discard"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("give a configuration file or -e, not both"),
        "{}",
        text(&out.stderr)
    );
    let out = paraclick(&["-f", f, f]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("unexpected argument '{f}'")),
        "{}",
        text(&out.stderr)
    );
}

// ---- ProtocolTranslator46 / 64 ------------------------------------------

/// The Internet checksum of `parts` concatenated (even lengths but the
/// last), computed here rather than with the code under test.
fn cksum(parts: &[&[u8]]) -> u16 {
    let mut s: u32 = 0;
    let all: Vec<u8> = parts.concat();
    for c in all.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], flags_frag: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0x10, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
    h[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    h[6..8].copy_from_slice(&flags_frag.to_be_bytes());
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = cksum(&[&h]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn pseudo4(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> Vec<u8> {
    let mut p = src.to_vec();
    p.extend_from_slice(&dst);
    p.extend_from_slice(&[0, proto]);
    p.extend_from_slice(&(len as u16).to_be_bytes());
    p
}

fn udp4(src: [u8; 4], dst: [u8; 4], sp: u16, dp: u16, data: &[u8]) -> Vec<u8> {
    let mut u = sp.to_be_bytes().to_vec();
    u.extend_from_slice(&dp.to_be_bytes());
    u.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(data);
    let c = cksum(&[&pseudo4(src, dst, 17, u.len()), &u]);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    ipv4(17, src, dst, 0, &u)
}

fn echo4(src: [u8; 4], dst: [u8; 4], id: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![8, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(data);
    let c = cksum(&[&m]);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ipv4(1, src, dst, 0, &m)
}

fn mapped(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..].copy_from_slice(&a);
    m
}

/// The checksum over an IPv6 packet's upper-layer pseudo-header and
/// payload: zero when the payload's checksum is right.
fn verify6(p: &[u8]) -> u16 {
    let mut ph = p[8..40].to_vec();
    ph.extend_from_slice(&(p.len() as u32 - 40).to_be_bytes());
    ph.extend_from_slice(&[0, 0, 0, p[6]]);
    cksum(&[&ph, &p[40..]])
}

#[test]
fn protocol_translators_turn_ipv4_into_ipv6_and_back() {
    // README: "the IPv6/IPv4 translation gateway: AddressTranslator,
    // ProtocolTranslator64, ProtocolTranslator46". IPv4 packets from a
    // trace become IPv6 (written), and back again (written).
    let (a, b) = ([10, 0, 0, 1], [192, 0, 2, 7]);
    let packets = vec![
        udp4(a, b, 1234, 53, b"hello, translator"),
        echo4(a, b, 77, b"ping data"),
        // A fragment: not translated, counted.
        ipv4(17, a, b, 0x2000, &[0; 16]),
        udp4(b, a, 53, 1234, b"odd"),
    ];
    let dir = scratch();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    common::pcap::write_pcap(Path::new(&path("in.pcap")), 101, &packets);
    let conf = format!(
        "FromDump({}, STOP true) -> t46 :: ProtocolTranslator46 -> c6 :: Counter \
         -> ToDump({}, ENCAP IP) -> t64 :: ProtocolTranslator64 -> c4 :: Counter \
         -> ToDump({}, ENCAP IP);",
        path("in.pcap"),
        path("v6.pcap"),
        path("back.pcap")
    );
    let out = ok(&[
        "-e",
        &conf,
        "-h",
        "t46.drops",
        "-h",
        "c6.count",
        "-h",
        "t64.drops",
        "-h",
        "c4.count",
    ]);
    assert_eq!(
        out,
        "t46.drops:\n1\n\nc6.count:\n3\n\nt64.drops:\n0\n\nc4.count:\n3\n\n",
    );
    let v6 = common::pcap::read_pcap(Path::new(&path("v6.pcap")));
    assert_eq!(v6.len(), 3);
    let translated = [&packets[0], &packets[1], &packets[3]];
    for (p6, p4) in v6.iter().zip(translated) {
        assert_eq!(p6[0] >> 4, 6, "{p6:x?}");
        // Traffic class from the TOS, no flow label.
        assert_eq!((p6[0] & 0xf) << 4 | p6[1] >> 4, p4[1], "{p6:x?}");
        assert_eq!(p6[1] & 0xf, 0);
        assert_eq!(&p6[2..4], &[0, 0]);
        assert_eq!(
            usize::from(u16::from_be_bytes([p6[4], p6[5]])),
            p4.len() - 20,
            "payload length"
        );
        assert_eq!(p6[7], 64, "hop limit from the TTL");
        assert_eq!(&p6[8..24], &mapped(p4[12..16].try_into().unwrap()));
        assert_eq!(&p6[24..40], &mapped(p4[16..20].try_into().unwrap()));
        assert_eq!(verify6(p6), 0, "upper-layer checksum: {p6:x?}");
        match p4[9] {
            17 => {
                assert_eq!(p6[6], 17);
                // Ports, length and data unchanged; only the checksum
                // differs.
                assert_eq!(&p6[40..46], &p4[20..26]);
                assert_eq!(&p6[48..], &p4[28..]);
            }
            1 => {
                assert_eq!(p6[6], 58, "ICMP becomes ICMPv6");
                assert_eq!((p6[40], p6[41]), (128, 0), "echo request");
                assert_eq!(&p6[44..], &p4[24..], "identifier, sequence, data");
            }
            _ => unreachable!(),
        }
    }
    // And back: the very packets that went in (ID 0, no flags, so the
    // IPv4 header is rebuilt as it was, checksums included).
    let back = common::pcap::read_pcap(Path::new(&path("back.pcap")));
    assert_eq!(
        back,
        translated.iter().map(|p| p.to_vec()).collect::<Vec<_>>()
    );
}

// ---- Socket --------------------------------------------------------------

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Stops the router through its control socket; the values printed for
/// its `-h` handlers.
fn stop(mut p: Proc) -> String {
    let mut c = Client::tcp(p.control_port());
    assert_eq!(c.write("stop", "").0, 200);
    assert_eq!(p.wait_exit(30), 0, "{}", p.stderr());
    let out = p.out.lock().unwrap().clone();
    out
}

#[test]
fn tcp_socket_serves_a_client_both_ways() {
    // README: "Socket (TCP, UDP and Unix sockets)". The router listens;
    // what a client sends comes back through the graph, changed by it.
    let port = free_port().to_string();
    let conf = format!(
        "s :: Socket(TCP, 127.0.0.1, {port}); \
         s -> StoreData(0, X) -> c :: Counter -> s;"
    );
    let p = Proc::start(&[
        "-p",
        "0",
        "-e",
        &conf,
        "-h",
        "s.received",
        "-h",
        "s.sent",
        "-h",
        "c.count",
    ]);
    let t0 = Instant::now();
    let mut conn = loop {
        match TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())) {
            Ok(s) => break s,
            Err(e) => {
                assert!(t0.elapsed() < Duration::from_secs(20), "connect: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    for msg in ["hello", "router", "third message"] {
        conn.write_all(msg.as_bytes()).unwrap();
        let mut got = vec![0u8; msg.len()];
        conn.read_exact(&mut got).unwrap();
        assert_eq!(text(&got), format!("X{}", &msg[1..]));
    }
    let out = stop(p);
    assert_eq!(out, "s.received:\n3\n\ns.sent:\n3\n\nc.count:\n3\n\n");
}

#[test]
fn udp_socket_client_sends_and_receives() {
    // The router is the client: it sends its source's packets to a UDP
    // peer (this test) and counts what the peer answers.
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let port = peer.local_addr().unwrap().port();
    let conf = format!(
        "InfiniteSource(DATA \"ping\", LIMIT 3, STOP false) \
         -> u :: Socket(UDP, 127.0.0.1, {port}, CLIENT true) \
         -> c :: Counter -> Discard;"
    );
    let mut p = Proc::start(&[
        "-p",
        "0",
        "-e",
        &conf,
        "-h",
        "u.sent",
        "-h",
        "u.received",
        "-h",
        "c.count",
    ]);
    let mut b = [0u8; 64];
    for i in 0..3 {
        let (n, from) = peer.recv_from(&mut b).unwrap();
        assert_eq!(&b[..n], b"ping");
        peer.send_to(format!("pong {i}").as_bytes(), from).unwrap();
    }
    // Wait for the router to count the three answers.
    let mut c = Client::tcp(p.control_port());
    let t0 = Instant::now();
    while c.count("c.count") < 3 {
        assert!(p.running(), "{}", p.stderr());
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "answers not counted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(c.count("c.count"), 3);
    drop(c);
    let out = stop(p);
    assert_eq!(out, "u.sent:\n3\n\nu.received:\n3\n\nc.count:\n3\n\n");
}
