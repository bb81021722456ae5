//! # AggregateIP
//!
//! AggregateIP(FIELD [, keywords INCREMENTAL, UNSHIFT_IP_ADDR])
//!
//! Sets the aggregate annotation based on an IP packet field.
//!
//! Ports: 1 input, 1 or 2 outputs. Processing: agnostic, but output 1 is
//! push (`a/ah`).
//!
//! Sets the aggregate annotation of each packet (which needs its IP header
//! annotation) to part of its IP header, transport header or payload, as
//! FIELD says. The annotation value is in host byte order.
//!
//! FIELD is a header field name, like `ip tos`, or an offset-length
//! specification, like `ip[8:2]`; either may be followed by a mask, as in
//! `ip src/8` (the top 8 bits) or `ip[8:2] & 0x3F0` (the mask must be one
//! run of 1 bits).
//!
//! Field names: `ip vers`, `ip hl`, `ip tos`, `ip dscp`, `ip ecn`,
//! `ip len`, `ip id`, `ip off` (the whole fragment field), `ip rf`,
//! `ip df`, `ip mf`, `ip fragoff` (the offset alone), `ip ttl`,
//! `ip proto`, `ip sum`, `ip src`, `ip dst`, `udp sport`, `udp dport`,
//! `udp len`, `udp sum`, `tcp sport`, `tcp dport`, `tcp seq`, `tcp ack`,
//! `tcp hl`, `tcp flags`, `tcp fin`, `tcp syn`, `tcp rst`, `tcp psh`,
//! `tcp ackf`, `tcp urg`, `tcp win`, `tcp sum`, `tcp urp`, `icmp type`,
//! `icmp code`, `icmp sum`; and `sport`, `dport`, which apply to TCP or
//! UDP.
//!
//! Offset-length specifications begin with `ip`, `transp` or `data`
//! (offsets from the IP header, the transport header or the payload);
//! `tcp`, `udp` and `icmp` act like `transp` but require that protocol.
//! Then `[OFFSET:LENGTH]`, `[OFFSET1-OFFSET2]` (inclusive) or `[OFFSET]`
//! in bytes, or the same in braces, `{...}`, in bits. A comma may stand
//! for the colon (`"ip[12, 1]"`, quoted). Fields are at most 32 bits.
//!
//! Packets lacking the field (too short, a later fragment, another
//! protocol; transport and data fields need a first fragment, data fields
//! TCP or UDP) go to output 1, or are dropped if it is not connected.
//!
//! Keywords:
//! - `INCREMENTAL` (boolean, default false): the new annotation is the old
//!   one times 2^N plus the field value, for an N-bit field.
//! - `UNSHIFT_IP_ADDR` (boolean, default false): for a field within the
//!   source or destination address, keep the masked bits in place rather
//!   than shifting them down (`ip src/8` of 1.0.0.0 gives 16777216, not 1).
//!
//! Handlers:
//! - `header` (read): `ip`, `transp` or `payload`.
//! - `bit_offset` (read): the field's offset in that header, in bits.
//! - `bit_length` (read): its length, in bits.
//!
//! Example:
//!
//!     FromIPSummaryDump(-, STOP true) -> AggregateIP(ip dst) -> ac :: AggregateCounter -> Discard;

use super::{aggregate, ip_header, set_aggregate};
use paraclick_packet::Packet;
use paraclick_runtime::args::Raw;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    Ip,
    Transp,
    Data,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proto {
    Any,
    One(u8),
    TcpOrUdp,
}

/// A field: where it is, which protocol it needs, and how far left to put
/// its value back (UNSHIFT_IP_ADDR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldSpec {
    pub header: Header,
    pub proto: Proto,
    pub bit_offset: u32,
    pub bit_length: u32,
    pub unshift: u32,
}

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

