//! Round trips through ToIPSummaryDump and FromIPSummaryDump for the
//! option, payload, ICMP, annotation and IPv6 fields.

use crate::test_util::*;
use paraclick_packet::wire::{checksum, Ipv4Header, TcpHeader};
use paraclick_packet::{Batch, Packet, Timestamp};

const FIELDS: &str = "timestamp ip_src ip_dst ip6_src ip6_dst ip_proto ip_ttl ip_tos ip_id ip_sum ip_fragoff ip_len ip_opt sport dport tcp_seq tcp_ack tcp_flags tcp_window tcp_urp tcp_opt udp_len icmp_type_name icmp_code_name icmp_flowid icmp_seq icmp_nextmtu payload payload_md5 payload_md5_hex aggregate first_timestamp paint";

/// An IPv4 datagram with options, checksummed (the transport too).
fn v4(proto: u8, opts: &[u8], trans: &[u8]) -> Vec<u8> {
    let hl = 20 + opts.len();
    let mut d = vec![0u8; hl];
    d[0] = 0x40 | (hl / 4) as u8;
    d[1] = 0x10;
    d[2..4].copy_from_slice(&((hl + trans.len()) as u16).to_be_bytes());
    d[4..6].copy_from_slice(&4321u16.to_be_bytes());
    d[6] = 0x40;
    d[8] = 57;
    d[9] = proto;
    d[12..16].copy_from_slice(&[10, 0, 0, 1]);
    d[16..20].copy_from_slice(&[192, 168, 7, 9]);
    d[20..].copy_from_slice(opts);
    Ipv4Header::new_unchecked(&mut d[..hl]).fill_checksum();
    let mut t = trans.to_vec();
    let src = [10, 0, 0, 1].into();
    let dst = [192, 168, 7, 9].into();
    match proto {
        6 => TcpHeader::new_unchecked(&mut t[..]).fill_checksum(src, dst),
        1 => {
            let c = checksum::checksum(&t);
            t[2..4].copy_from_slice(&c.to_be_bytes());
        }
        _ => {}
    }
    d.extend_from_slice(&t);
    d
}

fn tcp_seg(opts: &[u8], payload: &[u8]) -> Vec<u8> {
    let off = 20 + opts.len();
    let mut t = vec![0u8; off];
    t[0..2].copy_from_slice(&1234u16.to_be_bytes());
    t[2..4].copy_from_slice(&80u16.to_be_bytes());
    t[4..8].copy_from_slice(&7u32.to_be_bytes());
    t[8..12].copy_from_slice(&9u32.to_be_bytes());
    t[12] = ((off / 4) as u8) << 4;
    t[13] = 0x18;
    t[14..16].copy_from_slice(&512u16.to_be_bytes());
    t[20..].copy_from_slice(opts);
    t.extend_from_slice(payload);
    t
}

