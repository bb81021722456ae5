//! The IP summary dump fields beyond the basic header fields: IP and TCP
//! options, ICMP names and identifiers, payloads and their MD5 digests,
//! the aggregate and first timestamp annotations, and IPv6 addresses.
//! Printing and parsing for each, in Click's text forms.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

// ---------------------------------------------------------------------
// Quoted strings (the `payload` field)

/// `"..."` as Click writes a payload: `\\`, `\"` and `\$` escaped, tab,
/// newline and carriage return as `\t`, `\n` and `\r`, and every other
/// byte outside printable ASCII as three octal digits (`\000`, `\177`,
/// `\377`), so a digit after it stays a digit.
pub(crate) fn quote(d: &[u8], out: &mut String) {
    out.push('"');
    for &b in d {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'$' => out.push_str("\\$"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
}

/// The bytes of a payload word. A word in double quotes must end at its
/// closing quote; inside, Click's backslash substitutions apply (`\n`,
/// `\t`, `\a`..., one to three octal digits, `\x` and hex digits of
/// which the last two count, `\<hex data>`, any other `\c` is `c`). A
/// word without quotes is taken as is.
pub(crate) fn unquote(s: &str) -> Option<Vec<u8>> {
    let Some(inner) = s.strip_prefix('"') else {
        return Some(s.as_bytes().to_vec());
    };
    // The closing quote: the first unescaped one, which must end the word.
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    if i + 1 != b.len() {
        return None;
    }
    Some(paraclick_lang::args::unquote_bytes(s))
}

/// Splits a dump line into words; a double-quoted word (with backslash
/// escapes) may hold spaces.
pub(crate) fn line_words(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        out.push(&s[start..i]);
    }
    out
}

// ---------------------------------------------------------------------
// MD5 digests

/// The 64 digits of Click's text form of an MD5 digest, by value.
const MD5_CHARS: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@";

pub(crate) fn md5(d: &[u8]) -> [u8; 16] {
    use md5::{Digest, Md5};
    Md5::digest(d).into()
}

/// Click's text form of a digest: 22 characters, each 6 bits of the
/// digest read as one little-endian 128-bit number, least significant
/// first (the low 6 bits of the first byte come first; the last character
/// holds the top 2 bits of the last byte). Digit values 0-63 are
/// `a-z`, `A-Z`, `0-9`, `_`, `@`. The MD5 of nothing is
/// `u3bJz@iaYsq6aMaMSJVq_b`.
pub(crate) fn md5_ascii(m: &[u8; 16], out: &mut String) {
    let v = u128::from_le_bytes(*m);
    for i in 0..22 {
        out.push(MD5_CHARS[((v >> (6 * i)) & 63) as usize] as char);
    }
}

pub(crate) fn parse_md5_ascii(s: &str) -> Option<[u8; 16]> {
    if s.len() != 22 {
        return None;
    }
    let mut v: u128 = 0;
    for (i, c) in s.bytes().enumerate() {
        let d = MD5_CHARS.iter().position(|&x| x == c)? as u128;
        // The last digit holds only the top 2 bits.
        if i == 21 && d > 3 {
            return None;
        }
        v |= d << (6 * i);
    }
    Some(v.to_le_bytes())
}

pub(crate) fn parse_md5_hex(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut m = [0u8; 16];
    for (i, b) in m.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(m)
}

// ---------------------------------------------------------------------
// ICMP names

/// ICMP type names as Click prints and reads them.
const TYPE_NAMES: &[(u8, &str)] = &[
    (0, "echo-reply"),
    (3, "unreachable"),
    (4, "sourcequench"),
    (5, "redirect"),
    (8, "echo"),
    (9, "routeradvert"),
    (10, "routersolicit"),
    (11, "timeexceeded"),
    (12, "parameterproblem"),
    (13, "timestamp"),
    (14, "timestamp-reply"),
    (15, "inforeq"),
    (16, "inforeq-reply"),
    (17, "maskreq"),
    (18, "maskreq-reply"),
];

/// Spellings without the hyphen, which earlier paraclick versions wrote:
/// read, never written.
const OLD_TYPE_NAMES: &[(u8, &str)] = &[
    (0, "echoreply"),
    (14, "timestampreply"),
    (16, "inforeqreply"),
    (18, "maskreqreply"),
];

fn code_names(ty: u8) -> &'static [&'static str] {
    match ty {
        3 => &[
            "net",
            "host",
            "protocol",
            "port",
            "needfrag",
            "srcroutefail",
            "netunknown",
            "hostunknown",
            "isolated",
            "netprohibited",
            "hostprohibited",
            "tosnet",
            "toshost",
            "filterprohibited",
            "hostprecedence",
            "precedencecutoff",
        ],
        5 => &["net", "host", "tosnet", "toshost"],
        11 => &["transit", "reassembly"],
        12 => &["erroratptr", "missingopt", "length"],
        _ => &[],
    }
}

