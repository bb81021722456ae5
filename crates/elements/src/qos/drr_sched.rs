//! # DRRSched
//!
//! DRRSched(\[QUANTUM, keywords WEIGHTS])
//!
//! Pulls from inputs with deficit round robin scheduling.
//!
//! Schedules packets with deficit round robin (Shreedhar and Varghese,
//! "Efficient Fair Queuing using Deficit Round Robin", SIGCOMM 1995). Each
//! input in turn receives QUANTUM bytes of credit and sends packets while
//! its head packet fits in its credit; an input whose queue empties loses
//! its credit. Over time each busy input gets an equal share of the bytes,
//! whatever its packet sizes. A head packet that does not fit yet is held
//! here until its input's turn comes round with enough credit.
//!
//! The inputs usually come from Queues or other pull schedulers. (Click's
//! DRRSched uses notification to skip empty inputs; here an empty input
//! costs one pull that returns nothing.) An input is pulled a burst at a
//! time, as many packets as its credit buys at the size of its last
//! packet (at least one, at most what was asked for): the packets that
//! do not fit yet wait here, in order, for the input's next turn, as the
//! head packet does in Click. So a run of equal sizes costs one pull per
//! turn, not one per packet.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Arguments:
//! - `QUANTUM` (integer bytes, >= 1, default 500): credit added per round.
//! - `WEIGHTS` (string, a paraclick extension): one positive number per
//!   input, separated by spaces (`"1 3"`); input i gets QUANTUM × its
//!   weight of credit per round, so busy inputs share the bytes in
//!   proportion to their weights (weighted DRR). Inputs not given one
//!   weigh 1.
//!
//! Handlers:
//! - `quantum` (read/write).
//!
//! Example:
//!
//!     a :: Queue; b :: Queue;
//!     a -> [0]s :: DRRSched; b -> [1]s;
//!     s -> ToDevice(eth0);

use super::rate::Unit;
use paraclick_packet::Packet;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, Kind};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The size assumed for an input's packets before its first one: a
/// minimum Ethernet frame, so the first pull of a turn is never short.
const FIRST_COST: f64 = 60.0;

struct DrrState {
    /// Weight per input (quantum multiplier).
    weight: Vec<f64>,
    /// Credit per input, bytes.
    deficit: Vec<f64>,
    /// Packets pulled but not yet sent, per input, oldest first (the
    /// head packet that did not fit, and the rest of its burst).
    held: Vec<VecDeque<Packet>>,
    /// The cost of each input's last packet, bytes: how many packets
    /// its credit buys.
    last_cost: Vec<f64>,
    /// The input being served.
    cur: usize,
    /// Whether `cur` already got its quantum this round.
    credited: bool,
}

