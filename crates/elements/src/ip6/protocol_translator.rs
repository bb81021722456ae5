//! # ProtocolTranslator64
//!
//! ProtocolTranslator64()
//!
//! Translates IPv6 packets into IPv4 packets (stateless IP/ICMP
//! translation, RFC 7915), as Click's element of that name.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! The input packet holds an IPv6 header (at its network header
//! annotation, else at the start of its data) whose addresses are
//! IPv4-mapped (`::ffff:a.b.c.d`) or IPv4-compatible (`::a.b.c.d`): the
//! translation replaces the 40-byte IPv6 header with a 20-byte IPv4 header
//! carrying the low 32 bits of each address, the traffic class as TOS,
//! the hop limit as TTL, ID 0 and no flags, and sets the network header
//! annotation. TCP and UDP checksums are recomputed over the IPv4
//! pseudo-header. ICMPv6 becomes ICMP: echo request and reply (128, 129)
//! become 8 and 0; destination unreachable (1) codes 0, 1, 2, 3, 4 become
//! type 3 codes 1, 10, 1, 1, 3; packet too big (2) becomes type 3 code 4
//! with the MTU less 20; time exceeded (3) becomes type 11; parameter
//! problem (4) code 1 becomes type 3 code 2 (protocol unreachable). The
//! IPv6 header quoted in an ICMPv6 error is translated the same way.
//!
//! Packets that cannot be translated are dropped and counted (`drops`):
//! shorter than their headers, with an extension header, with an address
//! that is neither IPv4-mapped nor IPv4-compatible, or ICMPv6 messages
//! with no ICMP counterpart (neighbour discovery, other parameter
//! problems). Differences from Click: codes follow RFC 7915 (Click maps
//! unreachable code 0 to 0 and 2 to 5, and translates every parameter
//! problem); quoted transport headers are not rewritten.
//!
//! Handlers: `drops` (read).
//!
//! # ProtocolTranslator46
//!
//! ProtocolTranslator46()
//!
//! Translates IPv4 packets into IPv6 packets (RFC 7915), as Click's
//! element of that name.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! The input packet holds an IPv4 header (at its network header
//! annotation, else at the start of its data). The translation replaces
//! it (options are dropped) with a 40-byte IPv6 header whose addresses are
//! the IPv4 ones behind the prefix `::ffff:0:0/96` (IPv4-mapped, as
//! Click), traffic class the TOS, hop limit the TTL, flow label 0, and
//! sets the network header annotation. TCP and UDP checksums are
//! recomputed over the IPv6 pseudo-header (a UDP datagram without a
//! checksum gets one). ICMP becomes ICMPv6: echo request and reply (8,
//! 0) become 128 and 129; destination unreachable (3) codes 0, 1, 5, 6,
//! 7, 8, 11, 12 become type 1 code 0, codes 9, 10, 13 type 1 code 1, code
//! 3 type 1 code 4, code 2 parameter problem (4) code 1 pointer 6, code 4
//! packet too big (2) with the MTU plus 20; time exceeded (11) becomes
//! type 3. The IPv4 header quoted in an ICMP error is translated too.
//!
//! Dropped and counted (`drops`): packets shorter than their headers,
//! fragments (the translation of fragments is not implemented), and ICMP
//! messages with no ICMPv6 counterpart.
//!
//! Handlers: `drops` (read).

use paraclick_packet::wire::checksum;
use paraclick_packet::wire::ipv6::upper_layer_checksum;
use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Handler, PerThreadCount, Verdict};
use std::net::{Ipv4Addr, Ipv6Addr};

