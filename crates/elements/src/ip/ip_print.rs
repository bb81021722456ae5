//! # IPPrint
//!
//! IPPrint([LABEL, keywords CONTENTS, PAYLOAD, MAXLENGTH, ID, TTL, TOS, LENGTH, TIMESTAMP, AGGREGATE, PAINT, ETHER, SWAP, OUTFILE, ACTIVE])
//!
//! Pretty-prints IP packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Expects IP packets with their IP header annotation set (downstream of
//! CheckIPHeader or MarkIPHeader; packets without one pass unprinted).
//! Prints one line per packet, tcpdump-like, to standard error (or
//! OUTFILE), preceded by `LABEL: ` if LABEL is not empty:
//!
//!     LABEL: TIMESTAMP: [id ID ][ttl TTL ][tos TOS ][length LEN ]LINE[ (frag ID:LEN@OFF[+])]
//!
//! where LINE is, for TCP,
//! `SRC.SPORT > DST.DPORT: FLAGS SEQ:END(SEQLEN,PACKETLEN,IPLEN)[ ack ACK] win WIN`
//! (FLAGS from `S`, `F`, `R`, `P`, or `.` if none of them; SEQLEN counts SYN
//! and FIN), for UDP `SRC.SPORT > DST.DPORT: udp ULEN`, for ICMP
//! `SRC > DST: icmp echo (ID, SEQ)`, `icmp echo-reply (ID, SEQ)`,
//! `icmp ADDR unreachable CODE[ PROTO[/PORT]]`, `icmp TYPE[ CODE]`, and
//! otherwise `SRC > DST: ip-proto-N`. Later fragments print `tcp`, `udp` or
//! `icmp` after the addresses; headers cut short print `truncated-tcp` (and
//! so on), a network header under 20 bytes `truncated-ip`.
//!
//! Keywords:
//! - `LABEL` (string, default empty): the line prefix.
//! - `CONTENTS` (`NONE`, `HEX`, `ASCII`, or a boolean; default NONE): also
//!   print the packet data, from the start of the packet, on following
//!   lines (hex: 4-byte groups, 24 bytes a line; ASCII: 8-byte groups, 48 a
//!   line, `.` for unprintable bytes).
//! - `PAYLOAD` (same values): like CONTENTS, but print the payload after
//!   the TCP or UDP header (the transport header on for other protocols).
//!   Give at most one of CONTENTS and PAYLOAD.
//! - `MAXLENGTH` (integer, default 1500): at most this many data bytes;
//!   -1 prints them all. `NBYTES` is an old name for it.
//! - `ID`, `TTL`, `TOS`, `LENGTH` (booleans, default false): print the IP
//!   ID, TTL, TOS or total length field.
//! - `TIMESTAMP` (boolean, default true): print the timestamp annotation.
//! - `AGGREGATE` (boolean, default false): print the flow hash annotation
//!   (paraclick's nearest to Click's aggregate annotation), as `#N: `.
//! - `PAINT` (boolean, default false): print the paint annotation
//!   (`paint N: `, or `#AGG.N: ` with AGGREGATE).
//! - `ETHER` (boolean, default false): print the Ethernet source and
//!   destination before the IP line, if the link header is there.
//! - `SWAP` (boolean, default false): byte-swap ICMP echo identifiers and
//!   sequence numbers (some systems write them in host byte order). The
//!   values are otherwise read in network byte order (Click reads them in
//!   host order, which on little-endian machines means SWAP true here).
//! - `OUTFILE` (file name): write the lines to this file instead.
//!   The file is created (or truncated) when the router starts running,
//!   not by `paraclick check` nor by a configuration that fails to build;
//!   its directory must exist.
//! - `ACTIVE` (boolean, default true): if false, print nothing.
//!
//! Handlers:
//! - `active` (read/write): the ACTIVE setting.
//!
//! Example:
//!
//!     FromDump(trace.pcap) -> Strip(14) -> CheckIPHeader -> IPPrint(in, TTL true) -> Discard;
//!     // in: 1000000000.000001: ttl 64 10.0.0.1.1234 > 10.0.0.2.80: S 0:1(1,40,40) win 512

use crate::outfile::OutFile;
use paraclick_packet::wire::{ip_proto, EtherAddr, Ipv4Header};
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, Verdict};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};

/// How packet data is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dump {
    None,
    Hex,
    Ascii,
}

/// What IPPrint prints (its configuration, apart from where).
#[derive(Clone, Debug)]
pub struct PrintConfig {
    pub label: String,
    pub dump: Dump,
    /// Dump the payload after the transport header, not the packet.
    pub payload: bool,
    /// Maximum data bytes; negative: all.
    pub maxlength: i64,
    pub id: bool,
    pub ttl: bool,
    pub tos: bool,
    pub length: bool,
    pub timestamp: bool,
    pub aggregate: bool,
    pub paint: bool,
    pub ether: bool,
    pub swap: bool,
}

