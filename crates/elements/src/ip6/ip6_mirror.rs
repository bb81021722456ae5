//! # IP6Mirror
//!
//! IP6Mirror
//!
//! Swaps IPv6 source and destination addresses (and TCP/UDP ports).
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IPv6 packets with their network header annotation set. Swaps
//! the source and destination addresses and, if the upper-layer header
//! (found past any extension headers) is TCP or UDP and present, the
//! source and destination ports. Checksums need no update: the one's
//! complement sum does not depend on the order of its words. A packet
//! without a 40-byte IPv6 header is dropped.
//!
//! Example:
//!
//!     ... -> CheckIP6Header -> IP6Mirror -> ...

use paraclick_packet::wire::ipv6::next_header;
use paraclick_packet::wire::Ipv6Header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct IP6Mirror;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no IPv6 header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("IP6Mirror", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IP6Mirror, String> {
    cx.args().complete()?;
    Ok(IP6Mirror)
}

impl Action for IP6Mirror {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(nh) = p.network_header_mut() else {
            return Verdict::DropFor(0);
        };
        if nh.len() < 40 {
            return Verdict::DropFor(0);
        }
        let ports_at = {
            let h = Ipv6Header::new_unchecked(&nh[..]);
            match h.upper_layer() {
                Ok(u)
                    if !u.later_fragment
                        && matches!(u.protocol, next_header::TCP | next_header::UDP) =>
                {
                    Some(40 + u.offset)
                }
                _ => None,
            }
        };
        let mut src = [0u8; 16];
        src.copy_from_slice(&nh[8..24]);
        nh.copy_within(24..40, 8);
        nh[24..40].copy_from_slice(&src);
        if let Some(at) = ports_at {
            if let Some(ports) = nh.get_mut(at..at + 4) {
                let (a, b) = ports.split_at_mut(2);
                a.swap_with_slice(b);
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn swaps_addresses_and_ports() {
        let h = harness("IP6Mirror", 1);
        let d = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1234, 80, b"x")
            .bytes();
        h.push(0, vec![marked(&d), pkt(&d), marked(&d[..20])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        let want = Ip6::new("2001:db8::2", "2001:db8::1", 17)
            .udp(80, 1234, b"x")
            .bytes();
        assert_eq!(out[0].data(), &want[..]);
        assert!(upper_checksum_ok(out[0].data()));
        assert_eq!(h.drops(), 2);
        // Not TCP/UDP: addresses only.
        let d = Ip6::new("2001:db8::1", "2001:db8::2", 59)
            .payload(&[1, 2, 3, 4])
            .bytes();
        h.push(0, vec![marked(&d)]);
        assert_eq!(&h.output(0)[0].data()[40..], &[1, 2, 3, 4]);
    }
}
