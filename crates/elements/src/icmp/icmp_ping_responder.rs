//! # ICMPPingResponder
//!
//! ICMPPingResponder()
//!
//! Responds to ICMP echo requests.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic input, output 0
//! agnostic, output 1 push.
//!
//! Incoming packets must have their network header annotation set. Each
//! ICMP echo request is turned, in place, into the corresponding echo
//! reply and emitted on output 0: source and destination addresses
//! swapped, fragment flags and offset cleared, TTL 255, ICMP type 0 code
//! 0, checksums updated incrementally (RFC 1624). The reply's destination
//! IP annotation is set to its destination, its paint annotation cleared
//! and its timestamp set to now; other annotations are kept. Any other
//! packet (not ICMP, not an echo request, shorter than an 8-byte ICMP
//! header, or without a network header) goes to output 1 if it exists and
//! is dropped otherwise.
//!
//! Source route options are not reversed.
//!
//! Example:
//!
//!     ... -> ip :: IPClassifier(icmp type echo, -);
//!     ip[0] -> ICMPPingResponder -> rt;

use paraclick_packet::wire::checksum::{fix_zero, update_u16};
use paraclick_packet::wire::{icmp_type, ip_proto};
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv4Addr;

pub struct IcmpPingResponder {
    other: Option<usize>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["not an echo request"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("ICMPPingResponder", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IcmpPingResponder, String> {
    cx.args().complete()?;
    Ok(IcmpPingResponder {
        other: (cx.noutputs >= 2).then_some(1),
    })
}

fn word(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn set_word(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Turns an echo request into its reply; false (untouched) if `p` is not
/// one.
fn reply(p: &mut Packet) -> bool {
    let Some(nh) = p.network_header_mut() else {
        return false;
    };
    if nh.len() < 20 || nh[0] >> 4 != 4 || nh[9] != ip_proto::ICMP {
        return false;
    }
    let hl = usize::from(nh[0] & 0x0F) * 4;
    if hl < 20 || nh.len() < hl + 8 || nh[hl] != icmp_type::ECHO_REQUEST {
        return false;
    }
    let (ip, icmp) = nh.split_at_mut(hl);
    // Swapping the addresses leaves the checksum as it is.
    let (a, b) = ip[12..20].split_at_mut(4);
    a.swap_with_slice(b);
    let mut sum = word(ip, 10);
    sum = update_u16(sum, word(ip, 6), 0);
    set_word(ip, 6, 0);
    let old = word(ip, 8);
    ip[8] = 255;
    sum = update_u16(sum, old, word(ip, 8));
    set_word(ip, 10, sum);
    let old = word(icmp, 0);
    icmp[0] = icmp_type::ECHO_REPLY;
    icmp[1] = 0;
    let c = update_u16(word(icmp, 2), old, word(icmp, 0));
    set_word(icmp, 2, c);
    // A reply of zeros (identifier and sequence 0, no data) checksums to
    // 0xFFFF; the incremental update gives 0x0000.
    if c == 0 {
        let c = fix_zero(c, icmp);
        set_word(icmp, 2, c);
    }
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let anno = p.anno_mut();
    anno.dst_ip = dst;
    anno.paint = 0;
    anno.timestamp = Timestamp::now();
    true
}

impl Action for IcmpPingResponder {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if reply(p) {
            Verdict::Out(0)
        } else {
            match self.other {
                Some(port) => Verdict::Out(port),
                None => Verdict::DropFor(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::checksum;
    use paraclick_packet::Packet;

    fn echo(ty: u8, code: u8, ttl: u8, flags: [u8; 2], src: &str, dst: &str) -> Vec<u8> {
        let m = icmp(ty, code, [0x12, 0x34, 0x00, 0x07], b"abcdefgh");
        let mut v = ipv4(ip(src), ip(dst), 1, &m);
        v[6..8].copy_from_slice(&flags);
        v[8] = ttl;
        v[10..12].fill(0);
        let c = checksum::checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        v
    }

    fn packet(bytes: &[u8]) -> Packet {
        let mut p = pkt(bytes);
        p.set_network_header(0, 20);
        p
    }

    #[test]
    fn echo_request_becomes_reply() {
        let h = harness("ICMPPingResponder", 1);
        let mut p = packet(&echo(8, 0, 61, [0x40, 0], "10.0.0.5", "18.26.4.24"));
        p.anno_mut().paint = 4;
        p.anno_mut().device = 2;
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        let want = echo(0, 0, 255, [0, 0], "18.26.4.24", "10.0.0.5");
        assert_eq!(out[0].data(), &want[..]);
        assert_eq!(out[0].anno().dst_ip, ip("10.0.0.5"));
        assert_eq!(out[0].anno().paint, 0);
        assert_eq!(out[0].anno().device, 2);
        assert!(!out[0].timestamp().is_zero());
    }

    #[test]
    fn an_all_zero_reply_checksums_to_ffff() {
        // Identifier 0, sequence 0, no data: the reply is all zeros, whose
        // checksum is 0xFFFF, not the 0x0000 an incremental update gives.
        let h = harness("ICMPPingResponder", 1);
        let m = icmp(8, 0, [0; 4], b"");
        h.push(0, vec![packet(&ipv4(ip("1.0.0.1"), ip("5.0.0.5"), 1, &m))]);
        let out = h.output(0);
        let d = out[0].data();
        assert_eq!(&d[20..], &[0, 0, 0xFF, 0xFF, 0, 0, 0, 0]);
        assert!(checksum::verify(&d[20..]));
    }

    #[test]
    fn reply_behind_link_header_with_options() {
        let h = harness("ICMPPingResponder", 1);
        // IP header with 4 bytes of options (NOP NOP NOP EOL), after 14 bytes.
        let m = icmp(8, 0, [0, 1, 0, 2], b"xy");
        let mut v = ipv4(ip("1.1.1.1"), ip("2.2.2.2"), 1, &m);
        v.splice(20..20, [1u8, 1, 1, 0]);
        v[0] = 0x46;
        v[3] += 4;
        v[10..12].fill(0);
        let c = checksum::checksum(&v[..24]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        let mut framed = vec![9u8; 14];
        framed.extend(&v);
        let mut p = pkt(&framed);
        p.set_network_header(14, 24);
        h.push(0, vec![p]);
        let out = h.output(0);
        let d = out[0].data();
        assert_eq!(&d[..14], &[9u8; 14]);
        let ipr = &d[14..38];
        assert!(checksum::verify(ipr));
        assert_eq!(&ipr[12..20], &[2, 2, 2, 2, 1, 1, 1, 1]);
        assert_eq!(&d[38..], &icmp(0, 0, [0, 1, 0, 2], b"xy")[..]);
    }

    #[test]
    fn others_go_to_output_1_or_are_dropped() {
        let others = || {
            vec![
                packet(&echo(0, 0, 64, [0, 0], "1.1.1.1", "2.2.2.2")), // a reply
                packet(&echo(13, 0, 64, [0, 0], "1.1.1.1", "2.2.2.2")), // timestamp
                ip_pkt(ip("1.1.1.1"), ip("2.2.2.2"), 17, &[8; 12]),    // UDP
                packet(&echo(8, 0, 64, [0, 0], "1.1.1.1", "2.2.2.2")[..27]), // short
                pkt(&echo(8, 0, 64, [0, 0], "1.1.1.1", "2.2.2.2")),    // no header anno
            ]
        };
        let h = harness("ICMPPingResponder", 2);
        let sent = others();
        let copies: Vec<Vec<u8>> = sent.iter().map(|p| p.data().to_vec()).collect();
        h.push(0, sent);
        assert!(h.output(0).is_empty());
        let out: Vec<Vec<u8>> = h.output(1).iter().map(|p| p.data().to_vec()).collect();
        assert_eq!(out, copies);
        let h = harness("ICMPPingResponder", 1);
        h.push(0, others());
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 5);
    }
}
