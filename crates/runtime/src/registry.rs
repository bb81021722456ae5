//! Element classes: what a class name means.

pub use crate::cx::ConfigCx;
use crate::element::{
    Action, ActionNode, AsDriver, AsQueue, AsRouting, DriverElement, Element, ElementNode, Node,
    Plain, QueueElement, Role, RoutingElement,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Creates an element, wrapped in its adapter, from its configuration.
pub type MakeFn = Arc<dyn Fn(&mut ConfigCx<'_>) -> Result<Box<dyn Node>, String> + Send + Sync>;

/// An element class: Click's port-count and processing strings, its
/// configure phase (lower first; AddressInfo configures before users of
/// its names), its documentation, and its constructor.
#[derive(Clone)]
pub struct ClassSpec {
    pub name: &'static str,
    pub port_count: &'static str,
    pub processing: &'static str,
    /// Click's flow code: which inputs packets can flow to which outputs
    /// (`x/x`, every input to every output, unless the class says
    /// [`ClassSpec::flow_code`](method@ClassSpec::flow_code)). An agnostic
    /// port takes push or pull from the ports packets flow to and from.
    pub flow_code: &'static str,
    pub phase: i32,
    pub doc: &'static str,
    /// Whether the class's elements read (or write) packet data, beyond
    /// a packet's buffer header, length and annotations. The performance
    /// model charges a crossing queue's consumer the data lines of the
    /// packets it takes when an element on its side reads data. True
    /// unless the class says [`ClassSpec::metadata_only`].
    pub reads_data: bool,
    /// What the class's elements keep from one packet to the next, as far
    /// as flows are concerned: whether a flow split may replicate them.
    /// [`FlowState::Undeclared`] unless the class says
    /// [`ClassSpec::stateless`], [`ClassSpec::per_flow`] or
    /// [`ClassSpec::shared`].
    pub flow_state: FlowState,
    /// What part the class's elements play in a router's structure
    /// ([`ClassSpec::kind`]; [`Kind::Plain`] unless said).
    pub kind: Kind,
    /// What dead-code removal (`paraclick undead`, Click's click-undead)
    /// may take the class's elements to be ([`ClassSpec::dead_code`];
    /// [`DeadCode::Plain`] unless said).
    pub dead_code: DeadCode,
    /// The class's elements read one receive queue of their device's
    /// PACKET_FANOUT group when configured with `QUEUE r, N_QUEUES n,
    /// FANOUT HASH`, and sum the counts of the copies `REPLICAS` names:
    /// a device fanout may copy them, one per queue. False unless the
    /// class says [`ClassSpec::fanout_queues`](method@ClassSpec::fanout_queues).
    pub fanout_queues: bool,
    /// Why the class's elements drop packets: a drop names a reason by its
    /// index here ([`crate::Verdict::DropFor`]). Empty unless the class
    /// says [`ClassSpec::drop_reasons`](method@ClassSpec::drop_reasons).
    pub drop_reasons: &'static [&'static str],
    /// Keywords that, when given, make a [`FlowState::PerFlow`] or
    /// [`FlowState::Stateless`] element keep state all flows share: each
    /// keyword with the planner's reason ([`ClassSpec::shared_when`]).
    pub shared_when: &'static [(&'static str, &'static str)],
    /// The class takes a `REPLICAS` keyword, naming copies of the element
    /// whose counts its handlers add to its own
    /// ([`ClassSpec::sums_replicas`](method@ClassSpec::sums_replicas)).
    pub sums_replicas: bool,
    /// The header fields the class's per-flow state is keyed by
    /// ([`ClassSpec::flow_key`](method@ClassSpec::flow_key)).
    pub flow_key: FlowKey,
    /// A pull element whose copies, each pulling its own copies of the
    /// queues behind it, do together what it does
    /// ([`ClassSpec::replicable_with_queues`](method@ClassSpec::replicable_with_queues)).
    pub replicable_with_queues: bool,
    /// How the class's elements move where the IP header starts in a
    /// packet ([`ClassSpec::header_change`](method@ClassSpec::header_change)).
    pub header_change: HeaderChange,
    /// What Click's alignment analysis (`paraclick align`, Click's
    /// click-align) takes the class's elements to need of, or give to,
    /// the alignment of packet data
    /// ([`ClassSpec::click_alignment`](method@ClassSpec::click_alignment)).
    pub click_alignment: ClickAlignment,
    /// A source whose rate a handler sets
    /// ([`ClassSpec::rate`](method@ClassSpec::rate)).
    pub rate: Option<RateHandler>,
    /// The Rust type the class's `make` builds (the element inside its
    /// adapter), for an ahead-of-time build's typed calls; `None` for a
    /// class made through [`ClassSpec::node`], whose type may depend on
    /// its arguments (a built router tells the type of each element:
    /// [`crate::Router::rust_type_of`]).
    pub rust_type: Option<RustType>,
    /// The class's elements are fused on input 0 (an [`Action`], or a
    /// [`RoutingElement`]): a link of the chains an ahead-of-time build
    /// compiles. False for a [`ClassSpec::node`] class (its built
    /// elements may still fuse: [`crate::Router::element_fuses`]).
    pub fuses: bool,
    pub make: MakeFn,
}

/// A Rust type, named and identified ([`ClassSpec::rust_type`](field@ClassSpec::rust_type)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RustType {
    /// `std::any::type_name` of the type.
    pub name: &'static str,
    pub id: std::any::TypeId,
}

