//! # FromHost
//!
//! FromHost(DEVNAME [, DST, keywords GATEWAY, ETHER, HEADROOM, MTU, BURST])
//!
//! Interface to a Linux tap device: emits the frames Linux sends on it.
//!
//! Ports: no inputs, 1 output. Processing: push.
//!
//! At initialization FromHost creates the tap device DEVNAME through
//! `/dev/net/tun` (or attaches to an existing tap of that name; a name
//! holding `%d`, such as `tap%d`, lets the kernel number it), sets its
//! Ethernet address (ETHER) and MTU, gives the kernel's side of the
//! device the address and netmask DST (`10.0.1.1/24`: Linux then routes
//! that network through the device), adds a default route through
//! GATEWAY if given, and brings the device up. The device carries Ethernet
//! frames (a tap, without packet information headers). It is not
//! persistent: the kernel removes it when the router ends.
//!
//! FromHost owns a task that polls the device without blocking: each run
//! emits one batch of at most BURST frames, each read straight into a
//! pooled packet (with HEADROOM bytes in front), and reports no work when
//! Linux has sent nothing, so an idle worker can back off. Each packet
//! gets its link (MAC) header annotation and its packet type annotation
//! (`BROADCAST`, `MULTICAST` or `HOST`, from the destination address).
//!
//! ToHost(DEVNAME) writes packets into the same device, so that Linux
//! receives them as arriving on it. A router that gives Linux the packets
//! addressed to itself this way (its own addresses on the tap) lets
//! Linux's own services answer on the router's addresses.
//!
//! Linux sends ARP queries on the device before it sends IP packets to a
//! neighbour. Answer them, with any Ethernet address, and hand the replies
//! to ToHost; and send Linux IP packets with the device's Ethernet address
//! (ETHER) as destination, or Linux ignores them:
//!
//!     FromHost(fake0, 192.0.0.1/8, ETHER 02:00:00:00:00:02)
//!         -> fromhost_cl :: Classifier(12/0806 20/0001, 12/0800, -);
//!     fromhost_cl[0] -> ARPResponder(0.0.0.0/0 02:00:00:00:00:01) -> ToHost(fake0);
//!     fromhost_cl[1] -> ... // IP packets from Linux
//!     fromhost_cl[2] -> Discard;
//!     ... -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToHost(fake0);
//!
//! Arguments:
//! - `DEVNAME` (string): the tap device's name (at most 15 bytes).
//! - `DST` (IP prefix): the kernel's address and netmask on the device,
//!   such as `18.26.4.9/24`. Without it the device gets no address (it
//!   may be configured by other means).
//! - `GATEWAY` (IP address): add a default route through this address,
//!   which must be on DST's network.
//! - `ETHER` (Ethernet address): the device's Ethernet address; by
//!   default whatever the kernel chooses (random).
//! - `HEADROOM` (unsigned, default 128): bytes left free in front of
//!   each packet's data, for encapsulation.
//! - `MTU` (unsigned, default 1500): the device's MTU, without the
//!   Ethernet header (68 to 65521). Frames are read into pooled buffers
//!   while HEADROOM + MTU + 18 fits one (2048 bytes); beyond that each
//!   frame gets a buffer of its own.
//! - `BURST` (unsigned, default 32): most frames emitted per task run.
//!
//! Handlers:
//! - `dev_name` (read): the device's name (as the kernel numbered it).
//! - `count` (read): frames emitted.
//! - `drops` (read): frames read but not emitted (shorter than an
//!   Ethernet header).
//! - `reset_counts` (write): resets `count` and `drops`.
//!
//! Example:
//!
//!     FromHost(fake0, 192.0.0.1/8) -> ...;

// libc only for IFNAMSIZ (rustix does not export it).

use super::tap::{self, TapSetup};
use paraclick_packet::wire::{EtherAddr, Ipv4Prefix};
use paraclick_packet::{Batch, Packet, PacketType};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind};
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, OnceLock};

/// Ethernet header plus one VLAN tag: what a frame holds beyond the MTU.
const FRAME_EXTRA: usize = 18;
const MIN_MTU: u32 = 68;
const MAX_MTU: u32 = 65521;

/// The open tap device, shared by a FromHost and the ToHost elements of
/// the same DEVNAME. The descriptor closes (and the device disappears)
/// when the last of them is dropped.
#[derive(Default)]
pub struct HostTap {
    fd: OnceLock<OwnedFd>,
    name: OnceLock<String>,
}

impl HostTap {
    /// The device's descriptor, once FromHost has opened it.
    pub fn fd(&self) -> Option<&OwnedFd> {
        self.fd.get()
    }
}

