//! # ICMPPingSource
//!
//! ICMPPingSource(SRC, DST [, keywords INTERVAL, IDENTIFIER, LIMIT, DATA, ACTIVE, VERBOSE, STOP])
//!
//! Periodically sends ICMP echo requests.
//!
//! Ports: 0 or 1 input, 1 output. Processing: push input, agnostic output.
//!
//! Emits ping packets (IP and ICMP echo request, no link header) from SRC
//! to DST, every INTERVAL when its output is push, on every pull when it is
//! pull. The n-th ping (from 1) has IP ID and ICMP sequence number n (in
//! network byte order; after 65535 they wrap to 1), TTL 200, the ICMP
//! identifier IDENTIFIER and DATA as payload. Each packet has its network
//! header, destination IP annotation (DST) and timestamp (the send time)
//! set.
//!
//! The optional input takes the replies to the pings. ICMPPingSource then
//! keeps loss and round-trip statistics like ping(1), and with VERBOSE
//! prints a line per reply to standard error. A reply counts when it is an
//! ICMP echo reply (network header set) with our identifier and the
//! sequence number of a ping sent; its round-trip time is its timestamp
//! annotation minus the ping's send time. Packets on the input are
//! consumed (they count as the router's drops for this element).
//!
//! Keyword arguments:
//! - `INTERVAL` (time, default 1 second): time between pings.
//! - `IDENTIFIER` (0 to 65535, default 0): the ICMP identifier.
//! - `LIMIT` (integer, default -1): pings to send; negative means forever.
//! - `STOP` (boolean, default false): stop the router after LIMIT pings.
//! - `DATA` (string, default empty): payload of each ping.
//! - `ACTIVE` (boolean, default true): whether pings are sent.
//! - `VERBOSE` (boolean, default true): print a line per reply.
//! - `MIRROR` is not supported.
//!
//! Drop reasons: `reply received` (a packet on its input, consumed);
//! `no buffer`: its thread's packet pool stayed empty for a second
//! (packets held or leaked downstream), so a ping was not made; until
//! then it waits for buffers and loses nothing. A ping dropped so counts
//! toward LIMIT, not in `count`.
//!
//! Handlers:
//! - `active` (read/write), `src` (read/write), `dst` (read/write).
//! - `count` (read): pings sent.
//! - `limit`, `interval` (write): set LIMIT and INTERVAL.
//! - `reset_counts` (write): resets the counters (and the statistics).
//! - With an input: `summary` (read), ping(1)'s summary (`3 packets
//!   transmitted, 3 received, 0% packet loss` and `rtt
//!   min/avg/max/mdev = 0.120/0.130/0.150/0.012`, in milliseconds);
//!   `rtt_min`, `rtt_avg`, `rtt_max` (read), in Click's time format
//!   (`250us`, `1.5s`).
//!
//! Example:
//!
//!     ps :: ICMPPingSource(10.0.0.1, 10.0.0.2, INTERVAL 0.2, LIMIT 5, STOP true)
//!         -> rt;
//!     ip[1] -> [0]ps; // echo replies
//!     // paraclick -h ps.summary conf.click

use super::fmt_usec;
use paraclick_packet::wire::{checksum, icmp_type, ip_proto};
use paraclick_packet::{Batch, Packet, Timestamp};
use paraclick_runtime::args::Bytes;
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, InitCx, Kind};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const TIMER: usize = 0;

/// Reply statistics (only with an input). Replies are rare: a mutex.
struct Receiver {
    /// Send time (ns since the epoch) per sequence number; 0 if not sent,
    /// negated once a reply came.
    sent: Vec<i64>,
    nreceived: u64,
    nduplicate: u64,
    min: u64,
    max: u64,
    sum: u64,
    sq_sum: u128,
}

impl Receiver {
    fn new() -> Receiver {
        Receiver {
            sent: vec![0; 65536],
            nreceived: 0,
            nduplicate: 0,
            min: 0,
            max: 0,
            sum: 0,
            sq_sum: 0,
        }
    }
}

