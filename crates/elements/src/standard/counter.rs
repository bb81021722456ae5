//! # Counter
//!
//! Counter([keywords COUNT_CALL, BYTE_COUNT_CALL, REPLICAS])
//!
//! Counts packets and bytes.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Passes packets unchanged from its input to its output, counting them.
//!
//! Keywords:
//! - `COUNT_CALL` (`N HANDLER [VALUE]`): when the packet count reaches N,
//!   call the write handler HANDLER with VALUE (empty if not given) before
//!   emitting the packet.
//! - `BYTE_COUNT_CALL` (`N HANDLER [VALUE]`): when the byte count reaches
//!   or exceeds N, call the write handler HANDLER with VALUE before
//!   emitting the packet.
//!
//! - `REPLICAS` (element names, space-separated; a paraclick
//!   extension): Counters that count the other replicas of this one's
//!   path. `paraclick parallelize` writes it when it replicates a path
//!   through a Counter (a flow split, a device fanout, a scheduler
//!   replication): each replica counts its own flows, and this
//!   element's `count`, `byte_count`, `rate`, `bit_rate` and
//!   `byte_rate` report the sums over itself and them, so the name the
//!   user reads keeps its meaning; `reset` resets them all. Not with
//!   COUNT_CALL or BYTE_COUNT_CALL (the replicas' counts would each
//!   reach N on their own).
//!
//! HANDLER is `element.handler` (names relative to the Counter's
//! compound first, as a Script's) or a global write handler (`stop`). Each
//! call happens once, on the packet that reaches N, before that packet
//! leaves (with its batch: packets of the same batch that were counted
//! before it leave with it, after the call); after a reset the counts
//! start again and can reach N again. A Counter given neither
//! keyword has no call check on its packet path, so its `count_call` and
//! `byte_count_call` handlers report an error; give `COUNT_CALL` (or
//! `BYTE_COUNT_CALL`) in the configuration to change calls at run time.
//!
//! Handlers:
//! - `count` (read): packets counted.
//! - `byte_count` (read): bytes counted.
//! - `rate` (read): packets per second since the previous read of `rate`.
//! - `bit_rate`, `byte_rate` (read): the same in bits and bytes per second.
//! - `reset`, `reset_counts` (write): resets the counts.
//! - `count_call` (write): a new COUNT_CALL argument, `N [HANDLER
//!   [VALUE]]` (without HANDLER, the previous handler and value stay).
//! - `byte_count_call` (write): a new BYTE_COUNT_CALL argument, likewise.
//!
//! Hot reconfiguration (`-R`, `hotconfig`): a Counter of the same name in
//! the new configuration continues the old one's counts (when both have
//! call keywords or neither has).
//!
//! Example:
//!
//!     FromDump(in.pcap) -> c :: Counter(COUNT_CALL 1000 stop) -> Discard;
//!     // paraclick -h c.count conf.click

