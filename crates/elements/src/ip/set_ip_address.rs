//! # SetIPAddress
//!
//! SetIPAddress(IPADDR [, ANNO])
//!
//! Sets the destination IP address annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets the destination IP address annotation of every packet to IPADDR.
//! The packet data is not changed.
//!
//! Arguments:
//! - `IPADDR` (IP address, mandatory): the address.
//! - `ANNO` (annotation, default `DST_IP`): the address annotation to set.
//!   paraclick has one address annotation, `DST_IP` (also `DST_IP_ANNO`).
//!
//! Example:
//!
//!     ... -> SetIPAddress(18.26.4.1) -> arpq :: ARPQuerier(...);

use super::get_ip_address::DstIpAnno;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

pub struct SetIPAddress {
    addr: Ipv4Addr,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetIPAddress", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetIPAddress, String> {
    let mut a = cx.args();
    let addr = a.read_mp::<Ipv4Addr>("IPADDR");
    let _anno = a.read_p::<DstIpAnno>("ANNO");
    a.complete()?;
    Ok(SetIPAddress { addr })
}

impl Action for SetIPAddress {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.anno_mut().dst_ip = self.addr;
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn sets_annotation_only() {
        let h = harness("SetIPAddress(18.26.4.1)", 1);
        let d = [0x99u8; 20];
        h.push(0, vec![pkt(&d), pkt(&[])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].anno().dst_ip, ip("18.26.4.1"));
        assert_eq!(out[1].anno().dst_ip, ip("18.26.4.1"));
        assert_eq!(out[0].data(), &d[..]);
    }

    #[test]
    fn address_names_and_bad_config() {
        let h = harness("SetIPAddress(me); AddressInfo(me 10.0.0.7)", 1);
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(h.output(0)[0].anno().dst_ip, ip("10.0.0.7"));
        for (bad, want) in [
            (
                "SetIPAddress",
                "e :: SetIPAddress: missing mandatory IPADDR argument",
            ),
            (
                "SetIPAddress(1.2.3)",
                "e :: SetIPAddress: IPADDR: expected IP address, not '1.2.3'",
            ),
            (
                "SetIPAddress(1.2.3.4, FOO)",
                "e :: SetIPAddress: ANNO: expected IP address annotation (DST_IP), not 'FOO'",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
