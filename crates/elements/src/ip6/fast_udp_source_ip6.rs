//! # FastUDPSourceIP6
//!
//! FastUDPSourceIP6(RATE, LIMIT, LENGTH, SRCETH, SRCIP6, SPORT, DSTETH, DSTIP6, DPORT [, CHECKSUM, INTERVAL, ACTIVE, keywords STOP])
//!
//! Creates packets with static UDP/IPv6/Ethernet headers: a benchmark tool.
//!
//! Ports: no inputs, 1 push output. Owns a task that emits up to 32
//! packets per run.
//!
//! Builds one Ethernet/IPv6/UDP frame of LENGTH bytes (at least 62:
//! Ethernet, IPv6 and UDP headers; the payload is zeros) from SRCETH,
//! SRCIP6 and SPORT to DSTETH, DSTIP6 and DPORT, hop limit 64, with the
//! UDP checksum (mandatory over IPv6) unless CHECKSUM is false. Each packet
//! is a copy of it, with the network header and destination IPv6
//! annotations set.
//!
//! Arguments:
//! - `RATE` (real): packets per second, evenly spread; 0 means as fast as
//!   possible.
//! - `LIMIT` (integer): total packets; negative means no limit.
//! - `LENGTH` (integer): frame length (62 at least).
//! - `SRCETH`, `DSTETH`, `SRCIP6`, `DSTIP6`, `SPORT`, `DPORT`.
//! - `CHECKSUM` (boolean, default true).
//! - `INTERVAL` (integer, default 0): if not 0, both ports go up by 1
//!   after every INTERVAL packets (a new flow each time).
//! - `ACTIVE` (boolean, default true).
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//!
//! Drop reasons: `no buffer`: its thread's packet pool stayed empty for
//! a second (packets held or leaked downstream); until then it waits for
//! buffers and loses nothing. What it drops counts toward its LIMIT.
//!
//! Handlers:
//! - `count` (read): packets sent.
//! - `rate` (read): RATE, or once LIMIT packets went out, the average rate
//!   achieved between the first and the last.
//! - `active` (read/write), `reset` (write: count from 0 again).
//!
//! Example:
//!
//!     FastUDPSourceIP6(100000, 500000, 62, 2:0:0:0:1:2, 2001:db8:1::2, 1234,
//!                      2:0:0:0:1:1, 2001:db8:2::2, 9) -> ToDevice(eth0);

use paraclick_packet::wire::ipv6::upper_layer_checksum;
use paraclick_packet::wire::{EtherAddr, Ipv6Header, Ipv6Repr};
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, InitCx, Kind, PerThreadCount};
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    start: Option<Instant>,
    last: Option<Instant>,
    sent: u64,
}

