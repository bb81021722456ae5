//! # InfiniteSource
//!
//! InfiniteSource([DATA, LIMIT, BURST, ACTIVE, keywords LENGTH, DATASIZE, STOP, TIMESTAMP, END_CALL])
//!
//! Generates packets as fast as it is scheduled.
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits BURST packets per run; in pull context each pull
//! returns up to the requested number of packets.
//!
//! Arguments:
//! - `DATA` (string, default 64 bytes of text): packet contents.
//! - `LIMIT` (integer, at most 2^48-1, default -1): total packets to send; -1 means no limit.
//! - `BURST` (integer, default 1, at most 65536): packets per task run.
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `LENGTH` / `DATASIZE` (integer, at most 65549): cut or zero-pad DATA
//!   to this length.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//! - `TIMESTAMP` (boolean, default true): set each packet's timestamp.
//! - `END_CALL` (write handler and value): called after LIMIT packets
//!   (END_CALL and STOP are mutually exclusive).
//!
//! Drop reasons: `no buffer`: its thread's packet pool stayed empty for
//! a second (packets held or leaked downstream); until then it waits for
//! buffers and loses nothing.
//!
//! Handlers:
//! - `count` (read): packets sent.
//! - `reset` (write): resets the count, so LIMIT more packets go out.
//! - `active` (read/write), `limit` (read/write), `burst` (read/write).
//! - `data` (read/write): DATA; the next packets carry what is written.
//! - `length` / `datasize` (read/write): LENGTH (-1: DATA's own length).
//!
//! In a pull context InfiniteSource has an empty notifier: a puller
//! downstream sleeps once it is inactive or has sent LIMIT packets, and
//! wakes when the `active`, `limit` or `reset` handler lets it send again.
//!
//! Hot reconfiguration (`-R`): an InfiniteSource of the same name takes the
//! old one's count and the packets it sent against LIMIT.
//!
//! Example:
//!
//!     InfiniteSource(LENGTH 64, LIMIT 1000000, STOP true) -> c :: Counter -> Discard;

