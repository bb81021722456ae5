//! # ControlSocket
//!
//! ControlSocket(TCP, PORTNUMBER [, READONLY?, keywords])
//! ControlSocket(UNIX, FILENAME [, READONLY?, keywords])
//!
//! Opens a control socket through which other programs call the router's
//! read and write handlers.
//!
//! Ports: none. Processing: none.
//!
//! Listens on TCP port PORTNUMBER (0: any free port; `PORT+`, as in
//! Click: the first free one of PORT, PORT+1, ..., of 64 ports at most and
//! not past 65535, an error naming the range if all are in use) or on the
//! Unix-domain socket FILENAME, and speaks Click's ControlSocket
//! protocol, version 1.3: the server greets with `Click::ControlSocket/1.3`;
//! each command is a line (ended by CR, LF or CRLF); each reply is one or
//! more lines `CODE text` (all but the last `CODE-text`), ended by CRLF.
//!
//! Commands (a HANDLER is `element.handler`, `N.handler` for the Nth
//! element of `list`, or a global handler such as `list`, `classes`,
//! `config`, `flatconfig`, `requirements`, `version`, `driver`, `stop`):
//! - `READ HANDLER [PARAMS]`: replies 200, then `DATA N` and N bytes.
//! - `READDATA HANDLER N`: the N bytes after the line are the parameters.
//! - `READUNTIL HANDLER [TERMINATOR]`: parameters are the lines up to one
//!   equal to TERMINATOR (a blank line if none).
//! - `WRITE HANDLER [VALUE]`, `WRITEDATA HANDLER N`,
//!   `WRITEUNTIL HANDLER [TERMINATOR]`: call a write handler.
//! - `CHECKREAD HANDLER`, `CHECKWRITE HANDLER`: 200 if it can be called.
//! - `LLRPC ELEMENT#CMD [N]`: Click's low-level RPC CMD (hexadecimal) on
//!   ELEMENT, with the N bytes after the line; replies 200, then `DATA M`
//!   and the M bytes it answers. Only those Click documents for
//!   paraclick's elements: Switch's GET_SWITCH and SET_SWITCH. Others get
//!   501; a READONLY socket refuses all (530), as an LLRPC may change
//!   the router.
//! - `QUIT`: replies 200 and closes.
//!
//! Reply codes: 200 OK; 500 syntax error (also a line too long or data
//! that stopped coming, then the connection closes); 501 unimplemented
//! command; 510 no such element; 511 no such handler; 520 handler error
//! (its message follows); 521 data too big (then the connection closes);
//! 530 permission denied (READONLY, or a read of a write-only handler and
//! the reverse); 540 no router; 590 too many connections. paraclick never
//! sends 220 (handlers report no warnings).
//!
//! Keywords:
//! - `READONLY` (boolean, default false): refuse writes (530).
//! - `LOCALHOST` (boolean, default true): a TCP socket listens on
//!   127.0.0.1 only; `LOCALHOST false` listens on every IPv4 address, which
//!   needs TOKEN_FILE. (Click's default is false: a Click configuration's
//!   `ControlSocket(TCP, 7777)` runs unchanged, reachable from this host.)
//! - `TOKEN_FILE` (filename): clients must authenticate: a connection's
//!   first command must be `AUTH TOKEN` with the token in this file (mode
//!   0600 or stricter, at least 16 printable characters); any other
//!   command first, or a wrong token, gets 530 and the connection closes.
//!   Required for a TCP socket with `LOCALHOST false` (a configuration
//!   error otherwise); allowed for every socket.
//! - `VERBOSE` (boolean, default false): print a line when a connection
//!   opens or closes.
//! - `RETRIES` (integer, default 0): if the socket cannot be opened, try
//!   again once a second, up to RETRIES times, then stop the router.
//! - `RETRY_WARNINGS` (boolean, default true): print each failed try.
//! - `PROXY`: not supported (an error).
//!
//! paraclick's bounds (keywords of its own): `MAX_CLIENTS` (64 connections
//! at once; one more gets 590 and is closed), `MAX_DATA` (16777216 bytes
//! of READDATA/WRITEDATA/...UNTIL data, more gets 521), `LINE_TIMEOUT` (10
//! s to finish a line or data once begun, and to take a reply),
//! `IDLE_TIMEOUT` (3600 s without a command closes the connection), `MODE`
//! (the Unix socket's permissions in octal, default 0600: only the
//! router's user can connect). A command line is at most 65536 bytes.
//!
//! Access: anyone who can connect (and knows the token, with TOKEN_FILE)
//! can read every handler (configuration included) and, unless READONLY,
//! write every write handler, `stop` and `hotconfig` included. Hence a TCP
//! socket listens on loopback unless told otherwise, and on every address
//! needs TOKEN_FILE; a Unix socket is guarded by its permissions. A client of another protocol (an HTTP
//! request, which a web page can make a browser send to any port, or a
//! TLS handshake) is closed before anything it sends runs, and logged;
//! so is a connection whose first line is no command (501).
//!
//! Each connection is served on a thread of its own, never on a worker
//! thread: a slow or stalled client delays only itself. The `paraclick`
//! command's `-p PORT`, `-u FILE` and `--socket FD` open the same sockets
//! without an element.
//!
//! Handlers: `port` (TCP only): the ControlSocket's port number, as in
//! Click: PORTNUMBER as configured (0 for 0), or a `PORT+` search's
//! choice (empty while RETRIES is still trying); `bound_port` (TCP only,
//! paraclick's): the port listened on, for 0 the one the system gave
//! (empty until bound).
//!
//! Hot reconfiguration (`-R`, the `hotconfig` handler): a ControlSocket of
//! the new configuration with the same TYPE and PORTNUMBER (with the same
//! LOCALHOST) or FILENAME as one of the old configuration takes over its
//! open socket instead of opening it again: the socket stays open across
//! the swap, connected clients keep their connections (their next command
//! reaches the new router), and connections opened after the swap take
//! the new element's options (READONLY, VERBOSE, limits; open ones keep
//! theirs; a Unix socket keeps its MODE). PORTNUMBER 0 takes over the
//! old 0's port, and `PORT+` the old `PORT+`'s. A ControlSocket the new configuration does not have is
//! closed, with its connections, after the swap. Under the `paraclick`
//! command every control socket reaches the current router and its
//! `hotconfig` and `hotswaps` handlers.
//!
//! Differences from Click: no PROXY; a TCP socket listens on loopback
//! unless `LOCALHOST false`, and then needs TOKEN_FILE (Click's has no
//! authentication); `AUTH`; other protocols' clients are closed.
//!
//! Example:
//!
//!     ControlSocket(UNIX, /tmp/clicksocket);
//!     ControlSocket(TCP, 7777, LOCALHOST true, READONLY true);

