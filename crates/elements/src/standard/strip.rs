//! # Strip
//!
//! Strip(LENGTH)
//!
//! Strips bytes from the front of packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Deletes the first LENGTH bytes from each packet. A packet shorter than
//! LENGTH becomes empty (as Click's `pull` clamps). Header annotations keep
//! pointing at the same bytes, so Unstrip can put the bytes back.
//!
//! Arguments:
//! - `LENGTH` (integer, mandatory): bytes to remove.
//!
//! Example:
//!
//!     Strip(14)    // remove the Ethernet header

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct Strip {
    len: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Strip", "1/1", "a", make)
        .stateless()
        .metadata_only()
        .header_change(paraclick_runtime::HeaderChange::StripsArg)
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<Strip, String> {
    let mut a = cx.args();
    let len = a.read_mp::<u32>("LENGTH") as usize;
    a.complete()?;
    Ok(Strip { len })
}

impl Action for Strip {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        p.pull(self.len);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn strips() {
        let h = harness("Strip(14)", 1);
        let data: Vec<u8> = (0..20).collect();
        let mut p = pkt(&data);
        p.set_network_header(14, 4);
        h.push(0, vec![p, pkt(&[1, 2, 3])]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &[14, 15, 16, 17, 18, 19]);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert!(out[1].is_empty(), "short packet becomes empty");
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("Strip", 1),
            "e :: Strip: missing mandatory LENGTH argument",
        );
        assert_err(
            try_harness("Strip(-1)", 1),
            "e :: Strip: LENGTH: expected unsigned integer",
        );
        assert_err(
            try_harness("Strip(x)", 1),
            "e :: Strip: LENGTH: expected unsigned integer",
        );
    }
}
