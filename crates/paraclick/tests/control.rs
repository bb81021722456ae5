//! The control socket end to end: the `paraclick` binary started with `-p`,
//! `-u` and ControlSocket elements, spoken to by a raw socket client
//! written here (not paraclick's own client), while traffic flows.
//! Every socket is on 127.0.0.1 or in a temporary directory.

mod common;

use common::ctl::Client;
use common::proc::Proc;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TRAFFIC: &str = "src :: InfiniteSource(LENGTH 64) -> c :: Counter \
    -> rt :: RadixIPLookup(10.0.0.0/8 0, 0.0.0.0/0 1); rt[0] -> Discard; \
    rt[1] -> q :: Queue(1000) -> Unqueue -> d :: Counter -> Discard;";

#[test]
fn tcp_every_command_and_reply_code() {
    let _g = common::one_at_a_time();
    let mut p = Proc::start(&["-p", "0", "-e", TRAFFIC]);
    let port = p.port("control socket listening on ");
    let mut c = Client::tcp(port);

    // READ: a counter that rises while traffic flows.
    c.rises("c.count");

    // Global handlers in Click's formats.
    let list = c.read("list");
    let names: Vec<&str> = list.lines().collect();
    assert_eq!(names[0].parse::<usize>().unwrap(), names.len() - 1);
    assert!(names.contains(&"c") && names.contains(&"src"));
    assert_eq!(c.read("config"), TRAFFIC);
    let flat = c.read("flatconfig");
    assert!(flat.contains("c :: Counter;\n"), "{flat}");
    assert!(flat.contains("rt [1] -> q\n    -> Unqueue@"), "{flat}");
    assert!(c.read("classes").lines().any(|l| l == "Counter"));
    assert!(c.read("classes").lines().any(|l| l == "ControlSocket"));
    assert_eq!(c.read("requirements"), "");
    assert!(c.read("packages").lines().any(|l| l == "userlevel"));
    assert_eq!(c.read("driver"), "userlevel\n");
    assert!(!c.read("version").trim().is_empty());
    // Element handlers: Click's `handlers` format, name TAB flags.
    let hs = c.read("src.handlers");
    for want in [
        "count\tr",
        "reset\tw",
        "limit\trw",
        "handlers\tr",
        "class\tr",
    ] {
        assert!(hs.lines().any(|l| l == want), "{want:?} in {hs}");
    }
    assert_eq!(c.read("c.class"), "Counter");
    // The driver's own socket's handler, as a configuration reads it:
    // read-only, as in Click.
    let h = "click_driver@@ControlSocket.port";
    assert_eq!(c.read(h), port.to_string());
    assert_eq!(c.code(&format!("CHECKREAD {h}")), 200);
    assert_eq!(c.code(&format!("CHECKWRITE {h}")), 530);
    assert_eq!(c.code(&format!("WRITE {h} 1")), 530);
    assert_eq!(c.code("READ click_driver@@ControlSocket.nope"), 510);
    // An element by number (from 1, in `list` order).
    let n = names[1..].iter().position(|&x| x == "c").unwrap() + 1;
    c.send(format!("READ {n}.class\r\n").as_bytes());
    assert_eq!(c.reply().0, 200);
    assert_eq!(c.data(), "Counter");

    // READ with parameters; READDATA; READUNTIL.
    c.send(b"READ rt.lookup 10.1.2.3\r\n");
    assert_eq!(c.reply().0, 200);
    assert_eq!(c.data().trim(), "0");
    c.send(b"READDATA rt.lookup 8\r\n11.1.2.3");
    assert_eq!(c.reply(), (200, vec!["Read handler 'rt.lookup' OK".into()]));
    assert_eq!(c.data().trim(), "1");
    c.send(b"READDATA c.count 0\r\n");
    assert_eq!(c.reply().0, 200);
    assert!(c.data().parse::<u64>().is_ok());
    c.send(b"READUNTIL rt.lookup .\r\n10.9.9.9\r\n.\r\n");
    assert_eq!(c.reply().0, 200);
    assert_eq!(c.data().trim(), "0");

    // WRITE takes effect: the source pauses, then resumes.
    assert_eq!(c.code("WRITE src.active false"), 200);
    std::thread::sleep(Duration::from_millis(50));
    let a = c.count("c.count");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.count("c.count"), a, "paused source sends nothing");
    c.send(b"WRITEDATA src.active 4\r\ntrue");
    assert_eq!(
        c.reply(),
        (200, vec!["Write handler 'src.active' OK".into()])
    );
    c.rises("c.count");
    c.send(b"WRITEUNTIL src.burst\r\n4\r\n\r\n");
    assert_eq!(c.reply().0, 200);
    assert_eq!(c.read("src.burst").trim(), "4");

    // CHECKREAD / CHECKWRITE.
    assert_eq!(c.code("CHECKREAD c.count"), 200);
    assert_eq!(c.code("CHECKWRITE c.reset"), 200);
    assert_eq!(c.code("CHECKWRITE c.count"), 530);
    assert_eq!(c.code("CHECKREAD c.reset"), 530);
    assert_eq!(c.code("CHECKREAD c.nope"), 511);
    assert_eq!(c.code("CHECKREAD nope.count"), 510);
    assert_eq!(c.code("CHECKWRITE stop"), 200);

    // Error codes.
    assert_eq!(c.code("READ nope.count"), 510);
    assert_eq!(c.code("READ 999.count"), 510);
    assert_eq!(c.code("READ c.nope"), 511);
    assert_eq!(c.code("READ nope"), 511);
    assert_eq!(c.code("READ c.reset"), 530, "write-only");
    assert_eq!(c.code("WRITE c.count 1"), 530, "read-only");
    c.send(b"WRITE src.limit abc\r\n");
    let (code, text) = c.reply();
    assert_eq!(code, 520);
    assert!(text.join("\n").contains("expected integer"), "{text:?}");
    assert_eq!(c.code("READ"), 500);
    assert_eq!(c.code("WRITEDATA src.limit lots"), 500);
    assert_eq!(c.code("CHECKREAD a b"), 500);
    assert_eq!(c.code("FROB c.count"), 501);
    assert_eq!(c.code("LLRPC c#0x12345678"), 501);
    c.send(b"LLRPC c#0x12345678 3\r\nabc");
    assert_eq!(c.reply().0, 501);
    // The connection is still in step after all of that.
    c.rises("c.count");

    // Many clients at once while traffic flows.
    let threads: Vec<_> = (0..6)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::tcp(port);
                let mut last = 0;
                for _ in 0..50 {
                    let v = c.count("c.count");
                    assert!(v >= last, "count went back: {v} < {last}");
                    last = v;
                }
                assert_eq!(c.code("QUIT"), 200);
                assert!(c.closed());
                last
            })
        })
        .collect();
    let lasts: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(lasts.iter().all(|&v| v > 0));
    c.rises("c.count");

    // QUIT, then `stop` from another connection ends the run.
    assert_eq!(c.code("QUIT"), 200);
    assert!(c.closed());
    let mut c = Client::tcp(port);
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
}

