//! TCP (RFC 9293): header view and options.

use core::net::Ipv4Addr;

use super::checksum;
use super::ipv4::ip_proto;
use super::tlv::{Tlv, TlvCursor};
use super::{clamped, clamped_mut, get_u16, get_u32, set_u16, set_u32, Result, WireError};

/// TCP flag bits, as returned by [`TcpHeader::flags`].
pub mod flags {
    pub const FIN: u16 = 0x001;
    pub const SYN: u16 = 0x002;
    pub const RST: u16 = 0x004;
    pub const PSH: u16 = 0x008;
    pub const ACK: u16 = 0x010;
    pub const URG: u16 = 0x020;
    pub const ECE: u16 = 0x040;
    pub const CWR: u16 = 0x080;
    /// ECN nonce (RFC 3540, historic).
    pub const NS: u16 = 0x100;
    /// All nine flag bits.
    pub const ALL: u16 = 0x1ff;
}

/// TCP option kinds.
pub mod opt {
    pub const EOL: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMP: u8 = 8;
}

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const OFF_FLAGS: usize = 12;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
}

view! {
    /// A view of a TCP segment: header, options and payload.
    ///
    /// The checksum covers the whole buffer, so the buffer must be exactly the
    /// segment (the IP payload).
    TcpHeader,
    /// Wraps `buffer`, checking the lengths (see [`TcpHeader::check_len`]).
}

macro_rules! flag_accessors {
    ($($get:ident $set:ident $bit:ident;)*) => {
        impl<T: AsRef<[u8]>> TcpHeader<T> {
            $(
                #[doc = concat!("The ", stringify!($bit), " flag.")]
                #[inline]
                pub fn $get(&self) -> bool {
                    self.flags() & flags::$bit != 0
                }
            )*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpHeader<T> {
            $(
                #[doc = concat!("Sets or clears the ", stringify!($bit), " flag.")]
                #[inline]
                pub fn $set(&mut self, on: bool) {
                    self.set_flag(flags::$bit, on);
                }
            )*
        }
    };
}

flag_accessors! {
    fin set_fin FIN;
    syn set_syn SYN;
    rst set_rst RST;
    psh set_psh PSH;
    ack set_ack ACK;
    urg set_urg URG;
    ece set_ece ECE;
    cwr set_cwr CWR;
    ns set_ns NS;
}

impl<T: AsRef<[u8]>> TcpHeader<T> {
    /// Length of a header without options.
    pub const MIN_LEN: usize = 20;
    /// Length of a header with the most options (data offset 15).
    pub const MAX_LEN: usize = 60;

    /// `Truncated` if the buffer is shorter than 20 bytes or than the header
    /// length, `BadHeaderLen` if the header length is below 20.
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

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::ACK)
    }

    /// Data offset: header length in 32-bit words.
    #[inline]
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::OFF_FLAGS] >> 4
    }

    /// Header length in bytes.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The nine flag bits (see [`flags`]).
    #[inline]
    pub fn flags(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::OFF_FLAGS) & flags::ALL
    }

    /// The three reserved bits between the data offset and the flags.
    #[inline]
    pub fn reserved(&self) -> u8 {
        (self.buffer.as_ref()[field::OFF_FLAGS] >> 1) & 0x07
    }

    /// Window.
    #[inline]
    pub fn window_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::WINDOW)
    }

    /// Checksum, as carried.
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent_at(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::URGENT)
    }

    /// The options area (between byte 20 and the header length).
    #[inline]
    pub fn options(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), Self::MIN_LEN, self.header_len())
    }

    /// An iterator over the options.
    #[inline]
    pub fn option_iter(&self) -> TcpOptionIter<'_> {
        TcpOptionIter::new(self.options())
    }

    /// The payload: everything after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), self.header_len(), usize::MAX)
    }

    /// Length of the segment as the sequence space counts it: payload, plus
    /// one for SYN, plus one for FIN.
    #[inline]
    pub fn segment_len(&self) -> usize {
        self.payload().len() + usize::from(self.syn()) + usize::from(self.fin())
    }

    #[inline]
    fn full_sum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u16 {
        let data = self.buffer.as_ref();
        debug_assert!(data.len() <= usize::from(u16::MAX));
        checksum::add(
            checksum::pseudo_header_sum(src, dst, ip_proto::TCP, data.len() as u16),
            checksum::sum(data),
        )
    }

    /// True if the checksum verifies with the IPv4 pseudo-header of `src` and
    /// `dst`.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        self.full_sum(src, dst) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpHeader<T> {
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

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::ACK, v);
    }

    /// Sets the data offset in 32-bit words, keeping the other bits.
    #[inline]
    pub fn set_data_offset(&mut self, words: u8) {
        let b = &mut self.buffer.as_mut()[field::OFF_FLAGS];
        *b = (*b & 0x0f) | (words << 4);
    }

    /// Sets the header length in bytes (a multiple of 4, 20 to 60).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        debug_assert!(len & 3 == 0 && len <= Self::MAX_LEN);
        self.set_data_offset((len / 4) as u8);
    }

    /// Sets the nine flag bits, keeping the data offset and reserved bits.
    #[inline]
    pub fn set_flags(&mut self, f: u16) {
        let v = get_u16(self.buffer.as_ref(), field::OFF_FLAGS) & !flags::ALL;
        set_u16(self.buffer.as_mut(), field::OFF_FLAGS, v | (f & flags::ALL));
    }

    /// Sets or clears the flag bits in `mask`.
    #[inline]
    pub fn set_flag(&mut self, mask: u16, on: bool) {
        let f = self.flags();
        self.set_flags(if on { f | mask } else { f & !mask });
    }

    /// Sets the three reserved bits.
    #[inline]
    pub fn set_reserved(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::OFF_FLAGS];
        *b = (*b & 0xf1) | ((v & 0x07) << 1);
    }

    /// Sets the window.
    #[inline]
    pub fn set_window_len(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::WINDOW, v);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent_at(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), field::URGENT, v);
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
        let hlen = self.header_len();
        clamped_mut(self.buffer.as_mut(), hlen, usize::MAX)
    }

    /// Sets the source port and updates the checksum incrementally.
    #[inline]
    pub fn update_src_port(&mut self, port: u16) {
        let old = self.src_port();
        self.set_src_port(port);
        self.set_checksum(checksum::update_u16(self.checksum(), old, port));
    }

    /// Sets the destination port and updates the checksum incrementally.
    #[inline]
    pub fn update_dst_port(&mut self, port: u16) {
        let old = self.dst_port();
        self.set_dst_port(port);
        self.set_checksum(checksum::update_u16(self.checksum(), old, port));
    }

    /// Updates the checksum for a change of an address in the IPv4
    /// pseudo-header (the IP header itself is the caller's business).
    #[inline]
    pub fn update_checksum_for_addr(&mut self, old: Ipv4Addr, new: Ipv4Addr) {
        self.set_checksum(checksum::update_addr(self.checksum(), old, new));
    }

    /// Computes the checksum over the pseudo-header and the whole buffer,
    /// and stores it.
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let c = !self.full_sum(src, dst);
        self.set_checksum(c);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for TcpHeader<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The blocks of a SACK option: pairs of (left edge, right edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SackBlocks<'a>(&'a [u8]);

