//! # PullSwitch
//!
//! PullSwitch(\[INPUT])
//!
//! Forwards pull requests to a settable input.
//!
//! On every pull, returns what input INPUT returns. The default INPUT is
//! 0; a negative INPUT means every pull returns nothing. The `switch`
//! handler changes INPUT. Any number of inputs.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Arguments:
//! - `INPUT` (integer, default 0).
//!
//! Handlers:
//! - `switch` (read/write): the INPUT.
//!
//! Example:
//!
//!     a :: Queue; b :: Queue;
//!     a -> [0]ps :: PullSwitch(0); b -> [1]ps;
//!     ps -> ToDevice(eth0);   // write ps.switch 1 to send b's packets
//!
//! # SimplePullSwitch
//!
//! SimplePullSwitch(\[INPUT])
//!
//! Forwards pull requests to a settable input, without notification.
//!
//! Click's PullSwitch without its empty notifier; paraclick's PullSwitch
//! has none, so this is PullSwitch under Click's other name: every pull
//! returns what input INPUT returns (default 0; negative: nothing), and
//! the `switch` handler changes INPUT. Any number of inputs.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Arguments:
//! - `INPUT` (integer, default 0).
//!
//! Handlers:
//! - `switch` (read/write): the INPUT.
//!
//! # StaticPullSwitch
//!
//! StaticPullSwitch(INPUT)
//!
//! Forwards pull requests to a fixed input.
//!
//! On every pull, returns what input INPUT returns; a negative INPUT means
//! every pull returns nothing. Unlike PullSwitch it has no `switch` write
//! handler: INPUT cannot change while the router runs. Any number of
//! inputs.
//!
//! Ports: any number of inputs, 1 output. Processing: pull.
//!
//! Arguments:
//! - `INPUT` (integer).
//!
//! Handlers:
//! - `switch` (read): the INPUT.

use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, Kind};
use std::sync::atomic::{AtomicI64, Ordering};

pub struct PullSwitch {
    input: AtomicI64,
    ninputs: usize,
}

pub struct StaticPullSwitch {
    input: i64,
}

pub fn spec() -> ClassSpec {
    switch_named("PullSwitch")
}

/// SimplePullSwitch: PullSwitch under Click's other name.
pub fn simple_spec() -> ClassSpec {
    switch_named("SimplePullSwitch")
}

fn switch_named(name: &'static str) -> ClassSpec {
    ClassSpec::element(name, "-/1", "l", make)
        .stateless()
        .kind(Kind::Scheduler)
        .metadata_only()
}

pub fn static_spec() -> ClassSpec {
    ClassSpec::element("StaticPullSwitch", "-/1", "l", make_static)
        .stateless()
        .kind(Kind::Scheduler)
}

/// A port number in range, or -1 (nothing); Click clamps a too-large
/// INPUT to -1 as well.
pub(crate) fn clamp_port(k: i64, n: usize) -> i64 {
    if k >= 0 && (k as usize) < n {
        k
    } else {
        -1
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<PullSwitch, String> {
    let mut a = cx.args();
    let k = a.read_p::<i64>("INPUT").unwrap_or(0);
    a.complete()?;
    Ok(PullSwitch {
        input: AtomicI64::new(clamp_port(k, cx.ninputs)),
        ninputs: cx.ninputs,
    })
}

fn make_static(cx: &mut ConfigCx<'_>) -> Result<StaticPullSwitch, String> {
    let mut a = cx.args();
    let k = a.read_mp::<i64>("INPUT");
    a.complete()?;
    Ok(StaticPullSwitch {
        input: clamp_port(k, cx.ninputs),
    })
}

#[inline]
fn pull_from(cx: &mut Cx<'_>, k: i64, max: usize) -> Option<Batch> {
    if k < 0 {
        return None;
    }
    cx.pull(k as usize, max)
}

impl Element for PullSwitch {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "switch",
        |e, _| e.input.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            let k = hx.arg::<i64>(v)?;
            e.input.store(clamp_port(k, e.ninputs), Ordering::Relaxed);
            Ok(())
        },
    )];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        pull_from(cx, self.input.load(Ordering::Relaxed), max)
    }
}

impl Element for StaticPullSwitch {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("switch", |e, _| e.input.to_string())];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        pull_from(cx, self.input, max)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf};
    use crate::test_kit::{fill, tagged, tags};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    fn router(class: &str) -> Router {
        conf(&format!(
            "s :: {class}; s -> Unqueue(ACTIVE false) -> TestSink;
             Idle -> q0 :: Queue(100) -> [0]s; Idle -> q1 :: Queue(100) -> [1]s;"
        ))
    }

    fn pull(r: &Router) -> Vec<u8> {
        r.pull_from("s", 0, 8)
            .unwrap()
            .map(|b| tags(b.as_slice()))
            .unwrap_or_default()
    }

    #[test]
    fn pulls_from_the_chosen_input() {
        for class in ["PullSwitch", "SimplePullSwitch"] {
            chosen_input(class);
        }
    }

    fn chosen_input(class: &str) {
        let r = router(class);
        fill(&r, "q0", vec![tagged(0, 60)]);
        fill(&r, "q1", vec![tagged(1, 60), tagged(1, 60)]);
        assert_eq!(pull(&r), vec![0]);
        assert_eq!(pull(&r), Vec::<u8>::new());
        r.write_handler("s.switch", "1").unwrap();
        assert_eq!(r.read_handler("s.switch").unwrap(), "1");
        assert_eq!(pull(&r), vec![1, 1]);
        r.write_handler("s.switch", "-1").unwrap();
        fill(&r, "q1", vec![tagged(1, 60)]);
        assert_eq!(pull(&r), Vec::<u8>::new());
        // Out of range means none, as in Click.
        r.write_handler("s.switch", "7").unwrap();
        assert_eq!(r.read_handler("s.switch").unwrap(), "-1");
        assert_err(
            r.write_handler("s.switch", "x"),
            "s.switch: expected integer",
        );
    }

    #[test]
    fn static_pull_switch_is_fixed() {
        let r = router("StaticPullSwitch(1)");
        fill(&r, "q0", vec![tagged(0, 60)]);
        fill(&r, "q1", vec![tagged(1, 60)]);
        assert_eq!(pull(&r), vec![1]);
        assert_eq!(r.read_handler("s.switch").unwrap(), "1");
        assert_err(
            r.write_handler("s.switch", "0"),
            "no write handler 's.switch'",
        );
        assert!(bad("s :: StaticPullSwitch; Idle -> Queue -> s -> Discard;"));
    }
}
