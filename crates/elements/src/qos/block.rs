//! # Block
//!
//! Block(THRESH)
//!
//! Drops packets with a high rate.
//!
//! Splits packets by their destination rate annotation (set by a rate
//! monitor such as IPRateMonitor or IPFlexMonitor): packets whose
//! annotation is at most THRESH go out output 0, the others out output 1.
//! With THRESH 0, every packet goes out output 0. The annotation is an
//! unsigned 32-bit number in user annotation bytes 8-11 ([`RATE_ANNO`]).
//!
//! Ports: 1 input, 2 outputs. Processing: push.
//!
//! Arguments:
//! - `THRESH` (integer).
//!
//! Handlers:
//! - `thresh` (read/write): the THRESH.
//!
//! Example:
//!
//!     b :: Block(500);
//!     ... -> IPRateMonitor(...) -> b[0] -> ...;
//!     b[1] -> Discard;   // packets preceded by more than 500 siblings

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::atomic::{AtomicU32, Ordering};

/// User annotation bytes of the destination rate annotation (Click's
/// `DST_RATE`; shares space with the IPv6 destination, as in Click).
pub const RATE_ANNO: std::ops::Range<usize> = 8..12;

/// A packet's rate annotation.
pub fn rate_anno(p: &Packet) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&p.anno().user[RATE_ANNO]);
    u32::from_le_bytes(b)
}

/// Sets a packet's rate annotation.
pub fn set_rate_anno(p: &mut Packet, v: u32) {
    p.anno_mut().user[RATE_ANNO].copy_from_slice(&v.to_le_bytes());
}

pub struct Block {
    thresh: AtomicU32,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("Block", "1/2", "h", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Block, String> {
    let mut a = cx.args();
    let thresh = a.read_mp::<u32>("THRESH");
    a.complete()?;
    Ok(Block {
        thresh: AtomicU32::new(thresh),
    })
}

impl Action for Block {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "thresh",
        |e, _| e.thresh.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.thresh.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = self.thresh.load(Ordering::Relaxed);
        if t == 0 || rate_anno(p) <= t {
            Verdict::Out(0)
        } else {
            Verdict::Out(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::{reg, tagged, tags};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::Harness;

    fn with_rate(tag: u8, r: u32) -> Packet {
        let mut p = tagged(tag, 60);
        set_rate_anno(&mut p, r);
        p
    }

    #[test]
    fn splits_by_the_rate_annotation() {
        let h = Harness::new(&reg(), "Block(500)", 2).unwrap();
        h.push(
            0,
            vec![
                with_rate(1, 10),
                with_rate(2, 500),
                with_rate(3, 501),
                with_rate(4, 9999),
            ],
        );
        assert_eq!(tags(&h.output(0)), vec![1, 2]);
        assert_eq!(tags(&h.output(1)), vec![3, 4]);
        h.write("thresh", "0").unwrap();
        h.push(0, vec![with_rate(5, 9999)]);
        assert_eq!(tags(&h.output(0)), vec![5]);
        assert_eq!(h.read("thresh").unwrap(), "0");
        assert_err(
            Harness::new(&reg(), "Block", 2),
            "e :: Block: missing mandatory THRESH argument",
        );
        assert_err(
            Harness::new(&reg(), "Block(-1)", 2),
            "e :: Block: THRESH: expected unsigned integer",
        );
    }
}
