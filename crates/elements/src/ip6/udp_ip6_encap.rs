//! # UDPIP6Encap
//!
//! UDPIP6Encap(SRC, SPORT, DST, DPORT [, CHECKSUM])
//!
//! Encapsulates packets in static UDP/IPv6 headers.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends a UDP header (ports SPORT and DPORT, length from the packet)
//! and an IPv6 header (next header 17, SRC to DST, hop limit 250). The UDP
//! checksum is mandatory over IPv6 (RFC 8200 §8.1) and is computed unless
//! CHECKSUM is false (then 0, which receivers drop: for tests only).
//! Sets the network header annotation. A packet too long for the length
//! fields, or without room for the headers, is dropped.
//!
//! Example:
//!
//!     ... -> UDPIP6Encap(2001:db8::1, 1234, 2001:db8::2, 5678) -> ...

use super::ip6_encap::prepend_ip6;
use paraclick_packet::wire::ipv6::upper_layer_checksum;
use paraclick_packet::wire::Ipv6Repr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv6Addr;

pub struct UDPIP6Encap {
    src: Ipv6Addr,
    sport: u16,
    dst: Ipv6Addr,
    dport: u16,
    checksum: bool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("UDPIP6Encap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<UDPIP6Encap, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv6Addr>("SRC");
    let sport = a.read_mp::<u16>("SPORT");
    let dst = a.read_mp::<Ipv6Addr>("DST");
    let dport = a.read_mp::<u16>("DPORT");
    let checksum = a.read_p::<bool>("CHECKSUM").unwrap_or(true);
    a.complete()?;
    Ok(UDPIP6Encap {
        src,
        sport,
        dst,
        dport,
        checksum,
    })
}

impl Action for UDPIP6Encap {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let len = p.len() + 8;
        if len > 65535 || p.push(8).is_err() {
            return Verdict::DropFor(0);
        }
        let d = p.data_mut();
        d[0..2].copy_from_slice(&self.sport.to_be_bytes());
        d[2..4].copy_from_slice(&self.dport.to_be_bytes());
        d[4..6].copy_from_slice(&(len as u16).to_be_bytes());
        d[6..8].fill(0);
        if self.checksum {
            let mut c = upper_layer_checksum(&self.src, &self.dst, 17, d);
            if c == 0 {
                c = 0xffff;
            }
            d[6..8].copy_from_slice(&c.to_be_bytes());
        }
        let r = Ipv6Repr {
            src_addr: self.src,
            dst_addr: self.dst,
            next_header: 17,
            payload_len: 0,
            hop_limit: 250,
            traffic_class: 0,
            flow_label: 0,
        };
        if prepend_ip6(p, r) {
            Verdict::Out(0)
        } else {
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn encapsulates_with_checksum() {
        let h = harness("UDPIP6Encap(2001:db8::1, 1234, 2001:db8::2, 5678)", 1);
        h.push(0, vec![pkt(b"hello")]);
        let out = h.output(0);
        let want = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .hlim(250)
            .udp(1234, 5678, b"hello")
            .bytes();
        assert_eq!(out[0].data(), &want[..]);
        assert!(upper_checksum_ok(out[0].data()));
        let h = harness("UDPIP6Encap(::1, 1, ::2, 2, false)", 1);
        h.push(0, vec![pkt(b"x")]);
        assert_eq!(&h.output(0)[0].data()[46..48], &[0, 0]);
        assert_err(
            try_harness("UDPIP6Encap(::1, 1, ::2)", 1),
            "e :: UDPIP6Encap: missing mandatory DPORT argument",
        );
        assert_err(
            try_harness("UDPIP6Encap(::1, 70000, ::2, 1)", 1),
            "e :: UDPIP6Encap: SPORT: 70000 out of range",
        );
    }
}
