//! # TimeFilter
//!
//! TimeFilter(\[START, END], keywords START, START_AFTER, START_DELAY, END, END_AFTER, END_DELAY, INTERVAL, STOP, END_CALL)
//!
//! Filters packets by timestamp.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Passes packets to output 0 only if their timestamps lie within a range;
//! other packets go to output 1, or are dropped if it is not connected.
//! The range is absolute or relative to the first timestamp seen.
//!
//! Keywords:
//! - `START` (absolute time, seconds since the epoch): pass packets with
//!   timestamps at least START.
//! - `START_AFTER` (relative time, `1.5`, `20ms`, `2hr`): pass packets at
//!   least this long after the first packet seen.
//! - `START_DELAY` (relative time): pass packets at least this long after
//!   initialization time.
//! - `END` (absolute time): pass packets with timestamps up to END; a
//!   packet stamped END or later is after the end (the range is START
//!   included, END excluded, as in Click).
//! - `END_AFTER` (relative time): up to this long after the first packet.
//! - `END_DELAY` (relative time): up to this long after initialization.
//! - `INTERVAL` (relative time): pass packets for this long after the
//!   start time.
//! - `STOP` (boolean, default false): stop the driver once a packet after
//!   the end time is seen.
//! - `END_CALL` (write handler and value): call it when the first packet
//!   after the end is seen; `$t` in the value becomes that packet's
//!   timestamp. STOP and END_CALL are mutually exclusive.
//!
//! START and END may also be given as the first two positional
//! arguments: `TimeFilter(0, 1)` passes packets stamped from 0 up to (not
//! including) 1 second after the epoch.
//!
//! Supply at most one of START, START_AFTER and START_DELAY, and at most one
//! of END, END_AFTER, END_DELAY and INTERVAL.
//!
//! Handlers:
//! - `start` (read/write): the start time (meaningless with START_AFTER
//!   before a packet has passed).
//! - `end` (read/write): the end time.
//! - `interval` (read/write): end minus start; writing it keeps the start
//!   and moves the end.
//! - `extend_interval` (write): a time by which to move the end later. If
//!   called from the END_CALL handler, the packet that triggered it is not
//!   filtered out if it now lies within the range.
//!
//! Example:
//!
//!     FromDump(f.pcap, STOP true) -> TimeFilter(START_AFTER 10, INTERVAL 5) -> ToDump(g.pcap)

use super::{fmt_time, Time};
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::sync::Mutex;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rel {
    /// Relative to the first packet: fixed once it is seen.
    First,
    Fixed,
}

struct State {
    start: i64,
    end: i64,
    /// The range is known (absolute or after the first packet).
    ready: bool,
    start_after: Option<i64>,
    end_after: Option<i64>,
    interval: Option<i64>,
    /// The end was passed (STOP / END_CALL fire once).
    ended: bool,
}

pub struct TimeFilter {
    st: Mutex<State>,
    stop: bool,
    end_call: Option<(String, String)>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("TimeFilter", "1/1-2", "a/ah", make)
        .shared("a time range that may be relative to the first packet of all flows")
}

fn make(cx: &mut ConfigCx<'_>) -> Result<TimeFilter, String> {
    let mut a = cx.args();
    let start: Option<Time> = a.read_p("START");
    let end: Option<Time> = a.read_p("END");
    let start_after: Option<Time> = a.read("START_AFTER");
    let start_delay: Option<Time> = a.read("START_DELAY");
    let end_after: Option<Time> = a.read("END_AFTER");
    let end_delay: Option<Time> = a.read("END_DELAY");
    let interval: Option<Time> = a.read("INTERVAL");
    let stop = a.read("STOP").unwrap_or(false);
    let end_call: Option<Raw> = a.read("END_CALL");
    a.complete()?;
    let n_start = [start, start_after, start_delay].iter().flatten().count();
    let n_end = [end, end_after, end_delay, interval]
        .iter()
        .flatten()
        .count();
    if n_start > 1 {
        return Err("supply at most one of START, START_AFTER and START_DELAY".into());
    }
    if n_end > 1 {
        return Err("supply at most one of END, END_AFTER, END_DELAY and INTERVAL".into());
    }
    if stop && end_call.is_some() {
        return Err("STOP and END_CALL are mutually exclusive".into());
    }
    let end_call = match end_call {
        Some(Raw(s)) => {
            let s = s.trim().trim_matches('"').trim();
            let (h, v) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
            if h.is_empty() {
                return Err("END_CALL: expected a write handler".into());
            }
            Some((h.to_string(), v.trim().to_string()))
        }
        None => None,
    };
    let now = Timestamp::now().0;
    let rel = if start_after.is_some() || end_after.is_some() {
        Rel::First
    } else {
        Rel::Fixed
    };
    let start_v = start
        .map(|t| t.0)
        .or(start_delay.map(|t| now + t.0))
        .unwrap_or(i64::MIN);
    let end_v = end
        .map(|t| t.0)
        .or(end_delay.map(|t| now + t.0))
        .or(interval.filter(|_| rel == Rel::Fixed).map(|t| {
            if start_v == i64::MIN {
                i64::MAX
            } else {
                start_v.saturating_add(t.0)
            }
        }))
        .unwrap_or(i64::MAX);
    Ok(TimeFilter {
        st: Mutex::new(State {
            start: start_v,
            end: end_v,
            ready: rel == Rel::Fixed,
            start_after: start_after.map(|t| t.0),
            end_after: end_after.map(|t| t.0),
            interval: interval.map(|t| t.0),
            ended: false,
        }),
        stop,
        end_call,
    })
}

fn show(t: i64) -> String {
    match t {
        i64::MIN | i64::MAX => "-".into(),
        t => fmt_time(t),
    }
}