pub(crate) fn icmp_type_name(t: u8) -> String {
    TYPE_NAMES
        .iter()
        .find(|(n, _)| *n == t)
        .map_or_else(|| t.to_string(), |(_, s)| s.to_string())
}

pub(crate) fn icmp_code_name(t: u8, c: u8) -> String {
    code_names(t)
        .get(usize::from(c))
        .map_or_else(|| c.to_string(), |s| s.to_string())
}

/// A type name or number (the `icmp_type` and `icmp_type_name` fields
/// both take either, as in Click).
pub(crate) fn parse_icmp_type(s: &str) -> Option<u8> {
    TYPE_NAMES
        .iter()
        .chain(OLD_TYPE_NAMES)
        .find(|(_, n)| *n == s)
        .map(|(t, _)| *t)
        .or_else(|| crate::ipsumdump::int(s))
}

/// A code name needs the type; numbers need nothing.
pub(crate) fn parse_icmp_code(s: &str, ty: Option<u8>) -> Option<u8> {
    if let Some(c) = crate::ipsumdump::int(s) {
        return Some(c);
    }
    let names = code_names(ty?);
    names.iter().position(|n| *n == s).map(|c| c as u8)
}

/// Whether an ICMP type carries an identifier and sequence number.
pub(crate) fn icmp_has_id(t: u8) -> bool {
    matches!(t, 0 | 8 | 13 | 14 | 15 | 16 | 17 | 18)
}

// ---------------------------------------------------------------------
// TCP options

/// Which TCP options a field shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TcpOptKind {
    All,
    /// Everything but timestamps.
    NoTs,
    /// SACK and SACK-permitted only.
    Sack,
}

fn data_opt(out: &mut Vec<String>, kind: u8, data: &[u8]) {
    if data.is_empty() {
        out.push(kind.to_string());
    } else {
        let d: Vec<String> = data.iter().map(|b| b.to_string()).collect();
        out.push(format!("{kind}={}", d.join(":")));
    }
}

/// Click's text for the options `o` (after the fixed TCP header).
pub(crate) fn tcp_opts_text(o: &[u8], which: TcpOptKind, out: &mut String) {
    let mut words = Vec::new();
    let mut i = 0;
    while i < o.len() {
        let k = o[i];
        if k == 0 {
            break;
        }
        if k == 1 {
            i += 1;
            continue;
        }
        let Some(&len) = o.get(i + 1) else {
            out.push('?');
            return;
        };
        let len = usize::from(len);
        if len < 2 || i + len > o.len() {
            out.push('?');
            return;
        }
        let d = &o[i + 2..i + len];
        let sack_only = which == TcpOptKind::Sack;
        match (k, len) {
            (2, 4) if !sack_only => words.push(format!("mss{}", u16::from_be_bytes([d[0], d[1]]))),
            (3, 3) if !sack_only => words.push(format!("wscale{}", d[0])),
            (4, 2) => words.push("sackok".into()),
            (5, l) if (l - 2) % 8 == 0 => {
                for b in d.chunks(8) {
                    let l = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                    let r = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                    words.push(format!("sack{l}-{r}"));
                }
            }
            (8, 10) if which == TcpOptKind::All => {
                let a = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
                let b = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
                words.push(format!("ts{a}:{b}"));
            }
            (2 | 3 | 5, _) if !sack_only => {
                out.push('?');
                return;
            }
            (8, _) | (2 | 3, _) => {}
            _ if !sack_only => data_opt(&mut words, k, d),
            _ => {}
        }
        i += len;
    }
    if words.is_empty() {
        out.push('.');
    } else {
        out.push_str(&words.join(";"));
    }
}

