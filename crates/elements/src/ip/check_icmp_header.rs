//! # CheckICMPHeader
//!
//! CheckICMPHeader([keywords VERBOSE, DETAILS])
//!
//! Checks ICMP headers on ICMP packets.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects ICMP/IP packets with their IP header annotation set
//! (CheckIPHeader or MarkIPHeader). Checks that the IP header's lengths fit
//! the packet, that the protocol is ICMP, that the IP payload holds at
//! least the 8-byte ICMP header, and that the ICMP checksum (over the whole
//! IP payload) is valid. Valid packets go to output 0 unchanged; invalid
//! packets leave on output 1 if it is connected, and are dropped
//! otherwise. A message is printed for the first invalid packet (every one
//! with VERBOSE).
//!
//! Fragments: a later fragment (nonzero offset) passes unchecked; a first
//! fragment is checked for length only.
//!
//! Keywords:
//! - `VERBOSE` (boolean, default false): print a message for every invalid
//!   packet.
//! - `DETAILS` (boolean, default false): count invalid packets per reason
//!   (the `drop_details` handler).
//!
//! Handlers:
//! - `count` (read): valid packets seen.
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, with DETAILS): one line per reason,
//!   `%15u packets due to: %24s`, for `not ICMP`, `bad packet length`,
//!   `bad ICMP checksum`.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> IPClassifier(icmp) -> CheckICMPHeader -> ...;

use super::{checked_ip, CheckHandlers, CheckStats, Checker};
use paraclick_packet::wire::{checksum, ip_proto, IcmpHeader};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

const REASONS: &[&str] = &["not ICMP", "bad packet length", "bad ICMP checksum"];
const NOT_ICMP: usize = 0;
const BAD_LENGTH: usize = 1;
const BAD_CHECKSUM: usize = 2;

pub struct CheckICMPHeader {
    stats: CheckStats,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckICMPHeader", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckICMPHeader, String> {
    let mut a = cx.args();
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let details = a.read::<bool>("DETAILS").unwrap_or(false);
    a.complete()?;
    Ok(CheckICMPHeader {
        stats: CheckStats::new(
            cx.nthreads,
            REASONS,
            "ICMP header check failed",
            verbose,
            details,
            cx.noutputs,
        ),
    })
}

#[inline]
fn check(p: &Packet) -> Result<(), usize> {
    let h = checked_ip(p).ok_or(BAD_LENGTH)?;
    if h.protocol() != ip_proto::ICMP {
        return Err(NOT_ICMP);
    }
    if h.frag_offset_units() != 0 {
        return Ok(());
    }
    let m = IcmpHeader::new_checked(h.payload()).map_err(|_| BAD_LENGTH)?;
    if !h.more_frags() && !checksum::verify(m.as_ref()) {
        return Err(BAD_CHECKSUM);
    }
    Ok(())
}

impl Checker for CheckICMPHeader {
    fn check_stats(&self) -> &CheckStats {
        &self.stats
    }
}

impl Action for CheckICMPHeader {
    const HANDLERS: &'static [Handler<Self>] = CheckHandlers::<Self>::TABLE;

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.stats.verdict(cx, check(p))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;

    fn echo(data: &[u8]) -> Vec<u8> {
        Ip::new("10.0.0.1", "10.0.0.2", 0)
            .icmp(8, 0, [0x12, 0x34, 0, 1], data)
            .bytes()
    }

    #[test]
    fn valid_and_invalid() {
        let h = harness("CheckICMPHeader(DETAILS true)", 2);
        let good = echo(b"ping data");
        let odd = echo(b"odd");
        let udp = Ip::new("10.0.0.1", "10.0.0.2", 0).udp(1, 2, b"x").bytes();
        let mut cksum = good.clone();
        cksum[30] ^= 0x01;
        let short = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::ICMP)
            .payload(&[8, 0, 0xf7, 0xff, 0, 0, 0])
            .bytes();
        let mut iplen = good.clone();
        iplen[2..4].copy_from_slice(&((good.len() + 1) as u16).to_be_bytes());
        h.push(
            0,
            vec![
                marked(&good),
                marked(&odd),
                marked(&udp),
                marked(&cksum),
                marked(&short),
                marked(&iplen),
                pkt(&good),
            ],
        );
        let ok = h.output(0);
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].data(), &good[..]);
        assert_eq!(ok[1].data(), &odd[..]);
        let bad = h.output(1);
        assert_eq!(bad.len(), 5);
        assert_eq!(bad[1].data(), &cksum[..]);
        assert_eq!(
            h.read("drop_details").unwrap(),
            "              1 packets due to:                 not ICMP\n\
             \x20             3 packets due to:        bad packet length\n\
             \x20             1 packets due to:        bad ICMP checksum\n"
        );
        assert_eq!(h.read("count").unwrap(), "2");
        assert_eq!(h.read("drops").unwrap(), "5");
    }

    #[test]
    fn dropped_without_output_1_and_fragments() {
        let h = harness("CheckICMPHeader(VERBOSE true)", 1);
        let mut bad = echo(b"x");
        bad[22] ^= 1;
        let later = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::ICMP)
            .frag(5)
            .payload(b"rest")
            .bytes();
        let mut first = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .icmp(8, 0, [0; 4], &[1; 40])
            .frag(0x2000)
            .bytes();
        first.truncate(20 + 16);
        first[2..4].copy_from_slice(&36u16.to_be_bytes());
        let c = ip_header_checksum(&first[..20]);
        first[10..12].copy_from_slice(&c.to_be_bytes());
        h.push(0, vec![marked(&bad), marked(&later), marked(&first)]);
        assert_eq!(h.output(0).len(), 2);
        assert_eq!(h.drops(), 1);
    }
}
