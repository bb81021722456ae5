//! # FrontDropQueue
//!
//! FrontDropQueue(\[CAPACITY])
//!
//! A first-in-first-out queue that, when full, drops the packet at its
//! head (the oldest) to make room for the incoming one, so it always
//! holds the newest packets. Default CAPACITY 1000. It has an empty
//! notifier (pull tasks downstream sleep while it is empty); it is never
//! full to a source (an arriving packet always gets in), so it has no
//! full notifier.
//!
//! Ports: 1 input (push); output 0 (pull), optional output 1 (push) that
//! receives the packets dropped from the head.
//!
//! Handlers: `length`, `highwater_length`, `drops` (packets dropped from
//! the head), `capacity` (read/write), `max_capacity`, `reset_counts`,
//! `reset`, as for `Queue`.
//!
//! Example:
//!
//!     FromDevice(eth0) -> FrontDropQueue(50) -> ToDevice(eth1);

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy {
        full_note: false,
        front_drop: true,
        ..Policy::full("FrontDropQueue")
    })
}
