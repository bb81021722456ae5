//! # LinkUnqueue
//!
//! LinkUnqueue(LATENCY, BANDWIDTH)
//!
//! Link emulator.
//!
//! Pulls packets from its input, then delays them to emulate a serial link
//! with latency LATENCY and bandwidth BANDWIDTH (such as `384kbps`): every
//! packet is delayed by at least LATENCY, plus its own transmission time
//! (its length plus its extra-length annotation, at BANDWIDTH), plus the
//! transmission of any packets ahead of it on the link. Packets are pushed
//! out when their time comes, with their timestamp set to that time. A
//! BANDWIDTH of 0 means only LATENCY delays packets.
//!
//! LinkUnqueue holds only packets in transit on the emulated link: it
//! pulls from its input only when the link is free to start sending
//! another packet. To emulate a link fed by a packet queue, use
//! `Queue -> LinkUnqueue`.
//!
//! Ports: 1 input (pull), 1 output (push). It owns a task.
//!
//! Arguments:
//! - `LATENCY` (time).
//! - `BANDWIDTH` (bandwidth; 0 for no limit).
//!
//! Handlers:
//! - `latency` (read): the LATENCY.
//! - `bandwidth` (read): the BANDWIDTH, in bytes per second.
//! - `size` (read): packets in, or partially in, the emulated link.
//! - `reset` (write): drops every packet in the link.
//!
//! Example:
//!
//!     ... -> Queue -> LinkUnqueue(20ms, 10Mbps) -> ToDevice(eth0);

use super::delay_shaper::show_delay;
use super::rate::Unit;
use paraclick_packet::anno::Timestamp;
use paraclick_packet::Packet;
use paraclick_runtime::args::Bandwidth;
use paraclick_runtime::{Batch, ClassSpec, ConfigCx, Cx, Element, Handler, InitCx};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The emulated wire: when it is free again, and what is on it.
pub(crate) struct Link {
    latency: Duration,
    /// Bytes per second; 0 for no limit.
    bandwidth: f64,
    /// When the last packet put on the link has finished being sent.
    free_at: Option<Instant>,
    /// Packets in transit with their arrival times, in order.
    transit: VecDeque<(Instant, Packet)>,
}

impl Link {
    pub(crate) fn new(latency: Duration, bandwidth: f64) -> Link {
        Link {
            latency,
            bandwidth,
            free_at: None,
            transit: VecDeque::new(),
        }
    }

    /// Whether a packet can start being sent at `now`.
    pub(crate) fn free(&self, now: Instant) -> bool {
        self.free_at.is_none_or(|t| t <= now)
    }

    /// Puts a packet of `bytes` on the link at `now`; its arrival time.
    pub(crate) fn send(&mut self, now: Instant, bytes: f64) -> Instant {
        let start = self.free_at.map_or(now, |t| t.max(now));
        // At most the longest time argument: a tiny bandwidth made a time
        // beyond Duration's range (a panic) or Instant's (an overflow).
        let max = paraclick_runtime::args::MAX_DURATION_SECS as f64;
        let tx = if self.bandwidth > 0.0 {
            Duration::try_from_secs_f64((bytes / self.bandwidth).min(max)).unwrap_or(Duration::ZERO)
        } else {
            Duration::ZERO
        };
        self.free_at = Some(start + tx);
        start + tx + self.latency
    }
}

/// At most this many packets pulled per task run.
const MAX_BURST: usize = 32;

pub struct LinkUnqueue {
    latency: Duration,
    bandwidth: f64,
    link: Mutex<Link>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("LinkUnqueue", "1/1", "l/h", make)
        .shared("a rate or schedule shared by all flows")
        .drop_reasons(&["flushed by reset"])
}

fn make(cx: &mut ConfigCx<'_>) -> Result<LinkUnqueue, String> {
    let mut a = cx.args();
    let latency = a.read_mp::<Duration>("LATENCY");
    let bandwidth = a.read_mp::<Bandwidth>("BANDWIDTH").0;
    a.complete()?;
    Ok(LinkUnqueue {
        latency,
        bandwidth,
        link: Mutex::new(Link::new(latency, bandwidth)),
    })
}

/// Converts a monotonic arrival time to a packet timestamp.
fn stamp(now: Instant, wall: Timestamp, at: Instant) -> Timestamp {
    let ahead = at.saturating_duration_since(now).as_nanos() as i64;
    let behind = now.saturating_duration_since(at).as_nanos() as i64;
    Timestamp(wall.0 + ahead - behind)
}

