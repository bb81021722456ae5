//! `--web ADDR:PORT`: a live view of the running router in a browser.
//!
//! One self-contained page (HTML and JavaScript compiled into the binary,
//! nothing fetched from elsewhere) and a small JSON interface under
//! `/api/`. The interface holds no state of its own: it speaks Click's
//! control protocol, over a socket pair, to the same control server and
//! handler dispatch as `-p`/`-u` (`READ`, `WRITEDATA`), so the page sees
//! exactly what a control-socket client sees.
//!
//! - `GET /`: the page.
//! - `GET /api/read?h=E.H&h=...`: reads each handler; a JSON object from
//!   handler name to `{"ok": true, "value": "..."}` or `{"ok": false,
//!   "error": "CODE message"}`.
//! - `POST /api/write?h=E.H` with the value as the body: writes it;
//!   `{"ok": ..., "error": ...}`.
//!
//! The server is minimal on purpose: one thread per connection, at most
//! 16 at once, requests of at most 64 KiB of headers and 1 MiB of body,
//! 10 seconds to send them, one request per connection. It listens on
//! loopback unless told otherwise and has no access control of its own:
//! whoever reaches it can write any handler (as with a control socket).

use crate::ctl::{read_reply, Conn};
use paraclick_runtime::control::{self, Backend, ControlConfig, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PAGE: &str = include_str!("web/index.html");
const MAX_HEADERS: usize = 64 * 1024;
const MAX_BODY: usize = 1024 * 1024;
const MAX_CONNS: usize = 16;

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

/// Starts the web view on `addr`; returns where it listens.
pub fn start(addr: SocketAddr, backend: Arc<dyn Backend>) -> Result<SocketAddr, String> {
    let l = TcpListener::bind(addr).map_err(|e| format!("--web {addr}: {e}"))?;
    let local = l.local_addr().map_err(|e| e.to_string())?;
    let ctl = Arc::new(Mutex::new(Ctl {
        backend,
        conn: None,
    }));
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("paraclick-web".into())
        .spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
                    active.fetch_sub(1, Ordering::AcqRel);
                    let mut s = s;
                    let _ = respond(&mut s, 503, "text/plain", b"too many connections\n");
                    continue;
                }
                let (ctl, active) = (ctl.clone(), active.clone());
                let spawned = std::thread::Builder::new()
                    .name("paraclick-web-conn".into())
                    .spawn(move || {
                        serve(s, &ctl);
                        active.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    // Could not start a thread: the connection was dropped.
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(local)
}

fn respond(s: &mut TcpStream, code: u16, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        _ => "Service Unavailable",
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()
}

/// A parsed request: method, path, query pairs, body.
struct Request {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    body: Vec<u8>,
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

fn read_request(s: &mut TcpStream) -> Result<Request, u16> {
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|_| 400u16)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEADERS {
            return Err(413);
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err(400),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(408),
        }
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| 400u16)?;
    let mut lines = head.split("\r\n");
    let first = lines.next().ok_or(400u16)?;
    let mut parts = first.split(' ');
    let (method, target) = match (parts.next(), parts.next()) {
        (Some(m), Some(t)) => (m.to_string(), t.to_string()),
        _ => return Err(400),
    };
    let mut len = 0usize;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().map_err(|_| 400u16)?;
            }
        }
    }
    if len > MAX_BODY {
        return Err(413);
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        match s.read(&mut chunk) {
            Ok(0) => return Err(400),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(408),
        }
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
        body,
    })
}

fn serve(mut s: TcpStream, ctl: &Mutex<Ctl>) {
    let req = match read_request(&mut s) {
        Ok(r) => r,
        Err(code) => {
            let _ = respond(&mut s, code, "text/plain", b"bad request\n");
            return;
        }
    };
    let json = "application/json";
    let lock = || ctl.lock().unwrap_or_else(|e| e.into_inner());
    let r = match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/") | ("GET", "/index.html") => {
            respond(&mut s, 200, "text/html; charset=utf-8", PAGE.as_bytes())
        }
        ("GET", "/api/read") => {
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
        ("POST", "/api/write") => {
            let h = req
                .query
                .iter()
                .find(|(k, _)| k == "h")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let v = lock().write(&h, &req.body);
            respond(&mut s, 200, json, v.to_string().as_bytes())
        }
        (_, "/") | (_, "/api/read") | (_, "/api/write") => {
            respond(&mut s, 405, "text/plain", b"method not allowed\n")
        }
        _ => respond(&mut s, 404, "text/plain", b"not found\n"),
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
        assert!(addr("x").is_err());
    }
}
