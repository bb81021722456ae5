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
fn flatconfig_lists_declarations_then_connections() {
    let src = paraclick_lang::Source {
        name: "t".into(),
        text: "a :: X(1) -> b :: Y; a [1] -> [2] b;".into(),
    };
    let g = paraclick_lang::parse_config(&src, &[]).unwrap();
    assert_eq!(
        flatconfig(&g),
        "a :: X(1);\nb :: Y;\na -> b;\na [1] -> [2] b;\n"
    );
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
