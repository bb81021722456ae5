//! # SimpleQueue
//!
//! SimpleQueue(\[CAPACITY])
//!
//! Stores packets in a first-in-first-out queue and drops incoming packets
//! when it already holds CAPACITY packets (default 1000), without
//! notification: pull tasks downstream keep polling it, and sources
//! upstream never wait for room.
//!
//! Ports: 1 input (push); output 0 (pull), optional output 1 (push) for
//! dropped packets.
//!
//! Handlers: `length`, `highwater_length`, `drops`, `capacity`
//! (read/write), `max_capacity`, `reset_counts`, `reset`, as for
//! `Queue` (one implementation serves the whole family; see `Queue`).
//!
//! Example:
//!
//!     src :: InfiniteSource -> SimpleQueue(64) -> Unqueue -> Discard;

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy {
        empty_note: false,
        full_note: false,
        ..Policy::full("SimpleQueue")
    })
}
