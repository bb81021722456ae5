//! # CoDel
//!
//! CoDel(\[TARGET, INTERVAL, keyword QUEUES])
//!
//! Drops packets according to CoDel (Controlled Delay) active queue
//! management (Nichols and Jacobson, 2012; RFC 8289).
//!
//! Ports: 1 input, 1 output. Processing: pull.
//!
//! CoDel sits after one or more Queues and tracks the sojourn time of
//! every packet pulled through it: the time since the packet's "first
//! timestamp" annotation, which `SetTimestamp(FIRST true)` must set just
//! before the packet is enqueued. While sojourn times stay above TARGET
//! for at least INTERVAL, CoDel drops a packet and enters its dropping
//! state; there it drops at times spaced INTERVAL/sqrt(count) apart, so
//! ever more often, until a packet's sojourn time falls below TARGET or
//! the queues hold at most one packet (they cannot drain faster), which
//! ends the dropping state. Re-entering it soon after leaving resumes the
//! drop rate where it was (RFC 8289's count memory). Every packet it
//! passes on has its first timestamp annotation overwritten with its
//! sojourn time.
//!
//! The Queues are the nearest ones upstream (following pull connections),
//! or those QUEUES names; their packet lengths are summed.
//!
//! Arguments:
//! - `TARGET` (time, default 5ms): the target sojourn time.
//! - `INTERVAL` (time, default 100ms): the sliding window over which the
//!   minimum sojourn time is tracked.
//! - `QUEUES` (space-separated element names): the Queues whose lengths
//!   count.
//!
//! Times are in seconds unless suffixed (`5ms`, `100ms`).
//!
//! Handlers:
//! - `target`, `interval` (read/write): TARGET and INTERVAL, in seconds.
//! - `queues` (read): the Queues, one name a line.
//! - `drops` (read): packets dropped so far.
//! - `stats` (read): `N current queue` and `D drops`, one a line.
//!
//! Example:
//!
//!     ... -> SetTimestamp(FIRST true) -> Queue(200) -> CoDel(5ms, 100ms) -> ...

use super::red::nearest_queues;
use crate::standard::queue::Queue;
use crate::standard::set_timestamp::{first_timestamp, set_first_timestamp};
use crate::util::fmt_rate;
use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, InitCx, PerThreadCount,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

pub struct CoDel {
    target_ns: AtomicU64,
    interval_ns: AtomicU64,
    queue_names: Vec<String>,
    queues: OnceLock<Vec<(usize, String)>>,
    state: Mutex<State>,
    drops: PerThreadCount,
}

/// RFC 8289's state, times in nanoseconds of the router's clock.
#[derive(Default)]
struct State {
    /// When sojourn times will have been above target for an interval (0:
    /// they are not above target).
    first_above: i64,
    dropping: bool,
    drop_next: i64,
    count: u64,
    last_count: u64,
}

const REASONS: &[&str] = &["sojourn time above target"];
const SOJOURN: u8 = 0;