impl<'a> SackBlocks<'a> {
    /// Number of blocks.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len() / 8
    }

    /// True if there are no blocks (never, for a parsed option).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw bytes.
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The (left edge, right edge) pairs.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.0
            .chunks_exact(8)
            .map(|c| (get_u32(c, 0), get_u32(c, 4)))
    }
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// End of option list; the iterator stops after it.
    EndOfList,
    /// No operation.
    Nop,
    /// Maximum segment size (kind 2, length 4).
    MaxSegmentSize(u16),
    /// Window scale shift count (kind 3, length 3).
    WindowScale(u8),
    /// SACK permitted (kind 4, length 2).
    SackPermitted,
    /// SACK blocks (kind 5, length 2 + 8n, n from 1 to 4).
    Sack(SackBlocks<'a>),
    /// Timestamps (kind 8, length 10).
    Timestamp { tsval: u32, tsecr: u32 },
    /// Any other option: its kind and the bytes after the length byte.
    Unknown { kind: u8, data: &'a [u8] },
}

/// Iterator over TCP options.
///
/// Yields `Ok(option)` for each well-formed option. On a malformed one (no
/// length byte: `Truncated`; length below 2, running past the options area,
/// or wrong for the kind: `Malformed`) it yields one `Err` and stops. It
/// also stops after `EndOfList`. It never panics.
#[derive(Debug, Clone)]
pub struct TcpOptionIter<'a> {
    cur: TlvCursor<'a>,
}

