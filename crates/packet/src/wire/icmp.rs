//! ICMP for IPv4 (RFC 792, RFC 1191 for the next-hop MTU).

use core::net::Ipv4Addr;

use super::checksum;
use super::{clamped, clamped_mut, get_u16, get_u32, set_u16, set_u32, Result, WireError};

/// ICMP message types.
pub mod icmp_type {
    pub const ECHO_REPLY: u8 = 0;
    pub const DEST_UNREACH: u8 = 3;
    pub const SOURCE_QUENCH: u8 = 4;
    pub const REDIRECT: u8 = 5;
    pub const ECHO_REQUEST: u8 = 8;
    pub const ROUTER_ADVERT: u8 = 9;
    pub const ROUTER_SOLICIT: u8 = 10;
    pub const TIME_EXCEEDED: u8 = 11;
    pub const PARAM_PROBLEM: u8 = 12;
    pub const TIMESTAMP: u8 = 13;
    pub const TIMESTAMP_REPLY: u8 = 14;
    pub const INFO_REQUEST: u8 = 15;
    pub const INFO_REPLY: u8 = 16;
    pub const MASK_REQUEST: u8 = 17;
    pub const MASK_REPLY: u8 = 18;
}

/// Codes of Destination Unreachable (type 3).
pub mod unreach {
    pub const NET: u8 = 0;
    pub const HOST: u8 = 1;
    pub const PROTOCOL: u8 = 2;
    pub const PORT: u8 = 3;
    /// Fragmentation needed and DF set; carries the next-hop MTU.
    pub const NEEDFRAG: u8 = 4;
    pub const SRCROUTE_FAIL: u8 = 5;
    pub const NET_UNKNOWN: u8 = 6;
    pub const HOST_UNKNOWN: u8 = 7;
    pub const ISOLATED: u8 = 8;
    pub const NET_PROHIB: u8 = 9;
    pub const HOST_PROHIB: u8 = 10;
    pub const TOS_NET: u8 = 11;
    pub const TOS_HOST: u8 = 12;
    pub const FILTER_PROHIB: u8 = 13;
    pub const HOST_PRECEDENCE: u8 = 14;
    pub const PRECEDENCE_CUTOFF: u8 = 15;
}

/// Codes of Redirect (type 5).
pub mod redirect {
    pub const NET: u8 = 0;
    pub const HOST: u8 = 1;
    pub const TOS_NET: u8 = 2;
    pub const TOS_HOST: u8 = 3;
}

/// Codes of Time Exceeded (type 11).
pub mod time_exceeded {
    /// TTL exceeded in transit.
    pub const TRANSIT: u8 = 0;
    /// Fragment reassembly time exceeded.
    pub const REASSEMBLY: u8 = 1;
}

/// Codes of Parameter Problem (type 12).
pub mod param_problem {
    /// The pointer field indicates the error.
    pub const POINTER: u8 = 0;
    /// A required option is missing.
    pub const OPTION_ABSENT: u8 = 1;
    /// Bad length.
    pub const BAD_LENGTH: u8 = 2;
}

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const REST: usize = 4;
    pub const IDENT: usize = 4;
    pub const SEQ: usize = 6;
    pub const POINTER: usize = 4;
    pub const MTU: usize = 6;
}

view! {
    /// A view of an ICMP message: the 8-byte header and the data after it.
    ///
    /// The checksum covers the whole buffer, so the buffer must be exactly the
    /// ICMP message (the IP payload), not more.
    IcmpHeader,
    /// Wraps `buffer`, checking that it holds the 8-byte header.
}

