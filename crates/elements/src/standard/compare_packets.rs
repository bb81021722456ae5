//! # ComparePackets
//!
//! ComparePackets(\[keyword TIMESTAMP])
//!
//! Compares packets in pairs.
//!
//! Ports: 2 inputs, 2 outputs. Processing: pull.
//!
//! A pull on output I pulls from input I and returns what it got, so the
//! two streams pass through unchanged. ComparePackets pairs the Nth packet
//! pulled from input 0 with the Nth pulled from input 1 and counts the
//! pairs that differ: in length, data, network header presence, offset or
//! length, or (with TIMESTAMP) timestamp annotation. Packets of one input
//! still waiting for their partner count as "more packets in \[I]" until
//! it comes (at the end of a run, the excess of one stream over the
//! other).
//!
//! Keyword arguments:
//! - `TIMESTAMP` (boolean, default true): also compare timestamp
//!   annotations.
//!
//! Handlers:
//! - `diffs` (read): differing pairs plus packets still without a partner.
//! - `diff_details` (read): one line per kind of difference, `COUNT<TAB>WHAT`:
//!   different length, different data, different timestamp, different
//!   network header offset, different network header length, different
//!   network header presence, more packets in \[0], more packets in \[1].
//!   A pair can differ in several ways.
//! - `all_same` (read): `true` if no difference has been seen.
//!
//! Example:
//!
//!     FromDump(a.pcap) -> [0]cp :: ComparePackets; FromDump(b.pcap) -> [1]cp;
//!     ... -> Queue -> [0]cp; cp[0] -> Discard; cp[1] -> Discard;

use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler};
use std::collections::VecDeque;
use std::sync::Mutex;

/// What is compared of a packet.
struct Seen {
    data: Vec<u8>,
    ts: Timestamp,
    net: Option<(isize, usize)>,
}

impl Seen {
    fn of(p: &Packet) -> Seen {
        Seen {
            data: p.data().to_vec(),
            ts: p.timestamp(),
            net: p
                .network_header_offset()
                .map(|o| (o, p.network_header_length().unwrap_or(0))),
        }
    }
}

const WHAT: [&str; 6] = [
    "different length",
    "different data",
    "different timestamp",
    "different network header offset",
    "different network header length",
    "different network header presence",
];

#[derive(Default)]
struct State {
    waiting: [VecDeque<Seen>; 2],
    details: [u64; 6],
    different_pairs: u64,
}

pub struct ComparePackets {
    timestamp: bool,
    state: Mutex<State>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ComparePackets", "2/2", "l", make)
        .shared("compares two streams packet by packet, in order")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ComparePackets, String> {
    let mut a = cx.args();
    let timestamp = a.read::<bool>("TIMESTAMP").unwrap_or(true);
    a.complete()?;
    Ok(ComparePackets {
        timestamp,
        state: Mutex::new(State::default()),
    })
}

impl ComparePackets {
    fn compare(&self, st: &mut State, a: &Seen, b: &Seen) {
        let mut d = [false; 6];
        d[0] = a.data.len() != b.data.len();
        d[1] = !d[0] && a.data != b.data;
        d[2] = self.timestamp && a.ts != b.ts;
        match (a.net, b.net) {
            (Some((ao, al)), Some((bo, bl))) => {
                d[3] = ao != bo;
                d[4] = al != bl;
            }
            (None, None) => {}
            _ => d[5] = true,
        }
        for (i, &x) in d.iter().enumerate() {
            st.details[i] += u64::from(x);
        }
        st.different_pairs += u64::from(d.iter().any(|&x| x));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn diffs(&self) -> u64 {
        let st = self.lock();
        st.different_pairs + (st.waiting[0].len() + st.waiting[1].len()) as u64
    }
}

impl Element for ComparePackets {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("diffs", |e, _| e.diffs().to_string()),
        Handler::read("diff_details", |e, _| {
            let st = e.lock();
            let mut s = String::new();
            for (n, what) in st.details.iter().zip(WHAT) {
                s.push_str(&format!("{n}\t{what}\n"));
            }
            for i in 0..2 {
                s.push_str(&format!("{}\tmore packets in [{i}]\n", st.waiting[i].len()));
            }
            s
        }),
        Handler::read("all_same", |e, _| (e.diffs() == 0).to_string()),
    ];

    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        let b = cx.pull(port, max)?;
        let mut st = self.lock();
        for p in b.iter() {
            let seen = Seen::of(p);
            match st.waiting[1 - port].pop_front() {
                Some(other) => {
                    let (a, b) = if port == 0 {
                        (&seen, &other)
                    } else {
                        (&other, &seen)
                    };
                    self.compare(&mut st, a, b);
                }
                None => st.waiting[port].push_back(seen),
            }
        }
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn rig(decl: &str) -> paraclick_runtime::Router {
        build(
            &reg(),
            &format!(
                "Idle -> a :: Queue -> [0]cp :: {decl}; Idle -> b :: Queue -> [1]cp;
                 cp[0] -> Unqueue(ACTIVE false) -> TestSink; cp[1] -> Unqueue(ACTIVE false) -> TestSink;"
            ),
        )
    }