impl RustType {
    pub fn of<T: 'static>() -> RustType {
        RustType {
            name: std::any::type_name::<T>(),
            id: std::any::TypeId::of::<T>(),
        }
    }
}

/// The header fields an element's per-flow state is keyed by: what a
/// flow split may hash so that each flow's packets reach one replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlowKey {
    /// Addresses and ports, or nothing at all (a Counter, a stateless
    /// element): a flow split may hash both.
    #[default]
    AddressesAndPorts,
    /// The addresses only: packets of one flow may lack the ports (an IP
    /// fragment after the first), so a flow split hashes the addresses.
    Addresses,
}

/// How an element moves where the IP header starts in the packets it
/// passes on, as the planner follows it from a source (the flow split's
/// and scheduler replication's hash offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HeaderChange {
    /// Leaves it where it is.
    #[default]
    Keeps,
    /// Removes as many bytes from the front as its first argument says
    /// (Strip).
    StripsArg,
    /// Puts back as many bytes as its first argument says (Unstrip).
    UnstripsArg,
    /// Puts a header of this many bytes in front (EtherEncap: 14).
    Prepends(usize),
    /// Removes this many bytes from the front, whatever its arguments
    /// (IPInputCombo: 14, the Ethernet header).
    Strips(usize),
    /// Adds or removes headers of a size the planner cannot tell from the
    /// configuration (an IP or UDP encapsulation, a tunnel, a VLAN tag):
    /// where the IP header starts after it is not known.
    Unknown,
}

/// What Click's alignment analysis takes an element class to need of, or
/// give to, the alignment of packet data in memory: where a packet's first
/// byte lies relative to a MODULUS-byte boundary (OFFSET bytes past one).
/// Click's elements of some classes read words that must be aligned on
/// machines without unaligned loads, and Click's click-align tool inserts
/// Align elements where such a need is not met. paraclick's elements
/// work at any alignment: these facts are Click's, kept so that `paraclick
/// align` writes the configuration Click's tool writes. How an element
/// moves the data's start (Strip, Unstrip, EtherEncap) is its
/// [`HeaderChange`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClickAlignment {
    /// Passes packets on, their data where it was (moved as its
    /// [`HeaderChange`] says); needs nothing.
    #[default]
    Passes,
    /// Passes packets on, and needs the data on every input to start
    /// `offset` bytes past a `modulus`-byte boundary (Classifier: 4, 2,
    /// so that the IP header after a 14-byte Ethernet header lies on a
    /// 4-byte boundary).
    Needs { modulus: u32, offset: u32 },
    /// Passes packets on, and needs the IP header, which starts as many
    /// bytes into the data as its OFFSET argument says (keyword, or the
    /// first argument if that is a number; 0 if neither), to start
    /// `offset` bytes past a `modulus`-byte boundary (CheckIPHeader: 4, 0).
    NeedsAtOffsetArg { modulus: u32, offset: u32 },
    /// Emits packets whose data start `offset` bytes past a
    /// `modulus`-byte boundary, whatever it was given (Click's
    /// FromDevice: 4, 2).
    Makes { modulus: u32, offset: u32 },
    /// Emits packets aligned as its MODULUS and OFFSET arguments say
    /// (Align).
    AlignsToArgs,
    /// Emits packets whose alignment is not known (packets it makes
    /// itself, such as ICMPError's errors).
    Unknown,
}

