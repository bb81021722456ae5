//! `--web ADDR:PORT`: a live view of the running router in a browser.
//!
//! One self-contained page (HTML, a script and a style sheet compiled into
//! the binary, nothing fetched from elsewhere) and a small JSON interface
//! under `/api/`. The interface holds no state of its own: it speaks
//! Click's control protocol, over a socket pair, to the same control
//! server and handler dispatch as `-p`/`-u` (`READ`, `WRITEDATA`), so the
//! page sees exactly what a control-socket client sees.
//!
//! - `GET /` (the page), `GET /app.js`, `GET /app.css`.
//! - `GET /api/read?h=E.H&h=...`: reads each handler; a JSON object from
//!   handler name to `{"ok": true, "value": "..."}` or `{"ok": false,
//!   "error": "CODE message"}`.
//! - `GET /metrics`: the router's counters for Prometheus (see
//!   [`crate::metrics`]); read-only, any other method gets 405.
//! - `POST /api/write?h=E.H` with the value as the body: writes it;
//!   `{"ok": ..., "error": ...}`. Needs the run's token in the header
//!   `X-Paraclick-Token` and `Content-Type: application/octet-stream`.
//!
//! Access. Whoever can connect can read every handler, and whoever also
//! has the token can write every write handler (`stop`; `hotconfig` with
//! `-R`, which can make the router write files): like a control socket,
//! so the view listens on loopback unless told otherwise. What it adds is
//! protection from web pages the operator's browser visits, which can
//! send requests to loopback too:
//! - `Host` must name this server: `localhost`, `127.0.0.1` or `[::1]`
//!   with its port, or the address it was bound to (bound to every
//!   address, any IP address literal). Any other gets 421 and nothing
//!   else, so a DNS-rebinding page (its own name, resolved to 127.0.0.1)
//!   reads nothing, the page and its token included.
//! - A write needs the token: 32 bytes from the OS's random source, new
//!   each run, put into the page served (and printed once on stderr, for
//!   scripts), compared in constant time. A page from another origin
//!   cannot read it (same-origin policy), and cannot send the header or
//!   the content type without a CORS preflight, which is never allowed:
//!   no response carries `Access-Control-Allow-*`. A write whose `Origin`
//!   is not this server's, or whose `Sec-Fetch-Site` says another site
//!   sent it, is refused (403) before anything else, and so is an API
//!   read from another site.
//! - Every response has `Content-Security-Policy: default-src 'none';
//!   script-src 'self'; ...; frame-ancestors 'none'` (no inline script or
//!   style, no framing), `X-Frame-Options: DENY`, `X-Content-Type-Options:
//!   nosniff`, `Referrer-Policy: no-referrer`, `Cross-Origin-Resource-Policy:
//!   same-origin` and `Cache-Control: no-store`.
//!
//! The server is minimal on purpose: one thread per connection, at most
//! 16 at once, requests of at most 64 KiB of headers and 1 MiB of body,
//! 10 seconds for the whole request (headers and body: a client sending a
//! byte now and then is cut off then, not kept), 10 seconds to take the
//! response, one request per connection.

use crate::ctl::{read_reply, Conn};
use paraclick_runtime::control::{self, Backend, ControlConfig, Secret, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PAGE: &str = include_str!("web/index.html");
const SCRIPT: &str = include_str!("web/app.js");
const STYLE: &str = include_str!("web/app.css");
const MAX_HEADERS: usize = 64 * 1024;
const MAX_BODY: usize = 1024 * 1024;
const MAX_CONNS: usize = 16;
/// The header a write carries the token in.
pub const TOKEN_HEADER: &str = "X-Paraclick-Token";
/// The content type a write must have (not one a form or a no-cors fetch
/// can send).
const WRITE_TYPE: &str = "application/octet-stream";
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// Time limits of the server.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// For the whole request, headers and body, from the connection's
    /// acceptance.
    request: Duration,
    /// To take the response.
    response: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request: Duration::from_secs(10),
            response: Duration::from_secs(10),
        }
    }
}

/// `--web` value: `PORT` (127.0.0.1) or `ADDR:PORT`.
pub fn addr(spec: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = spec.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    spec.parse::<SocketAddr>()
        .map_err(|_| format!("--web: expected PORT or ADDRESS:PORT, not '{spec}'"))
}

/// A control-protocol connection to the router's control server.
struct Ctl {
    backend: Arc<dyn Backend>,
    conn: Option<(BufReader<Box<dyn Conn>>, Server)>,
}

