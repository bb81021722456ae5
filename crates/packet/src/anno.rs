//! Packet annotations, with Click's names.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A timestamp in nanoseconds since the Unix epoch (Click's `Timestamp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const ZERO: Timestamp = Timestamp(0);

    /// The current wall-clock time (derived from the cycle counter where
    /// it is invariant: cheap enough to stamp every packet).
    #[inline]
    pub fn now() -> Timestamp {
        Timestamp(crate::clock::wall_ns())
    }

    pub fn from_parts(sec: i64, nsec: u32) -> Timestamp {
        Timestamp(sec * 1_000_000_000 + nsec as i64)
    }

    pub fn sec(self) -> i64 {
        self.0.div_euclid(1_000_000_000)
    }

    pub fn nsec(self) -> u32 {
        self.0.rem_euclid(1_000_000_000) as u32
    }

    pub fn usec(self) -> u32 {
        self.nsec() / 1000
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Parses Click's `SEC.FRAC` form ("1.5", "1000000000.000001").
    pub fn parse(s: &str) -> Option<Timestamp> {
        let s = s.trim();
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (sec, frac) = match s.split_once('.') {
            Some((a, b)) => (a, b),
            None => (s, ""),
        };
        if sec.is_empty() && frac.is_empty() {
            return None;
        }
        let sec: i64 = if sec.is_empty() { 0 } else { sec.parse().ok()? };
        if !frac.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut nsec: i64 = 0;
        for (i, c) in frac.chars().take(9).enumerate() {
            nsec += (c as i64 - '0' as i64) * 10i64.pow(8 - i as u32);
        }
        let v = sec.checked_mul(1_000_000_000)?.checked_add(nsec)?;
        Some(Timestamp(if neg { -v } else { v }))
    }
}

impl fmt::Display for Timestamp {
    /// Click's format: seconds, a dot, and microseconds (six digits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A negative time is its magnitude with a minus sign (-0.9 s is
        // `-0.900000`, not one second back plus 0.1).
        let sign = if self.0 < 0 { "-" } else { "" };
        let mag = self.0.unsigned_abs();
        let (sec, nsec) = (mag / 1_000_000_000, mag % 1_000_000_000);
        if f.alternate() {
            write!(f, "{sign}{sec}.{nsec:09}")
        } else {
            write!(f, "{sign}{sec}.{:06}", nsec / 1000)
        }
    }
}

/// Click's packet types (the `packet_type_anno`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    #[default]
    Host = 0,
    Broadcast = 1,
    Multicast = 2,
    OtherHost = 3,
    Outgoing = 4,
    Loopback = 5,
    FastRoute = 6,
}

/// Size of the free-form user annotation area (Click's anno bytes).
pub const USER_ANNO_SIZE: usize = 24;

/// Annotations carried with a packet. Header offsets live in the packet
/// itself (they are positions in its buffer); everything else is here.
#[derive(Clone, Copy, Debug)]
pub struct Anno {
    pub timestamp: Timestamp,
    /// Destination IP annotation (`DST_IP`), set by route lookups.
    pub dst_ip: Ipv4Addr,
    /// Flow hash (`AGGREGATE`-like; used by HashSwitch / RSS-style steering).
    pub flow_hash: u32,
    pub paint: u8,
    pub packet_type: PacketType,
    /// Set by CheckIPHeader/GetIPAddress's router for FixIPSrc (`FIX_IP_SRC`).
    pub fix_ip_src: bool,
    /// Offset of the bad byte for ICMP parameter problem (`ICMP_PARAMPROB`).
    pub icmp_param_off: u8,
    /// Input device index (`DEVICE`), 0 if none.
    pub device: u16,
    /// VLAN TCI (`VLAN_TCI`).
    pub vlan_tci: u16,
    /// Extra packets / length a packet stands for (`EXTRA_PACKETS`, `EXTRA_LENGTH`).
    pub extra_packets: u32,
    pub extra_length: u32,
    /// Sequence number (`SEQUENCE_NUMBER`), e.g. for reorder tests.
    pub seq: u64,
    /// Free-form bytes for elements' private annotations.
    pub user: [u8; USER_ANNO_SIZE],
}

impl Anno {
    pub const fn new() -> Anno {
        Anno {
            timestamp: Timestamp(0),
            dst_ip: Ipv4Addr::UNSPECIFIED,
            flow_hash: 0,
            paint: 0,
            packet_type: PacketType::Host,
            fix_ip_src: false,
            icmp_param_off: 0,
            device: 0,
            vlan_tci: 0,
            extra_packets: 0,
            extra_length: 0,
            seq: 0,
            user: [0; USER_ANNO_SIZE],
        }
    }
}

/// Bytes of the user area that hold the IPv6 destination annotation
/// (Click's `DST_IP6`, which likewise shares space with other annotations).
pub const DST_IP6_ANNO: std::ops::Range<usize> = 0..16;

impl Anno {
    /// The IPv6 destination annotation (`DST_IP6`), set by IPv6 route
    /// lookups and used by IP6NDSolicitor. It lives in user bytes 0-15.
    #[inline]
    pub fn dst_ip6(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.user[DST_IP6_ANNO]);
        Ipv6Addr::from(a)
    }

    /// Sets the IPv6 destination annotation.
    #[inline]
    pub fn set_dst_ip6(&mut self, a: Ipv6Addr) {
        self.user[DST_IP6_ANNO].copy_from_slice(&a.octets());
    }
}

impl Default for Anno {
    fn default() -> Self {
        Anno::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_timestamps_print_with_a_sign() {
        let t = Timestamp::from_parts(-1, 100_000_000);
        assert_eq!(t.to_string(), "-0.900000");
        assert_eq!(format!("{t:#}"), "-0.900000000");
        assert_eq!(Timestamp::from_parts(-2, 0).to_string(), "-2.000000");
        assert_eq!(Timestamp::from_parts(1, 5_000).to_string(), "1.000005");
    }

    #[test]
    fn dst_ip6_annotation() {
        let mut a = Anno::new();
        assert_eq!(a.dst_ip6(), Ipv6Addr::UNSPECIFIED);
        let x: Ipv6Addr = "2001:db8::1".parse().unwrap();
        a.set_dst_ip6(x);
        assert_eq!(a.dst_ip6(), x);
        assert_eq!(a.user[15], 1);
        assert_eq!(a.user[16], 0);
    }

    #[test]
    fn timestamp_display_and_parse() {
        let t = Timestamp::from_parts(1_000_000_000, 1_500);
        assert_eq!(t.to_string(), "1000000000.000001");
        assert_eq!(format!("{t:#}"), "1000000000.000001500");
        assert_eq!(Timestamp::parse("1.5"), Some(Timestamp(1_500_000_000)));
        assert_eq!(Timestamp::parse("7"), Some(Timestamp(7_000_000_000)));
        assert_eq!(Timestamp::parse(".25"), Some(Timestamp(250_000_000)));
        assert_eq!(Timestamp::parse("x"), None);
        assert_eq!(Timestamp::parse("1.x"), None);
        assert_eq!(Timestamp::parse("-1.5"), Some(Timestamp(-1_500_000_000)));
    }
}
