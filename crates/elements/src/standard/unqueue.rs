//! # Unqueue
//!
//! Unqueue([BURST, keywords ACTIVE, LIMIT])
//!
//! Pulls packets from its input and pushes them to its output: the bridge
//! from a pull path to a push path, and a pipeline stage that a thread can
//! own.
//!
//! Ports: 1 input (pull), 1 output (push). It owns a task.
//!
//! Arguments:
//! - `BURST` (integer, default 32, at most 65536): the most packets moved per task run
//!   (Click's default is 1; batches make 32 cheap, and any value works).
//! - `ACTIVE` (boolean, default true): whether the task runs.
//! - `LIMIT` (integer, default no limit): stop after this many packets.
//!
//! Inactive, or at its LIMIT, it costs no CPU however full its queue: its
//! thread sleeps until a handler write (`active`, `reset`) wakes it.
//!
//! Handlers:
//! - `count` (read): packets moved.
//! - `reset` (write): resets the count.
//! - `active` (read/write), `burst` (read/write), `limit` (read).
//!
//! Example:
//!
//!     FromDump(in.pcap) -> Queue -> Unqueue(BURST 8) -> Counter -> Discard;

use crate::util::write_burst;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

pub struct Unqueue {
    count: PerThreadCount,
    active: AtomicBool,
    burst: AtomicUsize,
    limit: Option<u64>,
    moved: AtomicU64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Unqueue", "1/1", "l/h", make)
        .shared("pulls one queue: one task for all its flows")
        .metadata_only()
        .replicable_with_queues()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Unqueue, String> {
    let mut a = cx.args();
    let burst = a.read_p::<usize>("BURST").unwrap_or(32);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let limit = a.read::<i64>("LIMIT").unwrap_or(-1);
    a.complete()?;
    crate::util::check_burst(burst)?;
    Ok(Unqueue {
        count: PerThreadCount::new(cx.nthreads),
        active: AtomicBool::new(active),
        burst: AtomicUsize::new(burst),
        limit: (limit >= 0).then_some(limit as u64),
        moved: AtomicU64::new(0),
    })
}

impl Element for Unqueue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset", |e, _, _| {
            e.count.reset();
            e.moved.store(0, Ordering::Relaxed);
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
        Handler::rw(
            "burst",
            |e, _| e.burst.load(Ordering::Relaxed).to_string(),
            |e, v, hx| write_burst(&e.burst, v, hx),
        ),
        Handler::read("limit", |e, _| {
            e.limit
                .map(|l| l.to_string())
                .unwrap_or_else(|| "-1".into())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let t = ix.add_task();
        ix.sleep_when_empty(t);
        Ok(())
    }

    #[inline]
    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            // Only a write to `active` gives it work: its worker sleeps
            // until a handler write instead of polling the full queue.
            cx.wake_when_written();
            return false;
        }
        let mut want = self.burst.load(Ordering::Relaxed);
        if let Some(limit) = self.limit {
            let done = self.moved.load(Ordering::Relaxed);
            want = want.min(limit.saturating_sub(done) as usize);
            if want == 0 {
                // Until `reset`.
                cx.wake_when_written();
                return false;
            }
        }
        let Some(b) = cx.pull(0, want) else {
            return false;
        };
        let n = b.len() as u64;
        self.count.add(cx.thread(), n);
        if self.limit.is_some() {
            self.moved.fetch_add(n, Ordering::Relaxed);
        }
        cx.push(0, b);
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{build, fill, handler, pkts, reg};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Runs `r` in a thread until `f` (given the router) returns; then
    /// stops it.
    fn running(r: &Arc<paraclick_runtime::Router>, f: impl FnOnce(&paraclick_runtime::Router)) {
        let stop = r.stopper();
        let r2 = r.clone();
        let h = std::thread::spawn(move || r2.run());
        f(r);
        stop.stop();
        let _ = h.join();
    }

    fn wait_for(r: &paraclick_runtime::Router, h: &str, want: &str) {
        let t0 = Instant::now();
        while handler(r, h) != want && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(handler(r, h), want, "{h}");
    }

    #[test]
    fn inactive_or_at_its_limit_it_sleeps_until_a_handler_write() {
        // Real time, a second each: a full queue, an Unqueue that may not
        // take from it. Its worker used to poll it (a run every
        // millisecond at best: about a thousand); now it sleeps until a
        // handler write (a run each 100 ms safety wake, after a short
        // spin). The write then wakes it at once.
        for (u, write, want) in [
            ("Unqueue(ACTIVE false)", "u.active", "10"),
            ("Unqueue(LIMIT 3)", "u.reset", "6"),
        ] {
            let r = Arc::new(build(
                &reg(),
                &format!("Idle -> q :: Queue(100) -> u :: {u} -> o :: Counter -> Discard;"),
            ));
            fill(&r, "q", pkts(10, 60));
            running(&r, |r| {
                std::thread::sleep(Duration::from_millis(1000));
                let runs = r.task_runs("u").unwrap();
                assert!(runs < 200, "{u}: {runs} runs in a second of nothing to do");
                r.write_handler(write, if write == "u.active" { "true" } else { "" })
                    .unwrap();
                wait_for(r, "o.count", want);
            });
        }
    }
}
