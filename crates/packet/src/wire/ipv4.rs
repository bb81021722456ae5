//! IPv4 (RFC 791): header view, options, `Ipv4Repr`, `Ipv4Prefix`.

use core::fmt;
use core::net::Ipv4Addr;
use core::str::FromStr;

use super::checksum;
use super::tlv::{Tlv, TlvCursor};
use super::{clamped, clamped_mut, get_u16, set_u16, AddrParseError, Result, WireError};

/// IP protocol numbers (the header's protocol field).
pub mod ip_proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// IGMP.
    pub const IGMP: u8 = 2;
    /// IPv4 in IPv4.
    pub const IPIP: u8 = 4;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 in IPv4.
    pub const IPV6: u8 = 41;
    /// GRE.
    pub const GRE: u8 = 47;
    /// IPsec Encapsulating Security Payload.
    pub const ESP: u8 = 50;
    /// IPsec Authentication Header.
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;

    /// Protocol names and their numbers: Click's names (its IPNameInfo
    /// table) and the other names of /etc/protocols that a router's
    /// configuration uses. The one table every element parses protocol
    /// names from and prints them with.
    pub const NAMES: &[(&str, u8)] = &[
        ("icmp", ICMP),
        ("igmp", IGMP),
        ("ipip", IPIP),
        ("tcp", TCP),
        ("udp", UDP),
        ("dccp", 33),
        ("ipv6", IPV6),
        ("rsvp", 46),
        ("gre", GRE),
        ("esp", ESP),
        ("ah", AH),
        ("icmpv6", ICMPV6),
        ("sctp", SCTP),
    ];

    /// The number of the protocol called `name` (exactly as spelled in
    /// [`NAMES`]: lower case).
    pub fn by_name(name: &str) -> Option<u8> {
        NAMES.iter().find(|(n, _)| *n == name).map(|&(_, p)| p)
    }

    /// The name of protocol `p`, if [`NAMES`] has one.
    pub fn name(p: u8) -> Option<&'static str> {
        NAMES.iter().find(|&&(_, v)| v == p).map(|&(n, _)| n)
    }
}

/// IPv4 option kinds (copied flag, class and number in one byte).
pub mod opt {
    /// End of option list.
    pub const EOL: u8 = 0;
    /// No operation (padding between options).
    pub const NOP: u8 = 1;
    /// Record route.
    pub const RR: u8 = 7;
    /// Internet timestamp.
    pub const TS: u8 = 68;
    /// Loose source and record route.
    pub const LSRR: u8 = 131;
    /// Strict source and record route.
    pub const SSRR: u8 = 137;
    /// Router alert (RFC 2113).
    pub const RA: u8 = 148;
}

mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
}

const FLAG_RESERVED: u16 = 0x8000;
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

view! {
    /// A view of an IPv4 header and the datagram it heads.
    ///
    /// After [`Ipv4Header::new_checked`], the buffer holds the whole header
    /// (including options) and `total_len` bytes; the buffer may be longer
    /// (Ethernet padding), and [`Ipv4Header::payload`] stops at `total_len`.
    /// The version and checksum are not checked there: see
    /// [`Ipv4Header::validate`].
    Ipv4Header,
    /// Wraps `buffer`, checking the lengths (see [`Ipv4Header::check_len`]).
}

impl<T: AsRef<[u8]>> Ipv4Header<T> {
    /// Length of a header without options.
    pub const MIN_LEN: usize = 20;
    /// Length of a header with the most options (IHL 15).
    pub const MAX_LEN: usize = 60;

    /// Checks that the buffer holds the fixed header (`Truncated`), that the
    /// header length is at least 20 (`BadHeaderLen`) and fits the buffer
    /// (`Truncated`), and that the total length covers the header
    /// (`BadTotalLen`) and fits the buffer (`Truncated`).
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < Self::MIN_LEN {
            return Err(WireError::Truncated);
        }
        let hlen = self.header_len();
        if hlen < Self::MIN_LEN {
            return Err(WireError::BadHeaderLen);
        }
        if len < hlen {
            return Err(WireError::Truncated);
        }
        let total = usize::from(self.total_len());
        if total < hlen {
            return Err(WireError::BadTotalLen);
        }
        if len < total {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Everything Click's `CheckIPHeader` checks of the header itself:
    /// the lengths as in [`Ipv4Header::check_len`], version 4
    /// (`BadVersion`), and the checksum (`BadChecksum`).
    #[inline]
    pub fn validate(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::MIN_LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 4 {
            return Err(WireError::BadVersion);
        }
        self.check_len()?;
        if !self.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        Ok(())
    }

    /// Version (4).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in 32-bit words (IHL).
    #[inline]
    pub fn ihl(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] & 0x0f
    }

