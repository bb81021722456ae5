//! # StripIPHeader
//!
//! StripIPHeader()
//!
//! Strips the outermost IP header.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Removes the bytes from the start of the packet data through the end of
//! the IP header (options included), as given by the IP header
//! annotation, so the data starts at the transport header. Annotations are
//! not changed: the IP header annotation still points at the stripped
//! header, which UnstripIPHeader can put back. A packet without an IP
//! header annotation, or whose header annotation lies outside its data, is
//! dropped (counted).
//!
//! Example:
//!
//!     ... -> CheckIPHeader -> StripIPHeader -> ... -> UnstripIPHeader -> ...
//!
//! # UnstripIPHeader
//!
//! UnstripIPHeader()
//!
//! Restores the outermost IP header.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Moves the start of the packet data back to the IP header annotation,
//! restoring a header that StripIPHeader (or Strip) removed. Packets whose
//! data already starts at or before the IP header pass unchanged; a packet
//! without an IP header annotation is dropped (counted).
//!
//! Example:
//!
//!     ... -> StripIPHeader -> ... -> UnstripIPHeader -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct StripIPHeader;
pub struct UnstripIPHeader;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no network header", "no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("StripIPHeader", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        cx.args().complete().map(|_| StripIPHeader)
    })
    .drop_reasons(DROP_REASONS)
    .stateless()
    // Strips as many bytes as the packet's own header says.
    .header_change(paraclick_runtime::HeaderChange::Unknown)
}

pub fn unstrip_spec() -> ClassSpec {
    ClassSpec::action("UnstripIPHeader", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        cx.args().complete().map(|_| UnstripIPHeader)
    })
    .drop_reasons(DROP_REASONS)
    .stateless()
    // Puts back as many bytes as the packet's annotation says.
    .header_change(paraclick_runtime::HeaderChange::Unknown)
}

impl Action for StripIPHeader {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match p.transport_header_offset() {
            Some(t) if t >= 0 && t as usize <= p.len() && p.has_network_header() => {
                p.pull(t as usize);
                Verdict::Out(0)
            }
            _ => Verdict::DropFor(0),
        }
    }
}

impl Action for UnstripIPHeader {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match p.network_header_offset() {
            Some(n) if n < 0 => match p.push((-n) as usize) {
                Ok(()) => Verdict::Out(0),
                Err(_) => Verdict::DropFor(1),
            },
            Some(_) => Verdict::Out(0),
            None => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn strips_and_restores_header_with_options() {
        let d = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .options(&[1, 1, 1, 0])
            .udp(5, 6, b"hello")
            .bytes();
        let mut eth = vec![0u8; 14];
        eth.extend_from_slice(&d);
        let mut p = pkt(&eth);
        p.set_network_header(14, 24);
        let s = harness("StripIPHeader", 1);
        s.push(0, vec![p]);
        let out = s.output(0);
        assert_eq!(out[0].data(), &d[24..], "data starts at the UDP header");
        assert_eq!(out[0].network_header_offset(), Some(-24));
        let u = harness("UnstripIPHeader", 1);
        u.push(0, out);
        let back = u.output(0);
        assert_eq!(back[0].data(), &d[..]);
        assert_eq!(back[0].network_header_offset(), Some(0));
        // Already unstripped (data before the header): unchanged.
        u.push(
            0,
            vec![pkt(&eth)]
                .into_iter()
                .map(|mut p| {
                    p.set_network_header(14, 24);
                    p
                })
                .collect(),
        );
        assert_eq!(u.output(0)[0].data(), &eth[..]);
    }

    #[test]
    fn no_annotation_is_dropped() {
        let s = harness("StripIPHeader", 1);
        s.push(0, vec![pkt(&[0x45; 20])]);
        assert_eq!(s.drops(), 1);
        let u = harness("UnstripIPHeader", 1);
        u.push(0, vec![pkt(&[0x45; 20])]);
        assert_eq!(u.drops(), 1);
        assert_err(
            try_harness("StripIPHeader(1)", 1),
            "e :: StripIPHeader: too many arguments ('1')",
        );
    }
}
