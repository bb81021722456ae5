//! # CheckPaint
//!
//! CheckPaint(COLOR [, ANNO])
//!
//! Checks packets' paint annotation.
//!
//! Ports: 1 input, 1-2 outputs. Processing: agnostic, but output 1 is push.
//!
//! Packets whose paint annotation equals COLOR go out output 0. The others
//! go out output 1, or are dropped (counted) if output 1 is not used.
//!
//! Arguments:
//! - `COLOR` (integer 0..255, mandatory).
//! - `ANNO` (annotation, default `PAINT`): see Paint.
//!
//! Example:
//!
//!     ... -> cp :: CheckPaint(2) -> ...;   // paint 2 passes
//!     cp[1] -> Discard;                    // the rest

use super::paint::AnnoByte;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct CheckPaint {
    color: u8,
    anno: AnnoByte,
    reject: Verdict,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["wrong paint"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("CheckPaint", "1/1-2", "a/ah", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CheckPaint, String> {
    let mut a = cx.args();
    let color = a.read_mp::<u8>("COLOR");
    let anno = a.read_p::<AnnoByte>("ANNO").unwrap_or(AnnoByte::Paint);
    a.complete()?;
    Ok(CheckPaint {
        color,
        anno,
        reject: if cx.noutputs > 1 {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        },
    })
}

impl Action for CheckPaint {
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if self.anno.get(p) == self.color {
            Verdict::Out(0)
        } else {
            self.reject
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn painted(tag: u8, color: u8) -> paraclick_packet::Packet {
        let mut p = pkt(&[tag]);
        p.anno_mut().paint = color;
        p
    }

    #[test]
    fn two_outputs() {
        let h = harness("CheckPaint(2)", 2);
        h.push(
            0,
            vec![painted(1, 2), painted(2, 3), painted(3, 2), painted(4, 0)],
        );
        assert_eq!(tags(&h.output(0)), vec![1, 3]);
        assert_eq!(tags(&h.output(1)), vec![2, 4]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn one_output_drops_the_rest() {
        let h = harness("CheckPaint(2)", 1);
        h.push(0, vec![painted(1, 2), painted(2, 3)]);
        assert_eq!(tags(&h.output(0)), vec![1]);
        assert_eq!(h.drops(), 1);
    }

    #[test]
    fn anno_argument() {
        let h = harness("CheckPaint(9, ANNO 0)", 2);
        let mut p = painted(1, 9);
        p.anno_mut().user[0] = 1;
        let mut q = painted(2, 0);
        q.anno_mut().user[0] = 9;
        h.push(0, vec![p, q]);
        assert_eq!(tags(&h.output(0)), vec![2]);
        assert_eq!(tags(&h.output(1)), vec![1]);
    }
}
