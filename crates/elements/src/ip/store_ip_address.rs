//! # StoreIPAddress
//!
//! StoreIPAddress(OFFSET)
//! StoreIPAddress(ADDR, OFFSET)
//!
//! Stores an IP address in the packet.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! The one-argument form writes the destination IP address annotation into
//! the packet at OFFSET; if the annotation is zero (0.0.0.0), the packet is
//! not changed. The two-argument form writes ADDR (which may be zero).
//!
//! OFFSET is a byte offset from the start of the packet, or `src` or `dst`.
//! With `src` or `dst` the packet must have its IP header annotation set:
//! the address goes into the header's source or destination field, and the
//! IP header checksum is updated incrementally (RFC 1624), as is the TCP or
//! UDP checksum (whose pseudo-header holds the address) of an unfragmented
//! packet or first fragment; an absent (zero) UDP checksum stays absent.
//! With a numeric OFFSET no checksum is changed: follow with SetIPChecksum
//! (and SetTCPChecksum/SetUDPChecksum) if needed.
//!
//! If OFFSET is out of range (or, for `src` and `dst`, the packet has no IP
//! header annotation or fewer than 20 bytes of IP header), the packet is
//! sent to output 1 if it is connected, and dropped otherwise.
//!
//! Arguments:
//! - `ADDR` (IP address): the address to store (default: the annotation).
//! - `OFFSET` (unsigned integer, `src` or `dst`, mandatory): where.
//!
//! Example:
//!
//!     ... -> GetIPAddress(16) -> rt :: StaticIPLookup(...);
//!     rt[0] -> StoreIPAddress(dst) -> ...;   // rewrite destination

use paraclick_packet::wire::{checksum, ip_proto, Ipv4Header};
use paraclick_packet::Packet;
use paraclick_runtime::args::FromArg;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    Data(usize),
    Src,
    Dst,
}

