//! AF_XDP sockets for `METHOD XDP` of FromDevice, MultiFromDevice and
//! ToDevice, through libxdp (see docs/AF_XDP.md). Not an element.
//!
//! One socket per (device, queue) in the process: the FromDevice reading
//! a queue and the ToDevice writing it share the socket (its receive and
//! transmit rings), since the kernel binds one socket to a queue. Each
//! socket has its own UMEM: half of its frames are receive frames, half
//! transmit frames. A received frame becomes the packet's buffer without
//! a copy (an external buffer of the packet crate, lent by the UMEM);
//! when the packet is freed, on any thread, the frame comes back in a
//! batch and goes on the fill ring again. Sent out of the ToDevice of
//! the same socket, it goes on the transmit ring as it is, and back to
//! the fill ring once the kernel has sent it. Other packets are copied
//! into transmit frames. When packets hold so many receive frames that
//! the fill ring would run low, frames are copied into pooled buffers
//! instead, and a frame that finds no buffer either is a counted drop
//! (`UMEM frame shortage`): the fill ring never runs dry.
//!
//! libxdp attaches its default XDP program (Debian's
//! `xsk_def_xdp_prog.o`, built from xdp-tools' source) when a device's
//! first socket with a receive ring is made, and removes it when the last
//! one is closed. A small state file under /run/paraclick records which
//! program this router attached, so that one a crashed router left on the
//! device is recognised, and removed with a message, at the next start.

use super::xdp_pass::PassFilter;
use paraclick_packet::pool::{same_owner, BufferOwner, ExtBuffer};
use paraclick_packet::{Batch, Packet, PacketType, Timestamp};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CString};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The UMEM frame size: the smallest libxdp accepts, room for a 1500-byte
/// MTU frame.
pub const FRAME_SIZE: usize = 2048;
/// Entries of each ring (fill, receive, transmit, completion), and frames
/// of each half of the UMEM.
pub const RING: usize = 8192;
/// Receive frames kept with the kernel (on the fill and receive rings)
/// at least: below this, received frames are copied into pooled buffers
/// rather than lent to packets, so the fill ring never runs dry however
/// many packets a configuration holds (in a Queue, say).
const MIN_KERNEL_FRAMES: usize = RING / 4;
/// Descriptors a deferred send leaves on the transmit ring before it
/// wakes the kernel, unless the socket's budget was raised
/// ([`XskPort::set_tx_budget`]): the kernel's default budget per `sendto`
/// in copy mode (a call sends at most 32 frames).
pub const KICK_BATCH: usize = 32;
/// With `--busy-poll`: the longest a socket call busy-polls the queue's
/// NAPI context (SO_BUSY_POLL, microseconds), and the frames one poll
/// takes at most (SO_BUSY_POLL_BUDGET).
pub const BUSY_POLL_USECS: u32 = 20;
pub const BUSY_POLL_BUDGET: u32 = 64;
/// ToDevice's TX_BUDGET by default.
pub const DEFAULT_TX_BUDGET: usize = KICK_BATCH;

#[repr(C)]
struct PcxXsk {
    _opaque: [u8; 0],
}

#[repr(C)]
struct PcxPass {
    _opaque: [u8; 0],
}

/// The PASS program (src/linux/xdp_pass.bpf.c), compiled by build.rs.
static PASS_ELF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xdp_pass.bpf.o"));

extern "C" {
    #[allow(clippy::too_many_arguments)]
    fn pcx_xsk_open(
        out: *mut *mut PcxXsk,
        share: *mut PcxXsk,
        ifname: *const c_char,
        queue: c_uint,
        area: *mut c_void,
        size: c_ulonglong,
        frame_size: c_uint,
        rx_size: c_uint,
        tx_size: c_uint,
        ring_size: c_uint,
        xdp_flags: c_uint,
        bind_flags: c_uint,
        fill_addrs: *const c_ulonglong,
        nfill: c_uint,
        xsks_map: c_int,
    ) -> c_int;
    fn pcx_xsk_close(x: *mut PcxXsk);
    #[allow(clippy::too_many_arguments)]
    fn pcx_pass_attach(
        out: *mut *mut PcxPass,
        elf: *const c_void,
        len: std::ffi::c_ulong,
        ifindex: c_int,
        xdp_flags: c_uint,
        rules: *const c_void,
        nrules: c_uint,
        rule_size: c_uint,
        xsks_map: *mut c_int,
    ) -> c_int;
    fn pcx_pass_close(p: *mut PcxPass);
    fn pcx_xsk_zerocopy(x: *const PcxXsk) -> c_int;
    fn pcx_xsk_fd(x: *const PcxXsk) -> c_int;
    fn pcx_xsk_rx_peek(
        x: *mut PcxXsk,
        addrs: *mut c_ulonglong,
        lens: *mut c_uint,
        max: c_uint,
    ) -> c_uint;
    fn pcx_xsk_rx_done(
        x: *mut PcxXsk,
        n: c_uint,
        addrs: *const c_ulonglong,
        nfill: c_uint,
    ) -> c_uint;
    fn pcx_xsk_tx_room(x: *mut PcxXsk, n: c_uint) -> c_uint;
    fn pcx_xsk_tx_reap(x: *mut PcxXsk, addrs: *mut c_ulonglong, max: c_uint) -> c_uint;
    fn pcx_xsk_tx_put(
        x: *mut PcxXsk,
        addrs: *const c_ulonglong,
        lens: *const c_uint,
        n: c_uint,
    ) -> c_uint;
    fn pcx_xsk_tx_kick(x: *mut PcxXsk) -> c_int;
    fn pcx_xsk_set_tx_budget(x: *mut PcxXsk, budget: c_uint) -> c_int;
    fn pcx_xsk_busy_poll(x: *mut PcxXsk, usecs: c_int, budget: c_int) -> c_int;
    fn pcx_xsk_tx_outstanding(x: *mut PcxXsk) -> c_uint;
    fn pcx_xsk_stats(
        x: *const PcxXsk,
        rx_dropped: *mut c_ulonglong,
        rx_full: *mut c_ulonglong,
        fill_empty: *mut c_ulonglong,
        tx_invalid: *mut c_ulonglong,
    ) -> c_int;
    fn pcx_xdp_programs(
        ifindex: c_int,
        ids: *mut c_uint,
        names: *mut c_char,
        max: c_int,
        mode: *mut c_int,
    ) -> c_int;
    fn pcx_xdp_detach_all(ifindex: c_int) -> c_int;
    fn pcx_xdp_quiet();
    fn pcx_xdp_load() -> c_int;
    fn pcx_xdp_load_error() -> *const c_char;
}

// linux/if_link.h and linux/if_xdp.h.
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const XDP_COPY: u32 = 1 << 1;
const XDP_ZEROCOPY: u32 = 1 << 2;
const XDP_USE_NEED_WAKEUP: u32 = 1 << 3;

/// The name of libxdp's default AF_XDP program.
const XSK_PROG: &str = "xsk_def_prog";
/// The name of the PASS program (its function in xdp_pass.bpf.c).
const PASS_PROG: &str = "pcx_xsk_pass";

/// Whether `name` is one of the programs a router attaches.
fn ours(name: &str) -> bool {
    name == XSK_PROG || name == PASS_PROG
}

/// Where the XDP program runs (`XDP_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// Native where the driver has it, generic otherwise.
    Auto,
    /// In the driver (fails where it has no XDP support).
    Native,
    /// Generic (SKB) mode: any device, after the socket buffer is made.
    Generic,
}

/// The keywords of METHOD XDP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpOptions {
    pub mode: XdpMode,
    /// ZEROCOPY: `None` for zero-copy where the driver supports it.
    pub zerocopy: Option<bool>,
    /// PASS (readers only): the frames to give to the kernel's stack.
    pub pass: Option<PassFilter>,
    /// SHARE_UMEM: share one UMEM with the router's other AF_XDP sockets
    /// (default true).
    pub share: bool,
}

