//! The paraclick runtime: the `Element` trait, ports and batches, the
//! registry of element classes, router instantiation, per-thread workers
//! with task worklists and timers, handlers, and the building blocks
//! elements share (per-thread state and counters, argument parsing, rings).

pub mod args;
pub mod capture;
pub mod compiled;
pub mod contention;
pub mod control;
pub(crate) mod core;
pub use paraclick_packet::clock;
pub(crate) mod crossing;
pub mod cx;
pub mod drops;
pub mod element;
pub mod fault;
pub mod handler;
pub mod hot;
pub mod ifaddr;
pub mod notifier;
pub mod perthread;
mod plan;
pub mod prelude;
pub mod provide;
pub mod registry;
pub mod ring;
pub mod router;
pub mod sched;
pub mod share;
pub mod signals;
pub mod testing;
pub mod time;
pub mod timer;
pub mod trace;

pub use args::{ArgEnv, Args, FromArg};
pub use compiled::{CompiledPush, CompiledTasks, ElemRef};
pub use cx::{ConfigCx, Cx, HandlerCx, InitCx, StateCx};
pub use element::{
    push_verdicts, Action, DriverElement, DynHandler, Element, Handler, HandlerInfo, Hop, HopCode,
    Node, QueueElement, RoutingElement, Verdict,
};
pub use notifier::Notifier;
pub use perthread::{PerThread, PerThreadCount};
pub use registry::{
    ClassSpec, ClickAlignment, DeadCode, FlowKey, FlowState, HeaderChange, Kind, RateHandler,
    Registry, RustType,
};
pub use router::{BuildOptions, Router};
pub use time::RouterClock;

pub use paraclick_packet::{Batch, Packet};