pub struct FromHost {
    devname: String,
    setup: TapSetup,
    headroom: usize,
    frame_cap: usize,
    burst: usize,
    tap: Arc<HostTap>,
    /// A packet read into nothing yet (the last poll found no frame), so
    /// an idle device costs no buffer churn. Also the reader's lock.
    spare: Mutex<Option<Packet>>,
    counts: super::DevCounts,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["receive ring full"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("FromHost", "0/1", "h", make)
        .drop_reasons(DROP_REASONS)
        .shared("an input: one file or device for all flows")
        .kind(Kind::Device)
}

/// Whether `name` can name a Linux network device.
pub(super) fn valid_devname(name: &str) -> bool {
    !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && !name.contains(['/', ' ', '\0', ':'])
        && name != "."
        && name != ".."
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FromHost, String> {
    let mut a = cx.args();
    let devname = a.read_mp::<String>("DEVNAME");
    let dst = a.read_p::<Ipv4Prefix>("DST");
    let gateway = a.read::<Ipv4Addr>("GATEWAY");
    let ether = a.read::<EtherAddr>("ETHER");
    let headroom = a.read::<usize>("HEADROOM").unwrap_or(128);
    let mtu = a.read::<u32>("MTU").unwrap_or(1500);
    let burst = a.read::<usize>("BURST").unwrap_or(32);
    a.complete()?;
    if !valid_devname(&devname) {
        return Err(format!("DEVNAME: bad interface name '{devname}'"));
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
        if e.0[0] & 1 != 0 || e.0 == [0; 6] {
            return Err(format!(
                "ETHER: {e} is not a unicast address a device can have"
            ));
        }
    }
    if let Some(gw) = gateway {
        if gw.is_unspecified() {
            return Err("GATEWAY: 0.0.0.0 is no gateway".into());
        }
        if let Some(p) = dst {
            if !p.contains(gw) || p.len == 32 {
                return Err(format!("GATEWAY {gw} is not on DST's network {p}"));
            }
        }
    }
    if let Some(p) = dst {
        if p.len < 32 && (p.addr == p.network() || p.addr == broadcast(&p)) {
            return Err(format!(
                "DST {p}: give the device's own address in its network (such as {}/{})",
                Ipv4Addr::from(u32::from(p.network()) + 1),
                p.len
            ));
        }
    }
    Ok(FromHost {
        devname,
        setup: TapSetup {
            dst,
            gateway,
            ether,
            mtu: Some(mtu),
        },
        headroom,
        frame_cap: mtu as usize + FRAME_EXTRA,
        burst,
        tap: Arc::new(HostTap::default()),
        spare: Mutex::new(None),
        counts: super::DevCounts::new(cx.nthreads),
    })
}

fn broadcast(p: &Ipv4Prefix) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(p.addr) | !p.mask_u32())
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

impl FromHost {
    /// DEVNAME as configured (ToHost finds its FromHost by it).
    pub fn devname(&self) -> &str {
        &self.devname
    }

    /// The device this element opens, shared with ToHost.
    pub fn tap(&self) -> Arc<HostTap> {
        self.tap.clone()
    }

