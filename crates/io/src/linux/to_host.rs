//! # ToHost
//!
//! ToHost([DEVNAME])
//!
//! Hands packets to the Linux stack through FromHost's tap device.
//!
//! Ports: 1 input, no outputs. Processing: push.
//!
//! Writes each packet it receives into the tap device DEVNAME, which the
//! FromHost element with the same DEVNAME creates; Linux receives it as a
//! frame arriving on that device. ToHost expects Ethernet frames: their
//! destination must be the device's Ethernet address (FromHost's ETHER),
//! or broadcast, or Linux ignores them. Give Linux the IP packets
//! addressed to the addresses it holds on the device (including
//! broadcasts), and the ARP replies it needs; IPv4 packets need a source
//! Linux can route back, or Linux silently drops them.
//!
//! There must be a FromHost with the same DEVNAME in the configuration
//! (ToHost reports an error otherwise). Without DEVNAME, ToHost uses the
//! configuration's only FromHost.
//!
//! Writing never blocks. A packet Linux refuses (a frame longer than the
//! device's MTU allows or shorter than an Ethernet header, the device
//! down, no memory) is dropped and counted, reason `kernel refused`; one
//! written while the device takes no more for now (`EAGAIN`, `ENOBUFS`)
//! is dropped for reason `ring full`.
//!
//! Handlers:
//! - `count` (read): packets handed to Linux.
//! - `drops` (read): packets Linux refused (dropped).
//! - `reset_counts` (write): resets both.
//!
//! Example:
//!
//!     FromHost(fake0, 192.0.0.1/8, ETHER 02:00:00:00:00:02) -> ...;
//!     ... -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02)
//!         -> ToHost(fake0);

use super::from_host::{valid_devname, FromHost, HostTap};
use super::tap;
use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind};
use std::sync::{Arc, OnceLock};

