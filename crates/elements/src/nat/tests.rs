// Element tests of the rewriter family against Click's documented
// behaviour: each input specification, each handler, ICMP errors.

use crate::test_kit::{ip, ip_checksum_ok, marked, transport_checksum, Ip};
use paraclick_packet::wire::checksum;
use paraclick_packet::Packet;
use paraclick_runtime::testing::assert_err;
use paraclick_runtime::testing::Harness;
use paraclick_runtime::Registry;

fn reg() -> Registry {
    let mut r = Registry::new();
    super::register(&mut r);
    crate::standard::register(&mut r);
    paraclick_runtime::testing::register(&mut r);
    r
}

fn try_harness(decl: &str, noutputs: usize) -> Result<Harness, String> {
    Harness::new(&reg(), decl, noutputs)
}

/// A rewriter with two inputs (the test pushes into both).
fn two_inputs(decl: &str) -> Harness {
    try_harness(&format!("{decl}; TestSource -> [1]e"), 2).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

fn udp(src: &str, sp: u16, dst: &str, dp: u16) -> Vec<u8> {
    Ip::new(src, dst, 17).udp(sp, dp, b"payload").bytes()
}

fn tcp(src: &str, sp: u16, dst: &str, dp: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    Ip::new(src, dst, 6)
        .tcp_full(sp, dp, 1, 0, flags, 1000, &[], data)
        .bytes()
}

/// (saddr, sport, daddr, dport) of a TCP/UDP datagram.
fn ids(d: &[u8]) -> (String, u16, String, u16) {
    let p = |o: usize| u16::from_be_bytes([d[o], d[o + 1]]);
    (
        format!("{}.{}.{}.{}", d[12], d[13], d[14], d[15]),
        p(20),
        format!("{}.{}.{}.{}", d[16], d[17], d[18], d[19]),
        p(22),
    )
}

fn transport_ok(d: &[u8]) -> bool {
    let sa = std::net::Ipv4Addr::new(d[12], d[13], d[14], d[15]);
    let da = std::net::Ipv4Addr::new(d[16], d[17], d[18], d[19]);
    transport_checksum(sa, da, d[9], &d[20..]) == 0 || {
        let ps = checksum::pseudo_header_sum(sa, da, d[9], (d.len() - 20) as u16);
        checksum::combine(&[ps, checksum::sum(&d[20..])]) == 0xffff
    }
}

fn data(ps: &[Packet]) -> Vec<Vec<u8>> {
    ps.iter().map(|p| p.data().to_vec()).collect()
}

const NAPT: &str = "IPRewriter(pattern 1.0.0.1 1024-1030# - - 0 1, drop)";

#[test]
fn pattern_translates_both_directions_with_valid_checksums() {
    let h = two_inputs(NAPT);
    h.push(0, vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))]);
    let out = data(&h.output(0));
    assert_eq!(out.len(), 1);
    assert_eq!(ids(&out[0]), ("1.0.0.1".into(), 1024, "2.0.0.2".into(), 53));
    assert!(ip_checksum_ok(&out[0]) && transport_ok(&out[0]));
    // The reply arrives on input 1 (spec drop): the mapping applies.
    h.push(1, vec![marked(&udp("2.0.0.2", 53, "1.0.0.1", 1024))]);
    let back = h.output(1);
    assert_eq!(back.len(), 1);
    let b = back[0].data();
    assert_eq!(ids(b), ("2.0.0.2".into(), 53, "10.0.0.5".into(), 5000));
    assert!(ip_checksum_ok(b) && transport_ok(b));
    assert_eq!(back[0].anno().dst_ip, ip("10.0.0.5"), "DST_ANNO");
    // Unsolicited packets from outside hit 'drop'.
    h.push(1, vec![marked(&udp("2.0.0.2", 53, "1.0.0.1", 1025))]);
    assert!(h.output(1).is_empty());
    assert_eq!(h.drops(), 1);
    assert_eq!(h.read("drop_reasons").unwrap(), "no mapping 1\n");
    // The same flow again reuses its mapping; a second flow gets 1025.
    h.push(
        0,
        vec![
            marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53)),
            marked(&udp("10.0.0.6", 5000, "2.0.0.2", 53)),
        ],
    );
    let out = data(&h.output(0));
    assert_eq!(out[0][20..22], 1024u16.to_be_bytes());
    assert_eq!(out[1][20..22], 1025u16.to_be_bytes());
    assert_eq!(h.read("size").unwrap(), "2");
    assert_eq!(h.read("nmappings").unwrap(), "2");
}

