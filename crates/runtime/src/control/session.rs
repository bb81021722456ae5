//! One control connection: reads commands, calls handlers, writes replies,
//! with every read bounded in size and time.

use super::{Backend, ControlConfig, CsError, GREETING};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A byte stream with timeouts (TCP or Unix).
pub trait CtlStream: Read + Write + Send {
    fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()>;
    fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()>;
}

impl CtlStream for std::net::TcpStream {
    fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_read_timeout(self, d)
    }
    fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_write_timeout(self, d)
    }
}

impl CtlStream for std::os::unix::net::UnixStream {
    fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        std::os::unix::net::UnixStream::set_read_timeout(self, d)
    }
    fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        std::os::unix::net::UnixStream::set_write_timeout(self, d)
    }
}

/// Why reading stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    Eof,
    Timeout,
    TooLong,
    Io,
    Shutdown,
}

/// How often a blocked read looks at the shutdown flag.
const TICK: Duration = Duration::from_millis(200);

pub(crate) struct Session<'a> {
    s: &'a mut dyn CtlStream,
    buf: Vec<u8>,
    pos: usize,
    /// The last line ended with CR: an LF right after belongs to it.
    skip_lf: bool,
    cfg: &'a ControlConfig,
    backend: &'a dyn Backend,
    shutdown: &'a AtomicBool,
    /// No command line has been read yet.
    first: bool,
    /// AUTH done, or none needed (no token configured).
    authed: bool,
}

/// A command's outcome: reply lines (code, text) and optional data.
struct Reply {
    code: u16,
    text: String,
    data: Option<Vec<u8>>,
    close: bool,
}

impl Reply {
    fn ok(text: String) -> Reply {
        Reply {
            code: 200,
            text,
            data: None,
            close: false,
        }
    }
    fn err(e: CsError) -> Reply {
        Reply {
            code: e.code,
            text: e.msg,
            data: None,
            close: false,
        }
    }
    fn closing(mut self) -> Reply {
        self.close = true;
        self
    }
}

/// Formats a reply: every line but the last as `CODE-text`, the last as
/// `CODE text`, each ending in CRLF.
pub(crate) fn format_message(code: u16, text: &str) -> Vec<u8> {
    let text = text.trim_end_matches(['\n', '\r']);
    let lines: Vec<&str> = if text.is_empty() {
        vec![""]
    } else {
        text.split('\n').map(|l| l.trim_end_matches('\r')).collect()
    };
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let sep = if i + 1 < lines.len() { '-' } else { ' ' };
        out.extend_from_slice(format!("{code}{sep}{l}\r\n").as_bytes());
    }
    out
}

