//! # ToDevice
//!
//! ToDevice(DEVNAME [, BURST, keywords BURST, QUEUE, METHOD, XDP_MODE, ZEROCOPY, SHARE_UMEM, TX_BUDGET])
//!
//! Sends packets to a Linux network device (AF_PACKET, `sendmmsg`).
//!
//! Ports: 1 input, 0 to 2 outputs. Processing: agnostic input, push
//! outputs.
//!
//! Sends each packet it receives, link header included, out of the Linux
//! interface DEVNAME through its own AF_PACKET socket (one socket per
//! ToDevice, so ToDevice elements on different threads share no lock),
//! in `sendmmsg` batches of up to 64 frames. In pull context ToDevice
//! owns a task that pulls up to BURST packets per run and sends them; in
//! push context it sends each batch as it arrives, on the pushing thread.
//! Packets must already carry their link header (ARP done); frames are
//! not padded to 60 bytes.
//!
//! Sending never blocks the worker. When the kernel cannot take more
//! frames for now (`EAGAIN`, `ENOBUFS`: the socket's buffer or the
//! device's queue is full) the unsent packets are kept, in order, and
//! sent first the next time (the next task run, or in push context the
//! next push or a 100 µs timer); at most 4 × BURST packets are kept, and
//! packets beyond that are dropped with reason `ring full` (Click's
//! ToDevice keeps a refused packet and pulls no more until it goes; in
//! push context nothing holds the pushes back, so the bound is where
//! paraclick gives up). A packet the kernel refuses for good (longer than
//! the device MTU, device down) is dropped too, reason `send failed`.
//!
//! As in Click's user-level ToDevice, packets that were sent are emitted
//! on output 0 if it exists (and otherwise freed), and packets that could
//! not be sent are emitted on output 1 if it exists (and otherwise
//! dropped, counted).
//!
//! Arguments:
//! - `DEVNAME` (string): the interface name.
//! - `BURST` (unsigned, default 32, at most 65536): most packets pulled per
//!   task run.
//! - `QUEUE` (unsigned): with METHOD XDP, the device queue the AF_XDP
//!   socket is bound to. Without it, queue 0; but a ToDevice in push
//!   context in a router of several threads sends on queues 0 to N-1
//!   (N the threads, or the device's transmit queues if fewer), and
//!   thread T sends what it pushes on queue T mod N, as the kernel's XPS
//!   gives CPU i queue i: threads pushing to one ToDevice share no socket
//!   (before, they took turns on queue 0's, each waiting while another's
//!   `sendto` ran). Each queue's socket is opened when a thread first
//!   sends on it, so a router whose one thread sends opens one; the
//!   device, its queue and libxdp are checked at start-up, and a socket
//!   that cannot be opened then (no permission, say) is reported once,
//!   with the message start-up would have given, and the packets for it
//!   are dropped, counted in `drops`. Otherwise accepted for
//!   compatibility with Click's ToDevice: each ToDevice has its own
//!   socket, and the kernel picks the device transmit queue (by sending
//!   CPU where the device has several).
//! - `METHOD` (word, default `LINUX`): `LINUX` (also `PCAP`, `NETMAP`)
//!   sends through AF_PACKET as above; `XDP` through an AF_XDP socket on
//!   queue QUEUE of DEVNAME (see docs/AF_XDP.md), shared with the
//!   FromDevice reading that queue with METHOD XDP. A packet that a
//!   METHOD XDP reader of the router read is still in its receive frame
//!   of the UMEM, the memory the router's AF_XDP sockets share (see
//!   SHARE_UMEM): without output 0 that frame goes on the transmit ring
//!   as it is, with no copy, whichever device it came from. Any other
//!   packet (or every packet, with output 0, which gets the sent ones) is
//!   copied into a transmit frame. The kernel is woken (a `sendto`) when
//!   it asks (need-wakeup): pulling, once 32 descriptors wait on the
//!   transmit ring or when the input has no more packets (the run that
//!   finds it empty), rather than once per BURST; pushed to, after each
//!   batch. Sent frames come back through the completion
//!   ring (a receive frame to the fill ring). When no frame or ring
//!   entry is free the packets wait as described above. Packets longer
//!   than a frame (2048 bytes) are dropped.
//! - `XDP_MODE`, `ZEROCOPY`, `SHARE_UMEM`: as for FromDevice (METHOD XDP
//!   only).
//! - `TX_BUDGET` (unsigned, 32 to 8192, default 32; METHOD XDP only): the
//!   most frames one wake-up of the kernel (`sendto`) sends, the socket's
//!   XDP_MAX_TX_SKB_BUDGET (Linux 6.17 and later; the kernel's own
//!   default is 32); pulling, the kernel is then woken once this many
//!   descriptors wait rather than 32. A kernel that refuses it keeps 32,
//!   and the router says so on standard error (and in `tx_budget`).
//!
//! Handlers:
//! - `count` (read): packets sent.
//! - `drops` (read): packets that could not be sent (dropped, or emitted
//!   on output 1). The first send the kernel refuses for good (a device
//!   deleted or down under the router: `ENXIO`, `ENETDOWN`) is reported on
//!   standard error, once; the router keeps running.
//! - `blocked` (read): sends the kernel refused for now (`EAGAIN`,
//!   `ENOBUFS`), each leaving packets kept for later; while packets are
//!   kept a pulling ToDevice pulls no more, so its queue fills. (AF_PACKET
//!   only.)
//! - `reset_counts` (write): resets `count`, `drops` and `blocked`.
//! - `mode` (read): `AF_PACKET`, or with METHOD XDP the socket's mode
//!   (`XDP native copy`, `XDP native zerocopy`, `XDP generic copy`;
//!   `XDP (not open)` before any thread has sent).
//! - `umem` (read; METHOD XDP): as for FromDevice (with several queues,
//!   the first opened socket's; `mode` likewise).
//! - `sent_direct`, `sent_copied` (read; METHOD XDP): packets sent in the
//!   frame they arrived in, and packets copied into a transmit frame.
//! - `tx_kicks` (read; METHOD XDP): wake-ups of the kernel to send (one
//!   `sendto` each where the kernel asks for it, as it always does in
//!   copy mode).
//! - `tx_queues` (read; METHOD XDP): the queues it has opened a socket
//!   on (a thread sent there), each with the packets sent on it: `0:N
//!   1:M`.
//! - `tx_budget` (read; METHOD XDP): the frames one wake-up sends at most
//!   (TX_BUDGET), followed by why, if the kernel refused TX_BUDGET.
//!
//! Example:
//!
//!     ... -> Queue(1000) -> ToDevice(eth0, BURST 32);

