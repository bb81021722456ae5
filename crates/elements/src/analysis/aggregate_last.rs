//! # AggregateLast
//!
//! AggregateLast([keywords NOTIFIER, STOP_AFTER_CLEAR])
//!
//! Lets through the last packet of each aggregate annotation.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: push.
//!
//! Keeps the latest packet of each aggregate annotation value it sees.
//! The packet it replaces goes to output 1, or is dropped (reason
//! `superseded`) if output 1 is not connected. The kept packets leave on
//! output 0 when the `clear` handler is written, in increasing order of
//! aggregate, each annotated with the volume of its whole aggregate: the
//! extra packets annotation is the aggregate's packet count minus one,
//! the extra length annotation its byte count minus the packet's length,
//! and the first timestamp annotation the timestamp of its first packet.
//! (Packets that already stand for several, with extra packets or extra
//! length annotations, count as that many packets and bytes.)
//!
//! Keywords:
//! - `STOP_AFTER_CLEAR` (boolean, default false): stop the router once the
//!   packets `clear` released have left.
//! - `NOTIFIER`: Click's AggregateNotifier, which would release an
//!   aggregate's packet when the aggregate ends, is not supported; giving
//!   it is an error.
//!
//! Handlers:
//! - `clear` (write): emit every kept packet and forget every aggregate.
//! - `naggregates` (read): aggregates kept now (a paraclick addition).
//!
//! AggregateFirst forwards each aggregate's first packet instead, keeping
//! no packets.
//!
//! Example: one summary line per flow, with its packet count.
//!
//!     FromDump(trace.pcap, STOP true, FORCE_IP true)
//!         -> AggregateIPFlows -> al :: AggregateLast
//!         -> ToIPSummaryDump(flows.txt, CONTENTS first_timestamp timestamp ip_src ip_dst count);
//!     DriverManager(wait_pause, write al.clear);

use super::aggregate;
use crate::standard::set_timestamp::set_first_timestamp;
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// Why AggregateLast drops a packet, in `drop_reasons` order.
const REASONS: &[&str] = &["superseded"];
const SUPERSEDED: u8 = 0;

/// The packets `clear` releases leave in batches of at most this many.
const EMIT_BURST: usize = 256;

struct Kept {
    last: Packet,
    packets: u64,
    bytes: u64,
    first: Timestamp,
}

#[derive(Default)]
struct State {
    kept: BTreeMap<u32, Kept>,
    /// Released by `clear`, leaving at the next timer run.
    out: Vec<Packet>,
}

pub struct AggregateLast {
    st: Mutex<State>,
    stop_after_clear: bool,
    second: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("AggregateLast", "1/1-2", "h", make)
        .shared("one table of aggregates, holding a packet each, for all flows")
        .metadata_only()
        .drop_reasons(REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateLast, String> {
    let mut a = cx.args();
    let notifier = a.read::<String>("NOTIFIER");
    let stop_after_clear = a.read::<bool>("STOP_AFTER_CLEAR").unwrap_or(false);
    a.complete()?;
    if notifier.is_some() {
        return Err("NOTIFIER is not supported".into());
    }
    Ok(AggregateLast {
        st: Mutex::new(State::default()),
        stop_after_clear,
        second: cx.noutputs > 1,
    })
}

impl AggregateLast {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Stamps the aggregate's volume on its last packet.
fn annotate(k: Kept) -> Packet {
    let mut p = k.last;
    let len = p.len() as u64;
    set_first_timestamp(&mut p, k.first);
    let a = p.anno_mut();
    a.extra_packets = u32::try_from(k.packets.saturating_sub(1)).unwrap_or(u32::MAX);
    a.extra_length = u32::try_from(k.bytes.saturating_sub(len)).unwrap_or(u32::MAX);
    p
}

impl Element for AggregateLast {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::write("clear", |e, _, hx| {
            let mut st = e.lock();
            let kept = std::mem::take(&mut st.kept);
            st.out.extend(kept.into_values().map(annotate));
            drop(st);
            hx.schedule_after(0, Duration::ZERO);
            Ok(())
        }),
        Handler::read("naggregates", |e, _| e.lock().kept.len().to_string()),
    ];

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        let mut old = Vec::new();
        {
            let mut st = self.lock();
            for p in batch {
                let a = p.anno();
                let n = 1 + u64::from(a.extra_packets);
                let b = p.len() as u64 + u64::from(a.extra_length);
                let ts = p.timestamp();
                match st.kept.entry(aggregate(&p)) {
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(Kept {
                            last: p,
                            packets: n,
                            bytes: b,
                            first: ts,
                        });
                    }
                    std::collections::btree_map::Entry::Occupied(mut o) => {
                        let k = o.get_mut();
                        k.packets += n;
                        k.bytes += b;
                        old.push(std::mem::replace(&mut k.last, p));
                    }
                }
            }
        }
        if old.is_empty() {
            return;
        }
        let old = Batch::from(old);
        if self.second {
            cx.push(1, old);
        } else {
            cx.drop_batch_for(SUPERSEDED, old);
        }
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let out = std::mem::take(&mut self.lock().out);
        let mut it = out.into_iter().peekable();
        while it.peek().is_some() {
            let b: Batch = it.by_ref().take(EMIT_BURST).collect::<Vec<_>>().into();
            cx.push(0, b);
        }
        if self.stop_after_clear {
            cx.request_stop();
        }
    }

