//! # Unstrip
//!
//! Unstrip(LENGTH)
//!
//! Puts bytes back at the front of packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Moves the start of each packet's data LENGTH bytes back. The bytes may
//! be ones a Strip removed earlier (they are still in the buffer). When a
//! packet lacks the headroom, it is copied into a larger buffer (the new
//! bytes are then zero); if no buffer is available the packet is dropped
//! (counted).
//!
//! Arguments:
//! - `LENGTH` (integer, mandatory): bytes to put back.
//!
//! Example:
//!
//!     Strip(14) -> ... -> Unstrip(14)

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct Unstrip {
    len: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no headroom"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("Unstrip", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
        .header_change(paraclick_runtime::HeaderChange::UnstripsArg)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Unstrip, String> {
    let mut a = cx.args();
    let len = a.read_mp::<u32>("LENGTH") as usize;
    a.complete()?;
    if len > 1 << 20 {
        return Err("LENGTH too large".into());
    }
    Ok(Unstrip { len })
}

impl Action for Unstrip {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match p.push(self.len) {
            Ok(()) => Verdict::Out(0),
            Err(_) => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::pool::HEADROOM;

    #[test]
    fn puts_stripped_bytes_back() {
        let h = harness("Unstrip(2)", 1);
        let mut p = pkt(&[1, 2, 3, 4, 5]);
        p.pull(3);
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out[0].data(), &[2, 3, 4, 5]);
    }

    #[test]
    fn beyond_headroom_reallocates() {
        let n = HEADROOM + 100;
        let h = harness(&format!("Unstrip({n})"), 1);
        let mut p = pkt(&[7, 8]);
        p.anno_mut().paint = 3;
        h.push(0, vec![p]);
        let out = h.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), n + 2);
        assert_eq!(&out[0].data()[n..], &[7, 8]);
        assert_eq!(out[0].anno().paint, 3);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("Unstrip", 1),
            "e :: Unstrip: missing mandatory LENGTH argument",
        );
        assert_err(
            try_harness("Unstrip(10000000)", 1),
            "e :: Unstrip: LENGTH too large",
        );
    }
}