impl Ctl {
    fn connect(&mut self) -> Result<&mut BufReader<Box<dyn Conn>>, String> {
        if self.conn.is_none() {
            let (a, b) = UnixStream::pair().map_err(|e| e.to_string())?;
            let server = control::serve_stream(b, self.backend.clone(), ControlConfig::default())
                .map_err(|e| e.to_string())?;
            let mut r: BufReader<Box<dyn Conn>> = BufReader::new(Box::new(a));
            let mut greeting = String::new();
            r.read_line(&mut greeting).map_err(|e| e.to_string())?;
            if !greeting.starts_with("Click::ControlSocket/") {
                return Err(format!("bad greeting '{}'", greeting.trim_end()));
            }
            self.conn = Some((r, server));
        }
        Ok(&mut self.conn.as_mut().expect("connected").0)
    }

    /// Sends one command and takes its reply; a broken connection is
    /// opened again once.
    fn call(&mut self, cmd: &[u8], want_data: bool) -> Result<crate::ctl::Reply, String> {
        for attempt in 0..2 {
            let r = self.connect()?;
            let res = r
                .get_mut()
                .write_all(cmd)
                .map_err(|e| e.to_string())
                .and_then(|_| read_reply(r, want_data));
            match res {
                Ok(x) => return Ok(x),
                Err(e) if attempt == 1 => return Err(e),
                Err(_) => self.conn = None,
            }
        }
        Err("unreachable".into())
    }

    fn read(&mut self, h: &str) -> serde_json::Value {
        if h.is_empty() || h.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return serde_json::json!({"ok": false, "error": "500 bad handler name"});
        }
        match self.call(format!("READ {h}\r\n").as_bytes(), true) {
            Ok(r) if (200..300).contains(&r.code) => serde_json::json!({
                "ok": true,
                "value": String::from_utf8_lossy(&r.data.unwrap_or_default()),
            }),
            Ok(r) => {
                serde_json::json!({"ok": false, "error": format!("{} {}", r.code, r.text.join("\n"))})
            }
            Err(e) => serde_json::json!({"ok": false, "error": e}),
        }
    }

    fn write(&mut self, h: &str, value: &[u8]) -> serde_json::Value {
        if h.is_empty() || h.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return serde_json::json!({"ok": false, "error": "500 bad handler name"});
        }
        let cmd = [
            format!("WRITEDATA {h} {}\r\n", value.len()).into_bytes(),
            value.to_vec(),
        ]
        .concat();
        match self.call(&cmd, false) {
            Ok(r) if (200..300).contains(&r.code) => serde_json::json!({"ok": true}),
            Ok(r) => {
                serde_json::json!({"ok": false, "error": format!("{} {}", r.code, r.text.join("\n"))})
            }
            Err(e) => serde_json::json!({"ok": false, "error": e}),
        }
    }
}

/// A running web view.
pub struct Web {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The run's write token.
    pub token: Secret,
}

/// Starts the web view on `addr`.
pub fn start(addr: SocketAddr, backend: Arc<dyn Backend>) -> Result<Web, String> {
    start_with(addr, backend, Limits::default())
}

