//! # QueueYankTest
//!
//! QueueYankTest(QUEUE)
//!
//! Checks the yank operation of the queue QUEUE and reports the result.
//!
//! A test element, as in Click's suite. Yanking removes from a queue the
//! packets that match a predicate (Click's `SimpleQueue::yank`): those
//! that stay keep their order, and those removed come back in queue
//! order. When the router starts, a timer of QueueYankTest fills QUEUE
//! (which must be empty) with numbered packets, up to its capacity or 16,
//! and checks, in turn, that yanking nothing leaves every packet, that
//! yanking at most one packet (Click's `yank1`) takes the first that
//! matches, that yanking every third packet takes exactly those, and that
//! the rest are still there in order (yanking them all empties the
//! queue). It then prints `NAME :: QueueYankTest: All tests pass!` on
//! standard error, or one line per check that failed. The yank runs from
//! the timer's thread, as any thread may run it (see the Queue's doc).
//!
//! Arguments:
//! - `QUEUE` (element name): a Queue-family element with room for at
//!   least 4 packets.
//!
//! Ports: none.
//!
//! Example:
//!
//!     Idle -> q :: Queue(6) -> Idle;
//!     QueueYankTest(q);

use super::queue::Queue;
use paraclick_packet::Packet;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, HandlerCx, InitCx};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub struct QueueYankTest {
    queue_name: String,
    queue: AtomicUsize,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("QueueYankTest", "0/0", "a", make)
        .stateless()
        .metadata_only()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<QueueYankTest, String> {
    let mut a = cx.args();
    let queue_name = a.read_mp::<String>("QUEUE");
    a.complete()?;
    Ok(QueueYankTest {
        queue_name,
        queue: AtomicUsize::new(usize::MAX),
    })
}

/// A packet whose first byte is `n`.
fn numbered(n: u8) -> Option<Packet> {
    let mut p = Packet::new(60)?;
    p.data_mut()[0] = n;
    Some(p)
}

fn numbers(v: &[Packet]) -> Vec<u8> {
    v.iter().map(|p| p.data()[0]).collect()
}

/// Runs the checks on `q`; returns the failures (empty when all pass).
pub(crate) fn check_yank(q: &Queue, hx: &HandlerCx<'_>) -> Vec<String> {
    let mut fails = Vec::new();
    if !q.is_empty() {
        return vec![format!("queue not empty ({} packets)", q.len())];
    }
    let n = q.capacity().min(16) as u8;
    let packets: Vec<Packet> = (0..n).filter_map(numbered).collect();
    if packets.len() != n as usize {
        return vec!["out of memory".into()];
    }
    let left = q.enqueue_from_handler(hx, packets);
    if !left.is_empty() || q.len() != n as usize {
        fails.push(format!("filled {} packets, queue holds {}", n, q.len()));
    }
    let mut expect: Vec<u8> = (0..n).collect();
    let none = q.yank(hx, usize::MAX, |_| false);
    if !none.is_empty() || q.len() != expect.len() {
        fails.push(format!(
            "yank of nothing took {} packets, {} left",
            none.len(),
            q.len()
        ));
    }
    let one = numbers(&q.yank(hx, 1, |p| p.data()[0] % 2 == 1));
    if one != [1] {
        fails.push(format!("yank1 of the first odd packet took {one:?}"));
    }
    expect.retain(|&x| x != 1);
    let thirds = numbers(&q.yank(hx, usize::MAX, |p| p.data()[0] % 3 == 0));
    let want: Vec<u8> = expect.iter().copied().filter(|x| x % 3 == 0).collect();
    if thirds != want {
        fails.push(format!("yank of every third took {thirds:?}, not {want:?}"));
    }
    expect.retain(|x| x % 3 != 0);
    if q.len() != expect.len() {
        fails.push(format!("{} packets left, not {}", q.len(), expect.len()));
    }
    let rest = numbers(&q.yank(hx, usize::MAX, |_| true));
    if rest != expect {
        fails.push(format!("the rest are {rest:?}, not {expect:?}"));
    }
    if !q.is_empty() {
        fails.push(format!("{} packets left after yanking all", q.len()));
    }
    fails
}

impl Element for QueueYankTest {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let i = ix
            .find(&self.queue_name)
            .filter(|&i| ix.element::<Queue>(i).is_some())
            .ok_or_else(|| format!("QUEUE: '{}' is not a Queue", self.queue_name))?;
        if ix.element::<Queue>(i).is_some_and(|q| q.capacity() < 4) {
            return Err(format!(
                "QUEUE: '{}' holds fewer than 4 packets",
                self.queue_name
            ));
        }
        self.queue.store(i, Ordering::Relaxed);
        ix.schedule_after(0, Duration::ZERO);
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        let hx = cx.handler_cx();
        let i = self.queue.load(Ordering::Relaxed);
        let Some(q) = hx.element::<Queue>(i) else {
            return;
        };
        let fails = check_yank(q, &hx.on(i));
        if fails.is_empty() {
            hx.message("All tests pass!");
        }
        for f in fails {
            hx.message(&f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_yank;
    use crate::standard::queue::Queue;
    use crate::test_kit::*;
    use paraclick_packet::Packet;

    fn numbered(from: u8, to: u8) -> Vec<Packet> {
        (from..to).filter_map(super::numbered).collect()
    }

    #[test]
    fn yank_takes_the_matching_packets_and_keeps_the_rest_in_order() {
        let r = build(
            &reg(),
            "TestSource -> q :: Queue(10) -> Discard(ACTIVE false)",
        );
        fill(&r, "q", numbered(0, 6));
        let q = r.element::<Queue>("q").unwrap();
        r.with_handler_cx("q", |hx| {
            let odd = q.yank(&hx, usize::MAX, |p| p.data()[0] % 2 == 1);
            assert_eq!(super::numbers(&odd), vec![1, 3, 5], "queue order");
            let first = q.yank(&hx, 1, |p| p.data()[0] >= 2);
            assert_eq!(super::numbers(&first), vec![2], "yank1: the first match");
            assert!(q.enqueue_from_handler(&hx, numbered(9, 12)).is_empty());
            let left = q.enqueue_from_handler(&hx, numbered(12, 20));
            assert_eq!(
                super::numbers(&left),
                vec![17, 18, 19],
                "beyond the capacity"
            );
        })
        .unwrap();
        assert_eq!(r.read_handler("q.length").unwrap(), "10");
        // Pushed after the yank: behind the packets kept, which pull first.
        r.push_into("q", 0, numbered(30, 31).into_iter().collect())
            .unwrap();
        let mut got = Vec::new();
        while let Some(b) = r.pull_from("q", 0, 2).unwrap() {
            got.extend(b.iter().map(|p| p.data()[0]));
        }
        assert_eq!(got, vec![0, 4, 9, 10, 11, 12, 13, 14, 15, 16, 30]);
    }

    #[test]
    fn the_element_reports_that_all_checks_pass() {
        let r = build(
            &reg(),
            "Idle -> q :: Queue(6) -> Idle; t :: QueueYankTest(q)",
        );
        let q = r.element::<Queue>("q").unwrap();
        let fails = r.with_handler_cx("q", |hx| check_yank(q, &hx)).unwrap();
        assert!(fails.is_empty(), "{fails:?}");
        fill(&r, "q", numbered(0, 1));
        let fails = r.with_handler_cx("q", |hx| check_yank(q, &hx)).unwrap();
        assert_eq!(fails, vec!["queue not empty (1 packets)".to_string()]);
    }

    #[test]
    fn the_queue_argument_must_name_a_queue() {
        let e = build_err(&reg(), "Idle -> c :: Counter -> Discard; QueueYankTest(c)");
        assert!(e.contains("QUEUE: 'c' is not a Queue"), "{e}");
    }
}