impl Default for PrintConfig {
    fn default() -> Self {
        PrintConfig {
            label: String::new(),
            dump: Dump::None,
            payload: false,
            maxlength: 1500,
            id: false,
            ttl: false,
            tos: false,
            length: false,
            timestamp: true,
            aggregate: false,
            paint: false,
            ether: false,
            swap: false,
        }
    }
}

fn icmp_type_name(t: u8) -> Option<&'static str> {
    Some(match t {
        0 => "echo-reply",
        3 => "unreachable",
        4 => "sourcequench",
        5 => "redirect",
        8 => "echo",
        9 => "routeradvert",
        10 => "routersolicit",
        11 => "timeexceeded",
        12 => "parameterproblem",
        13 => "timestamp",
        14 => "timestamp-reply",
        15 => "inforeq",
        16 => "inforeq-reply",
        17 => "maskreq",
        18 => "maskreq-reply",
        _ => return None,
    })
}

fn icmp_code_name(t: u8, c: u8) -> Option<&'static str> {
    Some(match (t, c) {
        (3, 0) => "net",
        (3, 1) => "host",
        (3, 2) => "protocol",
        (3, 3) => "port",
        (3, 4) => "needfrag",
        (3, 5) => "srcroutefail",
        (3, 6) => "netunknown",
        (3, 7) => "hostunknown",
        (3, 8) => "isolated",
        (3, 9) => "netprohibited",
        (3, 10) => "hostprohibited",
        (3, 11) => "tosnet",
        (3, 12) => "toshost",
        (3, 13) => "filterprohibited",
        (3, 14) => "hostprecedence",
        (3, 15) => "precedencecutoff",
        (5, 0) => "net",
        (5, 1) => "host",
        (5, 2) => "tosnet",
        (5, 3) => "toshost",
        (11, 0) => "transit",
        (11, 1) => "reassembly",
        (12, 0) => "erroratptr",
        (12, 1) => "missingopt",
        (12, 2) => "length",
        _ => return None,
    })
}

fn proto_name(p: u8) -> Option<&'static str> {
    Some(match p {
        ip_proto::ICMP => "icmp",
        ip_proto::IGMP => "igmp",
        ip_proto::IPIP => "ipip",
        ip_proto::TCP => "tcp",
        ip_proto::UDP => "udp",
        _ => return None,
    })
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The transport part of the line. `t` holds the transport header bytes,
/// `tl` how many of them belong to the datagram (may be negative when the
/// header lengths are nonsense; `tl <= t.len()` always).
struct Line<'a> {
    c: &'a PrintConfig,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    first: bool,
    t: &'a [u8],
    tl: i64,
}