pub struct ProtocolTranslator {
    to_v4: bool,
    drops: PerThreadCount,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["too short", "untranslatable"];

pub fn spec64() -> ClassSpec {
    ClassSpec::action(
        "ProtocolTranslator64",
        "1/1",
        "a",
        |cx: &mut ConfigCx<'_>| make(cx, true),
    )
    .stateless()
    .drop_reasons(DROP_REASONS)
}

pub fn spec46() -> ClassSpec {
    ClassSpec::action(
        "ProtocolTranslator46",
        "1/1",
        "a",
        |cx: &mut ConfigCx<'_>| make(cx, false),
    )
    .stateless()
    .drop_reasons(DROP_REASONS)
}

fn make(cx: &mut ConfigCx<'_>, to_v4: bool) -> Result<ProtocolTranslator, String> {
    cx.args().complete()?;
    Ok(ProtocolTranslator {
        to_v4,
        drops: PerThreadCount::new(cx.nthreads),
    })
}

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMP6: u8 = 58;

/// The IPv4 address in an IPv4-mapped or IPv4-compatible IPv6 address.
pub fn embedded_v4(a: &Ipv6Addr) -> Option<Ipv4Addr> {
    let o = a.octets();
    let mapped = o[..10].iter().all(|&b| b == 0) && o[10] == 0xff && o[11] == 0xff;
    let compat = o[..12].iter().all(|&b| b == 0);
    (mapped || compat).then(|| Ipv4Addr::new(o[12], o[13], o[14], o[15]))
}

/// `::ffff:a.b.c.d`.
pub fn mapped_v6(a: Ipv4Addr) -> Ipv6Addr {
    a.to_ipv6_mapped()
}

/// Extension header numbers this translator does not cross.
fn is_ext_header(nh: u8) -> bool {
    matches!(nh, 0 | 43 | 44 | 50 | 51 | 60 | 135 | 139 | 140 | 253 | 254)
}

/// The IPv4 header for an IPv6 header `h6` (40 bytes) and an IPv4 payload
/// of `plen` bytes with protocol `proto`.
fn v4_header(h6: &[u8], proto: u8, plen: usize) -> Option<[u8; 20]> {
    let src = embedded_v4(&Ipv6Addr::from(<[u8; 16]>::try_from(&h6[8..24]).ok()?))?;
    let dst = embedded_v4(&Ipv6Addr::from(<[u8; 16]>::try_from(&h6[24..40]).ok()?))?;
    let total = u16::try_from(20 + plen).ok()?;
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = (h6[0] << 4) | (h6[1] >> 4);
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[8] = h6[7];
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    Some(h)
}

/// The IPv6 header for IPv4 header `h4` and a payload of `plen` bytes
/// with next header `nh`.
fn v6_header(h4: &[u8], nh: u8, plen: usize) -> Option<[u8; 40]> {
    let mut h = [0u8; 40];
    h[0] = 0x60 | (h4[1] >> 4);
    h[1] = h4[1] << 4;
    h[4..6].copy_from_slice(&u16::try_from(plen).ok()?.to_be_bytes());
    h[6] = nh;
    h[7] = h4[8];
    let src = Ipv4Addr::new(h4[12], h4[13], h4[14], h4[15]);
    let dst = Ipv4Addr::new(h4[16], h4[17], h4[18], h4[19]);
    h[8..24].copy_from_slice(&mapped_v6(src).octets());
    h[24..40].copy_from_slice(&mapped_v6(dst).octets());
    Some(h)
}

/// ICMPv6 type/code → ICMP type/code, and the MTU adjustment for packet
/// too big; `None`: no counterpart.
fn icmp6_to_icmp(t: u8, c: u8) -> Option<(u8, u8)> {
    Some(match (t, c) {
        (128, _) => (8, 0),
        (129, _) => (0, 0),
        (1, 0) | (1, 2) | (1, 3) => (3, 1),
        (1, 1) => (3, 10),
        (1, 4) => (3, 3),
        (2, _) => (3, 4),
        (3, c) => (11, c),
        (4, 1) => (3, 2),
        _ => return None,
    })
}

fn icmp_to_icmp6(t: u8, c: u8) -> Option<(u8, u8)> {
    Some(match (t, c) {
        (8, _) => (128, 0),
        (0, _) => (129, 0),
        (3, 0 | 1 | 5 | 6 | 7 | 8 | 11 | 12) => (1, 0),
        (3, 9 | 10 | 13) => (1, 1),
        (3, 3) => (1, 4),
        (3, 2) => (4, 1),
        (3, 4) => (2, 0),
        (11, c) => (3, c),
        _ => return None,
    })
}

fn is_icmp6_error(t: u8) -> bool {
    t < 128
}

fn is_icmp_error(t: u8) -> bool {
    matches!(t, 3 | 11 | 12)
}

/// Translates an IPv6 datagram `d` (from its header on) into IPv4 bytes.
fn six_to_four(d: &[u8], quoted: bool) -> Option<Vec<u8>> {
    let h6 = d.get(..40)?;
    if h6[0] >> 4 != 6 {
        return None;
    }
    let nh = h6[6];
    if is_ext_header(nh) {
        return None;
    }
    let plen = usize::from(u16::from_be_bytes([h6[4], h6[5]]));
    // A quoted datagram may be cut short; a whole one must be complete.
    let payload = if quoted {
        &d[40..d.len().min(40 + plen)]
    } else {
        d.get(40..40 + plen)?
    };
    let proto = if nh == ICMP6 { ICMP } else { nh };
    let mut body = payload.to_vec();
    let src = embedded_v4(&Ipv6Addr::from(<[u8; 16]>::try_from(&h6[8..24]).ok()?))?;
    let dst = embedded_v4(&Ipv6Addr::from(<[u8; 16]>::try_from(&h6[24..40]).ok()?))?;
    if !quoted {
        match nh {
            TCP | UDP => {
                let co = if nh == TCP { 16 } else { 6 };
                if body.len() < co + 2 {
                    return None;
                }
                body[co..co + 2].fill(0);
                let len = u16::try_from(body.len()).ok()?;
                let s = checksum::add(
                    checksum::pseudo_header_sum(src, dst, nh, len),
                    checksum::sum(&body),
                );
                let mut c = !s;
                if nh == UDP && c == 0 {
                    c = 0xffff;
                }
                body[co..co + 2].copy_from_slice(&c.to_be_bytes());
            }
            ICMP6 => {
                if body.len() < 8 {
                    return None;
                }
                let (t, c) = icmp6_to_icmp(body[0], body[1])?;
                if body[0] == 2 {
                    let mtu = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                    let mtu = u16::try_from(mtu.saturating_sub(20).min(0xffff)).ok()?;
                    body[4..6].fill(0);
                    body[6..8].copy_from_slice(&mtu.to_be_bytes());
                } else if body[0] == 4 {
                    body[4..8].fill(0);
                }
                if is_icmp6_error(body[0]) {
                    let inner = six_to_four(&body[8..], true)?;
                    body.truncate(8);
                    body.extend_from_slice(&inner);
                }
                body[0] = t;
                body[1] = c;
                body[2..4].fill(0);
                let c = checksum::checksum(&body);
                body[2..4].copy_from_slice(&c.to_be_bytes());
            }
            _ => {}
        }
    }
    let h4 = v4_header(h6, proto, plen)?;
    let mut out = Vec::with_capacity(20 + body.len());
    out.extend_from_slice(&h4);
    out.extend_from_slice(&body);
    if !quoted {
        let total = u16::try_from(out.len()).ok()?;
        out[2..4].copy_from_slice(&total.to_be_bytes());
        out[10..12].fill(0);
        let c = checksum::checksum(&out[..20]);
        out[10..12].copy_from_slice(&c.to_be_bytes());
    }
    Some(out)
}

/// Translates an IPv4 datagram `d` (from its header on) into IPv6 bytes.
fn four_to_six(d: &[u8], quoted: bool) -> Option<Vec<u8>> {
    let h4 = d.get(..20)?;
    if h4[0] >> 4 != 4 {
        return None;
    }
    let hl = usize::from(h4[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h4[2], h4[3]]));
    if hl < 20 || total < hl {
        return None;
    }
    let frag = u16::from_be_bytes([h4[6], h4[7]]);
    if !quoted && frag & 0x3fff != 0 {
        return None;
    }
    let payload = if quoted {
        d.get(hl..d.len().min(total))?
    } else {
        d.get(hl..total)?
    };
    let proto = h4[9];
    let nh = if proto == ICMP { ICMP6 } else { proto };
    let mut body = payload.to_vec();
    let mut hdr = v6_header(h4, nh, if quoted { total - hl } else { body.len() })?;
    if !quoted {
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(&hdr[8..24]).ok()?);
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&hdr[24..40]).ok()?);
        match proto {
            TCP | UDP => {
                let co = if proto == TCP { 16 } else { 6 };
                if body.len() < co + 2 {
                    return None;
                }
                body[co..co + 2].fill(0);
                let mut c = upper_layer_checksum(&src, &dst, proto, &body);
                if proto == UDP && c == 0 {
                    c = 0xffff;
                }
                body[co..co + 2].copy_from_slice(&c.to_be_bytes());
            }
            ICMP => {
                if body.len() < 8 {
                    return None;
                }
                let (t, c) = icmp_to_icmp6(body[0], body[1])?;
                if body[0] == 3 && body[1] == 4 {
                    let mtu = u32::from(u16::from_be_bytes([body[6], body[7]])) + 20;
                    body[4..8].copy_from_slice(&mtu.to_be_bytes());
                } else if body[0] == 3 && body[1] == 2 {
                    body[4..8].copy_from_slice(&6u32.to_be_bytes());
                } else if is_icmp_error(body[0]) {
                    body[4..8].fill(0);
                }
                if is_icmp_error(body[0]) {
                    let inner = four_to_six(&body[8..], true)?;
                    body.truncate(8);
                    body.extend_from_slice(&inner);
                }
                body[0] = t;
                body[1] = c;
                body[2..4].fill(0);
                let c = upper_layer_checksum(&src, &dst, ICMP6, &body);
                body[2..4].copy_from_slice(&c.to_be_bytes());
            }
            _ => {}
        }
        hdr[4..6].copy_from_slice(&u16::try_from(body.len()).ok()?.to_be_bytes());
    }
    let mut out = Vec::with_capacity(40 + body.len());
    out.extend_from_slice(&hdr);
    out.extend_from_slice(&body);
    Some(out)
}

