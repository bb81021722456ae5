//! What the packet sources share: LIMIT/STOP/END_CALL accounting
//! ([`Limit`]) and pacing at a packet rate ([`Pacer`], a generic cell rate
//! algorithm whose arithmetic is the pure function [`pace`]).

use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::{Batch, Cx};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

/// Most packets a pushing source emits per task run (one batch).
pub const MAX_BURST: usize = 32;

/// Splits Click's `END_CALL` value (`elem.handler VALUE...`) into the
/// handler and the value to write.
pub fn parse_end_call(s: String) -> (String, String) {
    match s.split_once(char::is_whitespace) {
        Some((h, v)) => (h.to_string(), v.trim().to_string()),
        None => (s, String::new()),
    }
}

/// Up to `n` packets holding `data`, with at least `headroom` bytes in
/// front (`None`: the pool's default) and `ts` (the router's current time,
/// `cx.timestamp()`, or none) as their timestamp. Fewer if the packet pool
/// runs dry.
pub fn data_batch(data: &[u8], n: usize, headroom: Option<usize>, ts: Option<Timestamp>) -> Batch {
    let ts = ts.unwrap_or(Timestamp::ZERO);
    let headroom = headroom.unwrap_or(paraclick_packet::pool::HEADROOM);
    Batch::alloc_copies(n, headroom, data, ts)
}

/// One packet holding `data`, timestamped `ts` (see [`data_batch`]);
/// `None` if the pool is dry.
#[inline(always)]
pub fn data_packet(data: &[u8], ts: Option<Timestamp>) -> Option<Packet> {
    let mut p = Packet::make(paraclick_packet::pool::HEADROOM, data.len(), 0)?;
    p.data_mut().copy_from_slice(data);
    p.set_timestamp(ts.unwrap_or(Timestamp::ZERO));
    Some(p)
}

/// The drop reasons of a source that makes packets from its thread's
/// pool: its `no buffer` drops ([`DryPool`]).
pub const POOL_REASONS: &[&str] = &["no buffer"];

/// How long a source's allocations may keep failing (its thread's packet
/// pool dry: every buffer held somewhere) before it stops waiting for
/// buffers and drops what it cannot make, counted as `no buffer`.
pub const DRY_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Failures further apart than this start a new dry spell.
const DRY_GAP: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a source waits between tries while the pool is dry.
pub const DRY_RETRY: std::time::Duration = std::time::Duration::from_millis(1);

/// A source's view of its thread's packet pool running dry.
///
/// A pool runs dry for a while when packets are held downstream (a
/// capture writing them, a queue nobody drains): the source then waits,
/// trying again every [`DRY_RETRY`] (its thread sleeps meanwhile), and
/// loses nothing. When the pool has been dry for [`DRY_GRACE`] (an element
/// that leaks its packets, or a pool smaller than what the router holds:
/// `--pool`), the source stops waiting: what it cannot make is dropped
/// and counted (reason `no buffer`, as a NIC counts a frame it had no
/// buffer for), counts against its LIMIT, and a warning says so once. So
/// a router whose buffers never come back finishes, its losses counted,
/// instead of hanging. Costs nothing while allocations succeed.
#[derive(Default)]
pub struct DryPool {
    /// The first and the latest failure of the current dry spell.
    spell: std::sync::Mutex<Option<(Instant, Instant)>>,
    warned: AtomicBool,
}

impl DryPool {
    /// The pool gave `missing` packets fewer than asked. Returns `true` if
    /// they are lost (counted as drops for reason `reason`, which must
    /// name `no buffer` in the class's table): the caller counts them
    /// against its LIMIT. `false`: the caller gives them back to its LIMIT
    /// and tries again (the runtime has been told when).
    #[cold]
    #[inline(never)]
    pub fn short(&self, cx: &mut Cx<'_>, missing: usize, reason: u8) -> bool {
        let now = cx.now();
        let since = {
            let mut g = self.spell.lock().unwrap_or_else(|e| e.into_inner());
            let first = match *g {
                Some((first, last)) if now.saturating_duration_since(last) <= DRY_GAP => first,
                _ => now,
            };
            *g = Some((first, now));
            first
        };
        if now.saturating_duration_since(since) < DRY_GRACE {
            cx.wake_at(now + DRY_RETRY);
            return false;
        }
        cx.count_drops_for(reason, missing as u64);
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!(
                "{}: thread {}'s packet pool has had no free buffer for {} s: \
                 packets it cannot make are dropped (drop reason 'no buffer'); \
                 an element is holding or leaking packets, or --pool is too small",
                cx.element_name(),
                cx.thread(),
                DRY_GRACE.as_secs()
            );
        }
        true
    }
}

