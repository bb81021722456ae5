//! # EtherPauseSource
//!
//! EtherPauseSource(SRC, PAUSETIME \[, keywords DST, LIMIT, INTERVAL, ACTIVE])
//!
//! Creates and emits Ethernet 802.3x PAUSE frames.
//!
//! Ports: no inputs, 1 output. Processing: agnostic.
//!
//! A PAUSE frame asks the receiving device to stop transmitting for
//! PAUSETIME pause quanta (one quantum is the time to send 512 bits at
//! the link's speed: on a 1 Gbps link, 195 quanta are about 100
//! microseconds), for hardware flow control. SRC must be the address of
//! the device that sends the frames. Each frame is 60 bytes: Ethernet
//! header (DST, SRC, type 0x8808), MAC control opcode 0x0001, PAUSETIME,
//! and zero padding.
//!
//! In pull mode, every pull returns a frame. In push mode, it sends a
//! frame when the router starts and every INTERVAL after that.
//!
//! Arguments:
//! - `SRC` (Ethernet address, mandatory).
//! - `PAUSETIME` (integer 0..65535, mandatory).
//! - `DST` (Ethernet address, default 01:80:c2:00:00:01, the multicast
//!   address reserved for PAUSE frames).
//! - `LIMIT` (integer, default -1): the most frames to emit; -1: no limit.
//! - `INTERVAL` (time, default 1 s, at least 1 ms): push mode's period.
//! - `ACTIVE` (boolean, default true): if false, emits nothing.
//!
//! Handlers:
//! - `count` (read): frames generated.
//! - `src`, `dst`, `pausetime`, `limit`, `active` (read/write).
//! - `reset_counts` (write): resets the count, so LIMIT more frames may go.
//!
//! Example:
//!
//!     EtherPauseSource(00:1e:13:22:48:91, 390) -> ToDevice(eth0);

use paraclick_packet::wire::EtherAddr;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::{ClassSpec, ConfigCx, Cx, Element, Handler, HandlerCx, InitCx, Kind};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub struct EtherPauseSource {
    /// (SRC, DST, PAUSETIME).
    fields: Mutex<(EtherAddr, EtherAddr, u16)>,
    limit: AtomicI64,
    interval: Duration,
    active: AtomicBool,
    count: AtomicU64,
    push: bool,
}

const TIMER: usize = 0;
const PAUSE_DST: EtherAddr = EtherAddr([0x01, 0x80, 0xc2, 0, 0, 1]);

