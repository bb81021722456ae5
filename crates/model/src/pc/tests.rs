//! The paper's estimates, each reproduced within 10% from the system files
//! in models/crowley-baer/. The expected figures are the paper's, typed
//! here from its text; the files hold only inputs (and their own copy of
//! the figures for printing).

use super::*;
use crate::Limit;
use std::path::PathBuf;

fn file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/crowley-baer")
        .join(name)
}

fn sys(name: &str) -> PcSystem {
    load(&file(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn within(ours: f64, paper: f64, tol: f64, what: &str) {
    let err = (ours - paper) / paper;
    assert!(
        err.abs() <= tol,
        "{what}: model {ours:.1}, paper {paper:.1}, error {:+.1}%",
        err * 100.0
    );
}

fn mlffr_kpps(name: &str) -> f64 {
    sys(name).model().evaluate().mlffr / 1e3
}

#[test]
fn bus_cycles_follow_width_burst_and_waits() {
    let s = sys("uni-pc-700.toml");
    let pci = &s.buses[1];
    // 64 bytes over 32 bits: 16 beats; writes in bursts of 8.
    assert_eq!(pci.cost(64, Dir::Write).cycles, 16.0 + 2.0 * 2.0);
    // Reads in bursts of 2: 8 bursts of address + 2 waits.
    assert_eq!(pci.cost(64, Dir::Read).cycles, 16.0 + 8.0 * 3.0);
    // Beyond the first 64 bytes, transfers stream.
    assert_eq!(pci.cost(1000, Dir::Read).cycles, 250.0 + 8.0 * 3.0);
    // An L2 miss: 60 ns + one 32-byte line over the 64-bit memory bus.
    within(s.miss_ns(), 110.0, 1e-9, "L2 miss ns");
}

#[test]
fn uniprocessor_700_mhz_is_322_kpps_limited_by_processing() {
    let s = sys("uni-pc-700.toml");
    let m = s.model();
    let ev = m.evaluate();
    within(ev.mlffr / 1e3, 322.0, 0.10, "MLFFR");
    assert_eq!(ev.limit, Limit::Stage(1), "PP is the bottleneck");
    // Table 2 latencies.
    within(m.stages[0].latency_ns, 574.0, 0.10, "IM latency");
    within(m.stages[1].latency_ns, 3102.0, 0.10, "PP latency");
    within(m.stages[2].latency_ns, 1212.0, 0.10, "MI latency");
    // Neither bus over-subscribed; PCI utilisation near Table 2's 0.58.
    assert!(ev.total_util.iter().all(|&u| u < 0.8));
    within(ev.total_util[1], 0.58, 0.10, "PCI utilisation");
    assert!(m
        .render(&ev)
        .ends_with(&format!("MLFFR {:.0} pps\n", ev.mlffr)));
}

#[test]
fn uniprocessor_1_ghz_is_428_kpps() {
    within(mlffr_kpps("uni-pc-1000.toml"), 428.0, 0.10, "1 GHz MLFFR");
}

#[test]
fn empty_configuration_is_pci_bound_at_450_kpps() {
    let ev = sys("uni-pc-700-empty.toml").model().evaluate();
    within(ev.mlffr / 1e3, 450.0, 0.10, "empty MLFFR");
    assert_eq!(ev.limit, Limit::Channel(1), "PCI limits it");
}

#[test]
fn no_processor_beats_the_pci_limit() {
    // "No matter how fast the processor, the forwarding rate will remain
    // at 450K packets per second due to PCI saturation."
    let ev = sys("uni-pc-700.toml")
        .with_clock_mhz(10_000.0)
        .model()
        .evaluate();
    within(ev.mlffr / 1e3, 450.0, 0.10, "10 GHz MLFFR");
    assert_eq!(ev.limit, Limit::Channel(1));
}

#[test]
fn smp_two_cpus_is_506_kpps_processing_bound() {
    let s = sys("smp-pc-2.toml");
    let m = s.model();
    let ev = m.evaluate();
    within(ev.mlffr / 1e3, 506.0, 0.10, "2 CPU MLFFR");
    assert_eq!(ev.limit, Limit::Stage(1));
    within(m.stages[0].latency_ns, 382.0, 0.10, "IM latency");
    within(m.stages[1].latency_ns, 3952.0, 0.10, "PP latency");
    within(m.stages[2].latency_ns, 970.0, 0.10, "MI latency");
}

#[test]
fn smp_four_cpus_over_subscribes_pci_and_is_543_kpps() {
    let m = sys("smp-pc-4.toml").model();
    let ev = m.evaluate();
    // The slowest phase alone would allow ~1 Mpps (Table 3: 1012).
    within(ev.min_rate / 1e3, 1012.0, 0.10, "min phase rate");
    assert!(
        ev.total_util[1] > 0.8,
        "PCI over-subscribed: {}",
        ev.total_util[1]
    );
    within(ev.total_util[1], 1.44, 0.10, "PCI utilisation at min rate");
    assert_eq!(ev.limit, Limit::Channel(1));
    within(ev.mlffr / 1e3, 543.0, 0.10, "4 CPU MLFFR");
    assert!(ev.arbitration_cycles.unwrap() > 0.0);
}

#[test]
fn vpn_is_compute_bound_28_46_92_kpps() {
    within(mlffr_kpps("vpn-uni-700.toml"), 28.0, 0.10, "VPN 1 CPU");
    within(mlffr_kpps("vpn-smp-2.toml"), 46.0, 0.10, "VPN 2 CPUs");
    within(mlffr_kpps("vpn-smp-4.toml"), 92.0, 0.10, "VPN 4 CPUs");
    within(mlffr_kpps("vpn-uni-1000.toml"), 40.0, 0.10, "VPN 1 GHz");
    for f in ["vpn-uni-700.toml", "vpn-smp-4.toml"] {
        assert_eq!(sys(f).model().evaluate().limit, Limit::Stage(1), "{f}");
    }
}

#[test]
fn thousand_byte_packets_are_53_kpps_and_424_mbps() {
    let s = sys("uni-pc-700-1000b.toml");
    let ev = s.model().evaluate();
    within(ev.mlffr / 1e3, 53.0, 0.10, "1000B MLFFR");
    within(
        ev.mlffr * s.mean_packet_bytes() * 8.0 / 1e6,
        424.0,
        0.10,
        "Mbps",
    );
    // The same through the what-if on the 64-byte file.
    let w = sys("uni-pc-700.toml").with_traffic(vec![1000], vec![1.0]);
    within(
        w.model().evaluate().mlffr / 1e3,
        53.0,
        0.10,
        "what-if 1000B",
    );
}

#[test]
fn what_if_cpus_turns_two_into_four() {
    let a = sys("smp-pc-2.toml").with_cpus(4).model().evaluate();
    let b = sys("smp-pc-4.toml").model().evaluate();
    assert_eq!(a.mlffr, b.mlffr);
}

#[test]
fn packet_size_mix_is_weighted() {
    let s = sys("uni-pc-700-empty.toml");
    let small = s.clone().model().evaluate().mlffr;
    let big = s
        .clone()
        .with_traffic(vec![1000], vec![])
        .model()
        .evaluate()
        .mlffr;
    let mix = s
        .with_traffic(vec![64, 1000], vec![1.0, 1.0])
        .model()
        .evaluate()
        .mlffr;
    assert!(big < mix && mix < small, "{big} < {mix} < {small}");
}

#[test]
fn bad_files_are_clear_errors() {
    let e = parse("name = 1").unwrap_err();
    assert!(e.contains("name") || e.contains("string"), "{e}");
    let good = std::fs::read_to_string(file("uni-pc-700.toml")).unwrap();
    let bad = good.replace("bus = \"Membus\"\n\n[[bus]]", "bus = \"Nope\"\n\n[[bus]]");
    assert!(parse(&bad).unwrap_err().contains("Nope"));
    let bad = good.replace("sizes = [64]", "sizes = []");
    assert!(parse(&bad).unwrap_err().contains("no packet sizes"));
    let e = load(&file("does-not-exist.toml")).unwrap_err();
    assert!(
        e.contains("does-not-exist.toml: No such file or directory"),
        "{e}"
    );
}
