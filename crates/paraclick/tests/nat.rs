//! End-to-end tests of the NAPT gateway, conf/nat-pcap.click: pcaps of
//! raw IP packets built here, run through the configuration at -j 1, 2
//! and 4 (the public side's source pinned to another thread than the
//! private side's, so replies are handled on another thread than the
//! requests that made their mappings), output pcaps parsed and checked
//! here: addresses, ports, every checksum, handler values.

mod common;

use common::pcap::read_pcap;
use paraclick_packet::wire::checksum;
use paraclick_runtime::{BuildOptions, Router};
use std::net::Ipv4Addr;
use std::path::Path;

const PUBLIC: [u8; 4] = [192, 0, 2, 1];

fn a(s: &str) -> [u8; 4] {
    s.parse::<Ipv4Addr>().unwrap().octets()
}

fn ipv4(sa: [u8; 4], da: [u8; 4], proto: u8, id: u16, frag: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
    h[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&frag.to_be_bytes());
    h.extend_from_slice(&sa);
    h.extend_from_slice(&da);
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn l4_checksum(sa: [u8; 4], da: [u8; 4], proto: u8, seg: &[u8]) -> u16 {
    let ps = checksum::pseudo_header_sum(sa.into(), da.into(), proto, seg.len() as u16);
    !checksum::combine(&[ps, checksum::sum(seg)])
}

fn udp_seg(sa: [u8; 4], da: [u8; 4], sp: u16, dp: u16, data: &[u8], zero_ck: bool) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sp.to_be_bytes());
    u.extend_from_slice(&dp.to_be_bytes());
    u.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(data);
    if !zero_ck {
        let mut c = l4_checksum(sa, da, 17, &u);
        if c == 0 {
            c = 0xffff;
        }
        u[6..8].copy_from_slice(&c.to_be_bytes());
    }
    u
}

fn udp(sa: [u8; 4], sp: u16, da: [u8; 4], dp: u16, data: &[u8]) -> Vec<u8> {
    ipv4(sa, da, 17, 1, 0, &udp_seg(sa, da, sp, dp, data, false))
}

const SYN: u8 = 2;
const ACK: u8 = 0x10;
const FIN: u8 = 1;

fn tcp(sa: [u8; 4], sp: u16, da: [u8; 4], dp: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&sp.to_be_bytes());
    t[2..4].copy_from_slice(&dp.to_be_bytes());
    t[4..8].copy_from_slice(&1000u32.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&8192u16.to_be_bytes());
    t.extend_from_slice(data);
    let c = l4_checksum(sa, da, 6, &t);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4(sa, da, 6, 2, 0, &t)
}

fn icmp(sa: [u8; 4], da: [u8; 4], ty: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    let c = checksum::checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ipv4(sa, da, 1, 3, 0, &m)
}

/// Writes a raw-IP pcap; each packet with its time in milliseconds
/// after 1,700,000,000 s.
fn write_pcap(path: &Path, pkts: &[(u64, Vec<u8>)]) {
    let at: Vec<(u64, Vec<u8>)> = pkts
        .iter()
        .map(|(ms, p)| (1_700_000_000_000 + ms, p.clone()))
        .collect();
    common::pcap::write_pcap_timed(path, 101, &at);
}

struct Pkt<'a>(&'a [u8]);

impl Pkt<'_> {
    fn src(&self) -> [u8; 4] {
        self.0[12..16].try_into().unwrap()
    }
    fn dst(&self) -> [u8; 4] {
        self.0[16..20].try_into().unwrap()
    }
    fn proto(&self) -> u8 {
        self.0[9]
    }
    fn sport(&self) -> u16 {
        u16::from_be_bytes([self.0[20], self.0[21]])
    }
    fn dport(&self) -> u16 {
        u16::from_be_bytes([self.0[22], self.0[23]])
    }
    /// IP header and transport checksums are right (a UDP checksum of 0
    /// is "none").
    fn checksums_ok(&self) -> bool {
        let d = self.0;
        if !checksum::verify(&d[..20]) {
            return false;
        }
        let seg = &d[20..];
        match self.proto() {
            1 => checksum::verify(seg),
            17 if seg[6..8] == [0, 0] => true,
            6 | 17 => {
                let ps = checksum::pseudo_header_sum(
                    self.src().into(),
                    self.dst().into(),
                    self.proto(),
                    seg.len() as u16,
                );
                checksum::combine(&[ps, checksum::sum(seg)]) == 0xffff
            }
            _ => true,
        }
    }
}

