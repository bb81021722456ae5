//! # StrideSched
//!
//! StrideSched(TICKETS0, ..., TICKETSn-1)
//!
//! Pulls from stride-scheduled inputs.
//!
//! Has one output and n inputs, and performs packet-based stride
//! scheduling, giving input i TICKETSi tickets: over time, busy inputs
//! send packets in proportion to their tickets. Each pull on the output
//! tries the inputs in the order of the stride schedule until one
//! produces a packet; an input that produces nothing is not tried again
//! during that pull. An input with 0 tickets is never pulled. A pull for
//! a burst repeats this for each packet.
//!
//! The inputs usually come from Queues or other pull schedulers.
//!
//! Ports: n inputs (one per TICKETS argument), 1 output. Processing: pull.
//!
//! Arguments:
//! - `TICKETS0` ... (integers >= 0; more than 32768 counts as 32768, as
//!   in Click).
//!
//! Handlers:
//! - `tickets0` ... `ticketsN-1` (read/write): each input's tickets.
//!
//! Example:
//!
//!     a :: Queue; b :: Queue;
//!     a -> [0]s :: StrideSched(3, 1); b -> [1]s;   // 3:1
//!     s -> ToDevice(eth0);

use paraclick_packet::Packet;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, DynHandler, Element, HandlerCx, Kind};
use std::sync::Mutex;

/// The stride of one ticket.
const STRIDE1: u64 = 1 << 32;
/// The most tickets a port may have (Click's limit); more are reduced to
/// this, as Click does.
pub const MAX_TICKETS: u64 = 1 << 15;

/// Stride scheduling state: tickets, strides and passes per client.
#[derive(Clone, Debug)]
pub struct Stride {
    tickets: Vec<u64>,
    pass: Vec<u64>,
}

impl Stride {
    pub fn new(tickets: Vec<u64>) -> Stride {
        let pass = tickets.iter().map(|&t| stride(t)).collect();
        Stride { tickets, pass }
    }

    /// Clients in schedule order (lowest pass first, then lowest index),
    /// leaving out those with no tickets.
    pub fn order(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.tickets.len())
            .filter(|&i| self.tickets[i] > 0)
            .collect();
        v.sort_by_key(|&i| (self.pass[i], i));
        v
    }

    /// Client `i` was served: it moves one stride on.
    pub fn served(&mut self, i: usize) {
        self.pass[i] = self.pass[i].saturating_add(stride(self.tickets[i]));
        // Keep passes small: rebase when they grow large.
        if self.pass[i] > u64::MAX / 4 {
            let low = self.pass.iter().copied().min().unwrap_or(0);
            for p in &mut self.pass {
                *p -= low;
            }
        }
    }

    /// The next client in schedule order, served.
    pub fn pick(&mut self) -> Option<usize> {
        let i = *self.order().first()?;
        self.served(i);
        Some(i)
    }

    pub fn tickets(&self, i: usize) -> u64 {
        self.tickets[i]
    }

    /// New tickets for client `i`; it starts one new stride after the
    /// current lowest pass, so it neither starves nor floods the others.
    pub fn set_tickets(&mut self, i: usize, t: u64) {
        let low = (0..self.tickets.len())
            .filter(|&j| self.tickets[j] > 0 && j != i)
            .map(|j| self.pass[j])
            .min()
            .unwrap_or(0);
        self.tickets[i] = t;
        self.pass[i] = low.saturating_add(stride(t));
    }

    pub fn len(&self) -> usize {
        self.tickets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tickets.is_empty()
    }
}

fn stride(t: u64) -> u64 {
    STRIDE1.checked_div(t).unwrap_or(u64::MAX / 4)
}

/// Parses the TICKETS arguments (one per port).
pub(crate) fn parse_tickets(
    cx: &mut ConfigCx<'_>,
    nports: usize,
    what: &str,
) -> Result<Vec<u64>, String> {
    let mut a = cx.args();
    let raw = a.rest();
    a.complete()?;
    if raw.len() != nports {
        return Err(format!(
            "expected {nports} TICKETS arguments, one per {what}, not {}",
            raw.len()
        ));
    }
    raw.iter().map(|r| parse_one(r)).collect()
}

fn parse_one(r: &str) -> Result<u64, String> {
    match r.trim().parse::<u64>() {
        Ok(t) => Ok(t.min(MAX_TICKETS)),
        _ => Err(format!("TICKETS must be a nonnegative integer, not '{r}'")),
    }
}

