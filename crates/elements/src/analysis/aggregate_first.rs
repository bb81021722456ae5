//! # AggregateFirst
//!
//! AggregateFirst([keywords NOTIFIER])
//!
//! Lets through the first packet of each aggregate annotation.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Forwards only the first packet with a given aggregate annotation value
//! on output 0. Later packets with that aggregate go to output 1, or are
//! dropped (reason `seen aggregate`) if it is not connected.
//!
//! The aggregates seen are kept in a bitmap of 8 KiB pages, one page per
//! 65536 aggregates that occur, so the memory used grows with the spread
//! of the aggregates (512 MiB at most, for every 32-bit value).
//!
//! Keywords:
//! - `NOTIFIER` (element name): in Click, an AggregateNotifier (like
//!   AggregateIPFlows) whose deleted aggregates are forgotten, to save
//!   memory. paraclick's aggregate numberers never reuse an aggregate
//!   number, so forgetting changes nothing a packet sees: the element must
//!   exist, and nothing is pruned.
//!
//! Handlers:
//! - `clear` (write): forget every aggregate; the next packet of each is
//!   a first one again (a paraclick addition).
//!
//! AggregateLast forwards the last packet of each aggregate instead, with
//! the aggregate's packet and byte counts.
//!
//! Example:
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true)
//!         -> AggregateIPFlows -> AggregateFirst -> ToIPSummaryDump(firsts.txt, CONTENTS timestamp ip_src ip_dst);

use super::aggregate;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, Verdict};
use std::collections::HashMap;
use std::sync::Mutex;

/// Why AggregateFirst drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["seen aggregate"];
const SEEN: u8 = 0;

/// Bits per page: the low 16 bits of an aggregate index into its page.
const PAGE_WORDS: usize = 1 << 10;

/// A set of 32-bit values as bitmap pages, allocated as values occur.
#[derive(Default)]
pub(crate) struct AggSet {
    pages: HashMap<u16, Box<[u64; PAGE_WORDS]>>,
}

impl AggSet {
    /// Adds `v`; returns whether it was new.
    pub(crate) fn insert(&mut self, v: u32) -> bool {
        let page = self
            .pages
            .entry((v >> 16) as u16)
            .or_insert_with(|| Box::new([0; PAGE_WORDS]));
        let (w, b) = ((v & 0xffff) as usize >> 6, v & 63);
        let new = page[w] & (1 << b) == 0;
        page[w] |= 1 << b;
        new
    }

    pub(crate) fn clear(&mut self) {
        self.pages.clear();
    }
}

pub struct AggregateFirst {
    seen: Mutex<AggSet>,
    notifier: Option<String>,
    second: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregateFirst", "1/1-2", "a/ah", make)
        .shared("one table of aggregates seen, for all flows")
        .metadata_only()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateFirst, String> {
    let mut a = cx.args();
    let notifier = a.read::<String>("NOTIFIER");
    a.complete()?;
    Ok(AggregateFirst {
        seen: Mutex::new(AggSet::default()),
        notifier,
        second: cx.noutputs > 1,
    })
}

impl Action for AggregateFirst {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::write("clear", |e, _, _| {
        e.seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    })];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if let Some(n) = &self.notifier {
            if ix.find(n).is_none() {
                return Err(format!("NOTIFIER: no element named '{n}'"));
            }
        }
        Ok(())
    }

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let first = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(aggregate(p));
        match (first, self.second) {
            (true, _) => Verdict::Out(0),
            (false, true) => Verdict::Out(1),
            (false, false) => Verdict::DropFor(SEEN),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{aggregate, set_aggregate};
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn agg(v: u32) -> Packet {
        let mut p = pkt(&[0; 20]);
        set_aggregate(&mut p, v);
        p
    }

    fn aggs(ps: &[Packet]) -> Vec<u32> {
        ps.iter().map(aggregate).collect()
    }

    #[test]
    fn first_packet_per_aggregate() {
        let h = harness("AggregateFirst", 2);
        h.push(
            0,
            [1, 2, 1, 65537, 1, 2, 3, u32::MAX, u32::MAX]
                .map(agg)
                .into(),
        );
        assert_eq!(aggs(&h.output(0)), [1, 2, 65537, 3, u32::MAX]);
        assert_eq!(aggs(&h.output(1)), [1, 1, 2, u32::MAX]);
        h.write("clear", "").unwrap();
        h.push(0, vec![agg(2)]);
        assert_eq!(aggs(&h.output(0)), [2]);
    }

    #[test]
    fn later_packets_dropped_without_output_1() {
        let h = harness(
            "AggregateFirst(NOTIFIER n); Idle -> n :: AggregateIPFlows -> Discard",
            1,
        );
        h.push(0, [7, 7, 7].map(agg).into());
        assert_eq!(aggs(&h.output(0)), [7]);
        assert_eq!(h.read("drop_reasons").unwrap(), "seen aggregate 2\n");
        assert_err(
            try_harness("AggregateFirst(NOTIFIER nobody)", 1),
            "NOTIFIER: no element named 'nobody'",
        );
    }
}
