//! # FastUDPFlows
//!
//! FastUDPFlows(RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS, FLOWSIZE [, CHECKSUM, ACTIVE, keywords STOP])
//!
//! Creates packet flows with static UDP/IP/Ethernet headers: a benchmark
//! tool.
//!
//! At configure time it builds FLOWS Ethernet/IPv4/UDP frames of LENGTH
//! bytes (at least 60, Ethernet header included, zero payload) from
//! SRCETH and SRCIP to DSTETH and DSTIP. The flows differ only in their
//! UDP source and destination ports, which are pseudo-random (from a
//! fixed seed, so runs are repeatable). Packets go to the flows in turn
//! (round robin; Click picks a flow at random); after a flow has sent
//! FLOWSIZE packets, both its ports are drawn afresh. Each packet is a
//! copy of a template with its flow's 8-byte UDP header patched in; the
//! UDP checksum (if CHECKSUM) is updated incrementally when ports change.
//! The IP header has TTL 64 and ID 0; the network header and destination
//! IP annotations are set.
//!
//! Ports: no inputs, 1 output. Processing: agnostic. In push context it
//! owns a task that emits up to 32 packets per run.
//!
//! Arguments:
//! - `RATE` (real): packets per second, evenly spaced; 0 means as fast as
//!   possible.
//! - `LIMIT` (integer, at most 2^48-1): total packets to send; negative means no limit.
//! - `LENGTH` (integer): frame length; less than 60 means 60.
//! - `SRCETH`, `DSTETH` (Ethernet addresses), `SRCIP`, `DSTIP` (IP
//!   addresses).
//! - `FLOWS` (integer, at least 1): number of concurrent flows.
//! - `FLOWSIZE` (integer, at least 1): packets per flow before its ports
//!   change.
//! - `CHECKSUM` (boolean, default true): compute UDP checksums (else 0).
//! - `ACTIVE` (boolean, default true): whether the source sends.
//! - `STOP` (boolean, default false): ask the router to stop after LIMIT.
//!
//! With several threads generating, each rotates through its own copy of
//! the flows, starting at a different flow and drawing different new
//! ports.
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
//!     FastUDPFlows(100000, 500000, 60, 0:0:0:0:0:0, 1.0.0.1,
//!                  1:1:1:1:1:1, 2.0.0.2, 100, 10) -> ToDevice(eth0);

use super::udp_gen::{random_ports, FrameSpec, PortStep, UdpGen, UdpGenConfig};
use paraclick_packet::wire::EtherAddr;
use paraclick_runtime::{ClassSpec, ConfigCx, Kind};
use std::net::Ipv4Addr;

