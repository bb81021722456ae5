//! Configurations that crashed the router or read files they should not
//! (issue 35), against the binary: `paraclick check`, a run, and a
//! `hotconfig` over the control socket, after which the router must still
//! be running and answering.

mod common;

use common::ctl::Client;
use common::proc::{bin, Proc};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn tmpdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("robustness")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn paraclick(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .arg("--no-pin")
        .stdin(Stdio::null())
        .output()
        .expect("run paraclick")
}

fn check(args: &[&str]) -> Output {
    Command::new(bin())
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run paraclick check")
}

/// Standard error, its first 4000 bytes (enough for the messages).
fn stderr(o: &Output) -> String {
    let e = String::from_utf8_lossy(&o.stderr);
    let mut end = e.len().min(4000);
    while !e.is_char_boundary(end) {
        end -= 1;
    }
    e[..end].to_string()
}

/// Compound classes nested by use: `C{k}` uses `C{k-1}` `uses` times in a
/// row, and `top` is a `C{depth-1}`.
fn nested_by_use(depth: usize, uses: usize) -> String {
    let mut s = String::from("elementclass C0 { input -> Null -> output }\n");
    for k in 1..depth {
        s.push_str(&format!("elementclass C{k} {{ input"));
        for _ in 0..uses {
            s.push_str(&format!(" -> C{}", k - 1));
        }
        s.push_str(" -> output }\n");
    }
    s.push_str(&format!("Idle -> top :: C{} -> Discard;\n", depth - 1));
    s
}

/// `head -> Null -> ... -> tail` with `n` Nulls, one a line.
fn chain(n: usize, head: &str, tail: &str) -> String {
    let mut s = String::from(head);
    for _ in 0..n {
        s.push_str("\n  -> Null");
    }
    s.push_str(tail);
    s.push('\n');
    s
}

const PUSH_9000: &str = "InfiniteSource(LIMIT 5, STOP true)";
const PULL_HEAD: &str = "InfiniteSource(LIMIT 5) -> Queue";

#[test]
fn long_chains_are_refused_by_check_and_by_a_run() {
    let d = tmpdir();
    let push = d.path().join("push.click");
    std::fs::write(&push, chain(9000, PUSH_9000, " -> Discard;")).unwrap();
    let pull = d.path().join("pull.click");
    std::fs::write(&pull, chain(1500, PULL_HEAD, " -> Unqueue -> Discard;")).unwrap();
    for (file, kind) in [(&push, "push"), (&pull, "pull")] {
        let f = file.to_str().unwrap();
        let o = check(&[f]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains(&format!("{kind} chain too long")), "{e}");
        assert!(e.contains("split it with a Queue"), "{e}");
        let o = paraclick(&[f]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains(&format!("{kind} chain too long")), "{e}");
        assert!(!e.contains("has overflowed its stack"), "{e}");
    }
}

