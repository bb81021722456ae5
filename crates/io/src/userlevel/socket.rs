//! # Socket
//!
//! Socket(TCP, IP, PORTNUMBER [, LOCALIP] [, LOCALPORTNUMBER] [, keywords])
//! Socket(UDP, IP, PORTNUMBER [, LOCALIP] [, LOCALPORTNUMBER] [, keywords])
//! Socket(UNIX, FILENAME [, LOCALFILENAME] [, keywords])
//! Socket(UNIX_DGRAM, FILENAME [, LOCALFILENAME] [, keywords])
//!
//! A socket transport (user-level).
//!
//! Ports: 0 or 1 inputs, 0 or 1 outputs. Processing: agnostic input, push
//! output (`a/h`).
//!
//! Packets do not flow through Socket: packets arriving on its input are
//! sent to the remote host or process, and data received from it leaves
//! on the output, one packet per received datagram (or per read of a
//! stream, at most SNAPLEN bytes).
//!
//! A TCP or UNIX Socket is a server (the default) or a client (CLIENT
//! true, or no outputs). A server binds the address, port or file and
//! accepts one connection at a time; a client connects during
//! initialization (a refused connection is an initialization error).
//!
//! A UDP or UNIX_DGRAM Socket may also be a server or a client. A server
//! receives from anyone and sends its input packets to the last peer it
//! heard from (dropping them, counted, before any); a client sends to the
//! given address, or, for UDP with address 0.0.0.0, to each packet's
//! destination IP annotation.
//!
//! With LOCALIP/LOCALPORTNUMBER or LOCALFILENAME, CLIENT is assumed unless
//! given, and the local address is bound before connecting or sending.
//! With CLIENT false they are ignored.
//!
//! A pushed packet is written at once (blocking on a stream socket until
//! written); a pull input is pulled by Socket's task as it runs. Packets
//! that cannot be sent (no connection yet, a peer that went away) are
//! dropped and counted.
//!
//! Keywords:
//! - `SNAPLEN` (unsigned, default 2048): the most bytes read into one
//!   packet.
//! - `NODELAY` (boolean, default true): TCP only; disable Nagle's
//!   algorithm.
//! - `CLIENT` (boolean): see above.
//! - `SNDBUF`, `RCVBUF` (unsigned): the socket's send and receive buffer
//!   sizes (SO_SNDBUF, SO_RCVBUF).
//! - `TIMESTAMP` (boolean, default true): stamp received packets with the
//!   current time.
//! - `VERBOSE` (boolean, default false): print a message when a connection
//!   is accepted or closed.
//! - `HEADROOM` (unsigned, default 28): headroom of received packets.
//!
//! Click's ALLOW, DENY and PROPER keywords are not supported (an error).
//!
//! Handlers:
//! - `drops` (read): input packets that could not be sent: dropped for
//!   `ring full` when a datagram socket's send buffer is full for now,
//!   for `send failed` otherwise.
//! - `sent`, `received` (read): packets sent and received.
//! - `connected` (read): `true` while a stream connection is open (always
//!   `true` for datagram sockets once bound).
//!
//! Example:
//!
//!     // Send every packet to a TCP listener on localhost port 9000.
//!     FromDump(f.pcap) -> Socket(TCP, 127.0.0.1, 9000, CLIENT true);
//!     // Receive UDP datagrams on port 5000 and print them.
//!     Socket(UDP, 0.0.0.0, 5000) -> Print(got) -> Discard;

use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use rustix::net::{self, sockopt, AddressFamily, SocketFlags, SocketType};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Tcp,
    Udp,
    Unix,
    UnixDgram,
}

#[derive(Clone, Debug)]
enum Remote {
    Inet(SocketAddrV4),
    Path(PathBuf),
}

enum Sock {
    None,
    TcpListen(TcpListener, Option<TcpStream>),
    Tcp(TcpStream),
    UnixListen(UnixListener, Option<UnixStream>),
    Unix(UnixStream),
    Udp(UdpSocket, Option<SocketAddr>),
    UnixDgram(UnixDatagram, Option<PathBuf>),
}

