//! # FromDevice
//!
//! FromDevice(DEVNAME [, keywords SNIFFER, PROMISC, BURST, SNAPLEN, QUEUE, N_QUEUES, FANOUT, OUTBOUND, TIMESTAMP, FORCE_IP])
//!
//! Reads packets from a Linux network device (AF_PACKET, TPACKET_V3 ring).
//!
//! Ports: no inputs, 1 output. Processing: push.
//!
//! Receives the frames arriving on the Linux interface DEVNAME through an
//! AF_PACKET socket with a memory-mapped TPACKET_V3 receive ring (blocks
//! of frames the kernel fills and hands over), and pushes them out of
//! output 0, link header included. FromDevice owns a task that polls the
//! ring without blocking: each run emits one batch of at most BURST
//! packets (each copied into a pooled packet) and reports no work when no
//! block is ready, so an idle worker can back off. A block the kernel has
//! only partly filled is handed over at the latest 1 ms after its first
//! frame.
//!
//! Each packet gets its link (MAC) header annotation, its timestamp (the
//! kernel's receive time), the packet type annotation (`HOST`,
//! `BROADCAST`, `MULTICAST`, `OTHERHOST`), the device annotation (the
//! interface index), the flow hash annotation (the kernel's receive hash),
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
//! it), and turns off IPv6 (`disable_ipv6`), IPv4 forwarding and ARP
//! replies (`arp_ignore 8`) on DEVNAME, restoring them when the router
//! ends. Run a router on interfaces without addresses, in a namespace
//! whose other interfaces hold no addresses either (Linux accepts packets
//! for any of the host's addresses on any interface).
//!
//! Multiple queues. `N_QUEUES n` with `QUEUE i` (0 <= i < n) makes this
//! element one of n FromDevice elements reading DEVNAME together: they
//! join one PACKET_FANOUT group, and the kernel deals each flow to one of
//! them (software receive-side scaling). Put each on its own thread with
//! StaticThreadSched. There must be exactly n FromDevice elements for
//! DEVNAME, with distinct QUEUE numbers.
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
//!   (by receiving CPU), `RND` (random), `QM` (by device queue),
//!   `ROLLOVER` (fill one, then the next).
//! - `OUTBOUND` (boolean, default false): also emit the frames this host
//!   sends on DEVNAME (packet type `OUTGOING`).
//! - `TIMESTAMP` (boolean, default true): set the timestamp annotation.
//! - `FORCE_IP` (boolean, default false): emit only IPv4 packets (link
//!   header kept, network header annotation set); drop the rest.
//!
//! Handlers:
//! - `count` (read): packets emitted.
//! - `drops` (read): frames lost: dropped by the kernel because the ring
//!   was full (`PACKET_STATISTICS`), plus frames FromDevice dropped itself
//!   (no packet buffer, a super-frame it could not cut, FORCE_IP).
//! - `kernel_drops` (read): the kernel's ring drops alone (Click's name).
//! - `reset_counts` (write): resets `count` and the drop counts.
//! - `encap` (read): the link encapsulation, `ETHER`.
//!
//! Example: a two-queue input, one queue per thread:
//!
//!     fd0 :: FromDevice(eth0, QUEUE 0, N_QUEUES 2, SNIFFER false) -> ...;
//!     fd1 :: FromDevice(eth0, QUEUE 1, N_QUEUES 2, SNIFFER false) -> ...;
//!     StaticThreadSched(fd0 0, fd1 1);

use super::offload::{complete_csum, segment, OffloadError};
use super::ring::{
    Cursor, Frame, RxRing, PACKET_BROADCAST, PACKET_HOST, PACKET_MULTICAST, PACKET_OTHERHOST,
    PACKET_OUTGOING,
};
use super::sys::{self, FanoutMember, KernelOff, RxConfig};
use paraclick_packet::{Batch, Packet, PacketType, Timestamp};
use paraclick_runtime::{
    ClassSpec, ConfigCx, Counter, Cx, Element, HandlerCx, HandlerInfo, InitCx,
};
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};

