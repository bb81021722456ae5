//! ICMPv6 (RFC 4443) and neighbour discovery (RFC 4861): the message view,
//! its pseudo-header checksum, neighbour solicitation and advertisement
//! with their options, and `NdRepr`.

use core::net::Ipv6Addr;

use super::ipv6::{pseudo_header_sum, upper_layer_checksum};
use super::{checksum, EtherAddr};
use super::{clamped, clamped_mut, get_u16, get_u32, set_u16, set_u32, Result, WireError};

/// ICMPv6 message types.
pub mod icmpv6_type {
    pub const DEST_UNREACH: u8 = 1;
    pub const PACKET_TOO_BIG: u8 = 2;
    pub const TIME_EXCEEDED: u8 = 3;
    pub const PARAM_PROBLEM: u8 = 4;
    pub const ECHO_REQUEST: u8 = 128;
    pub const ECHO_REPLY: u8 = 129;
    pub const ROUTER_SOLICIT: u8 = 133;
    pub const ROUTER_ADVERT: u8 = 134;
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    pub const NEIGHBOR_ADVERT: u8 = 136;
    pub const REDIRECT: u8 = 137;
}

/// Codes of Destination Unreachable (type 1).
pub mod unreach6 {
    pub const NO_ROUTE: u8 = 0;
    pub const ADMIN_PROHIBITED: u8 = 1;
    pub const BEYOND_SCOPE: u8 = 2;
    pub const ADDR: u8 = 3;
    pub const PORT: u8 = 4;
    pub const SOURCE_POLICY: u8 = 5;
    pub const REJECT_ROUTE: u8 = 6;
}

/// Codes of Time Exceeded (type 3).
pub mod time_exceeded6 {
    pub const HOP_LIMIT: u8 = 0;
    pub const REASSEMBLY: u8 = 1;
}

/// Codes of Parameter Problem (type 4).
pub mod param_problem6 {
    pub const HEADER_FIELD: u8 = 0;
    pub const NEXT_HEADER: u8 = 1;
    pub const OPTION: u8 = 2;
}

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const REST: usize = 4;
    pub const IDENT: usize = 4;
    pub const SEQ: usize = 6;
    pub const TARGET: usize = 8;
    pub const ND_OPTIONS: usize = 24;
}

/// Neighbour advertisement flags (the top bits of the fifth byte).
pub mod nd_flags {
    pub const ROUTER: u8 = 0x80;
    pub const SOLICITED: u8 = 0x40;
    pub const OVERRIDE: u8 = 0x20;
}

view! {
    /// A view of an ICMPv6 message: the 8-byte header and what follows.
    ///
    /// The buffer must be exactly the message (the upper-layer payload): the
    /// checksum covers all of it.
    Icmpv6Header,
    /// Wraps `buffer`, checking that it holds the 8-byte header and, for a
    /// neighbour solicitation or advertisement, the 16-byte target too.
}