pub struct FastUDPSourceIP6 {
    /// Its thread's pool dry: wait, then drop as `no buffer`.
    dry: crate::sources::gen::DryPool,
    frame: Vec<u8>,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    sport: u16,
    dport: u16,
    checksum: bool,
    rate: f64,
    limit: i64,
    interval: u64,
    stop: bool,
    active: AtomicBool,
    state: Mutex<State>,
    count: PerThreadCount,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("FastUDPSourceIP6", "0/1", "h", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .drop_reasons(crate::sources::gen::POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<FastUDPSourceIP6, String> {
    let mut a = cx.args();
    let rate = a.read_mp::<f64>("RATE");
    let limit = a.read_mp::<i64>("LIMIT");
    let len = a.read_mp::<usize>("LENGTH");
    let src_eth = a.read_mp::<EtherAddr>("SRCETH");
    let src = a.read_mp::<Ipv6Addr>("SRCIP6");
    let sport = a.read_mp::<u16>("SPORT");
    let dst_eth = a.read_mp::<EtherAddr>("DSTETH");
    let dst = a.read_mp::<Ipv6Addr>("DSTIP6");
    let dport = a.read_mp::<u16>("DPORT");
    let checksum = a.read_p::<bool>("CHECKSUM").unwrap_or(true);
    let interval = a.read_p::<u64>("INTERVAL").unwrap_or(0);
    let active = a.read_p::<bool>("ACTIVE").unwrap_or(true);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    a.complete()?;
    if !(rate >= 0.0 && rate.is_finite()) {
        return Err("RATE must be a number of packets per second, 0 or more".into());
    }
    let len = len.max(62);
    if len > 14 + 40 + 65535 {
        return Err(format!("LENGTH {len} is too long for one IPv6 packet"));
    }
    let mut frame = vec![0u8; len];
    frame[0..6].copy_from_slice(&dst_eth.0);
    frame[6..12].copy_from_slice(&src_eth.0);
    frame[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: 17,
        payload_len: len - 54,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Header::new_unchecked(&mut frame[14..54]));
    frame[58..60].copy_from_slice(&((len - 54) as u16).to_be_bytes());
    Ok(FastUDPSourceIP6 {
        frame,
        src,
        dst,
        sport,
        dport,
        checksum,
        rate,
        limit,
        interval,
        stop,
        active: AtomicBool::new(active),
        state: Mutex::new(State::default()),
        count: PerThreadCount::new(cx.nthreads),
        dry: crate::sources::gen::DryPool::default(),
    })
}

impl FastUDPSourceIP6 {
    fn packet(&self, seq: u64) -> Option<Packet> {
        let step = seq.checked_div(self.interval).unwrap_or(0) as u16;
        let mut p = Packet::from_slice(&self.frame)?;
        let d = p.data_mut();
        d[54..56].copy_from_slice(&self.sport.wrapping_add(step).to_be_bytes());
        d[56..58].copy_from_slice(&self.dport.wrapping_add(step).to_be_bytes());
        if self.checksum {
            let mut c = upper_layer_checksum(&self.src, &self.dst, 17, &d[54..]);
            if c == 0 {
                c = 0xffff;
            }
            d[60..62].copy_from_slice(&c.to_be_bytes());
        }
        p.set_mac_header(0);
        p.set_network_header(14, 40);
        p.anno_mut().set_dst_ip6(self.dst);
        Some(p)
    }
}

impl FastUDPSourceIP6 {
    fn rate_text(&self) -> String {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let done = self.limit >= 0 && s.sent >= self.limit as u64;
        match (done, s.start, s.last) {
            (true, Some(a), Some(b)) if b > a && s.sent > 1 => {
                format!(
                    "{:.0}",
                    (s.sent - 1) as f64 / b.duration_since(a).as_secs_f64()
                )
            }
            _ => format!("{}", self.rate),
        }
    }
}

impl Element for FastUDPSourceIP6 {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.get().to_string()),
        Handler::read("rate", |e, _| e.rate_text()),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::write("reset", |e, _, _| {
            *e.state.lock().unwrap_or_else(|e| e.into_inner()) = State::default();
            e.count.reset();
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let t = ix.add_task();
        ix.wait_for_room(t);
        Ok(())
    }

    fn run_task(&self, cx: &mut Cx<'_>, _task: usize) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            cx.wake_when_written();
            return false;
        }
        // The router's clock: simulated time paces it too.
        let now = cx.now();
        let (first, n) = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let start = *s.start.get_or_insert(now);
            let mut n: u64 = 32;
            if self.limit >= 0 {
                n = n.min((self.limit as u64).saturating_sub(s.sent));
            }
            if self.rate > 0.0 {
                let due = (self.rate * now.duration_since(start).as_secs_f64()) as u64 + 1;
                let paced = due.saturating_sub(s.sent);
                if paced == 0 && n > 0 {
                    // Say when the next packet is due (packet k at k/RATE
                    // after the first), so that simulated time moves
                    // there; never at `now`, so the clock always moves.
                    let at = Duration::from_secs_f64(s.sent as f64 / self.rate);
                    cx.wake_at((start + at).max(now + Duration::from_nanos(1)));
                }
                n = n.min(paced);
            }
            let first = s.sent;
            s.sent += n;
            if n > 0 {
                s.last = Some(now);
            }
            (first, n)
        };
        if n == 0 {
            let sent = self.state.lock().unwrap_or_else(|e| e.into_inner()).sent;
            if self.limit >= 0 && sent >= self.limit as u64 {
                if self.stop {
                    cx.request_stop();
                }
                // Only a handler write (`active`) can change anything.
                cx.wake_when_written();
            }
            return false;
        }
        let mut b = Batch::new();
        for i in 0..n {
            match self.packet(first + i) {
                Some(p) => b.push(p),
                None => break, // pool dry
            }
        }
        let missing = n - b.len() as u64;
        if missing > 0 && !self.dry.short(cx, missing as usize, 0) {
            // Not lost: they go out once buffers come back.
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.sent = s.sent.saturating_sub(missing);
        }
        if b.is_empty() {
            return false;
        }
        self.count.add(cx.thread(), b.len() as u64);
        cx.push(0, b);
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::Router;

    #[test]
    fn paces_on_the_routers_clock() {
        // Simulated time: 10 packets at 1000 pkt/s leave at 0, 1, ..., 9
        // simulated ms (the source says when the next is due), whatever
        // the wall clock does meanwhile.
        let conf = "e :: FastUDPSourceIP6(1000, 10, 80, 2:0:0:0:1:2, 2001:db8:1::2, 1000, \
                    2:0:0:0:1:1, 2001:db8:2::2, 9, STOP true) -> SetTimestamp -> o :: TestSink;";
        let router = paraclick_runtime::testing::build_simtime(&reg(), conf);
        paraclick_runtime::testing::run(&router);
        let start = paraclick_runtime::time::SIM_START_SEC * 1_000_000_000;
        let at: Vec<i64> = paraclick_runtime::testing::sink(&router, "o")
            .iter()
            .map(|p| p.timestamp().0 - start)
            .collect();
        assert_eq!(at, (0..10).map(|k| k * 1_000_000).collect::<Vec<i64>>());
        assert_eq!(router.read_handler("e.rate").unwrap(), "1000");
    }

    #[test]
    fn sends_limit_packets_with_valid_checksums_and_new_flows() {
        let conf = "e :: FastUDPSourceIP6(0, 70, 80, 2:0:0:0:1:2, 2001:db8:1::2, 1000, \
                    2:0:0:0:1:1, 2001:db8:2::2, 9, INTERVAL 1, STOP true) -> o :: TestSink;";
        let mut r = reg();
        paraclick_runtime::testing::register(&mut r);
        let router = Router::from_str(conf, &r, 1).unwrap_or_else(|d| panic!("{d:?}"));
        router.run();
        let out = router
            .element::<paraclick_runtime::testing::TestSink>("o")
            .unwrap()
            .take();
        assert_eq!(out.len(), 70);
        for (i, p) in out.iter().enumerate() {
            let d = p.data();
            assert_eq!(d.len(), 80);
            assert_eq!(&d[12..14], &[0x86, 0xdd]);
            assert!(upper_checksum_ok(&d[14..]));
            assert_eq!(u16::from_be_bytes([d[54], d[55]]), 1000 + i as u16);
            assert_eq!(p.anno().dst_ip6(), a6("2001:db8:2::2"));
        }
        assert_eq!(router.read_handler("e.count").unwrap(), "70");
        assert!(
            router
                .read_handler("e.rate")
                .unwrap()
                .parse::<f64>()
                .unwrap()
                > 0.0
        );
    }

    #[test]
    fn bad_config() {
        let r = reg();
        for (c, want) in [
            ("FastUDPSourceIP6(0, 1, 60, 0:0:0:0:0:0, 1.2.3.4, 1, 0:0:0:0:0:0, ::1, 1)", "<config>:1:1: FastUDPSourceIP6@1 :: FastUDPSourceIP6: SRCIP6: expected IPv6 address, not '1.2.3.4'"),
            ("FastUDPSourceIP6(-1, 1, 60, 0:0:0:0:0:0, ::1, 1, 0:0:0:0:0:0, ::1, 1)", "<config>:1:1: FastUDPSourceIP6@1 :: FastUDPSourceIP6: RATE must be a number of packets per second, 0 or more"),
            ("FastUDPSourceIP6(0, 1, 60, 0:0:0:0:0:0, ::1, 1)", "<config>:1:1: FastUDPSourceIP6@1 :: FastUDPSourceIP6: missing mandatory DSTETH argument; <config>:1:1: FastUDPSourceIP6@1 :: FastUDPSourceIP6: missing mandatory DSTIP6 argument; <config>:1:1: FastUDPSourceIP6@1 :: FastUDPSourceIP6: missing mandatory DPORT argument"),
        ] {
            assert_err(Router::from_str(&format!("{c} -> Discard;"), &r, 1), want);
        }
    }
}
