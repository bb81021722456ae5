//! The control plane: Click's ControlSocket protocol, served on TCP and
//! Unix sockets on threads of its own, on top of the router's handlers.
//!
//! A connection is greeted with `Click::ControlSocket/1.3` and then sends
//! one command per line (lines end with CR, LF or CRLF; replies end with
//! CRLF): `READ h [params]`, `READDATA h N`, `READUNTIL h [term]`,
//! `WRITE h [value]`, `WRITEDATA h N`, `WRITEUNTIL h [term]`,
//! `CHECKREAD h`, `CHECKWRITE h`, `LLRPC e#CMD [N]` ([`Backend::llrpc`],
//! an element's [`crate::Element::llrpc`]; a write for READONLY) and
//! `QUIT`, and `AUTH token` (paraclick's: see below). A handler `h` is `element.handler`, `number.handler` (elements
//! numbered from 1, as in `list`) or a global handler. Replies start with
//! Click's codes: 200 OK, 500 syntax error, 501 unimplemented, 510 no such
//! element, 511 no such handler, 520 handler error, 521 data too big, 530
//! permission denied, 540 no router, 590 too many connections; every line
//! but the last of a reply has a hyphen after the code. A read's result
//! follows its reply as `DATA N` and N bytes.
//!
//! Limits (see [`ControlConfig`]): a command line of at most 64 KiB,
//! handler data of at most 16 MiB (`READDATA`/`WRITEDATA`/`...UNTIL`; more
//! gets 521 and the connection closes), a partial line or data body must
//! be complete within `line_timeout` (10 s), a connection silent for
//! `idle_timeout` (1 hour) is closed, replies must be taken within
//! `line_timeout`, and at most `max_clients` (64) connections are served
//! at once (one more is told 590 and closed). Every connection has its own
//! small thread; none is a worker thread, so a client can delay only
//! itself and the handler it calls. A `...UNTIL` body, however many lines,
//! must be complete within `line_timeout` plus a microsecond per byte.
//!
//! Other protocols' clients are closed, unanswered, before anything they
//! send runs (cross-protocol scripting: a web page can make a browser
//! send an HTTP request, whose body could carry commands, to any loopback
//! port): a connection whose first byte is a TLS handshake's (0x16), or
//! any of whose lines is an HTTP request line (`POST / HTTP/1.1`, any HTTP
//! method as first word) or header (`Host: ...`, a first word `Name:`).
//! A first command that is not one of the protocol's is answered 501 and
//! the connection closed. The server logs each on stderr with the peer.
//!
//! With a token ([`ControlConfig::token`], `--control-token FILE`), the
//! first command must be `AUTH token` (200 `Authenticated`); any other
//! command first is answered 530 and the connection closed, and so is a
//! wrong token. Without one, `AUTH` is answered 200 (not required), so a
//! client may always send it. A wrong token's refusal comes after
//! [`ControlConfig::auth_failure_delay`] (1 s), and refusals take turns
//! across every connection and control socket of the process: a peer
//! guessing at the token gets one guess a second, however many
//! connections it opens, while a right token is answered at once.

mod server;
mod session;

pub use server::{
    bind_tcp, bind_tcp_search, bind_unix, serve, serve_stream, Bind, Listener, PortSpec, Server,
    PORT_SEARCH,
};
pub use session::CtlStream;

use crate::core::Core;
use crate::{InitCx, Registry};
use paraclick_lang::FlatGraph;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Read handlers of the driver's own control sockets, which are no
/// elements of any router: `click_driver@@ControlSocket.port` for the
/// first `-p` socket (Click's name), `click_driver@@ControlSocket@2.port`
/// for the second, ...; process-wide, as the sockets are, so every router
/// of a run (hot swaps included) reads them.
static DRIVER_READS: std::sync::RwLock<Vec<(String, String)>> = std::sync::RwLock::new(Vec::new());

/// Sets the driver read handler `spec` (`element.handler`) to `value`.
pub fn set_driver_read(spec: &str, value: &str) {
    let mut v = DRIVER_READS.write().unwrap_or_else(|e| e.into_inner());
    match v.iter_mut().find(|(k, _)| k == spec) {
        Some((_, old)) => *old = value.to_string(),
        None => v.push((spec.to_string(), value.to_string())),
    }
}

/// The value of driver read handler `spec`, if there is one.
pub(crate) fn driver_read(spec: &str) -> Option<String> {
    let v = DRIVER_READS.read().unwrap_or_else(|e| e.into_inner());
    v.iter().find(|(k, _)| k == spec).map(|(_, x)| x.clone())
}

