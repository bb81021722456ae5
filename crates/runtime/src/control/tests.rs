//! The protocol against a fake backend, over a real socket pair.

use super::session::Session;
use super::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;

/// `x.v` (rw, holds a value), `x.r` (read-only, echoes its parameter),
/// `x.w` (write-only, fails on "bad").
struct Fake {
    v: Mutex<String>,
}

impl Backend for Fake {
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, CsError> {
        self.check(h, false)?;
        match h {
            "x.v" => Ok(self.v.lock().unwrap().clone()),
            "x.big" => Ok("b".repeat(1 << 20)),
            _ => Ok(format!("param={}", param.unwrap_or("-"))),
        }
    }
    fn write(&self, h: &str, value: &str) -> Result<(), CsError> {
        self.check(h, true)?;
        if value == "bad" {
            return Err(CsError::new(520, "bad value\nsecond line"));
        }
        *self.v.lock().unwrap() = value.to_string();
        Ok(())
    }
    fn check(&self, h: &str, write: bool) -> Result<(), CsError> {
        let (e, n) = h.split_once('.').unwrap_or(("", h));
        if e != "x" {
            return Err(CsError::new(510, "no element"));
        }
        match (n, write) {
            ("v", _) | ("r", false) | ("w", true) | ("big", false) => Ok(()),
            ("r", true) | ("w", false) => Err(CsError::new(530, "perm")),
            _ => Err(CsError::new(511, "no handler")),
        }
    }
}

fn start(cfg: ControlConfig) -> (BufReader<UnixStream>, std::thread::JoinHandle<&'static str>) {
    let (a, mut b) = UnixStream::pair().unwrap();
    let t = std::thread::spawn(move || {
        let fake = Fake {
            v: Mutex::new("init".into()),
        };
        let stop = AtomicBool::new(false);
        let mut s = Session::new(&mut b, &cfg, &fake, &stop);
        s.run()
    });
    let mut r = BufReader::new(a);
    let mut g = String::new();
    r.read_line(&mut g).unwrap();
    assert_eq!(g, "Click::ControlSocket/1.3\r\n");
    (r, t)
}

fn send(r: &mut BufReader<UnixStream>, s: &str) {
    r.get_mut().write_all(s.as_bytes()).unwrap();
}

fn line(r: &mut BufReader<UnixStream>) -> String {
    let mut l = String::new();
    r.read_line(&mut l).unwrap();
    assert!(l.ends_with("\r\n"), "reply line ends with CRLF: {l:?}");
    l.trim_end().to_string()
}

fn data(r: &mut BufReader<UnixStream>) -> String {
    let l = line(r);
    let n: usize = l.strip_prefix("DATA ").expect("DATA line").parse().unwrap();
    let mut b = vec![0; n];
    r.read_exact(&mut b).unwrap();
    String::from_utf8(b).unwrap()
}

