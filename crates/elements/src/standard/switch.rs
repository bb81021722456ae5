//! # Switch
//!
//! Switch(\[OUTPUT])
//!
//! Sends the packet stream to a settable output.
//!
//! Ports: 1 input, any number of outputs. Processing: push.
//!
//! Sends every packet out output OUTPUT (default 0). A negative OUTPUT
//! drops every packet (counted), as does an OUTPUT with no connected port.
//! The `switch` handler changes OUTPUT at run time.
//!
//! Arguments:
//! - `OUTPUT` (integer, default 0).
//!
//! Handlers:
//! - `switch` (read/write): the OUTPUT parameter.
//!
//! LLRPCs (over a control socket, `LLRPC s#CMD [4]`): GET_SWITCH
//! (`4004C005`) answers OUTPUT as 4 bytes, a native-endian integer;
//! SET_SWITCH (`80044006`) sets it from 4 such bytes and answers none.
//!
//! Example:
//!
//!     s :: Switch(0); s[0] -> ToDevice(eth0); s[1] -> Discard;
//!     // paraclick -h 's.switch' ... ; write s.switch 1 to divert

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};
use std::sync::atomic::{AtomicI32, Ordering};

pub struct Switch {
    output: AtomicI32,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["switched off"];

/// Click's LLRPC numbers for Switch (as its ControlSocket-llrpc-01 test
/// sends them): read the output, set it.
const GET_SWITCH: u32 = 0x4004_C005;
const SET_SWITCH: u32 = 0x8004_4006;

pub fn spec() -> ClassSpec {
    ClassSpec::element("Switch", "1/-", "h", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Switch, String> {
    let mut a = cx.args();
    let k = a.read_p::<i32>("OUTPUT").unwrap_or(0);
    a.complete()?;
    Ok(Switch {
        output: AtomicI32::new(k),
    })
}

impl Element for Switch {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "switch",
        |e, _| e.output.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.output.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn llrpc(&self, cmd: u32, data: &[u8]) -> Option<Result<Vec<u8>, String>> {
        Some(match cmd {
            GET_SWITCH => Ok(self.output.load(Ordering::Relaxed).to_ne_bytes().to_vec()),
            SET_SWITCH => match <[u8; 4]>::try_from(data) {
                Ok(b) => {
                    self.output.store(i32::from_ne_bytes(b), Ordering::Relaxed);
                    Ok(Vec::new())
                }
                Err(_) => Err(format!(
                    "SET_SWITCH: expected 4 bytes (an integer), not {}",
                    data.len()
                )),
            },
            _ => return None,
        })
    }

    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        match usize::try_from(self.output.load(Ordering::Relaxed)) {
            Ok(k) => cx.push(k, batch),
            Err(_) => cx.drop_batch_for(0, batch),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn default_and_handler() {
        let h = harness("Switch", 2);
        assert_eq!(h.read("switch").unwrap(), "0");
        h.push(0, vec![pkt(&[1])]);
        h.write("switch", "1").unwrap();
        h.push(0, vec![pkt(&[2])]);
        h.write("switch", "-1").unwrap();
        assert_eq!(h.read("switch").unwrap(), "-1");
        h.push(0, vec![pkt(&[3])]);
        assert_eq!(tags(&h.output(0)), vec![1]);
        assert_eq!(tags(&h.output(1)), vec![2]);
        assert_eq!(h.drops(), 1);
        assert_err(h.write("switch", "one"), "e.switch: expected integer");
        assert_eq!(h.read("switch").unwrap(), "-1");
    }

    #[test]
    fn configured_output() {
        let h = harness("Switch(1)", 2);
        h.push(0, vec![pkt(&[1])]);
        assert_eq!(tags(&h.output(1)), vec![1]);
        assert_err(
            try_harness("Switch(x)", 1),
            "e :: Switch: OUTPUT: expected integer",
        );
    }
}