impl<'a> Session<'a> {
    pub(crate) fn new(
        s: &'a mut dyn CtlStream,
        cfg: &'a ControlConfig,
        backend: &'a dyn Backend,
        shutdown: &'a AtomicBool,
    ) -> Session<'a> {
        Session {
            s,
            buf: Vec::new(),
            pos: 0,
            skip_lf: false,
            cfg,
            backend,
            shutdown,
            first: true,
            authed: cfg.token.is_none(),
        }
    }

    fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads more bytes, waiting at most until `deadline`.
    fn fill(&mut self, deadline: Instant) -> Result<(), Stop> {
        if self.pos > 0 && (self.pos == self.buf.len() || self.pos >= 64 * 1024) {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut tmp = [0u8; 16 * 1024];
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                return Err(Stop::Shutdown);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Stop::Timeout);
            }
            let wait = (deadline - now).min(TICK).max(Duration::from_millis(1));
            if self.s.set_read_timeout(Some(wait)).is_err() {
                return Err(Stop::Io);
            }
            match self.s.read(&mut tmp) {
                Ok(0) => return Err(Stop::Eof),
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return Ok(());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => return Err(Stop::Io),
            }
        }
    }

    /// Drops the LF of a CRLF whose CR ended the previous line, waiting
    /// for the next byte until `deadline` if none is here yet.
    fn settle_lf(&mut self, deadline: Instant) -> Result<(), Stop> {
        if self.skip_lf {
            if self.pending() == 0 {
                self.fill(deadline)?;
            }
            if self.buf[self.pos] == b'\n' {
                self.pos += 1;
            }
            self.skip_lf = false;
        }
        Ok(())
    }

    /// The next line (without its terminator). Waits up to the idle
    /// timeout for it to begin and the line timeout for it to end.
    fn read_line(&mut self, idle: bool) -> Result<Vec<u8>, Stop> {
        self.read_line_by(idle, None)
    }

    /// [`Session::read_line`], and all of it by `total` if given (a
    /// `...UNTIL` body's lines share one deadline).
    fn read_line_by(&mut self, idle: bool, total: Option<Instant>) -> Result<Vec<u8>, Stop> {
        let begin = Instant::now();
        let mut first_deadline = begin
            + if idle {
                self.cfg.idle_timeout
            } else {
                self.cfg.line_timeout
            };
        let cap = |d: Instant| match total {
            Some(t) => d.min(t),
            None => d,
        };
        first_deadline = cap(first_deadline);
        self.settle_lf(first_deadline)?;
        let mut started: Option<Instant> = None;
        loop {
            let avail = &self.buf[self.pos..];
            if let Some(i) = avail.iter().position(|&b| b == b'\r' || b == b'\n') {
                if i > self.cfg.max_line {
                    return Err(Stop::TooLong);
                }
                let line = avail[..i].to_vec();
                self.skip_lf = avail[i] == b'\r';
                self.pos += i + 1;
                return Ok(line);
            }
            if avail.len() > self.cfg.max_line {
                return Err(Stop::TooLong);
            }
            let deadline = if avail.is_empty() && started.is_none() {
                first_deadline
            } else {
                cap(*started.get_or_insert_with(Instant::now) + self.cfg.line_timeout)
            };
            self.fill(deadline)?;
        }
    }

    /// The next `n` bytes, which must come within the line timeout plus a
    /// microsecond per byte (a floor of 1 MB/s).
    fn read_data(&mut self, n: usize) -> Result<Vec<u8>, Stop> {
        let deadline = Instant::now() + self.cfg.line_timeout + Duration::from_micros(n as u64);
        if n > 0 {
            self.settle_lf(deadline)?;
        }
        while self.pending() < n {
            self.fill(deadline)?;
        }
        let d = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(d)
    }

    /// Lines up to one equal to `term` (trailing spaces ignored), joined
    /// with newlines, at most `max_data` bytes. All of it must come within
    /// the line timeout plus a microsecond per byte (a floor of 1 MB/s, as
    /// for `...DATA`): a body trickled line by line cannot hold the
    /// connection longer.
    fn read_until(&mut self, term: &str) -> Result<Result<Vec<u8>, CsError>, Stop> {
        let term = term.trim_end();
        let start = Instant::now() + self.cfg.line_timeout;
        let mut out = Vec::new();
        loop {
            let total = start + Duration::from_micros(out.len() as u64);
            let line = self.read_line_by(false, Some(total))?;
            let s = String::from_utf8_lossy(&line);
            if s.trim_end() == term {
                return Ok(Ok(out));
            }
            out.extend_from_slice(&line);
            out.push(b'\n');
            if out.len() > self.cfg.max_data {
                return Ok(Err(too_big(self.cfg.max_data)));
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) -> bool {
        let _ = self.s.set_write_timeout(Some(self.cfg.line_timeout));
        self.s.write_all(bytes).and_then(|_| self.s.flush()).is_ok()
    }

    /// Serves the connection until QUIT, end of input, a timeout, a limit
    /// broken, or shutdown. Returns why it ended (for VERBOSE).
    pub(crate) fn run(&mut self) -> &'static str {
        if !self.send(format!("{GREETING}\r\n").as_bytes()) {
            return "write failed";
        }
        // A TLS ClientHello starts with a handshake record (0x16), not a
        // line: refused at its first byte, before any line is complete.
        if self.pending() == 0 {
            let deadline = Instant::now() + self.cfg.idle_timeout;
            match self.fill(deadline) {
                Ok(()) => {}
                Err(Stop::Timeout) => return "timed out",
                Err(Stop::Eof) => return "closed by client",
                Err(Stop::Io | Stop::TooLong) => return "read error",
                Err(Stop::Shutdown) => return "router gone",
            }
        }
        if self.buf.get(self.pos) == Some(&0x16) {
            return REFUSED_TLS;
        }
        loop {
            let line = match self.read_line(true) {
                Ok(l) => l,
                Err(Stop::TooLong) => {
                    let m = format_message(
                        500,
                        &format!("Line too long (limit {} bytes)", self.cfg.max_line),
                    );
                    self.send(&m);
                    return "line too long";
                }
                Err(Stop::Timeout) => return "timed out",
                Err(Stop::Eof) => return "closed by client",
                Err(Stop::Io) => return "read error",
                Err(Stop::Shutdown) => return "router gone",
            };
            if let Some(why) = not_a_control_client(&line, self.first) {
                // Nothing more is read from this connection, and nothing
                // is answered: a browser or TLS client has no use for a
                // reply, and what it sent later must not run.
                return why;
            }
            let reply = match self.command(&line) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(Stop::Timeout) => {
                    let m = format_message(500, "Timed out waiting for data");
                    self.send(&m);
                    return "timed out in data";
                }
                Err(Stop::TooLong) => {
                    let m = format_message(
                        500,
                        &format!("Line too long (limit {} bytes)", self.cfg.max_line),
                    );
                    self.send(&m);
                    return "line too long";
                }
                Err(Stop::Eof) => return "closed by client in data",
                Err(Stop::Io) => return "read error",
                Err(Stop::Shutdown) => return "router gone",
            };
            let mut out = format_message(reply.code, &reply.text);
            if let Some(d) = &reply.data {
                out.extend_from_slice(format!("DATA {}\r\n", d.len()).as_bytes());
                out.extend_from_slice(d);
            }
            if !self.send(&out) {
                return "write failed";
            }
            if reply.close {
                return "closed";
            }
        }
    }

    /// Parses and runs one command line. `None` for a blank line.
    fn command(&mut self, line: &[u8]) -> Result<Option<Reply>, Stop> {
        let line = String::from_utf8_lossy(line).into_owned();
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let (cmd, rest) = split_word(line);
        let cmd = cmd.to_ascii_uppercase();
        let first = std::mem::replace(&mut self.first, false);
        if cmd == "AUTH" {
            return Ok(Some(self.auth(rest)));
        }
        if !self.authed && cmd != "QUIT" {
            return Ok(Some(
                Reply::err(CsError::new(
                    530,
                    format!(
                        "Permission denied: authentication required (send AUTH TOKEN first, not {cmd})"
                    ),
                ))
                .closing(),
            ));
        }
        if first && !COMMANDS.contains(&cmd.as_str()) {
            return Ok(Some(
                Reply::err(CsError::new(
                    501,
                    format!("Unimplemented command '{cmd}' (not a control client: closing)"),
                ))
                .closing(),
            ));
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        let syntax = |c: &str| {
            Ok(Some(Reply::err(CsError::new(
                500,
                format!("Wrong number of arguments to '{c}'"),
            ))))
        };
        Ok(Some(match cmd.as_str() {
            "READ" => {
                let (h, params) = split_word(rest);
                if h.is_empty() {
                    return syntax(&cmd);
                }
                self.do_read(h, (!params.is_empty()).then_some(params))
            }
            "READDATA" | "WRITEDATA" => {
                let [h, n] = words[..] else {
                    return syntax(&cmd);
                };
                let n = match self.data_len(n) {
                    Ok(n) => n,
                    Err(r) => return Ok(Some(r)),
                };
                let data = self.read_data(n)?;
                match String::from_utf8(data) {
                    Err(_) => Reply::err(CsError::new(520, "Handler data is not UTF-8 text")),
                    Ok(d) if cmd == "READDATA" => self.do_read(h, Some(&d)),
                    Ok(d) => self.do_write(h, &d),
                }
            }
            "READUNTIL" | "WRITEUNTIL" => {
                if words.is_empty() || words.len() > 2 {
                    return syntax(&cmd);
                }
                let h = words[0];
                let data = match self.read_until(words.get(1).copied().unwrap_or(""))? {
                    Ok(d) => d,
                    Err(e) => return Ok(Some(Reply::err(e).closing())),
                };
                match String::from_utf8(data) {
                    Err(_) => Reply::err(CsError::new(520, "Handler data is not UTF-8 text")),
                    Ok(d) if cmd == "READUNTIL" => self.do_read(h, Some(&d)),
                    Ok(d) => self.do_write(h, &d),
                }
            }
            "WRITE" => {
                let (h, value) = split_word(rest);
                if h.is_empty() {
                    return syntax(&cmd);
                }
                self.do_write(h, value)
            }
            "CHECKREAD" | "CHECKWRITE" => {
                let [h] = words[..] else {
                    return syntax(&cmd);
                };
                let write = cmd == "CHECKWRITE";
                if write && self.cfg.read_only {
                    Reply::err(read_only())
                } else {
                    match self.backend.check(h, write) {
                        Ok(()) => Reply::ok(format!(
                            "{} handler '{h}' OK",
                            if write { "Write" } else { "Read" }
                        )),
                        Err(e) => Reply::err(e),
                    }
                }
            }
            "LLRPC" => {
                if words.is_empty() || words.len() > 2 {
                    return syntax(&cmd);
                }
                let data = match words.get(1) {
                    Some(n) => {
                        let n = match self.data_len(n) {
                            Ok(n) => n,
                            Err(r) => return Ok(Some(r)),
                        };
                        self.read_data(n)?
                    }
                    None => Vec::new(),
                };
                let target = words[0];
                let parsed = target.split_once('#').and_then(|(e, c)| {
                    let c = c
                        .strip_prefix("0x")
                        .or_else(|| c.strip_prefix("0X"))
                        .unwrap_or(c);
                    Some((e, u32::from_str_radix(c, 16).ok()?))
                });
                match parsed {
                    None => return syntax(&cmd),
                    // An LLRPC may change the router: a write.
                    Some(_) if self.cfg.read_only => Reply::err(read_only()),
                    Some((e, c)) => match self.backend.llrpc(e, c, &data) {
                        Ok(out) => Reply {
                            data: Some(out),
                            ..Reply::ok(format!("LLRPC '{target}' OK"))
                        },
                        Err(e) => Reply::err(e),
                    },
                }
            }
            "QUIT" => Reply::ok("Goodbye!".into()).closing(),
            _ => Reply::err(CsError::new(501, format!("Unimplemented command '{cmd}'"))),
        }))
    }

    /// `AUTH TOKEN`: the connection's first command where the socket has
    /// a token. A wrong token closes the connection (one guess each).
    fn auth(&mut self, token: &str) -> Reply {
        match &self.cfg.token {
            None => Reply::ok("Authentication not required".into()),
            Some(_) if self.authed => Reply::ok("Already authenticated".into()),
            Some(t) if t.matches(token.as_bytes()) => {
                self.authed = true;
                Reply::ok("Authenticated".into())
            }
            Some(_) => {
                self.hold_refusal();
                Reply::err(CsError::new(530, "Permission denied: wrong token")).closing()
            }
        }
    }

    /// Holds a wrong token's refusal for `auth_failure_delay`, one
    /// refusal at a time process-wide, so guesses are rate-limited
    /// whatever the number of connections. Ends early at shutdown.
    fn hold_refusal(&self) {
        static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let end = Instant::now() + self.cfg.auth_failure_delay;
        loop {
            let now = Instant::now();
            if now >= end || self.shutdown.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(50)));
        }
    }

    /// Parses a data length; one over the limit ends the connection (the
    /// data that would follow cannot be skipped safely).
    fn data_len(&self, n: &str) -> Result<usize, Reply> {
        match n.parse::<usize>() {
            Err(_) => Err(Reply::err(CsError::new(
                500,
                format!("Bad data length '{n}'"),
            ))),
            Ok(n) if n > self.cfg.max_data => Err(Reply::err(too_big(self.cfg.max_data)).closing()),
            Ok(n) => Ok(n),
        }
    }

    fn do_read(&self, h: &str, param: Option<&str>) -> Reply {
        match self.backend.read(h, param) {
            Ok(v) => Reply {
                code: 200,
                text: format!("Read handler '{h}' OK"),
                data: Some(v.into_bytes()),
                close: false,
            },
            Err(e) => Reply::err(e),
        }
    }

    fn do_write(&self, h: &str, value: &str) -> Reply {
        if self.cfg.read_only {
            return Reply::err(read_only());
        }
        match self.backend.write(h, value) {
            Ok(()) => Reply::ok(format!("Write handler '{h}' OK")),
            // A handler's own error, under Click's heading line.
            Err(e) if e.code == 520 => Reply::err(CsError::new(
                520,
                format!("Write handler '{h}' error:\n{}", e.msg),
            )),
            Err(e) => Reply::err(e),
        }
    }
}

