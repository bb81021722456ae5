//! The Linux TUN/TAP interface FromHost and ToHost use: creating (or
//! attaching to) a tap device through `/dev/net/tun`, configuring it with
//! interface ioctls (Ethernet address, MTU, IPv4 address and netmask, up,
//! a default route), and reading and writing its frames on a non-blocking
//! descriptor. Not an element.
//!
//! A tap opened here is not persistent: the kernel removes the device when
//! the last descriptor for it closes (when the router ends).

// System calls go through rustix; libc only for the interface ioctls
// (TUNSETIFF, SIOCSIF*, SIOCGIF*, SIOCADDRT) and their ifreq, sockaddr
// and rtentry structures, for which rustix has no call.

use paraclick_packet::wire::{EtherAddr, Ipv4Prefix};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{self, AddressFamily, SocketFlags, SocketType};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// How FromHost sets up its device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TapSetup {
    /// Address and netmask for the kernel's side of the device.
    pub dst: Option<Ipv4Prefix>,
    /// A default route through this host (on the device's network).
    pub gateway: Option<Ipv4Addr>,
    /// The device's Ethernet address.
    pub ether: Option<EtherAddr>,
    /// The device's MTU (without the Ethernet header).
    pub mtu: Option<u32>,
}

/// An `ifreq` naming `name`.
fn ifreq(name: &str) -> Result<libc::ifreq, String> {
    // SAFETY: ifreq is plain old data (a name and a union of plain data
    // and pointers); all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.is_empty() || name.len() >= r.ifr_name.len() || name.contains('\0') {
        return Err(format!("bad device name '{name}'"));
    }
    for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(r)
}