use super::gen::{data_batch, data_packet, parse_end_call, DryPool, Limit, POOL_REASONS};
use super::Contents;
use crate::util::write_burst;
use paraclick_runtime::args::Bytes;
use paraclick_runtime::element::QueueElement;
use paraclick_runtime::notifier::Notifier;
use paraclick_runtime::ring::ModeSwitch;
use paraclick_runtime::PerThread;
use paraclick_runtime::{
    Batch, ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, InitCx, Kind, Packet,
    PerThreadCount, StateCx,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

pub struct InfiniteSource {
    /// DATA, LENGTH and the packet contents they make, written by the
    /// `data` and `length` handlers (which then bump `version`).
    contents: RwLock<Arc<Contents>>,
    /// Moves on every write of `contents`.
    version: AtomicU64,
    /// Each thread's copy of `contents` and the version it is of: the
    /// packet path reads `version` (a line nobody writes while packets
    /// flow) instead of taking the lock, so threads share no written line.
    cached: PerThread<(u64, Arc<Contents>)>,
    /// The configured packet contents, which the packet path reads while
    /// `version` is 0 (no handler has written new ones): no per-thread
    /// copy to look up.
    configured: Box<[u8]>,
    limit: Limit,
    burst: AtomicUsize,
    active: AtomicBool,
    timestamp: bool,
    push: bool,
    count: PerThreadCount,
    /// RandomSource: every packet's bytes are freshly random.
    random: bool,
    /// Pull context: active while packets may come.
    empty: Notifier,
    /// Its thread's pool dry: wait, then drop as `no buffer`.
    dry: DryPool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::notifying("InfiniteSource", "0/1", "a", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .drop_reasons(POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<InfiniteSource, String> {
    let mut a = cx.args();
    let data = a.read_p::<Bytes>("DATA").map(|b| b.0);
    let limit = a.read_p::<i64>("LIMIT").unwrap_or(-1);
    let burst = a.read_p::<usize>("BURST").unwrap_or(1);
    let active = a.read_p::<bool>("ACTIVE").unwrap_or(true);
    let length = match a.read::<i64>("LENGTH") {
        Some(l) => Some(l),
        None => a.read::<i64>("DATASIZE"),
    };
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let timestamp = a.read::<bool>("TIMESTAMP").unwrap_or(true);
    let end_call = a.read::<String>("END_CALL");
    a.complete()?;
    crate::util::check_burst(burst)?;
    if stop && end_call.is_some() {
        return Err("END_CALL and STOP are mutually exclusive".into());
    }
    let contents = Arc::new(Contents::new(
        data.unwrap_or_else(|| super::DEFAULT_DATA.to_vec()),
        length.unwrap_or(-1).max(-1),
    )?);
    Ok(InfiniteSource {
        cached: PerThread::new(cx.nthreads, |_| (0, contents.clone())),
        configured: contents.packet.clone().into_boxed_slice(),
        contents: RwLock::new(contents),
        version: AtomicU64::new(0),
        limit: Limit::new(limit, stop, end_call.map(parse_end_call))?,
        burst: AtomicUsize::new(burst),
        active: AtomicBool::new(active),
        timestamp,
        push: cx.output_is_push(0),
        count: PerThreadCount::new(cx.nthreads),
        random: false,
        empty: Notifier::new(),
        dry: DryPool::default(),
    })
}

/// The source RandomSource builds: LENGTH random bytes per packet, with
/// InfiniteSource's LIMIT, BURST, ACTIVE, STOP and END_CALL machinery.
pub(super) struct RandomConfig {
    pub length: usize,
    pub limit: i64,
    pub burst: usize,
    pub active: bool,
    pub stop: bool,
    pub end_call: Option<String>,
}

pub(super) fn make_random(cx: &ConfigCx<'_>, c: RandomConfig) -> Result<InfiniteSource, String> {
    crate::util::check_burst(c.burst)?;
    if c.stop && c.end_call.is_some() {
        return Err("END_CALL and STOP are mutually exclusive".into());
    }
    let length = super::check_length(c.length as u64)?;
    let contents = Arc::new(Contents::new(Vec::new(), length as i64)?);
    Ok(InfiniteSource {
        cached: PerThread::new(cx.nthreads, |_| (0, contents.clone())),
        configured: contents.packet.clone().into_boxed_slice(),
        contents: RwLock::new(contents),
        version: AtomicU64::new(0),
        limit: Limit::new(c.limit, c.stop, c.end_call.map(parse_end_call))?,
        burst: AtomicUsize::new(c.burst),
        active: AtomicBool::new(c.active),
        timestamp: true,
        push: cx.output_is_push(0),
        count: PerThreadCount::new(cx.nthreads),
        random: true,
        empty: Notifier::new(),
        dry: DryPool::default(),
    })
}

impl InfiniteSource {
    /// The packet bytes to send, from this thread's copy (refreshed when a
    /// handler has written new contents).
    #[inline]
    fn packet_bytes<'a>(&'a self, cx: &'a mut Cx<'_>) -> &'a [u8] {
        let v = self.version.load(Ordering::Acquire);
        if v == 0 {
            return &self.configured;
        }
        let slot = self.cached.get(cx);
        if slot.0 != v {
            let c = self.contents.read().unwrap_or_else(|e| e.into_inner());
            *slot = (v, Arc::clone(&c));
        }
        &slot.1.packet
    }

    fn make_batch(&self, cx: &mut Cx<'_>, n: usize) -> Batch {
        let ts = self.timestamp.then(|| cx.timestamp());
        let mut b = data_batch(self.packet_bytes(cx), n, None, ts);
        if self.random {
            for p in b.iter_mut() {
                crate::util::fill_random(p.data_mut());
            }
        }
        let sent = b.len();
        if sent < n && !self.dry.short(cx, n - sent, 0) {
            self.limit.unclaim(n - sent);
        }
        self.count.add(cx.thread(), sent as u64);
        b
    }

    /// Spent (inactive, LIMIT sent), it says that only a handler write
    /// gives it packets again, so that its thread sleeps meanwhile.
    fn produce(&self, cx: &mut Cx<'_>, want: usize) -> Option<Batch> {
        if !self.active.load(Ordering::Relaxed) {
            cx.wake_when_written();
            return None;
        }
        let n = self.limit.claim(want);
        if n == 0 {
            self.limit.finish(cx);
            cx.wake_when_written();
            return None;
        }
        let b = self.make_batch(cx, n);
        (!b.is_empty()).then_some(b)
    }
}

impl InfiniteSource {
    /// A task run at BURST 1: one packet, no batch (kept small, so that
    /// Click's default costs no more than it must).
    #[inline(always)]
    fn run_one(&self, cx: &mut Cx<'_>) -> bool {
        self.run_one_with(cx, |cx, p| cx.push_packet(0, p))
    }

    /// A task run, its packet pushed by `push` when it sends one packet a
    /// run (BURST 1) instead of through output 0's dynamic push: for a
    /// program compiled for one configuration, which calls output 0's
    /// peer directly. `push` gets the packet with this element running
    /// and must leave it running. At another BURST, the ordinary run.
    #[inline(always)]
    pub fn run_task_with(&self, cx: &mut Cx<'_>, push: impl FnOnce(&mut Cx<'_>, Packet)) -> bool {
        let want = self.burst.load(Ordering::Relaxed);
        if want == 1 {
            return self.run_one_with(cx, push);
        }
        self.run_burst(cx, want)
    }

    /// [`InfiniteSource::run_one`], pushing with `push`.
    #[inline(always)]
    fn run_one_with(&self, cx: &mut Cx<'_>, push: impl FnOnce(&mut Cx<'_>, Packet)) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            cx.wake_when_written();
            return false;
        }
        if !self.limit.claim_one() {
            self.limit.finish(cx);
            cx.wake_when_written();
            return false;
        }
        // The router's clock (simulated under --simtime).
        let ts = self.timestamp.then(|| cx.timestamp());
        let p = data_packet(self.packet_bytes(cx), ts);
        let Some(mut p) = p else {
            if !self.dry.short(cx, 1, 0) {
                self.limit.unclaim_one();
                return false;
            }
            return true;
        };
        if self.random {
            crate::util::fill_random(p.data_mut());
        }
        self.count.add(cx.thread(), 1);
        push(cx, p);
        true
    }

    /// A task run at a BURST above 1: one batch.
    #[inline(never)]
    fn run_burst(&self, cx: &mut Cx<'_>, want: usize) -> bool {
        match self.produce(cx, want) {
            Some(b) => {
                cx.push(0, b);
                true
            }
            None => false,
        }
    }

    /// Whether no packet can come until a handler says otherwise.
    fn spent(&self) -> bool {
        !self.active.load(Ordering::Relaxed) || self.limit.exhausted()
    }

    /// After a handler that may let packets come again.
    fn maybe_wake(&self, hx: &HandlerCx<'_>) {
        self.empty.wake_from_handler_if(hx, || !self.spent());
    }

    fn length_text(&self, _hx: &HandlerCx<'_>) -> String {
        let c = self.contents.read().unwrap_or_else(|e| e.into_inner());
        c.length.to_string()
    }

    fn write_length(&self, v: &str, hx: &HandlerCx<'_>) -> Result<(), String> {
        self.set_contents(None, Some(hx.arg::<i64>(v)?.max(-1)))
    }

    /// New DATA and/or LENGTH; the next packets carry them.
    fn set_contents(&self, data: Option<Vec<u8>>, length: Option<i64>) -> Result<(), String> {
        let mut c = self.contents.write().unwrap_or_else(|e| e.into_inner());
        let data = data.unwrap_or_else(|| c.data.clone());
        let length = length.unwrap_or(c.length);
        *c = Arc::new(Contents::new(data, length)?);
        drop(c);
        self.version.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

impl crate::control::quit_watcher::Finishes for InfiniteSource {
    fn finished(&self) -> bool {
        self.limit.finished()
    }
}

impl Element for InfiniteSource {
    /// Whether its LIMIT is reached, to QuitWatcher.
    fn provide(&self, want: std::any::TypeId) -> Option<&'static dyn std::any::Any> {
        paraclick_runtime::provide!(want, InfiniteSource, dyn crate::control::quit_watcher::Finishes => |e| e)
    }

    /// Hot reconfiguration: the count and the packets counted against
    /// LIMIT carry over.
    fn take_state(&self, old: &Self, _sx: &mut StateCx<'_>) {
        self.count.add(0, old.count.get());
        self.limit.take_state(&old.limit);
    }

    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::write("reset", |e, _, hx| {
            e.count.reset();
            e.limit.reset();
            e.maybe_wake(hx);
            Ok(())
        }),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                e.maybe_wake(hx);
                Ok(())
            },
        ),
        Handler::rw(
            "limit",
            |e, _| e.limit.get().to_string(),
            |e, v, hx| {
                e.limit.set(hx.arg(v)?)?;
                e.maybe_wake(hx);
                Ok(())
            },
        ),
        Handler::rw(
            "burst",
            |e, _| e.burst.load(Ordering::Relaxed).to_string(),
            |e, v, hx| write_burst(&e.burst, v, hx),
        ),
        Handler::rw(
            "data",
            |e, _| {
                let c = e.contents.read().unwrap_or_else(|e| e.into_inner());
                String::from_utf8_lossy(&c.data).into_owned()
            },
            |e, v, hx| e.set_contents(Some(hx.arg::<Bytes>(v)?.0), None),
        ),
        Handler::rw(
            "length",
            InfiniteSource::length_text,
            InfiniteSource::write_length,
        ),
        Handler::rw(
            "datasize",
            InfiniteSource::length_text,
            InfiniteSource::write_length,
        ),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.push {
            let t = ix.add_task();
            ix.wait_for_room(t);
        }
        Ok(())
    }

    #[inline]
    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let want = self.burst.load(Ordering::Relaxed);
        if want == 1 {
            // Click's default BURST 1: one packet, no batch.
            return self.run_one(cx);
        }
        self.run_burst(cx, want)
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, max: usize) -> Option<Batch> {
        let got = self.produce(cx, max.max(1));
        if got.is_none() && self.spent() {
            self.empty.sleep(cx, || self.spent());
        }
        got
    }
}

