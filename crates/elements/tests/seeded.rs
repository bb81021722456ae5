//! Seeded randomness: after RandomSeed, the randomized elements make the
//! choices Click makes with the same seed. The expected values are what
//! Click 2.1 userlevel prints for the same small configurations (its
//! generator is glibc's `random()` after `srandom(SEED)`).
//!
//! The seeded stream is process-wide, so these tests live in a test binary
//! of their own and take turns (`turn`): no other test draws from the
//! stream while one of them counts on its sequence.

use paraclick_packet::Packet;
use paraclick_runtime::testing::{build_simtime, run, sink, with_test_classes, Harness};
use paraclick_runtime::Registry;
use std::sync::{Mutex, MutexGuard};

fn reg() -> Registry {
    with_test_classes(&paraclick_elements::registry())
}

/// `e :: decl` with `ninputs` inputs fed by the test and `noutputs`
/// outputs into sinks.
fn harness(decl: &str, ninputs: usize, noutputs: usize) -> Result<Harness, String> {
    Harness::with_inputs(&reg(), decl, ninputs, noutputs)
}

/// A UDP datagram from `src`:4000 to 198.51.100.9:53, its network header
/// marked.
fn udp(src: [u8; 4]) -> Packet {
    let mut b = vec![0x45, 0, 0, 29, 0, 0, 0, 0, 64, 17, 0, 0];
    b.extend_from_slice(&src);
    b.extend_from_slice(&[198, 51, 100, 9]);
    let sum: u32 = b
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    b[10..12].copy_from_slice(&sum.to_be_bytes());
    b.extend_from_slice(&[0x0f, 0xa0, 0, 53, 0, 9, 0, 0, b'q']);
    let mut p = Packet::from_slice(&b).expect("packet");
    p.set_network_header(0, 20);
    p
}

fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The paints of the packets a configuration's sink `s` got, in order.
fn paints(conf: &str) -> Vec<u8> {
    let r = build_simtime(&reg(), conf);
    run(&r);
    sink(&r, "s").iter().map(|p| p.anno().paint).collect()
}

/// The outputs a RandomSwitch of three picks for `n` packets, after
/// `before` (a RandomSeed, or nothing).
fn switch_picks(before: &str, n: usize) -> Vec<u8> {
    paints(&format!(
        "{before} \
         InfiniteSource(DATA \\<00>, LIMIT {n}, STOP true) -> r :: RandomSwitch; \
         r[0] -> Paint(0) -> s :: TestSink; r[1] -> Paint(1) -> s; r[2] -> Paint(2) -> s;"
    ))
}

/// RandomSwitch: Click's `click_random(0, n - 1)` per packet.
#[test]
fn random_switch_picks_clicks_outputs() {
    let _t = turn();
    assert_eq!(
        switch_picks("RandomSeed(1);", 12),
        [2, 1, 2, 2, 2, 0, 1, 2, 0, 1, 1, 1]
    );
    let a = switch_picks("RandomSeed(7);", 64);
    assert_eq!(
        switch_picks("RandomSeed(7);", 64),
        a,
        "the same seed, the same choices"
    );
    assert_ne!(
        switch_picks("RandomSeed(8);", 64),
        a,
        "another seed, other choices"
    );
}

/// RandomSample: a packet is sampled when a draw's low 28 bits are below
/// P in 28-bit fixed point.
#[test]
fn random_sample_samples_clicks_packets() {
    let _t = turn();
    let got = paints(
        "RandomSeed(5); \
         InfiniteSource(DATA \\<00>, LIMIT 16, STOP true) -> r :: RandomSample(0.3); \
         r[0] -> Paint(1) -> s :: TestSink; r[1] -> Paint(0) -> s;",
    );
    assert_eq!(got, [1, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1]);
}

/// The destination annotations of the packets a configuration's sink `s`
/// got.
fn dst_annos(conf: &str) -> Vec<String> {
    let r = build_simtime(&reg(), conf);
    run(&r);
    sink(&r, "s")
        .iter()
        .map(|p| p.anno().dst_ip.to_string())
        .collect()
}

