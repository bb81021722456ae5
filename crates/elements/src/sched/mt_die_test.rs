//! # MTDieTest
//!
//! MTDieTest()
//!
//! Tests stopping a router that runs on several threads: a test element,
//! as Click's.
//!
//! Ports: none.
//!
//! MTDieTest has a task on each thread (`-j N`: N tasks, task K pinned to
//! thread K). Each task, the first time it runs, asks the router to stop
//! (a driver stop event, as a source's `STOP true`) and then has no more
//! work. The N requests arrive from N threads at about the same time;
//! without a driver the first stops the router, and a DriverManager sees
//! N stop events (each `pause`, or `wait` without a time, takes one).
//! It takes no arguments.
//!
//! Handlers: `stops` (read): how many stop requests it has made.
//!
//! On a machine with fewer CPUs than threads the threads share them (the
//! requests then come as the kernel runs each thread); the count is the
//! same.
//!
//! Example (Click's threads/MTDieTest-01, run 100 times there):
//!
//!     t :: MTDieTest();
//!     DriverManager(pause 16, print "stopping", stop);  // with -j 16

use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub struct MTDieTest {
    /// Per task: whether it has asked to stop.
    asked: Box<[AtomicBool]>,
    stops: AtomicU64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("MTDieTest", "0/0", "a", make).shared("a task on each thread already")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<MTDieTest, String> {
    cx.args().complete()?;
    Ok(MTDieTest {
        asked: (0..cx.nthreads.max(1))
            .map(|_| AtomicBool::new(false))
            .collect(),
        stops: AtomicU64::new(0),
    })
}

impl Element for MTDieTest {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("stops", |e, _| {
        e.stops.load(Ordering::Relaxed).to_string()
    })];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        for thread in 0..self.asked.len() {
            let task = ix.add_task();
            ix.pin_task(task, thread);
        }
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, task: usize) -> bool {
        let first = self
            .asked
            .get(task)
            .is_some_and(|a| !a.swap(true, Ordering::AcqRel));
        if first {
            self.stops.fetch_add(1, Ordering::Relaxed);
            cx.request_stop();
        }
        // Spent: nothing to do until a handler is written (never, here).
        cx.wake_when_written();
        first
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::{BuildOptions, Router};

    fn build(conf: &str, threads: usize) -> Router {
        let src = paraclick_lang::Source::new("<t>", conf);
        let opts = BuildOptions {
            threads,
            pin: false,
            ..BuildOptions::default()
        };
        Router::build(&src, &reg(), &opts).unwrap_or_else(|d| panic!("{d:?}"))
    }

    /// A task on each thread, each asking to stop once: a DriverManager
    /// sees as many stop events as threads, and stops. (The Script stops
    /// the router after 10 s should a request be missing: the count then
    /// fails, rather than the test hanging.)
    #[test]
    fn each_thread_asks_to_stop_once() {
        for threads in [1, 2, 4] {
            let r = build(
                &format!(
                    "t :: MTDieTest; DriverManager(pause {threads}, stop);
                     Script(wait 10s, write stop);"
                ),
                threads,
            );
            let mut placed: Vec<(String, usize, usize)> = r.task_threads();
            placed.sort();
            let want: Vec<(String, usize, usize)> =
                (0..threads).map(|k| ("t".to_string(), k, k)).collect();
            assert_eq!(placed, want, "-j {threads}");
            r.run();
            assert_eq!(r.read_handler("t.stops").unwrap(), threads.to_string());
        }
    }

    #[test]
    fn takes_no_arguments() {
        let src = paraclick_lang::Source::new("<t>", "MTDieTest(FOO 1)");
        let e = Router::build(&src, &reg(), &BuildOptions::default())
            .err()
            .expect("MTDieTest(FOO 1) accepted");
        assert!(format!("{e:?}").contains("FOO"), "{e:?}");
    }
}
