//! Configurations and options that once crashed, truncated or blocked:
//! each must be a clear error (or run), never an abort, a panic, a lost
//! file or a hang. Runs the binary, as an operator would.

mod common;

use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `conf` fails with a message containing `want`, both in `check` and in a
/// run, and nothing aborts or panics.
fn rejected(conf: &str, want: &str) {
    for args in [vec!["check", "-e", conf], vec!["--simtime", "-e", conf]] {
        let o = common::paraclick(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: {t}");
        assert!(
            !t.contains("panicked") && !t.contains("memory allocation"),
            "{args:?}: {t}"
        );
    }
}

#[test]
fn huge_queue_capacities_are_errors() {
    // 10^10 aborted allocating 128 GiB; 2^64-1 was accepted and the first
    // packet panicked indexing the ring.
    for class in [
        "Queue",
        "SimpleQueue",
        "ThreadSafeQueue",
        "FrontDropQueue",
        "CPUQueue",
    ] {
        for cap in ["10000000000", "18446744073709551615"] {
            rejected(
                &format!("InfiniteSource(LIMIT 3, STOP true) -> {class}({cap}) -> Discard"),
                "more than the maximum, 16777216",
            );
        }
    }
    rejected(
        "InfiniteSource(LIMIT 3, STOP true) -> q :: MixedQueue(10000000000) -> Discard; \
         Idle -> [1]q",
        "more than the maximum, 16777216",
    );
}

#[test]
fn huge_packet_sizes_are_errors() {
    rejected(
        "InfiniteSource(LENGTH 10000000000, LIMIT 3, STOP true) -> Discard",
        "LENGTH 10000000000 is more than the maximum",
    );
    rejected(
        "RandomSource(10000000000, LIMIT 3, STOP true) -> Discard",
        "LENGTH 10000000000 is more than the maximum",
    );
    rejected(
        "TimedSource(HEADROOM 18446744073709551615, LIMIT 3, STOP true) -> Discard",
        "HEADROOM 18446744073709551615 is more than the maximum",
    );
    // A BURST of 10^10 aborted allocating the first batch.
    rejected(
        "InfiniteSource(BURST 10000000000, LIMIT 3, STOP true) -> Discard",
        "BURST must be between 1 and 65536",
    );
    // A time too long for a Duration panicked in the argument parser.
    rejected(
        "InfiniteSource(LIMIT 3, STOP true) -> Queue -> DelayUnqueue(18446744073709551615) \
         -> Discard",
        "DELAY",
    );
}

#[test]
fn huge_thread_counts_are_errors() {
    for j in ["10000000000", "18446744073709551615", "0"] {
        let o = common::paraclick(&["--simtime", "-j", j, "-e", "Idle -> Discard"]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "-j {j}: {t}");
        assert!(t.contains("thread count from 1 to 1024"), "-j {j}: {t}");
    }
    // A huge --pool is a cap on lazy growth, not an allocation.
    let o = common::paraclick(&[
        "--simtime",
        "--pool",
        "18446744073709551615",
        "-e",
        "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains('3'));
}

/// A scratch directory under the target's, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("config-limits-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn check_and_rejected_configurations_leave_output_files_alone() {
    let dir = Scratch::new("outfiles");
    let f = dir.0.join("keep.txt");
    let d = dir.0.join("keep.pcap");
    let s = dir.0.join("keep.sum");
    let conf = format!(
        "src :: InfiniteSource(LIMIT 3, STOP true) -> UDPIPEncap(1.0.0.1, 1, 2.0.0.2, 2) \
         -> IPPrint(OUTFILE {}) -> IP6Print(OUTFILE {}.6) -> ARPPrint(OUTFILE {}.arp) \
         -> ToIPSummaryDump({}) -> ToDump({});",
        f.display(),
        f.display(),
        f.display(),
        s.display(),
        d.display()
    );
    let keep = |p: &std::path::Path| std::fs::write(p, "kept").unwrap();
    let kept = |p: &std::path::Path| std::fs::read_to_string(p).unwrap() == "kept";
    for p in [&f, &d, &s] {
        keep(p);
    }
    let o = common::paraclick(&["check", "-e", &conf]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(kept(&f) && kept(&d) && kept(&s), "check truncated a file");
    assert!(!dir.0.join("keep.txt.6").exists(), "check created a file");
    // Rejected: an error in another element.
    let bad = format!("{conf} Idle -> Queue(0) -> Discard;");
    let o = common::paraclick(&["--simtime", "-e", &bad]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        kept(&f) && kept(&d) && kept(&s),
        "a rejected configuration truncated a file"
    );
    // A run writes them.
    let o = common::paraclick(&["--simtime", "-e", &conf]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&f).unwrap().lines().count(), 3);
    assert_eq!(
        std::fs::read_to_string(&s)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('!'))
            .count(),
        3
    );
    assert!(std::fs::read(&d).unwrap().len() > 24 + 3 * 16);
}

#[test]
fn fifos_as_input_files_are_refused_without_blocking() {
    let dir = Scratch::new("fifo");
    let fifo = dir.0.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.map(|s| s.success()).unwrap_or(false) {
        return; // no mkfifo here
    }
    for class in [
        "FromDump",
        "FromIPSummaryDump",
        "FromTcpdump",
        "FromNetFlowSummaryDump",
        "FromCapDump",
    ] {
        let conf = format!("{class}({}, STOP true) -> Discard", fifo.display());
        // Opening the FIFO blocked until a writer came (forever here).
        let mut child = std::process::Command::new(common::bin())
            .args(["check", "-e", &conf])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > std::time::Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{class}: check blocked on the FIFO");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let o = child.wait_with_output().unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{class}: {t}");
        assert!(t.contains("not a regular file"), "{class}: {t}");
    }
}