/// Ring geometry: blocks big enough for a 64 KB super-frame; 16 MB in
/// all. At low rates each block holds what arrives in RETIRE_MS, so the
/// block count is also how long (128 ms) the reader may be held up (by a
/// busy CPU) before frames are lost.
const BLOCK_SIZE: usize = 1 << 17;
const NBLOCKS: usize = 128;
/// Longest a partly filled block waits before the kernel hands it over.
const RETIRE_MS: u32 = 1;

pub struct FromDevice {
    devname: String,
    sniffer: bool,
    promisc: bool,
    burst: usize,
    snaplen: usize,
    queue: usize,
    nqueues: usize,
    fanout: u32,
    outbound: bool,
    timestamp: bool,
    force_ip: bool,
    rx: OnceLock<Rx>,
    count: Counter,
    own_drops: Counter,
    /// Kernel ring drops read so far (reading resets the kernel's count).
    kernel_drops: Mutex<u64>,
}

/// The open device. Fields drop in order: the ring is unmapped before the
/// socket closes.
struct Rx {
    ring: RxRing,
    state: Mutex<RxState>,
    fd: OwnedFd,
    devname: String,
    gro_was_on: bool,
    _fanout: Option<FanoutMember>,
    _kernel_off: Option<KernelOff>,
}

/// The reader's place in the ring.
struct RxState {
    block: usize,
    cursor: Option<Cursor>,
}

impl Drop for Rx {
    fn drop(&mut self) {
        if self.gro_was_on {
            sys::enable_gro(&self.fd, &self.devname);
        }
    }
}

pub fn spec() -> ClassSpec {
    ClassSpec::new("FromDevice", "0/1", "h", make)
}