#[test]
fn chains_at_the_bound_run_on_the_workers_stack() {
    let max = paraclick_lang::check::MAX_CHAIN;
    let d = tmpdir();
    // push: source, Nulls, Counter, Discard: MAX elements; a batch of
    // 32 and single packets (BURST 1) both go the whole way
    for burst in [32, 1] {
        let f = d.path().join(format!("push{burst}.click"));
        let head = format!("InfiniteSource(LIMIT 200, BURST {burst}, STOP true)");
        std::fs::write(&f, chain(max - 3, &head, " -> c :: Counter -> Discard;")).unwrap();
        let o = paraclick(&[f.to_str().unwrap(), "-h", "c.count"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "200\n");
    }
    // pull: Unqueue pulls through the Nulls from the Queue
    let f = d.path().join("pull.click");
    let head = "InfiniteSource(LIMIT 200, STOP true) -> Queue(1000)";
    let text = chain(max - 2, head, " -> Unqueue -> c :: Counter -> Discard;");
    std::fs::write(&f, text).unwrap();
    let o = paraclick(&[f.to_str().unwrap(), "-h", "c.count"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the source stops the router when done; the queue may still hold some
    let n: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    assert!(n <= 200, "{n}");
}

#[test]
fn exponential_expansion_is_refused_before_allocating() {
    let d = tmpdir();
    let f = d.path().join("exp.click");
    let text = nested_by_use(24, 2);
    assert!(text.len() < 1300);
    std::fs::write(&f, &text).unwrap();
    let f = f.to_str().unwrap();
    let o = check(&["--max-elements", "5000", f]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("configuration too large"), "{e}");
    assert!(e.contains("5000"), "{e}");
    assert!(e.contains("note: while expanding 'top' :: C23"), "{e}");
    // the default bound too (2^23 Nulls and their connections)
    let o = check(&[f]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("configuration too large"), "{e}");
    assert!(!e.contains("memory allocation"), "{e}");
    // the option does not refuse what fits
    let o = check(&["--max-elements", "5000", "-e", &nested_by_use(10, 2)]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn escape_sequences_in_a_configuration_do_not_reach_the_terminal() {
    let o = check(&[
        "-e",
        "a :: Idle\x1b[2J\x1b]0;pwned\x07; a -> Print(\u{202e}x\x1b[31m, FOO 1) -> Discard;",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!o.stderr.is_empty());
    for bad in [b'\x1b', b'\x07'] {
        assert!(!o.stderr.contains(&bad), "{:?}", stderr(&o));
    }
    assert!(!stderr(&o).contains('\u{202e}'), "{}", stderr(&o));
    assert!(stderr(&o).contains("\\x1b"), "{}", stderr(&o));
}

#[test]
fn configuration_warnings_carry_no_terminal_controls() {
    // a warning quoting an argument (ToIPFlowDumps' NOTIFIER)
    let o = check(&[
        "-e",
        "Idle -> ToIPFlowDumps(OUTPUT_PATTERN x%s, NOTIFIER a\x1b[2Jb);",
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(e.contains("warning: NOTIFIER a\\x1b[2Jb"), "{e}");
    assert!(!o.stderr.contains(&b'\x1b'), "{e:?}");
}

#[test]
fn a_library_that_is_not_a_configuration_is_not_quoted() {
    let d = tmpdir();
    let secret = d.path().join("shadow");
    std::fs::write(&secret, "root:$6$s3cr3t:19000:0:99999:7:::\n").unwrap();
    let conf = format!("require(library {});\nIdle -> Discard;\n", secret.display());
    let o = check(&["-e", &conf]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("is not a configuration"), "{e}");
    assert!(!e.contains("s3cr3t") && !e.contains("root"), "{e}");
}

// ---- hotconfig ----------------------------------------------------------

/// A router run with `-R -p 0` on `conf` (and `extra` options).
struct Router(Proc);

impl Router {
    fn start(conf: &Path, extra: &[&str]) -> Router {
        let mut args = vec!["-R", "-p", "0"];
        args.extend_from_slice(extra);
        args.push(conf.to_str().unwrap());
        Router(Proc::start(&args))
    }

    fn client(&self) -> Client {
        Client::tcp(self.0.control_port())
    }

    /// The router is running and answers: a fresh client reads a handler.
    fn assert_alive(&mut self) {
        assert!(self.0.running(), "the router exited: {}", self.0.stderr());
        let mut c = self.client();
        assert_eq!(c.read("c.count").trim(), "0");
    }
}

const RUNNING: &str = "Idle -> c :: Counter -> Discard;\n";

fn running(d: &Path) -> PathBuf {
    let conf = d.join("run.click");
    std::fs::write(&conf, RUNNING).unwrap();
    conf
}

#[test]
fn hotconfigs_that_crashed_the_router_are_refused_and_it_runs_on() {
    let d = tmpdir();
    let mut r = Router::start(&running(d.path()), &["--max-elements", "100000"]);
    let cases = [
        (nested_by_use(250, 1), "nested too deeply by use"),
        (nested_by_use(3000, 1), "nested too deeply by use"),
        (nested_by_use(24, 2), "configuration too large"),
        (
            chain(9000, PUSH_9000, " -> Discard;"),
            "push chain too long",
        ),
        (
            chain(1500, PULL_HEAD, " -> Unqueue -> Discard;"),
            "pull chain too long",
        ),
    ];
    for (text, want) in cases {
        let mut c = r.client();
        let (code, msg) = c.hotconfig(&format!("{text}{RUNNING}"));
        assert_eq!(code, 520, "{msg}");
        assert!(msg.contains(want), "{want}: {msg}");
        r.assert_alive();
    }
    // and good ones still swap in: compounds nested by use to the bound
    // (built on the hotconfig's own thread, not the connection's small
    // stack), and a plain one
    let deepest = nested_by_use(paraclick_lang::MAX_EXPANSION_DEPTH, 1);
    let (code, msg) = r.client().hotconfig(&format!("{deepest}{RUNNING}"));
    assert_eq!(code, 200, "{msg}");
    r.assert_alive();
    let (code, msg) = r
        .client()
        .hotconfig("Idle -> c :: Counter -> Null -> Discard;\n");
    assert_eq!(code, 200, "{msg}");
    r.assert_alive();
}

#[test]
fn hotconfig_errors_carry_no_terminal_controls() {
    let d = tmpdir();
    // In Click's form (standard error no terminal) and paraclick's, which
    // quotes the line.
    for rich in [false, true] {
        let extra: &[&str] = if rich { &["--errors", "rich"] } else { &[] };
        let mut r = Router::start(&running(d.path()), extra);
        let (code, msg) = r
            .client()
            .hotconfig("x :: Idle\x1b[2J; x -> Print(\x1b]0;t\x07, NOPE 1) -> Discard;\n");
        assert_eq!(code, 520, "{msg}");
        assert!(!msg.contains('\x1b') && !msg.contains('\x07'), "{msg:?}");
        assert!(!rich || msg.contains("\\x1b"), "{msg}");
        r.assert_alive();
    }
}

/// A pcap file with no packets.
fn empty_pcap(p: &Path) {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    for x in [0u32, 0, 65535, 1] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(p, v).unwrap();
}

#[test]
fn a_hotconfig_reads_files_only_under_allowed_directories() {
    let d = tmpdir();
    let conf_dir = d.path().join("conf");
    let lib_dir = d.path().join("lib");
    let outside = d.path().join("outside");
    for x in [&conf_dir, &lib_dir, &outside] {
        std::fs::create_dir(x).unwrap();
    }
    std::fs::write(
        lib_dir.join("l.click"),
        "elementclass L { input -> output }\n",
    )
    .unwrap();
    std::fs::write(
        outside.join("o.click"),
        "elementclass O { input -> output }\n",
    )
    .unwrap();
    std::fs::write(outside.join("secret"), "root:$6$s3cr3t:19000\n").unwrap();
    empty_pcap(&conf_dir.join("in.pcap"));
    empty_pcap(&outside.join("out.pcap"));
    let conf = running(&conf_dir);
    let mut r = Router::start(&conf, &["-C", lib_dir.to_str().unwrap()]);

    let hot = |r: &Router, text: String| r.client().hotconfig(&format!("{text}{RUNNING}"));
    // allowed: a library on the CLICKPATH, a trace beside the configuration
    let (code, msg) = hot(
        &r,
        "require(library l.click);\nIdle -> L -> Discard;\n".into(),
    );
    assert_eq!(code, 200, "{msg}");
    let trace = conf_dir.join("in.pcap");
    let (code, msg) = hot(&r, format!("FromDump({}) -> Discard;\n", trace.display()));
    assert_eq!(code, 200, "{msg}");
    r.assert_alive();
    // refused: anything else, and nothing of it quoted
    let refused = [
        format!("require(library {});\n", outside.join("o.click").display()),
        format!("require(library {});\n", outside.join("secret").display()),
        "require(library /etc/passwd);\n".to_string(),
        format!(
            "require(library {}/../outside/o.click);\n",
            lib_dir.display()
        ),
        format!(
            "FromDump({}) -> Discard;\n",
            outside.join("out.pcap").display()
        ),
        format!(
            "FromDump({}/../outside/out.pcap) -> Discard;\n",
            conf_dir.display()
        ),
        "FromIPSummaryDump(/etc/passwd) -> Discard;\n".to_string(),
        "FromTcpdump(/etc/passwd) -> Discard;\n".to_string(),
        "FromNetFlowSummaryDump(/etc/passwd) -> Discard;\n".to_string(),
        "FromCapDump(/etc/passwd) -> Discard;\n".to_string(),
    ];
    for text in refused {
        let (code, msg) = hot(&r, text.clone());
        assert_eq!(code, 520, "{text}: {msg}");
        assert!(
            msg.contains("a configuration from a control socket may read"),
            "{text}: {msg}"
        );
        assert!(!msg.contains("s3cr3t") && !msg.contains("root:"), "{msg}");
        r.assert_alive();
    }
    drop(r);

    // --hotconfig-files any: the operator lets a hotconfig read anything
    let mut r = Router::start(&conf, &["--hotconfig-files", "any"]);
    let (code, msg) = r.client().hotconfig(&format!(
        "FromDump({}) -> Discard;\n{RUNNING}",
        outside.join("out.pcap").display()
    ));
    assert_eq!(code, 200, "{msg}");
    r.assert_alive();
}

#[test]
fn a_hotconfig_with_many_errors_gets_a_bounded_reply() {
    let d = tmpdir();
    let mut r = Router::start(&running(d.path()), &["--errors", "rich"]);
    let text: String = (0..20_000).map(|i| format!("Nope{i};\n")).collect();
    let (code, msg) = r.client().hotconfig(&format!("{text}{RUNNING}"));
    assert_eq!(code, 520);
    assert_eq!(
        msg.matches("undeclared element").count(),
        100,
        "{}",
        &msg[..500]
    );
    assert!(
        msg.contains("19900 more errors not shown"),
        "{}",
        &msg[msg.len() - 300..]
    );
    r.assert_alive();
}

/// A configuration without elements has nothing that could run or stop:
/// the run says so and exits, as Click does, rather than waiting for a
/// signal (it used to wait forever, with `--simtime` too).
#[test]
fn a_configuration_without_elements_exits_with_a_warning() {
    for extra in [&[][..], &["--simtime"][..]] {
        let mut child = Command::new(bin())
            .args(["-e", "// nothing but a comment", "--no-pin"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run paraclick");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for paraclick") {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("an empty configuration ran on ({extra:?})");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(status.success(), "{extra:?}: {status}: {err}");
        assert!(
            err.contains("configuration has no elements, exiting"),
            "{extra:?}: {err}"
        );
    }
}
