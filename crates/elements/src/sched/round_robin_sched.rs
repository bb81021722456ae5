//! # RoundRobinSched
//!
//! RoundRobinSched
//!
//! Pulls from round-robin inputs.
//!
//! Each pull on the output pulls from the inputs in turn until one
//! produces packets; the next pull starts from the input after the one
//! that last produced. A pull for a burst takes up to the burst from that
//! input and, if it falls short, fills the rest from the following
//! inputs (at most once around), so inputs share the output in turns of
//! up to a burst each.
//!
//! The inputs usually come from Queues or other pull schedulers. (Click's
//! RoundRobinSched also uses notification to skip empty inputs; here an
//! empty input costs one pull that returns nothing.)
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     a :: Queue; b :: Queue;
//!     a -> [0]s :: RoundRobinSched; b -> [1]s;
//!     s -> ToDevice(eth0);
//!
//! # SimpleRoundRobinSched
//!
//! SimpleRoundRobinSched
//!
//! Pulls from round-robin inputs: the same as RoundRobinSched (which,
//! here, uses no notification either).
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! # RRSched
//!
//! RRSched
//!
//! RoundRobinSched under the name of Click's source (`rrsched.cc`, whose
//! class Click calls RoundRobinSched; real Click accepts only that name).
//! The same element: see RoundRobinSched.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! # SimpleRRSched
//!
//! SimpleRRSched
//!
//! SimpleRoundRobinSched under the name of Click's source
//! (`simplerrsched.cc`); the same element: see RoundRobinSched.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.

use super::prio_sched::gather;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Kind};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct RoundRobinSched {
    /// The input the next pull starts from.
    next: AtomicUsize,
}

pub fn spec() -> ClassSpec {
    named("RoundRobinSched")
}

/// SimpleRoundRobinSched: the same element under Click's other name.
pub fn simple_spec() -> ClassSpec {
    named("SimpleRoundRobinSched")
}

/// The class under `name`: RoundRobinSched, SimpleRoundRobinSched, and
/// the names of their Click sources, RRSched and SimpleRRSched.
pub fn named(name: &'static str) -> ClassSpec {
    ClassSpec::element(name, "-/1", "l", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
        .metadata_only()
        .replicable_with_queues()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<RoundRobinSched, String> {
    cx.args().complete()?;
    Ok(RoundRobinSched {
        next: AtomicUsize::new(0),
    })
}

impl Element for RoundRobinSched {
    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let n = cx.ninputs();
        if n == 0 {
            return None;
        }
        let max = max.max(1);
        let start = self.next.load(Ordering::Relaxed) % n;
        let mut out: Option<Batch> = None;
        let mut last = None;
        for k in 0..n {
            let i = (start + k) % n;
            let have = out.as_ref().map_or(0, Batch::len);
            if have >= max {
                break;
            }
            if let Some(b) = cx.pull(i, max - have) {
                if !b.is_empty() {
                    last = Some(i);
                }
                gather(&mut out, b);
            }
        }
        if let Some(i) = last {
            self.next.store((i + 1) % n, Ordering::Relaxed);
        }
        out.filter(|b| !b.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{fill, pull, sched_router as router};

    #[test]
    fn one_packet_pulls_alternate() {
        for class in [
            "RoundRobinSched",
            "SimpleRoundRobinSched",
            "RRSched",
            "SimpleRRSched",
        ] {
            let r = router(3, class);
            fill(&r, 0, 1, 3);
            fill(&r, 1, 2, 1);
            fill(&r, 2, 3, 2);
            let got: Vec<u8> = (0..6).flat_map(|_| pull(&r, 1)).collect();
            assert_eq!(got, vec![1, 2, 3, 1, 3, 1]);
            assert!(r.pull_from("s", 0, 1).unwrap().is_none());
        }
    }

    #[test]
    fn bursts_take_turns_and_fill_across_inputs() {
        let r = router(3, "RoundRobinSched");
        fill(&r, 0, 1, 10);
        fill(&r, 1, 2, 2);
        fill(&r, 2, 3, 10);
        // Input 0 fills the whole burst; the next starts at input 1, which
        // falls short, so input 2 fills the rest.
        assert_eq!(pull(&r, 4), vec![1; 4]);
        assert_eq!(pull(&r, 4), vec![2, 2, 3, 3]);
        // Input 2 produced last: the next pull starts at input 0.
        assert_eq!(pull(&r, 4), vec![1; 4]);
        assert_eq!(pull(&r, 4), vec![3; 4]);
        assert_eq!(pull(&r, 100), vec![1, 1, 3, 3, 3, 3]);
        assert!(r.pull_from("s", 0, 4).unwrap().is_none());
        // Empty inputs do not move the turn.
        fill(&r, 1, 2, 1);
        assert_eq!(pull(&r, 4), vec![2]);
    }
}
