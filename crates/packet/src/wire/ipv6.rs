//! IPv6 (RFC 8200): header view, `Ipv6Repr`, `Ipv6Prefix`, the
//! extension-header chain walker, and the IPv6 pseudo-header sum.

use core::fmt;
use core::net::Ipv6Addr;
use core::str::FromStr;

use super::checksum;
use super::{clamped, clamped_mut, get_u16, get_u32, set_u16, set_u32, AddrParseError};
use super::{Result, WireError};

/// Next-header values of the IPv6 extension headers and the upper layers
/// most often found after them (the rest share IPv4's [`super::ip_proto`]).
pub mod next_header {
    /// Hop-by-hop options (only directly after the fixed header).
    pub const HOP_BY_HOP: u8 = 0;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 in IPv6.
    pub const IPV6: u8 = 41;
    /// Routing header.
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating security payload (ends the walk: encrypted after it).
    pub const ESP: u8 = 50;
    /// Authentication header (length in 4-byte units, RFC 4302).
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NONE: u8 = 59;
    /// Destination options.
    pub const DEST_OPTS: u8 = 60;
}

mod field {
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
}

view! {
    /// A view of an IPv6 fixed header and the datagram it heads.
    ///
    /// After [`Ipv6Header::new_checked`] the buffer holds the 40-byte header
    /// and the `payload_len` bytes it announces; it may be longer (Ethernet
    /// padding), and [`Ipv6Header::payload`] stops at the payload length. A
    /// payload length of 0 with a hop-by-hop header (a jumbogram, RFC 2675) is
    /// not supported: it reads as an empty payload.
    Ipv6Header,
    /// Wraps `buffer`, checking the lengths (see [`Ipv6Header::check_len`]).
}

impl<T: AsRef<[u8]>> Ipv6Header<T> {
    /// Length of the fixed header.
    pub const LEN: usize = 40;

    /// `Truncated` if the buffer is shorter than the fixed header or than
    /// the header plus the payload length.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < Self::LEN || len < Self::LEN + usize::from(self.payload_len()) {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The lengths as in [`Ipv6Header::check_len`] and version 6
    /// (`BadVersion`). IPv6 has no header checksum.
    #[inline]
    pub fn validate(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 6 {
            return Err(WireError::BadVersion);
        }
        self.check_len()
    }

    #[inline]
    fn word0(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::VER_TC_FLOW)
    }

    /// Version (6).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class (DSCP and ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }

    /// Differentiated services code point (upper 6 bits of the class).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Explicit congestion notification (lower 2 bits of the class).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }

    /// Payload length (everything after the fixed header).
    #[inline]
    pub fn payload_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::PAYLOAD_LEN)
    }

    /// Next header (first extension header or the upper layer).
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::SRC)
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::DST)
    }

    /// The payload (extension headers and upper layer), clamped to the
    /// buffer and to the payload length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(
            self.buffer.as_ref(),
            Self::LEN,
            Self::LEN + usize::from(self.payload_len()),
        )
    }

    /// Walks the extension-header chain of the payload.
    #[inline]
    pub fn ext_headers(&self) -> ExtHeaderIter<'_> {
        ExtHeaderIter::new(self.next_header(), self.payload())
    }

    /// The upper-layer protocol and its offset in the payload, after the
    /// extension headers (see [`ExtHeaderIter::upper_layer`]).
    #[inline]
    pub fn upper_layer(&self) -> Result<UpperLayer> {
        self.ext_headers().upper_layer()
    }
}

