//! The element API.
//!
//! An element is shared by reference among the worker threads. It receives
//! batches on push inputs, hands out batches from pull outputs, and (if it
//! owns a task) does work when its thread's scheduler runs it.
//!
//! Most elements are a function of one packet: they implement only
//! [`Element::action`], and the default `push`/`pull` run the batch loop
//! (the one place it lives, VPP-style), splitting a batch by output port
//! and counting drops.

use crate::cx::Cx;
use crate::handler::HandlerCx;
use crate::router::InitCx;
use paraclick_packet::{Batch, Packet};

/// What a per-packet action decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Emit on this output port.
    Out(usize),
    /// Drop the packet (counted against the element).
    Drop,
}

/// A handler an element offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerInfo {
    pub name: &'static str,
    pub read: bool,
    pub write: bool,
}

impl HandlerInfo {
    pub const fn read(name: &'static str) -> HandlerInfo {
        HandlerInfo {
            name,
            read: true,
            write: false,
        }
    }
    pub const fn write(name: &'static str) -> HandlerInfo {
        HandlerInfo {
            name,
            read: false,
            write: true,
        }
    }
    pub const fn rw(name: &'static str) -> HandlerInfo {
        HandlerInfo {
            name,
            read: true,
            write: true,
        }
    }
}