    fn queued(&self) -> usize {
        let st = self.lock();
        st.kept.len() + st.out.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{aggregate, set_aggregate};
    use crate::standard::set_timestamp::first_timestamp;
    use crate::test_kit::*;
    use paraclick_packet::{Batch, Packet, Timestamp};

    fn agg(v: u32, len: usize, sec: i64) -> Packet {
        let mut p = pkt(&vec![len as u8; len]);
        set_aggregate(&mut p, v);
        p.set_timestamp(Timestamp::from_parts(sec, 0));
        p
    }

    fn conf(extra: &str, out1: bool) -> String {
        format!(
            "TestSource -> al :: AggregateLast({extra}) -> s :: TestSink; {}",
            if out1 {
                "al[1] -> old :: TestSink;"
            } else {
                ""
            }
        )
    }

    #[test]
    fn clear_releases_the_last_packet_of_each_aggregate() {
        let r = build(&reg(), &conf("STOP_AFTER_CLEAR true", true));
        let mut big = agg(5, 30, 4);
        big.anno_mut().extra_packets = 2; // stands for 3 packets
        big.anno_mut().extra_length = 100;
        let batch = vec![
            agg(9, 10, 1),
            agg(5, 20, 2),
            agg(9, 11, 3),
            big,
            agg(9, 12, 5),
        ];
        r.push_into("al", 0, Batch::from(batch)).unwrap();
        let old = sink(&r, "old");
        assert_eq!(
            old.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [10, 20, 11]
        );
        assert_eq!(handler(&r, "al.naggregates"), "2");
        assert!(sink(&r, "s").is_empty(), "nothing leaves before clear");
        r.write_handler("al.clear", "").unwrap();
        run(&r); // STOP_AFTER_CLEAR ends the run
        let out = sink(&r, "s");
        assert_eq!(out.iter().map(aggregate).collect::<Vec<_>>(), [5, 9]);
        // Aggregate 5: 1 + 3 packets, 20 + 130 bytes, first at 2 s.
        assert_eq!(out[0].len(), 30);
        assert_eq!(out[0].anno().extra_packets, 3);
        assert_eq!(out[0].anno().extra_length, 120);
        assert_eq!(first_timestamp(&out[0]), Timestamp::from_parts(2, 0));
        assert_eq!(out[0].timestamp(), Timestamp::from_parts(4, 0));
        // Aggregate 9: 3 packets, 33 bytes, first at 1 s.
        assert_eq!(out[1].len(), 12);
        assert_eq!(out[1].anno().extra_packets, 2);
        assert_eq!(out[1].anno().extra_length, 21);
        assert_eq!(first_timestamp(&out[1]), Timestamp::from_parts(1, 0));
        assert_eq!(handler(&r, "al.naggregates"), "0");
    }

    #[test]
    fn superseded_packets_dropped_without_output_1() {
        let r = build(&reg(), &conf("", false));
        r.push_into("al", 0, Batch::from(vec![agg(1, 10, 1), agg(1, 10, 2)]))
            .unwrap();
        assert_eq!(handler(&r, "al.drop_reasons"), "superseded 1\n");
        r.write_handler("al.clear", "").unwrap();
        run_until(&r, |r| {
            handler(r, "al.naggregates") == "0"
                && r.element::<TestSink>("s").is_some_and(|s| s.len() == 1)
        });
        assert_err(
            try_build(&reg(), "TestSource -> AggregateLast(NOTIFIER x) -> Discard"),
            "NOTIFIER is not supported",
        );
    }
}
