//! Parsing the text tcpdump prints for IPv4 and IPv6 TCP, UDP, ICMP and
//! ICMPv6 packets (for FromTcpdump). One line becomes the [`Values`] of an IP summary dump
//! line, which `ipsumdump::build` turns into a packet. Not an element.
//!
//! Understood: a timestamp as `tcpdump` prints it by default
//! (`HH:MM:SS.frac`, seconds since midnight of day 0), with `-tt`
//! (`SEC.frac`), with `-tttt` (`YYYY-MM-DD HH:MM:SS.frac`, UTC) or none
//! (`-t`); then `IP ` (tcpdump 4), `IP6 `, or nothing (tcpdump 3), or an
//! `-e` link prefix ending in `ethertype IPv4 (0x0800), length N: ` (or
//! IPv6 (0x86dd)); then `SRC[.SPORT] > DST[.DPORT]: ` with numeric
//! addresses and ports (`-n`; names are errors saying so);
//! then
//! - TCP: `Flags [S.], seq 1:101, ack 1, win 502, ..., length 100` (tcpdump
//!   4) or `P 1:101(100) ack 1 win 502` (tcpdump 3);
//! - UDP: anything with `length N` or a final `(N)` giving the UDP payload
//!   length (`UDP, length 32`, decoded DNS `... (29)`);
//! - ICMP: `ICMP echo request, id 7, seq 1, length 64` and the common
//!   unreachable and time-exceeded messages; ICMPv6: `ICMP6, echo request,
//!   ...` and the common error and neighbor discovery messages.
//!
//! TCP SACK blocks (`sack 2 {101:201}{301:401}`) are relative like the
//! acknowledgement number and are made absolute with it.
//!
//! Sequence numbers: tcpdump prints the first ACK-carrying packet of a
//! connection with absolute numbers and later ACK-carrying packets relative
//! to that packet's sequence number (in its direction) and acknowledgement
//! minus one (in the other), unless run with `-S`. [`SeqTracker`] undoes
//! that. A TCP packet that prints no `seq` gets the next sequence number
//! its direction has reached.

use crate::ipsumdump::Values;
use paraclick_packet::Timestamp;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

type Endpoint = (IpAddr, u16);

/// Undoes tcpdump's relative sequence numbers, per connection.
#[derive(Default)]
pub(crate) struct SeqTracker {
    /// Keyed by (lower endpoint, higher endpoint): the bases of the two
    /// directions (index 0: from the lower endpoint) and the next sequence
    /// number each direction has reached.
    conns: HashMap<(Endpoint, Endpoint), Conn>,
    /// With `-S` output, nothing is relative.
    absolute: bool,
    /// The first line of a `-v` record, waiting for its second.
    pending: Option<VerboseHeader>,
}

#[derive(Default, Clone, Copy)]
struct Conn {
    base: Option<[u32; 2]>,
    next: [Option<u32>; 2],
}

/// A tcpdump line's TCP part, before sequence numbers are made absolute.
#[derive(Default, Debug)]
struct TcpText {
    flags: u16,
    seq: Option<u32>,
    ack: Option<u32>,
    win: Option<u16>,
    len: Option<u32>,
    opts: Option<Vec<OptWord>>,
}

/// One TCP option as tcpdump prints it: an IP summary dump `tcp_opt`
/// word, or a SACK block as printed (relative like the acknowledgement
/// number unless `-S`).
#[derive(Debug)]
enum OptWord {
    Word(String),
    Sack(u32, u32),
}

const F_FIN: u16 = 0x01;
const F_SYN: u16 = 0x02;
const F_ACK: u16 = 0x10;

