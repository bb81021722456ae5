//! # KernelTun
//!
//! KernelTun(ADDR/MASK [, GATEWAY, keywords HEADROOM, ETHER, MTU, DEV_NAME, BURST, IGNORE_QUEUE_OVERFLOWS])
//!
//! Exchanges IP packets with the Linux stack through a tun device.
//!
//! Ports: at most 1 input, 1 or 2 outputs. Processing: agnostic input,
//! push outputs.
//!
//! At initialization KernelTun creates a tun device through
//! `/dev/net/tun` (named DEV_NAME, by default `tun%d`, which the kernel
//! numbers), sets its MTU, gives the kernel's side of the device the
//! address and netmask ADDR/MASK (Linux then routes that network through
//! the device), adds a default route through GATEWAY if given, and brings
//! the device up. The device carries bare IP packets (no link header, no
//! packet information header). It is not persistent: the kernel removes
//! it when the router ends. Without `/dev/net/tun`, or without the right
//! to create devices (root or CAP_NET_ADMIN), initialization fails and
//! says why.
//!
//! KernelTun owns a task that polls the device without blocking: each run
//! emits at most BURST packets that Linux sent on the device, each read
//! straight into a packet with HEADROOM bytes in front. Valid IPv4
//! packets (version 4, header length and total length consistent with
//! the bytes read; bytes beyond the total length are cut) leave on output
//! 0 with their IP header annotation set. Anything else (IPv6 or other
//! protocols, short or inconsistent packets) leaves on output 1, or is
//! dropped and counted when there is no output 1.
//!
//! Packets arriving on the input are written into the device, so that
//! Linux receives them as arriving on it; they must be IP packets (data
//! starting with the IP header). In push context each packet is written
//! as it arrives; in pull context the task pulls at most BURST packets
//! per run. A packet Linux refuses is dropped and counted, reason `write
//! failed`, or `ring full` when the device takes no more for now
//! (`EAGAIN`, `ENOBUFS`).
//!
//! Arguments:
//! - `ADDR/MASK` (IP prefix): the kernel's address and netmask on the
//!   device, such as `10.99.0.1/24`.
//! - `GATEWAY` (IP address): add a default route through this address,
//!   which must be on ADDR/MASK's network.
//! - `HEADROOM` (unsigned, default 28): bytes left free in front of each
//!   packet's data, for encapsulation.
//! - `ETHER` (Ethernet address): accepted for compatibility; a tun
//!   device has no Ethernet address (KernelTap uses it).
//! - `MTU` (unsigned, default 1500): the device's MTU (68 to 65521).
//! - `DEV_NAME` (string, default `tun%d`): the device's name (at most 15
//!   bytes; `%d` lets the kernel number it). `DEVNAME` is FastClick's
//!   spelling of it; give one or the other.
//! - `BURST` (unsigned, default 1, as in Click): most packets emitted
//!   (and, in pull context, pulled) per task run.
//! - `IGNORE_QUEUE_OVERFLOWS` (boolean): accepted for compatibility.
//!
//! Handlers:
//! - `dev_name` (read): the device's name (as the kernel numbered it).
//! - `count` (read): packets emitted on output 0.
//! - `drops` (read): packets read but not emitted (to a missing output
//!   1) plus packets Linux refused on the input.
//! - `sent` (read): packets written into the device.
//! - `reset_counts` (write): resets `count`, `drops` and `sent`.
//!
//! Example:
//!
//!     tun :: KernelTun(10.99.0.1/24);
//!     tun -> ICMPPingResponder -> tun;
//!
//! # KernelTap
//!
//! KernelTap(ADDR/MASK [, GATEWAY, keywords ETHER, MTU, HEADROOM, DEV_NAME, BURST, IGNORE_QUEUE_OVERFLOWS])
//!
//! Exchanges Ethernet frames with the Linux stack through a tap device.
//!
//! Ports: at most 1 input, 1 or 2 outputs. Processing: agnostic input,
//! push outputs.
//!
//! Like KernelTun, but the device (DEV_NAME, by default `tap%d`) is a tap:
//! it carries Ethernet frames, and ETHER sets its Ethernet address. Frames
//! Linux sends leave on output 0 with their link header annotation and
//! packet type annotation (`BROADCAST`, `MULTICAST` or `HOST`); frames
//! shorter than an Ethernet header leave on output 1, or are dropped and
//! counted. Frames arriving on the input are written into the device;
//! Linux ignores unicast frames whose destination is not the device's
//! ETHER address, so give one and use it. Linux sends ARP queries before
//! IP packets to a neighbour: answer them (ARPResponder).
//!
//! Arguments: as KernelTun's, with `ETHER` (Ethernet address, default
//! chosen by the kernel) the device's Ethernet address and `MTU` not
//! counting the Ethernet header.
//!
//! Handlers: as KernelTun's.
//!
//! Example:
//!
//!     tap :: KernelTap(10.98.0.1/24, ETHER 02:00:00:00:98:01);
//!     tap -> c :: Classifier(12/0806 20/0001, -);
//!     c[0] -> ARPResponder(10.98.0.2 02:00:00:00:98:02) -> tap;
//!     c[1] -> Discard;

