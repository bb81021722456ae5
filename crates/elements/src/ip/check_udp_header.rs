//! # CheckUDPHeader
//!
//! CheckUDPHeader([keywords VERBOSE, DETAILS, CHECKSUM])
//!
//! Checks UDP headers on UDP/IP packets.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects UDP/IP packets with their IP header annotation set (CheckIPHeader
//! or MarkIPHeader). Checks that the IP header's lengths fit the packet,
//! that the protocol is UDP, that the UDP length field is at least 8 and
//! within the IP payload, and that the checksum (if present: a zero UDP
//! checksum means none) is valid. Valid packets go to output 0 unchanged;
//! invalid packets leave on output 1 if it is connected, and are dropped
//! otherwise. A message is printed for the first invalid packet (every
//! one with VERBOSE).
//!
//! Fragments: a later fragment (nonzero offset) carries no UDP header and
//! passes unchecked; a first fragment's header is checked for length only
//! (the checksum covers data it does not hold).
//!
//! Keywords:
//! - `VERBOSE` (boolean, default false): print a message for every invalid
//!   packet.
//! - `DETAILS` (boolean, default false): count invalid packets per reason
//!   (the `drop_details` handler).
//! - `CHECKSUM` (boolean, default true): check the UDP checksum.
//!
//! Handlers:
//! - `count` (read): valid packets seen.
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, with DETAILS): one line per reason,
//!   `%15u packets due to: %24s`, for `not UDP`, `bad packet length`,
//!   `bad UDP checksum`.
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> IPClassifier(udp) -> CheckUDPHeader -> ...;

use super::{checked_ip, CheckHandlers, CheckStats, Checker};
use paraclick_packet::wire::{ip_proto, UdpHeader};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

const REASONS: &[&str] = &["not UDP", "bad packet length", "bad UDP checksum"];
const NOT_UDP: usize = 0;
const BAD_LENGTH: usize = 1;
const BAD_CHECKSUM: usize = 2;

pub struct CheckUDPHeader {
    checksum: bool,
    stats: CheckStats,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckUDPHeader", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckUDPHeader, String> {
    let mut a = cx.args();
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let details = a.read::<bool>("DETAILS").unwrap_or(false);
    let checksum = a.read::<bool>("CHECKSUM").unwrap_or(true);
    a.complete()?;
    Ok(CheckUDPHeader {
        checksum,
        stats: CheckStats::new(
            cx.nthreads,
            REASONS,
            "UDP header check failed",
            verbose,
            details,
            cx.noutputs,
        ),
    })
}

impl CheckUDPHeader {
    #[inline]
    fn check(&self, p: &Packet) -> Result<(), usize> {
        let h = checked_ip(p).ok_or(BAD_LENGTH)?;
        if h.protocol() != ip_proto::UDP {
            return Err(NOT_UDP);
        }
        if h.frag_offset_units() != 0 {
            return Ok(());
        }
        let seg = h.payload();
        if seg.len() < UdpHeader::<&[u8]>::HEADER_LEN {
            return Err(BAD_LENGTH);
        }
        let ulen = usize::from(UdpHeader::new_unchecked(seg).len());
        if ulen < UdpHeader::<&[u8]>::HEADER_LEN {
            return Err(BAD_LENGTH);
        }
        if h.more_frags() {
            return Ok(());
        }
        // The datagram: the length field's worth of the IP payload.
        let u =
            UdpHeader::new_checked(seg.get(..ulen).ok_or(BAD_LENGTH)?).map_err(|_| BAD_LENGTH)?;
        if self.checksum && !u.verify_checksum(h.src_addr(), h.dst_addr()) {
            return Err(BAD_CHECKSUM);
        }
        Ok(())
    }
}

impl Checker for CheckUDPHeader {
    fn check_stats(&self) -> &CheckStats {
        &self.stats
    }
}

impl Action for CheckUDPHeader {
    const HANDLERS: &'static [Handler<Self>] = CheckHandlers::<Self>::TABLE;

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.stats.verdict(cx, self.check(p))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;

    fn udp(data: &[u8]) -> Vec<u8> {
        Ip::new("10.0.0.1", "10.0.0.2", 0)
            .udp(5353, 53, data)
            .bytes()
    }