/// `tickets0`... handlers for StrideSched and StrideSwitch.
pub(crate) fn ticket_handlers(n: usize) -> Vec<DynHandler> {
    (0..n)
        .map(|i| DynHandler {
            name: format!("tickets{i}"),
            read: true,
            write: true,
            param: false,
        })
        .collect()
}

fn ticket_port(name: &str, n: usize) -> Option<usize> {
    name.strip_prefix("tickets")?
        .parse::<usize>()
        .ok()
        .filter(|&i| i < n)
}

pub(crate) fn read_tickets(s: &Mutex<Stride>, name: &str) -> Option<Result<String, String>> {
    let g = s.lock().unwrap_or_else(|e| e.into_inner());
    let i = ticket_port(name, g.len())?;
    Some(Ok(g.tickets(i).to_string()))
}

pub(crate) fn write_tickets(s: &Mutex<Stride>, name: &str, v: &str) -> Option<Result<(), String>> {
    let mut g = s.lock().unwrap_or_else(|e| e.into_inner());
    let i = ticket_port(name, g.len())?;
    Some(parse_one(v).map(|t| g.set_tickets(i, t)))
}

pub struct StrideSched {
    stride: Mutex<Stride>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("StrideSched", "1-/1", "l", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
        .metadata_only()
        .replicable_with_queues()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<StrideSched, String> {
    let n = cx.ninputs;
    let tickets = parse_tickets(cx, n, "input")?;
    Ok(StrideSched {
        stride: Mutex::new(Stride::new(tickets)),
    })
}

impl Element for StrideSched {
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let mut st = self.stride.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Packet> = Vec::new();
        'packets: while out.len() < max.max(1) {
            for i in st.order() {
                if let Some(p) = cx.pull(i, 1).and_then(|b| b.into_iter().next()) {
                    st.served(i);
                    out.push(p);
                    continue 'packets;
                }
            }
            break;
        }
        (!out.is_empty()).then(|| Batch::from(out))
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
    use super::super::test_util::{bad, conf};
    use super::*;
    use crate::test_kit::{fill, tagged, tags};
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn schedule_is_proportional_to_tickets() {
        let mut s = Stride::new(vec![3, 1, 0]);
        let mut n = [0; 3];
        for _ in 0..400 {
            n[s.pick().unwrap()] += 1;
        }
        assert_eq!(n, [300, 100, 0]);
        // The order interleaves: 0 0 0 1 repeating (ties to the lower
        // index).
        let mut s = Stride::new(vec![3, 1]);
        let seq: Vec<usize> = (0..8).map(|_| s.pick().unwrap()).collect();
        assert_eq!(seq, vec![0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn pulls_follow_tickets_and_skip_empty_inputs() {
        let r = conf(
            "s :: StrideSched(2, 1); s -> Unqueue(ACTIVE false) -> TestSink;
             Idle -> q0 :: Queue(100) -> [0]s; Idle -> q1 :: Queue(100) -> [1]s;",
        );
        fill(&r, "q0", (0..10).map(|_| tagged(0, 60)).collect());
        fill(&r, "q1", (0..10).map(|_| tagged(1, 60)).collect());
        let b = r.pull_from("s", 0, 9).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), vec![0, 0, 1, 0, 0, 1, 0, 0, 1]);
        let b = r.pull_from("s", 0, 100).unwrap().unwrap();
        assert_eq!(tags(b.as_slice()), vec![0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1]);
        assert_eq!(r.read_handler("s.tickets0").unwrap(), "2");
        r.write_handler("s.tickets1", "5").unwrap();
        assert_eq!(r.read_handler("s.tickets1").unwrap(), "5");
        r.write_handler("s.tickets1", "100000").unwrap();
        assert_eq!(r.read_handler("s.tickets1").unwrap(), "32768");
        assert_err(
            r.write_handler("s.tickets1", "-1"),
            "s.tickets1: TICKETS must be a nonnegative integer, not '-1'",
        );
        assert_err(r.read_handler("s.tickets2"), "no read handler 's.tickets2'");
        assert!(bad(
            "s :: StrideSched(1); Idle -> Queue -> [0]s; Idle -> Queue -> [1]s; s -> Discard;"
        ));
        assert!(bad("s :: StrideSched(x); Idle -> Queue -> s -> Discard;"));
    }
}
