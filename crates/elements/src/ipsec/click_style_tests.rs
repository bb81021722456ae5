//! Tests of Click's split IPsec elements as chains: they make the same ESP
//! packets as the fused IPsecESPTunnelEncap / IPsecESPTunnelUnencap and
//! accept theirs; steps out of order, unknown SPIs and bad packets are
//! counted drops.

use crate::test_kit::reg;
use paraclick_packet::wire::checksum;
use paraclick_packet::{Batch, Packet};
use paraclick_runtime::testing::assert_err;
use paraclick_runtime::testing::TestSink;
use paraclick_runtime::{Registry, Router};

const ALGS: [&str; 8] = [
    "aes128gcm16",
    "aes256gcm16",
    "aes128-sha1",
    "aes256-sha1",
    "aes128-sha256",
    "aes256-sha256",
    "3des-sha1",
    "3des-sha256",
];

fn registry() -> Registry {
    let mut r = reg();
    crate::ip::register(&mut r);
    r
}

fn key(alg: &str, seed: u8) -> String {
    let (a, b) = super::sa::Alg::parse(alg).unwrap().key_lens();
    let k: String = (0..a + b)
        .map(|i| format!("{:02x}", (i as u8).wrapping_mul(29).wrapping_add(seed)))
        .collect();
    format!("0x{k}")
}

fn inner(len: usize, dst: [u8; 4], seed: u8) -> Vec<u8> {
    let mut d = vec![0u8; len];
    d[0] = 0x45;
    d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    d[8] = 64;
    d[9] = 17;
    d[12..16].copy_from_slice(&[10, 1, 0, 7]);
    d[16..20].copy_from_slice(&dst);
    for (i, v) in d[20..].iter_mut().enumerate() {
        *v = (i as u8).wrapping_mul(7).wrapping_add(seed);
    }
    let c = checksum::checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    d
}

fn pkt(d: &[u8]) -> Packet {
    let mut p = Packet::from_slice(d).unwrap();
    p.set_network_header(0, 20);
    p
}

fn out(r: &Router, sink: &str) -> Vec<Vec<u8>> {
    r.element::<TestSink>(sink)
        .unwrap()
        .take()
        .iter()
        .map(|p| p.data().to_vec())
        .collect()
}

/// The gateway of the SMP Click paper's Figures 6 and 7 in Click's split
/// style: one SA out (0x1001), one in (0x2002), both directions in one
/// router; rt's outputs: 0 ESP to us, 1 the tunnel, 2 the local site, 3
/// the peer.
fn gateway(alg: &str, extra: &str) -> Router {
    let conf = format!(
        "sat :: IPsecSATable(0x1001 {alg} {k1} 192.0.2.1 198.51.100.1, 0x2002 {alg} {k2} REPLAY 32);
         src :: TestSource -> rt :: RadixIPsecLookup(192.0.2.1/32 0, 10.2.0.0/16 198.51.100.1 1 0x1001,
                                                     10.1.0.0/16 2, 198.51.100.1/32 3);
         rt[0] -> StripIPHeader -> v1 :: IPsecAuthHMACSHA1(1) -> v2 :: IPsecAuthHMACSHA256(1)
               -> d1 :: IPsecAES(0) -> d2 :: IPsecDES(0) -> un :: IPsecESPUnencap -> [0]rt;
         rt[1] -> en :: IPsecESPEncap -> e1 :: IPsecAES(1) -> e2 :: IPsecDES(1)
               -> a1 :: IPsecAuthHMACSHA1(0) -> a2 :: IPsecAuthHMACSHA256(0)
               -> ip :: IPsecEncap(esp, TTL 64) -> [0]rt;
         rt[2] -> plain :: TestSink;
         rt[3] -> esp :: TestSink;
         {extra}",
        k1 = key(alg, 1),
        k2 = key(alg, 2),
    );
    Router::from_str(&conf, &registry(), 1).unwrap_or_else(|d| panic!("{alg}: {d:?}"))
}

