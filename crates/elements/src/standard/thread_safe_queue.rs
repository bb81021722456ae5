//! # ThreadSafeQueue
//!
//! ThreadSafeQueue(\[CAPACITY])
//!
//! A first-in-first-out queue that any number of threads may push into
//! and pull from at once, with empty and full notifiers, like `Queue`. In
//! paraclick every queue is safe for concurrent pushers and pullers (the
//! runtime chooses the ring's modes from the thread plan), so this is
//! `Queue` under Click's name. Default CAPACITY 1000.
//!
//! Ports: 1 input (push); output 0 (pull), optional output 1 (push) for
//! dropped packets.
//!
//! Handlers: `length`, `highwater_length`, `drops`, `capacity`
//! (read/write), `max_capacity`, `reset_counts`, `reset`, as for `Queue`.
//!
//! Example:
//!
//!     a :: FromDevice(eth0) -> q :: ThreadSafeQueue; b :: FromDevice(eth1) -> q;
//!     q -> ToDevice(eth2);

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy::full("ThreadSafeQueue"))
}
