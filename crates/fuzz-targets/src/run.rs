//! Configurations run, not only checked: a grammar-built configuration is
//! built, initialized and run in simulated time, then stopped, and every
//! read handler of every element is read.

use crate::structured::generate;
use arbitrary::Unstructured;
use paraclick_lang::{parse_config_with, Source};
use paraclick_runtime::{BuildOptions, Router};
use std::sync::mpsc;
use std::time::Duration;

/// Classes that reach outside the process (devices, sockets, tap devices,
/// files written) or burn CPU by design: a run of a fuzzed configuration
/// must not touch the machine, and a `WorkPackage(1e9)` hang is the user's
/// choice, not a bug.
const OUTSIDE: &[&str] = &[
    "ControlSocket",
    "FromDevice",
    "MultiFromDevice",
    "PollDevice",
    "ToDevice",
    "FromHost",
    "ToHost",
    "KernelTap",
    "KernelTun",
    "RawSocket",
    "McastSocket",
    "Socket",
    "ToDump",
    "ToIPSummaryDump",
    "ToIPFlowDumps",
    "AggregateCounter",
    "WorkPackage",
];

/// How long a configuration runs (wall time; in simulated time the clock
/// jumps over idle stretches, so timers far ahead are reached too).
const RUN: Duration = Duration::from_millis(30);
/// How long a router may take to stop once asked: longer is a hang.
const STOP_BOUND: Duration = Duration::from_secs(5);

/// Whether the run target may run this configuration: no class of
/// [`OUTSIDE`], no file written (an `OUTFILE`, a Script's `>FILE`), no
/// handler that reconfigures the router.
fn runnable(graph: &paraclick_lang::FlatGraph) -> bool {
    !graph.elements.iter().any(|e| {
        OUTSIDE.contains(&e.class.as_str())
            || e.config.contains("OUTFILE")
            || e.config.contains("hotconfig")
            || (e.class == "Script" && e.config.contains('>'))
    })
}

/// Builds the configuration `data` generates (as `config_structured`
/// does) with one or two threads in simulated time, runs it for a moment,
/// stops it, and reads every element's read handlers. Checks that
/// nothing panics, that the router stops within five seconds of being
/// asked, and that a configuration which builds also passed
/// `Router::check`.
pub fn config_run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let threads = if u.ratio(1, 3).unwrap_or(false) { 2 } else { 1 };
    let text = generate(&mut u).unwrap_or_default();
    let src = Source::new("<fuzz-run>", text.as_str());
    let Ok(graph) = parse_config_with(&src, &[], &crate::parse_options()) else {
        return;
    };
    if !runnable(&graph) {
        return;
    }
    let checked = Router::check(&graph, crate::registry()).is_ok();
    let opts = BuildOptions {
        threads,
        pin: false,
        simtime: true,
        max_elements: crate::MAX_ELEMENTS,
        ..BuildOptions::default()
    };
    let Ok(router) = Router::build(&src, crate::registry(), &opts) else {
        return;
    };
    assert!(checked, "builds but Router::check rejects it:\n{text}");
    let stopper = router.stopper();
    let (done_tx, done_rx) = mpsc::channel();
    let runner = std::thread::Builder::new()
        .name("fuzz-run".into())
        .spawn(move || {
            router.run();
            let _ = done_tx.send(());
            router
        })
        .expect("spawn the run thread");
    if done_rx.recv_timeout(RUN).is_err() {
        stopper.stop();
        if done_rx.recv_timeout(STOP_BOUND).is_err() {
            panic!("the router did not stop within {STOP_BOUND:?} of being asked:\n{text}");
        }
    }
    let router = runner.join().expect("the run thread panicked");
    for name in router.element_names() {
        for h in router.handlers(name).unwrap_or_default() {
            if h.read {
                let _ = router.read_handler(&format!("{name}.{}", h.name));
            }
        }
    }
}
