//! # ICMPPingEncap
//!
//! ICMPPingEncap(SRC, DST [, keyword IDENTIFIER])
//!
//! Encapsulates packets in ICMP ping headers.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Encapsulates each packet in an ICMP echo request header and a 20-byte
//! IP header with source IP address SRC and destination IP address DST,
//! exactly as `ICMPIPEncap(SRC, DST, echo)`: the identifier field is
//! IDENTIFIER, and the sequence field advances by one for each packet,
//! starting at 1 (both in network byte order). The IP header has TTL 255;
//! both checksums are computed, the IP header annotation is set and the
//! destination IP annotation is DST. A packet whose result would exceed
//! 65535 bytes is dropped.
//!
//! Arguments:
//! - `SRC`, `DST` (IP addresses).
//! - `IDENTIFIER` (integer 0-65535, default 0).
//!
//! Handlers:
//! - `src`, `dst` (read/write): the SRC and DST arguments.
//!
//! Example:
//!
//!     InfiniteSource(DATA "ping", LIMIT 3) -> ICMPPingEncap(10.0.0.1, 10.0.0.2)
//!       -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> ...

use super::icmp_ip_encap::{show, ICMPIPEncap};
use paraclick_packet::wire::icmp_type;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;

pub struct ICMPPingEncap(ICMPIPEncap);

pub fn spec() -> ClassSpec {
    ClassSpec::action("ICMPPingEncap", "1/1", "a", make)
        .shared("one ICMP sequence and IP ID counter for all packets")
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ICMPPingEncap, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv4Addr>("SRC");
    let dst = a.read_mp::<Ipv4Addr>("DST");
    let ident = a.read::<u16>("IDENTIFIER").unwrap_or(0);
    a.complete()?;
    Ok(ICMPPingEncap(ICMPIPEncap::new(
        src,
        dst,
        icmp_type::ECHO_REQUEST,
        0,
        ident,
    )))
}

impl Action for ICMPPingEncap {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| show(e.0.src()),
            |e, v, hx| {
                let a: Ipv4Addr = hx.arg(v)?;
                e.0.src()
                    .store(a.into(), std::sync::atomic::Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| show(e.0.dst()),
            |e, v, hx| {
                let a: Ipv4Addr = hx.arg(v)?;
                e.0.dst()
                    .store(a.into(), std::sync::atomic::Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.0.encap(p)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn pings_with_advancing_sequence() {
        let h = harness("ICMPPingEncap(10.0.0.1, 10.0.0.2, IDENTIFIER 7)", 1);
        h.push(0, vec![pkt(b"x"), pkt(b"y"), pkt(b"z")]);
        let out = h.output(0);
        assert_eq!(out.len(), 3);
        for (i, (p, c)) in out.iter().zip([b'x', b'y', b'z']).enumerate() {
            let n = i as u8 + 1;
            let want = Ip::new("10.0.0.1", "10.0.0.2", 0)
                .ttl(255)
                .id(u16::from(n))
                .icmp(8, 0, [0, 7, 0, n], &[c])
                .bytes();
            assert_eq!(p.data(), &want[..]);
        }
        h.write("src", "10.0.0.5").unwrap();
        assert_eq!(h.read("src").unwrap(), "10.0.0.5");
        h.push(0, vec![pkt(b"")]);
        assert_eq!(&h.output(0)[0].data()[12..16], &[10, 0, 0, 5]);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("ICMPPingEncap(10.0.0.1)", 1),
            "e :: ICMPPingEncap: missing mandatory DST argument",
        );
        assert_err(
            try_harness("ICMPPingEncap(10.0.0.1, 10.0.0.2, 8)", 1),
            "e :: ICMPPingEncap: too many arguments ('8')",
        );
        assert_err(
            try_harness("ICMPPingEncap(10.0.0.1, 10.0.0.2, IDENTIFIER 70000)", 1),
            "e :: ICMPPingEncap: IDENTIFIER: 70000 out of range",
        );
    }
}