fn start_with(addr: SocketAddr, backend: Arc<dyn Backend>, limits: Limits) -> Result<Web, String> {
    let token = Secret::random().map_err(|e| format!("--web: no random token: {e}"))?;
    let l = TcpListener::bind(addr).map_err(|e| format!("--web {addr}: {e}"))?;
    let local = l.local_addr().map_err(|e| e.to_string())?;
    let site = Arc::new(Site {
        metrics: backend.clone(),
        ctl: Mutex::new(Ctl {
            backend,
            conn: None,
        }),
        local,
        token: token.clone(),
        limits,
    });
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("paraclick-web".into())
        .spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
                    active.fetch_sub(1, Ordering::AcqRel);
                    let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                    let _ = respond(&mut s, 503, "text/plain", b"too many connections\n");
                    continue;
                }
                let (site, active) = (site.clone(), active.clone());
                let a2 = active.clone();
                let spawned = std::thread::Builder::new()
                    .name("paraclick-web-conn".into())
                    .spawn(move || {
                        serve(s, &site);
                        active.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    // Could not start a thread: the connection was dropped.
                    a2.fetch_sub(1, Ordering::AcqRel);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(Web { addr: local, token })
}

/// What every connection's thread shares.
struct Site {
    ctl: Mutex<Ctl>,
    /// What `/metrics` reads (see [`crate::metrics`]).
    metrics: Arc<dyn Backend>,
    /// Where the server listens (its port, and its address if bound to
    /// one).
    local: SocketAddr,
    token: Secret,
    limits: Limits,
}

impl Site {
    /// Whether `host` (a `Host` header's value) names this server; see
    /// the module documentation.
    fn host_ok(&self, host: &str) -> bool {
        host_ok(self.local, host)
    }
}

/// Whether `host` (a `Host` header's value) names a server listening on
/// `local`: `localhost` or a loopback address with its port, its own
/// address, or (bound to every address) any IP address literal; never
/// another DNS name (a DNS-rebinding page's).
pub(crate) fn host_ok(local: SocketAddr, host: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let port = local.port();
    let (name, p) = match host.rsplit_once(':') {
        Some((n, p)) if !p.contains(']') => (n, Some(p)),
        _ => (host.as_str(), None),
    };
    match p {
        Some(p) if p.parse::<u16>() != Ok(port) => return false,
        None if port != 80 => return false,
        _ => {}
    }
    if name == "localhost" {
        return true;
    }
    let ip = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6),
        None => name.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4),
    };
    let Some(ip) = ip else {
        // A DNS name other than localhost: what a rebinding page uses.
        return false;
    };
    ip.is_loopback() || ip == local.ip() || local.ip().is_unspecified()
}

/// Writes a whole response, with the security headers every response
/// has (see the module documentation).
fn respond(s: &mut TcpStream, code: u16, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        _ => "Service Unavailable",
    };
    let allow = if code == 405 {
        "Allow: GET, POST\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Content-Security-Policy: {CSP}\r\nX-Frame-Options: DENY\r\n\
         X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Cross-Origin-Resource-Policy: same-origin\r\nCross-Origin-Opener-Policy: same-origin\r\n\
         Cache-Control: no-store\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()
}

/// A parsed request: method, path, query pairs, headers (names in lower
/// case), body.
struct Request {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (lower case); `Err` if it is repeated.
    fn header(&self, name: &str) -> Result<Option<&str>, ()> {
        let mut it = self.headers.iter().filter(|(k, _)| k == name);
        let first = it.next().map(|(_, v)| v.as_str());
        if it.next().is_some() {
            return Err(());
        }
        Ok(first)
    }
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads one request, all of it (headers and body) by `deadline`.
fn read_request(s: &mut TcpStream, deadline: Instant) -> Result<Request, u16> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut more = |s: &mut TcpStream, buf: &mut Vec<u8>| -> Result<(), u16> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(408);
        }
        s.set_read_timeout(Some(left)).map_err(|_| 400u16)?;
        match s.read(&mut chunk) {
            Ok(0) => Err(400),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
            Err(_) => Err(408),
        }
    };
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEADERS {
            return Err(413);
        }
        more(s, &mut buf)?;
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| 400u16)?;
    let mut lines = head.split("\r\n");
    let first = lines.next().ok_or(400u16)?;
    let mut parts = first.split(' ');
    let (method, target) = match (parts.next(), parts.next()) {
        (Some(m), Some(t)) => (m.to_string(), t.to_string()),
        _ => return Err(400),
    };
    let mut headers = Vec::new();
    for l in lines {
        let (k, v) = l.split_once(':').ok_or(400u16)?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut len = 0usize;
    for (k, v) in &headers {
        if k == "content-length" {
            len = v.parse().map_err(|_| 400u16)?;
        }
        if k == "transfer-encoding" {
            return Err(400);
        }
    }
    if len > MAX_BODY {
        return Err(413);
    }
    let mut body = buf.split_off(head_end + 4);
    while body.len() < len {
        more(s, &mut body)?;
    }
    body.truncate(len);
    let (path, q) = target.split_once('?').unwrap_or((&target, ""));
    let query = q
        .split('&')
        .filter(|x| !x.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect();
    Ok(Request {
        method,
        path: path.to_string(),
        query,
        headers,
        body,
    })
}

/// Why an API request is refused (403), if it is: one another site's page
/// made (its `Origin` is not this server's, or `Sec-Fetch-Site` says so);
/// for a write also one without the token or the content type.
fn refused(req: &Request, host: &str, token: &Secret, write: bool) -> Option<(u16, &'static str)> {
    let Ok(origin) = req.header("origin") else {
        return Some((400, "repeated Origin\n"));
    };
    if let Some(o) = origin {
        if !o.eq_ignore_ascii_case(&format!("http://{host}")) {
            return Some((403, "cross-origin request refused\n"));
        }
    }
    match req.header("sec-fetch-site") {
        Ok(None | Some("same-origin" | "none")) => {}
        _ => return Some((403, "cross-site request refused\n")),
    }
    if !write {
        return None;
    }
    let ok_type = match req.header("content-type") {
        Ok(Some(t)) => t
            .split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(WRITE_TYPE)),
        _ => false,
    };
    if !ok_type {
        return Some((
            415,
            "a write's Content-Type must be application/octet-stream\n",
        ));
    }
    match req.header("x-paraclick-token") {
        Ok(Some(t)) if token.matches(t.as_bytes()) => None,
        _ => Some((403, "a write needs the run's token in X-Paraclick-Token\n")),
    }
}

