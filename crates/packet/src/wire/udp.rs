//! UDP (RFC 768).

use core::net::Ipv4Addr;

use super::checksum;
use super::ipv4::ip_proto;
use super::{clamped, clamped_mut, get_u16, set_u16, Result, WireError};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

view! {
    /// A view of a UDP datagram: the 8-byte header and the payload.
    ///
    /// After [`UdpHeader::new_checked`] the buffer holds at least the number of
    /// bytes the length field says (it may hold more: the payload and the
    /// checksum stop at the length field).
    UdpHeader,
    /// Wraps `buffer`, checking the lengths (see [`UdpHeader::check_len`]).
}

impl<T: AsRef<[u8]>> UdpHeader<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = 8;

    /// `Truncated` if the buffer is shorter than the header or than the
    /// length field, `BadLength` if the length field is below 8.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < Self::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < Self::HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if len < field_len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length of header and payload, as carried.
    #[inline]
    pub fn len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// True if the length field is zero (never, once checked).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checksum, as carried (0: none).
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The payload, from byte 8 to the length field.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(
            self.buffer.as_ref(),
            Self::HEADER_LEN,
            usize::from(self.len()),
        )
    }

    /// Checksum over the pseudo-header, the header and the payload as they
    /// are now (the checksum field included), folded, not complemented.
    #[inline]
    fn full_sum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u16 {
        let len = self.len();
        let data = clamped(self.buffer.as_ref(), 0, usize::from(len));
        checksum::add(
            checksum::pseudo_header_sum(src, dst, ip_proto::UDP, len),
            checksum::sum(data),
        )
    }

    /// True if the checksum is absent (zero) or verifies with the IPv4
    /// pseudo-header of `src` and `dst`.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        self.checksum() == 0 || self.full_sum(src, dst) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpHeader<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::SRC_PORT, v);
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::DST_PORT, v);
    }

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// The payload, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        clamped_mut(self.buffer.as_mut(), Self::HEADER_LEN, end)
    }

    /// Applies an incremental update to a present checksum; an absent (zero)
    /// one stays absent, and a zero result is stored as `0xFFFF`.
    #[inline]
    fn adjust_checksum(&mut self, f: impl FnOnce(u16) -> u16) {
        let c = self.checksum();
        if c != 0 {
            let n = f(c);
            self.set_checksum(if n == 0 { 0xffff } else { n });
        }
    }

    /// Sets the source port and updates the checksum incrementally.
    #[inline]
    pub fn update_src_port(&mut self, port: u16) {
        let old = self.src_port();
        self.set_src_port(port);
        self.adjust_checksum(|c| checksum::update_u16(c, old, port));
    }

    /// Sets the destination port and updates the checksum incrementally.
    #[inline]
    pub fn update_dst_port(&mut self, port: u16) {
        let old = self.dst_port();
        self.set_dst_port(port);
        self.adjust_checksum(|c| checksum::update_u16(c, old, port));
    }

    /// Updates the checksum for a change of an address in the IPv4
    /// pseudo-header (the IP header itself is the caller's business).
    #[inline]
    pub fn update_checksum_for_addr(&mut self, old: Ipv4Addr, new: Ipv4Addr) {
        self.adjust_checksum(|c| checksum::update_addr(c, old, new));
    }

    /// Computes the checksum with the IPv4 pseudo-header and stores it; a
    /// computed zero is sent as `0xFFFF` (zero means "no checksum").
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let c = !self.full_sum(src, dst);
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for UdpHeader<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of a UDP header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Length of the payload (length field minus 8).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Reads a view, checking the lengths and, if present, the checksum
    /// with the pseudo-header of `src` and `dst` (`BadChecksum`).
    pub fn parse<T: AsRef<[u8]>>(h: &UdpHeader<T>, src: Ipv4Addr, dst: Ipv4Addr) -> Result<Self> {
        h.check_len()?;
        if !h.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(UdpRepr {
            src_port: h.src_port(),
            dst_port: h.dst_port(),
            payload_len: usize::from(h.len()) - UdpHeader::<T>::HEADER_LEN,
        })
    }

    /// Length of header and payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        8 + self.payload_len
    }

    /// Writes the ports and the length, and zeroes the checksum. Write the
    /// payload, then call [`UdpHeader::fill_checksum`] (or leave the
    /// checksum zero: none).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut UdpHeader<T>) {
        debug_assert!(self.payload_len <= 65535 - 8);
        h.set_src_port(self.src_port);
        h.set_dst_port(self.dst_port);
        h.set_len((8 + self.payload_len) as u16);
        h.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TestRng;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 199);

    // 1234 -> 53, length 12, payload "hi!?".
    fn datagram() -> Vec<u8> {
        vec![
            0x04, 0xd2, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, b'h', b'i', b'!', b'?',
        ]
    }

    /// Checksum computed the long way: build the pseudo-header bytes.
    fn reference_checksum(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
        let mut v = Vec::new();
        v.extend_from_slice(&src.octets());
        v.extend_from_slice(&dst.octets());
        v.extend_from_slice(&[0, 17]);
        v.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        v.extend_from_slice(udp);
        let c = checksum::checksum(&v);
        if c == 0 {
            0xffff
        } else {
            c
        }
    }

    #[test]
    fn getters() {
        let buf = datagram();
        let h = UdpHeader::new_checked(&buf[..]).unwrap();
        assert_eq!(h.src_port(), 1234);
        assert_eq!(h.dst_port(), 53);
        assert_eq!(h.len(), 12);
        assert!(!h.is_empty());
        assert_eq!(h.checksum(), 0);
        assert_eq!(h.payload(), b"hi!?");
        assert!(h.verify_checksum(SRC, DST), "zero checksum: none");
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = datagram();
        let mut h = UdpHeader::new_checked(&mut buf[..]).unwrap();
        h.set_src_port(1);
        assert_eq!(h.src_port(), 1);
        h.set_dst_port(65535);
        assert_eq!(h.dst_port(), 65535);
        h.set_len(10);
        assert_eq!(h.len(), 10);
        assert_eq!(h.payload(), b"hi");
        h.payload_mut().copy_from_slice(b"yo");
        h.set_checksum(0x4321);
        assert_eq!(h.checksum(), 0x4321);
        assert_eq!(&h.into_inner()[..10], b"\x00\x01\xff\xff\x00\x0a\x43\x21yo");
    }

    #[test]
    fn checksum_fill_verify() {
        let mut buf = datagram();
        let mut h = UdpHeader::new_checked(&mut buf[..]).unwrap();
        h.fill_checksum(SRC, DST);
        let expect = reference_checksum(SRC, DST, &datagram());
        assert_eq!(h.checksum(), expect);
        assert!(h.verify_checksum(SRC, DST));
        assert!(!h.verify_checksum(SRC, Ipv4Addr::new(192, 168, 0, 198)));
        h.payload_mut()[0] ^= 0x40;
        assert!(!h.verify_checksum(SRC, DST));
    }

    #[test]
    fn checksum_random_and_trailing_bytes() {
        let mut rng = TestRng::new(21);
        for _ in 0..500 {
            let plen = rng.below(64);
            let pad = rng.below(4);
            let mut buf = rng.bytes(8 + plen + pad);
            buf[4..6].copy_from_slice(&((8 + plen) as u16).to_be_bytes());
            let src = Ipv4Addr::from(rng.next_u64() as u32);
            let dst = Ipv4Addr::from(rng.next_u64() as u32);
            let mut h = UdpHeader::new_checked(&mut buf[..]).unwrap();
            h.fill_checksum(src, dst);
            assert!(h.verify_checksum(src, dst));
            let c = h.checksum();
            assert_ne!(c, 0);
            let mut copy = buf[..8 + plen].to_vec();
            copy[6] = 0;
            copy[7] = 0;
            assert_eq!(c, reference_checksum(src, dst, &copy));
        }
    }

    #[test]
    fn zero_checksum_sent_as_ffff() {
        // Find a payload whose checksum computes to zero: choose the last
        // two bytes so that the total sums to 0xffff.
        let mut buf = vec![0u8, 1, 0, 2, 0, 12, 0, 0, 0, 0, 0, 0];
        let partial = {
            let h = UdpHeader::new_unchecked(&buf[..]);
            h.full_sum(SRC, DST)
        };
        let fix = !partial;
        buf[10..12].copy_from_slice(&fix.to_be_bytes());
        let mut h = UdpHeader::new_checked(&mut buf[..]).unwrap();
        h.fill_checksum(SRC, DST);
        assert_eq!(h.checksum(), 0xffff);
        assert!(h.verify_checksum(SRC, DST));
    }

    #[test]
    fn nat_style_incremental_update() {
        let mut rng = TestRng::new(22);
        for _ in 0..300 {
            let mut buf = datagram();
            let mut h = UdpHeader::new_checked(&mut buf[..]).unwrap();
            h.fill_checksum(SRC, DST);
            let new_dst = Ipv4Addr::from(rng.next_u64() as u32);
            h.update_checksum_for_addr(DST, new_dst);
            h.update_src_port(rng.next_u64() as u16);
            h.update_dst_port(rng.next_u64() as u16);
            assert!(h.verify_checksum(SRC, new_dst));
            assert_ne!(h.checksum(), 0);
        }
        // An absent checksum stays absent.
        let mut buf = datagram();
        let mut h = UdpHeader::new_checked(&mut buf[..]).unwrap();
        h.update_checksum_for_addr(SRC, DST);
        h.update_src_port(9);
        h.update_dst_port(10);
        assert_eq!(h.checksum(), 0);
        assert_eq!((h.src_port(), h.dst_port()), (9, 10));
    }

    #[test]
    fn length_errors() {
        let buf = datagram();
        for len in 0..8 {
            assert_eq!(
                UdpHeader::new_checked(&buf[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        assert_eq!(
            UdpHeader::new_checked(&buf[..11]).unwrap_err(),
            WireError::Truncated
        );
        let mut b = buf.clone();
        b[5] = 7;
        assert_eq!(
            UdpHeader::new_checked(&b[..]).unwrap_err(),
            WireError::BadLength
        );
        // A longer buffer is fine; the payload stops at the length field.
        let mut b = buf.clone();
        b.extend_from_slice(&[0; 6]);
        assert_eq!(UdpHeader::new_checked(&b[..]).unwrap().payload(), b"hi!?");
    }

    #[test]
    fn repr_round_trip() {
        let mut buf = datagram();
        UdpHeader::new_unchecked(&mut buf[..]).fill_checksum(SRC, DST);
        let h = UdpHeader::new_checked(&buf[..]).unwrap();
        let r = UdpRepr::parse(&h, SRC, DST).unwrap();
        assert_eq!(
            r,
            UdpRepr {
                src_port: 1234,
                dst_port: 53,
                payload_len: 4
            }
        );
        assert_eq!(r.buffer_len(), 12);
        assert_eq!(
            UdpRepr::parse(&h, DST, SRC).map(|_| ()),
            Ok(()),
            "swapping the addresses keeps the sum"
        );
        assert_eq!(
            UdpRepr::parse(&h, SRC, Ipv4Addr::LOCALHOST),
            Err(WireError::BadChecksum)
        );
        let mut out = vec![0xaau8; 12];
        let mut v = UdpHeader::new_unchecked(&mut out[..]);
        r.emit(&mut v);
        v.payload_mut().copy_from_slice(b"hi!?");
        v.fill_checksum(SRC, DST);
        assert_eq!(out, buf);
    }
}