    /// Header length in bytes.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.ihl()) * 4
    }

    /// Type of service byte (DSCP and ECN).
    #[inline]
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    /// Differentiated services code point (upper 6 bits of the TOS byte).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// Explicit congestion notification (lower 2 bits of the TOS byte).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    /// Total length of the datagram (header and payload).
    #[inline]
    pub fn total_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::TOTAL_LEN)
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::IDENT)
    }

    #[inline]
    fn flags_frag(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::FLAGS_FRAG)
    }

    /// The three flag bits (reserved, DF, MF), as the top bits of a byte
    /// would hold them shifted down: `0b100` reserved, `0b010` DF, `0b001` MF.
    #[inline]
    pub fn flags(&self) -> u8 {
        (self.flags_frag() >> 13) as u8
    }

    /// Don't Fragment.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.flags_frag() & FLAG_DF != 0
    }

    /// More Fragments.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.flags_frag() & FLAG_MF != 0
    }

    /// The reserved flag bit (must be zero).
    #[inline]
    pub fn reserved_flag(&self) -> bool {
        self.flags_frag() & FLAG_RESERVED != 0
    }

    /// Fragment offset in 8-byte units, as carried.
    #[inline]
    pub fn frag_offset_units(&self) -> u16 {
        self.flags_frag() & OFFSET_MASK
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        self.frag_offset_units() << 3
    }

    /// True if this datagram is a fragment (MF set or nonzero offset).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.flags_frag() & (FLAG_MF | OFFSET_MASK) != 0
    }

    /// True if this datagram is the first fragment of a larger one (MF set,
    /// offset zero). An unfragmented datagram is not a first fragment.
    #[inline]
    pub fn is_first_fragment(&self) -> bool {
        self.flags_frag() & (FLAG_MF | OFFSET_MASK) == FLAG_MF
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload (see [`ip_proto`]).
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum, as carried.
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC..field::SRC + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST..field::DST + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// The header bytes (20 to 60), clamped to the buffer.
    #[inline]
    pub fn header(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), 0, self.header_len())
    }

    /// The options area (between byte 20 and the header length).
    #[inline]
    pub fn options(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), Self::MIN_LEN, self.header_len())
    }

    /// An iterator over the options.
    #[inline]
    pub fn option_iter(&self) -> Ipv4OptionIter<'_> {
        Ipv4OptionIter::new(self.options())
    }

    /// The payload: from the header length to the total length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(
            self.buffer.as_ref(),
            self.header_len(),
            usize::from(self.total_len()),
        )
    }

    /// `total_len - header_len`, or 0 if the header length exceeds the total
    /// length.
    #[inline]
    pub fn payload_len(&self) -> usize {
        usize::from(self.total_len()).saturating_sub(self.header_len())
    }

    /// Sum of the header bytes, with a fast path for the common 20 bytes.
    #[inline]
    fn header_sum(&self) -> u16 {
        let h = self.header();
        match <&[u8; 20]>::try_from(h) {
            Ok(fixed) => checksum::sum_array(fixed),
            Err(_) => checksum::sum(h),
        }
    }

    /// True if the header (including options) sums to `0xFFFF`.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        let h = self.header();
        match <&[u8; 20]>::try_from(h) {
            Ok(fixed) => checksum::verify_array(fixed),
            Err(_) => checksum::verify(h),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Header<T> {
    /// Sets the version.
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets the header length in 32-bit words.
    #[inline]
    pub fn set_ihl(&mut self, words: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | (words & 0x0f);
    }

    /// Sets the header length in bytes (a multiple of 4, 20 to 60).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        debug_assert!(len & 3 == 0 && len <= Self::MAX_LEN);
        self.set_ihl((len / 4) as u8);
    }

    /// Sets the TOS byte.
    #[inline]
    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }

    /// Sets the DSCP (6 bits), keeping the ECN bits.
    #[inline]
    pub fn set_dscp(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::TOS];
        *b = (*b & 0x03) | (v << 2);
    }

    /// Sets the ECN bits (2 bits), keeping the DSCP.
    #[inline]
    pub fn set_ecn(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::TOS];
        *b = (*b & 0xfc) | (v & 0x03);
    }

    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::TOTAL_LEN, v);
    }

    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::IDENT, v);
    }

    #[inline]
    fn set_flags_frag(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::FLAGS_FRAG, v);
    }

    #[inline]
    fn set_flag(&mut self, bit: u16, on: bool) {
        let v = self.flags_frag();
        self.set_flags_frag(if on { v | bit } else { v & !bit });
    }

    /// Sets the three flag bits (see [`Ipv4Header::flags`]).
    #[inline]
    pub fn set_flags(&mut self, flags: u8) {
        let v = self.flags_frag() & OFFSET_MASK;
        self.set_flags_frag(v | (u16::from(flags & 0x07) << 13));
    }

    /// Sets or clears Don't Fragment.
    #[inline]
    pub fn set_dont_frag(&mut self, on: bool) {
        self.set_flag(FLAG_DF, on);
    }

    /// Sets or clears More Fragments.
    #[inline]
    pub fn set_more_frags(&mut self, on: bool) {
        self.set_flag(FLAG_MF, on);
    }

    /// Sets or clears the reserved flag.
    #[inline]
    pub fn set_reserved_flag(&mut self, on: bool) {
        self.set_flag(FLAG_RESERVED, on);
    }

    /// Sets the fragment offset in 8-byte units (13 bits), keeping the flags.
    #[inline]
    pub fn set_frag_offset_units(&mut self, units: u16) {
        let v = self.flags_frag() & !OFFSET_MASK;
        self.set_flags_frag(v | (units & OFFSET_MASK));
    }

    /// Sets the fragment offset in bytes (a multiple of 8), keeping the
    /// flags.
    #[inline]
    pub fn set_frag_offset(&mut self, bytes: u16) {
        debug_assert!(bytes & 7 == 0);
        self.set_frag_offset_units(bytes >> 3);
    }

    /// Sets the TTL (the checksum is not updated; see
    /// [`Ipv4Header::update_ttl`]).
    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC..field::SRC + 4].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST..field::DST + 4].copy_from_slice(&a.octets());
    }

    /// The options area, mutable.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hlen = self.header_len();
        clamped_mut(self.buffer.as_mut(), Self::MIN_LEN, hlen)
    }

    /// The payload, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), usize::from(self.total_len()));
        clamped_mut(self.buffer.as_mut(), start, end)
    }

    /// Computes the header checksum and stores it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = !self.header_sum();
        self.set_checksum(c);
    }

    /// Sets the TTL and updates the checksum incrementally (RFC 1624).
    #[inline]
    pub fn update_ttl(&mut self, ttl: u8) {
        let old = get_u16(self.buffer.as_ref(), field::TTL);
        self.set_ttl(ttl);
        let new = get_u16(self.buffer.as_ref(), field::TTL);
        self.set_checksum(checksum::update_u16(self.checksum(), old, new));
    }

    /// Decrements a TTL of at least 1 and updates the checksum: the TTL is
    /// the high byte of its 16-bit word, so `~m + m'` of RFC 1624's eqn. 3
    /// is the constant 0xFEFF and one fold is enough (`~HC + 0xFEFF` is at
    /// most 0x1FEFE). The same result as [`Ipv4Header::update_ttl`] with
    /// `ttl - 1`, in a third of its instructions. A TTL of 0 is left alone.
    #[inline]
    pub fn decrement_ttl(&mut self) {
        let ttl = self.ttl();
        if ttl == 0 {
            return;
        }
        self.set_ttl(ttl - 1);
        let s = u32::from(!self.checksum()) + 0xFEFF;
        self.set_checksum(!(((s & 0xffff) + (s >> 16)) as u16));
    }

    /// Sets the TOS byte and updates the checksum incrementally.
    #[inline]
    pub fn update_tos(&mut self, tos: u8) {
        let old = get_u16(self.buffer.as_ref(), field::VER_IHL);
        self.set_tos(tos);
        let new = get_u16(self.buffer.as_ref(), field::VER_IHL);
        self.set_checksum(checksum::update_u16(self.checksum(), old, new));
    }

    /// Sets the source address and updates the checksum incrementally.
    #[inline]
    pub fn update_src_addr(&mut self, a: Ipv4Addr) {
        let old = self.src_addr();
        self.set_src_addr(a);
        self.set_checksum(checksum::update_addr(self.checksum(), old, a));
    }

    /// Sets the destination address and updates the checksum incrementally.
    #[inline]
    pub fn update_dst_addr(&mut self, a: Ipv4Addr) {
        let old = self.dst_addr();
        self.set_dst_addr(a);
        self.set_checksum(checksum::update_addr(self.checksum(), old, a));
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv4Header<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A route option (record route, loose or strict source route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteOption<'a> {
    /// The pointer byte: 1-based offset, from the start of the option, of
    /// the next address slot (4 for the first; past the end when full).
    pub pointer: u8,
    /// The route data (the slots), after the pointer byte.
    pub data: &'a [u8],
}

impl RouteOption<'_> {
    /// The addresses in the route data (a trailing partial slot is ignored).
    pub fn addrs(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.data
            .chunks_exact(4)
            .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
    }

    /// Index into `data` of the slot the pointer designates, or `None` if
    /// the pointer is past the last whole slot (route full) or invalid
    /// (below 4 or not on a slot boundary).
    pub fn next_slot(&self) -> Option<usize> {
        let p = usize::from(self.pointer);
        if p < 4 || (p - 4) % 4 != 0 || p - 4 + 4 > self.data.len() {
            None
        } else {
            Some(p - 4)
        }
    }
}