#[test]
fn commands_and_codes() {
    let (mut r, t) = start(ControlConfig::default());
    send(&mut r, "READ x.v\r\n");
    assert_eq!(line(&mut r), "200 Read handler 'x.v' OK");
    assert_eq!(data(&mut r), "init");
    // LF and lone CR end lines too.
    send(&mut r, "WRITE x.v hello world\n");
    assert_eq!(line(&mut r), "200 Write handler 'x.v' OK");
    send(&mut r, "read x.v\r");
    assert_eq!(line(&mut r), "200 Read handler 'x.v' OK");
    assert_eq!(data(&mut r), "hello world");
    send(&mut r, "\nREAD x.r a b\r\n");
    line(&mut r);
    assert_eq!(data(&mut r), "param=a b");
    send(&mut r, "READDATA x.r 5\r\n1\r\n23");
    line(&mut r);
    assert_eq!(data(&mut r), "param=1\r\n23");
    send(&mut r, "WRITEDATA x.v 3\r\nxyz");
    assert_eq!(line(&mut r), "200 Write handler 'x.v' OK");
    send(&mut r, "WRITEUNTIL x.v END\r\nl1\r\nl2\r\nEND  \r\n");
    assert_eq!(line(&mut r), "200 Write handler 'x.v' OK");
    send(&mut r, "READ x.v\r\n");
    line(&mut r);
    assert_eq!(data(&mut r), "l1\nl2\n");
    send(&mut r, "READUNTIL x.r\r\nq\r\n\r\n");
    line(&mut r);
    assert_eq!(data(&mut r), "param=q\n");
    send(&mut r, "WRITE x.v bad\r\n");
    assert_eq!(line(&mut r), "520-Write handler 'x.v' error:");
    assert_eq!(line(&mut r), "520-bad value");
    assert_eq!(line(&mut r), "520 second line");
    send(&mut r, "READ y.v\r\n");
    assert!(line(&mut r).starts_with("510 "));
    send(&mut r, "READ x.nope\r\n");
    assert!(line(&mut r).starts_with("511 "));
    send(&mut r, "READ x.w\r\n");
    assert!(line(&mut r).starts_with("530 "));
    send(
        &mut r,
        "CHECKREAD x.r\r\nCHECKWRITE x.r\r\nCHECKWRITE x.w\r\n",
    );
    assert_eq!(line(&mut r), "200 Read handler 'x.r' OK");
    assert!(line(&mut r).starts_with("530 "));
    assert_eq!(line(&mut r), "200 Write handler 'x.w' OK");
    send(
        &mut r,
        "READ\r\nREADDATA x.v\r\nREADDATA x.v many\r\nFROB x\r\n",
    );
    assert!(line(&mut r).starts_with("500 "));
    assert!(line(&mut r).starts_with("500 "));
    assert!(line(&mut r).starts_with("500 "));
    assert_eq!(line(&mut r), "501 Unimplemented command 'FROB'");
    send(&mut r, "LLRPC x#1234 2\r\nabLLRPC x#5\r\n");
    assert!(line(&mut r).starts_with("501 LLRPC"));
    assert!(line(&mut r).starts_with("501 LLRPC"));
    // No `#`, or a command that is no hex number: a syntax error.
    send(&mut r, "LLRPC x1234\r\nLLRPC x#zz\r\n");
    assert!(line(&mut r).starts_with("500 "));
    assert!(line(&mut r).starts_with("500 "));
    send(&mut r, "QUIT\r\n");
    assert_eq!(line(&mut r), "200 Goodbye!");
    assert_eq!(t.join().unwrap(), "closed");
}

#[test]
fn read_only_refuses_writes_but_reads() {
    let (mut r, t) = start(ControlConfig {
        read_only: true,
        ..ControlConfig::default()
    });
    send(
        &mut r,
        "WRITE x.v 1\r\nWRITEDATA x.v 2\r\nabCHECKWRITE x.v\r\nREAD x.v\r\n",
    );
    assert!(line(&mut r).starts_with("530 "));
    assert!(line(&mut r).starts_with("530 "));
    assert!(line(&mut r).starts_with("530 "));
    assert_eq!(line(&mut r), "200 Read handler 'x.v' OK");
    assert_eq!(data(&mut r), "init");
    drop(r);
    assert_eq!(t.join().unwrap(), "closed by client");
}

#[test]
fn limits_close_the_connection() {
    let cfg = ControlConfig {
        max_data: 100,
        max_line: 50,
        line_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(600),
        ..ControlConfig::default()
    };
    let (mut r, t) = start(cfg.clone());
    send(&mut r, "WRITEDATA x.v 101\r\n");
    assert_eq!(line(&mut r), "521 Data too big (limit 100 bytes)");
    assert_eq!(t.join().unwrap(), "closed");

    let (mut r, t) = start(cfg.clone());
    send(&mut r, &format!("READ x.{}\r\n", "v".repeat(60)));
    assert!(line(&mut r).starts_with("500 Line too long"));
    assert_eq!(t.join().unwrap(), "line too long");

    // Half a line, then silence.
    let (mut r, t) = start(cfg.clone());
    send(&mut r, "READ x.");
    assert_eq!(t.join().unwrap(), "timed out");
    let mut rest = String::new();
    r.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "closed without a reply");

    // Data promised, not sent.
    let (mut r, t) = start(cfg.clone());
    send(&mut r, "WRITEDATA x.v 10\r\nabc");
    assert_eq!(line(&mut r), "500 Timed out waiting for data");
    assert_eq!(t.join().unwrap(), "timed out in data");

    // Idle.
    let (_r, t) = start(cfg);
    let t0 = std::time::Instant::now();
    assert_eq!(t.join().unwrap(), "timed out");
    assert!(t0.elapsed() >= Duration::from_millis(500));
}

#[test]
fn a_router_that_is_gone_answers_540() {
    let h = RouterHandle { core: Weak::new() };
    for e in [
        h.read("list", None).unwrap_err(),
        h.write("stop", "").unwrap_err(),
        h.check("c.count", false).unwrap_err(),
    ] {
        assert_eq!(e, CsError::new(540, "No router installed"));
    }
}