/// A source whose rate of packets a handler sets: the loss-free rate
/// search (`bench --mlffr`) offers rates through it, and the model takes
/// such sources as a fixed mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateHandler {
    /// The read/write handler: packets per second.
    pub handler: &'static str,
    /// The class may be configured to run as fast as it can (a RATE of
    /// 0): rates are offered through it only when asked for
    /// (`bench --mlffr --offered`); a class made to send at a rate
    /// (RatedSource) always gets them.
    pub may_run_freely: bool,
}

/// What an element class keeps across packets, as a flow split sees it:
/// may the planner run several copies (replicas), each given a share of
/// the flows?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlowState {
    /// The class has not said (a test of the element library fails on
    /// such a class; the planner keeps its elements whole).
    #[default]
    Undeclared,
    /// Nothing kept from one packet changes what happens to a later one.
    /// Statistics read through handlers may exist; a replica counts its
    /// own share of them.
    Stateless,
    /// State kept per flow (or counts), which replicas split: each keeps
    /// the state of the flows it is given; where the class takes a
    /// `REPLICAS` keyword (Counter), the original's handlers sum its
    /// replicas' counts. IPReassembler (its fragments' table is keyed by
    /// the addresses a flow split hashes), Counter.
    PerFlow,
    /// State all flows share (a FIFO, a rate, a table, a file), so one
    /// element must see every flow; the reason says which, in words the
    /// planner prints ("a queue: one FIFO for all flows").
    Shared(&'static str),
}

/// The part an element class plays in a router's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kind {
    /// An element on a packet's path: none of the below.
    #[default]
    Plain,
    /// A queue: stores packets pushed into it until they are pulled.
    Queue,
    /// Makes packets of its own (a generator, a file reader).
    Source,
    /// A pull element that picks which input to pull from.
    Scheduler,
    /// Talks to a device or the host: a network interface, tun/tap, a
    /// socket.
    Device,
    /// Places other elements' tasks on threads (StaticThreadSched): a
    /// plan's placement replaces it.
    ThreadSched,
}

/// What dead-code removal (`paraclick undead`) may take an element to
/// be, beyond what its [`Kind`] says: a [`Kind::Source`] class's elements,
/// and a [`Kind::Device`] class's with outputs, are packet sources; a
/// [`Kind::Device`] class's with inputs are sinks; a [`Kind::Scheduler`]
/// class's are schedulers (their dead inputs are dropped; with one input
/// left, they are removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeadCode {
    /// Kept while packets from a source reach it and go on to a sink.
    #[default]
    Plain,
    /// Ends packets with an effect outside the router (writes a file):
    /// ToDump. Its elements are sinks.
    Sink,
    /// A sink where its input is pull (it pulls packets along); pushed
    /// to, it only drops them: Discard.
    PullSink,
    /// Passes each packet from input i to output i and does nothing else
    /// (Null): removed, what fed it connected to what it fed.
    Through,
    /// Sends every packet to the output its first argument names, none if
    /// that is out of range (StaticSwitch): removed, the output joined to
    /// what fed it.
    StaticSwitch,
    /// Pulls from the input its first argument names (StaticPullSwitch):
    /// removed, that input's upstream joined to what it fed.
    StaticPullSwitch,
    /// A scheduler whose first argument (0 if none) is the one input it
    /// pulls from (PullSwitch): when dead inputs are dropped, the argument
    /// follows its input (-1, none, if that input died), and the element
    /// goes only if its one live input is the one it pulls from.
    SelectsInput,
    /// Copies each packet to every output (Tee, PullTee): outputs from
    /// which no sink is reached are dropped; with one output left, the
    /// element is removed.
    Tee,
}