#[test]
fn unix_socket_is_private_and_served() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("click.sock");
    let conf = format!("require(userlevel); require(package ip); {TRAFFIC}");
    let mut p = Proc::start(&["-u", path.to_str().unwrap(), "-e", &conf]);
    p.wait_line("control socket listening on ");
    let m = std::fs::metadata(&path).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    let mut c = Client::unix(&path);
    c.rises("c.count");
    c.rises("d.count");
    assert_eq!(c.read("requirements"), "userlevel\nip\n");
    c.send(b"WRITEDATA c.reset 0\r\n");
    assert_eq!(c.reply().0, 200);
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
    assert!(!path.exists(), "socket file removed at exit");
}

#[test]
fn read_only_element_socket_and_bad_clients() {
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro.sock");
    let conf = format!(
        "{TRAFFIC}
        ControlSocket(TCP, 0, LOCALHOST true, VERBOSE true, LINE_TIMEOUT 1, MAX_CLIENTS 8);
        ControlSocket(UNIX, {}, READONLY true);",
        ro.display()
    );
    let mut p = Proc::start(&["-e", &conf]);
    let port = p.port("ControlSocket: listening on ");

    // READONLY: reads work, writes get 530 (data consumed, still in step).
    let mut r = Client::unix(&ro);
    r.rises("c.count");
    assert_eq!(r.code("WRITE c.reset"), 530);
    r.send(b"WRITEDATA src.active 5\r\nfalse");
    assert_eq!(r.reply().0, 530);
    assert_eq!(r.code("CHECKWRITE c.reset"), 530);
    assert_eq!(r.code("WRITE stop"), 530);
    r.rises("c.count");

    // A huge WRITEDATA: 521, then the connection closes.
    let mut c = Client::tcp(port);
    c.send(b"WRITEDATA src.limit 1000000000000\r\n");
    let (code, text) = c.reply();
    assert_eq!(code, 521, "{text:?}");
    assert!(c.closed());

    // Half a line, then silence: closed after LINE_TIMEOUT, no reply.
    let mut c = Client::tcp(port);
    c.send(b"READ c.co");
    let t0 = Instant::now();
    assert!(c.closed(), "half-line client disconnected");
    assert!(t0.elapsed() >= Duration::from_millis(900));
    // A line too long: 500, closed.
    let mut c = Client::tcp(port);
    c.send(&vec![b'A'; 70_000]);
    assert_eq!(c.reply().0, 500);
    assert!(c.closed());
    // Data promised and not sent: 500 after LINE_TIMEOUT, closed.
    let mut c = Client::tcp(port);
    c.send(b"WRITEDATA src.limit 100\r\n12");
    assert_eq!(c.reply().0, 500);
    assert!(c.closed());

    // A flood of connections: the 9th and later are refused with 590
    // while the 8 held stay served, and traffic and other sockets go on.
    let mut held: Vec<Client> = (0..8).map(|_| Client::tcp(port)).collect();
    for _ in 0..10 {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut x = Client::raw(Box::new(s));
        let (code, _) = x.reply();
        assert_eq!(code, 590);
        assert!(x.closed());
    }
    held[3].rises("c.count");
    r.rises("d.count");
    for h in held.iter_mut() {
        assert_eq!(h.code("QUIT"), 200);
    }
    drop(held);
    // Once they are gone, new clients are served again.
    let t0 = Instant::now();
    let mut c = loop {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut r = BufReader::new(s);
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        if l.starts_with("Click::ControlSocket/1.3") {
            break Client::raw(Box::new(r.into_inner()));
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "still refused: {l}");
        std::thread::sleep(Duration::from_millis(20));
    };
    c.rises("c.count");
    assert!(p.err.lock().unwrap().contains("too many connections"));

    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
}