    /// A fresh packet the size of the largest frame.
    fn buffer(&self) -> Option<Packet> {
        Packet::make(self.headroom, self.frame_cap, 0)
    }
}

impl Element for FromHost {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("dev_name", |e, _| {
            e.tap
                .name
                .get()
                .cloned()
                .unwrap_or_else(|| e.devname.clone())
        }),
        Handler::read("count", |e, _| e.counts.count.get().to_string()),
        Handler::read("drops", |e, _| e.counts.drops.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.counts.reset();
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        for i in 0..ix.element_count() {
            if let Some(o) = ix.element::<FromHost>(i) {
                if o.devname == self.devname && !std::ptr::eq(o, self) {
                    return Err(format!(
                        "{} opens {} too: one FromHost per device",
                        ix.element_name(i),
                        self.devname
                    ));
                }
            }
        }
        // Its task, declared when checked too: see FromDevice.
        ix.add_task();
        if ix.checking() {
            return Ok(());
        }
        let (fd, name) = tap::open_tap(&self.devname)?;
        tap::configure(&name, &self.setup)?;
        let _ = self.tap.name.set(name);
        if self.tap.fd.set(fd).is_err() {
            return Err("initialized twice".into());
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let Some(fd) = self.tap.fd.get() else {
            return false;
        };
        // One reader at a time; a second runner finds nothing to do.
        let Ok(mut spare) = self.spare.try_lock() else {
            return false;
        };
        let mut batch = Batch::new();
        let mut drops = 0u64;
        while batch.len() < self.burst {
            let Some(mut p) = spare.take().or_else(|| self.buffer()) else {
                // No buffer: the frames wait in the device's queue.
                break;
            };
            match tap::read_frame(fd, p.data_mut()) {
                Ok(n) if n >= 14 => {
                    p.take(self.frame_cap - n);
                    p.set_mac_header(0);
                    let t = packet_type(&p.data()[..6]);
                    p.anno_mut().packet_type = t;
                    batch.push(p);
                }
                Ok(_) => {
                    drops += 1;
                    *spare = Some(p);
                }
                Err(_) => {
                    // WouldBlock: nothing more for now. Any other error
                    // (the device went down) ends this run too; the
                    // frame, if any, stays with the kernel.
                    *spare = Some(p);
                    break;
                }
            }
        }
        if drops > 0 {
            self.counts.drops.add(cx.thread(), drops);
            cx.count_drops_for(0, drops);
        }
        if batch.is_empty() {
            return drops > 0;
        }
        self.counts.count.add(cx.thread(), batch.len() as u64);
        // Pushed with the reader's lock held, so batches leave in order.
        cx.push(0, batch);
        drop(spare);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    fn element(conf: &str) -> Result<FromHost, String> {
        let mut env = paraclick_runtime::ArgEnv::default();
        let mut cx = ConfigCx {
            name: "fh",
            class: "FromHost",
            config: conf,
            ninputs: 0,
            noutputs: 1,
            input_kinds: &[],
            output_kinds: &[],
            nthreads: 1,
            env: &mut env,
        };
        make(&mut cx)
    }

    #[test]
    fn configuration_is_checked() {
        let e = element("fake0").unwrap();
        assert_eq!(e.devname(), "fake0");
        assert_eq!(e.setup.dst, None);
        assert_eq!(e.setup.mtu, Some(1500));
        assert_eq!((e.headroom, e.frame_cap, e.burst), (128, 1518, 32));

        let e = element(
            "tap%d, 10.0.1.1/24, GATEWAY 10.0.1.254, ETHER 02:00:00:00:01:02, \
             HEADROOM 28, MTU 1400, BURST 8",
        )
        .unwrap();
        let dst = e.setup.dst.unwrap();
        // The device's own address is kept, not the network's.
        assert_eq!((dst.addr, dst.len), (Ipv4Addr::new(10, 0, 1, 1), 24));
        assert_eq!(e.setup.gateway, Some(Ipv4Addr::new(10, 0, 1, 254)));
        assert_eq!(e.setup.ether, Some(EtherAddr([2, 0, 0, 0, 1, 2])));
        assert_eq!((e.headroom, e.frame_cap, e.burst), (28, 1418, 8));
        // DST as a keyword, dotted netmask.
        let e = element("fake0, DST 192.0.0.1/255.0.0.0").unwrap();
        assert_eq!(e.setup.dst.unwrap().len, 8);

        for (bad, want) in [
            ("", "missing mandatory DEVNAME argument"),
            ("fake0, 10.0.1.1/33", "DST: expected IP prefix, not '10.0.1.1/33'"),
            ("fake0, not-an-address", "DST: expected IP prefix, not 'not-an-address'"),
            ("fake0, 10.0.1.0/24", "DST 10.0.1.0/24: give the device's own address in its network (such as 10.0.1.1/24)"),
            ("fake0, 10.0.1.255/24", "DST 10.0.1.255/24: give the device's own address in its network (such as 10.0.1.1/24)"),
            ("fake0, 10.0.1.1/24, GATEWAY 10.0.2.1", "GATEWAY 10.0.2.1 is not on DST's network 10.0.1.1/24"),
            ("fake0, GATEWAY 0.0.0.0", "GATEWAY: 0.0.0.0 is no gateway"),
            ("fake0, ETHER 01:00:5e:00:00:01", "ETHER: 01-00-5E-00-00-01 is not a unicast address a device can have"),
            ("fake0, ETHER 00:00:00:00:00:00", "ETHER: 00-00-00-00-00-00 is not a unicast address a device can have"),
            ("fake0, MTU 67", "MTU must be between 68 and 65521"),
            ("fake0, MTU 70000", "MTU must be between 68 and 65521"),
            ("fake0, BURST 0", "BURST must be at least 1"),
            ("fake0, HEADROOM 100000", "HEADROOM must be at most 4096"),
            ("fake0, DST6 fe80::1/64", "unknown keyword DST6"),
            ("a/b", "DEVNAME: bad interface name 'a/b'"),
            ("averyveryverylongname", "DEVNAME: bad interface name 'averyveryverylongname'"),
            ("fake0, 10.0.1.1/24, extra", "too many arguments ('extra')"),
        ] {
            assert_err(element(bad), want);
        }
    }

    #[test]
    fn classes_are_registered_with_their_docs() {
        let r = crate::full_registry();
        for (class, synopsis) in [
            ("FromHost", "FromHost(DEVNAME ["),
            ("ToHost", "ToHost([DEVNAME])"),
        ] {
            let doc = r
                .doc(class)
                .unwrap_or_else(|| panic!("{class} not registered"));
            assert!(doc.starts_with(synopsis), "{class}: {doc}");
            assert!(
                doc.contains("Handlers:") && doc.contains("Example:"),
                "{class}"
            );
        }
    }

    #[test]
    fn packet_type_follows_the_destination() {
        assert_eq!(packet_type(&[0xff; 6]), PacketType::Broadcast);
        assert_eq!(
            packet_type(&[0x33, 0x33, 0, 0, 0, 1]),
            PacketType::Multicast
        );
        assert_eq!(packet_type(&[2, 0, 0, 0, 0, 1]), PacketType::Host);
    }
}
