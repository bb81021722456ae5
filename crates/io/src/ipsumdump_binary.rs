//! Click's binary IP summary dump records, shared by ToIPSummaryDump
//! (`BINARY true`) and FromIPSummaryDump (after a `!binary` line). Not an
//! element.
//!
//! After the text header and its `!binary` line, the file is a sequence
//! of records: a 4-byte word in network byte order whose high bit marks a
//! metadata record and whose other 31 bits give the record length in
//! bytes, the word included (so at least 4); then the data. A packet
//! record holds the fields of the `!data` line in order, each in the
//! fixed width Click documents, numbers in network byte order:
//!
//! ```text
//! timestamp, first_timestamp  8  seconds, microseconds
//! ntimestamp                  8  seconds, nanoseconds
//! ts_sec, ts_usec             4
//! ts_usec1                    8  microseconds
//! ip_src, ip_dst              4
//! sport, dport, ip_id         2
//! ip_len, udp_len,
//! payload_len, ip_capture_len,
//! count, tcp_seq, tcp_ack     4
//! ip_proto, ip_tos, ip_ttl    1
//! ip_frag                     1  the character ('F', 'f', '!', '.')
//! ip_fragoff                  2  the IP header's flags and offset word
//! tcp_flags                   1  the TCP flags byte (N is lost)
//! direction                   1  the paint annotation (0 `>`, 1 `<`)
//! tcp_window                  2
//! payload_md5(_hex)          16  the digest
//! eth_src, eth_dst            6
//! ip_opt, tcp_opt,
//! tcp_ntopt, tcp_sack         ?  a length byte, then the option bytes
//! ```
//!
//! A metadata record holds a text line (such as `!bad ...`), newline
//! included. Values that do not apply (`-` in a text dump) are written as
//! zeros. Click documents no binary form for the other fields (`ip_hl`,
//! `ip_sum`, `ip_dscp`, `ip_ecn`, `tcp_off`, `tcp_urp`, `icmp_*`, `link`,
//! `paint`, `wire_len`, `payload`, `aggregate`, `ip6_src`, `ip6_dst`):
//! they are refused with BINARY. (`direction` and `tcp_window` are not in
//! Click's table either, but Click 2.x writes them, 1 and 2 bytes as
//! above, and ToIPFlowDumps's binary flow files need them.)
//! Option fields hold the options their text form names (`tcp_ntopt`
//! without timestamps, `tcp_sack` only SACK options; no NOP padding, as
//! in text); no options, or none known, is a zero length byte, read back
//! as unknown (`-`).
//!
//! Real Click (checked against its 2.x userlevel build) writes exactly
//! these bytes for the fixed-width fields and for `tcp_ntopt` and
//! `tcp_sack`, but writes `ip_opt` and `tcp_opt` twice in each record
//! (and its own reader then misreads the fields after them): dumps with
//! those two fields do not interoperate with Click's.
//!
//! A binary record cannot say that a value is missing: a UDP packet's
//! `tcp_seq` is written as 0 and read back as 0. Include `ip_proto` in
//! binary dumps so FromIPSummaryDump does not guess the protocol from such
//! fields.
//!
//! Records are built from, and read back into, the very words of the text
//! format, so both forms mean the same.

use crate::ipsumdump::Field;
use std::fmt::Write;
use std::net::Ipv4Addr;

/// The high bit of a record's length word: a metadata record.
pub(crate) const META: u32 = 0x8000_0000;

const TCP_FLAGS: &[u8] = b"FSRPAUECN";

/// The width of field `f` in a binary record (0: a length byte, then
/// that many bytes), or why it has none.
pub(crate) fn width(f: Field) -> Result<usize, String> {
    use Field::*;
    Ok(match f {
        Timestamp | NTimestamp | FirstTimestamp | TsUsec1 => 8,
        TsSec | TsUsec | IpSrc | IpDst | IpLen | UdpLen | PayloadLen | IpCaptureLen | Count
        | TcpSeq | TcpAck => 4,
        Sport | Dport | IpId | IpFragoff | TcpWindow => 2,
        IpProto | IpTos | IpTtl | IpFrag | TcpFlags | Direction => 1,
        PayloadMd5 | PayloadMd5Hex => 16,
        EthSrc | EthDst => 6,
        IpOpt | TcpOpt | TcpNtopt | TcpSack => 0,
        _ => {
            return Err(format!(
                "field '{}' has no documented binary form",
                f.name()
            ))
        }
    })
}