pub fn spec() -> ClassSpec {
    ClassSpec::element("FastUDPFlows", "0/1", "a", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .rate("rate", true)
        .drop_reasons(super::gen::POOL_REASONS)
}

/// Most flows (the per-thread flow tables are allocated up front).
const MAX_FLOWS: usize = 1 << 20;

fn make(cx: &mut ConfigCx<'_>) -> Result<UdpGen, String> {
    make_flows(cx, false)
}

/// FastUDPFlows, or FastTCPFlows (`tcp`: the same arguments without
/// CHECKSUM; TCP segments are always checksummed).
pub(super) fn make_flows(cx: &mut ConfigCx<'_>, tcp: bool) -> Result<UdpGen, String> {
    let mut a = cx.args();
    let rate = a.read_mp::<f64>("RATE");
    let limit = a.read_mp::<i64>("LIMIT");
    let len = a.read_mp::<usize>("LENGTH");
    let src_eth = a.read_mp::<EtherAddr>("SRCETH");
    let src_ip = a.read_mp::<Ipv4Addr>("SRCIP");
    let dst_eth = a.read_mp::<EtherAddr>("DSTETH");
    let dst_ip = a.read_mp::<Ipv4Addr>("DSTIP");
    let flows = a.read_mp::<usize>("FLOWS");
    let flowsize = a.read_mp::<u64>("FLOWSIZE");
    let checksum = !tcp && a.read_p::<bool>("CHECKSUM").unwrap_or(true);
    let active = a.read_p::<bool>("ACTIVE").unwrap_or(true);
    let stop = a.read::<bool>("STOP").unwrap_or(false);
    a.complete()?;
    if flows == 0 || flows > MAX_FLOWS {
        return Err(format!("FLOWS must be between 1 and {MAX_FLOWS}"));
    }
    if flowsize == 0 {
        return Err("FLOWSIZE must be at least 1".into());
    }
    UdpGen::new(UdpGenConfig {
        frame: FrameSpec {
            len,
            src_eth,
            dst_eth,
            src_ip,
            dst_ip,
            checksum,
        },
        ports: random_ports(flows),
        flowsize,
        step: PortStep::Random,
        rate,
        limit,
        active,
        stop,
        push: cx.output_is_push(0),
        nthreads: cx.nthreads,
        tcp,
    })
}

#[cfg(test)]
mod tests {
    use super::super::udp_gen::tests::check_frame;
    use crate::test_kit::{reg, source as harness, try_source as try_harness};
    use paraclick_packet::wire::UdpHeader;
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;
    use std::collections::HashSet;

    const ADDRS: &str = "0:1:2:3:4:5, 1.0.0.1, 6:7:8:9:a:b, 2.0.0.2";

    fn pull_router(decl: &str) -> Router {
        let conf = format!("e :: {decl}; e -> u :: Unqueue -> o :: TestSink;");
        Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn ports(p: &Packet) -> (u16, u16) {
        let u = UdpHeader::new_checked(&p.data()[34..]).unwrap();
        (u.src_port(), u.dst_port())
    }

    /// Flows rotate; each keeps its ports for FLOWSIZE packets, then gets
    /// new ones; every frame is valid.
    #[test]
    fn flows_rotate_and_change_ports() {
        let r = pull_router(&format!("FastUDPFlows(0, -1, 98, {ADDRS}, 3, 2)"));
        let b = r.pull_from("e", 0, 12).unwrap().unwrap();
        let ps: Vec<_> = b.iter().map(ports).collect();
        for (p, &(s, d)) in b.iter().zip(&ps) {
            check_frame(p.data(), 98, s, d, true);
        }
        // Packets 0..3 are three different flows; 3..6 repeat them.
        let first: HashSet<_> = ps[0..3].iter().collect();
        assert_eq!(first.len(), 3);
        assert_eq!(ps[0..3], ps[3..6]);
        // Then each flow has new ports, kept for two more packets.
        assert_eq!(ps[6..9], ps[9..12]);
        for (i, p) in ps[6..9].iter().enumerate() {
            assert!(!first.contains(p), "flow {i} kept its ports");
        }
        assert_eq!(r.read_handler("e.count").unwrap(), "12");
    }

    #[test]
    fn one_flow_of_one_packet() {
        let r = pull_router(&format!("FastUDPFlows(0, -1, 60, {ADDRS}, 1, 1, false)"));
        let b = r.pull_from("e", 0, 50).unwrap().unwrap();
        let ps: Vec<_> = b.iter().map(ports).collect();
        for (p, &(s, d)) in b.iter().zip(&ps) {
            check_frame(p.data(), 60, s, d, false);
        }
        let distinct: HashSet<_> = ps.iter().collect();
        assert!(distinct.len() > 45, "ports barely change: {ps:?}");
    }

    /// Many flows and changes: all checksums stay right.
    #[test]
    fn checksums_stay_right() {
        let r = pull_router(&format!("FastUDPFlows(0, -1, 61, {ADDRS}, 7, 3)"));
        for _ in 0..100 {
            let b = r.pull_from("e", 0, 32).unwrap().unwrap();
            for p in b.iter() {
                let (s, d) = ports(p);
                check_frame(p.data(), 61, s, d, true);
            }
        }
    }

    #[test]
    fn push_limit_stop_and_rate_handler() {
        let h = harness(
            &format!("FastUDPFlows(0, 500, 60, {ADDRS}, 10, 5, STOP true)"),
            1,
        );
        h.router.run();
        assert_eq!(h.output(0).len(), 500);
        assert_eq!(h.read("count").unwrap(), "500");
        let measured: u64 = h.read("rate").unwrap().parse().unwrap();
        assert!(measured > 0);
        h.write("rate", "1000").unwrap();
        h.write("reset", "").unwrap();
        assert_eq!(h.read("rate").unwrap(), "1000");
        assert_eq!(h.read("count").unwrap(), "0");
    }

    #[test]
    fn paced_pull() {
        let r = pull_router(&format!("FastUDPFlows(2, -1, 60, {ADDRS}, 4, 4)"));
        assert_eq!(r.pull_from("e", 0, 8).unwrap().unwrap().len(), 1);
        assert!(r.pull_from("e", 0, 8).unwrap().is_none());
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            (
                format!("FastUDPFlows(0, -1, 60, {ADDRS}, 0, 1)"),
                "e :: FastUDPFlows: FLOWS must be between 1 and 1048576",
            ),
            (
                format!("FastUDPFlows(0, -1, 60, {ADDRS}, 1, 0)"),
                "e :: FastUDPFlows: FLOWSIZE must be at least 1",
            ),
            (
                format!("FastUDPFlows(0, -1, 60, {ADDRS}, 1)"),
                "e :: FastUDPFlows: missing mandatory FLOWSIZE argument",
            ),
            (
                format!("FastUDPFlows(0, -1, 60, {ADDRS}, 1, 1, true, true, 3)"),
                "e :: FastUDPFlows: too many arguments ('3')",
            ),
            (
                "FastUDPFlows(0, -1, 60, 0:1:2:3:4:5, 1.0.0, 6:7:8:9:a:b, 2.0.0.2, 1, 1)".into(),
                "e :: FastUDPFlows: SRCIP: expected IP address, not '1.0.0'",
            ),
        ] {
            assert_err(try_harness(&bad, 1), want);
        }
    }
}
