//! # StrideSwitch
//!
//! StrideSwitch(TICKETS0, ..., TICKETSn-1)
//!
//! Sends packets to stride-scheduled outputs.
//!
//! Has one input and n outputs, and performs packet-based stride
//! switching, giving output i TICKETSi tickets: each packet goes to the
//! next output in the stride schedule, so outputs receive packets in
//! proportion to their tickets. An output with 0 tickets receives none.
//!
//! Ports: 1 input, n outputs (one per TICKETS argument). Processing: push.
//!
//! Arguments:
//! - `TICKETS0` ... (integers >= 0; more than 32768 counts as 32768).
//!
//! Handlers:
//! - `tickets0` ... `ticketsN-1` (read/write): each output's tickets.
//!
//! Example:
//!
//!     ... -> s :: StrideSwitch(2, 1);   // two packets to output 0 per one to 1
//!     s[0] -> ...; s[1] -> ...;

use super::stride_sched::{parse_tickets, read_tickets, ticket_handlers, write_tickets, Stride};
use paraclick_runtime::{
    push_verdicts, Batch, ClassSpec, ConfigCx, Cx, DynHandler, Element, HandlerCx, Verdict,
};
use std::cell::Cell;
use std::sync::Mutex;

pub struct StrideSwitch {
    stride: Mutex<Stride>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no output"];

pub fn spec() -> ClassSpec {
    ClassSpec::element("StrideSwitch", "1/1-", "h", make)
        .drop_reasons(DROP_REASONS)
        .shared("a rate or schedule shared by all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StrideSwitch, String> {
    let n = cx.noutputs;
    let tickets = parse_tickets(cx, n, "output")?;
    Ok(StrideSwitch {
        stride: Mutex::new(Stride::new(tickets)),
    })
}

impl Element for StrideSwitch {
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        // Choose every packet's output first: no lock held while pushing.
        let ports: Vec<Option<usize>> = {
            let mut st = self.stride.lock().unwrap_or_else(|e| e.into_inner());
            (0..batch.len()).map(|_| st.pick()).collect()
        };
        let k = Cell::new(0);
        push_verdicts(cx, batch, |_, _| {
            let i = k.get();
            k.set(i + 1);
            match ports.get(i).copied().flatten() {
                Some(port) => Verdict::Out(port),
                None => Verdict::DropFor(0),
            }
        });
    }

    fn dynamic_handlers(&self) -> Vec<DynHandler> {
        ticket_handlers(self.stride.lock().map(|s| s.len()).unwrap_or(0))
    }

    fn read_dynamic(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<Result<String, String>> {
        read_tickets(&self.stride, name)
    }

    fn write_dynamic(
        &self,
        name: &str,
        value: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        write_tickets(&self.stride, name, value)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{pkts, reg};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::Harness;

    #[test]
    fn outputs_get_packets_in_proportion() {
        let h = Harness::new(&reg(), "StrideSwitch(2, 1, 0)", 3).unwrap();
        h.push(0, pkts(30, 60));
        assert_eq!(h.output(0).len(), 20);
        assert_eq!(h.output(1).len(), 10);
        assert_eq!(h.output(2).len(), 0);
        h.write("tickets2", "1").unwrap();
        h.push(0, pkts(40, 60));
        let n: Vec<usize> = (0..3).map(|i| h.output(i).len()).collect();
        assert_eq!(n.iter().sum::<usize>(), 40);
        assert!(
            (n[0] as i64 - 20).abs() <= 1 && (n[2] as i64 - 10).abs() <= 1,
            "{n:?}"
        );
        // Every output with no tickets: packets are dropped, counted.
        let h = Harness::new(&reg(), "StrideSwitch(0)", 1).unwrap();
        h.push(0, pkts(3, 60));
        assert_eq!(h.drops(), 3);
        assert_err(
            Harness::new(&reg(), "StrideSwitch(1)", 2),
            "e :: StrideSwitch: expected 2 TICKETS arguments, one per output, not 1",
        );
    }
}
