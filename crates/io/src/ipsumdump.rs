//! Click's IP summary dump text format, shared by FromIPSummaryDump and
//! ToIPSummaryDump: the field names and their synonyms, printing a field
//! of a packet, parsing a field of a line, and building a packet from a
//! parsed line. Not an element.

use paraclick_packet::wire::{IcmpHeader, Ipv4Header, TcpHeader, UdpHeader};
use paraclick_packet::{Packet, Timestamp};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// One field of a summary dump line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Timestamp,
    NTimestamp,
    TsSec,
    TsUsec,
    TsUsec1,
    IpSrc,
    IpDst,
    IpTos,
    IpDscp,
    IpEcn,
    IpTtl,
    IpFrag,
    IpFragoff,
    IpId,
    IpSum,
    IpProto,
    IpHl,
    IpLen,
    IpCaptureLen,
    Sport,
    Dport,
    TcpSeq,
    TcpAck,
    TcpOff,
    TcpFlags,
    TcpWindow,
    TcpUrp,
    UdpLen,
    IcmpType,
    IcmpCode,
    PayloadLen,
    Count,
    Direction,
    Link,
    Paint,
    EthSrc,
    EthDst,
    WireLen,
    IpOpt,
    TcpOpt,
    TcpNtopt,
    TcpSack,
    IcmpTypeName,
    IcmpCodeName,
    IcmpFlowid,
    IcmpSeq,
    IcmpNextmtu,
    Payload,
    PayloadMd5,
    PayloadMd5Hex,
    Aggregate,
    FirstTimestamp,
    Ip6Src,
    Ip6Dst,
}

const NAMES: &[(&str, Field)] = &[
    ("timestamp", Field::Timestamp),
    ("ntimestamp", Field::NTimestamp),
    ("ts_sec", Field::TsSec),
    ("ts_usec", Field::TsUsec),
    ("ts_usec1", Field::TsUsec1),
    ("ip_src", Field::IpSrc),
    ("ip_dst", Field::IpDst),
    ("ip_tos", Field::IpTos),
    ("ip_dscp", Field::IpDscp),
    ("ip_ecn", Field::IpEcn),
    ("ip_ttl", Field::IpTtl),
    ("ip_frag", Field::IpFrag),
    ("ip_fragoff", Field::IpFragoff),
    ("ip_id", Field::IpId),
    ("ip_sum", Field::IpSum),
    ("ip_proto", Field::IpProto),
    ("ip_hl", Field::IpHl),
    ("ip_len", Field::IpLen),
    ("ip_capture_len", Field::IpCaptureLen),
    ("sport", Field::Sport),
    ("dport", Field::Dport),
    ("tcp_seq", Field::TcpSeq),
    ("tcp_ack", Field::TcpAck),
    ("tcp_off", Field::TcpOff),
    ("tcp_flags", Field::TcpFlags),
    ("tcp_window", Field::TcpWindow),
    ("tcp_urp", Field::TcpUrp),
    ("udp_len", Field::UdpLen),
    ("icmp_type", Field::IcmpType),
    ("icmp_code", Field::IcmpCode),
    ("payload_len", Field::PayloadLen),
    ("count", Field::Count),
    ("direction", Field::Direction),
    ("link", Field::Link),
    ("paint", Field::Paint),
    ("eth_src", Field::EthSrc),
    ("eth_dst", Field::EthDst),
    ("wire_len", Field::WireLen),
    ("ip_opt", Field::IpOpt),
    ("tcp_opt", Field::TcpOpt),
    ("tcp_ntopt", Field::TcpNtopt),
    ("tcp_sack", Field::TcpSack),
    ("icmp_type_name", Field::IcmpTypeName),
    ("icmp_code_name", Field::IcmpCodeName),
    ("icmp_flowid", Field::IcmpFlowid),
    ("icmp_seq", Field::IcmpSeq),
    ("icmp_nextmtu", Field::IcmpNextmtu),
    ("payload", Field::Payload),
    ("payload_md5", Field::PayloadMd5),
    ("payload_md5_hex", Field::PayloadMd5Hex),
    ("aggregate", Field::Aggregate),
    ("first_timestamp", Field::FirstTimestamp),
    ("ip6_src", Field::Ip6Src),
    ("ip6_dst", Field::Ip6Dst),
];

const SYNONYMS: &[(&str, &str)] = &[
    ("utimestamp", "timestamp"),
    ("ts", "timestamp"),
    ("sec", "ts_sec"),
    ("usec", "ts_usec"),
    ("usec1", "ts_usec1"),
    ("pkt_count", "count"),
    ("packet_count", "count"),
    ("wire_length", "wire_len"),
    ("length", "ip_len"),
    ("ip_p", "ip_proto"),
    ("payload_length", "payload_len"),
    ("agg", "aggregate"),
    ("first_ts", "first_timestamp"),
    ("tcp_options", "tcp_opt"),
    ("ip_options", "ip_opt"),
    ("icmp_id", "icmp_flowid"),
];

impl Field {
    /// The canonical name (printed in `!data` lines).
    pub(crate) fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("none")
    }

    /// Finds a field by name or synonym; spaces stand for underscores, and
    /// a name without an underscore may omit the `ip_` prefix (`src`,
    /// `len`, `proto`).
    pub(crate) fn lookup(name: &str) -> Option<Field> {
        let name = name.trim().replace(' ', "_");
        Self::lookup_exact(&name).or_else(|| {
            (!name.contains('_'))
                .then(|| Self::lookup_exact(&format!("ip_{name}")))
                .flatten()
        })
    }

    fn lookup_exact(name: &str) -> Option<Field> {
        let name = SYNONYMS
            .iter()
            .find(|(s, _)| *s == name)
            .map(|(_, t)| *t)
            .unwrap_or(name);
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

/// Splits a field list into words; a double-quoted word may hold spaces.
pub(crate) fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut w = String::new();
        if c == '"' {
            chars.next();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                w.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        out.push(w);
    }
    out
}

/// Parses a space-separated field list.
pub(crate) fn parse_fields(s: &str) -> Result<Vec<Field>, String> {
    let words = split_words(s);
    if words.is_empty() {
        return Err("no fields".into());
    }
    words
        .iter()
        .map(|w| Field::lookup(w).ok_or_else(|| format!("unknown field '{w}'")))
        .collect()
}

/// The `!data` line for a field list.
pub(crate) fn data_line(fields: &[Field]) -> String {
    let mut s = String::from("!data");
    for f in fields {
        s.push(' ');
        s.push_str(f.name());
    }
    s.push('\n');
    s
}

// ---------------------------------------------------------------------
// Printing

const TCP_FLAG_CHARS: &[u8; 9] = b"FSRPAUECN";