/// SetRandIPAddress: a draw's bytes, little-endian, are the host bits;
/// with LIMIT the pool is drawn while configuring, after RandomSeed
/// wherever that is declared, then each packet takes `click_random(0,
/// LIMIT - 1)` of it.
#[test]
fn set_rand_ip_address_picks_clicks_addresses() {
    let _t = turn();
    assert_eq!(
        dst_annos(
            "RandomSeed(3); InfiniteSource(DATA \\<00>, LIMIT 4, STOP true) \
             -> SetRandIPAddress(10.0.0.0/8) -> s :: TestSink;"
        ),
        [
            "10.78.219.71",
            "10.64.204.28",
            "10.212.80.50",
            "10.249.210.56"
        ]
    );
    assert_eq!(
        dst_annos(
            "InfiniteSource(DATA \\<00>, LIMIT 6, STOP true) \
             -> SetRandIPAddress(10.1.0.0/16, 3) -> s :: TestSink; RandomSeed(2);"
        ),
        [
            "10.1.185.89",
            "10.1.163.103",
            "10.1.163.103",
            "10.1.93.11",
            "10.1.185.89",
            "10.1.163.103"
        ]
    );
}

/// RandomSource: each 4 bytes (the last chunk shorter) are one draw,
/// little-endian.
#[test]
fn random_source_makes_clicks_bytes() {
    let _t = turn();
    let r = build_simtime(
        &reg(),
        "RandomSeed(4); RandomSource(6, LIMIT 3, STOP true) -> s :: TestSink;",
    );
    run(&r);
    let got: Vec<Vec<u8>> = sink(&r, "s").iter().map(|p| p.data().to_vec()).collect();
    assert_eq!(
        got,
        [
            [0xdd, 0x7d, 0x4e, 0x75, 0x33, 0x52],
            [0x42, 0x99, 0x79, 0x18, 0x1e, 0x54],
            [0xf3, 0x90, 0x6d, 0x1b, 0x19, 0xc4],
        ]
    );
}

/// A rewriter's pattern preferring the packet's own port: the first flow
/// keeps it without drawing; the second, whose own port the first holds
/// toward the same peer, gets Click's first draw after RandomSeed(1) over
/// 1024-65534, port 55226; the third the next draw's.
#[test]
fn a_rewriter_picks_clicks_port() {
    let _t = turn();
    let h = harness(
        "UDPRewriter(pattern 192.0.2.1 1024-65534 - - 0 0); RandomSeed(1)",
        1,
        1,
    )
    .unwrap();
    h.push(
        0,
        vec![udp([10, 0, 0, 1]), udp([10, 0, 0, 2]), udp([10, 0, 0, 3])],
    );
    let ports: Vec<u16> = h
        .output(0)
        .iter()
        .map(|p| u16::from_be_bytes([p.data()[20], p.data()[21]]))
        .collect();
    // The second draw of seed 1 is 846930886: 846930886 / 33288 + 1024.
    assert_eq!(ports, [4000, 55226, 26466]);
}

/// The `seed` handler reseeds; an empty write makes draws unpredictable
/// again; a bad seed is refused with its argument named.
#[test]
fn the_seed_handler_and_errors() {
    let _t = turn();
    let h = harness("RandomSeed(9)", 0, 0).unwrap();
    h.write("seed", "1").unwrap();
    assert_eq!(switch_picks("", 5), [2, 1, 2, 2, 2]);
    assert!(h.write("seed", "x").is_err());
    let e = harness("RandomSeed(-1)", 0, 0).err().unwrap();
    assert!(e.contains("SEED: expected unsigned integer"), "{e}");
    assert!(harness("RandomSeed(4294967296)", 0, 0).is_err());
    h.write("seed", "").unwrap();
    assert_ne!(
        switch_picks("", 64),
        switch_picks("", 64),
        "unseeded runs differ (odds 3^-64 of a false failure)"
    );
}
