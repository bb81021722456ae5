//! # ICMPError
//!
//! ICMPError(SRC, TYPE [, CODE, BADADDRS, keywords MTU, PMTU, SET_FIX_ANNO])
//!
//! Generates ICMP error packets.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Turns each incoming IP packet (network header annotation set) into an
//! ICMP error of type TYPE and code CODE addressed to the packet's source,
//! from SRC. The error carries the original IP header and as much of the
//! original datagram as fits in an MTU-byte packet (576 by default, the
//! RFC 1812 4.3.2.3 rule; never more than the datagram's total length).
//! The output packet is a fresh IP packet (20-byte header, TOS 0, TTL 200,
//! a per-element IP ID counter, no fragment flags) with its network header
//! set, its destination IP annotation set to its destination, its
//! timestamp set to now, and the FIX_IP_SRC annotation set (so FixIPSrc
//! can give it the outgoing interface's address) unless SET_FIX_ANNO is
//! false. An error about a packet the tracer follows carries its trace
//! mark, so `trace show` follows the error on. Connect the output to the routing machinery, as if the error had
//! arrived on an interface, preferably through a rate limiter.
//!
//! TYPE and CODE are integers (0 to 255) or names. TYPE must be an error
//! type: `unreachable` (3), `sourcequench` (4), `redirect` (5),
//! `timeexceeded` (11) or `parameterproblem` (12). CODE (default 0) names:
//! for `unreachable`, `net` 0, `host` 1, `protocol` 2, `port` 3, `needfrag`
//! 4, `srcroutefail` 5, `netunknown` 6, `hostunknown` 7, `isolated` 8,
//! `netprohibited` 9, `hostprohibited` 10, `tosnet` 11, `toshost` 12,
//! `filterprohibited` 13, `hostprecedence` 14, `precedencecutoff` 15; for
//! `redirect`, `net` 0, `host` 1, `tosnet` 2, `toshost` 3; for
//! `timeexceeded`, `transit` 0, `reassembly` 1; for `parameterproblem`,
//! `erroratptr` 0, `missingopt` 1, `length` 2.
//!
//! Per RFC 1812 4.3.2.7, no error is generated (the packet is dropped) in
//! reply to: an ICMP error message (or a truncated ICMP header); a packet
//! whose destination is not unicast (255.255.255.255, a multicast address,
//! or one of BADADDRS); a packet that arrived as a link-level broadcast or
//! multicast (packet type annotation); a packet whose source is not a valid
//! unicast host (0.x.x.x, 127.x.x.x, class D or E, 255.255.255.255, or one
//! of BADADDRS); a fragment other than the first. A packet without a valid
//! IP network header is dropped too.
//!
//! Particulars: `parameterproblem` code 0 takes its pointer from the
//! ICMP_PARAMPROB annotation (set by IPGWOptions). `redirect` gives as
//! gateway the destination IP annotation (the next hop; 0.0.0.0 means the
//! packet's own destination) and is never sent for a source-routed packet
//! (RFC 1812 5.2.7.2). `unreachable` code `needfrag` carries PMTU as the
//! next-hop MTU (RFC 1191). If the packet has a source route option, the
//! error carries the route traversed so far, reversed (RFC 1812 4.3.2.6),
//! unless a parameter problem points into that option.
//!
//! Arguments:
//! - `SRC` (IP address): source address of the errors.
//! - `TYPE`, `CODE`: as above.
//! - `BADADDRS` (space-separated IP addresses): addresses, usually the
//!   local broadcast addresses, whose packets get no error.
//! - `MTU` (unsigned, default 576): the largest error packet generated.
//! - `PMTU` (unsigned, default 0): the next-hop MTU reported by needfrag.
//! - `SET_FIX_ANNO` (boolean, default true; `USE_FIX_ANNO` also accepted):
//!   set the FIX_IP_SRC annotation.
//!
//! Handlers:
//! - `src`, `mtu`, `pmtu` (read/write): the arguments of those names.
//!
//! Example:
//!
//!     dt :: DecIPTTL;
//!     dt[1] -> ICMPError(18.26.4.24, timeexceeded) -> m :: RatedSplitter(10) -> rt;
//!     m[1] -> Discard;

