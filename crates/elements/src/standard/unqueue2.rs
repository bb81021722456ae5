//! # Unqueue2
//!
//! Unqueue2(\[BURST, keywords QUEUES, QUIET])
//!
//! Pull-to-push converter that will not overfill the queues downstream
//! (deprecated in Click: Unqueue should be preferred).
//!
//! Ports: 1 input (pull), 1 output (push). It owns a task.
//!
//! Whenever it runs, pulls up to BURST packets and pushes them to its
//! output, but never more than there is room for in the fullest of the
//! queues it watches, and nothing at all while one of them is full.
//! BURST 0 means pull until nothing comes back (or the room runs out).
//!
//! Arguments:
//! - `BURST` (integer, default 1, at most 65536): packets per run; 0: as
//!   many as come.
//! - `QUEUES` (space-separated element names): the Queues whose room is
//!   checked. Default: the nearest Queues downstream. Empty (`QUEUES ""`):
//!   check none.
//! - `QUIET` (boolean, default false): if true, no deprecation warning on
//!   configuration.
//!
//! Handlers:
//! - `packets` (read): packets moved.
//!
//! Example:
//!
//!     ... -> Queue -> Unqueue2(8) -> Queue(100) -> ...

use crate::qos::red::nearest_queues;
use crate::standard::queue::Queue;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::sync::OnceLock;

pub struct Unqueue2 {
    burst: usize,
    queue_names: Option<Vec<String>>,
    queues: OnceLock<Vec<usize>>,
    packets: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("Unqueue2", "1/1", "l/h", make)
        .shared("pulls one queue: one task for all its flows")
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Unqueue2, String> {
    let mut a = cx.args();
    let burst = a.read_p::<usize>("BURST").unwrap_or(1);
    let queues = a.read::<String>("QUEUES");
    let quiet = a.read::<bool>("QUIET").unwrap_or(false);
    a.complete()?;
    let burst = if burst == 0 {
        crate::util::MAX_BURST
    } else {
        crate::util::check_burst(burst)?;
        burst
    };
    if !quiet {
        cx.warn("Unqueue2 is deprecated; use Unqueue");
    }
    Ok(Unqueue2 {
        burst,
        queue_names: queues.map(|q| q.split_whitespace().map(str::to_string).collect()),
        queues: OnceLock::new(),
        packets: PerThreadCount::new(cx.nthreads),
    })
}

impl Element for Unqueue2 {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("packets", |e, _| e.packets.get().to_string())];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let qs = match &self.queue_names {
            None => nearest_queues(ix, ix.element_index(), true),
            Some(names) => {
                let mut qs = Vec::new();
                for n in names {
                    let i = ix
                        .find(n)
                        .ok_or_else(|| format!("QUEUES: no element named '{n}'"))?;
                    if ix.element::<Queue>(i).is_none() {
                        return Err(format!("QUEUES: '{n}' is not a Queue"));
                    }
                    qs.push(i);
                }
                qs
            }
        };
        let _ = self.queues.set(qs);
        let t = ix.add_task();
        ix.sleep_when_empty(t);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let mut want = self.burst;
        if let Some(qs) = self.queues.get() {
            let hx = cx.handler_cx();
            for &i in qs {
                if let Some(q) = hx.element::<Queue>(i) {
                    want = want.min(q.capacity().saturating_sub(q.len()));
                }
            }
        }
        if want == 0 {
            return false;
        }
        let Some(b) = cx.pull(0, want) else {
            return false;
        };
        self.packets.add(cx.thread(), b.len() as u64);
        cx.push(0, b);
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    #[test]
    fn never_overfills_the_queue_downstream() {
        let r = build(
            &reg(),
            "InfiniteSource(LIMIT 50, STOP false) -> q :: Queue(100) -> u :: Unqueue2(BURST 0, QUIET true)
             -> q2 :: Queue(8) -> Discard(ACTIVE false);",
        );
        run_until(&r, |r| {
            handler(r, "q2.length") == "8" && handler(r, "q.length") == "42"
        });
        assert_eq!(
            handler(&r, "q2.drops"),
            "0",
            "Unqueue would have overfilled it"
        );
        assert_eq!(handler(&r, "u.packets"), "8");
    }

    #[test]
    fn burst_bounds_each_run_and_empty_queues_means_no_check() {
        let r = build(
            &reg(),
            "InfiniteSource(LIMIT 30, STOP false) -> q :: Queue(100) -> u :: Unqueue2(4, QUEUES \"\", QUIET true)
             -> q2 :: Queue(8) -> Discard(ACTIVE false);",
        );
        run_until(&r, |r| handler(r, "u.packets") == "30");
        assert_eq!(handler(&r, "q2.drops"), "22");
    }

    #[test]
    fn a_full_named_queue_stops_it() {
        let r = build(
            &reg(),
            "InfiniteSource(LIMIT 20, STOP false) -> q :: Queue(100) -> u :: Unqueue2(0, QUEUES w, QUIET true)
             -> q2 :: Queue(100) -> Discard(ACTIVE false); Idle -> w :: Queue(5) -> Discard(ACTIVE false);",
        );
        fill(&r, "w", pkts(5, 60));
        // Until the source has queued its 20 (the event: a loaded machine
        // may not run the router within a fixed time), then 100 ms more in
        // which Unqueue2 must pull nothing.
        run_until(&r, |r| handler(r, "q.length") == "20");
        let stop = r.stopper();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            stop.stop();
        });
        r.run();
        assert_eq!(handler(&r, "q.length"), "20");
        assert_eq!(handler(&r, "u.packets"), "0", "w is full: nothing pulled");
        let e = build_err(&reg(), "Idle -> Queue -> Unqueue2(QUEUES nope) -> Discard;");
        assert!(e.contains("QUEUES: no element named 'nope'"), "{e}");
    }
}
