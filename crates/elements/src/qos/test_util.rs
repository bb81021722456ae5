//! The QoS tests' rig, used by this folder alone: a chain whose pull
//! outputs the test drains by hand ([`router`]), and shorthands the QoS
//! tests share: a router from text ([`conf`]), whether text is rejected
//! ([`bad`]), and a run of some milliseconds of real time ([`run_for`]).
//! The rest comes from the crate's one kit ([`crate::test_kit`]).

#![allow(dead_code)] // not every test uses every helper

use crate::test_kit::{build, reg, try_build};
use paraclick_runtime::Router;

/// `Idle -> q :: CHAIN` with the last element named `s`; each of its
/// `nout` outputs goes to an inactive Unqueue (pull outputs) so the test
/// pulls by hand.
pub fn router(chain: &str, nout: usize) -> Router {
    let mut conf = format!("Idle -> q :: {chain};\n");
    for i in 0..nout {
        conf.push_str(&format!(
            "s[{i}] -> Unqueue(ACTIVE false) -> o{i} :: TestSink;\n"
        ));
    }
    build(&reg(), &conf)
}

/// A router from full configuration text (the kit's [`build`]).
pub fn conf(text: &str) -> Router {
    build(&reg(), text)
}

/// Whether a configuration is rejected.
pub fn bad(text: &str) -> bool {
    try_build(&reg(), text).is_err()
}

/// Runs `r` for `ms` milliseconds; returns the seconds it ran.
pub fn run_for(r: &Router, ms: u64) -> f64 {
    let stop = r.stopper();
    let t0 = std::time::Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        stop.stop();
    });
    r.run();
    t0.elapsed().as_secs_f64()
}

/// `PullLog`, a test element: passes pulls through from its input and
/// counts them (`pulls`), so a test sees how many pulls a scheduler or
/// an unqueuer makes for the packets it moves.
pub struct PullLog {
    pulls: std::sync::atomic::AtomicU64,
}

impl paraclick_runtime::Element for PullLog {
    const HANDLERS: &'static [paraclick_runtime::Handler<Self>] =
        &[paraclick_runtime::Handler::read("pulls", |e, _| {
            e.pulls
                .load(std::sync::atomic::Ordering::Relaxed)
                .to_string()
        })];

    fn pull(
        &self,
        cx: &mut paraclick_runtime::Cx<'_>,
        _port: usize,
        max: usize,
    ) -> Option<paraclick_runtime::Batch> {
        self.pulls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        cx.pull(0, max)
    }
}

/// The kit's registry with [`PullLog`].
pub fn reg_with_pull_log() -> paraclick_runtime::Registry {
    let mut r = reg();
    r.register(paraclick_runtime::ClassSpec::element(
        "PullLog",
        "1/1",
        "l",
        |cx: &mut paraclick_runtime::ConfigCx<'_>| {
            cx.args().complete()?;
            Ok(PullLog {
                pulls: std::sync::atomic::AtomicU64::new(0),
            })
        },
    ));
    r
}