pub struct Socket {
    kind: Kind,
    remote: Remote,
    local: Option<Remote>,
    client: bool,
    snaplen: usize,
    nodelay: bool,
    sndbuf: Option<usize>,
    rcvbuf: Option<usize>,
    timestamp: bool,
    verbose: bool,
    headroom: usize,
    pull_input: bool,
    has_output: bool,
    sock: Mutex<Sock>,
    drops: PerThreadCount,
    sent: AtomicU64,
    received: AtomicU64,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["send failed", "ring full"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("Socket", "0-1/0-1", "a/h", make)
        .drop_reasons(DROP_REASONS)
        .shared("a device: one interface for all flows")
        .kind(paraclick_runtime::Kind::Device)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Socket, String> {
    let mut a = cx.args();
    let kind: String = a.read_mp("TYPE");
    let kind = match kind.to_ascii_uppercase().as_str() {
        "TCP" => Kind::Tcp,
        "UDP" => Kind::Udp,
        "UNIX" => Kind::Unix,
        "UNIX_DGRAM" => Kind::UnixDgram,
        k => {
            a.error(format!(
                "TYPE: expected TCP, UDP, UNIX or UNIX_DGRAM, not '{k}'"
            ));
            Kind::Tcp
        }
    };
    let inet = matches!(kind, Kind::Tcp | Kind::Udp);
    let (remote, local) = if inet {
        let ip: Ipv4Addr = a.read_mp("IP");
        let port: u16 = a.read_mp("PORTNUMBER");
        let lip: Option<Ipv4Addr> = a.read_p("LOCALIP");
        let lport: Option<u16> = a.read_p("LOCALPORTNUMBER");
        let local = (lip.is_some() || lport.is_some()).then(|| {
            Remote::Inet(SocketAddrV4::new(
                lip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                lport.unwrap_or(0),
            ))
        });
        (Remote::Inet(SocketAddrV4::new(ip, port)), local)
    } else {
        let f: String = a.read_mp("FILENAME");
        let lf: Option<String> = a.read_p("LOCALFILENAME");
        (
            Remote::Path(PathBuf::from(f)),
            lf.map(|f| Remote::Path(PathBuf::from(f))),
        )
    };
    let snaplen: usize = a.read("SNAPLEN").unwrap_or(2048);
    let nodelay = a.read("NODELAY").unwrap_or(true);
    let client: Option<bool> = a.read("CLIENT");
    let sndbuf: Option<usize> = a.read("SNDBUF");
    let rcvbuf: Option<usize> = a.read("RCVBUF");
    let timestamp = a.read("TIMESTAMP").unwrap_or(true);
    let verbose = a.read("VERBOSE").unwrap_or(false);
    let headroom: usize = a.read("HEADROOM").unwrap_or(28);
    for k in ["ALLOW", "DENY", "PROPER"] {
        if a.read::<Raw>(k).is_some() {
            a.error(format!("{k} is not supported"));
        }
    }
    a.complete()?;
    if snaplen == 0 || snaplen > 65536 {
        return Err("SNAPLEN must be between 1 and 65536".into());
    }
    let client = client.unwrap_or(cx.noutputs == 0 || local.is_some());
    let local = if client { local } else { None };
    if cx.ninputs == 0 && cx.noutputs == 0 {
        return Err("Socket needs an input or an output".into());
    }
    Ok(Socket {
        kind,
        remote,
        local,
        client,
        snaplen,
        nodelay,
        sndbuf,
        rcvbuf,
        timestamp,
        verbose,
        headroom,
        pull_input: cx.ninputs > 0 && cx.input_is_pull(0),
        has_output: cx.noutputs > 0,
        sock: Mutex::new(Sock::None),
        drops: PerThreadCount::new(cx.nthreads),
        sent: AtomicU64::new(0),
        received: AtomicU64::new(0),
    })
}

/// Sets a socket buffer size: `set` is rustix's SO_SNDBUF or SO_RCVBUF call.
fn set_buf(
    fd: BorrowedFd<'_>,
    set: fn(BorrowedFd<'_>, usize) -> rustix::io::Result<()>,
    v: Option<usize>,
) -> Result<(), String> {
    let Some(v) = v else { return Ok(()) };
    i32::try_from(v).map_err(|_| "buffer size too large".to_string())?;
    set(fd, v).map_err(|e| format!("setsockopt: {}", std::io::Error::from(e)))
}

fn inet(r: &Remote) -> SocketAddrV4 {
    match r {
        Remote::Inet(a) => *a,
        Remote::Path(_) => SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
    }
}

fn path(r: &Remote) -> PathBuf {
    match r {
        Remote::Path(p) => p.clone(),
        Remote::Inet(_) => PathBuf::new(),
    }
}

impl Socket {
    fn lock(&self) -> std::sync::MutexGuard<'_, Sock> {
        self.sock.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self) -> Result<Sock, String> {
        let what = |e: std::io::Error| format!("{:?}: {e}", self.remote);
        let s = match (&self.kind, self.client) {
            (Kind::Tcp, false) => {
                let l = TcpListener::bind(inet(&self.remote)).map_err(what)?;
                l.set_nonblocking(true).map_err(what)?;
                Sock::TcpListen(l, None)
            }
            (Kind::Tcp, true) => {
                let s = match &self.local {
                    // Bind first: std has no bind-then-connect, so go
                    // through a raw socket.
                    Some(local) => {
                        socket2_connect(inet(local), inet(&self.remote)).map_err(what)?
                    }
                    None => TcpStream::connect(inet(&self.remote)).map_err(what)?,
                };
                s.set_nodelay(self.nodelay).map_err(what)?;
                s.set_nonblocking(true).map_err(what)?;
                Sock::Tcp(s)
            }
            (Kind::Udp, false) => {
                let u = UdpSocket::bind(inet(&self.remote)).map_err(what)?;
                u.set_nonblocking(true).map_err(what)?;
                Sock::Udp(u, None)
            }
            (Kind::Udp, true) => {
                let local = self
                    .local
                    .as_ref()
                    .map_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0), inet);
                let u = UdpSocket::bind(local).map_err(what)?;
                u.set_nonblocking(true).map_err(what)?;
                let r = inet(&self.remote);
                let peer = (!r.ip().is_unspecified()).then_some(SocketAddr::V4(r));
                Sock::Udp(u, peer)
            }
            (Kind::Unix, false) => {
                let p = path(&self.remote);
                let _ = std::fs::remove_file(&p);
                let l = UnixListener::bind(&p).map_err(what)?;
                l.set_nonblocking(true).map_err(what)?;
                Sock::UnixListen(l, None)
            }
            (Kind::Unix, true) => {
                let s = UnixStream::connect(path(&self.remote)).map_err(what)?;
                s.set_nonblocking(true).map_err(what)?;
                Sock::Unix(s)
            }
            (Kind::UnixDgram, false) => {
                let p = path(&self.remote);
                let _ = std::fs::remove_file(&p);
                let d = UnixDatagram::bind(&p).map_err(what)?;
                d.set_nonblocking(true).map_err(what)?;
                Sock::UnixDgram(d, None)
            }
            (Kind::UnixDgram, true) => {
                let d = match &self.local {
                    Some(l) => {
                        let p = path(l);
                        let _ = std::fs::remove_file(&p);
                        UnixDatagram::bind(&p).map_err(what)?
                    }
                    None => UnixDatagram::unbound().map_err(what)?,
                };
                d.set_nonblocking(true).map_err(what)?;
                Sock::UnixDgram(d, Some(path(&self.remote)))
            }
        };
        let fd = match &s {
            Sock::TcpListen(l, _) => l.as_fd(),
            Sock::Tcp(t) => t.as_fd(),
            Sock::UnixListen(l, _) => l.as_fd(),
            Sock::Unix(u) => u.as_fd(),
            Sock::Udp(u, _) => u.as_fd(),
            Sock::UnixDgram(d, _) => d.as_fd(),
            Sock::None => return Ok(s),
        };
        set_buf(
            fd,
            |f, v| sockopt::set_socket_send_buffer_size(f, v),
            self.sndbuf,
        )?;
        set_buf(
            fd,
            |f, v| sockopt::set_socket_recv_buffer_size(f, v),
            self.rcvbuf,
        )?;
        Ok(s)
    }