impl Default for XdpOptions {
    fn default() -> XdpOptions {
        XdpOptions {
            mode: XdpMode::Auto,
            zerocopy: None,
            pass: None,
            share: true,
        }
    }
}

impl XdpOptions {
    /// Reads XDP_MODE and ZEROCOPY.
    pub fn read(a: &mut paraclick_runtime::Args<'_>) -> Result<XdpOptions, String> {
        let mode = match a.read::<String>("XDP_MODE") {
            None => XdpMode::Auto,
            Some(m) => match m.to_ascii_uppercase().as_str() {
                "AUTO" => XdpMode::Auto,
                "NATIVE" | "DRV" => XdpMode::Native,
                "GENERIC" | "SKB" => XdpMode::Generic,
                _ => {
                    return Err(format!(
                        "XDP_MODE: expected AUTO, NATIVE or GENERIC, not '{m}'"
                    ))
                }
            },
        };
        let zerocopy = a.read::<bool>("ZEROCOPY");
        if mode == XdpMode::Generic && zerocopy == Some(true) {
            return Err("ZEROCOPY true needs XDP_MODE NATIVE or AUTO: generic mode copies".into());
        }
        Ok(XdpOptions {
            mode,
            zerocopy,
            pass: None,
            share: a.read::<bool>("SHARE_UMEM").unwrap_or(true),
        })
    }

    /// The (XDP flags, bind flags, name) to try in turn.
    fn attempts(&self) -> Vec<(u32, u32, &'static str)> {
        let mut v = Vec::new();
        let native = matches!(self.mode, XdpMode::Auto | XdpMode::Native);
        let generic = matches!(self.mode, XdpMode::Auto | XdpMode::Generic);
        if native && self.zerocopy != Some(false) {
            v.push((XDP_FLAGS_DRV_MODE, XDP_ZEROCOPY, "native"));
        }
        if native && self.zerocopy != Some(true) {
            v.push((XDP_FLAGS_DRV_MODE, XDP_COPY, "native"));
        }
        if generic && self.zerocopy != Some(true) {
            v.push((XDP_FLAGS_SKB_MODE, XDP_COPY, "generic"));
        }
        v
    }
}

/// The UMEM: an anonymous mapping, unmapped on drop.
struct Area {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; who reads or writes which frame
// is ruled by the rings (a frame belongs to the kernel or to the holder
// of the side's lock that took it).
unsafe impl Send for Area {}
// SAFETY: as above.
unsafe impl Sync for Area {}

impl Area {
    fn new(len: usize) -> Result<Area, String> {
        // SAFETY: a fresh anonymous private mapping; no existing memory
        // is touched.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .map_err(|e| {
            format!(
                "cannot map {len} bytes of UMEM: {}",
                std::io::Error::from(e)
            )
        })?;
        Ok(Area { ptr: p.cast(), len })
    }

    /// The frame at UMEM address `addr`, `len` bytes.
    ///
    /// # Safety
    /// The caller owns the frame (took it from the receive or completion
    /// ring, or holds it free), and `addr + len` lies inside the area.
    unsafe fn frame(&self, addr: u64, len: usize) -> &[u8] {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts(self.ptr.add(addr as usize), len) }
    }

    /// # Safety
    /// As [`Area::frame`].
    #[allow(clippy::mut_from_ref)]
    unsafe fn frame_mut(&self, addr: u64, len: usize) -> &mut [u8] {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(addr as usize), len) }
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the socket using it is
        // closed before (XskPort drops its socket first).
        let _ = unsafe { rustix::mm::munmap(self.ptr.cast(), self.len) };
    }
}

/// A UMEM and the sockets sharing it (`XDP_SHARED_UMEM`): one slot of
/// `2 * RING` frames per member (device, queue), its receive frames
/// first, then its transmit frames. A frame one member received can go
/// on another member's transmit ring as it is. It lives as long as any
/// of its sockets or any packet holding one of its frames.
struct Group {
    area: Area,
    /// The (device, queue) of each slot.
    members: Vec<(String, u32)>,
    state: Mutex<GroupState>,
    /// Its sockets with a transmit ring, whose completion rings may hold
    /// the members' receive frames.
    senders: Mutex<Vec<Weak<XskPort>>>,
}

struct GroupState {
    /// The open sockets (a new member joins the UMEM through one). Opens
    /// and closes of the group's sockets are made under this lock.
    open: Vec<SockPtr>,
    /// The slots a socket was opened in: never reused, since packets of
    /// a closed socket may still hold its frames.
    used: Vec<bool>,
    /// The first socket is bound in zero-copy mode (the others, joining,
    /// are bound in its mode).
    zerocopy: bool,
}

/// A socket handle in [`GroupState::open`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct SockPtr(*mut PcxXsk);

// SAFETY: only an identity and the `share` argument of pcx_xsk_open,
// used under the group's lock while the socket is open.
unsafe impl Send for SockPtr {}

impl Group {
    fn new(members: Vec<(String, u32)>) -> Result<Arc<Group>, String> {
        let n = members.len();
        Ok(Arc::new(Group {
            area: Area::new(n * SLOT_FRAMES * FRAME_SIZE)?,
            members,
            state: Mutex::new(GroupState {
                open: Vec::new(),
                used: vec![false; n],
                zerocopy: false,
            }),
            senders: Mutex::new(Vec::new()),
        }))
    }

    /// Whether a socket of `slot` can still join: the slot was never
    /// used, and the UMEM is registered (a socket is open) or not yet.
    fn can_join(&self, slot: usize) -> bool {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        !st.used[slot] && (!st.open.is_empty() || !st.used.iter().any(|&u| u))
    }

    /// The bind mode of the UMEM's sockets (zero-copy or not), while
    /// one is open.
    fn bound_zerocopy(&self) -> Option<bool> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (!st.open.is_empty()).then_some(st.zerocopy)
    }

    /// The frames of the UMEM.
    fn frames(&self) -> usize {
        self.members.len() * SLOT_FRAMES
    }

    /// The frame of the UMEM at address `p` (a byte of its area), if any.
    fn frame_of(&self, p: *const u8) -> Option<usize> {
        let off = (p as usize).checked_sub(self.area.ptr as usize)?;
        (off < self.area.len).then_some(off / FRAME_SIZE)
    }
}

/// Frames of a socket's slot in its UMEM: receive, then transmit frames.
const SLOT_FRAMES: usize = 2 * RING;

/// The receive frames of one socket, lent to packets as their buffers,
/// and those freed packets gave back. It lives as long as the socket and
/// any packet holding one of its frames.
struct Umem {
    group: Arc<Group>,
    /// The UMEM address of the socket's first frame.
    base: u64,
    back: Mutex<Back>,
    /// `back` holds frames.
    pending: AtomicBool,
}

struct Back {
    bufs: Vec<ExtBuffer>,
    /// The socket is closed: frames coming back are let go.
    closed: bool,
}

impl BufferOwner for Umem {
    fn release(&self, bufs: &mut Vec<ExtBuffer>) {
        let mut b = self.back.lock().unwrap_or_else(|e| e.into_inner());
        if b.closed {
            drop(b);
            bufs.clear();
            return;
        }
        b.bufs.append(bufs);
        self.pending.store(true, Ordering::Release);
    }
}

impl Umem {
    /// The frame number and the offset in it of UMEM address `addr`.
    fn split(addr: u64) -> (usize, usize) {
        (
            (addr / FRAME_SIZE as u64) as usize,
            (addr % FRAME_SIZE as u64) as usize,
        )
    }

    /// The UMEM address of byte `p` (inside the area).
    fn addr_of(&self, p: *const u8) -> u64 {
        (p as usize - self.group.area.ptr as usize) as u64
    }

    /// The socket's own number for UMEM frame `frame` (receive frames
    /// 0..RING, transmit frames RING..2 * RING), if it is the socket's.
    fn local(&self, frame: usize) -> Option<usize> {
        let l = frame.checked_sub((self.base / FRAME_SIZE as u64) as usize)?;
        (l < SLOT_FRAMES).then_some(l)
    }

