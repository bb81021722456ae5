//! # FastUDPSource
//!
//! FastUDPSource(RATE, LIMIT, LENGTH, SRCETH, SRCIP, SPORT, DSTETH, DSTIP, DPORT [, CHECKSUM, INTERVAL, ACTIVE, keywords STOP])
//!
//! Creates packets with static UDP/IP/Ethernet headers: a benchmark tool.
//!
//! At configure time it builds one Ethernet/IPv4/UDP frame of LENGTH
//! bytes (at least 60, Ethernet header included, zero payload) from
//! SRCETH, SRCIP and SPORT to DSTETH, DSTIP and DPORT, with a correct IP
//! checksum and, if CHECKSUM, UDP checksum. Each packet is a copy of that
//! frame, with the network header and destination IP annotations set.
//! The IP header has TTL 64 and ID 0.
//!
//! Ports: no inputs, 1 output. Processing: agnostic (Click's is pull; here
//! in push context it owns a task that emits up to 32 packets per run).
//!
//! Arguments:
//! - `RATE` (real): packets per second, evenly spaced; 0 means as fast as
//!   possible.
//! - `LIMIT` (integer, at most 2^48-1): total packets to send; negative means no limit.
//! - `LENGTH` (integer): frame length; less than 60 means 60.
//! - `SRCETH`, `DSTETH` (Ethernet addresses), `SRCIP`, `DSTIP` (IP
//!   addresses), `SPORT`, `DPORT` (ports).
//! - `CHECKSUM` (boolean, default true): compute UDP checksums (else 0).
//! - `INTERVAL` (integer, default 0): if not 0, both ports go up by 1
//!   after every INTERVAL packets (the checksum follows, updated
//!   incrementally).
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//!
//! With several threads pulling, each keeps its own INTERVAL count.
//!
//! Drop reasons: `no buffer`: its thread's packet pool stayed empty for
//! a second (packets held or leaked downstream); until then it waits for
//! buffers and loses nothing. What it drops counts toward its LIMIT.
//!
//! Handlers:
//! - `count` (read): packets generated.
//! - `rate` (read/write): RATE; once LIMIT packets have gone out, reads
//!   the measured average rate between the first and the last of them.
//! - `reset` (write): resets the count and restarts (LIMIT more packets).
//! - `active` (read/write), `limit` (read/write).
//!
//! Example:
//!
//!     FastUDPSource(100000, 500000, 60, 0:0:0:0:0:0, 1.0.0.1, 1234,
//!                   1:1:1:1:1:1, 2.0.0.2, 1234) -> ToDevice(eth0);

use super::udp_gen::{FrameSpec, PortStep, UdpGen, UdpGenConfig};
use paraclick_packet::wire::EtherAddr;
use paraclick_runtime::{ClassSpec, ConfigCx, Kind};
use std::net::Ipv4Addr;