/// A source's LIMIT: how many packets may still go out, and what happens
/// once they have (STOP, END_CALL). Shared by every thread running the
/// source; one atomic operation per batch, none when there is no limit.
pub struct Limit {
    limit: AtomicI64,
    /// The generation (bumped by every reset or change of the limit) in
    /// the high [`GEN_BITS`] bits, and the packets claimed against the
    /// limit in it (only counted when there is one) in the rest. One word,
    /// so that a claim is counted in the generation it reads: with two, a
    /// reset landing inside a claim made it count in the wrong one, or
    /// (the count was zeroed between a claim's add and its give-back)
    /// wrapped the count round, and the source never sent again.
    claimed: AtomicU64,
    done: AtomicBool,
    stop: bool,
    end_call: Option<(String, String)>,
    /// The source task's credit ([`Limit::claim_one`]): packets claimed
    /// against the limit in one chunk and not sent yet, in the low 32 bits,
    /// under the generation they were claimed in, in the high 32 bits.
    /// Credit of an older generation is void. Written only by the one task.
    credit: AtomicU64,
}

/// Bits of [`Limit`]'s claimed word that hold the generation.
const GEN_BITS: u32 = 16;

/// Mask of the claimed word's count (the low 48 bits).
const COUNT_MASK: u64 = (1 << (64 - GEN_BITS)) - 1;

/// The generation of a claimed word.
#[inline]
fn generation_of(w: u64) -> u64 {
    w >> (64 - GEN_BITS)
}

/// The claimed word of the next generation, with nothing claimed.
#[inline]
fn next_generation(w: u64) -> u64 {
    ((generation_of(w) + 1) << (64 - GEN_BITS)) & !COUNT_MASK
}

/// The largest LIMIT a source takes (2^48-1): [`Limit`] counts the
/// packets claimed against it in the low 48 bits of one word.
pub const MAX_LIMIT: i64 = COUNT_MASK as i64;

/// Checks a LIMIT (configuration or `limit` handler) against
/// [`MAX_LIMIT`]; a larger one would wrap the count into the generation
/// bits. Negative means no limit.
fn check_limit(limit: i64) -> Result<i64, String> {
    if limit > MAX_LIMIT {
        return Err(format!(
            "LIMIT {limit} is too large: the maximum is {MAX_LIMIT} (2^48-1)"
        ));
    }
    Ok(limit)
}

/// Packets one claim of [`Limit::claim_one`] takes at a time.
const CREDIT_CHUNK: u64 = 32;

/// Mask of the credit word's count (low half); the generation it was
/// granted in is the high half.
const CREDIT_MASK: u64 = 0xffff_ffff;

impl Limit {
    /// `limit < 0` means no limit; above [`MAX_LIMIT`], an error.
    pub fn new(
        limit: i64,
        stop: bool,
        end_call: Option<(String, String)>,
    ) -> Result<Limit, String> {
        Ok(Limit {
            limit: AtomicI64::new(check_limit(limit)?),
            claimed: AtomicU64::new(0),
            done: AtomicBool::new(false),
            stop,
            end_call,
            credit: AtomicU64::new(0),
        })
    }

    /// Claims one packet for a source's own task, the one caller that runs
    /// on one thread at a time (never from pulls or handlers, which use
    /// [`Limit::claim`]). A source of one packet per task run (Click's
    /// BURST 1) would otherwise pay an atomic read-modify-write, a locked
    /// instruction, per packet: this claims CREDIT_CHUNK packets at once
    /// and spends them with plain loads and stores. A reset or a new limit
    /// voids the credit (at most the packet being made while it happens is
    /// counted in the old generation). The limit stays exact: credit is
    /// only ever what `claim` granted.
    #[inline]
    pub fn claim_one(&self) -> bool {
        if !self.is_limited() {
            return true;
        }
        match self.live_credit() {
            Some(c) if c & CREDIT_MASK > 0 => {
                self.credit.store(c - 1, Ordering::Relaxed);
                true
            }
            _ => self.claim_chunk(),
        }
    }

    #[cold]
    fn claim_chunk(&self) -> bool {
        let (n, g) = self.claim_in(CREDIT_CHUNK as usize);
        if n == 0 {
            return false;
        }
        self.credit
            .store(g << 32 | (n as u64 - 1), Ordering::Relaxed);
        true
    }

    /// Gives back a packet [`Limit::claim_one`] granted but the source
    /// could not make (pool exhausted).
    #[inline]
    pub fn unclaim_one(&self) {
        if let Some(c) = self.live_credit().filter(|_| self.is_limited()) {
            self.credit.store(c + 1, Ordering::Relaxed);
        }
    }

