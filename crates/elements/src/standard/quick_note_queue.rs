//! # QuickNoteQueue
//!
//! QuickNoteQueue(\[CAPACITY])
//!
//! A first-in-first-out queue with empty and full notifiers whose empty
//! notification takes place as soon as a pull finds it empty: its pullers
//! may sleep at once (a `Queue` waits for a few empty pulls in a row, or
//! a while if its producer is on another thread, so that a puller that
//! empties it on every run does not pay a sleep and a wake-up per
//! packet). Otherwise it is `Queue`. Default CAPACITY 1000.
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
    spec_for(Policy {
        quick_note: true,
        ..Policy::full("QuickNoteQueue")
    })
}