use super::tap::{self, TapSetup};
use paraclick_packet::wire::{EtherAddr, Ipv4Prefix};
use paraclick_packet::{Batch, Packet, PacketType};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind, PerThreadCount};
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};

const MIN_MTU: u32 = 68;
const MAX_MTU: u32 = 65521;

pub struct KernelTun {
    /// A tun (IP packets) or a tap (Ethernet frames).
    tun: bool,
    devname: String,
    setup: TapSetup,
    headroom: usize,
    /// The longest packet read: MTU, plus an Ethernet header and a VLAN
    /// tag for a tap.
    frame_cap: usize,
    burst: usize,
    two_outputs: bool,
    pull: bool,
    fd: OnceLock<OwnedFd>,
    name: OnceLock<String>,
    /// A packet read into nothing yet; also the reader's lock.
    spare: Mutex<Option<Packet>>,
    counts: super::DevCounts,
    sent: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["write failed", "bad packet", "ring full"];
/// [`DROP_REASONS`]: the device took no more frames for now.
const RING_FULL: u8 = 2;

pub fn tun_spec() -> ClassSpec {
    ClassSpec::element("KernelTun", "0-1/1-2", "a/h", make_tun)
        .drop_reasons(DROP_REASONS)
        .shared("a device: one interface for all flows")
        .kind(Kind::Device)
}

pub fn tap_spec() -> ClassSpec {
    ClassSpec::element("KernelTap", "0-1/1-2", "a/h", make_tap)
        .drop_reasons(DROP_REASONS)
        .shared("a device: one interface for all flows")
        .kind(Kind::Device)
}

fn make_tun(cx: &mut ConfigCx<'_>) -> Result<KernelTun, String> {
    make(cx, true)
}

fn make_tap(cx: &mut ConfigCx<'_>) -> Result<KernelTun, String> {
    make(cx, false)
}

fn make(cx: &mut ConfigCx<'_>, tun: bool) -> Result<KernelTun, String> {
    let two_outputs = cx.noutputs > 1;
    let pull = cx.ninputs > 0 && cx.input_is_pull(0);
    let nthreads = cx.nthreads;
    let mut a = cx.args();
    let addr = a.read_mp::<Ipv4Prefix>("ADDR");
    let gateway = a.read_p::<Ipv4Addr>("GATEWAY");
    let headroom = a.read::<usize>("HEADROOM").unwrap_or(28);
    let ether = a.read::<EtherAddr>("ETHER");
    let mtu = a.read::<u32>("MTU").unwrap_or(1500);
    let dev_name = a.read::<String>("DEV_NAME");
    let devname_kw = a.read::<String>("DEVNAME");
    let burst = a.read::<usize>("BURST").unwrap_or(1);
    let _ = a.read::<bool>("IGNORE_QUEUE_OVERFLOWS");
    a.complete()?;
    let devname = match (dev_name, devname_kw) {
        (Some(_), Some(_)) => return Err("give DEV_NAME or DEVNAME, not both".into()),
        (d, e) => d.or(e),
    };
    let devname = devname.unwrap_or_else(|| if tun { "tun%d" } else { "tap%d" }.to_string());
    if !super::from_host::valid_devname(&devname) {
        return Err(format!("DEV_NAME: bad interface name '{devname}'"));
    }
    if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
        return Err(format!("MTU must be between {MIN_MTU} and {MAX_MTU}"));
    }
    if headroom > 4096 {
        return Err("HEADROOM must be at most 4096".into());
    }
    if burst == 0 {
        return Err("BURST must be at least 1".into());
    }
    if let Some(e) = ether {
        if !tun && (e.0[0] & 1 != 0 || e.0 == [0; 6]) {
            return Err(format!(
                "ETHER: {e} is not a unicast address a device can have"
            ));
        }
    }
    // Click's GATEWAY 0.0.0.0 means none.
    let gateway = gateway.filter(|g| !g.is_unspecified());
    if let Some(gw) = gateway {
        if !addr.contains(gw) || addr.len == 32 || gw == addr.addr {
            return Err(format!(
                "GATEWAY {gw} is not another host on ADDR/MASK's network {addr}"
            ));
        }
    }
    Ok(KernelTun {
        tun,
        devname,
        setup: TapSetup {
            dst: Some(addr),
            gateway,
            ether: if tun { None } else { ether },
            mtu: Some(mtu),
        },
        headroom,
        frame_cap: mtu as usize + if tun { 0 } else { 18 },
        burst,
        two_outputs,
        pull,
        fd: OnceLock::new(),
        name: OnceLock::new(),
        spare: Mutex::new(None),
        counts: super::DevCounts::new(nthreads),
        sent: PerThreadCount::new(nthreads),
    })
}