    fn note(&self, cx: &Cx<'_>, msg: &str) {
        if self.verbose {
            eprintln!("{}: {msg}", cx.element_name());
        }
    }

    /// Sends one packet; false if it could not be.
    fn send(&self, cx: &Cx<'_>, s: &mut Sock, p: &Packet) -> Sent {
        fn write_all_blocking(w: &mut impl Write, d: &[u8]) -> std::io::Result<()> {
            let mut off = 0;
            while off < d.len() {
                match w.write(&d[off..]) {
                    Ok(0) => return Err(ErrorKind::WriteZero.into()),
                    Ok(n) => off += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
        let d = p.data();
        let datagram = |r: std::io::Result<usize>| match r {
            Ok(_) => Sent::Yes,
            Err(e) if crate::linux::tap::queue_full(&e) => Sent::Full,
            Err(_) => Sent::Failed,
        };
        let ok = match s {
            Sock::Tcp(t) | Sock::TcpListen(_, Some(t)) => write_all_blocking(t, d).into(),
            Sock::Unix(u) | Sock::UnixListen(_, Some(u)) => write_all_blocking(u, d).into(),
            Sock::Udp(u, peer) => {
                let to = match peer {
                    Some(a) => Some(*a),
                    None if self.client => {
                        let dst = p.anno().dst_ip;
                        (!dst.is_unspecified()).then(|| {
                            SocketAddr::V4(SocketAddrV4::new(dst, inet(&self.remote).port()))
                        })
                    }
                    None => None,
                };
                match to {
                    Some(to) => datagram(u.send_to(d, to)),
                    None => Sent::Failed,
                }
            }
            Sock::UnixDgram(u, Some(peer)) => datagram(u.send_to(d, &*peer)),
            _ => Sent::Failed,
        };
        if ok == Sent::Failed {
            // A broken stream: forget the connection (a server accepts
            // the next one).
            match s {
                Sock::TcpListen(_, c @ Some(_)) => {
                    *c = None;
                    self.note(cx, "connection closed");
                }
                Sock::UnixListen(_, c @ Some(_)) => {
                    *c = None;
                    self.note(cx, "connection closed");
                }
                _ => {}
            }
        }
        ok
    }

    fn new_packet(&self, d: &[u8]) -> Option<Packet> {
        received_packet(self.headroom, d, self.timestamp)
    }

    /// Accepts and reads what is waiting; returns received packets.
    fn receive(&self, cx: &Cx<'_>, s: &mut Sock, max: usize) -> Vec<Packet> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; self.snaplen];
        match s {
            Sock::TcpListen(l, c @ None) => {
                if let Ok((t, from)) = l.accept() {
                    let _ = t.set_nonblocking(true);
                    let _ = t.set_nodelay(self.nodelay);
                    self.note(cx, &format!("accepted connection from {from}"));
                    *c = Some(t);
                }
            }
            Sock::UnixListen(l, c @ None) => {
                if let Ok((u, _)) = l.accept() {
                    let _ = u.set_nonblocking(true);
                    self.note(cx, "accepted connection");
                    *c = Some(u);
                }
            }
            _ => {}
        }
        let mut closed = false;
        while out.len() < max {
            let r = match s {
                Sock::Tcp(t) | Sock::TcpListen(_, Some(t)) => t.read(&mut buf).map(|n| (n, true)),
                Sock::Unix(u) | Sock::UnixListen(_, Some(u)) => u.read(&mut buf).map(|n| (n, true)),
                Sock::Udp(u, peer) => u.recv_from(&mut buf).map(|(n, from)| {
                    if !self.client {
                        *peer = Some(from);
                    }
                    (n, false)
                }),
                Sock::UnixDgram(u, peer) => u.recv_from(&mut buf).map(|(n, from)| {
                    if !self.client {
                        if let Some(p) = from.as_pathname() {
                            *peer = Some(p.to_path_buf());
                        }
                    }
                    (n, false)
                }),
                _ => break,
            };
            match r {
                Ok((0, true)) => {
                    closed = true;
                    break;
                }
                Ok((n, _)) => {
                    if let Some(p) = self.new_packet(&buf[..n]) {
                        out.push(p);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    closed = matches!(s, Sock::TcpListen(..) | Sock::UnixListen(..));
                    break;
                }
            }
        }
        if closed {
            match s {
                Sock::TcpListen(_, c) => *c = None,
                Sock::UnixListen(_, c) => *c = None,
                Sock::Tcp(_) | Sock::Unix(_) => *s = Sock::None,
                _ => {}
            }
            self.note(cx, "connection closed");
        }
        out
    }
}

/// What became of a packet a socket was given to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    Yes,
    /// The send buffer is full for now (`EAGAIN`, `ENOBUFS`): drop
    /// reason 1, `ring full`.
    Full,
    /// Refused, unroutable, no peer: drop reason 0, `send failed`.
    Failed,
}

impl Sent {
    /// The drop reason of a packet not sent (the socket elements' list:
    /// `send failed`, `ring full`).
    pub(crate) fn reason(self) -> u8 {
        u8::from(self == Sent::Full)
    }

    /// A datagram `sendto`'s outcome, `want` bytes expected to go.
    pub(crate) fn of_sendto(r: Result<usize, rustix::io::Errno>, want: usize) -> Option<Sent> {
        match r {
            Ok(n) if n == want => Some(Sent::Yes),
            Ok(_) => Some(Sent::Failed),
            Err(rustix::io::Errno::INTR) => None,
            Err(e) if crate::linux::tap::queue_full(&e.into()) => Some(Sent::Full),
            Err(_) => Some(Sent::Failed),
        }
    }
}

impl<E> From<Result<(), E>> for Sent {
    fn from(r: Result<(), E>) -> Sent {
        if r.is_ok() {
            Sent::Yes
        } else {
            Sent::Failed
        }
    }
}

/// Sends each packet of `batch` with `send`, counting it in `sent`, or
/// in `drops` and as [`Sent::reason`]: the datagram sockets' push
/// (RawSocket, McastSocket).
pub(crate) fn send_each(
    cx: &mut Cx<'_>,
    batch: Batch,
    sent: &AtomicU64,
    drops: &PerThreadCount,
    mut send: impl FnMut(&[u8]) -> Sent,
) {
    let mut bad = Vec::new();
    for p in batch {
        match send(p.data()) {
            Sent::Yes => {
                sent.fetch_add(1, Ordering::Relaxed);
            }
            why => {
                drops.inc(cx.thread());
                bad.push((why, p));
            }
        }
    }
    for (why, p) in bad {
        cx.drop_packet_for(why.reason(), p);
    }
}

/// A packet holding received bytes `d` with `headroom`, stamped with the
/// current time if `timestamp` (Socket and RawSocket).
pub(crate) fn received_packet(headroom: usize, d: &[u8], timestamp: bool) -> Option<Packet> {
    let mut p = Packet::make(headroom, d.len(), 0)?;
    p.data_mut().copy_from_slice(d);
    if timestamp {
        p.set_timestamp(Timestamp::now());
    }
    Some(p)
}

/// A TCP stream bound to `local` then connected to `remote`.
fn socket2_connect(local: SocketAddrV4, remote: SocketAddrV4) -> std::io::Result<TcpStream> {
    let fd = net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let _ = sockopt::set_socket_reuseaddr(&fd, true);
    net::bind(&fd, &local)?;
    net::connect(&fd, &remote)?;
    Ok(TcpStream::from(fd))
}

impl Element for Socket {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::read("sent", |e, _| e.sent.load(Ordering::Relaxed).to_string()),
        Handler::read("received", |e, _| {
            e.received.load(Ordering::Relaxed).to_string()
        }),
        Handler::read("connected", |e, _| {
            matches!(
                &*e.lock(),
                Sock::Tcp(_)
                    | Sock::Unix(_)
                    | Sock::TcpListen(_, Some(_))
                    | Sock::UnixListen(_, Some(_))
                    | Sock::Udp(..)
                    | Sock::UnixDgram(..)
            )
            .to_string()
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // Its tasks, declared when checked too: see FromDevice.
        crate::common::add_socket_task(ix, self.pull_input, self.has_output);
        if ix.checking() {
            return Ok(());
        }
        *self.lock() = self.open()?;
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        let mut s = self.lock();
        let mut bad = Vec::new();
        for p in batch {
            match self.send(cx, &mut s, &p) {
                Sent::Yes => {
                    self.sent.fetch_add(1, Ordering::Relaxed);
                }
                why => {
                    self.drops.inc(cx.thread());
                    bad.push((why, p));
                }
            }
        }
        drop(s);
        for (why, p) in bad {
            cx.drop_packet_for(why.reason(), p);
        }
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let mut work = false;
        if self.pull_input {
            if let Some(b) = cx.pull(0, 32) {
                work = true;
                self.push(cx, 0, b);
            }
        }
        if self.has_output {
            let got = {
                let mut s = self.lock();
                self.receive(cx, &mut s, 32)
            };
            if !got.is_empty() {
                work = true;
                self.received.fetch_add(got.len() as u64, Ordering::Relaxed);
                cx.push(0, Batch::from(got));
            }
        }
        work
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // A server's Unix socket file goes with it.
        let s = std::mem::replace(&mut *self.lock(), Sock::None);
        match (&s, self.client, &self.local) {
            (Sock::UnixListen(..) | Sock::UnixDgram(..), false, _) => {
                let _ = std::fs::remove_file(path(&self.remote));
            }
            (Sock::UnixDgram(..), true, Some(l)) => {
                let _ = std::fs::remove_file(path(l));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, UdpSocket};
    use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
    use std::time::Duration;

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn tcp_server_receives_and_answers() {
        let port = free_port();
        let r = build(
            &full_registry(),
            &format!("s :: Socket(TCP, 127.0.0.1, {port}) -> c :: Counter -> q :: Queue -> s;"),
        );
        // An echo server: what arrives is sent back on the same connection.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut t = loop {
                    match std::net::TcpStream::connect(("127.0.0.1", port)) {
                        Ok(t) => break t,
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                };
                t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                t.write_all(b"hello over tcp").unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 64];
                while got.len() < 14 {
                    let n = t.read(&mut buf).unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(&got, b"hello over tcp");
                r.stop();
            });
            r.run();
        });
        assert!(handler(&r, "s.received").parse::<u64>().unwrap() >= 1);
        assert_eq!(handler(&r, "s.drops"), "0");
    }

    #[test]
    fn tcp_client_sends_pushed_packets() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let r = build(
            &full_registry(),
            &format!("Idle -> s :: Socket(TCP, 127.0.0.1, {port}, CLIENT true);"),
        );
        let (mut t, _) = l.accept().unwrap();
        let pk = |d: &[u8]| paraclick_packet::Packet::from_slice(d).unwrap();
        r.push_into(
            "s",
            0,
            paraclick_packet::Batch::from(vec![pk(b"ab"), pk(b"cd")]),
        )
        .unwrap();
        let mut got = [0u8; 4];
        t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        t.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abcd");
        assert_eq!(handler(&r, "s.sent"), "2");
        // LOCALIP/LOCALPORTNUMBER: bound before connecting (CLIENT implied).
        let lport = free_port();
        let r2 = build(
            &full_registry(),
            &format!("Idle -> s :: Socket(TCP, 127.0.0.1, {port}, 127.0.0.1, {lport});"),
        );
        let (_t2, from) = l.accept().unwrap();
        assert_eq!(from.port(), lport);
        drop(r2);
        // Nobody listening: a clear initialization error.
        drop(l);
        let e = build_err(
            &full_registry(),
            &format!("Idle -> Socket(TCP, 127.0.0.1, {port}, CLIENT true);"),
        );
        assert!(e.contains("refused") || e.contains("127.0.0.1"), "{e}");
    }

    #[test]
    fn udp_server_replies_to_last_peer_and_client_sends() {
        let port = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = build(
            &full_registry(),
            &format!("s :: Socket(UDP, 127.0.0.1, {port}) -> Queue -> s;"),
        );
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        std::thread::scope(|sc| {
            sc.spawn(|| {
                peer.send_to(b"datagram one", ("127.0.0.1", port)).unwrap();
                let mut buf = [0u8; 64];
                let (n, from) = peer.recv_from(&mut buf).unwrap();
                assert_eq!(&buf[..n], b"datagram one");
                assert_eq!(from.port(), port);
                r.stop();
            });
            r.run();
        });
        // A client sending to a listener.
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let rport = rx.local_addr().unwrap().port();
        let r = build(
            &full_registry(),
            &format!("Idle -> s :: Socket(UDP, 127.0.0.1, {rport}, CLIENT true);"),
        );
        r.push_into(
            "s",
            0,
            paraclick_packet::Batch::from(vec![
                paraclick_packet::Packet::from_slice(b"x1").unwrap()
            ]),
        )
        .unwrap();
        let mut buf = [0u8; 16];
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"x1");
    }