impl<'a> TcpOptionIter<'a> {
    /// Iterates over an options area.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        TcpOptionIter {
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

impl<'a> Iterator for TcpOptionIter<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let (kind, o) = match self.cur.next_tlv()? {
            Err(e) => return Some(Err(e)),
            Ok(Tlv::EndOfList) => return Some(Ok(TcpOption::EndOfList)),
            Ok(Tlv::Nop) => return Some(Ok(TcpOption::Nop)),
            Ok(Tlv::Option { kind, bytes }) => (kind, bytes),
        };
        let len = o.len();
        let item = match (kind, len) {
            (opt::MSS, 4) => TcpOption::MaxSegmentSize(get_u16(o, 2)),
            (opt::WINDOW_SCALE, 3) => TcpOption::WindowScale(o[2]),
            (opt::SACK_PERMITTED, 2) => TcpOption::SackPermitted,
            (opt::SACK, 10 | 18 | 26 | 34) => TcpOption::Sack(SackBlocks(&o[2..])),
            (opt::TIMESTAMP, 10) => TcpOption::Timestamp {
                tsval: get_u32(o, 2),
                tsecr: get_u32(o, 6),
            },
            (
                opt::MSS | opt::WINDOW_SCALE | opt::SACK_PERMITTED | opt::SACK | opt::TIMESTAMP,
                _,
            ) => return self.cur.fail(WireError::Malformed),
            _ => TcpOption::Unknown {
                kind,
                data: &o[2..],
            },
        };
        Some(Ok(item))
    }
}

