//! The Linux system interface FromDevice and ToDevice use: AF_PACKET
//! sockets (receive rings, fanout groups, statistics, promiscuous mode,
//! transmission with `sendmmsg`), interface ioctls (index, MTU, address,
//! ethtool GRO), and the per-device sysctls that keep the kernel's own
//! stack away from a device. Not an element.

// System calls go through rustix where it has them (sockets, interface
// index, mmap). libc stays for what rustix has no call for: the
// AF_PACKET socket options (PACKET_VERSION, PACKET_RX_RING,
// PACKET_VNET_HDR, PACKET_FANOUT, PACKET_STATISTICS,
// PACKET_ADD_MEMBERSHIP, PACKET_IGNORE_OUTGOING), SO_ATTACH_FILTER and
// SO_SNDBUFFORCE, binding to a sockaddr_ll, and the SIOCGIFADDR and
// SIOCETHTOOL ioctls.

use super::ring::{RxRing, BLOCK_STATUS_OFF};
use rustix::io::Errno;
use rustix::mm::{self, MapFlags, ProtFlags};
use rustix::net::{
    self, netdevice, AddressFamily, MMsgHdr, Protocol, SendAncillaryBuffer, SendFlags, SocketFlags,
    SocketType,
};
use std::io;
use std::io::IoSlice;
use std::mem::size_of;
use std::num::NonZeroU32;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

const TPACKET_V2: libc::c_int = 1;
const TPACKET_V3: libc::c_int = 2;
/// Socket receive buffer a TPACKET_V2 ring's socket asks for: where the
/// whole of a frame longer than a slot waits (`TP_STATUS_COPY`).
const V2_RCVBUF: libc::c_int = 4 << 20;
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;
/// The fanout group's own PACKET_IGNORE_OUTGOING (Linux 6.9): a member
/// socket's PACKET_IGNORE_OUTGOING does not apply to the group's hook, so
/// without it every frame the host sends on the device is cloned and
/// copied into a member's ring. Older kernels ignore the bit.
const PACKET_FANOUT_FLAG_IGNORE_OUTGOING: u32 = 0x4000;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;

fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` points at a live `T` of `size_of::<T>()` bytes for the
    // duration of the call; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            v as *const T as *const libc::c_void,
            size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt<T: Copy>(fd: RawFd, level: libc::c_int, name: libc::c_int, init: T) -> io::Result<T> {
    let mut v = init;
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `v` is a live, initialized `T` and `len` its size; the kernel
    // writes at most `len` bytes into it.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut v as *mut T as *mut libc::c_void,
            &mut len,
        )
    };
    if r == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

fn packet_socket(protocol: u16) -> Result<OwnedFd, String> {
    let protocol = NonZeroU32::new(u32::from(protocol)).map(Protocol::from_raw);
    net::socket_with(
        AddressFamily::PACKET,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        protocol,
    )
    .map_err(|e| {
        if e == Errno::PERM {
            "cannot open a packet socket: permission denied (run as root or with CAP_NET_RAW)"
                .to_string()
        } else {
            format!("cannot open a packet socket: {}", io::Error::from(e))
        }
    })
}

fn bind(fd: RawFd, ifindex: i32, protocol: u16) -> Result<(), String> {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol;
    sll.sll_ifindex = ifindex;
    // SAFETY: `sll` is a valid sockaddr_ll and the length is its size.
    let r = unsafe {
        libc::bind(
            fd,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(os_err("bind"))
    }
}

/// The interface index of `name`.
pub fn ifindex(name: &str) -> Result<i32, String> {
    if name.contains('\0') {
        return Err(format!("bad device name '{name}'"));
    }
    // Any socket will do for the SIOCGIFINDEX ioctl.
    let s = net::socket_with(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| format!("{name}: cannot open a socket: {}", io::Error::from(e)))?;
    match netdevice::name_to_index(&s, name) {
        Ok(i) if i > 0 => Ok(i as i32),
        _ => Err(format!("no device named '{name}'")),
    }
}

fn ifreq(name: &str) -> Result<libc::ifreq, String> {
    // SAFETY: ifreq is plain old data (a name and a union of plain data
    // and pointers); all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= r.ifr_name.len() || name.contains('\0') {
        return Err(format!("bad device name '{name}'"));
    }
    for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(r)
}

fn ioctl_ifreq(fd: RawFd, req: libc::c_ulong, r: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: `r` is a valid ifreq naming a device; these requests read
    // and write only the ifreq (and, for SIOCETHTOOL, the buffer its data
    // pointer names, which the caller keeps alive).
    let rc = unsafe { libc::ioctl(fd, req as _, r as *mut libc::ifreq) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether device `name` has an IPv4 address.
pub fn has_ipv4_address(name: &str) -> Result<bool, String> {
    let mut r = ifreq(name)?;
    // SIOCGIFADDR needs an AF_INET family in the request.
    r.ifr_ifru.ifru_addr.sa_family = libc::AF_INET as libc::sa_family_t;
    // SIOCGIFADDR is an AF_INET ioctl: use an AF_INET socket.
    let flags = SocketFlags::CLOEXEC;
    let Ok(s) = net::socket_with(AddressFamily::INET, SocketType::DGRAM, flags, None) else {
        // No IPv4 in this kernel or namespace: no IPv4 address either.
        return Ok(false);
    };
    match ioctl_ifreq(s.as_raw_fd(), libc::SIOCGIFADDR, &mut r) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => Ok(false),
        Err(e) => Err(format!("{name}: reading its IPv4 address: {e}")),
    }
}

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

fn ethtool_value(fd: &OwnedFd, name: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let mut v = EthtoolValue { cmd, data };
    let mut r = ifreq(name).map_err(io::Error::other)?;
    r.ifr_ifru.ifru_data = &mut v as *mut EthtoolValue as *mut libc::c_char;
    ioctl_ifreq(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut r)?;
    Ok(v.data)
}

/// Turns generic receive offload off on `name`; returns whether it was on
/// (`None` if the device has no such setting).
pub fn disable_gro(fd: &OwnedFd, name: &str) -> Result<Option<bool>, String> {
    let was = match ethtool_value(fd, name, ETHTOOL_GGRO, 0) {
        Ok(v) => v != 0,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(format!("{name}: reading GRO: {e}")),
    };
    if was {
        ethtool_value(fd, name, ETHTOOL_SGRO, 0)
            .map_err(|e| format!("{name}: turning GRO off: {e}"))?;
    }
    Ok(Some(was))
}

/// Turns GRO back on (when it was on before [`disable_gro`]).
pub fn enable_gro(fd: &OwnedFd, name: &str) {
    let _ = ethtool_value(fd, name, ETHTOOL_SGRO, 1);
}

/// What a receive socket needs.
pub struct RxConfig {
    pub ifindex: i32,
    pub block_size: usize,
    pub nblocks: usize,
    /// Block retire timeout in milliseconds (TPACKET_V3).
    pub retire_ms: u32,
    /// A TPACKET_V2 ring of slots of this many bytes (a divisor of
    /// `block_size`) instead of a TPACKET_V3 ring: each frame handed over
    /// as soon as it is written, frames longer than a slot also queued
    /// whole on the socket (`PACKET_COPY_THRESH`).
    pub v2_frame: Option<usize>,
    pub vnet_hdr: bool,
    pub ignore_outgoing: bool,
    pub promisc: bool,
    /// A classic BPF socket filter: only the frames it accepts reach the
    /// ring (attached before the socket is bound, so none slips past).
    pub filter: Option<Vec<libc::sock_filter>>,
    /// Bind to the device without a protocol (the socket gets no frames)
    /// and leave taking frames to [`fanout_join`], which binds it with
    /// ETH_P_ALL and joins the group when the sockets of the queues before
    /// it have joined.
    pub defer_bind: bool,
}

/// Opens an AF_PACKET socket with a TPACKET_V3 (or, with `v2_frame`,
/// TPACKET_V2) receive ring on a device. The socket is created without a
/// protocol (it receives nothing) and bound to the device with ETH_P_ALL
/// only once the ring is in place, so no other device's traffic ever
/// reaches it.
pub fn open_rx(cfg: &RxConfig) -> Result<(OwnedFd, RxRing), String> {
    let fd = packet_socket(0)?;
    let raw = fd.as_raw_fd();
    let (version, name) = match cfg.v2_frame {
        Some(_) => (TPACKET_V2, "TPACKET_V2"),
        None => (TPACKET_V3, "TPACKET_V3"),
    };
    setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
        .map_err(|e| format!("{name} rings not supported: {e}"))?;
    if cfg.vnet_hdr {
        let one: libc::c_int = 1;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VNET_HDR, &one)
            .map_err(|e| format!("PACKET_VNET_HDR: {e}"))?;
    }
    if let Some(frame) = cfg.v2_frame {
        // A frame longer than a slot (a 64 KB super-frame) is also
        // queued whole on the socket, while its receive buffer has room.
        let one: libc::c_int = 1;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_COPY_THRESH, &one)
            .map_err(|e| format!("PACKET_COPY_THRESH: {e}"))?;
        // Capped by net.core.rmem_max; the default still holds a few.
        let _ = setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &V2_RCVBUF);
        let req = libc::tpacket_req {
            tp_block_size: cfg.block_size as u32,
            tp_block_nr: cfg.nblocks as u32,
            tp_frame_size: frame as u32,
            tp_frame_nr: (cfg.block_size / frame * cfg.nblocks) as u32,
        };
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)
            .map_err(|e| format!("PACKET_RX_RING: {e}"))?;
    } else {
        let req = libc::tpacket_req3 {
            tp_block_size: cfg.block_size as u32,
            tp_block_nr: cfg.nblocks as u32,
            // Frames are variable-sized in V3; this only bounds the count.
            tp_frame_size: 2048,
            tp_frame_nr: (cfg.block_size / 2048 * cfg.nblocks) as u32,
            tp_retire_blk_tov: cfg.retire_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)
            .map_err(|e| format!("PACKET_RX_RING: {e}"))?;
    }
    let len = cfg.block_size * cfg.nblocks;
    let map = |flags: MapFlags| {
        // SAFETY: maps the ring the kernel just allocated for this socket
        // (a fresh mapping at an address the kernel picks, touching no
        // existing memory); the result is checked, then owned by the
        // RxRing.
        unsafe {
            mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::POPULATE | flags,
                &fd,
                0,
            )
        }
    };
    // MAP_LOCKED can fail under a small RLIMIT_MEMLOCK: map unlocked.
    let base = map(MapFlags::LOCKED)
        .or_else(|_| map(MapFlags::empty()))
        .map_err(|e| format!("mmap of the receive ring: {}", io::Error::from(e)))?;
    // SAFETY: `base` is a fresh, page-aligned MAP_SHARED mapping of
    // exactly `len` bytes of this socket's ring: nblocks blocks of
    // block_size bytes (V3), or that many bytes of contiguous frame slots
    // (V2: the slot size divides the block size, so no block has a gap);
    // the RxRing unmaps it on drop and nothing else does.
    let ring = unsafe {
        match cfg.v2_frame {
            Some(frame) => RxRing::from_raw(base as *mut u8, frame, len / frame, 0),
            None => RxRing::from_raw(
                base as *mut u8,
                cfg.block_size,
                cfg.nblocks,
                BLOCK_STATUS_OFF,
            ),
        }
    };
    if cfg.ignore_outgoing {
        let one: libc::c_int = 1;
        // Old kernels lack it; FromDevice drops outgoing frames itself too.
        let _ = setsockopt(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one);
    }
    if let Some(f) = &cfg.filter {
        attach_filter(&fd, f)?;
    }
    bind(
        raw,
        cfg.ifindex,
        if cfg.defer_bind { 0 } else { ETH_P_ALL_BE },
    )?;
    if cfg.promisc {
        let mreq = libc::packet_mreq {
            mr_ifindex: cfg.ifindex,
            mr_type: libc::PACKET_MR_PROMISC as u16,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        // The membership, and with it promiscuous mode, ends when the
        // socket closes.
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
            .map_err(|e| format!("PROMISC: {e}"))?;
    }
    Ok((fd, ring))
}

/// Takes the next whole frame the kernel queued on a TPACKET_V2 ring's
/// socket (a frame longer than its slot, `TP_STATUS_COPY`) into `buf`,
/// without waiting: its length (more than `buf.len()` if cut short), or
/// `None` when none waits.
pub fn recv_queued(fd: &OwnedFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes for
    // the duration of the call; the kernel writes at most that many.
    let r = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_TRUNC,
        )
    };
    usize::try_from(r).ok()
}

/// Attaches the classic BPF program `insns` to a socket (SO_ATTACH_FILTER).
pub fn attach_filter(fd: &OwnedFd, insns: &[libc::sock_filter]) -> Result<(), String> {
    let len = u16::try_from(insns.len()).map_err(|_| "socket filter too long".to_string())?;
    let prog = libc::sock_fprog {
        len,
        // The kernel copies the program and never writes through this.
        filter: insns.as_ptr() as *mut libc::sock_filter,
    };
    setsockopt(
        fd.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_ATTACH_FILTER,
        &prog,
    )
    .map_err(|e| format!("attaching the socket filter (SO_ATTACH_FILTER): {e}"))
}

/// Ring statistics since the last call (the kernel resets them on read):
/// (frames received, frames dropped for lack of ring space).
pub fn ring_stats(fd: &OwnedFd) -> Result<(u32, u32), String> {
    let s = getsockopt(
        fd.as_raw_fd(),
        libc::SOL_PACKET,
        libc::PACKET_STATISTICS,
        libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        },
    )
    .map_err(|e| format!("PACKET_STATISTICS: {e}"))?;
    Ok((s.tp_packets, s.tp_drops))
}

/// Fanout groups this process created, one per (device, mode).
static FANOUT_GROUPS: Mutex<Vec<FanoutGroup>> = Mutex::new(Vec::new());

struct FanoutGroup {
    ifindex: i32,
    mode: u32,
    /// The kernel's group id, once the first member has made the group.
    id: Option<u16>,
    /// Our sockets counted as members (joined or waiting their turn).
    members: usize,
    /// Sockets waiting for the queues before theirs to join.
    order: JoinOrder<OwnedFd>,
}

/// The order in which the sockets of a device's N_QUEUES queues join
/// their fanout group: by queue number, whatever order they are opened
/// in. The kernel numbers a group's members in the order they join and
/// deals frames by that number (`FANOUT CPU`: the receiving CPU modulo
/// the member count; `QM`: the device queue modulo it), so that QUEUE i's
/// element, on thread i, gets the frames CPU i (device queue i) received
/// only if the sockets join in queue order. A queue opened early waits
/// (bound without a protocol: it gets no frame meanwhile) until each
/// queue before it has joined. After the last queue the order starts
/// again at 0 (a hot reconfiguration's new router opens them all again).
#[derive(Debug)]
pub struct JoinOrder<T> {
    nqueues: usize,
    /// The next queue to join.
    next: usize,
    waiting: Vec<(usize, T)>,
}

impl<T> JoinOrder<T> {
    pub fn new(nqueues: usize) -> JoinOrder<T> {
        JoinOrder {
            nqueues: nqueues.max(1),
            next: 0,
            waiting: Vec::new(),
        }
    }

    /// Queue `queue`'s socket is open: returns the sockets that may join
    /// now, in the order they must join (this one and the waiting ones it
    /// was holding up), possibly none.
    pub fn arrive(&mut self, queue: usize, item: T) -> Vec<(usize, T)> {
        self.waiting.push((queue, item));
        let mut ready = Vec::new();
        while let Some(i) = self.waiting.iter().position(|(q, _)| *q == self.next) {
            ready.push(self.waiting.swap_remove(i));
            self.next = (self.next + 1) % self.nqueues;
        }
        ready
    }

    /// Sockets still waiting for an earlier queue.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

/// Membership of a socket in the process's fanout group for a device.
pub struct FanoutMember {
    ifindex: i32,
    mode: u32,
}

impl Drop for FanoutMember {
    fn drop(&mut self) {
        let mut g = FANOUT_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = g
            .iter()
            .position(|e| e.ifindex == self.ifindex && e.mode == self.mode)
        {
            g[i].members -= 1;
            if g[i].members == 0 {
                g.swap_remove(i);
            }
        }
    }
}

/// Makes `fd` (opened with [`RxConfig::defer_bind`] on `ifindex`) the
/// member for queue `queue` of `nqueues` in this process's fanout group
/// for that device and mode. Sockets join in queue order
/// ([`JoinOrder`]): this one now if the queues before it have joined
/// (then also the later ones that were waiting for it), else when they
/// have. Joining binds the socket with ETH_P_ALL, then the first member
/// creates the group with a kernel-chosen unique id and later ones join
/// it. With `ignore_outgoing` the group gets the kernel's
/// ignore-outgoing flag. The membership ends when the returned value is
/// dropped (and the socket closed).
pub fn fanout_join(
    fd: &OwnedFd,
    ifindex: i32,
    queue: usize,
    nqueues: usize,
    mode: u32,
    ignore_outgoing: bool,
) -> Result<FanoutMember, String> {
    let flags = if ignore_outgoing {
        PACKET_FANOUT_FLAG_IGNORE_OUTGOING
    } else {
        0
    };
    let mine = fd
        .try_clone()
        .map_err(|e| format!("duplicating a packet socket: {e}"))?;
    let mut g = FANOUT_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    let i = match g
        .iter()
        .position(|e| e.ifindex == ifindex && e.mode == mode)
    {
        Some(i) => i,
        None => {
            g.push(FanoutGroup {
                ifindex,
                mode,
                id: None,
                members: 0,
                order: JoinOrder::new(nqueues),
            });
            g.len() - 1
        }
    };
    let e = &mut g[i];
    e.members += 1;
    let member = FanoutMember { ifindex, mode };
    for (_, s) in e.order.arrive(queue, mine) {
        let raw = s.as_raw_fd();
        bind(raw, ifindex, ETH_P_ALL_BE)?;
        match e.id {
            Some(id) => {
                let arg: u32 = id as u32 | ((mode | flags) << 16);
                setsockopt(raw, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)
                    .map_err(|err| format!("joining fanout group {id}: {err}"))?;
            }
            None => {
                let arg: u32 = (mode | flags | PACKET_FANOUT_FLAG_UNIQUEID) << 16;
                setsockopt(raw, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)
                    .map_err(|e| format!("creating a fanout group: {e}"))?;
                let v: u32 = getsockopt(raw, libc::SOL_PACKET, libc::PACKET_FANOUT, 0u32)
                    .map_err(|e| format!("reading the fanout group id: {e}"))?;
                e.id = Some(v as u16);
            }
        }
    }
    Ok(member)
}

/// Opens a transmit-only packet socket on a device: bound with protocol 0,
/// so nothing is ever queued to it for reception.
pub fn open_tx(ifindex: i32, sndbuf: usize) -> Result<OwnedFd, String> {
    let fd = packet_socket(0)?;
    let raw = fd.as_raw_fd();
    bind(raw, ifindex, 0)?;
    let sz = sndbuf as libc::c_int;
    if setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sz).is_err() {
        let _ = setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, &sz);
    }
    Ok(fd)
}

/// Most messages one `sendmmsg` call carries.
pub const SEND_CHUNK: usize = 64;

/// What one [`send_frames`] call achieved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendResult {
    /// Frames dealt with, from the front: sent or failed for good.
    pub done: usize,
    /// Bit `i` set: frame `i` (of the first `done`) failed for good.
    pub failed: u64,
    /// The socket would block (or the device's queue is full): the frames
    /// after `done` were not tried.
    pub blocked: bool,
    /// The system error of the last frame that failed for good.
    pub error: Option<i32>,
}

/// Whether an error from sending means "try again later".
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR)
    )
}

/// Sends up to [`SEND_CHUNK`] frames with `sendmmsg`, never blocking.
/// A frame the kernel refuses for good (too big for the MTU, device down)
/// is marked failed and the rest are still sent.
pub fn send_frames(fd: &OwnedFd, frames: &[&[u8]]) -> SendResult {
    let n = frames.len().min(SEND_CHUNK);
    let iov: [IoSlice<'_>; SEND_CHUNK] =
        std::array::from_fn(|i| IoSlice::new(frames.get(i).copied().unwrap_or_default()));
    // No ancillary data: each message's (empty) control buffer.
    let mut ctl: [SendAncillaryBuffer<'_, '_, '_>; SEND_CHUNK] =
        std::array::from_fn(|_| SendAncillaryBuffer::default());
    let mut ctl = ctl.iter_mut();
    let mut msgs: [MMsgHdr<'_>; SEND_CHUNK] = std::array::from_fn(|i| {
        let c = ctl.next().expect("a control buffer for each message");
        MMsgHdr::new(std::slice::from_ref(&iov[i]), c)
    });
    let mut res = SendResult::default();
    let mut retries = 0;
    while res.done < n {
        let e = match net::sendmmsg(fd, &mut msgs[res.done..n], SendFlags::DONTWAIT) {
            Ok(0) => Errno::AGAIN,
            Ok(r) => {
                res.done += r;
                continue;
            }
            Err(e) => e,
        };
        if e == Errno::INTR && retries < 3 {
            retries += 1;
            continue;
        }
        let e = io::Error::from(e);
        if transient(&e) {
            res.blocked = true;
            break;
        }
        // The frame at `done` cannot be sent at all.
        res.failed |= 1u64 << res.done;
        res.error = e.raw_os_error();
        res.done += 1;
    }
    res
}

/// Per-device sysctls that decide whether the kernel's stack acts on
/// frames arriving on a device.
const KERNEL_OFF: [(&str, &str); 4] = [
    // No IPv6 on the device: no addresses, neighbour discovery, or input.
    ("ipv6", "disable_ipv6=1"),
    // Do not forward IPv4 arriving on the device.
    ("ipv4", "forwarding=0"),
    // Answer no ARP request arriving on the device.
    ("ipv4", "arp_ignore=8"),
    // Deliver no IPv4 arriving on the device to the host's own addresses
    // elsewhere (such as the router's addresses on FromHost's taps): with
    // reverse-path filtering on (strict here; the larger of this and
    // `conf/all/rp_filter` applies, and loose does the same), the kernel
    // drops every packet arriving on a device without an address whose
    // source it would not route out of that device: with no routes
    // through it, every packet.
    ("ipv4", "rp_filter=1"),
];

/// Devices whose kernel processing this process turned off, with the
/// settings to restore and how many elements want it off.
static KERNEL_OFF_DEVICES: Mutex<Vec<KernelOffDevice>> = Mutex::new(Vec::new());

/// A device, the (sysctl path, old value) pairs to restore, and its users.
type KernelOffDevice = (String, Vec<(String, String)>, usize);

/// Keeps the kernel's stack from processing frames arriving on a device
/// while it lives; restores the device's settings when the last one for
/// the device is dropped.
pub struct KernelOff {
    dev: String,
}

/// Takes device `name` away from the kernel's own stack (FromDevice's
/// SNIFFER false): refuses if the device has an IPv4 address (the kernel
/// would answer for it), then turns off IPv6, IPv4 forwarding, ARP
/// replies and IPv4 input (strict reverse-path filtering) on it.
pub fn kernel_off(name: &str) -> Result<KernelOff, String> {
    let mut g = KERNEL_OFF_DEVICES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = g.iter_mut().find(|e| e.0 == name) {
        e.2 += 1;
        return Ok(KernelOff { dev: name.into() });
    }
    if has_ipv4_address(name)? {
        return Err(format!(
            "SNIFFER false: {name} has an IPv4 address, so the kernel would process \
             its packets too; remove it (`ip addr flush dev {name}`) or use SNIFFER true"
        ));
    }
    let mut saved = Vec::new();
    for (fam, setting) in KERNEL_OFF {
        let (key, val) = setting.split_once('=').unwrap_or((setting, ""));
        let path = format!("/proc/sys/net/{fam}/conf/{name}/{key}");
        let Ok(old) = std::fs::read_to_string(&path) else {
            continue; // protocol not configured for this device
        };
        let old = old.trim().to_string();
        if old != val {
            std::fs::write(&path, val)
                .map_err(|e| format!("SNIFFER false: writing {path}: {e}"))?;
            saved.push((path, old));
        }
    }
    g.push((name.into(), saved, 1));
    Ok(KernelOff { dev: name.into() })
}

impl Drop for KernelOff {
    fn drop(&mut self) {
        let mut g = KERNEL_OFF_DEVICES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = g.iter().position(|e| e.0 == self.dev) {
            g[i].2 -= 1;
            if g[i].2 == 0 {
                let (_, saved, _) = g.swap_remove(i);
                for (path, old) in saved.into_iter().rev() {
                    let _ = std::fs::write(&path, old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::tap::{configure, root_or_skip, unshare_netns, TapSetup};

    /// The queues' sockets join their fanout group in queue order whatever
    /// order they are opened in, so member i is QUEUE i (FANOUT CPU: CPU
    /// i's frames go to QUEUE i's element); a second round (a hot
    /// reconfiguration's new router) starts again at queue 0.
    #[test]
    fn fanout_members_join_in_queue_order() {
        let joined = |arrivals: &[usize], n: usize| {
            let mut o = JoinOrder::new(n);
            let mut order = Vec::new();
            let mut at = Vec::new();
            for (k, &q) in arrivals.iter().enumerate() {
                let ready = o.arrive(q, k);
                at.push(ready.len());
                order.extend(ready.into_iter().map(|(q, _)| q));
            }
            (order, at, o.waiting())
        };
        assert_eq!(joined(&[0, 1], 2), (vec![0, 1], vec![1, 1], 0));
        // QUEUE 1 first: it waits (joins nothing) until queue 0 is open.
        assert_eq!(joined(&[1, 0], 2), (vec![0, 1], vec![0, 2], 0));
        assert_eq!(
            joined(&[2, 3, 0, 1], 4),
            (vec![0, 1, 2, 3], vec![0, 0, 1, 3], 0)
        );
        assert_eq!(
            joined(&[1, 0, 1, 0], 2),
            (vec![0, 1, 0, 1], vec![0, 2, 0, 2], 0)
        );
        // An incomplete set keeps the later queues waiting.
        assert_eq!(joined(&[2, 1], 3), (vec![], vec![0, 0], 2));
        // The item that joins is the socket of its queue.
        let mut o = JoinOrder::new(2);
        assert!(o.arrive(1, "q1").is_empty());
        assert_eq!(o.arrive(0, "q0"), vec![(0, "q0"), (1, "q1")]);
    }

    /// One `send_frames` call sends every frame it can and marks the one
    /// the kernel refuses for good (too big for the device), with its
    /// error. Needs root: skipped loudly otherwise (a failure with
    /// PARACLICK_NO_SKIP=1, as in CI).
    #[test]
    fn send_frames_marks_a_refused_frame_and_sends_the_rest() {
        if !root_or_skip("send_frames test") {
            return;
        }
        std::thread::spawn(|| {
            unshare_netns();
            configure("lo", &TapSetup::default()).expect("loopback up");
            let fd = open_tx(ifindex("lo").unwrap(), 1 << 20).unwrap();
            let small = [0x5au8; 60];
            let huge = vec![0x5au8; 70_000]; // beyond lo's 65536-byte MTU
            let r = send_frames(&fd, &[&small, &huge, &small]);
            assert_eq!(
                r,
                SendResult {
                    done: 3,
                    failed: 0b010,
                    blocked: false,
                    error: Some(libc::EMSGSIZE),
                }
            );
            // More than one call's worth: the first SEND_CHUNK go.
            let many = vec![&small[..]; SEND_CHUNK + 5];
            let r = send_frames(&fd, &many);
            assert_eq!((r.done, r.failed, r.error), (SEND_CHUNK, 0, None));
            assert_eq!(send_frames(&fd, &[]), SendResult::default());
        })
        .join()
        .unwrap();
    }
}