impl TimeFilter {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Action for TimeFilter {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "start",
            |e, _| show(e.lock().start),
            |e, v, hx| {
                let t: Time = hx.arg(v)?;
                e.lock().start = t.0;
                Ok(())
            },
        ),
        Handler::rw(
            "end",
            |e, _| show(e.lock().end),
            |e, v, hx| {
                let t: Time = hx.arg(v)?;
                let mut s = e.lock();
                s.end = t.0;
                s.ended = false;
                Ok(())
            },
        ),
        Handler::rw(
            "interval",
            |e, _| {
                let s = e.lock();
                if s.start == i64::MIN || s.end == i64::MAX {
                    "-".into()
                } else {
                    fmt_time(s.end - s.start)
                }
            },
            |e, v, hx| {
                let t: Time = hx.arg(v)?;
                let mut s = e.lock();
                s.interval = Some(t.0);
                if s.start != i64::MIN {
                    s.end = s.start.saturating_add(t.0);
                }
                s.ended = false;
                Ok(())
            },
        ),
        Handler::write("extend_interval", |e, v, hx| {
            let t: Time = hx.arg(v)?;
            let mut s = e.lock();
            s.end = s.end.saturating_add(t.0);
            s.ended = false;
            Ok(())
        }),
    ];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = p.timestamp().0;
        let mut s = self.lock();
        if !s.ready {
            s.ready = true;
            if let Some(a) = s.start_after {
                s.start = t.saturating_add(a);
            }
            if let Some(a) = s.end_after {
                s.end = t.saturating_add(a);
            } else if let Some(i) = s.interval {
                let base = if s.start == i64::MIN { t } else { s.start };
                s.end = base.saturating_add(i);
            }
        }
        if t < s.start {
            return Verdict::Out(1);
        }
        if t < s.end {
            return Verdict::Out(0);
        }
        let first_after_end = !s.ended;
        s.ended = true;
        drop(s);
        if first_after_end {
            if self.stop {
                cx.request_stop();
            } else if let Some((h, v)) = &self.end_call {
                let v = v.replace("$t", &fmt_time(t));
                let h = if h.contains('.') {
                    h.clone()
                } else {
                    format!("{}.{h}", cx.element_name())
                };
                // The handler may call extend_interval: the lock is free.
                let _ = cx.handler_cx().write(&h, &v);
                let s = self.lock();
                if t >= s.start && t < s.end {
                    return Verdict::Out(0);
                }
            }
        }
        Verdict::Out(1)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::assert_err;

    fn run(decl: &str, ts: &[f64]) -> (Vec<u8>, Vec<u8>) {
        let h = harness(decl, 2);
        let ps = ts
            .iter()
            .enumerate()
            .map(|(i, &t)| at(i as u8, t))
            .collect();
        h.push(0, ps);
        (tags(&h.output(0)), tags(&h.output(1)))
    }

    #[test]
    fn absolute_range() {
        let (pass, out) = run(
            "TimeFilter(START 10, END 20)",
            &[5.0, 10.0, 15.0, 20.0, 20.5],
        );
        assert_eq!(pass, vec![1, 2], "START included, END excluded");
        assert_eq!(out, vec![0, 3, 4]);
        // The positional form is START, END.
        let (pass, out) = run("TimeFilter(10, 20)", &[5.0, 10.0, 15.0, 20.0]);
        assert_eq!((pass, out), (vec![1, 2], vec![0, 3]));
    }

    #[test]
    fn relative_to_first_packet() {
        let (pass, _) = run(
            "TimeFilter(START_AFTER 1, INTERVAL 2)",
            &[100.0, 100.5, 101.0, 102.5, 103.0, 103.5],
        );
        assert_eq!(pass, vec![2, 3]);
        let (pass, _) = run("TimeFilter(END_AFTER 500ms)", &[100.0, 100.25, 100.75]);
        assert_eq!(pass, vec![0, 1]);
    }

    #[test]
    fn handlers_and_end_call() {
        let h = harness(
            "TimeFilter(START 10, END 20, END_CALL extend_interval 5)",
            2,
        );
        assert_eq!(h.read("interval").unwrap(), "10.000000");
        h.push(0, vec![at(0, 21.0), at(1, 31.0)]);
        // The first packet past END calls extend_interval 5: it now fits.
        // The next one is past the new end (25): the call extends to 30,
        // still short of 31.
        assert_eq!(tags(&h.output(0)), vec![0]);
        assert_eq!(tags(&h.output(1)), vec![1]);
        assert_eq!(h.read("end").unwrap(), "30.000000");
        h.write("interval", "30").unwrap();
        assert_eq!(h.read("end").unwrap(), "40.000000");
        h.write("start", "0").unwrap();
        assert_eq!(h.read("start").unwrap(), "0.000000");
    }

    #[test]
    fn one_output_drops_and_bad_configs() {
        let h = harness("TimeFilter(END 1)", 1);
        h.push(0, vec![at(0, 0.5), at(1, 2.0)]);
        assert_eq!(tags(&h.output(0)), vec![0]);
        assert_eq!(h.drops(), 1);
        for (bad, want) in [
            (
                "TimeFilter(START 1, START_AFTER 1)",
                "e :: TimeFilter: supply at most one of START, START_AFTER and START_DELAY",
            ),
            (
                "TimeFilter(END 1, INTERVAL 1)",
                "e :: TimeFilter: supply at most one of END, END_AFTER, END_DELAY and INTERVAL",
            ),
            (
                "TimeFilter(STOP true, END_CALL x.y)",
                "e :: TimeFilter: STOP and END_CALL are mutually exclusive",
            ),
            (
                "TimeFilter(START soon)",
                "e :: TimeFilter: START: expected time",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }
}