#[inline]
fn addr_at(b: &[u8], at: usize) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[at..at + 16]);
    Ipv6Addr::from(a)
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Header<T> {
    #[inline]
    fn set_word0(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::VER_TC_FLOW, v);
    }

    /// Sets the version.
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let w = self.word0();
        self.set_word0((w & 0x0fff_ffff) | (u32::from(v & 15) << 28));
    }

    /// Sets the traffic class.
    #[inline]
    pub fn set_traffic_class(&mut self, v: u8) {
        let w = self.word0();
        self.set_word0((w & 0xf00f_ffff) | (u32::from(v) << 20));
    }

    /// Sets the flow label (the upper 12 bits of `v` are ignored).
    #[inline]
    pub fn set_flow_label(&mut self, v: u32) {
        let w = self.word0();
        self.set_word0((w & 0xfff0_0000) | (v & 0x000f_ffff));
    }

    /// Sets the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::PAYLOAD_LEN, v);
    }

    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = v;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC..field::SRC + 16].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST..field::DST + 16].copy_from_slice(&a.octets());
    }

    /// The payload, mutable (clamped as [`Ipv6Header::payload`]).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = Self::LEN + usize::from(self.payload_len());
        clamped_mut(self.buffer.as_mut(), Self::LEN, end)
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv6Header<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// Sum of the IPv6 pseudo-header (RFC 8200 §8.1) used by the TCP, UDP and
/// ICMPv6 checksums: source, destination, upper-layer length (32 bits) and
/// next header. Folded, not complemented (see [`checksum`]).
#[inline]
pub fn pseudo_header_sum(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, length: u32) -> u16 {
    let mut acc: u64 = 0;
    for a in [src, dst] {
        for w in a.segments() {
            acc += u64::from(w);
        }
    }
    acc += u64::from(length >> 16) + u64::from(length & 0xffff) + u64::from(next_header);
    checksum::fold(acc)
}

/// The checksum of an upper-layer message (`data`, its checksum field
/// zeroed or included) under the IPv6 pseudo-header.
#[inline]
pub fn upper_layer_checksum(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, data: &[u8]) -> u16 {
    let ph = pseudo_header_sum(src, dst, next_header, data.len() as u32);
    !checksum::add(ph, checksum::sum(data))
}

/// The fields of an IPv6 fixed header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    pub next_header: u8,
    /// Length of the payload (extension headers and upper layer).
    pub payload_len: usize,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Reads a header after [`Ipv6Header::validate`].
    pub fn parse<T: AsRef<[u8]>>(h: &Ipv6Header<T>) -> Result<Ipv6Repr> {
        h.validate()?;
        Ok(Ipv6Repr {
            src_addr: h.src_addr(),
            dst_addr: h.dst_addr(),
            next_header: h.next_header(),
            payload_len: usize::from(h.payload_len()),
            hop_limit: h.hop_limit(),
            traffic_class: h.traffic_class(),
            flow_label: h.flow_label(),
        })
    }

    /// Length of the emitted header (40).
    #[inline]
    pub const fn header_len(&self) -> usize {
        40
    }

    /// Length of the emitted datagram.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        40 + self.payload_len
    }

    /// Writes the 40-byte header. The buffer must hold 40 bytes and
    /// `payload_len` must be at most 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut Ipv6Header<T>) {
        debug_assert!(self.payload_len <= 65535);
        h.set_word0(6 << 28);
        h.set_traffic_class(self.traffic_class);
        h.set_flow_label(self.flow_label);
        h.set_payload_len(self.payload_len as u16);
        h.set_next_header(self.next_header);
        h.set_hop_limit(self.hop_limit);
        h.set_src_addr(self.src_addr);
        h.set_dst_addr(self.dst_addr);
    }
}

/// Largest number of extension headers [`ExtHeaderIter`] walks before it
/// gives up (`Malformed`): a bound on the work one packet can cause.
pub const MAX_EXT_HEADERS: usize = 16;