/// What printing needs to know about one packet, worked out once.
pub(crate) struct View<'a> {
    p: &'a Packet,
    /// From the IP header to the end of the captured IP packet (trailing
    /// bytes beyond the IP length cut off), if the packet has a usable one.
    ip: Option<&'a [u8]>,
    hl: usize,
    ip_len: usize,
    proto: u8,
    /// The transport header onward (first fragments only).
    trans: Option<&'a [u8]>,
    tcp: bool,
    extra: u32,
    /// An IPv6 packet (fixed header only; no extension header walk).
    v6: bool,
}

/// Options for [`View::new`].
pub(crate) struct ViewOpts {
    pub extra_length: bool,
    pub careful_trunc: bool,
    pub bad_packets: bool,
}

/// The packet's IP header onward: at its network header annotation, or
/// after an Ethernet header at its MAC header annotation.
fn ip_bytes(p: &Packet) -> Option<&[u8]> {
    if let Some(n) = p.network_header() {
        return Some(n);
    }
    let m = p.mac_header()?;
    (m.len() >= 14 && ((m[12] == 0x08 && m[13] == 0x00) || (m[12] == 0x86 && m[13] == 0xdd)))
        .then(|| &m[14..])
}

impl<'a> View<'a> {
    /// Examines `p`; complaints (`!bad ...` lines) go to `bad`.
    pub(crate) fn new(p: &'a Packet, o: &ViewOpts, bad: &mut String) -> View<'a> {
        let extra = if o.extra_length {
            p.anno().extra_length
        } else {
            0
        };
        let mut v = View {
            p,
            ip: None,
            hl: 0,
            ip_len: 0,
            proto: 0,
            trans: None,
            tcp: false,
            extra,
            v6: false,
        };
        let Some(ip) = ip_bytes(p) else {
            return v;
        };
        let mut complain = |msg: std::fmt::Arguments<'_>| {
            if o.bad_packets && bad.is_empty() {
                let _ = writeln!(bad, "!bad {msg}");
            }
        };
        if ip.len() < 4 {
            complain(format_args!("truncated IP header"));
            return v;
        }
        if ip[0] >> 4 == 6 {
            if ip.len() < 40 {
                complain(format_args!("truncated IPv6 header"));
                return v;
            }
            let ip_len = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            let ip = &ip[..ip.len().min(ip_len)];
            v.ip = Some(ip);
            v.v6 = true;
            v.hl = 40;
            v.ip_len = ip_len;
            v.proto = ip[6];
            if ip.len() > 40 {
                let t = &ip[40..];
                v.trans = Some(t);
                v.tcp = v.proto == 6 && !(t.len() > 12 && t[12] >> 4 < 5);
            }
            return v;
        }
        let hl = usize::from(ip[0] & 15) * 4;
        let ip_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ip[0] >> 4 != 4 {
            complain(format_args!("IP version {}", ip[0] >> 4));
            return v;
        }
        if hl < 20 {
            complain(format_args!("IP header length {}", hl / 4));
            return v;
        }
        if ip_len < hl {
            complain(format_args!("IP length {ip_len}"));
            return v;
        }
        let ip = if ip.len() > ip_len {
            &ip[..ip_len]
        } else {
            if o.careful_trunc && ip.len() + (extra as usize) < ip_len && bad.is_empty() {
                let missing = ip_len - ip.len() - extra as usize;
                let _ = writeln!(bad, "!bad truncated IP missing {missing}");
            }
            ip
        };
        v.ip = Some(ip);
        v.hl = hl;
        v.ip_len = ip_len;
        v.proto = ip.get(9).copied().unwrap_or(0);
        let first_frag = ip.len() >= 8 && u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
        if first_frag && ip.len() > hl {
            let t = &ip[hl..];
            v.trans = Some(t);
            if v.proto == 6 {
                if t.len() > 12 && t[12] >> 4 < 5 {
                    if o.bad_packets && bad.is_empty() {
                        let _ = writeln!(bad, "!bad TCP header length {}", t[12] >> 4);
                    }
                } else {
                    v.tcp = true;
                }
            }
        }
        v
    }

