//! # PushNull
//!
//! PushNull
//!
//! Passes packets unchanged, in push context only.
//!
//! Ports: 1 input, 1 output. Processing: push.
//!
//! Like Null, but its ports are push: a configuration that would use it in
//! pull context is an error.
//!
//! Example:
//!
//!     FromDevice(eth0) -> PushNull -> Queue;
//!
//! # PullNull
//!
//! PullNull
//!
//! Passes packets unchanged, in pull context only.
//!
//! Ports: 1 input, 1 output. Processing: pull.
//!
//! Like Null, but its ports are pull.
//!
//! Example:
//!
//!     Queue -> PullNull -> ToDevice(eth0);

use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element};

pub struct PushNull;
pub struct PullNull;

pub fn push_spec() -> ClassSpec {
    ClassSpec::element("PushNull", "1/1", "h", |cx: &mut ConfigCx<'_>| {
        cx.args().complete().map(|_| PushNull)
    })
    .stateless()
    .metadata_only()
}

pub fn pull_spec() -> ClassSpec {
    ClassSpec::element("PullNull", "1/1", "l", |cx: &mut ConfigCx<'_>| {
        cx.args().complete().map(|_| PullNull)
    })
    .stateless()
    .metadata_only()
}

impl Element for PushNull {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        cx.push(0, batch)
    }
}

impl Element for PullNull {
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        cx.pull(0, max)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::Router;

    #[test]
    fn push_null_passes_and_rejects_pull() {
        let h = harness("PushNull", 1);
        h.push(0, vec![pkt(&[4])]);
        assert_eq!(tags(&h.output(0)), [4]);
        assert_err(Router::from_str("Idle -> Queue -> PushNull -> Discard;", &reg(), 1), "<config>:1:9: pull output 0 of 'Queue@2' (Queue, <config>:1:9) connected to push input 0 of 'PushNull@3' (PushNull, <config>:1:18)");
    }

    #[test]
    fn pull_null_passes_and_rejects_push() {
        let r =
            Router::from_str("Idle -> q :: Queue -> n :: PullNull -> Idle;", &reg(), 1).unwrap();
        r.push_into("q", 0, vec![pkt(&[6])].into()).unwrap();
        let b = r.pull_from("n", 0, 4).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), [6]);
        assert_err(try_harness("PullNull", 1), "push output 0 of 'TestSource@2' (TestSource, <config>:3:1) connected to pull input 0 of 'e' (PullNull, <config>:1:6); pull output 0 of 'e' (PullNull, <config>:1:6) connected to push input 0 of 'o0' (TestSink, <config>:4:15)");
    }
}
