//! Control sockets from the command line: the `-p`, `-u` and `--socket`
//! servers of a run, and `paraclick ctl`, a small client for scripts.

use paraclick_runtime::control::{self, Backend, Bind, ControlConfig, Listener, PortSpec, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// `-p PORT` listens on 127.0.0.1:PORT; `-p ADDR:PORT` on ADDR.
pub fn tcp_addr(spec: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = spec.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    spec.parse::<SocketAddr>()
        .map_err(|_| format!("-p: expected PORT or ADDRESS:PORT, not '{spec}'"))
}

/// Where `-p` listens: `PORT` or `ADDRESS:PORT`, the port perhaps Click's
/// `PORT+` (the first free port from PORT on, of
/// [`control::PORT_SEARCH`]); loopback if no address is given.
pub fn listen_addr(spec: &str) -> Result<(IpAddr, PortSpec), String> {
    let bad = || format!("-p: expected PORT, PORT+, ADDRESS:PORT or ADDRESS:PORT+, not '{spec}'");
    if let Some(p) = PortSpec::parse(spec) {
        return Ok((IpAddr::from([127, 0, 0, 1]), p));
    }
    let (ip, port) = spec.rsplit_once(':').ok_or_else(bad)?;
    let ip = ip
        .strip_prefix('[')
        .and_then(|i| i.strip_suffix(']'))
        .unwrap_or(ip);
    let ip: IpAddr = ip.parse().map_err(|_| bad())?;
    let port = PortSpec::parse(port).ok_or_else(bad)?;
    Ok((ip, port))
}

/// Opens the control sockets `-p`, `-u` and `--socket` ask for, each
/// announced on stderr with where it listens. The `-p` sockets ask for
/// the token in `token_file` if given; one on an address other than
/// loopback must have one.
pub fn start_servers(
    backend: &Arc<dyn Backend>,
    ports: &[String],
    token_file: Option<&str>,
    unix: &[String],
    fds: &[i32],
) -> Result<Vec<Server>, String> {
    let mut servers = Vec::new();
    let cfg = ControlConfig::default();
    let token = match token_file {
        Some(f) => Some(
            control::Secret::from_file(std::path::Path::new(f))
                .map_err(|e| format!("--control-token: {e}"))?,
        ),
        None => None,
    };
    let tcp_cfg = ControlConfig {
        token,
        ..cfg.clone()
    };
    let mut listeners = Vec::new();
    for p in ports {
        let (ip, port) = listen_addr(p)?;
        if !ip.is_loopback() && tcp_cfg.token.is_none() {
            return Err(format!(
                "-p {p}: listening on {ip} lets other hosts call every handler \
                 (stop, hotconfig): give --control-token FILE, or a loopback address"
            ));
        }
        let l = control::bind_tcp_search(ip, port).map_err(|e| format!("-p {p}: {e}"))?;
        // Click names the sockets it adds `click_driver@@ControlSocket`,
        // then `...@1`, `...@2` (the -p ones first, then -u); each TCP
        // one's `port` handler tells where it listens.
        if let Listener::Tcp(t) = &l {
            if let Ok(a) = t.local_addr() {
                let name = match listeners.len() {
                    0 => "click_driver@@ControlSocket".to_string(),
                    n => format!("click_driver@@ControlSocket@{n}"),
                };
                control::set_driver_read(&format!("{name}.port"), &a.port().to_string());
            }
        }
        listeners.push((l, &tcp_cfg));
    }
    for u in unix {
        listeners.push((
            control::bind_unix(std::path::Path::new(u), 0o600)
                .map_err(|e| format!("-u {u}: {e}"))?,
            &cfg,
        ));
    }
    for (l, c) in listeners {
        let what = l.describe();
        let s = control::serve(Bind::Ready(l), backend.clone(), c.clone())
            .map_err(|e| format!("control socket {what}: {e}"))?;
        let auth = if c.token.is_some() {
            " (AUTH token required)"
        } else {
            ""
        };
        eprintln!("paraclick: control socket listening on {what}{auth}");
        servers.push(s);
    }
    for &fd in fds {
        servers.push(socket_fd(backend, fd, &cfg, &tcp_cfg)?);
    }
    Ok(servers)
}

fn sockopt(fd: i32, level: i32, name: i32) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `v`, an int.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

/// `--socket FD`: an inherited socket. A listening one is served like
/// `-p`/`-u`; a connected one as one client (e.g. a socketpair's end).
/// A listening TCP socket takes `tcp_cfg` (the `-p` sockets' token) and,
/// bound beyond loopback, must have a token like `-p`.
fn socket_fd(
    backend: &Arc<dyn Backend>,
    fd: i32,
    cfg: &ControlConfig,
    tcp_cfg: &ControlConfig,
) -> Result<Server, String> {
    use std::os::unix::io::FromRawFd;
    if fd < 0 {
        return Err(format!("--socket {fd}: not a file descriptor"));
    }
    // SAFETY: fstat only fills `st`; a bad descriptor makes it fail.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(format!("--socket {fd}: not an open socket"));
    }
    let (Some(domain), Some(ty), Some(listening)) = (
        sockopt(fd, libc::SOL_SOCKET, libc::SO_DOMAIN),
        sockopt(fd, libc::SOL_SOCKET, libc::SO_TYPE),
        sockopt(fd, libc::SOL_SOCKET, libc::SO_ACCEPTCONN),
    ) else {
        return Err(format!("--socket {fd}: cannot inspect the socket"));
    };
    if ty != libc::SOCK_STREAM {
        return Err(format!("--socket {fd}: not a stream socket"));
    }
    let backend = backend.clone();
    let r = match (domain, listening != 0) {
        // SAFETY (all four arms): `fd` is an open stream socket of the
        // domain matched (checked above) that the process hands to us; we
        // take ownership of it.
        (libc::AF_UNIX, true) => {
            // SAFETY: see the four arms' comment above.
            let l = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
            control::serve(Bind::Ready(Listener::Unix(l, None)), backend, cfg.clone())
        }
        (libc::AF_INET | libc::AF_INET6, true) => {
            // SAFETY: see the four arms' comment above.
            let l = unsafe { std::net::TcpListener::from_raw_fd(fd) };
            let beyond = l
                .local_addr()
                .map(|a| !a.ip().is_loopback())
                .unwrap_or(true);
            if beyond && tcp_cfg.token.is_none() {
                return Err(format!(
                    "--socket {fd}: listening beyond loopback lets other hosts call every \
                     handler: give --control-token FILE"
                ));
            }
            control::serve(Bind::Ready(Listener::Tcp(l)), backend, tcp_cfg.clone())
        }
        (libc::AF_UNIX, false) => {
            // SAFETY: see the four arms' comment above.
            let s = unsafe { UnixStream::from_raw_fd(fd) };
            control::serve_stream(s, backend, cfg.clone())
        }
        (libc::AF_INET | libc::AF_INET6, false) => {
            // SAFETY: see the four arms' comment above.
            let s = unsafe { TcpStream::from_raw_fd(fd) };
            control::serve_stream(s, backend, cfg.clone())
        }
        _ => return Err(format!("--socket {fd}: not a TCP or Unix socket")),
    };
    r.map_err(|e| format!("--socket {fd}: {e}"))
}

