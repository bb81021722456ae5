//! # FastTCPFlows
//!
//! FastTCPFlows(RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS, FLOWSIZE [, ACTIVE, keywords STOP])
//!
//! Creates packet flows with static TCP/IP/Ethernet headers: a benchmark
//! tool.
//!
//! FastUDPFlows's machinery (pacing, LIMIT, round-robin flows with
//! pseudo-random ports drawn afresh after FLOWSIZE packets), but each
//! frame carries a 20-byte TCP header: a flow is a SYN, FLOWSIZE-2 data
//! segments (ACK) and a FIN (FIN and ACK). Every frame is LENGTH bytes
//! (at least 60, Ethernet header included; zero payload). Sequence numbers
//! start at 0 (the SYN) and advance by the payload length per data
//! segment; the window is 65535; the TCP checksum is always computed.
//!
//! Ports: no inputs, 1 output. Processing: agnostic.
//!
//! Arguments: as FastUDPFlows without CHECKSUM. FLOWSIZE must be at least
//! 3, as Click requires. (Click's segments carry invalid sequence numbers;
//! these carry consistent ones.) `STOP` (boolean, default false): ask the router to stop after LIMIT.
//!
//! Drop reasons: `no buffer`: its thread's packet pool stayed empty for
//! a second (packets held or leaked downstream); until then it waits for
//! buffers and loses nothing. What it drops counts toward its LIMIT.
//!
//! Handlers: `count` (read), `rate` (read/write), `reset` (write),
//! `active` and `limit` (read/write), as for FastUDPFlows.
//!
//! Example:
//!
//!     FastTCPFlows(100000, 500000, 60, 0:0:0:0:0:0, 1.0.0.1,
//!                  1:1:1:1:1:1, 2.0.0.2, 100, 10) -> ToDevice(eth0);

use super::udp_gen::UdpGen;
use paraclick_runtime::{ClassSpec, ConfigCx, Kind};

pub fn spec() -> ClassSpec {
    ClassSpec::element("FastTCPFlows", "0/1", "a", make)
        .shared("a source: one packet stream, its limit and count, for all flows")
        .kind(Kind::Source)
        .drop_reasons(super::gen::POOL_REASONS)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<UdpGen, String> {
    super::fast_udp_flows::make_flows(cx, true)
}

#[cfg(test)]
mod tests {
    use crate::test_kit::{reg, source as harness, try_source as try_harness};
    use paraclick_packet::wire::{Ipv4Header, TcpHeader};
    use paraclick_packet::Packet;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;
    use std::net::Ipv4Addr;

    const ADDRS: &str = "0:1:2:3:4:5, 1.0.0.1, 6:7:8:9:a:b, 2.0.0.2";

    fn pull_router(decl: &str) -> Router {
        let conf = format!("e :: {decl}; e -> u :: Unqueue -> o :: TestSink;");
        Router::from_str(&conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"))
    }

    /// (src port, dst port, flags, seq) of a checked frame.
    fn tcp(p: &Packet, len: usize) -> (u16, u16, u16, u32) {
        assert_eq!(p.len(), len);
        let ip = Ipv4Header::new_checked(&p.data()[14..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.protocol(), 6);
        assert_eq!(ip.total_len() as usize, len - 14);
        let t = TcpHeader::new_checked(&p.data()[34..]).unwrap();
        let (s, d) = (Ipv4Addr::new(1, 0, 0, 1), Ipv4Addr::new(2, 0, 0, 2));
        assert!(t.verify_checksum(s, d), "bad TCP checksum");
        assert!(!t.verify_checksum(s, Ipv4Addr::new(2, 0, 0, 3)));
        (t.src_port(), t.dst_port(), t.flags() & 0x3f, t.seq_number())
    }

    #[test]
    fn flows_are_syn_data_fin() {
        // 2 flows of 4 packets, round robin; 70-byte frames carry 16 bytes.
        let r = pull_router(&format!("FastTCPFlows(0, -1, 70, {ADDRS}, 2, 4)"));
        let b = r.pull_from("e", 0, 16).unwrap().unwrap();
        let t: Vec<_> = b.iter().map(|p| tcp(p, 70)).collect();
        let flags: Vec<u16> = t.iter().map(|x| x.2).collect();
        assert_eq!(
            flags,
            [2, 2, 0x10, 0x10, 0x10, 0x10, 0x11, 0x11, 2, 2, 0x10, 0x10, 0x10, 0x10, 0x11, 0x11]
        );
        let seqs: Vec<u32> = t.iter().step_by(2).map(|x| x.3).collect();
        assert_eq!(seqs, [0, 1, 17, 33, 0, 1, 17, 33]);
        // A flow keeps its ports through its FIN, then gets new ones.
        for f in 0..2 {
            let ports: Vec<_> = t.iter().skip(f).step_by(2).map(|x| (x.0, x.1)).collect();
            assert!(ports[..4].iter().all(|p| *p == ports[0]));
            assert!(ports[4..].iter().all(|p| *p == ports[4]));
            assert_ne!(ports[0], ports[4]);
        }
        assert_ne!((t[0].0, t[0].1), (t[1].0, t[1].1));
        assert_eq!(r.read_handler("e.count").unwrap(), "16");
    }

    #[test]
    fn push_limit_counts_and_checksums() {
        let h = harness(
            &format!("FastTCPFlows(0, 90, 60, {ADDRS}, 5, 3, STOP true)"),
            1,
        );
        h.router.run();
        let out = h.output(0);
        assert_eq!(out.len(), 90);
        let t: Vec<_> = out.iter().map(|p| tcp(p, 60)).collect();
        // 5 flows x 18 packets = 30 whole SYN, data, FIN flows.
        for f in [2, 0x10, 0x11] {
            assert_eq!(t.iter().filter(|x| x.2 == f).count(), 30);
        }
        assert_eq!(h.read("count").unwrap(), "90");
    }

    #[test]
    fn bad_configurations() {
        for (bad, want) in [
            (
                format!("FastTCPFlows(0, -1, 60, {ADDRS}, 0, 3)"),
                "e :: FastTCPFlows: FLOWS must be between 1 and 1048576",
            ),
            (
                format!("FastTCPFlows(0, -1, 60, {ADDRS}, 1, 2)"),
                "e :: FastTCPFlows: FLOWSIZE must be at least 3 (a SYN, data and a FIN)",
            ),
            (
                format!("FastTCPFlows(0, -1, 60, {ADDRS}, 1)"),
                "e :: FastTCPFlows: missing mandatory FLOWSIZE argument",
            ),
            (
                format!("FastTCPFlows(0, -1, 60, {ADDRS}, 1, 3, true, 3)"),
                "e :: FastTCPFlows: too many arguments ('3')",
            ),
        ] {
            assert_err(try_harness(&bad, 1), want);
        }
    }
}
