//! Typed header views (Ethernet, ARP, IPv4, IPv6 and its extension
//! headers, ICMP, ICMPv6 and neighbour discovery, UDP, TCP, ESP) and checksums.
//!
//! Each protocol has a view over a byte buffer, in the manner of smoltcp's
//! `wire` module:
//!
//! - `View::new_unchecked(buf)` wraps a buffer without looking at it;
//! - `View::new_checked(buf)` checks the lengths once (and, where a header
//!   carries its own length, that length too), so that every accessor called
//!   afterwards cannot panic;
//! - getters for every field, setters when the buffer is `AsMut<[u8]>`,
//!   `into_inner` to get the buffer back;
//! - where useful, a `Repr` struct that `parse`s a view into plain values
//!   and `emit`s them into a view.
//!
//! Accessors are `#[inline]` and do no more than a bounds-checked load and a
//! byte swap: they sit on the router's hot path. Variable-length slices
//! (options, payloads) are clamped to the buffer, so even they cannot panic
//! after a setter has written a nonsensical length.
//!
//! Malformed input never panics: constructors return a [`WireError`], and the
//! option iterators yield an error item and stop.

use core::fmt;

/// Declares a protocol's view over a byte buffer: the struct (with the
/// given documentation), `new_unchecked`, `new_checked` (documented by the
/// second doc comment; it calls the view's own `check_len`) and
/// `into_inner`. The view writes its `check_len` and accessors itself.
macro_rules! view {
    ($(#[$doc:meta])* $name:ident, $(#[$checked:meta])*) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps `buffer` without checking it.
            #[inline]
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            $(#[$checked])*
            #[inline]
            pub fn new_checked(buffer: T) -> Result<Self> {
                let h = Self::new_unchecked(buffer);
                h.check_len()?;
                Ok(h)
            }

            /// Gives the buffer back.
            #[inline]
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

pub mod arp;
pub mod checksum;
pub mod esp;
pub mod ethernet;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
mod tlv;
pub mod udp;

pub use arp::{ArpOp, ArpPacket, ArpRepr};
pub use esp::EspHeader;
pub use ethernet::{ethertype, EtherAddr, EthernetFrame, EthernetRepr, VlanHeader};
pub use icmp::{icmp_type, IcmpHeader};
pub use icmpv6::{icmpv6_type, Icmpv6Header, NdOption, NdRepr};
pub use ipv4::{
    ip_proto, Ipv4Header, Ipv4Option, Ipv4OptionIter, Ipv4Prefix, Ipv4Repr, RouteOption,
    TimestampOption,
};
pub use ipv6::{next_header, ExtHeader, ExtHeaderIter, Ipv6Header, Ipv6Prefix, Ipv6Repr};
pub use tcp::{SackBlocks, TcpHeader, TcpOption, TcpOptionIter};
pub use udp::{UdpHeader, UdpRepr};

/// Why a buffer could not be viewed or parsed as a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireError {
    /// The buffer is shorter than the header (or than the length the header
    /// claims for itself).
    Truncated,
    /// The version field is not the expected one (IPv4: 4).
    BadVersion,
    /// The header length field is smaller than the minimum header.
    BadHeaderLen,
    /// The IPv4 total length is smaller than the header length.
    BadTotalLen,
    /// A length field other than the above (e.g. UDP length) is invalid.
    BadLength,
    /// The checksum does not verify.
    BadChecksum,
    /// A field holds a value that makes the header meaningless
    /// (e.g. an option whose length runs past the option area).
    Malformed,
    /// The header is well formed but describes something this view does not
    /// handle (e.g. ARP for a hardware type other than Ethernet).
    Unsupported,
}

impl WireError {
    /// A short lowercase name, stable enough for drop-reason counters.
    pub const fn as_str(self) -> &'static str {
        match self {
            WireError::Truncated => "truncated",
            WireError::BadVersion => "bad version",
            WireError::BadHeaderLen => "bad header length",
            WireError::BadTotalLen => "bad total length",
            WireError::BadLength => "bad length",
            WireError::BadChecksum => "bad checksum",
            WireError::Malformed => "malformed",
            WireError::Unsupported => "unsupported",
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for WireError {}

/// Result of a wire operation.
pub type Result<T> = core::result::Result<T, WireError>;

/// A textual address (Ethernet address, IPv4 prefix) could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddrParseError {
    what: &'static str,
}

impl AddrParseError {
    pub(crate) const fn new(what: &'static str) -> Self {
        AddrParseError { what }
    }
}

impl fmt::Display for AddrParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}", self.what)
    }
}

impl std::error::Error for AddrParseError {}

// Big-endian field access. The indexing is bounds checked; the views only
// call these at offsets their `check_len` has guaranteed.

#[inline(always)]
pub(crate) fn get_u16(b: &[u8], at: usize) -> u16 {
    let s = &b[at..at + 2];
    u16::from_be_bytes([s[0], s[1]])
}

#[inline(always)]
pub(crate) fn get_u32(b: &[u8], at: usize) -> u32 {
    let s = &b[at..at + 4];
    u32::from_be_bytes([s[0], s[1], s[2], s[3]])
}

#[inline(always)]
pub(crate) fn set_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(crate) fn set_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// `&b[start..end]`, with both bounds clamped to the buffer so that it cannot
/// panic whatever the header's length fields say.
#[inline(always)]
pub(crate) fn clamped(b: &[u8], start: usize, end: usize) -> &[u8] {
    let end = end.min(b.len());
    let start = start.min(end);
    &b[start..end]
}

/// Mutable counterpart of [`clamped`].
#[inline(always)]
pub(crate) fn clamped_mut(b: &mut [u8], start: usize, end: usize) -> &mut [u8] {
    let end = end.min(b.len());
    let start = start.min(end);
    &mut b[start..end]
}

/// The fuzz-ish tests' generator: `fastrand`'s, seeded (the one every
/// crate's tests use), so every run sees the same cases.
#[cfg(test)]
pub(crate) struct TestRng(fastrand::Rng);

#[cfg(test)]
impl TestRng {
    pub(crate) fn new(seed: u64) -> Self {
        TestRng(fastrand::Rng::with_seed(seed))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }

    pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.0.fill(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display() {
        assert_eq!(WireError::Truncated.to_string(), "truncated");
        assert_eq!(WireError::BadChecksum.to_string(), "bad checksum");
        assert_eq!(
            AddrParseError::new("Ethernet address").to_string(),
            "invalid Ethernet address"
        );
    }

    #[test]
    fn clamped_never_panics() {
        let b = [1u8, 2, 3, 4];
        assert_eq!(clamped(&b, 1, 3), &[2, 3]);
        assert_eq!(clamped(&b, 3, 10), &[4]);
        assert_eq!(clamped(&b, 9, 10), &[] as &[u8]);
        assert_eq!(clamped(&b, 3, 1), &[] as &[u8]);
    }

    #[test]
    fn be_access() {
        let mut b = [0u8; 6];
        set_u16(&mut b, 0, 0x1234);
        set_u32(&mut b, 2, 0xdead_beef);
        assert_eq!(b, [0x12, 0x34, 0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(get_u16(&b, 0), 0x1234);
        assert_eq!(get_u32(&b, 2), 0xdead_beef);
    }
}