pub struct IcmpPingSource {
    src: AtomicU32,
    dst: AtomicU32,
    interval_ns: AtomicU64,
    ident: u16,
    limit: AtomicI64,
    data: Vec<u8>,
    active: AtomicBool,
    verbose: bool,
    stop: bool,
    push: bool,
    count: AtomicU64,
    /// Pings dropped for want of a buffer (`no buffer`); they count
    /// toward LIMIT.
    lost: AtomicU64,
    /// Its thread's pool dry: wait, then drop as `no buffer`.
    dry: crate::sources::gen::DryPool,
    scheduled: AtomicBool,
    receiver: Option<Mutex<Receiver>>,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["reply received", "no buffer"];

/// Its `no buffer` reason, in [`DROP_REASONS`].
const NO_BUFFER: u8 = 1;

pub fn spec() -> ClassSpec {
    ClassSpec::element("ICMPPingSource", "0-1/1", "h/a", make)
        .drop_reasons(DROP_REASONS)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IcmpPingSource, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv4Addr>("SRC");
    let dst = a.read_mp::<Ipv4Addr>("DST");
    let interval = a
        .read::<Duration>("INTERVAL")
        .unwrap_or(Duration::from_secs(1));
    let ident = a.read::<u16>("IDENTIFIER").unwrap_or(0);
    let data = a.read::<Bytes>("DATA").map(|b| b.0).unwrap_or_default();
    let limit = a.read::<i64>("LIMIT").unwrap_or(-1);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let verbose = a.read::<bool>("VERBOSE").unwrap_or(true);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    let mirror = a.read::<bool>("MIRROR").unwrap_or(false);
    a.complete()?;
    if mirror {
        return Err("MIRROR is not supported".into());
    }
    if data.len() > 65535 - 28 {
        return Err("DATA too long for an IP packet".into());
    }
    Ok(IcmpPingSource {
        src: AtomicU32::new(u32::from(src)),
        dst: AtomicU32::new(u32::from(dst)),
        interval_ns: AtomicU64::new(u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX)),
        ident,
        limit: AtomicI64::new(limit),
        data,
        active: AtomicBool::new(active),
        verbose,
        stop,
        push: cx.output_is_push(0),
        count: AtomicU64::new(0),
        lost: AtomicU64::new(0),
        dry: crate::sources::gen::DryPool::default(),
        scheduled: AtomicBool::new(false),
        receiver: (cx.ninputs > 0).then(|| Mutex::new(Receiver::new())),
    })
}

