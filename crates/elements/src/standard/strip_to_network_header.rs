//! # StripToNetworkHeader
//!
//! StripToNetworkHeader()
//!
//! Strips everything preceding the network header.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Removes the data in front of each packet's network header annotation
//! (set by MarkIPHeader, CheckIPHeader, ...). If the annotation points
//! before the start of the data, the data start moves back to it. A packet
//! without a network header annotation passes unchanged (Click requires
//! the annotation and leaves the result undefined).
//!
//! Example:
//!
//!     CheckIPHeader(14) -> StripToNetworkHeader -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct StripToNetworkHeader;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("StripToNetworkHeader", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
        // To each packet's own network header annotation.
        .header_change(paraclick_runtime::HeaderChange::Unknown)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StripToNetworkHeader, String> {
    cx.args().complete()?;
    Ok(StripToNetworkHeader)
}

impl Action for StripToNetworkHeader {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match p.network_header_offset() {
            Some(off) if off >= 0 => {
                p.pull(off as usize);
                Verdict::Out(0)
            }
            // The header lies in the headroom: move back to it (never
            // reallocates, the bytes are in the buffer).
            Some(off) => match p.push(off.unsigned_abs()) {
                Ok(()) => Verdict::Out(0),
                Err(_) => Verdict::DropFor(0),
            },
            None => Verdict::Out(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn strips_forward_and_back() {
        let h = harness("StripToNetworkHeader", 1);
        let data: Vec<u8> = (0..30).collect();
        let mut a = pkt(&data);
        a.set_network_header(14, 8);
        let mut b = pkt(&data);
        b.set_network_header(4, 8);
        b.pull(10); // network header 6 bytes before the data
        let c = pkt(&[9, 9]);
        h.push(0, vec![a, b, c]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &data[14..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].transport_header_offset(), Some(8));
        assert_eq!(out[1].data(), &data[4..]);
        assert_eq!(out[1].network_header_offset(), Some(0));
        assert_eq!(out[2].data(), &[9, 9], "no annotation: unchanged");
        assert_eq!(h.drops(), 0);
    }
}