impl ClassSpec {
    /// A per-packet element class: `make` configures an [`Action`], which
    /// the framework's batch adapter runs (and fuses into push chains).
    pub fn action<A: Action>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<A, String>,
    ) -> ClassSpec {
        let mut spec = Self::node(name, port_count, processing, move |cx| {
            make(cx).map(|a| Box::new(ActionNode(a)) as Box<dyn Node>)
        });
        spec.rust_type = Some(RustType::of::<A>());
        spec.fuses = true;
        spec
    }

    /// An element class whose elements play `role` (see [`Role`]).
    fn in_role<E: Element, R: Role<E> + Copy>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
        role: R,
    ) -> ClassSpec {
        let mut spec = Self::node(name, port_count, processing, move |cx| {
            make(cx).map(|e| Box::new(ElementNode(e, role)) as Box<dyn Node>)
        });
        spec.rust_type = Some(RustType::of::<E>());
        spec.fuses = R::ROUTES;
        spec
    }

    /// An element class with its own push, pull or tasks.
    pub fn element<E: Element>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
    ) -> ClassSpec {
        Self::in_role(name, port_count, processing, make, Plain)
    }

    /// A queue class ([`QueueElement`]): its ring modes follow the thread
    /// plan, and its notifiers put tasks to sleep and wake them.
    pub fn queue<E: QueueElement>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
    ) -> ClassSpec {
        Self::in_role(name, port_count, processing, make, AsQueue).kind(Kind::Queue)
    }

    /// A class that is not a queue but has notifiers ([`QueueElement`]'s
    /// `empty_notifier`, `full_notifier`): a source whose pullers sleep
    /// once it has nothing more, a switch that relays the signal of the
    /// input it uses. Its ring-mode hook is never given a ring.
    pub fn notifying<E: QueueElement>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
    ) -> ClassSpec {
        Self::in_role(name, port_count, processing, make, AsQueue)
    }

    /// A driver class ([`DriverElement`]): told of stop requests instead
    /// of the router stopping at once.
    pub fn driver<E: DriverElement>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
    ) -> ClassSpec {
        Self::in_role(name, port_count, processing, make, AsDriver)
    }

    /// A class whose single-packet push is a choice of output
    /// ([`RoutingElement`]): its single-packet hops run in the fused loop.
    pub fn routing<E: RoutingElement>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
    ) -> ClassSpec {
        Self::in_role(name, port_count, processing, make, AsRouting)
    }

    /// A class whose constructor picks the kind itself (wrap the result
    /// with [`crate::element::ActionNode`] or [`crate::element::ElementNode`]
    /// and its role).
    pub fn node(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: impl Fn(&mut ConfigCx<'_>) -> Result<Box<dyn Node>, String> + Send + Sync + 'static,
    ) -> ClassSpec {
        ClassSpec {
            name,
            port_count,
            processing,
            flow_code: "x/x",
            phase: 0,
            doc: "",
            reads_data: true,
            flow_state: FlowState::Undeclared,
            kind: Kind::Plain,
            dead_code: DeadCode::Plain,
            fanout_queues: false,
            drop_reasons: &[],
            shared_when: &[],
            sums_replicas: false,
            flow_key: FlowKey::AddressesAndPorts,
            replicable_with_queues: false,
            header_change: HeaderChange::Keeps,
            click_alignment: ClickAlignment::Passes,
            rate: None,
            rust_type: None,
            fuses: false,
            make: Arc::new(make),
        }
    }

    /// The class's flow code, as Click writes it: `x/y` for an element
    /// (Idle) through which no packet flows, so that its agnostic inputs
    /// and outputs each take push or pull on their own.
    pub fn flow_code(mut self, code: &'static str) -> ClassSpec {
        self.flow_code = code;
        self
    }

    pub fn phase(mut self, phase: i32) -> ClassSpec {
        self.phase = phase;
        self
    }

    pub fn doc(mut self, doc: &'static str) -> ClassSpec {
        self.doc = doc;
        self
    }

    /// The class's elements touch only packets' metadata (buffer header,
    /// length, annotations) or pass packets on untouched: a Counter, a
    /// queue, a scheduler, a Strip.
    pub fn metadata_only(mut self) -> ClassSpec {
        self.reads_data = false;
        self
    }

    /// The class's elements keep nothing from one packet that changes
    /// what happens to a later one ([`FlowState::Stateless`]).
    pub fn stateless(mut self) -> ClassSpec {
        self.flow_state = FlowState::Stateless;
        self
    }

    /// The class's elements keep state per flow, or counts, which
    /// replicas may split ([`FlowState::PerFlow`]).
    pub fn per_flow(mut self) -> ClassSpec {
        self.flow_state = FlowState::PerFlow;
        self
    }

    /// The class's elements keep state all flows share; `reason` says
    /// which, for the planner to print ([`FlowState::Shared`]).
    pub fn shared(mut self, reason: &'static str) -> ClassSpec {
        self.flow_state = FlowState::Shared(reason);
        self
    }

    /// The class's elements can read one queue of a PACKET_FANOUT group
    /// and sum their copies' counts ([`ClassSpec::fanout_queues`](field@ClassSpec::fanout_queues)).
    pub fn fanout_queues(mut self) -> ClassSpec {
        self.fanout_queues = true;
        self
    }

    /// The part the class's elements play ([`Kind`]).
    pub fn kind(mut self, kind: Kind) -> ClassSpec {
        self.kind = kind;
        self
    }

    /// What dead-code removal may take the class's elements to be
    /// ([`DeadCode`]).
    pub fn dead_code(mut self, role: DeadCode) -> ClassSpec {
        self.dead_code = role;
        self
    }
}

