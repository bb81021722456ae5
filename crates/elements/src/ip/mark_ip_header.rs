//! # MarkIPHeader
//!
//! MarkIPHeader(\[OFFSET])
//!
//! Sets the IP header annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Marks packets as IP packets by setting their network header annotation:
//! the IP header starts OFFSET bytes into the packet, and its length is the
//! header's IHL field times 4 (the transport header follows it).
//!
//! Does not check length fields for sanity, shorten packets to the IP
//! length, or set the destination IP address annotation: use CheckIPHeader
//! or CheckIPHeader2 for that. A packet shorter than OFFSET cannot be marked
//! and is dropped (counted); a packet too short to hold the IHL byte is
//! marked with a header length of 0.
//!
//! Arguments:
//! - `OFFSET` (unsigned integer, default 0): where the IP header begins.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Strip(14) -> MarkIPHeader -> IPPrint -> Discard;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct MarkIPHeader {
    offset: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("MarkIPHeader", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MarkIPHeader, String> {
    let mut a = cx.args();
    let offset = a.read_p::<usize>("OFFSET").unwrap_or(0);
    a.complete()?;
    Ok(MarkIPHeader { offset })
}

impl Action for MarkIPHeader {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let hlen = match p.data().get(self.offset) {
            Some(&b) => usize::from(b & 0x0f) * 4,
            None if p.len() == self.offset => 0,
            None => return Verdict::DropFor(0),
        };
        p.set_network_header(self.offset, hlen);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;

    #[test]
    fn marks_header_and_transport() {
        let h = harness("MarkIPHeader(14)", 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", ip_proto::UDP)
            .options(&[1, 1, 1, 1])
            .udp(1, 2, b"x")
            .bytes();
        let mut f = vec![0xaa; 14];
        f.extend_from_slice(&d);
        h.push(0, vec![pkt(&f)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &f[..]);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(out[0].network_header_length(), Some(24));
        assert_eq!(out[0].transport_header_offset(), Some(38));
        assert_eq!(out[0].network_header().unwrap(), &d[..]);
    }

    #[test]
    fn default_offset_zero_no_checks() {
        let h = harness("MarkIPHeader", 1);
        // Version 6, bad checksum, IHL 15: marked all the same.
        let mut d = Ip::new("1.0.0.1", "2.0.0.2", 99).bytes();
        d[0] = 0x6f;
        d[10] ^= 0xff;
        h.push(0, vec![pkt(&d)]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &d[..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].network_header_length(), Some(60));
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn too_short_is_dropped_not_panicking() {
        let h = harness("MarkIPHeader(OFFSET 14)", 1);
        h.push(0, vec![pkt(&[0; 13]), pkt(&[0; 14]), pkt(&[0x45; 15])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].network_header_length(), Some(0));
        assert_eq!(out[1].network_header_length(), Some(20));
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("MarkIPHeader(x)", 1),
            "e :: MarkIPHeader: OFFSET: expected unsigned integer",
        );
        assert_err(
            try_harness("MarkIPHeader(1, 2)", 1),
            "e :: MarkIPHeader: too many arguments ('2')",
        );
    }
}
