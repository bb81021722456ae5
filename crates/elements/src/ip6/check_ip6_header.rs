//! # CheckIP6Header
//!
//! CheckIP6Header([BADADDRS, OFFSET, keywords BADADDRS, OFFSET])
//!
//! Checks IPv6 headers.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Expects IPv6 packets starting OFFSET bytes in (default 0). Checks, as
//! RFC 8200 asks of every node, that the packet holds the 40-byte header,
//! that the version is 6, and that the payload length fits in the packet;
//! and, as a router must (RFC 4291 §2.5.2, §2.7), that the source is not a
//! multicast address, not the unspecified address (unless it is a
//! link-local packet: destination `fe80::/10` or `ff02::/16`), and not
//! one of BADADDRS. The extension-header chain must be well formed (each
//! header inside the payload, hop-by-hop only first, at most 16 headers).
//! A packet longer than the IPv6 length (Ethernet padding) is shortened to
//! it. A packet that passes gets its network header annotation (at OFFSET,
//! 40 bytes) and goes to output 0; others go to output 1 if it is
//! connected, else are dropped (counted).
//!
//! Arguments:
//! - `BADADDRS` (space-separated IPv6 addresses): sources not tolerated.
//! - `OFFSET` (unsigned, default 0): where the IPv6 header begins.
//!
//! Handlers:
//! - `count` (read): packets that passed.
//! - `drops` (read): packets that failed.
//!
//! Example:
//!
//!     ... -> Strip(14) -> CheckIP6Header -> GetIP6Address(24) -> rt;

use paraclick_packet::wire::ipv6::addr;
use paraclick_packet::wire::Ipv6Header;
use paraclick_packet::Packet;
use paraclick_runtime::args::FromArg;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::net::Ipv6Addr;

pub struct CheckIP6Header {
    bad: Vec<Ipv6Addr>,
    offset: usize,
    count: PerThreadCount,
    drops: PerThreadCount,
    /// Whether output 1 (bad packets) is connected.
    error_output: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckIP6Header", "1/1-2", "a/ah", make)
        .stateless()
        .drop_reasons(REASONS)
}

/// Why CheckIP6Header drops a packet (its `drop_reasons`).
const REASONS: &[&str] = &[
    "tiny packet",
    "bad IPv6 version",
    "bad IPv6 length",
    "bad source address",
    "bad extension headers",
];
const TINY: u8 = 0;
const BAD_VERSION: u8 = 1;
const BAD_LENGTH: u8 = 2;
const BAD_SADDR: u8 = 3;
const BAD_EXTENSIONS: u8 = 4;

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckIP6Header, String> {
    let mut a = cx.args();
    let bad = a.read_p::<String>("BADADDRS");
    let offset = a.read_p::<usize>("OFFSET").unwrap_or(0);
    a.complete()?;
    let mut addrs = Vec::new();
    for w in bad.as_deref().unwrap_or("").split_whitespace() {
        addrs.push(Ipv6Addr::from_arg(w, cx.env).map_err(|e| format!("BADADDRS: {e}"))?);
    }
    Ok(CheckIP6Header {
        bad: addrs,
        offset,
        count: PerThreadCount::new(cx.nthreads),
        drops: PerThreadCount::new(cx.nthreads),
        error_output: cx.noutputs > 1,
    })
}

impl CheckIP6Header {
    /// The IPv6 length (header and payload) if the packet passes, else
    /// why not.
    fn check(&self, d: &[u8]) -> Result<usize, u8> {
        let d = d.get(self.offset..).ok_or(TINY)?;
        if d.len() < Ipv6Header::<&[u8]>::LEN {
            return Err(TINY);
        }
        let h = Ipv6Header::new_unchecked(d);
        if h.version() != 6 {
            return Err(BAD_VERSION);
        }
        h.check_len().map_err(|_| BAD_LENGTH)?;
        let src = h.src_addr();
        if addr::is_multicast(&src) || self.bad.contains(&src) {
            return Err(BAD_SADDR);
        }
        if src.is_unspecified() {
            let dst = h.dst_addr();
            let ll_mc = dst.octets()[0] == 0xff && dst.octets()[1] & 0x0f == 2;
            if !addr::is_link_local(&dst) && !ll_mc {
                return Err(BAD_SADDR);
            }
        }
        h.upper_layer().map_err(|_| BAD_EXTENSIONS)?;
        Ok(40 + usize::from(h.payload_len()))
    }
}