impl IcmpPingSource {
    fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns.load(Ordering::Relaxed))
    }

    /// Whether LIMIT allows another ping after `count` (and those lost
    /// for want of a buffer).
    fn more(&self, count: u64) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit < 0 || count + self.lost.load(Ordering::Relaxed) < limit as u64
    }

    /// No ping was made though LIMIT allows one: its thread's pool is dry.
    /// `true`: dry for a while, the ping is dropped (`no buffer`) and
    /// counts toward LIMIT; `false`: try again soon, losing nothing.
    #[cold]
    fn dry_pool(&self, cx: &mut Cx<'_>) -> bool {
        let lost = self.dry.short(cx, 1, NO_BUFFER);
        if lost {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
        lost
    }

    fn receiver(&self) -> Option<std::sync::MutexGuard<'_, Receiver>> {
        self.receiver
            .as_ref()
            .map(|r| r.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The ping numbered `n` (from 0).
    fn make_packet(&self, n: u64, now: Timestamp) -> Option<Packet> {
        let seq = (n % 0xFFFF) as u16 + 1;
        let len = 28 + self.data.len();
        let mut q = Packet::new(len)?;
        let dst = self.dst.load(Ordering::Relaxed);
        let d = q.data_mut();
        d[..20].copy_from_slice(&[
            0x45,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            200,
            ip_proto::ICMP,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ]);
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[4..6].copy_from_slice(&seq.to_be_bytes());
        d[12..16].copy_from_slice(&self.src.load(Ordering::Relaxed).to_be_bytes());
        d[16..20].copy_from_slice(&dst.to_be_bytes());
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let m = &mut d[20..];
        m[..4].copy_from_slice(&[icmp_type::ECHO_REQUEST, 0, 0, 0]);
        m[4..6].copy_from_slice(&self.ident.to_be_bytes());
        m[6..8].copy_from_slice(&seq.to_be_bytes());
        m[8..].copy_from_slice(&self.data);
        let c = checksum::checksum(m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        q.set_network_header(0, 20);
        let a = q.anno_mut();
        a.dst_ip = Ipv4Addr::from(dst);
        a.timestamp = now;
        if let Some(mut r) = self.receiver() {
            r.sent[usize::from(seq)] = now.0.max(1);
        }
        Some(q)
    }

    /// Sends the next ping if LIMIT allows; returns it.
    fn next_packet(&self, now: Timestamp) -> Option<Packet> {
        let n = self.count.load(Ordering::Relaxed);
        if !self.more(n) {
            return None;
        }
        let q = self.make_packet(n, now)?;
        self.count.store(n + 1, Ordering::Relaxed);
        Some(q)
    }

    fn schedule(&self, hx: &HandlerCx<'_>, after: Duration) {
        self.scheduled.store(true, Ordering::Relaxed);
        hx.schedule_after(TIMER, after);
    }

    /// Records a reply; false if `p` is not one of ours.
    fn record(&self, cx: &Cx<'_>, p: &Packet) -> bool {
        let Some(nh) = p.network_header() else {
            return false;
        };
        if nh.len() < 20 || nh[9] != ip_proto::ICMP {
            return false;
        }
        let hl = usize::from(nh[0] & 0x0F) * 4;
        let Some(m) = nh.get(hl..hl + 8) else {
            return false;
        };
        if hl < 20 || m[0] != icmp_type::ECHO_REPLY || m[4..6] != self.ident.to_be_bytes() {
            return false;
        }
        let seq = u16::from_be_bytes([m[6], m[7]]);
        let Some(mut r) = self.receiver() else {
            return false;
        };
        let sent = r.sent[usize::from(seq)];
        if sent == 0 {
            return false;
        }
        if sent < 0 {
            r.nduplicate += 1;
        }
        let ts = p.timestamp();
        let diff = if ts.is_zero() {
            0
        } else {
            let us = (ts.0 - sent.abs()).max(0) as u64 / 1000;
            if us < r.min || r.nreceived == 0 {
                r.min = us;
            }
            if us > r.max || r.nreceived == 0 {
                r.max = us;
            }
            r.sum += us;
            r.sq_sum += u128::from(us) * u128::from(us);
            us
        };
        r.nreceived += 1;
        r.sent[usize::from(seq)] = -sent.abs();
        drop(r);
        if self.verbose {
            let total = usize::from(u16::from_be_bytes([nh[2], nh[3]]));
            eprintln!(
                "{}: {} bytes from {}: icmp_seq={} ttl={} time={}.{:03} ms",
                cx.element_name(),
                total.saturating_sub(hl + 8),
                Ipv4Addr::new(nh[12], nh[13], nh[14], nh[15]),
                seq,
                nh[8],
                diff / 1000,
                diff % 1000
            );
        }
        true
    }

    fn summary(&self) -> String {
        let count = self.count.load(Ordering::Relaxed);
        let Some(r) = self.receiver() else {
            return String::new();
        };
        let unique = r.nreceived - r.nduplicate;
        let mut s = format!("{count} packets transmitted, {unique} received");
        if r.nduplicate > 0 {
            s.push_str(&format!(", +{} duplicates", r.nduplicate));
        }
        if let Some(loss) = (count.saturating_sub(unique) * 100).checked_div(count) {
            s.push_str(&format!(", {loss}% packet loss\n"));
        }
        if r.nreceived > 0 {
            let n = u128::from(r.nreceived);
            let avg = u128::from(r.sum) / n;
            let var = (r.sq_sum / n).saturating_sub(avg * avg);
            let mdev = isqrt(var);
            let ms = |v: u128| format!("{}.{:03}", v / 1000, v % 1000);
            s.push_str(&format!(
                "rtt min/avg/max/mdev = {}/{}/{}/{}\n",
                ms(u128::from(r.min)),
                ms(avg),
                ms(u128::from(r.max)),
                ms(mdev)
            ));
        }
        s
    }
}

fn isqrt(v: u128) -> u128 {
    if v < 2 {
        return v;
    }
    let mut x = (v as f64).sqrt() as u128;
    while x * x > v {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= v {
        x += 1;
    }
    x
}

impl IcmpPingSource {
    /// Whether the timer should be started: pushing, active, idle, and
    /// LIMIT allows more.
    fn idle(&self) -> bool {
        self.push
            && self.active.load(Ordering::Relaxed)
            && !self.scheduled.load(Ordering::Relaxed)
            && self.more(self.count.load(Ordering::Relaxed))
    }

    fn set_active(&self, on: bool, hx: &HandlerCx<'_>) {
        self.active.store(on, Ordering::Relaxed);
        if on && self.idle() {
            self.schedule(hx, Duration::ZERO);
        } else if !on {
            self.scheduled.store(false, Ordering::Relaxed);
            hx.unschedule(TIMER);
        }
    }

    fn set_limit(&self, limit: i64, hx: &HandlerCx<'_>) {
        self.limit.store(limit, Ordering::Relaxed);
        if self.idle() {
            self.schedule(hx, self.interval());
        }
    }

    fn reset_counts(&self, hx: &HandlerCx<'_>) {
        self.count.store(0, Ordering::Relaxed);
        self.lost.store(0, Ordering::Relaxed);
        if let Some(mut r) = self.receiver() {
            *r = Receiver::new();
        }
        if self.idle() {
            self.schedule(hx, self.interval());
        }
    }

    /// A round-trip time statistic (the reply handlers exist with an
    /// input only).
    fn rtt(&self, f: impl FnOnce(&Receiver) -> u64) -> Result<String, String> {
        let r = self.receiver().ok_or(NO_INPUT)?;
        Ok(fmt_usec(f(&r)))
    }
}

const NO_INPUT: &str = "no input: replies are not counted";

fn addr(a: &AtomicU32) -> String {
    Ipv4Addr::from(a.load(Ordering::Relaxed)).to_string()
}

impl Element for IcmpPingSource {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.set_active(hx.arg(v)?, hx);
                Ok(())
            },
        ),
        Handler::rw(
            "src",
            |e, _| addr(&e.src),
            |e, v, hx| {
                e.src
                    .store(u32::from(hx.arg::<Ipv4Addr>(v)?), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| addr(&e.dst),
            |e, v, hx| {
                e.dst
                    .store(u32::from(hx.arg::<Ipv4Addr>(v)?), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::read("count", |e, _| e.count.load(Ordering::Relaxed).to_string()),
        Handler::write("limit", |e, v, hx| {
            e.set_limit(hx.arg(v)?, hx);
            Ok(())
        }),
        Handler::write("interval", |e, v, hx| {
            let d: Duration = hx.arg(v)?;
            let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            e.interval_ns.store(ns, Ordering::Relaxed);
            Ok(())
        }),
        Handler::write("reset_counts", |e, _, hx| {
            e.reset_counts(hx);
            Ok(())
        }),
        Handler::try_read("summary", |e, _| match e.receiver {
            Some(_) => Ok(e.summary()),
            None => Err(NO_INPUT.into()),
        }),
        Handler::try_read("rtt_min", |e, _| e.rtt(|r| r.min)),
        Handler::try_read("rtt_avg", |e, _| e.rtt(|r| r.sum / r.nreceived.max(1))),
        Handler::try_read("rtt_max", |e, _| e.rtt(|r| r.max)),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.push
            && self.active.load(Ordering::Relaxed)
            && self.limit.load(Ordering::Relaxed) != 0
        {
            self.scheduled.store(true, Ordering::Relaxed);
            ix.schedule_after(TIMER, self.interval());
        }
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        self.scheduled.store(false, Ordering::Relaxed);
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        let Some(q) = self.next_packet(cx.timestamp()) else {
            if self.more(self.count.load(Ordering::Relaxed)) {
                // No buffer: try again soon, or drop it and go on.
                let after = if self.dry_pool(cx) {
                    self.interval()
                } else {
                    crate::sources::gen::DRY_RETRY
                };
                if self.more(self.count.load(Ordering::Relaxed)) {
                    self.scheduled.store(true, Ordering::Relaxed);
                    cx.schedule_after(TIMER, after);
                } else if self.stop {
                    cx.request_stop();
                }
            }
            return;
        };
        cx.push_one(0, q);
        if self.more(self.count.load(Ordering::Relaxed)) {
            self.scheduled.store(true, Ordering::Relaxed);
            cx.schedule_after(TIMER, self.interval());
        } else if self.stop {
            cx.request_stop();
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, _max: usize) -> Option<Batch> {
        if !self.active.load(Ordering::Relaxed) {
            return None;
        }
        match self.next_packet(cx.timestamp()) {
            Some(q) => Some(Batch::one(q)),
            None => {
                if self.more(self.count.load(Ordering::Relaxed)) {
                    self.dry_pool(cx);
                }
                if self.stop && !self.more(self.count.load(Ordering::Relaxed)) {
                    cx.request_stop();
                }
                None
            }
        }
    }

    fn push(&self, cx: &mut Cx<'_>, _port: usize, batch: Batch) {
        for p in batch.iter() {
            self.record(cx, p);
        }
        cx.drop_batch_for(0, batch);
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::checksum;
    use paraclick_packet::{Packet, Timestamp};
    use paraclick_runtime::testing::Harness;
    use paraclick_runtime::Router;

    /// The n-th ping from 1.0.0.1 to 2.0.0.2.
    fn ping(seq: u16, ident: u16, data: &[u8]) -> Vec<u8> {
        let mut rest = ident.to_be_bytes().to_vec();
        rest.extend(seq.to_be_bytes());
        let m = icmp(8, 0, [rest[0], rest[1], rest[2], rest[3]], data);
        let mut v = ipv4(ip("1.0.0.1"), ip("2.0.0.2"), 1, &m);
        v[4..6].copy_from_slice(&seq.to_be_bytes());
        v[8] = 200;
        v[10..12].fill(0);
        let c = checksum::checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        v
    }

    /// The reply to ping `p`, `rtt_us` after it was sent.
    fn reply(p: &Packet, rtt_us: i64) -> Packet {
        let mut v = p.data().to_vec();
        let (a, b) = v[12..20].split_at_mut(4);
        a.swap_with_slice(b);
        v[8] = 60;
        v[20] = 0;
        v[22..24].fill(0);
        let c = checksum::checksum(&v[20..]);
        v[22..24].copy_from_slice(&c.to_be_bytes());
        let mut r = pkt(&v);
        r.set_network_header(0, 20);
        r.set_timestamp(Timestamp(p.timestamp().0 + rtt_us * 1000));
        r
    }

    /// The element in simulated time: a run moves the clock from timer
    /// to timer, and pings carry the router's time.
    fn sim(decl: &str, ninputs: usize) -> Harness {
        Harness::simulated(&reg(), decl, ninputs, 1).unwrap()
    }

    /// Runs the router until it stops itself (a watchdog fails the test
    /// after 20 s).
    fn run(h: &Harness) {
        paraclick_runtime::testing::run(&h.router);
    }

    #[test]
    fn timer_sends_pings_until_limit() {
        let h = sim(
            "ICMPPingSource(1.0.0.1, 2.0.0.2, INTERVAL 10ms, LIMIT 3, STOP true, \
             IDENTIFIER 0x1234, DATA \"hi!\", VERBOSE false)",
            0,
        );
        run(&h);
        let out = h.output(0);
        let datas: Vec<&[u8]> = out.iter().map(|p| p.data()).collect();
        assert_eq!(
            datas,
            vec![
                &ping(1, 0x1234, b"hi!")[..],
                &ping(2, 0x1234, b"hi!")[..],
                &ping(3, 0x1234, b"hi!")[..]
            ]
        );
        assert_eq!(out[0].anno().dst_ip, ip("2.0.0.2"));
        assert_eq!(out[0].network_header_length(), Some(20));
        // One INTERVAL after the start, then one per INTERVAL.
        assert_eq!(sim_ns(&out), [10 * MS, 20 * MS, 30 * MS]);
        assert_eq!(h.read("count").unwrap(), "3");
        assert_err(h.read("summary"), "no input: replies are not counted"); // no input
    }

    #[test]
    fn replies_make_statistics() {
        let h = sim(
            "ICMPPingSource(1.0.0.1, 2.0.0.2, INTERVAL 5ms, LIMIT 4, STOP true, VERBOSE false)",
            1,
        );
        run(&h);
        let out = h.output(0);
        assert_eq!(sim_ns(&out), [5 * MS, 10 * MS, 15 * MS, 20 * MS]);
        assert_eq!(out[3].data(), &ping(4, 0, b"")[..]);
        let mut other_id = reply(&out[0], 100);
        other_id.data_mut()[24] = 9;
        h.push(
            0,
            vec![
                reply(&out[0], 1500),
                reply(&out[1], 2500),
                reply(&out[1], 2500), // duplicate
                reply(&out[2], 1000),
                other_id,
                pkt(&[0x45]),
            ],
        );
        assert_eq!(h.drops(), 6);
        assert_eq!(
            h.read("summary").unwrap(),
            "4 packets transmitted, 3 received, +1 duplicates, 25% packet loss\n\
             rtt min/avg/max/mdev = 1.000/1.875/2.500/0.649\n"
        );
        assert_eq!(h.read("rtt_min").unwrap(), "0.001s");
        assert_eq!(h.read("rtt_max").unwrap(), "0.0025s");
        assert_eq!(h.read("rtt_avg").unwrap(), "0.001875s");
        h.write("reset_counts", "").unwrap();
        assert_eq!(
            h.read("summary").unwrap(),
            "0 packets transmitted, 0 received"
        );
        assert_eq!(h.read("rtt_min").unwrap(), "0s");
    }

    #[test]
    fn pull_output_makes_a_ping_per_pull() {
        let mut reg = reg();
        paraclick_runtime::testing::register(&mut reg);
        let r = Router::from_str(
            "e :: ICMPPingSource(1.0.0.1, 2.0.0.2, LIMIT 2, IDENTIFIER 7); \
             e -> u :: Unqueue -> s :: TestSink;",
            &reg,
            1,
        )
        .unwrap_or_else(|d| panic!("{}", d[0].message));
        let b = r.pull_from("e", 0, 32).unwrap().unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b.as_slice()[0].data(), &ping(1, 7, b"")[..]);
        r.write_handler("e.active", "false").unwrap();
        assert!(r.pull_from("e", 0, 32).unwrap().is_none());
        r.write_handler("e.active", "true").unwrap();
        let b = r.pull_from("e", 0, 32).unwrap().unwrap();
        assert_eq!(b.as_slice()[0].data(), &ping(2, 7, b"")[..]);
        assert!(r.pull_from("e", 0, 32).unwrap().is_none());
        assert_eq!(r.read_handler("e.count").unwrap(), "2");
    }

    #[test]
    fn handlers() {
        let h = sim(
            "ICMPPingSource(1.0.0.1, 2.0.0.2, ACTIVE false); Script(wait 100ms, stop)",
            0,
        );
        assert_eq!(h.read("active").unwrap(), "false");
        assert_eq!(h.read("src").unwrap(), "1.0.0.1");
        h.write("dst", "3.0.0.3").unwrap();
        assert_eq!(h.read("dst").unwrap(), "3.0.0.3");
        assert_err(
            h.write("src", "3.0.0"),
            "e.src: expected IP address, not '3.0.0'",
        );
        h.write("interval", "5ms").unwrap();
        h.write("limit", "2").unwrap();
        h.write("active", "true").unwrap();
        h.write("STOP", "x").unwrap_err();
        // Active again: pings go out at once, then every 5 ms, two in all
        // (100 simulated ms).
        run(&h);
        let out = h.output(0);
        assert_eq!(sim_ns(&out), [0, 5 * MS]);
        assert_eq!(&out[1].data()[16..20], &[3, 0, 0, 3]);
    }

    #[test]
    fn bad_configuration() {
        for (bad, want) in [
            (
                "ICMPPingSource(1.0.0.1)",
                "e :: ICMPPingSource: missing mandatory DST argument",
            ),
            (
                "ICMPPingSource(1.0.0.1, 2.0.0.2, MIRROR true)",
                "e :: ICMPPingSource: MIRROR is not supported",
            ),
            (
                "ICMPPingSource(1.0.0.1, 2.0.0.2, IDENTIFIER 70000)",
                "e :: ICMPPingSource: IDENTIFIER: 70000 out of range",
            ),
            (
                "ICMPPingSource(1.0.0.1, 2.0.0.2, INTERVAL soon)",
                "e :: ICMPPingSource: INTERVAL: expected time in seconds",
            ),
            (
                "ICMPPingSource(1.0.0.1, 2.0.0.2, 3)",
                "e :: ICMPPingSource: too many arguments ('3')",
            ),
        ] {
            assert_err(try_harness_io(bad, 0, 1), want);
        }
    }
}
