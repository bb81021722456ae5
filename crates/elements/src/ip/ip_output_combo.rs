//! # IPOutputCombo
//!
//! IPOutputCombo(COLOR, IPADDR, MTU)
//!
//! Output combo for IP routing.
//!
//! Ports: 1 input, 5 outputs. Processing: push.
//!
//! One element doing the common work of an IP router's output path, the
//! same as
//!
//!     elementclass IPOutputCombo { $COLOR, $IPADDR, $MTU |
//!       input[0] -> DropBroadcasts
//!             -> p :: PaintTee($COLOR)
//!             -> g :: IPGWOptions($IPADDR)
//!             -> FixIPSrc($IPADDR)
//!             -> d :: DecIPTTL
//!             -> l :: CheckLength($MTU)
//!             -> [0]output;
//!       p[1] -> [1]output;
//!       g[1] -> [2]output;
//!       d[1] -> [3]output;
//!       l[1] -> [4]output;
//!     }
//!
//! Input packets need an IP header annotation (CheckIPHeader or
//! MarkIPHeader upstream). Link-level broadcasts and multicasts (the
//! packet type annotation) are dropped. A packet painted COLOR (it would
//! leave by the interface it came in on) is copied to output 1, for an
//! ICMP redirect. The Record Route and Timestamp options are processed
//! with IPADDR as this router's address; a bad option sends the packet to
//! output 2 with its ICMP parameter problem annotation set. A packet whose
//! FIX_IP_SRC annotation is set gets IPADDR as its source. The TTL is
//! decremented; a packet whose TTL would expire goes to output 3. A packet
//! longer than MTU bytes goes to output 4; the others leave on output 0.
//!
//! IPOutputCombo does not fragment (as Click's): connect output 4 to an
//! IPFragmenter that feeds the same next stage as output 0.
//!
//! Arguments:
//! - `COLOR` (integer 0..255): the paint of packets that arrived on this
//!   interface.
//! - `IPADDR` (IP address): this interface's address.
//! - `MTU` (unsigned integer): the largest packet, in bytes, for output 0.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     rt[1] -> oc :: IPOutputCombo(2, 18.26.4.24, 1500);
//!     oc[0] -> q :: Queue -> ToDevice(eth1);
//!     oc[1] -> ICMPError(18.26.4.24, redirect, host) -> rt;
//!     oc[2] -> ICMPError(18.26.4.24, parameterproblem) -> rt;
//!     oc[3] -> ICMPError(18.26.4.24, timeexceeded) -> rt;
//!     oc[4] -> fr :: IPFragmenter(1500) -> q;
//!     fr[1] -> ICMPError(18.26.4.24, unreachable, needfrag) -> rt;

use super::dec_ip_ttl::{self, DecIPTTL};
use super::drop_broadcasts::{self, DropBroadcasts};
use super::fix_ip_src::{self, FixIPSrc};
use super::ip_gw_options::{self, IPGWOptions};
use super::ip_input_combo::configure_part;
use crate::standard::check_length::{self, CheckLength};
use crate::standard::paint_tee::{self, PaintTee};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

pub struct IPOutputCombo {
    drop_broadcasts: DropBroadcasts,
    paint_tee: PaintTee,
    gw_options: IPGWOptions,
    fix_src: FixIPSrc,
    dec_ttl: DecIPTTL,
    check_length: CheckLength,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPOutputCombo", "1/5", "h/h", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPOutputCombo, String> {
    let mut a = cx.args();
    let color = a.read_mp::<u8>("COLOR");
    let addr = a.read_mp::<Ipv4Addr>("IPADDR");
    let mtu = a.read_mp::<u32>("MTU");
    a.complete()?;
    let (color, addr, mtu) = (color.to_string(), addr.to_string(), mtu.to_string());
    Ok(IPOutputCombo {
        // One output each: broadcasts are dropped, PaintTee's copies go to
        // the combo's own output 1.
        drop_broadcasts: configure_part(cx, "DropBroadcasts", "", 1, drop_broadcasts::make)?,
        paint_tee: configure_part(cx, "PaintTee", &color, 2, paint_tee::make)?,
        gw_options: configure_part(cx, "IPGWOptions", &addr, 2, ip_gw_options::make)?,
        fix_src: configure_part(cx, "FixIPSrc", &addr, 1, fix_ip_src::make)?,
        dec_ttl: configure_part(cx, "DecIPTTL", "", 2, dec_ip_ttl::make)?,
        check_length: configure_part(cx, "CheckLength", &mtu, 2, check_length::make)?,
    })
}