    /// The credit word, if it was granted in the current generation.
    #[inline]
    fn live_credit(&self) -> Option<u64> {
        let g = generation_of(self.claimed.load(Ordering::Acquire));
        let c = self.credit.load(Ordering::Relaxed);
        (c >> 32 == g).then_some(c)
    }

    /// Credit granted to the task and not spent (current generation only).
    fn unspent(&self) -> u64 {
        self.live_credit().map_or(0, |c| c & CREDIT_MASK)
    }

    pub fn get(&self) -> i64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Changes the limit (a `limit` handler); the source may run again.
    /// Above [`MAX_LIMIT`], an error and no change.
    pub fn set(&self, limit: i64) -> Result<(), String> {
        let limit = check_limit(limit)?;
        // Unspent credit goes back before the limit changes.
        let unspent = self.unspent();
        let _ = self
            .claimed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some(next_generation(w) | (w & COUNT_MASK).saturating_sub(unspent))
            });
        self.limit.store(limit, Ordering::Relaxed);
        self.done.store(false, Ordering::Release);
        Ok(())
    }

    /// Whether a limit is set.
    #[inline]
    pub fn is_limited(&self) -> bool {
        self.limit.load(Ordering::Relaxed) >= 0
    }

    /// Claims up to `want` packets; returns how many may go out.
    #[inline]
    pub fn claim(&self, want: usize) -> usize {
        self.claim_in(want).0
    }

    /// [`Limit::claim`], with the generation the packets were claimed in.
    /// Never claims more than it grants (a compare-and-swap, one locked
    /// instruction as the add was; at the limit none), so there is nothing
    /// to give back that a reset could come between.
    #[inline]
    fn claim_in(&self, want: usize) -> (usize, u64) {
        let limit = self.limit.load(Ordering::Relaxed);
        let mut w = self.claimed.load(Ordering::Acquire);
        if limit < 0 {
            return (want, generation_of(w));
        }
        loop {
            let left = (limit as u64).saturating_sub(w & COUNT_MASK);
            let n = left.min(want as u64);
            if n == 0 {
                return (0, generation_of(w));
            }
            match self
                .claimed
                .compare_exchange_weak(w, w + n, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return (n as usize, generation_of(w)),
                Err(now) => w = now,
            }
        }
    }

    /// Hot reconfiguration: the packets `old` sent count against this
    /// limit, and a limit already reached does not finish again.
    pub fn take_state(&self, old: &Limit) {
        // Credit the old task was granted but never spent was not sent.
        let sent = (old.claimed.load(Ordering::Relaxed) & COUNT_MASK).saturating_sub(old.unspent());
        self.claimed
            .fetch_add(sent.min(COUNT_MASK), Ordering::Relaxed);
        if old.done.load(Ordering::Acquire) && self.get() == old.get() {
            self.done.store(true, Ordering::Release);
        }
    }

    /// Returns `n` claimed packets that were not made (pool exhausted).
    #[inline]
    pub fn unclaim(&self, n: usize) {
        if n > 0 && self.is_limited() {
            // Saturating: after a reset there may be less to give back.
            let _ = self
                .claimed
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                    Some((w & !COUNT_MASK) | (w & COUNT_MASK).saturating_sub(n as u64))
                });
        }
    }

    /// Whether every packet the limit allows has been claimed.
    #[inline]
    pub fn exhausted(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit >= 0
            && (self.claimed.load(Ordering::Relaxed) & COUNT_MASK).saturating_sub(self.unspent())
                >= limit as u64
    }

    /// Called once the limit is reached: calls END_CALL and asks the router
    /// to stop if STOP was given, once per exhaustion.
    pub fn finish(&self, cx: &mut Cx<'_>) {
        if self.done.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some((h, v)) = &self.end_call {
            let _ = cx.handler_cx().write(h, v);
        }
        if self.stop {
            cx.request_stop();
        }
    }

    /// Whether [`Limit::finish`] has run since the last reset.
    pub fn finished(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Starts over (a `reset` handler): LIMIT more packets may go out.
    pub fn reset(&self) {
        let _ = self
            .claimed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some(next_generation(w))
            });
        self.done.store(false, Ordering::Release);
    }
}

/// Time unit of the pacer: 1/16 ns (2^64 of them last 36 years), fine
/// enough that intervals of a few hundred nanoseconds keep their fraction.
pub const TICKS_PER_SEC: f64 = 16e9;

/// How far behind schedule a paced source may fall and still catch up
/// (as RatedUnqueue's token bucket: 20 ms worth of packets). Longer stalls
/// are forgiven rather than followed by a burst.
pub const SLACK_TICKS: u64 = 16 * 20_000_000;

const NOT_STARTED: u64 = u64::MAX;

