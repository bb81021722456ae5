//! [`HandlerCx`]: what a handler call receives.

use crate::args::FromArg;
use crate::core::Core;
use crate::handler::{read, write};
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
        read(self.core, spec, Some(self.elem))
    }

    /// Writes `element.handler`.
    pub fn write(&self, spec: &str, value: &str) -> Result<(), String> {
        write(self.core, spec, value, Some(self.elem))
    }

    /// `own` plus handler `h` of every element named in `others`, each
    /// read as a number: the handlers of an element that reports for its
    /// replicas too (Counter's and FromDevice's REPLICAS).
    pub fn sum_with<T>(&self, own: T, others: &[String], h: &str) -> Result<T, String>
    where
        T: std::str::FromStr + std::ops::AddAssign,
    {
        let mut sum = own;
        for r in others {
            let v = self.read(&format!("{r}.{h}"))?;
            sum += v
                .trim()
                .parse::<T>()
                .map_err(|_| format!("REPLICAS: {r}.{h} read '{v}'"))?;
        }
        Ok(sum)
    }

    /// Writes handler `h` (with an empty value) of every element named in
    /// `others`: the reset of an element that reports for its replicas.
    pub fn write_each(&self, others: &[String], h: &str) -> Result<(), String> {
        for r in others {
            self.write(&format!("{r}.{h}"), "")?;
        }
        Ok(())
    }

    /// Parses a written value with the configuration's argument parser
    /// (the same `bool`, `IPAddress`, AddressInfo names...).
    pub fn arg<T: FromArg>(&self, value: &str) -> Result<T, String> {
        T::from_arg(value, &self.core.arg_env)
    }

    /// Records in the called element's configuration (its `config`
    /// handler) that a write handler set one of its arguments, as Click's
    /// reconfiguring handlers do: the positional argument at `position` if
    /// the configuration has one, otherwise `KEYWORD value` replacing
    /// every `KEYWORD` argument (see
    /// [`paraclick_lang::args::set_keyword_arg`]).
    pub fn set_config_arg(&self, position: Option<usize>, keyword: &str, value: &str) {
        let s = &self.core.slots[self.elem];
        let mut live = s.live_config.lock().unwrap_or_else(|e| e.into_inner());
        let now = live.as_deref().unwrap_or(&s.config);
        *live = Some(paraclick_lang::args::set_keyword_arg(
            now, position, keyword, value,
        ));
    }

    /// The called element's configuration as its `config` handler reads
    /// it: the text it was configured with, or what a write handler last
    /// recorded ([`HandlerCx::set_config`], [`HandlerCx::set_config_arg`]).
    pub fn config(&self) -> String {
        let s = &self.core.slots[self.elem];
        let live = s.live_config.lock().unwrap_or_else(|e| e.into_inner());
        live.clone().unwrap_or_else(|| s.config.clone())
    }

    /// Records `text` as the called element's whole configuration: an
    /// element reconfigured through its own `config` write handler
    /// (Click's live reconfiguration) calls this once the new
    /// configuration has taken effect.
    pub fn set_config(&self, text: &str) {
        let s = &self.core.slots[self.elem];
        *s.live_config.lock().unwrap_or_else(|e| e.into_inner()) = Some(text.to_string());
    }

    /// Prints a warning about the called element from a write handler on
    /// standard error, as configuration warnings are (`NAME :: CLASS:
    /// warning: MESSAGE`, or in Click's form `While writing 'NAME.HANDLER':`
    /// then `  warning: MESSAGE`), unless warnings are off (`-w`).
    pub fn warn(&self, handler: &str, message: &str) {
        if !crate::registry::warnings_enabled() {
            return;
        }
        let esc = paraclick_lang::span::escape;
        let s = &self.core.slots[self.elem];
        if crate::registry::click_messages() {
            eprintln!(
                "While writing '{}.{}':\n  warning: {}",
                esc(&s.name),
                esc(handler),
                esc(message)
            );
        } else {
            eprintln!(
                "{} :: {}: warning: {}",
                esc(&s.name),
                esc(&s.class),
                esc(message)
            );
        }
    }

    /// The empty notifiers a pull task at input `port` of the called
    /// element would listen to, and their states (see [`crate::notifier`]).
    pub fn upstream_signal(&self, port: usize) -> crate::notifier::SignalView {
        crate::notifier::upstream_view(self.core, self.elem, port)
    }

    /// The full notifiers a source at output `port` of the called element
    /// would wait on, and their states.
    pub fn downstream_signal(&self, port: usize) -> crate::notifier::SignalView {
        crate::notifier::downstream_view(self.core, self.elem, port)
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

    /// Monotonic time from the router's clock (see [`crate::Cx::now`]).
    pub fn now(&self) -> Instant {
        self.core.clock.now()
    }

    /// Wall-clock time for timestamps, from the router's clock.
    pub fn timestamp(&self) -> paraclick_packet::Timestamp {
        self.core.clock.timestamp()
    }

    /// Schedules a timer of the called element (on its home thread).
    pub fn schedule_after(&self, timer: usize, d: Duration) {
        let t = self.core.home_thread(self.elem);
        self.core
            .schedule_timer(t, self.elem, timer, self.core.clock.now() + d);
    }

    pub fn unschedule(&self, timer: usize) {
        self.core.unschedule_timer(self.elem, timer);
    }

    /// Schedules timer `timer` of element `elem` (on that element's home
    /// thread): a shared table's handler waking the elements that use it.
    /// Does nothing if there is no element `elem`.
    pub fn schedule_element_after(&self, elem: usize, timer: usize, d: Duration) {
        if elem < self.core.slots.len() {
            let t = self.core.home_thread(elem);
            self.core
                .schedule_timer(t, elem, timer, self.core.clock.now() + d);
        }
    }

    /// Index of a named element.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.core.names.get(name).copied()
    }

    /// Runs `f` as an extra consumer of the called element's ring (a
    /// queue's handler that drains it), safely from any thread: see
    /// [`crate::ring`] and the crossing protocol.
    pub fn as_extra_consumer<R>(&self, f: impl FnOnce(&crate::ring::Consumer<'_>) -> R) -> R {
        crate::crossing::as_extra_consumer(self.core, self.elem, f)
    }

    /// A handler context for element `elem` instead (an element that
    /// operates on another, such as QueueYankTest on its queue); the
    /// called element's own context if there is no element `elem`.
    pub fn on(&self, elem: usize) -> HandlerCx<'r> {
        HandlerCx {
            core: self.core,
            elem: if elem < self.core.slots.len() {
                elem
            } else {
                self.elem
            },
        }
    }

    /// Prints `NAME :: CLASS: MESSAGE` about the called element on
    /// standard error (a test element's report).
    pub fn message(&self, message: &str) {
        let esc = paraclick_lang::span::escape;
        let s = &self.core.slots[self.elem];
        eprintln!("{} :: {}: {}", esc(&s.name), esc(&s.class), esc(message));
    }

    /// Counts `n` packets as dropped by the called element (packets a
    /// handler discarded, such as a queue's `reset`).
    pub fn count_drops(&self, n: u64) {
        self.core.handler_drops[self.elem].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// [`HandlerCx::count_drops`] for reason `reason` of the element's
    /// class (one it does not declare counts as unspecified).
    pub fn count_drops_for(&self, reason: u8, n: u64) {
        self.count_drops(n);
        if let Some(s) = self.core.reasons.slot(self.elem, reason) {
            self.core.reasons.off_path[s].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Element `i` as its concrete type.
    pub fn element<T: 'static>(&self, i: usize) -> Option<&'r T> {
        self.core.slots.get(i)?.element.as_any().downcast_ref()
    }

    /// What element `i` provides as `T` (see [`crate::InitCx::cast`]).
    pub fn cast<T: ?Sized + 'static>(&self, i: usize) -> Option<&'r T> {
        crate::provide::cast(&*self.core.slots.get(i)?.element)
    }
}