pub trait Element: std::any::Any + Send + Sync {
    /// The per-packet work of a simple element. The default push and pull
    /// call it for every packet of a batch.
    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
        Verdict::Out(0)
    }

    /// Whether this element is a pure per-packet element: it implements
    /// [`Element::action`] and keeps the default `push` (and `pull`). The
    /// router then runs its action inside the pushing element's loop
    /// ([`Cx::push`]) rather than calling its `push`, which saves a call
    /// level per hop. An element that overrides `push` or `pull` must not
    /// return true (its override would be bypassed); a test in the elements
    /// crate checks that for every element there.
    fn action_only(&self) -> bool {
        false
    }

    /// A batch arrives on push input `port`.
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        push_actions(self, cx, batch)
    }

    /// Downstream pulls up to `max` packets from pull output `port`.
    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        pull_actions(self, cx, max)
    }

    /// Runs task `task` of this element (see [`InitCx::add_task`]); returns
    /// whether it did useful work (moved packets, made progress).
    fn run_task(&self, _cx: &mut Cx<'_>, _task: usize) -> bool {
        false
    }

    /// Timer `timer` of this element fired (see [`Cx::schedule_after`]).
    fn run_timer(&self, _cx: &mut Cx<'_>, _timer: usize) {}

    /// Called once after every element is configured and connected.
    fn initialize(&self, _ix: &mut InitCx<'_>) -> Result<(), String> {
        Ok(())
    }

    /// The element's own handlers (the router adds `name`, `class`,
    /// `config`, `ports`, `handlers`).
    fn handlers(&self) -> &'static [HandlerInfo] {
        &[]
    }

    /// Reads handler `name`; `None` if there is no such read handler.
    fn read_handler(&self, _name: &str, _hx: &HandlerCx<'_>) -> Option<String> {
        None
    }

    /// A read handler that takes a parameter (Click's `READ_PARAM`), read
    /// as `element.handler PARAM` (in `-h`, a Script's `read` and `$(...)`):
    /// `Some` if `name` is one; the error goes back to the reader.
    fn read_handler_param(
        &self,
        _name: &str,
        _param: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<String, String>> {
        None
    }

    /// Writes handler `name`; `None` if there is no such write handler.
    fn write_handler(
        &self,
        _name: &str,
        _value: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        None
    }

    /// Packets the element is holding (queues), for the conservation check.
    fn queued(&self) -> usize {
        0
    }

    /// For elements with a push input and a pull output (queues): whether
    /// several threads may push into it, and several pull from it, under
    /// the current thread plan. Called at build time and whenever the
    /// scheduler moves a task, at a point where no operation that assumed
    /// the old modes is still in flight.
    fn set_ring_modes(&self, _multi_producer: bool, _multi_consumer: bool) {}

    /// For queues: whether, under the current thread plan, packets pushed
    /// into it may be pulled on another thread (so a producer may gather
    /// them before publishing, see [`Cx::defer_flush`]). Called with the
    /// ring modes.
    fn set_crossing(&self, _crossing: bool) {}

    /// Work the element deferred with [`Cx::defer_flush`] (a staged batch
    /// to publish, say), on the thread that deferred it.
    fn flush(&self, _cx: &mut Cx<'_>) {}

    /// Stop requests from this element are a driver's to interpret: an
    /// element returning true here (DriverManager, Script TYPE DRIVER) is
    /// told of each stop request through [`Element::stop_requested`]
    /// instead of the router stopping at once.
    fn is_driver(&self) -> bool {
        false
    }

    /// A stop request arrived and this element is the driver.
    fn stop_requested(&self, _hx: &HandlerCx<'_>) {}
}

/// The batch loop for per-packet elements in push context: runs
/// [`Element::action`] on each packet. While every packet goes the same way
/// (the common case, and always so for a batch of one) the batch moves on
/// whole, without allocation; only when verdicts differ are packets sorted
/// into side batches per port. Drops are counted.
#[inline]
pub fn push_actions<E: Element + ?Sized>(e: &E, cx: &mut Cx<'_>, mut batch: Batch) {
    if batch.is_empty() {
        return;
    }
    match uniform_pass(e, cx, &mut batch) {
        Ok(Verdict::Out(port)) => cx.push(port, batch),
        Ok(Verdict::Drop) => cx.drop_batch(batch),
        Err((i, first, other)) => split_batch(e, cx, batch, i, first, other),
    }
}

/// Runs `e`'s action on the packets of a non-empty `batch` while their
/// verdicts agree: `Ok(verdict)` if all agree, otherwise
/// `Err((i, first, other))`: packets `..i` had verdict `first`, packet `i`
/// had `other`, and the rest have not been looked at.
#[inline(always)]
pub(crate) fn uniform_pass<E: Element + ?Sized>(
    e: &E,
    cx: &mut Cx<'_>,
    batch: &mut Batch,
) -> Result<Verdict, (usize, Verdict, Verdict)> {
    let v = batch.as_mut_slice();
    let first = e.action(cx, &mut v[0]);
    for (i, p) in v.iter_mut().enumerate().skip(1) {
        let vd = e.action(cx, p);
        if vd != first {
            return Err((i, first, vd));
        }
    }
    Ok(first)
}

/// Sorts a batch whose verdicts differ (see [`uniform_pass`]) into side
/// batches per port and pushes them on.
#[inline(never)]
pub(crate) fn split_batch<E: Element + ?Sized>(
    e: &E,
    cx: &mut Cx<'_>,
    mut batch: Batch,
    i: usize,
    first: Verdict,
    other: Verdict,
) {
    let rest = batch.split_off(i);
    let mut split = Splitter::new(cx, first, batch);
    split.route(cx, rest, other, e);
    split.flush(cx);
}

/// The batch loop in pull context: pulls from input 0, runs the action on
/// each packet, returns output-0 packets, pushes packets for other outputs
/// (which are push outputs, as Click's `a/ah` codes make them).
#[inline]
pub fn pull_actions<E: Element + ?Sized>(e: &E, cx: &mut Cx<'_>, max: usize) -> Option<Batch> {
    let mut batch = cx.pull(0, max)?;
    if batch.is_empty() {
        return None;
    }
    let (rest, first, other) = match uniform_pass(e, cx, &mut batch) {
        Ok(Verdict::Out(0)) => return Some(batch),
        Ok(v) => (Batch::new(), v, None),
        Err((i, first, other)) => (batch.split_off(i), first, Some(other)),
    };
    let mut split = Splitter::new(cx, first, batch);
    if let Some(other) = other {
        split.route(cx, rest, other, e);
    }
    let out = split.take_port0();
    split.flush(cx);
    out.filter(|b| !b.is_empty())
}

/// Side batches per output port, for batches whose packets go different
/// ways. The first few ports live inline: no allocation.
struct Splitter {
    outs: [(usize, Option<Batch>); 4],
    more: Vec<(usize, Batch)>,
}

impl Splitter {
    /// Starts with batch `b`, whose packets all had verdict `v`.
    fn new(cx: &mut Cx<'_>, v: Verdict, b: Batch) -> Splitter {
        let mut s = Splitter {
            outs: [(0, None), (0, None), (0, None), (0, None)],
            more: Vec::new(),
        };
        match v {
            Verdict::Out(p) => s.outs[0] = (p, Some(b)),
            Verdict::Drop => cx.drop_batch(b),
        }
        s
    }

    #[inline]
    fn add(&mut self, port: usize, p: Packet) {
        for slot in self.outs.iter_mut() {
            match slot {
                (q, Some(b)) if *q == port => {
                    b.push(p);
                    return;
                }
                (_, None) => {
                    *slot = (port, Some(Batch::one(p)));
                    return;
                }
                _ => {}
            }
        }
        match self.more.iter_mut().find(|(q, _)| *q == port) {
            Some((_, b)) => b.push(p),
            None => self.more.push((port, Batch::one(p))),
        }
    }

    fn route<E: Element + ?Sized>(
        &mut self,
        cx: &mut Cx<'_>,
        mut rest: Batch,
        first: Verdict,
        e: &E,
    ) {
        let mut verdict = Some(first);
        for mut p in rest.drain() {
            let v = match verdict.take() {
                Some(v) => v,
                None => e.action(cx, &mut p),
            };
            match v {
                Verdict::Out(k) => self.add(k, p),
                Verdict::Drop => cx.drop_packet(p),
            }
        }
    }

    fn take_port0(&mut self) -> Option<Batch> {
        self.outs
            .iter_mut()
            .find(|(q, b)| *q == 0 && b.is_some())
            .and_then(|(_, b)| b.take())
    }

    fn flush(self, cx: &mut Cx<'_>) {
        for (port, b) in self.outs {
            if let Some(b) = b {
                if !b.is_empty() {
                    cx.push(port, b);
                }
            }
        }
        for (port, b) in self.more {
            cx.push(port, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{ClassSpec, ConfigCx, Registry};
    use crate::testing::Harness;

    /// Sends a packet to the port named by its first byte; 255 drops it.
    struct ByFirstByte;

    impl Element for ByFirstByte {
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            match p.data()[0] {
                255 => Verdict::Drop,
                k => Verdict::Out(k as usize),
            }
        }
    }

    fn make(cx: &mut ConfigCx<'_>) -> Result<Box<dyn Element>, String> {
        cx.args().complete()?;
        Ok(Box::new(ByFirstByte))
    }

    fn harness() -> Harness {
        let mut reg = Registry::new();
        reg.register(ClassSpec::new("ByFirstByte", "1/-", "a/ah", make));
        Harness::new(&reg, "ByFirstByte", 7).unwrap()
    }

    fn pk(b: u8, tag: u8) -> Packet {
        Packet::from_slice(&[b, tag]).unwrap()
    }

    fn tags(v: Vec<Packet>) -> Vec<u8> {
        v.iter().map(|p| p.data()[1]).collect()
    }

    #[test]
    fn uniform_batches_go_whole_and_mixed_batches_split_in_order() {
        let h = harness();
        // All to port 2.
        h.push(0, vec![pk(2, 1), pk(2, 2), pk(2, 3)]);
        assert_eq!(tags(h.output(2)), vec![1, 2, 3]);
        // Mixed: more ports than the inline slots, drops in between.
        let seq = [
            (0, 1),
            (1, 2),
            (255, 3),
            (0, 4),
            (5, 5),
            (6, 6),
            (3, 7),
            (4, 8),
            (6, 9),
            (255, 10),
        ];
        h.push(0, seq.iter().map(|&(b, t)| pk(b, t)).collect());
        assert_eq!(tags(h.output(0)), vec![1, 4]);
        assert_eq!(tags(h.output(1)), vec![2]);
        assert_eq!(tags(h.output(3)), vec![7]);
        assert_eq!(tags(h.output(4)), vec![8]);
        assert_eq!(tags(h.output(5)), vec![5]);
        assert_eq!(tags(h.output(6)), vec![6, 9]);
        assert_eq!(h.drops(), 2);
        // A batch that starts with drops.
        h.push(0, vec![pk(255, 1), pk(255, 2), pk(1, 3)]);
        assert_eq!(tags(h.output(1)), vec![3]);
        assert_eq!(h.drops(), 4);
        // All dropped.
        h.push(0, vec![pk(255, 1), pk(255, 2)]);
        assert_eq!(h.drops(), 6);
        // A port that does not exist is a counted drop.
        h.push(0, vec![pk(9, 1)]);
        assert_eq!(h.drops(), 7);
    }

    /// Routes by the byte at offset OFFSET (255 drops); fused.
    struct ByteSwitch(usize);

    impl Element for ByteSwitch {
        fn action_only(&self) -> bool {
            true
        }
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            match p.data()[self.0] {
                255 => Verdict::Drop,
                k => Verdict::Out(k as usize),
            }
        }
    }

    /// Adds one to byte 1; fused.
    struct Inc;

    impl Element for Inc {
        fn action_only(&self) -> bool {
            true
        }
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            p.data_mut()[1] += 1;
            Verdict::Out(0)
        }
    }

    fn run_chain(profile: bool) -> (Vec<Vec<u8>>, Vec<(String, u64)>) {
        use crate::router::{BuildOptions, Router};
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::new("ByteSwitch", "1/-", "a/ah", |cx| {
            let k = cx.args().read_mp::<usize>("OFFSET")?;
            Ok(Box::new(ByteSwitch(k)))
        }));
        reg.register(ClassSpec::new("Inc", "1/1", "a", |cx| {
            cx.args().complete()?;
            Ok(Box::new(Inc))
        }));
        let conf = "TestSource -> e :: ByteSwitch(0);
            e[0] -> Inc -> Inc -> o0 :: TestSink;
            e[1] -> b :: ByteSwitch(2);
            b[0] -> o1 :: TestSink;
            b[1] -> Inc -> o2 :: TestSink;";
        let src = paraclick_lang::Source {
            name: "<test>".into(),
            text: conf.into(),
        };
        let opts = BuildOptions {
            pin: false,
            profile,
            ..BuildOptions::default()
        };
        let r = Router::build(&src, &reg, &opts).unwrap();
        let pk = |a: u8, t: u8, c: u8| Packet::from_slice(&[a, t, c]).unwrap();
        // A mixed batch: every way through, drops at both switches, a
        // port that does not exist.
        let mixed = vec![
            pk(0, 1, 0),
            pk(1, 2, 0),
            pk(1, 3, 1),
            pk(1, 4, 255),
            pk(255, 5, 0),
            pk(1, 6, 7),
            pk(0, 7, 0),
        ];
        r.push_into("e", 0, Batch::from(mixed)).unwrap();
        // A uniform batch goes whole through three hops.
        r.push_into("e", 0, Batch::from(vec![pk(1, 10, 1), pk(1, 11, 1)]))
            .unwrap();
        let outs = (0..3)
            .map(|i| {
                r.element::<crate::testing::TestSink>(&format!("o{i}"))
                    .unwrap()
                    .take()
                    .iter()
                    .map(|p| p.data()[1])
                    .collect()
            })
            .collect();
        (outs, r.drops())
    }

    #[test]
    fn fused_chains_route_count_drops_and_match_the_unfused_path() {
        let (outs, drops) = run_chain(false);
        assert_eq!(outs, vec![vec![3, 9], vec![2], vec![4, 11, 12]]);
        assert_eq!(drops, vec![("e".to_string(), 1), ("b".to_string(), 2)]);
        // Profiling turns fusion off: every hop is a push call.
        assert_eq!(run_chain(true), (outs, drops));
    }
}
