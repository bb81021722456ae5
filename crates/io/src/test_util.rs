//! Helpers for this crate's tests: hand-made pcap files, and routers run
//! to completion with a watchdog.

use paraclick_packet::{Packet, Timestamp};
use paraclick_runtime::testing::TestSink;
use paraclick_runtime::{Registry, Router};
use std::path::Path;
use std::time::{Duration, Instant};

/// One record of a hand-made pcap file.
pub struct Rec<'a> {
    pub sec: u32,
    pub frac: u32,
    pub orig_len: u32,
    pub data: &'a [u8],
}

/// A pcap file written byte by byte: `big` endian or little, `nano` or
/// microsecond magic, version 2.4, the given snaplen and link type.
pub fn pcap_bytes(big: bool, nano: bool, snaplen: u32, linktype: u32, recs: &[Rec<'_>]) -> Vec<u8> {
    let w32 = |v: &mut Vec<u8>, x: u32| {
        v.extend_from_slice(&if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        })
    };
    let w16 = |v: &mut Vec<u8>, x: u16| {
        v.extend_from_slice(&if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        })
    };
    let mut v = Vec::new();
    w32(&mut v, if nano { 0xA1B2_3C4D } else { 0xA1B2_C3D4 });
    w16(&mut v, 2);
    w16(&mut v, 4);
    w32(&mut v, 0);
    w32(&mut v, 0);
    w32(&mut v, snaplen);
    w32(&mut v, linktype);
    for r in recs {
        w32(&mut v, r.sec);
        w32(&mut v, r.frac);
        w32(&mut v, r.data.len() as u32);
        w32(&mut v, r.orig_len);
        v.extend_from_slice(r.data);
    }
    v
}

/// An Ethernet frame carrying an IPv4 TCP segment with `payload` bytes of
/// payload (checksums correct).
pub fn eth_tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    flags: u8,
    payload: usize,
) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 40 + payload];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12] = 0x08;
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    for (i, b) in ip[40..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let t = &mut ip[20..];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&1000u32.to_be_bytes());
    t[8..12].copy_from_slice(&2000u32.to_be_bytes());
    t[12] = 0x50;
    t[13] = flags;
    t[14..16].copy_from_slice(&8192u16.to_be_bytes());
    let (s, d) = (src.into(), dst.into());
    paraclick_packet::wire::TcpHeader::new_unchecked(&mut ip[20..]).fill_checksum(s, d);
    paraclick_packet::wire::Ipv4Header::new_unchecked(&mut ip[..20]).fill_checksum();
    f
}

/// The full registry plus TestSink.
pub fn registry() -> Registry {
    let mut r = crate::full_registry();
    paraclick_runtime::testing::register(&mut r);
    r
}

/// Builds a router, panicking with the diagnostics if it fails.
pub fn build(conf: &str) -> Router {
    match Router::from_str(conf, &registry(), 1) {
        Ok(r) => r,
        Err(d) => panic!(
            "config failed: {}",
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// Builds a router that runs in simulated time (`--simtime`).
pub fn build_simtime(conf: &str) -> Router {
    let src = paraclick_lang::Source {
        name: "<test>".into(),
        text: conf.into(),
    };
    let opts = paraclick_runtime::BuildOptions {
        threads: 1,
        pin: false,
        simtime: true,
        ..Default::default()
    };
    match Router::build(&src, &registry(), &opts) {
        Ok(r) => r,
        Err(d) => panic!("config failed: {}", d[0].message),
    }
}

/// The first configuration error's message.
pub fn build_err(conf: &str) -> String {
    match Router::from_str(conf, &registry(), 1) {
        Ok(_) => panic!("config unexpectedly succeeded"),
        Err(d) => d
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Runs `r` until it stops by itself (a source's STOP); a watchdog stops
/// it after 20 seconds, failing the test.
pub fn run(r: &Router) {
    let stopper = r.stopper();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f2 = fired.clone();
    let w = std::thread::spawn(move || {
        let t0 = Instant::now();
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if t0.elapsed() > Duration::from_secs(20) {
                f2.store(true, std::sync::atomic::Ordering::Relaxed);
                stopper.stop();
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    r.run();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    w.join().unwrap();
    assert!(
        !fired.load(std::sync::atomic::Ordering::Relaxed),
        "router did not stop by itself"
    );
}

/// Runs `r` until `until()` holds (then stops it); fails after 20 seconds.
pub fn run_until(r: &Router, until: impl Fn(&Router) -> bool + Send + Sync) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let t0 = Instant::now();
            while !until(r) {
                if t0.elapsed() > Duration::from_secs(20) {
                    r.stop();
                    panic!("condition never held");
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            r.stop();
        });
        r.run();
    });
}

/// Packets that reached TestSink `name`.
pub fn sink(r: &Router, name: &str) -> Vec<Packet> {
    r.element::<TestSink>(name).expect("sink").take()
}

/// A handler's value.
pub fn h(r: &Router, spec: &str) -> String {
    r.read_handler(spec)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// A quoted path for a configuration.
pub fn q(p: &Path) -> String {
    format!("\"{}\"", p.display())
}

/// A timestamp from seconds and nanoseconds.
pub fn ts(sec: i64, nsec: u32) -> Timestamp {
    Timestamp::from_parts(sec, nsec)
}