#[test]
fn ctl_client_reads_writes_and_fails_with_codes() {
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let mut p = Proc::start(&["-p", "0", "-u", path.to_str().unwrap(), "-e", TRAFFIC]);
    let port_s = p.wait_line("listening on 127.0.0.1:");
    assert!(port_s.parse::<u16>().is_ok(), "{port_s}");
    let ctl = |args: &[&str]| {
        let o = Command::new(common::bin())
            .arg("ctl")
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code().unwrap(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (rc, out, _) = ctl(&["-p", &port_s, "read", "c.count"]);
    assert_eq!(rc, 0);
    assert!(out.trim().parse::<u64>().is_ok(), "{out}");
    let (rc, out, _) = ctl(&[
        "-u",
        path.to_str().unwrap(),
        "read",
        "rt.lookup",
        "10.0.0.1",
    ]);
    assert_eq!((rc, out.trim()), (0, "0"));
    let (rc, out, _) = ctl(&["-p", &port_s, "list"]);
    assert_eq!(rc, 0);
    assert!(out.lines().any(|l| l == "src"));
    let (rc, out, _) = ctl(&["-p", &port_s, "handlers", "c"]);
    assert_eq!(rc, 0);
    assert!(out.lines().any(|l| l == "count\tr"));
    let (rc, _, _) = ctl(&["-p", &port_s, "write", "src.active", "false"]);
    assert_eq!(rc, 0);
    let (_, out, _) = ctl(&["-p", &port_s, "read", "src.active"]);
    assert_eq!(out.trim(), "false");
    let (rc, _, err) = ctl(&["-p", &port_s, "read", "nope.count"]);
    assert_eq!(rc, 1);
    assert!(err.contains("510"), "{err}");
    let (rc, _, err) = ctl(&["-p", &port_s, "write", "src.limit", "abc"]);
    assert_eq!(rc, 1);
    assert!(err.contains("520"), "{err}");
    let (rc, _, _) = ctl(&["-u", path.to_str().unwrap(), "write", "stop"]);
    assert_eq!(rc, 0);
    assert_eq!(p.wait_exit(10), 0);
    let (rc, _, _) = ctl(&["-p", &port_s, "list"]);
    assert_eq!(rc, 2, "no router to reach");
}

/// Starts paraclick with `fd` as its descriptor 3 and `--socket 3`.
fn start_with_fd(fd: i32) -> Proc {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(common::bin());
    cmd.args(["--socket", "3", "--no-pin", "-e", TRAFFIC]);
    // SAFETY: dup2 is async-signal-safe; it only renumbers a descriptor
    // this process owns, and the copy does not close on exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Proc::spawn(cmd)
}

#[test]
fn socket_fd_connected_and_listening() {
    use std::os::unix::io::AsRawFd;
    let _g = common::one_at_a_time();
    // A connected socket: one client, the other end of a socketpair.
    let (a, b) = UnixStream::pair().unwrap();
    let mut p = start_with_fd(b.as_raw_fd());
    drop(b);
    a.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut c = Client::over(Box::new(a));
    c.rises("c.count");
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);

    // A listening socket, bound here on loopback.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let mut p = start_with_fd(l.as_raw_fd());
    drop(l);
    let mut c = Client::tcp(port);
    c.rises("c.count");
    let mut c2 = Client::tcp(port);
    assert_eq!(c2.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);

    // A listening socket beyond loopback: refused without a token.
    let l = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let mut p = start_with_fd(l.as_raw_fd());
    drop(l);
    assert_eq!(p.wait_exit(10), 1);
    let said = p.wait_line("--socket 3: listening beyond loopback");
    assert!(said.contains("--control-token"), "{said}");

    // Not a socket: a clear error, nothing runs.
    let o = Command::new(common::bin())
        .args(["--socket", "0", "-e", TRAFFIC])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an open socket"));
}

#[test]
fn retries_wait_for_a_busy_port_then_give_up_or_serve() {
    let _g = common::one_at_a_time();
    // Busy for good: RETRIES 1 warns, tries once more, stops the router.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let conf = format!("{TRAFFIC} ControlSocket(TCP, {port}, LOCALHOST true, RETRIES 1);");
    let mut p = Proc::start(&["-e", &conf]);
    assert_eq!(p.wait_exit(10), 0);
    let err = p.err.lock().unwrap().clone();
    assert!(
        err.contains("retrying") && err.contains("giving up"),
        "{err}"
    );

    // Busy for a while: served once the port is free.
    let conf = format!(
        "{TRAFFIC} ControlSocket(TCP, {port}, LOCALHOST true, RETRIES 10, RETRY_WARNINGS false);"
    );
    let mut p = Proc::start(&["-e", &conf]);
    std::thread::sleep(Duration::from_millis(300));
    drop(busy);
    let t0 = Instant::now();
    let s = loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "never bound");
        std::thread::sleep(Duration::from_millis(50));
    };
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut c = Client::over(Box::new(s));
    c.rises("c.count");
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
    assert!(!p.err.lock().unwrap().contains("retrying"));
}