/// The device name an `ifreq` holds (the kernel fills it in).
fn ifreq_name(r: &libc::ifreq) -> String {
    let bytes: Vec<u8> = r
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn ioctl_ifreq(fd: RawFd, req: libc::c_ulong, r: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: `r` is a valid ifreq naming a device; the requests used here
    // (TUNSETIFF and the SIOC[GS]IF* interface requests) read and write
    // only the ifreq itself.
    let rc = unsafe { libc::ioctl(fd, req as _, r as *mut libc::ifreq) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A socket for interface ioctls (in this process's network namespace).
fn ctl_socket() -> Result<OwnedFd, String> {
    net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| {
        format!(
            "cannot open a socket for interface settings: {}",
            io::Error::from(e)
        )
    })
}

fn sockaddr_in(a: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(a).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size (16 bytes) and
    // both are plain old data; the kernel reads the address as the family
    // field says.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

fn permission_hint(e: &io::Error) -> &'static str {
    if e.raw_os_error() == Some(libc::EPERM) {
        " (run as root or with CAP_NET_ADMIN)"
    } else {
        ""
    }
}

/// Opens `/dev/net/tun` and creates (or attaches to) the tap device
/// `name` (which may hold `%d` for the kernel to number it), Ethernet
/// frames without packet information, non-blocking. Returns the
/// descriptor and the device's actual name.
pub fn open_tap(name: &str) -> Result<(OwnedFd, String), String> {
    open_dev(name, false)
}

/// Like [`open_tap`], but with `tun` a tun device: IP packets (the
/// version nibble tells the kernel which protocol) instead of Ethernet
/// frames, again without packet information.
pub fn open_dev(name: &str, tun: bool) -> Result<(OwnedFd, String), String> {
    let kind = if tun { "tun" } else { "tap" };
    let flags = OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open("/dev/net/tun", flags, Mode::empty()).map_err(|e| {
        let hint = if e == Errno::NOENT {
            " (is the kernel built with CONFIG_TUN, the tun module loaded?)"
        } else {
            permission_hint(&io::Error::from(e))
        };
        format!("open /dev/net/tun: {}{hint}", io::Error::from(e))
    })?;
    let mut r = ifreq(name)?;
    let mode = if tun { libc::IFF_TUN } else { libc::IFF_TAP };
    r.ifr_ifru.ifru_flags = (mode | libc::IFF_NO_PI) as libc::c_short;
    ioctl_ifreq(fd.as_raw_fd(), libc::TUNSETIFF as libc::c_ulong, &mut r).map_err(|e| {
        format!(
            "creating {kind} device '{name}': {e}{}",
            match e.raw_os_error() {
                Some(libc::EBUSY) => " (another program has it open)",
                Some(libc::EINVAL) => " (a device of another kind has that name)",
                _ => permission_hint(&e),
            }
        )
    })?;
    Ok((fd, ifreq_name(&r)))
}

/// Configures device `name` as `s` says, then brings it up.
pub fn configure(name: &str, s: &TapSetup) -> Result<(), String> {
    let sock = ctl_socket()?;
    let fd = sock.as_raw_fd();
    if let Some(e) = s.ether {
        let mut r = ifreq(name)?;
        // SAFETY: writing a plain-data union member of a zeroed ifreq.
        let sa = unsafe { &mut r.ifr_ifru.ifru_hwaddr };
        sa.sa_family = libc::ARPHRD_ETHER;
        for (d, b) in sa.sa_data.iter_mut().zip(e.0) {
            *d = b as libc::c_char;
        }
        ioctl_ifreq(fd, libc::SIOCSIFHWADDR, &mut r)
            .map_err(|err| format!("{name}: setting Ethernet address {e}: {err}"))?;
    }
    if let Some(mtu) = s.mtu {
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        ioctl_ifreq(fd, libc::SIOCSIFMTU, &mut r)
            .map_err(|err| format!("{name}: setting MTU {mtu}: {err}"))?;
    }
    if let Some(p) = s.dst {
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_addr = sockaddr_in(p.addr);
        ioctl_ifreq(fd, libc::SIOCSIFADDR, &mut r)
            .map_err(|err| format!("{name}: setting address {}: {err}", p.addr))?;
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_netmask = sockaddr_in(p.mask());
        ioctl_ifreq(fd, libc::SIOCSIFNETMASK, &mut r)
            .map_err(|err| format!("{name}: setting netmask {}: {err}", p.mask()))?;
    }
    let mut r = ifreq(name)?;
    ioctl_ifreq(fd, libc::SIOCGIFFLAGS, &mut r)
        .map_err(|err| format!("{name}: reading flags: {err}"))?;
    // SAFETY: SIOCGIFFLAGS just filled the flags member.
    let flags = unsafe { r.ifr_ifru.ifru_flags };
    r.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    ioctl_ifreq(fd, libc::SIOCSIFFLAGS, &mut r)
        .map_err(|err| format!("{name}: bringing it up: {err}"))?;
    if let Some(gw) = s.gateway {
        add_default_route(fd, name, gw)?;
    }
    Ok(())
}

/// Adds a default route through `gw` on device `name`.
fn add_default_route(sock: RawFd, name: &str, gw: Ipv4Addr) -> Result<(), String> {
    let mut dev = [0 as libc::c_char; libc::IFNAMSIZ];
    for (d, b) in dev.iter_mut().zip(name.bytes()) {
        *d = b as libc::c_char;
    }
    // SAFETY: rtentry is plain old data (addresses, integers and a
    // pointer); all-zero (a null device pointer) is a valid value.
    let mut rt: libc::rtentry = unsafe { std::mem::zeroed() };
    rt.rt_dst = sockaddr_in(Ipv4Addr::UNSPECIFIED);
    rt.rt_genmask = sockaddr_in(Ipv4Addr::UNSPECIFIED);
    rt.rt_gateway = sockaddr_in(gw);
    rt.rt_flags = libc::RTF_UP | libc::RTF_GATEWAY;
    rt.rt_dev = dev.as_mut_ptr();
    // SAFETY: `rt` is a valid rtentry whose device pointer names `dev`, a
    // NUL-terminated buffer that outlives the call; the kernel only reads.
    let rc = unsafe { libc::ioctl(sock, libc::SIOCADDRT as _, &mut rt as *mut libc::rtentry) };
    if rc == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(format!(
            "{name}: adding a default route through {gw}: {e}{}",
            if e.raw_os_error() == Some(libc::EEXIST) {
                " (there is one already)"
            } else {
                ""
            }
        ))
    }
}

/// Reads one frame into `buf` (a longer frame is cut to its length);
/// `Err(WouldBlock)` when the device has nothing for now.
pub fn read_frame(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match rustix::io::read(fd, &mut *buf) {
            Ok(n) => return Ok(n),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Writes one frame; the kernel receives it as arriving on the device.
pub fn write_frame(fd: &OwnedFd, frame: &[u8]) -> io::Result<()> {
    loop {
        match rustix::io::write(fd, frame) {
            Ok(n) if n == frame.len() => return Ok(()),
            Ok(_) => return Err(io::Error::new(io::ErrorKind::WriteZero, "short write")),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether a failed [`write_frame`] means the device takes no more for
/// now (its queue or the file's buffer is full: `EAGAIN`, `ENOBUFS`)
/// rather than refusing the frame for good: the writers' drop reason
/// `ring full`.
pub fn queue_full(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
        || matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS))
}

/// Writes each packet of `batch` to the device `fd` as one frame (Linux
/// keeps its own copy: ours is freed). A packet not written is dropped,
/// for `ring_full` when the device's queue is full ([`queue_full`]) and
/// for reason 0 otherwise (no device, a refusal). Returns how many were
/// written and how many dropped.
pub fn write_batch(
    cx: &mut paraclick_runtime::Cx<'_>,
    fd: Option<&OwnedFd>,
    batch: &mut paraclick_packet::Batch,
    ring_full: u8,
) -> (u64, u64) {
    let (mut sent, mut failed) = (0u64, 0u64);
    for p in batch.drain() {
        match fd.map(|fd| write_frame(fd, p.data())) {
            Some(Ok(())) => {
                sent += 1;
                drop(p);
            }
            Some(Err(e)) if queue_full(&e) => {
                failed += 1;
                cx.drop_packet_for(ring_full, p);
            }
            _ => {
                failed += 1;
                cx.drop_packet_for(0, p);
            }
        }
    }
    (sent, failed)
}

/// Whether the effective user is root (tests that create devices).
#[cfg(test)]
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// For tests that need root: true when root; otherwise, unless
/// `PARACLICK_NO_SKIP=1` (scripts/test.sh, CI) makes that a failure,
/// prints a loud SKIPPED message naming `test` straight to stderr (the
/// harness hides a passing test's eprintln!) and returns false.
#[cfg(test)]
pub fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    paraclick_runtime::testing::skip(&format!(
        "{test} needs root (it creates devices in a network namespace)"
    ));
    false
}

/// Moves the calling thread into a new network namespace of its own
/// (tests: devices they create never touch the host's namespace). Threads
/// it starts afterwards are in the new namespace too.
#[cfg(test)]
pub fn unshare_netns() {
    use rustix::thread::{unshare_unsafe, UnshareFlags};
    // SAFETY: only the network namespace is unshared, not the file
    // descriptor table (the flag that makes unshare unsafe): descriptors
    // stay valid in every thread.
    let r = unsafe { unshare_unsafe(UnshareFlags::NEWNET) };
    if let Err(e) = r {
        panic!("unshare(CLONE_NEWNET): {}", io::Error::from(e));
    }
}

/// Device `name`'s MTU (tests).
#[cfg(test)]
pub fn mtu(name: &str) -> io::Result<u32> {
    let sock = ctl_socket().map_err(io::Error::other)?;
    let mut r = ifreq(name).map_err(io::Error::other)?;
    ioctl_ifreq(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut r)?;
    // SAFETY: SIOCGIFMTU just filled the MTU member.
    Ok(unsafe { r.ifr_ifru.ifru_mtu } as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose queue is full is told so (`ring full`), and one
    /// refused for good is not: a non-blocking pipe stands for the device
    /// (it fills deterministically, a tun device does not).
    #[test]
    fn a_full_queue_is_told_from_a_refusal() {
        let (r, w) = std::io::pipe().unwrap();
        let w = OwnedFd::from(w);
        rustix::fs::fcntl_setfl(&w, OFlags::NONBLOCK).unwrap();
        let frame = [0u8; 1500];
        let mut sent = 0;
        let err = loop {
            match write_frame(&w, &frame) {
                Ok(()) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent < 100_000, "the pipe never filled");
        };
        assert!(sent > 0 && queue_full(&err), "{sent} frames, then {err}");
        drop(r);
        let err = write_frame(&w, &frame).unwrap_err();
        assert!(!queue_full(&err), "no reader: refused for good, {err}");
    }
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn sockaddr_in_is_network_order() {
        let sa = sockaddr_in(Ipv4Addr::new(10, 0, 1, 2));
        assert_eq!(sa.sa_family, libc::AF_INET as libc::sa_family_t);
        // Port (2 bytes), then the address in network order.
        let d: Vec<u8> = sa.sa_data.iter().map(|&c| c as u8).collect();
        assert_eq!(&d[..6], &[0, 0, 10, 0, 1, 2]);
    }

    #[test]
    fn names_are_checked() {
        assert_err(ifreq(""), "bad device name ''");
        assert_err(
            ifreq("sixteen-chars-xx"),
            "bad device name 'sixteen-chars-xx'",
        );
        let r = ifreq("tap%d").unwrap();
        assert_eq!(ifreq_name(&r), "tap%d");
    }
}