fn parse_generic(w: &str, out: &mut Vec<u8>) -> Option<()> {
    let (k, data) = match w.split_once('=') {
        Some((k, d)) => (k, Some(d)),
        None => (w, None),
    };
    let k: u8 = k.parse().ok()?;
    if k <= 1 {
        out.push(k);
        return Some(());
    }
    let bytes: Vec<u8> = match data {
        Some(d) if !d.is_empty() => d
            .split(':')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?,
        _ => Vec::new(),
    };
    out.push(k);
    out.push(u8::try_from(bytes.len() + 2).ok()?);
    out.extend_from_slice(&bytes);
    Some(())
}

/// Parses Click's TCP option text into option bytes (padded with EOL to a
/// multiple of 4). `.` is no options.
pub(crate) fn parse_tcp_opts(s: &str) -> Option<Vec<u8>> {
    let mut o = Vec::new();
    if s != "." {
        let mut sack: Vec<(u32, u32)> = Vec::new();
        let flush = |o: &mut Vec<u8>, sack: &mut Vec<(u32, u32)>| {
            if !sack.is_empty() {
                o.push(5);
                o.push((2 + 8 * sack.len()) as u8);
                for (l, r) in sack.drain(..) {
                    o.extend_from_slice(&l.to_be_bytes());
                    o.extend_from_slice(&r.to_be_bytes());
                }
            }
        };
        for w in s.split(';') {
            // A SACK block: `sackL-R` (Click also reads `sackL:R`).
            if let Some(r) = w.strip_prefix("sack").filter(|r| r.contains(['-', ':'])) {
                let (l, r) = r.split_once(['-', ':'])?;
                sack.push((l.parse().ok()?, r.parse().ok()?));
                if sack.len() == 4 {
                    flush(&mut o, &mut sack);
                }
                continue;
            }
            flush(&mut o, &mut sack);
            if w == "nop" {
                o.push(1);
            } else if w == "eol" {
                o.push(0);
            } else if w == "sackok" {
                o.extend_from_slice(&[4, 2]);
            } else if let Some(m) = w.strip_prefix("mss") {
                let m: u16 = m.parse().ok()?;
                o.extend_from_slice(&[2, 4]);
                o.extend_from_slice(&m.to_be_bytes());
            } else if let Some(m) = w.strip_prefix("wscale") {
                o.extend_from_slice(&[3, 3, m.parse().ok()?]);
            } else if let Some(t) = w.strip_prefix("ts") {
                let (a, b) = t.split_once(':')?;
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                o.extend_from_slice(&[8, 10]);
                o.extend_from_slice(&a.to_be_bytes());
                o.extend_from_slice(&b.to_be_bytes());
            } else {
                parse_generic(w, &mut o)?;
            }
        }
        flush(&mut o, &mut sack);
    }
    while o.len() % 4 != 0 {
        o.push(0);
    }
    (o.len() <= 40).then_some(o)
}

// ---------------------------------------------------------------------
// IP options

fn addr_at(d: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(d[at], d[at + 1], d[at + 2], d[at + 3])
}

