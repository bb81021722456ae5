//! # HandlerTask
//!
//! HandlerTask(HANDLER \[, keywords ACTIVE, RESCHEDULE])
//!
//! A task that calls a write handler each time it runs.
//!
//! Ports: none. It owns a task.
//!
//! HANDLER is a write handler call, `ELEMENT.HANDLER` or `ELEMENT.HANDLER
//! VALUE` (or a global handler). Each time the task runs, HandlerTask
//! calls it (with VALUE, or an empty value) and counts the run. Unless
//! RESCHEDULE is true, the task runs once and then waits until it is
//! scheduled again through the `scheduled` handler. A handler call that
//! fails prints its error and counts as run. Useful for tests and for
//! benchmarking the cost of a task.
//!
//! Keyword arguments:
//! - `ACTIVE` (boolean, default true): if false, the task is not scheduled
//!   when the router starts.
//! - `RESCHEDULE` (boolean, default false): if true, the task schedules
//!   itself again every time it runs.
//!
//! Handlers:
//! - `count` (read): times the task has run.
//! - `reschedule` (read/write): RESCHEDULE.
//! - `scheduled` (read/write): whether the task is scheduled; write true
//!   to schedule it, false to unschedule it.
//!
//! Example:
//!
//!     c :: Counter -> Discard; Idle -> c;
//!     HandlerTask(c.reset, RESCHEDULE true);

use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub struct HandlerTask {
    handler: String,
    value: String,
    scheduled: AtomicBool,
    reschedule: AtomicBool,
    count: AtomicU64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("HandlerTask", "0/0", "a", make).shared("calls a handler: one task")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<HandlerTask, String> {
    let mut a = cx.args();
    let call = a.read_mp::<String>("HANDLER");
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let reschedule = a.read::<bool>("RESCHEDULE").unwrap_or(false);
    a.complete()?;
    let call = call.trim();
    let (handler, value) = match call.split_once(char::is_whitespace) {
        Some((h, v)) => (h.to_string(), v.trim().to_string()),
        None => (call.to_string(), String::new()),
    };
    Ok(HandlerTask {
        handler,
        value,
        scheduled: AtomicBool::new(active),
        reschedule: AtomicBool::new(reschedule),
        count: AtomicU64::new(0),
    })
}

impl Element for HandlerTask {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.load(Ordering::Relaxed).to_string()),
        Handler::rw(
            "reschedule",
            |e, _| e.reschedule.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.reschedule.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "scheduled",
            |e, _| e.scheduled.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.scheduled.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if !ix.has_handler(&self.handler) {
            return Err(format!("HANDLER: no handler '{}'", self.handler));
        }
        ix.add_task();
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if !self.scheduled.load(Ordering::Relaxed) {
            // Until a write to `scheduled`.
            cx.wake_when_written();
            return false;
        }
        if !self.reschedule.load(Ordering::Relaxed) {
            self.scheduled.store(false, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = cx.handler_cx().write(&self.handler, &self.value) {
            eprintln!("{}: {e}", cx.element_name());
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn calls_the_handler_once_then_when_scheduled() {
        let r = build(
            &reg(),
            "Idle -> q :: Queue(5) -> Discard(ACTIVE false); h :: HandlerTask(q.capacity 9, ACTIVE true);",
        );
        run_until(&r, |r| handler(r, "h.count") == "1");
        assert_eq!(handler(&r, "q.capacity"), "9", "the value is passed");
        assert_eq!(handler(&r, "h.scheduled"), "false");
        let r = build(
            &reg(),
            "Idle -> q :: Queue(5) -> Discard(ACTIVE false); h :: HandlerTask(q.capacity 9, ACTIVE false);",
        );
        r.write_handler("h.scheduled", "true").unwrap();
        run_until(&r, |r| handler(r, "h.count") == "1");
        assert_eq!(handler(&r, "q.capacity"), "9");
    }

    #[test]
    fn reschedule_runs_it_again_and_again() {
        let r = build(
            &reg(),
            "Idle -> q :: Queue(5) -> Discard(ACTIVE false); h :: HandlerTask(q.reset, RESCHEDULE true);",
        );
        run_until(&r, |r| handler(r, "h.count").parse::<u64>().unwrap() >= 10);
        assert_eq!(handler(&r, "h.reschedule"), "true");
        assert_eq!(handler(&r, "h.scheduled"), "true");
    }

    #[test]
    fn an_unknown_handler_is_an_error() {
        let e = build_err(&reg(), "HandlerTask(nobody.reset);");
        assert!(e.contains("HANDLER: no handler 'nobody.reset'"), "{e}");
        let e = build_err(&reg(), "HandlerTask;");
        assert!(e.contains("missing mandatory HANDLER argument"), "{e}");
    }
}