fn fanout_mode(s: &str) -> Option<u32> {
    Some(match s.to_ascii_uppercase().as_str() {
        "HASH" => 0,
        "LB" => 1,
        "CPU" => 2,
        "ROLLOVER" => 3,
        "RND" => 4,
        "QM" => 5,
        _ => return None,
    })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Box<dyn Element>, String> {
    let mut a = cx.args();
    let devname = a.read_mp::<String>("DEVNAME")?;
    let sniffer = a.read::<bool>("SNIFFER")?.unwrap_or(true);
    let promisc = a.read::<bool>("PROMISC")?.unwrap_or(false);
    let burst = a.read::<usize>("BURST")?.unwrap_or(32);
    let snaplen = a.read::<usize>("SNAPLEN")?.unwrap_or(2046);
    let queue = a.read::<usize>("QUEUE")?.unwrap_or(0);
    let nqueues = a.read::<usize>("N_QUEUES")?.unwrap_or(1);
    let fanout = a.read::<String>("FANOUT")?;
    let outbound = a.read::<bool>("OUTBOUND")?.unwrap_or(false);
    let timestamp = a.read::<bool>("TIMESTAMP")?.unwrap_or(true);
    let force_ip = a.read::<bool>("FORCE_IP")?.unwrap_or(false);
    a.complete()?;
    if devname.is_empty() || devname.len() >= 16 || devname.contains(['/', ' ', '\0']) {
        return Err(format!("DEVNAME: bad interface name '{devname}'"));
    }
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    if snaplen < 14 {
        return Err("SNAPLEN must be at least 14".into());
    }
    if nqueues == 0 || nqueues > 256 {
        return Err("N_QUEUES must be between 1 and 256".into());
    }
    if queue >= nqueues {
        return Err(format!("QUEUE {queue} out of range: N_QUEUES is {nqueues}"));
    }
    let fanout = match fanout {
        None => 0,
        Some(f) => fanout_mode(&f).ok_or_else(|| {
            format!("FANOUT: unknown mode '{f}' (HASH, LB, CPU, RND, QM, ROLLOVER)")
        })?,
    };
    Ok(Box::new(FromDevice {
        devname,
        sniffer,
        promisc,
        burst,
        snaplen,
        queue,
        nqueues,
        fanout,
        outbound,
        timestamp,
        force_ip,
        rx: OnceLock::new(),
        count: Counter::new(cx.nthreads),
        own_drops: Counter::new(cx.nthreads),
        kernel_drops: Mutex::new(0),
    }))
}

/// Puts a VLAN tag back after the MAC addresses.
fn insert_vlan(p: &mut Packet, tpid: u16, tci: u16) -> bool {
    if p.len() < 12 || p.push(4).is_err() {
        return false;
    }
    let d = p.data_mut();
    d.copy_within(4..16, 0);
    d[12..14].copy_from_slice(&tpid.to_be_bytes());
    d[14..16].copy_from_slice(&tci.to_be_bytes());
    true
}

fn packet_type(t: u8) -> PacketType {
    match t {
        PACKET_HOST => PacketType::Host,
        PACKET_BROADCAST => PacketType::Broadcast,
        PACKET_MULTICAST => PacketType::Multicast,
        PACKET_OTHERHOST => PacketType::OtherHost,
        PACKET_OUTGOING => PacketType::Outgoing,
        5 => PacketType::Loopback,
        _ => PacketType::Host,
    }
}

impl FromDevice {
    /// Annotates a packet made from frame `f` (data at its link header);
    /// false if FORCE_IP rejects it.
    fn finish(&self, p: &mut Packet, f: &Frame<'_>) -> bool {
        if let Some((tpid, tci)) = f.vlan {
            if !insert_vlan(p, tpid, tci) {
                return false;
            }
            p.anno_mut().vlan_tci = tci;
        }
        if p.len() > self.snaplen {
            let extra = (p.len() - self.snaplen) as u32;
            p.take(p.len() - self.snaplen);
            p.anno_mut().extra_length = extra;
        } else if f.truncated() {
            p.anno_mut().extra_length = f.wire_len - f.data.len() as u32;
        }
        p.set_mac_header(0);
        {
            let a = p.anno_mut();
            a.packet_type = packet_type(f.pkttype);
            a.device = f.ifindex as u16;
            a.flow_hash = f.rxhash;
            if self.timestamp {
                a.timestamp = Timestamp::from_parts(f.sec as i64, f.nsec);
            }
        }
        if self.force_ip {
            let d = p.data();
            let ok = d.len() >= 34 && d[12..14] == [0x08, 0x00] && d[14] >> 4 == 4;
            let ihl = if ok { (d[14] & 15) as usize * 4 } else { 0 };
            if !ok || ihl < 20 || 14 + ihl > d.len() {
                return false;
            }
            p.set_network_header(14, ihl);
        }
        true
    }

    /// Turns frame `f` into packets appended to `out`; returns how many
    /// frames' worth were dropped (0 or 1).
    fn take(&self, f: &Frame<'_>, out: &mut Batch) -> u64 {
        if f.pkttype == PACKET_OUTGOING && !self.outbound {
            return 0;
        }
        let v = f.vnet.filter(|v| v.is_gso() || v.needs_csum());
        if let Some(v) = v {
            // A cut-short frame cannot have its checksum completed or be
            // segmented: never forward it half-done.
            if f.truncated() {
                return 1;
            }
            if v.is_gso() {
                let start = out.len();
                return match segment(f.data, &v, out) {
                    Ok(_) => {
                        let mut bad = 0;
                        let tail = out.split_off(start);
                        for mut p in tail {
                            if self.finish(&mut p, f) {
                                out.push(p);
                            } else {
                                bad += 1;
                            }
                        }
                        // A frame counts once, however many segments it lost.
                        u64::from(bad > 0)
                    }
                    Err(OffloadError::NoBuffer)
                    | Err(OffloadError::Unsupported)
                    | Err(OffloadError::Malformed) => 1,
                };
            }
        }
        let Some(mut p) = Packet::new(f.data.len()) else {
            return 1;
        };
        p.data_mut().copy_from_slice(f.data);
        if let Some(v) = v {
            if !complete_csum(p.data_mut(), v.csum_start as usize, v.csum_offset as usize) {
                return 1;
            }
        }
        if !self.finish(&mut p, f) {
            return 1;
        }
        out.push(p);
        0
    }

    fn read_kernel_drops(&self) -> u64 {
        let mut total = self.kernel_drops.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rx) = self.rx.get() {
            if let Ok((_, d)) = sys::ring_stats(&rx.fd) {
                *total += d as u64;
            }
        }
        *total
    }

    /// Checks that the FromDevice elements sharing DEVNAME agree on
    /// N_QUEUES and hold distinct QUEUE numbers, one per queue.
    fn check_queues(&self, ix: &InitCx<'_>) -> Result<(), String> {
        let mut queues = Vec::new();
        for i in 0..ix.element_count() {
            let e: &dyn std::any::Any = ix.element(i);
            let Some(fd) = e.downcast_ref::<FromDevice>() else {
                continue;
            };
            if fd.devname != self.devname {
                continue;
            }
            if fd.nqueues != self.nqueues {
                return Err(format!(
                    "{} reads {} with N_QUEUES {}, this element with N_QUEUES {}",
                    ix.element_name(i),
                    self.devname,
                    fd.nqueues,
                    self.nqueues
                ));
            }
            queues.push((fd.queue, ix.element_name(i).to_string()));
        }
        queues.sort();
        for w in queues.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(format!(
                    "{} and {} both read QUEUE {} of {}",
                    w[0].1, w[1].1, w[0].0, self.devname
                ));
            }
        }
        if queues.len() != self.nqueues {
            return Err(format!(
                "N_QUEUES {} but {} FromDevice element{} read {}",
                self.nqueues,
                queues.len(),
                if queues.len() == 1 { "" } else { "s" },
                self.devname
            ));
        }
        Ok(())
    }
}