/// Click's text for IPv4 options `o`. Record route and source routes get
/// their own forms; other options (timestamps too) the generic
/// `KIND=BYTE:BYTE...` form.
pub(crate) fn ip_opts_text(o: &[u8], out: &mut String) {
    let mut words = Vec::new();
    let mut i = 0;
    while i < o.len() {
        let k = o[i];
        if k == 0 {
            break;
        }
        if k == 1 {
            i += 1;
            continue;
        }
        let Some(&len) = o.get(i + 1) else {
            out.push('?');
            return;
        };
        let len = usize::from(len);
        if len < 2 || i + len > o.len() {
            out.push('?');
            return;
        }
        let opt = &o[i..i + len];
        match k {
            7 | 131 | 137 => {
                if len < 3 || (len - 3) % 4 != 0 {
                    out.push('?');
                    return;
                }
                let ptr = usize::from(opt[2]);
                let naddr = (len - 3) / 4;
                if ptr < 4 || (ptr - 4) % 4 != 0 || (ptr - 4) / 4 > naddr {
                    out.push('?');
                    return;
                }
                let before = (ptr - 4) / 4;
                let name = match k {
                    7 => "rr",
                    131 => "lsrr",
                    _ => "ssrr",
                };
                let mut w = format!("{name}{{");
                let shown = if k == 7 { before } else { naddr };
                for j in 0..shown {
                    if j > 0 {
                        w.push(if k != 7 && j == before { '^' } else { ',' });
                    }
                    let _ = write!(w, "{}", addr_at(opt, 3 + 4 * j));
                }
                if k != 7 && before == naddr && naddr > 0 {
                    w.push('^');
                } else if k != 7 && before == 0 && naddr > 0 {
                    w.insert(name.len() + 1, '^');
                }
                w.push('}');
                if k == 7 && naddr > before {
                    let _ = write!(w, "+{}", naddr - before);
                }
                words.push(w);
            }
            _ => data_opt(&mut words, k, &opt[2..]),
        }
        i += len;
    }
    if words.is_empty() {
        out.push('.');
    } else {
        out.push_str(&words.join(";"));
    }
}

