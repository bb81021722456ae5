//! # UDPIPEncap
//!
//! UDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM])
//!
//! Encapsulates packets in static UDP/IP headers.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends to each packet an 8-byte UDP header (source port SPORT,
//! destination port DPORT, length covering the packet) and a 20-byte IP
//! header (protocol UDP, source SRC, destination DST, TTL 250, TOS 0, a
//! fresh identification, correct checksum). The UDP checksum (over the
//! pseudo-header, header and payload) is computed if CHECKSUM is true (the
//! default); otherwise it is 0 (none). Marks the IP header as the network
//! header (the UDP header is the transport header) and sets the destination
//! IP annotation to DST. If DST is `DST_ANNO`, each packet's destination is
//! its destination IP annotation. Headers go into the packet's headroom (a
//! packet without enough is copied into a larger buffer); a packet that
//! would exceed 65535 bytes is dropped, counted.
//!
//! SPORT and DPORT are port numbers or names: a name a PortInfo element
//! defines for UDP (the innermost compound's definition wins), else a
//! well-known service name (`domain`, `ssh`, `ntp`, ...: the fixed table
//! IPClassifier lists).
//!
//! Identifications are numbered per thread as for IPEncap.
//!
//! Handlers:
//! - `src`, `dst` (read/write): the addresses (`dst` may be `DST_ANNO`).
//! - `sport`, `dport` (read/write): the ports.
//!
//! Example:
//!
//!     InfiniteSource(LENGTH 22, LIMIT 10) -> UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 5678)
//!         -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> ...

use super::encap::{write_ip_header, Addr, Dst, DstArg, IpIds};
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