impl Line<'_> {
    fn tcp(&self, s: &mut String, ip_len: i64, hl: i64, packet_len: usize) {
        let t = self.t;
        if self.tl < 4 || !self.first {
            let what = if self.first { "truncated-tcp" } else { "tcp" };
            let _ = write!(s, "{} > {}: {what}", self.src, self.dst);
            return;
        }
        let _ = write!(
            s,
            "{}.{} > {}.{}: ",
            self.src,
            be16(t, 0),
            self.dst,
            be16(t, 2)
        );
        if self.tl < 14 {
            s.push_str("truncated-tcp");
            return;
        }
        let flags = t[13];
        let mut seqlen = ip_len - hl - i64::from(t[12] >> 4) * 4;
        if flags & 0x02 != 0 {
            s.push('S');
            seqlen += 1;
        }
        if flags & 0x01 != 0 {
            s.push('F');
            seqlen += 1;
        }
        if flags & 0x04 != 0 {
            s.push('R');
        }
        if flags & 0x08 != 0 {
            s.push('P');
        }
        if flags & 0x0f == 0 {
            s.push('.');
        }
        let seq = be32(t, 4);
        let end = seq.wrapping_add(seqlen as u32);
        let _ = write!(s, " {seq}:{end}({seqlen},{packet_len},{ip_len})");
        if flags & 0x10 != 0 {
            let _ = write!(s, " ack {}", be32(t, 8));
        }
        if self.tl < 16 {
            s.push_str("truncated-tcp");
            return;
        }
        let _ = write!(s, " win {}", be16(t, 14));
    }

    fn udp(&self, s: &mut String) {
        let t = self.t;
        if self.tl < 4 || !self.first {
            let what = if self.first { "truncated-udp" } else { "udp" };
            let _ = write!(s, "{} > {}: {what}", self.src, self.dst);
            return;
        }
        let _ = write!(
            s,
            "{}.{} > {}.{}: ",
            self.src,
            be16(t, 0),
            self.dst,
            be16(t, 2)
        );
        if self.tl < 8 {
            s.push_str("truncated-udp");
        } else {
            let _ = write!(s, "udp {}", be16(t, 4));
        }
    }

    fn icmp(&self, s: &mut String) {
        let t = self.t;
        let _ = write!(s, "{} > {}: ", self.src, self.dst);
        if !self.first {
            s.push_str("icmp");
            return;
        }
        if self.tl < 2 {
            s.push_str("truncated-icmp");
            return;
        }
        let (ty, code) = (t[0], t[1]);
        match ty {
            0 | 8 => {
                s.push_str(if ty == 0 {
                    "icmp echo-reply "
                } else {
                    "icmp echo "
                });
                if self.tl < 8 {
                    s.push_str("truncated-icmp");
                    return;
                }
                let (mut id, mut seq) = (be16(t, 4), be16(t, 6));
                if self.c.swap {
                    id = id.swap_bytes();
                    seq = seq.swap_bytes();
                }
                let _ = write!(s, "({id}, {seq})");
            }
            3 => {
                let code_s = match icmp_code_name(3, code) {
                    Some(n) => n.to_string(),
                    None => format!("code {code}"),
                };
                let eiph_len = self.tl - 8;
                if eiph_len < 20 {
                    let _ = write!(s, "icmp unreachable {code_s} truncated-icmp");
                    return;
                }
                let e = &t[8..];
                let edst = Ipv4Addr::new(e[16], e[17], e[18], e[19]);
                let ehl = usize::from(e[0] & 0x0f) * 4;
                let eudph_len = eiph_len - ehl as i64;
                let _ = write!(s, "icmp {edst} unreachable {code_s}");
                match code {
                    2 => {
                        let _ = match proto_name(e[9]) {
                            Some(n) => write!(s, " {n}"),
                            None => write!(s, " {}", e[9]),
                        };
                    }
                    3 => {
                        let _ = match proto_name(e[9]) {
                            Some(n) => write!(s, " {n}"),
                            None => write!(s, " protocol {}", e[9]),
                        };
                        if eudph_len < 4 {
                            s.push_str("truncated-icmp");
                        } else {
                            let _ = write!(s, "/{}", be16(e, ehl + 2));
                        }
                    }
                    4 => {
                        let mtu = be16(t, 6);
                        if mtu != 0 {
                            let _ = write!(s, " (mtu {mtu})");
                        }
                    }
                    _ => {}
                }
            }
            _ => {
                s.push_str("icmp ");
                match icmp_type_name(ty) {
                    Some(n) => s.push_str(n),
                    None => {
                        let _ = write!(s, "type {ty}");
                    }
                }
                match icmp_code_name(ty, code) {
                    Some(n) => {
                        let _ = write!(s, " {n}");
                    }
                    None if code != 0 => {
                        let _ = write!(s, " code {code}");
                    }
                    None => {}
                }
            }
        }
    }
}

fn dump(s: &mut String, data: &[u8], how: Dump) {
    match how {
        Dump::None => {}
        Dump::Hex => {
            for (i, b) in data.iter().enumerate() {
                if i % 24 == 0 {
                    s.push_str("\n  ");
                } else if i % 4 == 0 {
                    s.push(' ');
                }
                let _ = write!(s, "{b:02x}");
            }
        }
        Dump::Ascii => {
            for (i, &b) in data.iter().enumerate() {
                if i % 48 == 0 {
                    s.push_str("\n  ");
                } else if i % 8 == 0 {
                    s.push(' ');
                }
                s.push(if (32..=126).contains(&b) {
                    b as char
                } else {
                    '.'
                });
            }
        }
    }
}

