//! The receive side FromDevice and MultiFromDevice share: the keyword
//! arguments, opening a device's TPACKET_V3 ring (with its fanout group,
//! GRO and SNIFFER settings), reading a burst of frames from it, turning
//! frames into annotated packets, and checking that the elements reading
//! one device agree on its queues. Not an element.

use super::bpf::{RxFilters, DEFAULT_PRIORITY_FILTER};
use super::offload::{complete_csum, segment, OffloadError};
use super::ring::{
    parse_slot_v2, Cursor, Frame, RxRing, PACKET_BROADCAST, PACKET_HOST, PACKET_MULTICAST,
    PACKET_OTHERHOST, PACKET_OUTGOING, TP_STATUS_COPY,
};
use super::sys::{self, FanoutMember, KernelOff, RxConfig};
use paraclick_packet::{Batch, Packet, PacketType, Timestamp};
use paraclick_runtime::{Args, Cx, InitCx, PerThreadCount};
use std::os::fd::OwnedFd;
use std::sync::Mutex;

/// Ring geometry: blocks big enough for a 64 KB super-frame; 16 MB in
/// all. At low rates each block holds what arrives in RETIRE_MS, so the
/// block count is also how long (128 ms) the reader may be held up (by a
/// busy CPU) before frames are lost.
const BLOCK_SIZE: usize = 1 << 17;
const NBLOCKS: usize = 128;
/// The largest ring RING_SIZE may ask for (1 GiB).
const MAX_BLOCKS: usize = 8192;
/// The priority ring's default size (PRIORITY_RING_SIZE): 16 blocks, so
/// at low rates it absorbs 16 ms of the reader's absence.
const PRIORITY_NBLOCKS: usize = 16;
/// Longest a partly filled block waits before the kernel hands it over.
const RETIRE_MS: u32 = 1;
/// A TPACKET_V2 ring's slot: a 1514-byte frame with its headers (the
/// data starts 76 bytes in) fits; a longer one waits whole on the
/// socket. 64 slots a block, 8192 in the default 16 MiB ring.
const V2_FRAME: usize = 2048;
/// The largest frame read from a V2 ring's socket (a 64 KB super-frame
/// and its virtio-net header).
const V2_COPY_MAX: usize = 65536 + super::ring::VNET_HDR_LEN;

/// The ring version FromDevice opens without TPACKET.
pub const DEFAULT_TPACKET: u8 = 2;

/// Most queues a device may be split into (the kernel's fanout groups
/// take at most 256 members on old kernels).
pub const MAX_QUEUES: usize = 256;

/// The settings of a receiving element that apply to every ring it reads
/// (the keywords FromDevice and MultiFromDevice share).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxOptions {
    pub sniffer: bool,
    pub promisc: bool,
    pub burst: usize,
    pub snaplen: usize,
    pub nqueues: usize,
    /// PACKET_FANOUT mode.
    pub fanout: u32,
    pub outbound: bool,
    pub timestamp: bool,
    pub force_ip: bool,
    /// Blocks of the kernel's receive ring ([`BLOCK_SIZE`] bytes each).
    pub ring_blocks: usize,
    /// BPF_FILTER and the priority path's PRIORITY_FILTER, compiled.
    pub filters: RxFilters,
    /// Blocks of the priority ring (PRIORITY_RING_SIZE).
    pub priority_blocks: usize,
    /// TPACKET: the kernel's ring version, 2 or 3.
    pub tpacket: u8,
}

/// RING_SIZE-style bytes as a number of ring blocks.
fn ring_blocks(what: &str, bytes: Option<u64>, default: usize) -> Result<usize, String> {
    let n = match bytes {
        None => default,
        Some(b) => usize::try_from(b.div_ceil(BLOCK_SIZE as u64)).unwrap_or(usize::MAX),
    };
    if n == 0 || n > MAX_BLOCKS {
        return Err(format!(
            "{what} must be between 1 and {} bytes",
            MAX_BLOCKS * BLOCK_SIZE
        ));
    }
    Ok(n)
}