#[test]
fn handlers_in_clicks_formats() {
    let h = two_inputs(NAPT);
    h.push(
        0,
        vec![marked(&tcp("10.0.0.5", 4000, "2.0.0.2", 80, 2, b""))],
    );
    h.push(0, vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))]);
    let t = h.read("table").unwrap();
    // A TCP flow without data in both directions: TCP_NODATA_TIMEOUT (300 s).
    assert_eq!(
        t,
        "TCP (10.0.0.5, 4000, 2.0.0.2, 80) => (1.0.0.1, 1024, 2.0.0.2, 80) [*0 1] i0 exp300\n\
         TCP (2.0.0.2, 80, 1.0.0.1, 1024) => (2.0.0.2, 80, 10.0.0.5, 4000) [0 *1] i0 exp300\n\
         UDP (10.0.0.5, 5000, 2.0.0.2, 53) => (1.0.0.1, 1025, 2.0.0.2, 53) [*0 1] i0 exp300\n\
         UDP (2.0.0.2, 53, 1.0.0.1, 1025) => (2.0.0.2, 53, 10.0.0.5, 5000) [0 *1] i0 exp300\n"
    );
    assert_eq!(h.read("mappings").unwrap(), t);
    // Click's tcp_table/udp_table lines.
    assert_eq!(
        h.read("tcp_table").unwrap(),
        "(10.0.0.5, 4000, 2.0.0.2, 80) => (1.0.0.1, 1024, 2.0.0.2, 80) [*0 1] i0 exp300\n\
         (2.0.0.2, 80, 1.0.0.1, 1024) => (2.0.0.2, 80, 10.0.0.5, 4000) [0 *1] i0 exp300\n"
    );
    assert_eq!(h.read("udp_table").unwrap().lines().count(), 2);
    // Click's patterns lines: the pattern and its live flows; <drop>.
    assert_eq!(
        h.read("patterns").unwrap(),
        "1.0.0.1 1024-1030 - - [2]\n<drop>\n"
    );
    assert_eq!(h.read("capacity").unwrap(), "2097152");
    h.write("capacity", "2").unwrap();
    assert_err(
        h.write("capacity", "x"),
        "e.capacity: expected unsigned integer",
    );
    h.push(0, vec![marked(&udp("10.0.0.9", 1, "2.0.0.2", 53))]);
    assert_eq!(h.read("mapping_failures").unwrap(), "1");
    h.write("clear", "").unwrap();
    assert_eq!(h.read("size").unwrap(), "0");
    assert_eq!(h.read("table").unwrap(), "");
    assert_eq!(
        h.read("patterns").unwrap(),
        "1.0.0.1 1024-1030 - -\n<drop>\n"
    );
}

#[test]
fn exhausted_port_range_is_a_counted_failure() {
    let h = two_inputs("IPRewriter(pattern 1.0.0.1 1024-1025 - - 0 1, drop)");
    for i in 0..5 {
        h.push(0, vec![marked(&udp("10.0.0.5", 6000 + i, "2.0.0.2", 53))]);
    }
    let out = data(&h.output(0));
    assert_eq!(out.len(), 2);
    assert_ne!(out[0][20..22], out[1][20..22], "two flows, two ports");
    assert_eq!(h.read("mapping_failures").unwrap(), "3");
    assert_eq!(h.drops(), 3);
    assert_eq!(h.read("drop_reasons").unwrap(), "ports exhausted 3\n");
    // A batch whose packets go different ways keeps each drop's reason.
    h.push(
        0,
        vec![
            marked(&udp("10.0.0.5", 6005, "2.0.0.2", 53)),
            marked(&udp("10.0.0.5", 6000, "2.0.0.2", 53)),
            marked(&udp("10.0.0.5", 6006, "2.0.0.2", 53)),
        ],
    );
    assert_eq!(h.output(0).len(), 1);
    assert_eq!(h.read("drop_reasons").unwrap(), "ports exhausted 5\n");
}

#[test]
fn pass_keep_and_discard() {
    let h = two_inputs("IPRewriter(pass 1, keep 0 1)");
    let d = udp("10.0.0.5", 5000, "2.0.0.2", 53);
    h.push(0, vec![marked(&d)]);
    assert_eq!(data(&h.output(1)), vec![d.clone()]);
    assert_eq!(h.read("size").unwrap(), "0", "pass installs nothing");
    // keep: unchanged, with a mapping; the reverse goes to output 1 even
    // when it arrives on input 0 (mappings come before specs).
    let k = udp("3.0.0.3", 7, "4.0.0.4", 8);
    h.push(1, vec![marked(&k)]);
    assert_eq!(data(&h.output(0)), vec![k]);
    h.push(0, vec![marked(&udp("4.0.0.4", 8, "3.0.0.3", 7))]);
    assert_eq!(h.output(1).len(), 1);
    assert_eq!(h.read("size").unwrap(), "1");
    let h = two_inputs("UDPRewriter(discard, drop)");
    h.push(0, vec![marked(&d)]);
    h.push(1, vec![marked(&d)]);
    assert_eq!(h.drops(), 2);
}

#[test]
fn protocol_specific_rewriters_and_bad_packets() {
    let h = two_inputs("TCPRewriter(pattern 1.0.0.1 - - - 0 1, drop)");
    h.push(0, vec![marked(&udp("10.0.0.5", 1, "2.0.0.2", 2))]);
    assert_eq!(h.read("bad_packets").unwrap(), "1");
    h.push(0, vec![marked(&tcp("10.0.0.5", 1, "2.0.0.2", 2, 2, b"x"))]);
    let out = data(&h.output(0));
    assert_eq!(ids(&out[0]), ("1.0.0.1".into(), 1, "2.0.0.2".into(), 2));
    assert!(transport_ok(&out[0]));
    // Non-first fragments and unmarked packets are dropped and counted.
    let frag = Ip::new("10.0.0.5", "2.0.0.2", 6)
        .frag(10)
        .payload(&[0; 16])
        .bytes();
    h.push(0, vec![marked(&frag), Packet::from_slice(&frag).unwrap()]);
    assert_eq!(h.read("bad_packets").unwrap(), "3");
    assert!(h.output(0).is_empty());
}

#[test]
fn udp_zero_checksum_stays_zero() {
    let h = two_inputs(NAPT);
    let mut d = udp("10.0.0.5", 5000, "2.0.0.2", 53);
    d[26] = 0;
    d[27] = 0;
    h.push(0, vec![marked(&d)]);
    let out = data(&h.output(0));
    assert_eq!(&out[0][26..28], &[0, 0]);
    assert!(ip_checksum_ok(&out[0]));
}

