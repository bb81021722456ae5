//! # InputSwitch
//!
//! InputSwitch(\[INPUT])
//!
//! Accepts a packet stream from a settable input.
//!
//! Forwards packets arriving on input INPUT to its output and drops
//! (counted) packets arriving on every other input. The default INPUT is
//! 0; a negative INPUT drops every packet. The `switch` handler changes
//! INPUT. Any number of inputs.
//!
//! Ports: any number of inputs, 1 output. Processing: push.
//!
//! Arguments:
//! - `INPUT` (integer, default 0).
//!
//! Handlers:
//! - `switch` (read/write): the INPUT.
//!
//! Example:
//!
//!     a -> [0]is :: InputSwitch; b -> [1]is; is -> Queue -> ...

use super::pull_switch::clamp_port;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};
use std::sync::atomic::{AtomicI64, Ordering};

pub struct InputSwitch {
    input: AtomicI64,
    ninputs: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["input not selected"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("InputSwitch", "-/1", "h", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<InputSwitch, String> {
    let mut a = cx.args();
    let k = a.read_p::<i64>("INPUT").unwrap_or(0);
    a.complete()?;
    Ok(InputSwitch {
        input: AtomicI64::new(clamp_port(k, cx.ninputs)),
        ninputs: cx.ninputs,
    })
}

impl Element for InputSwitch {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "switch",
        |e, _| e.input.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            let k = hx.arg::<i64>(v)?;
            e.input.store(clamp_port(k, e.ninputs), Ordering::Relaxed);
            Ok(())
        },
    )];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        if self.input.load(Ordering::Relaxed) == port as i64 {
            cx.push(0, batch);
        } else {
            cx.drop_batch_for(0, batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::conf;
    use crate::test_kit::{tagged, tags};
    use paraclick_packet::Batch;
    use paraclick_runtime::testing::TestSink;

    #[test]
    fn only_the_chosen_input_passes() {
        let r = conf("s :: InputSwitch; Idle -> [0]s; Idle -> [1]s; s -> o :: TestSink;");
        let send = |port: usize, tag: u8| {
            r.push_into("s", port, Batch::from(vec![tagged(tag, 60)]))
                .unwrap()
        };
        send(0, 0);
        send(1, 1);
        assert_eq!(tags(&r.element::<TestSink>("o").unwrap().take()), vec![0]);
        assert_eq!(r.total_drops(), 1);
        r.write_handler("s.switch", "1").unwrap();
        send(0, 0);
        send(1, 1);
        assert_eq!(tags(&r.element::<TestSink>("o").unwrap().take()), vec![1]);
        r.write_handler("s.switch", "-1").unwrap();
        send(1, 1);
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 0);
        assert_eq!(r.total_drops(), 3);
        assert_eq!(r.read_handler("s.switch").unwrap(), "-1");
    }
}
