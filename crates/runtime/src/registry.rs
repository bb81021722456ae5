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
    /// Why the class's elements drop packets: a drop names a reason by its
    /// index here ([`crate::Verdict::DropFor`]). Empty unless the class
    /// says [`ClassSpec::drop_reasons`](method@ClassSpec::drop_reasons).
    pub drop_reasons: &'static [&'static str],
    pub make: MakeFn,
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
        Self::node(name, port_count, processing, move |cx| {
            make(cx).map(|a| Box::new(ActionNode(a)) as Box<dyn Node>)
        })
    }

    /// An element class whose elements play `role` (see [`Role`]).
    fn in_role<E: Element, R: Role<E> + Copy>(
        name: &'static str,
        port_count: &'static str,
        processing: &'static str,
        make: fn(&mut ConfigCx<'_>) -> Result<E, String>,
        role: R,
    ) -> ClassSpec {
        Self::node(name, port_count, processing, move |cx| {
            make(cx).map(|e| Box::new(ElementNode(e, role)) as Box<dyn Node>)
        })
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
            phase: 0,
            doc: "",
            reads_data: true,
            flow_state: FlowState::Undeclared,
            kind: Kind::Plain,
            drop_reasons: &[],
            make: Arc::new(make),
        }
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

    /// The part the class's elements play ([`Kind`]).
    pub fn kind(mut self, kind: Kind) -> ClassSpec {
        self.kind = kind;
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
}

/// The set of known element classes and requirements.
#[derive(Clone, Default)]
pub struct Registry {
    classes: BTreeMap<&'static str, ClassSpec>,
    aliases: BTreeMap<&'static str, &'static str>,
    requirements: Vec<&'static str>,
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