#[test]
fn named_patterns_and_mappers() {
    let h = try_harness(
        "IPRewriter(to_world 0 1, rr); IPRewriterPatterns(to_world 1.0.0.1 2000-2001# - -); \
         rr :: RoundRobinIPMapper(- - 10.1.0.1 80 0 1, - - 10.1.0.2 80 0 1); TestSource -> [1]e",
        2,
    )
    .unwrap();
    h.push(0, vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))]);
    assert_eq!(ids(h.output(0)[0].data()).1, 2000);
    for i in 0..4 {
        h.push(
            1,
            vec![marked(&tcp("7.0.0.7", 100 + i, "1.0.0.1", 80, 2, b""))],
        );
    }
    let dsts: Vec<String> = h.output(0).iter().map(|p| ids(p.data()).2).collect();
    assert_eq!(dsts, ["10.1.0.1", "10.1.0.2", "10.1.0.1", "10.1.0.2"]);
    let h = try_harness(
        "IPRewriter(sh); sh :: SourceIPHashMapper(16 7, - - 10.1.0.1 - 0 0, - - 10.1.0.2 - 0 0)",
        1,
    )
    .unwrap();
    for sp in 0..4 {
        h.push(0, vec![marked(&udp("9.9.9.9", 100 + sp, "1.0.0.1", 53))]);
    }
    let dsts: Vec<String> = h.output(0).iter().map(|p| ids(p.data()).2).collect();
    assert!(
        dsts.iter().all(|d| *d == dsts[0]),
        "one source, one pattern: {dsts:?}"
    );
}

#[test]
fn configuration_errors() {
    for (decl, want) in [
        (
            "IPRewriter(pattern 1.0.0.1 - - - 0 5, drop)",
            "out of range",
        ),
        (
            "IPRewriter(nosuch 0 1, drop)",
            "input spec 0: no such pattern 'nosuch'",
        ),
        ("IPRewriter(nosuch, drop)", "no mapper element"),
        (
            "IPRewriter(pattern 1.0.0.9-1.0.0.1 - - - 0 1, drop)",
            "input spec 0: bad source address",
        ),
        ("IPRewriter(drop)", "need 2 arguments, one per input port"),
        (
            "IPRewriter(pattern x - - - 0 1, drop, TCP_TIMEOUT never)",
            "TCP_TIMEOUT",
        ),
        (
            "IPRewriter(drop, drop); nosuch :: Idle; Idle -> ICMPRewriter(nosuch) -> Discard",
            "not a rewriter",
        ),
    ] {
        let e = try_harness(&format!("{decl}; TestSource -> [1]e"), 2)
            .err()
            .unwrap_or_else(|| panic!("{decl} accepted"));
        assert!(e.contains(want), "{decl}: {e}");
    }
}

/// [`two_inputs`] in simulated time: the test moves the clock.
fn sim_two_inputs(decl: &str) -> Harness {
    Harness::simulated(&reg(), &format!("{decl}; TestSource -> [1]e"), 1, 2)
        .unwrap_or_else(|e| panic!("{decl}: {e}"))
}

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}

#[test]
fn timeouts_free_ports_for_new_flows() {
    // Simulated time; mappings age in whole milliseconds of the router's
    // clock: live UDP_TIMEOUT after the last packet, expired 1 ms later.
    let h =
        sim_two_inputs("IPRewriter(pattern 1.0.0.1 1024-1024 - - 0 1, drop, UDP_TIMEOUT 200ms)");
    h.push(0, vec![marked(&udp("10.0.0.5", 1, "2.0.0.2", 53))]);
    h.push(0, vec![marked(&udp("10.0.0.6", 1, "2.0.0.2", 53))]);
    assert_eq!(h.output(0).len(), 1);
    assert_eq!(h.read("mapping_failures").unwrap(), "1");
    h.advance(ms(200));
    h.push(0, vec![marked(&udp("10.0.0.6", 1, "2.0.0.2", 53))]);
    assert!(
        h.output(0).is_empty(),
        "the port is still held at UDP_TIMEOUT"
    );
    assert_eq!(h.read("mapping_failures").unwrap(), "2");
    assert_eq!(h.read("nmappings").unwrap(), "1");
    h.advance(ms(1));
    assert_eq!(h.read("nmappings").unwrap(), "0", "expired 1 ms after");
    h.push(0, vec![marked(&udp("10.0.0.6", 1, "2.0.0.2", 53))]);
    let out = data(&h.output(0));
    assert_eq!(ids(&out[0]).1, 1024, "the expired flow's port is reused");
    // The old flow's reply no longer maps.
    h.push(1, vec![marked(&udp("2.0.0.2", 53, "1.0.0.1", 1024))]);
    assert_eq!(ids(h.output(1)[0].data()).2, "10.0.0.6");
}

#[test]
fn tcp_teardown_shortens_the_timeout() {
    // Simulated time: an open connection outlives TCP_DONE_TIMEOUT; once
    // both sides sent FIN it is live TCP_DONE_TIMEOUT after the last one
    // and gone 1 ms later.
    let h = sim_two_inputs(
        "IPRewriter(pattern 1.0.0.1 1024-1024 - - 0 1, drop, TCP_DONE_TIMEOUT 200ms)",
    );
    h.push(
        0,
        vec![marked(&tcp("10.0.0.5", 1, "2.0.0.2", 80, 0x10, b"a"))],
    );
    h.push(
        1,
        vec![marked(&tcp("2.0.0.2", 80, "1.0.0.1", 1024, 0x10, b"b"))],
    );
    h.advance(ms(300));
    assert_eq!(
        h.read("nmappings").unwrap(),
        "1",
        "an open connection stays"
    );
    h.push(
        0,
        vec![marked(&tcp("10.0.0.5", 1, "2.0.0.2", 80, 0x11, b""))],
    );
    h.push(
        1,
        vec![marked(&tcp("2.0.0.2", 80, "1.0.0.1", 1024, 0x11, b""))],
    );
    assert_eq!(h.output(0).len(), 2);
    assert_eq!(h.output(1).len(), 2);
    h.advance(ms(200));
    assert_eq!(
        h.read("nmappings").unwrap(),
        "1",
        "closed, not yet timed out"
    );
    assert_ne!(h.read("table").unwrap(), "");
    h.advance(ms(1));
    assert_eq!(h.read("table").unwrap(), "", "closed and timed out");
    assert_eq!(h.read("nmappings").unwrap(), "0");
}

