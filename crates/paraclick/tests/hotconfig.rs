//! Hot reconfiguration (`-R`, the `hotconfig` handler), end to end: the
//! `paraclick` binary runs traffic at a steady rate while configurations
//! are written to `hotconfig` through a raw control-socket client, and
//! every packet is accounted for at the end; plus the state each element
//! class carries over, checked on routers built in the test.

mod common;

use common::ctl::Client;
use common::proc::Proc;
use paraclick_runtime::Router;
use std::time::{Duration, Instant};

/// The traffic configuration: a paced source through a queue crossing to
/// another task (delivered), and a second source into a queue nobody
/// drains (held, then tail-dropped). `variant` changes the configuration
/// as a swap would: the held queue's capacity (shrinking drops, counted)
/// and an extra element on the delivered path.
fn traffic(variant: usize) -> String {
    let hold_cap = if variant.is_multiple_of(2) { 400 } else { 300 };
    let extra = if variant.is_multiple_of(3) {
        "-> n :: Null "
    } else {
        ""
    };
    format!(
        "src :: RatedSource(LENGTH 64, RATE 20000) -> c1 :: Counter {extra}-> q :: Queue(4000) \
         -> uq :: Unqueue -> c2 :: Counter -> Discard;\n\
         src2 :: RatedSource(LENGTH 64, RATE 2000) -> c3 :: Counter -> hold :: Queue({hold_cap}) \
         -> Unqueue(ACTIVE false) -> Discard;\n"
    )
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn swap_under_traffic(threads: &str, swaps: usize) {
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("t.click");
    std::fs::write(&conf, traffic(0)).unwrap();
    let handlers = [
        "src.count",
        "c1.count",
        "c2.count",
        "q.length",
        "q.drops",
        "src2.count",
        "c3.count",
        "hold.length",
        "hold.drops",
    ];
    let mut args = vec![
        "-R",
        "-j",
        threads,
        "-p",
        "0",
        "--report",
        "drops",
        conf.to_str().unwrap(),
    ];
    for h in &handlers {
        args.push("-h");
        args.push(h);
    }
    let mut p = Proc::start(&args);
    let mut c = Client::tcp(p.control_port());
    // Traffic flows before the swaps.
    let mut last = c.rises("c1.count");
    let mut held_seen = 0;
    for i in 1..=swaps {
        let (code, t) = c.write_data("hotconfig", &traffic(i));
        assert_eq!(code, 200, "swap {i}: {t:?}");
        // Counts continue from the old router's: never back to zero.
        let now = c.count("c1.count");
        assert!(now >= last, "swap {i}: c1.count went from {last} to {now}");
        last = now;
        held_seen = held_seen.max(c.count("hold.length"));
        assert_eq!(c.count("q.capacity"), 4000);
        assert_eq!(
            c.count("hold.capacity"),
            if i % 2 == 0 { 400 } else { 300 },
            "swap {i} took effect"
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(c.count("c1.count") > last, "traffic flows after the swaps");
    let report = c.read("hotswaps");
    let mut lines = report.lines();
    assert_eq!(lines.next(), Some(format!("swaps {swaps}").as_str()));
    // `pause_us P stop_us S state_us T ...`: the pause and its parts.
    let field = |k: usize| -> Vec<f64> {
        report
            .lines()
            .filter(|l| l.starts_with("pause_us "))
            .map(|l| {
                l.split_whitespace()
                    .nth(2 * k + 1)
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    let (pauses, stops, states) = (field(0), field(1), field(2));
    assert_eq!(pauses.len(), swaps);
    // Older builds (PARACLICK_BIN) have no start part: the rest of the pause.
    let starts: Vec<f64> = (0..swaps)
        .map(|i| pauses[i] - stops[i] - states[i])
        .collect();
    let dist = |v: &[f64]| -> String {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
        format!(
            "median {:.0} p99 {:.0} max {:.0} us",
            q(0.5),
            q(0.99),
            v[v.len() - 1]
        )
    };
    eprintln!(
        "hotconfig -j {threads}: pause {}; stop part {}; state part {}; start part {}",
        dist(&pauses),
        dist(&stops),
        dist(&states),
        dist(&starts)
    );
    let max = pauses.iter().cloned().fold(0.0, f64::max);
    let med = median(&mut pauses.clone());
    let (code, t) = c.write_data("stop", "");
    assert_eq!(code, 200, "stop: {t:?}");
    assert_eq!(p.wait_exit(30), 0, "{}", p.err.lock().unwrap());
    let v = |h: &str| p.printed(h);
    eprintln!(
        "hotconfig -j {threads}: {swaps} swaps under traffic: pause median {med:.0} us, max {max:.0} us; \
         delivered {}, queued {}, dropped {} (held {}, dropped {})",
        v("c2.count"),
        v("q.length"),
        v("q.drops"),
        v("hold.length"),
        v("hold.drops")
    );
    // Exact conservation across every swap: each packet the sources made
    // was delivered, is queued, or was dropped with a count.
    assert_eq!(v("src.count"), v("c1.count"));
    assert_eq!(
        v("c1.count"),
        v("c2.count") + v("q.length") + v("q.drops"),
        "delivered + queued + dropped"
    );
    // The delivered path loses nothing: its queue holds 200 ms of traffic
    // (4,000 packets at 20,000 a second), and no swap pauses it for that
    // long (they take microseconds; the bound is generous for a loaded
    // machine).
    assert!(max < 200_000.0, "worst pause {max:.0} us");
    assert_eq!(v("q.drops"), 0, "drops on the delivered path");
    assert_eq!(v("src2.count"), v("c3.count"));
    assert_eq!(v("c3.count"), v("hold.length") + v("hold.drops"));
    // The held queue kept its packets across the swaps (nothing drains it).
    assert!(
        v("hold.length") >= 300 && held_seen >= 300,
        "held {held_seen}"
    );
    // The router's own per-element drop counts (carried over too) agree.
    let err = p.err.lock().unwrap().clone();
    let reported = |name: &str| -> u64 {
        err.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .and_then(|r| r.strip_suffix(" dropped"))
            .map(|n| n.parse().unwrap())
            .unwrap_or(0)
    };
    assert_eq!(reported("hold"), v("hold.drops"), "{err}");
    assert_eq!(reported("q"), v("q.drops"), "{err}");
    assert_eq!(err.matches("hotconfig: swapped in").count(), swaps);
}

#[test]
fn hundred_swaps_under_traffic_at_two_threads_lose_nothing() {
    swap_under_traffic("2", 100);
}

#[test]
fn swaps_at_one_and_three_threads_lose_nothing() {
    swap_under_traffic("1", 10);
    swap_under_traffic("3", 10);
}

#[test]
fn a_bad_configuration_leaves_the_old_router_running() {
    let _g = common::one_at_a_time();
    let mut p = Proc::start(&[
        "-R",
        "-j",
        "2",
        "-p",
        "0",
        "--errors",
        "rich",
        "-e",
        &traffic(0),
    ]);
    let mut c = Client::tcp(p.control_port());
    let before = c.read("config");
    // A syntax error, then an element whose arguments are wrong; each
    // under Click's heading line.
    let (code, t) = c.write_data("hotconfig", "src :: RatedSource -> ;\n");
    assert_eq!(code, 520, "{t:?}");
    assert_eq!(t[0], "Write handler 'hotconfig' error:", "{t:?}");
    assert!(t[1].starts_with("config:1:"), "located: {t:?}");
    assert!(t.iter().any(|l| l.contains('^')), "with a caret: {t:?}");
    let bad = traffic(0).replace("Queue(4000)", "Queue(-5)");
    let (code, t) = c.write_data("hotconfig", &bad);
    assert_eq!(code, 520, "{t:?}");
    assert!(
        t[1].starts_with("config:1:") && t[1].contains("q :: Queue") && t[1].contains("CAPACITY"),
        "{t:?}"
    );
    // Unknown class, on line 2.
    let (code, t) = c.write_data("hotconfig", "Idle -> Discard;\nx :: NoSuchClass;\n");
    assert_eq!(code, 520, "{t:?}");
    assert!(t[1].starts_with("config:2:"), "{t:?}");
    // A word where an element goes: Click's words, with the suggestion.
    let (code, t) = c.write_data("hotconfig", "Idle -> Cuonter -> Discard;\n");
    assert_eq!(code, 520, "{t:?}");
    assert_eq!(t[1], "config:1:9: undeclared element 'Cuonter'", "{t:?}");
    assert!(
        t.iter().any(|l| l.contains("did you mean 'Counter'?")),
        "{t:?}"
    );
    // The old router runs on, unchanged.
    assert_eq!(c.read("config"), before);
    // Traffic still flows.
    c.rises("c2.count");
    assert_eq!(c.read("hotswaps").lines().next(), Some("swaps 0"));
    let (code, _) = c.write_data("stop", "");
    assert_eq!(code, 200);
    assert_eq!(p.wait_exit(30), 0);
}

#[test]
fn hotconfig_needs_dash_r() {
    let _g = common::one_at_a_time();
    let mut p = Proc::start(&["-p", "0", "-e", "Idle -> Discard;"]);
    let mut c = Client::tcp(p.control_port());
    let (code, t) = c.write_data("hotconfig", "Idle -> Discard;");
    assert_eq!(code, 530, "{t:?}");
    assert!(t[0].contains("-R"), "{t:?}");
    c.write_data("stop", "");
    assert_eq!(p.wait_exit(30), 0);
}

// ---- ControlSocket elements across swaps ----

impl Proc {
    /// The port of the `n`th ControlSocket that said it listens (VERBOSE).
    fn element_port(&self, n: usize) -> u16 {
        let t0 = Instant::now();
        let prefix = "ControlSocket: listening on 127.0.0.1:";
        loop {
            {
                let e = self.err.lock().unwrap();
                let ports: Vec<u16> = e
                    .lines()
                    .filter_map(|l| l.strip_prefix(prefix))
                    .map(|p| p.trim().parse().unwrap())
                    .collect();
                if ports.len() > n {
                    return ports[n];
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no ControlSocket: {}",
                self.err.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The traffic configuration with a ControlSocket line and `more`.
fn with_socket(variant: usize, socket: &str, more: &str) -> String {
    format!("{}cs :: {socket};\n{more}", traffic(variant))
}

#[test]
fn a_control_socket_element_keeps_its_socket_and_clients_across_swaps() {
    let _g = common::one_at_a_time();
    let sock = "ControlSocket(TCP, 0, LOCALHOST true, VERBOSE true)";
    let mut p = Proc::start(&["-R", "-j", "2", "-e", &with_socket(0, sock, "")]);
    let port = p.element_port(0);
    let mut c = Client::tcp(port);
    let before = c.count("c1.count");
    // The client writes hotconfig through the element's own socket: the
    // new configuration has the same ControlSocket, and a new element.
    let next = with_socket(1, sock, "extra :: Counter; Idle -> extra -> Discard;\n");
    let (code, t) = c.write_data("hotconfig", &next);
    assert_eq!(code, 200, "{t:?}");
    // Same connection, new router: its handlers, its configuration, and
    // the counts carried over.
    assert_eq!(c.count("hold.capacity"), 300);
    assert_eq!(c.count("extra.count"), 0);
    assert!(c.read("config").contains("extra :: Counter"));
    assert!(c.read("flatconfig").contains("extra :: Counter"));
    assert!(c.count("c1.count") >= before);
    assert!(c.read("cs.handlers").contains("name"), "the new element");
    // The socket was taken over, not opened again: no second listening
    // line, and new clients connect to the same port.
    std::thread::sleep(Duration::from_millis(50));
    {
        let e = p.err.lock().unwrap();
        assert_eq!(e.matches("ControlSocket: listening on").count(), 1, "{e}");
        assert!(
            e.contains("ControlSocket: taking over TCP 127.0.0.1:0"),
            "{e}"
        );
    }
    let mut c2 = Client::tcp(port);
    assert_eq!(c2.count("hold.capacity"), 300);
    // A third configuration makes the socket READONLY: connections opened
    // after the swap are read-only, those opened before keep their rights.
    let ro = "ControlSocket(TCP, 0, LOCALHOST true, READONLY true)";
    let (code, t) = c2.write_data("hotconfig", &with_socket(2, ro, ""));
    assert_eq!(code, 200, "{t:?}");
    assert_eq!(c.count("hold.capacity"), 400);
    let mut c3 = Client::tcp(port);
    assert_eq!(c3.count("hold.capacity"), 400);
    let (code, _) = c3.write("c1.reset", "");
    assert_eq!(code, 530, "read-only after the swap");
    let (code, t) = c2.write("c2.reset", "");
    assert_eq!(code, 200, "{t:?}");
    assert_eq!(c.read("hotswaps").lines().next(), Some("swaps 2"));
    let (code, t) = c.write_data("stop", "");
    assert_eq!(code, 200, "{t:?}");
    assert_eq!(p.wait_exit(30), 0, "{}", p.err.lock().unwrap());
}

#[test]
fn a_unix_control_socket_element_is_taken_over_and_dropped_with_its_element() {
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ctl");
    let sock = format!("ControlSocket(UNIX, {})", path.display());
    let mut p = Proc::start(&["-R", "-j", "2", "-p", "0", "-e", &with_socket(0, &sock, "")]);
    let tcp_port = p.control_port();
    let t0 = Instant::now();
    while !path.exists() {
        assert!(t0.elapsed() < Duration::from_secs(20), "no socket file");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = Client::unix(&path);
    let (code, t) = c.write_data("hotconfig", &with_socket(1, &sock, ""));
    assert_eq!(code, 200, "{t:?}");
    assert_eq!(c.count("hold.capacity"), 300, "same connection, new router");
    assert!(path.exists(), "the socket file stays");
    let mut c2 = Client::unix(&path);
    assert_eq!(c2.count("hold.capacity"), 300);
    // A configuration without it: the socket closes after the swap, with
    // its connections, and its file goes away.
    let (code, t) = c2.write_data("hotconfig", &traffic(2));
    assert_eq!(code, 200, "{t:?}");
    let t0 = Instant::now();
    while path.exists() {
        assert!(t0.elapsed() < Duration::from_secs(5), "socket file removed");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut other = Client::tcp(tcp_port);
    assert_eq!(other.count("hold.capacity"), 400);
    let (code, _) = other.write_data("stop", "");
    assert_eq!(code, 200);
    assert_eq!(p.wait_exit(30), 0, "{}", p.err.lock().unwrap());
}

// ---- State carried over, class by class (routers built here) ----

fn reg() -> paraclick_runtime::Registry {
    paraclick_io::full_registry()
}

/// Runs `a` until its sources stop, builds `b`, takes `a`'s state.
fn swap(a: &str, b: &str, threads: usize, before: impl Fn(&Router)) -> Router {
    let reg = reg();
    let old = Router::from_str(a, &reg, threads).unwrap();
    old.run();
    before(&old);
    let new = Router::from_str(b, &reg, threads).unwrap();
    new.take_state_from(&old).unwrap();
    new
}

#[test]
fn queue_and_counter_state_at_every_thread_count() {
    for threads in [1, 2, 4] {
        let a = "s :: InfiniteSource(LENGTH 60, LIMIT 50, STOP true) -> c :: Counter \
                 -> q :: Queue(100) -> Discard(ACTIVE false);";
        // A smaller queue in the new router: 20 fit, 30 are dropped, counted.
        let b = "s :: InfiniteSource(LENGTH 60, LIMIT 50, STOP true) -> c :: Counter \
                 -> q :: Queue(20) -> Discard(ACTIVE false);";
        let new = swap(a, b, threads, |old| {
            assert_eq!(old.read_handler("q.length").unwrap(), "50");
            // Number the queued packets 0..49 (first byte), to see which
            // ones the new queue keeps and in what order.
            let mut b = old.pull_from("q", 0, 50).unwrap().unwrap();
            for (i, p) in b.iter_mut().enumerate() {
                p.data_mut()[0] = i as u8;
            }
            old.push_into("q", 0, b).unwrap();
        });
        let h = |x: &str| new.read_handler(x).unwrap();
        assert_eq!(h("c.count"), "50", "-j {threads}");
        assert_eq!(h("s.count"), "50");
        assert_eq!(h("q.length"), "20");
        assert_eq!(h("q.drops"), "30");
        assert_eq!(new.total_drops(), 30);
        // The source's LIMIT counts what the old one sent: it sends no more
        // (and, its limit reached before, does not stop the router again).
        std::thread::scope(|sc| {
            let stop = new.stopper();
            sc.spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                stop.stop();
            });
            new.run();
        });
        assert_eq!(h("s.count"), "50");
        assert_eq!(h("c.count"), "50");
        // The packets taken are the old router's first 20, in order, and
        // usable.
        let b = new.pull_from("q", 0, 100).unwrap().unwrap();
        let firsts: Vec<u8> = b.iter().map(|p| p.data()[0]).collect();
        assert_eq!(firsts, (0..20).collect::<Vec<u8>>(), "-j {threads}");
    }
}

#[test]
fn route_table_state_follows_the_configuration() {
    let a = "Idle -> rt :: RadixIPLookup(10.0.0.0/8 0, 0.0.0.0/0 1); rt[0] -> Discard; rt[1] -> Discard;";
    let reg = reg();
    let old = Router::from_str(a, &reg, 2).unwrap();
    old.write_handler("rt.add", "192.168.0.0/16 10.0.0.1 0")
        .unwrap();
    // Same configuration: the table with the route a handler added.
    let same = Router::from_str(a, &reg, 2).unwrap();
    same.take_state_from(&old).unwrap();
    let t = same.read_handler("rt.table").unwrap();
    assert!(t.contains("192.168.0.0/16"), "{t}");
    // Changed configuration: its routes, not the old table.
    let changed = Router::from_str(&a.replace("10.0.0.0/8", "172.16.0.0/12"), &reg, 2).unwrap();
    changed.take_state_from(&old).unwrap();
    let t = changed.read_handler("rt.table").unwrap();
    assert!(
        t.contains("172.16.0.0/12") && !t.contains("192.168.0.0/16"),
        "{t}"
    );
}

#[test]
fn arp_table_state() {
    let a = "Idle -> [0]arp :: ARPQuerier(10.0.0.1, 00:01:02:03:04:05) -> Discard; Idle -> [1]arp;";
    let reg = reg();
    let old = Router::from_str(a, &reg, 2).unwrap();
    old.write_handler("arp.insert", "10.0.0.7 00:0a:0b:0c:0d:0e")
        .unwrap();
    let new = Router::from_str(a, &reg, 2).unwrap();
    assert_eq!(new.read_handler("arp.count").unwrap(), "0");
    new.take_state_from(&old).unwrap();
    assert_eq!(new.read_handler("arp.count").unwrap(), "1");
    let t = new.read_handler("arp.table").unwrap();
    assert!(
        t.to_lowercase().contains("00-0a-0b-0c-0d-0e") || t.contains("00:0A"),
        "{t}"
    );
}

#[test]
fn nat_mappings_state() {
    let a = "s :: InfiniteSource(LENGTH 32, LIMIT 3, STOP true) \
             -> UDPIPEncap(10.0.0.2, 4000, 198.51.100.1, 53) \
             -> rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1) -> Discard; rw[1] -> Discard;";
    let new = swap(a, a, 2, |old| {
        assert!(old.read_handler("rw.table").unwrap().contains("192.0.2.1"));
    });
    let t = new.read_handler("rw.table").unwrap();
    assert!(t.contains("10.0.0.2") && t.contains("192.0.2.1"), "{t}");
    // A different class of the same name takes nothing.
    let b = a.replace("IPRewriter", "UDPRewriter");
    let other = swap(a, &b, 2, |_| {});
    assert!(!other.read_handler("rw.table").unwrap().contains("10.0.0.2"));
}

/// The tracer's records and the trace request in effect go over to the
/// new router: traces taken before the swap still show, under their
/// numbers and with the new router's element names; the packets still to
/// mark are marked by the new router, numbered after the old ones.
#[test]
fn traces_survive_a_swap() {
    let a = "s :: InfiniteSource(LENGTH 60, LIMIT 3, STOP true) -> c :: Counter -> d :: Discard;";
    let b = "s :: InfiniteSource(LENGTH 60, LIMIT 5, STOP true) -> c :: Counter -> x :: Counter -> d :: Discard;";
    let new = swap(a, b, 1, |old| {
        assert!(old.read_handler("trace").unwrap().contains("no traces"));
    });
    drop(new);
    let reg = reg();
    let old = Router::from_str(a, &reg, 1).unwrap();
    old.write_handler("trace_add", "5").unwrap();
    old.run();
    let before = old.read_handler("trace").unwrap();
    assert!(
        before.contains("trace 3:") && !before.contains("trace 4:"),
        "{before}"
    );
    let new = Router::from_str(b, &reg, 1).unwrap();
    new.take_state_from(&old).unwrap();
    let t = new.read_handler("trace").unwrap();
    for id in 1..=3 {
        assert!(t.contains(&format!("trace {id}:")), "{t}");
    }
    assert!(t.contains("s[0] -> [0]c :: Counter"), "{t}");
    // Two more to mark: the new router's first two packets, traces 4, 5.
    new.run();
    let t = new.read_handler("trace").unwrap();
    assert!(t.contains("trace 4:") && t.contains("trace 5:"), "{t}");
    assert!(!t.contains("trace 6:"), "{t}");
    assert!(t.contains("c[0] -> [0]x :: Counter"), "{t}");
}

// ---- hotconfig written by the router's own Script or DriverManager ----

/// Runs paraclick with `args` in a directory holding `files` (name,
/// text); the configuration can `$(cat NAME)` them.
fn run_in_dir(files: &[(&str, &str)], args: &[&str]) -> (String, String, i32) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = std::process::Command::new(common::bin())
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("run paraclick");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The old configuration: five packets counted, then a DriverManager
/// writes NEW's text to `hotconfig` and goes on to its end (a stop).
const OLD: &str = "i :: InfiniteSource(LIMIT 5, STOP false) -> c :: Counter -> Discard;
DriverManager(wait 0.1s, write hotconfig $(cat NEW), print \"after $(c.count)\")";

/// The new one: its counter takes the old one's count; three more
/// packets, then it stops by itself.
const NEW: &str = "c :: Counter;
j :: InfiniteSource(LIMIT 3, STOP true) -> c -> Discard;";

#[test]
fn a_driver_manager_writes_hotconfig_and_the_new_router_runs() {
    for time in ["--realtime", "--simtime"] {
        let args: Vec<&str> = [time, "-R", "-h", "c.count", "-e", OLD]
            .into_iter()
            .filter(|a| *a != "--realtime")
            .collect();
        let (out, err, code) = run_in_dir(&[("NEW", NEW)], &args);
        assert_eq!(code, 0, "{time}: {err}");
        // The write returned at once (the swap waits for the writer to
        // return): the old router's count, then the new router's end.
        assert!(out.contains("after 5\n"), "{time}: {out}");
        assert!(out.ends_with("8\n"), "{time}: count carried over: {out}");
        // Quiet, as in Click: no report line, no error.
        assert!(!err.contains("hotconfig"), "{time}: {err}");
    }
}

#[test]
fn simulated_time_goes_on_across_a_swap() {
    // The new router's clock starts where the old one's stood (1 s on),
    // so its tables' ages and timeouts go on too.
    let (out, err, code) = run_in_dir(
        &[("NEW", "Script(print $(now), stop);")],
        &[
            "--simtime",
            "-R",
            "-e",
            "DriverManager(wait 1.5s, write hotconfig $(cat NEW), wait 10s)",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "1000000001.500000\n", "{err}");
}

/// With Click's form of errors (`--errors click`, or standard error not a
/// terminal), a failed hotconfig is answered as Click answers it: the
/// heading line, `FILE:LINE: message` lines, and after errors found while
/// building the router, "Router could not be initialized!"; a word where
/// an element goes that is neither an element nor a class is an
/// undeclared element, as Click's lexer says, and no router was made.
#[test]
fn a_bad_configuration_is_answered_in_clicks_form() {
    let _g = common::one_at_a_time();
    let conf = "Idle -> s :: Switch(0) -> Idle; s[1] -> Idle;";
    let mut p = Proc::start(&["-R", "-p", "0", "--errors", "click", "-e", conf]);
    let mut c = Client::tcp(p.control_port());
    let (code, t) = c.write_data("hotconfig", "Print");
    assert_eq!(code, 520, "{t:?}");
    assert_eq!(
        t,
        [
            "Write handler 'hotconfig' error:",
            "config:1: 'Print@1 :: Print' input 0 unused",
            "config:1: 'Print@1 :: Print' output 0 unused",
            "Router could not be initialized!",
        ]
    );
    let (code, t) = c.write_data("hotconfig", "Idle -> Pofd -> Discard;\nx :: Nope;");
    assert_eq!(code, 520, "{t:?}");
    assert_eq!(
        t,
        [
            "Write handler 'hotconfig' error:",
            "config:1: undeclared element 'Pofd'",
            "config:2: unknown element class 'Nope'",
        ]
    );
    // A syntax error: the language's, no trailer either.
    let (code, t) = c.write_data("hotconfig", "Idle -> ;");
    assert_eq!(code, 520, "{t:?}");
    assert_eq!(t[0], "Write handler 'hotconfig' error:");
    assert!(t[1].starts_with("config:1: "), "{t:?}");
    assert_ne!(t.last().unwrap(), "Router could not be initialized!");
    assert_eq!(c.read("s.config"), "0");
    let (code, _) = c.write_data("stop", "");
    assert_eq!(code, 200);
    assert_eq!(p.wait_exit(30), 0);
}

#[test]
fn a_broken_configuration_from_a_script_leaves_the_old_router_running() {
    let (out, err, code) = run_in_dir(
        &[("NEW", "c :: Counter;\nx :: NoSuchClass;\n")],
        &["-R", "--errors", "rich", "-h", "c.count", "-e", OLD],
    );
    assert_eq!(code, 0, "{err}");
    // Located in the text written, as a control socket's write is.
    assert!(
        err.lines().any(|l| l
            .trim_start()
            .starts_with("config:2:6: unknown element class 'NoSuchClass'")),
        "{err}"
    );
    // The old router ran on, and ended with the DriverManager.
    assert!(out.contains("after 5\n"), "{out}");
    assert!(out.ends_with("5\n"), "{out}");
}

#[test]
fn a_script_needs_dash_r_to_write_hotconfig() {
    let (out, err, code) = run_in_dir(&[("NEW", NEW)], &["-h", "c.count", "-e", OLD]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("hotconfig: hot reconfiguration not enabled (run with -R)"),
        "{err}"
    );
    assert!(out.ends_with("5\n"), "{out}");
}