fn v6_udp(payload: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; 48];
    d[0] = 0x60;
    d[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    d[6] = 17;
    d[7] = 33;
    d[8..24].copy_from_slice(
        &"2001:db8::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    d[24..40].copy_from_slice(
        &"2001:db8::2"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    d[40..42].copy_from_slice(&53u16.to_be_bytes());
    d[42..44].copy_from_slice(&5353u16.to_be_bytes());
    d[44..46].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    d.extend_from_slice(payload);
    d
}

fn marked(d: &[u8], hl: usize, t: f64) -> Packet {
    let mut p = Packet::from_slice(d).unwrap();
    p.set_network_header(0, hl);
    p.set_timestamp(Timestamp((t * 1e9) as i64));
    p
}

fn originals() -> Vec<Packet> {
    // Record route with two addresses recorded and room for one more.
    let rr = [7, 15, 12, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 0];
    // MSS, SACK permitted, timestamps: 16 bytes, no NOP padding (the text
    // form does not keep NOPs, so a padded header would not come back).
    let topts = [2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
    let mut a = marked(&v4(6, &rr, &tcp_seg(&topts, b"GET / \"x\"\n\x01")), 36, 1.5);
    a.anno_mut().flow_hash = 42;
    a.anno_mut().paint = 1;
    paraclick_elements::standard::set_timestamp::set_first_timestamp(
        &mut a,
        Timestamp(1_000_000_000),
    );
    let echo = [8, 0, 0, 0, 0, 7, 0, 9, b'p', b'i', b'n', b'g'];
    let b = marked(&v4(1, &[], &echo), 20, 2.0);
    let unreach = [3, 4, 0, 0, 0, 0, 5, 120];
    let c = marked(&v4(1, &[], &unreach), 20, 2.5);
    let d = marked(&v6_udp(b"dns?"), 40, 3.0);
    vec![a, b, c, d]
}

#[test]
fn option_payload_icmp_annotation_and_ipv6_fields_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let f1 = dir.path().join("one.txt");
    let f2 = dir.path().join("two.txt");
    let r = build(
        &full_registry(),
        &format!(
            "Idle -> t :: ToIPSummaryDump({}, CONTENTS {FIELDS});",
            q(&f1)
        ),
    );
    r.push_into("t", 0, Batch::from(originals())).unwrap();
    drop(r);
    let one = std::fs::read_to_string(&f1).unwrap();
    let lines: Vec<&str> = one.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines.len(), 4, "{one}");
    assert!(
        lines[0].starts_with("1.500000 10.0.0.1 192.168.7.9 - - T 57 16 4321 "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" 0! 83 rr{1.1.1.1,2.2.2.2}+1 1234 80 7 9 PA 512 0 mss1460;sackok;ts1:2 - - - - - - \"GET / \\\"x\\\"\\n\\001\" "), "{}", lines[0]);
    assert!(lines[0].ends_with(" 42 1.000000 1"), "{}", lines[0]);
    // ICMP payloads start after the IP header (they hold the ICMP header).
    assert!(
        lines[1].contains(" echo 0 7 9 - \"\\010\\000"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains(" unreachable needfrag - - 1400 "),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("3.000000 - - 2001:db8::1 2001:db8::2 U 33 - - - - 52 - 53 5353 "),
        "{}",
        lines[3]
    );
    // The MD5 of "ping", both ways.
    assert!(
        lines[1].contains(&format!(" {} ", md5_hex(&orig_icmp()))),
        "{}",
        lines[1]
    );

    let r = build(&full_registry(), &format!(
        "FromIPSummaryDump({}, STOP true, CHECKSUM true) -> t :: ToIPSummaryDump({}, CONTENTS {FIELDS}) -> s :: TestSink;",
        q(&f1),
        q(&f2)
    ));
    run(&r);
    assert_eq!(handler(&r, "t.count"), "4");
    let got = sink(&r, "s");
    drop(r);
    let two = std::fs::read_to_string(&f2).unwrap();
    let lines2: Vec<&str> = two.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines, lines2);
    // Every byte of the IPv4 packets comes back (headers, options,
    // payload, checksums), and the annotations too.
    let orig = originals();
    for i in 0..3 {
        assert_eq!(got[i].data(), orig[i].data(), "packet {i}");
    }
    assert_eq!(got[0].anno().flow_hash, 42);
    assert_eq!(got[0].anno().paint, 1);
    assert_eq!(
        paraclick_elements::standard::set_timestamp::first_timestamp(&got[0]),
        Timestamp(1_000_000_000)
    );
    assert_eq!(
        got[3].data()[..48],
        orig[3].data()[..48]
            .iter()
            .enumerate()
            .map(|(i, &b)| if (46..48).contains(&i) {
                got[3].data()[i]
            } else {
                b
            })
            .collect::<Vec<u8>>()[..]
    );
    assert_eq!(&got[3].data()[48..], b"dns?");
    // The UDP checksum over the IPv6 pseudo-header verifies.
    let d = got[3].data();
    let mut ph = Vec::new();
    ph.extend_from_slice(&d[8..40]);
    ph.extend_from_slice(&(d.len() as u32 - 40).to_be_bytes());
    ph.extend_from_slice(&[0, 0, 0, 17]);
    ph.extend_from_slice(&d[40..]);
    assert!(checksum::verify(&ph));
}

fn orig_icmp() -> Vec<u8> {
    originals()[1].data()[20..].to_vec()
}