    fn ip_at(&self, need: usize) -> Option<&'a [u8]> {
        self.ip.filter(|ip| ip.len() >= need)
    }

    fn be16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    fn tcp_at(&self, need: usize) -> Option<&'a [u8]> {
        self.trans.filter(|t| self.tcp && t.len() >= need)
    }

    fn trans_of(&self, proto: u8, need: usize) -> Option<&'a [u8]> {
        self.trans
            .filter(|t| self.proto == proto && t.len() >= need)
    }

    /// Appends field `f` of the packet to `out` ('-' if it does not apply).
    pub(crate) fn write(&self, out: &mut String, f: Field) {
        let p = self.p;
        let ts = p.timestamp();
        if self.v6 {
            if let Some(r) = self.write_v6(out, f) {
                let _ = r;
                return;
            }
        }
        let r = match f {
            Field::Timestamp => write!(out, "{ts}"),
            Field::NTimestamp => write!(out, "{ts:#}"),
            Field::TsSec => write!(out, "{}", ts.sec()),
            Field::TsUsec => write!(out, "{}", ts.usec()),
            Field::TsUsec1 => write!(out, "{}", ts.sec() * 1_000_000 + i64::from(ts.usec())),
            Field::IpSrc => match self.ip_at(16) {
                Some(ip) => write!(out, "{}", Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15])),
                None => dash(out),
            },
            Field::IpDst => match self.ip_at(20) {
                Some(ip) => write!(out, "{}", Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19])),
                None => dash(out),
            },
            Field::IpTos => num(out, self.ip_at(2).map(|ip| ip[1].into())),
            Field::IpDscp => num(out, self.ip_at(2).map(|ip| (ip[1] >> 2).into())),
            Field::IpEcn => match self.ip_at(2) {
                Some(ip) => out.write_str(["no", "ect1", "ect2", "ce"][usize::from(ip[1] & 3)]),
                None => dash(out),
            },
            Field::IpTtl => num(out, self.ip_at(9).map(|ip| ip[8].into())),
            Field::IpFrag => match self.ip_at(8) {
                Some(ip) => {
                    let off = Self::be16(ip, 6);
                    let c = if off & 0x3fff != 0 {
                        if off & 0x1fff == 0 {
                            'F'
                        } else {
                            'f'
                        }
                    } else if off & 0x4000 != 0 {
                        '!'
                    } else {
                        '.'
                    };
                    out.write_char(c)
                }
                None => dash(out),
            },
            Field::IpFragoff => match self.ip_at(8) {
                Some(ip) => {
                    let off = Self::be16(ip, 6);
                    let _ = write!(out, "{}", u32::from(off & 0x1fff) * 8);
                    if off & 0x2000 != 0 {
                        out.push('+');
                    }
                    if off & 0x4000 != 0 {
                        out.push('!');
                    }
                    Ok(())
                }
                None => dash(out),
            },
            Field::IpId => num(out, self.ip_at(6).map(|ip| Self::be16(ip, 4).into())),
            Field::IpSum => num(out, self.ip_at(12).map(|ip| Self::be16(ip, 10).into())),
            Field::IpProto => match self.ip_at(10) {
                Some(ip) => match ip[9] {
                    6 => out.write_char('T'),
                    17 => out.write_char('U'),
                    1 => out.write_char('I'),
                    n => write!(out, "{n}"),
                },
                None => dash(out),
            },
            Field::IpHl => num(out, self.ip.map(|_| self.hl as u64)),
            Field::IpLen => match self.ip {
                Some(_) => write!(out, "{}", self.ip_len),
                None => write!(out, "{}", p.len() as u64 + u64::from(self.extra)),
            },
            Field::IpCaptureLen => match self.ip {
                Some(ip) => write!(out, "{}", ip.len().min(self.ip_len)),
                None => write!(out, "{}", p.len()),
            },
            Field::Sport | Field::Dport => {
                let need = if f == Field::Sport { 2 } else { 4 };
                let ok = matches!(self.proto, 6 | 17 | 33 | 136);
                match self.trans.filter(|t| ok && t.len() >= need) {
                    Some(t) => write!(out, "{}", Self::be16(t, need - 2)),
                    None => dash(out),
                }
            }
            Field::TcpSeq => num(out, self.tcp_at(8).map(|t| Self::be32(t, 4).into())),
            Field::TcpAck => num(out, self.tcp_at(12).map(|t| Self::be32(t, 8).into())),
            Field::TcpOff => num(out, self.tcp_at(13).map(|t| u64::from(t[12] >> 4) * 4)),
            Field::TcpFlags => match self.tcp_at(14) {
                Some(t) => {
                    let flags = u16::from(t[13]) | (u16::from(t[12] & 1) << 8);
                    if flags == 0 {
                        out.write_char('.')
                    } else {
                        for (i, c) in TCP_FLAG_CHARS.iter().enumerate() {
                            if flags & (1 << i) != 0 {
                                out.push(*c as char);
                            }
                        }
                        Ok(())
                    }
                }
                None => dash(out),
            },
            Field::TcpWindow => num(out, self.tcp_at(16).map(|t| Self::be16(t, 14).into())),
            Field::TcpUrp => num(out, self.tcp_at(20).map(|t| Self::be16(t, 18).into())),
            Field::UdpLen => num(out, self.trans_of(17, 6).map(|t| Self::be16(t, 4).into())),
            Field::IcmpType => num(out, self.trans_of(1, 1).map(|t| t[0].into())),
            Field::IcmpCode => num(out, self.trans_of(1, 2).map(|t| t[1].into())),
            Field::PayloadLen => {
                let v = match self.ip {
                    Some(_) => {
                        let mut off = self.hl;
                        if let Some(t) = self.tcp_at(13) {
                            off += usize::from(t[12] >> 4) * 4;
                        } else if self.trans_of(17, 1).is_some() {
                            off += 8;
                        }
                        self.ip_len.saturating_sub(off) as u64
                    }
                    None => p.len() as u64 + u64::from(self.extra),
                };
                write!(out, "{v}")
            }
            Field::Count => write!(out, "{}", 1 + u64::from(p.anno().extra_packets)),
            Field::Direction => match p.anno().paint {
                0 => out.write_char('>'),
                1 => out.write_char('<'),
                n => write!(out, "{n}"),
            },
            Field::Link | Field::Paint => write!(out, "{}", p.anno().paint),
            Field::EthSrc | Field::EthDst => {
                let at = if f == Field::EthSrc { 6 } else { 0 };
                match p.mac_header().filter(|m| m.len() >= at + 6) {
                    Some(m) => {
                        let mut e = [0u8; 6];
                        e.copy_from_slice(&m[at..at + 6]);
                        write!(out, "{}", paraclick_packet::wire::EtherAddr(e))
                    }
                    None => dash(out),
                }
            }
            Field::WireLen => write!(out, "{}", p.len()),
            _ => {
                self.write_ext(out, f);
                Ok(())
            }
        };
        let _ = r;
    }

    /// IPv6 packets: the fields that differ from IPv4 (`None`: as IPv4).
    fn write_v6(&self, out: &mut String, f: Field) -> Option<std::fmt::Result> {
        let ip = self.ip?;
        Some(match f {
            Field::IpSrc
            | Field::IpDst
            | Field::IpTos
            | Field::IpDscp
            | Field::IpEcn
            | Field::IpFrag
            | Field::IpFragoff
            | Field::IpId
            | Field::IpSum
            | Field::IpOpt => dash(out),
            Field::IpTtl => write!(out, "{}", ip[7]),
            Field::IpProto => match ip[6] {
                6 => out.write_char('T'),
                17 => out.write_char('U'),
                n => write!(out, "{n}"),
            },
            _ => return None,
        })
    }

    /// Where the payload starts (from the IP header), as PayloadLen counts.
    fn payload_off(&self) -> usize {
        let mut off = self.hl;
        if let Some(t) = self.tcp_at(13) {
            off += usize::from(t[12] >> 4) * 4;
        } else if self.trans_of(17, 1).is_some() {
            off += 8;
        }
        off
    }

    /// The captured payload bytes (of this fragment).
    fn payload(&self) -> Option<&'a [u8]> {
        let ip = self.ip?;
        let end = ip.len().min(self.ip_len);
        Some(ip.get(self.payload_off()..end).unwrap_or(&[]))
    }

    fn tcp_options(&self) -> Option<&'a [u8]> {
        let t = self.tcp_at(20)?;
        let off = usize::from(t[12] >> 4) * 4;
        t.get(20..off)
    }

    fn icmp(&self) -> Option<&'a [u8]> {
        if self.v6 {
            return None;
        }
        self.trans_of(1, 8)
    }

    fn write_ext(&self, out: &mut String, f: Field) {
        use crate::ipsumdump_ext as x;
        let p = self.p;
        match f {
            Field::IpOpt => match self.ip {
                Some(ip) if !self.v6 && ip.len() >= self.hl => {
                    x::ip_opts_text(&ip[20..self.hl], out)
                }
                _ => out.push('-'),
            },
            Field::TcpOpt | Field::TcpNtopt | Field::TcpSack => match self.tcp_options() {
                Some(o) => {
                    let k = match f {
                        Field::TcpOpt => x::TcpOptKind::All,
                        Field::TcpNtopt => x::TcpOptKind::NoTs,
                        _ => x::TcpOptKind::Sack,
                    };
                    x::tcp_opts_text(o, k, out)
                }
                None => out.push('-'),
            },
            Field::IcmpTypeName => match self.trans_of(1, 1).filter(|_| !self.v6) {
                Some(t) => out.push_str(&x::icmp_type_name(t[0])),
                None => out.push('-'),
            },
            Field::IcmpCodeName => match self.trans_of(1, 2).filter(|_| !self.v6) {
                Some(t) => out.push_str(&x::icmp_code_name(t[0], t[1])),
                None => out.push('-'),
            },
            Field::IcmpFlowid | Field::IcmpSeq => {
                let at = if f == Field::IcmpFlowid { 4 } else { 6 };
                let _ = num(
                    out,
                    self.icmp()
                        .filter(|t| x::icmp_has_id(t[0]))
                        .map(|t| Self::be16(t, at).into()),
                );
            }
            Field::IcmpNextmtu => {
                let _ = num(
                    out,
                    self.icmp()
                        .filter(|t| t[0] == 3 && t[1] == 4)
                        .map(|t| Self::be16(t, 6).into()),
                );
            }
            Field::Payload => match self.payload() {
                Some(d) => x::quote(d, out),
                None => out.push('-'),
            },
            Field::PayloadMd5 | Field::PayloadMd5Hex => match self.payload() {
                Some(d) => {
                    let m = x::md5(d);
                    if f == Field::PayloadMd5 {
                        x::md5_ascii(&m, out);
                    } else {
                        for b in m {
                            let _ = write!(out, "{b:02x}");
                        }
                    }
                }
                None => out.push('-'),
            },
            Field::Aggregate => {
                let _ = write!(out, "{}", p.anno().flow_hash);
            }
            Field::FirstTimestamp => {
                let _ = write!(
                    out,
                    "{}",
                    paraclick_elements::standard::set_timestamp::first_timestamp(p)
                );
            }
            Field::Ip6Src | Field::Ip6Dst => match self.ip.filter(|_| self.v6) {
                Some(ip) => {
                    let at = if f == Field::Ip6Src { 8 } else { 24 };
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&ip[at..at + 16]);
                    let _ = write!(out, "{}", std::net::Ipv6Addr::from(a));
                }
                None => out.push('-'),
            },
            _ => out.push('-'),
        }
    }
}

