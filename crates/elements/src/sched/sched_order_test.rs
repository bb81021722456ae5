//! # SchedOrderTest
//!
//! SchedOrderTest(ID [, keywords SIZE, LIMIT, STOP])
//!
//! Records the order in which tasks run: a test element, as Click's.
//!
//! Ports: none.
//!
//! Each SchedOrderTest owns a task that runs again and again. Every run
//! appends the element's ID (an integer) to one sequence that all the
//! SchedOrderTest elements of the configuration share, until the sequence
//! holds SIZE IDs; the `order` handler reports it.
//!
//! Keywords:
//! - `SIZE` (unsigned, default 1024): the most IDs the shared sequence
//!   keeps; with several elements, the largest SIZE given.
//! - `LIMIT` (unsigned, default 0): run at most LIMIT times; 0 means
//!   forever.
//! - `STOP` (boolean, default false): ask the driver to stop once the
//!   sequence is full (SIZE, not LIMIT).
//!
//! Handlers:
//! - `order` (read): the shared sequence, IDs separated by spaces.
//! - `count` (read): how many times this element's task ran.
//!
//! Difference from Click: Click's stride scheduler gives each task a
//! share proportional to its ScheduleInfo tickets, so `ScheduleInfo(s1 1,
//! s2 2, s3 3)` shows s3 three times as often as s1. paraclick's
//! scheduler gives every task the same share (ScheduleInfo's parameters
//! are recorded, not used), so the order here is a round robin of the
//! tasks still running; with several threads (`-j`), the tasks' runs
//! interleave as the threads do.
//!
//! Example:
//!
//!     s1 :: SchedOrderTest(1, SIZE 100, STOP true);
//!     s2 :: SchedOrderTest(2, SIZE 100, LIMIT 10);
//!     DriverManager(wait_stop, print s1.order, stop);

use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind, PerThreadCount};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The sequence every SchedOrderTest of a router appends to.
struct Shared {
    size: usize,
    ids: Mutex<Vec<i32>>,
}

pub struct SchedOrderTest {
    id: i32,
    size: usize,
    limit: u64,
    stop: bool,
    runs: AtomicU64,
    count: PerThreadCount,
    shared: OnceLock<Arc<Shared>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("SchedOrderTest", "0/0", "a", make)
        .shared("a rate or schedule shared by all flows")
        .kind(Kind::Scheduler)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<SchedOrderTest, String> {
    let mut a = cx.args();
    let id: i32 = a.read_mp("ID");
    let size = a.read::<usize>("SIZE").unwrap_or(0);
    let limit = a.read::<u64>("LIMIT").unwrap_or(0);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    a.complete()?;
    Ok(SchedOrderTest {
        id,
        size,
        limit,
        stop,
        runs: AtomicU64::new(0),
        count: PerThreadCount::new(cx.nthreads),
        shared: OnceLock::new(),
    })
}

impl SchedOrderTest {
    fn order(&self) -> String {
        let Some(sh) = self.shared.get() else {
            return String::new();
        };
        let ids = sh.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Element for SchedOrderTest {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("order", |e, _| e.order()),
        Handler::read("count", |e, _| e.count.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // The first SchedOrderTest holds the sequence, sized by the
        // largest SIZE of them all.
        let all: Vec<&SchedOrderTest> = (0..ix.element_count())
            .filter_map(|i| ix.element::<SchedOrderTest>(i))
            .collect();
        let first = all.first().copied().unwrap_or(self);
        let size = match all.iter().map(|e| e.size).max().unwrap_or(0) {
            0 => 1024,
            n => n,
        };
        let shared = first
            .shared
            .get_or_init(|| {
                Arc::new(Shared {
                    size,
                    ids: Mutex::new(Vec::with_capacity(size.min(1 << 20))),
                })
            })
            .clone();
        let _ = self.shared.set(shared);
        ix.add_task();
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if self.limit != 0 && self.runs.load(Ordering::Relaxed) >= self.limit {
            return false;
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.count.inc(cx.thread());
        let Some(sh) = self.shared.get() else {
            return false;
        };
        let full = {
            let mut ids = sh.ids.lock().unwrap_or_else(|e| e.into_inner());
            if ids.len() < sh.size {
                ids.push(self.id);
                false
            } else {
                true
            }
        };
        if full && self.stop {
            cx.request_stop();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::Router;

    fn order(r: &Router, e: &str) -> Vec<i32> {
        r.read_handler(&format!("{e}.order"))
            .unwrap()
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect()
    }

    #[test]
    fn shared_order_limit_and_stop() {
        let conf = "s1 :: SchedOrderTest(1, SIZE 100, STOP true);
                    s2 :: SchedOrderTest(2, SIZE 100, LIMIT 10);
                    s3 :: SchedOrderTest(3, SIZE 60);
                    ScheduleInfo(s1 1, s2 2, s3 3);";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        r.run();
        let o = order(&r, "s1");
        assert_eq!(o.len(), 100, "the largest SIZE");
        assert_eq!(order(&r, "s3"), o, "one shared sequence");
        assert_eq!(o.iter().filter(|&&i| i == 2).count(), 10, "LIMIT 10");
        assert!(o.iter().filter(|&&i| i == 1).count() >= 30);
        assert!(o.iter().filter(|&&i| i == 3).count() >= 30);
        assert!(o.iter().all(|i| [1, 2, 3].contains(i)));
        assert_eq!(r.read_handler("s2.count").unwrap(), "10");
        // STOP: s1 stopped the router once the sequence was full.
        assert!(r.read_handler("s1.count").unwrap().parse::<u64>().unwrap() > 33);
    }

    #[test]
    fn default_size_and_bad_arguments() {
        let r = Router::from_str("s :: SchedOrderTest(-4, STOP true)", &reg(), 1).unwrap();
        r.run();
        let o = order(&r, "s");
        assert_eq!(o.len(), 1024);
        assert!(o.iter().all(|&i| i == -4));
        for (bad, want) in [
            ("SchedOrderTest()", "<config>:1:1: SchedOrderTest@1 :: SchedOrderTest: missing mandatory ID argument"),
            ("SchedOrderTest(x)", "<config>:1:1: SchedOrderTest@1 :: SchedOrderTest: ID: expected integer"),
            ("SchedOrderTest(1, SIZE -1)", "<config>:1:1: SchedOrderTest@1 :: SchedOrderTest: SIZE: expected unsigned integer"),
            ("SchedOrderTest(1, STOP maybe)", "<config>:1:1: SchedOrderTest@1 :: SchedOrderTest: STOP: expected boolean (true or false)"),
            ("SchedOrderTest(1, BOGUS 2)", "<config>:1:1: SchedOrderTest@1 :: SchedOrderTest: unknown keyword BOGUS"),
        ] {
            assert_err(Router::from_str(bad, &reg(), 1), want);
        }
    }
}
