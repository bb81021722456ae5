//! # EraseIPPayload
//!
//! EraseIPPayload()
//!
//! Erases IP packet payload.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Zeroes the TCP or UDP payload of each packet (which needs its IP header
//! annotation). The packet keeps its length; only the payload bytes
//! become zero. Headers, including checksums, are left as they were. In a
//! second or later fragment of a TCP or UDP datagram, everything after
//! the IP header is payload. Other protocols, and packets without an IP
//! header annotation, pass unchanged.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     FromDump(f.pcap, FORCE_IP true) -> AnonymizeIPAddr -> EraseIPPayload -> ToDump(g.pcap)

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct EraseIPPayload;

pub fn spec() -> ClassSpec {
    ClassSpec::action("EraseIPPayload", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EraseIPPayload, String> {
    cx.args().complete()?;
    Ok(EraseIPPayload)
}

/// Where the payload starts, relative to the IP header, or `None` if the
/// packet has no TCP or UDP payload to erase.
fn payload_start(ip: &[u8]) -> Option<usize> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let hl = usize::from(ip[0] & 15) * 4;
    let proto = ip[9];
    if proto != 6 && proto != 17 {
        return None;
    }
    let fragoff = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    if fragoff != 0 {
        return Some(hl);
    }
    if proto == 6 {
        let off = ip.get(hl + 12)?;
        Some(hl + usize::from(off >> 4) * 4)
    } else {
        Some(hl + 8)
    }
}

impl Action for EraseIPPayload {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if let Some(ip) = p.network_header_mut() {
            if let Some(start) = payload_start(ip) {
                if start < ip.len() {
                    ip[start..].fill(0);
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
    fn zeroes_tcp_and_udp_payloads_only() {
        let h = harness("EraseIPPayload", 1);
        let udp = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .udp(1, 2, b"secret")
            .bytes();
        let tcp = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .tcp_full(1, 2, 3, 4, 0x18, 100, &[], b"more secret")
            .bytes();
        let icmp = Ip::new("1.0.0.1", "2.0.0.2", 1)
            .icmp(8, 0, [0, 1, 0, 1], b"ping")
            .bytes();
        let frag = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .frag(0x0010)
            .payload(b"tail of it")
            .bytes();
        h.push(
            0,
            vec![marked(&udp), marked(&tcp), marked(&icmp), marked(&frag)],
        );
        let out = h.output(0);
        assert_eq!(out[0].len(), udp.len());
        assert_eq!(&out[0].data()[..28], &udp[..28]);
        assert!(out[0].data()[28..].iter().all(|&b| b == 0));
        assert_eq!(&out[1].data()[..40], &tcp[..40]);
        assert!(out[1].data()[40..].iter().all(|&b| b == 0));
        assert_eq!(out[1].len(), tcp.len());
        assert_eq!(out[2].data(), &icmp[..]);
        assert!(out[3].data()[20..].iter().all(|&b| b == 0));
        // Without an IP header annotation: unchanged.
        h.push(0, vec![pkt(&udp)]);
        assert_eq!(h.output(0)[0].data(), &udp[..]);
    }
}
