//! Every packet-processing element against bad packets: random bytes,
//! truncated and corrupted IP datagrams, with and without header
//! annotations. None may panic, and an element that neither keeps nor
//! makes packets accounts for each one: it leaves by an output or is a
//! counted drop.

use crate::ip::test_util::Rng;
use paraclick_packet::Packet;
use paraclick_runtime::testing::Harness;
use paraclick_runtime::Registry;

/// `decl` with `noutputs` outputs connected, among every element class.
fn harness(decl: &str, noutputs: usize) -> Harness {
    let mut reg = Registry::new();
    crate::register_all(&mut reg);
    Harness::new(&reg, &format!("{decl}; Idle -> e"), noutputs)
        .unwrap_or_else(|e| panic!("{decl}: {e}"))
}

/// (declaration, outputs to connect, whether every input packet leaves or
/// is dropped, one for one).
const ELEMENTS: &[(&str, usize, bool)] = &[
    ("Null", 1, true),
    ("Counter", 1, true),
    ("Strip(14)", 1, true),
    ("Unstrip(14)", 1, true),
    ("StripToNetworkHeader", 1, true),
    ("Paint(3)", 1, true),
    ("CheckPaint(3)", 2, true),
    ("PaintSwitch", 4, true),
    ("CheckLength(60)", 2, true),
    ("SetTimestamp", 1, true),
    ("Classifier(12/0800, 12/0806 20/0001, 14/45%f0, -)", 4, true),
    ("HashSwitch(26, 8)", 3, true),
    ("RoundRobinSwitch", 2, true),
    ("StaticSwitch(1)", 2, true),
    ("Switch(1)", 2, true),
    ("PaintTee(3)", 2, false),
    ("Tee(2)", 2, false),
    (
        "EtherEncap(0x0800, 00:01:02:03:04:05, 00:0a:0b:0c:0d:0e)",
        1,
        true,
    ),
    (
        "EtherRewrite(00:01:02:03:04:05, 00:0a:0b:0c:0d:0e)",
        1,
        true,
    ),
    ("EtherMirror", 1, true),
    ("HostEtherFilter(00:01:02:03:04:05)", 2, true),
    ("ARPResponder(10.0.0.1 00:01:02:03:04:05)", 2, false),
    ("MarkIPHeader(14)", 1, true),
    ("CheckIPHeader(14)", 2, true),
    ("CheckIPHeader2(14)", 2, true),
    ("GetIPAddress(16)", 1, true),
    ("SetIPAddress(10.0.0.9)", 1, true),
    ("StoreIPAddress(16)", 1, true),
    ("DropBroadcasts", 1, true),
    ("IPGWOptions(10.0.0.1)", 2, true),
    ("FixIPSrc(10.0.0.1)", 1, true),
    ("DecIPTTL", 2, true),
    ("SetIPDSCP(5)", 1, true),
    ("MarkIPCE", 1, true),
    ("CheckUDPHeader", 2, true),
    ("CheckTCPHeader", 2, true),
    ("CheckICMPHeader", 2, true),
    ("SetIPChecksum", 1, true),
    ("SetUDPChecksum", 1, true),
    ("SetTCPChecksum", 1, true),
    ("StaticIPLookup(10.0.0.0/8 0, 0/0 10.0.0.1 1)", 2, true),
    ("RadixIPLookup(10.0.0.0/8 0, 0/0 10.0.0.1 1)", 2, true),
    ("DirectIPLookup(10.0.0.0/8 0, 0/0 10.0.0.1 1)", 2, true),
    ("LinearIPLookup(10.0.0.0/8 0, 0/0 10.0.0.1 1)", 2, true),
    ("IPFragmenter(68)", 2, false),
    ("IPReassembler", 1, false),
    ("IPEncap(4, 10.0.0.1, 10.0.0.2)", 1, true),
    ("UDPIPEncap(10.0.0.1, 1234, 10.0.0.2, 80)", 1, true),
    ("IPClassifier(tcp port 80, udp, icmp type echo, -)", 4, true),
    (
        "IPFilter(allow udp dst port 53, deny tcp, allow all)",
        1,
        true,
    ),
    ("ICMPError(10.0.0.1, unreachable, host)", 1, false),
    ("ICMPPingResponder", 2, false),
    ("IPsecESPTunnelEncap(0x1001, aes128-sha1, 0x000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f10111213, 1.0.0.1, 2.0.0.2)", 1, true),
    ("IPsecESPTunnelUnencap(0x1001, aes128gcm16, 0x000102030405060708090a0b0c0d0e0f10111213)", 1, true),
];

/// Packets that are wrong in every way a router meets: empty, random,
/// truncated or corrupted IP, with the IP header marked where it claims
/// to be, behind an Ethernet header or not.
fn bad_packets(rng: &mut Rng) -> Vec<Packet> {
    let mut v = Vec::new();
    for i in 0..300 {
        let mut d = match i % 3 {
            0 => {
                let n = rng.below(120);
                rng.bytes(n)
            }
            _ => {
                let mut ip = rng.datagram().bytes();
                if i % 3 == 1 {
                    let mut eth = vec![0u8; 14];
                    eth[12] = 0x08;
                    eth.extend_from_slice(&ip);
                    ip = eth;
                }
                ip
            }
        };
        // Corrupt some bytes, then maybe cut the packet short.
        for _ in 0..rng.below(4) {
            if !d.is_empty() {
                let k = rng.below(d.len());
                d[k] = rng.u8();
            }
        }
        if rng.below(3) == 0 && !d.is_empty() {
            d.truncate(rng.below(d.len()));
        }
        let mut p = Packet::from_slice(&d).expect("packet");
        match rng.below(3) {
            0 => {}
            1 if d.len() >= 20 => p.set_network_header(0, 20),
            _ if d.len() >= 34 => {
                p.set_mac_header(0);
                p.set_network_header(14, 20);
            }
            _ => {}
        }
        v.push(p);
    }
    v
}

#[test]
fn no_element_panics_on_bad_packets_and_each_packet_is_accounted_for() {
    for (i, &(decl, nout, one_for_one)) in ELEMENTS.iter().enumerate() {
        let h = harness(decl, nout);
        let mut rng = Rng::new(1000 + i as u64);
        let pkts = bad_packets(&mut rng);
        let n = pkts.len();
        // One at a time (Click's BURST 1) and as whole batches.
        let (ones, batch) = pkts.split_at(n / 2);
        for p in ones {
            h.push(0, vec![p.clone_packet().expect("copy")]);
        }
        h.push(
            0,
            batch
                .iter()
                .map(|p| p.clone_packet().expect("copy"))
                .collect(),
        );
        let out: usize = (0..nout).map(|o| h.output(o).len()).sum();
        if one_for_one {
            assert_eq!(
                out as u64 + h.drops(),
                n as u64,
                "{decl}: {out} out + {} dropped of {n}",
                h.drops()
            );
        }
    }
}
