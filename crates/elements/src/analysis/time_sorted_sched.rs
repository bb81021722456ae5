//! # TimeSortedSched
//!
//! TimeSortedSched(keywords STOP, BUFFER)
//!
//! Merges sorted packet streams by timestamp.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Answers each pull with the chronologically next packets pulled from its
//! inputs, by timestamp annotation. It expects each input stream to be
//! sorted by timestamp; if one is not, some packets come out of order and
//! the `well_ordered` handler reports `false`.
//!
//! TimeSortedSched holds up to BUFFER packets from each input. It can only
//! emit a packet once it holds a packet from every input that still has
//! packets, so an input that is empty for now (a Queue waiting for
//! traffic) delays the others; an input whose pull returns nothing counts
//! as empty for that pull. (Click uses upstream notification to tell
//! empty-for-now from exhausted inputs; paraclick has no notification, so
//! an input that returns nothing is treated as having nothing to merge.)
//!
//! Keywords:
//! - `STOP` (boolean, default false): stop the driver when no input has a
//!   packet (every input's pull returned nothing and nothing is held);
//!   again each time packets flowed since (a DriverManager `wait` each).
//! - `BUFFER` (integer, default 1): packets held per input. Larger values
//!   cope with slight reordering within an input stream.
//!
//! Handlers:
//! - `well_ordered` (read): `false` once a packet was emitted with an
//!   earlier timestamp than the packet before it.
//!
//! Example:
//!
//!     tss :: TimeSortedSched(STOP true);
//!     FromDump(FILE1) -> [0] tss;
//!     FromDump(FILE2) -> [1] tss;
//!     tss -> ToDump(merged.pcap);

use paraclick_packet::Packet;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, Kind};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub struct TimeSortedSched {
    stop: bool,
    buffer: usize,
    state: Mutex<State>,
    well_ordered: AtomicBool,
}

