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
/// [`Element::action`] on each packet, keeps the packets for output 0 in
/// the arriving batch (no allocation when all go one way), gathers other
/// ports' packets in side batches, counts drops, and pushes the results.
#[inline]
pub fn push_actions<E: Element + ?Sized>(e: &E, cx: &mut Cx<'_>, mut batch: Batch) {
    let n = batch.len();
    let mut i = 0;
    let mut first = Verdict::Out(0);
    {
        let v = batch.as_mut_slice();
        while i < n {
            match e.action(cx, &mut v[i]) {
                Verdict::Out(0) => i += 1,
                other => {
                    first = other;
                    break;
                }
            }
        }
    }
    if i == n {
        if n > 0 {
            cx.push(0, batch);
        }
        return;
    }
    let rest = batch.split_off(i);
    let mut split = Splitter::default();
    split.route(cx, &mut batch, rest, first, e);
    if !batch.is_empty() {
        cx.push(0, batch);
    }
    split.flush(cx);
}

/// The batch loop in pull context: pulls from input 0, runs the action on
/// each packet, returns output-0 packets, pushes packets for other outputs
/// (which are push outputs, as Click's `a/ah` codes make them).
#[inline]
pub fn pull_actions<E: Element + ?Sized>(e: &E, cx: &mut Cx<'_>, max: usize) -> Option<Batch> {
    let mut batch = cx.pull(0, max)?;
    let n = batch.len();
    let mut i = 0;
    let mut first = Verdict::Out(0);
    {
        let v = batch.as_mut_slice();
        while i < n {
            match e.action(cx, &mut v[i]) {
                Verdict::Out(0) => i += 1,
                other => {
                    first = other;
                    break;
                }
            }
        }
    }
    if i < n {
        let rest = batch.split_off(i);
        let mut split = Splitter::default();
        split.route(cx, &mut batch, rest, first, e);
        split.flush(cx);
    }
    (!batch.is_empty()).then_some(batch)
}

/// Side batches for ports other than 0 (slow path of the batch loop).
#[derive(Default)]
struct Splitter {
    outs: Vec<(usize, Batch)>,
}

impl Splitter {
    #[cold]
    fn route<E: Element + ?Sized>(
        &mut self,
        cx: &mut Cx<'_>,
        keep: &mut Batch,
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
                Verdict::Out(0) => keep.push(p),
                Verdict::Out(k) => match self.outs.iter_mut().find(|(port, _)| *port == k) {
                    Some((_, b)) => b.push(p),
                    None => self.outs.push((k, Batch::one(p))),
                },
                Verdict::Drop => cx.drop_packet(p),
            }
        }
    }

    fn flush(self, cx: &mut Cx<'_>) {
        for (port, b) in self.outs {
            cx.push(port, b);
        }
    }
}
