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
//! PullSwitch has an empty notifier: a puller downstream sleeps while the
//! input in use is dormant (every queue or source upstream of it is
//! empty), even if other inputs have packets, and wakes when that input
//! gets packets or the `switch` handler selects an input that has some.
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
//! PullSwitch without its empty notifier: every pull returns what input
//! INPUT returns (default 0; negative: nothing), and the `switch` handler
//! changes INPUT. A puller downstream sleeps only when every input is
//! dormant. Any number of inputs.
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

use paraclick_runtime::element::QueueElement;
use paraclick_runtime::notifier::Notifier;
use paraclick_runtime::ring::ModeSwitch;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, Kind};
use std::sync::atomic::{AtomicI64, Ordering};

pub struct PullSwitch {
    input: AtomicI64,
    ninputs: usize,
    /// PullSwitch's empty notifier, relaying the signal of the input in
    /// use (SimplePullSwitch registers no notifier).
    empty: Notifier,
}

pub struct StaticPullSwitch {
    input: i64,
}

pub fn spec() -> ClassSpec {
    ClassSpec::notifying("PullSwitch", "-/1", "l", make)
        .stateless()
        .kind(Kind::Scheduler)
        .dead_code(paraclick_runtime::DeadCode::SelectsInput)
        .metadata_only()
}

/// SimplePullSwitch: PullSwitch without the notifier.
pub fn simple_spec() -> ClassSpec {
    ClassSpec::element("SimplePullSwitch", "-/1", "l", make)
        .stateless()
        .kind(Kind::Scheduler)
        .dead_code(paraclick_runtime::DeadCode::SelectsInput)
        .metadata_only()
}

pub fn static_spec() -> ClassSpec {
    ClassSpec::element("StaticPullSwitch", "-/1", "l", make_static)
        .stateless()
        .kind(Kind::Scheduler)
        .dead_code(paraclick_runtime::DeadCode::StaticPullSwitch)
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
    let k = clamp_port(k, cx.ninputs);
    Ok(PullSwitch {
        input: AtomicI64::new(k),
        ninputs: cx.ninputs,
        // No input in use: dormant from the start.
        empty: Notifier::relay(k >= 0),
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

impl PullSwitch {
    /// Whether input `k` (-1: none) can give nothing until woken.
    fn dormant(&self, k: i64) -> bool {
        k < 0 || !self.empty.upstream_active(k as usize)
    }
}

impl Element for PullSwitch {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "switch",
        |e, _| e.input.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            let k = hx.arg::<i64>(v)?;
            e.input.store(clamp_port(k, e.ninputs), Ordering::Relaxed);
            // Switching to an input with packets wakes the puller.
            e.empty
                .wake_from_handler_if(hx, || !e.dormant(e.input.load(Ordering::Relaxed)));
            Ok(())
        },
    )];

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let k = self.input.load(Ordering::Relaxed);
        let got = pull_from(cx, k, max);
        if got.is_none() && self.dormant(k) {
            self.empty
                .sleep(cx, || self.dormant(self.input.load(Ordering::Relaxed)));
        }
        got
    }
}

impl QueueElement for PullSwitch {
    fn set_ring_modes(&self, _: &ModeSwitch, _: bool, _: bool, _: bool) {}

    fn empty_notifier(&self) -> Option<&Notifier> {
        Some(&self.empty)
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

    /// A script's record of `d.scheduled` and `c.count` at each step.
    fn steps(conf: &str) -> String {
        let r = paraclick_runtime::testing::build_simtime(&crate::test_kit::reg(), conf);
        paraclick_runtime::testing::run(&r);
        // Script's `set` keeps the quotes of "$log ...".
        r.read_handler("s.log").unwrap().replace('"', "")
    }

    #[test]
    fn pull_switch_notifies_for_the_input_in_use_only() {
        // Click's PullSwitch: a puller sleeps while the input in use is
        // dormant, even if another input has packets; switching to an
        // input with packets wakes it; a limited source's packets come,
        // then it sleeps again.
        let conf = "i1 :: InfiniteSource(\\<11>, LIMIT 4); i2 :: InfiniteSource(\\<22>, LIMIT 4);
            ps :: PullSwitch(-1); i1 -> [0]ps; i2 -> [1]ps; Idle -> [2]ps;
            ps -> c :: Counter -> d :: Discard;
            s :: Script(export log,
                wait 0.1s, set log \"$log $(d.scheduled)/$(c.count)\",
                write ps.switch 2, set log \"$log $(d.scheduled)\",
                wait 0.1s, set log \"$log $(d.scheduled)/$(c.count)\",
                write ps.switch 0, set log \"$log $(d.scheduled)\",
                wait 0.1s, set log \"$log $(d.scheduled)/$(c.count)\",
                write ps.switch 1, set log \"$log $(d.scheduled)\",
                wait 0.1s, set log \"$log $(d.scheduled)/$(c.count)\",
                stop)";
        assert_eq!(
            steps(conf).trim(),
            "false/0 false false/0 true false/4 true false/8"
        );
        // SimplePullSwitch has no notifier: the puller sleeps only when
        // every input is dormant, here never (i2 has packets).
        let conf = conf.replace("PullSwitch(-1)", "SimplePullSwitch(-1)");
        assert!(steps(&conf).starts_with(" true/0"), "{}", steps(&conf));
    }

    #[test]
    fn pullers_of_idle_sleep_and_of_simple_idle_do_not() {
        for (class, want) in [("Idle", "false"), ("SimpleIdle", "true")] {
            let conf = format!(
                "{class} -> u :: Unqueue -> Discard;
                 s :: Script(export log, wait 0.1s, set log \"$log $(u.scheduled)\", stop)"
            );
            assert_eq!(steps(&conf).trim(), want, "{class}");
        }
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
