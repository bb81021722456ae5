//! # FromDevice
//!
//! FromDevice(DEVNAME [, PROMISC, SNAPLEN, keywords SNIFFER, BURST, QUEUE, N_QUEUES, FANOUT, OUTBOUND, TIMESTAMP, FORCE_IP, RING_SIZE, BPF_FILTER, PRIORITY, PRIORITY_FILTER, PRIORITY_RING_SIZE, TPACKET, REPLICAS, METHOD, XDP_MODE, ZEROCOPY, PASS, SHARE_UMEM])
//!
//! Reads packets from a Linux network device (AF_PACKET, TPACKET_V2 or V3 ring).
//!
//! Ports: no inputs, 1 output. Processing: push.
//!
//! Receives the frames arriving on the Linux interface DEVNAME through an
//! AF_PACKET socket with a memory-mapped receive ring, and pushes them
//! out of output 0, link header included. FromDevice owns a task that
//! polls the ring without blocking: each run emits one batch of at most
//! BURST packets (each copied into a pooled packet) and reports no work
//! when the ring holds none. By default the ring is a TPACKET_V2 ring of
//! 2 KiB frame slots, each handed over as soon as the kernel has written
//! its frame: a lone packet waits for nothing but the reader. A frame
//! longer than a slot (a 64 KB super-frame) also waits whole on the
//! socket, where FromDevice reads it. `TPACKET 3` asks for a TPACKET_V3
//! ring instead, of 128 KiB blocks of variable-sized frames, which the
//! kernel hands over when a block is full or, at the latest, 1 ms after
//! the block's timer starts: denser (about 900 small frames a block
//! against 64), but every packet of a trickle waits up to 1 ms (a ping
//! through an idle router on veth took 1.1 ms instead of 0.14 ms).
//!
//! CPU follows the load: a run that finds nothing says that the socket's
//! becoming readable will give it work, and a worker whose tasks are all
//! so idle (or asleep, or paced sources between packets) waits in
//! `poll(2)` on the sockets after about 20 µs without work, so an idle
//! router uses almost no CPU and the kernel wakes the worker when a
//! block is handed over. `paraclick --busy-poll` keeps the workers
//! polling instead, for the lowest latency at a core per worker.
//!
//! Each packet gets its link (MAC) header annotation, its timestamp (the
//! kernel's receive time), the packet type annotation (`HOST`,
//! `BROADCAST`, `MULTICAST`, `OTHERHOST`), the device annotation (the
//! interface index), the flow hash annotation (the kernel's receive hash;
//! 0 with TPACKET 2),
//! and, when the frame was longer than SNAPLEN, the extra length
//! annotation. A VLAN tag the kernel took off is put back in the frame
//! (and its TCI in the VLAN annotation). Frames the host itself sends on
//! the device (`OUTGOING`, such as ToDevice's) are not emitted unless
//! OUTBOUND is true.
//!
//! Offloads. A veth or virtual device passes on what its sender built:
//! TCP/UDP super-frames of up to 64 KB (GSO) and checksums covering only
//! the pseudo-header (checksum offload). FromDevice reads every frame with
//! its virtio-net header (`PACKET_VNET_HDR`), completes partial checksums
//! and cuts super-frames into wire-sized packets (TCP and UDP over IPv4
//! and IPv6) in software, so the router only ever sees packets a wire
//! could carry, with correct checksums. A super-frame it cannot cut
//! (UFO, IPv6 extension headers) is dropped and counted, never forwarded.
//! At initialization it also turns off generic receive offload (GRO) on
//! DEVNAME (restored when the router ends), so the kernel does not merge
//! received packets into super-frames for it to cut again. The
//! transmit-side offloads of DEVNAME itself do not matter: ToDevice's
//! frames are complete when they reach the kernel.
//!
//! SNIFFER. As in Click, FromDevice is a sniffer by default: the kernel
//! also processes the packets it receives. With `SNIFFER false` it takes
//! DEVNAME away from the kernel's stack while the router runs: it refuses
//! to start if DEVNAME has an IPv4 address (the kernel would answer for
//! it), and turns off IPv6 (`disable_ipv6`), IPv4 forwarding, ARP
//! replies (`arp_ignore 8`) and IPv4 input (strict reverse-path
//! filtering, `rp_filter 1`: Linux accepts packets for any of the host's
//! addresses on any interface, such as the router's addresses on
//! FromHost's taps) on DEVNAME, restoring them when the router ends. Run
//! a router on interfaces without addresses, and without routes of the
//! host's through them.
//!
//! Multiple queues. `N_QUEUES n` with `QUEUE i` (0 <= i < n) makes this
//! element one of n FromDevice elements reading DEVNAME together: they
//! join one PACKET_FANOUT group, and the kernel deals each flow to one of
//! them (software receive-side scaling). Put each on its own thread with
//! StaticThreadSched. Together the elements reading DEVNAME must read
//! each of its n queues exactly once, with the same N_QUEUES, FANOUT and
//! OUTBOUND:
//! n FromDevice elements with distinct QUEUE numbers, or some of the
//! queues read by MultiFromDevice elements (which poll several queues,
//! of one device or several, in one task).
//!
//! Priority path for control traffic. Under overload the receive ring
//! stays full, and a frame waits behind everything in it: a ping to the
//! router, an ARP request, a routing protocol's hello wait as long as the
//! flood (hundreds of milliseconds) and are lost as often. With
//! `PRIORITY true` (or a `PRIORITY_FILTER`), FromDevice classifies before
//! the drop point, as a router's NIC priority queues or Linux's control
//! plane policing do: it opens a second AF_PACKET socket on DEVNAME with
//! a small ring of its own (PRIORITY_RING_SIZE) and a kernel socket
//! filter (classic BPF) that takes only the frames PRIORITY_FILTER
//! matches, and gives the main ring the complementary filter, so each
//! frame reaches exactly one of the two rings (none twice, none lost
//! between them). Each task run reads the priority ring first, up to
//! BURST packets, then the main ring, up to BURST packets, and pushes
//! both out of output 0, priority packets first: a control frame waits
//! for one task run (with `TPACKET 3`, and the ring's 1 ms block
//! timeout), not for the backlog, and a flood matching PRIORITY_FILTER still leaves the main
//! ring half of each run. The default PRIORITY_FILTER is `arp or icmp or
//! icmp6`: address resolution, ICMP (pings to the router, errors) and
//! ICMPv6 (neighbour discovery). It matches ICMP passing through the
//! router too; narrow it to the router's own addresses when that matters,
//! e.g. `PRIORITY_FILTER "arp or (icmp and dst host 10.0.1.1)"`, or widen
//! it to a routing protocol (`or tcp port 179`). With several queues
//! (N_QUEUES), the element reading QUEUE 0 opens the device's one
//! priority ring (outside the fanout group), and every element reading
//! the device must give the same BPF_FILTER and PRIORITY_FILTER. On
//! conf/iprouter-veth.click offered twice its loss-free rate (a router
//! with 35% of a CPU), pings to the router went from 12 of 20 lost and
//! 276 ms on average to none lost and 3.9 ms (medians of 5 runs of
//! `ROUTER_CPU=35 CURVE=0 scripts/livelock-veth.sh`, see the README),
//! forwarding unchanged within the runs' noise.
//!
//! Filters are tcpdump expressions (pcap-filter(7)), compiled by libpcap
//! for Ethernet frames when the configuration is read: a bad expression
//! is a configuration error naming the keyword. The kernel runs them on
//! the frame as received, VLAN tag already taken off (so `vlan` does not
//! match). Give addresses as numbers: a host name is looked up when the
//! configuration is read.
//!
//! Arguments:
//! - `DEVNAME` (string): the interface name.
//! - `SNIFFER` (boolean, default true): see above.
//! - `PROMISC` (boolean, default false): put the device in promiscuous
//!   mode while the router runs.
//! - `BURST` (unsigned, default 32): most packets emitted per task run.
//! - `SNAPLEN` (unsigned, default 2046): longer frames are cut to this
//!   length (after segmentation).
//! - `QUEUE` (unsigned, default 0), `N_QUEUES` (unsigned, default 1): see
//!   above.
//! - `FANOUT` (word, default `HASH`): how the kernel deals frames among
//!   the N_QUEUES elements: `HASH` (by flow), `LB` (round robin), `CPU`
//!   (by receiving CPU: CPU c's frames to QUEUE c mod N_QUEUES), `RND`
//!   (random), `QM` (by device queue: queue q's frames to QUEUE q mod
//!   N_QUEUES), `ROLLOVER` (fill one, then the next). The kernel numbers
//!   a group's sockets in the order they join and deals by that number;
//!   the sockets join in QUEUE order whatever order the elements are
//!   opened in (a queue opened early takes no frame until the queues
//!   before it have joined), so the numbers are the QUEUE numbers. With
//!   `CPU`, QUEUE i on thread i (StaticThreadSched) and the workers
//!   pinned (thread i on the i-th allowed CPU), a frame is read on the
//!   CPU that received it: conf/iprouter-veth-2q.click does so.
//! - `OUTBOUND` (boolean, default false): also emit the frames this host
//!   sends on DEVNAME (packet type `OUTGOING`). Without it the kernel
//!   does not copy them into the ring (PACKET_IGNORE_OUTGOING; with
//!   N_QUEUES, the fanout group's flag), so a router's own ToDevice on
//!   DEVNAME costs its FromDevice nothing.
//! - `TIMESTAMP` (boolean, default true): set the timestamp annotation.
//! - `FORCE_IP` (boolean, default false): emit only IPv4 packets (link
//!   header kept, network header annotation set); drop the rest.
//! - `REPLICAS` (element names, space-separated; a paraclick keyword):
//!   the FromDevices reading the device's other queues, when `paraclick
//!   parallelize` splits one FromDevice by its device's queues (its device
//!   fanout): this element's `count`, `drops` and `kernel_drops` then
//!   report the sums over itself and them, so the name the user reads
//!   keeps its meaning; `reset_counts` resets them all.
//! - `RING_SIZE` (bytes, default 16 MiB, rounded up to 128 KiB blocks, at
//!   most 1 GiB): the kernel's receive ring (paraclick's own keyword):
//!   8192 frame slots by default (64 a block). With `TPACKET 3` the
//!   kernel hands a block over when it is full or within 1 ms, so at low
//!   rates the ring absorbs as many milliseconds of the reader's absence
//!   (a busy or throttled CPU) as it has blocks: 128 by default, 4 at
//!   512 KiB (a router limited to 35% of a CPU then lost a fifth of 781
//!   packets/s); the default V2 ring absorbs 8192 frames, whatever their
//!   rate. Under overload the ring stays full and everything read, a ping
//!   to the router included, has waited behind it: for small frames about
//!   8192 / the forwarding rate (V2), or RING_SIZE / (128 bytes x the
//!   forwarding rate) with `TPACKET 3`, over a second for 16 MiB at
//!   100 kpps; PRIORITY takes control frames past it.
//! - `BPF_FILTER` (string, default empty: all frames): a tcpdump filter
//!   expression; only matching frames are emitted (Click's keyword). The
//!   kernel drops the others before the ring; they are not counted.
//! - `PRIORITY` (boolean, default false, true if PRIORITY_FILTER is
//!   given): the priority path for control traffic (see above), with
//!   PRIORITY_FILTER or, if that is not given, `arp or icmp or icmp6`.
//!   `PRIORITY false` turns it off even with a PRIORITY_FILTER.
//! - `PRIORITY_FILTER` (string): a tcpdump expression choosing the frames
//!   of the priority path (those BPF_FILTER also accepts).
//! - `PRIORITY_RING_SIZE` (bytes, default 2 MiB, rounded up to 128 KiB
//!   blocks): the priority ring. Its 16 blocks absorb 16 ms of the
//!   reader's absence at low rates; a control flood fills it and is
//!   dropped there (counted in `priority_drops`), not in the main ring.
//! - `TPACKET` (2 or 3, default 2; paraclick's own keyword): the version
//!   of the kernel's receive ring (and of the priority ring), see above:
//!   2 hands each frame over at once, 3 hands blocks over, a trickle's
//!   frames up to 1 ms late. At rate both read frames in batches of
//!   BURST; on veth (`scripts/bench-veth.sh`, -j 1) they forwarded
//!   alike, see docs/AF_XDP.md. A V2 frame carries no receive hash: with
//!   `TPACKET 2` the flow hash annotation is 0.
//! - `METHOD` (word, default `LINUX`): Click's choice of capture method.
//!   `LINUX`, `PCAP` and `NETMAP` all read through the AF_PACKET ring
//!   described above. `XDP` reads through an AF_XDP socket instead (see
//!   "METHOD XDP" below); other values are errors.
//! - `XDP_MODE` (word, default `AUTO`; METHOD XDP only): where the XDP
//!   program runs: `NATIVE` (in the driver), `GENERIC` (SKB mode, any
//!   device), or `AUTO` (native where the driver has it, else generic).
//! - `ZEROCOPY` (boolean; METHOD XDP only): true insists on zero-copy,
//!   false asks for copy mode; by default zero-copy where the driver
//!   supports it, copy mode elsewhere.
//! - `SHARE_UMEM` (boolean, default true; METHOD XDP only): the queue's
//!   socket shares one UMEM with the router's other AF_XDP sockets, so
//!   that a frame read here leaves by any METHOD XDP ToDevice without a
//!   copy; false gives it a UMEM of its own (every forwarded packet is
//!   then copied into the output's frame). Give the same to every
//!   element of the device queue. Sockets that join the UMEM are bound
//!   in its first socket's mode; one whose ZEROCOPY asks for the other
//!   gets its own.
//! - `PASS` (string; METHOD XDP only): the frames the device's XDP
//!   program passes to the kernel's stack (XDP_PASS) instead of the
//!   router: the host's own traffic the router does not handle. A small
//!   part of tcpdump's language: alternatives joined by `or`, each of
//!   `arp`, `ip`, `ip6`, `icmp`, `icmp6`, `tcp`, `udp`, `dst host ADDR`
//!   (with `arp`, the address asked for) and `dst port N` joined by
//!   `and`, at most 16 alternatives; for example `PASS "arp and dst host
//!   10.0.1.100 or dst host 10.0.1.100"` gives the kernel everything for
//!   its address 10.0.1.100 on the device. The program is then the
//!   router's own (built from `xdp_pass.bpf.c` with the router, the
//!   filter written into its map) instead of libxdp's. Every METHOD XDP
//!   reader of the device must give the same PASS (the device has one
//!   program). See docs/AF_XDP.md.
//!
//! METHOD XDP. FromDevice opens an AF_XDP socket on receive queue QUEUE
//! of DEVNAME (with N_QUEUES n, the device must have exactly n receive
//! queues, one FromDevice or MultiFromDevice argument reading each: the
//! driver's hashing, not a fanout group, deals the flows), through
//! libxdp, whose default XDP program redirects each queue's frames to the
//! socket bound to it (see docs/AF_XDP.md), or with PASS the router's
//! own program, which does the same for the frames PASS does not match.
//! Each task run takes up to BURST frames from the receive ring; each frame becomes its packet's
//! buffer without a copy, and returns to the fill ring (in batches) when
//! the packet is freed, on whatever thread, or once a ToDevice of the
//! same socket has sent it without a copy. While packets hold so many
//! frames that fewer than a quarter (2,048) would stay with the kernel,
//! new frames are copied into pooled buffers instead and go straight
//! back; a frame that finds no buffer either is dropped (`UMEM frame
//! shortage`), so the fill ring never runs dry. When the ring is empty
//! and the kernel asks for a wake-up (need-wakeup), FromDevice wakes it.
//! Idle, its worker waits in `poll(2)` on the AF_XDP socket as above
//! (readable when the receive ring has frames). With `--busy-poll` the
//! socket uses the kernel's preferred busy polling (SO_PREFER_BUSY_POLL,
//! SO_BUSY_POLL, SO_BUSY_POLL_BUDGET): each read that finds the receive
//! ring empty makes a `recvfrom`, which runs the queue's NAPI poll in the
//! router's thread; set the device's `napi_defer_hard_irqs` and
//! `gro_flush_timeout` (see docs/AF_XDP.md) so that the kernel leaves the
//! queue to it.
//! Packets get the link header, device and timestamp (the time read)
//! annotations and the packet type from the destination address; SNAPLEN
//! applies. The frames are the router's: the kernel sees none of them,
//! whatever SNIFFER says; a ToDevice(DEVNAME, METHOD XDP) writing the same
//! queue shares the socket, and every AF_XDP socket of the router shares
//! one UMEM (SHARE_UMEM), each with its own frames, so that a frame read
//! here is sent out of another device without a copy. RING_SIZE, FANOUT and OUTBOUND apply to the
//! AF_PACKET ring only; BPF_FILTER, PRIORITY and PRIORITY_FILTER are
//! errors with METHOD XDP. A program a router that crashed left on the
//! device is removed, with a message, when the next one starts; one of
//! another program is an error.
//!
//! `PollDevice` is another name for FromDevice (Click's kernel-module
//! polling device reader).
//!
//! Handlers:
//! - `count` (read): packets emitted (from both rings).
//! - `drops` (read): frames lost: dropped by the kernel because the ring
//!   was full (`PACKET_STATISTICS`), plus frames FromDevice dropped itself
//!   (no packet buffer, a super-frame it could not cut, FORCE_IP).
//! - `kernel_drops` (read): the kernel's ring drops alone (Click's name).
//! - `kernel_count` (read): frames the kernel gave the AF_PACKET rings
//!   or dropped at them (`PACKET_STATISTICS`), whether emitted or not:
//!   more than `count` plus `drops` when the rings got frames FromDevice
//!   skips (the host's outgoing frames without OUTBOUND, which the
//!   kernel keeps out of the rings, fanout groups included, since Linux
//!   6.9). 0 with METHOD XDP.
//! - `reset_counts` (write): resets `count`, `kernel_count` and the drop
//!   counts.
//! - `encap` (read): the link encapsulation, `ETHER`.
//! - `priority_count` (read): packets emitted from the priority ring
//!   (0 without one); `count` less this is what the main ring gave.
//! - `priority_drops` (read): the priority ring's kernel drops (also in
//!   `kernel_drops` and `drops`).
//! - `mode` (read): how frames are read: `AF_PACKET`, or with METHOD XDP
//!   `XDP native copy`, `XDP native zerocopy` or `XDP generic copy`.
//! - `umem_free` (read; METHOD XDP): the socket's receive frames that no
//!   packet holds (8192 of 8192 when none does; frames packets freed on
//!   another thread count once that thread has handed them back, in a
//!   batch or when it goes idle). Empty without METHOD XDP.
//! - `umem` (read; METHOD XDP): `shared with` the other device queues
//!   whose sockets share the socket's UMEM, or `own`.
//! - `xdp_stats` (read; METHOD XDP): the kernel's counters of the socket
//!   (XDP_STATISTICS): `rx_dropped N rx_ring_full N fill_ring_empty N
//!   tx_invalid N`. `rx_dropped` (frames lost for want of a fill ring
//!   entry, and invalid descriptors) and `rx_ring_full` (frames lost to a
//!   full receive ring) make `kernel_drops`; `fill_ring_empty` counts the
//!   times the kernel found the fill ring empty.
//! - `busy_poll` (read; METHOD XDP): `on` with `--busy-poll` (preferred
//!   busy polling, see above), else `off`, or `off` and why the kernel
//!   refused it.
//!
//! Example: a router's input whose pings and ARP overtake a flood:
//!
//!     FromDevice(eth0, SNIFFER false, PRIORITY true) -> ...;
//!
//! Example: a two-queue input, one queue per thread:
//!
//!     fd0 :: FromDevice(eth0, QUEUE 0, N_QUEUES 2, SNIFFER false) -> ...;
//!     fd1 :: FromDevice(eth0, QUEUE 1, N_QUEUES 2, SNIFFER false) -> ...;
//!     StaticThreadSched(fd0 0, fd1 1);

