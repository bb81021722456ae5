//! This crate's tests use the one kit (`paraclick_elements::test_kit`, on
//! `paraclick_runtime::testing`): routers built from [`full_registry`],
//! run with a watchdog and read. What is here is particular to io: pcap
//! files written byte by byte, and the TCP frames the pcap tests carry.

pub use crate::full_registry;
pub use paraclick_elements::test_kit::{
    build, build_err, build_simtime, eth, ether_frame, handler, q, run, run_until, sink, try_build,
    ts, Ip, TestSink,
};
use paraclick_packet::wire::ethertype;

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

/// An Ethernet frame (02:00:00:00:00:01 to :02) carrying an IPv4 TCP
/// segment (DF, ident 0x1234, TTL 64, seq 1000, ack 2000, window 8192)
/// with `payload` bytes 0, 1, 2, ... of payload; checksums correct.
pub fn eth_tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    flags: u8,
    payload: usize,
) -> Vec<u8> {
    let data: Vec<u8> = (0..payload).map(|i| i as u8).collect();
    let mut d = Ip::new("0.0.0.0", "0.0.0.0", 0).frag(0x4000);
    (d.src, d.dst) = (src.into(), dst.into());
    let d = d.tcp_full(sport, dport, 1000, 2000, flags, 8192, &[], &data);
    ether_frame(
        eth("02:00:00:00:00:02"),
        eth("02:00:00:00:00:01"),
        ethertype::IPV4,
        &d.bytes(),
    )
}

/// Runs `conf` (real time) for a second with nothing to do: `task`'s
/// element (an inactive trace reader, or the Unqueue pulling one) must
/// run fewer than 200 times (it polled: about a thousand runs at best),
/// its worker sleeping until a handler write; then writes `true` to
/// `write` and waits for handler `count` to read `want`.
pub fn sleeps_until_written(conf: &str, task: &str, write: &str, count: &str, want: &str) {
    use std::time::{Duration, Instant};
    let r = std::sync::Arc::new(build(&full_registry(), conf));
    let stop = r.stopper();
    let r2 = r.clone();
    let h = std::thread::spawn(move || r2.run());
    std::thread::sleep(Duration::from_secs(1));
    let runs = r.task_runs(task).unwrap();
    r.write_handler(write, "true").unwrap();
    let t0 = Instant::now();
    while handler(&r, count) != want && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.stop();
    let _ = h.join();
    assert!(
        runs < 200,
        "{conf}: {runs} runs in a second of nothing to do"
    );
    assert_eq!(handler(&r, count), want, "{conf}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame, field by field (so the pcap tests' expectations hold).
    #[test]
    fn eth_tcp_frame_fields() {
        use paraclick_packet::wire::{Ipv4Header, TcpHeader};
        let f = eth_tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 0x12, 5);
        assert_eq!(f.len(), 14 + 40 + 5);
        assert_eq!(&f[..14], &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]);
        let ip = Ipv4Header::new_checked(&f[14..]).expect("IPv4 header");
        assert!(ip.verify_checksum() && ip.dont_frag());
        assert_eq!((ip.ident(), ip.ttl(), ip.protocol()), (0x1234, 64, 6));
        assert_eq!(ip.total_len(), 45);
        assert_eq!(&f[26..34], &[10, 0, 0, 1, 10, 0, 0, 2]);
        let t = &f[34..];
        assert_eq!(&t[..4], &[0x04, 0xd2, 0, 80]);
        assert_eq!(&t[4..12], &[0, 0, 0x03, 0xe8, 0, 0, 0x07, 0xd0]);
        assert_eq!((t[12], t[13]), (0x50, 0x12));
        assert_eq!(&t[14..16], &8192u16.to_be_bytes());
        assert_eq!(&t[20..], &[0, 1, 2, 3, 4]);
        let mut c = f.clone();
        TcpHeader::new_unchecked(&mut c[34..])
            .fill_checksum([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        assert_eq!(c, f, "TCP checksum as the wire module computes it");
    }
}