    /// The UMEM address of the socket's frame `local`.
    fn addr(&self, local: usize) -> u64 {
        self.base + (local * FRAME_SIZE) as u64
    }
}

struct RxSide {
    addrs: Vec<u64>,
    lens: Vec<u32>,
    /// Each receive frame's handle, by frame number, while the frame is
    /// the kernel's or spare; `None` while a packet (or the transmit
    /// ring) has it.
    slots: Vec<Option<ExtBuffer>>,
    /// Receive frames for the fill ring.
    spare: Vec<u64>,
    /// Receive frames on the fill and receive rings.
    kernel: usize,
    /// Frames taken from the UMEM's `back`.
    back: Vec<ExtBuffer>,
}

struct TxSide {
    /// Transmit frames not on the rings.
    free: Vec<u64>,
    addrs: Vec<u64>,
    lens: Vec<u32>,
    reaped: Vec<u64>,
    /// The handles of receive frames (this socket's or, with a shared
    /// UMEM, another's) on the transmit ring, sent without a copy, by
    /// UMEM frame number.
    inflight: Vec<Option<ExtBuffer>>,
    /// Those the kernel has sent, going back to their sockets' fill
    /// rings.
    done: Vec<ExtBuffer>,
    /// Packets sent without a copy, and copied into transmit frames.
    direct: u64,
    copied: u64,
    /// Descriptors put on the transmit ring since the last wake-up
    /// (`sendto`) of the kernel.
    unkicked: usize,
    /// Wake-ups made (`sendto` calls).
    kicks: u64,
    /// Frames one wake-up sends at most (XDP_MAX_TX_SKB_BUDGET; the
    /// kernel's default, [`KICK_BATCH`], unless raised): a deferred send
    /// wakes the kernel once this many wait.
    budget: usize,
}

/// One AF_XDP socket on one queue of one device, with its UMEM.
pub struct XskPort {
    raw: *mut PcxXsk,
    umem: Arc<Umem>,
    ifindex: i32,
    /// The device queue it is bound to.
    queue: u32,
    has_rx: bool,
    has_tx: bool,
    /// "native", "generic", then "zerocopy" or "copy".
    mode: String,
    /// Why the socket has a UMEM of its own where it would have shared
    /// one, if it would.
    unshared: Option<String>,
    rx: Mutex<RxSide>,
    tx: Mutex<TxSide>,
    _dev: Arc<DevGuard>,
}

// SAFETY: the socket's receive side (receive and fill rings) is used only
// under the `rx` lock and its transmit side (transmit and completion
// rings) only under the `tx` lock; libxdp's rings of one side share no
// state with the other's.
unsafe impl Send for XskPort {}
// SAFETY: as above.
unsafe impl Sync for XskPort {}

impl Drop for XskPort {
    fn drop(&mut self) {
        {
            let g = &self.umem.group;
            let mut st = g.state.lock().unwrap_or_else(|e| e.into_inner());
            st.open.retain(|&p| p != SockPtr(self.raw));
            // SAFETY: the socket made by pcx_xsk_open, closed once, under
            // the group's lock (libxdp's UMEM is not thread-safe); the
            // mapping outlives it (held through `umem` by this port and
            // by the packets holding frames).
            unsafe { pcx_xsk_close(self.raw) };
        }
        // Frames still held by packets are let go when they come back;
        // the UMEM is unmapped with the last.
        let mut b = self.umem.back.lock().unwrap_or_else(|e| e.into_inner());
        b.closed = true;
        let bufs = std::mem::take(&mut b.bufs);
        drop(b);
        drop(bufs);
    }
}

/// Result of sending a batch: packets put on the ring, packets left for
/// later (ring or frames full), packets too long for a frame.
pub struct TxResult {
    /// Packets copied into transmit frames and put on the ring.
    pub sent: Batch,
    /// Packets whose own frame went on the ring, without a copy (they
    /// are gone).
    pub zerocopy: usize,
    pub left: Batch,
    pub failed: Batch,
    pub error: Option<i32>,
}

impl XskPort {
    /// The mode in use, for the `mode` handler: `native copy`,
    /// `native zerocopy` or `generic copy`.
    pub fn mode(&self) -> &str {
        &self.mode
    }