use paraclick_runtime::args::Raw;
use paraclick_runtime::control::{self, Bind, ControlConfig, Listener, PortSpec};
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, InitCx};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub fn spec() -> ClassSpec {
    ClassSpec::element("ControlSocket", "0/0", "", make).shared("one for the whole router")
}

#[derive(Clone)]
enum Where {
    Tcp(IpAddr, PortSpec),
    Unix(PathBuf, u32),
}

pub struct ControlSocket {
    at: Where,
    cfg: ControlConfig,
    retries: u32,
    retry_warnings: bool,
    /// The TCP port listened on, once bound (0 until then): the `port`
    /// handler.
    bound: Arc<AtomicU32>,
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ControlSocket, String> {
    let mut a = cx.args();
    let ty: String = a.read_mp("TYPE");
    let target: String = a.read_mp("ADDRESS");
    let ro_pos: Option<bool> = a.read_p("READONLY");
    let proxy: Option<Raw> = a.read("PROXY");
    let verbose: Option<bool> = a.read("VERBOSE");
    let localhost: Option<bool> = a.read("LOCALHOST");
    let retries: Option<u32> = a.read("RETRIES");
    let retry_warnings: Option<bool> = a.read("RETRY_WARNINGS");
    let max_clients: Option<usize> = a.read("MAX_CLIENTS");
    let max_data: Option<usize> = a.read("MAX_DATA");
    let line_timeout: Option<Duration> = a.read("LINE_TIMEOUT");
    let idle_timeout: Option<Duration> = a.read("IDLE_TIMEOUT");
    let mode: Option<String> = a.read("MODE");
    let token_file: Option<String> = a.read("TOKEN_FILE");
    a.complete()?;
    if proxy.is_some() {
        return Err(
            "PROXY is not supported by paraclick (there are no kernel routers to proxy)".into(),
        );
    }
    let at = match ty.to_ascii_uppercase().as_str() {
        "TCP" => {
            if mode.is_some() {
                return Err("MODE applies to UNIX sockets only".into());
            }
            let port = PortSpec::parse(&target).ok_or_else(|| {
                format!("PORTNUMBER: expected a port number or PORT+, not '{target}'")
            })?;
            let ip = if localhost.unwrap_or(true) {
                Ipv4Addr::LOCALHOST
            } else {
                Ipv4Addr::UNSPECIFIED
            };
            if !ip.is_loopback() && token_file.is_none() {
                return Err(format!(
                    "TCP {port} listens on every address and would let other hosts call \
                     every handler: give TOKEN_FILE FILE, or leave LOCALHOST true"
                ));
            }
            Where::Tcp(IpAddr::V4(ip), port)
        }
        "UNIX" => {
            if target.trim().is_empty() {
                return Err("FILENAME: empty".into());
            }
            let mode = match mode {
                None => 0o600,
                Some(m) => u32::from_str_radix(m.trim(), 8)
                    .ok()
                    .filter(|&m| m <= 0o777)
                    .ok_or_else(|| format!("MODE: expected octal permissions, not '{m}'"))?,
            };
            Where::Unix(PathBuf::from(target.trim()), mode)
        }
        other => return Err(format!("TYPE: expected TCP or UNIX, not '{other}'")),
    };
    let token = match token_file {
        None => None,
        Some(f) => Some(control::Secret::from_file(std::path::Path::new(f.trim()))?),
    };
    let d = ControlConfig::default();
    let cfg = ControlConfig {
        token,
        read_only: ro_pos.unwrap_or(false),
        verbose: verbose.unwrap_or(false),
        max_clients: max_clients.unwrap_or(d.max_clients).max(1),
        max_data: max_data.unwrap_or(d.max_data),
        line_timeout: line_timeout.unwrap_or(d.line_timeout),
        idle_timeout: idle_timeout.unwrap_or(d.idle_timeout),
        ..d
    };
    Ok(ControlSocket {
        at,
        cfg,
        retries: retries.unwrap_or(0),
        retry_warnings: retry_warnings.unwrap_or(true),
        bound: Arc::new(AtomicU32::new(0)),
    })
}

/// Binds the socket; a TCP one notes its port in `bound`.
fn bind(at: &Where, bound: &AtomicU32) -> std::io::Result<Listener> {
    match at {
        Where::Tcp(ip, port) => {
            let l = control::bind_tcp_search(*ip, *port)?;
            if let Listener::Tcp(t) = &l {
                if let Ok(a) = t.local_addr() {
                    bound.store(u32::from(a.port()), Ordering::Release);
                }
            }
            Ok(l)
        }
        Where::Unix(p, mode) => control::bind_unix(p, *mode),
    }
}

/// The socket as configured (`PORT+` as written: the key a hot swap's
/// ControlSocket takes the socket over by).
fn describe(at: &Where) -> String {
    match at {
        Where::Tcp(ip, port) => format!("TCP {ip}:{port}"),
        Where::Unix(p, _) => format!("UNIX {}", p.display()),
    }
}

impl ControlSocket {
    /// The `port` handler, Click's: PORTNUMBER as configured (`0` for 0,
    /// as Click reports it), or a `PORT+` search's choice, empty while
    /// RETRIES is still trying.
    fn port_text(&self) -> Result<String, String> {
        match &self.at {
            Where::Tcp(_, spec) if !spec.search => Ok(spec.port.to_string()),
            _ => self.bound_port_text(),
        }
    }