/// The IP header length of a valid IPv4 packet `d` and its total length
/// (at most `d.len()`), or None.
fn ipv4_lengths(d: &[u8]) -> Option<(usize, usize)> {
    if d.len() < 20 || d[0] >> 4 != 4 {
        return None;
    }
    let hlen = usize::from(d[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([d[2], d[3]]));
    if hlen < 20 || total < hlen || total > d.len() {
        return None;
    }
    Some((hlen, total))
}

fn packet_type(dst: &[u8]) -> PacketType {
    if dst == [0xff; 6] {
        PacketType::Broadcast
    } else if dst[0] & 1 != 0 {
        PacketType::Multicast
    } else {
        PacketType::Host
    }
}

impl KernelTun {
    /// Sorts one packet just read (`n` bytes) to output 0 (good) or 1.
    fn classify(&self, p: &mut Packet, n: usize) -> bool {
        p.take(self.frame_cap - n);
        if self.tun {
            match ipv4_lengths(p.data()) {
                Some((hlen, total)) => {
                    p.take(p.len() - total);
                    p.set_network_header(0, hlen);
                    true
                }
                None => false,
            }
        } else if n >= 14 {
            p.set_mac_header(0);
            let t = packet_type(&p.data()[..6]);
            p.anno_mut().packet_type = t;
            true
        } else {
            false
        }
    }

    /// Writes a batch into the device; whether anything was written.
    fn write(&self, cx: &mut Cx<'_>, mut batch: Batch) -> bool {
        let (sent, failed) = tap::write_batch(cx, self.fd.get(), &mut batch, RING_FULL);
        if sent > 0 {
            self.sent.add(cx.thread(), sent);
        }
        if failed > 0 {
            self.counts.drops.add(cx.thread(), failed);
        }
        sent > 0
    }

    /// Reads and emits at most BURST packets; whether any was read.
    fn read(&self, cx: &mut Cx<'_>) -> bool {
        let Some(fd) = self.fd.get() else {
            return false;
        };
        let Ok(mut spare) = self.spare.try_lock() else {
            return false;
        };
        let mut good = Batch::new();
        let mut bad = Batch::new();
        let mut n_read = 0;
        while n_read < self.burst {
            let Some(mut p) = spare
                .take()
                .or_else(|| Packet::make(self.headroom, self.frame_cap, 0))
            else {
                break;
            };
            match tap::read_frame(fd, p.data_mut()) {
                Ok(n) => {
                    n_read += 1;
                    if self.classify(&mut p, n) {
                        good.push(p);
                    } else {
                        bad.push(p);
                    }
                }
                Err(_) => {
                    // WouldBlock (nothing more for now) or the device
                    // went away: either way this run ends.
                    *spare = Some(p);
                    break;
                }
            }
        }
        if !good.is_empty() {
            self.counts.count.add(cx.thread(), good.len() as u64);
            cx.push(0, good);
        }
        if !bad.is_empty() {
            if self.two_outputs {
                cx.push(1, bad);
            } else {
                let n = bad.len() as u64;
                self.counts.drops.add(cx.thread(), n);
                for p in bad.drain() {
                    cx.drop_packet_for(1, p);
                }
            }
        }
        drop(spare);
        n_read > 0
    }
}

impl Element for KernelTun {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("dev_name", |e, _| {
            e.name.get().cloned().unwrap_or_else(|| e.devname.clone())
        }),
        Handler::read("count", |e, _| e.counts.count.get().to_string()),
        Handler::read("drops", |e, _| e.counts.drops.get().to_string()),
        Handler::read("sent", |e, _| e.sent.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.counts.reset();
            e.sent.reset();
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // Its task, declared when checked too: see FromDevice.
        ix.add_task();
        if ix.checking() {
            return Ok(());
        }
        let (fd, name) = tap::open_dev(&self.devname, self.tun)?;
        tap::configure(&name, &self.setup)?;
        let _ = self.name.set(name);
        if self.fd.set(fd).is_err() {
            return Err("initialized twice".into());
        }
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.write(cx, batch);
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let mut work = false;
        if self.pull {
            if let Some(b) = cx.pull(0, self.burst) {
                work |= self.write(cx, b);
            }
        }
        self.read(cx) || work
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    fn element(class: &str, conf: &str) -> Result<KernelTun, String> {
        let mut env = paraclick_runtime::ArgEnv::default();
        let mut cx = ConfigCx {
            name: "kt",
            class,
            config: conf,
            ninputs: 1,
            noutputs: 1,
            input_kinds: &[],
            output_kinds: &[],
            nthreads: 1,
            env: &mut env,
        };
        make(&mut cx, class == "KernelTun")
    }

    #[test]
    fn configuration_is_checked() {
        let e = element("KernelTun", "10.99.0.1/24").unwrap();
        assert_eq!(e.devname, "tun%d");
        assert_eq!(
            (e.headroom, e.frame_cap, e.burst, e.tun),
            (28, 1500, 1, true)
        );
        let e = element(
            "KernelTun",
            "10.99.0.1/255.255.255.0, 10.99.0.254, MTU 1400, DEV_NAME tun-x, BURST 8, \
             HEADROOM 64, ETHER 00:01:02:03:04:05, IGNORE_QUEUE_OVERFLOWS true",
        )
        .unwrap();
        assert_eq!(e.setup.gateway, Some(Ipv4Addr::new(10, 99, 0, 254)));
        assert_eq!(e.setup.ether, None);
        assert_eq!(
            (e.devname.as_str(), e.frame_cap, e.burst),
            ("tun-x", 1400, 8)
        );
        let e = element("KernelTap", "10.98.0.1/24, ETHER 02:00:00:00:98:01").unwrap();
        assert_eq!(e.devname, "tap%d");
        // FastClick's spelling DEVNAME; not both.
        let e2 = element("KernelTap", "10.100.0.1/24, DEVNAME vEth1").unwrap();
        assert_eq!(e2.devname, "vEth1");
        assert_err(
            element("KernelTap", "10.100.0.1/24, DEVNAME a, DEV_NAME b"),
            "give DEV_NAME or DEVNAME, not both",
        );
        assert_err(
            element("KernelTap", "10.100.0.1/24, DEVNAME a/b"),
            "DEV_NAME: bad interface name 'a/b'",
        );
        assert_eq!(e.frame_cap, 1518);
        assert_eq!(e.setup.ether, Some(EtherAddr([2, 0, 0, 0, 0x98, 1])));
        // GATEWAY 0.0.0.0: none.
        assert_eq!(
            element("KernelTun", "10.99.0.1/24, 0.0.0.0")
                .unwrap()
                .setup
                .gateway,
            None
        );
        for (bad, want) in [
            ("", "missing mandatory ADDR argument"),
            (
                "10.99.0.1/33",
                "ADDR: expected IP prefix, not '10.99.0.1/33'",
            ),
            ("nonsense", "ADDR: expected IP prefix, not 'nonsense'"),
            (
                "10.99.0.1/24, 10.98.0.1",
                "GATEWAY 10.98.0.1 is not another host on ADDR/MASK's network 10.99.0.1/24",
            ),
            (
                "10.99.0.1/24, 10.99.0.1",
                "GATEWAY 10.99.0.1 is not another host on ADDR/MASK's network 10.99.0.1/24",
            ),
            ("10.99.0.1/24, MTU 67", "MTU must be between 68 and 65521"),
            (
                "10.99.0.1/24, MTU 70000",
                "MTU must be between 68 and 65521",
            ),
            ("10.99.0.1/24, BURST 0", "BURST must be at least 1"),
            (
                "10.99.0.1/24, HEADROOM 100000",
                "HEADROOM must be at most 4096",
            ),
            (
                "10.99.0.1/24, DEV_NAME a/b",
                "DEV_NAME: bad interface name 'a/b'",
            ),
            (
                "10.99.0.1/24, DEV_NAME averyveryverylongname",
                "DEV_NAME: bad interface name 'averyveryverylongname'",
            ),
            ("10.99.0.1/24, FOO 1", "unknown keyword FOO"),
        ] {
            assert_err(element("KernelTun", bad), want);
        }
        assert_err(
            element("KernelTap", "10.98.0.1/24, ETHER 01:00:5e:00:00:01"),
            "ETHER: 01-00-5E-00-00-01 is not a unicast address a device can have",
        );
    }

    #[test]
    fn only_consistent_ipv4_packets_are_good() {
        let mut ip = vec![0u8; 28];
        ip[0] = 0x45;
        ip[3] = 28;
        assert_eq!(ipv4_lengths(&ip), Some((20, 28)));
        let mut longer = ip.clone();
        longer.extend([0; 4]);
        assert_eq!(ipv4_lengths(&longer), Some((20, 28)));
        let mut v6 = ip.clone();
        v6[0] = 0x60;
        assert_eq!(ipv4_lengths(&v6), None);
        let mut short_hl = ip.clone();
        short_hl[0] = 0x44;
        assert_eq!(ipv4_lengths(&short_hl), None);
        let mut too_long = ip.clone();
        too_long[3] = 40;
        assert_eq!(ipv4_lengths(&too_long), None);
        assert_eq!(ipv4_lengths(&ip[..19]), None);
    }

    #[test]
    fn classes_are_registered_with_their_docs() {
        let r = crate::full_registry();
        for (class, synopsis) in [
            ("KernelTun", "KernelTun(ADDR/MASK ["),
            ("KernelTap", "KernelTap(ADDR/MASK ["),
        ] {
            let doc = r
                .doc(class)
                .unwrap_or_else(|| panic!("{class} not registered"));
            assert!(doc.starts_with(synopsis), "{class}: {doc}");
            assert!(doc.contains("Handlers:") && doc.contains("Example:"));
        }
    }
}