    /// The device queue the socket is bound to.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// The socket's descriptor: readable while its receive ring holds
    /// frames; `poll(2)` on it also gives the kernel the wake-up that
    /// need-wakeup asks for. An idle reader's task waits on it
    /// ([`paraclick_runtime::Cx::wake_when_readable`]).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        // SAFETY: the socket made by pcx_xsk_open stays open until this
        // port is dropped, and the borrow cannot outlive the port.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(pcx_xsk_fd(self.raw)) }
    }

    /// Reads up to `max` frames into packets appended to `out`: each
    /// frame becomes its packet's buffer, or, when the fill ring would
    /// run low, is copied into a pooled buffer. Returns the frames
    /// dropped for want of either (a UMEM frame shortage).
    pub fn read(&self, max: usize, snaplen: usize, timestamp: bool, out: &mut Batch) -> u64 {
        let Ok(mut rx) = self.rx.try_lock() else {
            return 0;
        };
        let rx = &mut *rx;
        if self.umem.pending.load(Ordering::Acquire) {
            self.take_back(rx);
        }
        let max = max.min(rx.addrs.len());
        // SAFETY: the arrays hold `max` entries; the socket is open.
        let n = unsafe {
            pcx_xsk_rx_peek(
                self.raw,
                rx.addrs.as_mut_ptr(),
                rx.lens.as_mut_ptr(),
                max as c_uint,
            )
        } as usize;
        rx.kernel -= n;
        if n == 0 && rx.kernel + rx.spare.len() < RING && self.has_rx {
            // Idle with frames out: those the kernel has sent come back
            // now rather than at the sender's next send.
            self.reap_senders();
        }
        let mut drops = 0;
        if n > 0 {
            let ts = if timestamp {
                Timestamp::now()
            } else {
                Timestamp::default()
            };
            for i in 0..n {
                let addr = rx.addrs[i];
                let (frame, off) = Umem::split(addr);
                let local = self.umem.local(frame).unwrap_or(usize::MAX);
                let len = (rx.lens[i] as usize).min(FRAME_SIZE - off);
                let keep = len.min(snaplen);
                // Lend the frame while enough stay for the kernel: those
                // it has, the spare ones, and the rest of this burst.
                let lend = rx.kernel + rx.spare.len() + (n - i) > MIN_KERNEL_FRAMES;
                let handle = if lend {
                    rx.slots.get_mut(local).and_then(Option::take)
                } else {
                    None
                };
                let made = match handle.map(|b| b.into_packet(off, keep)) {
                    Some(Ok(p)) => Some(p),
                    other => {
                        if let Some(Err(b)) = other {
                            rx.slots[local] = Some(b);
                        }
                        // SAFETY: the frame came from the receive ring
                        // (ours until it goes back on the fill ring) and
                        // lies in the area (the kernel checks descriptors
                        // against the UMEM).
                        let data = unsafe { self.umem.group.area.frame(addr, keep) };
                        rx.spare.push((frame * FRAME_SIZE) as u64);
                        Packet::from_slice(data)
                    }
                };
                let Some(mut p) = made else {
                    drops += 1;
                    continue;
                };
                if keep < len {
                    p.anno_mut().extra_length = (len - keep) as u32;
                }
                p.set_mac_header(0);
                let t = packet_type(p.data());
                let a = p.anno_mut();
                a.packet_type = t;
                a.device = self.ifindex as u16;
                a.timestamp = ts;
                out.push(p);
            }
        }
        if n > 0 || !rx.spare.is_empty() {
            // SAFETY: releases exactly the descriptors peeked; the spare
            // frames are receive frames of ours.
            let got = unsafe {
                pcx_xsk_rx_done(
                    self.raw,
                    n as c_uint,
                    rx.spare.as_ptr(),
                    rx.spare.len() as c_uint,
                )
            } as usize;
            rx.kernel += got;
            rx.spare.drain(..got);
        }
        drops
    }

    /// Takes the receive frames packets gave back: their handles to the
    /// slots, the frames to the spare list.
    fn take_back(&self, rx: &mut RxSide) {
        {
            let mut b = self.umem.back.lock().unwrap_or_else(|e| e.into_inner());
            self.umem.pending.store(false, Ordering::Release);
            std::mem::swap(&mut b.bufs, &mut rx.back);
        }
        for buf in rx.back.drain(..) {
            let (frame, _) = Umem::split(self.umem.addr_of(buf.as_ptr()));
            let local = self.umem.local(frame).filter(|&l| l < RING);
            if let Some(slot) = local.and_then(|l| rx.slots.get_mut(l)) {
                rx.spare.push((frame * FRAME_SIZE) as u64);
                *slot = Some(buf);
            }
        }
    }

    /// Receive frames not held by packets (nor on the transmit ring):
    /// all of them (2048) when nothing holds one. `None` without a
    /// receive ring.
    pub fn rx_frames_free(&self) -> Option<usize> {
        if !self.has_rx {
            return None;
        }
        self.reap_senders();
        let mut rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        self.take_back(&mut rx);
        Some(rx.slots.iter().filter(|s| s.is_some()).count())
    }

    /// Takes the frames the kernel has sent from the completion ring:
    /// transmit frames to the free list, receive frames (this socket's
    /// or another's of the UMEM) back to their sockets' fill ring sides.
    fn reap(&self, tx: &mut TxSide) {
        // SAFETY: `reaped` has RING entries to write; an open socket.
        let got =
            unsafe { pcx_xsk_tx_reap(self.raw, tx.reaped.as_mut_ptr(), RING as c_uint) } as usize;
        for i in 0..got {
            let (frame, _) = Umem::split(tx.reaped[i]);
            if self.umem.local(frame).is_some_and(|l| l >= RING) {
                tx.free.push((frame * FRAME_SIZE) as u64);
            } else if let Some(b) = tx.inflight.get_mut(frame).and_then(Option::take) {
                tx.done.push(b);
            }
        }
        while let Some(last) = tx.done.last() {
            // Each frame to the socket that lent it: in runs of one owner
            // (usually the whole batch).
            let owner = last.owner().clone();
            let split = tx
                .done
                .iter()
                .rposition(|b| !same_owner(b.owner(), &owner))
                .map_or(0, |i| i + 1);
            let mut run = tx.done.split_off(split);
            owner.release(&mut run);
        }
    }

    /// Reaps the completion rings of the UMEM's sockets (those not busy
    /// sending), so that receive frames the kernel has sent come back
    /// without waiting for the next send: when a reader finds its ring
    /// empty with frames out, and for `umem_free`.
    fn reap_senders(&self) {
        // Under the list's lock (no allocation): reaping takes only the
        // sender's transmit side and the owners' return lists.
        let s = self
            .umem
            .group
            .senders
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for p in s.iter().filter_map(Weak::upgrade) {
            if let Ok(mut tx) = p.tx.try_lock() {
                p.reap(&mut tx);
            }
        }
    }

    /// Puts the packets of `batch` on the transmit ring, in order: a
    /// packet whose buffer is a frame of this socket's UMEM (its own
    /// receive frame, or with a shared UMEM another socket's) as it is
    /// when `consume` (the caller keeps no sent packet), the others
    /// copied into transmit frames. The kernel is woken to send them
    /// (a `sendto`) at once, or with `defer` only once [`KICK_BATCH`]
    /// descriptors wait on the ring: the caller then calls
    /// [`XskPort::flush`] when it has nothing more to send.
    pub fn send(&self, mut batch: Batch, consume: bool, defer: bool) -> TxResult {
        let mut res = TxResult {
            sent: Batch::new(),
            zerocopy: 0,
            left: Batch::new(),
            failed: Batch::new(),
            error: None,
        };
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let tx = &mut *tx;
        self.reap(tx);
        tx.addrs.clear();
        tx.lens.clear();
        // SAFETY: an open socket.
        let room = unsafe { pcx_xsk_tx_room(self.raw, batch.len() as c_uint) } as usize;
        let mut queued = Batch::new();
        let mut stalled = false;
        for p in batch.drain() {
            let len = p.len();
            if stalled {
                res.left.push(p);
                continue;
            }
            if len > FRAME_SIZE || len == 0 {
                res.failed.push(p);
                continue;
            }
            if tx.addrs.len() >= room {
                stalled = true;
                res.left.push(p);
                continue;
            }
            // An external buffer inside the UMEM's mapping is one of its
            // frames (nothing else lends memory of it).
            let frame = p
                .buffer_owner()
                .and_then(|_| self.umem.group.frame_of(p.data().as_ptr()));
            if let (true, Some(frame)) = (consume, frame) {
                let addr = self.umem.addr_of(p.data().as_ptr());
                match p.into_external() {
                    Ok(b) => {
                        tx.inflight[frame] = Some(b);
                        tx.addrs.push(addr);
                        tx.lens.push(len as u32);
                        res.zerocopy += 1;
                        continue;
                    }
                    Err(p) => {
                        res.failed.push(p);
                        continue;
                    }
                }
            }
            let Some(addr) = tx.free.pop() else {
                stalled = true;
                res.left.push(p);
                continue;
            };
            // SAFETY: a free transmit frame (ours), inside the area.
            unsafe { self.umem.group.area.frame_mut(addr, len) }.copy_from_slice(p.data());
            tx.addrs.push(addr);
            tx.lens.push(len as u32);
            queued.push(p);
        }
        if tx.addrs.is_empty() {
            return res;
        }
        // SAFETY: the arrays hold `n` descriptors of frames we own.
        let done = unsafe {
            pcx_xsk_tx_put(
                self.raw,
                tx.addrs.as_ptr(),
                tx.lens.as_ptr(),
                tx.addrs.len() as c_uint,
            )
        } as usize;
        tx.unkicked += done;
        if !defer || tx.unkicked >= tx.budget {
            res.error = self.kick(tx);
        }
        if done < tx.addrs.len() {
            // Not reached: the ring had room for all (checked above, and
            // this side is its only producer). Were it, every frame goes
            // back and the batch waits whole, to be sent again.
            let mut again = Batch::new();
            let mut copied = queued.drain();
            for i in 0..tx.addrs.len() {
                let (frame, off) = Umem::split(tx.addrs[i]);
                if self.umem.local(frame).is_some_and(|l| l >= RING) {
                    tx.free.push((frame * FRAME_SIZE) as u64);
                    again.extend(copied.next());
                } else if let Some(b) = tx.inflight[frame].take() {
                    if let Ok(p) = b.into_packet(off, tx.lens[i] as usize) {
                        again.push(p);
                    }
                }
            }
            drop(copied);
            res.zerocopy = 0;
            again.append(&mut res.left);
            res.left = again;
            return res;
        }
        tx.direct += res.zerocopy as u64;
        tx.copied += queued.len() as u64;
        res.sent = queued;
        res
    }

    /// Wakes the kernel up to send the descriptors on the transmit ring:
    /// again while each call sends some and some are left (a call sends
    /// up to the kernel's budget, 32 by default). The errno of a failed
    /// wake-up, if one failed.
    fn kick(&self, tx: &mut TxSide) -> Option<i32> {
        // SAFETY: an open socket (here and below).
        let mut left = unsafe { pcx_xsk_tx_outstanding(self.raw) } as usize;
        loop {
            tx.kicks += 1;
            // SAFETY: as above.
            let r = unsafe { pcx_xsk_tx_kick(self.raw) };
            if r != 0 && r != libc::EAGAIN {
                tx.unkicked = 0;
                return Some(r);
            }
            // SAFETY: as above.
            let now = unsafe { pcx_xsk_tx_outstanding(self.raw) } as usize;
            if r == 0 || now == 0 || now >= left {
                // Sent, or no progress (the completion ring is full, or
                // the device busy): the next send or flush tries again.
                tx.unkicked = if r == 0 { 0 } else { now };
                return None;
            }
            left = now;
        }
    }

    /// Wakes the kernel up for descriptors a deferred [`XskPort::send`]
    /// left on the transmit ring, if any. The errno of a failed wake-up,
    /// if one failed.
    pub fn flush(&self) -> Option<i32> {
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if tx.unkicked == 0 {
            return None;
        }
        self.kick(&mut tx)
    }

    /// Raises the frames one wake-up of the kernel sends at most (its
    /// XDP_MAX_TX_SKB_BUDGET socket option, Linux 6.17 and later; the
    /// default is [`KICK_BATCH`]), and a deferred send then waits for
    /// that many descriptors before it wakes the kernel. `budget` at most
    /// the transmit ring's size. The errno if the kernel refuses it (an
    /// older kernel: ENOPROTOOPT); the budget then stays the default.
    pub fn set_tx_budget(&self, budget: usize) -> Result<(), i32> {
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if !self.has_tx {
            return Err(libc::EINVAL);
        }
        let budget = budget.min(RING);
        if budget == tx.budget {
            return Ok(());
        }
        // SAFETY: an open socket with a transmit ring.
        let r = unsafe { pcx_xsk_set_tx_budget(self.raw, budget as c_uint) };
        if r != 0 {
            return Err(r);
        }
        tx.budget = budget;
        Ok(())
    }

    /// Turns preferred busy polling on for the socket (SO_PREFER_BUSY_POLL,
    /// SO_BUSY_POLL `usecs`, SO_BUSY_POLL_BUDGET `budget`): from then on a
    /// read that finds the receive ring empty makes a `recvfrom`, which
    /// runs the queue's NAPI poll in the reader's thread (see
    /// docs/AF_XDP.md). The errno if the kernel refuses an option.
    pub fn set_busy_poll(&self, usecs: u32, budget: u32) -> Result<(), i32> {
        // Under the receive side's lock: `read` looks at the flag.
        let _rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: an open socket; the flag is read only under `rx`.
        let r = unsafe { pcx_xsk_busy_poll(self.raw, usecs as c_int, budget as c_int) };
        if r != 0 {
            return Err(r);
        }
        Ok(())
    }

    /// The frames one wake-up sends at most (see [`XskPort::set_tx_budget`]).
    pub fn tx_budget(&self) -> usize {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).budget
    }

    /// Wake-ups of the kernel to send (`sendto` calls) so far.
    pub fn tx_kicks(&self) -> u64 {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).kicks
    }

    /// (packets sent without a copy, packets copied into transmit
    /// frames) so far.
    pub fn tx_counts(&self) -> (u64, u64) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        (tx.direct, tx.copied)
    }

    /// The socket's UMEM, for the `umem` handler: `own`, or `shared with`
    /// the other devices' queues, or why it is not shared.
    pub fn umem_info(&self) -> String {
        let g = &self.umem.group;
        if let Some(why) = &self.unshared {
            return format!("own ({why})");
        }
        let me = (self.umem.base / (SLOT_FRAMES * FRAME_SIZE) as u64) as usize;
        let others: Vec<String> = g
            .members
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != me)
            .map(|(_, (d, q))| format!("{d} queue {q}"))
            .collect();
        if others.is_empty() {
            "own".into()
        } else {
            format!("shared with {}", others.join(", "))
        }
    }

    /// The socket's XDP_STATISTICS, for the `xdp_stats` handler:
    /// `rx_dropped N rx_ring_full N fill_ring_empty N tx_invalid N`
    /// (`rx_dropped` counts frames lost for want of a fill ring entry and
    /// invalid descriptors; `fill_ring_empty` the times the kernel found
    /// the fill ring empty; `rx_ring_full` frames lost to a full receive
    /// ring), or the errno's text.
    pub fn stats_text(&self) -> String {
        let (mut a, mut b, mut c, mut d) = (0, 0, 0, 0);
        // SAFETY: an open socket; four counters to write.
        let r = unsafe { pcx_xsk_stats(self.raw, &mut a, &mut b, &mut c, &mut d) };
        if r != 0 {
            return std::io::Error::from_raw_os_error(-r).to_string();
        }
        format!("rx_dropped {a} rx_ring_full {b} fill_ring_empty {c} tx_invalid {d}")
    }

    /// Frames the kernel dropped for this socket: no fill ring entry or a
    /// full receive ring (XDP_STATISTICS).
    pub fn kernel_drops(&self) -> u64 {
        let (mut a, mut b, mut c, mut d) = (0, 0, 0, 0);
        // SAFETY: an open socket; four counters to write.
        let r = unsafe { pcx_xsk_stats(self.raw, &mut a, &mut b, &mut c, &mut d) };
        if r == 0 {
            a + b
        } else {
            0
        }
    }
}