use super::rx::{
    check_device_queues, check_devname, QueueClaim, RxClaims, RxCounters, RxOptions, RxQueue,
    RxReader,
};
use super::xdp::{self, XdpClaims, XdpOptions, XskPort};
use super::xdp_pass::PassFilter;
use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub struct FromDevice {
    devname: String,
    queue: usize,
    opts: RxOptions,
    /// The main ring, then the priority ring (QUEUE 0 with a
    /// PRIORITY_FILTER only).
    rx: OnceLock<Vec<RxQueue>>,
    /// The reader's place in each ring.
    reader: Mutex<[RxReader; 2]>,
    /// Packets emitted per ring (MAIN, PRIO) and own drops.
    stats: RxCounters,
    /// REPLICAS: the FromDevices reading the device's other queues, whose
    /// counts the handlers add to these.
    replicas: Vec<String>,
    /// METHOD XDP: the AF_XDP socket's options, and the socket.
    xdp: Option<XdpOptions>,
    xsk: OnceLock<Arc<XskPort>>,
    /// The socket's kernel drops at the last reset_counts.
    xdp_drops_base: AtomicU64,
    /// The `busy_poll` handler's text (METHOD XDP).
    busy: OnceLock<String>,
}

/// Ring indices in `rx`, `reader` and `stats`.
const MAIN: usize = 0;
const PRIO: usize = 1;

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromDevice", "0/1", "h", make)
        .drop_reasons(super::rx::RX_DROP_REASONS)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Device)
        .sums_replicas()
        .fanout_queues()
        // Click's FromDevice and PollDevice put an Ethernet frame's IP
        // header on a 4-byte boundary.
        .click_alignment(paraclick_runtime::ClickAlignment::Makes {
            modulus: 4,
            offset: 2,
        })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FromDevice, String> {
    let mut a = cx.args();
    let devname = a.read_mp::<String>("DEVNAME");
    // Click's userlevel FromDevice also takes PROMISC and SNAPLEN by position.
    let promisc = a.read_p::<bool>("PROMISC");
    let snaplen = a.read_p::<usize>("SNAPLEN");
    let queue = a.read::<usize>("QUEUE").unwrap_or(0);
    let mut opts = RxOptions::read(&mut a)?;
    if let Some(p) = promisc {
        opts.promisc = p;
    }
    if let Some(s) = snaplen {
        if s < 14 {
            return Err(format!("SNAPLEN must be at least 14, not {s}"));
        }
        opts.snaplen = s;
    }
    let replicas: Vec<String> = a
        .read::<String>("REPLICAS")
        .map(|r| r.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let xdp = read_method(&mut a, &opts)?;
    a.complete()?;
    check_devname("DEVNAME", &devname)?;
    opts.check_queue(queue)?;
    Ok(FromDevice {
        devname,
        queue,
        opts,
        rx: OnceLock::new(),
        reader: Mutex::new(Default::default()),
        stats: RxCounters::new(2, cx.nthreads),
        replicas,
        xdp,
        xsk: OnceLock::new(),
        xdp_drops_base: AtomicU64::new(0),
        busy: OnceLock::new(),
    })
}

/// Reads METHOD (Click's LINUX, PCAP and NETMAP all read through the
/// AF_PACKET ring; XDP through an AF_XDP socket) and, for XDP, XDP_MODE
/// and ZEROCOPY; refuses the AF_PACKET ring's filters with XDP.
pub(super) fn read_method(
    a: &mut paraclick_runtime::Args<'_>,
    opts: &RxOptions,
) -> Result<Option<XdpOptions>, String> {
    let method = a.read::<String>("METHOD").map(|m| m.to_ascii_uppercase());
    let mut x = XdpOptions::read(a)?;
    let pass = a.read::<String>("PASS");
    match method.as_deref() {
        Some("XDP") => {
            x.pass = pass.as_deref().map(PassFilter::parse).transpose()?;
            if opts.filters.bpf_filter.is_some() || opts.filters.has_priority() {
                return Err(
                    "BPF_FILTER, PRIORITY and PRIORITY_FILTER are not available with \
                            METHOD XDP (they filter the AF_PACKET ring)"
                        .into(),
                );
            }
            Ok(Some(x))
        }
        None | Some("LINUX" | "PCAP" | "NETMAP") => {
            if x != XdpOptions::default() {
                return Err("XDP_MODE, ZEROCOPY and SHARE_UMEM need METHOD XDP".into());
            }
            if pass.is_some() {
                return Err("PASS needs METHOD XDP (it is a filter of the XDP program)".into());
            }
            Ok(None)
        }
        Some(m) => Err(format!(
            "METHOD: expected LINUX, PCAP, NETMAP or XDP, not '{m}'"
        )),
    }
}

impl FromDevice {
    /// The queue of DEVNAME this element reads.
    pub(super) fn claim(&self) -> QueueClaim<'_> {
        QueueClaim {
            devname: &self.devname,
            queue: self.queue,
            nqueues: self.opts.nqueues,
            fanout: self.opts.fanout,
            outbound: self.opts.outbound,
            filters: &self.opts.filters,
        }
    }

    /// The open rings (none before initialization): the main ring, then
    /// the priority ring if there is one.
    fn rings(&self) -> &[RxQueue] {
        self.rx.get().map(Vec::as_slice).unwrap_or_default()
    }

    /// The AF_XDP socket's kernel drops since the last reset (0 without
    /// one).
    fn xdp_drops(&self) -> u64 {
        self.xsk.get().map_or(0, |x| {
            x.kernel_drops()
                .saturating_sub(self.xdp_drops_base.load(Ordering::Relaxed))
        })
    }

    /// The `mode` handler.
    fn mode(&self) -> String {
        match (&self.xdp, self.xsk.get()) {
            (None, _) => "AF_PACKET".into(),
            (Some(_), Some(x)) => format!("XDP {}", x.mode()),
            (Some(_), None) => "XDP (not open)".into(),
        }
    }

    /// The priority ring's kernel drops (0 without one).
    fn priority_drops(&self) -> u64 {
        self.rings().get(PRIO).map_or(0, RxQueue::kernel_drops)
    }
}