/// The text IPPrint prints for `p` (without the final newline), or `None`
/// for a packet without an IP header annotation.
pub fn format_packet(c: &PrintConfig, p: &Packet) -> Option<String> {
    let nh = p.network_header()?;
    let mut s = String::with_capacity(96);
    if !c.label.is_empty() {
        let _ = write!(s, "{}: ", c.label);
    }
    if c.timestamp {
        let _ = write!(s, "{}: ", p.timestamp());
    }
    let a = p.anno();
    if c.aggregate {
        let _ = write!(s, "#{}", a.flow_hash);
    }
    if c.paint {
        let _ = write!(s, "{}{}", if c.aggregate { "." } else { "paint " }, a.paint);
    }
    if c.aggregate || c.paint {
        s.push_str(": ");
    }
    if c.ether {
        if let (Some(m), Some(n), Some(mh)) = (
            p.mac_header_offset(),
            p.network_header_offset(),
            p.mac_header(),
        ) {
            if m + 14 <= n && mh.len() >= 14 {
                let dst = EtherAddr::from_slice(&mh[0..6])?;
                let src = EtherAddr::from_slice(&mh[6..12])?;
                let _ = write!(s, "{src} > {dst}: ");
            }
        }
    }
    if nh.len() < 20 {
        s.push_str("truncated-ip");
        return Some(s);
    }
    let h = Ipv4Header::new_unchecked(&nh[..20]);
    let ip_len = i64::from(h.total_len());
    let hl = h.header_len() as i64;
    let payload_len = ip_len - hl;
    // The transport header and how much of it the datagram holds.
    let t = p.transport_header().unwrap_or(&[]);
    let tl = (t.len() as i64).min(payload_len);
    if c.id {
        let _ = write!(s, "id {} ", h.ident());
    }
    if c.ttl {
        let _ = write!(s, "ttl {} ", h.ttl());
    }
    if c.tos {
        let _ = write!(s, "tos {} ", h.tos());
    }
    if c.length {
        let _ = write!(s, "length {ip_len} ");
    }
    let first = h.frag_offset_units() == 0;
    let line = Line {
        c,
        src: h.src_addr(),
        dst: h.dst_addr(),
        first,
        t,
        tl,
    };
    match h.protocol() {
        ip_proto::TCP => line.tcp(&mut s, ip_len, hl, p.len()),
        ip_proto::UDP => line.udp(&mut s),
        ip_proto::ICMP => line.icmp(&mut s),
        other => {
            let _ = write!(s, "{} > {}: ip-proto-{other}", line.src, line.dst);
        }
    }
    if h.is_fragment() {
        let _ = write!(
            s,
            " (frag {}:{payload_len}@{}{})",
            h.ident(),
            h.frag_offset(),
            if h.more_frags() { "+" } else { "" }
        );
    }
    if c.dump != Dump::None {
        // Where the dump starts, from the start of the packet data.
        let start = if c.payload {
            let toff = p.transport_header_offset().unwrap_or(0).max(0) as usize;
            let skip = match h.protocol() {
                ip_proto::TCP if first => t.get(12).map_or(20, |b| usize::from(b >> 4) * 4),
                ip_proto::UDP if first => 8,
                _ => 0,
            };
            toff + skip
        } else {
            0
        };
        let data = p.data().get(start..).unwrap_or(&[]);
        let n = if c.maxlength < 0 {
            data.len()
        } else {
            data.len().min(c.maxlength as usize)
        };
        dump(&mut s, &data[..n], c.dump);
    }
    Some(s)
}

pub struct IPPrint {
    cfg: PrintConfig,
    active: AtomicBool,
    outfile: Option<OutFile>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::action("IPPrint", "1/1", "a", make)
        .shared("a printer: one output, in packet order, for all flows")
}

/// CONTENTS: `NONE`, `HEX`, `ASCII` (any case) or a boolean.
impl FromArg for Dump {
    const WHAT: &'static str = "NONE, HEX or ASCII";
    fn from_arg(v: &str, env: &ArgEnv) -> Result<Dump, String> {
        if let Ok(b) = bool::from_arg(v, env) {
            return Ok(if b { Dump::Hex } else { Dump::None });
        }
        match v.trim().to_ascii_uppercase().as_str() {
            "NONE" | "NO" | "FALSE" => Ok(Dump::None),
            "HEX" | "YES" | "TRUE" => Ok(Dump::Hex),
            "ASCII" => Ok(Dump::Ascii),
            other => Err(format!(
                "bad value '{other}'; should be 'NONE', 'HEX', or 'ASCII'"
            )),
        }
    }
    fn placeholder() -> Dump {
        Dump::None
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IPPrint, String> {
    let mut a = cx.args();
    let mut c = PrintConfig {
        label: a.read_p::<String>("LABEL").unwrap_or_default(),
        ..PrintConfig::default()
    };
    let contents = a.read::<Dump>("CONTENTS").unwrap_or(Dump::None);
    let payload = a.read::<Dump>("PAYLOAD").unwrap_or(Dump::None);
    let nbytes = a.read::<i64>("NBYTES");
    c.maxlength = a.read::<i64>("MAXLENGTH").or(nbytes).unwrap_or(1500);
    c.ether = a.read::<bool>("ETHER").unwrap_or(false);
    c.id = a.read::<bool>("ID").unwrap_or(false);
    c.timestamp = a.read::<bool>("TIMESTAMP").unwrap_or(true);
    c.paint = a.read::<bool>("PAINT").unwrap_or(false);
    c.tos = a.read::<bool>("TOS").unwrap_or(false);
    c.ttl = a.read::<bool>("TTL").unwrap_or(false);
    c.swap = a.read::<bool>("SWAP").unwrap_or(false);
    c.length = a.read::<bool>("LENGTH").unwrap_or(false);
    c.aggregate = a.read::<bool>("AGGREGATE").unwrap_or(false);
    let active = a.read::<bool>("ACTIVE").unwrap_or(true);
    let outfile = a.read::<String>("OUTFILE");
    a.complete()?;
    match (contents, payload) {
        (Dump::None, Dump::None) => {}
        (d, Dump::None) => c.dump = d,
        (Dump::None, d) => {
            c.dump = d;
            c.payload = true;
        }
        _ => return Err("specify at most one of PAYLOAD and CONTENTS".into()),
    }
    // Opened when the router runs: a check or a rejected configuration
    // leaves the file alone.
    let outfile = outfile.map(|f| OutFile::new(f, false)).transpose()?;
    Ok(IPPrint {
        cfg: c,
        active: AtomicBool::new(active),
        outfile,
    })
}

impl Action for IPPrint {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::rw(
        "active",
        |e, _| e.active.load(Ordering::Relaxed).to_string(),
        |e, v, hx| {
            e.active.store(hx.arg(v)?, Ordering::Relaxed);
            Ok(())
        },
    )];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if self.outfile.is_some() && !ix.checking() {
            ix.schedule_after(0, std::time::Duration::ZERO);
        }
        Ok(())
    }

