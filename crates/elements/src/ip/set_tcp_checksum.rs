//! # SetTCPChecksum
//!
//! SetTCPChecksum(\[FIXOFF])
//!
//! Sets TCP packets' checksums.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Input packets should be TCP in IP, with their IP header annotation set
//! (the protocol field is not checked). Calculates the TCP checksum over
//! the IPv4 pseudo-header and the TCP segment (the IP payload), and stores
//! it.
//!
//! Packets that are IP fragments, whose IP lengths do not fit the packet,
//! or whose IP payload is shorter than a TCP header are dropped (counted;
//! a message is printed the first time).
//!
//! Arguments:
//! - `FIXOFF` (boolean, default false): first repair an impossible TCP data
//!   offset: below 20 bytes becomes 20, beyond the segment becomes the
//!   segment length (rounded down to 32-bit words).
//!
//! Example:
//!
//!     ... -> StoreIPAddress(10.0.0.9, dst) -> SetTCPChecksum -> ...;

use super::warn_once;
use paraclick_packet::wire::{Ipv4Header, TcpHeader};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::sync::atomic::AtomicBool;

pub struct SetTCPChecksum {
    fixoff: bool,
    warned: AtomicBool,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["bad TCP packet"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetTCPChecksum", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetTCPChecksum, String> {
    let mut a = cx.args();
    let fixoff = a.read_p::<bool>("FIXOFF").unwrap_or(false);
    a.complete()?;
    Ok(SetTCPChecksum {
        fixoff,
        warned: AtomicBool::new(false),
    })
}

impl SetTCPChecksum {
    /// Sets the TCP checksum of the datagram at `nh`; false if it is not a
    /// whole, unfragmented datagram with room for a TCP header.
    #[inline]
    fn set_checksum(&self, nh: &mut [u8]) -> bool {
        let Ok(mut h) = Ipv4Header::new_checked(nh) else {
            return false;
        };
        if h.is_fragment() {
            return false;
        }
        let (src, dst) = (h.src_addr(), h.dst_addr());
        let seg = h.payload_mut();
        let seg_len = seg.len();
        if seg_len < TcpHeader::<&[u8]>::MIN_LEN {
            return false;
        }
        // At least 20 bytes: every fixed field is in bounds, and the
        // checksum covers the whole segment whatever the data offset says.
        let mut t = TcpHeader::new_unchecked(seg);
        if self.fixoff {
            let off = t.header_len();
            if off < TcpHeader::<&[u8]>::MIN_LEN {
                t.set_data_offset(5);
            } else if off > seg_len {
                t.set_data_offset((seg_len / 4).min(15) as u8);
            }
        }
        t.fill_checksum(src, dst);
        true
    }
}

impl Action for SetTCPChecksum {
    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.network_header_mut()
            .is_some_and(|nh| self.set_checksum(nh))
        {
            Verdict::Out(0)
        } else {
            warn_once(&self.warned, cx, "bad input packet");
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;

    fn tcp(data: &[u8]) -> Vec<u8> {
        Ip::new("10.0.0.1", "10.0.0.2", 0)
            .options(&[1, 1, 1, 1])
            .tcp_full(1, 80, 100, 200, 0x12, 1000, &[2, 4, 5, 0xb4], data)
            .bytes()
    }

    #[test]
    fn sets_checksum() {
        let h = harness("SetTCPChecksum", 1);
        let good = tcp(b"hello");
        let mut zero = good.clone();
        zero[40] = 0;
        zero[41] = 0;
        let mut padded = zero.clone();
        padded.extend_from_slice(&[0xee; 9]);
        h.push(0, vec![marked(&zero), marked(&padded)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &good[..]);
        assert_eq!(&out[1].data()[..good.len()], &good[..]);
        assert_eq!(&out[1].data()[good.len()..], &[0xee; 9]);
    }

    #[test]
    fn bad_packets_dropped() {
        let h = harness("SetTCPChecksum", 1);
        let good = tcp(b"x");
        let frag = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .frag(0x2000)
            .payload(&good[24..])
            .bytes();
        let short = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .payload(&[0; 19])
            .bytes();
        h.push(
            0,
            vec![
                marked(&frag),
                marked(&short),
                marked(&good[..good.len() - 1]),
                pkt(&good),
            ],
        );
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 4);
    }

    #[test]
    fn fixoff() {
        let good = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp_full(1, 2, 3, 4, 0x10, 5, &[], b"abcdefgh")
            .bytes();
        let mut small = good.clone();
        small[32] = 0x20;
        let mut big = good.clone();
        big[32] = 0xf0; // 60 bytes > 28-byte segment
        let h = harness("SetTCPChecksum(FIXOFF true)", 1);
        h.push(0, vec![marked(&small), marked(&big)]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &good[..], "offset repaired to 20");
        let mut want = good.clone();
        want[32] = 0x70; // 28 bytes
        let c = transport_checksum(ip("10.0.0.1"), ip("10.0.0.2"), 6, &want[20..]);
        want[36..38].copy_from_slice(&c.to_be_bytes());
        assert_eq!(out[1].data(), &want[..]);
        // Without FIXOFF the offset stays; the checksum is still set.
        let h = harness("SetTCPChecksum", 1);
        h.push(0, vec![marked(&small)]);
        let out = h.output(0);
        assert_eq!(out[0].data()[32], 0x20);
        let c = transport_checksum(ip("10.0.0.1"), ip("10.0.0.2"), 6, &out[0].data()[20..]);
        assert_eq!(&out[0].data()[36..38], &c.to_be_bytes());
        assert_err(
            try_harness("SetTCPChecksum(maybe)", 1),
            "e :: SetTCPChecksum: FIXOFF: expected boolean (true or false)",
        );
    }
}
