//! Handlers: named read and write operations on elements (`c.count`,
//! `q.reset`), Click's interface for inspecting and controlling a router.

use crate::router::Core;
use std::time::{Duration, Instant};

/// What a handler call can reach: the router (other handlers, stop) and the
/// element being called.
#[derive(Clone, Copy)]
pub struct HandlerCx<'r> {
    pub(crate) core: &'r Core,
    pub(crate) elem: usize,
}

impl<'r> HandlerCx<'r> {
    /// Reads `element.handler` (or a global handler).
    pub fn read(&self, spec: &str) -> Result<String, String> {
        self.core.read_handler(spec, Some(self.elem))
    }

    /// Writes `element.handler`.
    pub fn write(&self, spec: &str, value: &str) -> Result<(), String> {
        self.core.write_handler(spec, value, Some(self.elem))
    }

    /// Asks the router to stop (through the driver if there is one).
    pub fn request_stop(&self) {
        self.core.request_stop();
    }

    /// Stops the router now, bypassing any driver.
    pub fn stop_now(&self) {
        self.core.stop_now();
    }

    /// Stop requests made so far.
    pub fn stop_requests(&self) -> u64 {
        self.core
            .stop_requests
            .load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn element_name(&self) -> &'r str {
        &self.core.slots[self.elem].name
    }

    pub fn element_index(&self) -> usize {
        self.elem
    }

    pub fn nthreads(&self) -> usize {
        self.core.nthreads
    }

    /// Schedules a timer of the called element (on its home thread).
    pub fn schedule_after(&self, timer: usize, d: Duration) {
        let t = self.core.home_thread(self.elem);
        self.core
            .schedule_timer(t, self.elem, timer, Instant::now() + d);
    }

    pub fn unschedule(&self, timer: usize) {
        self.core.unschedule_timer(self.elem, timer);
    }

    /// Index of a named element.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.core.names.get(name).copied()
    }
}
