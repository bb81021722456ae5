//! # Discard
//!
//! Discard([keywords ACTIVE, BURST])
//!
//! Drops all packets it receives.
//!
//! Ports: 1 input, no outputs. Processing: agnostic. In pull context it
//! owns a task that pulls up to BURST packets at a time and frees them.
//!
//! Keywords:
//! - `ACTIVE` (boolean, default true): in pull context, whether to pull.
//! - `BURST` (integer, default 32): packets per pull.
//!
//! Discarded packets are the router's output (a sink), not drops.
//!
//! Handlers:
//! - `count` (read): packets discarded.
//! - `reset_counts` (write): resets the count.
//! - `active` (read/write): the ACTIVE setting.
//!
//! Example:
//!
//!     InfiniteSource(LIMIT 1000) -> Queue -> d :: Discard;

use crate::util::parse_bool;
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Counter, Cx, Element, HandlerCx, HandlerInfo, InitCx,
};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Discard {
    count: Counter,
    pull: bool,
    active: AtomicBool,
    burst: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::new("Discard", "1/0", "a", make)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Box<dyn Element>, String> {
    let mut a = cx.args();
    let active = a.read::<bool>("ACTIVE")?.unwrap_or(true);
    let burst = a.read::<usize>("BURST")?.unwrap_or(32).max(1);
    a.complete()?;
    Ok(Box::new(Discard {
        count: Counter::new(cx.nthreads),
        pull: cx.input_is_pull(0),
        active: AtomicBool::new(active),
        burst,
    }))
}

impl Discard {
    pub fn count(&self) -> u64 {
        self.count.get()
    }
}

const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("count"),
    HandlerInfo::write("reset_counts"),
    HandlerInfo::rw("active"),
];

impl Element for Discard {
    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.count.add(cx.thread(), batch.len() as u64);
        drop(batch);
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.pull {
            ix.add_task();
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            return false;
        }
        match cx.pull(0, self.burst) {
            Some(b) => {
                self.count.add(cx.thread(), b.len() as u64);
                true
            }
            None => false,
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str, _hx: &HandlerCx<'_>) -> Option<String> {
        match name {
            "count" => Some(self.count.get().to_string()),
            "active" => Some(self.active.load(Ordering::Relaxed).to_string()),
            _ => None,
        }
    }

    fn write_handler(
        &self,
        name: &str,
        v: &str,
        _hx: &HandlerCx<'_>,
    ) -> Option<Result<(), String>> {
        match name {
            "reset_counts" => {
                self.count.reset();
                Some(Ok(()))
            }
            "active" => Some(parse_bool(v).map(|b| self.active.store(b, Ordering::Relaxed))),
            _ => None,
        }
    }
}