impl Element for LinkUnqueue {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("latency", |e, _| show_delay(e.latency.as_nanos() as u64)),
        Handler::read("bandwidth", |e, _| Unit::Bytes.show(e.bandwidth)),
        Handler::read("size", |e, _| {
            e.link
                .lock()
                .map(|l| l.transit.len())
                .unwrap_or(0)
                .to_string()
        }),
        Handler::write("reset", |e, _, hx| {
            let mut l = e.link.lock().unwrap_or_else(|e| e.into_inner());
            let n = l.transit.len();
            l.transit.clear();
            hx.count_drops_for(0, n as u64);
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        // Asleep while its input is empty and it holds nothing; while
        // it holds a packet not yet due it says when it will be.
        let t = ix.add_task();
        ix.sleep_when_empty(t);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        let now = cx.now();
        let wall = cx.timestamp();
        let mut out = Vec::new();
        let mut pulled = false;
        {
            let mut l = self.link.lock().unwrap_or_else(|e| e.into_inner());
            // Put packets on the link while it is free at `now` (at most
            // a burst per run: with no bandwidth limit it always is).
            let mut n = 0;
            while n < MAX_BURST && l.free(now) {
                n += 1;
                let Some(p) = cx.pull(0, 1).and_then(|b| b.into_iter().next()) else {
                    break;
                };
                let at = l.send(now, Unit::Bytes.cost(&p));
                l.transit.push_back((at, p));
                pulled = true;
            }
            while l.transit.front().is_some_and(|(at, _)| *at <= now) {
                if let Some((at, mut p)) = l.transit.pop_front() {
                    p.set_timestamp(stamp(now, wall, at));
                    out.push(p);
                }
            }
            // Simulated time moves on to the next arrival, or to when the
            // link is free for the next packet, rather than past them.
            let next = [l.transit.front().map(|(at, _)| *at), l.free_at]
                .into_iter()
                .flatten()
                .filter(|t| *t > now)
                .min();
            if let Some(t) = next {
                cx.wake_at(t);
            }
        }
        if out.is_empty() {
            return pulled;
        }
        cx.push(0, Batch::from(out));
        true
    }

    fn queued(&self) -> usize {
        self.link.lock().map(|l| l.transit.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{bad, conf, run_for};
    use super::*;
    use crate::test_kit::{fill, pkts};
    use paraclick_runtime::testing::TestSink;

    fn ms(t0: Instant, m: u64) -> Instant {
        t0 + Duration::from_millis(m)
    }

    #[test]
    fn link_timing_latency_plus_serialisation_plus_queueing() {
        let t0 = Instant::now();
        // 10 ms latency, 100 kB/s: 1000 bytes take 10 ms to send.
        let mut l = Link::new(Duration::from_millis(10), 100_000.0);
        assert!(l.free(t0));
        assert_eq!(l.send(t0, 1000.0), ms(t0, 20));
        assert!(!l.free(ms(t0, 5)));
        assert!(l.free(ms(t0, 10)));
        // Sent at 10 ms: arrives at 10 + 10 + 10.
        assert_eq!(l.send(ms(t0, 10), 1000.0), ms(t0, 30));
        // A late start: the link was idle.
        assert_eq!(l.send(ms(t0, 100), 500.0), ms(t0, 115));
        // Bandwidth 0: latency only, and always free.
        // A tiny bandwidth: a bounded time, not a panic (from_secs_f64)
        // or an Instant overflow.
        let mut tiny = Link::new(Duration::ZERO, 1e-300);
        let t0 = Instant::now();
        let at = tiny.send(t0, 1500.0);
        assert_eq!(at - t0, Duration::from_secs(1 << 32));
        let mut l = Link::new(Duration::from_millis(10), 0.0);
        assert_eq!(l.send(t0, 1e9), ms(t0, 10));
        assert!(l.free(t0));
    }

    #[test]
    fn simulated_time_stamps_each_packet_when_its_link_time_comes() {
        // 5 ms latency, 12500 bytes/s: 20 bytes take 1.6 ms to send,
        // 1600 bytes 128 ms; the stamps follow the router's clock.
        let r = paraclick_runtime::testing::build_simtime(
            &crate::test_kit::reg(),
            "Idle -> q :: Queue(100) -> u :: LinkUnqueue(0.005s, 100kb/s) -> o :: TestSink;
             DriverManager(wait_time 1s, stop)",
        );
        let mut v = pkts(2, 20);
        v.extend(pkts(1, 1600));
        v.extend(pkts(1, 20));
        fill(&r, "q", v);
        paraclick_runtime::testing::run(&r);
        let got = r.element::<TestSink>("o").unwrap().take();
        let start = paraclick_runtime::time::SIM_START_SEC * 1_000_000_000;
        // Microseconds since the simulated start, rounded.
        let us: Vec<i64> = got
            .iter()
            .map(|p| (p.timestamp().0 - start + 500) / 1000)
            .collect();
        assert_eq!(us, vec![6600, 8200, 136_200, 137_800]);
    }

    #[test]
    fn element_delivers_after_the_latency() {
        let r = conf("Idle -> q :: Queue(100) -> u :: LinkUnqueue(0, 0) -> o :: TestSink;");
        fill(&r, "q", pkts(5, 100));
        // Waits for the event (a loaded machine may not run the router
        // within any short time), then a while more: no sixth packet.
        paraclick_runtime::testing::run_until(&r, |r| {
            r.element::<TestSink>("o").unwrap().len() >= 5
        });
        run_for(&r, 30);
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 5);
        let r = conf("Idle -> q :: Queue(100) -> u :: LinkUnqueue(1h, 1Gbps) -> o :: TestSink;");
        fill(&r, "q", pkts(5, 100));
        run_for(&r, 30);
        assert_eq!(r.element::<TestSink>("o").unwrap().len(), 0);
        assert_eq!(r.read_handler("u.size").unwrap(), "5");
        assert_eq!(r.read_handler("u.latency").unwrap(), "3600.000000");
        assert_eq!(r.read_handler("u.bandwidth").unwrap(), "125000000Bps");
        r.write_handler("u.reset", "").unwrap();
        assert_eq!(r.read_handler("u.size").unwrap(), "0");
        assert!(bad("Idle -> Queue -> LinkUnqueue(1ms) -> Discard;"));
    }
}
