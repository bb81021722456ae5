//! # AggregatePacketCounter
//!
//! AggregatePacketCounter([keywords ANNO])
//!
//! Counts packets per packet number and aggregate annotation.
//!
//! Ports: 1 or more inputs, as many outputs. Processing: agnostic.
//!
//! Keeps, for each aggregate annotation value and each input, which
//! packet numbers arrived (and how often). Packets arriving on input N
//! leave on output N unchanged. FromCapDump sets the aggregate and packet
//! number annotations; AggregateIP and AggregateIPFlows set aggregates.
//! With two inputs (a sender's trace on input 0, a receiver's on input 1)
//! the `undelivered` handler lists the packets that were sent but never
//! received.
//!
//! Keywords:
//! - `ANNO` (annotation, default `PACKET_NUMBER`): the 4-byte annotation
//!   holding the packet number: `PACKET_NUMBER` (packet number 0, which
//!   FromCapDump sets to the unique packet number), `PACKET_NUMBER1` (its
//!   second, the sequence number), `SEQUENCE_NUMBER` (the low 32 bits of
//!   the sequence number annotation), `AGGREGATE`, `EXTRA_PACKETS`,
//!   `EXTRA_LENGTH`, a name an AnnotationInfo element defined with size 4,
//!   an offset 0 to 20 into the user annotation area, or `NONE` (every
//!   packet has number 0).
//!
//! Handlers:
//! - `count` (read): packets seen, on all inputs.
//! - `received AGG` (read with a parameter): the packet numbers of
//!   aggregate AGG received on any input, one a line, in increasing order.
//! - `undelivered AGG` (read with a parameter): the packet numbers of
//!   aggregate AGG received on input 0 but never on input 1, one a line.
//!   Only with two or more inputs.
//! - `clear` (write): forget every count.
//!
//! Aggregates are in host byte order: the aggregate for IP address
//! 128.0.0.0 is 2147483648.
//!
//! Example: the packet numbers of a transfer's lost data packets (CheckPaint
//! keeps the data packets, which FromCapDump paints 0).
//!
//!     sender :: FromCapDump(0.s, STOP true, AGGREGATE 1);
//!     receiver :: FromCapDump(0.r, STOP true, AGGREGATE 1);
//!     counter :: AggregatePacketCounter;
//!     sender -> CheckPaint(0) -> [0] counter [0] -> Discard;
//!     receiver -> CheckPaint(0) -> [1] counter [1] -> Discard;
//!     DriverManager(wait_pause, wait_pause, save counter.undelivered1 lost.txt);

use super::{aggregate, Anno4};
use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Per input: packet number -> how many times it arrived.
type Counts = Vec<BTreeMap<u32, u64>>;

pub struct AggregatePacketCounter {
    anno: Anno4,
    ninputs: usize,
    st: Mutex<(u64, HashMap<u32, Counts>)>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("AggregatePacketCounter", "1-/1-", "a", make)
        .shared("one table of packet numbers per aggregate, for all flows")
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregatePacketCounter, String> {
    let mut a = cx.args();
    let anno = a.read::<Anno4>("ANNO").unwrap_or(Anno4::PacketNumber(0));
    a.complete()?;
    if cx.ninputs != cx.noutputs {
        return Err(format!(
            "needs as many outputs as inputs ({} inputs, {} outputs)",
            cx.ninputs, cx.noutputs
        ));
    }
    Ok(AggregatePacketCounter {
        anno,
        ninputs: cx.ninputs.max(1),
        st: Mutex::new((0, HashMap::new())),
    })
}

impl AggregatePacketCounter {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, HashMap<u32, Counts>)> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn count(&self, port: usize, b: &Batch) {
        let mut st = self.lock();
        let (total, table) = &mut *st;
        for p in b.iter() {
            *total += 1;
            let per = table
                .entry(aggregate(p))
                .or_insert_with(|| vec![BTreeMap::new(); self.ninputs]);
            if let Some(c) = per.get_mut(port) {
                *c.entry(self.anno.get(p)).or_insert(0) += 1;
            }
        }
    }