    /// The router runs: OUTFILE is opened (created or truncated).
    fn run_timer(&self, cx: &mut Cx<'_>, _timer: usize) {
        if let Some(f) = &self.outfile {
            f.start(cx.element_name());
        }
    }

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        if !self.active.load(Ordering::Relaxed) {
            return Verdict::Out(0);
        }
        if let Some(mut line) = format_packet(&self.cfg, p) {
            line.push('\n');
            match &self.outfile {
                Some(f) => f.write(cx.element_name(), line.as_bytes()),
                None => {
                    let _ = std::io::stderr().lock().write_all(line.as_bytes());
                }
            }
        }
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::{format_packet, Dump, PrintConfig};
    use crate::test_kit::*;
    use paraclick_packet::wire::ip_proto;
    use paraclick_packet::{Packet, Timestamp};

    fn cfg() -> PrintConfig {
        PrintConfig::default()
    }

    fn stamped(d: &[u8]) -> Packet {
        let mut p = marked(d);
        p.set_timestamp(Timestamp::from_parts(1, 20_000));
        p
    }

    fn line(c: &PrintConfig, d: &[u8]) -> String {
        format_packet(c, &stamped(d)).unwrap()
    }

    #[test]
    fn tcp_lines_as_in_clicks_test() {
        // Click's IPPrint-01 test: headers only, IP lengths larger than the
        // packets (ip_hl 40 means 20 bytes of options).
        let mut d = Ip::new("1.0.0.1", "1.0.0.2", 0)
            .options(&[1; 20])
            .tcp(10, 20, 0, 0, 0x10, 0)
            .bytes();
        d[2..4].copy_from_slice(&1500u16.to_be_bytes());
        assert_eq!(
            line(&cfg(), &d),
            "1.000020: 1.0.0.1.10 > 1.0.0.2.20: . 0:1440(1440,60,1500) ack 0 win 0"
        );
        let mut d = Ip::new("1.0.0.2", "1.0.0.3", 0)
            .tcp(20, 30, 0, 0, 0x12, 0)
            .bytes();
        d[2..4].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(
            line(&cfg(), &d),
            "1.000020: 1.0.0.2.20 > 1.0.0.3.30: S 0:961(961,40,1000) ack 0 win 0"
        );
        let mut d = Ip::new("1.0.0.3", "1.0.0.4", 0)
            .tcp_full(30, 40, 0, 0, 0x03, 0, &[1; 20], &[])
            .bytes();
        d[2..4].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(
            line(&cfg(), &d),
            "1.000020: 1.0.0.3.30 > 1.0.0.4.40: SF 0:942(942,60,1000) win 0"
        );
    }

    #[test]
    fn tcp_flags_seq_ack() {
        let d = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp_full(1234, 80, 4_294_967_290, 77, 0x1c, 512, &[], b"0123456789")
            .bytes();
        let c = PrintConfig {
            timestamp: false,
            label: "in".into(),
            ..cfg()
        };
        assert_eq!(
            line(&c, &d),
            "in: 10.0.0.1.1234 > 10.0.0.2.80: RP 4294967290:4(10,50,50) ack 77 win 512"
        );
    }