/// HOST, BROADCAST, MULTICAST from the destination address (the kernel
/// gives AF_XDP no packet type; OTHERHOST needs the device's address,
/// which HostEtherFilter checks anyway).
fn packet_type(d: &[u8]) -> PacketType {
    if d.len() < 6 || d[0] & 1 == 0 {
        PacketType::Host
    } else if d[..6] == [0xff; 6] {
        PacketType::Broadcast
    } else {
        PacketType::Multicast
    }
}

/// What one process holds on one device: the lock on its state file, and
/// the program its sockets' receive rings made libxdp attach.
struct DevGuard {
    ifindex: i32,
    path: String,
    file: File,
    /// The PASS program, when the readers give PASS (attached with the
    /// first receive socket, in its mode).
    pass: Mutex<Option<PassProg>>,
}

/// The PASS program attached to a device: detached when dropped.
struct PassProg {
    raw: *mut PcxPass,
    /// Its socket map's fd.
    xsks_map: c_int,
    /// The filter it holds.
    text: String,
    /// Its XDP flags (mode).
    xdp_flags: u32,
}

// SAFETY: the handle is used only under DevGuard's `pass` lock (and
// dropped once); libxdp's program object has no thread affinity.
unsafe impl Send for PassProg {}

impl Drop for PassProg {
    fn drop(&mut self) {
        // SAFETY: the handle made by pcx_pass_attach, closed once.
        unsafe { pcx_pass_close(self.raw) };
    }
}

impl PassProg {
    /// Attaches the PASS program to `ifindex` in the mode of `xdp_flags`,
    /// with the rules of `f`; a negative errno on failure.
    fn attach(ifindex: i32, xdp_flags: u32, f: &PassFilter) -> Result<PassProg, i32> {
        let rules: Vec<u8> = f.rules.iter().flat_map(|r| r.bytes()).collect();
        let mut raw = std::ptr::null_mut();
        let mut xsks_map = -1;
        // SAFETY: the ELF image and the rules are read during the call
        // only; the out pointers are valid.
        let r = unsafe {
            pcx_pass_attach(
                &mut raw,
                PASS_ELF.as_ptr().cast(),
                PASS_ELF.len() as std::ffi::c_ulong,
                ifindex,
                xdp_flags,
                rules.as_ptr().cast(),
                f.rules.len() as c_uint,
                24,
                &mut xsks_map,
            )
        };
        if r != 0 {
            return Err(-r);
        }
        Ok(PassProg {
            raw,
            xsks_map,
            text: f.text.clone(),
            xdp_flags,
        })
    }
}

impl Drop for DevGuard {
    fn drop(&mut self) {
        // The sockets are closed: the PASS program goes, and libxdp
        // removed its own with the last socket. If one is left anyway
        // (ours alone), remove it.
        drop(self.pass.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Ok(progs) = programs(self.ifindex) {
            if !progs.is_empty() && progs.iter().all(|(_, n)| ours(n)) {
                // SAFETY: a plain call on an interface index.
                let _ = unsafe { pcx_xdp_detach_all(self.ifindex) };
            }
        }
        let _ = fs::remove_file(&self.path);
    }
}

/// The open sockets and devices of this process.
struct Registry {
    ports: Vec<(String, u32, Weak<XskPort>)>,
    devs: Vec<(String, Weak<DevGuard>)>,
    groups: Vec<Weak<Group>>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    ports: Vec::new(),
    devs: Vec::new(),
    groups: Vec::new(),
});