/// The longest a paced packet waits for those after it, to go out with
/// them in one burst (1 ms, in ticks). A source whose packets are due
/// closer together than this (more than 1,000 a second) sends them in
/// bursts, one a millisecond, so that its thread wakes once a millisecond
/// rather than once a packet: its CPU then goes as the rate times the
/// per-packet cost plus 1,000 wake-ups a second. The average rate is
/// kept; a packet leaves up to this much after its evenly spaced time.
/// `--busy-poll` turns bursts off (packets evenly spaced, at a core's CPU).
pub const BURST_WINDOW_TICKS: u64 = 16 * 1_000_000;

/// The most packets one burst holds (see [`BURST_WINDOW_TICKS`]): above
/// 512,000 a second the window shrinks so that a burst stays within half
/// of a default Queue's capacity (1,000) and of a device's transmit ring,
/// whatever the rate.
pub const BURST_MAX_PACKETS: u64 = 512;

/// How long the first packet of a burst waits (see [`BURST_WINDOW_TICKS`])
/// at `interval` ticks between packets: the window (or
/// [`BURST_MAX_PACKETS`] intervals, if shorter) less one interval, so
/// that a burst holds about a window's worth of packets; 0 (evenly
/// spaced) at intervals of a window or more, when unpaced, or when
/// `busy` (`--busy-poll`).
#[inline]
pub fn burst_hold(interval: u64, busy: bool) -> u64 {
    if busy || interval == 0 || interval == u64::MAX {
        0
    } else {
        BURST_WINDOW_TICKS
            .min(interval.saturating_mul(BURST_MAX_PACKETS))
            .saturating_sub(interval)
    }
}

/// The generic cell rate algorithm, as a pure function of the time.
///
/// `tat` is the theoretical arrival time of the next packet, `now` the
/// current time, `interval` the spacing between packets and `slack` how far
/// `tat` may lag behind `now` (debt older than that is forgiven), all in the
/// same unit. Returns how many of `want` packets are due now and the next
/// `tat`. An `interval` of 0 means no pacing.
#[inline]
pub fn pace(tat: u64, now: u64, interval: u64, slack: u64, want: usize) -> (usize, u64) {
    if interval == 0 {
        return (want, now);
    }
    let tat = tat.max(now.saturating_sub(slack));
    if tat > now || want == 0 {
        return (0, tat);
    }
    let due = (now - tat) / interval + 1;
    let n = due.min(want as u64);
    (n as usize, tat + n * interval)
}

/// Converts a rate in packets per second into a pacing interval in ticks
/// (`None`: the rate is 0, nothing is ever due; `Some(0)`: unpaced).
pub fn rate_interval(rate: f64) -> Option<u64> {
    if rate.is_nan() || rate <= 0.0 {
        return None;
    }
    Some((TICKS_PER_SEC / rate).round() as u64)
}

/// Paces a source at a packet rate, shared by every thread running it (one
/// compare-and-swap per batch). The first packet is due at the first call.
pub struct Pacer {
    epoch: Instant,
    /// Pacing interval in ticks; `u64::MAX`: rate 0, nothing due; 0: unpaced.
    interval: AtomicU64,
    /// Next packet's theoretical arrival time (ticks since `epoch`).
    tat: AtomicU64,
    /// The time (ticks) the current burst was released: packets due by
    /// then go out without waiting (see [`BURST_WINDOW_TICKS`]).
    release: AtomicU64,
}

impl Pacer {
    /// A pacer at `rate` packets per second (0: nothing is ever due).
    pub fn new(rate: f64) -> Pacer {
        Pacer {
            epoch: Instant::now(),
            interval: AtomicU64::new(rate_interval(rate).unwrap_or(u64::MAX)),
            tat: AtomicU64::new(NOT_STARTED),
            release: AtomicU64::new(0),
        }
    }

    /// An unpaced pacer: every packet is due.
    pub fn unpaced() -> Pacer {
        Pacer {
            epoch: Instant::now(),
            interval: AtomicU64::new(0),
            tat: AtomicU64::new(NOT_STARTED),
            release: AtomicU64::new(0),
        }
    }

    #[inline]
    fn ticks(&self, t: Instant) -> u64 {
        let d = t.saturating_duration_since(self.epoch);
        d.as_secs() * 16_000_000_000 + u64::from(d.subsec_nanos()) * 16
    }

    /// Whether pacing is off (every packet due).
    #[inline]
    pub fn is_unpaced(&self) -> bool {
        self.interval.load(Ordering::Relaxed) == 0
    }

