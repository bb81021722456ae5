//! # QuickNoteQueue
//!
//! QuickNoteQueue(\[CAPACITY])
//!
//! A first-in-first-out queue with empty and full notifiers whose empty
//! notification takes place as soon as a pull finds it empty. paraclick's
//! `Queue` notifies that way too (a sleeping puller costs nothing and is
//! woken by the next push), so this is `Queue` under Click's name.
//! Default CAPACITY 1000.
//!
//! Ports: 1 input (push); output 0 (pull), optional output 1 (push) for
//! dropped packets.
//!
//! Handlers: `length`, `highwater_length`, `drops`, `capacity`
//! (read/write), `max_capacity`, `reset_counts`, `reset`, as for `Queue`.
//!
//! Example:
//!
//!     InfiniteSource -> QuickNoteQueue(100) -> Unqueue -> Discard;

use super::queue::{spec_for, Policy};
use paraclick_runtime::ClassSpec;

pub fn spec() -> ClassSpec {
    spec_for(Policy::full("QuickNoteQueue"))
}