impl<T: AsRef<[u8]>> Icmpv6Header<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = 8;
    /// Length of a neighbour solicitation or advertisement without options.
    pub const ND_LEN: usize = 24;

    /// See [`Icmpv6Header::new_checked`].
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < Self::HEADER_LEN || (self.is_nd() && len < Self::ND_LEN) {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Message type (see [`icmpv6_type`]).
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

    /// The second 32-bit word, whatever the type (the MTU of packet too
    /// big, the pointer of parameter problem).
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::REST)
    }

    /// MTU (packet too big).
    #[inline]
    pub fn mtu(&self) -> u32 {
        self.rest_of_header()
    }

    /// Pointer to the offending octet (parameter problem).
    #[inline]
    pub fn pointer(&self) -> u32 {
        self.rest_of_header()
    }

    /// Identifier (echo).
    #[inline]
    pub fn ident(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// Sequence number (echo).
    #[inline]
    pub fn seq(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SEQ)
    }

    /// Neighbour advertisement flags (see [`nd_flags`]).
    #[inline]
    pub fn nd_flags(&self) -> u8 {
        self.buffer.as_ref()[field::REST]
    }

    /// True for neighbour solicitations and advertisements.
    #[inline]
    pub fn is_nd(&self) -> bool {
        matches!(
            self.msg_type(),
            icmpv6_type::NEIGHBOR_SOLICIT | icmpv6_type::NEIGHBOR_ADVERT
        )
    }

    /// Target address of a neighbour solicitation or advertisement
    /// (unspecified for other types or a short buffer).
    #[inline]
    pub fn target(&self) -> Ipv6Addr {
        let b = self.buffer.as_ref();
        match b.get(field::TARGET..field::TARGET + 16) {
            Some(t) => {
                let mut a = [0u8; 16];
                a.copy_from_slice(t);
                Ipv6Addr::from(a)
            }
            None => Ipv6Addr::UNSPECIFIED,
        }
    }

    /// The data after the 8-byte header (an error's invoking packet, an
    /// echo's data).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), Self::HEADER_LEN, usize::MAX)
    }

    /// The options of a neighbour discovery message.
    #[inline]
    pub fn nd_options(&self) -> NdOptionIter<'_> {
        NdOptionIter {
            data: clamped(self.buffer.as_ref(), field::ND_OPTIONS, usize::MAX),
            at: 0,
            done: false,
        }
    }

    /// True for error messages (types below 128), to which no ICMPv6 error
    /// may be sent (RFC 4443 §2.4 (e)).
    #[inline]
    pub fn is_error(&self) -> bool {
        self.msg_type() < 128
    }

    /// True if the checksum verifies under the pseudo-header.
    #[inline]
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        let b = self.buffer.as_ref();
        let ph = pseudo_header_sum(src, dst, super::ipv6::next_header::ICMPV6, b.len() as u32);
        checksum::add(ph, checksum::sum(b)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Header<T> {
    /// Sets the type.
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

    /// Sets the second 32-bit word (MTU, pointer, flags and reserved).
    #[inline]
    pub fn set_rest_of_header(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::REST, v);
    }

    /// Sets the identifier (echo).
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::IDENT, v);
    }

    /// Sets the sequence number (echo).
    #[inline]
    pub fn set_seq(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Sets the target address (does nothing if the buffer is too short).
    #[inline]
    pub fn set_target(&mut self, a: Ipv6Addr) {
        if let Some(t) = self
            .buffer
            .as_mut()
            .get_mut(field::TARGET..field::TARGET + 16)
        {
            t.copy_from_slice(&a.octets());
        }
    }

    /// The data after the header, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        clamped_mut(self.buffer.as_mut(), Self::HEADER_LEN, usize::MAX)
    }

    /// Computes the checksum under the pseudo-header and stores it.
    #[inline]
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        self.set_checksum(0);
        let c = upper_layer_checksum(
            src,
            dst,
            super::ipv6::next_header::ICMPV6,
            self.buffer.as_ref(),
        );
        self.set_checksum(c);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Icmpv6Header<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// Neighbour discovery option types.
pub mod nd_opt {
    pub const SOURCE_LL_ADDR: u8 = 1;
    pub const TARGET_LL_ADDR: u8 = 2;
    pub const PREFIX_INFO: u8 = 3;
    pub const REDIRECTED_HEADER: u8 = 4;
    pub const MTU: u8 = 5;
}

/// One neighbour discovery option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdOption<'a> {
    /// Source link-layer address (Ethernet).
    SourceLinkAddr(EtherAddr),
    /// Target link-layer address (Ethernet).
    TargetLinkAddr(EtherAddr),
    /// MTU.
    Mtu(u32),
    /// Any other option: its type and the bytes after the length byte.
    Unknown { kind: u8, data: &'a [u8] },
}

/// Iterator over neighbour discovery options (8-byte units, RFC 4861
/// §4.6). A zero length or one running past the message yields one
/// `Err(Malformed)` and ends the walk (RFC 4861 says to discard such a
/// message). Never panics.
#[derive(Debug, Clone)]
pub struct NdOptionIter<'a> {
    data: &'a [u8],
    at: usize,
    done: bool,
}

impl<'a> NdOptionIter<'a> {
    /// Iterates over an options area.
    pub fn new(data: &'a [u8]) -> Self {
        NdOptionIter {
            data,
            at: 0,
            done: false,
        }
    }
}