struct Run {
    to_pub: Vec<Vec<u8>>,
    to_priv: Vec<Vec<u8>>,
    handlers: std::collections::BTreeMap<String, String>,
}

const HANDLERS: &[&str] = &[
    "rw.size",
    "rw.nmappings",
    "rw.mapping_failures",
    "rw.table",
    "ping.size",
    "err_in.rewritten",
];

impl Run {
    fn h(&self, h: &str) -> String {
        self.handlers[h].clone()
    }
    fn n(&self, h: &str) -> u64 {
        self.h(h).trim().parse().unwrap()
    }
}

/// Runs conf/nat-pcap.click on `threads` threads (the public source on
/// the last thread) with these inputs, replayed with their timing.
fn run(
    threads: usize,
    priv_in: &[(u64, Vec<u8>)],
    pub_in: &[(u64, Vec<u8>)],
    defs: &[(&str, &str)],
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    write_pcap(Path::new(&p("priv-in.pcap")), priv_in);
    write_pcap(Path::new(&p("pub-in.pcap")), pub_in);
    let mut defines: Vec<(String, String)> = vec![
        ("PRIV_IN".into(), p("priv-in.pcap")),
        ("PUB_IN".into(), p("pub-in.pcap")),
        ("PRIV_OUT".into(), p("priv-out.pcap")),
        ("PUB_OUT".into(), p("pub-out.pcap")),
        ("TIMING".into(), "true".into()),
        ("PUBTHREAD".into(), (threads - 1).to_string()),
    ];
    for (k, v) in defs {
        defines.push((k.to_string(), v.to_string()));
    }
    let conf = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conf/nat-pcap.click");
    let src = paraclick_lang::Source {
        name: "conf/nat-pcap.click".into(),
        text: std::fs::read_to_string(&conf).unwrap(),
    };
    let opts = BuildOptions {
        threads,
        defines,
        pin: false,
        ..BuildOptions::default()
    };
    let router = Router::build(&src, &common::registry(), &opts).unwrap_or_else(|d| {
        panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    common::run_with_timeout(&router, 30);
    let handlers = HANDLERS
        .iter()
        .map(|h| (h.to_string(), router.read_handler(h).unwrap()))
        .collect();
    assert_eq!(
        router.pool_outstanding(),
        router.total_queued(),
        "packet buffers held beyond the queued packets"
    );
    // ToDump writes its files out when the router goes.
    drop(router);
    let to_pub = read_pcap(Path::new(&p("pub-out.pcap")));
    let to_priv = read_pcap(Path::new(&p("priv-out.pcap")));
    Run {
        to_pub,
        to_priv,
        handlers,
    }
}

use std::path::PathBuf;

const H1: &str = "10.0.0.5";
const H2: &str = "10.0.0.6";
const SRV: &str = "203.0.113.7";

/// A first public packet at time 0 (unsolicited: to a port with no
/// mapping), so the public trace's timing starts with the private one's.
fn unsolicited() -> (u64, Vec<u8>) {
    (0, udp(a(SRV), 53, PUBLIC, 40000, b"unsolicited"))
}

fn basic(threads: usize) {
    let priv_in = vec![
        // Two hosts, same source port, same server: a port collision.
        (10, udp(a(H1), 5000, a(SRV), 53, b"query-1")),
        (20, udp(a(H2), 5000, a(SRV), 53, b"query-2")),
        (30, tcp(a(H1), 6000, a(SRV), 80, SYN, b"")),
        (40, icmp(a(H1), a(SRV), 8, 0, [0, 42, 0, 1], b"ping")),
    ];
    let pub_in = vec![
        unsolicited(),
        (300, udp(a(SRV), 53, PUBLIC, 1024, b"answer-1")),
        (310, udp(a(SRV), 53, PUBLIC, 1025, b"answer-2")),
        (320, tcp(a(SRV), 80, PUBLIC, 1026, SYN | ACK, b"")),
        (330, icmp(a(SRV), PUBLIC, 0, 0, [0, 42, 0, 1], b"ping")),
        // Unsolicited TCP to a port no flow was given.
        (340, tcp(a(SRV), 80, PUBLIC, 2000, SYN, b"")),
    ];
    let r = run(threads, &priv_in, &pub_in, &[]);
    assert_eq!(r.to_pub.len(), 4, "every private packet goes out");
    for p in &r.to_pub {
        let p = Pkt(p);
        assert_eq!(p.src(), PUBLIC, "public address");
        assert!(p.checksums_ok());
    }
    let ports: Vec<u16> = r.to_pub[..3].iter().map(|p| Pkt(p).sport()).collect();
    assert_eq!(
        ports,
        vec![1024, 1025, 1026],
        "colliding flows get distinct ports"
    );
    assert_eq!(
        r.to_priv.len(),
        4,
        "replies come back; unsolicited ones do not"
    );
    let back: Vec<([u8; 4], u16)> = r.to_priv[..3]
        .iter()
        .map(|p| (Pkt(p).dst(), Pkt(p).dport()))
        .collect();
    assert_eq!(back, vec![(a(H1), 5000), (a(H2), 5000), (a(H1), 6000)]);
    for p in &r.to_priv {
        assert!(Pkt(p).checksums_ok());
        assert_eq!(Pkt(p).src(), a(SRV));
    }
    assert_eq!(&r.to_priv[0][28..], b"answer-1");
    assert_eq!(Pkt(&r.to_priv[3]).dst(), a(H1), "echo reply to the pinger");
    assert_eq!(r.n("rw.size"), 3);
    assert_eq!(r.n("rw.nmappings"), 3);
    assert_eq!(r.n("ping.size"), 1);
    assert_eq!(r.n("rw.mapping_failures"), 0);
    assert!(r.h("rw.table").contains(
        "UDP (10.0.0.6, 5000, 203.0.113.7, 53) => (192.0.2.1, 1025, 203.0.113.7, 53) [*0 1] i0 exp"
    ));
}

#[test]
fn collisions_replies_unsolicited_j1() {
    basic(1);
}

#[test]
fn replies_on_another_thread_j2() {
    basic(2);
}

#[test]
fn replies_on_another_thread_j4() {
    basic(4);
}

#[test]
fn exhausted_ports_fail_and_expired_ports_are_reused() {
    let priv_in = vec![
        (0, udp(a(H1), 1, a(SRV), 53, b"a")),
        (10, udp(a(H2), 1, a(SRV), 53, b"b")), // no port left: failure
        (700, udp(a(H2), 1, a(SRV), 53, b"c")), // after H1's timeout
    ];
    let pub_in = vec![
        unsolicited(),
        (800, udp(a(SRV), 53, PUBLIC, 1024, b"to-h2")),
    ];
    let r = run(
        2,
        &priv_in,
        &pub_in,
        &[("PORTS", "1024-1024"), ("UDP_TIMEOUT", "0.3")],
    );
    assert_eq!(r.to_pub.len(), 2);
    assert!(r.to_pub.iter().all(|p| Pkt(p).sport() == 1024));
    assert_eq!(&r.to_pub[1][28..], b"c");
    assert_eq!(r.n("rw.mapping_failures"), 1);
    assert_eq!(r.to_priv.len(), 1);
    assert_eq!(
        Pkt(&r.to_priv[0]).dst(),
        a(H2),
        "the reused port now leads to H2"
    );
}

fn teardown(fin: bool) -> Run {
    let mut priv_in = vec![
        (0, tcp(a(H1), 7000, a(SRV), 80, SYN, b"")),
        (200, tcp(a(H1), 7000, a(SRV), 80, ACK, b"GET /")),
    ];
    let mut pub_in = vec![
        unsolicited(),
        (100, tcp(a(SRV), 80, PUBLIC, 1024, SYN | ACK, b"")),
        (300, tcp(a(SRV), 80, PUBLIC, 1024, ACK, b"200 OK")),
    ];
    if fin {
        priv_in.push((400, tcp(a(H1), 7000, a(SRV), 80, FIN | ACK, b"")));
        pub_in.push((500, tcp(a(SRV), 80, PUBLIC, 1024, FIN | ACK, b"")));
    }
    // A new connection from another host wants the only port.
    priv_in.push((1200, tcp(a(H2), 7001, a(SRV), 80, SYN, b"")));
    run(
        2,
        &priv_in,
        &pub_in,
        &[("PORTS", "1024-1024"), ("TCP_DONE_TIMEOUT", "0.3")],
    )
}

#[test]
fn tcp_teardown_frees_the_port_after_tcp_done_timeout() {
    let r = teardown(true);
    let syns: Vec<&Vec<u8>> = r.to_pub.iter().filter(|p| p[33] == SYN).collect();
    assert_eq!(syns.len(), 2, "the second connection got the freed port");
    assert_eq!(Pkt(syns[1]).sport(), 1024);
    assert_eq!(r.n("rw.mapping_failures"), 0);
    assert!(r
        .to_pub
        .iter()
        .chain(&r.to_priv)
        .all(|p| Pkt(p).checksums_ok()));
    assert_eq!(r.to_priv.len(), 3);
    // Without FINs the connection keeps its port (TCP_TIMEOUT is long).
    let r = teardown(false);
    assert_eq!(r.n("rw.mapping_failures"), 1);
    assert_eq!(r.to_pub.iter().filter(|p| p[33] == SYN).count(), 1);
}

#[test]
fn fragments_zero_checksums_and_icmp_errors() {
    // A 64-byte UDP datagram in two fragments, out of order.
    let data: Vec<u8> = (0..56u8).collect();
    let seg = udp_seg(a(H1), a(SRV), 5353, 9999, &data, false);
    let f1 = ipv4(a(H1), a(SRV), 17, 77, 0x2000, &seg[..32]);
    let f2 = ipv4(a(H1), a(SRV), 17, 77, 4, &seg[32..]);
    // A datagram without checksum.
    let z = ipv4(
        a(H2),
        a(SRV),
        17,
        5,
        0,
        &udp_seg(a(H2), a(SRV), 4444, 9999, b"zero", true),
    );
    let priv_in = vec![(0, f2), (5, f1), (10, z)];
    // The server answers H2's datagram with port unreachable, quoting the
    // translated header (IP + 8 bytes), as Linux does.
    let sent_z = udp_seg(PUBLIC, a(SRV), 1025, 9999, b"zero", true);
    let quoted = ipv4(PUBLIC, a(SRV), 17, 5, 0, &sent_z);
    let err = icmp(a(SRV), PUBLIC, 3, 3, [0; 4], &quoted[..28]);
    // A time-exceeded error about a flow that was never translated.
    let other = ipv4(
        PUBLIC,
        a(SRV),
        17,
        6,
        0,
        &udp_seg(PUBLIC, a(SRV), 3000, 1, b"x", true),
    );
    let stray = icmp(a(SRV), PUBLIC, 11, 0, [0; 4], &other[..28]);
    let pub_in = vec![unsolicited(), (300, err), (310, stray)];
    let r = run(2, &priv_in, &pub_in, &[]);
    assert_eq!(r.to_pub.len(), 2);
    let d = Pkt(&r.to_pub[0]);
    assert_eq!((d.src(), d.sport()), (PUBLIC, 1024));
    assert_eq!(r.to_pub[0].len(), 20 + 64, "reassembled, then translated");
    assert!(d.checksums_ok(), "UDP checksum over the whole datagram");
    assert_eq!(&r.to_pub[0][28..], &data[..]);
    let z = Pkt(&r.to_pub[1]);
    assert_eq!((z.src(), z.sport()), (PUBLIC, 1025));
    assert_eq!(
        &r.to_pub[1][26..28],
        &[0, 0],
        "a zero UDP checksum stays zero"
    );
    assert!(z.checksums_ok());
    // The error reaches H2, about H2's own datagram.
    assert_eq!(r.to_priv.len(), 1, "errors about unknown flows are dropped");
    let e = &r.to_priv[0];
    assert_eq!(Pkt(e).dst(), a(H2));
    assert!(Pkt(e).checksums_ok(), "ICMP checksum");
    let inner = &e[28..];
    assert_eq!(&inner[12..16], &a(H2));
    assert_eq!(u16::from_be_bytes([inner[20], inner[21]]), 4444);
    assert!(checksum::verify(&inner[..20]), "quoted IP header checksum");
    assert_eq!(r.n("err_in.rewritten"), 1);
}

/// One trace carrying both directions, split by a classifier into the
/// rewriter's two inputs: Click handles one packet at a time, so a reply
/// that follows its request in the trace finds the request's mapping.
/// FromDump's bursts must not change that (the classifier's outputs meet
/// again at the rewriter, so its split keeps arrival order); with
/// `--relaxed-order` the unsolicited packet's port goes first and the
/// reply behind it in the same burst is dropped as unmapped.
fn one_trace_both_ways(relaxed: bool) -> (Vec<Vec<u8>>, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let pkts = vec![
        (0, udp(a(SRV), 53, PUBLIC, 40000, b"unsolicited")),
        (1, udp(a(H1), 1000, a(SRV), 53, b"query")),
        (2, udp(a(SRV), 53, PUBLIC, 5000, b"answer")),
    ];
    write_pcap(Path::new(&p("in.pcap")), &pkts);
    let conf = format!(
        "FromDump({}, STOP true, FORCE_IP true, BURST 32)
           -> c :: IPClassifier(src net 10.0.0.0/8, -);
         rw :: IPRewriter(pattern 192.0.2.1 5000 - - 0 1, drop);
         c[0] -> [0]rw;
         c[1] -> [1]rw;
         out :: ToDump({}, ENCAP IP);
         rw[0] -> out;
         rw[1] -> out;",
        p("in.pcap"),
        p("out.pcap")
    );
    let src = paraclick_lang::Source {
        name: "<test>".into(),
        text: conf,
    };
    let opts = BuildOptions {
        pin: false,
        relaxed_order: relaxed,
        ..BuildOptions::default()
    };
    let router = Router::build(&src, &common::registry(), &opts).unwrap();
    common::run_with_timeout(&router, 30);
    let table = router.read_handler("rw.table").unwrap();
    drop(router);
    (read_pcap(Path::new(&p("out.pcap"))), table)
}

#[test]
fn a_reply_in_the_same_burst_as_its_request_is_translated() {
    let (out, table) = one_trace_both_ways(false);
    assert_eq!(out.len(), 2, "query and answer both through: {table}");
    let (q, ans) = (Pkt(&out[0]), Pkt(&out[1]));
    assert_eq!((q.src(), q.sport(), q.dst()), (PUBLIC, 5000, a(SRV)));
    assert_eq!((ans.src(), ans.dst(), ans.dport()), (a(SRV), a(H1), 1000));
    // The grouped split (the faster mode) loses the answer: that is the
    // difference the default avoids.
    let (out, _) = one_trace_both_ways(true);
    assert_eq!(
        out.len(),
        1,
        "--relaxed-order: the answer overtook its query"
    );
}
