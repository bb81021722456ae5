//! # MarkMACHeader
//!
//! MarkMACHeader([OFFSET, LENGTH])
//!
//! Sets the MAC header annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Marks each packet's link-layer (MAC) header as starting OFFSET bytes
//! into the packet data (default 0). LENGTH (default 14, an Ethernet
//! header) is the header's length: a packet shorter than OFFSET + LENGTH
//! is passed on unmarked, its earlier MAC header annotation cleared.
//!
//! Arguments:
//! - `OFFSET` (integer, default 0).
//! - `LENGTH` (integer, default 14).
//!
//! Example:
//!
//!     FromDump(trace.pcap) -> MarkMACHeader -> EtherMirror -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct MarkMACHeader {
    offset: usize,
    len: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("MarkMACHeader", "1/1", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MarkMACHeader, String> {
    let mut a = cx.args();
    let offset = a.read_p::<u16>("OFFSET").unwrap_or(0);
    let len = a.read_p::<u16>("LENGTH").unwrap_or(14);
    a.complete()?;
    Ok(MarkMACHeader {
        offset: offset.into(),
        len: len.into(),
    })
}

impl Action for MarkMACHeader {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() >= self.offset + self.len {
            p.set_mac_header(self.offset);
        } else {
            // Keep the network and transport marks; drop only the MAC one.
            let net = p.network_header_offset().filter(|&n| n >= 0);
            let nlen = p.network_header_length();
            p.clear_headers();
            if let (Some(n), Some(l)) = (net, nlen) {
                p.set_network_header(n as usize, l);
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn marks_at_offset_when_long_enough() {
        let h = harness("MarkMACHeader(4)", 1);
        let mut short = pkt(&[0; 10]);
        short.set_mac_header(0);
        short.set_network_header(2, 4);
        h.push(0, vec![pkt(&[0; 18]), short]);
        let out = h.output(0);
        assert_eq!(out[0].mac_header_offset(), Some(4));
        assert_eq!(out[0].mac_header().unwrap().len(), 14);
        assert_eq!(out[1].mac_header_offset(), None, "too short: unmarked");
        assert_eq!(out[1].network_header_offset(), Some(2));
        let h = harness("MarkMACHeader", 1);
        h.push(0, vec![pkt(&[0; 14])]);
        assert_eq!(h.output(0)[0].mac_header_offset(), Some(0));
        assert_err(
            try_harness("MarkMACHeader(x)", 1),
            "e :: MarkMACHeader: OFFSET: expected unsigned integer",
        );
        assert_err(
            try_harness("MarkMACHeader(0, 14, 1)", 1),
            "e :: MarkMACHeader: too many arguments ('1')",
        );
    }
}
