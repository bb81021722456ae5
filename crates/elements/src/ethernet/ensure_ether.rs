//! # EnsureEther
//!
//! EnsureEther([ETHERTYPE, SRC, DST])
//!
//! Ensures that IP packets are Ethernet encapsulated.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Non-IP packets (those without a network header annotation), and IP
//! packets that look Ethernet-encapsulated (the IP header is at least 14
//! bytes in and preceded by the IP ethertype, 0x0800), leave unchanged.
//! Other IP packets are encapsulated in an Ethernet header before being
//! emitted. If the IP header starts the packet and the 14 bytes before it
//! in the buffer look like a stripped-off Ethernet header (ethertype
//! 0x0800), that header is restored; otherwise the header the arguments
//! specify is prepended. Either way the new header is marked as the
//! packet's link-layer header. A packet that no buffer can grow to hold
//! the header is dropped.
//!
//! Arguments:
//! - `ETHERTYPE` (integer, 0 to 0xFFFF, default 0x0800): the Ethernet type
//!   of prepended headers, in host order.
//! - `SRC` (Ethernet address, default 00-00-00-00-00-00): the source.
//! - `DST` (Ethernet address, default 00-00-00-00-00-00): the destination.
//!
//! Example: encapsulate packets without an Ethernet header with type
//! ETHERTYPE_IP (0x0800), source address 1:1:1:1:1:1, and destination
//! address 2:2:2:2:2:2:
//!
//!     EnsureEther(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)

use super::ether_encap::encap;
use paraclick_packet::wire::EtherAddr;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

const IP_TYPE: [u8; 2] = [0x08, 0x00];

pub struct EnsureEther {
    ethertype: u16,
    src: EtherAddr,
    dst: EtherAddr,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("EnsureEther", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        // An Ethernet header in front of packets that lack one only.
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EnsureEther, String> {
    let mut a = cx.args();
    let ethertype = a.read_p::<u16>("ETHERTYPE").unwrap_or(0x0800);
    let src = a.read_p::<EtherAddr>("SRC").unwrap_or(EtherAddr([0; 6]));
    let dst = a.read_p::<EtherAddr>("DST").unwrap_or(EtherAddr([0; 6]));
    a.complete()?;
    Ok(EnsureEther {
        ethertype,
        src,
        dst,
    })
}

impl Action for EnsureEther {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(net) = p.network_header_offset() else {
            return Verdict::Out(0);
        };
        if net >= 14 {
            let n = net as usize;
            if p.data().get(n - 2..n) == Some(&IP_TYPE[..]) {
                return Verdict::Out(0);
            }
        }
        // A header stripped off earlier is still in the buffer's headroom.
        if net == 0 && p.headroom() >= 14 && p.push(14).is_ok() {
            if p.data()[12..14] == IP_TYPE {
                p.set_mac_header(0);
                return Verdict::Out(0);
            }
            p.pull(14);
        }
        if encap(p, self.dst, self.src, self.ethertype) {
            Verdict::Out(0)
        } else {
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn frame() -> Vec<u8> {
        let d = Ip::new("10.0.0.1", "10.0.0.2", 17).payload(b"hi").bytes();
        ether_frame(eth("0:1:2:3:4:5"), eth("6:7:8:9:a:b"), 0x0800, &d)
    }

    #[test]
    fn non_ip_and_encapsulated_pass_unchanged() {
        let h = harness("EnsureEther(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)", 1);
        let f = frame();
        let mut ipp = pkt(&f);
        ipp.set_network_header(14, 20);
        h.push(0, vec![pkt(&f), ipp]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &f[..]);
        assert_eq!(out[1].data(), &f[..]);
    }

    #[test]
    fn stripped_header_is_restored() {
        let h = harness("EnsureEther(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)", 1);
        let f = frame();
        let mut p = pkt(&f);
        p.set_network_header(14, 20);
        p.pull(14);
        assert_eq!(p.network_header_offset(), Some(0));
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &f[..]);
        assert_eq!(out[0].mac_header_offset(), Some(0));
    }

    #[test]
    fn bare_ip_gets_the_configured_header() {
        let h = harness("EnsureEther(0x86dd, 1:1:1:1:1:1, 2:2:2:2:2:2)", 1);
        let d = Ip::new("10.0.0.1", "10.0.0.2", 17).bytes();
        // Headroom holding a non-IP ethertype: not reused.
        let f = ether_frame(eth("0:1:2:3:4:5"), eth("6:7:8:9:a:b"), 0x0806, &d);
        let mut arpish = pkt(&f);
        arpish.pull(14);
        arpish.set_network_header(0, 20);
        h.push(0, vec![marked(&d), arpish]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        let want = ether_frame(eth("2:2:2:2:2:2"), eth("1:1:1:1:1:1"), 0x86dd, &d);
        assert_eq!(out[0].data(), &want[..]);
        assert_eq!(out[1].data(), &want[..]);
        assert_eq!(out[0].mac_header_offset(), Some(0));
        assert_eq!(out[0].network_header_offset(), Some(14));
    }

    #[test]
    fn defaults_and_bad_config() {
        let h = harness("EnsureEther", 1);
        let d = Ip::new("10.0.0.1", "10.0.0.2", 17).bytes();
        let mut p = Packet::make(0, d.len(), 0).unwrap();
        p.data_mut().copy_from_slice(&d);
        p.set_network_header(0, 20);
        h.push(0, vec![p]);
        let out = h.output(0);
        let want = ether_frame(eth("0:0:0:0:0:0"), eth("0:0:0:0:0:0"), 0x0800, &d);
        assert_eq!(out[0].data(), &want[..]);
        assert_err(
            try_harness("EnsureEther(0x10000)", 1),
            "e :: EnsureEther: ETHERTYPE: 0x10000 out of range",
        );
        assert_err(
            try_harness("EnsureEther(0x800, nope)", 1),
            "e :: EnsureEther: SRC: expected Ethernet address, not 'nope'",
        );
        assert_err(
            try_harness("EnsureEther(1, 1:1:1:1:1:1, 2:2:2:2:2:2, 4)", 1),
            "e :: EnsureEther: too many arguments ('4')",
        );
    }

    use paraclick_packet::Packet;
}
