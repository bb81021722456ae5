//! # McastSocket
//!
//! McastSocket(MCASTIP, MCASTPORT [, SOURCEIP] [, SOURCEPORT] [, keywords LOOP, SNAPLEN, SNDBUF, RCVBUF, TIMESTAMP, HEADROOM])
//!
//! Transports packets over multicast UDP (user-level).
//!
//! Ports: 0 or 1 inputs, 0 or 1 outputs. Processing: agnostic input, push
//! output (`a/h`).
//!
//! Packets do not flow through McastSocket: each packet arriving on its
//! input is sent, whole, as the payload of one UDP datagram to the
//! multicast group MCASTIP, port MCASTPORT; every datagram sent to the
//! group and port that this host receives leaves on the output, its
//! payload as the packet's data. Any number of processes, on this host or
//! others, can so exchange packets (QEMU's `-net socket,mcast=` speaks
//! the same).
//!
//! With SOURCEIP (and optionally SOURCEPORT), datagrams are sent from that
//! address, and multicast is sent and received on the interface that has
//! it (`127.0.0.1`: this host only). Without SOURCEIP the routing table
//! picks the interface and source. The receiving socket listens on the
//! group's address and port, so it receives the element's own datagrams
//! too when LOOP is true: with SOURCEIP, McastSocket drops those (a
//! datagram from its own sending address and port); without it, LOOP
//! false keeps them away, but also keeps away every other process's on
//! this host.
//!
//! A pushed packet is sent at once (a datagram the kernel refuses, such
//! as one longer than 65507 bytes, is a counted drop); a pull input is
//! pulled by McastSocket's task. The task also reads up to 32 datagrams
//! a run. A datagram is whatever a peer sends: it is not parsed; one
//! longer than SNAPLEN is cut to SNAPLEN bytes (and counted in
//! `truncated`); an empty one is an empty packet.
//!
//! Arguments:
//! - `MCASTIP` (IPv4 multicast address), `MCASTPORT` (UDP port): the group.
//! - `SOURCEIP` (IPv4 address), `SOURCEPORT` (UDP port, default any): the
//!   sending address, and the interface used.
//! - `LOOP` (boolean, default true): local processes, this one included,
//!   receive copies of what is sent (IP_MULTICAST_LOOP).
//! - `SNAPLEN` (unsigned 1-65535, default 2048): the most bytes kept of a
//!   received datagram.
//! - `SNDBUF`, `RCVBUF` (unsigned): socket buffer sizes (default: the
//!   system's).
//! - `TIMESTAMP` (boolean, default true): received packets are stamped
//!   with the time they were read.
//! - `HEADROOM` (unsigned, default 28): headroom of received packets.
//!
//! Handlers:
//! - `sent`, `received` (read): datagrams sent and received (own
//!   datagrams dropped by the loop filter not counted).
//! - `drops` (read): input packets that could not be sent: dropped for
//!   `ring full` when the send buffer is full for now (`EAGAIN`,
//!   `ENOBUFS`), for `send failed` otherwise.
//! - `truncated` (read): received datagrams cut to SNAPLEN.
//!
//! Example:
//!
//!     RatedSource("hello", LIMIT 5, STOP true)
//!       -> McastSocket(233.252.0.0, 1234, 127.0.0.1)
//!       -> Print(got, CONTENTS ASCII) -> Discard;