    fn pull_all(r: &paraclick_runtime::Router, port: usize) -> usize {
        let mut n = 0;
        while let Some(b) = r.pull_from("cp", port, 4).unwrap() {
            n += b.len();
        }
        n
    }

    fn details(r: &paraclick_runtime::Router) -> Vec<u64> {
        handler(r, "cp.diff_details")
            .lines()
            .map(|l| l.split('\t').next().unwrap().parse().unwrap())
            .collect()
    }

    #[test]
    fn same_streams_are_all_same() {
        let r = rig("ComparePackets");
        let ps: Vec<Packet> = (0..5).map(|i| tagged(i, 60)).collect();
        fill(
            &r,
            "a",
            ps.iter().map(|p| p.clone_packet().unwrap()).collect(),
        );
        fill(&r, "b", ps);
        assert_eq!(pull_all(&r, 0), 5);
        assert_eq!(
            handler(&r, "cp.all_same"),
            "false",
            "5 waiting for partners"
        );
        assert_eq!(pull_all(&r, 1), 5);
        assert_eq!(handler(&r, "cp.diffs"), "0");
        assert_eq!(handler(&r, "cp.all_same"), "true");
    }

    #[test]
    fn counts_each_kind_of_difference() {
        let r = rig("ComparePackets");
        let mut ts = tagged(3, 60);
        ts.set_timestamp(paraclick_packet::Timestamp(5));
        let mut nh = tagged(4, 60);
        nh.set_network_header(14, 20);
        let mut nh2 = tagged(4, 60);
        nh2.set_network_header(14, 24);
        fill(
            &r,
            "a",
            vec![
                tagged(1, 60),
                tagged(2, 60),
                tagged(3, 60),
                nh,
                tagged(6, 60),
                tagged(7, 60),
            ],
        );
        fill(
            &r,
            "b",
            vec![tagged(1, 61), tagged(9, 60), ts, nh2, tagged(6, 60)],
        );
        assert_eq!(pull_all(&r, 1), 5);
        assert_eq!(pull_all(&r, 0), 6);
        assert_eq!(details(&r), vec![1, 1, 1, 0, 1, 0, 1, 0]);
        assert_eq!(handler(&r, "cp.diffs"), "5");
        let text = handler(&r, "cp.diff_details");
        assert!(
            text.starts_with("1\tdifferent length\n1\tdifferent data\n"),
            "{text}"
        );
        assert!(
            text.ends_with("1\tmore packets in [0]\n0\tmore packets in [1]\n"),
            "{text}"
        );
    }

    #[test]
    fn timestamps_ignored_when_asked() {
        let r = rig("ComparePackets(TIMESTAMP false)");
        let mut t = tagged(1, 60);
        t.set_timestamp(paraclick_packet::Timestamp(77));
        fill(&r, "a", vec![tagged(1, 60)]);
        fill(&r, "b", vec![t]);
        pull_all(&r, 0);
        pull_all(&r, 1);
        assert_eq!(handler(&r, "cp.diffs"), "0");
    }
}