pub(crate) trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

/// What a reply said: its code, its text lines, and any data.
pub(crate) struct Reply {
    pub code: u16,
    pub text: Vec<String>,
    pub data: Option<Vec<u8>>,
}

pub(crate) fn read_reply(
    r: &mut BufReader<Box<dyn Conn>>,
    want_data: bool,
) -> Result<Reply, String> {
    let mut text = Vec::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).map_err(|e| e.to_string())? == 0 {
            return Err("connection closed".into());
        }
        let l = l.trim_end_matches(['\r', '\n']);
        if l.len() < 3 {
            return Err(format!("bad reply line '{l}'"));
        }
        let code: u16 = l[..3]
            .parse()
            .map_err(|_| format!("bad reply line '{l}'"))?;
        text.push(l.get(4..).unwrap_or("").to_string());
        if l.as_bytes().get(3) != Some(&b'-') {
            let mut data = None;
            if want_data && (200..300).contains(&code) {
                let mut dl = String::new();
                r.read_line(&mut dl).map_err(|e| e.to_string())?;
                let n: usize = dl
                    .trim_end()
                    .strip_prefix("DATA ")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| format!("expected DATA, got '{}'", dl.trim_end()))?;
                let mut d = vec![0; n];
                r.read_exact(&mut d).map_err(|e| e.to_string())?;
                data = Some(d);
            }
            return Ok(Reply { code, text, data });
        }
    }
}