/// Checks that every field has a binary form.
pub(crate) fn check(fields: &[Field]) -> Result<(), String> {
    fields.iter().try_for_each(|f| width(*f).map(|_| ()))
}

fn put(out: &mut Vec<u8>, v: u64, w: usize) {
    out.extend_from_slice(&v.to_be_bytes()[8 - w..]);
}

/// Appends the binary form of text word `s` of field `f` (zeros for `-`
/// or a word that does not fit).
pub(crate) fn encode(f: Field, s: &str, out: &mut Vec<u8>) {
    let Ok(w) = width(f) else { return };
    let start = out.len();
    if s != "-" && encode_word(f, s, out).is_some() && (w == 0 || out.len() == start + w) {
        return;
    }
    out.truncate(start);
    out.resize(start + w.max(1), 0);
}

/// The length of field `f`'s binary form at the start of `rest`, if it
/// fits there.
pub(crate) fn field_len(f: Field, rest: &[u8]) -> Option<usize> {
    let n = match width(f).ok()? {
        0 => 1 + usize::from(*rest.first()?),
        w => w,
    };
    (n <= rest.len()).then_some(n)
}

fn encode_word(f: Field, s: &str, out: &mut Vec<u8>) -> Option<()> {
    use Field::*;
    let w = width(f).ok()?;
    match f {
        Timestamp | NTimestamp | FirstTimestamp => {
            let t = paraclick_packet::Timestamp::parse(s)?;
            put(out, u32::try_from(t.sec()).ok()?.into(), 4);
            let frac = if f == NTimestamp { t.nsec() } else { t.usec() };
            put(out, frac.into(), 4);
        }
        IpSrc | IpDst => out.extend_from_slice(&s.parse::<Ipv4Addr>().ok()?.octets()),
        IpProto => {
            let v = match s {
                "T" => 6,
                "U" => 17,
                "I" => 1,
                _ => paraclick_elements::iproute::encap::parse_proto(s).ok()?,
            };
            out.push(v);
        }
        IpFrag => {
            let [c] = s.as_bytes() else { return None };
            out.push(*c);
        }
        IpFragoff => {
            let digits = s.trim_end_matches(['+', '!']);
            let off: u32 = digits.parse().ok()?;
            if !off.is_multiple_of(8) || off / 8 > 0x1fff {
                return None;
            }
            let mut v = off / 8;
            if s[digits.len()..].contains('+') {
                v |= 0x2000;
            }
            if s[digits.len()..].contains('!') {
                v |= 0x4000;
            }
            put(out, v.into(), 2);
        }
        Direction => out.push(match s {
            ">" => 0,
            "<" => 1,
            _ => s.parse::<u8>().ok()?,
        }),
        TcpFlags => {
            let mut v = 0u64;
            if s != "." {
                for c in s.bytes() {
                    let i = TCP_FLAGS.iter().position(|x| *x == c)?;
                    v |= 1 << i;
                }
            }
            put(out, v & 0xff, 1);
        }
        IpOpt | TcpOpt | TcpNtopt | TcpSack => {
            let mut o = if f == IpOpt {
                crate::ipsumdump_ext::parse_ip_opts(s)?
            } else {
                crate::ipsumdump_ext::parse_tcp_opts(s)?
            };
            if matches!(f, TcpNtopt | TcpSack) {
                // The options themselves, without end-of-list padding.
                let n = unpadded_len(&o);
                o.truncate(n);
            }
            out.push(u8::try_from(o.len()).ok()?);
            out.extend_from_slice(&o);
        }
        PayloadMd5 => out.extend_from_slice(&crate::ipsumdump_ext::parse_md5_ascii(s)?),
        PayloadMd5Hex => out.extend_from_slice(&crate::ipsumdump_ext::parse_md5_hex(s)?),
        EthSrc | EthDst => {
            out.extend_from_slice(&s.parse::<paraclick_packet::wire::EtherAddr>().ok()?.0)
        }
        _ => {
            let v: u64 = s.parse().ok()?;
            if w < 8 && v >> (8 * w) != 0 {
                return None;
            }
            put(out, v, w);
        }
    }
    Some(())
}