/// The named fields: name, header, protocol, bit offset, bit length.
pub(crate) const FIELD_NAMES: &[(&str, Header, Proto, u32, u32)] = &[
    ("ip vers", Header::Ip, Proto::Any, 0, 4),
    ("ip hl", Header::Ip, Proto::Any, 4, 4),
    ("ip tos", Header::Ip, Proto::Any, 8, 8),
    ("ip dscp", Header::Ip, Proto::Any, 8, 6),
    ("ip ecn", Header::Ip, Proto::Any, 14, 2),
    ("ip len", Header::Ip, Proto::Any, 16, 16),
    ("ip id", Header::Ip, Proto::Any, 32, 16),
    ("ip off", Header::Ip, Proto::Any, 48, 16),
    ("ip rf", Header::Ip, Proto::Any, 48, 1),
    ("ip df", Header::Ip, Proto::Any, 49, 1),
    ("ip mf", Header::Ip, Proto::Any, 50, 1),
    ("ip fragoff", Header::Ip, Proto::Any, 51, 13),
    ("ip ttl", Header::Ip, Proto::Any, 64, 8),
    ("ip proto", Header::Ip, Proto::Any, 72, 8),
    ("ip sum", Header::Ip, Proto::Any, 80, 16),
    ("ip src", Header::Ip, Proto::Any, 96, 32),
    ("ip dst", Header::Ip, Proto::Any, 128, 32),
    ("udp sport", Header::Transp, Proto::One(UDP), 0, 16),
    ("udp dport", Header::Transp, Proto::One(UDP), 16, 16),
    ("udp len", Header::Transp, Proto::One(UDP), 32, 16),
    ("udp sum", Header::Transp, Proto::One(UDP), 48, 16),
    ("tcp sport", Header::Transp, Proto::One(TCP), 0, 16),
    ("tcp dport", Header::Transp, Proto::One(TCP), 16, 16),
    ("tcp seq", Header::Transp, Proto::One(TCP), 32, 32),
    ("tcp ack", Header::Transp, Proto::One(TCP), 64, 32),
    ("tcp hl", Header::Transp, Proto::One(TCP), 96, 4),
    ("tcp flags", Header::Transp, Proto::One(TCP), 104, 8),
    ("tcp urg", Header::Transp, Proto::One(TCP), 106, 1),
    ("tcp ackf", Header::Transp, Proto::One(TCP), 107, 1),
    ("tcp psh", Header::Transp, Proto::One(TCP), 108, 1),
    ("tcp rst", Header::Transp, Proto::One(TCP), 109, 1),
    ("tcp syn", Header::Transp, Proto::One(TCP), 110, 1),
    ("tcp fin", Header::Transp, Proto::One(TCP), 111, 1),
    ("tcp win", Header::Transp, Proto::One(TCP), 112, 16),
    ("tcp sum", Header::Transp, Proto::One(TCP), 128, 16),
    ("tcp urp", Header::Transp, Proto::One(TCP), 144, 16),
    ("icmp type", Header::Transp, Proto::One(ICMP), 0, 8),
    ("icmp code", Header::Transp, Proto::One(ICMP), 8, 8),
    ("icmp sum", Header::Transp, Proto::One(ICMP), 16, 16),
    ("sport", Header::Transp, Proto::TcpOrUdp, 0, 16),
    ("dport", Header::Transp, Proto::TcpOrUdp, 16, 16),
];

