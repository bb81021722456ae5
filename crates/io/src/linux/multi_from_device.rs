//! # MultiFromDevice
//!
//! MultiFromDevice(DEVNAME [QUEUE], ... [, keywords N_QUEUES, BURST, SNIFFER, PROMISC, SNAPLEN, FANOUT, OUTBOUND, TIMESTAMP, FORCE_IP, RING_SIZE, BPF_FILTER, PRIORITY, PRIORITY_FILTER, PRIORITY_RING_SIZE, TPACKET, METHOD, XDP_MODE, ZEROCOPY, PASS, SHARE_UMEM])
//!
//! Polls several receive queues of Linux network devices in one task,
//! filling one burst across them.
//!
//! Ports: no inputs; one output per `DEVNAME [QUEUE]` argument (output
//! i carries the packets of the i-th). Processing: push.
//!
//! The multiple-queue poller of Egi et al. (PRESTO 2010, §5.3 and Figure
//! 5, their "MultiplePollDevice"): where a thread would otherwise run one
//! FromDevice task per queue, each run finding its queue empty or holding
//! fewer packets than a burst, MultiFromDevice owns one task that reads
//! every queue it is given. Each run takes up to BURST packets in all:
//! it reads the first queue, and while the burst is not full, the next
//! one, and so on. The queue it starts at moves on by one every run, so
//! no queue starves when the others are busy. The packets of each queue
//! leave by their own output, in the order they were received, so the
//! configuration still tells the interfaces apart. A run that finds every
//! queue empty lets its worker wait in `poll(2)` on all the queues'
//! sockets, as an idle FromDevice does (`--busy-poll` keeps polling).
//!
//! Each argument names a device and, optionally, the queue of it to read
//! (default 0): `r0 1` is queue 1 of r0. A queue is one member of the
//! device's PACKET_FANOUT group (software receive-side scaling, see
//! `paraclick doc FromDevice`), exactly as FromDevice's `QUEUE` and
//! `N_QUEUES`: every device named here is split into N_QUEUES queues,
//! and the queues of a device may be shared out between MultiFromDevice
//! and FromDevice elements, as long as together they read each queue of
//! the device exactly once, with the same N_QUEUES and FANOUT (checked
//! when the router starts). With N_QUEUES 1 (the default), each argument
//! is a whole device. A device name in capitals followed by a queue (such
//! as `ETH0 1`) reads as a keyword: give such devices as the only word
//! of their argument or use lower-case names.
//!
//! Each queue is read through its own AF_PACKET socket and receive ring
//! (TPACKET_V2 by default, each frame handed over at once; `TPACKET 3`
//! for FromDevice's block ring), with everything FromDevice does for it: the annotations (link
//! header, timestamp, packet type, device, flow hash, VLAN), software
//! segmentation and checksum completion of offloaded frames, GRO turned
//! off, and with `SNIFFER false`, the kernel's own stack kept off the
//! devices. The keyword arguments mean what they mean for FromDevice and
//! apply to every queue.
//!
//! Priority path (`PRIORITY true` or a `PRIORITY_FILTER`, see
//! `paraclick doc FromDevice`): for every device of which this element
//! reads QUEUE 0, a small priority ring takes the control frames
//! PRIORITY_FILTER matches (the queues' rings get the others). Each run
//! reads the priority rings first, up to BURST packets in all, each
//! device's out of that device's output, then polls the queues as above
//! for up to BURST more.
//!
//! Arguments:
//! - `DEVNAME [QUEUE]` (one or more, positional): a device name, then
//!   optionally the queue number (0 <= QUEUE < N_QUEUES, default 0).
//!   The same (device, queue) may not be given twice.
//! - `N_QUEUES` (unsigned, default 1): how many queues each device named
//!   is split into.
//! - `BURST` (unsigned, default 32): most packets emitted per task run,
//!   summed over the queues.
//! - `SNIFFER` (boolean, default true), `PROMISC` (boolean, default
//!   false), `SNAPLEN` (unsigned, default 2046), `FANOUT` (word, default
//!   `HASH`), `OUTBOUND` (boolean, default false), `TIMESTAMP` (boolean,
//!   default true), `FORCE_IP` (boolean, default false), `RING_SIZE`
//!   (bytes, default 16 MiB), `BPF_FILTER` (string), `PRIORITY`
//!   (boolean), `PRIORITY_FILTER` (string), `PRIORITY_RING_SIZE` (bytes,
//!   default 2 MiB): as for FromDevice, for every queue.
//! - `METHOD` (word, default `LINUX`), `XDP_MODE` (word), `ZEROCOPY`
//!   (boolean), `PASS` (string), `SHARE_UMEM` (boolean): as for
//!   FromDevice. With `METHOD XDP` each queue is read
//!   through an AF_XDP socket on that receive queue of its device (see
//!   FromDevice's "METHOD XDP" and docs/AF_XDP.md); N_QUEUES must then be
//!   the devices' number of receive queues.
//!
//! Handlers:
//! - `count` (read): packets emitted, all queues together.
//! - `counts` (read): one line per output: `DEVNAME QUEUE COUNT`.
//! - `drops` (read): frames lost on all queues: the kernel's ring drops
//!   plus the frames this element dropped itself (as FromDevice's).
//! - `kernel_drops` (read): the kernel's ring drops alone.
//! - `kernel_count` (read): frames the kernel gave the AF_PACKET rings or
//!   dropped at them (as FromDevice's).
//! - `reset_counts` (write): resets the counts and the drop counts.
//! - `encap` (read): the link encapsulation, `ETHER`.
//! - `mode` (read): `AF_PACKET`, or with METHOD XDP the first socket's
//!   mode (`XDP native copy`, ...).
//! - `umem_free` (read; METHOD XDP): for each socket read, in argument
//!   order, its receive frames no packet holds (as FromDevice's).
//! - `priority_count` (read), `priority_drops` (read): packets emitted
//!   from the priority rings and their kernel drops (included in `count`,
//!   `counts` and the drop counts).
//!
//! Example: the two-interface, two-queue router of PRESTO 2010 Figure 5,
//! one poller per thread, each polling its queue of both interfaces:
//!
//!     p0 :: MultiFromDevice(eth0 0, eth1 0, N_QUEUES 2, SNIFFER false);
//!     p1 :: MultiFromDevice(eth0 1, eth1 1, N_QUEUES 2, SNIFFER false);
//!     p0[0] -> in0; p1[0] -> in0;    // from eth0
//!     p0[1] -> in1; p1[1] -> in1;    // from eth1
//!     StaticThreadSched(p0 0, p1 1);

