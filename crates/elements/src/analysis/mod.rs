//! Trace analysis elements (Click's elements/analysis): timestamp filters
//! and adjusters, a time-sorted merge, aggregate annotations and counters,
//! address anonymization and payload erasure.
//!
//! The aggregate annotation is the packet's `flow_hash` annotation (which
//! IPPrint's AGGREGATE also prints); the first timestamp annotation is the
//! one SetTimestamp(FIRST true) writes.

use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{ArgEnv, FromArg, Registry};

pub mod adjust_timestamp;
pub mod aggregate_counter;
pub mod aggregate_filter;
pub mod aggregate_first;
pub mod aggregate_ip;
pub mod aggregate_ip_addr_pair;
pub mod aggregate_ip_flows;
pub mod aggregate_last;
pub mod aggregate_length;
pub mod aggregate_packet_counter;
pub mod aggregate_paint;
pub mod anonymize_ip_addr;
pub mod erase_ip_payload;
pub mod ip_rate_monitor;
pub mod set_timestamp_delta;
pub mod store_timestamp;
pub mod store_udp_time_seq_record;
pub mod time_filter;
pub mod time_range;
pub mod time_sorted_sched;
pub mod timestamp_accum;

pub fn register(reg: &mut Registry) {
    reg.register(adjust_timestamp::spec());
    reg.register(aggregate_counter::spec());
    reg.register(aggregate_filter::spec());
    reg.register(aggregate_first::spec());
    reg.register(aggregate_last::spec());
    reg.register(aggregate_length::spec());
    reg.register(aggregate_packet_counter::spec());
    reg.register(aggregate_paint::spec());
    reg.register(aggregate_ip::spec());
    reg.register(aggregate_ip_addr_pair::spec());
    reg.register(aggregate_ip_flows::spec());
    reg.register(anonymize_ip_addr::spec());
    reg.register(erase_ip_payload::spec());
    reg.register(ip_rate_monitor::spec());
    reg.register(set_timestamp_delta::spec());
    reg.register(store_timestamp::spec());
    reg.register(store_udp_time_seq_record::spec());
    reg.register(time_filter::spec());
    reg.register(time_range::spec());
    reg.register(time_sorted_sched::spec());
    reg.register(timestamp_accum::spec());
}

/// A signed time value in nanoseconds: an absolute time (`SEC.FRAC`
/// seconds since the epoch) or a relative one, with Click's units (`1.5`,
/// `-20ms`, `2hr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time(pub i64);

impl Time {
    pub fn parse(s: &str) -> Option<Time> {
        let s = s.trim();
        if let Some(t) = Timestamp::parse(s) {
            return Some(Time(t.0));
        }
        let (neg, rest) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let d = paraclick_runtime::args::parse_duration(rest)?;
        let ns = i64::try_from(d.as_nanos()).ok()?;
        Some(Time(if neg { -ns } else { ns }))
    }
}

impl FromArg for Time {
    const WHAT: &'static str = "time";
    fn from_arg(s: &str, _env: &ArgEnv) -> Result<Self, String> {
        Time::parse(s).ok_or_else(|| format!("expected {}", Self::WHAT))
    }
    fn placeholder() -> Self {
        Time(0)
    }
}

/// Click's timestamp text: seconds, a dot, and microseconds (or
/// nanoseconds when the value has sub-microsecond digits).
pub fn fmt_time(ns: i64) -> String {
    let t = Timestamp(ns);
    let s = if ns % 1000 != 0 {
        format!("{t:#}")
    } else {
        t.to_string()
    };
    // Negative values print as "-SEC.FRAC", not "-(SEC+1).(1-FRAC)".
    if ns < 0 {
        let p = Timestamp(-ns);
        let body = if ns % 1000 != 0 {
            format!("{p:#}")
        } else {
            p.to_string()
        };
        return format!("-{body}");
    }
    s
}

/// The aggregate annotation (Click's `AGGREGATE_ANNO`).
#[inline]
pub fn aggregate(p: &Packet) -> u32 {
    p.anno().flow_hash
}

#[inline]
pub fn set_aggregate(p: &mut Packet, v: u32) {
    p.anno_mut().flow_hash = v;
}

/// The IPv4 header, if the packet has a network header annotation and at
/// least 20 bytes there.
#[inline]
pub(crate) fn ip_header(p: &Packet) -> Option<&[u8]> {
    let h = p.network_header()?;
    (h.len() >= 20 && h[0] >> 4 == 4).then_some(h)
}