/// `paraclick ctl`: one command; prints what a read returns; exit 0 on a
/// 2xx reply, 1 on an error reply (its text on stderr), 2 if the router
/// cannot be reached.
pub fn client(
    port: Option<&str>,
    unix: Option<&str>,
    token_file: Option<&str>,
    words: &[String],
) -> u8 {
    let usage = "usage: paraclick ctl [-p PORT | -u PATH] [--token-file FILE] read E.H [PARAM] | write E.H [VALUE] | list | handlers E | drops | trace add N [FILTER] | trace show | trace status | trace clear | capture E[PORT] FILE|- [N] [ENCAP] | capture stop";
    let token = match token_file.map(|f| control::Secret::from_file(std::path::Path::new(f))) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            eprintln!("paraclick ctl: --token-file: {e}");
            return 2;
        }
    };
    let (verb, rest) = match words.split_first() {
        Some((v, r)) => (v.to_ascii_lowercase(), r),
        None => {
            eprintln!("{usage}");
            return 2;
        }
    };
    let joined = rest.get(1..).map(|r| r.join(" ")).unwrap_or_default();
    // (command bytes, expects data)
    let (cmd, want_data): (Vec<u8>, bool) = match (verb.as_str(), rest) {
        ("read", [h]) => (format!("READ {h}\r\n").into_bytes(), true),
        ("read", [h, ..]) => (
            [
                format!("READDATA {h} {}\r\n", joined.len()).into_bytes(),
                joined.into_bytes(),
            ]
            .concat(),
            true,
        ),
        ("write", [h, ..]) => (
            [
                format!("WRITEDATA {h} {}\r\n", joined.len()).into_bytes(),
                joined.into_bytes(),
            ]
            .concat(),
            false,
        ),
        ("list", []) => (b"READ list\r\n".to_vec(), true),
        // Every element and reason with drops, largest first.
        ("drops", []) => (b"READ drops\r\n".to_vec(), true),
        ("trace", [sub, args @ ..]) => match (sub.to_ascii_lowercase().as_str(), args) {
            ("add", [_, ..]) => {
                let v = args.join(" ");
                (
                    [
                        format!("WRITEDATA trace_add {}\r\n", v.len()).into_bytes(),
                        v.into_bytes(),
                    ]
                    .concat(),
                    false,
                )
            }
            ("show", []) => (b"READ trace\r\n".to_vec(), true),
            ("status", []) => (b"READ trace_status\r\n".to_vec(), true),
            ("clear", []) => (b"WRITE trace_clear\r\n".to_vec(), false),
            _ => {
                eprintln!("{usage}");
                return 2;
            }
        },
        ("capture", [_, ..]) => {
            let v = rest.join(" ");
            (
                [
                    format!("WRITEDATA capture {}\r\n", v.len()).into_bytes(),
                    v.into_bytes(),
                ]
                .concat(),
                false,
            )
        }
        ("handlers", [e]) => (format!("READ {e}.handlers\r\n").into_bytes(), true),
        _ => {
            eprintln!("{usage}");
            return 2;
        }
    };
    let conn: Box<dyn Conn> = match (port, unix) {
        (Some(_), Some(_)) => {
            eprintln!("paraclick ctl: give -p or -u, not both");
            return 2;
        }
        (None, Some(u)) => match UnixStream::connect(u) {
            Ok(s) => Box::new(s),
            Err(e) => {
                eprintln!("paraclick ctl: {u}: {e}");
                return 2;
            }
        },
        (p, None) => {
            let a = match tcp_addr(p.unwrap_or("7777")) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("paraclick ctl: {e}");
                    return 2;
                }
            };
            match TcpStream::connect(a) {
                Ok(s) => Box::new(s),
                Err(e) => {
                    eprintln!("paraclick ctl: {a}: {e}");
                    return 2;
                }
            }
        }
    };
    let mut r = BufReader::new(conn);
    let mut greeting = String::new();
    if r.read_line(&mut greeting).is_err() || !greeting.starts_with("Click::ControlSocket/") {
        eprintln!(
            "paraclick ctl: not a Click control socket (greeting '{}')",
            greeting.trim_end()
        );
        return 2;
    }
    if let Some(t) = &token {
        let auth = format!("AUTH {}\r\n", t.reveal());
        if let Err(e) = r.get_mut().write_all(auth.as_bytes()) {
            eprintln!("paraclick ctl: {e}");
            return 2;
        }
        match read_reply(&mut r, false) {
            Ok(x) if (200..300).contains(&x.code) => {}
            Ok(x) => {
                for t in &x.text {
                    eprintln!("paraclick ctl: AUTH: {} {t}", x.code);
                }
                return 1;
            }
            Err(e) => {
                eprintln!("paraclick ctl: AUTH: {e}");
                return 2;
            }
        }
    }
    if let Err(e) = r.get_mut().write_all(&cmd) {
        eprintln!("paraclick ctl: {e}");
        return 2;
    }
    let reply = match read_reply(&mut r, want_data) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("paraclick ctl: {e}");
            return 2;
        }
    };
    if !(200..300).contains(&reply.code) {
        let _ = r.get_mut().write_all(b"QUIT\r\n");
        for t in &reply.text {
            eprintln!("paraclick ctl: {} {t}", reply.code);
        }
        return 1;
    }
    if verb == "capture" && rest.get(1).is_some_and(|f| f == "-") {
        return crate::capture_pipe::stream(&mut r);
    }
    let _ = r.get_mut().write_all(b"QUIT\r\n");
    if let Some(d) = reply.data {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&d);
        if !d.is_empty() && !d.ends_with(b"\n") {
            let _ = out.write_all(b"\n");
        }
    }
    0
}