    /// Takes up to `want` packets that are due at `now`. Packets due
    /// closer together than [`BURST_WINDOW_TICKS`] are held until the
    /// first has waited its [`burst_hold`], then go out together (in as
    /// many takes as `want` needs), unless `--busy-poll`.
    #[inline]
    pub fn take(&self, now: Instant, want: usize) -> usize {
        self.take_with(now, want, paraclick_runtime::sched::busy_poll())
    }

    /// [`Pacer::take`], with busy polling (no bursts) given.
    pub fn take_with(&self, now: Instant, want: usize, busy: bool) -> usize {
        let interval = self.interval.load(Ordering::Relaxed);
        if interval == 0 {
            return want;
        }
        if interval == u64::MAX {
            return 0;
        }
        let now = self.ticks(now);
        let mut tat = self.tat.load(Ordering::Relaxed);
        let hold = burst_hold(interval, busy);
        if hold > 0 && tat != NOT_STARTED && tat > self.release.load(Ordering::Relaxed) {
            // A new burst: it goes once its first packet has waited
            // `hold` (debt beyond the slack is forgiven first, as `pace`
            // does, so a long stall does not hold the next burst back).
            let first = tat.max(now.saturating_sub(SLACK_TICKS));
            if now < first.saturating_add(hold) {
                return 0;
            }
            self.release.store(now, Ordering::Relaxed);
        }
        loop {
            let from = if tat == NOT_STARTED { now } else { tat };
            let (n, next) = pace(from, now, interval, SLACK_TICKS, want);
            if n == 0 && tat != NOT_STARTED {
                return 0;
            }
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return n,
                Err(t) => tat = t,
            }
        }
    }

    /// When the next packet is due, if pacing has started and a rate is
    /// set (for [`Cx::wake_at`] when [`Pacer::take`] gave nothing).
    /// With bursts (see [`Pacer::take`]), when the next burst goes.
    pub fn next_due(&self) -> Option<Instant> {
        self.next_due_with(paraclick_runtime::sched::busy_poll())
    }

    /// [`Pacer::next_due`], with busy polling (no bursts) given.
    pub fn next_due_with(&self, busy: bool) -> Option<Instant> {
        let interval = self.interval.load(Ordering::Relaxed);
        let tat = self.tat.load(Ordering::Relaxed);
        if interval == 0 || interval == u64::MAX || tat == NOT_STARTED {
            return None;
        }
        let at = if tat > self.release.load(Ordering::Relaxed) {
            tat.saturating_add(burst_hold(interval, busy))
        } else {
            tat
        };
        Some(self.epoch + std::time::Duration::from_nanos(at.div_ceil(16)))
    }

    /// Changes the rate at `now` (the router's clock). The next packet is
    /// due no later than one new interval from now.
    pub fn set_rate(&self, rate: f64, now: Instant) {
        let interval = rate_interval(rate).unwrap_or(u64::MAX);
        self.interval.store(interval, Ordering::Relaxed);
        if interval == 0 || interval == u64::MAX {
            return;
        }
        let cap = self.ticks(now).saturating_add(interval);
        let _ = self
            .tat
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t != NOT_STARTED && t > cap).then_some(cap)
            });
    }

    /// Turns pacing off: every packet is due.
    pub fn set_unpaced(&self) {
        self.interval.store(0, Ordering::Relaxed);
    }

    /// Hot reconfiguration: continues `old`'s schedule (packets due during
    /// the swap go out at once, within the usual slack).
    pub fn take_state(&self, old: &Pacer) {
        let tat = old.tat.load(Ordering::Relaxed);
        if tat == NOT_STARTED {
            return;
        }
        let shift = old.ticks(self.epoch);
        self.tat.store(tat.saturating_sub(shift), Ordering::Relaxed);
    }

    /// Starts afresh: the next packet is due at once, with no debt.
    pub fn restart(&self) {
        self.tat.store(NOT_STARTED, Ordering::Relaxed);
    }
}

/// A rate written to a `rate` handler: a nonnegative finite number.
pub fn nonnegative_rate(r: f64) -> Result<f64, String> {
    if r >= 0.0 && r.is_finite() {
        Ok(r)
    } else {
        Err(format!("expected nonnegative rate, not '{r}'"))
    }
}