#[test]
fn a_client_that_does_not_read_replies_is_dropped() {
    let cfg = ControlConfig {
        line_timeout: Duration::from_millis(300),
        ..ControlConfig::default()
    };
    let (mut r, t) = start(cfg);
    send(&mut r, &"READ x.big\r\n".repeat(20));
    let t0 = std::time::Instant::now();
    assert_eq!(t.join().unwrap(), "write failed");
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_session_over_bytes_answers_like_a_socket() {
    let fake = Fake {
        v: Mutex::new("init".into()),
    };
    let (out, why) = session_over_bytes(
        b"READ x.v\r\nWRITE x.v hello\r\nREAD x.v\r\nREAD y.v\r\nQUIT\r\n",
        &fake,
        &ControlConfig::default(),
    );
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Click::ControlSocket/1.3\r\n\
         200 Read handler 'x.v' OK\r\nDATA 4\r\ninit\
         200 Write handler 'x.v' OK\r\n\
         200 Read handler 'x.v' OK\r\nDATA 5\r\nhello\
         510 no element\r\n\
         200 Goodbye!\r\n"
    );
    assert_ne!(why, "write failed");
}

fn fake() -> Fake {
    Fake {
        v: Mutex::new("init".into()),
    }
}

const GREETING_LINE: &[u8] = b"Click::ControlSocket/1.3\r\n";

#[test]
fn an_http_request_is_closed_unanswered_and_its_body_never_runs() {
    for input in [
        &b"POST / HTTP/1.1\r\nHost: 127.0.0.1:7777\r\nContent-Type: text/plain\r\n\r\nWRITE x.v evil\r\n"[..],
        b"get / HTTP/1.0\r\n\r\nWRITE x.v evil\r\n",
        b"OPTIONS * HTTP/1.1\r\nWRITE x.v evil\r\n",
        b"\r\nPUT /x HTTP/1.1\nWRITE x.v evil\n",
        // A header line anywhere, even after commands.
        b"READ x.v\r\nHost: evil.example\r\nWRITE x.v evil\r\n",
        b"READ x.v\r\nOrigin:http://evil.example\r\nWRITE x.v evil\r\n",
    ] {
        let f = fake();
        let (out, why) = session_over_bytes(input, &f, &ControlConfig::default());
        assert!(why.starts_with("refused: an HTTP"), "{why}");
        assert_eq!(*f.v.lock().unwrap(), "init", "nothing written");
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("Write handler"), "{text}");
        assert!(!text.contains("501"), "no reply to HTTP: {text}");
    }
}