impl RxOptions {
    /// Reads SNIFFER, PROMISC, BURST, SNAPLEN, N_QUEUES, FANOUT, OUTBOUND,
    /// TIMESTAMP, FORCE_IP, RING_SIZE, BPF_FILTER, PRIORITY,
    /// PRIORITY_FILTER, PRIORITY_RING_SIZE and TPACKET (all keywords, all
    /// optional)
    /// and checks them; the filter expressions are compiled here, so a bad
    /// one is a configuration error.
    pub fn read(a: &mut Args<'_>) -> Result<RxOptions, String> {
        let bpf_filter = a.read::<String>("BPF_FILTER");
        let priority = a.read::<bool>("PRIORITY");
        let priority_filter = a.read::<String>("PRIORITY_FILTER");
        // PRIORITY_FILTER alone turns the priority path on; PRIORITY alone
        // turns it on with the default filter; PRIORITY false turns it off.
        let priority_filter = match (priority, priority_filter) {
            (Some(false), _) => None,
            (_, Some(f)) => Some(f),
            (Some(true), None) => Some(DEFAULT_PRIORITY_FILTER.to_string()),
            (None, None) => None,
        };
        let ring_size = a.read::<u64>("RING_SIZE");
        let prio_size = a.read::<u64>("PRIORITY_RING_SIZE");
        let o = RxOptions {
            sniffer: a.read::<bool>("SNIFFER").unwrap_or(true),
            promisc: a.read::<bool>("PROMISC").unwrap_or(false),
            burst: a.read::<usize>("BURST").unwrap_or(32),
            snaplen: a.read::<usize>("SNAPLEN").unwrap_or(2046),
            nqueues: a.read::<usize>("N_QUEUES").unwrap_or(1),
            fanout: match a.read::<String>("FANOUT") {
                None => 0,
                Some(f) => fanout_mode(&f).ok_or_else(|| {
                    format!("FANOUT: unknown mode '{f}' (HASH, LB, CPU, RND, QM, ROLLOVER)")
                })?,
            },
            outbound: a.read::<bool>("OUTBOUND").unwrap_or(false),
            timestamp: a.read::<bool>("TIMESTAMP").unwrap_or(true),
            force_ip: a.read::<bool>("FORCE_IP").unwrap_or(false),
            ring_blocks: ring_blocks("RING_SIZE", ring_size, NBLOCKS)?,
            filters: RxFilters::new(bpf_filter, priority_filter)?,
            priority_blocks: ring_blocks("PRIORITY_RING_SIZE", prio_size, PRIORITY_NBLOCKS)?,
            tpacket: match a.read::<u32>("TPACKET") {
                None => DEFAULT_TPACKET,
                Some(v @ (2 | 3)) => v as u8,
                Some(v) => return Err(format!("TPACKET must be 2 or 3, not {v}")),
            },
        };
        if o.burst == 0 {
            return Err("BURST must be at least 1".into());
        }
        if o.snaplen < 14 {
            return Err("SNAPLEN must be at least 14".into());
        }
        if o.nqueues == 0 || o.nqueues > MAX_QUEUES {
            return Err(format!("N_QUEUES must be between 1 and {MAX_QUEUES}"));
        }
        Ok(o)
    }