/// The length of options `o` up to their end-of-list option.
fn unpadded_len(o: &[u8]) -> usize {
    let mut i = 0;
    while i < o.len() {
        match o[i] {
            0 => break,
            1 => i += 1,
            _ => i += usize::from(o.get(i + 1).copied().unwrap_or(2)).max(2),
        }
    }
    i.min(o.len())
}

fn get(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, x| (a << 8) | u64::from(*x))
}

/// The text word for field `f` from its binary form `b` (`field_len`
/// bytes), or `None` if the bytes are not a valid value.
pub(crate) fn decode(f: Field, b: &[u8]) -> Option<String> {
    use Field::*;
    let mut s = String::new();
    match f {
        Timestamp | NTimestamp | FirstTimestamp => {
            let (sec, frac) = (get(&b[..4]) as i64, get(&b[4..8]) as u32);
            let t = if f == NTimestamp {
                (frac < 1_000_000_000)
                    .then(|| paraclick_packet::Timestamp::from_parts(sec, frac))?
            } else {
                (frac < 1_000_000)
                    .then(|| paraclick_packet::Timestamp::from_parts(sec, frac * 1000))?
            };
            if f == NTimestamp {
                let _ = write!(s, "{t:#}");
            } else {
                let _ = write!(s, "{t}");
            }
        }
        IpSrc | IpDst => {
            let _ = write!(s, "{}", Ipv4Addr::new(b[0], b[1], b[2], b[3]));
        }
        IpFrag => s.push(char::from(b[0])),
        Direction => match b[0] {
            0 => s.push('>'),
            1 => s.push('<'),
            d => {
                let _ = write!(s, "{d}");
            }
        },
        IpOpt | TcpOpt | TcpNtopt | TcpSack => {
            use crate::ipsumdump_ext as x;
            let o = &b[1..];
            if o.is_empty() {
                // Unknown, as far as the reader goes: an empty list must
                // not make a UDP packet TCP.
                s.push('-');
            } else if f == IpOpt {
                x::ip_opts_text(o, &mut s);
            } else {
                let k = match f {
                    TcpOpt => x::TcpOptKind::All,
                    TcpNtopt => x::TcpOptKind::NoTs,
                    _ => x::TcpOptKind::Sack,
                };
                x::tcp_opts_text(o, k, &mut s);
            }
            if s.is_empty() {
                s.push('.');
            }
        }
        IpFragoff => {
            let v = get(b);
            let _ = write!(s, "{}", (v & 0x1fff) * 8);
            if v & 0x2000 != 0 {
                s.push('+');
            }
            if v & 0x4000 != 0 {
                s.push('!');
            }
        }
        TcpFlags => {
            if b[0] == 0 {
                s.push('.');
            }
            for (i, c) in TCP_FLAGS.iter().take(8).enumerate() {
                if b[0] & (1 << i) != 0 {
                    s.push(char::from(*c));
                }
            }
        }
        PayloadMd5 => {
            let mut m = [0u8; 16];
            m.copy_from_slice(b);
            crate::ipsumdump_ext::md5_ascii(&m, &mut s);
        }
        PayloadMd5Hex => {
            for x in b {
                let _ = write!(s, "{x:02x}");
            }
        }
        EthSrc | EthDst => {
            let mut e = [0u8; 6];
            e.copy_from_slice(b);
            let _ = write!(s, "{}", paraclick_packet::wire::EtherAddr(e));
        }
        _ => {
            let _ = write!(s, "{}", get(b));
        }
    }
    Some(s)
}