/// The XDP programs on `ifindex`: (id, name) each.
fn programs(ifindex: i32) -> Result<Vec<(u32, String)>, i32> {
    let mut ids = [0u32; 16];
    let mut names = [0 as c_char; 16 * 64];
    let mut mode = 0;
    // SAFETY: arrays for 16 programs, as `max` says.
    let n =
        unsafe { pcx_xdp_programs(ifindex, ids.as_mut_ptr(), names.as_mut_ptr(), 16, &mut mode) };
    if n == -libc::ENOENT {
        return Ok(Vec::new());
    }
    if n < 0 {
        return Err(-n);
    }
    Ok((0..n as usize)
        .map(|i| {
            let raw = &names[i * 64..(i + 1) * 64];
            let bytes: Vec<u8> = raw
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            (ids[i], String::from_utf8_lossy(&bytes).into_owned())
        })
        .collect())
}

/// The device's receive and transmit queue counts (sysfs).
pub fn queue_counts(devname: &str) -> (usize, usize) {
    let count = |prefix: &str| {
        fs::read_dir(format!("/sys/class/net/{devname}/queues"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                    .count()
            })
            .unwrap_or(0)
    };
    (count("rx-"), count("tx-"))
}

/// Checks N_QUEUES and QUEUE of a METHOD XDP reader against the device:
/// each QUEUE is a receive queue of the device, and all of them are read.
pub fn check_rx_queues(devname: &str, queue: usize, nqueues: usize) -> Result<(), String> {
    let (rx, _) = queue_counts(devname);
    if rx == 0 {
        return Ok(());
    }
    if nqueues != rx {
        return Err(format!(
            "{devname} has {rx} receive queue{}, but N_QUEUES is {nqueues}: with METHOD XDP \
             each QUEUE is one of the device's receive queues, and every one must be read \
             (set N_QUEUES {rx}, or change the device's queues: ethtool -L {devname} \
             combined N; a veth pair's with numrxqueues when it is made)",
            if rx == 1 { "" } else { "s" }
        ));
    }
    if queue >= rx {
        return Err(format!(
            "{devname} has no receive queue {queue} (it has {rx})"
        ));
    }
    Ok(())
}

/// The errno of a failed socket creation, as a sentence.
pub fn open_error(devname: &str, queue: u32, errno: i32) -> String {
    let why = match errno {
        libc::EPERM | libc::EACCES => format!(
            "no permission: AF_XDP sockets and XDP programs need CAP_NET_ADMIN, CAP_NET_RAW \
             and CAP_BPF (run the router as root) ({})",
            std::io::Error::from_raw_os_error(errno)
        ),
        libc::EAFNOSUPPORT => "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS); use \
                               METHOD LINUX"
            .to_string(),
        libc::ENODEV | libc::ENXIO => format!("no device named '{devname}'"),
        libc::EBUSY => format!(
            "queue {queue} is already bound to another AF_XDP socket, or an XDP program of \
             another mode is attached ({})",
            std::io::Error::from_raw_os_error(errno)
        ),
        libc::EOPNOTSUPP => format!(
            "the driver does not support this XDP mode ({})",
            std::io::Error::from_raw_os_error(errno)
        ),
        _ => std::io::Error::from_raw_os_error(errno).to_string(),
    };
    format!("{devname} queue {queue}: cannot use AF_XDP: {why}")
}

/// The network namespace this process is in (its inode number).
fn netns() -> u64 {
    fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino())
}

/// The state directory.
const STATE_DIR: &str = "/run/paraclick";

/// Takes the device for this process: locks its state file and removes a
/// program a crashed router left on it; refuses a device whose XDP
/// program is someone else's.
fn take_device(devname: &str, ifindex: i32) -> Result<DevGuard, String> {
    let _ = fs::create_dir_all(STATE_DIR);
    let path = format!("{STATE_DIR}/xdp-{}-{ifindex}", netns());
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => open_error(devname, 0, libc::EACCES),
            _ => format!("{devname}: cannot open {path}: {e}"),
        })?;
    let mut recorded = String::new();
    let _ = file.read_to_string(&mut recorded);
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(format!(
            "{devname}: another router ({}) has AF_XDP sockets on this device",
            recorded
                .split_whitespace()
                .next()
                .map_or_else(|| "process unknown".to_string(), |p| format!("pid {p}"))
        ));
    }
    let progs = programs(ifindex).map_err(|e| {
        format!(
            "{devname}: cannot query its XDP programs: {}",
            std::io::Error::from_raw_os_error(e)
        )
    })?;
    if !progs.is_empty() {
        let mut words = recorded.split_whitespace();
        let pid = words.next().unwrap_or("").to_string();
        let ours: Vec<u32> = words.filter_map(|w| w.parse().ok()).collect();
        let stale = progs
            .iter()
            .all(|(id, name)| self::ours(name) && ours.contains(id));
        if stale {
            // SAFETY: a plain call on an interface index.
            let r = unsafe { pcx_xdp_detach_all(ifindex) };
            if r < 0 {
                return Err(format!(
                    "{devname}: cannot remove the XDP program an earlier router left: {}",
                    std::io::Error::from_raw_os_error(-r)
                ));
            }
            eprintln!(
                "{devname}: removed the XDP program (id {}) that an earlier router (pid {pid}) \
                 left attached when it ended without closing its AF_XDP sockets",
                progs[0].0
            );
        } else {
            let list: Vec<String> = progs
                .iter()
                .map(|(id, n)| format!("'{n}' (id {id})"))
                .collect();
            if recorded.is_empty() {
                // Made just now: leave nothing behind.
                let _ = fs::remove_file(&path);
            }
            return Err(format!(
                "{devname}: an XDP program is already attached by another program: {}; detach \
                 it first (xdp-loader unload {devname} --all, or ip link set dev {devname} xdp \
                 off), or use METHOD LINUX",
                list.join(", ")
            ));
        }
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    let _ = file.flush();
    Ok(DevGuard {
        ifindex,
        path,
        file,
        pass: Mutex::new(None),
    })
}

/// Records the program libxdp attached for this process's sockets.
fn record_programs(g: &DevGuard) {
    if let Ok(progs) = programs(g.ifindex) {
        let mut f = &g.file;
        let _ = f.set_len(0);
        let _ = f.rewind();
        let mut s = std::process::id().to_string();
        for (id, name) in progs {
            if ours(&name) {
                s.push_str(&format!(" {id}"));
            }
        }
        let _ = f.write_all(s.as_bytes());
        let _ = f.flush();
    }
}

/// Loads libxdp (once), or says why it could not be.
fn load_libxdp(devname: &str) -> Result<(), String> {
    // SAFETY: opens libxdp once (dlopen), or says it could not.
    if unsafe { pcx_xdp_load() } != 0 {
        // SAFETY: the shim's static NUL-terminated buffer, written once
        // (under pthread_once) before pcx_xdp_load returned.
        let why = unsafe { std::ffi::CStr::from_ptr(pcx_xdp_load_error()) };
        return Err(format!(
            "{devname}: METHOD XDP needs libxdp, which could not be loaded: {}",
            why.to_string_lossy()
        ));
    }
    Ok(())
}

/// The interface index of `devname`, if it has queue `queue`.
fn device_queue(devname: &str, queue: u32) -> Result<i32, String> {
    let ifindex = super::sys::ifindex(devname)?;
    let (nrx, ntx) = queue_counts(devname);
    if nrx.max(ntx) > 0 && queue as usize >= nrx.max(ntx) {
        return Err(format!(
            "{devname} has no queue {queue} ({nrx} receive, {ntx} transmit queues)"
        ));
    }
    Ok(ifindex)
}

