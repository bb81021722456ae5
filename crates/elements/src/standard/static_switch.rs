//! # StaticSwitch
//!
//! StaticSwitch(OUTPUT)
//!
//! Sends the packet stream to a fixed output.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Sends every packet out output OUTPUT. A negative OUTPUT drops every
//! packet (counted), as does an OUTPUT with no connected port. Unlike
//! Switch, the output cannot change at run time.
//!
//! Arguments:
//! - `OUTPUT` (integer, mandatory).
//!
//! Example:
//!
//!     ... -> StaticSwitch(1) => (Discard; ToDevice(eth0));

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element};

pub struct StaticSwitch {
    output: Option<usize>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["switched off"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("StaticSwitch", "1/-", "h", make)
        .dead_code(paraclick_runtime::DeadCode::StaticSwitch)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StaticSwitch, String> {
    let mut a = cx.args();
    let k = a.read_mp::<i32>("OUTPUT");
    a.complete()?;
    Ok(StaticSwitch {
        output: usize::try_from(k).ok(),
    })
}

impl Element for StaticSwitch {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        match self.output {
            Some(k) => cx.push(k, batch),
            None => cx.drop_batch_for(0, batch),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn fixed_output() {
        let h = harness("StaticSwitch(1)", 2);
        h.push(0, vec![pkt(&[1]), pkt(&[2])]);
        assert!(h.output(0).is_empty());
        assert_eq!(tags(&h.output(1)), vec![1, 2]);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn negative_drops() {
        let h = harness("StaticSwitch(-1)", 1);
        h.push(0, vec![pkt(&[1]), pkt(&[2])]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.drops(), 2);
    }

    #[test]
    fn missing_output_drops() {
        let h = harness("StaticSwitch(5)", 1);
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(h.drops(), 1);
        assert_err(
            try_harness("StaticSwitch", 1),
            "e :: StaticSwitch: missing mandatory OUTPUT argument",
        );
    }
}
