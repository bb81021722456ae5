//! # SetAnnoByte
//!
//! SetAnnoByte(OFFSET, VALUE)
//!
//! Sets a byte of the packet's user annotation area.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets byte OFFSET of each packet's free-form user annotation area
//! (24 bytes in paraclick) to VALUE. Click's named annotations (PAINT and
//! the like) are separate fields in paraclick, so OFFSET is a number.
//!
//! Arguments:
//! - `OFFSET` (integer below 24, mandatory).
//! - `VALUE` (integer 0..255, mandatory).
//!
//! Example:
//!
//!     ... -> SetAnnoByte(4, 17) -> ...

use paraclick_packet::anno::USER_ANNO_SIZE;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct SetAnnoByte {
    offset: usize,
    value: u8,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("SetAnnoByte", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SetAnnoByte, String> {
    let mut a = cx.args();
    let offset = a.read_mp::<usize>("OFFSET");
    let value = a.read_mp::<u8>("VALUE");
    if offset >= USER_ANNO_SIZE {
        a.error(format!("OFFSET must be below {USER_ANNO_SIZE}"));
    }
    a.complete()?;
    Ok(SetAnnoByte { offset, value })
}

impl Action for SetAnnoByte {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if let Some(b) = p.anno_mut().user.get_mut(self.offset) {
            *b = self.value;
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn sets_one_byte() {
        let h = harness("SetAnnoByte(4, 0x11)", 1);
        h.push(0, vec![pkt(&[1])]);
        let out = h.output(0);
        let mut want = [0u8; 24];
        want[4] = 0x11;
        assert_eq!(out[0].anno().user, want);
        assert_eq!(out[0].data(), &[1]);
        assert_err(
            try_harness("SetAnnoByte(24, 1)", 1),
            "e :: SetAnnoByte: OFFSET must be below 24",
        );
        assert_err(
            try_harness("SetAnnoByte(1, 256)", 1),
            "e :: SetAnnoByte: VALUE: 256 out of range",
        );
        assert_err(
            try_harness("SetAnnoByte(1)", 1),
            "e :: SetAnnoByte: missing mandatory VALUE argument",
        );
    }
}