/// Writes a paced source's `active`: a source turned back on restarts its
/// pacing (it does not send the burst it missed while off).
pub fn set_active(active: &std::sync::atomic::AtomicBool, pacer: &Pacer, on: bool) {
    use std::sync::atomic::Ordering;
    if on && !active.swap(true, Ordering::Relaxed) {
        pacer.restart();
    }
    active.store(on, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 16_000_000;

    /// A source's task at its limit keeps claiming (a migration or a wake
    /// runs it) while a handler resets the limit: every round must then
    /// grant exactly LIMIT. The old claim added and then gave back what it
    /// could not use; a reset zeroing the count between the two wrapped it
    /// round, and the source never sent again (a multicore test stalled
    /// so, 3 times in 250 runs). A claim made across a reset could also
    /// count in the new round a chunk whose credit was void.
    #[test]
    fn a_reset_while_the_task_claims_at_the_limit_lets_a_whole_round_out() {
        const ROUNDS: u64 = 20_000;
        const LIMIT: u64 = 100;
        let l = Limit::new(LIMIT as i64, false, None).unwrap();
        let got = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    if l.claim_one() {
                        got.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            for round in 1..=ROUNDS {
                let t0 = Instant::now();
                while got.load(Ordering::Relaxed) < round * LIMIT {
                    if t0.elapsed() > std::time::Duration::from_secs(20) {
                        stop.store(true, Ordering::Relaxed);
                        panic!(
                            "round {round}: {} of {} granted",
                            got.load(Ordering::Relaxed),
                            round * LIMIT
                        );
                    }
                    std::hint::spin_loop();
                }
                if round < ROUNDS {
                    l.reset();
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(got.load(Ordering::Relaxed), ROUNDS * LIMIT);
        assert!(l.exhausted());
        // A claim by count after a reset: the whole limit, then nothing.
        l.reset();
        assert_eq!(l.claim(64), 64);
        assert_eq!(l.claim(64), 36);
        assert_eq!(l.claim(64), 0);
        l.unclaim(10);
        assert_eq!(l.claim(64), 10);
        l.reset();
        l.unclaim(10);
        assert_eq!(l.claim(200), 100, "a give-back after a reset saturates");
    }

    /// A LIMIT is counted in 48 bits: above 2^48-1 a source's
    /// configuration, or a write of its `limit` handler, is refused with
    /// the maximum named, rather than wrapping the count round.
    #[test]
    fn a_limit_above_48_bits_is_refused() {
        use paraclick_runtime::testing::{build_err, try_build};
        let reg = crate::registry();
        let max = (1i64 << 48) - 1;
        assert_eq!(MAX_LIMIT, max);
        for class in ["InfiniteSource", "RatedSource", "TimedSource"] {
            let err = build_err(
                &reg,
                &format!("{class}(LIMIT {}, ACTIVE false) -> Discard", max + 1),
            );
            assert!(err.contains("maximum is 281474976710655"), "{class}: {err}");
            if let Err(e) = try_build(
                &reg,
                &format!("{class}(LIMIT {max}, ACTIVE false) -> Discard"),
            ) {
                panic!("{class}: LIMIT 2^48-1 refused: {e}");
            }
        }
        let r = try_build(
            &reg,
            "s :: InfiniteSource(LIMIT 5, ACTIVE false) -> Discard",
        )
        .unwrap();
        let err = r
            .write_handler("s.limit", &(max + 1).to_string())
            .unwrap_err();
        assert!(err.contains("maximum is 281474976710655"), "{err}");
        assert_eq!(r.read_handler("s.limit").unwrap(), "5");
        r.write_handler("s.limit", &max.to_string()).unwrap();
        assert_eq!(r.read_handler("s.limit").unwrap(), max.to_string());
    }

    /// Generated packets hold exactly their data at every length around
    /// the inline copy's cases (0 to 70 bytes, and one long packet).
    #[test]
    fn generated_packets_hold_their_data() {
        for n in (0..=70).chain([1500]) {
            let data: Vec<u8> = (0..n).map(|i| (i * 31 + 7) as u8).collect();
            let b = data_batch(&data, 3, None, None);
            assert_eq!(b.len(), 3);
            for p in b.iter() {
                assert_eq!(p.data(), &data[..], "length {n}");
            }
            let p = data_packet(&data, None).unwrap();
            assert_eq!(p.data(), &data[..], "length {n}");
        }
    }

    #[test]
    fn unpaced_gives_everything() {
        assert_eq!(pace(0, 5, 0, 0, 32), (32, 5));
    }

    #[test]
    fn first_packet_at_once_then_spaced() {
        let iv = MS; // 1000 packets per second
        let (n, tat) = pace(100 * MS, 100 * MS, iv, SLACK_TICKS, 32);
        assert_eq!((n, tat), (1, 101 * MS));
        // Nothing due just before the next interval.
        assert_eq!(pace(tat, 101 * MS - 1, iv, SLACK_TICKS, 32), (0, tat));
        assert_eq!(pace(tat, 101 * MS, iv, SLACK_TICKS, 32), (1, 102 * MS));
    }

    #[test]
    fn catches_up_within_slack_but_not_beyond() {
        let iv = MS;
        // 5 ms late: 6 packets due (the one at tat and five more).
        assert_eq!(pace(10 * MS, 15 * MS, iv, SLACK_TICKS, 32), (6, 16 * MS));
        // ... but no more than asked for; the rest stays owed.
        assert_eq!(pace(10 * MS, 15 * MS, iv, SLACK_TICKS, 4), (4, 14 * MS));
        // A stall of a second forgives all but 20 ms of debt.
        let (n, tat) = pace(0, 1000 * MS, iv, SLACK_TICKS, 1000);
        assert_eq!(n, 21);
        assert_eq!(tat, 1001 * MS);
    }

    /// RATE 1000 polled every 100 µs for a second emits exactly 1000 packets
    /// (plus the one due at the start), and every one on time.
    #[test]
    fn rate_1000_over_one_second() {
        let iv = rate_interval(1000.0).unwrap();
        assert_eq!(iv, MS);
        let start = 7 * MS;
        let mut tat = start;
        let mut sent = 0;
        let mut now = start;
        while now <= start + 1000 * MS {
            let (n, next) = pace(tat, now, iv, SLACK_TICKS, MAX_BURST);
            assert!(n <= 1, "bunched at {now}");
            sent += n;
            tat = next;
            now += MS / 10;
        }
        assert_eq!(sent, 1001);
    }

    /// Irregular polling (a busy worker) keeps the average rate.
    #[test]
    fn irregular_polls_keep_the_rate() {
        let iv = rate_interval(250_000.0).unwrap(); // 4 µs
        let mut tat = 0;
        let mut sent = 0;
        let mut now = 0u64;
        let mut x = 12345u64;
        while now < 100 * MS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += (x % 200) * 16_000; // 0..200 µs between polls
            let (n, next) = pace(tat, now, iv, SLACK_TICKS, MAX_BURST);
            sent += n;
            tat = next;
        }
        // Never ahead of schedule; behind by at most what the last few
        // polls could not take (bursts are capped at MAX_BURST).
        let scheduled = (now / iv + 1) as usize;
        assert!(sent <= scheduled, "{sent} > {scheduled}");
        assert!(sent + 2 * MAX_BURST >= scheduled, "{sent} << {scheduled}");
        assert!(sent >= 24_900, "{sent}");
    }

    #[test]
    fn rate_zero_and_huge() {
        assert_eq!(rate_interval(0.0), None);
        assert_eq!(rate_interval(-3.0), None);
        assert_eq!(rate_interval(1e11), Some(0));
        assert_eq!(rate_interval(3.0), Some(5_333_333_333));
        let p = Pacer::new(0.0);
        assert_eq!(p.take(Instant::now(), 10), 0);
        let p = Pacer::unpaced();
        assert_eq!(p.take(Instant::now(), 10), 10);
    }

    #[test]
    fn pacer_first_take_and_restart() {
        let p = Pacer::new(1.0);
        let t0 = p.epoch + std::time::Duration::from_secs(5);
        assert_eq!(p.take(t0, 32), 1);
        assert_eq!(p.take(t0, 32), 0);
        assert_eq!(p.take(t0 + std::time::Duration::from_millis(999), 32), 0);
        assert_eq!(p.take(t0 + std::time::Duration::from_secs(1), 32), 1);
        p.restart();
        assert_eq!(p.take(t0 + std::time::Duration::from_millis(1001), 32), 1);
    }

    /// At 10,000,000 a second a 1 ms burst would be 10,000 packets, ten
    /// times a default Queue: a burst holds at most BURST_MAX_PACKETS,
    /// so the window shrinks to 512 intervals (51.2 µs).
    #[test]
    fn a_burst_holds_at_most_burst_max_packets() {
        let us = std::time::Duration::from_micros(1);
        let p = Pacer::new(10_000_000.0);
        let t0 = p.epoch + std::time::Duration::from_secs(1);
        assert_eq!(p.take_with(t0, 32, false), 1, "the first at once");
        assert_eq!(p.take_with(t0 + 50 * us, 32, false), 0, "held");
        let t = t0 + std::time::Duration::from_nanos(51_200);
        let burst: usize = (0..40).map(|_| p.take_with(t, 32, false)).sum();
        assert!(
            (500..=BURST_MAX_PACKETS as usize).contains(&burst),
            "{burst} packets in one burst"
        );
    }

    /// A source faster than one packet per burst window (here 100,000 a
    /// second, 10 µs apart) sends in bursts: nothing until the first
    /// packet has waited the window less an interval, then all that is
    /// due, in as many takes as needed; the next burst is a window
    /// later. Over a second it sends its rate to within one burst, and
    /// `--busy-poll` spaces every packet.
    #[test]
    fn fast_rates_go_in_bursts_and_keep_their_rate() {
        let us = std::time::Duration::from_micros(1);
        let p = Pacer::new(100_000.0);
        let t0 = p.epoch + std::time::Duration::from_secs(1);
        assert_eq!(p.take_with(t0, 32, false), 1, "the first at once");
        // The next was due at t0 + 10 µs: held until t0 + 1 ms.
        assert_eq!(p.take_with(t0 + 20 * us, 32, false), 0);
        assert_eq!(p.take_with(t0 + 999 * us, 32, false), 0);
        assert_eq!(p.next_due_with(false), Some(t0 + 1000 * us));
        // Then the burst: 100 packets due by 1 ms, 32 at a time.
        let t = t0 + 1000 * us;
        let burst: usize = (0..5).map(|_| p.take_with(t, 32, false)).sum();
        assert_eq!(burst, 100);
        assert_eq!(p.next_due_with(false), Some(t0 + 2000 * us));
        assert_eq!(p.take_with(t0 + 1500 * us, 32, false), 0);
        // Busy polling: the next packet is due at its own time.
        assert_eq!(p.next_due_with(true), Some(t0 + 1010 * us));
        assert_eq!(p.take_with(t0 + 1010 * us, 32, true), 1);

        // A second, polled every 7 µs: the rate within one burst, and
        // a burst a millisecond (not a packet every wake-up).
        let p = Pacer::new(100_000.0);
        let (mut sent, mut bursts, mut last, mut t) = (0usize, 0usize, 0usize, t0);
        while t <= t0 + std::time::Duration::from_secs(1) {
            let n = p.take_with(t, MAX_BURST, false);
            // A burst: the takes with packets after one without.
            bursts += usize::from(n > 0 && last == 0);
            last = n;
            sent += n;
            t += 7 * us;
        }
        assert!((100_001 - 100..=100_001).contains(&sent), "{sent}");
        assert!((900..=1_100).contains(&bursts), "{bursts} bursts");
    }

    #[test]
    fn limit_claims() {
        let l = Limit::new(5, false, None).unwrap();
        assert_eq!(l.claim(3), 3);
        assert!(!l.exhausted());
        assert_eq!(l.claim(3), 2);
        assert!(l.exhausted());
        assert_eq!(l.claim(3), 0);
        l.unclaim(1);
        assert_eq!(l.claim(3), 1);
        l.reset();
        assert_eq!(l.claim(10), 5);
        let u = Limit::new(-1, false, None).unwrap();
        assert_eq!(u.claim(1000), 1000);
        assert!(!u.exhausted());
    }

    /// The task's chunked claims send exactly LIMIT packets, through
    /// unclaims, resets, a lowered limit and a hot swap.
    #[test]
    fn claim_one_spends_credit_exactly() {
        let sent = |l: &Limit| (0..1000).take_while(|_| l.claim_one()).count();
        let l = Limit::new(100, false, None).unwrap();
        assert_eq!(sent(&l), 100);
        assert!(l.exhausted());
        // Not exhausted while credit is left over.
        let l = Limit::new(100, false, None).unwrap();
        assert!(l.claim_one());
        assert!(!l.exhausted());
        l.unclaim_one();
        assert_eq!(sent(&l), 100);
        // A reset voids the credit and grants LIMIT again.
        let l = Limit::new(70, false, None).unwrap();
        for _ in 0..5 {
            assert!(l.claim_one());
        }
        l.reset();
        assert_eq!(sent(&l), 70);
        // Lowering the limit below what was granted: only the packets
        // already sent count.
        let l = Limit::new(70, false, None).unwrap();
        for _ in 0..5 {
            assert!(l.claim_one());
        }
        l.set(8).unwrap();
        assert_eq!(sent(&l), 3);
        // Hot swap: the new source sends what the old one did not.
        let old = Limit::new(50, false, None).unwrap();
        for _ in 0..10 {
            assert!(old.claim_one());
        }
        let new = Limit::new(50, false, None).unwrap();
        new.take_state(&old);
        assert_eq!(sent(&new), 40);
        // Claims by pullers and the task share the limit.
        let l = Limit::new(40, false, None).unwrap();
        assert!(l.claim_one());
        assert_eq!(l.claim(100), 40 - 32);
        assert_eq!(sent(&l), 31);
        // No limit: always.
        let u = Limit::new(-1, false, None).unwrap();
        assert_eq!(sent(&u), 1000);
    }

    #[test]
    fn end_call_split() {
        assert_eq!(
            parse_end_call("c.reset 1".into()),
            ("c.reset".into(), "1".into())
        );
        assert_eq!(parse_end_call("stop".into()), ("stop".into(), "".into()));
    }
}