impl Action for CheckIP6Header {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.check(p.data()) {
            Ok(len) => {
                let want = self.offset + len;
                if p.len() > want {
                    p.take(p.len() - want);
                }
                p.set_network_header(self.offset, 40);
                self.count.inc(cx.thread());
                Verdict::Out(0)
            }
            Err(reason) => {
                self.drops.inc(cx.thread());
                if self.error_output {
                    Verdict::Out(1)
                } else {
                    Verdict::DropFor(reason)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn good_packets_pass_and_are_trimmed() {
        let h = harness("CheckIP6Header", 2);
        let d = Ip6::new("2001:db8::1", "2001:db8::2", 17)
            .udp(1, 2, b"hi")
            .bytes();
        let mut padded = d.clone();
        padded.extend_from_slice(&[0; 8]);
        h.push(0, vec![pkt(&d), pkt(&padded)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].data(), &d[..]);
        assert_eq!(out[0].network_header().unwrap().len(), d.len());
        assert_eq!(h.read("count").unwrap(), "2");
    }

    /// A good packet last, after one bad packet of each kind.
    fn bad_and_good() -> Vec<paraclick_packet::Packet> {
        let good = Ip6::new("2001:db8::1", "2001:db8::2", 59).bytes();
        let mut v4 = good.clone();
        v4[0] = 0x45;
        let mut long = good.clone();
        long[5] = 9; // payload length past the packet
        let mc = Ip6::new("ff02::1", "2001:db8::2", 59).bytes();
        let unspec = Ip6::new("::", "2001:db8::2", 59).bytes();
        let unspec_ll = Ip6::new("::", "ff02::1:ff00:1", 59).bytes();
        let bad = Ip6::new("2001:db8::bad", "2001:db8::2", 59).bytes();
        // A destination options header running past the payload.
        let chain = Ip6::new("2001:db8::1", "2001:db8::2", 60)
            .payload(&[59, 4, 0, 0, 0, 0, 0, 0])
            .bytes();
        vec![
            pkt(&good[..39]),
            pkt(&v4),
            pkt(&long),
            pkt(&mc),
            pkt(&unspec),
            pkt(&bad),
            pkt(&chain),
            pkt(&unspec_ll),
        ]
    }

    #[test]
    fn bad_packets_go_to_output_1() {
        let h = harness("CheckIP6Header(BADADDRS 2001:db8::bad)", 2);
        h.push(0, bad_and_good());
        assert_eq!(h.output(1).len(), 7);
        assert_eq!(h.drops(), 0);
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.read("drops").unwrap(), "7");
    }

    #[test]
    fn bad_packets_are_dropped_for_their_reasons_without_output_1() {
        let h = harness("CheckIP6Header(BADADDRS 2001:db8::bad)", 1);
        h.push(0, bad_and_good());
        assert_eq!(h.output(0).len(), 1);
        assert_eq!(h.drops(), 7);
        assert_eq!(
            h.read("drop_reasons").unwrap(),
            "tiny packet 1\nbad IPv6 version 1\nbad IPv6 length 1\n\
             bad source address 3\nbad extension headers 1\n"
        );
    }

    #[test]
    fn offset_and_dropping_without_output_1() {
        let h = harness("CheckIP6Header(OFFSET 14)", 1);
        let ip = Ip6::new("2001:db8::1", "2001:db8::2", 59);
        let e = ip.ether([1; 6], [2; 6]);
        h.push(0, vec![pkt(&e), pkt(&e[..30])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].network_header().unwrap(), &ip.bytes()[..]);
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("CheckIP6Header(BADADDRS 1.2.3.4)", 1),
            "e :: CheckIP6Header: BADADDRS: expected IPv6 address, not '1.2.3.4'",
        );
    }
}
