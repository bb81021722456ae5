//! Every packet-processing element against bad packets: random bytes,
//! truncated and corrupted IP datagrams, with and without header
//! annotations. None may panic, and an element that neither keeps nor
//! makes packets accounts for each one: it leaves by an output or is a
//! counted drop.

use crate::robust::PACKET_ELEMENTS as ELEMENTS;
use crate::test_kit::Rng;
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