const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("count"),
    HandlerInfo::read("drops"),
    HandlerInfo::read("kernel_drops"),
    HandlerInfo::write("reset_counts"),
    HandlerInfo::read("encap"),
];

impl Element for FromDevice {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.check_queues(ix)?;
        let ifindex = sys::ifindex(&self.devname)?;
        let (fd, ring) = sys::open_rx(&RxConfig {
            ifindex,
            block_size: BLOCK_SIZE,
            nblocks: NBLOCKS,
            retire_ms: RETIRE_MS,
            vnet_hdr: true,
            ignore_outgoing: !self.outbound,
            promisc: self.promisc,
        })
        .map_err(|e| format!("{}: {e}", self.devname))?;
        let fanout = if self.nqueues > 1 {
            Some(
                sys::fanout_join(&fd, ifindex, self.fanout)
                    .map_err(|e| format!("{}: {e}", self.devname))?,
            )
        } else {
            None
        };
        let gro_was_on = sys::disable_gro(&fd, &self.devname)?.unwrap_or(false);
        let mut rx = Rx {
            ring,
            state: Mutex::new(RxState {
                block: 0,
                cursor: None,
            }),
            fd,
            devname: self.devname.clone(),
            gro_was_on,
            _fanout: fanout,
            _kernel_off: None,
        };
        if !self.sniffer {
            rx._kernel_off = Some(sys::kernel_off(&self.devname)?);
        }
        // Drops counted from now on.
        let _ = sys::ring_stats(&rx.fd);
        if self.rx.set(rx).is_err() {
            return Err("initialized twice".into());
        }
        ix.add_task();
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let Some(rx) = self.rx.get() else {
            return false;
        };
        // One reader at a time; a second runner finds nothing to do.
        let Ok(mut st) = rx.state.try_lock() else {
            return false;
        };
        let nblocks = rx.ring.nblocks();
        let mut batch = Batch::new();
        let mut drops = 0u64;
        while batch.len() < self.burst {
            let Some(block) = rx.ring.user_block(st.block) else {
                break;
            };
            let bytes = block.bytes();
            let mut cur = match st.cursor {
                Some(c) => c,
                None => Cursor::start(bytes).unwrap_or_default(),
            };
            while batch.len() < self.burst {
                match cur.next_frame(bytes, true) {
                    None => break,
                    Some(Ok(f)) => drops += self.take(&f, &mut batch),
                    Some(Err(lost)) => drops += lost as u64,
                }
            }
            if cur.done() {
                block.release();
                st.block = (st.block + 1) % nblocks;
                st.cursor = None;
            } else {
                st.cursor = Some(cur);
            }
        }
        if drops > 0 {
            self.own_drops.add(cx.thread(), drops);
            cx.count_drops(drops);
        }
        if batch.is_empty() {
            return drops > 0;
        }
        self.count.add(cx.thread(), batch.len() as u64);
        // Pushed with the reader's lock held, so batches leave in order.
        cx.push(0, batch);
        drop(st);
        true
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<String> {
        Some(match name {
            "count" => self.count.get().to_string(),
            "kernel_drops" => self.read_kernel_drops().to_string(),
            "drops" => (self.read_kernel_drops() + self.own_drops.get()).to_string(),
            "encap" => "ETHER".to_string(),
            _ => return None,
        })
    }