use crate::util::{fmt_rate, RateMeter};
use paraclick_packet::Packet;
use paraclick_runtime::element::ActionNode;
use paraclick_runtime::router::InitCx;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, HandlerCx, Node, PerThreadCount, StateCx, Verdict,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A Counter; `C` is its call policy: [`NoCalls`] (nothing on the packet
/// path) or [`Calls`] (COUNT_CALL, BYTE_COUNT_CALL).
pub struct Counter<C: CallPolicy = NoCalls> {
    packets: PerThreadCount,
    bytes: PerThreadCount,
    rate: RateMeter,
    byte_rate: RateMeter,
    calls: C,
    /// REPLICAS: the Counters whose counts the handlers add to these.
    replicas: Vec<String>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::node("Counter", "1/1", "a", |cx| {
        let mut a = cx.args();
        let count_call = a.read::<String>("COUNT_CALL");
        let byte_count_call = a.read::<String>("BYTE_COUNT_CALL");
        let replicas: Vec<String> = a
            .read::<String>("REPLICAS")
            .map(|r| r.split_whitespace().map(String::from).collect())
            .unwrap_or_default();
        a.complete()?;
        if count_call.is_none() && byte_count_call.is_none() {
            let mut c = new_counter(cx, NoCalls);
            c.replicas = replicas;
            return Ok(Box::new(ActionNode(c)) as Box<dyn Node>);
        }
        if !replicas.is_empty() {
            return Err("REPLICAS cannot go with COUNT_CALL or BYTE_COUNT_CALL: \
                        each replica's count would reach N on its own"
                .into());
        }
        let calls = Calls {
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            count: Call::parse("COUNT_CALL", count_call.as_deref())?,
            byte_count: Call::parse("BYTE_COUNT_CALL", byte_count_call.as_deref())?,
        };
        Ok(Box::new(ActionNode(new_counter(cx, calls))) as Box<dyn Node>)
    })
    .per_flow()
    .shared_when(&[
        ("COUNT_CALL", COUNT_CALL_SHARED),
        ("BYTE_COUNT_CALL", COUNT_CALL_SHARED),
    ])
    .sums_replicas()
    .metadata_only()
}

/// Why a Counter with a call is kept whole by a flow split.
const COUNT_CALL_SHARED: &str =
    "its COUNT_CALL or BYTE_COUNT_CALL fires when all flows' count reaches N";

fn new_counter<C: CallPolicy>(cx: &ConfigCx<'_>, calls: C) -> Counter<C> {
    Counter {
        packets: PerThreadCount::new(cx.nthreads),
        bytes: PerThreadCount::new(cx.nthreads),
        rate: RateMeter::new(),
        byte_rate: RateMeter::new(),
        calls,
        replicas: Vec::new(),
    }
}

/// What a Counter does besides counting, per packet.
pub trait CallPolicy: Send + Sync + 'static {
    /// Whether [`CallPolicy::packet`] must see each packet (a batch is
    /// then counted packet by packet).
    const PER_PACKET: bool;
    /// Called for each packet (of `len` bytes) before it leaves.
    fn packet(&self, cx: &mut Cx<'_>, len: u64);
    fn reset(&self);
    /// A `count_call` (`bytes` false) or `byte_count_call` write.
    fn set(&self, bytes: bool, value: &str, hx: &HandlerCx<'_>) -> Result<(), String>;
    /// Checks the handlers to call exist.
    fn check(&self, ix: &InitCx<'_>) -> Result<(), String>;
}

/// No COUNT_CALL or BYTE_COUNT_CALL: nothing on the packet path.
pub struct NoCalls;

impl CallPolicy for NoCalls {
    const PER_PACKET: bool = false;
    #[inline(always)]
    fn packet(&self, _cx: &mut Cx<'_>, _len: u64) {}
    fn reset(&self) {}
    fn set(&self, _bytes: bool, _value: &str, _hx: &HandlerCx<'_>) -> Result<(), String> {
        Err("this Counter has no COUNT_CALL or BYTE_COUNT_CALL keyword \
             (give one in the configuration to set calls at run time)"
            .into())
    }
    fn check(&self, _ix: &InitCx<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// One call: when the count reaches `at`, write `value` to `handler`.
struct Call {
    /// `u64::MAX` when there is no call.
    at: AtomicU64,
    /// (handler, value)
    target: Mutex<(String, String)>,
}

impl Call {
    /// Parses `N HANDLER [VALUE]` (HANDLER optional when `keep` has one).
    fn parse_parts(
        s: &str,
        keep: Option<&(String, String)>,
    ) -> Result<(u64, String, String), String> {
        let s = s.trim();
        let (n, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
        let n: u64 = n
            .parse()
            .map_err(|_| format!("expected 'N HANDLER [VALUE]', not '{s}'"))?;
        let rest = rest.trim();
        if rest.is_empty() {
            return match keep {
                Some((h, v)) if !h.is_empty() => Ok((n, h.clone(), v.clone())),
                _ => Err(format!("expected 'N HANDLER [VALUE]', not '{s}'")),
            };
        }
        let (h, v) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if !h.contains('.') && h != "stop" {
            return Err(format!("HANDLER: expected 'element.handler', not '{h}'"));
        }
        Ok((n, h.to_string(), v.trim().to_string()))
    }

    fn parse(what: &str, s: Option<&str>) -> Result<Call, String> {
        let (at, h, v) = match s {
            Some(s) => Call::parse_parts(s, None).map_err(|e| format!("{what}: {e}"))?,
            None => (u64::MAX, String::new(), String::new()),
        };
        Ok(Call {
            at: AtomicU64::new(at),
            target: Mutex::new((h, v)),
        })
    }

    fn set(&self, value: &str) -> Result<(), String> {
        let mut t = self.target.lock().unwrap_or_else(|e| e.into_inner());
        let (n, h, v) = Call::parse_parts(value, Some(&t))?;
        *t = (h, v);
        self.at.store(n, Ordering::Relaxed);
        Ok(())
    }

    #[cold]
    fn fire(&self, cx: &mut Cx<'_>, what: &str) {
        let (h, v) = self
            .target
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Err(e) = cx.handler_cx().write(&h, &v) {
            eprintln!("{}: {what} {h}: {e}", cx.element_name());
        }
    }
}

/// COUNT_CALL and BYTE_COUNT_CALL: counts shared by every thread, so
/// exactly one packet reaches N.
pub struct Calls {
    packets: AtomicU64,
    bytes: AtomicU64,
    count: Call,
    byte_count: Call,
}

impl CallPolicy for Calls {
    const PER_PACKET: bool = true;
    #[inline]
    fn packet(&self, cx: &mut Cx<'_>, len: u64) {
        let n = self.packets.fetch_add(1, Ordering::Relaxed) + 1;
        if n == self.count.at.load(Ordering::Relaxed) {
            self.count.fire(cx, "COUNT_CALL");
        }
        let before = self.bytes.fetch_add(len, Ordering::Relaxed);
        let at = self.byte_count.at.load(Ordering::Relaxed);
        if at != u64::MAX && before < at && before + len >= at {
            self.byte_count.fire(cx, "BYTE_COUNT_CALL");
        }
    }

    fn reset(&self) {
        self.packets.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
    }

    fn set(&self, bytes: bool, value: &str, _hx: &HandlerCx<'_>) -> Result<(), String> {
        if bytes {
            self.byte_count.set(value)
        } else {
            self.count.set(value)
        }
    }

    fn check(&self, ix: &InitCx<'_>) -> Result<(), String> {
        for (what, c) in [
            ("COUNT_CALL", &self.count),
            ("BYTE_COUNT_CALL", &self.byte_count),
        ] {
            let t = c.target.lock().unwrap_or_else(|e| e.into_inner());
            if !t.0.is_empty() && !ix.has_handler(&t.0) {
                return Err(format!("{what}: no handler '{}'", t.0));
            }
        }
        Ok(())
    }
}

impl<C: CallPolicy> Counter<C> {
    pub fn packets(&self) -> u64 {
        self.packets.get()
    }

    fn reset(&self) {
        self.packets.reset();
        self.bytes.reset();
        self.rate.reset();
        self.byte_rate.reset();
        self.calls.reset();
    }

    fn reset_all(&self, hx: &HandlerCx<'_>) -> Result<(), String> {
        self.reset();
        hx.write_each(&self.replicas, "reset")
    }
}

impl<C: CallPolicy> Action for Counter<C> {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::try_read("count", |e, hx| {
            Ok(hx
                .sum_with(e.packets.get(), &e.replicas, "count")?
                .to_string())
        }),
        Handler::try_read("byte_count", |e, hx| {
            Ok(hx
                .sum_with(e.bytes.get(), &e.replicas, "byte_count")?
                .to_string())
        }),
        Handler::try_read("rate", |e, hx| {
            let own = e.rate.rate(e.packets.get());
            Ok(fmt_rate(hx.sum_with(own, &e.replicas, "rate")?))
        }),
        Handler::try_read("bit_rate", |e, hx| {
            let own = 8.0 * e.byte_rate.rate(e.bytes.get());
            Ok(fmt_rate(hx.sum_with(own, &e.replicas, "bit_rate")?))
        }),
        Handler::try_read("byte_rate", |e, hx| {
            let own = e.byte_rate.rate(e.bytes.get());
            Ok(fmt_rate(hx.sum_with(own, &e.replicas, "byte_rate")?))
        }),
        Handler::write("reset", |e, _, hx| e.reset_all(hx)),
        Handler::write("reset_counts", |e, _, hx| e.reset_all(hx)),
        Handler::write("count_call", |e, v, hx| e.calls.set(false, v, hx)),
        Handler::write("byte_count_call", |e, v, hx| e.calls.set(true, v, hx)),
    ];

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        self.packets.add(cx.thread(), 1);
        self.bytes.add(cx.thread(), p.len() as u64);
        self.calls.packet(cx, p.len() as u64);
        Verdict::Out(0)
    }

    /// A batch is counted with one addition to each count (without calls,
    /// which must see each packet's count).
    #[inline]
    fn action_batch(&self, cx: &mut Cx<'_>, batch: &mut [Packet]) -> Option<Verdict> {
        if C::PER_PACKET {
            return None;
        }
        let bytes = batch
            .iter()
            .fold(0u64, |a, p| a.wrapping_add(p.len() as u64));
        self.packets.add(cx.thread(), batch.len() as u64);
        self.bytes.add(cx.thread(), bytes);
        Some(Verdict::Out(0))
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        ix.check_replicas(&self.replicas, "Counter without calls", |c: &Counter| {
            &c.replicas
        })?;
        self.calls.check(ix)
    }

    fn take_state(&self, old: &Self, _sx: &mut StateCx<'_>) {
        // Neither router runs: slot 0 has no other writer now.
        self.packets.add(0, old.packets.get());
        self.bytes.add(0, old.bytes.get());
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::TestSink;

    fn n_packets(h: &Harness, n: usize, len: usize) {
        h.push(0, (0..n).map(|_| pkt(&vec![0; len])).collect());
    }

    #[test]
    fn counts_packets_and_bytes() {
        let h = harness("Counter", 1);
        n_packets(&h, 3, 10);
        assert_eq!(h.read("count").unwrap(), "3");
        assert_eq!(h.read("byte_count").unwrap(), "30");
        assert_eq!(h.output(0).len(), 3);
        h.write("reset", "").unwrap();
        assert_eq!(h.read("count").unwrap(), "0");
        // No call keywords: the call handlers say so.
        let e = h.write("count_call", "5 o0.name").unwrap_err();
        assert!(e.contains("COUNT_CALL"), "{e}");
    }

    #[test]
    fn a_mixed_batch_counts_each_packets_bytes() {
        // A batch of packets of different lengths, in push context: the
        // batch's bytes are the sum of its packets' lengths.
        let h = harness("Counter", 1);
        h.push(
            0,
            [10, 1, 60, 7].iter().map(|&n| pkt(&vec![0; n])).collect(),
        );
        h.push(0, vec![pkt(&[0; 33])]);
        assert_eq!(h.read("count").unwrap(), "5");
        assert_eq!(h.read("byte_count").unwrap(), "111");
        assert_eq!(h.output(0).len(), 5);
    }

    #[test]
    fn pulled_batches_are_counted_in_full() {
        // In pull context: batches of up to 32 packets of two lengths
        // taken from a Queue, every packet and byte counted once.
        let r = build_simtime(
            &reg(),
            "s0 :: InfiniteSource(LENGTH 10, LIMIT 40, BURST 8, STOP false) -> q :: Queue(1000);
             s1 :: InfiniteSource(LENGTH 70, LIMIT 25, BURST 5, STOP false) -> q;
             q -> c :: Counter -> d :: Discard(BURST 32);",
        );
        run_until(&r, |r| handler(r, "d.count") == "65");
        assert_eq!(handler(&r, "c.count"), "65");
        assert_eq!(handler(&r, "c.byte_count"), (40 * 10 + 25 * 70).to_string());
    }

    /// `e :: Counter(...)` with a second counter `k` whose `reset` the
    /// calls write (so each call is seen as k's count going back to 0),
    /// and a Script-free way to see calls: `k` counts one packet per call.
    fn with_target(args: &str) -> Harness {
        harness(
            &format!(
                "Counter({args}); k :: Counter -> Discard; TestSource -> k; \
                 Idle -> s :: Counter -> Discard"
            ),
            1,
        )
    }

    #[test]
    fn replicas_counts_are_summed_under_the_original_name_and_reset_with_it() {
        let h = harness(
            "Counter(REPLICAS k k2); k :: Counter -> Discard; TestSource -> k; \
             k2 :: Counter -> Discard; TestSource -> k2",
            1,
        );
        let r = &h.router;
        r.push_into("k", 0, vec![pkt(&[1; 7]), pkt(&[1; 7])].into())
            .unwrap();
        r.push_into("k2", 0, vec![pkt(&[1; 100])].into()).unwrap();
        n_packets(&h, 3, 10);
        assert_eq!(h.read("count").unwrap(), "6");
        assert_eq!(h.read("byte_count").unwrap(), "144");
        // Each replica still reads its own.
        assert_eq!(r.read_handler("k.count").unwrap(), "2");
        let rate: f64 = h.read("rate").unwrap().parse().unwrap();
        assert!(rate >= 0.0);
        h.write("reset", "").unwrap();
        assert_eq!(h.read("count").unwrap(), "0");
        assert_eq!(r.read_handler("k2.byte_count").unwrap(), "0");
        // A name that is no Counter, and REPLICAS with calls, are refused.
        let e = try_harness("Counter(REPLICAS nope)", 1).err().unwrap();
        assert!(
            e.contains("REPLICAS: no Counter without calls named 'nope'"),
            "{e}"
        );
        // Nor may a replica name replicas (reading the sums would loop).
        let e = try_harness("Counter(REPLICAS k); k :: Counter(REPLICAS k2) -> Discard; TestSource -> k; k2 :: Counter -> Discard; TestSource -> k2", 1)
            .err()
            .unwrap();
        assert!(e.contains("REPLICAS: k names replicas of its own"), "{e}");
        let e = try_harness(
            "Counter(REPLICAS k, COUNT_CALL 5 k.reset); k :: Counter -> Discard; TestSource -> k",
            1,
        )
        .err()
        .unwrap();
        assert!(e.contains("REPLICAS cannot go with COUNT_CALL"), "{e}");
    }

    #[test]
    fn count_call_fires_once_when_count_reaches_n() {
        let h = with_target("COUNT_CALL 5 k.reset");
        let r = &h.router;
        r.push_into("k", 0, vec![pkt(&[1])].into()).unwrap();
        n_packets(&h, 4, 10);
        assert_eq!(r.read_handler("k.count").unwrap(), "1", "not yet");
        n_packets(&h, 1, 10);
        assert_eq!(r.read_handler("k.count").unwrap(), "0", "called at 5");
        r.push_into("k", 0, vec![pkt(&[1])].into()).unwrap();
        n_packets(&h, 20, 10);
        assert_eq!(r.read_handler("k.count").unwrap(), "1", "only once");
        // After a reset the count reaches 5 again.
        h.write("reset", "").unwrap();
        n_packets(&h, 5, 10);
        assert_eq!(r.read_handler("k.count").unwrap(), "0", "again after reset");
        assert_eq!(h.output(0).len(), 30);
    }

    #[test]
    fn call_happens_before_the_packet_leaves() {
        // d's count is reset by the call: the fifth packet reaches d after
        // the call, so d counts it.
        let conf = "TestSource -> e :: Counter(COUNT_CALL 5 d.reset) \
                    -> d :: Counter -> o0 :: TestSink";
        let r = paraclick_runtime::Router::from_str(conf, &reg(), 1).unwrap();
        for _ in 0..5 {
            r.push_into("e", 0, vec![pkt(&[0; 8])].into()).unwrap();
        }
        assert_eq!(r.read_handler("d.count").unwrap(), "1");
        assert_eq!(r.element::<TestSink>("o0").unwrap().len(), 5);
        // In a batch, the packets before the one that reaches N are still
        // in the Counter's batch when the call happens.
        r.write_handler("e.reset", "").unwrap();
        let five: Vec<_> = (0..5).map(|_| pkt(&[0; 8])).collect();
        r.push_into("e", 0, five.into()).unwrap();
        assert_eq!(r.read_handler("d.count").unwrap(), "5");
    }

    #[test]
    fn byte_count_call_fires_when_bytes_reach_or_exceed_n() {
        let h = with_target("BYTE_COUNT_CALL 25 k.reset");
        let r = &h.router;
        r.push_into("k", 0, vec![pkt(&[1])].into()).unwrap();
        n_packets(&h, 2, 10);
        assert_eq!(r.read_handler("k.count").unwrap(), "1");
        n_packets(&h, 1, 10); // 30 >= 25
        assert_eq!(r.read_handler("k.count").unwrap(), "0");
        r.push_into("k", 0, vec![pkt(&[1])].into()).unwrap();
        n_packets(&h, 5, 10);
        assert_eq!(r.read_handler("k.count").unwrap(), "1", "only once");
    }

    #[test]
    fn call_handlers_change_calls() {
        let h = with_target("COUNT_CALL 100 k.reset");
        let r = &h.router;
        r.push_into("k", 0, vec![pkt(&[1])].into()).unwrap();
        // New N, handler kept.
        h.write("count_call", "3").unwrap();
        n_packets(&h, 3, 1);
        assert_eq!(r.read_handler("k.count").unwrap(), "0");
        // A byte call set by handler on a Counter configured with COUNT_CALL.
        r.push_into("k", 0, vec![pkt(&[1])].into()).unwrap();
        h.write("byte_count_call", "10 k.reset").unwrap();
        n_packets(&h, 1, 10); // bytes 13: crossed 10
        assert_eq!(r.read_handler("k.count").unwrap(), "0");
        for (bad, want) in [
            ("", "e.count_call: expected 'N HANDLER [VALUE]', not ''"),
            (
                "x k.reset",
                "e.count_call: expected 'N HANDLER [VALUE]', not 'x k.reset'",
            ),
            (
                "5 nodot",
                "e.count_call: HANDLER: expected 'element.handler', not 'nodot'",
            ),
        ] {
            assert_err(h.write("count_call", bad), want);
        }
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            (
                "Counter(COUNT_CALL x)",
                "e :: Counter: COUNT_CALL: expected 'N HANDLER [VALUE]', not 'x'",
            ),
            (
                "Counter(COUNT_CALL 5)",
                "e :: Counter: COUNT_CALL: expected 'N HANDLER [VALUE]', not '5'",
            ),
            (
                "Counter(COUNT_CALL 5 nosuch.handler)",
                "e :: Counter: COUNT_CALL: no handler 'nosuch.handler'",
            ),
            (
                "Counter(BYTE_COUNT_CALL 5 nodot)",
                "e :: Counter: BYTE_COUNT_CALL: HANDLER: expected 'element.handler', not 'nodot'",
            ),
            ("Counter(FOO 1)", "e :: Counter: unknown keyword FOO"),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }

    #[test]
    fn a_hot_swap_carries_the_counts() {
        let old = harness("Counter", 1);
        n_packets(&old, 3, 10);
        let new = harness("Counter", 1);
        new.router.take_state_from(&old.router).unwrap();
        n_packets(&new, 1, 10);
        assert_eq!(new.read("count").unwrap(), "4");
        assert_eq!(new.read("byte_count").unwrap(), "40");
    }
}
