//! The command line as a newcomer meets it: help, suggestions, reports
//! and warnings.

mod common;

use common::{bin, paraclick};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn every_subcommand_answers_help() {
    for sub in [
        "check",
        "graph",
        "bench",
        "make-ip-conf",
        "model",
        "parallelize",
        "ctl",
        "doc",
    ] {
        // None of these has a -h of its own (the top-level run's -h reads
        // handlers, as Click's does).
        for flag in ["--help", "-h"] {
            let out = paraclick(&[sub, flag]);
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "paraclick {sub} {flag}: {:?}\n{}",
                out.status,
                text(&out.stderr)
            );
            assert!(
                stdout.contains(&format!("Usage: paraclick {sub}")),
                "paraclick {sub} {flag} printed no usage:\n{stdout}"
            );
        }
    }
}

#[test]
fn xform_help_says_how_pattern_files_are_given() {
    // Both ways click-xform takes them: -p FILE, and files after the
    // configuration's.
    let out = paraclick(&["xform", "--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    assert!(
        help.contains("-p, --patterns <FILE>")
            && help.contains("[FILE] [PATTERNFILE ...] [NAME=VALUE ...]")
            && help.contains("then pattern files"),
        "{help}"
    );
    // The other tools' positional files are configurations only.
    let out = paraclick(&["flatten", "--help"]);
    assert!(!text(&out.stdout).contains("PATTERNFILE"));
}

#[test]
fn top_level_keeps_h_for_handlers_and_answers_help() {
    let out = paraclick(&["--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("Usage: paraclick"));
    let out = paraclick(&[
        "-q",
        "-e",
        "Idle -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // One -h: the value alone, as Click's driver prints it.
    assert_eq!(text(&out.stdout), "0\n");
}

#[test]
fn doc_suggests_the_class_meant() {
    // Class names are case-sensitive: a case-insensitive match comes first,
    // then the nearest by edit distance.
    for (asked, meant) in [("queue", "Queue"), ("Cuonter", "Counter")] {
        let out = paraclick(&["doc", asked]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("unknown element class '{asked}'"))
                && err.contains(&format!("did you mean '{meant}'?")),
            "paraclick doc {asked}: {err}"
        );
    }
    // Nothing close: no suggestion.
    let out = paraclick(&["doc", "Zzzzzzzzzzzzzzzz"]);
    assert!(!out.status.success());
    assert!(!text(&out.stderr).contains("did you mean"));
}

#[test]
fn drops_report_says_when_nothing_dropped() {
    let out = paraclick(&[
        "--report",
        "drops",
        "-e",
        "InfiniteSource(LIMIT 10, STOP true) -> Discard",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).lines().any(|l| l == "no drops"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn drops_report_and_handler_give_the_reasons() {
    // A UDP packet whose IP header checksum is off by one.
    let bad = "4500001c00000000401166ce0a0000010a00000204d2003500080000";
    let conf = format!(
        "InfiniteSource(DATA \\<{bad}>, LIMIT 3, STOP true) -> c :: CheckIPHeader -> Discard"
    );
    let out = paraclick(&["--report", "drops", "-h", "c.drop_reasons", "-e", &conf]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.lines().skip_while(|l| *l != "c: 3 dropped").nth(1) == Some("  bad IP checksum: 3"),
        "{err}"
    );
    assert_eq!(text(&out.stdout), "bad IP checksum 3\n");
    // The class's documentation lists them.
    let doc = text(&paraclick(&["doc", "CheckIPHeader"]).stdout);
    assert!(
        doc.contains("Drop reasons (the `drop_reasons` handler): `tiny packet`, `bad IP version`,"),
        "{doc}"
    );
}

/// The most a table's printed shares may sum to: 100%, and each row's
/// rounding to a tenth.
fn share_bound(rows: &[(String, u64, f64)]) -> f64 {
    100.0 + 0.05 * rows.len() as f64
}

/// The rows of a cost report's table that starts with `header`: name,
/// packets, share.
fn cost_rows(report: &str, header: &str) -> Vec<(String, u64, f64)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .take_while(|l| !l.trim().is_empty() && !l.starts_with('('))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = f.len();
            let packets = if header == "task" { f[3] } else { f[n - 3] };
            (
                f[0].to_string(),
                packets
                    .parse()
                    .unwrap_or_else(|_| panic!("packets in {l:?}")),
                f[n - 1]
                    .trim_end_matches('%')
                    .parse()
                    .unwrap_or_else(|_| panic!("share in {l:?}")),
            )
        })
        .collect()
}

/// The cost report (stderr) and the handlers' output (stdout) of a run.
fn costs_and_handlers(args: &[&str], conf: &str) -> (String, String) {
    let mut a = vec!["--report", "costs"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-e", conf]);
    let out = paraclick(&a);
    assert!(out.status.success(), "{}", text(&out.stderr));
    (text(&out.stderr), text(&out.stdout))
}

fn costs(args: &[&str], conf: &str) -> String {
    costs_and_handlers(args, conf).0
}

#[test]
fn cost_report_counts_each_packet_once() {
    let (r, out) = costs_and_handlers(
        &["-j", "1", "-h", "d.count", "-h", "q0.length"],
        "src :: InfiniteSource(LIMIT 24000, STOP true) -> q0 :: Queue \
         -> uq :: Unqueue -> d :: Discard",
    );
    let el = cost_rows(&r, "element");
    let packets = |n: &str| {
        el.iter()
            .find(|e| e.0 == n)
            .unwrap_or_else(|| panic!("no {n} in\n{r}"))
            .1
    };
    // Every packet went through once: the source made it, the queue took
    // it (once, not in and again out), the puller moved it to the sink
    // (all but what the queue still holds when the source stops the run).
    assert_eq!(packets("src"), 24000, "{r}");
    assert_eq!(packets("q0"), 24000, "{r}");
    let handler = |h: &str| -> u64 {
        let v = out
            .split(&format!("{h}:\n"))
            .nth(1)
            .and_then(|v| v.lines().next());
        v.and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {h} in {out}"))
    };
    let (sunk, held) = (handler("d.count"), handler("q0.length"));
    assert_eq!(sunk + held, 24000, "{out}");
    assert_eq!(packets("uq"), sunk, "{r}");
    assert_eq!(packets("d"), sunk, "{r}");
    let share: f64 = el.iter().map(|e| e.2).sum();
    assert!(
        share <= share_bound(&el),
        "element shares sum to {share}%:\n{r}"
    );
    let tasks = cost_rows(&r, "task");
    assert_eq!(tasks.len(), 2, "{r}");
    let share: f64 = tasks.iter().map(|t| t.2).sum();
    assert!(
        share <= share_bound(&tasks),
        "task shares sum to {share}%:\n{r}"
    );
}

#[test]
fn cost_report_shares_stay_within_the_busy_cycles() {
    // Timer-driven work runs outside task runs: its elements' cycles are
    // busy cycles too (here they are nearly all of them).
    let r = costs(
        &["-j", "1", "--simtime"],
        "src :: TimedSource(INTERVAL 0.001, LIMIT 300, STOP true) -> c :: Counter \
         -> q :: Queue -> Unqueue -> Discard",
    );
    let el = cost_rows(&r, "element");
    let packets = |n: &str| el.iter().find(|e| e.0 == n).map(|e| e.1);
    // The source is listed, with the packets it sent.
    assert_eq!(packets("src"), Some(300), "{r}");
    assert_eq!(packets("c"), Some(300), "{r}");
    let share: f64 = el.iter().map(|e| e.2).sum();
    assert!(
        share <= share_bound(&el),
        "element shares sum to {share}%:\n{r}"
    );
    // Three sources on two threads: the scheduler may move a task, and a
    // task's share stays a part of the whole.
    let r = costs(
        &["-j", "2", "--no-pin"],
        "s1 :: InfiniteSource(LIMIT 200000, STOP true) -> Queue -> Unqueue -> Discard; \
         s2 :: InfiniteSource(LIMIT 200000) -> Queue -> Unqueue -> Discard; \
         s3 :: InfiniteSource(LIMIT 200000) -> Queue -> Unqueue -> Discard",
    );
    for table in ["element", "task"] {
        let rows = cost_rows(&r, table);
        let share: f64 = rows.iter().map(|e| e.2).sum();
        assert!(
            share <= share_bound(&rows),
            "{table} shares sum to {share}%:\n{r}"
        );
    }
}

#[test]
fn more_threads_than_cpus_warns_once() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let j = (cpus + 1).to_string();
    let conf = "InfiniteSource(LIMIT 10, STOP true) -> Discard";
    let out = paraclick(&["-j", &j, "--no-pin", "-e", conf]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let s = if cpus == 1 { "" } else { "s" };
    let warning = format!("-j {j}: this machine has {cpus} CPU{s}; threads will share them");
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    assert!(
        err.contains("(not pinned, so the kernel can move them"),
        "{err}"
    );
    // With --pin they are pinned all the same, and the warning says so.
    let out = paraclick(&["-j", &j, "--pin", "-e", conf]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("{warning} (pinned, as --pin asks)")),
        "{}",
        text(&out.stderr)
    );
    // As many threads as CPUs: no warning.
    let out = paraclick(&["-j", &cpus.to_string(), "--no-pin", "-e", conf]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("threads will share"));
}

#[test]
fn check_reports_argument_errors_with_structural_ones() {
    // An unknown class, a port no class has, a push output used twice,
    // and bad arguments to known elements: all reported in one go.
    let conf = "InfiniteSource -> Cuonter -> Discard(5);\n\
                Idle -> [3]Counter -> Discard;\n\
                t :: Tee(FOO) -> Discard; t -> Discard;\n\
                s :: InfiniteSource(LIMIT lots); s -> Discard; s -> Discard;";
    let out = paraclick(&["check", "-e", conf]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    for want in [
        "undeclared element 'Cuonter'",
        "Counter has no input 3",
        "push output",
        "Discard: too many arguments ('5')",
        "Tee: N: expected unsigned integer",
        "InfiniteSource: LIMIT",
    ] {
        assert!(err.contains(want), "no {want:?} in:\n{err}");
    }
}

/// Click's driver conventions for -h: one handler prints its value alone;
/// several, or an element pattern or class, print `NAME:` before and an
/// empty line after each value.
#[test]
fn handler_output_follows_clicks_driver() {
    let conf = "a :: Counter; b :: Counter; q :: Queue(7); Idle -> a -> b -> q -> Discard";
    let run = |hs: &[&str]| {
        let mut args = vec!["-q", "-e", conf];
        for h in hs {
            args.extend(["-h", h]);
        }
        let out = paraclick(&args);
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    assert_eq!(run(&["q.capacity"]), (true, "7\n".into(), String::new()));
    assert_eq!(
        run(&["a.count", "q.capacity"]),
        (
            true,
            "a.count:\n0\n\nq.capacity:\n7\n\n".into(),
            String::new()
        )
    );
    // A glob over element names, and a class name.
    assert_eq!(run(&["[ab].count"]).1, "a.count:\n0\n\nb.count:\n0\n\n");
    assert_eq!(run(&["Queue.capacity"]).1, "q.capacity:\n7\n\n");
    // Elements matching without the handler are skipped; no match at all
    // is an error.
    assert_eq!(run(&["*.capacity"]).1, "q.capacity:\n7\n\n");
    let (ok, out, err) = run(&["z*.count"]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("no element matching 'z*'"), "{err}");
}

/// Without a file or -e the configuration comes from standard input, as
/// with Click's driver (`click < CONFIG`); NAME=value still applies.
#[test]
fn no_file_reads_the_configuration_from_standard_input() {
    let out = common::with_stdin(
        &["N=4", "-h", "c.count"],
        "InfiniteSource(LIMIT $N, STOP true) -> c :: Counter -> Discard;",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "4\n");
    // Its errors name <stdin>.
    let out = common::with_stdin(&["-q"], "Idle -> Nonesuch;");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("<stdin>:1"),
        "{}",
        text(&out.stderr)
    );
    // The subcommands keep their names: a file named like one is run as
    // ./NAME or -f NAME.
    let out = common::with_stdin(&["check"], "Idle -> Discard;");
    assert_eq!(text(&out.stdout), "<stdin>: ok (2 elements)\n");
}

/// Click's requirement for compactly printed configurations is accepted.
#[test]
fn require_compact_config_is_accepted() {
    let out = paraclick(&["-q", "-e", "require(compact_config); Idle -> Discard"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A message an element gives while it initializes takes Click's form
/// `FILE:LINE: While initializing 'NAME :: CLASS':` where a program reads
/// standard error.
#[test]
fn init_messages_take_clicks_form_for_programs() {
    let out = paraclick(&["-q", "-e", "Idle -> Discard;\nt :: TokenBucketTest"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "config:2: While initializing 't :: TokenBucketTest':\n  All tests pass!\n"
    );
}

/// Where standard error is not a terminal (or with --errors click), run
/// errors take Click's form, which programs compare; --errors rich keeps
/// paraclick's located form with the source line.
#[test]
fn run_errors_take_clicks_form_for_programs() {
    let conf = "i :: Idle;\nm :: Message(hello);\nrw :: IPAddrRewriter(pattern 1.0.0.x - 0 1);\ni -> rw -> i;";
    let out = paraclick(&["-q", "-e", conf]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(
            "config:2: While configuring 'm :: Message':\n  hello\n\
             config:3: While configuring 'rw :: IPAddrRewriter':\n  input spec 0: "
        ),
        "{err}"
    );
    assert!(
        err.ends_with("\nRouter could not be initialized!\n"),
        "{err}"
    );
    // The language's errors: no trailer; a note elsewhere is kept.
    let out = paraclick(&["-q", "--errors", "click", "-e", "x :: Idle;\nx :: Idle;"]);
    assert_eq!(
        text(&out.stderr),
        "config:2: redeclaration of element 'x'\nconfig:1: element 'x' previously declared here\n"
    );
    let out = paraclick(&["-q", "--errors", "rich", "-e", "Idle -> Cuonter -> Discard"]);
    let err = text(&out.stderr);
    assert!(
        err.starts_with("<expr>:1:9: undeclared element 'Cuonter'\n   1 | Idle"),
        "{err}"
    );
    assert!(err.contains("did you mean 'Counter'?"), "{err}");
    // Click's words for it: a word where an element goes is an undeclared
    // element, a word after `::` an unknown class; its lexer reports
    // both, so no trailer.
    let out = paraclick(&[
        "-q",
        "--errors",
        "click",
        "-e",
        "Idle -> Cuonter(1) -> Discard;\nx :: Cuonter;",
    ]);
    assert_eq!(
        text(&out.stderr),
        "config:1: undeclared element 'Cuonter'\nconfig:2: unknown element class 'Cuonter'\n"
    );
}

/// A router whose configuration compiles no packet filter and opens no
/// AF_XDP socket maps neither libpcap nor libxdp and libbpf (nor the
/// libraries they pull in): each is opened when a BPF_FILTER or
/// PRIORITY_FILTER is first compiled, or a METHOD XDP socket opened.
#[test]
fn a_router_without_filters_or_xdp_maps_no_libpcap_or_libxdp() {
    let mut child = std::process::Command::new(bin())
        .args(["-e", "Idle -> Discard;"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("paraclick starts");
    let pid = child.id();
    // The router's worker thread runs once main has: by then the loader
    // has mapped every library the binary links.
    let threads = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .and_then(|n| n.trim().parse::<u32>().ok())
            })
            .unwrap_or(0)
    };
    let t0 = std::time::Instant::now();
    while threads() < 2 && t0.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(maps.contains("libc.so"), "no map read:\n{maps}");
    assert!(!maps.contains("libpcap"), "libpcap mapped:\n{maps}");
    assert!(!maps.contains("libxdp"), "libxdp mapped:\n{maps}");
    assert!(!maps.contains("libbpf"), "libbpf mapped:\n{maps}");
}
