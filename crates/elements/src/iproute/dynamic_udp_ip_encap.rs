//! # DynamicUDPIPEncap
//!
//! DynamicUDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM, INTERVAL])
//!
//! Encapsulates packets in dynamic UDP/IP headers.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! The same element as UDPIPEncap (same headers, checksums, `DST_ANNO`,
//! drops and handlers), except that SPORT and DPORT are both incremented by
//! 1 every INTERVAL packets: packets 0 to INTERVAL-1 carry SPORT and DPORT,
//! the next INTERVAL carry SPORT+1 and DPORT+1, and so on (ports wrap at
//! 65535). INTERVAL 0 (the default) means never increment. The packet
//! count is shared by all threads. The `sport` and `dport` handlers read
//! and set the base ports the increments are added to.
//!
//! Example:
//!
//!     DynamicUDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 1234, 1, 10)

use super::udp_ip_encap::{make_encap, UDPIPEncap};
use paraclick_runtime::{ClassSpec, ConfigCx};

pub fn spec() -> ClassSpec {
    ClassSpec::action("DynamicUDPIPEncap", "1/1", "a", make)
        .shared("one IP ID sequence for all packets")
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<UDPIPEncap, String> {
    make_encap(cx, true)
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{harness, header, ip, try_harness};
    use paraclick_packet::wire::UdpHeader;
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;

    fn ports(out: &[Packet]) -> Vec<(u16, u16)> {
        out.iter()
            .map(|p| {
                let u = UdpHeader::new_checked(p.transport_header().unwrap()).unwrap();
                assert!(u.verify_checksum(ip("1.0.0.1"), ip("2.0.0.2")));
                assert!(header(p).verify_checksum());
                (u.src_port(), u.dst_port())
            })
            .collect()
    }

    fn packets(n: usize) -> Vec<Packet> {
        (0..n)
            .map(|i| Packet::from_slice(&[i as u8; 5]).unwrap())
            .collect()
    }

    #[test]
    fn ports_advance_every_interval() {
        let h = harness("DynamicUDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 80, 1, 3)", 1);
        h.push(0, packets(4));
        h.push(0, packets(3));
        let got = ports(&h.output(0));
        assert_eq!(
            got,
            [
                (1234, 80),
                (1234, 80),
                (1234, 80),
                (1235, 81),
                (1235, 81),
                (1235, 81),
                (1236, 82)
            ]
        );
    }

    #[test]
    fn interval_zero_wrap_and_base_handler() {
        let h = harness("DynamicUDPIPEncap(1.0.0.1, 7, 2.0.0.2, 9)", 1);
        h.push(0, packets(3));
        assert_eq!(ports(&h.output(0)), [(7, 9); 3]);
        let h = harness("DynamicUDPIPEncap(1.0.0.1, 65535, 2.0.0.2, 9, true, 1)", 1);
        h.push(0, packets(2));
        assert_eq!(ports(&h.output(0)), [(65535, 9), (0, 10)]);
        h.write("sport", "100").unwrap();
        assert_eq!(h.read("sport").unwrap(), "100");
        h.push(0, packets(1));
        assert_eq!(ports(&h.output(0)).last(), Some(&(102, 11)));
    }

    #[test]
    fn bad_arguments() {
        assert_err(
            try_harness("DynamicUDPIPEncap(1.0.0.1, 1, 2.0.0.2, 1, true, -1)", 1),
            "e :: DynamicUDPIPEncap: INTERVAL: expected unsigned integer",
        );
        assert_err(
            try_harness("DynamicUDPIPEncap(1.0.0.1, 1, 2.0.0.2)", 1),
            "e :: DynamicUDPIPEncap: missing mandatory DPORT argument",
        );
        assert_err(
            try_harness("UDPIPEncap(1.0.0.1, 1, 2.0.0.2, 1, true, 5)", 1),
            "e :: UDPIPEncap: too many arguments ('5')",
        );
    }
}