/// What [`port`] checks before it opens a socket on queue `queue` of
/// `devname`, with the same errors: libxdp loads, the device exists and
/// has the queue. For a socket opened later, on first use: what can be
/// said at start-up is said then.
pub fn check_port(devname: &str, queue: u32) -> Result<(), String> {
    load_libxdp(devname)?;
    device_queue(devname, queue).map(|_| ())
}

/// The socket on queue `queue` of `devname`, shared with the other
/// elements of this process using it, or a new one with a receive ring
/// if `rx` and a transmit ring if `tx`. An existing socket that lacks a
/// ring asked for is an error (its elements should have asked at once).
pub fn port(
    devname: &str,
    queue: u32,
    rx: bool,
    tx: bool,
    o: &XdpOptions,
    pass: Option<&PassFilter>,
    members: &[(String, u32)],
) -> Result<Arc<XskPort>, String> {
    load_libxdp(devname)?;
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: sets the libraries' print callbacks to none.
    unsafe { pcx_xdp_quiet() };
    reg.ports.retain(|(_, _, w)| w.strong_count() > 0);
    reg.devs.retain(|(_, w)| w.strong_count() > 0);
    if let Some(p) = reg
        .ports
        .iter()
        .find(|(d, q, _)| d == devname && *q == queue)
        .and_then(|(_, _, w)| w.upgrade())
    {
        if (rx && !p.has_rx) || (tx && !p.has_tx) {
            return Err(format!(
                "{devname} queue {queue}: its AF_XDP socket was opened without a {} ring",
                if rx && !p.has_rx {
                    "receive"
                } else {
                    "transmit"
                }
            ));
        }
        return Ok(p);
    }
    let ifindex = device_queue(devname, queue)?;
    let dev = match reg
        .devs
        .iter()
        .find(|(d, _)| d == devname)
        .and_then(|(_, w)| w.upgrade())
    {
        Some(g) => g,
        None => {
            let g = Arc::new(take_device(devname, ifindex)?);
            reg.devs.push((devname.to_string(), Arc::downgrade(&g)));
            g
        }
    };
    let name = CString::new(devname).map_err(|_| format!("bad device name '{devname}'"))?;
    if let (true, Some(f)) = (rx, pass) {
        let pass_prog = dev.pass.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pass_prog.as_ref().filter(|p| p.text != f.text) {
            return Err(format!(
                "{devname}: its METHOD XDP readers give different PASS filters ('{}' and '{}')",
                p.text, f.text
            ));
        }
    }
    let me = (devname.to_string(), queue);
    let slot = members.iter().position(|m| *m == me);
    let req = Open {
        dev: &dev,
        name: &name,
        queue,
        rx,
        tx,
        o,
        pass,
    };
    let mut port = None;
    let mut unshared = None;
    if let (true, Some(slot), true) = (o.share, slot, members.len() > 1) {
        reg.groups.retain(|w| w.strong_count() > 0);
        let found = reg
            .groups
            .iter()
            .filter_map(Weak::upgrade)
            .find(|g| g.members == members && g.can_join(slot));
        let g = match found {
            Some(g) => g,
            None => {
                let g = Group::new(members.to_vec())?;
                reg.groups.push(Arc::downgrade(&g));
                g
            }
        };
        // A socket joining a UMEM is bound in the mode of its first
        // socket: one whose ZEROCOPY asks otherwise gets its own.
        let bound = g.bound_zerocopy();
        if let Some(z) = o.zerocopy.filter(|&z| bound.is_some_and(|b| b != z)) {
            unshared = Some(format!(
                "ZEROCOPY {z}, but the shared UMEM's sockets are bound in {} mode",
                if z { "copy" } else { "zero-copy" }
            ));
        } else {
            match req.socket(g, slot) {
                Ok(p) => port = Some(p),
                Err(e) if matches!(e, libc::EPERM | libc::EACCES | libc::EAFNOSUPPORT) => {
                    return Err(open_error(devname, queue, e))
                }
                Err(e) => {
                    unshared = Some(format!(
                        "sharing failed: {}",
                        std::io::Error::from_raw_os_error(e)
                    ))
                }
            }
        }
    }
    let mut port = match port {
        Some(p) => p,
        None => req
            .socket(Group::new(vec![me])?, 0)
            .map_err(|e| open_error(devname, queue, e))?,
    };
    port.unshared = unshared;
    let port = Arc::new(port);
    if tx {
        let mut s = port
            .umem
            .group
            .senders
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        s.retain(|w| w.strong_count() > 0);
        s.push(Arc::downgrade(&port));
    }
    reg.ports
        .push((devname.to_string(), queue, Arc::downgrade(&port)));
    Ok(port)
}

/// What [`port`] opens a socket for.
struct Open<'a> {
    dev: &'a Arc<DevGuard>,
    name: &'a CString,
    queue: u32,
    rx: bool,
    tx: bool,
    o: &'a XdpOptions,
    pass: Option<&'a PassFilter>,
}

impl Open<'_> {
    /// The socket in slot `slot` of `group`'s UMEM: a new UMEM if no
    /// socket of the group is open, else joined to theirs. An errno if
    /// it cannot be opened in any mode asked for.
    fn socket(&self, group: Arc<Group>, slot: usize) -> Result<XskPort, i32> {
        let Open {
            dev,
            name,
            queue,
            rx,
            tx,
            o,
            pass,
        } = *self;
        let ifindex = dev.ifindex;
        let mut gs = group.state.lock().unwrap_or_else(|e| e.into_inner());
        let share = gs.open.first().map_or(std::ptr::null_mut(), |p| p.0);
        let umem = Arc::new(Umem {
            base: (slot * SLOT_FRAMES * FRAME_SIZE) as u64,
            group: group.clone(),
            back: Mutex::new(Back {
                bufs: Vec::new(),
                closed: false,
            }),
            pending: AtomicBool::new(false),
        });
        let area = &group.area;
        let fill: Vec<u64> = (0..RING).map(|i| umem.addr(i)).collect();
        let mut last = 0;
        let mut opened = None;
        let mut pass_prog = dev.pass.lock().unwrap_or_else(|e| e.into_inner());
        let mut attached = false;
        for (xdp_flags, bind, what) in o.attempts() {
            // With PASS, the device's program is ours, attached in the mode
            // of the first receive socket; the sockets enter its map.
            let mut xsks_map = -1;
            if let (true, Some(f)) = (rx, pass) {
                if attached && pass_prog.as_ref().is_some_and(|p| p.xdp_flags != xdp_flags) {
                    // Attached here for a mode that failed: try the next.
                    *pass_prog = None;
                    attached = false;
                }
                if pass_prog.is_none() {
                    match PassProg::attach(ifindex, xdp_flags, f) {
                        Ok(p) => {
                            *pass_prog = Some(p);
                            attached = true;
                            // Recorded at once: a router killed from here on
                            // leaves a program the next one knows as ours.
                            record_programs(dev);
                        }
                        Err(e) => {
                            last = e;
                            if matches!(last, libc::EPERM | libc::EACCES) {
                                break;
                            }
                            continue;
                        }
                    }
                }
                let p = pass_prog.as_ref().expect("attached above");
                if p.xdp_flags != xdp_flags {
                    // Another socket of the device attached it in another
                    // mode: a socket must be bound in the program's.
                    last = libc::EBUSY;
                    continue;
                }
                xsks_map = p.xsks_map;
            }
            let mut raw: *mut PcxXsk = std::ptr::null_mut();
            // SAFETY: `area` is the group's mapping of `size` bytes,
            // outliving the socket (the port holds the group, and closes
            // the socket first); the fill addresses are the receive frames
            // of the socket's slot; `share` is null or an open socket of
            // the group (its lock is held).
            let r = unsafe {
                pcx_xsk_open(
                    &mut raw,
                    share,
                    name.as_ptr(),
                    queue,
                    area.ptr.cast(),
                    area.len as c_ulonglong,
                    FRAME_SIZE as c_uint,
                    if rx { RING as c_uint } else { 0 },
                    if tx { RING as c_uint } else { 0 },
                    RING as c_uint,
                    xdp_flags,
                    bind | XDP_USE_NEED_WAKEUP,
                    fill.as_ptr(),
                    if rx { RING as c_uint } else { 0 },
                    xsks_map,
                )
            };
            if r == 0 {
                opened = Some((raw, what));
                break;
            }
            last = -r;
            // No permission or no AF_XDP: another mode will not help.
            if matches!(last, libc::EPERM | libc::EACCES | libc::EAFNOSUPPORT) {
                break;
            }
        }
        if opened.is_none() && attached {
            *pass_prog = None;
        }
        drop(pass_prog);
        let Some((raw, what)) = opened else {
            return Err(last);
        };
        // SAFETY: an open socket.
        let zc = unsafe { pcx_xsk_zerocopy(raw) } != 0;
        if gs.open.is_empty() {
            gs.zerocopy = zc;
        }
        gs.open.push(SockPtr(raw));
        gs.used[slot] = true;
        drop(gs);
        if rx {
            record_programs(dev);
        }
        let owner: Arc<dyn BufferOwner> = umem.clone();
        let slots = (0..RING)
            .map(|i| {
                // SAFETY: receive frame i of the socket's slot of the
                // UMEM, which each handle keeps mapped (it holds the
                // group); its one handle, and the frame is touched only
                // through a packet made of it while one exists (the port
                // reads a frame the kernel filled only while it holds the
                // handle).
                let p = unsafe { NonNull::new_unchecked(area.ptr.add(umem.addr(i) as usize)) };
                // SAFETY: as above.
                Some(unsafe { ExtBuffer::new(p, FRAME_SIZE, owner.clone()) })
            })
            .collect();
        Ok(XskPort {
            raw,
            ifindex,
            queue,
            has_rx: rx,
            has_tx: tx,
            mode: format!("{what} {}", if zc { "zerocopy" } else { "copy" }),
            unshared: None,
            rx: Mutex::new(RxSide {
                addrs: vec![0; RING],
                lens: vec![0; RING],
                slots,
                spare: Vec::with_capacity(RING),
                kernel: if rx { RING } else { 0 },
                back: Vec::new(),
            }),
            tx: Mutex::new(TxSide {
                free: (RING..SLOT_FRAMES).map(|i| umem.addr(i)).collect(),
                addrs: Vec::with_capacity(RING),
                lens: Vec::with_capacity(RING),
                reaped: vec![0; RING],
                inflight: (0..group.frames()).map(|_| None).collect(),
                done: Vec::new(),
                direct: 0,
                copied: 0,
                unkicked: 0,
                kicks: 0,
                budget: KICK_BATCH,
            }),
            umem,
            _dev: (*dev).clone(),
        })
    }
}