    /// The `bound_port` handler: the TCP port listened on (`0`'s free
    /// port too), empty until bound.
    fn bound_port_text(&self) -> Result<String, String> {
        match self.at {
            Where::Tcp(..) => match self.bound.load(Ordering::Acquire) {
                0 => Ok(String::new()),
                p => Ok(p.to_string()),
            },
            Where::Unix(..) => Err("a UNIX socket has no port".into()),
        }
    }
}

impl Element for ControlSocket {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::try_read("port", |e, _| e.port_text()),
        Handler::try_read("bound_port", |e, _| e.bound_port_text()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if ix.checking() {
            return Ok(());
        }
        // In a hot swap, the old configuration's socket of the same type
        // and address (as configured: `0` takes over the old `0`'s port)
        // comes over, with its open connections.
        let key = format!("ControlSocket {}", describe(&self.at));
        if let Some(addr) = ix.take_over_server(&key, self.cfg.clone()) {
            if let Some(p) = addr
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok())
            {
                self.bound.store(u32::from(p), Ordering::Release);
            }
            if self.cfg.verbose {
                eprintln!("ControlSocket: taking over {}", describe(&self.at));
            }
            return Ok(());
        }
        // Bind now, so a socket that cannot be opened is a located error
        // (unless RETRIES says to keep trying).
        let bound = match bind(&self.at, &self.bound) {
            Ok(l) => Bind::Ready(l),
            Err(e) if self.retries == 0 => {
                return Err(format!("{}: {e}", describe(&self.at)));
            }
            Err(e) => {
                if self.retry_warnings {
                    eprintln!("ControlSocket: {}: {e} (retrying)", describe(&self.at));
                }
                let at = self.at.clone();
                let cell = self.bound.clone();
                Bind::Retry {
                    bind: Box::new(move || bind(&at, &cell)),
                    what: describe(&self.at),
                    retries: self.retries,
                    warnings: self.retry_warnings,
                }
            }
        };
        if self.cfg.verbose {
            if let Bind::Ready(l) = &bound {
                eprintln!("ControlSocket: listening on {}", l.describe());
            }
        }
        let cfg = self.cfg.clone();
        ix.on_start_keyed(key, move |h| {
            match control::serve(bound, Arc::new(h), cfg) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("ControlSocket: cannot start its thread: {e}");
                    None
                }
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::registry as reg;
    use paraclick_runtime::Router;

    #[test]
    fn bad_configurations_are_errors() {
        for (conf, want) in [
            ("ControlSocket(UDP, 1)", "TYPE"),
            ("ControlSocket(TCP, x)", "PORTNUMBER"),
            ("ControlSocket(TCP, 80++)", "PORTNUMBER"),
            ("ControlSocket(TCP, 65536+)", "PORTNUMBER"),
            ("ControlSocket(TCP, 0, PROXY k)", "PROXY is not supported"),
            ("ControlSocket(UNIX, /tmp/x, MODE 9)", "MODE"),
            ("ControlSocket(TCP, 0, MODE 600)", "MODE"),
            ("ControlSocket(TCP, 0, FOO 1)", "FOO"),
            (
                "ControlSocket(TCP, 0, LOCALHOST false)",
                "give TOKEN_FILE FILE, or leave LOCALHOST true",
            ),
            (
                "ControlSocket(TCP, 0, TOKEN_FILE /nonexistent/token)",
                "token file /nonexistent/token",
            ),
        ] {
            let e = match Router::from_str(conf, &reg(), 1) {
                Ok(_) => panic!("{conf} built"),
                Err(d) => format!("{d:?}"),
            };
            assert!(e.contains(want), "{conf}: {e}");
        }
    }

    #[test]
    fn a_tcp_socket_listens_on_loopback_unless_told_otherwise() {
        use super::{ControlSocket, Where};
        // Click's `ControlSocket(TCP, PORT)` runs unchanged, on loopback.
        let r = Router::from_str("cs :: ControlSocket(TCP, 0)", &reg(), 1).unwrap();
        let cs = r.element::<ControlSocket>("cs").unwrap();
        match &cs.at {
            Where::Tcp(ip, _) => assert!(ip.is_loopback(), "{ip}"),
            Where::Unix(..) => panic!("TCP parsed as UNIX"),
        }
    }

    #[test]
    fn port_plus_takes_the_first_free_port_and_tells_it() {
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = busy.local_addr().unwrap().port();
        let conf = format!("cs :: ControlSocket(TCP, {p}+)");
        let r = Router::from_str(&conf, &reg(), 1).unwrap();
        let got: u16 = r.read_handler("cs.port").unwrap().parse().unwrap();
        assert!(got > p && got - p < 64, "{p}+ -> {got}");
        // It listens there, on loopback, and speaks the protocol.
        let mut s = std::net::TcpStream::connect(("127.0.0.1", got)).unwrap();
        let mut g = [0u8; 26];
        std::io::Read::read_exact(&mut s, &mut g).unwrap();
        assert_eq!(&g, b"Click::ControlSocket/1.3\r\n");
        // Without `+`, the port in use is an error naming it.
        let e = match Router::from_str(&format!("ControlSocket(TCP, {p})"), &reg(), 1) {
            Ok(_) => panic!("bound a port in use"),
            Err(d) => format!("{d:?}"),
        };
        assert!(e.contains(&format!("127.0.0.1:{p}")), "{e}");
        assert_eq!(r.read_handler("cs.bound_port").unwrap(), got.to_string());
        // `0`: Click's `port` says 0; `bound_port` the port it got.
        let r0 = Router::from_str("cs :: ControlSocket(TCP, 0)", &reg(), 1).unwrap();
        assert_eq!(r0.read_handler("cs.port").unwrap(), "0");
        let b: u16 = r0.read_handler("cs.bound_port").unwrap().parse().unwrap();
        assert_ne!(b, 0);
        std::net::TcpStream::connect(("127.0.0.1", b)).unwrap();
        drop(r);
    }

    #[test]
    fn port_plus_beyond_loopback_still_needs_a_token() {
        for conf in [
            "ControlSocket(TCP, 41930+, LOCALHOST false)",
            "ControlSocket(TCP, 0+, LOCALHOST false)",
        ] {
            let e = match Router::from_str(conf, &reg(), 1) {
                Ok(_) => panic!("{conf} built"),
                Err(d) => format!("{d:?}"),
            };
            assert!(e.contains("give TOKEN_FILE FILE"), "{conf}: {e}");
        }
    }

    #[test]
    fn a_token_file_makes_clients_authenticate() {
        use std::io::{BufRead, BufReader, Write};
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pc-cs-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "0123456789abcdef-token\n").unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        let path = dir.join("s");
        let conf = format!(
            "ControlSocket(UNIX, {}, TOKEN_FILE {})",
            path.display(),
            token.display()
        );
        let r = Router::from_str(&conf, &reg(), 1).unwrap();
        let talk = |cmds: &str| -> Vec<String> {
            let s = std::os::unix::net::UnixStream::connect(&path).unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            let mut r = BufReader::new(s);
            r.get_mut().write_all(cmds.as_bytes()).unwrap();
            r.lines().map_while(Result::ok).collect()
        };
        let l = talk("READ list\r\n");
        assert!(
            l[1].starts_with("530 Permission denied: authentication"),
            "{l:?}"
        );
        assert_eq!(l.len(), 2, "closed: {l:?}");
        let l = talk("AUTH 0123456789abcdef-token\r\nCHECKREAD list\r\nQUIT\r\n");
        assert_eq!(
            l[1..],
            [
                "200 Authenticated",
                "200 Read handler 'list' OK",
                "200 Goodbye!"
            ]
        );
        drop(r);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_unix_socket_is_private_and_removed_with_the_router() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pc-cs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let conf = format!("ControlSocket(UNIX, {})", path.display());
        let r = Router::from_str(&conf, &reg(), 1).unwrap();
        let m = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(m & 0o777, 0o600);
        let mut s = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let mut g = [0u8; 26];
        std::io::Read::read_exact(&mut s, &mut g).unwrap();
        assert_eq!(&g, b"Click::ControlSocket/1.3\r\n");
        drop(r);
        let t0 = std::time::Instant::now();
        while path.exists() && t0.elapsed().as_secs() < 3 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!path.exists(), "socket file removed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
