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
pub mod aggregate_ip;
pub mod aggregate_ip_flows;
pub mod anonymize_ip_addr;
pub mod erase_ip_payload;
pub mod ip_rate_monitor;
pub mod set_timestamp_delta;
pub mod store_timestamp;
pub mod time_filter;
pub mod time_range;
pub mod time_sorted_sched;

pub fn register(reg: &mut Registry) {
    reg.register(adjust_timestamp::spec());
    reg.register(aggregate_counter::spec());
    reg.register(aggregate_ip::spec());
    reg.register(aggregate_ip_flows::spec());
    reg.register(anonymize_ip_addr::spec());
    reg.register(erase_ip_payload::spec());
    reg.register(ip_rate_monitor::spec());
    reg.register(set_timestamp_delta::spec());
    reg.register(store_timestamp::spec());
    reg.register(time_filter::spec());
    reg.register(time_range::spec());
    reg.register(time_sorted_sched::spec());
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
