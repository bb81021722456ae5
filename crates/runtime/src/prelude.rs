//! What an element file needs, in one import:
//!
//! ```
//! use paraclick_runtime::prelude::*;
//! ```
//!
//! The element traits and the result types of their methods, the five
//! contexts an element is given, packets and batches, the argument
//! parser, the class specification, handlers, and per-thread state.
//! Anything else (rings, notifier internals, the router) is imported by
//! path where it is used.

pub use crate::args::{ArgEnv, Args, FromArg};
pub use crate::cx::{ConfigCx, Cx, HandlerCx, InitCx, StateCx};
pub use crate::element::{
    push_verdicts, Action, DriverElement, DynHandler, Element, Handler, Hop, QueueElement,
    RoutingElement, Verdict,
};
pub use crate::notifier::Notifier;
pub use crate::perthread::{PerThread, PerThreadCount};
pub use crate::registry::{ClassSpec, DeadCode, FlowKey, FlowState, HeaderChange, Kind};
pub use paraclick_packet::{Batch, Packet};
