//! # CheckIPHeader
//!
//! CheckIPHeader([OFFSET, keywords OFFSET, INTERFACES, BADSRC, GOODDST, STRICT_SRC, CHECKSUM, VERBOSE, DETAILS])
//!
//! Checks IP headers (RFC 1812 5.2.2 and 5.3.7).
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Input packets should have IP headers starting OFFSET bytes in. Checks
//! that the packet is long enough for an IP header, that the version is 4,
//! that the header length is at least 20 and the total length covers the
//! header and fits in the packet, and (unless CHECKSUM is false) that the
//! header checksum is valid. If source checking is on (any of INTERFACES,
//! BADSRC and GOODDST given), also checks that the source address is not
//! on the BADSRC list (which INTERFACES extends), unless the destination
//! is on the GOODDST list. That is Click's rule: only the listed addresses
//! are bad sources, so a packet from 127.0.0.1 or a multicast address
//! passes. With STRICT_SRC, the martian sources of RFC 1812 5.3.7 are bad
//! too (0.0.0.0/8, 127.0.0.0/8, multicast 224.0.0.0/4, class E
//! 240.0.0.0/4, which holds 255.255.255.255), with the same GOODDST
//! exemption.
//!
//! A valid packet gets its network header annotation (at OFFSET, with the
//! header's length), is shortened to the IP total length (removing link
//! layer padding such as Ethernet's), gets its destination IP annotation set
//! to the header's destination, and leaves on output 0. An invalid packet
//! leaves on output 1 if it is connected, and is dropped otherwise.
//! CheckIPHeader prints a message the first time it meets an invalid packet
//! (every time with VERBOSE).
//!
//! Keywords:
//! - `OFFSET` (unsigned integer, default 0): where the IP header begins.
//! - `INTERFACES` (space-separated IP prefixes): the router's interface
//!   addresses. Acts as a BADSRC of their broadcast addresses plus 0.0.0.0
//!   and 255.255.255.255, and a GOODDST of the addresses:
//!   `INTERFACES 18.26.4.9/24 18.32.9.44/28` is like
//!   `BADSRC 18.26.4.255 18.32.9.47 0.0.0.0 255.255.255.255` and
//!   `GOODDST 18.26.4.9 18.32.9.44`.
//! - `BADSRC` (space-separated IP addresses): bad source addresses (added
//!   to those INTERFACES implies).
//! - `GOODDST` (space-separated IP addresses): destinations exempt from the
//!   source check.
//! - `STRICT_SRC` (boolean, default false): also refuse RFC 1812 5.3.7
//!   martian sources (a paraclick extension; turns source checking on).
//! - `CHECKSUM` (boolean, default true): check the header checksum.
//! - `VERBOSE` (boolean, default false): print a message for every invalid
//!   packet, not just the first.
//! - `DETAILS` (boolean, default false): count invalid packets per reason
//!   (the `drop_details` handler).
//!
//! The old syntax `CheckIPHeader(BADSRC2 [, OFFSET])` is accepted: BADSRC2
//! is a BADSRC list to which 0.0.0.0 and 255.255.255.255 are added.
//!
//! Handlers:
//! - `count` (read): valid packets seen.
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, with DETAILS): invalid packets per reason, one
//!   line each: `%15u packets due to: %24s` for the reasons `tiny packet`,
//!   `bad IP version`, `bad IP header length`, `bad IP length`,
//!   `bad IP checksum`, `bad source address`.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Strip(14)
//!         -> c :: CheckIPHeader(INTERFACES 18.26.4.1/24 18.26.7.1/24)
//!         -> GetIPAddress(16) -> ...;
//!     c[1] -> Discard;

use super::{CheckHandlers, CheckStats, Checker, IpList, IP_MIN_HLEN};
use paraclick_packet::wire::{Ipv4Header, Ipv4Prefix};
use paraclick_packet::Packet;
use paraclick_runtime::args::FromArg;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;

/// Click's reasons, in the order `drop_details` prints them.
pub(crate) const REASONS: &[&str] = &[
    "tiny packet",
    "bad IP version",
    "bad IP header length",
    "bad IP length",
    "bad IP checksum",
    "bad source address",
];
const TINY: usize = 0;
const BAD_VERSION: usize = 1;
const BAD_HLEN: usize = 2;
const BAD_IP_LEN: usize = 3;
const BAD_CHECKSUM: usize = 4;
const BAD_SADDR: usize = 5;

