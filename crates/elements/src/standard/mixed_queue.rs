//! # MixedQueue
//!
//! MixedQueue(\[CAPACITY])
//!
//! A queue whose input 0 is first-in-first-out and input 1
//! last-in-first-out: a packet pushed on input 1 goes to the head of the
//! queue and is pulled next. The queue is full at CAPACITY packets
//! (default 1000); then it drops packets arriving on input 0, and for a
//! packet arriving on input 1 it drops the packet at the queue's tail (the
//! one that would leave last: the newest packet of input 0, else the oldest
//! of input 1) to make room, as Click's MixedQueue does.
//! After pushes of A and B on input 0, C on input 1, D on input 0 and E
//! on input 1, the queue is, head first, E C A B D. It has an empty
//! notifier (pull tasks downstream sleep while it is empty).
//!
//! Ports: 2 inputs (push); output 0 (pull), optional output 1 (push) for
//! dropped packets.
//!
//! Handlers: `length`, `highwater_length`, `drops`, `capacity`
//! (read/write), `max_capacity`, `reset_counts`, `reset`, as for `Queue`.
//!
//! Example:
//!
//!     bulk -> [0]q :: MixedQueue; urgent -> [1]q; q -> ToDevice(eth0);

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy {
        port_count: "2/1-2",
        full_note: false,
        lifo_input: true,
        ..Policy::full("MixedQueue")
    })
}
