//! # NotifierQueue
//!
//! NotifierQueue(\[CAPACITY])
//!
//! A first-in-first-out queue with an empty notifier only: pull tasks
//! downstream sleep while it is empty and wake at the next packet, but
//! sources upstream are not told when it is full (they keep pushing and
//! the queue drops, counted). Default CAPACITY 1000.
//!
//! Ports: 1 input (push); output 0 (pull), optional output 1 (push) for
//! dropped packets.
//!
//! Handlers: `length`, `highwater_length`, `drops`, `capacity`
//! (read/write), `max_capacity`, `reset_counts`, `reset`, as for `Queue`.
//!
//! Example:
//!
//!     FromDevice(eth0) -> NotifierQueue -> ToDevice(eth1);

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy {
        full_note: false,
        ..Policy::full("NotifierQueue")
    })
}