    #[test]
    fn a_full_datagram_peer_is_ring_full_and_a_missing_one_send_failed() {
        let dir = tempfile::tempdir().unwrap();
        let peer = dir.path().join("slow.sock");
        // A peer that never reads: its queue fills, and sends then find
        // the socket's buffer full for now.
        let slow = UnixDatagram::bind(&peer).unwrap();
        let r = build(
            &full_registry(),
            &format!(
                "Idle -> s :: Socket(UNIX_DGRAM, {}, CLIENT true);",
                q(&peer)
            ),
        );
        let pk = || paraclick_packet::Packet::from_slice(&[7u8; 1000]).unwrap();
        for _ in 0..10 {
            r.push_into(
                "s",
                0,
                paraclick_packet::Batch::from((0..100).map(|_| pk()).collect::<Vec<_>>()),
            )
            .unwrap();
        }
        let sent: u64 = handler(&r, "s.sent").parse().unwrap();
        let drops: u64 = handler(&r, "s.drops").parse().unwrap();
        assert!(
            sent > 0 && drops > 0 && sent + drops == 1000,
            "{sent} sent, {drops} dropped"
        );
        assert_eq!(
            handler(&r, "s.drop_reasons"),
            format!("ring full {drops}\n")
        );
        // Gone for good: a refusal, not a full buffer.
        drop(slow);
        std::fs::remove_file(&peer).unwrap();
        r.push_into("s", 0, paraclick_packet::Batch::from(vec![pk(), pk()]))
            .unwrap();
        assert_eq!(
            handler(&r, "s.drop_reasons"),
            format!("send failed 2\nring full {drops}\n")
        );
    }

