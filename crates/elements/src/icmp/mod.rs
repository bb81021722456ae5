//! ICMP elements: error generation (RFC 1812), echo responder and ping
//! source.

use paraclick_runtime::Registry;

pub mod icmp_error;
pub mod icmp_ip_encap;
pub mod icmp_ping_encap;
pub mod icmp_ping_responder;
pub mod icmp_ping_source;

pub fn register(reg: &mut Registry) {
    reg.register(icmp_error::spec());
    reg.register(icmp_ip_encap::spec());
    reg.register(icmp_ping_encap::spec());
    reg.register(icmp_ping_responder::spec());
    reg.register(icmp_ping_source::spec());
    reg.alias("ICMPSendPings", "ICMPPingSource");
}

/// Formats a count of microseconds Click's way: `250us`, `1.5s`, `0s`.
pub(crate) fn fmt_usec(us: u64) -> String {
    if us > 0 && us < 1000 {
        return format!("{us}us");
    }
    let s = format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}s")
}

#[cfg(test)]
mod tests {
    #[test]
    fn usec_format() {
        assert_eq!(super::fmt_usec(0), "0s");
        assert_eq!(super::fmt_usec(250), "250us");
        assert_eq!(super::fmt_usec(1000), "0.001s");
        assert_eq!(super::fmt_usec(1_500_000), "1.5s");
        assert_eq!(super::fmt_usec(2_000_000), "2s");
    }
}