pub struct ToHost {
    devname: Option<String>,
    tap: OnceLock<Arc<HostTap>>,
    counts: super::DevCounts,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["kernel refused", "ring full"];
/// [`DROP_REASONS`]: the device took no more frames for now.
const RING_FULL: u8 = 1;

pub fn spec() -> ClassSpec {
    ClassSpec::element("ToHost", "1/0", "h", make)
        .drop_reasons(DROP_REASONS)
        .shared("an output: one file or device for all flows")
        .kind(Kind::Device)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ToHost, String> {
    let mut a = cx.args();
    let devname = a.read_p::<String>("DEVNAME");
    a.complete()?;
    if let Some(d) = &devname {
        if !valid_devname(d) {
            return Err(format!("DEVNAME: bad interface name '{d}'"));
        }
    }
    Ok(ToHost {
        devname,
        tap: OnceLock::new(),
        counts: super::DevCounts::new(cx.nthreads),
    })
}

impl Element for ToHost {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.counts.count.get().to_string()),
        Handler::read("drops", |e, _| e.counts.drops.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.counts.reset();
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let mut found: Vec<(usize, &FromHost)> = Vec::new();
        for i in 0..ix.element_count() {
            if let Some(fh) = ix.element::<FromHost>(i) {
                found.push((i, fh));
            }
        }
        let fh = match &self.devname {
            Some(d) => match found.iter().find(|(_, fh)| fh.devname() == d) {
                Some((_, fh)) => *fh,
                None => {
                    return Err(format!(
                        "no FromHost({d}, ...) in the configuration: ToHost writes into \
                         the tap device that FromHost with the same DEVNAME creates"
                    ))
                }
            },
            None => match found.as_slice() {
                [(_, fh)] => *fh,
                [] => {
                    return Err("no FromHost in the configuration: ToHost writes into the \
                                tap device that FromHost creates"
                        .into())
                }
                _ => {
                    return Err(format!(
                        "{} FromHost elements: say which device, ToHost(DEVNAME)",
                        found.len()
                    ))
                }
            },
        };
        let _ = self.tap.set(fh.tap());
        Ok(())
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        let fd = self.tap.get().and_then(|t| t.fd());
        let (sent, failed) = tap::write_batch(cx, fd, &mut batch, RING_FULL);
        if sent > 0 {
            self.counts.count.add(cx.thread(), sent);
        }
        if failed > 0 {
            self.counts.drops.add(cx.thread(), failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tap::{mtu, root_or_skip, unshare_netns};
    use super::*;
    use crate::test_util::{full_registry, try_build, TestSink};
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;
    use std::time::{Duration, Instant};

    #[test]
    fn configuration_is_checked() {
        // Beside a FromHost of the same device, so that each error is the
        // argument's own (without one, every build fails anyway). The
        // arguments fail when configured, before FromHost opens anything.
        for (bad, why) in [
            ("a/b", "DEVNAME: bad interface name 'a/b'"),
            (
                "averyveryverylongname",
                "DEVNAME: bad interface name 'averyveryverylongname'",
            ),
            ("tap0, tap1", "too many arguments ('tap1')"),
            ("tap0, MODE x", "unknown keyword MODE"),
        ] {
            let dev = bad.split(',').next().unwrap();
            let e = try_build(
                &full_registry(),
                &format!("FromHost({dev}, 10.9.0.1/24) -> Discard; TestSource -> ToHost({bad})"),
            )
            .err()
            .unwrap_or_else(|| panic!("{bad}: no error"));
            assert!(e.contains(&format!("ToHost: {why}")), "{bad}: {e}");
        }
    }

    #[test]
    fn tohost_without_its_fromhost_is_a_configuration_error() {
        // No FromHost at all: nothing is opened, so no privilege is needed.
        let e = try_build(&full_registry(), "TestSource -> ToHost(tap9)")
            .err()
            .expect("an error");
        assert!(e.contains("no FromHost(tap9, ...)"), "{e}");
        let e = try_build(&full_registry(), "TestSource -> ToHost")
            .err()
            .expect("an error");
        assert!(e.contains("no FromHost in the configuration"), "{e}");
    }

    /// An ARP request from 10.9.0.2 (02:00:00:00:09:02) for `target`.
    fn arp_request(target: [u8; 4]) -> Packet {
        let mut f = vec![0xffu8; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 9, 2, 0x08, 0x06]);
        f.extend_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&[2, 0, 0, 0, 9, 2, 10, 9, 0, 2]);
        f.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&target);
        Packet::from_slice(&f).unwrap()
    }

    /// Real devices: FromHost creates a tap with its address, Ethernet
    /// address, MTU and default route; an ARP request written through ToHost gets Linux's
    /// reply, read back through FromHost; a runt frame is a counted drop;
    /// the device disappears with the router. Runs in a network namespace
    /// of its own. Needs root: skipped loudly otherwise (a failure with
    /// PARACLICK_NO_SKIP=1, as in CI).
    #[test]
    fn linux_answers_through_the_tap_and_the_device_goes_with_the_router() {
        if !root_or_skip("ToHost/FromHost tap test") {
            return;
        }
        std::thread::spawn(|| {
            unshare_netns();
            let name = "pctap0";
            let conf = format!(
                "fh :: FromHost({name}, 10.9.0.1/24, ETHER 02:00:00:00:09:01, MTU 1400,
                                GATEWAY 10.9.0.254)
                   -> c :: Classifier(12/0806 20/0002, -);
                 c[0] -> o :: TestSink;
                 c[1] -> Discard;
                 TestSource -> th :: ToHost;"
            );
            let r = try_build(&full_registry(), &conf).expect("router with a tap");
            assert_eq!(r.read_handler("fh.dev_name").unwrap(), name);
            assert_eq!(mtu(name).unwrap(), 1400);
            // The default route through GATEWAY (this thread's namespace:
            // destination 0, gateway 10.9.0.254 in the kernel's byte order).
            let routes = std::fs::read_to_string("/proc/thread-self/net/route").unwrap();
            let gw = format!("{:08X}", u32::from_ne_bytes([10, 9, 0, 254]));
            assert!(
                routes.lines().any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 2 && f[0] == name && f[1] == "00000000" && f[2] == gw
                }),
                "no default route via 10.9.0.254 on {name}:\n{routes}"
            );

            let runt = Packet::from_slice(&[1, 2, 3, 4, 5, 6]).unwrap();
            r.push_into("th", 0, Batch::from(vec![arp_request([10, 9, 0, 1]), runt]))
                .unwrap();
            assert_eq!(r.read_handler("th.count").unwrap(), "1");
            assert_eq!(r.read_handler("th.drops").unwrap(), "1");

            let got = std::thread::scope(|s| {
                s.spawn(|| r.run());
                let start = Instant::now();
                let sink = r.element::<TestSink>("o").unwrap();
                let mut got = Vec::new();
                while got.is_empty() && start.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(10));
                    got = sink.take();
                }
                r.stop();
                got
            });
            assert_eq!(got.len(), 1, "one ARP reply from Linux");
            let d = got[0].data();
            // To the requester, from the tap's own address.
            assert_eq!(&d[..12], &[2, 0, 0, 0, 9, 2, 2, 0, 0, 0, 9, 1]);
            assert_eq!(&d[12..14], &[0x08, 0x06]);
            assert_eq!(&d[20..22], &[0, 2], "an ARP reply");
            assert_eq!(&d[22..32], &[2, 0, 0, 0, 9, 1, 10, 9, 0, 1]);
            assert_eq!(&d[32..42], &[2, 0, 0, 0, 9, 2, 10, 9, 0, 2]);
            assert_eq!(got[0].mac_header_offset(), Some(0));
            let count: u64 = r.read_handler("fh.count").unwrap().parse().unwrap();
            assert!(count >= 1);
            drop(got);
            drop(r);
            // The tap was not persistent: it went with the router.
            assert_err(mtu(name), "No such device");

            // A FromHost for another device does not do.
            let e = try_build(
                &full_registry(),
                &format!("FromHost({name}) -> Discard; TestSource -> ToHost(other0);"),
            )
            .err()
            .expect("an error");
            assert!(e.contains("no FromHost(other0, ...)"), "{e}");
            // Nor two FromHost elements for one device.
            let e = try_build(
                &full_registry(),
                &format!("FromHost({name}) -> Discard; FromHost({name}) -> Discard;"),
            )
            .err()
            .expect("an error");
            assert!(e.contains("one FromHost per device"), "{e}");
        })
        .join()
        .unwrap();
    }
}