/// A router run with `-R` and a Unix control socket, killed when dropped.
struct Running {
    child: std::process::Child,
    sock: std::path::PathBuf,
}

impl Running {
    fn start(sock: std::path::PathBuf, conf: &str) -> Running {
        let child = std::process::Command::new(common::bin())
            // Its hotconfigs read files beside the socket: the directory
            // the operator allows them (-C).
            .args(["-R", "--no-pin", "-u", sock.to_str().unwrap(), "-e", conf])
            .args(["-C", sock.parent().unwrap().to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while !sock.exists() {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(10),
                "no socket"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Running { child, sock }
    }

    /// Connects a client (greeting read).
    fn client(&self) -> std::io::BufReader<std::os::unix::net::UnixStream> {
        let s = std::os::unix::net::UnixStream::connect(&self.sock).unwrap();
        // Every answer below comes within a second or two; a block fails
        // the test instead of hanging it.
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut r = std::io::BufReader::new(s);
        assert_eq!(line(&mut r), "Click::ControlSocket/1.3");
        r
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn line(r: &mut impl std::io::BufRead) -> String {
    let mut l = String::new();
    r.read_line(&mut l).expect("an answer in time");
    l.trim_end().to_string()
}

/// Sends `cmd` (and `data`), returns the reply's code and text.
fn call(
    r: &mut std::io::BufReader<std::os::unix::net::UnixStream>,
    cmd: &str,
    data: &str,
) -> (u16, String) {
    use std::io::Write;
    let s = r.get_mut();
    s.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
    s.write_all(data.as_bytes()).unwrap();
    let mut text = String::new();
    loop {
        let l = line(r);
        text.push_str(&l[4..]);
        text.push('\n');
        if l.as_bytes()[3] == b' ' {
            return (l[..3].parse().unwrap(), text);
        }
    }
}

/// `READ h`: the value.
fn read(r: &mut std::io::BufReader<std::os::unix::net::UnixStream>, h: &str) -> String {
    use std::io::Read;
    let (code, t) = call(r, &format!("READ {h}"), "");
    assert_eq!(code, 200, "{t}");
    let l = line(r);
    let n: usize = l.strip_prefix("DATA ").unwrap().parse().unwrap();
    let mut b = vec![0; n];
    r.read_exact(&mut b).unwrap();
    String::from_utf8(b).unwrap()
}

fn hotconfig(
    r: &mut std::io::BufReader<std::os::unix::net::UnixStream>,
    conf: &str,
) -> (u16, String) {
    call(r, &format!("WRITEDATA hotconfig {}", conf.len()), conf)
}

#[test]
fn rejected_hotconfigs_leave_the_router_and_its_files_alone() {
    let dir = Scratch::new("hot");
    let f = dir.0.join("keep.txt");
    std::fs::write(&f, "kept").unwrap();
    let fifo = dir.0.join("fifo");
    let has_fifo = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let router = Running::start(dir.0.join("sock"), "Idle -> c :: Counter -> Discard;");
    let mut c = router.client();
    let print = format!(
        "InfiniteSource(LIMIT 3) -> UDPIPEncap(1.0.0.1, 1, 2.0.0.2, 2) \
         -> IPPrint(OUTFILE {}) -> c :: Counter -> Discard;",
        f.display()
    );
    // An error in another element: the file is not truncated.
    let (code, t) = hotconfig(&mut c, &format!("{print} Idle -> Queue(0) -> Discard;"));
    assert_eq!(code, 520, "{t}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
    // A huge queue: an error, not an abort of the running router.
    let (code, t) = hotconfig(&mut c, "Idle -> Queue(10000000000) -> Discard;");
    assert_eq!(code, 520, "{t}");
    assert!(t.contains("more than the maximum"), "{t}");
    // A FIFO: refused at once (opening it blocked the control plane).
    if has_fifo {
        let conf = format!("FromDump({}) -> Discard;", fifo.display());
        let t0 = std::time::Instant::now();
        let (code, t) = hotconfig(&mut c, &conf);
        assert_eq!(code, 520, "{t}");
        assert!(t.contains("not a regular file"), "{t}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }
    // The router still answers, on this connection and a new one.
    assert_eq!(read(&mut c, "c.count"), "0");
    assert_eq!(read(&mut router.client(), "c.count"), "0");
    // Accepted: now the file is written.
    let (code, t) = hotconfig(&mut c, &print);
    assert_eq!(code, 200, "{t}");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&f).unwrap().lines().count() < 3 {
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!std::fs::read_to_string(&f).unwrap().contains("kept"));
}