pub struct UDPIPEncap {
    src: Addr,
    dst: Dst,
    sport: AtomicU16,
    dport: AtomicU16,
    checksum: bool,
    ids: IpIds,
    /// DynamicUDPIPEncap: both ports advance by 1 every `interval`
    /// packets (0: never), counted in `sent`.
    interval: u64,
    sent: AtomicU64,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("UDPIPEncap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .shared("one IP ID sequence for all packets")
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<UDPIPEncap, String> {
    make_encap(cx, false)
}

/// UDPIPEncap, or DynamicUDPIPEncap (`dynamic`: an INTERVAL argument).
pub(super) fn make_encap(cx: &mut ConfigCx<'_>, dynamic: bool) -> Result<UDPIPEncap, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv4Addr>("SRC");
    let sport = a.read_mp::<String>("SPORT");
    let dst = Dst::new(a.read_mp::<DstArg>("DST"));
    let dport = a.read_mp::<String>("DPORT");
    let checksum = a.read_p::<bool>("CHECKSUM").unwrap_or(true);
    let interval = if dynamic {
        a.read_p::<u64>("INTERVAL").unwrap_or(0)
    } else {
        0
    };
    a.complete()?;
    let port = |what: &str, v: &str| {
        crate::util::port_arg(v, "udp", cx.name, cx.env).map_err(|e| format!("{what}: {e}"))
    };
    let (sport, dport) = (port("SPORT", &sport)?, port("DPORT", &dport)?);
    Ok(UDPIPEncap {
        src: Addr::new(src),
        dst,
        sport: AtomicU16::new(sport),
        dport: AtomicU16::new(dport),
        checksum,
        ids: IpIds::new(cx.nthreads),
        interval,
        sent: AtomicU64::new(0),
    })
}

impl Action for UDPIPEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| e.src.get().to_string(),
            |e, v, hx| {
                e.src.set(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "sport",
            |e, _| e.sport.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.sport.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| e.dst.text(),
            |e, v, hx| {
                e.dst.set(hx.arg(v)?);
                Ok(())
            },
        ),
        Handler::rw(
            "dport",
            |e, _| e.dport.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.dport.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let total = p.len() + 28;
        if total > 65535 || p.push(28).is_err() {
            return Verdict::DropFor(0);
        }
        let id = self.ids.next(cx);
        let src = self.src.get();
        let dst = self.dst.get(p.anno().dst_ip);
        let ulen = (total - 20) as u16;
        let d = p.data_mut();
        let (iph, rest) = d.split_at_mut(20);
        let Ok(iph) = <&mut [u8; 20]>::try_from(iph) else {
            return Verdict::DropFor(0);
        };
        write_ip_header(iph, 0, total as u16, id, false, 250, 17, src, dst);
        let step = match self.interval {
            0 => 0,
            i => (self.sent.fetch_add(1, Ordering::Relaxed) / i) as u16,
        };
        let sport = self.sport.load(Ordering::Relaxed).wrapping_add(step);
        let dport = self.dport.load(Ordering::Relaxed).wrapping_add(step);
        rest[0..2].copy_from_slice(&sport.to_be_bytes());
        rest[2..4].copy_from_slice(&dport.to_be_bytes());
        rest[4..6].copy_from_slice(&ulen.to_be_bytes());
        rest[6..8].copy_from_slice(&[0, 0]);
        if self.checksum {
            let s = checksum::add(
                checksum::pseudo_header_sum(src, dst, 17, ulen),
                checksum::sum(rest),
            );
            let c = match !s {
                0 => 0xffff,
                c => c,
            };
            rest[6..8].copy_from_slice(&c.to_be_bytes());
        }
        p.set_network_header(0, 20);
        p.anno_mut().dst_ip = dst;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{harness, header, ip, try_harness};
    use paraclick_packet::wire::UdpHeader;
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;

    fn udp(p: &Packet) -> UdpHeader<&[u8]> {
        UdpHeader::new_checked(p.transport_header().unwrap()).unwrap()
    }

    #[test]
    fn prepends_valid_headers() {
        let h = harness("UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 5678)", 1);
        let payload: Vec<u8> = (0..33).collect();
        h.push(0, vec![Packet::from_slice(&payload).unwrap()]);
        let out = h.output(0);
        let q = &out[0];
        assert_eq!(q.len(), 28 + 33);
        let hd = header(q);
        assert!(hd.verify_checksum());
        assert_eq!(hd.protocol(), 17);
        assert_eq!(hd.ttl(), 250);
        assert_eq!(hd.total_len(), 61);
        assert_eq!(hd.src_addr(), ip("1.0.0.1"));
        assert_eq!(hd.dst_addr(), ip("2.0.0.2"));
        let u = udp(q);
        assert_eq!(u.src_port(), 1234);
        assert_eq!(u.dst_port(), 5678);
        assert_eq!(u.len(), 41);
        assert_ne!(u.checksum(), 0);
        assert!(u.verify_checksum(ip("1.0.0.1"), ip("2.0.0.2")));
        assert!(!u.verify_checksum(ip("1.0.0.1"), ip("2.0.0.3")));
        assert_eq!(u.payload(), &payload[..]);
        assert_eq!(q.anno().dst_ip, ip("2.0.0.2"));
    }

    #[test]
    fn checksum_off_and_dst_anno() {
        let h = harness("UDPIPEncap(1.0.0.1, 1, DST_ANNO, 2, false)", 1);
        let mut p = Packet::from_slice(&[9; 10]).unwrap();
        p.anno_mut().dst_ip = ip("7.7.7.7");
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(udp(&out[0]).checksum(), 0);
        assert_eq!(header(&out[0]).dst_addr(), ip("7.7.7.7"));
        assert!(header(&out[0]).verify_checksum());
    }

    #[test]
    fn handlers_and_ids() {
        let h = harness("UDPIPEncap(1.0.0.1, 1, 2.0.0.2, 2, CHECKSUM true)", 1);
        h.write("sport", "53").unwrap();
        h.write("dport", "5353").unwrap();
        h.write("dst", "3.0.0.3").unwrap();
        h.write("src", "4.0.0.4").unwrap();
        assert_err(h.write("sport", "70000"), "e.sport: 70000 out of range");
        assert_eq!(h.read("sport").unwrap(), "53");
        assert_eq!(h.read("dst").unwrap(), "3.0.0.3");
        h.push(
            0,
            vec![
                Packet::make(0, 0, 0).unwrap(),
                Packet::from_slice(&[1]).unwrap(),
            ],
        );
        let out = h.output(0);
        let u = udp(&out[0]);
        assert_eq!((u.src_port(), u.dst_port(), u.len()), (53, 5353, 8));
        assert!(u.verify_checksum(ip("4.0.0.4"), ip("3.0.0.3")));
        assert_eq!(header(&out[0]).ident() + 1, header(&out[1]).ident());
        assert!(udp(&out[1]).verify_checksum(ip("4.0.0.4"), ip("3.0.0.3")));
    }

    #[test]
    fn bad_arguments() {
        for (conf, want) in [
            (
                "UDPIPEncap(1.0.0.1, 1234, 2.0.0.2)",
                "e :: UDPIPEncap: missing mandatory DPORT argument",
            ),
            (
                "UDPIPEncap(1.0.0.1, 70000, 2.0.0.2, 1)",
                "e :: UDPIPEncap: SPORT: 70000 out of range",
            ),
            (
                "UDPIPEncap(1.0.0.1, 1, 2.0.0.2, 1, maybe)",
                "e :: UDPIPEncap: CHECKSUM: expected boolean (true or false)",
            ),
            (
                "UDPIPEncap(1.0.0.x, 1, 2.0.0.2, 1)",
                "e :: UDPIPEncap: SRC: expected IP address, not '1.0.0.x'",
            ),
            (
                "UDPIPEncap(1.0.0.1, nosuchservice, 2.0.0.2, 1)",
                "e :: UDPIPEncap: SPORT: expected port number or name, not 'nosuchservice'",
            ),
        ] {
            assert_err(try_harness(conf, 1), want);
        }
    }

    /// The ports of `e`'s `sport` and `dport` handlers in `conf`.
    fn ports(conf: &str, e: &str) -> (String, String) {
        let r = paraclick_runtime::testing::build(&crate::test_kit::reg(), conf);
        let h = |x: &str| paraclick_runtime::testing::handler(&r, &format!("{e}.{x}"));
        (h("sport"), h("dport"))
    }

    #[test]
    fn port_names_from_port_info_and_well_known_services() {
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        // Well-known names, with no PortInfo.
        assert_eq!(
            ports(
                "Idle -> e :: UDPIPEncap(1.0.0.1, domain, 1.0.0.2, ssh) -> Discard",
                "e"
            ),
            p("53", "22")
        );
        // PortInfo names (after the element that uses them, in any order;
        // a UDP name, or one for both protocols), over the well-known ones.
        assert_eq!(
            ports(
                "Idle -> e :: UDPIPEncap(1.0.0.1, foo, 1.0.0.2, ssh) -> Discard; \
                 PortInfo(foo 79/udp, ssh 2222, bar 5/tcp)",
                "e"
            ),
            p("79", "2222")
        );
        // A TCP-only name is not a UDP port.
        assert_err(
            try_harness(
                "UDPIPEncap(1.0.0.1, bar, 1.0.0.2, 1); PortInfo(bar 5/tcp)",
                1,
            ),
            "SPORT: expected port number or name, not 'bar'",
        );
        // A compound's PortInfo holds inside it only.
        let conf = "PortInfo(foo 79); \
             Idle -> e :: UDPIPEncap(1.0.0.1, foo, 1.0.0.2, 1) -> Discard; \
             Idle -> c :: { input -> e :: UDPIPEncap(1.0.0.1, foo, 1.0.0.2, 1) -> output; \
                            PortInfo(foo 80) } -> Discard;";
        assert_eq!(ports(conf, "e").0, "79");
        assert_eq!(ports(conf, "c/e").0, "80");
    }
}
