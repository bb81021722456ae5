//! # MarkIP6Header
//!
//! MarkIP6Header(\[OFFSET])
//!
//! Sets the IPv6 header annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Marks packets as IPv6 packets whose header starts OFFSET bytes in
//! (default 0): sets the network header annotation there, 40 bytes long.
//! Checks nothing (use CheckIP6Header for that); a packet shorter than
//! OFFSET + 40 bytes is dropped, since no later IPv6 element could use it.
//!
//! Example:
//!
//!     FromDevice(eth0) -> Classifier(12/86dd) -> MarkIP6Header(14) -> IP6Print;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct MarkIP6Header {
    offset: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("MarkIP6Header", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MarkIP6Header, String> {
    let mut a = cx.args();
    // A packet offset (u16): 2^64-1 overflowed OFFSET + 40 per packet.
    let offset = usize::from(a.read_p::<u16>("OFFSET").unwrap_or(0));
    a.complete()?;
    Ok(MarkIP6Header { offset })
}

impl Action for MarkIP6Header {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() < self.offset + 40 {
            return Verdict::DropFor(0);
        }
        p.set_network_header(self.offset, 40);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn marks_at_offset() {
        let h = harness("MarkIP6Header(14)", 1);
        let ip = Ip6::new("::1", "::2", 59);
        let e = ip.ether([1; 6], [2; 6]);
        h.push(0, vec![pkt(&e), pkt(&e[..53])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].network_header().unwrap(), &ip.bytes()[..]);
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("MarkIP6Header(x)", 1),
            "e :: MarkIP6Header: OFFSET: expected unsigned integer",
        );
        // 2^64-1 overflowed OFFSET + 40 on the first packet.
        assert_err(
            try_harness("MarkIP6Header(18446744073709551615)", 1),
            "e :: MarkIP6Header: OFFSET: 18446744073709551615 out of range",
        );
    }
}