fn named(name: &str) -> Option<(Header, Proto, u32, u32)> {
    FIELD_NAMES
        .iter()
        .find(|f| f.0 == name)
        .map(|&(_, h, p, o, l)| (h, p, o, l))
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses `[A:B]`, `[A-B]`, `[A]` (or braces, in bits): (offset, length)
/// in bits.
fn parse_range(s: &str) -> Option<(u32, u32, &str)> {
    let (close, mult) = match s.chars().next()? {
        '[' => (']', 8u64),
        '{' => ('}', 1u64),
        _ => return None,
    };
    let end = s.find(close)?;
    let inner = &s[1..end];
    let rest = &s[end + 1..];
    let (off, len) = if let Some((a, b)) = inner.split_once([':', ',']) {
        (parse_num(a)?, parse_num(b)?)
    } else if let Some((a, b)) = inner.split_once('-') {
        let (a, b) = (parse_num(a)?, parse_num(b)?);
        (a, b.checked_sub(a)? + 1)
    } else {
        (parse_num(inner)?, 1)
    };
    let (off, len) = (off.checked_mul(mult)?, len.checked_mul(mult)?);
    (len >= 1 && off < (1 << 20)).then_some((off as u32, len as u32, rest))
}

pub(crate) fn parse_field(text: &str, unshift_ip: bool) -> Result<FieldSpec, String> {
    let bad = || format!("bad field '{text}'");
    let s = text.trim().trim_matches('"').trim();
    // Split off the mask.
    let (body, mask) = if let Some((b, m)) = s.split_once('&') {
        (b.trim(), Some(("&", m.trim())))
    } else if let Some((b, m)) = s.rsplit_once('/') {
        (b.trim(), Some(("/", m.trim())))
    } else {
        (s, None)
    };
    let words: Vec<&str> = body.split_whitespace().collect();
    let joined = words.join(" ");
    let (header, proto, mut off, mut len) = if let Some(n) = named(&joined) {
        n
    } else {
        let idx = body.find(['[', '{']).ok_or_else(bad)?;
        let (hname, range) = (body[..idx].trim(), body[idx..].trim());
        let (header, proto) = match hname {
            "ip" => (Header::Ip, Proto::Any),
            "transp" => (Header::Transp, Proto::Any),
            "tcp" => (Header::Transp, Proto::One(TCP)),
            "udp" => (Header::Transp, Proto::One(UDP)),
            "icmp" => (Header::Transp, Proto::One(ICMP)),
            "data" => (Header::Data, Proto::TcpOrUdp),
            _ => return Err(bad()),
        };
        let (o, l, rest) = parse_range(range).ok_or_else(bad)?;
        if !rest.trim().is_empty() {
            return Err(bad());
        }
        (header, proto, o, l)
    };
    if len > 32 {
        return Err(format!("field '{text}' is longer than 32 bits"));
    }
    let (o0, l0) = (off, len);
    match mask {
        None => {}
        Some(("/", m)) => {
            let n = parse_num(m).filter(|&n| n >= 1 && n <= u64::from(len));
            let n = n.ok_or_else(|| format!("bad mask length in '{text}'"))? as u32;
            len = n;
        }
        Some((_, m)) => {
            let m = parse_num(m)
                .filter(|&m| m != 0 && m < (1u64 << len))
                .ok_or_else(|| format!("bad mask in '{text}'"))?;
            let tz = m.trailing_zeros();
            let ones = (m >> tz).trailing_ones();
            if (m >> tz) >> ones != 0 {
                return Err(format!("mask in '{text}' is not one run of 1 bits"));
            }
            off += len - tz - ones;
            len = ones;
        }
    }
    // Within an address: remember how far the field ends before the
    // address's end.
    let mut unshift = 0;
    if unshift_ip && header == Header::Ip {
        for a in [96u32, 128] {
            if off >= a && off + len <= a + 32 {
                unshift = a + 32 - (off + len);
            }
        }
    }
    let _ = (o0, l0);
    Ok(FieldSpec {
        header,
        proto,
        bit_offset: off,
        bit_length: len,
        unshift,
    })
}

/// Reads `len` bits (at most 32) at bit `off` of `d`.
fn bits(d: &[u8], off: u32, len: u32) -> Option<u32> {
    let first = (off / 8) as usize;
    let last = ((off + len - 1) / 8) as usize;
    let bytes = d.get(first..=last)?;
    let mut v: u64 = 0;
    for &b in bytes {
        v = (v << 8) | u64::from(b);
    }
    let total = (bytes.len() * 8) as u32;
    let shift = total - (off % 8) - len;
    Some(((v >> shift) & ((1u64 << len) - 1)) as u32)
}

impl FieldSpec {
    /// The field's value in this packet, or `None` if it lacks the field.
    pub(crate) fn extract(&self, p: &Packet) -> Option<u32> {
        let ip = ip_header(p)?;
        let hl = usize::from(ip[0] & 15) * 4;
        let d = match self.header {
            Header::Ip => ip,
            Header::Transp | Header::Data => {
                let proto = ip[9];
                let ok = match self.proto {
                    Proto::Any => true,
                    Proto::One(x) => proto == x,
                    Proto::TcpOrUdp => proto == TCP || proto == UDP,
                };
                let fragoff = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
                if !ok || fragoff != 0 || hl < 20 {
                    return None;
                }
                let t = ip.get(hl..)?;
                if self.header == Header::Transp {
                    t
                } else {
                    let th = if proto == TCP {
                        usize::from(t.get(12)? >> 4) * 4
                    } else {
                        8
                    };
                    t.get(th..)?
                }
            }
        };
        let v = bits(d, self.bit_offset, self.bit_length)?;
        Some(v << self.unshift)
    }
}

pub struct AggregateIP {
    field: FieldSpec,
    incremental: bool,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("AggregateIP", "1/1-2", "a/ah", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AggregateIP, String> {
    let mut a = cx.args();
    let field: Raw = a.read_mp("FIELD");
    let incremental = a.read("INCREMENTAL").unwrap_or(false);
    let unshift = a.read("UNSHIFT_IP_ADDR").unwrap_or(false);
    a.complete()?;
    let field = parse_field(&field.0, unshift)?;
    Ok(AggregateIP { field, incremental })
}

impl Action for AggregateIP {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("header", |e, _| {
            match e.field.header {
                Header::Ip => "ip",
                Header::Transp => "transp",
                Header::Data => "payload",
            }
            .to_string()
        }),
        Handler::read("bit_offset", |e, _| e.field.bit_offset.to_string()),
        Handler::read("bit_length", |e, _| e.field.bit_length.to_string()),
    ];

    #[inline]
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let Some(v) = self.field.extract(p) else {
            return Verdict::Out(1);
        };
        let v = if self.incremental {
            let n = self.field.bit_length;
            let old = if n >= 32 {
                0
            } else {
                aggregate(p).wrapping_shl(n)
            };
            old.wrapping_add(v)
        } else {
            v
        };
        set_aggregate(p, v);
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{aggregate, set_aggregate};
    use super::*;
    use crate::test_kit::*;
    use paraclick_runtime::testing::assert_err;

    fn agg(decl: &str, d: &[u8]) -> Option<u32> {
        let h = harness(decl, 2);
        h.push(0, vec![marked(d)]);
        let out = h.output(0);
        out.first().map(aggregate)
    }

    #[test]
    fn equivalent_ways_to_take_the_top_of_the_source() {
        let d = Ip::new("18.26.4.9", "10.0.0.1", 17)
            .udp(53, 1234, b"q")
            .bytes();
        for f in [
            "ip src/8",
            "ip src & 0xFF000000",
            "ip[12]",
            "\"ip[12, 1]\"",
            "\"ip{96, 8}\"",
            "ip{96-103}",
        ] {
            assert_eq!(agg(&format!("AggregateIP({f})"), &d), Some(18), "{f}");
        }
        assert_eq!(
            agg("AggregateIP(ip src/8, UNSHIFT_IP_ADDR true)", &d),
            Some(18 << 24)
        );
        assert_eq!(agg("AggregateIP(ip dst)", &d), Some(0x0a00_0001));
        assert_eq!(agg("AggregateIP(udp dport)", &d), Some(1234));
        assert_eq!(agg("AggregateIP(sport)", &d), Some(53));
        assert_eq!(agg("AggregateIP(data[0])", &d), Some(u32::from(b'q')));
        assert_eq!(agg("AggregateIP(ip ttl)", &d), Some(64));
    }

    #[test]
    fn tcp_flag_bits_and_missing_fields() {
        let d = Ip::new("1.0.0.1", "2.0.0.2", 6)
            .tcp(80, 9, 1, 2, 0x12, 5)
            .bytes();
        assert_eq!(agg("AggregateIP(tcp syn)", &d), Some(1));
        assert_eq!(agg("AggregateIP(tcp fin)", &d), Some(0));
        assert_eq!(agg("AggregateIP(tcp flags)", &d), Some(0x12));
        assert_eq!(agg("AggregateIP(tcp win)", &d), Some(5));
        // Wrong protocol, too short, a later fragment: output 1.
        let h = harness("AggregateIP(udp sport)", 2);
        let frag = Ip::new("1.0.0.1", "2.0.0.2", 17)
            .frag(4)
            .payload(b"abcdefgh")
            .bytes();
        h.push(0, vec![marked(&d), marked(&frag), pkt(&d)]);
        assert!(h.output(0).is_empty());
        assert_eq!(h.output(1).len(), 3);
    }

    #[test]
    fn incremental_and_handlers() {
        let d = Ip::new("1.2.3.4", "5.6.7.8", 17).udp(1, 2, b"").bytes();
        let h = harness("AggregateIP(ip dst/8, INCREMENTAL true)", 1);
        let mut p = marked(&d);
        set_aggregate(&mut p, 3);
        h.push(0, vec![p]);
        assert_eq!(aggregate(&h.output(0)[0]), (3 << 8) + 5);
        assert_eq!(h.read("header").unwrap(), "ip");
        assert_eq!(h.read("bit_offset").unwrap(), "128");
        assert_eq!(h.read("bit_length").unwrap(), "8");
        let h = harness("AggregateIP(ip[8:2] & 0x3F0)", 1);
        assert_eq!(h.read("bit_offset").unwrap(), "70");
        assert_eq!(h.read("bit_length").unwrap(), "6");
        for (bad, want) in [
            ("ip wombat", "bad field 'ip wombat'"),
            ("ip[0:5]", "field 'ip[0:5]' is longer than 32 bits"),
            (
                "ip src & 0x0F0F",
                "mask in 'ip src & 0x0F0F' is not one run of 1 bits",
            ),
            ("ip src/40", "bad mask length in 'ip src/40'"),
            ("eth[0]", "bad field 'eth[0]'"),
        ] {
            assert_err(parse_field(bad, false), want);
        }
        assert_err(
            try_harness("AggregateIP", 1),
            "e :: AggregateIP: missing mandatory FIELD argument",
        );
    }
}