/// A timestamp option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOption<'a> {
    /// 1-based offset, from the start of the option, of the next free
    /// slot (5 for the first).
    pub pointer: u8,
    /// Overflow count (upper 4 bits of the fourth byte).
    pub overflow: u8,
    /// Flags (lower 4 bits): 0 timestamps only, 1 address and timestamp,
    /// 3 prespecified addresses.
    pub flags: u8,
    /// The slots, after the overflow/flags byte.
    pub data: &'a [u8],
}

/// One IPv4 option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv4Option<'a> {
    /// End of option list; the iterator stops after it.
    EndOfList,
    /// No operation.
    Nop,
    /// Record route (7).
    RecordRoute(RouteOption<'a>),
    /// Loose source and record route (131).
    LooseSourceRoute(RouteOption<'a>),
    /// Strict source and record route (137).
    StrictSourceRoute(RouteOption<'a>),
    /// Internet timestamp (68).
    Timestamp(TimestampOption<'a>),
    /// Router alert (148) with its 16-bit value.
    RouterAlert(u16),
    /// Any other option: its kind and the bytes after the length byte.
    Unknown { kind: u8, data: &'a [u8] },
}

/// Iterator over IPv4 options.
///
/// Yields `Ok(option)` for each well-formed option. On a malformed one (no
/// length byte: `Truncated`; length below 2, running past the options area,
/// or wrong for the option kind: `Malformed`) it yields one `Err` and then
/// stops. It also stops after `EndOfList`. It never panics.
#[derive(Debug, Clone)]
pub struct Ipv4OptionIter<'a> {
    cur: TlvCursor<'a>,
}

impl<'a> Ipv4OptionIter<'a> {
    /// Iterates over an options area.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Ipv4OptionIter {
            cur: TlvCursor::new(data),
        }
    }

    /// Offset, within the options area, of the option (or error) most
    /// recently returned. Add 20 for its offset in the header.
    #[inline]
    pub fn position(&self) -> usize {
        self.cur.position()
    }
}

impl<'a> Iterator for Ipv4OptionIter<'a> {
    type Item = Result<Ipv4Option<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let (kind, o) = match self.cur.next_tlv()? {
            Err(e) => return Some(Err(e)),
            Ok(Tlv::EndOfList) => return Some(Ok(Ipv4Option::EndOfList)),
            Ok(Tlv::Nop) => return Some(Ok(Ipv4Option::Nop)),
            Ok(Tlv::Option { kind, bytes }) => (kind, bytes),
        };
        let len = o.len();
        let item = match kind {
            opt::RR | opt::LSRR | opt::SSRR => {
                if len < 3 {
                    return self.cur.fail(WireError::Malformed);
                }
                let r = RouteOption {
                    pointer: o[2],
                    data: &o[3..],
                };
                match kind {
                    opt::RR => Ipv4Option::RecordRoute(r),
                    opt::LSRR => Ipv4Option::LooseSourceRoute(r),
                    _ => Ipv4Option::StrictSourceRoute(r),
                }
            }
            opt::TS => {
                if len < 4 {
                    return self.cur.fail(WireError::Malformed);
                }
                Ipv4Option::Timestamp(TimestampOption {
                    pointer: o[2],
                    overflow: o[3] >> 4,
                    flags: o[3] & 0x0f,
                    data: &o[4..],
                })
            }
            opt::RA => {
                if len != 4 {
                    return self.cur.fail(WireError::Malformed);
                }
                Ipv4Option::RouterAlert(u16::from_be_bytes([o[2], o[3]]))
            }
            _ => Ipv4Option::Unknown {
                kind,
                data: &o[2..],
            },
        };
        Some(Ok(item))
    }
}