use super::rx::{
    check_device_queues, check_devname, QueueClaim, RxClaims, RxCounters, RxOptions, RxQueue,
    RxReader,
};
use super::xdp::{self, XdpClaims, XdpOptions, XskPort};
use paraclick_packet::Batch;
use paraclick_runtime::{ArgEnv, ClassSpec, ConfigCx, Cx, Element, FromArg, Handler, InitCx, Kind};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

pub struct MultiFromDevice {
    /// (device, queue) of each output.
    queues: Vec<(String, usize)>,
    /// The outputs whose device gets a priority ring here: those of
    /// queue 0 arguments, with a PRIORITY_FILTER.
    prio_outputs: Vec<usize>,
    opts: RxOptions,
    /// One ring per queue (output order), then the priority rings (in
    /// `prio_outputs` order).
    rx: OnceLock<Vec<RxQueue>>,
    state: Mutex<PollState>,
    stats: RxCounters,
    /// METHOD XDP: the AF_XDP sockets' options, and one socket per queue
    /// (output order).
    xdp: Option<XdpOptions>,
    xsk: OnceLock<Vec<Arc<XskPort>>>,
}

/// The poller's place: each ring's reader, and where the next run starts.
struct PollState {
    next: usize,
    readers: Vec<RxReader>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("MultiFromDevice", "0/1-", "h", make)
        .drop_reasons(super::rx::RX_DROP_REASONS)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Device)
}