#[test]
fn addr_rewriters() {
    let h = two_inputs("IPAddrRewriter(pattern 1.0.0.1-1.0.0.2# - 0 1, drop)");
    let icmp = Ip::new("10.0.0.5", "2.0.0.2", 1)
        .icmp(8, 0, [0, 1, 0, 1], b"x")
        .bytes();
    h.push(
        0,
        vec![marked(&icmp), marked(&udp("10.0.0.5", 9, "3.0.0.3", 9))],
    );
    let out = data(&h.output(0));
    assert_eq!(&out[0][12..16], &[1, 0, 0, 1]);
    assert_eq!(&out[1][12..16], &[1, 0, 0, 1]);
    assert!(ip_checksum_ok(&out[0]) && transport_ok(&out[1]));
    h.push(1, vec![marked(&udp("3.0.0.3", 9, "1.0.0.1", 9))]);
    assert_eq!(&h.output(1)[0].data()[16..20], &[10, 0, 0, 5]);
    assert_eq!(
        h.read("table").unwrap(),
        "10.0.0.5 => 1.0.0.1 [0]\n1.0.0.1 => 10.0.0.5 [*1]\n"
    );
    let h = two_inputs("IPAddrPairRewriter(pattern 1.0.0.1 - 0 1, drop)");
    h.push(0, vec![marked(&udp("10.0.0.5", 9, "3.0.0.3", 9))]);
    assert_eq!(&h.output(0)[0].data()[12..16], &[1, 0, 0, 1]);
    assert_eq!(
        h.read("table").unwrap(),
        "(10.0.0.5, 3.0.0.3) => (1.0.0.1, 3.0.0.3) [0]\n(3.0.0.3, 1.0.0.1) => (3.0.0.3, 10.0.0.5) [*1]\n"
    );
}

fn echo(src: &str, dst: &str, ty: u8, id: u16) -> Vec<u8> {
    let idb = id.to_be_bytes();
    Ip::new(src, dst, 1)
        .icmp(ty, 0, [idb[0], idb[1], 0, 1], b"ping")
        .bytes()
}

#[test]
fn ping_rewriter_maps_identifiers() {
    let h = two_inputs("ICMPPingRewriter(pattern 1.0.0.1 3000-3001# - - 0 1, drop)");
    h.push(0, vec![marked(&echo("10.0.0.5", "2.0.0.2", 8, 77))]);
    let out = data(&h.output(0));
    assert_eq!(&out[0][12..16], &[1, 0, 0, 1]);
    assert_eq!(&out[0][24..26], &3000u16.to_be_bytes());
    assert!(checksum::verify(&out[0][20..]) && ip_checksum_ok(&out[0]));
    h.push(1, vec![marked(&echo("2.0.0.2", "1.0.0.1", 0, 3000))]);
    let back = data(&h.output(1));
    assert_eq!(&back[0][16..20], &[10, 0, 0, 5]);
    assert_eq!(&back[0][24..26], &77u16.to_be_bytes());
    assert!(checksum::verify(&back[0][20..]));
}

#[test]
fn a_reply_translated_to_zeros_checksums_to_ffff() {
    // The echo reply's identifier goes back to 0: with sequence 0 and no
    // data the message is all zeros, whose checksum is 0xFFFF (an
    // incremental update alone leaves 0x0000, which fails verification).
    let h = two_inputs("ICMPPingRewriter(pattern 1.0.0.1 - 5-5 0 1, drop)");
    let zero = |src: &str, dst: &str, ty: u8, id: u16| {
        let idb = id.to_be_bytes();
        Ip::new(src, dst, 1)
            .icmp(ty, 0, [idb[0], idb[1], 0, 0], b"")
            .bytes()
    };
    h.push(0, vec![marked(&zero("10.0.0.5", "2.0.0.2", 8, 0))]);
    let out = data(&h.output(0));
    assert_eq!(&out[0][24..26], &5u16.to_be_bytes());
    h.push(1, vec![marked(&zero("2.0.0.2", "1.0.0.1", 0, 5))]);
    let back = data(&h.output(1));
    assert_eq!(&back[0][20..], &[0, 0, 0xFF, 0xFF, 0, 0, 0, 0]);
    assert!(checksum::verify(&back[0][20..]));
}

/// An ICMP error from `from` to `to` quoting `quoted` (its IP header and
/// first 8 bytes, as routers send).
fn icmp_error(from: &str, to: &str, ty: u8, code: u8, quoted: &[u8]) -> Vec<u8> {
    Ip::new(from, to, 1)
        .icmp(ty, code, [0; 4], &quoted[..28])
        .bytes()
}