use paraclick_packet::wire::{checksum, icmp_type, ip_proto};
use paraclick_packet::{Packet, PacketType, Timestamp};
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, Verdict};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct IcmpError {
    src: AtomicU32,
    ty: u8,
    code: u8,
    bad_addrs: Vec<u32>,
    mtu: AtomicU32,
    pmtu: AtomicU32,
    fix_anno: bool,
    ident: AtomicU32,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["no error sent"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("ICMPError", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .shared("one IP ID sequence for all packets")
        .click_alignment(paraclick_runtime::ClickAlignment::Unknown)
}

const TYPES: &[(&str, u8)] = &[
    ("unreachable", icmp_type::DEST_UNREACH),
    ("sourcequench", icmp_type::SOURCE_QUENCH),
    ("redirect", icmp_type::REDIRECT),
    ("timeexceeded", icmp_type::TIME_EXCEEDED),
    ("parameterproblem", icmp_type::PARAM_PROBLEM),
];

pub(crate) fn codes(ty: u8) -> &'static [(&'static str, u8)] {
    match ty {
        icmp_type::DEST_UNREACH => &[
            ("net", 0),
            ("host", 1),
            ("protocol", 2),
            ("port", 3),
            ("needfrag", 4),
            ("srcroutefail", 5),
            ("netunknown", 6),
            ("hostunknown", 7),
            ("isolated", 8),
            ("netprohibited", 9),
            ("hostprohibited", 10),
            ("tosnet", 11),
            ("toshost", 12),
            ("filterprohibited", 13),
            ("hostprecedence", 14),
            ("precedencecutoff", 15),
        ],
        icmp_type::REDIRECT => &[("net", 0), ("host", 1), ("tosnet", 2), ("toshost", 3)],
        icmp_type::TIME_EXCEEDED => &[("transit", 0), ("reassembly", 1)],
        icmp_type::PARAM_PROBLEM => &[("erroratptr", 0), ("missingopt", 1), ("length", 2)],
        _ => &[],
    }
}

fn is_error_type(t: u8) -> bool {
    TYPES.iter().any(|&(_, v)| v == t)
}

