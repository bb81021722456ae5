//! Live capture (`paraclick ctl capture E[PORT] FILE [N]`): a capture of a
//! connection equals, byte for byte, a ToDump placed at the same point
//! (push and pull connections, one and two threads); a capture whose
//! writer falls behind drops and counts while the router loses nothing;
//! streamed to `-` it is the same pcap; the file name from the control
//! socket cannot leave the capture directory, reuse a file, or open a
//! FIFO or a link.

mod common;

use common::ctl::Client;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Run {
    child: Child,
    err: Arc<Mutex<String>>,
    port: u16,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Run {
    /// `paraclick ARGS -p 0 -e CONF` in `dir`; its control port.
    fn start(dir: &Path, args: &[&str], conf: &str) -> Run {
        let mut child = Command::new(common::bin())
            .current_dir(dir)
            .args(args)
            .args(["--no-pin", "-p", "0", "-e", conf])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().unwrap();
        let e2 = err.clone();
        std::thread::spawn(move || {
            let mut b = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut b) {
                if n == 0 {
                    break;
                }
                e2.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&b[..n]));
            }
        });
        let t0 = Instant::now();
        let prefix = "control socket listening on 127.0.0.1:";
        let port = loop {
            {
                let e = err.lock().unwrap();
                if let Some(i) = e.find(prefix) {
                    if let Some((p, _)) = e[i + prefix.len()..].split_once('\n') {
                        break p.trim().parse().unwrap();
                    }
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{}",
                err.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        Run { child, err, port }
    }

    fn ctl(&self) -> Client {
        Client::tcp(self.port)
    }

    /// Writes `capture`; the reply's code and text.
    fn capture(&self, value: &str) -> (u16, String) {
        let (code, text) = self.ctl().write_data("capture", value);
        (code, text.join("\n"))
    }

    fn state(&self) -> String {
        self.ctl().read("capture")
    }

    /// A number of the `capture` handler's state.
    fn field(&self, key: &str) -> u64 {
        let s = self.state();
        s.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key}: {s}"))
            .parse()
            .unwrap()
    }

    /// Waits for the process to end by itself.
    fn wait_exit(&mut self) {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                assert!(s.success(), "{}", self.err.lock().unwrap());
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the router did not stop: {}",
                self.err.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn tmpdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// `n` Ethernet/IPv4/UDP packets of various lengths, one a millisecond.
fn trace(path: &Path, n: usize) {
    let pkts: Vec<(u64, Vec<u8>)> = (0..n)
        .map(|i| {
            let len = 60 + (i * 37) % 1400;
            let mut p = vec![0u8; len];
            p[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
            p[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            p[12..14].copy_from_slice(&[0x08, 0x00]);
            p[14] = 0x45;
            p[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
            p[22] = 64;
            p[23] = 17;
            p[26..30].copy_from_slice(&[10, 0, 0, 1]);
            p[30..34].copy_from_slice(&[10, 0, (i >> 8) as u8, i as u8]);
            for (k, b) in p[42..].iter_mut().enumerate() {
                *b = (i + k) as u8;
            }
            (1_700_000_000_000 + i as u64, p)
        })
        .collect();
    common::pcap::write_pcap_timed(path, 1, &pkts);
}

const N: usize = 3000;

/// The trace through a Counter, a ToDump (push), a queue, and a ToDump
/// after the queue's puller: FromDump waits for `src.active`.
fn conf() -> String {
    "src :: FromDump(in.pcap, ACTIVE false) -> c :: Counter \
     -> pushref :: ToDump(push-ref.pcap) -> q :: Queue(10000) -> uq :: Unqueue \
     -> pullref :: ToDump(pull-ref.pcap) -> Discard;"
        .into()
}

fn capture_equals_todump(threads: &str, conn: &str, reference: &str) {
    let dir = tmpdir();
    std::fs::create_dir(dir.path().join("cap")).unwrap();
    trace(&dir.path().join("in.pcap"), N);
    let mut run = Run::start(
        dir.path(),
        &["-j", threads, "--capture-dir", "cap"],
        &conf(),
    );
    let (code, text) = run.capture(&format!("{conn} got.pcap {N}"));
    assert_eq!(code, 200, "{text}");
    assert!(run.state().contains("state running"), "{}", run.state());
    assert_eq!(run.ctl().write_data("src.active", "true").0, 200);
    // Everything through, the capture done: the router stops (and the
    // ToDumps flush).
    let t0 = Instant::now();
    while !(run.ctl().count("pullref.count") == N as u64 && run.state().contains("state done")) {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", run.state());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run.ctl().write_data("stop", "").0, 200);
    run.wait_exit();
    let got = std::fs::read(dir.path().join("cap/got.pcap")).unwrap();
    let want = std::fs::read(dir.path().join(reference)).unwrap();
    let (g, w) = (
        common::pcap::read_pcap(&dir.path().join("cap/got.pcap")),
        common::pcap::read_pcap(&dir.path().join(reference)),
    );
    assert_eq!(w.len(), N, "the reference has every packet");
    assert_eq!(g.len(), w.len(), "{conn}: packets captured");
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(a == b, "{conn}: packet {i} differs");
    }
    // Headers, timestamps and lengths too.
    assert!(got == want, "{conn}: the files differ");
}

#[test]
fn a_capture_of_a_push_connection_equals_a_todump_there() {
    capture_equals_todump("1", "c", "push-ref.pcap");
}

#[test]
fn a_capture_of_a_pull_connection_across_threads_equals_a_todump_there() {
    capture_equals_todump("2", "q[0]", "pull-ref.pcap");
}

#[test]
fn a_capture_streamed_to_standard_output_is_the_same_pcap() {
    let dir = tmpdir();
    std::fs::create_dir(dir.path().join("cap")).unwrap();
    trace(&dir.path().join("in.pcap"), N);
    let run = Run::start(dir.path(), &["--capture-dir", "cap"], &conf());
    let port = run.port.to_string();
    // The client streams until the capture of N packets is done.
    let client = Command::new(common::bin())
        .args(["ctl", "-p", &port, "capture", "c", "-", &N.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !run.state().contains("state running") {
        assert!(t0.elapsed() < Duration::from_secs(20), "{}", run.state());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(run.ctl().write_data("src.active", "true").0, 200);
    let out = client.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let streamed = dir.path().join("streamed.pcap");
    std::fs::write(&streamed, &out.stdout).unwrap();
    drop(run);
    let want = common::pcap::read_pcap(&dir.path().join("in.pcap"));
    let got = common::pcap::read_pcap(&streamed);
    assert_eq!(got.len(), N);
    assert!(got == want, "the streamed packets are the trace's");
    // tcpdump reads it from a pipe.
    if Path::new("/usr/bin/tcpdump").exists() || Path::new("/usr/sbin/tcpdump").exists() {
        let o = Command::new("tcpdump")
            .args(["-n", "-r", "-"])
            .stdin(std::fs::File::open(&streamed).unwrap())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let lines = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            lines
                .lines()
                .filter(|l| l.contains(" IP 10.0.0.1.0 > "))
                .count(),
            N,
            "{lines}"
        );
    }
}

#[test]
fn an_overflowing_capture_drops_and_counts_and_the_router_loses_nothing() {
    let dir = tmpdir();
    // 20000 packets of 1500 bytes, about 30 MB of pcap, to a capture kept
    // in memory (`-`) that nobody reads: its 4 MiB fill, the rest is the
    // capture's drop.
    let limit = 20_000u64;
    let conf = format!(
        "src :: InfiniteSource(LENGTH 1500, LIMIT {limit}, BURST 32, ACTIVE false) \
         -> c :: Counter -> q :: Queue(1000) -> uq :: Unqueue -> out :: Counter -> Discard;"
    );
    let run = Run::start(dir.path(), &["-j", "2"], &conf);
    let (code, text) = run.capture("c - IP");
    assert_eq!(code, 200, "{text}");
    assert_eq!(run.ctl().write_data("src.active", "true").0, 200);
    let t0 = Instant::now();
    loop {
        let done = run.ctl().count("out.count") == limit
            && run.field("written") + run.field("dropped") == limit;
        if done {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{} {}",
            run.ctl().read("out.count"),
            run.state()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (written, dropped) = (run.field("written"), run.field("dropped"));
    eprintln!("capture: {written} written, {dropped} dropped of {limit}");
    assert!(dropped > 0 && written > 0, "{}", run.state());
    assert!(written * 1516 <= 4 << 20, "at most the buffer: {written}");
    // The router: every packet through, nothing dropped anywhere.
    assert_eq!(run.ctl().count("c.count"), limit);
    assert_eq!(run.ctl().count("out.count"), limit);
    assert_eq!(run.ctl().count("q.drops"), 0);
    assert_eq!(run.capture("stop").0, 200);
    let t0 = Instant::now();
    while !run.state().contains("state done") {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", run.state());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn capture_files_stay_in_the_capture_directory() {
    let dir = tmpdir();
    let cap = dir.path().join("cap");
    std::fs::create_dir(&cap).unwrap();
    let outside = dir.path().join("outside.pcap");
    let conf = "src :: InfiniteSource(LENGTH 60, ACTIVE false) -> c :: Counter -> Discard;";
    let run = Run::start(dir.path(), &["--capture-dir", "cap"], conf);
    // Paths: refused, nothing created.
    for bad in [
        "../outside.pcap",
        "..",
        ".",
        "sub/x.pcap",
        outside.to_str().unwrap(),
    ] {
        let (code, text) = run.capture(&format!("c {bad}"));
        assert_eq!(code, 520, "{bad}: {text}");
        assert!(text.contains("not a path"), "{bad}: {text}");
    }
    assert!(!outside.exists());
    // An existing file is not overwritten.
    std::fs::write(cap.join("keep.pcap"), b"precious").unwrap();
    let (code, text) = run.capture("c keep.pcap");
    assert_eq!(code, 520, "{text}");
    assert_eq!(std::fs::read(cap.join("keep.pcap")).unwrap(), b"precious");
    // A FIFO nobody reads: refused at once (opening it would block).
    let fifo = cap.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path only.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let t0 = Instant::now();
    let (code, text) = run.capture("c fifo");
    assert_eq!(code, 520, "{text}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    // A symbolic link to a file outside: not followed.
    std::os::unix::fs::symlink(&outside, cap.join("link.pcap")).unwrap();
    let (code, text) = run.capture("c link.pcap");
    assert_eq!(code, 520, "{text}");
    assert!(!outside.exists(), "written through the link");
    // The control socket still works, and a good name is taken.
    let (code, text) = run.capture("c fine.pcap 1");
    assert_eq!(code, 200, "{text}");
    assert!(cap.join("fine.pcap").exists());
    // A connection that does not exist.
    let (code, text) = run.capture("nosuch fine2.pcap");
    assert_eq!(code, 520);
    assert!(text.contains("no element named 'nosuch'"), "{text}");
    drop(run);

    // Without --capture-dir: files are refused (`-` is not a file).
    let run = Run::start(dir.path(), &[], conf);
    let (code, text) = run.capture("c x.pcap");
    assert_eq!(code, 520);
    assert!(text.contains("--capture-dir"), "{text}");
    assert!(!dir.path().join("x.pcap").exists());
    let (code, text) = run.capture("c - 1");
    assert_eq!(code, 200, "{text}");
    let _: PathBuf = cap;
}

#[test]
fn a_burst_larger_than_the_routers_pool_is_captured_whole() {
    // The copies are the capture's own memory, not the router's packet
    // buffers: with a pool of 64 buffers per thread, a burst of 3000
    // packets the writer cannot follow as they pass waits in the ring
    // (which holds them all) and is written whole, none dropped, and the
    // router loses nothing either.
    let dir = tmpdir();
    let cap = dir.path().join("cap");
    std::fs::create_dir(&cap).unwrap();
    let limit = 3000u64;
    let conf = format!(
        "src :: InfiniteSource(LENGTH 60, LIMIT {limit}, BURST 32, ACTIVE false) \
         -> c :: Counter -> Discard;"
    );
    let run = Run::start(dir.path(), &["--pool", "64", "--capture-dir", "cap"], &conf);
    let (code, text) = run.capture("c burst.pcap");
    assert_eq!(code, 200, "{text}");
    let t0 = Instant::now();
    while !run.state().contains("state running") {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", run.state());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(run.ctl().write_data("src.active", "true").0, 200);
    let t0 = Instant::now();
    while run.field("written") + run.field("dropped") < limit {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", run.state());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run.field("dropped"), 0, "{}", run.state());
    assert_eq!(run.field("written"), limit, "{}", run.state());
    assert_eq!(run.ctl().count("c.count"), limit);
    assert_eq!(run.capture("stop").0, 200);
    let t0 = Instant::now();
    while !run.state().contains("state done") {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", run.state());
        std::thread::sleep(Duration::from_millis(20));
    }
    let data = std::fs::read(cap.join("burst.pcap")).unwrap();
    assert_eq!(data.len() as u64, 24 + limit * (16 + 60));
}