pub fn spec() -> ClassSpec {
    ClassSpec::element("CoDel", "1/1", "l", make)
        .shared("a queue's delay: one drop schedule for all flows")
        .metadata_only()
        .drop_reasons(REASONS)
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

fn make(cx: &mut ConfigCx<'_>) -> Result<CoDel, String> {
    let mut a = cx.args();
    let target = a
        .read_p::<Duration>("TARGET")
        .unwrap_or(Duration::from_millis(5));
    let interval = a
        .read_p::<Duration>("INTERVAL")
        .unwrap_or(Duration::from_millis(100));
    let queues = a.read::<String>("QUEUES");
    a.complete()?;
    if interval.is_zero() {
        return Err("INTERVAL must be positive".into());
    }
    Ok(CoDel {
        target_ns: AtomicU64::new(ns(target)),
        interval_ns: AtomicU64::new(ns(interval)),
        queue_names: queues
            .map(|q| q.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        queues: OnceLock::new(),
        state: Mutex::new(State::default()),
        drops: PerThreadCount::new(cx.nthreads),
    })
}

impl CoDel {
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

    fn interval(&self) -> i64 {
        self.interval_ns.load(Ordering::Relaxed) as i64
    }

    /// RFC 8289's control law: `t` plus INTERVAL / sqrt(count).
    fn control_law(&self, t: i64, count: u64) -> i64 {
        t + (self.interval() as f64 / (count.max(1) as f64).sqrt()) as i64
    }

    /// Pulls one packet and says whether it may be dropped (sojourn time
    /// above target for an interval, and more than one packet queued).
    fn do_dequeue(&self, cx: &mut Cx<'_>, st: &mut State, now: i64) -> Option<(Packet, bool)> {
        let Some(mut p) = cx.pull_packet(0) else {
            st.first_above = 0;
            return None;
        };
        let sojourn = (now - first_timestamp(&p).0).max(0);
        set_first_timestamp(&mut p, Timestamp(sojourn));
        let target = self.target_ns.load(Ordering::Relaxed) as i64;
        let mut ok = false;
        if sojourn < target || self.queue_len(&cx.handler_cx()) == 0 {
            st.first_above = 0;
        } else if st.first_above == 0 {
            st.first_above = now + self.interval();
        } else if now >= st.first_above {
            ok = true;
        }
        Some((p, ok))
    }

    fn drop(&self, cx: &mut Cx<'_>, p: Packet) {
        self.drops.inc(cx.thread());
        cx.drop_packet_for(SOJOURN, p);
    }

    /// RFC 8289's dequeue: the next packet to pass, after any drops.
    fn dequeue(&self, cx: &mut Cx<'_>, st: &mut State) -> Option<Packet> {
        let now = cx.timestamp().0;
        let Some((mut p, mut ok)) = self.do_dequeue(cx, st, now) else {
            st.dropping = false;
            return None;
        };
        if st.dropping {
            if !ok {
                st.dropping = false;
            }
            while st.dropping && now >= st.drop_next {
                self.drop(cx, p);
                st.count += 1;
                match self.do_dequeue(cx, st, now) {
                    None => {
                        st.dropping = false;
                        return None;
                    }
                    Some((q, k)) => {
                        (p, ok) = (q, k);
                        if ok {
                            st.drop_next = self.control_law(st.drop_next, st.count);
                        } else {
                            st.dropping = false;
                        }
                    }
                }
            }
        } else if ok {
            self.drop(cx, p);
            let next = self.do_dequeue(cx, st, now);
            st.dropping = true;
            let delta = st.count.saturating_sub(st.last_count);
            st.count = if delta > 1 && now - st.drop_next < 16 * self.interval() {
                delta
            } else {
                1
            };
            st.drop_next = self.control_law(now, st.count);
            st.last_count = st.count;
            return next.map(|(q, _)| q);
        }
        Some(p)
    }
}

fn secs(v: &AtomicU64) -> String {
    fmt_rate(v.load(Ordering::Relaxed) as f64 / 1e9)
}

fn set_time(v: &AtomicU64, text: &str, hx: &HandlerCx<'_>, positive: bool) -> Result<(), String> {
    let d: Duration = hx.arg(text)?;
    if positive && d.is_zero() {
        return Err("INTERVAL must be positive".into());
    }
    v.store(ns(d), Ordering::Relaxed);
    Ok(())
}

impl Element for CoDel {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "target",
            |e, _| secs(&e.target_ns),
            |e, v, hx| set_time(&e.target_ns, v, hx, false),
        ),
        Handler::rw(
            "interval",
            |e, _| secs(&e.interval_ns),
            |e, v, hx| set_time(&e.interval_ns, v, hx, true),
        ),
        Handler::read("queues", |e, _| {
            e.queues
                .get()
                .map(|qs| qs.iter().map(|(_, n)| format!("{n}\n")).collect())
                .unwrap_or_default()
        }),
        Handler::read("drops", |e, _| e.drops.get().to_string()),
        Handler::read("stats", |e, hx| {
            format!(
                "{} current queue\n{} drops\n",
                e.queue_len(hx),
                e.drops.get()
            )
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let qs = if self.queue_names.is_empty() {
            let qs = nearest_queues(ix, ix.element_index(), false);
            if qs.is_empty() {
                return Err("no Queue found upstream; name them with QUEUES".into());
            }
            qs
        } else {
            let mut qs = Vec::new();
            for n in &self.queue_names {
                let i = ix
                    .find(n)
                    .ok_or_else(|| format!("QUEUES: no element named '{n}'"))?;
                if ix.element::<Queue>(i).is_none() {
                    return Err(format!("QUEUES: '{n}' is not a Queue"));
                }
                qs.push(i);
            }
            qs
        };
        let named = qs
            .into_iter()
            .map(|i| (i, ix.element_name(i).to_string()))
            .collect();
        let _ = self.queues.set(named);
        Ok(())
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Batch::new();
        while out.len() < max.max(1) {
            match self.dequeue(cx, &mut st) {
                Some(p) => out.push(p),
                None => break,
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::advance;
    use paraclick_runtime::Router;
    use std::time::Duration;

    fn rig(codel: &str) -> Router {
        build_simtime(
            &reg(),
            &format!(
                "Idle -> st :: SetTimestamp(FIRST true) -> q :: Queue(1000) -> c :: {codel}
                 -> Unqueue(ACTIVE false) -> TestSink;"
            ),
        )
    }

    fn pull(r: &Router, n: usize) -> Vec<paraclick_packet::Packet> {
        let mut v = Vec::new();
        for _ in 0..n {
            match r.pull_from("c", 0, 1).unwrap() {
                Some(mut b) => v.extend(b.drain()),
                None => break,
            }
        }
        v
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn short_sojourn_never_drops_and_is_recorded() {
        let r = rig("CoDel");
        fill(&r, "st", pkts(50, 60));
        advance(&r, ms(3));
        let out = pull(&r, 50);
        assert_eq!(out.len(), 50);
        assert!(out
            .iter()
            .all(|p| crate::standard::set_timestamp::first_timestamp(p).0 == 3_000_000));
        assert_eq!(handler(&r, "c.drops"), "0");
    }

    #[test]
    fn persistent_delay_drops_at_the_control_law_rate() {
        let r = rig("CoDel(5ms, 100ms)");
        fill(&r, "st", pkts(500, 60));
        advance(&r, ms(10));
        // Above target: the interval starts, nothing dropped yet.
        assert_eq!(pull(&r, 1).len(), 1);
        advance(&r, ms(99));
        assert_eq!(pull(&r, 1).len(), 1);
        assert_eq!(handler(&r, "c.drops"), "0");
        // A whole interval above target: one drop, then the dropping state.
        advance(&r, ms(1));
        assert_eq!(pull(&r, 1).len(), 1);
        assert_eq!(handler(&r, "c.drops"), "1");
        assert_eq!(pull(&r, 5).len(), 5);
        assert_eq!(handler(&r, "c.drops"), "1", "next drop an interval later");
        advance(&r, ms(100));
        pull(&r, 1);
        assert_eq!(handler(&r, "c.drops"), "2");
        // Next at 100/sqrt(2) = 70.7 ms.
        advance(&r, ms(70));
        pull(&r, 1);
        assert_eq!(handler(&r, "c.drops"), "2");
        advance(&r, ms(1));
        pull(&r, 1);
        assert_eq!(handler(&r, "c.drops"), "3");
        assert_eq!(
            handler(&r, "c.stats"),
            format!("{} current queue\n3 drops\n", 500 - 11 - 3)
        );
        assert_eq!(handler(&r, "q.drops"), "0");
    }

    #[test]
    fn low_sojourn_ends_dropping() {
        let r = rig("CoDel(TARGET 5ms, INTERVAL 100ms)");
        fill(&r, "st", pkts(20, 60));
        advance(&r, ms(10));
        pull(&r, 1);
        advance(&r, ms(100));
        pull(&r, 1);
        assert_eq!(handler(&r, "c.drops"), "1");
        // Drain the old packets, then fresh ones pass even much later in
        // the dropping schedule.
        pull(&r, 100);
        fill(&r, "st", pkts(20, 60));
        advance(&r, ms(1));
        let before = handler(&r, "c.drops");
        assert_eq!(pull(&r, 20).len(), 20);
        assert_eq!(handler(&r, "c.drops"), before);
    }

    #[test]
    fn handlers_and_queues() {
        let r = rig("CoDel(QUEUES q)");
        assert_eq!(handler(&r, "c.target"), "0.005");
        assert_eq!(handler(&r, "c.interval"), "0.1");
        assert_eq!(handler(&r, "c.queues"), "q\n");
        r.write_handler("c.target", "20ms").unwrap();
        assert_eq!(handler(&r, "c.target"), "0.02");
        assert!(r.write_handler("c.interval", "0").is_err());
        assert_eq!(handler(&r, "c.interval"), "0.1");
    }

    #[test]
    fn bad_config() {
        let e = build_err(
            &reg(),
            "Idle -> q :: Queue -> CoDel(QUEUES nope) -> Discard;",
        );
        assert!(e.contains("QUEUES: no element named 'nope'"), "{e}");
        let e = build_err(&reg(), "Idle -> Queue -> CoDel(1, 0) -> Discard;");
        assert!(e.contains("INTERVAL must be positive"), "{e}");
        let e = build_err(&reg(), "Idle -> n :: Null -> CoDel(QUEUES n) -> Discard;");
        assert!(e.contains("is not a Queue"), "{e}");
    }
}
