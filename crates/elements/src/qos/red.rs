//! # RED
//!
//! RED(MIN_THRESH, MAX_THRESH, MAX_P [, keywords QUEUES, STABILITY, GENTLE])
//!
//! Drops packets according to Random Early Detection.
//!
//! RED is associated with one or more Queues. It keeps a running average
//! of the sum of their lengths and marks packets with a probability that
//! grows with that average. By default the Queues are found from the
//! router's connections: a push RED uses the nearest Queues downstream, a
//! pull RED the nearest upstream. Marked packets are dropped, or sent out
//! output 1 if RED has two outputs.
//!
//! With the average at most MIN_THRESH, no packet is marked. Between
//! MIN_THRESH and MAX_THRESH the probability rises linearly from 0 to
//! MAX_P (spread out by the count of packets since the last mark, as in
//! Floyd and Jacobson's paper). In the Gentle variant (the default) it
//! then rises from MAX_P to 1 between MAX_THRESH and 2*MAX_THRESH, and
//! every packet is marked above that; without GENTLE every packet is
//! marked above MAX_THRESH. The draws come from the generator RandomSeed
//! seeds (unpredictable without it), one for each packet whose mark is a
//! matter of chance.
//!
//! Ports: 1 input, 1-2 outputs. Processing: agnostic; output 1 is push.
//!
//! Arguments:
//! - `MIN_THRESH` (integer).
//! - `MAX_THRESH` (integer, >= MIN_THRESH).
//! - `MAX_P` (real between 0 and 1): the marking probability when the
//!   average equals MAX_THRESH.
//! - `QUEUES` (space-separated element names): use these Queues' lengths
//!   instead of the ones found from the connections.
//! - `STABILITY` (unsigned, default 4): the average moves by 2^-STABILITY
//!   of the difference at each packet (RED's w_q = 2^-STABILITY); 0 uses
//!   the instantaneous length. About 9 matches NS's default w_q of 0.002.
//! - `GENTLE` (boolean, default true).
//!
//! Handlers:
//! - `min_thresh`, `max_thresh`, `max_p` (read/write).
//! - `drops` (read): packets marked so far.
//! - `queues` (read): the associated Queues, one a line.
//! - `avg_queue_size` (read): the current average.
//! - `stats` (read): a human-readable summary.
//!
//! Example:
//!
//!     ... -> RED(5, 50, 0.02) -> Queue(200) -> ...
//!
//! # AdaptiveRED
//!
//! AdaptiveRED(TARGET, MAX_P [, keywords QUEUES, STABILITY, GENTLE])
//!
//! Drops packets according to Adaptive RED.
//!
//! Random Early Detection, as RED, plus automatic parameter setting:
//! MIN_THRESH is TARGET/2 and MAX_THRESH is 3*TARGET/2, and every 0.5 s
//! MAX_P adapts (Floyd, Gummadi and Shenker, 2001): when the average is
//! above 60% of the way from MIN_THRESH to MAX_THRESH and MAX_P is at most
//! 0.5, MAX_P grows by min(0.01, MAX_P/4); when it is below 40% and MAX_P
//! is at least 0.01, MAX_P shrinks to 0.9 of itself. MAX_P and the
//! keywords are as in RED.
//!
//! Ports: 1 input, 1-2 outputs. Processing: agnostic; output 1 is push.
//!
//! Handlers: as RED's.
//!
//! Example:
//!
//!     ... -> AdaptiveRED(20, 0.1) -> Queue(200) -> ...

use crate::standard::queue::Queue;
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, HandlerCx, InitCx, PerThreadCount, Verdict,
};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often AdaptiveRED adapts MAX_P.
pub const ADAPT_INTERVAL: Duration = Duration::from_millis(500);

/// RED's parameters and state: a pure function of the queue lengths,
/// times and random numbers it is given.
#[derive(Clone, Debug)]
pub struct RedState {
    pub min: f64,
    pub max: f64,
    pub max_p: f64,
    pub gentle: bool,
    pub stability: u32,
    /// The average queue length.
    pub avg: f64,
    /// Packets since the last mark (-1: the average is below MIN_THRESH).
    count: i64,
    /// AdaptiveRED: the last adaptation.
    adapt: Option<Option<Instant>>,
}

impl RedState {
    pub fn new(min: f64, max: f64, max_p: f64, gentle: bool, stability: u32) -> RedState {
        RedState {
            min,
            max,
            max_p,
            gentle,
            stability,
            avg: 0.0,
            count: -1,
            adapt: None,
        }
    }