/// The protocol version in the greeting.
pub const GREETING: &str = "Click::ControlSocket/1.3";

/// A shared secret: a control socket's token (`AUTH`), the web view's
/// write token. Its `Debug` does not show it; [`Secret::matches`]
/// compares in constant time.
#[derive(Clone)]
pub struct Secret(Arc<str>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The shortest token a token file may hold.
pub const MIN_TOKEN_LEN: usize = 16;

impl Secret {
    /// 32 bytes from the operating system's random source, in hex.
    pub fn random() -> std::io::Result<Secret> {
        let mut b = [0u8; 32];
        getrandom::getrandom(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        Ok(Secret(hex.into()))
    }

    /// A token read from `path`: its text without surrounding white space,
    /// at least [`MIN_TOKEN_LEN`] bytes of printable ASCII. The file must
    /// not be readable or writable by others than its owner (mode 0600 or
    /// stricter), as ssh asks of its keys. Errors never quote the file.
    pub fn from_file(path: &std::path::Path) -> Result<Secret, String> {
        use std::os::unix::fs::PermissionsExt;
        let shown = path.display();
        let m = std::fs::metadata(path).map_err(|e| format!("token file {shown}: {e}"))?;
        if !m.is_file() {
            return Err(format!("token file {shown}: not a regular file"));
        }
        let mode = m.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "token file {shown}: permissions {mode:04o} let others read it \
                 (chmod 600 {shown})"
            ));
        }
        if m.len() > 4096 {
            return Err(format!(
                "token file {shown}: {} bytes; a token is at most 4096",
                m.len()
            ));
        }
        let text = std::fs::read(path).map_err(|e| format!("token file {shown}: {e}"))?;
        let t = text.trim_ascii();
        if t.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "token file {shown}: a token of at least {MIN_TOKEN_LEN} characters is needed"
            ));
        }
        if !t.iter().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "token file {shown}: the token must be printable ASCII without spaces"
            ));
        }
        let t = std::str::from_utf8(t).map_err(|_| format!("token file {shown}: not text"))?;
        Ok(Secret(t.into()))
    }

    /// The secret itself (to print it once, or put it in a page).
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `given` is the secret, in time that depends on its length
    /// only, not on where it differs.
    pub fn matches(&self, given: &[u8]) -> bool {
        let want = self.0.as_bytes();
        if given.len() != want.len() {
            return false;
        }
        let diff = want
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// Limits and options of a control socket.
#[derive(Clone, Debug)]
pub struct ControlConfig {
    /// Refuse writes (530).
    pub read_only: bool,
    /// Print a line to stderr when a connection opens or closes.
    pub verbose: bool,
    /// Connections served at once.
    pub max_clients: usize,
    /// Longest command line, in bytes.
    pub max_line: usize,
    /// Largest handler data (`READDATA`, `WRITEDATA`, `...UNTIL`).
    pub max_data: usize,
    /// Time allowed to finish a line or a data body once begun, and to
    /// take a reply.
    pub line_timeout: Duration,
    /// A connection with no command for this long is closed.
    pub idle_timeout: Duration,
    /// If set, a connection's first command must be `AUTH TOKEN` with
    /// this token: any other is refused (530) and the connection closed,
    /// and so is a wrong token.
    pub token: Option<Secret>,
    /// How long a wrong token's refusal is held back. Refusals wait in
    /// turn, process-wide, so guesses at a token are at most one per
    /// this time however many connections make them; a right token is
    /// never held.
    pub auth_failure_delay: Duration,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            read_only: false,
            verbose: false,
            max_clients: 64,
            max_line: 64 * 1024,
            max_data: 16 * 1024 * 1024,
            line_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(3600),
            token: None,
            auth_failure_delay: Duration::from_secs(1),
        }
    }
}

/// A failed command: Click's reply code and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsError {
    pub code: u16,
    pub msg: String,
}

impl CsError {
    pub fn new(code: u16, msg: impl Into<String>) -> CsError {
        CsError {
            code,
            msg: msg.into(),
        }
    }
}