    /// Checks a QUEUE number against N_QUEUES.
    pub fn check_queue(&self, queue: usize) -> Result<(), String> {
        if queue >= self.nqueues {
            return Err(format!(
                "QUEUE {queue} out of range: N_QUEUES is {}",
                self.nqueues
            ));
        }
        Ok(())
    }

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
    pub fn take(&self, f: &Frame<'_>, out: &mut Batch) -> u64 {
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

fn fanout_name(mode: u32) -> &'static str {
    match mode {
        0 => "HASH",
        1 => "LB",
        2 => "CPU",
        3 => "ROLLOVER",
        4 => "RND",
        5 => "QM",
        _ => "?",
    }
}

/// Checks an interface name as the kernel would take it.
pub fn check_devname(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() >= 16 || name.contains(['/', ' ', '\0']) {
        return Err(format!("{what}: bad interface name '{name}'"));
    }
    Ok(())
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

/// One open receive queue of a device: its socket and mapped ring, and
/// what it changed on the device (restored when it is dropped). Fields
/// drop in order: the ring is unmapped before the socket closes.
pub struct RxQueue {
    ring: RxRing,
    /// A TPACKET_V2 ring (of slots), else TPACKET_V3 (of blocks).
    v2: bool,
    fd: OwnedFd,
    devname: String,
    gro_was_on: bool,
    _fanout: Option<FanoutMember>,
    _kernel_off: Option<KernelOff>,
    /// The kernel's ring statistics read so far (reading resets the
    /// kernel's counts): frames it gave the ring or dropped at it, and
    /// the drops.
    kernel_stats: Mutex<(u64, u64)>,
}

/// A reader's place in a ring, kept between task runs. Whoever reads a
/// ring keeps its reader under a lock: one reader at a time.
#[derive(Default)]
pub struct RxReader {
    /// The next block (V3) or slot (V2) to read.
    block: usize,
    cursor: Option<Cursor>,
    /// V2: where a frame longer than its slot is read whole (allocated
    /// at the first such frame).
    copy: Vec<u8>,
}

impl Drop for RxQueue {
    fn drop(&mut self) {
        if self.gro_was_on {
            sys::enable_gro(&self.fd, &self.devname);
        }
    }
}

impl RxQueue {
    /// Opens the receive ring of queue `queue` of `devname` with the
    /// settings of `o`: joins the device's fanout group when
    /// `o.nqueues > 1` (in queue order: the socket takes frames once the
    /// queues before it have joined, see [`sys::JoinOrder`]), turns GRO
    /// off and, with SNIFFER false, the kernel's own processing of the
    /// device. With a priority path, the ring gets the frames
    /// PRIORITY_FILTER leaves (see [`RxQueue::open_priority`]).
    pub fn open(devname: &str, queue: usize, o: &RxOptions) -> Result<RxQueue, String> {
        let ifindex = sys::ifindex(devname)?;
        let (fd, ring) = sys::open_rx(&RxConfig {
            ifindex,
            block_size: BLOCK_SIZE,
            nblocks: o.ring_blocks,
            retire_ms: RETIRE_MS,
            v2_frame: (o.tpacket == 2).then_some(V2_FRAME),
            vnet_hdr: true,
            ignore_outgoing: !o.outbound,
            promisc: o.promisc,
            filter: o.filters.main.as_ref().map(|p| p.to_sock_filter()),
            defer_bind: o.nqueues > 1,
        })
        .map_err(|e| format!("{devname}: {e}"))?;
        let fanout = if o.nqueues > 1 {
            Some(
                sys::fanout_join(&fd, ifindex, queue, o.nqueues, o.fanout, !o.outbound)
                    .map_err(|e| format!("{devname}: {e}"))?,
            )
        } else {
            None
        };
        let gro_was_on = sys::disable_gro(&fd, devname)?.unwrap_or(false);
        let mut q = RxQueue {
            ring,
            v2: o.tpacket == 2,
            fd,
            devname: devname.to_string(),
            gro_was_on,
            _fanout: fanout,
            _kernel_off: None,
            kernel_stats: Mutex::new((0, 0)),
        };
        if !o.sniffer {
            q._kernel_off = Some(sys::kernel_off(devname)?);
        }
        // Drops counted from now on.
        let _ = sys::ring_stats(&q.fd);
        Ok(q)
    }

    /// Opens the priority ring of `devname` (PRIORITY_RING_SIZE): a socket
    /// of its own, outside any fanout group, whose filter takes only the
    /// frames PRIORITY_FILTER (and BPF_FILTER) accepts; the main rings'
    /// filters take exactly the others. Leaves GRO, promiscuity and the
    /// kernel's stack to the main ring. None without a PRIORITY_FILTER.
    pub fn open_priority(devname: &str, o: &RxOptions) -> Result<Option<RxQueue>, String> {
        let Some(filter) = &o.filters.priority else {
            return Ok(None);
        };
        let ifindex = sys::ifindex(devname)?;
        let (fd, ring) = sys::open_rx(&RxConfig {
            ifindex,
            block_size: BLOCK_SIZE,
            nblocks: o.priority_blocks,
            retire_ms: RETIRE_MS,
            v2_frame: (o.tpacket == 2).then_some(V2_FRAME),
            vnet_hdr: true,
            ignore_outgoing: !o.outbound,
            promisc: false,
            filter: Some(filter.to_sock_filter()),
            defer_bind: false,
        })
        .map_err(|e| format!("{devname} (priority ring): {e}"))?;
        let q = RxQueue {
            ring,
            v2: o.tpacket == 2,
            fd,
            devname: devname.to_string(),
            gro_was_on: false,
            _fanout: None,
            _kernel_off: None,
            kernel_stats: Mutex::new((0, 0)),
        };
        let _ = sys::ring_stats(&q.fd);
        Ok(Some(q))
    }

    /// Reads frames from the ring into `out` (as packets made by `o`)
    /// until `out` holds `max` packets or no handed-over block is left.
    /// Returns the frames dropped on the way.
    pub fn read(&self, rd: &mut RxReader, o: &RxOptions, max: usize, out: &mut Batch) -> u64 {
        if self.v2 {
            return self.read_v2(rd, o, max, out);
        }
        let nblocks = self.ring.nblocks();
        let mut drops = 0u64;
        while out.len() < max {
            let Some(block) = self.ring.user_block(rd.block) else {
                break;
            };
            let bytes = block.bytes();
            let mut cur = match rd.cursor {
                Some(c) => c,
                None => Cursor::start(bytes).unwrap_or_default(),
            };
            while out.len() < max {
                match cur.next_frame(bytes, true) {
                    None => break,
                    Some(Ok(f)) => drops += o.take(&f, out),
                    Some(Err(lost)) => drops += lost as u64,
                }
            }
            if cur.done() {
                block.release();
                rd.block = (rd.block + 1) % nblocks;
                rd.cursor = None;
            } else {
                rd.cursor = Some(cur);
            }
        }
        drops
    }

    /// [`RxQueue::read`] from a TPACKET_V2 ring: slot by slot, each
    /// handed back once read.
    fn read_v2(&self, rd: &mut RxReader, o: &RxOptions, max: usize, out: &mut Batch) -> u64 {
        let nslots = self.ring.nblocks();
        let mut drops = 0u64;
        while out.len() < max {
            let Some(slot) = self.ring.user_block(rd.block) else {
                break;
            };
            drops += match parse_slot_v2(slot.bytes(), true) {
                None => 1,
                Some((f, status)) if status & TP_STATUS_COPY != 0 => {
                    self.take_queued(&mut rd.copy, &f, o, out)
                }
                Some((f, _)) => o.take(&f, out),
            };
            slot.release();
            rd.block = (rd.block + 1) % nslots;
        }
        drops
    }

    /// Takes the whole of the frame that `cut` (its slot) began, which
    /// the kernel queued on the socket; the slot's frame, cut short, if
    /// it did not.
    fn take_queued(
        &self,
        buf: &mut Vec<u8>,
        cut: &Frame<'_>,
        o: &RxOptions,
        out: &mut Batch,
    ) -> u64 {
        use super::offload::VnetHdr;
        use super::ring::VNET_HDR_LEN;
        if buf.is_empty() {
            buf.resize(V2_COPY_MAX, 0);
        }
        let Some(n) = sys::recv_queued(&self.fd, buf) else {
            return o.take(cut, out);
        };
        if n < VNET_HDR_LEN {
            return 1;
        }
        let got = n.min(buf.len());
        let f = Frame {
            data: &buf[VNET_HDR_LEN..got],
            wire_len: (n - VNET_HDR_LEN) as u32,
            vnet: VnetHdr::parse(&buf[..VNET_HDR_LEN]),
            vlan: cut.vlan,
            ..*cut
        };
        o.take(&f, out)
    }

    /// The ring's socket: readable once the kernel has handed a block
    /// over. An idle reader's task waits on it
    /// ([`paraclick_runtime::Cx::wake_when_readable`]).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    /// The kernel's ring statistics since the ring was opened or last
    /// reset: frames it delivered to the ring or dropped at it (outgoing
    /// ones included, if it gave the ring any), and the drops.
    fn kernel_stats(&self) -> (u64, u64) {
        let mut total = self.kernel_stats.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok((p, d)) = sys::ring_stats(&self.fd) {
            // PACKET_STATISTICS counts a dropped frame in both.
            total.0 += p as u64;
            total.1 += d as u64;
        }
        *total
    }

    /// The kernel's ring drops since the ring was opened or last reset.
    pub fn kernel_drops(&self) -> u64 {
        self.kernel_stats().1
    }

    /// Frames the kernel gave the ring (or dropped at it) since it was
    /// opened or last reset.
    pub fn kernel_count(&self) -> u64 {
        self.kernel_stats().0
    }

    pub fn reset_kernel_drops(&self) {
        let mut total = self.kernel_stats.lock().unwrap_or_else(|e| e.into_inner());
        let _ = sys::ring_stats(&self.fd);
        *total = (0, 0);
    }
}

/// The statistics of a receiving element: packets emitted per ring, and
/// frames it dropped itself; with its rings' kernel drops, they make the
/// handlers FromDevice and MultiFromDevice share.
pub struct RxCounters {
    emitted: Vec<PerThreadCount>,
    own_drops: PerThreadCount,
}

/// Why a device reader drops frames (its class's `drop_reasons`): a
/// frame it could not make a packet of (no buffer, cut short, or an
/// offload it cannot complete); with METHOD XDP, a received frame that
/// could neither be lent to a packet (packets held so many of the
/// socket's frames that the fill ring would run low) nor copied into a
/// pooled buffer.
pub const RX_DROP_REASONS: &[&str] = &["frame not taken", "UMEM frame shortage"];
/// [`RX_DROP_REASONS`]: no UMEM frame to lend and no buffer to copy to.
pub const UMEM_SHORTAGE: u8 = 1;

impl RxCounters {
    pub fn new(nrings: usize, nthreads: usize) -> RxCounters {
        RxCounters {
            emitted: (0..nrings).map(|_| PerThreadCount::new(nthreads)).collect(),
            own_drops: PerThreadCount::new(nthreads),
        }
    }

    /// Counts `n` packets emitted from ring `i`.
    #[inline]
    pub fn emitted(&self, i: usize, thread: usize, n: usize) {
        self.emitted[i].add(thread, n as u64);
    }

    /// Counts `n` frames dropped (here and in the router's drop total,
    /// for reason 0 of the reading class, [`RX_DROP_REASONS`]).
    pub fn dropped(&self, cx: &mut Cx<'_>, n: u64) {
        if n > 0 {
            self.own_drops.add(cx.thread(), n);
            cx.count_drops_for(0, n);
        }
    }

    /// [`RxCounters::dropped`] for reason `reason` of [`RX_DROP_REASONS`].
    pub fn dropped_for(&self, cx: &mut Cx<'_>, reason: u8, n: u64) {
        if n > 0 {
            self.own_drops.add(cx.thread(), n);
            cx.count_drops_for(reason, n);
        }
    }

    /// Packets emitted from ring `i`.
    pub fn count_of(&self, i: usize) -> u64 {
        self.emitted[i].get()
    }

    /// The `count` handler: packets emitted from every ring.
    pub fn count(&self) -> u64 {
        self.emitted.iter().map(PerThreadCount::get).sum()
    }

    /// The `kernel_drops` handler: the rings' kernel drops (no rings
    /// before initialization).
    pub fn kernel_drops(&self, rings: &[RxQueue]) -> u64 {
        rings.iter().map(RxQueue::kernel_drops).sum()
    }

    /// The `kernel_count` handler: frames the kernel gave the rings or
    /// dropped at them.
    pub fn kernel_count(&self, rings: &[RxQueue]) -> u64 {
        rings.iter().map(RxQueue::kernel_count).sum()
    }

    /// The `drops` handler: kernel drops and frames dropped here.
    pub fn drops(&self, rings: &[RxQueue]) -> u64 {
        self.kernel_drops(rings) + self.own_drops.get()
    }

    /// The `reset_counts` handler.
    pub fn reset(&self, rings: &[RxQueue]) {
        for r in rings {
            r.reset_kernel_drops();
        }
        for c in &self.emitted {
            c.reset();
        }
        self.own_drops.reset();
    }
}

/// One receive queue an element claims: device, QUEUE, N_QUEUES, FANOUT,
/// OUTBOUND.
#[derive(Clone, Copy, Debug)]
pub struct QueueClaim<'a> {
    pub devname: &'a str,
    pub queue: usize,
    pub nqueues: usize,
    pub fanout: u32,
    pub outbound: bool,
    pub filters: &'a RxFilters,
}

/// The device queues a receiving element reads, which it provides to
/// the others reading the same device ([`check_device_queues`];
/// FromDevice and MultiFromDevice provide it).
pub trait RxClaims {
    fn claims(&self) -> Vec<QueueClaim<'_>>;
}

/// The queues element `i` reads, if it provides [`RxClaims`].
fn claims_of<'a>(ix: &'a InitCx<'_>, i: usize) -> Vec<QueueClaim<'a>> {
    ix.cast::<dyn RxClaims>(i)
        .map(RxClaims::claims)
        .unwrap_or_default()
}

/// Checks that the elements reading `devname` (FromDevice and
/// MultiFromDevice alike: they share one fanout group) agree on N_QUEUES,
/// FANOUT and OUTBOUND and together read each queue exactly once. `mine` is the
/// calling element's own claim on the device.
pub fn check_device_queues(ix: &InitCx<'_>, mine: &QueueClaim<'_>) -> Result<(), String> {
    let dev = mine.devname;
    let mut queues: Vec<(usize, String)> = Vec::new();
    for i in 0..ix.element_count() {
        for c in claims_of(ix, i) {
            if c.devname != dev {
                continue;
            }
            let name = ix.element_name(i);
            if c.nqueues != mine.nqueues {
                return Err(format!(
                    "{name} reads {dev} with N_QUEUES {}, this element with N_QUEUES {}",
                    c.nqueues, mine.nqueues
                ));
            }
            if c.nqueues > 1 && c.fanout != mine.fanout {
                return Err(format!(
                    "{name} reads {dev} with FANOUT {}, this element with FANOUT {}: \
                     the queues of a device share one fanout group",
                    fanout_name(c.fanout),
                    fanout_name(mine.fanout)
                ));
            }
            if c.nqueues > 1 && c.outbound != mine.outbound {
                return Err(format!(
                    "{name} reads {dev} with OUTBOUND {}, this element with OUTBOUND {}: \
                     the queues of a device share one fanout group",
                    c.outbound, mine.outbound
                ));
            }
            if c.filters.bpf_filter != mine.filters.bpf_filter
                || c.filters.priority_filter != mine.filters.priority_filter
            {
                let show = |f: &RxFilters| {
                    format!(
                        "BPF_FILTER '{}', PRIORITY_FILTER '{}'",
                        f.bpf_filter.as_deref().unwrap_or(""),
                        f.priority_filter.as_deref().unwrap_or("")
                    )
                };
                return Err(format!(
                    "{name} reads {dev} with {}, this element with {}: the queues of a \
                     device share one filter and one priority ring",
                    show(c.filters),
                    show(mine.filters)
                ));
            }
            queues.push((c.queue, name.to_string()));
        }
    }
    queues.sort();
    for w in queues.windows(2) {
        if w[0].0 == w[1].0 {
            let (a, b) = (&w[0].1, &w[1].1);
            return Err(if a == b {
                format!("{a} reads QUEUE {} of {dev} twice", w[0].0)
            } else {
                format!("{a} and {b} both read QUEUE {} of {dev}", w[0].0)
            });
        }
    }
    if queues.len() != mine.nqueues {
        let missing: Vec<String> = (0..mine.nqueues)
            .filter(|q| !queues.iter().any(|(x, _)| x == q))
            .map(|q| q.to_string())
            .collect();
        return Err(format!(
            "N_QUEUES {} for {dev}, but {} queue{} read (FromDevice and MultiFromDevice \
             together); nobody reads QUEUE {}",
            mine.nqueues,
            queues.len(),
            if queues.len() == 1 { " is" } else { "s are" },
            missing.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use paraclick_runtime::{ArgEnv, ConfigCx};

    /// Configures an element of class `class` with its `make`, `conf` and
    /// `noutputs` outputs, as the router would (without initializing it).
    pub(crate) fn configure<T: 'static>(
        class: &str,
        make: fn(&mut ConfigCx<'_>) -> Result<T, String>,
        conf: &str,
        noutputs: usize,
    ) -> Result<T, String> {
        let mut env = ArgEnv::default();
        let mut cx = ConfigCx {
            name: "e",
            class,
            config: conf,
            ninputs: 0,
            noutputs,
            input_kinds: &[],
            output_kinds: &[],
            nthreads: 2,
            env: &mut env,
        };
        make(&mut cx)
    }
}