impl core::iter::FusedIterator for Ipv4OptionIter<'_> {}

/// The fields of an option-less IPv4 header as plain values.
///
/// `parse` drops any options; `emit` writes a 20-byte header without options
/// and with a correct checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub protocol: u8,
    /// Length of the payload (total length minus header length).
    pub payload_len: usize,
    pub ttl: u8,
    pub tos: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes.
    pub frag_offset: u16,
}

impl Ipv4Repr {
    /// Reads a header after [`Ipv4Header::validate`] (lengths, version,
    /// checksum).
    pub fn parse<T: AsRef<[u8]>>(h: &Ipv4Header<T>) -> Result<Ipv4Repr> {
        h.validate()?;
        Ok(Ipv4Repr {
            src_addr: h.src_addr(),
            dst_addr: h.dst_addr(),
            protocol: h.protocol(),
            payload_len: h.payload_len(),
            ttl: h.ttl(),
            tos: h.tos(),
            ident: h.ident(),
            dont_frag: h.dont_frag(),
            more_frags: h.more_frags(),
            frag_offset: h.frag_offset(),
        })
    }

    /// Length of the emitted header (20).
    #[inline]
    pub const fn header_len(&self) -> usize {
        20
    }

    /// Length of the emitted datagram (header and payload).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        20 + self.payload_len
    }

    /// Writes a 20-byte header (version 4, no options) and fills the
    /// checksum. The view's buffer must hold at least 20 bytes, and
    /// `payload_len` must be at most 65515.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut Ipv4Header<T>) {
        debug_assert!(self.payload_len <= 65535 - 20);
        h.set_version(4);
        h.set_ihl(5);
        h.set_tos(self.tos);
        h.set_total_len((20 + self.payload_len) as u16);
        h.set_ident(self.ident);
        h.set_flags_frag(0);
        h.set_dont_frag(self.dont_frag);
        h.set_more_frags(self.more_frags);
        h.set_frag_offset(self.frag_offset);
        h.set_ttl(self.ttl);
        h.set_protocol(self.protocol);
        h.set_src_addr(self.src_addr);
        h.set_dst_addr(self.dst_addr);
        h.fill_checksum();
    }
}

/// An IPv4 address with a prefix length: `10.0.0.0/8`.
///
/// `addr` is kept as written (`10.1.2.3/8` keeps its host bits);
/// [`Ipv4Prefix::network`] gives the masked address. A `len` above 32
/// behaves as 32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv4Prefix {
    pub addr: Ipv4Addr,
    pub len: u8,
}

impl Ipv4Prefix {
    /// `addr/len`, or `None` if `len > 32`.
    #[inline]
    pub const fn new(addr: Ipv4Addr, len: u8) -> Option<Self> {
        if len > 32 {
            None
        } else {
            Some(Ipv4Prefix { addr, len })
        }
    }

    /// `addr/32`.
    #[inline]
    pub const fn host(addr: Ipv4Addr) -> Self {
        Ipv4Prefix { addr, len: 32 }
    }

    /// `addr` with the prefix length of `mask`, or `None` if the mask is
    /// not contiguous (ones then zeros).
    #[inline]
    pub fn from_mask(addr: Ipv4Addr, mask: Ipv4Addr) -> Option<Self> {
        let m = u32::from(mask);
        let len = m.leading_ones();
        if m.checked_shl(len).unwrap_or(0) != 0 {
            return None;
        }
        Some(Ipv4Prefix {
            addr,
            len: len as u8,
        })
    }

    /// The mask as an integer in host order.
    #[inline]
    pub const fn mask_u32(&self) -> u32 {
        let len = if self.len > 32 { 32 } else { self.len as u32 };
        match u32::MAX.checked_shl(32 - len) {
            Some(m) => m,
            None => 0,
        }
    }

    /// The mask: `255.0.0.0` for `/8`.
    #[inline]
    pub const fn mask(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(self.mask_u32())
    }

    /// The address with its host bits cleared.
    #[inline]
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & self.mask_u32())
    }

    /// True if `addr` is within the prefix.
    #[inline]
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        (u32::from(self.addr) ^ u32::from(addr)) & self.mask_u32() == 0
    }
}

impl fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for Ipv4Prefix {
    type Err = AddrParseError;