/// Continues with the next part if `v` is output 0; output 1 (a part's
/// error output) becomes the combo's output `err`.
macro_rules! step {
    ($v:expr, $err:expr) => {
        match $v {
            Verdict::Out(0) => {}
            Verdict::Out(_) => return Verdict::Out($err),
            v => return v,
        }
    };
}

impl Action for IPOutputCombo {
    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        step!(self.drop_broadcasts.action(cx, p), 0);
        // PaintTee pushes its copy to output 1 itself.
        step!(self.paint_tee.action(cx, p), 1);
        step!(self.gw_options.action(cx, p), 2);
        step!(self.fix_src.action(cx, p), 0);
        step!(self.dec_ttl.action(cx, p), 3);
        match self.check_length.action(cx, p) {
            Verdict::Out(0) => Verdict::Out(0),
            Verdict::Out(_) => Verdict::Out(4),
            v => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::{Packet, PacketType};

    fn marked_ip(d: &[u8]) -> Packet {
        let mut p = pkt(d);
        let hl = usize::from(d[0] & 0xf) * 4;
        p.set_network_header(0, hl);
        p
    }

    fn outputs(h: &Harness) -> Vec<usize> {
        (0..5).map(|i| h.output(i).len()).collect()
    }

    #[test]
    fn each_output() {
        let h = harness("IPOutputCombo(2, 18.26.4.24, 100)", 5);
        let ok = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .ttl(9)
            .payload(b"x")
            .bytes();
        // Normal: TTL decremented, checksum still right.
        h.push(0, vec![marked_ip(&ok)]);
        let o = h.output(0);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].data()[8], 8);
        assert!(ip_checksum_ok(o[0].data()));
        // Painted 2: a copy on output 1, the original on output 0.
        let mut p = marked_ip(&ok);
        p.anno_mut().paint = 2;
        h.push(0, vec![p]);
        assert_eq!(outputs(&h), [1, 1, 0, 0, 0]);
        // Bad option: output 2 with the parameter problem offset.
        let bad = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .options(&[7, 3, 1, 0])
            .payload(b"x")
            .bytes();
        h.push(0, vec![marked_ip(&bad)]);
        let o2 = h.output(2);
        assert_eq!(o2.len(), 1);
        assert_eq!(o2[0].anno().icmp_param_off, 22);
        // TTL 1: output 3.
        let ttl1 = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .ttl(1)
            .payload(b"x")
            .bytes();
        h.push(0, vec![marked_ip(&ttl1)]);
        assert_eq!(outputs(&h), [0, 0, 0, 1, 0]);
        // Longer than the MTU: output 4.
        let big = Ip::new("1.0.0.1", "2.0.0.2", 17).payload(&[0; 100]).bytes();
        h.push(0, vec![marked_ip(&big)]);
        assert_eq!(outputs(&h), [0, 0, 0, 0, 1]);
        // Link broadcast: dropped.
        let mut b = marked_ip(&ok);
        b.anno_mut().packet_type = PacketType::Broadcast;
        h.push(0, vec![b]);
        assert_eq!(outputs(&h), [0, 0, 0, 0, 0]);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn fix_ip_src_uses_ipaddr() {
        let h = harness("IPOutputCombo(2, 18.26.4.24, 1500)", 5);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17).payload(b"x").bytes();
        let mut p = marked_ip(&d);
        p.anno_mut().fix_ip_src = true;
        h.push(0, vec![p]);
        let o = h.output(0);
        assert_eq!(&o[0].data()[12..16], &[18, 26, 4, 24]);
        assert!(ip_checksum_ok(o[0].data()));
        assert!(!o[0].anno().fix_ip_src);
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            ("IPOutputCombo", "e :: IPOutputCombo: missing mandatory COLOR argument; e :: IPOutputCombo: missing mandatory IPADDR argument; e :: IPOutputCombo: missing mandatory MTU argument"),
            ("IPOutputCombo(1, 1.2.3.4)", "e :: IPOutputCombo: missing mandatory MTU argument"),
            ("IPOutputCombo(300, 1.2.3.4, 1500)", "e :: IPOutputCombo: COLOR: 300 out of range"),
            ("IPOutputCombo(1, 1.2.3, 1500)", "e :: IPOutputCombo: IPADDR: expected IP address, not '1.2.3'"),
            ("IPOutputCombo(1, 1.2.3.4, -1)", "e :: IPOutputCombo: MTU: expected unsigned integer"),
            ("IPOutputCombo(1, 1.2.3.4, 1500, 2)", "e :: IPOutputCombo: too many arguments ('2')"),
        ] {
            assert_err(try_harness(bad, 5), want);
        }
    }

    fn summary(ps: &[Packet]) -> Vec<String> {
        ps.iter()
            .map(|p| format!("{:?} {:?}", p.data(), p.anno()))
            .collect()
    }

    #[test]
    fn same_as_the_chain_of_elements() {
        let chain = "elementclass Chain { \
             input -> DropBroadcasts -> p :: PaintTee(4) -> g :: IPGWOptions(10.0.0.1) \
             -> FixIPSrc(10.0.0.1) -> d :: DecIPTTL -> l :: CheckLength(60) -> [0]output; \
             p[1] -> [1]output; g[1] -> [2]output; d[1] -> [3]output; l[1] -> [4]output }";
        let combo = harness("IPOutputCombo(4, 10.0.0.1, 60)", 5);
        let sep = super::super::ip_input_combo::chain_harness(chain, 5);
        let mut rng = Rng::new(5);
        let mut seen = [0usize; 5];
        for round in 0..400 {
            let mut ps = Vec::new();
            for _ in 0..6 {
                let mut ip = rng.datagram();
                if rng.chance(4) {
                    ip = ip.ttl(rng.below(3) as u8);
                }
                if rng.chance(3) {
                    // Record route (sometimes malformed) or timestamp.
                    let opt: Vec<u8> = match rng.below(3) {
                        0 => vec![7, 7, 4, 0, 0, 0, 0, 1],
                        1 => vec![7, 7, rng.u8() & 7, 0, 0, 0, 0, 1],
                        // A full timestamp option (its overflow counted;
                        // a timestamp written would depend on the clock).
                        _ => vec![68, 12, 13, rng.u8() & 0xf1, 0, 0, 0, 0, 0, 0, 0, 0],
                    };
                    ip = ip.options(&opt);
                }
                let d = ip.bytes();
                let mut p = marked_ip(&d);
                let a = p.anno_mut();
                a.paint = rng.below(6) as u8;
                a.fix_ip_src = rng.chance(3);
                a.packet_type = match rng.below(8) {
                    0 => PacketType::Broadcast,
                    1 => PacketType::Multicast,
                    _ => PacketType::Host,
                };
                ps.push(p);
            }
            let copy: Vec<_> = ps.iter().map(|p| p.clone_packet().unwrap()).collect();
            combo.push(0, ps);
            sep.push(0, copy);
            for (i, s) in seen.iter_mut().enumerate() {
                let (a, b) = (combo.output(i), sep.output(i));
                assert_eq!(summary(&a), summary(&b), "round {round} output {i}");
                *s += a.len();
            }
        }
        assert_eq!(combo.drops(), sep.drops());
        assert!(combo.drops() > 0);
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    }
}
