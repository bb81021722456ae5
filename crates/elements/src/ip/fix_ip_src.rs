//! # FixIPSrc
//!
//! FixIPSrc(IPADDR)
//!
//! Sets the IP source field if the Fix IP Source annotation asks for it.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IP packets. If a packet's Fix IP Source annotation
//! (`FIX_IP_SRC`) is set, changes its IP source address to IPADDR, updates
//! the header checksum, and clears the annotation. Packets without the
//! annotation pass unchanged. Used after elements such as ICMPError that
//! standards require to use the outgoing interface's address as source.
//! A packet with the annotation but without an IP header annotation (or
//! with fewer than 20 bytes of IP header) is dropped.
//!
//! Arguments:
//! - `IPADDR` (IP address, mandatory): the source address to set.
//!
//! Example:
//!
//!     ... -> ICMPError(18.26.4.24, timeexceeded) -> rt;
//!     rt[1] -> FixIPSrc(18.26.7.1) -> ...;

use super::fixed_ip_header;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

pub struct FixIPSrc {
    addr: Ipv4Addr,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no IP header"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("FixIPSrc", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<FixIPSrc, String> {
    let mut a = cx.args();
    let addr = a.read_mp::<Ipv4Addr>("IPADDR");
    a.complete()?;
    Ok(FixIPSrc { addr })
}

impl Action for FixIPSrc {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if !p.anno().fix_ip_src {
            return Verdict::Out(0);
        }
        let Some(mut h) = fixed_ip_header(p) else {
            return Verdict::DropFor(0);
        };
        h.update_src_addr(self.addr);
        p.anno_mut().fix_ip_src = false;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn fixes_only_annotated_packets() {
        let h = harness("FixIPSrc(18.26.7.1)", 1);
        let d = Ip::new("19.19.19.19", "18.26.4.44", 1)
            .icmp(11, 0, [0; 4], &[0x45; 28])
            .bytes();
        let mut a = marked(&d);
        a.anno_mut().fix_ip_src = true;
        h.push(0, vec![a, marked(&d)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        let want = Ip::new("18.26.7.1", "18.26.4.44", 1)
            .icmp(11, 0, [0; 4], &[0x45; 28])
            .bytes();
        assert_eq!(out[0].data(), &want[..]);
        assert!(!out[0].anno().fix_ip_src);
        assert_eq!(out[1].data(), &d[..]);
    }

    #[test]
    fn annotated_without_header_dropped() {
        let h = harness("FixIPSrc(1.1.1.1)", 1);
        let mut p = pkt(&[0x45; 30]);
        p.anno_mut().fix_ip_src = true;
        let mut q = pkt(&[0x45; 30]);
        q.set_network_header(15, 20);
        q.anno_mut().fix_ip_src = true;
        h.push(0, vec![p, q, pkt(&[1, 2, 3])]);
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn incremental_matches_full_recomputation() {
        let h = harness("FixIPSrc(203.0.113.77)", 1);
        let mut rng = Rng::new(41);
        for _ in 0..2000 {
            let d = rng.datagram().bytes();
            let mut p = marked(&d);
            p.anno_mut().fix_ip_src = true;
            h.push(0, vec![p]);
            let hlen = usize::from(d[0] & 15) * 4;
            let mut want = d.clone();
            want[12..16].copy_from_slice(&[203, 0, 113, 77]);
            let c = ip_header_checksum(&want[..hlen]);
            want[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(h.output(0)[0].data(), &want[..]);
        }
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("FixIPSrc", 1),
            "e :: FixIPSrc: missing mandatory IPADDR argument",
        );
        assert_err(
            try_harness("FixIPSrc(1.2.3)", 1),
            "e :: FixIPSrc: IPADDR: expected IP address, not '1.2.3'",
        );
    }
}