/// One extension header of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtHeader<'a> {
    /// Hop-by-hop options: the option area (after next-header and length).
    HopByHop(Options<'a>),
    /// Destination options.
    DestOpts(Options<'a>),
    /// Routing header.
    Routing {
        routing_type: u8,
        segments_left: u8,
        /// The type-specific data after the first four bytes.
        data: &'a [u8],
    },
    /// Fragment header.
    Fragment {
        /// Offset in bytes (a multiple of 8).
        offset: u16,
        more_frags: bool,
        ident: u32,
    },
    /// Authentication header: its whole length in bytes.
    Auth { len: usize },
}

/// The option area of a hop-by-hop or destination options header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a>(pub &'a [u8]);

/// One TLV option of a hop-by-hop or destination options header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv6Option<'a> {
    /// One byte of padding.
    Pad1,
    /// N bytes of padding.
    PadN(usize),
    /// Router alert (RFC 2711) with its value.
    RouterAlert(u16),
    /// Any other option. The top two bits of `kind` say what a node that
    /// does not know it must do (RFC 8200 §4.2).
    Unknown { kind: u8, data: &'a [u8] },
}

impl<'a> Options<'a> {
    /// The options, each with its offset in the option area; stops after
    /// the first malformed one (yielding `Err`). Never panics.
    pub fn iter(&self) -> impl Iterator<Item = (usize, Result<Ipv6Option<'a>>)> + 'a {
        let data = self.0;
        let mut at = 0usize;
        let mut done = false;
        core::iter::from_fn(move || {
            if done || at >= data.len() {
                return None;
            }
            let start = at;
            let kind = data[at];
            if kind == 0 {
                at += 1;
                return Some((start, Ok(Ipv6Option::Pad1)));
            }
            let Some(&len) = data.get(at + 1) else {
                done = true;
                return Some((start, Err(WireError::Truncated)));
            };
            let end = at + 2 + usize::from(len);
            if end > data.len() {
                done = true;
                return Some((start, Err(WireError::Malformed)));
            }
            let body = &data[at + 2..end];
            at = end;
            let o = match kind {
                1 => Ipv6Option::PadN(body.len() + 2),
                5 if body.len() == 2 => {
                    Ipv6Option::RouterAlert(u16::from_be_bytes([body[0], body[1]]))
                }
                5 => {
                    done = true;
                    return Some((start, Err(WireError::Malformed)));
                }
                _ => Ipv6Option::Unknown { kind, data: body },
            };
            Some((start, Ok(o)))
        })
    }
}

/// Where the extension headers end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpperLayer {
    /// The upper-layer protocol (or ESP / NONE, which end the walk).
    pub protocol: u8,
    /// Its offset in the IPv6 payload.
    pub offset: usize,
    /// True if a fragment header with a nonzero offset was seen (the
    /// upper-layer header is not in this packet).
    pub later_fragment: bool,
}

/// Walks the extension headers of an IPv6 payload (RFC 8200 §4): yields
/// `(next_header_value, offset_in_payload, header)` for each, in order.
///
/// A header running past the payload gives `Err(Truncated)`; more than
/// [`MAX_EXT_HEADERS`] headers or a hop-by-hop header anywhere but first
/// give `Err(Malformed)`. After an error, or when the upper layer is
/// reached, the iterator ends. It never panics and takes at most
/// `MAX_EXT_HEADERS + 1` steps.
#[derive(Debug, Clone)]
pub struct ExtHeaderIter<'a> {
    data: &'a [u8],
    next: u8,
    at: usize,
    count: usize,
    later_fragment: bool,
    done: bool,
}

/// True if `nh` is an extension header this walker steps over.
#[inline]
pub const fn is_ext_header(nh: u8) -> bool {
    matches!(
        nh,
        next_header::HOP_BY_HOP
            | next_header::ROUTING
            | next_header::FRAGMENT
            | next_header::DEST_OPTS
            | next_header::AH
    )
}

impl<'a> ExtHeaderIter<'a> {
    /// Walks `payload`, whose first header is `first` (the fixed header's
    /// next header).
    pub fn new(first: u8, payload: &'a [u8]) -> Self {
        ExtHeaderIter {
            data: payload,
            next: first,
            at: 0,
            count: 0,
            later_fragment: false,
            done: false,
        }
    }

    /// The next-header value after the headers walked so far.
    pub fn next_header(&self) -> u8 {
        self.next
    }

    /// Offset in the payload after the headers walked so far.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// Walks to the end of the chain: the upper-layer protocol and offset.
    pub fn upper_layer(mut self) -> Result<UpperLayer> {
        for item in self.by_ref() {
            item?;
        }
        Ok(UpperLayer {
            protocol: self.next,
            offset: self.at,
            later_fragment: self.later_fragment,
        })
    }
}

