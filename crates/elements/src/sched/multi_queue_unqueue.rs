//! # MultiQueueUnqueue
//!
//! MultiQueueUnqueue(\[BURST])
//!
//! One task that polls all of its pull inputs in turn and pushes what it
//! gets to its single output: one poller for several queues (PRESTO 2010
//! Figure 5, a MultiplePollDevice replacing several PollDevices), instead
//! of one Unqueue (and one task) per queue.
//!
//! Each run fills one burst across the inputs, starting at the input after
//! the one it started at last time, so no input starves.
//!
//! Ports: any number of inputs (pull), 1 output (push). It owns a task.
//!
//! Arguments:
//! - `BURST` (integer, default 32, at most 65536): the most packets per task run, summed
//!   over the inputs.
//!
//! Handlers:
//! - `count` (read): packets moved.
//! - `reset` (write): resets the count.
//! - `burst` (read/write).
//!
//! Example:
//!
//!     q0 :: Queue; q1 :: Queue; q2 :: Queue;
//!     mq :: MultiQueueUnqueue(64) -> Discard;
//!     q0 -> [0]mq; q1 -> [1]mq; q2 -> [2]mq;

use crate::util::write_burst;
use paraclick_packet::Batch;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, PerThreadCount};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct MultiQueueUnqueue {
    burst: AtomicUsize,
    /// Input the next run starts at.
    next: AtomicUsize,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("MultiQueueUnqueue", "-/1", "l/h", make)
        .shared("pulls its queues: one task for all their flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MultiQueueUnqueue, String> {
    let mut a = cx.args();
    let burst = a.read_p::<usize>("BURST").unwrap_or(32);
    a.complete()?;
    crate::util::check_burst(burst)?;
    Ok(MultiQueueUnqueue {
        burst: AtomicUsize::new(burst),
        next: AtomicUsize::new(0),
        count: PerThreadCount::new(cx.nthreads),
    })
}

impl Element for MultiQueueUnqueue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset", |e, _, _| {
            e.count.reset();
            Ok(())
        }),
        Handler::rw(
            "burst",
            |e, _| e.burst.load(Ordering::Relaxed).to_string(),
            |e, v, hx| write_burst(&e.burst, v, hx),
        ),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let t = ix.add_task();
        ix.sleep_when_empty(t);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let n = cx.ninputs();
        if n == 0 {
            return false;
        }
        let burst = self.burst.load(Ordering::Relaxed);
        let start = self.next.load(Ordering::Relaxed) % n;
        self.next.store((start + 1) % n, Ordering::Relaxed);
        let mut out: Option<Batch> = None;
        let mut have = 0;
        for k in 0..n {
            if have >= burst {
                break;
            }
            if let Some(mut b) = cx.pull((start + k) % n, burst - have) {
                have += b.len();
                match &mut out {
                    Some(o) => o.append(&mut b),
                    None => out = Some(b),
                }
            }
        }
        match out {
            Some(b) if !b.is_empty() => {
                self.count.add(cx.thread(), b.len() as u64);
                cx.push(0, b);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{pkt, reg, tags};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::TestSink;
    use paraclick_runtime::{Registry, Router};

    fn full_reg() -> Registry {
        let mut r = reg();
        crate::control::register(&mut r);
        r
    }

    fn num(r: &Router, h: &str) -> u64 {
        r.read_handler(h).unwrap().trim().parse().unwrap()
    }

    #[test]
    fn one_burst_spans_the_inputs_in_turn() {
        let conf = "mq :: MultiQueueUnqueue(4) -> o :: TestSink;
                    Idle -> q0 :: Queue(100) -> [0]mq;
                    Idle -> q1 :: Queue(100) -> [1]mq;
                    Idle -> q2 :: Queue(100) -> [2]mq;
                    Script(label l, wait 1ms, goto l $(lt $(mq.count) 9), stop);";
        let r = Router::from_str(conf, &full_reg(), 1).unwrap_or_else(|d| panic!("{d:?}"));
        for (q, tag, n) in [(0, 1u8, 5), (1, 2, 1), (2, 3, 3)] {
            let b = (0..n).map(|_| pkt(&[tag])).collect::<Vec<_>>();
            r.push_into(&format!("q{q}"), 0, b.into()).unwrap();
        }
        r.run();
        let got = tags(&r.element::<TestSink>("o").unwrap().take());
        // Run 1 starts at q0 (4 of its 5); run 2 at q1, then q2, then q0.
        assert_eq!(got, vec![1, 1, 1, 1, 2, 3, 3, 3, 1]);
        assert_eq!(num(&r, "mq.count"), 9);
        assert_eq!(r.total_queued(), 0);
    }

    #[test]
    fn drains_three_queues_with_conservation() {
        let conf = "mq :: MultiQueueUnqueue(32) -> c :: Counter -> Discard;
            s0 :: InfiniteSource(LENGTH 60, LIMIT 1000, BURST 16) -> q0 :: Queue(200) -> [0]mq;
            s1 :: InfiniteSource(LENGTH 60, LIMIT 2000, BURST 16) -> q1 :: Queue(200) -> [1]mq;
            s2 :: InfiniteSource(LENGTH 60, LIMIT 3000, BURST 16) -> q2 :: Queue(200) -> [2]mq;
            Script(label l, wait 2ms,
                   goto l $(lt $(add $(c.count) $(q0.drops) $(q1.drops) $(q2.drops)) 6000),
                   stop);";
        for threads in [1, 2] {
            let r =
                Router::from_str(conf, &full_reg(), threads).unwrap_or_else(|d| panic!("{d:?}"));
            r.run();
            let sent = num(&r, "s0.count") + num(&r, "s1.count") + num(&r, "s2.count");
            assert_eq!(sent, 6000);
            let out = num(&r, "c.count");
            assert_eq!(out, num(&r, "mq.count"));
            assert_eq!(sent, out + r.total_drops() + r.total_queued() as u64);
            assert!(out > 0);
        }
    }

    #[test]
    fn no_inputs_and_bad_config() {
        let conf = "mq :: MultiQueueUnqueue -> Discard; Script(wait 5ms, stop);";
        let r = Router::from_str(conf, &full_reg(), 1).unwrap();
        r.run();
        assert_eq!(num(&r, "mq.count"), 0);
        r.write_handler("mq.burst", "8").unwrap();
        assert_err(
            r.write_handler("mq.burst", "0"),
            "mq.burst: BURST must be between 1 and 65536, not 0",
        );
        let bad = "Idle -> Queue -> MultiQueueUnqueue(0) -> Discard;";
        assert_err(Router::from_str(bad, &full_reg(), 1), "<config>:1:18: MultiQueueUnqueue@3 :: MultiQueueUnqueue: BURST must be between 1 and 65536, not 0");
    }
}
