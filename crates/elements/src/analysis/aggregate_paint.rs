//! # AggregatePaint
//!
//! AggregatePaint([BITS, keywords INCREMENTAL])
//!
//! Sets the aggregate annotation based on the paint annotation.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Sets the aggregate annotation of every passing packet to its paint
//! annotation, or, given BITS, to the paint annotation's low-order BITS
//! bits.
//!
//! Arguments:
//! - `BITS` (integer 1 to 8, default 8): how many low-order bits of the
//!   paint annotation to use.
//!
//! Keywords:
//! - `INCREMENTAL` (boolean, default false): update the aggregate
//!   annotation incrementally: given paint bits V and an old aggregate O,
//!   the new aggregate is O times 2^BITS plus V.
//!
//! Example:
//!
//!     ... -> AggregateIPFlows -> AggregatePaint(1, INCREMENTAL true) -> AggregateCounter -> ...

use super::{aggregate, set_aggregate};
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

pub struct AggregatePaint {
    bits: u32,
    incremental: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregatePaint", "1/1", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregatePaint, String> {
    let mut a = cx.args();
    let bits = a.read_p::<u32>("BITS").unwrap_or(8);
    let incremental = a.read::<bool>("INCREMENTAL").unwrap_or(false);
    a.complete()?;
    if !(1..=8).contains(&bits) {
        return Err(format!("BITS must be between 1 and 8, not {bits}"));
    }
    Ok(AggregatePaint { bits, incremental })
}

impl Action for AggregatePaint {
    const HANDLERS: &'static [Handler<Self>] = &[];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let v = u32::from(p.anno().paint) & ((1u32 << self.bits) - 1);
        let agg = if self.incremental {
            (aggregate(p) << self.bits) | v
        } else {
            v
        };
        set_aggregate(p, agg);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{aggregate, set_aggregate};
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn painted(paint: u8, agg: u32) -> Packet {
        let mut p = pkt(&[0; 20]);
        p.anno_mut().paint = paint;
        set_aggregate(&mut p, agg);
        p
    }

    fn aggs(decl: &str, ps: Vec<Packet>) -> Vec<u32> {
        let h = harness(decl, 1);
        h.push(0, ps);
        h.output(0).iter().map(aggregate).collect()
    }

    #[test]
    fn paint_bits_and_incremental() {
        assert_eq!(aggs("AggregatePaint", vec![painted(0xA5, 9)]), [0xA5]);
        assert_eq!(aggs("AggregatePaint(4)", vec![painted(0xA5, 9)]), [5]);
        assert_eq!(
            aggs("AggregatePaint(1, INCREMENTAL true)", vec![painted(3, 6)]),
            [13]
        );
        assert_eq!(
            aggs("AggregatePaint(INCREMENTAL true)", vec![painted(2, 1)]),
            [0x102]
        );
        assert_err(
            try_harness("AggregatePaint(9)", 1),
            "BITS must be between 1 and 8",
        );
        assert_err(
            try_harness("AggregatePaint(0)", 1),
            "BITS must be between 1 and 8",
        );
    }
}