/// What the protocol calls: handlers by name. [`RouterHandle`] is the
/// router's; tests may supply their own.
pub trait Backend: Send + Sync {
    /// Calls read handler `h`, with a parameter if given.
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, CsError>;
    /// Calls write handler `h`.
    fn write(&self, h: &str, value: &str) -> Result<(), CsError>;
    /// Whether `h` exists and is readable (or writable).
    fn check(&self, h: &str, write: bool) -> Result<(), CsError>;
    /// Stops the router (a socket that could never be opened).
    fn stop(&self) {}
    /// Click's LLRPC `cmd` on element `e` (a name or a number from 1)
    /// with `data`: the bytes to send back.
    fn llrpc(&self, e: &str, cmd: u32, _data: &[u8]) -> Result<Vec<u8>, CsError> {
        Err(CsError::new(
            501,
            format!("LLRPC '{e}#{cmd:X}' not supported"),
        ))
    }
}

/// Router-level facts the global handlers report, kept from the build.
pub(crate) struct RouterInfo {
    classes: Vec<&'static str>,
    packages: Vec<&'static str>,
    requirements: Vec<String>,
    flatconfig: String,
    /// The configuration requires `compact_config`.
    compact: bool,
    /// Started once the router exists (see [`InitCx::on_start`]), with
    /// the key a hot swap finds them by.
    services: Mutex<Vec<(Option<String>, Service)>>,
    /// Servers the router's elements started (or took over); they stop
    /// with the router.
    servers: Mutex<Vec<(Option<String>, Server)>>,
    /// Keys of the servers of the router this one replaces in a hot swap,
    /// which this one's elements may take over, with where each listens.
    offered: Vec<(String, String)>,
    /// Those its elements take over, with their options.
    taken: Mutex<Vec<(String, ControlConfig)>>,
}

type Service = Box<dyn FnOnce(RouterHandle) -> Option<Server> + Send>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The keys of `core`'s servers, with where each listens, for a router
/// built to replace it.
pub(crate) fn server_keys(core: &Core) -> Vec<(String, String)> {
    lock(&core.info.servers)
        .iter()
        .filter_map(|(k, s)| Some((k.clone()?, s.local_addr().to_string())))
        .collect()
}

/// After a hot swap: moves the servers `new`'s elements take over from
/// `old` (open connections included) to `new`, with their new options,
/// and closes the others now (their listening sockets closed when this
/// returns, whenever the old router itself goes away), so that the next
/// configuration may bind their addresses again.
pub(crate) fn hand_over_servers(old: &Core, new: &Core) {
    let taken = std::mem::take(&mut *lock(&new.info.taken));
    let closing = {
        let mut from = lock(&old.info.servers);
        let mut to = lock(&new.info.servers);
        for (key, cfg) in taken {
            if let Some(i) = from.iter().position(|(k, _)| k.as_deref() == Some(&key)) {
                let (k, server) = from.remove(i);
                server.set_config(cfg);
                to.push((k, server));
            }
        }
        std::mem::take(&mut *from)
    };
    // Dropped outside the locks: each drop waits for its accept thread.
    drop(closing);
}

/// Sends the commands of every server `core`'s elements started to
/// `backend`.
pub(crate) fn set_backends(core: &Core, backend: &Arc<dyn Backend>) {
    for (_, s) in lock(&core.info.servers).iter() {
        s.set_backend(backend.clone());
    }
}

impl RouterInfo {
    pub(crate) fn new(graph: &FlatGraph, reg: &Registry) -> RouterInfo {
        RouterInfo {
            classes: reg.names(),
            packages: reg.packages().to_vec(),
            requirements: graph
                .requirements
                .iter()
                .map(|r| match r.words.as_slice() {
                    [k, name] if k == "package" || k == "library" => name.clone(),
                    w => w.join(" "),
                })
                .collect(),
            flatconfig: paraclick_lang::print_click(graph),
            compact: graph
                .requirements
                .iter()
                .any(|r| r.words.iter().any(|w| w == "compact_config")),
            services: Mutex::new(Vec::new()),
            servers: Mutex::new(Vec::new()),
            offered: Vec::new(),
            taken: Mutex::new(Vec::new()),
        }
    }

    /// Offers the servers of the router being replaced (keys, addresses).
    pub(crate) fn offer(&mut self, keys: Vec<(String, String)>) {
        self.offered = keys;
    }
}

/// The `config` handler: the configuration's text, or, when it requires
/// `compact_config` (Click's request not to keep the text), the
/// flattened configuration.
pub(crate) fn config_text(core: &Core) -> String {
    if core.info.compact {
        core.info.flatconfig.clone()
    } else {
        core.source.to_string()
    }
}