    /// Updates the average with the instantaneous length `q`; whether to
    /// mark this packet, given a draw `u` of a uniform random number in
    /// [0, 1), called only when the mark is a matter of chance.
    pub fn mark(&mut self, q: f64, now: Instant, u: impl FnOnce() -> f64) -> bool {
        let w = 0.5f64.powi(self.stability.min(60) as i32);
        self.avg += (q - self.avg) * w;
        self.adapt_max_p(now);
        let avg = self.avg;
        if avg <= self.min {
            self.count = -1;
            return false;
        }
        let p = if avg < self.max {
            self.count += 1;
            let pb = if self.max > self.min {
                self.max_p * (avg - self.min) / (self.max - self.min)
            } else {
                self.max_p
            };
            let spread = 1.0 - self.count as f64 * pb;
            if spread <= 0.0 {
                1.0
            } else {
                pb / spread
            }
        } else if self.gentle && avg < 2.0 * self.max && self.max > 0.0 {
            self.max_p + (1.0 - self.max_p) * (avg - self.max) / self.max
        } else {
            1.0
        };
        if p >= 1.0 || u() < p {
            self.count = 0;
            true
        } else {
            false
        }
    }

    /// AdaptiveRED's periodic adjustment of MAX_P.
    fn adapt_max_p(&mut self, now: Instant) {
        let Some(last) = self.adapt.as_mut() else {
            return;
        };
        match last {
            None => *last = Some(now),
            Some(t) if now.saturating_duration_since(*t) >= ADAPT_INTERVAL => {
                *t = now;
                let span = self.max - self.min;
                if self.avg > self.min + 0.6 * span && self.max_p <= 0.5 {
                    self.max_p += (self.max_p / 4.0).min(0.01);
                } else if self.avg < self.min + 0.4 * span && self.max_p >= 0.01 {
                    self.max_p *= 0.9;
                }
            }
            Some(_) => {}
        }
    }
}