impl Action for ProtocolTranslator {
    const HANDLERS: &'static [Handler<Self>] =
        &[Handler::read("drops", |e, _| e.drops.get().to_string())];

    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let start = p
            .network_header_offset()
            .and_then(|o| usize::try_from(o).ok())
            .unwrap_or(0);
        let Some(d) = p.data().get(start..) else {
            self.drops.inc(cx.thread());
            return Verdict::DropFor(0);
        };
        let out = if self.to_v4 {
            six_to_four(d, false)
        } else {
            four_to_six(d, false)
        };
        let Some(out) = out else {
            self.drops.inc(cx.thread());
            return Verdict::DropFor(1);
        };
        // Link-layer bytes before the header stay; the datagram is replaced.
        let old = p.len() - start;
        let ok = if out.len() >= old {
            p.put(out.len() - old).is_ok()
        } else {
            p.take(old - out.len());
            true
        };
        if !ok {
            self.drops.inc(cx.thread());
            return Verdict::DropFor(1);
        }
        p.data_mut()[start..].copy_from_slice(&out);
        p.set_network_header(start, if self.to_v4 { 20 } else { 40 });
        Verdict::Out(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kit::*;

    fn udp4(payload: &[u8]) -> Vec<u8> {
        let mut d = vec![0u8; 28];
        d[0] = 0x45;
        d[1] = 0x28;
        d[2..4].copy_from_slice(&((28 + payload.len()) as u16).to_be_bytes());
        d[8] = 33;
        d[9] = 17;
        d[12..16].copy_from_slice(&[18, 26, 4, 9]);
        d[16..20].copy_from_slice(&[1, 0, 0, 1]);
        d[20..22].copy_from_slice(&1234u16.to_be_bytes());
        d[22..24].copy_from_slice(&53u16.to_be_bytes());
        d[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        d.extend_from_slice(payload);
        let c = checksum::checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let s = checksum::add(
            checksum::pseudo_header_sum(
                Ipv4Addr::new(18, 26, 4, 9),
                Ipv4Addr::new(1, 0, 0, 1),
                17,
                (8 + payload.len()) as u16,
            ),
            checksum::sum(&d[20..]),
        );
        d[26..28].copy_from_slice(&(!s).to_be_bytes());
        d
    }

    #[test]
    fn udp_round_trip() {
        let v4 = udp4(b"hello world");
        let v6 = four_to_six(&v4, false).unwrap();
        assert_eq!(v6.len(), 40 + 8 + 11);
        assert_eq!(v6[0] >> 4, 6);
        assert_eq!((v6[0] & 0xf) << 4 | v6[1] >> 4, 0x28, "traffic class");
        assert_eq!(v6[7], 33, "hop limit");
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(&v6[8..24]).unwrap());
        assert_eq!(src, "::ffff:18.26.4.9".parse::<Ipv6Addr>().unwrap());
        // The UDP checksum verifies over the IPv6 pseudo-header.
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&v6[24..40]).unwrap());
        assert_eq!(upper_layer_checksum(&src, &dst, 17, &v6[40..]), 0);
        let back = six_to_four(&v6, false).unwrap();
        assert_eq!(back, v4, "the same datagram again");
    }

    #[test]
    fn icmp_echo_and_errors() {
        let mut ping = vec![0u8; 20 + 8 + 4];
        ping[0] = 0x45;
        ping[2..4].copy_from_slice(&32u16.to_be_bytes());
        ping[8] = 64;
        ping[9] = 1;
        ping[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ping[16..20].copy_from_slice(&[10, 0, 0, 2]);
        ping[20] = 8;
        ping[24..28].copy_from_slice(&[0, 7, 0, 9]);
        ping[28..32].copy_from_slice(b"ping");
        let c = checksum::checksum(&ping[20..]);
        ping[22..24].copy_from_slice(&c.to_be_bytes());
        let c = checksum::checksum(&ping[..20]);
        ping[10..12].copy_from_slice(&c.to_be_bytes());
        let v6 = four_to_six(&ping, false).unwrap();
        assert_eq!(v6[6], 58);
        assert_eq!(v6[40], 128, "echo request");
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(&v6[8..24]).unwrap());
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&v6[24..40]).unwrap());
        assert_eq!(upper_layer_checksum(&src, &dst, 58, &v6[40..]), 0);
        assert_eq!(six_to_four(&v6, false).unwrap(), ping);

        // A port unreachable quoting the ping: type 1 code 4, quoted
        // header translated.
        let mut err = vec![0u8; 28];
        err[0] = 0x45;
        err[8] = 64;
        err[9] = 1;
        err[12..16].copy_from_slice(&[10, 0, 0, 2]);
        err[16..20].copy_from_slice(&[10, 0, 0, 1]);
        err[20] = 3;
        err[21] = 3;
        err.extend_from_slice(&ping);
        let n = err.len() as u16;
        err[2..4].copy_from_slice(&n.to_be_bytes());
        let v6 = four_to_six(&err, false).unwrap();
        assert_eq!((v6[40], v6[41]), (1, 4));
        assert_eq!(v6[48] >> 4, 6, "quoted header is IPv6");
        assert_eq!(v6.len(), 40 + 8 + 40 + 12);
        let back = six_to_four(&v6, false).unwrap();
        assert_eq!((back[20], back[21]), (3, 3));
        assert_eq!(&back[28..48], &ping[..20], "quoted header back to IPv4");
    }

    #[test]
    fn elements_translate_and_count_drops() {
        let h4 = harness("ProtocolTranslator46", 1);
        let v4 = udp4(b"x");
        let mut p = Packet::from_slice(&v4).unwrap();
        p.set_network_header(0, 20);
        // A fragment is dropped.
        let mut frag = udp4(b"y");
        frag[6] = 0x20;
        h4.push(0, vec![p, Packet::from_slice(&frag).unwrap()]);
        let out = h4.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(h4.read("drops").unwrap(), "1");
        let v6 = out[0].data().to_vec();
        assert_eq!(out[0].network_header().unwrap().len(), v6.len());
        let h6 = harness("ProtocolTranslator64", 1);
        // An address neither IPv4-mapped nor -compatible is dropped.
        let mut global = v6.clone();
        global[8] = 0x20;
        h6.push(
            0,
            vec![
                Packet::from_slice(&v6).unwrap(),
                Packet::from_slice(&global).unwrap(),
                Packet::from_slice(&v6[..30]).unwrap(),
            ],
        );
        let out = h6.output(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &v4[..]);
        assert_eq!(h6.read("drops").unwrap(), "2");
        assert_err(
            try_harness("ProtocolTranslator64(1)", 1),
            "e :: ProtocolTranslator64: too many arguments ('1')",
        );
    }
}