use super::sys::{self, SEND_CHUNK};
use super::xdp::{self, XdpClaims, XdpOptions, XskPort};
use super::xdp_pass::PassFilter;
use crate::common::ErrorCount;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Socket send buffer asked for.
const SNDBUF: usize = 4 << 20;
/// Retry delay for packets kept in push context.
const RETRY: Duration = Duration::from_micros(100);

pub struct ToDevice {
    devname: String,
    burst: usize,
    pull: bool,
    has_out0: bool,
    has_out1: bool,
    fd: OnceLock<OwnedFd>,
    /// Packets the kernel could not take yet, oldest first.
    pending: Mutex<VecDeque<Packet>>,
    npending: AtomicUsize,
    max_pending: usize,
    /// Sends the kernel refused for now (`blocked`).
    blocked: AtomicU64,
    counts: super::DevCounts,
    /// Sends that failed for good (the first one is reported).
    errors: ErrorCount,
    /// QUEUE: the transmit queue of METHOD XDP's socket, if given.
    queue: Option<usize>,
    /// The router's worker threads.
    nthreads: usize,
    /// METHOD XDP: the socket's options, and the sockets: one, or in
    /// push context without QUEUE one per thread (see [`xdp_queues`]),
    /// by queue, each opened when a thread first sends on it.
    xdp: Option<XdpOptions>,
    xsk: OnceLock<XdpPorts>,
    /// TX_BUDGET (METHOD XDP), and whether it was given.
    tx_budget: usize,
    tx_budget_given: bool,
    /// Why the kernel refused TX_BUDGET, if it did.
    tx_budget_refused: OnceLock<String>,
}

/// METHOD XDP's transmit sockets, set up at initialization and each
/// opened by the first thread that sends on it: a router of N threads of
/// which one sends opens one socket (and one UMEM slot's frames), not N.
struct XdpPorts {
    /// The (device, queue) pairs whose sockets share one UMEM
    /// ([`xdp::umem_group`]).
    group: Vec<(String, u32)>,
    /// One per queue sent on, in [`xdp_queues`] order.
    socks: Vec<LazyXsk>,
}