pub fn spec() -> ClassSpec {
    ClassSpec::element("FastUDPSource", "0/1", "a", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .drop_reasons(super::gen::POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<UdpGen, String> {
    let mut a = cx.args();
    let rate = a.read_mp::<f64>("RATE");
    let limit = a.read_mp::<i64>("LIMIT");
    let len = a.read_mp::<usize>("LENGTH");
    let src_eth = a.read_mp::<EtherAddr>("SRCETH");
    let src_ip = a.read_mp::<Ipv4Addr>("SRCIP");
    let sport = a.read_mp::<u16>("SPORT");
    let dst_eth = a.read_mp::<EtherAddr>("DSTETH");
    let dst_ip = a.read_mp::<Ipv4Addr>("DSTIP");
    let dport = a.read_mp::<u16>("DPORT");
    let checksum = a.read_p::<bool>("CHECKSUM").unwrap_or(true);
    let interval = a.read_p::<u64>("INTERVAL").unwrap_or(0);
    let active = a.read_p::<bool>("ACTIVE").unwrap_or(true);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    a.complete()?;
    let g = UdpGen::new(UdpGenConfig {
        frame: FrameSpec {
            len,
            src_eth,
            dst_eth,
            src_ip,
            dst_ip,
            checksum,
        },
        ports: vec![(sport, dport)],
        flowsize: interval,
        step: PortStep::Increment,
        rate,
        limit,
        active,
        stop,
        push: cx.output_is_push(0),
        nthreads: cx.nthreads,
        tcp: false,
    })?;
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::super::udp_gen::tests::check_frame;
    use crate::test_kit::{reg, source as harness, try_source as try_harness};
    use paraclick_packet::wire::UdpHeader;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;
    use std::net::Ipv4Addr;

    const ARGS: &str = "0:1:2:3:4:5, 1.0.0.1, 1234, 6:7:8:9:a:b, 2.0.0.2, 5678";

    fn pull_router(decl: &str) -> Router {
        let conf = format!("e :: {decl}; e -> u :: Unqueue -> o :: TestSink;");
        Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn ports(p: &paraclick_packet::Packet) -> (u16, u16) {
        let u = UdpHeader::new_checked(&p.data()[34..]).unwrap();
        (u.src_port(), u.dst_port())
    }

    #[test]
    fn frames_are_right() {
        let r = pull_router(&format!("FastUDPSource(0, -1, 100, {ARGS})"));
        let b = r.pull_from("e", 0, 5).unwrap().unwrap();
        assert_eq!(b.len(), 5);
        for p in b.iter() {
            check_frame(p.data(), 100, 1234, 5678, true);
            assert_eq!(p.anno().dst_ip, Ipv4Addr::new(2, 0, 0, 2));
            assert_eq!(p.network_header_offset(), Some(14));
            assert_eq!(p.transport_header_offset(), Some(34));
        }
        assert_eq!(r.read_handler("e.count").unwrap(), "5");
        // Short lengths become 60; no checksum when asked.
        let r = pull_router(&format!("FastUDPSource(0, -1, 20, {ARGS}, false)"));
        let b = r.pull_from("e", 0, 1).unwrap().unwrap();
        check_frame(b.as_slice()[0].data(), 60, 1234, 5678, false);
    }

    #[test]
    fn interval_increments_ports() {
        let r = pull_router("FastUDPSource(0, -1, 60, 0:1:2:3:4:5, 1.0.0.1, 65534, 6:7:8:9:a:b, 2.0.0.2, 9, INTERVAL 2)");
        let b = r.pull_from("e", 0, 7).unwrap().unwrap();
        let got: Vec<_> = b.iter().map(ports).collect();
        assert_eq!(
            got,
            vec![
                (65534, 9),
                (65534, 9),
                (65535, 10),
                (65535, 10),
                (0, 11),
                (0, 11),
                (1, 12)
            ]
        );
        for (p, (s, d)) in b.iter().zip(got) {
            check_frame(p.data(), 60, s, d, true);
        }
    }

    #[test]
    fn limit_rate_and_handlers() {
        let r = pull_router(&format!("FastUDPSource(0, 10, 60, {ARGS})"));
        assert_eq!(r.read_handler("e.rate").unwrap(), "0");
        assert_eq!(r.pull_from("e", 0, 8).unwrap().unwrap().len(), 8);
        assert_eq!(r.pull_from("e", 0, 8).unwrap().unwrap().len(), 2);
        assert!(r.pull_from("e", 0, 8).unwrap().is_none());
        // After LIMIT, `rate` is the measured rate: some positive number.
        let measured: u64 = r.read_handler("e.rate").unwrap().parse().unwrap();
        assert!(measured > 0);
        r.write_handler("e.reset", "").unwrap();
        assert_eq!(r.read_handler("e.count").unwrap(), "0");
        assert_eq!(r.read_handler("e.rate").unwrap(), "0");
        r.write_handler("e.active", "false").unwrap();
        assert!(r.pull_from("e", 0, 8).unwrap().is_none());
        r.write_handler("e.active", "true").unwrap();
        r.write_handler("e.limit", "-1").unwrap();
        assert_eq!(r.read_handler("e.limit").unwrap(), "-1");
        assert_eq!(r.pull_from("e", 0, 30).unwrap().unwrap().len(), 30);
        // A slow rate: the first packet at once, then nothing for a while.
        r.write_handler("e.rate", "1").unwrap();
        r.write_handler("e.reset", "").unwrap();
        assert_eq!(r.read_handler("e.rate").unwrap(), "1");
        assert_eq!(r.pull_from("e", 0, 30).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("e", 0, 30).unwrap().is_none());
        assert_err(
            r.write_handler("e.rate", "-2"),
            "e.rate: expected nonnegative rate, not '-2'",
        );
    }

    #[test]
    fn push_limit_stop() {
        let h = harness(&format!("FastUDPSource(0, 1000, 60, {ARGS}, STOP true)"), 1);
        h.router.run();
        let out = h.output(0);
        assert_eq!(out.len(), 1000);
        check_frame(out[999].data(), 60, 1234, 5678, true);
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            ("FastUDPSource(0, 10, 60)".to_string(), "e :: FastUDPSource: missing mandatory SRCETH argument; e :: FastUDPSource: missing mandatory SRCIP argument; e :: FastUDPSource: missing mandatory SPORT argument; e :: FastUDPSource: missing mandatory DSTETH argument; e :: FastUDPSource: missing mandatory DSTIP argument; e :: FastUDPSource: missing mandatory DPORT argument"),
            (format!("FastUDPSource(-1, 10, 60, {ARGS})"), "e :: FastUDPSource: RATE must be a nonnegative number, not -1"),
            (format!("FastUDPSource(0, 10, 70000, {ARGS})"), "e :: FastUDPSource: LENGTH 70000 too large (max 65549)"),
            ("FastUDPSource(0, 10, 60, 0:1:2:3:4:5, 1.0.0.1, 99999, 6:7:8:9:a:b, 2.0.0.2, 1)"
                .to_string(), "e :: FastUDPSource: SPORT: 99999 out of range"),
            ("FastUDPSource(0, 10, 60, nope, 1.0.0.1, 1, 6:7:8:9:a:b, 2.0.0.2, 1)".to_string(), "e :: FastUDPSource: SRCETH: expected Ethernet address, not 'nope'"),
            (format!("FastUDPSource(0, 10, 60, {ARGS}, FOO 3)"), "e :: FastUDPSource: unknown keyword FOO"),
        ] {
            assert_err(try_harness(&bad, 1), want);
        }
    }
}