fn fused(alg: &str, class: &str, spi: &str, seed: u8) -> Router {
    let conf = format!(
        "TestSource -> e :: {class}({spi}, {alg}, {k}, 198.51.100.1, 192.0.2.1) -> o :: TestSink;",
        k = key(alg, seed)
    );
    Router::from_str(&conf, &registry(), 1).unwrap()
}

#[test]
fn split_chain_encrypts_for_the_fused_decrypter() {
    for alg in ALGS {
        let gw = gateway(alg, "");
        let plain: Vec<Vec<u8>> = [20usize, 21, 64, 100, 777, 1400]
            .iter()
            .enumerate()
            .map(|(i, &n)| inner(n, [10, 2, 0, 9], i as u8))
            .collect();
        gw.push_into(
            "rt",
            0,
            Batch::from(plain.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        let esp = out(&gw, "esp");
        assert_eq!(esp.len(), plain.len(), "{alg}");
        for (i, e) in esp.iter().enumerate() {
            assert_eq!(e[9], 50, "{alg}");
            assert_eq!(e[8], 64);
            assert!(checksum::verify(&e[..20]));
            assert_eq!(&e[12..20], &[192, 0, 2, 1, 198, 51, 100, 1]);
            assert_eq!(&e[20..24], &[0, 0, 0x10, 0x01]);
            assert_eq!(
                u32::from_be_bytes([e[24], e[25], e[26], e[27]]),
                i as u32 + 1
            );
        }
        let dec = fused(alg, "IPsecESPTunnelUnencap", "0x1001", 1);
        dec.push_into(
            "e",
            0,
            Batch::from(esp.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        assert_eq!(out(&dec, "o"), plain, "{alg}");
        assert_eq!(gw.read_handler("sat.packets 0x1001").unwrap(), "6");
        assert_eq!(gw.read_handler("sat.seq 0x1001").unwrap(), "6");
        // One chain serves every algorithm: the other cipher/HMAC passed.
        let passed: u64 = ["e1", "e2", "a1", "a2"]
            .iter()
            .map(|e| {
                gw.read_handler(&format!("{e}.passed"))
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        let expect = if alg.contains("gcm") { 3 * 6 } else { 2 * 6 };
        assert_eq!(passed, expect, "{alg}");
    }
}

#[test]
fn split_chain_decrypts_what_the_fused_encrypter_sends() {
    for alg in ALGS {
        let gw = gateway(alg, "");
        let enc = fused(alg, "IPsecESPTunnelEncap", "0x2002", 2);
        let plain: Vec<Vec<u8>> = [20usize, 33, 64, 500, 1400]
            .iter()
            .enumerate()
            .map(|(i, &n)| inner(n, [10, 1, 0, 3], i as u8))
            .collect();
        let mut sent = plain.clone();
        sent.push(inner(99, [10, 1, 0, 3], 9)); // sequence number 6, damaged below
        enc.push_into(
            "e",
            0,
            Batch::from(sent.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        let mut esp = out(&enc, "o");
        // The peer's packets arrive with Ethernet padding on the first,
        // then a replay, a damaged packet and an unknown SPI.
        esp[0].extend_from_slice(&[0; 6]);
        let mut bad = esp.pop().unwrap();
        let n = bad.len();
        bad[n - 1] ^= 1;
        let replay = esp[1].clone();
        let mut unknown = esp[3].clone();
        unknown[23] ^= 0x55;
        let extra = [replay, bad, unknown];
        let all: Vec<Packet> = esp.iter().chain(extra.iter()).map(|d| pkt(d)).collect();
        // Traced from where they enter: each bad packet's trace names why
        // it died, and the router's drops listing counts each reason.
        gw.write_handler("trace_add", "100").unwrap();
        gw.send_from("src", 0, Batch::from(all)).unwrap();
        let got = out(&gw, "plain");
        assert_eq!(got, plain, "{alg}");
        let drops = gw.read_handler("drops").unwrap();
        let trace = gw.read_handler("trace").unwrap();
        for reason in ["replay", "auth failed", "unknown SPI"] {
            assert_eq!(
                drops
                    .lines()
                    .filter(|l| l.ends_with(&format!("  {reason}")))
                    .map(|l| l.split_whitespace().next().unwrap())
                    .collect::<Vec<_>>(),
                ["1"],
                "{alg} {reason}: {drops}"
            );
            assert_eq!(
                trace.matches(&format!(": {reason}\n")).count(),
                1,
                "{alg} {reason}: {trace}"
            );
        }
        assert_eq!(drops.lines().count(), 3, "{alg}: {drops}");
        assert_eq!(gw.read_handler("sat.packets 0x2002").unwrap(), "5", "{alg}");
        assert_eq!(
            gw.read_handler("sat.replay_drops 0x2002").unwrap(),
            "1",
            "{alg}"
        );
        assert_eq!(
            gw.read_handler("sat.auth_failures 0x2002").unwrap(),
            "1",
            "{alg}"
        );
        assert_eq!(gw.read_handler("sat.rx_seq 0x2002").unwrap(), "5", "{alg}");
        assert_eq!(gw.read_handler("sat.unknown_spi").unwrap(), "1", "{alg}");
        let table = gw.read_handler("sat.table").unwrap();
        assert!(table.contains("0x00002002"), "{table}");
    }
}

#[test]
fn both_directions_through_two_split_gateways() {
    // Gateway A's tunnel output is gateway B's input (B's SAs mirrored).
    for alg in ["aes128gcm16", "aes128-sha1", "3des-sha1"] {
        let a = gateway(alg, "");
        let conf = format!(
            "sat :: IPsecSATable(0x2002 {alg} {k2} 198.51.100.1 192.0.2.1, 0x1001 {alg} {k1});
             TestSource -> rt :: RadixIPsecLookup(198.51.100.1/32 0, 10.1.0.0/16 192.0.2.1 1 0x2002,
                                                 10.2.0.0/16 2, 192.0.2.1/32 3);
             rt[0] -> StripIPHeader -> IPsecAuthHMACSHA1(1) -> IPsecAuthHMACSHA256(1)
                   -> IPsecAES(0) -> IPsecDES(0) -> IPsecESPUnencap -> [0]rt;
             rt[1] -> IPsecESPEncap -> IPsecAES(1) -> IPsecDES(1) -> IPsecAuthHMACSHA1(0)
                   -> IPsecAuthHMACSHA256(0) -> IPsecEncap(50) -> [0]rt;
             rt[2] -> plain :: TestSink; rt[3] -> esp :: TestSink;",
            k1 = key(alg, 1),
            k2 = key(alg, 2),
        );
        let b = Router::from_str(&conf, &registry(), 1).unwrap();
        let to_b: Vec<Vec<u8>> = (0..20)
            .map(|i| inner(40 + 61 * i, [10, 2, 0, 1], i as u8))
            .collect();
        a.push_into(
            "rt",
            0,
            Batch::from(to_b.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        let esp = out(&a, "esp");
        b.push_into(
            "rt",
            0,
            Batch::from(esp.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        assert_eq!(out(&b, "plain"), to_b, "{alg} A to B");
        let to_a: Vec<Vec<u8>> = (0..20)
            .map(|i| inner(30 + 70 * i, [10, 1, 0, 1], i as u8))
            .collect();
        b.push_into(
            "rt",
            0,
            Batch::from(to_a.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        let esp = out(&b, "esp");
        a.push_into(
            "rt",
            0,
            Batch::from(esp.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
        )
        .unwrap();
        assert_eq!(out(&a, "plain"), to_a, "{alg} B to A");
    }
}

#[test]
fn steps_out_of_order_are_refused() {
    for alg in ["aes128-sha1", "3des-sha1"] {
        // Outbound with the HMAC before the cipher (as some old Click
        // configurations wrote it) and inbound decrypting before
        // verifying: both refused, nothing sent unauthenticated.
        let conf = format!(
            "IPsecSATable(0x1001 {alg} {k1} 192.0.2.1 198.51.100.1, 0x2002 {alg} {k1});
             TestSource -> rt :: RadixIPsecLookup(192.0.2.1/32 0, 10.2.0.0/16 1 0x1001, 0/0 2);
             rt[0] -> StripIPHeader -> d1 :: IPsecAES(0) -> d2 :: IPsecDES(0) -> o0 :: TestSink;
             rt[1] -> IPsecESPEncap -> a :: IPsecAuthHMACSHA1(0) -> o1 :: TestSink;
             rt[2] -> o2 :: TestSink;",
            k1 = key(alg, 1),
        );
        let r = Router::from_str(&conf, &registry(), 1).unwrap();
        r.push_into(
            "rt",
            0,
            Batch::from(vec![pkt(&inner(80, [10, 2, 0, 1], 0))]),
        )
        .unwrap();
        assert!(out(&r, "o1").is_empty());
        assert_eq!(r.read_handler("a.out_of_order").unwrap(), "1");
        let enc = fused(alg, "IPsecESPTunnelEncap", "0x2002", 1);
        enc.push_into("e", 0, Batch::from(vec![pkt(&inner(80, [10, 1, 0, 1], 0))]))
            .unwrap();
        let esp = out(&enc, "o");
        r.push_into("rt", 0, Batch::from(vec![pkt(&esp[0])]))
            .unwrap();
        assert!(out(&r, "o0").is_empty());
        let ooo: u64 = ["d1", "d2"]
            .iter()
            .map(|e| {
                r.read_handler(&format!("{e}.out_of_order"))
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        assert_eq!(ooo, 1, "{alg}");
        // A non-ESP packet to the gateway goes to output 2 (the host).
        r.push_into(
            "rt",
            0,
            Batch::from(vec![pkt(&inner(40, [192, 0, 2, 1], 0))]),
        )
        .unwrap();
        assert_eq!(out(&r, "o2").len(), 1);
    }
}

#[test]
fn packets_without_an_sa_and_bad_configurations() {
    let conf = "IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);
        TestSource -> e :: IPsecESPEncap -> c :: IPsecAES(1) -> o :: TestSink;";
    let r = Router::from_str(conf, &registry(), 1).unwrap();
    r.push_into("e", 0, Batch::from(vec![pkt(&inner(40, [1, 2, 3, 4], 0))]))
        .unwrap();
    assert_eq!(r.read_handler("e.no_sa").unwrap(), "1");
    // With an SPI argument, IPsecESPEncap picks the SA itself.
    let conf = "IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213 1.1.1.1 2.2.2.2);
        TestSource -> e :: IPsecESPEncap(0x1001) -> IPsecAES(1) -> IPsecEncap(50) -> o :: TestSink;";
    let r = Router::from_str(conf, &registry(), 1).unwrap();
    r.push_into("e", 0, Batch::from(vec![pkt(&inner(40, [1, 2, 3, 4], 0))]))
        .unwrap();
    let o = out(&r, "o");
    assert_eq!(o.len(), 1);
    assert_eq!(&o[0][12..20], &[1, 1, 1, 1, 2, 2, 2, 2]);
    for (bad, want) in [
        // No table.
        ("TestSource -> IPsecESPEncap -> Discard;", "<config>:1:15: IPsecESPEncap@2 :: IPsecESPEncap: no IPsecSATable in the configuration"),
        // Two tables, none named.
        ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);
         IPsecSATable(0x1002 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);
         TestSource -> IPsecESPEncap -> Discard;", "<config>:3:24: IPsecESPEncap@4 :: IPsecESPEncap: several IPsecSATables: say which with the SATABLE keyword"),
        // SPI in no SA.
        ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);
         TestSource -> RadixIPsecLookup(10.0.0.0/8 1 0x2002) => Discard, Discard;", "<config>:2:24: RadixIPsecLookup@3 :: RadixIPsecLookup: route to output 1 names SPI 0x00002002, which is in no SA of the table"),
        // An SPI route not to output 1.
        ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);
         TestSource -> RadixIPsecLookup(10.0.0.0/8 0 0x1001) => Discard, Discard;", "<config>:2:24: RadixIPsecLookup@3 :: RadixIPsecLookup: route 1: a route with an SPI must lead to output 1 (the tunnel)"),
        ("IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);
         TestSource -> IPsecAES(2) -> Discard;", "<config>:2:24: IPsecAES@3 :: IPsecAES: ENCRYPT must be 0 (decrypt) or 1 (encrypt), not 2"),
        ("TestSource -> IPsecEncap(bogus) -> Discard;", "<config>:1:15: IPsecEncap@2 :: IPsecEncap: bad PROTO 'bogus' (a number 0-255, esp, ah or ipip)"),
    ] {
        assert_err(Router::from_str(bad, &registry(), 1), want);
    }
    // IPsecEncap alone is plain IP-in-IP encapsulation.
    let r = Router::from_str(
        "TestSource -> e :: IPsecEncap(4, 10.0.0.1, 10.0.0.2, TTL 9) -> o :: TestSink;",
        &registry(),
        1,
    )
    .unwrap();
    r.push_into("e", 0, Batch::from(vec![pkt(&inner(40, [1, 2, 3, 4], 0))]))
        .unwrap();
    let o = out(&r, "o");
    assert_eq!(o[0].len(), 60);
    assert_eq!((o[0][8], o[0][9]), (9, 4));
    assert!(checksum::verify(&o[0][..20]));
}

/// Every split element against bad packets that carry any SA annotation
/// and any state: random bytes, and ESP packets cut short or damaged at
/// each step. No panic, and each packet leaves by the output or is a
/// counted drop.
#[test]
fn split_elements_survive_bad_packets_with_any_annotation() {
    use super::sa_table::set_sa_anno;
    use crate::test_kit::Rng;
    let table = format!(
        "IPsecSATable(0x1001 aes128gcm16 {}, 0x1002 aes128-sha1 {} 1.1.1.1 2.2.2.2, 0x1003 3des-sha256 {})",
        key("aes128gcm16", 1),
        key("aes128-sha1", 2),
        key("3des-sha256", 3)
    );
    let enc = fused("aes128-sha1", "IPsecESPTunnelEncap", "0x1002", 2);
    enc.push_into(
        "e",
        0,
        Batch::from(
            (0..8)
                .map(|i| pkt(&inner(20 + 37 * i, [1, 2, 3, 4], i as u8)))
                .collect::<Vec<_>>(),
        ),
    )
    .unwrap();
    let esp = out(&enc, "o");
    for (k, el) in [
        "IPsecESPEncap",
        "IPsecESPUnencap",
        "IPsecAES(0)",
        "IPsecAES(1)",
        "IPsecDES(0)",
        "IPsecDES(1)",
        "IPsecAuthHMACSHA1(0)",
        "IPsecAuthHMACSHA1(1)",
        "IPsecAuthHMACSHA256(1)",
        "IPsecEncap(50)",
        "RadixIPsecLookup(2.2.2.2/32 0, 10.0.0.0/8 1 0x1001, 0/0 2)",
    ]
    .iter()
    .enumerate()
    {
        let nout = if el.starts_with("Radix") { 3 } else { 1 };
        let mut conf = format!("{table}; TestSource -> e :: {el};");
        for o in 0..nout {
            conf.push_str(&format!("e[{o}] -> o{o} :: TestSink;"));
        }
        let r = Router::from_str(&conf, &registry(), 1).unwrap_or_else(|d| panic!("{el}: {d:?}"));
        let mut rng = Rng::new(77 + k as u64);
        let mut pkts = Vec::new();
        for i in 0..400 {
            let mut d = if i % 2 == 0 {
                let n = rng.below(100);
                rng.bytes(n)
            } else {
                let mut d = esp[i % esp.len()].clone();
                if i % 4 == 1 {
                    d.drain(..20); // as after StripIPHeader
                }
                d
            };
            if rng.below(2) == 0 && !d.is_empty() {
                let j = rng.below(d.len());
                d[j] = rng.u8();
            }
            if rng.below(3) == 0 && !d.is_empty() {
                d.truncate(rng.below(d.len()));
            }
            let mut p = Packet::from_slice(&d).unwrap();
            if d.len() >= 20 && rng.below(2) == 0 {
                p.set_network_header(0, 20);
            }
            if rng.below(4) != 0 {
                let st = match rng.below(3) {
                    0 => 7,                             // ENCAP | ENCRYPTED | AUTHED
                    1 => 8 | (rng.below(2) as u8 * 16), // INBOUND, maybe VERIFIED
                    _ => rng.u8() & 63,
                };
                set_sa_anno(&mut p, rng.below(5) as u32, st);
            }
            pkts.push(p);
        }
        let n = pkts.len() as u64;
        r.push_into("e", 0, Batch::from(pkts)).unwrap();
        let got: u64 = (0..nout)
            .map(|o| out(&r, &format!("o{o}")).len() as u64)
            .sum();
        assert_eq!(got + r.total_drops(), n, "{el}");
    }
}

/// Click's own syntax: the SA inline in the route (`SPI ENCRYPT_KEY
/// AUTH_KEY REPLAY OOSIZE`), no IPsecSATable; the split chain in Click's
/// order of elements finds the SAs in RadixIPsecLookup.
fn inline_gateway(me: &str, routes: &str) -> Router {
    let conf = format!(
        "src :: TestSource -> rt :: RadixIPsecLookup({me}/32 0, {routes});
         rt[0] -> StripIPHeader -> IPsecAuthHMACSHA1(1) -> IPsecAES(0)
               -> IPsecESPUnencap -> [0]rt;
         rt[1] -> IPsecESPEncap -> IPsecAES(1) -> IPsecAuthHMACSHA1(0)
               -> IPsecEncap(esp, {me}) -> [0]rt;
         rt[2] -> plain :: TestSink;
         rt[3] -> esp :: TestSink;"
    );
    Router::from_str(&conf, &registry(), 1).unwrap_or_else(|d| panic!("{d:?}"))
}

const HEX_KEYS: &str = "ABCDEFFF001DEFD2354550FE40CD708E 112233EE556677888877665544332211";

#[test]
fn click_inline_sa_routes_encrypt_and_decrypt() {
    let a = inline_gateway(
        "192.0.2.1",
        &format!("198.51.100.1/32 3, 10.2.0.0/16 198.51.100.1 1 234 {HEX_KEYS} 300 64"),
    );
    let table = a.read_handler("rt.table").unwrap();
    assert!(
        table.contains("10.2.0.0/16\t198.51.100.1\t1\t0x000000ea"),
        "{table}"
    );
    let plain: Vec<Vec<u8>> = [20usize, 64, 333]
        .iter()
        .enumerate()
        .map(|(i, &n)| inner(n, [10, 2, 0, 9], i as u8))
        .collect();
    a.push_into(
        "rt",
        0,
        Batch::from(plain.iter().map(|d| pkt(d)).collect::<Vec<_>>()),
    )
    .unwrap();
    let esp = out(&a, "esp");
    assert_eq!(esp.len(), 3);
    for (i, e) in esp.iter().enumerate() {
        assert_eq!(e[9], 50);
        assert_eq!(&e[12..20], &[192, 0, 2, 1, 198, 51, 100, 1]);
        assert_eq!(&e[20..24], &234u32.to_be_bytes());
        // REPLAY 300: the first sequence number sent.
        assert_eq!(
            u32::from_be_bytes([e[24], e[25], e[26], e[27]]),
            300 + i as u32
        );
    }
    // The peer holds the same SA inline and decrypts; a replay is dropped.
    let b = inline_gateway(
        "198.51.100.1",
        &format!("10.2.0.0/16 2, 192.0.2.1/32 3, 10.1.0.0/16 192.0.2.1 1 234 {HEX_KEYS} 300 64"),
    );
    let mut back: Vec<Packet> = esp.iter().map(|d| pkt(d)).collect();
    back.push(pkt(&esp[0]));
    b.push_into("rt", 0, Batch::from(back)).unwrap();
    assert_eq!(out(&b, "plain"), plain);
    // A peer with another encryption key (16 characters taken as bytes,
    // Click's form) authenticates the packet but cannot decrypt it.
    let c = inline_gateway(
        "198.51.100.1",
        "10.2.0.0/16 2, 10.1.0.0/16 192.0.2.1 1 234 0123456789abcdef 112233EE556677888877665544332211 1 64",
    );
    c.push_into("rt", 0, Batch::from(vec![pkt(&esp[1])]))
        .unwrap();
    assert_ne!(out(&c, "plain"), vec![plain[1].clone()]);
}

#[test]
fn click_inline_sa_route_errors() {
    let ok = format!("10.2.0.0/16 1.2.3.4 1 234 {HEX_KEYS} 1 32");
    let reg = registry();
    let conf = |routes: &str, extra: &str| {
        format!(
            "Idle -> rt :: RadixIPsecLookup({routes}{extra}) => Discard, Discard, Discard; {}",
            if extra.is_empty() {
                ""
            } else {
                "sat :: IPsecSATable(0x1001 aes128gcm16 0x000102030405060708090a0b0c0d0e0f10111213);"
            }
        )
    };
    assert!(Router::from_str(&conf(&ok, ""), &reg, 1).is_ok());
    for (bad, want) in [
        (format!("10.2.0.0/16 1.2.3.4 1 0 {HEX_KEYS} 1 32"), "<config>:1:15: rt :: RadixIPsecLookup: route 1: SPI: expected a nonzero 32-bit number, not '0'"),
        (format!("10.2.0.0/16 1.2.3.4 1 234 {HEX_KEYS} 1 999"), "<config>:1:15: rt :: RadixIPsecLookup: route 1: replay window 999 is larger than 128"),
        (format!("10.2.0.0/16 1.2.3.4 1 234 {HEX_KEYS} x 32"), "<config>:1:15: rt :: RadixIPsecLookup: route 1: REPLAY: expected a 32-bit number, not 'x'"),
        ("10.2.0.0/16 1.2.3.4 1 234 ABCDEF 112233EE556677888877665544332211 1 32".into(), "<config>:1:15: rt :: RadixIPsecLookup: route 1: ENCRYPT_KEY must be 16 bytes: 16 characters or 32 hex digits, not 'ABCDEF'"),
        (format!("10.2.0.0/16 1.2.3.4 2 234 {HEX_KEYS} 1 32"), "<config>:1:15: rt :: RadixIPsecLookup: route 1: a route with an SPI must lead to output 1 (the tunnel)"),
        (format!("10.2.0.0/16 1.2.3.4 1 234 {HEX_KEYS} 1"), "<config>:1:15: rt :: RadixIPsecLookup: route 1: expected 'ADDR/MASK [GATEWAY] OUTPUT [SPI]' or 'ADDR/MASK [GATEWAY] OUTPUT SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE', not '10.2.0.0/16 1.2.3.4 1 234 ABCDEFFF001DEFD2354550FE40CD708E 112233EE556677888877665544332211 1'"),
        (format!("{ok}, 10.3.0.0/16 1 0x1001"), "<config>:1:15: rt :: RadixIPsecLookup: every route with an SPI must give its SA inline when one does"),
    ] {
        let r = Router::from_str(&conf(&bad, ""), &reg, 1);
        assert_err(r, want);
    }
    assert_err(
        Router::from_str(&conf(&ok, ", SATABLE sat"), &reg, 1),
        "<config>:1:15: rt :: RadixIPsecLookup: give the SAs inline or in the SATABLE, not both",
    );
}