/// The global read handlers kept in [`RouterInfo`].
pub(crate) fn read_global(core: &Core, h: &str) -> Option<String> {
    let lines = |v: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for l in v {
            s.push_str(l);
            s.push('\n');
        }
        s
    };
    match h {
        "classes" => Some(lines(&mut core.info.classes.iter().copied())),
        "packages" => Some(lines(&mut core.info.packages.iter().copied())),
        "requirements" => Some(lines(
            &mut core.info.requirements.iter().map(String::as_str),
        )),
        "flatconfig" => Some(core.info.flatconfig.clone()),
        "driver" => Some("userlevel\n".to_string()),
        "threads" => Some(threads_text(core)),
        _ => None,
    }
}

/// The `threads` handler (paraclick's, for monitors): one line per worker
/// thread, `thread T POLLS IDLE_POLLS BUSY_CYCLES` (cumulative: a reader
/// takes differences; the load is the share of polls that found work),
/// then one per task, `task ELEMENT INDEX THREAD WORK_RUNS`.
fn threads_text(core: &Core) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let mut s = String::new();
    for (t, ts) in core.threads.iter().enumerate() {
        s.push_str(&format!(
            "thread {t} {} {} {}\n",
            ts.polls.load(Relaxed),
            ts.idle_polls.load(Relaxed),
            ts.busy_cycles.load(Relaxed)
        ));
    }
    for task in core.tasks.iter() {
        s.push_str(&format!(
            "task {} {} {} {}\n",
            core.slots[task.elem].name,
            task.index,
            task.thread.load(Relaxed),
            task.work.load(Relaxed)
        ));
    }
    s
}

/// Starts the services elements asked for in `initialize`; called once
/// the router's core is shared.
pub(crate) fn start_services(core: &Arc<Core>) {
    let services = std::mem::take(&mut *lock(&core.info.services));
    let mut started = Vec::new();
    for (key, s) in services {
        if let Some(server) = s(RouterHandle {
            core: Arc::downgrade(core),
        }) {
            started.push((key, server));
        }
    }
    core.info
        .servers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(started);
}

impl InitCx<'_> {
    /// Runs `f` once the router is built, with a handle on it (a control
    /// socket starts its server so). A server `f` returns stops when the
    /// router is dropped.
    pub fn on_start(&mut self, f: impl FnOnce(RouterHandle) -> Option<Server> + Send + 'static) {
        lock(&self.core.info.services).push((None, Box::new(f)));
    }

    /// [`InitCx::on_start`] for a server that a router replacing this one
    /// in a hot swap may take over ([`InitCx::take_over_server`]) by `key`
    /// (say `ControlSocket TCP 127.0.0.1:7777`).
    pub fn on_start_keyed(
        &mut self,
        key: impl Into<String>,
        f: impl FnOnce(RouterHandle) -> Option<Server> + Send + 'static,
    ) {
        lock(&self.core.info.services).push((Some(key.into()), Box::new(f)));
    }

    /// Whether this router, built to replace another in a hot swap, takes
    /// over that router's server `key` (its open socket and connections),
    /// with options `cfg` for the connections opened after the swap. If
    /// so (`Some`, with where the server listens, as
    /// [`Server::local_addr`]), the element must not open the socket
    /// itself: the server comes with the swap, and stops with this
    /// router. A key is taken once.
    pub fn take_over_server(&mut self, key: &str, cfg: ControlConfig) -> Option<String> {
        let info = &self.core.info;
        let mut taken = lock(&info.taken);
        let (_, addr) = info.offered.iter().find(|(k, _)| k == key)?;
        if taken.iter().any(|(k, _)| k == key) {
            return None;
        }
        taken.push((key.to_string(), cfg));
        Some(addr.clone())
    }
}

/// A handle on a router for the control plane. It does not keep the router
/// alive: once the router is gone, calls fail with 540.
#[derive(Clone)]
pub struct RouterHandle {
    pub(crate) core: Weak<Core>,
}

enum Target {
    Global,
    Element(usize),
}

impl RouterHandle {
    fn core(&self) -> Result<Arc<Core>, CsError> {
        self.core
            .upgrade()
            .ok_or_else(|| CsError::new(540, "No router installed"))
    }

    /// Splits `element.handler` and finds the element, by name or by
    /// number (from 1). Returns the spec the router's handler calls take.
    fn resolve(core: &Core, spec: &str) -> Result<(Target, String, String), CsError> {
        match spec.rsplit_once('.') {
            None => Ok((Target::Global, spec.to_string(), spec.to_string())),
            Some((e, h)) => {
                let i = match core.names.get(e) {
                    Some(&i) => i,
                    None => match e.parse::<usize>() {
                        Ok(n) if n >= 1 && n <= core.slots.len() => n - 1,
                        _ => return Err(CsError::new(510, format!("No element named '{e}'"))),
                    },
                };
                let full = format!("{}.{}", core.slots[i].name, h);
                Ok((Target::Element(i), h.to_string(), full))
            }
        }
    }

