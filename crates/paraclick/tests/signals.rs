//! Stopping the binary with SIGINT and SIGTERM: a signal that arrives
//! while the configuration is read (here: from a FIFO nobody has written
//! yet) is not lost, even by a process that started with SIGINT ignored
//! (a background job of a non-interactive shell), and a configuration
//! that catches INT itself (a Script's `TYPE SIGNAL INT`) gets it. A
//! second signal before the router runs quits at once.

mod common;

use common::proc::{bin, Proc};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A hang guard, not a timing: every wait here ends as soon as what it
/// waits for happens.
const BOUND: Duration = Duration::from_secs(20);

fn tmpdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("signals")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// A FIFO `conf.click` in `dir`: opening it to read blocks until a writer
/// opens it.
fn fifo(dir: &Path) -> PathBuf {
    let p = dir.join("conf.click");
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo only reads the NUL-terminated path.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(r, 0, "mkfifo: {}", std::io::Error::last_os_error());
    p
}

/// paraclick on the configuration `conf` with `args`, started with
/// SIGINT ignored, as a shell's background job is.
fn start_ignoring_int(conf: &Path, args: &[&str]) -> Proc {
    let mut cmd = Command::new(bin());
    cmd.arg("-f").arg(conf).args(args).arg("--no-pin");
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only signal(2), which is async-signal-safe; an ignored
    // signal stays ignored across exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::signal(libc::SIGINT, libc::SIG_IGN) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Proc::spawn(cmd)
}

/// Whether process `pid` has a handler installed for `sig` (its SigCgt).
fn catches(pid: u32, sig: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| (m >> (sig - 1)) & 1 == 1)
}

fn kill(p: &Proc, sig: i32) {
    // SAFETY: kill has no memory effects; the pid is our running child's.
    let r = unsafe { libc::kill(p.child.id() as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Waits until `what(p)` holds; fails, saying `waiting_for`, if the
/// process exits first or the bound passes.
fn wait_until(p: &mut Proc, waiting_for: &str, what: impl Fn(&Proc) -> bool) {
    let t0 = Instant::now();
    while !what(&*p) {
        assert!(
            p.running(),
            "paraclick exited while waiting for {waiting_for}: status {:?}\nstdout: {}\nstderr: {}",
            p.child.try_wait().unwrap(),
            p.out.lock().unwrap(),
            p.stderr()
        );
        assert!(
            t0.elapsed() < BOUND,
            "no {waiting_for} within {BOUND:?}\nstdout: {}\nstderr: {}",
            p.out.lock().unwrap(),
            p.stderr()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends SIGINT to `p` while it waits for its configuration on a FIFO
/// nobody has opened to write, and waits until it has the signal.
fn interrupt_while_reading(p: &mut Proc) {
    let pid = p.child.id();
    // It catches INT before it opens the configuration.
    wait_until(p, "a SIGINT handler", |_| catches(pid, libc::SIGINT));
    kill(p, libc::SIGINT);
    wait_until(p, "its word on the early SIGINT", |p| {
        p.stderr().contains("SIGINT before the router runs")
    });
}

/// [`interrupt_while_reading`], then writes `text` to the FIFO `conf`.
fn interrupt_then_configure(p: &mut Proc, conf: &Path, text: &str) {
    interrupt_while_reading(p);
    let mut f = std::fs::OpenOptions::new().write(true).open(conf).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_sigint_while_the_configuration_is_read_stops_the_router_once_built() {
    let d = tmpdir();
    let conf = fifo(d.path());
    let mut p = start_ignoring_int(&conf, &["-h", "c.count"]);
    // Without the stop, this runs until killed.
    interrupt_then_configure(&mut p, &conf, "InfiniteSource -> c :: Counter -> Discard;");
    let code = p.wait_exit(BOUND.as_secs());
    assert_eq!(code, 0, "stderr: {}", p.stderr());
    // Stopped before its tasks ran, its handler printed as after any run.
    assert_eq!(*p.out.lock().unwrap(), "0\n");
}

#[test]
fn a_sigint_while_the_configuration_is_read_goes_to_its_signal_script() {
    let d = tmpdir();
    let conf = fifo(d.path());
    let mut p = start_ignoring_int(&conf, &["-h", "s.n"]);
    interrupt_then_configure(
        &mut p,
        &conf,
        "InfiniteSource -> Discard;
         s :: Script(TYPE SIGNAL INT, export n 0, set n $(add $n 1), print \"INT $n\");",
    );
    // The early INT is the Script's, not a stop.
    wait_until(&mut p, "the Script's run for the early INT", |p| {
        p.out.lock().unwrap().contains("INT 1\n")
    });
    // So is a later one: the router runs on.
    kill(&p, libc::SIGINT);
    wait_until(&mut p, "the Script's run for the second INT", |p| {
        p.out.lock().unwrap().contains("INT 2\n")
    });
    // TERM, which nothing in the configuration catches, stops it.
    kill(&p, libc::SIGTERM);
    let code = p.wait_exit(BOUND.as_secs());
    assert_eq!(code, 0, "stderr: {}", p.stderr());
    // The Script's two runs, then the -h handler.
    assert_eq!(*p.out.lock().unwrap(), "INT 1\nINT 2\n2\n");
}

#[test]
fn a_second_signal_while_the_configuration_is_read_quits_at_once() {
    let d = tmpdir();
    let conf = fifo(d.path());
    let mut p = start_ignoring_int(&conf, &[]);
    interrupt_while_reading(&mut p);
    // Nobody writes the configuration: a wait the second signal ends.
    kill(&p, libc::SIGTERM);
    let code = p.wait_exit(BOUND.as_secs());
    assert_eq!(code, 128 + libc::SIGTERM, "stderr: {}", p.stderr());
    assert!(
        p.stderr().contains("SIGTERM: a second signal"),
        "{}",
        p.stderr()
    );
}

/// Click's Script-signal-03: packets on two threads each send the process
/// USR1; the Script that catches it prints once, then blocks its thread
/// (BlockThread) at every later one, so signals keep arriving while a
/// worker is held up. Every one is delivered to the Script and none
/// kills the process.
#[test]
fn usr1_sent_while_a_thread_is_blocked_reaches_the_script() {
    let conf = "i :: InfiniteSource(LIMIT 10) \
        -> s :: Script(TYPE PACKET, set y $(kill USR1 $$), end) -> d :: Discard; \
        j :: InfiniteSource(LIMIT 30) -> s; \
        Script(TYPE SIGNAL USR1, init x 0, set x $(add $x 1), goto l1 $(gt $x 1), \
               print \"got USR1\", label l1, write bt.block 0.01s, end); \
        Script(wait 0.02s, stop); \
        StaticThreadSched(i 0, j 1); \
        bt :: BlockThread";
    let o = Command::new(bin())
        .args(["--threads", "2", "--no-pin", "-e", conf])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "got USR1\n", "{err}");
}