pub struct CheckIPHeader {
    offset: usize,
    checksum: bool,
    check_src: bool,
    /// Martian sources are bad too.
    strict_src: bool,
    bad_src: AddrSet,
    good_dst: AddrSet,
    stats: CheckStats,
}

/// A few addresses (an interface's broadcast addresses, say), checked on
/// every packet: a 64-bit filter answers "no" for most addresses in a few
/// instructions, and only an address whose filter bit is set is looked
/// for in the list.
struct AddrSet {
    filter: u64,
    addrs: Box<[u32]>,
}

impl AddrSet {
    fn new(addrs: impl IntoIterator<Item = Ipv4Addr>) -> AddrSet {
        let addrs: Box<[u32]> = addrs.into_iter().map(u32::from).collect();
        let filter = addrs.iter().fold(0, |f, &a| f | AddrSet::bit(a));
        AddrSet { filter, addrs }
    }

    /// The address's filter bit: the top six bits of a multiplicative
    /// hash, which mixes every byte of the address into them.
    #[inline]
    fn bit(a: u32) -> u64 {
        1 << (a.wrapping_mul(0x9E37_79B1) >> 26)
    }

    /// The filter test is inlined into the caller; the list, which most
    /// addresses never reach, is searched out of line.
    #[inline(always)]
    fn contains(&self, a: u32) -> bool {
        self.filter & AddrSet::bit(a) != 0 && self.list_contains(a)
    }

    #[inline(never)]
    fn list_contains(&self, a: u32) -> bool {
        self.addrs.contains(&a)
    }
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckIPHeader", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
        .click_alignment(paraclick_runtime::ClickAlignment::NeedsAtOffsetArg {
            modulus: 4,
            offset: 0,
        })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckIPHeader, String> {
    make_checker(cx, true)
}

/// A RFC 1812 5.3.7 martian source: 0.0.0.0/8, 127.0.0.0/8, multicast, or
/// class E (which includes the limited broadcast address).
#[inline]
fn is_martian_src(a: u32) -> bool {
    let first = a >> 24;
    first == 0 || first == 127 || first >= 224
}

/// Configures CheckIPHeader (`checksum_default` true) or CheckIPHeader2
/// (false).
pub(crate) fn make_checker(
    cx: &mut ConfigCx<'_>,
    checksum_default: bool,
) -> Result<CheckIPHeader, String> {
    let env = &*cx.env;
    let mut a = cx.args();
    let mut bad_src: Vec<Ipv4Addr> = Vec::new();
    let mut good_dst: Vec<Ipv4Addr> = Vec::new();
    let mut check_src = false;
    if let Some(ifs) = a.read::<String>("INTERFACES") {
        check_src = true;
        for w in ifs.split_whitespace() {
            let p = Ipv4Prefix::from_arg(w, env).map_err(|e| format!("INTERFACES: {e}"))?;
            let net = u32::from(p.addr) & p.mask_u32();
            bad_src.push(Ipv4Addr::from(net | !p.mask_u32()));
            good_dst.push(p.addr);
        }
        bad_src.push(Ipv4Addr::UNSPECIFIED);
        bad_src.push(Ipv4Addr::BROADCAST);
    }
    if let Some(IpList(l)) = a.read("BADSRC") {
        check_src = true;
        bad_src.extend(l);
    }
    if let Some(IpList(l)) = a.read("GOODDST") {
        check_src = true;
        good_dst.extend(l);
    }
    let strict_src = a.read::<bool>("STRICT_SRC").unwrap_or(false);
    check_src |= strict_src;
    let mut offset = a.read::<usize>("OFFSET");
    let checksum = a.read::<bool>("CHECKSUM").unwrap_or(checksum_default);
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(false);
    let details = a.read::<bool>("DETAILS").unwrap_or(false);
    let pos: Vec<String> = a.rest().into_iter().map(|s| s.trim().to_string()).collect();
    a.complete()?;
    let offset_arg = |s: &str| usize::from_arg(s, env).map_err(|e| format!("OFFSET: {e}"));
    let mut bad_src2 = |s: &str| -> Result<(), String> {
        let l = super::parse_ip_list(s, env).map_err(|e| format!("BADSRC: {e}"))?;
        check_src = true;
        bad_src.extend(l);
        bad_src.push(Ipv4Addr::UNSPECIFIED);
        bad_src.push(Ipv4Addr::BROADCAST);
        Ok(())
    };
    match pos.as_slice() {
        [] => {}
        [one] if one.is_empty() => {}
        [one] => match usize::from_arg(one, env) {
            Ok(o) => offset = offset.or(Some(o)),
            Err(_) => bad_src2(one)?,
        },
        [first, second] => {
            if !first.is_empty() {
                bad_src2(first)?;
            }
            if !second.is_empty() {
                let o = offset_arg(second)?;
                offset = offset.or(Some(o));
            }
        }
        _ => return Err(format!("too many arguments ('{}')", pos[2])),
    }
    let stats = CheckStats::new(
        cx.nthreads,
        REASONS,
        "IP header check failed",
        verbose,
        details,
        cx.noutputs,
    );
    Ok(CheckIPHeader {
        offset: offset.unwrap_or(0),
        checksum,
        check_src,
        strict_src,
        bad_src: AddrSet::new(bad_src),
        good_dst: AddrSet::new(good_dst),
        stats,
    })
}

impl CheckIPHeader {
    /// Why the IP header at `data` is invalid, or its header and total
    /// lengths and destination. Inlined into `action`, so that the result
    /// stays in registers.
    #[inline(always)]
    fn validate(&self, data: &[u8]) -> Result<(usize, usize, Ipv4Addr), usize> {
        if data.len() < IP_MIN_HLEN {
            return Err(TINY);
        }
        let h = Ipv4Header::new_unchecked(data);
        if h.version() != 4 {
            return Err(BAD_VERSION);
        }
        let hlen = h.header_len();
        if hlen < IP_MIN_HLEN {
            return Err(BAD_HLEN);
        }
        // Header beyond the packet, total length below the header or
        // beyond the packet: all "bad IP length", as in Click.
        let h = Ipv4Header::new_checked(data).map_err(|_| BAD_IP_LEN)?;
        if self.checksum && !h.verify_checksum() {
            return Err(BAD_CHECKSUM);
        }
        let src = u32::from(h.src_addr());
        let dst = h.dst_addr();
        if self.check_src
            && ((self.strict_src && is_martian_src(src)) || self.bad_src.contains(src))
            && !self.good_dst.contains(u32::from(dst))
        {
            return Err(BAD_SADDR);
        }
        Ok((hlen, usize::from(h.total_len()), dst))
    }