    fn counts(h: &paraclick_runtime::testing::Harness) -> Vec<u64> {
        h.read("drop_details")
            .unwrap()
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect()
    }

    #[test]
    fn valid_packets_pass_unchanged() {
        let h = harness("CheckUDPHeader", 2);
        let a = udp(b"hello");
        let b = udp(b"");
        let mut nocksum = udp(b"odd");
        nocksum[26] = 0;
        nocksum[27] = 0;
        let opts = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .options(&[1, 1, 1, 1])
            .udp(1, 2, b"x")
            .bytes();
        h.push(
            0,
            vec![marked(&a), marked(&b), marked(&nocksum), marked(&opts)],
        );
        let out = h.output(0);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].data(), &a[..]);
        assert_eq!(out[2].data(), &nocksum[..]);
        assert_eq!(h.read("count").unwrap(), "4");
        assert_eq!(h.read("drops").unwrap(), "0");
    }

    #[test]
    fn invalid_packets_by_reason() {
        let h = harness("CheckUDPHeader(DETAILS true)", 2);
        let good = udp(b"payload!");
        let tcp = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp(1, 2, 3, 4, 2, 5)
            .bytes();
        let mut cksum = good.clone();
        cksum[30] ^= 1;
        let mut long = good.clone();
        long[24..26].copy_from_slice(&17u16.to_be_bytes());
        let mut short = good.clone();
        short[24..26].copy_from_slice(&7u16.to_be_bytes());
        let tiny = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .payload(&[1, 2, 3, 4, 5, 6, 7])
            .bytes();
        let mut iplen = good.clone();
        iplen[2..4].copy_from_slice(&100u16.to_be_bytes());
        h.push(
            0,
            vec![
                marked(&good),
                marked(&tcp),
                marked(&cksum),
                marked(&long),
                marked(&short),
                marked(&tiny),
                marked(&iplen),
                pkt(&good),
            ],
        );
        assert_eq!(h.output(0).len(), 1);
        let bad = h.output(1);
        assert_eq!(bad.len(), 7);
        assert_eq!(bad[0].data(), &tcp[..], "unchanged on output 1");
        assert_eq!(counts(&h), [1, 5, 1]);
        assert_eq!(h.read("drops").unwrap(), "7");
        assert_eq!(
            h.read("drop_details").unwrap().lines().nth(2).unwrap(),
            "              1 packets due to:         bad UDP checksum"
        );
    }

    #[test]
    fn checksum_keyword_and_drop_without_output_1() {
        let mut d = udp(b"data");
        d[29] ^= 0x40;
        let h = harness("CheckUDPHeader(CHECKSUM false)", 1);
        h.push(0, vec![marked(&d)]);
        assert_eq!(h.output(0).len(), 1);
        let h = harness("CheckUDPHeader", 1);
        h.push(0, vec![marked(&d)]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 1);
        assert_err(h.read("drop_details"), "drop_details needs DETAILS true");
    }

    #[test]
    fn fragments() {
        let h = harness("CheckUDPHeader", 2);
        // First fragment: header holds the whole datagram's length.
        let whole = udp(&[9; 40]);
        let mut first = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .frag(0x2000)
            .payload(&whole[20..36])
            .bytes();
        let later = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .frag(2)
            .payload(&whole[36..])
            .bytes();
        h.push(0, vec![marked(&first), marked(&later)]);
        assert_eq!(h.output(0).len(), 2);
        // A first fragment too short for a UDP header is bad.
        first = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .frag(0x2000)
            .payload(&whole[20..24])
            .bytes();
        h.push(0, vec![marked(&first)]);
        assert_eq!(h.output(1).len(), 1);
    }

    #[test]
    fn random_packets_never_panic() {
        let h = harness("CheckUDPHeader", 2);
        let mut rng = Rng::new(61);
        let mut n = 0;
        for _ in 0..2000 {
            let mut d = rng.datagram().bytes();
            let i = rng.below(d.len());
            if rng.below(2) == 0 {
                d[i] = rng.u8();
            }
            let cut = d.len() - rng.below(4).min(d.len());
            let mut p = marked(&d[..cut]);
            if rng.below(10) == 0 {
                p.clear_headers();
            }
            h.push(0, vec![p]);
            n += 1;
        }
        assert_eq!(h.output(0).len() + h.output(1).len(), n);
    }
}