#[test]
fn icmp_errors_about_translated_flows() {
    let h = try_harness(
        "ICMPRewriter(rw); rw :: IPRewriter(pattern 1.0.0.1 1024-1030# - - 0 1, drop); \
         Idle -> [0]rw; Idle -> [1]rw; rw[0] -> Discard; rw[1] -> Discard",
        2,
    )
    .unwrap();
    h.router
        .push_into(
            "rw",
            0,
            vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))].into(),
        )
        .unwrap();
    // The peer says port unreachable about the translated datagram.
    let sent = udp("1.0.0.1", 1024, "2.0.0.2", 53);
    let err = icmp_error("2.0.0.2", "1.0.0.1", 3, 3, &sent);
    let unrelated = icmp_error(
        "2.0.0.2",
        "1.0.0.1",
        3,
        3,
        &udp("1.0.0.1", 1029, "2.0.0.2", 53),
    );
    h.push(0, vec![marked(&err), marked(&unrelated)]);
    let out = data(&h.output(0));
    assert_eq!(out.len(), 1);
    let o = &out[0];
    assert_eq!(&o[16..20], &[10, 0, 0, 5], "outer destination");
    assert_eq!(&o[12..16], &[2, 0, 0, 2], "outer source stays");
    assert!(ip_checksum_ok(o));
    assert!(checksum::verify(&o[20..]), "ICMP checksum");
    let inner = &o[28..];
    assert_eq!(&inner[12..16], &[10, 0, 0, 5]);
    assert_eq!(&inner[20..22], &5000u16.to_be_bytes());
    assert!(ip_checksum_ok(inner), "quoted IP header checksum");
    // The quoted UDP checksum matches the original datagram's.
    let orig = udp("10.0.0.5", 5000, "2.0.0.2", 53);
    assert_eq!(&inner[26..28], &orig[26..28]);
    assert_eq!(h.output(1).len(), 1, "unmatched error to output 1");
    assert_eq!(h.read("rewritten").unwrap(), "1");
}

/// The batched lookup (runs of packets looked up before any is handled)
/// gives what handling the packets one at a time gives: a flow's later
/// packets in the same run find the mapping its first packet made, replies
/// in the same run find it too, and bad packets are dropped and counted
/// without disturbing their neighbours. More packets than one run, so a
/// batch spans several runs.
#[test]
fn batched_lookup_matches_one_packet_at_a_time() {
    const SEQ: &str =
        "IPRewriter(pattern 1.0.0.1 1024-2047# - - 0 1, pattern 1.0.0.1 1024-2047# - - 0 1)";
    let mut seq: Vec<Vec<u8>> = Vec::new();
    for i in 0..90u16 {
        let host = format!("10.0.0.{}", 1 + i % 7);
        let sp = 4000 + (i % 5);
        seq.push(udp(&host, sp, "2.0.0.2", 53));
        if i % 11 == 3 {
            // Not IP at all: dropped, counted.
            seq.push(vec![0x60; 28]);
        }
        if i % 13 == 5 {
            // A TCP packet of a new flow, then again (same run).
            seq.push(tcp(&host, 7000 + i, "3.0.0.3", 80, 2, b""));
            seq.push(tcp(&host, 7000 + i, "3.0.0.3", 80, 16, b"data"));
        }
    }
    let out_of = |batched: bool| -> (Vec<Vec<u8>>, Vec<Vec<u8>>, String, String) {
        let h = two_inputs(SEQ);
        // All at once (one batch, several runs) or one packet at a time.
        let feed = |port: usize, pkts: Vec<Packet>| {
            if batched {
                h.push(port, pkts);
            } else {
                for p in pkts {
                    h.push(port, vec![p]);
                }
            }
        };
        let pkts: Vec<Packet> = seq
            .iter()
            .map(|d| {
                if d[0] >> 4 == 4 {
                    marked(d)
                } else {
                    Packet::from_slice(d).unwrap()
                }
            })
            .collect();
        feed(0, pkts);
        let fwd = data(&h.output(0));
        // Replies to every translated packet, in one batch on input 1.
        let replies: Vec<Packet> = fwd
            .iter()
            .map(|d| {
                let (sa, sp, da, dp) = ids(d);
                let r = if d[9] == 6 {
                    tcp(&da, dp, &sa, sp, 16, b"r")
                } else {
                    udp(&da, dp, &sa, sp)
                };
                marked(&r)
            })
            .collect();
        feed(1, replies);
        let back = data(&h.output(1));
        (
            fwd,
            back,
            h.read("table").unwrap(),
            h.read("bad_packets").unwrap(),
        )
    };
    let one = out_of(false);
    let many = out_of(true);
    assert_eq!(one.0.len(), 90 + 2 * 7, "every IP packet translated");
    assert_eq!(one.1.len(), one.0.len(), "every reply translated back");
    assert_eq!(one.3, "8");
    assert_eq!(many.0, one.0, "forward packets");
    assert_eq!(many.1, one.1, "replies");
    assert_eq!(many.2, one.2, "mappings");
    assert_eq!(many.3, one.3, "bad packets");
    // Each reply goes back to the private flow its request came from.
    for (f, b) in one.0.iter().zip(&one.1) {
        let (_, _, fda, fdp) = ids(f);
        let (bsa, bsp, _, _) = ids(b);
        assert_eq!((fda, fdp), (bsa, bsp));
        assert!(ip_checksum_ok(b) && transport_ok(b));
    }
}

#[test]
fn a_mapping_made_before_a_hot_swap_translates_the_reply_after_it() {
    let old = two_inputs(NAPT);
    old.push(0, vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))]);
    let out = data(&old.output(0));
    assert_eq!(ids(&out[0]), ("1.0.0.1".into(), 1024, "2.0.0.2".into(), 53));
    let new = two_inputs(NAPT);
    let report = new.router.take_state_from(&old.router).unwrap();
    assert!(report.taken >= 1, "the rewriter took its state");
    drop(old);
    // The reply to the flow mapped by the old router.
    new.push(1, vec![marked(&udp("2.0.0.2", 53, "1.0.0.1", 1024))]);
    let back = new.output(1);
    assert_eq!(back.len(), 1, "the reply was translated, not dropped");
    let b = back[0].data();
    assert_eq!(ids(b), ("2.0.0.2".into(), 53, "10.0.0.5".into(), 5000));
    assert!(ip_checksum_ok(b) && transport_ok(b));
    // The flow keeps its port outbound, and the port is not given to a
    // new flow.
    new.push(0, vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))]);
    new.push(0, vec![marked(&udp("10.0.0.6", 5000, "2.0.0.2", 53))]);
    let out = data(&new.output(0));
    assert_eq!(ids(&out[0]).1, 1024);
    assert_ne!(ids(&out[1]).1, 1024, "a live mapping's port reused");
}

