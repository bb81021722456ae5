//! # CPUSwitch
//!
//! CPUSwitch
//!
//! Classifies packets by the thread that handles them.
//!
//! Ports: 1 input, 1 or more outputs. Processing: push.
//!
//! Sends each packet to output T mod N, where T is the number of the
//! worker thread running the push (0 to `-j` minus 1) and N the number of
//! outputs. (Click numbers by CPU; paraclick's worker thread T runs on
//! CPU T when threads are pinned, the default.)
//!
//! Handlers: none.
//!
//! Example:
//!
//!     FromDevice(eth0) -> s :: CPUSwitch;
//!     s[0] -> q0 :: Queue; s[1] -> q1 :: Queue;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct CPUSwitch {
    noutputs: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("CPUSwitch", "1/1-", "h", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CPUSwitch, String> {
    cx.args().complete()?;
    Ok(CPUSwitch {
        noutputs: cx.noutputs.max(1),
    })
}

impl Action for CPUSwitch {
    #[inline]
    fn action(&self, cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
        Verdict::Out(cx.thread() % self.noutputs)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::BuildOptions;

    #[test]
    fn output_is_the_thread_number_modulo_outputs() {
        let opts = BuildOptions {
            threads: 3,
            pin: false,
            ..BuildOptions::default()
        };
        let r = build_with(
            &reg(),
            "a :: InfiniteSource(LIMIT 10, STOP false) -> s :: CPUSwitch;
             b :: InfiniteSource(LIMIT 20, STOP false) -> s;
             c :: InfiniteSource(LIMIT 40, STOP false) -> s;
             s[0] -> c0 :: Counter -> Discard; s[1] -> c1 :: Counter -> Discard;
             StaticThreadSched(a 0, b 1, c 2);",
            &opts,
        );
        run_until(&r, |r| {
            handler(r, "c0.count") == "50" && handler(r, "c1.count") == "20"
        });
        assert_eq!(handler(&r, "c0.count"), "50", "threads 0 and 2");
        assert_eq!(handler(&r, "c1.count"), "20", "thread 1");
    }

    #[test]
    fn one_thread_uses_output_0() {
        let h = harness("CPUSwitch", 2);
        h.push(0, pkts(4, 60));
        assert_eq!(h.output(0).len(), 4);
        assert!(h.output(1).is_empty());
    }
}