fn dash(out: &mut String) -> std::fmt::Result {
    out.write_char('-')
}

fn num(out: &mut String, v: Option<u64>) -> std::fmt::Result {
    match v {
        Some(v) => write!(out, "{v}"),
        None => dash(out),
    }
}

// ---------------------------------------------------------------------
// Parsing and building

/// The values of one parsed line (unset fields are `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Values {
    pub ts: Option<Timestamp>,
    pub ts_sec: Option<u64>,
    pub ts_usec: Option<u64>,
    pub ts_usec1: Option<u64>,
    pub src: Option<Ipv4Addr>,
    pub dst: Option<Ipv4Addr>,
    pub tos: Option<u8>,
    pub dscp: Option<u8>,
    pub ecn: Option<u8>,
    pub ttl: Option<u8>,
    /// The flags-and-offset word (offset in 8-byte units).
    pub frag: Option<u16>,
    pub id: Option<u16>,
    pub sum: Option<u16>,
    pub proto: Option<u8>,
    pub hl: Option<u32>,
    pub len: Option<u32>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    pub tcp_seq: Option<u32>,
    pub tcp_ack: Option<u32>,
    pub tcp_off: Option<u32>,
    pub tcp_flags: Option<u16>,
    pub tcp_window: Option<u16>,
    pub tcp_urp: Option<u16>,
    pub udp_len: Option<u16>,
    pub icmp_type: Option<u8>,
    pub icmp_code: Option<u8>,
    pub payload_len: Option<u32>,
    pub count: Option<u32>,
    pub paint: Option<u8>,
    pub ip_opt: Option<Vec<u8>>,
    pub tcp_opt: Option<Vec<u8>>,
    pub icmp_id: Option<u16>,
    pub icmp_seq: Option<u16>,
    pub icmp_nextmtu: Option<u16>,
    pub payload: Option<Vec<u8>>,
    pub aggregate: Option<u32>,
    pub first_ts: Option<Timestamp>,
    pub src6: Option<std::net::Ipv6Addr>,
    pub dst6: Option<std::net::Ipv6Addr>,
}

/// An unsigned integer as Click reads one in a dump: decimal, hexadecimal
/// after `0x`, octal after a leading `0` (`010` is 8, `08` is an error).
pub(crate) fn int<T: TryFrom<u64>>(s: &str) -> Option<T> {
    let v: u64 = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else {
        if !s.bytes().all(|b| b.is_ascii_digit()) || s.is_empty() {
            return None;
        }
        match s.strip_prefix('0') {
            Some(o) if !o.is_empty() => u64::from_str_radix(o, 8).ok()?,
            _ => s.parse().ok()?,
        }
    };
    T::try_from(v).ok()
}

/// Click's TCP flag letters (and the old `W`, `X`, `Y`).
fn tcp_flag_bit(c: u8) -> Option<u16> {
    Some(match c {
        b'F' => 0x01,
        b'S' => 0x02,
        b'R' => 0x04,
        b'P' => 0x08,
        b'A' => 0x10,
        b'U' => 0x20,
        b'E' | b'X' => 0x40,
        b'C' | b'W' | b'Y' => 0x80,
        b'N' => 0x100,
        _ => return None,
    })
}