impl<'a> Iterator for ExtHeaderIter<'a> {
    type Item = Result<(u8, usize, ExtHeader<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || !is_ext_header(self.next) {
            return None;
        }
        let fail = |s: &mut Self, e| {
            s.done = true;
            Some(Err(e))
        };
        if self.count >= MAX_EXT_HEADERS
            || (self.next == next_header::HOP_BY_HOP && self.count != 0)
        {
            return fail(self, WireError::Malformed);
        }
        let rest = clamped(self.data, self.at, usize::MAX);
        if rest.len() < 8 {
            return fail(self, WireError::Truncated);
        }
        let kind = self.next;
        let len = match kind {
            next_header::FRAGMENT => 8,
            next_header::AH => (usize::from(rest[1]) + 2) * 4,
            _ => (usize::from(rest[1]) + 1) * 8,
        };
        if rest.len() < len {
            return fail(self, WireError::Truncated);
        }
        let h = &rest[..len];
        let item = match kind {
            next_header::HOP_BY_HOP => ExtHeader::HopByHop(Options(&h[2..])),
            next_header::DEST_OPTS => ExtHeader::DestOpts(Options(&h[2..])),
            next_header::ROUTING => ExtHeader::Routing {
                routing_type: h[2],
                segments_left: h[3],
                data: &h[4..],
            },
            next_header::FRAGMENT => {
                let w = get_u16(h, 2);
                let offset = w & 0xfff8;
                if offset != 0 {
                    self.later_fragment = true;
                }
                ExtHeader::Fragment {
                    offset,
                    more_frags: w & 1 != 0,
                    ident: get_u32(h, 4),
                }
            }
            _ => ExtHeader::Auth { len },
        };
        let off = self.at;
        self.next = h[0];
        self.at += len;
        self.count += 1;
        if self.later_fragment {
            // The rest of a non-first fragment is data, not headers.
            self.done = true;
        }
        Some(Ok((kind, off, item)))
    }
}

impl core::iter::FusedIterator for ExtHeaderIter<'_> {}

/// An IPv6 address with a prefix length: `2001:db8::/32`.
///
/// `addr` is kept as written; [`Ipv6Prefix::network`] clears the host
/// bits. A `len` above 128 behaves as 128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv6Prefix {
    pub addr: Ipv6Addr,
    pub len: u8,
}

impl Ipv6Prefix {
    /// `addr/len`, or `None` if `len > 128`.
    #[inline]
    pub const fn new(addr: Ipv6Addr, len: u8) -> Option<Self> {
        if len > 128 {
            None
        } else {
            Some(Ipv6Prefix { addr, len })
        }
    }

    /// `addr/128`.
    #[inline]
    pub const fn host(addr: Ipv6Addr) -> Self {
        Ipv6Prefix { addr, len: 128 }
    }

    /// The mask as an integer.
    #[inline]
    pub const fn mask_u128(&self) -> u128 {
        mask128(self.len)
    }

    /// The address with its host bits cleared.
    #[inline]
    pub fn network(&self) -> Ipv6Addr {
        Ipv6Addr::from(u128::from(self.addr) & self.mask_u128())
    }

    /// True if `addr` is within the prefix.
    #[inline]
    pub fn contains(&self, addr: Ipv6Addr) -> bool {
        (u128::from(self.addr) ^ u128::from(addr)) & self.mask_u128() == 0
    }
}

/// The mask of a prefix length (lengths above 128 act as 128).
#[inline]
pub const fn mask128(len: u8) -> u128 {
    let len = if len > 128 { 128 } else { len as u32 };
    match u128::MAX.checked_shl(128 - len) {
        Some(m) => m,
        None => 0,
    }
}

impl fmt::Display for Ipv6Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for Ipv6Prefix {
    type Err = AddrParseError;