impl ClassSpec {
    /// The reasons the class's elements drop packets for, at most
    /// [`crate::drops::MAX_REASONS`] (VPP's per-node error strings): a
    /// drop names one by its index, `Verdict::DropFor(i)` (or
    /// [`crate::Cx::drop_packet_for`]), and each has its own count,
    /// printed by the `drop_reasons` handler. Short lowercase phrases:
    /// `&["bad IP version", "bad IP checksum"]`.
    pub fn drop_reasons(mut self, reasons: &'static [&'static str]) -> ClassSpec {
        self.drop_reasons = reasons;
        self
    }

    /// Keywords that make an otherwise replicable element keep state all
    /// flows share, each with the planner's reason: Counter's
    /// `&[("COUNT_CALL", "its COUNT_CALL ... fires when all flows' count
    /// reaches N")]` (each replica's count would reach N on its own).
    pub fn shared_when(mut self, keywords: &'static [(&'static str, &'static str)]) -> ClassSpec {
        self.shared_when = keywords;
        self
    }

    /// The class takes a `REPLICAS` keyword (element names, checked with
    /// [`crate::InitCx::check_replicas`]): its handlers report the sums of
    /// its own counts and those of the elements named
    /// ([`crate::HandlerCx::sum_with`]). A flow split that replicates such
    /// an element names the copies there, so the original's handlers keep
    /// their meaning (Counter, FromDevice).
    pub fn sums_replicas(mut self) -> ClassSpec {
        self.sums_replicas = true;
        self
    }

    /// The header fields the class's per-flow state is keyed by
    /// ([`FlowKey`]); addresses and ports unless said. IPReassembler:
    /// `FlowKey::Addresses` (a later fragment has no ports).
    pub fn flow_key(mut self, key: FlowKey) -> ClassSpec {
        self.flow_key = key;
        self
    }

    /// A pull element (a scheduler, an Unqueue) that keeps no rate: a
    /// scheduler replication may copy it, each copy pulling its own copies
    /// of the queues behind it and scheduling its share of the flows by
    /// the same discipline (priority, round robin, deficit, stride). Not
    /// a class whose rate or order would have to be shared out (a shaper,
    /// RatedUnqueue, TimeSortedSched).
    pub fn replicable_with_queues(mut self) -> ClassSpec {
        self.replicable_with_queues = true;
        self
    }

    /// How the class's elements move where the IP header starts
    /// ([`HeaderChange`]; [`HeaderChange::Keeps`] unless said).
    pub fn header_change(mut self, change: HeaderChange) -> ClassSpec {
        self.header_change = change;
        self
    }

    /// What Click's alignment analysis takes the class's elements to need
    /// or give ([`ClickAlignment`]; [`ClickAlignment::Passes`] unless said).
    pub fn click_alignment(mut self, a: ClickAlignment) -> ClassSpec {
        self.click_alignment = a;
        self
    }

    /// The class is a source whose rate `handler` sets, in packets per
    /// second ([`RateHandler`]); `may_run_freely` if a configuration may
    /// ask it to send as fast as it can.
    pub fn rate(mut self, handler: &'static str, may_run_freely: bool) -> ClassSpec {
        self.rate = Some(RateHandler {
            handler,
            may_run_freely,
        });
        self
    }
}

