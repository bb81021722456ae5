//! # IP6Encap
//!
//! IP6Encap(keywords PROTO, SRC, DST, HLIM, CLASS)
//!
//! Encapsulates packets in static IPv6 headers.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Prepends a 40-byte IPv6 header: next header PROTO, source SRC,
//! destination DST (the destination IPv6 annotation when DST is `DST_ANNO`),
//! hop limit HLIM, traffic class CLASS, flow label 0, payload length the
//! packet's length. Sets the network header annotation. A packet longer
//! than 65535 bytes, or without room for the header, is dropped.
//!
//! Arguments (positional in this order, or keywords):
//! - `PROTO` (0-255), `SRC`, `DST` (IPv6 addresses or `DST_ANNO`).
//! - `HLIM` (default 250), `CLASS` (default 0).
//!
//! Example:
//!
//!     ... -> IP6Encap(PROTO 17, SRC 2001:db8::1, DST 2001:db8::2) -> ...

use paraclick_packet::wire::{Ipv6Header, Ipv6Repr};
use paraclick_packet::Packet;
use paraclick_runtime::args::FromArg;
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};
use std::net::Ipv6Addr;

pub struct IP6Encap {
    proto: u8,
    src: Ipv6Addr,
    /// `None`: the destination annotation.
    dst: Option<Ipv6Addr>,
    hlim: u8,
    class: u8,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("IP6Encap", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IP6Encap, String> {
    let mut a = cx.args();
    let proto = a.read_mp::<u8>("PROTO");
    let src = a.read_mp::<Ipv6Addr>("SRC");
    let dst = a.read_mp::<Raw>("DST").0;
    let hlim = a.read_p::<u8>("HLIM").unwrap_or(250);
    let class = a.read_p::<u8>("CLASS").unwrap_or(0);
    a.complete()?;
    let dst = match dst.as_str() {
        "DST_ANNO" => None,
        d => Some(Ipv6Addr::from_arg(d, cx.env).map_err(|e| format!("DST: {e}"))?),
    };
    Ok(IP6Encap {
        proto,
        src,
        dst,
        hlim,
        class,
    })
}

/// Prepends the IPv6 header of `r` (its payload length is set from the
/// packet); false if the packet is too long or no buffer could hold it.
pub(crate) fn prepend_ip6(p: &mut Packet, mut r: Ipv6Repr) -> bool {
    let len = p.len();
    if len > 65535 || p.push(40).is_err() {
        return false;
    }
    r.payload_len = len;
    r.emit(&mut Ipv6Header::new_unchecked(&mut p.data_mut()[..40]));
    p.set_network_header(0, 40);
    true
}

impl Action for IP6Encap {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let dst = self.dst.unwrap_or_else(|| p.anno().dst_ip6());
        let r = Ipv6Repr {
            src_addr: self.src,
            dst_addr: dst,
            next_header: self.proto,
            payload_len: 0,
            hop_limit: self.hlim,
            traffic_class: self.class,
            flow_label: 0,
        };
        if prepend_ip6(p, r) {
            Verdict::Out(0)
        } else {
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn encapsulates() {
        let h = harness("IP6Encap(59, 2001:db8::1, 2001:db8::2, HLIM 9)", 1);
        h.push(0, vec![pkt(b"abcd")]);
        let out = h.output(0);
        let want = Ip6::new("2001:db8::1", "2001:db8::2", 59)
            .hlim(9)
            .payload(b"abcd")
            .bytes();
        assert_eq!(out[0].data(), &want[..]);
        assert_eq!(out[0].network_header().unwrap().len(), 44);
        let h = harness("IP6Encap(PROTO 4, SRC ::1, DST DST_ANNO)", 1);
        let mut p = pkt(b"x");
        p.anno_mut().set_dst_ip6(a6("fe80::5"));
        h.push(0, vec![p]);
        assert_eq!(&h.output(0)[0].data()[24..40], &a6("fe80::5").octets());
        assert_err(
            try_harness("IP6Encap(300, ::1, ::2)", 1),
            "e :: IP6Encap: PROTO: 300 out of range",
        );
        assert_err(
            try_harness("IP6Encap(17, ::1)", 1),
            "e :: IP6Encap: missing mandatory DST argument",
        );
        assert_err(
            try_harness("IP6Encap(17, ::1, 1.2.3.4)", 1),
            "e :: IP6Encap: DST: expected IPv6 address, not '1.2.3.4'",
        );
    }
}