/// The elements using AF_XDP sockets, so that the first to open a
/// (device, queue) opens it with every ring the others need.
pub trait XdpClaims {
    /// (device, queue, reads, writes) for each queue the element uses.
    fn xdp_claims(&self) -> Vec<(&str, usize, bool, bool)>;
    /// The PASS filter of a reader (for every device it reads).
    fn xdp_pass(&self) -> Option<&PassFilter> {
        None
    }
    /// Whether its sockets may share a UMEM (SHARE_UMEM).
    fn xdp_share(&self) -> bool {
        true
    }
}

/// The (device, queue) pairs whose sockets share one UMEM: every METHOD
/// XDP device queue of the router, less those an element gives
/// `SHARE_UMEM false`. Sorted. A frame received on any of them can then
/// be sent on any other without a copy, whichever thread sends it (queue
/// i of every interface on thread i, as conf/iprouter-veth-2q.click
/// places them, with one ToDevice per interface pushed from both, which
/// sends each thread's packets on that thread's queue).
pub fn umem_group(ix: &paraclick_runtime::InitCx<'_>) -> Vec<(String, u32)> {
    let mut on: Vec<(String, u32)> = Vec::new();
    let mut off: Vec<(String, u32)> = Vec::new();
    for i in 0..ix.element_count() {
        if let Some(c) = ix.cast::<dyn XdpClaims>(i) {
            let share = c.xdp_share();
            for (d, q, _, _) in c.xdp_claims() {
                let m = (d.to_string(), q as u32);
                if share { &mut on } else { &mut off }.push(m);
            }
        }
    }
    on.retain(|m| !off.contains(m));
    on.sort();
    on.dedup();
    on
}

/// Whether any element of the router reads (writes) queue `queue` of
/// `devname` through AF_XDP, and the PASS filter of the device's
/// readers (which must all give the same, or none).
pub fn rings_wanted(
    ix: &paraclick_runtime::InitCx<'_>,
    devname: &str,
    queue: usize,
) -> Result<(bool, bool, Option<PassFilter>), String> {
    let (mut rx, mut tx) = (false, false);
    let mut pass: Option<Option<PassFilter>> = None;
    for i in 0..ix.element_count() {
        if let Some(c) = ix.cast::<dyn XdpClaims>(i) {
            let mut reads_dev = false;
            for (d, q, r, w) in c.xdp_claims() {
                if d == devname && q == queue {
                    rx |= r;
                    tx |= w;
                }
                reads_dev |= d == devname && r;
            }
            if reads_dev {
                let p = c.xdp_pass().cloned();
                match &pass {
                    Some(prev) if *prev != p => {
                        let show = |p: &Option<PassFilter>| {
                            p.as_ref()
                                .map_or_else(|| "none".to_string(), |f| format!("'{}'", f.text))
                        };
                        return Err(format!(
                            "{devname}: every METHOD XDP reader of a device must give the same \
                             PASS filter (the device has one XDP program), not {} and {}",
                            show(prev),
                            show(&p)
                        ));
                    }
                    _ => pass = Some(p),
                }
            }
        }
    }
    Ok((rx, tx, pass.flatten()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_tried_in_order() {
        let o = |mode, zerocopy| XdpOptions {
            mode,
            zerocopy,
            pass: None,
            share: true,
        };
        let names = |o: XdpOptions| -> Vec<(u32, u32)> {
            o.attempts().iter().map(|&(x, b, _)| (x, b)).collect()
        };
        assert_eq!(
            names(o(XdpMode::Auto, None)),
            vec![
                (XDP_FLAGS_DRV_MODE, XDP_ZEROCOPY),
                (XDP_FLAGS_DRV_MODE, XDP_COPY),
                (XDP_FLAGS_SKB_MODE, XDP_COPY)
            ]
        );
        assert_eq!(
            names(o(XdpMode::Native, Some(false))),
            vec![(XDP_FLAGS_DRV_MODE, XDP_COPY)]
        );
        assert_eq!(
            names(o(XdpMode::Generic, None)),
            vec![(XDP_FLAGS_SKB_MODE, XDP_COPY)]
        );
    }

    #[test]
    fn errors_say_why() {
        let e = open_error("r0", 1, libc::EPERM);
        assert!(
            e.contains("r0 queue 1") && e.contains("no permission"),
            "{e}"
        );
        let e = open_error("r0", 0, libc::EAFNOSUPPORT);
        assert!(e.contains("no AF_XDP sockets"), "{e}");
        let e = open_error("r0", 0, libc::EBUSY);
        assert!(e.contains("already bound"), "{e}");
    }

    #[test]
    fn packet_types_come_from_the_destination() {
        assert_eq!(packet_type(&[0xff; 14]), PacketType::Broadcast);
        assert_eq!(
            packet_type(&[0x01, 0, 0x5e, 0, 0, 1]),
            PacketType::Multicast
        );
        assert_eq!(packet_type(&[0x02, 0, 0, 0, 1, 1]), PacketType::Host);
    }

    #[test]
    fn a_device_without_it_is_refused() {
        let o = XdpOptions::default();
        let e = port("pcnoxdp0", 0, true, true, &o, None, &[])
            .err()
            .unwrap();
        assert!(e.contains("pcnoxdp0"), "{e}");
    }
}
