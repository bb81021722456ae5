//! Control socket listeners: an accept thread per socket and a thread per
//! connection, a cap on connections, and shutdown with the router.

use super::session::{format_message, CtlStream, Session};
use super::{Backend, ControlConfig};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// A bound control socket.
pub enum Listener {
    Tcp(TcpListener),
    /// A Unix socket; the file, if given, is removed when the listener is
    /// dropped.
    Unix(UnixListener, Option<PathBuf>),
}

impl Listener {
    /// Where it listens, for messages (`127.0.0.1:7777`, `/tmp/s`).
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| "?".into()),
            Listener::Unix(l, p) => match (p, l.local_addr()) {
                (Some(p), _) => p.display().to_string(),
                (None, Ok(a)) => match a.as_pathname() {
                    Some(p) => p.display().to_string(),
                    None => "unix socket".into(),
                },
                (None, Err(_)) => "unix socket".into(),
            },
        }
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l, _) => l.set_nonblocking(true),
        }
    }

    fn accept(&self) -> io::Result<(Box<dyn CtlStream>, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, a) = l.accept()?;
                s.set_nonblocking(false)?;
                let _ = s.set_nodelay(true);
                Ok((Box::new(s), a.to_string()))
            }
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((Box::new(s), self.describe()))
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, Some(p)) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Binds a TCP control socket (port 0: any free port).
pub fn bind_tcp(addr: SocketAddr) -> io::Result<Listener> {
    TcpListener::bind(addr).map(Listener::Tcp)
}

/// How many ports a `PORT+` search tries: PORT and the next
/// `PORT_SEARCH - 1` (fewer below 65536).
pub const PORT_SEARCH: u16 = 64;

/// A TCP control socket's port as configured: `PORT`, or Click's `PORT+`,
/// the first free port from PORT on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortSpec {
    pub port: u16,
    /// `PORT+`: search upwards ([`PORT_SEARCH`] ports at most).
    pub search: bool,
}

impl PortSpec {
    /// Parses `PORT` or `PORT+` (0 to 65535; `0+` is `0`, any free port).
    pub fn parse(s: &str) -> Option<PortSpec> {
        let s = s.trim();
        let (digits, search) = match s.strip_suffix('+') {
            Some(d) => (d, true),
            None => (s, false),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let port = digits.parse::<u16>().ok()?;
        Some(PortSpec {
            port,
            search: search && port != 0,
        })
    }
}

impl std::fmt::Display for PortSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.port, if self.search { "+" } else { "" })
    }
}

/// Binds a TCP control socket on `ip` at `port`: with `PORT+`, the first
/// of PORT, PORT+1, ... ([`PORT_SEARCH`] ports, not past 65535) that is
/// not in use. Any error but "in use" ends the search at once (a port
/// below 1024 without the privilege, an address not of this host).
pub fn bind_tcp_search(ip: std::net::IpAddr, port: PortSpec) -> io::Result<Listener> {
    if !port.search {
        return bind_tcp(SocketAddr::new(ip, port.port));
    }
    let last = port.port.saturating_add(PORT_SEARCH - 1);
    for p in port.port..=last {
        match bind_tcp(SocketAddr::new(ip, p)) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            r => return r,
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!(
            "no free port from {} to {last} ({} tried)",
            port.port,
            last - port.port + 1
        ),
    ))
}