/// The set of known element classes and requirements.
#[derive(Clone, Default)]
pub struct Registry {
    classes: BTreeMap<&'static str, ClassSpec>,
    aliases: BTreeMap<&'static str, &'static str>,
    requirements: Vec<&'static str>,
    packet_filter: Option<crate::trace::FilterCompiler>,
}

impl Registry {
    pub fn new() -> Registry {
        let mut r = Registry::default();
        for req in [
            "paraclick",
            "userlevel",
            "smpclick",
            "ip",
            "standard",
            "batch",
            // Click's request for compactly printed configurations: accepted.
            "compact_config",
        ] {
            r.requirements.push(req);
        }
        r
    }

    /// Adds a class (replacing one of the same name).
    pub fn register(&mut self, spec: ClassSpec) {
        self.classes.insert(spec.name, spec);
    }

    /// `alias` names the same class as `target` (e.g. LookupIPRoute).
    pub fn alias(&mut self, alias: &'static str, target: &'static str) {
        self.aliases.insert(alias, target);
    }

    /// A package name `require(package NAME)` accepts.
    pub fn provide(&mut self, requirement: &'static str) {
        self.requirements.push(requirement);
    }

    /// Gives the routers built from this registry a filter language for
    /// `trace add N FILTER` (the element library gives IPFilter's).
    pub fn set_packet_filter(&mut self, c: crate::trace::FilterCompiler) {
        self.packet_filter = Some(c);
    }

    /// The filter language, if one was given.
    pub fn packet_filter(&self) -> Option<crate::trace::FilterCompiler> {
        self.packet_filter
    }

    pub fn get(&self, name: &str) -> Option<&ClassSpec> {
        let name = self.aliases.get(name).copied().unwrap_or(name);
        self.classes.get(name)
    }

    /// Sets the documentation of a registered class.
    pub fn set_doc(&mut self, name: &str, doc: &'static str) {
        if let Some(c) = self.classes.get_mut(name) {
            c.doc = doc;
        }
    }

    /// The package names `require` accepts.
    pub fn packages(&self) -> &[&'static str] {
        &self.requirements
    }

    pub fn provides(&self, req: &str) -> bool {
        self.requirements.contains(&req)
    }