use super::socket::{received_packet, Sent};
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind, PerThreadCount,
};
use rustix::io::Errno;
use rustix::net::{self, sockopt, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Datagrams read per task run.
const READ_BURST: usize = 32;

pub struct McastSocket {
    group: SocketAddrV4,
    source: Option<SocketAddrV4>,
    lp: bool,
    snaplen: usize,
    sndbuf: Option<usize>,
    rcvbuf: Option<usize>,
    timestamp: bool,
    headroom: usize,
    pull_input: bool,
    has_output: bool,
    socks: OnceLock<Socks>,
    drops: PerThreadCount,
    sent: AtomicU64,
    received: AtomicU64,
    truncated: AtomicU64,
}

struct Socks {
    send: OwnedFd,
    recv: OwnedFd,
    /// The sending socket's address, when SOURCEIP fixes it: datagrams
    /// from it are our own.
    own: Option<SocketAddrV4>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["send failed", "ring full"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("McastSocket", "0-1/0-1", "a/h", make)
        .drop_reasons(DROP_REASONS)
        .shared("a device: one socket for all flows")
        .kind(Kind::Device)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<McastSocket, String> {
    let mut a = cx.args();
    let ip: Ipv4Addr = a.read_mp("MCASTIP");
    let port: u16 = a.read_mp("MCASTPORT");
    let sip: Option<Ipv4Addr> = a.read_p("SOURCEIP");
    let sport: Option<u16> = a.read_p("SOURCEPORT");
    let lp: bool = a.read("LOOP").unwrap_or(true);
    let snaplen: usize = a.read("SNAPLEN").unwrap_or(2048);
    let sndbuf: Option<usize> = a.read("SNDBUF");
    let rcvbuf: Option<usize> = a.read("RCVBUF");
    let timestamp: bool = a.read("TIMESTAMP").unwrap_or(true);
    let headroom: usize = a.read("HEADROOM").unwrap_or(28);
    a.complete()?;
    if !ip.is_multicast() {
        return Err(format!("MCASTIP: {ip} is not a multicast address"));
    }
    if port == 0 {
        return Err("MCASTPORT: expected a port 1-65535".into());
    }
    if !(1..=65535).contains(&snaplen) {
        return Err("SNAPLEN must be between 1 and 65535".into());
    }
    if headroom > 4096 {
        return Err("HEADROOM must be at most 4096".into());
    }
    if sport.is_some() && sip.is_none() {
        return Err("SOURCEPORT needs SOURCEIP".into());
    }
    if sip.is_some_and(|s| s.is_multicast() || s.is_broadcast()) {
        return Err("SOURCEIP: expected a unicast address".into());
    }
    Ok(McastSocket {
        group: SocketAddrV4::new(ip, port),
        source: sip.map(|s| SocketAddrV4::new(s, sport.unwrap_or(0))),
        lp,
        snaplen,
        sndbuf,
        rcvbuf,
        timestamp,
        headroom,
        pull_input: cx.ninputs > 0 && cx.input_is_pull(0),
        has_output: cx.noutputs > 0,
        socks: OnceLock::new(),
        drops: PerThreadCount::new(cx.nthreads),
        sent: AtomicU64::new(0),
        received: AtomicU64::new(0),
        truncated: AtomicU64::new(0),
    })
}

fn udp_socket() -> std::io::Result<OwnedFd> {
    Ok(net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?)
}

impl McastSocket {
    fn open(&self) -> std::io::Result<Socks> {
        let iface = self.source.map_or(Ipv4Addr::UNSPECIFIED, |s| *s.ip());
        // Receiving: the group's address and port, shared with any other
        // process listening there; a member of the group on the interface.
        let recv = udp_socket()?;
        sockopt::set_socket_reuseaddr(&recv, true)?;
        let _ = sockopt::set_socket_reuseport(&recv, true);
        if let Some(n) = self.rcvbuf {
            sockopt::set_socket_recv_buffer_size(&recv, n)?;
        }
        net::bind(&recv, &self.group)?;
        sockopt::set_ip_add_membership(&recv, self.group.ip(), &iface)?;
        // Sending: from SOURCEIP (a port of its own), on its interface.
        let send = udp_socket()?;
        if let Some(n) = self.sndbuf {
            sockopt::set_socket_send_buffer_size(&send, n)?;
        }
        sockopt::set_ip_multicast_loop(&send, self.lp)?;
        let mut own = None;
        if let Some(src) = self.source {
            sockopt::set_ip_multicast_if(&send, src.ip())?;
            net::bind(&send, &src)?;
            own = SocketAddrV4::try_from(net::getsockname(&send)?).ok();
        }
        Ok(Socks { send, recv, own })
    }

    fn send(&self, s: &Socks, d: &[u8]) -> Sent {
        loop {
            if let Some(r) = Sent::of_sendto(
                net::sendto(&s.send, d, SendFlags::empty(), &self.group),
                d.len(),
            ) {
                return r;
            }
        }
    }

    /// Reads up to `max` datagrams (own ones dropped).
    fn receive(&self, s: &Socks, max: usize) -> Vec<paraclick_packet::Packet> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; self.snaplen];
        let mut reads = 0;
        // Own datagrams count as reads too: a flood of them cannot hold
        // the task.
        while reads < max {
            reads += 1;
            let (n, from) = match net::recvfrom(&s.recv, &mut buf[..], RecvFlags::TRUNC) {
                Ok((_, n, from)) => (n, from),
                Err(Errno::INTR) => continue,
                Err(_) => break,
            };
            if s.own.is_some() && from.and_then(|f| SocketAddrV4::try_from(f).ok()) == s.own {
                continue;
            }
            // With TRUNC, n is the datagram's whole length.
            if n > buf.len() {
                self.truncated.fetch_add(1, Ordering::Relaxed);
            }
            let d = &buf[..n.min(buf.len())];
            if let Some(p) = received_packet(self.headroom, d, self.timestamp) {
                out.push(p);
            }
        }
        out
    }
}

impl Element for McastSocket {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::read("sent", |e, _| e.sent.load(Ordering::Relaxed).to_string()),
        Handler::read("received", |e, _| {
            e.received.load(Ordering::Relaxed).to_string()
        }),
        Handler::read("truncated", |e, _| {
            e.truncated.load(Ordering::Relaxed).to_string()
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        crate::common::add_socket_task(ix, self.pull_input, self.has_output);
        if ix.checking() {
            return Ok(());
        }
        let s = self
            .open()
            .map_err(|e| format!("McastSocket {}: {e}", self.group))?;
        let _ = self.socks.set(s);
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        let to = self.socks.get();
        super::socket::send_each(cx, batch, &self.sent, &self.drops, |d| {
            to.map_or(Sent::Failed, |s| self.send(s, d))
        });
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let mut work = false;
        if self.pull_input {
            if let Some(b) = cx.pull(0, READ_BURST) {
                work = true;
                self.push(cx, 0, b);
            }
        }
        if self.has_output {
            if let Some(s) = self.socks.get() {
                let got = self.receive(s, READ_BURST);
                if !got.is_empty() {
                    work = true;
                    self.received.fetch_add(got.len() as u64, Ordering::Relaxed);
                    cx.push(0, Batch::from(got));
                }
            }
        }
        work
    }
}

#[cfg(test)]
mod tests {
    use crate::linux::tap::{configure, open_tap, root_or_skip, unshare_netns, TapSetup};
    use crate::test_util::*;
    use paraclick_packet::Packet;
    use std::time::{Duration, Instant};

    #[test]
    fn bad_configurations() {
        for (conf, msg) in [
            ("McastSocket(10.0.0.1, 1234)", "not a multicast address"),
            ("McastSocket(233.252.0.0)", "MCASTPORT"),
            ("McastSocket(233.252.0.0, 0)", "MCASTPORT"),
            ("McastSocket(233.252.0.0, 70000)", "MCASTPORT"),
            ("McastSocket(233.252.0.0, 1, SNAPLEN 0)", "SNAPLEN"),
            ("McastSocket(233.252.0.0, 1, SNAPLEN 70000)", "SNAPLEN"),
            ("McastSocket(233.252.0.0, 1, 224.0.0.1)", "unicast"),
            ("McastSocket(233.252.0.0, 1, FROB 1)", "FROB"),
        ] {
            let e = build_err(&full_registry(), &format!("Idle -> {conf} -> Discard;"));
            assert!(e.contains(msg), "{conf}: {e}");
        }
        let doc = full_registry().doc("McastSocket").expect("documented");
        assert!(doc.starts_with("McastSocket(MCASTIP"), "{doc}");
    }

    fn texts(v: &[Packet]) -> Vec<String> {
        v.iter()
            .map(|p| String::from_utf8_lossy(p.data()).into_owned())
            .collect()
    }

    /// Two McastSockets on one group and interface: each gets the
    /// other's datagrams and never its own; LOOP false keeps the sender's
    /// datagrams from every local socket. On a tap device of a network
    /// namespace of the test's own (on `lo` every datagram comes back in,
    /// whatever LOOP says); nothing reads the device.
    #[test]
    fn loop_filter_and_loop_false() {
        if !root_or_skip("McastSocket loop test") {
            return;
        }
        std::thread::spawn(|| {
            unshare_netns();
            configure("lo", &TapSetup::default()).expect("loopback up");
            let (_tap, name) = open_tap("mc%d").expect("tap device");
            let setup = TapSetup {
                dst: Some("198.18.0.1/24".parse().unwrap()),
                ..TapSetup::default()
            };
            configure(&name, &setup).expect("tap up");
            let r = build(
                &full_registry(),
                "InfiniteSource(DATA \"from a\", LIMIT 3, STOP false)
                   -> a :: McastSocket(233.252.0.7, 41234, 198.18.0.1) -> sa :: TestSink;
                 InfiniteSource(DATA \"from b\", LIMIT 3, STOP false)
                   -> b :: McastSocket(233.252.0.7, 41234, 198.18.0.1, LOOP false)
                   -> sb :: TestSink;
                 InfiniteSource(DATA \"from c\", LIMIT 3, STOP false)
                   -> c :: McastSocket(233.252.0.7, 41234, 198.18.0.1) -> sc :: TestSink;",
            );
            let mut got = [Vec::new(), Vec::new(), Vec::new()];
            let take = |got: &mut [Vec<Packet>; 3]| {
                for (g, s) in got.iter_mut().zip(["sa", "sb", "sc"]) {
                    g.extend(r.element::<TestSink>(s).unwrap().take());
                }
            };
            std::thread::scope(|s| {
                s.spawn(|| r.run());
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(5)
                    && (got[0].len() < 3 || got[1].len() < 6 || got[2].len() < 3)
                {
                    std::thread::sleep(Duration::from_millis(10));
                    take(&mut got);
                }
                // Time for anything that should not arrive to arrive.
                std::thread::sleep(Duration::from_millis(200));
                take(&mut got);
                r.stop();
            });
            let sorted = |v: &[Packet]| {
                let mut t = texts(v);
                t.sort();
                t
            };
            // a hears c, b hears a and c, c hears a; b is heard by none.
            assert_eq!(sorted(&got[0]), ["from c"; 3]);
            assert_eq!(
                sorted(&got[1]),
                ["from a", "from a", "from a", "from c", "from c", "from c"]
            );
            assert_eq!(sorted(&got[2]), ["from a"; 3]);
            assert_eq!(handler(&r, "b.sent"), "3");
            assert_eq!(handler(&r, "b.received"), "6");
        })
        .join()
        .unwrap();
    }

    /// Datagrams are a peer's to choose: one longer than SNAPLEN is cut
    /// and counted, an empty one is an empty packet, and nothing panics.
    #[test]
    fn long_and_empty_datagrams_are_bounded() {
        if !root_or_skip("McastSocket loopback test") {
            return;
        }
        std::thread::spawn(|| {
            unshare_netns();
            configure("lo", &TapSetup::default()).expect("loopback up");
            let r = build(
                &full_registry(),
                "m :: McastSocket(233.252.0.9, 41235, 127.0.0.1, SNAPLEN 100) -> s :: TestSink;",
            );
            let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let fd = std::os::fd::AsFd::as_fd(&peer);
            rustix::net::sockopt::set_ip_multicast_if(fd, &std::net::Ipv4Addr::LOCALHOST).unwrap();
            let mut got = Vec::new();
            std::thread::scope(|s| {
                s.spawn(|| r.run());
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(5) && got.len() < 3 {
                    for d in [vec![0xabu8; 60_000], Vec::new(), vec![7u8; 10]] {
                        let _ = peer.send_to(&d, "233.252.0.9:41235");
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    got.extend(r.element::<TestSink>("s").unwrap().take());
                }
                r.stop();
            });
            assert!(got.len() >= 3, "{}", got.len());
            let lens: Vec<usize> = got[..3].iter().map(|p| p.len()).collect();
            assert_eq!(lens, [100, 0, 10]);
            assert!(got[0].data().iter().all(|&b| b == 0xab));
            assert!(handler(&r, "m.truncated").parse::<u64>().unwrap() >= 1);
        })
        .join()
        .unwrap();
    }
}