/// Parses one `DEVNAME [QUEUE]` argument.
fn parse_queue_arg(s: &str) -> Result<(String, usize), String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    let (dev, queue) = match words.as_slice() {
        [dev] => (*dev, 0),
        [dev, q] => {
            let q = <usize as FromArg>::from_arg(q, &ArgEnv::default())
                .map_err(|_| format!("'{s}': QUEUE must be an unsigned integer"))?;
            (*dev, q)
        }
        _ => return Err(format!("'{s}': expected DEVNAME [QUEUE]")),
    };
    check_devname("DEVNAME", dev)?;
    Ok((dev.to_string(), queue))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MultiFromDevice, String> {
    let mut a = cx.args();
    let opts = RxOptions::read(&mut a)?;
    let xdp = super::from_device::read_method(&mut a, &opts)?;
    let args = a.rest();
    a.complete()?;
    if args.is_empty() {
        return Err("missing mandatory DEVNAME argument".into());
    }
    let mut queues: Vec<(String, usize)> = Vec::with_capacity(args.len());
    for s in &args {
        let (dev, q) = parse_queue_arg(s)?;
        opts.check_queue(q).map_err(|e| format!("{dev}: {e}"))?;
        if queues.iter().any(|(d, x)| *d == dev && *x == q) {
            return Err(format!("QUEUE {q} of {dev} given twice"));
        }
        queues.push((dev, q));
    }
    if cx.noutputs != queues.len() {
        return Err(format!(
            "{} queue{} to read but {} output{} used: output i carries the packets \
             of the i-th DEVNAME [QUEUE] argument",
            queues.len(),
            if queues.len() == 1 { "" } else { "s" },
            cx.noutputs,
            if cx.noutputs == 1 { "" } else { "s" },
        ));
    }
    let prio_outputs: Vec<usize> = if opts.filters.has_priority() {
        (0..queues.len()).filter(|&i| queues[i].1 == 0).collect()
    } else {
        Vec::new()
    };
    let nrings = queues.len() + prio_outputs.len();
    Ok(MultiFromDevice {
        stats: RxCounters::new(nrings, cx.nthreads),
        state: Mutex::new(PollState {
            next: 0,
            readers: (0..nrings).map(|_| RxReader::default()).collect(),
        }),
        queues,
        prio_outputs,
        opts,
        rx: OnceLock::new(),
        xdp,
        xsk: OnceLock::new(),
    })
}

/// One task run's polling: reads the `n` queues in turn from `start`,
/// `read(i, max, batch)` adding at most about `max` packets of queue `i`
/// to `batch` (a super-frame's segments may overshoot) and returning the
/// frames it dropped, until `burst` packets are taken or every queue was
/// read once. Each non-empty batch goes to `emit(i, batch)` as soon as it
/// is read. Returns (packets, drops).
fn poll_round(
    n: usize,
    start: usize,
    burst: usize,
    mut read: impl FnMut(usize, usize, &mut Batch) -> u64,
    mut emit: impl FnMut(usize, Batch),
) -> (usize, u64) {
    let mut have = 0;
    let mut drops = 0;
    let mut batch = Batch::new();
    let mut i = start;
    for _ in 0..n {
        if have >= burst {
            break;
        }
        drops += read(i, burst - have, &mut batch);
        if !batch.is_empty() {
            have += batch.len();
            emit(i, std::mem::take(&mut batch));
        }
        i += 1;
        if i == n {
            i = 0;
        }
    }
    (have, drops)
}

impl MultiFromDevice {
    /// The queues this element reads.
    pub(super) fn claims(&self) -> impl Iterator<Item = QueueClaim<'_>> {
        self.queues.iter().map(|(d, q)| QueueClaim {
            devname: d,
            queue: *q,
            nqueues: self.opts.nqueues,
            fanout: self.opts.fanout,
            outbound: self.opts.outbound,
            filters: &self.opts.filters,
        })
    }

    /// The `counts` handler: packets emitted per queue, one a line.
    fn counts(&self) -> String {
        let mut s = String::new();
        for (i, (dev, q)) in self.queues.iter().enumerate() {
            let _ = writeln!(s, "{dev} {q} {}", self.output_count(i));
        }
        s
    }

    /// Packets emitted on output `i`: its queue's, and its priority
    /// ring's.
    fn output_count(&self, i: usize) -> u64 {
        let n = self.queues.len();
        let prio = self.prio_outputs.iter().position(|&o| o == i);
        self.stats.count_of(i) + prio.map_or(0, |j| self.stats.count_of(n + j))
    }

    /// Packets emitted from the priority rings.
    fn priority_count(&self) -> u64 {
        let n = self.queues.len();
        (0..self.prio_outputs.len())
            .map(|j| self.stats.count_of(n + j))
            .sum()
    }

    /// The priority rings' kernel drops.
    fn priority_drops(&self) -> u64 {
        let n = self.queues.len();
        self.rings().iter().skip(n).map(RxQueue::kernel_drops).sum()
    }

    /// The AF_XDP sockets' kernel drops (0 without them).
    fn xdp_drops(&self) -> u64 {
        self.xsk
            .get()
            .map_or(0, |v| v.iter().map(|x| x.kernel_drops()).sum())
    }

    /// A task run with METHOD XDP: the queues' sockets polled in turn,
    /// as the rings are.
    fn run_xdp(&self, cx: &mut Cx<'_>, ports: &[Arc<XskPort>]) -> bool {
        let Ok(mut st) = self.state.try_lock() else {
            return false;
        };
        let n = ports.len();
        let start = st.next;
        st.next = if start + 1 == n { 0 } else { start + 1 };
        let thread = cx.thread();
        let (got, drops) = poll_round(
            n,
            start,
            self.opts.burst,
            |i, max, b| ports[i].read(max, self.opts.snaplen, self.opts.timestamp, b),
            |i, b| {
                self.stats.emitted(i, thread, b.len());
                cx.push(i, b);
            },
        );
        drop(st);
        self.stats.dropped_for(cx, super::rx::UMEM_SHORTAGE, drops);
        if got == 0 && drops == 0 {
            // Idle: the worker may wait until a socket is readable.
            for p in ports {
                cx.wake_when_readable(p.fd());
            }
        }
        got > 0 || drops > 0
    }

    /// The open rings (none before initialization).
    fn rings(&self) -> &[RxQueue] {
        self.rx.get().map(Vec::as_slice).unwrap_or_default()
    }
}