fn named(s: &str, names: &[(&str, u8)], what: &str) -> Result<u8, String> {
    let s = s.trim();
    if let Some(&(_, v)) = names.iter().find(|(n, _)| *n == s) {
        return Ok(v);
    }
    let env = ArgEnv::default();
    let v = u32::from_arg(s, &env).map_err(|_| format!("{what}: unknown name '{s}'"))?;
    u8::try_from(v).map_err(|_| format!("{what} must be between 0 and 255"))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<IcmpError, String> {
    let mut a = cx.args();
    let src = a.read_mp::<Ipv4Addr>("SRC");
    let ty = a.read_mp::<String>("TYPE");
    let code = a.read_p::<String>("CODE");
    let bad = a.read_p::<String>("BADADDRS");
    let mtu = a.read::<u32>("MTU").unwrap_or(576);
    let pmtu = a.read::<u16>("PMTU").unwrap_or(0);
    let fix = a.read::<bool>("SET_FIX_ANNO");
    let fix_old = a.read::<bool>("USE_FIX_ANNO");
    a.complete()?;
    let ty = named(&ty, TYPES, "TYPE")?;
    if !is_error_type(ty) {
        return Err(format!("ICMP type {ty} is not an error type"));
    }
    let code = match code {
        Some(c) => named(&c, codes(ty), "CODE")?,
        None => 0,
    };
    let mut bad_addrs = Vec::new();
    for w in bad.as_deref().unwrap_or("").split_whitespace() {
        bad_addrs.push(u32::from(
            Ipv4Addr::from_arg(w, cx.env).map_err(|e| format!("BADADDRS: {e}"))?,
        ));
    }
    check_mtu(mtu)?;
    Ok(IcmpError {
        src: AtomicU32::new(u32::from(src)),
        ty,
        code,
        bad_addrs,
        mtu: AtomicU32::new(mtu),
        pmtu: AtomicU32::new(u32::from(pmtu)),
        fix_anno: fix.or(fix_old).unwrap_or(true),
        ident: AtomicU32::new(1),
    })
}

/// The smallest MTU that holds the largest header, the ICMP header and the
/// original IP header (RFC 791's 68 is too small for that with options).
fn check_mtu(mtu: u32) -> Result<(), String> {
    if !(68..=65535).contains(&mtu) {
        return Err(format!("MTU must be between 68 and 65535, not {mtu}"));
    }
    Ok(())
}

/// Where a usable source route option starts in `h` (a whole IP header):
/// LSRR or SSRR with a pointer at a slot boundary within the option.
fn source_route(h: &[u8]) -> Option<usize> {
    let mut i = 20;
    while i < h.len() {
        match h[i] {
            0 => return None,
            1 => {
                i += 1;
                continue;
            }
            kind => {
                let len = usize::from(*h.get(i + 1)?);
                if len < 2 || i + len > h.len() {
                    return None;
                }
                if (kind == 131 || kind == 137) && len >= 3 {
                    let ptr = usize::from(h[i + 2]);
                    if ptr >= 4 && ptr % 4 == 0 && ptr <= len + 1 {
                        return Some(i);
                    }
                }
                i += len;
            }
        }
    }
    None
}

impl IcmpError {
    /// A destination address ICMPError may answer about.
    fn unicast(&self, a: u32) -> bool {
        a != u32::MAX && a >> 28 != 0xE && !self.bad_addrs.contains(&a)
    }

    /// A source address ICMPError may answer to (RFC 1812 4.2.2.11, 5.3.7).
    fn valid_source(&self, a: u32) -> bool {
        let net = a >> 24;
        self.unicast(a) && net != 0 && net != 127 && net & 0xF0 != 0xF0
    }

    /// The error for `p`, or `None` when none may be sent.
    fn error_for(&self, p: &Packet) -> Option<Packet> {
        let nh = p.network_header()?;
        if nh.len() < 20 || nh[0] >> 4 != 4 {
            return None;
        }
        let hlen = usize::from(nh[0] & 0x0F) * 4;
        if hlen < 20 || hlen > nh.len() {
            return None;
        }
        let ip = &nh[..hlen];
        let proto = ip[9];
        let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1FFF;
        let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
        let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);

        // RFC 1812 4.3.2.7: the packets never answered.
        if proto == ip_proto::ICMP && (nh.len() < hlen + 4 || is_error_type(nh[hlen])) {
            return None;
        }
        if !self.unicast(dst) {
            return None;
        }
        if matches!(
            p.anno().packet_type,
            PacketType::Broadcast | PacketType::Multicast
        ) {
            return None;
        }
        if !self.valid_source(src) {
            return None;
        }
        if frag != 0 {
            return None;
        }
        let param_off = usize::from(p.anno().icmp_param_off);
        let mut sr = source_route(ip);
        if let Some(at) = sr {
            if self.ty == icmp_type::REDIRECT {
                return None; // RFC 1812 5.2.7.2
            }
            let len = usize::from(ip[at + 1]);
            if self.ty == icmp_type::PARAM_PROBLEM
                && self.code == 0
                && (at..at + len).contains(&param_off)
            {
                sr = None; // RFC 1812 4.3.2.6
            }
        }

        // The new IP header, with the reversed route if any.
        let mut opts = [0u8; 40];
        let olen = match sr {
            Some(at) => {
                let ptr = usize::from(ip[at + 2]);
                let olen = ptr - 1; // type, length, pointer, addresses so far
                opts[0] = ip[at];
                opts[1] = olen as u8;
                opts[2] = 4;
                let naddr = (ptr - 4) / 4;
                for k in 0..naddr {
                    let from = at + 3 + 4 * (naddr - 1 - k);
                    opts[3 + 4 * k..7 + 4 * k].copy_from_slice(&ip[from..from + 4]);
                }
                (olen + 1).div_ceil(4) * 4 // end-of-list padding
            }
            None => 0,
        };
        let nhl = 20 + olen;
        let mtu = self.mtu.load(Ordering::Relaxed) as usize;
        let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let orig = if total_len >= hlen {
            nh.len().min(total_len)
        } else {
            nh.len()
        };
        let xlen = orig.min(mtu.saturating_sub(nhl + 8));
        let len = nhl + 8 + xlen;

        let mut q = Packet::new(len)?;
        let d = q.data_mut();
        d[0] = 0x40 | (nhl / 4) as u8;
        d[1] = 0;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        let id = self.ident.fetch_add(1, Ordering::Relaxed) as u16;
        d[4..6].copy_from_slice(&id.to_be_bytes());
        d[6..8].fill(0);
        d[8] = 200;
        d[9] = ip_proto::ICMP;
        d[10..12].fill(0);
        d[12..16].copy_from_slice(&self.src.load(Ordering::Relaxed).to_be_bytes());
        d[16..20].copy_from_slice(&src.to_be_bytes());
        d[20..nhl].copy_from_slice(&opts[..olen]);
        let c = checksum::checksum(&d[..nhl]);
        d[10..12].copy_from_slice(&c.to_be_bytes());

        let icmp = &mut d[nhl..];
        icmp[0] = self.ty;
        icmp[1] = self.code;
        icmp[2..8].fill(0);
        match (self.ty, self.code) {
            (icmp_type::PARAM_PROBLEM, 0) => icmp[4] = param_off as u8,
            (icmp_type::REDIRECT, _) => {
                let gw = match u32::from(p.anno().dst_ip) {
                    0 => dst,
                    g => g,
                };
                icmp[4..8].copy_from_slice(&gw.to_be_bytes());
            }
            (icmp_type::DEST_UNREACH, 4) => {
                let m = self.pmtu.load(Ordering::Relaxed) as u16;
                icmp[6..8].copy_from_slice(&m.to_be_bytes());
            }
            _ => {}
        }
        icmp[8..].copy_from_slice(&nh[..xlen]);
        let c = checksum::checksum(icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());

        q.set_network_header(0, nhl);
        let a = q.anno_mut();
        a.dst_ip = Ipv4Addr::from(src);
        a.fix_ip_src = self.fix_anno;
        a.timestamp = Timestamp::now();
        // An error about a traced packet is traced too, under its number.
        q.set_trace(p.trace());
        Some(q)
    }
}