    fn write_handler(
        &self,
        name: &str,
        _value: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        match name {
            "reset_counts" => {
                self.read_kernel_drops();
                *self.kernel_drops.lock().unwrap_or_else(|e| e.into_inner()) = 0;
                self.count.reset();
                self.own_drops.reset();
                Some(Ok(()))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::offload::tests::{ipv4_valid, tcp4_frame};
    use super::super::ring::tests::{build_block, TestFrame};
    use super::super::ring::{TP_STATUS_USER, TP_STATUS_VLAN_VALID};
    use super::*;
    use paraclick_runtime::Registry;

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.register(spec());
        r
    }

    fn element(conf: &str) -> Result<FromDevice, String> {
        let reg = registry();
        let mut env = paraclick_runtime::ArgEnv::default();
        let mut cx = ConfigCx {
            name: "fd",
            class: "FromDevice",
            config: conf,
            ninputs: 0,
            noutputs: 1,
            input_kinds: &[],
            output_kinds: &[],
            nthreads: 1,
            env: &mut env,
        };
        let e = (reg.get("FromDevice").unwrap().make)(&mut cx)?;
        let any: Box<dyn std::any::Any> = e;
        Ok(*any.downcast::<FromDevice>().unwrap())
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
                Ok(f) => drops += e.take(&f, &mut out),
                Err(n) => drops += n as u64,
            }
        }
        (out.into_iter().collect(), drops)
    }

    #[test]
    fn configuration_is_checked() {
        assert!(element("eth0").is_ok());
        let e = element("eth0, BURST 8, SNAPLEN 100, QUEUE 1, N_QUEUES 2, FANOUT lb").unwrap();
        assert_eq!(
            (e.burst, e.snaplen, e.queue, e.nqueues, e.fanout),
            (8, 100, 1, 2, 1)
        );
        assert!(e.sniffer && !e.promisc && !e.outbound && e.timestamp);
        for bad in [
            "",
            "eth0, BURST 0",
            "eth0, QUEUE 2, N_QUEUES 2",
            "eth0, N_QUEUES 0",
            "eth0, FANOUT SIDEWAYS",
            "eth0, SNAPLEN 4",
            "a/b",
            "averyveryverylongname",
            "eth0, NOPE 1",
        ] {
            assert!(element(bad).is_err(), "{bad}");
        }
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
