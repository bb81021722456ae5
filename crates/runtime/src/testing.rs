//! Helpers for testing elements: a sink that keeps what reaches it, a
//! harness that wires one element between the test and such sinks, and
//! whole routers built, run and read (every crate's tests use these; the
//! elements crate's `test_kit` adds packet builders and a seeded RNG).
//!
//! ```ignore
//! let h = Harness::new(&reg, "CheckIPHeader", 2)?;   // e :: CheckIPHeader; e[0] -> o0; e[1] -> o1
//! h.push(0, vec![packet]);
//! assert_eq!(h.output(0).len(), 1);
//! ```

use crate::element::Element;
use crate::registry::{ClassSpec, ConfigCx, Registry};
use crate::{BuildOptions, Cx, Router};
use paraclick_lang::{Diagnostic, Source};
use paraclick_packet::{Batch, Packet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A push sink that keeps every packet it receives, in order.
pub struct TestSink {
    packets: Mutex<Vec<Packet>>,
}

impl TestSink {
    /// Takes the packets received so far.
    pub fn take(&self) -> Vec<Packet> {
        std::mem::take(&mut *self.packets.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn len(&self) -> usize {
        self.packets.lock().map(|p| p.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Element for TestSink {
    fn push(&self, _cx: &mut Cx<'_>, _port: usize, mut batch: Batch) {
        let mut v = self.packets.lock().unwrap_or_else(|e| e.into_inner());
        v.extend(batch.drain());
    }

    fn queued(&self) -> usize {
        self.len()
    }
}

fn make_sink(cx: &mut ConfigCx<'_>) -> Result<TestSink, String> {
    cx.args().complete()?;
    Ok(TestSink {
        packets: Mutex::new(Vec::new()),
    })
}

/// A push source that never sends by itself: it stands at the element's
/// input so the configuration checks, while the test pushes directly.
pub struct TestSource;

impl Element for TestSource {}

fn make_source(cx: &mut ConfigCx<'_>) -> Result<TestSource, String> {
    cx.args().complete()?;
    Ok(TestSource)
}

/// Registers `TestSink` (push input, no outputs) and `TestSource` (no
/// inputs, push outputs, never sends).
pub fn register(reg: &mut Registry) {
    reg.register(
        ClassSpec::element("TestSink", "1/0", "h", make_sink)
            .shared("a test sink: one capture for all flows"),
    );
    reg.register(
        ClassSpec::element("TestSource", "0/-", "h", make_source)
            .stateless()
            .kind(crate::Kind::Source),
    );
}

/// One element under test, its outputs connected to `TestSink`s `o0`,
/// `o1`, ..., and its input fed by the test.
pub struct Harness {
    pub router: Router,
}

impl Harness {
    /// `decl` is the element's class and arguments (`"Strip(14)"`);
    /// `noutputs` how many of its outputs to connect. Extra configuration
    /// (AddressInfo, ...) can follow after a `;` in `decl`. Input 0 is fed
    /// by the test (unless the extra configuration connects it).
    pub fn new(reg: &Registry, decl: &str, noutputs: usize) -> Result<Harness, String> {
        let fed = !decl.contains("-> e");
        Self::with_inputs(reg, decl, fed as usize, noutputs)
    }

    /// As [`Harness::new`] with `ninputs` inputs fed by the test (0 for a
    /// source).
    pub fn with_inputs(
        reg: &Registry,
        decl: &str,
        ninputs: usize,
        noutputs: usize,
    ) -> Result<Harness, String> {
        let reg = with_test_classes(reg);
        let conf = harness_conf(decl, ninputs, noutputs);
        let router = Router::from_str(&conf, &reg, 1).map_err(|d| messages(&d))?;
        Ok(Harness { router })
    }

    /// [`Harness::with_inputs`] in simulated time: the element's clock
    /// stands still until the test moves it with [`Harness::advance`] (or
    /// a run jumps it to the next timer), so a test of timeouts and rate
    /// limits states exact moments instead of sleeping.
    pub fn simulated(
        reg: &Registry,
        decl: &str,
        ninputs: usize,
        noutputs: usize,
    ) -> Result<Harness, String> {
        let reg = with_test_classes(reg);
        let conf = harness_conf(decl, ninputs, noutputs);
        let src = Source {
            name: "<config>".into(),
            text: conf,
        };
        let opts = BuildOptions {
            pin: false,
            simtime: true,
            ..BuildOptions::default()
        };
        let router = Router::build(&src, &reg, &opts).map_err(|d| messages(&d))?;
        Ok(Harness { router })
    }

    /// Moves a simulated clock `d` forward (see [`advance`]).
    pub fn advance(&self, d: Duration) {
        advance(&self.router, d);
    }

    /// Pushes packets into input `port` of the element.
    pub fn push(&self, port: usize, packets: Vec<Packet>) {
        self.router
            .push_into("e", port, Batch::from(packets))
            .expect("push into the element under test");
    }

    /// Packets that came out of output `port` so far (taken).
    pub fn output(&self, port: usize) -> Vec<Packet> {
        self.router
            .element::<TestSink>(&format!("o{port}"))
            .map(|s| s.take())
            .unwrap_or_default()
    }

    /// Packets the element dropped (counted).
    pub fn drops(&self) -> u64 {
        self.router.total_drops()
    }

    pub fn read(&self, handler: &str) -> Result<String, String> {
        self.router.read_handler(&format!("e.{handler}"))
    }

    pub fn write(&self, handler: &str, value: &str) -> Result<(), String> {
        self.router.write_handler(&format!("e.{handler}"), value)
    }
}

/// A [`Harness`]'s configuration: `e :: decl` between test sources and
/// sinks.
fn harness_conf(decl: &str, ninputs: usize, noutputs: usize) -> String {
    let (first, rest) = match decl.split_once(';') {
        Some((a, b)) => (a, b),
        None => (decl, ""),
    };
    let mut conf = format!("e :: {first};\n{rest}\n");
    for i in 0..ninputs {
        conf.push_str(&format!("TestSource -> [{i}]e;\n"));
    }
    for i in 0..noutputs {
        conf.push_str(&format!("e[{i}] -> o{i} :: TestSink;\n"));
    }
    conf
}

/// `reg` plus `TestSink` and `TestSource`.
pub fn with_test_classes(reg: &Registry) -> Registry {
    let mut reg = reg.clone();
    register(&mut reg);
    reg
}

/// Diagnostics' messages, joined with `; `.
pub fn messages(d: &[Diagnostic]) -> String {
    d.iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Builds a one-thread router from `conf` with `reg`'s classes (plus
/// `TestSink` and `TestSource`), panicking with the diagnostics if it
/// fails.
pub fn build(reg: &Registry, conf: &str) -> Router {
    build_with(
        reg,
        conf,
        &BuildOptions {
            pin: false,
            ..BuildOptions::default()
        },
    )
}

/// [`build`] with build options (`simtime`, `threads`, ...).
pub fn build_with(reg: &Registry, conf: &str, opts: &BuildOptions) -> Router {
    let src = Source {
        name: "<config>".into(),
        text: conf.into(),
    };
    Router::build(&src, &with_test_classes(reg), opts)
        .unwrap_or_else(|d| panic!("config failed: {}", messages(&d)))
}

/// [`build`] in simulated time (`--simtime`).
pub fn build_simtime(reg: &Registry, conf: &str) -> Router {
    build_with(
        reg,
        conf,
        &BuildOptions {
            pin: false,
            simtime: true,
            ..BuildOptions::default()
        },
    )
}

/// A one-thread router from `conf`, or the diagnostics' messages.
pub fn try_build(reg: &Registry, conf: &str) -> Result<Router, String> {
    Router::from_str(conf, &with_test_classes(reg), 1).map_err(|d| messages(&d))
}

/// The diagnostics of a configuration that must fail to build, joined
/// with `; `.
pub fn build_err(reg: &Registry, conf: &str) -> String {
    match try_build(reg, conf) {
        Ok(_) => panic!("config unexpectedly succeeded: {conf}"),
        Err(e) => e,
    }
}

/// An error as a test reads it: its message, located (`file:line:col: `)
/// where the error carries a place.
pub trait ErrorText {
    fn error_text(&self) -> String;
}

impl ErrorText for String {
    fn error_text(&self) -> String {
        self.clone()
    }
}

impl ErrorText for &str {
    fn error_text(&self) -> String {
        (*self).to_string()
    }
}

impl ErrorText for std::io::Error {
    fn error_text(&self) -> String {
        self.to_string()
    }
}

impl ErrorText for Diagnostic {
    fn error_text(&self) -> String {
        self.to_string()
    }
}

impl ErrorText for Vec<Diagnostic> {
    fn error_text(&self) -> String {
        self.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Asserts that `r` failed, and for the reason the test means: its
/// error's text contains `want` (a configuration rejected for another
/// reason would otherwise pass). Returns the text.
#[track_caller]
pub fn assert_err<T, E: ErrorText>(r: Result<T, E>, want: &str) -> String {
    match r {
        Ok(_) => panic!("succeeded; expected an error containing {want:?}"),
        Err(e) => {
            let text = e.error_text();
            assert!(
                text.contains(want),
                "the error {text:?}\n     does not contain {want:?}"
            );
            text
        }
    }
}

/// The environment variable under which no test may skip for want of
/// something on the machine (root, a tool, a second CPU): the full suite
/// (`scripts/test.sh`, what CI runs) sets it to 1, since its bootstrap
/// installs everything the tests need.
pub const NO_SKIP: &str = "PARACLICK_NO_SKIP";

/// Skips a test that cannot run here, saying why on the process's own
/// standard error (the harness hides a passing test's output, and a skip
/// must be seen); with [`NO_SKIP`]`=1` the skip is a failure instead.
pub fn skip(why: &str) {
    let required = std::env::var(NO_SKIP).is_ok_and(|v| v == "1");
    assert!(!required, "{why}; {NO_SKIP}=1 forbids skipping this test");
    let bar = "*".repeat(78);
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "\n{bar}\nSKIPPED: {why}\nNothing was checked. Set {NO_SKIP}=1 to make this a \
             failure.\n{bar}\n"
        )
        .as_bytes(),
    );
}

/// Whether `prog` runs (`prog ARG` exits successfully); if not, the test
/// [`skip`]s, saying which package provides it.
pub fn have_tool(prog: &str, arg: &str, package: &str) -> bool {
    let ok = std::process::Command::new(prog)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(&format!(
            "{prog} is not installed (apt-get install {package}; scripts/bootstrap.sh --tests \
             installs it)"
        ));
    }
    ok
}

/// How long [`run`] and [`run_until`] wait before failing the test.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs `r` until it stops by itself (a source's STOP, a Script's
/// `stop`); a watchdog stops it after [`WATCHDOG`], failing the test.
pub fn run(r: &Router) {
    run_within(r, WATCHDOG);
}

/// [`run`] with a watchdog of `limit` instead of [`WATCHDOG`].
pub fn run_within(r: &Router, limit: Duration) {
    let stopper = r.stopper();
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    let w = std::thread::spawn(move || {
        let t0 = Instant::now();
        while !d2.load(Ordering::Acquire) {
            if t0.elapsed() > limit {
                stopper.stop();
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    });
    r.run();
    done.store(true, Ordering::Release);
    assert!(
        !w.join().unwrap(),
        "router did not stop by itself within {limit:?}"
    );
}

/// Runs `r` until `until()` holds, then stops it; fails after
/// [`WATCHDOG`].
pub fn run_until(r: &Router, until: impl Fn(&Router) -> bool + Send + Sync) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let t0 = Instant::now();
            while !until(r) {
                if t0.elapsed() > WATCHDOG {
                    r.stop();
                    panic!("condition never held");
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            r.stop();
        });
        r.run();
    });
}

/// Moves the simulated clock of `r` (built with `simtime`) `d` forward,
/// as if `d` passed with nothing to do: timers that fell due run at the
/// router's next run, and elements reading the time (pushes, handlers)
/// see the new moment. Panics on a router in real time.
pub fn advance(r: &Router, d: Duration) {
    let clock = &r.core.clock;
    assert!(
        clock.is_simulated(),
        "advance: the router runs in real time"
    );
    let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    clock.advance_to(clock.now_ns().saturating_add(d));
}

/// The packets that reached `TestSink` `name` so far (taken).
pub fn sink(r: &Router, name: &str) -> Vec<Packet> {
    r.element::<TestSink>(name)
        .unwrap_or_else(|| panic!("no TestSink named {name}"))
        .take()
}

/// A read handler's value (`"c.count"`), panicking if it cannot be read.
pub fn handler(r: &Router, spec: &str) -> String {
    r.read_handler(spec)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routers_build_run_and_fail_with_their_messages() {
        let reg = Registry::default();
        let r = build(&reg, "s :: TestSource -> k :: TestSink;");
        assert!(sink(&r, "k").is_empty());
        r.push_into("k", 0, Batch::from(vec![Packet::new(3).unwrap()]))
            .unwrap();
        assert_eq!(sink(&r, "k").len(), 1);
        assert!(sink(&r, "k").is_empty(), "sink() takes the packets");
        let e = build_err(&reg, "s :: TestSource -> k :: NoSuchClass;");
        assert!(e.contains("NoSuchClass"), "{e}");
        assert_err(
            try_build(&reg, "x :: NoSuchClass"),
            "unknown element class 'NoSuchClass'",
        );
        assert_eq!(handler(&r, "k.class"), "TestSink");
        run_until(&r, |r| handler(r, "s.class") == "TestSource");
    }
}
