//! Ethernet II frames and addresses.

use core::fmt;
use core::str::FromStr;

use super::{get_u16, set_u16, AddrParseError, Result, WireError};

/// EtherType values (the field after the source address).
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// Reverse ARP.
    pub const RARP: u16 = 0x8035;
    /// IEEE 802.1Q VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IPv6.
    pub const IPV6: u16 = 0x86DD;
    /// IEEE 802.1ad service VLAN tag (Q-in-Q).
    pub const QINQ: u16 = 0x88A8;
}

/// A 48-bit Ethernet (MAC) address.
///
/// Displays as Click prints it: uppercase hex with dashes,
/// `00-1A-2B-3C-4D-5E`. Parses as Click does: six groups of one or two hex
/// digits separated by `-` or `:` (one separator throughout), in either case.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EtherAddr(pub [u8; 6]);

impl EtherAddr {
    /// `FF-FF-FF-FF-FF-FF`.
    pub const BROADCAST: EtherAddr = EtherAddr([0xff; 6]);
    /// `00-00-00-00-00-00`.
    pub const ZERO: EtherAddr = EtherAddr([0; 6]);

    /// The address in the first six bytes of `bytes`, or `None` if there are
    /// fewer than six.
    #[inline]
    pub fn from_slice(bytes: &[u8]) -> Option<EtherAddr> {
        bytes
            .get(..6)
            .map(|b| EtherAddr([b[0], b[1], b[2], b[3], b[4], b[5]]))
    }

    /// The six bytes.
    #[inline]
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// The six bytes, borrowed.
    #[inline]
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// All ones.
    #[inline]
    pub fn is_broadcast(&self) -> bool {
        self.0 == [0xff; 6]
    }

    /// Group bit set (includes broadcast).
    #[inline]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Group bit clear.
    #[inline]
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Locally administered bit set.
    #[inline]
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }

    /// All zeros.
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 6]
    }

    /// Displays as `00:1A:2B:3C:4D:5E` (Click's `unparse_colon`).
    pub fn colon(&self) -> impl fmt::Display + '_ {
        Sep(self, ':')
    }
}

struct Sep<'a>(&'a EtherAddr, char);

impl fmt::Display for Sep<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0 .0;
        let s = self.1;
        write!(
            f,
            "{:02X}{s}{:02X}{s}{:02X}{s}{:02X}{s}{:02X}{s}{:02X}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Display for EtherAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Sep(self, '-').fmt(f)
    }
}

impl fmt::Debug for EtherAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<[u8; 6]> for EtherAddr {
    #[inline]
    fn from(b: [u8; 6]) -> Self {
        EtherAddr(b)
    }
}

impl From<EtherAddr> for [u8; 6] {
    #[inline]
    fn from(a: EtherAddr) -> Self {
        a.0
    }
}

impl FromStr for EtherAddr {
    type Err = AddrParseError;

    fn from_str(s: &str) -> core::result::Result<Self, AddrParseError> {
        let err = AddrParseError::new("Ethernet address");
        let sep = match s.bytes().find(|&c| c == b'-' || c == b':') {
            Some(c) => c,
            None => return Err(err),
        };
        let mut out = [0u8; 6];
        let mut groups = s.split(sep as char);
        for slot in out.iter_mut() {
            let g = groups.next().ok_or(err)?;
            if g.is_empty() || g.len() > 2 || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err);
            }
            *slot = u8::from_str_radix(g, 16).map_err(|_| err)?;
        }
        if groups.next().is_some() {
            return Err(err);
        }
        Ok(EtherAddr(out))
    }
}

view! {
    /// A view of an Ethernet II frame: destination, source, EtherType, payload.
    EthernetFrame,
    /// Wraps `buffer`, checking that it holds a whole Ethernet header.
}

mod field {
    pub const DST: usize = 0;
    pub const SRC: usize = 6;
    pub const ETHERTYPE: usize = 12;
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Length of the Ethernet header.
    pub const HEADER_LEN: usize = 14;

    /// `Err(Truncated)` if the buffer is shorter than the header.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The header length (14).
    #[inline]
    pub const fn header_len(&self) -> usize {
        Self::HEADER_LEN
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> EtherAddr {
        let b = &self.buffer.as_ref()[field::DST..field::DST + 6];
        EtherAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> EtherAddr {
        let b = &self.buffer.as_ref()[field::SRC..field::SRC + 6];
        EtherAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// EtherType (see [`ethertype`]).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::ETHERTYPE)
    }

    /// Everything after the header (including any trailer or padding).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        super::clamped(self.buffer.as_ref(), Self::HEADER_LEN, usize::MAX)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: EtherAddr) {
        self.buffer.as_mut()[field::DST..field::DST + 6].copy_from_slice(&a.0);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: EtherAddr) {
        self.buffer.as_mut()[field::SRC..field::SRC + 6].copy_from_slice(&a.0);
    }

    /// Sets the EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, t: u16) {
        set_u16(self.buffer.as_mut(), field::ETHERTYPE, t);
    }