/// Parses `s` as field `f` into `v`. `minor` is the file format's minor
/// version (version 1.0 gave fragment offsets in 8-byte units). Fields
/// FromIPSummaryDump does not use are accepted and ignored.
pub(crate) fn parse_value(f: Field, s: &str, v: &mut Values, minor: u32) -> Option<()> {
    match f {
        Field::Timestamp | Field::NTimestamp => v.ts = Some(Timestamp::parse(s)?),
        Field::TsSec => v.ts_sec = Some(int(s)?),
        Field::TsUsec => v.ts_usec = Some(int(s)?),
        Field::TsUsec1 => v.ts_usec1 = Some(int(s)?),
        Field::IpSrc => v.src = Some(s.parse().ok()?),
        Field::IpDst => v.dst = Some(s.parse().ok()?),
        Field::IpTos => v.tos = Some(int(s)?),
        Field::IpDscp => v.dscp = Some(int::<u8>(s).filter(|d| *d < 64)?),
        Field::IpEcn => {
            v.ecn = Some(match s {
                "no" | "0" => 0,
                "ect1" | "ECT(1)" | "1" => 1,
                "ect2" | "ECT(0)" | "2" => 2,
                "ce" | "CE" | "3" => 3,
                _ => return None,
            })
        }
        Field::IpTtl => v.ttl = Some(int(s)?),
        Field::IpFrag | Field::IpFragoff => {
            let word = match s {
                "." => 0,
                "!" => 0x4000,
                "F" => 0x2000,
                "f" => 100,
                _ => {
                    let digits = s.bytes().take_while(|b| b.is_ascii_digit()).count();
                    let mut off: u32 = s[..digits].parse().ok()?;
                    if minor > 0 {
                        off >>= 3;
                    }
                    if off > 0x1fff {
                        return None;
                    }
                    let mut w = off as u16;
                    for c in s[digits..].bytes() {
                        match c {
                            b'!' => w |= 0x4000,
                            b'+' => w |= 0x2000,
                            _ => return None,
                        }
                    }
                    w
                }
            };
            v.frag = Some(word);
        }
        Field::IpId => v.id = Some(int(s)?),
        Field::IpSum => v.sum = Some(int(s)?),
        Field::IpProto => {
            v.proto = Some(match s {
                "T" => 6,
                "U" => 17,
                "I" => 1,
                // A number, or a name Click knows (`!proto icmp`).
                _ => int(s).or_else(|| paraclick_elements::iproute::encap::parse_proto(s).ok())?,
            })
        }
        Field::IpHl => v.hl = Some(int::<u32>(s).filter(|h| *h <= 60)?),
        Field::IpLen => v.len = Some(int::<u32>(s).filter(|l| *l <= 0xffff)?),
        Field::Sport => v.sport = Some(int(s)?),
        Field::Dport => v.dport = Some(int(s)?),
        Field::TcpSeq => v.tcp_seq = Some(int(s)?),
        Field::TcpAck => v.tcp_ack = Some(int(s)?),
        Field::TcpOff => v.tcp_off = Some(int::<u32>(s).filter(|o| *o <= 60)?),
        Field::TcpFlags => {
            v.tcp_flags = Some(if s == "." {
                0
            } else if s.as_bytes().first()?.is_ascii_digit() {
                int::<u16>(s).filter(|f| *f < 0x1000)?
            } else {
                let mut w = 0;
                for c in s.bytes() {
                    w |= tcp_flag_bit(c)?;
                }
                w
            })
        }
        Field::TcpWindow => v.tcp_window = Some(int(s)?),
        Field::TcpUrp => v.tcp_urp = Some(int(s)?),
        Field::UdpLen => v.udp_len = Some(int(s)?),
        Field::IcmpType | Field::IcmpTypeName => {
            v.icmp_type = Some(crate::ipsumdump_ext::parse_icmp_type(s)?)
        }
        // A code name needs the type: readers give code fields last.
        Field::IcmpCode | Field::IcmpCodeName => {
            v.icmp_code = Some(crate::ipsumdump_ext::parse_icmp_code(s, v.icmp_type)?)
        }
        Field::PayloadLen => v.payload_len = Some(int::<u32>(s).filter(|l| *l <= 0xffff)?),
        Field::Count => v.count = Some(int(s)?),
        Field::Direction | Field::Link | Field::Paint => {
            v.paint = Some(match s {
                ">" | "L" => 0,
                "<" | "R" | "X" => 1,
                _ => int(s)?,
            })
        }
        Field::IpOpt => v.ip_opt = Some(crate::ipsumdump_ext::parse_ip_opts(s)?),
        // tcp_ntopt and tcp_sack hold part of the options: enough to build.
        // A line with tcp_opt and a part of it keeps the whole.
        Field::TcpOpt => v.tcp_opt = Some(crate::ipsumdump_ext::parse_tcp_opts(s)?),
        Field::TcpNtopt | Field::TcpSack => {
            let o = crate::ipsumdump_ext::parse_tcp_opts(s)?;
            v.tcp_opt.get_or_insert(o);
        }
        Field::IcmpFlowid => v.icmp_id = Some(int(s)?),
        Field::IcmpSeq => v.icmp_seq = Some(int(s)?),
        Field::IcmpNextmtu => v.icmp_nextmtu = Some(int(s)?),
        Field::Payload => v.payload = Some(crate::ipsumdump_ext::unquote(s)?),
        Field::PayloadMd5 => {
            crate::ipsumdump_ext::parse_md5_ascii(s)?;
        }
        Field::PayloadMd5Hex => {
            crate::ipsumdump_ext::parse_md5_hex(s)?;
        }
        Field::Aggregate => v.aggregate = Some(int(s)?),
        Field::FirstTimestamp => v.first_ts = Some(Timestamp::parse(s)?),
        Field::Ip6Src => v.src6 = Some(s.parse().ok()?),
        Field::Ip6Dst => v.dst6 = Some(s.parse().ok()?),
        Field::IpCaptureLen | Field::EthSrc | Field::EthDst | Field::WireLen => {}
    }
    Some(())
}

/// A default flow (FLOWID keyword, `!flowid` line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlowId {
    pub src: Ipv4Addr,
    pub sport: u16,
    pub dst: Ipv4Addr,
    pub dport: u16,
    pub proto: Option<u8>,
}

impl FlowId {
    /// Parses `SRC SPORT DST DPORT [PROTO]`.
    pub(crate) fn parse(s: &str) -> Option<FlowId> {
        let w: Vec<&str> = s.split_whitespace().collect();
        if w.len() != 4 && w.len() != 5 {
            return None;
        }
        let mut v = Values::default();
        let proto = match w.get(4) {
            Some(p) => {
                parse_value(Field::IpProto, p, &mut v, 3)?;
                v.proto
            }
            None => None,
        };
        Some(FlowId {
            src: w[0].parse().ok()?,
            sport: int(w[1])?,
            dst: w[2].parse().ok()?,
            dport: int(w[3])?,
            proto,
        })
    }
}

/// How packets are built from lines.
pub(crate) struct BuildOpts {
    pub checksum: bool,
    pub default_proto: u8,
    pub flowid: Option<FlowId>,
}