/// Binds a Unix control socket at `path` with permissions `mode` (0600
/// gives access to the router's user only). The permissions are set before
/// the socket listens, so no one else can connect in between. An existing
/// socket file at `path` is replaced; any other file is an error.
pub fn bind_unix(path: &Path, mode: u32) -> io::Result<Listener> {
    use rustix::net::{self, AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "exists and is not a socket",
            ))
        }
        Err(_) => {}
    }
    let bytes = path.as_os_str().as_bytes();
    // sockaddr_un's sun_path: 108 bytes with the terminating NUL.
    if bytes.len() >= 108 || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket path too long",
        ));
    }
    let addr = SocketAddrUnix::new(path)?;
    let fd = net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    net::bind(&fd, &addr)?;
    let l = Listener::Unix(UnixListener::from(fd), Some(path.to_path_buf()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    if let Listener::Unix(u, _) = &l {
        net::listen(u, 128)?;
    }
    Ok(l)
}

/// How a server gets its socket: bound already, or by retrying once a
/// second (Click's RETRIES) and stopping the router if every try fails.
pub enum Bind {
    Ready(Listener),
    Retry {
        bind: Box<dyn FnMut() -> io::Result<Listener> + Send>,
        what: String,
        retries: u32,
        warnings: bool,
    },
}

struct Shared {
    shutdown: AtomicBool,
    /// Connections being served.
    active: AtomicUsize,
    /// Options of connections opened from now on (a socket taken over in a
    /// hot swap takes the new element's).
    cfg: Mutex<ControlConfig>,
    /// Whom commands go to; replaceable while connections are open.
    backend: RwLock<Arc<dyn Backend>>,
}

impl Shared {
    fn new(cfg: ControlConfig, backend: Arc<dyn Backend>) -> Shared {
        Shared {
            shutdown: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            cfg: Mutex::new(cfg),
            backend: RwLock::new(backend),
        }
    }

    fn cfg(&self) -> ControlConfig {
        self.cfg.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        self.backend
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The server's backend at each call: a connection follows a change of
/// backend (see [`Server::set_backend`]).
struct Current<'a>(&'a Shared);

impl Backend for Current<'_> {
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, super::CsError> {
        self.0.backend().read(h, param)
    }
    fn write(&self, h: &str, value: &str) -> Result<(), super::CsError> {
        self.0.backend().write(h, value)
    }
    fn check(&self, h: &str, write: bool) -> Result<(), super::CsError> {
        self.0.backend().check(h, write)
    }
    fn stop(&self) {
        self.0.backend().stop()
    }
    fn llrpc(&self, e: &str, cmd: u32, data: &[u8]) -> Result<Vec<u8>, super::CsError> {
        self.0.backend().llrpc(e, cmd, data)
    }
}

/// A running control socket. Dropping it (or `shutdown`) stops accepting
/// and closes every connection within a fraction of a second.
pub struct Server {
    shared: Arc<Shared>,
    addr: String,
    /// The accept thread, which owns the listening socket: joined when
    /// the server is dropped, so the port is free once the drop returns
    /// (a hot swap that removes a ControlSocket and the next that adds it
    /// back bind the same port).
    acceptor: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Server {
    /// Where it listens (empty while a RETRIES socket is not yet bound).
    pub fn local_addr(&self) -> &str {
        &self.addr
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.shared.active.load(Ordering::Acquire)
    }

    /// Sends every command from now on, open connections' included, to
    /// `backend` (a hot swap's: whichever router is current).
    pub fn set_backend(&self, backend: Arc<dyn Backend>) {
        *self
            .shared
            .backend
            .write()
            .unwrap_or_else(|e| e.into_inner()) = backend;
    }

    /// Options for the connections opened from now on (open ones keep
    /// theirs).
    pub fn set_config(&self, cfg: ControlConfig) {
        *self.shared.cfg.lock().unwrap_or_else(|e| e.into_inner()) = cfg;
    }

    /// Stops accepting and closes connections; waits up to `wait` for
    /// connections to end (a reply being written, e.g. to `stop`, is
    /// finished first).
    pub fn shutdown(&self, wait: Duration) {
        let end = Instant::now() + wait;
        // A session looks at the flag only when it waits for input, so
        // a connection that just called `stop` still writes its reply.
        self.shared.shutdown.store(true, Ordering::Release);
        while self.shared.active.load(Ordering::Acquire) > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        let t = self
            .acceptor
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // The accept loop looks at the flag every 10 ms (50 while waiting
        // to retry a bind). Never join from the thread itself.
        if let Some(t) = t {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// Serves a control socket on a thread of its own.
pub fn serve(bind: Bind, backend: Arc<dyn Backend>, cfg: ControlConfig) -> io::Result<Server> {
    let addr = match &bind {
        Bind::Ready(l) => l.describe(),
        Bind::Retry { .. } => String::new(),
    };
    let shared = Arc::new(Shared::new(cfg, backend));
    let sh = shared.clone();
    let t = std::thread::Builder::new()
        .name("paraclick-control".into())
        .spawn(move || accept_loop(bind, sh))?;
    Ok(Server {
        shared,
        addr,
        acceptor: Mutex::new(Some(t)),
    })
}

/// Serves one already-connected stream (`--socket FD`).
pub fn serve_stream(
    stream: impl CtlStream + 'static,
    backend: Arc<dyn Backend>,
    cfg: ControlConfig,
) -> io::Result<Server> {
    let shared = Arc::new(Shared::new(cfg, backend));
    shared.active.fetch_add(1, Ordering::AcqRel);
    let sh = shared.clone();
    std::thread::Builder::new()
        .name("paraclick-control".into())
        .spawn(move || connection(Box::new(stream), "socket".into(), sh))?;
    Ok(Server {
        shared,
        addr: "socket".into(),
        acceptor: Mutex::new(None),
    })
}

fn accept_loop(bind: Bind, sh: Arc<Shared>) {
    let listener = match bind {
        Bind::Ready(l) => l,
        Bind::Retry {
            mut bind,
            what,
            retries,
            warnings,
        } => {
            // The first try failed already (at initialize); RETRIES more,
            // a second apart.
            let mut tries = 0;
            loop {
                let until = Instant::now() + Duration::from_secs(1);
                while Instant::now() < until {
                    if sh.shutdown.load(Ordering::Acquire) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                match bind() {
                    Ok(l) => break l,
                    Err(e) => {
                        tries += 1;
                        if tries >= retries {
                            eprintln!("ControlSocket: {what}: {e}; giving up, stopping the router");
                            sh.backend().stop();
                            return;
                        }
                        if warnings {
                            eprintln!("ControlSocket: {what}: {e} (retrying)");
                        }
                    }
                }
            }
        }
    };
    if listener.set_nonblocking().is_err() {
        return;
    }
    let where_ = listener.describe();
    while !sh.shutdown.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((mut s, peer)) => {
                let cfg = sh.cfg();
                let n = sh.active.fetch_add(1, Ordering::AcqRel);
                if n >= cfg.max_clients {
                    sh.active.fetch_sub(1, Ordering::AcqRel);
                    let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                    let _ = s.write_all(&format_message(
                        590,
                        &format!("Too many control connections (limit {})", cfg.max_clients),
                    ));
                    if cfg.verbose {
                        eprintln!("ControlSocket {where_}: refused {peer}: too many connections");
                    }
                    continue;
                }
                if cfg.verbose {
                    eprintln!("ControlSocket {where_}: opened connection from {peer}");
                }
                let sh2 = sh.clone();
                let spawned = std::thread::Builder::new()
                    .name("paraclick-control-conn".into())
                    .stack_size(256 * 1024)
                    .spawn(move || connection(s, peer, sh2));
                if spawned.is_err() {
                    sh.active.fetch_sub(1, Ordering::AcqRel);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Out of file descriptors and the like: wait, the
            // connections being served will end.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn connection(mut s: Box<dyn CtlStream>, peer: String, sh: Arc<Shared>) {
    let cfg = sh.cfg();
    let why = {
        let backend = Current(&sh);
        let mut session = Session::new(&mut *s, &cfg, &backend, &sh.shutdown);
        session.run()
    };
    // Count the connection gone before closing it, so a client that sees
    // it closed can count on its place being free.
    sh.active.fetch_sub(1, Ordering::AcqRel);
    drop(s);
    if why.starts_with("refused") {
        // Always shown: someone is probing the port, or a web page made a
        // browser send it a request.
        eprintln!("paraclick: control socket: closed the connection from {peer}: {why}");
    } else if cfg.verbose {
        eprintln!("ControlSocket: closed connection from {peer}: {why}");
    }
}