    /// Everything after the header, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        super::clamped_mut(self.buffer.as_mut(), Self::HEADER_LEN, usize::MAX)
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EthernetFrame<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of an Ethernet header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub src_addr: EtherAddr,
    pub dst_addr: EtherAddr,
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Reads the header of a checked frame.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Length of the emitted header (14).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        14
    }

    /// Writes the header into `frame` (which must hold at least 14 bytes).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

view! {
    /// A view of an IEEE 802.1Q tag and what follows it: the bytes after an
    /// Ethernet header whose EtherType is [`ethertype::VLAN`] (or
    /// [`ethertype::QINQ`]).
    VlanHeader,
    /// Wraps `buffer`, checking that it holds the 4-byte tag.
}

impl<T: AsRef<[u8]>> VlanHeader<T> {
    /// Length of the tag (TCI and encapsulated EtherType).
    pub const HEADER_LEN: usize = 4;

    /// `Err(Truncated)` if the buffer is shorter than the tag.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Tag control information: PCP (3 bits), DEI (1), VLAN ID (12).
    #[inline]
    pub fn tci(&self) -> u16 {
        get_u16(self.buffer.as_ref(), 0)
    }

    /// Priority code point.
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// VLAN identifier.
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// EtherType of the encapsulated frame.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        get_u16(self.buffer.as_ref(), 2)
    }

    /// Everything after the tag.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        super::clamped(self.buffer.as_ref(), Self::HEADER_LEN, usize::MAX)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanHeader<T> {
    /// Sets the whole TCI.
    #[inline]
    pub fn set_tci(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), 0, v);
    }

    /// Sets the priority (3 bits), keeping DEI and VID.
    #[inline]
    pub fn set_pcp(&mut self, v: u8) {
        self.set_tci((self.tci() & 0x1fff) | (u16::from(v & 0x07) << 13));
    }

    /// Sets or clears DEI.
    #[inline]
    pub fn set_dei(&mut self, on: bool) {
        let t = self.tci() & !0x1000;
        self.set_tci(if on { t | 0x1000 } else { t });
    }

    /// Sets the VLAN ID (12 bits), keeping PCP and DEI.
    #[inline]
    pub fn set_vid(&mut self, v: u16) {
        self.set_tci((self.tci() & 0xf000) | (v & 0x0fff));
    }

    /// Sets the encapsulated EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, t: u16) {
        set_u16(self.buffer.as_mut(), 2, t);
    }

    /// Everything after the tag, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        super::clamped_mut(self.buffer.as_mut(), Self::HEADER_LEN, usize::MAX)
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for VlanHeader<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 18] = [
        0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb, 0xcc, 0xdd,
    ];

    #[test]
    fn addr_display_like_click() {
        let a = EtherAddr([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e]);
        assert_eq!(a.to_string(), "00-1A-2B-3C-4D-5E");
        assert_eq!(format!("{a:?}"), "00-1A-2B-3C-4D-5E");
        assert_eq!(a.colon().to_string(), "00:1A:2B:3C:4D:5E");
        assert_eq!(EtherAddr::BROADCAST.to_string(), "FF-FF-FF-FF-FF-FF");
    }

    #[test]
    fn addr_parse() {
        let a = EtherAddr([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e]);
        assert_eq!("00:1a:2b:3c:4d:5e".parse(), Ok(a));
        assert_eq!("00-1A-2B-3C-4D-5E".parse(), Ok(a));
        assert_eq!("0:1a:2B:3c:4D:5e".parse(), Ok(a));
        assert_eq!("1:2:3:4:5:6".parse(), Ok(EtherAddr([1, 2, 3, 4, 5, 6])));
        for bad in [
            "",
            "00:1a:2b:3c:4d",
            "00:1a:2b:3c:4d:5e:6f",
            "00:1a:2b:3c:4d:5e:",
            "00-1a:2b:3c:4d:5e",
            "00:1a:2b:3c:4d:5g",
            "000:1a:2b:3c:4d:5e",
            "00::2b:3c:4d:5e",
            "001a2b3c4d5e",
            "+0:1a:2b:3c:4d:5e",
            " 00:1a:2b:3c:4d:5e",
        ] {
            assert!(bad.parse::<EtherAddr>().is_err(), "{bad:?}");
        }
        let e = "x".parse::<EtherAddr>().unwrap_err();
        assert_eq!(e.to_string(), "invalid Ethernet address");
    }

    #[test]
    fn addr_round_trip() {
        let mut rng = crate::wire::TestRng::new(7);
        for _ in 0..100 {
            let b = rng.bytes(6);
            let a = EtherAddr::from_slice(&b).unwrap();
            assert_eq!(a.to_string().parse(), Ok(a));
            assert_eq!(a.colon().to_string().parse(), Ok(a));
        }
        assert_eq!(EtherAddr::from_slice(&[1, 2, 3, 4, 5]), None);
    }

    #[test]
    fn addr_kinds() {
        assert!(EtherAddr::BROADCAST.is_broadcast());
        assert!(EtherAddr::BROADCAST.is_multicast());
        let mc = EtherAddr([0x01, 0x00, 0x5e, 0, 0, 1]);
        assert!(mc.is_multicast() && !mc.is_broadcast() && !mc.is_unicast());
        let uc = EtherAddr([0x02, 0, 0, 0, 0, 1]);
        assert!(uc.is_unicast() && uc.is_local() && !uc.is_zero());
        assert!(EtherAddr::ZERO.is_zero());
        assert_eq!(<[u8; 6]>::from(uc), uc.octets());
        assert_eq!(EtherAddr::from(uc.octets()), uc);
        assert_eq!(uc.as_bytes(), &[0x02, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn frame_getters() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(
            f.dst_addr(),
            EtherAddr([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e])
        );
        assert_eq!(f.src_addr(), EtherAddr([0x02, 0, 0, 0, 0, 1]));
        assert_eq!(f.ethertype(), ethertype::IPV4);
        assert_eq!(f.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(f.header_len(), 14);
    }

    #[test]
    fn frame_setters() {
        let mut buf = [0u8; 18];
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        f.set_dst_addr(EtherAddr([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e]));
        assert_eq!(
            f.dst_addr(),
            EtherAddr([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e])
        );
        f.set_src_addr(EtherAddr([0x02, 0, 0, 0, 0, 1]));
        assert_eq!(f.src_addr(), EtherAddr([0x02, 0, 0, 0, 0, 1]));
        f.set_ethertype(ethertype::ARP);
        assert_eq!(f.ethertype(), ethertype::ARP);
        f.set_ethertype(ethertype::IPV4);
        f.payload_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(f.into_inner(), &FRAME[..]);
    }

    #[test]
    fn frame_truncated() {
        for len in 0..14 {
            assert_eq!(
                EthernetFrame::new_checked(&FRAME[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        let f = EthernetFrame::new_checked(&FRAME[..14]).unwrap();
        assert!(f.payload().is_empty());
    }

    #[test]
    fn vlan_tag() {
        // PCP 5, DEI 0, VID 100, then IPv4.
        let buf = [0xa0, 0x64, 0x08, 0x00, 0x45];
        let v = VlanHeader::new_checked(&buf[..]).unwrap();
        assert_eq!(v.tci(), 0xa064);
        assert_eq!((v.pcp(), v.dei(), v.vid()), (5, false, 100));
        assert_eq!(v.ethertype(), ethertype::IPV4);
        assert_eq!(v.payload(), &[0x45]);
        for len in 0..4 {
            assert_eq!(
                VlanHeader::new_checked(&buf[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        let mut out = [0u8; 5];
        let mut v = VlanHeader::new_checked(&mut out[..]).unwrap();
        v.set_vid(0xfff);
        assert_eq!(v.vid(), 0xfff);
        v.set_pcp(7);
        assert_eq!((v.pcp(), v.vid()), (7, 0xfff));
        v.set_dei(true);
        assert!(v.dei());
        assert_eq!(v.tci(), 0xffff);
        v.set_dei(false);
        v.set_pcp(5);
        v.set_vid(100);
        assert_eq!((v.pcp(), v.dei(), v.vid()), (5, false, 100));
        v.set_tci(0xa064);
        v.set_ethertype(ethertype::IPV4);
        v.payload_mut()[0] = 0x45;
        assert_eq!(v.into_inner(), &buf[..]);
    }

    #[test]
    fn repr_round_trip() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        let r = EthernetRepr::parse(&f).unwrap();
        assert_eq!(r.ethertype, ethertype::IPV4);
        let mut buf = [0u8; 14];
        let mut g = EthernetFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut g);
        assert_eq!(&buf[..], &FRAME[..14]);
        assert_eq!(r.buffer_len(), 14);
        assert_eq!(
            EthernetRepr::parse(&EthernetFrame::new_unchecked(&FRAME[..3])),
            Err(WireError::Truncated)
        );
    }
}