impl RxClaims for MultiFromDevice {
    fn claims(&self) -> Vec<QueueClaim<'_>> {
        MultiFromDevice::claims(self).collect()
    }
}

impl XdpClaims for MultiFromDevice {
    fn xdp_claims(&self) -> Vec<(&str, usize, bool, bool)> {
        match self.xdp {
            Some(_) => self
                .queues
                .iter()
                .map(|(d, q)| (d.as_str(), *q, true, false))
                .collect(),
            None => Vec::new(),
        }
    }

    fn xdp_pass(&self) -> Option<&super::xdp_pass::PassFilter> {
        self.xdp.as_ref().and_then(|o| o.pass.as_ref())
    }

    fn xdp_share(&self) -> bool {
        self.xdp.as_ref().is_none_or(|o| o.share)
    }
}

impl Element for MultiFromDevice {
    /// Its queues, to the others reading their devices; with METHOD XDP,
    /// to the ToDevice elements sharing their sockets.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, MultiFromDevice, dyn RxClaims => |m| m, dyn XdpClaims => |m| m)
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.stats.count().to_string()),
        Handler::read("counts", |e, _| e.counts()),
        Handler::read("drops", |e, _| {
            (e.stats.drops(e.rings()) + e.xdp_drops()).to_string()
        }),
        Handler::read("kernel_count", |e, _| {
            e.stats.kernel_count(e.rings()).to_string()
        }),
        Handler::read("kernel_drops", |e, _| {
            (e.stats.kernel_drops(e.rings()) + e.xdp_drops()).to_string()
        }),
        Handler::read("mode", |e, _| match (&e.xdp, e.xsk.get()) {
            (None, _) => "AF_PACKET".into(),
            (Some(_), Some(x)) => x
                .first()
                .map_or_else(String::new, |x| format!("XDP {}", x.mode())),
            (Some(_), None) => "XDP (not open)".into(),
        }),
        Handler::read("umem_free", |e, _| {
            e.xsk.get().map_or_else(String::new, |v| {
                v.iter()
                    .filter_map(|x| x.rx_frames_free())
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }),
        Handler::write("reset_counts", |e, _, _| {
            e.stats.reset(e.rings());
            Ok(())
        }),
        Handler::read("encap", |_, _| "ETHER".into()),
        Handler::read("priority_count", |e, _| e.priority_count().to_string()),
        Handler::read("priority_drops", |e, _| e.priority_drops().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // Once per device: its queues, read here and elsewhere, add up.
        for (k, c) in self.claims().enumerate() {
            if !self.queues[..k].iter().any(|(d, _)| d == c.devname) {
                check_device_queues(ix, &c)?;
            }
        }
        // Its task, declared when checked too: see FromDevice.
        ix.add_task();
        if ix.checking() {
            return Ok(());
        }
        if let Some(o) = &self.xdp {
            let mut ports = Vec::with_capacity(self.queues.len());
            for (dev, q) in &self.queues {
                xdp::check_rx_queues(dev, *q, self.opts.nqueues)?;
                let (_, tx, pass) = xdp::rings_wanted(ix, dev, *q)?;
                let group = xdp::umem_group(ix);
                ports.push(xdp::port(
                    dev,
                    *q as u32,
                    true,
                    tx,
                    o,
                    pass.as_ref(),
                    &group,
                )?);
            }
            let _ = self.xsk.set(ports);
            return Ok(());
        }
        // Priority rings first: no control frame is lost in between.
        let mut prio = Vec::with_capacity(self.prio_outputs.len());
        for &i in &self.prio_outputs {
            prio.extend(RxQueue::open_priority(&self.queues[i].0, &self.opts)?);
        }
        let mut rx = self
            .queues
            .iter()
            .map(|(dev, q)| RxQueue::open(dev, *q, &self.opts))
            .collect::<Result<Vec<_>, _>>()?;
        rx.extend(prio);
        if self.rx.set(rx).is_err() {
            return Err("initialized twice".into());
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if let Some(ports) = self.xsk.get() {
            return self.run_xdp(cx, ports);
        }
        let Some(rx) = self.rx.get() else {
            return false;
        };
        // One poller at a time; a second runner finds nothing to do.
        let Ok(mut guard) = self.state.try_lock() else {
            return false;
        };
        let st = &mut *guard;
        let n = self.queues.len();
        let thread = cx.thread();
        // The priority rings first, up to a burst in all: a control frame
        // waits for one run at most, never behind the queues' backlogs.
        let mut prio_got = 0;
        let mut drops = 0;
        for (j, &out) in self.prio_outputs.iter().enumerate() {
            if prio_got >= self.opts.burst {
                break;
            }
            let mut b = Batch::new();
            drops += rx[n + j].read(
                &mut st.readers[n + j],
                &self.opts,
                self.opts.burst - prio_got,
                &mut b,
            );
            if !b.is_empty() {
                prio_got += b.len();
                self.stats.emitted(n + j, thread, b.len());
                cx.push(out, b);
            }
        }
        let start = st.next;
        st.next = if start + 1 == n { 0 } else { start + 1 };
        let readers = &mut st.readers;
        // Batches are pushed with the lock held, so each queue's packets
        // leave in order.
        let (got, queue_drops) = poll_round(
            n,
            start,
            self.opts.burst,
            |i, max, b| rx[i].read(&mut readers[i], &self.opts, max, b),
            |i, b| {
                self.stats.emitted(i, thread, b.len());
                cx.push(i, b);
            },
        );
        drop(guard);
        let drops = drops + queue_drops;
        self.stats.dropped(cx, drops);
        if got + prio_got == 0 && drops == 0 {
            // Idle: the worker may wait until a ring's socket is readable.
            for ring in rx {
                cx.wake_when_readable(ring.fd());
            }
        }
        got + prio_got > 0 || drops > 0
    }
}

#[cfg(test)]
mod tests {
    use super::super::rx::tests::configure;
    use super::*;
    use crate::test_util::{build_err, full_registry};
    use paraclick_packet::Packet;

    fn element(conf: &str, noutputs: usize) -> Result<MultiFromDevice, String> {
        configure("MultiFromDevice", make, conf, noutputs)
    }

    #[test]
    fn arguments_are_parsed() {
        let e = element("r0", 1).unwrap();
        assert_eq!(e.queues, vec![("r0".to_string(), 0)]);
        assert_eq!((e.opts.nqueues, e.opts.burst), (1, 32));
        assert!(e.opts.sniffer && !e.opts.promisc && e.opts.timestamp);

        let e = element(
            "r0 1, r1 1, eth2, N_QUEUES 2, BURST 64, SNIFFER false, FANOUT lb, SNAPLEN 100",
            3,
        )
        .unwrap();
        assert_eq!(
            e.queues,
            vec![("r0".into(), 1), ("r1".into(), 1), ("eth2".into(), 0)]
        );
        assert_eq!(
            (e.opts.nqueues, e.opts.burst, e.opts.fanout, e.opts.snaplen),
            (2, 64, 1, 100)
        );
        assert!(!e.opts.sniffer);
        let claims: Vec<(String, usize, usize, u32)> = e
            .claims()
            .map(|c| (c.devname.to_string(), c.queue, c.nqueues, c.fanout))
            .collect();
        assert_eq!(claims[1], ("r1".to_string(), 1, 2, 1));
        // The same device twice, different queues: two rings of one group.
        let e = element("r0 0, r0 1, N_QUEUES 2", 2).unwrap();
        assert_eq!(e.queues.len(), 2);
    }

    #[test]
    fn bad_arguments_are_errors() {
        for (bad, nout, want) in [
            ("", 1, "missing mandatory DEVNAME"),
            ("N_QUEUES 2", 1, "missing mandatory DEVNAME"),
            ("r0 2, N_QUEUES 2", 1, "QUEUE 2 out of range"),
            ("r0 1", 1, "QUEUE 1 out of range"),
            ("r0 x", 1, "QUEUE must be an unsigned integer"),
            ("r0 -1", 1, "QUEUE must be an unsigned integer"),
            ("r0 0 1", 1, "expected DEVNAME [QUEUE]"),
            ("r0 0, r0 0, N_QUEUES 2", 2, "QUEUE 0 of r0 given twice"),
            ("r0, r0", 2, "QUEUE 0 of r0 given twice"),
            ("a/b", 1, "bad interface name"),
            ("averyveryverylongname 0", 1, "bad interface name"),
            ("r0, r1", 1, "2 queues to read but 1 output used"),
            ("r0", 2, "1 queue to read but 2 outputs used"),
            ("r0, BURST 0", 1, "BURST must be at least 1"),
            ("r0, N_QUEUES 0", 1, "N_QUEUES must be between"),
            ("r0, N_QUEUES 300", 1, "N_QUEUES must be between"),
            ("r0, FANOUT SIDEWAYS", 1, "FANOUT: unknown mode"),
            ("r0, SNAPLEN 4", 1, "SNAPLEN must be at least 14"),
            ("r0, SNIFFER maybe", 1, "SNIFFER"),
            ("r0, QUEUE 1", 1, "unknown keyword QUEUE"),
            ("r0, NOPE 1", 1, "unknown keyword NOPE"),
        ] {
            match element(bad, nout) {
                Ok(_) => panic!("'{bad}' accepted"),
                Err(e) => assert!(e.contains(want), "'{bad}': {e} (want '{want}')"),
            }
        }
    }

    /// Fake queues for `poll_round`: queue i holds `have[i]` packets of
    /// length 60 + i.
    fn run_round(have: &mut [usize], start: usize, burst: usize) -> (Vec<(usize, usize)>, usize) {
        let mut emitted = Vec::new();
        let n = have.len();
        let (got, drops) = poll_round(
            n,
            start,
            burst,
            |i, max, b| {
                while have[i] > 0 && b.len() < max {
                    have[i] -= 1;
                    b.push(Packet::new(60 + i).unwrap());
                }
                0
            },
            |i, b| {
                assert!(
                    b.iter().all(|p| p.len() == 60 + i),
                    "queue {i}'s packets on its output"
                );
                emitted.push((i, b.len()));
            },
        );
        assert_eq!(drops, 0);
        (emitted, got)
    }

    #[test]
    fn a_burst_is_filled_across_queues_from_a_moving_start() {
        // Queue 0 has 10, queue 1 has 50, queue 2 has 5: from queue 0 a
        // burst of 32 takes all 10 of queue 0 and 22 of queue 1.
        let mut have = [10, 50, 5];
        let (em, got) = run_round(&mut have, 0, 32);
        assert_eq!((em, got), (vec![(0, 10), (1, 22)], 32));
        // From queue 1: its 28 left, then 4 of queue 2.
        let (em, got) = run_round(&mut have, 1, 32);
        assert_eq!((em, got), (vec![(1, 28), (2, 4)], 32));
        // From queue 2: its last one; queues 0 and 1 are empty (no
        // empty batch is emitted).
        let (em, got) = run_round(&mut have, 2, 32);
        assert_eq!((em, got), (vec![(2, 1)], 1));
        let (em, got) = run_round(&mut have, 0, 32);
        assert_eq!((em, got), (vec![], 0));
    }

    #[test]
    fn no_queue_starves_behind_a_busy_one() {
        // Queue 0 always has more than a burst; queues 1 and 2 a little.
        // With the start moving on every run, each gets read.
        let mut have = [1_000_000, 0, 0];
        let mut per_queue = [0usize; 3];
        for run in 0..30 {
            have[1] += 3;
            have[2] += 3;
            let (em, _) = run_round(&mut have, run % 3, 8);
            for (i, k) in em {
                per_queue[i] += k;
            }
        }
        // Queues 1 and 2 were given 90 packets each; with a full burst
        // from queue 0 every third run, they lag by at most a few runs.
        assert!(per_queue[1] >= 60 && per_queue[2] >= 60, "{per_queue:?}");
        assert!(per_queue[0] >= 60, "{per_queue:?}");
    }

    #[test]
    fn an_overshooting_queue_ends_the_round() {
        // A super-frame's segments can overshoot `max`: the round stops
        // there, and no later queue is asked for a negative number.
        let mut asked = Vec::new();
        let (got, _) = poll_round(
            3,
            0,
            4,
            |i, max, b| {
                asked.push((i, max));
                for _ in 0..6 {
                    b.push(Packet::new(60).unwrap());
                }
                0
            },
            |_, _| {},
        );
        assert_eq!((got, asked), (6, vec![(0, 4)]));
    }

    /// The queues of a device, split between FromDevice and
    /// MultiFromDevice, are checked together before any device is opened
    /// (the devices here do not exist: a configuration that passes the
    /// check fails later, on the missing device).
    #[test]
    fn queues_shared_with_from_device_are_checked_together() {
        let e = build_err(
            &full_registry(),
            "m :: MultiFromDevice(pcnodev0 0, pcnodev1 0, N_QUEUES 2) -> Discard; m[1] -> Discard;
             FromDevice(pcnodev0, QUEUE 0, N_QUEUES 2) -> Discard;",
        );
        assert!(e.contains("both read QUEUE 0 of pcnodev0"), "{e}");
        let e = build_err(
            &full_registry(),
            "m :: MultiFromDevice(pcnodev0 0, N_QUEUES 2) -> Discard;
             FromDevice(pcnodev0, QUEUE 1, N_QUEUES 3) -> Discard;",
        );
        assert!(e.contains("N_QUEUES 3"), "{e}");
        let e = build_err(
            &full_registry(),
            "m :: MultiFromDevice(pcnodev0 0, N_QUEUES 2) -> Discard;
             FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2, FANOUT LB) -> Discard;",
        );
        assert!(e.contains("FANOUT LB") && e.contains("FANOUT HASH"), "{e}");
        let e = build_err(
            &full_registry(),
            "m :: MultiFromDevice(pcnodev0 0, N_QUEUES 3) -> Discard;",
        );
        assert!(e.contains("nobody reads QUEUE 1, 2"), "{e}");
        // Complete: queue 0 here, queue 1 in a FromDevice, queue 1 of
        // the second device here too; only the missing device is left.
        let e = build_err(
            &full_registry(),
            "m :: MultiFromDevice(pcnodev0 0, pcnodev1 0, pcnodev1 1, N_QUEUES 2) -> Discard;
             m[1] -> Discard; m[2] -> Discard;
             FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2) -> Discard;",
        );
        assert!(!e.contains("QUEUE") && e.contains("pcnodev"), "{e}");
    }

    /// With a priority path, each queue-0 argument gets a priority ring
    /// emitted on its own output; other queues' devices get none here.
    #[test]
    fn priority_rings_belong_to_queue_zero_arguments() {
        let e = element("r0 0, r0 1, r1 1, r2, N_QUEUES 2, PRIORITY true", 4).unwrap();
        assert_eq!(e.prio_outputs, vec![0, 3]);
        assert_eq!(e.state.lock().unwrap().readers.len(), 6);
        let e = element("r0, r1", 2).unwrap();
        assert!(e.prio_outputs.is_empty());
        let m = element("r0, BPF_FILTER \"ip and\"", 1).err().unwrap();
        assert!(m.starts_with("BPF_FILTER: bad filter expression"), "{m}");
        let e = build_err(
            &full_registry(),
            "m :: MultiFromDevice(pcnodev0 0, N_QUEUES 2, PRIORITY_FILTER arp) -> Discard;
             FromDevice(pcnodev0, QUEUE 1, N_QUEUES 2, PRIORITY_FILTER icmp) -> Discard;",
        );
        assert!(
            e.contains("PRIORITY_FILTER 'arp'") && e.contains("PRIORITY_FILTER 'icmp'"),
            "{e}"
        );
    }
}