fn md5_hex(d: &[u8]) -> String {
    crate::ipsumdump_ext::md5(d)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn malformed_extended_fields_are_counted_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.txt");
    std::fs::write(
        &f,
        "!data ip_src payload ip_opt tcp_opt ip6_src\n\
         1.0.0.1 \"unterminated - - -\n\
         1.0.0.1 \"a\\\" - - -\n\
         1.0.0.1 - rr{1.2.3} - -\n\
         1.0.0.1 - - mss99999 -\n\
         1.0.0.1 - - - 2001:zz::1\n\
         1.0.0.1 \"ok\" . . -\n",
    )
    .unwrap();
    let r = build(
        &full_registry(),
        &format!("FromIPSummaryDump({}, STOP true) -> s :: TestSink;", q(&f)),
    );
    run(&r);
    assert_eq!(handler(&r, "FromIPSummaryDump@1.errors"), "5");
    let got = sink(&r, "s");
    assert_eq!(got.len(), 1);
    assert!(got[0].data().ends_with(b"ok"));
    // Malformed options in a packet print as '?'.
    let f2 = dir.path().join("q.txt");
    let r = build(
        &full_registry(),
        &format!(
            "Idle -> t :: ToIPSummaryDump({}, CONTENTS ip_opt tcp_opt, HEADER false);",
            q(&f2)
        ),
    );
    let bad_tcp = tcp_seg(&[2, 9, 0, 0], b"");
    let p = marked(&v4(6, &[7, 40, 4, 0], &bad_tcp), 24, 1.0);
    r.push_into("t", 0, Batch::from(vec![p])).unwrap();
    drop(r);
    assert_eq!(std::fs::read_to_string(&f2).unwrap(), "? ?\n");
}

/// `tcp_opt` SACK words: Click lists each SACK block separately
/// (`sack95-98`), so one option with several blocks and several options
/// with one block each print alike. Reading gathers consecutive blocks
/// into one option (at most 4 blocks, as 40 option bytes allow), and
/// writing lists them again: text survives reading and writing exactly.
/// (Real Click writes the same words but reads one option per block; a
/// packet's one multi-block option survives text only here.)
#[test]
fn sack_words_round_trip_exactly() {
    use crate::ipsumdump_ext::parse_tcp_opts;
    // One option, kind 5, with both blocks.
    let mut one = vec![5, 18];
    for x in [1u32, 5, 9, 12] {
        one.extend_from_slice(&x.to_be_bytes());
    }
    one.extend_from_slice(&[0, 0]);
    assert_eq!(parse_tcp_opts("sack1-5;sack9-12").unwrap(), one);
    // Another option between blocks starts a new SACK option.
    let two = parse_tcp_opts("sack1-5;mss1400;sack9-12").unwrap();
    assert_eq!(
        (two[0], two[1], two[10], two[14], two[15]),
        (5, 10, 2, 5, 10)
    );
    let words = [
        "sack1-5",
        "sack1-5;sack9-12",
        "sackok;sack1-5;sack9-12;sack20-30",
        "mss1400;sack1-5;sack9-12;sack20-30;sack40-50",
        "ts1:2;sack1-5;sack9-12;sack20-30",
        "sack1-5;mss1400;sack9-12",
        "sack4294967295-3;wscale7",
        "sack1-5;99=1:2;sack9-12",
    ];
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("in.txt");
    let b = dir.path().join("out.txt");
    let mut text = String::from("!data ip_src sport ip_dst dport tcp_flags tcp_opt\n");
    for w in words {
        text += &format!("1.0.0.1 1 2.0.0.2 2 A {w}\n");
    }
    std::fs::write(&a, &text).unwrap();
    let r = build(&full_registry(), &format!(
        "f :: FromIPSummaryDump({}, STOP true) -> ToIPSummaryDump({}, CONTENTS ip_src sport ip_dst dport tcp_flags tcp_opt tcp_sack);",
        q(&a),
        q(&b)
    ));
    run(&r);
    assert_eq!(handler(&r, "f.errors"), "0");
    drop(r);
    let out = std::fs::read_to_string(&b).unwrap();
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines.len(), words.len());
    for (l, w) in lines.iter().zip(words) {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f[5], w, "tcp_opt");
        // tcp_sack: the SACK and SACK-permitted words alone.
        let sack: Vec<&str> = w.split(';').filter(|x| x.starts_with("sack")).collect();
        assert_eq!(f[6], sack.join(";"), "tcp_sack of {w}");
    }
    // Five blocks do not fit in one option: refused, not split wrongly.
    assert!(parse_tcp_opts("sack1-2;sack3-4;sack5-6;sack7-8;sack9-10").is_none());
}
