//! # RoundRobinSwitch
//!
//! RoundRobinSwitch
//!
//! Sends packets to round-robin outputs.
//!
//! Ports: 1 input, 1 or more outputs. Processing: push.
//!
//! Pushes each arriving packet to one of the N outputs; the next packet
//! goes to the following output, in round-robin order. paraclick keeps the
//! rotation per thread (no shared counter on the packet path), so with
//! several threads pushing, each thread's packets are spread evenly but
//! the interleaving across threads is not a strict global rotation.
//!
//! Example:
//!
//!     rr :: RoundRobinSwitch;
//!     rr[0] -> Queue -> ...; rr[1] -> Queue -> ...;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, PerThread, Verdict};

pub struct RoundRobinSwitch {
    next: PerThread<usize>,
    noutputs: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("RoundRobinSwitch", "1/1-", "h", make)
        .shared("a round-robin turn shared by all flows")
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RoundRobinSwitch, String> {
    cx.args().complete()?;
    Ok(RoundRobinSwitch {
        next: PerThread::new(cx.nthreads, |_| 0),
        noutputs: cx.noutputs.max(1),
    })
}

impl Action for RoundRobinSwitch {
    #[inline]
    fn action(&self, cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
        let n = self.noutputs;
        let next = self.next.get(cx);
        let out = *next;
        *next = if out + 1 >= n { 0 } else { out + 1 };
        Verdict::Out(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn rotates_across_batches() {
        let h = harness("RoundRobinSwitch", 3);
        h.push(0, (1..=4).map(|i| pkt(&[i])).collect());
        h.push(0, (5..=7).map(|i| pkt(&[i])).collect());
        assert_eq!(tags(&h.output(0)), vec![1, 4, 7]);
        assert_eq!(tags(&h.output(1)), vec![2, 5]);
        assert_eq!(tags(&h.output(2)), vec![3, 6]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn no_arguments() {
        assert_err(
            try_harness("RoundRobinSwitch(1)", 2),
            "e :: RoundRobinSwitch: too many arguments ('1')",
        );
    }
}