    #[test]
    fn prefixes_in_order() {
        let d = Ip::new("1.0.0.1", "1.0.0.2", 9)
            .tos(3)
            .ttl(17)
            .id(4321)
            .payload(b"abc")
            .bytes();
        let c = PrintConfig {
            label: "L".into(),
            id: true,
            ttl: true,
            tos: true,
            length: true,
            ..cfg()
        };
        assert_eq!(
            line(&c, &d),
            "L: 1.000020: id 4321 ttl 17 tos 3 length 23 1.0.0.1 > 1.0.0.2: ip-proto-9"
        );
        let mut p = stamped(&d);
        p.anno_mut().paint = 5;
        p.anno_mut().flow_hash = 99;
        let c = PrintConfig {
            timestamp: false,
            paint: true,
            ..cfg()
        };
        assert_eq!(
            format_packet(&c, &p).unwrap(),
            "paint 5: 1.0.0.1 > 1.0.0.2: ip-proto-9"
        );
        let c = PrintConfig {
            timestamp: false,
            paint: true,
            aggregate: true,
            ..cfg()
        };
        assert_eq!(
            format_packet(&c, &p).unwrap(),
            "#99.5: 1.0.0.1 > 1.0.0.2: ip-proto-9"
        );
    }

    #[test]
    fn udp_and_fragments() {
        let c = PrintConfig {
            timestamp: false,
            ..cfg()
        };
        let d = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .udp(5353, 53, b"query")
            .bytes();
        assert_eq!(line(&c, &d), "10.0.0.1.5353 > 10.0.0.2.53: udp 13");
        let first = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .udp(1, 2, &[0; 16])
            .id(7)
            .frag(0x2000)
            .bytes();
        assert_eq!(
            line(&c, &first),
            "10.0.0.1.1 > 10.0.0.2.2: udp 24 (frag 7:24@0+)"
        );
        let later = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .id(7)
            .frag(3)
            .payload(&[0; 8])
            .bytes();
        assert_eq!(line(&c, &later), "10.0.0.1 > 10.0.0.2: udp (frag 7:8@24)");
        let later_tcp = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .id(8)
            .frag(0x2000 | 185)
            .payload(&[0; 8])
            .bytes();
        assert_eq!(
            line(&c, &later_tcp),
            "10.0.0.1 > 10.0.0.2: tcp (frag 8:8@1480+)"
        );
    }

