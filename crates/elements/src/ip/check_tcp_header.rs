//! # CheckTCPHeader
//!
//! CheckTCPHeader([keywords VERBOSE, DETAILS])
//!
//! Checks TCP headers on TCP/IP packets.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects TCP/IP packets with their IP header annotation set (CheckIPHeader
//! or MarkIPHeader). Checks that the IP header's lengths fit the packet,
//! that the protocol is TCP, that the IP payload holds a TCP header whose
//! data offset is at least 20 bytes and within the payload, and that the
//! TCP checksum is valid. Valid packets go to output 0 unchanged; invalid
//! packets leave on output 1 if it is connected, and are dropped
//! otherwise. A message is printed for the first invalid packet (every one
//! with VERBOSE).
//!
//! Fragments: a later fragment (nonzero offset) carries no TCP header and
//! passes unchecked; a first fragment's header is checked for length only.
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
//!   `%15u packets due to: %24s`, for `not TCP`, `bad packet length`,
//!   `bad TCP checksum`.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> IPClassifier(tcp) -> CheckTCPHeader -> ...;

use super::{checked_ip, CheckHandlers, CheckStats, Checker};
use paraclick_packet::wire::{ip_proto, TcpHeader};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

const REASONS: &[&str] = &["not TCP", "bad packet length", "bad TCP checksum"];
const NOT_TCP: usize = 0;
const BAD_LENGTH: usize = 1;
const BAD_CHECKSUM: usize = 2;

pub struct CheckTCPHeader {
    stats: CheckStats,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckTCPHeader", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckTCPHeader, String> {
    let mut a = cx.args();
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let details = a.read::<bool>("DETAILS").unwrap_or(false);
    a.complete()?;
    Ok(CheckTCPHeader {
        stats: CheckStats::new(
            cx.nthreads,
            REASONS,
            "TCP header check failed",
            verbose,
            details,
            cx.noutputs,
        ),
    })
}

#[inline]
fn check(p: &Packet) -> Result<(), usize> {
    let h = checked_ip(p).ok_or(BAD_LENGTH)?;
    if h.protocol() != ip_proto::TCP {
        return Err(NOT_TCP);
    }
    if h.frag_offset_units() != 0 {
        return Ok(());
    }
    // Header at least 20 bytes, data offset at least 20 and within the
    // segment.
    let t = TcpHeader::new_checked(h.payload()).map_err(|_| BAD_LENGTH)?;
    if h.more_frags() {
        return Ok(());
    }
    if !t.verify_checksum(h.src_addr(), h.dst_addr()) {
        return Err(BAD_CHECKSUM);
    }
    Ok(())
}

impl Checker for CheckTCPHeader {
    fn check_stats(&self) -> &CheckStats {
        &self.stats
    }
}

impl Action for CheckTCPHeader {
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

    fn tcp(opts: &[u8], data: &[u8]) -> Vec<u8> {
        Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp_full(40000, 80, 1, 2, 0x18, 512, opts, data)
            .bytes()
    }

    #[test]
    fn valid_packets_pass_unchanged() {
        let h = harness("CheckTCPHeader", 2);
        let a = tcp(&[], b"GET /");
        let b = tcp(&[2, 4, 5, 0xb4, 1, 1, 1, 0], b"");
        let c = tcp(&[], b"odd");
        h.push(0, vec![marked(&a), marked(&b), marked(&c)]);
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].data(), &a[..]);
        assert_eq!(out[1].data(), &b[..]);
        assert!(h.output(1).is_empty());
        assert_eq!(h.read("count").unwrap(), "3");
    }

    #[test]
    fn invalid_packets_by_reason() {
        let h = harness("CheckTCPHeader(DETAILS true)", 2);
        let good = tcp(&[], b"data");
        let udp = Ip::new("10.0.0.1", "10.0.0.2", 0).udp(1, 2, b"x").bytes();
        let mut cksum = good.clone();
        cksum[41] ^= 0x10;
        let mut off_small = good.clone();
        off_small[32] = 0x40;
        let mut off_big = good.clone();
        off_big[32] = 0x70; // 28 bytes > 24-byte segment
        let short = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .payload(&good[20..39])
            .bytes();
        h.push(
            0,
            vec![
                marked(&good),
                marked(&udp),
                marked(&cksum),
                marked(&off_small),
                marked(&off_big),
                marked(&short),
                marked(&good[..good.len() - 1]),
            ],
        );
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.output(1).len(), 6);
        assert_eq!(
            h.read("drop_details").unwrap(),
            "              1 packets due to:                  not TCP\n\
             \x20             4 packets due to:        bad packet length\n\
             \x20             1 packets due to:         bad TCP checksum\n"
        );
    }

    #[test]
    fn dropped_without_output_1_and_fragments() {
        let h = harness("CheckTCPHeader", 1);
        let mut bad = tcp(&[], b"x");
        bad[36] ^= 1;
        let later = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .frag(100)
            .payload(b"xyz")
            .bytes();
        let first = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp_full(1, 2, 3, 4, 0x10, 5, &[], &[7; 16])
            .frag(0x2000)
            .bytes();
        let mut first_bad = first.clone();
        first_bad[37] ^= 0xff; // checksum not checked in a first fragment
        h.push(0, vec![marked(&bad), marked(&later), marked(&first_bad)]);
        assert_eq!(h.output(0).len(), 2);
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drops").unwrap(), "1");
    }
}