/// Parses a timestamp at the start of `s`; returns it and the rest.
fn timestamp(s: &str) -> Result<(Option<Timestamp>, &str), String> {
    let (first, rest) = s.split_once(' ').unwrap_or((s, ""));
    // -tttt: a date, then a time of day.
    if first.len() == 10 && first.as_bytes()[4] == b'-' && first.as_bytes()[7] == b'-' {
        let ymd: Vec<i64> = first
            .split('-')
            .map(|x| x.parse::<i64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("bad date '{first}'"))?;
        let (tod, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let t = time_of_day(tod).ok_or_else(|| format!("bad time '{tod}'"))?;
        let days = days_from_civil(ymd[0], ymd[1], ymd[2]);
        return Ok((Some(Timestamp(days * 86_400_000_000_000 + t.0)), rest));
    }
    if first.contains(':') {
        let t = time_of_day(first).ok_or_else(|| format!("bad time '{first}'"))?;
        return Ok((Some(t), rest));
    }
    if first.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && first.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && first.matches('.').count() == 1
    {
        let t = Timestamp::parse(first).ok_or_else(|| format!("bad time '{first}'"))?;
        return Ok((Some(t), rest));
    }
    Ok((None, s)) // -t: no timestamp
}

/// `HH:MM:SS[.frac]`.
fn time_of_day(s: &str) -> Option<Timestamp> {
    let mut it = s.splitn(3, ':');
    let h: i64 = it.next()?.parse().ok()?;
    let m: i64 = it.next()?.parse().ok()?;
    let sec = Timestamp::parse(it.next()?)?;
    if !(0..60).contains(&m) || h < 0 || sec.0 < 0 {
        return None;
    }
    Some(Timestamp((h * 3600 + m * 60) * 1_000_000_000 + sec.0))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `A.B.C.D` or `A.B.C.D.PORT`; IPv6 `X:Y::Z` or `X:Y::Z.PORT`.
fn endpoint(s: &str) -> Option<(IpAddr, Option<u16>)> {
    let port = |p: &str| -> Option<u16> {
        p.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| p.parse().ok())?
    };
    if s.contains(':') {
        if let Ok(a) = s.parse::<Ipv6Addr>() {
            return Some((IpAddr::V6(a), None));
        }
        let (a, p) = s.rsplit_once('.')?;
        return Some((IpAddr::V6(a.parse().ok()?), Some(port(p)?)));
    }
    match s.bytes().filter(|&b| b == b'.').count() {
        3 => Some((IpAddr::V4(s.parse().ok()?), None)),
        4 => {
            let (a, p) = s.rsplit_once('.')?;
            Some((IpAddr::V4(a.parse().ok()?), Some(port(p)?)))
        }
        _ => None,
    }
}

/// Why `s` is not an endpoint: host and port names (tcpdump without
/// `-n`) get their own message, since they cannot be turned back into
/// addresses.
fn endpoint_error(what: &str, s: &str) -> String {
    let v6 = s.contains(':');
    let (addr, port) = match s.rsplit_once('.') {
        Some((a, p)) if v6 || a.contains('.') || !p.bytes().all(|b| b.is_ascii_digit()) => (a, p),
        _ => (s, ""),
    };
    let name_port = !port.is_empty() && port.bytes().any(|b| b.is_ascii_alphabetic());
    let name_host = if v6 {
        addr.bytes()
            .any(|b| b.is_ascii_alphabetic() && !b.is_ascii_hexdigit())
    } else {
        s.bytes().any(|b| b.is_ascii_alphabetic())
    };
    if name_port || name_host {
        format!("{what} '{s}' is a host or port name, not a number (give FromTcpdump the output of tcpdump -n)")
    } else {
        format!("bad {what} '{s}'")
    }
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.trim_end_matches([',', ';']).parse().ok()
}

/// tcpdump 4's `Flags [S.]` letters, or tcpdump 3's flag word (`S`, `P`,
/// `.`, `FP`...).
fn tcp_flags(s: &str) -> Option<u16> {
    let mut f = 0;
    for c in s.bytes() {
        f |= match c {
            b'F' => F_FIN,
            b'S' => F_SYN,
            b'R' => 0x04,
            b'P' => 0x08,
            b'.' => F_ACK,
            b'U' => 0x20,
            b'E' => 0x40,
            b'W' => 0x80,
            b'e' => 0x40, // tcpdump 4 prints ECE as 'E' and CWR as 'W'
            _ => return None,
        };
    }
    Some(f)
}

/// `A:B(N)` (tcpdump 3) or `A:B` / `A` (tcpdump 4): the first sequence
/// number and, when given, the length.
fn seq_range(s: &str) -> Option<(u32, Option<u32>)> {
    let s = s.trim_end_matches(',');
    let (range, len) = match s.split_once('(') {
        Some((r, l)) => (r, Some(l.strip_suffix(')')?.parse().ok()?)),
        None => (s, None),
    };
    match range.split_once(':') {
        Some((a, b)) => {
            let a: u32 = a.parse().ok()?;
            let b: u32 = b.parse().ok()?;
            Some((a, len.or(Some(b.wrapping_sub(a)))))
        }
        None => Some((range.parse().ok()?, len)),
    }
}

/// TCP options as tcpdump prints them (`options [mss 1460,sackOK,TS val
/// 1 ecr 0,nop,wscale 7,sack 2 {101:201}{301:401}]`, or tcpdump 3's
/// `<mss 1460,timestamp 1 0>`). Unknown options are left out.
fn tcp_options(body: &str) -> Option<Vec<OptWord>> {
    // Character searches first: this runs on every TCP line.
    let bracket = body
        .match_indices('[')
        .map(|(i, _)| i)
        .find(|&i| body[..i].ends_with("options "));
    let inner = if let Some(i) = bracket {
        let r = &body[i + 1..];
        &r[..r.find(']')?]
    } else {
        let i = body
            .find('<')
            .filter(|&i| i > 0 && body.as_bytes()[i - 1] == b' ')?;
        let r = &body[i + 1..];
        &r[..r.find('>')?]
    };
    let mut items = Vec::new();
    for item in inner.split(',') {
        let w: Vec<&str> = item.split_whitespace().collect();
        let text = match w.as_slice() {
            ["mss", n] => format!("mss{n}"),
            ["wscale", n] => format!("wscale{n}"),
            ["sackOK"] => "sackok".into(),
            ["nop"] => "nop".into(),
            ["eol"] => "eol".into(),
            ["TS", "val", a, "ecr", b] | ["timestamp", a, b] => format!("ts{a}:{b}"),
            ["sack", _, blocks] | ["sack", "sack", _, blocks] => {
                // `{101:201}{301:401}`: one option, several blocks.
                for b in blocks.split('}').filter(|b| !b.is_empty()) {
                    let (l, r) = b.strip_prefix('{')?.split_once(':')?;
                    items.push(OptWord::Sack(l.parse().ok()?, r.parse().ok()?));
                }
                continue;
            }
            _ => continue,
        };
        items.push(OptWord::Word(text));
    }
    (!items.is_empty()).then_some(items)
}

fn parse_tcp(body: &str) -> Result<TcpText, String> {
    let mut t = TcpText {
        opts: tcp_options(body),
        ..TcpText::default()
    };
    let w: Vec<&str> = body.split_whitespace().collect();
    let mut i;
    if w.first() == Some(&"Flags") {
        let f = w
            .get(1)
            .and_then(|f| f.strip_prefix('['))
            .and_then(|f| f.trim_end_matches(',').strip_suffix(']'))
            .ok_or("bad TCP flags")?;
        t.flags = tcp_flags(f).ok_or_else(|| format!("bad TCP flags '{f}'"))?;
        i = 2;
    } else if let Some(f) = w.first().and_then(|f| tcp_flags(f)) {
        t.flags = f;
        i = 1;
        // tcpdump 3: the sequence range follows the flags directly.
        if let Some((s, l)) = w.get(1).and_then(|x| seq_range(x)) {
            if w[1].contains(':') {
                t.seq = Some(s);
                t.len = l;
                i = 2;
            }
        }
    } else {
        return Err("no TCP flags".into());
    }
    while i < w.len() {
        let key = w[i].trim_end_matches(',');
        let val = w.get(i + 1).copied().unwrap_or("");
        match key {
            "seq" => {
                let (s, l) = seq_range(val).ok_or_else(|| format!("bad seq '{val}'"))?;
                t.seq = Some(s);
                if t.len.is_none() {
                    t.len = l;
                }
                i += 1;
            }
            "ack" => {
                t.ack = Some(num(val).ok_or_else(|| format!("bad ack '{val}'"))?);
                t.flags |= F_ACK;
                i += 1;
            }
            "win" => {
                t.win = Some(num(val).ok_or_else(|| format!("bad win '{val}'"))?);
                i += 1;
            }
            "length" => {
                t.len = Some(
                    num(val.trim_end_matches(':')).ok_or_else(|| format!("bad length '{val}'"))?,
                );
                i += 1;
            }
            "options" => {
                // Skip the bracketed option list.
                while i < w.len() && !w[i].trim_end_matches(',').ends_with(']') {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(t)
}

/// The UDP payload length: `length N`, tcpdump 3's `udp N`, else a final
/// `(N)`.
fn udp_len(body: &str) -> Option<u32> {
    let w: Vec<&str> = body.split_whitespace().collect();
    if let ["udp", n] = w.as_slice() {
        return num(n);
    }
    if let Some(i) = w.iter().rposition(|x| *x == "length") {
        return w.get(i + 1).and_then(|v| num(v.trim_end_matches(':')));
    }
    let last = w.last()?;
    last.strip_prefix('(')?.strip_suffix(')')?.parse().ok()
}

/// ICMP type and code from tcpdump's description (lower case).
fn icmp4_kind(lower: &str) -> Option<(u8, u8)> {
    Some(if lower.starts_with("echo request") {
        (8, 0)
    } else if lower.starts_with("echo reply") {
        (0, 0)
    } else if lower.contains("port") && lower.contains("unreachable") {
        (3, 3)
    } else if lower.contains("protocol") && lower.contains("unreachable") {
        (3, 2)
    } else if lower.starts_with("net") && lower.contains("unreachable") {
        (3, 0)
    } else if lower.contains("unreachable") {
        (3, 1)
    } else if lower.starts_with("time exceeded") {
        (11, u8::from(lower.contains("reassembly")))
    } else if lower.starts_with("redirect") {
        (5, 1)
    } else {
        return None;
    })
}

impl SeqTracker {
    /// `absolute`: the text's sequence numbers are absolute (`tcpdump -S`).
    pub(crate) fn new(absolute: bool) -> SeqTracker {
        SeqTracker {
            absolute,
            ..SeqTracker::default()
        }
    }

    /// Makes `t`'s sequence numbers absolute and fills `v`'s TCP fields.
    fn resolve(&mut self, src: Endpoint, dst: Endpoint, t: &TcpText, v: &mut Values) {
        let (key, d) = if src <= dst {
            ((src, dst), 0)
        } else {
            ((dst, src), 1)
        };
        let c = self.conns.entry(key).or_default();
        let has_ack = t.flags & F_ACK != 0;
        let (mut seq, mut ack) = (t.seq, t.ack);
        // SACK blocks are relative as the acknowledgement is.
        let mut sack_base = 0u32;
        if !self.absolute && has_ack {
            match c.base {
                Some(b) => {
                    seq = seq.map(|s| s.wrapping_add(b[d]));
                    ack = ack.map(|a| a.wrapping_add(b[1 - d]));
                    sack_base = b[1 - d];
                }
                None => {
                    // The first ACK-carrying packet: absolute, sets the bases.
                    let mut b = [0u32; 2];
                    b[d] = seq.or(c.next[d]).unwrap_or(0);
                    b[1 - d] = ack.unwrap_or(0).wrapping_sub(1);
                    c.base = Some(b);
                }
            }
        }
        let seq = seq.or(c.next[d]).unwrap_or(0);
        let len = t.len.unwrap_or(0);
        let flen = u32::from(t.flags & (F_SYN | F_FIN) != 0);
        c.next[d] = Some(seq.wrapping_add(len).wrapping_add(flen));
        if let Some(a) = ack {
            c.next[1 - d].get_or_insert(a);
        }
        v.tcp_flags = Some(t.flags);
        v.tcp_seq = Some(seq);
        v.tcp_ack = Some(ack.unwrap_or(0));
        v.tcp_window = t.win;
        v.tcp_opt = t.opts.as_ref().and_then(|o| {
            let words: Vec<String> = o
                .iter()
                .map(|w| match w {
                    OptWord::Word(w) => w.clone(),
                    OptWord::Sack(l, r) => format!(
                        "sack{}-{}",
                        l.wrapping_add(sack_base),
                        r.wrapping_add(sack_base)
                    ),
                })
                .collect();
            crate::ipsumdump_ext::parse_tcp_opts(&words.join(";"))
        });
        v.payload_len = Some(len);
    }

    /// Parses one tcpdump line. `Ok(None)`: a line that describes no IPv4
    /// packet (blank, or a continuation line of `-v` output).
    pub(crate) fn parse_line(&mut self, line: &str) -> Result<Option<Values>, String> {
        if line.trim().is_empty() {
            return Ok(None);
        }
        if line.starts_with([' ', '\t']) {
            // The second line of a `-v` record, or a line to skip.
            return match self.pending.take() {
                Some(h) => self.packet(h.ts, line.trim(), Some(h)).map(Some),
                None => Ok(None),
            };
        }
        self.pending = None;
        let (ts, rest) = timestamp(line.trim_end())?;
        let mut rest = rest.trim_start();
        let mut is6 = false;
        if let Some(r) = rest.strip_prefix("IP ") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("IP6 ") {
            rest = r;
            is6 = true;
        } else if let Some((i, six)) = rest
            .as_bytes()
            .get(2)
            .filter(|&&c| c == b':') // an -e MAC address first
            .and_then(|_| {
                let v4 = rest.find("ethertype IPv4 (0x0800), length ");
                v4.map(|i| (i, false)).or_else(|| {
                    rest.find("ethertype IPv6 (0x86dd), length ")
                        .map(|i| (i, true))
                })
            })
        {
            let after = &rest[i..];
            let colon = after.find(": ").ok_or("bad link-level prefix")?;
            rest = after[colon + 2..].trim_start();
            rest = rest
                .strip_prefix(if six { "IP6 " } else { "IP " })
                .unwrap_or(rest);
            is6 = six;
        } else if rest.starts_with("ARP") {
            return Err("not an IP packet".into());
        }
        if let Some(r) = rest.strip_prefix('(') {
            // `-v`: `(tos 0x0, ttl 64, id 1, offset 0, flags [DF], proto
            // TCP (6), length 40)`, the rest usually on the next line.
            let mut depth = 1;
            let close = r
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map(|(i, _)| i)
                .ok_or("unclosed '(' in the IP header")?;
            let h = if is6 {
                verbose6_header(&r[..close], ts)?
            } else {
                verbose_header(&r[..close], ts)?
            };
            let after = r[close + 1..].trim();
            if after.is_empty() {
                self.pending = Some(h);
                return Ok(None);
            }
            return self.packet(ts, after, Some(h)).map(Some);
        }
        self.packet(ts, rest, None).map(Some)
    }

    /// `SRC > DST: BODY`, with the `-v` header fields if there were some.
    fn packet(
        &mut self,
        ts: Option<Timestamp>,
        rest: &str,
        h: Option<VerboseHeader>,
    ) -> Result<Values, String> {
        let (addrs, body) = rest.split_once(": ").ok_or("no ': ' after the addresses")?;
        let mut aw = addrs.split_whitespace();
        let (Some(s), Some(">"), Some(d), None) = (aw.next(), aw.next(), aw.next(), aw.next())
        else {
            return Err(format!("bad addresses '{addrs}'"));
        };
        let (src, sport) = endpoint(s).ok_or_else(|| endpoint_error("source", s))?;
        let (dst, dport) = endpoint(d).ok_or_else(|| endpoint_error("destination", d))?;
        let mut body = body.trim();
        // `-v` checksum notes before the UDP or ICMPv6 text.
        if let Some(r) = body.strip_prefix('[') {
            if let Some((note, after)) = r.split_once("] ") {
                if note.contains("sum") {
                    body = after.trim_start();
                }
            }
        }
        let mut v = Values {
            ts,
            ..Values::default()
        };
        match (src, dst) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (v.src, v.dst) = (Some(a), Some(b)),
            (IpAddr::V6(a), IpAddr::V6(b)) => (v.src6, v.dst6) = (Some(a), Some(b)),
            _ => return Err(format!("mixed IPv4 and IPv6 addresses '{addrs}'")),
        }
        if let Some(h) = &h {
            v.tos = Some(h.tos);
            v.ttl = Some(h.ttl);
            v.id = Some(h.id);
            v.frag = Some(h.frag);
            v.len = Some(h.len);
        }
        if let Some(icmp) = body.strip_prefix("ICMP ") {
            v.proto = Some(1);
            let len = v.len;
            parse_icmp(icmp, &mut v, false)?;
            v.len = len.or(v.len);
            return Ok(v);
        }
        if let Some(icmp) = body.strip_prefix("ICMP6, ") {
            v.proto = Some(58);
            let len = v.len;
            parse_icmp(icmp, &mut v, true)?;
            v.len = len.or(v.len);
            return Ok(v);
        }
        let (Some(sport), Some(dport)) = (sport, dport) else {
            // A later fragment (`-v` says which protocol) has no ports.
            if let Some(h) = h.filter(|h| h.frag & 0x1fff != 0) {
                v.proto = Some(h.proto);
                return Ok(v);
            }
            return Err("no ports (only TCP, UDP and ICMP are understood)".into());
        };
        v.sport = Some(sport);
        v.dport = Some(dport);
        if let Ok(t) = parse_tcp(body) {
            v.proto = Some(6);
            self.resolve((src, sport), (dst, dport), &t, &mut v);
        } else {
            v.proto = Some(17);
            let l = udp_len(body).ok_or("neither TCP nor UDP with a length")?;
            v.payload_len = Some(l);
        }
        Ok(v)
    }
}

/// ICMPv6 type and code from tcpdump's description (lower case).
fn icmp6_kind(lower: &str) -> Option<(u8, u8)> {
    let has = |w: &str| lower.contains(w);
    Some(if lower.starts_with("echo request") {
        (128, 0)
    } else if lower.starts_with("echo reply") {
        (129, 0)
    } else if lower.starts_with("destination unreachable") {
        let code = if has("unreachable route") || has("no route") {
            0
        } else if has("prohibited") || has("admin") {
            1
        } else if has("beyond scope") {
            2
        } else if has("unreachable address") {
            3
        } else if has("unreachable port") {
            4
        } else {
            0
        };
        (1, code)
    } else if lower.starts_with("packet too big") {
        (2, 0)
    } else if lower.starts_with("time exceeded") {
        (3, u8::from(has("reassembly")))
    } else if lower.starts_with("parameter problem") {
        (4, 0)
    } else if lower.starts_with("router solicitation") {
        (133, 0)
    } else if lower.starts_with("router advertisement") {
        (134, 0)
    } else if lower.starts_with("neighbor solicitation") {
        (135, 0)
    } else if lower.starts_with("neighbor advertisement") {
        (136, 0)
    } else if lower.starts_with("redirect") {
        (137, 0)
    } else {
        return None;
    })
}

/// ICMP (`ICMP echo request, id 7, seq 1, length 64`) or, if `six`,
/// ICMPv6 (`echo request, id 7, seq 1, length 64` after `ICMP6, `): the
/// type and code, echo id and seq, and the IP length from the ICMP length.
fn parse_icmp(body: &str, v: &mut Values, six: bool) -> Result<(), String> {
    let lower = body.to_ascii_lowercase();
    let kind = if six {
        icmp6_kind(&lower)
    } else {
        icmp4_kind(&lower)
    };
    let name = if six { "ICMP6" } else { "ICMP" };
    let Some((ty, code)) = kind else {
        let what = body.split(',').next().unwrap_or("");
        return Err(format!("unknown {name} message '{what}'"));
    };
    v.icmp_type = Some(ty);
    v.icmp_code = Some(code);
    let w: Vec<&str> = body.split_whitespace().collect();
    let field = |name: &str| -> Option<u16> {
        let i = w.iter().position(|x| *x == name)?;
        w.get(i + 1).and_then(|x| num(x))
    };
    let echo = if six { [128, 129] } else { [8, 0] };
    if echo.contains(&ty) {
        v.icmp_id = field("id");
        v.icmp_seq = field("seq");
    }
    if let Some(i) = w.iter().rposition(|x| *x == "length") {
        let l: u32 = w
            .get(i + 1)
            .and_then(|x| num(x))
            .filter(|l| *l <= 0xffff)
            .ok_or_else(|| format!("bad {name} length"))?;
        v.len = Some(if six { 40 } else { 20 } + l.max(8));
    }
    Ok(())
}

/// The IPv6 header fields `tcpdump -v` prints: `(class 0x10, flowlabel
/// 0x1, hlim 64, next-header TCP (6) payload length: 44)`.
fn verbose6_header(s: &str, ts: Option<Timestamp>) -> Result<VerboseHeader, String> {
    let mut h = VerboseHeader::new(ts);
    let bad = || format!("bad IPv6 header '({s})'");
    let mut have_len = false;
    for item in s.split(", ") {
        let item = item.trim();
        if let Some(x) = item.strip_prefix("class ") {
            h.tos = u8::from_str_radix(x.trim_start_matches("0x"), 16).map_err(|_| bad())?;
        } else if let Some(x) = item.strip_prefix("hlim ") {
            h.ttl = x.parse().map_err(|_| bad())?;
        } else if let Some(x) = item.strip_prefix("next-header ") {
            let (nh, plen) = x.split_once(" payload length: ").ok_or_else(bad)?;
            h.proto = proto_number(nh).ok_or_else(bad)?;
            let plen: u32 = plen.parse().map_err(|_| bad())?;
            if plen > 0xffff {
                return Err(bad());
            }
            h.len = 40 + plen;
            have_len = true;
        }
    }
    if !have_len {
        return Err(bad());
    }
    Ok(h)
}

/// The IP header fields `tcpdump -v` prints.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VerboseHeader {
    ts: Option<Timestamp>,
    tos: u8,
    ttl: u8,
    id: u16,
    /// Flags and offset word (offset in 8-byte units).
    frag: u16,
    proto: u8,
    len: u32,
}

impl VerboseHeader {
    /// Defaults for what the line does not say (TTL 100, as without -v).
    fn new(ts: Option<Timestamp>) -> VerboseHeader {
        VerboseHeader {
            ts,
            tos: 0,
            ttl: 100,
            id: 0,
            frag: 0,
            proto: 0,
            len: 0,
        }
    }
}

/// The protocol number of `TCP (6)`.
fn proto_number(s: &str) -> Option<u8> {
    s.rsplit('(').next()?.strip_suffix(')')?.parse().ok()
}

fn verbose_header(s: &str, ts: Option<Timestamp>) -> Result<VerboseHeader, String> {
    let mut h = VerboseHeader::new(ts);
    let mut have_len = false;
    let bad = || format!("bad IP header '({s})'");
    for item in s.split(", ") {
        let (k, val) = item.split_once(' ').unwrap_or((item, ""));
        match k {
            "tos" => {
                let x = val.split_whitespace().next().unwrap_or("");
                h.tos = u8::from_str_radix(x.trim_start_matches("0x"), 16).map_err(|_| bad())?;
            }
            "ttl" => h.ttl = val.parse().map_err(|_| bad())?,
            "id" => h.id = val.parse().map_err(|_| bad())?,
            "offset" => {
                let off: u16 = val.parse().map_err(|_| bad())?;
                h.frag |= (off / 8) & 0x1fff;
            }
            "flags" => {
                if val.contains("DF") {
                    h.frag |= 0x4000;
                }
                if val.contains('+') {
                    h.frag |= 0x2000;
                }
            }
            "proto" => h.proto = proto_number(val).ok_or_else(bad)?,
            "length" => {
                h.len = val.parse().map_err(|_| bad())?;
                have_len = h.len >= 20 && h.len <= 0xffff;
            }
            _ => {}
        }
    }
    if !have_len {
        return Err(bad());
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;
    use std::net::Ipv4Addr;

    fn parse(t: &mut SeqTracker, s: &str) -> Values {
        t.parse_line(s).unwrap().unwrap()
    }

    #[test]
    fn tcpdump4_handshake_relative_seqs() {
        let mut t = SeqTracker::default();
        let lines = [
            "01:46:40.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [S], seq 1000, win 8192, options [mss 1460,nop,wscale 7], length 0",
            "01:46:41.500000 IP 10.0.0.2.80 > 10.0.0.1.1234: Flags [S.], seq 5000, ack 1001, win 65535, length 0",
            "01:46:42.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [.], ack 1, win 8192, length 0",
            "01:46:43.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [P.], seq 1:101, ack 1, win 8192, length 100: HTTP",
            "01:46:44.500000 IP 10.0.0.2.80 > 10.0.0.1.1234: Flags [.], ack 101, win 65535, length 0",
            "01:46:45.500000 IP 10.0.0.1.1234 > 10.0.0.2.80: Flags [F.], seq 101, ack 1, win 8192, length 0",
        ];
        let want = [
            (0x02, 1000, 0, 0),
            (0x12, 5000, 1001, 0),
            (0x10, 1001, 5001, 0),
            (0x18, 1001, 5001, 100),
            (0x10, 5001, 1101, 0),
            (0x11, 1101, 5001, 0),
        ];
        for (l, w) in lines.iter().zip(want) {
            let v = parse(&mut t, l);
            assert_eq!(
                (
                    v.tcp_flags.unwrap(),
                    v.tcp_seq.unwrap(),
                    v.tcp_ack.unwrap(),
                    v.payload_len.unwrap()
                ),
                w,
                "{l}"
            );
            assert_eq!(v.proto, Some(6));
        }
        let v = parse(&mut t, lines[0]);
        assert_eq!(v.ts, Some(Timestamp::from_parts(6400, 500_000_000)));
        assert_eq!(v.tcp_window, Some(8192));
        assert_eq!(
            v.tcp_opt,
            Some(vec![2, 4, 0x05, 0xb4, 1, 3, 3, 7]),
            "mss 1460, nop, wscale 7"
        );
        assert_eq!(v.src, Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!((v.sport, v.dport), (Some(1234), Some(80)));
    }

    #[test]
    fn tcpdump3_forms() {
        let mut t = SeqTracker::default();
        let v = parse(
            &mut t,
            "1018330170.887165 192.150.187.37.3153 > 18.26.4.44.21: S 2195313811:2195313811(0) win 5840 <mss 1460> (DF)",
        );
        assert_eq!(v.ts, Some(Timestamp::from_parts(1018330170, 887_165_000)));
        assert_eq!((v.tcp_flags, v.tcp_seq), (Some(0x02), Some(2195313811)));
        assert_eq!(v.tcp_opt, Some(vec![2, 4, 0x05, 0xb4]));
        let v = parse(
            &mut t,
            "1018330170.9 18.26.4.44.21 > 192.150.187.37.3153: S 7:7(0) ack 2195313812 win 5840",
        );
        assert_eq!(
            (v.tcp_flags, v.tcp_seq, v.tcp_ack),
            (Some(0x12), Some(7), Some(2195313812))
        );
        let v = parse(
            &mut t,
            "1018330171.0 192.150.187.37.3153 > 18.26.4.44.21: P 1:11(10) ack 1 win 5840",
        );
        assert_eq!(
            (v.tcp_flags, v.tcp_seq, v.tcp_ack, v.payload_len),
            (Some(0x18), Some(2195313812), Some(8), Some(10))
        );
    }

    #[test]
    fn absolute_mode_and_udp_icmp() {
        let mut t = SeqTracker::new(true);
        let v = parse(
            &mut t,
            "5.0 IP 1.2.3.4.5 > 6.7.8.9.10: Flags [.], seq 9:19, ack 7, win 1, length 10",
        );
        assert_eq!((v.tcp_seq, v.tcp_ack), (Some(9), Some(7)));
        let v = parse(
            &mut t,
            "1.000001 IP 10.0.0.3.4000 > 10.0.0.4.5000: UDP, length 32",
        );
        assert_eq!(
            (v.proto, v.payload_len, v.dport),
            (Some(17), Some(32), Some(5000))
        );
        let v = parse(
            &mut t,
            "1.0 IP 10.0.0.3.53 > 10.0.0.4.5353: 31097+ A? x.org. (29)",
        );
        assert_eq!(v.payload_len, Some(29));
        let v = parse(&mut t, "2001-09-09 01:46:48.5 IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 7, seq 1, length 64");
        assert_eq!(
            v.ts,
            Some(Timestamp::from_parts(1_000_000_008, 500_000_000))
        );
        assert_eq!(
            (v.proto, v.icmp_type, v.icmp_id, v.icmp_seq, v.len),
            (Some(1), Some(8), Some(7), Some(1), Some(84))
        );
        let v = parse(
            &mut t,
            "IP 10.0.0.9 > 10.0.0.1: ICMP 10.0.0.9 udp port 33434 unreachable, length 36",
        );
        assert_eq!((v.ts, v.icmp_type, v.icmp_code), (None, Some(3), Some(3)));
        let v = parse(&mut t, "1.0 00:11:22:33:44:55 > 66:77:88:99:aa:bb, ethertype IPv4 (0x0800), length 74: 10.0.0.1.1 > 10.0.0.2.2: UDP, length 4");
        assert_eq!(
            (v.src, v.payload_len),
            (Some(Ipv4Addr::new(10, 0, 0, 1)), Some(4))
        );
    }

    #[test]
    fn verbose_two_line_records() {
        let mut t = SeqTracker::default();
        assert_eq!(
            t.parse_line("1000000003.500000 IP (tos 0x10, ttl 63, id 4321, offset 0, flags [DF], proto TCP (6), length 52)").unwrap(),
            None
        );
        let v = parse(&mut t, "    10.0.0.1.1234 > 10.0.0.2.80: Flags [P.], cksum 0x0000 (incorrect -> 0xd74a), seq 1:13, ack 1, win 8192, length 12");
        assert_eq!(
            v.ts,
            Some(Timestamp::from_parts(1_000_000_003, 500_000_000))
        );
        assert_eq!(
            (v.tos, v.ttl, v.id, v.frag, v.len),
            (Some(0x10), Some(63), Some(4321), Some(0x4000), Some(52))
        );
        assert_eq!((v.proto, v.payload_len), (Some(6), Some(12)));
        // A further indented line (-vv detail) is skipped.
        assert_eq!(t.parse_line("\t  some detail").unwrap(), None);
        t.parse_line(
            "2.0 IP (tos 0x0, ttl 64, id 9, offset 1480, flags [+], proto UDP (17), length 500)",
        )
        .unwrap();
        let v = parse(&mut t, "    10.0.0.1 > 10.0.0.2: ip-proto-17");
        assert_eq!(
            (v.proto, v.frag, v.len, v.sport),
            (Some(17), Some(0x2000 | 185), Some(500), None)
        );
        t.parse_line(
            "3.0 IP (tos 0x0, ttl 64, id 1, offset 0, flags [none], proto ICMP (1), length 84)",
        )
        .unwrap();
        let v = parse(
            &mut t,
            "    10.0.0.1 > 10.0.0.2: ICMP echo reply, id 7, seq 1, length 64",
        );
        assert_eq!((v.icmp_type, v.len, v.frag), (Some(0), Some(84), Some(0)));
    }

    #[test]
    fn ipv6_link_prefix_and_verbose_header() {
        let mut t = SeqTracker::default();
        let v = parse(&mut t, "1.0 00:11:22:33:44:55 > 66:77:88:99:aa:bb, ethertype IPv6 (0x86dd), length 82: 2001:db8::1.1 > 2001:db8::2.2: UDP, length 20");
        let a: Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!((v.src6, v.src, v.payload_len), (Some(a), None, Some(20)));
        let v = parse(&mut t, "2.0 IP6 (class 0x10, flowlabel 0x12345, hlim 3, next-header UDP (17) payload length: 28) 2001:db8::1.1 > 2001:db8::2.2: [bad udp cksum 0x1 -> 0x2!] UDP, length 20");
        assert_eq!((v.tos, v.ttl, v.len), (Some(0x10), Some(3), Some(68)));
        assert_eq!(v.proto, Some(17));
        // An IPv4-mapped address keeps its dots.
        let v = parse(&mut t, "3.0 IP6 ::ffff:10.0.0.1.53 > ::1.9: UDP, length 1");
        assert_eq!(v.src6, Some("::ffff:10.0.0.1".parse().unwrap()));
        assert_eq!((v.sport, v.dport), (Some(53), Some(9)));
        assert_err(
            t.parse_line("4.0 IP6 (hlim 3) ::1.1 > ::1.2: UDP, length 1"),
            "bad IPv6 header '(hlim 3)'",
        );
        assert!(t
            .parse_line("5.0 IP6 ::1 > ::1: ICMP6, mystery message, length 8")
            .unwrap_err()
            .contains("unknown ICMP6"));
    }

    #[test]
    fn malformed_lines_are_errors_not_panics() {
        let mut t = SeqTracker::default();
        for (bad, want) in [
            ("garbage", "no ': ' after the addresses"),
            ("12:00:00.0 IP 10.0.0.1.1 > : UDP, length 3", "bad addresses '10.0.0.1.1 > '"),
            ("12:00:00.0 IP 10.0.0.1.1 > 10.0.0.300.2: UDP, length 3", "bad destination '10.0.0.300.2'"),
            ("12:00:00.0 IP host.example.http > 10.0.0.2.2: UDP, length 3", "source 'host.example.http' is a host or port name, not a number (give FromTcpdump the output of tcpdump -n)"),
            ("12:00:00.0 IP 10.0.0.1.1 > 10.0.0.2.2: Flags [Q], seq 1", "neither TCP nor UDP with a length"),
            ("12:00:00.0 IP 10.0.0.1.1 > 10.0.0.2.2: Flags [S], seq x", "neither TCP nor UDP with a length"),
            ("12:00:00.0 IP 10.0.0.1.1 > 10.0.0.2.2: something", "neither TCP nor UDP with a length"),
            ("12:00:00.0 IP 10.0.0.1 > 10.0.0.2: ICMP mystery", "unknown ICMP message 'mystery'"),
            ("12:00:00.0 IP6 ::1.http > ::1.2: UDP, length 3", "source '::1.http' is a host or port name, not a number (give FromTcpdump the output of tcpdump -n)"),
            ("12:00:00.0 IP6 ::1.1 > 10.0.0.1.2: UDP, length 3", "mixed IPv4 and IPv6 addresses '::1.1 > 10.0.0.1.2'"),
            ("12:00:00.0 ARP, Request who-has 10.0.0.1 tell 10.0.0.2, length 28", "not an IP packet"),
            ("99:99:99.0 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 3", "bad time '99:99:99.0'"),
            ("2020-1x-01 00:00:00 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 3", "bad date '2020-1x-01'"),
            ("1.5 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 99999999999", "neither TCP nor UDP with a length"),
        ] {
            assert_err(t.parse_line(bad), want);
        }
        assert_eq!(t.parse_line("").unwrap(), None);
        assert_err(t.parse_line("1.0 IP (tos 0x0, ttl 64, id 1, proto TCP (6)) 1.1.1.1.1 > 2.2.2.2.2: UDP, length 1"), "bad IP header '(tos 0x0, ttl 64, id 1, proto TCP (6))'");
        assert_err(
            t.parse_line("1.0 IP (tos 0xzz, ttl 64, length 40)"),
            "bad IP header '(tos 0xzz, ttl 64, length 40)'",
        );
        assert_err(
            t.parse_line("1.0 IP (tos 0x0, ttl 64, length 40"),
            "unclosed '(' in the IP header",
        );
        assert_eq!(t.parse_line("\t0x0000:  4500 0028").unwrap(), None);
    }
}