    #[test]
    fn unix_stream_and_datagram_sockets() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("stream.sock");
        let l = UnixListener::bind(&sp).unwrap();
        let r = build(
            &full_registry(),
            &format!("Idle -> s :: Socket(UNIX, {}, CLIENT true);", q(&sp)),
        );
        let (mut u, _) = l.accept().unwrap();
        r.push_into(
            "s",
            0,
            paraclick_packet::Batch::from(vec![
                paraclick_packet::Packet::from_slice(b"unix!").unwrap()
            ]),
        )
        .unwrap();
        let mut got = [0u8; 5];
        u.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"unix!");

        // A datagram server echoing to its last peer.
        let dp = dir.path().join("dgram.sock");
        let r = build(
            &full_registry(),
            &format!("s :: Socket(UNIX_DGRAM, {}) -> Queue -> s;", q(&dp)),
        );
        let cp = dir.path().join("client.sock");
        let c = UnixDatagram::bind(&cp).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        std::thread::scope(|sc| {
            sc.spawn(|| {
                c.send_to(b"dgram", &dp).unwrap();
                let mut buf = [0u8; 16];
                let n = c.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], b"dgram");
                r.stop();
            });
            r.run();
        });
        drop(r);
        assert!(!dp.exists(), "the server's socket file is removed");

        // A stream server.
        let sp2 = dir.path().join("server.sock");
        let r = build(
            &full_registry(),
            &format!("s :: Socket(UNIX, {}) -> Queue -> s;", q(&sp2)),
        );
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut u = UnixStream::connect(&sp2).unwrap();
                u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                u.write_all(b"ping").unwrap();
                let mut got = [0u8; 4];
                u.read_exact(&mut got).unwrap();
                assert_eq!(&got, b"ping");
                r.stop();
            });
            r.run();
        });
    }

    #[test]
    fn bad_configurations() {
        for (conf, msg) in [
            ("Idle -> Socket(SCTP, 127.0.0.1, 1);", "TYPE"),
            ("Idle -> Socket(TCP, 127.0.0.1);", "PORTNUMBER"),
            ("Idle -> Socket(TCP, 127.0.0.1, 1, ALLOW r);", "ALLOW"),
            ("Idle -> Socket(UDP, 127.0.0.1, 1, SNAPLEN 0);", "SNAPLEN"),
        ] {
            let e = build_err(&full_registry(), conf);
            assert!(e.contains(msg), "{conf}: {e}");
        }
    }
}