/// Bytes of the user annotation area that hold the packet number
/// annotations (Click's `PACKET_NUMBER`): number 0 in bytes 0-3, number 1
/// in bytes 4-7, in this machine's byte order. FromCapDump sets them and
/// AggregatePacketCounter reads them. They share space with the IPv6
/// destination annotation, as Click's annotations share theirs.
pub const PACKET_NUMBER_ANNO: std::ops::Range<usize> = 0..8;

/// Packet number annotation `i` (0 or 1).
#[inline]
pub fn packet_number(p: &Packet, i: usize) -> u32 {
    let at = PACKET_NUMBER_ANNO.start + 4 * (i & 1);
    let u = &p.anno().user;
    u32::from_ne_bytes([u[at], u[at + 1], u[at + 2], u[at + 3]])
}

#[inline]
pub fn set_packet_number(p: &mut Packet, i: usize, v: u32) {
    let at = PACKET_NUMBER_ANNO.start + 4 * (i & 1);
    p.anno_mut().user[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

/// A four-byte annotation, as AggregatePacketCounter's `ANNO` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anno4 {
    /// Packet number annotation 0 or 1 (`PACKET_NUMBER`, `PACKET_NUMBER1`).
    PacketNumber(usize),
    /// The low 32 bits of the sequence number annotation.
    SequenceNumber,
    Aggregate,
    ExtraPackets,
    ExtraLength,
    /// Bytes `i..i + 4` of the user annotation area, in this machine's
    /// byte order.
    User(usize),
    /// No annotation: always 0.
    None,
}

impl Anno4 {
    #[inline]
    pub fn get(self, p: &Packet) -> u32 {
        let a = p.anno();
        match self {
            Anno4::PacketNumber(i) => packet_number(p, i),
            Anno4::SequenceNumber => a.seq as u32,
            Anno4::Aggregate => a.flow_hash,
            Anno4::ExtraPackets => a.extra_packets,
            Anno4::ExtraLength => a.extra_length,
            Anno4::User(i) => {
                u32::from_ne_bytes([a.user[i], a.user[i + 1], a.user[i + 2], a.user[i + 3]])
            }
            Anno4::None => 0,
        }
    }
}

impl FromArg for Anno4 {
    const WHAT: &'static str = "four-byte annotation";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<Self, String> {
        use paraclick_packet::anno::USER_ANNO_SIZE;
        let s = s.trim();
        let w = s.strip_suffix("_ANNO").unwrap_or(s);
        Ok(match w {
            "PACKET_NUMBER" | "PACKET_NUMBER0" => Anno4::PacketNumber(0),
            "PACKET_NUMBER1" => Anno4::PacketNumber(1),
            "SEQUENCE_NUMBER" => Anno4::SequenceNumber,
            "AGGREGATE" => Anno4::Aggregate,
            "EXTRA_PACKETS" => Anno4::ExtraPackets,
            "EXTRA_LENGTH" => Anno4::ExtraLength,
            "NONE" => Anno4::None,
            _ => {
                let bad = || {
                    format!(
                        "expected {} (PACKET_NUMBER, SEQUENCE_NUMBER, AGGREGATE, NONE, an AnnotationInfo name of size 4 or a user offset 0..{}), not '{s}'",
                        Self::WHAT,
                        USER_ANNO_SIZE - 4
                    )
                };
                let off = match env.anno_name(s) {
                    Some((off, 4)) => off,
                    Some(_) => return Err(bad()),
                    None => usize::from_arg(s, env).map_err(|_| bad())?,
                };
                if off + 4 > USER_ANNO_SIZE {
                    return Err(bad());
                }
                Anno4::User(off)
            }
        })
    }
    fn placeholder() -> Self {
        Anno4::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_absolute_relative_and_negative() {
        assert_eq!(Time::parse("1.5"), Some(Time(1_500_000_000)));
        assert_eq!(Time::parse("-1.5"), Some(Time(-1_500_000_000)));
        assert_eq!(Time::parse("20ms"), Some(Time(20_000_000)));
        assert_eq!(Time::parse("-2hr"), Some(Time(-7_200_000_000_000)));
        assert_eq!(Time::parse("x"), None);
        assert_eq!(fmt_time(1_500_000_000), "1.500000");
        assert_eq!(fmt_time(-1_500_000_000), "-1.500000");
        assert_eq!(fmt_time(1), "0.000000001");
    }
}