pub struct Red {
    state: Mutex<RedState>,
    two_outputs: bool,
    /// QUEUES as given.
    queue_names: Vec<String>,
    /// Indexes and names of the Queues, found at initialize.
    queues: OnceLock<Vec<(usize, String)>>,
    drops: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["RED drop"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("RED", "1/1-2", "a/ah", make_red)
        .drop_reasons(DROP_REASONS)
        .shared("RED: one average queue length for all flows")
}

pub fn adaptive_spec() -> ClassSpec {
    ClassSpec::action("AdaptiveRED", "1/1-2", "a/ah", make_adaptive)
        .drop_reasons(DROP_REASONS)
        .shared("RED: one average queue length for all flows")
}

fn make_red(cx: &mut ConfigCx<'_>) -> Result<Red, String> {
    make(cx, false)
}

fn make_adaptive(cx: &mut ConfigCx<'_>) -> Result<Red, String> {
    make(cx, true)
}

fn check(min: f64, max: f64, max_p: f64) -> Result<(), String> {
    if min < 0.0 || max < min {
        return Err(format!(
            "need 0 <= MIN_THRESH <= MAX_THRESH, not {min} and {max}"
        ));
    }
    if !(0.0..=1.0).contains(&max_p) {
        return Err(format!("MAX_P must be between 0 and 1, not {max_p}"));
    }
    Ok(())
}

fn make(cx: &mut ConfigCx<'_>, adaptive: bool) -> Result<Red, String> {
    let mut a = cx.args();
    let (min, max) = if adaptive {
        let target = a.read_mp::<u32>("TARGET") as f64;
        (target / 2.0, 3.0 * target / 2.0)
    } else {
        (
            a.read_mp::<u32>("MIN_THRESH") as f64,
            a.read_mp::<u32>("MAX_THRESH") as f64,
        )
    };
    let max_p = a.read_mp::<f64>("MAX_P");
    let queues = a.read::<String>("QUEUES");
    let stability = a.read::<u32>("STABILITY").unwrap_or(4);
    let gentle = a.read::<bool>("GENTLE").unwrap_or(true);
    a.complete()?;
    check(min, max, max_p)?;
    let mut st = RedState::new(min, max, max_p, gentle, stability);
    if adaptive {
        st.adapt = Some(None);
    }
    Ok(Red {
        state: Mutex::new(st),
        two_outputs: cx.noutputs >= 2,
        queue_names: queues
            .map(|q| q.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        queues: OnceLock::new(),
        drops: PerThreadCount::new(cx.nthreads),
    })
}

/// The nearest Queues from `start`, following push connections
/// downstream (`down`) or pull connections upstream.
pub(crate) fn nearest_queues(ix: &InitCx<'_>, start: usize, down: bool) -> Vec<usize> {
    let mut seen = vec![start];
    let mut layer = vec![start];
    for _ in 0..32 {
        let mut next = Vec::new();
        let mut found = Vec::new();
        for &e in &layer {
            let peers = if down {
                ix.push_peers(e)
            } else {
                ix.pull_peers(e)
            };
            for p in peers {
                if seen.contains(&p) {
                    continue;
                }
                seen.push(p);
                if ix.element::<Queue>(p).is_some() {
                    found.push(p);
                } else {
                    next.push(p);
                }
            }
        }
        if !found.is_empty() {
            return found;
        }
        if next.is_empty() {
            break;
        }
        layer = next;
    }
    Vec::new()
}

impl Red {
    fn queue_len(&self, hx: &HandlerCx<'_>) -> usize {
        self.queues
            .get()
            .map(|qs| {
                qs.iter()
                    .filter_map(|&(i, _)| hx.element::<Queue>(i))
                    .map(Queue::len)
                    .sum()
            })
            .unwrap_or(0)
    }

    fn with<T>(&self, f: impl FnOnce(&mut RedState) -> T) -> T {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
}

fn show(v: f64) -> String {
    crate::util::fmt_rate((v * 1000.0).round() / 1000.0)
}

impl Action for Red {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "min_thresh",
            |e, _| show(e.with(|s| s.min)),
            |e, v, hx| {
                let m = hx.arg::<u32>(v)? as f64;
                e.with(|s| {
                    check(m, s.max, s.max_p)?;
                    s.min = m;
                    Ok(())
                })
            },
        ),
        Handler::rw(
            "max_thresh",
            |e, _| show(e.with(|s| s.max)),
            |e, v, hx| {
                let m = hx.arg::<u32>(v)? as f64;
                e.with(|s| {
                    check(s.min, m, s.max_p)?;
                    s.max = m;
                    Ok(())
                })
            },
        ),
        Handler::rw(
            "max_p",
            |e, _| show(e.with(|s| s.max_p)),
            |e, v, hx| {
                let p = hx.arg::<f64>(v)?;
                e.with(|s| {
                    check(s.min, s.max, p)?;
                    s.max_p = p;
                    Ok(())
                })
            },
        ),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::read("queues", |e, _| {
            e.queues
                .get()
                .map(|qs| {
                    qs.iter()
                        .map(|(_, n)| n.as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default()
        }),
        Handler::read("avg_queue_size", |e, _| show(e.with(|s| s.avg))),
        Handler::read("stats", |e, hx| {
            let (avg, min, max, p) = e.with(|s| (s.avg, s.min, s.max, s.max_p));
            format!(
                "{} current queue\n{} avg queue\n{} drops\nmin_thresh {}, max_thresh {}, max_p {}\n",
                e.queue_len(hx),
                show(avg),
                e.drops.get(),
                show(min),
                show(max),
                show(p)
            )
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let me = ix.element_index();
        let mut qs = Vec::new();
        if self.queue_names.is_empty() {
            qs = nearest_queues(ix, me, true);
            if qs.is_empty() {
                qs = nearest_queues(ix, me, false);
            }
            if qs.is_empty() {
                return Err("no nearby Queue found; name them with QUEUES".into());
            }
        } else {
            for n in &self.queue_names {
                let i = ix
                    .find(n)
                    .ok_or_else(|| format!("QUEUES: no element named '{n}'"))?;
                if ix.element::<Queue>(i).is_none() {
                    return Err(format!("QUEUES: '{n}' is not a Queue"));
                }
                qs.push(i);
            }
        }
        let named = qs
            .into_iter()
            .map(|i| (i, ix.element_name(i).to_string()))
            .collect();
        let _ = self.queues.set(named);
        Ok(())
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, _p: &mut Packet) -> Verdict {
        let q = self.queue_len(&cx.handler_cx()) as f64;
        let now = cx.now();
        let marked = {
            let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
            // A draw from the shared generator, at Click's 16-bit grain.
            g.mark(q, now, || {
                f64::from((crate::util::random() >> 5) & 0xFFFF) / 65536.0
            })
        };
        if !marked {
            return Verdict::Out(0);
        }
        self.drops.add(cx.thread(), 1);
        if self.two_outputs {
            Verdict::Out(1)
        } else {
            Verdict::DropFor(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf};
    use super::*;
    use crate::test_kit::{fill, pkts};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::testing::TestSink;

    #[test]
    fn marking_probability_follows_the_average() {
        let t = Instant::now();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut s = RedState::new(10.0, 20.0, 0.1, true, 0);
        // At or below MIN_THRESH: never.
        assert!((0..1000).all(|_| !s.mark(10.0, t, || rng.f64())));
        // Halfway: p_b = 0.05, spread by the count: between one mark in
        // 1 and one in 20 packets, about one in 10.5 on average.
        let n = (0..20000).filter(|_| s.mark(15.0, t, || rng.f64())).count();
        assert!((1500..2500).contains(&n), "{n}");
        // Gentle: halfway from MAX to 2*MAX is 0.55; at 2*MAX, always.
        let n = (0..20000).filter(|_| s.mark(30.0, t, || rng.f64())).count();
        assert!((10000..12000).contains(&n), "{n}");
        assert!((0..1000).all(|_| s.mark(40.0, t, || rng.f64())));
        // Not gentle: from MAX_THRESH on, always.
        let mut s = RedState::new(10.0, 20.0, 0.1, false, 0);
        assert!((0..1000).all(|_| s.mark(20.0, t, || rng.f64())));
    }

    #[test]
    fn stability_smooths_the_average() {
        let t = Instant::now();
        let mut s = RedState::new(10.0, 20.0, 0.1, true, 2);
        s.mark(100.0, t, || 0.99);
        assert_eq!(s.avg, 25.0);
        s.mark(100.0, t, || 0.99);
        assert_eq!(s.avg, 43.75);
    }

    #[test]
    fn adaptive_red_raises_and_lowers_max_p() {
        let t0 = Instant::now();
        // TARGET 20: MIN 10, MAX 30.
        let mut s = RedState::new(10.0, 30.0, 0.1, true, 0);
        s.adapt = Some(None);
        s.mark(29.0, t0, || 0.99);
        s.mark(29.0, t0 + ADAPT_INTERVAL, || 0.99);
        assert!((s.max_p - 0.11).abs() < 1e-9, "{}", s.max_p);
        s.mark(11.0, t0 + 2 * ADAPT_INTERVAL, || 0.99);
        assert!((s.max_p - 0.099).abs() < 1e-9, "{}", s.max_p);
        // Not yet another interval: unchanged.
        s.mark(11.0, t0 + 2 * ADAPT_INTERVAL + ADAPT_INTERVAL / 2, || 0.99);
        assert!((s.max_p - 0.099).abs() < 1e-9, "{}", s.max_p);
    }

    #[test]
    fn element_finds_the_queue_and_drops_or_diverts() {
        let r = conf(
            "Idle -> red :: RED(2, 4, 0.5, STABILITY 0) -> q :: Queue(100) -> Unqueue(ACTIVE false) -> TestSink;",
        );
        assert_eq!(r.read_handler("red.queues").unwrap(), "q");
        // Empty queue: everything passes.
        fill(&r, "red", pkts(2, 60));
        assert_eq!(r.read_handler("q.length").unwrap(), "2");
        // 2 * MAX_THRESH and more: everything is marked and dropped.
        fill(&r, "q", pkts(10, 60));
        fill(&r, "red", pkts(5, 60));
        assert_eq!(r.read_handler("q.length").unwrap(), "12");
        assert_eq!(r.read_handler("red.drops").unwrap(), "5");
        assert_eq!(r.total_drops(), 5);
        assert_eq!(r.read_handler("red.avg_queue_size").unwrap(), "12");
        // Two outputs: marked packets go out output 1; named QUEUES.
        let r = conf(
            "Idle -> red :: AdaptiveRED(4, 0.5, QUEUES q2, STABILITY 0) -> Queue -> Discard;
             red[1] -> o :: TestSink; Idle -> q2 :: Queue -> Discard;",
        );
        assert_eq!(r.read_handler("red.min_thresh").unwrap(), "2");
        assert_eq!(r.read_handler("red.max_thresh").unwrap(), "6");
        fill(&r, "q2", pkts(20, 60));
        fill(&r, "red", pkts(3, 60));
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 3);
        r.write_handler("red.max_p", "0.2").unwrap();
        assert_eq!(r.read_handler("red.max_p").unwrap(), "0.2");
        assert_err(
            r.write_handler("red.max_p", "1.5"),
            "red.max_p: MAX_P must be between 0 and 1, not 1.5",
        );
        assert_err(
            r.write_handler("red.min_thresh", "10"),
            "red.min_thresh: need 0 <= MIN_THRESH <= MAX_THRESH, not 10 and 6",
        );
        assert!(bad("Idle -> RED(5, 2, 0.1) -> Queue -> Discard;"));
        assert!(bad("Idle -> RED(1, 2, 0.1) -> Discard;"));
        assert!(bad(
            "Idle -> RED(1, 2, 0.1, QUEUES nope) -> Queue -> Discard;"
        ));
    }
}
