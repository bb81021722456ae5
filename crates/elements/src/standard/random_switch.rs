//! # RandomSwitch
//!
//! RandomSwitch
//!
//! Sends packets to random outputs.
//!
//! Ports: 1 input, 1 or more outputs. Processing: push.
//!
//! Sends each packet out one of its outputs, chosen uniformly at random
//! for each packet. After RandomSeed the choices are Click's for the same
//! seed.
//!
//! Example:
//!
//!     ... -> rs :: RandomSwitch;
//!     rs[0] -> q0 :: Queue; rs[1] -> q1 :: Queue;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct RandomSwitch;

pub fn spec() -> ClassSpec {
    ClassSpec::action("RandomSwitch", "1/1-", "h", |cx: &mut ConfigCx<'_>| {
        cx.args().complete().map(|_| RandomSwitch)
    })
    .stateless()
    .metadata_only()
}

impl Action for RandomSwitch {
    #[inline]
    fn action(&self, cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
        let last = cx.noutputs().max(1) - 1;
        Verdict::Out(crate::util::random_range(0, last as u32) as usize)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn spreads_packets_over_every_output() {
        let h = harness("RandomSwitch", 3);
        let mut n = [0usize; 3];
        for _ in 0..18 {
            h.push(0, (0..500).map(|_| pkt(&[1])).collect());
            for (i, k) in n.iter_mut().enumerate() {
                *k += h.output(i).len();
            }
        }
        assert_eq!(n.iter().sum::<usize>(), 9000);
        assert!(n.iter().all(|&k| (2600..3400).contains(&k)), "{n:?}");
        assert_err(
            try_harness("RandomSwitch(2)", 1),
            "e :: RandomSwitch: too many arguments ('2')",
        );
    }
}