impl Action for IcmpError {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::rw(
            "src",
            |e, _| Ipv4Addr::from(e.src.load(Ordering::Relaxed)).to_string(),
            |e, v, hx| {
                let a: Ipv4Addr = hx.arg(v)?;
                e.src.store(u32::from(a), Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "mtu",
            |e, _| e.mtu.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                let m = hx.arg(v)?;
                check_mtu(m)?;
                e.mtu.store(m, Ordering::Relaxed);
                Ok(())
            },
        ),
        Handler::rw(
            "pmtu",
            |e, _| e.pmtu.load(Ordering::Relaxed).to_string(),
            |e, v, hx| {
                let m: u16 = hx.arg(v)?;
                e.pmtu.store(u32::from(m), Ordering::Relaxed);
                Ok(())
            },
        ),
    ];

    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        match self.error_for(p) {
            Some(q) => {
                // The packet becomes its error message.
                *p = q;
                Verdict::Out(0)
            }
            None => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;
    use paraclick_packet::wire::checksum;
    use paraclick_packet::{Packet, PacketType};
    use std::net::Ipv4Addr;

    const ME: &str = "18.26.4.24";
    const HOST: &str = "10.0.0.5";
    const FAR: &str = "192.168.1.9";

    /// The error's IP header: TOS 0, TTL 200, ICMP, from ME to `dst`.
    fn err_ip(dst: &str, id: u16, total: usize, opts: &[u8]) -> Vec<u8> {
        let hl = 20 + opts.len();
        let mut h = vec![0x40 | (hl / 4) as u8, 0];
        h.extend((total as u16).to_be_bytes());
        h.extend(id.to_be_bytes());
        h.extend([0, 0, 200, 1, 0, 0]);
        h.extend(ip(ME).octets());
        h.extend(ip(dst).octets());
        h.extend(opts);
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    /// A whole expected error: header, ICMP (type, code, rest), quote.
    fn expected(dst: &str, id: u16, ty: u8, code: u8, rest: [u8; 4], quote: &[u8]) -> Vec<u8> {
        let m = icmp(ty, code, rest, quote);
        let mut v = err_ip(dst, id, 20 + m.len(), &[]);
        v.extend(m);
        v
    }

    fn udp(src: &str, dst: &str, n: usize) -> Vec<u8> {
        let body: Vec<u8> = (0..n).map(|i| i as u8).collect();
        ipv4(ip(src), ip(dst), 17, &body)
    }

    fn packet(bytes: &[u8]) -> Packet {
        let mut p = pkt(bytes);
        p.set_network_header(0, 20);
        p
    }

    fn one(decl: &str, p: Packet) -> Option<Packet> {
        let h = harness(decl, 1);
        h.push(0, vec![p]);
        let mut out = h.output(0);
        assert!(out.len() + h.drops() as usize == 1);
        out.pop()
    }

    #[test]
    fn time_exceeded_quotes_whole_small_datagram() {
        let h = harness(&format!("ICMPError({ME}, timeexceeded)"), 1);
        let orig = udp(HOST, FAR, 30);
        // The network header annotation marks the IP header, after a link header.
        let mut framed = vec![0xEE; 14];
        framed.extend(&orig);
        framed.extend([0, 0, 0, 0]); // link-level trailer: not quoted
        let mut p = pkt(&framed);
        p.set_network_header(14, 20);
        p.anno_mut().paint = 3;
        h.push(0, vec![p, packet(&orig)]);
        let out = h.output(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &expected(HOST, 1, 11, 0, [0; 4], &orig)[..]);
        assert_eq!(out[1].data(), &expected(HOST, 2, 11, 0, [0; 4], &orig)[..]);
        let q = &out[0];
        assert_eq!(q.network_header_offset(), Some(0));
        assert_eq!(q.network_header_length(), Some(20));
        assert_eq!(q.anno().dst_ip, ip(HOST));
        assert!(q.anno().fix_ip_src);
        assert_eq!(q.anno().paint, 0);
        assert!(!q.timestamp().is_zero());
    }

    #[test]
    fn quote_is_limited_by_mtu() {
        let orig = udp(HOST, FAR, 980);
        let q = one(
            &format!("ICMPError({ME}, unreachable, host)"),
            packet(&orig),
        )
        .unwrap();
        assert_eq!(q.len(), 576);
        assert_eq!(q.data(), &expected(HOST, 1, 3, 1, [0; 4], &orig[..548])[..]);
        let q = one(&format!("ICMPError({ME}, 3, 1, MTU 100)"), packet(&orig)).unwrap();
        assert_eq!(q.data(), &expected(HOST, 1, 3, 1, [0; 4], &orig[..72])[..]);
    }

    #[test]
    fn each_type_and_code() {
        let orig = udp(HOST, FAR, 12);
        let cases: &[(&str, u8, u8, [u8; 4])] = &[
            ("unreachable", 3, 0, [0; 4]),
            ("unreachable, net", 3, 0, [0; 4]),
            ("unreachable, host", 3, 1, [0; 4]),
            ("unreachable, protocol", 3, 2, [0; 4]),
            ("unreachable, port", 3, 3, [0; 4]),
            ("unreachable, needfrag, PMTU 1400", 3, 4, [0, 0, 0x05, 0x78]),
            ("unreachable, needfrag", 3, 4, [0; 4]),
            ("unreachable, filterprohibited", 3, 13, [0; 4]),
            ("3, 10", 3, 10, [0; 4]),
            ("sourcequench", 4, 0, [0; 4]),
            ("timeexceeded, transit", 11, 0, [0; 4]),
            ("timeexceeded, reassembly", 11, 1, [0; 4]),
            ("parameterproblem, erroratptr", 12, 0, [9, 0, 0, 0]),
            ("parameterproblem", 12, 0, [9, 0, 0, 0]),
            ("parameterproblem, missingopt", 12, 1, [0; 4]),
            ("parameterproblem, length", 12, 2, [0; 4]),
            ("12, 2", 12, 2, [0; 4]),
        ];
        for &(args, ty, code, rest) in cases {
            let mut p = packet(&orig);
            p.anno_mut().icmp_param_off = 9;
            let q = one(&format!("ICMPError({ME}, {args})"), p).unwrap();
            assert_eq!(
                q.data(),
                &expected(HOST, 1, ty, code, rest, &orig)[..],
                "{args}"
            );
        }
    }

    #[test]
    fn redirect_gives_the_gateway() {
        let orig = udp(HOST, FAR, 8);
        let mut p = packet(&orig);
        p.anno_mut().dst_ip = ip("10.0.0.254");
        let q = one(&format!("ICMPError({ME}, redirect, host)"), p).unwrap();
        assert_eq!(
            q.data(),
            &expected(HOST, 1, 5, 1, [10, 0, 0, 254], &orig)[..]
        );
        // No next hop annotation: the destination is the gateway.
        let q = one(&format!("ICMPError({ME}, redirect, net)"), packet(&orig)).unwrap();
        assert_eq!(
            q.data(),
            &expected(HOST, 1, 5, 0, ip(FAR).octets(), &orig)[..]
        );
    }

    #[test]
    fn never_reply_cases() {
        let decl = format!("ICMPError({ME}, unreachable, host, 10.0.0.255 10.255.255.255)");
        let h = harness(&decl, 1);
        let mut bad: Vec<(&str, Packet)> = Vec::new();
        for ty in [3u8, 4, 5, 11, 12] {
            let m = icmp(ty, 0, [0; 4], &udp(FAR, HOST, 8));
            bad.push(("icmp error", packet(&ipv4(ip(HOST), ip(FAR), 1, &m))));
        }
        bad.push((
            "truncated icmp",
            packet(&ipv4(ip(HOST), ip(FAR), 1, &[8, 0, 0])),
        ));
        for dst in ["255.255.255.255", "224.0.0.5", "239.1.2.3", "10.0.0.255"] {
            bad.push(("bad dst", packet(&udp(HOST, dst, 8))));
        }
        for src in [
            "0.1.2.3",
            "127.0.0.1",
            "240.0.0.1",
            "224.1.1.1",
            "255.255.255.255",
            "10.255.255.255",
        ] {
            bad.push(("bad src", packet(&udp(src, FAR, 8))));
        }
        for t in [PacketType::Broadcast, PacketType::Multicast] {
            let mut p = packet(&udp(HOST, FAR, 8));
            p.anno_mut().packet_type = t;
            bad.push(("link broadcast", p));
        }
        let mut frag = udp(HOST, FAR, 8);
        frag[6..8].copy_from_slice(&1u16.to_be_bytes()); // offset 8 bytes
        bad.push(("later fragment", packet(&frag)));
        bad.push(("no network header", pkt(&udp(HOST, FAR, 8))));
        let mut v6 = udp(HOST, FAR, 8);
        v6[0] = 0x65;
        bad.push(("bad version", packet(&v6)));
        let mut long_hl = udp(HOST, FAR, 8);
        long_hl[0] = 0x4F;
        bad.push(("header longer than packet", packet(&long_hl)));
        bad.push(("short header", packet(&udp(HOST, FAR, 8)[..19])));
        let n = bad.len();
        for (what, p) in bad {
            h.push(0, vec![p]);
            assert!(h.output(0).is_empty(), "{what}");
        }
        assert_eq!(h.drops(), n as u64);

        // Still answered: an echo request, a first fragment, OTHERHOST.
        let echo = icmp(8, 0, [0, 1, 0, 1], b"ping");
        let mut first = udp(HOST, FAR, 8);
        first[6] = 0x20; // more fragments, offset 0
        let mut other = packet(&udp(HOST, FAR, 8));
        other.anno_mut().packet_type = PacketType::OtherHost;
        h.push(
            0,
            vec![
                packet(&ipv4(ip(HOST), ip(FAR), 1, &echo)),
                packet(&first),
                other,
            ],
        );
        assert_eq!(h.output(0).len(), 3);
    }

    /// An IP header with an LSRR option (three slots, `ptr`) and EOL.
    fn source_routed(ptr: u8) -> Vec<u8> {
        let mut v = udp(HOST, FAR, 8);
        let opt = [131u8, 15, ptr, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 0];
        v.splice(20..20, opt);
        v[0] = 0x49;
        let total = v.len() as u16;
        v[2..4].copy_from_slice(&total.to_be_bytes());
        v[10..12].fill(0);
        let c = checksum::checksum(&v[..36]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        v
    }

    #[test]
    fn source_route_is_reversed() {
        let orig = source_routed(12); // 1.1.1.1 and 2.2.2.2 traversed
        let mut p = pkt(&orig);
        p.set_network_header(0, 36);
        let q = one(&format!("ICMPError({ME}, unreachable, host)"), p).unwrap();
        let opts = [131u8, 11, 4, 2, 2, 2, 2, 1, 1, 1, 1, 0];
        let m = icmp(3, 1, [0; 4], &orig);
        let mut want = err_ip(HOST, 1, 32 + m.len(), &opts);
        want.extend(m);
        assert_eq!(q.data(), &want[..]);
        assert_eq!(q.network_header_length(), Some(32));

        // Nothing traversed yet: an empty route.
        let orig = source_routed(4);
        let mut p = pkt(&orig);
        p.set_network_header(0, 36);
        let q = one(&format!("ICMPError({ME}, unreachable, host)"), p).unwrap();
        assert_eq!(&q.data()[20..24], &[131, 3, 4, 0]);
        assert_eq!(q.data()[0], 0x46);

        // A parameter problem about the route itself: no route back.
        let orig = source_routed(12);
        let mut p = pkt(&orig);
        p.set_network_header(0, 36);
        p.anno_mut().icmp_param_off = 22;
        let q = one(&format!("ICMPError({ME}, parameterproblem)"), p).unwrap();
        assert_eq!(
            q.data(),
            &expected(HOST, 1, 12, 0, [22, 0, 0, 0], &orig)[..]
        );

        // No redirects for source-routed packets; a bad pointer is no route.
        let mut p = pkt(&orig);
        p.set_network_header(0, 36);
        assert!(one(&format!("ICMPError({ME}, redirect, host)"), p).is_none());
        let orig = source_routed(13);
        let mut p = pkt(&orig);
        p.set_network_header(0, 36);
        let q = one(&format!("ICMPError({ME}, unreachable, host)"), p).unwrap();
        assert_eq!(q.data(), &expected(HOST, 1, 3, 1, [0; 4], &orig)[..]);
    }

    #[test]
    fn handlers_and_fix_anno() {
        let h = harness(&format!("ICMPError({ME}, 11, SET_FIX_ANNO false)"), 1);
        assert_eq!(h.read("src").unwrap(), ME);
        assert_eq!(h.read("mtu").unwrap(), "576");
        assert_eq!(h.read("pmtu").unwrap(), "0");
        h.write("src", "1.2.3.4").unwrap();
        h.write("mtu", "68").unwrap();
        assert_err(
            h.write("mtu", "20"),
            "e.mtu: MTU must be between 68 and 65535, not 20",
        );
        h.write("pmtu", "1500").unwrap();
        assert_eq!(h.read("pmtu").unwrap(), "1500");
        h.push(0, vec![packet(&udp(HOST, FAR, 100))]);
        let q = &h.output(0)[0];
        assert_eq!(q.len(), 68);
        assert_eq!(&q.data()[12..16], &[1, 2, 3, 4]);
        assert!(!q.anno().fix_ip_src);
        assert!(checksum::verify(&q.data()[..20]));
        assert!(checksum::verify(&q.data()[20..]));
        assert_eq!(q.anno().dst_ip, Ipv4Addr::new(10, 0, 0, 5));
    }

    #[test]
    fn bad_configuration() {
        for (bad, want) in [
            (
                format!("ICMPError({ME})"),
                "e :: ICMPError: missing mandatory TYPE argument",
            ),
            (
                format!("ICMPError({ME}, echo)"),
                "e :: ICMPError: TYPE: unknown name 'echo'",
            ),
            (
                format!("ICMPError({ME}, 8)"),
                "e :: ICMPError: ICMP type 8 is not an error type",
            ),
            (
                format!("ICMPError({ME}, 300)"),
                "e :: ICMPError: TYPE must be between 0 and 255",
            ),
            (
                format!("ICMPError({ME}, unreachable, transit)"),
                "e :: ICMPError: CODE: unknown name 'transit'",
            ),
            (
                format!("ICMPError({ME}, unreachable, 256)"),
                "e :: ICMPError: CODE must be between 0 and 255",
            ),
            (
                format!("ICMPError({ME}, unreachable, host, 1.2.3)"),
                "e :: ICMPError: BADADDRS: expected IP address, not '1.2.3'",
            ),
            (
                format!("ICMPError({ME}, unreachable, MTU 10)"),
                "e :: ICMPError: MTU must be between 68 and 65535, not 10",
            ),
            (
                "ICMPError(1.2.3.4.5, unreachable)".to_string(),
                "e :: ICMPError: SRC: expected IP address, not '1.2.3.4.5'",
            ),
        ] {
            assert_err(try_harness(&bad, 1), want);
        }
    }
}