impl core::iter::FusedIterator for TcpOptionIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TestRng;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// A SYN from 40000 to 80 with MSS, SACK permitted, timestamps, NOP,
    /// window scale; no payload.
    fn syn() -> Vec<u8> {
        #[rustfmt::skip]
        let v = vec![
            0x9c, 0x40, 0x00, 0x50, // ports
            0x12, 0x34, 0x56, 0x78, // seq
            0x00, 0x00, 0x00, 0x00, // ack
            0xa0, 0x02, 0xfa, 0xf0, // offset 10, SYN, window 64240
            0x00, 0x00, 0x00, 0x00, // checksum, urgent
            2, 4, 0x05, 0xb4, // MSS 1460
            4, 2, // SACK permitted
            8, 10, 0, 0, 0, 1, 0, 0, 0, 0, // timestamps
            1, // NOP
            3, 3, 7, // window scale 7
        ];
        v
    }

    #[test]
    fn getters() {
        let buf = syn();
        let h = TcpHeader::new_checked(&buf[..]).unwrap();
        assert_eq!(h.src_port(), 40000);
        assert_eq!(h.dst_port(), 80);
        assert_eq!(h.seq_number(), 0x1234_5678);
        assert_eq!(h.ack_number(), 0);
        assert_eq!(h.data_offset(), 10);
        assert_eq!(h.header_len(), 40);
        assert_eq!(h.flags(), flags::SYN);
        assert!(h.syn() && !h.ack() && !h.fin() && !h.rst() && !h.psh());
        assert!(!h.urg() && !h.ece() && !h.cwr() && !h.ns());
        assert_eq!(h.reserved(), 0);
        assert_eq!(h.window_len(), 64240);
        assert_eq!(h.checksum(), 0);
        assert_eq!(h.urgent_at(), 0);
        assert_eq!(h.options().len(), 20);
        assert!(h.payload().is_empty());
        assert_eq!(h.segment_len(), 1);
        let opts: Vec<_> = h.option_iter().collect::<Result<_>>().unwrap();
        assert_eq!(
            opts,
            [
                TcpOption::MaxSegmentSize(1460),
                TcpOption::SackPermitted,
                TcpOption::Timestamp { tsval: 1, tsecr: 0 },
                TcpOption::Nop,
                TcpOption::WindowScale(7),
            ]
        );
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = syn();
        buf.extend_from_slice(b"data");
        let mut h = TcpHeader::new_checked(&mut buf[..]).unwrap();
        h.set_src_port(1);
        assert_eq!(h.src_port(), 1);
        h.set_dst_port(2);
        assert_eq!(h.dst_port(), 2);
        h.set_seq_number(0xffff_fffe);
        assert_eq!(h.seq_number(), 0xffff_fffe);
        h.set_ack_number(0x8000_0001);
        assert_eq!(h.ack_number(), 0x8000_0001);
        h.set_reserved(0b101);
        assert_eq!(h.reserved(), 0b101);
        h.set_flags(flags::ALL);
        assert_eq!(h.flags(), flags::ALL);
        assert_eq!(h.reserved(), 0b101, "flags keep reserved bits");
        assert_eq!(h.data_offset(), 10, "flags keep the offset");
        h.set_flags(0);
        for (get, set, bit) in [
            (
                TcpHeader::fin as fn(&_) -> bool,
                TcpHeader::set_fin as fn(&mut _, bool),
                flags::FIN,
            ),
            (TcpHeader::syn, TcpHeader::set_syn, flags::SYN),
            (TcpHeader::rst, TcpHeader::set_rst, flags::RST),
            (TcpHeader::psh, TcpHeader::set_psh, flags::PSH),
            (TcpHeader::ack, TcpHeader::set_ack, flags::ACK),
            (TcpHeader::urg, TcpHeader::set_urg, flags::URG),
            (TcpHeader::ece, TcpHeader::set_ece, flags::ECE),
            (TcpHeader::cwr, TcpHeader::set_cwr, flags::CWR),
            (TcpHeader::ns, TcpHeader::set_ns, flags::NS),
        ] {
            set(&mut h, true);
            assert!(get(&h));
            assert_eq!(h.flags(), bit);
            set(&mut h, false);
            assert!(!get(&h));
            assert_eq!(h.flags(), 0);
        }
        h.set_reserved(0);
        h.set_flag(flags::SYN | flags::ACK, true);
        assert_eq!(h.flags(), 0x12);
        h.set_window_len(1);
        assert_eq!(h.window_len(), 1);
        h.set_checksum(0xc0de);
        assert_eq!(h.checksum(), 0xc0de);
        h.set_urgent_at(77);
        assert_eq!(h.urgent_at(), 77);
        assert_eq!(h.payload(), b"data");
        assert_eq!(h.segment_len(), 5);
        h.set_header_len(20);
        assert_eq!(h.data_offset(), 5);
        assert_eq!(h.flags(), 0x12);
        assert_eq!(h.payload().len(), 24);
        h.set_data_offset(11);
        assert_eq!(h.header_len(), 44);
        assert!(h.payload().is_empty());
        h.set_data_offset(10);
        h.options_mut()[0] = opt::EOL;
        h.payload_mut().copy_from_slice(b"DATA");
        let buf = h.into_inner();
        assert_eq!(&buf[40..], b"DATA");
        assert_eq!(buf[20], 0);
    }

    #[test]
    fn checksum_fill_verify() {
        let mut buf = syn();
        buf.push(b'x'); // odd length
        let mut h = TcpHeader::new_checked(&mut buf[..]).unwrap();
        h.fill_checksum(SRC, DST);
        assert!(h.verify_checksum(SRC, DST));
        assert!(!h.verify_checksum(SRC, Ipv4Addr::new(10, 0, 0, 3)));
        // Against the pseudo-header built as bytes.
        let c = h.checksum();
        let mut v = Vec::new();
        v.extend_from_slice(&SRC.octets());
        v.extend_from_slice(&DST.octets());
        v.extend_from_slice(&[0, 6, 0, 41]);
        let mut seg = syn();
        seg.push(b'x');
        v.extend_from_slice(&seg);
        assert_eq!(c, checksum::checksum(&v));
        h.payload_mut()[0] = b'y';
        assert!(!h.verify_checksum(SRC, DST));
    }

    #[test]
    fn nat_style_incremental_update() {
        // Rewriting the source address and port updates the checksum
        // through the pseudo-header, as a NAT would.
        let mut rng = TestRng::new(31);
        for _ in 0..300 {
            let mut buf = syn();
            let extra = rng.below(30);
            buf.extend(rng.bytes(extra));
            let mut h = TcpHeader::new_checked(&mut buf[..]).unwrap();
            h.fill_checksum(SRC, DST);
            let new_src = Ipv4Addr::from(rng.next_u64() as u32);
            let new_port = rng.next_u64() as u16;
            let mut c = checksum::update_addr(h.checksum(), SRC, new_src);
            c = checksum::update_u16(c, h.src_port(), new_port);
            let mut copy = h.as_ref().to_vec();
            h.set_src_port(new_port);
            h.set_checksum(c);
            assert!(h.verify_checksum(new_src, DST));
            // The same through the view's helpers.
            let mut v = TcpHeader::new_checked(&mut copy[..]).unwrap();
            v.update_checksum_for_addr(SRC, new_src);
            v.update_src_port(new_port);
            let new_dport = rng.next_u64() as u16;
            v.update_dst_port(new_dport);
            assert_eq!(v.dst_port(), new_dport);
            assert!(v.verify_checksum(new_src, DST));
        }
    }

    #[test]
    fn length_errors() {
        let buf = syn();
        for len in 0..20 {
            assert_eq!(
                TcpHeader::new_checked(&buf[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        for len in 20..40 {
            assert_eq!(
                TcpHeader::new_checked(&buf[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        let mut b = buf.clone();
        b[12] = 0x40;
        assert_eq!(
            TcpHeader::new_checked(&b[..]).unwrap_err(),
            WireError::BadHeaderLen
        );
        // Unchecked views with a bogus offset still do not panic on slices.
        let h = TcpHeader::new_unchecked(&buf[..24]);
        assert_eq!(h.options().len(), 4);
        assert!(h.payload().is_empty());
    }

    #[test]
    fn sack_blocks() {
        let bytes = [5u8, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4];
        let mut it = TcpOptionIter::new(&bytes);
        let s = match it.next() {
            Some(Ok(TcpOption::Sack(s))) => s,
            o => panic!("{o:?}"),
        };
        assert_eq!(s.len(), 2);
        assert!(!s.is_empty());
        assert_eq!(s.as_bytes().len(), 16);
        assert_eq!(s.iter().collect::<Vec<_>>(), [(1, 2), (3, 4)]);
        assert_eq!(it.next(), None);
    }

    #[test]
    fn malformed_options() {
        let cases: &[(&[u8], WireError)] = &[
            (&[opt::MSS], WireError::Truncated),
            (&[opt::MSS, 0], WireError::Malformed),
            (&[opt::MSS, 1], WireError::Malformed),
            (&[opt::MSS, 3, 0], WireError::Malformed),
            (&[opt::MSS, 4, 0], WireError::Malformed),
            (&[opt::WINDOW_SCALE, 4, 0, 0], WireError::Malformed),
            (&[opt::SACK_PERMITTED, 3, 0], WireError::Malformed),
            (&[opt::SACK, 2], WireError::Malformed),
            (&[opt::SACK, 6, 0, 0, 0, 0], WireError::Malformed),
            (&[opt::TIMESTAMP, 6, 0, 0, 0, 0], WireError::Malformed),
            (&[0x99, 5, 0], WireError::Malformed),
        ];
        for &(bytes, e) in cases {
            let mut it = TcpOptionIter::new(bytes);
            assert_eq!(it.next(), Some(Err(e)), "{bytes:?}");
            assert_eq!(it.next(), None);
        }
        let mut it = TcpOptionIter::new(&[1, 0x99, 3, 7, 0, 42]);
        assert_eq!(it.next(), Some(Ok(TcpOption::Nop)));
        assert_eq!(
            it.next(),
            Some(Ok(TcpOption::Unknown {
                kind: 0x99,
                data: &[7]
            }))
        );
        assert_eq!(it.position(), 1);
        assert_eq!(it.next(), Some(Ok(TcpOption::EndOfList)));
        assert_eq!(it.position(), 4);
        assert_eq!(it.next(), None);
    }

    #[test]
    fn random_options_never_panic() {
        let mut rng = TestRng::new(32);
        let kinds = [0u8, 1, 2, 3, 4, 5, 8, 0x99];
        for _ in 0..20_000 {
            let len = rng.below(41);
            let mut bytes = rng.bytes(len);
            for b in bytes.iter_mut() {
                match rng.below(4) {
                    0 => *b = kinds[rng.below(kinds.len())],
                    1 => *b %= 20,
                    _ => {}
                }
            }
            let mut n = 0;
            for item in TcpOptionIter::new(&bytes) {
                n += 1;
                assert!(n <= bytes.len());
                if let Ok(TcpOption::Sack(s)) = item {
                    assert!((1..=4).contains(&s.iter().count()));
                }
            }
        }
    }

    #[test]
    fn random_headers_never_panic() {
        let mut rng = TestRng::new(33);
        for _ in 0..20_000 {
            let len = rng.below(80);
            let bytes = rng.bytes(len);
            if len >= 20 {
                let u = TcpHeader::new_unchecked(&bytes[..]);
                let _ = (u.options(), u.payload());
            }
            if let Ok(h) = TcpHeader::new_checked(&bytes[..]) {
                assert!(h.header_len() >= 20 && h.header_len() <= len);
                let _ = (h.seq_number(), h.ack_number(), h.flags(), h.urgent_at());
                let _ = h.option_iter().count();
                let _ = h.segment_len();
                let _ = h.verify_checksum(SRC, DST);
            }
        }
    }
}
