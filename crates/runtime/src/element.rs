//! The element API.
//!
//! An element class is one of two kinds, and the type says which:
//!
//! - [`Action`]: a function of one packet (`DecIPTTL`, `Counter`,
//!   `Classifier`...). It has no `push` or `pull` to override: the
//!   framework's batch adapter runs the action over each batch, and when
//!   such an element follows another in a push chain, the pushing loop runs
//!   it in place (a fused hop, VPP's node loop applied to Click's graph).
//! - [`Element`]: anything else (queues, sources, schedulers, devices,
//!   Tee): it implements `push`, `pull` and `run_task` as it needs.
//!
//! Both kinds state their handlers once, in a table ([`Handler`]) that
//! generates the listing, the reads and the writes; writes parse their
//! value with the configuration's argument parser ([`HandlerCx::arg`]).
//!
//! An element that is also a queue, a driver or a single-packet router
//! implements one more trait ([`QueueElement`], [`DriverElement`],
//! [`RoutingElement`]) and is registered through the matching
//! [`crate::ClassSpec`] constructor.
//!
//! The registry wraps an element in the framework's [`Node`] adapter
//! ([`crate::ClassSpec::action`], [`crate::ClassSpec::element`]); the
//! router only ever sees nodes.

use crate::cx::{Cx, HandlerCx, InitCx, StateCx};
use crate::notifier::Notifier;
use crate::ring::ModeSwitch;
use paraclick_packet::{Batch, Packet};
use std::any::{Any, TypeId};

/// What a per-packet action decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Emit on this output port.
    Out(usize),
    /// Drop the packet (counted against the element, its reason
    /// unspecified).
    Drop,
    /// Drop the packet for a reason: an index into the class's
    /// [drop reasons](method@crate::ClassSpec::drop_reasons) (counted
    /// against the element and that reason; see [`crate::drops`]).
    DropFor(u8),
}

/// What an element routing single packets ([`RoutingElement::route_packet`])
/// decided for one; also the result of a fused hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Emit on this output port.
    Out(usize),
    /// Drop the packet (counted against the element, its reason
    /// unspecified).
    Drop,
    /// Drop the packet for a reason, as [`Verdict::DropFor`].
    DropFor(u8),
    /// More than a choice of output (a packet to fragment, say): the
    /// packet goes to the element's [`Element::push_packet`].
    Push,
}

/// A fused hop's result in one register ([`FusedAction::run_one`]): an
/// output port, or one of the codes at the top of the range for the other
/// [`Hop`]s. A port at or above [`HOP_DROP_FOR`] is out of any element's
/// range, so the hop loop tests a code against its next output table once:
/// an in-range code is the next hop, anything else goes to
/// [`Hop::from_code`] off the fast path.
pub type HopCode = usize;

/// [`Hop::Push`]'s code.
pub const HOP_PUSH: HopCode = usize::MAX;
/// [`Hop::Drop`]'s code.
pub const HOP_DROP: HopCode = usize::MAX - 1;
/// [`Hop::DropFor`]`(r)`'s code is `HOP_DROP_FOR + r`.
pub const HOP_DROP_FOR: HopCode = usize::MAX - 1 - 256;

impl Hop {
    /// This hop as a [`HopCode`].
    #[inline(always)]
    pub fn code(self) -> HopCode {
        match self {
            Hop::Out(k) => k,
            Hop::Drop => HOP_DROP,
            Hop::DropFor(r) => HOP_DROP_FOR + r as usize,
            Hop::Push => HOP_PUSH,
        }
    }

    /// The hop a [`HopCode`] stands for.
    #[inline]
    pub fn from_code(c: HopCode) -> Hop {
        match c {
            HOP_PUSH => Hop::Push,
            HOP_DROP => Hop::Drop,
            c if c >= HOP_DROP_FOR => Hop::DropFor((c - HOP_DROP_FOR) as u8),
            k => Hop::Out(k),
        }
    }
}

impl Verdict {
    /// This verdict as a [`HopCode`].
    #[inline(always)]
    pub fn code(self) -> HopCode {
        match self {
            Verdict::Out(k) => k,
            Verdict::Drop => HOP_DROP,
            Verdict::DropFor(r) => HOP_DROP_FOR + r as usize,
        }
    }
}

impl From<Verdict> for Hop {
    #[inline]
    fn from(v: Verdict) -> Hop {
        match v {
            Verdict::Out(k) => Hop::Out(k),
            Verdict::Drop => Hop::Drop,
            Verdict::DropFor(r) => Hop::DropFor(r),
        }
    }
}

/// A handler's name and what it allows, as listed by the `handlers`
/// handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerInfo {
    pub name: String,
    pub read: bool,
    pub write: bool,
    /// The read takes a parameter (Click's `READ_PARAM`).
    pub param: bool,
}