    /// Accepts `10.0.0.0/8`, `10.0.0.0/255.0.0.0` (contiguous masks only),
    /// and a bare address, read as `/32`.
    fn from_str(s: &str) -> core::result::Result<Self, AddrParseError> {
        let err = AddrParseError::new("IP prefix");
        let (a, rest) = match s.split_once('/') {
            Some((a, rest)) => (a, Some(rest)),
            None => (s, None),
        };
        let addr: Ipv4Addr = a.parse().map_err(|_| err)?;
        match rest {
            None => Ok(Ipv4Prefix::host(addr)),
            Some(m) if m.contains('.') => {
                let mask: Ipv4Addr = m.parse().map_err(|_| err)?;
                Ipv4Prefix::from_mask(addr, mask).ok_or(err)
            }
            Some(l) => {
                if l.is_empty() || l.len() > 2 || !l.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(err);
                }
                let len: u8 = l.parse().map_err(|_| err)?;
                Ipv4Prefix::new(addr, len).ok_or(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TestRng;

    #[test]
    fn protocol_names_map_both_ways_once() {
        for &(n, p) in ip_proto::NAMES {
            assert_eq!(ip_proto::by_name(n), Some(p), "{n}");
            assert_eq!(ip_proto::name(p), Some(n), "{p}");
            assert_eq!(n, n.to_ascii_lowercase());
        }
        assert_eq!(ip_proto::by_name("TCP"), None);
        assert_eq!(ip_proto::by_name("icmp6"), None);
        assert_eq!(ip_proto::name(200), None);
    }

    /// The classic example header (UDP, 192.168.0.1 -> 192.168.0.199,
    /// checksum b861), followed by its 95-byte payload.
    fn example() -> Vec<u8> {
        let mut v = vec![
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        v.extend((0..95).map(|i| i as u8));
        v
    }

    #[test]
    fn getters_on_example() {
        let buf = example();
        let h = Ipv4Header::new_checked(&buf[..]).unwrap();
        assert_eq!(h.version(), 4);
        assert_eq!(h.ihl(), 5);
        assert_eq!(h.header_len(), 20);
        assert_eq!(h.tos(), 0);
        assert_eq!(h.dscp(), 0);
        assert_eq!(h.ecn(), 0);
        assert_eq!(h.total_len(), 0x73);
        assert_eq!(h.ident(), 0);
        assert!(h.dont_frag());
        assert!(!h.more_frags());
        assert!(!h.reserved_flag());
        assert_eq!(h.flags(), 0b010);
        assert_eq!(h.frag_offset(), 0);
        assert!(!h.is_fragment());
        assert!(!h.is_first_fragment());
        assert_eq!(h.ttl(), 64);
        assert_eq!(h.protocol(), ip_proto::UDP);
        assert_eq!(h.checksum(), 0xb861);
        assert_eq!(h.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(h.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(h.options().is_empty());
        assert_eq!(h.option_iter().count(), 0);
        assert_eq!(h.payload().len(), 95);
        assert_eq!(h.payload_len(), 95);
        assert_eq!(h.payload()[94], 94);
        assert!(h.verify_checksum());
        assert_eq!(h.validate(), Ok(()));
    }

    #[test]
    fn payload_bounded_by_total_len() {
        let mut buf = example();
        buf.extend_from_slice(&[0xee; 10]); // Ethernet padding
        let h = Ipv4Header::new_checked(&buf[..]).unwrap();
        assert_eq!(h.payload().len(), 95);
    }

    #[test]
    fn fill_checksum_matches_known() {
        let mut buf = example();
        let mut h = Ipv4Header::new_checked(&mut buf[..]).unwrap();
        h.set_checksum(0);
        assert!(!h.verify_checksum());
        assert_eq!(h.validate(), Err(WireError::BadChecksum));
        h.fill_checksum();
        assert_eq!(h.checksum(), 0xb861);
        assert!(h.verify_checksum());
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = example();
        let mut h = Ipv4Header::new_checked(&mut buf[..]).unwrap();
        h.set_version(6);
        assert_eq!(h.version(), 6);
        assert_eq!(h.ihl(), 5);
        h.set_version(4);
        h.set_ihl(6);
        assert_eq!((h.version(), h.ihl(), h.header_len()), (4, 6, 24));
        h.set_header_len(20);
        assert_eq!(h.header_len(), 20);
        h.set_tos(0xb9);
        assert_eq!((h.tos(), h.dscp(), h.ecn()), (0xb9, 0x2e, 1));
        h.set_dscp(0x0a);
        assert_eq!((h.tos(), h.dscp(), h.ecn()), (0x29, 0x0a, 1));
        h.set_ecn(3);
        assert_eq!((h.tos(), h.dscp(), h.ecn()), (0x2b, 0x0a, 3));
        h.set_total_len(100);
        assert_eq!(h.total_len(), 100);
        h.set_ident(0xbeef);
        assert_eq!(h.ident(), 0xbeef);
        h.set_dont_frag(false);
        assert!(!h.dont_frag());
        h.set_more_frags(true);
        assert!(h.more_frags());
        assert!(h.is_fragment() && h.is_first_fragment());
        h.set_frag_offset(1480);
        assert_eq!(h.frag_offset(), 1480);
        assert_eq!(h.frag_offset_units(), 185);
        assert!(h.more_frags(), "offset setter keeps flags");
        assert!(h.is_fragment() && !h.is_first_fragment());
        h.set_more_frags(false);
        assert!(h.is_fragment(), "last fragment");
        h.set_frag_offset_units(0x1fff);
        assert_eq!(h.frag_offset(), 0xfff8);
        h.set_reserved_flag(true);
        assert!(h.reserved_flag());
        assert_eq!(h.flags(), 0b100);
        assert_eq!(h.frag_offset_units(), 0x1fff, "flag setter keeps offset");
        h.set_flags(0b011);
        assert!(h.dont_frag() && h.more_frags() && !h.reserved_flag());
        assert_eq!(h.frag_offset_units(), 0x1fff);
        h.set_frag_offset(0);
        h.set_flags(0);
        assert!(!h.is_fragment());
        h.set_ttl(1);
        assert_eq!(h.ttl(), 1);
        h.set_protocol(ip_proto::TCP);
        assert_eq!(h.protocol(), 6);
        h.set_checksum(0x1234);
        assert_eq!(h.checksum(), 0x1234);
        h.set_src_addr(Ipv4Addr::new(1, 2, 3, 4));
        assert_eq!(h.src_addr(), Ipv4Addr::new(1, 2, 3, 4));
        h.set_dst_addr(Ipv4Addr::new(5, 6, 7, 8));
        assert_eq!(h.dst_addr(), Ipv4Addr::new(5, 6, 7, 8));
        h.payload_mut()[0] = 0xaa;
        assert_eq!(h.payload()[0], 0xaa);
        assert_eq!(h.payload().len(), 80);
        h.fill_checksum();
        assert_eq!(h.validate(), Ok(()));
        let buf = h.into_inner();
        assert_eq!(buf[20], 0xaa);
    }

    #[test]
    fn length_errors() {
        let buf = example();
        for len in 0..20 {
            assert_eq!(
                Ipv4Header::new_checked(&buf[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        // Buffer shorter than total length.
        assert_eq!(
            Ipv4Header::new_checked(&buf[..100]).unwrap_err(),
            WireError::Truncated
        );
        // Header length below 20.
        let mut b = buf.clone();
        b[0] = 0x44;
        assert_eq!(
            Ipv4Header::new_checked(&b[..]).unwrap_err(),
            WireError::BadHeaderLen
        );
        // Header length beyond the buffer.
        let mut b = buf[..24].to_vec();
        b[0] = 0x4f;
        assert_eq!(
            Ipv4Header::new_checked(&b[..]).unwrap_err(),
            WireError::Truncated
        );
        // Total length below header length.
        let mut b = buf.clone();
        b[2] = 0;
        b[3] = 19;
        assert_eq!(
            Ipv4Header::new_checked(&b[..]).unwrap_err(),
            WireError::BadTotalLen
        );
        // Version.
        let mut b = buf.clone();
        b[0] = 0x65;
        assert!(Ipv4Header::new_checked(&b[..]).is_ok());
        assert_eq!(
            Ipv4Header::new_unchecked(&b[..]).validate(),
            Err(WireError::BadVersion)
        );
        assert_eq!(
            Ipv4Header::new_unchecked(&b[..3]).validate(),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn slices_never_panic_after_bad_setters() {
        let mut buf = example();
        let mut h = Ipv4Header::new_unchecked(&mut buf[..40]);
        h.set_total_len(60_000);
        h.set_ihl(15);
        assert_eq!(h.payload(), &[] as &[u8]);
        assert_eq!(h.options().len(), 20);
        assert_eq!(h.payload_mut().len(), 0);
        h.set_ihl(0);
        assert_eq!(h.options().len(), 0);
        assert_eq!(h.header().len(), 0);
        assert!(!h.verify_checksum());
    }

    #[test]
    fn incremental_updates_keep_checksum_valid() {
        let mut rng = TestRng::new(11);
        for _ in 0..500 {
            let mut buf = example();
            let mut h = Ipv4Header::new_checked(&mut buf[..]).unwrap();
            h.set_ident(rng.next_u64() as u16);
            h.set_ttl(rng.next_u64() as u8);
            h.fill_checksum();
            match rng.below(5) {
                0 => h.update_ttl(rng.next_u64() as u8),
                4 => {
                    let (ttl, c) = (h.ttl(), h.checksum());
                    h.decrement_ttl();
                    assert_eq!(h.ttl(), ttl.saturating_sub(1));
                    if ttl > 0 {
                        assert_eq!(
                            h.checksum(),
                            checksum::update_u16(
                                c,
                                u16::from(ttl) << 8 | u16::from(h.protocol()),
                                u16::from(ttl - 1) << 8 | u16::from(h.protocol())
                            )
                        );
                    }
                }
                1 => h.update_tos(rng.next_u64() as u8),
                2 => h.update_src_addr(Ipv4Addr::from(rng.next_u64() as u32)),
                _ => h.update_dst_addr(Ipv4Addr::from(rng.next_u64() as u32)),
            }
            let c = h.checksum();
            h.fill_checksum();
            assert_eq!(c, h.checksum());
        }
        let mut buf = example();
        let mut h = Ipv4Header::new_checked(&mut buf[..]).unwrap();
        h.update_ttl(63);
        assert_eq!(h.checksum(), 0xb961);
    }

    fn with_options(opts: &[u8]) -> Vec<u8> {
        assert!(opts.len() & 3 == 0 && opts.len() <= 40);
        let hlen = 20 + opts.len();
        let mut v = example()[..20].to_vec();
        v[0] = 0x40 | (hlen / 4) as u8;
        v[2..4].copy_from_slice(&(hlen as u16 + 4).to_be_bytes());
        v.extend_from_slice(opts);
        v.extend_from_slice(&[1, 2, 3, 4]);
        let mut h = Ipv4Header::new_checked(&mut v[..]).unwrap();
        h.fill_checksum();
        v
    }

    #[test]
    fn options_parse() {
        #[rustfmt::skip]
        let opts = [
            opt::NOP,
            opt::RR, 11, 8, 10, 0, 0, 1, 0, 0, 0, 0,
            opt::RA, 4, 0, 0,
            opt::TS, 8, 5, 0x31, 0, 0, 0, 9,
            opt::LSRR, 7, 4, 10, 0, 0, 9,
            0x99, 3, 0xab,
            opt::EOL, 0xff,
        ];
        let buf = with_options(&opts);
        let h = Ipv4Header::new_checked(&buf[..]).unwrap();
        assert_eq!(h.validate(), Ok(()));
        assert_eq!(h.options(), &opts[..]);
        assert_eq!(h.payload(), &[1, 2, 3, 4]);
        let mut it = h.option_iter();
        assert_eq!(it.next(), Some(Ok(Ipv4Option::Nop)));
        assert_eq!(it.position(), 0);
        let rr = match it.next() {
            Some(Ok(Ipv4Option::RecordRoute(r))) => r,
            o => panic!("{o:?}"),
        };
        assert_eq!(it.position(), 1);
        assert_eq!(rr.pointer, 8);
        assert_eq!(rr.data.len(), 8);
        assert_eq!(
            rr.addrs().collect::<Vec<_>>(),
            [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(0, 0, 0, 0)]
        );
        assert_eq!(rr.next_slot(), Some(4));
        assert_eq!(it.next(), Some(Ok(Ipv4Option::RouterAlert(0))));
        assert_eq!(it.position(), 12);
        assert_eq!(
            it.next(),
            Some(Ok(Ipv4Option::Timestamp(TimestampOption {
                pointer: 5,
                overflow: 3,
                flags: 1,
                data: &[0, 0, 0, 9],
            })))
        );
        let lsrr = match it.next() {
            Some(Ok(Ipv4Option::LooseSourceRoute(r))) => r,
            o => panic!("{o:?}"),
        };
        assert_eq!(lsrr.next_slot(), Some(0));
        assert_eq!(
            it.next(),
            Some(Ok(Ipv4Option::Unknown {
                kind: 0x99,
                data: &[0xab]
            }))
        );
        assert_eq!(it.next(), Some(Ok(Ipv4Option::EndOfList)));
        assert_eq!(it.position(), 34);
        assert_eq!(it.next(), None);
        assert_eq!(it.next(), None);
    }

    #[test]
    fn route_slots() {
        let full = RouteOption {
            pointer: 12,
            data: &[0; 8],
        };
        assert_eq!(full.next_slot(), None);
        let bad = RouteOption {
            pointer: 3,
            data: &[0; 8],
        };
        assert_eq!(bad.next_slot(), None);
        let odd = RouteOption {
            pointer: 6,
            data: &[0; 8],
        };
        assert_eq!(odd.next_slot(), None);
        let ssrr = Ipv4OptionIter::new(&[opt::SSRR, 3, 4]).next();
        assert!(matches!(
            ssrr,
            Some(Ok(Ipv4Option::StrictSourceRoute(RouteOption {
                pointer: 4,
                data: &[]
            })))
        ));
    }

    #[test]
    fn malformed_options() {
        let cases: &[(&[u8], WireError)] = &[
            (&[opt::RR], WireError::Truncated),
            (&[opt::RR, 0], WireError::Malformed),
            (&[opt::RR, 1], WireError::Malformed),
            (&[opt::RR, 2], WireError::Malformed),
            (&[opt::RR, 9, 4, 0], WireError::Malformed),
            (&[opt::TS, 3, 5], WireError::Malformed),
            (&[opt::RA, 3, 0], WireError::Malformed),
            (&[opt::RA, 6, 0, 0, 0, 0], WireError::Malformed),
            (&[0x99, 1], WireError::Malformed),
        ];
        for &(bytes, e) in cases {
            let mut it = Ipv4OptionIter::new(bytes);
            assert_eq!(it.next(), Some(Err(e)), "{bytes:?}");
            assert_eq!(it.next(), None);
        }
        let mut it = Ipv4OptionIter::new(&[opt::NOP, opt::NOP, opt::RR, 40]);
        assert_eq!(it.next(), Some(Ok(Ipv4Option::Nop)));
        assert_eq!(it.next(), Some(Ok(Ipv4Option::Nop)));
        assert_eq!(it.next(), Some(Err(WireError::Malformed)));
        assert_eq!(it.position(), 2);
        assert_eq!(it.next(), None);
    }

    #[test]
    fn random_options_never_panic() {
        let mut rng = TestRng::new(12);
        let kinds = [0u8, 1, 7, 68, 131, 137, 148, 0x99];
        for _ in 0..20_000 {
            let len = rng.below(41);
            let mut bytes = rng.bytes(len);
            // Bias towards known kinds and small lengths so that the
            // interesting paths run.
            for b in bytes.iter_mut() {
                match rng.below(4) {
                    0 => *b = kinds[rng.below(kinds.len())],
                    1 => *b %= 12,
                    _ => {}
                }
            }
            let mut n = 0;
            let mut covered = 0;
            let mut it = Ipv4OptionIter::new(&bytes);
            while let Some(item) = it.next() {
                n += 1;
                assert!(n <= bytes.len(), "progress");
                assert!(it.position() < bytes.len().max(1));
                if let Ok(o) = item {
                    covered = it.position();
                    if let Ipv4Option::RecordRoute(r) = o {
                        let _ = r.addrs().count();
                        if let Some(i) = r.next_slot() {
                            assert!(i + 4 <= r.data.len());
                        }
                    }
                }
            }
            assert!(covered <= bytes.len());
        }
    }

    #[test]
    fn random_headers_never_panic() {
        let mut rng = TestRng::new(13);
        for _ in 0..20_000 {
            let len = rng.below(80);
            let mut bytes = rng.bytes(len);
            if len > 4 && rng.below(2) == 0 {
                bytes[0] = 0x40 | (bytes[0] & 0x0f);
                let total = rng.below(len + 1) as u16;
                bytes[2..4].copy_from_slice(&total.to_be_bytes());
            }
            let unchecked = Ipv4Header::new_unchecked(&bytes[..]);
            let _ = unchecked.validate();
            if len >= 20 {
                // The slices are clamped: with the fixed header present they
                // cannot panic whatever the length fields say.
                let _ = (unchecked.options(), unchecked.payload(), unchecked.header());
            }
            if let Ok(h) = Ipv4Header::new_checked(&bytes[..]) {
                assert!(h.header_len() >= 20 && h.header_len() <= bytes.len());
                let _ = (h.version(), h.tos(), h.ident(), h.frag_offset(), h.ttl());
                let _ = (h.protocol(), h.checksum(), h.src_addr(), h.dst_addr());
                let _ = h.option_iter().count();
                assert_eq!(h.payload().len(), h.payload_len());
                let _ = Ipv4Repr::parse(&h);
            }
        }
    }

    #[test]
    fn repr_round_trip() {
        let buf = example();
        let h = Ipv4Header::new_checked(&buf[..]).unwrap();
        let r = Ipv4Repr::parse(&h).unwrap();
        assert_eq!(
            r,
            Ipv4Repr {
                src_addr: Ipv4Addr::new(192, 168, 0, 1),
                dst_addr: Ipv4Addr::new(192, 168, 0, 199),
                protocol: ip_proto::UDP,
                payload_len: 95,
                ttl: 64,
                tos: 0,
                ident: 0,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
            }
        );
        assert_eq!(r.buffer_len(), 115);
        assert_eq!(r.header_len(), 20);
        let mut out = [0xffu8; 115];
        r.emit(&mut Ipv4Header::new_unchecked(&mut out[..]));
        assert_eq!(&out[..20], &buf[..20]);

        let frag = Ipv4Repr {
            more_frags: true,
            frag_offset: 2960,
            dont_frag: false,
            ..r
        };
        let mut out = [0u8; 115];
        let mut h = Ipv4Header::new_unchecked(&mut out[..]);
        frag.emit(&mut h);
        assert_eq!(Ipv4Repr::parse(&h), Ok(frag));

        let mut bad = buf.clone();
        bad[11] ^= 1;
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Header::new_unchecked(&bad[..])),
            Err(WireError::BadChecksum)
        );
        // Options are dropped, the payload length kept.
        let buf = with_options(&[opt::NOP, opt::NOP, opt::NOP, opt::EOL]);
        let r = Ipv4Repr::parse(&Ipv4Header::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(r.payload_len, 4);
    }

    #[test]
    fn prefix_parse_and_display() {
        let p: Ipv4Prefix = "10.0.0.0/8".parse().unwrap();
        assert_eq!(p, Ipv4Prefix::new(Ipv4Addr::new(10, 0, 0, 0), 8).unwrap());
        assert_eq!(p.to_string(), "10.0.0.0/8");
        assert_eq!("10.0.0.0/255.0.0.0".parse::<Ipv4Prefix>(), Ok(p));
        assert_eq!(
            "18.26.4.9".parse::<Ipv4Prefix>(),
            Ok(Ipv4Prefix::host(Ipv4Addr::new(18, 26, 4, 9)))
        );
        assert_eq!("0.0.0.0/0".parse::<Ipv4Prefix>().unwrap().len, 0);
        assert_eq!("0.0.0.0/0.0.0.0".parse::<Ipv4Prefix>().unwrap().len, 0);
        assert_eq!(
            "1.2.3.4/255.255.255.255".parse::<Ipv4Prefix>().unwrap().len,
            32
        );
        assert_eq!(
            "1.2.3.4/255.255.255.192".parse::<Ipv4Prefix>().unwrap().len,
            26
        );
        for bad in [
            "",
            "10.0.0.0/",
            "10.0.0.0/33",
            "10.0.0.0/-1",
            "10.0.0.0/+8",
            "10.0.0.0/008",
            "10.0.0.0/255.0.255.0",
            "10.0.0.0/8/8",
            "10.0.0/8",
            "10.0.0.256/8",
            "x/8",
        ] {
            assert!(bad.parse::<Ipv4Prefix>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "1/2".parse::<Ipv4Prefix>().unwrap_err().to_string(),
            "invalid IP prefix"
        );
    }

    #[test]
    fn prefix_mask_contains() {
        let p: Ipv4Prefix = "10.1.2.3/8".parse().unwrap();
        assert_eq!(p.addr, Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(p.mask(), Ipv4Addr::new(255, 0, 0, 0));
        assert_eq!(p.network(), Ipv4Addr::new(10, 0, 0, 0));
        assert!(p.contains(Ipv4Addr::new(10, 255, 0, 1)));
        assert!(!p.contains(Ipv4Addr::new(11, 0, 0, 0)));
        let all = Ipv4Prefix::new(Ipv4Addr::UNSPECIFIED, 0).unwrap();
        assert_eq!(all.mask_u32(), 0);
        assert!(all.contains(Ipv4Addr::BROADCAST));
        let host = Ipv4Prefix::host(Ipv4Addr::new(1, 2, 3, 4));
        assert_eq!(host.mask(), Ipv4Addr::BROADCAST);
        assert!(host.contains(Ipv4Addr::new(1, 2, 3, 4)));
        assert!(!host.contains(Ipv4Addr::new(1, 2, 3, 5)));
        let weird = Ipv4Prefix {
            addr: Ipv4Addr::new(1, 2, 3, 4),
            len: 200,
        };
        assert_eq!(weird.mask_u32(), u32::MAX);
        assert_eq!(Ipv4Prefix::new(Ipv4Addr::UNSPECIFIED, 33), None);
        for len in 0..=32u8 {
            let p = Ipv4Prefix::new(Ipv4Addr::new(192, 168, 1, 1), len).unwrap();
            assert_eq!(p.mask_u32().count_ones(), u32::from(len));
            assert_eq!(Ipv4Prefix::from_mask(p.addr, p.mask()), Some(p));
            assert_eq!(p.to_string().parse(), Ok(p));
        }
    }
}