impl<'a> Iterator for NdOptionIter<'a> {
    type Item = Result<NdOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.at >= self.data.len() {
            return None;
        }
        let rest = &self.data[self.at..];
        let len = rest.get(1).map_or(0, |&l| usize::from(l) * 8);
        if len == 0 || len > rest.len() {
            self.done = true;
            return Some(Err(WireError::Malformed));
        }
        let o = &rest[..len];
        self.at += len;
        let item = match o[0] {
            nd_opt::SOURCE_LL_ADDR | nd_opt::TARGET_LL_ADDR if len == 8 => {
                let e = EtherAddr([o[2], o[3], o[4], o[5], o[6], o[7]]);
                if o[0] == nd_opt::SOURCE_LL_ADDR {
                    NdOption::SourceLinkAddr(e)
                } else {
                    NdOption::TargetLinkAddr(e)
                }
            }
            nd_opt::MTU if len == 8 => NdOption::Mtu(get_u32(o, 4)),
            kind => NdOption::Unknown {
                kind,
                data: &o[2..],
            },
        };
        Some(Ok(item))
    }
}

impl core::iter::FusedIterator for NdOptionIter<'_> {}

/// A neighbour solicitation or advertisement as plain values (Ethernet
/// link-layer addresses; other options are ignored on parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdRepr {
    NeighborSolicit {
        target: Ipv6Addr,
        /// The source link-layer address option, if present.
        lladdr: Option<EtherAddr>,
    },
    NeighborAdvert {
        /// [`nd_flags`] bits.
        flags: u8,
        target: Ipv6Addr,
        /// The target link-layer address option, if present.
        lladdr: Option<EtherAddr>,
    },
}

impl NdRepr {
    /// Parses a message whose checksum is already verified: code 0
    /// (`Malformed` otherwise), a neighbour solicitation or advertisement
    /// (`Unsupported` otherwise), well-formed options (`Malformed`), and
    /// not a multicast target (`Malformed`).
    pub fn parse<T: AsRef<[u8]>>(h: &Icmpv6Header<T>) -> Result<NdRepr> {
        h.check_len()?;
        if !h.is_nd() {
            return Err(WireError::Unsupported);
        }
        if h.code() != 0 || h.target().octets()[0] == 0xff {
            return Err(WireError::Malformed);
        }
        let want = if h.msg_type() == icmpv6_type::NEIGHBOR_SOLICIT {
            nd_opt::SOURCE_LL_ADDR
        } else {
            nd_opt::TARGET_LL_ADDR
        };
        let mut lladdr = None;
        for o in h.nd_options() {
            match o? {
                NdOption::SourceLinkAddr(e) if want == nd_opt::SOURCE_LL_ADDR => lladdr = Some(e),
                NdOption::TargetLinkAddr(e) if want == nd_opt::TARGET_LL_ADDR => lladdr = Some(e),
                _ => {}
            }
        }
        Ok(if h.msg_type() == icmpv6_type::NEIGHBOR_SOLICIT {
            NdRepr::NeighborSolicit {
                target: h.target(),
                lladdr,
            }
        } else {
            NdRepr::NeighborAdvert {
                flags: h.nd_flags() & 0xe0,
                target: h.target(),
                lladdr,
            }
        })
    }

    /// Length of the emitted message.
    pub fn buffer_len(&self) -> usize {
        let ll = match self {
            NdRepr::NeighborSolicit { lladdr, .. } | NdRepr::NeighborAdvert { lladdr, .. } => {
                lladdr.is_some()
            }
        };
        24 + if ll { 8 } else { 0 }
    }