impl RxClaims for FromDevice {
    fn claims(&self) -> Vec<QueueClaim<'_>> {
        vec![self.claim()]
    }
}

impl XdpClaims for FromDevice {
    fn xdp_claims(&self) -> Vec<(&str, usize, bool, bool)> {
        match self.xdp {
            Some(_) => vec![(self.devname.as_str(), self.queue, true, false)],
            None => Vec::new(),
        }
    }
    fn xdp_pass(&self) -> Option<&PassFilter> {
        self.xdp.as_ref().and_then(|o| o.pass.as_ref())
    }
    fn xdp_share(&self) -> bool {
        self.xdp.as_ref().is_none_or(|o| o.share)
    }
}

impl Element for FromDevice {
    /// Its queue, to the others reading the device; with METHOD XDP, to
    /// the ToDevice sharing its socket.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, FromDevice, dyn RxClaims => |d| d, dyn XdpClaims => |d| d)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::try_read("count", |e, hx| {
            Ok(hx
                .sum_with(e.stats.count(), &e.replicas, "count")?
                .to_string())
        }),
        Handler::try_read("drops", |e, hx| {
            let own = e.stats.drops(e.rings()) + e.xdp_drops();
            Ok(hx.sum_with(own, &e.replicas, "drops")?.to_string())
        }),
        Handler::try_read("kernel_drops", |e, hx| {
            let own = e.stats.kernel_drops(e.rings()) + e.xdp_drops();
            Ok(hx.sum_with(own, &e.replicas, "kernel_drops")?.to_string())
        }),
        Handler::try_read("kernel_count", |e, hx| {
            let own = e.stats.kernel_count(e.rings());
            Ok(hx.sum_with(own, &e.replicas, "kernel_count")?.to_string())
        }),
        Handler::write("reset_counts", |e, _, hx| {
            e.stats.reset(e.rings());
            if let Some(x) = e.xsk.get() {
                e.xdp_drops_base.store(x.kernel_drops(), Ordering::Relaxed);
            }
            hx.write_each(&e.replicas, "reset_counts")
        }),
        Handler::read("encap", |_, _| "ETHER".into()),
        Handler::read("priority_count", |e, _| e.stats.count_of(PRIO).to_string()),
        Handler::read("priority_drops", |e, _| e.priority_drops().to_string()),
        Handler::read("mode", |e, _| e.mode()),
        Handler::read("umem_free", |e, _| {
            e.xsk
                .get()
                .and_then(|x| x.rx_frames_free())
                .map_or_else(String::new, |n| n.to_string())
        }),
        Handler::read("umem", |e, _| {
            e.xsk.get().map_or_else(String::new, |x| x.umem_info())
        }),
        Handler::read("xdp_stats", |e, _| {
            e.xsk.get().map_or_else(String::new, |x| x.stats_text())
        }),
        Handler::read("busy_poll", |e, _| {
            e.busy.get().cloned().unwrap_or_default()
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.check_replicas(&self.replicas, "FromDevice", |f: &FromDevice| &f.replicas)?;
        check_device_queues(ix, &self.claim())?;
        // The task exists in a checked configuration too (never run
        // there): the thread plan and `paraclick parallelize`'s fallback
        // model see the router's real tasks.
        ix.add_task();
        if ix.checking() {
            return Ok(());
        }
        if let Some(o) = &self.xdp {
            xdp::check_rx_queues(&self.devname, self.queue, self.opts.nqueues)?;
            let (_, tx, pass) = xdp::rings_wanted(ix, &self.devname, self.queue)?;
            let group = xdp::umem_group(ix);
            let x = xdp::port(
                &self.devname,
                self.queue as u32,
                true,
                tx,
                o,
                pass.as_ref(),
                &group,
            )?;
            let busy = if paraclick_runtime::sched::busy_poll() {
                match x.set_busy_poll(xdp::BUSY_POLL_USECS, xdp::BUSY_POLL_BUDGET) {
                    Ok(()) => "on".to_string(),
                    Err(errno) => {
                        let why = format!(
                            "off (the kernel refused preferred busy polling: {})",
                            std::io::Error::from_raw_os_error(errno)
                        );
                        eprintln!("{}: --busy-poll: {why}", self.devname);
                        why
                    }
                }
            } else {
                "off".to_string()
            };
            let _ = self.busy.set(busy);
            let _ = self.xsk.set(x);
            return Ok(());
        }
        // The priority ring first: no control frame is lost in between
        // (the main ring's filter already refuses them).
        let prio = if self.queue == 0 {
            RxQueue::open_priority(&self.devname, &self.opts)?
        } else {
            None
        };
        let mut rx = vec![RxQueue::open(&self.devname, self.queue, &self.opts)?];
        rx.extend(prio);
        if self.rx.set(rx).is_err() {
            return Err("initialized twice".into());
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if let Some(x) = self.xsk.get() {
            let mut batch = Batch::new();
            let drops = x.read(
                self.opts.burst,
                self.opts.snaplen,
                self.opts.timestamp,
                &mut batch,
            );
            let got = !batch.is_empty();
            if got {
                self.stats.emitted(MAIN, cx.thread(), batch.len());
                cx.push(0, batch);
            }
            self.stats.dropped_for(cx, super::rx::UMEM_SHORTAGE, drops);
            if !got && drops == 0 {
                // Idle: the worker may wait until the socket is readable.
                cx.wake_when_readable(x.fd());
            }
            return got || drops > 0;
        }
        let Some(rx) = self.rx.get() else {
            return false;
        };
        // One reader at a time; a second runner finds nothing to do.
        let Ok(mut rd) = self.reader.try_lock() else {
            return false;
        };
        let mut drops = 0;
        let mut emitted = false;
        // The priority ring first, then the main ring: a control frame
        // waits at most for one run, never behind the main ring's backlog.
        // Each gets up to a burst, so neither starves the other.
        for i in [PRIO, MAIN] {
            let Some(ring) = rx.get(i) else {
                continue;
            };
            let mut batch = Batch::new();
            drops += ring.read(&mut rd[i], &self.opts, self.opts.burst, &mut batch);
            if !batch.is_empty() {
                self.stats.emitted(i, cx.thread(), batch.len());
                // Pushed with the reader's lock held, so batches leave in
                // order.
                cx.push(0, batch);
                emitted = true;
            }
        }
        drop(rd);
        self.stats.dropped(cx, drops);
        if !emitted && drops == 0 {
            // Idle: the worker may wait until a ring's socket is readable
            // (the kernel has handed a block over).
            for ring in rx {
                cx.wake_when_readable(ring.fd());
            }
        }
        emitted || drops > 0
    }
}

#[cfg(test)]
mod tests {
    use super::super::offload::tests::{ipv4_valid, tcp4_frame};
    use super::super::ring::tests::{build_block, TestFrame};
    use super::super::ring::{Cursor, PACKET_OUTGOING, TP_STATUS_USER, TP_STATUS_VLAN_VALID};
    use super::super::rx::tests::configure;
    use super::*;
    use crate::test_util::{build_err, full_registry};
    use paraclick_packet::{Packet, PacketType, Timestamp};
    use paraclick_runtime::testing::assert_err;

    fn element(conf: &str) -> Result<FromDevice, String> {
        configure("FromDevice", make, conf, 1)
    }

    fn vnet(flags: u8, gso: u8, size: u16, start: u16, off: u16) -> [u8; 10] {
        let mut v = [0u8; 10];
        v[0] = flags;
        v[1] = gso;
        v[4..6].copy_from_slice(&size.to_ne_bytes());
        v[6..8].copy_from_slice(&start.to_ne_bytes());
        v[8..10].copy_from_slice(&off.to_ne_bytes());
        v
    }

    /// Reads a whole synthetic block through `take`, as run_task does.
    fn read_block(e: &FromDevice, block: &[u8]) -> (Vec<Packet>, u64) {
        let mut cur = Cursor::start(block).unwrap();
        let mut out = Batch::new();
        let mut drops = 0;
        while let Some(r) = cur.next_frame(block, true) {
            match r {
                Ok(f) => drops += e.opts.take(&f, &mut out),
                Err(n) => drops += n as u64,
            }
        }
        (out.into_iter().collect(), drops)
    }

    #[test]
    fn configuration_is_checked() {
        assert!(element("eth0").is_ok());
        // Click's METHOD values are accepted (all read via AF_PACKET).
        for m in ["LINUX", "PCAP", "netmap"] {
            assert!(
                element(&format!("eth0, METHOD {m}")).unwrap().xdp.is_none(),
                "{m}"
            );
        }
        // METHOD XDP, with its keywords.
        let e = element("eth0, METHOD XDP, XDP_MODE generic").unwrap();
        assert_eq!(
            e.xdp,
            Some(XdpOptions {
                mode: super::super::xdp::XdpMode::Generic,
                zerocopy: None,
                pass: None,
                share: true,
            })
        );
        assert_eq!(e.mode(), "XDP (not open)");
        let e = element("eth0, METHOD XDP, SHARE_UMEM false").unwrap();
        assert!(!e.xdp.as_ref().unwrap().share);
        assert!(!XdpClaims::xdp_share(&e));
        // PASS, parsed into the program's rules.
        let e = element("eth0, METHOD XDP, PASS \"arp or tcp dst port 22\"").unwrap();
        let f = e.xdp_pass().unwrap();
        assert_eq!(f.text, "arp or tcp dst port 22");
        assert_eq!(f.rules.len(), 2);
        assert!(f.rules[0].arp);
        assert_eq!(f.rules[1].port, Some(22));
        assert_eq!(element("eth0").unwrap().mode(), "AF_PACKET");
        let e = element("eth0, BURST 8, SNAPLEN 100, QUEUE 1, N_QUEUES 2, FANOUT lb").unwrap();
        assert_eq!(
            (
                e.opts.burst,
                e.opts.snaplen,
                e.queue,
                e.opts.nqueues,
                e.opts.fanout
            ),
            (8, 100, 1, 2, 1)
        );
        assert!(e.opts.sniffer && !e.opts.promisc && !e.opts.outbound && e.opts.timestamp);
        // Click's positional PROMISC and SNAPLEN.
        let e = element("eth0, 1, 200").unwrap();
        assert!(e.opts.promisc);
        assert_eq!(e.opts.snaplen, 200);
        // TPACKET: the ring version, V2 (each frame at once) by default.
        assert_eq!(element("eth0").unwrap().opts.tpacket, 2);
        assert_eq!(element("eth0, TPACKET 3").unwrap().opts.tpacket, 3);
        // RING_SIZE in bytes, rounded up to whole 128 KiB blocks.
        assert_eq!(element("eth0").unwrap().opts.ring_blocks, 128);
        assert_eq!(element("eth0, RING_SIZE 1").unwrap().opts.ring_blocks, 1);
        assert_eq!(
            element("eth0, RING_SIZE 2097152").unwrap().opts.ring_blocks,
            16
        );
        for (bad, want) in [
            (
                "eth0, RING_SIZE 0",
                "RING_SIZE must be between 1 and 1073741824 bytes",
            ),
            (
                "eth0, RING_SIZE 99999999999",
                "RING_SIZE must be between 1 and 1073741824 bytes",
            ),
            ("", "missing mandatory DEVNAME argument"),
            ("eth0, BURST 0", "BURST must be at least 1"),
            ("eth0, TPACKET 1", "TPACKET must be 2 or 3, not 1"),
            ("eth0, TPACKET V3", "TPACKET"),
            (
                "eth0, QUEUE 2, N_QUEUES 2",
                "QUEUE 2 out of range: N_QUEUES is 2",
            ),
            ("eth0, N_QUEUES 0", "N_QUEUES must be between 1 and 256"),
            (
                "eth0, FANOUT SIDEWAYS",
                "FANOUT: unknown mode 'SIDEWAYS' (HASH, LB, CPU, RND, QM, ROLLOVER)",
            ),
            ("eth0, SNAPLEN 4", "SNAPLEN must be at least 14"),
            ("eth0, true, 4", "SNAPLEN must be at least 14, not 4"),
            ("eth0, maybe", "PROMISC: expected boolean (true or false)"),
            ("a/b", "DEVNAME: bad interface name 'a/b'"),
            (
                "averyveryverylongname",
                "DEVNAME: bad interface name 'averyveryverylongname'",
            ),
            ("eth0, NOPE 1", "unknown keyword NOPE"),
            (
                "eth0, METHOD CARRIER_PIGEON",
                "METHOD: expected LINUX, PCAP, NETMAP or XDP, not 'CARRIER_PIGEON'",
            ),
            (
                "eth0, XDP_MODE NATIVE",
                "XDP_MODE, ZEROCOPY and SHARE_UMEM need METHOD XDP",
            ),
            (
                "eth0, SHARE_UMEM false",
                "XDP_MODE, ZEROCOPY and SHARE_UMEM need METHOD XDP",
            ),
            (
                "eth0, METHOD XDP, PRIORITY true",
                "not available with METHOD XDP",
            ),
            ("eth0, PASS arp", "PASS needs METHOD XDP"),
            (
                "eth0, METHOD XDP, PASS \"arp and icmp\"",
                "PASS: 'icmp' contradicts what comes before it",
            ),
            (
                "eth0, METHOD XDP, XDP_MODE SIDEWAYS",
                "XDP_MODE: expected AUTO, NATIVE or GENERIC, not 'SIDEWAYS'",
            ),
            (
                "eth0, METHOD XDP, XDP_MODE GENERIC, ZEROCOPY true",
                "ZEROCOPY true needs XDP_MODE NATIVE or AUTO",
            ),
        ] {
            assert_err(element(bad), want);
        }
    }

    /// BPF_FILTER and the priority path's keywords: filters compiled when
    /// the configuration is read, a bad expression a configuration error
    /// naming its keyword.
    #[test]
    fn filters_and_the_priority_path_are_configured() {
        let f = element("eth0").unwrap().opts.filters;
        assert!(f.main.is_none() && !f.has_priority());
        let f = element("eth0, PRIORITY true").unwrap().opts.filters;
        assert_eq!(f.priority_filter.as_deref(), Some("arp or icmp or icmp6"));
        assert!(f.main.is_some() && f.has_priority());
        // Click's quoting, or the rest of the argument as is.
        for conf in [
            "eth0, PRIORITY_FILTER \"arp or udp port 520\"",
            "eth0, PRIORITY_FILTER arp or udp port 520",
        ] {
            let f = element(conf).unwrap().opts.filters;
            assert_eq!(f.priority_filter.as_deref(), Some("arp or udp port 520"));
        }
        let f = element("eth0, PRIORITY false, PRIORITY_FILTER arp")
            .unwrap()
            .opts
            .filters;
        assert!(!f.has_priority() && f.main.is_none());
        let f = element("eth0, BPF_FILTER ip").unwrap().opts.filters;
        assert!(f.main.is_some() && !f.has_priority());
        // Click: the empty expression means all packets.
        let f = element("eth0, BPF_FILTER \"\"").unwrap().opts.filters;
        assert!(f.main.is_none() && f.bpf_filter.is_none());
        let e = element("eth0, PRIORITY true").unwrap();
        assert_eq!(e.opts.priority_blocks, 16);
        let e = element("eth0, PRIORITY true, PRIORITY_RING_SIZE 262144").unwrap();
        assert_eq!(e.opts.priority_blocks, 2);
        for (bad, says) in [
            (
                "eth0, BPF_FILTER ip and",
                "BPF_FILTER: bad filter expression 'ip and'",
            ),
            (
                "eth0, PRIORITY_FILTER (arp",
                "PRIORITY_FILTER: bad filter expression",
            ),
            (
                "eth0, BPF_FILTER ip, PRIORITY_FILTER udp port 70000",
                "PRIORITY_FILTER",
            ),
            (
                "eth0, PRIORITY_RING_SIZE 0",
                "PRIORITY_RING_SIZE must be between",
            ),
            ("eth0, PRIORITY sometimes", "PRIORITY"),
        ] {
            let e = element(bad)
                .err()
                .unwrap_or_else(|| panic!("accepted: {bad}"));
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// A device's queues must agree on the filters: one priority ring
    /// serves them all (the devices here do not exist; a configuration
    /// passing the check fails later, on the missing device).
    #[test]
    fn queues_of_a_device_share_their_filters() {
        let err = |conf: &str| build_err(&full_registry(), conf);
        let e = err(
            "FromDevice(pcnodev0, QUEUE 0, N_QUEUES 2, PRIORITY true) -> Discard;
                     FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2) -> Discard;",
        );
        assert!(e.contains("share one filter"), "{e}");
        let e = err(
            "FromDevice(pcnodev0, QUEUE 0, N_QUEUES 2, PRIORITY true) -> Discard;
                     FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2, PRIORITY true) -> Discard;",
        );
        assert!(
            !e.contains("share one filter") && e.contains("pcnodev0"),
            "{e}"
        );
    }

    /// A device's queues share one fanout group, which either takes the
    /// host's outgoing frames or not: they must agree on OUTBOUND.
    #[test]
    fn queues_of_a_device_agree_on_outbound() {
        let err = |conf: &str| build_err(&full_registry(), conf);
        let e = err(
            "FromDevice(pcnodev0, QUEUE 0, N_QUEUES 2, OUTBOUND true) -> Discard;
                     FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2) -> Discard;",
        );
        assert!(
            e.contains("OUTBOUND true") && e.contains("OUTBOUND false"),
            "{e}"
        );
        let e = err(
            "FromDevice(pcnodev0, QUEUE 0, N_QUEUES 2, OUTBOUND true) -> Discard;
                     FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2, OUTBOUND true) -> Discard;",
        );
        assert!(!e.contains("OUTBOUND") && e.contains("pcnodev0"), "{e}");
    }

    #[test]
    fn frames_become_annotated_packets() {
        let e = element("eth0").unwrap();
        let plain: Vec<u8> = (0..60).collect();
        let mut bcast = TestFrame::new(&plain);
        bcast.pkttype = 1;
        let mut out = TestFrame::new(&plain);
        out.pkttype = PACKET_OUTGOING;
        let mut other = TestFrame::new(&plain);
        other.pkttype = 3;
        let block = build_block(8192, &[TestFrame::new(&plain), bcast, out, other], true);
        let (ps, drops) = read_block(&e, &block);
        assert_eq!(drops, 0);
        // The outgoing frame is skipped, not counted as a drop.
        assert_eq!(ps.len(), 3);
        for p in &ps {
            assert_eq!(p.data(), &plain[..]);
            assert_eq!(p.mac_header_offset(), Some(0));
            assert_eq!(p.timestamp(), Timestamp::from_parts(1000, 500));
            assert_eq!(p.anno().device, 7);
            assert_eq!(p.anno().flow_hash, 0xabcd);
        }
        let types: Vec<PacketType> = ps.iter().map(|p| p.anno().packet_type).collect();
        assert_eq!(
            types,
            vec![
                PacketType::Host,
                PacketType::Broadcast,
                PacketType::OtherHost
            ]
        );
        // OUTBOUND true emits it.
        let e = element("eth0, OUTBOUND true").unwrap();
        let (ps, _) = read_block(&e, &block);
        assert_eq!(ps.len(), 4);
        assert_eq!(ps[2].anno().packet_type, PacketType::Outgoing);
    }

    #[test]
    fn snaplen_vlan_and_force_ip() {
        let e = element("eth0, SNAPLEN 40, TIMESTAMP false").unwrap();
        let f = tcp4_frame(&[7u8; 100], 0x10);
        let mut tagged = TestFrame::new(&f);
        tagged.status = TP_STATUS_USER | TP_STATUS_VLAN_VALID;
        tagged.vlan_tci = 0x2007;
        let block = build_block(8192, &[TestFrame::new(&f), tagged], true);
        let (ps, drops) = read_block(&e, &block);
        assert_eq!(drops, 0);
        assert_eq!(ps[0].data(), &f[..40]);
        assert_eq!(ps[0].anno().extra_length as usize, f.len() - 40);
        assert!(ps[0].timestamp().is_zero());
        // The tag is back in the frame, after the addresses.
        assert_eq!(&ps[1].data()[..12], &f[..12]);
        assert_eq!(&ps[1].data()[12..16], &[0x81, 0x00, 0x20, 0x07]);
        assert_eq!(&ps[1].data()[16..40], &f[12..36]);
        assert_eq!(ps[1].anno().vlan_tci, 0x2007);

        let e = element("eth0, FORCE_IP true").unwrap();
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let block = build_block(8192, &[TestFrame::new(&f), TestFrame::new(&arp)], true);
        let (ps, drops) = read_block(&e, &block);
        assert_eq!((ps.len(), drops), (1, 1));
        assert_eq!(ps[0].network_header_offset(), Some(14));
        assert_eq!(ps[0].network_header_length(), Some(20));
    }

    #[test]
    fn offloaded_frames_are_fixed_or_dropped() {
        let e = element("eth0").unwrap();
        // Partial checksum: completed.
        let partial = tcp4_frame(&[1u8; 333], 0x18);
        assert!(!ipv4_valid(&partial));
        let mut fp = TestFrame::new(&partial);
        fp.vnet = Some(vnet(1, 0, 0, 34, 16));
        // A super-frame: segmented, each segment valid.
        let big_payload: Vec<u8> = (0..4000).map(|i| i as u8).collect();
        let big = tcp4_frame(&big_payload, 0x18);
        let mut fb = TestFrame::new(&big);
        fb.vnet = Some(vnet(1, 1, 1448, 34, 16));
        // A truncated super-frame and an unsupported one (UFO): dropped.
        let mut ft = TestFrame::new(&big[..2000]);
        ft.wire_len = big.len() as u32;
        ft.vnet = Some(vnet(1, 1, 1448, 34, 16));
        let mut fu = TestFrame::new(&big);
        fu.vnet = Some(vnet(1, 3, 1448, 34, 16));
        // A checksum offset outside the frame: dropped, not sent broken.
        let mut fx = TestFrame::new(&partial);
        fx.vnet = Some(vnet(1, 0, 0, 34, 4000));
        let block = build_block(1 << 15, &[fp, fb, ft, fu, fx], true);
        let (ps, drops) = read_block(&e, &block);
        assert_eq!(drops, 3);
        assert_eq!(ps.len(), 1 + 3);
        assert!(ps.iter().all(|p| ipv4_valid(p.data())));
        let lens: Vec<usize> = ps.iter().map(|p| p.len()).collect();
        assert_eq!(lens, vec![partial.len(), 54 + 1448, 54 + 1448, 54 + 1104]);
        assert!(ps.iter().all(|p| p.mac_header_offset() == Some(0)));
    }
}