    /// Accepts `2001:db8::/32`, a contiguous mask written as an address
    /// (`2001:db8::/ffff:ffff::`), and a bare address, read as `/128`.
    fn from_str(s: &str) -> core::result::Result<Self, AddrParseError> {
        let err = AddrParseError::new("IPv6 prefix");
        let (a, rest) = match s.split_once('/') {
            Some((a, rest)) => (a, Some(rest)),
            None => (s, None),
        };
        let addr: Ipv6Addr = a.parse().map_err(|_| err)?;
        match rest {
            None => Ok(Ipv6Prefix::host(addr)),
            Some(m) if m.contains(':') => {
                let m = u128::from(m.parse::<Ipv6Addr>().map_err(|_| err)?);
                let len = m.leading_ones();
                if m.checked_shl(len).unwrap_or(0) != 0 {
                    return Err(err);
                }
                Ok(Ipv6Prefix {
                    addr,
                    len: len as u8,
                })
            }
            Some(l) => {
                if l.is_empty() || l.len() > 3 || !l.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(err);
                }
                let len: u8 = l.parse().map_err(|_| err)?;
                Ipv6Prefix::new(addr, len).ok_or(err)
            }
        }
    }
}

/// Address classes the IPv6 elements test.
pub mod addr {
    use core::net::Ipv6Addr;

    /// `ff00::/8`.
    #[inline]
    pub fn is_multicast(a: &Ipv6Addr) -> bool {
        a.octets()[0] == 0xff
    }

    /// `fe80::/10`.
    #[inline]
    pub fn is_link_local(a: &Ipv6Addr) -> bool {
        let o = a.octets();
        o[0] == 0xfe && o[1] & 0xc0 == 0x80
    }