type ReadFn<E> = fn(&E, &HandlerCx<'_>) -> String;
type TryReadFn<E> = fn(&E, &HandlerCx<'_>) -> Result<String, String>;
type ParamFn<E> = fn(&E, Option<&str>, &HandlerCx<'_>) -> Result<String, String>;
type WriteFn<E> = fn(&E, &str, &HandlerCx<'_>) -> Result<(), String>;

enum Read<E> {
    No,
    Plain(ReadFn<E>),
    Try(TryReadFn<E>),
    Param(ParamFn<E>),
}

/// One handler of element type `E`: its name, how it is read, how it is
/// written. An element's `HANDLERS` table is the only place its handlers
/// are stated.
///
/// ```ignore
/// const HANDLERS: &'static [Handler<Self>] = &[
///     Handler::read("count", |e, _| e.packets.get().to_string()),
///     Handler::write("reset", |e, _, _| { e.reset(); Ok(()) }),
///     Handler::rw("active", |e, _| e.active().to_string(), |e, v, hx| {
///         e.set_active(hx.arg(v)?);
///         Ok(())
///     }),
/// ];
/// ```
pub struct Handler<E: 'static> {
    name: &'static str,
    read: Read<E>,
    write: Option<WriteFn<E>>,
}

impl<E> Handler<E> {
    /// A read-only handler whose read cannot fail.
    pub const fn read(name: &'static str, f: ReadFn<E>) -> Handler<E> {
        Handler {
            name,
            read: Read::Plain(f),
            write: None,
        }
    }

    /// A read-only handler whose read can fail (the error reaches the
    /// reader).
    pub const fn try_read(name: &'static str, f: TryReadFn<E>) -> Handler<E> {
        Handler {
            name,
            read: Read::Try(f),
            write: None,
        }
    }

    /// A read handler that may take a parameter (`rt.lookup 10.0.0.1`):
    /// `f` gets `Some(param)` or `None` when read without one.
    pub const fn read_param(name: &'static str, f: ParamFn<E>) -> Handler<E> {
        Handler {
            name,
            read: Read::Param(f),
            write: None,
        }
    }

    /// A write-only handler.
    pub const fn write(name: &'static str, f: WriteFn<E>) -> Handler<E> {
        Handler {
            name,
            read: Read::No,
            write: Some(f),
        }
    }

    /// A handler that reads and writes.
    pub const fn rw(name: &'static str, r: ReadFn<E>, w: WriteFn<E>) -> Handler<E> {
        Handler {
            name,
            read: Read::Plain(r),
            write: Some(w),
        }
    }

    /// The same handler, writable too (spell the element type when
    /// chaining: `Handler::<Self>::read(..).write_with(..)`, or use
    /// [`Handler::rw`]).
    pub const fn write_with(mut self, f: WriteFn<E>) -> Handler<E> {
        self.write = Some(f);
        self
    }

    pub const fn name(&self) -> &'static str {
        self.name
    }

    fn info(&self) -> HandlerInfo {
        HandlerInfo {
            name: self.name.to_string(),
            read: !matches!(self.read, Read::No),
            write: self.write.is_some(),
            param: matches!(self.read, Read::Param(_)),
        }
    }
}

/// A handler that exists only once the element is configured (a Script's
/// exported variables): listed by [`Element::dynamic_handlers`], read and
/// written through [`Element::read_dynamic`] / [`Element::write_dynamic`].
pub type DynHandler = HandlerInfo;

/// A per-packet element. Implement [`Action::action`]; the framework runs
/// the batch loop, splits batches whose packets go different ways, counts
/// drops, and fuses chains of actions into one loop.
pub trait Action: Send + Sync + Sized + 'static {
    /// The element's handlers (the router adds `name`, `class`, `config`,
    /// `ports`, `handlers`).
    const HANDLERS: &'static [Handler<Self>] = &[];

    /// The per-packet work: modify `p` in place and say where it goes.
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict;

    /// The work of [`Action::action`] for a whole batch at once, for an
    /// action that treats every packet alike whatever it holds (a
    /// Counter adds the batch's packets and bytes to its counts once):
    /// `Some(verdict)` when it has done each packet's work and they all go
    /// that way; `None`, the default, has the runtime call `action` for
    /// each packet instead. Only batches come here (one-packet hops call
    /// `action`), and what it does must be what `action` would have done
    /// to each packet in turn.
    #[inline(always)]
    fn action_batch(&self, _cx: &mut Cx<'_>, _batch: &mut [Packet]) -> Option<Verdict> {
        None
    }

    /// Called once after every element is configured and connected.
    fn initialize(&self, _ix: &mut InitCx<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Timer `timer` of this element fired (see [`Cx::schedule_after`]).
    fn run_timer(&self, _cx: &mut Cx<'_>, _timer: usize) {}

    /// Hot reconfiguration (Click's `take_state`): `old` is the element of
    /// the same name and class in the router being replaced, stopped; this
    /// element is initialized and not yet running. Take what should
    /// survive (counts, tables). The default takes nothing.
    fn take_state(&self, _old: &Self, _sx: &mut StateCx<'_>) {}

    /// What the element provides to others, Click's `cast`: asked with
    /// the key of an interface type (a trait object type or a shared
    /// value's), the [`crate::provide::Interface`] for it. Write it with
    /// [`crate::provide!`]; other elements ask with
    /// [`InitCx::cast`]. The default provides nothing.
    fn provide(&self, _want: TypeId) -> Option<&'static dyn Any> {
        None
    }
}

/// An element that is more than a function of one packet: it implements
/// the push and pull calls (and tasks, timers) itself.
pub trait Element: Send + Sync + Sized + 'static {
    /// The element's handlers (the router adds `name`, `class`, `config`,
    /// `ports`, `handlers`).
    const HANDLERS: &'static [Handler<Self>] = &[];

    /// A batch arrives on push input `port`. The default passes it to
    /// output 0.
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        cx.push(0, batch)
    }

    /// Downstream pulls up to `max` packets from pull output `port`. The
    /// default pulls from input 0.
    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        cx.pull(0, max)
    }

    /// One packet arrives on push input `port` (Click's BURST 1: a batch
    /// of one, without the batch). The default hands it to
    /// [`Element::push`] in a batch; elements on hot single-packet paths
    /// (queues, route lookups, sinks) override it to skip the batch.
    #[inline]
    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        self.push(cx, port, Batch::one(p))
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

    /// Handlers known only after configuration (see [`DynHandler`]).
    /// Click's LLRPC `cmd` over a control socket (`LLRPC e#CMD [N]`),
    /// with the N bytes sent: the bytes to send back, or `None` for a
    /// command the element does not know (501). Only the commands Click
    /// documents for the element (Switch's GET_SWITCH and SET_SWITCH).
    fn llrpc(&self, _cmd: u32, _data: &[u8]) -> Option<Result<Vec<u8>, String>> {
        None
    }

    fn dynamic_handlers(&self) -> Vec<DynHandler> {
        Vec::new()
    }

    /// Reads a dynamic handler; `None` if there is none of that name.
    fn read_dynamic(&self, _name: &str, _hx: &HandlerCx<'_>) -> Option<Result<String, String>> {
        None
    }

    /// Reads a dynamic handler with a parameter (`s.run ARGS`, Click's
    /// "read with parameters"); `None` if no dynamic handler of that name
    /// takes one.
    fn read_dynamic_param(
        &self,
        _name: &str,
        _param: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<String, String>> {
        None
    }

    /// Writes a dynamic handler; `None` if there is none of that name.
    fn write_dynamic(
        &self,
        _name: &str,
        _value: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        None
    }

    /// Packets the element is holding, for the conservation check: a
    /// queue's, and those of any element that holds packets back (an ARP
    /// querier's waiting packets, a reassembler's fragments, a delay's).
    fn queued(&self) -> usize {
        0
    }

    /// Work the element deferred with [`Cx::defer_flush`] (a staged batch
    /// to publish, say), on the thread that deferred it.
    fn flush(&self, _cx: &mut Cx<'_>) {}

    /// Hot reconfiguration (Click's `take_state`): `old` is the element of
    /// the same name and class in the router being replaced, stopped; this
    /// element is initialized and not yet running. Take what should
    /// survive (queued packets, counts, tables) through `sx`, which pops
    /// `old`'s rings, pushes into this element's, and counts the packets
    /// that do not fit as drops. The default takes nothing.
    fn take_state(&self, _old: &Self, _sx: &mut StateCx<'_>) {}

    /// What the element provides to others, Click's `cast`: asked with
    /// the key of an interface type (a trait object type or a shared
    /// value's), the [`crate::provide::Interface`] for it. Write it with
    /// [`crate::provide!`]; other elements ask with
    /// [`InitCx::cast`]. The default provides nothing.
    fn provide(&self, _want: TypeId) -> Option<&'static dyn Any> {
        None
    }
}

/// A queue: an element with a push input and a pull output that holds
/// packets between them, on rings whose producer and consumer modes follow
/// the thread plan. Register it with [`crate::ClassSpec::queue`].
pub trait QueueElement: Element {
    /// Whether several threads may push into the queue, and several pull
    /// from it, under the current thread plan, and whether packets pushed
    /// may be pulled on another thread (so a producer may gather them
    /// before publishing, see [`Cx::defer_flush`]). Called at build time
    /// and whenever the scheduler moves a task, at a point where no
    /// operation that assumed the old modes is still in flight (the
    /// runtime's `crossing` module owns every such change).
    fn set_ring_modes(
        &self,
        switch: &ModeSwitch,
        multi_producer: bool,
        multi_consumer: bool,
        crossing: bool,
    );

    /// Downstream pulls one packet from pull output `port`. The default
    /// pulls a batch of at most one through [`Element::pull`].
    #[inline]
    fn pull_packet(&self, cx: &mut Cx<'_>, port: usize) -> Option<Packet> {
        self.pull(cx, port, 1).and_then(|mut b| b.pop())
    }

    /// Whether an element on the queue's consumer side (what pulls from
    /// it, and what that pushes to, up to the next queue) reads packet
    /// data ([`crate::ClassSpec::reads_data`]). Called once at build time.
    /// A queue whose consumer runs on another thread than its producer may
    /// then prefetch the data of the packets a pull takes, not only their
    /// buffer headers. The default ignores it.
    fn set_consumer_reads_data(&self, _reads: bool) {}

    /// The queue's empty notifier (active while it may hold packets),
    /// which pull tasks downstream listen to (see [`crate::notifier`]).
    fn empty_notifier(&self) -> Option<&Notifier> {
        None
    }

    /// The queue's full notifier (active while it has room), which source
    /// tasks upstream listen to.
    fn full_notifier(&self) -> Option<&Notifier> {
        None
    }

    /// Packets pulled out of the queue so far (wrapping), if it counts
    /// them: the adaptive scheduler judges a move that makes the queue
    /// cross threads by the rate through the queues.
    fn dequeued(&self) -> Option<u64> {
        None
    }
}

/// A driver: stop requests are its to interpret (DriverManager, Script
/// TYPE DRIVER). Register it with [`crate::ClassSpec::driver`].
pub trait DriverElement: Element {
    /// Whether this element is the driver (true by default): if so it is
    /// told of each stop request through [`DriverElement::stop_requested`]
    /// instead of the router stopping at once.
    fn is_driver(&self) -> bool {
        true
    }

    /// A stop request arrived and this element is the driver.
    fn stop_requested(&self, hx: &HandlerCx<'_>);
}

/// An element whose single-packet push is only a choice of output: a
/// route lookup, say, which has its own batch path in [`Element::push`]
/// but for one packet only picks a port. The framework runs a single
/// packet's hop into it like an [`Action`]'s, in the same loop as the
/// per-packet elements around it (see [`crate::Cx::push_packet`]), and
/// [`Element::push_packet`] is called only for the packets
/// [`RoutingElement::route_packet`] answers [`Hop::Push`] for:
/// `route_packet` is the one definition of what a single packet does.
/// Only for elements with one push input. Register it with
/// [`crate::ClassSpec::routing`].
pub trait RoutingElement: Element {
    /// The output packet `p` (arrived on input 0) leaves by, [`Hop::Drop`]
    /// (counted), or [`Hop::Push`] to hand it to [`Element::push_packet`].
    fn route_packet(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Hop;
}

/// What a class's registration adds to an [`ElementNode`]: nothing
/// ([`Plain`]), or the hooks of a [`QueueElement`] ([`AsQueue`]), a
/// [`DriverElement`] ([`AsDriver`]) or a [`RoutingElement`]
/// ([`AsRouting`]). Static: the adapter is monomorphized per element type
/// and role, so a plain element pays nothing for the hooks it lacks.
pub trait Role<E: Element>: Send + Sync + 'static {
    /// Whether single packets go through [`Role::route_packet`].
    const ROUTES: bool = false;

    /// [`RoutingElement::route_packet`] (called only when
    /// [`Role::ROUTES`]).
    #[inline]
    fn route_packet(_e: &E, _cx: &mut Cx<'_>, _p: &mut Packet) -> Hop {
        Hop::Push
    }

    /// [`QueueElement::pull_packet`], or a pull of a batch of one.
    #[inline]
    fn pull_packet(e: &E, cx: &mut Cx<'_>, port: usize) -> Option<Packet> {
        e.pull(cx, port, 1).and_then(|mut b| b.pop())
    }

    /// [`QueueElement::set_ring_modes`].
    fn set_ring_modes(_e: &E, _switch: &ModeSwitch, _mp: bool, _mc: bool, _crossing: bool) {}

    /// [`QueueElement::set_consumer_reads_data`].
    fn set_consumer_reads_data(_e: &E, _reads: bool) {}

    /// [`QueueElement::empty_notifier`].
    fn empty_notifier(_e: &E) -> Option<&Notifier> {
        None
    }

    /// [`QueueElement::full_notifier`].
    fn full_notifier(_e: &E) -> Option<&Notifier> {
        None
    }

    /// [`QueueElement::dequeued`].
    fn dequeued(_e: &E) -> Option<u64> {
        None
    }

    /// [`DriverElement::is_driver`].
    fn is_driver(_e: &E) -> bool {
        false
    }

    /// [`DriverElement::stop_requested`].
    fn stop_requested(_e: &E, _hx: &HandlerCx<'_>) {}
}

/// The role of an element registered with [`crate::ClassSpec::element`].
#[derive(Clone, Copy)]
pub struct Plain;

/// The role of a [`QueueElement`].
#[derive(Clone, Copy)]
pub struct AsQueue;

/// The role of a [`DriverElement`].
#[derive(Clone, Copy)]
pub struct AsDriver;

/// The role of a [`RoutingElement`].
#[derive(Clone, Copy)]
pub struct AsRouting;

impl<E: Element> Role<E> for Plain {}

impl<E: QueueElement> Role<E> for AsQueue {
    #[inline]
    fn pull_packet(e: &E, cx: &mut Cx<'_>, port: usize) -> Option<Packet> {
        e.pull_packet(cx, port)
    }
    fn set_ring_modes(e: &E, switch: &ModeSwitch, mp: bool, mc: bool, crossing: bool) {
        e.set_ring_modes(switch, mp, mc, crossing)
    }
    fn set_consumer_reads_data(e: &E, reads: bool) {
        e.set_consumer_reads_data(reads)
    }
    fn empty_notifier(e: &E) -> Option<&Notifier> {
        e.empty_notifier()
    }
    fn full_notifier(e: &E) -> Option<&Notifier> {
        e.full_notifier()
    }
    fn dequeued(e: &E) -> Option<u64> {
        e.dequeued()
    }
}

impl<E: DriverElement> Role<E> for AsDriver {
    fn is_driver(e: &E) -> bool {
        e.is_driver()
    }
    fn stop_requested(e: &E, hx: &HandlerCx<'_>) {
        e.stop_requested(hx)
    }
}

impl<E: RoutingElement> Role<E> for AsRouting {
    const ROUTES: bool = true;

    // Always inlined into the fused hop (`run_one`), so that the `Hop`
    // comes back coded in a register: left out of line (StaticIPLookup's
    // lookup was), it came back through memory and a jump table.
    #[inline(always)]
    fn route_packet(e: &E, cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
        e.route_packet(cx, p)
    }
}

/// What a handler call through a [`Node`] found.
pub enum HandlerCall<T> {
    /// The element has no such handler (of this kind).
    Missing,
    /// It has, but not for this use (a parameter given to a plain read).
    NoParam,
    Done(Result<T, String>),
}

/// The framework's view of an element of either kind: what the router
/// calls. Implemented by the two adapters, never by element authors.
pub trait Node: Send + Sync + 'static {
    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch);
    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch>;
    /// [`Element::push_packet`]: one packet, no batch.
    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, p: Packet);
    /// A packet the element's fused hop answered [`Hop::Push`] for: to
    /// its own push, without routing it a second time.
    fn push_unrouted(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        self.push_packet(cx, port, p)
    }
    /// [`QueueElement::pull_packet`]: one packet, no batch.
    fn pull_packet(&self, cx: &mut Cx<'_>, port: usize) -> Option<Packet>;
    fn run_task(&self, cx: &mut Cx<'_>, task: usize) -> bool;
    fn run_timer(&self, cx: &mut Cx<'_>, timer: usize);
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String>;
    /// The element's own handlers, static then dynamic.
    fn handler_list(&self) -> Vec<HandlerInfo>;
    fn read_handler(
        &self,
        name: &str,
        param: Option<&str>,
        hx: &HandlerCx<'_>,
    ) -> HandlerCall<String>;
    fn write_handler(&self, name: &str, value: &str, hx: &HandlerCx<'_>) -> HandlerCall<()>;
    fn queued(&self) -> usize;
    /// [`QueueElement::set_ring_modes`] (nothing for other elements).
    fn set_ring_modes(
        &self,
        _switch: &ModeSwitch,
        _multi_producer: bool,
        _multi_consumer: bool,
        _crossing: bool,
    ) {
    }
    /// [`QueueElement::set_consumer_reads_data`] (nothing for other
    /// elements).
    fn set_consumer_reads_data(&self, _reads: bool) {}
    /// [`Element::llrpc`].
    fn llrpc(&self, _cmd: u32, _data: &[u8]) -> Option<Result<Vec<u8>, String>> {
        None
    }
    fn flush(&self, cx: &mut Cx<'_>);
    /// [`QueueElement::empty_notifier`] (`None` for other elements).
    fn empty_notifier(&self) -> Option<&Notifier> {
        None
    }
    /// [`QueueElement::full_notifier`] (`None` for other elements).
    fn full_notifier(&self) -> Option<&Notifier> {
        None
    }
    /// [`QueueElement::dequeued`] (`None` for other elements).
    fn dequeued(&self) -> Option<u64> {
        None
    }
    /// [`DriverElement::is_driver`] (false for other elements).
    fn is_driver(&self) -> bool {
        false
    }
    /// [`DriverElement::stop_requested`].
    fn stop_requested(&self, _hx: &HandlerCx<'_>) {}
    /// The per-packet action, if this is an [`Action`] (for fused hops).
    fn fused(&self) -> Option<&(dyn FusedAction + 'static)>;
    /// The element itself, for downcasting to its concrete type.
    fn as_any(&self) -> &dyn Any;
    /// The Rust type of the element itself (what [`Node::as_any`]
    /// downcasts to), as `std::any::type_name` gives it.
    fn rust_type(&self) -> &'static str;
    /// Takes the state of `old` (the element itself, see [`Node::as_any`])
    /// if it is of this element's type; returns whether it was.
    fn take_state(&self, old: &dyn Any, sx: &mut StateCx<'_>) -> bool;
    /// [`Element::provide`] / [`Action::provide`].
    fn provide(&self, want: TypeId) -> Option<&'static dyn Any>;
}

/// The batch loop of an [`Action`], monomorphized per element type so the
/// action is inlined into it: one indirect call per hop per batch.
pub trait FusedAction: Send + Sync {
    /// Runs the action over `batch`. If every packet goes the same way,
    /// returns that output port and leaves the batch to the caller (to
    /// follow to the next hop); otherwise takes the batch, drops or splits
    /// it and pushes the parts on, and returns `None`. (An `Option<usize>`
    /// comes back in registers, which keeps the hop cheap for a batch of
    /// one.)
    fn run(&self, cx: &mut Cx<'_>, batch: &mut Batch) -> Option<usize>;

    /// The action on one packet (the hop of a batch of one), its
    /// [`Hop`] coded to come back in a register (a `HopCode`: the output
    /// port, or a code above any port for a drop or a push).
    fn run_one(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode;

    /// Whether batch hops run [`FusedAction::run`] too (an Action's loop)
    /// or go to the element's `push` as unfused hops (an element that
    /// only routes single packets: its `run` would only pass the batch on
    /// to `push`, through a batch taken from the pool).
    fn fuses_batches(&self) -> bool {
        true
    }
}

impl<A: Action> FusedAction for ActionNode<A> {
    #[inline]
    fn run(&self, cx: &mut Cx<'_>, batch: &mut Batch) -> Option<usize> {
        if batch.is_empty() {
            return None;
        }
        let f = |cx: &mut Cx<'_>, p: &mut Packet| self.0.action(cx, p).code();
        let pass = match self.0.action_batch(cx, batch.as_mut_slice()) {
            Some(v) => Ok(v.code()),
            None => uniform_pass(&f, cx, batch),
        };
        match pass {
            Ok(k) if k < HOP_DROP_FOR => Some(k),
            Ok(code) => {
                drop_batch_code(cx, code, std::mem::take(batch));
                None
            }
            Err((i, first, other)) => {
                split_batch(&f, cx, std::mem::take(batch), i, first, other);
                None
            }
        }
    }

    #[inline]
    fn run_one(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode {
        self.0.action(cx, p).code()
    }
}

/// The fused hop of an element that routes single packets
/// ([`RoutingElement`]): a batch goes to its `push` (which splits it by
/// output itself), one packet to `route_packet`.
impl<E: Element, R: Role<E>> FusedAction for ElementNode<E, R> {
    #[inline]
    fn run(&self, cx: &mut Cx<'_>, batch: &mut Batch) -> Option<usize> {
        if !batch.is_empty() {
            self.0.push(cx, 0, std::mem::take(batch));
        }
        None
    }

    #[inline]
    fn run_one(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode {
        R::route_packet(&self.0, cx, p).code()
    }

    fn fuses_batches(&self) -> bool {
        false
    }
}

fn list_static<E>(table: &[Handler<E>]) -> Vec<HandlerInfo> {
    table.iter().map(Handler::info).collect()
}

fn read_static<E>(
    e: &E,
    table: &[Handler<E>],
    name: &str,
    param: Option<&str>,
    hx: &HandlerCx<'_>,
) -> HandlerCall<String> {
    let Some(h) = table.iter().find(|h| h.name == name) else {
        return HandlerCall::Missing;
    };
    match (&h.read, param) {
        (Read::No, _) => HandlerCall::Missing,
        (Read::Param(f), p) => HandlerCall::Done(f(e, p, hx)),
        (_, Some(_)) => HandlerCall::NoParam,
        (Read::Plain(f), None) => HandlerCall::Done(Ok(f(e, hx))),
        (Read::Try(f), None) => HandlerCall::Done(f(e, hx)),
    }
}

fn write_static<E>(
    e: &E,
    table: &[Handler<E>],
    name: &str,
    value: &str,
    hx: &HandlerCx<'_>,
) -> HandlerCall<()> {
    match table.iter().find(|h| h.name == name).and_then(|h| h.write) {
        Some(f) => HandlerCall::Done(f(e, value, hx)),
        None => HandlerCall::Missing,
    }
}

/// The adapter of an [`Action`].
pub struct ActionNode<A>(pub A);

/// The adapter of an [`Element`], in role `R` (see [`Role`]): what the
/// class was registered as.
pub struct ElementNode<E, R = Plain>(pub E, pub R);

impl<A: Action> Node for ActionNode<A> {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        if !batch.is_empty() {
            if let Some(v) = self.0.action_batch(cx, batch.as_mut_slice()) {
                match v {
                    Verdict::Out(k) => cx.push(k, batch),
                    Verdict::Drop => cx.drop_batch(batch),
                    Verdict::DropFor(r) => cx.drop_batch_for(r, batch),
                }
                return;
            }
        }
        push_verdicts(cx, batch, |cx, p| self.0.action(cx, p))
    }
    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        pull_actions(
            &|cx: &mut Cx<'_>, p: &mut Packet| self.0.action(cx, p).code(),
            &|cx: &mut Cx<'_>, v: &mut [Packet]| self.0.action_batch(cx, v).map(Verdict::code),
            cx,
            max,
        )
    }
    #[inline]
    fn push_packet(&self, cx: &mut Cx<'_>, _port: usize, mut p: Packet) {
        match self.0.action(cx, &mut p) {
            Verdict::Out(k) => cx.push_packet(k, p),
            Verdict::Drop => cx.drop_packet(p),
            Verdict::DropFor(r) => cx.drop_packet_for(r, p),
        }
    }
    #[inline]
    fn pull_packet(&self, cx: &mut Cx<'_>, _port: usize) -> Option<Packet> {
        // As the batch version for a batch of one: a packet for another
        // output is pushed there (or dropped), and nothing is returned.
        let mut p = cx.pull_packet(0)?;
        match self.0.action(cx, &mut p) {
            Verdict::Out(0) => Some(p),
            Verdict::Out(k) => {
                cx.push_packet(k, p);
                None
            }
            Verdict::Drop => {
                cx.drop_packet(p);
                None
            }
            Verdict::DropFor(r) => {
                cx.drop_packet_for(r, p);
                None
            }
        }
    }
    fn run_task(&self, _cx: &mut Cx<'_>, _task: usize) -> bool {
        false
    }
    fn run_timer(&self, cx: &mut Cx<'_>, timer: usize) {
        self.0.run_timer(cx, timer)
    }
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.0.initialize(ix)
    }
    fn handler_list(&self) -> Vec<HandlerInfo> {
        list_static(A::HANDLERS)
    }
    fn read_handler(
        &self,
        name: &str,
        param: Option<&str>,
        hx: &HandlerCx<'_>,
    ) -> HandlerCall<String> {
        read_static(&self.0, A::HANDLERS, name, param, hx)
    }
    fn write_handler(&self, name: &str, value: &str, hx: &HandlerCx<'_>) -> HandlerCall<()> {
        write_static(&self.0, A::HANDLERS, name, value, hx)
    }
    fn queued(&self) -> usize {
        0
    }
    fn flush(&self, _cx: &mut Cx<'_>) {}
    fn fused(&self) -> Option<&(dyn FusedAction + 'static)> {
        Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        &self.0
    }
    fn rust_type(&self) -> &'static str {
        std::any::type_name::<A>()
    }
    fn provide(&self, want: TypeId) -> Option<&'static dyn Any> {
        self.0.provide(want)
    }
    fn take_state(&self, old: &dyn Any, sx: &mut StateCx<'_>) -> bool {
        match old.downcast_ref::<A>() {
            Some(o) => {
                self.0.take_state(o, sx);
                true
            }
            None => false,
        }
    }
}

impl<E: Element, R: Role<E>> Node for ElementNode<E, R> {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, port: usize, batch: Batch) {
        self.0.push(cx, port, batch)
    }
    #[inline]
    fn pull(&self, cx: &mut Cx<'_>, port: usize, max: usize) -> Option<Batch> {
        self.0.pull(cx, port, max)
    }
    #[inline]
    fn push_packet(&self, cx: &mut Cx<'_>, port: usize, mut p: Packet) {
        if R::ROUTES {
            match R::route_packet(&self.0, cx, &mut p) {
                Hop::Out(k) => cx.push_packet(k, p),
                Hop::Drop => cx.drop_packet(p),
                Hop::DropFor(r) => cx.drop_packet_for(r, p),
                Hop::Push => self.0.push_packet(cx, port, p),
            }
        } else {
            self.0.push_packet(cx, port, p)
        }
    }
    #[inline]
    fn push_unrouted(&self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        self.0.push_packet(cx, port, p)
    }
    #[inline]
    fn pull_packet(&self, cx: &mut Cx<'_>, port: usize) -> Option<Packet> {
        R::pull_packet(&self.0, cx, port)
    }
    fn run_task(&self, cx: &mut Cx<'_>, task: usize) -> bool {
        self.0.run_task(cx, task)
    }
    fn run_timer(&self, cx: &mut Cx<'_>, timer: usize) {
        self.0.run_timer(cx, timer)
    }
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.0.initialize(ix)
    }
    fn handler_list(&self) -> Vec<HandlerInfo> {
        let mut v = list_static(E::HANDLERS);
        v.extend(self.0.dynamic_handlers());
        v
    }
    fn read_handler(
        &self,
        name: &str,
        param: Option<&str>,
        hx: &HandlerCx<'_>,
    ) -> HandlerCall<String> {
        match read_static(&self.0, E::HANDLERS, name, param, hx) {
            HandlerCall::Missing => match param {
                None => match self.0.read_dynamic(name, hx) {
                    Some(r) => HandlerCall::Done(r),
                    None => HandlerCall::Missing,
                },
                Some(p) => match self.0.read_dynamic_param(name, p, hx) {
                    Some(r) => HandlerCall::Done(r),
                    // Known without a parameter: say so, without reading
                    // it (a read may have effects).
                    None if self
                        .0
                        .dynamic_handlers()
                        .iter()
                        .any(|h| h.name == name && h.read) =>
                    {
                        HandlerCall::NoParam
                    }
                    None => HandlerCall::Missing,
                },
            },
            r => r,
        }
    }
    fn write_handler(&self, name: &str, value: &str, hx: &HandlerCx<'_>) -> HandlerCall<()> {
        match write_static(&self.0, E::HANDLERS, name, value, hx) {
            HandlerCall::Missing => match self.0.write_dynamic(name, value, hx) {
                Some(r) => HandlerCall::Done(r),
                None => HandlerCall::Missing,
            },
            r => r,
        }
    }
    fn queued(&self) -> usize {
        self.0.queued()
    }
    fn set_ring_modes(&self, switch: &ModeSwitch, mp: bool, mc: bool, crossing: bool) {
        R::set_ring_modes(&self.0, switch, mp, mc, crossing)
    }
    fn set_consumer_reads_data(&self, reads: bool) {
        R::set_consumer_reads_data(&self.0, reads)
    }
    fn llrpc(&self, cmd: u32, data: &[u8]) -> Option<Result<Vec<u8>, String>> {
        self.0.llrpc(cmd, data)
    }
    fn flush(&self, cx: &mut Cx<'_>) {
        self.0.flush(cx)
    }
    fn empty_notifier(&self) -> Option<&Notifier> {
        R::empty_notifier(&self.0)
    }
    fn full_notifier(&self) -> Option<&Notifier> {
        R::full_notifier(&self.0)
    }
    fn dequeued(&self) -> Option<u64> {
        R::dequeued(&self.0)
    }
    fn is_driver(&self) -> bool {
        R::is_driver(&self.0)
    }
    fn stop_requested(&self, hx: &HandlerCx<'_>) {
        R::stop_requested(&self.0, hx)
    }
    fn fused(&self) -> Option<&(dyn FusedAction + 'static)> {
        if R::ROUTES {
            Some(self)
        } else {
            None
        }
    }
    fn as_any(&self) -> &dyn Any {
        &self.0
    }
    fn rust_type(&self) -> &'static str {
        std::any::type_name::<E>()
    }
    fn provide(&self, want: TypeId) -> Option<&'static dyn Any> {
        self.0.provide(want)
    }
    fn take_state(&self, old: &dyn Any, sx: &mut StateCx<'_>) -> bool {
        match old.downcast_ref::<E>() {
            Some(o) => {
                self.0.take_state(o, sx);
                true
            }
            None => false,
        }
    }
}

/// The batch loop for per-packet work in push context: runs `f` (an
/// [`Action::action`], or an [`Element`]'s own per-packet decision) on
/// each packet. While every packet goes the same way (the common case, and
/// always so for a batch of one) the batch moves on whole, without
/// allocation; only when verdicts differ are packets sorted into side
/// batches per port. Drops are counted.
#[inline]
pub fn push_verdicts<F: Fn(&mut Cx<'_>, &mut Packet) -> Verdict>(
    cx: &mut Cx<'_>,
    mut batch: Batch,
    f: F,
) {
    if batch.is_empty() {
        return;
    }
    let e = &|cx: &mut Cx<'_>, p: &mut Packet| f(cx, p).code();
    match uniform_pass(e, cx, &mut batch) {
        Ok(port) if port < HOP_DROP_FOR => cx.push(port, batch),
        Ok(code) => drop_batch_code(cx, code, batch),
        Err((i, first, other)) => split_batch(e, cx, batch, i, first, other),
    }
}

/// Drops `b` as the non-output [`HopCode`] `code` says (a drop, or a drop
/// for a reason). Off the fast path: the batch loops only test a code
/// against [`HOP_DROP_FOR`].
#[cold]
#[inline(never)]
fn drop_batch_code(cx: &mut Cx<'_>, code: HopCode, b: Batch) {
    match Hop::from_code(code) {
        Hop::DropFor(r) => cx.drop_batch_for(r, b),
        _ => cx.drop_batch(b),
    }
}

/// [`drop_batch_code`] for one packet.
#[cold]
#[inline(never)]
fn drop_packet_code(cx: &mut Cx<'_>, code: HopCode, p: Packet) {
    match Hop::from_code(code) {
        Hop::DropFor(r) => cx.drop_packet_for(r, p),
        _ => cx.drop_packet(p),
    }
}

/// Runs `e`'s action on the packets of a non-empty `batch` while their
/// verdicts agree: `Ok(code)` if all agree, otherwise
/// `Err((i, first, other))`: packets `..i` had verdict `first`, packet `i`
/// had `other`, and the rest have not been looked at. Verdicts come as
/// [`HopCode`]s, one word each, so agreeing is one comparison (the
/// single-packet hop's result, on the batch path).
#[inline(always)]
fn uniform_pass<F: Fn(&mut Cx<'_>, &mut Packet) -> HopCode>(
    e: &F,
    cx: &mut Cx<'_>,
    batch: &mut Batch,
) -> Result<HopCode, (usize, HopCode, HopCode)> {
    let v = batch.as_mut_slice();
    // One call site for the action, so the compiler inlines it into the
    // loop (a second call for the first packet kept large actions out of
    // line); an index loop, as `enumerate().skip(1)` left `nth` out of
    // line. `first` starts as any code: packet 0's result replaces it.
    let mut first = 0;
    #[allow(clippy::needless_range_loop)] // the loop measured, kept as is
    for i in 0..v.len() {
        let c = e(cx, &mut v[i]);
        if c != first {
            if i != 0 {
                return Err((i, first, c));
            }
            first = c;
        }
    }
    Ok(first)
}

/// Sorts a batch whose verdicts differ (see [`uniform_pass`]) into side
/// batches per port and pushes them on.
#[inline(never)]
fn split_batch<F: Fn(&mut Cx<'_>, &mut Packet) -> HopCode>(
    e: &F,
    cx: &mut Cx<'_>,
    mut batch: Batch,
    i: usize,
    first: HopCode,
    other: HopCode,
) {
    let rest = batch.split_off(i);
    let ordered = cx.splits_in_order();
    let mut split = Splitter::new(cx, first, batch, ordered);
    split.route(cx, rest, other, e);
    split.flush(cx);
}

/// The batch loop in pull context: pulls from input 0, runs the action on
/// the whole batch (`whole`, [`Action::action_batch`]) or else on each
/// packet (`e`), returns output-0 packets, pushes packets for other
/// outputs (which are push outputs, as Click's `a/ah` codes make them).
#[inline]
fn pull_actions<F, W>(e: &F, whole: &W, cx: &mut Cx<'_>, max: usize) -> Option<Batch>
where
    F: Fn(&mut Cx<'_>, &mut Packet) -> HopCode,
    W: Fn(&mut Cx<'_>, &mut [Packet]) -> Option<HopCode>,
{
    let mut batch = cx.pull(0, max)?;
    if batch.is_empty() {
        return None;
    }
    let pass = match whole(cx, batch.as_mut_slice()) {
        Some(c) => Ok(c),
        None => uniform_pass(e, cx, &mut batch),
    };
    let (rest, first, other) = match pass {
        Ok(0) => return Some(batch),
        Ok(v) => (Batch::new(), v, None),
        Err((i, first, other)) => (batch.split_off(i), first, Some(other)),
    };
    let mut split = Splitter::new(cx, first, batch, false);
    if let Some(other) = other {
        split.route(cx, rest, other, e);
    }
    let out = split.take_port0();
    split.flush(cx);
    out.filter(|b| !b.is_empty())
}

/// Side batches per output port, for batches whose packets go different
/// ways. The first few ports live inline: no allocation.
///
/// An element whose outputs meet again downstream (`Ports::ordered`)
/// keeps one run instead: a packet for another port than the run's first
/// pushes the run on, so the paths see the batch in arrival order.
struct Splitter {
    outs: [(usize, Option<Batch>); 4],
    more: Vec<(usize, Batch)>,
    ordered: bool,
}

impl Splitter {
    /// Starts with batch `b`, whose packets all had verdict `v`; `ordered`:
    /// keep arrival order across ports (push context only: a pull
    /// element's port 0 returns its packets).
    fn new(cx: &mut Cx<'_>, v: HopCode, b: Batch, ordered: bool) -> Splitter {
        let mut s = Splitter {
            outs: [(0, None), (0, None), (0, None), (0, None)],
            more: Vec::new(),
            ordered,
        };
        if v < HOP_DROP_FOR {
            s.outs[0] = (v, Some(b));
        } else {
            drop_batch_code(cx, v, b);
        }
        s
    }

    #[inline]
    fn add(&mut self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        if self.ordered {
            return self.add_in_order(cx, port, p);
        }
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

    /// Ordered mode: one run in `outs[0]`, pushed on when a packet for
    /// another port arrives.
    #[inline(never)]
    fn add_in_order(&mut self, cx: &mut Cx<'_>, port: usize, p: Packet) {
        match &mut self.outs[0] {
            (q, Some(b)) if *q == port => b.push(p),
            slot => {
                if let (q, Some(b)) = std::mem::replace(slot, (port, Some(Batch::one(p)))) {
                    if !b.is_empty() {
                        cx.push(q, b);
                    }
                }
            }
        }
    }

    fn route<F: Fn(&mut Cx<'_>, &mut Packet) -> HopCode>(
        &mut self,
        cx: &mut Cx<'_>,
        mut rest: Batch,
        first: HopCode,
        e: &F,
    ) {
        let mut verdict = Some(first);
        for mut p in rest.drain() {
            let v = match verdict.take() {
                Some(v) => v,
                None => e(cx, &mut p),
            };
            if v < HOP_DROP_FOR {
                self.add(cx, v, p);
            } else {
                drop_packet_code(cx, v, p);
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
    use crate::registry::{ClassSpec, Registry};
    use crate::testing::Harness;

    /// Sends a packet to the port named by its first byte; 255 drops it.
    struct ByFirstByte;

    impl Action for ByFirstByte {
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            match p.data()[0] {
                255 => Verdict::Drop,
                k => Verdict::Out(k as usize),
            }
        }
    }

    fn harness() -> Harness {
        let mut reg = Registry::new();
        reg.register(ClassSpec::action("ByFirstByte", "1/-", "a/ah", |cx| {
            cx.args().complete()?;
            Ok(ByFirstByte)
        }));
        Harness::new(&reg, "ByFirstByte", 7).unwrap()
    }

    fn pk(b: u8, tag: u8) -> Packet {
        Packet::from_slice(&[b, tag]).unwrap()
    }

    fn tags(v: Vec<Packet>) -> Vec<u8> {
        v.iter().map(|p| p.data()[1]).collect()
    }

    /// Passes every packet to output 0.
    struct Pass;

    impl Action for Pass {
        fn action(&self, _cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
            Verdict::Out(0)
        }
    }

    /// Splits a batch by first byte in its own `push`, port 0's packets
    /// first (as an element with its own batch loop may).
    struct Grouping;

    impl Element for Grouping {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
            let (mut a, mut b) = (Batch::new(), Batch::new());
            for p in batch.drain() {
                if p.data()[0] == 0 {
                    a.push(p)
                } else {
                    b.push(p)
                }
            }
            for (port, out) in [(0, a), (1, b)] {
                if !out.is_empty() {
                    cx.push(port, out);
                }
            }
        }
    }

    fn meeting(conf: &str, relaxed: bool) -> crate::Router {
        let mut reg = Registry::new();
        reg.register(ClassSpec::element("Grouping", "1/2", "h", |cx| {
            cx.args().complete()?;
            Ok(Grouping)
        }));
        reg.register(ClassSpec::action("ByFirstByte", "1/-", "a/ah", |cx| {
            cx.args().complete()?;
            Ok(ByFirstByte)
        }));
        reg.register(ClassSpec::action("Pass", "1/1", "a/ah", |cx| {
            cx.args().complete()?;
            Ok(Pass)
        }));
        let reg = crate::testing::with_test_classes(&reg);
        let opts = crate::BuildOptions {
            pin: false,
            relaxed_order: relaxed,
            ..crate::BuildOptions::default()
        };
        let src = paraclick_lang::Source {
            name: "<test>".into(),
            text: conf.into(),
        };
        crate::Router::build(&src, &reg, &opts).unwrap_or_else(|d| panic!("{d:?}"))
    }

    /// Click runs one packet at a time, so where two outputs' paths meet
    /// again the packets arrive in their original order; a batch split
    /// per output would deliver all of one output's first.
    #[test]
    fn a_split_whose_paths_meet_again_keeps_arrival_order() {
        // Output 1 meets output 0 at `s` after a hop of its own; output 2
        // goes elsewhere.
        let conf = "TestSource -> e :: ByFirstByte; e[0] -> s :: TestSink; \
                    e[1] -> Pass -> s; e[2] -> t :: TestSink;";
        let batch = || {
            vec![
                pk(0, 1),
                pk(1, 2),
                pk(2, 3),
                pk(0, 4),
                pk(1, 5),
                pk(1, 6),
                pk(0, 7),
            ]
        };
        let r = meeting(conf, false);
        r.push_into("e", 0, Batch::from(batch())).unwrap();
        assert_eq!(tags(crate::testing::sink(&r, "s")), vec![1, 2, 4, 5, 6, 7]);
        assert_eq!(tags(crate::testing::sink(&r, "t")), vec![3]);
        // --relaxed-order: whole batches per output, output 0's first.
        let r = meeting(conf, true);
        r.push_into("e", 0, Batch::from(batch())).unwrap();
        assert_eq!(tags(crate::testing::sink(&r, "s")), vec![1, 4, 7, 2, 5, 6]);
    }

    /// An element with its own batch loop whose outputs meet again gets
    /// its batches one packet at a time.
    #[test]
    fn an_element_splitting_batches_itself_gets_one_packet_at_a_time() {
        let conf = "TestSource -> e :: Grouping; e[0] -> s :: TestSink; e[1] -> Pass -> s;";
        let batch = || vec![pk(1, 1), pk(0, 2), pk(1, 3), pk(0, 4)];
        let r = meeting(conf, false);
        r.push_into("e", 0, Batch::from(batch())).unwrap();
        assert_eq!(tags(crate::testing::sink(&r, "s")), vec![1, 2, 3, 4]);
        let r = meeting(conf, true);
        r.push_into("e", 0, Batch::from(batch())).unwrap();
        assert_eq!(tags(crate::testing::sink(&r, "s")), vec![2, 4, 1, 3]);
    }

    #[test]
    fn only_elements_whose_outputs_meet_again_split_in_order() {
        let r = meeting(
            "TestSource -> e :: ByFirstByte; e[0] -> s :: TestSink; e[1] -> Pass -> s; \
             TestSource -> f :: ByFirstByte; f[0] -> a :: TestSink; f[1] -> Pass -> b :: TestSink;",
            false,
        );
        let ordered = |n: &str| r.core.ports[r.core.names[n]].ordered;
        assert!(ordered("e"));
        assert!(!ordered("f"));
        let r = meeting(
            "TestSource -> e :: ByFirstByte; e[0] -> s :: TestSink; e[1] -> s;",
            true,
        );
        assert!(!r.core.ports[r.core.names["e"]].ordered);
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

    /// Routes by the byte at offset OFFSET (255 drops).
    struct ByteSwitch(usize);

    impl Action for ByteSwitch {
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            self.route(p)
        }
    }

    /// Adds one to byte 1.
    struct Inc;

    impl Action for Inc {
        fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
            p.data_mut()[1] += 1;
            Verdict::Out(0)
        }
    }

    /// [`ByteSwitch`] as an element with its own batch path that routes
    /// single packets ([`RoutingElement`]).
    /// Counts its route decisions (each packet must be routed once).
    struct RouteByte(usize, std::sync::atomic::AtomicUsize);

    impl Element for RouteByte {
        fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
            for mut p in batch {
                match self.route_packet(cx, &mut p) {
                    Hop::Out(k) => cx.push_packet(k, p),
                    Hop::Drop => cx.drop_packet(p),
                    Hop::DropFor(r) => cx.drop_packet_for(r, p),
                    Hop::Push => self.push_packet(cx, 0, p),
                }
            }
        }

        fn push_packet(&self, cx: &mut Cx<'_>, _port: usize, mut p: Packet) {
            p.data_mut()[1] += 100;
            cx.push_packet(1, p)
        }
    }

    impl RoutingElement for RouteByte {
        /// Byte 254: more than a choice of port (adds 100 to byte 1, then
        /// output 1).
        fn route_packet(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Hop {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match p.data()[self.0] {
                254 => Hop::Push,
                _ => ByteSwitch(self.0).route(p).into(),
            }
        }
    }

    impl ByteSwitch {
        fn route(&self, p: &Packet) -> Verdict {
            match p.data()[self.0] {
                255 => Verdict::Drop,
                253 => Verdict::DropFor(0),
                k => Verdict::Out(k as usize),
            }
        }
    }

    /// What [`run_chain`] saw: each sink's packets, the drops, how many
    /// packets `b` routed, and `b`'s drops by reason.
    type Chain = (
        Vec<Vec<u8>>,
        Vec<(String, u64)>,
        usize,
        Option<Vec<(&'static str, u64)>>,
    );

    fn run_chain(profile: bool) -> Chain {
        use crate::router::{BuildOptions, Router};
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(ClassSpec::action("ByteSwitch", "1/-", "a/ah", |cx| {
            let mut a = cx.args();
            let k = a.read_mp::<usize>("OFFSET");
            a.complete()?;
            Ok(ByteSwitch(k))
        }));
        reg.register(ClassSpec::action("Inc", "1/1", "a", |cx| {
            cx.args().complete()?;
            Ok(Inc)
        }));
        reg.register(
            ClassSpec::routing("RouteByte", "1/-", "a/ah", |cx| {
                let mut a = cx.args();
                let k = a.read_mp::<usize>("OFFSET");
                a.complete()?;
                Ok(RouteByte(k, Default::default()))
            })
            .drop_reasons(&["byte 253"]),
        );
        let conf = "TestSource -> e :: ByteSwitch(0);
            e[0] -> Inc -> Inc -> o0 :: TestSink;
            e[1] -> b :: RouteByte(2);
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
            pk(1, 8, 254),
        ];
        r.push_into("e", 0, Batch::from(mixed)).unwrap();
        // A uniform batch goes whole through three hops.
        r.push_into("e", 0, Batch::from(vec![pk(1, 10, 1), pk(1, 11, 1)]))
            .unwrap();
        // Single packets: each hop, the routing element's included, runs in
        // the single-packet loop.
        for p in [
            pk(1, 20, 1),
            pk(1, 21, 0),
            pk(1, 22, 255),
            pk(0, 23, 0),
            pk(1, 24, 254),
            pk(1, 25, 253),
        ] {
            r.push_into("e", 0, Batch::one(p)).unwrap();
        }
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
        let routed = r
            .element::<RouteByte>("b")
            .unwrap()
            .1
            .load(std::sync::atomic::Ordering::Relaxed);
        (outs, r.drops(), routed, r.drop_reasons("b"))
    }

    #[test]
    fn fused_chains_route_count_drops_and_match_the_unfused_path() {
        let (outs, drops, routed, reasons) = run_chain(false);
        assert_eq!(
            outs,
            vec![vec![3, 9, 25], vec![2, 21], vec![4, 109, 11, 12, 21, 125]]
        );
        assert_eq!(drops, vec![("e".to_string(), 1), ("b".to_string(), 4)]);
        // A fused hop's drop for a reason is counted against it.
        assert_eq!(
            reasons,
            Some(vec![
                ("byte 253", 1),
                ("unconnected output", 1),
                (crate::drops::UNSPECIFIED, 2)
            ])
        );
        // Profiling turns fusion off: every hop is a push call.
        // Twelve packets reach b, each routed once (a Hop::Push packet is
        // not routed again on its way to push_packet).
        assert_eq!(routed, 12);
        assert_eq!(run_chain(true), (outs, drops, routed, reasons));
    }

    /// Drops for a reason on the batch path: a whole batch dropped for one
    /// reason, and a mixed batch whose packets differ only in their
    /// reason, split per packet and each counted under its own reason.
    #[test]
    fn batch_drops_keep_their_reasons() {
        use crate::router::{BuildOptions, Router};
        let mut reg = Registry::new();
        crate::testing::register(&mut reg);
        reg.register(
            ClassSpec::action("ByteSwitch", "1/-", "a/ah", |cx| {
                let mut a = cx.args();
                let k = a.read_mp::<usize>("OFFSET");
                a.complete()?;
                Ok(ByteSwitch(k))
            })
            .drop_reasons(&["byte 253"]),
        );
        let src = paraclick_lang::Source {
            name: "<test>".into(),
            text: "TestSource -> e :: ByteSwitch(0) -> o :: TestSink;".into(),
        };
        let opts = BuildOptions {
            pin: false,
            ..BuildOptions::default()
        };
        let r = Router::build(&src, &reg, &opts).unwrap();
        let pk = |a: u8, t: u8| Packet::from_slice(&[a, t]).unwrap();
        // Whole batches: three for the reason, two unspecified.
        r.push_into(
            "e",
            0,
            Batch::from(vec![pk(253, 1), pk(253, 2), pk(253, 3)]),
        )
        .unwrap();
        r.push_into("e", 0, Batch::from(vec![pk(255, 4), pk(255, 5)]))
            .unwrap();
        // Mixed: the verdicts of the first run differ from the next
        // packet's only in the reason.
        r.push_into(
            "e",
            0,
            Batch::from(vec![
                pk(255, 6),
                pk(253, 7),
                pk(0, 8),
                pk(253, 9),
                pk(255, 10),
                pk(0, 11),
            ]),
        )
        .unwrap();
        let seen: Vec<u8> = r
            .element::<crate::testing::TestSink>("o")
            .unwrap()
            .take()
            .iter()
            .map(|p| p.data()[1])
            .collect();
        assert_eq!(seen, vec![8, 11]);
        assert_eq!(r.drops(), vec![("e".to_string(), 9)]);
        assert_eq!(
            r.drop_reasons("e"),
            Some(vec![("byte 253", 5), (crate::drops::UNSPECIFIED, 4)])
        );
    }

    /// Every hop survives its one-register code, the codes at the top of
    /// the range included, and no output port a router can have collides
    /// with them.
    #[test]
    fn hop_codes_round_trip() {
        let mut hops = vec![Hop::Drop, Hop::Push, Hop::Out(0), Hop::Out(1 << 20)];
        hops.extend((0..=255).map(Hop::DropFor));
        for h in hops {
            assert_eq!(Hop::from_code(h.code()), h);
        }
        for (v, h) in [
            (Verdict::Out(3), Hop::Out(3)),
            (Verdict::Drop, Hop::Drop),
            (Verdict::DropFor(7), Hop::DropFor(7)),
            (Verdict::DropFor(255), Hop::DropFor(255)),
        ] {
            assert_eq!(v.code(), h.code());
        }
        assert!(HOP_DROP_FOR > u32::MAX as usize);
    }
}