    /// Writes the message (the buffer must be [`NdRepr::buffer_len`]
    /// long) and fills the checksum for `src` -> `dst`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        h: &mut Icmpv6Header<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) {
        let (ty, rest, target, lladdr, opt) = match *self {
            NdRepr::NeighborSolicit { target, lladdr } => (
                icmpv6_type::NEIGHBOR_SOLICIT,
                0,
                target,
                lladdr,
                nd_opt::SOURCE_LL_ADDR,
            ),
            NdRepr::NeighborAdvert {
                flags,
                target,
                lladdr,
            } => (
                icmpv6_type::NEIGHBOR_ADVERT,
                u32::from(flags & 0xe0) << 24,
                target,
                lladdr,
                nd_opt::TARGET_LL_ADDR,
            ),
        };
        h.set_msg_type(ty);
        h.set_code(0);
        h.set_rest_of_header(rest);
        h.set_target(target);
        if let Some(e) = lladdr {
            if let Some(o) = h.buffer.as_mut().get_mut(24..32) {
                o[0] = opt;
                o[1] = 1;
                o[2..8].copy_from_slice(&e.0);
            }
        }
        h.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TestRng;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn echo_fields_and_checksum() {
        // Echo request fe80::1 -> fe80::2, ident 0x1234, seq 1, "ab".
        // pseudo: fe80+0001 + fe80+0002 + 10 + 58 = 0x1fd47 -> 0xfd48;
        // message: 8000 + 1234 + 0001 + 6162 = 0xf397; total 0x1f0df ->
        // 0xf0e0; checksum 0x0f1f.
        let src = a("fe80::1");
        let dst = a("fe80::2");
        let mut m = [128u8, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b'b'];
        let mut h = Icmpv6Header::new_checked(&mut m[..]).unwrap();
        h.fill_checksum(&src, &dst);
        assert_eq!(h.checksum(), 0x0f1f);
        assert!(h.verify_checksum(&src, &dst));
        assert!(!h.verify_checksum(&dst, &a("fe80::3")));
        assert_eq!(h.msg_type(), icmpv6_type::ECHO_REQUEST);
        assert_eq!(h.code(), 0);
        assert_eq!(h.ident(), 0x1234);
        assert_eq!(h.seq(), 1);
        assert_eq!(h.payload(), b"ab");
        assert!(!h.is_error());
        assert!(!h.is_nd());
        assert_eq!(h.target(), Ipv6Addr::UNSPECIFIED);
    }

    #[test]
    fn setters_round_trip() {
        let mut m = [0u8; 48];
        let mut h = Icmpv6Header::new_checked(&mut m[..]).unwrap();
        h.set_msg_type(icmpv6_type::PACKET_TOO_BIG);
        assert!(h.is_error());
        h.set_code(3);
        assert_eq!(h.code(), 3);
        h.set_rest_of_header(1280);
        assert_eq!(h.mtu(), 1280);
        assert_eq!(h.pointer(), 1280);
        h.set_ident(7);
        h.set_seq(9);
        assert_eq!((h.ident(), h.seq()), (7, 9));
        h.set_checksum(0xbeef);
        assert_eq!(h.checksum(), 0xbeef);
        h.set_msg_type(icmpv6_type::NEIGHBOR_ADVERT);
        h.set_rest_of_header(0xe000_0000);
        assert_eq!(h.nd_flags(), 0xe0);
        h.set_target(a("2001:db8::7"));
        assert_eq!(h.target(), a("2001:db8::7"));
        h.payload_mut()[0] = 1;
        assert_eq!(h.payload().len(), 40);
        assert_eq!(h.into_inner()[8], 1);
        for t in 0..=255u8 {
            let mut b = [t, 0, 0, 0, 0, 0, 0, 0];
            let h = Icmpv6Header::new_unchecked(&mut b[..]);
            assert_eq!(h.is_error(), t < 128);
        }
    }