impl QueueElement for InfiniteSource {
    fn set_ring_modes(&self, _: &ModeSwitch, _: bool, _: bool, _: bool) {}

    /// Pull context only: a pushing source has a task instead.
    fn empty_notifier(&self) -> Option<&Notifier> {
        (!self.push).then_some(&self.empty)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{reg, source as harness, try_source as try_harness};
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn huge_lengths_and_headrooms_are_clear_errors() {
        // LENGTH 10^10 aborted the process allocating the data; HEADROOM
        // 2^64-1 overflowed the first packet's size.
        for (decl, what) in [
            ("InfiniteSource(LENGTH 10000000000)", "LENGTH 10000000000"),
            ("InfiniteSource(DATASIZE 65550)", "LENGTH 65550"),
            ("RatedSource(LENGTH 10000000000)", "LENGTH 10000000000"),
            ("RandomSource(10000000000)", "LENGTH 10000000000"),
            (
                "RandomSource(18446744073709551615)",
                "LENGTH 18446744073709551615",
            ),
            ("TimedSource(HEADROOM 18446744073709551615)", "HEADROOM"),
            ("RatedSource(HEADROOM 10000000000)", "HEADROOM"),
        ] {
            let e = try_harness(decl, 1)
                .err()
                .unwrap_or_else(|| panic!("{decl} accepted"));
            assert!(e.contains(what) && e.contains("maximum"), "{decl}: {e}");
        }
        // The largest packet is still accepted.
        let h = harness("InfiniteSource(LENGTH 65549, LIMIT 1, STOP true)", 1);
        h.router.run();
        assert_eq!(h.output(0)[0].len(), 65549);
        // BURST 10^10 aborted allocating the batch; 2^64-1 overflowed it.
        for decl in [
            "InfiniteSource(BURST 10000000000)",
            "RandomSource(64, BURST 18446744073709551615)",
            "InfiniteSource(BURST 65537)",
        ] {
            let e = try_harness(decl, 1)
                .err()
                .unwrap_or_else(|| panic!("{decl} accepted"));
            assert!(
                e.contains("BURST must be between 1 and 65536"),
                "{decl}: {e}"
            );
        }
        let h = harness("InfiniteSource(LIMIT 0)", 1);
        assert_err(
            h.write("burst", "10000000000"),
            "e.burst: BURST must be between 1 and 65536, not 10000000000",
        );
        assert!(h.write("burst", "65536").is_ok());
        // A handler cannot ask for more either.
        let h = harness("RatedSource(LIMIT 0)", 1);
        assert_err(
            h.write("length", "10000000000"),
            "e.length: LENGTH 10000000000 is more than the maximum, 65549",
        );
        assert_eq!(h.read("length").unwrap(), "-1");
    }

    #[test]
    fn push_limit_stop_with_bursts() {
        let h = harness("InfiniteSource(\\<0102>, 10, 4, STOP true)", 1);
        h.router.run();
        let out = h.output(0);
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|p| p.data() == [1, 2]));
        assert_eq!(h.read("count").unwrap(), "10");
    }

    #[test]
    fn pull_limit_reset_and_handlers() {
        let conf = "e :: InfiniteSource(LENGTH 3, LIMIT 5); e -> u :: Unqueue -> o :: TestSink;";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        let b = r.pull_from("e", 0, 4).unwrap().unwrap();
        assert_eq!(b.len(), 4);
        assert_eq!(b.as_slice()[0].data(), b"Ran");
        assert_eq!(r.pull_from("e", 0, 4).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("e", 0, 4).unwrap().is_none());
        r.write_handler("e.reset", "").unwrap();
        assert_eq!(r.read_handler("e.count").unwrap(), "0");
        r.write_handler("e.limit", "2").unwrap();
        assert_eq!(r.pull_from("e", 0, 4).unwrap().unwrap().len(), 2);
        r.write_handler("e.active", "false").unwrap();
        r.write_handler("e.limit", "-1").unwrap();
        assert!(r.pull_from("e", 0, 4).unwrap().is_none());
        assert_err(
            r.write_handler("e.burst", "0"),
            "e.burst: BURST must be between 1 and 65536, not 0",
        );
    }

    #[test]
    fn data_and_length_handlers_change_the_next_packets() {
        let conf = "e :: InfiniteSource(\\<0102>); e -> u :: Unqueue -> o :: TestSink;";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        let first = |r: &Router| {
            r.pull_from("e", 0, 1).unwrap().unwrap().as_slice()[0]
                .data()
                .to_vec()
        };
        assert_eq!(first(&r), [1, 2]);
        r.write_handler("e.data", "child1_0").unwrap();
        assert_eq!(r.read_handler("e.data").unwrap(), "child1_0");
        assert_eq!(first(&r), b"child1_0");
        assert_eq!(r.read_handler("e.length").unwrap(), "-1");
        r.write_handler("e.length", "10").unwrap();
        assert_eq!(first(&r), b"child1_0\0\0");
        r.write_handler("e.data", "abc").unwrap();
        assert_eq!(first(&r), b"abc\0\0\0\0\0\0\0");
        r.write_handler("e.datasize", "-1").unwrap();
        assert_eq!(first(&r), b"abc");
        assert!(r.write_handler("e.length", "70000").is_err());
        assert_eq!(first(&r), b"abc");
    }

    #[test]
    fn scheduled_says_whether_the_task_waits_for_room() {
        // Click's `scheduled` handler: a source whose queue is full is
        // off the task list; an element without a task has no such
        // handler.
        let r = paraclick_runtime::testing::build_simtime(
            &reg(),
            "i :: InfiniteSource(LIMIT 15) -> q :: Queue(5) -> Idle;
             DriverManager(wait 0.1s, stop)",
        );
        assert_eq!(r.read_handler("i.scheduled").unwrap(), "true");
        paraclick_runtime::testing::run(&r);
        assert_eq!(r.read_handler("q.length").unwrap(), "5");
        assert_eq!(r.read_handler("i.scheduled").unwrap(), "false");
        assert!(r.read_handler("q.scheduled").is_err());
        assert!(r
            .read_handler("i.handlers")
            .unwrap()
            .contains("scheduled\tr\n"));
    }

    #[test]
    fn bad_configurations() {
        assert_err(
            try_harness("InfiniteSource(BURST 0)", 1),
            "e :: InfiniteSource: BURST must be between 1 and 65536, not 0",
        );
        assert_err(
            try_harness("InfiniteSource(STOP true, END_CALL x.y)", 1),
            "e :: InfiniteSource: END_CALL and STOP are mutually exclusive",
        );
    }

    /// Pulled `n` at most: how many came.
    fn pull_n(r: &Router, n: usize) -> usize {
        r.pull_from("e", 0, n).unwrap().map_or(0, |b| b.len())
    }

    #[test]
    fn a_hot_swap_carries_the_count_and_what_was_sent_against_the_limit() {
        let conf = |limit: u32| {
            format!(
                "e :: InfiniteSource(LENGTH 3, LIMIT {limit}); e -> u :: Unqueue -> o :: TestSink;"
            )
        };
        let old = Router::from_str(&conf(5), &reg(), 1).unwrap();
        assert_eq!(pull_n(&old, 3), 3);
        let new = Router::from_str(&conf(5), &reg(), 1).unwrap();
        new.take_state_from(&old).unwrap();
        assert_eq!(new.read_handler("e.count").unwrap(), "3");
        assert_eq!(pull_n(&new, 8), 2, "the rest of the limit");
        assert_eq!(pull_n(&new, 8), 0);
        assert_eq!(new.read_handler("e.count").unwrap(), "5");
        // A higher limit in the new configuration: what was sent counts.
        let newer = Router::from_str(&conf(8), &reg(), 1).unwrap();
        newer.take_state_from(&new).unwrap();
        assert_eq!(pull_n(&newer, 8), 3);
        assert_eq!(newer.read_handler("e.count").unwrap(), "8");
    }

    /// A sink that leaks what it gets: the buffers never go back to the
    /// pool (an element with a bug).
    struct Leak;

    impl paraclick_runtime::Element for Leak {
        fn push(
            &self,
            _cx: &mut paraclick_runtime::Cx<'_>,
            _port: usize,
            b: paraclick_runtime::Batch,
        ) {
            std::mem::forget(b);
        }
    }

    fn make_leak(cx: &mut paraclick_runtime::ConfigCx<'_>) -> Result<Leak, String> {
        cx.args().complete()?;
        Ok(Leak)
    }

    #[test]
    fn a_leak_that_empties_the_pool_ends_in_counted_drops_not_a_hang() {
        // Simulated time. Every packet leaks, so after the thread's pool
        // (8192 buffers) the source finds none: it waits a second (buffers
        // held for a while come back), then drops what it cannot make as
        // `no buffer`, reaches its LIMIT and stops the router. It waited
        // for buffers forever (the run's watchdog failed).
        let mut reg = reg();
        reg.register(paraclick_runtime::ClassSpec::element(
            "Leak", "1/0", "h", make_leak,
        ));
        let cap = paraclick_packet::pool::default_capacity() as u64;
        for (conf, limit) in [
            (
                "s :: InfiniteSource(LIMIT 10000, STOP true) -> Leak;",
                10_000,
            ),
            (
                "s :: InfiniteSource(LIMIT 10000, BURST 32, STOP true) -> Leak;",
                10_000,
            ),
            (
                "s :: RatedSource(RATE 1000000, LIMIT 9000, STOP true) -> Leak;",
                9_000u64,
            ),
            // FastUDPSource, FastUDPFlows and FastTCPFlows share this code;
            // they waited for buffers forever.
            (
                "s :: FastUDPSource(0, 9000, 60, 0:0:0:0:0:1, 1.0.0.1, 1, \
                 0:0:0:0:0:2, 2.0.0.2, 2, STOP true) -> Leak;",
                9_000u64,
            ),
            // It counted the packets it could not make as sent, silently.
            (
                "s :: FastUDPSourceIP6(0, 9000, 80, 2:0:0:0:1:2, 2001:db8:1::2, 1, \
                 2:0:0:0:1:3, 2001:db8:1::3, 2, STOP true) -> Leak;",
                9_000u64,
            ),
            // A timer's ping: it stopped pinging for good.
            (
                "s :: ICMPPingSource(1.0.0.1, 2.0.0.2, INTERVAL 0.0001, LIMIT 9000, \
                 STOP true) -> Leak;",
                9_000u64,
            ),
        ] {
            let r = paraclick_runtime::testing::build_simtime(&reg, conf);
            let t0 = r.now_ns();
            paraclick_runtime::testing::run(&r);
            let made: u64 = r.read_handler("s.count").unwrap().parse().unwrap();
            assert_eq!(made, cap, "{conf}");
            let lost = r.drop_reasons("s").unwrap();
            assert_eq!(lost, vec![("no buffer", limit - cap)], "{conf}");
            let waited = std::time::Duration::from_nanos(r.now_ns() - t0);
            assert!(waited >= super::super::gen::DRY_GRACE, "{conf}: {waited:?}");
        }
    }
}
