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
//!
//! # MSQueue
//!
//! MSQueue(\[CAPACITY])
//!
//! Stores packets in a FIFO queue that many threads may push into and
//! one pulls from (Click's deprecated multiple-producer queue; Click
//! recommends ThreadSafeQueue instead). paraclick's queues are lock-free
//! rings whose modes the runtime chooses from the thread plan, so this is
//! the same queue as ThreadSafeQueue: it drops incoming packets when it
//! already holds CAPACITY packets (default 1000).
//!
//! Ports: 1 input (push); output 0 (pull), optional output 1 (push) for
//! dropped packets.
//!
//! Handlers: `length`, `drops` (Click's documentation says `dropd`),
//! `capacity` (read/write), and the rest of Queue's.

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy::full("ThreadSafeQueue"))
}

/// MSQueue: the same queue under Click's older name.
pub fn ms_spec() -> ClassSpec {
    spec_for(Policy::full("MSQueue"))
}
