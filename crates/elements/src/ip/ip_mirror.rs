//! # IPMirror
//!
//! IPMirror(\[DST_ANNO])
//!
//! Swaps IP source and destination.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects packets with the IP header annotation set. Swaps the source and
//! destination IP addresses. For TCP and UDP packets (protocol 6 or 17)
//! that are first fragments, also swaps the source and destination ports,
//! and for TCP the sequence and acknowledgment numbers. Checksums are left
//! as they are: these swaps do not change them. A packet without an IP
//! header annotation (or with less than 20 bytes of header) is dropped
//! (counted); a transport header too short for the swap is left alone.
//!
//! Arguments:
//! - `DST_ANNO` (boolean, default true): set the destination IP address
//!   annotation to the new destination address.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> IPMirror -> EtherMirror -> ...

use super::fixed_ip_header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct IPMirror {
    dst_anno: bool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPMirror", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPMirror, String> {
    let mut a = cx.args();
    let dst_anno = a.read_p("DST_ANNO").unwrap_or(true);
    a.complete()?;
    Ok(IPMirror { dst_anno })
}

impl Action for IPMirror {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(mut h) = fixed_ip_header(p) else {
            return Verdict::DropFor(0);
        };
        let (src, dst) = (h.src_addr(), h.dst_addr());
        h.set_src_addr(dst);
        h.set_dst_addr(src);
        let proto = h.protocol();
        let first = h.frag_offset_units() == 0;
        if self.dst_anno {
            p.anno_mut().dst_ip = src;
        }
        let swap_len = match proto {
            6 => 12,
            17 => 4,
            _ => 0,
        };
        if first && swap_len > 0 {
            if let Some(t) = p.transport_header_mut().and_then(|t| t.get_mut(..swap_len)) {
                let (sp, rest) = t.split_at_mut(2);
                sp.swap_with_slice(&mut rest[..2]);
                if swap_len == 12 {
                    let (seq, ack) = rest[2..].split_at_mut(4);
                    seq.swap_with_slice(ack);
                }
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn swaps_addresses_ports_and_tcp_numbers() {
        let h = harness("IPMirror", 1);
        let tcp = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .tcp(1000, 80, 111, 222, 0x10, 512)
            .bytes();
        let udp = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .udp(53, 4000, b"q")
            .bytes();
        let icmp = Ip::new("1.0.0.1", "2.0.0.2", 1)
            .icmp(8, 0, [0, 1, 0, 2], b"ping")
            .bytes();
        h.push(0, vec![marked(&tcp), marked(&udp), marked(&icmp)]);
        let out = h.output(0);
        let want_tcp = Ip::new("2.0.0.2", "1.0.0.1", 6)
            .tcp(80, 1000, 222, 111, 0x10, 512)
            .bytes();
        let want_udp = Ip::new("2.0.0.2", "1.0.0.1", 17)
            .udp(4000, 53, b"q")
            .bytes();
        let want_icmp = Ip::new("2.0.0.2", "1.0.0.1", 1)
            .icmp(8, 0, [0, 1, 0, 2], b"ping")
            .bytes();
        // The builder computes every checksum afresh: the swapped packets
        // match them byte for byte, so the checksums were still right.
        assert_eq!(out[0].data(), &want_tcp[..]);
        assert_eq!(out[1].data(), &want_udp[..]);
        assert_eq!(out[2].data(), &want_icmp[..]);
        assert_eq!(out[0].anno().dst_ip, ip("1.0.0.1"));
    }

    #[test]
    fn later_fragments_keep_ports_and_dst_anno_false() {
        let h = harness("IPMirror(false)", 1);
        let frag = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .frag(3)
            .payload(&[0, 1, 0, 2, 9, 9])
            .bytes();
        h.push(0, vec![marked(&frag), pkt(&frag)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(h.drops(), 1, "no header annotation");
        let want = Ip::new("2.0.0.2", "1.0.0.1", 17)
            .frag(3)
            .payload(&[0, 1, 0, 2, 9, 9])
            .bytes();
        assert_eq!(out[0].data(), &want[..]);
        assert_eq!(out[0].anno().dst_ip, std::net::Ipv4Addr::UNSPECIFIED);
        assert_err(
            try_harness("IPMirror(maybe)", 1),
            "e :: IPMirror: DST_ANNO: expected boolean (true or false)",
        );
    }
}
