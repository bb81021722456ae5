//! Neighbour discovery helpers shared by IP6NDSolicitor and
//! IP6NDAdvertiser: validating a received message (RFC 4861 §7.1) and
//! building one in an Ethernet frame.

use paraclick_packet::wire::icmpv6::{Icmpv6Header, NdRepr};
use paraclick_packet::wire::ipv6::{addr, next_header};
use paraclick_packet::wire::{ethertype, EtherAddr, Ipv6Header, Ipv6Repr};
use paraclick_packet::Packet;
use std::net::Ipv6Addr;

/// A received neighbour discovery message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NdIn {
    pub eth_src: EtherAddr,
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub repr: NdRepr,
}

/// Parses an Ethernet frame holding a neighbour solicitation or
/// advertisement, with RFC 4861's validity checks: hop limit 255, ICMPv6
/// checksum, code 0, well-formed options, target not multicast; a
/// solicitation from `::` must go to a solicited-node address and carry no
/// source link-layer address; an advertisement to a multicast address must
/// not have the solicited flag.
pub(crate) fn parse_frame(frame: &[u8]) -> Option<NdIn> {
    if frame.len() < 14 || frame[12..14] != ethertype::IPV6.to_be_bytes() {
        return None;
    }
    let eth_src = EtherAddr::from_slice(&frame[6..12])?;
    let h = Ipv6Header::new_checked(&frame[14..]).ok()?;
    if h.version() != 6 || h.hop_limit() != 255 || h.next_header() != next_header::ICMPV6 {
        return None;
    }
    let (src, dst) = (h.src_addr(), h.dst_addr());
    let m = Icmpv6Header::new_checked(h.payload()).ok()?;
    if !m.verify_checksum(&src, &dst) {
        return None;
    }
    let repr = NdRepr::parse(&m).ok()?;
    match repr {
        NdRepr::NeighborSolicit { lladdr, .. } if src.is_unspecified() => {
            let o = dst.octets();
            if lladdr.is_some() || o[..13] != [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff] {
                return None;
            }
        }
        NdRepr::NeighborAdvert { flags, .. } if addr::is_multicast(&dst) && flags & 0x40 != 0 => {
            return None;
        }
        _ => {}
    }
    Some(NdIn {
        eth_src,
        src,
        dst,
        repr,
    })
}

/// An Ethernet frame carrying `repr` from `src` to `dst` (hop limit 255).
pub(crate) fn build_frame(
    eth_dst: EtherAddr,
    eth_src: EtherAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    repr: &NdRepr,
) -> Option<Packet> {
    let mlen = repr.buffer_len();
    let mut p = Packet::new(14 + 40 + mlen)?;
    let d = p.data_mut();
    d[0..6].copy_from_slice(&eth_dst.0);
    d[6..12].copy_from_slice(&eth_src.0);
    d[12..14].copy_from_slice(&ethertype::IPV6.to_be_bytes());
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: next_header::ICMPV6,
        payload_len: mlen,
        hop_limit: 255,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Header::new_unchecked(&mut d[14..54]));
    repr.emit(&mut Icmpv6Header::new_unchecked(&mut d[54..]), &src, &dst);
    p.set_mac_header(0);
    p.set_network_header(14, 40);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_then_parse() {
        let r = NdRepr::NeighborSolicit {
            target: "2001:db8::2".parse().unwrap(),
            lladdr: Some(EtherAddr([2, 0, 0, 0, 0, 1])),
        };
        let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let dst = addr::solicited_node(&"2001:db8::2".parse().unwrap());
        let p = build_frame(
            EtherAddr(addr::multicast_ether(&dst)),
            EtherAddr([2, 0, 0, 0, 0, 1]),
            src,
            dst,
            &r,
        )
        .unwrap();
        let got = parse_frame(p.data()).unwrap();
        assert_eq!(got.repr, r);
        assert_eq!(got.src, src);
        assert_eq!(got.dst, dst);
        assert_eq!(got.eth_src, EtherAddr([2, 0, 0, 0, 0, 1]));
        // Hop limit other than 255: rejected; every truncation: rejected.
        let mut bad = p.data().to_vec();
        bad[21] = 254;
        assert_eq!(parse_frame(&bad), None);
        for len in 0..p.len() {
            assert_eq!(parse_frame(&p.data()[..len]), None, "{len}");
        }
        let mut bad = p.data().to_vec();
        bad[70] ^= 1; // target: checksum fails
        assert_eq!(parse_frame(&bad), None);
    }
}