/// Appends one packet record holding `fields`: each field with its text
/// word (as a text dump line holds it), in order.
pub(crate) fn text_record<'a>(fields: impl Iterator<Item = (Field, &'a str)>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    for (f, word) in fields {
        encode(f, word, out);
    }
    let len = (out.len() - start) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends one record: `body` after its length word (`meta`: a metadata
/// record).
pub(crate) fn record(out: &mut Vec<u8>, meta: bool, body: &[u8]) {
    let len = (body.len() as u32 + 4) | if meta { META } else { 0 };
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_survive_their_binary_form() {
        for (f, w) in [
            (Field::Timestamp, "996033261.451094"),
            (Field::NTimestamp, "996033261.451094123"),
            (Field::IpSrc, "192.150.187.37"),
            (Field::Sport, "22"),
            (Field::IpLen, "132"),
            (Field::IpFrag, "F"),
            (Field::IpFragoff, "1480+!"),
            (Field::IpFragoff, "0"),
            (Field::TcpFlags, "SA"),
            (Field::TcpFlags, "."),
            (Field::TcpSeq, "4294967295"),
            (Field::PayloadMd5Hex, "0123456789abcdef0123456789abcdef"),
            (Field::EthSrc, "00-11-22-33-44-55"),
            (Field::Direction, ">"),
            (Field::Direction, "<"),
            (Field::Direction, "7"),
            (Field::TcpWindow, "65535"),
        ] {
            let mut b = Vec::new();
            encode(f, w, &mut b);
            assert_eq!(b.len(), width(f).unwrap(), "{w}");
            let back = decode(f, &b).unwrap();
            let mut b2 = Vec::new();
            encode(f, &back, &mut b2);
            assert_eq!(b, b2, "{w} -> {back}");
            if !matches!(f, Field::EthSrc) {
                assert_eq!(back, w);
            }
        }
        // '-' and values too large for the width are zeros.
        let mut b = Vec::new();
        encode(Field::Sport, "-", &mut b);
        encode(Field::Sport, "70000", &mut b);
        encode(Field::IpProto, "T", &mut b);
        assert_eq!(b, [0, 0, 0, 0, 6]);
        // Invalid fractions are refused.
        assert!(decode(Field::Timestamp, &[0, 0, 0, 1, 0, 0x0f, 0x42, 0x40]).is_none());
        assert!(width(Field::IpSum)
            .unwrap_err()
            .contains("no documented binary form"));
        // Options: a length byte, then the bytes.
        for (f, w) in [
            (Field::TcpOpt, "mss1460;sackok;ts1:2"),
            (Field::IpOpt, "rr{1.1.1.1,2.2.2.2}+1"),
        ] {
            let mut b = Vec::new();
            encode(f, w, &mut b);
            assert_eq!(field_len(f, &b), Some(b.len()), "{w}");
            assert_eq!(usize::from(b[0]) + 1, b.len());
            assert_eq!(decode(f, &b).unwrap(), w);
        }
        let mut b = Vec::new();
        encode(Field::TcpSack, ".", &mut b);
        encode(Field::TcpSack, "-", &mut b);
        assert_eq!(b, [0, 0]);
        assert_eq!(decode(Field::TcpSack, &b[..1]).unwrap(), "-");
        assert_eq!(field_len(Field::TcpOpt, &[5, 1, 1]), None, "cut short");
        // Partial TCP options carry no padding (as Click writes them).
        let mut b = Vec::new();
        encode(Field::TcpSack, "sackok", &mut b);
        assert_eq!(b, [2, 4, 2]);
        assert_eq!(unpadded_len(&[2, 4, 5, 0xb4, 1, 0, 0]), 5);
    }
}

/// Whole dumps through ToIPSummaryDump(BINARY true) and FromIPSummaryDump.
#[cfg(test)]
mod dump_tests {
    use crate::test_util::*;
    use std::path::Path;

    const FIELDS: &str = "timestamp ip_src sport ip_dst dport ip_proto ip_len payload_len ip_ttl ip_tos ip_id ip_frag ip_fragoff tcp_flags tcp_seq tcp_ack count ntimestamp ts_sec ts_usec ts_usec1";

    /// TCP, a first fragment with DF, UDP.
    const TEXT: &str = "!IPSummaryDump 1.3\n!data timestamp ip_src sport ip_dst dport ip_proto ip_len payload_len ip_ttl ip_tos ip_id ip_frag ip_fragoff tcp_flags tcp_seq tcp_ack count\n\
        1000000000.000001 10.0.0.1 1234 10.0.0.2 80 T 40 0 64 0 1 ! 0! S 100 0 1\n\
        1000000001.250000 10.0.0.2 80 10.0.0.1 1234 T 1000 960 63 16 2 F 0+ PA 4000000000 101 3\n\
        1000000002.999999 192.168.1.9 53 8.8.8.8 5353 U 128 100 7 1 65535 . 0 - - - 1\n";

    /// Runs FromIPSummaryDump(`from`) -> ToIPSummaryDump(`to`, `conf`)
    /// and returns the router (for handlers).
    fn convert(from: &Path, to: &Path, conf: &str) -> paraclick_runtime::Router {
        let r = build(
            &full_registry(),
            &format!(
                "f :: FromIPSummaryDump({}, STOP true) -> t :: ToIPSummaryDump({}, {conf});",
                q(from),
                q(to)
            ),
        );
        run(&r);
        r.write_handler("t.flush", "").unwrap();
        r
    }

    fn data_lines(s: &str) -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with('!'))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn text_binary_text_round_trip_keeps_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let (src, t1, bin, t2) = (
            dir.path().join("src.txt"),
            dir.path().join("t1.txt"),
            dir.path().join("dump.bin"),
            dir.path().join("t2.txt"),
        );
        std::fs::write(&src, TEXT).unwrap();
        let contents = format!("CONTENTS {FIELDS}");
        convert(&src, &t1, &contents);
        let r = convert(&src, &bin, &format!("{contents}, BINARY true"));
        assert_eq!(handler(&r, "t.count"), "3");
        let r = convert(&bin, &t2, &contents);
        assert_eq!(handler(&r, "f.count"), "3");
        assert_eq!(handler(&r, "f.errors"), "0");
        let one = data_lines(&std::fs::read_to_string(&t1).unwrap());
        let two = data_lines(&std::fs::read_to_string(&t2).unwrap());
        assert_eq!(one.len(), 3);
        assert_eq!(one, two);
        assert!(one[1].contains(" 10.0.0.2 80 10.0.0.1 1234 T 1000 960 63 16 2 F 0+ PA 4000000000 101 3 1000000001.250000000 1000000001 250000 1000000001250000"), "{}", one[1]);

        // The layout Click documents: the header, `!binary`, then records
        // of 4 + 8+4+2+4+2+1+4+4+1+1+2+1+2+1+4+4+4+8+4+4+8 = 77 bytes.
        let b = std::fs::read(&bin).unwrap();
        let text_end = b.windows(8).position(|w| w == b"!binary\n").unwrap() + 8;
        let head = std::str::from_utf8(&b[..text_end]).unwrap();
        assert!(head.starts_with("!IPSummaryDump 1.3\n"), "{head}");
        assert!(head.contains(&format!("!data {FIELDS}\n")), "{head}");
        let recs = &b[text_end..];
        assert_eq!(recs.len(), 3 * 77);
        let r1 = &recs[77..154];
        assert_eq!(&r1[..4], &77u32.to_be_bytes(), "length word");
        assert_eq!(&r1[4..12], &[0x3b, 0x9a, 0xca, 0x01, 0, 0x03, 0xd0, 0x90]);
        assert_eq!(&r1[12..16], &[10, 0, 0, 2]);
        assert_eq!(&r1[16..18], &80u16.to_be_bytes());
        assert_eq!(&r1[18..22], &[10, 0, 0, 1]);
        assert_eq!(r1[24], 6, "ip_proto");
        assert_eq!(&r1[25..29], &1000u32.to_be_bytes(), "ip_len");
        assert_eq!(r1[37], b'F', "ip_frag");
        assert_eq!(&r1[38..40], &0x2000u16.to_be_bytes(), "ip_fragoff");
        assert_eq!(r1[40], 0x18, "tcp_flags PA");
        assert_eq!(&r1[41..45], &4_000_000_000u32.to_be_bytes());
        assert_eq!(&r1[49..53], &3u32.to_be_bytes(), "count");
    }

    #[test]
    fn option_fields_round_trip_through_binary() {
        let dir = tempfile::tempdir().unwrap();
        let (src, t1, bin, t2) = (
            dir.path().join("src.txt"),
            dir.path().join("t1.txt"),
            dir.path().join("dump.bin"),
            dir.path().join("t2.txt"),
        );
        std::fs::write(
            &src,
            "!IPSummaryDump 1.3\n!data ip_src ip_dst ip_proto ip_opt tcp_opt sport\n\
             1.1.1.1 2.2.2.2 T rr{1.1.1.1,2.2.2.2}+1 mss1460;sackok;ts1:2 10\n\
             1.1.1.1 2.2.2.2 T . sack1-5;sack9-12 11\n\
             3.3.3.3 4.4.4.4 U . - 12\n\
             5.5.5.5 6.6.6.6 T . . 13\n",
        )
        .unwrap();
        let contents = "CONTENTS ip_src ip_dst ip_proto ip_opt tcp_opt tcp_ntopt tcp_sack sport";
        convert(&src, &t1, contents);
        convert(&src, &bin, &format!("{contents}, BINARY true"));
        let r = convert(&bin, &t2, contents);
        assert_eq!(handler(&r, "f.errors"), "0");
        let one = data_lines(&std::fs::read_to_string(&t1).unwrap());
        let two = data_lines(&std::fs::read_to_string(&t2).unwrap());
        assert_eq!(
            one[0],
            "1.1.1.1 2.2.2.2 T rr{1.1.1.1,2.2.2.2}+1 mss1460;sackok;ts1:2 mss1460;sackok sackok 10"
        );
        assert_eq!(
            one[1],
            "1.1.1.1 2.2.2.2 T . sack1-5;sack9-12 sack1-5;sack9-12 sack1-5;sack9-12 11"
        );
        assert_eq!(one, two);
    }

    fn header(fields: &str) -> Vec<u8> {
        format!("!IPSummaryDump 1.3\n!data {fields}\n!binary\n").into_bytes()
    }

    fn rec(body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    /// Reads `bytes` as a dump; returns (text data lines, count, errors).
    fn read(bytes: &[u8]) -> (Vec<String>, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("in.bin"), dir.path().join("out.txt"));
        std::fs::write(&a, bytes).unwrap();
        let r = convert(&a, &b, "CONTENTS ip_src ip_dst sport");
        let lines = data_lines(&std::fs::read_to_string(&b).unwrap());
        (lines, handler(&r, "f.count"), handler(&r, "f.errors"))
    }

    #[test]
    fn malformed_binary_records_are_counted_errors() {
        let good = |a: u8| rec(&[10, 0, 0, a, 10, 0, 0, 99]);
        // A good record, a metadata record, one too short for its fields,
        // a good one, then a record cut off by the end of the file.
        let mut d = header("ip_src ip_dst");
        d.extend(good(1));
        let mut meta = rec(b"!bad something\n");
        meta[0] |= 0x80;
        d.extend(meta);
        d.extend(rec(&[10, 0, 0, 2]));
        d.extend(good(3));
        d.extend(&12u32.to_be_bytes());
        d.extend(&[10, 0, 0]);
        let (lines, count, errors) = read(&d);
        assert_eq!(lines, ["10.0.0.1 10.0.0.99 0", "10.0.0.3 10.0.0.99 0"]);
        assert_eq!((count.as_str(), errors.as_str()), ("2", "2"));

        // Half a length word at the end.
        let mut d = header("ip_src ip_dst");
        d.extend(good(4));
        d.extend(&[0, 0]);
        let (lines, count, errors) = read(&d);
        assert_eq!(lines.len(), 1);
        assert_eq!((count.as_str(), errors.as_str()), ("1", "1"));

        // A length below 4 cannot be skipped: the end, with an error.
        let mut d = header("ip_src ip_dst");
        d.extend(&2u32.to_be_bytes());
        d.extend(good(5));
        let (lines, count, errors) = read(&d);
        assert!(lines.is_empty());
        assert_eq!((count.as_str(), errors.as_str()), ("0", "1"));

        // A bad value (an invalid microsecond count).
        let mut d = header("timestamp ip_src");
        d.extend(rec(&[0, 0, 0, 1, 0, 0x0f, 0x42, 0x40, 1, 2, 3, 4]));
        d.extend(rec(&[0, 0, 0, 1, 0, 0, 0, 5, 1, 2, 3, 4]));
        let (lines, count, errors) = read(&d);
        assert_eq!(lines, ["1.2.3.4 0.0.0.0 0"]);
        assert_eq!((count.as_str(), errors.as_str()), ("1", "1"));

        // Fields without a binary form: `!binary` ends the file.
        let mut d = header("ip_src ip_sum");
        d.extend(good(6));
        let (lines, count, errors) = read(&d);
        assert!(lines.is_empty());
        assert_eq!((count.as_str(), errors.as_str()), ("0", "1"));
    }

    #[test]
    fn random_binary_never_panics() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for round in 0..64 {
            let mut d = header("timestamp ip_src sport ip_frag ip_fragoff tcp_flags payload_md5");
            let n = (round * 7) % 200;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly plausible length words, sometimes anything.
                d.push(if d.len().is_multiple_of(5) {
                    (x % 3) as u8
                } else {
                    x as u8
                });
            }
            let (_, count, errors) = read(&d);
            let _: u64 = count.parse().unwrap();
            let _: u64 = errors.parse().unwrap();
        }
    }
}