    pub fn count(&self) -> u64 {
        self.stats.count()
    }

    pub fn drops(&self) -> u64 {
        self.stats.drops()
    }
}

impl Checker for CheckIPHeader {
    fn check_stats(&self) -> &CheckStats {
        &self.stats
    }
}

impl Action for CheckIPHeader {
    const HANDLERS: &'static [Handler<Self>] = CheckHandlers::<Self>::TABLE;

    // Always inlined into the fused hop that calls it: the call, and
    // the verdict passed back through memory, cost more than the work.
    #[inline(always)]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let r = match p.data().get(self.offset..) {
            Some(data) => self.validate(data),
            None => Err(TINY),
        };
        match r {
            Ok((hlen, total, dst)) => {
                p.set_network_header(self.offset, hlen);
                let plen = p.len() - self.offset;
                if plen > total {
                    p.take(plen - total);
                }
                p.anno_mut().dst_ip = dst;
                self.stats.pass(cx)
            }
            Err(reason) => self.stats.fail(cx, reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn address_set_finds_exactly_its_members() {
        let members: Vec<std::net::Ipv4Addr> = (0..6u32)
            .map(|i| std::net::Ipv4Addr::from(0x121a_04ffu32.wrapping_add(i << 8)))
            .collect();
        let set = super::AddrSet::new(members.clone());
        for m in &members {
            assert!(set.contains(u32::from(*m)));
        }
        // Neighbours of members, and addresses whose filter bit collides
        // with a member's, are not members.
        let mut collisions = 0;
        for a in 0x121a_0000u32..0x121b_0000 {
            let member = members.iter().any(|m| u32::from(*m) == a);
            assert_eq!(set.contains(a), member, "{a:#x}");
            collisions += usize::from(!member && set.filter & super::AddrSet::bit(a) != 0);
        }
        assert!(
            collisions > 0,
            "the list behind the filter was never consulted"
        );
        assert!(!super::AddrSet::new([]).contains(0));
    }
    fn udp() -> Vec<u8> {
        Ip::new("18.26.4.44", "10.0.0.8", 0)
            .udp(1000, 53, b"hello")
            .bytes()
    }

    #[test]
    fn valid_packet_passes_marked_and_annotated() {
        let h = harness("CheckIPHeader", 2);
        let d = udp();
        h.push(0, vec![pkt(&d)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &d[..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].network_header_length(), Some(20));
        assert_eq!(out[0].transport_header_offset(), Some(20));
        assert_eq!(out[0].anno().dst_ip, ip("10.0.0.8"));
        assert!(h.output(1).is_empty());
        assert_eq!(h.read("count").unwrap(), "1");
        assert_eq!(h.read("drops").unwrap(), "0");
        assert_err(h.read("drop_details"), "drop_details needs DETAILS true");
    }

    #[test]
    fn trims_link_padding_beyond_total_length() {
        let h = harness("CheckIPHeader(14)", 1);
        let d = udp();
        let mut f = vec![0xee; 14];
        f.extend_from_slice(&d);
        f.extend_from_slice(&[0; 17]);
        h.push(0, vec![pkt(&f)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 14 + d.len());
        assert_eq!(&out[0].data()[14..], &d[..]);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(out[0].network_header().unwrap(), &d[..]);
    }

    #[test]
    fn options_and_fragments_are_valid() {
        let h = harness("CheckIPHeader", 2);
        let opts = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .options(&[7, 7, 4, 0, 0, 0, 0, 1])
            .payload(b"abc")
            .bytes();
        let frag = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .frag(0x2000 | 185)
            .payload(&[1; 16])
            .bytes();
        h.push(0, vec![pkt(&opts), pkt(&frag)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &opts[..]);
        assert_eq!(out[0].network_header_length(), Some(28));
        assert_eq!(out[1].data(), &frag[..]);
    }

    /// Pushes each packet and returns the drop_details counts.
    fn details_after(decl: &str, packets: Vec<Vec<u8>>) -> (Vec<u64>, usize, usize) {
        let h = harness(decl, 2);
        h.push(0, packets.iter().map(|d| pkt(d)).collect());
        let text = h.read("drop_details").unwrap();
        let counts = text
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect();
        (counts, h.output(0).len(), h.output(1).len())
    }

    #[test]
    fn each_reason() {
        let good = udp();
        let mut v6 = good.clone();
        v6[0] = 0x65;
        let mut ihl4 = good.clone();
        ihl4[0] = 0x44;
        let mut ihl_beyond = good[..24].to_vec();
        ihl_beyond[0] = 0x47;
        let mut total_small = good.clone();
        total_small[2..4].copy_from_slice(&19u16.to_be_bytes());
        let mut total_big = good.clone();
        total_big[2..4].copy_from_slice(&((good.len() + 1) as u16).to_be_bytes());
        let mut cksum = good.clone();
        cksum[11] ^= 1;
        let (counts, ok, bad) = details_after(
            "CheckIPHeader(DETAILS true)",
            vec![
                good.clone(),
                good[..19].to_vec(),
                vec![],
                v6,
                ihl4,
                ihl_beyond,
                total_small,
                total_big,
                good[..good.len() - 1].to_vec(),
                cksum,
            ],
        );
        assert_eq!(counts, [2, 1, 1, 4, 1, 0]);
        assert_eq!((ok, bad), (1, 9));
    }

    #[test]
    fn drop_details_format() {
        let h = harness("CheckIPHeader(DETAILS true)", 1);
        h.push(0, vec![pkt(&[0x45; 3])]);
        assert_eq!(
            h.read("drop_details").unwrap(),
            "              1 packets due to:              tiny packet\n\
             \x20             0 packets due to:           bad IP version\n\
             \x20             0 packets due to:     bad IP header length\n\
             \x20             0 packets due to:            bad IP length\n\
             \x20             0 packets due to:          bad IP checksum\n\
             \x20             0 packets due to:       bad source address\n"
        );
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.read("count").unwrap(), "0");
        // No output 1: dropped, counted by the router.
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn drops_count_their_reasons_without_output_1() {
        let h = harness("CheckIPHeader", 1);
        let good = udp();
        let mut cksum = good.clone();
        cksum[11] ^= 1;
        let mut v6 = good.clone();
        v6[0] = 0x65;
        // A bad checksum alone (the one-packet path), then a mixed batch.
        h.push(0, vec![pkt(&cksum)]);
        assert_eq!(h.drops(), 1);
        assert_eq!(h.read("drop_reasons").unwrap(), "bad IP checksum 1\n");
        h.push(
            0,
            vec![
                pkt(&good),
                pkt(&cksum),
                pkt(&good[..10]),
                pkt(&v6),
                pkt(&good),
            ],
        );
        assert_eq!(h.output(0).len(), 2);
        assert_eq!(h.drops(), 4);
        assert_eq!(h.read("drops").unwrap(), "4");
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "tiny packet 1\nbad IP version 1\nbad IP checksum 2\n"
        );
    }

    #[test]
    fn bad_packets_to_output_1_unchanged() {
        let h = harness("CheckIPHeader", 2);
        let mut d = udp();
        d[10] ^= 0x55;
        d.extend_from_slice(&[9; 6]);
        h.push(0, vec![pkt(&d)]);
        assert!(h.output(0).is_empty());
        let bad = h.output(1);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].data(), &d[..], "not trimmed, not changed");
        assert!(!bad[0].has_network_header());
        assert_eq!(h.drops(), 0);
        assert_eq!(h.read("drops").unwrap(), "1");
        assert_eq!(h.read("drop_reasons").unwrap(), "", "sent on, not dropped");
    }

    #[test]
    fn checksum_keyword() {
        let mut d = udp();
        d[11] ^= 1;
        let h = harness("CheckIPHeader(CHECKSUM false)", 2);
        h.push(0, vec![pkt(&d)]);
        assert_eq!(h.output(0).len(), 1);
    }

    fn src_verdicts(decl: &str, pairs: &[(&str, &str)]) -> Vec<bool> {
        let h = harness(decl, 2);
        let mut res = Vec::new();
        for (s, t) in pairs {
            h.push(0, vec![pkt(&Ip::new(s, t, 17).payload(b"x").bytes())]);
            let ok = h.output(0).len() == 1;
            assert_eq!(h.output(1).len(), usize::from(!ok));
            res.push(ok);
        }
        res
    }

    /// Sources to the outside world, and two to the router itself.
    const SOURCES: &[(&str, &str)] = &[
        ("18.26.4.44", "1.1.1.1"),      // ordinary
        ("18.26.4.255", "1.1.1.1"),     // subnet broadcast
        ("18.32.9.47", "1.1.1.1"),      // subnet broadcast
        ("18.32.9.255", "1.1.1.1"),     // not a broadcast of /28
        ("0.0.0.0", "1.1.1.1"),         // this host
        ("255.255.255.255", "1.1.1.1"), // limited broadcast
        ("224.0.0.5", "1.1.1.1"),       // multicast
        ("239.255.0.1", "1.1.1.1"),     // multicast
        ("127.0.0.1", "1.1.1.1"),       // loopback
        ("0.1.2.3", "1.1.1.1"),         // net 0
        ("240.0.0.1", "1.1.1.1"),       // class E
        ("18.26.4.255", "18.26.4.9"),   // to the router: exempt
        ("0.0.0.0", "18.32.9.44"),      // to the router: exempt
    ];

    #[test]
    fn interfaces_refuse_broadcast_sources_as_click() {
        // Click's rule: the broadcasts INTERFACES implies, 0.0.0.0 and
        // 255.255.255.255 are bad; loopback, multicast, net 0 and class E
        // sources pass.
        let v = src_verdicts(
            "CheckIPHeader(INTERFACES 18.26.4.9/24 18.32.9.44/28)",
            SOURCES,
        );
        assert_eq!(
            v,
            [true, false, false, true, false, false, true, true, true, true, true, true, true]
        );
    }

    #[test]
    fn strict_src_refuses_rfc1812_martians() {
        let v = src_verdicts(
            "CheckIPHeader(INTERFACES 18.26.4.9/24 18.32.9.44/28, STRICT_SRC true)",
            SOURCES,
        );
        assert_eq!(
            v,
            [
                true, false, false, true, false, false, false, false, false, false, false, true,
                true
            ]
        );
        // STRICT_SRC alone turns source checking on.
        let v = src_verdicts(
            "CheckIPHeader(STRICT_SRC true)",
            &[("127.0.0.1", "2.2.2.2"), ("1.2.3.4", "2.2.2.2")],
        );
        assert_eq!(v, [false, true]);
    }

    #[test]
    fn badsrc_and_gooddst() {
        let v = src_verdicts(
            "CheckIPHeader(BADSRC 1.2.3.4 5.6.7.8, GOODDST 9.9.9.9)",
            &[
                ("1.2.3.4", "2.2.2.2"),
                ("5.6.7.8", "2.2.2.2"),
                ("1.2.3.5", "2.2.2.2"),
                ("1.2.3.4", "9.9.9.9"),
                ("224.1.1.1", "2.2.2.2"),
            ],
        );
        assert_eq!(v, [false, false, true, true, true]);
        // Without source checking, anything goes.
        let v = src_verdicts(
            "CheckIPHeader",
            &[("224.1.1.1", "2.2.2.2"), ("255.255.255.255", "2.2.2.2")],
        );
        assert_eq!(v, [true, true]);
    }

    #[test]
    fn old_syntax_badsrc2_offset() {
        let h = harness("CheckIPHeader(1.2.3.4, 2)", 2);
        let mut a = vec![0, 0];
        a.extend(Ip::new("1.2.3.4", "2.2.2.2", 17).bytes());
        let mut b = vec![0, 0];
        b.extend(Ip::new("255.255.255.255", "2.2.2.2", 17).bytes());
        let mut c = vec![0, 0];
        c.extend(Ip::new("4.4.4.4", "2.2.2.2", 17).bytes());
        h.push(0, vec![pkt(&a), pkt(&b), pkt(&c)]);
        let ok = h.output(0);
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].data(), &c[..]);
        assert_eq!(h.output(1).len(), 2);
        // One positional integer is OFFSET.
        let h = harness("CheckIPHeader(2)", 2);
        h.push(0, vec![pkt(&a)]);
        assert_eq!(h.output(0).len(), 1);
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            (
                "CheckIPHeader(INTERFACES 1.2.3.4/33)",
                "e :: CheckIPHeader: INTERFACES: expected IP prefix, not '1.2.3.4/33'",
            ),
            (
                "CheckIPHeader(BADSRC 1.2.3)",
                "e :: CheckIPHeader: BADSRC: expected IP address, not '1.2.3'",
            ),
            (
                "CheckIPHeader(CHECKSUM maybe)",
                "e :: CheckIPHeader: CHECKSUM: expected boolean (true or false)",
            ),
            (
                "CheckIPHeader(1.2.3.4, 2, 3)",
                "e :: CheckIPHeader: too many arguments ('3')",
            ),
            (
                "CheckIPHeader(1.2.3.4, x)",
                "e :: CheckIPHeader: OFFSET: expected unsigned integer",
            ),
            (
                "CheckIPHeader(FOO 1)",
                "e :: CheckIPHeader: unknown keyword FOO",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }

    #[test]
    fn random_garbage_never_panics() {
        let h = harness("CheckIPHeader(INTERFACES 10.0.0.1/8, DETAILS true)", 2);
        let mut rng = Rng::new(7);
        let mut n = 0;
        for _ in 0..2000 {
            let mut d = rng.datagram().bytes();
            for _ in 0..rng.below(4) {
                let i = rng.below(d.len());
                d[i] = rng.u8();
            }
            let cut = rng.below(d.len() + 1);
            d.truncate(cut);
            h.push(0, vec![pkt(&d)]);
            n += 1;
        }
        let ok = h.output(0);
        for p in &ok {
            assert!(ip_checksum_ok(p.data()));
            assert_eq!(
                p.len(),
                usize::from(u16::from_be_bytes([p.data()[2], p.data()[3]]))
            );
        }
        assert_eq!(ok.len() + h.output(1).len(), n);
    }
}