/// Builds the IPv4 packet a line describes. `None` if the packet pool is
/// exhausted.
pub(crate) fn build(v: &Values, o: &BuildOpts) -> Option<Packet> {
    if v.src6.is_some() || v.dst6.is_some() {
        return build6(v, o);
    }
    let has_tcp = v.tcp_seq.is_some()
        || v.tcp_ack.is_some()
        || v.tcp_off.is_some()
        || v.tcp_flags.is_some()
        || v.tcp_window.is_some()
        || v.tcp_urp.is_some()
        || v.tcp_opt.is_some();
    let has_icmp = v.icmp_type.is_some() || v.icmp_code.is_some();
    let proto = v
        .proto
        .or(o.flowid.and_then(|f| f.proto))
        .unwrap_or(if has_tcp {
            6
        } else if v.udp_len.is_some() {
            17
        } else if has_icmp {
            1
        } else {
            o.default_proto
        });
    let opt_hl = 20 + v.ip_opt.as_ref().map_or(0, Vec::len) as u32;
    let hl = v.hl.map_or(opt_hl, |h| ((h + 3) & !3).clamp(20, 60)) as usize;
    let frag = v.frag.unwrap_or(0);
    let first_frag = frag & 0x1fff == 0;
    let thl = match (first_frag, proto) {
        (false, _) => 0,
        (true, 6) => {
            let opt_off = 20 + v.tcp_opt.as_ref().map_or(0, Vec::len) as u32;
            v.tcp_off.map_or(opt_off, |t| ((t + 3) & !3).clamp(20, 60)) as usize
        }
        (true, 17) | (true, 1) => 8,
        _ => 0,
    };
    let plen = v.payload.as_ref().map(Vec::len);
    // The payload follows TCP and UDP headers; for other protocols (ICMP)
    // it starts right after the IP header, as ToIPSummaryDump prints it.
    let after_trans = first_frag && matches!(proto, 6 | 17);
    let payload_at = if after_trans { hl + thl } else { hl };
    let ip_len = match (v.len, v.payload_len, v.udp_len) {
        (Some(l), _, _) => l as usize,
        (None, None, _) if plen.is_some() => payload_at + plen.unwrap_or(0),
        (None, Some(p), _) => hl + thl + p as usize,
        (None, None, Some(u)) if proto == 17 && first_frag => hl + usize::from(u).max(8),
        _ => hl + thl,
    }
    .min(0xffff);
    let headers = hl + thl;
    let data_len = if o.checksum {
        ip_len.max(hl)
    } else {
        ip_len
            .min(headers.max(payload_at + plen.unwrap_or(0)))
            .max(hl)
    };
    let mut h = [0u8; 120];
    if let Some(opt) = &v.ip_opt {
        let n = opt.len().min(hl - 20);
        h[20..20 + n].copy_from_slice(&opt[..n]);
    }
    let (src, dst) = (
        v.src
            .or(o.flowid.map(|f| f.src))
            .unwrap_or(Ipv4Addr::UNSPECIFIED),
        v.dst
            .or(o.flowid.map(|f| f.dst))
            .unwrap_or(Ipv4Addr::UNSPECIFIED),
    );
    h[0] = 0x40 | (hl / 4) as u8;
    h[1] = v
        .tos
        .unwrap_or_else(|| (v.dscp.unwrap_or(0) << 2) | v.ecn.unwrap_or(0));
    if v.tos.is_some() {
        if let Some(d) = v.dscp {
            h[1] = (h[1] & 3) | (d << 2);
        }
        if let Some(e) = v.ecn {
            h[1] = (h[1] & !3) | e;
        }
    }
    h[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    h[4..6].copy_from_slice(&v.id.unwrap_or(0).to_be_bytes());
    h[6..8].copy_from_slice(&frag.to_be_bytes());
    h[8] = v.ttl.unwrap_or(100);
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let t = &mut h[hl..hl + thl];
    let sport = v.sport.or(o.flowid.map(|f| f.sport)).unwrap_or(0);
    let dport = v.dport.or(o.flowid.map(|f| f.dport)).unwrap_or(0);
    match (thl > 0, proto) {
        (true, 6) => {
            t[0..2].copy_from_slice(&sport.to_be_bytes());
            t[2..4].copy_from_slice(&dport.to_be_bytes());
            t[4..8].copy_from_slice(&v.tcp_seq.unwrap_or(0).to_be_bytes());
            t[8..12].copy_from_slice(&v.tcp_ack.unwrap_or(0).to_be_bytes());
            let flags = v.tcp_flags.unwrap_or(0);
            t[12] = ((thl / 4) as u8) << 4 | ((flags >> 8) & 1) as u8;
            t[13] = flags as u8;
            t[14..16].copy_from_slice(&v.tcp_window.unwrap_or(0).to_be_bytes());
            t[18..20].copy_from_slice(&v.tcp_urp.unwrap_or(0).to_be_bytes());
            if let Some(opt) = &v.tcp_opt {
                let n = opt.len().min(thl - 20);
                t[20..20 + n].copy_from_slice(&opt[..n]);
            }
        }
        (true, 17) => {
            t[0..2].copy_from_slice(&sport.to_be_bytes());
            t[2..4].copy_from_slice(&dport.to_be_bytes());
            let ulen = v
                .udp_len
                .unwrap_or(ip_len.saturating_sub(hl).min(0xffff) as u16);
            t[4..6].copy_from_slice(&ulen.to_be_bytes());
        }
        (true, 1) => {
            t[0] = v.icmp_type.unwrap_or(0);
            t[1] = v.icmp_code.unwrap_or(0);
            if let Some(id) = v.icmp_id {
                t[4..6].copy_from_slice(&id.to_be_bytes());
            }
            if let Some(x) = v.icmp_seq.or(v.icmp_nextmtu) {
                t[6..8].copy_from_slice(&x.to_be_bytes());
            }
        }
        _ => {}
    }
    let mut p = Packet::zeroed(data_len)?;
    {
        let d = p.data_mut();
        let n = headers.min(data_len);
        d[..n].copy_from_slice(&h[..n]);
        if let Some(pl) = &v.payload {
            let end = (payload_at + pl.len()).min(data_len);
            if end > payload_at {
                d[payload_at..end].copy_from_slice(&pl[..end - payload_at]);
            }
        }
        let mut iph = Ipv4Header::new_unchecked(&mut d[..hl]);
        // Without CHECKSUM the IP checksum is Click's "garbage": zero.
        match v.sum {
            Some(s) => iph.set_checksum(s),
            None if o.checksum => iph.fill_checksum(),
            None => iph.set_checksum(0),
        }
        // Transport checksums only over a whole transport header: an IP
        // length shorter than the headers leaves it cut.
        if o.checksum && thl > 0 && data_len == ip_len && ip_len >= headers {
            let seg = &mut d[hl..ip_len];
            match proto {
                6 => TcpHeader::new_unchecked(seg).fill_checksum(src, dst),
                17 if seg.len() >= 8 => UdpHeader::new_unchecked(seg).fill_checksum(src, dst),
                1 => IcmpHeader::new_unchecked(seg).fill_checksum(),
                _ => {}
            }
        }
    }
    p.set_network_header(0, hl);
    let ts = line_timestamp(v);
    p.set_timestamp(ts);
    set_annos(&mut p, v, (ip_len - data_len.min(ip_len)) as u32);
    Some(p)
}

fn line_timestamp(v: &Values) -> Timestamp {
    if let Some(ts) = v.ts {
        ts
    } else if v.ts_sec.is_some() || v.ts_usec.is_some() {
        Timestamp(
            (v.ts_sec.unwrap_or(0) as i64).saturating_mul(1_000_000_000)
                + v.ts_usec.unwrap_or(0).min(999_999) as i64 * 1000,
        )
    } else if let Some(u) = v.ts_usec1 {
        Timestamp((u as i64).saturating_mul(1000))
    } else {
        Timestamp::ZERO
    }
}

fn set_annos(p: &mut Packet, v: &Values, extra_length: u32) {
    if let Some(t) = v.first_ts {
        paraclick_elements::standard::set_timestamp::set_first_timestamp(p, t);
    }
    let a = p.anno_mut();
    a.extra_length = extra_length;
    a.extra_packets = v.count.map_or(0, |c| c.saturating_sub(1));
    a.paint = v.paint.unwrap_or(0);
    if let Some(g) = v.aggregate {
        a.flow_hash = g;
    }
}

/// Builds the IPv6 packet a line with `ip6_src`/`ip6_dst` describes: a
/// fixed 40-byte header (hop limit from `ip_ttl`, traffic class from
/// `ip_tos`, next header from `ip_proto`) and a TCP, UDP or ICMPv6 header.
fn build6(v: &Values, o: &BuildOpts) -> Option<Packet> {
    use paraclick_packet::wire::checksum;
    let has_tcp = v.tcp_seq.is_some()
        || v.tcp_ack.is_some()
        || v.tcp_flags.is_some()
        || v.tcp_window.is_some()
        || v.tcp_opt.is_some();
    let proto = v.proto.unwrap_or(if has_tcp {
        6
    } else if v.udp_len.is_some() {
        17
    } else if v.icmp_type.is_some() {
        58
    } else {
        o.default_proto
    });
    let thl = match proto {
        6 => v
            .tcp_off
            .map_or(20 + v.tcp_opt.as_ref().map_or(0, Vec::len) as u32, |t| {
                ((t + 3) & !3).clamp(20, 60)
            }) as usize,
        17 | 58 => 8,
        _ => 0,
    };
    let plen = v.payload.as_ref().map(Vec::len);
    let ip_len = match (v.len, v.payload_len.or(plen.map(|l| l as u32))) {
        (Some(l), _) => (l as usize).max(40),
        (None, Some(p)) => 40 + thl + p as usize,
        _ => 40 + thl,
    }
    .min(40 + 0xffff);
    let headers = (40 + thl).min(ip_len);
    let data_len = if o.checksum {
        ip_len
    } else {
        ip_len.min(40 + thl + plen.unwrap_or(0))
    };
    let mut p = Packet::zeroed(data_len)?;
    let src = v.src6.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED);
    let dst = v.dst6.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED);
    {
        let d = p.data_mut();
        let tc = v.tos.unwrap_or(0);
        d[0] = 0x60 | (tc >> 4);
        d[1] = tc << 4;
        d[4..6].copy_from_slice(&((ip_len - 40) as u16).to_be_bytes());
        d[6] = proto;
        d[7] = v.ttl.unwrap_or(100);
        d[8..24].copy_from_slice(&src.octets());
        d[24..40].copy_from_slice(&dst.octets());
        let mut t = [0u8; 60];
        let sport = v.sport.unwrap_or(0);
        let dport = v.dport.unwrap_or(0);
        match proto {
            6 => {
                t[0..2].copy_from_slice(&sport.to_be_bytes());
                t[2..4].copy_from_slice(&dport.to_be_bytes());
                t[4..8].copy_from_slice(&v.tcp_seq.unwrap_or(0).to_be_bytes());
                t[8..12].copy_from_slice(&v.tcp_ack.unwrap_or(0).to_be_bytes());
                let flags = v.tcp_flags.unwrap_or(0);
                t[12] = ((thl / 4) as u8) << 4 | ((flags >> 8) & 1) as u8;
                t[13] = flags as u8;
                t[14..16].copy_from_slice(&v.tcp_window.unwrap_or(0).to_be_bytes());
                t[18..20].copy_from_slice(&v.tcp_urp.unwrap_or(0).to_be_bytes());
                if let Some(opt) = &v.tcp_opt {
                    let n = opt.len().min(thl - 20);
                    t[20..20 + n].copy_from_slice(&opt[..n]);
                }
            }
            17 => {
                t[0..2].copy_from_slice(&sport.to_be_bytes());
                t[2..4].copy_from_slice(&dport.to_be_bytes());
                let ulen = v.udp_len.unwrap_or((ip_len - 40).min(0xffff) as u16);
                t[4..6].copy_from_slice(&ulen.to_be_bytes());
            }
            58 => {
                t[0] = v.icmp_type.unwrap_or(0);
                t[1] = v.icmp_code.unwrap_or(0);
                // Echo request and reply: identifier and sequence number.
                t[4..6].copy_from_slice(&v.icmp_id.unwrap_or(0).to_be_bytes());
                t[6..8].copy_from_slice(&v.icmp_seq.unwrap_or(0).to_be_bytes());
            }
            _ => {}
        }
        let n = headers.min(data_len) - 40;
        d[40..40 + n].copy_from_slice(&t[..n]);
        if let Some(pl) = &v.payload {
            let end = (headers + pl.len()).min(data_len);
            if end > headers {
                d[headers..end].copy_from_slice(&pl[..end - headers]);
            }
        }
        let at = match proto {
            6 => Some(16),
            17 => Some(6),
            58 => Some(2),
            _ => None,
        };
        if let Some(at) = at.filter(|_| o.checksum && data_len == ip_len && ip_len >= 40 + thl) {
            // RFC 8200 pseudo-header: addresses, upper-layer length, next header.
            let len = (ip_len - 40) as u32;
            let mut ph = [0u8; 40];
            ph[..16].copy_from_slice(&src.octets());
            ph[16..32].copy_from_slice(&dst.octets());
            ph[32..36].copy_from_slice(&len.to_be_bytes());
            ph[39] = proto;
            let seg = &mut d[40..ip_len];
            let c = !checksum::combine(&[checksum::sum(&ph), checksum::sum(seg)]);
            let c = if c == 0 && proto == 17 { 0xffff } else { c };
            seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
        }
    }
    p.set_network_header(0, 40);
    p.set_timestamp(line_timestamp(v));
    set_annos(&mut p, v, (ip_len - data_len) as u32);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn names_and_synonyms() {
        assert_eq!(Field::lookup("src"), Some(Field::IpSrc));
        assert_eq!(Field::lookup("ip_dst"), Some(Field::IpDst));
        assert_eq!(Field::lookup("ts"), Some(Field::Timestamp));
        assert_eq!(Field::lookup("len"), Some(Field::IpLen));
        assert_eq!(Field::lookup("proto"), Some(Field::IpProto));
        assert_eq!(Field::lookup("tcp seq"), Some(Field::TcpSeq));
        assert_eq!(Field::lookup("length"), Some(Field::IpLen));
        assert_eq!(Field::lookup("bogus"), None);
        assert_eq!(Field::lookup("tcp_bogus"), None);
        assert_eq!(
            parse_fields("ts src \"tcp flags\" payload_len").unwrap(),
            vec![
                Field::Timestamp,
                Field::IpSrc,
                Field::TcpFlags,
                Field::PayloadLen
            ]
        );
        assert_err(parse_fields("src frob"), "unknown field 'frob'");
        assert_eq!(
            data_line(&[Field::Timestamp, Field::IpSrc]),
            "!data timestamp ip_src\n"
        );
    }

    #[test]
    fn values_parse() {
        let mut v = Values::default();
        assert!(parse_value(Field::TcpFlags, "SA", &mut v, 3).is_some());
        assert_eq!(v.tcp_flags, Some(0x12));
        assert!(parse_value(Field::TcpFlags, "NCEUAPRSF", &mut v, 3).is_some());
        assert_eq!(v.tcp_flags, Some(0x1ff));
        assert!(parse_value(Field::TcpFlags, ".", &mut v, 3).is_some());
        assert_eq!(v.tcp_flags, Some(0));
        assert!(parse_value(Field::TcpFlags, "18", &mut v, 3).is_some());
        assert_eq!(v.tcp_flags, Some(18));
        assert!(parse_value(Field::TcpFlags, "SQ", &mut v, 3).is_none());
        assert!(parse_value(Field::IpFragoff, "1480+!", &mut v, 3).is_some());
        assert_eq!(v.frag, Some(0x6000 | 185));
        assert!(parse_value(Field::IpFragoff, "185", &mut v, 0).is_some());
        assert_eq!(v.frag, Some(185));
        assert!(parse_value(Field::IpFrag, "F", &mut v, 3).is_some());
        assert_eq!(v.frag, Some(0x2000));
        assert!(parse_value(Field::IpFragoff, "8x", &mut v, 3).is_none());
        assert!(parse_value(Field::IpProto, "U", &mut v, 3).is_some());
        assert_eq!(v.proto, Some(17));
        assert!(parse_value(Field::IpProto, "256", &mut v, 3).is_none());
        assert!(parse_value(Field::IpSrc, "1.2.3", &mut v, 3).is_none());
        assert!(parse_value(Field::IpTtl, "-1", &mut v, 3).is_none());
        assert!(parse_value(Field::Sport, "65536", &mut v, 3).is_none());
        // Click's integers: a leading 0 is octal, 0x hexadecimal (real
        // Click reads sport 010 as 8, ts_usec 012345 as 5349).
        assert!(parse_value(Field::Sport, "010", &mut v, 3).is_some());
        assert_eq!(v.sport, Some(8));
        assert!(parse_value(Field::TsUsec, "012345", &mut v, 3).is_some());
        assert_eq!(v.ts_usec, Some(5349));
        assert!(parse_value(Field::Dport, "0x10", &mut v, 3).is_some());
        assert_eq!(v.dport, Some(16));
        assert!(parse_value(Field::Dport, "0", &mut v, 3).is_some());
        assert_eq!(v.dport, Some(0));
        assert!(parse_value(Field::IpTtl, "08", &mut v, 3).is_none());
        assert!(parse_value(Field::Direction, "<", &mut v, 3).is_some());
        assert_eq!(v.paint, Some(1));
        assert_eq!(
            FlowId::parse("1.0.0.1 10 2.0.0.2 20 U"),
            Some(FlowId {
                src: Ipv4Addr::new(1, 0, 0, 1),
                sport: 10,
                dst: Ipv4Addr::new(2, 0, 0, 2),
                dport: 20,
                proto: Some(17)
            })
        );
        assert_eq!(FlowId::parse("1.0.0.1 10 2.0.0.2"), None);
    }

    fn opts(checksum: bool) -> BuildOpts {
        BuildOpts {
            checksum,
            default_proto: 6,
            flowid: None,
        }
    }

    #[test]
    fn builds_tcp_with_checksums() {
        let v = Values {
            src: Some(Ipv4Addr::new(10, 0, 0, 1)),
            dst: Some(Ipv4Addr::new(10, 0, 0, 2)),
            sport: Some(1234),
            dport: Some(80),
            tcp_flags: Some(0x12),
            tcp_seq: Some(7),
            payload_len: Some(10),
            ..Values::default()
        };
        let p = build(&v, &opts(true)).unwrap();
        assert_eq!(p.len(), 50);
        assert_eq!(p.anno().extra_length, 0);
        let ip = Ipv4Header::new_checked(p.data()).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.total_len(), 50);
        assert_eq!(ip.ttl(), 100);
        let tcp = TcpHeader::new_checked(&p.data()[20..]).unwrap();
        assert!(tcp.verify_checksum(ip.src_addr(), ip.dst_addr()));
        assert_eq!(tcp.seq_number(), 7);
        assert_eq!(tcp.flags(), 0x12);
        // Without CHECKSUM: headers only, the rest in the extra length.
        let p = build(&v, &opts(false)).unwrap();
        assert_eq!(p.len(), 40);
        assert_eq!(p.anno().extra_length, 10);
        // ...and the IP checksum left zero, as Click leaves it.
        assert_eq!(Ipv4Header::new_unchecked(p.data()).checksum(), 0);
    }

    #[test]
    fn builds_udp_icmp_and_fragments() {
        let v = Values {
            proto: Some(17),
            len: Some(60),
            ..Values::default()
        };
        let p = build(&v, &opts(true)).unwrap();
        let ip = Ipv4Header::new_checked(p.data()).unwrap();
        let udp = UdpHeader::new_checked(ip.payload()).unwrap();
        assert_eq!(udp.len(), 40);
        assert!(udp.verify_checksum(ip.src_addr(), ip.dst_addr()));
        let v = Values {
            icmp_type: Some(8),
            ..Values::default()
        };
        let p = build(&v, &opts(true)).unwrap();
        assert_eq!(p.data()[9], 1);
        assert_eq!(p.len(), 28);
        assert!(IcmpHeader::new_checked(&p.data()[20..])
            .unwrap()
            .verify_checksum());
        // A later fragment has no transport header.
        let v = Values {
            frag: Some(185),
            len: Some(100),
            sport: Some(9),
            ..Values::default()
        };
        let p = build(&v, &opts(false)).unwrap();
        assert_eq!(p.len(), 20);
        assert_eq!(p.anno().extra_length, 80);
        // A length shorter than the headers cuts the transport header.
        let v = Values {
            len: Some(24),
            sport: Some(9),
            ..Values::default()
        };
        let p = build(&v, &opts(false)).unwrap();
        assert_eq!(p.len(), 24);
        assert_eq!(&p.data()[20..22], &9u16.to_be_bytes());
    }

    #[test]
    fn checksum_with_a_length_shorter_than_the_headers() {
        // Found by fuzzing: with CHECKSUM, an IP length that cuts the
        // transport header made the TCP/ICMP checksum write past the data.
        for (proto, len) in [(6, 20), (6, 30), (1, 22), (17, 24)] {
            let v = Values {
                proto: Some(proto),
                len: Some(len),
                ..Values::default()
            };
            let p = build(&v, &opts(true)).unwrap();
            assert_eq!(p.len(), len as usize, "proto {proto}");
            assert!(Ipv4Header::new_unchecked(p.data()).verify_checksum());
        }
    }
}