/// Parses Click's IP option text into option bytes (padded with EOL to a
/// multiple of 4, at most 40).
pub(crate) fn parse_ip_opts(s: &str) -> Option<Vec<u8>> {
    let mut o = Vec::new();
    if s != "." {
        for w in s.split(';') {
            if w == "nop" {
                o.push(1);
                continue;
            }
            if w == "eol" {
                o.push(0);
                continue;
            }
            let route = [("rr", 7u8), ("lsrr", 131), ("ssrr", 137)]
                .into_iter()
                .find(|(n, _)| w.starts_with(n) && w[n.len()..].starts_with('{'));
            if let Some((name, kind)) = route {
                let rest = &w[name.len() + 1..];
                let (inner, tail) = rest.split_once('}')?;
                let mut addrs = Vec::new();
                let mut before = None;
                for (j, part) in inner.split([',', '^']).enumerate() {
                    if part.is_empty() {
                        continue;
                    }
                    addrs.push(part.parse::<Ipv4Addr>().ok()?);
                    let _ = j;
                }
                if let Some(pos) = inner.find('^') {
                    before = Some(inner[..pos].split(',').filter(|x| !x.is_empty()).count());
                }
                let extra: usize = match tail.strip_prefix('+') {
                    Some(n) => n.parse().ok()?,
                    None if tail.is_empty() => 0,
                    None => return None,
                };
                let before = before.unwrap_or(addrs.len());
                let n = addrs.len() + extra;
                o.push(kind);
                o.push(u8::try_from(3 + 4 * n).ok()?);
                o.push(u8::try_from(4 + 4 * before).ok()?);
                for a in &addrs {
                    o.extend_from_slice(&a.octets());
                }
                o.extend(std::iter::repeat_n(0, 4 * extra));
            } else {
                parse_generic(w, &mut o)?;
            }
        }
    }
    while o.len() % 4 != 0 {
        o.push(0);
    }
    (o.len() <= 40).then_some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte, as real Click's ToIPSummaryDump prints a payload
    /// holding bytes 0 to 255 (its output lines, run together).
    const ALL_BYTES_CLICK: &str = concat!(
        r#"\000\001\002\003\004\005\006\007\010\t\n\013\014\r\016\017"#,
        r#"\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037"#,
        r##" !\"#\$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNO"##,
        r#"PQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\177"#,
        r#"\200\201\202\203\204\205\206\207\210\211\212\213\214\215\216\217"#,
        r#"\220\221\222\223\224\225\226\227\230\231\232\233\234\235\236\237"#,
        r#"\240\241\242\243\244\245\246\247\250\251\252\253\254\255\256\257"#,
        r#"\260\261\262\263\264\265\266\267\270\271\272\273\274\275\276\277"#,
        r#"\300\301\302\303\304\305\306\307\310\311\312\313\314\315\316\317"#,
        r#"\320\321\322\323\324\325\326\327\330\331\332\333\334\335\336\337"#,
        r#"\340\341\342\343\344\345\346\347\350\351\352\353\354\355\356\357"#,
        r#"\360\361\362\363\364\365\366\367\370\371\372\373\374\375\376\377"#,
    );

    #[test]
    fn payloads_quote_as_click_prints_them() {
        let all: Vec<u8> = (0..=255).collect();
        let mut s = String::new();
        quote(&all, &mut s);
        assert_eq!(s, format!("\"{ALL_BYTES_CLICK}\""));
        assert_eq!(unquote(&s).unwrap(), all);
        // Click's regression test Pad-01: octal escapes, not `\x00`.
        let mut s = String::new();
        quote(b"HiFart\0\0\0\0", &mut s);
        assert_eq!(s, r#""HiFart\000\000\000\000""#);
        let mut s = String::new();
        quote(b"", &mut s);
        assert_eq!(s, r#""""#);
    }

    #[test]
    fn payloads_read_with_clicks_backslash_substitutions() {
        // Each word and the bytes real Click's FromIPSummaryDump made of it
        // (printed back by its ToIPSummaryDump).
        let cases: &[(&str, &[u8])] = &[
            (
                r#""a\x00b\001c\"d\\e\nf\tg\rh\x7fi\x80j\xffk\al\e""#,
                b"a\x0b\x01c\"d\\e\nf\tg\rh\x7fi\x80j\xffk\x07le",
            ),
            (
                r#""\<48 45 4c>|\b\v\f|\x4|\x123|\$|\777|\0|\08""#,
                b"HEL|\x08\x0b\x0c|\x04|#|$|\xff|\x00|\x008",
            ),
            (r#"abc\x41"#, b"abc\\x41"),
        ];
        for (w, want) in cases {
            assert_eq!(unquote(w).as_deref(), Some(*want), "{w}");
        }
        assert!(unquote(r#""unterminated"#).is_none());
        assert!(unquote(r#""a\""#).is_none());
        assert_eq!(line_words("1 \"a b\" 2"), vec!["1", "\"a b\"", "2"]);
        assert_eq!(line_words("\"a\\\" b\" x"), vec!["\"a\\\" b\"", "x"]);
    }

    #[test]
    fn md5_forms() {
        // Real Click's payload_md5 text for these payloads (Click's
        // regression test IPSummaryDump-02).
        for (d, text, hex) in [
            (
                &b""[..],
                "u3bJz@iaYsq6aMaMSJVq_b",
                "d41d8cd98f00b204e9800998ecf8427e",
            ),
            (
                b"hi there\n",
                "sy@Uze03MHB84qQruJ_zma",
                "12f6bb1941df66b8f138a446d4e8670c",
            ),
        ] {
            let m = md5(d);
            let mut s = String::new();
            md5_ascii(&m, &mut s);
            assert_eq!(s, text);
            assert_eq!(parse_md5_ascii(text), Some(m));
            assert_eq!(parse_md5_hex(hex), Some(m));
        }
        // Every digit value: 0 and 63 in each position (the last holds 2
        // bits).
        let mut s = String::new();
        md5_ascii(&[0xff; 16], &mut s);
        assert_eq!(s, "@@@@@@@@@@@@@@@@@@@@@d");
        assert_eq!(parse_md5_ascii(&s), Some([0xff; 16]));
        let mut s = String::new();
        md5_ascii(
            &[0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40],
            &mut s,
        );
        assert_eq!(s, "baaaaaaaaaaaaaaaaaaaab");
        assert!(parse_md5_ascii("short").is_none());
        assert!(
            parse_md5_ascii("aaaaaaaaaaaaaaaaaaaaae").is_none(),
            "more than 128 bits"
        );
        assert!(parse_md5_ascii("aaaaaaaaaaaaaaaaaaaa+a").is_none());
    }

    #[test]
    fn sack_blocks_read_with_a_dash_or_a_colon() {
        let a = parse_tcp_opts("sack1-18;sack20-30").unwrap();
        assert_eq!(parse_tcp_opts("sack1:18;sack20:30"), Some(a.clone()));
        let mut s = String::new();
        tcp_opts_text(&a, TcpOptKind::All, &mut s);
        assert_eq!(s, "sack1-18;sack20-30");
    }

    #[test]
    fn tcp_options_text_and_back() {
        let o = parse_tcp_opts("mss1460;sackok;ts669063908:38382731;nop;wscale7").unwrap();
        let mut s = String::new();
        tcp_opts_text(&o, TcpOptKind::All, &mut s);
        assert_eq!(s, "mss1460;sackok;ts669063908:38382731;wscale7");
        let mut s = String::new();
        tcp_opts_text(&o, TcpOptKind::NoTs, &mut s);
        assert_eq!(s, "mss1460;sackok;wscale7");
        let o = parse_tcp_opts("sack95-98;sack100-200;99=0:5:10").unwrap();
        let mut s = String::new();
        tcp_opts_text(&o, TcpOptKind::All, &mut s);
        assert_eq!(s, "sack95-98;sack100-200;99=0:5:10");
        let mut s = String::new();
        tcp_opts_text(&o, TcpOptKind::Sack, &mut s);
        assert_eq!(s, "sack95-98;sack100-200");
        let mut s = String::new();
        tcp_opts_text(&[2, 9, 0], TcpOptKind::All, &mut s);
        assert_eq!(s, "?");
        assert!(parse_tcp_opts("mssx").is_none());
        assert_eq!(parse_tcp_opts(".").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn ip_options_text_and_back() {
        for t in [
            "rr{10.0.0.1,20.0.0.2}+5",
            "ssrr{1.0.0.1,1.0.0.2^1.0.0.3}",
            "lsrr{^1.0.0.1,1.0.0.2}",
            "98;99=0:5:10",
        ] {
            let o = parse_ip_opts(t).unwrap_or_else(|| panic!("{t}"));
            let mut s = String::new();
            ip_opts_text(&o, &mut s);
            assert_eq!(s, t);
        }
        assert!(parse_ip_opts("rr{1.2.3}").is_none());
        assert!(parse_ip_opts("rr{1.0.0.1}+20").is_none());
    }

    #[test]
    fn icmp_names() {
        // Real Click's icmp_type_name for types 0 to 255: these names, the
        // number otherwise.
        let named = [
            (0, "echo-reply"),
            (3, "unreachable"),
            (4, "sourcequench"),
            (5, "redirect"),
            (8, "echo"),
            (9, "routeradvert"),
            (10, "routersolicit"),
            (11, "timeexceeded"),
            (12, "parameterproblem"),
            (13, "timestamp"),
            (14, "timestamp-reply"),
            (15, "inforeq"),
            (16, "inforeq-reply"),
            (17, "maskreq"),
            (18, "maskreq-reply"),
        ];
        for t in 0..=255u8 {
            let want = named
                .iter()
                .find(|(n, _)| *n == t)
                .map_or_else(|| t.to_string(), |(_, s)| s.to_string());
            assert_eq!(icmp_type_name(t), want);
            assert_eq!(parse_icmp_type(&want), Some(t));
        }
        assert_eq!(parse_icmp_type("echoreply"), Some(0), "old spelling");
        assert_eq!(parse_icmp_type("0x8"), Some(8));
        assert_eq!(parse_icmp_type("ECHO"), None);
        assert_eq!(parse_icmp_type("256"), None);
        assert_eq!(icmp_code_name(3, 4), "needfrag");
        assert_eq!(icmp_code_name(3, 16), "16");
        assert_eq!(icmp_code_name(8, 0), "0");
        assert_eq!(parse_icmp_code("needfrag", Some(3)), Some(4));
        assert_eq!(parse_icmp_code("0x4", Some(8)), Some(4));
        assert_eq!(parse_icmp_code("needfrag", None), None);
        assert_eq!(parse_icmp_code("needfrag", Some(11)), None);
    }
}
