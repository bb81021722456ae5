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

use paraclick_runtime::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Discard {
    count: PerThreadCount,
    pull: bool,
    active: AtomicBool,
    burst: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Discard", "1/0", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Discard, String> {
    let mut a = cx.args();
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let burst = a.read::<usize>("BURST").unwrap_or(32).max(1);
    a.complete()?;
    Ok(Discard {
        count: PerThreadCount::new(cx.nthreads),
        pull: cx.input_is_pull(0),
        active: AtomicBool::new(active),
        burst,
    })
}

impl Discard {
    pub fn count(&self) -> u64 {
        self.count.get()
    }
}

impl Element for Discard {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset_counts", |e, _, _| {
            e.count.reset();
            Ok(())
        }),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    #[inline]
    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        self.count.add(cx.thread(), batch.len() as u64);
        drop(batch);
    }

    #[inline]
    fn push_packet(&self, cx: &mut Cx<'_>, _port: usize, p: Packet) {
        self.count.add(cx.thread(), 1);
        drop(p);
    }

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.pull {
            let t = ix.add_task();
            ix.sleep_when_empty(t);
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            return false;
        }
        // The first packet comes alone, without a batch: behind a source
        // of one packet per run (Click's BURST 1) the queue rarely holds
        // more, and an empty queue costs no batch either. If the queue saw
        // itself empty after it, the batch pull is skipped too.
        if cx.pull_packet(0).is_none() {
            return false;
        }
        self.count.add(cx.thread(), 1);
        if self.burst == 1 || cx.upstream_drained() {
            return true;
        }
        if let Some(b) = cx.pull(0, self.burst - 1) {
            self.count.add(cx.thread(), b.len() as u64);
        }
        true
    }
}