    #[test]
    fn truncation() {
        for len in 0..8 {
            assert_eq!(
                Icmpv6Header::new_checked(&[1u8; 8][..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        let mut ns = [0u8; 24];
        ns[0] = 135;
        for len in 8..24 {
            assert_eq!(
                Icmpv6Header::new_checked(&ns[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        assert!(Icmpv6Header::new_checked(&ns[..]).is_ok());
    }

    #[test]
    fn nd_round_trip() {
        let src = a("fe80::1");
        let dst = a("ff02::1:ff00:2");
        for r in [
            NdRepr::NeighborSolicit {
                target: a("2001:db8::2"),
                lladdr: Some(EtherAddr([2, 0, 0, 0, 0, 1])),
            },
            NdRepr::NeighborSolicit {
                target: a("2001:db8::2"),
                lladdr: None,
            },
            NdRepr::NeighborAdvert {
                flags: nd_flags::SOLICITED | nd_flags::OVERRIDE,
                target: a("2001:db8::2"),
                lladdr: Some(EtherAddr([2, 0, 0, 0, 0, 2])),
            },
        ] {
            let mut buf = vec![0xaau8; r.buffer_len()];
            let mut h = Icmpv6Header::new_unchecked(&mut buf[..]);
            r.emit(&mut h, &src, &dst);
            assert!(h.verify_checksum(&src, &dst));
            assert_eq!(NdRepr::parse(&h), Ok(r));
        }
    }

    #[test]
    fn nd_options_and_errors() {
        let mut m = vec![136u8, 0, 0, 0, 0x40, 0, 0, 0];
        m.extend_from_slice(&a("2001:db8::5").octets());
        m.extend_from_slice(&[5, 1, 0, 0, 0, 0, 5, 0xdc]); // MTU 1500
        m.extend_from_slice(&[2, 1, 1, 2, 3, 4, 5, 6]); // target ll
        m.extend_from_slice(&[99, 2, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9]);
        let h = Icmpv6Header::new_checked(&m[..]).unwrap();
        let opts: Vec<_> = h.nd_options().collect();
        assert_eq!(opts[0], Ok(NdOption::Mtu(1500)));
        assert_eq!(
            opts[1],
            Ok(NdOption::TargetLinkAddr(EtherAddr([1, 2, 3, 4, 5, 6])))
        );
        assert!(matches!(opts[2], Ok(NdOption::Unknown { kind: 99, data }) if data.len() == 14));
        assert_eq!(
            NdRepr::parse(&h),
            Ok(NdRepr::NeighborAdvert {
                flags: nd_flags::SOLICITED,
                target: a("2001:db8::5"),
                lladdr: Some(EtherAddr([1, 2, 3, 4, 5, 6]))
            })
        );
        // Zero-length option: malformed.
        let mut bad = m.clone();
        bad[25] = 0;
        let h = Icmpv6Header::new_checked(&bad[..]).unwrap();
        assert_eq!(NdRepr::parse(&h), Err(WireError::Malformed));
        // Option past the end.
        let mut bad = m.clone();
        bad[41] = 9;
        let h = Icmpv6Header::new_checked(&bad[..]).unwrap();
        assert_eq!(NdRepr::parse(&h), Err(WireError::Malformed));
        // Nonzero code, multicast target, wrong type.
        let mut bad = m.clone();
        bad[1] = 1;
        assert_eq!(
            NdRepr::parse(&Icmpv6Header::new_checked(&bad[..]).unwrap()),
            Err(WireError::Malformed)
        );
        let mut bad = m.clone();
        bad[8] = 0xff;
        assert_eq!(
            NdRepr::parse(&Icmpv6Header::new_checked(&bad[..]).unwrap()),
            Err(WireError::Malformed)
        );
        let mut bad = m.clone();
        bad[0] = 128;
        assert_eq!(
            NdRepr::parse(&Icmpv6Header::new_checked(&bad[..]).unwrap()),
            Err(WireError::Unsupported)
        );
    }

    #[test]
    fn random_never_panics() {
        let mut rng = TestRng::new(58);
        for _ in 0..20_000 {
            let len = rng.below(64);
            let mut b = rng.bytes(len);
            if len > 0 && rng.below(2) == 0 {
                b[0] = 135 + (rng.below(2) as u8);
            }
            for x in b.iter_mut().skip(24) {
                if rng.below(2) == 0 {
                    *x %= 3;
                }
            }
            let u = Icmpv6Header::new_unchecked(&b[..]);
            if len >= 8 {
                let _ = (u.target(), u.nd_options().count(), u.payload().len());
            }
            if let Ok(h) = Icmpv6Header::new_checked(&b[..]) {
                let _ = NdRepr::parse(&h);
                let _ = h.verify_checksum(&Ipv6Addr::LOCALHOST, &Ipv6Addr::LOCALHOST);
            }
        }
    }
}