/// A TCP connection that has read the greeting, for bytes of our own.
fn raw_tcp(port: u16) -> Client {
    Client::tcp(port)
}

#[test]
fn an_http_request_or_tls_hello_to_the_port_is_closed_and_runs_nothing() {
    let _g = common::one_at_a_time();
    let mut p = Proc::start(&["-p", "0", "-e", TRAFFIC]);
    let port = p.port("control socket listening on ");
    let mut c = Client::tcp(port);
    c.rises("c.count");
    std::thread::sleep(Duration::from_millis(300));
    let before = c.count("c.count");
    // What a browser sends for a web page's
    // fetch('http://127.0.0.1:PORT/', {method: 'POST', body: ...}).
    let body = "WRITE c.reset\r\nWRITE src.active false\r\n";
    let mut h = raw_tcp(port);
    h.send(
        format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n\
             Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert!(h.closed(), "closed without a reply");
    // A TLS ClientHello's first bytes.
    let mut t = raw_tcp(port);
    t.send(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03");
    assert!(t.closed(), "TLS closed");
    // The body never ran: the source still runs (WRITE src.active false
    // did not), and the count was not reset.
    assert_eq!(c.read("src.active").trim(), "true");
    assert!(c.count("c.count") >= before, "c.reset never executed");
    c.rises("c.count");
    // The server logs a refusal after closing, so the line may follow
    // the client's view of the close: wait for it (a bound, not a speed).
    let logged = |err: &str| {
        err.contains("closed the connection from 127.0.0.1:")
            && err.contains("refused: an HTTP request")
            && err.contains("refused: a TLS handshake")
    };
    let t0 = Instant::now();
    while !logged(&p.err.lock().unwrap()) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let err = p.err.lock().unwrap().clone();
    assert!(logged(&err), "logged with the peer: {err}");
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
}

/// A token file, mode 0600, in `dir`.
fn token_file(dir: &std::path::Path, token: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let f = dir.join("token");
    std::fs::write(&f, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    f
}

#[test]
fn a_port_beyond_loopback_needs_a_token_and_checks_it() {
    let _g = common::one_at_a_time();
    // Refused at start without a token: a clear error, nothing runs.
    let o = Command::new(common::bin())
        .args(["-p", "0.0.0.0:0", "-e", TRAFFIC])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("-p 0.0.0.0:0") && err.contains("give --control-token FILE"),
        "{err}"
    );
    // A token file others can read is refused too.
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-4f9a1c2e8b7d6a5f3e2d1c0b";
    let f = token_file(dir.path(), token);
    let fs = f.to_str().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = Command::new(common::bin())
            .args(["-p", "0.0.0.0:0", "--control-token", fs, "-e", TRAFFIC])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("chmod 600") && !err.contains(token), "{err}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    let mut p = Proc::start(&["-p", "0.0.0.0:0", "--control-token", fs, "-e", TRAFFIC]);
    let at = p.wait_line("control socket listening on ");
    assert!(at.ends_with(" (AUTH token required)"), "{at}");
    let port: u16 = at
        .trim_end_matches(" (AUTH token required)")
        .rsplit_once(':')
        .unwrap()
        .1
        .parse()
        .unwrap();
    // A command before AUTH: 530, closed.
    let mut c = Client::tcp(port);
    let (code, t) = c.write_data("c.reset", "");
    assert_eq!(code, 530, "{t:?}");
    assert!(t[0].contains("authentication required"), "{t:?}");
    assert!(c.closed());
    // A wrong token: 530, closed.
    let mut c = Client::tcp(port);
    assert_eq!(c.code("AUTH tok-4f9a1c2e8b7d6a5f3e2d1c0c"), 530);
    assert!(c.closed());
    // The right one: served.
    let mut c = Client::tcp(port);
    assert_eq!(c.code(&format!("AUTH {token}")), 200);
    c.rises("c.count");
    // paraclick ctl sends it from its file; without it, 530.
    let ctl = |args: &[&str]| {
        let o = Command::new(common::bin())
            .arg("ctl")
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code().unwrap(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let ps = port.to_string();
    let (rc, out, err) = ctl(&["-p", &ps, "--token-file", fs, "read", "c.count"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.trim().parse::<u64>().is_ok(), "{out}");
    let (rc, _, err) = ctl(&["-p", &ps, "read", "c.count"]);
    assert_eq!(rc, 1);
    assert!(err.contains("530"), "{err}");
    let (rc, _, err) = ctl(&["-p", &ps, "--token-file", fs, "write", "stop"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(p.wait_exit(10), 0);
}

#[test]
fn a_control_socket_element_removed_and_added_back_rebinds_every_time() {
    let _g = common::one_at_a_time();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let with = format!("{TRAFFIC} cs :: ControlSocket(TCP, {port}, LOCALHOST true);");
    let mut p = Proc::start(&["-R", "-p", "0", "-e", &with]);
    let ctl_port = p.port("control socket listening on ");
    let mut c = Client::tcp(ctl_port);
    for i in 0..20 {
        let (code, t) = c.write_data("hotconfig", TRAFFIC);
        assert_eq!(code, 200, "cycle {i}, removing: {t:?}");
        let (code, t) = c.write_data("hotconfig", &with);
        assert_eq!(code, 200, "cycle {i}, adding back: {t:?}");
        let mut e = Client::tcp(port);
        assert_eq!(e.code("CHECKREAD c.count"), 200, "cycle {i}");
    }
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
}

#[test]
fn dash_p_port_plus_takes_the_first_free_port_and_names_it_as_click() {
    let _g = common::one_at_a_time();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = busy.local_addr().unwrap().port();
    let plus = format!("{p}+");
    // Click's names for the sockets `-p` adds: the first, then `@1`.
    let o = Command::new(common::bin())
        .args(["-p", &plus, "-p", &plus, "-e"])
        .arg(
            "DriverManager(print click_driver@@ControlSocket.port, \
             print click_driver@@ControlSocket@1.port, stop)",
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let got: Vec<u16> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0] > p && got[1] > got[0] && got[1] - p < 64,
        "{p}: {got:?}"
    );
    assert!(
        err.contains(&format!("listening on 127.0.0.1:{}", got[0])),
        "{err}"
    );
    // Without `+` the port in use is a clear error.
    let o = Command::new(common::bin())
        .args(["-p", &p.to_string(), "-e", "DriverManager(stop)"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("-p {p}:")));
}

#[test]
fn dash_p_port_plus_beyond_loopback_needs_a_token() {
    let _g = common::one_at_a_time();
    for spec in ["0.0.0.0:41900+", "[::]:41900+"] {
        let o = Command::new(common::bin())
            .args(["-p", spec, "-e", TRAFFIC])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{spec}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("-p {spec}")) && err.contains("give --control-token FILE"),
            "{err}"
        );
    }
    for bad in ["41900++", "localhost:41900+", "+"] {
        let o = Command::new(common::bin())
            .args(["-p", bad, "-e", TRAFFIC])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("-p: expected PORT, PORT+"), "{bad}: {err}");
    }
}

#[test]
fn a_scripts_cat_is_private_to_scripts() {
    // Click's privatehandler-01: `cat` reads a file for the script, not
    // for a control socket's client (which could otherwise read any file
    // the router can, past the files a hotconfig is confined to).
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "not for clients").unwrap();
    let conf = format!(
        "s :: Script(print \"[$(cat {0})]\", wait 60s, stop); \
         t :: Script(TYPE PASSIVE, return $(s.catq {0}))",
        secret.display()
    );
    let mut p = Proc::start(&["-p", "0", "-e", &conf]);
    let port = p.port("control socket listening on ");
    let mut c = Client::tcp(port);
    assert_eq!(c.code("READ s.add 1 1"), 200);
    assert_eq!(c.data(), "2");
    let file = secret.display().to_string();
    for cmd in [
        format!("READ s.cat {file}"),
        format!("READ s.catq {file}"),
        "CHECKREAD s.cat".to_string(),
    ] {
        let (code, t) = {
            c.send(format!("{cmd}\r\n").as_bytes());
            c.reply()
        };
        assert_eq!(code, 511, "{cmd}: {t:?}");
        assert!(t[0].starts_with("No handler named 's.cat"), "{cmd}: {t:?}");
    }
    let hs = c.read("s.handlers");
    assert!(hs.lines().any(|l| l.starts_with("add\t")), "{hs}");
    assert!(!hs.lines().any(|l| l.starts_with("cat")), "{hs}");
    // Scripts still read it: their own `cat`, another Script's `catq`.
    assert_eq!(c.read("t.run"), "\"not for clients\"");
    // The script's print (it starts once the router runs, which may be
    // after this client's commands).
    let t0 = Instant::now();
    let mut out = String::new();
    while !out.contains("[not for clients]") && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
        out = p.out.lock().unwrap().clone();
    }
    assert!(out.contains("[not for clients]"), "{out} / {}", p.stderr());
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
}

#[test]
fn switch_llrpcs_over_the_control_socket() {
    // Click's ControlSocket-llrpc-01: GET_SWITCH and SET_SWITCH, the int
    // in the machine's byte order; an LLRPC is a write, refused on a
    // READONLY socket.
    let _g = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro.sock");
    let conf = format!(
        "Idle -> s :: Switch(0) -> Idle; s[1] -> Idle; Idle -> q :: Queue -> Discard;
        ControlSocket(UNIX, {}, READONLY true);",
        ro.display()
    );
    let mut p = Proc::start(&["-p", "0", "-e", &conf]);
    let port = p.port("control socket listening on ");
    let mut c = Client::tcp(port);
    assert_eq!(c.code("LLRPC s#4004C005"), 200);
    assert_eq!(c.data().as_bytes(), 0i32.to_ne_bytes());
    c.send(b"LLRPC s#80044006 4\r\n");
    c.send(&1i32.to_ne_bytes());
    assert_eq!(c.reply().0, 200);
    assert_eq!(c.data(), "");
    assert_eq!(c.read("s.switch"), "1");
    assert_eq!(c.code("LLRPC s#4004C005"), 200);
    assert_eq!(c.data().as_bytes(), 1i32.to_ne_bytes());
    // Wrong size, unknown command, element without LLRPCs, no element.
    c.send(b"LLRPC s#80044006 2\r\nab");
    assert_eq!(c.reply().0, 520);
    assert_eq!(c.code("LLRPC s#80044007"), 501);
    assert_eq!(c.code("LLRPC q#4004C005"), 501);
    assert_eq!(c.code("LLRPC nobody#4004C005"), 510);
    assert_eq!(c.read("s.switch"), "1");
    // READONLY: refused, its data consumed, nothing changed.
    let mut r = Client::unix(&ro);
    r.send(b"LLRPC s#80044006 4\r\n");
    r.send(&0i32.to_ne_bytes());
    assert_eq!(r.reply().0, 530);
    assert_eq!(r.read("s.switch"), "1");
    assert_eq!(c.code("WRITE stop"), 200);
    assert_eq!(p.wait_exit(10), 0);
}