    /// The packet numbers of `agg` that `pick` keeps, one a line.
    fn list(
        &self,
        param: Option<&str>,
        hx: &HandlerCx<'_>,
        pick: impl Fn(&Counts, u32) -> bool,
    ) -> Result<String, String> {
        let agg: u32 = hx.arg(param.ok_or("expected an aggregate")?.trim())?;
        let st = self.lock();
        let Some(per) = st.1.get(&agg) else {
            return Ok(String::new());
        };
        let mut nums: Vec<u32> = per.iter().flat_map(|c| c.keys().copied()).collect();
        nums.sort_unstable();
        nums.dedup();
        Ok(nums
            .into_iter()
            .filter(|&n| pick(per, n))
            .map(|n| format!("{n}\n"))
            .collect())
    }
}

impl Element for AggregatePacketCounter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.lock().0.to_string()),
        Handler::read_param("received", |e, param, hx| e.list(param, hx, |_, _| true)),
        Handler::read_param("undelivered", |e, param, hx| {
            if e.ninputs < 2 {
                return Err("undelivered needs two inputs".into());
            }
            e.list(param, hx, |per, n| {
                per[0].contains_key(&n) && !per[1].contains_key(&n)
            })
        }),
        Handler::write("clear", |e, _, _| {
            *e.lock() = (0, HashMap::new());
            Ok(())
        }),
    ];

    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        self.count(port, &batch);
        cx.push(port, batch);
    }

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        let b = cx.pull(port, max)?;
        self.count(port, &b);
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{set_aggregate, set_packet_number};
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn numbered(agg: u32, n: u32) -> Packet {
        let mut p = pkt(&[0; 40]);
        set_aggregate(&mut p, agg);
        set_packet_number(&mut p, 0, n);
        p.anno_mut().seq = u64::from(n) + 100;
        p
    }

    #[test]
    fn received_and_undelivered_per_aggregate() {
        let h = harness_io("AggregatePacketCounter", 2, 2);
        h.push(0, [1, 2, 3, 4].map(|n| numbered(1, n)).into());
        h.push(0, vec![numbered(2, 9)]);
        h.push(1, [2, 4, 4].map(|n| numbered(1, n)).into());
        h.push(1, vec![numbered(1, 7)]);
        assert_eq!(h.output(0).len(), 5);
        assert_eq!(h.output(1).len(), 4);
        assert_eq!(h.read("count").unwrap(), "9");
        assert_eq!(h.read("received 1").unwrap(), "1\n2\n3\n4\n7\n");
        assert_eq!(h.read("undelivered 1").unwrap(), "1\n3\n");
        assert_eq!(h.read("undelivered 2").unwrap(), "9\n");
        assert_eq!(h.read("received 3").unwrap(), "");
        assert_err(h.read("received x"), "x");
        h.write("clear", "").unwrap();
        assert_eq!(h.read("count").unwrap(), "0");
        assert_eq!(h.read("received 1").unwrap(), "");
    }

    #[test]
    fn anno_picks_the_number() {
        let h = harness("AggregatePacketCounter(ANNO SEQUENCE_NUMBER)", 1);
        h.push(0, vec![numbered(5, 1), numbered(5, 2)]);
        assert_eq!(h.read("received 5").unwrap(), "101\n102\n");
        assert_err(h.read("undelivered 5"), "undelivered needs two inputs");
        let h = harness("AggregatePacketCounter(ANNO NONE)", 1);
        h.push(0, vec![numbered(5, 1), numbered(5, 2)]);
        assert_eq!(h.read("received 5").unwrap(), "0\n");
        assert_err(
            try_harness("AggregatePacketCounter(ANNO PAINT)", 1),
            "four-byte annotation",
        );
        assert_err(
            try_harness_io("AggregatePacketCounter", 2, 1),
            "needs as many outputs as inputs",
        );
    }
}
