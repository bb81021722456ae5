//! # SetUDPChecksum
//!
//! SetUDPChecksum()
//!
//! Sets UDP packets' checksums.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Input packets must be UDP in IP, with their IP header annotation set
//! (the protocol field is not checked). Calculates the UDP checksum over
//! the IPv4 pseudo-header, the UDP header and the data the UDP length field
//! covers, and stores it (a computed zero is sent as 0xFFFF, zero meaning
//! "no checksum").
//!
//! Packets that are IP fragments, whose IP lengths do not fit the packet,
//! or whose UDP length is below 8 or longer than the IP payload go to
//! output 1 if it is connected, and are otherwise dropped with a message
//! (the first time).
//!
//! Example:
//!
//!     ... -> UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 53, CHECKSUM false)
//!         -> StoreIPAddress(3.0.0.3, dst) -> SetUDPChecksum -> ...;

use super::warn_once;
use paraclick_packet::wire::{Ipv4Header, UdpHeader};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::sync::atomic::AtomicBool;

pub struct SetUDPChecksum {
    error_out: Verdict,
    warned: AtomicBool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["bad UDP packet"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetUDPChecksum", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetUDPChecksum, String> {
    cx.args().complete()?;
    Ok(SetUDPChecksum {
        error_out: if cx.noutputs >= 2 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
        warned: AtomicBool::new(false),
    })
}

/// Sets the UDP checksum of the datagram at `nh`; false if it is not a
/// whole, unfragmented UDP datagram.
#[inline]
fn set_checksum(nh: &mut [u8]) -> bool {
    let Ok(mut h) = Ipv4Header::new_checked(nh) else {
        return false;
    };
    if h.is_fragment() {
        return false;
    }
    let (src, dst) = (h.src_addr(), h.dst_addr());
    let seg = h.payload_mut();
    let ulen = match seg.get(4..6) {
        Some(l) => usize::from(u16::from_be_bytes([l[0], l[1]])),
        None => return false,
    };
    let Some(datagram) = seg.get_mut(..ulen) else {
        return false;
    };
    match UdpHeader::new_checked(datagram) {
        Ok(mut u) => {
            u.fill_checksum(src, dst);
            true
        }
        Err(_) => false,
    }
}

impl Action for SetUDPChecksum {
    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.network_header_mut().is_some_and(set_checksum) {
            Verdict::Out(0)
        } else {
            warn_once(&self.warned, cx, "bad input packet");
            self.error_out
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;

    #[test]
    fn sets_checksum() {
        let h = harness("SetUDPChecksum", 2);
        let good = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .options(&[1, 1, 1, 1])
            .udp(1234, 53, b"query")
            .bytes();
        let mut zero = good.clone();
        zero[30] = 0;
        zero[31] = 0;
        let mut junk = good.clone();
        junk[30] = 0xab;
        // Ethernet padding after the datagram is not summed.
        let mut padded = zero.clone();
        padded.extend_from_slice(&[0xff; 6]);
        h.push(0, vec![marked(&zero), marked(&junk), marked(&padded)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &good[..]);
        assert_eq!(out[1].data(), &good[..]);
        assert_eq!(&out[2].data()[..good.len()], &good[..]);
        assert_eq!(&out[2].data()[good.len()..], &[0xff; 6]);
    }

    #[test]
    fn zero_sum_sent_as_ffff() {
        // Find a payload whose checksum computes to zero.
        let h = harness("SetUDPChecksum", 2);
        for x in 0..=0xffffu16 {
            let d = Ip::new("10.0.0.1", "10.0.0.2", 0)
                .udp(1, 2, &x.to_be_bytes())
                .bytes();
            if d[26..28] == [0xff, 0xff] {
                let mut z = d.clone();
                z[26] = 0;
                z[27] = 0;
                h.push(0, vec![marked(&z)]);
                assert_eq!(h.output(0)[0].data(), &d[..]);
                return;
            }
        }
        panic!("no zero checksum found");
    }

    #[test]
    fn bad_packets() {
        let h = harness("SetUDPChecksum", 2);
        let good = Ip::new("10.0.0.1", "10.0.0.2", 0).udp(1, 2, b"abc").bytes();
        let frag = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .frag(0x2000)
            .payload(&good[20..])
            .bytes();
        let mut long = good.clone();
        long[24..26].copy_from_slice(&12u16.to_be_bytes());
        let mut short = good.clone();
        short[24..26].copy_from_slice(&7u16.to_be_bytes());
        let tiny = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .payload(&[0; 5])
            .bytes();
        h.push(
            0,
            vec![
                marked(&frag),
                marked(&long),
                marked(&short),
                marked(&tiny),
                marked(&good[..good.len() - 1]),
                pkt(&good),
            ],
        );
        assert!(h.output(0).is_empty());
        let bad = h.output(1);
        assert_eq!(bad.len(), 6);
        assert_eq!(bad[0].data(), &frag[..], "unchanged");
        let h = harness("SetUDPChecksum", 1);
        h.push(0, vec![marked(&frag)]);
        assert_eq!(h.drops(), 1);
    }
}
