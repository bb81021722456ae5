//! # CheckLength
//!
//! CheckLength(MAX)
//!
//! Drops large packets.
//!
//! Ports: 1 input, 1-2 outputs. Processing: agnostic, but output 1 is push.
//!
//! Packets of length MAX or less go out output 0; longer ones go out
//! output 1, or are dropped (counted) if output 1 is not used.
//!
//! Arguments:
//! - `MAX` (integer, mandatory): the largest length that passes.
//!
//! Example:
//!
//!     ... -> cl :: CheckLength(1500) -> ...; cl[1] -> ICMPError(...);

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct CheckLength {
    max: usize,
    reject: Verdict,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too long"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckLength", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

pub(crate) fn make(cx: &mut ConfigCx<'_>) -> Result<CheckLength, String> {
    let mut a = cx.args();
    let max = a.read_mp::<u32>("MAX") as usize;
    a.complete()?;
    Ok(CheckLength {
        max,
        reject: if cx.noutputs > 1 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
    })
}

impl Action for CheckLength {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if p.len() <= self.max {
            Verdict::Out(0)
        } else {
            self.reject
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn splits_by_length() {
        let h = harness("CheckLength(3)", 2);
        h.push(
            0,
            vec![pkt(&[1, 0, 0]), pkt(&[2, 0, 0, 0]), pkt(&[3]), pkt(&[])],
        );
        let out0 = h.output(0);
        assert_eq!(
            out0.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![3, 1, 0]
        );
        assert_eq!(tags(&h.output(1)), vec![2]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn one_output_drops() {
        let h = harness("CheckLength(MAX 2)", 1);
        h.push(0, vec![pkt(&[1, 0, 0]), pkt(&[2])]);
        assert_eq!(tags(&h.output(0)), vec![2]);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("CheckLength", 1),
            "e :: CheckLength: missing mandatory MAX argument",
        );
        assert_err(
            try_harness("CheckLength(-5)", 1),
            "e :: CheckLength: MAX: expected unsigned integer",
        );
    }
}