    /// Whether handler `h` of the target is (readable, writable).
    fn flags(core: &Core, t: &Target, h: &str) -> Option<(bool, bool)> {
        match t {
            Target::Global => {
                let r = crate::handler::GLOBAL_READ.contains(&h);
                let w = crate::handler::GLOBAL_WRITE.contains(&h);
                (r || w).then_some((r, w))
            }
            Target::Element(i) => crate::handler::list(core, *i)
                .iter()
                .find(|x| x.name == h)
                .map(|x| (x.read, x.write)),
        }
    }

    fn checked(&self, spec: &str, write: bool) -> Result<(Arc<Core>, String), CsError> {
        let core = self.core()?;
        let (t, h, full) = match Self::resolve(&core, spec) {
            Ok(r) => r,
            // The driver's own sockets' handlers (`-p`, `-u`): read-only,
            // no element of the router, as in Click.
            Err(e) => {
                return match driver_read(spec) {
                    Some(_) if write => {
                        Err(CsError::new(530, format!("Handler '{spec}' is read-only")))
                    }
                    Some(_) => Ok((core, spec.to_string())),
                    None => Err(e),
                }
            }
        };
        match Self::flags(&core, &t, &h) {
            None => Err(CsError::new(511, format!("No handler named '{spec}'"))),
            Some((false, _)) if !write => {
                Err(CsError::new(530, format!("Handler '{spec}' is write-only")))
            }
            Some((_, false)) if write => {
                Err(CsError::new(530, format!("Handler '{spec}' is read-only")))
            }
            Some(_) => Ok((core, full)),
        }
    }

    /// The names of the router's elements (empty once it is gone).
    pub fn element_names(&self) -> Vec<String> {
        match self.core.upgrade() {
            Some(c) => c.slots.iter().map(|s| s.name.clone()).collect(),
            None => Vec::new(),
        }
    }
}

impl Backend for RouterHandle {
    fn read(&self, h: &str, param: Option<&str>) -> Result<String, CsError> {
        let (core, full) = self.checked(h, false)?;
        let spec = match param {
            Some(p) if !p.trim().is_empty() => format!("{full} {p}"),
            _ => full,
        };
        crate::handler::read(&core, &spec, None).map_err(|e| CsError::new(520, e))
    }

    fn write(&self, h: &str, value: &str) -> Result<(), CsError> {
        let (core, full) = self.checked(h, true)?;
        crate::handler::write(&core, &full, value, None).map_err(|e| CsError::new(520, e))
    }

    fn check(&self, h: &str, write: bool) -> Result<(), CsError> {
        self.checked(h, write).map(|_| ())
    }

    fn stop(&self) {
        if let Some(c) = self.core.upgrade() {
            c.stop_now();
        }
    }

    fn llrpc(&self, e: &str, cmd: u32, data: &[u8]) -> Result<Vec<u8>, CsError> {
        let core = self.core()?;
        let Target::Element(i) = Self::resolve(&core, &format!("{e}.x"))?.0 else {
            return Err(CsError::new(510, format!("No element named '{e}'")));
        };
        match core.slots[i].element.llrpc(cmd, data) {
            Some(r) => r.map_err(|m| CsError::new(520, m)),
            None => Err(CsError::new(
                501,
                format!("LLRPC '{e}#{cmd:X}' not supported by this element"),
            )),
        }
    }
}

/// Serves one session over memory instead of a socket: `input` is all a
/// client sends before it closes; returns every byte the server replied
/// and why the session ended. The same code as a socket connection; for
/// the control-protocol fuzz target and tests.
pub fn session_over_bytes(
    input: &[u8],
    backend: &dyn Backend,
    cfg: &ControlConfig,
) -> (Vec<u8>, &'static str) {
    let mut s = MemStream {
        input: std::io::Cursor::new(input.to_vec()),
        output: Vec::new(),
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let why = session::Session::new(&mut s, cfg, backend, &stop).run();
    (s.output, why)
}

/// A client's bytes in, the server's bytes out.
struct MemStream {
    input: std::io::Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl std::io::Read for MemStream {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(b)
    }
}

impl std::io::Write for MemStream {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.output.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CtlStream for MemStream {
    fn set_read_timeout(&self, _: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }
    fn set_write_timeout(&self, _: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