/// A transmit socket on `queue`, opened on first use ([`ToDevice::port`]).
struct LazyXsk {
    queue: usize,
    /// A METHOD XDP reader reads the queue too (its socket then has both
    /// rings, and is already open), and the device's PASS filter.
    rx: bool,
    pass: Option<PassFilter>,
    /// The socket, or why it could not be opened (said once; the packets
    /// for it are dropped, counted).
    port: OnceLock<Result<Arc<XskPort>, String>>,
}

impl XdpPorts {
    /// The sockets opened so far, in queue order.
    fn open(&self) -> impl Iterator<Item = &Arc<XskPort>> {
        self.socks
            .iter()
            .filter_map(|l| l.port.get().and_then(|r| r.as_ref().ok()))
    }
}

/// The largest BURST: 4 × BURST packets may wait, and 2^64-1 overflowed
/// that product.
const MAX_BURST: usize = 1 << 16;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["send failed", "ring full"];
/// [`DROP_REASONS`]: the kernel refused the packet for good.
const SEND_FAILED: u8 = 0;
/// [`DROP_REASONS`]: the kernel took no more frames for now and the
/// packets kept for it were at their bound.
const RING_FULL: u8 = 1;

pub fn spec() -> ClassSpec {
    ClassSpec::element("ToDevice", "1/0-2", "a/h", make)
        .drop_reasons(DROP_REASONS)
        .shared("an output: one file or device for all flows")
        .kind(Kind::Device)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ToDevice, String> {
    let mut a = cx.args();
    let devname = a.read_mp::<String>("DEVNAME");
    let burst_p = a.read_p::<usize>("BURST");
    let burst_k = a.read::<usize>("BURST");
    let queue = a.read::<usize>("QUEUE");
    let method = a.read::<String>("METHOD").map(|m| m.to_ascii_uppercase());
    let x = XdpOptions::read(&mut a)?;
    let tx_budget = a.read::<usize>("TX_BUDGET");
    let xdp = match method.as_deref() {
        Some("XDP") => Some(x),
        None | Some("LINUX" | "PCAP" | "NETMAP") => {
            if x != XdpOptions::default() || tx_budget.is_some() {
                return Err("XDP_MODE, ZEROCOPY, SHARE_UMEM and TX_BUDGET need METHOD XDP".into());
            }
            None
        }
        Some(m) => {
            return Err(format!(
                "METHOD: expected LINUX, PCAP, NETMAP or XDP, not '{m}'"
            ))
        }
    };
    a.complete()?;
    if devname.is_empty() || devname.len() >= 16 || devname.contains(['/', ' ', '\0']) {
        return Err(format!("DEVNAME: bad interface name '{devname}'"));
    }
    if let Some(b) = tx_budget.filter(|b| !(xdp::KICK_BATCH..=xdp::RING).contains(b)) {
        return Err(format!(
            "TX_BUDGET must be between {} and {} (the transmit ring), not {b}",
            xdp::KICK_BATCH,
            xdp::RING
        ));
    }
    let burst = burst_k.or(burst_p).unwrap_or(32);
    if burst == 0 || burst > MAX_BURST {
        return Err(format!("BURST must be between 1 and {MAX_BURST}"));
    }
    Ok(ToDevice {
        devname,
        burst,
        pull: cx.input_is_pull(0),
        has_out0: cx.noutputs > 0,
        has_out1: cx.noutputs > 1,
        fd: OnceLock::new(),
        pending: Mutex::new(VecDeque::new()),
        npending: AtomicUsize::new(0),
        max_pending: 4 * burst,
        blocked: AtomicU64::new(0),
        counts: super::DevCounts::new(cx.nthreads),
        errors: ErrorCount::default(),
        queue,
        nthreads: cx.nthreads,
        xdp,
        xsk: OnceLock::new(),
        tx_budget: tx_budget.unwrap_or(xdp::DEFAULT_TX_BUDGET),
        tx_budget_given: tx_budget.is_some(),
        tx_budget_refused: OnceLock::new(),
    })
}

impl ToDevice {
    /// Sends `batch` in order. Returns the packets the kernel could not
    /// take yet (in order); emits or drops the rest.
    fn transmit(&self, cx: &mut Cx<'_>, mut batch: Batch) -> Batch {
        if let Some(xp) = self.xsk.get() {
            // Thread T sends on queue T mod their number (one queue
            // unless pushed to from several threads without QUEUE).
            let l = &xp.socks[cx.thread() % xp.socks.len()];
            return match self.port(l, &xp.group) {
                Ok(x) => self.transmit_xdp(cx, x, batch),
                Err(e) => {
                    self.errors.report(
                        &format!("{} :: ToDevice", cx.element_name()),
                        &format!("{e}; the packets for it are dropped (counted in drops)"),
                    );
                    self.fail(cx, batch);
                    Batch::new()
                }
            };
        }
        let Some(fd) = self.fd.get() else {
            self.fail(cx, batch);
            return Batch::new();
        };
        let mut sent = Batch::new();
        let mut failed = Batch::new();
        let mut blocked = false;
        while !batch.is_empty() {
            let n = batch.len().min(SEND_CHUNK);
            let mut frames: [&[u8]; SEND_CHUNK] = [&[]; SEND_CHUNK];
            for (slot, p) in frames.iter_mut().zip(batch.iter()) {
                *slot = p.data();
            }
            let r = sys::send_frames(fd, &frames[..n]);
            if let Some(errno) = r.error {
                // A device deleted or taken down under the router: say so
                // once; every packet it refuses is a counted drop.
                self.errors.report(
                    &format!("{} :: ToDevice", cx.element_name()),
                    &format!(
                        "{}: {}; packets the device refuses are dropped (counted in drops)",
                        self.devname,
                        std::io::Error::from_raw_os_error(errno)
                    ),
                );
            }
            let rest = batch.split_off(r.done);
            for (i, p) in batch.drain().enumerate() {
                if r.failed & (1u64 << i) != 0 {
                    failed.push(p);
                } else {
                    sent.push(p);
                }
            }
            batch = rest;
            if r.blocked {
                blocked = true;
                self.blocked.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
        if !sent.is_empty() {
            self.counts.count.add(cx.thread(), sent.len() as u64);
            if self.has_out0 {
                cx.push(0, sent);
            }
        }
        if !failed.is_empty() {
            self.fail(cx, failed);
        }
        if blocked {
            batch
        } else {
            Batch::new()
        }
    }

    /// The socket of `l`, opened now if no thread has sent on it yet
    /// (with the errors an open at start-up gave), or why it could not
    /// be opened.
    fn port<'a>(&self, l: &'a LazyXsk, group: &[(String, u32)]) -> Result<&'a XskPort, &'a str> {
        let r = l.port.get_or_init(|| {
            let o = self.xdp.as_ref().expect("METHOD XDP");
            let x = xdp::port(
                &self.devname,
                l.queue as u32,
                l.rx,
                true,
                o,
                l.pass.as_ref(),
                group,
            )?;
            if let Err(errno) = x.set_tx_budget(self.tx_budget) {
                let why = format!(
                    "the kernel refused TX_BUDGET {} (XDP_MAX_TX_SKB_BUDGET, Linux 6.17): \
                     {}; each wake-up sends at most {}",
                    self.tx_budget,
                    std::io::Error::from_raw_os_error(errno),
                    x.tx_budget()
                );
                // Said once, though each socket asks.
                if self.tx_budget_refused.set(why.clone()).is_ok() && self.tx_budget_given {
                    eprintln!("{}: {why}", self.devname);
                }
            }
            Ok(x)
        });
        r.as_deref().map_err(String::as_str)
    }

    /// [`ToDevice::transmit`] through the AF_XDP socket.
    fn transmit_xdp(&self, cx: &mut Cx<'_>, x: &XskPort, batch: Batch) -> Batch {
        // Without output 0 no sent packet is kept: a packet in a frame
        // of this socket's UMEM goes on the ring without a copy. Pulling,
        // the kernel is woken once per KICK_BATCH descriptors, or when
        // the queue upstream is empty (run_task's flush), rather than
        // once per burst.
        let r = x.send(batch, !self.has_out0, self.pull);
        if let Some(errno) = r.error {
            self.xdp_error(cx, errno);
        }
        let sent = r.sent.len() + r.zerocopy;
        if sent > 0 {
            self.counts.count.add(cx.thread(), sent as u64);
        }
        if !r.sent.is_empty() && self.has_out0 {
            cx.push(0, r.sent);
        }
        self.fail(cx, r.failed);
        r.left
    }

    /// Reports a failed wake-up of the AF_XDP socket's kernel side.
    fn xdp_error(&self, cx: &mut Cx<'_>, errno: i32) {
        self.errors.report(
            &format!("{} :: ToDevice", cx.element_name()),
            &format!(
                "{}: {}; packets the device refuses are dropped",
                self.devname,
                std::io::Error::from_raw_os_error(errno)
            ),
        );
    }

    /// With METHOD XDP, wakes the kernel up for the descriptors deferred
    /// sends left on the transmit ring.
    fn flush_xdp(&self, cx: &mut Cx<'_>) {
        for x in self.xsk.get().into_iter().flat_map(XdpPorts::open) {
            if let Some(errno) = x.flush() {
                self.xdp_error(cx, errno);
            }
        }
    }

    /// The device queues METHOD XDP sends on (see [`xdp_queues`]).
    fn queues(&self) -> Vec<usize> {
        let (_, ntx) = xdp::queue_counts(&self.devname);
        xdp_queues(self.queue, self.pull, self.nthreads, ntx)
    }

    /// The sum of `f` over the sockets, for the counting handlers.
    fn xsk_sum(&self, f: impl Fn(&XskPort) -> u64) -> String {
        self.xsk.get().map_or_else(String::new, |xp| {
            xp.open().map(|x| f(x)).sum::<u64>().to_string()
        })
    }

    /// The first socket opened, if any.
    fn first_open(&self) -> Option<&Arc<XskPort>> {
        self.xsk.get().and_then(|xp| xp.open().next())
    }

    /// The `mode` handler.
    fn mode(&self) -> String {
        match (&self.xdp, self.first_open()) {
            (None, _) => "AF_PACKET".into(),
            (Some(_), Some(x)) => format!("XDP {}", x.mode()),
            (Some(_), None) => "XDP (not open)".into(),
        }
    }

    /// Packets that will not be sent: output 1, or dropped.
    fn fail(&self, cx: &mut Cx<'_>, b: Batch) {
        self.fail_for(cx, b, SEND_FAILED);
    }

    /// [`ToDevice::fail`] for drop reason `reason`.
    fn fail_for(&self, cx: &mut Cx<'_>, b: Batch, reason: u8) {
        if b.is_empty() {
            return;
        }
        self.counts.drops.add(cx.thread(), b.len() as u64);
        if self.has_out1 {
            cx.push(1, b);
        } else {
            cx.drop_batch_for(reason, b);
        }
    }

    /// Sends the kept packets, then `more` (if any) after them. Returns
    /// whether any packet was sent or disposed of.
    fn send_after_pending(&self, cx: &mut Cx<'_>, more: Option<Batch>) -> bool {
        let mut pend = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let before = pend.len() + more.as_ref().map_or(0, |b| b.len());
        let mut b: Batch = pend.drain(..).collect();
        if let Some(mut m) = more {
            b.append(&mut m);
        }
        let mut left = self.transmit(cx, b);
        let progress = left.len() < before;
        let mut over = Batch::new();
        for p in left.drain() {
            if pend.len() < self.max_pending {
                pend.push_back(p);
            } else {
                over.push(p);
            }
        }
        self.npending.store(pend.len(), Ordering::Release);
        drop(pend);
        self.fail_for(cx, over, RING_FULL);
        progress
    }

    /// Keeps packets the kernel could not take yet, after those already
    /// kept; beyond the bound they are dropped.
    fn keep(&self, cx: &mut Cx<'_>, mut left: Batch) {
        let mut pend = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut over = Batch::new();
        for p in left.drain() {
            if pend.len() < self.max_pending {
                pend.push_back(p);
            } else {
                over.push(p);
            }
        }
        self.npending.store(pend.len(), Ordering::Release);
        drop(pend);
        self.fail_for(cx, over, RING_FULL);
    }

    /// Sends a batch, keeping what the kernel cannot take yet. Returns
    /// whether any packet was sent or disposed of.
    fn send(&self, cx: &mut Cx<'_>, batch: Batch) -> bool {
        if self.npending.load(Ordering::Acquire) > 0 {
            return self.send_after_pending(cx, Some(batch));
        }
        let n = batch.len();
        let left = self.transmit(cx, batch);
        let progress = left.len() < n;
        if !left.is_empty() {
            self.keep(cx, left);
        }
        progress
    }
}

/// The device queues a METHOD XDP ToDevice sends on: QUEUE if given;
/// else, pushed to (each thread sends what it pushes) with several
/// threads, queues 0 to N-1, N the threads or the device's transmit
/// queues (`ntx`, 0 if unknown) if fewer, thread T sending on queue T mod
/// N, as the kernel's XPS gives CPU i queue i: the threads then share no
/// socket, no lock and no kernel transmit path; else (pulled: one task)
/// queue 0.
fn xdp_queues(given: Option<usize>, pull: bool, nthreads: usize, ntx: usize) -> Vec<usize> {
    match given {
        Some(q) => vec![q],
        None if pull => vec![0],
        None => (0..nthreads.min(ntx).max(1)).collect(),
    }
}

impl XdpClaims for ToDevice {
    fn xdp_claims(&self) -> Vec<(&str, usize, bool, bool)> {
        match self.xdp {
            Some(_) => self
                .queues()
                .into_iter()
                .map(|q| (self.devname.as_str(), q, false, true))
                .collect(),
            None => Vec::new(),
        }
    }
    fn xdp_share(&self) -> bool {
        self.xdp.as_ref().is_none_or(|o| o.share)
    }
}

impl Element for ToDevice {
    /// With METHOD XDP, its queue to the FromDevice sharing its socket.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, ToDevice, dyn XdpClaims => |d| d)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("mode", |e, _| e.mode()),
        Handler::read("umem", |e, _| {
            e.first_open().map_or_else(String::new, |x| x.umem_info())
        }),
        Handler::read("sent_direct", |e, _| e.xsk_sum(|x| x.tx_counts().0)),
        Handler::read("sent_copied", |e, _| e.xsk_sum(|x| x.tx_counts().1)),
        Handler::read("tx_kicks", |e, _| e.xsk_sum(XskPort::tx_kicks)),
        Handler::read("tx_queues", |e, _| {
            e.xsk.get().map_or_else(String::new, |xp| {
                let sent = |x: &XskPort| x.tx_counts().0 + x.tx_counts().1;
                xp.open()
                    .map(|x| format!("{}:{}", x.queue(), sent(x)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }),
        Handler::read("tx_budget", |e, _| {
            e.first_open().map_or_else(String::new, |x| {
                let b = x.tx_budget();
                match e.tx_budget_refused.get() {
                    Some(why) => format!("{b} ({why})"),
                    None => b.to_string(),
                }
            })
        }),
        Handler::read("count", |e, _| e.counts.count.get().to_string()),
        Handler::read("drops", |e, _| e.counts.drops.get().to_string()),
        Handler::read("blocked", |e, _| {
            e.blocked.load(Ordering::Relaxed).to_string()
        }),
        Handler::write("reset_counts", |e, _, _| {
            e.counts.reset();
            e.blocked.store(0, Ordering::Relaxed);
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // The task sleeps while the queues upstream are empty; a run that
        // leaves packets pending (the device's buffer full) counts as
        // work, so it never sleeps on them. Declared when checked too:
        // see FromDevice.
        if self.pull {
            let t = ix.add_task();
            ix.sleep_when_empty(t);
        }
        if ix.checking() {
            return Ok(());
        }
        if self.xdp.is_some() {
            // Each socket is opened by the first thread that sends on it
            // (`port`): what can fail before that (libxdp, the device,
            // its queue, the PASS filters) fails here, with the errors
            // an open here would give.
            let group = xdp::umem_group(ix);
            let mut socks = Vec::new();
            for queue in self.queues() {
                let (rx, _, pass) = xdp::rings_wanted(ix, &self.devname, queue)?;
                xdp::check_port(&self.devname, queue as u32)?;
                socks.push(LazyXsk {
                    queue,
                    rx,
                    pass,
                    port: OnceLock::new(),
                });
            }
            let _ = self.xsk.set(XdpPorts { group, socks });
            return Ok(());
        }
        let ifindex = sys::ifindex(&self.devname)?;
        let fd = sys::open_tx(ifindex, SNDBUF).map_err(|e| format!("{}: {e}", self.devname))?;
        let _ = self.fd.set(fd);
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.send(cx, batch);
        if self.npending.load(Ordering::Acquire) > 0 {
            cx.schedule_after(0, RETRY);
        }
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if self.npending.load(Ordering::Acquire) > 0 {
            self.send_after_pending(cx, None);
            if self.npending.load(Ordering::Acquire) > 0 {
                cx.schedule_after(0, RETRY);
            }
        }
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let mut work = false;
        if self.npending.load(Ordering::Acquire) > 0 {
            work = self.send_after_pending(cx, None);
            if self.npending.load(Ordering::Acquire) > 0 {
                // Still blocked: pull nothing more this time, and stay
                // awake to retry (with the queue empty, a sleeping task
                // would hold these packets until the next push).
                self.flush_xdp(cx);
                return true;
            }
        }
        match cx.pull(0, self.burst) {
            Some(b) => self.send(cx, b) || work,
            None => {
                // Nothing more to send for now: the deferred descriptors
                // go before the task sleeps.
                self.flush_xdp(cx);
                work
            }
        }
    }

    fn queued(&self) -> usize {
        self.npending.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Registry;

    fn make_conf(conf: &str) -> Result<(), String> {
        let mut reg = Registry::new();
        reg.register(spec());
        let mut env = paraclick_runtime::ArgEnv::default();
        let mut cx = ConfigCx {
            name: "td",
            class: "ToDevice",
            config: conf,
            ninputs: 1,
            noutputs: 0,
            input_kinds: &[],
            output_kinds: &[],
            nthreads: 1,
            env: &mut env,
        };
        (reg.get("ToDevice").unwrap().make)(&mut cx).map(|_| ())
    }

    #[test]
    fn xdp_threads_send_on_queues_of_their_own() {
        // QUEUE given: that queue, whatever the threads.
        assert_eq!(xdp_queues(Some(1), false, 2, 2), vec![1]);
        // Pulled: one task, queue 0.
        assert_eq!(xdp_queues(None, true, 2, 2), vec![0]);
        // Pushed to from two threads, two transmit queues: one each.
        assert_eq!(xdp_queues(None, false, 2, 2), vec![0, 1]);
        // As many as the fewer of threads and queues, at least one.
        assert_eq!(xdp_queues(None, false, 4, 2), vec![0, 1]);
        assert_eq!(xdp_queues(None, false, 2, 4), vec![0, 1]);
        assert_eq!(xdp_queues(None, false, 2, 1), vec![0]);
        assert_eq!(xdp_queues(None, false, 1, 2), vec![0]);
        assert_eq!(xdp_queues(None, false, 2, 0), vec![0]);
    }

    #[test]
    fn configuration_is_checked() {
        assert!(make_conf("eth0").is_ok());
        assert!(make_conf("eth0, 16").is_ok());
        assert!(make_conf("eth0, BURST 16, QUEUE 1").is_ok());
        assert!(make_conf("eth0, METHOD XDP, QUEUE 1, XDP_MODE native").is_ok());
        // 2^64-1 overflowed 4 × BURST.
        let huge = "eth0, BURST 18446744073709551615";
        for (bad, want) in [
            ("", "missing mandatory DEVNAME argument"),
            ("eth0, BURST 0", "BURST must be between 1 and 65536"),
            ("eth0, 0", "BURST must be between 1 and 65536"),
            ("eth0, MODE fast", "unknown keyword MODE"),
            ("x y", "DEVNAME: bad interface name 'x y'"),
            (
                "eth0, ZEROCOPY true",
                "XDP_MODE, ZEROCOPY, SHARE_UMEM and TX_BUDGET need METHOD XDP",
            ),
            (
                "eth0, TX_BUDGET 256",
                "XDP_MODE, ZEROCOPY, SHARE_UMEM and TX_BUDGET need METHOD XDP",
            ),
            (
                "eth0, METHOD RAW",
                "METHOD: expected LINUX, PCAP, NETMAP or XDP, not 'RAW'",
            ),
            (huge, "BURST must be between 1 and 65536"),
        ] {
            assert_err(make_conf(bad), want);
        }
    }
}