fn serve(mut s: TcpStream, site: &Site) {
    let deadline = Instant::now() + site.limits.request;
    let _ = s.set_write_timeout(Some(site.limits.response));
    let req = match read_request(&mut s, deadline) {
        Ok(r) => r,
        Err(code) => {
            let _ = respond(&mut s, code, "text/plain", b"bad request\n");
            return;
        }
    };
    let text = "text/plain";
    // Nothing, not even an error about the rest, for another name: a
    // DNS-rebinding page gets no byte of the router's.
    let host = match req.header("host") {
        Ok(Some(h)) if site.host_ok(h) => h.to_string(),
        _ => {
            let _ = respond(&mut s, 421, text, b"misdirected request\n");
            return;
        }
    };
    let json = "application/json";
    let lock = || site.ctl.lock().unwrap_or_else(|e| e.into_inner());
    let r = match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/") | ("GET", "/index.html") => {
            let page = PAGE.replace("{{TOKEN}}", site.token.reveal());
            respond(&mut s, 200, "text/html; charset=utf-8", page.as_bytes())
        }
        ("GET", "/app.js") => respond(
            &mut s,
            200,
            "text/javascript; charset=utf-8",
            SCRIPT.as_bytes(),
        ),
        ("GET", "/app.css") => respond(&mut s, 200, "text/css; charset=utf-8", STYLE.as_bytes()),
        ("GET", "/api/read") => match refused(&req, &host, &site.token, false) {
            Some((code, why)) => respond(&mut s, code, text, why.as_bytes()),
            None => {
                let mut out = serde_json::Map::new();
                let mut c = lock();
                for (k, h) in &req.query {
                    if k == "h" {
                        out.insert(h.clone(), c.read(h));
                    }
                }
                drop(c);
                let body = serde_json::Value::Object(out).to_string();
                respond(&mut s, 200, json, body.as_bytes())
            }
        },
        // Read-only, and refused to another site's page as API reads are.
        ("GET", "/metrics") => match refused(&req, &host, &site.token, false) {
            Some((code, why)) => respond(&mut s, code, text, why.as_bytes()),
            None => {
                let body = crate::metrics::render(&*site.metrics);
                respond(&mut s, 200, crate::metrics::CONTENT_TYPE, body.as_bytes())
            }
        },
        ("POST", "/api/write") => match refused(&req, &host, &site.token, true) {
            Some((code, why)) => respond(&mut s, code, text, why.as_bytes()),
            None => {
                let h = req
                    .query
                    .iter()
                    .find(|(k, _)| k == "h")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let v = lock().write(&h, &req.body);
                respond(&mut s, 200, json, v.to_string().as_bytes())
            }
        },
        // OPTIONS (a CORS preflight) included: never allowed, and no
        // Access-Control-Allow-* header anywhere.
        (_, "/")
        | (_, "/index.html")
        | (_, "/app.js")
        | (_, "/app.css")
        | (_, "/api/read")
        | (_, "/metrics") => respond(&mut s, 405, text, b"method not allowed\n"),
        (_, "/api/write") => respond(&mut s, 405, text, b"method not allowed\n"),
        _ => respond(&mut s, 404, text, b"not found\n"),
    };
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(pct_decode("c%2Fd.count"), "c/d.count");
        assert_eq!(pct_decode("a+b"), "a b");
        assert_eq!(pct_decode("100%"), "100%");
        assert_eq!(pct_decode("%zz"), "%zz");
    }

    #[test]
    fn web_addresses() {
        assert_eq!(addr("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(addr("[::1]:80").unwrap().to_string(), "[::1]:80");
        assert_eq!(
            addr("x").unwrap_err(),
            "--web: expected PORT or ADDRESS:PORT, not 'x'"
        );
    }

    /// `x.v`: a handler that keeps what is written.
    struct Fake(Mutex<String>);

    impl Backend for Fake {
        fn read(&self, h: &str, _: Option<&str>) -> Result<String, control::CsError> {
            self.check(h, false)?;
            Ok(self.0.lock().unwrap().clone())
        }
        fn write(&self, h: &str, v: &str) -> Result<(), control::CsError> {
            self.check(h, true)?;
            *self.0.lock().unwrap() = v.to_string();
            Ok(())
        }
        fn check(&self, h: &str, _: bool) -> Result<(), control::CsError> {
            if h == "x.v" {
                Ok(())
            } else {
                Err(control::CsError::new(510, "no element"))
            }
        }
    }

    fn site(local: &str) -> Site {
        Site {
            metrics: Arc::new(Fake(Mutex::new(String::new()))),
            ctl: Mutex::new(Ctl {
                backend: Arc::new(Fake(Mutex::new(String::new()))),
                conn: None,
            }),
            local: local.parse().unwrap(),
            token: Secret::random().unwrap(),
            limits: Limits::default(),
        }
    }

    #[test]
    fn host_names_this_server_only() {
        let s = site("127.0.0.1:8080");
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LocalHost:8080",
            "[::1]:8080",
            "127.0.0.2:8080",
        ] {
            assert!(s.host_ok(ok), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "localhost.evil.example:8080",
            "127.0.0.1:8081",
            "127.0.0.1",
            "localhost",
            "10.0.0.1:8080",
            "",
            "[::1]",
            "127.0.0.1:8080:8080",
        ] {
            assert!(!s.host_ok(bad), "{bad}");
        }
        // Bound to an address: that one too; to every address: any IP.
        let s = site("192.0.2.7:8080");
        assert!(s.host_ok("192.0.2.7:8080") && s.host_ok("localhost:8080"));
        assert!(!s.host_ok("192.0.2.8:8080") && !s.host_ok("router.example:8080"));
        let s = site("0.0.0.0:80");
        assert!(s.host_ok("192.0.2.8") && s.host_ok("192.0.2.8:80") && s.host_ok("[2001:db8::1]"));
        assert!(!s.host_ok("router.example") && !s.host_ok("192.0.2.8:81"));
    }

    fn start_fake(limits: Limits) -> (Web, Arc<Fake>) {
        let fake = Arc::new(Fake(Mutex::new("init".into())));
        let w = start_with("127.0.0.1:0".parse().unwrap(), fake.clone(), limits).unwrap();
        (w, fake)
    }

    /// One raw request; the whole response (head and body).
    fn raw(port: u16, req: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    fn status(resp: &str) -> u16 {
        resp.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
    }

    #[test]
    fn foreign_hosts_origins_and_tokenless_writes_are_refused() {
        let (w, fake) = start_fake(Limits::default());
        let port = w.addr.port();
        let tok = w.token.reveal().to_string();
        let here = format!("127.0.0.1:{port}");
        // Another name (DNS rebinding): 421 for the page and for reads.
        for path in ["/", "/app.js", "/api/read?h=x.v"] {
            let r = raw(
                port,
                &format!("GET {path} HTTP/1.1\r\nHost: evil.example:{port}\r\n\r\n"),
            );
            assert_eq!(status(&r), 421, "{path}: {r}");
            assert!(!r.contains(&tok) && !r.contains("init"), "{r}");
        }
        let r = raw(port, "GET / HTTP/1.0\r\n\r\n");
        assert_eq!(status(&r), 421, "no Host: {r}");
        // The page: the token, and every security header.
        let page = raw(port, &format!("GET / HTTP/1.1\r\nHost: {here}\r\n\r\n"));
        assert_eq!(status(&page), 200);
        assert!(page.contains(&format!("content=\"{tok}\"")));
        for h in [
            "Content-Security-Policy: default-src 'none'; script-src 'self';",
            "frame-ancestors 'none'",
            "X-Frame-Options: DENY",
            "X-Content-Type-Options: nosniff",
            "Referrer-Policy: no-referrer",
            "Cache-Control: no-store",
        ] {
            assert!(page.contains(h), "{h}: {page}");
        }
        assert!(!page.contains("<script>") && !page.contains(" style="));
        let write = |extra: &str, ctype: &str, body: &str| {
            raw(
                port,
                &format!(
                    "POST /api/write?h=x.v HTTP/1.1\r\nHost: {here}\r\n{extra}\
                     Content-Type: {ctype}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                ),
            )
        };
        // What a page elsewhere can send: no token, a simple type, its
        // Origin.
        let r = write("Origin: http://evil.example\r\n", "text/plain", "evil");
        assert_eq!(status(&r), 403, "{r}");
        let r = write("", "text/plain", "evil");
        assert_eq!(status(&r), 415, "{r}");
        let r = write("", WRITE_TYPE, "evil");
        assert_eq!(status(&r), 403, "no token: {r}");
        let wrong = format!("X-Paraclick-Token: {}0\r\n", &tok[1..]);
        let r = write(&wrong, WRITE_TYPE, "evil");
        assert_eq!(status(&r), 403, "wrong token: {r}");
        // Even with the token: not from another origin or site.
        let with = format!("X-Paraclick-Token: {tok}\r\n");
        let r = write(
            &format!("{with}Origin: http://evil.example\r\n"),
            WRITE_TYPE,
            "evil",
        );
        assert_eq!(status(&r), 403, "{r}");
        let r = write(&format!("{with}Origin: null\r\n"), WRITE_TYPE, "evil");
        assert_eq!(status(&r), 403, "{r}");
        let r = write(
            &format!("{with}Sec-Fetch-Site: cross-site\r\n"),
            WRITE_TYPE,
            "evil",
        );
        assert_eq!(status(&r), 403, "{r}");
        let r = write(&with, "text/plain", "evil");
        assert_eq!(status(&r), 415, "{r}");
        assert_eq!(*fake.0.lock().unwrap(), "init", "nothing written");
        // A preflight: no CORS permission.
        let r = raw(
            port,
            &format!(
                "OPTIONS /api/write?h=x.v HTTP/1.1\r\nHost: {here}\r\nOrigin: http://evil.example\r\n\
                 Access-Control-Request-Method: POST\r\n\
                 Access-Control-Request-Headers: x-paraclick-token\r\n\r\n"
            ),
        );
        assert_eq!(status(&r), 405, "{r}");
        assert!(
            !r.to_ascii_lowercase().contains("access-control-allow"),
            "{r}"
        );
        // A read from another site's page.
        let r = raw(
            port,
            &format!(
                "GET /api/read?h=x.v HTTP/1.1\r\nHost: {here}\r\nOrigin: http://evil.example\r\n\r\n"
            ),
        );
        assert_eq!(status(&r), 403, "{r}");
        // The page's own requests.
        let r = write(
            &format!("{with}Origin: http://{here}\r\nSec-Fetch-Site: same-origin\r\n"),
            WRITE_TYPE,
            "good",
        );
        assert_eq!(status(&r), 200, "{r}");
        assert!(r.ends_with("{\"ok\":true}"), "{r}");
        assert_eq!(*fake.0.lock().unwrap(), "good");
        let r = raw(
            port,
            &format!("GET /api/read?h=x.v HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"),
        );
        assert!(r.contains("\"value\":\"good\""), "{r}");
    }

    #[test]
    fn slow_clients_are_cut_off_by_the_whole_request_deadline() {
        let (w, _) = start_fake(Limits {
            request: Duration::from_millis(600),
            response: Duration::from_secs(2),
        });
        let port = w.addr.port();
        // Every slot taken by a client sending a byte every 150 ms (each
        // read in time, the request never complete).
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let slow: Vec<_> = (0..MAX_CONNS)
            .map(|_| {
                let stop = stop.clone();
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                std::thread::spawn(move || {
                    for b in b"GET / HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
                        if stop.load(Ordering::Relaxed) || s.write_all(&[*b]).is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(150));
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let r = raw(
            port,
            &format!("GET / HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"),
        );
        assert_eq!(status(&r), 503, "all slots taken at first");
        // Past the deadline, they are gone and a real client is served.
        let t0 = Instant::now();
        let served = loop {
            std::thread::sleep(Duration::from_millis(100));
            let r = raw(
                port,
                &format!("GET / HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"),
            );
            if status(&r) == 200 {
                break true;
            }
            if t0.elapsed() > Duration::from_secs(4) {
                break false;
            }
        };
        stop.store(true, Ordering::Relaxed);
        for t in slow {
            let _ = t.join();
        }
        assert!(served, "a client was served while slow ones kept sending");
    }
}
