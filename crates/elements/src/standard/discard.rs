//! # Discard
//!
//! Discard([keywords ACTIVE, BURST])
//!
//! Drops all packets it receives.
//!
//! Ports: 1 input, no outputs. Processing: agnostic. In pull context it
//! owns a task that pulls up to BURST packets each time it runs and frees
//! them. The default is Click's one packet per task run, so that what
//! happens upstream of a pull Discard (a queue's length, a Script or
//! handler call between two pulls, the order in which it drains several
//! queues) is what happens under Click; an explicit `BURST N` drains up
//! to N packets a run, which costs fewer task runs.
//!
//! Keywords:
//! - `ACTIVE` (boolean, default true): in pull context, whether to pull.
//! - `BURST` (integer, default 1): in pull context, packets per task
//!   run.
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

/// A pull Discard's default `BURST`: one packet per task run, as Click's
/// Discard pulls (the rule of the trace sources' default BURST 1).
pub const PULL_BURST: usize = 1;

pub struct Discard {
    count: PerThreadCount,
    pull: bool,
    active: AtomicBool,
    burst: usize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Discard", "1/0", "a", make)
        .dead_code(DeadCode::PullSink)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Discard, String> {
    let mut a = cx.args();
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let burst = a.read::<usize>("BURST").unwrap_or(PULL_BURST).max(1);
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
        self.run_task_with(cx, |cx| cx.pull_packet(0))
    }
}

impl Discard {
    /// A pull Discard's task run, its first packet pulled by `pull`
    /// instead of through input 0's dynamic pull: for a program compiled
    /// for one configuration, which calls input 0's peer directly. `pull`
    /// is called with this element running and must leave it running;
    /// the rest of a burst is pulled dynamically.
    #[inline(always)]
    pub fn run_task_with(
        &self,
        cx: &mut Cx<'_>,
        pull: impl FnOnce(&mut Cx<'_>) -> Option<Packet>,
    ) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            // Until a write to `active`: no polling of the full queue.
            cx.wake_when_written();
            return false;
        }
        // The first packet comes alone, without a batch: behind a source
        // of one packet per run (Click's BURST 1) the queue rarely holds
        // more, and an empty queue costs no batch either. If the queue saw
        // itself empty after it, the batch pull is skipped too.
        if pull(cx).is_none() {
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

#[cfg(test)]
mod tests {
    use crate::test_kit::{fill, pkts, reg};
    use paraclick_runtime::testing::{build_simtime, run};

    /// A queue of 10 drained by `discard`, which a Counter turns off after
    /// its first packet: what is left in the queue shows how many packets
    /// the Discard took in that one task run.
    fn left_after_one_run(discard: &str) -> (String, String) {
        let r = build_simtime(
            &reg(),
            &format!(
                "Idle -> q :: Queue -> Counter(COUNT_CALL 1 d.active false) -> d :: {discard};
                 Script(wait 10ms, stop);"
            ),
        );
        fill(&r, "q", pkts(10, 60));
        run(&r);
        (
            r.read_handler("d.count").unwrap(),
            r.read_handler("q.length").unwrap(),
        )
    }

    #[test]
    fn an_inactive_pull_discard_leaves_its_queue_until_made_active() {
        // Simulated time: for 10 ms the Discard may not pull; then the
        // Script's write to `active` gives its task work again, and by
        // 20 ms it has drained the queue.
        let r = build_simtime(
            &reg(),
            "Idle -> q :: Queue -> d :: Discard(ACTIVE false);
             s :: Script(export before, wait 10ms, set before $(q.length),
                         write d.active true, wait 10ms, stop);",
        );
        fill(&r, "q", pkts(10, 60));
        run(&r);
        assert_eq!(r.read_handler("s.before").unwrap(), "10", "not pulled");
        assert_eq!(r.read_handler("q.length").unwrap(), "0");
        assert_eq!(r.read_handler("d.count").unwrap(), "10");
    }

    #[test]
    fn a_pull_discard_takes_one_packet_a_run_unless_told_a_burst() {
        assert_eq!(left_after_one_run("Discard"), ("1".into(), "9".into()));
        assert_eq!(
            left_after_one_run("Discard(BURST 4)"),
            ("4".into(), "6".into())
        );
    }
}