/// A rewriter with two inputs in simulated time (the clock moves only
/// with `advance`).
fn two_inputs_sim(decl: &str, noutputs: usize) -> Harness {
    Harness::simulated(&reg(), decl, 2, noutputs).unwrap_or_else(|e| panic!("{decl}: {e}"))
}

fn secs(n: u64) -> std::time::Duration {
    std::time::Duration::from_secs(n)
}

#[test]
fn udp_rewriter_rewrites_tcp_too() {
    let h = two_inputs("UDPRewriter(pattern 1.0.0.1 1024-1026# - - 0 1, drop)");
    h.push(
        0,
        vec![marked(&tcp("10.0.0.5", 1, "2.0.0.2", 2, 0x10, b"x"))],
    );
    let out = data(&h.output(0));
    assert_eq!(ids(&out[0]), ("1.0.0.1".into(), 1024, "2.0.0.2".into(), 2));
    assert!(transport_ok(&out[0]));
    h.push(
        1,
        vec![marked(&tcp("2.0.0.2", 2, "1.0.0.1", 1024, 0x10, b""))],
    );
    assert_eq!(ids(h.output(1)[0].data()).2, "10.0.0.5");
    // TCPRewriter still takes TCP only.
    let h = two_inputs("TCPRewriter(pattern 1.0.0.1 - - - 0 1, drop)");
    h.push(0, vec![marked(&udp("10.0.0.5", 1, "2.0.0.2", 2))]);
    assert_eq!(h.read("bad_packets").unwrap(), "1");
}

#[test]
fn reply_anno_paints_replies_with_the_first_packets_value() {
    let h = two_inputs("IPRewriter(pattern 1.0.0.1 1024-1030# - - 0 1, drop, REPLY_ANNO PAINT)");
    let mut p = marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53));
    p.anno_mut().paint = 7;
    h.push(0, vec![p]);
    assert_eq!(
        h.output(0)[0].anno().paint,
        7,
        "forward packets keep theirs"
    );
    let mut r = marked(&udp("2.0.0.2", 53, "1.0.0.1", 1024));
    r.anno_mut().paint = 1;
    h.push(1, vec![r]);
    assert_eq!(h.output(1)[0].anno().paint, 7);
    // Without REPLY_ANNO replies keep their own.
    let h = two_inputs(NAPT);
    h.push(0, vec![marked(&udp("10.0.0.5", 5000, "2.0.0.2", 53))]);
    let mut r = marked(&udp("2.0.0.2", 53, "1.0.0.1", 1024));
    r.anno_mut().paint = 1;
    h.push(1, vec![r]);
    assert_eq!(h.output(1)[0].anno().paint, 1);
}

#[test]
fn a_full_table_evicts_the_flow_expiring_first_past_its_guarantee() {
    let h = two_inputs_sim(
        "IPRewriter(pattern 1.0.0.1 1024-1030# - - 0 1, drop, MAPPING_CAPACITY 2)",
        2,
    );
    h.push(0, vec![marked(&udp("10.0.0.1", 1, "2.0.0.2", 53))]);
    h.advance(secs(1));
    h.push(0, vec![marked(&udp("10.0.0.2", 1, "2.0.0.2", 53))]);
    h.advance(secs(1));
    // Both within the 5 s guarantee: the new flow is refused.
    h.push(0, vec![marked(&udp("10.0.0.3", 1, "2.0.0.2", 53))]);
    assert_eq!(h.output(0).len(), 2);
    assert_eq!(h.read("drop_reasons").unwrap(), "table full 1\n");
    // The refused flow still took port 1026 (chosen, then refused).
    h.advance(secs(10));
    // Flow 1 expires first (the oldest of equal timeouts): evicted.
    h.push(0, vec![marked(&udp("10.0.0.4", 1, "2.0.0.2", 53))]);
    assert_eq!(ids(h.output(0)[0].data()).1, 1027);
    h.push(1, vec![marked(&udp("2.0.0.2", 53, "1.0.0.1", 1024))]);
    assert!(h.output(1).is_empty(), "flow 1 is gone");
    h.push(1, vec![marked(&udp("2.0.0.2", 53, "1.0.0.1", 1025))]);
    assert_eq!(h.output(1).len(), 1, "flow 2 stays");
    assert_eq!(h.read("size").unwrap(), "2");
}

#[test]
fn tcp_guarantee_zero_keeps_established_connections() {
    let h = two_inputs_sim(
        "IPRewriter(pattern 1.0.0.1 1024-1030# - - 0 1, drop, MAPPING_CAPACITY 2, GUARANTEE 0, \
         TCP_TIMEOUT 100)",
        2,
    );
    // Flow 1: data both ways (established, and expiring first: 100 s);
    // flow 2: no data (300 s).
    h.push(
        0,
        vec![marked(&tcp("10.0.0.1", 1, "2.0.0.2", 80, 0x10, b"a"))],
    );
    h.push(
        1,
        vec![marked(&tcp("2.0.0.2", 80, "1.0.0.1", 1024, 0x10, b"b"))],
    );
    h.advance(secs(1));
    h.push(
        0,
        vec![marked(&tcp("10.0.0.2", 1, "2.0.0.2", 80, 0x10, b""))],
    );
    h.advance(secs(1));
    h.push(
        0,
        vec![marked(&tcp("10.0.0.3", 1, "2.0.0.2", 80, 0x10, b""))],
    );
    h.output(0);
    h.output(1);
    // The unestablished flow 2 went, though flow 1 is older.
    h.push(
        1,
        vec![marked(&tcp("2.0.0.2", 80, "1.0.0.1", 1024, 0x10, b""))],
    );
    h.push(
        1,
        vec![marked(&tcp("2.0.0.2", 80, "1.0.0.1", 1025, 0x10, b""))],
    );
    let back: Vec<String> = h.output(1).iter().map(|p| ids(p.data()).2).collect();
    assert_eq!(back, ["10.0.0.1"]);
}