    /// All class names, aliases included, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self
            .classes
            .keys()
            .copied()
            .chain(self.aliases.keys().copied())
            .collect();
        v.sort_unstable();
        v
    }

    /// The documentation of a class (its own source file's header).
    pub fn doc(&self, name: &str) -> Option<&'static str> {
        self.get(name).map(|c| c.doc)
    }

    /// The Rust type class `name` builds (`std::any::type_name`), if the
    /// class records one ([`ClassSpec::rust_type`](field@ClassSpec::rust_type)).
    pub fn rust_type(&self, name: &str) -> Option<&'static str> {
        self.get(name)?.rust_type.map(|t| t.name)
    }

    /// Whether class `name`'s elements are fused on input 0
    /// ([`ClassSpec::fuses`](field@ClassSpec::fuses)); false for an
    /// unknown class.
    pub fn fuses(&self, name: &str) -> bool {
        self.get(name).is_some_and(|c| c.fuses)
    }
}

pub(crate) fn allowed_file(
    policy: &paraclick_lang::FilePolicy,
    path: &str,
) -> Result<std::path::PathBuf, String> {
    if path == "-" && !policy.is_any() {
        return Err(
            "-: a configuration from a control socket may not read standard input".to_string(),
        );
    }
    policy.allowed(std::path::Path::new(path))
}

/// Whether [`ConfigCx::warn`] prints (on by default; Click's `-w` turns
/// warnings off).
static WARNINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether configuration warnings are printed.
pub fn warnings_enabled() -> bool {
    WARNINGS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Turns configuration warnings on or off for the whole process.
pub fn set_warnings(on: bool) {
    WARNINGS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether configuration messages and warnings take Click's form.
static CLICK_MESSAGES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether [`ConfigCx::message`] and [`ConfigCx::warn`] print in Click's
/// form (`FILE:LINE: While configuring 'x :: C':` then the message
/// indented) rather than paraclick's (`x :: C: warning: ...`).
pub fn click_messages() -> bool {
    CLICK_MESSAGES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Sets the form of configuration messages for the whole process (the
/// command line's `--errors click`).
pub fn set_click_messages(on: bool) {
    CLICK_MESSAGES.store(on, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl Element for Nothing {}

    fn plain() -> ClassSpec {
        ClassSpec::element("Plain", "1/1", "a", |_| Ok(Nothing))
    }

    #[test]
    fn a_class_declares_nothing_unless_it_says_so() {
        let c = plain();
        assert!(c.shared_when.is_empty() && !c.sums_replicas && !c.replicable_with_queues);
        assert_eq!(c.flow_key, FlowKey::AddressesAndPorts);
        assert_eq!(c.header_change, HeaderChange::Keeps);
        assert_eq!(c.click_alignment, ClickAlignment::Passes);
        assert_eq!(c.rate, None);
    }

    #[test]
    fn each_fact_is_what_its_method_says() {
        let c = plain()
            .shared_when(&[("CALL", "a call counts all flows")])
            .sums_replicas()
            .flow_key(FlowKey::Addresses)
            .replicable_with_queues()
            .header_change(HeaderChange::Prepends(4))
            .click_alignment(ClickAlignment::Needs {
                modulus: 4,
                offset: 2,
            })
            .rate("speed", true);
        assert_eq!(c.shared_when, &[("CALL", "a call counts all flows")]);
        assert!(c.sums_replicas && c.replicable_with_queues);
        assert_eq!(c.flow_key, FlowKey::Addresses);
        assert_eq!(c.header_change, HeaderChange::Prepends(4));
        assert_eq!(
            c.click_alignment,
            ClickAlignment::Needs {
                modulus: 4,
                offset: 2
            }
        );
        assert_eq!(
            c.rate,
            Some(RateHandler {
                handler: "speed",
                may_run_freely: true
            })
        );
        // An alias has its target's facts.
        let mut reg = Registry::new();
        reg.register(c);
        reg.alias("Other", "Plain");
        assert_eq!(reg.get("Other").unwrap().rate.unwrap().handler, "speed");
    }
}