    #[test]
    fn truncated_headers() {
        let c = PrintConfig {
            timestamp: false,
            ..cfg()
        };
        let udp3 = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .payload(&[0, 1, 0])
            .bytes();
        assert_eq!(line(&c, &udp3), "10.0.0.1 > 10.0.0.2: truncated-udp");
        let udp6 = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::UDP)
            .payload(&[0, 1, 0, 2, 0, 0])
            .bytes();
        assert_eq!(line(&c, &udp6), "10.0.0.1.1 > 10.0.0.2.2: truncated-udp");
        let tcp10 = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .payload(&[0, 1, 0, 2, 0, 0, 0, 0, 0, 0])
            .bytes();
        assert_eq!(line(&c, &tcp10), "10.0.0.1.1 > 10.0.0.2.2: truncated-tcp");
        let tcp15 = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::TCP)
            .payload(&[0, 1, 0, 2, 0, 0, 0, 9, 0, 0, 0, 5, 0x50, 0x10, 0])
            .bytes();
        assert_eq!(
            line(&c, &tcp15),
            "10.0.0.1.1 > 10.0.0.2.2: . 9:4(-5,35,35) ack 5truncated-tcp"
        );
        let icmp1 = Ip::new("10.0.0.1", "10.0.0.2", ip_proto::ICMP)
            .payload(&[8])
            .bytes();
        assert_eq!(line(&c, &icmp1), "10.0.0.1 > 10.0.0.2: truncated-icmp");
        assert_eq!(line(&c, &[0x45; 19]), "truncated-ip");
        // The IP length bounds the transport header.
        let mut cut = Ip::new("10.0.0.1", "10.0.0.2", 0).udp(1, 2, b"").bytes();
        cut[2..4].copy_from_slice(&23u16.to_be_bytes());
        assert_eq!(line(&c, &cut), "10.0.0.1 > 10.0.0.2: truncated-udp");
        // Nonsense lengths do not panic.
        let mut bad = Ip::new("10.0.0.1", "10.0.0.2", 0)
            .tcp(1, 2, 3, 4, 2, 5)
            .bytes();
        bad[2..4].copy_from_slice(&0u16.to_be_bytes());
        assert_eq!(line(&c, &bad), "10.0.0.1 > 10.0.0.2: truncated-tcp");
        assert!(format_packet(&c, &pkt(&bad)).is_none(), "not marked");
    }

    #[test]
    fn icmp_lines() {
        let c = PrintConfig {
            timestamp: false,
            ..cfg()
        };
        let ping = |ty| {
            Ip::new("1.0.0.1", "2.0.0.2", 0)
                .icmp(ty, 0, [0x12, 0x34, 0x00, 0x07], b"data")
                .bytes()
        };
        assert_eq!(line(&c, &ping(8)), "1.0.0.1 > 2.0.0.2: icmp echo (4660, 7)");
        assert_eq!(
            line(&c, &ping(0)),
            "1.0.0.1 > 2.0.0.2: icmp echo-reply (4660, 7)"
        );
        let swapped = PrintConfig {
            swap: true,
            ..c.clone()
        };
        assert_eq!(
            line(&swapped, &ping(8)),
            "1.0.0.1 > 2.0.0.2: icmp echo (13330, 1792)"
        );
        let inner = Ip::new("2.0.0.2", "3.0.0.3", 0)
            .udp(1000, 33434, b"")
            .bytes();
        let unreach = |code, rest| {
            Ip::new("9.9.9.9", "2.0.0.2", 0)
                .icmp(3, code, rest, &inner)
                .bytes()
        };
        assert_eq!(
            line(&c, &unreach(3, [0; 4])),
            "9.9.9.9 > 2.0.0.2: icmp 3.0.0.3 unreachable port udp/33434"
        );
        assert_eq!(
            line(&c, &unreach(2, [0; 4])),
            "9.9.9.9 > 2.0.0.2: icmp 3.0.0.3 unreachable protocol udp"
        );
        assert_eq!(
            line(&c, &unreach(4, [0, 0, 0x05, 0xdc])),
            "9.9.9.9 > 2.0.0.2: icmp 3.0.0.3 unreachable needfrag (mtu 1500)"
        );
        assert_eq!(
            line(&c, &unreach(1, [0; 4])),
            "9.9.9.9 > 2.0.0.2: icmp 3.0.0.3 unreachable host"
        );
        assert_eq!(
            line(&c, &unreach(99, [0; 4])),
            "9.9.9.9 > 2.0.0.2: icmp 3.0.0.3 unreachable code 99"
        );
        let short = Ip::new("9.9.9.9", "2.0.0.2", 0)
            .icmp(3, 3, [0; 4], &inner[..19])
            .bytes();
        assert_eq!(
            line(&c, &short),
            "9.9.9.9 > 2.0.0.2: icmp unreachable port truncated-icmp"
        );
        let port_cut = Ip::new("9.9.9.9", "2.0.0.2", 0)
            .icmp(3, 3, [0; 4], &inner[..22])
            .bytes();
        assert_eq!(
            line(&c, &port_cut),
            "9.9.9.9 > 2.0.0.2: icmp 3.0.0.3 unreachable port udptruncated-icmp"
        );
        let other = |ty, code| {
            Ip::new("9.9.9.9", "2.0.0.2", 0)
                .icmp(ty, code, [0; 4], &inner)
                .bytes()
        };
        assert_eq!(
            line(&c, &other(11, 0)),
            "9.9.9.9 > 2.0.0.2: icmp timeexceeded transit"
        );
        assert_eq!(
            line(&c, &other(12, 0)),
            "9.9.9.9 > 2.0.0.2: icmp parameterproblem erroratptr"
        );
        assert_eq!(line(&c, &other(13, 0)), "9.9.9.9 > 2.0.0.2: icmp timestamp");
        assert_eq!(
            line(&c, &other(42, 7)),
            "9.9.9.9 > 2.0.0.2: icmp type 42 code 7"
        );
        assert_eq!(line(&c, &other(42, 0)), "9.9.9.9 > 2.0.0.2: icmp type 42");
    }

    #[test]
    fn contents_and_payload_dumps() {
        let d = Ip::new("1.0.0.1", "2.0.0.2", 0)
            .udp(1, 2, b"Hello, world! 0123456789abcdefghijklmnopqrstuvwxyz")
            .bytes();
        let c = PrintConfig {
            timestamp: false,
            dump: Dump::Hex,
            maxlength: 30,
            ..cfg()
        };
        assert_eq!(
            line(&c, &d),
            "1.0.0.1.1 > 2.0.0.2.2: udp 58\n  \
             4500004e 12340000 40110000 01000001 02000002 00010002\n  \
             003a0000 4865"
                .replace("40110000", &format!("4011{:02x}{:02x}", d[10], d[11]))
                .replace("003a0000", &format!("003a{:02x}{:02x}", d[26], d[27]))
        );
        let c = PrintConfig {
            timestamp: false,
            dump: Dump::Ascii,
            payload: true,
            maxlength: -1,
            ..cfg()
        };
        assert_eq!(
            line(&c, &d),
            "1.0.0.1.1 > 2.0.0.2.2: udp 58\n  \
             Hello, w orld! 01 23456789 abcdefgh ijklmnop qrstuvwx\n  yz"
        );
        let c = PrintConfig {
            timestamp: false,
            dump: Dump::Ascii,
            maxlength: 4,
            ..cfg()
        };
        assert_eq!(line(&c, &d), "1.0.0.1.1 > 2.0.0.2.2: udp 58\n  E..N");
    }

    #[test]
    fn ether_addresses() {
        let d = Ip::new("1.0.0.1", "2.0.0.2", 9).bytes();
        let mut f = vec![0, 1, 2, 3, 4, 5, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 8, 0];
        f.extend_from_slice(&d);
        let mut p = pkt(&f);
        p.set_mac_header(0);
        p.set_network_header(14, 20);
        p.pull(14);
        let c = PrintConfig {
            timestamp: false,
            ether: true,
            ..cfg()
        };
        assert_eq!(
            format_packet(&c, &p).unwrap(),
            "0A-0B-0C-0D-0E-0F > 00-01-02-03-04-05: 1.0.0.1 > 2.0.0.2: ip-proto-9"
        );
    }

    #[test]
    fn element_passes_packets_and_writes_outfile() {
        let path = std::env::temp_dir().join(format!("ipprint-{}.txt", std::process::id()));
        let decl = format!(
            "IPPrint(x, TIMESTAMP false, OUTFILE {}, TTL true)",
            path.display()
        );
        let h = harness(&decl, 1);
        let d = Ip::new("1.0.0.1", "2.0.0.2", 0).udp(7, 9, b"").bytes();
        h.push(0, vec![marked(&d), pkt(&d)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &d[..]);
        h.write("active", "false").unwrap();
        h.push(0, vec![marked(&d)]);
        assert_eq!(h.read("active").unwrap(), "false");
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text, "x: ttl 64 1.0.0.1.7 > 2.0.0.2.9: udp 8\n");
    }

    /// OUTFILE is opened only when the router runs: a check, a build that
    /// fails elsewhere, or a router built and not run leave it alone.
    #[test]
    fn outfile_untouched_until_the_router_runs() {
        use paraclick_runtime::BuildOptions;
        let dir = std::env::temp_dir().join(format!("ipprint-lazy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keep.txt");
        std::fs::write(&path, "kept").unwrap();
        let conf = format!(
            "InfiniteSource(LIMIT 2, STOP true) -> UDPIPEncap(1.0.0.1, 1, 2.0.0.2, 2) \
             -> p :: IPPrint(OUTFILE {}) -> Discard",
            path.display()
        );
        let check = BuildOptions {
            check_only: true,
            ..BuildOptions::default()
        };
        drop(build_with(&reg(), &conf, &check));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept");
        // Another element's error rejects the configuration.
        let e = build_err(&reg(), &format!("{conf}; Idle -> Queue(0) -> Discard"));
        assert!(e.contains("CAPACITY"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept");
        // Built, not run: still untouched. Run: written.
        let r = build_simtime(&reg(), &conf);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept");
        run(&r);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains("kept"));
        // A directory that does not exist is an error at once.
        let e = build_err(
            &reg(),
            "Idle -> IPPrint(OUTFILE /nonexistent-dir/x) -> Discard",
        );
        assert!(e.contains("OUTFILE") && e.contains("no directory"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn configuration() {
        for ok in [
            "IPPrint",
            "IPPrint(label)",
            "IPPrint(LABEL x, CONTENTS hex, MAXLENGTH -1)",
            "IPPrint(CONTENTS true)",
            "IPPrint(PAYLOAD ASCII, NBYTES 10)",
            "IPPrint(ACTIVE false, SWAP true, AGGREGATE true, PAINT true, ETHER true)",
        ] {
            assert!(try_harness(ok, 1).is_ok(), "{ok}");
        }
        for (bad, want) in [
            (
                "IPPrint(CONTENTS hex, PAYLOAD hex)",
                "e :: IPPrint: specify at most one of PAYLOAD and CONTENTS",
            ),
            (
                "IPPrint(CONTENTS octal)",
                "e :: IPPrint: CONTENTS: bad value 'OCTAL'; should be 'NONE', 'HEX', or 'ASCII'",
            ),
            ("IPPrint(FOO 1)", "e :: IPPrint: unknown keyword FOO"),
            ("IPPrint(a, b)", "e :: IPPrint: too many arguments ('b')"),
            (
                "IPPrint(OUTFILE /nonexistent/dir/x)",
                "e :: IPPrint: OUTFILE: /nonexistent/dir/x: no directory /nonexistent/dir",
            ),
        ] {
            assert_err(try_harness(bad, 1), want);
        }
    }

    #[test]
    fn random_packets_never_panic() {
        let c = PrintConfig {
            dump: Dump::Hex,
            payload: true,
            id: true,
            ..cfg()
        };
        let mut rng = Rng::new(81);
        for _ in 0..3000 {
            let mut d = rng.datagram().bytes();
            for _ in 0..rng.below(6) {
                let i = rng.below(d.len());
                d[i] = rng.u8();
            }
            let cut = rng.below(d.len() + 1);
            let _ = format_packet(&c, &marked(&d[..cut]));
        }
    }
}