#[test]
fn mapping_capacity_names_a_rewriter_to_share_its_capacity() {
    let h = try_harness(
        "IPRewriter(pattern 1.0.0.2 1024-1030# - - 0 1, drop, MAPPING_CAPACITY rw2); \
         rw2 :: IPRewriter(pattern 1.0.0.3 1024-1030# - - 0 1, drop, MAPPING_CAPACITY 2); \
         Idle -> [0]rw2; Idle -> [1]rw2; rw2[0] -> Discard; rw2[1] -> Discard; TestSource -> [1]e",
        2,
    )
    .unwrap();
    h.router
        .push_into(
            "rw2",
            0,
            vec![marked(&udp("10.0.0.1", 1, "2.0.0.2", 53))].into(),
        )
        .unwrap();
    h.push(0, vec![marked(&udp("10.0.0.2", 1, "2.0.0.2", 53))]);
    assert_eq!(h.read("size").unwrap(), "2", "flows of both");
    assert_eq!(h.router.read_handler("rw2.size").unwrap(), "2");
    assert_eq!(h.read("capacity").unwrap(), "2");
    h.push(0, vec![marked(&udp("10.0.0.3", 1, "2.0.0.2", 53))]);
    assert_eq!(h.output(0).len(), 1, "the set is full (both guaranteed)");
    assert_eq!(h.read("mapping_failures").unwrap(), "1");
    assert_err(
        try_harness(
            "IPRewriter(drop, drop, MAPPING_CAPACITY nosuch); TestSource -> [1]e",
            2,
        ),
        "MAPPING_CAPACITY: 'nosuch' is not a rewriter element",
    );
}

#[test]
fn lowering_the_capacity_evicts_flows_expiring_first() {
    let h = two_inputs_sim(NAPT, 2);
    for i in 0..4 {
        h.push(
            0,
            vec![marked(&udp(&format!("10.0.0.{i}"), 1, "2.0.0.2", 53))],
        );
        h.advance(secs(1));
    }
    h.write("capacity", "2").unwrap();
    assert_eq!(
        (h.read("size").unwrap(), h.read("capacity").unwrap()),
        ("2".into(), "2".into())
    );
    let t = h.read("udp_table").unwrap();
    assert!(t.contains("10.0.0.2") && t.contains("10.0.0.3"), "{t}");
    assert!(!t.contains("10.0.0.0,") && !t.contains("10.0.0.1,"), "{t}");
}

#[test]
fn a_flow_rewritten_to_its_own_reverse() {
    let h = two_inputs("IPRewriter(pattern 2.0.0.1 1025-1030# - - 0 1, drop)");
    h.push(0, vec![marked(&udp("2.0.0.1", 1025, "2.0.0.1", 1025))]);
    assert_eq!(
        ids(h.output(0)[0].data()),
        ("2.0.0.1".into(), 1025, "2.0.0.1".into(), 1025)
    );
    // Its packets are its own replies from then on.
    h.push(1, vec![marked(&udp("2.0.0.1", 1025, "2.0.0.1", 1025))]);
    assert_eq!(h.output(1).len(), 1);
    assert_eq!(h.read("mapping_failures").unwrap(), "0");
    assert_eq!(h.read("size").unwrap(), "1");
    assert_eq!(h.read("udp_table").unwrap().lines().count(), 1);
    h.write("clear", "").unwrap();
    assert_eq!(h.read("size").unwrap(), "0");
}

#[test]
fn pattern_handlers_write_and_list_specifications() {
    let h = try_harness(
        "IPRewriter(pattern 1.0.0.2 1024-1030# - - 0 1, pass 1, keep 0 1, rr, drop, pattern 1.0.0.1 - 0 1); \
         rr :: RoundRobinIPMapper(1.0.0.9 - - - 0 1, 1.0.0.8 - - - 0 1); \
         TestSource -> [1]e; Idle -> [2]e; Idle -> [3]e; Idle -> [4]e; Idle -> [5]e",
        2,
    )
    .unwrap();
    h.push(0, vec![marked(&udp("53.1.1.1", 1, "2.115.2.2", 2))]);
    assert_eq!(
        h.read("patterns").unwrap(),
        "1.0.0.2 1024-65534 - - [1]\n<nochange>\n<keep>\n<mapper>\n<drop>\n1.0.0.1 -\n"
            .replace("65534", "1030")
    );
    assert_eq!(
        h.router
            .read_handler("e.tcp_lookup 53.1.1.1 1 2.115.2.2 2")
            .unwrap(),
        ""
    );
    assert_eq!(
        h.router
            .read_handler("e.udp_lookup 53.1.1.1 1 2.115.2.2 2")
            .unwrap(),
        "1.0.0.2 1024 2.115.2.2 2"
    );
    assert_eq!(
        h.router
            .read_handler("e.udp_lookup 2.115.2.2 2 1.0.0.2 1024")
            .unwrap(),
        "2.115.2.2 2 53.1.1.1 1"
    );
    // A new pattern for input 0: its old flows go.
    h.write("pattern0", "pattern 1.0.0.4 1024-1030# - - 0 1")
        .unwrap();
    assert_eq!(
        h.read("patterns").unwrap().lines().next(),
        Some("1.0.0.4 1024-1030 - -")
    );
    assert_eq!(h.read("size").unwrap(), "0");
    h.push(0, vec![marked(&udp("53.1.1.1", 1, "2.115.2.2", 2))]);
    assert_eq!(ids(h.output(0)[1].data()).0, "1.0.0.4");
    assert_err(
        h.write("pattern1", "pattern 1.0.0.x - 0 1"),
        "bad source address",
    );
}