#[test]
fn a_tls_hello_is_closed_at_its_first_byte() {
    let f = fake();
    // A ClientHello's record header, then bytes that could be lines.
    let (out, why) = session_over_bytes(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\nWRITE x.v evil\r\n",
        &f,
        &ControlConfig::default(),
    );
    assert_eq!(why, super::session::REFUSED_TLS);
    assert_eq!(out, GREETING_LINE);
    assert_eq!(*f.v.lock().unwrap(), "init");
    // Over a socket too: refused without waiting for a line end.
    let (mut r, t) = start(ControlConfig::default());
    send(&mut r, "\x16\x03\x01");
    assert_eq!(t.join().unwrap(), super::session::REFUSED_TLS);
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn a_first_line_that_is_no_command_closes() {
    let f = fake();
    let (out, why) = session_over_bytes(
        b"SSH-2.0-OpenSSH_9.2\r\nWRITE x.v evil\r\n",
        &f,
        &ControlConfig::default(),
    );
    assert_eq!(why, "closed");
    assert!(String::from_utf8_lossy(&out).ends_with(
        "501 Unimplemented command 'SSH-2.0-OPENSSH_9.2' (not a control client: closing)\r\n"
    ));
    assert_eq!(*f.v.lock().unwrap(), "init");
    // Later, an unknown command is only an error (Click's 501).
    let (out, _) = session_over_bytes(
        b"READ x.v\r\nFROB\r\nWRITE x.v later\r\n",
        &f,
        &ControlConfig::default(),
    );
    assert!(String::from_utf8_lossy(&out).contains("501 Unimplemented command 'FROB'\r\n"));
    assert_eq!(*f.v.lock().unwrap(), "later");
}

#[test]
fn a_token_must_come_first_and_be_right() {
    struct Gone(std::path::PathBuf);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let dir = std::env::temp_dir().join(format!("pc-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = Gone(dir);
    let path = dir.0.join("token");
    std::fs::write(&path, "s3cret-token-0123456789\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Secret::from_file(&path).unwrap_err();
    assert!(e.contains("chmod 600") && !e.contains("s3cret"), "{e}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let token = Secret::from_file(&path).unwrap();
    assert_eq!(format!("{token:?}"), "Secret(..)");
    std::fs::write(&path, "short").unwrap();
    let e = Secret::from_file(&path).unwrap_err();
    assert!(e.contains("at least 16") && !e.contains("short"), "{e}");
    drop(dir);

    let cfg = ControlConfig {
        token: Some(token),
        auth_failure_delay: Duration::from_millis(1),
        ..ControlConfig::default()
    };
    let f = fake();
    for input in [
        &b"WRITE x.v evil\r\nAUTH s3cret-token-0123456789\r\nWRITE x.v evil\r\n"[..],
        b"READ x.v\r\n",
        b"AUTH s3cret-token-012345678\r\nWRITE x.v evil\r\n",
        b"AUTH\r\nWRITE x.v evil\r\n",
    ] {
        let (out, why) = session_over_bytes(input, &f, &cfg);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(why, "closed", "{text}");
        assert!(text.contains("\r\n530 Permission denied: "), "{text}");
        assert!(!text.contains("200"), "{text}");
    }
    assert_eq!(*f.v.lock().unwrap(), "init");
    let (out, _) = session_over_bytes(
        b"AUTH s3cret-token-0123456789\r\nWRITE x.v good\r\nAUTH x\r\n",
        &f,
        &cfg,
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        "Click::ControlSocket/1.3\r\n200 Authenticated\r\n\
         200 Write handler 'x.v' OK\r\n200 Already authenticated\r\n"
    );
    assert_eq!(*f.v.lock().unwrap(), "good");
    // Without a token, AUTH is harmless.
    let (out, _) = session_over_bytes(b"AUTH anything\r\n", &f, &ControlConfig::default());
    assert!(String::from_utf8_lossy(&out).ends_with("200 Authentication not required\r\n"));
}

/// A token in a file of a test's own, and the guard that removes it.
fn token_file(name: &str, text: &str) -> Secret {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("pc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let s = Secret::from_file(&path);
    let _ = std::fs::remove_dir_all(&dir);
    s.unwrap()
}

#[test]
fn wrong_tokens_wait_their_turn_and_a_right_one_does_not() {
    let delay = Duration::from_secs(1);
    let cfg = ControlConfig {
        token: Some(token_file("turns", "the-right-token-0123456789")),
        auth_failure_delay: delay,
        ..ControlConfig::default()
    };
    // Three guesses on three connections at once: the refusals take
    // turns, so the last comes no sooner than three delays after the
    // first guess went out.
    let began = std::time::Instant::now();
    let guessers: Vec<_> = (0..3)
        .map(|i| {
            let (mut r, t) = start(cfg.clone());
            send(&mut r, &format!("AUTH guess-number-{i}-0123456789\r\n"));
            (r, t)
        })
        .collect();
    // Meanwhile the right token is answered before any refusal.
    let (mut ok, okt) = start(cfg.clone());
    send(&mut ok, "AUTH the-right-token-0123456789\r\n");
    assert_eq!(line(&mut ok), "200 Authenticated");
    // No refusal has been sent yet (the first is a whole delay away).
    for (r, _) in &guessers {
        r.get_ref().set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        assert!(r.buffer().is_empty());
        let e = r.get_ref().read(&mut b).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        r.get_ref().set_nonblocking(false).unwrap();
    }
    for (mut r, t) in guessers {
        assert_eq!(line(&mut r), "530 Permission denied: wrong token");
        assert_eq!(t.join().unwrap(), "closed");
    }
    let all = began.elapsed();
    assert!(all >= delay * 3, "three refusals in {all:?}");
    send(&mut ok, "QUIT\r\n");
    assert_eq!(line(&mut ok), "200 Goodbye!");
    assert_eq!(okt.join().unwrap(), "closed");
}

#[test]
fn secrets_compare_whole() {
    let s = Secret::random().unwrap();
    assert_eq!(s.reveal().len(), 64);
    assert_ne!(s.reveal(), Secret::random().unwrap().reveal());
    assert!(s.matches(s.reveal().as_bytes()));
    assert!(!s.matches(&s.reveal().as_bytes()[..63]));
    assert!(!s.matches(b""));
    let mut other = s.reveal().as_bytes().to_vec();
    other[63] ^= 1;
    assert!(!s.matches(&other));
}

#[test]
fn a_writeuntil_body_has_a_total_deadline() {
    let cfg = ControlConfig {
        line_timeout: Duration::from_millis(300),
        ..ControlConfig::default()
    };
    let (mut r, t) = start(cfg);
    send(&mut r, "WRITEUNTIL x.v END\r\n");
    // A line every 100 ms: each is in time, the whole body is not.
    let t0 = std::time::Instant::now();
    let mut sent = 0;
    while !t.is_finished() && t0.elapsed() < Duration::from_secs(4) {
        if r.get_mut().write_all(b"more\r\n").is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    // A write can fail once the session has replied and closed, a moment
    // before its thread ends: wait for the end rather than race it.
    while !t.is_finished() && t0.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(t.is_finished(), "still reading after {sent} lines");
    assert_eq!(t.join().unwrap(), "timed out in data");
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(line(&mut r), "500 Timed out waiting for data");
}

/// A Unix control socket is created with its mode and accepts
/// connections; a path too long for a socket address, or a file that is
/// not a socket, is refused with a clear error.
#[test]
fn unix_sockets_bind_with_their_mode_and_bad_paths_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    struct Gone(std::path::PathBuf);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let dir = std::env::temp_dir().join(format!("pc-bind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = Gone(dir);
    let path = dir.0.join("ctl");
    let l = bind_unix(&path, 0o600).unwrap();
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    UnixStream::connect(&path).expect("the socket listens");
    drop(l);

    let long = dir.0.join("x".repeat(120));
    let e = bind_unix(&long, 0o600).err().expect("too long");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(e.to_string(), "socket path too long");

    let file = dir.0.join("file");
    std::fs::write(&file, "").unwrap();
    let e = bind_unix(&file, 0o600).err().expect("not a socket");
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert!(file.exists(), "a file that is not a socket is left alone");
}

#[test]
fn port_specs_parse_as_click_writes_them() {
    let p = |s| PortSpec::parse(s);
    assert_eq!(
        p("7777"),
        Some(PortSpec {
            port: 7777,
            search: false
        })
    );
    assert_eq!(
        p(" 41930+ "),
        Some(PortSpec {
            port: 41930,
            search: true
        })
    );
    // `0+` is `0`: any free port already.
    assert_eq!(
        p("0+"),
        Some(PortSpec {
            port: 0,
            search: false
        })
    );
    for bad in ["", "+", "65536", "12+3", "-1", "+80", "80++", "0x50"] {
        assert_eq!(p(bad), None, "{bad:?}");
    }
    assert_eq!(PortSpec::parse("41930+").unwrap().to_string(), "41930+");
}

#[test]
fn a_port_search_skips_ports_in_use_and_is_bounded() {
    let lo = std::net::IpAddr::from([127, 0, 0, 1]);
    // A port in use: PORT+ takes a later one, PORT alone fails.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let fixed = bind_tcp_search(
        lo,
        PortSpec {
            port,
            search: false,
        },
    );
    assert!(fixed.is_err(), "bound a port in use");
    match bind_tcp_search(lo, PortSpec { port, search: true }) {
        Ok(Listener::Tcp(ref l)) => {
            let got = l.local_addr().unwrap().port();
            assert!(got > port && got - port < PORT_SEARCH, "{port} -> {got}");
        }
        Ok(_) => panic!("not TCP"),
        // Every later port in range taken by someone else: the error
        // names the range.
        Err(e) => assert!(e.to_string().contains("no free port from"), "{e}"),
    }
    // The search stops at 65535: from there one port is tried, and once
    // it is in use there is a clear error rather than a wrap to 0.
    let top = std::net::TcpListener::bind("127.0.0.1:65535");
    let e = bind_tcp_search(
        lo,
        PortSpec {
            port: 65535,
            search: true,
        },
    );
    match (top, e) {
        (Ok(_held), Err(e)) => {
            assert_eq!(e.to_string(), "no free port from 65535 to 65535 (1 tried)")
        }
        (Ok(_), Ok(_)) => panic!("bound 65535 twice"),
        // 65535 not ours to hold: nothing more to check.
        (Err(_), _) => {}
    }
}
