//! [`StateCx`]: what `take_state` receives in a hot reconfiguration.

use crate::core::Core;
use crate::ring::{Consumer, Producer};
use std::sync::atomic::Ordering;

/// What [`crate::Element::take_state`] can do: pop the old element's
/// rings, push into the new element's, count packets it had to drop.
///
/// Both routers are quiet while it exists: the old one's workers have left
/// their loops (or exited) and the new one's have not entered theirs (they
/// wait at its start gate, or the caller holds both routers' run locks),
/// so the capabilities it hands out cannot race with a worker.
pub struct StateCx<'a> {
    pub(crate) new: &'a Core,
    pub(crate) new_elem: usize,
    pub(crate) old_threads: usize,
    pub(crate) same_config: bool,
}

impl StateCx<'_> {
    /// The right to pop the old element's rings.
    pub fn consumer(&self) -> Consumer<'_> {
        Consumer::new()
    }

    /// The right to push into this (the new) element's rings.
    pub fn producer(&self) -> Producer<'_> {
        Producer::new()
    }

    /// Counts `n` packets the element could not take (they did not fit) as
    /// its drops.
    pub fn count_drops(&self, n: u64) {
        self.new.handler_drops[self.new_elem].fetch_add(n, Ordering::Relaxed);
    }

    /// Whether the element's configuration string is the same in both
    /// routers. A table the configuration states (routes) is the old
    /// element's, changes made through handlers included, only if so;
    /// otherwise the new configuration says what the table is.
    pub fn same_config(&self) -> bool {
        self.same_config
    }

    /// The new router's clock, as [`crate::Cx::timestamp`] reads it (for
    /// state that ages: what expired by now is not taken).
    pub fn timestamp(&self) -> paraclick_packet::Timestamp {
        self.new.clock.timestamp()
    }

    /// Worker threads of the new router.
    pub fn nthreads(&self) -> usize {
        self.new.nthreads
    }

    /// Worker threads of the old router.
    pub fn old_nthreads(&self) -> usize {
        self.old_threads
    }
}
