//! # PrioSched
//!
//! PrioSched
//!
//! Pulls from priority-scheduled inputs.
//!
//! Each pull on the output pulls from the inputs in order, starting from
//! input 0: a strict priority scheduler. A pull for a burst takes what
//! input 0 has (up to the burst), then fills the rest from input 1, and so
//! on, so lower-priority inputs only get what higher ones leave.
//!
//! The inputs usually come from Queues or other pull schedulers. (Click's
//! PrioSched also uses notification to skip empty inputs; here an empty
//! input costs one pull that returns nothing.)
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     hi :: Queue; lo :: Queue;
//!     hi -> [0]s :: PrioSched; lo -> [1]s;
//!     s -> ToDevice(eth0);
//!
//! # SimplePrioSched
//!
//! SimplePrioSched
//!
//! Pulls from priority-scheduled inputs: the same as PrioSched (which,
//! here, uses no notification either).
//!
//! Ports: any number of inputs, 1 output. Processing: pull.

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Kind};

pub struct PrioSched;

pub fn spec() -> ClassSpec {
    ClassSpec::element("PrioSched", "-/1", "l", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
        .metadata_only()
        .replicable_with_queues()
}

/// SimplePrioSched: the same element under Click's other name.
pub fn simple_spec() -> ClassSpec {
    ClassSpec::element("SimplePrioSched", "-/1", "l", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
        .metadata_only()
        .replicable_with_queues()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<PrioSched, String> {
    cx.args().complete()?;
    Ok(PrioSched)
}

/// Adds `more` to the packets gathered so far.
#[inline]
pub(crate) fn gather(out: &mut Option<Batch>, mut more: Batch) {
    match out {
        None => *out = Some(more),
        Some(b) => b.append(&mut more),
    }
}

impl Element for PrioSched {
    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let max = max.max(1);
        let mut out: Option<Batch> = None;
        for i in 0..cx.ninputs() {
            let have = out.as_ref().map_or(0, Batch::len);
            if have >= max {
                break;
            }
            if let Some(b) = cx.pull(i, max - have) {
                gather(&mut out, b);
            }
        }
        out.filter(|b| !b.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{fill, pull, sched_router as router};
    use crate::test_kit::reg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn strict_priority_fills_the_burst() {
        for class in ["PrioSched", "SimplePrioSched"] {
            let r = router(3, class);
            fill(&r, 2, 3, 5);
            fill(&r, 1, 2, 2);
            fill(&r, 0, 1, 3);
            assert_eq!(pull(&r, 2), vec![1, 1]);
            assert_eq!(pull(&r, 4), vec![1, 2, 2, 3]);
            fill(&r, 0, 1, 1);
            assert_eq!(pull(&r, 1), vec![1]);
            assert_eq!(pull(&r, 32), vec![3, 3, 3, 3]);
            assert!(r.pull_from("s", 0, 32).unwrap().is_none());
            assert_eq!(r.total_drops(), 0);
        }
    }

    #[test]
    fn no_inputs_and_bad_config() {
        let conf = "s :: PrioSched; s -> u :: Unqueue -> o :: TestSink;";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        assert!(r.pull_from("s", 0, 8).unwrap().is_none());
        let bad = "s :: PrioSched(3); s -> u :: Unqueue -> o :: TestSink;";
        assert_err(
            Router::from_str(bad, &reg(), 1),
            "<config>:1:6: s :: PrioSched: too many arguments ('3')",
        );
    }
}