#[test]
fn batches_leave_in_arrival_order_across_outputs() {
    let h = try_harness(
        "IPRewriter(r); r :: RoundRobinIPMapper(- - - - 0 0, - - - - 1 0); \
         e[0] -> Paint(0) -> s :: TestSink; e[1] -> Paint(1) -> s",
        0,
    )
    .unwrap();
    let ps: Vec<Packet> = [2, 3, 2, 3, 3]
        .iter()
        .map(|&dp| marked(&udp("1.0.0.1", 1, "1.0.0.2", dp)))
        .collect();
    h.push(0, ps);
    let s = h
        .router
        .element::<paraclick_runtime::testing::TestSink>("s")
        .unwrap();
    let paints: Vec<u8> = s.take().iter().map(|p| p.anno().paint).collect();
    assert_eq!(paints, [0, 1, 0, 1, 1]);
}

#[test]
fn specification_errors_one_a_line_in_clicks_words() {
    assert_err(
        try_harness(
            "IPAddrRewriter(pattern 1.0.0.1 1x - - 0 1, pattern 1.0.0.0 0-255 - - 0 1, \
             pattern 1.0.0.0 456-19 - - 0 1); TestSource -> [1]e; TestSource -> [2]e",
            2,
        ),
        "input spec 0: bad source port",
    );
    let e = try_harness(
        "IPAddrRewriter(pattern 1.0.0.1 1x - - 0 1, pattern 1.0.0.0 0-255 - - 0 1, \
         pattern 1.0.0.0 456-19 - - 0 1); TestSource -> [1]e; TestSource -> [2]e",
        2,
    )
    .err()
    .unwrap();
    assert!(e.contains("input spec 2: bad source port"), "{e}");
    assert!(!e.contains("input spec 1"), "{e}");
    // Unknown keywords are not taken for specifications.
    assert!(try_harness(
        "UDPRewriter(pattern 1.0.0.2 1024-65534# - - 0 1, drop, GUARANTEE 1, TIMEOUT 4, \
         STREAMING_TIMEOUT 5, MAPPING_CAPACITY 3); TestSource -> [1]e",
        2
    )
    .is_ok());
}

/// A TCP segment with sequence and acknowledgement numbers, options and
/// a payload.
#[allow(clippy::too_many_arguments)]
fn tcp_seg(
    src: &str,
    sp: u16,
    dst: &str,
    dp: u16,
    seq: u32,
    ack: u32,
    opts: &[u8],
    data: &[u8],
) -> Vec<u8> {
    Ip::new(src, dst, 6)
        .tcp_full(sp, dp, seq, ack, 0x10, 1000, opts, data)
        .bytes()
}

fn seq_ack(d: &[u8]) -> (u32, u32) {
    let r = |o: usize| u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]);
    (r(24), r(28))
}

#[test]
fn ftp_port_mapper_rewrites_port_commands_and_shifts_sequence_numbers() {
    let h = try_harness(
        "FTPPortMapper(rw, rw, 0); IPRewriterPatterns(pat 1.0.0.1 1024-1030# - -); \
         rw :: TCPRewriter(pattern pat 0 0, drop); e -> [0]rw; rw[0] -> s :: TestSink; Idle -> [1]rw",
        0,
    )
    .unwrap();
    let c = |seq, data: &[u8]| marked(&tcp_seg("200.0.0.9", 30, "2.0.0.2", 21, seq, 0, &[], data));
    // The command arrives in the batch whose first packet makes the
    // control connection's mapping.
    h.push(
        0,
        vec![
            c(0, b"x"),
            c(1, b"PORT 200,0,0,9,200,200\r\n"),
            c(26, b"fubar\n"),
        ],
    );
    let s = h
        .router
        .element::<paraclick_runtime::testing::TestSink>("s")
        .unwrap();
    let out = data(&s.take());
    assert_eq!(out.len(), 3);
    let pay = &out[1][40..];
    assert_eq!(
        pay, b"PORT 1,0,0,1,4,1\r\n",
        "the data port's mapping: 1.0.0.1:1025"
    );
    assert!(ip_checksum_ok(&out[1]) && transport_ok(&out[1]));
    assert_eq!(seq_ack(&out[1]).0, 1);
    assert_eq!(
        seq_ack(&out[2]).0,
        26 - 6,
        "6 bytes fewer from the command's end"
    );
    assert!(transport_ok(&out[2]));
    assert_eq!(h.read("mapped").unwrap(), "1");
    // The data connection's mapping: from the announced port to port 20.
    assert_eq!(
        h.router
            .read_handler("rw.lookup 200.0.0.9 51400 2.0.0.2 20")
            .unwrap(),
        "1.0.0.1 1025 2.0.0.2 20"
    );
    // Replies: acknowledgements and SACK blocks past the change go back.
    let sack = [
        1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 0, 20, 0, 0, 0, 10, 0, 0, 0, 25,
    ];
    h.router
        .push_into(
            "rw",
            1,
            vec![marked(&tcp_seg(
                "2.0.0.2", 21, "1.0.0.1", 1024, 0, 20, &sack, b"",
            ))]
            .into(),
        )
        .unwrap();
    let back = data(&s.take());
    let b = &back[0];
    assert_eq!(seq_ack(b).1, 26);
    let blocks: Vec<u32> = (0..4)
        .map(|i| u32::from_be_bytes(b[44 + 4 * i..48 + 4 * i].try_into().unwrap()))
        .collect();
    assert_eq!(blocks, [1, 26, 10, 31]);
    assert!(transport_ok(b));
    assert_err(
        try_harness(
            "FTPPortMapper(rw, rw, 0); rw :: IPRewriter(drop); e -> rw -> Discard",
            0,
        ),
        "CONTROL_REWRITER: 'rw' must be a TCPRewriter",
    );
}