pub fn spec() -> ClassSpec {
    ClassSpec::element("EtherPauseSource", "0/1", "a", make)
        .shared("a source with one count and LIMIT")
        .kind(Kind::Source)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<EtherPauseSource, String> {
    let mut a = cx.args();
    let src = a.read_mp::<EtherAddr>("SRC");
    let pausetime = a.read_mp::<u16>("PAUSETIME");
    let dst = a.read::<EtherAddr>("DST").unwrap_or(PAUSE_DST);
    let limit = a.read::<i64>("LIMIT").unwrap_or(-1);
    let interval = a
        .read::<Duration>("INTERVAL")
        .unwrap_or(Duration::from_secs(1));
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    a.complete()?;
    if interval < Duration::from_millis(1) {
        return Err("INTERVAL must be at least 1 millisecond".into());
    }
    Ok(EtherPauseSource {
        fields: Mutex::new((src, dst, pausetime)),
        limit: AtomicI64::new(limit),
        interval,
        active: AtomicBool::new(active),
        count: AtomicU64::new(0),
        push: cx.output_is_push(0),
    })
}

impl EtherPauseSource {
    /// The next frame, if ACTIVE and LIMIT allow one.
    fn frame(&self, cx: &Cx<'_>) -> Option<Packet> {
        if !self.active.load(Ordering::Relaxed) {
            return None;
        }
        let limit = self.limit.load(Ordering::Relaxed);
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        if limit >= 0 && n >= limit as u64 {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let (src, dst, t) = *self.fields.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = Packet::zeroed(60)?;
        let d = p.data_mut();
        d[0..6].copy_from_slice(&dst.0);
        d[6..12].copy_from_slice(&src.0);
        d[12..14].copy_from_slice(&0x8808u16.to_be_bytes());
        d[14..16].copy_from_slice(&1u16.to_be_bytes());
        d[16..18].copy_from_slice(&t.to_be_bytes());
        p.set_mac_header(0);
        p.set_timestamp(cx.timestamp());
        Some(p)
    }

    fn with(&self, f: impl FnOnce(&mut (EtherAddr, EtherAddr, u16))) {
        f(&mut self.fields.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn get(&self) -> (EtherAddr, EtherAddr, u16) {
        *self.fields.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A push source whose LIMIT or ACTIVE change may start again.
    fn restart(&self, hx: &HandlerCx<'_>) {
        if self.push {
            hx.schedule_after(TIMER, Duration::ZERO);
        }
    }
}

impl Element for EtherPauseSource {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("count", |e, _| e.count.load(Ordering::Relaxed).to_string()),
        Handler::rw(
            "src",
            |e, _| e.get().0.to_string(),
            |e, v, hx| {
                let a: EtherAddr = hx.arg(v)?;
                e.with(|f| f.0 = a);
                Ok(())
            },
        ),
        Handler::rw(
            "dst",
            |e, _| e.get().1.to_string(),
            |e, v, hx| {
                let a: EtherAddr = hx.arg(v)?;
                e.with(|f| f.1 = a);
                Ok(())
            },
        ),
        Handler::rw(
            "pausetime",
            |e, _| e.get().2.to_string(),
            |e, v, hx| {
                let t: u16 = hx.arg(v)?;
                e.with(|f| f.2 = t);
                Ok(())
            },
        ),
        Handler::rw(
            "limit",
            |e, _| e.limit.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.limit.store(hx.arg(v)?, Ordering::Relaxed);
                e.restart(hx);
                Ok(())
            },
        ),
        Handler::rw(
            "active",
            |e, _| e.active.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                e.active.store(hx.arg(v)?, Ordering::Relaxed);
                e.restart(hx);
                Ok(())
            },
        ),
        Handler::write("reset_counts", |e, _, hx| {
            e.count.store(0, Ordering::Relaxed);
            e.restart(hx);
            Ok(())
        }),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.push {
            ix.schedule_after(TIMER, Duration::ZERO);
        }
        Ok(())
    }

    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if let Some(p) = self.frame(cx) {
            cx.push(0, Batch::one(p));
            cx.schedule_after(TIMER, self.interval);
        }
    }

    fn pull(&self, cx: &mut Cx<'_>, _port: usize, _max: usize) -> Option<Batch> {
        self.frame(cx).map(Batch::one)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_runtime::testing::Harness;

    fn want(dst: &str, src: &str, t: u16) -> Vec<u8> {
        let mut v = vec![0u8; 60];
        v[..6].copy_from_slice(&eth(dst).0);
        v[6..12].copy_from_slice(&eth(src).0);
        v[12..18].copy_from_slice(&[0x88, 0x08, 0, 1, (t >> 8) as u8, t as u8]);
        v
    }

    fn sent_within(decl: &str, ms: u64) -> Vec<paraclick_packet::Packet> {
        let h = Harness::simulated(&reg(), &format!("{decl}; Script(wait {ms}ms, stop)"), 0, 1)
            .unwrap();
        run(&h.router);
        h.output(0)
    }

    #[test]
    fn push_mode_sends_every_interval_up_to_limit() {
        let decl = "EtherPauseSource(00:1e:13:22:48:91, 390, LIMIT 3, INTERVAL 0.5)";
        let out = sent_within(decl, 250);
        assert_eq!(out.len(), 1, "one at the start");
        assert_eq!(
            out[0].data(),
            &want("01:80:c2:00:00:01", "00:1e:13:22:48:91", 390)[..]
        );
        assert_eq!(sent_within(decl, 750).len(), 2);
        assert_eq!(sent_within(decl, 5000).len(), 3, "LIMIT 3");
        let out = sent_within(
            "EtherPauseSource(00:1e:13:22:48:91, 7, DST 00:11:22:33:44:55, INTERVAL 1)",
            5500,
        );
        assert_eq!(out.len(), 6, "no LIMIT: at 0 to 5 s");
        assert_eq!(
            out[5].data(),
            &want("00:11:22:33:44:55", "00:1e:13:22:48:91", 7)[..]
        );
        assert!(sent_within("EtherPauseSource(0:1:2:3:4:5, 1, ACTIVE false)", 3000).is_empty());
    }

    #[test]
    fn handlers() {
        let r = build(
            &reg(),
            "s :: EtherPauseSource(0:1:2:3:4:5, 10, LIMIT 1) -> Unqueue(ACTIVE false) -> TestSink;",
        );
        r.write_handler("s.pausetime", "513").unwrap();
        r.write_handler("s.dst", "00:11:22:33:44:55").unwrap();
        r.write_handler("s.src", "00:00:00:00:00:09").unwrap();
        let b = r.pull_from("s", 0, 1).unwrap().unwrap();
        assert_eq!(
            b.iter().next().unwrap().data(),
            &want("00:11:22:33:44:55", "00:00:00:00:00:09", 513)[..]
        );
        assert_eq!(handler(&r, "s.count"), "1");
        assert!(r.pull_from("s", 0, 1).unwrap().is_none());
        r.write_handler("s.reset_counts", "").unwrap();
        assert!(
            r.pull_from("s", 0, 1).unwrap().is_some(),
            "LIMIT more after reset_counts"
        );
        assert_eq!(handler(&r, "s.pausetime"), "513");
        assert_eq!(handler(&r, "s.limit"), "1");
        assert!(r.write_handler("s.pausetime", "65536").is_err());
    }

    #[test]
    fn pull_mode_gives_a_frame_per_pull() {
        let r = build(
            &reg(),
            "s :: EtherPauseSource(0:1:2:3:4:5, 10, LIMIT 2) -> Unqueue(ACTIVE false) -> TestSink;",
        );
        assert_eq!(r.pull_from("s", 0, 8).unwrap().unwrap().len(), 1);
        assert_eq!(r.pull_from("s", 0, 8).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("s", 0, 8).unwrap().is_none());
        r.write_handler("s.active", "false").unwrap();
        r.write_handler("s.limit", "-1").unwrap();
        assert!(r.pull_from("s", 0, 8).unwrap().is_none(), "inactive");
    }

    #[test]
    fn bad_config() {
        assert!(try_source("EtherPauseSource(0:1:2:3:4:5)", 1).is_err());
        assert!(try_source("EtherPauseSource(0:1:2:3:4:5, 70000)", 1).is_err());
        assert!(try_source("EtherPauseSource(0:1:2:3:4:5, 1, INTERVAL 0)", 1).is_err());
    }
}
