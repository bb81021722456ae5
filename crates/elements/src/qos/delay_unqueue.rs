//! # DelayUnqueue
//!
//! DelayUnqueue(DELAY)
//!
//! Delay-inducing pull-to-push converter.
//!
//! Pulls packets from its input and delays each for at least DELAY: a
//! packet with timestamp T is pushed out no earlier than T + DELAY, and
//! leaves with its timestamp set to that delayed time. A packet without a
//! timestamp (as in Click, one whose seconds part is zero) is stamped with
//! the time it is pulled, so it is held DELAY. The packet being delayed
//! is held here (one at a time, in order).
//!
//! Ports: 1 input (pull), 1 output (push). It owns a task.
//!
//! Arguments:
//! - `DELAY` (time).
//!
//! Handlers:
//! - `delay` (read/write): the DELAY.
//!
//! Example:
//!
//!     ... -> SetTimestamp -> Queue -> DelayUnqueue(0.1) -> ToDevice(eth0);

use super::delay_shaper::{due, show_delay, stamp_if_unset};
use paraclick_packet::anno::Timestamp;
use paraclick_packet::Packet;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, InitCx};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub struct DelayUnqueue {
    delay: AtomicU64,
    held: Mutex<Option<Packet>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("DelayUnqueue", "1/1", "l/h", make)
        .shared("a rate or schedule shared by all flows")
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<DelayUnqueue, String> {
    let mut a = cx.args();
    let delay = a.read_mp::<Duration>("DELAY");
    a.complete()?;
    Ok(DelayUnqueue {
        delay: AtomicU64::new(delay.as_nanos() as u64),
        held: Mutex::new(None),
    })
}

impl DelayUnqueue {
    /// Packets due at `now` (up to 32), stamped with their due time; and
    /// when the packet held back is due, if one is.
    fn due_packets(&self, cx: &mut Cx<'_>, now: Timestamp) -> (Vec<Packet>, Option<Timestamp>) {
        let delay = self.delay.load(Ordering::Relaxed);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        while out.len() < 32 {
            if held.is_none() {
                let p = cx.pull(0, 1).and_then(|b| b.into_iter().next());
                *held = stamp_if_unset(p, now);
            }
            let Some(p) = held.as_ref() else { break };
            let t = due(p.timestamp(), delay);
            if t > now {
                return (out, Some(t));
            }
            if let Some(mut p) = held.take() {
                p.set_timestamp(t);
                out.push(p);
            }
        }
        (out, None)
    }
}

impl Element for DelayUnqueue {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "delay",
        |e, _| show_delay(e.delay.load(Ordering::Relaxed)),
        |e, v, hx| {
            let d: Duration = hx.arg(v)?;
            e.delay.store(d.as_nanos() as u64, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // Asleep while its input is empty and it holds nothing; while
        // it holds a packet not yet due it says when it will be.
        let t = ix.add_task();
        ix.sleep_when_empty(t);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        // The router's clock: under simulated time packets fall due at
        // simulated moments, and the task says when the next one does.
        let now = cx.timestamp();
        let (out, next) = self.due_packets(cx, now);
        if out.is_empty() {
            if let Some(t) = next {
                let wait = u64::try_from(t.0.saturating_sub(now.0)).unwrap_or(0).max(1);
                let at = cx.now().checked_add(Duration::from_nanos(wait));
                if let Some(at) = at {
                    cx.wake_at(at);
                }
            }
            return false;
        }
        cx.push(0, Batch::from(out));
        true
    }

    fn queued(&self) -> usize {
        usize::from(self.held.lock().map(|h| h.is_some()).unwrap_or(false))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf, run_for};
    use crate::test_kit::{fill, tagged, tags};
    use paraclick_packet::anno::Timestamp;
    use paraclick_runtime::testing::TestSink;

    /// Real time: packets held back still come out when due (the task
    /// does not sleep while it holds one), and then, its input empty, the
    /// task sleeps instead of polling: over 100 ms it runs a few times
    /// (each park ends by itself after 100 ms at the latest); polling, it
    /// ran hundreds of times.
    #[test]
    fn an_empty_delay_line_sleeps_and_a_held_packet_still_comes_out() {
        let r = paraclick_runtime::testing::build(
            &crate::test_kit::reg(),
            "InfiniteSource(LIMIT 3) -> Queue -> u :: DelayUnqueue(0.02) -> c :: Counter -> Discard;",
        );
        let count = |r: &paraclick_runtime::Router| {
            r.read_handler("c.count").unwrap().parse::<u64>().unwrap()
        };
        let ran = std::sync::atomic::AtomicU64::new(u64::MAX);
        paraclick_runtime::testing::run_until(&r, |r| {
            if count(r) < 3 {
                return false;
            }
            // Let the worker settle, then count the task's runs.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let runs = r.task_runs("u").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            ran.store(
                r.task_runs("u").unwrap() - runs,
                std::sync::atomic::Ordering::Relaxed,
            );
            true
        });
        let ran = ran.load(std::sync::atomic::Ordering::Relaxed);
        assert!(ran < 30, "the idle DelayUnqueue ran {ran} times in 100 ms");
        assert_eq!(count(&r), 3);
    }

    #[test]
    fn pushes_packets_when_due_stamped_with_the_due_time() {
        let r = conf("Idle -> q :: Queue(100) -> u :: DelayUnqueue(1) -> o :: TestSink;");
        let now = Timestamp::now();
        let mut a = tagged(1, 60);
        a.set_timestamp(Timestamp(now.0 - 5_000_000_000));
        let mut b = tagged(2, 60);
        b.set_timestamp(Timestamp(now.0 + 3_600_000_000_000));
        let mut c = tagged(3, 60);
        c.set_timestamp(Timestamp(now.0 - 5_000_000_000));
        fill(&r, "q", vec![a, b, c]);
        // Until packet 1 is out (a wait for the event, not for a time a
        // loaded machine may not give the router), and then a while more
        // in which packet 3 must stay behind packet 2.
        paraclick_runtime::testing::run_until(&r, |r| {
            !r.element::<TestSink>("o").unwrap().is_empty()
        });
        run_for(&r, 30);
        let out = r.element::<TestSink>("o").unwrap().take();
        assert_eq!(tags(&out), vec![1]);
        assert_eq!(out[0].timestamp(), Timestamp(now.0 - 4_000_000_000));
        // Packet 2 (due in an hour) is held and holds up packet 3.
        assert_eq!(r.total_queued(), 2);
        assert_eq!(r.read_handler("u.delay").unwrap(), "1.000000");
        assert!(bad("Idle -> Queue -> DelayUnqueue(x) -> Discard;"));
    }

    #[test]
    fn unstamped_packets_are_held_delay_from_their_pull() {
        // Simulated time, far from the epoch: a packet stamped 0 or within
        // the epoch's first second has no timestamp (Click's rule) and
        // leaves DELAY after it is pulled, stamped with that moment; one
        // stamped long ago (a real stamp) leaves at once, at T + DELAY.
        let r = paraclick_runtime::testing::build_simtime(
            &crate::test_kit::reg(),
            "Idle -> q :: Queue(100) -> u :: DelayUnqueue(30ms) -> o :: TestSink;
             Script(wait 100ms, stop);",
        );
        let start = paraclick_runtime::time::SIM_START_SEC * 1_000_000_000;
        let mut a = tagged(1, 60);
        a.set_timestamp(Timestamp(0));
        let mut b = tagged(2, 60);
        b.set_timestamp(Timestamp(120_000_000));
        let mut c = tagged(3, 60);
        c.set_timestamp(Timestamp(5_000_000_000));
        fill(&r, "q", vec![a, b, c]);
        paraclick_runtime::testing::run(&r);
        let out = r.element::<TestSink>("o").unwrap().take();
        assert_eq!(tags(&out), vec![1, 2, 3]);
        let left: Vec<i64> = out.iter().map(|p| p.timestamp().0).collect();
        assert_eq!(
            left,
            [start + 30_000_000, start + 60_000_000, 5_030_000_000],
            "due times: each unstamped one DELAY after its pull"
        );
    }

    #[test]
    fn packets_leave_when_due_on_the_routers_clock() {
        // Simulated time: packets stamped 0 and 5 ms after its start leave
        // (SetTimestamp stamps the moment) exactly DELAY later; the task
        // says when the held one is due.
        let r = paraclick_runtime::testing::build_simtime(
            &crate::test_kit::reg(),
            "Idle -> q :: Queue(100) -> u :: DelayUnqueue(10ms) -> SetTimestamp -> o :: TestSink;
             Script(wait 100ms, stop);",
        );
        let start = paraclick_runtime::time::SIM_START_SEC * 1_000_000_000;
        let mut a = tagged(1, 60);
        a.set_timestamp(Timestamp(start));
        let mut b = tagged(2, 60);
        b.set_timestamp(Timestamp(start + 5_000_000));
        fill(&r, "q", vec![a, b]);
        paraclick_runtime::testing::run(&r);
        let out = r.element::<TestSink>("o").unwrap().take();
        assert_eq!(tags(&out), vec![1, 2]);
        let left: Vec<i64> = out.iter().map(|p| p.timestamp().0 - start).collect();
        assert_eq!(left, [10_000_000, 15_000_000]);
    }
}
