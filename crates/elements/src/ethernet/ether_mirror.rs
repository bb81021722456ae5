//! # EtherMirror
//!
//! EtherMirror()
//!
//! Swaps Ethernet source and destination addresses.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Incoming packets are Ethernet frames; their source and destination
//! addresses are swapped before they are output. Packets shorter than an
//! Ethernet header are dropped.
//!
//! Example:
//!
//!     FromDevice(eth0) -> EtherMirror -> Queue -> ToDevice(eth0);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct EtherMirror;

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("EtherMirror", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EtherMirror, String> {
    cx.args().complete()?;
    Ok(EtherMirror)
}

impl Action for EtherMirror {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() < 14 {
            return Verdict::DropFor(0);
        }
        let (dst, rest) = p.data_mut().split_at_mut(6);
        dst.swap_with_slice(&mut rest[..6]);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn swaps_addresses() {
        let h = harness("EtherMirror", 1);
        let f = ether_frame(eth("1:2:3:4:5:6"), eth("a:b:c:d:e:f"), 0x0800, &[0x45]);
        h.push(0, vec![pkt(&f), pkt(&[1, 2, 3])]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].data(),
            &[10, 11, 12, 13, 14, 15, 1, 2, 3, 4, 5, 6, 8, 0, 0x45]
        );
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("EtherMirror(1)", 1),
            "e :: EtherMirror: too many arguments ('1')",
        );
    }
}