    /// The solicited-node multicast address of `a` (RFC 4291 §2.7.1):
    /// `ff02::1:ffXX:XXXX` with the low 24 bits of `a`.
    #[inline]
    pub fn solicited_node(a: &Ipv6Addr) -> Ipv6Addr {
        let o = a.octets();
        Ipv6Addr::from([
            0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15],
        ])
    }

    /// The Ethernet multicast address of an IPv6 multicast group
    /// (RFC 2464 §7): `33:33` and the group's low 32 bits.
    #[inline]
    pub fn multicast_ether(a: &Ipv6Addr) -> [u8; 6] {
        let o = a.octets();
        [0x33, 0x33, o[12], o[13], o[14], o[15]]
    }

    /// The link-local address of an interface identifier made from an
    /// Ethernet address (modified EUI-64, RFC 4291 appendix A).
    pub fn link_local_from_ether(e: [u8; 6]) -> Ipv6Addr {
        Ipv6Addr::from([
            0xfe,
            0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            e[0] ^ 2,
            e[1],
            e[2],
            0xff,
            0xfe,
            e[3],
            e[4],
            e[5],
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TestRng;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// A UDP datagram 2001:db8::1 -> 2001:db8::2, class 0xb8, flow 0x12345,
    /// hop limit 64, 8-byte payload.
    fn example() -> Vec<u8> {
        let mut v = vec![0x6b, 0x81, 0x23, 0x45, 0, 8, 17, 64];
        v.extend_from_slice(&a("2001:db8::1").octets());
        v.extend_from_slice(&a("2001:db8::2").octets());
        v.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0, 8, 0, 0]);
        v
    }

    #[test]
    fn getters() {
        let buf = example();
        let h = Ipv6Header::new_checked(&buf[..]).unwrap();
        assert_eq!(h.validate(), Ok(()));
        assert_eq!(h.version(), 6);
        assert_eq!(h.traffic_class(), 0xb8);
        assert_eq!(h.dscp(), 0x2e);
        assert_eq!(h.ecn(), 0);
        assert_eq!(h.flow_label(), 0x12345);
        assert_eq!(h.payload_len(), 8);
        assert_eq!(h.next_header(), next_header::UDP);
        assert_eq!(h.hop_limit(), 64);
        assert_eq!(h.src_addr(), a("2001:db8::1"));
        assert_eq!(h.dst_addr(), a("2001:db8::2"));
        assert_eq!(h.payload(), &buf[40..48]);
        assert_eq!(
            h.upper_layer(),
            Ok(UpperLayer {
                protocol: 17,
                offset: 0,
                later_fragment: false
            })
        );
    }

    #[test]
    fn setters() {
        let mut buf = [0u8; 60];
        let mut h = Ipv6Header::new_unchecked(&mut buf[..]);
        h.set_version(6);
        assert_eq!(h.version(), 6);
        h.set_traffic_class(0xff);
        assert_eq!(h.traffic_class(), 0xff);
        assert_eq!(h.version(), 6);
        h.set_flow_label(0xfff_ffff);
        assert_eq!(h.flow_label(), 0xf_ffff);
        assert_eq!(h.traffic_class(), 0xff);
        h.set_traffic_class(1);
        assert_eq!(h.ecn(), 1);
        assert_eq!(h.flow_label(), 0xf_ffff);
        h.set_payload_len(20);
        assert_eq!(h.payload_len(), 20);
        h.set_next_header(58);
        assert_eq!(h.next_header(), 58);
        h.set_hop_limit(1);
        assert_eq!(h.hop_limit(), 1);
        h.set_src_addr(a("fe80::1"));
        assert_eq!(h.src_addr(), a("fe80::1"));
        h.set_dst_addr(a("ff02::1"));
        assert_eq!(h.dst_addr(), a("ff02::1"));
        h.payload_mut()[0] = 9;
        assert_eq!(h.payload().len(), 20);
        assert_eq!(h.validate(), Ok(()));
        assert_eq!(h.into_inner()[40], 9);
    }

    #[test]
    fn length_errors() {
        let buf = example();
        for len in 0..48 {
            assert_eq!(
                Ipv6Header::new_checked(&buf[..len]).unwrap_err(),
                WireError::Truncated,
                "{len}"
            );
        }
        let mut b = buf.clone();
        b[0] = 0x4b;
        assert!(Ipv6Header::new_checked(&b[..]).is_ok());
        assert_eq!(
            Ipv6Header::new_unchecked(&b[..]).validate(),
            Err(WireError::BadVersion)
        );
        // Padding after the payload is allowed and not part of it.
        let mut b = buf.clone();
        b.extend_from_slice(&[0; 10]);
        let h = Ipv6Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.payload().len(), 8);
    }

    #[test]
    fn repr_round_trip() {
        let buf = example();
        let r = Ipv6Repr::parse(&Ipv6Header::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            Ipv6Repr {
                src_addr: a("2001:db8::1"),
                dst_addr: a("2001:db8::2"),
                next_header: 17,
                payload_len: 8,
                hop_limit: 64,
                traffic_class: 0xb8,
                flow_label: 0x12345,
            }
        );
        assert_eq!(r.header_len(), 40);
        assert_eq!(r.buffer_len(), 48);
        let mut out = [0xffu8; 48];
        r.emit(&mut Ipv6Header::new_unchecked(&mut out[..]));
        assert_eq!(&out[..40], &buf[..40]);
        let mut bad = buf.clone();
        bad[0] = 0x5b;
        assert_eq!(
            Ipv6Repr::parse(&Ipv6Header::new_unchecked(&bad[..])),
            Err(WireError::BadVersion)
        );
    }

    #[test]
    fn pseudo_header_and_udp_checksum() {
        // UDP 2001:db8::1:1234 -> 2001:db8::2:5678, no data, by hand:
        // pseudo = (2001+0db8+0001) + (2001+0db8+0002) + 8 + 17 = 0x5b8e;
        // udp = 1234+5678+0008 = 0x68b4; sum 0xc442; checksum 0x3bbd.
        let src = a("2001:db8::1");
        let dst = a("2001:db8::2");
        assert_eq!(pseudo_header_sum(&src, &dst, 17, 8), 0x5b8e);
        let udp = [0x12, 0x34, 0x56, 0x78, 0, 8, 0, 0];
        assert_eq!(upper_layer_checksum(&src, &dst, 17, &udp), 0x3bbd);
        let mut with = udp;
        with[6..8].copy_from_slice(&0x3bbdu16.to_be_bytes());
        assert_eq!(upper_layer_checksum(&src, &dst, 17, &with), 0);
    }

    fn chain() -> Vec<u8> {
        let mut p = Vec::new();
        // Hop-by-hop (next: routing), 8 bytes: router alert + PadN(0).
        p.extend_from_slice(&[43, 0, 5, 2, 0, 0, 1, 0]);
        // Routing (next: fragment), type 4, segments left 1, 24 bytes.
        p.extend_from_slice(&[44, 2, 4, 1, 0, 0, 0, 0]);
        p.extend_from_slice(&[0xaa; 16]);
        // Fragment (next: dest opts), offset 0, M=1, ident 0xdeadbeef.
        p.extend_from_slice(&[60, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef]);
        // Destination options (next: TCP), Pad1 x2, unknown 0x1e len 2.
        p.extend_from_slice(&[6, 0, 0, 0, 0x1e, 2, 7, 7]);
        p.extend_from_slice(&[0; 20]);
        p
    }

    #[test]
    fn ext_header_walk() {
        let p = chain();
        let items: Vec<_> = ExtHeaderIter::new(0, &p).map(|r| r.unwrap()).collect();
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].0, 0);
        assert_eq!(items[0].1, 0);
        match items[0].2 {
            ExtHeader::HopByHop(o) => {
                let opts: Vec<_> = o.iter().collect();
                assert_eq!(
                    opts,
                    [
                        (0, Ok(Ipv6Option::RouterAlert(0))),
                        (4, Ok(Ipv6Option::PadN(2)))
                    ]
                );
            }
            x => panic!("{x:?}"),
        }
        assert_eq!(
            items[1],
            (
                43,
                8,
                ExtHeader::Routing {
                    routing_type: 4,
                    segments_left: 1,
                    data: &p[12..32]
                }
            )
        );
        assert_eq!(
            items[2],
            (
                44,
                32,
                ExtHeader::Fragment {
                    offset: 0,
                    more_frags: true,
                    ident: 0xdead_beef
                }
            )
        );
        match items[3] {
            (60, 40, ExtHeader::DestOpts(o)) => {
                let opts: Vec<_> = o.iter().collect();
                assert_eq!(
                    opts,
                    [
                        (0, Ok(Ipv6Option::Pad1)),
                        (1, Ok(Ipv6Option::Pad1)),
                        (
                            2,
                            Ok(Ipv6Option::Unknown {
                                kind: 0x1e,
                                data: &[7, 7]
                            })
                        )
                    ]
                );
            }
            x => panic!("{x:?}"),
        }
        assert_eq!(
            ExtHeaderIter::new(0, &p).upper_layer(),
            Ok(UpperLayer {
                protocol: 6,
                offset: 48,
                later_fragment: false
            })
        );
    }

    #[test]
    fn ext_header_errors() {
        let p = chain();
        // Every truncation of the chain is an error, never a panic.
        for len in 0..48 {
            assert_eq!(
                ExtHeaderIter::new(0, &p[..len]).upper_layer(),
                Err(WireError::Truncated),
                "{len}"
            );
        }
        // Hop-by-hop after another header.
        let bad = [0u8, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            ExtHeaderIter::new(60, &bad).upper_layer(),
            Err(WireError::Malformed)
        );
        // An endless loop of destination options is bounded.
        let lots = [60u8, 0, 1, 4, 0, 0, 0, 0].repeat(40);
        assert_eq!(
            ExtHeaderIter::new(60, &lots).upper_layer(),
            Err(WireError::Malformed)
        );
        assert_eq!(ExtHeaderIter::new(60, &lots).count(), MAX_EXT_HEADERS + 1);
        // A later fragment ends the walk at the fragment header.
        let frag = [6u8, 0, 0x05, 0x00, 0, 0, 0, 1, 0xff, 0xff];
        assert_eq!(
            ExtHeaderIter::new(44, &frag).upper_layer(),
            Ok(UpperLayer {
                protocol: 6,
                offset: 8,
                later_fragment: true
            })
        );
        // Malformed options.
        let o = Options(&[1, 5, 0]);
        assert_eq!(
            o.iter().collect::<Vec<_>>(),
            [(0, Err(WireError::Malformed))]
        );
        let o = Options(&[5, 3, 0, 0, 0]);
        assert_eq!(
            o.iter().collect::<Vec<_>>(),
            [(0, Err(WireError::Malformed))]
        );
        let o = Options(&[0, 9]);
        assert_eq!(
            o.iter().collect::<Vec<_>>(),
            [(0, Ok(Ipv6Option::Pad1)), (1, Err(WireError::Truncated))]
        );
    }

    #[test]
    fn random_never_panics() {
        let mut rng = TestRng::new(61);
        let kinds = [0u8, 43, 44, 51, 60, 6, 17, 58, 59];
        for _ in 0..20_000 {
            let len = rng.below(120);
            let mut b = rng.bytes(len);
            for x in b.iter_mut() {
                if rng.below(3) == 0 {
                    *x = kinds[rng.below(kinds.len())];
                } else if rng.below(3) == 0 {
                    *x %= 4;
                }
            }
            if len > 8 && rng.below(2) == 0 {
                b[0] = 0x60;
                let pl = rng.below(len) as u16;
                b[4..6].copy_from_slice(&pl.to_be_bytes());
            }
            let u = Ipv6Header::new_unchecked(&b[..]);
            let _ = u.validate();
            if let Ok(h) = Ipv6Header::new_checked(&b[..]) {
                let _ = (
                    h.traffic_class(),
                    h.flow_label(),
                    h.src_addr(),
                    h.dst_addr(),
                );
                let mut n = 0;
                for item in h.ext_headers() {
                    n += 1;
                    if let Ok((_, _, ExtHeader::HopByHop(o) | ExtHeader::DestOpts(o))) = item {
                        let _ = o.iter().count();
                    }
                }
                assert!(n <= MAX_EXT_HEADERS + 1);
                if let Ok(u) = h.upper_layer() {
                    assert!(u.offset <= h.payload().len());
                }
            }
        }
    }

    #[test]
    fn prefixes() {
        let p: Ipv6Prefix = "2001:db8::/32".parse().unwrap();
        assert_eq!(p.len, 32);
        assert_eq!(p.to_string(), "2001:db8::/32");
        assert!(p.contains(a("2001:db8:ffff::1")));
        assert!(!p.contains(a("2001:db9::1")));
        assert_eq!(
            "2001:db8::1/ffff:ffff::".parse::<Ipv6Prefix>(),
            Ok(Ipv6Prefix {
                addr: a("2001:db8::1"),
                len: 32
            })
        );
        let p: Ipv6Prefix = "2001:db8::1/64".parse().unwrap();
        assert_eq!(p.network(), a("2001:db8::"));
        assert_eq!("::1".parse::<Ipv6Prefix>().unwrap().len, 128);
        assert_eq!("::/0".parse::<Ipv6Prefix>().unwrap().mask_u128(), 0);
        for bad in [
            "",
            "::/129",
            "::/",
            "::/ffff::ff",
            "1.2.3.4/8",
            "::/+1",
            "x::/3",
        ] {
            assert!(bad.parse::<Ipv6Prefix>().is_err(), "{bad}");
        }
        assert_eq!(mask128(0), 0);
        assert_eq!(mask128(128), u128::MAX);
        assert_eq!(mask128(200), u128::MAX);
        assert_eq!(mask128(1), 1 << 127);
        for len in 0..=128u8 {
            let p = Ipv6Prefix::new(a("2001:db8::"), len).unwrap();
            assert_eq!(p.mask_u128().count_ones(), u32::from(len));
            assert_eq!(p.to_string().parse(), Ok(p));
        }
        assert_eq!(Ipv6Prefix::new(a("::"), 129), None);
    }

    #[test]
    fn address_helpers() {
        assert!(addr::is_multicast(&a("ff02::1")));
        assert!(!addr::is_multicast(&a("fe80::1")));
        assert!(addr::is_link_local(&a("fe80::1")));
        assert!(addr::is_link_local(&a("febf::1")));
        assert!(!addr::is_link_local(&a("fec0::1")));
        assert_eq!(
            addr::solicited_node(&a("2001:db8::12:3456:789a")),
            a("ff02::1:ff56:789a")
        );
        assert_eq!(
            addr::multicast_ether(&a("ff02::1:ff56:789a")),
            [0x33, 0x33, 0xff, 0x56, 0x78, 0x9a]
        );
        assert_eq!(
            addr::link_local_from_ether([0x02, 0, 0, 0, 1, 1]),
            a("fe80::ff:fe00:101")
        );
    }
}