struct State {
    /// Held packets per input, sorted by timestamp.
    held: Vec<VecDeque<Packet>>,
    last: i64,
    stopped: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("TimeSortedSched", "-/1", "l", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimeSortedSched, String> {
    let mut a = cx.args();
    let stop = a.read("STOP").unwrap_or(false);
    let buffer: usize = a.read("BUFFER").unwrap_or(1);
    a.complete()?;
    if buffer == 0 {
        return Err("BUFFER must be at least 1".into());
    }
    Ok(TimeSortedSched {
        stop,
        buffer,
        state: Mutex::new(State {
            held: Vec::new(),
            last: i64::MIN,
            stopped: false,
        }),
        well_ordered: AtomicBool::new(true),
    })
}

/// Inserts `p` keeping `q` sorted by timestamp (stable for equal times).
fn insert_sorted(q: &mut VecDeque<Packet>, p: Packet) {
    let t = p.timestamp();
    let at = q.partition_point(|x| x.timestamp() <= t);
    q.insert(at, p);
}

impl Element for TimeSortedSched {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("well_ordered", |e, _| {
        e.well_ordered.load(Ordering::Relaxed).to_string()
    })];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let max = max.max(1);
        let n = cx.ninputs();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.held.len() != n {
            st.held.resize_with(n, VecDeque::new);
        }
        let mut out: Vec<Packet> = Vec::new();
        // Inputs found empty during this pull: not waited for.
        let mut dry = vec![false; n];
        while out.len() < max {
            for (i, d) in dry.iter_mut().enumerate() {
                if *d || st.held[i].len() >= self.buffer {
                    continue;
                }
                let want = self.buffer - st.held[i].len();
                match cx.pull(i, want) {
                    Some(b) if !b.is_empty() => {
                        for p in b {
                            insert_sorted(&mut st.held[i], p);
                        }
                    }
                    _ => *d = true,
                }
            }
            // The earliest head among inputs; an input that has packets
            // upstream but none held cannot happen here (it was refilled).
            let best = (0..n)
                .filter_map(|i| st.held[i].front().map(|p| (p.timestamp(), i)))
                .min();
            let Some((t, i)) = best else { break };
            let p = st.held[i].pop_front().expect("head exists");
            if t.0 < st.last {
                self.well_ordered.store(false, Ordering::Relaxed);
            }
            st.last = t.0;
            out.push(p);
        }
        if !out.is_empty() {
            // Packets flow again (an input woke up): the next time every
            // input is dry is a new end, with its own stop request.
            st.stopped = false;
        }
        if out.is_empty() {
            if self.stop && !st.stopped && dry.iter().all(|&d| d) {
                st.stopped = true;
                cx.request_stop();
            }
            return None;
        }
        Some(Batch::from(out))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    fn router(decl: &str, n: usize) -> Router {
        let mut conf = format!("s :: {decl}; s -> u :: Unqueue -> o :: TestSink;\n");
        for i in 0..n {
            conf.push_str(&format!("Idle -> q{i} :: Queue(100) -> [{i}]s;\n"));
        }
        Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn fill(r: &Router, q: usize, ps: Vec<paraclick_packet::Packet>) {
        r.push_into(&format!("q{q}"), 0, ps.into()).unwrap();
    }

    fn pull(r: &Router, max: usize) -> Vec<u8> {
        r.pull_from("s", 0, max)
            .unwrap()
            .map(|b| tags(b.as_slice()))
            .unwrap_or_default()
    }

    #[test]
    fn merges_by_timestamp() {
        let r = router("TimeSortedSched", 3);
        fill(&r, 0, vec![at(1, 1.0), at(4, 4.0), at(7, 7.0)]);
        fill(&r, 1, vec![at(2, 2.0), at(5, 5.0)]);
        fill(&r, 2, vec![at(3, 3.0), at(6, 6.0), at(8, 8.0)]);
        assert_eq!(pull(&r, 3), vec![1, 2, 3]);
        assert_eq!(pull(&r, 32), vec![4, 5, 6, 7, 8]);
        assert!(pull(&r, 32).is_empty());
        assert_eq!(r.read_handler("s.well_ordered").unwrap(), "true");
        assert_eq!(r.total_drops(), 0);
    }

    #[test]
    fn stop_when_every_input_is_dry() {
        let r = router("TimeSortedSched(STOP true)", 2);
        fill(&r, 1, vec![at(1, 1.0)]);
        assert_eq!(pull(&r, 8), vec![1]);
        assert!(r.is_running());
        assert!(pull(&r, 8).is_empty());
        assert!(!r.is_running());
        let r = router("TimeSortedSched", 2);
        assert!(pull(&r, 8).is_empty());
        assert!(r.is_running());
    }

    #[test]
    fn stop_is_requested_again_after_an_input_wakes_up() {
        // The driver's second `wait` needs a second stop request: the
        // inputs ran dry, one was activated, and ran dry again.
        let r = paraclick_runtime::testing::build_simtime(
            &reg(),
            "a :: InfiniteSource(LIMIT 2) -> Queue -> [0]s :: TimeSortedSched(STOP true);
             b :: InfiniteSource(LIMIT 3, ACTIVE false) -> Queue -> [1]s;
             s -> o :: Counter -> Discard;
             DriverManager(wait, write b.active true, wait)",
        );
        // (An input is dry when its pull returns nothing, so the second
        // end may come before b has sent all it could.)
        paraclick_runtime::testing::run_within(&r, std::time::Duration::from_secs(20));
        let out: u64 = r.read_handler("o.count").unwrap().parse().unwrap();
        assert!(out >= 3, "b's packets went through after it woke: {out}");
    }

    #[test]
    fn buffer_absorbs_reordering_and_well_ordered_reports_it() {
        let unsorted = || vec![at(2, 2.0), at(1, 1.0), at(3, 3.0)];
        let r = router("TimeSortedSched(BUFFER 2)", 1);
        fill(&r, 0, unsorted());
        assert_eq!(pull(&r, 8), vec![1, 2, 3]);
        assert_eq!(r.read_handler("s.well_ordered").unwrap(), "true");
        let r = router("TimeSortedSched", 1);
        fill(&r, 0, unsorted());
        assert_eq!(pull(&r, 8), vec![2, 1, 3]);
        assert_eq!(r.read_handler("s.well_ordered").unwrap(), "false");
        let bad = "s :: TimeSortedSched(BUFFER 0); s -> u :: Unqueue -> o :: TestSink; Idle -> Queue -> s;";
        assert_err(
            Router::from_str(bad, &reg(), 1),
            "<config>:1:6: s :: TimeSortedSched: BUFFER must be at least 1",
        );
    }
}
