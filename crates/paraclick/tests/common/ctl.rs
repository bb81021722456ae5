//! A raw ControlSocket client written for the tests (not paraclick's own
//! `ctl`), so a bug in one does not hide a bug in the other.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

pub struct Client {
    pub r: BufReader<Box<dyn Stream>>,
}

impl Client {
    /// A client over `s` that has not read the greeting (or got none).
    pub fn raw(s: Box<dyn Stream>) -> Client {
        Client {
            r: BufReader::new(s),
        }
    }

    /// A client over `s`, after checking the greeting.
    pub fn over(s: Box<dyn Stream>) -> Client {
        let mut c = Client {
            r: BufReader::new(s),
        };
        assert_eq!(c.line(), "Click::ControlSocket/1.3");
        c
    }

    /// A client of 127.0.0.1:`port`; replies wait up to `timeout`.
    pub fn tcp_with(port: u16, timeout: Duration) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(timeout)).unwrap();
        Client::over(Box::new(s))
    }

    pub fn tcp(port: u16) -> Client {
        Client::tcp_with(port, Duration::from_secs(60))
    }

    /// A client of a UNIX socket, retrying the connection for up to 10 s
    /// (the router may still be binding it).
    pub fn unix(path: &Path) -> Client {
        let t0 = Instant::now();
        let s = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(_) if t0.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("connect {}: {e}", path.display()),
            }
        };
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Client::over(Box::new(s))
    }

    pub fn send(&mut self, b: &[u8]) {
        self.r.get_mut().write_all(b).unwrap();
    }

    /// One line, which must end in CRLF, without it.
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        assert!(l.ends_with("\r\n"), "line ends in CRLF: {l:?}");
        l.truncate(l.len() - 2);
        l
    }

    /// A whole reply: its code and its lines' texts (`CODE-` lines first).
    pub fn reply(&mut self) -> (u16, Vec<String>) {
        let mut texts = Vec::new();
        loop {
            let l = self.line();
            assert!(l.len() >= 4, "short reply line {l:?}");
            let code: u16 = l[..3].parse().unwrap();
            texts.push(l[4..].to_string());
            match l.as_bytes()[3] {
                b'-' => continue,
                b' ' => return (code, texts),
                c => panic!("bad separator {c} in {l:?}"),
            }
        }
    }

    /// A reply's code and its texts joined, one per line.
    pub fn reply_text(&mut self) -> (u16, String) {
        let (code, t) = self.reply();
        let mut s = t.join("\n");
        s.push('\n');
        (code, s)
    }

    /// Sends `cmd`; the reply's code.
    pub fn code(&mut self, cmd: &str) -> u16 {
        self.send(format!("{cmd}\r\n").as_bytes());
        self.reply().0
    }

    /// `DATA N` and N bytes.
    pub fn data(&mut self) -> String {
        let l = self.line();
        let n: usize = l.strip_prefix("DATA ").expect("DATA line").parse().unwrap();
        let mut b = vec![0; n];
        self.r.read_exact(&mut b).unwrap();
        String::from_utf8(b).unwrap()
    }

    /// `READ h`, which must succeed: the value.
    pub fn read(&mut self, h: &str) -> String {
        self.send(format!("READ {h}\r\n").as_bytes());
        let (code, t) = self.reply();
        assert_eq!(code, 200, "READ {h}: {t:?}");
        assert_eq!(t, [format!("Read handler '{h}' OK")]);
        self.data()
    }

    pub fn count(&mut self, h: &str) -> u64 {
        self.read(h).trim().parse().unwrap()
    }

    /// Waits until counter `h` exceeds its value now, and returns the new
    /// value: the event, not a sleep a loaded machine may not give the
    /// router. Fails after a generous 30 s.
    pub fn rises(&mut self, h: &str) -> u64 {
        let a = self.count(h);
        let t0 = Instant::now();
        loop {
            let b = self.count(h);
            if b > a {
                return b;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "{h} stays at {a}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `WRITE h value`: the reply.
    pub fn write(&mut self, h: &str, value: &str) -> (u16, Vec<String>) {
        self.send(format!("WRITE {h} {value}\r\n").as_bytes());
        self.reply()
    }

    /// `WRITEDATA h N` and the bytes: the reply.
    pub fn write_data(&mut self, h: &str, value: &str) -> (u16, Vec<String>) {
        self.send(format!("WRITEDATA {h} {}\r\n", value.len()).as_bytes());
        self.send(value.as_bytes());
        self.reply()
    }

    /// A configuration written to `hotconfig`: the reply's code and text.
    pub fn hotconfig(&mut self, text: &str) -> (u16, String) {
        self.send(format!("WRITEDATA hotconfig {}\r\n", text.len()).as_bytes());
        self.send(text.as_bytes());
        self.reply_text()
    }

    /// Whether the server closed the connection (within the read timeout).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 64];
        matches!(self.r.read(&mut b), Ok(0))
    }
}