/// The commands; a connection whose first command is none of them is no
/// control client and is closed.
const COMMANDS: &[&str] = &[
    "READ",
    "READDATA",
    "READUNTIL",
    "WRITE",
    "WRITEDATA",
    "WRITEUNTIL",
    "CHECKREAD",
    "CHECKWRITE",
    "LLRPC",
    "QUIT",
    "AUTH",
];

/// Why a session ended when it was refused as another protocol's client
/// (the server logs these; they start with "refused").
pub(crate) const REFUSED_TLS: &str = "refused: a TLS handshake, not a control client";
const REFUSED_HTTP: &str = "refused: an HTTP request, not a control client";
const REFUSED_HEADER: &str = "refused: an HTTP header line, not a control command";

/// HTTP's methods (RFC 9110 and WebDAV's common ones): no control
/// command is spelled so.
const HTTP_METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "PRI",
];

/// Whether `line` shows the peer speaks HTTP (a request line, or a header
/// such as `Host:` anywhere): a browser made to send a request to the
/// control port (cross-protocol scripting), whose body could otherwise
/// carry commands. Such a connection is closed at once, unanswered, as
/// Redis does.
fn not_a_control_client(line: &[u8], first: bool) -> Option<&'static str> {
    let text = String::from_utf8_lossy(line);
    let word = text.split_whitespace().next()?;
    if HTTP_METHODS.iter().any(|m| word.eq_ignore_ascii_case(m)) {
        return Some(REFUSED_HTTP);
    }
    // `Host:`, `Origin:`, `Content-Type:`...: no command word has a colon.
    if let Some((name, _)) = word.split_once(':') {
        if !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Some(REFUSED_HEADER);
        }
    }
    if first && text.contains(" HTTP/") {
        return Some(REFUSED_HTTP);
    }
    None
}

fn read_only() -> CsError {
    CsError::new(530, "Permission denied: this control socket is read-only")
}

fn too_big(limit: usize) -> CsError {
    CsError::new(521, format!("Data too big (limit {limit} bytes)"))
}

/// The first word and the rest (trimmed).
fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim();
    match s.split_once(char::is_whitespace) {
        Some((a, b)) => (a, b.trim()),
        None => (s, ""),
    }
}