pub struct StoreIPAddress {
    addr: Option<Ipv4Addr>,
    at: Where,
    error_out: Verdict,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["bad packet"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("StoreIPAddress", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn parse_where(s: &str, env: &paraclick_runtime::ArgEnv) -> Result<Where, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("src") {
        Ok(Where::Src)
    } else if s.eq_ignore_ascii_case("dst") {
        Ok(Where::Dst)
    } else {
        usize::from_arg(s, env)
            .map(Where::Data)
            .map_err(|_| format!("OFFSET: expected unsigned integer, 'src' or 'dst', not '{s}'"))
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StoreIPAddress, String> {
    let env = &*cx.env;
    let mut a = cx.args();
    let addr_kw = a.read::<Ipv4Addr>("ADDR");
    let off_kw = a.read::<String>("OFFSET");
    let pos = a.rest();
    a.complete()?;
    let parse_addr = |s: &str| Ipv4Addr::from_arg(s, env).map_err(|e| format!("ADDR: {e}"));
    let (addr, off) = match (pos.as_slice(), off_kw) {
        ([], Some(o)) => (addr_kw, o),
        ([o], None) => (addr_kw, o.clone()),
        ([ad], Some(o)) => (Some(parse_addr(ad)?), o),
        ([ad, o], None) => (Some(parse_addr(ad)?), o.clone()),
        ([], None) => return Err("missing mandatory OFFSET argument".into()),
        _ => return Err("too many arguments".into()),
    };
    Ok(StoreIPAddress {
        addr,
        at: parse_where(&off, env)?,
        error_out: if cx.noutputs >= 2 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
    })
}

/// Writes `addr` into the source (`src`) or destination field of the IP
/// header at the packet's network header, updating the IP checksum and the
/// TCP or UDP checksum incrementally. False if there is no such header.
#[inline]
fn store_in_header(p: &mut Packet, addr: Ipv4Addr, src: bool) -> bool {
    let Some(nh) = p.network_header_mut() else {
        return false;
    };
    let Some(fixed) = nh.get_mut(..20) else {
        return false;
    };
    let mut h = Ipv4Header::new_unchecked(fixed);
    let old = if src { h.src_addr() } else { h.dst_addr() };
    if src {
        h.update_src_addr(addr);
    } else {
        h.update_dst_addr(addr);
    }
    let (proto, first, hlen) = (h.protocol(), h.frag_offset_units() == 0, h.header_len());
    if !first || hlen < 20 {
        return true;
    }
    // The transport checksum covers the address through the
    // pseudo-header: update it where the segment holds its field.
    let at = match proto {
        ip_proto::TCP => 16,
        ip_proto::UDP => 6,
        _ => return true,
    };
    if let Some(field) = nh.get_mut(hlen + at..hlen + at + 2) {
        let c = u16::from_be_bytes([field[0], field[1]]);
        let n = match proto {
            ip_proto::UDP if c == 0 => 0,
            ip_proto::UDP => match checksum::update_addr(c, old, addr) {
                0 => 0xffff,
                n => n,
            },
            _ => checksum::update_addr(c, old, addr),
        };
        field.copy_from_slice(&n.to_be_bytes());
    }
    true
}

impl Action for StoreIPAddress {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let addr = match self.addr {
            Some(a) => a,
            None => {
                let a = p.anno().dst_ip;
                if a.is_unspecified() {
                    return Verdict::Out(0);
                }
                a
            }
        };
        let ok = match self.at {
            Where::Data(o) => match p.data_mut().get_mut(o..o.saturating_add(4)) {
                Some(b) => {
                    b.copy_from_slice(&addr.octets());
                    true
                }
                None => false,
            },
            Where::Src => store_in_header(p, addr, true),
            Where::Dst => store_in_header(p, addr, false),
        };
        if ok {
            Verdict::Out(0)
        } else {
            self.error_out
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;
    use paraclick_packet::Packet;

    /// Click's own test: 20 bytes of 0x99 marked as IP, destination
    /// annotation 1.0.0.2.
    fn nines() -> Packet {
        let mut p = marked(&[0x99; 20]);
        p.anno_mut().dst_ip = ip("1.0.0.2");
        p
    }

    fn hex(p: &Packet) -> String {
        p.data()
            .chunks(4)
            .map(|c| c.iter().map(|b| format!("{b:02x}")).collect::<String>())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn click_test_vectors() {
        for (decl, want) in [
            (
                "StoreIPAddress(0)",
                "01000002 99999999 99999999 99999999 99999999",
            ),
            (
                "StoreIPAddress(1.0.0.3, 4)",
                "99999999 01000003 99999999 99999999 99999999",
            ),
            (
                "StoreIPAddress(src)",
                "99999999 99999999 9999cbca 01000002 99999999",
            ),
            (
                "StoreIPAddress(dst)",
                "99999999 99999999 9999cbca 99999999 01000002",
            ),
            (
                "StoreIPAddress(1.0.0.4, dst)",
                "99999999 99999999 9999cbc8 99999999 01000004",
            ),
        ] {
            let h = harness(decl, 2);
            h.push(0, vec![nines()]);
            let out = h.output(0);
            assert_eq!(out.len(), 1, "{decl}");
            assert_eq!(hex(&out[0]), want, "{decl}");
        }
    }

    #[test]
    fn zero_annotation_leaves_packet() {
        let h = harness("StoreIPAddress(src)", 2);
        let mut p = nines();
        p.anno_mut().dst_ip = ip("0.0.0.0");
        h.push(0, vec![p]);
        assert_eq!(h.output(0)[0].data(), &[0x99; 20]);
        // ...but an explicit zero address is stored.
        let h = harness("StoreIPAddress(0.0.0.0, 2)", 2);
        h.push(0, vec![nines()]);
        assert_eq!(
            &h.output(0)[0].data()[..8],
            &[0x99, 0x99, 0, 0, 0, 0, 0x99, 0x99]
        );
    }

    #[test]
    fn out_of_range_to_output_1_or_dropped() {
        let h = harness("StoreIPAddress(1.2.3.4, 17)", 2);
        h.push(0, vec![nines(), pkt(&[0; 21])]);
        let mut want = [0u8; 21];
        want[17..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(h.output(0)[0].data(), &want);
        assert_eq!(h.output(1)[0].data(), &[0x99; 20]);
        let h = harness("StoreIPAddress(1.2.3.4, dst)", 1);
        h.push(0, vec![pkt(&[0x45; 20]), marked(&[0x45; 19])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn updates_tcp_and_udp_checksums() {
        let tcp = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp_full(1, 2, 3, 4, 0x18, 5, &[], b"hello")
            .bytes();
        let udp = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .udp(1, 2, b"world")
            .bytes();
        let mut nocksum = udp.clone();
        nocksum[26] = 0;
        nocksum[27] = 0;
        let frag = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .frag(3)
            .payload(&[7; 12])
            .bytes();
        let h = harness("StoreIPAddress(203.0.113.9, src)", 2);
        h.push(
            0,
            vec![marked(&tcp), marked(&udp), marked(&nocksum), marked(&frag)],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 4);
        let want_tcp = Ip::new("203.0.113.9", "10.0.0.2", 0)
            .tcp_full(1, 2, 3, 4, 0x18, 5, &[], b"hello")
            .bytes();
        assert_eq!(out[0].data(), &want_tcp[..]);
        let want_udp = Ip::new("203.0.113.9", "10.0.0.2", 0)
            .udp(1, 2, b"world")
            .bytes();
        assert_eq!(out[1].data(), &want_udp[..]);
        let mut want_none = want_udp.clone();
        want_none[26] = 0;
        want_none[27] = 0;
        assert_eq!(
            out[2].data(),
            &want_none[..],
            "absent UDP checksum stays absent"
        );
        let want_frag = Ip::new("203.0.113.9", "10.0.0.2", ip_proto::UDP)
            .frag(3)
            .payload(&[7; 12])
            .bytes();
        assert_eq!(
            out[3].data(),
            &want_frag[..],
            "later fragment: payload untouched"
        );
    }

    #[test]
    fn incremental_matches_full_recomputation() {
        let mut rng = Rng::new(51);
        for (decl, src) in [
            ("StoreIPAddress(src)", true),
            ("StoreIPAddress(dst)", false),
        ] {
            let h = harness(decl, 2);
            for _ in 0..1500 {
                let d = rng.datagram();
                let new = rng.addr();
                let mut p = marked(&d.bytes());
                p.anno_mut().dst_ip = new;
                h.push(0, vec![p]);
                let got = h.output(0);
                assert_eq!(got.len(), 1);
                if new.is_unspecified() {
                    assert_eq!(got[0].data(), &d.bytes()[..]);
                    continue;
                }
                let mut w = d.clone();
                if src {
                    w.src = new;
                } else {
                    w.dst = new;
                }
                // Rebuild the payload's checksum for the new addresses.
                let hl = w.hlen();
                let mut want = w.bytes();
                match w.proto {
                    ip_proto::TCP => {
                        let c = transport_checksum(w.src, w.dst, 6, &want[hl..]);
                        want[hl + 16..hl + 18].copy_from_slice(&c.to_be_bytes());
                    }
                    ip_proto::UDP => {
                        let c = transport_checksum(w.src, w.dst, 17, &want[hl..]);
                        let c = if c == 0 { 0xffff } else { c };
                        want[hl + 6..hl + 8].copy_from_slice(&c.to_be_bytes());
                    }
                    _ => {}
                }
                assert_eq!(got[0].data(), &want[..]);
            }
        }
    }

    #[test]
    fn bad_config() {
        for (bad, want) in [
            (
                "StoreIPAddress",
                "e :: StoreIPAddress: missing mandatory OFFSET argument",
            ),
            (
                "StoreIPAddress(foo)",
                "e :: StoreIPAddress: OFFSET: expected unsigned integer, 'src' or 'dst', not 'foo'",
            ),
            (
                "StoreIPAddress(1.2.3, 4)",
                "e :: StoreIPAddress: ADDR: expected IP address, not '1.2.3'",
            ),
            (
                "StoreIPAddress(1.2.3.4, 4, 5)",
                "e :: StoreIPAddress: too many arguments",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