pub struct DRRSched {
    quantum: AtomicU64,
    state: Mutex<DrrState>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("DRRSched", "-/1", "l", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
        .metadata_only()
        .replicable_with_queues()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<DRRSched, String> {
    let mut a = cx.args();
    let quantum = a.read_p::<u64>("QUANTUM").unwrap_or(500);
    let weights = a.read::<String>("WEIGHTS");
    a.complete()?;
    if quantum == 0 {
        return Err("QUANTUM must be at least 1".into());
    }
    let n = cx.ninputs;
    let mut weight = vec![1.0; n];
    if let Some(w) = weights {
        let ws: Vec<&str> = w.split_whitespace().collect();
        if ws.len() > n {
            return Err(format!("WEIGHTS: {} weights for {n} inputs", ws.len()));
        }
        for (k, x) in ws.iter().enumerate() {
            match x.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 && v <= 1e6 => weight[k] = v,
                _ => {
                    return Err(format!(
                        "WEIGHTS: weight {} '{x}': a positive number, at most 1000000",
                        k + 1
                    ))
                }
            }
        }
    }
    Ok(DRRSched {
        quantum: AtomicU64::new(quantum),
        state: Mutex::new(DrrState {
            weight,
            deficit: vec![0.0; n],
            held: (0..n).map(|_| VecDeque::new()).collect(),
            last_cost: vec![FIRST_COST; n],
            cur: 0,
            credited: false,
        }),
    })
}

impl Element for DRRSched {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "quantum",
        |e, _| e.quantum.load(Ordering::Relaxed).to_string(),
        |e, v, hx| match hx.arg::<u64>(v)? {
            0 => Err("QUANTUM must be at least 1".into()),
            q => {
                e.quantum.store(q, Ordering::Relaxed);
                Ok(())
            }
        },
    )];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let quantum = self.quantum.load(Ordering::Relaxed) as f64;
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *guard;
        let n = st.held.len().min(cx.ninputs());
        if n == 0 {
            return None;
        }
        let max = max.max(1);
        let mut out = Batch::new();
        // Visits that found nothing to send, in a row: n of them means
        // every input is empty.
        let mut idle_visits = 0;
        // Bound the work per pull (huge packets need many rounds).
        let mut visits = 0;
        while out.len() < max && idle_visits < n && visits < 64 * n {
            let i = st.cur % n;
            if !st.credited {
                st.deficit[i] += quantum * st.weight[i];
                st.credited = true;
                visits += 1;
            }
            let held = &mut st.held[i];
            if held.is_empty() {
                // As many as the credit buys at the last packet's size.
                let want = ((st.deficit[i] / st.last_cost[i]) as usize).clamp(1, max - out.len());
                if let Some(mut b) = cx.pull(i, want) {
                    held.extend(b.drain());
                }
            }
            let fits = match held.front() {
                None => {
                    // An empty input keeps no credit.
                    st.deficit[i] = 0.0;
                    idle_visits += 1;
                    false
                }
                Some(p) => {
                    let c = Unit::Bytes.cost(p);
                    st.last_cost[i] = c.max(1.0);
                    if c <= st.deficit[i] {
                        st.deficit[i] -= c;
                        true
                    } else {
                        idle_visits = 0;
                        false
                    }
                }
            };
            if fits {
                if let Some(p) = held.pop_front() {
                    out.push(p);
                }
                idle_visits = 0;
            } else {
                st.cur = (i + 1) % n;
                st.credited = false;
            }
        }
        (!out.is_empty()).then_some(out)
    }

    fn queued(&self) -> usize {
        self.state
            .lock()
            .map(|s| s.held.iter().map(VecDeque::len).sum())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf};
    use crate::test_kit::{fill, tagged, tags};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    fn router(n: usize, args: &str) -> Router {
        let mut c = format!("s :: DRRSched({args}); s -> Unqueue(ACTIVE false) -> TestSink;\n");
        for i in 0..n {
            c.push_str(&format!("Idle -> q{i} :: Queue(1000) -> [{i}]s;\n"));
        }
        conf(&c)
    }

    #[test]
    fn equal_bytes_whatever_the_packet_sizes() {
        let r = router(2, "QUANTUM 1000");
        // Input 0: 100-byte packets; input 1: 500-byte packets.
        fill(&r, "q0", (0..500).map(|_| tagged(0, 100)).collect());
        fill(&r, "q1", (0..100).map(|_| tagged(1, 500)).collect());
        let mut bytes = [0usize; 2];
        for _ in 0..20 {
            let b = r.pull_from("s", 0, 8).unwrap().unwrap();
            for p in b.as_slice() {
                bytes[p.data()[0] as usize] += p.len();
            }
        }
        // 160 packets pulled; the shares are equal within one quantum.
        let diff = bytes[0] as i64 - bytes[1] as i64;
        assert!(diff.abs() <= 1000, "{bytes:?}");
        assert!(bytes[0] + bytes[1] > 20_000, "{bytes:?}");
    }

    #[test]
    fn weights_share_the_bytes_in_proportion() {
        let r = router(2, "QUANTUM 300, WEIGHTS \"1 3\"");
        // Same sizes on both; both always busy.
        fill(&r, "q0", (0..600).map(|_| tagged(0, 100)).collect());
        fill(&r, "q1", (0..600).map(|_| tagged(1, 100)).collect());
        let mut bytes = [0usize; 2];
        for _ in 0..50 {
            let b = r.pull_from("s", 0, 8).unwrap().unwrap();
            for p in b.as_slice() {
                bytes[p.data()[0] as usize] += p.len();
            }
        }
        // 400 packets pulled: 3 of input 1's bytes for each of input 0's,
        // within a round's credit.
        assert!(
            (bytes[1] as i64 - 3 * bytes[0] as i64).abs() <= 1200,
            "{bytes:?}"
        );
        assert!(bad(
            "s :: DRRSched(WEIGHTS \"1 0\"); Idle -> [0]s; Idle -> [1]s; s -> Discard;"
        ));
        assert!(bad(
            "s :: DRRSched(WEIGHTS \"1 2 3\"); Idle -> [0]s; Idle -> [1]s; s -> Discard;"
        ));
    }

    #[test]
    fn an_input_is_pulled_a_burst_per_turn() {
        // 100-byte packets, quantum 1000: each turn sends 10 of an input,
        // in one or two pulls (the caller's bursts of 32 cut turns), not
        // one pull per packet; the order is DRR's, 10 and 10.
        let mut c =
            String::from("s :: DRRSched(QUANTUM 1000); s -> Unqueue(ACTIVE false) -> TestSink;\n");
        for i in 0..2 {
            c.push_str(&format!(
                "Idle -> q{i} :: Queue(1000) -> l{i} :: PullLog -> [{i}]s;\n"
            ));
        }
        let r = crate::test_kit::build(&super::super::test_util::reg_with_pull_log(), &c);
        fill(&r, "q0", (0..200).map(|_| tagged(0, 100)).collect());
        fill(&r, "q1", (0..200).map(|_| tagged(1, 100)).collect());
        let mut got = Vec::new();
        while let Some(b) = r.pull_from("s", 0, 32).unwrap() {
            got.extend(tags(b.as_slice()));
        }
        assert_eq!(got.len(), 400);
        let want: Vec<u8> = (0..40).flat_map(|t| [t % 2; 10]).collect();
        assert_eq!(got, want);
        for l in ["l0", "l1"] {
            let pulls: usize = r
                .read_handler(&format!("{l}.pulls"))
                .unwrap()
                .parse()
                .unwrap();
            assert!(pulls <= 60, "{l}: {pulls} pulls for 200 packets");
        }
    }

    #[test]
    fn quantum_rounds_and_empty_inputs() {
        let r = router(3, "");
        assert_eq!(r.read_handler("s.quantum").unwrap(), "500");
        // 300-byte packets, quantum 500: input 0 sends 1 in round 1 (200
        // left), 2 in round 2 (700 -> 100)...
        fill(&r, "q0", (0..4).map(|_| tagged(0, 300)).collect());
        fill(&r, "q2", (0..4).map(|_| tagged(2, 300)).collect());
        let mut got = Vec::new();
        while let Some(b) = r.pull_from("s", 0, 1).unwrap() {
            got.extend(tags(b.as_slice()));
        }
        assert_eq!(got, vec![0, 2, 0, 0, 2, 2, 0, 2]);
        r.write_handler("s.quantum", "1500").unwrap();
        assert_err(
            r.write_handler("s.quantum", "0"),
            "s.quantum: QUANTUM must be at least 1",
        );
        assert!(bad("s :: DRRSched(0); Idle -> Queue -> s -> Discard;"));
    }
}