impl<T: AsRef<[u8]>> IcmpHeader<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = 8;

    /// `Err(Truncated)` if the buffer is shorter than the header.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Message type (see [`icmp_type`]).
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum, as carried.
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The second 32-bit word of the header, whatever the type.
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::REST)
    }

    /// Identifier (echo, timestamp, information, mask messages).
    #[inline]
    pub fn ident(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// Sequence number (echo, timestamp, information, mask messages).
    #[inline]
    pub fn seq(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SEQ)
    }

    /// Next-hop MTU (Destination Unreachable, Fragmentation Needed).
    #[inline]
    pub fn next_hop_mtu(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::MTU)
    }

    /// Pointer to the offending byte (Parameter Problem).
    #[inline]
    pub fn pointer(&self) -> u8 {
        self.buffer.as_ref()[field::POINTER]
    }

    /// Gateway address (Redirect).
    #[inline]
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.rest_of_header())
    }

    /// The data after the 8-byte header (for error messages: the offending
    /// datagram's IP header and first bytes).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), Self::HEADER_LEN, usize::MAX)
    }

    /// True for the error messages (destination unreachable, source quench,
    /// redirect, time exceeded, parameter problem), to which no ICMP error
    /// may be sent in reply.
    #[inline]
    pub fn is_error(&self) -> bool {
        matches!(
            self.msg_type(),
            icmp_type::DEST_UNREACH
                | icmp_type::SOURCE_QUENCH
                | icmp_type::REDIRECT
                | icmp_type::TIME_EXCEEDED
                | icmp_type::PARAM_PROBLEM
        )
    }

    /// True if the whole message sums to `0xFFFF`.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpHeader<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }

    /// Sets the code.
    #[inline]
    pub fn set_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets the second 32-bit word.
    #[inline]
    pub fn set_rest_of_header(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::REST, v);
    }

    /// Sets the identifier.
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::IDENT, v);
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Sets the next-hop MTU (the unused half-word before it is left alone).
    #[inline]
    pub fn set_next_hop_mtu(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::MTU, v);
    }

    /// Sets the pointer (the three unused bytes after it are left alone).
    #[inline]
    pub fn set_pointer(&mut self, v: u8) {
        self.buffer.as_mut()[field::POINTER] = v;
    }

    /// Sets the gateway address.
    #[inline]
    pub fn set_gateway(&mut self, a: Ipv4Addr) {
        self.set_rest_of_header(u32::from(a));
    }

    /// The data after the header, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        clamped_mut(self.buffer.as_mut(), Self::HEADER_LEN, usize::MAX)
    }

    /// Computes the checksum over the whole message and stores it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for IcmpHeader<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // An echo request (ident 0x1234, seq 1) with payload "abcd", checksum
    // computed by hand: 0800 + 1234 + 0001 + 6162 + 6364 = defb, whose
    // complement is 2104.
    const ECHO: [u8; 12] = [
        8, 0, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn echo_getters_and_checksum() {
        let h = IcmpHeader::new_checked(&ECHO[..]).unwrap();
        assert_eq!(h.msg_type(), icmp_type::ECHO_REQUEST);
        assert_eq!(h.code(), 0);
        assert_eq!(h.checksum(), 0x2104);
        assert_eq!(h.ident(), 0x1234);
        assert_eq!(h.seq(), 1);
        assert_eq!(h.rest_of_header(), 0x1234_0001);
        assert_eq!(h.payload(), b"abcd");
        assert!(!h.is_error());
        assert!(h.verify_checksum());
        let mut buf = ECHO;
        let mut h = IcmpHeader::new_checked(&mut buf[..]).unwrap();
        h.set_checksum(0);
        assert!(!h.verify_checksum());
        h.fill_checksum();
        assert_eq!(h.checksum(), 0x2104);
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = [0u8; 36];
        let mut h = IcmpHeader::new_checked(&mut buf[..]).unwrap();
        h.set_msg_type(icmp_type::ECHO_REPLY);
        assert_eq!(h.msg_type(), 0);
        h.set_code(7);
        assert_eq!(h.code(), 7);
        h.set_checksum(0xabcd);
        assert_eq!(h.checksum(), 0xabcd);
        h.set_ident(0xfeed);
        assert_eq!(h.ident(), 0xfeed);
        h.set_seq(0xface);
        assert_eq!(h.seq(), 0xface);
        assert_eq!(h.rest_of_header(), 0xfeed_face);
        h.set_rest_of_header(0);
        h.set_msg_type(icmp_type::DEST_UNREACH);
        h.set_code(unreach::NEEDFRAG);
        h.set_next_hop_mtu(1400);
        assert_eq!(h.next_hop_mtu(), 1400);
        assert_eq!(h.rest_of_header(), 1400);
        assert!(h.is_error());
        h.set_rest_of_header(0);
        h.set_msg_type(icmp_type::PARAM_PROBLEM);
        h.set_pointer(20);
        assert_eq!(h.pointer(), 20);
        assert_eq!(h.rest_of_header(), 20 << 24);
        h.set_msg_type(icmp_type::REDIRECT);
        h.set_gateway(Ipv4Addr::new(10, 0, 0, 254));
        assert_eq!(h.gateway(), Ipv4Addr::new(10, 0, 0, 254));
        h.payload_mut()[0] = 0x45;
        assert_eq!(h.payload().len(), 28);
        assert_eq!(h.payload()[0], 0x45);
        h.fill_checksum();
        assert!(h.verify_checksum());
        assert_eq!(h.into_inner()[8], 0x45);
    }

    #[test]
    fn odd_length_checksum() {
        let mut buf = [8u8, 0, 0, 0, 0, 1, 0, 2, 0xff];
        let mut h = IcmpHeader::new_checked(&mut buf[..]).unwrap();
        h.fill_checksum();
        assert!(h.verify_checksum());
    }

    #[test]
    fn error_types() {
        let mut buf = [0u8; 8];
        for t in 0..=255u8 {
            let mut h = IcmpHeader::new_unchecked(&mut buf[..]);
            h.set_msg_type(t);
            assert_eq!(h.is_error(), matches!(t, 3 | 4 | 5 | 11 | 12), "{t}");
        }
    }

    #[test]
    fn truncated() {
        for len in 0..8 {
            assert_eq!(
                IcmpHeader::new_checked(&ECHO[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        assert!(IcmpHeader::new_checked(&ECHO[..8])
            .unwrap()
            .payload()
            .is_empty());
    }
}
